#include "fuse.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

/* The thread's timer and fuse. Static TLS (kvsite is one executable): the
 * handler may read it. The handler runs in this thread between any two of
 * its instructions, so what it shares with fuse_arm and fuse_disarm is
 * volatile and set in an order that is consistent at every step. */
static _Thread_local timer_t S_timer;
static _Thread_local bool S_have_timer;               /* S_timer was made in this process */
static _Thread_local volatile sig_atomic_t S_running; /* S_timer is set and has not expired */
static _Thread_local volatile long long S_set_for;    /* the CPU time it was last set for */
static _Thread_local volatile sig_atomic_t S_armed;   /* a fuse is armed */
static _Thread_local volatile long long S_cpu0, S_wall0; /* the thread's CPU clock and
                                                         * CLOCK_MONOTONIC at fuse_arm */
static _Thread_local volatile long long S_ns;           /* its length */
static _Thread_local volatile sig_atomic_t S_blown;
static _Thread_local fuse_fn volatile S_fn; /* NULL: the handler calls nothing */
static _Thread_local void *volatile S_ctx;
/* The last reading of the thread's CPU clock at fuse_arm, and CLOCK_MONOTONIC
 * then (0: none). fuse_arm takes it for the CPU time at the arming while the
 * wall clock says little can have passed (S_REUSE_PART of the fuse): a
 * reading from before is a lower bound (the clock only grows), so the time
 * counted from it is at least the time that passed, and a fuse blows early
 * rather than late. */
static _Thread_local long long S_cpu_read, S_wall_read;
#define S_REUSE_PART 8

/* A clock in nanoseconds, -1 when it cannot be read. Async-signal-safe.
 * CLOCK_MONOTONIC is read in the vDSO, the thread's CPU clock by a system
 * call. */
static long long S_clock_ns(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return -1;
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sets the timer to expire once the thread has used ns more of CPU time.
 * 0, or -1. Async-signal-safe; outside the handler, called with the signal
 * blocked (S_set_blocked), so that no expiry is handled between the call
 * and S_running telling it. */
static int S_set(long long ns)
{
    struct itimerspec its = {{0, 0}, {(time_t)(ns / 1000000000), (long)(ns % 1000000000)}};
    S_running = 0;
    if (timer_settime(S_timer, 0, &its, NULL) != 0)
        return -1;
    S_set_for = ns;
    S_running = 1;
    return 0;
}

static int S_set_blocked(long long ns)
{
    sigset_t vt, old;
    sigemptyset(&vt);
    sigaddset(&vt, SIGVTALRM);
    if (pthread_sigmask(SIG_BLOCK, &vt, &old) != 0)
        return -1;
    int rc = S_set(ns);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static void S_blow(void)
{
    fuse_fn fn = S_fn;
    S_fn = NULL;
    S_blown = 1;
    if (fn)
        fn(S_ctx);
}

static pthread_once_t S_once = PTHREAD_ONCE_INIT;
static bool S_ready; /* the handler is installed */

/* The timer expired: the armed fuse blows once the thread has used ns of
 * CPU time since fuse_arm; short of it, the timer is set again for the
 * rest. */
static void S_on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    /* only this thread's timer: a stray SIGVTALRM (setitimer, kill) does nothing */
    if (si->si_code != SI_TIMER || si->si_value.sival_ptr != (void *)&S_timer)
        return;
    int saved = errno;
    S_running = 0;
    if (S_armed && !S_blown) {
        long long now = S_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        long long passed = now < 0 ? S_ns : now - S_cpu0;
        if (passed >= S_ns || S_set(S_ns - passed) != 0)
            S_blow(); /* a fuse that can no longer be watched blows: the safe side */
    }
    errno = saved;
}

/* fork copies the thread's variables but not its timer */
static void S_after_fork(void)
{
    S_have_timer = false;
    S_wall_read = 0; /* a child's CPU clock starts again */
    S_running = 0;
    S_armed = 0;
    S_fn = NULL;
}

static void S_init(void)
{
    struct sigaction sa = {0};
    sa.sa_sigaction = S_on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    S_ready = sigaction(SIGVTALRM, &sa, NULL) == 0 && pthread_atfork(NULL, NULL, S_after_fork) == 0;
}

bool fuse_arm(long long ns, fuse_fn fn, void *ctx)
{
    if (ns <= 0)
        return false;
    pthread_once(&S_once, S_init);
    if (!S_ready)
        return false;
    if (!S_have_timer) {
        struct sigevent sev = {0};
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = SIGVTALRM;
        sev.sigev_value.sival_ptr = (void *)&S_timer;
        sev._sigev_un._tid = gettid(); /* glibc 2.36 has no sigev_notify_thread_id */
        /* a mask inherited from whoever started kvsite must not hold the signal */
        sigset_t vt;
        sigemptyset(&vt);
        sigaddset(&vt, SIGVTALRM);
        if (pthread_sigmask(SIG_UNBLOCK, &vt, NULL) != 0 ||
            timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &S_timer) != 0)
            return false;
        S_have_timer = true;
        S_running = 0;
    }
    long long wall = S_clock_ns(CLOCK_MONOTONIC), cpu = S_cpu_read;
    if (wall < 0)
        return false;
    if (!S_wall_read || wall - S_wall_read >= ns / S_REUSE_PART) {
        cpu = S_clock_ns(CLOCK_THREAD_CPUTIME_ID);
        if (cpu < 0)
            return false;
        S_cpu_read = cpu;
        S_wall_read = wall;
    }
    S_armed = 0; /* the handler leaves the fuse alone while it is set up */
    S_fn = NULL;
    S_cpu0 = cpu;
    S_wall0 = wall;
    S_ns = ns;
    S_blown = 0;
    S_ctx = ctx;
    S_fn = fn;
    S_armed = 1;
    /* a running timer set for no more than ns expires in time: it stays */
    if ((!S_running || S_set_for > ns) && S_set_blocked(ns) != 0) {
        S_armed = 0;
        S_fn = NULL;
        return false;
    }
    return true;
}

long long fuse_disarm(void)
{
    if (!S_armed)
        return -1;
    S_armed = 0; /* first: from here the handler leaves the fuse alone */
    S_fn = NULL;
    /* the timer runs on: it expires with no fuse armed, or under the next */
    long long wall = S_clock_ns(CLOCK_MONOTONIC);
    if (wall >= 0 && wall - S_wall0 < S_ns / 2)
        return wall - S_wall0; /* at least the CPU time, and short of the fuse */
    long long cpu = S_clock_ns(CLOCK_THREAD_CPUTIME_ID);
    return cpu < 0 ? -1 : cpu - S_cpu0;
}
