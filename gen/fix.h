/* fix: kvsite check --fix [--dry-run]. After a check, rewrites every failing
 * exact quote (`{= EXPR}`, computed or measured) in its page with the value
 * its expression gave, written as the quote writes its number (quote_restate:
 * same unit and spacing, same decimals, same thousands separator), and
 * leaves every other byte of the file as it was. Refuted, cited and
 * approximate quotes, quotes in units a page defined, and figures that gave
 * no number are never touched.
 *
 * A fix is made only where it is sure: the figure's error was reported at its
 * own page, line and column, the quote is found on that line as a figure
 * (after a backtick, before its brace; the n-th figure with that quote on the
 * line is the n-th such place), and the new quote passes the one quote rule
 * for the value. The tree is refused whole (exit 2, nothing written) when the
 * check found an error that is not at a figure that computed a value or
 * cites a source: a parse error, a Lua error, a broken link. Only files under content/ are written,
 * each atomically (a temporary file in the same folder, its mode kept, then a
 * rename), opened beneath the project without following symbolic links.
 *
 * Output: `path:line:col: fixed: 234,881,024 B -> 234,938,368 B` on o->out for
 * each quote, a summary on o->err; with dry_run a unified diff (a/ and b/
 * paths, as git apply reads) on o->out instead, and nothing is written. */
#ifndef KV_FIX_H
#define KV_FIX_H

#include <stdbool.h>
#include <stdio.h>

#include "buf.h"
#include "build.h"
#include "figure.h"

typedef struct {
    bool dry_run;
    FILE *out; /* the fixes, or the diff */
    FILE *err; /* notes and the summary */
} fix_opts;

/* A build_opts.after: 0 when every error of the check was fixed (or would be,
 * under dry_run), 1 when errors remain or a file could not be written, 2
 * when the tree was refused. ctx is a const fix_opts *. */
int fix_after_check(void *ctx, const build_result *r);

/* The quote f should have: its value restated as f's quote writes it.
 * Returns 0 with the new quote in out, or -1 with the reason (a static
 * string) in *why: not an exact computed or measured figure that failed on
 * its first value, a unit the page defined, a value too long for a quote. */
int fix_quote(const figure *f, buf *out, const char **why);

/* Finds the nth (0-based) figure quote q on line (1-based) of text[0..len):
 * q right after a backtick (spaces between allowed) and followed by spaces
 * and a brace. Returns its byte offset, or -1. */
long fix_locate(const char *text, size_t len, int line, const char *q, size_t nth);

/* Appends a unified diff of old and new, which have the same lines except
 * for changes within lines (what fixes make), with 3 lines of context and
 * the headers "--- a/REL" and "+++ b/REL". Nothing when they are equal. */
void fix_udiff(buf *out, const char *rel, const char *old, size_t olen, const char *new_,
               size_t nlen);

#endif
