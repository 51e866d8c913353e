/* fuse: a limit on the CPU time of the calling thread, for code that is cheaper
 * to run unwatched and run again, watched, in the rare case it ran long.
 *
 * fuse_arm starts counting the thread's CPU time (user and system); once
 * `ns` of it have passed, fn(ctx) is called from a signal handler in that
 * thread, wherever the thread is (in C or in Lua), so fn must do only what a
 * handler may (set a volatile flag, lua_sethook). fuse_disarm stops the count
 * and tells how much CPU time passed since fuse_arm, or a bound of it.
 *
 * A fuse is armed for every page, and pages take a fraction of a
 * millisecond, where a timer set and cleared for each (three timer and clock
 * system calls) cost a twentieth of a build on a virtual machine. So the
 * thread's timer (a CPU-time one-shot) is set only when none is running:
 * fuse_arm counts from the thread's CPU clock (a system call), or, when
 * its last reading is less than `ns` / 8 old on the wall clock, from that
 * reading (a lower bound: the fuse may blow early, never late), and leaves a
 * running timer set for no more than `ns`; when the timer expires, the
 * handler blows the armed fuse if its `ns` have passed and otherwise sets
 * the timer again for the rest; with no fuse armed it does nothing, and the
 * next fuse_arm sets it. fuse_disarm reads the wall clock (no system call)
 * and, only when `ns` / 2 or more has passed on it, the CPU clock.
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

/* Disarms the thread's fuse (fn is not called after) and returns, in
 * nanoseconds, the thread's CPU time since fuse_arm, or the wall-clock time
 * since then when that is under ns / 2 (a thread's CPU time never passes
 * it); -1 when it was not armed or the clock cannot be read. */
long long fuse_disarm(void);

#endif
