#include "content.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "collide.h"
#include "figure.h"
#include "frontmatter.h"
#include "fsutil.h"
#include "utf8.h"

/* ---------- small helpers ---------- */

bool content_safe_segment(const char *s)
{
    if (!s[0] || s[0] == '.' || strlen(s) > 200)
        return false;
    if (!utf8_valid(s, strlen(s), NULL))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p >= 0x80)
            continue;
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
            return false;
    }
    return true;
}

char *content_slugify(const char *text)
{
    buf b = BUF_INIT;
    bool dash = false;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        unsigned char c = *p;
        if (c >= 0x80) {
            /* keep non-ASCII as is, but map the ideographic space and the
             * full-width punctuation that separates words to '-' */
            size_t n = utf8_char_len(p);
            for (size_t k = 1; k < n; k++)
                if (!p[k]) { /* a truncated sequence at the end: stop */
                    n = 0;
                    break;
                }
            if (!n)
                break;
            uint32_t cp = utf8_decode(p, n);
            if (cp == 0x3000 || cp == 0xFF0C || cp == 0x3001 || cp == 0x3002 ||
                cp == 0xFF1A || cp == 0xFF08 || cp == 0xFF09 || cp == 0xFF1F ||
                cp == 0xFF01 || cp == 0x300A || cp == 0x300B || cp == 0x201C ||
                cp == 0x201D || cp == 0xFF1B || cp == 0x00D7 || cp == 0x2248) {
                dash = b.len > 0;
            } else {
                if (dash)
                    buf_putc(&b, '-');
                dash = false;
                buf_put(&b, p, n);
            }
            p += n - 1;
        } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-') {
            if (dash)
                buf_putc(&b, '-');
            dash = false;
            buf_putc(&b, c);
        } else if (c >= 'A' && c <= 'Z') {
            if (dash)
                buf_putc(&b, '-');
            dash = false;
            buf_putc(&b, c - 'A' + 'a');
        } else if (c == ' ' || c == '\t' || c == '.' || c == '/' || c == ':') {
            dash = b.len > 0;
        }
        /* other ASCII punctuation is dropped */
    }
    return buf_detach(&b);
}

/* ---------- the walk ---------- */

/* content_load walks the tree first (serial, cheap: readdir, a stat for
 * folders and links), then reads and parses the Markdown files on several
 * threads, then adds the pages in walk order. Every file has its own slot and
 * its own diag_list, so the index and the diagnostics do not depend on which
 * thread parsed what, or when. */

typedef struct {
    char *rel; /* folder relative to content/, "" for the root */
    int depth;
} dir_item;

typedef struct {
    char *name;
    unsigned char type; /* d_type from readdir; DT_UNKNOWN means stat it */
} dir_entry;

/* One Markdown file found by the walk; the parse fills page, keep and dl.
 * A parse thread frees nothing that the walk allocated: glibc would cache
 * those blocks in the thread and later lock the main arena to reuse them. */
typedef struct {
    char *rel;        /* handed to the page */
    char *src;        /* likewise; the file is rel beneath content/ */
    page *page;       /* the parsed page; NULL when the file could not be read */
    bool keep;        /* parsed without errors and not a skipped draft */
    diag_list before; /* the walk's diagnostics since the previous file */
    diag_list dl;     /* this file's */
} md_file;

typedef struct {
    content_index *idx;
    const config *cfg;
    const content_opts *opts;
    diag_list *dl; /* the walk's diagnostics not yet given to a file */
    int dir; /* content/, opened beneath the root without following links */
    size_t files;
    size_t page_cap, asset_cap;
    md_file *md;
    size_t nmd, md_cap;
} walker;

/* Shared by the parse threads: read-only but for next. */
typedef struct {
    const config *cfg;
    const content_opts *opts;
    int dir; /* content/ */
    md_file *md;
    size_t nmd;
    atomic_size_t next; /* the first slot no thread has taken */
} parse_job;

/* Slots a thread takes at once: few enough to share the tail of the work. */
#define PARSE_CHUNK 8
/* Parsing a page costs tens of microseconds and starting a thread about as
 * much as a few pages, so small sites stay on one thread. */
#define FILES_PER_THREAD 32
#define MAX_THREADS 64
/* The parse needs little stack: no recursion on input (yv, libyaml). */
#define THREAD_STACK ((size_t)1 << 20)
/* What a thread leaves in the address space after it is joined: glibc keeps
 * its malloc arena (a 64 MiB reservation) and caches its stack. The workers
 * forked later inherit that, and limits.worker_memory caps their address
 * space, so the extra threads may take at most an eighth of it. */
#define THREAD_RESERVE (((size_t)64 << 20) + THREAD_STACK)

static void S_add_page(walker *w, page *p)
{
    content_index *idx = w->idx;
    if (idx->npages == w->page_cap) {
        w->page_cap = w->page_cap ? w->page_cap * 2 : 64;
        idx->pages = xrealloc(idx->pages, w->page_cap * sizeof *idx->pages);
    }
    idx->pages[idx->npages++] = p;
}

static void S_page_free(page *p)
{
    if (!p)
        return;
    free(p->src);
    free(p->rel);
    free(p->section);
    free(p->url);
    free(p->out);
    fm_page_clear(p);
    free(p);
}

/* Reads and parses one file. Runs on any parse thread: it touches only its
 * slot, the read-only config and thread-safe libc calls. */
static void S_parse_file(const parse_job *j, md_file *f)
{
    page *p = xcalloc(1, sizeof *p);
    f->page = p;
    p->src = f->src;
    p->rel = f->rel;
    f->src = f->rel = NULL;
    const char *rel = p->rel;
    const char *slash = strrchr(rel, '/');
    p->section = slash ? xstrndup(rel, (size_t)(slash - rel)) : xstrdup("");
    const char *base = slash ? slash + 1 : rel;
    p->kind = strcmp(base, "_index.md") == 0 ? (p->section[0] ? PAGE_SECTION : PAGE_HOME)
                                            : PAGE_REGULAR;
    if (j->opts->reuse && j->opts->reuse(j->opts->reuse_ctx, p)) {
        /* unchanged since the last build: parsed then (called from the
         * parse threads: the callback only reads shared state) */
        f->keep = !p->draft || j->opts->drafts;
        return;
    }
    buf text = BUF_INIT;
    int rc = fs_read_beneath(j->dir, rel, j->cfg->limits.page_bytes, &text);
    if (rc != FS_OK) {
        if (rc == FS_ETOOBIG) {
            diag_error(&f->dl, p->src, 0, 0,
                       "page too large (limit %zu bytes: limits.page_bytes in site.yaml)",
                       j->cfg->limits.page_bytes);
        } else {
            /* strerror() may share a buffer between threads; the GNU
             * strerror_r gives the same text without one */
            char eb[128];
            const char *why = rc == FS_EOTHER ? strerror_r(errno, eb, sizeof eb)
                                              : fs_strerror(rc, 0);
            diag_error(&f->dl, p->src, 0, 0, "cannot read: %s", why);
        }
        buf_free(&text);
        return;
    }
    /* the YAML reader refuses NUL bytes and invalid UTF-8 in the front
     * matter; the body is checked where it is rendered (md_render) */
    f->keep = fm_parse_page(p, text.ptr, text.len, j->cfg, &f->dl) == 0 &&
              (!p->draft || j->opts->drafts);
    p->fig_marks = fig_may_have(text.ptr, text.len);
    buf_free(&text);
}

static void *S_parse_thread(void *arg)
{
    parse_job *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add_explicit(&j->next, PARSE_CHUNK, memory_order_relaxed);
        if (i >= j->nmd)
            break;
        size_t end = j->nmd - i < PARSE_CHUNK ? j->nmd : i + PARSE_CHUNK;
        for (; i < end; i++)
            S_parse_file(j, &j->md[i]);
    }
    return NULL;
}

static size_t S_thread_count(const walker *w)
{
    long n = w->opts->threads > 0 ? w->opts->threads
             : w->cfg->jobs > 0   ? w->cfg->jobs
                                  : sysconf(_SC_NPROCESSORS_ONLN);
    size_t most = w->nmd / FILES_PER_THREAD;
    size_t mem = w->cfg->limits.worker_memory;
    if (mem && mem / 8 / THREAD_RESERVE + 1 < most)
        most = mem / 8 / THREAD_RESERVE + 1;
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    if (n < 1 || most < 1)
        return 1;
    return (size_t)n < most ? (size_t)n : most;
}

/* Parses every file the walk found; the calling thread works too. A thread
 * that cannot be started leaves its share to the others. */
static size_t S_parse_all(walker *w)
{
    parse_job j = {.cfg = w->cfg, .opts = w->opts, .dir = w->dir, .md = w->md, .nmd = w->nmd};
    atomic_init(&j.next, 0);
    size_t nthreads = S_thread_count(w), started = 0;
    pthread_t tids[MAX_THREADS];
    pthread_attr_t attr;
    bool have_attr = nthreads > 1 && pthread_attr_init(&attr) == 0;
    if (have_attr)
        pthread_attr_setstacksize(&attr, THREAD_STACK);
    for (size_t t = 1; t < nthreads; t++)
        if (pthread_create(&tids[started], have_attr ? &attr : NULL, S_parse_thread, &j) == 0)
            started++;
    if (have_attr)
        pthread_attr_destroy(&attr);
    S_parse_thread(&j);
    for (size_t t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    return started + 1;
}

static void S_add_markdown(walker *w, char *rel, char *src)
{
    if (w->nmd == w->md_cap) {
        w->md_cap = w->md_cap ? w->md_cap * 2 : 64;
        w->md = xrealloc(w->md, w->md_cap * sizeof *w->md);
    }
    md_file *f = &w->md[w->nmd++];
    *f = (md_file){.rel = rel, .src = src};
    diag_list_init(&f->before);
    diag_list_init(&f->dl);
    diag_move(&f->before, w->dl); /* keeps the walk's messages in walk order */
}

static void S_add_asset(walker *w, const char *rel)
{
    content_index *idx = w->idx;
    if (idx->nassets == w->asset_cap) {
        w->asset_cap = w->asset_cap ? w->asset_cap * 2 : 32;
        idx->assets = xrealloc(idx->assets, w->asset_cap * sizeof *idx->assets);
    }
    idx->assets[idx->nassets].src = fs_join(CONTENT_DIR, rel);
    idx->assets[idx->nassets].out = xstrdup(rel);
    idx->nassets++;
}

/* Classifies one entry of the folder open at dfd; pushes folders onto the
 * stack. Symbolic links are refused, whether they stay in content/ or not:
 * every file is opened beneath content/ without following any (pages and
 * assets alike, fs_read_beneath and fs_read_in), so no link can lead a read
 * out of the project, and with no links there are no cycles either. */
static void S_visit(walker *w, dir_item **stack, size_t *nstack, size_t *capstack,
                    const dir_item *dir, int dfd, const dir_entry *ent)
{
    const char *name = ent->name;
    char *rel = fs_join(dir->rel, name);
    char *shown = fs_join(CONTENT_DIR, rel);
    struct stat st;
    if (!collide_name_ok(shown, name, w->dl))
        goto out; /* a file's or a whole folder's */
    if (ent->type == DT_REG) {
        /* readdir knows a plain file: its size is checked where it is read */
        st = (struct stat){.st_mode = S_IFREG};
    } else if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        diag_error(w->dl, shown, 0, 0, "cannot stat: %s", strerror(errno));
        goto out;
    }
    if (S_ISLNK(st.st_mode)) {
        diag_error(w->dl, shown, 0, 0,
                   "a symbolic link: refused (files under content/ are read without "
                   "following any; copy the file or folder instead)");
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        if (dir->depth + 1 > w->cfg->limits.depth) {
            diag_error(w->dl, shown, 0, 0, "folders nested deeper than %d levels (limits.depth)",
                       w->cfg->limits.depth);
            goto out;
        }
        if (*nstack == *capstack) {
            *capstack = *capstack ? *capstack * 2 : 16;
            *stack = xrealloc(*stack, *capstack * sizeof **stack);
        }
        (*stack)[(*nstack)++] = (dir_item){rel, dir->depth + 1};
        rel = NULL;
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        diag_error(w->dl, shown, 0, 0, "not a regular file or folder: refused");
        goto out;
    }
    if (++w->files > w->cfg->limits.files) {
        if (w->files == w->cfg->limits.files + 1)
            diag_error(w->dl, shown, 0, 0, "more than %zu files under content/ (limits.files)",
                       w->cfg->limits.files);
        goto out;
    }
    size_t n = strlen(name);
    if (n > 3 && strcmp(name + n - 3, ".md") == 0) {
        S_add_markdown(w, rel, shown); /* the slot owns the two now */
        return;
    }
    S_add_asset(w, rel);
out:
    free(rel);
    free(shown);
}

static int S_cmp_entry(const void *a, const void *b)
{
    return strcmp(((const dir_entry *)a)->name, ((const dir_entry *)b)->name);
}

static int S_walk(walker *w)
{
    size_t cap = 16, n = 0;
    dir_item *stack = xmalloc(cap * sizeof *stack);
    stack[n++] = (dir_item){xstrdup(""), 0};
    while (n > 0) {
        dir_item dir = stack[--n];
        char *shown = dir.rel[0] ? fs_join(CONTENT_DIR, dir.rel) : xstrdup(CONTENT_DIR);
        int dfd = dir.rel[0] ? fs_open_beneath(w->dir, dir.rel, O_RDONLY | O_DIRECTORY)
                             : dup(w->dir);
        DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
        if (!d && dfd >= 0)
            close(dfd);
        if (!d) {
            diag_error(w->dl, shown, 0, 0, "cannot open folder: %s", strerror(errno));
        } else {
            dir_entry *ents = NULL;
            size_t nn = 0, nc = 0;
            struct dirent *e;
            while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                    continue; /* dotfiles and . .. */
                if (nn == nc) {
                    nc = nc ? nc * 2 : 32;
                    ents = xrealloc(ents, nc * sizeof *ents);
                }
                ents[nn++] = (dir_entry){xstrdup(e->d_name), e->d_type};
                if (nn > w->cfg->limits.files + 1)
                    break;
            }
            qsort(ents, nn, sizeof *ents, S_cmp_entry);
            /* visit in reverse so the stack pops folders in name order */
            size_t first_dir = n;
            for (size_t i = 0; i < nn; i++) {
                S_visit(w, &stack, &n, &cap, &dir, dirfd(d), &ents[i]);
                free(ents[i].name);
            }
            closedir(d);
            for (size_t a = first_dir, b = n; a + 1 < b; a++, b--) {
                dir_item t = stack[a];
                stack[a] = stack[b - 1];
                stack[b - 1] = t;
            }
            free(ents);
        }
        free(shown);
        free(dir.rel);
    }
    free(stack);
    return 0;
}

/* ---------- URLs, sections, tags ---------- */

static void S_assign_url(page *p)
{
    if (p->kind == PAGE_HOME) {
        p->url = xstrdup("/");
        p->out = xstrdup("index.html");
        return;
    }
    buf u = BUF_INIT;
    buf_putc(&u, '/');
    if (p->kind == PAGE_SECTION) {
        const char *sec = p->section;
        if (p->slug) {
            const char *slash = strrchr(sec, '/');
            if (slash)
                buf_put(&u, sec, (size_t)(slash - sec) + 1);
            buf_puts(&u, p->slug);
        } else {
            buf_puts(&u, sec);
        }
    } else {
        if (p->section[0]) {
            buf_puts(&u, p->section);
            buf_putc(&u, '/');
        }
        if (p->slug) {
            buf_puts(&u, p->slug);
        } else {
            const char *base = strrchr(p->rel, '/');
            base = base ? base + 1 : p->rel;
            buf_put(&u, base, strlen(base) - 3);
        }
    }
    buf_putc(&u, '/');
    /* out is the URL without its leading '/', plus index.html */
    size_t n = u.len - 1;
    p->out = xmalloc(n + sizeof "index.html");
    memcpy(p->out, u.ptr + 1, n);
    memcpy(p->out + n, "index.html", sizeof "index.html");
    p->url = buf_detach(&u);
}

static char *S_title_from_folder(const char *section)
{
    const char *base = strrchr(section, '/');
    base = base ? base + 1 : section;
    char *t = xstrdup(base);
    if (t[0] >= 'a' && t[0] <= 'z')
        t[0] = (char)(t[0] - 'a' + 'A');
    return t;
}

static page *S_virtual_section(walker *w, const char *section)
{
    page *p = xcalloc(1, sizeof *p);
    p->kind = section[0] ? PAGE_SECTION : PAGE_HOME;
    p->section = xstrdup(section);
    p->title = section[0] ? S_title_from_folder(section) : xstrdup(w->cfg->title);
    S_add_page(w, p);
    return p;
}

static int S_cmp_page_src(const void *a, const void *b)
{
    const page *x = *(page *const *)a, *y = *(page *const *)b;
    return strcmp(x->url, y->url);
}

static void S_index_sections(walker *w)
{
    content_index *idx = w->idx;
    /* section pages from _index.md files first */
    for (size_t i = 0; i < idx->npages; i++) {
        page *p = idx->pages[i];
        if (p->kind != PAGE_REGULAR)
            strmap_put(&idx->by_section, p->section, p);
    }
    if (!strmap_get(&idx->by_section, ""))
        strmap_put(&idx->by_section, "", S_virtual_section(w, ""));
    /* every folder on the way to a page has a section page */
    size_t n = idx->npages;
    for (size_t i = 0; i < n; i++) {
        char *sec = xstrdup(idx->pages[i]->section);
        for (;;) {
            if (!strmap_get(&idx->by_section, sec))
                strmap_put(&idx->by_section, sec, S_virtual_section(w, sec));
            char *slash = strrchr(sec, '/');
            if (!slash)
                break;
            *slash = '\0';
        }
        free(sec);
    }
    for (size_t i = 0; i < idx->npages; i++) {
        page *p = idx->pages[i];
        if (p->kind == PAGE_HOME)
            continue;
        char *sec = xstrdup(p->section);
        if (p->kind == PAGE_SECTION) {
            char *slash = strrchr(sec, '/');
            if (slash)
                *slash = '\0';
            else
                sec[0] = '\0';
        }
        p->parent = strmap_get(&idx->by_section, sec);
        free(sec);
    }
}

static int S_cmp_tag(const void *a, const void *b)
{
    return strcmp(((const tag *)a)->slug, ((const tag *)b)->slug);
}

static void S_index_tags(content_index *idx)
{
    strmap by_slug, by_name; /* both to the tag's position + 1 */
    strmap_init(&by_slug);
    strmap_init(&by_name);
    size_t cap = 0;
    size_t n = idx->nby_date;
    const size_t *order = idx->by_date;
    for (size_t k = 0; k < n; k++) {
        page *p = idx->pages[order[k]];
        for (size_t t = 0; t < p->ntags; t++) {
            /* a site has far fewer tag names than tagged pages: slugify each once */
            size_t pos = (size_t)(uintptr_t)strmap_get(&by_name, p->tags[t]);
            if (!pos) {
                char *slug = content_slugify(p->tags[t]);
                pos = (size_t)(uintptr_t)strmap_get(&by_slug, slug);
                if (!pos) {
                    if (idx->ntags == cap) {
                        cap = cap ? cap * 2 : 16;
                        idx->tags = xrealloc(idx->tags, cap * sizeof *idx->tags);
                    }
                    tag *nt = &idx->tags[idx->ntags++];
                    memset(nt, 0, sizeof *nt);
                    nt->name = xstrdup(p->tags[t]);
                    nt->url = xasprintf("/tags/%s/", slug);
                    nt->slug = slug;
                    slug = NULL;
                    pos = idx->ntags;
                    strmap_put(&by_slug, nt->slug, (void *)(uintptr_t)pos);
                }
                free(slug);
                strmap_put(&by_name, p->tags[t], (void *)(uintptr_t)pos);
            }
            tag *tg = &idx->tags[pos - 1];
            /* a page lists each tag once */
            if (tg->npages == 0 || tg->pages[tg->npages - 1] != order[k]) {
                /* room doubles at each power of two, so no cap field is needed */
                if ((tg->npages & (tg->npages - 1)) == 0)
                    tg->pages = xrealloc(tg->pages, (tg->npages ? tg->npages * 2 : 1) *
                                                        sizeof *tg->pages);
                tg->pages[tg->npages++] = order[k];
            }
        }
    }
    strmap_free(&by_slug);
    strmap_free(&by_name);
    if (idx->ntags)
        qsort(idx->tags, idx->ntags, sizeof *idx->tags, S_cmp_tag);
}

static double S_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int content_load(content_index *idx, const char *root, const config *cfg,
                 const content_opts *opts, diag_list *dl)
{
    memset(idx, 0, sizeof *idx);
    strmap_init(&idx->by_url);
    strmap_init(&idx->by_rel);
    strmap_init(&idx->by_section);
    strmap_init(&idx->assets_by_out);
    size_t errors = dl->errors;
    bool trace = getenv("KVSITE_TRACE") != NULL;
    double t0 = trace ? S_now() : 0;
    diag_list walk_dl;
    diag_list_init(&walk_dl);
    walker w = {.idx = idx, .cfg = cfg, .opts = opts, .dl = &walk_dl};
    w.dir = fs_open_in(root, CONTENT_DIR, O_RDONLY | O_DIRECTORY);
    if (w.dir < 0) {
        if (errno == ELOOP)
            diag_error(dl, CONTENT_DIR, 0, 0, "a symbolic link: refused (content/ must be the "
                                              "project's own folder)");
        else
            diag_error(dl, CONTENT_DIR, 0, 0, "no content folder (%s): nothing to build",
                       strerror(errno));
        return -1;
    }
    S_walk(&w);
    double t_walk = trace ? S_now() : 0;
    size_t nthreads = S_parse_all(&w);
    double t_parse = trace ? S_now() : 0;
    if (opts && opts->parsed)
        opts->parsed(opts->reuse_ctx);
    /* in walk order, as if each file had been parsed when the walk met it */
    for (size_t i = 0; i < w.nmd; i++) {
        md_file *f = &w.md[i];
        diag_move(dl, &f->before);
        diag_move(dl, &f->dl);
        if (f->keep)
            S_add_page(&w, f->page);
        else
            S_page_free(f->page);
    }
    diag_move(dl, &walk_dl);
    free(w.md);
    S_index_sections(&w);
    for (size_t i = 0; i < idx->npages; i++)
        S_assign_url(idx->pages[i]);
    qsort(idx->pages, idx->npages, sizeof *idx->pages, S_cmp_page_src);

    /* two pages on one URL; names that collide where letter case or Unicode
     * normalisation is ignored (collide.h) */
    strmap folded;
    strmap_init(&folded);
    strmap_reserve(&folded, idx->npages);
    strmap_reserve(&idx->by_url, idx->npages);
    strmap_reserve(&idx->by_rel, idx->npages);
    for (size_t i = 0; i < idx->npages; i++) {
        page *p = idx->pages[i];
        page *prev = strmap_get(&idx->by_url, p->url);
        const char *where = p->src ? p->src : CONTENT_DIR;
        if (p->rel)
            strmap_put(&idx->by_rel, p->rel, p);
        if (prev) {
            /* blame the page whose slug: made the clash, else the later file */
            page *culprit = p, *other = prev;
            if (prev->slug && !p->slug) {
                culprit = prev;
                other = p;
            }
            const yv *at = culprit->front ? yv_get(culprit->front, "slug") : NULL;
            diag_error(dl, culprit->src ? culprit->src : CONTENT_DIR, at ? at->line : culprit->src ? 1 : 0,
                       at ? at->col : culprit->src ? 1 : 0,
                       "two pages on one URL %s: this page and %s", p->url,
                       other->src ? other->src : "a generated section page");
            continue;
        }
        strmap_put(&idx->by_url, p->url, p);
        char *low = collide_fold(p->out);
        page *fprev = strmap_get(&folded, low);
        if (fprev)
            diag_error(dl, where, p->src ? 1 : 0, p->src ? 1 : 0,
                       "URL %s differs from %s only in %s", p->url, fprev->url,
                       collide_how(p->url, fprev->url));
        else
            strmap_put(&folded, low, p);
        free(low);
    }
    strmap_free(&folded);
    for (size_t i = 0; i < idx->nassets; i++) {
        asset *a = &idx->assets[i];
        strmap_put(&idx->assets_by_out, a->out, a);
    }
    content_listings(idx);
    S_index_tags(idx);
    if (trace)
        fprintf(stderr,
                "kvsite: trace: content: walk %.3f s, parse %.3f s (%zu files, %zu threads), "
                "index %.3f s\n",
                t_walk - t0, t_parse - t_walk, w.nmd, nthreads, S_now() - t_parse);
    close(w.dir);
    return dl->errors == errors ? 0 : -1;
}

void content_index_free(content_index *idx)
{
    for (size_t i = 0; i < idx->npages; i++)
        S_page_free(idx->pages[i]);
    free(idx->pages);
    for (size_t i = 0; i < idx->nassets; i++) {
        free(idx->assets[i].src);
        free(idx->assets[i].out);
    }
    free(idx->assets);
    for (size_t i = 0; i < idx->ntags; i++) {
        free(idx->tags[i].name);
        free(idx->tags[i].slug);
        free(idx->tags[i].url);
        free(idx->tags[i].pages);
    }
    free(idx->tags);
    content_listings_free(idx);
    strmap_free(&idx->index_by_url);
    strmap_free(&idx->by_url);
    strmap_free(&idx->by_rel);
    strmap_free(&idx->by_section);
    strmap_free(&idx->assets_by_out);
    memset(idx, 0, sizeof *idx);
}

/* ---------- listing order ---------- */

/* The last ties of the listing's and the menu's orders: title, then URL. */
static int S_cmp_title_url(const page *x, const page *y)
{
    int c = strcmp(x->title ? x->title : "", y->title ? y->title : "");
    return c ? c : strcmp(x->url, y->url);
}

static int S_cmp_listing(const void *a, const void *b, void *ctx)
{
    const content_index *idx = ctx;
    const page *x = idx->pages[*(const size_t *)a];
    const page *y = idx->pages[*(const size_t *)b];
    if (x->weight != y->weight)
        return x->weight < y->weight ? -1 : 1;
    const char *dx = x->date ? x->date : "", *dy = y->date ? y->date : "";
    int c = strcmp(dy, dx); /* newest first */
    if (c)
        return c;
    return S_cmp_title_url(x, y);
}

static int S_cmp_date(const void *a, const void *b, void *ctx)
{
    const content_index *idx = ctx;
    const page *x = idx->pages[*(const size_t *)a];
    const page *y = idx->pages[*(const size_t *)b];
    const char *dx = x->date ? x->date : "", *dy = y->date ? y->date : "";
    int c = strcmp(dy, dx);
    return c ? c : strcmp(x->url, y->url);
}

/* The menu's order: weight, then title, then URL (no date: sections rarely
 * have one, and a menu should not reorder when one is written). */
static int S_cmp_menu(const void *a, const void *b, void *ctx)
{
    const content_index *idx = ctx;
    const page *x = idx->pages[*(const size_t *)a];
    const page *y = idx->pages[*(const size_t *)b];
    if (x->weight != y->weight)
        return x->weight < y->weight ? -1 : 1;
    return S_cmp_title_url(x, y);
}

/* A page's place in a listing, made once per page: comparing these costs no
 * pointer chase and, for most pairs, no strcmp. The date's first eight bytes
 * big-endian compare as strcmp compares them (a shorter string pads with
 * NULs); ties go to the full comparison. */
typedef struct {
    int64_t weight;
    uint64_t date;
    size_t i;
} S_sort_key;

typedef struct {
    const content_index *idx;
    bool by_weight; /* S_cmp_listing's order, else S_cmp_date's */
} S_sort_ctx;

static uint64_t S_date_prefix(const char *s)
{
    uint64_t k = 0;
    for (int b = 0; b < 8; b++) {
        k <<= 8;
        if (s && *s)
            k |= (unsigned char)*s++;
    }
    return k;
}

static int S_cmp_key(const void *a, const void *b, void *ctx)
{
    const S_sort_key *x = a, *y = b;
    const S_sort_ctx *c = ctx;
    if (c->by_weight && x->weight != y->weight)
        return x->weight < y->weight ? -1 : 1;
    if (x->date != y->date)
        return x->date < y->date ? 1 : -1; /* newest first */
    return c->by_weight ? S_cmp_listing(&x->i, &y->i, (void *)c->idx)
                        : S_cmp_date(&x->i, &y->i, (void *)c->idx);
}

/* Sorts the n page indexes at v in a listing's order. */
static void S_sort_pages(const content_index *idx, size_t *v, size_t n, bool by_weight)
{
    if (n < 2)
        return;
    S_sort_key *keys = xmalloc(n * sizeof *keys);
    for (size_t k = 0; k < n; k++) {
        const page *p = idx->pages[v[k]];
        keys[k] = (S_sort_key){p->weight, S_date_prefix(p->date), v[k]};
    }
    S_sort_ctx c = {idx, by_weight};
    qsort_r(keys, n, sizeof *keys, S_cmp_key, &c);
    for (size_t k = 0; k < n; k++)
        v[k] = keys[k].i;
    free(keys);
}

void content_listings_free(content_index *idx)
{
    free(idx->by_date);
    free(idx->kids);
    free(idx->kids_at);
    free(idx->kid_parent);
    free(idx->kid_slot);
    free(idx->sections);
    free(idx->menu);
    strmap_free(&idx->index_by_url);
    idx->by_date = idx->kids = idx->kids_at = idx->kid_parent = idx->kid_slot = NULL;
    idx->sections = idx->menu = NULL;
    idx->nby_date = idx->nsections = idx->nmenu = 0;
    strmap_init(&idx->index_by_url);
}

void content_listings(content_index *idx)
{
    size_t n = idx->npages;
    content_listings_free(idx);
    strmap_reserve(&idx->index_by_url, n);
    for (size_t i = 0; i < n; i++)
        if (idx->pages[i]->url && !strmap_get(&idx->index_by_url, idx->pages[i]->url))
            strmap_put(&idx->index_by_url, idx->pages[i]->url, (void *)(uintptr_t)(i + 1));
    idx->by_date = xmalloc((n + 1) * sizeof *idx->by_date);
    idx->nby_date = 0;
    idx->sections = xmalloc((n + 1) * sizeof *idx->sections);
    idx->nsections = 0;
    for (size_t i = 0; i < n; i++) {
        if (idx->pages[i]->kind == PAGE_REGULAR)
            idx->by_date[idx->nby_date++] = i;
        else if (idx->pages[i]->kind == PAGE_SECTION)
            idx->sections[idx->nsections++] = i;
    }
    S_sort_pages(idx, idx->by_date, idx->nby_date, false);
    idx->menu = xmalloc((idx->nsections + 1) * sizeof *idx->menu);
    for (size_t k = 0; k < idx->nsections; k++) {
        const page *p = idx->pages[idx->sections[k]];
        if (p->section && p->section[0] && !strchr(p->section, '/'))
            idx->menu[idx->nmenu++] = idx->sections[k];
    }
    qsort_r(idx->menu, idx->nmenu, sizeof *idx->menu, S_cmp_menu, idx);
    /* children grouped by parent: count, place, then sort each group once */
    strmap at; /* a section's or home's folder -> its index + 1 (as by_section) */
    strmap_init(&at);
    for (size_t i = 0; i < n; i++) {
        const page *p = idx->pages[i];
        if (p->kind != PAGE_REGULAR && p->section && !strmap_get(&at, p->section))
            strmap_put(&at, p->section, (void *)(uintptr_t)(i + 1));
    }
    idx->kid_parent = xmalloc((n + 1) * sizeof *idx->kid_parent);
    idx->kids_at = xcalloc(n + 2, sizeof *idx->kids_at);
    for (size_t i = 0; i < n; i++) {
        const page *pp = idx->pages[i]->parent;
        size_t pi = pp && pp->section ? (size_t)(uintptr_t)strmap_get(&at, pp->section) - 1
                                      : SIZE_MAX;
        if (pi != SIZE_MAX && idx->pages[pi] != pp)
            pi = SIZE_MAX; /* not the page by_section names: lists nothing */
        idx->kid_parent[i] = pi;
        if (pi != SIZE_MAX)
            idx->kids_at[pi + 1]++;
    }
    strmap_free(&at);
    for (size_t i = 0; i < n; i++)
        idx->kids_at[i + 1] += idx->kids_at[i];
    idx->kids = xmalloc((idx->kids_at[n] + 1) * sizeof *idx->kids);
    size_t *fill = xmalloc((n + 1) * sizeof *fill);
    memcpy(fill, idx->kids_at, n * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        if (idx->kid_parent[i] != SIZE_MAX)
            idx->kids[fill[idx->kid_parent[i]]++] = i;
    free(fill);
    idx->kid_slot = xmalloc((n + 1) * sizeof *idx->kid_slot);
    for (size_t i = 0; i < n; i++) {
        idx->kid_slot[i] = SIZE_MAX;
        size_t a = idx->kids_at[i], b = idx->kids_at[i + 1];
        S_sort_pages(idx, idx->kids + a, b - a, true);
    }
    for (size_t k = 0; k < idx->kids_at[n]; k++)
        idx->kid_slot[idx->kids[k]] = k;
}

size_t content_index_of(const content_index *idx, const char *url)
{
    return (size_t)(uintptr_t)strmap_get(&idx->index_by_url, url) - 1;
}

const size_t *content_kids(const content_index *idx, size_t i, size_t *n)
{
    if (!idx->kids_at || i >= idx->npages) {
        *n = 0;
        return NULL;
    }
    *n = idx->kids_at[i + 1] - idx->kids_at[i];
    return idx->kids + idx->kids_at[i];
}

/* The page step places from page i in its parent's listing, or SIZE_MAX. */
static size_t S_sibling(const content_index *idx, size_t i, int step)
{
    if (!idx->kid_slot || i >= idx->npages || idx->kid_slot[i] == SIZE_MAX)
        return SIZE_MAX;
    size_t par = idx->kid_parent[i], slot = idx->kid_slot[i];
    if (step < 0)
        return slot > idx->kids_at[par] ? idx->kids[slot - 1] : SIZE_MAX;
    return slot + 1 < idx->kids_at[par + 1] ? idx->kids[slot + 1] : SIZE_MAX;
}

size_t content_prev(const content_index *idx, size_t i) { return S_sibling(idx, i, -1); }
size_t content_next(const content_index *idx, size_t i) { return S_sibling(idx, i, 1); }

size_t *content_children(const content_index *idx, const page *section, size_t *n)
{
    size_t at = SIZE_MAX;
    for (size_t i = 0; i < idx->npages && at == SIZE_MAX; i++)
        if (idx->pages[i] == section)
            at = i;
    const size_t *v = at == SIZE_MAX ? NULL : content_kids(idx, at, n);
    if (!v)
        *n = 0;
    size_t *copy = xmalloc((*n + 1) * sizeof *copy);
    if (*n)
        memcpy(copy, v, *n * sizeof *copy);
    return copy;
}

size_t *content_by_date(const content_index *idx, size_t *n)
{
    *n = idx->nby_date;
    size_t *copy = xmalloc((*n + 1) * sizeof *copy);
    if (*n)
        memcpy(copy, idx->by_date, *n * sizeof *copy);
    return copy;
}

/* ---------- bytes, for the build cache ---------- */

static void S_put_str(buf *b, const char *s)
{
    uint32_t n = s ? (uint32_t)strlen(s) + 1 : 0;
    buf_put(b, &n, sizeof n);
    if (s)
        buf_put(b, s, n - 1);
}

void content_page_encode(const page *p, buf *out)
{
    const char *strs[] = {p->title, p->date, p->updated, p->summary, p->slug, p->template_name};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        S_put_str(out, strs[i]);
    uint32_t ntags = (uint32_t)p->ntags;
    buf_put(out, &ntags, sizeof ntags);
    for (size_t i = 0; i < p->ntags; i++)
        S_put_str(out, p->tags[i]);
    int64_t nums[5] = {p->draft, p->weight, p->body_line, (int64_t)p->body_off, p->fig_marks};
    buf_put(out, nums, sizeof nums);
    uint8_t has_front = p->front != NULL;
    buf_put(out, &has_front, 1);
    if (p->front)
        yv_encode(p->front, out);
}

/* A string as S_put_str wrote it: NULL for none or when the bytes run out. */
static char *S_get_str(buf_reader *r)
{
    uint32_t n = buf_rd_u32(r);
    const char *s = n ? buf_rd_span(r, n - 1) : NULL;
    return s ? xstrndup(s, n - 1) : NULL;
}

int content_page_decode(page *p, const char *data, size_t len)
{
    buf_reader r = {data, data + len, false};
    char **strs[] = {&p->title, &p->date, &p->updated, &p->summary, &p->slug, &p->template_name};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
        *strs[i] = S_get_str(&r);
    uint32_t ntags = buf_rd_u32(&r);
    if (ntags > (size_t)(r.end - r.p) / 4)
        r.bad = true;
    if (!r.bad) {
        p->tags = xcalloc((size_t)ntags + 1, sizeof *p->tags);
        for (size_t i = 0; i < ntags; i++) {
            p->tags[p->ntags++] = S_get_str(&r);
            if (!p->tags[i])
                r.bad = true;
        }
    }
    int64_t nums[5];
    uint8_t has_front;
    buf_rd_get(&r, nums, sizeof nums);
    buf_rd_get(&r, &has_front, sizeof has_front);
    p->draft = nums[0] != 0;
    p->weight = nums[1];
    p->body_line = (int)nums[2];
    p->body_off = (size_t)nums[3];
    p->fig_marks = nums[4] != 0;
    if (!r.bad && has_front) {
        size_t used = yv_decode(r.p, (size_t)(r.end - r.p), &p->front);
        if (used == 0)
            r.bad = true;
        r.p += used;
    }
    if (r.bad || r.p != r.end || !p->title) {
        for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) {
            free(*strs[i]);
            *strs[i] = NULL;
        }
        for (size_t i = 0; i < p->ntags; i++)
            free(p->tags[i]);
        free(p->tags);
        p->tags = NULL;
        p->ntags = 0;
        yv_free(p->front);
        p->front = NULL;
        return -1;
    }
    return 0;
}
