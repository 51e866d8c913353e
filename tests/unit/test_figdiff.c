/* Unit tests for gen/figdiff.c: reading checks.json (and refusing what is not
 * one), matching figures across versions by file, expression and occurrence
 * when lines move, what each change prints, GitHub commands, and a whole
 * check --diff against a build's output folder. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "figdiff.h"
#include "report.h"
#include "tmpdir.h"

static figure S_fig(int line, const char *q, const char *expr, fig_tier tier, bool ok, double v)
{
    figure f;
    memset(&f, 0, sizeof f);
    f.line = line;
    f.col = 5;
    f.quote = (char *)q;
    f.expr = (char *)expr;
    f.mode = (char *)(tier == FIG_CITED ? "cite" : "=");
    f.tier = tier;
    f.ok = ok;
    f.value = v;
    f.detail = (char *)"";
    f.provenance = (char *)"";
    f.anchor = (char *)"a-1";
    return f;
}

#define MIB 1048576.0

/* checks.json of figs (of content/a.md), as the build writes it. */
static char *S_json(const figure *figs, size_t n)
{
    buf b = BUF_INIT, head = BUF_INIT;
    report_totals t = {0, 0, {0}};
    report_json_head(&b);
    report_json_page(&head, "/a/", "content/a.md");
    for (size_t i = 0; i < n; i++)
        report_json_figure(&b, &t, &head, &figs[i]);
    report_json_tail(&b, &t);
    buf_free(&head);
    return buf_detach(&b);
}

/* The lines figdiff_compare prints for old -> new_. */
static char *S_compare(const figure *o, size_t no, const figure *w, size_t nw, bool github,
                       figdiff_totals *t)
{
    figdiff_set a = {0}, b = {0};
    char *json = S_json(o, no);
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(figdiff_load_json(&a, json, strlen(json), "old.json", &dl), 0);
    free(json);
    for (size_t i = 0; i < nw; i++)
        figdiff_add(&b, "content/a.md", &w[i]);
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    figdiff_compare(&a, &b, github, f, t);
    fclose(f);
    figdiff_set_free(&a);
    figdiff_set_free(&b);
    diag_list_free(&dl);
    return out;
}

static void test_changes(void **state)
{
    (void)state;
    const figure old[] = {
        S_fig(10, "224 MiB", "kv.bytes(q, 4096)", FIG_COMPUTED, true, 224 * MIB),
        S_fig(11, "40 GiB", "kv.bytes(m, 131072)", FIG_COMPUTED, true, 40 * 1024 * MIB),
        S_fig(12, "1.25 GiB", "run()", FIG_COMPUTED, true, 1.25 * 1024 * MIB),
        S_fig(13, "7.03\xC3\x97", "quest", FIG_CITED, true, 0),
        S_fig(14, "53.1%", "acc(q)", FIG_COMPUTED, true, 0.531),
        S_fig(15, "1,024 B", "x", FIG_COMPUTED, true, 1024),
    };
    /* three lines added above: every figure moves */
    const figure now[] = {
        S_fig(13, "224 MiB", "kv.bytes(q, 4096)", FIG_COMPUTED, true, 232 * MIB + 1),
        S_fig(14, "40 GiB", "kv.bytes(m, 131072)", FIG_COMPUTED, false, 40.6 * 1024 * MIB),
        S_fig(15, "1.25 GiB", "run()", FIG_MEASURED, true, 1.25 * 1024 * MIB),
        S_fig(16, "7.03\xC3\x97", "quest", FIG_CITED, true, 0),
        S_fig(17, "1,024 B", "x", FIG_COMPUTED, true, 1024.4),
        S_fig(18, "2 B", "y", FIG_COMPUTED, true, 2),
    };
    figdiff_totals t;
    char *out = S_compare(old, 6, now, 6, false, &t);
    assert_string_equal(out, "content/a.md:13:5: 224 MiB -> 232 MiB (kv.bytes(q, 4096))\n"
                             "content/a.md:14:5: figure removed: 53.1% (acc(q))\n" /* first */
                             "content/a.md:14:5: 40 GiB -> 41 GiB (kv.bytes(m, 131072)); pass -> fail\n"
                             "content/a.md:15:5: 1.25 GiB (run()); computed -> measured\n"
                             "content/a.md:17:5: 1,024.0 B -> 1,024.4 B (x)\n"
                             "content/a.md:18:5: new figure: 2 B (y)\n");
    free(out);
    assert_int_equal(t.changed, 4);
    assert_int_equal(t.values, 3);
    assert_int_equal(t.statuses, 1);
    assert_int_equal(t.tiers, 1);
    assert_int_equal(t.added, 1);
    assert_int_equal(t.removed, 1);
    assert_int_equal(t.same, 1);
    /* nothing changed: nothing printed */
    out = S_compare(old, 6, old, 6, false, &t);
    assert_string_equal(out, "");
    free(out);
    assert_int_equal(t.same, 6);
}

/* The n-th figure of an expression in a file is the n-th one again. */
static void test_occurrence(void **state)
{
    (void)state;
    const figure old[] = {
        S_fig(1, "1 B", "f(1)", FIG_COMPUTED, true, 1),
        S_fig(2, "1 B", "f(1)", FIG_COMPUTED, true, 1),
    };
    const figure now[] = {
        S_fig(1, "1 B", "f(1)", FIG_COMPUTED, true, 1),
        S_fig(9, "2 B", "f(1)", FIG_COMPUTED, true, 2),
        S_fig(12, "2 B", "f(1)", FIG_COMPUTED, true, 2),
    };
    figdiff_totals t;
    char *out = S_compare(old, 2, now, 3, false, &t);
    assert_string_equal(out, "content/a.md:9:5: 1 B -> 2 B (f(1))\n"
                             "content/a.md:12:5: new figure: 2 B (f(1))\n");
    free(out);
}

static void test_github(void **state)
{
    (void)state;
    const figure old[] = {S_fig(1, "1 B", "a,b", FIG_COMPUTED, true, 1),
                          S_fig(2, "1 B", "gone", FIG_COMPUTED, true, 1)};
    const figure now[] = {S_fig(1, "1 B", "a,b", FIG_COMPUTED, true, 3),
                          S_fig(5, "3 B", "new", FIG_COMPUTED, false, 1)};
    figdiff_totals t;
    char *out = S_compare(old, 2, now, 2, true, &t);
    assert_string_equal(out, "content/a.md:1:5: 1 B -> 3 B (a,b)\n"
                             "::notice file=content/a.md,line=1,col=5::1 B -> 3 B (a,b)\n"
                             "content/a.md:2:5: figure removed: 1 B (gone)\n"
                             "::warning file=content/a.md,line=2,col=5::figure removed: 1 B (gone)\n"
                             "content/a.md:5:5: new figure: 1 B (new)\n"
                             "::warning file=content/a.md,line=5,col=5::new figure: 1 B (new)\n");
    free(out);
}

typedef struct {
    const char *json;
    const char *msg; /* the start of the one error */
} bad_case;

static void test_not_checks_json(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"", "old.json"},
        {"[1, 2]", "old.json:1:1: error: not a checks.json: no \"figures\" list"},
        {"{\"figures\": {}}", "old.json:1:1: error: not a checks.json: no \"figures\" list"},
        {"{\"figures\": [{\"file\": 1}]}", "old.json:1:14: error: not a checks.json: figure 1 has no valid \"file\""},
        {"{\"figures\": [{\"file\": \"a\", \"quote\": \"1 B\", \"expr\": \"x\", \"tier\": \"computed\", "
         "\"status\": \"pass\", \"line\": 1, \"col\": 1}]}",
         "old.json:1:14: error: not a checks.json: figure 1 has no valid \"value\""},
        {"{\"figures\": [{\"file\": \"a\", \"quote\": \"1 B\", \"expr\": \"x\", \"tier\": \"computed\", "
         "\"status\": \"pass\", \"line\": \"1\", \"col\": 1, \"value\": 1}]}",
         "old.json:1:14: error: not a checks.json: figure 1 has no valid \"line\""},
        {"{\"figures\": [[[[[[[[[]]]]]]]]]}", "old.json:1:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        figdiff_set s = {0};
        diag_list dl;
        diag_list_init(&dl);
        assert_int_equal(figdiff_load_json(&s, cases[i].json, strlen(cases[i].json), "old.json", &dl), -1);
        assert_int_equal(dl.errors, 1);
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        diag_print(&dl, f, false);
        fclose(f);
        if (strncmp(out, cases[i].msg, strlen(cases[i].msg)) != 0)
            fail_msg("case %zu: \"%s\"", i, out);
        free(out);
        assert_int_equal(s.n, 0);
        figdiff_set_free(&s);
        diag_list_free(&dl);
    }
}

static void test_after_check(void **state)
{
    char *dir = NULL;
    assert_int_equal(tmpdir_setup((void **)&dir, "/tmp/kvsite-figdiff-XXXXXX"), 0);
    (void)state;
    const figure old[] = {S_fig(3, "224 MiB", "q", FIG_COMPUTED, true, 224 * MIB)};
    char *json = S_json(old, 1);
    tmpdir_put(dir, "site/checks.json", json);
    free(json);
    figure now[] = {S_fig(4, "224 MiB", "q", FIG_COMPUTED, true, 232 * MIB)};
    page_record rec;
    record_init(&rec);
    rec.src = (char *)"content/a.md";
    rec.figs = now;
    rec.nfigs = 1;
    diag_list dl;
    diag_list_init(&dl);
    build_result r = {dir, &rec, 1, NULL, &dl, 1u << 20, false, 0};
    char *site = fs_join(dir, "site");
    char *out = NULL, *err = NULL;
    size_t olen = 0, elen = 0;
    FILE *fo = open_memstream(&out, &olen), *fe = open_memstream(&err, &elen);
    figdiff_opts o = {site, fo, fe};
    assert_int_equal(figdiff_after_check(&o, &r), 0);
    r.status = 1; /* the check's status is the exit status */
    assert_int_equal(figdiff_after_check(&o, &r), 1);
    char *missing = fs_join(dir, "nope");
    o.old = missing;
    assert_int_equal(figdiff_after_check(&o, &r), 2);
    fclose(fo);
    fclose(fe);
    assert_string_equal(out, "content/a.md:4:5: 224 MiB -> 232 MiB (q)\n"
                             "content/a.md:4:5: 224 MiB -> 232 MiB (q)\n");
    assert_non_null(strstr(err, "kvsite: check --diff: 1 figure changed (1 value, 0 statuses, 0 "
                                "tiers), 0 new, 0 removed, 0 unchanged since "));
    assert_non_null(strstr(err, "kvsite: check --diff: cannot read "));
    free(out);
    free(err);
    free(missing);
    free(site);
    diag_list_free(&dl);
    tmpdir_teardown((void **)&dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_changes),   cmocka_unit_test(test_occurrence),
        cmocka_unit_test(test_github),    cmocka_unit_test(test_not_checks_json),
        cmocka_unit_test(test_after_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
