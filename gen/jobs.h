/* jobs: what a build renders, as numbered jobs, from one table of job kinds.
 *
 * Jobs are numbered: 0..npages-1 are the pages of the content index, then the
 * generated pages in the order of the table in jobs.c (tag index, one per tag,
 * sources, the checks report, 404, checks.json, the report's section pages,
 * the listings' pages after the first).
 * They run in four phases, each after the previous one is complete, because
 * later pages list what earlier ones produced: regular pages; sections, tags,
 * sources and 404; home (which lists sections); the checks report and
 * checks.json (every figure, home's too).
 *
 * The functions keep the render_job_ names that build.c and pool.c call. */
#ifndef KV_JOBS_H
#define KV_JOBS_H

#include <stdbool.h>
#include <stddef.h>

#include "paginate.h"

typedef struct render_env render_env;

typedef enum {
    JOB_PAGE, JOB_TAGS, JOB_TAG, JOB_SOURCES, JOB_CHECKS, JOB_404, JOB_CHECKS_JSON,
    JOB_CHECKS_SECTION, /* one per report section (render_env.report_sections) */
    JOB_PAGER,          /* one per extra listing page (render_env.pages_plan, paginate.h):
                         * number 2 and up of a section's, tag's or report's listing, in
                         * the phase of the page it continues */
    JOB_KIND_COUNT
} job_kind;

/* One kind of job: a row of the table. Strings are static. */
typedef struct {
    job_kind kind;
    const char *name;     /* page.kind of a generated page: "tags", "checks", ... */
    int phase;            /* 0 for pages: their phase follows their page kind */
    const char *template; /* "templates/<file>": the default for pages, the
                           * file a job's failure is reported at */
    const char *title;    /* page.title of a generated page; NULL: from its item */
    const char *url;      /* site path of a generated page; NULL: from its item */
} job_kind_info;

const job_kind_info *jobs_info(job_kind k);

size_t render_job_count(const render_env *e);
/* The kind of a job and, for kinds with one job per item (pages, tags,
 * report sections, listing pages), the item's index in its list; 0 otherwise. */
job_kind render_job_kind(const render_env *e, size_t job, size_t *index);
int render_job_phase(const render_env *e, size_t job);
/* render_job_phase of every job (and of every record, e->nrecords), in a new
 * array (the caller frees it); records past the jobs get UCHAR_MAX. */
unsigned char *render_job_phases(const render_env *e);
/* Whether the generated pages of kind k are part of this site: the tag
 * index and tag pages when a page has tags, the sources page when
 * checks/sources.yaml exists, 404.html when templates/404.html does
 * (have_404); the others always. */
bool jobs_present(const render_env *e, job_kind k, bool have_404);
/* The site path a job's page is published at ("/a/b/", "/tags/go/",
 * "/404.html"), whether or not it is present; the caller frees it. */
char *jobs_url(const render_env *e, size_t job);
/* File a job's problems are reported at when it fails as a whole (timeout):
 * a page's source, or its kind's template. Static or owned by e. */
const char *render_job_file(const render_env *e, size_t job);
/* The site path of the first page of the listing a JOB_PAGER item continues
 * ("/posts/", "/tags/go/", "/checks/"); the caller frees it. */
char *jobs_pager_first(const render_env *e, const pager_item *it);

#endif
