/* Unit tests for gen/markdown.c: md_render with and without a sandbox. Heading
 * ids and the table of contents, figures replaced by their spans, {lua}
 * blocks, .md link rewriting and the link list, summaries, positions of
 * figures in tables, lists and headings, the prose lint, inline mode, raw HTML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "config.h"
#include "content.h"
#include "diag.h"
#include "fsutil.h"
#include "markdown.h"
#include "sandbox.h"
#include "sources.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define FILE_A "content/articles/a.md"
/* 2 x 28 layers x 4 KV heads x 128 x 4096 tokens x 2 bytes = 224 MiB (Qwen2.5-7B) */
#define QWEN "2*28*4*128*4096*2"
#define QWEN_TITLE QWEN " = 234,881,024 B = 224.0 MiB"
/* a figure's button, then its details (figmark.c) */
#define FIG_OPEN(id, tier) "<span class=\"fig\" id=\"" id "\" data-tier=\"" tier "\"><button type=\"button\" " \
    "class=\"fig-q\" popovertarget=\"" id "-d\" aria-describedby=\"" id "-d\">"
#define FIG_REPORT(id) "<a class=\"fig-report\" href=\"/checks/#" id "\">Its row in the checks report →</a></span></span>"
#define QWEN_FIG(id, q) FIG_OPEN(id, "computed") q "</button><span class=\"fig-pop\" popover id=\"" id \
    "-d\"><span class=\"fig-tier\">Computed: recomputed from its expression at build time</span>" \
    "<span class=\"fig-row fig-quote\">" q "</span><span class=\"fig-row\"><span class=\"fig-k\">" \
    "Expression</span> <code>" QWEN "</code></span><span class=\"fig-row\"><span class=\"fig-k\">Value" \
    "</span> 234,881,024 B = 224.0 MiB</span>" FIG_REPORT(id)

/* ---- fixtures ------------------------------------------------------------- */

typedef struct {
    char *root;
    config cfg;
    content_index idx;
    sources src;
    sandbox *sb;
    md_opts o;
    md_result res;
    diag_list dl;
    bool rendered;
} fx;

static void S_write(const char *root, const char *rel, const char *text)
{
    char *p = fs_join(root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    assert_int_equal(fs_mkdir_p(p), 0);
    *slash = '/';
    assert_int_equal(fs_write_file(p, text, strlen(text)), 0);
    free(p);
}

static int S_setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->root = strdup("/tmp/kvsite-test-markdown-XXXXXX");
    if (!mkdtemp(f->root))
        return -1;
    S_write(f->root, "content/_index.md", "---\ntitle: Home\n---\n");
    S_write(f->root, "content/articles/a.md", "---\ntitle: A\n---\n");
    S_write(f->root, "content/articles/b.md", "---\ntitle: B\n---\n");
    S_write(f->root, "content/articles/my page.md", "---\ntitle: Spaced\n---\n");
    S_write(f->root, "content/notes/c.md", "---\ntitle: C\n---\n");
    S_write(f->root, "content/about.md", "---\ntitle: About\n---\n");
    S_write(f->root, "checks/sources.yaml", "quest2024:\n  title: Quest paper\n  year: 2024\n");
    config_defaults(&f->cfg);
    diag_list_init(&f->dl);
    content_opts copts = {.drafts = false};
    if (content_load(&f->idx, f->root, &f->cfg, &copts, &f->dl) != 0)
        return -1;
    if (sources_load(&f->src, f->root, 1u << 20, &f->dl) != 0)
        return -1;
    sandbox_opts so = {f->root, 1000000, 16u << 20, 1u << 20, 32};
    f->sb = sandbox_new(&so);
    sandbox_page_begin(f->sb, FILE_A, &f->dl);
    f->o = (md_opts){&f->cfg, &f->idx, &f->src, f->sb, false, true, true, DIAG_WARNING, false, NULL, false};
    md_result_init(&f->res);
    *state = f;
    return 0;
}

static int S_teardown(void **state)
{
    fx *f = *state;
    md_result_free(&f->res);
    sandbox_page_end(f->sb);
    sandbox_free(f->sb);
    sources_free(&f->src);
    content_index_free(&f->idx);
    config_free(&f->cfg);
    diag_list_free(&f->dl);
    fs_remove_tree(f->root);
    free(f->root);
    free(f);
    return 0;
}

/* Renders text as the body of content/articles/a.md into f->res (cleared). */
static int S_md_at(fx *f, const char *text, int first_line, int first_col, bool inline_mode)
{
    md_result_free(&f->res);
    md_result_init(&f->res);
    md_ctx *m = md_new(&f->o);
    const page *p = f->o.idx ? strmap_get(&f->idx.by_rel, "articles/a.md") : NULL;
    int rc = md_render(m, p, FILE_A, text, strlen(text), first_line, first_col, inline_mode,
                       &f->res, &f->dl);
    md_free(m);
    return rc;
}

static int S_md(fx *f, const char *text) { return S_md_at(f, text, 1, 1, false); }

static void S_dump(const fx *f)
{
    for (size_t i = 0; i < f->dl.n; i++)
        print_message("  %s:%d:%d: %s: %s\n", f->dl.v[i].file ? f->dl.v[i].file : "-",
                      f->dl.v[i].line, f->dl.v[i].col, diag_level_name(f->dl.v[i].level),
                      f->dl.v[i].msg);
}

/* Renders text, which must give no diagnostic, and compares the HTML. */
static void S_html(fx *f, const char *text, const char *want)
{
    int rc = S_md(f, text);
    if (rc != 0 || f->dl.n != 0) {
        S_dump(f);
        fail_msg("md_render: %d with %zu diagnostics\n%s", rc, f->dl.n, text);
    }
    if (strcmp(buf_cstr(&f->res.html), want) != 0)
        fail_msg("--- input\n%s\n--- got\n%s\n--- expected\n%s", text, buf_cstr(&f->res.html),
                 want);
}

static void S_has(const fx *f, const char *needle)
{
    if (!strstr(buf_cstr(&f->res.html), needle))
        fail_msg("HTML lacks %s:\n%s", needle, buf_cstr(&f->res.html));
}

/* The diagnostic i, checked. */
static void S_diag(const fx *f, size_t i, diag_level level, int line, int col, const char *msg)
{
    if (i >= f->dl.n) {
        S_dump(f);
        fail_msg("no diagnostic %zu", i);
    }
    const diag *d = &f->dl.v[i];
    if (d->level != level || strcmp(d->file, FILE_A) != 0 || d->line != line || d->col != col ||
        strcmp(d->msg, msg) != 0) {
        S_dump(f);
        fail_msg("diagnostic %zu: %d:%d %s: \"%s\"\n  expected %d:%d %s: \"%s\"", i, d->line,
                 d->col, diag_level_name(d->level), d->msg, line, col, diag_level_name(level),
                 msg);
    }
}

/* ---- without a sandbox ---------------------------------------------------- */

static void test_plain_markdown(void **state)
{
    fx *f = *state;
    f->o.sb = NULL;
    S_html(f, "# Title\n\nHello *world* `224 MiB {= 1}` and `{lua} 1`, 40 GB.\n",
           "<h1 id=\"title\">Title</h1>\n"
           "<p>Hello <em>world</em> <code>224 MiB {= 1}</code> and <code>{lua} 1</code>, 40 "
           "GB.</p>\n");
    assert_int_equal(f->res.figs.nfigs, 0);
    assert_int_equal(f->res.ntoc, 1);
    S_html(f, "```{lua}\nerror('not run')\n```\n",
           "<pre tabindex=\"0\"><code class=\"language-{lua}\">error('not run')\n</code></pre>\n");
    f->o.heading_ids = false;
    S_html(f, "## Title\n\n| a | b |\n|---|---|\n| 1 | ~~2~~ |\n",
           "<h2>Title</h2>\n<table tabindex=\"0\">\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n"
           "<tbody>\n<tr>\n<td>1</td>\n<td><del>2</del></td>\n</tr>\n</tbody>\n</table>\n");
    assert_int_equal(f->res.ntoc, 1); /* the toc is there with or without ids in the HTML */
    assert_string_equal(f->res.toc[0].id, "title");
}

/* A body with a NUL byte or invalid UTF-8 is refused at its place (the page
 * index reads only front matter, so this is where bodies are checked). */
static void test_bad_bytes(void **state)
{
    fx *f = *state;
    md_result_free(&f->res);
    md_result_init(&f->res);
    md_ctx *m = md_new(&f->o);
    static const char nul[] = "ok\nab\0cd\n";
    assert_int_equal(md_render(m, NULL, FILE_A, nul, sizeof nul - 1, 4, 1, false, &f->res, &f->dl),
                     -1);
    S_diag(f, 0, DIAG_ERROR, 5, 3, "the file contains a NUL byte");
    md_result_free(&f->res);
    md_result_init(&f->res);
    static const char utf[] = "line\nok \xC0\xAF\n";
    assert_int_equal(md_render(m, NULL, FILE_A, utf, sizeof utf - 1, 4, 1, false, &f->res, &f->dl),
                     -1);
    S_diag(f, 1, DIAG_ERROR, 5, 4, "invalid UTF-8 (byte 0xc0)");
    assert_int_equal(f->res.html.len, 0);
    md_free(m);
}

/* ---- headings ------------------------------------------------------------- */

typedef struct {
    int level;
    const char *id, *text;
} toc_entry;

static void test_heading_ids_unique(void **state)
{
    fx *f = *state;
    S_html(f,
           "# A\n## A\n## A-1\n### 键值缓存 KV\n#### !!!\n## A\n"
           "## Hello *World* `code`\n\nSetext\n======\n",
           "<h1 id=\"a\">A</h1>\n<h2 id=\"a-1\">A</h2>\n<h2 id=\"a-1-1\">A-1</h2>\n"
           "<h3 id=\"键值缓存-kv\">键值缓存 KV</h3>\n<h4 id=\"section\">!!!</h4>\n"
           "<h2 id=\"a-2\">A</h2>\n"
           "<h2 id=\"hello-world-code\">Hello <em>World</em> <code>code</code></h2>\n"
           "<h1 id=\"setext\">Setext</h1>\n");
    static const toc_entry want[] = {
        {1, "a", "A"},          {2, "a-1", "A"},        {2, "a-1-1", "A-1"},
        {3, "键值缓存-kv", "键值缓存 KV"}, {4, "section", "!!!"}, {2, "a-2", "A"},
        {2, "hello-world-code", "Hello World code"},    {1, "setext", "Setext"},
    };
    assert_int_equal(f->res.ntoc, N(want));
    for (size_t i = 0; i < N(want); i++) {
        assert_int_equal(f->res.toc[i].level, want[i].level);
        assert_string_equal(f->res.toc[i].id, want[i].id);
        assert_string_equal(f->res.toc[i].text, want[i].text);
    }
}

static void test_heading_with_figure(void **state)
{
    fx *f = *state;
    S_html(f, "## Cache: `224 MiB {= " QWEN "}`\n",
           "<h2 id=\"cache-224-mib\">Cache: " QWEN_FIG("fig-1", "224 MiB") "</h2>\n");
    assert_string_equal(f->res.toc[0].text, "Cache: 224 MiB");
}

/* ---- figures -------------------------------------------------------------- */

static void test_figure_span(void **state)
{
    fx *f = *state;
    S_html(f, "Size: `224 MiB {= " QWEN "}`.\n",
           "<p>Size: " QWEN_FIG("fig-1", "224 MiB") ".</p>\n");
    assert_int_equal(f->res.figs.nfigs, 1);
    const figure *g = &f->res.figs.figs[0];
    assert_int_equal(g->line, 1);
    assert_int_equal(g->col, 8);
    assert_string_equal(g->quote, "224 MiB");
    assert_string_equal(g->expr, QWEN);
    assert_string_equal(g->mode, "=");
    assert_int_equal(g->tier, FIG_COMPUTED);
    assert_true(g->ok);
    assert_true(g->value == 234881024.0);
    assert_string_equal(g->detail, QWEN_TITLE);
    assert_string_equal(g->provenance, "");
    assert_string_equal(g->anchor, "fig-1");

    /* the base path prefixes the link to the report; lines count from first_line */
    free(f->cfg.base_path);
    f->cfg.base_path = xstrdup("/docs");
    assert_int_equal(S_md_at(f, "\n\nA `7× {≈ 7.1}` and `0.06 GiB {= 2^26}`\n", 12, 1, false), 0);
    S_has(f, "-d\">7×</button>");
    S_has(f, "<a class=\"fig-report\" href=\"/docs/checks/#fig-1\">");
    S_has(f, "-d\">0.06 GiB</button>");
    S_has(f, "<a class=\"fig-report\" href=\"/docs/checks/#fig-2\">");
    assert_int_equal(f->res.figs.nfigs, 2);
    assert_int_equal(f->res.figs.figs[0].line, 14);
    assert_int_equal(f->res.figs.figs[0].col, 4);
    assert_string_equal(f->res.figs.figs[0].mode, "≈");
    assert_int_equal(f->res.figs.figs[1].col, 24);
}

static void test_failing_figure(void **state)
{
    fx *f = *state;
    assert_int_equal(S_md(f, "Cache: `40 GB {= 40 * 2^30}`\n"), -1);
    assert_int_equal(f->dl.n, 1);
    S_diag(f, 0, DIAG_ERROR, 1, 9,
           "quoted 40 GB, but 40 * 2^30 = 42.95 GB (40.00 GiB); did you mean GiB?");
    S_has(f, "<span class=\"fig\" id=\"fig-1\" data-tier=\"computed\" data-status=\"fail\"><button");
    S_has(f, ">40 GB</button>");
    S_has(f, "<span class=\"fig-row\"><span class=\"fig-k\">Fails</span> quoted 40 GB, "
             "but 40 * 2^30 = 42.95 GB (40.00 GiB); did you mean GiB?</span>");
    S_has(f, FIG_REPORT("fig-1"));
    assert_false(f->res.figs.figs[0].ok);
}

/* A quote is text inside the figure's markup: escaped as cmark escapes text
 * (& < > and ", not '), also in safe mode, where raw HTML from the page is
 * dropped; headings and summaries read it unescaped. */
static void test_figure_quote_escaped(void **state)
{
    fx *f = *state;
    assert_int_equal(S_md(f, "## A `<b>'&\" {= 1}` B\n\nSee `x&y {= 2}`.\n"), -1);
    S_has(f, "-d\">&lt;b&gt;'&amp;&quot;</button>");
    S_has(f, "<span class=\"fig-row fig-quote\">&lt;b&gt;&#39;&amp;&quot;</span>");
    S_has(f, "-d\">x&amp;y</button>");
    S_has(f, FIG_REPORT("fig-2") ".</p>");
    assert_string_equal(f->res.toc[0].text, "A <b>'&\" B");
    assert_string_equal(f->res.summary, "See x&y.");
}

static void test_cited_figure(void **state)
{
    fx *f = *state;
    S_html(f, "Speed-up `7.03× {cite quest2024}`.\n",
           "<p>Speed-up " FIG_OPEN("fig-1", "cited") "7.03×</button><span class=\"fig-pop\" popover "
           "id=\"fig-1-d\"><span class=\"fig-tier\">Cited: reported by a source, not reproduced</span>"
           "<span class=\"fig-row fig-quote\">7.03×</span><span class=\"fig-row\"><span class=\"fig-k\">"
           "Source</span> <a href=\"/sources/#quest2024\">Quest paper</a></span>" FIG_REPORT("fig-1")
           ".</p>\n");
    assert_int_equal(f->res.figs.figs[0].tier, FIG_CITED);
    assert_string_equal(f->res.figs.figs[0].mode, "cite");
    assert_string_equal(f->res.figs.figs[0].expr, "quest2024");
    /* a citation that is not a number links to the source */
    S_html(f, "See `Quest {cite quest2024}`.\n",
           "<p>See <a class=\"cite\" href=\"/sources/#quest2024\">Quest</a>.</p>\n");
    assert_int_equal(f->res.figs.nfigs, 0);
    assert_int_equal(S_md(f, "`7× {cite nope}`\n"), -1);
    S_diag(f, 0, DIAG_ERROR, 1, 2, "cited source \"nope\" is not in checks/sources.yaml");
}

static void test_measured_figure(void **state)
{
    fx *f = *state;
    S_html(f,
           "```{lua}\n"
           "function measured_bytes()\n"
           "  kvsite.measured{source = 'bench', machine = 'A100'}\n"
           "  return 234881024\n"
           "end\n"
           "```\n\n"
           "Measured `224 MiB {= measured_bytes()}`.\n",
           "<p>Measured " FIG_OPEN("fig-1", "measured") "224 MiB</button><span class=\"fig-pop\" popover "
           "id=\"fig-1-d\"><span class=\"fig-tier\">Measured: read from a stored measurement</span>"
           "<span class=\"fig-row fig-quote\">224 MiB</span><span class=\"fig-row\"><span class=\"fig-k\">"
           "Expression</span> <code>measured_bytes()</code></span><span class=\"fig-row\"><span "
           "class=\"fig-k\">Value</span> 234,881,024 B = 224.0 MiB</span><span class=\"fig-row\"><span "
           "class=\"fig-k\">Measured at</span> source: bench; machine: A100</span>" FIG_REPORT("fig-1")
           ".</p>\n");
    const figure *g = &f->res.figs.figs[0];
    assert_int_equal(g->tier, FIG_MEASURED);
    assert_string_equal(g->provenance, "source: bench; machine: A100");
    assert_int_equal(g->line, 8);
}

static void test_figure_in_link(void **state)
{
    fx *f = *state;
    S_html(f, "[see `224 MiB {= " QWEN "}`](b.md)\n",
           "<p><a href=\"/articles/b/\">see <span class=\"fig\" id=\"fig-1\" data-tier=\"computed\">"
           "224 MiB</span></a></p>\n");
}

static void test_escaped_span(void **state)
{
    fx *f = *state;
    S_html(f, "Write `40 GB \\{= EXPR}` like this.\n",
           "<p>Write <code>40 GB {= EXPR}</code> like this.</p>\n");
    assert_int_equal(f->res.figs.nfigs, 0);
}

/* ---- {lua} blocks and inline values --------------------------------------- */

static void test_lua_blocks(void **state)
{
    fx *f = *state;
    S_html(f, "```{lua}\nx = 21\n```\n\nValue `{lua} x * 2`, `{lua} 1/4`, `{lua} '<b>'`.\n",
           "<p>Value 42, 0.25, &lt;b&gt;.</p>\n");
    S_html(f, "```{lua}\n--| echo: true\ny = 1\n```\n",
           "<pre tabindex=\"0\"><code class=\"language-lua\">y = 1\n</code></pre>\n");
    S_html(f, "```{lua}\n--| eval: false\n--| echo: true\nerror('x')\n```\n",
           "<pre tabindex=\"0\"><code class=\"language-lua\">error('x')\n</code></pre>\n");
    S_html(f, "```lua\nerror('never')\n```\n",
           "<pre tabindex=\"0\"><code class=\"language-lua\">error('never')\n</code></pre>\n");
    S_html(f, "~~~ {lua}\nz = 3\n~~~\n\n`{lua} z`\n", "<p>3</p>\n");
}

static void test_lua_block_errors(void **state)
{
    fx *f = *state;
    assert_int_equal(S_md_at(f, "Intro\n\n```{lua}\nlocal a = 1\nerror('bad')\n```\n", 10, 1,
                             false),
                     -1);
    assert_int_equal(f->dl.n, 1);
    S_diag(f, 0, DIAG_ERROR, 14, 0, "in {lua} block: bad");
    assert_string_equal(buf_cstr(&f->res.html), "<p>Intro</p>\n");
    diag_list_free(&f->dl);

    assert_int_equal(S_md(f, "```{lua}\n--| fold: true\n--| echo: maybe\nx = 1\n```\n"), -1);
    assert_int_equal(f->dl.n, 2);
    S_diag(f, 0, DIAG_ERROR, 2, 1, "unknown cell option \"fold\" (known: echo, eval, output)");
    S_diag(f, 1, DIAG_ERROR, 3, 1, "cell option echo must be true or false, not \"maybe\"");
    diag_list_free(&f->dl);

    assert_int_equal(S_md(f, "A `{lua}` and `{lua} {}` and `{lua} nope()`\n"), -1);
    assert_int_equal(f->dl.n, 3);
    S_diag(f, 0, DIAG_ERROR, 1, 4, "`{lua}` needs an expression after it");
    S_diag(f, 1, DIAG_ERROR, 1, 16, "`{lua}` expression must give text or a number, not table");
    S_diag(f, 2, DIAG_ERROR, 1, 31,
           "in `{lua}`: attempt to call a nil value (global 'nope')");
}

/* ---- links ---------------------------------------------------------------- */

typedef struct {
    const char *target;
    int line, col;
} link_want;

static void test_links_rewritten(void **state)
{
    fx *f = *state;
    free(f->cfg.base_path);
    f->cfg.base_path = xstrdup("/docs");
    S_html(f,
           "[b](b.md#sec) [c](../notes/c.md) [frag](#x)\n"
           "[ext](https://x.org/a.md) [img](img.png) [abs](/about/)\n"
           "[q](b.md?x=1#s) [sp](my%20page.md) [mail](mailto:a@b.c) [pr](//cdn.x/y.md)\n"
           "![pic](../notes/pic.png) <https://auto.link/x.md> [dot](./b.md)\n",
           "<p><a href=\"/docs/articles/b/#sec\">b</a> <a href=\"/docs/notes/c/\">c</a> "
           "<a href=\"#x\">frag</a>\n"
           "<a href=\"https://x.org/a.md\">ext</a> <a href=\"/docs/articles/img.png\">img</a> "
           "<a href=\"/docs/about/\">abs</a>\n"
           "<a href=\"/docs/articles/b/?x=1#s\">q</a> <a href=\"/docs/articles/my%20page/\">sp</a> "
           "<a href=\"mailto:a@b.c\">mail</a> <a href=\"//cdn.x/y.md\">pr</a>\n"
           "<img src=\"/docs/notes/pic.png\" alt=\"pic\" /> "
           "<a href=\"https://auto.link/x.md\">https://auto.link/x.md</a> "
           "<a href=\"/docs/articles/b/\">dot</a></p>\n");
    static const link_want want[] = {
        {"/articles/b/#sec", 1, 1}, {"/notes/c/", 1, 15},        {"/articles/a/#x", 1, 34},
        {"/articles/img.png", 2, 27}, {"/about/", 2, 42},        {"/articles/b/#s", 3, 1},
        {"/articles/my page/", 3, 17}, {"/notes/pic.png", 4, 1}, {"/articles/b/", 4, 51},
    };
    assert_int_equal(f->res.nlinks, N(want));
    for (size_t i = 0; i < N(want); i++) {
        const md_link *l = &f->res.links[i];
        if (strcmp(l->target, want[i].target) != 0 || l->line != want[i].line ||
            l->col != want[i].col)
            fail_msg("link %zu: %s at %d:%d, expected %s at %d:%d", i, l->target, l->line, l->col,
                     want[i].target, want[i].line, want[i].col);
        assert_null(l->file);
    }
}

static void test_link_errors(void **state)
{
    fx *f = *state;
    assert_int_equal(S_md(f, "see [x](nope.md) and\n[y](../../x.png) [z](../../../a.md#f)\n"), -1);
    assert_int_equal(f->dl.n, 3);
    S_diag(f, 0, DIAG_ERROR, 1, 5, "broken link \"nope.md\": there is no page content/articles/nope.md");
    S_diag(f, 1, DIAG_ERROR, 2, 1, "link \"../../x.png\" leaves the site");
    S_diag(f, 2, DIAG_ERROR, 2, 18, "link \"../../../a.md#f\" leaves the site");
    assert_int_equal(f->res.nlinks, 0);
}

static void test_links_without_index(void **state)
{
    fx *f = *state;
    f->o.idx = NULL;
    S_html(f, "[b](b.md) [n](nope.md)\n",
           "<p><a href=\"b.md\">b</a> <a href=\"nope.md\">n</a></p>\n");
    assert_int_equal(f->res.nlinks, 0);
}

/* ---- summaries ------------------------------------------------------------ */

static void test_summary(void **state)
{
    fx *f = *state;
    assert_int_equal(S_md(f, "# Heading\n\nFirst `224 MiB {= " QWEN "}` para *em*\nwraps.\n\n"
                             "Second para.\n"),
                     0);
    assert_string_equal(f->res.summary, "First 224 MiB para em wraps.");
    assert_int_equal(S_md(f, "> quoted\n\n- item\n\nReal `code` first.\n"), 0);
    assert_string_equal(f->res.summary, "Real code first.");
    assert_int_equal(S_md(f, "# Only a heading\n"), 0);
    assert_null(f->res.summary);

    char text[1000];
    memset(text, 'a', 400);
    strcpy(text + 400, "\n");
    assert_int_equal(S_md(f, text), 0);
    assert_int_equal(strlen(f->res.summary), 300 + 3);
    assert_string_equal(f->res.summary + 300, "…");

    /* cut on a character boundary */
    strcpy(text, "x");
    for (int i = 0; i < 150; i++)
        strcat(text, "中");
    assert_int_equal(S_md(f, text), 0);
    assert_int_equal(strlen(f->res.summary), 1 + 99 * 3 + 3);
    assert_string_equal(f->res.summary + 298, "…");

    /* a summary already set (front matter) is kept */
    md_result_free(&f->res);
    md_result_init(&f->res);
    f->res.summary = xstrdup("preset");
    md_ctx *m = md_new(&f->o);
    assert_int_equal(md_render(m, NULL, FILE_A, "Body para.\n", 11, 1, 1, false, &f->res, &f->dl),
                     0);
    md_free(m);
    assert_string_equal(f->res.summary, "preset");
}

/* ---- positions ------------------------------------------------------------ */

static void test_positions_in_blocks(void **state)
{
    fx *f = *state;
    const char *text = "# Size `1 GB {= 2}`\n"
                       "\n"
                       "| a | b |\n"
                       "|---|---|\n"
                       "| x | `2 GB {= 3}` |\n"
                       "| `é` `3 GB {= 1}` | y |\n"
                       "\n"
                       "- item `4 GB {= 1}`\n"
                       "  - nested `5 GB {= 1}`\n"
                       "\n"
                       "> quote `6 GB {= 1}`\n"
                       "\n"
                       "Text **bold** `7 GB {= 1}` and [link `8 GB {= 1}`](b.md)\n"
                       "10. `9 GB {= 1}`\n";
    assert_int_equal(S_md_at(f, text, 20, 1, false), -1);
    static const int want[][2] = {{20, 9},  {24, 8},  {25, 9},  {27, 9},  {28, 13},
                                  {30, 10}, {32, 16}, {32, 39}, {33, 6}};
    assert_int_equal(f->dl.n, N(want));
    assert_int_equal(f->res.figs.nfigs, N(want));
    for (size_t i = 0; i < N(want); i++) {
        const diag *d = &f->dl.v[i];
        if (d->line != want[i][0] || d->col != want[i][1])
            fail_msg("figure %zu at %d:%d, expected %d:%d (%s)", i + 1, d->line, d->col,
                     want[i][0], want[i][1], d->msg);
        assert_int_equal(f->res.figs.figs[i].line, want[i][0]);
        assert_int_equal(f->res.figs.figs[i].col, want[i][1]);
    }
    /* figures inside table cells stay in their cells */
    S_has(f, "<td><span class=\"fig\" id=\"fig-2\" data-tier=\"computed\" data-status=\"fail\"");
    S_has(f, "<td><code>é</code> <span class=\"fig\"");
}

static void test_inline_mode(void **state)
{
    fx *f = *state;
    assert_int_equal(S_md_at(f, "Hello *x* & `224 MiB {= " QWEN "}`", 1, 1, true), 0);
    assert_string_equal(buf_cstr(&f->res.html),
                        "Hello <em>x</em> &amp; " QWEN_FIG("fig-1", "224 MiB"));
    assert_int_equal(S_md_at(f, "a\n\nb", 1, 1, true), 0);
    assert_string_equal(buf_cstr(&f->res.html), "<p>a</p>\n<p>b</p>\n");
    /* a front-matter string: positions start at its line and column */
    assert_int_equal(S_md_at(f, "Fast: `1 GB {= 2}`", 3, 8, true), -1);
    S_diag(f, 0, DIAG_ERROR, 3, 15, "quoted 1 GB, but 2 = 0.00 GB");
    diag_list_free(&f->dl);
    assert_int_equal(S_md_at(f, "x\n`1 GB {= 2}`", 3, 8, true), -1);
    assert_int_equal(f->dl.v[0].line, 4);
    assert_int_equal(f->dl.v[0].col, 2);
}

/* ---- the unverified-figure lint ------------------------------------------- */

static void test_lint_in_prose(void **state)
{
    fx *f = *state;
    const char *w1 = "unverified figure \"40 GB\": quote it as a figure (`40 GB {= EXPR}`) or "
                     "cite it (`40 GB {cite KEY}`)";
    const char *w2 = "unverified figure \"53.1%\": quote it as a figure (`53.1% {= EXPR}`) or "
                     "cite it (`53.1% {cite KEY}`)";
    assert_int_equal(S_md(f, "The cache takes 40 GB and 53.1% of it.\n\n"
                             "Qwen2.5-7B in `40 GB` of code, `224 MiB {= " QWEN "}`.\n"),
                     0);
    assert_int_equal(f->dl.n, 2);
    S_diag(f, 0, DIAG_WARNING, 1, 17, w1);
    S_diag(f, 1, DIAG_WARNING, 1, 27, w2);
    diag_list_free(&f->dl);

    f->o.unverified = DIAG_ERROR;
    assert_int_equal(S_md_at(f, "\n- item: 40 GB\n", 5, 1, false), -1);
    S_diag(f, 0, DIAG_ERROR, 6, 9, w1);
}

static void test_lint_column_after_entities(void **state)
{
    fx *f = *state;
    /* the column is the byte in the file, whatever cmark decoded before it */
    assert_int_equal(S_md(f, "Tom &amp; Jerry use 40 GB.\n"), 0);
    S_diag(f, 0, DIAG_WARNING, 1, 21,
           "unverified figure \"40 GB\": quote it as a figure (`40 GB {= EXPR}`) or cite it "
           "(`40 GB {cite KEY}`)");
}

/* The lint finds each figure on its source line from the line of the one
 * before (one pass over the page, not one per figure): right on every line,
 * and again for the next page read into the same buffer, whose lines are
 * not the last page's (regression: the walk restarted at the top for every
 * figure, quadratic in a page's lines). */
static void test_lint_columns_line_after_line(void **state)
{
    fx *f = *state;
    md_ctx *m = md_new(&f->o);
    char text[8192];
    for (int round = 0; round < 2; round++) {
        /* the second page's figures start further down than the first
         * page's last one, on lines of other lengths: a walk kept from the
         * first page would land on the wrong bytes */
        buf b = BUF_INIT;
        const char *prefix = round ? "" : "A &lt; ";
        int plain = round ? 100 : 0, lines = round ? 40 : 30;
        for (int l = 1; l <= plain; l++)
            buf_puts(&b, "Words.\n\n");
        for (int l = 1; l <= lines; l++)
            buf_printf(&b, "%sline %d: &amp; 40 GB\n\n", prefix, l);
        assert_true(b.len < sizeof text);
        memcpy(text, b.ptr, b.len + 1);
        md_result_free(&f->res);
        md_result_init(&f->res);
        diag_list_free(&f->dl);
        assert_int_equal(md_render(m, NULL, FILE_A, text, b.len, 1, 1, false, &f->res, &f->dl), 0);
        assert_int_equal(f->dl.n, (size_t)lines);
        /* the walk stopped at the last figure's line, once */
        assert_int_equal(f->res.figs.md_at_line, 2 * (plain + lines) - 1);
        for (int l = 1; l <= lines; l++) {
            const diag *d = &f->dl.v[l - 1];
            char at[64];
            snprintf(at, sizeof at, "%sline %d: &amp; ", prefix, l);
            assert_int_equal(d->line, 2 * (plain + l) - 1);
            assert_int_equal(d->col, (int)strlen(at) + 1);
        }
        buf_free(&b);
    }
    md_free(m);
}

/* A page's run of raw HTML or unverified figures past the first few is one
 * warning at the first not listed (a page of 3,000 tags printed 3,000
 * lines and held them all in memory, five copies over); --strict, or the
 * lint at the error level: every one. */
static void test_lint_and_raw_html_fold(void **state)
{
    fx *f = *state;
    buf b = BUF_INIT;
    for (int l = 1; l <= 15; l++)
        buf_printf(&b, "Row %d <b>x</b> takes 40 GB.\n\n", l);
    f->o.fold_lints = true;
    assert_int_equal(S_md(f, buf_cstr(&b)), 0);
    /* per row: two tags and a figure; each run folded after its first ten */
    assert_int_equal(f->dl.n, 2 * (DIAG_FOLD_SHOWN + 1));
    assert_int_equal(f->dl.warnings, 2 * (DIAG_FOLD_SHOWN + 1));
    int raw = 0, figs = 0;
    const diag *raw_more = NULL, *fig_more = NULL;
    for (size_t i = 0; i < f->dl.n; i++) {
        const diag *d = &f->dl.v[i];
        if (strstr(d->msg, "places of raw HTML"))
            raw_more = d;
        else if (strstr(d->msg, "more unverified figures"))
            fig_more = d;
        else if (strstr(d->msg, "raw HTML is not emitted"))
            raw++;
        else if (strstr(d->msg, "unverified figure \"40 GB\""))
            figs++;
    }
    assert_int_equal(raw, DIAG_FOLD_SHOWN);
    assert_int_equal(figs, DIAG_FOLD_SHOWN);
    assert_non_null(raw_more);
    assert_non_null(fig_more);
    /* the 11th tag: row 6's first, column 7 */
    assert_int_equal(raw_more->line, 11);
    assert_int_equal(raw_more->col, 7);
    assert_string_equal(raw_more->msg, "20 more places of raw HTML in this file, from here to "
                                       "line 29 (not listed one by one)");
    assert_int_equal(fig_more->line, 21);
    assert_int_equal(fig_more->col, 23); /* "Row 11 <b>x</b> takes " */
    assert_string_equal(fig_more->msg, "5 more unverified figures in this file, from here to "
                                       "line 29 (not listed one by one)");
    diag_list_free(&f->dl);

    /* --strict: no fold */
    f->o.fold_lints = false;
    assert_int_equal(S_md(f, buf_cstr(&b)), 0);
    assert_int_equal(f->dl.n, 45);
    diag_list_free(&f->dl);

    /* the lint at the error level (figures.unverified: error): its errors
     * are all listed, the raw HTML warnings still folded */
    f->o.fold_lints = true;
    f->o.unverified = DIAG_ERROR;
    assert_int_equal(S_md(f, buf_cstr(&b)), -1);
    assert_int_equal(f->dl.errors, 15);
    assert_int_equal(f->dl.warnings, DIAG_FOLD_SHOWN + 1);
    buf_free(&b);
}

/* ---- raw HTML and URLs ---------------------------------------------------- */

static void test_raw_html(void **state)
{
    fx *f = *state;
    assert_int_equal(S_md(f, "<b>x</b>\n\n<div>\nblock\n</div>\n"), 0);
    assert_string_equal(buf_cstr(&f->res.html),
                        "<p><!-- raw HTML omitted -->x<!-- raw HTML omitted --></p>\n"
                        "<!-- raw HTML omitted -->\n");
    assert_int_equal(f->dl.warnings, 3);
    S_diag(f, 0, DIAG_WARNING, 1, 1,
           "raw HTML is not emitted (set markdown.unsafe: true in site.yaml to allow it)");
    assert_int_equal(f->dl.v[1].col, 5);
    assert_int_equal(f->dl.v[2].line, 3);
    diag_list_free(&f->dl);

    S_html(f, "[x](javascript:alert(1)) [y](JavaScript:x) ![i](data:image/png;base64,AA==)\n",
           "<p><a href=\"\">x</a> <a href=\"\">y</a> "
           "<img src=\"data:image/png;base64,AA==\" alt=\"i\" /></p>\n");

    f->o.unsafe = true;
    S_html(f, "<b>x</b> <script>alert(1)</script>\n",
           "<p><b>x</b> &lt;script>alert(1)&lt;/script></p>\n");
    /* regression: markdown.unsafe kept script links; they are dropped in
     * both modes (raw HTML is the author's choice, these links never) */
    S_html(f, "[x](javascript:alert(1)) [y](<java\tscript:x>) [v](VBScript:x) "
              "![i](data:text/html,x) [d](data:image/png;base64,AA==) [f](ftp://a/)\n",
           "<p><a href=\"\">x</a> <a href=\"\">y</a> <a href=\"\">v</a> "
           "<img src=\"\" alt=\"i\" /> <a href=\"data:image/png;base64,AA==\">d</a> "
           "<a href=\"ftp://a/\">f</a></p>\n");
}

/* A site's pages (page_markup) get footnotes, alignment as style= and
 * highlighted code; without it (kvsite render) cmark-gfm's own output. */
static void test_page_markup(void **state)
{
    fx *f = *state;
    const char *md = "A[^n].\n\n| a | b |\n|--:|:-:|\n| 1 | 2 |\n\n[^n]: Note.\n\n"
                     "```lua\nlocal x\n```\n\n```cobol\nMOVE\n```\n";
    S_html(f, md,
           /* a link reference definition when footnotes are off */
           "<p>A<a href=\"/articles/Note.\">^n</a>.</p>\n<table tabindex=\"0\">\n<thead>\n<tr>\n"
           "<th align=\"right\">a</th>\n"
           "<th align=\"center\">b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n"
           "<td align=\"right\">1</td>\n<td align=\"center\">2</td>\n</tr>\n</tbody>\n"
           "</table>\n<pre tabindex=\"0\"><code class=\"language-lua\">local x\n"
           "</code></pre>\n<pre tabindex=\"0\"><code class=\"language-cobol\">MOVE\n</code></pre>\n");
    f->o.page_markup = true;
    S_html(f, md,
           "<p>A<sup class=\"footnote-ref\"><a href=\"#fn-n\" id=\"fnref-n\" "
           "data-footnote-ref>1</a></sup>.</p>\n<table tabindex=\"0\">\n<thead>\n<tr>\n"
           "<th style=\"text-align: right\">a</th>\n<th style=\"text-align: center\">b</th>\n"
           "</tr>\n</thead>\n<tbody>\n<tr>\n<td style=\"text-align: right\">1</td>\n"
           "<td style=\"text-align: center\">2</td>\n</tr>\n</tbody>\n</table>\n"
           "<pre tabindex=\"0\"><code class=\"language-lua\"><span class=\"hl-keyword\">local</span> x\n"
           "</code></pre>\n<pre tabindex=\"0\"><code class=\"language-cobol\">MOVE\n</code></pre>\n"
           "<section class=\"footnotes\" data-footnotes>\n<ol>\n<li id=\"fn-n\">\n"
           "<p>Note. <a href=\"#fnref-n\" class=\"footnote-backref\" data-footnote-backref "
           "aria-label=\"Back to content\">↩</a></p>\n</li>\n</ol>\n</section>\n");
}

/* Site builds (anchor_label) end h2-h4 with a permalink named in the page's
 * language; h1, h5 and h6 have none, nor has a page without heading ids, and
 * the table of contents keeps the headings' own text. */
static void test_heading_anchors(void **state)
{
    fx *f = *state;
    f->o.sb = NULL;
    const char *md = "# Top\n\n## A & B\n\n#### Four *x*\n\n##### Five\n";
    S_html(f, md,
           "<h1 id=\"top\">Top</h1>\n<h2 id=\"a-b\">A &amp; B</h2>\n"
           "<h4 id=\"four-x\">Four <em>x</em></h4>\n<h5 id=\"five\">Five</h5>\n");
    f->o.anchor_label = "Link to \"this\"";
    S_html(f, md,
           "<h1 id=\"top\">Top</h1>\n"
           "<h2 id=\"a-b\">A &amp; B<a class=\"anchor\" href=\"#a-b\" "
           "aria-label=\"Link to &quot;this&quot;\" data-pagefind-ignore>#</a></h2>\n"
           "<h4 id=\"four-x\">Four <em>x</em><a class=\"anchor\" href=\"#four-x\" "
           "aria-label=\"Link to &quot;this&quot;\" data-pagefind-ignore>#</a></h4>\n"
           "<h5 id=\"five\">Five</h5>\n");
    assert_int_equal(f->res.ntoc, 4);
    assert_string_equal(f->res.toc[1].text, "A & B");
    assert_string_equal(f->res.toc[2].text, "Four x");
    f->o.heading_ids = false;
    S_html(f, "## Plain\n", "<h2>Plain</h2>\n");
}

#define T(f) cmocka_unit_test_setup_teardown(f, S_setup, S_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_plain_markdown),
        T(test_bad_bytes),
        T(test_heading_ids_unique),
        T(test_heading_with_figure),
        T(test_figure_span),
        T(test_failing_figure),
        T(test_figure_quote_escaped),
        T(test_cited_figure),
        T(test_measured_figure),
        T(test_figure_in_link),
        T(test_escaped_span),
        T(test_lua_blocks),
        T(test_lua_block_errors),
        T(test_links_rewritten),
        T(test_link_errors),
        T(test_links_without_index),
        T(test_summary),
        T(test_positions_in_blocks),
        T(test_inline_mode),
        T(test_lint_in_prose),
        T(test_lint_column_after_entities),
        T(test_lint_columns_line_after_line),
        T(test_lint_and_raw_html_fold),
        T(test_raw_html),
        T(test_page_markup),
        T(test_heading_anchors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
