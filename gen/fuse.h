/* fuse: a limit on the CPU time of the calling thread, for code that is cheaper
 * to run unwatched and run again, watched, in the rare case it ran long.
 *
 * fuse_arm starts counting the thread's CPU time (user and system); once
 * `ns` of it have passed, fn(ctx) is called from a signal handler in that
 * thread, wherever the thread is (in C or in Lua), so fn must do only what a
 * handler may (set a volatile flag, lua_sethook). fuse_disarm stops the count
 * and tells how much CPU time passed since fuse_arm, read from the thread's
 * own clock to the nanosecond, however late the signal was.
 *
 * One fuse per thread; the timer behind it is made on first use, again in a
 * forked child (timers do not survive fork). The signal is SIGVTALRM, which
 * nothing else in kvsite uses; its handler keeps errno and restarts the
 * system calls it interrupts (SA_RESTART). */
#ifndef KV_FUSE_H
#define KV_FUSE_H

#include <stdbool.h>

typedef void (*fuse_fn)(void *ctx);

/* Arms the thread's fuse for ns nanoseconds of its CPU time (ns > 0),
 * replacing an armed one. False when no timer can be had (fn will not be
 * called): the caller then does without. */
bool fuse_arm(long long ns, fuse_fn fn, void *ctx);

/* Disarms the thread's fuse (fn is not called after) and returns the
 * thread's CPU time since fuse_arm in nanoseconds; -1 when it was not armed
 * or the clock cannot be read. */
long long fuse_disarm(void);

#endif
