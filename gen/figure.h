/* figure: verified figures inside Markdown code spans, Lua blocks, and the lint
 * that finds figures nobody verified.
 *
 *   `224 MiB {= EXPR}`        exact quote: EXPR, in the quote's unit, must round
 *                             to the quote at the quote's precision
 *   `40 GB {≈ EXPR}` `{~ E}`  approximate: within figures.tolerance (or {≈10% E})
 *   `224 MiB {= E1, E2}`      several values; each must agree
 *   `7.03× {cite key}`        cited: key must be in checks/sources.yaml
 *   `40 GB {≠ EXPR}` `{!= E}` refuted: a claim shown to be wrong; passes only
 *                             when the quote does NOT match EXPR by the exact
 *                             rule, fails ("the claim is right") when it does
 *   `40 GB {≉ EXPR}` `{!~ E}` refuted approximate claim: fails when within the
 *                             tolerance (or {≉10% E}), as {≈ E} would pass
 *   `40 GB {≠ E; cite key}`   a refuted claim with its source (sources.yaml)
 *   `{lua} EXPR`              the value of EXPR, shown as text
 *   `40 GB \{= E}`            shown as code, without the backslash
 *
 * A fig_ctx belongs to one page render; it collects every figure of the page
 * (owned by the ctx, released by fig_ctx_free) and adds diagnostics to dl.
 * A figure's strings are for reading: only fig_ctx_free releases them. The
 * figures fig_span makes keep all their strings in one allocation, f->block;
 * a figure made elsewhere (block NULL) owns each string on its own. Figures
 * may be moved (copied as structs) from one ctx or array to another. */
#ifndef KV_FIGURE_H
#define KV_FIGURE_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "diag.h"
#include "sandbox.h"
#include "sources.h"

typedef enum { FIG_COMPUTED, FIG_MEASURED, FIG_CITED, FIG_REFUTED } fig_tier;
#define FIG_TIERS 4 /* counts by tier: arrays of FIG_TIERS, [FIG_TIERS] the failed */

typedef struct {
    int line, col;
    char *quote;      /* as written: "224 MiB" */
    char *expr;       /* the Lua expression, or the cited key */
    char *mode;       /* "=", "≈5%", "cite", "≠", "!~" (as written) */
    fig_tier tier;
    bool ok;
    double value;     /* first value in base units; 0 for cited figures, NaN
                       * when the expression gave no number (a Lua error) */
    char *detail;     /* passing: "234,881,024 B = 224.0 MiB"; failing: the message */
    char *provenance; /* measured figures: where the value came from; refuted
                       * ones with a source: "claimed in KEY: title"; else "" */
    char *anchor;     /* id of the figure's row in the checks report */
    char *block;      /* the allocation that holds all the strings above, or
                       * NULL when each is its own (see fig_ctx_free) */
} figure;

typedef enum { SPAN_CODE, SPAN_INLINE_LUA, SPAN_FIGURE, SPAN_ESCAPED } span_kind;

typedef struct {
    sandbox *sb;
    const sources *src;
    double tolerance;          /* default relative tolerance of approximate quotes */
    const char *file;          /* the page's path, for diagnostics */
    /* anchor_prefix, base_path and report_url are escaped once and the result
     * kept for the next figures: set them before the first figure, or point
     * them at other strings; never change the text they point at meanwhile. */
    const char *anchor_prefix; /* unique per page: "articles-kv-check" */
    const char *base_path;     /* "" or "/docs": prefix of links to the report */
    const char *report_url;    /* the report page that lists these figures
                                * ("/docs/checks/notes/"); NULL: base_path/checks/ */
    size_t report_rows;        /* figures of each page on a part of that report page
                                * (paginate.h's paginate_rows_of); 0: one part */
    const char *language;      /* site.language: the words of the figures' details
                                * (figmark.h); NULL: English */
    diag_level unverified;     /* DIAG_WARNING, or DIAG_ERROR under --strict */
    diag_list *dl;
    figure *figs;
    size_t nfigs, cap;
    size_t anchor_base;        /* figures numbered before this ctx's first one */
    bool limit_reported;       /* report a spent budget once per page */
    int failed_block_line;     /* fence line of the last {lua} block that failed, or 0 */
    size_t dependents;         /* failures blamed on it since (reported: the first) */
    const char *md;            /* the Markdown the positions refer to (may be NULL) */
    size_t md_len;
    int md_first_line;         /* file line of md[0] */
    /* the lint's place in md: the start of line md_at_line (NULL: past the
     * end), for the md it was found in (none after fig_ctx_init); text
     * comes in document order, so the next figure's line is looked for
     * from here */
    const char *md_at_of, *md_at;
    int md_at_line;
    diag_fold lint_fold;       /* the lint's warnings past the first few (diag.h) */
    /* fig_span's own, kept across figures to save allocations: */
    buf tmp;                   /* the expression (or key) being checked */
    buf detail;                /* the figure's detail being written */
    buf href;                  /* the report row's URL up to the anchor's number, escaped */
    const char *href_of[3];    /* the report_url, base_path, anchor_prefix of href */
    size_t href_part;          /* and the report page's part */
    size_t prefix_len;         /* strlen(anchor_prefix) */
} fig_ctx;

void fig_ctx_init(fig_ctx *c);
/* Frees the figures (c->figs) and the ctx's buffers; c stays usable, with
 * no figures. */
void fig_ctx_free(fig_ctx *c);

/* Looks at a code span's literal. For SPAN_CODE nothing is to be done.
 * A {cite KEY} span whose text is not a number (`配置 {cite key}`) is a plain
 * citation: a link to the source, not a figure. */
span_kind fig_classify(const char *lit, size_t len);

/* Handles a code span of kind SPAN_INLINE_LUA, SPAN_FIGURE or SPAN_ESCAPED found
 * at line:col of c->file. Fills the HTML that replaces it: *enter and *exit
 * surround the text (to be escaped by the caller) in *text; for inline Lua and
 * escaped spans enter/exit stay empty (escaped spans: shown as code, *code set).
 * in_link: the span sits inside a link, so the figure must not add its own. */
void fig_span(fig_ctx *c, const char *lit, size_t len, int line, int col, bool in_link,
              buf *enter, buf *text, buf *exit, bool *code);

/* Runs a ```{lua} block whose first code line is line first_line. Handles the
 * leading `--| key: value` options (echo, eval, output). Sets *echo when the
 * code is to be shown, and *body to the offset of the code after the option
 * lines. With `--| output: asis` (Quarto's option) what the block prints is
 * appended to *asis, at most FIG_ASIS_MAX bytes: Markdown for the caller to
 * render in the block's place (nothing when the block fails). asis NULL: the
 * option is refused (where no Markdown can go). */
void fig_block(fig_ctx *c, const char *code, size_t len, int first_line, int col, bool *echo,
               size_t *body, buf *asis);
#define FIG_ASIS_MAX (1u << 20) /* bytes of Markdown one asis block may emit */

/* Reports numbers with byte, percent or ratio units in prose (text outside any
 * figure span) as unverified figures, at their line:col. */
void fig_lint_text(fig_ctx *c, const char *text, size_t len, int line, int col);

const char *fig_tier_name(fig_tier t);
/* Whether text may hold a figure: it has a figure's mark ("{=", "{≈", "{~",
 * "{cite") somewhere. A cheap scan, before any Markdown is parsed (false
 * means none; true may be a mark in a code block): the checks report's
 * pages count only these pages (paginate.h). */
bool fig_may_have(const char *text, size_t len);

/* Plain text of a short Markdown string for feeds and listings: figure spans
 * read as their quote, code spans and links as their text. Caller frees. */
char *fig_plain_text(const char *s);

#endif
