/* Unit tests for gen/arith.c: arithmetic without Lua's compiler, on a plain
 * Lua state (no sandbox). Precedence, associativity (^ to the right), unary
 * minus, integer and float division and overflow as Lua gives them, names
 * read from the environment table, giving up (stack as it was) on anything
 * else, and blocks of assignments that change nothing unless all of the
 * block evaluates. Values are compared with what Lua's compiler gives on the
 * same text, bit for bit. (The sandbox's use of it, with the instruction
 * budget and the memory cap, is tested in test_sandbox.c.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "arith.h"
#include "buf.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The globals every test starts with. */
#define PRELUDE                                                                          \
    "a, b, f, z, nz, big = 6, 7, 2.5, 0, 0.0, math.maxinteger\n"                         \
    "s, t, w, yes = '10', {}, 'x', true\n"                                               \
    "n40_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 3\n"                                     \
    "n41_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 4\n"

typedef struct {
    lua_State *L;
    arith *a;
    int env_ref; /* the environment the evaluator reads, in the registry */
} fx;

static int S_open(lua_State *L)
{
    arith_open(lua_touserdata(L, 1), L);
    return 0;
}

/* A fresh environment holding PRELUDE's globals (and math, for it): the
 * registry's env_ref is replaced. */
static void S_new_env(fx *f)
{
    lua_State *L = f->L;
    lua_newtable(L);
    lua_getglobal(L, "math");
    lua_setfield(L, -2, "math");
    assert_int_equal(luaL_loadstring(L, PRELUDE), LUA_OK);
    lua_pushvalue(L, -2);
    lua_setupvalue(L, -2, 1);
    assert_int_equal(lua_pcall(L, 0, 0, 0), LUA_OK);
    lua_rawseti(L, LUA_REGISTRYINDEX, f->env_ref);
}

static int S_setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->L = luaL_newstate();
    luaL_openlibs(f->L);
    f->a = arith_new();
    lua_pushcfunction(f->L, S_open);
    lua_pushlightuserdata(f->L, f->a);
    if (lua_pcall(f->L, 1, 0, 0) != LUA_OK)
        return -1;
    lua_pushboolean(f->L, 0);
    f->env_ref = luaL_ref(f->L, LUA_REGISTRYINDEX);
    S_new_env(f);
    *state = f;
    return 0;
}

static int S_teardown(void **state)
{
    fx *f = *state;
    lua_close(f->L);
    arith_free(f->a);
    free(f);
    return 0;
}

/* One value as text: its type and, for numbers, subtype and bits. */
static void S_value(lua_State *L, int idx, buf *out)
{
    int t = lua_type(L, idx);
    buf_puts(out, lua_typename(L, t));
    if (t == LUA_TNUMBER && lua_isinteger(L, idx)) {
        buf_printf(out, " int %lld", (long long)lua_tointeger(L, idx));
    } else if (t == LUA_TNUMBER) {
        double d = lua_tonumber(L, idx);
        uint64_t bits;
        memcpy(&bits, &d, sizeof bits);
        buf_printf(out, " float %016llx", (unsigned long long)bits);
    } else if (t == LUA_TSTRING) {
        buf_printf(out, " %s", lua_tostring(L, idx));
    }
    buf_putc(out, ';');
}

/* Evaluates "return EXPR" with arith_expr: true with its values described
 * in out, false (checking that the stack is as it was) when it gave up. */
static bool S_fast(fx *f, const char *expr, buf *out)
{
    lua_State *L = f->L;
    buf code = BUF_INIT;
    buf_printf(&code, "return %s", expr);
    lua_pushliteral(L, "sentinel");
    int top = lua_gettop(L), n = -1;
    long long tokens = -1;
    bool ok = arith_expr(f->a, L, f->env_ref, code.ptr, code.len, &n, &tokens);
    buf_free(&code);
    if (!ok) {
        assert_int_equal(lua_gettop(L), top);
        assert_string_equal(lua_tostring(L, -1), "sentinel");
        lua_settop(L, 0);
        return false;
    }
    assert_int_equal(lua_gettop(L), top + n);
    assert_true(tokens > 0);
    for (int i = top + 1; i <= top + n; i++)
        S_value(L, i, out);
    assert_string_equal(lua_tostring(L, top), "sentinel");
    lua_settop(L, 0);
    return true;
}

/* What Lua's compiler gives on "return EXPR" in the same environment: its
 * values in out, or "error" when it raises. */
static void S_lua(fx *f, const char *expr, buf *out)
{
    lua_State *L = f->L;
    buf code = BUF_INIT;
    buf_printf(&code, "return %s", expr);
    int status = luaL_loadbufferx(L, code.ptr, code.len, "=expr", "t");
    buf_free(&code);
    if (status == LUA_OK) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, f->env_ref);
        lua_setupvalue(L, -2, 1);
        status = lua_pcall(L, 0, LUA_MULTRET, 0);
    }
    if (status != LUA_OK) {
        buf_puts(out, "error");
    } else {
        for (int i = 1; i <= lua_gettop(L); i++)
            S_value(L, i, out);
    }
    lua_settop(L, 0);
}

/* EXPR must be evaluated here, with the values Lua gives. */
static void S_same(fx *f, const char *expr)
{
    buf got = BUF_INIT, want = BUF_INIT;
    if (!S_fast(f, expr, &got))
        fail_msg("%s: given up, expected it evaluated", expr);
    S_lua(f, expr, &want);
    if (strcmp(got.ptr, want.ptr) != 0)
        fail_msg("%s: %s, Lua's %s", expr, got.ptr, want.ptr);
    buf_free(&got);
    buf_free(&want);
}

/* EXPR must be left to Lua. */
static void S_gives_up(fx *f, const char *expr)
{
    buf got = BUF_INIT;
    if (S_fast(f, expr, &got))
        fail_msg("%s: evaluated to %s, expected it left to Lua", expr, got.ptr);
    buf_free(&got);
}

/* EXPR must be evaluated to one integer (or float) of value want. */
static void S_number(fx *f, const char *expr, bool integer, double want)
{
    buf got = BUF_INIT, expect = BUF_INIT;
    assert_true(S_fast(f, expr, &got));
    lua_State *L = f->L;
    if (integer)
        lua_pushinteger(L, (lua_Integer)want);
    else
        lua_pushnumber(L, want);
    S_value(L, -1, &expect);
    lua_pop(L, 1);
    if (strcmp(got.ptr, expect.ptr) != 0)
        fail_msg("%s: %s, expected %s", expr, got.ptr, expect.ptr);
    buf_free(&got);
    buf_free(&expect);
    S_same(f, expr);
}

/* ---- expressions ---------------------------------------------------------- */

static void test_precedence(void **state)
{
    fx *f = *state;
    S_number(f, "1+2*3", true, 7);
    S_number(f, "2*3+1", true, 7);
    S_number(f, "(1+2)*3", true, 9);
    S_number(f, "1+6%4", true, 3);
    S_number(f, "2*3^2", false, 18);
    S_number(f, "1-2^2", false, -3);
    S_number(f, "10-6//4", true, 9);
    S_number(f, "1+2*3^2/4//1%5-6", false, -1);
    S_number(f, "((((1))))", true, 1);
    S_number(f, "\t1 +\n 2 \r\f\v", true, 3);
}

static void test_associativity(void **state)
{
    fx *f = *state;
    S_number(f, "10-4-3", true, 3);
    S_number(f, "100/10/5", false, 2);
    S_number(f, "7//2//2", true, 1);
    S_number(f, "100%7%4", true, 2);
    S_number(f, "2^3^2", false, 512); /* 2^(3^2), not (2^3)^2 */
    S_number(f, "2^-3^2", false, pow(2, -9));
    S_number(f, "2^a^-b", false, pow(2, pow(6, -7)));
}

static void test_unary_minus(void **state)
{
    fx *f = *state;
    S_number(f, "-2^2", false, -4); /* -(2^2): ^ binds tighter */
    S_number(f, "-(2)^2", false, -4);
    S_number(f, "(-2)^2", false, 4);
    S_number(f, "- - -1", true, -1);
    S_number(f, "3 - -2", true, 5);
    S_number(f, "2^-1", false, 0.5);
    S_number(f, "-a*b", true, -42);
    S_number(f, "-a^2", false, -36);
    S_number(f, "a+-b", true, -1);
    S_same(f, "-0.0");
    S_same(f, "0.0*-1");
    S_gives_up(f, "a--b"); /* a comment, for Lua */
    S_gives_up(f, "3--2");
}

/* Division, modulo and overflow: integers stay integers and wrap, / and ^
 * always give floats, // and % floor, and an integer division by zero is
 * Lua's error (left to it), a float one is not. */
static void test_division_and_overflow(void **state)
{
    fx *f = *state;
    S_number(f, "7/2", false, 3.5);
    S_number(f, "6/2", false, 3);
    S_number(f, "7//2", true, 3);
    S_number(f, "7.0//2", false, 3);
    S_number(f, "-7//2", true, -4);
    S_number(f, "7%-3", true, -2);
    S_number(f, "-7%3", true, 2);
    S_number(f, "-7.5%2", false, 0.5);
    S_number(f, "9223372036854775807+1", true, -9223372036854775807.0 - 1);
    S_number(f, "big*2", true, -2);
    S_number(f, "9223372036854775808", false, 9223372036854775808.0);
    S_number(f, "0xffffffffffffffff", true, -1); /* hex integers wrap */
    S_number(f, "1//0.0", false, INFINITY);
    S_number(f, "-7//0.0", false, -INFINITY);
    S_number(f, "1/0", false, INFINITY);
    S_number(f, "1e308*10", false, INFINITY);
    static const char *same[] = {"0/0", "-0/1", "5 % 0.0", "-5 % 0.0", "z/nz", "big//-1",
                                 "(-big-1)//-1", "(-big-1)%-1", "-big-2", "big%-2", "2^63",
                                 "2^1024", "0.1+0.2", "1/3", "3 % -2.5", "4 // -3.0",
                                 "18446744073709551616*2", "f//1", "f%1", "1 - 1.0"};
    for (size_t i = 0; i < N(same); i++)
        S_same(f, same[i]);
    static const char *lua_raises[] = {"1//0", "1%0", "a//z", "a%z", "-7%0"};
    for (size_t i = 0; i < N(lua_raises); i++)
        S_gives_up(f, lua_raises[i]);
}

static void test_numerals(void **state)
{
    fx *f = *state;
    static const char *same[] = {"0x10*2", "0xA", "0X1P-2", "0x1p4", "0x1e+1", "3.", ".5*2",
                                 "1.5e3", "1E+3", "1e-5", "08"};
    for (size_t i = 0; i < N(same); i++)
        S_same(f, same[i]);
    /* what Lua's lexer calls malformed is Lua's to report */
    static const char *malformed[] = {"2a", "3..2", "0x", "1e", "1e+", "0x1p", "1.2.3", "08x",
                                      ".0x1", "0x.p1"};
    for (size_t i = 0; i < N(malformed); i++)
        S_gives_up(f, malformed[i]);
}

/* Names are globals of the environment table, read raw; only numbers are
 * taken. */
static void test_names_from_env(void **state)
{
    fx *f = *state;
    S_number(f, "a*b", true, 42);
    S_number(f, "f*2", false, 5);
    S_number(f, "n40_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa*2", true, 6);
    S_same(f, "a, b, f, 1");
    /* nil, a string Lua would coerce, a table, a boolean */
    static const char *no_number[] = {"missing*2", "missing", "s*2", "s", "t", "yes+1", "w*2"};
    for (size_t i = 0; i < N(no_number); i++)
        S_gives_up(f, no_number[i]);
    /* not globals for Lua: reserved words, _ENV, names past Lua's short strings */
    static const char *not_global[] = {"and", "end+1", "nil", "true", "_ENV", "_ENV*2",
                                       "n41_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa*2",
                                       "\xc3\xa9"};
    for (size_t i = 0; i < N(not_global); i++)
        S_gives_up(f, not_global[i]);
    /* the page changes a global: the next evaluation reads the new value */
    lua_State *L = f->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->env_ref);
    lua_pushinteger(L, 60);
    lua_setfield(L, -2, "a");
    lua_pop(L, 1);
    S_number(f, "a*b", true, 420);
}

/* More names than the evaluator keeps as strings: each finds its own value. */
static void test_many_names(void **state)
{
    fx *f = *state;
    lua_State *L = f->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->env_ref);
    for (int i = 1; i <= 1000; i++) {
        lua_pushinteger(L, i);
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        lua_setfield(L, -2, name);
    }
    lua_pop(L, 1);
    for (int round = 0; round < 2; round++) {
        for (int i = 1; i <= 1000; i++) {
            char e[64];
            snprintf(e, sizeof e, "v%d * 2 + v%d", i, 1001 - i);
            S_number(f, e, true, 2.0 * i + 1001 - i);
        }
    }
}

/* An environment with a metatable could answer through __index: any name
 * makes the evaluator give up, numerals alone do not need it. So does an
 * environment that is no table. */
static void test_env_not_plain(void **state)
{
    fx *f = *state;
    lua_State *L = f->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->env_ref);
    lua_newtable(L);
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
    S_gives_up(f, "a*2");
    S_number(f, "1+2", true, 3);
    lua_pushinteger(L, 5);
    lua_rawseti(L, LUA_REGISTRYINDEX, f->env_ref);
    S_gives_up(f, "a*2");
    S_number(f, "2*3", true, 6);
}

/* Anything but arithmetic is left to Lua, the stack as it was. */
static void test_gives_up_on_other_text(void **state)
{
    fx *f = *state;
    static const char *other[] = {
        "a.b", "a[1]", "math.pi*2", "a:b()", "#t", "a<b", "a==b", "a and b", "a or b", "not a",
        "1 .. 2", "1 -- comment", "a~b", "a&b", "a|b", "a<<1", "a>>1", "~a", "1;", "[[x]]",
        "{}", "...", "function() end", "'a'", "\"10\"*2",
        "1 +", "(1", "1)", "(1,2)", "1,", ",1", "", " ", "a b", "1 2", "()", "-",
    };
    for (size_t i = 0; i < N(other); i++)
        S_gives_up(f, other[i]);
    /* the text must be "return EXPR", nothing looser */
    static const char *shapes[] = {"return(1)", "return\t1", " return 1", "return", "retur 1",
                                   "x = 1 return 1", "return 1 return 2"};
    lua_State *L = f->L;
    for (size_t i = 0; i < N(shapes); i++) {
        int n;
        long long tokens;
        assert_false(arith_expr(f->a, L, f->env_ref, shapes[i], strlen(shapes[i]), &n, &tokens));
        assert_int_equal(lua_gettop(L), 0);
    }
    int n;
    long long tokens;
    assert_false(arith_expr(f->a, L, f->env_ref, "return 1\0+1", 11, &n, &tokens));
    assert_false(arith_expr(f->a, L, f->env_ref, "return a\0", 9, &n, &tokens));
    assert_int_equal(lua_gettop(L), 0);
}

/* Bounds: operators pending at once, values of a list, the text's length
 * (ARITH_LEN), a numeral's. */
static void test_expr_bounds(void **state)
{
    fx *f = *state;
    buf e = BUF_INIT;
    for (int depth = 63; depth <= 66; depth++) {
        buf_clear(&e);
        for (int i = 0; i < depth; i++)
            buf_putc(&e, '(');
        buf_putc(&e, '1');
        for (int i = 0; i < depth; i++)
            buf_putc(&e, ')');
        if (depth <= 64)
            S_same(f, e.ptr);
        else
            S_gives_up(f, e.ptr);
    }
    buf_clear(&e);
    for (int i = 0; i < 64; i++)
        buf_puts(&e, i ? ",1" : "1");
    S_same(f, e.ptr);
    buf_puts(&e, ",1");
    S_gives_up(f, e.ptr);
    buf_clear(&e);
    buf_puts(&e, "1");
    while (e.len < ARITH_LEN)
        buf_puts(&e, e.len + 2 <= ARITH_LEN ? "+1" : " ");
    S_same(f, e.ptr);
    buf_putc(&e, ' ');
    S_gives_up(f, e.ptr);
    buf_clear(&e);
    buf_puts(&e, "1.");
    for (int i = 0; i < 62; i++)
        buf_putc(&e, '5');
    S_same(f, e.ptr); /* a numeral of 64 bytes */
    buf_putc(&e, '5');
    S_gives_up(f, e.ptr);
    buf_free(&e);
}

/* ---- blocks of assignments ------------------------------------------------ */

/* The environment's string-keyed globals, sorted, as text. */
static void S_globals(fx *f, buf *out)
{
    lua_State *L = f->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->env_ref);
    char *lines[256];
    size_t n = 0;
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) != LUA_TTABLE) {
            buf line = BUF_INIT;
            buf_printf(&line, "%s=", lua_tostring(L, -2));
            S_value(L, -1, &line);
            assert_true(n < N(lines));
            lines[n++] = buf_detach(&line);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    for (size_t i = 0; i < n; i++) { /* a few entries: insertion sort */
        for (size_t j = i; j > 0 && strcmp(lines[j - 1], lines[j]) > 0; j--) {
            char *x = lines[j];
            lines[j] = lines[j - 1];
            lines[j - 1] = x;
        }
    }
    for (size_t i = 0; i < n; i++) {
        buf_puts(out, lines[i]);
        buf_putc(out, '\n');
        free(lines[i]);
    }
}

/* Runs a block with arith_block then arith_block_store on a fresh
 * environment: true with the globals afterwards in out, false (checking
 * that the stack and the environment are as they were) when it gave up. */
static bool S_block_fast(fx *f, const char *code, size_t len, buf *out)
{
    lua_State *L = f->L;
    S_new_env(f);
    buf before = BUF_INIT;
    S_globals(f, &before);
    int base = lua_gettop(L), nstores = -1;
    long long tokens = -1;
    bool ok = arith_block(f->a, L, f->env_ref, code, len, &nstores, &tokens);
    if (!ok) {
        assert_int_equal(lua_gettop(L), base);
        buf after = BUF_INIT;
        S_globals(f, &after);
        assert_string_equal(after.ptr, before.ptr); /* nothing stored */
        buf_free(&after);
        buf_free(&before);
        return false;
    }
    buf_free(&before);
    assert_int_equal(lua_gettop(L), base + 1 + 2 * nstores);
    assert_true(tokens >= nstores);
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->env_ref);
    assert_true(lua_rawequal(L, -1, base + 1)); /* the environment comes first */
    lua_pop(L, 1);
    lua_pushcfunction(L, arith_block_store);
    lua_insert(L, base + 1);
    assert_int_equal(lua_pcall(L, 1 + 2 * nstores, 0, 0), LUA_OK);
    assert_int_equal(lua_gettop(L), base);
    S_globals(f, out);
    return true;
}

/* The globals after Lua ran the block on a fresh environment, or "error". */
static void S_block_lua(fx *f, const char *code, size_t len, buf *out)
{
    lua_State *L = f->L;
    S_new_env(f);
    int status = luaL_loadbufferx(L, code, len, "=block", "t");
    if (status == LUA_OK) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, f->env_ref);
        lua_setupvalue(L, -2, 1);
        status = lua_pcall(L, 0, 0, 0);
    }
    if (status != LUA_OK) {
        buf_puts(out, "error");
        lua_pop(L, 1);
        return;
    }
    S_globals(f, out);
}

static void S_block_same(fx *f, const char *code)
{
    buf got = BUF_INIT, want = BUF_INIT;
    if (!S_block_fast(f, code, strlen(code), &got))
        fail_msg("%s: given up, expected it run", code);
    S_block_lua(f, code, strlen(code), &want);
    if (strcmp(got.ptr, want.ptr) != 0)
        fail_msg("%s: globals\n%s\nLua's\n%s", code, got.ptr, want.ptr);
    buf_free(&got);
    buf_free(&want);
}

static void S_block_gives_up(fx *f, const char *code, size_t len)
{
    buf got = BUF_INIT;
    if (S_block_fast(f, code, len, &got))
        fail_msg("%.*s: run, expected it left to Lua", (int)len, code);
    buf_free(&got);
}

/* Lua's semantics of assignment: all values first, extra ones dropped,
 * missing ones nil, later statements reading earlier ones. */
static void test_block_same_as_lua(void **state)
{
    fx *f = *state;
    static const char *blocks[] = {
        "",
        "-- only a comment",
        "x = 1",
        "x, y = 1, 2",
        "a, b = b, a",
        "a, b, z = z, a, b",
        "x, y, w = 1",
        "a, b = 1",
        "x = 1, 2, 3",
        "x = 2\ny = x * 3\nx = y + x\nz = x // y",
        "a = a + 1\nb = a * b\na = a + b",
        "-- the model\nlayers, heads = 80, 8 -- trailing\nper = 2 * layers * heads",
        "x = 1; y = 2;;\n;z = x + y;",
        "x = 1 y = 2",
        "x\n=\n1\n,\n2",
        "x = 1 -- c\ry = x",
        "x = 7 // 2 y = 7 / 2 w = 7 % -3 v = -7.5 % 2 u = big + 1 q = 1e308 * 10",
        "-- [[ not a long comment\nx = 1",
    };
    for (size_t i = 0; i < N(blocks); i++)
        S_block_same(f, blocks[i]);
}

/* The store order is Lua's: the last name of a statement first. */
static void test_block_store_order(void **state)
{
    fx *f = *state;
    lua_State *L = f->L;
    const char *code = "x, y, w = 1, 2\nx = x + 1";
    int nstores;
    long long tokens;
    assert_true(arith_block(f->a, L, f->env_ref, code, strlen(code), &nstores, &tokens));
    assert_int_equal(nstores, 4);
    static const char *names[] = {"w", "y", "x", "x"};
    for (int i = 0; i < 4; i++)
        assert_string_equal(lua_tostring(L, 2 + 2 * i), names[i]);
    assert_true(lua_isnil(L, 3));           /* w: no value */
    assert_int_equal(lua_tointeger(L, 5), 2);  /* y */
    assert_int_equal(lua_tointeger(L, 7), 1);  /* x */
    assert_int_equal(lua_tointeger(L, 9), 2);  /* x = x + 1, reading the x above */
    lua_settop(L, 0);
}

/* All or nothing: a block that fails part-way, or holds anything else,
 * changes nothing (S_block_fast checks the globals and the stack). */
static void test_block_all_or_nothing(void **state)
{
    fx *f = *state;
    static const char *blocks[] = {
        "a = a + 1\nb = 2\nc = a // 0\n",
        "a = a + 1\nb = nothing * 2",
        "a = a + 1\nb = s * 2",
        "x, y = 1\nw = y + 1",
        "a = a + 1\nlocal q = 1",
        "x = 1 --[[ long ]] y = 2",
        "--[ short, but not read here\nx = 1",
        "x = 'str'",
        "x = s",
        "x = math.pi * 2",
        "print(1)",
        "x = {}",
        "a.b = 1",
        "x, x = 1, 2",
        "_ENV = 1",
        "and = 1",
        "return 1",
        "x = 1 return x",
        "x -- c\n = 1",
        "x, = 1",
        "x =",
        "x = 1 2",
        "1 = 2",
        "x = (1",
        "x = 1 == 2",
        "n41_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 3",
        "\xef\xbb\xbfx = 1",
    };
    for (size_t i = 0; i < N(blocks); i++)
        S_block_gives_up(f, blocks[i], strlen(blocks[i]));
    S_block_gives_up(f, "x = 1\0y = 2", 11);
    /* an environment with a metatable: Lua's stores could call __newindex */
    lua_State *L = f->L;
    lua_rawgeti(L, LUA_REGISTRYINDEX, f->env_ref);
    lua_newtable(L);
    lua_setmetatable(L, -2);
    lua_pop(L, 1);
    int nstores;
    long long tokens;
    assert_false(arith_block(f->a, L, f->env_ref, "x = 1", 5, &nstores, &tokens));
    assert_int_equal(lua_gettop(L), 0);
}

/* Bounds: names on one side, statements in a block, its length. */
static void test_block_bounds(void **state)
{
    fx *f = *state;
    buf c = BUF_INIT;
    for (int names = 31; names <= 33; names++) {
        buf_clear(&c);
        for (int i = 0; i < names; i++)
            buf_printf(&c, "%sv%d", i ? ", " : "", i);
        buf_puts(&c, " = 1, 2.5");
        if (names <= 32)
            S_block_same(f, c.ptr);
        else
            S_block_gives_up(f, c.ptr, c.len);
    }
    for (int sets = 127; sets <= 129; sets++) {
        buf_clear(&c);
        for (int i = 0; i < sets; i++)
            buf_printf(&c, "v%d = %d\n", i % 100, i);
        if (sets <= 128)
            S_block_same(f, c.ptr);
        else
            S_block_gives_up(f, c.ptr, c.len);
    }
    buf_clear(&c);
    buf_puts(&c, "x = 1");
    while (c.len < ARITH_BLOCK_LEN)
        buf_putc(&c, ' ');
    S_block_same(f, c.ptr);
    buf_putc(&c, ' ');
    S_block_gives_up(f, c.ptr, c.len);
    buf_free(&c);
}

#define T(f) cmocka_unit_test_setup_teardown(f, S_setup, S_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_precedence),
        T(test_associativity),
        T(test_unary_minus),
        T(test_division_and_overflow),
        T(test_numerals),
        T(test_names_from_env),
        T(test_many_names),
        T(test_env_not_plain),
        T(test_gives_up_on_other_text),
        T(test_expr_bounds),
        T(test_block_same_as_lua),
        T(test_block_store_order),
        T(test_block_all_or_nothing),
        T(test_block_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
