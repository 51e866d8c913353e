/* Unit tests for gen/fuse.c: a limit on the thread's CPU time. A fuse that
 * runs out calls its function (from the signal handler) and reads as run
 * out; one disarmed in time calls nothing and tells the time used; a fuse
 * armed under a timer an earlier fuse left running blows neither before
 * its own time nor long after; a SIGVTALRM blocked when the process started
 * does not keep it from blowing; a forked child gets a fuse of its own; a
 * fuse counted from an earlier reading of the CPU clock blows in time, in a
 * forked child too (whose clock starts again). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fuse.h"

static volatile sig_atomic_t S_calls;

static void S_blown(void *ctx)
{
    (void)ctx;
    S_calls++;
}

static long long S_thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins until fn was called or limit_ns of CPU time passed. */
static void S_spin(long long limit_ns)
{
    long long t0 = S_thread_ns();
    volatile unsigned long x = 0;
    while (!S_calls && S_thread_ns() - t0 < limit_ns)
        for (int i = 0; i < 10000; i++)
            x += (unsigned long)i;
}

static void test_blows(void **state)
{
    (void)state;
    S_calls = 0;
    assert_true(fuse_arm(2000000, S_blown, NULL)); /* 2 ms */
    S_spin(2000000000LL);
    assert_int_equal(S_calls, 1);
    long long used = fuse_disarm();
    assert_true(used >= 2000000);
    /* disarmed: nothing more is called */
    S_spin(5000000);
    assert_int_equal(S_calls, 1);
    assert_int_equal(fuse_disarm(), -1); /* not armed */
}

static void test_disarmed_in_time(void **state)
{
    (void)state;
    S_calls = 0;
    assert_true(fuse_arm(1000000000LL, S_blown, NULL)); /* 1 s */
    long long t0 = S_thread_ns();
    S_spin(3000000);
    long long spent = S_thread_ns() - t0;
    long long used = fuse_disarm();
    assert_int_equal(S_calls, 0);
    assert_true(used >= spent / 2 && used < 1000000000LL);
    /* re-armed over an armed one: the last one counts, though the timer
     * was set for a second (it is set again, for less) */
    assert_true(fuse_arm(1000000000LL, S_blown, NULL));
    assert_true(fuse_arm(1000000, S_blown, NULL));
    t0 = S_thread_ns();
    S_spin(2000000000LL);
    assert_int_equal(S_calls, 1);
    assert_true(S_thread_ns() - t0 < 500000000LL);
    fuse_disarm();
    assert_false(fuse_arm(0, S_blown, NULL));
}

static long long S_wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Fuses armed and disarmed page after page leave the timer running: a fuse
 * armed when it is about to expire (set for an earlier one) still gets its
 * whole time, and blows once that has passed. */
static void test_timer_left_running(void **state)
{
    (void)state;
    S_calls = 0;
    for (int i = 0; i < 1000; i++) {
        assert_true(fuse_arm(20000000, S_blown, NULL)); /* 20 ms */
        assert_true(fuse_disarm() >= 0);
    }
    S_spin(15000000); /* the timer, if left from those, has 5 ms or less to go */
    assert_int_equal(S_calls, 0);
    long long w0 = S_wall_ns();
    assert_true(fuse_arm(20000000, S_blown, NULL));
    S_spin(2000000000LL);
    long long took = S_wall_ns() - w0;
    assert_int_equal(S_calls, 1);
    assert_true(took >= 20000000); /* not at the old timer's expiry */
    assert_true(took < 1000000000LL);
    long long used = fuse_disarm();
    assert_true(used >= 20000000);
    /* between fuses the timer expires with nothing to call */
    S_spin(30000000);
    assert_int_equal(S_calls, 1);
}

/* A child whose own 2 ms fuse must blow, and tell its time, before it exits 0. */
static pid_t S_child_blows(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        S_calls = 0;
        if (!fuse_arm(2000000, S_blown, NULL))
            _exit(2);
        S_spin(2000000000LL);
        _exit(S_calls == 1 && fuse_disarm() >= 2000000 ? 0 : 1);
    }
    return pid;
}

static void S_wait_ok(pid_t pid)
{
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

/* A process started with SIGVTALRM blocked (a mask inherited through exec;
 * here a child forked with it blocked) still gets its fuse's signal. */
static void test_blocked_signal(void **state)
{
    (void)state;
    sigset_t vt, old;
    sigemptyset(&vt);
    sigaddset(&vt, SIGVTALRM);
    pthread_sigmask(SIG_BLOCK, &vt, &old);
    pid_t pid = S_child_blows();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    S_wait_ok(pid);
}

static void test_forked_child(void **state)
{
    (void)state;
    assert_true(fuse_arm(1000000000LL, S_blown, NULL));
    /* the parent's timer is not the child's: a new one is made */
    S_wait_ok(S_child_blows());
    fuse_disarm();
}

/* Page after page, fuse_arm counts from its last reading of the CPU clock
 * (no system call): the fuse still blows by its time, not after. */
static void test_counts_from_an_earlier_reading(void **state)
{
    (void)state;
    S_calls = 0;
    assert_true(fuse_arm(40000000, S_blown, NULL)); /* 40 ms: reads the clock */
    assert_true(fuse_disarm() >= 0);
    long long t0 = S_thread_ns();
    assert_true(fuse_arm(40000000, S_blown, NULL)); /* at once: its reading */
    S_spin(2000000000LL);
    long long took = S_thread_ns() - t0;
    assert_int_equal(S_calls, 1);
    assert_true(took >= 35000000 && took < 500000000LL);
    assert_true(fuse_disarm() >= 40000000);
}

/* A child's CPU clock starts again at its fork: a reading the parent took
 * just before is no bound of it, and the child's fuse must not count from
 * it (it would blow after the parent's time, not its own). */
static void test_child_does_not_count_from_the_parents_reading(void **state)
{
    (void)state;
    S_calls = 0;
    S_spin(200000000); /* the parent's clock: past 200 ms */
    assert_true(fuse_arm(40000000, S_blown, NULL));
    assert_true(fuse_disarm() >= 0);
    pid_t pid = fork();
    if (pid == 0) {
        long long t0 = S_thread_ns();
        if (!fuse_arm(40000000, S_blown, NULL))
            _exit(2);
        S_spin(2000000000LL);
        _exit(S_calls == 1 && S_thread_ns() - t0 < 150000000 ? 0 : 1);
    }
    S_wait_ok(pid);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blows),
        cmocka_unit_test(test_disarmed_in_time),
        cmocka_unit_test(test_timer_left_running),
        cmocka_unit_test(test_blocked_signal),
        cmocka_unit_test(test_forked_child),
        cmocka_unit_test(test_counts_from_an_earlier_reading),
        cmocka_unit_test(test_child_does_not_count_from_the_parents_reading),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
