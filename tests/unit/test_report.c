/* Unit tests for gen/report.c: checks.json's figure lines, string escapes
 * and totals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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
    buf head = BUF_INIT;
    report_json_head(&b);
    figure a = S_fig("224 MiB", "kv.bytes(m, 4096)", FIG_COMPUTED, true, 234881024.0);
    figure c = S_fig("7.03×", "quest", FIG_CITED, false, 0.0);
    report_json_page(&head, "/docs/a/", "content/a.md");
    report_json_figure(&b, &t, &head, &a);
    report_json_figure(&b, &t, &head, &c);
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
        "  \"totals\": {\"figures\": 2, \"computed\": 1, \"measured\": 0, \"cited\": 1, \"refuted\": 0, "
        "\"passed\": 1, \"failed\": 1}\n}\n";
    assert_string_equal(b.ptr, want);
    assert_int_equal(t.total, 2);
    assert_int_equal(t.failed, 1);
    assert_int_equal(t.tiers[FIG_CITED], 1);
    buf_free(&b);
    buf_free(&head);
}

static void test_escapes(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    report_totals t = {0, 0, {0, 0, 0}};
    buf head = BUF_INIT;
    figure f = S_fig("a\"b\\c\nd\te\x01\x1f 键", "x", FIG_MEASURED, true, NAN);
    f.provenance = NULL; /* absent: an empty string */
    report_json_page(&head, "/", "");
    report_json_figure(&b, &t, &head, &f);
    assert_non_null(strstr(b.ptr, "\"quote\": \"a\\\"b\\\\c\\nd\\te\\u0001\\u001f 键\""));
    assert_non_null(strstr(b.ptr, "\"value\": null")); /* not a number */
    assert_non_null(strstr(b.ptr, "\"provenance\": \"\""));
    assert_int_equal(b.ptr[0], '\n'); /* the first figure has no comma */
    assert_int_equal(b.len, strlen(b.ptr));
    buf_free(&b);
    buf_free(&head);
}

/* What the escapes were before they went eight bytes at a time: a byte at a
 * time, \" \\ \n \t, \u00XX for the other bytes below 0x20. */
static void S_escape_ref(buf *b, const char *s)
{
    buf_putc(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            buf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            buf_puts(b, "\\n");
        else if (*p == '\t')
            buf_puts(b, "\\t");
        else if (*p < 0x20)
            buf_printf(b, "\\u%04x", *p);
        else
            buf_putc(b, *p);
    }
    buf_putc(b, '"');
}

/* Every byte that needs an escape (and the plain bytes around their codes),
 * at every offset of strings up to 40 bytes long, within and after the
 * eight-byte words, in a figure's quote and in the page's fields. */
static void test_escapes_everywhere(void **state)
{
    (void)state;
    const unsigned char special[] = {1, 0x08, '\t', '\n', 0x0c, '\r', 0x1f, ' ', '!', '"',
                                     '#', '[', '\\', ']', 0x7f, 0x80, 0xe9, 0xff};
    char s[48];
    buf got = BUF_INIT, want = BUF_INIT, head = BUF_INIT;
    for (size_t len = 1; len <= 40; len++) {
        for (size_t at = 0; at < len; at++) {
            for (size_t k = 0; k < sizeof special; k++) {
                for (size_t i = 0; i < len; i++)
                    s[i] = (char)('a' + i % 26);
                s[at] = (char)special[k];
                s[len - 1 - (at * 7) % len] = (char)special[(k + 3) % sizeof special];
                s[len] = '\0';
                report_totals t = {0, 0, {0}};
                figure f = S_fig(s, "e", FIG_COMPUTED, true, 1.0);
                buf_clear(&got);
                report_json_page(&head, s, "f.md");
                report_json_figure(&got, &t, &head, &f);
                buf_clear(&want);
                buf_puts(&want, "\n    {\"page\": ");
                S_escape_ref(&want, s);
                buf_puts(&want, ", \"file\": \"f.md\", \"line\": 12, \"col\": 3, \"quote\": ");
                S_escape_ref(&want, s);
                buf_puts(&want, ", \"expr\": \"e\", \"mode\": \"=\", \"value\": 1, ");
                assert_true(got.len > want.len);
                if (memcmp(got.ptr, want.ptr, want.len) != 0)
                    fail_msg("length %zu, byte 0x%02x at %zu:\n%s\n%s", len, special[k], at,
                             got.ptr, want.ptr);
            }
        }
    }
    buf_free(&got);
    buf_free(&want);
    buf_free(&head);
}

/* The tier and status words are fig_tier_name's and the figure's ok. */
static void test_tier_and_status(void **state)
{
    (void)state;
    buf b = BUF_INIT, head = BUF_INIT, want = BUF_INIT;
    report_json_page(&head, "/", "a.md");
    for (int tier = FIG_COMPUTED; tier < FIG_TIERS; tier++) {
        for (int ok = 0; ok < 2; ok++) {
            report_totals t = {0, 0, {0}};
            figure f = S_fig("q", "e", (fig_tier)tier, ok, 0.5);
            buf_clear(&b);
            report_json_figure(&b, &t, &head, &f);
            buf_clear(&want);
            buf_printf(&want, "\"value\": %s, \"tier\": \"%s\", \"status\": \"%s\", \"detail\": \"d\", ",
                       tier == FIG_CITED ? "null" : "0.5", fig_tier_name((fig_tier)tier),
                       ok ? "pass" : "fail");
            if (!strstr(b.ptr, want.ptr))
                fail_msg("%s\nhas no\n%s", b.ptr, want.ptr);
            assert_int_equal(t.tiers[tier], 1);
            assert_int_equal(t.failed, !ok);
        }
    }
    buf_free(&b);
    buf_free(&head);
    buf_free(&want);
}

/* Report groups: the top-level sections, each page's group and the
 * report page that lists it. */
static void test_groups(void **state)
{
    (void)state;
    page home = {0}, a = {0}, a_sub = {0}, a_page = {0}, root_page = {0};
    home.kind = PAGE_HOME;
    home.url = (char *)"/";
    a.kind = PAGE_SECTION;
    a.url = (char *)"/a/";
    a.parent = &home;
    a_sub.kind = PAGE_SECTION;
    a_sub.url = (char *)"/a/s/";
    a_sub.parent = &a;
    a_page.kind = PAGE_REGULAR;
    a_page.url = (char *)"/a/s/p/";
    a_page.parent = &a_sub;
    root_page.kind = PAGE_REGULAR;
    root_page.url = (char *)"/r/";
    root_page.parent = &home;
    page *pages[] = {&home, &a, &a_sub, &a_page, &root_page};
    content_index idx;
    memset(&idx, 0, sizeof idx);
    idx.pages = pages;
    idx.npages = 5;
    size_t n;
    size_t *sections = report_sections(&idx, &n);
    assert_int_equal(n, 1);
    assert_int_equal(sections[0], 1);
    size_t *g = report_groups(&idx, sections, n);
    const size_t want[] = {REPORT_GROUP_ROOT, 0, 0, 0, REPORT_GROUP_ROOT};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(g[i], want[i]);
    free(g);
    g = report_groups(&idx, sections, 0); /* one report */
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(g[i], REPORT_GROUP_ALL);
    free(g);
    char *path = report_path(&idx, sections, 0);
    assert_string_equal(path, "/checks/a/");
    free(path);
    path = report_path(&idx, sections, REPORT_GROUP_ROOT);
    assert_string_equal(path, "/checks/");
    free(path);
    free(sections);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_document),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_escapes_everywhere),
        cmocka_unit_test(test_tier_and_status),
        cmocka_unit_test(test_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
