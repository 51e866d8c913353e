/* pool: forked worker processes under a watchdog.
 *
 * pool_run() forks up to `workers` processes that share the caller's memory
 * copy-on-write (the content index, earlier records). Each builds its own
 * renderer, holds a short queue of job numbers (up to 8, fewer near the end so
 * the last jobs spread out) and sends back one encoded record per job; it asks
 * for more when it starts its last one, so it goes from page to page without
 * waiting for the parent, and the parent wakes about once per batch, not once
 * per page. Every job has a wall-clock deadline counted from when its worker
 * started it: a job that runs past it, or crashes its worker, becomes one
 * error at that job's file; the worker is replaced and the jobs queued behind
 * that one go to the new worker. Records are stored by job number, so the
 * result does not depend on which worker ran what, or in which order. Workers
 * run with an address-space limit (setrlimit) when one is configured, die
 * with the parent (PR_SET_PDEATHSIG), and a whole build can have a deadline;
 * a run can also stop at the output limit (pool_cap). */
#ifndef KV_POOL_H
#define KV_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "render.h"

typedef struct {
    int workers;
    double deadline;       /* seconds per job */
    size_t worker_memory;  /* bytes of address space; 0 for none */
    double build_deadline; /* CLOCK_MONOTONIC seconds after which every job left
                            * fails and workers are stopped (their CPU time is
                            * capped to what is left); 0 for none */
    double build_timeout;  /* for the message: limits.build_timeout */
} pool_opts;

/* The output limit (limits.output_bytes) as pool_run watches it: the bytes
 * the jobs' records say they wrote (out_bytes) are added up in the order of
 * jobs[], over the jobs done without a gap before them, so that where the sum
 * passes the limit does not depend on which worker ran what. */
typedef struct {
    uint64_t limit;  /* 0: none */
    uint64_t before; /* what the build counted before these jobs */
    /* set by pool_run: */
    bool passed;    /* before + the jobs' bytes passed the limit: the run stopped */
    size_t job;     /* the job at which they did */
    uint64_t total; /* before + the bytes of the jobs up to and including it */
} pool_cap;

/* Runs jobs[0..n) and stores each result in records[job] (which must be
 * initialised; existing content is freed). Returns 0; failures of single jobs
 * are reported in their records. It returns once every record is in, or,
 * when cap (which may be NULL) is passed, at once: the workers are stopped,
 * the records of the jobs after cap->job in jobs[] are emptied (record_init),
 * and those of the jobs not done are left as they were. Its workers
 * are told to end, and are waited for by pool_settle (or by a later
 * pool_run, once they are gone). */
int pool_run(const render_env *env, const pool_opts *o, const size_t *jobs, size_t n,
             page_record *records, pool_cap *cap);

/* Waits for every worker that pool_run told to end: before the process
 * reports its children's resource use or exits (a worker's peak memory
 * counts once it was waited for). */
void pool_settle(void);

#endif
