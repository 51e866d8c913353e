/* Unit tests for gen/figmark.c: a figure's markup (the button, its popover of
 * details, the report link), escaping, the words of each language, and the tier
 * table. Figures are made by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "figmark.h"

static figure S_fig(fig_tier t, bool ok)
{
    figure f;
    memset(&f, 0, sizeof f);
    f.quote = (char *)"224 MiB";
    f.expr = (char *)"kv.bytes(m, 4096) < 2^30";
    f.mode = (char *)"=";
    f.detail = (char *)"";
    f.provenance = (char *)"";
    f.anchor = (char *)"notes-x-3";
    f.tier = t;
    f.ok = ok;
    return f;
}

/* enter + quote + exit, as the page shows it */
static char *S_markup(const figmark *m)
{
    buf b = BUF_INIT;
    figmark_open(&b, m);
    buf_puts(&b, m->f->quote);
    figmark_close(&b, m);
    return buf_detach(&b);
}

static void S_has(const char *html, const char *want)
{
    if (!strstr(html, want))
        fail_msg("no \"%s\" in\n%s", want, html);
}

static void test_lang(void **state)
{
    (void)state;
    assert_int_equal(figmark_lang("zh"), 1);
    assert_int_equal(figmark_lang("zh-CN"), 1);
    assert_int_equal(figmark_lang("ZH-Hans"), 1);
    assert_int_equal(figmark_lang("en"), 0);
    assert_int_equal(figmark_lang("z"), 0);
    assert_int_equal(figmark_lang(""), 0);
    assert_int_equal(figmark_lang(NULL), 0);
}

static void test_tier_keys(void **state)
{
    (void)state;
    assert_string_equal(figmark_tier_key(FIG_COMPUTED), "computed");
    assert_string_equal(figmark_tier_key(FIG_MEASURED), "measured");
    assert_string_equal(figmark_tier_key(FIG_CITED), "cited");
    assert_string_equal(figmark_tier_key((fig_tier)99), "computed"); /* out of the table */
    assert_string_equal(fig_tier_name(FIG_CITED), "cited");           /* one table */
}

/* A passing computed figure: the button opens its details, which the button's
 * aria-describedby names; the expression is escaped; the report link is the
 * URL given, plus the row's number. */
static void test_computed(void **state)
{
    (void)state;
    figure f = S_fig(FIG_COMPUTED, true);
    static const char url[] = "/checks/a&amp;b/#notes-x-";
    figmark m = {.f = &f, .value = "234,881,024 B = 224.0 MiB", .report_url = url,
                 .report_url_len = sizeof url - 1, .row = "3", .lang = 0};
    char *h = S_markup(&m);
    assert_string_equal(
        h, "<span class=\"fig\" id=\"notes-x-3\" data-tier=\"computed\"><button type=\"button\" "
           "class=\"fig-q\" popovertarget=\"notes-x-3-d\" aria-describedby=\"notes-x-3-d\">224 MiB"
           "</button><span class=\"fig-pop\" popover id=\"notes-x-3-d\"><span class=\"fig-tier\">"
           "Computed: recomputed from its expression at build time</span><span class=\"fig-row "
           "fig-quote\">224 MiB</span><span class=\"fig-row\"><span class=\"fig-k\">Expression</span> "
           "<code>kv.bytes(m, 4096) &lt; 2^30</code></span><span class=\"fig-row\"><span "
           "class=\"fig-k\">Value</span> 234,881,024 B = 224.0 MiB</span><a class=\"fig-report\" "
           "href=\"/checks/a&amp;b/#notes-x-3\">Its row in the checks report →</a></span></span>");
    free(h);
}

/* Chinese words; a measured figure shows where it was measured; a failing one
 * its message; an anchor with markup characters is escaped in every id. */
static void test_zh_measured_failing(void **state)
{
    (void)state;
    figure f = S_fig(FIG_MEASURED, false);
    f.provenance = (char *)"machine: <A100>";
    f.anchor = (char *)"a\"b-1";
    figmark m = {.f = &f, .message = "quoted 5, but 4 < 5", .lang = 1};
    char *h = S_markup(&m);
    S_has(h, "<span class=\"fig\" id=\"a&quot;b-1\" data-tier=\"measured\" data-status=\"fail\">");
    S_has(h, "popovertarget=\"a&quot;b-1-d\" aria-describedby=\"a&quot;b-1-d\"");
    S_has(h, "<span class=\"fig-tier\">实测：");
    S_has(h, "<span class=\"fig-k\">未通过</span> quoted 5, but 4 &lt; 5</span>");
    S_has(h, "<span class=\"fig-k\">表达式</span>");
    S_has(h, "<span class=\"fig-k\">测量出处</span> machine: &lt;A100&gt;</span>");
    assert_null(strstr(h, "fig-report")); /* no report URL given: no link */
    assert_null(strstr(h, "<span class=\"fig-k\">值</span>")); /* no value */
    free(h);
}

/* A cited figure names its source and links it; it has no expression row. */
static void test_cited(void **state)
{
    (void)state;
    figure f = S_fig(FIG_CITED, true);
    f.expr = (char *)"quest2024";
    figmark m = {.f = &f, .source = "Quest: <sparse>", .source_url = "/sources/#quest2024"};
    char *h = S_markup(&m);
    S_has(h, "data-tier=\"cited\"><button");
    S_has(h, "<span class=\"fig-k\">Source</span> <a href=\"/sources/#quest2024\">Quest: "
             "&lt;sparse&gt;</a></span>");
    assert_null(strstr(h, "Expression"));
    free(h);
}

/* Inside a link: the quote keeps its id and tier, without a button or popover
 * (interactive content must not nest). */
static void test_in_link(void **state)
{
    (void)state;
    figure f = S_fig(FIG_COMPUTED, true);
    figmark m = {.f = &f, .value = "1 B", .in_link = true};
    char *h = S_markup(&m);
    assert_string_equal(h, "<span class=\"fig\" id=\"notes-x-3\" data-tier=\"computed\">224 MiB</span>");
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lang),          cmocka_unit_test(test_tier_keys),
        cmocka_unit_test(test_computed),      cmocka_unit_test(test_zh_measured_failing),
        cmocka_unit_test(test_cited),         cmocka_unit_test(test_in_link),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
