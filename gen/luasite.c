#include "luasite.h"

#include <lauxlib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "luadata.h"
#include "luaview.h"
#include "paginate.h"
#include "render_state.h"
#include "report.h"

/* ---------- the report ---------- */

static void S_set_part_url(renderer *r, const char *k, const char *page_path, size_t part)
{
    char *path = paginate_part_path(page_path, part);
    char *u = render_full_url(r, path);
    render_setstr(sandbox_lua(r->sb), k, u);
    free(u);
    free(path);
}

/* report.part: which part of its report page this is (paginate.h), as a
 * paginator of the parts: {number, total_pages, first, last, prev, next
 * (URLs), rows (figures of each page on a part), from, to (their places on
 * their pages, 1-based)}. */
static void S_push_part(renderer *r, size_t group, size_t number, size_t part)
{
    lua_State *L = sandbox_lua(r->sb);
    const paginate_plan_t *pl = r->e.pages_plan;
    size_t slot = paginate_slot(pl, group), rows = paginate_rows_of(pl, slot, number);
    size_t count = paginate_parts_of(pl, slot, number);
    char *first = report_path(r->e.idx, r->e.report_sections, group);
    char *page_path = paginate_path(first, number);
    lua_createtable(L, 0, 10);
    lua_pushinteger(L, (lua_Integer)part + 1);
    lua_setfield(L, -2, "number");
    lua_pushinteger(L, (lua_Integer)count);
    lua_setfield(L, -2, "total_pages");
    lua_pushinteger(L, (lua_Integer)rows);
    lua_setfield(L, -2, "rows");
    lua_pushinteger(L, (lua_Integer)(part * rows + 1));
    lua_setfield(L, -2, "from");
    lua_pushinteger(L, (lua_Integer)((part + 1) * rows));
    lua_setfield(L, -2, "to");
    S_set_part_url(r, "first", page_path, 0);
    S_set_part_url(r, "last", page_path, count - 1);
    if (part > 0)
        S_set_part_url(r, "prev", page_path, part - 1);
    if (part + 1 < count)
        S_set_part_url(r, "next", page_path, part + 1);
    free(page_path);
    free(first);
}

/* `report` of a report page: its figures, its section (a page brief; none
 * for the index), the part of its report page it is and, on the index, one
 * entry per report section page. */
void lv_push_report(renderer *r, size_t group, size_t number, size_t part)
{
    lua_State *L = sandbox_lua(r->sb);
    lua_createtable(L, 0, 4);
    lv_push_figures(r, group, r->e.pages_plan ? number : 0, r->e.pages_plan ? part : SIZE_MAX);
    lua_setfield(L, -2, "figures");
    if (r->e.pages_plan) {
        S_push_part(r, group, number, part);
        lua_setfield(L, -2, "part");
    }
    if (group != REPORT_GROUP_ALL && group != REPORT_GROUP_ROOT) {
        lv_push_page_brief(r, r->e.report_sections[group]);
        lua_setfield(L, -2, "section");
    }
    size_t ns = group == REPORT_GROUP_ROOT ? r->e.nreport_sections : 0;
    lua_createtable(L, (int)ns, 0);
    if (ns) {
        /* totals per section, from every record */
        enum { NK = FIG_TIERS + 2 }; /* total, each tier, failed */
        size_t *count = xcalloc(NK * ns + 1, sizeof *count);
        const size_t *groups = render_groups(r);
        for (size_t j = 0; j < r->e.idx->npages; j++) {
            size_t g = groups[j];
            const page_record *rec = g == REPORT_GROUP_ROOT ? NULL : render_record(r, j);
            if (!rec || !rec->nfigs)
                continue;
            uint32_t c[FIG_TIERS + 1];
            record_fig_counts(rec, c);
            count[NK * g] += rec->nfigs;
            for (int k = 0; k < FIG_TIERS + 1; k++)
                count[NK * g + 1 + k] += c[k];
        }
        static const char *const keys[NK] = {"total", "computed", "measured", "cited", "refuted",
                                             "failed"};
        for (size_t g = 0; g < ns; g++) {
            const page *p = r->e.idx->pages[r->e.report_sections[g]];
            lua_createtable(L, 0, 8);
            render_setstr(L, "title", p->title);
            char *u = render_full_url(r, p->url);
            render_setstr(L, "page_url", u);
            free(u);
            char *path = report_path(r->e.idx, r->e.report_sections, g);
            u = render_full_url(r, path);
            render_setstr(L, "url", u);
            free(u);
            free(path);
            for (size_t k = 0; k < NK; k++) {
                lua_pushinteger(L, (lua_Integer)count[NK * g + k]);
                lua_setfield(L, -2, keys[k]);
            }
            lua_rawseti(L, -2, (lua_Integer)g + 1);
        }
        free(count);
    }
    lua_setfield(L, -2, "sections");
}

/* ---------- paginator ---------- */

static void S_set_page_url(renderer *r, const char *k, const char *first, size_t number)
{
    lua_State *L = sandbox_lua(r->sb);
    char *path = paginate_path(first, number);
    char *u = render_full_url(r, path);
    render_setstr(L, k, u);
    free(u);
    free(path);
}

void lv_push_paginator(renderer *r, const char *first_path, size_t number, size_t nitems,
                       size_t per)
{
    lua_State *L = sandbox_lua(r->sb);
    size_t count = paginate_count(nitems, per);
    lua_createtable(L, 0, 8);
    lua_pushinteger(L, (lua_Integer)number);
    lua_setfield(L, -2, "number");
    lua_pushinteger(L, (lua_Integer)count);
    lua_setfield(L, -2, "total_pages");
    lua_pushinteger(L, (lua_Integer)per);
    lua_setfield(L, -2, "per_page");
    lua_pushinteger(L, (lua_Integer)nitems);
    lua_setfield(L, -2, "total");
    S_set_page_url(r, "first", first_path, 1);
    S_set_page_url(r, "last", first_path, count);
    if (number > 1)
        S_set_page_url(r, "prev", first_path, number - 1);
    if (number < count)
        S_set_page_url(r, "next", first_path, number + 1);
}

/* ---------- site ---------- */

/* A view of n of a site-wide list's entries from the lo-th (all of them for
 * site.sections, site.tags and site.sources, a page's for page.terms and
 * page.sources), each pushed when read by push(r, index). */
typedef struct {
    lv_head h;
    renderer *r;
    size_t lo, n;
    void (*push)(renderer *r, size_t i);
} slice_view;

static size_t S_slice_len(const void *o) { return ((const slice_view *)o)->n; }

static bool S_slice_item(lua_State *L, void *o, lua_Integer i)
{
    const slice_view *v = o;
    (void)L;
    if (i < 1 || (size_t)i > v->n)
        return false;
    v->push(v->r, v->lo + (size_t)i - 1);
    return true;
}

/* Pushes a view of entries [lo, lo + n) of a list of all entries, clamped. */
static void S_push_slice(renderer *r, const lv_kind *kind, void (*push)(renderer *, size_t),
                         size_t all, size_t lo, size_t n)
{
    slice_view *v = lv_new(sandbox_lua(r->sb), kind, sizeof *v, 0, &r->job_gen);
    v->r = r;
    v->push = push;
    v->lo = lo < all ? lo : all;
    v->n = n < all - v->lo ? n : all - v->lo;
}

/* site.tags: a view of the tags, {name, slug, url, count, pages} each; a
 * page of the tag index sees some of them. */
static void S_push_tag(renderer *r, size_t t)
{
    lua_State *L = sandbox_lua(r->sb);
    const tag *tg = &r->e.idx->tags[t];
    lua_createtable(L, 0, 5);
    render_setstr(L, "name", tg->name);
    render_setstr(L, "slug", tg->slug);
    char *u = render_full_url(r, tg->url);
    render_setstr(L, "url", u);
    free(u);
    lua_pushinteger(L, (lua_Integer)tg->npages);
    lua_setfield(L, -2, "count");
    lv_push_page_slice(r, tg->pages, tg->npages);
    lua_setfield(L, -2, "pages");
}

static const lv_kind S_TAGS_VIEW = {"kvsite.tags", "site.tags", NULL, 0, NULL, S_slice_item,
                                    S_slice_len};
static const lv_kind S_TERMS_VIEW = {"kvsite.terms", "page.terms", NULL, 0, NULL, S_slice_item,
                                     S_slice_len};

void lv_push_tag_slice(renderer *r, size_t lo, size_t n)
{
    S_push_slice(r, &S_TERMS_VIEW, S_push_tag, r->e.idx->ntags, lo, n);
}

/* site.sections: a view of the section pages, each made when read. */
static void S_push_section_at(renderer *r, size_t i)
{
    lv_push_section_obj(r, r->e.idx->sections[i]);
}

static const lv_kind S_SECTIONS_VIEW = {"kvsite.sections", "site.sections", NULL, 0, NULL,
                                        S_slice_item, S_slice_len};

/* site.sources and page.sources: views of the bibliography in the sources
 * page's order (sources.h, made once at load), each entry a table made when
 * read: its fields from sources.yaml, its key, and entry_url (where the
 * sources pages list it, with the base path). */
static void S_push_source(renderer *r, size_t i)
{
    lua_State *L = sandbox_lua(r->sb);
    const char *key = NULL;
    const yv *e = sources_at(r->e.src, i, &key);
    if (!e || luadata_push(L, e) != 0)
        lua_error(L);
    render_setstr(L, "key", key);
    char *at = sources_path(r->e.src, key);
    char *url = xasprintf("%s%s", r->e.cfg->base_path, at);
    render_setstr(L, "entry_url", url);
    free(url);
    free(at);
}

static const lv_kind S_SOURCES_VIEW = {"kvsite.sources", "site.sources", NULL, 0, NULL,
                                       S_slice_item, S_slice_len};
static const lv_kind S_PAGE_SOURCES_VIEW = {"kvsite.page_sources", "page.sources", NULL, 0,
                                            NULL, S_slice_item, S_slice_len};

void lv_push_source_slice(renderer *r, size_t lo, size_t n)
{
    S_push_slice(r, &S_PAGE_SOURCES_VIEW, S_push_source, sources_count(r->e.src), lo, n);
}

/* site.source(key): the entry of key (as site.sources has it), nil for none. */
static int S_site_source(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    const char *key = luaL_checkstring(L, 1);
    size_t at;
    if (sources_find(r->e.src, key, &at))
        S_push_source(r, at);
    else
        lua_pushnil(L);
    return 1;
}

/* site.section(name): the section page of folder name ("notes", "a/b";
 * "" for home), with its listing; nil for none. */
static int S_site_section(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    const char *name = luaL_checkstring(L, 1);
    const page *p = strmap_get(&r->e.idx->by_section, name);
    size_t i = p ? content_index_of(r->e.idx, p->url) : SIZE_MAX;
    if (i == SIZE_MAX || r->e.idx->pages[i] != p) {
        lua_pushnil(L);
        return 1;
    }
    lv_push_section_obj(r, i);
    return 1;
}

/* The page a key names: a source file ("content/a/b.md"), a site path
 * ("/a/b/") or a URL with the base path ("/docs/a/b/"); SIZE_MAX for none. */
static size_t S_page_named(renderer *r, const char *key)
{
    const content_index *idx = r->e.idx;
    size_t cl = strlen(CONTENT_DIR);
    if (!strncmp(key, CONTENT_DIR "/", cl + 1)) {
        const page *p = strmap_get(&idx->by_rel, key + cl + 1);
        return p ? content_index_of(idx, p->url) : SIZE_MAX;
    }
    size_t i = content_index_of(idx, key);
    size_t bl = strlen(r->e.cfg->base_path);
    if (i == SIZE_MAX && bl && !strncmp(key, r->e.cfg->base_path, bl))
        i = content_index_of(idx, key + bl);
    return i;
}

/* site.page(key): the page (a list item) a source path or URL names, nil for
 * none: a template that looks up a page by URL (the report's page titles)
 * does not build a table of the site. */
static int S_site_page(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    size_t i = S_page_named(r, luaL_checkstring(L, 1));
    if (i == SIZE_MAX)
        lua_pushnil(L);
    else
        lv_push_page_obj(r, i);
    return 1;
}

/* site.pages_by_tag(t): the pages of tag t (its name or slug), newest
 * first; an empty list for a tag no page has. */
static int S_site_pages_by_tag(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    const char *t = luaL_checkstring(L, 1);
    const content_index *idx = r->e.idx;
    char *slug = content_slugify(t);
    size_t lo = 0, hi = idx->ntags; /* tags are sorted by slug */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(idx->tags[mid].slug, slug) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    bool found = lo < idx->ntags && !strcmp(idx->tags[lo].slug, slug);
    free(slug);
    if (found)
        lv_push_page_slice(r, idx->tags[lo].pages, idx->tags[lo].npages);
    else
        lv_push_page_slice(r, NULL, 0);
    return 1;
}

/* site.page_with_template(name): the first page (in source order) whose
 * front matter says template: name; nil for none. Looked up once per
 * worker, then remembered. */
static int S_site_page_with_template(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    const char *name = luaL_checkstring(L, 1);
    void *got = strmap_get(&r->by_template, name);
    if (!got) {
        size_t at = SIZE_MAX;
        for (size_t i = 0; i < r->e.idx->npages && at == SIZE_MAX; i++) {
            const char *tn = r->e.idx->pages[i]->template_name;
            if (tn && !strcmp(tn, name))
                at = i;
        }
        /* stored + 2, so that none (SIZE_MAX + 2 wraps to 1) is remembered too */
        got = (void *)(uintptr_t)(at + 2);
        strmap_put(&r->by_template, name, got);
    }
    size_t i = (size_t)(uintptr_t)got - 2;
    if (i == SIZE_MAX)
        lua_pushnil(L);
    else
        lv_push_page_obj(r, i);
    return 1;
}

/* __index of site.figures made from the totals: "list" is every figure,
 * read from the records then (sources.html lists them all). */
static int S_site_figures_index(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    const char *k = lua_tostring(L, 2);
    if (!k || strcmp(k, "list") != 0)
        return 0;
    lv_push_figures(r, REPORT_GROUP_ALL, 0, SIZE_MAX);
    lua_getfield(L, -1, "list");
    lua_pushvalue(L, -1);
    lua_setfield(L, 1, "list");
    return 1;
}

/* site.figures in the last phase: the counts the parent made once for the
 * build (render_env.site_totals), so a report page that shows them does not
 * read every record; it depends on the totals instead (page_record's
 * reads_totals). */
static void S_push_site_figures(renderer *r)
{
    lua_State *L = sandbox_lua(r->sb);
    static const char *const keys[RENDER_TOTALS] = {"total", "computed", "measured", "cited",
                                                    "refuted", "failed"};
    lua_createtable(L, 0, RENDER_TOTALS + 1);
    for (size_t k = 0; k < RENDER_TOTALS; k++) {
        lua_pushinteger(L, (lua_Integer)r->e.site_totals[k]);
        lua_setfield(L, -2, keys[k]);
    }
    lua_createtable(L, 0, 2);
    lua_pushlightuserdata(L, r);
    lua_pushcclosure(L, S_site_figures_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_setmetatable(L, -2);
    render_note(r, RENDER_CAP_TOTALS);
}

/* __index of `site`: the big lists are views made on first use. */
static int S_site_index(lua_State *L)
{
    renderer *r = lua_touserdata(L, lua_upvalueindex(1));
    const char *k = lua_tostring(L, 2);
    if (!k)
        return 0;
    if (strcmp(k, "pages") == 0) {
        lv_push_page_slice(r, r->e.idx->by_date, r->e.idx->nby_date);
    } else if (strcmp(k, "sections") == 0) {
        S_push_slice(r, &S_SECTIONS_VIEW, S_push_section_at, r->e.idx->nsections, 0,
                     r->e.idx->nsections);
    } else if (strcmp(k, "menu") == 0) {
        lv_push_page_slice(r, r->e.idx->menu, r->e.idx->nmenu);
    } else if (strcmp(k, "tags") == 0) {
        S_push_slice(r, &S_TAGS_VIEW, S_push_tag, r->e.idx->ntags, 0, r->e.idx->ntags);
    } else if (strcmp(k, "figures") == 0) {
        if (r->e.site_totals)
            S_push_site_figures(r);
        else
            lv_push_figures(r, REPORT_GROUP_ALL, 0, SIZE_MAX);
    } else if (strcmp(k, "sources") == 0) {
        size_t n = sources_count(r->e.src);
        S_push_slice(r, &S_SOURCES_VIEW, S_push_source, n, 0, n);
    } else {
        return 0;
    }
    lua_pushvalue(L, 2);
    lua_pushvalue(L, -2);
    lua_rawset(L, 1);
    return 1;
}

void lv_push_site(renderer *r)
{
    lua_State *L = sandbox_lua(r->sb);
    const config *c = r->e.cfg;
    lua_createtable(L, 0, 16);
    render_setstr(L, "title", c->title);
    render_setstr(L, "base_url", c->base_url);
    render_setstr(L, "base_path", c->base_path);
    render_setstr(L, "language", c->language);
    render_setstr(L, "description", c->description);
    render_setstr(L, "author", c->author);
    render_setstr(L, "version", KVSITE_VERSION);
    lua_pushinteger(L, c->paginate);
    lua_setfield(L, -2, "paginate");
    lua_pushboolean(L, c->search); /* search.enabled: templates show the search box */
    lua_setfield(L, -2, "search");
    if (c->params) {
        if (luadata_push(L, c->params) != 0)
            lua_error(L);
    } else {
        lua_newtable(L);
    }
    lua_setfield(L, -2, "params");
    static const struct {
        const char *name;
        lua_CFunction fn;
    } helpers[] = {{"section", S_site_section},
                   {"page", S_site_page},
                   {"pages_by_tag", S_site_pages_by_tag},
                   {"page_with_template", S_site_page_with_template},
                   {"source", S_site_source}};
    for (size_t i = 0; i < sizeof helpers / sizeof *helpers; i++) {
        lua_pushlightuserdata(L, r);
        lua_pushcclosure(L, helpers[i].fn, 1);
        lua_setfield(L, -2, helpers[i].name);
    }
    lua_createtable(L, 0, 1);
    lua_pushlightuserdata(L, r);
    lua_pushcclosure(L, S_site_index, 1);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
}
