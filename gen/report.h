/* report: checks.json, every figure of the site in one file, for tools and
 * CI (the HTML report is a template's work). The caller streams it: a head,
 * for each page its part of the figures' objects and then one call per
 * figure, in page order, a tail with the totals; each appends to a buffer the
 * caller flushes when it likes. */
#ifndef KV_REPORT_H
#define KV_REPORT_H

#include <stddef.h>

#include "buf.h"
#include "content.h"
#include "figure.h"

typedef struct {
    size_t total, failed;
    size_t tiers[FIG_TIERS]; /* by fig_tier */
} report_totals;

void report_json_head(buf *out);
/* Sets page (replacing its content) to what every figure of one page starts
 * with: page_url, the page's URL with the base path, and src, its file,
 * escaped once for all of them. The caller owns page (buf_free). */
void report_json_page(buf *page, const char *page_url, const char *src);
/* One figure of the page that report_json_page described in page. */
void report_json_figure(buf *out, report_totals *t, const buf *page, const figure *f);
void report_json_tail(buf *out, const report_totals *t);

/* ---------- report groups ----------
 * With templates/checks-section.html the report is one page per top-level
 * section (checks/<section>/) plus the index (checks/), which lists home's
 * and the root pages' figures: a site of 100,000s of figures gets pages a
 * browser can open, and rendered side by side. A page's group is the position
 * of its top-level section among the report's sections, or one of: */
#define REPORT_GROUP_ALL ((size_t)-2)  /* every figure: site.figures, the one report */
#define REPORT_GROUP_ROOT ((size_t)-1) /* home and the pages at the root */

/* The top-level sections (by index into idx->pages), in page order: the
 * report's sections when the site has a section template. Returns a
 * malloc'ed array of *n. */
size_t *report_sections(const content_index *idx, size_t *n);
/* The report group of every page (REPORT_GROUP_ROOT, or the position of its
 * top-level section in sections[0..n); REPORT_GROUP_ALL for every page when
 * n is 0), in a malloc'ed array by page. */
size_t *report_groups(const content_index *idx, const size_t *sections, size_t n);
/* Where the figures of a group are listed: "/checks/" or
 * "/checks/<section>/" (site path, malloc'ed). */
char *report_path(const content_index *idx, const size_t *sections, size_t group);

#endif
