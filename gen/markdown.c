#include "markdown.h"

#include <cmark-gfm-core-extensions.h>
#include <cmark-gfm.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "highlight.h"
#include "strmap.h"
#include "url.h"
#include "utf8.h"

#define SUMMARY_MAX 300

/* The page arena: 256 KiB chunks (a page takes 20 to 60 times its size in
 * cmark objects: an ordinary page of a few KiB fits in one). The chunks a
 * page used are kept for the next, up to 16 MiB: a page with a table of a
 * few thousand rows takes several MiB, and memory handed back after each
 * page is faulted in again by the next one, a page fault per 4 KiB (12 us
 * each on the machines the bench runs on: 200 such pages built in 1.68 s
 * instead of 0.42 s). What is kept was touched by the page that used it,
 * so a worker's peak memory stays what it was. At most 64 MiB of chunks,
 * or an eighth of the worker's memory limit (a page of about 1 MiB); past
 * that cmark's blocks come from malloc, so a hostile page costs at most
 * that much more than before. */
#define ARENA_CHUNK ((size_t)256 << 10)
#define ARENA_KEEP ((size_t)16 << 20)
#define ARENA_CAP ((size_t)64 << 20)

static const char *const S_ext_names[] = {"table", "strikethrough", "autolink", "tagfilter",
                                          "tasklist"};
#define NEXT (sizeof S_ext_names / sizeof S_ext_names[0])

struct md_ctx {
    md_opts o;
    cmark_syntax_extension *ext[NEXT];
    arena *arena; /* every cmark object of the page being rendered */
    int depth;    /* md_render calls running: only the outermost resets */
};

/* cmark_mem's functions get no context, so they find the arena of the
 * md_render running on this thread here; set for the length of the call. */
static _Thread_local arena *S_arena;

static void *S_mem_calloc(size_t n, size_t size) { return arena_calloc(S_arena, n, size); }
static void *S_mem_realloc(void *p, size_t n) { return arena_realloc(S_arena, p, n); }
static void S_mem_free(void *p) { arena_release(S_arena, p); }

static cmark_mem S_mem = {S_mem_calloc, S_mem_realloc, S_mem_free};

md_ctx *md_new(const md_opts *o)
{
    /* registering is idempotent; main() also does it before forking workers */
    cmark_gfm_core_extensions_ensure_registered();
    md_ctx *m = xcalloc(1, sizeof *m);
    m->o = *o;
    for (size_t i = 0; i < NEXT; i++)
        m->ext[i] = cmark_find_syntax_extension(S_ext_names[i]);
    size_t cap = ARENA_CAP;
    if (o->cfg && o->cfg->limits.worker_memory && o->cfg->limits.worker_memory / 8 < cap)
        cap = o->cfg->limits.worker_memory / 8;
    m->arena = arena_new(ARENA_CHUNK, ARENA_KEEP, cap);
    return m;
}

void md_arena_stats(const md_ctx *m, arena_stats *s) { arena_get_stats(m->arena, s); }

void md_free(md_ctx *m)
{
    if (!m)
        return;
    arena_free(m->arena);
    free(m);
}

void md_result_init(md_result *r)
{
    memset(r, 0, sizeof *r);
    fig_ctx_init(&r->figs);
}

void md_result_free(md_result *r)
{
    buf_free(&r->html);
    for (size_t i = 0; i < r->ntoc; i++) {
        free(r->toc[i].id);
        free(r->toc[i].text);
    }
    free(r->toc);
    for (size_t i = 0; i < r->nlinks; i++) {
        free(r->links[i].target);
        free(r->links[i].file);
    }
    free(r->links);
    free(r->summary);
    fig_ctx_free(&r->figs);
    memset(r, 0, sizeof *r);
}

/* A fenced code block whose language highlight.h knows, as the HTML block
 * cmark would print with the tokens in spans; NULL to leave it to cmark
 * (another language, no language, or over highlight's bounds). */
static cmark_node *S_highlighted(cmark_node *n)
{
    const char *info = cmark_node_get_fence_info(n);
    const char *code = cmark_node_get_literal(n);
    if (!info || !code)
        return NULL;
    size_t ln = strcspn(info, " \t");
    if (ln == 0 || !hl_known(info, ln))
        return NULL;
    buf html = BUF_INIT;
    buf_puts(&html, "<pre><code class=\"language-");
    buf_put_html(&html, info, ln);
    buf_puts(&html, "\">");
    cmark_node *rep = NULL;
    if (hl_html(info, ln, code, strlen(code), &html)) {
        buf_puts(&html, "</code></pre>\n");
        rep = cmark_node_new_with_mem(CMARK_NODE_HTML_BLOCK, &S_mem);
        cmark_node_set_literal(rep, buf_cstr(&html));
    }
    buf_free(&html);
    return rep;
}

/* Copies a page's HTML, with tabindex="0" on the blocks that may scroll
 * sideways (code blocks and tables, at the start of a line as cmark prints
 * them): a keyboard can reach and scroll them. */
static void S_put_scrollable(buf *out, const char *h, size_t n)
{
    static const struct {
        const char *tag;
        size_t len;
    } open[] = {{"<pre", 4}, {"<table", 6}};
    size_t run = 0;
    const char *end = h + n;
    for (const char *line = h; line < end;) {
        size_t at = (size_t)(line - h), left = n - at;
        for (size_t k = 0; k < 2; k++) {
            size_t ol = open[k].len;
            if (left > ol && !memcmp(line, open[k].tag, ol) && (line[ol] == '>' || line[ol] == ' ')) {
                buf_put(out, h + run, at + ol - run);
                buf_puts(out, " tabindex=\"0\"");
                run = at + ol;
            }
        }
        const char *nl = memchr(line, '\n', left);
        line = nl ? nl + 1 : end;
    }
    buf_put(out, h + run, n - run);
}

/* ---------- links ---------- */

static bool S_has_scheme(const char *u)
{
    if (!((u[0] >= 'a' && u[0] <= 'z') || (u[0] >= 'A' && u[0] <= 'Z')))
        return false;
    for (const char *p = u + 1; *p; p++) {
        if (*p == ':')
            return true;
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '+' || *p == '-' || *p == '.'))
            return false;
    }
    return false;
}


/* Joins dir ("a/b", no slashes at the ends, "" for the root) and a relative
 * path, resolving "." and "..". Returns NULL when the path leaves the root. */
static char *S_resolve(const char *dir, const char *rel)
{
    buf b = BUF_INIT;
    buf_puts(&b, dir);
    const char *p = rel;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.')) {
            /* nothing */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (b.len == 0) {
                buf_free(&b);
                return NULL;
            }
            char *slash = strrchr(b.ptr, '/');
            buf_truncate(&b, slash ? (size_t)(slash - b.ptr) : 0);
        } else {
            if (b.len)
                buf_putc(&b, '/');
            buf_put(&b, p, n);
        }
        if (!e)
            break;
        p = e + 1;
    }
    bool dir_slash = rel[0] && rel[strlen(rel) - 1] == '/';
    if (dir_slash && b.len)
        buf_putc(&b, '/');
    return buf_detach(&b);
}

/* a, b and c (c may be NULL) joined, in one allocation; caller frees. Links
 * are many: no printf. */
static char *S_cat(const char *a, const char *b, const char *c)
{
    size_t an = strlen(a), bn = strlen(b), cn = c ? strlen(c) : 0;
    char *r = xmalloc(an + bn + cn + 1);
    memcpy(r, a, an);
    memcpy(r + an, b, bn);
    memcpy(r + an + bn, c ? c : "", cn);
    r[an + bn + cn] = '\0';
    return r;
}

typedef struct {
    md_ctx *m;
    const page *p;
    const char *file;
    diag_list *dl;
    md_result *out;
    size_t link_cap;
} walk_state;

static void S_add_link(walk_state *w, const char *target, int line, int col)
{
    md_result *r = w->out;
    if (r->nlinks == w->link_cap) {
        w->link_cap = w->link_cap ? w->link_cap * 2 : 16;
        r->links = xrealloc(r->links, w->link_cap * sizeof *r->links);
    }
    r->links[r->nlinks++] = (md_link){xstrdup(target), line, col, NULL};
}

/* Rewrites an internal link to its final URL and records it for checking. */
static void S_link(walk_state *w, cmark_node *n, int line, int col)
{
    const char *url = cmark_node_get_url(n);
    if (!url || !url[0] || !w->m->o.idx || S_has_scheme(url) || (url[0] == '/' && url[1] == '/'))
        return;
    const char *base = w->m->o.cfg ? w->m->o.cfg->base_path : "";
    size_t pathlen = strcspn(url, "?#");
    const char *rest = url + pathlen; /* "?q#frag" or "#frag" or "" */
    const char *frag = strchr(rest, '#');
    if (!frag)
        frag = "";
    char *target = NULL;
    char *final = NULL;
    if (pathlen == 0) {
        /* "#frag" on this page */
        target = S_cat(w->p ? w->p->url : "/", frag, NULL);
        final = NULL; /* keep as written */
    } else {
        char *path = url_percent_decode(url, pathlen);
        char *site = NULL;
        if (path[0] == '/') {
            site = xstrdup(path);
        } else {
            const char *dir = w->p && w->p->section ? w->p->section : "";
            char *res = S_resolve(dir, path);
            if (!res) {
                diag_error(w->dl, w->file, line, col, "link \"%s\" leaves the site", url);
                free(path);
                return;
            }
            size_t rn = strlen(res);
            if (rn > 3 && strcmp(res + rn - 3, ".md") == 0) {
                const page *tp = strmap_get(&w->m->o.idx->by_rel, res);
                if (!tp) {
                    diag_error(w->dl, w->file, line, col,
                               "broken link \"%s\": there is no page content/%s", url, res);
                    free(res);
                    free(path);
                    return;
                }
                site = xstrdup(tp->url);
            } else {
                site = S_cat("/", res, NULL);
            }
            free(res);
        }
        target = S_cat(site, frag, NULL);
        final = S_cat(base, site, rest);
        free(site);
        free(path);
    }
    S_add_link(w, target, line, col);
    if (final)
        cmark_node_set_url(n, final);
    free(target);
    free(final);
}

/* Links and images whose URL runs script or reads local files (see
 * url_safe, URL_MARKDOWN) are dropped in both modes, as cmark's safe mode
 * drops them: markdown.unsafe lets raw HTML through, never these. */
static void S_defuse_url(cmark_node *n)
{
    const char *u = cmark_node_get_url(n);
    if (u && !url_safe(u, URL_MARKDOWN))
        cmark_node_set_url(n, "");
}

/* True for the code points of CJK scripts and their punctuation, where a line
 * break in the source must not become a space in the page. */
static bool S_cjk(uint32_t cp)
{
    return (cp >= 0x2E80 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7AF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
           (cp >= 0xFF00 && cp <= 0xFFEF) || (cp >= 0x20000 && cp <= 0x2FFFF);
}

static uint32_t S_last_cp(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (!n)
        return 0;
    size_t i = n - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return utf8_decode((const unsigned char *)s + i, n - i);
}

static uint32_t S_first_cp(const char *s)
{
    if (!s || !*s)
        return 0;
    return utf8_decode((const unsigned char *)s, utf8_char_len((const unsigned char *)s));
}

/* Drops soft line breaks between two CJK characters: Chinese prose wrapped in
 * the source reads without stray spaces. */
static void S_join_cjk_lines(cmark_node **breaks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cmark_node *prev = cmark_node_previous(breaks[i]), *next = cmark_node_next(breaks[i]);
        if (!prev || !next || cmark_node_get_type(prev) != CMARK_NODE_TEXT ||
            cmark_node_get_type(next) != CMARK_NODE_TEXT)
            continue;
        if (S_cjk(S_last_cp(cmark_node_get_literal(prev))) &&
            S_cjk(S_first_cp(cmark_node_get_literal(next))))
            cmark_node_unlink(breaks[i]); /* its memory goes with the page's arena */
    }
}

/* Where the search for nodes without a position goes on from: a place in
 * the text and its line. It only moves forward while nodes come in document
 * order, so a long line of autolinks is searched once, not once per link. */
typedef struct {
    const char *at;
    const char *line_start; /* of at's line */
    int line;               /* of at */
} locate_cursor;

/* Finds where node n is written, from line `from` on (1-based, in text) and
 * not before the cursor when the cursor is on that line: code spans by their
 * literal, other nodes by their first text. */
static void S_locate(const char *text, size_t len, cmark_node *n, int from, locate_cursor *cur,
                     int *line, int *col)
{
    const char *needle = NULL;
    cmark_node *c = n;
    while (c && !needle) {
        cmark_node_type t = cmark_node_get_type(c);
        if (t == CMARK_NODE_TEXT || t == CMARK_NODE_CODE)
            needle = cmark_node_get_literal(c);
        c = cmark_node_first_child(c);
    }
    *line = from;
    *col = 1;
    if (!needle || !needle[0])
        return;
    const char *end = text + len;
    if (!cur->at || cur->line > from) {
        cur->at = cur->line_start = text;
        cur->line = 1;
    }
    while (cur->line < from && cur->at) {
        const char *nl = memchr(cur->at, '\n', (size_t)(end - cur->at));
        cur->at = cur->line_start = nl ? nl + 1 : NULL;
        cur->line++;
    }
    if (!cur->at)
        return;
    size_t nn = strlen(needle);
    for (const char *q = cur->at; q + nn <= end; q++) {
        if (memcmp(q, needle, nn) == 0) {
            for (const char *r = cur->at; r < q; r++)
                if (*r == '\n') {
                    cur->line++;
                    cur->line_start = r + 1;
                }
            cur->at = q;
            *line = cur->line;
            *col = (int)(q - cur->line_start) + 1;
            return;
        }
    }
}

/* ---------- the walk ---------- */

typedef struct {
    cmark_node *node;
    cmark_node *rep; /* what replaces it, made during the walk but linked after it */
    bool remove;     /* a {lua} block that shows nothing */
} edit;

static cmark_node *S_new_node(cmark_node_type t, const char *literal)
{
    cmark_node *n = cmark_node_new_with_mem(t, &S_mem);
    cmark_node_set_literal(n, literal);
    return n;
}

/* A figure as one raw HTML node: its markup around its quote, escaped as
 * cmark escapes text (& < > and "), so the page is what a text node between
 * two HTML nodes would make, with one node instead of three. The quote's
 * plain text rides along as the node's user data, for S_plain_text. */
static cmark_node *S_figure_node(const buf *enter, const buf *text, const buf *exit)
{
    buf html = BUF_INIT;
    buf_grow(&html, enter->len + 2 * text->len + exit->len);
    buf_put(&html, buf_cstr(enter), enter->len);
    const char *t = buf_cstr(text);
    size_t run = 0;
    for (size_t i = 0; i < text->len; i++) {
        const char *rep = t[i] == '&' ? "&amp;" : t[i] == '<' ? "&lt;" : t[i] == '>' ? "&gt;"
                          : t[i] == '"' ? "&quot;" : NULL;
        if (!rep)
            continue;
        buf_put(&html, t + run, i - run);
        buf_puts(&html, rep);
        run = i + 1;
    }
    buf_put(&html, t + run, text->len - run);
    buf_put(&html, buf_cstr(exit), exit->len);
    cmark_node *n = S_new_node(CMARK_NODE_HTML_INLINE, buf_cstr(&html));
    buf_free(&html);
    char *plain = S_mem.calloc(1, text->len + 1); /* goes with the page's arena */
    memcpy(plain, t, text->len);
    cmark_node_set_user_data(n, plain);
    return n;
}

static bool S_is_lua_cell(const char *info)
{
    if (!info)
        return false;
    while (*info == ' ')
        info++;
    if (strncmp(info, "{lua}", 5) != 0)
        return false;
    for (const char *p = info + 5; *p; p++)
        if (*p != ' ')
            return false;
    return true;
}

static void S_plain_text(cmark_node *n, buf *b)
{
    cmark_iter *it = cmark_iter_new(n);
    cmark_event_type ev;
    while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
        cmark_node *c = cmark_iter_get_node(it);
        if (ev != CMARK_EVENT_ENTER)
            continue;
        switch (cmark_node_get_type(c)) {
        case CMARK_NODE_TEXT:
        case CMARK_NODE_CODE:
            buf_puts(b, cmark_node_get_literal(c) ? cmark_node_get_literal(c) : "");
            break;
        case CMARK_NODE_SOFTBREAK:
        case CMARK_NODE_LINEBREAK: buf_putc(b, ' '); break;
        case CMARK_NODE_HTML_INLINE: /* a figure's: its quote (S_figure_node) */
            if (cmark_node_get_user_data(c))
                buf_puts(b, cmark_node_get_user_data(c));
            break;
        default: break;
        }
    }
    /* the iterator goes with the page's arena */
}

static void S_add_heading(walk_state *w, strmap *ids, int level, const char *text,
                          size_t *cap)
{
    md_result *r = w->out;
    char *slug = content_slugify(text);
    if (!slug[0]) {
        free(slug);
        slug = xstrdup("section");
    }
    /* ids maps an id to the next suffix to try for it, so thousands of equal
     * headings stay linear */
    char *id = xstrdup(slug);
    uintptr_t k = (uintptr_t)strmap_get(ids, slug);
    if (k) {
        do {
            free(id);
            id = xasprintf("%s-%lu", slug, (unsigned long)k++);
        } while (strmap_get(ids, id));
        strmap_put(ids, slug, (void *)k);
    } else {
        strmap_put(ids, slug, (void *)1);
    }
    if (!strmap_get(ids, id))
        strmap_put(ids, id, (void *)1);
    free(slug);
    if (r->ntoc == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        r->toc = xrealloc(r->toc, *cap * sizeof *r->toc);
    }
    r->toc[r->ntoc++] = (md_heading){level, id, xstrdup(text)};
}

/* A heading's permalink (md_opts.anchor_label): shown on hover and focus by
 * the theme; Pagefind leaves its "#" out of the heading's text (the table
 * of contents is made from the headings' text, never from this HTML). */
static void S_put_anchor(buf *b, const char *id, const char *label)
{
    buf_puts(b, "<a class=\"anchor\" href=\"#");
    buf_put_html(b, id, strlen(id));
    buf_puts(b, "\" aria-label=\"");
    buf_put_html(b, label, strlen(label));
    buf_puts(b, "\" data-pagefind-ignore>#</a>");
}

static void S_summary(md_result *r, cmark_node *para)
{
    buf b = BUF_INIT;
    S_plain_text(para, &b);
    if (b.len > SUMMARY_MAX) {
        size_t cut = SUMMARY_MAX;
        while (cut > 0 && ((unsigned char)b.ptr[cut] & 0xC0) == 0x80)
            cut--;
        buf_truncate(&b, cut);
        buf_puts(&b, "\xE2\x80\xA6");
    }
    r->summary = buf_detach(&b);
}

typedef struct {
    bool on;              /* walking emitted Markdown */
    cmark_node *stop;     /* the node after the last emitted one, or NULL */
    cmark_node *parent;   /* the block's parent: its exit ends the output too */
    int line, col;        /* the block's fence: where the output's problems are */
    size_t from;          /* the first diagnostic made in the output */
} S_asis;

/* The diagnostics made while walking a block's output, from a->from on: at
 * the block's fence, saying that they are about its output. */
static void S_asis_end(S_asis *a, diag_list *dl, const char *file)
{
    for (size_t i = a->from; i < dl->n; i++) {
        diag *d = &dl->v[i];
        if (!d->file || strcmp(d->file, file) != 0 || d->line != a->line)
            continue;
        char *msg = xasprintf("%s (in the output of the {lua} block)", d->msg);
        free(d->msg);
        d->msg = msg;
        d->col = a->col;
    }
    a->on = false;
}

/* Parses md (an asis block's output) as the page's Markdown is parsed and
 * puts its blocks right after the block node blk, for the walk to go through
 * like the page's own. Fills the region in *a; false when md made no blocks. */
static bool S_asis_insert(md_ctx *m, int options, cmark_node *blk, const buf *md, S_asis *a)
{
    cmark_parser *p = cmark_parser_new_with_mem(options, &S_mem);
    for (size_t i = 0; i < NEXT; i++)
        if (m->ext[i] && (m->o.tagfilter || strcmp(S_ext_names[i], "tagfilter") != 0))
            cmark_parser_attach_syntax_extension(p, m->ext[i]);
    cmark_parser_feed(p, md->ptr, md->len);
    cmark_node *sub = cmark_parser_finish(p); /* its memory goes with the page's arena */
    cmark_node *first = cmark_node_first_child(sub);
    if (!first)
        return false;
    a->stop = cmark_node_next(blk);
    a->parent = cmark_node_parent(blk);
    a->on = true;
    cmark_node *after = blk;
    for (cmark_node *c = first, *next; c; c = next) {
        next = cmark_node_next(c);
        cmark_node_unlink(c);
        cmark_node_insert_after(after, c);
        after = c;
    }
    return true;
}

/* The cmark part of md_render. Every cmark object (parser, tree, the nodes
 * made here, rendered strings) comes from the arena S_mem allocates from and
 * is dropped with it: nothing is freed one by one, and whatever the result
 * keeps is copied out (into malloc'ed strings and out->html). */
static void S_render(md_ctx *m, const page *p, const char *file, const char *text, size_t len,
                     int first_line, int first_col, bool inline_mode, md_result *out,
                     diag_list *dl)
{
    /* cmark renders with raw HTML on: kvsite's own markup (figures) travels in
     * HTML nodes, which GFM table cells accept where custom nodes are refused.
     * The author's raw HTML (unless markdown.unsafe) and dangerous URLs
     * (always) are then made safe by the walk below, exactly as cmark's safe
     * mode would print them. */
    int options = CMARK_OPT_DEFAULT | CMARK_OPT_UNSAFE;
    if (m->o.page_markup)
        options |= CMARK_OPT_FOOTNOTES | CMARK_OPT_TABLE_PREFER_STYLE_ATTRIBUTES;
    bool safe = !m->o.unsafe;
    cmark_parser *parser = cmark_parser_new_with_mem(options, &S_mem);
    for (size_t i = 0; i < NEXT; i++)
        if (m->ext[i] && (m->o.tagfilter || strcmp(S_ext_names[i], "tagfilter") != 0))
            cmark_parser_attach_syntax_extension(parser, m->ext[i]);
    cmark_parser_feed(parser, text, len);
    cmark_node *doc = cmark_parser_finish(parser);

    fig_ctx *fc = &out->figs;
    fc->sb = m->o.sb;
    fc->src = m->o.src;
    fc->file = file;
    fc->dl = dl;
    fc->unverified = m->o.unverified;
    fc->md = text;
    fc->md_len = len;
    fc->md_first_line = first_line;
    diag_fold_init(&fc->lint_fold, m->o.fold_lints);
    diag_fold raw_fold;
    diag_fold_init(&raw_fold, m->o.fold_lints);
    if (m->o.cfg) {
        fc->tolerance = m->o.cfg->tolerance;
        fc->base_path = m->o.cfg->base_path;
        fc->language = m->o.cfg->language;
    }

    walk_state w = {m, p, file, dl, out, 0};
    edit *edits = NULL;
    size_t nedits = 0, cap_edits = 0;
    int in_link = 0, depth = 0, last_line = 1;
    locate_cursor cursor = {NULL, NULL, 1};
    /* nesting cap: lists in quotes in lists... deeper than this is an attack */
    int max_depth = m->o.cfg ? m->o.cfg->limits.depth * 4 : 128;
    bool too_deep = false;
    bool summary_done = out->summary != NULL;
    cmark_node *first_para = NULL; /* summarised after the edits: figures read as quotes */
    cmark_node **headings = NULL, **breaks = NULL;
    size_t nheadings = 0, cap_headings = 0, nbreaks = 0, cap_breaks = 0;
    /* a figure's markup, reused from one figure to the next */
    buf en = BUF_INIT, tx = BUF_INIT, ex = BUF_INIT;

    /* the Markdown an asis {lua} block emitted, walked where the block was:
     * from the node after the block up to stop (or the parent's exit); its
     * positions are the block's, its nodes' own are in the emitted text */
    S_asis asis = {0};
    buf asis_md = BUF_INIT;

    cmark_iter *it = cmark_iter_new(doc);
    cmark_event_type ev;
    while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
        cmark_node *n = cmark_iter_get_node(it);
        cmark_node_type t = cmark_node_get_type(n);
        if (asis.on && ((ev == CMARK_EVENT_ENTER && n == asis.stop) ||
                        (ev == CMARK_EVENT_EXIT && n == asis.parent))) {
            S_asis_end(&asis, dl, file);
            fc->md = text;
        }
        int nl = cmark_node_get_start_line(n);
        int ncol = cmark_node_get_start_column(n);
        if (asis.on) {
            nl = 0;
        } else if (nl <= 0 && ev == CMARK_EVENT_ENTER) {
            /* cmark-gfm leaves no position on a paragraph cut short by a
             * table: find the node's text in the source after the last place */
            S_locate(text, len, n, last_line, &cursor, &nl, &ncol);
        }
        if (nl > 0)
            last_line = nl;
        int line = asis.on ? asis.line : nl + first_line - 1;
        int col = asis.on ? asis.col : ncol + (nl == 1 ? first_col - 1 : 0);
        if (ev == CMARK_EVENT_EXIT) {
            depth--;
            if (t == CMARK_NODE_LINK)
                in_link--;
            if (t == CMARK_NODE_HEADING) {
                if (nheadings == cap_headings)
                    headings = xrealloc(headings, (cap_headings = cap_headings ? cap_headings * 2 : 16) *
                                                      sizeof *headings);
                headings[nheadings++] = n;
            }
            if (t == CMARK_NODE_PARAGRAPH && !summary_done && !first_para &&
                cmark_node_get_type(cmark_node_parent(n)) == CMARK_NODE_DOCUMENT)
                first_para = n;
            continue;
        }
        if (ev != CMARK_EVENT_ENTER)
            continue;
        if (!too_deep && depth >= max_depth) {
            too_deep = true;
            diag_error(dl, file, line, col,
                       "Markdown nested deeper than %d levels (limits.depth × 4)", max_depth);
        }
        bool leaf = t == CMARK_NODE_TEXT || t == CMARK_NODE_CODE || t == CMARK_NODE_CODE_BLOCK ||
                    t == CMARK_NODE_HTML_BLOCK || t == CMARK_NODE_HTML_INLINE ||
                    t == CMARK_NODE_SOFTBREAK || t == CMARK_NODE_LINEBREAK ||
                    t == CMARK_NODE_THEMATIC_BREAK;
        if (!leaf) /* leaves get no EXIT event */
            depth++;
        edit e = {0};
        switch (t) {
        case CMARK_NODE_CODE_BLOCK:
            if (m->o.sb && S_is_lua_cell(cmark_node_get_fence_info(n))) {
                const char *code = cmark_node_get_literal(n);
                bool echo = false;
                size_t body = 0;
                e.node = n;
                if (asis.on) {
                    /* bounded: emitted Markdown cannot emit more */
                    diag_error(dl, file, line, col,
                               "the output of a {lua} block with output: asis cannot hold "
                               "{lua} blocks");
                    e.remove = true;
                    break;
                }
                buf_clear(&asis_md);
                fig_block(fc, code ? code : "", code ? strlen(code) : 0, line + 1, col, &echo,
                          &body, inline_mode ? NULL : &asis_md);
                if (asis_md.len && S_asis_insert(m, options, n, &asis_md, &asis)) {
                    asis.line = line;
                    asis.col = col;
                    asis.from = dl->n;
                    fc->md = NULL; /* the lint's columns: no source line to search */
                    cmark_iter_reset(it, n, CMARK_EVENT_ENTER); /* on into the output */
                }
                e.remove = !echo;
                if (echo) {
                    /* shown as plain Lua, without its cell options */
                    char *shown = xstrdup(code + body);
                    cmark_node_set_literal(n, shown);
                    free(shown);
                    cmark_node_set_fence_info(n, "lua");
                }
                if (!e.remove)
                    e.node = NULL;
            }
            if (!e.node && m->o.page_markup && (e.rep = S_highlighted(n)))
                e.node = n;
            break;
        case CMARK_NODE_CODE: {
            const char *lit = cmark_node_get_literal(n);
            size_t ln = lit ? strlen(lit) : 0;
            span_kind k = m->o.sb ? fig_classify(lit, ln) : SPAN_CODE;
            if (k == SPAN_CODE)
                break;
            buf_clear(&en);
            buf_clear(&tx);
            buf_clear(&ex);
            bool as_code = false;
            fig_span(fc, lit, ln, line, col, in_link > 0, &en, &tx, &ex, &as_code);
            e.node = n;
            if (as_code) {
                e.rep = S_new_node(CMARK_NODE_CODE, buf_cstr(&tx));
            } else if (k == SPAN_INLINE_LUA) {
                e.rep = S_new_node(CMARK_NODE_TEXT, buf_cstr(&tx));
            } else {
                /* <span ...><a ...> quote </a></span> */
                e.rep = S_figure_node(&en, &tx, &ex);
            }
            break;
        }
        case CMARK_NODE_LINK:
            in_link++;
            S_defuse_url(n);
            S_link(&w, n, line, col);
            break;
        case CMARK_NODE_IMAGE:
            S_defuse_url(n);
            S_link(&w, n, line, col);
            break;
        case CMARK_NODE_TEXT: {
            const char *lit = cmark_node_get_literal(n);
            if (!lit)
                break;
            if (m->o.sb)
                fig_lint_text(fc, lit, strlen(lit), line, col);
            break;
        }
        case CMARK_NODE_SOFTBREAK:
            if (nbreaks == cap_breaks)
                breaks = xrealloc(breaks, (cap_breaks = cap_breaks ? cap_breaks * 2 : 32) *
                                              sizeof *breaks);
            breaks[nbreaks++] = n;
            break;
        case CMARK_NODE_HTML_BLOCK:
        case CMARK_NODE_HTML_INLINE:
            if (safe) {
                if (m->o.idx && diag_fold_take(&raw_fold, line, col))
                    diag_warning(dl, file, line, col,
                                 "raw HTML is not emitted (set markdown.unsafe: true in "
                                 "site.yaml to allow it)");
                cmark_node_set_literal(n, "<!-- raw HTML omitted -->");
            }
            break;
        default: break;
        }
        if (e.node) {
            if (nedits == cap_edits) {
                cap_edits = cap_edits ? cap_edits * 2 : 16;
                edits = xrealloc(edits, cap_edits * sizeof *edits);
            }
            edits[nedits++] = e;
        }
    }

    if (asis.on)
        S_asis_end(&asis, dl, file);
    fc->md = text;
    buf_free(&asis_md);
    diag_fold_end(&raw_fold, dl, file, "place of raw HTML", "places of raw HTML");
    diag_fold_end(&fc->lint_fold, dl, file, "unverified figure", "unverified figures");

    /* tree edits: figures, inline values, {lua} blocks */
    for (size_t i = 0; i < nedits; i++) {
        edit *e = &edits[i];
        if (e->remove) {
            cmark_node_unlink(e->node);
            continue;
        }
        cmark_node_insert_before(e->node, e->rep);
        cmark_node_unlink(e->node);
    }
    free(edits);
    buf_free(&en);
    buf_free(&tx);
    buf_free(&ex);
    /* after the edits: a figure's quote is text by now */
    S_join_cjk_lines(breaks, nbreaks);
    free(breaks);
    if (first_para)
        S_summary(out, first_para);

    /* heading ids, in document order, after the edits, so figures read as their quote */
    strmap ids;
    strmap_init(&ids);
    size_t toc_cap = 0;
    for (size_t i = 0; i < nheadings; i++) {
        buf t = BUF_INIT;
        S_plain_text(headings[i], &t);
        S_add_heading(&w, &ids, cmark_node_get_heading_level(headings[i]), buf_cstr(&t), &toc_cap);
        buf_free(&t);
    }

    /* headings with ids: rendered by cmark, then wrapped in a custom block */
    cmark_llist *exts = cmark_parser_get_syntax_extensions(parser);
    if (m->o.heading_ids) {
        for (size_t i = 0; i < nheadings; i++) {
            cmark_node *h = headings[i];
            char *html = cmark_render_html_with_mem(h, options, exts, &S_mem);
            buf b = BUF_INIT;
            /* "<h2>..." -> "<h2 id=\"...\">..." */
            buf_put(&b, html, 3);
            buf_puts(&b, " id=\"");
            const char *id = out->toc[i].id;
            buf_put_html(&b, id, strlen(id));
            buf_putc(&b, '"');
            int level = cmark_node_get_heading_level(h);
            size_t hl = strlen(html);
            /* "...</h2>\n": the permalink goes before the end tag */
            if (m->o.anchor_label && level >= 2 && level <= 4 && hl >= 9 &&
                !strncmp(html + hl - 6, "</h", 3)) {
                buf_put(&b, html + 3, hl - 9);
                S_put_anchor(&b, id, m->o.anchor_label);
                buf_puts(&b, html + hl - 6);
            } else {
                buf_puts(&b, html + 3);
            }
            cmark_node *blk = cmark_node_new_with_mem(CMARK_NODE_CUSTOM_BLOCK, &S_mem);
            cmark_node_set_on_enter(blk, buf_cstr(&b));
            cmark_node_set_on_exit(blk, "");
            buf_free(&b);
            cmark_node_insert_before(h, blk);
            cmark_node_unlink(h);
        }
    }
    free(headings);
    strmap_free(&ids);

    char *html = cmark_render_html_with_mem(doc, options, exts, &S_mem);
    size_t hn = strlen(html);
    const char *h = html;
    if (inline_mode && hn >= 8 && strncmp(h, "<p>", 3) == 0 &&
        strcmp(h + hn - 5, "</p>\n") == 0 && !strstr(h + 3, "<p>")) {
        h += 3;
        hn -= 8;
    }
    if (m->o.idx)
        S_put_scrollable(&out->html, h, hn);
    else
        buf_put(&out->html, h, hn);
}

int md_render(md_ctx *m, const page *p, const char *file, const char *text, size_t len,
              int first_line, int first_col, bool inline_mode, md_result *out, diag_list *dl)
{
    size_t errors = dl->errors;
    size_t bad_at;
    const char *nul = memchr(text, '\0', len);
    bool bad_utf8 = !nul && !utf8_valid(text, len, &bad_at);
    if (nul || bad_utf8) {
        size_t at = nul ? (size_t)(nul - text) : bad_at;
        int bl = 1, bc = 1;
        utf8_position(text, at, &bl, &bc);
        if (nul)
            diag_error(dl, file, first_line + bl - 1, bl == 1 ? first_col + bc - 1 : bc,
                       "the file contains a NUL byte");
        else
            diag_error(dl, file, first_line + bl - 1, bl == 1 ? first_col + bc - 1 : bc,
                       "invalid UTF-8 (byte 0x%02x)", (unsigned char)text[at]);
        return -1;
    }
    arena *outer = S_arena;
    S_arena = m->arena;
    m->depth++;
    S_render(m, p, file, text, len, first_line, first_col, inline_mode, out, dl);
    /* a nested call (markdown_inline from Lua run by this page) must leave
     * the outer page's tree alone */
    if (--m->depth == 0)
        arena_reset(m->arena);
    S_arena = outer;
    return dl->errors == errors ? 0 : -1;
}
