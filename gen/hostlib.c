#include "hostlib.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "luadata.h"
#include "luaorder.h"
#include "luaquote.h"
#include "yv.h"

typedef struct {
    yv *tree;   /* parsed data file, or NULL for text */
    char *text; /* text files */
    size_t len;
} data_entry;

/* ---------- print ---------- */

static int S_current_line(lua_State *L, const char **file)
{
    sandbox *sb = sandbox_of(L);
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (lua_getinfo(L, "Sl", &ar) && ar.source[0] == '=' && strcmp(ar.what, "C") != 0) {
            if (strcmp(ar.source, "=" EXPR_CHUNK) == 0 && sb->expr_file) {
                if (file)
                    *file = sb->expr_file;
                return sb->expr_line;
            }
            if (file)
                *file = ar.source + 1;
            return ar.currentline;
        }
    }
    return 0;
}

#define PRINT_LINES_MAX 200 /* per page: print is for debugging, not a log flood */

/* print in a block with `--| output: asis`: its text is the block's output,
 * Markdown, one line per call. */
static int S_print_capture(lua_State *L, sandbox *sb)
{
    int n = lua_gettop(L);
    buf *b = sb->capture;
    for (int i = 1; i <= n; i++) {
        if (i > 1)
            buf_putc(b, '\t');
        sandbox_tostring(L, i, b);
        if (b->len > sb->capture_cap)
            break;
    }
    buf_putc(b, '\n');
    if (b->len > sb->capture_cap)
        return luaL_error(L, "the block's output is larger than %d bytes", (int)sb->capture_cap);
    return 0;
}

static int S_print(lua_State *L)
{
    sandbox *sb = sandbox_of(L);
    if (sb->capture)
        return S_print_capture(L, sb);
    if (++sb->prints > PRINT_LINES_MAX) {
        if (sb->prints == PRINT_LINES_MAX + 1 && sb->dl)
            diag_add(sb->dl, DIAG_NOTE, sb->page_file, S_current_line(L, NULL), 0,
                     "print: more than %d lines on this page; the rest is not shown",
                     PRINT_LINES_MAX);
        return 0;
    }
    int n = lua_gettop(L);
    buf b = BUF_INIT;
    for (int i = 1; i <= n; i++) {
        if (i > 1)
            buf_putc(&b, '\t');
        sandbox_tostring(L, i, &b);
        if (b.len > 4096) {
            buf_truncate(&b, 4096);
            buf_puts(&b, "...");
            break;
        }
    }
    if (sb->dl)
        diag_add(sb->dl, DIAG_NOTE, sb->page_file, S_current_line(L, NULL), 0, "print: %s",
                 buf_cstr(&b));
    buf_free(&b);
    return 0;
}

/* ---------- base functions, restricted ---------- */

/* The message handler of a page's xpcall, wrapped: once the budget or the
 * memory cap is spent, the error goes through untouched. Lua runs a handler
 * with hooks off when the error was raised by the count hook, so a looping
 * handler would otherwise escape the budget. */
static int S_xpcall_handler(lua_State *L)
{
    sandbox *sb = sandbox_of(L);
    if (sb->budget_hit || sb->mem_hit)
        return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static int S_xpcall(lua_State *L)
{
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, lua_upvalueindex(1)); /* the real xpcall */
    lua_insert(L, 1);
    lua_pushvalue(L, 3); /* the page's handler */
    lua_pushcclosure(L, S_xpcall_handler, 1);
    lua_replace(L, 3);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static int S_setmetatable(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL)
            return luaL_error(L, "setmetatable: __gc metamethods are not allowed here");
        lua_pop(L, 1);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* load(chunk [, chunkname [, mode [, env]]]): text only, env defaults to the page's. */
static int S_load(lua_State *L)
{
    sandbox *sb = sandbox_of(L);
    size_t len;
    const char *s = lua_tolstring(L, 1, &len);
    if (!s || lua_type(L, 1) != LUA_TSTRING)
        return luaL_error(L, "load: only a string chunk is accepted here");
    luaL_optstring(L, 2, NULL); /* a chunk name is accepted but not used: see below */
    const char *mode = luaL_optstring(L, 3, "t");
    if (strchr(mode, 'b'))
        return luaL_error(L, "load: binary chunks are not allowed");
    bool has_env = lua_gettop(L) >= 4;
    /* "@" keeps loaded chunks apart from page and template chunks ("="), so a
     * page cannot forge the location of its errors */
    int status = luaL_loadbufferx(L, s, len, "@(load)", "t");
    if (status != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (has_env)
        lua_pushvalue(L, 4);
    else
        sandbox_push_env(sb);
    if (!lua_setupvalue(L, -2, 1))
        lua_pop(L, 1);
    return 1;
}

/* ---------- files under checks/ ---------- */

static bool S_safe_relpath(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > 200 || p[0] == '/')
        return false;
    const char *seg = p;
    for (const char *c = p;; c++) {
        if (*c == '/' || *c == '\0') {
            if (c == seg || seg[0] == '.')
                return false; /* empty segment, ".", "..", dotfiles */
            if (*c == '\0')
                break;
            seg = c + 1;
            continue;
        }
        unsigned char u = (unsigned char)*c;
        if (!((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
              u == '-' || u == '_' || u == '.'))
            return false;
    }
    return true;
}

/* Opens rel under checks/ without following any symbolic link and without
 * "..", so nothing outside checks/ is reached (fs_open_beneath); a file that
 * is not there is looked for, by the same rules, in the installed checks
 * library (the search path: the site's checks/, then the library). Returns an
 * fd the caller reads with fs_read_fd and closes, or -1 with a reason in why. */
static int S_checks_open(sandbox *sb, const char *rel, const char **why)
{
    if (!S_safe_relpath(rel)) {
        *why = "not a plain relative path under checks/ (no \"..\", no absolute paths, no dotfiles)";
        return -1;
    }
    bool lib = sb->library_fd >= 0;
    if (sb->checks_fd < 0) {
        int fd = lib ? fs_open_beneath(sb->library_fd, rel, O_RDONLY) : -1;
        if (fd < 0)
            *why = lib ? "there is no checks/ folder, and the checks library has no such file"
                       : "there is no checks/ folder";
        return fd;
    }
    int fd = fs_open_beneath(sb->checks_fd, rel, O_RDONLY);
    if (fd < 0 && errno == ENOENT && lib) {
        fd = fs_open_beneath(sb->library_fd, rel, O_RDONLY);
        if (fd < 0)
            *why = "no such file under checks/ nor in the checks library";
        return fd;
    }
    if (fd < 0)
        *why = errno == ENOENT                    ? "no such file under checks/"
               : errno == ELOOP || errno == EXDEV ? "a symbolic link (nothing under checks/ is read through one): refused"
                                                  : "cannot be resolved";
    return fd;
}

static void S_note_input(sandbox *sb, const char *rel)
{
    /* a short list: avoid duplicates with a linear scan */
    const char *p = buf_cstr(&sb->inputs), *end = p + sb->inputs.len;
    while (p < end) {
        if (strcmp(p, rel) == 0)
            return;
        p += strlen(p) + 1;
    }
    buf_puts(&sb->inputs, rel);
    buf_putc(&sb->inputs, '\0');
}

/* ---------- read-only views of libraries and modules ---------- */

static int S_module_newindex(lua_State *L)
{
    const char *mod = lua_tostring(L, lua_upvalueindex(1));
    const char *key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?";
    return luaL_error(L, "module \"%s\" is read-only: cannot set %s.%s", mod, mod, key);
}

static int S_module_len(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)luaL_len(L, lua_upvalueindex(1)));
    return 1;
}

/* The iterator pairs(view) returns: the ordered next over the real table,
 * which stays an upvalue: no value a page can reach is the table itself, so
 * nothing (pairs, next, rawget, rawset) can write a library or a module. */
static int S_view_next(lua_State *L)
{
    lua_settop(L, 2);
    lua_pushvalue(L, lua_upvalueindex(2)); /* the ordered next */
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, 2);
    lua_call(L, 2, 2);
    return lua_isnil(L, -2) ? 1 : 2;
}

/* Upvalues: the real table, the ordered next. */
static int S_module_pairs(lua_State *L)
{
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_pushcclosure(L, S_view_next, 2);
    lua_pushvalue(L, 1); /* the view, not the table */
    lua_pushnil(L);
    return 3;
}

void hostlib_push_view_meta(lua_State *L, int mod, const char *name)
{
    mod = lua_absindex(L, mod);
    lua_createtable(L, 0, 5);
    lua_pushvalue(L, mod);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_pushcclosure(L, S_module_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, mod);
    lua_pushcclosure(L, S_module_len, 1);
    lua_setfield(L, -2, "__len");
    lua_pushvalue(L, mod);
    luaorder_push(L);
    lua_pop(L, 1); /* its pairs: the next is what the view's pairs needs */
    lua_pushcclosure(L, S_module_pairs, 2);
    lua_setfield(L, -2, "__pairs");
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
}

/* Replaces the module table on top of the stack by a read-only view of it. */
static void S_read_only(lua_State *L, const char *name)
{
    int mod = lua_gettop(L);
    lua_newtable(L);
    hostlib_push_view_meta(L, mod, name);
    lua_setmetatable(L, -2);
    lua_remove(L, mod);
}

/* ---------- require and data ---------- */

static int S_require(lua_State *L)
{
    sandbox *sb = sandbox_of(L);
    const char *name = luaL_checkstring(L, 1);
    size_t n = strlen(name);
    bool ok = n > 0 && n <= 64 && name[0] >= 'a' && name[0] <= 'z';
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
             name[i] == '_';
    if (!ok)
        return luaL_error(L, "require \"%s\": module names are lower-case letters, digits and _ "
                             "(a file checks/NAME.lua)", name);
    /* noted before it is read: a page that probes for a missing module
     * depends on its absence */
    char *input = xasprintf("checks/%s.lua", name);
    S_note_input(sb, input);
    free(input);
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->loaded_ref);
    int loaded = lua_gettop(L);
    int t = lua_getfield(L, loaded, name);
    if (t == LUA_TLIGHTUSERDATA)
        return luaL_error(L, "require \"%s\": circular require", name);
    if (t != LUA_TNIL)
        return 1;
    lua_pop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->modules_ref);
    int modules = lua_gettop(L);
    if (lua_getfield(L, modules, name) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        char *rel = xasprintf("%s.lua", name);
        const char *why = NULL;
        int fd = S_checks_open(sb, rel, &why);
        free(rel);
        if (fd < 0)
            return luaL_error(L, "require \"%s\": checks/%s.lua: %s", name, name, why);
        buf text = BUF_INIT;
        int rc = fs_read_fd(fd, sb->o.data_bytes, &text);
        close(fd);
        if (rc != FS_OK) {
            const char *e = fs_strerror(rc, sb->o.data_bytes);
            buf_free(&text);
            return luaL_error(L, "require \"%s\": cannot read checks/%s.lua: %s", name, name, e);
        }
        char chunk[96];
        snprintf(chunk, sizeof chunk, "@checks/%s.lua", name);
        int status = luaL_loadbufferx(L, buf_cstr(&text), text.len, chunk, "t");
        buf_free(&text);
        if (status != LUA_OK)
            return lua_error(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, modules, name);
    }
    /* a fresh instance for this page: the chunk runs with the page's environment */
    sandbox_push_env(sb);
    lua_setupvalue(L, -2, 1);
    lua_pushlightuserdata(L, sb); /* marks "loading" to catch cycles */
    lua_setfield(L, loaded, name);
    lua_pushstring(L, name);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        lua_pushnil(L); /* a module that failed can be required again */
        lua_setfield(L, loaded, name);
        return lua_error(L);
    }
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    if (lua_istable(L, -1))
        S_read_only(L, name);
    lua_pushvalue(L, -1);
    lua_setfield(L, loaded, name);
    return 1;
}

static const char *S_ext(const char *path)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) ? dot + 1 : "";
}

/* An error of data(): about the file the page asked for, so it carries no
 * position; the sandbox then locates it at the page's line (the innermost page
 * frame), not at the library line that called data() for the page. */
static int S_data_error(lua_State *L, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lua_pushvfstring(L, fmt, ap);
    va_end(ap);
    return lua_error(L);
}

static int S_data(lua_State *L)
{
    sandbox *sb = sandbox_of(L);
    const char *rel = luaL_checkstring(L, 1);
    if (!S_safe_relpath(rel))
        return S_data_error(L, "data \"%s\": not a plain relative path under checks/ (no \"..\", "
                             "no absolute paths, no dotfiles)", rel);
    const char *ext = S_ext(rel);
    enum { D_YAML, D_JSON, D_CSV, D_TEXT } kind;
    if (!strcmp(ext, "yaml") || !strcmp(ext, "yml"))
        kind = D_YAML;
    else if (!strcmp(ext, "json"))
        kind = D_JSON;
    else if (!strcmp(ext, "csv"))
        kind = D_CSV;
    else if (!strcmp(ext, "txt") || !strcmp(ext, "log") || !strcmp(ext, "md"))
        kind = D_TEXT;
    else
        return S_data_error(L, "data \"%s\": unknown kind of file (.yaml, .yml, .json, .csv, .txt, "
                             ".log or .md)", rel);
    char *input = xasprintf("checks/%s", rel);
    S_note_input(sb, input); /* before reading: its absence counts too */
    free(input);
    data_entry *e = strmap_get(&sb->data_cache, rel);
    if (!e) {
        const char *why = NULL;
        int fd = S_checks_open(sb, rel, &why);
        if (fd < 0)
            return S_data_error(L, "data \"%s\": %s", rel, why);
        buf text = BUF_INIT;
        int rc = fs_read_fd(fd, sb->o.data_bytes, &text);
        close(fd);
        if (rc != FS_OK) {
            char msg[200];
            snprintf(msg, sizeof msg, "data \"%s\": cannot read: %s", rel,
                     fs_strerror(rc, sb->o.data_bytes));
            buf_free(&text);
            return S_data_error(L, "%s", msg);
        }
        char *shown = xasprintf("checks/%s", rel);
        diag_list dl;
        diag_list_init(&dl);
        yv_limits lim = yv_default_limits;
        lim.max_bytes = sb->o.data_bytes;
        lim.max_depth = sb->o.depth;
        data_entry ent = {0};
        if (kind == D_TEXT) {
            ent.len = text.len;
            ent.text = buf_detach(&text);
        } else {
            ent.tree = kind == D_YAML  ? yv_parse_yaml(buf_cstr(&text), text.len, &lim, shown, 0, &dl)
                       : kind == D_JSON ? yv_parse_json(buf_cstr(&text), text.len, &lim, shown, &dl)
                                        : yv_parse_csv(buf_cstr(&text), text.len, &lim, shown, &dl);
        }
        buf_free(&text);
        if (kind != D_TEXT && !ent.tree) {
            char msg[400];
            const diag *d = dl.n ? &dl.v[0] : NULL;
            snprintf(msg, sizeof msg, "data \"%s\": %s:%d:%d: %s", rel, shown, d ? d->line : 0,
                     d ? d->col : 0, d ? d->msg : "cannot parse");
            diag_list_free(&dl);
            free(shown);
            return S_data_error(L, "%s", msg);
        }
        diag_list_free(&dl);
        free(shown);
        e = xmalloc(sizeof *e);
        *e = ent;
        strmap_put(&sb->data_cache, rel, e);
    }
    if (e->text) {
        lua_pushlstring(L, e->text, e->len);
        return 1;
    }
    if (luadata_push(L, e->tree) != 0)
        return lua_error(L); /* the message luadata pushed */
    return 1;
}

/* ---------- the kvsite table ---------- */

static void S_provenance_field(lua_State *L, buf *b, const char *key)
{
    if (lua_getfield(L, 1, key) != LUA_TNIL) {
        if (b->len)
            buf_puts(b, "; ");
        buf_printf(b, "%s: ", key);
        sandbox_tostring(L, -1, b);
    }
    lua_pop(L, 1);
}

/* kvsite.measured(provenance): the figure being evaluated read a measurement. */
static int S_measured(lua_State *L)
{
    sandbox *sb = sandbox_of(L);
    buf b = BUF_INIT;
    if (lua_type(L, 1) == LUA_TTABLE) {
        /* evidence first: "reproduced" (re-runnable logs) or "transcribed" (a source's) */
        static const char *keys[] = {"evidence", "source", "machine", "engine", "build",
                                     "model", "command", "date", "file"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            S_provenance_field(L, &b, keys[i]);
    } else if (lua_type(L, 1) == LUA_TSTRING) {
        sandbox_tostring(L, 1, &b);
    } else {
        buf_free(&b);
        return luaL_error(L, "kvsite.measured: provenance must be a table or a string");
    }
    if (b.len > 2000)
        buf_truncate(&b, 2000);
    /* several measurements in one figure: keep them all */
    if (sb->measured && sb->provenance.len && b.len &&
        !strstr(buf_cstr(&sb->provenance), buf_cstr(&b))) {
        buf_puts(&sb->provenance, " | ");
        buf_put(&sb->provenance, b.ptr, b.len);
    } else if (!sb->measured) {
        buf_clear(&sb->provenance);
        buf_put(&sb->provenance, buf_cstr(&b), b.len);
    }
    sb->measured = true;
    buf_free(&b);
    return 0;
}

/* kvsite.unit(name, scale, kind): a unit the page's quotes may use. */
static int S_unit(lua_State *L)
{
    sandbox *sb = sandbox_of(L);
    const char *name = luaL_checkstring(L, 1);
    double scale = luaL_checknumber(L, 2);
    const char *kind = luaL_checkstring(L, 3);
    buf err = BUF_INIT;
    if (quote_units_define(sb->units, name, scale, kind, &err) != 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "kvsite.unit: %s", buf_cstr(&err));
        buf_free(&err);
        return luaL_error(L, "%s", msg);
    }
    buf_free(&err);
    return 0;
}

static quote_unitset *S_page_units(void *ud) { return ((sandbox *)ud)->units; }

void hostlib_open_kvsite(sandbox *sb, lua_State *L)
{
    /* the build's own rules (luaquote.h), then the host's functions */
    sb->shared.units = S_page_units;
    sb->shared.ud = sb;
    sb->shared.limits = yv_default_limits;
    sb->shared.limits.max_bytes = sb->o.data_bytes;
    sb->shared.limits.max_depth = sb->o.depth;
    luaquote_push(L, &sb->shared);
    lua_pushcfunction(L, S_measured);
    lua_setfield(L, -2, "measured");
    lua_pushcfunction(L, S_unit);
    lua_setfield(L, -2, "unit");
    sandbox_flatten(L);
    sb->kvsite_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

void hostlib_push_kvsite(sandbox *sb, lua_State *L)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->kvsite_ref); /* {k1, v1, ...}: sandbox_flatten */
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    lua_createtable(L, 0, (int)(n / 2));
    for (lua_Integer i = 1; i < n; i += 2) {
        lua_rawgeti(L, -2, i);
        lua_rawgeti(L, -3, i + 1);
        lua_rawset(L, -3);
    }
    lua_remove(L, -2);
}

/* ---------- set-up ---------- */

void hostlib_fill_proto(lua_State *L, int proto)
{
    lua_getglobal(L, "setmetatable");
    lua_pushcclosure(L, S_setmetatable, 1);
    lua_setfield(L, proto, "setmetatable");
    lua_getglobal(L, "xpcall");
    lua_pushcclosure(L, S_xpcall, 1);
    lua_setfield(L, proto, "xpcall");
    lua_pushcfunction(L, S_load);
    lua_setfield(L, proto, "load");
    lua_pushcfunction(L, S_print);
    lua_setfield(L, proto, "print");
    lua_pushcfunction(L, S_require);
    lua_setfield(L, proto, "require");
    lua_pushcfunction(L, S_data);
    lua_setfield(L, proto, "data");
    luaorder_push(L); /* the same key order in every build: luaorder.h */
    lua_setfield(L, proto, "pairs");
    lua_setfield(L, proto, "next");
}

static void S_data_entry_free(void *v)
{
    data_entry *e = v;
    yv_free(e->tree);
    free(e->text);
    free(e);
}

void hostlib_free(sandbox *sb) { strmap_free_with(&sb->data_cache, S_data_entry_free); }
