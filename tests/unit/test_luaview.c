/* Unit tests for gen/luaview.c: the read-only view mechanism (fields, items,
 * pairs, refusing writes) and views that expire with their owner. */
#include <lauxlib.h>
#include <lualib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "luaview.h"

typedef struct {
    lv_head h;
    int n;
} nums;

static bool S_item(lua_State *L, void *o, lua_Integer i)
{
    const nums *v = o;
    if (i < 1 || i > v->n)
        return false;
    lua_pushinteger(L, i * 10);
    return true;
}

static size_t S_len(const void *o) { return (size_t)((const nums *)o)->n; }

static const lv_kind S_NUMS = {"test.nums", "test.nums", NULL, 0, NULL, S_item, S_len};

typedef struct {
    lv_head h;
    const char *name;
} rec;

static const char *const S_KEYS[] = {"name", "unset", "size"};

static bool S_field(lua_State *L, void *o, int at, const char *k)
{
    (void)at;
    const rec *r = o;
    if (!strcmp(k, "name"))
        lua_pushstring(L, r->name);
    else if (!strcmp(k, "unset"))
        lua_pushnil(L);
    else if (!strcmp(k, "size"))
        lua_pushinteger(L, 3);
    else
        return false;
    return true;
}

static const lv_kind S_REC = {"test.rec", "a record", S_KEYS, 3, S_field, NULL, NULL};

/* Runs code with the views as globals v and r; returns its string result
 * or the error message (in out). */
static int S_run(lua_State *L, const char *code, char *out, size_t n)
{
    int rc = luaL_loadstring(L, code) || lua_pcall(L, 0, 1, 0);
    const char *s = lua_tostring(L, -1);
    snprintf(out, n, "%s", s ? s : "(nil)");
    lua_pop(L, 1);
    return rc;
}

static lua_State *S_state(uint64_t *live)
{
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    nums *v = lv_new(L, &S_NUMS, sizeof *v, 0, live);
    v->n = 3;
    lua_setglobal(L, "v");
    rec *r = lv_new(L, &S_REC, sizeof *r, 0, NULL);
    r->name = "x";
    lua_setglobal(L, "r");
    return L;
}

static void test_reads(void **state)
{
    (void)state;
    uint64_t live = 7;
    lua_State *L = S_state(&live);
    char out[256];
    assert_int_equal(S_run(L, "local s = '' for i, x in pairs(v) do s = s .. i .. '=' .. x .. ';' end "
                              "return #v .. ':' .. s .. tostring(v[4]) .. tostring(v.x)", out, sizeof out), 0);
    assert_string_equal(out, "3:1=10;2=20;3=30;nilnil");
    assert_int_equal(S_run(L, "local s = '' for k, x in pairs(r) do s = s .. k .. '=' .. x .. ';' end "
                              "return s .. tostring(r.nosuch) .. tostring(r[1])", out, sizeof out), 0);
    assert_string_equal(out, "name=x;size=3;nilnil");
    assert_int_equal(S_run(L, "return getmetatable(v)", out, sizeof out), 0);
    assert_string_equal(out, "locked");
    assert_int_not_equal(S_run(L, "r.name = 'y'", out, sizeof out), 0);
    assert_non_null(strstr(out, "a record is read-only: cannot set name"));
    assert_int_not_equal(S_run(L, "return setmetatable(v, {})", out, sizeof out), 0);
    /* the C side tells kinds apart */
    lua_getglobal(L, "v");
    assert_non_null(lv_test(L, -1, &S_NUMS));
    assert_null(lv_test(L, -1, &S_REC));
    lua_pop(L, 1);
    lua_pushlightuserdata(L, &live);
    assert_null(lv_test(L, -1, &S_NUMS));
    lua_pop(L, 1);
    lua_close(L);
}

/* A view kept after its owner ended fails cleanly, in every way it is read;
 * a view that owns its data (live NULL) stays readable. */
static void test_expired(void **state)
{
    (void)state;
    uint64_t live = 1;
    lua_State *L = S_state(&live);
    char out[256];
    live++;
    const char *reads[] = {"return v[1]", "return #v", "for _ in pairs(v) do end", "v[1] = 2",
                           "return v.x"};
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++) {
        assert_int_not_equal(S_run(L, reads[i], out, sizeof out), 0);
        assert_non_null(strstr(out, "test.nums: kept from a page that has finished rendering"));
    }
    lua_getglobal(L, "v");
    assert_null(lv_test(L, -1, &S_NUMS));
    lua_pop(L, 1);
    assert_int_equal(S_run(L, "return r.name", out, sizeof out), 0);
    assert_string_equal(out, "x");
    lua_close(L);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads),
        cmocka_unit_test(test_expired),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
