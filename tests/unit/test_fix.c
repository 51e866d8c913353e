/* Unit tests for gen/fix.c: the rewritten quote (decimals, separators, thin
 * spaces, units, what is never touched), finding the quote on its line, the
 * unified diff, and a whole --fix over files (atomic, mode kept, no links,
 * only content/, refused on other errors, --dry-run writes nothing). */
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

#include "fix.h"
#include "tmpdir.h"

#define THIN "\xE2\x80\x89"
#define NNBSP "\xE2\x80\xAF"

static figure S_fig(int line, int col, const char *q, const char *mode, fig_tier tier, bool ok,
                    double value)
{
    figure f;
    memset(&f, 0, sizeof f);
    f.line = line;
    f.col = col;
    f.quote = (char *)q;
    f.expr = (char *)"e";
    f.mode = (char *)mode;
    f.tier = tier;
    f.ok = ok;
    f.value = value;
    f.detail = (char *)"";
    f.provenance = (char *)"";
    f.anchor = (char *)"a";
    return f;
}

typedef struct {
    const char *quote;
    double value;
    const char *want; /* NULL: not fixed */
} quote_case;

static void test_fix_quote(void **state)
{
    (void)state;
    static const quote_case cases[] = {
        {"234,881,024 B", 234938368, "234,938,368 B"},
        {"234" THIN "881" THIN "024 B", 234938368, "234" THIN "938" THIN "368 B"},
        {"234" NNBSP "881" NNBSP "024 B", 234938368, "234" NNBSP "938" NNBSP "368 B"},
        {"234881024 B", 234938368, "234938368 B"},
        {"112 MiB", 224.0 * 1048576, "224 MiB"},
        {"112MiB", 224.0 * 1048576, "224MiB"},
        {"12.2 GiB", 12.25 * 1073741824.0, "12.3 GiB"}, /* half away from zero */
        {"0.50 GiB", 0.0625 * 1073741824.0, "0.06 GiB"},
        {"28.1%", 0.2852, "28.5%"},
        {"53%", 0.531, "53%"},
        {"7.0\xC3\x97", 7.03125, "7.0\xC3\x97"}, /* passes: not fixed */
        {"1.5\xC3\x97", 7.03125, "7.0\xC3\x97"},
        {"2x", 3, "3x"},
        {"40 GB", 40 * 1073741824.0, "43 GB"},
        {"40 GiB", 42e9, "39 GiB"},
        {"5 kB", 5500, "6 kB"},
        {"1,000 bits", 250, "2,000 bits"},
        {"4096", 8192, "8192"},
        {"4,096", 8192, "8,192"},
        {"1 B", 1e17, NULL},          /* more than 15 digits: not a quote */
        {"~40 GB", 42e9, NULL},       /* approximate by its mark */
        {"12 parsecs", 13, NULL},     /* a unit the page defined */
        {"1 B", NAN, NULL},           /* no number */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        figure f = S_fig(1, 1, cases[i].quote, "=", FIG_COMPUTED, false, cases[i].value);
        buf out = BUF_INIT;
        const char *why = NULL;
        int rc = fix_quote(&f, &out, &why);
        bool passes = cases[i].want && !strcmp(cases[i].want, cases[i].quote);
        if (cases[i].want && !passes) {
            if (rc != 0)
                fail_msg("%s: not fixed: %s", cases[i].quote, why);
            assert_string_equal(buf_cstr(&out), cases[i].want);
        } else {
            if (rc == 0)
                fail_msg("%s: fixed to %s", cases[i].quote, buf_cstr(&out));
            assert_non_null(why);
            assert_int_equal(out.len, 0);
        }
        buf_free(&out);
    }
    /* never refuted, cited, approximate or passing figures */
    const figure never[] = {
        S_fig(1, 1, "1 B", "\xE2\x89\xA0", FIG_REFUTED, false, 1),
        S_fig(1, 1, "1 B", "cite", FIG_CITED, false, 0),
        S_fig(1, 1, "1 B", "\xE2\x89\x88", FIG_COMPUTED, false, 3),
        S_fig(1, 1, "1 B", "~", FIG_COMPUTED, false, 3),
        S_fig(1, 1, "1 B", "=", FIG_COMPUTED, true, 1),
    };
    for (size_t i = 0; i < sizeof never / sizeof never[0]; i++) {
        buf out = BUF_INIT;
        const char *why;
        assert_int_equal(fix_quote(&never[i], &out, &why), -1);
        assert_int_equal(out.len, 0);
    }
    /* measured figures are fixed like computed ones */
    figure m = S_fig(1, 1, "1 B", "=", FIG_MEASURED, false, 2);
    buf out = BUF_INIT;
    const char *why;
    assert_int_equal(fix_quote(&m, &out, &why), 0);
    assert_string_equal(buf_cstr(&out), "2 B");
    buf_free(&out);
}

static void test_locate(void **state)
{
    (void)state;
    const char *t = "---\ntitle: \"`1 B {= 2}`\"\n---\n"
                    "a `1 B {x}` `1 B {= 2}` `` 1 B {= 3} `` and `1 B \\{= 4}` `1 B  {= 5}`\n"
                    "`1 B`{= 6} last `1 B {= 7}`";
    size_t n = strlen(t);
    const char *l4 = strstr(t, "\na `") + 1;
    assert_int_equal(fix_locate(t, n, 2, "1 B", 0), (long)(strstr(t, "1 B {= 2}") - t));
    /* `1 B {x}` is code, `1 B \{= 4}` shown as code; spaces before the brace are fine */
    assert_int_equal(fix_locate(t, n, 4, "1 B", 0), (long)(strstr(l4, "1 B {= 2}") - t));
    assert_int_equal(fix_locate(t, n, 4, "1 B", 1), (long)(strstr(l4, "1 B {= 3}") - t));
    assert_int_equal(fix_locate(t, n, 4, "1 B", 2), (long)(strstr(l4, "1 B  {= 5}") - t));
    assert_int_equal(fix_locate(t, n, 4, "1 B", 3), -1);
    assert_int_equal(fix_locate(t, n, 5, "1 B", 0), (long)(strstr(t, "1 B {= 7}") - t));
    assert_int_equal(fix_locate(t, n, 6, "1 B", 0), -1);
    assert_int_equal(fix_locate(t, n, 0, "1 B", 0), -1);
    assert_int_equal(fix_locate(t, n, 4, "", 0), -1);
}

static void test_udiff(void **state)
{
    (void)state;
    buf d = BUF_INIT;
    fix_udiff(&d, "content/a.md", "x\n", 2, "x\n", 2);
    assert_int_equal(d.len, 0);
    const char *o = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17";
    const char *w = "1\n2\nC\n4\n5\n6\n7\n8\nC\n10\n11\n12\n13\n14\n15\n16\nC";
    fix_udiff(&d, "content/a.md", o, strlen(o), w, strlen(w));
    assert_string_equal(buf_cstr(&d), "--- a/content/a.md\n+++ b/content/a.md\n"
                                      "@@ -1,12 +1,12 @@\n 1\n 2\n-3\n+C\n 4\n 5\n 6\n 7\n 8\n-9\n+C\n"
                                      " 10\n 11\n 12\n"
                                      "@@ -14,4 +14,4 @@\n 14\n 15\n 16\n-17\n"
                                      "\\ No newline at end of file\n+C\n"
                                      "\\ No newline at end of file\n");
    buf_clear(&d);
    fix_udiff(&d, "x.md", "a\nb\n", 4, "A\nB\n", 4);
    assert_string_equal(buf_cstr(&d),
                        "--- a/x.md\n+++ b/x.md\n@@ -1,2 +1,2 @@\n-a\n-b\n+A\n+B\n");
    buf_free(&d);
}

/* ---- a whole --fix ---- */

typedef struct {
    char *dir;
    page_record rec[2];
    figure figs[2][3];
    diag_list dl;
    build_result r;
    FILE *out, *err;
    char *outbuf, *errbuf;
    size_t outlen, errlen;
} fx;

static int S_setup(void **state)
{
    fx *x = calloc(1, sizeof *x);
    if (tmpdir_setup((void **)&x->dir, "/tmp/kvsite-fix-XXXXXX") != 0)
        return -1;
    tmpdir_put(x->dir, "content/a.md", "# A\n\nIt is `1 B {= 2}` and `5 MiB {≈ 1}`.\r\n");
    tmpdir_put(x->dir, "content/sub/b.md", "`7 B {= 8}`");
    diag_list_init(&x->dl);
    for (int j = 0; j < 2; j++)
        record_init(&x->rec[j]);
    x->rec[0].src = (char *)"content/a.md";
    x->figs[0][0] = S_fig(3, 7, "1 B", "=", FIG_COMPUTED, false, 2);
    x->figs[0][1] = S_fig(3, 23, "5 MiB", "\xE2\x89\x88", FIG_COMPUTED, false, 1);
    x->rec[0].figs = x->figs[0];
    x->rec[0].nfigs = 2;
    x->rec[1].src = (char *)"content/sub/b.md";
    x->figs[1][0] = S_fig(1, 1, "7 B", "=", FIG_MEASURED, false, 8);
    x->rec[1].figs = x->figs[1];
    x->rec[1].nfigs = 1;
    diag_error(&x->dl, "content/a.md", 3, 7, "quoted 1 B, but 2");
    diag_error(&x->dl, "content/a.md", 3, 23, "quoted 5 MiB, but 1");
    diag_error(&x->dl, "content/sub/b.md", 1, 1, "quoted 7 B, but 8");
    x->r = (build_result){x->dir, x->rec, 2, NULL, &x->dl, 1u << 20, false, 1};
    x->out = open_memstream(&x->outbuf, &x->outlen);
    x->err = open_memstream(&x->errbuf, &x->errlen);
    *state = x;
    return 0;
}

static int S_teardown(void **state)
{
    fx *x = *state;
    fclose(x->out);
    fclose(x->err);
    free(x->outbuf);
    free(x->errbuf);
    diag_list_free(&x->dl);
    tmpdir_teardown((void **)&x->dir);
    free(x);
    return 0;
}

static char *S_file(fx *x, const char *rel)
{
    char *p = fs_join(x->dir, rel);
    buf b = BUF_INIT;
    assert_int_equal(fs_read_file(p, 1 << 20, &b), FS_OK);
    free(p);
    return buf_detach(&b);
}

static void test_fix_files(void **state)
{
    fx *x = *state;
    char *b = fs_join(x->dir, "content/sub/b.md");
    assert_int_equal(chmod(b, 0640), 0);
    fix_opts o = {false, x->out, x->err};
    assert_int_equal(fix_after_check(&o, &x->r), 1); /* the approximate one is left */
    fflush(x->out);
    fflush(x->err);
    assert_string_equal(x->outbuf, "content/a.md:3:7: fixed: 1 B -> 2 B\n"
                                   "content/sub/b.md:1:1: fixed: 7 B -> 8 B\n");
    assert_non_null(strstr(x->errbuf, "content/a.md:3:23: not fixed: not an exact quote\n"));
    assert_non_null(strstr(x->errbuf, "2 quotes in 2 files fixed, 1 error left"));
    char *a = S_file(x, "content/a.md");
    assert_string_equal(a, "# A\n\nIt is `2 B {= 2}` and `5 MiB {≈ 1}`.\r\n");
    free(a);
    a = S_file(x, "content/sub/b.md");
    assert_string_equal(a, "`8 B {= 8}`");
    free(a);
    struct stat st;
    assert_int_equal(stat(b, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    free(b);
    /* no temporary file left */
    char *left = fs_join(x->dir, "content/sub");
    char *tmp = xasprintf("%s/.kvsite-fix.%ld", left, (long)getpid());
    assert_false(fs_exists(tmp));
    free(tmp);
    free(left);
}

static void test_dry_run(void **state)
{
    fx *x = *state;
    fix_opts o = {true, x->out, x->err};
    x->dl.v[1].level = DIAG_WARNING; /* every error fixable: status 0 */
    x->dl.errors--;
    assert_int_equal(fix_after_check(&o, &x->r), 0);
    fflush(x->out);
    assert_string_equal(x->outbuf, "--- a/content/a.md\n+++ b/content/a.md\n@@ -1,3 +1,3 @@\n"
                                   " # A\n \n-It is `1 B {= 2}` and `5 MiB {≈ 1}`.\r\n"
                                   "+It is `2 B {= 2}` and `5 MiB {≈ 1}`.\r\n"
                                   "--- a/content/sub/b.md\n+++ b/content/sub/b.md\n@@ -1,1 +1,1 @@\n"
                                   "-`7 B {= 8}`\n\\ No newline at end of file\n"
                                   "+`8 B {= 8}`\n\\ No newline at end of file\n");
    char *a = S_file(x, "content/a.md");
    assert_string_equal(a, "# A\n\nIt is `1 B {= 2}` and `5 MiB {≈ 1}`.\r\n");
    free(a);
}

static void test_refused(void **state)
{
    fx *x = *state;
    fix_opts o = {false, x->out, x->err};
    diag_error(&x->dl, "content/a.md", 1, 1, "front matter: not YAML");
    assert_int_equal(fix_after_check(&o, &x->r), 2);
    fflush(x->err);
    assert_non_null(strstr(x->errbuf, "refused, nothing written: 1 error is not about a "
                                      "figure's value (the first: content/a.md:1:1: front "
                                      "matter: not YAML)"));
    char *a = S_file(x, "content/sub/b.md");
    assert_string_equal(a, "`7 B {= 8}`");
    free(a);
    /* a figure that gave no number is no value to fix either */
    diag_list_free(&x->dl);
    diag_list_init(&x->dl);
    x->figs[1][0].value = NAN;
    diag_error(&x->dl, "content/sub/b.md", 1, 1, "in figure: boom");
    assert_int_equal(fix_after_check(&o, &x->r), 2);
}

static void test_links_and_outside(void **state)
{
    fx *x = *state;
    fix_opts o = {false, x->out, x->err};
    /* content/sub is a link now: nothing through it */
    char *sub = fs_join(x->dir, "content/sub"), *real = fs_join(x->dir, "real");
    assert_int_equal(rename(sub, real), 0);
    assert_int_equal(symlink(real, sub), 0);
    /* and a page outside content/ is never written */
    tmpdir_put(x->dir, "other/c.md", "`1 B {= 2}`");
    x->rec[0].src = (char *)"other/c.md";
    x->figs[0][0].line = 1;
    x->figs[0][0].col = 1;
    diag_list_free(&x->dl);
    diag_list_init(&x->dl);
    diag_error(&x->dl, "other/c.md", 1, 1, "quoted 1 B, but 2");
    diag_error(&x->dl, "content/sub/b.md", 1, 1, "quoted 7 B, but 8");
    assert_int_equal(fix_after_check(&o, &x->r), 1);
    fflush(x->out);
    fflush(x->err);
    assert_string_equal(x->outbuf ? x->outbuf : "", "");
    assert_non_null(strstr(x->errbuf, "content/sub/b.md: error: not fixed: a symbolic link"));
    char *c = S_file(x, "other/c.md"), *b = S_file(x, "real/b.md");
    assert_string_equal(c, "`1 B {= 2}`");
    assert_string_equal(b, "`7 B {= 8}`");
    free(c);
    free(b);
    free(sub);
    free(real);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fix_quote),
        cmocka_unit_test(test_locate),
        cmocka_unit_test(test_udiff),
        cmocka_unit_test_setup_teardown(test_fix_files, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_dry_run, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_refused, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_links_and_outside, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
