#include "fuse.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>

/* The thread's fuse. Static TLS (kvsite is one executable): the handler
 * may read it. */
static _Thread_local timer_t S_timer;
static _Thread_local bool S_have_timer; /* S_timer was made in this process */
static _Thread_local bool S_armed;
static _Thread_local long long S_start, S_ns; /* the thread's CPU clock at fuse_arm; its length */
static _Thread_local volatile sig_atomic_t S_blown;
static _Thread_local fuse_fn volatile S_fn; /* NULL: the handler calls nothing */
static _Thread_local void *volatile S_ctx;

/* The thread's CPU time in nanoseconds, -1 when it cannot be read. */
static long long S_thread_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return -1;
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static pthread_once_t S_once = PTHREAD_ONCE_INIT;
static bool S_ready; /* the handler is installed */

static void S_on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    /* only this thread's timer: a stray SIGVTALRM (setitimer, kill) does nothing */
    if (si->si_code != SI_TIMER || si->si_value.sival_ptr != (void *)&S_timer)
        return;
    int saved = errno;
    fuse_fn fn = S_fn;
    S_fn = NULL;
    S_blown = 1;
    if (fn)
        fn(S_ctx);
    errno = saved;
}

/* fork copies the thread's variables but not its timer */
static void S_after_fork(void)
{
    S_have_timer = false;
    S_armed = false;
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
    }
    S_start = S_thread_ns();
    if (S_start < 0)
        return false;
    S_ns = ns;
    S_fn = NULL; /* a late signal of the last fuse calls nothing */
    S_blown = 0;
    S_ctx = ctx;
    S_fn = fn;
    struct itimerspec its = {{0, 0}, {(time_t)(ns / 1000000000), (long)(ns % 1000000000)}};
    if (timer_settime(S_timer, 0, &its, NULL) != 0) {
        S_fn = NULL;
        return false;
    }
    S_armed = true;
    return true;
}

long long fuse_disarm(void)
{
    if (!S_armed)
        return -1;
    S_armed = false;
    S_fn = NULL; /* first: from here a signal only marks the fuse blown */
    struct itimerspec zero = {{0, 0}, {0, 0}}, left;
    if (timer_settime(S_timer, 0, &zero, &left) != 0)
        return -1;
    long long ns = (long long)left.it_value.tv_sec * 1000000000 + left.it_value.tv_nsec;
    /* time left (read from the thread's clock): what passed is the rest;
     * none left, and the clock tells, however late the signal */
    if (!S_blown && ns > 0)
        return S_ns - ns;
    long long now = S_thread_ns();
    return now < 0 ? -1 : now - S_start;
}
