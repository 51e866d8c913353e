/* Unit tests for gen/search.c: finding Pagefind (search.pagefind, PATH, a
 * warning when there is none) and running it with a time limit, its failure
 * an error that quotes its output. Stand-in programs (shell scripts) play
 * Pagefind: what they print and write is the test's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <cmocka.h>

#include "config.h"
#include "search.h"
#include "tmpdir.h"

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-search-XXXXXX"); }

/* dir/rel, a shell script with body, executable. Returns its path (malloc'ed). */
static char *S_script(const char *dir, const char *rel, const char *body)
{
    char *text = xasprintf("#!/bin/sh\n%s\n", body);
    tmpdir_put(dir, rel, text);
    free(text);
    char *p = xasprintf("%s/%s", dir, rel);
    assert_int_equal(chmod(p, 0755), 0);
    return p;
}

static void test_find(void **state)
{
    const char *dir = *state;
    config c;
    config_defaults(&c);
    diag_list dl;
    diag_list_init(&dl);

    /* off: nothing looked for, nothing said */
    assert_null(search_find(&c, dir, &dl));
    assert_int_equal(dl.n, 0);

    c.search = true;
    /* search.pagefind, relative to the project */
    free(S_script(dir, "tools/pf", "exit 0"));
    free(c.pagefind);
    c.pagefind = xstrdup("tools/pf");
    char *p = search_find(&c, dir, &dl);
    char *want = xasprintf("%s/tools/pf", dir);
    assert_non_null(p);
    assert_string_equal(p, want);
    free(p);
    free(want);
    assert_int_equal(dl.n, 0);

    /* a path that is not a program: one warning, no search */
    tmpdir_put(dir, "tools/notes.txt", "not a program\n");
    free(c.pagefind);
    c.pagefind = xstrdup("tools/notes.txt");
    assert_null(search_find(&c, dir, &dl));
    assert_int_equal(dl.n, 1);
    assert_int_equal(dl.warnings, 1);
    assert_non_null(strstr(dl.v[0].msg, "built without search"));

    /* PATH: the first folder with a program named pagefind */
    free(c.pagefind);
    c.pagefind = xstrdup("");
    tmpdir_put(dir, "a/pagefind", "not executable\n");
    free(S_script(dir, "b/pagefind", "exit 0"));
    char *old = getenv("PATH") ? xstrdup(getenv("PATH")) : NULL;
    char *path = xasprintf("%s/none::%s/a:%s/b", dir, dir, dir);
    setenv("PATH", path, 1);
    p = search_find(&c, dir, &dl);
    want = xasprintf("%s/b/pagefind", dir);
    assert_non_null(p);
    assert_string_equal(p, want);
    free(p);
    free(want);
    free(path);
    /* none on PATH: one more warning */
    path = xasprintf("%s/a", dir);
    setenv("PATH", path, 1);
    assert_null(search_find(&c, dir, &dl));
    assert_int_equal(dl.warnings, 2);
    assert_non_null(strstr(dl.v[1].msg, "no pagefind on PATH"));
    free(path);
    if (old)
        setenv("PATH", old, 1);
    free(old);
    diag_list_free(&dl);
    config_free(&c);
}

static void test_index(void **state)
{
    const char *dir = *state;
    diag_list dl;
    diag_list_init(&dl);
    char *site = xasprintf("%s/site", dir);
    tmpdir_put(dir, "site/index.html", "<html></html>\n");

    /* a Pagefind that writes its index: fine, and nothing said */
    char *ok = S_script(dir, "ok",
                        "[ \"$1 $3 $4 $#\" = '--site --output-subdir pagefind 4' ] || exit 9\n"
                        "mkdir -p \"$2/pagefind\"\n"
                        "echo '{}' > \"$2/pagefind/pagefind-entry.json\"\n"
                        "echo indexed");
    if (search_index(ok, site, 10, &dl) != 0)
        fail_msg("%s", dl.v[0].msg);
    assert_int_equal(dl.n, 0);
    char *entry = xasprintf("%s/pagefind/pagefind-entry.json", site);
    assert_true(fs_exists(entry));
    free(entry);

    /* failure: an error with its exit status and the end of what it printed */
    char *bad = S_script(dir, "bad", "echo 'reading pages' ; echo 'Error: no html' >&2; exit 3");
    assert_int_equal(search_index(bad, site, 10, &dl), -1);
    assert_int_equal(dl.errors, 1);
    assert_non_null(strstr(dl.v[0].msg, "exit status 3"));
    assert_non_null(strstr(dl.v[0].msg, "it printed: reading pages | Error: no html"));

    /* exit 0 without an index is a failure too */
    char *lazy = S_script(dir, "lazy", "exit 0");
    fs_remove_tree(site);
    tmpdir_put(dir, "site/index.html", "<html></html>\n");
    assert_int_equal(search_index(lazy, site, 10, &dl), -1);
    assert_int_equal(dl.errors, 2);
    assert_non_null(strstr(dl.v[1].msg, "wrote no pagefind/pagefind-entry.json"));

    /* past the time limit: killed, with its children (the npm wrapper's
     * program), and an error */
    char *slow = S_script(dir, "slow", "echo started; sleep 30 & wait");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(search_index(slow, site, 1, &dl), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 10);
    assert_int_equal(dl.errors, 3);
    assert_non_null(strstr(dl.v[2].msg, "did not finish in search.timeout (1 s)"));
    assert_non_null(strstr(dl.v[2].msg, "started"));

    /* a program that cannot be started */
    char *gone = xasprintf("%s/gone", dir);
    assert_int_equal(search_index(gone, site, 10, &dl), -1);
    assert_int_equal(dl.errors, 4);
    assert_non_null(strstr(dl.v[3].msg, "cannot run"));

    /* a flood of output: only its end is kept */
    char *loud = S_script(dir, "loud",
                          "i=0; while [ $i -lt 3000 ]; do echo \"line $i of the flood\"; "
                          "i=$((i+1)); done; exit 1");
    assert_int_equal(search_index(loud, site, 20, &dl), -1);
    assert_true(strlen(dl.v[4].msg) < SEARCH_OUTPUT_MAX * 3 / 2); /* "\n" is " | " */
    assert_non_null(strstr(dl.v[4].msg, "line 2999 of the flood"));
    assert_null(strstr(dl.v[4].msg, "line 0 of"));

    free(ok);
    free(bad);
    free(lazy);
    free(slow);
    free(gone);
    free(loud);
    free(site);
    diag_list_free(&dl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_find, S_setup, tmpdir_teardown),
        cmocka_unit_test_setup_teardown(test_index, S_setup, tmpdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
