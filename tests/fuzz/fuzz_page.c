/* fuzz_page: the whole page pipeline on the input as a page body: cmark-gfm
 * with the GFM extensions, kvsite's walk over the tree, {lua} blocks and figure
 * spans run in the worker's sandbox, heading ids, link rewriting against a
 * small content index, the unverified-figure lint, the summary.
 *
 * The project is made at start-up under $TMPDIR (removed at exit) with
 * checks/sources.yaml, a module and a data file, so require, data and {cite}
 * all have something to find; the content index holds one other page, so
 * relative .md links resolve. Limits are the defaults scaled down so each
 * input stays fast; the wall clock is libFuzzer's -timeout (a real build has
 * the pool's watchdog for what runs in C).
 *
 * Checked beyond "no crash": md_render returns -1 exactly when it added an
 * error; every figure has a quote, an expression and an anchor. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "content.h"
#include "diag.h"
#include "fsutil.h"
#include "markdown.h"
#include "sandbox.h"
#include "sources.h"
#include "strmap.h"

static char *S_root; /* $TMPDIR/kvsite-fuzz-page-XXXXXX */
static config S_cfg;
static sources S_src;
static content_index S_idx;
static page S_other, S_self;
static page *S_pages[2];
static sandbox *S_sb;
static md_ctx *S_md;

static void S_write(const char *rel, const char *text)
{
    char *path = fs_join(S_root, rel);
    if (fs_write_file(path, text, strlen(text)) != 0)
        abort();
    free(path);
}

static void S_page(page *p, const char *src, const char *rel, const char *section,
                   const char *url)
{
    memset(p, 0, sizeof *p);
    p->kind = PAGE_REGULAR;
    p->src = xstrdup(src);
    p->rel = xstrdup(rel);
    p->section = xstrdup(section);
    p->url = xstrdup(url);
    p->title = xstrdup("Page");
}

static void S_page_free(page *p)
{
    free(p->src);
    free(p->rel);
    free(p->section);
    free(p->url);
    free(p->title);
}

static void S_cleanup(void)
{
    md_free(S_md);
    sandbox_free(S_sb);
    sources_free(&S_src);
    strmap_free(&S_idx.by_url);
    strmap_free(&S_idx.by_rel);
    strmap_free(&S_idx.by_section);
    strmap_free(&S_idx.assets_by_out);
    config_free(&S_cfg);
    S_page_free(&S_self);
    S_page_free(&S_other);
    fs_remove_tree(S_root);
    free(S_root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    S_root = xasprintf("%s/kvsite-fuzz-page-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(S_root))
        abort();
    char *dir = fs_join(S_root, "checks/measurements");
    if (fs_mkdir_p(dir) != 0)
        abort();
    free(dir);
    S_write("checks/sources.yaml", "paper2024:\n  title: A paper\n  year: 2024\n");
    S_write("checks/fx.lua", "local M = {}\nfunction M.kv(t) return 2 * 80 * 8 * 128 * t * 2 end\n"
                             "function M.run() local r = data \"measurements/run.yaml\"\n"
                             "  kvsite.measured{source = r.source}\n  return r.bytes end\n"
                             "return M\n");
    S_write("checks/measurements/run.yaml", "source: fuzz\nbytes: 1342177280\n");

    config_defaults(&S_cfg);
    S_cfg.limits.lua_instructions = 200000;
    S_cfg.limits.lua_memory = 4u << 20;
    diag_list dl;
    diag_list_init(&dl);
    if (sources_load(&S_src, S_root, S_cfg.limits.data_bytes, &dl) != 0)
        abort();
    diag_list_free(&dl);

    strmap_init(&S_idx.by_url);
    strmap_init(&S_idx.by_rel);
    strmap_init(&S_idx.by_section);
    strmap_init(&S_idx.assets_by_out);
    S_page(&S_other, "content/notes/week-1.md", "notes/week-1.md", "notes", "/notes/week-1/");
    S_page(&S_self, "content/articles/fuzz.md", "articles/fuzz.md", "articles", "/articles/fuzz/");
    S_pages[0] = &S_self;
    S_pages[1] = &S_other;
    S_idx.pages = S_pages;
    S_idx.npages = 2;
    for (size_t i = 0; i < 2; i++) {
        strmap_put(&S_idx.by_url, S_pages[i]->url, S_pages[i]);
        strmap_put(&S_idx.by_rel, S_pages[i]->rel, S_pages[i]);
    }

    sandbox_opts so = {S_root, S_cfg.limits.lua_instructions, S_cfg.limits.lua_memory,
                       S_cfg.limits.data_bytes, S_cfg.limits.depth};
    S_sb = sandbox_new(&so);
    if (!S_sb)
        abort();
    /* as a site's page is rendered (render.c): named fields, so a field
     * added to md_opts does not stop this target from compiling */
    md_opts mo = {.cfg = &S_cfg, .idx = &S_idx, .src = &S_src, .sb = S_sb, .unsafe = false,
                  .tagfilter = true, .heading_ids = true, .unverified = DIAG_WARNING,
                  .page_markup = true, .anchor_label = "anchor", .fold_lints = true};
    S_md = md_new(&mo);
    atexit(S_cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *file = S_self.src;
    diag_list dl;
    diag_list_init(&dl);
    sandbox_page_begin(S_sb, file, &dl);
    md_result res;
    md_result_init(&res);
    res.figs.anchor_prefix = "articles-fuzz";
    /* a few inputs go through the inline mode of markdown_inline() */
    bool inline_mode = size % 7 == 3;
    int rc = md_render(S_md, &S_self, file, (const char *)data, size, 5, 1, inline_mode, &res,
                       &dl);
    if ((rc != 0) != (dl.errors != 0))
        __builtin_trap();
    for (size_t i = 0; i < res.figs.nfigs; i++) {
        const figure *f = &res.figs.figs[i];
        if (!f->quote || !f->expr || !f->anchor || f->line < 5)
            __builtin_trap();
    }
    md_result_free(&res);
    sandbox_page_end(S_sb);
    diag_list_free(&dl);
    return 0;
}
