/* render: a worker's side of the build. A renderer owns the worker's sandbox,
 * its compiled templates and its Markdown setup, and turns jobs into files in
 * the staging directory plus one page_record each. Which jobs a build has,
 * and in what phases they run: jobs.h. */
#ifndef KV_RENDER_H
#define KV_RENDER_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "fingerprint.h"
#include "jobs.h"
#include "output.h"
#include "paginate.h"
#include "content.h"
#include "record.h"
#include "sources.h"

typedef struct render_env {
    const char *root;         /* project root */
    output_dest dest;         /* where pages go (output_dest_of; its folders'
                               * descriptors are each renderer's own) */
    const config *cfg;
    const content_index *idx;
    const sources *src;
    bool strict;              /* unverified figures are errors */
    const page_record *records; /* results by job; a job sees those of earlier phases */
    size_t nrecords;
    bool records_shared;      /* records is a shrec.h array: each worker seals it */
    const size_t *report_sections; /* pages with a report page of their own (see
                               * RENDER_REPORT_SECTION_TEMPLATE); NULL for none */
    size_t nreport_sections;
    const size_t *report_groups; /* report_groups(), made once for the build by the
                               * parent (workers share it); NULL: each renderer
                               * makes its own when it needs one */
    const unsigned char *job_phases; /* render_job_phases(), made once for the build:
                               * every record read asks; NULL: worked out per job */
    figstore *figs;           /* where records keep their figures (record_figures);
                               * the parent appends, workers only read */
    const paginate_plan_t *pages_plan; /* the build's pagination (paginate.h), made
                               * by the parent; NULL: no listing has a second page */
    const uint32_t *site_totals; /* RENDER_TOTALS counts of every page's figures
                               * (total, each tier, failed), made by the parent
                               * before the last phase (the report's); NULL
                               * before: site.figures counts the records then */
    const fingerprints *fingerprints; /* the assets asset_url names (fingerprint.h),
                               * made by the parent; NULL: none */
} render_env;

/* The template that splits the checks report into one page per top-level
 * section: when it exists, checks/ lists home's and the root pages' figures
 * and each section's are on checks/<section>/. */
#define RENDER_REPORT_SECTION_TEMPLATE "checks-section.html"

/* The entries of render_env.site_totals: total, each tier, failed. */
#define RENDER_TOTALS (FIG_TIERS + 2)

typedef struct renderer renderer;

renderer *render_new(const render_env *e);
void render_free(renderer *r);
/* How many of r's jobs were rendered twice: cut short running unmetered
 * (sandbox.h), then again with their instructions counted. */
size_t render_reruns(const renderer *r);

/* The top-level sections, in page order: the report's sections when the
 * site has RENDER_REPORT_SECTION_TEMPLATE (report_sections in report.h).
 * Returns a malloc'ed array. */
size_t *render_report_sections(const content_index *idx, size_t *n);

/* Renders one job; every problem goes into rec->diags. */
void render_job(renderer *r, size_t job, page_record *rec);

/* Renders Markdown from stdin-like text to an HTML fragment (kvsite render). */
int render_fragment(const char *text, size_t len, bool unsafe, buf *out, diag_list *dl);

#endif
