/* Unit tests for gen/hostlib.c's read-only views, on a plain Lua state: a
 * view reads through to its table, refuses stores (naming the table), gives
 * its table's length and entries, and hides its metatable. The host
 * functions themselves need a sandbox and are tested in test_sandbox.c. */
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

#include "hostlib.h"

/* Runs code with `view` (a view of {10, 20, 30, x = 1} named "m") and
 * `real` (that table) as globals; returns its result as a string, or the
 * error message (in both cases owned by L's stack until the next call). */
static const char *S_run(lua_State *L, const char *code)
{
    lua_settop(L, 0);
    lua_newtable(L);
    int real = lua_gettop(L);
    for (int i = 1; i <= 3; i++) {
        lua_pushinteger(L, 10 * i);
        lua_rawseti(L, real, i);
    }
    lua_pushinteger(L, 1);
    lua_setfield(L, real, "x");
    lua_newtable(L);
    hostlib_push_view_meta(L, real, "m");
    lua_setmetatable(L, -2);
    lua_setglobal(L, "view");
    lua_setglobal(L, "real");
    if (luaL_loadstring(L, code) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK)
        return lua_tostring(L, -1);
    return luaL_tolstring(L, -1, NULL);
}

static void S_expect(lua_State *L, const char *code, const char *want)
{
    const char *got = S_run(L, code);
    if (strcmp(got, want) != 0)
        fail_msg("%s\n  gave \"%s\", expected \"%s\"", code, got, want);
}

static void test_view_reads_through(void **state)
{
    (void)state;
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    S_expect(L, "return view.x + view[2]", "21");
    S_expect(L, "return #view", "3");
    S_expect(L, "local n = 0 for k, v in pairs(view) do n = n + v end return n", "61");
    S_expect(L, "local n = 0 for _, v in ipairs(view) do n = n + v end return n", "60");
    S_expect(L, "real.x = 5 return view.x", "5"); /* a view, not a copy */
    lua_close(L);
}

static void test_view_refuses_stores(void **state)
{
    (void)state;
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    const char *e = S_run(L, "view.y = 1");
    assert_non_null(strstr(e, "module \"m\" is read-only: cannot set m.y"));
    S_expect(L, "pcall(function() view.x = 2 end) return real.x", "1");
    S_expect(L, "return getmetatable(view)", "locked");
    e = S_run(L, "setmetatable(view, nil)");
    assert_non_null(strstr(e, "cannot change a protected metatable"));
    /* rawset reaches the empty view only, never the table behind it */
    S_expect(L, "rawset(view, 'x', 9) return real.x", "1");
    lua_close(L);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_reads_through),
        cmocka_unit_test(test_view_refuses_stores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
