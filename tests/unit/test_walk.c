/* Unit tests for gen/walk.c: a tree listed by several threads lists every
 * regular file and empty folder once, whatever the thread count; a link or
 * FIFO ends the walk and says so; a stop flag ends it early; a missing
 * folder is an error. With a memo: an unchanged folder is taken from it, a
 * changed one read again, a folder changed just before the walk is not
 * remembered, and a memo with names that leave their folder is refused. */
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
#include "sealed.h"
#include "stamp.h"
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
        assert_int_equal(walk_tree(*state, counts[i], NULL, NULL, &l), 0);
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
    assert_int_equal(walk_tree(*state, 4, NULL, NULL, &l), 0);
    assert_true(l.other);
    assert_null(strstr(buf_cstr(&l.files), "secret"));
    walk_list_free(&l);
    unlink(link);
    char *fifo = xasprintf("%s/s/p7/pipe", (char *)*state);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    walk_list_init(&l);
    assert_int_equal(walk_tree(*state, 2, NULL, NULL, &l), 0);
    assert_true(l.other);
    walk_list_free(&l);
    unlink(fifo);
    walk_list_init(&l);
    assert_int_equal(walk_tree(*state, 2, NULL, NULL, &l), 0);
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
    assert_int_equal(walk_tree(*state, 4, &stop, NULL, &l), 0);
    assert_int_equal(l.files.len, 0);
    walk_list_free(&l);
}

static void test_missing(void **state)
{
    char *gone = xasprintf("%s/none", (char *)*state);
    walk_list l;
    walk_list_init(&l);
    assert_int_equal(walk_tree(gone, 4, NULL, NULL, &l), -1);
    assert_int_equal(l.files.len, 0);
    walk_list_free(&l);
    free(gone);
}

/* A tree for the memo's tests, old enough for its folders to be
 * remembered (outrec_stamp_racy: 0.1 s before the walk). */
static void S_memo_tree(void **state)
{
    char rel[64];
    for (int d = 0; d < 6; d++) {
        snprintf(rel, sizeof rel, "posts/p%d/index.html", d);
        S_file(state, rel);
    }
    S_file(state, "index.html");
    S_dir(state, "empty");
    usleep(150 * 1000);
}

/* The walk's lists as one sorted text, for comparing walks. */
static char *S_listing(void **state, const char *memo, bool *other)
{
    walk_list l;
    walk_list_init(&l);
    assert_int_equal(walk_tree(*state, 4, NULL, memo, &l), 0);
    *other = l.other;
    size_t n = 0;
    const char *items[64];
    for (const char *p = buf_cstr(&l.files), *end = p + l.files.len; p < end; p += strlen(p) + 1)
        if (n < 64)
            items[n++] = p;
    for (const char *p = buf_cstr(&l.empty_dirs), *end = p + l.empty_dirs.len; p < end;
         p += strlen(p) + 1)
        if (n < 64)
            items[n++] = p;
    for (size_t i = 1; i < n; i++) /* a few items: insertion sort */
        for (size_t j = i; j > 0 && strcmp(items[j - 1], items[j]) > 0; j--) {
            const char *t = items[j];
            items[j] = items[j - 1];
            items[j - 1] = t;
        }
    buf out = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        buf_puts(&out, items[i]);
        buf_putc(&out, '\n');
    }
    walk_list_free(&l);
    return buf_detach(&out);
}

/* Replaces every "from" in the memo file by "to" (as long) and seals it
 * again: what a walk then lists shows which folders it took from the memo. */
static void S_forge(const char *memo, const char *from, const char *to)
{
    buf b = BUF_INIT;
    assert_int_equal(fs_read_file(memo, 1 << 20, &b), FS_OK);
    assert_true(b.len > 8);
    size_t n = strlen(from);
    for (size_t i = 0; i + n <= b.len - 8; i++)
        if (!memcmp(b.ptr + i, from, n))
            memcpy(b.ptr + i, to, n);
    uint64_t sum = stamp_bytes(SEALED_SUM_SEED, b.ptr, b.len - 8);
    memcpy(b.ptr + b.len - 8, &sum, sizeof sum);
    assert_int_equal(fs_write_file(memo, b.ptr, b.len), 0);
    buf_free(&b);
}

static void test_memo_recall(void **state)
{
    S_memo_tree(state);
    char *memo = xasprintf("%s.memo", (char *)*state);
    bool other;
    char *plain = S_listing(state, NULL, &other);
    char *first = S_listing(state, memo, &other);
    assert_string_equal(first, plain);
    assert_true(fs_exists(memo));
    struct stat before, after;
    assert_int_equal(stat(memo, &before), 0);
    char *second = S_listing(state, memo, &other);
    assert_string_equal(second, plain);
    assert_false(other);
    /* every folder taken from the memo: it is not written again */
    assert_int_equal(stat(memo, &after), 0);
    assert_int_equal(before.st_ino, after.st_ino);
    /* the unchanged folders come from the memo: a name changed there shows */
    S_forge(memo, "index.html", "indey.html");
    char *forged = S_listing(state, memo, &other);
    assert_non_null(strstr(forged, "posts/p3/indey.html"));
    assert_non_null(strstr(forged, "\nindey.html\n")); /* the top folder's */
    /* that walk wrote the memo again, from what it took: still forged */
    S_forge(memo, "indey.html", "index.html");
    /* a folder changed since is read again: a file added, one removed, a
     * folder made, the empty folder filled */
    S_file(state, "posts/p1/extra.html");
    char *gone = xasprintf("%s/posts/p2/index.html", (char *)*state);
    assert_int_equal(unlink(gone), 0);
    S_file(state, "posts/p9/index.html");
    S_file(state, "empty/now.html");
    S_forge(memo, "index.html", "indey.html");
    char *changed = S_listing(state, memo, &other);
    assert_non_null(strstr(changed, "posts/p1/extra.html\n"));
    assert_non_null(strstr(changed, "posts/p1/index.html\n")); /* read, not forged */
    assert_null(strstr(changed, "posts/p2/ind"));
    assert_non_null(strstr(changed, "posts/p2\n"));             /* empty now */
    assert_non_null(strstr(changed, "posts/p9/index.html\n"));  /* under a changed folder */
    assert_non_null(strstr(changed, "empty/now.html\n"));
    assert_null(strstr(changed, "empty\n"));
    assert_non_null(strstr(changed, "posts/p4/indey.html\n"));  /* unchanged: from the memo */
    free(changed);
    free(gone);
    free(forged);
    free(second);
    free(first);
    free(plain);
    unlink(memo);
    free(memo);
}

/* A link planted where a remembered folder was: its parent changed, so it
 * is read again and the link found. */
static void test_memo_link(void **state)
{
    S_memo_tree(state);
    char *memo = xasprintf("%s.memo", (char *)*state);
    bool other;
    free(S_listing(state, memo, &other));
    free(S_listing(state, memo, &other));
    assert_false(other);
    char *dir = xasprintf("%s/posts/p3", (char *)*state);
    assert_int_equal(fs_remove_tree(dir), 0);
    assert_int_equal(symlink("/", dir), 0);
    char *listing = S_listing(state, memo, &other);
    assert_true(other);
    assert_null(strstr(listing, "etc"));
    free(listing);
    free(dir);
    unlink(memo);
    free(memo);
}

/* Folders changed just before the walk are not remembered: a forged name
 * does not show. Nor is a memo with a name that leaves its folder taken. */
static void test_memo_racy_and_refused(void **state)
{
    S_file(state, "a/index.html");
    char *memo = xasprintf("%s.memo", (char *)*state);
    bool other;
    char *plain = S_listing(state, NULL, &other);
    free(S_listing(state, memo, &other)); /* all of it made just now */
    S_forge(memo, "index.html", "indey.html");
    char *racy = S_listing(state, memo, &other);
    assert_string_equal(racy, plain);
    usleep(150 * 1000);
    free(S_listing(state, memo, &other)); /* remembered now */
    S_forge(memo, "index.html", "indey.html");
    char *taken = S_listing(state, memo, &other);
    assert_non_null(strstr(taken, "indey.html"));
    S_forge(memo, "indey.html", "ind/y.html");
    char *refused = S_listing(state, memo, &other);
    assert_string_equal(refused, plain);
    free(refused);
    free(taken);
    free(racy);
    free(plain);
    unlink(memo);
    free(memo);
}

/* A stopped walk leaves no memo. */
static void test_memo_stopped(void **state)
{
    S_memo_tree(state);
    char *memo = xasprintf("%s.memo", (char *)*state);
    atomic_bool stop;
    atomic_init(&stop, true);
    walk_list l;
    walk_list_init(&l);
    assert_int_equal(walk_tree(*state, 4, &stop, memo, &l), 0);
    walk_list_free(&l);
    assert_false(fs_exists(memo));
    free(memo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_whole_tree, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_other_found, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_stopped, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_missing, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_memo_recall, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_memo_link, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_memo_racy_and_refused, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_memo_stopped, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
