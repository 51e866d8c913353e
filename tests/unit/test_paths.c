/* Unit tests for gen/paths.c: the share folder of an installed binary, of a
 * binary in a build tree, and none elsewhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>

#include <cmocka.h>

#include "buf.h"
#include "fsutil.h"
#include "paths.h"

static int S_setup(void **state)
{
    char *dir = strdup("/tmp/kvsite-test-paths-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char real[PATH_MAX];
    *state = strdup(realpath(dir, real));
    free(dir);
    return 0;
}

static int S_teardown(void **state)
{
    fs_remove_tree(*state);
    free(*state);
    return 0;
}

static void S_mk(const char *root, const char *rel)
{
    char *p = xasprintf("%s/%s", root, rel);
    assert_int_equal(fs_mkdir_p(p), 0);
    free(p);
}

static void S_touch(const char *root, const char *rel)
{
    char *p = xasprintf("%s/%s", root, rel);
    assert_int_equal(fs_write_file(p, "x", 1), 0);
    free(p);
}

static void S_expect(const char *got, const char *root, const char *rel)
{
    if (!rel) {
        assert_null(got);
        return;
    }
    char *want = xasprintf("%s/%s", root, rel);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(want);
}

static void test_installed(void **state)
{
    const char *t = *state;
    S_mk(t, "usr/bin");
    S_mk(t, "usr/share/kvsite/theme");
    S_mk(t, "usr/share/kvsite/checks");
    S_mk(t, "usr/share/kvsite/starter/en");
    char *exe = xasprintf("%s/usr/bin/kvsite", t);
    paths_share p;
    assert_int_equal(paths_resolve(exe, &p), 0);
    S_expect(p.theme, t, "usr/share/kvsite/theme");
    S_expect(p.checks, t, "usr/share/kvsite/checks");
    S_expect(p.starter, t, "usr/share/kvsite/starter");
    paths_share_free(&p);
    free(exe);
}

static void test_installed_partial(void **state)
{
    /* a share folder with the library only: no theme, no starter */
    const char *t = *state;
    S_mk(t, "opt/bin");
    S_mk(t, "opt/share/kvsite/checks");
    char *exe = xasprintf("%s/opt/bin/kvsite", t);
    paths_share p;
    assert_int_equal(paths_resolve(exe, &p), 0);
    S_expect(p.theme, t, NULL);
    S_expect(p.checks, t, "opt/share/kvsite/checks");
    S_expect(p.starter, t, NULL);
    paths_share_free(&p);
    free(exe);
}

static void test_build_tree(void **state)
{
    const char *t = *state;
    S_mk(t, "repo/gen");
    S_touch(t, "repo/gen/paths.c");
    S_mk(t, "repo/share/theme");
    S_mk(t, "repo/share/starter");
    S_mk(t, "repo/checks");
    S_mk(t, "repo/build/san");
    for (int i = 0; i < 2; i++) {
        char *exe = xasprintf("%s/repo/build/%skvsite", t, i ? "san/" : "");
        paths_share p;
        assert_int_equal(paths_resolve(exe, &p), 0);
        S_expect(p.theme, t, "repo/share/theme");
        S_expect(p.checks, t, "repo/checks");
        S_expect(p.starter, t, "repo/share/starter");
        paths_share_free(&p);
        free(exe);
    }
}

static void test_nothing(void **state)
{
    /* share/theme without the repository's sources is not a build tree */
    const char *t = *state;
    S_mk(t, "x/share/theme");
    S_mk(t, "x/checks");
    S_mk(t, "x/build");
    char *exe = xasprintf("%s/x/build/kvsite", t);
    paths_share p;
    assert_int_equal(paths_resolve(exe, &p), -1);
    assert_null(p.theme);
    assert_null(p.checks);
    assert_null(p.starter);
    free(exe);
    assert_int_equal(paths_resolve("relative/kvsite", &p), -1);
    assert_int_equal(paths_resolve(NULL, &p), -1);
}

static void test_self(void **state)
{
    (void)state;
    /* this test runs from build/tests/ (or build/san/tests/) in the repository */
    const paths_share *p = paths_get();
    assert_non_null(p->checks);
    assert_non_null(strstr(p->checks, "/checks"));
    assert_ptr_equal(paths_get(), p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_installed, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_installed_partial, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_build_tree, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_nothing, S_setup, S_teardown),
        cmocka_unit_test(test_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
