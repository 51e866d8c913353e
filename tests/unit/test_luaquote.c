/* Unit tests for gen/luaquote.c: the quote rule, units, JSON and CSV as Lua sees them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "luaquote.h"

typedef struct {
    lua_State *L;
    quote_unitset *units;
    luaquote_ctx ctx;
} fixture;

static quote_unitset *S_units(void *ud) { return ((fixture *)ud)->units; }

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->units = quote_units_new();
    f->ctx.units = S_units;
    f->ctx.ud = f;
    f->ctx.tolerance = 0.05;
    f->ctx.limits = yv_default_limits;
    f->L = luaL_newstate();
    luaL_openlibs(f->L);
    luaquote_push(f->L, &f->ctx);
    lua_setglobal(f->L, "kvsite");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    lua_close(f->L);
    quote_units_free(f->units);
    free(f);
    return 0;
}

/* Runs Lua code that must not raise; the code asserts with assert(). */
static void run(fixture *f, const char *code)
{
    if (luaL_dostring(f->L, code) != LUA_OK)
        fail_msg("%s\n-- in:\n%s", lua_tostring(f->L, -1), code);
}

/* Runs code that must raise exactly msg. */
static void raises(fixture *f, const char *code, const char *msg)
{
    if (luaL_dostring(f->L, code) == LUA_OK)
        fail_msg("no error from: %s", code);
    const char *got = lua_tostring(f->L, -1);
    if (!got || strcmp(got, msg) != 0)
        fail_msg("error from %s\n  got: %s\n want: %s", code, got ? got : "(not a string)", msg);
    lua_pop(f->L, 1);
}

static void test_quote_check(void **state)
{
    fixture *f = *state;
    run(f, "assert(kvsite.quote_check(234881024, '224 MiB') == true)\n"
           "assert(kvsite.quote_check(1.005, '1.01'))\n"          /* the tie rule */
           "assert(kvsite.quote_check(0.125, '13%'))\n"
           "assert(kvsite.quote_check(-5, '\\u{2212}5'))\n"       /* U+2212 */
           "local ok, msg = kvsite.quote_check(0.125, '12%')\n"
           "assert(ok == false and msg == 'quoted 12%, but value = 12.50%; rounds to 13% (half away from zero)', msg)\n"
           "ok, msg = kvsite.quote_check(123.4, '1,23.4')\n"
           "assert(ok == false and msg:find('thousands groups must have 3 digits', 1, true), msg)\n"
           "assert(not kvsite.quote_check(40 * 2^30, '~40 GB'))\n"
           "assert(kvsite.quote_check(40 * 2^30, '~40 GB', 0.08))\n");
    /* the default tolerance is the context's (the site's figures.tolerance) */
    f->ctx.tolerance = 0.08;
    run(f, "assert(kvsite.quote_check(40 * 2^30, '~40 GB'))");
    raises(f, "kvsite.quote_check(1, '1', -1)",
           "[string \"kvsite.quote_check(1, '1', -1)\"]:1: bad argument #3 to 'quote_check' "
           "(tolerance must be a number >= 0)");
}

static void test_parse_quote(void **state)
{
    fixture *f = *state;
    run(f, "local q = kvsite.parse_quote('  ≈ 1,234.50 MiB ')\n"
           "assert(q.text == '≈ 1,234.50 MiB' and q.approx == true)\n"
           "assert(q.number == 1234.5 and q.decimals == 2 and q.unit == 'MiB')\n"
           "assert(q.kind == 'bytes' and q.scale == 1048576)\n"
           "local n, why = kvsite.parse_quote('1 furlong')\n"
           "assert(n == nil and why == 'unknown unit \"furlong\"', why)\n");
}

static void test_units(void **state)
{
    fixture *f = *state;
    run(f, "local s, k = kvsite.unit_scale('GiB')\n"
           "assert(s == 2^30 and math.type(s) == 'integer' and k == 'bytes')\n"
           "assert(kvsite.unit_scale('bit') == 0.125)\n"
           "assert(select(2, kvsite.unit_scale('%')) == 'fraction')\n"
           "assert(kvsite.unit_scale('gib') == nil)\n"
           "assert(kvsite.to_unit(0.53125, '%') == 53.125)\n"
           "assert(kvsite.to_unit(234881024, 'MiB') == 224)\n"
           "assert(math.type(kvsite.from_unit(224, 'MiB')) == 'integer')\n");
    raises(f, "kvsite.to_unit(1, 'gib')",
           "unknown unit \"gib\" (units are case-sensitive; did you mean GiB?)");
    /* units the page defines are units here too */
    assert_int_equal(quote_units_define(f->units, "page", 4096, "bytes", NULL), 0);
    run(f, "assert(kvsite.unit_scale('page') == 4096 and kvsite.to_unit(8192, 'page') == 2)");
}

static void test_json(void **state)
{
    fixture *f = *state;
    run(f, "local v, at = kvsite.json('[\\n{\"a\": 1, \"n\": null},\\n[2, null]\\n]', 'x.json')\n"
           "assert(at[v] == 1 and at[v[1]] == 2 and at[v[2]] == 3)\n"
           "assert(v[1].a == 1 and v[1].n == nil and #v[2] == 2)\n"
           "local _, at2 = kvsite.json('{\"a\": {}}', 'x.json', 10)\n"
           "local w = kvsite.json('{\"a\": {}}')\n"
           "assert(next(at2) ~= nil and w.a ~= nil)\n");
    raises(f, "kvsite.json('[1,\\n2 3]', 'm.json', 5)", "m.json:6:3: invalid JSON: expected ',' or ']'");
    raises(f, "kvsite.json(string.rep('[', 40))", "<json>:1:33: nesting deeper than 32 levels");
}

static void test_csv(void **state)
{
    fixture *f = *state;
    run(f, "local rows, header, at = kvsite.csv('# from a run\\nn,kv\\n4096,224\\n\\n16384,\\n', 'k.csv')\n"
           "assert(#header == 2 and header[1] == 'n' and header[2] == 'kv')\n"
           "assert(#rows == 2 and rows[1].n == 4096 and rows[1].kv == 224)\n"
           "assert(rows[2].kv == nil and at[rows[1]] == 3 and at[rows[2]] == 5)\n");
    raises(f, "kvsite.csv('a,b\\n1\\n', 't.csv')", "t.csv:2:1: CSV row has 1 cells, the header has 2");
}

/* JSON and CSV text is bounded by the context's limits, as data files are. */
static void test_limits(void **state)
{
    fixture *f = *state;
    f->ctx.limits.max_bytes = 16;
    raises(f, "kvsite.json('[1, 2, 3, 4, 5, 6, 7, 8]', 'big.json')",
           "big.json: file too large (24 bytes, limit 16)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_quote_check, setup, teardown),
        cmocka_unit_test_setup_teardown(test_parse_quote, setup, teardown),
        cmocka_unit_test_setup_teardown(test_units, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_csv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
