/* sandbox_internal: the state a sandbox shares between sandbox.c (the Lua
 * state, limits, environments, running code) and hostlib.c (the host
 * functions pages call). Included by those two files only: everyone else
 * goes through sandbox.h.
 *
 * Who owns what: sandbox_new allocates the struct and everything it points
 * to, sandbox_free releases all of it (the data files through hostlib_free).
 * Fields are written by the file named in their group's comment; sandbox.c
 * also resets the host functions' per-page and per-figure state when a page
 * or figure begins. */
#ifndef KV_SANDBOX_INTERNAL_H
#define KV_SANDBOX_INTERNAL_H

#include <lauxlib.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "arith.h"
#include "buf.h"
#include "diag.h"
#include "luaquote.h"
#include "quote.h"
#include "sandbox.h"
#include "strmap.h"

/* The chunk name of cached expressions (sandbox_eval): positions Lua gives
 * in it are replaced by the expression's own place. */
#define EXPR_CHUNK "(expression)"

#define POOL_CLASSES 20 /* the allocator's size classes: 16 of 16..256 bytes, 512, 1024, 2048, 4096 */

struct sandbox {
    /* ---- sandbox.c: the state, its limits and what runs in it ---- */
    lua_State *L;
    sandbox_opts o;
    char *root;

    size_t used, limit; /* Lua heap accounting */
    bool mem_hit, in_handler;
    bool limit_surfaced; /* a budget or memory error reached C (and was reported) */
    long long budget_left;
    bool budget_hit;
    /* unmetered pages (sandbox_set_unmetered): no count hook, a fuse instead */
    bool unmetered_ok;         /* the caller renders a cut page again */
    bool meter_next;           /* the next page is metered: the last one was cut */
    bool unmetered;            /* this page runs under the fuse, not yet settled */
    bool late;                 /* metered after running unmetered (S_meter_late) */
    volatile sig_atomic_t cut; /* set by the fuse (a signal) or a charge past its half */
    bool rerun;                /* the verdict: the page must be rendered again */
    long long charged;         /* unmetered: what sandbox_charge counted */
    size_t gc_baseline;

    int proto_ref, env_ref, libs_ref;
    int tenv_ref;        /* this page's templates' environment, once asked for */
    int exprs_ref;       /* the list of compiled expressions (sandbox_eval) */
    size_t nexprs;
    struct expr_slot *expr_slots; /* their index in the list by their text */
    int used_ref;        /* the ones the page ran, given its environment: taken
                          * back at its end, or the cache would keep thousands
                          * of dead pages alive (26 MiB at 10,000 pages) */
    size_t nused;
    int used_cap;        /* entries its array part holds */
    bool arith_off;          /* tests: always compile (arith_expr and arith_block off) */
    unsigned long arith_count; /* expressions and blocks run without compiling */
    arith *arith;              /* the evaluator of plain arithmetic (arith.h) */
    const char *expr_file; /* the expression being evaluated: its place */
    int expr_line;
    const char *page_file;
    diag_list *dl;

    char *err_file; /* set by the message handler */
    int err_line;

    void *pool_free[POOL_CLASSES]; /* free blocks by size class */
    char *region;                  /* the pool's memory, or NULL: all from malloc */
    size_t region_used;            /* bytes of it handed out at least once */

    /* ---- hostlib.c: what the host functions keep ---- */
    int checks_fd;     /* root/checks, opened without following links; -1: none */
    int library_fd;    /* the checks library (sandbox_set_library), searched second; -1: none */
    int loaded_ref;    /* require: this page's module instances by name */
    int modules_ref;   /* require: the compiled chunks of checks/NAME.lua, per worker */
    int kvsite_ref;       /* the kvsite table's functions: hostlib_open_kvsite */
    luaquote_ctx shared;  /* what kvsite.quote_check and friends read (luaquote.h) */
    quote_unitset *units; /* kvsite.unit: the page's units */
    bool measured;        /* kvsite.measured: called since sandbox_figure_begin */
    buf provenance;       /* and what it was told */
    int prints;           /* print: lines this page */
    buf *capture;         /* print's text goes here instead (an asis block), or NULL */
    size_t capture_cap;   /* bytes capture may reach */
    buf inputs;           /* require and data: files read, NUL-separated */
    strmap data_cache;    /* data: parsed files by path, per worker (hostlib_free) */
};

/* Replaces the table on top of the stack by the list {k1, v1, k2, v2, ...}
 * of its entries (sandbox.c), for tables every page gets a copy of. */
void sandbox_flatten(lua_State *L);

/* The sandbox of a Lua state: its allocator's user data. */
static inline sandbox *sandbox_of(lua_State *L)
{
    void *ud;
    lua_getallocf(L, &ud);
    return ud;
}

#endif
