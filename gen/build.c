/* build: build_run as a list of named steps, each a function below, in the
 * order they run. What they share is the build_state; the output folder is
 * output.c's, the stamp and the cache incremental.c's, the feed and the
 * sitemap feed.c's. */
#include "build.h"

#include <cmark-gfm-core-extensions.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "collide.h"
#include "config.h"
#include "content.h"
#include "diag.h"
#include "feed.h"
#include "fingerprint.h"
#include "fsutil.h"
#include "heap.h"
#include "highlight.h"
#include "incremental.h"
#include "links.h"
#include "output.h"
#include "pool.h"
#include "record.h"
#include "render.h"
#include "report.h"
#include "search.h"
#include "shrec.h"
#include "stamp.h"
#include "sources.h"
#include "strmap.h"
#include "theme.h"

struct build_keep {
    page_record *records; /* n, as the last build left them */
    uint64_t *sums;       /* by job: the record's checksum in the saved cache */
    size_t n;
    figstore *figs;       /* the store the records point into */
    cache *loaded;        /* the cache it saved, loaded once it was done */
    /* Its page index, whose pages' front matter the next build moves out
     * (incr.kept_fronts: by_src, of fronts), and the front key it had. */
    content_index *idx;
    incr_kept_front *fronts;
    strmap by_src;
    uint64_t front_key;
    size_t nstamps;       /* its input files: the next build's table is made that big */
    /* Its input stamps (incr.stamps, content_sum, content_entries), for a
     * build that knows what changed since (build_opts.changed) */
    strmap stamps;
    uint64_t content_sum;
    size_t content_entries;
    bool has_stamps;
};

typedef struct {
    const build_opts *o;
    double t0;         /* when the build started */
    bool trace;        /* KVSITE_TRACE: timings on stderr */
    bool github;       /* GitHub Actions: diagnostics as annotations too */
    config cfg;
    content_index idx;
    sources src;
    diag_list dl;
    char *root_real;
    output out;        /* the output folder, staging, publishing */
    incr inc;          /* the stamp, the cache and what they let the build skip */
    render_env env;    /* what the workers see */
    page_record *records;
    size_t njobs;
    size_t *report_sections; /* the report's section pages; NULL: one report page */
    size_t nreport_sections;
    size_t *groups;    /* report_groups(): each page's report group, by page */
    uint32_t site_totals[RENDER_TOTALS]; /* S_site_totals */
    paginate_plan_t pages_plan; /* listings' pages and report pages (paginate.h) */
    figstore *figs;    /* where decoded records keep their figures; NULL: in memory */
    unsigned char *job_phases; /* render_job_phases */
    strmap files;      /* site paths of every file written or copied: "/assets/x.css" */
    collide_files template_assets; /* templates/assets/, listed by the plan */
    uint64_t print_bytes;          /* the fingerprinted assets' bytes, held (S_fingerprint) */
    fingerprints prints; /* stylesheets and scripts with their content hash */
    size_t pages_built;
    uint64_t out_bytes; /* the pages' and the assets' bytes, for limits.output_bytes */
    bool over_cap;     /* past limits.output_bytes: the build stopped */
    pool_cap cap_stop; /* the last phase's watch of it */
    size_t tiers[FIG_TIERS]; /* figures by tier */
    incr_writer writer;
    bool writer_used;  /* a full build's cache is written by incr_writer */
    char counts[INCR_COUNTS]; /* the summary's counts: "3 pages, 2 figures (...)" */
    int status;
    bool told;         /* build_opts.done was called */
    char *search_prog; /* Pagefind, when search is on and it was found (search.h) */
} build_state;

static double S_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Resident memory now, for KVSITE_TRACE. */
static long S_rss_mib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024) / 1024;
}

static void S_trace(const build_state *s, const char *what)
{
    if (!s->trace)
        return;
    /* page faults: each costs 15-20 us on some virtual machines */
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    fprintf(stderr, "kvsite: trace: %s at %.3f s (CPU %.3f s, %ld MiB, %ld faults)\n", what,
            S_now() - s->t0, cpu, S_rss_mib(), ru.ru_minflt);
}

/* ---------- assets ---------- */

/* A file of this build at its site path ("/a/b/" for a/b/index.html), for
 * the link check, and in the output's list. */
static void S_note_file(build_state *s, const char *site_path)
{
    strmap_put(&s->files, site_path, (void *)1);
    char *rel = output_rel(site_path);
    output_note(&s->out, rel);
    free(rel);
}

/* An output file that is not a page (an asset, the feed, the sitemap). */
static void S_note_extra(build_state *s, const char *rel)
{
    output_note_extra(&s->out, rel);
    char *site = xasprintf("/%s", rel);
    strmap_put(&s->files, site, (void *)1);
    free(site);
}

/* Copies the file shown (its path in the project) to to_rel in the output,
 * read without following links (fs_read_in). */
static int S_copy_from(build_state *s, const char *from, const char *to_rel, const char *shown)
{
    S_note_extra(s, to_rel);
    /* a fingerprinted asset: the bytes its name was made from, under both names */
    char *site = xasprintf("/%s", to_rel);
    const fingerprint *fp = fingerprints_get(&s->prints, site);
    free(site);
    if (fp)
        S_note_extra(s, fp->hashed + 1);
    if (!output_writes(&s->out))
        return 0;
    buf b = BUF_INIT;
    int rc = fp ? FS_OK : fs_read_in(from, shown, s->cfg.limits.output_bytes, &b);
    if (rc != FS_OK) {
        diag_error(&s->dl, shown, 0, 0, "cannot copy to %s: %s", to_rel,
                   fs_strerror(rc, s->cfg.limits.output_bytes));
        buf_free(&b);
        return -1;
    }
    const buf *src = fp ? &fp->bytes : &b;
    output_dest d = output_dest_of(&s->out);
    rc = output_write(&d, to_rel, src->ptr, src->len, NULL, NULL, &s->dl, &s->out.extra_bytes,
                      NULL);
    if (rc >= 0 && fp)
        rc = output_write(&d, fp->hashed + 1, src->ptr, src->len, NULL, NULL, &s->dl,
                          &s->out.extra_bytes, NULL);
    buf_free(&b);
    return rc < 0 ? -1 : 0;
}

static int S_copy_one(build_state *s, const char *to_rel, const char *shown)
{
    return S_copy_from(s, s->o->root, to_rel, shown);
}

/* The theme's assets the site does not override (theme.h). */
static void S_copy_theme_asset(void *ctx, const char *from, const char *to)
{
    build_state *s = ctx;
    S_copy_from(s, theme_dir(&s->cfg, s->o->root), to, from);
}

/* templates/assets -> assets/, as listed when the build was planned
 * (collide_list_assets). */
static void S_copy_template_assets(build_state *s)
{
    for (size_t i = 0; i < s->template_assets.n; i++) {
        char *to = xasprintf("assets/%s", s->template_assets.v[i]);
        char *shown = xasprintf("templates/assets/%s", s->template_assets.v[i]);
        S_copy_one(s, to, shown);
        free(to);
        free(shown);
    }
}

/* ---------- fingerprints ---------- */

/* Reads an asset to fingerprint; false (with an error) when it cannot be. */
static bool S_read_asset(build_state *s, const char *from, const char *rel, const char *shown,
                         buf *b)
{
    /* every asset hashed is held until the copy: together within the output's
     * cap, which they count against when written anyway */
    uint64_t cap = s->cfg.limits.output_bytes;
    size_t left = s->print_bytes < cap ? (size_t)(cap - s->print_bytes) : 0;
    int rc = fs_read_in(from, rel, left, b);
    if (rc == FS_OK) {
        s->print_bytes += b->len;
        return true;
    }
    if (rc == FS_ETOOBIG && left < cap)
        output_cap_error(&s->dl, shown, s->print_bytes + left + 1, cap);
    else
        diag_error(&s->dl, shown, 0, 0, "cannot read to fingerprint: %s", fs_strerror(rc, cap));
    return false;
}

static void S_print_theme_asset(void *ctx, const char *from, const char *to)
{
    build_state *s = ctx;
    if (!fingerprint_wanted(to))
        return;
    buf b = BUF_INIT;
    char *input = xasprintf("theme/%s", from); /* incr_input_stamp's name for it */
    char *shadow = xasprintf("templates/%s", to); /* the site's file would win */
    if (S_read_asset(s, theme_dir(&s->cfg, s->o->root), from, from, &b)) {
        char *site = xasprintf("/%s", to);
        fingerprints_add(&s->prints, site, input, shadow, &b);
        free(site);
    }
    free(input);
    free(shadow);
    buf_free(&b);
}

/* The content hash of every stylesheet and script the copy step will
 * publish (fingerprint.h), the site's own first: made before the workers
 * start, which name them (asset_url). */
static void S_fingerprint(build_state *s)
{
    for (size_t i = 0; i < s->template_assets.n; i++) {
        const char *rel = s->template_assets.v[i];
        if (!fingerprint_wanted(rel))
            continue;
        char *shown = xasprintf("templates/assets/%s", rel);
        buf b = BUF_INIT;
        if (S_read_asset(s, s->o->root, shown, shown, &b)) {
            char *site = xasprintf("/assets/%s", rel);
            fingerprints_add(&s->prints, site, shown, NULL, &b);
            free(site);
        }
        buf_free(&b);
        free(shown);
    }
    const char *theme = theme_dir(&s->cfg, s->o->root);
    if (theme)
        theme_assets(theme, s->o->root, s->cfg.limits.files, S_print_theme_asset, s);
    s->env.fingerprints = &s->prints;
}

static void S_copy_assets(build_state *s)
{
    for (size_t i = 0; i < s->idx.nassets; i++) {
        const asset *a = &s->idx.assets[i];
        S_copy_one(s, a->out, a->src);
    }
    S_copy_template_assets(s);
    const char *theme = theme_dir(&s->cfg, s->o->root);
    if (theme)
        theme_assets(theme, s->o->root, s->cfg.limits.files, S_copy_theme_asset, s);
}

/* ---------- the steps ---------- */

static void S_init(build_state *s, const build_opts *o)
{
    memset(s, 0, sizeof *s);
    s->o = o;
    s->t0 = S_now();
    s->trace = getenv("KVSITE_TRACE") != NULL;
    s->github = getenv("GITHUB_ACTIONS") && strcmp(getenv("GITHUB_ACTIONS"), "true") == 0;
    diag_list_init(&s->dl);
    strmap_init(&s->files);
    fingerprints_init(&s->prints);
    output_init(&s->out);
    incr_init(&s->inc);
    s->inc.root = o->root;
    s->inc.strict = o->strict;
    s->inc.drafts = o->drafts;
    s->inc.cfg = &s->cfg;
    s->inc.out = &s->out;
    s->inc.dl = &s->dl;
    config_defaults(&s->cfg);
}

/* Columns in code points, as editors show them, before anything is printed:
 * every file a diagnostic names is read again (it is at most the largest
 * kind of input kvsite reads). */
static void S_columns(build_state *s)
{
    size_t max = s->cfg.limits.page_bytes;
    if (s->cfg.limits.data_bytes > max)
        max = s->cfg.limits.data_bytes;
    if (s->cfg.limits.template_bytes > max)
        max = s->cfg.limits.template_bytes;
    diag_code_point_columns(&s->dl, s->o->root, max ? max : (size_t)64 << 20);
}

/* The project, site.yaml and the output folder. 0, or 2 (printed). */
static int S_setup(build_state *s)
{
    const build_opts *o = s->o;
    char real[PATH_MAX];
    if (!realpath(o->root, real) || !fs_is_dir(real)) {
        fprintf(stderr, "kvsite: error: project folder %s: %s\n", o->root,
                strerror(errno ? errno : ENOTDIR));
        return 2;
    }
    s->root_real = xstrdup(real);
    if (config_load(&s->cfg, o->root, &s->dl) != 0 ||
        output_setup(&s->out, o->root, s->root_real, o->out, o->check_only, &s->dl) != 0) {
        diag_sort(&s->dl);
        S_columns(s);
        diag_print(&s->dl, stderr, s->github);
        fprintf(stderr, "kvsite: configuration error: nothing was built\n");
        return 2;
    }
    s->out.cap = s->cfg.limits.output_bytes;
    S_trace(s, "configured");
    return 0;
}

/* The no-change fast path: true (and the last build's summary printed again)
 * when nothing changed since the last build. A full build needs the staging
 * folder scanned: started here, beside the input stamp and the content. */
static bool S_up_to_date(build_state *s)
{
    const build_opts *o = s->o;
    if (s->out.staging) {
        s->inc.cache_path = output_side_path(&s->out, "cache");
        if (o->no_cache || !fs_exists(s->inc.cache_path))
            output_scan_start(&s->out);
    }
    bool same = false;
    if (!o->check_only) {
        s->inc.preloaded = o->keep ? o->keep->loaded : NULL;
        build_keep *k = o->keep;
        bool known = false;
        if (k && k->has_stamps && o->changed_known) {
            known = incr_input_stamp_known(&s->inc, &k->stamps, k->content_sum,
                                           k->content_entries, o->changed, o->changed_len);
            s->inc.stamps_known = known;
            k->has_stamps = false; /* moved in */
        }
        if (!known) {
            if (k)
                strmap_reserve(&s->inc.stamps, k->nstamps);
            incr_input_stamp(&s->inc);
        }
        s->inc.stamp_path = output_side_path(&s->out, "stamp");
        buf warnings = BUF_INIT;
        /* a keeper with nothing kept (serve's first build) wants the records
         * loaded: the next build takes them instead of decoding them */
        bool want_records = o->keep && !o->keep->records;
        same = !o->no_cache && !want_records && incr_up_to_date(&s->inc, s->counts, &warnings);
        if (same) {
            fputs(buf_cstr(&warnings), stderr);
            fprintf(stderr, "kvsite: up to date: %s, 0 errors in %.2f s (nothing changed; "
                            "--no-cache rebuilds)\n", s->counts, S_now() - s->t0);
            output_scan_stop(&s->out); /* nothing to build: no need for it */
        }
        buf_free(&warnings);
    }
    if (!same)
        S_trace(s, o->changed_known && s->inc.stamps_known ? "input stamp (what changed)"
                                                            : "input stamp");
    return same;
}

/* Below this many content entries the content loads in less time than
 * the highlighting queries compile, and the workers, meeting few code
 * blocks, compile few of them: the build would wait for the preload. */
#define S_PRELOAD_MIN_ENTRIES 200

/* Once the content's parse threads are done, beside the index, which takes
 * one core: the check of the kept outputs (incremental builds) and, for a
 * site with a few hundred files, where every worker would compile most
 * languages, the code highlighting's queries (joined before the workers
 * fork, in S_render). */
static void S_parsed(void *ctx)
{
    incr *inc = ctx;
    if (inc->content_entries >= S_PRELOAD_MIN_ENTRIES)
        hl_preload_start();
    incr_check_kept_outputs(inc);
}

/* The last build's cache, the content and the sources. */
static void S_load(build_state *s)
{
    const build_opts *o = s->o;
    incr_read_cache(&s->inc, !o->no_cache);
    S_trace(s, "cache read");
    build_keep *keep = o->keep;
    if (keep && keep->records && keep->figs && !o->check_only) {
        s->inc.kept = keep->records;
        s->inc.kept_sums = keep->sums;
        s->inc.nkept = keep->n;
    }
    if (keep && keep->idx && !o->check_only) {
        s->inc.kept_fronts = &keep->by_src;
        s->inc.kept_front_key = keep->front_key;
    }
    cmark_gfm_core_extensions_ensure_registered();
    /* parse threads as the build's jobs */
    content_opts copts = {.drafts = o->drafts, .threads = o->jobs, .reuse = incr_reuse_front,
                          .reuse_ctx = &s->inc,
                          .parsed = S_parsed};
    content_load(&s->idx, o->root, &s->cfg, &copts, &s->dl);
    S_trace(s, "content loaded");
    sources_load(&s->src, o->root, s->cfg.limits.data_bytes, &s->dl);
    sources_set_per(&s->src, (size_t)s->cfg.paginate_sources);
    S_trace(s, "sources loaded");
}

static char *S_job_url(const void *env, size_t job) { return jobs_url(env, job); }

/* The build's records, zeroed, in memory shared with the workers (the
 * parent stores them while they run): a thread of S_plan's. */
static void *S_new_records(void *arg)
{
    build_state *s = arg;
    s->records = shrec_new(s->njobs);
    /* writes every page of them (each a page fault, which costs here) */
    for (size_t j = 0; j < s->njobs; j++)
        record_init(&s->records[j]);
    return NULL;
}

/* The jobs, their records and what the workers see. */
static void S_plan(build_state *s)
{
    const build_opts *o = s->o;
    s->env = (render_env){.root = o->root, .dest = output_dest_of(&s->out), .cfg = &s->cfg,
                          .idx = &s->idx, .src = &s->src, .strict = o->strict};
    char *split = fs_join(o->root, "templates/" RENDER_REPORT_SECTION_TEMPLATE);
    if (fs_exists(split)) {
        s->report_sections = render_report_sections(&s->idx, &s->nreport_sections);
        s->env.report_sections = s->report_sections;
        s->env.nreport_sections = s->nreport_sections;
    }
    free(split);
    /* the listings' pages, once for the build: workers read the plan */
    s->groups = report_groups(&s->idx, s->report_sections, s->nreport_sections);
    s->env.report_groups = s->groups;
    paginate_plan(&s->pages_plan, &s->idx, &s->cfg, &s->src, s->groups, s->nreport_sections);
    s->env.pages_plan = &s->pages_plan;
    /* the records are made on another core while this one checks the
     * outputs (a site of 10,000 pages: 15 ms each) */
    s->njobs = render_job_count(&s->env);
    pthread_t maker;
    bool making = pthread_create(&maker, NULL, S_new_records, s) == 0;
    if (!making)
        S_new_records(s);
    /* every output file has one producer: said before anything renders */
    collide_list_assets(o->root, &s->cfg, &s->template_assets, &s->dl);
    collide_check(&s->env, &s->template_assets, &s->dl);
    S_fingerprint(s);
    build_keep *keep = o->keep;
    if (!o->check_only && keep && keep->figs) {
        /* the kept records point into it: this build appends after them */
        s->figs = keep->figs;
        keep->figs = NULL;
        s->env.figs = s->figs;
    } else if (!o->check_only) {
        /* an unnamed file in the state folder, where the cache goes */
        s->figs = xcalloc(1, sizeof *s->figs);
        if (figstore_open(s->figs, s->out.state_dir) != 0) {
            free(s->figs); /* not fatal: the figures stay in memory */
            s->figs = NULL;
        }
        s->env.figs = s->figs;
    }
    if (making)
        pthread_join(maker, NULL);
    s->env.records = s->records;
    s->env.nrecords = s->njobs;
    s->env.records_shared = true;
    s->job_phases = render_job_phases(&s->env);
    s->env.job_phases = s->job_phases;
    incr_bind(&s->inc, &s->idx, s->records, s->njobs, s->figs, s->report_sections != NULL);
    s->inc.job_url = S_job_url;
    s->inc.job_url_ctx = &s->env;
}

/* Incremental (the last build's cache was made from the same site) or full;
 * a full build waits for the staging folder's scan here. */
static void S_choose(build_state *s)
{
    if (output_writes(&s->out))
        s->search_prog = search_find(&s->cfg, s->root_real, &s->dl);
    /* the index is made whole in the staging folder: with search, every
     * build is a full one (pages still come from the cache when unchanged) */
    bool incremental = incr_possible(&s->inc, s->o->no_cache) && !s->search_prog;
    S_trace(s, incremental ? "incremental" : "full build");
    if (incremental) {
        /* changed files go to a folder of their own, moved in when the build succeeds */
        output_scan_stop(&s->out); /* no thread may run while workers fork */
        output_begin_incremental(&s->out, &s->dl);
        s->env.dest = output_dest_of(&s->out);
    } else if (s->out.staging) {
        output_unmark(&s->out);
        output_load_tables(&s->out);
        s->env.dest = output_dest_of(&s->out); /* diff_dir: what the records say differs */
        output_scan_finish(&s->out);
        S_trace(s, "staging scanned");
    }
}

static int S_phase(build_state *s, const pool_opts *po, int phase, int outfd)
{
    const render_env *env = &s->env;
    size_t *jobs = xmalloc((s->njobs + 1) * sizeof *jobs), n = 0, all = 0;
    for (size_t j = 0; j < s->njobs; j++)
        if (env->job_phases[j] == phase)
            jobs[all++] = j;
    bool *reused = xcalloc(all + 1, sizeof *reused);
    if (s->out.incremental)
        incr_reuse_jobs(&s->inc, jobs, all, outfd, po->workers, reused);
    for (size_t k = 0; k < all; k++) {
        if (reused[k])
            s->inc.reused++;
        else
            jobs[n++] = jobs[k];
    }
    free(reused);
    if (s->trace)
        fprintf(stderr, "kvsite: trace: phase %d: %zu of %zu jobs reused at %.3f s\n", phase,
                all - n, all, S_now() - s->t0);
    s->inc.rendered += n;
    if (s->out.incremental && s->trace)
        for (size_t k = 0; k < n; k++)
            fprintf(stderr, "kvsite: trace: rendering %s\n", render_job_file(env, jobs[k]));
    /* the output limit is watched as the records come in: a site far over it
     * stops there, not once every page is rendered */
    pool_cap *cap = &s->cap_stop;
    cap->passed = false;
    cap->limit = output_writes(&s->out) ? s->cfg.limits.output_bytes : 0;
    cap->before = s->out.extra_bytes;
    for (size_t j = 0; j < s->njobs; j++)
        cap->before += s->records[j].out_bytes;
    for (size_t k = 0; k < n; k++)
        cap->before -= s->records[jobs[k]].out_bytes; /* to be made again */
    /* past it already (the pages kept from the cache): S_over_cap says so */
    int rc = cap->limit && cap->before > cap->limit ? 0 : pool_run(env, po, jobs, n, s->records, cap);
    for (size_t j = 0; j < s->njobs; j++)
        if (env->job_phases[j] == phase)
            s->inc.digests[j] = record_digest(&s->records[j]);
    free(jobs);
    return rc;
}

static int S_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* The worker processes, and the threads of the parent's link check: -j,
 * else build.jobs, else the cores. */
static int S_jobs(const build_state *s)
{
    return s->o->jobs > 0 ? s->o->jobs : s->cfg.jobs > 0 ? s->cfg.jobs : S_cores();
}

/* Whether dl holds the error of a site past limits.output_bytes. */
static bool S_has_cap_error(const diag_list *dl)
{
    for (size_t k = 0; k < dl->n; k++)
        if (!strncmp(dl->v[k].msg, OUTPUT_CAP_MSG, strlen(OUTPUT_CAP_MSG)))
            return true;
    return false;
}

/* The file a job's errors are shown at: its page's source, or the template
 * of a generated page. */
static const char *S_job_file(build_state *s, size_t job)
{
    const char *src = s->records[job].src;
    return src && src[0] ? src : render_job_file(&s->env, job);
}

/* Whether the pages rendered so far pass limits.output_bytes: each worker
 * stops writing at the cap on its own, and the parent stops the build once
 * their sum passes it. One error, at the page that passed it (or the first
 * worker's). */
static bool S_over_cap(build_state *s)
{
    if (s->cap_stop.passed) { /* the pool stopped there */
        output_cap_error(&s->dl, S_job_file(s, s->cap_stop.job), s->cap_stop.total,
                         s->cap_stop.limit);
        return true;
    }
    uint64_t cap = s->cfg.limits.output_bytes, sum = s->out.extra_bytes;
    size_t past = s->njobs;
    for (size_t j = 0; j < s->njobs; j++) {
        const page_record *r = &s->records[j];
        if (S_has_cap_error(&r->diags))
            return true; /* a worker's own error says it */
        sum += r->out_bytes;
        if (sum > cap && past == s->njobs)
            past = j;
    }
    if (past == s->njobs)
        return false;
    output_cap_error(&s->dl, S_job_file(s, past), sum, cap);
    return true;
}

/* The report pages' parts (paginate.h), once the pages' figures are known:
 * their jobs, numbered after every other, join the last phase. */
static void S_report_parts(build_state *s)
{
    size_t *nfigs = xcalloc(s->idx.npages + 1, sizeof *nfigs);
    for (size_t i = 0; i < s->idx.npages; i++)
        nfigs[i] = s->records[i].nfigs;
    paginate_plan_parts(&s->pages_plan, &s->idx, s->groups, nfigs);
    free(nfigs);
    size_t njobs = render_job_count(&s->env);
    if (njobs == s->njobs)
        return;
    s->records = shrec_grow(s->records, s->njobs, njobs - s->njobs);
    for (size_t j = s->njobs; j < njobs; j++)
        record_init(&s->records[j]);
    s->njobs = njobs;
    s->env.records = s->records;
    s->env.nrecords = njobs;
    free(s->job_phases);
    s->job_phases = render_job_phases(&s->env);
    s->env.job_phases = s->job_phases;
    incr_grow(&s->inc, s->records, njobs);
}

/* The figures of every page by tier, once, before the last phase: a report
 * page that shows them takes them from here (render_env.site_totals), and
 * an incremental build checks it against their digest. */
static void S_site_totals(build_state *s)
{
    memset(s->site_totals, 0, sizeof s->site_totals);
    for (size_t j = 0; j < s->njobs; j++) {
        const page_record *rec = &s->records[j];
        if (!rec->nfigs)
            continue;
        uint32_t c[FIG_TIERS + 1];
        record_fig_counts(rec, c);
        s->site_totals[0] += (uint32_t)rec->nfigs;
        for (int k = 0; k <= FIG_TIERS; k++)
            s->site_totals[1 + k] += c[k];
    }
    s->env.site_totals = s->site_totals;
    s->inc.totals_digest = stamp_bytes(STAMP_SEED, s->site_totals, sizeof s->site_totals);
}

/* Phases 1 to 4 over the worker pool (see render.h), each after the one
 * before is complete. */
static void S_render(build_state *s)
{
    pool_opts po = {.workers = S_jobs(s), .deadline = s->cfg.limits.page_timeout,
                    .worker_memory = s->cfg.limits.worker_memory,
                    .build_deadline = s->t0 + s->cfg.limits.build_timeout,
                    .build_timeout = s->cfg.limits.build_timeout};
    int outfd = s->out.incremental ? open(s->out.out_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    /* no thread of the build runs while the workers fork (a fork copies
     * only the forking thread: a lock another one held stays held); a full
     * build never joins the kept records' checker otherwise */
    incr_join_threads(&s->inc);
    S_trace(s, "kept outputs checked");
    hl_preload_join();
    S_trace(s, "highlighting preloaded");
    int figs_said = 0; /* one error for it, not one per phase */
    for (int phase = 1; phase <= 4; phase++) {
        double tp = S_now();
        if (s->figs && figstore_flush(s->figs) != 0 && !figs_said++)
            diag_error(&s->dl, NULL, 0, 0, "cannot write the figure store: %s", strerror(errno));
        if (phase == 4) {
            S_report_parts(s);
            S_site_totals(s);
        }
        S_phase(s, &po, phase, outfd);
        if (s->trace)
            fprintf(stderr, "kvsite: trace: phase %d: %.3f s (%ld MiB)\n", phase, S_now() - tp,
                    S_rss_mib());
        if (output_writes(&s->out) && (s->over_cap = S_over_cap(s)))
            break;
    }
    if (outfd >= 0)
        close(outfd);
    /* what the parent allocates from here on is a few megabytes at most:
     * in whole huge pages it would be more of its peak memory (heap.h) */
    heap_prefer_small_pages();
    if (s->trace)
        fprintf(stderr, "kvsite: trace: loaded and rendered at %.3f s\n", S_now() - s->t0);
}

/* The assets, then every record's files and diagnostics into the build's. */
static void S_collect(build_state *s)
{
    uint64_t pages = 0;
    for (size_t j = 0; j < s->njobs; j++)
        pages += s->records[j].out_bytes;
    output_count(pages); /* the assets get what the pages left under the cap */
    /* a file per job and a few extras: the tables sized once, not doubled
     * fourteen times over (each doubling rehashes and faults in new pages) */
    strmap_reserve(&s->files, s->files.len + s->njobs + 64);
    output_note_room(&s->out, s->njobs + 64);
    if (!s->over_cap)
        S_copy_assets(s);
    s->out_bytes = s->out.extra_bytes + pages;
    bool cap_said = S_has_cap_error(&s->dl);
    diag_list shared; /* about files pages share (templates): once, with a count */
    diag_list_init(&shared);
    for (size_t j = 0; j < s->njobs; j++) {
        page_record *r = &s->records[j];
        if (r->url && r->url[0] && r->out_bytes > 0) {
            S_note_file(s, r->url);
            if (j < s->idx.npages)
                s->pages_built++;
        }
        /* copied, not moved: the record keeps its warnings for the cache,
         * so a page taken from it warns again */
        for (size_t k = 0; k < r->diags.n; k++) {
            const diag *d = &r->diags.v[k];
            if (!strncmp(d->msg, OUTPUT_CAP_MSG, strlen(OUTPUT_CAP_MSG))) {
                if (cap_said)
                    continue; /* one error for the cap, not one per worker */
                cap_said = true;
            }
            bool own = !d->file || (r->src && !strcmp(d->file, r->src));
            diag_add(own ? &s->dl : &shared, d->level, d->file, d->line, d->col, "%s", d->msg);
        }
    }
    diag_move_merged(&s->dl, &shared);
    S_trace(s, "assets copied, records merged");
}

/* A full build without errors so far writes its cache now, in a thread of
 * its own, while the feed is written and the links are checked. */
static void S_cache_start(build_state *s)
{
    s->writer_used = !s->out.incremental && s->inc.stamp_path && s->dl.errors == 0;
    if (s->figs)
        figstore_flush(s->figs); /* a cache writer's thread reads them with pread */
    if (s->writer_used)
        incr_writer_start(&s->writer, &s->inc);
}

/* A listing made whole in memory (the feed, the sitemap), as an output file. */
static void S_emit(build_state *s, const char *rel, const buf *b)
{
    char *site = xasprintf("/%s", rel);
    strmap_put(&s->files, site, (void *)1);
    free(site);
    output_emit(&s->out, rel, b->ptr, b->len, &s->dl);
}

static void S_feed_and_sitemap(build_state *s)
{
    if (s->over_cap)
        return; /* the build stopped at the cap */
    buf b = BUF_INIT;
    feed_atom(&b, &s->cfg, &s->idx, s->records);
    S_emit(s, "feed.xml", &b);
    buf_clear(&b);
    if (feed_absolute(&s->cfg)) {
        /* past the protocol's 50,000 URLs a file, parts and an index */
        buf names = BUF_INIT;
        size_t parts = feed_sitemap_files(&names, s->records, s->njobs);
        const char *name = buf_cstr(&names) + sizeof "sitemap.xml";
        for (size_t k = 1; k <= parts; k++, name += strlen(name) + 1) {
            buf_clear(&b); /* the part's path is kvsite's (collide_check) */
            feed_sitemap(&b, &s->cfg, &s->idx, s->records, s->njobs, k);
            S_emit(s, name, &b);
        }
        buf_clear(&b);
        if (parts)
            feed_sitemap_index(&b, &s->cfg, parts);
        else
            feed_sitemap(&b, &s->cfg, &s->idx, s->records, s->njobs, 0);
        S_emit(s, "sitemap.xml", &b);
        buf_free(&names);
    } else if (s->cfg.base_url_line > 0) {
        /* said where base_url is set to a path; the default "/" builds quietly */
        diag_add(&s->dl, DIAG_NOTE, "site.yaml", s->cfg.base_url_line, s->cfg.base_url_col,
                 "base_url \"%s\" has no host, so sitemap.xml is not written and feed.xml's "
                 "ids are not absolute URLs: set base_url to \"https://host/...\"",
                 s->cfg.base_url);
    }
    buf_free(&b);
    S_trace(s, "feed, sitemap");
}

/* Every internal link; in an incremental build whose old links still hold,
 * only those of the pages rendered again. */
static void S_links(build_state *s)
{
    if (s->over_cap)
        return; /* pages are missing: their links say nothing */
    if (incr_old_links_hold(&s->inc)) {
        bool *fresh = xcalloc(s->njobs + 1, sizeof *fresh);
        for (size_t j = 0; j < s->njobs; j++)
            fresh[j] = !s->inc.from_cache[j];
        links_check(s->records, s->njobs, fresh, &s->idx.by_url, &s->files, s->figs,
                    (unsigned)S_jobs(s), &s->dl);
        free(fresh);
    } else {
        links_check(s->records, s->njobs, NULL, &s->idx.by_url, &s->files, s->figs,
                    (unsigned)S_jobs(s), &s->dl);
    }
    S_trace(s, "links checked");
}

/* The checks that need the whole build, then every diagnostic, printed. */
static void S_report(build_state *s)
{
    if (s->out_bytes > s->cfg.limits.output_bytes && !S_has_cap_error(&s->dl))
        output_cap_error(&s->dl, NULL, s->out_bytes, s->cfg.limits.output_bytes);
    if (s->o->strict)
        diag_promote_warnings(&s->dl);
    /* a full disk fails every file written after it: one error says so */
    diag_keep_first(&s->dl, OUTPUT_FULL_MSG, "files not written");
    for (size_t j = 0; j < s->njobs; j++) {
        uint32_t counts[FIG_TIERS + 1];
        record_fig_counts(&s->records[j], counts);
        for (int t = 0; t < FIG_TIERS; t++)
            s->tiers[t] += counts[t];
    }
    diag_sort(&s->dl);
    S_columns(s);
    diag_print(&s->dl, stderr, s->github);
}

/* The search index, into the staging folder before it is swapped in; its
 * failure is the build's error, printed here (the rest was printed). */
static void S_search(build_state *s)
{
    diag_list sdl;
    diag_list_init(&sdl);
    search_index(s->search_prog, s->out.staging, s->cfg.search_timeout, &sdl);
    diag_print(&sdl, stderr, s->github);
    for (size_t i = 0; i < sdl.n; i++)
        diag_add(&s->dl, sdl.v[i].level, sdl.v[i].file, sdl.v[i].line, sdl.v[i].col, "%s",
                 sdl.v[i].msg);
    diag_list_free(&sdl);
    S_trace(s, "search index");
}

/* After a full publish: the output's table, then the staging folder's
 * (output_table_save), from the pages' records. A page of two files has no
 * stamp (which file would it be of): left out. */
static void S_tables(build_state *s)
{
    if (s->dl.errors)
        return;
    size_t urls = 0; /* a page's path is its URL and "index.html" */
    for (size_t j = 0; j < s->njobs; j++)
        urls += s->records[j].url ? strlen(s->records[j].url) + 11 : 0;
    for (int staging = 0; staging < 2; staging++) {
        outrec_builder b;
        output_table_start(&s->out, &b);
        outrec_builder_reserve(&b, s->njobs, urls);
        for (size_t j = 0; j < s->njobs; j++) {
            const page_record *r = &s->records[j];
            if (!r->url || !r->url[0] || r->out_bytes == 0 ||
                !outrec_stamp_known(staging ? &r->pub_at : &r->out_at) ||
                (staging && r->out_changed))
                continue;
            char *rel = output_rel(r->url);
            outrec_add(&b, rel, staging ? &r->pub_at : &r->out_at, &r->out_digest);
            free(rel);
        }
        output_table_save(&s->out, staging, &b);
        outrec_builder_free(&b);
    }
    S_trace(s, "tables saved");
}

/* A build without errors replaces the output: an incremental one moves its
 * files in, a full one swaps the staging folder in. */
static void S_publish(build_state *s)
{
    if (s->inc.stamp_path)
        unlink(s->inc.stamp_path); /* the output is about to change */
    if (s->dl.errors == 0 && s->out.incremental) {
        if (output_publish_incremental(&s->out, s->inc.prev.outputs, s->inc.prev.outputs_len,
                                       &s->dl) != 0) {
            S_columns(s);
            diag_print(&s->dl, stderr, s->github);
        }
    } else if (s->dl.errors == 0 && s->out.staging) {
        output_sweep(&s->out);
        S_trace(s, "swept");
        buf fresh = BUF_INIT; /* the pages whose bytes the old output lacks */
        for (size_t j = 0; j < s->njobs; j++) {
            const page_record *r = &s->records[j];
            if (!r->url || !r->url[0] || r->out_bytes == 0)
                continue;
            if (r->out_changed) {
                char *rel = output_rel(r->url);
                buf_put(&fresh, rel, strlen(rel) + 1);
                free(rel);
            }
        }
        if (s->search_prog)
            S_search(s);
        if (s->dl.errors == 0
            && output_publish(&s->out, fresh.ptr ? fresh.ptr : "", fresh.len, &s->dl) != 0) {
            S_columns(s);
            diag_print(&s->dl, stderr, s->github);
        }
        buf_free(&fresh);
        S_tables(s);
    }
    if (s->dl.errors && output_writes(&s->out))
        output_discard(&s->out); /* nothing of a failed build stays on disk */
    output_done(&s->out);
    S_trace(s, "published");
}

static void S_summary(build_state *s)
{
    const size_t *tiers = s->tiers;
    s->status = s->dl.errors ? 1 : 0;
    /* refuted claims are counted when there are any: most sites have none */
    char refuted[40] = "";
    if (tiers[FIG_REFUTED])
        snprintf(refuted, sizeof refuted, ", %zu refuted", tiers[FIG_REFUTED]);
    snprintf(s->counts, sizeof s->counts,
             "%zu pages, %zu figures (%zu computed, %zu measured, %zu cited%s), %zu warning%s",
             s->pages_built, tiers[0] + tiers[1] + tiers[2] + tiers[3], tiers[FIG_COMPUTED],
             tiers[FIG_MEASURED], tiers[FIG_CITED], refuted, s->dl.warnings,
             s->dl.warnings == 1 ? "" : "s");
    char how[96] = "";
    if (s->out.incremental && s->status == 0)
        snprintf(how, sizeof how, " (%zu rendered, %zu unchanged since the last build)",
                 s->inc.rendered, s->inc.reused);
    fprintf(stderr, "kvsite: %s %s, %zu error%s in %.2f s%s%s\n",
            s->o->check_only ? "checked" : s->status ? "failed to build" : "built", s->counts,
            s->dl.errors, s->dl.errors == 1 ? "" : "s", S_now() - s->t0, how,
            s->status && !s->o->check_only ? "; the previous output is unchanged" : "");
}

/* After a successful build: the cache (unless the writer made it) and the
 * stamp, for the next build. */
static void S_save(build_state *s)
{
    if (s->writer_used)
        incr_writer_end(&s->writer, s->status == 0);
    if (s->status == 0 && s->inc.stamp_path) {
        buf list = BUF_INIT;
        uint64_t *stamps = xmalloc((s->njobs + 1) * sizeof *stamps);
        uint64_t out_stamp = incr_outputs(&s->inc, &list, stamps);
        S_trace(s, "output stamped");
        if (!s->writer_used)
            incr_save_cache(&s->inc, &list, stamps);
        S_trace(s, "cache saved");
        incr_save_stamp(&s->inc, s->counts, &list, out_stamp);
        free(stamps);
        buf_free(&list);
    }
    S_trace(s, "saved");
    if (s->trace) {
        pool_settle(); /* their peak memory counts once they are waited for */
        struct rusage self, kids;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &kids);
        fprintf(stderr, "kvsite: trace: peak RSS: parent %ld KiB, largest worker %ld KiB\n",
                self.ru_maxrss, kids.ru_maxrss);
    }
}

/* build_opts.done, once: as soon as the output is published (or not) and
 * the diagnostics printed, before the cache is saved and the memory freed. */
static void S_tell(build_state *s)
{
    if (s->o->done && !s->told)
        s->o->done(s->o->done_ctx, s->status, &s->dl);
    s->told = true;
}

build_keep *build_keep_new(void)
{
    build_keep *k = xcalloc(1, sizeof *k);
    strmap_init(&k->by_src);
    strmap_init(&k->stamps);
    return k;
}

/* What a build did not take goes. */
static void S_keep_clear(build_keep *k)
{
    for (size_t j = 0; j < k->n; j++)
        record_free(&k->records[j]);
    free(k->records);
    free(k->sums);
    if (k->figs)
        figstore_close(k->figs);
    free(k->figs);
    if (k->loaded)
        cache_free(k->loaded);
    free(k->loaded);
    if (k->idx)
        content_index_free(k->idx);
    free(k->idx);
    free(k->fronts);
    strmap_free(&k->by_src);
    strmap_free(&k->stamps);
    memset(k, 0, sizeof *k);
    strmap_init(&k->by_src);
    strmap_init(&k->stamps);
}

void build_keep_free(build_keep *k)
{
    if (k)
        S_keep_clear(k);
    free(k);
}

/* After a build that saved its cache, its records and their store go to the
 * keep; unless the store is mostly bytes no record points to any more (each
 * build appends what it decoded or rendered): then the next starts afresh. */
static void S_keep(build_state *s)
{
    build_keep *k = s->o->keep;
    if (!k)
        return;
    incr_join_threads(&s->inc); /* one may still read the kept records */
    S_keep_clear(k);
    if (s->status != 0 || !s->inc.cache_saved || !s->inc.saved_sums || !s->figs)
        return;
    uint64_t live = 0;
    for (size_t j = 0; j < s->njobs; j++)
        live += (uint64_t)s->records[j].figs_len + s->records[j].links_len;
    uint64_t size = s->figs->flushed + s->figs->npending;
    if (size > 2 * live + ((uint64_t)1 << 20))
        return;
    k->records = shrec_to_heap(s->records, s->njobs); /* see shrec.h */
    k->n = s->njobs;
    k->sums = s->inc.saved_sums;
    k->figs = s->figs;
    s->inc.saved_sums = NULL;
    s->records = NULL;
    s->njobs = 0;
    s->figs = NULL;
    /* read now, after the reload, instead of at the start of the next build */
    k->loaded = xmalloc(sizeof *k->loaded);
    if (cache_load(k->loaded, s->inc.cache_path, s->cfg.limits.output_bytes) != 0) {
        free(k->loaded);
        k->loaded = NULL;
    }
    /* the pages, with the stamp of the file each was parsed from */
    k->idx = xmalloc(sizeof *k->idx);
    *k->idx = s->idx;
    memset(&s->idx, 0, sizeof s->idx);
    k->front_key = s->inc.front_key;
    k->nstamps = s->inc.stamps.len;
    k->fronts = xcalloc(k->idx->npages + 1, sizeof *k->fronts);
    size_t n = 0;
    for (size_t i = 0; i < k->idx->npages; i++) {
        page *p = k->idx->pages[i];
        void *stamp = p->src ? strmap_get(&s->inc.stamps, p->src) : NULL;
        if (!stamp)
            continue;
        k->fronts[n] = (incr_kept_front){p, (uint64_t)(uintptr_t)stamp};
        strmap_put(&k->by_src, p->src, &k->fronts[n++]);
    }
    k->stamps = s->inc.stamps;
    strmap_init(&s->inc.stamps);
    k->content_sum = s->inc.content_sum;
    k->content_entries = s->inc.content_entries;
    k->has_stamps = true;
}

static build_state *volatile S_kept; /* see build_opts.exiting; volatile: a store never read must stay */

static int S_finish(build_state *s)
{
    pool_settle(); /* the last phase's workers */
    /* the kept records' checker reads the keep: done before it is cleared */
    incr_join_threads(&s->inc);
    hl_preload_join();
    output_unlock(&s->out);
    if (s->o->exiting) {
        /* The process ends next: freeing a big site piece by piece would
         * take longer than the rest of an incremental build. The state
         * stays reachable from here, so leak checkers see no leak (git's
         * UNLEAK does the same). */
        S_kept = xmalloc(sizeof *s);
        *S_kept = *s;
        return s->status;
    }
    S_keep(s);
    for (size_t j = 0; j < s->njobs; j++)
        record_free(&s->records[j]);
    shrec_free(s->records, s->njobs);
    free(s->report_sections);
    free(s->groups);
    paginate_plan_free(&s->pages_plan);
    if (s->figs)
        figstore_close(s->figs);
    free(s->figs);
    content_index_free(&s->idx);
    sources_free(&s->src);
    config_free(&s->cfg);
    strmap_free(&s->files);
    collide_files_free(&s->template_assets);
    fingerprints_free(&s->prints);
    incr_free(&s->inc);
    output_free(&s->out);
    free(s->job_phases);
    diag_list_free(&s->dl);
    free(s->root_real);
    free(s->search_prog);
    return s->status;
}

int build_run(const build_opts *o)
{
    build_state s;
    S_init(&s, o);
    s.status = S_setup(&s);
    if (s.status == 0 && !S_up_to_date(&s)) {
        S_load(&s);
        S_plan(&s);
        S_choose(&s);
        S_render(&s);
        output_scan_published(&s.out); /* no worker forks from here on */
        output_tables_read(&s.out);
        S_collect(&s);
        S_cache_start(&s);
        S_feed_and_sitemap(&s);
        S_links(&s);
        S_report(&s);
        S_publish(&s);
        S_summary(&s);
        S_tell(&s); /* kvsite serve reloads pages while the cache is saved */
        S_save(&s);
        if (o->after) {
            build_result r = {o->root, s.records, s.njobs, s.figs, &s.dl,
                              s.cfg.limits.page_bytes, s.github, s.status};
            s.status = o->after(o->after_ctx, &r);
        }
    }
    S_tell(&s);
    return S_finish(&s);
}
