/* fuzz_arith: a differential target for the arithmetic kvsite evaluates
 * without Lua's compiler (arith.c, reached through sandbox.c: "return EXPR"
 * in sandbox_eval, blocks of assignments in sandbox_run). Each input runs
 * twice, in fresh page environments holding the same globals: once as
 * kvsite runs it, once with that evaluation off, so that Lua compiles and
 * runs everything. The two runs must agree on the return code, the error
 * (message and line), every value left on the stack and every global
 * afterwards: type, integer or float, and the bits of the number.
 *
 * The first byte picks the kind: 'e' or 'E' an expression (the rest is EXPR),
 * anything else a block (the rest is the block's code). */
#include <lauxlib.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "diag.h"
#include "fsutil.h"
#include "sandbox.h"

#define FILE_NAME "content/p.md"

static sandbox *S_sb;
static char *S_root; /* $TMPDIR/kvsite-fuzz-arith-XXXXXX */

static void S_cleanup(void)
{
    sandbox_free(S_sb);
    fs_remove_tree(S_root);
    free(S_root);
}

/* The page's globals before the code runs: numbers of both subtypes, and
 * values arithmetic must not take (a string that Lua coerces, a table). */
static const char S_globals[] =
    "a, b, c, n = 80, 8, 0, -3\n"
    "f, g, z = 2.5, 1e300, 0.0\n"
    "big, small = math.maxinteger, math.mininteger\n"
    "s, t, yes = '10', {}, true\n";

/* One value as text: its type and, for numbers, subtype and bits. */
static void S_value(lua_State *L, int idx, buf *out)
{
    int t = lua_type(L, idx);
    buf_puts(out, lua_typename(L, t));
    if (t == LUA_TNUMBER) {
        if (lua_isinteger(L, idx)) {
            buf_printf(out, " int %lld", (long long)lua_tointeger(L, idx));
        } else {
            double d = lua_tonumber(L, idx);
            uint64_t bits;
            memcpy(&bits, &d, sizeof bits);
            buf_printf(out, " float %016llx", (unsigned long long)bits);
        }
    } else if (t == LUA_TSTRING || t == LUA_TBOOLEAN) {
        buf_putc(out, ' ');
        buf_puts(out, lua_toboolean(L, idx) && t == LUA_TBOOLEAN ? "true"
                      : t == LUA_TBOOLEAN                        ? "false"
                                                                 : lua_tostring(L, idx));
    }
    buf_putc(out, '\n');
}

static int S_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The page environment's string-keyed entries, sorted by key. */
static void S_globals_text(lua_State *L, buf *out)
{
    sandbox_push_env(S_sb);
    int env = lua_gettop(L);
    size_t n = 0, cap = 64;
    char **lines = malloc(cap * sizeof *lines);
    lua_pushnil(L);
    while (lua_next(L, env)) {
        if (lua_type(L, -2) == LUA_TSTRING) {
            buf line = BUF_INIT;
            buf_puts(&line, lua_tostring(L, -2));
            buf_putc(&line, '=');
            S_value(L, -1, &line);
            if (n == cap)
                lines = realloc(lines, (cap *= 2) * sizeof *lines);
            lines[n++] = buf_detach(&line);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    qsort(lines, n, sizeof *lines, S_cmp_str);
    for (size_t i = 0; i < n; i++) {
        buf_puts(out, lines[i]);
        free(lines[i]);
    }
    free(lines);
}

/* Runs the input once, with kvsite's own evaluation on or off, and describes
 * everything it did in out. */
static void S_run(bool fast, bool expr, const char *code, size_t len, buf *out)
{
    lua_State *L = sandbox_lua(S_sb);
    diag_list dl;
    diag_list_init(&dl);
    sandbox_set_arith(S_sb, true); /* the set-up is the same both times */
    sandbox_page_begin(S_sb, FILE_NAME, &dl);
    int nres = 0;
    sandbox_error err;
    if (sandbox_run(S_sb, S_globals, sizeof S_globals - 1, FILE_NAME, 1, &nres, &err) != 0)
        abort();
    lua_pop(L, nres);
    sandbox_set_arith(S_sb, fast);
    nres = 0;
    int rc = expr ? sandbox_eval(S_sb, code, len, FILE_NAME, 7, &nres, &err)
                  : sandbox_run(S_sb, code, len, FILE_NAME, 7, &nres, &err);
    buf_printf(out, "rc %d\n", rc);
    if (rc != 0) {
        buf_printf(out, "error %s:%d: %s (limit %d)\n", err.file ? err.file : "-", err.line,
                   err.msg ? err.msg : "-", (int)err.limit);
        sandbox_error_free(&err);
    } else {
        for (int i = nres; i > 0; i--)
            S_value(L, -i, out);
        lua_pop(L, nres);
    }
    S_globals_text(L, out);
    sandbox_page_end(S_sb);
    diag_list_free(&dl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!S_sb) {
        const char *tmp = getenv("TMPDIR");
        S_root = fs_join(tmp && tmp[0] ? tmp : "/tmp", "kvsite-fuzz-arith-XXXXXX");
        if (!mkdtemp(S_root))
            abort();
        sandbox_opts o = {S_root, 1000000, 32u << 20, 1u << 20, 32};
        S_sb = sandbox_new(&o);
        if (!S_sb)
            abort();
        atexit(S_cleanup);
    }
    if (size == 0 || size > 8192)
        return 0;
    bool expr = data[0] == 'e' || data[0] == 'E';
    buf code = BUF_INIT;
    if (expr)
        buf_puts(&code, "return ");
    buf_put(&code, (const char *)data + 1, size - 1);
    buf fast = BUF_INIT, slow = BUF_INIT;
    S_run(true, expr, buf_cstr(&code), code.len, &fast);
    S_run(false, expr, buf_cstr(&code), code.len, &slow);
    if (strcmp(buf_cstr(&fast), buf_cstr(&slow)) != 0) {
        fprintf(stderr, "fuzz_arith: the two runs differ on\n%s\n--- evaluated by kvsite\n%s"
                        "--- compiled by Lua\n%s",
                buf_cstr(&code), buf_cstr(&fast), buf_cstr(&slow));
        abort();
    }
    buf_free(&code);
    buf_free(&fast);
    buf_free(&slow);
    return 0;
}
