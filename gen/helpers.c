#include "helpers.h"

#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "figure.h"
#include "fingerprint.h"
#include "quote.h"
#include "render_state.h"
#include "sandbox.h"
#include "url.h"

/* Finds where a front-matter string is written, so figures inside it are
 * reported at the right line. */
static bool S_find_scalar(const yv *v, const char *s, int *line, int *col)
{
    if (!v)
        return false;
    const yv *stack[64];
    int n = 0;
    stack[n++] = v;
    while (n > 0) {
        const yv *x = stack[--n];
        if (x->type == YV_STRING && strcmp(x->str, s) == 0) {
            *line = x->line;
            *col = x->col + (x->quoted ? 1 : 0);
            return true;
        }
        if (x->type == YV_SEQ || x->type == YV_MAP)
            for (size_t i = 0; i < x->n && n < 64; i++)
                stack[n++] = x->items[i];
    }
    return false;
}

static int S_markdown_inline(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    if (len > 65536)
        return luaL_error(L, "markdown_inline: text longer than 64 KiB");
    int line = 0, col = 0;
    const char *file = r->cur_file ? r->cur_file : "(template)";
    char *tfile = NULL;
    if (!r->cur_page || !S_find_scalar(r->cur_page->front, s, &line, &col)) {
        /* not a front-matter string: its place is the template's call */
        lua_Debug ar;
        line = col = 0;
        if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) && ar.source[0] == '=') {
            tfile = xstrdup(ar.source + 1);
            file = tfile;
            line = ar.currentline;
        }
    }
    md_result res;
    md_result_init(&res);
    res.summary = xstrdup(""); /* no summary wanted */
    if (r->cur_figs) {
        /* number these figures after the page's own, under the page's prefix */
        res.figs.anchor_prefix = r->cur_figs->anchor_prefix;
        res.figs.anchor_base = r->cur_figs->anchor_base + r->cur_figs->nfigs;
        res.figs.report_url = r->cur_figs->report_url;
        res.figs.report_rows = r->cur_figs->report_rows;
    }
    diag_list *dl = r->cur_rec ? &r->cur_rec->diags : NULL;
    diag_list tmp;
    diag_list_init(&tmp);
    md_render(r->md, r->cur_page, file, s, len, line > 0 ? line : 1, col > 0 ? col : 1, true, &res,
              dl ? dl : &tmp);
    diag_list_free(&tmp);
    /* the figures belong to the page */
    if (r->cur_figs) {
        for (size_t i = 0; i < res.figs.nfigs; i++) {
            fig_ctx *fc = r->cur_figs;
            if (fc->nfigs == fc->cap) {
                fc->cap = fc->cap ? fc->cap * 2 : 16;
                fc->figs = xrealloc(fc->figs, fc->cap * sizeof *fc->figs);
            }
            fc->figs[fc->nfigs++] = res.figs.figs[i];
        }
        free(res.figs.figs);
        res.figs.figs = NULL;
        res.figs.nfigs = 0;
    }
    lua_pushlstring(L, buf_cstr(&res.html), res.html.len);
    md_result_free(&res);
    free(tfile);
    return 1;
}

static int S_url_for(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    const char *path = luaL_checkstring(L, 1);
    const char *rel = path;
    if (strncmp(rel, "content/", 8) == 0)
        rel += 8;
    size_t n = strlen(rel);
    if (n > 3 && strcmp(rel + n - 3, ".md") == 0) {
        const page *p = strmap_get(&r->e.idx->by_rel, rel);
        if (!p)
            return luaL_error(L, "url_for \"%s\": no such page", path);
        lua_pushfstring(L, "%s%s", r->e.cfg->base_path, p->url);
        return 1;
    }
    if (path[0] == '/')
        lua_pushfstring(L, "%s%s", r->e.cfg->base_path, path);
    else
        lua_pushfstring(L, "%s/%s", r->e.cfg->base_path, path);
    return 1;
}

/* asset_url("/assets/style.css"): the URL of the stylesheet's or script's
 * fingerprinted copy (fingerprint.h), "/base/assets/style.3f9c0a1b2d4e.css".
 * The asset's source becomes an input of the page: when it changes, an
 * incremental build renders the page again with the new name. */
static int S_asset_url(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    const char *path = luaL_checkstring(L, 1);
    if (!fingerprint_wanted(path))
        return luaL_error(L, "asset_url \"%s\": only stylesheets and scripts (.css, .js) are "
                             "fingerprinted; use url_for", path);
    char *site = path[0] == '/' ? xstrdup(path) : xasprintf("/%s", path);
    const fingerprint *fp = r->e.fingerprints ? fingerprints_get(r->e.fingerprints, site) : NULL;
    free(site);
    if (!fp)
        return luaL_error(L, "asset_url \"%s\": no such file in templates/assets/ or the "
                             "theme's assets/", path);
    tpl_note_file(r->tpl, fp->input);
    if (fp->shadow)
        tpl_note_file(r->tpl, fp->shadow);
    lua_pushfstring(L, "%s%s", r->e.cfg->base_path, fp->hashed);
    return 1;
}

static int S_format_number(lua_State *L)
{
    double v = luaL_checknumber(L, 1);
    lua_Integer d = luaL_optinteger(L, 2, 0);
    buf b = BUF_INIT;
    quote_format_number(v, (int)(d < 0 ? 0 : d > 20 ? 20 : d), &b);
    lua_pushlstring(L, buf_cstr(&b), b.len);
    buf_free(&b);
    return 1;
}

/* plain_text(s): s as listings and descriptions show it, by the feed's rule
 * (fig_plain_text: a figure span reads as its quote, code spans and links as
 * their text); nil for nil. */
static int S_plain_text(lua_State *L)
{
    if (lua_isnoneornil(L, 1)) {
        lua_pushnil(L);
        return 1;
    }
    char *t = fig_plain_text(luaL_checkstring(L, 1));
    lua_pushstring(L, t);
    free(t);
    return 1;
}

/* date(d, fmt): fmt with %Y %m %d %H %M %S (and %%), from "YYYY-MM-DD[ HH:MM[:SS]]".
 * %-m, %-d, ... drop leading zeros, as GNU strftime does: Chinese dates are
 * written 2024年3月5日, not 2024年03月05日. */
static int S_date(lua_State *L)
{
    const char *d = luaL_optstring(L, 1, "");
    const char *fmt = luaL_optstring(L, 2, "%Y-%m-%d");
    if (!d[0]) {
        lua_pushliteral(L, "");
        return 1;
    }
    char part[6][5] = {"", "", "", "00", "00", "00"};
    int lens[6] = {4, 2, 2, 2, 2, 2};
    const char *p = d;
    for (int k = 0; k < 6 && *p; k++) {
        if (k > 0) {
            if (!*p || !strchr("-T: ", *p))
                break;
            p++;
        }
        for (int c = 0; c < lens[k]; c++, p++) {
            if (*p < '0' || *p > '9')
                return luaL_error(L, "date \"%s\": not a date (YYYY-MM-DD)", d);
            part[k][c] = *p;
        }
        part[k][lens[k]] = '\0';
    }
    buf b = BUF_INIT;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%' || !f[1]) {
            buf_putc(&b, *f);
            continue;
        }
        f++;
        const char *keys = "YmdHMS";
        bool unpadded = *f == '-' && f[1] && strchr(keys, f[1]);
        if (unpadded)
            f++;
        const char *k = strchr(keys, *f);
        if (*f == '%')
            buf_putc(&b, '%');
        else if (k) {
            const char *digits = part[k - keys];
            while (unpadded && digits[0] == '0' && digits[1])
                digits++;
            buf_puts(&b, digits);
        } else {
            buf_putc(&b, '%');
            buf_putc(&b, *f);
        }
    }
    lua_pushlstring(L, buf_cstr(&b), b.len);
    buf_free(&b);
    return 1;
}

static int S_escape(lua_State *L)
{
    buf b = BUF_INIT, e = BUF_INIT;
    sandbox_tostring(L, 1, &b);
    buf_put_html(&e, buf_cstr(&b), b.len);
    lua_pushlstring(L, buf_cstr(&e), e.len);
    buf_free(&b);
    buf_free(&e);
    return 1;
}

void helpers_open(lua_State *L, renderer *r)
{
    if (r) {
        lua_pushlightuserdata(L, r);
        lua_pushcclosure(L, S_markdown_inline, 1);
        lua_setfield(L, -2, "markdown_inline");
        lua_pushlightuserdata(L, r);
        lua_pushcclosure(L, S_url_for, 1);
        lua_setfield(L, -2, "url_for");
        lua_pushlightuserdata(L, r);
        lua_pushcclosure(L, S_asset_url, 1);
        lua_setfield(L, -2, "asset_url");
    }
    lua_pushcfunction(L, S_format_number);
    lua_setfield(L, -2, "format_number");
    lua_pushcfunction(L, S_date);
    lua_setfield(L, -2, "date");
    lua_pushcfunction(L, S_plain_text);
    lua_setfield(L, -2, "plain_text");
    lua_pushcfunction(L, S_escape);
    lua_setfield(L, -2, "escape");
    lua_pushcfunction(L, url_lua_safe_url);
    lua_setfield(L, -2, "safe_url");
    /* fmt: the environment's string.format, under a short name */
    if (lua_getfield(L, -1, "string") == LUA_TTABLE || lua_type(L, -1) == LUA_TUSERDATA) {
        lua_getfield(L, -1, "format");
        lua_setfield(L, -3, "fmt");
    }
    lua_pop(L, 1);
}
