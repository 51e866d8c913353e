/* render: a worker's side of the build. A renderer owns the worker's sandbox,
 * its compiled templates and its Markdown setup, and turns jobs into files in
 * the staging directory plus one page_record each.
 *
 * Jobs are numbered: 0..npages-1 are the pages of the content index, then the
 * generated pages (tag index, one per tag, sources, the checks report, 404,
 * checks.json, the report's section pages). They run in four phases, each after the previous one is
 * complete, because later pages list what earlier ones produced: regular
 * pages; sections, tags, sources and 404; home (which lists sections); the
 * checks report and checks.json (every figure, home's too). */
#ifndef KV_RENDER_H
#define KV_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "content.h"
#include "record.h"
#include "sources.h"

typedef struct {
    const char *root;         /* project root */
    const char *out_dir;      /* staging directory */
    const config *cfg;
    const content_index *idx;
    const sources *src;
    bool strict;              /* unverified figures are errors */
    const page_record *records; /* results by job; a job sees those of earlier phases */
    size_t nrecords;
    const char *same_dir;     /* incremental builds: the published output; a file
                               * whose bytes are already there is not written */
    const size_t *report_sections; /* pages with a report page of their own (see
                               * RENDER_REPORT_SECTION_TEMPLATE); NULL for none */
    size_t nreport_sections;
    const unsigned char *job_phases; /* render_job_phases(), made once for the build:
                               * every record read asks; NULL: worked out per job */
    figstore *figs;           /* where records keep their figures (record_figures);
                               * the parent appends, workers only read */
} render_env;

typedef enum {
    JOB_PAGE, JOB_TAGS, JOB_TAG, JOB_SOURCES, JOB_CHECKS, JOB_404, JOB_CHECKS_JSON,
    JOB_CHECKS_SECTION /* one per report section (render_env.report_sections) */
} job_kind;

/* The template that splits the checks report into one page per top-level
 * section: when it exists, checks/ lists home's and the root pages' figures
 * and each section's are on checks/<section>/. */
#define RENDER_REPORT_SECTION_TEMPLATE "checks-section.html"

typedef struct renderer renderer;

renderer *render_new(const render_env *e);
void render_free(renderer *r);

/* The top-level sections, in page order: the report's sections when the
 * site has RENDER_REPORT_SECTION_TEMPLATE. Returns a malloc'ed array. */
size_t *render_report_sections(const content_index *idx, size_t *n);

size_t render_job_count(const render_env *e);
job_kind render_job_kind(const render_env *e, size_t job, size_t *index);
int render_job_phase(const render_env *e, size_t job);
/* render_job_phase of every job (and of every record, e->nrecords), in a new
 * array (the caller frees it). */
unsigned char *render_job_phases(const render_env *e);
/* File a job's problems are reported at when it fails as a whole (timeout). */
const char *render_job_file(const render_env *e, size_t job);

/* Renders one job; every problem goes into rec->diags. */
void render_job(renderer *r, size_t job, page_record *rec);

/* Renders Markdown from stdin-like text to an HTML fragment (kvsite render). */
int render_fragment(const char *text, size_t len, bool unsafe, buf *out, diag_list *dl);

#endif
