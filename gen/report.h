/* report: checks.json, every figure of the site in one file, for tools and
 * CI (the HTML report is a template's work). The caller streams it: a head,
 * for each page its part of the figures' objects and then one call per
 * figure, in page order, a tail with the totals; each appends to a buffer the
 * caller flushes when it likes. */
#ifndef KV_REPORT_H
#define KV_REPORT_H

#include <stddef.h>

#include "buf.h"
#include "figure.h"

typedef struct {
    size_t total, failed;
    size_t tiers[3]; /* by fig_tier */
} report_totals;

void report_json_head(buf *out);
/* Sets page (replacing its content) to what every figure of one page starts
 * with: page_url, the page's URL with the base path, and src, its file,
 * escaped once for all of them. The caller owns page (buf_free). */
void report_json_page(buf *page, const char *page_url, const char *src);
/* One figure of the page that report_json_page described in page. */
void report_json_figure(buf *out, report_totals *t, const buf *page, const figure *f);
void report_json_tail(buf *out, const report_totals *t);

#endif
