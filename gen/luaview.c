#include "luaview.h"

#include <lauxlib.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "frontmatter.h"
#include "luadata.h"
#include "luaorder.h"
#include "paginate.h"
#include "render_state.h"
#include "report.h"

/* ---------- the mechanism ---------- */

bool lv_expired(const lv_head *h)
{
    return h->live && *h->live != h->gen;
}

void *lv_test(lua_State *L, int idx, const lv_kind *kind)
{
    if (lua_type(L, idx) != LUA_TUSERDATA || lua_rawlen(L, idx) < sizeof(lv_head))
        return NULL;
    lv_head *h = lua_touserdata(L, idx);
    return h->kind == kind && !lv_expired(h) ? h : NULL;
}

void *lv_check(lua_State *L, int idx, const lv_kind *kind)
{
    if (lua_type(L, idx) == LUA_TUSERDATA && lua_rawlen(L, idx) >= sizeof(lv_head)) {
        lv_head *h = lua_touserdata(L, idx);
        if (h->kind == kind) {
            if (lv_expired(h))
                luaL_error(L, "%s: kept from a page that has finished rendering", kind->what);
            return h;
        }
    }
    luaL_error(L, "%s expected, got %s", kind->what, luaL_typename(L, idx));
    return NULL;
}

static int S_index(lua_State *L)
{
    const lv_kind *kind = lua_touserdata(L, lua_upvalueindex(1));
    void *o = lv_check(L, 1, kind);
    bool found = false;
    if (lua_type(L, 2) == LUA_TSTRING) {
        if (kind->field)
            found = kind->field(L, o, 1, lua_tostring(L, 2));
    } else if (kind->item && lua_isinteger(L, 2)) {
        found = kind->item(L, o, lua_tointeger(L, 2));
    }
    if (!found)
        lua_pushnil(L);
    return 1;
}

static int S_newindex(lua_State *L)
{
    const lv_kind *kind = lua_touserdata(L, lua_upvalueindex(1));
    lv_check(L, 1, kind);
    return luaL_error(L, "%s is read-only: cannot set %s", kind->what, luaL_tolstring(L, 2, NULL));
}

static int S_len(lua_State *L)
{
    const lv_kind *kind = lua_touserdata(L, lua_upvalueindex(1));
    void *o = lv_check(L, 1, kind);
    lua_pushinteger(L, kind->len ? (lua_Integer)kind->len(o) : 0);
    return 1;
}

/* pairs() of a kind with named fields: the fields that are set, in the
 * kind's order; of a list: its items, from 1 up to the first missing one */
static int S_next(lua_State *L)
{
    const lv_kind *kind = lua_touserdata(L, lua_upvalueindex(1));
    void *o = lv_check(L, 1, kind);
    if (!kind->keys) {
        lua_Integer i = luaL_checkinteger(L, 2) + 1;
        lua_pushinteger(L, i);
        return kind->item && kind->item(L, o, i) ? 2 : 0;
    }
    size_t i = 0;
    if (!lua_isnil(L, 2)) {
        const char *k = lua_tostring(L, 2);
        while (i < kind->nkeys && (!k || strcmp(kind->keys[i], k)))
            i++;
        i++;
    }
    for (; i < kind->nkeys; i++) {
        lua_pushstring(L, kind->keys[i]);
        if (!kind->field(L, o, 1, kind->keys[i]))
            lua_pushnil(L);
        if (!lua_isnil(L, -1))
            return 2;
        lua_pop(L, 2);
    }
    return 0;
}

static int S_pairs(lua_State *L)
{
    const lv_kind *kind = lua_touserdata(L, lua_upvalueindex(1));
    lv_check(L, 1, kind);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushcclosure(L, S_next, 1);
    lua_pushvalue(L, 1);
    if (kind->keys)
        lua_pushnil(L);
    else
        lua_pushinteger(L, 0);
    return 3;
}

void *lv_new(lua_State *L, const lv_kind *kind, size_t size, int nuv, const uint64_t *live)
{
    lv_head *h = lua_newuserdatauv(L, size, nuv);
    h->kind = kind;
    h->live = live;
    h->gen = live ? *live : 0;
    /* one metatable per kind, found by the kind's address */
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, kind) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_createtable(L, 0, 6);
        lua_CFunction fns[] = {S_index, S_newindex, S_len, S_pairs};
        const char *names[] = {"__index", "__newindex", "__len", "__pairs"};
        for (int i = 0; i < 4; i++) {
            lua_pushlightuserdata(L, (void *)kind);
            lua_pushcclosure(L, fns[i], 1);
            lua_setfield(L, -2, names[i]);
        }
        lua_pushstring(L, kind->meta);
        lua_setfield(L, -2, "__name");
        lua_pushliteral(L, "locked");
        lua_setfield(L, -2, "__metatable");
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, kind);
    }
    lua_setmetatable(L, -2);
    return h;
}

/* ---------- renderer's views ---------- */
static const char *S_kind_name(page_kind k)
{
    return k == PAGE_HOME ? "home" : k == PAGE_SECTION ? "section" : "page";
}

static const char S_BRIEF_KEY = 0; /* its address keys a brief's page index */
static const char *const S_BRIEF_META = "kvsite.brief";

static void S_push_params(renderer *r, size_t i);

/* __index of a page brief: params on first use. */
static int S_brief_index(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    const char *k = lua_tostring(L, 2);
    if (!k || strcmp(k, "params") != 0)
        return 0;
    lua_pushlightuserdata(L, (void *)&S_BRIEF_KEY);
    lua_rawget(L, 1);
    lua_Integer i = lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (i < 0 || (size_t)i >= r->e.idx->npages)
        return 0;
    S_push_params(r, (size_t)i);
    lua_pushliteral(L, "params");
    lua_pushvalue(L, -2);
    lua_rawset(L, 1);
    return 1;
}

/* The URL of tag name, made once per worker. */
static const char *S_tag_url(renderer *r, const char *name)
{
    const char *tu = strmap_get(&r->tag_urls, name);
    if (!tu) {
        char *slug = content_slugify(name);
        char *made = xasprintf("%s/tags/%s/", r->e.cfg->base_path, slug);
        free(slug);
        strmap_put(&r->tag_urls, name, made);
        tu = made;
    }
    return tu;
}

/* A tag of a page: {name, url}. */
static void S_push_tag(renderer *r, const char *name)
{
    lua_State *L = sandbox_lua(r->sb);
    lua_createtable(L, 0, 2);
    render_setstr(L, "name", name);
    render_setstr(L, "url", S_tag_url(r, name));
}

/* A page's tags: {name, url} each. */
static void S_push_tags_of(renderer *r, const page *p)
{
    lua_State *L = sandbox_lua(r->sb);
    lua_createtable(L, (int)p->ntags, 0);
    for (size_t k = 0; k < p->ntags; k++) {
        S_push_tag(r, p->tags[k]);
        lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
}

/* The tags of a page in a list: a read-only view of the same {name, url}
 * items, each made when read. A listing's loop that shows only their
 * fields reads them in place (lv_list_reader): no table for each tag of
 * each page listed. */
typedef struct {
    lv_head h;
    renderer *r;
    size_t i; /* index into idx->pages */
} tags_view;

static const page *S_tags_page(const tags_view *v) { return v->r->e.idx->pages[v->i]; }

static size_t S_tags_view_len(const void *o) { return S_tags_page(o)->ntags; }

static bool S_tags_view_item(lua_State *L, void *o, lua_Integer i)
{
    (void)L;
    const tags_view *v = o;
    const page *p = S_tags_page(v);
    if (i < 1 || (size_t)i > p->ntags)
        return false;
    S_push_tag(v->r, p->tags[i - 1]);
    return true;
}

static const lv_kind S_TAGS_VIEW = {"kvsite.pagetags", "a listed page's tags", NULL, 0, NULL,
                                    S_tags_view_item, S_tags_view_len};

/* A tracked key of a page's params was read: upvalues 1 the renderer, 2
 * the job generation the table was made in, 3 key -> front matter position
 * of the keys not read yet, 4 their values. The key's value moves into the
 * table, where later reads find it without this call. */
static void S_params_mark(lua_State *L, int t, int key)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    lua_pushvalue(L, key);
    if (lua_rawget(L, lua_upvalueindex(3)) == LUA_TNUMBER) {
        lua_Integer at = lua_tointeger(L, -1);
        /* a table kept past its page marks nothing on another */
        if (r->job_gen == (uint64_t)lua_tointeger(L, lua_upvalueindex(2)) && r->params_read) {
            r->params_read[at] = 1;
            render_note(r, RENDER_CAP_OWN);
        }
        lua_pushvalue(L, key);
        lua_pushnil(L);
        lua_rawset(L, lua_upvalueindex(3));
        lua_pushvalue(L, key);
        lua_pushvalue(L, key);
        lua_rawget(L, lua_upvalueindex(4));
        lua_rawset(L, t);
    }
    lua_pop(L, 1);
}

static int S_params_index(lua_State *L)
{
    S_params_mark(L, 1, 2);
    lua_pushvalue(L, 2);
    lua_rawget(L, 1);
    return 1;
}

/* pairs(params) reads every key. Upvalue 5: the ordered next. */
static int S_params_pairs(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, lua_upvalueindex(3))) {
        lua_pop(L, 1);
        int key = lua_gettop(L);
        S_params_mark(L, 1, key);
        /* the key left the table being traversed: start again */
        lua_settop(L, key - 1);
        lua_pushnil(L);
    }
    lua_pushvalue(L, lua_upvalueindex(5));
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

/* Pushes page i's params: its front matter as a table, with the keys of
 * params: in place of params ({} for none). For the page being rendered
 * (r->params_page), the keys kvsite does not read are kept aside and noted
 * as read when a template first reads them (or pairs() over the table). */
static void S_push_params(renderer *r, size_t i)
{
    lua_State *L = sandbox_lua(r->sb);
    const page *p = r->e.idx->pages[i];
    if (!p->front) {
        lua_newtable(L);
        return;
    }
    if (luadata_push(L, p->front) != 0)
        lua_error(L);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        return;
    }
    const yv *pm = yv_get(p->front, "params");
    if (pm && pm->type == YV_MAP) {
        for (size_t k = 0; k < pm->n; k++) {
            if (luadata_push(L, pm->items[k]) != 0)
                lua_error(L);
            lua_setfield(L, -2, pm->keys[k]);
        }
        lua_pushnil(L);
        lua_setfield(L, -2, "params");
    }
    if (i != r->params_page || !r->params_read)
        return;
    int t = lua_gettop(L);
    lua_pushlightuserdata(L, r);
    lua_pushinteger(L, (lua_Integer)r->job_gen);
    lua_newtable(L); /* key -> position */
    lua_newtable(L); /* key -> value */
    bool any = false;
    for (size_t k = 0; k < p->front->n; k++) {
        const char *key = p->front->keys[k];
        if (fm_key_known(p, key))
            continue;
        any = true;
        lua_pushinteger(L, (lua_Integer)k);
        lua_setfield(L, t + 3, key);
        lua_getfield(L, t, key);
        lua_setfield(L, t + 4, key);
        lua_pushnil(L);
        lua_setfield(L, t, key);
    }
    if (!any) {
        lua_settop(L, t);
        return;
    }
    lua_createtable(L, 0, 3);
    for (int k = 1; k <= 4; k++)
        lua_pushvalue(L, t + k);
    lua_pushcclosure(L, S_params_index, 4);
    lua_setfield(L, -2, "__index");
    for (int k = 1; k <= 4; k++)
        lua_pushvalue(L, t + k);
    luaorder_push(L); /* next, pairs */
    lua_pop(L, 1);
    lua_pushcclosure(L, S_params_pairs, 5);
    lua_setfield(L, -2, "__pairs");
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, t);
    lua_settop(L, t);
}

/* A page in a list (page.pages, site.pages, a tag's pages): a read-only
 * object whose fields are made when read. Listings of thousands of pages
 * read a few fields of each; building a table of 15 for each cost more than
 * the rest of the listing. Reading its summary or figure count is what makes
 * a listing depend on that page's record (incremental builds). */
typedef struct {
    lv_head h;
    renderer *r;
    size_t i;     /* index into idx->pages */
    bool section; /* made as a section (site.sections): it has `pages` */
} brief_obj;

static const char *const S_BRIEF_KEYS[] = {"title", "date",   "updated", "section", "src",
                                           "kind",  "url",    "permalink", "path",  "weight",
                                           "draft", "summary", "nfigures", "tags",  "params",
                                           "pages"};

static void S_pushstr_or_nil(lua_State *L, const char *v)
{
    if (v)
        lua_pushlstring(L, v, strlen(v)); /* not pushstring: see render_setstr */
    else
        lua_pushnil(L);
}

enum { BK_TITLE, BK_DATE, BK_UPDATED, BK_SECTION, BK_SRC, BK_KIND, BK_URL, BK_PERMALINK,
       BK_PATH, BK_WEIGHT, BK_DRAFT, BK_SUMMARY, BK_NFIGURES, BK_TAGS, BK_PARAMS, BK_PAGES };

/* A brief's key by its first letters, then the one name it may be (a
 * listing reads a handful of fields of each of its pages: no string
 * comparisons down the list); -1 for a key briefs do not have. */
static int S_brief_key(const char *k)
{
    int key;
    switch (k[0]) {
    case 't': key = k[1] == 'i' ? BK_TITLE : BK_TAGS; break;
    case 'd': key = k[1] == 'a' ? BK_DATE : BK_DRAFT; break;
    case 'u': key = k[1] == 'p' ? BK_UPDATED : BK_URL; break;
    case 's': key = k[1] == 'e' ? BK_SECTION : k[1] == 'r' ? BK_SRC : BK_SUMMARY; break;
    case 'k': key = BK_KIND; break;
    case 'p':
        key = k[1] == 'e'                  ? BK_PERMALINK
              : k[1] == 'a' && k[2] == 't' ? BK_PATH
              : k[1] == 'a' && k[2] == 'g' ? BK_PAGES
                                           : BK_PARAMS;
        break;
    case 'w': key = BK_WEIGHT; break;
    case 'n': key = BK_NFIGURES; break;
    default: return -1;
    }
    return strcmp(k, S_BRIEF_KEYS[key]) == 0 ? key : -1;
}

/* Pushes field k of the brief at index 1 (nil for one it lacks); false for
 * a key briefs do not have. */
static bool S_brief_field(lua_State *L, void *obj, int at, const char *k)
{
    const brief_obj *o = obj;
    renderer *r = o->r;
    const page *p = r->e.idx->pages[o->i];
    buf *t = &r->scratch;
    int key = S_brief_key(k);
    switch (key) {
    case BK_TITLE: S_pushstr_or_nil(L, p->title); break;
    case BK_DATE: S_pushstr_or_nil(L, p->date); break;
    case BK_UPDATED: S_pushstr_or_nil(L, p->updated); break;
    case BK_SECTION: S_pushstr_or_nil(L, p->section); break;
    case BK_SRC: S_pushstr_or_nil(L, p->src); break;
    case BK_KIND: lua_pushstring(L, S_kind_name(p->kind)); break;
    case BK_PATH: S_pushstr_or_nil(L, p->url); break;
    case BK_WEIGHT: lua_pushinteger(L, p->weight); break;
    case BK_DRAFT: lua_pushboolean(L, p->draft); break;
    case BK_URL:
    case BK_PERMALINK:
        buf_clear(t);
        if (key == BK_URL) {
            buf_puts(t, r->e.cfg->base_path);
            buf_puts(t, p->url);
        } else {
            buf_puts(t, r->e.cfg->base_url);
            buf_puts(t, p->url + 1);
        }
        lua_pushlstring(L, t->ptr, t->len);
        break;
    case BK_SUMMARY: {
        const page_record *rec = p->summary ? NULL : render_record(r, o->i);
        S_pushstr_or_nil(L, p->summary ? p->summary : rec && rec->summary[0] ? rec->summary : NULL);
        break;
    }
    case BK_NFIGURES: {
        const page_record *rec = render_record(r, o->i);
        if (rec)
            lua_pushinteger(L, (lua_Integer)rec->nfigs);
        else
            lua_pushnil(L);
        break;
    }
    case BK_TAGS:
    case BK_PARAMS:
    case BK_PAGES: {
        if (key == BK_PAGES && !o->section) {
            lua_pushnil(L);
            break;
        }
        /* made once per object: p.tags == p.tags, as with a table */
        int slot = key == BK_TAGS ? 1 : key == BK_PARAMS ? 2 : 3;
        if (lua_getiuservalue(L, at, slot) == LUA_TNIL) {
            lua_pop(L, 1);
            if (key == BK_TAGS) {
                tags_view *v = lv_new(L, &S_TAGS_VIEW, sizeof *v, 0, &r->job_gen);
                v->r = r;
                v->i = o->i;
            } else if (key == BK_PARAMS) {
                S_push_params(r, o->i);
            } else {
                size_t nc;
                const size_t *kids = content_kids(r->e.idx, o->i, &nc);
                lv_push_page_slice(r, kids, nc);
            }
            lua_pushvalue(L, -1);
            lua_setiuservalue(L, at, slot);
        }
        break;
    }
    default:
        return false;
    }
    return true;
}

static const lv_kind S_BRIEF_KIND = {"kvsite.pagebrief", "a page in a list", S_BRIEF_KEYS,
                                     sizeof S_BRIEF_KEYS / sizeof *S_BRIEF_KEYS, S_brief_field,
                                     NULL, NULL};

static void S_push_brief_obj(renderer *r, size_t i, bool section)
{
    lua_State *L = sandbox_lua(r->sb);
    brief_obj *o = lv_new(L, &S_BRIEF_KIND, sizeof *o, 3, &r->job_gen);
    o->r = r;
    o->i = i;
    o->section = section;
}

/* A page as listings see it. */
void lv_push_page_brief(renderer *r, size_t i)
{
    lua_State *L = sandbox_lua(r->sb);
    const page *p = r->e.idx->pages[i];
    lua_createtable(L, 0, 16);
    render_setstr(L, "title", p->title);
    render_setstr(L, "date", p->date);
    render_setstr(L, "updated", p->updated);
    render_setstr(L, "section", p->section);
    render_setstr(L, "src", p->src);
    render_setstr(L, "kind", S_kind_name(p->kind));
    /* listings push thousands of briefs: strings are put together in one
     * scratch buffer, not allocated one by one */
    buf *t = &r->scratch;
    buf_clear(t);
    buf_puts(t, r->e.cfg->base_path);
    buf_puts(t, p->url);
    lua_pushlstring(L, t->ptr, t->len);
    lua_setfield(L, -2, "url");
    buf_clear(t);
    buf_puts(t, r->e.cfg->base_url);
    buf_puts(t, p->url + 1);
    lua_pushlstring(L, t->ptr, t->len);
    lua_setfield(L, -2, "permalink");
    render_setstr(L, "path", p->url);
    lua_pushinteger(L, p->weight);
    lua_setfield(L, -2, "weight");
    lua_pushboolean(L, p->draft);
    lua_setfield(L, -2, "draft");
    const page_record *rec = render_record(r, i);
    const char *summary = p->summary ? p->summary : rec && rec->summary[0] ? rec->summary : NULL;
    render_setstr(L, "summary", summary);
    if (rec) {
        lua_pushinteger(L, (lua_Integer)rec->nfigs);
        lua_setfield(L, -2, "nfigures");
    }
    S_push_tags_of(r, p);
    lua_setfield(L, -2, "tags");
    /* params (the whole front matter) is made when a template reads it:
     * listings of thousands of pages rarely do */
    lua_pushlightuserdata(L, (void *)&S_BRIEF_KEY);
    lua_pushinteger(L, (lua_Integer)i);
    lua_rawset(L, -3);
    if (luaL_newmetatable(L, S_BRIEF_META)) {
        lua_pushlightuserdata(L, r);
        lua_pushcclosure(L, S_brief_index, 1);
        lua_setfield(L, -2, "__index");
        /* shared by every page: locked, or a page could keep what it
         * likes in it for the next one */
        lua_pushliteral(L, "locked");
        lua_setfield(L, -2, "__metatable");
    }
    lua_setmetatable(L, -2);
}

/* Lists of pages and figures are views: their items are built when a
 * template reads them and dropped after, so a site of 100,000 pages or
 * figures lists in constant Lua memory. They expire with their job. */
typedef struct {
    lv_head h;
    renderer *r;
    size_t n;
    const size_t *items; /* page indices, in the build's listings (content.h) */
} page_view;

typedef struct {
    lv_head h;
    renderer *r;
    size_t n;       /* figures */
    size_t nspans;
    size_t last;    /* the span read last: a report reads in order */
    size_t spans[]; /* triples: record job, its first figure listed (a report
                     * page's part lists some of a page's: paginate.h),
                     * cumulative figure count after it */
} figure_view;

static void S_push_figure(lua_State *L, const figure *f, const char *src, const char *page_url);

static size_t S_page_view_len(const void *o) { return ((const page_view *)o)->n; }
static size_t S_figure_view_len(const void *o) { return ((const figure_view *)o)->n; }

static bool S_page_view_item(lua_State *L, void *o, lua_Integer i)
{
    page_view *v = o;
    if (i < 1 || (size_t)i > v->n)
        return false;
    (void)L;
    S_push_brief_obj(v->r, v->items[i - 1], false);
    return true;
}

static const lv_kind S_PAGE_VIEW = {"kvsite.pages", "a list of pages", NULL, 0, NULL,
                                    S_page_view_item, S_page_view_len};

/* Figure i (from 1) of view v, with its page's source path and full URL
 * (NULL for none); false with errno set when the page's figures cannot be
 * read. The figure lives until another page's figures are read. */
static bool S_view_figure(figure_view *v, lua_Integer i, const figure **fig, const char **src,
                          const char **url)
{
    size_t k = (size_t)i - 1, lo = v->last;
    if (!(lo < v->nspans && k < v->spans[3 * lo + 2] && (lo == 0 || k >= v->spans[3 * lo - 1]))) {
        size_t hi = v->nspans;
        lo = 0;
        while (lo < hi) { /* the first span whose cumulative count exceeds k */
            size_t mid = (lo + hi) / 2;
            if (v->spans[3 * mid + 2] <= k)
                lo = mid + 1;
            else
                hi = mid;
        }
        v->last = lo;
    }
    size_t before = lo ? v->spans[3 * lo - 1] : 0;
    size_t job = v->spans[3 * lo], first = v->spans[3 * lo + 1];
    renderer *r = v->r;
    const page_record *rec = render_record(r, job);
    *src = rec->src;
    if (!r->fig_url || r->fig_url_job != job) {
        /* a report reads a page's figures one after the other */
        free(r->fig_url);
        r->fig_url = render_full_url(r, rec->url);
        r->fig_url_job = job;
    }
    *url = r->fig_url;
    const figure *figs = r->figs_job == job ? r->figs_now : NULL;
    if (!figs) {
        figs = record_figures(rec, r->e.figs, &r->figs_buf);
        if (!figs)
            return false;
        r->figs_now = figs;
        r->figs_job = job;
    }
    *fig = &figs[first + k - before];
    return true;
}

static bool S_figure_view_item(lua_State *L, void *o, lua_Integer i)
{
    figure_view *v = o;
    if (i < 1 || (size_t)i > v->n)
        return false;
    const figure *f;
    const char *src, *url;
    if (!S_view_figure(v, i, &f, &src, &url))
        luaL_error(L, "cannot read the figures of %s: %s", src, strerror(errno));
    S_push_figure(L, f, src, url);
    return true;
}

static const lv_kind S_FIGURE_VIEW = {"kvsite.figures", "a list of figures", NULL, 0, NULL,
                                      S_figure_view_item, S_figure_view_len};

void lv_push_page_slice(renderer *r, const size_t *v, size_t n)
{
    page_view *pv = lv_new(sandbox_lua(r->sb), &S_PAGE_VIEW, sizeof *pv, 0, &r->job_gen);
    pv->r = r;
    pv->n = n;
    pv->items = v;
}

void lv_push_page_obj(renderer *r, size_t i) { S_push_brief_obj(r, i, false); }

void lv_push_section_obj(renderer *r, size_t i) { S_push_brief_obj(r, i, true); }

/* A figure as templates see it: a read-only object whose fields are made
 * when read. A report reads a few fields of each of 100,000s of figures:
 * building a 14-field table for each cost more than the rest of the page.
 * The object holds a copy of the figure and its strings: figures of other
 * pages are decoded into a buffer that the next page's reuse. */
typedef struct {
    lv_head h;            /* never expires: the object owns its copy */
    figure f;             /* its strings point into the object */
    const char *src;      /* the same */
    const char *page_url; /* the same, NULL for none */
} figure_obj;

static const char *const S_FIGURE_KEYS[] = {"quote",  "expr",       "mode",   "tier",
                                            "status", "ok",         "value",  "detail",
                                            "provenance", "anchor", "src",    "page_url",
                                            "line",   "col"};

/* The fields of a figure, in the order of S_FIGURE_KEYS. */
enum {
    FK_QUOTE, FK_EXPR, FK_MODE, FK_TIER, FK_STATUS, FK_OK, FK_VALUE, FK_DETAIL, FK_PROVENANCE,
    FK_ANCHOR, FK_SRC, FK_PAGE_URL, FK_LINE, FK_COL, FK_COUNT
};
_Static_assert(sizeof S_FIGURE_KEYS / sizeof *S_FIGURE_KEYS == FK_COUNT, "a key per field");

/* The FK_ number of field name k, or -1 for a key figures do not have. */
static int S_figure_key(const char *k)
{
    int key;
    switch (k[0]) { /* the first letter, then the one name it may be */
    case 'q': key = FK_QUOTE; break;
    case 'e': key = FK_EXPR; break;
    case 'm': key = FK_MODE; break;
    case 't': key = FK_TIER; break;
    case 's': key = k[1] == 't' ? FK_STATUS : FK_SRC; break;
    case 'o': key = FK_OK; break;
    case 'v': key = FK_VALUE; break;
    case 'd': key = FK_DETAIL; break;
    case 'p': key = k[1] == 'r' ? FK_PROVENANCE : FK_PAGE_URL; break;
    case 'a': key = FK_ANCHOR; break;
    case 'l': key = FK_LINE; break;
    case 'c': key = FK_COL; break;
    default: return -1;
    }
    return strcmp(k, S_FIGURE_KEYS[key]) == 0 ? key : -1;
}

/* Field key of figure f of page src (at page_url). */
static void S_figure_value(const figure *f, const char *src, const char *page_url, int key,
                           tpl_value *v)
{
    const char *str = NULL;
    memset(v, 0, sizeof *v);
    switch (key) {
    case FK_QUOTE: str = f->quote; break;
    case FK_EXPR: str = f->expr; break;
    case FK_MODE: str = f->mode; break;
    case FK_TIER: str = fig_tier_name(f->tier); break;
    case FK_STATUS: str = f->ok ? "pass" : "fail"; break;
    case FK_SRC: str = src; break;
    case FK_DETAIL: str = f->detail; break;
    case FK_PROVENANCE: str = f->provenance; break;
    case FK_PAGE_URL: str = page_url; break;
    case FK_ANCHOR: str = f->anchor; break;
    case FK_OK:
        v->type = LUA_TBOOLEAN;
        v->i = f->ok;
        return;
    case FK_VALUE:
        v->type = LUA_TNUMBER;
        v->d = f->value;
        return;
    default: /* FK_LINE, FK_COL */
        v->type = LUA_TNUMBER;
        v->integer = true;
        v->i = key == FK_LINE ? f->line : f->col;
        return;
    }
    v->type = str ? LUA_TSTRING : LUA_TNIL;
    v->s = str;
}

/* Field k of figure f of page src (at page_url); false for a key figures
 * do not have. */
static bool S_figure_get(const figure *f, const char *src, const char *page_url, const char *k,
                         tpl_value *v)
{
    int key = S_figure_key(k);
    if (key < 0)
        return false;
    S_figure_value(f, src, page_url, key, v);
    return true;
}

/* Pushes field k of o; returns false for a key figures do not have. */
static bool S_figure_field(lua_State *L, void *obj, int at, const char *k)
{
    const figure_obj *o = obj;
    (void)at;
    tpl_value v;
    if (!S_figure_get(&o->f, o->src, o->page_url, k, &v))
        return false;
    switch (v.type) {
    case LUA_TSTRING: lua_pushlstring(L, v.s, strlen(v.s)); break;
    case LUA_TBOOLEAN: lua_pushboolean(L, (int)v.i); break;
    case LUA_TNUMBER:
        if (v.integer)
            lua_pushinteger(L, (lua_Integer)v.i);
        else
            lua_pushnumber(L, v.d);
        break;
    default: lua_pushnil(L);
    }
    return true;
}

static const lv_kind S_FIGURE_KIND = {"kvsite.figure", "a figure", S_FIGURE_KEYS,
                                      sizeof S_FIGURE_KEYS / sizeof *S_FIGURE_KEYS,
                                      S_figure_field, NULL, NULL};

/* The view at index idx, whatever its kind (its metatable is its kind's),
 * or NULL. */
static lv_head *S_any_view(lua_State *L, int idx)
{
    if (lua_type(L, idx) != LUA_TUSERDATA || lua_rawlen(L, idx) < sizeof(lv_head))
        return NULL;
    lv_head *h = lua_touserdata(L, idx);
    if (!lua_getmetatable(L, idx))
        return NULL;
    lua_rawgetp(L, LUA_REGISTRYINDEX, h->kind); /* any pointer is a key: nothing is read */
    bool view = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return view ? h : NULL;
}

/* tpl_field_reader: a figure's fields without Lua; any other view's field
 * as its kind makes it for Lua, shown without a call back into Lua (a
 * listing shows a handful of fields of each of its pages). */
bool lv_read_field(void *ctx, lua_State *L, int obj, const char *k, tpl_value *v)
{
    (void)ctx;
    const figure_obj *o = lv_test(L, obj, &S_FIGURE_KIND);
    if (o)
        return S_figure_get(&o->f, o->src, o->page_url, k, v);
    lv_head *h = S_any_view(L, obj);
    if (!h || !h->kind->field || lv_expired(h)) /* expired: Lua raises the error */
        return false;
    int top = lua_gettop(L);
    if (!h->kind->field(L, h, obj, k)) {
        lua_settop(L, top);
        return false;
    }
    size_t n;
    switch (lua_type(L, -1)) {
    case LUA_TNIL: *v = (tpl_value){LUA_TNIL, false, NULL, 0, 0}; return true;
    case LUA_TBOOLEAN: *v = (tpl_value){LUA_TBOOLEAN, false, NULL, lua_toboolean(L, -1), 0}; return true;
    case LUA_TNUMBER:
        if (lua_isinteger(L, -1))
            *v = (tpl_value){LUA_TNUMBER, true, NULL, (long long)lua_tointeger(L, -1), 0};
        else
            *v = (tpl_value){LUA_TNUMBER, false, NULL, 0, lua_tonumber(L, -1)};
        return true;
    case LUA_TSTRING:
        /* left on the stack while it is shown; one with a NUL in it: Lua's */
        v->s = lua_tolstring(L, -1, &n);
        if (strlen(v->s) != n)
            break;
        v->type = LUA_TSTRING;
        v->integer = false;
        return true;
    default: break;
    }
    lua_settop(L, top); /* a table, a view: Lua shows it as it would */
    return false;
}

/* page.toc: a view (a page may have thousands of headings) of the
 * page's result: it expires when the page's job ends. Each item is {level,
 * id, text, depth}: depth is the level under the page's shallowest heading
 * (1 for those), what a contents list nests by; a loop that shows only
 * fields of its items reads them in place (lv_list_reader). */
typedef struct {
    lv_head h;
    const md_heading *toc;
    size_t n;
    int top; /* the shallowest level */
} toc_view;

static size_t S_toc_len(const void *o) { return ((const toc_view *)o)->n; }

enum { TOC_LEVEL, TOC_ID, TOC_TEXT, TOC_DEPTH, TOC_KEYS };
static const char *const S_TOC_KEYS[TOC_KEYS] = {"level", "id", "text", "depth"};

static int S_toc_key(const char *k)
{
    for (int key = 0; key < TOC_KEYS; key++)
        if (strcmp(k, S_TOC_KEYS[key]) == 0)
            return key;
    return -1;
}

/* An item's field, for the list reader and for its table alike. */
static tpl_value S_toc_value(const toc_view *v, const md_heading *h, int key)
{
    switch (key) {
    case TOC_LEVEL: return (tpl_value){LUA_TNUMBER, true, NULL, h->level, 0};
    case TOC_DEPTH: return (tpl_value){LUA_TNUMBER, true, NULL, h->level - v->top + 1, 0};
    case TOC_ID:
    case TOC_TEXT: {
        const char *str = key == TOC_ID ? h->id : h->text;
        if (str)
            return (tpl_value){LUA_TSTRING, false, str, 0, 0};
        break;
    }
    default: break;
    }
    return (tpl_value){LUA_TNIL, false, NULL, 0, 0};
}

static bool S_toc_item(lua_State *L, void *o, lua_Integer i)
{
    const toc_view *v = o;
    if (i < 1 || (size_t)i > v->n)
        return false;
    lua_createtable(L, 0, TOC_KEYS);
    for (int key = 0; key < TOC_KEYS; key++) {
        tpl_value x = S_toc_value(v, &v->toc[i - 1], key);
        if (x.type == LUA_TNUMBER)
            lua_pushinteger(L, (lua_Integer)x.i);
        else if (x.type == LUA_TSTRING)
            lua_pushlstring(L, x.s, strlen(x.s)); /* not pushstring: see render_setstr */
        else
            continue;
        lua_setfield(L, -2, S_TOC_KEYS[key]);
    }
    return true;
}

static const lv_kind S_TOC_VIEW = {"kvsite.toc", "page.toc", NULL, 0, NULL, S_toc_item,
                                   S_toc_len};

void lv_push_toc(renderer *r, const md_heading *toc, size_t n)
{
    toc_view *v = lv_new(sandbox_lua(r->sb), &S_TOC_VIEW, sizeof *v, 0, &r->job_gen);
    v->toc = toc;
    v->n = n;
    v->top = n ? toc[0].level : 1;
    for (size_t i = 1; i < n; i++)
        if (toc[i].level < v->top)
            v->top = toc[i].level;
}

/* tpl_list_reader: a report's rows read straight from the figures, without
 * a figure object per row, a listed page's tags from the page, and the
 * page's contents from its headings. */
static void *S_open_list(void *ctx, lua_State *L, int list)
{
    (void)ctx;
    /* expired: NULL, and Lua raises the error */
    void *v = lv_test(L, list, &S_FIGURE_VIEW);
    if (!v)
        v = lv_test(L, list, &S_TAGS_VIEW);
    return v ? v : lv_test(L, list, &S_TOC_VIEW);
}

enum { TK_NAME, TK_URL };

static int S_list_key(void *ctx, void *list, const char *k)
{
    (void)ctx;
    const lv_kind *kind = ((const lv_head *)list)->kind;
    if (kind == &S_TAGS_VIEW)
        return strcmp(k, "name") == 0 ? TK_NAME : strcmp(k, "url") == 0 ? TK_URL : -1;
    if (kind == &S_TOC_VIEW)
        return S_toc_key(k);
    return S_figure_key(k);
}

static bool S_list_item(void *ctx, void *list, lua_Integer i, const int *keys, size_t n,
                        tpl_value *v)
{
    (void)ctx;
    if (((const lv_head *)list)->kind == &S_TAGS_VIEW) {
        const tags_view *tv = list;
        const page *p = S_tags_page(tv);
        if (i < 1 || (size_t)i > p->ntags)
            return false;
        const char *name = p->tags[i - 1];
        for (size_t j = 0; j < n; j++)
            v[j] = (tpl_value){LUA_TSTRING, false,
                               keys[j] == TK_NAME ? name : S_tag_url(tv->r, name), 0, 0};
        return true;
    }
    if (((const lv_head *)list)->kind == &S_TOC_VIEW) {
        const toc_view *tv = list;
        if (i < 1 || (size_t)i > tv->n)
            return false;
        for (size_t j = 0; j < n; j++)
            v[j] = S_toc_value(tv, &tv->toc[i - 1], keys[j]);
        return true;
    }
    figure_view *fv = list;
    const figure *f;
    const char *src, *url;
    if (i < 1 || (size_t)i > fv->n || !S_view_figure(fv, i, &f, &src, &url))
        return false;
    for (size_t j = 0; j < n; j++)
        S_figure_value(f, src, url, keys[j], &v[j]);
    return true;
}

const tpl_list_reader lv_list_reader = {S_open_list, S_list_key, S_list_item};

static void S_push_figure(lua_State *L, const figure *f, const char *src, const char *page_url)
{
    enum { NSTR = 8 };
    const char *from[NSTR] = {f->quote, f->expr, f->mode, f->detail, f->provenance, f->anchor,
                              src, page_url};
    size_t len[NSTR], total = 0;
    for (int i = 0; i < NSTR; i++)
        total += len[i] = from[i] ? strlen(from[i]) + 1 : 0;
    figure_obj *o = lv_new(L, &S_FIGURE_KIND, sizeof *o + total, 0, NULL);
    char *to[NSTR], *p = (char *)(o + 1);
    for (int i = 0; i < NSTR; i++) {
        to[i] = from[i] ? memcpy(p, from[i], len[i]) : NULL;
        p += len[i];
    }
    o->f = *f;
    o->f.quote = to[0];
    o->f.expr = to[1];
    o->f.mode = to[2];
    o->f.detail = to[3];
    o->f.provenance = to[4];
    o->f.anchor = to[5];
    o->src = to[6];
    o->page_url = to[7];
}

/* page.figures: a view of the page's own figures, like page.toc. */
typedef struct {
    lv_head h;
    const fig_ctx *figs;
    const char *src;
} page_figures_view;

static size_t S_page_figures_len(const void *o)
{
    return ((const page_figures_view *)o)->figs->nfigs;
}

static bool S_page_figures_item(lua_State *L, void *o, lua_Integer i)
{
    const page_figures_view *v = o;
    if (i < 1 || (size_t)i > v->figs->nfigs)
        return false;
    S_push_figure(L, &v->figs->figs[i - 1], v->src, NULL);
    return true;
}

static const lv_kind S_PAGE_FIGURES_VIEW = {"kvsite.page_figures", "page.figures", NULL, 0,
                                            NULL, S_page_figures_item, S_page_figures_len};

void lv_push_page_figures(renderer *r, const fig_ctx *figs, const char *src)
{
    page_figures_view *v =
        lv_new(sandbox_lua(r->sb), &S_PAGE_FIGURES_VIEW, sizeof *v, 0, &r->job_gen);
    v->figs = figs;
    v->src = src;
}

/* ---------- site and report ---------- */

/* Whether job j's figures are listed on report page number (0: any) of
 * group (REPORT_GROUP_ALL: every group). */
bool lv_report_lists(renderer *r, size_t group, size_t number, size_t j)
{
    if (group != REPORT_GROUP_ALL && render_groups(r)[j] != group)
        return false;
    if (number == 0 || !r->e.pages_plan)
        return true;
    return j < r->e.idx->npages && r->e.pages_plan->report_number[j] == number;
}

void lv_report_iter_init(lv_report_iter *it, renderer *r, size_t group, size_t number,
                         size_t njobs)
{
    *it = (lv_report_iter){r, group, number, njobs, NULL, 0, 0};
    const paginate_plan_t *pl = r->e.pages_plan;
    if (number && pl && pl->report_list_at) {
        it->list = paginate_report_list(pl, paginate_slot(pl, group), number, &it->n);
        if (!it->list)
            it->n = 0;
        it->njobs = 0; /* the list is all there is */
    }
}

bool lv_report_next(lv_report_iter *it, size_t *job)
{
    if (it->list || !it->njobs) {
        if (it->i >= it->n)
            return false;
        *job = it->list[it->i++];
        return true;
    }
    while (it->i < it->njobs) {
        size_t j = it->i++;
        if (lv_report_lists(it->r, it->group, it->number, j)) {
            *job = j;
            return true;
        }
    }
    return false;
}

/* Figures [*lo, *hi) of record rec that part (SIZE_MAX: all) lists, rows
 * of each page on a part. */
static void S_part_span(const page_record *rec, size_t rows, size_t part, size_t *lo, size_t *hi)
{
    if (part == SIZE_MAX) {
        *lo = 0;
        *hi = rec->nfigs;
        return;
    }
    paginate_part_bounds(rec->nfigs, rows, part, lo, hi);
}

/* The figures per tier and the failed ones of view v's spans: a whole
 * page's from its record's counts, a part of a page's from its figures
 * (false, errno set, when they cannot be read). */
static bool S_view_counts(figure_view *v, lua_Integer tiers[FIG_TIERS], lua_Integer *failed)
{
    renderer *r = v->r;
    memset(tiers, 0, FIG_TIERS * sizeof *tiers);
    *failed = 0;
    size_t before = 0;
    for (size_t s = 0; s < v->nspans; s++) {
        size_t job = v->spans[3 * s], lo = v->spans[3 * s + 1], n = v->spans[3 * s + 2] - before;
        before = v->spans[3 * s + 2];
        const page_record *rec = render_record(r, job);
        uint32_t c[FIG_TIERS + 1] = {0};
        if (lo == 0 && n == rec->nfigs) {
            record_fig_counts(rec, c);
        } else {
            const figure *figs = record_figures(rec, r->e.figs, &r->figs_buf);
            r->figs_now = NULL; /* the buffer is reused here */
            if (!figs)
                return false;
            for (size_t k = lo; k < lo + n; k++) {
                c[figs[k].tier]++;
                c[FIG_TIERS] += !figs[k].ok;
            }
        }
        for (int t = 0; t < FIG_TIERS; t++)
            tiers[t] += c[t];
        *failed += c[FIG_TIERS];
    }
    return true;
}

static const char *const S_COUNT_KEYS[FIG_TIERS + 1] = {"computed", "measured", "cited",
                                                        "refuted", "failed"};
_Static_assert(FIG_COMPUTED == 0 && FIG_MEASURED == 1 && FIG_CITED == 2 && FIG_REFUTED == 3,
               "S_COUNT_KEYS in fig_tier order");

/* Sets the counts' fields of the table at idx. */
static void S_set_counts(lua_State *L, int idx, const lua_Integer tiers[FIG_TIERS],
                         lua_Integer failed)
{
    idx = lua_absindex(L, idx);
    for (int t = 0; t <= FIG_TIERS; t++) {
        lua_pushinteger(L, t < FIG_TIERS ? tiers[t] : failed);
        lua_setfield(L, idx, S_COUNT_KEYS[t]);
    }
}

/* __index of a report part's figures: its counts, made when first read
 * (parts of pages: their figures are read for them; most templates show
 * the site's totals instead). */
static int S_figures_index(lua_State *L)
{
    const char *k = lua_tostring(L, 2);
    int t = 0;
    while (t <= FIG_TIERS && !(k && !strcmp(k, S_COUNT_KEYS[t])))
        t++;
    if (t > FIG_TIERS)
        return 0;
    lua_pushliteral(L, "list");
    lua_rawget(L, 1);
    figure_view *v = lv_check(L, -1, &S_FIGURE_VIEW);
    lua_Integer tiers[FIG_TIERS], failed;
    if (!S_view_counts(v, tiers, &failed))
        return luaL_error(L, "cannot read the figures of a page: %s", strerror(errno));
    S_set_counts(L, 1, tiers, failed);
    lua_pushstring(L, k);
    lua_rawget(L, 1);
    return 1;
}

void lv_push_figures(renderer *r, size_t group, size_t number, size_t part)
{
    lua_State *L = sandbox_lua(r->sb);
    lua_createtable(L, 0, 8);
    size_t nspans = 0, total = 0, lo, hi;
    const paginate_plan_t *pl = r->e.pages_plan;
    if (!pl || !number)
        part = SIZE_MAX;
    size_t rows = part == SIZE_MAX ? 0 : paginate_rows_of(pl, paginate_slot(pl, group), number);
    /* generated pages have no figures */
    size_t njobs = group == REPORT_GROUP_ALL && !number ? r->e.nrecords : r->e.idx->npages;
    lv_report_iter it;
    lv_report_iter_init(&it, r, group, number, njobs);
    for (size_t j; lv_report_next(&it, &j);) {
        const page_record *rec = render_record(r, j);
        if (!rec || !rec->nfigs)
            continue;
        S_part_span(rec, rows, part, &lo, &hi);
        nspans += lo < hi;
    }
    figure_view *fv =
        lv_new(L, &S_FIGURE_VIEW, sizeof *fv + 3 * nspans * sizeof(size_t), 0, &r->job_gen);
    fv->r = r;
    fv->nspans = nspans;
    fv->last = 0;
    nspans = 0;
    bool some = false; /* a span with some of a page's figures */
    lv_report_iter_init(&it, r, group, number, njobs);
    for (size_t j; lv_report_next(&it, &j);) {
        const page_record *rec = render_record(r, j);
        if (!rec || !rec->nfigs)
            continue;
        S_part_span(rec, rows, part, &lo, &hi);
        if (lo >= hi)
            continue;
        some |= hi - lo < rec->nfigs;
        total += hi - lo;
        fv->spans[3 * nspans] = j;
        fv->spans[3 * nspans + 1] = lo;
        fv->spans[3 * nspans + 2] = total;
        nspans++;
    }
    fv->n = total;
    if (some) {
        lua_createtable(L, 0, 2);
        lua_pushcfunction(L, S_figures_index);
        lua_setfield(L, -2, "__index");
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, "__metatable");
        lua_setmetatable(L, -3);
    } else {
        lua_Integer tiers[FIG_TIERS], failed;
        S_view_counts(fv, tiers, &failed); /* from the records alone */
        S_set_counts(L, -2, tiers, failed);
    }
    lua_setfield(L, -2, "list");
    lua_pushinteger(L, (lua_Integer)total);
    lua_setfield(L, -2, "total");
}

/* ---------- helpers for templates ---------- */
