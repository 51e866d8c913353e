#include "template.h"

#include <lauxlib.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "strmap.h"

#define TEMPLATES_DIR "templates"
#define INCLUDE_DEPTH_MAX 16

struct templates {
    sandbox *sb;
    char *root;
    size_t max_bytes, max_output;
    int cache_ref;  /* registry table: name -> compiled function */
    int depth;      /* include nesting */
    diag_list *dl;  /* of the current render */
    buf inputs;
    buf shown; /* scratch of _oe and _or */
    tpl_field_writer field_writer; /* _of's fast way, NULL for none */
    void *field_ctx;
    strmap found;   /* name -> (void *)1 exists, (void *)2 does not: lookups
                       run for every page, realpath only once per name */
};

/* ---------- translation ---------- */

static void S_emit_text(buf *lua, const char *s, size_t n)
{
    if (n == 0)
        return;
    buf_puts(lua, "_o(\"");
    size_t newlines = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == '"')
            buf_printf(lua, "\\%c", c);
        else if (c == '\n') {
            buf_puts(lua, "\\n");
            newlines++;
        } else if (c < 0x20 || c == 0x7f)
            buf_printf(lua, "\\%03u", c);
        else
            buf_putc(lua, c);
    }
    buf_puts(lua, "\")");
    /* real newlines keep the Lua line numbers equal to the template's */
    for (size_t i = 0; i < newlines; i++)
        buf_putc(lua, '\n');
    if (!newlines)
        buf_putc(lua, ' ');
}

static void S_emit_code(buf *lua, const char *s, size_t n) { buf_put(lua, s, n); }

/* When s is `name.field` (identifiers, not keywords; spaces around), sets
 * the two spans and returns true. */
static bool S_is_field(const char *s, size_t n, const char **obj, size_t *on, const char **field,
                       size_t *fn)
{
    static const char *const keywords[] = {
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if",
        "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while"};
    while (n && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    const char *dot = memchr(s, '.', n);
    if (!dot)
        return false;
    const char *part[2] = {s, dot + 1};
    size_t len[2] = {(size_t)(dot - s), n - (size_t)(dot - s) - 1};
    for (int k = 0; k < 2; k++) {
        if (len[k] == 0 || len[k] > 64 || (part[k][0] >= '0' && part[k][0] <= '9'))
            return false;
        for (size_t i = 0; i < len[k]; i++) {
            char ch = part[k][i];
            if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '_'))
                return false;
        }
        for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
            if (strlen(keywords[i]) == len[k] && !memcmp(keywords[i], part[k], len[k]))
                return false;
    }
    *obj = part[0];
    *on = len[0];
    *field = part[1];
    *fn = len[1];
    return true;
}

static bool S_is_include(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t' || *s == '\n')) {
        s++;
        n--;
    }
    return n > 7 && strncmp(s, "include", 7) == 0 &&
           (s[7] == ' ' || s[7] == '(' || s[7] == '"' || s[7] == '\'');
}

int tpl_translate(const char *src, size_t len, const char *file, buf *lua, diag_list *dl)
{
    buf_puts(lua, "local _o, _esc, _raw, _oe, _or, _of, _ofr = ...; ");
    size_t i = 0, text_start = 0;
    int line = 1;
    while (i < len) {
        if (src[i] == '\n') {
            line++;
            i++;
            continue;
        }
        if (src[i] != '{' || i + 1 >= len || (src[i + 1] != '{' && src[i + 1] != '%')) {
            i++;
            continue;
        }
        bool stmt = src[i + 1] == '%';
        bool raw = !stmt && i + 2 < len && src[i + 2] == '{';
        const char *close = stmt ? "%}" : raw ? "}}}" : "}}";
        size_t open_len = raw ? 3 : 2, close_len = strlen(close);
        size_t body = i + open_len, j = body;
        int tag_line = line;
        while (j + close_len <= len && memcmp(src + j, close, close_len) != 0)
            j++;
        if (j + close_len > len) {
            diag_error(dl, file, tag_line, 0, "unterminated %s tag: no closing \"%s\"",
                       stmt ? "{%" : raw ? "{{{" : "{{", close);
            return -1;
        }
        /* a statement tag alone on its line takes the whole line with it */
        size_t text_end = i, after = j + close_len;
        if (stmt) {
            size_t ls = i;
            while (ls > text_start && (src[ls - 1] == ' ' || src[ls - 1] == '\t'))
                ls--;
            bool line_start = ls == 0 || src[ls - 1] == '\n';
            size_t te = after;
            while (te < len && (src[te] == ' ' || src[te] == '\t'))
                te++;
            if (line_start && ls >= text_start && (te == len || src[te] == '\n')) {
                text_end = ls;
                after = te < len ? te + 1 : te;
            }
        }
        S_emit_text(lua, src + text_start, text_end - text_start);
        const char *b = src + body;
        size_t bn = j - body;
        if (stmt) {
            S_emit_code(lua, b, bn);
            buf_putc(lua, ' ');
        } else if (!raw && S_is_include(b, bn)) {
            buf_puts(lua, "_o(");
            S_emit_code(lua, b, bn);
            buf_puts(lua, ") ");
        } else {
            /* shown straight into the output, with no string in between;
             * obj.field first asks the host to write the field itself (a
             * report shows 7 fields of each of 100,000s of figures), and
             * when it does not, runs as written */
            const char *on, *fn;
            size_t onl, fnl;
            if (S_is_field(b, bn, &on, &onl, &fn, &fnl)) {
                buf_puts(lua, raw ? "if not _ofr(" : "if not _of(");
                buf_put(lua, on, onl);
                buf_puts(lua, ", \"");
                buf_put(lua, fn, fnl);
                buf_puts(lua, "\") then ");
            }
            buf_puts(lua, raw ? "_or(" : "_oe(");
            S_emit_code(lua, b, bn);
            buf_puts(lua, ") ");
            if (S_is_field(b, bn, &on, &onl, &fn, &fnl))
                buf_puts(lua, "end ");
        }
        for (size_t k = i; k < after; k++)
            if (src[k] == '\n') {
                line++;
                if (k >= j)
                    buf_putc(lua, '\n'); /* newline swallowed after the tag */
            }
        i = text_start = after;
    }
    S_emit_text(lua, src + text_start, len - text_start);
    buf_putc(lua, '\n');
    return 0;
}

/* ---------- runtime helpers ---------- */

static int S_out(lua_State *L)
{
    templates *t = lua_touserdata(L, lua_upvalueindex(1));
    buf *out = lua_touserdata(L, lua_upvalueindex(2));
    size_t n;
    const char *s = lua_tolstring(L, 1, &n);
    if (!s)
        return luaL_error(L, "template output must be text, not a %s", luaL_typename(L, 1));
    if (out->len + n > t->max_output)
        return luaL_error(L, "template output larger than %I bytes (limits.output_bytes)",
                          (lua_Integer)t->max_output);
    buf_put(out, s, n);
    return 0;
}

static int S_show(lua_State *L, bool escape)
{
    buf b = BUF_INIT;
    if (!sandbox_tostring(L, 1, &b)) {
        char msg[120];
        snprintf(msg, sizeof msg, "cannot show a %s value in %s", luaL_typename(L, 1),
                 escape ? "{{ }}" : "{{{ }}}");
        buf_free(&b);
        return luaL_error(L, "%s", msg);
    }
    if (escape) {
        buf e = BUF_INIT;
        buf_put_html(&e, buf_cstr(&b), b.len);
        lua_pushlstring(L, buf_cstr(&e), e.len);
        buf_free(&e);
    } else {
        lua_pushlstring(L, buf_cstr(&b), b.len);
    }
    buf_free(&b);
    return 1;
}

static int S_esc(lua_State *L) { return S_show(L, true); }
static int S_raw(lua_State *L) { return S_show(L, false); }

/* _oe(x) and _or(x): {{ x }} and {{{ x }}} written into the output at once. */
static int S_out_shown(lua_State *L, bool escape)
{
    templates *t = lua_touserdata(L, lua_upvalueindex(1));
    buf *out = lua_touserdata(L, lua_upvalueindex(2));
    size_t n;
    if (lua_type(L, 1) == LUA_TSTRING) {
        const char *s = lua_tolstring(L, 1, &n);
        if (escape)
            buf_put_html(out, s, n);
        else
            buf_put(out, s, n);
    } else {
        buf *b = &t->shown;
        buf_clear(b);
        if (!sandbox_tostring(L, 1, b)) {
            char msg[120];
            snprintf(msg, sizeof msg, "cannot show a %s value in %s", luaL_typename(L, 1),
                     escape ? "{{ }}" : "{{{ }}}");
            return luaL_error(L, "%s", msg);
        }
        if (escape)
            buf_put_html(out, buf_cstr(b), b->len);
        else
            buf_put(out, buf_cstr(b), b->len);
    }
    if (out->len > t->max_output)
        return luaL_error(L, "template output larger than %I bytes (limits.output_bytes)",
                          (lua_Integer)t->max_output);
    return 0;
}

static int S_out_esc(lua_State *L) { return S_out_shown(L, true); }
static int S_out_raw(lua_State *L) { return S_out_shown(L, false); }

/* _of(obj, "field") and _ofr: true when the host wrote obj.field itself. */
static int S_out_field(lua_State *L, bool escape)
{
    templates *t = lua_touserdata(L, lua_upvalueindex(1));
    buf *out = lua_touserdata(L, lua_upvalueindex(2));
    bool done = t->field_writer && lua_type(L, 1) == LUA_TUSERDATA &&
                t->field_writer(t->field_ctx, L, 1, lua_tostring(L, 2), out, escape);
    if (done && out->len > t->max_output)
        return luaL_error(L, "template output larger than %I bytes (limits.output_bytes)",
                          (lua_Integer)t->max_output);
    lua_pushboolean(L, done);
    return 1;
}

static int S_out_field_esc(lua_State *L) { return S_out_field(L, true); }
static int S_out_field_raw(lua_State *L) { return S_out_field(L, false); }

void tpl_set_field_writer(templates *t, tpl_field_writer fn, void *ctx)
{
    t->field_writer = fn;
    t->field_ctx = ctx;
}

static bool S_safe_name(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 200 || name[0] == '/' || strstr(name, "..") || strstr(name, "//"))
        return false;
    for (const char *p = name; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == '/'))
            return false;
    }
    return true;
}

/* The path of templates/<name> when it is a regular file inside templates/
 * (symbolic links that lead elsewhere are refused); NULL otherwise. */
static char *S_resolve(const templates *t, const char *name, const char **why)
{
    *why = "no such file";
    if (!S_safe_name(name))
        return NULL;
    char *rel = fs_join(TEMPLATES_DIR, name);
    char *path = fs_join(t->root, rel);
    char *top = fs_join(t->root, TEMPLATES_DIR);
    char real[PATH_MAX], real_top[PATH_MAX];
    bool ok = realpath(path, real) && realpath(top, real_top) && !fs_is_dir(real);
    if (ok && (strncmp(real, real_top, strlen(real_top)) != 0 || real[strlen(real_top)] != '/')) {
        *why = "a symbolic link out of templates/: refused";
        ok = false;
    }
    free(rel);
    free(top);
    if (!ok) {
        free(path);
        return NULL;
    }
    return path;
}

bool tpl_exists(const templates *t, const char *name)
{
    uintptr_t known = (uintptr_t)strmap_get(&t->found, name);
    if (known)
        return known == 1;
    const char *why;
    char *path = S_resolve(t, name, &why);
    free(path);
    /* the cache is an implementation detail of a const lookup */
    strmap_put((strmap *)&t->found, name, (void *)(uintptr_t)(path ? 1 : 2));
    return path != NULL;
}

/* Pushes the compiled function of name, compiling it on first use. On error
 * returns -1 with a message pushed. */
static int S_compiled(lua_State *L, templates *t, const char *name)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, t->cache_ref);
    if (lua_getfield(L, -1, name) == LUA_TFUNCTION) {
        lua_remove(L, -2);
        return 0;
    }
    lua_pop(L, 1);
    if (!S_safe_name(name)) {
        lua_pop(L, 1);
        lua_pushfstring(L, "template name \"%s\" is not a plain path under templates/", name);
        return -1;
    }
    char *rel = fs_join(TEMPLATES_DIR, name);
    const char *why;
    char *path = S_resolve(t, name, &why);
    buf text = BUF_INIT;
    int rc = path ? fs_read_file(path, t->max_bytes, &text) : FS_ENOENT;
    free(path);
    if (rc != FS_OK) {
        lua_pop(L, 1);
        lua_pushfstring(L, "template %s: %s", rel,
                        path ? fs_strerror(rc, t->max_bytes) : why);
        free(rel);
        buf_free(&text);
        return -1;
    }
    buf_puts(&t->inputs, rel);
    buf_putc(&t->inputs, '\0');
    buf lua = BUF_INIT;
    diag_list dl;
    diag_list_init(&dl);
    int status = -1;
    if (tpl_translate(buf_cstr(&text), text.len, rel, &lua, &dl) != 0) {
        lua_pop(L, 1);
        lua_pushfstring(L, "%s:%d: %s", rel, dl.v[0].line, dl.v[0].msg);
    } else {
        char *chunk = xasprintf("=%s", rel);
        if (luaL_loadbufferx(L, buf_cstr(&lua), lua.len, chunk, "t") != LUA_OK) {
            lua_remove(L, -2);
        } else {
            lua_pushvalue(L, -1);
            lua_setfield(L, -3, name);
            lua_remove(L, -2);
            status = 0;
        }
        free(chunk);
    }
    diag_list_free(&dl);
    buf_free(&lua);
    buf_free(&text);
    free(rel);
    return status;
}

/* Calls the compiled template on top of the stack, writing into out. */
static void S_call(lua_State *L, templates *t, buf *out)
{
    sandbox_push_env(t->sb);
    lua_setupvalue(L, -2, 1);
    lua_pushlightuserdata(L, t);
    lua_pushlightuserdata(L, out);
    lua_pushcclosure(L, S_out, 2);
    lua_pushcfunction(L, S_esc);
    lua_pushcfunction(L, S_raw);
    lua_pushlightuserdata(L, t);
    lua_pushlightuserdata(L, out);
    lua_pushcclosure(L, S_out_esc, 2);
    lua_pushlightuserdata(L, t);
    lua_pushlightuserdata(L, out);
    lua_pushcclosure(L, S_out_raw, 2);
    lua_pushlightuserdata(L, t);
    lua_pushlightuserdata(L, out);
    lua_pushcclosure(L, S_out_field_esc, 2);
    lua_pushlightuserdata(L, t);
    lua_pushlightuserdata(L, out);
    lua_pushcclosure(L, S_out_field_raw, 2);
}

/* The arguments S_call pushes after the function. */
#define CALL_ARGS 7

/* include(name): renders another template in the same environment. */
static int S_include(lua_State *L)
{
    templates *t = lua_touserdata(L, lua_upvalueindex(1));
    const char *name = luaL_checkstring(L, 1);
    if (t->depth >= INCLUDE_DEPTH_MAX)
        return luaL_error(L, "include \"%s\": includes nested deeper than %d (an include cycle?)",
                          name, INCLUDE_DEPTH_MAX);
    if (S_compiled(L, t, name) != 0)
        return lua_error(L);
    buf *out = lua_newuserdatauv(L, sizeof(buf), 0); /* freed below; Lua owns only the struct */
    buf_init(out);
    lua_insert(L, -2);
    S_call(L, t, out);
    t->depth++;
    int status = lua_pcall(L, CALL_ARGS, 0, 0);
    t->depth--;
    if (status != LUA_OK) {
        buf_free(out);
        return lua_error(L); /* the original error, located in the included file */
    }
    lua_pushlstring(L, buf_cstr(out), out->len);
    buf_free(out);
    return 1;
}

templates *tpl_new(sandbox *sb, const char *root, size_t max_bytes, size_t max_output)
{
    templates *t = xcalloc(1, sizeof *t);
    t->sb = sb;
    t->root = xstrdup(root);
    t->max_bytes = max_bytes;
    t->max_output = max_output;
    strmap_init(&t->found);
    lua_State *L = sandbox_lua(sb);
    lua_newtable(L);
    t->cache_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return t;
}

void tpl_free(templates *t)
{
    if (!t)
        return;
    luaL_unref(sandbox_lua(t->sb), LUA_REGISTRYINDEX, t->cache_ref);
    buf_free(&t->inputs);
    buf_free(&t->shown);
    strmap_free(&t->found);
    free(t->root);
    free(t);
}

const buf *tpl_inputs(const templates *t) { return &t->inputs; }

int tpl_render(templates *t, const char *name, buf *out, diag_list *dl)
{
    lua_State *L = sandbox_lua(t->sb);
    char *rel = fs_join(TEMPLATES_DIR, name);
    /* include is a global of the page environment while a template runs */
    sandbox_push_env(t->sb);
    lua_pushlightuserdata(L, t);
    lua_pushcclosure(L, S_include, 1);
    lua_setfield(L, -2, "include");
    lua_pop(L, 1);
    if (S_compiled(L, t, name) != 0) {
        const char *msg = lua_tostring(L, -1);
        /* syntax errors arrive as "templates/x.html:12: message" */
        int line = 0;
        size_t n = strlen(rel);
        const char *m = msg ? msg : "cannot compile";
        if (strncmp(m, rel, n) == 0 && m[n] == ':') {
            line = atoi(m + n + 1);
            const char *p = strchr(m + n + 1, ':');
            if (p && p[1] == ' ')
                m = p + 2;
        }
        diag_error(dl, rel, line, 0, "%s", m);
        lua_pop(L, 1);
        free(rel);
        return -1;
    }
    size_t before = out->len;
    t->depth = 0;
    S_call(L, t, out);
    sandbox_error err;
    if (sandbox_pcall(t->sb, CALL_ARGS, NULL, &err) != 0) {
        diag_error(dl, err.file ? err.file : rel, err.line, 0, "%s", err.msg);
        sandbox_error_free(&err);
        buf_truncate(out, before);
        free(rel);
        return -1;
    }
    lua_settop(L, 0);
    free(rel);
    return 0;
}
