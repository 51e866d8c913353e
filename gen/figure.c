#include "figure.h"

#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quote.h"
#include "utf8.h"

/* The provenance of a figure that was not measured and the mode of an exact
 * figure, shared by most figures instead of two allocations each: never
 * written, and fig_ctx_free (the only place that frees a figure's strings)
 * leaves them alone. */
static const char S_no_provenance[] = "";
static const char S_exact_mode[] = "=";

static void S_free_str(char *s)
{
    if (s != S_no_provenance && s != S_exact_mode)
        free(s);
}

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
        free(f->quote);
        free(f->expr);
        S_free_str(f->mode);
        free(f->detail);
        S_free_str(f->provenance);
        free(f->anchor);
    }
    free(c->figs);
    c->figs = NULL;
    c->nfigs = c->cap = 0;
}

const char *fig_tier_name(fig_tier t)
{
    return t == FIG_MEASURED ? "measured" : t == FIG_CITED ? "cited" : "computed";
}

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
    if (n >= 1 && (in[0] == '=' || in[0] == '~'))
        goto yes;
    if (n >= 3 && memcmp(in, "\xE2\x89\x88", 3) == 0) /* ≈ */
        goto yes;
    if (n >= 5 && memcmp(in, "cite", 4) == 0 && S_space(in[4]))
        goto yes;
    return false;
yes:
    *brace = (size_t)(b - lit);
    return true;
}

span_kind fig_classify(const char *lit, size_t len)
{
    S_trim(&lit, &len);
    if (len >= 5 && memcmp(lit, "{lua}", 5) == 0 && (len == 5 || S_space(lit[5])))
        return SPAN_INLINE_LUA;
    size_t brace;
    if (!S_figure_parts(lit, len, &brace))
        return SPAN_CODE;
    if (brace > 0 && lit[brace - 1] == '\\')
        return SPAN_ESCAPED;
    return SPAN_FIGURE;
}

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
    /* "<prefix>-<n>" in one allocation of its size, without printf: pages
     * have many figures */
    char num[24], *d = num + sizeof num;
    size_t n = c->anchor_base + c->nfigs;
    do {
        *--d = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    size_t pn = strlen(c->anchor_prefix), dn = (size_t)(num + sizeof num - d);
    f->anchor = xmalloc(pn + 1 + dn + 1);
    memcpy(f->anchor, c->anchor_prefix, pn);
    f->anchor[pn] = '-';
    memcpy(f->anchor + pn + 1, d, dn);
    f->anchor[pn + 1 + dn] = '\0';
    f->provenance = (char *)S_no_provenance;
    return f;
}

/* Reports a Lua error of an expression or block. Budget and memory errors are
 * reported once per page: everything after them fails the same way. */
static void S_lua_error(fig_ctx *c, const sandbox_error *err, int line, int col,
                        const char *what)
{
    if (err->limit) {
        if (c->limit_reported)
            return;
        c->limit_reported = true;
    }
    bool here = err->file && strcmp(err->file, c->file) == 0 && err->line > 0;
    diag_error(c->dl, c->file, here ? err->line : line, here && err->line != line ? 0 : col,
               "%s: %s", what, err->msg);
}

static void S_put_html(buf *b, const char *s) { buf_put_html(b, s, strlen(s)); }

/* A string literal, without strlen. */
#define S_PUTL(b, lit) buf_put((b), "" lit, sizeof(lit) - 1)

/* The figure's markup is written straight into enter, piece by piece (HTML
 * escaping of a concatenation is the concatenation of the escaped pieces),
 * instead of building the title and the link as strings first. */

/* "<span ... title=\"" up to the title's text. */
static void S_open_span(buf *enter, const figure *f)
{
    S_PUTL(enter, "<span class=\"fig\" data-tier=\"");
    buf_puts(enter, fig_tier_name(f->tier));
    if (f->ok)
        S_PUTL(enter, "\" title=\"");
    else
        S_PUTL(enter, "\" data-status=\"fail\" title=\"");
}

/* Ends the title and, outside a link, opens the link to
 * <base><where><id> (where has nothing to escape). */
static void S_open_link(buf *enter, const char *base, const char *where, const char *id,
                        bool in_link)
{
    S_PUTL(enter, "\">");
    if (!in_link) {
        S_PUTL(enter, "<a href=\"");
        S_put_html(enter, base);
        buf_puts(enter, where);
        S_put_html(enter, id);
        S_PUTL(enter, "\">");
    }
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
    S_PUTL(big, "return ");
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
        S_lua_error(c, &err, line, col, "in `{lua}`");
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

static void S_cite(fig_ctx *c, figure *f, const char *key, size_t n, bool in_link, buf *enter,
                   buf *exit)
{
    f->tier = FIG_CITED;
    f->expr = xstrndup(key, n);
    f->mode = xstrdup("cite");
    const yv *entry = NULL;
    if (!S_valid_key(key, n)) {
        f->detail = xasprintf("malformed source key \"%s\"", f->expr);
    } else if (!sources_present(c->src)) {
        f->detail = xasprintf("cited source \"%s\", but there is no %s", f->expr, SOURCES_FILE);
    } else if (!(entry = sources_get(c->src, f->expr))) {
        f->detail = xasprintf("cited source \"%s\" is not in %s", f->expr, SOURCES_FILE);
    }
    if (!entry) {
        diag_error(c->dl, c->file, f->line, f->col, "%s", f->detail);
    } else {
        f->ok = true;
        const char *title = yv_string(yv_get(entry, "title"));
        f->detail = xstrdup(title ? title : f->expr);
    }
    S_open_span(enter, f);
    S_PUTL(enter, "cited: ");
    S_put_html(enter, f->detail);
    S_open_link(enter, c->base_path, "/sources/#", f->expr, in_link);
    if (in_link)
        S_PUTL(exit, "</span>");
    else
        S_PUTL(exit, "</a></span>");
}

void fig_span(fig_ctx *c, const char *lit, size_t len, int line, int col, bool in_link,
              buf *enter, buf *text, buf *exit, bool *code)
{
    *code = false;
    S_trim(&lit, &len);
    span_kind kind = fig_classify(lit, len);
    if (kind == SPAN_INLINE_LUA) {
        const char *e = lit + 5;
        size_t n = len - 5;
        S_trim(&e, &n);
        S_inline_lua(c, e, n, line, col, text);
        return;
    }
    size_t brace = 0;
    S_figure_parts(lit, len, &brace);
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
            char *key = xstrndup(k, kn);
            buf_put(text, qs, qn);
            if (!S_valid_key(k, kn) || !sources_get(c->src, key)) {
                diag_error(c->dl, c->file, line, col, "cited source \"%s\" is not in %s", key,
                           SOURCES_FILE);
            } else if (!in_link) {
                S_PUTL(enter, "<a class=\"cite\" href=\"");
                S_put_html(enter, c->base_path);
                S_PUTL(enter, "/sources/#");
                S_put_html(enter, key);
                S_PUTL(enter, "\">");
                S_PUTL(exit, "</a>");
            }
            free(key);
            return;
        }
    }
    figure *f = S_new_figure(c, line, col);
    f->quote = xstrndup(qs, qn);
    buf_put(text, qs, qn);
    if (qn == 0) {
        f->expr = xstrndup(in, inn);
        f->mode = xstrdup("?");
        f->detail = xstrdup("a figure needs the quoted number before the braces: `224 MiB {= ...}`");
        diag_error(c->dl, c->file, line, col, "%s", f->detail);
        return;
    }
    if (in[0] == 'c') {
        const char *k = in + 4;
        size_t kn = inn - 4;
        S_trim(&k, &kn);
        S_cite(c, f, k, kn, in_link, enter, exit);
        return;
    }
    /* mark and optional tolerance: "=", "≈", "~", "≈10%", "~2.5%" */
    bool approx = in[0] != '=';
    size_t skip = in[0] == '=' || in[0] == '~' ? 1 : 3;
    double tol = c->tolerance;
    const char *p = in + skip, *end = in + inn;
    const char *tol_start = p;
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
    f->mode = p - in == 1 && in[0] == '=' ? (char *)S_exact_mode : xstrndup(in, (size_t)(p - in));
    (void)tol_start;
    const char *expr = p;
    size_t en = (size_t)(end - p);
    S_trim(&expr, &en);
    f->expr = xstrndup(expr, en);
    quote q;
    buf err = BUF_INIT;
    buf msg = BUF_INIT;
    if (quote_parse(qs, qn, sandbox_units(c->sb), &q, &err) != 0) {
        buf_printf(&msg, "malformed quote: %s", buf_cstr(&err));
    } else if (en == 0) {
        buf_puts(&msg, "the figure has no expression after its mark: `224 MiB {= EXPR}`");
    } else if (!(tol >= 0 && tol < 1)) {
        buf_puts(&msg, "tolerance must be between 0% and 100%");
    } else {
        char small[256];
        buf codebuf = BUF_INIT;
        size_t cn;
        const char *cp = S_return_code(small, sizeof small, &codebuf, expr, en, &cn);
        sandbox_figure_begin(c->sb);
        int nres = 0;
        sandbox_error lerr;
        lua_State *L = sandbox_lua(c->sb);
        if (sandbox_eval(c->sb, cp, cn, c->file, line, &nres, &lerr) != 0) {
            f->detail = xasprintf("in figure `%s`: %s", f->quote, lerr.msg);
            S_lua_error(c, &lerr, line, col, "in figure");
            sandbox_error_free(&lerr);
        } else if (nres == 0) {
            buf_printf(&msg, "the expression %s gives no value", f->expr);
        } else {
            for (int i = 0; i < nres; i++) {
                int idx = -nres + i;
                if (lua_type(L, idx) != LUA_TNUMBER) {
                    buf_printf(&msg, "value %d of `%s` is a %s, not a number", i + 1, f->expr,
                               luaL_typename(L, idx));
                    break;
                }
                double v = lua_tonumber(L, idx);
                if (i == 0)
                    f->value = v;
                buf one = BUF_INIT;
                if (!quote_check(&q, f->expr, v, approx, tol, sandbox_units(c->sb), &one)) {
                    if (nres > 1)
                        buf_printf(&msg, "value %d of %d: ", i + 1, nres);
                    buf_put(&msg, buf_cstr(&one), one.len);
                    buf_free(&one);
                    break;
                }
                buf_free(&one);
            }
            lua_pop(L, nres);
            const char *prov = NULL;
            if (sandbox_figure_measured(c->sb, &prov)) {
                f->tier = FIG_MEASURED;
                S_free_str(f->provenance);
                f->provenance = xstrdup(prov);
            }
            if (msg.len == 0) {
                f->ok = true;
                buf d = BUF_INIT;
                buf_grow(&d, en + 80); /* at once: the expression and two numbers */
                buf_put(&d, f->expr, en);
                S_PUTL(&d, " = ");
                quote_describe(&q, f->value, sandbox_units(c->sb), &d);
                f->detail = buf_detach(&d);
            }
        }
        buf_free(&codebuf);
    }
    if (msg.len) {
        diag_error(c->dl, c->file, line, col, "%s", buf_cstr(&msg));
        f->detail = buf_detach(&msg);
    }
    if (!f->detail)
        f->detail = xstrdup("");
    S_open_span(enter, f);
    S_put_html(enter, f->detail);
    if (f->tier == FIG_MEASURED && f->ok) {
        S_PUTL(enter, "; measured: ");
        S_put_html(enter, f->provenance);
    }
    /* to the figure's row in the report page that lists it */
    if (c->report_url)
        S_open_link(enter, c->report_url, "#", f->anchor, in_link);
    else
        S_open_link(enter, c->base_path, "/checks/#", f->anchor, in_link);
    if (in_link)
        S_PUTL(exit, "</span>");
    else
        S_PUTL(exit, "</a></span>");
    buf_free(&err);
    buf_free(&msg);
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
               size_t *body)
{
    *echo = false;
    *body = 0;
    bool eval = true;
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
            if (!is_true && !is_false)
                diag_error(c->dl, c->file, line, col,
                           "cell option %.*s must be true or false, not \"%.*s\"", (int)kn, k,
                           (int)vn, v);
            else if (kn == 4 && !memcmp(k, "echo", 4))
                *echo = is_true;
            else if (kn == 4 && !memcmp(k, "eval", 4))
                eval = is_true;
            else
                diag_error(c->dl, c->file, line, col,
                           "unknown cell option \"%.*s\" (known: echo, eval)", (int)kn, k);
        }
        i = nl ? e + 1 : len;
        line++;
    }
    *body = i;
    if (!eval)
        return;
    int nres = 0;
    sandbox_error err;
    if (sandbox_run(c->sb, code, len, c->file, first_line, &nres, &err) != 0) {
        S_lua_error(c, &err, first_line, col, "in {lua} block");
        sandbox_error_free(&err);
        return;
    }
    lua_pop(sandbox_lua(c->sb), nres);
}

/* ---------- the unverified-figure lint ---------- */


/* Length of a unit at s (or 0), with whether it needs a word boundary after. */
static size_t S_lint_unit(const char *s, size_t n, bool spaced)
{
    static const struct {
        char w[5];
        unsigned char len;
    } words[] = {{"KiB", 3}, {"MiB", 3}, {"GiB", 3}, {"TiB", 3}, {"KB", 2},  {"kB", 2},
                 {"MB", 2},  {"GB", 2},  {"TB", 2},  {"bits", 4}, {"bit", 3}, {"B", 1}};
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
        size_t wl = words[k].len;
        if (n < wl || s[0] != words[k].w[0] || memcmp(s, words[k].w, wl) != 0)
            continue;
        if (n > wl && S_ascii_alnum((unsigned char)s[wl]))
            continue;
        /* "7B" names a model size (parameters), not bytes: bare B needs a space */
        if (wl == 1 && !spaced)
            return 0;
        return wl;
    }
    if (n >= 1 && s[0] == '%')
        return 1;
    if (n >= 2 && memcmp(s, "\xC3\x97", 2) == 0) /* × */
        return 2;
    if (n >= 3 && memcmp(s, "\xE5\x80\x8D", 3) == 0) /* 倍 */
        return 3;
    if (n >= 1 && s[0] == 'x' && !spaced && (n == 1 || !S_ascii_alnum((unsigned char)s[1])))
        return 1;
    return 0;
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
                const char *p = c->md, *end = c->md + c->md_len;
                for (int l = c->md_first_line; l < cur_line && p; l++) {
                    p = memchr(p, '\n', (size_t)(end - p));
                    p = p ? p + 1 : NULL;
                }
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
