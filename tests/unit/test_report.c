/* Unit tests for gen/report.c: checks.json's figure lines, string escapes
 * and totals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "report.h"

static figure S_fig(const char *q, const char *expr, fig_tier tier, bool ok, double value)
{
    figure f;
    memset(&f, 0, sizeof f);
    f.line = 12;
    f.col = 3;
    f.quote = (char *)q;
    f.expr = (char *)expr;
    f.mode = (char *)(tier == FIG_CITED ? "cite" : "=");
    f.tier = tier;
    f.ok = ok;
    f.value = value;
    f.detail = (char *)"d";
    f.provenance = (char *)"";
    f.anchor = (char *)"a-1";
    return f;
}

static void test_document(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    report_totals t = {0, 0, {0, 0, 0}};
    report_json_head(&b);
    figure a = S_fig("224 MiB", "kv.bytes(m, 4096)", FIG_COMPUTED, true, 234881024.0);
    figure c = S_fig("7.03×", "quest", FIG_CITED, false, 0.0);
    report_json_figure(&b, &t, "/docs/a/", "content/a.md", &a);
    report_json_figure(&b, &t, "/docs/a/", "content/a.md", &c);
    report_json_tail(&b, &t);
    const char *want =
        "{\n  \"figures\": [\n"
        "    {\"page\": \"/docs/a/\", \"file\": \"content/a.md\", \"line\": 12, \"col\": 3, "
        "\"quote\": \"224 MiB\", \"expr\": \"kv.bytes(m, 4096)\", \"mode\": \"=\", "
        "\"value\": 234881024, \"tier\": \"computed\", \"status\": \"pass\", \"detail\": \"d\", "
        "\"provenance\": \"\", \"anchor\": \"a-1\"},\n"
        "    {\"page\": \"/docs/a/\", \"file\": \"content/a.md\", \"line\": 12, \"col\": 3, "
        "\"quote\": \"7.03×\", \"expr\": \"quest\", \"mode\": \"cite\", \"value\": null, "
        "\"tier\": \"cited\", \"status\": \"fail\", \"detail\": \"d\", \"provenance\": \"\", "
        "\"anchor\": \"a-1\"}\n"
        "  ],\n"
        "  \"totals\": {\"figures\": 2, \"computed\": 1, \"measured\": 0, \"cited\": 1, "
        "\"passed\": 1, \"failed\": 1}\n}\n";
    assert_string_equal(b.ptr, want);
    assert_int_equal(t.total, 2);
    assert_int_equal(t.failed, 1);
    assert_int_equal(t.tiers[FIG_CITED], 1);
    buf_free(&b);
}

static void test_escapes(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    report_totals t = {0, 0, {0, 0, 0}};
    figure f = S_fig("a\"b\\c\nd\te\x01\x1f 键", "x", FIG_MEASURED, true, NAN);
    f.provenance = NULL; /* absent: an empty string */
    report_json_figure(&b, &t, "/", "", &f);
    assert_non_null(strstr(b.ptr, "\"quote\": \"a\\\"b\\\\c\\nd\\te\\u0001\\u001f 键\""));
    assert_non_null(strstr(b.ptr, "\"value\": null")); /* not a number */
    assert_non_null(strstr(b.ptr, "\"provenance\": \"\""));
    assert_int_equal(b.ptr[0], '\n'); /* the first figure has no comma */
    assert_int_equal(b.len, strlen(b.ptr));
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document),
        cmocka_unit_test(test_escapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
