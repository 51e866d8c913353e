#include "incremental.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "feed.h"
#include "frontmatter.h"
#include "fsutil.h"
#include "paths.h"
#include "sealed.h"
#include "sources.h"
#include "stamp.h"
#include "theme.h"
#include "yv.h"

void incr_init(incr *inc)
{
    memset(inc, 0, sizeof *inc);
    strmap_init(&inc->stamps);
    strmap_init(&inc->unstamped);
    pthread_mutex_init(&inc->unstamped_lock, NULL);
    strmap_init(&inc->fronts);
    cache_init(&inc->prev);
    inc->stage_fd = -1;
}

void incr_free(incr *inc)
{
    incr_join_threads(inc);
    if (inc->stage_fd >= 0)
        close(inc->stage_fd);
    free(inc->kept_out);
    free(inc->kept_staged);
    free(inc->stamp_path);
    free(inc->cache_path);
    strmap_free(&inc->stamps);
    strmap_free(&inc->unstamped);
    pthread_mutex_destroy(&inc->unstamped_lock);
    strmap_free(&inc->fronts);
    cache_free(&inc->prev);
    free(inc->digests);
    free(inc->from_cache);
    free(inc->after);
    free(inc->saved_sums);
}

/* ---------- the no-change fast path ---------- */

static void S_note_stamp(void *ctx, const char *path, uint64_t stamp)
{
    strmap_put(ctx, path, (void *)(uintptr_t)(stamp | 1));
}

/* The running binary, into h. */
static uint64_t S_stamp_exe(uint64_t h)
{
    char exe[PATH_MAX];
    return realpath("/proc/self/exe", exe) ? stamp_file(h, exe) : h;
}

/* site.yaml, and the installed theme and checks library the site uses:
 * files that change without a new binary (a theme author's edit, a package
 * that moves them), into h. */
static uint64_t S_stamp_site_files(uint64_t h, const incr *inc)
{
    char *cfg = fs_join(inc->root, "site.yaml");
    h = stamp_file(h, cfg);
    free(cfg);
    const char *installed[] = {theme_dir(inc->cfg, inc->root), paths_get()->checks};
    for (size_t i = 0; i < sizeof installed / sizeof *installed; i++)
        h = installed[i] ? stamp_tree(h, installed[i], ".", inc->cfg->limits.files, NULL)
                         : stamp_str(h, "(none)");
    return h;
}

/* What every build depends on: the binary, the flags and the site's files. */
static uint64_t S_setup_stamp(const incr *inc)
{
    uint64_t h = S_stamp_exe(stamp_str(STAMP_SEED, "kvsite " KVSITE_VERSION));
    h = stamp_str(h, inc->strict ? "strict" : "-");
    h = stamp_str(h, inc->drafts ? "drafts" : "-");
    /* the ceilings (--limits and --no-unsafe reach it too): a lower one must
     * re-check every page */
    const char *ceilings = getenv("KVSITE_LIMITS");
    h = stamp_str(h, ceilings ? ceilings : "-");
    return S_stamp_site_files(h, inc);
}

/* A theme asset's stamp, as "theme/assets/<rel>": the input a page that
 * links its fingerprinted name depends on (fingerprint.h). */
static void S_note_theme_stamp(void *ctx, const char *path, uint64_t stamp)
{
    char *key = xasprintf("theme/%s", path);
    S_note_stamp(ctx, key, stamp);
    free(key);
}

static uint64_t S_mix(uint64_t h, uint64_t v) { return stamp_bytes(h, &v, sizeof v); }

/* What the stamps of templates/, checks/ and the theme's assets add after
 * the setup's and content/'s. */
static uint64_t S_stamp_rest(incr *inc, uint64_t h)
{
    static const char *const dirs[] = {"templates", "checks"};
    for (size_t i = 0; i < 2; i++)
        h = stamp_tree_each(h, inc->root, dirs[i], inc->cfg->limits.files * 2, NULL,
                            S_note_stamp, &inc->stamps);
    const char *theme = theme_dir(inc->cfg, inc->root);
    if (theme)
        h = stamp_tree_each(h, theme, "assets", inc->cfg->limits.files * 2, NULL,
                            S_note_theme_stamp, &inc->stamps);
    return h;
}

/* Everything a build reads: the binary, the flags, site.yaml, content/ (as a
 * sum of its entries' stamps, so that serve can update it: below),
 * templates/, checks/ and the theme's assets. Each file's own stamp goes to
 * inc->stamps, and content/'s folders and other entries by their keys
 * (stamp.h). */
uint64_t incr_input_stamp(incr *inc)
{
    uint64_t h = S_setup_stamp(inc);
    inc->content_sum = stamp_tree_sum(inc->root, "content", inc->cfg->limits.files * 2,
                                      &inc->content_entries, S_note_stamp, &inc->stamps);
    h = S_stamp_rest(inc, S_mix(h, inc->content_sum));
    inc->in_stamp = h;
    return h;
}

/* The entry of content/ at rel ("content/a/b.md") as the kept stamps have
 * it (0: none) and as it is now (0: gone); a folder, new or gone, is known
 * only by a walk (*walk). Updates the table and returns now - before. */
static uint64_t S_restamp(incr *inc, const char *rel, bool *walk)
{
    char *dir_key = xasprintf("%s/", rel), *other_key = xasprintf("?%s", rel);
    const char *keys[] = {rel, dir_key, other_key};
    uint64_t before = 0;
    bool was_dir = false;
    for (size_t k = 0; k < 3; k++) {
        void *v = strmap_get(&inc->stamps, keys[k]);
        if (v) {
            before = (uint64_t)(uintptr_t)v;
            was_dir = k == 1;
            strmap_put(&inc->stamps, keys[k], NULL);
        }
    }
    uint64_t now = 0;
    struct stat st;
    char *full = fs_join(inc->root, rel);
    if (lstat(full, &st) == 0) {
        const char *key = S_ISDIR(st.st_mode) ? dir_key : S_ISREG(st.st_mode) ? rel : other_key;
        if (S_ISDIR(st.st_mode) != was_dir)
            *walk = true; /* a folder came or went: what is in it is not known */
        now = stamp_entry(key, &st);
        strmap_put(&inc->stamps, key, (void *)(uintptr_t)now);
        inc->content_entries += before == 0;
    } else if (was_dir) {
        *walk = true;
    } else {
        inc->content_entries -= before != 0;
    }
    free(full);
    free(dir_key);
    free(other_key);
    return now - before;
}

bool incr_input_stamp_known(incr *inc, strmap *kept, uint64_t content_sum, size_t entries,
                            const char *changed, size_t len)
{
    /* the kept table's content/ entries stand; the rest is stamped again */
    strmap_free(&inc->stamps);
    inc->stamps = *kept;
    strmap_init(kept);
    for (size_t i = 0; i < inc->stamps.cap; i++) {
        const char *key = inc->stamps.slots[i].key;
        if (key && strncmp(key, "content/", 8) != 0 && strncmp(key, "?content/", 9) != 0)
            inc->stamps.slots[i].val = NULL;
    }
    inc->content_sum = content_sum;
    inc->content_entries = entries;
    bool walk = false;
    strmap done;
    strmap_init(&done);
    for (const char *p = changed; !walk && p < changed + len; p += strlen(p) + 1) {
        if (strncmp(p, "content/", 8) != 0 || !p[8])
            continue; /* stamped again below, or content/ itself: its entries tell */
        /* the entry, and the folder it is in (a rename or a new name
         * changes the folder's times) */
        const char *slash = strrchr(p, '/');
        char *parent = xstrndup(p, (size_t)(slash - p));
        const char *both[] = {p, parent};
        for (size_t k = 0; k < 2 && !walk; k++) {
            if (!strcmp(both[k], "content") || strmap_get(&done, both[k]))
                continue;
            strmap_put(&done, both[k], (void *)1);
            inc->content_sum += S_restamp(inc, both[k], &walk);
        }
        free(parent);
    }
    strmap_free(&done);
    if (walk || inc->content_entries > inc->cfg->limits.files * 2) {
        /* the caller walks it all: a fresh table */
        strmap_free(&inc->stamps);
        return false;
    }
    inc->in_stamp = S_stamp_rest(inc, S_mix(S_setup_stamp(inc), inc->content_sum));
    return true;
}

/* A set of files' stamps, order aside: the sum of each file's stamp (which
 * covers its name). The stats of a site's every page: two threads take them
 * (stamp_files_at). */
static uint64_t S_list_stamp(incr *inc, const char *list, size_t len)
{
    int dir = open(inc->out->out_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dir < 0)
        return stamp_str(STAMP_SEED, "(no output)");
    size_t n = 0, cap = 0;
    char **paths = NULL;
    for (const char *p = list; p < list + len; p += strlen(p) + 1) {
        if (n == cap)
            paths = xrealloc(paths, (cap = cap ? 2 * cap : 1024) * sizeof *paths);
        paths[n++] = (char *)p;
    }
    uint64_t *stamps = xmalloc((n ? n : 1) * sizeof *stamps);
    stamp_files_at(dir, paths, n, stamps);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += stamps[i];
    free(stamps);
    free(paths);
    close(dir);
    return sum;
}

/* The longest stamp file read. */
#define S_STAMP_MAX (16u << 20)

/* The stamp file, a sealed file (sealed.h: one whose bytes changed since
 * does not load, and the build takes the long way): the input and output
 * stamps and the length of the output list (a line of text), the list
 * (NUL-separated), the counts line, then the diagnostics of that build
 * (warnings), to be printed again. Unsealed, a changed byte in the warnings
 * would have been printed as the build's own, or one left out. */
static const char S_STAMP_MAGIC[SEALED_MAGIC_SIZE] = "kvsite-stamp 6\n";

bool incr_up_to_date(incr *inc, char *counts, buf *warnings)
{
    sealed_map m;
    counts[0] = '\0';
    if (!sealed_load(&m, inc->stamp_path, S_STAMP_MAGIC, S_STAMP_MAX))
        return false;
    buf text = BUF_INIT; /* NUL-terminated, for sscanf and strchr */
    buf_put(&text, m.data, m.len);
    sealed_unmap(&m);
    unsigned long long in = 0, out = 0, listlen = 0;
    int used = 0;
    bool ok = sscanf(buf_cstr(&text), "%llx\n%llx\n%llu\n%n", &in, &out, &listlen, &used) == 3 &&
              used > 0 && in == inc->in_stamp && listlen <= text.len - (size_t)used;
    if (ok)
        ok = out == S_list_stamp(inc, buf_cstr(&text) + used, (size_t)listlen);
    if (ok) {
        const char *rest = buf_cstr(&text) + used + listlen;
        const char *nl = strchr(rest, '\n');
        if (!nl || (size_t)(nl - rest) >= INCR_COUNTS)
            ok = false;
        else {
            memcpy(counts, rest, (size_t)(nl - rest));
            counts[nl - rest] = '\0';
            /* the last build's warnings, as it printed them */
            buf_puts(warnings, nl + 1);
        }
    }
    buf_free(&text);
    return ok;
}

void incr_save_stamp(incr *inc, const char *counts, const buf *list, uint64_t out_stamp)
{
    /* A stamp incr_up_to_date would not read is not written: a build with
     * that many warnings takes the incremental way, whose records replay
     * them (the text, about 40 bytes a diagnostic besides its file and
     * message, would only be written to be refused). */
    size_t size = list->len + 256;
    for (size_t i = 0; i < inc->dl->n && size <= S_STAMP_MAX; i++) {
        const diag *d = &inc->dl->v[i];
        size += (d->file ? strlen(d->file) : 0) + strlen(d->msg) + 40;
    }
    if (size > S_STAMP_MAX) {
        unlink(inc->stamp_path); /* nor does an older one stay */
        return;
    }
    /* the diagnostics as they were printed, into memory first (diag_print
     * writes to a stream) */
    char *diags = NULL;
    size_t diags_len = 0;
    FILE *mem = open_memstream(&diags, &diags_len);
    if (!mem) {
        unlink(inc->stamp_path);
        return;
    }
    diag_print(inc->dl, mem, false);
    bool ok = !ferror(mem);
    if (fclose(mem) != 0 || !ok) {
        free(diags);
        unlink(inc->stamp_path);
        return;
    }
    char head[80];
    int n = snprintf(head, sizeof head, "%016llx\n%016llx\n%zu\n",
                     (unsigned long long)inc->in_stamp, (unsigned long long)out_stamp,
                     list->len);
    /* sealed_commit writes a side file and renames it over: a stamp cut
     * short by a kill is never taken for one with fewer warnings */
    sealed_writer *w = sealed_create(inc->stamp_path, S_STAMP_MAGIC);
    sealed_write(w, head, (size_t)n);
    sealed_write(w, buf_cstr(list), list->len);
    sealed_write(w, counts, strlen(counts));
    sealed_write(w, "\n", 1);
    sealed_write(w, diags, diags_len);
    sealed_commit(w); /* one that cannot be written leaves none (S_publish removed the old) */
    free(diags);
}


/* ---------- incremental builds ---------- */

/* A file's stamp as the build saw it at the start. A file the input stamp did
 * not see as a regular file is either missing (a state like any other) or
 * something that cannot be fingerprinted (*ok = false). */
static uint64_t S_file_stamp(incr *inc, const char *path, bool *ok)
{
    void *v = strmap_get(&inc->stamps, path);
    if (v)
        return (uint64_t)(uintptr_t)v;
    /* every page of a section names the same missing candidates (a
     * templates/<section>/page.html it does not have): ask the disk once */
    pthread_mutex_lock(&inc->unstamped_lock);
    uintptr_t state = (uintptr_t)strmap_get(&inc->unstamped, path);
    if (!state) {
        char *full = fs_join(inc->root, path);
        state = fs_exists(full) ? 2 : 1;
        free(full);
        strmap_put(&inc->unstamped, path, (void *)state);
    }
    pthread_mutex_unlock(&inc->unstamped_lock);
    if (state == 2)
        *ok = false;
    return stamp_str(stamp_str(STAMP_SEED, path), "(missing)");
}

static uint64_t S_str_key(uint64_t h, const char *s) { return stamp_str(h, s ? s : "\x01"); }

/* What every page may see: the binary, the flags, site.yaml, the sources and
 * the whole page index (front matter included, since listings sort and show
 * it). When it changes, every page is rendered again. */
static uint64_t S_global_key(incr *inc)
{
    uint64_t h = S_setup_stamp(inc);
    /* every figure links to the report page that lists it */
    h = stamp_str(h, inc->report_by_section ? "report by section" : "one report");
    h = S_mix(h, inc->planned);
    bool ok = true;
    h = S_mix(h, S_file_stamp(inc, SOURCES_FILE, &ok));
    const content_index *x = inc->idx;
    h = S_mix(h, x->npages);
    for (size_t i = 0; i < x->npages; i++) {
        const page *p = x->pages[i];
        h = S_mix(h, (uint64_t)p->kind);
        const char *fields[] = {p->src, p->section, p->url, p->out, p->title, p->date,
                                p->updated, p->summary, p->slug, p->template_name};
        for (size_t k = 0; k < sizeof fields / sizeof *fields; k++)
            h = S_str_key(h, fields[k]);
        for (size_t t = 0; t < p->ntags; t++)
            h = S_str_key(h, p->tags[t]);
        h = S_mix(h, p->ntags);
        h = S_mix(h, (uint64_t)p->weight);
        h = S_mix(h, (uint64_t)p->draft);
        h = S_mix(h, (uint64_t)p->body_line);
        h = yv_hash(p->front, h);
    }
    h = S_mix(h, x->nassets);
    for (size_t i = 0; i < x->nassets; i++) {
        h = S_str_key(h, x->assets[i].src);
        h = S_str_key(h, x->assets[i].out);
    }
    h = S_mix(h, x->ntags);
    for (size_t t = 0; t < x->ntags; t++)
        h = S_str_key(h, x->tags[t].name);
    return ok ? h : 0;
}

/* A job's own inputs: its source and every file it read. 0 when one of them
 * cannot be fingerprinted: such a page is always rendered. */
static uint64_t S_deps(incr *inc, size_t job, const page_record *r)
{
    bool ok = true;
    uint64_t h = STAMP_SEED;
    if (job < inc->idx->npages && inc->idx->pages[job]->src)
        h = S_mix(h, S_file_stamp(inc, inc->idx->pages[job]->src, &ok));
    for (const char *p = r->inputs; p && p < r->inputs + r->inputs_len; p += strlen(p) + 1)
        h = S_mix(h, S_file_stamp(inc, p, &ok));
    return ok ? h | 1 : 0;
}

/* Whether r's page wrote an output file (one without has STAMP_SEED for
 * its stamp). */
static bool S_has_output(const page_record *r)
{
    return r->url && r->url[0] && r->out_bytes != 0;
}

static uint64_t S_out_stamp(int outfd, const page_record *r)
{
    if (!S_has_output(r) || outfd < 0)
        return STAMP_SEED;
    char *rel = output_rel(r->url);
    uint64_t h = stamp_file_at(STAMP_SEED, outfd, rel);
    free(rel);
    return h;
}

/* Whether job's output file is as the last build left it (e its cache
 * entry, r its record): the published copy, and the staging folder's when
 * the last build knew its stamp and this build's publish keeps it (the mark
 * does not list it). That copy is the one the swap publishes: when it is as
 * it was, its stamp now is the published file's then (*after; incr_outputs
 * need not stat it again), and the published copy is not looked at; when it
 * changed, its rel goes to *repair (the publish copies the output's file
 * over it) and the published copy is checked. *after 0: stat'ed after the
 * publish. published and staged: what serve's check of its kept records
 * found of each copy (1 as it was, 2 changed), 0 when it did not look. */
static bool S_out_same(incr *inc, const cache_entry *e, const page_record *r, int outfd,
                       unsigned char published, unsigned char staged, uint64_t *after,
                       buf *repair)
{
    *after = 0;
    if (!S_has_output(r) || outfd < 0)
        return published ? published == 1 : S_out_stamp(outfd, r) == e->out_stamp;
    char *rel = output_rel(r->url);
    bool same = false;
    if (e->stage_stamp && inc->stage_fd >= 0 && output_staging_keeps(inc->out, rel)) {
        same = staged ? staged == 1
                      : stamp_file_at(STAMP_SEED, inc->stage_fd, rel) == e->stage_stamp;
        if (same)
            *after = e->stage_stamp;
        else
            buf_put(repair, rel, strlen(rel) + 1);
    }
    if (!same)
        same = published ? published == 1
                         : stamp_file_at(STAMP_SEED, outfd, rel) == e->out_stamp;
    free(rel);
    return same;
}

/* The digests of the records a job read, in order; 0 if one is unknown. */
static uint64_t S_reads_digest(incr *inc, const page_record *r)
{
    uint64_t h = STAMP_SEED;
    if (r->reads_totals)
        h = S_mix(h, inc->totals_digest);
    record_read_pos at = {0, 0};
    for (uint32_t k; record_read_next(r, &at, &k);) {
        if (k >= inc->njobs)
            return 0;
        h = S_mix(S_mix(h, k), inc->digests[k]);
    }
    return h | 1;
}

/* One job's reuse (incr_reuse_jobs), reading its record through the
 * caller's window and buffer. */
static bool S_reuse(incr *inc, size_t job, int outfd, fs_window *win, buf *bytes,
                    buf *repair)
{
    if (!inc->out->incremental || job >= inc->prev.njobs)
        return false;
    const cache_entry *e = &inc->prev.jobs[job];
    if (!e->present || e->deps == 0)
        return false;
    page_record rec;
    unsigned char published = 0, staged = 0;
    if (job < inc->nkept && inc->kept[job].done && inc->kept_sums[job] == e->rec_sum) {
        /* the record this process saved as these very bytes: no decoding */
        rec = inc->kept[job];
        record_init(&inc->kept[job]);
        published = inc->kept_out ? inc->kept_out[job] : 0;
        staged = inc->kept_staged ? inc->kept_staged[job] : 0;
    } else if (cache_record_via(&inc->prev, job, win, bytes) != 0 ||
               record_decode(bytes->ptr, bytes->len, inc->figs, &rec) != 0) {
        return false;
    }
    uint64_t after = 0;
    bool out_same = S_out_same(inc, e, &rec, outfd, published, staged, &after, repair);
    bool ok = rec.job == job && rec.done && S_deps(inc, job, &rec) == e->deps && out_same &&
              S_reads_digest(inc, &rec) == e->reads;
    if (ok && job >= inc->planned) {
        char *url = inc->job_url ? inc->job_url(inc->job_url_ctx, job) : NULL;
        ok = url && rec.url && !strcmp(url, rec.url);
        free(url);
    }
    if (!ok) {
        record_free(&rec);
        return false;
    }
    record_free(&inc->records[job]);
    inc->records[job] = rec;
    inc->from_cache[job] = true;
    inc->after[job] = after;
    return true;
}

/* Each kept page's copy that the publish will most likely take: the
 * staging folder's when the last build knew its stamp there (the mark, read
 * later, decides; a copy it lists is checked in the reuse), else the
 * published one. One stat a page, as the reuse would take it, but while the
 * content loads. */
static void *S_check_kept_main(void *arg)
{
    incr *inc = arg;
    int dirflags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
    int outfd = open(inc->out->out_abs, dirflags);
    if (outfd < 0)
        return NULL;
    int stagefd = inc->out->staging ? open(inc->out->staging, dirflags) : -1;
    for (size_t j = 0; j < inc->nkept && j < inc->prev.njobs; j++) {
        const cache_entry *e = &inc->prev.jobs[j];
        const page_record *r = &inc->kept[j];
        if (!e->present || !r->done || inc->kept_sums[j] != e->rec_sum)
            continue;
        if (stagefd >= 0 && e->stage_stamp && S_has_output(r))
            inc->kept_staged[j] = S_out_stamp(stagefd, r) == e->stage_stamp ? 1 : 2;
        else
            inc->kept_out[j] = S_out_stamp(outfd, r) == e->out_stamp ? 1 : 2;
    }
    if (stagefd >= 0)
        close(stagefd);
    close(outfd);
    return NULL;
}

void incr_check_kept_outputs(void *ctx)
{
    incr *inc = ctx;
    if (!inc->nkept || !inc->out || !inc->out->out_abs)
        return;
    inc->kept_out = xcalloc(inc->nkept + 1, 1);
    inc->kept_staged = xcalloc(inc->nkept + 1, 1);
    inc->checking = pthread_create(&inc->out_checker, NULL, S_check_kept_main, inc) == 0;
}

static void S_check_kept_join(incr *inc)
{
    if (inc->checking)
        pthread_join(inc->out_checker, NULL);
    inc->checking = false;
}

void incr_join_threads(incr *inc) { S_check_kept_join(inc); }

typedef struct {
    incr *inc;
    const size_t *jobs;
    size_t n;
    int outfd;
    bool *reused;
    buf repair; /* staging copies found changed (S_out_same), NUL-separated */
} S_reuse_span;

static void *S_reuse_main(void *arg)
{
    S_reuse_span *sp = arg;
    fs_window win = {BUF_INIT, 0};
    buf bytes = BUF_INIT;
    for (size_t k = 0; k < sp->n; k++)
        sp->reused[k] = S_reuse(sp->inc, sp->jobs[k], sp->outfd, &win, &bytes, &sp->repair);
    fs_window_free(&win);
    buf_free(&bytes);
    return NULL;
}

/* Below this many jobs a second thread costs more than it saves. */
#define S_REUSE_SPLIT 512

void incr_reuse_jobs(incr *inc, const size_t *jobs, size_t n, int outfd, int threads,
                     bool *reused)
{
    /* the jobs of one phase read only records of earlier phases, so their
     * checks are independent; each thread has its own window and buffer,
     * the figure store locks its appends, S_file_stamp its probes */
    S_check_kept_join(inc);
    if (inc->stage_fd < 0 && inc->out->incremental && inc->out->marked)
        inc->stage_fd = open(inc->out->staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    S_reuse_span spans[2] = {{inc, jobs, n, outfd, reused, BUF_INIT}, {0}};
    buf_init(&spans[1].repair);
    pthread_t second;
    bool split = threads > 1 && n >= S_REUSE_SPLIT;
    if (split) {
        size_t half = n / 2;
        spans[0].n = half;
        spans[1] = (S_reuse_span){inc, jobs + half, n - half, outfd, reused + half, BUF_INIT};
        split = pthread_create(&second, NULL, S_reuse_main, &spans[1]) == 0;
        if (!split)
            spans[0].n = n;
    }
    S_reuse_main(&spans[0]);
    if (split)
        pthread_join(second, NULL);
    for (int i = 0; i < 2; i++) {
        const char *p = spans[i].repair.ptr, *end = p + spans[i].repair.len;
        for (; p && p < end; p += strlen(p) + 1)
            output_staging_repair(inc->out, p);
        buf_free(&spans[i].repair);
    }
}

/* The jobs' output files (appended to list, NUL-separated) and each job's
 * stamp (STAMP_SEED for a job without a file): a full build's workers stat
 * what they write; an incremental build swapped in the staging folder, whose
 * copies of even the files it did not write are other inodes: those its
 * reuse checks stat'ed there (S_out_same) have that stamp, the rest are
 * stat'ed in dir (0, unknown, without one), by two threads when there are
 * many (stamp_files_at). Returns the sum of the stamps. */
static uint64_t S_job_outputs(incr *inc, int dir, buf *list, uint64_t *job_stamps)
{
    uint64_t sum = 0;
    char **rels = xmalloc((inc->njobs + 1) * sizeof *rels);
    size_t *of = xmalloc((inc->njobs + 1) * sizeof *of), n = 0;
    for (size_t j = 0; j < inc->njobs; j++) {
        const page_record *r = &inc->records[j];
        job_stamps[j] = STAMP_SEED;
        if (!r->done || !r->url || !r->url[0] || r->out_bytes == 0)
            continue;
        char *rel = output_rel(r->url);
        buf_put(list, rel, strlen(rel) + 1);
        uint64_t known = !inc->out->incremental ? r->out_stamp
                         : inc->from_cache[j]    ? inc->after[j]
                                                 : 0;
        if (known) {
            job_stamps[j] = known;
            sum += job_stamps[j];
            free(rel);
        } else if (dir < 0) {
            job_stamps[j] = 0;
            free(rel);
        } else {
            rels[n] = rel;
            of[n++] = j;
        }
    }
    uint64_t *stamps = xmalloc((n + 1) * sizeof *stamps);
    stamp_files_at(dir, rels, n, stamps);
    for (size_t i = 0; i < n; i++) {
        job_stamps[of[i]] = stamps[i];
        sum += stamps[i];
        free(rels[i]);
    }
    free(stamps);
    free(of);
    free(rels);
    return sum;
}

/* The output's files: the jobs' pages, then the other files; the stamp of
 * them all is S_list_stamp's. */
uint64_t incr_outputs(incr *inc, buf *list, uint64_t *job_stamps)
{
    int dir = open(inc->out->out_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    uint64_t sum = S_job_outputs(inc, dir, list, job_stamps);
    buf_put(list, buf_cstr(&inc->out->extras), inc->out->extras.len);
    const char *p = buf_cstr(&inc->out->extras), *end = p + inc->out->extras.len;
    for (; p < end; p += strlen(p) + 1)
        sum += dir < 0 ? 0 : stamp_file_at(STAMP_SEED, dir, p);
    if (dir < 0)
        return stamp_str(STAMP_SEED, "(no output)");
    close(dir);
    return sum;
}

/* What parsing a page's front matter depends on besides the file. */
static uint64_t S_front_key(incr *inc)
{
    uint64_t h = S_stamp_exe(stamp_str(STAMP_SEED, "kvsite front " KVSITE_VERSION));
    return S_stamp_site_files(h, inc);
}

bool incr_reuse_front(void *ctx, page *p)
{
    incr *inc = ctx;
    const cache_front *f = strmap_get(&inc->fronts, p->src);
    void *now = f ? strmap_get(&inc->stamps, p->src) : NULL;
    if (!now || (uint64_t)(uintptr_t)now != f->stamp)
        return false;
    /* the cache's entry says the file parsed without a diagnostic under
     * this front key; the kept page is that parse when it is of the same
     * file under the same key */
    incr_kept_front *k = inc->kept_fronts && inc->kept_front_key == inc->front_key
                             ? strmap_get(inc->kept_fronts, p->src)
                             : NULL;
    if (k && k->stamp == f->stamp && k->page->title) {
        fm_page_move(p, k->page);
        return true;
    }
    return content_page_decode(p, f->page, f->page_len) == 0;
}

/* The files with a diagnostic so far (their front matter is not cached). */
static void S_noisy_files(incr *inc, strmap *noisy)
{
    strmap_init(noisy);
    for (size_t i = 0; i < inc->dl->n; i++)
        if (inc->dl->v[i].file)
            strmap_put(noisy, inc->dl->v[i].file, (void *)1);
}

/* Every page's front matter for the next build, but for files with a
 * diagnostic (their warnings come from parsing them). Unchanged ones keep the
 * bytes the last build saved; the others are encoded while saving. */
static void S_save_fronts(incr *inc, cache *c, const strmap *noisy)
{
    c->front_key = inc->front_key;
    c->fronts = xcalloc(inc->idx->npages + 1, sizeof *c->fronts);
    for (size_t i = 0; i < inc->idx->npages; i++) {
        const page *p = inc->idx->pages[i];
        void *stamp = p->src ? strmap_get(&inc->stamps, p->src) : NULL;
        if (!stamp || strmap_get(noisy, p->src))
            continue;
        cache_front *f = &c->fronts[c->nfronts++];
        f->src = p->src;
        f->stamp = (uint64_t)(uintptr_t)stamp;
        f->ref = i;
        const cache_front *old = strmap_get(&inc->fronts, p->src);
        if (old && old->stamp == f->stamp) {
            f->page = old->page;
            f->page_len = old->page_len;
        }
    }
}

/* What a cache save encodes with: its own window on the figure store, and
 * where the records' checksums go. */
typedef struct {
    incr *inc;
    fs_window win;
    uint64_t *sums;
} save_ctx;

static void S_record_sum(void *ctx, size_t job, uint64_t sum)
{
    save_ctx *sc = ctx;
    sc->sums[job] = sum;
}

static void S_encode_record(void *ctx, size_t job, buf *out)
{
    save_ctx *sc = ctx;
    record_encode_via(&sc->inc->records[job], sc->inc->figs, &sc->win, out);
}

static void S_encode_front(void *ctx, const cache_front *f, buf *out)
{
    save_ctx *sc = ctx;
    content_page_encode(sc->inc->idx->pages[f->ref], out);
}

/* What a stat of a file said, as outrec_stamp_of keeps it, as a stat. */
static void S_stat_of(const outrec_stamp *o, struct stat *st)
{
    memset(st, 0, sizeof *st);
    st->st_size = (off_t)o->size;
    st->st_ino = (ino_t)o->ino;
    const int64_t ns[2] = {o->mtime_ns, o->ctime_ns};
    struct timespec *ts[2] = {&st->st_mtim, &st->st_ctim};
    for (int i = 0; i < 2; i++) {
        int64_t sec = ns[i] / 1000000000, rest = ns[i] % 1000000000;
        if (rest < 0) { /* before 1970: the nanoseconds of a timespec are never negative */
            rest += 1000000000;
            sec--;
        }
        ts[i]->tv_sec = (time_t)sec;
        ts[i]->tv_nsec = (long)rest;
    }
}

/* The stamp (cache.h's stage_stamp) of job j's file in the staging folder
 * once this build swapped the folders, when that is the old output's copy
 * with this build's bytes and the mark this build leaves does not list it:
 * an incremental build's reused page (the old output's file, as the last
 * build stamped it), or a full build's page whose writer found the old
 * output's bytes unchanged (that file as the writer stat'ed it). 0: not
 * known. */
static uint64_t S_stage_stamp(const incr *inc, size_t j, const page_record *r)
{
    if (!r->url || !r->url[0] || r->out_bytes == 0)
        return 0;
    if (inc->out->incremental)
        return inc->from_cache[j] && j < inc->prev.njobs ? inc->prev.jobs[j].out_stamp : 0;
    if (inc->from_cache[j] || r->out_changed || !outrec_stamp_known(&r->pub_at))
        return 0;
    struct stat st;
    S_stat_of(&r->pub_at, &st);
    char *rel = output_rel(r->url);
    uint64_t h = stamp_of_stat(STAMP_SEED, rel, &st);
    free(rel);
    return h;
}

static int S_save_cache(incr *inc, const char *path, uint64_t global, const buf *list,
                        const uint64_t *job_stamps, const strmap *noisy, bool finish)
{
    cache c;
    cache_init(&c);
    c.global = global;
    c.njobs = inc->njobs;
    c.jobs = xcalloc(inc->njobs + 1, sizeof *c.jobs);
    for (size_t j = 0; j < inc->njobs; j++) {
        const page_record *r = &inc->records[j];
        cache_entry *e = &c.jobs[j];
        if (!r->done)
            continue;
        e->present = true;
        e->out_stamp = job_stamps[j];
        e->stage_stamp = S_stage_stamp(inc, j, r);
        e->digest = inc->digests[j];
        const cache_entry *old = inc->from_cache[j] ? &inc->prev.jobs[j] : NULL;
        if (old) {
            /* checked equal when it was taken from the cache; the record is
             * encoded again from what was decoded (the same bytes): the old
             * cache's records were never held in memory */
            e->deps = old->deps;
            e->reads = old->reads;
            continue;
        }
        e->deps = S_deps(inc, j, r);
        e->reads = S_reads_digest(inc, r);
        if (e->reads == 0)
            e->deps = 0;
    }
    c.outputs = buf_cstr(list);
    c.outputs_len = list->len;
    S_save_fronts(inc, &c, noisy);
    save_ctx sc = {.inc = inc, .win = {BUF_INIT, 0},
                   .sums = xcalloc(inc->njobs + 1, sizeof *sc.sums)};
    cache_encoders enc = {.record = S_encode_record, .front = S_encode_front,
                          .record_sum = S_record_sum, .ctx = &sc};
    int rc = finish ? cache_save(&c, path, &enc) : cache_save_unfinished(&c, path, &enc);
    fs_window_free(&sc.win);
    free(inc->saved_sums);
    inc->saved_sums = sc.sums;
    if (rc != 0)
        fprintf(stderr, "kvsite: warning: cannot save the build cache %s: %s\n", path,
                strerror(errno));
    free(c.jobs);
    free(c.fronts);
    return rc;
}

/* The links of the pages taken from the cache were checked by the build that
 * made them. They still hold when no output file went away and every page
 * rendered again kept its URL and its ids. */
bool incr_old_links_hold(incr *inc)
{
    if (!inc->out->incremental)
        return false;
    const char *p = inc->prev.outputs, *end = p + inc->prev.outputs_len;
    for (; p && p < end; p += strlen(p) + 1)
        if (!strmap_get(&inc->out->outputs, p))
            return false;
    bool same = true;
    record_links_buf lb = {0}; /* a decoded record's ids are in the store */
    buf bytes = BUF_INIT;
    for (size_t j = 0; same && j < inc->njobs; j++) {
        if (inc->from_cache[j])
            continue;
        const cache_entry *e = j < inc->prev.njobs ? &inc->prev.jobs[j] : NULL;
        page_record old;
        if (!e || !e->present || cache_record(&inc->prev, j, &bytes) != 0 ||
            record_decode(bytes.ptr, bytes.len, NULL, &old) != 0) {
            same = false;
            break;
        }
        const page_record *r = &inc->records[j];
        char *const *ids;
        const md_link *links;
        same = !strcmp(old.url, r->url ? r->url : "") && old.nids == r->nids &&
               record_links(r, inc->figs, &lb, &ids, &links) == 0;
        for (size_t i = 0; same && i < r->nids; i++)
            same = !strcmp(old.ids[i], ids[i]);
        record_free(&old);
    }
    record_links_buf_free(&lb);
    buf_free(&bytes);
    return same;
}

/* ---------- the cache writer ---------- */

/* A full build writes its cache while the parent checks links and writes
 * the feed: everything the cache holds is known once the pages are rendered
 * (the workers stamped their files). The file reads as no cache until the
 * build succeeds and cache_finish() marks it. */
static void *S_writer_main(void *arg)
{
    incr_writer *w = arg;
    incr *inc = w->inc;
    if (!inc->global_known)
        inc->global = S_global_key(inc);
    w->rc = S_save_cache(inc, inc->cache_path, inc->global, &w->list, w->job_stamps, &w->noisy,
                         false);
    return NULL;
}

/* The output files that are not pages are those known so far (assets), the
 * feed and the sitemap added here. */
void incr_writer_start(incr_writer *w, incr *inc)
{
    memset(w, 0, sizeof *w);
    w->inc = inc;
    S_noisy_files(inc, &w->noisy);
    buf_init(&w->list);
    w->job_stamps = xcalloc(inc->njobs + 1, sizeof *w->job_stamps);
    S_job_outputs(inc, -1, &w->list, w->job_stamps);
    buf_put(&w->list, buf_cstr(&inc->out->extras), inc->out->extras.len);
    buf_put(&w->list, "feed.xml", sizeof "feed.xml");
    feed_sitemap_files(&w->list, inc->records, inc->njobs);
    w->started = pthread_create(&w->thread, NULL, S_writer_main, w) == 0;
}

void incr_writer_end(incr_writer *w, bool succeeded)
{
    if (w->started) {
        pthread_join(w->thread, NULL);
        if (succeeded && w->rc == 0 && cache_finish(w->inc->cache_path) != 0)
            fprintf(stderr, "kvsite: warning: cannot save the build cache %s: %s\n",
                    w->inc->cache_path, strerror(errno));
        else if (succeeded && w->rc == 0)
            w->inc->cache_saved = true;
    }
    strmap_free(&w->noisy);
    buf_free(&w->list);
    free(w->job_stamps);
}

void incr_save_cache(incr *inc, const buf *list, const uint64_t *job_stamps)
{
    if (!inc->global_known)
        inc->global = S_global_key(inc);
    strmap noisy;
    S_noisy_files(inc, &noisy);
    inc->cache_saved =
        S_save_cache(inc, inc->cache_path, inc->global, list, job_stamps, &noisy, true) == 0;
    strmap_free(&noisy);
}

/* ---------- reading the cache, deciding ---------- */

void incr_read_cache(incr *inc, bool load)
{
    if (!inc->cache_path)
        return;
    bool taken = load && inc->preloaded && cache_loaded_from(inc->preloaded, inc->cache_path);
    if (taken) {
        inc->prev = *inc->preloaded;
        cache_init(inc->preloaded);
    }
    if (taken || (load && cache_load(&inc->prev, inc->cache_path,
                                     inc->cfg->limits.output_bytes) == 0)) {
        inc->front_key = S_front_key(inc);
        if (inc->prev.front_key == inc->front_key)
            for (size_t i = 0; i < inc->prev.nfronts; i++)
                strmap_put(&inc->fronts, inc->prev.fronts[i].src, &inc->prev.fronts[i]);
    } else {
        inc->front_key = S_front_key(inc);
    }
}

void incr_bind(incr *inc, const content_index *idx, page_record *records, size_t njobs,
               figstore *figs, bool report_by_section)
{
    inc->idx = idx;
    inc->records = records;
    inc->njobs = njobs;
    inc->figs = figs;
    inc->report_by_section = report_by_section;
    inc->planned = njobs;
    inc->digests = xcalloc(njobs + 1, sizeof *inc->digests);
    inc->from_cache = xcalloc(njobs + 1, sizeof *inc->from_cache);
    inc->after = xcalloc(njobs + 1, sizeof *inc->after);
}

void incr_grow(incr *inc, page_record *records, size_t njobs)
{
    inc->digests = xrealloc(inc->digests, (njobs + 1) * sizeof *inc->digests);
    inc->from_cache = xrealloc(inc->from_cache, (njobs + 1) * sizeof *inc->from_cache);
    inc->after = xrealloc(inc->after, (njobs + 1) * sizeof *inc->after);
    for (size_t j = inc->njobs; j <= njobs; j++) {
        inc->digests[j] = 0;
        inc->from_cache[j] = false;
        inc->after[j] = 0;
    }
    inc->records = records;
    inc->njobs = njobs;
}

bool incr_possible(incr *inc, bool no_cache)
{
    if (!inc->cache_path || no_cache || inc->prev.njobs == 0)
        return false;
    /* without a cache to compare it with, the key is made when the new cache
     * is written, off the critical path */
    inc->global = S_global_key(inc);
    inc->global_known = true;
    /* the jobs planned alike (the global key has their count); the last
     * build's own added ones after them (incr_grow) */
    return inc->global != 0 && fs_is_dir(inc->out->out_abs) && inc->prev.global == inc->global &&
           inc->prev.njobs >= inc->njobs;
}
