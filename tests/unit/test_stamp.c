/* Unit tests for gen/stamp.c: the fingerprint behind the no-change fast
 * path must change with any edit, addition, removal or rename of a file, and
 * stay the same when nothing was touched; the per-file stamps that incremental
 * builds keep are those of stamp_file, by root-relative path. */
#include <fcntl.h>
#include <stdbool.h>
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

#include "tmpdir.h"

#include "stamp.h"
#include "fsutil.h"

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-stamp-XXXXXX"); }
static int S_teardown(void **state) { return tmpdir_teardown(state); }

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

/* ---- stamp_tree_each ------------------------------------------------------ */

enum { MAX_SEEN = 8192 };

typedef struct {
    size_t n;
    char *path[MAX_SEEN];
    uint64_t stamp[MAX_SEEN];
} seen;

static void S_note(void *ctx, const char *path, uint64_t stamp)
{
    seen *s = ctx;
    assert_true(s->n < MAX_SEEN);
    s->path[s->n] = strdup(path);
    s->stamp[s->n] = stamp;
    s->n++;
}

static void S_seen_free(seen *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->path[i]);
    s->n = 0;
}

/* The stamp given for path; fails when path was not called back exactly once. */
static uint64_t S_stamp_of(const seen *s, const char *path)
{
    size_t hits = 0, at = 0;
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->path[i], path) == 0) {
            hits++;
            at = i;
        }
    if (hits != 1)
        fail_msg("%s was called back %zu times", path, hits);
    return s->stamp[at];
}

static void S_mkdir(void **state, const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", (char *)*state, rel);
    assert_int_equal(mkdir(path, 0777), 0);
}

/* content/ with files at three depths, a dotfile, an empty folder, a link to
 * a file and a link to a folder. */
static void S_tree_fixture(void **state)
{
    S_mkdir(state, "content");
    S_mkdir(state, "content/sub");
    S_mkdir(state, "content/sub/deeper");
    S_mkdir(state, "content/empty");
    S_mkdir(state, "elsewhere");
    S_put(state, "content/a.md", "alpha\n");
    S_put(state, "content/.hidden", "dot\n");
    S_put(state, "content/sub/b.md", "beta\n");
    S_put(state, "content/sub/deeper/c.md", "gamma\n");
    S_put(state, "elsewhere/x.md", "x\n");
    char path[512];
    snprintf(path, sizeof path, "%s/content/link.md", (char *)*state);
    assert_int_equal(symlink("a.md", path), 0);
    snprintf(path, sizeof path, "%s/content/dirlink", (char *)*state);
    assert_int_equal(symlink("../elsewhere", path), 0);
}

static const char *const S_regular[] = {"content/.hidden", "content/a.md", "content/sub/b.md",
                                        "content/sub/deeper/c.md"};

static void test_each_calls_back_per_regular_file(void **state)
{
    S_tree_fixture(state);
    seen s = {0};
    size_t files = 0, files0 = 0;
    uint64_t h = stamp_tree_each(STAMP_SEED, *state, "content", 1000, &files, S_note, &s);
    /* the same hash and count as stamp_tree: the callback only watches */
    assert_true(h == stamp_tree(STAMP_SEED, *state, "content", 1000, &files0));
    assert_int_equal(files, files0);
    assert_int_equal(files, 6); /* links count as files, but are not called back */
    assert_int_equal(s.n, 4);
    for (size_t i = 0; i < 4; i++)
        S_stamp_of(&s, S_regular[i]);
    S_seen_free(&s);

    /* rel "." and "": the paths are relative to root, without "./" */
    static const char *const rels[] = {".", ""};
    for (size_t k = 0; k < 2; k++) {
        stamp_tree_each(STAMP_SEED, *state, rels[k], 1000, NULL, S_note, &s);
        assert_int_equal(s.n, 5);
        for (size_t i = 0; i < 4; i++)
            S_stamp_of(&s, S_regular[i]);
        S_stamp_of(&s, "elsewhere/x.md");
        S_seen_free(&s);
    }
    /* a missing folder: no call */
    stamp_tree_each(STAMP_SEED, *state, "missing", 1000, NULL, S_note, &s);
    assert_int_equal(s.n, 0);
}

/* The header's claim: each file's stamp is what stamp_file gives for its
 * root-relative path, run from the root folder. */
static void test_each_stamp_is_stamp_file(void **state)
{
    S_tree_fixture(state);
    seen s = {0};
    stamp_tree_each(STAMP_SEED, *state, "content", 1000, NULL, S_note, &s);
    int here = open(".", O_RDONLY | O_DIRECTORY);
    assert_true(here >= 0);
    assert_int_equal(chdir(*state), 0);
    uint64_t want[4];
    for (size_t i = 0; i < 4; i++)
        want[i] = stamp_file(STAMP_SEED, S_regular[i]);
    assert_int_equal(fchdir(here), 0);
    close(here);
    for (size_t i = 0; i < 4; i++)
        if (S_stamp_of(&s, S_regular[i]) != want[i])
            fail_msg("the stamp of %s is not stamp_file's", S_regular[i]);
    /* the path is part of it: the same file by another name differs */
    char abs[512];
    snprintf(abs, sizeof abs, "%s/%s", (char *)*state, S_regular[1]);
    assert_true(stamp_file(STAMP_SEED, abs) != want[1]);
    /* and files differ from each other */
    assert_true(want[0] != want[1] && want[1] != want[2] && want[2] != want[3]);
    S_seen_free(&s);
}

static void test_each_stamp_changes_with_the_file(void **state)
{
    S_tree_fixture(state);
    seen s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
    stamp_tree_each(STAMP_SEED, *state, "content", 1000, NULL, S_note, &s0);
    /* nothing touched: the same stamps */
    stamp_tree_each(STAMP_SEED, *state, "content", 1000, NULL, S_note, &s1);
    for (size_t i = 0; i < 4; i++)
        assert_true(S_stamp_of(&s0, S_regular[i]) == S_stamp_of(&s1, S_regular[i]));

    /* rewritten in place, another size: that file's stamp alone changes */
    S_put(state, "content/sub/b.md", "beta, longer\n");
    stamp_tree_each(STAMP_SEED, *state, "content", 1000, NULL, S_note, &s2);
    for (size_t i = 0; i < 4; i++) {
        bool changed = S_stamp_of(&s1, S_regular[i]) != S_stamp_of(&s2, S_regular[i]);
        if (changed != (i == 2))
            fail_msg("%s: stamp %s", S_regular[i], changed ? "changed" : "did not change");
    }

    /* replaced by rename with the same size and bytes: a new inode, a new stamp */
    char tmp[512], dst[512];
    snprintf(tmp, sizeof tmp, "%s/content/sub/deeper/.c.tmp", (char *)*state);
    snprintf(dst, sizeof dst, "%s/content/sub/deeper/c.md", (char *)*state);
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fputs("gamma\n", f);
    fclose(f);
    assert_int_equal(rename(tmp, dst), 0);
    stamp_tree_each(STAMP_SEED, *state, "content", 1000, NULL, S_note, &s3);
    assert_true(S_stamp_of(&s2, "content/sub/deeper/c.md") !=
                S_stamp_of(&s3, "content/sub/deeper/c.md"));
    assert_true(S_stamp_of(&s2, "content/a.md") == S_stamp_of(&s3, "content/a.md"));
    S_seen_free(&s0);
    S_seen_free(&s1);
    S_seen_free(&s2);
    S_seen_free(&s3);
}

/* stamp_key: the bytes' stamp with its high half folded into the low bits
 * (table slots): keys that differ only in their high bits or in one byte of
 * a long text land in different slots of a small table. */
static void test_key(void **state)
{
    (void)state;
    uint64_t h = stamp_bytes(STAMP_SEED, "per_token*tokens", 16);
    assert_true(stamp_key("per_token*tokens", 16) == (h ^ (h >> 32)));
    unsigned slots = 0;
    char text[] = "2*80*1*96*8192*4 + a";
    for (int i = 0; i < 8; i++) {
        text[17] = (char)('0' + i);
        slots |= 1u << (stamp_key(text, sizeof text - 1) & 31);
    }
    assert_true(__builtin_popcount(slots) >= 5);
}

/* A folder of 5,000 names is stat'ed in chunks of 2,048 by two threads
 * (stamp.c): every file's stamp is still stamp_file's, a folder among them
 * is still walked, and an edit in any part changes the tree's stamp. */
static void test_many_names(void **state)
{
    char path[512];
    snprintf(path, sizeof path, "%s/content", (char *)*state);
    assert_int_equal(mkdir(path, 0777), 0);
    for (int i = 0; i < 5000; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "content/p%04d.md", i);
        S_put(state, rel, rel);
    }
    snprintf(path, sizeof path, "%s/content/p2500", (char *)*state);
    assert_int_equal(mkdir(path, 0777), 0);
    S_put(state, "content/p2500/inner.md", "inner");
    seen s = {0};
    size_t files = 0;
    uint64_t h = stamp_tree_each(STAMP_SEED, *state, "content", 100000, &files, S_note, &s);
    assert_int_equal(files, 5001);
    assert_int_equal(s.n, 5001);
    int here = open(".", O_RDONLY | O_DIRECTORY);
    assert_true(here >= 0);
    assert_int_equal(chdir(*state), 0);
    static const char *const probe[] = {"content/p0000.md", "content/p1500.md",
                                        "content/p2047.md", "content/p2048.md",
                                        "content/p4095.md", "content/p4999.md",
                                        "content/p2500/inner.md"};
    for (size_t i = 0; i < sizeof probe / sizeof *probe; i++)
        if (S_stamp_of(&s, probe[i]) != stamp_file(STAMP_SEED, probe[i]))
            fail_msg("the stamp of %s is not stamp_file's", probe[i]);
    assert_int_equal(fchdir(here), 0);
    close(here);
    S_seen_free(&s);
    assert_true(h == stamp_tree(STAMP_SEED, *state, "content", 100000, NULL));
    S_put(state, "content/p3900.md", "edited, longer than before");
    assert_true(h != stamp_tree(STAMP_SEED, *state, "content", 100000, NULL));
}

/* ---- stamp_tree_sum ------------------------------------------------------- */

static uint64_t S_sum_of(const seen *s)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += s->stamp[i];
    return sum;
}

/* The sum is its entries' stamps added up, keyed by kind; a regular file's
 * stamp is stamp_tree_each's with the low bit set; an entry's change is
 * an update of the sum by its old and new stamps (what serve does with the
 * files inotify names) */
static void test_sum_of_entries(void **state)
{
    S_tree_fixture(state);
    seen s = {0}, e = {0};
    size_t files = 0;
    uint64_t sum = stamp_tree_sum(*state, "content", 1000, &files, S_note, &s);
    assert_true(sum == S_sum_of(&s));
    assert_int_equal(s.n, 9); /* 4 files, 3 folders, 2 links */
    stamp_tree_each(STAMP_SEED, *state, "content", 1000, NULL, S_note, &e);
    for (size_t i = 0; i < 4; i++)
        assert_true(S_stamp_of(&s, S_regular[i]) == (S_stamp_of(&e, S_regular[i]) | 1));
    S_stamp_of(&s, "content/sub/");
    S_stamp_of(&s, "content/sub/deeper/");
    S_stamp_of(&s, "content/empty/");
    S_stamp_of(&s, "?content/link.md");
    S_stamp_of(&s, "?content/dirlink");
    for (size_t i = 0; i < s.n; i++)
        assert_true(s.stamp[i] & 1); /* never 0: 0 is no entry */
    assert_true(sum == stamp_tree_sum(*state, "content", 1000, NULL, NULL, NULL));

    /* a file rewritten: the sum moves by its own stamps */
    uint64_t before = S_stamp_of(&s, "content/sub/b.md");
    S_put(state, "content/sub/b.md", "beta, longer\n");
    char path[512];
    snprintf(path, sizeof path, "%s/content/sub/b.md", (char *)*state);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    uint64_t after = stamp_entry("content/sub/b.md", &st);
    assert_true(after != before);
    uint64_t fresh = stamp_tree_sum(*state, "content", 1000, NULL, NULL, NULL);
    assert_true(fresh == sum - before + after);
    assert_true(fresh != sum);

    /* rel ".": keys without "./", as stamp_tree_each's paths */
    seen d = {0};
    stamp_tree_sum(*state, ".", 1000, NULL, S_note, &d);
    S_stamp_of(&d, "content/");
    S_stamp_of(&d, "content/a.md");
    S_stamp_of(&d, "?content/link.md");
    S_seen_free(&d);
    /* a missing folder and an empty one are told apart */
    uint64_t missing = stamp_tree_sum(*state, "missing", 1000, NULL, NULL, NULL);
    assert_true(missing != 0);
    assert_true(stamp_tree_sum(*state, "content/empty", 1000, NULL, NULL, NULL) == 0);
    S_seen_free(&s);
    S_seen_free(&e);
}

/* stamp_files_at is stamp_file_at for each name, across its chunks and its
 * two threads, a missing file included. */
static void test_files_at_is_file_at(void **state)
{
    char path[512];
    snprintf(path, sizeof path, "%s/out", (char *)*state);
    assert_int_equal(mkdir(path, 0777), 0);
    enum { N = 5000 };
    char **names = malloc(N * sizeof *names);
    assert_non_null(names);
    for (int i = 0; i < N; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "out/p%04d.html", i);
        if (i != 2049) /* one missing, in the second chunk */
            S_put(state, rel, rel);
        names[i] = strdup(rel);
    }
    int dir = open(*state, O_RDONLY | O_DIRECTORY);
    assert_true(dir >= 0);
    uint64_t *got = malloc(N * sizeof *got);
    assert_non_null(got);
    stamp_files_at(dir, names, N, got);
    for (int i = 0; i < N; i++)
        if (got[i] != stamp_file_at(STAMP_SEED, dir, names[i]))
            fail_msg("the stamp of %s is not stamp_file_at's", names[i]);
    assert_true(got[2049] != got[2048]);
    stamp_files_at(dir, names, 0, got); /* none: nothing to do */
    close(dir);
    for (int i = 0; i < N; i++)
        free(names[i]);
    free(names);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),
        cmocka_unit_test_setup_teardown(test_tree_changes, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_mtime_put_back, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_files_and_strings, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_each_calls_back_per_regular_file, S_setup,
                                        S_teardown),
        cmocka_unit_test_setup_teardown(test_each_stamp_is_stamp_file, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_each_stamp_changes_with_the_file, S_setup,
                                        S_teardown),
        cmocka_unit_test_setup_teardown(test_many_names, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_sum_of_entries, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_files_at_is_file_at, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
