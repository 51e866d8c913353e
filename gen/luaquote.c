#include "luaquote.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "luadata.h"

/* Every function has the context as its first upvalue (a light userdata:
 * the caller keeps the context alive as long as the state). */
static const luaquote_ctx *S_ctx(lua_State *L)
{
    return lua_touserdata(L, lua_upvalueindex(1));
}

static const quote_unitset *S_units(lua_State *L)
{
    const luaquote_ctx *c = S_ctx(L);
    return c->units ? c->units(c->ud) : NULL;
}

/* Raises msg (a buf the caller no longer needs) as a Lua error. The message
 * is copied to the C stack and the buf freed first, so the longjmp leaves
 * nothing behind (pushing it could itself fail at a page's memory cap). */
static int S_raise(lua_State *L, buf *msg)
{
    char text[512];
    snprintf(text, sizeof text, "%s", msg->ptr ? buf_cstr(msg) : "");
    buf_free(msg);
    lua_pushstring(L, text); /* no position: the message names its own place */
    return lua_error(L);
}

/* Pushes the text of b and frees it; b is freed before the push, which may
 * raise a memory error. */
static void S_push_buf(lua_State *L, buf *b)
{
    char text[512];
    snprintf(text, sizeof text, "%s", b->ptr ? buf_cstr(b) : "");
    buf_free(b);
    lua_pushstring(L, text);
}

/* Parses argument arg as a quote; on failure pushes nil and the message and
 * returns false. */
static bool S_parse_arg(lua_State *L, int arg, quote *q)
{
    size_t len;
    const char *s = luaL_checklstring(L, arg, &len);
    buf err = BUF_INIT;
    if (quote_parse(s, len, S_units(L), q, &err) == 0) {
        buf_free(&err);
        return true;
    }
    lua_pushnil(L);
    S_push_buf(L, &err);
    return false;
}

static int S_quote_check(lua_State *L)
{
    double value = luaL_checknumber(L, 1);
    double tol = luaL_optnumber(L, 3, S_ctx(L)->tolerance);
    if (!(tol >= 0))
        return luaL_argerror(L, 3, "tolerance must be a number >= 0");
    quote q;
    if (!S_parse_arg(L, 2, &q)) {
        lua_pushboolean(L, 0);
        lua_replace(L, -3); /* false, message */
        return 2;
    }
    buf msg = BUF_INIT;
    bool ok = quote_check(&q, NULL, value, false, tol, S_units(L), &msg);
    lua_pushboolean(L, ok);
    if (ok) {
        buf_free(&msg);
        return 1;
    }
    S_push_buf(L, &msg);
    return 2;
}

static int S_parse_quote(lua_State *L)
{
    quote q;
    if (!S_parse_arg(L, 1, &q))
        return 2;
    lua_createtable(L, 0, 7);
    lua_pushstring(L, q.text);
    lua_setfield(L, -2, "text");
    lua_pushboolean(L, q.approx);
    lua_setfield(L, -2, "approx");
    lua_pushnumber(L, q.number);
    lua_setfield(L, -2, "number");
    lua_pushinteger(L, q.decimals);
    lua_setfield(L, -2, "decimals");
    lua_pushstring(L, q.unit.name);
    lua_setfield(L, -2, "unit");
    lua_pushstring(L, quote_kind_name(q.unit.kind));
    lua_setfield(L, -2, "kind");
    lua_pushnumber(L, q.unit.scale);
    lua_setfield(L, -2, "scale");
    return 1;
}

/* An integral result that fits is an integer, as 224 * 2^20 reads in Lua. */
static void S_push_number(lua_State *L, double x)
{
    lua_Integer i;
    if (lua_numbertointeger(x, &i) && (double)i == x)
        lua_pushinteger(L, i);
    else
        lua_pushnumber(L, x);
}

static int S_unit_scale(lua_State *L)
{
    size_t len;
    const char *name = luaL_checklstring(L, 1, &len);
    const quote_unit *u = quote_units_find(S_units(L), name, len);
    if (!u) {
        lua_pushnil(L);
        return 1;
    }
    S_push_number(L, u->scale);
    lua_pushstring(L, quote_kind_name(u->kind));
    return 2;
}

static const quote_unit *S_unit_arg(lua_State *L, int arg)
{
    size_t len;
    const char *name = luaL_checklstring(L, arg, &len);
    buf err = BUF_INIT;
    const quote_unit *u = quote_units_lookup(S_units(L), name, len, &err);
    if (!u)
        S_raise(L, &err);
    buf_free(&err);
    return u;
}

static int S_to_unit(lua_State *L)
{
    double value = luaL_checknumber(L, 1);
    lua_pushnumber(L, quote_in_unit(S_unit_arg(L, 2), value));
    return 1;
}

static int S_from_unit(lua_State *L)
{
    double x = luaL_checknumber(L, 1);
    S_push_number(L, quote_from_unit(S_unit_arg(L, 2), x));
    return 1;
}

/* Under lua_pcall: fills the table at 2 with the CSV header of the tree at 1. */
static int S_fill_header(lua_State *L)
{
    const yv *tree = lua_touserdata(L, 1);
    const yv *row = tree->n > 0 ? tree->items[0] : NULL;
    for (size_t k = 0; row && k < row->n; k++) {
        lua_pushstring(L, row->keys[k]);
        lua_rawseti(L, 2, (lua_Integer)k + 1);
    }
    return 0;
}

/* kvsite.json / kvsite.csv. Pushes the value, the header (CSV only) and the
 * line map; returns how many. Every Lua allocation made while the tree is
 * alive runs under a pcall, so a memory error cannot leak the tree. */
static int S_decode(lua_State *L, bool csv)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    const char *name = luaL_optstring(L, 2, csv ? "<csv>" : "<json>");
    lua_Integer first = luaL_optinteger(L, 3, 1);
    luaL_argcheck(L, first >= 1 && first <= 1000000000, 3, "first line must be 1 to 1e9");
    int offset = (int)first - 1;
    lua_settop(L, 3);
    lua_newtable(L); /* 4: lines */
    lua_newtable(L); /* 5: header */
    diag_list dl;
    diag_list_init(&dl);
    const yv_limits *lim = &S_ctx(L)->limits;
    yv *tree = csv ? yv_parse_csv(text, len, lim, name, &dl)
                   : yv_parse_json(text, len, lim, name, &dl);
    if (!tree) {
        buf msg = BUF_INIT;
        const diag *d = dl.n ? &dl.v[0] : NULL;
        if (d && d->line > 0)
            buf_printf(&msg, "%s:%d:%d: %s", name, d->line + offset, d->col, d->msg);
        else
            buf_printf(&msg, "%s: %s", name, d ? d->msg : "cannot parse");
        diag_list_free(&dl);
        return S_raise(L, &msg);
    }
    diag_list_free(&dl);
    int rc = 0;
    if (csv) {
        lua_pushcfunction(L, S_fill_header);
        lua_pushlightuserdata(L, tree);
        lua_pushvalue(L, 5);
        rc = lua_pcall(L, 2, 0, 0);
    }
    if (rc == 0)
        rc = luadata_push_lines(L, tree, 4, offset); /* 6: the value */
    yv_free(tree);
    if (rc != 0)
        return lua_error(L);
    if (!csv) {
        lua_pushvalue(L, 4);
        return 2; /* value, lines */
    }
    lua_pushvalue(L, 5);
    lua_pushvalue(L, 4);
    return 3; /* rows, header, lines */
}

static int S_json(lua_State *L) { return S_decode(L, false); }
static int S_csv(lua_State *L) { return S_decode(L, true); }

void luaquote_push(lua_State *L, const luaquote_ctx *ctx)
{
    static const luaL_Reg fns[] = {
        {"quote_check", S_quote_check}, {"parse_quote", S_parse_quote},
        {"unit_scale", S_unit_scale},   {"to_unit", S_to_unit},
        {"from_unit", S_from_unit},     {"json", S_json},
        {"csv", S_csv},                 {NULL, NULL},
    };
    lua_createtable(L, 0, (int)(sizeof fns / sizeof fns[0]) - 1);
    lua_pushlightuserdata(L, (void *)ctx);
    luaL_setfuncs(L, fns, 1);
}
