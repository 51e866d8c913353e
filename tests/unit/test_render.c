/* Unit tests for gen/render.c: real jobs of a tiny site in a temporary
 * folder, rendered through render_new / render_job with a render_env made as
 * build.c makes one (S_load, S_plan, S_render: config, content index,
 * sources, records, job phases, every phase after the one before), in this
 * process instead of the worker pool. Checked: the bytes of the files the
 * jobs write, figures that pass and fail, template lookup (front matter,
 * the section's page_template:, templates/<section>/page.html, page.html),
 * missing templates, and render_fragment (kvsite render). */
#include <cmark-gfm-core-extensions.h>
#include <fcntl.h>
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

#include "tmpdir.h"

#include "buf.h"
#include "config.h"
#include "content.h"
#include "diag.h"
#include "fsutil.h"
#include "jobs.h"
#include "record.h"
#include "render.h"
#include "sources.h"

/* ---------- the site ---------- */


/* Every template names itself first, so a test sees which one a page got. */
static void S_site(const char *dir)
{
    tmpdir_put(dir, "site.yaml", "title: Tiny\nbase_url: https://example.org/\n");
    tmpdir_put(dir, "templates/page.html",
          "<!-- page.html -->\n<title>{{ page.title }}</title>\n{{{ page.content }}}\n");
    tmpdir_put(dir, "templates/special.html", "<!-- special.html -->\n{{ page.title }}\n");
    tmpdir_put(dir, "templates/doc.html", "<!-- doc.html -->\n{{ page.title }}\n");
    tmpdir_put(dir, "templates/guides/page.html", "<!-- guides/page.html -->\n{{ page.title }}\n");
    tmpdir_put(dir, "templates/section.html",
          "<!-- section.html -->\n<h1>{{ page.title }}</h1>\n"
          "{% for _, p in ipairs(page.pages) do %}\n<li>{{ p.title }}</li>\n{% end %}\n");
    tmpdir_put(dir, "templates/home.html", "<!-- home.html -->\n<h1>{{ site.title }}</h1>\n");
    tmpdir_put(dir, "templates/tag.html",
          "<!-- tag.html -->\n<h1>{{ page.tag }}</h1>\n"
          "{% for _, p in ipairs(page.pages) do %}\n<li>{{ p.title }}</li>\n{% end %}\n");
    tmpdir_put(dir, "templates/tags.html", "<!-- tags.html -->\n{{ page.title }}\n");
    tmpdir_put(dir, "templates/checks.html",
          "<!-- checks.html -->\n"
          "{% for _, f in ipairs(site.figures.list) do %}\n<p id=\"{{ f.anchor }}\">{{ f.quote }}</p>\n{% end %}\n");
    tmpdir_put(dir, "templates/404.html", "<!-- 404.html -->\nnot here\n");
    tmpdir_put(dir, "content/_index.md", "---\ntitle: Home\n---\nWelcome.\n");
    tmpdir_put(dir, "content/notes/_index.md", "---\ntitle: Notes\n---\n");
    tmpdir_put(dir, "content/notes/kv.md",
          "---\ntitle: KV cache\ndate: 2024-01-02\ntags: [memory]\n---\n"
          "The cache holds `4 {= 2+2}` blocks.\n");
    tmpdir_put(dir, "content/notes/odd.md",
          "---\ntitle: Odd\ntemplate: special.html\n---\nOdd one.\n");
    tmpdir_put(dir, "content/guides/start.md", "---\ntitle: Start\n---\nStart here.\n");
    tmpdir_put(dir, "content/docs/_index.md", "---\ntitle: Docs\npage_template: doc.html\n---\n");
    tmpdir_put(dir, "content/docs/api.md", "---\ntitle: API\n---\nThe API.\n");
}

/* ---------- a build's render_env, as build.c makes it ---------- */

typedef struct {
    char *root, *out;
    config cfg;
    content_index idx;
    sources src;
    diag_list dl;   /* loading's */
    render_env env;
    page_record *records;
    size_t njobs;
    unsigned char *phases;
} site;

static void S_load(site *s, const char *root)
{
    memset(s, 0, sizeof *s);
    s->root = xstrdup(root);
    s->out = xasprintf("%s/out", root);
    assert_int_equal(fs_mkdir_p(s->out), 0);
    diag_list_init(&s->dl);
    config_defaults(&s->cfg);
    assert_int_equal(config_load(&s->cfg, root, &s->dl), 0);
    cmark_gfm_core_extensions_ensure_registered();
    content_opts copts = {.threads = 1};
    assert_int_equal(content_load(&s->idx, root, &s->cfg, &copts, &s->dl), 0);
    sources_load(&s->src, root, s->cfg.limits.data_bytes, &s->dl);
    assert_int_equal(s->dl.errors, 0);
    s->env = (render_env){.root = root, .dest = {.dir = s->out}, .cfg = &s->cfg, .idx = &s->idx,
                          .src = &s->src};
    s->njobs = render_job_count(&s->env);
    s->records = xcalloc(s->njobs, sizeof *s->records);
    for (size_t j = 0; j < s->njobs; j++)
        record_init(&s->records[j]);
    s->env.records = s->records;
    s->env.nrecords = s->njobs;
    s->phases = render_job_phases(&s->env);
    s->env.job_phases = s->phases;
}

/* Every job, phase by phase, on one renderer (a worker of the pool). */
static void S_render_all(site *s)
{
    renderer *r = render_new(&s->env);
    assert_non_null(r);
    for (int phase = 1; phase <= 4; phase++)
        for (size_t j = 0; j < s->njobs; j++)
            if (s->phases[j] == phase)
                render_job(r, j, &s->records[j]);
    render_free(r);
}

static void S_free(site *s)
{
    for (size_t j = 0; j < s->njobs; j++)
        record_free(&s->records[j]);
    free(s->records);
    free(s->phases);
    content_index_free(&s->idx);
    sources_free(&s->src);
    config_free(&s->cfg);
    diag_list_free(&s->dl);
    free(s->out);
    free(s->root);
}

/* The job of the page at src. */
static size_t S_job_of(const site *s, const char *src)
{
    for (size_t j = 0; j < s->idx.npages; j++)
        if (s->idx.pages[j]->src && strcmp(s->idx.pages[j]->src, src) == 0)
            return j;
    fail_msg("no page %s", src);
    return 0;
}

/* The first job of a kind. */
static size_t S_job_kind(const site *s, job_kind k)
{
    for (size_t j = 0; j < s->njobs; j++) {
        size_t index;
        if (render_job_kind(&s->env, j, &index) == k)
            return j;
    }
    fail_msg("no job of kind %d", (int)k);
    return 0;
}

/* An output file's bytes (malloc'ed), or NULL when it was not written. */
static char *S_out(const site *s, const char *rel)
{
    char *p = xasprintf("%s/%s", s->out, rel);
    buf b = BUF_INIT;
    int rc = fs_read_file(p, 1 << 20, &b);
    free(p);
    if (rc != FS_OK) {
        buf_free(&b);
        return NULL;
    }
    return buf_detach(&b);
}

static void S_dump_diags(const page_record *rec)
{
    for (size_t k = 0; k < rec->diags.n; k++)
        print_message("diag: %s:%d:%d: %s\n", rec->diags.v[k].file ? rec->diags.v[k].file : "-",
                      rec->diags.v[k].line, rec->diags.v[k].col, rec->diags.v[k].msg);
}

static int S_setup(void **state)
{
    char *dir = strdup("/tmp/kvsite-test-render-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    S_site(dir);
    *state = dir;
    return 0;
}

static int S_teardown(void **state)
{
    fs_remove_tree(*state);
    free(*state);
    return 0;
}

/* ---------- tests ---------- */

static void S_no_diags(const site *s)
{
    for (size_t j = 0; j < s->njobs; j++) {
        S_dump_diags(&s->records[j]);
        assert_int_equal(s->records[j].diags.n, 0);
    }
}

static void S_out_is(const site *s, const char *rel, const char *want)
{
    char *got = S_out(s, rel);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void S_out_has(const site *s, const char *rel, const char *want)
{
    char *got = S_out(s, rel);
    assert_non_null(got);
    if (!strstr(got, want))
        fail_msg("%s: no \"%s\" in:\n%s", rel, want, got);
    free(got);
}

/* Every job of the site: the files and records they leave. */
static void test_jobs(void **state)
{
    site s;
    S_load(&s, *state);
    S_render_all(&s);
    S_no_diags(&s);
    /* a page: its title and content through page.html, the figure as its span */
    S_out_is(&s, "notes/kv/index.html",
             "<!-- page.html -->\n<title>KV cache</title>\n"
             "<p>The cache holds <span class=\"fig\" id=\"notes-kv-1\" data-tier=\"computed\">"
             "<button type=\"button\" class=\"fig-q\" popovertarget=\"notes-kv-1-d\" "
             "aria-describedby=\"notes-kv-1-d\">4</button><span class=\"fig-pop\" popover "
             "id=\"notes-kv-1-d\"><span class=\"fig-tier\">Computed: recomputed from its expression at "
             "build time</span><span class=\"fig-row fig-quote\">4</span><span class=\"fig-row\"><span "
             "class=\"fig-k\">Expression</span> <code>2+2</code></span><span class=\"fig-row\"><span "
             "class=\"fig-k\">Value</span> 4</span><a class=\"fig-report\" href=\"/checks/#notes-kv-1\">"
             "Its row in the checks report →</a></span></span> blocks.</p>\n\n");
    const page_record *kv = &s.records[S_job_of(&s, "content/notes/kv.md")];
    assert_true(kv->done);
    assert_string_equal(kv->url, "/notes/kv/");
    assert_string_equal(kv->src, "content/notes/kv.md");
    assert_int_equal(kv->nfigs, 1);
    assert_int_equal(kv->figs[0].tier, FIG_COMPUTED);
    assert_true(kv->out_bytes > 0);
    /* home, a section listing its pages, the tags, the report, 404 */
    S_out_is(&s, "index.html", "<!-- home.html -->\n<h1>Tiny</h1>\n");
    S_out_has(&s, "notes/index.html", "<!-- section.html -->\n<h1>Notes</h1>\n");
    S_out_has(&s, "notes/index.html", "<li>KV cache</li>\n");
    S_out_has(&s, "notes/index.html", "<li>Odd</li>\n");
    S_out_is(&s, "tags/memory/index.html",
             "<!-- tag.html -->\n<h1>memory</h1>\n<li>KV cache</li>\n");
    S_out_is(&s, "tags/index.html", "<!-- tags.html -->\nTags\n");
    S_out_is(&s, "checks/index.html", "<!-- checks.html -->\n<p id=\"notes-kv-1\">4</p>\n");
    S_out_is(&s, "404.html", "<!-- 404.html -->\nnot here\n");
    S_out_has(&s, "checks.json", "2+2");
    /* no checks/sources.yaml: the sources page is not made */
    const page_record *src = &s.records[S_job_kind(&s, JOB_SOURCES)];
    assert_true(src->done);
    assert_string_equal(src->url, "");
    assert_int_equal(src->out_bytes, 0);
    char *none = S_out(&s, "sources/index.html");
    assert_null(none);
    S_free(&s);
}

/* The diagnostic of a record that says `has`, or a failure. */
static const diag *S_diag(const page_record *rec, const char *has)
{
    for (size_t k = 0; k < rec->diags.n; k++)
        if (strstr(rec->diags.v[k].msg, has))
            return &rec->diags.v[k];
    S_dump_diags(rec);
    fail_msg("no diagnostic with \"%s\"", has);
    return NULL;
}

/* Front matter's template: first; then the section's page_template: (when
 * that template exists), or templates/<section>/page.html; then page.html.
 * Section pages: <section>/section.html, then section.html. */
static void test_template_lookup(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "content/guides/own.md", "---\ntitle: Own\ntemplate: special.html\n---\nx\n");
    tmpdir_put(dir, "content/docs/own.md", "---\ntitle: Own doc\ntemplate: special.html\n---\nx\n");
    tmpdir_put(dir, "content/lost/_index.md", "---\ntitle: Lost\npage_template: gone.html\n---\n");
    tmpdir_put(dir, "content/lost/p.md", "---\ntitle: P\n---\nx\n");
    tmpdir_put(dir, "templates/notes/section.html", "<!-- notes/section.html -->\n{{ page.title }}\n");
    site s;
    S_load(&s, dir);
    S_render_all(&s);
    S_no_diags(&s);
    S_out_is(&s, "notes/odd/index.html", "<!-- special.html -->\nOdd\n");
    S_out_is(&s, "guides/own/index.html", "<!-- special.html -->\nOwn\n");
    S_out_is(&s, "docs/own/index.html", "<!-- special.html -->\nOwn doc\n");
    S_out_is(&s, "docs/api/index.html", "<!-- doc.html -->\nAPI\n");
    S_out_is(&s, "guides/start/index.html", "<!-- guides/page.html -->\nStart\n");
    S_out_has(&s, "notes/kv/index.html", "<!-- page.html -->\n");
    S_out_has(&s, "lost/p/index.html", "<!-- page.html -->\n"); /* page_template: missing */
    S_out_is(&s, "notes/index.html", "<!-- notes/section.html -->\nNotes\n");
    S_out_has(&s, "guides/index.html", "<!-- section.html -->\n<h1>Guides</h1>\n");
    S_free(&s);
}

/* A figure that disagrees: an error at the figure's file:line:col, and the
 * page is still written with the figure marked. */
static void test_failing_figure(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "content/notes/bad.md",
          "---\ntitle: Bad\n---\nFirst line.\n\nIt holds `5 {= 2+2}` blocks.\n");
    site s;
    S_load(&s, dir);
    S_render_all(&s);
    const page_record *rec = &s.records[S_job_of(&s, "content/notes/bad.md")];
    assert_int_equal(rec->diags.errors, 1);
    const diag *d = &rec->diags.v[0];
    assert_int_equal(d->level, DIAG_ERROR);
    assert_string_equal(d->file, "content/notes/bad.md");
    assert_int_equal(d->line, 6);
    assert_int_equal(d->col, 11); /* the quote, inside the backticks */
    assert_string_equal(d->msg, "quoted 5, but 2+2 = 4.00");
    assert_int_equal(rec->nfigs, 1);
    S_out_has(&s, "notes/bad/index.html",
              "<p>It holds <span class=\"fig\" id=\"notes-bad-1\" data-tier=\"computed\" "
              "data-status=\"fail\"><button");
    S_out_has(&s, "notes/bad/index.html",
              "<span class=\"fig-k\">Fails</span> quoted 5, but 2+2 = 4.00</span>");
    /* the other pages are not touched by it */
    assert_int_equal(s.records[S_job_of(&s, "content/notes/kv.md")].diags.n, 0);
    S_free(&s);
}

/* Pages run unmetered and a page whose Lua may have run long is cut and
 * rendered again with its instructions counted (sandbox.h): what it leaves
 * is what a metered render leaves. A budget of 2e7 instructions: the fuse
 * blows after 1 ms of CPU time; 1.2e7 instructions take far longer. */
static void test_cut_page_rendered_again(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "site.yaml",
               "title: Tiny\nbase_url: https://example.org/\nlimits:\n  lua_instructions: 20000000\n");
    tmpdir_put(dir, "content/notes/long.md",
               "---\ntitle: Long\n---\n```{lua}\nlocal s = 0\nfor i = 1, 6000000 do s = s + 1 end\n"
               "n = s\n```\n\nIt counted `6000000 {= n}` steps.\n");
    tmpdir_put(dir, "content/notes/endless.md",
               "---\ntitle: Endless\n---\nBefore.\n\n```{lua}\nwhile true do end\n```\n");
    site s;
    S_load(&s, dir);
    renderer *r = render_new(&s.env);
    assert_non_null(r);
    size_t long_job = S_job_of(&s, "content/notes/long.md");
    size_t endless_job = S_job_of(&s, "content/notes/endless.md");
    render_job(r, long_job, &s.records[long_job]);
    assert_int_equal(render_reruns(r), 1);
    render_job(r, S_job_of(&s, "content/notes/kv.md"), &s.records[S_job_of(&s, "content/notes/kv.md")]);
    assert_int_equal(render_reruns(r), 1); /* a short page is not */
    render_job(r, endless_job, &s.records[endless_job]);
    assert_int_equal(render_reruns(r), 2);
    render_free(r);
    const page_record *rec = &s.records[long_job];
    S_dump_diags(rec);
    assert_int_equal(rec->diags.n, 0);
    assert_int_equal(rec->nfigs, 1);
    assert_true(rec->figs[0].ok);
    assert_int_equal(rec->nreads, 0);
    S_out_has(&s, "notes/long/index.html", "<title>Long</title>");
    S_out_has(&s, "notes/long/index.html", "steps.</p>");
    /* the endless page: the budget's error, once, where metered pages have it */
    rec = &s.records[endless_job];
    assert_int_equal(rec->diags.errors, 1);
    assert_string_equal(rec->diags.v[0].file, "content/notes/endless.md");
    assert_int_equal(rec->diags.v[0].line, 7);
    assert_string_equal(rec->diags.v[0].msg,
                        "in {lua} block: instruction budget exceeded "
                        "(limits.lua_instructions = 20000000)");
    S_free(&s);
}

/* include_cached: a reused output's reads are every page's that shows it
 * (here each section lists every page: their records are read); an output
 * that read the page's own front matter is not reused, and its key counts
 * as read (no warning). */
static void test_include_cached_reads(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "templates/partials/all.html",
               "{% for _, p in ipairs(site.pages) do %}<li>{{ p.title }}: {{ p.summary }}</li>{% end %}\n");
    tmpdir_put(dir, "templates/section.html",
               "<!-- section.html -->\n{{ include_cached('partials/all.html', 'all') }}");
    tmpdir_put(dir, "templates/partials/mood.html", "<p>{{ page.params.mood }}</p>\n");
    tmpdir_put(dir, "templates/moods/page.html",
               "<!-- moods/page.html -->\n{{ include_cached('partials/mood.html', 'same') }}");
    tmpdir_put(dir, "content/moods/happy.md", "---\ntitle: Happy\nmood: happy\n---\nSmile.\n");
    tmpdir_put(dir, "content/moods/sad.md", "---\ntitle: Sad\nmood: sad\n---\nFrown.\n");
    site s;
    S_load(&s, dir);
    S_render_all(&s);
    S_no_diags(&s);
    S_out_is(&s, "moods/happy/index.html", "<!-- moods/page.html -->\n<p>happy</p>\n");
    S_out_is(&s, "moods/sad/index.html", "<!-- moods/page.html -->\n<p>sad</p>\n");
    char *notes = S_out(&s, "notes/index.html");
    assert_non_null(notes);
    assert_non_null(strstr(notes, "<li>Happy: Smile.</li>"));
    const page_record *a = &s.records[S_job_of(&s, "content/notes/_index.md")];
    const page_record *b = &s.records[S_job_of(&s, "content/docs/_index.md")];
    assert_true(a->nreads > 2);
    assert_int_equal(a->nreads, b->nreads);
    assert_memory_equal(a->reads, b->reads, a->nreads * sizeof *a->reads);
    char *docs = S_out(&s, "docs/index.html");
    assert_string_equal(docs, notes);
    free(docs);
    free(notes);
    S_free(&s);
}

/* Missing templates: front matter's names its line and column; a generated
 * page's names the template it needs; a template that fails names its line. */
static void test_missing_template(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "content/notes/lost.md", "---\ntitle: Lost\ntemplate: nosuch.html\n---\nx\n");
    tmpdir_put(dir, "templates/guides/page.html", "<!-- guides/page.html -->\n{{ page.nosuch.x }}\n");
    char *tag_tpl = xasprintf("%s/templates/tag.html", dir);
    assert_int_equal(unlink(tag_tpl), 0);
    free(tag_tpl);
    site s;
    S_load(&s, dir);
    S_render_all(&s);
    const page_record *lost = &s.records[S_job_of(&s, "content/notes/lost.md")];
    const diag *d = S_diag(lost, "template \"nosuch.html\" not found in templates/");
    assert_int_equal(d->level, DIAG_ERROR);
    assert_string_equal(d->file, "content/notes/lost.md");
    assert_int_equal(d->line, 3);
    assert_int_equal(d->col, 11);
    char *none = S_out(&s, "notes/lost/index.html");
    assert_null(none);
    const page_record *t = &s.records[S_job_kind(&s, JOB_TAG)];
    d = S_diag(t, "template templates/tag.html not found");
    assert_string_equal(d->file, "templates/tag.html");
    none = S_out(&s, "tags/memory/index.html");
    assert_null(none);
    const page_record *start = &s.records[S_job_of(&s, "content/guides/start.md")];
    assert_int_equal(start->diags.errors, 1);
    d = &start->diags.v[0];
    assert_string_equal(d->file, "templates/guides/page.html");
    assert_int_equal(d->line, 2);
    none = S_out(&s, "guides/start/index.html");
    assert_null(none);
    S_free(&s);
}

/* asset_url names a stylesheet's fingerprinted copy and makes its source an
 * input of the page (an incremental build renders the page again when it
 * changes); an asset the build did not fingerprint is an error at the call.
 * A site's pages get heading permalinks named in the site's language. */
static void test_asset_url_and_anchors(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "site.yaml", "title: Tiny\nbase_url: https://example.org/docs/\nlanguage: zh-CN\n");
    tmpdir_put(dir, "templates/special.html",
               "<link href=\"{{ asset_url(\"/assets/style.css\") }}\">{{{ page.content }}}\n"
               "{% local _ = asset_url(\"/assets/theme.js\") %}");
    tmpdir_put(dir, "templates/doc.html", "{{ asset_url(\"/assets/logo.svg\") }}\n");
    tmpdir_put(dir, "templates/guides/page.html", "{{ asset_url(\"assets/gone.css\") }}\n");
    tmpdir_put(dir, "content/notes/odd.md",
               "---\ntitle: Odd\ntemplate: special.html\n---\n## Part one\n");
    fingerprints fps;
    fingerprints_init(&fps);
    buf b = BUF_INIT;
    buf_puts(&b, "body { color: red }");
    const fingerprint *fp = fingerprints_add(&fps, "/assets/style.css", "templates/assets/style.css", NULL, &b);
    buf_puts(&b, "let x");
    fingerprints_add(&fps, "/assets/theme.js", "theme/assets/theme.js", "templates/assets/theme.js", &b);
    site s;
    S_load(&s, dir);
    s.env.fingerprints = &fps;
    S_render_all(&s);
    char *want = xasprintf("<link href=\"/docs%s\"><h2 id=\"part-one\">Part one<a class=\"anchor\" "
                           "href=\"#part-one\" aria-label=\"本节链接\" data-pagefind-ignore>#</a>"
                           "</h2>\n\n", fp->hashed);
    S_out_is(&s, "notes/odd/index.html", want);
    free(want);
    const page_record *odd = &s.records[S_job_of(&s, "content/notes/odd.md")];
    /* the site's stylesheet; the theme's script and the site's file that would replace it */
    int noted = 0;
    for (const char *p = odd->inputs; p < odd->inputs + odd->inputs_len; p += strlen(p) + 1)
        noted |= (!strcmp(p, "templates/assets/style.css") ? 1 : 0) |
                 (!strcmp(p, "theme/assets/theme.js") ? 2 : 0) |
                 (!strcmp(p, "templates/assets/theme.js") ? 4 : 0);
    assert_int_equal(noted, 7);
    S_diag(&s.records[S_job_of(&s, "content/docs/api.md")],
           "asset_url \"/assets/logo.svg\": only stylesheets and scripts");
    S_diag(&s.records[S_job_of(&s, "content/guides/start.md")],
           "asset_url \"assets/gone.css\": no such file");
    S_free(&s);
    fingerprints_free(&fps);
}

/* kvsite render: Markdown to HTML without a site; raw HTML only when unsafe,
 * and figures stay code (there is no Lua to check them). */
static void test_fragment(void **state)
{
    (void)state;
    const char *md = "# Hi\n\nSome *text* and <b>raw</b>.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                     "`4 {= 2+2}`\n";
    const char *table = "<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n"
                        "<tbody>\n<tr>\n<td>1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>\n";
    diag_list dl;
    diag_list_init(&dl);
    buf out = BUF_INIT;
    assert_int_equal(render_fragment(md, strlen(md), false, &out, &dl), 0);
    char *want = xasprintf("<h1 id=\"hi\">Hi</h1>\n<p>Some <em>text</em> and <!-- raw HTML "
                           "omitted -->raw<!-- raw HTML omitted -->.</p>\n%s"
                           "<p><code>4 {= 2+2}</code></p>\n", table);
    assert_string_equal(buf_cstr(&out), want);
    free(want);
    assert_int_equal(dl.errors, 0);
    buf_clear(&out);
    assert_int_equal(render_fragment(md, strlen(md), true, &out, &dl), 0);
    assert_non_null(strstr(buf_cstr(&out), "<p>Some <em>text</em> and <b>raw</b>.</p>\n"));
    assert_int_equal(dl.errors, 0);
    /* output is appended to what out holds */
    buf_clear(&out);
    buf_puts(&out, "<!-- before -->");
    assert_int_equal(render_fragment("x", 1, false, &out, &dl), 0);
    assert_string_equal(buf_cstr(&out), "<!-- before --><p>x</p>\n");
    /* no heading permalinks: kvsite render prints what cmark-gfm prints */
    buf_clear(&out);
    assert_int_equal(render_fragment("## Sub\n", 7, false, &out, &dl), 0);
    assert_string_equal(buf_cstr(&out), "<h2 id=\"sub\">Sub</h2>\n");
    buf_free(&out);
    diag_list_free(&dl);
}

/* A page in a list answers each of its fields by name, and nothing for a
 * name that only starts like one (the fields are found by their first
 * letters); plain_text shows a summary by the feed's rule. */
static void test_brief_fields(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "templates/tag.html",
               "{% for _, p in ipairs(page.pages) do %}"
               "{% for _, k in ipairs({\"title\", \"date\", \"updated\", \"section\", \"src\", "
               "\"kind\", \"url\", \"permalink\", \"path\", \"weight\", \"draft\", \"summary\", "
               "\"nfigures\", \"tags\", \"params\", \"t\", \"p\", \"pa\", \"pat\", \"paths\", "
               "\"titles\", \"tag\", \"s\", \"su\", \"u\", \"d\", \"x\", \"\"}) do %}"
               "{% local v = p[k] %}[{{ k }}={{ type(v) == \"table\" and \"table\" or "
               "type(v) == \"userdata\" and \"view\" or tostring(v) }}]"
               "{% end %}\n{{ plain_text(p.summary) }}|{{ plain_text(nil) }}\n"
               /* shown straight from the object (lv_read_field): the same */
               "{{ p.title }}|{{ p.weight }}|{{ p.draft }}|{{ p.updated }}|{{ p.nfigures }}|"
               "{{{ p.summary }}}|{{ p.nope }}\n{% end %}");
    tmpdir_put(dir, "content/notes/kv.md",
               "---\ntitle: KV cache\ndate: 2024-01-02\ntags: [memory]\nweight: 3\n"
               "summary: \"Holds `4 MiB {= 2+2 MiB}` in **two** [parts](x.md)\"\n---\n"
               "The cache holds `4 {= 2+2}` blocks.\n");
    site s;
    S_load(&s, dir);
    S_render_all(&s);
    S_out_is(&s, "tags/memory/index.html",
             "[title=KV cache][date=2024-01-02][updated=nil][section=notes]"
             "[src=content/notes/kv.md][kind=page][url=/notes/kv/]"
             "[permalink=https://example.org/notes/kv/][path=/notes/kv/][weight=3]"
             "[draft=false][summary=Holds `4 MiB {= 2+2 MiB}` in **two** [parts](x.md)]"
             "[nfigures=1][tags=view][params=table][t=nil][p=nil][pa=nil][pat=nil]"
             "[paths=nil][titles=nil][tag=nil][s=nil][su=nil][u=nil][d=nil][x=nil][=nil]\n"
             "Holds 4 MiB in two parts|\n"
             "KV cache|3|false||1|Holds `4 MiB {= 2+2 MiB}` in **two** [parts](x.md)|\n");
    S_free(&s);
}

/* A listed page's tags: a read-only view of {name, url} items, the same
 * whether a loop reads their fields in place or Lua reads them. */
static void test_brief_tags(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "templates/tag.html",
               "{% for _, p in ipairs(page.pages) do %}"
               "{% for _, t in ipairs(p.tags or {}) do %}<{{ t.name }}|{{ t.url }}>{% end %}\n"
               "{% for i, t in ipairs(p.tags) do %}{{ i }}:{{ t.name }}:{{ t.url }}:{{ t.slug }};"
               "{% end %}\n"
               "{{ #p.tags }} {{ p.tags == p.tags }} {{ p.tags[1].name }} {{ p.tags[9] }} "
               "{{ pcall(function() p.tags[1] = 1 end) }}"
               "{% for k, t in pairs(p.tags) do %} {{ k }}={{ t.name }}{% end %}\n"
               "{% break %}{% end %}");
    tmpdir_put(dir, "content/notes/kv.md",
               "---\ntitle: KV cache\ntags: [\"C++ & <Lua>\", memory]\n---\nText.\n");
    site s;
    S_load(&s, dir);
    S_render_all(&s);
    S_no_diags(&s);
    S_out_is(&s, "tags/memory/index.html",
             "<C++ &amp; &lt;Lua&gt;|/tags/c-lua/><memory|/tags/memory/>\n"
             "1:C++ &amp; &lt;Lua&gt;:/tags/c-lua/:;2:memory:/tags/memory/:;\n"
             "2 true C++ &amp; &lt;Lua&gt;  false 1=C++ &amp; &lt;Lua&gt; 2=memory\n");
    S_free(&s);
}

/* page.toc: a read-only view of {level, id, text, depth} items, depth
 * counted from the page's shallowest heading (not its first); the same
 * whether a loop reads the fields in place (the first: only fields) or Lua
 * makes each item (the second, which reads a field items lack: a fresh
 * table each, writing to it changes nothing). */
static void test_page_toc(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "templates/page.html",
               "{% for _, h in ipairs(page.toc) do %}"
               "[{{ h.depth }}|{{ h.level }}|{{ h.id }}|{{ h.text }}]{% end %}\n"
               "{% for i, h in ipairs(page.toc) do %}{{ i + 0 }}:{{ h.depth }}:{{ h.text }}:"
               "{{ h.slug }};{% end %}\n"
               "{{ #page.toc }} {{ (page.toc[2] or {}).depth }} {{ page.toc[9] }} "
               "{{ pcall(function() page.toc[1].depth = 7 end) }} {{ page.toc[1].depth }}\n");
    tmpdir_put(dir, "content/notes/kv.md",
               "---\ntitle: KV cache\n---\n#### Zero\n\n### Alpha\n\n#### Beta & \\<x\\>\n\n"
               "##### Gamma\n\n### Delta\n");
    tmpdir_put(dir, "content/notes/flat.md", "---\ntitle: Flat\n---\n## One\n\nText.\n");
    site s;
    S_load(&s, dir);
    S_render_all(&s);
    S_no_diags(&s);
    S_out_is(&s, "notes/kv/index.html",
             "[2|4|zero|Zero][1|3|alpha|Alpha][2|4|beta-x|Beta &amp; &lt;x&gt;]"
             "[3|5|gamma|Gamma][1|3|delta|Delta]\n"
             "1:2:Zero:;2:1:Alpha:;3:2:Beta &amp; &lt;x&gt;:;4:3:Gamma:;5:1:Delta:;\n"
             "5 1  true 2\n");
    S_out_is(&s, "notes/flat/index.html", "[1|2|one|One]\n1:1:One:;\n1   true 1\n");
    S_free(&s);
}

/* site.sections and site.section() give read-only page objects with
 * `pages` (their listing); other list items have no `pages`. */
static void test_section_objects(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "templates/home.html",
               "{% for _, s in ipairs(site.sections) do %}"
               "[{{ s.path }} {{ s.title }} {{ #s.pages }} {{ s.pages == s.pages }}]"
               "{% end %}\n{% local n = site.section(\"notes\") %}"
               "{{ n.title }}:{% for _, p in ipairs(n.pages) do %}{{ p.title }};"
               "{{ tostring(p.pages) }};{% end %}\n"
               "{{ pcall(function() n.title = 1 end) }}\n");
    site s;
    S_load(&s, dir);
    S_render_all(&s);
    S_no_diags(&s);
    S_out_has(&s, "index.html", "[/notes/ Notes 2 true]");
    S_out_has(&s, "index.html", "[/docs/ Docs 1 true]");
    S_out_has(&s, "index.html", "\nNotes:KV cache;nil;Odd;nil;\nfalse\n");
    S_free(&s);
}

/* site.menu: the top-level sections in menu order (Docs, Guides, Notes by
 * title; a weight puts one first; a nested section is not in it), as the
 * same read-only page objects as a section's pages. */
static void test_site_menu(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "content/notes/deep/_index.md", "---\ntitle: Deep\nweight: -5\n---\n");
    tmpdir_put(dir, "templates/home.html",
               "{% for _, s in ipairs(site.menu) do %}[{{ s.path }} {{ s.title }}]{% end %}"
               "{{ #site.menu }} {{ site.menu == site.menu }} "
               "{{ pcall(function() site.menu[1].title = 1 end) }}\n");
    tmpdir_put(dir, "templates/section.html", "{{ site.menu[1].title }}\n");
    site s;
    S_load(&s, dir);
    S_render_all(&s);
    S_no_diags(&s);
    S_out_has(&s, "index.html", "[/docs/ Docs][/guides/ Guides][/notes/ Notes]3 true false\n");
    S_out_has(&s, "notes/index.html", "Docs\n");
    S_free(&s);
    tmpdir_put(dir, "content/notes/_index.md", "---\ntitle: Notes\nweight: -1\n---\n");
    S_load(&s, dir);
    S_render_all(&s);
    S_no_diags(&s);
    S_out_has(&s, "index.html", "[/notes/ Notes][/docs/ Docs][/guides/ Guides]3 true false\n");
    S_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_jobs, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_template_lookup, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_failing_figure, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_cut_page_rendered_again, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_include_cached_reads, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_missing_template, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_asset_url_and_anchors, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_brief_fields, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_brief_tags, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_page_toc, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_section_objects, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_site_menu, S_setup, S_teardown),
        cmocka_unit_test(test_fragment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
