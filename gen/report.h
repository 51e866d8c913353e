/* report: checks.json, every figure of the site in one file, for tools and
 * CI (the HTML report is a template's work). The caller streams it: a head,
 * one call per figure in page order, a tail with the totals; each appends
 * to a buffer the caller flushes when it likes. */
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
/* page_url: the page's URL with the base path; src: its file. */
void report_json_figure(buf *out, report_totals *t, const char *page_url, const char *src,
                        const figure *f);
void report_json_tail(buf *out, const report_totals *t);

#endif
