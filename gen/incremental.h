/* incremental: what lets a build do less than everything. Two mechanisms,
 * both in files of the state folder beside the output (output.h):
 *
 *   the stamp (.kvsite/<out>.stamp): the stamp of every input file and of every
 *     output file of the last successful build. When neither changed, the
 *     build is up to date and does nothing but print that build's warnings
 *     again;
 *   the cache (.kvsite/<out>.cache, cache.h is its format): each job's record and
 *     fingerprints. When the site as a whole did not change (the global key),
 *     the build is incremental: a job whose own inputs, output file and the
 *     records it read did not change is taken from the cache, not rendered.
 *     Each page's parsed front matter is kept there too, reused by the
 *     content loader when the page's file did not change.
 *
 * The cache of a full build is written by a thread of its own while the
 * parent checks links and writes the feed (incr_writer). */
#ifndef KV_INCREMENTAL_H
#define KV_INCREMENTAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cache.h"
#include "config.h"
#include "content.h"
#include "diag.h"
#include "figstore.h"
#include "output.h"
#include "record.h"
#include "strmap.h"

/* A page of the last build, kept by a long-lived caller (build_keep): its
 * parsed front matter and the stamp of the file it was parsed from. */
typedef struct {
    page *page;
    uint64_t stamp;
} incr_kept_front;

typedef struct {
    /* The build's, borrowed: set by the build before the calls that read them
     * (incr_bind sets the jobs'). */
    const char *root;          /* the project folder */
    bool strict, drafts;       /* the flags that change every page */
    const config *cfg;
    output *out;               /* out_abs, incremental, outputs, extras */
    diag_list *dl;             /* the build's diagnostics so far */
    const content_index *idx;
    bool report_by_section;    /* the checks report is split by section */
    page_record *records;      /* by job; reused records replace them */
    size_t njobs;
    size_t planned;            /* jobs known before rendering (incr_bind's) */
    /* the site path of a job's page (jobs_url): a job added after the pages
     * (incr_grow) is taken from the cache only when its record's is the same,
     * since its number depends on how many were added before it */
    char *(*job_url)(const void *ctx, size_t job);
    const void *job_url_ctx;
    figstore *figs;            /* NULL: figures in memory */

    /* Owned (incr_free). */
    char *stamp_path;          /* NULL in check mode */
    char *cache_path;          /* NULL in check mode */
    uint64_t in_stamp;         /* incr_input_stamp */
    uint64_t content_sum;      /* content/'s part of it: the sum of its entries' stamps */
    size_t content_entries;    /* how many entries that is */
    bool stamps_known;         /* made by incr_input_stamp_known */
    uint64_t global;           /* the global key, once global_known */
    bool global_known;
    strmap stamps;             /* "content/a.md" -> (void *)(stamp | 1), every input file;
                                * content/'s folders and other entries too, by their
                                * keys in a sum (stamp.h: "content/a/", "?content/x");
                                * NULL: an entry gone */
    strmap unstamped;          /* paths not in stamps, probed once: (void *)1 missing, 2 not */
    pthread_mutex_t unstamped_lock; /* the cache writer's thread probes too */
    cache prev;                /* the last successful build's cache */
    uint64_t front_key;
    strmap fronts;             /* src -> prev.fronts entry, when prev.front_key matches */
    uint64_t *digests;         /* by job: record_digest of its record, once it is known */
    bool *from_cache;          /* by job: its record was taken from prev */
    uint64_t *after;           /* by job taken from prev: the stamp its file has once
                                * published, known from the reuse check (the staging
                                * folder's copy, S_out_same); 0: stat'ed then */
    int stage_fd;              /* the staging folder, for those checks; -1 */
    size_t rendered, reused;   /* jobs rendered and taken from prev */
    /* Borrowed (build_keep): the last build's records, as this process held
     * them when it saved them, and their checksums in that cache. A job
     * whose entry in prev has the same checksum takes its record from here
     * instead of decoding it (the record is moved out). */
    page_record *kept;
    const uint64_t *kept_sums;
    size_t nkept;
    /* Borrowed (build_keep): NULL, or the cache the last build saved, loaded
     * after it: taken as prev (moved out) when the file is still that one. */
    cache *preloaded;
    /* Borrowed (build_keep): NULL, or src -> incr_kept_front, the pages the
     * last build of this process parsed, with the front key it parsed them
     * under. incr_reuse_front moves a page's front matter out of it instead
     * of decoding the cache's copy when both are of the file as it is now. */
    const strmap *kept_fronts;
    uint64_t kept_front_key;
    /* By kept job, once incr_check_kept_outputs' thread is joined: 1 when
     * its published output file is as the cache says, 2 when not, 0 not
     * looked at; kept_staged the same of its copy in the staging folder
     * (the thread looks at one of the two: S_check_kept_main). */
    unsigned char *kept_out, *kept_staged;
    pthread_t out_checker;
    bool checking;
    /* Owned: the checksum of each record this build's cache save wrote
     * (NULL before), and whether that cache is saved and finished. */
    uint64_t *saved_sums;
    bool cache_saved;
    uint64_t totals_digest;    /* the site's figure totals' (render_env.site_totals),
                                * once made: what a record with reads_totals read */
} incr;

void incr_init(incr *inc);
void incr_free(incr *inc);

/* The stamp of everything a build reads (the binary, the flags, site.yaml,
 * content/, templates/, checks/); each file's own goes to inc->stamps. Sets
 * and returns inc->in_stamp. */
uint64_t incr_input_stamp(incr *inc);
/* serve: the same stamp from the last build's table (kept, moved in: its
 * stamps, its content_sum and content_entries) and the paths beneath the
 * project (NUL-separated, "content/a.md") of everything that changed since
 * it was made, inotify's list: only those and the folders they are in are
 * stat'ed again. False when that cannot be known (a folder came or went,
 * past the file limit): then inc->stamps is empty and the caller calls
 * incr_input_stamp. */
bool incr_input_stamp_known(incr *inc, strmap *kept, uint64_t content_sum, size_t entries,
                            const char *changed, size_t len);
/* True when the stamp file says the last build read the same inputs and the
 * output is as it left it: then counts gets that build's counts
 * line (INCR_COUNTS bytes) and warnings the diagnostics it printed. */
bool incr_up_to_date(incr *inc, char *counts, buf *warnings);
#define INCR_COUNTS 256 /* the size of a counts line, its NUL included */
/* Reads the last build's cache (when load) and keeps the front matter it
 * holds if it was parsed the same way. */
void incr_read_cache(incr *inc, bool load);

/* content_opts.reuse (ctx: the incr): a page's front matter as the last
 * build parsed it, when its file did not change (moved out of the kept
 * page, if any: each is asked for by one file, on one thread). */
bool incr_reuse_front(void *ctx, page *p);

/* With kept records (set above) and the cache read: stats the output files
 * of the kept records in a thread of its own, for incr_reuse_jobs, which
 * joins it. Started once the content is parsed (content_opts.parsed, ctx:
 * the incr), while one core makes the index. */
void incr_check_kept_outputs(void *ctx);
/* Joins that thread if it still runs (before the kept records go). */
void incr_join_threads(incr *inc);

/* The jobs, once they are known: the per-job arrays are made. */
void incr_bind(incr *inc, const content_index *idx, page_record *records, size_t njobs,
               figstore *figs, bool report_by_section);
/* More jobs, numbered after the others (the report pages' parts,
 * paginate.h), once the pages rendered: records is their new array. */
void incr_grow(incr *inc, page_record *records, size_t njobs);
/* Whether this build can be incremental (the last build's cache was made
 * from the same site, global key and job count alike). Makes the global key
 * when there is a cache to compare it with. */
bool incr_possible(incr *inc, bool no_cache);
/* Takes each job's record from the cache when nothing it depends on changed
 * (outfd: the published output folder, or -1): reused[k] says whether
 * jobs[k]'s was. The jobs must be of one phase (none reads another's
 * record); with threads > 1 and many jobs, two threads share them, both
 * joined before it returns. */
void incr_reuse_jobs(incr *inc, const size_t *jobs, size_t n, int outfd, int threads,
                     bool *reused);
/* In an incremental build, whether the links of the pages taken from the
 * cache still hold: then only those of the pages rendered again need
 * checking. */
bool incr_old_links_hold(incr *inc);

/* A full build's cache, written while the build goes on; it counts only
 * when the build succeeds. */
typedef struct {
    incr *inc;
    strmap noisy;
    buf list;
    uint64_t *job_stamps;
    pthread_t thread;
    bool started;
    int rc;
} incr_writer;

/* Starts the writer, the jobs all rendered and the assets copied (the feed
 * and the sitemap are counted as written). */
void incr_writer_start(incr_writer *w, incr *inc);
/* Waits for the writer and marks the cache finished when succeeded. */
void incr_writer_end(incr_writer *w, bool succeeded);

/* After a successful build: the output's files (appended to list,
 * NUL-separated), each job's file's stamp in job_stamps (njobs), and the
 * stamp of them all. */
uint64_t incr_outputs(incr *inc, buf *list, uint64_t *job_stamps);
/* Saves the cache (when no writer did) from incr_outputs' list and stamps. */
void incr_save_cache(incr *inc, const buf *list, const uint64_t *job_stamps);
/* Saves the stamp file: the input and output stamps, the counts line and the
 * build's diagnostics. */
void incr_save_stamp(incr *inc, const char *counts, const buf *list, uint64_t out_stamp);

#endif
