/* Unit tests for gen/fsutil.c: joins, bounded reads, mkdir -p, writes and
 * copies that refuse symlinks, rm -rf that never follows a symlink, and the
 * moves and removals of incremental builds, which stay inside their folder,
 * and the opens and reads of a project's files beneath a folder handle (no
 * links, no "..", no hard links, read from the fd that was checked).
 * Every test works in its own temporary folder, set up with plain POSIX calls
 * so that the functions under test never prepare their own fixtures. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "buf.h"
#include "fsutil.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- fixtures ------------------------------------------------------------- */

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-fsutil-XXXXXX"); }
static int S_teardown(void **state) { return tmpdir_teardown(state); }

/* root/rel, malloc'ed */
static char *S_path(void **state, const char *rel)
{
    size_t n = strlen(*state) + strlen(rel) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", (char *)*state, rel);
    return p;
}

static void S_put(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static void S_put_rel(void **state, const char *rel, const char *text)
{
    char *p = S_path(state, rel);
    S_put(p, text, strlen(text));
    free(p);
}

static void S_mkdir_rel(void **state, const char *rel)
{
    char *p = S_path(state, rel);
    assert_int_equal(mkdir(p, 0755), 0);
    free(p);
}

/* The whole file, read with plain POSIX; *len set. */
static char *S_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *s = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 > cap) {
            cap = cap ? cap * 2 : 8192;
            s = realloc(s, cap);
        }
        size_t r = fread(s + n, 1, 4096, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    *len = n;
    return s;
}

static bool S_lexists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* ---- fs_join -------------------------------------------------------------- */

typedef struct {
    const char *a, *b, *out;
} join_case;

static void test_join(void **state)
{
    (void)state;
    static const join_case cases[] = {
        {"a", "b", "a/b"},
        {"a/", "b", "a/b"},
        {"", "b", "b"},
        {".", "content", "content"},
        {"/", "b", "/b"},
        {"./x", "y", "./x/y"},
        {"/tmp/site", "content/a.md", "/tmp/site/content/a.md"},
        {"a", "", "a/"},
        {"..", "b", "../b"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        char *j = fs_join(cases[i].a, cases[i].b);
        if (strcmp(j, cases[i].out) != 0)
            fail_msg("join(\"%s\", \"%s\") = \"%s\", expected \"%s\"", cases[i].a, cases[i].b,
                     j, cases[i].out);
        free(j);
    }
}

/* ---- fs_read_file --------------------------------------------------------- */

static void test_read_appends_and_caps(void **state)
{
    S_put_rel(state, "five", "hello");
    char *p = S_path(state, "five");
    buf b = BUF_INIT;
    buf_puts(&b, "pre:");
    assert_int_equal(fs_read_file(p, 5, &b), FS_OK); /* exactly the cap is fine */
    assert_string_equal(b.ptr, "pre:hello");
    assert_int_equal(b.len, 9);
    buf_clear(&b);
    assert_int_equal(fs_read_file(p, 4, &b), FS_ETOOBIG);
    assert_string_equal(fs_strerror(FS_ETOOBIG, 4), "file too large (limit 4 bytes)");
    buf_free(&b);
    free(p);
}

static void test_read_empty_file(void **state)
{
    S_put_rel(state, "empty", "");
    char *p = S_path(state, "empty");
    buf b = BUF_INIT;
    assert_int_equal(fs_read_file(p, 0, &b), FS_OK);
    assert_non_null(b.ptr); /* a C string, even for an empty file */
    assert_int_equal(b.len, 0);
    assert_string_equal(b.ptr, "");
    buf_free(&b);
    free(p);
}

static void test_read_large_binary(void **state)
{
    enum { SIZE = 200001 };
    char *data = malloc(SIZE);
    for (size_t i = 0; i < SIZE; i++)
        data[i] = (char)(i * 31 + i / 256);
    data[1000] = '\0';
    char *p = S_path(state, "big.bin");
    S_put(p, data, SIZE);
    buf b = BUF_INIT;
    assert_int_equal(fs_read_file(p, SIZE, &b), FS_OK);
    assert_int_equal(b.len, SIZE);
    assert_memory_equal(b.ptr, data, SIZE);
    assert_int_equal(b.ptr[SIZE], '\0');
    buf_free(&b);
    assert_int_equal(fs_read_file(p, SIZE - 1, &b), FS_ETOOBIG);
    buf_free(&b);
    free(p);
    free(data);
}

/* A regular file is read whole when its size falls on either side of the
 * read buffer's edges (a short read is its end: no read to see 0 after it) */
static void test_read_sizes_at_buffer_edges(void **state)
{
    static const size_t sizes[] = {1, 65534, 65535, 65536, 65537, 131070, 131071,
                                   131072, 131073, 262145};
    char *data = malloc(262145);
    for (size_t i = 0; i < 262145; i++)
        data[i] = (char)('a' + i % 23);
    char *p = S_path(state, "edge.txt");
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        for (int prefix = 0; prefix < 2; prefix++) {
            S_put(p, data, sizes[k]);
            buf b = BUF_INIT;
            if (prefix)
                buf_puts(&b, "pre:");
            assert_int_equal(fs_read_file(p, sizes[k], &b), FS_OK);
            size_t at = prefix ? 4 : 0;
            if (b.len != at + sizes[k])
                fail_msg("size %zu (prefix %d): read %zu bytes", sizes[k], prefix, b.len - at);
            assert_memory_equal(b.ptr + at, data, sizes[k]);
            assert_int_equal(b.ptr[b.len], '\0');
            buf_free(&b);
        }
    }
    free(p);
    free(data);
}

static void test_read_errors(void **state)
{
    buf b = BUF_INIT;
    char *missing = S_path(state, "missing.md");
    assert_int_equal(fs_read_file(missing, 100, &b), FS_ENOENT);
    assert_string_equal(fs_strerror(FS_ENOENT, 100), "no such file");
    assert_int_equal(b.len, 0);

    /* a folder */
    S_mkdir_rel(state, "dir");
    char *dir = S_path(state, "dir");
    errno = 0;
    assert_int_equal(fs_read_file(dir, 100, &b), FS_EOTHER);
    assert_int_equal(errno, EISDIR);
    assert_string_equal(fs_strerror(FS_EOTHER, 100), strerror(EISDIR));

    /* a path through a regular file */
    S_put_rel(state, "file", "x");
    char *through = S_path(state, "file/x");
    assert_int_equal(fs_read_file(through, 100, &b), FS_EOTHER);
    assert_int_equal(errno, ENOTDIR);
    assert_int_equal(b.len, 0);
    assert_string_equal(fs_strerror(FS_OK, 0), "ok");
    buf_free(&b);
    free(missing);
    free(dir);
    free(through);
}

static void test_read_device_is_bounded(void **state)
{
    (void)state;
    /* a device has no size to check up front: the cap holds while reading */
    buf b = BUF_INIT;
    assert_int_equal(fs_read_file("/dev/zero", 1000, &b), FS_ETOOBIG);
    assert_true(b.len < 200000);
    buf_free(&b);
    assert_int_equal(fs_read_file("/dev/null", 10, &b), FS_OK);
    assert_int_equal(b.len, 0);
    buf_free(&b);
}

/* ---- fs_mkdir_p ----------------------------------------------------------- */

static void test_mkdir_p(void **state)
{
    char *deep = S_path(state, "a/b/c/d");
    assert_int_equal(fs_mkdir_p(deep), 0);
    assert_true(fs_is_dir(deep));
    assert_int_equal(fs_mkdir_p(deep), 0); /* existing: fine */
    char *trail = S_path(state, "x/y/");
    assert_int_equal(fs_mkdir_p(trail), 0);
    char *y = S_path(state, "x/y");
    assert_true(fs_is_dir(y));
    char *dbl = S_path(state, "p//q");
    assert_int_equal(fs_mkdir_p(dbl), 0);
    char *q = S_path(state, "p/q");
    assert_true(fs_is_dir(q));
    free(deep);
    free(trail);
    free(y);
    free(dbl);
    free(q);
}

static void test_mkdir_p_through_file(void **state)
{
    S_put_rel(state, "file", "x");
    char *p = S_path(state, "file/sub/deeper");
    errno = 0;
    assert_int_equal(fs_mkdir_p(p), -1);
    assert_int_equal(errno, ENOTDIR);
    free(p);
}

static void test_mkdir_p_existing_file_fails(void **state)
{
    /* `mkdir -p FILE` fails: the folder asked for does not exist afterwards */
    S_put_rel(state, "plain", "x");
    char *p = S_path(state, "plain");
    errno = 0;
    int rc = fs_mkdir_p(p);
    assert_false(fs_is_dir(p));
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EEXIST);
    free(p);
}

/* fs_mkdir_p("") in a child, so that a sanitizer report cannot end the run. */
static void test_mkdir_p_empty_path(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        errno = 0;
        int rc = fs_mkdir_p("");
        _exit(rc == -1 && errno == ENOENT ? 0 : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- fs_write_file and fs_copy_file --------------------------------------- */

static void test_write_file(void **state)
{
    char *p = S_path(state, "out.bin");
    assert_int_equal(fs_write_file(p, "a\0b\nc", 5), 0);
    size_t n = 0;
    char *s = S_slurp(p, &n);
    assert_int_equal(n, 5);
    assert_memory_equal(s, "a\0b\nc", 5);
    free(s);
    /* rewrites truncate */
    assert_int_equal(fs_write_file(p, "xy", 2), 0);
    s = S_slurp(p, &n);
    assert_int_equal(n, 2);
    assert_memory_equal(s, "xy", 2);
    free(s);
    assert_int_equal(fs_write_file(p, "", 0), 0);
    s = S_slurp(p, &n);
    assert_int_equal(n, 0);
    free(s);

    char *nodir = S_path(state, "no/such/dir/f");
    errno = 0;
    assert_int_equal(fs_write_file(nodir, "x", 1), -1);
    assert_int_equal(errno, ENOENT);
    S_mkdir_rel(state, "adir");
    char *dir = S_path(state, "adir");
    errno = 0;
    assert_int_equal(fs_write_file(dir, "x", 1), -1);
    assert_int_equal(errno, EISDIR);
    free(p);
    free(nodir);
    free(dir);
}

/* fs_write_file writes a file of kvsite's own (fs_open_own): never through
 * a link, a FIFO or a hard link standing there, each replaced by a new file
 * (their targets and other names untouched); a folder there is an error. */
static void test_write_replaces_what_stands_there(void **state)
{
    S_put_rel(state, "target", "precious");
    char *target = S_path(state, "target");
    const char *names[] = {"link", "fifo", "hard", "readonly"};
    for (size_t k = 0; k < 4; k++) {
        char *p = S_path(state, names[k]);
        if (k == 0)
            assert_int_equal(symlink(target, p), 0);
        else if (k == 1)
            assert_int_equal(mkfifo(p, 0644), 0); /* no reader: not waited on */
        else if (k == 2)
            assert_int_equal(link(target, p), 0);
        else { /* (as root, writable all the same) */
            S_put(p, "old", 3);
            assert_int_equal(chmod(p, 0444), 0);
        }
        assert_int_equal(fs_write_file(p, "overwritten", 11), 0);
        struct stat st;
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_nlink, 1);
        size_t n = 0;
        char *s = S_slurp(p, &n);
        assert_int_equal(n, 11);
        free(s);
        s = S_slurp(target, &n);
        assert_int_equal(n, 8);
        assert_memory_equal(s, "precious", 8);
        free(s);
        free(p);
    }
    /* without emptying, a file's old bytes stay until written over */
    int fd = fs_open_own(target, false);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "PR", 2), 2);
    close(fd);
    size_t n = 0;
    char *s = S_slurp(target, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(s, "PRecious", 8);
    free(s);
    char *dir = S_path(state, "adir");
    assert_int_equal(mkdir(dir, 0755), 0);
    errno = 0;
    assert_int_equal(fs_write_file(dir, "x", 1), -1);
    assert_int_equal(errno, EISDIR);
    free(dir);
    free(target);
}

/* f made to hold data by fs_sync_file (round 0) or by a stream (round 1). */
static void S_rewrite(const char *f, const char *data, size_t n, int round)
{
    if (round == 0) {
        assert_int_equal(fs_sync_file(f, data, n), 0);
        return;
    }
    fs_stream w;
    fs_stream_open(&w, f, NULL);
    assert_int_equal(fs_stream_write(&w, data, n), 0);
    assert_int_equal(fs_stream_close(&w, NULL, NULL), 0);
}

/* An output with another name (a hard link planted in the staging folder,
 * or the output copied with cp -al): rewritten as a new file, whole
 * (fs_sync_file) or by a stream, and the other name keeps its bytes; with
 * the same bytes too, so that the output has no second name. */
static void test_outputs_not_through_hard_links(void **state)
{
    char *f = S_path(state, "f"), *g = S_path(state, "g");
    char big[100000];
    memset(big, 'a', sizeof big);
    for (int round = 0; round < 4; round++) {
        bool same = round >= 2; /* f's bytes written again */
        if (!same) {
            unlink(f);
            S_put(f, big, sizeof big);
        }
        unlink(g);
        assert_int_equal(link(f, g), 0);
        big[70000] = 'b';
        S_rewrite(f, big, sizeof big, round % 2);
        size_t n = 0;
        char *s = S_slurp(f, &n);
        assert_int_equal(n, sizeof big);
        assert_memory_equal(s, big, sizeof big);
        free(s);
        if (!same) { /* the other name keeps the old bytes */
            big[70000] = 'a';
            s = S_slurp(g, &n);
            assert_int_equal(n, sizeof big);
            assert_memory_equal(s, big, sizeof big);
            free(s);
        }
        struct stat st;
        assert_int_equal(stat(f, &st), 0);
        assert_int_equal(st.st_nlink, 1);
    }
    free(f);
    free(g);
}

static void test_copy_file(void **state)
{
    enum { SIZE = 150000 };
    char *data = malloc(SIZE);
    for (size_t i = 0; i < SIZE; i++)
        data[i] = (char)(i % 251);
    char *from = S_path(state, "from.bin");
    char *to = S_path(state, "to.bin");
    S_put(from, data, SIZE);
    S_put(to, "old content that is longer than nothing", 39);
    size_t copied = 0;
    assert_int_equal(fs_copy_file(from, to, &copied), 0);
    assert_int_equal(copied, SIZE);
    size_t n = 0;
    char *s = S_slurp(to, &n);
    assert_int_equal(n, SIZE);
    assert_memory_equal(s, data, SIZE);
    free(s);
    /* copied may be NULL */
    char *to2 = S_path(state, "to2.bin");
    assert_int_equal(fs_copy_file(from, to2, NULL), 0);
    s = S_slurp(to2, &n);
    assert_int_equal(n, SIZE);
    free(s);
    free(data);
    free(from);
    free(to);
    free(to2);
}

static void test_copy_errors(void **state)
{
    char *missing = S_path(state, "missing");
    char *to = S_path(state, "to");
    errno = 0;
    assert_int_equal(fs_copy_file(missing, to, NULL), -1);
    assert_int_equal(errno, ENOENT);
    assert_false(S_lexists(to)); /* nothing created */

    S_put_rel(state, "src", "data");
    S_put_rel(state, "target", "precious");
    char *src = S_path(state, "src");
    char *target = S_path(state, "target");
    char *link = S_path(state, "link");
    assert_int_equal(symlink(target, link), 0);
    errno = 0;
    assert_int_equal(fs_copy_file(src, link, NULL), -1);
    assert_int_equal(errno, ELOOP);
    size_t n = 0;
    char *s = S_slurp(target, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(s, "precious", 8);
    free(s);
    char *nodir = S_path(state, "no/dir/x");
    errno = 0;
    assert_int_equal(fs_copy_file(src, nodir, NULL), -1);
    assert_int_equal(errno, ENOENT);
    free(missing);
    free(to);
    free(src);
    free(target);
    free(link);
    free(nodir);
}

/* ---- fs_remove_tree ------------------------------------------------------- */

static void test_remove_tree_keeps_symlink_targets(void **state)
{
    /* keep/ lives outside the tree; the tree links to it three ways */
    S_mkdir_rel(state, "keep");
    S_mkdir_rel(state, "keep/inner");
    S_put_rel(state, "keep/precious.txt", "precious");
    S_put_rel(state, "keep/inner/deep.txt", "deep");
    S_mkdir_rel(state, "t");
    S_mkdir_rel(state, "t/a");
    S_mkdir_rel(state, "t/a/b");
    S_mkdir_rel(state, "t/empty");
    S_put_rel(state, "t/x.txt", "x");
    S_put_rel(state, "t/a/b/c.txt", "c");
    char *keep = S_path(state, "keep");
    char *precious = S_path(state, "keep/precious.txt");
    char *l1 = S_path(state, "t/dirlink");
    char *l2 = S_path(state, "t/a/filelink");
    char *l3 = S_path(state, "t/a/b/dangling");
    assert_int_equal(symlink(keep, l1), 0);
    assert_int_equal(symlink(precious, l2), 0);
    assert_int_equal(symlink("/nonexistent/kvsite", l3), 0);

    char *t = S_path(state, "t");
    assert_int_equal(fs_remove_tree(t), 0);
    assert_false(S_lexists(t));
    assert_true(fs_is_dir(keep));
    size_t n = 0;
    char *s = S_slurp(precious, &n);
    assert_non_null(s);
    assert_int_equal(n, 8);
    assert_memory_equal(s, "precious", 8);
    free(s);
    char *deep = S_path(state, "keep/inner/deep.txt");
    assert_true(S_lexists(deep));
    free(deep);
    free(keep);
    free(precious);
    free(l1);
    free(l2);
    free(l3);
    free(t);
}

static void test_remove_tree_on_symlink_itself(void **state)
{
    S_mkdir_rel(state, "keep");
    S_put_rel(state, "keep/f", "f");
    char *keep = S_path(state, "keep");
    char *link = S_path(state, "link");
    assert_int_equal(symlink(keep, link), 0);
    assert_int_equal(fs_remove_tree(link), 0);
    assert_false(S_lexists(link));
    char *f = S_path(state, "keep/f");
    assert_true(S_lexists(f));
    free(keep);
    free(link);
    free(f);
}

static void test_remove_tree_simple_cases(void **state)
{
    char *missing = S_path(state, "missing");
    assert_int_equal(fs_remove_tree(missing), 0);
    S_put_rel(state, "file", "x");
    char *file = S_path(state, "file");
    assert_int_equal(fs_remove_tree(file), 0);
    assert_false(S_lexists(file));

    /* a deep chain of folders */
    char rel[512] = "deep";
    S_mkdir_rel(state, rel);
    for (int i = 0; i < 60; i++) {
        strcat(rel, "/d");
        S_mkdir_rel(state, rel);
    }
    strcat(rel, "/leaf.txt");
    S_put_rel(state, rel, "leaf");
    char *deep = S_path(state, "deep");
    assert_int_equal(fs_remove_tree(deep), 0);
    assert_false(S_lexists(deep));
    free(missing);
    free(file);
    free(deep);
}

static void test_is_dir_exists(void **state)
{
    S_mkdir_rel(state, "d");
    S_put_rel(state, "f", "x");
    char *d = S_path(state, "d");
    char *f = S_path(state, "f");
    char *m = S_path(state, "m");
    char *ld = S_path(state, "ld");
    char *dang = S_path(state, "dang");
    assert_int_equal(symlink(d, ld), 0);
    assert_int_equal(symlink("/nonexistent/kvsite", dang), 0);
    assert_true(fs_is_dir(d));
    assert_false(fs_is_dir(f));
    assert_false(fs_is_dir(m));
    assert_true(fs_is_dir(ld)); /* follows the link */
    assert_true(fs_exists(d));
    assert_true(fs_exists(f));
    assert_false(fs_exists(m));
    assert_true(fs_exists(dang)); /* the link itself exists */
    assert_false(fs_is_dir(dang));
    free(d);
    free(f);
    free(m);
    free(ld);
    free(dang);
}

/* ---- fs_same -------------------------------------------------------------- */

static void test_same(void **state)
{
    S_put_rel(state, "f", "hello");
    S_put_rel(state, "empty", "");
    S_mkdir_rel(state, "d");
    char *f = S_path(state, "f");
    char *empty = S_path(state, "empty");
    char *d = S_path(state, "d");
    char *m = S_path(state, "missing");
    char *l = S_path(state, "link");
    assert_int_equal(symlink(f, l), 0);

    assert_true(fs_same(f, "hello", 5));
    assert_false(fs_same(f, "hellO", 5));
    assert_false(fs_same(f, "hell", 4));
    assert_false(fs_same(f, "hello!", 6));
    assert_false(fs_same(f, "", 0));
    assert_true(fs_same(empty, "", 0));
    assert_true(fs_same(empty, NULL, 0));
    assert_false(fs_same(empty, "x", 1));
    assert_false(fs_same(m, "", 0));
    assert_false(fs_same(d, "", 0));
    assert_false(fs_same(l, "hello", 5)); /* a link is not the file */

    /* larger than one read: the last byte counts */
    enum { SIZE = 200003 };
    char *data = malloc(SIZE);
    for (size_t i = 0; i < SIZE; i++)
        data[i] = (char)(i % 253);
    char *big = S_path(state, "big");
    S_put(big, data, SIZE);
    assert_true(fs_same(big, data, SIZE));
    data[SIZE - 1] ^= 1;
    assert_false(fs_same(big, data, SIZE));
    data[SIZE - 1] ^= 1;
    data[70000] ^= 1;
    assert_false(fs_same(big, data, SIZE));
    free(data);
    free(big);
    free(f);
    free(empty);
    free(d);
    free(m);
    free(l);
}

/* ---- fs_move_into --------------------------------------------------------- */

/* The file's whole content equals text. */
static void S_assert_file(void **state, const char *rel, const char *text)
{
    char *p = S_path(state, rel);
    struct stat st;
    if (lstat(p, &st) != 0 || !S_ISREG(st.st_mode))
        fail_msg("%s is not a regular file", rel);
    size_t n = 0;
    char *s = S_slurp(p, &n);
    if (n != strlen(text) || memcmp(s, text, n) != 0)
        fail_msg("%s holds \"%.*s\", expected \"%s\"", rel, (int)n, s, text);
    free(s);
    free(p);
}

static void S_assert_real_dir(void **state, const char *rel)
{
    char *p = S_path(state, rel);
    struct stat st;
    if (lstat(p, &st) != 0 || !S_ISDIR(st.st_mode))
        fail_msg("%s is not a real folder", rel);
    free(p);
}

static bool S_lexists_rel(void **state, const char *rel)
{
    char *p = S_path(state, rel);
    bool e = S_lexists(p);
    free(p);
    return e;
}

/* The number of entries in the folder rel (not . and ..). */
static int S_entries(void **state, const char *rel)
{
    char *p = S_path(state, rel);
    DIR *d = opendir(p);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    free(p);
    return n;
}

static int S_move(void **state, size_t *moved)
{
    char *from = S_path(state, "from");
    char *to = S_path(state, "to");
    int rc = fs_move_into(from, to, moved);
    free(from);
    free(to);
    return rc;
}

static void test_move_into_nested(void **state)
{
    S_mkdir_rel(state, "from");
    S_mkdir_rel(state, "from/sub");
    S_mkdir_rel(state, "from/sub/deeper");
    S_mkdir_rel(state, "from/new");
    S_mkdir_rel(state, "from/new/a");
    S_mkdir_rel(state, "from/new/a/b");
    S_mkdir_rel(state, "from/emptydir");
    S_put_rel(state, "from/index.html", "new index");
    S_put_rel(state, "from/.hidden", "dot");
    S_put_rel(state, "from/sub/page.html", "new page");
    S_put_rel(state, "from/sub/deeper/x.css", "x");
    S_put_rel(state, "from/new/a/b/c.txt", "c");
    S_mkdir_rel(state, "to");
    S_mkdir_rel(state, "to/sub");
    S_put_rel(state, "to/index.html", "old index, longer than the new one");
    S_put_rel(state, "to/keep.html", "keep");
    S_put_rel(state, "to/sub/page.html", "old page");
    S_put_rel(state, "to/sub/other.html", "other");

    size_t moved = 99;
    assert_int_equal(S_move(state, &moved), 0);
    assert_int_equal(moved, 5);
    S_assert_file(state, "to/index.html", "new index");
    S_assert_file(state, "to/.hidden", "dot");
    S_assert_file(state, "to/sub/page.html", "new page");
    S_assert_file(state, "to/sub/deeper/x.css", "x");
    S_assert_file(state, "to/new/a/b/c.txt", "c");
    /* what was there and is not replaced stays */
    S_assert_file(state, "to/keep.html", "keep");
    S_assert_file(state, "to/sub/other.html", "other");
    /* the files left from; its folders may stay */
    assert_false(S_lexists_rel(state, "from/index.html"));
    assert_false(S_lexists_rel(state, "from/sub/page.html"));
    assert_false(S_lexists_rel(state, "from/new/a/b/c.txt"));

    /* again, with nothing left to move: fine, and nothing changes */
    assert_int_equal(S_move(state, NULL), 0);
    S_assert_file(state, "to/index.html", "new index");
}

static void test_move_into_replaces_what_stands_in_the_way(void **state)
{
    S_mkdir_rel(state, "from");
    S_mkdir_rel(state, "from/was-file");
    S_mkdir_rel(state, "from/was-file/deeper");
    S_put_rel(state, "from/was-dir.html", "now a file");
    S_put_rel(state, "from/was-file/f.html", "f");
    S_put_rel(state, "from/was-file/deeper/g.html", "g");
    S_mkdir_rel(state, "to");
    /* a non-empty folder where a file goes */
    S_mkdir_rel(state, "to/was-dir.html");
    S_mkdir_rel(state, "to/was-dir.html/inner");
    S_put_rel(state, "to/was-dir.html/inner/z", "z");
    /* a file where a folder goes */
    S_put_rel(state, "to/was-file", "a file");

    size_t moved = 0;
    assert_int_equal(S_move(state, &moved), 0);
    assert_int_equal(moved, 3);
    S_assert_file(state, "to/was-dir.html", "now a file");
    S_assert_real_dir(state, "to/was-file");
    S_assert_file(state, "to/was-file/f.html", "f");
    S_assert_file(state, "to/was-file/deeper/g.html", "g");
}

/* A link planted in the destination leads nothing out of it. */
static void test_move_into_does_not_follow_links(void **state)
{
    S_mkdir_rel(state, "outside");
    S_put_rel(state, "outside/precious", "precious");
    char *outside = S_path(state, "outside");
    char *precious = S_path(state, "outside/precious");
    S_mkdir_rel(state, "from");
    S_mkdir_rel(state, "from/sub");
    S_mkdir_rel(state, "from/sub/deep");
    S_mkdir_rel(state, "from/a");
    S_put_rel(state, "from/sub/file.html", "inside");
    S_put_rel(state, "from/sub/deep/g.html", "g");
    S_put_rel(state, "from/a/b.html", "b");
    S_put_rel(state, "from/file.html", "replaced link");
    S_mkdir_rel(state, "to");
    /* to/sub -> /abs/outside, to/a -> ../outside, to/file.html -> outside/precious */
    char *l1 = S_path(state, "to/sub");
    char *l2 = S_path(state, "to/a");
    char *l3 = S_path(state, "to/file.html");
    assert_int_equal(symlink(outside, l1), 0);
    assert_int_equal(symlink("../outside", l2), 0);
    assert_int_equal(symlink(precious, l3), 0);

    size_t moved = 0;
    assert_int_equal(S_move(state, &moved), 0);
    assert_int_equal(moved, 4);
    /* nothing was written outside */
    assert_int_equal(S_entries(state, "outside"), 1);
    S_assert_file(state, "outside/precious", "precious");
    /* the links were replaced by real folders and files */
    S_assert_real_dir(state, "to/sub");
    S_assert_file(state, "to/sub/file.html", "inside");
    S_assert_file(state, "to/sub/deep/g.html", "g");
    S_assert_real_dir(state, "to/a");
    S_assert_file(state, "to/a/b.html", "b");
    S_assert_file(state, "to/file.html", "replaced link");
    free(outside);
    free(precious);
    free(l1);
    free(l2);
    free(l3);
}

static void test_move_into_errors(void **state)
{
    size_t moved = 99;
    S_mkdir_rel(state, "to");
    assert_int_equal(S_move(state, &moved), -1); /* no from */
    assert_int_equal(moved, 0);
    S_put_rel(state, "x", "x");
    char *to = S_path(state, "to");
    char *x = S_path(state, "x");
    moved = 99;
    assert_int_equal(fs_move_into(to, x, &moved), -1); /* to is a file */
    assert_int_equal(moved, 0);
    char *missing = S_path(state, "missing");
    assert_int_equal(fs_move_into(to, missing, NULL), -1);
    free(to);
    free(x);
    free(missing);
}

/* ---- fs_remove_in --------------------------------------------------------- */

static int S_remove_in(void **state, const char *rel)
{
    char *top = S_path(state, "top");
    int rc = fs_remove_in(top, rel);
    free(top);
    return rc;
}

static void test_remove_in(void **state)
{
    S_mkdir_rel(state, "top");
    S_mkdir_rel(state, "top/a");
    S_mkdir_rel(state, "top/a/b");
    S_mkdir_rel(state, "top/a/b/c");
    S_put_rel(state, "top/a/b/c/f.html", "f");
    S_put_rel(state, "top/a/keep.html", "k");
    S_put_rel(state, "top/x.html", "x");

    /* the file, then c and b left empty; a holds keep.html and stays */
    assert_int_equal(S_remove_in(state, "a/b/c/f.html"), 0);
    assert_false(S_lexists_rel(state, "top/a/b"));
    S_assert_file(state, "top/a/keep.html", "k");
    /* the last file of a: a goes, top stays */
    assert_int_equal(S_remove_in(state, "a/keep.html"), 0);
    assert_false(S_lexists_rel(state, "top/a"));
    S_assert_file(state, "top/x.html", "x");
    assert_int_equal(S_remove_in(state, "x.html"), 0);
    S_assert_real_dir(state, "top");
    assert_int_equal(S_entries(state, "top"), 0);

    /* missing files and folders */
    assert_int_equal(S_remove_in(state, "x.html"), -1);
    assert_int_equal(S_remove_in(state, "no/such/file"), -1);
    char *m = S_path(state, "missing-top");
    assert_int_equal(fs_remove_in(m, "x"), -1);
    free(m);
    S_assert_real_dir(state, "top");

    /* a folder is not removed as a file */
    S_mkdir_rel(state, "top/d");
    S_put_rel(state, "top/d/z", "z");
    assert_int_equal(S_remove_in(state, "d"), -1);
    S_assert_file(state, "top/d/z", "z");
}

static void test_remove_in_does_not_follow_links(void **state)
{
    S_mkdir_rel(state, "outside");
    S_mkdir_rel(state, "outside/in");
    S_put_rel(state, "outside/f.html", "precious");
    S_put_rel(state, "outside/in/g.html", "precious");
    char *outside = S_path(state, "outside");
    S_mkdir_rel(state, "top");
    S_mkdir_rel(state, "top/a");
    char *l1 = S_path(state, "top/l");
    char *l2 = S_path(state, "top/a/l");
    char *l3 = S_path(state, "top/file-link");
    char *f = S_path(state, "outside/f.html");
    assert_int_equal(symlink(outside, l1), 0);
    assert_int_equal(symlink("../../outside", l2), 0);
    assert_int_equal(symlink(f, l3), 0);

    assert_int_equal(S_remove_in(state, "l/f.html"), -1);
    assert_int_equal(S_remove_in(state, "l/in/g.html"), -1);
    assert_int_equal(S_remove_in(state, "a/l/f.html"), -1);
    S_assert_file(state, "outside/f.html", "precious");
    S_assert_file(state, "outside/in/g.html", "precious");
    assert_true(S_lexists_rel(state, "top/l"));
    assert_true(S_lexists_rel(state, "top/a/l"));
    /* a link as the last name is removed itself, its target kept */
    assert_int_equal(S_remove_in(state, "file-link"), 0);
    assert_false(S_lexists_rel(state, "top/file-link"));
    S_assert_file(state, "outside/f.html", "precious");
    free(outside);
    free(l1);
    free(l2);
    free(l3);
    free(f);
}

/* rel comes from the cache file's list of outputs: a ".." in it must not lead
 * the removal out of top either. */
static void test_remove_in_stays_under_top(void **state)
{
    S_mkdir_rel(state, "top");
    S_mkdir_rel(state, "top/a");
    S_put_rel(state, "top/a/keep.html", "k");
    S_put_rel(state, "victim", "precious");
    S_mkdir_rel(state, "victim-dir");
    S_put_rel(state, "victim-dir/v", "precious");

    static const char *const rels[] = {"../victim", "a/../../victim", "./../victim",
                                       "../victim-dir/v", "a/../../victim-dir/v"};
    for (size_t i = 0; i < N(rels); i++) {
        int rc = S_remove_in(state, rels[i]);
        if (!S_lexists_rel(state, "victim") || !S_lexists_rel(state, "victim-dir/v"))
            fail_msg("fs_remove_in(top, \"%s\") (rc %d) removed a file outside top", rels[i], rc);
        assert_int_equal(rc, -1);
    }
    S_assert_file(state, "top/a/keep.html", "k");
}

/* ---- fs_stream -------------------------------------------------------------- */

/* Streams text in chunks of n bytes to rel (old: NULL, or the file compared
 * against); returns whether it wrote, and checks the file then holds text. */
static bool S_stream(void **state, const char *rel, const char *old_rel, const char *text,
                     size_t n)
{
    char *path = S_path(state, rel);
    char *old = old_rel ? S_path(state, old_rel) : NULL;
    fs_stream w;
    fs_stream_open(&w, path, old);
    size_t len = strlen(text);
    for (size_t off = 0; off < len; off += n)
        assert_int_equal(fs_stream_write(&w, text + off, len - off < n ? len - off : n), 0);
    struct stat st;
    bool written = true;
    assert_int_equal(fs_stream_close(&w, &st, &written), 0);
    if (!old_rel || written) {
        size_t got;
        char *s = S_slurp(path, &got);
        assert_non_null(s);
        assert_int_equal(got, len);
        assert_memory_equal(s, text, len);
        assert_int_equal((size_t)st.st_size, len);
        free(s);
    }
    free(path);
    free(old);
    return written;
}

static ino_t S_inode(void **state, const char *rel)
{
    char *p = S_path(state, rel);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    free(p);
    return st.st_ino;
}

static void test_stream_in_place(void **state)
{
    /* a new file */
    assert_true(S_stream(state, "sub/f.json", NULL, "hello, world", 5));
    ino_t ino = S_inode(state, "sub/f.json");
    char *p = S_path(state, "sub/f.json");
    struct stat before, after;
    assert_int_equal(stat(p, &before), 0);
    /* the same bytes: nothing written */
    assert_false(S_stream(state, "sub/f.json", NULL, "hello, world", 4));
    assert_int_equal(stat(p, &after), 0);
    assert_int_equal(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
    /* differs in the middle, then longer, then shorter, then empty */
    assert_true(S_stream(state, "sub/f.json", NULL, "hello, World", 5));
    assert_true(S_stream(state, "sub/f.json", NULL, "hello, World and more", 3));
    assert_true(S_stream(state, "sub/f.json", NULL, "hello", 2));
    assert_true(S_stream(state, "sub/f.json", NULL, "", 1));
    assert_int_equal(S_inode(state, "sub/f.json"), ino); /* written over, in place */
    free(p);
}

static void test_stream_against_another_file(void **state)
{
    S_put_rel(state, "pub", "0123456789abcdef");
    /* the same bytes as the published file: the output is not even made */
    assert_false(S_stream(state, "out/f", "pub", "0123456789abcdef", 3));
    assert_false(S_lexists_rel(state, "out/f"));
    /* differs late: the same prefix is copied, then the rest written */
    assert_true(S_stream(state, "out/f", "pub", "0123456789abcdeF", 4));
    /* the published one is longer, or shorter */
    assert_true(S_stream(state, "out/g", "pub", "0123456789", 4));
    assert_true(S_stream(state, "out/h", "pub", "0123456789abcdef!", 4));
    /* no published file */
    assert_true(S_stream(state, "out/i", "missing", "x", 4));
    char *pub = S_path(state, "pub");
    size_t n;
    char *s = S_slurp(pub, &n);
    assert_int_equal(n, 16); /* never touched */
    assert_memory_equal(s, "0123456789abcdef", 16);
    free(s);
    free(pub);
}

static void test_stream_replaces_what_is_in_the_way(void **state)
{
    /* a folder or a link where the file goes: replaced, the link's target kept */
    S_mkdir_rel(state, "d");
    S_put_rel(state, "d/x", "x");
    assert_true(S_stream(state, "d", NULL, "now a file", 4));
    S_put_rel(state, "target", "keep");
    char *t = S_path(state, "target"), *l = S_path(state, "link");
    assert_int_equal(symlink(t, l), 0);
    assert_true(S_stream(state, "link", NULL, "keep", 4));
    S_assert_file(state, "target", "keep");
    struct stat st;
    assert_int_equal(lstat(l, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    free(t);
    free(l);
}

static void test_stream_errors(void **state)
{
    /* a name no file system takes: an error at close, with errno */
    char name[400];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    char *p = S_path(state, name);
    fs_stream w;
    fs_stream_open(&w, p, NULL);
    fs_stream_write(&w, "abc", 3);
    bool written = true;
    errno = 0;
    assert_int_equal(fs_stream_close(&w, NULL, &written), -1);
    assert_int_not_equal(errno, 0);
    assert_false(written);
    free(p);
}

/* A window serves reads inside what it holds without reading; others read
 * max(n, ahead) bytes from their offset, up to the end of the file; bytes
 * past the end are an EIO. */
static void test_window(void **state)
{
    char *p = S_path(state, "w.bin");
    char data[1000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)(i * 7 + 3);
    assert_int_equal(fs_write_file(p, data, sizeof data), 0);
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    fs_window w = {BUF_INIT, 0};
    const char *a, *b;
    assert_int_equal(fs_window_read(fd, &w, 100, 10, 300, &a), 0);
    assert_memory_equal(a, data + 100, 10);
    assert_int_equal(w.bytes.len, 300);
    assert_int_equal(fs_window_read(fd, &w, 350, 50, 300, &b), 0); /* inside */
    assert_ptr_equal(b, a + 250);
    assert_int_equal(fs_window_read(fd, &w, 390, 20, 300, &b), 0); /* across its end */
    assert_memory_equal(b, data + 390, 20);
    assert_int_equal(fs_window_read(fd, &w, 900, 100, 300, &b), 0); /* the file's end */
    assert_memory_equal(b, data + 900, 100);
    assert_int_equal(w.bytes.len, 100);
    errno = 0;
    assert_int_equal(fs_window_read(fd, &w, 950, 51, 10, &b), -1);
    assert_int_equal(errno, EIO);
    assert_int_equal(fs_window_read(fd, &w, 0, 600, 10, &b), 0); /* larger than ahead */
    assert_memory_equal(b, data, 600);
    fs_window_free(&w);
    close(fd);
    free(p);
}

/* ---- files of a project: opened beneath a folder, no links ----------------- */

typedef int (*opener)(int dir, const char *rel, int flags);
/* openat2 (where the kernel has it) and the O_NOFOLLOW walk behind it */
static const opener openers[] = {fs_open_beneath, fs_open_beneath_walk};

/* A project in root/proj (a.txt, sub/b.txt, sub/deep/c.txt) and a secret
 * next to it, outside; returns proj opened. */
static int S_project(void **state)
{
    S_mkdir_rel(state, "proj");
    S_mkdir_rel(state, "proj/sub");
    S_mkdir_rel(state, "proj/sub/deep");
    S_put_rel(state, "proj/a.txt", "A");
    S_put_rel(state, "proj/sub/b.txt", "B");
    S_put_rel(state, "proj/sub/deep/c.txt", "C");
    S_put_rel(state, "secret.txt", "SECRET");
    char *p = S_path(state, "proj");
    int dir = fs_root_open(p);
    assert_true(dir >= 0);
    free(p);
    return dir;
}

static void S_symlink_rel(void **state, const char *target, const char *rel)
{
    char *p = S_path(state, rel);
    assert_int_equal(symlink(target, p), 0);
    free(p);
}

/* What opener says for rel: 0 when it opens it (and the fd reads want),
 * else its errno. */
static int S_open_says(opener op, int dir, const char *rel, int flags, const char *want)
{
    errno = 0;
    int fd = op(dir, rel, flags);
    if (fd < 0)
        return errno ? errno : -1;
    if (want) {
        buf b = BUF_INIT;
        assert_int_equal(fs_read_fd(fd, 100, &b), FS_OK);
        assert_string_equal(buf_cstr(&b), want);
        buf_free(&b);
    }
    close(fd);
    return 0;
}

static void test_beneath_plain_files(void **state)
{
    int dir = S_project(state);
    for (size_t i = 0; i < N(openers); i++) {
        assert_int_equal(S_open_says(openers[i], dir, "a.txt", O_RDONLY, "A"), 0);
        assert_int_equal(S_open_says(openers[i], dir, "sub/deep/c.txt", O_RDONLY, "C"), 0);
        assert_int_equal(S_open_says(openers[i], dir, "sub/deep", O_RDONLY | O_DIRECTORY, NULL), 0);
        assert_int_equal(S_open_says(openers[i], dir, "sub/none.txt", O_RDONLY, NULL), ENOENT);
        assert_int_equal(S_open_says(openers[i], dir, "a.txt/x", O_RDONLY, NULL), ENOTDIR);
        assert_int_equal(S_open_says(openers[i], dir, "a.txt", O_RDONLY | O_DIRECTORY, NULL),
                         ENOTDIR);
    }
    buf b = BUF_INIT;
    assert_int_equal(fs_read_beneath(dir, "sub/b.txt", 100, &b), FS_OK);
    assert_string_equal(buf_cstr(&b), "B");
    assert_int_equal(fs_read_beneath(dir, "sub/b.txt", 0, &b), FS_ETOOBIG);
    assert_int_equal(fs_read_beneath(dir, "nothing", 100, &b), FS_ENOENT);
    assert_int_equal(fs_read_beneath(dir, "sub", 100, &b), FS_EOTHER);
    assert_int_equal(errno, EISDIR);
    buf_clear(&b);
    char *root = S_path(state, "proj");
    assert_int_equal(fs_read_in(root, "sub/deep/c.txt", 100, &b), FS_OK);
    assert_string_equal(buf_cstr(&b), "C");
    free(root);
    buf_free(&b);
    close(dir);
}

static void test_beneath_refuses_links(void **state)
{
    int dir = S_project(state);
    /* out of the project, and inside it: both refused, last component or not */
    S_symlink_rel(state, "../secret.txt", "proj/out.txt");
    S_symlink_rel(state, "a.txt", "proj/in.txt");
    S_symlink_rel(state, "..", "proj/up");
    S_symlink_rel(state, "sub", "proj/alias");
    S_symlink_rel(state, "/etc", "proj/sub/etc");
    S_symlink_rel(state, "loop", "proj/loop");
    const char *links[] = {"out.txt", "in.txt", "up/secret.txt", "alias/b.txt",
                           "sub/etc/hostname", "loop", "up", "alias"};
    for (size_t i = 0; i < N(openers); i++)
        for (size_t k = 0; k < N(links); k++) {
            int flags = k >= 6 ? O_RDONLY | O_DIRECTORY : O_RDONLY;
            if (S_open_says(openers[i], dir, links[k], flags, NULL) != ELOOP)
                fail_msg("opener %zu: %s was not refused as a link", i, links[k]);
        }
    buf b = BUF_INIT;
    assert_int_equal(fs_read_beneath(dir, "out.txt", 100, &b), FS_ELINK);
    assert_int_equal(fs_read_beneath(dir, "up/secret.txt", 100, &b), FS_ELINK);
    assert_int_equal(b.len, 0);
    buf_free(&b);
    close(dir);
}

static void test_beneath_refuses_dotdot_and_absolute(void **state)
{
    int dir = S_project(state);
    const char *bad[] = {"../secret.txt", "sub/../a.txt", "sub/../../secret.txt", "/etc/hostname",
                         "", ".", "./a.txt", "sub//b.txt", "sub/", "sub/.."};
    for (size_t i = 0; i < N(openers); i++)
        for (size_t k = 0; k < N(bad); k++)
            if (S_open_says(openers[i], dir, bad[k], O_RDONLY, NULL) != EXDEV)
                fail_msg("opener %zu: \"%s\" was not refused", i, bad[k]);
    buf b = BUF_INIT;
    assert_int_equal(fs_read_beneath(dir, "../secret.txt", 100, &b), FS_ELINK);
    assert_int_equal(fs_read_beneath(dir, "/etc/hostname", 100, &b), FS_ELINK);
    assert_int_equal(b.len, 0);
    buf_free(&b);
    close(dir);
}

static void test_beneath_refuses_hard_links(void **state)
{
    int dir = S_project(state);
    char *secret = S_path(state, "secret.txt");
    char *twin = S_path(state, "proj/sub/twin.txt");
    assert_int_equal(link(secret, twin), 0);
    buf b = BUF_INIT;
    assert_int_equal(fs_read_beneath(dir, "sub/twin.txt", 100, &b), FS_EHARDLINK);
    assert_int_equal(b.len, 0);
    assert_non_null(strstr(fs_strerror(FS_EHARDLINK, 0), "hard link"));
    /* one name left: an ordinary file again */
    assert_int_equal(unlink(secret), 0);
    assert_int_equal(fs_read_beneath(dir, "sub/twin.txt", 100, &b), FS_OK);
    assert_string_equal(buf_cstr(&b), "SECRET");
    buf_free(&b);
    free(secret);
    free(twin);
    close(dir);
}

static void test_beneath_refuses_fifo_without_blocking(void **state)
{
    int dir = S_project(state);
    char *fifo = S_path(state, "proj/pipe.txt");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    buf b = BUF_INIT;
    /* no writer: a blocking open would hang here */
    assert_int_equal(fs_read_beneath(dir, "pipe.txt", 100, &b), FS_ENOTREG);
    buf_free(&b);
    free(fifo);
    close(dir);
}

static void test_beneath_swap_for_a_link(void **state)
{
    /* the file is checked and read through one fd: swapping it for a link
     * after the open reads the file that was opened, and the next open of
     * the name is refused */
    int dir = S_project(state);
    char *a = S_path(state, "proj/a.txt");
    char *tmp = S_path(state, "proj/a.tmp");
    for (size_t i = 0; i < N(openers); i++) {
        S_put(a, "A", 1);
        int fd = openers[i](dir, "a.txt", O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(symlink("../secret.txt", tmp), 0);
        assert_int_equal(rename(tmp, a), 0); /* a.txt is now a link out */
        buf b = BUF_INIT;
        assert_int_equal(fs_read_fd(fd, 100, &b), FS_OK);
        assert_string_equal(buf_cstr(&b), "A");
        close(fd);
        errno = 0;
        assert_int_equal(openers[i](dir, "a.txt", O_RDONLY), -1);
        assert_int_equal(errno, ELOOP);
        buf_clear(&b);
        assert_int_equal(fs_read_beneath(dir, "a.txt", 100, &b), FS_ELINK);
        assert_int_equal(b.len, 0);
        buf_free(&b);
        assert_int_equal(unlink(a), 0);
    }
    /* a folder on the way swapped for a link: refused too */
    char *sub = S_path(state, "proj/sub");
    char *moved = S_path(state, "moved");
    assert_int_equal(rename(sub, moved), 0);
    assert_int_equal(symlink("../moved", sub), 0);
    for (size_t i = 0; i < N(openers); i++)
        assert_int_equal(S_open_says(openers[i], dir, "sub/b.txt", O_RDONLY, NULL), ELOOP);
    free(sub);
    free(moved);
    free(a);
    free(tmp);
    close(dir);
}

/* fs_each_entry: every entry of a folder but "." and "..", with its type,
 * through more than one getdents64 buffer (names of 200 bytes, 400 of them:
 * 80 KB of entries); a nonzero return stops it. */
typedef struct {
    int files, dirs, links, other, seen_dot, stop_at, calls;
} entry_counts;

static int S_count_entry(const char *name, unsigned char type, void *ctx)
{
    entry_counts *c = ctx;
    c->calls++;
    if (!strcmp(name, ".") || !strcmp(name, ".."))
        c->seen_dot++;
    else if (type == DT_REG)
        c->files++;
    else if (type == DT_DIR)
        c->dirs++;
    else if (type == DT_LNK)
        c->links++;
    else
        c->other++;
    return c->stop_at && c->calls == c->stop_at;
}

static void test_each_entry(void **state)
{
    char name[256];
    for (int i = 0; i < 400; i++) {
        snprintf(name, sizeof name, "f%03d-%0195d", i, 0);
        S_put_rel(state, name, "x");
    }
    char *sub = S_path(state, "sub");
    assert_int_equal(mkdir(sub, 0777), 0);
    char *lnk = S_path(state, "lnk");
    assert_int_equal(symlink("sub", lnk), 0);
    int fd = open(*state, O_RDONLY | O_DIRECTORY);
    assert_true(fd >= 0);
    entry_counts c = {0};
    assert_int_equal(fs_each_entry(fd, S_count_entry, &c), 0);
    assert_int_equal(c.files, 400);
    assert_int_equal(c.dirs, 1);
    assert_int_equal(c.links, 1);
    assert_int_equal(c.seen_dot, 0);
    assert_int_equal(c.other, 0);
    /* stopped by its callback */
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    entry_counts once = {.stop_at = 3};
    assert_int_equal(fs_each_entry(fd, S_count_entry, &once), 0);
    assert_int_equal(once.calls, 3);
    close(fd);
    /* an empty folder: no calls; a file: an error */
    int sfd = open(sub, O_RDONLY | O_DIRECTORY);
    entry_counts none = {0};
    assert_int_equal(fs_each_entry(sfd, S_count_entry, &none), 0);
    assert_int_equal(none.calls, 0);
    close(sfd);
    int ffd = open(lnk, O_RDONLY | O_NOFOLLOW | O_PATH);
    assert_int_equal(fs_each_entry(ffd, S_count_entry, &none), -1);
    close(ffd);
    free(lnk);
    free(sub);
}

/* fs_same_files: the bytes of two files, past the 64 KiB chunk too; not for
 * a link, a missing file or sizes that differ. */
static void test_same_files(void **state)
{
    size_t n = 150000;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 23);
    char *a = S_path(state, "a"), *b = S_path(state, "b"), *l = S_path(state, "l");
    char *e1 = S_path(state, "e1"), *e2 = S_path(state, "e2"), *none = S_path(state, "none");
    S_put(a, big, n);
    S_put(b, big, n);
    assert_true(fs_same_files(a, b));
    big[70000] ^= 1; /* in the second chunk */
    S_put(b, big, n);
    assert_false(fs_same_files(a, b));
    big[70000] ^= 1;
    S_put(b, big, n - 1);
    assert_false(fs_same_files(a, b));
    assert_false(fs_same_files(b, a));
    S_put(a, "small", 5);
    S_put(b, "small", 5);
    assert_true(fs_same_files(a, b));
    S_put(b, "smalL", 5);
    assert_false(fs_same_files(a, b));
    S_put(e1, "", 0);
    S_put(e2, "", 0);
    assert_true(fs_same_files(e1, e2));
    assert_int_equal(symlink(a, l), 0);
    assert_false(fs_same_files(a, l));
    assert_false(fs_same_files(l, a));
    assert_false(fs_same_files(a, none));
    assert_false(fs_same_files(none, a));
    free(big);
    free(a);
    free(b);
    free(l);
    free(e1);
    free(e2);
    free(none);
}

/* A FIFO where kvsite compares or reads a file of its own (an output, the
 * state folder): not waited on (no writer comes; a blocking open would hang
 * here), not the same as any bytes, not a regular file. */
static void test_fifo_not_waited_on(void **state)
{
    char *fifo = S_path(state, "pipe"), *f = S_path(state, "f");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    S_put(f, "", 0);
    assert_false(fs_same_at(AT_FDCWD, fifo, "", 0, NULL));
    assert_false(fs_same_files(fifo, f));
    assert_false(fs_same_files(f, fifo));
    buf b = BUF_INIT;
    assert_int_equal(fs_read_regular(fifo, 100, &b), FS_ENOTREG);
    char *to = S_path(state, "copy");
    assert_int_equal(fs_sync_copy(fifo, to, NULL), -1);
    /* a stream compared against it: not a file, so written anew */
    char *to2 = S_path(state, "copy2");
    fs_stream w;
    fs_stream_open(&w, to2, fifo);
    assert_int_equal(w.cmp, -1);
    assert_int_equal(fs_stream_write(&w, "x", 1), 0);
    bool written = false;
    assert_int_equal(fs_stream_close(&w, NULL, &written), 0);
    assert_true(written);
    free(to2);
    /* a regular file reads; a link to one does not */
    S_put(f, "bytes", 5);
    assert_int_equal(fs_read_regular(f, 100, &b), FS_OK);
    assert_string_equal(buf_cstr(&b), "bytes");
    char *l = S_path(state, "l");
    assert_int_equal(symlink(f, l), 0);
    buf_clear(&b);
    assert_int_equal(fs_read_regular(l, 100, &b), FS_EOTHER);
    assert_int_equal(fs_read_regular(to, 100, &b), FS_ENOENT);
    buf_free(&b);
    free(fifo);
    free(f);
    free(to);
    free(l);
}

#define T(f) cmocka_unit_test_setup_teardown(f, S_setup, S_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join),
        T(test_read_appends_and_caps),
        T(test_read_empty_file),
        T(test_read_large_binary),
        T(test_read_sizes_at_buffer_edges),
        T(test_read_errors),
        cmocka_unit_test(test_read_device_is_bounded),
        T(test_mkdir_p),
        T(test_mkdir_p_through_file),
        T(test_mkdir_p_existing_file_fails),
        cmocka_unit_test(test_mkdir_p_empty_path),
        T(test_write_file),
        T(test_write_replaces_what_stands_there),
        T(test_outputs_not_through_hard_links),
        T(test_copy_file),
        T(test_copy_errors),
        T(test_remove_tree_keeps_symlink_targets),
        T(test_remove_tree_on_symlink_itself),
        T(test_remove_tree_simple_cases),
        T(test_is_dir_exists),
        T(test_same),
        T(test_move_into_nested),
        T(test_move_into_replaces_what_stands_in_the_way),
        T(test_move_into_does_not_follow_links),
        T(test_move_into_errors),
        T(test_remove_in),
        T(test_remove_in_does_not_follow_links),
        T(test_remove_in_stays_under_top),
        T(test_stream_in_place),
        T(test_stream_against_another_file),
        T(test_stream_replaces_what_is_in_the_way),
        T(test_stream_errors),
        T(test_window),
        T(test_beneath_plain_files),
        T(test_beneath_refuses_links),
        T(test_beneath_refuses_dotdot_and_absolute),
        T(test_beneath_refuses_hard_links),
        T(test_beneath_refuses_fifo_without_blocking),
        T(test_beneath_swap_for_a_link),
        T(test_each_entry),
        T(test_same_files),
        T(test_fifo_not_waited_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
