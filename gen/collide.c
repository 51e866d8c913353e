#include "collide.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "content.h"
#include "feed.h"
#include "fsutil.h"
#include "jobs.h"
#include "nfd.h"
#include "output.h"
#include "strmap.h"
#include "utf8.h"

/* ---------- names ---------- */

bool collide_name_ok(const char *shown, const char *name, diag_list *dl)
{
    size_t n = strlen(name);
    if (!utf8_valid(name, n, NULL)) {
        diag_error(dl, shown, 0, 0,
                   "a file or folder name that is not UTF-8: refused (it would be published "
                   "as is in URLs, the sitemap and the feed; rename it)");
        return false;
    }
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)) {
            diag_error(dl, shown, 0, 0,
                       "a file or folder name with a control character: refused (rename it)");
            return false;
        }
    }
    return true;
}

char *collide_fold(const char *path)
{
    char *low = xstrdup(path);
    bool ascii = true; /* its own NFD: most paths, one copy (a site's every output) */
    for (char *c = low; *c; c++) {
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
        else if ((unsigned char)*c >= 0x80)
            ascii = false;
    }
    if (ascii)
        return low;
    char *key = nfd(low);
    free(low);
    return key;
}

const char *collide_how(const char *a, const char *b)
{
    char *x = nfd(a), *y = nfd(b);
    bool same_nfd = strcmp(x, y) == 0, same_case = strcasecmp(a, b) == 0;
    free(x);
    free(y);
    if (same_case)
        return "letter case: they collide on case-insensitive file systems";
    if (same_nfd)
        return "Unicode normalisation (NFC and NFD): they collide on file systems that "
               "normalise names (macOS)";
    return "letter case and Unicode normalisation: they collide on case-insensitive file "
           "systems";
}

/* ---------- active files ---------- */

/* What a browser opens as a document that may run script, or runs as one. */
static const char *const S_ACTIVE[] = {"html", "htm",  "shtml", "xhtml", "xht", "xml", "xsl",
                                       "xslt", "svg",  "svgz",  "js",    "mjs", "cjs"};

bool collide_active(const char *rel)
{
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    const char *dot = strrchr(base, '.');
    if (!dot)
        return false;
    for (size_t i = 0; i < sizeof S_ACTIVE / sizeof *S_ACTIVE; i++)
        if (strcasecmp(dot + 1, S_ACTIVE[i]) == 0)
            return true;
    return false;
}

bool collide_allowed(const config *cfg, const char *rel)
{
    const yv *list = cfg->allow_active;
    for (size_t i = 0; list && i < list->n; i++)
        if (fnmatch(list->items[i]->str, rel, FNM_PATHNAME) == 0)
            return true;
    return false;
}

/* ---------- templates/assets ---------- */

void collide_files_free(collide_files *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->v[i]);
    free(f->v);
    memset(f, 0, sizeof *f);
}

/* A stack of folders, not recursion: the depth is the project's. */
void collide_list_assets(const char *root, const config *cfg, collide_files *out,
                         diag_list *dl)
{
    memset(out, 0, sizeof *out);
    size_t cap = 16, n = 0, outcap = 0;
    char **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = xstrdup("");
    size_t count = 0;
    while (n > 0) {
        char *rel = stack[--n];
        char *in = rel[0] ? xasprintf("templates/assets/%s", rel) : xstrdup("templates/assets");
        int dfd = fs_open_in(root, in, O_RDONLY | O_DIRECTORY);
        DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
        free(in);
        if (!d && dfd >= 0)
            close(dfd);
        if (d) {
            struct dirent *e;
            while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                    continue;
                char *child = rel[0] ? xasprintf("%s/%s", rel, e->d_name) : xstrdup(e->d_name);
                char *shown = xasprintf("templates/assets/%s", child);
                struct stat st;
                if (!collide_name_ok(shown, e->d_name, dl)) {
                    /* said */
                } else if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                           S_ISLNK(st.st_mode)) {
                    diag_error(dl, shown, 0, 0, "symbolic links are not copied: refused");
                } else if (S_ISDIR(st.st_mode)) {
                    if (strchr(child, '/') && (size_t)cfg->limits.depth < 2 * n + 2) {
                        diag_error(dl, shown, 0, 0, "folders nested too deep");
                    } else {
                        if (n == cap) {
                            cap *= 2;
                            stack = xrealloc(stack, cap * sizeof *stack);
                        }
                        stack[n++] = child;
                        child = NULL;
                    }
                } else if (S_ISREG(st.st_mode) && ++count <= cfg->limits.files) {
                    if (out->n == outcap) {
                        outcap = outcap ? outcap * 2 : 16;
                        out->v = xrealloc(out->v, outcap * sizeof *out->v);
                    }
                    out->v[out->n++] = child;
                    child = NULL;
                }
                free(child);
                free(shown);
            }
            closedir(d);
        }
        free(rel);
    }
    free(stack);
}

/* ---------- claims ---------- */

typedef struct {
    char *path;  /* the output file: "/a/b/index.html" */
    char *shown; /* where the producer is reported: its file, or NULL */
    char *what;  /* kvsite's own: "the checks report"; NULL for a file's */
    int line, col;
    bool is_page; /* a page of the content index */
} claim;

typedef struct {
    claim *v;
    size_t n, cap;
    strmap files; /* collide_fold(path) -> position + 1 */
    strmap dirs;  /* collide_fold(folder), "/a/b", -> position + 1 of a claim inside it */
    strmap parts; /* collide_fold(report page URL), "/checks/page/2/", -> its claim's
                   * position + 1: its parts' URLs are kept (paginate.h) */
    diag_list *dl;
} claims;

/* "which kvsite writes (the feed)", "which content/a.md publishes too" */
static void S_who(buf *b, const claim *c)
{
    if (c->what)
        buf_printf(b, "which kvsite writes (%s)", c->what);
    else
        buf_printf(b, "which %s publishes too", c->shown);
}

/* How a new claim meets an earlier one. */
typedef enum {
    CLASH_SAME,    /* one file */
    CLASH_FOLD,    /* one file where letter case or normalisation are ignored */
    CLASH_FILE_IN, /* the new one is inside what the earlier one writes as a file */
    CLASH_DIR,     /* the new one is a file where the earlier one needs a folder */
    CLASH_PARTS    /* the new one is where the earlier one's parts may go */
} clash;

static void S_report(claims *cs, const claim *now, const claim *had, clash how)
{
    buf b = BUF_INIT;
    buf_printf(&b, "would publish %s", now->path);
    if (now->what)
        buf_printf(&b, " (%s)", now->what);
    if (how == CLASH_SAME) {
        buf_puts(&b, ", ");
        S_who(&b, had);
    } else if (how == CLASH_FILE_IN) {
        buf_printf(&b, " inside %s, ", had->path);
        S_who(&b, had);
        buf_puts(&b, " as a file");
    } else if (how == CLASH_PARTS) {
        buf_printf(&b, " where the parts of %s may go, ", had->path);
        S_who(&b, had);
        buf_puts(&b, " (a report page with many figures is split at <page>" PAGINATE_PART_DIR
                     "/2/, " PAGINATE_PART_DIR "/3/, ...)");
    } else if (how == CLASH_DIR) {
        buf_printf(&b, " as a file, where %s needs a folder: ", had->path);
        S_who(&b, had);
    } else {
        buf_printf(&b, ", which differs from %s, ", had->path);
        S_who(&b, had);
        buf_printf(&b, ", only in %s", collide_how(now->path, had->path));
    }
    diag_error(cs->dl, now->shown, now->line, now->col, "%s", buf_cstr(&b));
    buf_free(&b);
}

/* The report page whose parts' space folded path key is in ("<report
 * page>part/<n>/index.html", or the folders on the way as a file): their
 * number is known only once the pages rendered, so the space is kept
 * whole. Its claim's position + 1, or 0. */
static size_t S_in_parts(const claims *cs, const char *key)
{
    static const char dir[] = "/" PAGINATE_PART_DIR;
    for (const char *p = strstr(key, dir); p; p = strstr(p + 1, dir)) {
        const char *q = p + sizeof dir - 1;
        if (*q == '/' && q[1] >= '0' && q[1] <= '9') {
            for (q++; *q >= '0' && *q <= '9';)
                q++;
            if (*q && strcmp(q, "/index.html") != 0)
                continue;
        } else if (*q) {
            continue;
        }
        char *owner = xstrndup(key, (size_t)(p - key) + 1);
        size_t at = (size_t)(uintptr_t)strmap_get(&cs->parts, owner);
        free(owner);
        if (at)
            return at;
    }
    return 0;
}

/* Claims path (site path of a file, "/a/b/index.html") for a producer; takes
 * shown and what. */
static void S_claim(claims *cs, const char *path, char *shown, char *what, int line, int col,
                    bool is_page)
{
    if (cs->n == cs->cap) {
        cs->cap = cs->cap ? cs->cap * 2 : 64;
        cs->v = xrealloc(cs->v, cs->cap * sizeof *cs->v);
    }
    claim *now = &cs->v[cs->n];
    *now = (claim){xstrdup(path), shown, what, line, col, is_page};
    char *key = collide_fold(path);
    size_t had = (size_t)(uintptr_t)strmap_get(&cs->files, key);
    size_t dir = had ? 0 : (size_t)(uintptr_t)strmap_get(&cs->dirs, key);
    size_t parts = had || dir ? 0 : S_in_parts(cs, key);
    if (parts) {
        S_report(cs, now, &cs->v[parts - 1], CLASH_PARTS);
    } else if (had) {
        const claim *h = &cs->v[had - 1];
        /* page against page: content_load said it */
        if (!(h->is_page && is_page))
            S_report(cs, now, h, strcmp(h->path, path) == 0 ? CLASH_SAME : CLASH_FOLD);
    } else if (dir) {
        S_report(cs, now, &cs->v[dir - 1], CLASH_DIR);
    } else {
        /* every folder on the way must not be a file */
        size_t pos = (size_t)(cs->n + 1);
        bool inside = false;
        for (char *slash = strchr(key + 1, '/'); slash && !inside; slash = strchr(slash + 1, '/')) {
            *slash = '\0';
            size_t f = (size_t)(uintptr_t)strmap_get(&cs->files, key);
            if (f) {
                S_report(cs, now, &cs->v[f - 1], CLASH_FILE_IN);
                inside = true;
            } else if (!strmap_get(&cs->dirs, key)) {
                strmap_put(&cs->dirs, key, (void *)(uintptr_t)pos);
            }
            *slash = '/';
        }
        if (!inside)
            strmap_put(&cs->files, key, (void *)(uintptr_t)pos);
    }
    free(key);
    cs->n++;
}

/* Where a page is reported: its slug: line when that made its URL. */
static void S_page_at(const page *p, char **shown, int *line, int *col)
{
    if (!p->src) {
        *shown = p->section[0] ? xasprintf(CONTENT_DIR "/%s", p->section) : xstrdup(CONTENT_DIR);
        *line = *col = 0;
        return;
    }
    const yv *at = p->slug && p->front ? yv_get(p->front, "slug") : NULL;
    *shown = xstrdup(p->src);
    *line = at ? at->line : 1;
    *col = at ? at->col : 1;
}

/* What kvsite's own page of job j is, for messages. */
static char *S_what(const render_env *e, job_kind k, size_t i)
{
    switch (k) {
    case JOB_TAGS: return xstrdup("the tag index");
    case JOB_TAG: return xasprintf("the page of tag \"%s\"", e->idx->tags[i].name);
    case JOB_SOURCES: return xstrdup("the sources page");
    case JOB_CHECKS: return xstrdup("the checks report");
    case JOB_404: return xstrdup("the page for URLs not found");
    case JOB_CHECKS_JSON: return xstrdup("the checks report, as JSON");
    case JOB_CHECKS_SECTION:
        return xasprintf("the checks report of %s", e->idx->pages[e->report_sections[i]]->url);
    case JOB_PAGER: {
        char *first = jobs_pager_first(e, &e->pages_plan->items[i]);
        char *w = xasprintf("page %zu of the listing at %s", e->pages_plan->items[i].number, first);
        free(first);
        return w;
    }
    default: return xstrdup("a page");
    }
}

static void S_claim_job(claims *cs, const render_env *e, size_t j)
{
    size_t i;
    job_kind k = render_job_kind(e, j, &i);
    char *url = jobs_url(e, j);
    size_t n = strlen(url);
    /* "/" and output_rel(url): the folder's index.html */
    char *path = n && url[n - 1] == '/' ? xasprintf("%sindex.html", url) : xstrdup(url);
    if (k == JOB_PAGE) {
        const page *p = e->idx->pages[i];
        char *shown;
        int line, col;
        S_page_at(p, &shown, &line, &col);
        char *what = p->src ? NULL
                     : p->kind == PAGE_HOME
                         ? xstrdup("the home page")
                         : xasprintf("the section page of " CONTENT_DIR "/%s/", p->section);
        S_claim(cs, path, shown, what, line, col, true);
    } else {
        /* a tag page is reported at the first page with the tag */
        const char *at = k == JOB_TAG && e->idx->tags[i].npages
                             ? e->idx->pages[e->idx->tags[i].pages[0]]->src
                             : NULL;
        S_claim(cs, path, at ? xstrdup(at) : NULL, S_what(e, k, i), 0, 0, false);
        if (k == JOB_CHECKS || k == JOB_CHECKS_SECTION ||
            (k == JOB_PAGER && e->pages_plan->items[i].kind == PAGER_REPORT)) {
            char *fold = collide_fold(url);
            strmap_put(&cs->parts, fold, (void *)(uintptr_t)cs->n);
            free(fold);
        }
    }
    free(path);
    free(url);
}

static bool S_have_404(const char *root)
{
    int dir = fs_root_open(root);
    if (dir < 0)
        return false;
    struct stat st;
    /* a link counts: it is refused, with its name, when it is read */
    bool there = fstatat(dir, "templates/404.html", &st, AT_SYMLINK_NOFOLLOW) == 0;
    close(dir);
    return there;
}

int collide_check(const render_env *e, const collide_files *assets, diag_list *dl)
{
    size_t before = dl->errors;
    const content_index *idx = e->idx;
    claims cs = {.dl = dl};
    strmap_init(&cs.files);
    strmap_init(&cs.dirs);
    strmap_init(&cs.parts);
    size_t njobs = render_job_count(e);
    bool have_404 = S_have_404(e->root);
    /* kvsite's own first: what a content file would replace is blamed on the file */
    for (size_t j = idx->npages; j < njobs; j++) {
        size_t i;
        if (jobs_present(e, render_job_kind(e, j, &i), have_404))
            S_claim_job(&cs, e, j);
    }
    S_claim(&cs, "/feed.xml", NULL, xstrdup("the feed"), 0, 0, false);
    S_claim(&cs, "/sitemap.xml", NULL, xstrdup("the sitemap"), 0, 0, false);
    /* its parts, past FEED_SITEMAP_MAX pages (feed.h): every page a job makes */
    size_t pages = 0;
    for (size_t j = 0; j < njobs; j++) {
        size_t i;
        job_kind k = render_job_kind(e, j, &i);
        if (k == JOB_PAGE ? strmap_get(&idx->by_url, idx->pages[i]->url) == idx->pages[i]
                          : k != JOB_404 && k != JOB_CHECKS_JSON && jobs_present(e, k, have_404))
            pages++;
    }
    for (size_t k = 1; k <= feed_sitemap_parts(pages); k++) {
        char path[FEED_PART_NAME + 1] = "/";
        feed_sitemap_part_name(path + 1, k);
        S_claim(&cs, path, NULL, xasprintf("part %zu of the sitemap", k), 0, 0, false);
    }
    for (size_t i = 0; i < assets->n; i++) {
        char *path = xasprintf("/assets/%s", assets->v[i]);
        S_claim(&cs, path, xasprintf("templates/assets/%s", assets->v[i]), NULL, 0, 0, false);
        free(path);
    }
    for (size_t j = 0; j < idx->npages; j++) {
        const page *p = idx->pages[j];
        /* a second page on one URL: content_load said it */
        if (strmap_get(&idx->by_url, p->url) == p)
            S_claim_job(&cs, e, j);
    }
    for (size_t i = 0; i < idx->nassets; i++) {
        const asset *a = &idx->assets[i];
        if (collide_active(a->out) && !collide_allowed(e->cfg, a->out)) {
            const char *dot = strrchr(a->out, '.');
            diag_error(dl, a->src, 0, 0,
                       "refused: a %s file can run script in the site's origin (list it in "
                       "site.yaml's content.allow_active to publish it as it is)",
                       dot);
        }
        char *path = xasprintf("/%s", a->out);
        S_claim(&cs, path, xstrdup(a->src), NULL, 0, 0, false);
        free(path);
    }
    for (size_t i = 0; i < cs.n; i++) {
        free(cs.v[i].path);
        free(cs.v[i].shown);
        free(cs.v[i].what);
    }
    free(cs.v);
    strmap_free(&cs.files);
    strmap_free(&cs.dirs);
    strmap_free(&cs.parts);
    return dl->errors == before ? 0 : -1;
}
