/* Unit tests for gen/walk.c: a tree listed by several threads lists every
 * regular file and empty folder once, whatever the thread count; a link or
 * FIFO ends the walk and says so; a stop flag ends it early; a missing
 * folder is an error. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "buf.h"
#include "fsutil.h"
#include "strmap.h"
#include "walk.h"

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-walk-XXXXXX"); }
static int S_teardown(void **state) { return tmpdir_teardown(state); }

static void S_file(void **state, const char *rel)
{
    char *p = xasprintf("%s/%s", (char *)*state, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    assert_int_equal(fs_mkdir_p(p), 0);
    *slash = '/';
    assert_int_equal(fs_write_file(p, "x", 1), 0);
    free(p);
}

static void S_dir(void **state, const char *rel)
{
    char *p = xasprintf("%s/%s", (char *)*state, rel);
    assert_int_equal(fs_mkdir_p(p), 0);
    free(p);
}

/* The NUL-separated list's entries, each once, into m; their count. */
static size_t S_set(const buf *list, strmap *m)
{
    size_t n = 0;
    for (const char *p = buf_cstr(list), *end = p + list->len; p < end; p += strlen(p) + 1) {
        if (strmap_get(m, p))
            fail_msg("%s listed twice", p);
        strmap_put(m, p, (void *)1);
        n++;
    }
    return n;
}

/* A tree of 40 folders of 25 files (a site's output, smaller), some empty
 * folders, a deep chain: listed whole with 1, 2 and 8 threads. */
static void test_whole_tree(void **state)
{
    char rel[128];
    for (int d = 0; d < 40; d++)
        for (int f = 0; f < 25; f++) {
            snprintf(rel, sizeof rel, "posts/p%d/f%d.html", d, f);
            S_file(state, rel);
        }
    S_file(state, "index.html");
    S_dir(state, "empty/one");
    S_dir(state, "empty2");
    S_file(state, "a/b/c/d/e/f/g/h/deep.html");
    unsigned counts[] = {1, 2, 8, 64};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        walk_list l;
        walk_list_init(&l);
        assert_int_equal(walk_tree(*state, counts[i], NULL, &l), 0);
        assert_false(l.other);
        strmap files, empty;
        strmap_init(&files);
        strmap_init(&empty);
        assert_int_equal(S_set(&l.files, &files), 40 * 25 + 2);
        assert_non_null(strmap_get(&files, "posts/p39/f24.html"));
        assert_non_null(strmap_get(&files, "index.html"));
        assert_non_null(strmap_get(&files, "a/b/c/d/e/f/g/h/deep.html"));
        assert_int_equal(S_set(&l.empty_dirs, &empty), 2);
        assert_non_null(strmap_get(&empty, "empty/one"));
        assert_non_null(strmap_get(&empty, "empty2"));
        strmap_free(&files);
        strmap_free(&empty);
        walk_list_free(&l);
    }
}

/* A symbolic link or a FIFO anywhere: other, and the walk is not followed
 * through the link. */
static void test_other_found(void **state)
{
    for (int d = 0; d < 10; d++) {
        char rel[64];
        snprintf(rel, sizeof rel, "s/p%d/index.html", d);
        S_file(state, rel);
    }
    char *outside = xasprintf("%s.outside", (char *)*state);
    assert_int_equal(fs_mkdir_p(outside), 0);
    char *secret = fs_join(outside, "secret.html");
    assert_int_equal(fs_write_file(secret, "s", 1), 0);
    char *link = xasprintf("%s/s/p5/linked", (char *)*state);
    assert_int_equal(symlink(outside, link), 0);
    walk_list l;
    walk_list_init(&l);
    assert_int_equal(walk_tree(*state, 4, NULL, &l), 0);
    assert_true(l.other);
    assert_null(strstr(buf_cstr(&l.files), "secret"));
    walk_list_free(&l);
    unlink(link);
    char *fifo = xasprintf("%s/s/p7/pipe", (char *)*state);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    walk_list_init(&l);
    assert_int_equal(walk_tree(*state, 2, NULL, &l), 0);
    assert_true(l.other);
    walk_list_free(&l);
    unlink(fifo);
    walk_list_init(&l);
    assert_int_equal(walk_tree(*state, 2, NULL, &l), 0);
    assert_false(l.other);
    walk_list_free(&l);
    fs_remove_tree(outside);
    free(fifo);
    free(link);
    free(secret);
    free(outside);
}

/* A stop flag already set: at most the top folder is listed. */
static void test_stopped(void **state)
{
    for (int d = 0; d < 20; d++) {
        char rel[64];
        snprintf(rel, sizeof rel, "s/p%d/index.html", d);
        S_file(state, rel);
    }
    atomic_bool stop;
    atomic_init(&stop, true);
    walk_list l;
    walk_list_init(&l);
    assert_int_equal(walk_tree(*state, 4, &stop, &l), 0);
    assert_int_equal(l.files.len, 0);
    walk_list_free(&l);
}

static void test_missing(void **state)
{
    char *gone = xasprintf("%s/none", (char *)*state);
    walk_list l;
    walk_list_init(&l);
    assert_int_equal(walk_tree(gone, 4, NULL, &l), -1);
    assert_int_equal(l.files.len, 0);
    walk_list_free(&l);
    free(gone);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_whole_tree, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_other_found, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_stopped, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_missing, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
