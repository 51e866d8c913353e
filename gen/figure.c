#include "figure.h"

#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "figmark.h"
#include "paginate.h"
#include "quote.h"
#include "utf8.h"

void fig_ctx_init(fig_ctx *c)
{
    memset(c, 0, sizeof *c);
    c->tolerance = 0.05;
    c->unverified = DIAG_WARNING;
    c->base_path = "";
    c->anchor_prefix = "fig";
}

void fig_ctx_free(fig_ctx *c)
{
    for (size_t i = 0; i < c->nfigs; i++) {
        figure *f = &c->figs[i];
        if (f->block) {
            free(f->block);
            continue;
        }
        free(f->quote);
        free(f->expr);
        free(f->mode);
        free(f->detail);
        free(f->provenance);
        free(f->anchor);
    }
    free(c->figs);
    c->figs = NULL;
    c->nfigs = c->cap = 0;
    buf_free(&c->tmp);
    buf_free(&c->detail);
    buf_free(&c->href);
    c->href_of[0] = c->href_of[1] = c->href_of[2] = NULL;
}

bool fig_may_have(const char *text, size_t len)
{
    static const char *const marks[] = {"=", "\xe2\x89\x88" /* ≈ */, "~", "cite", "\xe2\x89\xa0" /* ≠ */,
                                         "\xe2\x89\x89" /* ≉ */, "!"};
    for (const char *p = memchr(text, '{', len); p; p = memchr(p, '{', len - (size_t)(p - text))) {
        p++;
        size_t left = len - (size_t)(p - text);
        for (size_t k = 0; k < sizeof marks / sizeof *marks; k++) {
            size_t n = strlen(marks[k]);
            if (left >= n && memcmp(p, marks[k], n) == 0)
                return true;
        }
    }
    return false;
}

const char *fig_tier_name(fig_tier t) { return figmark_tier_key(t); }

static bool S_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static bool S_ascii_alnum(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}


static void S_trim(const char **s, size_t *n)
{
    while (*n && S_space(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n && S_space((*s)[*n - 1]))
        (*n)--;
}

#define S_NE "\xE2\x89\xA0"     /* ≠ U+2260 */
#define S_NAPPROX "\xE2\x89\x89" /* ≉ U+2249 */

/* The figure's mark at in[0..n): its length (0: none), and whether it is
 * approximate and refuted: = ~ ≈ (kept), ≠ != ≉ !~ (refuted). */
static size_t S_mark(const char *in, size_t n, bool *approx, bool *refuted)
{
    *approx = *refuted = false;
    if (n >= 1 && (in[0] == '=' || in[0] == '~'))
        return *approx = in[0] == '~', 1;
    if (n >= 2 && in[0] == '!' && (in[1] == '=' || in[1] == '~'))
        return *refuted = true, *approx = in[1] == '~', 2;
    if (n >= 3 && memcmp(in, "\xE2\x89\x88", 3) == 0) /* ≈ */
        return *approx = true, 3;
    if (n >= 3 && memcmp(in, S_NE, 3) == 0)
        return *refuted = true, 3;
    if (n >= 3 && memcmp(in, S_NAPPROX, 3) == 0)
        return *refuted = *approx = true, 3;
    return 0;
}

/* The inner part of `... {INNER}`: sets *brace to the offset of '{'. */
static bool S_figure_parts(const char *lit, size_t len, size_t *brace)
{
    if (len < 3 || lit[len - 1] != '}')
        return false;
    const char *b = memchr(lit, '{', len);
    if (!b)
        return false;
    const char *in = b + 1;
    size_t n = (size_t)(lit + len - 1 - in);
    bool approx, refuted;
    if (S_mark(in, n, &approx, &refuted))
        goto yes;
    if (n >= 5 && memcmp(in, "cite", 4) == 0 && S_space(in[4]))
        goto yes;
    return false;
yes:
    *brace = (size_t)(b - lit);
    return true;
}

/* fig_classify of a trimmed literal; *brace as S_figure_parts sets it. */
static span_kind S_classify(const char *lit, size_t len, size_t *brace)
{
    if (len >= 5 && memcmp(lit, "{lua}", 5) == 0 && (len == 5 || S_space(lit[5])))
        return SPAN_INLINE_LUA;
    if (!S_figure_parts(lit, len, brace))
        return SPAN_CODE;
    if (*brace > 0 && lit[*brace - 1] == '\\')
        return SPAN_ESCAPED;
    return SPAN_FIGURE;
}

span_kind fig_classify(const char *lit, size_t len)
{
    S_trim(&lit, &len);
    size_t brace;
    return S_classify(lit, len, &brace);
}

/* A piece of text that need not end in NUL. */
typedef struct {
    const char *s;
    size_t n;
} S_str;

#define S_LIT(lit) ((S_str){"" lit, sizeof(lit) - 1})
#define S_BUF(b) ((S_str){(b)->ptr, (b)->len})

/* Keeps c->href, the escaped URL of the figures' report rows up to the
 * anchor's number ("/checks/#page-"), and c->prefix_len in step with the
 * ctx's strings and the part of the report that lists figure n (0-based on
 * the page; paginate.h): built once per page and part instead of escaped for
 * every figure. */
static void S_update_href(fig_ctx *c, size_t n)
{
    size_t part = c->report_url ? paginate_part_of(n, c->report_rows) : 0;
    if (c->href.len && c->href_of[0] == c->report_url && c->href_of[1] == c->base_path &&
        c->href_of[2] == c->anchor_prefix && c->href_part == part)
        return;
    buf *h = &c->href;
    buf_clear(h);
    if (c->report_url) {
        buf_put_html(h, c->report_url, strlen(c->report_url));
        paginate_part_suffix(h, part);
        buf_putc(h, '#');
    } else {
        buf_put_html(h, c->base_path, strlen(c->base_path));
        buf_puts(h, "/checks/#");
    }
    c->prefix_len = strlen(c->anchor_prefix);
    buf_put_html(h, c->anchor_prefix, c->prefix_len);
    buf_putc(h, '-');
    c->href_of[0] = c->report_url;
    c->href_of[1] = c->base_path;
    c->href_of[2] = c->anchor_prefix;
    c->href_part = part;
}

/* A new figure at the end of c->figs; its strings are set by S_pack. */
static figure *S_new_figure(fig_ctx *c, int line, int col)
{
    if (c->nfigs == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->figs = xrealloc(c->figs, c->cap * sizeof *c->figs);
    }
    figure *f = &c->figs[c->nfigs++];
    memset(f, 0, sizeof *f);
    f->line = line;
    f->col = col;
    f->value = NAN; /* until an expression gives one */
    return f;
}

/* Sets f's strings, copied into one allocation (f->block), the anchor
 * "<prefix>-<n>" made here: a figure costs one malloc and one free. */
static void S_pack(fig_ctx *c, figure *f, S_str qt, S_str expr, S_str mode, S_str detail,
                   S_str prov)
{
    size_t n = c->anchor_base + (size_t)(f - c->figs) + 1;
    S_update_href(c, n - 1);
    char num[24], *d = num + sizeof num;
    do {
        *--d = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    size_t dn = (size_t)(num + sizeof num - d);
    const S_str part[] = {qt, expr, mode, detail, prov};
    size_t total = c->prefix_len + 1 + dn + 1;
    for (size_t i = 0; i < 5; i++)
        total += part[i].n + 1;
    char *p = f->block = xmalloc(total);
    char **field[] = {&f->quote, &f->expr, &f->mode, &f->detail, &f->provenance};
    for (size_t i = 0; i < 5; i++) {
        *field[i] = p;
        if (part[i].n)
            memcpy(p, part[i].s, part[i].n);
        p += part[i].n;
        *p++ = '\0';
    }
    f->anchor = p;
    memcpy(p, c->anchor_prefix, c->prefix_len);
    p += c->prefix_len;
    *p++ = '-';
    memcpy(p, d, dn);
    p[dn] = '\0';
}

/* s[0..n) as a C string in b (cleared first); valid until b changes. */
static const char *S_cstr(buf *b, const char *s, size_t n)
{
    buf_clear(b);
    buf_put(b, s, n);
    return buf_cstr(b);
}

static bool S_ident_start(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static bool S_lua_keyword(const char *s, size_t n)
{
    static const char *const kw[] = {"and",   "break", "do",     "else", "elseif", "end",
                                     "false", "for",   "function", "goto", "if",   "in",
                                     "local", "nil",   "not",    "or",   "repeat", "return",
                                     "then",  "true",  "until",  "while"};
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++)
        if (strlen(kw[i]) == n && memcmp(kw[i], s, n) == 0)
            return true;
    return false;
}

/* Is name[0..n) nil in the page's environment? The environment is a plain
 * table (the sandbox copies the builtins into it), so a raw read is the
 * global's value and runs no code. */
static bool S_global_nil(fig_ctx *c, const char *name, size_t n)
{
    lua_State *L = sandbox_lua(c->sb);
    sandbox_push_env(c->sb);
    lua_pushlstring(L, name, n);
    lua_rawget(L, -2);
    bool nil = lua_isnil(L, -1);
    lua_pop(L, 2);
    return nil;
}

/* The first name that expr[0..n) reads as a global and that is nil on this
 * page: `qwen` in kv.bytes(qwen, 4096). Strings, comments, fields (a.b,
 * a:b) and table keys ({n = 1}) are skipped. Returns its length (0: none)
 * and its offset in *at. */
static size_t S_undefined_name(fig_ctx *c, const char *e, size_t n, size_t *at)
{
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)e[i];
        if (ch == '"' || ch == '\'') {
            for (i++; i < n && (unsigned char)e[i] != ch; i++)
                if (e[i] == '\\')
                    i++;
            i++;
        } else if (ch == '[' && i + 1 < n && (e[i + 1] == '[' || e[i + 1] == '=')) {
            size_t lvl = 0, j = i + 1;
            while (j < n && e[j] == '=')
                lvl++, j++;
            if (j >= n || e[j] != '[') {
                i++;
                continue;
            }
            for (i = j + 1; i < n; i++) {
                if (e[i] != ']')
                    continue;
                size_t k = i + 1, m = 0;
                while (k < n && e[k] == '=')
                    m++, k++;
                if (m == lvl && k < n && e[k] == ']') {
                    i = k;
                    break;
                }
            }
            i++;
        } else if (ch == '-' && i + 1 < n && e[i + 1] == '-') {
            while (i < n && e[i] != '\n')
                i++;
        } else if (S_ident_start(ch)) {
            size_t s0 = i;
            while (i < n && (S_ident_start((unsigned char)e[i]) || (e[i] >= '0' && e[i] <= '9')))
                i++;
            size_t p = s0;
            while (p > 0 && S_space(e[p - 1]))
                p--;
            bool field = p > 0 && (e[p - 1] == ':' ||
                                   (e[p - 1] == '.' && !(p > 1 && e[p - 2] == '.')));
            size_t q = i;
            while (q < n && S_space(e[q]))
                q++;
            bool key = q < n && e[q] == '=' && !(q + 1 < n && e[q + 1] == '=');
            if (!field && !key && !S_lua_keyword(e + s0, i - s0) &&
                S_global_nil(c, e + s0, i - s0)) {
                *at = s0;
                return i - s0;
            }
        } else if (ch >= '0' && ch <= '9') {
            while (i < n && (S_ascii_alnum((unsigned char)e[i]) || e[i] == '.'))
                i++;
        } else {
            i++;
        }
    }
    return 0;
}

/* The global that Lua's message names ("... (global 'kv')") when it is nil on
 * this page: its length, its offset in msg in *at. */
static size_t S_named_global(fig_ctx *c, const char *msg, size_t *at)
{
    const char *g = strstr(msg, "(global '");
    if (!g)
        return 0;
    const char *s0 = g + 9, *end = strchr(s0, '\'');
    if (!end || end == s0 || !S_global_nil(c, s0, (size_t)(end - s0)))
        return 0;
    *at = (size_t)(s0 - msg);
    return (size_t)(end - s0);
}

/* A figure, inline value or block that failed because it reads a global that
 * is nil (name, n bytes) after a {lua} block of the page failed: the block's
 * error is the one to fix, so the first such failure says it depends on the
 * block and the later ones are not reported again (they still fail). Returns
 * true when the failure was reported or left out this way. */
static bool S_dependent(fig_ctx *c, const char *name, size_t n, int line, int col, const char *what)
{
    if (!c->failed_block_line || n == 0)
        return false;
    if (!c->dependents++)
        diag_error(c->dl, c->file, line, col,
                   "%s: `%.*s` is not defined: it depends on the {lua} block at line %d, which "
                   "failed (later figures that depend on it are not reported again)",
                   what, (int)n, name, c->failed_block_line);
    return true;
}

/* Reports a Lua error of an expression (expr, en bytes) or block (expr NULL).
 * Budget and memory errors are reported once per page: everything after them
 * fails the same way. A global the expression reads that is nil is named, or,
 * after a failed block, blamed on the block (S_dependent): then it returns
 * true. */
static bool S_lua_error(fig_ctx *c, const sandbox_error *err, int line, int col,
                        const char *what, const char *expr, size_t en)
{
    if (err->limit) {
        if (c->limit_reported)
            return false;
        c->limit_reported = true;
    }
    bool here = err->file && strcmp(err->file, c->file) == 0 && err->line > 0;
    int eline = here ? err->line : line, ecol = here && err->line != line ? 0 : col;
    size_t at = 0, n = err->limit ? 0 : S_named_global(c, err->msg, &at);
    const char *name = err->msg + at;
    if (!n && expr && !err->limit) {
        n = S_undefined_name(c, expr, en, &at);
        name = expr + at;
    }
    if (S_dependent(c, name, n, eline, ecol, what))
        return true;
    if (n && !strstr(err->msg, "(global '"))
        diag_error(c->dl, c->file, eline, ecol, "%s: %s (`%.*s` is not defined on this page)",
                   what, err->msg, (int)n, name);
    else
        diag_error(c->dl, c->file, eline, ecol, "%s: %s", what, err->msg);
    return false;
}

static void S_put_html(buf *b, const char *s) { buf_put_html(b, s, strlen(s)); }


/* The figure's details and markup (figmark.h), from its strings: value is the
 * value in the quote's unit or NULL, source a cited figure's source title. */
static void S_markup(fig_ctx *c, const figure *f, const char *value, const char *source,
                     const char *true_value, bool in_link, buf *enter, buf *exit)
{
    S_update_href(c, c->anchor_base + (size_t)(f - c->figs));
    buf *u = &c->tmp; /* the source's URL, escaped (c->tmp is free by now) */
    buf_clear(u);
    if (f->tier == FIG_CITED && f->ok) {
        char *at = sources_path(c->src, f->expr);
        S_put_html(u, c->base_path);
        S_put_html(u, at);
        free(at);
    }
    figmark m = {
        .f = f,
        .value = value,
        .message = f->ok ? NULL : f->detail,
        .source = source,
        .true_value = true_value,
        .source_url = u->len ? buf_cstr(u) : NULL,
        .report_url = c->href.ptr,
        .report_url_len = c->href.len,
        .row = f->anchor + c->prefix_len + 1,
        .lang = figmark_lang(c->language),
        .in_link = in_link,
    };
    figmark_open(enter, &m);
    figmark_close(exit, &m);
}

/* "return EXPR" for sandbox_eval: in small (of size cap) when it fits, as
 * most expressions do, else in big. Returns the code; *len its length. */
static const char *S_return_code(char *small, size_t cap, buf *big, const char *expr, size_t n,
                                 size_t *len)
{
    *len = 7 + n;
    if (n < cap - 7) {
        memcpy(small, "return ", 7);
        memcpy(small + 7, expr, n);
        return small;
    }
    BUF_PUT_LIT(big, "return ");
    buf_put(big, expr, n);
    return big->ptr;
}

static void S_inline_lua(fig_ctx *c, const char *expr, size_t n, int line, int col, buf *text)
{
    lua_State *L = sandbox_lua(c->sb);
    if (n == 0) {
        diag_error(c->dl, c->file, line, col, "`{lua}` needs an expression after it");
        return;
    }
    char small[256];
    buf code = BUF_INIT;
    size_t cn;
    const char *cp = S_return_code(small, sizeof small, &code, expr, n, &cn);
    int nres = 0;
    sandbox_error err;
    if (sandbox_eval(c->sb, cp, cn, c->file, line, &nres, &err) != 0) {
        S_lua_error(c, &err, line, col, "in `{lua}`", expr, n);
        sandbox_error_free(&err);
    } else {
        if (nres == 0 || !sandbox_tostring(L, -nres, text)) {
            buf_clear(text);
            diag_error(c->dl, c->file, line, col,
                       "`{lua}` expression must give text or a number, not %s",
                       nres ? lua_typename(L, lua_type(L, -nres)) : "nothing");
        }
        lua_pop(L, nres);
    }
    buf_free(&code);
}

static bool S_valid_key(const char *k, size_t n)
{
    if (n == 0 || n > 100)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = k[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_' || ch == '.' || ch == ':'))
            return false;
    }
    return true;
}

/* The entry of source key k (n bytes, NUL-terminated), or NULL with the
 * reason appended to d. */
static const yv *S_source(fig_ctx *c, const char *k, size_t n, buf *d)
{
    const yv *entry = NULL;
    if (!S_valid_key(k, n)) {
        buf_printf(d, "malformed source key \"%s\"", k);
    } else if (!sources_present(c->src)) {
        buf_printf(d, "cited source \"%s\", but there is no %s", k, SOURCES_FILE);
    } else if (!(entry = sources_get(c->src, k))) {
        buf_printf(d, "cited source \"%s\" is not in %s", k, SOURCES_FILE);
    }
    return entry;
}

static void S_cite(fig_ctx *c, figure *f, S_str qt, const char *key, size_t n, bool in_link,
                   buf *enter, buf *exit)
{
    f->tier = FIG_CITED;
    f->value = 0;
    const char *k = S_cstr(&c->tmp, key, n);
    buf *d = &c->detail;
    buf_clear(d);
    const yv *entry = S_source(c, k, n, d);
    if (!entry) {
        diag_error(c->dl, c->file, f->line, f->col, "%s", buf_cstr(d));
    } else {
        f->ok = true;
        const char *title = yv_string(yv_get(entry, "title"));
        buf_puts(d, title ? title : k);
    }
    S_pack(c, f, qt, (S_str){k, n}, S_LIT("cite"), S_BUF(d), S_LIT(""));
    S_markup(c, f, NULL, f->ok ? f->detail : NULL, NULL, in_link, enter, exit);
}

/* Evaluates the expression ex (en bytes, NUL-terminated) of figure c->figs[fi] quoted
 * as q and writes its detail into c->detail. A refuted figure passes when
 * no value agrees with q (each is a finite number that quote_check refuses). Returns true when the detail
 * is an error still to be reported (a Lua error is reported here). */
static bool S_check(fig_ctx *c, size_t fi, const quote *q, const char *ex, size_t en, bool approx,
                    bool refuted, double tol, S_str quote_text, S_str *prov)
{
    buf *d = &c->detail;
    char small[256];
    buf codebuf = BUF_INIT;
    size_t cn;
    const char *cp = S_return_code(small, sizeof small, &codebuf, ex, en, &cn);
    sandbox_figure_begin(c->sb);
    int nres = 0;
    sandbox_error lerr;
    lua_State *L = sandbox_lua(c->sb);
    bool report = false;
    int line = c->figs[fi].line, col = c->figs[fi].col;
    int rc = sandbox_eval(c->sb, cp, cn, c->file, line, &nres, &lerr);
    /* the expression may have called back into the host (markdown_inline
     * adds figures to this page's array and may move it): the figure is
     * found by its index from here on, never by a pointer kept across Lua */
    figure *f = &c->figs[fi];
    if (rc != 0) {
        buf_printf(d, "in figure `%.*s`: %s", (int)quote_text.n, quote_text.s, lerr.msg);
        S_lua_error(c, &lerr, line, col, "in figure", ex, en);
        sandbox_error_free(&lerr);
        buf_free(&codebuf);
        return false;
    }
    buf_free(&codebuf);
    if (nres == 0) {
        buf_printf(d, "the expression %s gives no value", ex);
        return true;
    }
    for (int i = 0; i < nres; i++) {
        int idx = -nres + i;
        if (lua_type(L, idx) != LUA_TNUMBER) {
            buf_printf(d, "value %d of `%s` is a %s, not a number", i + 1, ex,
                       luaL_typename(L, idx));
            size_t at = 0, un = lua_isnil(L, idx) ? S_undefined_name(c, ex, en, &at) : 0;
            report = !S_dependent(c, ex + at, un, line, col, "in figure");
            if (report && un)
                buf_printf(d, " (`%.*s` is not defined on this page)", (int)un, ex + at);
            break;
        }
        double v = lua_tonumber(L, idx);
        if (i == 0)
            f->value = v;
        bool agrees = quote_check(q, ex, v, approx, tol, sandbox_units(c->sb), NULL);
        if (refuted ? !agrees && isfinite(v) : agrees)
            continue;
        /* again, for the message: failures are rare */
        if (nres > 1)
            buf_printf(d, "value %d of %d: ", i + 1, nres);
        if (refuted && agrees) {
            buf_printf(d, "quoted %s and it matches", q->text);
            if (approx || q->approx)
                buf_printf(d, " within %g%%", tol * 100);
            buf_printf(d, ": the claim is right (%s = ", ex);
            quote_describe(q, v, sandbox_units(c->sb), d);
            buf_putc(d, ')');
        } else {
            quote_check(q, ex, v, approx, tol, sandbox_units(c->sb), d);
        }
        report = true;
        break;
    }
    lua_pop(L, nres);
    const char *pv = NULL;
    if (sandbox_figure_measured(c->sb, &pv)) {
        f->tier = refuted ? FIG_REFUTED : FIG_MEASURED;
        *prov = (S_str){pv, strlen(pv)};
    }
    if (!report) {
        f->ok = true;
        buf_put(d, ex, en);
        BUF_PUT_LIT(d, " = ");
        quote_describe(q, f->value, sandbox_units(c->sb), d);
    }
    return report;
}

/* A refuted claim's source, "; cite KEY" at the end of p..*end: moves *end
 * before it and writes "claimed in KEY: title" to claim (*src the entry), or
 * the reason it is not in sources.yaml (then returns true). */
static bool S_claim_source(fig_ctx *c, const char *p, const char **end, buf *claim,
                           const yv **src)
{
    const char *semi = *end;
    while (semi > p && semi[-1] != ';')
        semi--;
    if (semi == p)
        return false;
    const char *k = semi;
    size_t kn = (size_t)(*end - k);
    S_trim(&k, &kn);
    if (!(kn > 5 && memcmp(k, "cite", 4) == 0 && S_space(k[4])))
        return false;
    k += 4, kn -= 4;
    S_trim(&k, &kn);
    buf key = BUF_INIT;
    buf_put(&key, k, kn);
    *src = S_source(c, buf_cstr(&key), kn, claim);
    if (*src) {
        const char *title = yv_string(yv_get(*src, "title"));
        buf_printf(claim, "claimed in %s: %s", buf_cstr(&key), title ? title : "");
    }
    buf_free(&key);
    *end = semi - 1;
    return !*src;
}

/* A refuted quote's true value ("43 GB"), the value as q writes its number,
 * with as many more decimals (up to 3) as it takes not to read as the quote. */
static void S_true_value(buf *v, const quote *q, double value)
{
    for (int dec = q->decimals; dec <= q->decimals + 3; dec++) {
        buf_clear(v);
        quote_restate(q, value, dec, v);
        if (strcmp(buf_cstr(v), q->text + q->body) != 0)
            break;
    }
}

void fig_span(fig_ctx *c, const char *lit, size_t len, int line, int col, bool in_link,
              buf *enter, buf *text, buf *exit, bool *code)
{
    *code = false;
    S_trim(&lit, &len);
    size_t brace = 0;
    span_kind kind = S_classify(lit, len, &brace);
    if (kind == SPAN_INLINE_LUA) {
        const char *e = lit + 5;
        size_t n = len - 5;
        S_trim(&e, &n);
        S_inline_lua(c, e, n, line, col, text);
        return;
    }
    if (kind == SPAN_ESCAPED) {
        *code = true;
        buf_put(text, lit, brace - 1);
        buf_put(text, lit + brace, len - brace);
        return;
    }
    const char *qs = lit;
    size_t qn = brace;
    S_trim(&qs, &qn);
    const char *in = lit + brace + 1;
    size_t inn = len - brace - 2;
    if (in[0] == 'c' && qn > 0) {
        quote probe;
        if (quote_parse(qs, qn, sandbox_units(c->sb), &probe, NULL) != 0) {
            /* not a number: a citation, not a cited figure */
            const char *k = in + 4;
            size_t kn = inn - 4;
            S_trim(&k, &kn);
            const char *key = S_cstr(&c->tmp, k, kn);
            buf_put(text, qs, qn);
            if (!S_valid_key(k, kn) || !sources_get(c->src, key)) {
                diag_error(c->dl, c->file, line, col, "cited source \"%s\" is not in %s", key,
                           SOURCES_FILE);
            } else if (!in_link) {
                char *at = sources_path(c->src, key);
                BUF_PUT_LIT(enter, "<a class=\"cite\" href=\"");
                S_put_html(enter, c->base_path);
                S_put_html(enter, at);
                BUF_PUT_LIT(enter, "\">");
                free(at);
                BUF_PUT_LIT(exit, "</a>");
            }
            return;
        }
    }
    figure *f = S_new_figure(c, line, col);
    S_str quote_text = {qs, qn};
    buf_put(text, qs, qn);
    if (qn == 0) {
        static const char msg[] =
            "a figure needs the quoted number before the braces: `224 MiB {= ...}`";
        S_pack(c, f, quote_text, (S_str){in, inn}, S_LIT("?"), (S_str){msg, sizeof msg - 1},
               S_LIT(""));
        diag_error(c->dl, c->file, line, col, "%s", msg);
        return;
    }
    if (in[0] == 'c') {
        const char *k = in + 4;
        size_t kn = inn - 4;
        S_trim(&k, &kn);
        S_cite(c, f, quote_text, k, kn, in_link, enter, exit);
        return;
    }
    /* mark and optional tolerance: "=", "≈", "~", "≈10%", "~2.5%", "≠", "≉5%" */
    bool approx, refuted;
    size_t skip = S_mark(in, inn, &approx, &refuted);
    double tol = c->tolerance;
    const char *p = in + skip, *end = in + inn;
    if (approx) {
        const char *d = p;
        while (d < end && ((*d >= '0' && *d <= '9') || *d == '.'))
            d++;
        if (d > p && d < end && *d == '%') {
            char tmp[32];
            size_t tn = (size_t)(d - p) < sizeof tmp - 1 ? (size_t)(d - p) : sizeof tmp - 1;
            memcpy(tmp, p, tn);
            tmp[tn] = '\0';
            tol = atof(tmp) / 100.0;
            p = d + 1;
        }
    }
    S_str mode = {in, (size_t)(p - in)};
    buf claim = BUF_INIT;
    const yv *claim_src = NULL;
    bool claim_bad = refuted && S_claim_source(c, p, &end, &claim, &claim_src);
    const char *expr = p;
    size_t en = (size_t)(end - p);
    S_trim(&expr, &en);
    const char *ex = S_cstr(&c->tmp, expr, en);
    buf *d = &c->detail;
    buf_clear(d);
    S_str prov = S_LIT("");
    bool report = true;
    quote q;
    buf err = BUF_INIT;
    if (claim_bad) {
        buf_put(d, claim.ptr, claim.len);
    } else if (quote_parse(qs, qn, sandbox_units(c->sb), &q, &err) != 0) {
        BUF_PUT_LIT(d, "malformed quote: ");
        buf_put(d, buf_cstr(&err), err.len);
    } else if (en == 0) {
        buf_puts(d, "the figure has no expression after its mark: `224 MiB {= EXPR}`");
    } else if (!(tol >= 0 && tol < 1)) {
        buf_puts(d, "tolerance must be between 0% and 100%");
    } else {
        size_t fi = (size_t)(f - c->figs);
        report = S_check(c, fi, &q, ex, en, approx, refuted, tol, quote_text, &prov);
        f = &c->figs[fi]; /* c->figs may have moved: see S_check */
    }
    buf_free(&err);
    if (report)
        diag_error(c->dl, c->file, line, col, "%s", buf_cstr(d));
    if (refuted) {
        f->tier = FIG_REFUTED;
        if (claim_src)
            prov = S_BUF(&claim);
    }
    S_pack(c, f, quote_text, (S_str){ex, en}, mode, S_BUF(d), prov);
    /* a passing figure's detail is "EXPR = <value in the quote's unit>" */
    buf truth = BUF_INIT; /* a refuted claim's true value, as its quote writes it */
    if (refuted && f->ok)
        S_true_value(&truth, &q, f->value);
    S_markup(c, f, f->ok ? f->detail + en + 3 : NULL, NULL, truth.len ? buf_cstr(&truth) : NULL,
             in_link, enter, exit);
    buf_free(&truth);
    buf_free(&claim);
}

char *fig_plain_text(const char *s)
{
    buf b = BUF_INIT;
    while (*s) {
        if (*s == '`') {
            const char *end = strchr(s + 1, '`');
            if (!end)
                break;
            const char *lit = s + 1;
            size_t n = (size_t)(end - lit), brace;
            S_trim(&lit, &n);
            span_kind k = fig_classify(lit, n);
            if (k == SPAN_FIGURE && S_figure_parts(lit, n, &brace)) {
                const char *q = lit;
                size_t qn = brace;
                S_trim(&q, &qn);
                buf_put(&b, q, qn);
            } else if (k == SPAN_ESCAPED && S_figure_parts(lit, n, &brace)) {
                buf_put(&b, lit, brace - 1);
                buf_put(&b, lit + brace, n - brace);
            } else if (k == SPAN_CODE) {
                buf_put(&b, lit, n);
            }
            s = end + 1;
            continue;
        }
        if (*s == '[') {
            const char *close = strstr(s, "](");
            const char *paren = close ? strchr(close, ')') : NULL;
            if (close && paren && !memchr(s + 1, '[', (size_t)(close - s - 1))) {
                buf_put(&b, s + 1, (size_t)(close - s - 1));
                s = paren + 1;
                continue;
            }
        }
        /* emphasis marks; an underscore inside a word (kv_cache) is text */
        if (*s == '*' || (*s == '_' && (b.len == 0 || !S_ascii_alnum((unsigned char)b.ptr[b.len - 1]) ||
                                        !S_ascii_alnum((unsigned char)s[1])))) {
            s++;
            continue;
        }
        buf_putc(&b, *s++);
    }
    buf_puts(&b, s);
    return buf_detach(&b);
}

/* ---------- blocks ---------- */

void fig_block(fig_ctx *c, const char *code, size_t len, int first_line, int col, bool *echo,
               size_t *body, buf *asis)
{
    *echo = false;
    *body = 0;
    bool eval = true, want_asis = false;
    /* cell options: leading lines "--| key: value" */
    size_t i = 0;
    int line = first_line;
    while (i < len && len - i >= 3 && memcmp(code + i, "--|", 3) == 0) {
        const char *nl = memchr(code + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - code) : len;
        const char *opt = code + i + 3;
        size_t on = e - i - 3;
        S_trim(&opt, &on);
        const char *colon = memchr(opt, ':', on);
        if (!colon) {
            diag_error(c->dl, c->file, line, col, "cell option \"%.*s\" must be \"key: value\"",
                       (int)on, opt);
        } else {
            const char *k = opt, *v = colon + 1;
            size_t kn = (size_t)(colon - opt), vn = on - kn - 1;
            S_trim(&k, &kn);
            S_trim(&v, &vn);
            bool is_true = vn == 4 && !memcmp(v, "true", 4);
            bool is_false = vn == 5 && !memcmp(v, "false", 5);
            bool output = kn == 6 && !memcmp(k, "output", 6);
            if (output && vn == 4 && !memcmp(v, "asis", 4) && asis)
                want_asis = true;
            else if (output && (is_true || is_false))
                ; /* a block shows no output but with asis */
            else if (output)
                diag_error(c->dl, c->file, line, col,
                           "cell option output must be asis, true or false, not \"%.*s\"%s",
                           (int)vn, v, asis ? "" : " (asis is not allowed here)");
            else if (!is_true && !is_false)
                diag_error(c->dl, c->file, line, col,
                           "cell option %.*s must be true or false, not \"%.*s\"", (int)kn, k,
                           (int)vn, v);
            else if (kn == 4 && !memcmp(k, "echo", 4))
                *echo = is_true;
            else if (kn == 4 && !memcmp(k, "eval", 4))
                eval = is_true;
            else
                diag_error(c->dl, c->file, line, col,
                           "unknown cell option \"%.*s\" (known: echo, eval, output)", (int)kn,
                           k);
        }
        i = nl ? e + 1 : len;
        line++;
    }
    *body = i;
    if (!eval)
        return;
    int nres = 0;
    sandbox_error err;
    if (want_asis)
        sandbox_capture_print(c->sb, asis, FIG_ASIS_MAX);
    int rc = sandbox_run(c->sb, code, len, c->file, first_line, &nres, &err);
    if (want_asis)
        sandbox_capture_print(c->sb, NULL, 0);
    if (rc != 0) {
        if (want_asis)
            buf_clear(asis); /* a failed block emits nothing */
        if (!S_lua_error(c, &err, first_line, col, "in {lua} block", NULL, 0)) {
            /* what it failed to define: later failures that need it depend on it */
            c->failed_block_line = first_line - 1;
            c->dependents = 0;
        }
        sandbox_error_free(&err);
        return;
    }
    lua_pop(sandbox_lua(c->sb), nres);
}

/* ---------- the unverified-figure lint ---------- */


/* Length of a unit at s (or 0): quote.c's byte, percent and ratio units, with
 * the lint's own word rules on top. */
static size_t S_lint_unit(const char *s, size_t n, bool spaced)
{
    if (n == 0)
        return 0;
    /* most numbers in prose are followed by a word that starts no unit */
    switch ((unsigned char)s[0]) {
    case 'K': case 'M': case 'G': case 'T': case 'k': case 'b': case 'B':
    case '%': case 'x': case 0xC3: case 0xE5:
        break;
    default:
        return 0;
    }
    const quote_unit *unit = NULL;
    size_t wl = quote_units_prefix(s, n, &unit);
    if (wl == 0)
        return 0;
    /* a name that ends in a letter ends at a word boundary: "MBps", "bitrate" */
    if (n > wl && S_ascii_alnum((unsigned char)s[wl]) && S_ascii_alnum((unsigned char)s[wl - 1]))
        return 0;
    /* "7B" names a model size (parameters), not bytes: bare B needs a space;
     * "4 x 8" is arithmetic, "4x" a ratio */
    if ((!strcmp(unit->name, "B") && !spaced) || (!strcmp(unit->name, "x") && spaced))
        return 0;
    return wl;
}

/* The start of file line `line` in c->md (NULL past its end), walked to
 * from the last one asked for when that one is not further down: a page
 * with a figure on every line costs one pass over its Markdown, not one
 * per figure. */
static const char *S_md_line(fig_ctx *c, int line)
{
    if (c->md_at_of != c->md || line < c->md_at_line) {
        c->md_at_of = c->md;
        c->md_at = c->md;
        c->md_at_line = c->md_first_line;
    }
    const char *end = c->md + c->md_len;
    while (c->md_at && c->md_at_line < line) {
        const char *nl = memchr(c->md_at, '\n', (size_t)(end - c->md_at));
        c->md_at = nl ? nl + 1 : NULL;
        c->md_at_line++;
    }
    return c->md_at;
}

void fig_lint_text(fig_ctx *c, const char *text, size_t len, int line, int col)
{
    size_t i = 0;
    int cur_line = line, line_start = 0; /* byte offset where cur_line starts */
    int cur_col0 = col;
    size_t counted = 0; /* newlines before here are in cur_line */
    while (i < len) {
        /* to the next digit, eight bytes at a time: bytes that are not
         * digits become >= 10 after the xor, and UTF-8 bytes keep their top bit */
        while (i + 8 <= len) {
            uint64_t w;
            memcpy(&w, text + i, 8);
            uint64_t x = w ^ 0x3030303030303030ull;
            if ((x - 0x0A0A0A0A0A0A0A0Aull) & ~x & 0x8080808080808080ull)
                break;
            i += 8;
        }
        while (i < len && !(text[i] >= '0' && text[i] <= '9'))
            i++;
        if (i >= len)
            break;
        /* the lines passed on the way */
        for (const char *nl; counted < i && (nl = memchr(text + counted, '\n', i - counted));) {
            cur_line++;
            line_start = (int)(nl - text) + 1;
            cur_col0 = 1;
            counted = (size_t)(nl - text) + 1;
        }
        counted = i;
        bool starts = true;
        if (starts && i > 0) {
            unsigned char prev = (unsigned char)text[i - 1];
            if (S_ascii_alnum(prev) || prev == '.' || prev == ',' || prev == '_' || prev == '-')
                starts = false;
        }
        if (!starts) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < len && ((text[j] >= '0' && text[j] <= '9') ||
                           ((text[j] == '.' || text[j] == ',') && j + 1 < len &&
                            text[j + 1] >= '0' && text[j + 1] <= '9')))
            j++;
        size_t k = j;
        bool spaced = false;
        while (k < len && text[k] == ' ') {
            k++;
            spaced = true;
        }
        size_t ul = S_lint_unit(text + k, len - k, spaced);
        if (ul) {
            int at = cur_col0 + (int)(i - (size_t)line_start);
            /* entities and escapes make text shorter than its source: find
             * the figure on its source line when the source is at hand */
            if (c->md && cur_line >= c->md_first_line) {
                const char *p = S_md_line(c, cur_line), *end = c->md + c->md_len;
                if (p) {
                    const char *eol = memchr(p, '\n', (size_t)(end - p));
                    size_t ln = eol ? (size_t)(eol - p) : (size_t)(end - p);
                    size_t from = at > 1 ? (size_t)at - 1 : 0, need = k + ul - i;
                    for (size_t q = from; q + need <= ln; q++) {
                        if (memcmp(p + q, text + i, need) == 0) {
                            at = (int)q + 1;
                            break;
                        }
                    }
                }
            }
            if (c->unverified == DIAG_WARNING && !diag_fold_take(&c->lint_fold, cur_line, at)) {
                i = k + ul;
                continue;
            }
            diag_add(c->dl, c->unverified, c->file, cur_line, at,
                     "unverified figure \"%.*s\": quote it as a figure (`%.*s {= EXPR}`) or cite "
                     "it (`%.*s {cite KEY}`)",
                     (int)(k + ul - i), text + i, (int)(k + ul - i), text + i,
                     (int)(k + ul - i), text + i);
            i = k + ul;
            continue;
        }
        i = j;
    }
}
