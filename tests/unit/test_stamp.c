/* Unit tests for gen/stamp.c: the fingerprint behind the no-change fast
 * path must change with any edit, addition, removal or rename of a file, and
 * stay the same when nothing was touched. */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "stamp.h"

static int S_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int S_setup(void **state)
{
    char *dir = strdup("/tmp/kvsite-test-stamp-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    *state = dir;
    return 0;
}

static int S_teardown(void **state)
{
    nftw(*state, S_rm, 16, FTW_DEPTH | FTW_PHYS);
    free(*state);
    return 0;
}

static void S_put(void **state, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", (char *)*state, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static uint64_t S_tree(void **state)
{
    size_t files = 0;
    return stamp_tree(STAMP_SEED, *state, "content", 1000, &files);
}

static void test_tree_changes(void **state)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/content", (char *)*state);
    assert_int_equal(mkdir(dir, 0777), 0);
    snprintf(dir, sizeof dir, "%s/content/sub", (char *)*state);
    assert_int_equal(mkdir(dir, 0777), 0);
    S_put(state, "content/a.md", "alpha\n");
    S_put(state, "content/sub/b.md", "beta\n");
    uint64_t h0 = S_tree(state);
    assert_true(h0 == S_tree(state)); /* nothing touched: the same */

    S_put(state, "content/sub/b.md", "BETA\n"); /* same size, new bytes */
    uint64_t h1 = S_tree(state);
    assert_true(h1 != h0);

    S_put(state, "content/c.md", "gamma\n"); /* a new file */
    uint64_t h2 = S_tree(state);
    assert_true(h2 != h1);

    char from[512], to[512];
    snprintf(from, sizeof from, "%s/content/c.md", (char *)*state);
    snprintf(to, sizeof to, "%s/content/d.md", (char *)*state);
    assert_int_equal(rename(from, to), 0); /* a rename */
    uint64_t h3 = S_tree(state);
    assert_true(h3 != h2);

    assert_int_equal(unlink(to), 0); /* a removal */
    assert_true(S_tree(state) != h3);
}

/* An edit that keeps the size and puts the modification time back is still
 * seen: the inode change time moves on every write. */
static void test_mtime_put_back(void **state)
{
    char dir[512], path[512];
    snprintf(dir, sizeof dir, "%s/content", (char *)*state);
    assert_int_equal(mkdir(dir, 0777), 0);
    S_put(state, "content/a.md", "one\n");
    snprintf(path, sizeof path, "%s/content/a.md", (char *)*state);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    uint64_t h0 = S_tree(state);
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    S_put(state, "content/a.md", "two\n");
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    assert_true(S_tree(state) != h0);
}

static void test_files_and_strings(void **state)
{
    S_put(state, "x", "1");
    char path[512];
    snprintf(path, sizeof path, "%s/x", (char *)*state);
    uint64_t a = stamp_file(STAMP_SEED, path);
    assert_true(a == stamp_file(STAMP_SEED, path));
    int dir = open(*state, O_RDONLY | O_DIRECTORY);
    assert_true(dir >= 0);
    /* by name relative to a folder: the same facts, another name hashed */
    assert_true(stamp_file_at(STAMP_SEED, dir, "x") != stamp_file_at(STAMP_SEED, dir, "y"));
    close(dir);
    assert_true(stamp_file(STAMP_SEED, "/nonexistent/kvsite") != a);
    assert_true(stamp_str(STAMP_SEED, "strict") != stamp_str(STAMP_SEED, "-"));
    /* a missing folder is a state of its own, not an error */
    size_t files = 7;
    uint64_t none = stamp_tree(STAMP_SEED, *state, "missing", 10, &files);
    assert_int_equal(files, 0);
    assert_true(none != STAMP_SEED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tree_changes, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_mtime_put_back, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_files_and_strings, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
