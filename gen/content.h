/* content: the page index. Walks content/, reads every page's front matter and
 * decides each page's URL and output file, before any page is rendered.
 *
 * The index owns its pages and everything in them; content_index_free() releases
 * it all. Workers are forked after content_load() (which joins its own parse
 * threads first), so they share the index copy-on-write and refer to pages by
 * their position in idx->pages. */
#ifndef KV_CONTENT_H
#define KV_CONTENT_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "diag.h"
#include "strmap.h"
#include "yv.h"

/* The folder of pages and files, beneath the project root. */
#define CONTENT_DIR "content"

typedef enum {
    PAGE_REGULAR, /* content/a/b.md */
    PAGE_SECTION, /* content/a/_index.md, or a folder of pages without one */
    PAGE_HOME     /* content/_index.md, or the site root without one */
} page_kind;

typedef struct page page;
struct page {
    page_kind kind;
    char *src;      /* "content/a/b.md"; NULL for a section or home with no file */
    char *rel;      /* "a/b.md" relative to content/ ("a/_index.md"); NULL like src */
    char *section;  /* folder relative to content/: "a", "" at the root */
    char *url;      /* site path: "/a/b/", without the base path */
    char *out;      /* output file relative to the output root: "a/b/index.html" */
    char *title;    /* front matter, or derived for virtual sections */
    char *date;     /* "YYYY-MM-DD" or with time; NULL if not set */
    char *updated;
    char *summary;
    char *slug;
    char *template_name; /* front-matter template:, NULL if not set */
    char **tags;
    size_t ntags;
    bool draft;
    bool fig_marks;  /* the file may hold figures (fig_may_have): the report counts it */
    long long weight;
    int body_line;   /* 1-based line of the file where the Markdown body starts */
    size_t body_off; /* byte offset of the body in the file */
    yv *front;       /* the whole front matter (owned); NULL for virtual pages */
    struct page *parent; /* the section page this page is listed in; NULL for home */
};

typedef struct {
    char *src; /* "content/a/img.png" */
    char *out; /* "a/img.png" */
} asset;

typedef struct {
    char *name; /* as written in front matter */
    char *slug; /* URL segment */
    char *url;  /* "/tags/<slug>/" */
    size_t *pages; /* indices into idx->pages, in listing order */
    size_t npages;
} tag;

typedef struct {
    page **pages;   /* sorted by src path; virtual pages by section */
    size_t npages;
    asset *assets;
    size_t nassets;
    tag *tags;      /* sorted by slug */
    size_t ntags;
    strmap by_url;  /* url -> page */
    strmap by_rel;  /* "a/b.md" -> page */
    strmap by_section; /* "a" -> section page */
    strmap assets_by_out; /* "a/img.png" -> asset */
    /* Listings, made once by content_load (in the parent, before workers
     * fork, so every page's template reads them without sorting anything):
     * by_date: every regular page, newest first;
     * kids[kids_at[i] .. kids_at[i + 1]): the pages listed under page i (a
     * section or home), in listing order; kid_parent[i]: the index of page
     * i's parent, kid_slot[i] page i's place in kids (SIZE_MAX for home);
     * sections: every section page, in page order;
     * menu: the top-level sections (content/<folder>), by weight, then
     * title, then URL: a site's menu, in the order templates show it. */
    size_t *by_date;
    size_t nby_date;
    size_t *kids;
    size_t *kids_at; /* npages + 1 */
    size_t *kid_parent;
    size_t *kid_slot;
    size_t *sections;
    size_t nsections;
    size_t *menu;
    size_t nmenu;
    strmap index_by_url; /* url -> position in pages + 1 */
} content_index;

typedef struct {
    bool drafts; /* include pages with draft: true */
    int threads; /* most threads that parse pages: 0 = build.jobs, else the online
                  * CPUs; 1 = all on the calling thread. Small sites use fewer, and
                  * so does a small limits.worker_memory (see content.c). */
    /* Incremental builds: fills what fm_parse_page would set for
     * p->src from the last build, when that file is unchanged; returns false
     * when it cannot (the file is then read and parsed). May be NULL; it
     * is called from several threads at once. */
    bool (*reuse)(void *ctx, page *p);
    void *reuse_ctx;
    /* NULL, or called (with reuse_ctx) once the parse threads are done and
     * before the index is made, which takes one core: a caller's thread can
     * have the other. */
    void (*parsed)(void *ctx);
} content_opts;

/* Loads <root>/content. Errors (with file:line:col) go to dl; the index is still
 * usable for reporting more errors. Returns 0 when no error was added.
 * Pages are read and parsed on threads that are joined before it returns, so
 * workers may be forked afterwards; the index, page order, diagnostics and
 * their order are the same for any number of threads. */
int content_load(content_index *idx, const char *root, const config *cfg,
                 const content_opts *opts, diag_list *dl);
void content_index_free(content_index *idx);

/* Pages listed under a section or home, in listing order (weight, then date
 * newest first, then title). Returns a malloc'ed array of indices; caller frees. */
size_t *content_children(const content_index *idx, const page *section, size_t *n);
/* Every regular page, newest first. Caller frees. */
size_t *content_by_date(const content_index *idx, size_t *n);
/* The same listings as read-only arrays of the index (idx->kids, by_date):
 * the pages listed under page i, *n of them. */
const size_t *content_kids(const content_index *idx, size_t i, size_t *n);
/* The page before and after page i in its parent's listing (SIZE_MAX for
 * none). */
size_t content_prev(const content_index *idx, size_t i);
size_t content_next(const content_index *idx, size_t i);
/* The position in idx->pages of the page at site path url ("/a/b/"), or
 * SIZE_MAX for none. */
size_t content_index_of(const content_index *idx, const char *url);
/* Makes the listings above; content_load calls it once its pages are final
 * (a caller that builds an index by hand calls it too, and frees them with
 * content_listings_free when it does not call content_index_free). */
void content_listings(content_index *idx);
void content_listings_free(content_index *idx);

/* What fm_parse_page (frontmatter.h) sets (title, dates, summary, slug, template,
 * tags, draft, weight, body position, front matter) as bytes, for the build
 * cache; content_page_decode sets those fields of p back (0), or leaves them
 * empty and returns -1 when the bytes are not well-formed. */
void content_page_encode(const page *p, buf *out);
int content_page_decode(page *p, const char *data, size_t len);

/* Slug of a tag or heading text: lower-case ASCII letters, digits, '-' and '_';
 * other ASCII dropped, spaces to '-', non-ASCII (CJK) kept as is. Caller frees. */
char *content_slugify(const char *text);
bool content_safe_segment(const char *s);

#endif
