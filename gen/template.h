/* template: HTML templates with Lua, compiled once per worker.
 *
 *   {{ expr }}      the value, HTML-escaped        {{{ expr }}}  the value, raw
 *   {% stmt %}      Lua statements (for, if, local, ... end)
 *   {{ include "partials/head.html" }}  another template, rendered in place
 *                   (a quoted name: straight into this template's output,
 *                   through its writers; include(expr) in Lua returns the
 *                   other template's output as a string)
 *   {{ include_cached("partials/footer.html", key) }}  the same output,
 *                   rendered once per key in this worker and reused (see
 *                   tpl_set_cache_host): the key (a string or a number) must
 *                   name everything of the page the template shows, and the
 *                   template may not set globals (an error): its output is
 *                   all it gives. Not kept: an output that failed, made a
 *                   diagnostic or read what the host refuses (the page's own
 *                   data), or past TPL_CACHE_MAX bytes in all.
 *
 * A {% %} tag alone on its line takes the line with it (no blank lines left
 * behind). A template compiles to one Lua function whose line numbers are the
 * template's, so errors name templates/<file>:<line>. It runs in the current
 * page environment of the sandbox: page, site and the helpers are globals there.
 * The output writers a call hands its template fail with a Lua error once that
 * call has returned, whatever Lua kept of them.
 *
 * The templates object belongs to one worker and to its sandbox; free it before
 * the sandbox. */
#ifndef KV_TEMPLATE_H
#define KV_TEMPLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <lua.h>

#include "buf.h"
#include "diag.h"
#include "sandbox.h"

typedef struct templates templates;

templates *tpl_new(sandbox *sb, const char *root, size_t max_bytes, size_t max_output);
void tpl_free(templates *t);

/* Looks up names missing from templates/ in the theme folder dir (theme.h);
 * NULL: none. Copied. */
void tpl_set_theme(templates *t, const char *dir);

/* True when templates/<name> (or the theme's <name>) exists as a regular file. */
bool tpl_exists(const templates *t, const char *name);

/* Renders templates/<name> in the current page environment and appends the
 * output to out. Returns 0, or -1 with errors added to dl (at the template's
 * file:line). */
int tpl_render(templates *t, const char *name, buf *out, diag_list *dl);

/* Translates template text into Lua source with the same line numbers.
 * Returns 0, or -1 with an error (unterminated tag) added to dl. */
int tpl_translate(const char *src, size_t len, const char *file, buf *lua, diag_list *dl);

/* A field's value as Lua would get it, without making it in Lua. */
typedef struct {
    int type;     /* LUA_TNIL, LUA_TSTRING, LUA_TNUMBER or LUA_TBOOLEAN */
    bool integer; /* a number: i, else d */
    const char *s;
    long long i;  /* also a boolean's 0 or 1 */
    double d;
} tpl_value;

/* The host's fast way to show `{{ obj.field }}`: sets *v to the field of
 * the object at index obj and returns true, or returns false, leaving the
 * stack as it was, to leave it to Lua (obj.field, as written). The template
 * shows v as it shows any value, at once: v's string may be one the reader
 * left on the stack, which the caller drops after. Called for full userdata
 * objects only. */
typedef bool (*tpl_field_reader)(void *ctx, lua_State *L, int obj, const char *field,
                                 tpl_value *v);
void tpl_set_field_reader(templates *t, tpl_field_reader fn, void *ctx);

/* The host's fast way through a list that it makes, for a loop whose body
 * shows only fields of its variable (`{% for _, f in ipairs(list) do %}`):
 * its items are read in place, never made as Lua objects. None of these
 * runs Lua.
 * open: the list at index list as a handle for the others, or NULL to leave
 *   the list to Lua; the handle lives as long as the list stays on the stack.
 * key: a number (>= 0) for field name k of the list's items, or -1 when the
 *   items have no such field: then Lua reads the whole list, as written.
 * item: sets v[j] to field keys[j] of item i (from 1), j < n, and returns
 *   true, or returns false to leave the item to Lua, which makes the item
 *   and reads it as written (past the end, an item that cannot be read: Lua
 *   then says so). */
typedef struct {
    void *(*open)(void *ctx, lua_State *L, int list);
    int (*key)(void *ctx, void *list, const char *k);
    bool (*item)(void *ctx, void *list, lua_Integer i, const int *keys, size_t n,
                 tpl_value *v);
} tpl_list_reader;
void tpl_set_list_reader(templates *t, const tpl_list_reader *fn, void *ctx);

/* What include_cached keeps with an output besides its bytes: what the
 * render depended on (the records it read), replayed on every reuse, so
 * that each page that shows it depends on the same. begin marks where a
 * cached render starts (renders nest); end appends what was read since m to
 * deps and returns false when the output must not be reused; replay notes
 * deps again for the current page. */
typedef struct {
    size_t at, diags;
} tpl_cache_mark;
typedef struct {
    tpl_cache_mark (*begin)(void *ctx);
    bool (*end)(void *ctx, tpl_cache_mark m, buf *deps);
    void (*replay)(void *ctx, const char *deps, size_t len);
} tpl_cache_host;
/* fn NULL: include_cached keeps nothing it cannot replay, so it renders
 * every time (tests, hosts with nothing to note). */
void tpl_set_cache_host(templates *t, const tpl_cache_host *fn, void *ctx);
#define TPL_CACHE_MAX ((size_t)16 << 20) /* bytes kept per worker: outputs, keys, reads */
#define TPL_CACHE_KEY_MAX 1024
/* include_cached's outputs reused and rendered so far (tests). */
void tpl_cache_counts(const templates *t, size_t *hits, size_t *misses);

/* Starts a page: from here the inputs are what its render looks up. */
void tpl_page_begin(templates *t);
/* The template files the page being rendered looked up since
 * tpl_page_begin, found or not, compiled before or not, and those the
 * include_cached outputs it reused were made from (for the incremental
 * cache): NUL-separated "templates/..." paths, each once. */
const buf *tpl_inputs(const templates *t);
/* Notes a file the project's input stamp names ("templates/assets/x.css")
 * as an input of the page too, once: a helper that reads one (asset_url). */
void tpl_note_file(templates *t, const char *rel);

#endif
