/* paginate: listings split into pages of `paginate` entries, Hugo and Zola
 * style. A listing at /posts/ of n entries has paginate_count() pages:
 * /posts/ (number 1), /posts/page/2/, /posts/page/3/, ... Sections and home
 * (their pages), tag pages (theirs) and the checks report (the pages whose
 * figures it lists) paginate; `paginate` comes from site.yaml (default
 * PAGINATE_DEFAULT) and, for a section or home, its _index.md front matter.
 *
 * The plan (paginate_plan) is made once per build, in the parent, from the
 * content index: which extra listing pages (number 2 and up) exist, each a
 * job of its own (jobs.h's JOB_PAGER), and on which report page each page's
 * figures are listed. The plan owns its arrays; paginate_plan_free releases
 * them. */
#ifndef KV_PAGINATE_H
#define KV_PAGINATE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "content.h"
#include "diag.h"
#include "yv.h"

#define PAGINATE_DEFAULT 10
#define PAGINATE_MAX 1000 /* a bigger page defeats the point: 200 KB of listing */

/* Pages of a listing of n entries, per on each (per >= 1): at least 1. */
size_t paginate_count(size_t n, size_t per);
/* Entries [*lo, *hi) of page number (1-based, clamped to the last page). */
void paginate_bounds(size_t n, size_t per, size_t number, size_t *lo, size_t *hi);
/* The page (1-based) that lists entry pos (0-based). */
size_t paginate_number_of(size_t pos, size_t per);
/* Site path of page number of the listing at first ("/posts/"): first for
 * number 1, "<first>page/<number>/" after. Malloc'ed. */
char *paginate_path(const char *first, size_t number);

/* Checks a `paginate` value of a section's front matter (file:line:col of
 * the value in dl): 0 and *out set, or -1 after an error. site.yaml's is
 * checked by config.c's table with the same bounds. */
int paginate_check(const yv *v, const char *file, int *out, diag_list *dl);
/* The entries per page of section or home page p: its front matter's
 * paginate when valid, else the site's. */
size_t paginate_of(const config *cfg, const page *p);

typedef enum { PAGER_SECTION, PAGER_TAG, PAGER_REPORT } pager_kind;

/* An extra listing page: number 2 and up of owner's listing (a page index
 * for a section or home, a tag index, a report slot: see below). */
typedef struct {
    pager_kind kind;
    size_t owner;
    size_t number;
} pager_item;

/* The build's pagination. The report's slots are its groups (report.h):
 * slot g < nslots - 1 is section group g, slot nslots - 1 the root group
 * (or, with one report for all, the only slot). */
typedef struct {
    pager_item *items; /* in job order: sections and home, tags, report */
    size_t nitems;
    size_t *report_number; /* by page: the report page listing its figures (1..) */
    size_t *report_pages;  /* by slot: how many report pages it has */
    size_t nslots;
    size_t report_per;     /* pages listed on a report page */
} paginate_plan_t;

/* groups: report_groups() by page; nsections: the report's section count
 * (0: one report for all). */
void paginate_plan(paginate_plan_t *pl, const content_index *idx, const config *cfg,
                   const size_t *groups, size_t nsections);
void paginate_plan_free(paginate_plan_t *pl);
/* The report slot of a report group (REPORT_GROUP_ROOT, _ALL or a section's). */
size_t paginate_slot(const paginate_plan_t *pl, size_t group);
/* Whether page i is counted by the report's pages: a page with a source
 * file that has a figure's mark (content.h's fig_marks). The others have
 * report page 1: a figure that a page without a mark still has (a template
 * made it) is listed there, and links there. */
bool paginate_in_report(const content_index *idx, size_t i);

#endif
