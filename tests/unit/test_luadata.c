/* Unit tests for gen/luadata.c: yv trees pushed into a fresh Lua state. */
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

#include "buf.h"
#include "diag.h"
#include "luadata.h"
#include "yv.h"

static yv *yaml(const char *text)
{
    diag_list dl;
    diag_list_init(&dl);
    yv *v = yv_parse_yaml(text, strlen(text), NULL, "t.yaml", 0, &dl);
    if (!v)
        fail_msg("parse failed: %s", dl.n ? dl.v[0].msg : "?");
    diag_list_free(&dl);
    return v;
}

static lua_State *new_state(void)
{
    lua_State *L = luaL_newstate();
    assert_non_null(L);
    luaL_openlibs(L);
    return L;
}

/* Runs Lua that must not raise. */
static void run(lua_State *L, const char *code)
{
    if (luaL_dostring(L, code) != LUA_OK)
        fail_msg("Lua: %s", lua_tostring(L, -1));
}

static const char *doc = "name: llama\n"
                         "layers: 80\n"
                         "gib: 40.5\n"
                         "ok: true\n"
                         "none: ~\n"
                         "list: [1, ~, \"x\", 2.0, [a], false]\n"
                         "nested: {a: {b: [1, 2]}}\n"
                         "empty: []\n"
                         "emptymap: {}\n"
                         "big: 9223372036854775807\n";

static void test_push_from_c(void **state)
{
    (void)state;
    lua_State *L = new_state();
    lua_pushinteger(L, 7); /* something already on the stack stays put */
    yv *v = yaml(doc);
    assert_int_equal(luadata_push(L, v), 0);
    yv_free(v); /* the Lua value owns nothing of the tree */
    assert_int_equal(lua_gettop(L), 2);
    assert_int_equal(lua_tointeger(L, 1), 7);
    assert_int_equal(lua_type(L, 2), LUA_TTABLE);
    assert_int_equal(lua_getmetatable(L, 2), 0);

    assert_int_equal(lua_getfield(L, 2, "name"), LUA_TSTRING);
    assert_string_equal(lua_tostring(L, -1), "llama");
    lua_pop(L, 1);
    assert_int_equal(lua_getfield(L, 2, "layers"), LUA_TNUMBER);
    assert_true(lua_isinteger(L, -1));
    assert_int_equal(lua_tointeger(L, -1), 80);
    lua_pop(L, 1);
    assert_int_equal(lua_getfield(L, 2, "gib"), LUA_TNUMBER);
    assert_false(lua_isinteger(L, -1));
    assert_true(lua_tonumber(L, -1) == 40.5);
    lua_pop(L, 1);
    assert_int_equal(lua_getfield(L, 2, "ok"), LUA_TBOOLEAN);
    assert_true(lua_toboolean(L, -1));
    lua_pop(L, 1);
    assert_int_equal(lua_getfield(L, 2, "none"), LUA_TNIL);
    lua_pop(L, 1);
    assert_int_equal(lua_getfield(L, 2, "big"), LUA_TNUMBER);
    assert_true(lua_tointeger(L, -1) == INT64_MAX);
    lua_pop(L, 1);

    assert_int_equal(lua_getfield(L, 2, "list"), LUA_TTABLE);
    assert_int_equal(lua_rawlen(L, -1), 6);
    assert_int_equal(lua_rawgeti(L, -1, 2), LUA_TLIGHTUSERDATA);
    assert_null(lua_touserdata(L, -1));
    lua_pop(L, 1);
    assert_int_equal(lua_rawgeti(L, -1, 4), LUA_TNUMBER);
    assert_false(lua_isinteger(L, -1));
    lua_pop(L, 1);
    assert_int_equal(lua_rawgeti(L, -1, 5), LUA_TTABLE);
    assert_int_equal(lua_rawgeti(L, -1, 1), LUA_TSTRING);
    assert_string_equal(lua_tostring(L, -1), "a");
    lua_pop(L, 2);
    assert_int_equal(lua_rawgeti(L, -1, 6), LUA_TBOOLEAN);
    assert_false(lua_toboolean(L, -1));
    lua_pop(L, 2);

    /* exactly the non-null keys, nothing more */
    int keys = 0;
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        keys++;
        lua_pop(L, 1);
    }
    assert_int_equal(keys, 9);
    assert_int_equal(lua_gettop(L), 2);
    lua_close(L);
}

static void test_push_from_lua(void **state)
{
    (void)state;
    lua_State *L = new_state();
    yv *v = yaml(doc);
    assert_int_equal(luadata_push(L, v), 0);
    yv_free(v);
    lua_setglobal(L, "d");
    luadata_push_null(L);
    lua_setglobal(L, "null");
    run(L, "assert(d.name == 'llama')\n"
           "assert(math.type(d.layers) == 'integer' and d.layers == 80)\n"
           "assert(math.type(d.gib) == 'float' and d.gib == 40.5)\n"
           "assert(d.ok == true and d.none == nil)\n"
           "assert(#d.list == 6 and d.list[2] == null and d.list[3] == 'x')\n"
           "assert(d.list[2] ~= nil and d.list[6] == false)\n"
           "local n = 0 for _ in ipairs(d.list) do n = n + 1 end\n"
           "assert(n == 6)\n"
           "assert(math.type(d.list[4]) == 'float' and d.list[5][1] == 'a')\n"
           "assert(d.nested.a.b[2] == 2 and #d.nested.a.b == 2)\n"
           "assert(next(d.empty) == nil and next(d.emptymap) == nil)\n"
           "local keys = {} for k in pairs(d) do keys[#keys + 1] = k end\n"
           "table.sort(keys)\n"
           "assert(table.concat(keys, ',') == 'big,empty,emptymap,gib,layers,list,name,nested,ok',"
           " table.concat(keys, ','))\n");
    lua_close(L);
}

static void test_csv_rows(void **state)
{
    (void)state;
    const char *csv = "model,tokens,gib\nllama,4096,57.21\nqwen,,f16\n";
    diag_list dl;
    diag_list_init(&dl);
    yv *v = yv_parse_csv(csv, strlen(csv), NULL, "m.csv", &dl);
    assert_non_null(v);
    lua_State *L = new_state();
    assert_int_equal(luadata_push(L, v), 0);
    yv_free(v);
    lua_setglobal(L, "rows");
    run(L, "assert(#rows == 2)\n"
           "assert(rows[1].model == 'llama' and rows[1].tokens == 4096 and rows[1].gib == 57.21)\n"
           "assert(rows[2].tokens == nil and rows[2].gib == 'f16')\n"
           "local ok, err = pcall(function() return rows[2].tokens * 2 end)\n"
           "assert(not ok and err:find(\"field 'tokens'\"), err)\n");
    lua_close(L);
    diag_list_free(&dl);
}

static void test_scalar_roots(void **state)
{
    (void)state;
    lua_State *L = new_state();
    const char *texts[] = {"42", "2.5", "hello", "~", "false"};
    const int types[] = {LUA_TNUMBER, LUA_TNUMBER, LUA_TSTRING, LUA_TNIL, LUA_TBOOLEAN};
    for (size_t k = 0; k < 5; k++) {
        yv *v = yaml(texts[k]);
        assert_int_equal(luadata_push(L, v), 0);
        yv_free(v);
        assert_int_equal(lua_gettop(L), 1);
        assert_int_equal(lua_type(L, 1), types[k]);
        lua_settop(L, 0);
    }
    assert_int_equal(luadata_push(L, NULL), 0);
    assert_int_equal(lua_type(L, -1), LUA_TNIL);

    /* strings keep their length */
    yv s = {.type = YV_STRING, .str = "a\0b", .len = 3};
    assert_int_equal(luadata_push(L, &s), 0);
    size_t len = 0;
    const char *p = lua_tolstring(L, -1, &len);
    assert_int_equal(len, 3);
    assert_memory_equal(p, "a\0b", 3);
    lua_close(L);
}

/* A chain of depth nested one-item lists, built by hand: parsers stop far sooner. */
static yv *chain(int depth)
{
    yv *root = NULL, **slot = &root;
    for (int k = 0; k < depth; k++) {
        yv *v = xcalloc(1, sizeof *v);
        v->type = YV_SEQ;
        v->items = xmalloc(sizeof *v->items);
        v->items[0] = NULL;
        v->n = k + 1 < depth ? 1 : 0;
        *slot = v;
        slot = &v->items[0];
    }
    return root;
}

static void test_depth_cap(void **state)
{
    (void)state;
    lua_State *L = new_state();
    yv *v = chain(LUADATA_MAX_DEPTH);
    assert_int_equal(luadata_push(L, v), 0);
    yv_free(v);
    lua_setglobal(L, "deep");
    run(L, "local t, n = deep, 1 while t[1] do t, n = t[1], n + 1 end assert(n == 200, n)");

    v = chain(LUADATA_MAX_DEPTH + 1);
    lua_pushboolean(L, 1);
    assert_int_equal(luadata_push(L, v), -1);
    yv_free(v);
    assert_int_equal(lua_gettop(L), 2);
    assert_string_equal(lua_tostring(L, -1), "data nested deeper than 200 levels");
    lua_close(L);
}

/* A memory-capped allocator like the one pages run under. */
typedef struct {
    size_t used, limit;
} S_mem;

static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    S_mem *m = ud;
    if (!ptr)
        osize = 0; /* then osize is a type tag */
    if (nsize == 0) {
        free(ptr);
        m->used -= osize;
        return NULL;
    }
    if (nsize > osize && m->used + (nsize - osize) > m->limit)
        return NULL;
    void *p = realloc(ptr, nsize);
    if (p)
        m->used = m->used - osize + nsize;
    return p;
}

/* Memory errors at every point of a conversion come back as -1, never as a
 * longjmp through C, and leave the state usable (ASan checks for leaks). */
static void test_memory_errors(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    buf_puts(&b, "rows:\n");
    for (int k = 0; k < 300; k++)
        buf_printf(&b, "  - {model: m%d, tokens: %d, gib: %d.5, tags: [a, ~, c]}\n", k, k, k);
    yv *v = yaml(b.ptr);
    buf_free(&b);

    S_mem m = {0, SIZE_MAX};
    lua_State *L = lua_newstate(capped_alloc, &m);
    assert_non_null(L);
    luaL_openlibs(L);
    lua_gc(L, LUA_GCCOLLECT);
    int failures = 0, successes = 0;
    for (size_t extra = 0; extra < 400000; extra += 1500) {
        m.limit = m.used + extra;
        int rc = luadata_push(L, v);
        assert_int_equal(lua_gettop(L), 1);
        if (rc == 0) {
            successes++;
            assert_int_equal(lua_type(L, 1), LUA_TTABLE);
        } else {
            failures++;
            assert_string_equal(lua_tostring(L, 1), "not enough memory");
        }
        lua_settop(L, 0);
        m.limit = SIZE_MAX;
        lua_gc(L, LUA_GCCOLLECT);
    }
    assert_true(failures > 10);
    assert_true(successes > 10);
    assert_int_equal(luadata_push(L, v), 0);
    lua_setglobal(L, "d");
    run(L, "assert(#d.rows == 300 and d.rows[300].model == 'm299' and d.rows[1].tags[2] ~= nil)");
    yv_free(v);
    lua_close(L);
    assert_int_equal(m.used, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_from_c),
        cmocka_unit_test(test_push_from_lua),
        cmocka_unit_test(test_csv_rows),
        cmocka_unit_test(test_scalar_roots),
        cmocka_unit_test(test_depth_cap),
        cmocka_unit_test(test_memory_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
