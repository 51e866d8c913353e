/* Unit tests for gen/figure.c: the classification of code spans, figure spans
 * evaluated in a sandbox (exact, approximate, several values, cited, measured),
 * {lua} blocks and their cell options, the unverified-figure lint and the plain
 * text of short Markdown strings. */
#include <math.h>
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
#include <lauxlib.h>
#include <lua.h>

#include "buf.h"
#include "diag.h"
#include "figure.h"
#include "fsutil.h"
#include "sandbox.h"
#include "sources.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define PAGE "content/f.md"
#define QWEN "2*28*4*128*4096*2" /* 224 MiB: Qwen2.5-7B, 4096 tokens, FP16 */

/* ---- fig_classify --------------------------------------------------------- */

typedef struct {
    const char *lit;
    span_kind kind;
} class_case;

static void test_classify(void **state)
{
    (void)state;
    static const class_case cases[] = {
        {"{lua} x", SPAN_INLINE_LUA},
        {"{lua}", SPAN_INLINE_LUA},
        {"  {lua}   1 + 1 ", SPAN_INLINE_LUA},
        {"{lua}\tx", SPAN_INLINE_LUA},
        {"{lua}x", SPAN_CODE},
        {"{luax} 1", SPAN_CODE},
        {"lua 1", SPAN_CODE},
        {"224 MiB {= x}", SPAN_FIGURE},
        {"224 MiB {=x}", SPAN_FIGURE},
        {"224 MiB {= x}  ", SPAN_FIGURE},
        {"40 GB {≈ x}", SPAN_FIGURE},
        {"40 GB {≈10% x}", SPAN_FIGURE},
        {"40 GB {~ x}", SPAN_FIGURE},
        {"224 MiB {= E1, E2}", SPAN_FIGURE},
        {"7.03× {cite quest2024}", SPAN_FIGURE},
        {"{= x}", SPAN_FIGURE}, /* a figure without a quote: an error later */
        {"40 GB \\{= x}", SPAN_ESCAPED},
        {"7× \\{cite k}", SPAN_ESCAPED},
        {"7× {cite}", SPAN_CODE},
        {"x {citation}", SPAN_CODE},
        {"a {b}", SPAN_CODE},
        {"x = {1}", SPAN_CODE},
        {"t = {}", SPAN_CODE},
        {"{}", SPAN_CODE},
        {"}", SPAN_CODE},
        {"", SPAN_CODE},
        {"printf(\"%d\", x)", SPAN_CODE},
        {"40 GB {= x", SPAN_CODE},
        {"a {b} {= c}", SPAN_CODE}, /* the first brace opens the mark */
        {"40 GB {≠ x}", SPAN_FIGURE},
        {"40 GB {!= x}", SPAN_FIGURE},
        {"40 GB {≉ x}", SPAN_FIGURE},
        {"40 GB {!~ x}", SPAN_FIGURE},
        {"40 GB {≠ x; cite k}", SPAN_FIGURE},
        {"40 GB \\{≠ x}", SPAN_ESCAPED},
        {"a {! x}", SPAN_CODE},
        {"a {!x}", SPAN_CODE},
    };
    for (size_t i = 0; i < N(cases); i++) {
        span_kind k = fig_classify(cases[i].lit, strlen(cases[i].lit));
        if (k != cases[i].kind)
            fail_msg("classify(\"%s\") = %d, expected %d", cases[i].lit, k, cases[i].kind);
    }
    assert_string_equal(fig_tier_name(FIG_COMPUTED), "computed");
    assert_string_equal(fig_tier_name(FIG_MEASURED), "measured");
    assert_string_equal(fig_tier_name(FIG_CITED), "cited");
    assert_string_equal(fig_tier_name(FIG_REFUTED), "refuted");
}

/* ---- the lint ------------------------------------------------------------- */

typedef struct {
    const char *text;
    const char *flagged; /* the quote in the message, NULL when nothing is flagged */
    int col;             /* where, the text starting at column 1 */
} lint_case;

static void test_lint_table(void **state)
{
    (void)state;
    static const lint_case cases[] = {
        {"40 GB", "40 GB", 1},
        {"uses 53.1% of it", "53.1%", 6},
        {"7× faster", "7×", 1},
        {"快2倍", "2倍", 4},
        {"约 20倍", "20倍", 5},
        {"1,024 MiB", "1,024 MiB", 1},
        {"8 bits", "8 bits", 1},
        {"1 bit each", "1 bit", 1},
        {"100 B", "100 B", 1},
        {"3.5 TiB.", "3.5 TiB", 1},
        {"(53.1%)", "53.1%", 2},
        {"~40 GB", "40 GB", 2},
        {"1.5× less", "1.5×", 1},
        {"10 kB", "10 kB", 1},
        {"12 KB", "12 KB", 1},
        {"a 500 MB cache", "500 MB", 3},
        {"2 TB", "2 TB", 1},
        {"7x faster", "7x", 1},
        {"40GB of cache", "40GB", 1},
        {"64KiB pages", "64KiB", 1},
        {"Qwen2.5-7B", NULL, 0},
        {"70B", NULL, 0},
        {"a 7B model", NULL, 0},
        {"FP16", NULL, 0},
        {"in 2017", NULL, 0},
        {"Task 1-2", NULL, 0},
        {"0x1F", NULL, 0},
        {"7 x 8", NULL, 0},
        {"2xl", NULL, 0},
        {"v2.5", NULL, 0},
        {"H100", NULL, 0},
        {"4096 tokens", NULL, 0},
        {"10 Bytes", NULL, 0},
        {"GB", NULL, 0},
        {"A100-80GB", NULL, 0},
        {"1e9", NULL, 0},
        {"3 GBps", NULL, 0},
        {"Llama-2-7B", NULL, 0},
        {"x86", NULL, 0},
        {"40 GBs", NULL, 0},
    };
    int wrong = 0;
    for (size_t i = 0; i < N(cases); i++) {
        diag_list dl;
        diag_list_init(&dl);
        fig_ctx c;
        fig_ctx_init(&c);
        c.file = PAGE;
        c.dl = &dl;
        fig_lint_text(&c, cases[i].text, strlen(cases[i].text), 1, 1);
        if (!cases[i].flagged) {
            if (dl.n != 0) {
                print_error("\"%s\" flagged: %s\n", cases[i].text, dl.v[0].msg);
                wrong++;
            }
        } else {
            char want[300];
            snprintf(want, sizeof want,
                     "unverified figure \"%s\": quote it as a figure (`%s {= EXPR}`) or cite it "
                     "(`%s {cite KEY}`)",
                     cases[i].flagged, cases[i].flagged, cases[i].flagged);
            if (dl.n != 1 || strcmp(dl.v[0].msg, want) != 0 || dl.v[0].col != cases[i].col ||
                dl.v[0].level != DIAG_WARNING || strcmp(dl.v[0].file, PAGE) != 0) {
                print_error("\"%s\": %zu diagnostics, first at col %d: %s\n", cases[i].text,
                            dl.n, dl.n ? dl.v[0].col : 0, dl.n ? dl.v[0].msg : "-");
                wrong++;
            }
        }
        fig_ctx_free(&c);
        diag_list_free(&dl);
    }
    assert_int_equal(wrong, 0);
}

static void test_lint_positions_and_level(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    fig_ctx c;
    fig_ctx_init(&c);
    c.file = PAGE;
    c.dl = &dl;
    const char *t = "xx 7× and\nb 40 GB or 50 GB";
    fig_lint_text(&c, t, strlen(t), 5, 10);
    assert_int_equal(dl.n, 3);
    assert_int_equal(dl.v[0].line, 5);
    assert_int_equal(dl.v[0].col, 13); /* the first line starts at the given column */
    assert_int_equal(dl.v[1].line, 6);
    assert_int_equal(dl.v[1].col, 3); /* later lines at column 1 */
    assert_int_equal(dl.v[2].line, 6);
    assert_int_equal(dl.v[2].col, 12);
    assert_int_equal(dl.warnings, 3);
    diag_list_free(&dl);

    /* only len bytes are read */
    c.unverified = DIAG_ERROR;
    fig_lint_text(&c, "9 GB 40 GB", 4, 1, 1);
    assert_int_equal(dl.n, 1);
    assert_int_equal(dl.errors, 1);
    assert_string_equal(dl.v[0].msg, "unverified figure \"9 GB\": quote it as a figure "
                                     "(`9 GB {= EXPR}`) or cite it (`9 GB {cite KEY}`)");
    assert_int_equal(c.nfigs, 0); /* the lint records no figures */
    fig_ctx_free(&c);
    diag_list_free(&dl);
}

/* ---- fixtures for spans and blocks ---------------------------------------- */

typedef struct {
    char *root;
    sandbox_opts so;
    sandbox *sb;
    sources src;
    diag_list dl;
    fig_ctx c;
    buf enter, text, exit;
    bool code;
} fx;

static int S_setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->root = strdup("/tmp/kvsite-test-figure-XXXXXX");
    if (!mkdtemp(f->root))
        return -1;
    char *checks = fs_join(f->root, "checks");
    fs_mkdir_p(checks);
    char *srcs = fs_join(checks, "sources.yaml");
    const char *yaml = "quest2024:\n  title: \"Quest: <sparse> & fast\"\n  year: 2024\n"
                       "notitle:\n  title: T\n";
    fs_write_file(srcs, yaml, strlen(yaml));
    free(srcs);
    free(checks);
    f->so = (sandbox_opts){f->root, 1000000, 16u << 20, 1u << 20, 32};
    diag_list_init(&f->dl);
    if (sources_load(&f->src, f->root, 1u << 20, &f->dl) != 0)
        return -1;
    *state = f;
    return 0;
}

static int S_teardown(void **state)
{
    fx *f = *state;
    fig_ctx_free(&f->c);
    buf_free(&f->enter);
    buf_free(&f->text);
    buf_free(&f->exit);
    if (f->sb) {
        sandbox_page_end(f->sb);
        sandbox_free(f->sb);
    }
    sources_free(&f->src);
    diag_list_free(&f->dl);
    fs_remove_tree(f->root);
    free(f->root);
    free(f);
    return 0;
}

static void S_start(fx *f)
{
    f->sb = sandbox_new(&f->so);
    assert_non_null(f->sb);
    sandbox_page_begin(f->sb, PAGE, &f->dl);
    fig_ctx_init(&f->c);
    f->c.sb = f->sb;
    f->c.src = &f->src;
    f->c.file = PAGE;
    f->c.dl = &f->dl;
}

/* Handles one span at line:col; the outputs land in f->enter/text/exit/code. */
static void S_span_at(fx *f, const char *lit, int line, int col, bool in_link)
{
    buf_clear(&f->enter);
    buf_clear(&f->text);
    buf_clear(&f->exit);
    f->code = true;
    fig_span(&f->c, lit, strlen(lit), line, col, in_link, &f->enter, &f->text, &f->exit, &f->code);
    assert_int_equal(lua_gettop(sandbox_lua(f->sb)), 0);
}

static void S_span(fx *f, const char *lit) { S_span_at(f, lit, 3, 5, false); }

static const figure *S_last(const fx *f)
{
    assert_true(f->c.nfigs > 0);
    return &f->c.figs[f->c.nfigs - 1];
}

/* A passing figure: its mode, detail, and the span around its quote. */
static void S_pass(fx *f, const char *lit, const char *q, const char *mode, const char *detail)
{
    size_t n0 = f->c.nfigs, d0 = f->dl.n;
    S_span(f, lit);
    if (f->dl.n != d0)
        fail_msg("%s: %s", lit, f->dl.v[f->dl.n - 1].msg);
    assert_int_equal(f->c.nfigs, n0 + 1);
    const figure *g = S_last(f);
    assert_true(g->ok);
    assert_string_equal(g->quote, q);
    assert_string_equal(g->mode, mode);
    if (strcmp(g->detail, detail) != 0)
        fail_msg("%s: detail \"%s\", expected \"%s\"", lit, g->detail, detail);
    assert_string_equal(buf_cstr(&f->text), q);
    assert_false(f->code);
    char want[600];
    snprintf(want, sizeof want,
             "<span class=\"fig\" id=\"%s\" data-tier=\"computed\"><button type=\"button\" "
             "class=\"fig-q\" popovertarget=\"%s-d\" aria-describedby=\"%s-d\">",
             g->anchor, g->anchor, g->anchor);
    assert_string_equal(buf_cstr(&f->enter), want);
    /* the details: the value in the quote's unit (the detail after "EXPR = "), escaped,
     * and the link to the report row */
    buf esc = BUF_INIT;
    const char *value = strstr(detail, " = ");
    assert_non_null(value);
    buf_puts(&esc, "<span class=\"fig-k\">Value</span> ");
    buf_put_html(&esc, value + 3, strlen(value + 3));
    buf_puts(&esc, "</span>");
    if (!strstr(buf_cstr(&f->exit), buf_cstr(&esc)))
        fail_msg("%s: no value \"%s\" in %s", lit, buf_cstr(&esc), buf_cstr(&f->exit));
    buf_free(&esc);
    snprintf(want, sizeof want, "<a class=\"fig-report\" href=\"/checks/#%s\">", g->anchor);
    assert_non_null(strstr(buf_cstr(&f->exit), want));
    assert_non_null(strstr(buf_cstr(&f->exit), "</button><span class=\"fig-pop\" popover id=\""));
}

/* A failing figure: exactly one new error at 3:5 with this message. */
static void S_fail(fx *f, const char *lit, const char *msg)
{
    size_t n0 = f->c.nfigs, d0 = f->dl.n;
    S_span(f, lit);
    if (f->dl.n != d0 + 1)
        fail_msg("%s: %zu new diagnostics", lit, f->dl.n - d0);
    const diag *d = &f->dl.v[d0];
    if (strcmp(d->msg, msg) != 0)
        fail_msg("%s: \"%s\"\n  expected \"%s\"", lit, d->msg, msg);
    assert_int_equal(d->level, DIAG_ERROR);
    assert_string_equal(d->file, PAGE);
    assert_int_equal(d->line, 3);
    assert_int_equal(d->col, 5);
    assert_int_equal(f->c.nfigs, n0 + 1);
    assert_false(S_last(f)->ok);
    /* marked as failing, unless there is no quote to show at all */
    if (lit[0] != '{' && !strstr(buf_cstr(&f->enter), " data-status=\"fail\""))
        fail_msg("%s: span \"%s\"", lit, buf_cstr(&f->enter));
}

/* ---- figure spans --------------------------------------------------------- */

static void test_exact_figures(void **state)
{
    fx *f = *state;
    S_start(f);
    S_pass(f, "224 MiB {= " QWEN "}", "224 MiB", "=", QWEN " = 234,881,024 B = 224.0 MiB");
    const figure *g = S_last(f);
    assert_int_equal(g->line, 3);
    assert_int_equal(g->col, 5);
    assert_string_equal(g->expr, QWEN);
    assert_int_equal(g->tier, FIG_COMPUTED);
    assert_true(g->value == 234881024.0);
    assert_string_equal(g->provenance, "");
    assert_string_equal(g->anchor, "fig-1");
    S_pass(f, "  53.1% {=0.531}  ", "53.1%", "=", "0.531 = 0.531 = 53.10%"); /* spaces trimmed */
    S_pass(f, "1 B {= 2 < 3 and 1 or 0}", "1 B", "=", "2 < 3 and 1 or 0 = 1 B");
    S_pass(f, "224 MiB {= " QWEN ", 234881024}", "224 MiB", "=",
           QWEN ", 234881024 = 234,881,024 B = 224.0 MiB");
    assert_string_equal(S_last(f)->anchor, "fig-4");
}

static void test_failing_figures(void **state)
{
    fx *f = *state;
    S_start(f);
    S_fail(f, "40 GB {= 40 * 2^30}",
           "quoted 40 GB, but 40 * 2^30 = 42.95 GB (40.00 GiB); did you mean GiB?");
    S_fail(f, "224 MiB {= " QWEN ", 1}",
           "value 2 of 2: quoted 224 MiB, but " QWEN ", 1 = 0.00 MiB");
    S_fail(f, "1 GB {= 'x'}", "value 1 of `'x'` is a string, not a number");
    S_fail(f, "1 GB {= nil}", "value 1 of `nil` is a nil, not a number");
    S_fail(f, "1 GB {= (function() end)()}", "the expression (function() end)() gives no value");
    S_fail(f, "{= 1}", "a figure needs the quoted number before the braces: `224 MiB {= ...}`");
    assert_string_equal(S_last(f)->mode, "?");
    S_fail(f, "40 GB {= }", "the figure has no expression after its mark: `224 MiB {= EXPR}`");
    S_fail(f, "40 GB {≈150% 1}", "tolerance must be between 0% and 100%");
    S_fail(f, "1 GB {= nope()}", "in figure: attempt to call a nil value (global 'nope')");
    assert_string_equal(S_last(f)->detail,
                        "in figure `1 GB`: attempt to call a nil value (global 'nope')");
    size_t d0 = f->dl.n;
    S_span(f, "12 parsecs {= 1}");
    assert_int_equal(f->dl.n, d0 + 1);
    assert_true(strncmp(f->dl.v[d0].msg, "malformed quote: ", 17) == 0);
}

static void test_approximate_figures(void **state)
{
    fx *f = *state;
    S_start(f);
    S_pass(f, "43 GB {≈ 40 * 2^30}", "43 GB", "≈", "40 * 2^30 = 42,949,672,960 B = 42.9 GB");
    S_pass(f, "46 GB {≈10% 40 * 2^30}", "46 GB", "≈10%", "40 * 2^30 = 42,949,672,960 B = 42.9 GB");
    S_pass(f, "40 GB {~ 41e9}", "40 GB", "~", "41e9 = 41,000,000,000 B = 41.0 GB");
    S_pass(f, "100 B {~2.5% 102}", "100 B", "~2.5%", "102 = 102 B");
    assert_string_equal(S_last(f)->expr, "102");
    /* the site's tolerance is the default */
    f->c.tolerance = 0.10;
    S_pass(f, "46 GB {≈ 40 * 2^30}", "46 GB", "≈", "40 * 2^30 = 42,949,672,960 B = 42.9 GB");
    f->c.tolerance = 0.05;
    size_t d0 = f->dl.n;
    S_span(f, "46 GB {≈ 40 * 2^30}");
    assert_int_equal(f->dl.n, d0 + 1);
    assert_false(S_last(f)->ok);
}

static void test_cited_figures(void **state)
{
    fx *f = *state;
    S_start(f);
    S_span(f, "7.03× {cite quest2024}");
    const figure *g = S_last(f);
    assert_int_equal(f->dl.n, 0);
    assert_true(g->ok);
    assert_int_equal(g->tier, FIG_CITED);
    assert_string_equal(g->mode, "cite");
    assert_string_equal(g->expr, "quest2024");
    assert_string_equal(g->detail, "Quest: <sparse> & fast");
    assert_true(g->value == 0.0);
    assert_string_equal(buf_cstr(&f->text), "7.03×");
    assert_string_equal(buf_cstr(&f->enter),
                        "<span class=\"fig\" id=\"fig-1\" data-tier=\"cited\"><button type=\"button\" "
                        "class=\"fig-q\" popovertarget=\"fig-1-d\" aria-describedby=\"fig-1-d\">");
    /* the details name the tier and link the source, its title escaped */
    assert_non_null(strstr(buf_cstr(&f->exit), "<span class=\"fig-tier\">Cited: "));
    assert_non_null(strstr(buf_cstr(&f->exit),
                           "<span class=\"fig-k\">Source</span> <a href=\"/sources/#quest2024\">"
                           "Quest: &lt;sparse&gt; &amp; fast</a>"));
    assert_null(strstr(buf_cstr(&f->exit), "Expression"));

    S_span(f, "7× {cite nope}");
    assert_int_equal(f->dl.n, 1);
    assert_string_equal(f->dl.v[0].msg, "cited source \"nope\" is not in checks/sources.yaml");
    assert_int_equal(f->dl.v[0].line, 3);
    assert_int_equal(f->dl.v[0].col, 5);
    S_span(f, "7× {cite a b}");
    assert_int_equal(f->dl.n, 2);
    assert_string_equal(f->dl.v[1].msg, "malformed source key \"a b\"");

    /* no sources file at all */
    sources none;
    memset(&none, 0, sizeof none);
    strmap_init(&none.by_key);
    f->c.src = &none;
    S_span(f, "7× {cite quest2024}");
    assert_int_equal(f->dl.n, 3);
    assert_string_equal(f->dl.v[2].msg,
                        "cited source \"quest2024\", but there is no checks/sources.yaml");
    f->c.src = &f->src;
}

static void test_measured_figures(void **state)
{
    fx *f = *state;
    S_start(f);
    int nres = 0;
    sandbox_error err;
    const char *def = "function m() kvsite.measured{source = 'bench', date = '2024-05-01'} "
                      "return 234881024 end";
    assert_int_equal(sandbox_run(f->sb, def, strlen(def), PAGE, 1, &nres, &err), 0);
    S_span(f, "224 MiB {= m()}");
    const figure *g = S_last(f);
    assert_true(g->ok);
    assert_int_equal(g->tier, FIG_MEASURED);
    assert_string_equal(g->provenance, "source: bench; date: 2024-05-01");
    assert_non_null(strstr(buf_cstr(&f->enter), "<span class=\"fig\" id=\"fig-1\" data-tier=\"measured\">"));
    assert_non_null(strstr(buf_cstr(&f->exit),
                           "<span class=\"fig-k\">Measured at</span> source: bench; date: 2024-05-01</span>"));
    assert_non_null(strstr(buf_cstr(&f->exit), "<a class=\"fig-report\" href=\"/checks/#fig-1\">"));
    /* the next figure starts unmeasured */
    S_span(f, "224 MiB {= " QWEN "}");
    assert_int_equal(S_last(f)->tier, FIG_COMPUTED);
    assert_string_equal(S_last(f)->provenance, "");
}

static void test_span_options(void **state)
{
    fx *f = *state;
    S_start(f);
    f->c.anchor_prefix = "articles-kv";
    f->c.anchor_base = 10;
    f->c.base_path = "/docs";
    S_span_at(f, "224 MiB {= " QWEN "}", 1, 1, true);
    assert_string_equal(S_last(f)->anchor, "articles-kv-11");
    /* inside a link: no button, no popover (interactive content does not nest) */
    assert_string_equal(buf_cstr(&f->enter),
                        "<span class=\"fig\" id=\"articles-kv-11\" data-tier=\"computed\">");
    assert_string_equal(buf_cstr(&f->exit), "</span>");
    S_span_at(f, "224 MiB {= " QWEN "}", 1, 1, false);
    assert_non_null(strstr(buf_cstr(&f->exit), "href=\"/docs/checks/#articles-kv-12\">"));
    S_span_at(f, "7× {cite quest2024}", 1, 1, false);
    assert_non_null(strstr(buf_cstr(&f->exit), "<a href=\"/docs/sources/#quest2024\">"));
}

static void test_escaped_and_inline(void **state)
{
    fx *f = *state;
    S_start(f);
    S_span(f, "40 GB \\{= x}");
    assert_true(f->code);
    assert_string_equal(buf_cstr(&f->text), "40 GB {= x}");
    assert_int_equal(f->enter.len, 0);
    assert_int_equal(f->exit.len, 0);
    assert_int_equal(f->c.nfigs, 0);

    S_span(f, "{lua} 6 * 7");
    assert_false(f->code);
    assert_string_equal(buf_cstr(&f->text), "42");
    assert_int_equal(f->enter.len, 0);
    assert_int_equal(f->c.nfigs, 0);
    S_span(f, "{lua} 'a' .. 1.5");
    assert_string_equal(buf_cstr(&f->text), "a1.5");
    assert_int_equal(f->dl.n, 0);
    S_span(f, "{lua} {}");
    assert_string_equal(buf_cstr(&f->text), "");
    assert_int_equal(f->dl.n, 1);
    assert_string_equal(f->dl.v[0].msg, "`{lua}` expression must give text or a number, not table");
}

static void test_budget_reported_once(void **state)
{
    fx *f = *state;
    f->so.instructions = 100000;
    S_start(f);
    S_span(f, "1 GB {= (function() while true do end end)()}");
    S_span(f, "2 GB {= 2 * 2^30}");
    S_span(f, "{lua} 1");
    bool echo = true;
    size_t body = 9;
    fig_block(&f->c, "x = 1", 5, 10, 1, &echo, &body, NULL);
    assert_int_equal(f->dl.n, 1);
    assert_string_equal(f->dl.v[0].msg,
                        "in figure: instruction budget exceeded (limits.lua_instructions = 100000)");
    assert_int_equal(f->dl.v[0].line, 3);
    assert_int_equal(f->c.nfigs, 2);
    assert_false(f->c.figs[0].ok);
    assert_false(f->c.figs[1].ok); /* not verified, so not passing */
    assert_false(echo);
    assert_int_equal(body, 0);
}

/* ---- {lua} blocks --------------------------------------------------------- */

static void test_blocks(void **state)
{
    fx *f = *state;
    S_start(f);
    bool echo = true;
    size_t body = 99;
    fig_block(&f->c, "x = 21\n", 7, 10, 1, &echo, &body, NULL);
    assert_false(echo);
    assert_int_equal(body, 0);
    assert_int_equal(f->dl.n, 0);
    S_span(f, "{lua} x * 2");
    assert_string_equal(buf_cstr(&f->text), "42");

    const char *opts = "--| echo: true\n--|  eval :  false \nerror('not run')\n";
    fig_block(&f->c, opts, strlen(opts), 10, 1, &echo, &body, NULL);
    assert_true(echo);
    assert_int_equal(body, strlen("--| echo: true\n--|  eval :  false \n"));
    assert_int_equal(f->dl.n, 0);

    const char *bad = "--| echo\n--| echo: yes\n--| fold: true\ny = 2\n";
    fig_block(&f->c, bad, strlen(bad), 20, 4, &echo, &body, NULL);
    assert_int_equal(f->dl.n, 3);
    assert_string_equal(f->dl.v[0].msg, "cell option \"echo\" must be \"key: value\"");
    assert_int_equal(f->dl.v[0].line, 20);
    assert_int_equal(f->dl.v[0].col, 4);
    assert_string_equal(f->dl.v[1].msg, "cell option echo must be true or false, not \"yes\"");
    assert_int_equal(f->dl.v[1].line, 21);
    assert_string_equal(f->dl.v[2].msg, "unknown cell option \"fold\" (known: echo, eval, output)");
    assert_int_equal(f->dl.v[2].line, 22);
    S_span(f, "{lua} y");
    assert_string_equal(buf_cstr(&f->text), "2"); /* the code still ran */
}

typedef struct {
    const char *code;
    int first_line;
    int line, col;
    const char *msg;
} block_err;

static void test_block_errors(void **state)
{
    fx *f = *state;
    S_start(f);
    static const block_err cases[] = {
        {"local a = 1\n\nerror('e')\n", 10, 12, 0, "in {lua} block: e"},
        {"error('first')", 10, 10, 3, "in {lua} block: first"},
        {"--| echo: false\nerror('x')", 5, 6, 0, "in {lua} block: x"},
        {"x = = 1", 3, 3, 3, "in {lua} block: unexpected symbol near '='"},
        {"local t = nil\nreturn t.x", 7, 8, 0,
         "in {lua} block: attempt to index a nil value (local 't')"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        size_t d0 = f->dl.n;
        bool echo;
        size_t body;
        fig_block(&f->c, cases[i].code, strlen(cases[i].code), cases[i].first_line, 3, &echo,
                  &body, NULL);
        if (f->dl.n != d0 + 1)
            fail_msg("case %zu: %zu new diagnostics", i, f->dl.n - d0);
        const diag *d = &f->dl.v[d0];
        if (d->line != cases[i].line || d->col != cases[i].col || strcmp(d->msg, cases[i].msg))
            fail_msg("case %zu: %d:%d \"%s\"", i, d->line, d->col, d->msg);
        assert_string_equal(d->file, PAGE);
    }
}

/* ---- plain text ----------------------------------------------------------- */

typedef struct {
    const char *in, *out;
} plain_case;

static void test_plain_text(void **state)
{
    (void)state;
    static const plain_case cases[] = {
        {"", ""},
        {"plain", "plain"},
        {"A `224 MiB {= x}` cache", "A 224 MiB cache"},
        {"See `Quest {cite quest2024}`", "See Quest"},
        {"run `make test` now", "run make test now"},
        {"a [link](b.md) here", "a link here"},
        {"*em* and **strong** and _u_", "em and strong and u"},
        {"unclosed `code", "unclosed `code"},
        {"`40 GB \\{= x}` as code", "40 GB {= x} as code"},
        {"kv_cache_bytes", "kv_cache_bytes"},
    };
    int wrong = 0;
    for (size_t i = 0; i < N(cases); i++) {
        char *s = fig_plain_text(cases[i].in);
        if (strcmp(s, cases[i].out) != 0) {
            print_error("plain_text(\"%s\") = \"%s\", expected \"%s\"\n", cases[i].in, s,
                        cases[i].out);
            wrong++;
        }
        free(s);
    }
    assert_int_equal(wrong, 0);
}

/* The link to the report is made once per page from report_url, base_path and
 * anchor_prefix, and made again when the ctx points at other strings. */
static void test_report_links_and_ownership(void **state)
{
    fx *f = *state;
    S_start(f);
    f->c.report_url = "/docs/checks/a&b/";
    f->c.anchor_prefix = "p<1>";
    S_span(f, "224 MiB {= " QWEN "}");
    assert_string_equal(S_last(f)->anchor, "p<1>-1");
    assert_non_null(strstr(buf_cstr(&f->exit), "href=\"/docs/checks/a&amp;b/#p&lt;1&gt;-1\">"));
    assert_non_null(strstr(buf_cstr(&f->enter), " id=\"p&lt;1&gt;-1\" "));
    S_span(f, "224 MiB {= " QWEN "}");
    assert_non_null(strstr(buf_cstr(&f->exit), "href=\"/docs/checks/a&amp;b/#p&lt;1&gt;-2\">"));
    f->c.anchor_prefix = "q";
    S_span(f, "224 MiB {= " QWEN "}");
    assert_string_equal(S_last(f)->anchor, "q-3");
    assert_non_null(strstr(buf_cstr(&f->exit), "href=\"/docs/checks/a&amp;b/#q-3\">"));
    f->c.report_url = NULL;
    f->c.base_path = "/b\"p";
    S_span(f, "1 GB {= 'x'}"); /* failing figures link there too */
    assert_non_null(strstr(buf_cstr(&f->exit), "href=\"/b&quot;p/checks/#q-4\">"));
    /* a passing figure's expression is escaped in its details */
    S_span(f, "1 B {= 1 < 2 and 1 or 0}");
    assert_non_null(strstr(buf_cstr(&f->exit), "<code>1 &lt; 2 and 1 or 0</code>"));
    assert_int_equal(f->c.nfigs, 5);

    /* figures move as structs (render.c gathers an include's figures into
     * the page's), and whoever holds them last frees them with
     * fig_ctx_free; a figure made elsewhere owns each string */
    fig_ctx other;
    fig_ctx_init(&other);
    other.figs = calloc(f->c.nfigs + 1, sizeof *other.figs);
    memcpy(other.figs, f->c.figs, f->c.nfigs * sizeof *f->c.figs);
    other.nfigs = f->c.nfigs;
    f->c.nfigs = 0;
    figure *g = &other.figs[other.nfigs++];
    g->quote = strdup("1 B");
    g->expr = strdup("1");
    g->mode = strdup("=");
    g->detail = strdup("");
    g->provenance = strdup("");
    g->anchor = strdup("x-1");
    assert_string_equal(other.figs[0].anchor, "p<1>-1");
    assert_string_equal(other.figs[3].detail, "value 1 of `'x'` is a string, not a number");
    assert_string_equal(other.figs[4].expr, "1 < 2 and 1 or 0");
    fig_ctx_free(&other);
    assert_int_equal(other.nfigs, 0);
    /* the ctx goes on after its figures left */
    S_span(f, "224 MiB {= " QWEN "}");
    assert_string_equal(S_last(f)->anchor, "q-1");
    fig_ctx_free(&f->c);
    S_span(f, "224 MiB {= " QWEN "}"); /* and after fig_ctx_free */
    assert_non_null(strstr(buf_cstr(&f->exit), "href=\"/b&quot;p/checks/#q-1\">"));
}

/* grow(n): adds n empty figures to the page's ctx and moves its array, as
 * markdown_inline does when a figure expression calls it (render.c gathers
 * the nested figures into the page's). */
static int S_grow(lua_State *L)
{
    fig_ctx *c = lua_touserdata(L, lua_upvalueindex(1));
    lua_Integer n = luaL_checkinteger(L, 1);
    size_t cap = c->nfigs + (size_t)n + 1;
    figure *moved = calloc(cap, sizeof *moved);
    if (c->nfigs)
        memcpy(moved, c->figs, c->nfigs * sizeof *moved);
    free(c->figs);
    c->figs = moved;
    c->cap = cap;
    c->nfigs += (size_t)n;
    lua_pushinteger(L, 1048576);
    return 1;
}

/* Regression: a figure whose expression calls back into the host, which
 * moves the figures array, wrote its result through a stale pointer. */
static void test_reentrant_figure(void **state)
{
    fx *f = *state;
    S_start(f);
    lua_State *L = sandbox_lua(f->sb);
    sandbox_push_env(f->sb);
    lua_pushlightuserdata(L, &f->c);
    lua_pushcclosure(L, S_grow, 1);
    lua_setfield(L, -2, "grow");
    lua_pop(L, 1);
    S_span(f, "1 MiB {= grow(40)}");
    assert_int_equal(f->c.nfigs, 41);
    const figure *g = &f->c.figs[0];
    assert_true(g->ok);
    assert_string_equal(g->quote, "1 MiB");
    assert_string_equal(g->expr, "grow(40)");
    assert_string_equal(g->anchor, "fig-1");
    assert_true(g->value == 1048576);
    /* a failing one, and one that errs after moving the array */
    S_span(f, "2 MiB {= grow(40)}");
    g = &f->c.figs[41];
    assert_false(g->ok);
    assert_string_equal(g->quote, "2 MiB");
    S_span(f, "2 MiB {= grow(40) + nil}");
    g = &f->c.figs[82];
    assert_false(g->ok);
    assert_non_null(strstr(g->detail, "in figure `2 MiB`"));
}


/* A refuted claim passes when the quote does not match; fails, at the figure,
 * when it does; shows the true value in the quote's unit after the quote. */
static void test_refuted_figures(void **state)
{
    fx *f = *state;
    S_start(f);
    S_span(f, "40 GB {≠ 40 * 2^30}");
    const figure *g = S_last(f);
    assert_int_equal(f->dl.n, 0);
    assert_true(g->ok);
    assert_int_equal(g->tier, FIG_REFUTED);
    assert_string_equal(g->mode, "≠");
    assert_string_equal(g->expr, "40 * 2^30");
    assert_true(g->value == 42949672960.0);
    assert_string_equal(buf_cstr(&f->text), "40 GB");
    /* the claim struck through in its button, the true value beside it and
     * in the popover (figmark.c) */
    assert_string_equal(buf_cstr(&f->enter),
                        "<span class=\"fig\" id=\"fig-1\" data-tier=\"refuted\"><button type=\"button\" "
                        "class=\"fig-q\" popovertarget=\"fig-1-d\" aria-describedby=\"fig-1-d\"><s>");
    const char *exit_want = "</s></button><span class=\"fig-true\"> \xE2\x86\x92 43 GB</span>"
                            "<span class=\"fig-pop\" popover id=\"fig-1-d\">";
    assert_memory_equal(buf_cstr(&f->exit), exit_want, strlen(exit_want));
    assert_non_null(strstr(buf_cstr(&f->exit), "True value</span> 43 GB</span>"));
    /* ASCII; then a value that rounds to the quote, shown with a decimal more */
    S_span(f, "1 GB {!= 1.6e9}");
    assert_int_equal(f->dl.n, 0);
    assert_string_equal(S_last(f)->mode, "!=");
    S_span(f, "1 GB {≉ 1.4e9}");
    assert_int_equal(f->dl.n, 0);
    assert_true(strstr(buf_cstr(&f->exit), "> \xE2\x86\x92 1.4 GB<") != NULL);
    S_span(f, "1 GB {!~20% 1.1e9}"); /* within 20%: the claim is right */
    assert_int_equal(f->dl.n, 1);
    assert_string_equal(f->dl.v[0].msg, "quoted 1 GB and it matches within 20%: the claim is "
                                        "right (1.1e9 = 1,100,000,000 B = 1.1 GB)");
    assert_false(S_last(f)->ok);
    assert_int_equal(S_last(f)->tier, FIG_REFUTED);
    /* the exact rule: 40 GiB is right */
    S_span(f, "40 GiB {≠ 40 * 2^30}");
    assert_int_equal(f->dl.n, 2);
    assert_string_equal(f->dl.v[1].msg, "quoted 40 GiB and it matches: the claim is right "
                                        "(40 * 2^30 = 42,949,672,960 B = 40.0 GiB)");
    assert_int_equal(f->dl.v[1].line, 3);
    assert_int_equal(f->dl.v[1].col, 5);
    assert_true(strstr(buf_cstr(&f->enter), " data-status=\"fail\"") != NULL);
    /* several values: any that matches makes the claim right */
    S_span(f, "5 {≠ 6, 5}");
    assert_int_equal(f->dl.n, 3);
    assert_true(strncmp(f->dl.v[2].msg, "value 2 of 2: quoted 5 and it matches", 37) == 0);
    /* no number is no refutation */
    S_span(f, "5 {≠ 0/0}");
    assert_int_equal(f->dl.n, 4);
    S_span(f, "5 {≠ nil}");
    assert_int_equal(f->dl.n, 5);
    assert_true(isnan(S_last(f)->value));
}

static void test_refuted_sources(void **state)
{
    fx *f = *state;
    S_start(f);
    S_span(f, "41 GB {≠ 40 * 2^30; cite quest2024}");
    const figure *g = S_last(f);
    assert_int_equal(f->dl.n, 0);
    assert_true(g->ok);
    assert_string_equal(g->expr, "40 * 2^30");
    assert_string_equal(g->provenance, "claimed in quest2024: Quest: <sparse> & fast");
    assert_true(strstr(buf_cstr(&f->exit), "Claimed in</span> claimed in quest2024: Quest: "
                                           "&lt;sparse&gt; &amp; fast</span>") != NULL);
    S_span(f, "41 GB {≠ 40 * 2^30;cite   quest2024  }");
    assert_int_equal(f->dl.n, 0);
    assert_string_equal(S_last(f)->expr, "40 * 2^30");
    S_span(f, "41 GB {≠ 40 * 2^30; cite nope}");
    assert_int_equal(f->dl.n, 1);
    assert_string_equal(f->dl.v[0].msg, "cited source \"nope\" is not in checks/sources.yaml");
    assert_false(S_last(f)->ok);
    /* only at the end, only for refuted claims */
    S_span(f, "41 GB {= 40 * 2^30; cite quest2024}");
    assert_int_equal(f->dl.n, 2);
}

#define T(f) cmocka_unit_test_setup_teardown(f, S_setup, S_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_lint_table),
        cmocka_unit_test(test_lint_positions_and_level),
        T(test_exact_figures),
        T(test_failing_figures),
        T(test_approximate_figures),
        T(test_cited_figures),
        T(test_refuted_figures),
        T(test_refuted_sources),
        T(test_measured_figures),
        T(test_span_options),
        T(test_report_links_and_ownership),
        T(test_escaped_and_inline),
        T(test_budget_reported_once),
        T(test_blocks),
        T(test_block_errors),
        T(test_reentrant_figure),
        cmocka_unit_test(test_plain_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
