/* sandbox: the Lua 5.4 state of a worker and the environment each page runs in.
 *
 * One sandbox per worker process. Every page gets a fresh environment table
 * (sandbox_page_begin) holding read-only views of the allowed libraries, its own module
 * instances from checks/NAME.lua and the host functions (require, data, print,
 * kvsite.*), so pages cannot see or change what another page sees. Allowed:
 * base (without dofile, loadfile, collectgarbage; load text-only; setmetatable
 * refusing __gc), string (without dump), table, math (random seeded the same for
 * every page), utf8. Nothing reads outside <root>/checks; nothing writes.
 *
 * Limits per page: an instruction budget that pcall cannot swallow (once spent,
 * every further instruction raises again) and a cap on the Lua heap. The parent
 * process adds a wall-clock deadline for what runs in C (patterns, string.rep).
 *
 * The budget is counted by a count hook, and while one is set Lua 5.4 calls
 * into its hook machinery on every instruction (a third of a template's cost).
 * A caller that can render a page twice lets pages run unmetered
 * (sandbox_set_unmetered): no hook, but a fuse (fuse.h) on the thread's CPU
 * time, set to what half the budget takes at SANDBOX_MAX_RATE, faster than
 * any machine runs Lua, with sandbox_charge's counts held to the other half.
 * A page that stays within both spent less than its budget, so it ends as it
 * would have metered. Past either, it is metered from there on what its CPU
 * time (or fuse_disarm's bound of it) at that rate and its charges leave of
 * the budget; ending within that,
 * it ends as it would have metered too. Hitting it, it may not be past its
 * budget, so it is cut (every Lua instruction fails from then on, as past
 * the budget) and must be rendered again: its work is thrown away, and the
 * next page begun is metered, so its limits hit where they always did.
 *
 * Errors: sandbox_run returns -1 and fills a sandbox_error whose line is the
 * line of the innermost frame that belongs to a page or template chunk, so a
 * Lua error on the third line of a block starting at line 40 reports line 42.
 *
 * The host functions are in hostlib.c, the arithmetic run without compiling
 * it in arith.c; their shared state in sandbox_internal.h. Only pointers to
 * lua_State appear here: users of the Lua API include lua.h themselves. */
#ifndef KV_SANDBOX_H
#define KV_SANDBOX_H

typedef struct lua_State lua_State; /* lua.h: users of the Lua API include it */
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "diag.h"
#include "quote.h"

typedef struct sandbox sandbox;

typedef struct {
    const char *root;        /* project root; modules and data come from root/checks */
    long long instructions;  /* budget per page */
    size_t memory;           /* Lua heap a page may use above the worker's baseline */
    size_t data_bytes;       /* cap on one file read by require() or data() */
    int depth;               /* nesting cap for data files */
} sandbox_opts;

typedef struct {
    char *file;   /* chunk the error was located in (owned), or NULL */
    int line;     /* 0 when unknown */
    char *msg;    /* owned; without the "file:line:" prefix of that chunk */
    bool limit;   /* the instruction budget or memory cap was hit */
} sandbox_error;

/* Returns NULL only if Lua cannot start (memory). */
sandbox *sandbox_new(const sandbox_opts *o);
/* The installed checks library (paths.h): require and data look there for a
 * file that root/checks does not have. dir NULL: none (the default). */
void sandbox_set_library(sandbox *sb, const char *dir);
void sandbox_free(sandbox *sb);
lua_State *sandbox_lua(sandbox *sb);

/* Starts a page: fresh environment, budgets reset, print() notes go to dl as
 * located at file. dl must outlive the page. */
void sandbox_page_begin(sandbox *sb, const char *file, diag_list *dl);
void sandbox_page_end(sandbox *sb);

/* Lua VM instructions per nanosecond that no machine reaches: each is a
 * load, a decode and an indirect jump, about one a cycle on the fastest
 * cores. The fuse of an unmetered page: half its budget at this rate. */
#define SANDBOX_MAX_RATE 10
/* Lets the pages begun from now on run unmetered (see above), or not. The
 * caller must then ask sandbox_take_rerun after every page. */
void sandbox_set_unmetered(sandbox *sb, bool on);
/* Settles the current page: true when it was cut (it must be rendered again:
 * nothing of it may be kept or written), false when it ran within its limits
 * (it is metered from here, on what they leave). Called once its Lua has
 * run, before its output is written; sandbox_page_end settles a page that
 * was not. */
bool sandbox_page_cut(sandbox *sb);
/* After a page's end: whether it was cut, once (the answer is cleared). */
bool sandbox_take_rerun(sandbox *sb);
/* From now on print() appends its line to out (at most cap bytes; more is
 * an error raised in the printing code) instead of making a note; NULL: back
 * to notes. For `--| output: asis` blocks. */
void sandbox_capture_print(sandbox *sb, buf *out, size_t cap);
/* Pushes the current page's environment table. */
void sandbox_push_env(sandbox *sb);
/* Pushes the environment its templates run in (made on first use in a page,
 * under the caller's pcall): fresh builtins, library views and kvsite of its
 * own, so nothing a page defined (a global `table`, `tostring`, `ipairs`,
 * `page`) can stand in for what templates call, and anything else read
 * from the page's environment. What templates define stays in it. */
void sandbox_push_template_env(sandbox *sb);
/* The default relative tolerance of approximate quotes that kvsite.quote_check
 * applies (figures.tolerance; 0.05 until set). */
void sandbox_set_tolerance(sandbox *sb, double tolerance);
/* The units the current page may quote in (built-ins plus kvsite.unit()). */
quote_unitset *sandbox_units(sandbox *sb);

/* Loads code as a text chunk named `file` whose first line is line first_line
 * of that file, runs it in the page environment and leaves its results on the
 * stack (*nres of them). Returns 0, or -1 with *err filled (free it with
 * sandbox_error_free) and nothing left on the stack. A block of nothing but
 * assignments of arithmetic to globals (`a, b = 80, 2*a`) runs without
 * compiling, with Lua's values, stores and order of stores; on anything else
 * Lua runs it. */
int sandbox_run(sandbox *sb, const char *code, size_t len, const char *file, int first_line,
                int *nres, sandbox_error *err);
/* The same for a one-line expression (code is "return EXPR") at file:line:
 * compiled once per worker and kept by its text, since pages repeat their
 * expressions; every position Lua reports in it is file:line. Plain
 * arithmetic over numerals and number globals is evaluated without
 * compiling, by Lua's own conversions and operators: the same values. */
int sandbox_eval(sandbox *sb, const char *code, size_t len, const char *file, int line, int *nres,
                 sandbox_error *err);
/* For tests: turns off (or back on) the evaluation of plain arithmetic
 * without compiling it (sandbox_eval's expressions, sandbox_run's blocks of
 * assignments), so its values can be compared with Lua's, and counts the
 * expressions and blocks it evaluated that way. */
void sandbox_set_arith(sandbox *sb, bool on);
unsigned long sandbox_arith_count(const sandbox *sb);
/* Calls the function below nargs arguments on the stack under the same error
 * handling; results as above. */
int sandbox_pcall(sandbox *sb, int nargs, int *nres, sandbox_error *err);
void sandbox_error_free(sandbox_error *err);

/* True once the page spent its instruction budget or memory: everything
 * after fails the same way, so callers stop instead of reporting it again. */
bool sandbox_exhausted(const sandbox *sb);
/* When the page hit a limit but its own pcall caught the error (so nobody
 * reported it), the message to report; NULL otherwise. A limit is an error
 * of the page whatever the page does with it. */
const char *sandbox_swallowed_limit(const sandbox *sb);

/* Figure tiers: sandbox_figure_begin() clears the record, then evaluation runs;
 * sandbox_figure_measured() tells whether kvsite.measured() was called since
 * and returns its provenance text (owned by sb) in *prov. */
void sandbox_figure_begin(sandbox *sb);
bool sandbox_figure_measured(sandbox *sb, const char **prov);

/* Files under checks/ that the current page read (require and data), for the
 * incremental cache: a NUL-separated list owned by sb. */
const buf *sandbox_page_inputs(sandbox *sb);

/* Converts the value at idx to text the way templates and inline figures show
 * it: strings as is, integers without a point, floats with %.14g, booleans,
 * nil as "". Never calls __tostring (a hostile metamethod could loop). Returns
 * false for tables, functions and other values (a message is put in out). */
bool sandbox_tostring(lua_State *L, int idx, buf *out);
/* Counts work C does for the page's Lua (a template loop rendered in C)
 * against its instruction budget. False, counting nothing, when that would
 * leave less than the next budget check (a page metered late: and it is
 * cut): the caller then lets Lua go on, which stops
 * at the budget where the Lua would have. */
bool sandbox_charge(sandbox *sb, long long instructions);
/* How sandbox_tostring shows a float (not an integer). */
void sandbox_put_float(buf *out, double d);

#endif
