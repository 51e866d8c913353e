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

#include "buf.h"
#include "config.h"
#include "content.h"
#include "diag.h"
#include "sources.h"
#include "yv.h"

#define PAGINATE_DEFAULT 10
/* Tags a page of the tag index (/tags/) lists by default (paginate_tags): a
 * tag is one short line, so a site's whole cloud stays on one page until it
 * is large enough to pass a listing's size (about 40 KB at 500). */
#define PAGINATE_TAGS_DEFAULT 500
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
/* Tags a page of the tag index lists (site.yaml's paginate_tags, else
 * PAGINATE_TAGS_DEFAULT). */
size_t paginate_tags_of(const config *cfg);

typedef enum { PAGER_SECTION, PAGER_TAGS, PAGER_TAG, PAGER_SOURCES, PAGER_REPORT } pager_kind;

/* An extra listing page: number 2 and up of owner's listing (a page index
 * for a section or home, 0 for the tag index (/tags/: the tags themselves),
 * a tag's index, 0 for the sources page, a report slot: see below). */
typedef struct {
    pager_kind kind;
    size_t owner;
    size_t number;
    size_t part;   /* a report page's part (see below): 0 for the page itself */
} pager_item;

/* The build's pagination. The report's slots are its groups (report.h):
 * slot g < nslots - 1 is section group g, slot nslots - 1 the root group
 * (or, with one report for all, the only slot). */
typedef struct {
    pager_item *items; /* in job order: sections and home, the tag index, tags, sources,
                        * report */
    size_t nitems;
    size_t *report_number; /* by page: the report page listing its figures (1..) */
    size_t *report_pages;  /* by slot: how many report pages it has */
    size_t nslots;
    size_t report_per;     /* pages listed on a report page */
    size_t *report_counted; /* by slot: the pages its report pages count */
    size_t *report_base;   /* by slot: its first report page's index in report_parts */
    size_t *report_parts;  /* by report page: its parts, once paginate_plan_parts ran
                            * (0 before: unknown) */
    size_t nstatic;        /* items before the parts' (paginate_plan_parts) */
    size_t *report_list_at; /* by report page (report_base's index), and one more:
                            * where its pages start in report_list */
    size_t *report_list;   /* the pages each report page lists, in page order */
} paginate_plan_t;

/* groups: report_groups() by page; nsections: the report's section count
 * (0: one report for all); src: the sources (NULL: none). */
void paginate_plan(paginate_plan_t *pl, const content_index *idx, const config *cfg,
                   const sources *src, const size_t *groups, size_t nsections);
void paginate_plan_free(paginate_plan_t *pl);
/* The pages report page number (1..) of slot lists (those whose
 * report_number is number, in page order): *n of them; NULL for none. A
 * report page visits these, not every page of the site. */
const size_t *paginate_report_list(const paginate_plan_t *pl, size_t slot, size_t number,
                                   size_t *n);
/* The report slot of a report group (REPORT_GROUP_ROOT, _ALL or a section's). */
size_t paginate_slot(const paginate_plan_t *pl, size_t group);
/* ---------- a report page's parts ----------
 * A report page lists the figures of report_per pages; one page can have
 * thousands. So a report page comes in parts: part c (0..) lists figures
 * c*R .. (c+1)*R - 1 (0-based, in page order) of each of its pages, R =
 * max(1, PAGINATE_REPORT_ROWS / k) for the k pages the report page counts
 * (paginate_rows_of): a part holds at most about PAGINATE_REPORT_ROWS rows,
 * whatever the pages hold (the first report page also lists the figures that
 * templates gave pages without a mark: not counted, rare). A figure's part
 * depends only on its place on its page and its report page's place in the
 * plan, known while the page renders, before any other page's figures are:
 * the figure's link to its row is written then. Part 0 is the report page's own URL; part c > 0 is at
 * "<report page>part/<c+1>/" (paginate_part_path), a URL space that the
 * collision check keeps for the report (collide.c). How many parts a report
 * page has is known once its pages rendered (paginate_plan_parts): their
 * jobs are added to the plan then, before the report renders. */
#define PAGINATE_REPORT_ROWS 75 /* the bundled templates: ~18 elements a row, 1,500 a page */

/* R: the figures of each page listed on one part, for k pages. */
size_t paginate_part_rows(size_t k);
/* R of report page number (1..) of slot. */
size_t paginate_rows_of(const paginate_plan_t *pl, size_t slot, size_t number);
/* The part (0..) that lists the figure at ordinal (0-based) on its page. */
size_t paginate_part_of(size_t ordinal, size_t rows);
/* Figures [*lo, *hi) of a page of nfigs on part. */
void paginate_part_bounds(size_t nfigs, size_t rows, size_t part, size_t *lo, size_t *hi);
/* Site path of part (0..) of the report page at page_path ("/checks/page/2/"):
 * page_path itself for part 0. Malloc'ed. */
char *paginate_part_path(const char *page_path, size_t part);
/* Appends the part's addition to its report page's path ("part/3/"; nothing
 * for part 0): the one place that spells it. */
void paginate_part_suffix(buf *b, size_t part);
/* The name of the parts' folder under a report page ("part"). */
#define PAGINATE_PART_DIR "part"
/* The parts of every report page, from the figures of each page (nfigs[i]
 * of page i, after the pages rendered): report_parts is set and an item
 * added for every part after the first, after the items there were. Called
 * again, it first drops the parts' items it added. Returns the items added. */
size_t paginate_plan_parts(paginate_plan_t *pl, const content_index *idx, const size_t *groups,
                           const size_t *nfigs);
/* The parts of report page number (1..) of slot: 1 when unknown. */
size_t paginate_parts_of(const paginate_plan_t *pl, size_t slot, size_t number);

/* Whether page i is counted by the report's pages: a page with a source
 * file that has a figure's mark (content.h's fig_marks). The others have
 * report page 1: a figure that a page without a mark still has (a template
 * made it) is listed there, and links there. */
bool paginate_in_report(const content_index *idx, size_t i);

#endif
