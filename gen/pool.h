/* pool: forked worker processes under a watchdog.
 *
 * pool_run() forks up to `workers` processes that share the caller's memory
 * copy-on-write (the content index, earlier records). Each builds its own
 * renderer, takes job numbers from a pipe and sends back one encoded record
 * per job. The parent gives every job a wall-clock deadline: a job that runs
 * past it, or crashes its worker, becomes one error at that job's file, the
 * worker is replaced and the remaining jobs go on. Workers run with an
 * address-space limit (setrlimit) when one is configured. */
#ifndef KV_POOL_H
#define KV_POOL_H

#include <stddef.h>

#include "record.h"
#include "render.h"

typedef struct {
    int workers;
    double deadline;      /* seconds per job */
    size_t worker_memory; /* bytes of address space; 0 for none */
} pool_opts;

/* Runs jobs[0..n) and stores each result in records[job] (which must be
 * initialised; existing content is freed). Returns 0; failures of single jobs
 * are reported in their records. */
int pool_run(const render_env *env, const pool_opts *o, const size_t *jobs, size_t n,
             page_record *records);

#endif
