/* luaview: host objects handed to Lua as read-only views, by one mechanism.
 *
 * A view is a full userdata that starts with an lv_head; its kind (an lv_kind,
 * static) says how to read it: named fields (in the order pairs() gives them),
 * numbered items from 1 and a length. Every view of a kind shares one locked
 * metatable (__index, __newindex that refuses, __len, __pairs), cached in the
 * registry by the kind's address. Templates read fields that are made when
 * read, so a listing of 100,000 pages or figures costs constant Lua memory.
 *
 * Lifetime: a view may point at host memory that ends before the Lua state
 * does (a page's table of contents, a render's records). Such a view is
 * made with an owner generation, `live`, a counter its owner bumps when that
 * memory ends: a view read after that raises a Lua error ("page.toc: kept
 * from a page that has finished rendering") instead of reading freed memory.
 * A view that owns its data (a copy) passes live = NULL and never expires.
 * The counter must outlive the Lua state.
 *
 * The mechanism has no tie to the renderer: the sandbox's module views could
 * be kinds of it too. The renderer's views (page briefs, lists of pages and
 * figures, page.toc, page.figures) are below it, under "renderer's views";
 * they take the renderer (render_state.h). `site` and `report`, built from
 * them, are luasite.h's. */
#ifndef KV_LUAVIEW_H
#define KV_LUAVIEW_H

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lv_kind {
    const char *meta; /* metatable __name ("kvsite.toc") */
    const char *what; /* for errors: "page.toc", "a figure" */
    /* named fields in pairs() order (NULL: pairs() gives the items) */
    const char *const *keys;
    size_t nkeys;
    /* pushes field k of obj (nil for one unset); false, pushing nothing, for
     * a key the kind does not have. NULL: no named fields. */
    bool (*field)(lua_State *L, void *obj, int at, const char *k);
    /* pushes item i (1..len) of obj; false, pushing nothing, when there is
     * none. NULL: no items. May raise a Lua error. */
    bool (*item)(lua_State *L, void *obj, lua_Integer i);
    size_t (*len)(const void *obj); /* NULL: 0 */
} lv_kind;

/* The first member of every view. */
typedef struct {
    const lv_kind *kind;
    const uint64_t *live; /* the owner's generation counter, or NULL */
    uint64_t gen;         /* *live when the view was made */
} lv_head;

/* Pushes a new view of `size` bytes (lv_head included, at its start) with nuv
 * user values and the kind's metatable; returns it for the caller to fill. */
void *lv_new(lua_State *L, const lv_kind *kind, size_t size, int nuv, const uint64_t *live);
/* The view of kind at index idx, or NULL when it is not one or its owner's
 * memory has ended. Raises nothing (for C fast paths). */
void *lv_test(lua_State *L, int idx, const lv_kind *kind);
/* The view of kind at index idx; raises a Lua error when it is another value
 * or has expired. */
void *lv_check(lua_State *L, int idx, const lv_kind *kind);
/* Whether a view's owner has ended it. */
bool lv_expired(const lv_head *h);

/* ---------- renderer's views ---------- */

typedef struct renderer renderer;

#include "figure.h"
#include "markdown.h"
#include "template.h"

/* A page as listings see it: a table with a locked metatable (params made
 * when read). i indexes idx->pages. */
void lv_push_page_brief(renderer *r, size_t i);
/* A list of pages v[0..n), over v itself, not copied: v lives as long as
 * the build (the index's listings, content.h, made once before workers
 * fork). The view is read-only and expires with the job like the others. */
void lv_push_page_slice(renderer *r, const size_t *v, size_t n);
/* Page i as a list item (a read-only object, fields made when read). */
void lv_push_page_obj(renderer *r, size_t i);
/* Section page i as site.sections and site.section() give it: the same
 * object, with `pages`, a view of its listing. A menu reads a few fields of
 * every section on every page: no table of every field, and no record read
 * (a page would depend on every section's). */
void lv_push_section_obj(renderer *r, size_t i);
/* page.toc and page.figures of the page being rendered: they expire when
 * the page's job ends. */
void lv_push_toc(renderer *r, const md_heading *toc, size_t n);
void lv_push_page_figures(renderer *r, const fig_ctx *figs, const char *src);
/* Figures of a group (REPORT_GROUP_ALL: every one) among the records so
 * far, of its report page number (0: all of them) and of that page's part
 * (paginate.h; SIZE_MAX: all of its pages' figures), with totals per tier:
 * {list = view, total, computed, measured, cited, failed}. Only the group's
 * records are read. `site` and `report` are luasite.h's. */
void lv_push_figures(renderer *r, size_t group, size_t number, size_t part);
/* Whether job j's figures are on report page number (0: any page) of group. */
bool lv_report_lists(renderer *r, size_t group, size_t number, size_t j);
/* The jobs report page number (0: any) of group lists, in order: with a
 * plan, the page's own list (paginate_report_list), else every job of njobs
 * that lv_report_lists keeps. */
typedef struct {
    renderer *r;
    size_t group, number, njobs;
    const size_t *list; /* NULL: every job, filtered */
    size_t n, i;
} lv_report_iter;
void lv_report_iter_init(lv_report_iter *it, renderer *r, size_t group, size_t number,
                         size_t njobs);
bool lv_report_next(lv_report_iter *it, size_t *job);
/* The fast paths templates take (template.h): any view's fields for
 * `{{ obj.field }}`; the rows of a list of figures or of a listed page's
 * tags for a loop that shows only their fields. */
bool lv_read_field(void *ctx, lua_State *L, int obj, const char *k, tpl_value *v);
extern const tpl_list_reader lv_list_reader;

#endif
