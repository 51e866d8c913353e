/* Unit tests for gen/scaffold.c: a new site copied from a starter (dotfiles
 * included, a non-empty folder refused), page names and titles, a new page
 * with front matter that is never written over an existing one. */
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
#include "fsutil.h"
#include "scaffold.h"

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-scaffold-XXXXXX"); }
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

static char *S_read(const char *root, const char *rel)
{
    char *p = xasprintf("%s/%s", root, rel);
    buf b = BUF_INIT;
    int rc = fs_read_file(p, 1 << 20, &b);
    free(p);
    if (rc != FS_OK) {
        buf_free(&b);
        return NULL;
    }
    return buf_detach(&b);
}

static void test_site_copy(void **state)
{
    const char *t = *state;
    char *starter = xasprintf("%s/starter", t);
    S_put(starter, "site.yaml", "title: x\n");
    S_put(starter, ".gitignore", "/site/\n");
    S_put(starter, ".github/workflows/kvsite.yml", "name: kvsite\n");
    S_put(starter, "content/articles/a.md", "# a\n");
    char *link = xasprintf("%s/link.md", starter);
    assert_int_equal(symlink("/etc/passwd", link), 0);
    char *dir = xasprintf("%s/new/blog", t);
    buf err = BUF_INIT;
    assert_int_equal(scaffold_site(starter, dir, &err), 0);
    char *s;
    assert_non_null(s = S_read(dir, "site.yaml"));
    assert_string_equal(s, "title: x\n");
    free(s);
    assert_non_null(s = S_read(dir, ".gitignore"));
    free(s);
    assert_non_null(s = S_read(dir, ".github/workflows/kvsite.yml"));
    free(s);
    assert_non_null(s = S_read(dir, "content/articles/a.md"));
    free(s);
    char *copied_link = xasprintf("%s/link.md", dir);
    assert_int_equal(access(copied_link, F_OK), -1); /* links are not copied */
    /* now it is not empty: refused, nothing changed */
    S_put(dir, "site.yaml", "title: mine\n");
    assert_int_equal(scaffold_site(starter, dir, &err), -1);
    assert_non_null(strstr(buf_cstr(&err), "not empty"));
    assert_non_null(s = S_read(dir, "site.yaml"));
    assert_string_equal(s, "title: mine\n");
    free(s);
    /* a file where the folder would go */
    buf_clear(&err);
    char *file = xasprintf("%s/site.yaml", dir);
    assert_int_equal(scaffold_site(starter, file, &err), -1);
    assert_non_null(strstr(buf_cstr(&err), "not a folder"));
    /* no starter */
    buf_clear(&err);
    char *none = xasprintf("%s/none", t);
    char *dir2 = xasprintf("%s/other", t);
    assert_int_equal(scaffold_site(none, dir2, &err), -1);
    assert_non_null(strstr(buf_cstr(&err), "no starter site"));
    free(none);
    free(dir2);
    free(file);
    free(copied_link);
    buf_free(&err);
    free(dir);
    free(link);
    free(starter);
}

static void test_titles(void **state)
{
    (void)state;
    char *s = scaffold_title("kv-cache_sizes");
    assert_string_equal(s, "Kv cache sizes");
    free(s);
    s = scaffold_title("缓存");
    assert_string_equal(s, "缓存");
    free(s);
}

static void test_page_paths(void **state)
{
    (void)state;
    buf err = BUF_INIT;
    struct {
        const char *spec, *want;
    } cases[] = {
        {"articles/my-topic", "content/articles/my-topic.md"},
        {"articles/my-topic.md", "content/articles/my-topic.md"},
        {"notes/2026/v1.2", "content/notes/2026/v1.2.md"},
        {"about", "content/about.md"},
        {"笔记/缓存", "content/笔记/缓存.md"},
        {"../x", NULL},
        {"/abs", NULL},
        {"a//b", NULL},
        {"a/", NULL},
        {".hidden/x", NULL},
        {"a/.x", NULL},
        {"a b", NULL},
        {"a\\b", NULL},
        {"", NULL},
        {"1/2/3/4/5/6/7/8/9", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf_clear(&err);
        char *got = scaffold_page_path(cases[i].spec, &err);
        if (cases[i].want) {
            assert_non_null(got);
            assert_string_equal(got, cases[i].want);
        } else {
            assert_null(got);
            assert_true(err.len > 0);
        }
        free(got);
    }
    buf_free(&err);
}

static void test_page(void **state)
{
    const char *t = *state;
    buf err = BUF_INIT;
    assert_int_equal(scaffold_page(t, "articles/first-post", "2026-09-10", &err), 0);
    char *s = S_read(t, "content/articles/first-post.md");
    assert_non_null(s);
    assert_string_equal(s, "---\ntitle: \"First post\"\ndate: 2026-09-10\ntags: []\n---\n\n");
    free(s);
    S_put(t, "content/articles/first-post.md", "mine\n");
    assert_int_equal(scaffold_page(t, "articles/first-post", "2026-09-11", &err), -1);
    assert_non_null(strstr(buf_cstr(&err), "already exists"));
    s = S_read(t, "content/articles/first-post.md");
    assert_string_equal(s, "mine\n");
    free(s);
    buf_clear(&err);
    assert_int_equal(scaffold_page(t, "../escape", "2026-09-10", &err), -1);
    buf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_site_copy, S_setup, S_teardown),
        cmocka_unit_test(test_titles),
        cmocka_unit_test(test_page_paths),
        cmocka_unit_test_setup_teardown(test_page, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
