/* markdown: one page's Markdown to HTML through cmark-gfm, with kvsite's pass
 * over the tree in document order: {lua} blocks run, figure spans are
 * evaluated and replaced by their markup, headings get unique ids and feed the
 * table of contents, links are rewritten (relative .md links become the target
 * page's URL) and collected for the link check, and prose is linted for
 * unverified figures.
 *
 * An md_ctx belongs to one worker (it holds the parser's extension list and
 * refers to the worker's sandbox); results belong to the caller. It also
 * holds the page arena (arena.h) that every cmark object of a page comes
 * from: md_render drops them all at once when it returns, after copying what
 * the result keeps, and the arena's chunks serve the next page. */
#ifndef KV_MARKDOWN_H
#define KV_MARKDOWN_H

#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "buf.h"
#include "config.h"
#include "content.h"
#include "diag.h"
#include "figure.h"
#include "sandbox.h"
#include "sources.h"

typedef struct md_ctx md_ctx;

typedef struct {
    int level;
    char *id;   /* unique within the page */
    char *text; /* plain text */
} md_heading;

typedef struct {
    char *target; /* site path with fragment, without the base path: "/a/b/#x" */
    int line, col;
    char *file;   /* where the link is written when not in the page's source
                     (a template): owned, or NULL */
} md_link;

typedef struct {
    buf html;
    md_heading *toc;
    size_t ntoc;
    md_link *links;
    size_t nlinks;
    char *summary;  /* plain text of the first paragraph, at most ~300 bytes */
    fig_ctx figs;   /* the page's figures */
} md_result;

typedef struct {
    const config *cfg;          /* base_path, unsafe_html, tolerance; may be NULL */
    const content_index *idx;   /* for .md links; NULL: links are left as written */
    const sources *src;
    sandbox *sb;                /* NULL: no figure evaluation (spans stay code) */
    bool unsafe;                /* raw HTML allowed */
    bool tagfilter;             /* GFM tagfilter: <script>, <style>, ... escaped even when unsafe */
    bool heading_ids;
    diag_level unverified;      /* level of the unverified-figure lint */
    bool page_markup;           /* a site's page: GFM footnotes, table alignment as
                                   style="text-align" (no obsolete align=), fenced
                                   code highlighted (highlight.h). Off for
                                   `kvsite render`, which prints what cmark-gfm
                                   prints (the spec examples compare with it) */
    const char *anchor_label;   /* non-NULL (with heading_ids): h2-h4 end with a
                                   permalink, <a class="anchor" href="#id"
                                   aria-label="anchor_label">#</a>, its name in
                                   the page's language; a string that outlives
                                   the md_ctx. NULL for `kvsite render` */
    bool fold_lints;            /* a page's raw-HTML and unverified-figure
                                   warnings past the first few become one
                                   (diag_fold); off under --strict, where
                                   they are errors and every one is listed */
} md_opts;

md_ctx *md_new(const md_opts *o);
void md_free(md_ctx *m);
/* What the arena of m's pages holds (arena.h), for the tests. */
void md_arena_stats(const md_ctx *m, arena_stats *s);

/* Renders text (len bytes, the body of file starting at line first_line) for
 * page p (may be NULL). Inline mode renders a paragraph's contents without the
 * <p> (markdown_inline). Everything in out is malloc'ed and owned by out; no
 * pointer into cmark's tree outlives the call. A call made from inside
 * another on the same m (Lua run by the page) leaves the arena to the outer
 * one. Returns 0, or -1 when errors were added to dl. */
int md_render(md_ctx *m, const page *p, const char *file, const char *text, size_t len,
              int first_line, int first_col, bool inline_mode, md_result *out, diag_list *dl);
void md_result_init(md_result *r);
void md_result_free(md_result *r);

#endif
