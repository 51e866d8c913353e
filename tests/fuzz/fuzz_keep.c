/* fuzz_keep: host objects kept across calls. Page and template Lua store what
 * the host hands them (the template's writers, page, page.toc, page.figures
 * and their figures, site, the helpers, print) in globals and use them later:
 * after an include returned, after markdown_inline added figures, on the
 * next job of the same worker. Every use must work or fail with a Lua error;
 * under ASan a use of freed or moved host memory is a crash.
 *
 * The input is split at the first line "%%%%": the part before is appended
 * to the body of content/a.md (after a {lua} block that keeps objects of its
 * own), the part after (or the whole input) is templates/page.html. A
 * partial, templates/partials/keep.html, keeps its own writers; the section
 * and home templates call whatever the pages kept. The project is made at
 * start-up under $TMPDIR and removed at exit; each input loads it and runs
 * one renderer over every job of the first two phases, as a worker does
 * (kvsite check: nothing is written). */
#include <cmark-gfm-core-extensions.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "config.h"
#include "content.h"
#include "diag.h"
#include "fsutil.h"
#include "record.h"
#include "render.h"
#include "sources.h"

static char *S_root; /* $TMPDIR/kvsite-fuzz-keep-XXXXXX */

static void S_write(const char *rel, const char *text, size_t n)
{
    char *path = fs_join(S_root, rel);
    if (fs_write_file(path, text, n) != 0)
        abort();
    free(path);
}

static void S_writes(const char *rel, const char *text) { S_write(rel, text, strlen(text)); }

static void S_cleanup(void)
{
    fs_remove_tree(S_root);
    free(S_root);
}

static const char S_page_head[] =
    "---\ntitle: \"A <b>\"\nsummary: \"`1 MiB {= 1048576}` and `{lua} 1+1`\"\n"
    "tags: [x, y]\n---\n"
    "```{lua}\n"
    "kept = kept or {}\n"
    "kept.print, kept.tostring = print, tostring\n"
    "kept.f = function(...) return select('#', ...) end\n"
    "```\n\n"
    "# One\n\n`224 MiB {= 2*28*4*128*4096*2}` and `7× {cite p}`.\n\n## Two\n\n";

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    S_root = xasprintf("%s/kvsite-fuzz-keep-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(S_root))
        abort();
    static const char *const dirs[] = {"checks", "content/s", "templates/partials"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char *d = fs_join(S_root, dirs[i]);
        if (fs_mkdir_p(d) != 0)
            abort();
        free(d);
    }
    S_writes("site.yaml", "title: Keep\nlimits:\n  lua_instructions: 300000\n"
                          "  lua_memory: 8388608\n  output_bytes: 4194304\n");
    S_writes("checks/sources.yaml", "p:\n  title: P\n  url: \"javascript:alert(1)\"\n");
    S_writes("content/_index.md", "---\ntitle: Home\n---\nhome\n");
    S_writes("content/s/_index.md", "---\ntitle: S\n---\nsection\n");
    S_writes("content/s/b.md", "---\ntitle: B\n---\n# B\n\n`1 B {= 1}`\n");
    S_writes("templates/partials/keep.html",
             "{% kept_w, kept_e, kept_r = _o, _oe, _or %}<i>{{ page.title }}</i>");
    /* later jobs call what earlier ones kept (each page has a fresh
     * environment: these find nothing unless something leaked) */
    static const char later[] =
        "{% for _, k in ipairs({'kept_w', 'kept_e', 'kept_page', 'kept_toc', 'kept_figs'}) do %}"
        "{% local v = rawget(_ENV, k) %}{% if v then pcall(function() return v[1], #v end) end %}"
        "{% end %}{{ page.title }}{% for _, p in ipairs(page.pages or {}) do %}{{ p.title }}"
        "{% end %}";
    S_writes("templates/section.html", later);
    S_writes("templates/home.html", later);
    atexit(S_cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536)
        return 0;
    const char *in = (const char *)data;
    const char *cut = NULL;
    for (size_t i = 0; i + 5 <= size; i++)
        if (memcmp(in + i, "%%%%\n", 5) == 0 && (i == 0 || in[i - 1] == '\n')) {
            cut = in + i;
            break;
        }
    buf md = BUF_INIT;
    buf_put(&md, S_page_head, sizeof S_page_head - 1);
    if (cut)
        buf_put(&md, in, (size_t)(cut - in));
    S_write("content/a.md", md.ptr, md.len);
    buf_free(&md);
    const char *tpl = cut ? cut + 5 : in;
    S_write("templates/page.html", tpl, size - (size_t)(tpl - in));

    cmark_gfm_core_extensions_ensure_registered();
    diag_list dl;
    diag_list_init(&dl);
    config cfg;
    config_defaults(&cfg);
    content_index idx;
    sources src;
    memset(&idx, 0, sizeof idx);
    memset(&src, 0, sizeof src);
    if (config_load(&cfg, S_root, &dl) != 0)
        abort();
    content_opts copts = {.drafts = false, .threads = 1};
    content_load(&idx, S_root, &cfg, &copts, &dl);
    sources_load(&src, S_root, cfg.limits.data_bytes, &dl);
    /* named fields: a field added to render_env does not stop this target
     * from compiling; no output folder (dest zeroed): nothing is written */
    render_env env = {.root = S_root, .cfg = &cfg, .idx = &idx, .src = &src};
    size_t njobs = render_job_count(&env);
    page_record *recs = calloc(njobs + 1, sizeof *recs);
    for (size_t j = 0; j < njobs; j++)
        record_init(&recs[j]);
    env.records = recs;
    env.nrecords = njobs;
    renderer *r = render_new(&env);
    if (!r)
        abort();
    /* one worker through the regular pages, then sections and home */
    for (int phase = 0; phase <= 2; phase++)
        for (size_t j = 0; j < njobs; j++)
            if (render_job_phase(&env, j) == phase)
                render_job(r, j, &recs[j]);
    render_free(r);
    for (size_t j = 0; j < njobs; j++)
        record_free(&recs[j]);
    free(recs);
    sources_free(&src);
    content_index_free(&idx);
    config_free(&cfg);
    diag_list_free(&dl);
    return 0;
}
