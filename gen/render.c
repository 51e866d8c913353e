#include "render.h"

#include <lauxlib.h>
#include <lua.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "luadata.h"
#include "markdown.h"
#include "quote.h"
#include "report.h"
#include "sandbox.h"
#include "stamp.h"
#include "template.h"
#include "url.h"

struct renderer {
    render_env e;
    sandbox *sb;
    templates *tpl;
    md_ctx *md;
    /* the page being rendered, for markdown_inline */
    const page *cur_page;
    const char *cur_file;
    page_record *cur_rec;
    fig_ctx *cur_figs;
    /* the job being rendered sees the records of earlier phases only, and
     * every record it reads is noted: an incremental build re-renders it
     * when one of them changes */
    int cur_phase;
    unsigned char *read_mark; /* by job */
    const unsigned char *phase; /* by job: render_job_phase, asked for every record read */
    unsigned char *own_phase;   /* phase when the env has none */
    uint32_t *reads;
    size_t nreads, capreads;
    buf scratch;        /* S_push_page_brief's */
    strmap tag_urls;    /* tag name -> its URL (owned) */
    char *fig_url;      /* full URL of the page whose figures a view last gave */
    size_t fig_url_job;
    size_t *groups;     /* report group by page (S_groups), NULL until needed */
    record_figs_buf figs_buf; /* the figures of the record a view last read */
    const figure *figs_now;
    size_t figs_job;
    char *report_url;   /* full URL of the report page listing the current page */
};

/* ---------- jobs ---------- */

size_t render_job_count(const render_env *e)
{
    return e->idx->npages + 1 + e->idx->ntags + 4 + e->nreport_sections;
}

job_kind render_job_kind(const render_env *e, size_t job, size_t *index)
{
    size_t n = e->idx->npages;
    *index = 0;
    if (job < n) {
        *index = job;
        return JOB_PAGE;
    }
    job -= n;
    if (job == 0)
        return JOB_TAGS;
    job -= 1;
    if (job < e->idx->ntags) {
        *index = job;
        return JOB_TAG;
    }
    job -= e->idx->ntags;
    if (job >= 4) {
        *index = job - 4; /* into e->report_sections */
        return JOB_CHECKS_SECTION;
    }
    return job == 0 ? JOB_SOURCES : job == 1 ? JOB_CHECKS : job == 2 ? JOB_404 : JOB_CHECKS_JSON;
}

int render_job_phase(const render_env *e, size_t job)
{
    size_t i;
    switch (render_job_kind(e, job, &i)) {
    case JOB_PAGE:
        switch (e->idx->pages[i]->kind) {
        case PAGE_REGULAR: return 1;
        case PAGE_SECTION: return 2;
        default: return 3;
        }
    case JOB_CHECKS:
    case JOB_CHECKS_JSON:
    case JOB_CHECKS_SECTION: return 4;
    default: return 2;
    }
}

unsigned char *render_job_phases(const render_env *e)
{
    size_t n = render_job_count(e), all = n > e->nrecords ? n : e->nrecords;
    unsigned char *v = xmalloc(all + 1);
    for (size_t j = 0; j < n; j++)
        v[j] = (unsigned char)render_job_phase(e, j);
    memset(v + n, UCHAR_MAX, all - n); /* records past the jobs: never readable */
    return v;
}

static const char *S_job_template(const render_env *e, size_t job);

const char *render_job_file(const render_env *e, size_t job)
{
    size_t i;
    if (render_job_kind(e, job, &i) == JOB_PAGE && e->idx->pages[i]->src)
        return e->idx->pages[i]->src;
    return S_job_template(e, job);
}

/* ---------- Lua objects ---------- */

static void S_setstr(lua_State *L, const char *k, const char *v)
{
    if (!v)
        return;
    lua_pushstring(L, v);
    lua_setfield(L, -2, k);
}

static char *S_full_url(const renderer *r, const char *site_path)
{
    return xasprintf("%s%s", r->e.cfg->base_path, site_path);
}

static const page_record *S_record(renderer *r, size_t job)
{
    if (!r->e.records || job >= r->e.nrecords || !r->e.records[job].done ||
        r->phase[job] >= r->cur_phase)
        return NULL;
    if (!r->read_mark[job]) {
        r->read_mark[job] = 1;
        if (r->nreads == r->capreads)
            r->reads = xrealloc(r->reads, (r->capreads = r->capreads ? 2 * r->capreads : 64) *
                                              sizeof *r->reads);
        r->reads[r->nreads++] = (uint32_t)job;
    }
    return &r->e.records[job];
}

static const char *S_kind_name(page_kind k)
{
    return k == PAGE_HOME ? "home" : k == PAGE_SECTION ? "section" : "page";
}

static const char S_BRIEF_KEY = 0; /* its address keys a brief's page index */
static const char *const S_BRIEF_META = "kvsite.brief";

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
    const page *p = r->e.idx->pages[i];
    if (p->front) {
        if (luadata_push(L, p->front) != 0)
            return lua_error(L);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_newtable(L);
        }
    } else {
        lua_newtable(L);
    }
    lua_pushliteral(L, "params");
    lua_pushvalue(L, -2);
    lua_rawset(L, 1);
    return 1;
}

/* A page's tags: {name, url} each. */
static void S_push_tags_of(renderer *r, const page *p)
{
    lua_State *L = sandbox_lua(r->sb);
    lua_createtable(L, (int)p->ntags, 0);
    for (size_t k = 0; k < p->ntags; k++) {
        lua_createtable(L, 0, 2);
        S_setstr(L, "name", p->tags[k]);
        /* a tag's URL, made once per worker */
        const char *tu = strmap_get(&r->tag_urls, p->tags[k]);
        if (!tu) {
            char *slug = content_slugify(p->tags[k]);
            char *made = xasprintf("%s/tags/%s/", r->e.cfg->base_path, slug);
            free(slug);
            strmap_put(&r->tag_urls, p->tags[k], made);
            tu = made;
        }
        S_setstr(L, "url", tu);
        lua_rawseti(L, -2, (lua_Integer)k + 1);
    }
}

/* Pushes a page's front matter as a table ({} for none). */
static void S_push_params(lua_State *L, const page *p)
{
    if (p->front) {
        if (luadata_push(L, p->front) != 0)
            lua_error(L);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_newtable(L);
        }
    } else {
        lua_newtable(L);
    }
}

/* A kind of read-only object templates see (a listed page, a figure): its
 * fields in the order pairs() gives them, and the function that pushes one
 * (false for a key the kind does not have). The object is at stack index 1. */
typedef struct {
    const char *meta; /* metatable name */
    const char *what; /* for errors: "a figure" */
    const char *const *keys;
    size_t nkeys;
    bool (*field)(lua_State *L, const void *obj, const char *k);
} ro_kind;

static int S_ro_index(lua_State *L)
{
    const ro_kind *kind = lua_touserdata(L, lua_upvalueindex(1));
    const char *k = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : NULL;
    if (!k || !kind->field(L, lua_touserdata(L, 1), k))
        lua_pushnil(L);
    return 1;
}

static int S_ro_newindex(lua_State *L)
{
    const ro_kind *kind = lua_touserdata(L, lua_upvalueindex(1));
    return luaL_error(L, "%s is read-only: cannot set %s", kind->what, luaL_tolstring(L, 2, NULL));
}

/* pairs(): the fields that are set, in the kind's order */
static int S_ro_next(lua_State *L)
{
    const ro_kind *kind = lua_touserdata(L, lua_upvalueindex(1));
    size_t i = 0;
    if (!lua_isnil(L, 2)) {
        const char *k = lua_tostring(L, 2);
        while (i < kind->nkeys && (!k || strcmp(kind->keys[i], k)))
            i++;
        i++;
    }
    for (; i < kind->nkeys; i++) {
        lua_pushstring(L, kind->keys[i]);
        kind->field(L, lua_touserdata(L, 1), kind->keys[i]);
        if (!lua_isnil(L, -1))
            return 2;
        lua_pop(L, 2);
    }
    return 0;
}

static int S_ro_pairs(lua_State *L)
{
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushcclosure(L, S_ro_next, 1);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

/* Sets the metatable of the kind on the userdata on top of the stack. */
static void S_ro_setmeta(lua_State *L, const ro_kind *kind)
{
    /* found by the kind's address: one object per report row */
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, kind) != LUA_TTABLE) {
        lua_pop(L, 1);
        luaL_newmetatable(L, kind->meta);
        lua_CFunction fns[] = {S_ro_index, S_ro_newindex, S_ro_pairs};
        const char *names[] = {"__index", "__newindex", "__pairs"};
        for (int i = 0; i < 3; i++) {
            lua_pushlightuserdata(L, (void *)kind);
            lua_pushcclosure(L, fns[i], 1);
            lua_setfield(L, -2, names[i]);
        }
        lua_pushliteral(L, "locked");
        lua_setfield(L, -2, "__metatable");
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, kind);
    }
    lua_setmetatable(L, -2);
}

/* A page in a list (page.pages, site.pages, a tag's pages): a read-only
 * object whose fields are made when read. Listings of thousands of pages
 * read a few fields of each; building a table of 15 for each cost more than
 * the rest of the listing. Reading its summary or figure count is what makes
 * a listing depend on that page's record (incremental builds). */
typedef struct {
    renderer *r;
    size_t i; /* index into idx->pages */
} brief_obj;

static const char *const S_BRIEF_OBJ = "kvsite.pagebrief";
static const char *const S_BRIEF_KEYS[] = {"title", "date",   "updated", "section", "src",
                                           "kind",  "url",    "permalink", "path",  "weight",
                                           "draft", "summary", "nfigures", "tags",  "params"};

static void S_pushstr_or_nil(lua_State *L, const char *v)
{
    if (v)
        lua_pushstring(L, v);
    else
        lua_pushnil(L);
}

/* Pushes field k of the brief at index 1 (nil for one it lacks); false for
 * a key briefs do not have. */
static bool S_brief_field(lua_State *L, const brief_obj *o, const char *k)
{
    renderer *r = o->r;
    const page *p = r->e.idx->pages[o->i];
    buf *t = &r->scratch;
    if (!strcmp(k, "title")) S_pushstr_or_nil(L, p->title);
    else if (!strcmp(k, "date")) S_pushstr_or_nil(L, p->date);
    else if (!strcmp(k, "updated")) S_pushstr_or_nil(L, p->updated);
    else if (!strcmp(k, "section")) S_pushstr_or_nil(L, p->section);
    else if (!strcmp(k, "src")) S_pushstr_or_nil(L, p->src);
    else if (!strcmp(k, "kind")) lua_pushstring(L, S_kind_name(p->kind));
    else if (!strcmp(k, "path")) S_pushstr_or_nil(L, p->url);
    else if (!strcmp(k, "weight")) lua_pushinteger(L, p->weight);
    else if (!strcmp(k, "draft")) lua_pushboolean(L, p->draft);
    else if (!strcmp(k, "url") || !strcmp(k, "permalink")) {
        buf_clear(t);
        if (k[0] == 'u') {
            buf_puts(t, r->e.cfg->base_path);
            buf_puts(t, p->url);
        } else {
            buf_puts(t, r->e.cfg->base_url);
            buf_puts(t, p->url + 1);
        }
        lua_pushlstring(L, t->ptr, t->len);
    } else if (!strcmp(k, "summary")) {
        const page_record *rec = p->summary ? NULL : S_record(r, o->i);
        S_pushstr_or_nil(L, p->summary ? p->summary : rec && rec->summary[0] ? rec->summary : NULL);
    } else if (!strcmp(k, "nfigures")) {
        const page_record *rec = S_record(r, o->i);
        if (rec)
            lua_pushinteger(L, (lua_Integer)rec->nfigs);
        else
            lua_pushnil(L);
    } else if (!strcmp(k, "tags") || !strcmp(k, "params")) {
        /* made once per object: p.tags == p.tags, as with a table */
        int slot = k[0] == 't' ? 1 : 2;
        if (lua_getiuservalue(L, 1, slot) == LUA_TNIL) {
            lua_pop(L, 1);
            if (slot == 1)
                S_push_tags_of(r, p);
            else
                S_push_params(L, p);
            lua_pushvalue(L, -1);
            lua_setiuservalue(L, 1, slot);
        }
    } else {
        return false;
    }
    return true;
}

static bool S_brief_field_any(lua_State *L, const void *o, const char *k)
{
    return S_brief_field(L, o, k);
}

static const ro_kind S_BRIEF_KIND = {S_BRIEF_OBJ, "a page in a list", S_BRIEF_KEYS,
                                     sizeof S_BRIEF_KEYS / sizeof *S_BRIEF_KEYS,
                                     S_brief_field_any};

static void S_push_brief_obj(renderer *r, size_t i)
{
    lua_State *L = sandbox_lua(r->sb);
    brief_obj *o = lua_newuserdatauv(L, sizeof *o, 2);
    o->r = r;
    o->i = i;
    S_ro_setmeta(L, &S_BRIEF_KIND);
}

/* A page as listings see it. */
static void S_push_page_brief(renderer *r, size_t i)
{
    lua_State *L = sandbox_lua(r->sb);
    const page *p = r->e.idx->pages[i];
    lua_createtable(L, 0, 16);
    S_setstr(L, "title", p->title);
    S_setstr(L, "date", p->date);
    S_setstr(L, "updated", p->updated);
    S_setstr(L, "section", p->section);
    S_setstr(L, "src", p->src);
    S_setstr(L, "kind", S_kind_name(p->kind));
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
    S_setstr(L, "path", p->url);
    lua_pushinteger(L, p->weight);
    lua_setfield(L, -2, "weight");
    lua_pushboolean(L, p->draft);
    lua_setfield(L, -2, "draft");
    const page_record *rec = S_record(r, i);
    const char *summary = p->summary ? p->summary : rec && rec->summary[0] ? rec->summary : NULL;
    S_setstr(L, "summary", summary);
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
    }
    lua_setmetatable(L, -2);
}

/* Lists of pages and figures are views: their items are built when a
 * template reads them and dropped after, so a site of 100,000 pages or
 * figures lists in constant Lua memory. A view is a userdata with __index,
 * __len and __pairs; its metatable is locked against pages changing it. */
typedef struct {
    renderer *r;
    size_t n;
    size_t items[]; /* page indices */
} page_view;

typedef struct {
    renderer *r;
    size_t n;       /* figures */
    size_t nspans;
    size_t last;    /* the span read last: a report reads in order */
    size_t spans[]; /* pairs: record job, cumulative figure count after it */
} figure_view;

static const char *const S_PAGE_VIEW = "kvsite.pages";
static const char *const S_FIGURE_VIEW = "kvsite.figures";

static void S_push_figure(lua_State *L, const figure *f, const char *src, const char *page_url);

static int S_view_len(lua_State *L)
{
    size_t n = luaL_testudata(L, 1, S_PAGE_VIEW) ? ((page_view *)lua_touserdata(L, 1))->n
                                                 : ((figure_view *)lua_touserdata(L, 1))->n;
    lua_pushinteger(L, (lua_Integer)n);
    return 1;
}

static int S_page_view_index(lua_State *L)
{
    page_view *v = luaL_checkudata(L, 1, S_PAGE_VIEW);
    lua_Integer i = lua_tointeger(L, 2);
    if (!lua_isinteger(L, 2) || i < 1 || (size_t)i > v->n)
        return 0;
    S_push_brief_obj(v->r, v->items[i - 1]);
    return 1;
}

/* Figure i (from 1) of view v, with its page's source path and full URL
 * (NULL for none); false with errno set when the page's figures cannot be
 * read. The figure lives until another page's figures are read. */
static bool S_view_figure(figure_view *v, lua_Integer i, const figure **fig, const char **src,
                          const char **url)
{
    size_t k = (size_t)i - 1, lo = v->last;
    if (!(lo < v->nspans && k < v->spans[2 * lo + 1] && (lo == 0 || k >= v->spans[2 * lo - 1]))) {
        size_t hi = v->nspans;
        lo = 0;
        while (lo < hi) { /* the first span whose cumulative count exceeds k */
            size_t mid = (lo + hi) / 2;
            if (v->spans[2 * mid + 1] <= k)
                lo = mid + 1;
            else
                hi = mid;
        }
        v->last = lo;
    }
    size_t before = lo ? v->spans[2 * lo - 1] : 0;
    size_t job = v->spans[2 * lo];
    renderer *r = v->r;
    const page_record *rec = S_record(r, job);
    *src = rec->src;
    if (!r->fig_url || r->fig_url_job != job) {
        /* a report reads a page's figures one after the other */
        free(r->fig_url);
        r->fig_url = S_full_url(r, rec->url);
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
    *fig = &figs[k - before];
    return true;
}

static int S_figure_view_index(lua_State *L)
{
    figure_view *v = luaL_checkudata(L, 1, S_FIGURE_VIEW);
    lua_Integer i = lua_tointeger(L, 2);
    if (!lua_isinteger(L, 2) || i < 1 || (size_t)i > v->n)
        return 0;
    const figure *f;
    const char *src, *url;
    if (!S_view_figure(v, i, &f, &src, &url))
        return luaL_error(L, "cannot read the figures of %s: %s", src, strerror(errno));
    S_push_figure(L, f, src, url);
    return 1;
}

static int S_view_next(lua_State *L)
{
    lua_Integer i = luaL_checkinteger(L, 2) + 1;
    lua_pushinteger(L, i);
    if (lua_geti(L, 1, i) == LUA_TNIL)
        return 1;
    return 2;
}

static int S_view_pairs(lua_State *L)
{
    lua_pushcfunction(L, S_view_next);
    lua_pushvalue(L, 1);
    lua_pushinteger(L, 0);
    return 3;
}

static void S_view_meta(lua_State *L, const char *name, lua_CFunction index, lua_CFunction len)
{
    if (luaL_newmetatable(L, name)) {
        lua_pushcfunction(L, index);
        lua_setfield(L, -2, "__index");
        lua_pushcfunction(L, len);
        lua_setfield(L, -2, "__len");
        lua_pushcfunction(L, S_view_pairs);
        lua_setfield(L, -2, "__pairs");
        lua_pushliteral(L, "locked");
        lua_setfield(L, -2, "__metatable");
    }
    lua_setmetatable(L, -2);
}

static void S_push_page_list(renderer *r, const size_t *v, size_t n)
{
    lua_State *L = sandbox_lua(r->sb);
    page_view *pv = lua_newuserdatauv(L, sizeof *pv + n * sizeof(size_t), 0);
    pv->r = r;
    pv->n = n;
    if (n)
        memcpy(pv->items, v, n * sizeof *v);
    S_view_meta(L, S_PAGE_VIEW, S_page_view_index, S_view_len);
}

/* A figure as templates see it: a read-only object whose fields are made
 * when read. A report reads a few fields of each of 100,000s of figures:
 * building a 14-field table for each cost more than the rest of the page.
 * The object holds a copy of the figure and its strings: figures of other
 * pages are decoded into a buffer that the next page's reuse. */
typedef struct {
    uint64_t tag;         /* FIGURE_TAG: tells a figure from kvsite's other
                           * objects, whose first field is a pointer */
    figure f;             /* its strings point into the object */
    const char *src;      /* the same */
    const char *page_url; /* the same, NULL for none */
} figure_obj;

/* Not an address a pointer can hold (the upper half is the kernel's). */
#define FIGURE_TAG UINT64_C(0xf16e5f16e5f16e50)

static const char *const S_FIGURE_OBJ = "kvsite.figure";
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
static bool S_figure_field(lua_State *L, const figure_obj *o, const char *k)
{
    tpl_value v;
    if (!S_figure_get(&o->f, o->src, o->page_url, k, &v))
        return false;
    switch (v.type) {
    case LUA_TSTRING: lua_pushstring(L, v.s); break;
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

/* tpl_field_reader: a figure's fields for `{{ f.quote }}`, without Lua. */
static bool S_read_field(void *ctx, lua_State *L, int obj, const char *k, tpl_value *v)
{
    (void)ctx;
    const figure_obj *o = lua_touserdata(L, obj);
    return o && lua_rawlen(L, obj) >= sizeof *o && o->tag == FIGURE_TAG &&
           S_figure_get(&o->f, o->src, o->page_url, k, v);
}

/* tpl_list_reader: a report's rows read straight from the figures, without
 * a figure object per row. */
static void *S_open_list(void *ctx, lua_State *L, int list)
{
    (void)ctx;
    return luaL_testudata(L, list, S_FIGURE_VIEW);
}

static int S_list_key(void *ctx, void *list, const char *k)
{
    (void)ctx;
    (void)list;
    return S_figure_key(k);
}

static bool S_list_item(void *ctx, void *list, lua_Integer i, const int *keys, size_t n,
                        tpl_value *v)
{
    (void)ctx;
    figure_view *fv = list;
    const figure *f;
    const char *src, *url;
    if (i < 1 || (size_t)i > fv->n || !S_view_figure(fv, i, &f, &src, &url))
        return false;
    for (size_t j = 0; j < n; j++)
        S_figure_value(f, src, url, keys[j], &v[j]);
    return true;
}

static const tpl_list_reader S_LIST_READER = {S_open_list, S_list_key, S_list_item};

static bool S_figure_field_any(lua_State *L, const void *o, const char *k)
{
    return S_figure_field(L, o, k);
}

static const ro_kind S_FIGURE_KIND = {S_FIGURE_OBJ, "a figure", S_FIGURE_KEYS,
                                      sizeof S_FIGURE_KEYS / sizeof *S_FIGURE_KEYS,
                                      S_figure_field_any};

static void S_push_figure(lua_State *L, const figure *f, const char *src, const char *page_url)
{
    enum { NSTR = 8 };
    const char *from[NSTR] = {f->quote, f->expr, f->mode, f->detail, f->provenance, f->anchor,
                              src, page_url};
    size_t len[NSTR], total = 0;
    for (int i = 0; i < NSTR; i++)
        total += len[i] = from[i] ? strlen(from[i]) + 1 : 0;
    figure_obj *o = lua_newuserdatauv(L, sizeof *o + total, 0);
    char *to[NSTR], *p = (char *)(o + 1);
    for (int i = 0; i < NSTR; i++) {
        to[i] = from[i] ? memcpy(p, from[i], len[i]) : NULL;
        p += len[i];
    }
    o->tag = FIGURE_TAG;
    o->f = *f;
    o->f.quote = to[0];
    o->f.expr = to[1];
    o->f.mode = to[2];
    o->f.detail = to[3];
    o->f.provenance = to[4];
    o->f.anchor = to[5];
    o->src = to[6];
    o->page_url = to[7];
    S_ro_setmeta(L, &S_FIGURE_KIND);
}

/* ---------- report groups ---------- */

/* With templates/checks-section.html the report is one page per top-level
 * section (checks/<section>/) plus the index (checks/), which lists home's
 * and the root pages' figures: a site of 100,000s of figures gets pages a
 * browser can open, and rendered side by side. */
#define GROUP_ALL ((size_t)-2)  /* every figure: site.figures, the one report */
#define GROUP_ROOT ((size_t)-1) /* home and the pages at the root */

size_t *render_report_sections(const content_index *idx, size_t *n)
{
    size_t *v = xmalloc((idx->npages + 1) * sizeof *v);
    *n = 0;
    for (size_t i = 0; i < idx->npages; i++) {
        const page *p = idx->pages[i];
        if (p->kind == PAGE_SECTION && p->parent && p->parent->kind == PAGE_HOME)
            v[(*n)++] = i;
    }
    return v;
}

/* The top-level section page a page belongs to, or NULL for the root group. */
static const page *S_top_section(const page *p)
{
    /* parents lead to home: a chain as deep as the content folders */
    while (p && p->parent && p->parent->kind != PAGE_HOME)
        p = p->parent;
    return p && p->kind != PAGE_HOME && p->parent && p->kind == PAGE_SECTION ? p : NULL;
}

/* The report group of every page (GROUP_ROOT, or the position of its
 * top-level section in e->report_sections; GROUP_ALL when the report is one
 * page), made once per worker. */
static const size_t *S_groups(renderer *r)
{
    if (r->groups)
        return r->groups;
    const render_env *e = &r->e;
    r->groups = xmalloc((e->idx->npages + 1) * sizeof *r->groups);
    strmap top_of;
    strmap_init(&top_of);
    for (size_t k = 0; k < e->nreport_sections; k++)
        strmap_put(&top_of, e->idx->pages[e->report_sections[k]]->url, (void *)(k + 1));
    for (size_t j = 0; j < e->idx->npages; j++) {
        const page *top = e->nreport_sections ? S_top_section(e->idx->pages[j]) : NULL;
        size_t k = top ? (size_t)strmap_get(&top_of, top->url) : 0;
        r->groups[j] = !e->nreport_sections ? GROUP_ALL : k ? k - 1 : GROUP_ROOT;
    }
    strmap_free(&top_of);
    return r->groups;
}

/* Where the figures of job j are listed: "/checks/" or "/checks/<section>/"
 * (site path, malloc'ed). */
static char *S_report_path(const render_env *e, size_t group)
{
    if (group == GROUP_ALL || group == GROUP_ROOT)
        return xstrdup("/checks/");
    return xasprintf("/checks%s", e->idx->pages[e->report_sections[group]]->url);
}

/* Figures of a group (GROUP_ALL: every one) among the records so far, with
 * totals per tier: {list = view, total, computed, measured, cited, failed}.
 * Only the group's records are read. */
static void S_push_figures(renderer *r, size_t group)
{
    lua_State *L = sandbox_lua(r->sb);
    lua_createtable(L, 0, 8);
    size_t nspans = 0, total = 0;
    lua_Integer tiers[3] = {0, 0, 0}, failed = 0;
    /* generated pages have no figures */
    size_t njobs = group == GROUP_ALL ? r->e.nrecords : r->e.idx->npages;
    const size_t *groups = group == GROUP_ALL ? NULL : S_groups(r);
    for (size_t j = 0; j < njobs; j++) {
        if (groups && groups[j] != group)
            continue;
        const page_record *rec = S_record(r, j);
        if (rec && rec->nfigs)
            nspans++;
    }
    figure_view *fv = lua_newuserdatauv(L, sizeof *fv + 2 * nspans * sizeof(size_t), 0);
    fv->r = r;
    fv->nspans = nspans;
    fv->last = 0;
    nspans = 0;
    for (size_t j = 0; j < njobs; j++) {
        if (groups && groups[j] != group)
            continue;
        const page_record *rec = S_record(r, j);
        if (!rec || !rec->nfigs)
            continue;
        uint32_t counts[4];
        record_fig_counts(rec, counts);
        for (int t = 0; t < 3; t++)
            tiers[t] += counts[t];
        failed += counts[3];
        total += rec->nfigs;
        fv->spans[2 * nspans] = j;
        fv->spans[2 * nspans + 1] = total;
        nspans++;
    }
    fv->n = total;
    S_view_meta(L, S_FIGURE_VIEW, S_figure_view_index, S_view_len);
    lua_setfield(L, -2, "list");
    lua_pushinteger(L, (lua_Integer)total);
    lua_setfield(L, -2, "total");
    lua_pushinteger(L, tiers[FIG_COMPUTED]);
    lua_setfield(L, -2, "computed");
    lua_pushinteger(L, tiers[FIG_MEASURED]);
    lua_setfield(L, -2, "measured");
    lua_pushinteger(L, tiers[FIG_CITED]);
    lua_setfield(L, -2, "cited");
    lua_pushinteger(L, failed);
    lua_setfield(L, -2, "failed");
}

static void S_push_site_figures(renderer *r) { S_push_figures(r, GROUP_ALL); }

/* `report` of a report page: its figures, its section (a page brief; none
 * for the index) and, on the index, one entry per report section page. */
static void S_push_report(renderer *r, size_t group)
{
    lua_State *L = sandbox_lua(r->sb);
    lua_createtable(L, 0, 3);
    S_push_figures(r, group);
    lua_setfield(L, -2, "figures");
    if (group != GROUP_ALL && group != GROUP_ROOT) {
        S_push_page_brief(r, r->e.report_sections[group]);
        lua_setfield(L, -2, "section");
    }
    size_t ns = group == GROUP_ROOT ? r->e.nreport_sections : 0;
    lua_createtable(L, (int)ns, 0);
    if (ns) {
        /* totals per section, from every record */
        size_t *count = xcalloc(5 * ns + 1, sizeof *count);
        const size_t *groups = S_groups(r);
        for (size_t j = 0; j < r->e.idx->npages; j++) {
            size_t g = groups[j];
            const page_record *rec = g == GROUP_ROOT ? NULL : S_record(r, j);
            if (!rec || !rec->nfigs)
                continue;
            uint32_t c[4];
            record_fig_counts(rec, c);
            count[5 * g] += rec->nfigs;
            for (int k = 0; k < 4; k++)
                count[5 * g + 1 + k] += c[k];
        }
        static const char *const keys[] = {"total", "computed", "measured", "cited", "failed"};
        for (size_t g = 0; g < ns; g++) {
            const page *p = r->e.idx->pages[r->e.report_sections[g]];
            lua_createtable(L, 0, 8);
            S_setstr(L, "title", p->title);
            char *u = S_full_url(r, p->url);
            S_setstr(L, "page_url", u);
            free(u);
            char *path = S_report_path(&r->e, g);
            u = S_full_url(r, path);
            S_setstr(L, "url", u);
            free(u);
            free(path);
            for (size_t k = 0; k < 5; k++) {
                lua_pushinteger(L, (lua_Integer)count[5 * g + k]);
                lua_setfield(L, -2, keys[k]);
            }
            lua_rawseti(L, -2, (lua_Integer)g + 1);
        }
        free(count);
    }
    lua_setfield(L, -2, "sections");
}

static void S_push_sections(renderer *r)
{
    lua_State *L = sandbox_lua(r->sb);
    lua_newtable(L);
    lua_Integer n = 0;
    const content_index *idx = r->e.idx;
    for (size_t i = 0; i < idx->npages; i++) {
        const page *p = idx->pages[i];
        if (p->kind != PAGE_SECTION)
            continue;
        S_push_page_brief(r, i);
        size_t nc;
        size_t *kids = content_children(idx, p, &nc);
        S_push_page_list(r, kids, nc);
        free(kids);
        lua_setfield(L, -2, "pages");
        lua_rawseti(L, -2, ++n);
    }
}

static void S_push_tags(renderer *r)
{
    lua_State *L = sandbox_lua(r->sb);
    const content_index *idx = r->e.idx;
    lua_createtable(L, (int)idx->ntags, 0);
    for (size_t t = 0; t < idx->ntags; t++) {
        lua_createtable(L, 0, 4);
        S_setstr(L, "name", idx->tags[t].name);
        S_setstr(L, "slug", idx->tags[t].slug);
        char *u = S_full_url(r, idx->tags[t].url);
        S_setstr(L, "url", u);
        free(u);
        lua_pushinteger(L, (lua_Integer)idx->tags[t].npages);
        lua_setfield(L, -2, "count");
        S_push_page_list(r, idx->tags[t].pages, idx->tags[t].npages);
        lua_setfield(L, -2, "pages");
        lua_rawseti(L, -2, (lua_Integer)t + 1);
    }
}

static void S_push_sources(renderer *r)
{
    lua_State *L = sandbox_lua(r->sb);
    lua_newtable(L);
    const yv *doc = r->e.src->doc;
    if (!doc || doc->type != YV_MAP)
        return;
    /* sorted by key for a stable page */
    size_t n = doc->n;
    size_t *order = xmalloc((n + 1) * sizeof *order);
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && strcmp(doc->keys[order[j - 1]], doc->keys[order[j]]) > 0; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        const yv *e = doc->items[order[i]];
        if (luadata_push(L, e) != 0)
            lua_error(L);
        if (!lua_istable(L, -1)) {
            lua_pop(L, 1);
            continue;
        }
        S_setstr(L, "key", doc->keys[order[i]]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    free(order);
}

/* __index of `site`: the big lists are built on first use only. */
static int S_site_index(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    const char *k = lua_tostring(L, 2);
    if (!k)
        return 0;
    if (strcmp(k, "pages") == 0) {
        size_t n;
        size_t *v = content_by_date(r->e.idx, &n);
        S_push_page_list(r, v, n);
        free(v);
    } else if (strcmp(k, "sections") == 0) {
        S_push_sections(r);
    } else if (strcmp(k, "tags") == 0) {
        S_push_tags(r);
    } else if (strcmp(k, "figures") == 0) {
        S_push_site_figures(r);
    } else if (strcmp(k, "sources") == 0) {
        S_push_sources(r);
    } else {
        return 0;
    }
    lua_pushvalue(L, 2);
    lua_pushvalue(L, -2);
    lua_rawset(L, 1);
    return 1;
}

static void S_push_site(renderer *r)
{
    lua_State *L = sandbox_lua(r->sb);
    const config *c = r->e.cfg;
    lua_createtable(L, 0, 12);
    S_setstr(L, "title", c->title);
    S_setstr(L, "base_url", c->base_url);
    S_setstr(L, "base_path", c->base_path);
    S_setstr(L, "language", c->language);
    S_setstr(L, "description", c->description);
    S_setstr(L, "author", c->author);
    S_setstr(L, "version", KVSITE_VERSION);
    if (c->params) {
        if (luadata_push(L, c->params) != 0)
            lua_error(L);
    } else {
        lua_newtable(L);
    }
    lua_setfield(L, -2, "params");
    lua_createtable(L, 0, 1);
    lua_pushlightuserdata(L, r);
    lua_pushcclosure(L, S_site_index, 1);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
}

/* ---------- helpers for templates ---------- */

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

/* date(d, fmt): fmt with %Y %m %d %H %M %S (and %%), from "YYYY-MM-DD[ HH:MM[:SS]]". */
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
        const char *k = strchr(keys, *f);
        if (*f == '%')
            buf_putc(&b, '%');
        else if (k)
            buf_puts(&b, part[k - keys]);
        else {
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

static void S_set_helpers(renderer *r)
{
    lua_State *L = sandbox_lua(r->sb);
    sandbox_push_env(r->sb);
    lua_pushlightuserdata(L, r);
    lua_pushcclosure(L, S_markdown_inline, 1);
    lua_setfield(L, -2, "markdown_inline");
    lua_pushlightuserdata(L, r);
    lua_pushcclosure(L, S_url_for, 1);
    lua_setfield(L, -2, "url_for");
    lua_pushcfunction(L, S_format_number);
    lua_setfield(L, -2, "format_number");
    lua_pushcfunction(L, S_date);
    lua_setfield(L, -2, "date");
    lua_pushcfunction(L, S_escape);
    lua_setfield(L, -2, "escape");
    lua_pushcfunction(L, url_lua_safe_url);
    lua_setfield(L, -2, "safe_url");
    lua_getfield(L, -1, "string");
    lua_getfield(L, -1, "format");
    lua_setfield(L, -3, "fmt");
    lua_pop(L, 1);
    S_push_site(r);
    lua_setfield(L, -2, "site");
    lua_pop(L, 1);
}

/* ---------- renderer ---------- */

renderer *render_new(const render_env *e)
{
    renderer *r = xcalloc(1, sizeof *r);
    r->e = *e;
    const config *c = e->cfg;
    sandbox_opts so = {e->root, c->limits.lua_instructions, c->limits.lua_memory,
                       c->limits.data_bytes, c->limits.depth};
    r->sb = sandbox_new(&so);
    if (!r->sb) {
        free(r);
        return NULL;
    }
    r->tpl = tpl_new(r->sb, e->root, c->limits.template_bytes, c->limits.output_bytes);
    tpl_set_field_reader(r->tpl, S_read_field, r);
    tpl_set_list_reader(r->tpl, &S_LIST_READER, r);
    md_opts mo = {c, e->idx, e->src, r->sb, c->unsafe_html, true, true,
                  (e->strict || c->unverified_error) ? DIAG_ERROR : DIAG_WARNING};
    r->md = md_new(&mo);
    r->read_mark = xcalloc(e->nrecords + 1, 1);
    r->phase = e->job_phases;
    if (!r->phase)
        r->phase = r->own_phase = render_job_phases(e);
    buf_init(&r->scratch);
    strmap_init(&r->tag_urls);
    return r;
}

void render_free(renderer *r)
{
    if (!r)
        return;
    md_free(r->md);
    tpl_free(r->tpl);
    sandbox_free(r->sb);
    free(r->read_mark);
    free(r->own_phase);
    free(r->reads);
    free(r->fig_url);
    free(r->groups);
    free(r->report_url);
    record_figs_buf_free(&r->figs_buf);
    buf_free(&r->scratch);
    for (size_t i = 0; i < r->tag_urls.cap; i++)
        if (r->tag_urls.keys[i])
            free(r->tag_urls.vals[i]);
    strmap_free(&r->tag_urls);
    free(r);
}

static const char *S_job_template(const render_env *e, size_t job)
{
    size_t i;
    switch (render_job_kind(e, job, &i)) {
    case JOB_TAGS: return "templates/tags.html";
    case JOB_TAG: return "templates/tag.html";
    case JOB_SOURCES: return "templates/sources.html";
    case JOB_CHECKS: return "templates/checks.html";
    case JOB_CHECKS_SECTION: return "templates/" RENDER_REPORT_SECTION_TEMPLATE;
    case JOB_404: return "templates/404.html";
    default: return "templates/page.html";
    }
}

/* Template lookup: front matter template:, then the section's (page_template:
 * in its _index.md, or templates/<section>/page.html), then page.html. */
static char *S_pick_template(renderer *r, const page *p, diag_list *dl)
{
    if (p->template_name) {
        if (!tpl_exists(r->tpl, p->template_name)) {
            const yv *at = yv_get(p->front, "template");
            diag_error(dl, p->src, at ? at->line : 0, at ? at->col : 0,
                       "template \"%s\" not found in templates/", p->template_name);
            return NULL;
        }
        return xstrdup(p->template_name);
    }
    if (p->kind == PAGE_HOME)
        return xstrdup("home.html");
    char *top = xstrdup(p->section);
    char *slash = strchr(top, '/');
    if (slash)
        *slash = '\0';
    char *name = NULL;
    if (p->kind == PAGE_SECTION) {
        name = xasprintf("%s/section.html", top);
        if (!top[0] || !tpl_exists(r->tpl, name)) {
            free(name);
            name = xstrdup("section.html");
        }
    } else {
        const yv *pt = p->parent && p->parent->front ? yv_get(p->parent->front, "page_template")
                                                      : NULL;
        if (yv_string(pt) && tpl_exists(r->tpl, yv_string(pt))) {
            name = xstrdup(yv_string(pt));
        } else {
            name = xasprintf("%s/page.html", top);
            if (!top[0] || !tpl_exists(r->tpl, name)) {
                free(name);
                name = xstrdup("page.html");
            }
        }
    }
    free(top);
    return name;
}

/* page.toc: a view too (a page may have thousands of headings); valid while
 * the page renders, which is as long as its environment lives. */
typedef struct {
    const md_heading *toc;
    size_t n;
} toc_view;

static const char *const S_TOC_VIEW = "kvsite.toc";

static int S_toc_index(lua_State *L)
{
    toc_view *v = luaL_checkudata(L, 1, S_TOC_VIEW);
    lua_Integer i = lua_tointeger(L, 2);
    if (!lua_isinteger(L, 2) || i < 1 || (size_t)i > v->n)
        return 0;
    const md_heading *h = &v->toc[i - 1];
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, h->level);
    lua_setfield(L, -2, "level");
    S_setstr(L, "id", h->id);
    S_setstr(L, "text", h->text);
    return 1;
}

static int S_toc_len(lua_State *L)
{
    toc_view *v = luaL_checkudata(L, 1, S_TOC_VIEW);
    lua_pushinteger(L, (lua_Integer)v->n);
    return 1;
}

/* page.figures: a view of the page's own figures, like page.toc. */
typedef struct {
    const fig_ctx *figs;
    const char *src;
} page_figures_view;

static const char *const S_PAGE_FIGURES_VIEW = "kvsite.page_figures";

static int S_page_figures_index(lua_State *L)
{
    page_figures_view *v = luaL_checkudata(L, 1, S_PAGE_FIGURES_VIEW);
    lua_Integer i = lua_tointeger(L, 2);
    if (!lua_isinteger(L, 2) || i < 1 || (size_t)i > v->figs->nfigs)
        return 0;
    S_push_figure(L, &v->figs->figs[i - 1], v->src, NULL);
    return 1;
}

static int S_page_figures_len(lua_State *L)
{
    page_figures_view *v = luaL_checkudata(L, 1, S_PAGE_FIGURES_VIEW);
    lua_pushinteger(L, (lua_Integer)v->figs->nfigs);
    return 1;
}

static void S_push_page_figures(lua_State *L, const fig_ctx *figs, const char *src)
{
    page_figures_view *v = lua_newuserdatauv(L, sizeof *v, 0);
    v->figs = figs;
    v->src = src;
    S_view_meta(L, S_PAGE_FIGURES_VIEW, S_page_figures_index, S_page_figures_len);
}

static void S_push_toc(lua_State *L, const md_result *res)
{
    toc_view *v = lua_newuserdatauv(L, sizeof *v, 0);
    v->toc = res->toc;
    v->n = res->ntoc;
    S_view_meta(L, S_TOC_VIEW, S_toc_index, S_toc_len);
}

static int S_write(renderer *r, const char *out_rel, const buf *html, page_record *rec,
                   const char *file)
{
    if (!r->e.out_dir) { /* kvsite check writes nothing */
        rec->out_bytes += html->len ? html->len : 1;
        return 0;
    }
    const char *data = html->ptr ? html->ptr : "";
    if (r->e.same_dir) {
        char *published = fs_join(r->e.same_dir, out_rel);
        bool same = fs_same(published, data, html->len);
        free(published);
        if (same) {
            rec->out_bytes += html->len ? html->len : 1;
            return 0;
        }
    }
    char *path = fs_join(r->e.out_dir, out_rel);
    int rc = 0;
    struct stat st;
    /* unchanged output is left alone: no new inode, no write */
    if (fs_sync_file_stat(path, data, html->len, &st) != 0) {
        diag_error(&rec->diags, file, 0, 0, "cannot write %s: %s", out_rel, strerror(errno));
        rc = -1;
    } else {
        /* the file's stamp as it is left, for the parent's stamp of the
         * output (a second file would make it ambiguous: none then) */
        rec->out_stamp = rec->out_bytes ? 0 : stamp_of_stat(STAMP_SEED, out_rel, &st);
        rec->out_bytes += html->len ? html->len : 1;
    }
    free(path);
    return rc;
}


static char *S_anchor_prefix(const char *url)
{
    /* "/articles/kv-check/" -> "articles-kv-check"; "/" -> "home" */
    buf b = BUF_INIT;
    for (const char *p = url; *p; p++) {
        if (*p == '/') {
            if (b.len && p[1])
                buf_putc(&b, '-');
        } else {
            buf_putc(&b, *p);
        }
    }
    if (!b.len)
        buf_puts(&b, "home");
    return buf_detach(&b);
}

/* Links the template wrote (navigation, lists): every internal href and src
 * of the output that the Markdown did not already account for is checked
 * like the page's own links, and blamed on the template. */
static void S_scan_links(renderer *r, const buf *html, const char *page_url, const char *tfile,
                         page_record *rec)
{
    const char *base = r->e.cfg->base_path;
    size_t bn = strlen(base);
    strmap seen, ids;
    strmap_init(&seen);
    strmap_init(&ids);
    size_t ids_cap = rec->nids;
    for (size_t i = 0; i < rec->nlinks; i++)
        strmap_put(&seen, rec->links[i].target, (void *)1);
    /* one scratch buffer for every value: a page has hundreds of links */
    buf u = BUF_INIT;
    /* figures link to their report row or source: checked as figures. The
     * rows are "<report URL>#<prefix>-<n>", told apart by their shape when
     * nothing in them is escaped in HTML (a page has tens of them). */
    const fig_ctx *fc = r->cur_figs;
    char *fig_href = NULL;
    size_t fig_href_n = 0, nfig = fc ? fc->anchor_base + fc->nfigs : 0;
    if (fc && r->report_url && !strpbrk(r->report_url, "&<>\"'") &&
        !strpbrk(fc->anchor_prefix, "&<>\"'")) {
        fig_href = xasprintf("%s#%s-", r->report_url, fc->anchor_prefix);
        fig_href_n = strlen(fig_href);
    }
    for (size_t i = 0; fc && i < fc->nfigs; i++) {
        const figure *f = &fc->figs[i];
        if (fig_href && f->tier != FIG_CITED)
            continue;
        buf_clear(&u);
        if (f->tier == FIG_CITED) {
            buf_puts(&u, "/sources/#");
            buf_puts(&u, f->expr);
        } else {
            /* the report page's site path: its URL without the base path */
            buf_puts(&u, r->report_url ? r->report_url + strlen(base) : "/checks/");
            buf_putc(&u, '#');
            buf_puts(&u, f->anchor);
        }
        strmap_put(&seen, buf_cstr(&u), (void *)1);
    }
    const char *p = buf_cstr(html), *end = p + html->len;
    /* memchr, not strstr: the scan must stay linear in the page's size
     * (sanitizer interceptors measure a strstr haystack on every call) */
    while (p < end && (p = memchr(p, '=', (size_t)(end - p))) && p + 1 < end) {
        if (p[1] != '"') {
            p++;
            continue;
        }
        bool attr = (p >= buf_cstr(html) + 4 && !memcmp(p - 4, "href", 4)) ||
                    (p >= buf_cstr(html) + 3 && !memcmp(p - 3, "src", 3));
        bool id = p >= buf_cstr(html) + 3 && !memcmp(p - 3, " id", 3);
        p += 2;
        if (!attr && !id)
            continue;
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q)
            break;
        if (id) {
            /* ids a template writes (map groups, report rows) are link targets too */
            buf_clear(&u);
            buf_put(&u, p, (size_t)(q - p));
            if (!strmap_get(&ids, buf_cstr(&u))) {
                strmap_put(&ids, buf_cstr(&u), (void *)1);
                if (rec->nids == ids_cap)
                    rec->ids = xrealloc(rec->ids, (ids_cap = ids_cap ? ids_cap * 2 : 64) *
                                                      sizeof *rec->ids);
                rec->ids[rec->nids++] = xstrdup(buf_cstr(&u));
            }
            p = q + 1;
            continue;
        }
        /* the value with the entities templates escape in URLs undone */
        const char *v = p;
        p = q + 1;
        size_t vn = (size_t)(q - v);
        if (fig_href && vn > fig_href_n && !memcmp(v, fig_href, fig_href_n)) {
            size_t num = 0, k = fig_href_n;
            while (k < vn && v[k] >= '0' && v[k] <= '9' && num <= nfig)
                num = num * 10 + (size_t)(v[k++] - '0');
            if (k == vn && num >= 1 && num <= nfig)
                continue; /* one of this page's figures */
        }
        const char *url = v;
        size_t un = vn;
        if (memchr(v, '&', vn)) {
            buf_clear(&u);
            for (const char *c = v; c < q; c++) {
                if ((size_t)(q - c) >= 5 && !memcmp(c, "&amp;", 5)) {
                    buf_putc(&u, '&');
                    c += 4;
                } else {
                    buf_putc(&u, *c);
                }
            }
            url = buf_cstr(&u);
            un = u.len;
        }
        buf t = BUF_INIT;
        if (un > 0 && url[0] == '#') {
            buf_puts(&t, page_url);
            buf_put(&t, url, un);
        } else if (un > 0 && url[0] == '/' && !(un > 1 && url[1] == '/')) {
            if (bn == 0 || (un >= bn && !memcmp(url, base, bn) && (un == bn || url[bn] == '/'))) {
                if (un == bn)
                    buf_putc(&t, '/');
                else
                    buf_put(&t, url + bn, un - bn);
            }
        }
        if (t.len == 0) {
            buf_free(&t);
            continue;
        }
        char *target = buf_detach(&t);
        if (strchr(target, '%')) {
            char *dec = md_percent_decode(target, strlen(target));
            free(target);
            target = dec;
        }
        char *q2 = strchr(target, '?');
        if (q2) {
            char *frag = strchr(q2, '#');
            memmove(q2, frag ? frag : "", strlen(frag ? frag : "") + 1);
        }
        if (!strmap_get(&seen, target)) {
            strmap_put(&seen, target, (void *)1);
            rec->links = xrealloc(rec->links, (rec->nlinks + 1) * sizeof *rec->links);
            rec->links[rec->nlinks++] = (md_link){target, 0, 0, xstrdup(tfile)};
            target = NULL;
        }
        free(target);
    }
    buf_free(&u);
    free(fig_href);
    strmap_free(&seen);
    strmap_free(&ids);
}

/* Renders the template `tname` for the current environment into out_rel. */
static void S_finish(renderer *r, const char *tname, const char *out_rel, page_record *rec,
                     const char *file)
{
    if (!tpl_exists(r->tpl, tname)) {
        diag_error(&rec->diags, file, 0, 0, "template templates/%s not found", tname);
        return;
    }
    buf html = BUF_INIT;
    if (tpl_render(r->tpl, tname, &html, &rec->diags) == 0) {
        char *tfile = xasprintf("templates/%s", tname);
        S_scan_links(r, &html, rec->url, tfile, rec);
        free(tfile);
        S_write(r, out_rel, &html, rec, file);
    }
    buf_free(&html);
}

static void S_collect_inputs(renderer *r, page_record *rec)
{
    buf b = BUF_INIT;
    const buf *a = sandbox_page_inputs(r->sb), *t = tpl_inputs(r->tpl);
    buf_put(&b, buf_cstr(a), a->len);
    buf_put(&b, buf_cstr(t), t->len);
    rec->inputs_len = b.len;
    rec->inputs = buf_detach(&b);
}

/* The variables a page's template sees, built in protected mode: a page near
 * its memory cap must fail with an error, not abort the worker. */
typedef struct {
    renderer *r;
    size_t job;
    const page *p;
    const md_result *res;
    const size_t *kids;
    size_t nkids;
} page_env_args;

static int S_page_env(lua_State *L)
{
    const page_env_args *a = lua_touserdata(L, 1);
    renderer *r = a->r;
    S_set_helpers(r);
    sandbox_push_env(r->sb);
    S_push_page_brief(r, a->job);
    lua_pushlstring(L, buf_cstr(&a->res->html), a->res->html.len);
    lua_setfield(L, -2, "content");
    S_push_toc(L, a->res);
    lua_setfield(L, -2, "toc");
    S_push_page_figures(L, &a->res->figs, a->p->src);
    lua_setfield(L, -2, "figures");
    if (a->p->kind != PAGE_REGULAR) {
        S_push_page_list(r, a->kids, a->nkids);
        lua_setfield(L, -2, "pages");
    }
    lua_setfield(L, -2, "page");
    lua_pop(L, 1);
    return 0;
}

static void S_render_page(renderer *r, size_t job, const page *p, page_record *rec)
{
    lua_State *L = sandbox_lua(r->sb);
    const char *file = p->src ? p->src : "content";
    rec->url = xstrdup(p->url);
    rec->src = xstrdup(p->src ? p->src : "");
    md_result res;
    md_result_init(&res);
    char *prefix = S_anchor_prefix(p->url);
    res.figs.anchor_prefix = prefix;
    free(r->report_url);
    char *report_path = S_report_path(&r->e, r->e.nreport_sections ? S_groups(r)[job] : GROUP_ALL);
    r->report_url = S_full_url(r, report_path);
    free(report_path);
    res.figs.report_url = r->report_url;
    sandbox_page_begin(r->sb, file, &rec->diags);
    r->cur_page = p;
    r->cur_file = file;
    r->cur_rec = rec;
    r->cur_figs = &res.figs;
    if (p->src) {
        char *path = fs_join(r->e.root, p->src);
        buf text = BUF_INIT;
        int rc = fs_read_file(path, r->e.cfg->limits.page_bytes, &text);
        free(path);
        if (rc != FS_OK) {
            diag_error(&rec->diags, file, 0, 0, "cannot read: %s",
                       fs_strerror(rc, r->e.cfg->limits.page_bytes));
        } else if (p->body_off <= text.len) {
            md_render(r->md, p, file, text.ptr + p->body_off, text.len - p->body_off,
                      p->body_line, 1, false, &res, &rec->diags);
        }
        buf_free(&text);
    }
    rec->links = res.links;
    rec->nlinks = res.nlinks;
    res.links = NULL;
    res.nlinks = 0;
    char *tname = sandbox_exhausted(r->sb) ? NULL : S_pick_template(r, p, &rec->diags);
    if (tname) {
        size_t nkids = 0;
        size_t *kids = p->kind != PAGE_REGULAR ? content_children(r->e.idx, p, &nkids) : NULL;
        page_env_args args = {r, job, p, &res, kids, nkids};
        lua_pushcfunction(L, S_page_env);
        lua_pushlightuserdata(L, &args);
        sandbox_error err;
        if (sandbox_pcall(r->sb, 1, NULL, &err) != 0) {
            diag_error(&rec->diags, file, 0, 0, "preparing the page for its template: %s",
                       err.msg);
            sandbox_error_free(&err);
        } else {
            S_finish(r, tname, p->out, rec, file);
        }
        free(kids);
        free(tname);
    }
    rec->summary = p->summary ? fig_plain_text(p->summary)
                   : res.summary ? xstrdup(res.summary) : xstrdup("");
    rec->figs = res.figs.figs;
    rec->nfigs = res.figs.nfigs;
    res.figs.figs = NULL;
    res.figs.nfigs = 0;
    const char *swallowed = sandbox_swallowed_limit(r->sb);
    if (swallowed)
        diag_error(&rec->diags, file, 0, 0, "%s", swallowed);
    S_collect_inputs(r, rec);
    r->cur_page = NULL;
    r->cur_file = NULL;
    r->cur_rec = NULL;
    r->cur_figs = NULL;
    sandbox_page_end(r->sb);
    md_result_free(&res);
    free(prefix);
}

typedef struct {
    renderer *r;
    job_kind kind;
    size_t index;
    const char *title, *path, *url;
} generated_env_args;

/* The variables of a generated page (tags, sources, report, 404), protected. */
static int S_generated_env(lua_State *L)
{
    const generated_env_args *a = lua_touserdata(L, 1);
    renderer *r = a->r;
    job_kind kind = a->kind;
    S_set_helpers(r);
    sandbox_push_env(r->sb);
    lua_createtable(L, 0, 8);
    S_setstr(L, "title", a->title);
    bool report = kind == JOB_CHECKS || kind == JOB_CHECKS_SECTION;
    S_setstr(L, "kind", kind == JOB_TAGS ? "tags" : kind == JOB_TAG ? "tag"
                         : kind == JOB_SOURCES ? "sources" : report ? "checks" : "404");
    S_setstr(L, "url", a->url);
    S_setstr(L, "path", a->path);
    lua_pushliteral(L, "");
    lua_setfield(L, -2, "content");
    lua_newtable(L);
    lua_setfield(L, -2, "toc");
    lua_newtable(L);
    lua_setfield(L, -2, "params");
    if (kind == JOB_TAG) {
        const tag *t = &r->e.idx->tags[a->index];
        S_push_page_list(r, t->pages, t->npages);
        lua_setfield(L, -2, "pages");
        S_setstr(L, "tag", t->name);
    }
    lua_setfield(L, -2, "page");
    if (report) {
        S_push_report(r, kind == JOB_CHECKS_SECTION ? a->index
                         : r->e.nreport_sections ? GROUP_ROOT : GROUP_ALL);
        lua_setfield(L, -2, "report");
    }
    lua_pop(L, 1);
    return 0;
}

static void S_render_generated(renderer *r, job_kind kind, size_t index, page_record *rec)
{
    lua_State *L = sandbox_lua(r->sb);
    const char *tname = NULL, *title = NULL, *url = NULL;
    char *made_url = NULL;
    switch (kind) {
    case JOB_TAGS:
        if (r->e.idx->ntags == 0)
            return;
        tname = "tags.html";
        title = "Tags";
        url = "/tags/";
        break;
    case JOB_TAG:
        tname = "tag.html";
        title = r->e.idx->tags[index].name;
        url = r->e.idx->tags[index].url;
        break;
    case JOB_SOURCES:
        if (!sources_present(r->e.src))
            return;
        tname = "sources.html";
        title = "Sources";
        url = "/sources/";
        break;
    case JOB_CHECKS:
        tname = "checks.html";
        title = "Checks";
        url = "/checks/";
        break;
    case JOB_CHECKS_SECTION:
        tname = RENDER_REPORT_SECTION_TEMPLATE;
        title = r->e.idx->pages[r->e.report_sections[index]]->title;
        url = made_url = S_report_path(&r->e, index);
        break;
    case JOB_404:
        if (!tpl_exists(r->tpl, "404.html"))
            return;
        tname = "404.html";
        title = "Page not found";
        url = "/404.html";
        break;
    default: return;
    }
    char *tpath = xasprintf("templates/%s", tname);
    rec->url = xstrdup(url);
    rec->src = xstrdup("");
    rec->summary = xstrdup("");
    sandbox_page_begin(r->sb, tpath, &rec->diags);
    r->cur_file = tpath;
    r->cur_rec = rec;
    char *full_url = S_full_url(r, url);
    generated_env_args args = {r, kind, index, title, url, full_url};
    lua_pushcfunction(L, S_generated_env);
    lua_pushlightuserdata(L, &args);
    sandbox_error err;
    bool ready = sandbox_pcall(r->sb, 1, NULL, &err) == 0;
    if (!ready) {
        diag_error(&rec->diags, tpath, 0, 0, "preparing the page for its template: %s", err.msg);
        sandbox_error_free(&err);
    }
    free(full_url);
    char *out = kind == JOB_404 ? xstrdup("404.html") : xasprintf("%sindex.html", url + 1);
    if (ready)
        S_finish(r, tname, out, rec, tpath);
    free(out);
    /* the ids a link may name (report rows, sources) were read from the output */
    const char *swallowed = sandbox_swallowed_limit(r->sb);
    if (swallowed)
        diag_error(&rec->diags, tpath, 0, 0, "%s", swallowed);
    S_collect_inputs(r, rec);
    r->cur_file = NULL;
    r->cur_rec = NULL;
    sandbox_page_end(r->sb);
    free(tpath);
    free(made_url);
}

/* checks.json: every figure, in job order. It can be tens of megabytes, so
 * it goes out in chunks, and the old file stays where its bytes are the same. */
static void S_render_checks_json(renderer *r, page_record *rec)
{
    const char *rel = "checks.json";
    rec->url = xstrdup("/checks.json");
    fs_stream w;
    char *path = r->e.out_dir ? fs_join(r->e.out_dir, rel) : NULL;
    char *old = path && r->e.same_dir ? fs_join(r->e.same_dir, rel) : NULL;
    if (path)
        fs_stream_open(&w, path, old);
    report_totals t = {0, 0, {0, 0, 0}};
    buf b = BUF_INIT, head = BUF_INIT;
    uint64_t bytes = 0;
    report_json_head(&b);
    for (size_t j = 0; j < r->e.nrecords; j++) {
        const page_record *pr = S_record(r, j);
        if (!pr || !pr->nfigs)
            continue;
        const figure *figs = record_figures(pr, r->e.figs, &r->figs_buf);
        if (!figs) {
            diag_error(&rec->diags, NULL, 0, 0, "cannot read the figures of %s: %s", pr->src,
                       strerror(errno));
            continue;
        }
        r->figs_now = NULL; /* the buffer is reused here */
        char *url = S_full_url(r, pr->url);
        report_json_page(&head, url, pr->src);
        for (size_t k = 0; k < pr->nfigs; k++) {
            report_json_figure(&b, &t, &head, &figs[k]);
            if (b.len >= ((size_t)1 << 20)) {
                if (path)
                    fs_stream_write(&w, b.ptr, b.len);
                bytes += b.len;
                buf_clear(&b);
            }
        }
        free(url);
    }
    report_json_tail(&b, &t);
    bytes += b.len;
    if (path) {
        fs_stream_write(&w, b.ptr, b.len);
        struct stat st;
        bool written;
        if (fs_stream_close(&w, &st, &written) != 0)
            diag_error(&rec->diags, NULL, 0, 0, "cannot write %s: %s", rel, strerror(errno));
        else if (written || !old)
            rec->out_stamp = stamp_of_stat(STAMP_SEED, rel, &st);
    }
    rec->out_bytes = bytes;
    buf_free(&b);
    buf_free(&head);
    free(path);
    free(old);
}

void render_job(renderer *r, size_t job, page_record *rec)
{
    size_t index;
    job_kind kind = render_job_kind(&r->e, job, &index);
    rec->job = (uint32_t)job;
    r->cur_phase = render_job_phase(&r->e, job);
    for (size_t i = 0; i < r->nreads; i++)
        r->read_mark[r->reads[i]] = 0;
    r->nreads = 0;
    if (kind == JOB_PAGE) {
        S_render_page(r, job, r->e.idx->pages[index], rec);
    } else if (kind == JOB_CHECKS_JSON) {
        S_render_checks_json(r, rec);
    } else {
        S_render_generated(r, kind, index, rec);
    }
    if (!rec->url)
        rec->url = xstrdup("");
    if (!rec->src)
        rec->src = xstrdup("");
    if (!rec->summary)
        rec->summary = xstrdup("");
    if (r->nreads) {
        rec->reads = xmalloc(r->nreads * sizeof *rec->reads);
        memcpy(rec->reads, r->reads, r->nreads * sizeof *rec->reads);
        rec->nreads = r->nreads;
    }
    rec->done = 1;
}

int render_fragment(const char *text, size_t len, bool unsafe, buf *out, diag_list *dl)
{
    sources none;
    memset(&none, 0, sizeof none);
    /* --unsafe shows raw HTML as CommonMark defines it, without GitHub's
     * tagfilter: the spec's examples pass as they do with the library */
    md_opts mo = {NULL, NULL, &none, NULL, unsafe, !unsafe, true, DIAG_WARNING};
    md_ctx *m = md_new(&mo);
    md_result res;
    md_result_init(&res);
    int rc = md_render(m, NULL, "<stdin>", text, len, 1, 1, false, &res, dl);
    buf_put(out, buf_cstr(&res.html), res.html.len);
    md_result_free(&res);
    md_free(m);
    return rc;
}
