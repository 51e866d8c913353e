/* Unit tests for gen/luaorder.c: next and pairs in the same order in every run. */
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

#include "luaorder.h"

static int setup(void **state)
{
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    luaorder_push(L);
    lua_setglobal(L, "opairs");
    lua_setglobal(L, "onext");
    *state = L;
    return 0;
}

static int teardown(void **state)
{
    lua_close(*state);
    return 0;
}

static void run(lua_State *L, const char *code)
{
    if (luaL_dostring(L, code) != LUA_OK)
        fail_msg("%s\n-- in:\n%s", lua_tostring(L, -1), code);
}

/* Keys of every type come out sorted: numbers, strings by bytes, booleans. */
static void test_order(void **state)
{
    run(*state,
        "local t = {10, 20, 30, b = 1, a = 2, ['\\xe4\\xb8\\xad'] = 3, ['B'] = 4, [2.5] = 5,\n"
        "           [-1] = 6, [true] = 7, [false] = 8, [''] = 9, [math.huge] = 10, [1 << 60] = 11}\n"
        "local got = {}\n"
        "for k in opairs(t) do got[#got + 1] = tostring(k) end\n"
        "local want = '-1 1 2 2.5 3 1152921504606846976 inf  B a b \\xe4\\xb8\\xad false true'\n"
        "assert(table.concat(got, ' ') == want, table.concat(got, ' '))\n");
}

/* The same order whatever the insertion order and the table's history. */
static void test_insertion_order_does_not_matter(void **state)
{
    run(*state,
        "local function keys(t) local o = {} for k in opairs(t) do o[#o + 1] = k end return table.concat(o, ',') end\n"
        "local a, b = {}, {}\n"
        "for i = 1, 200 do a['k' .. i] = i end\n"
        "for i = 200, 1, -1 do b['k' .. i] = i end\n"
        "for i = 1, 100 do b['x' .. i] = i; b['x' .. i] = nil end\n"
        "assert(keys(a) == keys(b))\n");
}

/* Lua's rules during a traversal: fields may be changed or cleared. */
static void test_changes_during_traversal(void **state)
{
    run(*state,
        "local t = {a = 1, b = 2, c = 3, d = 4}\n"
        "local seen = {}\n"
        "for k, v in opairs(t) do\n"
        "  seen[#seen + 1] = k .. v\n"
        "  if k == 'a' then t.a = 10; t.c = nil end\n"
        "end\n"
        "assert(table.concat(seen, ' ') == 'a1 b2 d4', table.concat(seen, ' '))\n"
        /* next by hand, and a key the table does not hold */
        "assert(onext({}) == nil)\n"
        "local k, v = onext({x = 1, y = 2}, 'x')\n"
        "assert(k == 'y' and v == 2)\n"
        "assert(select('#', onext({x = 1}, 'x')) == 1)\n"
        "local ok, err = pcall(onext, {x = 1}, 'nope')\n"
        "assert(not ok and err:find(\"invalid key to 'next'\", 1, true), err)\n"
        /* two traversals of one table at once */
        "local u, n = {p = 1, q = 2}, 0\n"
        "for _ in opairs(u) do for _ in opairs(u) do n = n + 1 end end\n"
        "assert(n == 4)\n");
}

/* __pairs is honoured; a non-table without it is an error. */
static void test_metamethod(void **state)
{
    run(*state,
        "local p = setmetatable({}, {__pairs = function(t) return function(_, k) if not k then return 1, 'one' end end, t, nil end})\n"
        "local n = 0 for k, v in opairs(p) do n = n + 1 assert(k == 1 and v == 'one') end\n"
        "assert(n == 1)\n"
        "assert(not pcall(opairs, 5))\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_insertion_order_does_not_matter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_changes_during_traversal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metamethod, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
