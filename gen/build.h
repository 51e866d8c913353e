/* build: one whole build (or check) of a project, from site.yaml to the
 * published output: load, render in four phases over the worker pool (the
 * last writes the listings that need every figure: the checks report and
 * checks.json), copy assets, write the feed and the sitemap, check every
 * internal link, report, and publish (output.h says how).
 *
 * Exit statuses: 0 success, 1 errors in the content, 2 usage or configuration
 * errors. The previous output is replaced only when the build succeeded; on
 * failure it is left byte for byte as it was. */
#ifndef KV_BUILD_H
#define KV_BUILD_H

#include <stdbool.h>

#include "diag.h"
#include "figstore.h"
#include "record.h"

/* What a check leaves to a command that goes on from it (check --fix,
 * check --diff): read-only, valid during the call. */
typedef struct {
    const char *root;              /* the project folder */
    const page_record *records;    /* every page's, in page order */
    size_t nrecords;
    const figstore *figs;          /* where a record's figures are when ->figs is NULL */
    const diag_list *dl;           /* every diagnostic of the check, sorted */
    size_t page_bytes;             /* limits.page_bytes */
    bool github;                   /* GITHUB_ACTIONS=true */
    int status;                    /* the check's: 0 or 1 */
} build_result;

/* What a long-lived caller (kvsite serve) keeps from one build to the next,
 * so that the next need not decode again the records the last one held: its
 * records and the figure store they point into. build_run takes what it can
 * use and, after a build that saved its cache, hands its own back; after a
 * failed one the keep is left empty. Owned by the caller (build_keep_free). */
typedef struct build_keep build_keep;
build_keep *build_keep_new(void);
void build_keep_free(build_keep *k);

typedef struct {
    const char *root;  /* project folder (-C) */
    const char *out;   /* output folder; NULL for <root>/site */
    bool strict;
    bool drafts;
    bool check_only;   /* kvsite check: everything but writing */
    int jobs;          /* -j; 0 for the configured or the number of cores */
    bool no_cache;     /* --no-cache: build even when nothing changed */
    build_keep *keep;  /* NULL, or see build_keep */
    /* With a keep: changed_known says that changed (changed_len bytes,
     * NUL-separated paths beneath root: "content/a.md") names everything in
     * content/ that changed since the last build started (kvsite serve's
     * inotify list), so that its input stamp need not stat every file */
    const char *changed;
    size_t changed_len;
    bool changed_known;
    bool exiting;      /* the process exits after build_run: its memory is
                        * left to the exit instead of freed */
    /* NULL, or called once the build's outcome is known (published or not,
     * printed), before the cache is saved and the memory freed: the status
     * build_run returns and the diagnostics it printed (kvsite serve shows
     * them) */
    void (*done)(void *ctx, int status, const diag_list *dl);
    void *done_ctx;
    /* called after a check that rendered every page (not after a
     * configuration error); its return is the exit status */
    int (*after)(void *ctx, const build_result *r);
    void *after_ctx;
} build_opts;

int build_run(const build_opts *o);

#endif
