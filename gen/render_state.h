/* render_state: the renderer's state, shared by the files that make up the
 * renderer (render.c, luaview.c's renderer views, helpers.c) and by no other
 * module. The renderer owns everything here; see render.h. */
#ifndef KV_RENDER_STATE_H
#define KV_RENDER_STATE_H

#include <stdint.h>

#include "markdown.h"
#include "output.h"
#include "record.h"
#include "render.h"
#include "sandbox.h"
#include "strmap.h"
#include "template.h"

struct renderer {
    render_env e;
    sandbox *sb;
    templates *tpl;
    md_ctx *md;
    int root_fd;        /* the project folder, opened once: the pages are read
                         * beneath it (-1: opened for each page instead) */
    output_dest dest;   /* where pages go, its folders opened once */
    /* bumped when a job ends: the Lua views made for it expire (luaview.h) */
    uint64_t job_gen;
    size_t reruns;      /* jobs rendered again after an unmetered run was cut */
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
    bool reads_totals;  /* this job showed render_env.site_totals (record.h) */
    /* include_cached's renders (template.h's tpl_cache_host): while cap_depth
     * > 0, every record read is also noted in cap (RENDER_CAP_TOTALS for the
     * totals, RENDER_CAP_OWN for a read of the page's own params), so the
     * pages that reuse the output depend on what its render read */
    uint32_t *cap;
    size_t ncap, capcap;
    int cap_depth;
    diag_list *cur_dl;  /* where the job's diagnostics go */
    buf scratch;        /* lv_push_page_brief's */
    strmap tag_urls;    /* tag name -> its URL (owned) */
    strmap by_template; /* template name -> first page index + 2 (site.page_with_template) */
    char *fig_url;      /* full URL of the page whose figures a view last gave */
    size_t fig_url_job;
    size_t *groups;     /* report group by page (report_groups), NULL until needed */
    record_figs_buf figs_buf; /* the figures of the record a view last read */
    const figure *figs_now;
    size_t figs_job;
    char *report_url;   /* full URL of the report page listing the current page */
    /* reads of page.params.<key> for the page being rendered, by its front
     * matter's key position, while params_page is that page's index (else
     * SIZE_MAX): a key neither kvsite nor a template reads is a slip */
    size_t params_page;
    unsigned char *params_read;
};

/* The record of an earlier phase's job, noted as read; NULL when the current
 * job may not see it. */
const page_record *render_record(renderer *r, size_t job);
/* What else a job depends on, noted where render_record notes a read: the
 * site's figure totals, and (RENDER_CAP_OWN) the page's own params, which
 * an include_cached output may not show, being another page's too. */
#define RENDER_CAP_TOTALS UINT32_MAX
#define RENDER_CAP_OWN (UINT32_MAX - 1)
void render_note(renderer *r, uint32_t what);
/* base_path + site_path, malloc'ed. */
char *render_full_url(const renderer *r, const char *site_path);
/* The report group of every page (report_groups): the parent's, or made once
 * per renderer when render_env has none. */
const size_t *render_groups(renderer *r);
/* Sets field k of the table on top of the stack to v (nothing for NULL). */
void render_setstr(lua_State *L, const char *k, const char *v);

#endif
