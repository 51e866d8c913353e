#include "build.h"

#include "cache.h"

#include <cmark-gfm-core-extensions.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "content.h"
#include "diag.h"
#include "fsutil.h"
#include "pool.h"
#include "record.h"
#include "render.h"
#include "sources.h"
#include "stamp.h"
#include "strmap.h"
#include "url.h"

typedef struct {
    const build_opts *o;
    config cfg;
    content_index idx;
    sources src;
    diag_list dl;
    char *root_real;
    char *out_abs;     /* final output folder */
    char *staging;     /* NULL in check mode */
    page_record *records;
    size_t njobs;
    size_t *report_sections; /* the report's section pages; NULL: one report page */
    size_t nreport_sections;
    figstore *figs;    /* where decoded records keep their figures; NULL: in memory */
    buf rec_bytes;     /* a record read from prev (cache_record) */
    strmap files;      /* site paths of every file written or copied: "/assets/x.css" */
    strmap outputs;    /* the same as paths relative to the output folder */
    int lock_fd;
    size_t asset_bytes;
    size_t pages_built;
    /* incremental builds */
    strmap stamps;     /* "content/a.md" -> (void *)(stamp | 1), every input file */
    cache prev;        /* the last successful build's cache */
    uint64_t front_key;
    strmap fronts;     /* src -> prev.fronts entry, when prev.front_key matches */
    bool incremental;  /* render only what changed, into incr_dir, then move it in */
    char *incr_dir;
    uint64_t *digests; /* record_digest of each job's record, once it is known */
    unsigned char *job_phases; /* render_job_phases */
    bool *from_cache;  /* by job: its record was taken from prev */
    uint64_t *out_stamps; /* by job taken from prev: its output file's stamp */
    buf extra_outputs; /* output files that are not jobs' pages, NUL-separated */
    size_t rendered, reused;
} build_state;

static int S_emit(build_state *s, const char *rel, const char *data, size_t len);
static uint64_t S_outputs(build_state *s, buf *list, uint64_t *job_stamps);

static double S_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------- output location ---------- */

static char *S_absolute(const char *path)
{
    char real[PATH_MAX];
    if (realpath(path, real))
        return xstrdup(real);
    /* not there yet: resolve the parent */
    char *copy = xstrdup(path);
    size_t n = strlen(copy);
    while (n > 1 && copy[n - 1] == '/')
        copy[--n] = '\0';
    char *slash = strrchr(copy, '/');
    const char *base = slash ? slash + 1 : copy;
    const char *parent = slash ? (slash == copy ? "/" : copy) : ".";
    if (slash && slash != copy)
        *slash = '\0';
    char *res = NULL;
    if (realpath(parent, real) && strcmp(base, ".") && strcmp(base, ".."))
        res = xasprintf("%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
    free(copy);
    return res;
}

static bool S_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* What the staging folder holds before a full build: its regular files
 * (relative paths, NUL-separated), and whether anything in it is neither a
 * regular file nor a folder (a link planted there could lead writes out).
 * One walk serves both the safety check and the sweep after the build; it
 * runs in a thread of its own while the parent reads the content. */
typedef struct {
    const char *dir;
    buf files;
    buf empty_dirs; /* folders with nothing in them, the same way */
    bool links;
    pthread_t thread;
    bool started, done;
    atomic_bool stop; /* set by the parent when the scan is not needed */
} staging_scan;

static void *S_scan_staging(void *arg)
{
    staging_scan *sc = arg;
    size_t cap = 64, n = 0;
    char **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = xstrdup("");
    while (n > 0) {
        char *rel = stack[--n];
        char *path = rel[0] ? fs_join(sc->dir, rel) : xstrdup(sc->dir);
        DIR *d = sc->links || atomic_load_explicit(&sc->stop, memory_order_relaxed) ? NULL : opendir(path);
        if (d) {
            struct dirent *e;
            size_t entries = 0;
            while ((e = readdir(d)) && !sc->links) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                entries++;
                unsigned char type = e->d_type;
                if (type == DT_UNKNOWN) {
                    struct stat st;
                    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
                        continue;
                    type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
                }
                if (type == DT_DIR) {
                    if (n == cap)
                        stack = xrealloc(stack, (cap *= 2) * sizeof *stack);
                    stack[n++] = rel[0] ? fs_join(rel, e->d_name) : xstrdup(e->d_name);
                } else if (type == DT_REG) {
                    if (rel[0]) {
                        buf_puts(&sc->files, rel);
                        buf_putc(&sc->files, '/');
                    }
                    buf_put(&sc->files, e->d_name, strlen(e->d_name) + 1);
                } else {
                    sc->links = true;
                }
            }
            if (entries == 0 && rel[0])
                buf_put(&sc->empty_dirs, rel, strlen(rel) + 1);
            closedir(d);
        }
        free(path);
        free(rel);
    }
    while (n > 0)
        free(stack[--n]);
    free(stack);
    return NULL;
}

static void S_scan_start(staging_scan *sc, const char *dir)
{
    memset(sc, 0, sizeof *sc);
    sc->dir = dir;
    buf_init(&sc->files);
    buf_init(&sc->empty_dirs);
    sc->started = pthread_create(&sc->thread, NULL, S_scan_staging, sc) == 0;
}

/* The scan's result, made now if no thread is running it. */
static void S_scan_finish(staging_scan *sc, const char *dir)
{
    if (sc->done)
        return;
    if (sc->started)
        pthread_join(sc->thread, NULL);
    else {
        memset(sc, 0, sizeof *sc);
        sc->dir = dir;
        buf_init(&sc->files);
        buf_init(&sc->empty_dirs);
        S_scan_staging(sc);
    }
    sc->started = false;
    sc->done = true;
}

static int S_setup_output(build_state *s)
{
    const build_opts *o = s->o;
    char *want = o->out ? (o->out[0] == '/' ? xstrdup(o->out) : fs_join(o->root, o->out))
                        : fs_join(o->root, "site");
    struct stat lst;
    if (lstat(want, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        diag_error(&s->dl, NULL, 0, 0,
                   "output %s is a symbolic link: refused (it would replace the folder it "
                   "points to)", want);
        free(want);
        return -1;
    }
    s->out_abs = S_absolute(want);
    if (!s->out_abs) {
        diag_error(&s->dl, NULL, 0, 0, "output folder %s: its parent folder does not exist", want);
        free(want);
        return -1;
    }
    free(want);
    const char *protect[] = {"content", "templates", "checks"};
    bool bad = S_within(s->root_real, s->out_abs);
    for (size_t i = 0; i < 3 && !bad; i++) {
        char *d = fs_join(s->root_real, protect[i]);
        bad = S_within(s->out_abs, d);
        free(d);
    }
    if (bad) {
        diag_error(&s->dl, NULL, 0, 0,
                   "refusing to write the site to %s: it would replace the project or its sources",
                   s->out_abs);
        return -1;
    }
    struct stat st;
    if (lstat(s->out_abs, &st) == 0 && !S_ISDIR(st.st_mode)) {
        diag_error(&s->dl, NULL, 0, 0, "output %s exists and is not a folder", s->out_abs);
        return -1;
    }
    if (o->check_only)
        return 0;
    char *slash = strrchr(s->out_abs, '/');
    char *parent = slash == s->out_abs ? xstrdup("/") : xstrndup(s->out_abs, (size_t)(slash - s->out_abs));
    /* one build at a time per output folder */
    char *lock = xasprintf("%s/.%s.lock", parent, slash + 1);
    s->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        diag_error(&s->dl, NULL, 0, 0, "%s: %s", lock,
                   errno == EWOULDBLOCK ? "another kvsite build is writing this output"
                                        : strerror(errno));
        free(lock);
        free(parent);
        return -1;
    }
    free(lock);
    /* The staging folder is the output of the build before the last one: the
     * build rewrites only what changed in it and then swaps it with the
     * output. Reusing files keeps the file system from allocating thousands
     * of inodes per build. */
    s->staging = xasprintf("%s/.%s.prev", parent, slash + 1);
    free(parent);
    struct stat sst;
    if (lstat(s->staging, &sst) == 0 && !S_ISDIR(sst.st_mode))
        fs_remove_tree(s->staging);

    if (mkdir(s->staging, 0777) != 0 && errno != EEXIST) {
        diag_error(&s->dl, NULL, 0, 0, "cannot create the staging folder %s: %s", s->staging,
                   strerror(errno));
        free(s->staging);
        s->staging = NULL;
        return -1;
    }
    return 0;
}

/* Swaps the staging folder in: the old output is replaced in one rename and
 * becomes the staging folder of the next build. */
static int S_publish(build_state *s)
{
    struct stat st;
    if (lstat(s->out_abs, &st) != 0) {
        if (rename(s->staging, s->out_abs) != 0)
            goto fail;
        return 0;
    }
    if (renameat2(AT_FDCWD, s->staging, AT_FDCWD, s->out_abs, RENAME_EXCHANGE) != 0) {
        /* file systems without RENAME_EXCHANGE: two renames */
        char *old = xasprintf("%s.old-%ld", s->staging, (long)getpid());
        if (rename(s->out_abs, old) != 0) {
            free(old);
            goto fail;
        }
        if (rename(s->staging, s->out_abs) != 0) {
            rename(old, s->out_abs);
            free(old);
            goto fail;
        }
        rename(old, s->staging);
        free(old);
    }
    return 0;
fail:
    diag_error(&s->dl, NULL, 0, 0, "cannot publish %s: %s", s->out_abs, strerror(errno));
    return -1;
}

/* Removes the folders above path (in the staging folder) while they are empty. */
static void S_prune(build_state *s, char *path)
{
    for (char *slash = strrchr(path, '/'); slash && slash > path + strlen(s->staging);
         slash = strrchr(path, '/')) {
        *slash = '\0';
        if (rmdir(path) != 0)
            break;
    }
}

/* Removes from the staging folder every file this build did not produce, and
 * the folders left empty: nothing stale survives. The files are those the
 * scan found before the build (the build itself writes outputs only). */
static void S_sweep(build_state *s, const staging_scan *sc)
{
    const char *p = buf_cstr(&sc->files), *end = p + sc->files.len;
    for (; p < end; p += strlen(p) + 1) {
        if (strmap_get(&s->outputs, p))
            continue;
        char *path = fs_join(s->staging, p);
        unlink(path);
        S_prune(s, path);
        free(path);
    }
    p = buf_cstr(&sc->empty_dirs), end = p + sc->empty_dirs.len;
    for (; p < end; p += strlen(p) + 1) {
        char *path = fs_join(s->staging, p);
        if (rmdir(path) == 0)
            S_prune(s, path);
        free(path);
    }
}

/* ---------- assets ---------- */

/* "/a/b/" is the file a/b/index.html */
static char *S_out_rel(const char *url)
{
    size_t n = strlen(url);
    return n && url[n - 1] == '/' ? xasprintf("%sindex.html", url + 1) : xstrdup(url + 1);
}

static void S_note_file(build_state *s, const char *site_path)
{
    strmap_put(&s->files, site_path, (void *)1);
    char *rel = S_out_rel(site_path);
    strmap_put(&s->outputs, rel, (void *)1);
    free(rel);
}

/* An output file that is not a page (an asset, the feed, the sitemap). */
static void S_note_extra(build_state *s, const char *rel)
{
    buf_put(&s->extra_outputs, rel, strlen(rel) + 1);
    char *site = xasprintf("/%s", rel);
    S_note_file(s, site);
    free(site);
}

static int S_copy_one(build_state *s, const char *from, const char *to_rel, const char *shown)
{
    S_note_extra(s, to_rel);
    if (!s->staging && !s->incremental)
        return 0;
    buf b = BUF_INIT;
    int rc = fs_read_file(from, s->cfg.limits.output_bytes, &b);
    if (rc != FS_OK) {
        diag_error(&s->dl, shown, 0, 0, "cannot copy to %s: %s", to_rel,
                   fs_strerror(rc, s->cfg.limits.output_bytes));
        buf_free(&b);
        return -1;
    }
    s->asset_bytes += b.len;
    rc = S_emit(s, to_rel, buf_cstr(&b), b.len);
    buf_free(&b);
    return rc;
}

/* templates/assets -> assets/, without following symbolic links out. */
static void S_copy_template_assets(build_state *s)
{
    char *top = fs_join(s->o->root, "templates/assets");
    if (!fs_is_dir(top)) {
        free(top);
        return;
    }
    size_t cap = 16, n = 0;
    char **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = xstrdup("");
    size_t count = 0;
    while (n > 0) {
        char *rel = stack[--n];
        char *dirpath = rel[0] ? fs_join(top, rel) : xstrdup(top);
        DIR *d = opendir(dirpath);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                    continue;
                char *child = rel[0] ? xasprintf("%s/%s", rel, e->d_name) : xstrdup(e->d_name);
                char *path = fs_join(top, child);
                char *shown = xasprintf("templates/assets/%s", child);
                struct stat st;
                if (lstat(path, &st) != 0 || S_ISLNK(st.st_mode)) {
                    diag_error(&s->dl, shown, 0, 0, "symbolic links are not copied: refused");
                } else if (S_ISDIR(st.st_mode)) {
                    if (strchr(child, '/') && (size_t)s->cfg.limits.depth < 2 * n + 2) {
                        diag_error(&s->dl, shown, 0, 0, "folders nested too deep");
                    } else {
                        if (n == cap) {
                            cap *= 2;
                            stack = xrealloc(stack, cap * sizeof *stack);
                        }
                        stack[n++] = child;
                        child = NULL;
                    }
                } else if (S_ISREG(st.st_mode) && ++count <= s->cfg.limits.files) {
                    char *to = xasprintf("assets/%s", child);
                    S_copy_one(s, path, to, shown);
                    free(to);
                }
                free(child);
                free(path);
                free(shown);
            }
            closedir(d);
        }
        free(dirpath);
        free(rel);
    }
    free(stack);
    free(top);
}

static void S_copy_assets(build_state *s)
{
    for (size_t i = 0; i < s->idx.nassets; i++) {
        const asset *a = &s->idx.assets[i];
        char *from = fs_join(s->o->root, a->src);
        S_copy_one(s, from, a->out, a->src);
        free(from);
    }
    S_copy_template_assets(s);
}

/* ---------- feed and sitemap ---------- */

static void S_xml(buf *b, const char *s) { buf_put_xml(b, s ? s : "", s ? strlen(s) : 0); }

static void S_rfc3339(buf *b, const char *date)
{
    if (!date || strlen(date) < 10) {
        buf_puts(b, "1970-01-01T00:00:00Z");
        return;
    }
    if (strlen(date) == 10)
        buf_printf(b, "%sT00:00:00Z", date);
    else if (strlen(date) == 16)
        buf_printf(b, "%.10sT%s:00Z", date, date + 11);
    else {
        buf_put(b, date, 10);
        buf_putc(b, 'T');
        buf_puts(b, date + 11);
        if (!strchr(date + 11, 'Z') && !strchr(date + 11, '+') && !strchr(date + 13, '-'))
            buf_putc(b, 'Z');
    }
}

static int S_write_output(build_state *s, const char *rel, const buf *b)
{
    S_note_extra(s, rel);
    s->asset_bytes += b->len;
    return S_emit(s, rel, buf_cstr(b), b->len);
}

/* Makes the output file rel hold data: in a full build, in the staging
 * folder; in an incremental one, only when the published file differs. */
static int S_emit(build_state *s, const char *rel, const char *data, size_t len)
{
    if (!s->staging && !s->incremental)
        return 0;
    if (s->incremental) {
        char *published = fs_join(s->out_abs, rel);
        bool same = fs_same(published, data, len);
        free(published);
        if (same)
            return 0;
    }
    char *path = fs_join(s->incremental ? s->incr_dir : s->staging, rel);
    int rc = fs_sync_file(path, data, len);
    if (rc != 0)
        diag_error(&s->dl, NULL, 0, 0, "cannot write %s: %s", rel, strerror(errno));
    free(path);
    return rc;
}

static void S_feed(build_state *s)
{
    const config *c = &s->cfg;
    size_t n;
    size_t *order = content_by_date(&s->idx, &n);
    buf b = BUF_INIT;
    const char *newest = n ? s->idx.pages[order[0]]->date : NULL;
    buf_puts(&b, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    buf_printf(&b, "<feed xmlns=\"http://www.w3.org/2005/Atom\" xml:lang=\"");
    S_xml(&b, c->language);
    buf_puts(&b, "\">\n  <title>");
    S_xml(&b, c->title);
    buf_puts(&b, "</title>\n  <link href=\"");
    S_xml(&b, c->base_url);
    buf_puts(&b, "\"/>\n  <link rel=\"self\" href=\"");
    S_xml(&b, c->base_url);
    buf_puts(&b, "feed.xml\"/>\n  <id>");
    S_xml(&b, c->base_url);
    buf_puts(&b, "</id>\n  <updated>");
    S_rfc3339(&b, newest);
    buf_puts(&b, "</updated>\n");
    if (c->author[0]) {
        buf_puts(&b, "  <author><name>");
        S_xml(&b, c->author);
        buf_puts(&b, "</name></author>\n");
    }
    for (size_t k = 0; k < n && k < (size_t)c->feed_entries; k++) {
        const page *p = s->idx.pages[order[k]];
        const page_record *r = &s->records[order[k]];
        char *link = xasprintf("%s%s", c->base_url, p->url + 1);
        buf_puts(&b, "  <entry>\n    <title>");
        S_xml(&b, p->title);
        buf_puts(&b, "</title>\n    <link href=\"");
        S_xml(&b, link);
        buf_puts(&b, "\"/>\n    <id>");
        S_xml(&b, link);
        buf_puts(&b, "</id>\n    <updated>");
        S_rfc3339(&b, p->updated ? p->updated : p->date);
        buf_puts(&b, "</updated>\n");
        const char *summary = r->summary;
        if (summary && summary[0]) {
            buf_puts(&b, "    <summary>");
            S_xml(&b, summary);
            buf_puts(&b, "</summary>\n");
        }
        buf_puts(&b, "  </entry>\n");
        free(link);
    }
    buf_puts(&b, "</feed>\n");
    S_write_output(s, "feed.xml", &b);
    buf_free(&b);
    free(order);
}

static void S_sitemap(build_state *s)
{
    buf b = BUF_INIT;
    buf_puts(&b, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
                 "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    for (size_t j = 0; j < s->njobs; j++) {
        const page_record *r = &s->records[j];
        size_t un = r->url ? strlen(r->url) : 0;
        if (!r->done || un == 0 || r->url[un - 1] != '/' || r->out_bytes == 0)
            continue; /* not a page: 404.html, checks.json */
        buf_puts(&b, "  <url><loc>");
        S_xml(&b, s->cfg.base_url);
        S_xml(&b, r->url + 1);
        buf_puts(&b, "</loc>");
        if (j < s->idx.npages) {
            const page *p = s->idx.pages[j];
            const char *d = p->updated ? p->updated : p->date;
            if (d) {
                buf_puts(&b, "<lastmod>");
                buf_put(&b, d, 10);
                buf_puts(&b, "</lastmod>");
            }
        }
        buf_puts(&b, "</url>\n");
    }
    buf_puts(&b, "</urlset>\n");
    S_write_output(s, "sitemap.xml", &b);
    buf_free(&b);
}

/* ---------- link check ---------- */

/* only: NULL, or the jobs whose links to check (by job) */
static void S_check_links(build_state *s, const bool *only)
{
    strmap pages, reported, idsets;
    strmap_init(&pages);
    strmap_init(&reported);
    strmap_init(&idsets);
    for (size_t j = 0; j < s->njobs; j++) {
        const page_record *r = &s->records[j];
        if (r->done && r->url && r->url[0] && r->out_bytes > 0)
            strmap_put(&pages, r->url, (void *)r);
    }
    for (size_t j = 0; j < s->njobs; j++) {
        const page_record *r = &s->records[j];
        if (only && !only[j])
            continue;
        for (size_t k = 0; k < r->nlinks; k++) {
            const md_link *l = &r->links[k];
            const char *hash = strchr(l->target, '#');
            char *path = hash ? xstrndup(l->target, (size_t)(hash - l->target)) : xstrdup(l->target);
            const char *frag = hash ? hash + 1 : NULL;
            /* "/a/b/index.html" and "/a/b" name the page "/a/b/" */
            size_t n = strlen(path);
            if (n >= 10 && strcmp(path + n - 10, "index.html") == 0)
                path[n - 10] = '\0';
            const page_record *target = strmap_get(&pages, path);
            if (!target && path[0] && path[strlen(path) - 1] != '/') {
                char *slashed = xasprintf("%s/", path);
                target = strmap_get(&pages, slashed);
                free(slashed);
            }
            const char *file = l->file ? l->file : r->src && r->src[0] ? r->src : NULL;
            if (l->file) {
                /* a template's broken link is reported once, not once per page */
                char *key = xasprintf("%s\n%s", l->file, l->target);
                bool dup = strmap_get(&reported, key) != NULL;
                strmap_put(&reported, key, (void *)1);
                free(key);
                if (dup) {
                    free(path);
                    continue;
                }
            }
            /* a page that failed to render has its own error: links to it stand */
            bool failed_page = !target && strmap_get(&s->idx.by_url, path);
            if (!target && (failed_page || (r->out_bytes == 0 && !l->file))) {
                free(path);
                continue;
            }
            if (!target && !strmap_get(&s->files, path)) {
                diag_error(&s->dl, file, l->line, l->col,
                           "broken link to %s: no page or file there%s%s", l->target,
                           l->file ? "; in the output for " : "", l->file ? r->url : "");
            } else if (target && frag && frag[0]) {
                /* each target's ids as a set, made on first use */
                strmap *set = strmap_get(&idsets, target->url);
                if (!set) {
                    set = xmalloc(sizeof *set);
                    strmap_init(set);
                    for (size_t i = 0; i < target->nids; i++)
                        strmap_put(set, target->ids[i], (void *)1);
                    strmap_put(&idsets, target->url, set);
                }
                bool found = url_fragment_in(set, frag);
                if (!found)
                    diag_error(&s->dl, file, l->line, l->col,
                               "broken link to %s: %s has no heading or anchor with id \"%s\"",
                               l->target, target->url, frag);
            }
            free(path);
        }
    }
    strmap_free(&pages);
    strmap_free(&reported);
    for (size_t i = 0; i < idsets.cap; i++) {
        if (idsets.keys[i]) {
            strmap_free(idsets.vals[i]);
            free(idsets.vals[i]);
        }
    }
    strmap_free(&idsets);
}

/* ---------- the no-change fast path ---------- */

static void S_note_stamp(void *ctx, const char *path, uint64_t stamp)
{
    strmap_put(ctx, path, (void *)(uintptr_t)(stamp | 1));
}

/* What every build depends on: the binary, the flags and site.yaml. */
static uint64_t S_setup_stamp(const build_state *s)
{
    uint64_t h = stamp_str(STAMP_SEED, "kvsite " KVSITE_VERSION);
    char exe[PATH_MAX];
    if (realpath("/proc/self/exe", exe))
        h = stamp_file(h, exe);
    h = stamp_str(h, s->o->strict ? "strict" : "-");
    h = stamp_str(h, s->o->drafts ? "drafts" : "-");
    char *cfg = fs_join(s->o->root, "site.yaml");
    h = stamp_file(h, cfg);
    free(cfg);
    return h;
}

/* Everything a build reads: the binary, the flags, site.yaml, content/,
 * templates/ and checks/. Each file's own stamp goes to s->stamps. */
static uint64_t S_input_stamp(build_state *s)
{
    uint64_t h = S_setup_stamp(s);
    static const char *const dirs[] = {"content", "templates", "checks"};
    for (size_t i = 0; i < 3; i++)
        h = stamp_tree_each(h, s->o->root, dirs[i], s->cfg.limits.files * 2, NULL,
                            S_note_stamp, &s->stamps);
    return h;
}

/* A set of files' stamps, order aside: the sum of each file's stamp (which
 * covers its name). */
static uint64_t S_list_stamp(build_state *s, const char *list, size_t len)
{
    int dir = open(s->out_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dir < 0)
        return stamp_str(STAMP_SEED, "(no output)");
    uint64_t sum = 0;
    for (const char *p = list; p < list + len; p += strlen(p) + 1)
        sum += stamp_file_at(STAMP_SEED, dir, p);
    close(dir);
    return sum;
}

static char *S_stamp_path(build_state *s)
{
    char *slash = strrchr(s->out_abs, '/');
    return xasprintf("%.*s/.%s.stamp", (int)(slash - s->out_abs), s->out_abs, slash + 1);
}

/* The stamp file: "kvsite-stamp 1", the input and output stamps, the counts
 * line, then the diagnostics of that build (warnings), printed again. */
static bool S_up_to_date(build_state *s, const char *path, uint64_t in_stamp, double t0)
{
    buf text = BUF_INIT;
    if (fs_read_file(path, 16u << 20, &text) != FS_OK) {
        buf_free(&text);
        return false;
    }
    unsigned long long in = 0, out = 0, listlen = 0;
    int used = 0;
    char counts[256] = "";
    uint64_t now = 0;
    bool ok = sscanf(buf_cstr(&text), "kvsite-stamp 4\n%llx\n%llx\n%llu\n%n", &in, &out,
                     &listlen, &used) == 3 &&
              in == in_stamp && listlen <= text.len - (size_t)used;
    if (ok) {
        now = S_list_stamp(s, buf_cstr(&text) + used, (size_t)listlen);
        ok = out == now;
    }
    if (ok) {
        const char *rest = buf_cstr(&text) + used + listlen;
        const char *nl = strchr(rest, '\n');
        if (!nl || (size_t)(nl - rest) >= sizeof counts)
            ok = false;
        else {
            memcpy(counts, rest, (size_t)(nl - rest));
            counts[nl - rest] = '\0';
            fputs(nl + 1, stderr); /* the last build's warnings, as it printed them */
            fprintf(stderr, "kvsite: up to date: %s, 0 errors in %.2f s (nothing changed; "
                            "--no-cache rebuilds)\n", counts, S_now() - t0);
        }
    }
    buf_free(&text);
    return ok;
}

static void S_save_stamp(build_state *s, const char *path, uint64_t in_stamp, const char *counts,
                         const buf *list, uint64_t out_stamp)
{
    buf b = BUF_INIT;
    buf_printf(&b, "kvsite-stamp 4\n%016llx\n%016llx\n%zu\n", (unsigned long long)in_stamp,
               (unsigned long long)out_stamp, list->len);
    buf_put(&b, buf_cstr(list), list->len);
    buf_printf(&b, "%s\n", counts);
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    if (f) {
        diag_print(&s->dl, f, false);
        fclose(f);
        buf_put(&b, mem, len);
        free(mem);
    }
    fs_write_file(path, buf_cstr(&b), b.len);
    buf_free(&b);
}


/* ---------- incremental builds ---------- */

static uint64_t S_mix(uint64_t h, uint64_t v) { return stamp_bytes(h, &v, sizeof v); }

static char *S_side_path(build_state *s, const char *what)
{
    char *slash = strrchr(s->out_abs, '/');
    return xasprintf("%.*s/.%s.%s", (int)(slash - s->out_abs), s->out_abs, slash + 1, what);
}

/* A file's stamp as the build saw it at the start. A file the input stamp did
 * not see as a regular file is either missing (a state like any other) or
 * something that cannot be fingerprinted (*ok = false). */
static uint64_t S_file_stamp(build_state *s, const char *path, bool *ok)
{
    void *v = strmap_get(&s->stamps, path);
    if (v)
        return (uint64_t)(uintptr_t)v;
    char *full = fs_join(s->o->root, path);
    if (fs_exists(full))
        *ok = false;
    free(full);
    return stamp_str(stamp_str(STAMP_SEED, path), "(missing)");
}

static uint64_t S_str_key(uint64_t h, const char *s) { return stamp_str(h, s ? s : "\x01"); }

/* What every page may see: the binary, the flags, site.yaml, the sources and
 * the whole page index (front matter included, since listings sort and show
 * it). When it changes, every page is rendered again. */
static uint64_t S_global_key(build_state *s)
{
    uint64_t h = S_setup_stamp(s);
    /* every figure links to the report page that lists it */
    h = stamp_str(h, s->report_sections ? "report by section" : "one report");
    bool ok = true;
    h = S_mix(h, S_file_stamp(s, SOURCES_FILE, &ok));
    const content_index *x = &s->idx;
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
static uint64_t S_deps(build_state *s, size_t job, const page_record *r)
{
    bool ok = true;
    uint64_t h = STAMP_SEED;
    if (job < s->idx.npages && s->idx.pages[job]->src)
        h = S_mix(h, S_file_stamp(s, s->idx.pages[job]->src, &ok));
    for (const char *p = r->inputs; p && p < r->inputs + r->inputs_len; p += strlen(p) + 1)
        h = S_mix(h, S_file_stamp(s, p, &ok));
    return ok ? h | 1 : 0;
}


static uint64_t S_out_stamp(int outfd, const page_record *r)
{
    if (!r->url || !r->url[0] || r->out_bytes == 0 || outfd < 0)
        return STAMP_SEED;
    char *rel = S_out_rel(r->url);
    uint64_t h = stamp_file_at(STAMP_SEED, outfd, rel);
    free(rel);
    return h;
}

/* The digests of the records a job read, in order; 0 if one is unknown. */
static uint64_t S_reads_digest(build_state *s, const page_record *r)
{
    uint64_t h = STAMP_SEED;
    for (size_t i = 0; i < r->nreads; i++) {
        uint32_t k = r->reads[i];
        if (k >= s->njobs)
            return 0;
        h = S_mix(S_mix(h, k), s->digests[k]);
    }
    return h | 1;
}

/* Takes the job's record from the cache when nothing it depends on changed. */
static bool S_reuse(build_state *s, size_t job, int outfd)
{
    if (!s->incremental || job >= s->prev.njobs)
        return false;
    const cache_entry *e = &s->prev.jobs[job];
    if (!e->present || e->deps == 0)
        return false;
    page_record rec;
    if (cache_record(&s->prev, job, &s->rec_bytes) != 0 ||
        record_decode(s->rec_bytes.ptr, s->rec_bytes.len, s->figs, &rec) != 0)
        return false;
    bool ok = rec.job == job && rec.done && S_deps(s, job, &rec) == e->deps &&
              S_out_stamp(outfd, &rec) == e->out_stamp && S_reads_digest(s, &rec) == e->reads;
    s->out_stamps[job] = e->out_stamp;
    if (!ok) {
        record_free(&rec);
        return false;
    }
    record_free(&s->records[job]);
    s->records[job] = rec;
    s->from_cache[job] = true;
    return true;
}

/* The output's files (NUL-separated: the jobs' pages, then the other files)
 * and the stamp of them all (S_list_stamp's). A job taken from the cache was
 * not written: its file's stamp is the one checked when it was taken. Each
 * job's stamp goes to job_stamps (STAMP_SEED for a job without a file). */
/* The jobs' output files (appended to list, NUL-separated) and each job's
 * stamp (STAMP_SEED for a job without a file): a job taken from the cache was
 * not written, so its file's stamp is the one checked when it was taken; a
 * full build's workers stat what they write; the rest (files an incremental
 * build moved in: a rename changes their ctime) are stat'ed in dir, or are 0
 * (unknown) without one. Returns the sum of the stamps. */
static uint64_t S_job_outputs(build_state *s, int dir, buf *list, uint64_t *job_stamps)
{
    uint64_t sum = 0;
    for (size_t j = 0; j < s->njobs; j++) {
        const page_record *r = &s->records[j];
        job_stamps[j] = STAMP_SEED;
        if (!r->done || !r->url || !r->url[0] || r->out_bytes == 0)
            continue;
        char *rel = S_out_rel(r->url);
        buf_put(list, rel, strlen(rel) + 1);
        job_stamps[j] = s->from_cache[j]                  ? s->out_stamps[j]
                        : r->out_stamp && !s->incremental ? r->out_stamp
                        : dir < 0                         ? 0
                                                          : stamp_file_at(STAMP_SEED, dir, rel);
        sum += job_stamps[j];
        free(rel);
    }
    return sum;
}

static uint64_t S_outputs(build_state *s, buf *list, uint64_t *job_stamps)
{
    int dir = open(s->out_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    uint64_t sum = S_job_outputs(s, dir, list, job_stamps);
    buf_put(list, buf_cstr(&s->extra_outputs), s->extra_outputs.len);
    const char *p = buf_cstr(&s->extra_outputs), *end = p + s->extra_outputs.len;
    for (; p < end; p += strlen(p) + 1)
        sum += dir < 0 ? 0 : stamp_file_at(STAMP_SEED, dir, p);
    if (dir < 0)
        return stamp_str(STAMP_SEED, "(no output)");
    close(dir);
    return sum;
}

/* What parsing a page's front matter depends on besides the file. */
static uint64_t S_front_key(build_state *s)
{
    uint64_t h = stamp_str(STAMP_SEED, "kvsite front " KVSITE_VERSION);
    char exe[PATH_MAX];
    if (realpath("/proc/self/exe", exe))
        h = stamp_file(h, exe);
    char *cfg = fs_join(s->o->root, "site.yaml");
    h = stamp_file(h, cfg);
    free(cfg);
    return h;
}

/* content_opts.reuse: a page's front matter as the last build parsed it. */
static bool S_reuse_front(void *ctx, page *p)
{
    build_state *s = ctx;
    const cache_front *f = strmap_get(&s->fronts, p->src);
    void *now = f ? strmap_get(&s->stamps, p->src) : NULL;
    return now && (uint64_t)(uintptr_t)now == f->stamp &&
           content_page_decode(p, f->page, f->page_len) == 0;
}

/* Every page's front matter for the next build, but for files with a
 * diagnostic (their warnings come from parsing them). Unchanged ones keep the
 * bytes the last build saved; the others are encoded while saving. */
/* The files with a diagnostic so far (their front matter is not cached). */
static void S_noisy_files(build_state *s, strmap *noisy)
{
    strmap_init(noisy);
    for (size_t i = 0; i < s->dl.n; i++)
        if (s->dl.v[i].file)
            strmap_put(noisy, s->dl.v[i].file, (void *)1);
}

static void S_save_fronts(build_state *s, cache *c, const strmap *noisy)
{
    c->front_key = s->front_key;
    c->fronts = xcalloc(s->idx.npages + 1, sizeof *c->fronts);
    for (size_t i = 0; i < s->idx.npages; i++) {
        const page *p = s->idx.pages[i];
        void *stamp = p->src ? strmap_get(&s->stamps, p->src) : NULL;
        if (!stamp || strmap_get(noisy, p->src))
            continue;
        cache_front *f = &c->fronts[c->nfronts++];
        f->src = p->src;
        f->stamp = (uint64_t)(uintptr_t)stamp;
        f->ref = i;
        const cache_front *old = strmap_get(&s->fronts, p->src);
        if (old && old->stamp == f->stamp) {
            f->page = old->page;
            f->page_len = old->page_len;
        }
    }
}

/* What a cache save encodes with: its own window on the figure store. */
typedef struct {
    build_state *s;
    fs_window win;
} save_ctx;

static void S_encode_record(void *ctx, size_t job, buf *out)
{
    save_ctx *sc = ctx;
    record_encode_via(&sc->s->records[job], sc->s->figs, &sc->win, out);
}

static void S_encode_front(void *ctx, const cache_front *f, buf *out)
{
    save_ctx *sc = ctx;
    content_page_encode(sc->s->idx.pages[f->ref], out);
}

static int S_save_cache(build_state *s, const char *path, uint64_t global, const buf *list,
                        const uint64_t *job_stamps, const strmap *noisy, bool finish)
{
    cache c;
    cache_init(&c);
    c.global = global;
    c.njobs = s->njobs;
    c.jobs = xcalloc(s->njobs + 1, sizeof *c.jobs);
    for (size_t j = 0; j < s->njobs; j++) {
        const page_record *r = &s->records[j];
        cache_entry *e = &c.jobs[j];
        if (!r->done)
            continue;
        e->present = true;
        e->out_stamp = job_stamps[j];
        e->digest = s->digests[j];
        const cache_entry *old = s->from_cache[j] ? &s->prev.jobs[j] : NULL;
        if (old) {
            /* checked equal when it was taken from the cache; the record is
             * encoded again from what was decoded (the same bytes): the old
             * cache's records were never held in memory */
            e->deps = old->deps;
            e->reads = old->reads;
            continue;
        }
        e->deps = S_deps(s, j, r);
        e->reads = S_reads_digest(s, r);
        if (e->reads == 0)
            e->deps = 0;
    }
    c.outputs = buf_cstr(list);
    c.outputs_len = list->len;
    S_save_fronts(s, &c, noisy);
    save_ctx sc = {s, {BUF_INIT, 0}};
    cache_encoders enc = {S_encode_record, S_encode_front, &sc};
    int rc = finish ? cache_save(&c, path, &enc) : cache_save_unfinished(&c, path, &enc);
    fs_window_free(&sc.win);
    if (rc != 0)
        fprintf(stderr, "kvsite: warning: cannot save the build cache %s: %s\n", path,
                strerror(errno));
    free(c.jobs);
    free(c.fronts);
    return rc;
}

/* In an incremental build, the links of the pages taken from the cache were
 * checked by the build that made them. They still hold when no output file
 * went away and every page rendered again kept its URL and its ids: then
 * only the links of those pages need checking. */
static bool S_old_links_hold(build_state *s)
{
    if (!s->incremental)
        return false;
    const char *p = s->prev.outputs, *end = p + s->prev.outputs_len;
    for (; p && p < end; p += strlen(p) + 1)
        if (!strmap_get(&s->outputs, p))
            return false;
    for (size_t j = 0; j < s->njobs; j++) {
        if (s->from_cache[j])
            continue;
        const cache_entry *e = j < s->prev.njobs ? &s->prev.jobs[j] : NULL;
        page_record old;
        if (!e || !e->present || cache_record(&s->prev, j, &s->rec_bytes) != 0 ||
            record_decode(s->rec_bytes.ptr, s->rec_bytes.len, NULL, &old) != 0)
            return false;
        const page_record *r = &s->records[j];
        bool same = !strcmp(old.url, r->url ? r->url : "") && old.nids == r->nids;
        for (size_t i = 0; same && i < r->nids; i++)
            same = !strcmp(old.ids[i], r->ids[i]);
        record_free(&old);
        if (!same)
            return false;
    }
    return true;
}

/* A full build writes its cache while the parent checks links and writes
 * the feed: everything the cache holds is known once the pages are rendered
 * (the workers stamped their files). The file reads as no cache until the
 * build succeeds and cache_finish() marks it. */
typedef struct {
    build_state *s;
    const char *path;
    uint64_t global;
    bool global_known; /* else the writer makes it */
    strmap noisy;
    buf list;
    uint64_t *job_stamps;
    pthread_t thread;
    bool started;
    int rc;
} cache_writer;

static void *S_cache_writer_main(void *arg)
{
    cache_writer *w = arg;
    if (!w->global_known)
        w->global = S_global_key(w->s);
    w->rc = S_save_cache(w->s, w->path, w->global, &w->list, w->job_stamps, &w->noisy, false);
    return NULL;
}

/* Starts the writer; extras: the output files that are not pages, as far as
 * they are known (assets), the feed and sitemap added here. */
static void S_cache_writer_start(cache_writer *w, build_state *s, const char *path, uint64_t global,
                                 bool global_known)
{
    memset(w, 0, sizeof *w);
    w->s = s;
    w->path = path;
    w->global = global;
    w->global_known = global_known;
    S_noisy_files(s, &w->noisy);
    buf_init(&w->list);
    w->job_stamps = xcalloc(s->njobs + 1, sizeof *w->job_stamps);
    S_job_outputs(s, -1, &w->list, w->job_stamps);
    buf_put(&w->list, buf_cstr(&s->extra_outputs), s->extra_outputs.len);
    static const char fixed[] = "feed.xml\0sitemap.xml";
    buf_put(&w->list, fixed, sizeof fixed);
    w->started = pthread_create(&w->thread, NULL, S_cache_writer_main, w) == 0;
}

/* Waits for the writer; the cache counts only when the build succeeded. */
static void S_cache_writer_end(cache_writer *w, bool succeeded)
{
    if (w->started) {
        pthread_join(w->thread, NULL);
        if (succeeded && w->rc == 0 && cache_finish(w->path) != 0)
            fprintf(stderr, "kvsite: warning: cannot save the build cache %s: %s\n", w->path,
                    strerror(errno));
    }
    strmap_free(&w->noisy);
    buf_free(&w->list);
    free(w->job_stamps);
}

/* Moves what an incremental build wrote into the output, and removes the
 * files the last build wrote that this one did not. */
static int S_publish_incremental(build_state *s)
{
    size_t moved = 0;
    if (fs_move_into(s->incr_dir, s->out_abs, &moved) != 0) {
        diag_error(&s->dl, NULL, 0, 0, "cannot publish %s: %s", s->out_abs, strerror(errno));
        return -1;
    }
    const char *p = s->prev.outputs, *end = p + s->prev.outputs_len;
    for (; p && p < end; p += strlen(p) + 1)
        if (!strmap_get(&s->outputs, p))
            fs_remove_in(s->out_abs, p);
    return 0;
}

/* ---------- the build ---------- */

static build_state *volatile S_kept; /* see build_opts.exiting; volatile: a store never read must stay */

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

static int S_phase(build_state *s, const render_env *env, const pool_opts *po, int phase,
                   int outfd)
{
    size_t *jobs = xmalloc((s->njobs + 1) * sizeof *jobs), n = 0;
    for (size_t j = 0; j < s->njobs; j++) {
        if (env->job_phases[j] != phase)
            continue;
        if (S_reuse(s, j, outfd))
            s->reused++;
        else
            jobs[n++] = j;
    }
    s->rendered += n;
    if (s->incremental && getenv("KVSITE_TRACE"))
        for (size_t k = 0; k < n; k++)
            fprintf(stderr, "kvsite: trace: rendering %s\n", render_job_file(env, jobs[k]));
    int rc = pool_run(env, po, jobs, n, s->records);
    for (size_t j = 0; j < s->njobs; j++)
        if (env->job_phases[j] == phase)
            s->digests[j] = record_digest(&s->records[j]);
    free(jobs);
    return rc;
}

static int S_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

int build_run(const build_opts *o)
{
    double t0 = S_now();
    build_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    diag_list_init(&s.dl);
    strmap_init(&s.files);
    strmap_init(&s.outputs);
    strmap_init(&s.stamps);
    strmap_init(&s.fronts);
    buf_init(&s.extra_outputs);
    buf_init(&s.rec_bytes);
    cache_init(&s.prev);
    s.lock_fd = -1;
    config_defaults(&s.cfg);
    bool github = getenv("GITHUB_ACTIONS") && strcmp(getenv("GITHUB_ACTIONS"), "true") == 0;
    int status = 0;

    char real[PATH_MAX];
    if (!realpath(o->root, real) || !fs_is_dir(real)) {
        fprintf(stderr, "kvsite: error: project folder %s: %s\n", o->root,
                strerror(errno ? errno : ENOTDIR));
        config_free(&s.cfg);
        return 2;
    }
    s.root_real = xstrdup(real);
    if (config_load(&s.cfg, o->root, &s.dl) != 0 || S_setup_output(&s) != 0) {
        diag_sort(&s.dl);
        diag_print(&s.dl, stderr, github);
        fprintf(stderr, "kvsite: configuration error: nothing was built\n");
        status = 2;
        goto out;
    }
    bool trace = getenv("KVSITE_TRACE") != NULL;
#define TRACE(what) do { if (trace) fprintf(stderr, "kvsite: trace: %s at %.3f s (%ld MiB)\n", what, S_now() - t0, S_rss_mib()); } while (0)
    TRACE("configured");
    /* a full build needs the staging folder scanned: done beside the input
     * stamp and the content */
    staging_scan scan;
    memset(&scan, 0, sizeof scan);
    char *cache_path = NULL;
    if (s.staging) {
        cache_path = S_side_path(&s, "cache");
        if (o->no_cache || !fs_exists(cache_path))
            S_scan_start(&scan, s.staging);
    }
    uint64_t in_stamp = 0;
    char *stamp_path = NULL;
    if (!o->check_only) {
        in_stamp = S_input_stamp(&s);
        stamp_path = S_stamp_path(&s);
        if (!o->no_cache && S_up_to_date(&s, stamp_path, in_stamp, t0)) {
            free(stamp_path);
            free(cache_path);
            if (scan.started) {
                atomic_store(&scan.stop, true); /* nothing to build: no need for it */
                pthread_join(scan.thread, NULL);
            }
            buf_free(&scan.files);
            buf_free(&scan.empty_dirs);
            goto out;
        }
    }
    TRACE("input stamp");
    if (cache_path && !o->no_cache && cache_load(&s.prev, cache_path, s.cfg.limits.output_bytes) == 0) {
        s.front_key = S_front_key(&s);
        if (s.prev.front_key == s.front_key)
            for (size_t i = 0; i < s.prev.nfronts; i++)
                strmap_put(&s.fronts, s.prev.fronts[i].src, &s.prev.fronts[i]);
    } else if (cache_path) {
        s.front_key = S_front_key(&s);
    }
    TRACE("cache read");
    cmark_gfm_core_extensions_ensure_registered();
    /* parse threads as the build's jobs */
    content_opts copts = {o->drafts, o->jobs, S_reuse_front, &s};
    content_load(&s.idx, o->root, &s.cfg, &copts, &s.dl);
    TRACE("content loaded");
    sources_load(&s.src, o->root, s.cfg.limits.data_bytes, &s.dl);
    TRACE("sources loaded");

    render_env env = {o->root, s.staging, &s.cfg, &s.idx, &s.src, o->strict, NULL, 0, NULL,
                      NULL, 0, NULL, NULL};
    char *split = fs_join(o->root, "templates/" RENDER_REPORT_SECTION_TEMPLATE);
    if (fs_exists(split)) {
        s.report_sections = render_report_sections(&s.idx, &s.nreport_sections);
        env.report_sections = s.report_sections;
        env.nreport_sections = s.nreport_sections;
    }
    free(split);
    if (!o->check_only) {
        /* beside the output, where the cache goes */
        s.figs = xcalloc(1, sizeof *s.figs);
        char *side = S_side_path(&s, "figs");
        *strrchr(side, '/') = '\0';
        if (figstore_open(s.figs, side) != 0) {
            free(s.figs); /* not fatal: the figures stay in memory */
            s.figs = NULL;
        }
        free(side);
        env.figs = s.figs;
    }
    s.njobs = render_job_count(&env);
    s.records = xcalloc(s.njobs, sizeof *s.records);
    s.digests = xcalloc(s.njobs + 1, sizeof *s.digests);
    s.from_cache = xcalloc(s.njobs + 1, sizeof *s.from_cache);
    s.out_stamps = xcalloc(s.njobs + 1, sizeof *s.out_stamps);
    for (size_t j = 0; j < s.njobs; j++)
        record_init(&s.records[j]);
    env.records = s.records;
    env.nrecords = s.njobs;
    s.job_phases = render_job_phases(&env);
    env.job_phases = s.job_phases;

    /* the last build's cache, when it was made from the same site */
    uint64_t global = 0;
    bool global_known = false; /* without a cache to compare it with, it is made
                                * when the new cache is written, off the critical path */
    if (!o->check_only && !o->no_cache && s.prev.njobs > 0) {
        global = S_global_key(&s);
        global_known = true;
        s.incremental = global != 0 && fs_is_dir(s.out_abs) && s.prev.global == global &&
                        s.prev.njobs == s.njobs;
    }
    TRACE(s.incremental ? "incremental" : "full build");
    if (s.incremental) {
        /* changed files go to a folder of their own, moved in when the build succeeds */
        s.incr_dir = S_side_path(&s, "incr");
        fs_remove_tree(s.incr_dir);
        if (mkdir(s.incr_dir, 0777) != 0) {
            diag_error(&s.dl, NULL, 0, 0, "cannot create %s: %s", s.incr_dir, strerror(errno));
            s.incremental = false;
        }
        env.out_dir = s.incr_dir;
        env.same_dir = s.out_abs;
    } else if (s.staging) {
        S_scan_finish(&scan, s.staging);
        TRACE("staging scanned");
        if (scan.links) {
            /* links planted in the staging folder could lead writes out of it */
            fs_remove_tree(s.staging);
            mkdir(s.staging, 0777);
            buf_clear(&scan.files);
            buf_clear(&scan.empty_dirs);
        }
    }
    int jobs = o->jobs > 0 ? o->jobs : s.cfg.jobs > 0 ? s.cfg.jobs : S_cores();
    pool_opts po = {jobs, s.cfg.limits.page_timeout, s.cfg.limits.worker_memory};
    int outfd = s.incremental ? open(s.out_abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    for (int phase = 1; phase <= 4; phase++) {
        double tp = S_now();
        if (s.figs && figstore_flush(s.figs) != 0)
            diag_error(&s.dl, NULL, 0, 0, "cannot write the figure store: %s", strerror(errno));
        S_phase(&s, &env, &po, phase, outfd);
        if (trace)
            fprintf(stderr, "kvsite: trace: phase %d: %.3f s (%ld MiB)\n", phase, S_now() - tp,
                    S_rss_mib());
    }
    if (outfd >= 0)
        close(outfd);
    if (trace)
        fprintf(stderr, "kvsite: trace: loaded and rendered at %.3f s\n", S_now() - t0);

    S_copy_assets(&s);
    uint64_t out_bytes = s.asset_bytes;
    for (size_t j = 0; j < s.njobs; j++) {
        page_record *r = &s.records[j];
        out_bytes += r->out_bytes;
        if (r->url && r->url[0] && r->out_bytes > 0) {
            S_note_file(&s, r->url);
            if (j < s.idx.npages)
                s.pages_built++;
        }
        /* copied, not moved: the record keeps its warnings for the cache,
         * so a page taken from it warns again */
        for (size_t k = 0; k < r->diags.n; k++) {
            const diag *d = &r->diags.v[k];
            diag_add(&s.dl, d->level, d->file, d->line, d->col, "%s", d->msg);
        }
    }
    TRACE("assets copied, records merged");
    cache_writer writer;
    memset(&writer, 0, sizeof writer);
    bool writer_used = !s.incremental && stamp_path && s.dl.errors == 0;
    if (s.figs)
        figstore_flush(s.figs); /* a cache writer's thread reads them with pread */
    if (writer_used)
        S_cache_writer_start(&writer, &s, cache_path, global, global_known);
    S_feed(&s);
    S_sitemap(&s);
    TRACE("feed, sitemap");
    if (S_old_links_hold(&s)) {
        bool *fresh = xcalloc(s.njobs + 1, sizeof *fresh);
        for (size_t j = 0; j < s.njobs; j++)
            fresh[j] = !s.from_cache[j];
        S_check_links(&s, fresh);
        free(fresh);
    } else {
        S_check_links(&s, NULL);
    }
    TRACE("links checked");
    if (out_bytes > s.cfg.limits.output_bytes)
        diag_error(&s.dl, NULL, 0, 0,
                   "the site is larger than limits.output_bytes (%llu > %zu bytes)",
                   (unsigned long long)out_bytes, s.cfg.limits.output_bytes);
    if (o->strict)
        diag_promote_warnings(&s.dl);
    size_t tiers[3] = {0, 0, 0};
    for (size_t j = 0; j < s.njobs; j++) {
        uint32_t counts[4];
        record_fig_counts(&s.records[j], counts);
        for (int t = 0; t < 3; t++)
            tiers[t] += counts[t];
    }
    diag_sort(&s.dl);
    diag_print(&s.dl, stderr, github);
    if (stamp_path)
        unlink(stamp_path); /* the output is about to change */
    if (s.dl.errors == 0 && s.incremental) {
        if (S_publish_incremental(&s) != 0)
            diag_print(&s.dl, stderr, github);
    } else if (s.dl.errors == 0 && s.staging) {
        S_sweep(&s, &scan);
        TRACE("swept");
        if (S_publish(&s) != 0)
            diag_print(&s.dl, stderr, github);
    }
    if (s.incr_dir)
        fs_remove_tree(s.incr_dir);
    TRACE("published");
    if (scan.started)
        pthread_join(scan.thread, NULL);
    buf_free(&scan.files);
    buf_free(&scan.empty_dirs);
    status = s.dl.errors ? 1 : 0;
    char counts[256];
    snprintf(counts, sizeof counts,
             "%zu pages, %zu figures (%zu computed, %zu measured, %zu cited), %zu warning%s",
             s.pages_built, tiers[0] + tiers[1] + tiers[2], tiers[FIG_COMPUTED],
             tiers[FIG_MEASURED], tiers[FIG_CITED], s.dl.warnings, s.dl.warnings == 1 ? "" : "s");
    char how[96] = "";
    if (s.incremental && status == 0)
        snprintf(how, sizeof how, " (%zu rendered, %zu unchanged since the last build)",
                 s.rendered, s.reused);
    fprintf(stderr, "kvsite: %s %s, %zu error%s in %.2f s%s%s\n",
            o->check_only ? "checked" : status ? "failed to build" : "built", counts,
            s.dl.errors, s.dl.errors == 1 ? "" : "s", S_now() - t0, how,
            status && !o->check_only ? "; the previous output is unchanged" : "");
    if (writer_used)
        S_cache_writer_end(&writer, status == 0);
    if (status == 0 && stamp_path) {
        buf list = BUF_INIT;
        uint64_t *stamps = xmalloc((s.njobs + 1) * sizeof *stamps);
        uint64_t out_stamp = S_outputs(&s, &list, stamps);
        TRACE("output stamped");
        if (!writer_used) {
            if (!global_known)
                global = S_global_key(&s);
            strmap noisy;
            S_noisy_files(&s, &noisy);
            S_save_cache(&s, cache_path, global, &list, stamps, &noisy, true);
            strmap_free(&noisy);
        }
        TRACE("cache saved");
        S_save_stamp(&s, stamp_path, in_stamp, counts, &list, out_stamp);
        free(stamps);
        buf_free(&list);
    }
    TRACE("saved");
    if (trace) {
        struct rusage self, kids;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &kids);
        fprintf(stderr, "kvsite: trace: peak RSS: parent %ld KiB, largest worker %ld KiB\n",
                self.ru_maxrss, kids.ru_maxrss);
    }
    free(stamp_path);
    free(cache_path);
out:
    if (s.lock_fd > 0)
        close(s.lock_fd);
    if (o->exiting) {
        /* The process ends next: freeing a big site piece by piece would
         * take longer than the rest of an incremental build. The state
         * stays reachable from here, so leak checkers see no leak (git's
         * UNLEAK does the same). */
        S_kept = xmalloc(sizeof s);
        *S_kept = s;
        return status;
    }
    for (size_t j = 0; j < s.njobs; j++)
        record_free(&s.records[j]);
    free(s.records);
    free(s.report_sections);
    if (s.figs)
        figstore_close(s.figs);
    free(s.figs);
    content_index_free(&s.idx);
    sources_free(&s.src);
    config_free(&s.cfg);
    strmap_free(&s.files);
    strmap_free(&s.outputs);
    strmap_free(&s.stamps);
    strmap_free(&s.fronts);
    cache_free(&s.prev);
    free(s.digests);
    free(s.job_phases);
    free(s.from_cache);
    free(s.out_stamps);
    buf_free(&s.extra_outputs);
    buf_free(&s.rec_bytes);
    free(s.incr_dir);
    diag_list_free(&s.dl);
    free(s.root_real);
    free(s.out_abs);
    free(s.staging);
    return status;
}
