#include "luaorder.h"

#include <lauxlib.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { RANK_NUMBER, RANK_STRING, RANK_BOOLEAN, RANK_OTHER };

/* One key of the table being sorted; strings point into Lua strings that the
 * raw-order key list keeps alive while sorting. */
typedef struct {
    int rank;
    int isint;
    lua_Integer i;
    lua_Number n;
    const char *s;
    size_t len;
    lua_Integer raw; /* its place in Lua's own order: the last tie-break */
} key_desc;

static int S_cmp_numbers(const key_desc *a, const key_desc *b)
{
    if (a->isint && b->isint)
        return a->i < b->i ? -1 : a->i > b->i;
    lua_Number x = a->isint ? (lua_Number)a->i : a->n;
    lua_Number y = b->isint ? (lua_Number)b->i : b->n;
    if (x != y)
        return x < y ? -1 : 1;
    /* an integer beyond 2^53 and a float that rounds to it: the float first */
    return a->isint - b->isint;
}

static int S_cmp(const void *pa, const void *pb)
{
    const key_desc *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    int c = 0;
    switch (a->rank) {
    case RANK_NUMBER: c = S_cmp_numbers(a, b); break;
    case RANK_STRING: {
        size_t n = a->len < b->len ? a->len : b->len;
        c = memcmp(a->s, b->s, n);
        if (c == 0)
            c = a->len < b->len ? -1 : a->len > b->len;
        break;
    }
    case RANK_BOOLEAN: c = (int)a->i - (int)b->i; break;
    default: break;
    }
    return c ? c : (a->raw < b->raw ? -1 : a->raw > b->raw);
}

/* Pushes the snapshot of the table at index t: {k1, ..., kn, pos = {[k] = i}}. */
static void S_snapshot(lua_State *L, int t)
{
    lua_Integer n = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        n++;
    }
    if (n > 0x7ffffff)
        luaL_error(L, "table too large to traverse");
    lua_createtable(L, (int)n, 0); /* the keys in Lua's order */
    int raw = lua_gettop(L);
    key_desc *d = lua_newuserdatauv(L, (size_t)n * sizeof *d + 1, 0);
    int dslot = lua_gettop(L);
    lua_Integer k = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        key_desc *e = &d[k];
        memset(e, 0, sizeof *e);
        e->raw = ++k;
        switch (lua_type(L, -1)) {
        case LUA_TNUMBER:
            e->rank = RANK_NUMBER;
            e->isint = lua_isinteger(L, -1);
            if (e->isint)
                e->i = lua_tointeger(L, -1);
            else
                e->n = lua_tonumber(L, -1);
            break;
        case LUA_TSTRING:
            e->rank = RANK_STRING;
            e->s = lua_tolstring(L, -1, &e->len); /* kept alive by raw below */
            break;
        case LUA_TBOOLEAN:
            e->rank = RANK_BOOLEAN;
            e->i = lua_toboolean(L, -1);
            break;
        default:
            e->rank = RANK_OTHER;
            break;
        }
        lua_pushvalue(L, -1);
        lua_rawseti(L, raw, k);
    }
    qsort(d, (size_t)n, sizeof *d, S_cmp);
    lua_createtable(L, (int)n, 1);
    int snap = lua_gettop(L);
    lua_createtable(L, 0, (int)n);
    int pos = lua_gettop(L);
    for (lua_Integer j = 0; j < n; j++) {
        lua_rawgeti(L, raw, d[j].raw);
        lua_pushvalue(L, -1);
        lua_rawseti(L, snap, j + 1);
        lua_pushinteger(L, j + 1);
        lua_rawset(L, pos);
    }
    lua_setfield(L, snap, "pos");
    lua_replace(L, raw); /* the snapshot where the raw list was */
    lua_settop(L, raw);
    (void)dslot;
}

/* next(t [, k]) in the order above. Upvalue 1: weak-keyed t -> snapshot. */
static int S_next(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    int cache = lua_upvalueindex(1);
    lua_Integer i = 0;
    if (lua_isnil(L, 2)) {
        S_snapshot(L, 1); /* 3 */
        lua_pushvalue(L, 1);
        lua_pushvalue(L, 3);
        lua_rawset(L, cache);
    } else {
        lua_pushvalue(L, 1);
        lua_rawget(L, cache); /* 3 */
        bool found = false;
        for (int attempt = 0; attempt < 2 && !found; attempt++) {
            if (attempt == 1 || !lua_istable(L, 3)) {
                lua_settop(L, 2);
                S_snapshot(L, 1);
                lua_pushvalue(L, 1);
                lua_pushvalue(L, 3);
                lua_rawset(L, cache);
            }
            lua_getfield(L, 3, "pos");
            lua_pushvalue(L, 2);
            lua_rawget(L, -2);
            found = lua_isinteger(L, -1);
            i = lua_tointeger(L, -1);
            lua_pop(L, 2);
        }
        if (!found)
            return luaL_error(L, "invalid key to 'next'");
    }
    lua_Integer n = (lua_Integer)lua_rawlen(L, 3);
    while (++i <= n) {
        lua_rawgeti(L, 3, i); /* the key */
        lua_pushvalue(L, -1);
        if (lua_rawget(L, 1) != LUA_TNIL)
            return 2; /* key, value */
        lua_pop(L, 2);  /* cleared since the traversal began */
    }
    /* the traversal is over: its snapshot can go */
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    lua_rawset(L, cache);
    lua_pushnil(L);
    return 1;
}

/* pairs(t): __pairs as in Lua 5.4, else the ordered next. Upvalue 1: next. */
static int S_pairs(lua_State *L)
{
    luaL_checkany(L, 1);
    if (luaL_getmetafield(L, 1, "__pairs") != LUA_TNIL) {
        lua_pushvalue(L, 1);
        lua_call(L, 1, 3);
        return 3;
    }
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

void luaorder_push(lua_State *L)
{
    lua_newtable(L); /* t -> snapshot, weak in its keys */
    lua_createtable(L, 0, 1);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushcclosure(L, S_next, 1);
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, S_pairs, 1);
}
