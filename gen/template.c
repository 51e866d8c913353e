#include "template.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "strmap.h"
#include "theme.h"

#define TEMPLATES_DIR "templates"
#define INCLUDE_DEPTH_MAX 16

struct templates {
    sandbox *sb;
    char *root;
    char *theme; /* the theme folder looked in after templates/ (theme.h), or NULL */
    size_t max_bytes, max_output;
    int cache_ref;  /* registry table: name -> compiled function */
    int include_ref, here_ref; /* registry: include and _inc, made once */
    int depth;      /* include nesting */
    diag_list *dl;  /* of the current render */
    buf inputs;
    buf shown; /* scratch of _oe and _or */
    tpl_field_reader field_reader; /* _of's fast way, NULL for none */
    void *field_ctx;
    const tpl_list_reader *list_reader; /* _oloop's fast way, NULL for none */
    void *list_ctx;
    buf row;   /* scratch of _oloop */
    strmap found;   /* name -> (void *)1 exists, (void *)2 does not: lookups
                       run for every page, opened only once per name */
    strmap noted;   /* "templates/..." paths (and tpl_note_file's) -> the page_gen
                       that last put them in inputs */
    uintptr_t page_gen; /* counts tpl_page_begin calls: inputs are this page's */
    struct tpl_capture *capture; /* the innermost include_cached render running, or NULL */
    /* include_cached */
    int cached_ref;          /* registry: include_cached, made once */
    tpl_cache_host host;     /* has_host: set by tpl_set_cache_host */
    void *host_ctx;
    bool has_host;
    strmap kept;             /* "name\x1fkey" -> tpl_kept */
    size_t kept_bytes, hits, misses;
    int guard_ref;           /* LUA_NOREF, or the environment of the cached render running */
    buf key;
};

/* An output include_cached keeps: what its render read (records, and the
 * template files it used: NUL-separated), then its bytes. */
typedef struct {
    size_t len, deps_len, files_len;
    char *deps;
    char *files;
    char html[];
} tpl_kept;

/* The template files an include_cached render used, each once, for the
 * pages that reuse its output: they depend on those files as well. */
struct tpl_capture {
    buf files;
    strmap seen;
    struct tpl_capture *outer;
};

/* ---------- translation ---------- */

/* s as the inside of a Lua string literal, on one line; returns the number
 * of newlines it holds. */
static size_t S_lua_string(buf *lua, const char *s, size_t n)
{
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
    return newlines;
}

static void S_emit_text(buf *lua, const char *s, size_t n)
{
    if (n == 0)
        return;
    buf_puts(lua, "_o(\"");
    size_t newlines = S_lua_string(lua, s, n);
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

static bool S_is_ident(const char *s, size_t n)
{
    if (n == 0 || n > 64 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

/* Skips spaces; true when s[*at..] then starts with word (and, for a word
 * that is a name, no name character follows it). */
static bool S_word(const char *s, size_t n, size_t *at, const char *word)
{
    while (*at < n && s[*at] == ' ')
        (*at)++;
    size_t wn = strlen(word);
    if (n - *at < wn || memcmp(s + *at, word, wn) != 0)
        return false;
    *at += wn;
    char nx = *at < n ? s[*at] : ' ';
    bool name = (word[0] >= 'a' && word[0] <= 'z');
    return !name || !((nx >= 'a' && nx <= 'z') || (nx >= 'A' && nx <= 'Z') ||
                      (nx >= '0' && nx <= '9') || nx == '_');
}

/* A name at s[*at..] (after spaces): sets *name, *nn. */
static bool S_name(const char *s, size_t n, size_t *at, const char **name, size_t *nn)
{
    while (*at < n && s[*at] == ' ')
        (*at)++;
    size_t b = *at;
    while (*at < n && ((s[*at] >= 'a' && s[*at] <= 'z') || (s[*at] >= 'A' && s[*at] <= 'Z') ||
                       (s[*at] >= '0' && s[*at] <= '9') || s[*at] == '_'))
        (*at)++;
    *name = s + b;
    *nn = *at - b;
    return S_is_ident(*name, *nn);
}

/* `for i, v in ipairs(EXPR) do` on one line, EXPR without comments: the
 * loops that may be rendered in C (S_out_loop). Sets the names and EXPR. */
static bool S_is_ipairs_for(const char *s, size_t n, const char **idx, size_t *in,
                            const char **var, size_t *vn, const char **expr, size_t *en)
{
    size_t at = 0;
    if (memchr(s, '\n', n) || !S_word(s, n, &at, "for") || !S_name(s, n, &at, idx, in) ||
        !S_word(s, n, &at, ",") || !S_name(s, n, &at, var, vn) || !S_word(s, n, &at, "in") ||
        !S_word(s, n, &at, "ipairs") || !S_word(s, n, &at, "("))
        return false;
    size_t end = n;
    while (end > at && s[end - 1] == ' ')
        end--;
    if (end < at + 3 || memcmp(s + end - 2, "do", 2) != 0)
        return false;
    end -= 2;
    while (end > at && s[end - 1] == ' ')
        end--;
    if (end == at || s[end - 1] != ')')
        return false;
    *expr = s + at;
    *en = end - 1 - at;
    for (size_t k = 0; k + 1 < *en; k++)
        if ((*expr)[k] == '-' && (*expr)[k + 1] == '-')
            return false;
    return *en > 0;
}

/* A loop being translated that may be rendered in C: its for statement's
 * code in the output, its names, and what its body writes (S_out_loop's
 * spec: pieces "t<n>:<text>", "e<n>:<field>" escaped, "r<n>:<field>" raw). */
typedef struct {
    bool active;
    size_t hdr_at, hdr_len;
    const char *idx, *var, *expr;
    size_t idx_n, var_n, expr_n;
    buf spec;
} loop_cand;

static void S_spec_piece(buf *spec, char kind, const char *s, size_t n)
{
    buf_putc(spec, kind);
    buf_put_int(spec, (long long)n);
    buf_putc(spec, ':');
    buf_put(spec, s, n);
}

/* The candidate's body wrote only text and its variable's fields: its for
 * statement becomes `for i, v in _oloop(ipairs, EXPR, "spec") do`, which
 * renders rows in C and hands ipairs' iteration back where it stopped. */
static void S_loop_finish(loop_cand *lc, buf *lua)
{
    lc->active = false;
    buf head = BUF_INIT;
    buf_puts(&head, "for ");
    buf_put(&head, lc->idx, lc->idx_n);
    buf_puts(&head, ", ");
    buf_put(&head, lc->var, lc->var_n);
    buf_puts(&head, " in _oloop(ipairs, ");
    buf_put(&head, lc->expr, lc->expr_n);
    buf_puts(&head, ", \"");
    S_lua_string(&head, lc->spec.ptr ? lc->spec.ptr : "", lc->spec.len);
    buf_puts(&head, "\") do ");
    size_t tail_at = lc->hdr_at + lc->hdr_len;
    buf tail = BUF_INIT;
    buf_put(&tail, lua->ptr + tail_at, lua->len - tail_at);
    buf_truncate(lua, lc->hdr_at);
    buf_put(lua, head.ptr, head.len);
    buf_put(lua, tail.ptr ? tail.ptr : "", tail.len);
    buf_free(&head);
    buf_free(&tail);
}

static bool S_is_include(const char *s, size_t n)
{
    while (n && (*s == ' ' || *s == '\t' || *s == '\n')) {
        s++;
        n--;
    }
    if (n > 14 && strncmp(s, "include_cached", 14) == 0 && (s[14] == ' ' || s[14] == '('))
        return true;
    return n > 7 && strncmp(s, "include", 7) == 0 &&
           (s[7] == ' ' || s[7] == '(' || s[7] == '"' || s[7] == '\'');
}

/* `include "name"` or `include("name")` with nothing else in the tag, the
 * name a plain quoted string: *lit is set to the string with its quotes.
 * Such a tag is rendered in place (_inc, S_include_here). */
static bool S_include_literal(const char *s, size_t n, const char **lit, size_t *lit_n)
{
    const char *end = s + n;
    while (s < end && (*s == ' ' || *s == '\t' || *s == '\n'))
        s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n'))
        end--;
    if (end - s < 9 || strncmp(s, "include", 7) != 0)
        return false;
    s += 7;
    bool paren = *s == '(';
    if (paren) {
        if (end[-1] != ')')
            return false;
        s++;
        end--;
    }
    while (s < end && *s == ' ')
        s++;
    while (end > s && end[-1] == ' ')
        end--;
    if (end - s < 2 || (*s != '"' && *s != '\'') || end[-1] != *s)
        return false;
    for (const char *p = s + 1; p < end - 1; p++)
        if (*p == *s || *p == '\\' || *p == '\n')
            return false;
    *lit = s;
    *lit_n = (size_t)(end - s);
    return true;
}

int tpl_translate(const char *src, size_t len, const char *file, buf *lua, diag_list *dl)
{
    buf_puts(lua, "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; ");
    size_t i = 0, text_start = 0;
    int line = 1;
    loop_cand lc;
    memset(&lc, 0, sizeof lc);
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
            size_t ls = i;
            while (ls > 0 && src[ls - 1] != '\n')
                ls--;
            diag_error(dl, file, tag_line, (int)(i - ls) + 1,
                       "unterminated %s tag: no closing \"%s\"",
                       stmt ? "{%" : raw ? "{{{" : "{{", close);
            buf_free(&lc.spec);
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
        if (lc.active && text_end > text_start)
            S_spec_piece(&lc.spec, 't', src + text_start, text_end - text_start);
        const char *b = src + body;
        size_t bn = j - body;
        const char *lit;
        size_t lit_n;
        if (stmt) {
            const char *tb = b;
            size_t tn = bn;
            while (tn && (*tb == ' ' || *tb == '\t'))
                tb++, tn--;
            while (tn && (tb[tn - 1] == ' ' || tb[tn - 1] == '\t'))
                tn--;
            if (lc.active && tn == 3 && memcmp(tb, "end", 3) == 0)
                S_loop_finish(&lc, lua);
            lc.active = false;
            size_t at = lua->len;
            S_emit_code(lua, b, bn);
            buf_putc(lua, ' ');
            if (S_is_ipairs_for(b, bn, &lc.idx, &lc.idx_n, &lc.var, &lc.var_n, &lc.expr,
                                &lc.expr_n)) {
                lc.active = true;
                lc.hdr_at = at;
                lc.hdr_len = lua->len - at;
                buf_clear(&lc.spec);
            }
        } else if (!raw && S_include_literal(b, bn, &lit, &lit_n)) {
            /* in place: through this template's writers */
            lc.active = false;
            buf_puts(lua, "_inc(");
            buf_put(lua, lit, lit_n);
            buf_puts(lua, ", _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc) ");
            /* the tag's own line breaks (around the name: it has none), so
             * that the Lua's lines stay the template's */
            for (size_t k = 0; k < bn; k++)
                if (b[k] == '\n')
                    buf_putc(lua, '\n');
        } else if (!raw && S_is_include(b, bn)) {
            lc.active = false;
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
            bool field = S_is_field(b, bn, &on, &onl, &fn, &fnl);
            if (lc.active) {
                if (field && onl == lc.var_n && memcmp(on, lc.var, onl) == 0)
                    S_spec_piece(&lc.spec, raw ? 'r' : 'e', fn, fnl);
                else
                    lc.active = false;
            }
            if (field) {
                buf_puts(lua, raw ? "if not _ofr(" : "if not _of(");
                buf_put(lua, on, onl);
                buf_puts(lua, ", \"");
                buf_put(lua, fn, fnl);
                buf_puts(lua, "\") then ");
            }
            buf_puts(lua, raw ? "_or(" : "_oe(");
            S_emit_code(lua, b, bn);
            buf_puts(lua, ") ");
            if (field)
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
    buf_free(&lc.spec);
    return 0;
}

/* ---------- runtime helpers ---------- */

/* s into out as {{ }} (escape) or {{{ }}} shows it. */
static void S_put_shown(buf *out, const char *s, size_t n, bool escape)
{
    if (escape)
        buf_put_html(out, s, n);
    else
        buf_put(out, s, n);
}

/* v into out as {{ }} (escape) or {{{ }}} shows it: as sandbox_tostring. */
static void S_put_value(buf *out, const tpl_value *v, bool escape)
{
    switch (v->type) {
    case LUA_TSTRING: S_put_shown(out, v->s, strlen(v->s), escape); break;
    case LUA_TBOOLEAN: buf_puts(out, v->i ? "true" : "false"); break;
    case LUA_TNUMBER:
        if (v->integer)
            buf_put_int(out, v->i);
        else
            sandbox_put_float(out, v->d);
        break;
    default: break; /* nil shows as nothing */
    }
}

/* The host's value of the field of the object at index obj (see
 * tpl_field_reader), written into out. */
static bool S_host_field(lua_State *L, templates *t, int obj, const char *field, buf *out,
                         bool escape)
{
    tpl_value v;
    if (!t->field_reader || !field || lua_type(L, obj) != LUA_TUSERDATA ||
        !t->field_reader(t->field_ctx, L, obj, field, &v))
        return false;
    S_put_value(out, &v, escape);
    return true;
}

/* What a template's writers (_o, _oe, ...) write into: full userdata, an
 * upvalue of every writer of one template call, so it lives as long as any
 * writer does. out is the call's output while the call runs and NULL once it
 * returned (an include's output is own, freed then): a writer that Lua kept
 * and calls later fails with an error instead of writing into a buffer that
 * is gone. */
typedef struct {
    buf *out;
    buf own;
} tpl_sink;

/* The output of the writer being called, or a Lua error once its template
 * call has returned. */
static buf *S_writer_out(lua_State *L)
{
    tpl_sink *s = lua_touserdata(L, lua_upvalueindex(2));
    if (!s->out)
        luaL_error(L, "a template writer was called after its template returned");
    return s->out;
}

static int S_output_cap_error(lua_State *L, const templates *t)
{
    return luaL_error(L, "template output larger than %I bytes (limits.output_bytes)",
                      (lua_Integer)t->max_output);
}

static int S_out(lua_State *L)
{
    templates *t = lua_touserdata(L, lua_upvalueindex(1));
    buf *out = S_writer_out(L);
    size_t n;
    const char *s = lua_tolstring(L, 1, &n);
    if (!s)
        return luaL_error(L, "template output must be text, not a %s", luaL_typename(L, 1));
    if (out->len + n > t->max_output)
        return S_output_cap_error(L, t);
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
    buf *out = S_writer_out(L);
    size_t n;
    if (lua_type(L, 1) == LUA_TSTRING) {
        const char *s = lua_tolstring(L, 1, &n);
        S_put_shown(out, s, n, escape);
    } else {
        buf *b = &t->shown;
        buf_clear(b);
        if (!sandbox_tostring(L, 1, b)) {
            char msg[120];
            snprintf(msg, sizeof msg, "cannot show a %s value in %s", luaL_typename(L, 1),
                     escape ? "{{ }}" : "{{{ }}}");
            return luaL_error(L, "%s", msg);
        }
        S_put_shown(out, buf_cstr(b), b->len, escape);
    }
    if (out->len > t->max_output)
        return S_output_cap_error(L, t);
    return 0;
}

static int S_out_esc(lua_State *L) { return S_out_shown(L, true); }
static int S_out_raw(lua_State *L) { return S_out_shown(L, false); }

/* _of(obj, "field") and _ofr: true when the host wrote obj.field itself: a
 * field of a host object (the field reader), or a string a table holds under
 * that key (what Lua would read too: a key that is there never reaches
 * __index), which saves the second call, _oe(obj.field). */
static int S_out_field(lua_State *L, bool escape)
{
    templates *t = lua_touserdata(L, lua_upvalueindex(1));
    buf *out = S_writer_out(L);
    bool done = false;
    if (lua_type(L, 1) == LUA_TTABLE && lua_type(L, 2) == LUA_TSTRING) {
        lua_pushvalue(L, 2);
        if (lua_rawget(L, 1) == LUA_TSTRING) {
            size_t n;
            const char *v = lua_tolstring(L, -1, &n);
            S_put_shown(out, v, n, escape);
            done = true;
        }
        lua_pop(L, 1);
    } else {
        done = S_host_field(L, t, 1, lua_tostring(L, 2), out, escape);
    }
    if (done && out->len > t->max_output)
        return S_output_cap_error(L, t);
    lua_pushboolean(L, done);
    return 1;
}

static int S_out_field_esc(lua_State *L) { return S_out_field(L, true); }
static int S_out_field_raw(lua_State *L) { return S_out_field(L, false); }

#define LOOP_PIECES_MAX 64
#define LOOP_FIELD_MAX 71 /* longer field names are left to Lua */

/* One piece of a loop body (see loop_cand). */
typedef struct {
    char kind; /* 't', 'e' or 'r' */
    const char *s;
    size_t n;
    char name[LOOP_FIELD_MAX + 1]; /* a field's, NUL-terminated; "" when too long */
} loop_piece;

static size_t S_loop_spec(const char *s, size_t n, loop_piece *p, size_t max)
{
    size_t np = 0, at = 0;
    while (at < n) {
        if (np == max)
            return 0;
        char kind = s[at++];
        size_t len = 0;
        while (at < n && s[at] >= '0' && s[at] <= '9' && len < ((size_t)1 << 40))
            len = len * 10 + (size_t)(s[at++] - '0');
        if (at >= n || s[at] != ':' || len > n - at - 1 ||
            (kind != 't' && kind != 'e' && kind != 'r'))
            return 0;
        at++;
        loop_piece *q = &p[np++];
        q->kind = kind;
        q->s = s + at;
        q->n = len;
        q->name[0] = '\0';
        if (kind != 't' && len <= LOOP_FIELD_MAX) {
            memcpy(q->name, q->s, len);
            q->name[len] = '\0';
        }
        at += len;
    }
    return np;
}

/* The text `{{ item.field }}` would write for an item at index item, into
 * row; false when only Lua can say (a value it would refuse to show, an
 * object whose fields Lua code makes). */
static bool S_loop_field(lua_State *L, templates *t, int item, const loop_piece *p, buf *row)
{
    bool escape = p->kind == 'e';
    const char *name = p->name;
    if (!name[0])
        return false;
    int type = lua_type(L, item);
    if (S_host_field(L, t, item, name, row, escape))
        return true;
    if (type == LUA_TUSERDATA) {
        /* kvsite's objects: fields from a C __index that cannot fail */
        if (!lua_getmetatable(L, item))
            return false;
        bool has_index = lua_getfield(L, -1, "__index") == LUA_TFUNCTION &&
                         lua_iscfunction(L, -1);
        lua_pop(L, 2);
        if (!has_index)
            return false;
        lua_getfield(L, item, name);
    } else {
        lua_pushstring(L, name);
        lua_rawget(L, item);
    }
    int vt = lua_type(L, -1);
    bool ok = vt == LUA_TNIL || vt == LUA_TBOOLEAN || vt == LUA_TNUMBER || vt == LUA_TSTRING;
    if (ok) {
        buf_clear(&t->shown);
        sandbox_tostring(L, -1, &t->shown);
        S_put_shown(row, buf_cstr(&t->shown), t->shown.len, escape);
    }
    lua_pop(L, 1);
    return ok;
}

/* The keys of the fields the pieces show, from the host (tpl_list_reader);
 * false when one is a field the list's items do not have. */
static bool S_loop_keys(templates *t, void *list, const loop_piece *p, size_t np,
                        int *keys, size_t *nkeys)
{
    *nkeys = 0;
    for (size_t k = 0; k < np; k++) {
        if (p[k].kind == 't')
            continue;
        int key = p[k].name[0] ? t->list_reader->key(t->list_ctx, list, p[k].name) : -1;
        if (key < 0)
            return false;
        keys[(*nkeys)++] = key;
    }
    return true;
}

/* Item i of a list the host reads in place, written into t->row as the
 * loop body would write it; false leaves the item to Lua. */
static bool S_loop_row_in_place(templates *t, void *list, lua_Integer i,
                                const loop_piece *p, size_t np, const int *keys, size_t nkeys)
{
    tpl_value v[LOOP_PIECES_MAX];
    if (!t->list_reader->item(t->list_ctx, list, i, keys, nkeys, v))
        return false;
    buf_clear(&t->row);
    for (size_t k = 0, j = 0; k < np; k++) {
        if (p[k].kind == 't')
            buf_put(&t->row, p[k].s, p[k].n);
        else
            S_put_value(&t->row, &v[j++], p[k].kind == 'e');
    }
    return true;
}

/* _oloop(ipairs, list, spec) stands for ipairs(list) in a loop whose body
 * only writes text and fields of its variable: it writes the rows itself, as
 * the body would (no Lua per row), then returns ipairs' triple set where it
 * stopped, and the Lua loop does the rest: nothing when it reached the end;
 * from a row it could not write (a value Lua must refuse, an object whose
 * fields Lua code makes), past the output cap or the instruction budget, so
 * that errors come from the body's own lines. Any other ipairs than Lua's,
 * and any list that is not a table or object, is left to Lua at once. */
static int S_out_loop(lua_State *L)
{
    templates *t = lua_touserdata(L, lua_upvalueindex(1));
    buf *out = S_writer_out(L);
    lua_settop(L, 3);
    lua_getglobal(L, "ipairs"); /* the real globals: pages never reach them */
    bool builtin = lua_rawequal(L, 1, -1);
    lua_pop(L, 1);
    lua_pushvalue(L, 1);
    lua_pushvalue(L, 2);
    lua_call(L, 1, 3); /* 4, 5, 6: iterator, state, control */
    int lt = lua_type(L, 2);
    size_t sn;
    const char *spec = lua_tolstring(L, 3, &sn);
    loop_piece p[LOOP_PIECES_MAX];
    size_t np = spec ? S_loop_spec(spec, sn, p, LOOP_PIECES_MAX) : 0;
    if (!builtin || (lt != LUA_TTABLE && lt != LUA_TUSERDATA) || np == 0 ||
        !lua_isinteger(L, 6) || lua_tointeger(L, 6) != 0)
        return 3;
    long long cost = 4;
    for (size_t k = 0; k < np; k++)
        cost += p[k].kind == 't' ? 3 : 6; /* what the Lua loop would run */
    void *list = lt == LUA_TUSERDATA && t->list_reader
                           ? t->list_reader->open(t->list_ctx, L, 2)
                           : NULL;
    int keys[LOOP_PIECES_MAX];
    size_t nkeys = 0;
    if (list && !S_loop_keys(t, list, p, np, keys, &nkeys))
        list = NULL;
    lua_Integer done = 0;
    for (;;) {
        if (!sandbox_charge(t->sb, cost))
            break;
        if (list && S_loop_row_in_place(t, list, done + 1, p, np, keys, nkeys)) {
            if (out->len + t->row.len > t->max_output)
                break;
            buf_put(out, t->row.ptr ? t->row.ptr : "", t->row.len);
            done++;
            continue;
        }
        int it = lua_geti(L, 2, done + 1);
        int item = lua_gettop(L);
        /* objects, and tables whose fields no metamethod makes */
        bool ok = it == LUA_TUSERDATA || (it == LUA_TTABLE && !lua_getmetatable(L, item));
        buf_clear(&t->row);
        for (size_t k = 0; ok && k < np; k++) {
            if (p[k].kind == 't')
                buf_put(&t->row, p[k].s, p[k].n);
            else
                ok = S_loop_field(L, t, item, &p[k], &t->row);
        }
        lua_settop(L, item - 1);
        if (!ok || out->len + t->row.len > t->max_output)
            break; /* the end of the list, or Lua's turn */
        buf_put(out, t->row.ptr ? t->row.ptr : "", t->row.len);
        done++;
    }
    lua_pushinteger(L, done);
    lua_replace(L, 6);
    return 3;
}

void tpl_set_field_reader(templates *t, tpl_field_reader fn, void *ctx)
{
    t->field_reader = fn;
    t->field_ctx = ctx;
}

void tpl_set_list_reader(templates *t, const tpl_list_reader *fn, void *ctx)
{
    t->list_reader = fn;
    t->list_ctx = ctx;
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

/* Opens templates/<name>, a file (not a folder), without following any
 * symbolic link (fs_open_in): an fd the caller closes, or -1 with why. */
static int S_open(const templates *t, const char *name, const char **why)
{
    *why = "no such file";
    if (!S_safe_name(name))
        return -1;
    char *rel = fs_join(TEMPLATES_DIR, name);
    int fd = fs_open_in(t->root, rel, O_RDONLY);
    free(rel);
    struct stat st;
    if (fd < 0 && (errno == ELOOP || errno == EXDEV))
        *why = "a symbolic link (templates are read without following any): refused";
    else if (fd < 0 && errno == ENOENT && t->theme)
        return theme_open(t->theme, name); /* the site's own template wins */
    if (fd >= 0 && (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode))) {
        close(fd);
        fd = -1;
        errno = EISDIR; /* a folder is no template */
    }
    return fd;
}

/* Notes rel ("templates/..." or a file tpl_note_file names) as an input of
 * the page being rendered, once a page, and of the include_cached render
 * running, if any. */
static void S_note_file(templates *t, const char *rel)
{
    if ((uintptr_t)strmap_get(&t->noted, rel) != t->page_gen) {
        strmap_put(&t->noted, rel, (void *)t->page_gen);
        buf_puts(&t->inputs, rel);
        buf_putc(&t->inputs, '\0');
    }
    struct tpl_capture *c = t->capture;
    if (c && !strmap_get(&c->seen, rel)) {
        strmap_put(&c->seen, rel, (void *)1);
        buf_puts(&c->files, rel);
        buf_putc(&c->files, '\0');
    }
}

/* Notes templates/<name> as an input of the page, on every lookup, before
 * it is opened: a template that is looked up and missing is an input too,
 * since the page changes when it starts to exist (incremental builds). A
 * page's inputs are what its own render looked up: a worker renders
 * hundreds of pages, and every template any of them looked up (a missing
 * templates/<section>/page.html for each section) made each page's list
 * as long as the site's sections. */
static void S_note_input(templates *t, const char *name)
{
    if (!S_safe_name(name))
        return;
    char *rel = fs_join(TEMPLATES_DIR, name);
    S_note_file(t, rel);
    free(rel);
}

bool tpl_exists(const templates *t, const char *name)
{
    /* the answer is an input of the page either way: it changes when the
     * file comes or goes (the cache and the inputs are implementation
     * details of a const lookup) */
    S_note_input((templates *)t, name);
    uintptr_t known = (uintptr_t)strmap_get(&t->found, name);
    if (known)
        return known == 1;
    const char *why;
    int fd = S_open(t, name, &why);
    /* a link is there: it is refused, with its name, when it is read */
    bool there = fd >= 0 || errno == ELOOP;
    if (fd >= 0)
        close(fd);
    strmap_put((strmap *)&t->found, name, (void *)(uintptr_t)(there ? 1 : 2));
    return there;
}

/* Pushes the compiled function of name, compiling it on first use. On error
 * returns -1 with a message pushed. */
/* A syntax error of a template's Lua, "templates/x.html:12: message" on top of
 * the stack, becomes "templates/x.html:12:COL: message" with the column of the
 * first tag on that line: the code Lua could not read came from a tag, and
 * the line alone does not say which one when a line has several. */
static void S_locate_tag(lua_State *L, const char *rel, const char *src, size_t len)
{
    const char *m = lua_tostring(L, -1);
    size_t n = strlen(rel);
    if (!m || strncmp(m, rel, n) != 0 || m[n] != ':')
        return;
    char *end;
    long line = strtol(m + n + 1, &end, 10);
    if (line <= 0 || end[0] != ':' || end[1] != ' ')
        return;
    const char *p = src, *stop = src + len;
    for (long l = 1; l < line && p; l++) {
        p = memchr(p, '\n', (size_t)(stop - p));
        p = p ? p + 1 : NULL;
    }
    if (!p)
        return;
    const char *eol = memchr(p, '\n', (size_t)(stop - p));
    if (!eol)
        eol = stop;
    for (const char *q = p; q + 1 < eol; q++) {
        if (q[0] == '{' && (q[1] == '{' || q[1] == '%')) {
            lua_pushfstring(L, "%s:%d:%d: %s", rel, (int)line, (int)(q - p) + 1, end + 2);
            lua_replace(L, -2);
            return;
        }
    }
}

static int S_compiled(lua_State *L, templates *t, const char *name)
{
    S_note_input(t, name); /* every use, compiled before or not: the page's input */
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
    int fd = S_open(t, name, &why);
    buf text = BUF_INIT;
    int rc = fd >= 0 ? fs_read_fd(fd, t->max_bytes, &text) : FS_ENOENT;
    if (fd >= 0)
        close(fd);
    if (rc != FS_OK) {
        lua_pop(L, 1);
        lua_pushfstring(L, "template %s: %s", rel,
                        fd >= 0 ? fs_strerror(rc, t->max_bytes) : why);
        free(rel);
        buf_free(&text);
        return -1;
    }
    buf lua = BUF_INIT;
    diag_list dl;
    diag_list_init(&dl);
    int status = -1;
    if (tpl_translate(buf_cstr(&text), text.len, rel, &lua, &dl) != 0) {
        lua_pop(L, 1);
        lua_pushfstring(L, "%s:%d:%d: %s", rel, dl.v[0].line, dl.v[0].col, dl.v[0].msg);
    } else {
        char *chunk = xasprintf("=%s", rel);
        if (luaL_loadbufferx(L, buf_cstr(&lua), lua.len, chunk, "t") != LUA_OK) {
            S_locate_tag(L, rel, buf_cstr(&text), text.len);
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

/* The environment a template runs in: the page's templates' one, or while
 * include_cached renders, the guard around it (no globals set). */
static void S_push_env(lua_State *L, templates *t)
{
    if (t->guard_ref != LUA_NOREF)
        lua_rawgeti(L, LUA_REGISTRYINDEX, t->guard_ref);
    else
        sandbox_push_template_env(t->sb);
}

/* fn with the templates and the sink at index sink as its upvalues. */
static void S_push_writer(lua_State *L, templates *t, int sink, lua_CFunction fn)
{
    lua_pushlightuserdata(L, t);
    lua_pushvalue(L, sink);
    lua_pushcclosure(L, fn, 2);
}

/* Calls the compiled template on top of the stack, writing into out (NULL:
 * into the sink's own buffer). The sink goes below the function, where it
 * stays after the call until S_end_call: whatever Lua kept of the writers,
 * the sink is alive when S_end_call closes it. */
static tpl_sink *S_call(lua_State *L, templates *t, buf *out)
{
    tpl_sink *s = lua_newuserdatauv(L, sizeof *s, 0);
    buf_init(&s->own);
    s->out = out ? out : &s->own;
    lua_insert(L, -2);
    int sink = lua_absindex(L, -2);
    S_push_env(L, t);
    lua_setupvalue(L, -2, 1);
    S_push_writer(L, t, sink, S_out);
    lua_pushcfunction(L, S_esc);
    lua_pushcfunction(L, S_raw);
    S_push_writer(L, t, sink, S_out_esc);
    S_push_writer(L, t, sink, S_out_raw);
    S_push_writer(L, t, sink, S_out_field_esc);
    S_push_writer(L, t, sink, S_out_field_raw);
    S_push_writer(L, t, sink, S_out_loop);
    lua_rawgeti(L, LUA_REGISTRYINDEX, t->here_ref);
    return s;
}

/* The arguments S_call pushes after the function: the chunk's `...`. */
#define CALL_ARGS 9

/* Closes the sink of a call that returned (its writers fail from now on),
 * frees its own buffer and removes it from the stack, where it is at
 * index sink. */
static void S_end_call(lua_State *L, tpl_sink *s, int sink)
{
    s->out = NULL;
    buf_free(&s->own);
    lua_remove(L, sink);
}

/* What both kinds of include do first: the depth check, then the compiled
 * template onto the stack (a Lua error otherwise). */
static void S_include_compiled(lua_State *L, templates *t, const char *name)
{
    if (t->depth >= INCLUDE_DEPTH_MAX)
        luaL_error(L, "include \"%s\": includes nested deeper than %d (an include cycle?)", name,
                   INCLUDE_DEPTH_MAX);
    if (S_compiled(L, t, name) != 0)
        lua_error(L);
}

/* Calls the included template, its arguments pushed, one level deeper. */
static int S_include_call(lua_State *L, templates *t)
{
    t->depth++;
    int status = lua_pcall(L, CALL_ARGS, 0, 0);
    t->depth--;
    return status;
}

/* include(name): renders another template in the same environment. */
static int S_include(lua_State *L)
{
    templates *t = lua_touserdata(L, lua_upvalueindex(1));
    const char *name = luaL_checkstring(L, 1);
    S_include_compiled(L, t, name);
    tpl_sink *s = S_call(L, t, NULL); /* the include's output: s->own */
    int sink = lua_gettop(L) - CALL_ARGS - 1;
    if (S_include_call(L, t) != LUA_OK) {
        S_end_call(L, s, sink);
        return lua_error(L); /* the original error, located in the included file */
    }
    lua_pushlstring(L, buf_cstr(&s->own), s->own.len);
    S_end_call(L, s, sink);
    return 1;
}

/* _inc(name, <the chunk's arguments>): `{{ include "name" }}`, rendered in
 * place: the included template gets the writers of the one that includes
 * it, so its output goes straight where that one's goes (no writers, sink
 * or string of its own), and they stop working when that one returns. */
static int S_include_here(lua_State *L)
{
    templates *t = lua_touserdata(L, lua_upvalueindex(1));
    const char *name = luaL_checkstring(L, 1);
    if (lua_gettop(L) != 1 + CALL_ARGS)
        return luaL_error(L, "_inc is kvsite's own: write {{ include \"%s\" }}", name);
    S_include_compiled(L, t, name);
    S_push_env(L, t);
    lua_setupvalue(L, -2, 1);
    for (int i = 2; i <= 1 + CALL_ARGS; i++)
        lua_pushvalue(L, i);
    if (S_include_call(L, t) != LUA_OK)
        return lua_error(L); /* the original error, located in the included file */
    return 0;
}

/* __newindex of a cached render's environment: its output is all it gives. */
static int S_guard_newindex(lua_State *L)
{
    return luaL_error(L,
                      "templates/%s: include_cached renders it once for many pages, so it "
                      "cannot set the global %s (use a local)",
                      lua_tostring(L, lua_upvalueindex(1)),
                      lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?");
}

/* include_cached(name, key): include(name)'s output, rendered once per
 * (name, key) in this worker; every reuse replays what the render read. */
static int S_include_cached(lua_State *L)
{
    templates *t = lua_touserdata(L, lua_upvalueindex(1));
    const char *name = luaL_checkstring(L, 1);
    buf *k = &t->key;
    buf_clear(k);
    buf_puts(k, name);
    buf_putc(k, '\x1f');
    int kt = lua_type(L, 2);
    if ((kt != LUA_TSTRING && kt != LUA_TNUMBER) || !sandbox_tostring(L, 2, k))
        return luaL_error(L, "include_cached \"%s\": the key must be a string or a number, not %s",
                          name, luaL_typename(L, 2));
    if (k->len > TPL_CACHE_KEY_MAX || memchr(k->ptr, '\0', k->len))
        return luaL_error(L, "include_cached \"%s\": a key is at most %d bytes, without NUL",
                          name, TPL_CACHE_KEY_MAX);
    tpl_kept *e = strmap_get(&t->kept, buf_cstr(k));
    if (e) {
        t->hits++;
        t->host.replay(t->host_ctx, e->deps, e->deps_len);
        for (const char *f = e->files; f < e->files + e->files_len; f += strlen(f) + 1)
            S_note_file(t, f);
        lua_pushlstring(L, e->html, e->len);
        return 1;
    }
    t->misses++;
    S_include_compiled(L, t, name);
    /* its environment: reads go through to the page's, a write is an error */
    lua_createtable(L, 0, 0);
    lua_createtable(L, 0, 3);
    S_push_env(L, t);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_pushcclosure(L, S_guard_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    int outer = t->guard_ref;
    t->guard_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    tpl_sink *s = S_call(L, t, NULL);
    int sink = lua_gettop(L) - CALL_ARGS - 1;
    char *key = t->has_host ? xstrdup(buf_cstr(k)) : NULL; /* k is the nested calls' too */
    tpl_cache_mark m = t->has_host ? t->host.begin(t->host_ctx) : (tpl_cache_mark){0, 0};
    struct tpl_capture cap = {BUF_INIT, {0}, t->capture};
    strmap_init(&cap.seen);
    t->capture = &cap;
    S_note_input(t, name); /* noted for the page already: now for the output kept */
    int status = S_include_call(L, t);
    t->capture = cap.outer;
    /* an outer cached render used what this one did */
    for (const char *f = cap.files.ptr; cap.outer && f && f < cap.files.ptr + cap.files.len;
         f += strlen(f) + 1)
        S_note_file(t, f);
    strmap_free(&cap.seen);
    buf deps = BUF_INIT;
    bool keep = t->has_host && t->host.end(t->host_ctx, m, &deps) && status == LUA_OK;
    luaL_unref(L, LUA_REGISTRYINDEX, t->guard_ref);
    t->guard_ref = outer;
    if (status != LUA_OK) {
        free(key);
        buf_free(&deps);
        buf_free(&cap.files);
        S_end_call(L, s, sink);
        return lua_error(L); /* the original error, located in the included file */
    }
    size_t len = s->own.len;
    /* what it holds counts whole, key and entry too: a template asking for
     * millions of keys fills the cache, not the worker's memory */
    size_t cost = len + deps.len + cap.files.len + (key ? strlen(key) : 0) + sizeof *e + 64;
    if (keep && cost <= TPL_CACHE_MAX - t->kept_bytes) {
        e = xmalloc(sizeof *e + len);
        e->len = len;
        e->deps_len = deps.len;
        e->deps = buf_detach(&deps);
        e->files_len = cap.files.len;
        e->files = buf_detach(&cap.files);
        memcpy(e->html, buf_cstr(&s->own), len);
        strmap_put(&t->kept, key, e);
        t->kept_bytes += cost;
    }
    free(key);
    buf_free(&deps);
    buf_free(&cap.files);
    lua_pushlstring(L, buf_cstr(&s->own), len);
    S_end_call(L, s, sink);
    return 1;
}

static void S_kept_free(void *v)
{
    tpl_kept *e = v;
    free(e->deps);
    free(e->files);
    free(e);
}

void tpl_set_cache_host(templates *t, const tpl_cache_host *fn, void *ctx)
{
    t->has_host = fn != NULL;
    if (fn)
        t->host = *fn;
    t->host_ctx = ctx;
}

void tpl_cache_counts(const templates *t, size_t *hits, size_t *misses)
{
    *hits = t->hits;
    *misses = t->misses;
}

templates *tpl_new(sandbox *sb, const char *root, size_t max_bytes, size_t max_output)
{
    templates *t = xcalloc(1, sizeof *t);
    t->sb = sb;
    t->root = xstrdup(root);
    t->max_bytes = max_bytes;
    t->max_output = max_output;
    strmap_init(&t->found);
    strmap_init(&t->noted);
    t->page_gen = 1; /* never the (void *)0 of a name not noted yet */
    lua_State *L = sandbox_lua(sb);
    lua_newtable(L);
    t->cache_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushlightuserdata(L, t);
    lua_pushcclosure(L, S_include, 1);
    t->include_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushlightuserdata(L, t);
    lua_pushcclosure(L, S_include_here, 1);
    t->here_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pushlightuserdata(L, t);
    lua_pushcclosure(L, S_include_cached, 1);
    t->cached_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    strmap_init(&t->kept);
    t->guard_ref = LUA_NOREF;
    return t;
}

void tpl_free(templates *t)
{
    if (!t)
        return;
    luaL_unref(sandbox_lua(t->sb), LUA_REGISTRYINDEX, t->cache_ref);
    luaL_unref(sandbox_lua(t->sb), LUA_REGISTRYINDEX, t->include_ref);
    luaL_unref(sandbox_lua(t->sb), LUA_REGISTRYINDEX, t->here_ref);
    luaL_unref(sandbox_lua(t->sb), LUA_REGISTRYINDEX, t->cached_ref);
    strmap_free_with(&t->kept, S_kept_free);
    buf_free(&t->key);
    buf_free(&t->inputs);
    buf_free(&t->shown);
    buf_free(&t->row);
    strmap_free(&t->found);
    strmap_free(&t->noted);
    free(t->root);
    free(t->theme);
    free(t);
}

void tpl_set_theme(templates *t, const char *dir)
{
    free(t->theme);
    t->theme = dir ? xstrdup(dir) : NULL;
}

const buf *tpl_inputs(const templates *t) { return &t->inputs; }

void tpl_page_begin(templates *t)
{
    buf_clear(&t->inputs);
    t->page_gen++;
}

void tpl_note_file(templates *t, const char *rel) { S_note_file(t, rel); }

int tpl_render(templates *t, const char *name, buf *out, diag_list *dl)
{
    lua_State *L = sandbox_lua(t->sb);
    char *rel = fs_join(TEMPLATES_DIR, name);
    /* include is a global of the templates' environment while a template runs */
    sandbox_push_template_env(t->sb);
    lua_rawgeti(L, LUA_REGISTRYINDEX, t->include_ref);
    lua_setfield(L, -2, "include");
    lua_rawgeti(L, LUA_REGISTRYINDEX, t->cached_ref);
    lua_setfield(L, -2, "include_cached");
    lua_pop(L, 1);
    /* a cached render cut short by an error that escaped it (memory) */
    if (t->guard_ref != LUA_NOREF) {
        luaL_unref(L, LUA_REGISTRYINDEX, t->guard_ref);
        t->guard_ref = LUA_NOREF;
    }
    if (S_compiled(L, t, name) != 0) {
        const char *msg = lua_tostring(L, -1);
        /* syntax errors arrive as "templates/x.html:12: message" */
        int line = 0, col = 0;
        size_t n = strlen(rel);
        const char *m = msg ? msg : "cannot compile";
        if (strncmp(m, rel, n) == 0 && m[n] == ':') {
            char *p;
            line = (int)strtol(m + n + 1, &p, 10);
            if (p[0] == ':' && p[1] >= '0' && p[1] <= '9') /* and a column */
                col = (int)strtol(p + 1, &p, 10);
            if (p[0] == ':' && p[1] == ' ')
                m = p + 2;
        }
        diag_error(dl, rel, line, col, "%s", m);
        lua_pop(L, 1);
        free(rel);
        return -1;
    }
    size_t before = out->len;
    t->depth = 0;
    tpl_sink *s = S_call(L, t, out);
    int sink = lua_gettop(L) - CALL_ARGS - 1;
    sandbox_error err;
    int rc = sandbox_pcall(t->sb, CALL_ARGS, NULL, &err);
    S_end_call(L, s, sink);
    if (rc != 0) {
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
