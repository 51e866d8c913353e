/* Unit tests for gen/figstore.c: appends come back by offset, whether still
 * pending or written, read directly or through a window; reads past the end
 * fail; the file has no name; a forked process reads the flushed bytes, not
 * the pending ones, and gets no copy of the buffer. */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "figstore.h"
#include "fsutil.h"

static size_t S_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void test_append_and_read(void **state)
{
    (void)state;
    char dir[] = "/tmp/kvsite-test-figstore-XXXXXX";
    assert_non_null(mkdtemp(dir));
    figstore st;
    assert_int_equal(figstore_open(&st, dir), 0);
    assert_int_equal(S_entries(dir), 0); /* nothing with a name */
    buf out = BUF_INIT;
    assert_int_equal(figstore_append(&st, "hello", 5), 0);
    assert_int_equal(figstore_append(&st, "", 0), 5);
    assert_int_equal(figstore_append(&st, " world", 6), 5);
    assert_int_equal(figstore_read(&st, 0, 5, &out), 0);
    assert_string_equal(out.ptr, "hello");
    assert_int_equal(figstore_flush(&st), 0);
    /* more than a flush's worth: written on the way */
    enum { BIG = (1 << 20) + 12345 };
    char *big = malloc(BIG);
    for (size_t i = 0; i < BIG; i++)
        big[i] = (char)(i * 7);
    uint64_t at = figstore_append(&st, big, BIG);
    assert_int_equal(at, 11);
    assert_int_equal(figstore_append(&st, "tail", 4), 11 + BIG);
    /* a read across what is written and what is pending */
    assert_int_equal(figstore_read(&st, 3, 8, &out), 0);
    assert_string_equal(out.ptr, "lo world");
    assert_int_equal(figstore_read(&st, at, BIG, &out), 0);
    assert_memory_equal(out.ptr, big, BIG);
    assert_int_equal(figstore_read(&st, at + BIG - 2, 6, &out), 0);
    assert_memory_equal(out.ptr, big + BIG - 2, 2);
    assert_memory_equal(out.ptr + 2, "tail", 4);
    assert_int_equal(figstore_read(&st, 11 + BIG, 4, &out), 0);
    assert_string_equal(out.ptr, "tail");
    /* past the end */
    assert_int_equal(figstore_read(&st, 11 + BIG, 5, &out), -1);
    assert_int_equal(figstore_read(&st, UINT64_MAX - 1, 4, &out), -1);
    free(big);
    buf_free(&out);
    figstore_close(&st);
    assert_int_equal(S_entries(dir), 0);
    fs_remove_tree(dir);
}

/* Reads through a window: records read one after the other come from one
 * read; one outside the window, larger than it, at the end or still pending
 * is read again; a read past the end fails and leaves nothing. */
static void test_window(void **state)
{
    (void)state;
    char dir[] = "/tmp/kvsite-test-figstore-XXXXXX";
    assert_non_null(mkdtemp(dir));
    figstore st;
    assert_int_equal(figstore_open(&st, dir), 0);
    enum { N = 3 * FIGSTORE_WINDOW + 100 };
    char *data = malloc(N);
    for (size_t i = 0; i < N; i++)
        data[i] = (char)(i * 13 + 1);
    assert_int_equal(figstore_append(&st, data, N - 100), 0);
    assert_int_equal(figstore_flush(&st), 0);
    assert_int_equal(figstore_append(&st, data + N - 100, 100), N - 100); /* pending */
    fs_window w = {BUF_INIT, 0};
    const char *p, *q;
    assert_int_equal(figstore_view(&st, &w, 10, 50, &p), 0);
    assert_memory_equal(p, data + 10, 50);
    /* the next records: in the same window, nothing read */
    assert_int_equal(figstore_view(&st, &w, 60, 1000, &q), 0);
    assert_ptr_equal(q, p + 50);
    assert_int_equal(figstore_view(&st, &w, 10 + FIGSTORE_WINDOW - 8, 8, &q), 0);
    assert_ptr_equal(q, p + FIGSTORE_WINDOW - 8);
    /* across the window's end, and back before its start */
    assert_int_equal(figstore_view(&st, &w, 10 + FIGSTORE_WINDOW - 8, 9, &q), 0);
    assert_memory_equal(q, data + 10 + FIGSTORE_WINDOW - 8, 9);
    assert_int_equal(figstore_view(&st, &w, 5, 10, &q), 0);
    assert_memory_equal(q, data + 5, 10);
    /* larger than a window */
    assert_int_equal(figstore_view(&st, &w, 1, 2 * FIGSTORE_WINDOW, &q), 0);
    assert_memory_equal(q, data + 1, 2 * FIGSTORE_WINDOW);
    /* the last bytes, some of them pending */
    assert_int_equal(figstore_view(&st, &w, N - 150, 150, &q), 0);
    assert_memory_equal(q, data + N - 150, 150);
    assert_int_equal(figstore_view(&st, &w, N - 1, 1, &q), 0);
    assert_memory_equal(q, data + N - 1, 1);
    /* past the end */
    assert_int_equal(figstore_view(&st, &w, N - 1, 2, &q), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(figstore_view(&st, &w, UINT64_MAX - 1, 4, &q), -1);
    fs_window_free(&w);
    free(data);
    figstore_close(&st);
    fs_remove_tree(dir);
}

/* What a forked child sees: its exit status says which check failed. */
static int S_child(figstore *st, bool flushed)
{
    buf out = BUF_INIT;
    int rc = figstore_read(st, 0, 3, &out);
    if (flushed)
        return rc == 0 && memcmp(out.ptr, "abc", 3) == 0 ? 0 : 1;
    if (rc != -1 || errno != EIO)
        return 2; /* pending bytes read in another process */
    if (st->pending[0] != '\0')
        return 3; /* the buffer was inherited */
    return 0;
}

static int S_fork_and_wait(figstore *st, bool flushed)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(S_child(st, flushed));
    int status = -1;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* The parent appends while its workers run: the buffer is not shared with
 * them (each first write would copy a page), so a worker reads only what
 * was flushed before it was forked. */
static void test_pending_stays_in_its_process(void **state)
{
    (void)state;
    char dir[] = "/tmp/kvsite-test-figstore-XXXXXX";
    assert_non_null(mkdtemp(dir));
    figstore st;
    assert_int_equal(figstore_open(&st, dir), 0);
    assert_int_equal(figstore_append(&st, "abc", 3), 0);
    assert_int_equal(S_fork_and_wait(&st, false), 0);
    buf out = BUF_INIT;
    assert_int_equal(figstore_read(&st, 0, 3, &out), 0); /* here they are */
    assert_memory_equal(out.ptr, "abc", 3);
    assert_int_equal(figstore_flush(&st), 0);
    assert_int_equal(S_fork_and_wait(&st, true), 0);
    buf_free(&out);
    figstore_close(&st);
    fs_remove_tree(dir);
}

static void test_open_fails_without_a_folder(void **state)
{
    (void)state;
    figstore st;
    errno = 0;
    assert_int_equal(figstore_open(&st, "/nonexistent/kvsite/folder"), -1);
    assert_int_not_equal(errno, 0);
    figstore_close(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_and_read),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_pending_stays_in_its_process),
        cmocka_unit_test(test_open_fails_without_a_folder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
