/* Unit tests for gen/sources.c: the bibliography in checks/sources.yaml. */
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

#include "sources.h"
#include "fsutil.h"

static int S_setup(void **state)
{
    char *dir = strdup("/tmp/kvsite-test-sources-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char checks[512];
    snprintf(checks, sizeof checks, "%s/checks", dir);
    mkdir(checks, 0777);
    *state = dir;
    return 0;
}

static int S_teardown(void **state)
{
    fs_remove_tree(*state);
    free(*state);
    return 0;
}

static void S_write(void **state, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", (char *)*state, SOURCES_FILE);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_absent(void **state)
{
    sources s;
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(sources_load(&s, *state, 1 << 20, &dl), 0);
    assert_false(sources_present(&s));
    assert_null(sources_get(&s, "quest2024"));
    assert_int_equal(dl.n, 0);
    sources_free(&s);
    diag_list_free(&dl);
}

static void test_entries(void **state)
{
    S_write(state, "quest2024:\n  title: Quest\n  year: 2024\n"
                   "kwon2023:\n  title: PagedAttention\n  authors: [Kwon]\n");
    sources s;
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(sources_load(&s, *state, 1 << 20, &dl), 0);
    assert_true(sources_present(&s));
    const yv *q = sources_get(&s, "quest2024");
    assert_non_null(q);
    assert_string_equal(yv_string(yv_get(q, "title")), "Quest");
    assert_non_null(sources_get(&s, "kwon2023"));
    assert_null(sources_get(&s, "nokey"));
    sources_free(&s);
    diag_list_free(&dl);
}

static void test_errors(void **state)
{
    static const struct {
        const char *yaml;
        int line, col;
        const char *msg;
    } cases[] = {
        {"- a\n- b\n", 1, 1,
         "sources must be a map from a key to its entry (title, authors, year, url)"},
        {"ok:\n  title: T\nbad: 3\n", 3, 1, "source \"bad\" must be a map with at least a title"},
        {"notitle:\n  year: 2024\n", 1, 1,
         "source \"notitle\" must be a map with at least a title"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        S_write(state, cases[i].yaml);
        sources s;
        diag_list dl;
        diag_list_init(&dl);
        assert_int_equal(sources_load(&s, *state, 1 << 20, &dl), -1);
        assert_int_equal(dl.n, 1);
        assert_string_equal(dl.v[0].file, SOURCES_FILE);
        assert_int_equal(dl.v[0].line, cases[i].line);
        assert_int_equal(dl.v[0].col, cases[i].col);
        assert_string_equal(dl.v[0].msg, cases[i].msg);
        sources_free(&s);
        diag_list_free(&dl);
    }
    /* too large for the cap */
    S_write(state, "a:\n  title: T\n");
    sources s;
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(sources_load(&s, *state, 4, &dl), -1);
    assert_int_equal(dl.n, 1);
    assert_non_null(strstr(dl.v[0].msg, "too large"));
    sources_free(&s);
    diag_list_free(&dl);
}

/* The sources page's order is by key, made once at load; each entry's path
 * names the page of the sources page that lists it, per entries a page. */
static void test_order_and_paths(void **state)
{
    S_write(state, "zeta:\n  title: Z\nalpha:\n  title: A\nmid:\n  title: M\n"
                   "beta:\n  title: B\ngamma:\n  title: G\n");
    sources s;
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(sources_load(&s, *state, 1 << 20, &dl), 0);
    assert_int_equal(sources_count(&s), 5);
    static const char *const sorted[] = {"alpha", "beta", "gamma", "mid", "zeta"};
    for (size_t i = 0; i < 5; i++) {
        const char *key = NULL;
        const yv *e = sources_at(&s, i, &key);
        assert_non_null(e);
        assert_string_equal(key, sorted[i]);
        assert_ptr_equal(e, sources_get(&s, key));
    }
    const char *none = NULL;
    assert_null(sources_at(&s, 5, &none));
    /* the default: every entry on the first page */
    assert_int_equal(sources_per(&s), SOURCES_PER_PAGE_DEFAULT);
    char *p = sources_path(&s, "zeta");
    assert_string_equal(p, "/sources/#zeta");
    free(p);
    /* two a page: alpha beta | gamma mid | zeta */
    sources_set_per(&s, 2);
    static const struct {
        const char *key, *path;
    } paths[] = {{"alpha", "/sources/#alpha"},
                 {"beta", "/sources/#beta"},
                 {"gamma", "/sources/page/2/#gamma"},
                 {"mid", "/sources/page/2/#mid"},
                 {"zeta", "/sources/page/3/#zeta"},
                 {"nokey", "/sources/#nokey"}};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        p = sources_path(&s, paths[i].key);
        assert_string_equal(p, paths[i].path);
        free(p);
    }
    sources_free(&s);
    diag_list_free(&dl);
}

/* An entry that is not one (an error) is left out of the order. */
static void test_order_skips_invalid(void **state)
{
    S_write(state, "b:\n  title: B\nbad: 3\na:\n  title: A\n");
    sources s;
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(sources_load(&s, *state, 1 << 20, &dl), -1);
    assert_int_equal(sources_count(&s), 2);
    const char *key = NULL;
    assert_non_null(sources_at(&s, 0, &key));
    assert_string_equal(key, "a");
    assert_non_null(sources_at(&s, 1, &key));
    assert_string_equal(key, "b");
    sources_free(&s);
    diag_list_free(&dl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_absent, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_entries, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_errors, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_order_and_paths, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_order_skips_invalid, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
