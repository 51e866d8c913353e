#include "render.h"

#include <lauxlib.h>
#include <lua.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "figmark.h"
#include "frontmatter.h"
#include "fsutil.h"
#include "helpers.h"
#include "jobs.h"
#include "links.h"
#include "luasite.h"
#include "luaview.h"
#include "markdown.h"
#include "output.h"
#include "paginate.h"
#include "paths.h"
#include "quote.h"
#include "render_state.h"
#include "report.h"
#include "sandbox.h"
#include "stamp.h"
#include "template.h"
#include "theme.h"
#include "url.h"

/* ---------- the renderer's shared state (render_state.h) ---------- */

void render_setstr(lua_State *L, const char *k, const char *v)
{
    if (!v)
        return;
    /* pushlstring: pushstring first looks the pointer up in Lua's string
     * cache and compares the string found there with strcmp, a miss in
     * the processor's cache for every page field a template reads */
    lua_pushlstring(L, v, strlen(v));
    lua_setfield(L, -2, k);
}

char *render_full_url(const renderer *r, const char *site_path)
{
    return xasprintf("%s%s", r->e.cfg->base_path, site_path);
}

/* Notes what a cached render depends on (render_state.h). */
static void S_capture(renderer *r, uint32_t what)
{
    if (r->ncap == r->capcap)
        r->cap = xrealloc(r->cap, (r->capcap = r->capcap ? 2 * r->capcap : 64) * sizeof *r->cap);
    r->cap[r->ncap++] = what;
}

void render_note(renderer *r, uint32_t what)
{
    if (what == RENDER_CAP_TOTALS)
        r->reads_totals = true;
    if (r->cap_depth)
        S_capture(r, what);
}

const page_record *render_record(renderer *r, size_t job)
{
    /* the phase first: a record of this phase may be being stored (shrec.h) */
    if (!r->e.records || job >= r->e.nrecords || r->phase[job] >= r->cur_phase ||
        !r->e.records[job].done)
        return NULL;
    if (r->cap_depth)
        S_capture(r, (uint32_t)job);
    if (!r->read_mark[job]) {
        r->read_mark[job] = 1;
        if (r->nreads == r->capreads)
            r->reads = xrealloc(r->reads, (r->capreads = r->capreads ? 2 * r->capreads : 64) *
                                              sizeof *r->reads);
        r->reads[r->nreads++] = (uint32_t)job;
    }
    return &r->e.records[job];
}

const size_t *render_groups(renderer *r)
{
    if (r->e.report_groups)
        return r->e.report_groups;
    if (!r->groups)
        r->groups = report_groups(r->e.idx, r->e.report_sections, r->e.nreport_sections);
    return r->groups;
}

size_t *render_report_sections(const content_index *idx, size_t *n)
{
    return report_sections(idx, n);
}

/* include_cached's host (template.h): a cached output depends on the
 * records its render read, noted again for every page that reuses it. It
 * is not kept when it read the page's own params or made a diagnostic. */
static tpl_cache_mark S_cache_begin(void *ctx)
{
    renderer *r = ctx;
    r->cap_depth++;
    return (tpl_cache_mark){r->ncap, r->cur_dl ? r->cur_dl->n : 0};
}

static bool S_cache_end(void *ctx, tpl_cache_mark m, buf *deps)
{
    renderer *r = ctx;
    bool keep = !r->cur_dl || r->cur_dl->n == m.diags;
    for (size_t i = m.at; i < r->ncap && keep; i++)
        keep = r->cap[i] != RENDER_CAP_OWN;
    if (keep)
        buf_put(deps, (const char *)(r->cap + m.at), (r->ncap - m.at) * sizeof *r->cap);
    if (--r->cap_depth == 0)
        r->ncap = 0;
    return keep;
}

static void S_cache_replay(void *ctx, const char *deps, size_t len)
{
    renderer *r = ctx;
    for (size_t i = 0; i + sizeof(uint32_t) <= len; i += sizeof(uint32_t)) {
        uint32_t what;
        memcpy(&what, deps + i, sizeof what);
        if (what == RENDER_CAP_TOTALS)
            render_note(r, what);
        else
            render_record(r, what);
    }
}

static const tpl_cache_host S_cache_host = {S_cache_begin, S_cache_end, S_cache_replay};

static void S_set_helpers(renderer *r)
{
    lua_State *L = sandbox_lua(r->sb);
    sandbox_push_template_env(r->sb);
    helpers_open(L, r);
    lv_push_site(r);
    lua_setfield(L, -2, "site");
    lua_pop(L, 1);
}

/* ---------- renderer ---------- */

/* The heading permalinks' accessible name in the site's language (the
 * language rule is figmark_lang's, the figures' words). */
static const char *S_anchor_label(const char *language)
{
    return figmark_lang(language) ? "本节链接" : "Link to this section";
}

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
    sandbox_set_tolerance(r->sb, c->tolerance);
    sandbox_set_library(r->sb, paths_get()->checks);
    sandbox_set_unmetered(r->sb, true); /* render_job renders a cut page again */
    r->tpl = tpl_new(r->sb, e->root, c->limits.template_bytes, c->limits.output_bytes);
    tpl_set_theme(r->tpl, theme_dir(c, e->root));
    tpl_set_field_reader(r->tpl, lv_read_field, r);
    tpl_set_list_reader(r->tpl, &lv_list_reader, r);
    tpl_set_cache_host(r->tpl, &S_cache_host, r);
    md_opts mo = {c, e->idx, e->src, r->sb, c->unsafe_html, true, true,
                  (e->strict || c->unverified_error) ? DIAG_ERROR : DIAG_WARNING, true,
                  S_anchor_label(c->language), !e->strict};
    r->md = md_new(&mo);
    r->root_fd = fs_root_open(e->root);
    r->dest = e->dest;
    output_dest_open(&r->dest);
    r->read_mark = xcalloc(e->nrecords + 1, 1);
    r->phase = e->job_phases;
    if (!r->phase)
        r->phase = r->own_phase = render_job_phases(e);
    buf_init(&r->scratch);
    strmap_init(&r->tag_urls);
    strmap_init(&r->by_template);
    r->params_page = SIZE_MAX;
    return r;
}

void render_free(renderer *r)
{
    if (!r)
        return;
    md_free(r->md);
    if (r->root_fd >= 0)
        close(r->root_fd);
    output_dest_close(&r->dest);
    tpl_free(r->tpl);
    sandbox_free(r->sb);
    free(r->read_mark);
    free(r->own_phase);
    free(r->reads);
    free(r->cap);
    free(r->fig_url);
    free(r->groups);
    free(r->report_url);
    record_figs_buf_free(&r->figs_buf);
    buf_free(&r->scratch);
    strmap_free_with(&r->tag_urls, free);
    strmap_free(&r->by_template);
    free(r);
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

static int S_write(renderer *r, const char *out_rel, const buf *html, page_record *rec,
                   const char *file)
{
    const output_dest *d = &r->dest;
    size_t before = rec->out_bytes;
    outrec_digest dg;
    outrec_digest_of(html->ptr ? html->ptr : "", html->len, &dg);
    struct stat st, pub;
    int rc = output_write(d, out_rel, html->ptr, html->len, &dg, file, &rec->diags,
                          &rec->out_bytes, &st);
    /* the file's stamp as it is left, for the parent's stamp of the output
     * and its tables (a second file would make them ambiguous: none then) */
    if (rc > 0 && !before) {
        rec->out_stamp = stamp_of_stat(STAMP_SEED, out_rel, &st);
        rec->out_digest = dg;
        rec->out_at = outrec_stamp_of(&st);
    } else if (rc > 0) {
        rec->out_stamp = 0;
        rec->out_at = (outrec_stamp){0, 0, 0, 0};
    }
    if (rc >= 0 && output_differs(d, out_rel, html->ptr, html->len, &dg, &pub))
        rec->out_changed = 1;
    else if (rc >= 0 && !before)
        rec->pub_at = outrec_stamp_of(&pub);
    return rc < 0 ? -1 : 0;
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
 * like the page's own links, and blamed on the template (links.h). */
static void S_scan_links(renderer *r, const buf *html, const char *tfile, page_record *rec)
{
    const char *base = r->e.cfg->base_path;
    strmap seen;
    strmap_init(&seen);
    for (size_t i = 0; i < rec->nlinks; i++)
        strmap_put(&seen, rec->links[i].target, (void *)1);
    buf u = BUF_INIT;
    /* figures link to their report row or source: checked as figures. The
     * rows are "<report URL>#<prefix>-<n>", told apart by their shape when
     * nothing in them is escaped in HTML (a page has tens of them). */
    const fig_ctx *fc = r->cur_figs;
    char *fig_href = NULL;
    if (fc && r->report_url && !strpbrk(r->report_url, "&<>\"'") &&
        !strpbrk(fc->anchor_prefix, "&<>\"'"))
        fig_href = xasprintf("%s#%s-", r->report_url, fc->anchor_prefix);
    /* the rows on the report page's first part; the others' (paginate.h's
     * parts) are noted as seen below, one by one */
    size_t fig_rows = fc ? fc->anchor_base + fc->nfigs : 0;
    if (fc && fc->report_rows && fc->report_rows < fig_rows)
        fig_rows = fc->report_rows;
    for (size_t i = 0; fc && i < fc->nfigs; i++) {
        const figure *f = &fc->figs[i];
        if (fig_href && f->tier != FIG_CITED && fc->anchor_base + i < fig_rows)
            continue;
        buf_clear(&u);
        if (f->tier == FIG_CITED) {
            /* checked as the page's own link, at the figure: the sources
             * page must have the key's anchor (an unknown key has its error) */
            char *at = sources_path(r->e.src, f->expr);
            buf_puts(&u, at);
            free(at);
            if (f->ok && !strmap_get(&seen, buf_cstr(&u))) {
                rec->links = xrealloc(rec->links, (rec->nlinks + 1) * sizeof *rec->links);
                rec->links[rec->nlinks++] = (md_link){xstrdup(buf_cstr(&u)), f->line, f->col, NULL};
            }
        } else {
            /* the report page's site path: its URL without the base path */
            buf_puts(&u, r->report_url ? r->report_url + strlen(base) : "/checks/");
            if (r->report_url)
                paginate_part_suffix(&u, paginate_part_of(fc->anchor_base + i, fc->report_rows));
            buf_putc(&u, '#');
            buf_puts(&u, f->anchor);
        }
        strmap_put(&seen, buf_cstr(&u), (void *)1);
    }
    links_scan_opts o = {base, rec->url, tfile, fig_href, fig_rows};
    links_scan_html(buf_cstr(html), html->len, &o, &seen, rec);
    buf_free(&u);
    free(fig_href);
    strmap_free(&seen);
}

/* Renders the template `tname` for the current environment into out_rel;
 * 0 when the template ran to its end. */
static int S_finish(renderer *r, const char *tname, const char *out_rel, page_record *rec,
                    const char *file)
{
    if (!tpl_exists(r->tpl, tname)) {
        diag_error(&rec->diags, file, 0, 0, "template templates/%s not found", tname);
        return -1;
    }
    buf html = BUF_INIT;
    int rc = tpl_render(r->tpl, tname, &html, &rec->diags);
    if (sandbox_page_cut(r->sb))
        rc = -1; /* rendered again (render_job): nothing of it is written */
    if (rc == 0) {
        char *tfile = xasprintf("templates/%s", tname);
        S_scan_links(r, &html, tfile, rec);
        free(tfile);
        S_write(r, out_rel, &html, rec, file);
    }
    buf_free(&html);
    return rc;
}

/* A front matter key that kvsite does not read and no template read while
 * the page rendered is a slip ("darft: true" publishes the page): a warning,
 * an error with --strict. Keys for templates alone go under params:. */
static void S_check_front_keys(const renderer *r, const page *p, page_record *rec)
{
    const yv *fm = p->front;
    for (size_t k = 0; k < (fm && fm->type == YV_MAP ? fm->n : 0); k++) {
        const char *key = fm->keys[k];
        if (r->params_read[k] || fm_key_known(p, key))
            continue;
        const char *hint = fm_key_hint(p, key);
        if (hint)
            diag_warning(&rec->diags, p->src, fm->key_lines[k], fm->key_cols[k],
                         "unknown front matter key \"%s\"; did you mean %s?", key, hint);
        else
            diag_warning(&rec->diags, p->src, fm->key_lines[k], fm->key_cols[k],
                         "unknown front matter key \"%s\": no template reads page.params.%s "
                         "(keys for templates go under params:)",
                         key, key);
    }
}

/* The end of a page's or generated page's job: a limit that its Lua
 * swallowed (pcall) still fails it, the inputs it read go into the record,
 * and the renderer lets go of the page. */
static void S_job_end(renderer *r, page_record *rec, const char *file)
{
    const char *swallowed = sandbox_swallowed_limit(r->sb);
    if (swallowed)
        diag_error(&rec->diags, file, 0, 0, "%s", swallowed);
    buf b = BUF_INIT;
    const buf *a = sandbox_page_inputs(r->sb), *t = tpl_inputs(r->tpl);
    buf_put(&b, buf_cstr(a), a->len);
    buf_put(&b, buf_cstr(t), t->len);
    rec->inputs_len = b.len;
    rec->inputs = buf_detach(&b);
    r->cur_page = NULL;
    r->cur_file = NULL;
    r->cur_rec = NULL;
    r->cur_figs = NULL;
    r->cur_dl = NULL;
    sandbox_page_end(r->sb);
}

/* The variables a page's template sees, built in protected mode: a page near
 * its memory cap must fail with an error, not abort the worker. */
typedef struct {
    renderer *r;
    size_t job;
    const page *p;
    const md_result *res;
    const size_t *kids; /* the whole listing (content_kids) */
    size_t nkids;
    size_t number;      /* the listing's page: 1, or 2.. for /<section>/page/N/ */
    const char *path;   /* that page's site path */
} page_env_args;

/* page.pages, the entries of listing page number of v[0..n), and
 * page.paginator, on the table on top of the stack. first: the listing's
 * first page ("/posts/"). Without a plan (no pager jobs) nothing splits. */
static void S_set_listing(renderer *r, const size_t *v, size_t n, size_t per,
                          const char *first, size_t number)
{
    lua_State *L = sandbox_lua(r->sb);
    if (!r->e.pages_plan)
        per = n ? n : 1;
    size_t lo, hi;
    paginate_bounds(n, per, number, &lo, &hi);
    lv_push_page_slice(r, v ? v + lo : NULL, hi - lo);
    lua_setfield(L, -2, "pages");
    lv_push_paginator(r, first, number, n, per);
    lua_setfield(L, -2, "paginator");
}

static size_t S_section_per(const renderer *r, const page *p)
{
    return paginate_of(r->e.cfg, p);
}

static int S_page_env(lua_State *L)
{
    const page_env_args *a = lua_touserdata(L, 1);
    renderer *r = a->r;
    S_set_helpers(r);
    sandbox_push_template_env(r->sb);
    lv_push_page_brief(r, a->job);
    if (a->number > 1) {
        char *u = render_full_url(r, a->path);
        render_setstr(L, "url", u);
        free(u);
        u = xasprintf("%s%s", r->e.cfg->base_url, a->path + 1);
        render_setstr(L, "permalink", u);
        free(u);
        render_setstr(L, "path", a->path);
    }
    lua_pushlstring(L, buf_cstr(&a->res->html), a->res->html.len);
    lua_setfield(L, -2, "content");
    lv_push_toc(r, a->res->toc, a->res->ntoc);
    lua_setfield(L, -2, "toc");
    lv_push_page_figures(r, &a->res->figs, a->p->src);
    lua_setfield(L, -2, "figures");
    render_setstr(L, "report_url", r->report_url);
    if (a->p->kind != PAGE_REGULAR) {
        S_set_listing(r, a->kids, a->nkids, S_section_per(r, a->p), a->p->url, a->number);
    } else {
        /* the neighbours in the section's listing, found in the build's */
        size_t prev = content_prev(r->e.idx, a->job), next = content_next(r->e.idx, a->job);
        if (prev != SIZE_MAX) {
            lv_push_page_obj(r, prev);
            lua_setfield(L, -2, "prev");
        }
        if (next != SIZE_MAX) {
            lv_push_page_obj(r, next);
            lua_setfield(L, -2, "next");
        }
    }
    lua_setfield(L, -2, "page");
    lua_pop(L, 1);
    return 0;
}

/* The full URL of the report page that lists job's figures. */
static char *S_report_url(renderer *r, size_t job)
{
    size_t group = r->e.nreport_sections ? render_groups(r)[job] : REPORT_GROUP_ALL;
    char *first = report_path(r->e.idx, r->e.report_sections, group);
    const paginate_plan_t *pl = r->e.pages_plan;
    char *path = paginate_path(first, pl && job < r->e.idx->npages ? pl->report_number[job] : 1);
    char *u = render_full_url(r, path);
    free(path);
    free(first);
    return u;
}

/* The figures of each page on a part of job's report page (paginate.h);
 * 0 without a plan. */
static size_t S_report_rows(renderer *r, size_t job)
{
    const paginate_plan_t *pl = r->e.pages_plan;
    if (!pl || job >= r->e.idx->npages)
        return 0;
    size_t group = r->e.nreport_sections ? render_groups(r)[job] : REPORT_GROUP_ALL;
    return paginate_rows_of(pl, paginate_slot(pl, group), pl->report_number[job]);
}

/* Page p, or page number (2..) of its listing: a section's or home's next
 * pages are the same page rendered again, with the next entries. Their
 * figures, links and diagnostics are the first page's: rendered the same
 * (so the figures link to the same rows), kept once, by the first. */
static void S_render_page(renderer *r, size_t job, const page *p, size_t number,
                          page_record *rec)
{
    lua_State *L = sandbox_lua(r->sb);
    const char *file = p->src ? p->src : "content";
    bool again = number > 1;
    char *path = paginate_path(p->url, number);
    char *out = again ? xasprintf("%sindex.html", path + 1) : xstrdup(p->out);
    diag_list quiet;
    diag_list_init(&quiet);
    diag_list *dl = again ? &quiet : &rec->diags;
    rec->url = xstrdup(path);
    rec->src = xstrdup(p->src && !again ? p->src : "");
    md_result res;
    md_result_init(&res);
    char *prefix = S_anchor_prefix(p->url);
    res.figs.anchor_prefix = prefix;
    free(r->report_url);
    r->report_url = S_report_url(r, job);
    res.figs.report_url = r->report_url;
    res.figs.report_rows = S_report_rows(r, job);
    sandbox_page_begin(r->sb, file, dl);
    r->cur_dl = dl;
    r->cur_page = p;
    r->cur_file = file;
    r->cur_rec = again ? NULL : rec;
    r->cur_figs = &res.figs;
    if (p->src) {
        buf text = BUF_INIT;
        size_t max = r->e.cfg->limits.page_bytes;
        int rc = r->root_fd >= 0 ? fs_read_beneath(r->root_fd, p->src, max, &text)
                                 : fs_read_in(r->e.root, p->src, max, &text);
        if (rc != FS_OK) {
            diag_error(&rec->diags, file, 0, 0, "cannot read: %s",
                       fs_strerror(rc, r->e.cfg->limits.page_bytes));
        } else if (p->body_off <= text.len) {
            md_render(r->md, p, file, text.ptr + p->body_off, text.len - p->body_off,
                      p->body_line, 1, false, &res, dl);
        }
        buf_free(&text);
    }
    if (!again) {
        rec->links = res.links;
        rec->nlinks = res.nlinks;
        res.links = NULL;
        res.nlinks = 0;
    }
    char *tname = sandbox_exhausted(r->sb) ? NULL : S_pick_template(r, p, &rec->diags);
    if (tname) {
        size_t nkids = 0;
        const size_t *kids = p->kind != PAGE_REGULAR ? content_kids(r->e.idx, job, &nkids) : NULL;
        page_env_args args = {r, job, p, &res, kids, nkids, number, path};
        bool track = !again && p->front && p->front->type == YV_MAP && p->front->n;
        if (track) {
            r->params_page = job;
            r->params_read = xcalloc(p->front->n, 1);
        }
        lua_pushcfunction(L, S_page_env);
        lua_pushlightuserdata(L, &args);
        sandbox_error err;
        if (sandbox_pcall(r->sb, 1, NULL, &err) != 0) {
            diag_error(&rec->diags, file, 0, 0, "preparing the page for its template: %s",
                       err.msg);
            sandbox_error_free(&err);
        } else if (S_finish(r, tname, out, rec, file) == 0 && track) {
            S_check_front_keys(r, p, rec);
        }
        if (track) {
            free(r->params_read);
            r->params_read = NULL;
            r->params_page = SIZE_MAX;
        }
        free(tname);
    }
    if (again) {
        rec->summary = xstrdup("");
    } else {
        rec->summary = p->summary ? fig_plain_text(p->summary)
                       : res.summary ? xstrdup(res.summary) : xstrdup("");
        rec->figs = res.figs.figs;
        rec->nfigs = res.figs.nfigs;
        res.figs.figs = NULL;
        res.figs.nfigs = 0;
    }
    S_job_end(r, rec, file);
    md_result_free(&res);
    diag_list_free(&quiet);
    free(prefix);
    free(out);
    free(path);
}

typedef struct {
    renderer *r;
    job_kind kind;
    size_t index;
    const char *title, *path, *url;
    size_t number;      /* page of the listing (tags, report): 1.. */
    const char *first;  /* the listing's first page ("/tags/go/") */
    size_t part;        /* the report page's part (paginate.h): 0.. */
} generated_env_args;

/* On the page table at the top of the stack: page.<field>, the n things an
 * index lists (the tag index's tags, the sources) on this page of it, per a
 * page (all of them without a plan), pushed by push_slice; and
 * page.paginator. */
static void S_set_index_slice(renderer *r, const generated_env_args *a, size_t n, size_t per,
                              void (*push_slice)(renderer *, size_t, size_t), const char *field)
{
    lua_State *L = sandbox_lua(r->sb);
    if (!r->e.pages_plan)
        per = n ? n : 1;
    size_t lo, hi;
    paginate_bounds(n, per, a->number, &lo, &hi);
    push_slice(r, lo, hi - lo);
    lua_setfield(L, -2, field);
    lv_push_paginator(r, a->first, a->number, n, per);
    lua_setfield(L, -2, "paginator");
}

/* The variables of a generated page (tags, sources, report, 404), protected. */
static int S_generated_env(lua_State *L)
{
    const generated_env_args *a = lua_touserdata(L, 1);
    renderer *r = a->r;
    job_kind kind = a->kind;
    S_set_helpers(r);
    sandbox_push_template_env(r->sb);
    lua_createtable(L, 0, 8);
    render_setstr(L, "title", a->title);
    bool report = kind == JOB_CHECKS || kind == JOB_CHECKS_SECTION;
    render_setstr(L, "kind", jobs_info(kind)->name);
    render_setstr(L, "url", a->url);
    render_setstr(L, "path", a->path);
    lua_pushliteral(L, "");
    lua_setfield(L, -2, "content");
    lua_newtable(L);
    lua_setfield(L, -2, "toc");
    lua_newtable(L);
    lua_setfield(L, -2, "params");
    size_t group = kind == JOB_CHECKS_SECTION ? a->index
                   : r->e.nreport_sections    ? REPORT_GROUP_ROOT
                                              : REPORT_GROUP_ALL;
    if (kind == JOB_TAG) {
        const tag *t = &r->e.idx->tags[a->index];
        S_set_listing(r, t->pages, t->npages, (size_t)r->e.cfg->paginate, a->first, a->number);
        render_setstr(L, "tag", t->name);
    } else if (kind == JOB_TAGS) {
        /* page.terms: the tags on this page of the index */
        S_set_index_slice(r, a, r->e.idx->ntags, paginate_tags_of(r->e.cfg), lv_push_tag_slice,
                          "terms");
    } else if (kind == JOB_SOURCES) {
        /* page.sources: the entries on this page of the sources page */
        S_set_index_slice(r, a, sources_count(r->e.src), sources_per(r->e.src),
                          lv_push_source_slice, "sources");
    } else if (report && r->e.pages_plan) {
        const paginate_plan_t *pl = r->e.pages_plan;
        size_t slot = paginate_slot(pl, group);
        /* the report lists pages: its paginator counts them */
        size_t count = pl->report_pages[slot], per = pl->report_per;
        lv_push_paginator(r, a->first, a->number, count > 1 ? (count - 1) * per + 1 : 1, per);
        lua_setfield(L, -2, "paginator");
    }
    lua_setfield(L, -2, "page");
    if (report) {
        lv_push_report(r, group, a->number, a->part);
        lua_setfield(L, -2, "report");
    }
    lua_pop(L, 1);
    return 0;
}

/* Every figure outside a link links to its row in the report of its group:
 * the report page must have an element with the row's id (a report template
 * that lists no rows breaks every one). Checked here, where the report's
 * ids and the figures it lists are at hand, with one error per page at its
 * first figure whose row is missing. */
static void S_check_report_rows(renderer *r, size_t group, size_t number, size_t part,
                                page_record *rec)
{
    strmap ids;
    strmap_init(&ids);
    for (size_t i = 0; i < rec->nids; i++)
        strmap_put(&ids, rec->ids[i], (void *)1);
    if (!r->e.pages_plan)
        number = 0;
    size_t rows = number ? paginate_rows_of(r->e.pages_plan, paginate_slot(r->e.pages_plan, group),
                                            number)
                         : 0;
    size_t njobs = group == REPORT_GROUP_ALL && !number ? r->e.nrecords : r->e.idx->npages;
    lv_report_iter it;
    lv_report_iter_init(&it, r, group, number, njobs);
    for (size_t j; lv_report_next(&it, &j);) {
        const page_record *pr = render_record(r, j);
        if (!pr || !pr->nfigs)
            continue;
        const figure *figs = record_figures(pr, r->e.figs, &r->figs_buf);
        r->figs_now = NULL; /* the buffer is reused here */
        if (!figs)
            continue; /* checks.json says so */
        const figure *first = NULL;
        size_t more = 0, lo = 0, hi = pr->nfigs;
        if (number)
            paginate_part_bounds(pr->nfigs, rows, part, &lo, &hi);
        for (size_t k = lo; k < hi; k++) {
            const figure *f = &figs[k];
            /* a cited figure links to /sources/, checked with the page's links */
            if (f->tier == FIG_CITED || url_fragment_in(&ids, f->anchor))
                continue;
            if (first)
                more++;
            else
                first = f;
        }
        if (!first)
            continue;
        char *also = more ? xasprintf("; so do %zu more figures on this page", more) : NULL;
        diag_error(&rec->diags, pr->src, first->line, first->col,
                   "broken link to %s#%s: %s has no heading or anchor with id \"%s\", this "
                   "figure's row in the checks report%s",
                   rec->url, first->anchor, rec->url, first->anchor, also ? also : "");
        free(also);
    }
    strmap_free(&ids);
}

static void S_render_generated(renderer *r, job_kind kind, size_t index, size_t number,
                               size_t part, page_record *rec)
{
    lua_State *L = sandbox_lua(r->sb);
    const job_kind_info *info = jobs_info(kind);
    const char *tpath = info->template, *tname = tpath + strlen("templates/");
    const char *title = info->title, *url = info->url;
    char *made_url = NULL;
    /* pages a site may not have */
    if (!jobs_present(&r->e, kind, kind == JOB_404 && tpl_exists(r->tpl, tname)))
        return;
    if (kind == JOB_TAG) {
        title = r->e.idx->tags[index].name;
        url = r->e.idx->tags[index].url;
    } else if (kind == JOB_CHECKS_SECTION) {
        title = r->e.idx->pages[r->e.report_sections[index]]->title;
        url = made_url = report_path(r->e.idx, r->e.report_sections, index);
    }
    /* page number of a listing: /tags/go/page/2/ */
    const char *first = url;
    char *page_url = number > 1 ? paginate_path(first, number) : NULL;
    if (page_url)
        url = page_url;
    char *part_url = part ? paginate_part_path(url, part) : NULL;
    if (part_url)
        url = part_url;
    rec->url = xstrdup(url);
    rec->src = xstrdup("");
    rec->summary = xstrdup("");
    sandbox_page_begin(r->sb, tpath, &rec->diags);
    r->cur_dl = &rec->diags;
    r->cur_file = tpath;
    r->cur_rec = rec;
    bool report = kind == JOB_CHECKS || kind == JOB_CHECKS_SECTION;
    size_t group = kind == JOB_CHECKS_SECTION ? index
                   : r->e.nreport_sections    ? REPORT_GROUP_ROOT
                                              : REPORT_GROUP_ALL;
    char *full_url = render_full_url(r, url);
    generated_env_args args = {r, kind, index, title, url, full_url, number, first, part};
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
    if (ready && S_finish(r, tname, out, rec, tpath) == 0 && report)
        S_check_report_rows(r, group, number, part, rec);
    free(out);
    /* the ids a link may name (report rows, sources) were read from the output */
    S_job_end(r, rec, tpath);
    free(page_url);
    free(part_url);
    free(made_url);
}

/* Page number 2 and up of a listing (paginate.h). */
static void S_render_pager(renderer *r, size_t index, page_record *rec)
{
    const paginate_plan_t *pl = r->e.pages_plan;
    const pager_item *it = &pl->items[index];
    if (it->kind == PAGER_SECTION)
        S_render_page(r, it->owner, r->e.idx->pages[it->owner], it->number, rec);
    else if (it->kind == PAGER_TAGS)
        S_render_generated(r, JOB_TAGS, 0, it->number, 0, rec);
    else if (it->kind == PAGER_TAG)
        S_render_generated(r, JOB_TAG, it->owner, it->number, 0, rec);
    else if (it->kind == PAGER_SOURCES)
        S_render_generated(r, JOB_SOURCES, 0, it->number, 0, rec);
    else if (it->owner + 1 < pl->nslots)
        S_render_generated(r, JOB_CHECKS_SECTION, it->owner, it->number, it->part, rec);
    else
        S_render_generated(r, JOB_CHECKS, 0, it->number, it->part, rec);
}

/* checks.json: every figure, in job order. It can be tens of megabytes, so
 * it goes out in chunks, and the old file stays where its bytes are the same. */
static void S_render_checks_json(renderer *r, page_record *rec)
{
    const char *rel = "checks.json";
    rec->url = xstrdup("/checks.json");
    rec->out_changed = 1; /* streamed, not compared with the published one */
    fs_stream w;
    char *path = r->e.dest.dir ? fs_join(r->e.dest.dir, rel) : NULL;
    char *old = path && r->e.dest.same_dir ? fs_join(r->e.dest.same_dir, rel) : NULL;
    if (path)
        fs_stream_open(&w, path, old);
    report_totals t = {0, 0, {0}};
    buf b = BUF_INIT, head = BUF_INIT;
    uint64_t bytes = 0;
    report_json_head(&b);
    for (size_t j = 0; j < r->e.nrecords; j++) {
        const page_record *pr = render_record(r, j);
        if (!pr || !pr->nfigs)
            continue;
        const figure *figs = record_figures(pr, r->e.figs, &r->figs_buf);
        if (!figs) {
            diag_error(&rec->diags, NULL, 0, 0, "cannot read the figures of %s: %s", pr->src,
                       strerror(errno));
            continue;
        }
        r->figs_now = NULL; /* the buffer is reused here */
        char *url = render_full_url(r, pr->url);
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

size_t render_reruns(const renderer *r) { return r->reruns; }

void render_job(renderer *r, size_t job, page_record *rec)
{
    size_t index;
    job_kind kind = render_job_kind(&r->e, job, &index);
    r->cur_phase = render_job_phase(&r->e, job);
    for (;;) {
        rec->job = (uint32_t)job;
        tpl_page_begin(r->tpl); /* its template inputs are its own */
        for (size_t i = 0; i < r->nreads; i++)
            r->read_mark[r->reads[i]] = 0;
        r->nreads = 0;
        r->reads_totals = false;
        if (kind == JOB_PAGE) {
            S_render_page(r, job, r->e.idx->pages[index], 1, rec);
        } else if (kind == JOB_CHECKS_JSON) {
            S_render_checks_json(r, rec);
        } else if (kind == JOB_PAGER) {
            S_render_pager(r, index, rec);
        } else {
            S_render_generated(r, kind, index, 1, 0, rec);
        }
        if (!sandbox_take_rerun(r->sb))
            break;
        /* cut short running unmetered (sandbox.h): all it did goes, and
         * it runs again with its instructions counted */
        record_free(rec);
        record_init(rec);
        r->job_gen++; /* the views the cut run made expire */
        r->reruns++;
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
    rec->reads_totals = r->reads_totals;
    rec->done = 1;
    r->job_gen++; /* the Lua views made for this job expire (luaview.h) */
}

int render_fragment(const char *text, size_t len, bool unsafe, buf *out, diag_list *dl)
{
    sources none;
    memset(&none, 0, sizeof none);
    /* --unsafe shows raw HTML as CommonMark defines it, without GitHub's
     * tagfilter: the spec's examples pass as they do with the library */
    md_opts mo = {NULL, NULL, &none, NULL, unsafe, !unsafe, true, DIAG_WARNING, false, NULL, false};
    md_ctx *m = md_new(&mo);
    md_result res;
    md_result_init(&res);
    int rc = md_render(m, NULL, "<stdin>", text, len, 1, 1, false, &res, dl);
    buf_put(out, buf_cstr(&res.html), res.html.len);
    md_result_free(&res);
    md_free(m);
    return rc;
}
