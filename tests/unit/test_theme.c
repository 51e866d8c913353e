/* Unit tests for gen/theme.c: the theme key's values, which sites use the
 * theme, its assets behind the site's own, its templates opened as files. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "buf.h"
#include "config.h"
#include "fsutil.h"
#include "paths.h"
#include "theme.h"

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-theme-XXXXXX"); }
static int S_teardown(void **state) { return tmpdir_teardown(state); }

static void S_put(const char *root, const char *rel, const char *text)
{
    char *p = xasprintf("%s/%s", root, rel);
    char *d = xstrdup(p);
    *strrchr(d, '/') = '\0';
    assert_int_equal(fs_mkdir_p(d), 0);
    assert_int_equal(fs_write_file(p, text, strlen(text)), 0);
    free(d);
    free(p);
}

static void S_set_theme(config *c, const char *v)
{
    free(c->theme);
    c->theme = xstrdup(v);
}

static void test_check(void **state)
{
    (void)state;
    config c;
    config_defaults(&c);
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(theme_check(&c, &dl), 0);
    S_set_theme(&c, "default");
    assert_int_equal(theme_check(&c, &dl), 0);
    S_set_theme(&c, "none");
    assert_int_equal(theme_check(&c, &dl), 0);
    S_set_theme(&c, "blue");
    assert_int_equal(theme_check(&c, &dl), -1);
    assert_int_equal(dl.errors, 1);
    assert_string_equal(dl.v[0].file, "site.yaml");
    assert_non_null(strstr(dl.v[0].msg, "not \"blue\""));
    diag_list_free(&dl);
    config_free(&c);
}

static void test_dir(void **state)
{
    const char *t = *state;
    const char *theme = paths_get()->theme; /* the repository's share/theme */
    assert_non_null(theme);
    config c;
    config_defaults(&c);
    /* no key: the theme only without templates/ */
    assert_string_equal(theme_dir(&c, t), theme);
    char *tpl = xasprintf("%s/templates", t);
    assert_int_equal(fs_mkdir_p(tpl), 0);
    assert_null(theme_dir(&c, t));
    S_set_theme(&c, "default");
    assert_string_equal(theme_dir(&c, t), theme);
    S_set_theme(&c, "none");
    assert_null(theme_dir(&c, t));
    free(tpl);
    config_free(&c);
}

static void S_collect(void *ctx, const char *from, const char *to)
{
    buf *b = ctx;
    assert_string_equal(from, to);
    buf_printf(b, "%s\n", from);
}

static int S_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The collected lines, sorted (readdir's order is the file system's). */
static char *S_sorted(buf *b)
{
    char *s = xstrdup(buf_cstr(b)), *lines[16];
    size_t n = 0;
    for (char *l = strtok(s, "\n"); l && n < 16; l = strtok(NULL, "\n"))
        lines[n++] = l;
    qsort(lines, n, sizeof *lines, S_cmp);
    buf out = BUF_INIT;
    for (size_t i = 0; i < n; i++)
        buf_printf(&out, "%s\n", lines[i]);
    free(s);
    return buf_detach(&out);
}

static void test_assets(void **state)
{
    const char *t = *state;
    char *theme = xasprintf("%s/theme", t), *site = xasprintf("%s/site", t);
    S_put(theme, "assets/theme.css", "a");
    S_put(theme, "assets/fonts/x.woff2", "b");
    S_put(theme, "assets/logo.svg", "c");
    S_put(theme, "assets/.hidden", "d");
    char *link = xasprintf("%s/assets/passwd", theme);
    assert_int_equal(symlink("/etc/passwd", link), 0);
    S_put(site, "templates/assets/logo.svg", "mine");
    buf got = BUF_INIT;
    theme_assets(theme, site, 100, S_collect, &got);
    char *s = S_sorted(&got);
    assert_string_equal(s, "assets/fonts/x.woff2\nassets/theme.css\n");
    free(s);
    /* at most max_files */
    buf_clear(&got);
    theme_assets(theme, site, 1, S_collect, &got);
    s = S_sorted(&got);
    assert_int_equal(strchr(s, '\n') - s + 1, (long)strlen(s)); /* one line */
    free(s);
    buf_free(&got);
    /* a template is a file, not a folder */
    int fd = theme_open(theme, "assets/theme.css");
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(theme_open(theme, "assets"), -1);
    assert_int_equal(errno, EISDIR);
    assert_int_equal(theme_open(theme, "assets/passwd"), -1);
    free(link);
    free(site);
    free(theme);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check),
        cmocka_unit_test_setup_teardown(test_dir, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_assets, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
