/* figdiff: kvsite check --diff OLD. Compares the figures of this check with
 * those of an earlier build (its checks.json, or its output folder holding
 * one) and lists every figure whose value, status or tier changed, that
 * appeared or that went away:
 *
 *   content/a.md:12:3: 224 MiB -> 232 MiB (kv.bytes(q, 4096))
 *   content/a.md:14:9: 40 GiB (kv.bytes(m, 131072)): pass -> fail
 *   content/a.md:20:1: new figure: 1.25 GiB (run_bytes())
 *   content/b.md:7:5: figure removed: 53.1% (acc(q))
 *
 * then one summary line. Values are written as each figure's quote writes
 * its number (quote_restate), with as many more decimals as it takes to tell
 * the two apart. Under GitHub Actions each line is also a workflow command:
 * ::warning for a figure that now fails or went away, ::notice otherwise.
 *
 * Figures are matched by page file, expression and occurrence (the n-th
 * figure of that expression in the file), never by line: lines move when
 * text is added above a figure, expressions rarely do. checks.json is
 * untrusted input: read beneath no link, at most FIGDIFF_MAX_BYTES, parsed by
 * yv_parse_json with bounded depth and node count. */
#ifndef KV_FIGDIFF_H
#define KV_FIGDIFF_H

#include <stdbool.h>
#include <stdio.h>

#include "build.h"
#include "buf.h"
#include "diag.h"
#include "figure.h"

#define FIGDIFF_MAX_BYTES (64u << 20)  /* checks.json of about 200,000 figures */
#define FIGDIFF_MAX_NODES 4000000u

/* One figure, either side; every string owned by the set. */
typedef struct {
    char *file, *quote, *expr, *tier;
    int line, col;
    bool ok;
    bool has_value; /* cited figures and figures without a number have none */
    double value;
} figdiff_fig;

typedef struct {
    figdiff_fig *v;
    size_t n, cap;
} figdiff_set;

void figdiff_set_free(figdiff_set *s);
/* Adds f of the page file (copied). */
void figdiff_add(figdiff_set *s, const char *file, const figure *f);
/* Adds the figures of checks.json text (name for diagnostics). 0, or -1 with
 * one error in dl (not JSON, not a checks.json, over a limit). */
int figdiff_load_json(figdiff_set *s, const char *text, size_t len, const char *name,
                      diag_list *dl);

typedef struct {
    size_t values, statuses, tiers; /* changed figures, by what changed */
    size_t changed, added, removed, same;
} figdiff_totals;

/* Compares old with new_ and prints a line per change to out (with GitHub
 * commands when github), in file and line order; fills *t. */
void figdiff_compare(const figdiff_set *old, const figdiff_set *new_, bool github, FILE *out,
                     figdiff_totals *t);

typedef struct {
    const char *old; /* a checks.json, or a folder that holds one */
    FILE *out;       /* the changes */
    FILE *err;       /* the summary, and why OLD cannot be read */
} figdiff_opts;

/* A build_opts.after: prints the changes against o->old; returns the check's
 * status, or 2 when OLD cannot be read. ctx is a const figdiff_opts *. */
int figdiff_after_check(void *ctx, const build_result *r);

#endif
