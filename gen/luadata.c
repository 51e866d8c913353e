#include "luadata.h"

#include <lauxlib.h>
#include <limits.h>

void luadata_push_null(lua_State *L) { lua_pushlightuserdata(L, NULL); }

static void S_push_scalar(lua_State *L, const yv *v)
{
    switch (v->type) {
    case YV_BOOL: lua_pushboolean(L, v->b); break;
    case YV_INT: lua_pushinteger(L, (lua_Integer)v->i); break;
    case YV_FLOAT: lua_pushnumber(L, (lua_Number)v->f); break;
    case YV_STRING: lua_pushlstring(L, v->str ? v->str : "", v->len); break;
    default: luadata_push_null(L); break;
    }
}

static bool S_is_container(const yv *v) { return v && (v->type == YV_SEQ || v->type == YV_MAP); }

/* lines: the stack index of the line map, or 0 for none */
static void S_new_table(lua_State *L, const yv *v, int lines, int line_offset)
{
    int n = v->n > INT_MAX ? INT_MAX : (int)v->n; /* only a size hint */
    if (v->type == YV_SEQ)
        lua_createtable(L, n, 0);
    else
        lua_createtable(L, 0, n);
    if (lines) {
        lua_pushvalue(L, -1);
        lua_pushinteger(L, (lua_Integer)v->line + line_offset);
        lua_rawset(L, lines);
    }
}

/* A lua_CFunction run under lua_pcall; its argument is the tree as a light
 * userdata. Every open container has its table on the Lua stack, and a map's
 * child being built has its key just below it; the walk state lives in a
 * fixed array on the C stack, so an error raised by Lua leaks nothing. */
static int S_convert(lua_State *L)
{
    const yv *root = lua_touserdata(L, 1);
    int lines = lua_istable(L, 2) ? 2 : 0;
    int line_offset = (int)lua_tointeger(L, 3);
    struct {
        const yv *v;
        size_t next; /* index of the child being converted */
    } st[LUADATA_MAX_DEPTH];
    size_t depth = 0;

    if (!root || root->type == YV_NULL) {
        lua_pushnil(L);
        return 1;
    }
    luaL_checkstack(L, 5, NULL);
    if (!S_is_container(root)) {
        S_push_scalar(L, root);
        return 1;
    }
    S_new_table(L, root, lines, line_offset);
    st[depth].v = root;
    st[depth++].next = 0;
    while (depth) {
        const yv *p = st[depth - 1].v;
        size_t k = st[depth - 1].next;
        if (k == p->n) {
            /* done: store this table in its parent (stack: parent, [key], table) */
            if (--depth) {
                if (st[depth - 1].v->type == YV_MAP)
                    lua_rawset(L, -3);
                else
                    lua_rawseti(L, -2, (lua_Integer)st[depth - 1].next + 1);
                st[depth - 1].next++;
            }
            continue;
        }
        const yv *c = p->items[k];
        bool in_map = p->type == YV_MAP;
        if (in_map && (!c || c->type == YV_NULL)) {
            st[depth - 1].next++; /* a nil value: the key stays absent */
            continue;
        }
        luaL_checkstack(L, 5, NULL);
        if (in_map)
            lua_pushstring(L, p->keys[k]);
        if (S_is_container(c)) {
            if (depth == LUADATA_MAX_DEPTH)
                return luaL_error(L, "data nested deeper than %d levels", LUADATA_MAX_DEPTH);
            S_new_table(L, c, lines, line_offset);
            st[depth].v = c;
            st[depth++].next = 0;
            continue;
        }
        if (c)
            S_push_scalar(L, c);
        else
            luadata_push_null(L);
        if (in_map)
            lua_rawset(L, -3);
        else
            lua_rawseti(L, -2, (lua_Integer)k + 1);
        st[depth - 1].next++;
    }
    return 1;
}

int luadata_push(lua_State *L, const yv *v) { return luadata_push_lines(L, v, 0, 0); }

int luadata_push_lines(lua_State *L, const yv *v, int lines, int line_offset)
{
    if (lines)
        lines = lua_absindex(L, lines);
    lua_pushcfunction(L, S_convert);
    lua_pushlightuserdata(L, (void *)v); /* read only: S_convert never writes through it */
    if (lines)
        lua_pushvalue(L, lines);
    else
        lua_pushnil(L);
    lua_pushinteger(L, line_offset);
    return lua_pcall(L, 3, 1, 0) == LUA_OK ? 0 : -1;
}
