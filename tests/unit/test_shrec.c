/* Unit tests for gen/shrec.c: the records array shared with the workers. A
 * record the parent stores after a fork is what the child reads (no copy);
 * a sealed child cannot store one (it faults), an unsealed one can; growing and moving to the
 * heap keep every record. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "shrec.h"

static void test_new_is_zeroed(void **state)
{
    (void)state;
    const size_t n = 1000;
    page_record *a = shrec_new(n);
    const unsigned char *bytes = (const unsigned char *)a;
    for (size_t i = 0; i < n * sizeof *a; i++)
        assert_int_equal(bytes[i], 0);
    shrec_free(a, n);
    shrec_free(NULL, 0); /* nothing */
    a = shrec_new(0); /* one page, usable as none */
    shrec_free(a, 0);
}

/* The child waits for the parent's store, then reports what it reads. */
static void test_parent_stores_child_sees(void **state)
{
    (void)state;
    page_record *a = shrec_new(64);
    a[3].job = 1;
    int sp[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(sp[0]);
        if (shrec_seal(a, 64) != 0)
            _exit(2);
        char c;
        if (read(sp[1], &c, 1) != 1)
            _exit(3);
        /* stored by the parent after the fork: seen here */
        _exit(a[3].job == 7 && a[40].done == 1 ? 0 : 4);
    }
    close(sp[1]);
    a[3].job = 7; /* after the fork, as pool.c stores a worker's record */
    a[40].done = 1;
    assert_int_equal(write(sp[0], "x", 1), 1);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    close(sp[0]);
    shrec_free(a, 64);
}

static void test_sealed_child_cannot_store(void **state)
{
    (void)state;
    page_record *a = shrec_new(16);
    a[15].job = 5;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (shrec_seal(a, 16) != 0)
            _exit(2);
        signal(SIGSEGV, SIG_DFL); /* not cmocka's (or a sanitizer's) handler */
        volatile page_record *v = a;
        v[15].job = 6; /* faults: the child ends by SIGSEGV */
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGSEGV);
    assert_int_equal(a[15].job, 5); /* nothing reached the parent */
    a[15].job = 8; /* the parent's own mapping stays writable */
    assert_int_equal(a[15].job, 8);
    shrec_free(a, 16);
}

/* A worker unseals the array as it ends (for valgrind's leak check, which
 * reads only writable memory for pointers): writable again in the child. */
static void test_unsealed_child_can_store(void **state)
{
    (void)state;
    page_record *a = shrec_new(16);
    a[2].job = 5;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (shrec_seal(a, 16) != 0 || shrec_unseal(a, 16) != 0)
            _exit(2);
        signal(SIGSEGV, SIG_DFL);
        volatile page_record *v = a;
        v[2].job = 6; /* no fault now */
        _exit(v[2].job == 6 ? 0 : 3);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    shrec_free(a, 16);
}

static void test_grow_and_to_heap_keep_records(void **state)
{
    (void)state;
    size_t n = 300;
    page_record *a = shrec_new(n);
    for (size_t j = 0; j < n; j++)
        a[j].job = (uint32_t)j + 1;
    a = shrec_grow(a, n, 5000);
    for (size_t j = 0; j < n; j++)
        assert_int_equal(a[j].job, j + 1);
    for (size_t j = n; j < n + 5000; j++)
        assert_int_equal(a[j].job, 0); /* the new ones are zeroed */
    n += 5000;
    a[n - 1].job = 99;
    page_record *h = shrec_to_heap(a, n);
    assert_int_equal(h[0].job, 1);
    assert_int_equal(h[299].job, 300);
    assert_int_equal(h[n - 1].job, 99);
    free(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_is_zeroed),
        cmocka_unit_test(test_parent_stores_child_sees),
        cmocka_unit_test(test_sealed_child_cannot_store),
        cmocka_unit_test(test_unsealed_child_can_store),
        cmocka_unit_test(test_grow_and_to_heap_keep_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
