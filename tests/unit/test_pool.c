/* Unit tests for gen/pool.c: every job's record lands at its job number
 * whatever the number of workers; a worker that crashes, exits or runs past
 * its deadline fails exactly the job it was on, and the jobs queued behind it
 * are still rendered by the next worker; each job's deadline counts from when
 * it started, not from when it was queued; no worker is left behind; a run
 * watching the output limit stops where the bytes, added up in the order of
 * its jobs, pass it, whatever the number of workers.
 *
 * The renderer is replaced by the fakes below (the linker takes these and
 * leaves render.o out of the archive): each job does what S_plan says. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pool.h"
#include "record.h"
#include "render.h"

#define NJOBS 600

typedef enum { P_OK, P_BIG, P_SLOW, P_LONG, P_TERM, P_EXIT, P_HANG } plan;

/* set before pool_run; the workers see the copy they were forked with */
static plan S_plan[NJOBS];
static bool S_no_renderer;
static uint64_t S_bytes[NJOBS]; /* each job's out_bytes */
static char S_files[NJOBS][32];

struct renderer {
    int unused;
};

renderer *render_new(const render_env *e)
{
    (void)e;
    return S_no_renderer ? NULL : calloc(1, sizeof(renderer));
}

void render_free(renderer *r)
{
    free(r);
}

const char *render_job_file(const render_env *e, size_t job)
{
    (void)e;
    return S_files[job];
}

void render_job(renderer *r, size_t job, page_record *rec)
{
    (void)r;
    switch (S_plan[job]) {
    case P_TERM:
        raise(SIGTERM); /* not SIGSEGV: the sanitizers would catch that one */
        break;
    case P_EXIT:
        _exit(3);
    case P_HANG:
        for (;;)
            pause();
    case P_SLOW:
        nanosleep(&(struct timespec){0, 150 * 1000 * 1000}, NULL);
        break;
    case P_LONG:
        nanosleep(&(struct timespec){0, 600 * 1000 * 1000}, NULL);
        break;
    default:
        break;
    }
    rec->job = (uint32_t)job;
    rec->done = 1;
    rec->url = xasprintf("/p%zu/", job);
    rec->src = xstrdup(S_files[job]);
    rec->out_bytes = S_bytes[job];
    if (S_plan[job] == P_BIG) {
        /* more than a pipe holds: the worker must wait for the parent to read */
        size_t n = 300000 + job;
        rec->summary = xmalloc(n + 1);
        memset(rec->summary, 'a' + (int)(job % 26), n);
        rec->summary[n] = '\0';
    } else {
        rec->summary = xasprintf("%d", (int)getpid()); /* who rendered it */
    }
}

static page_record S_rec[NJOBS];
static double S_build_deadline; /* 0, or the build's deadline for S_run */
static pool_cap *S_cap;         /* NULL, or the output limit for S_run */
static size_t S_jobs[NJOBS];

static int S_setup(void **state)
{
    (void)state;
    for (size_t j = 0; j < NJOBS; j++) {
        S_plan[j] = P_OK;
        snprintf(S_files[j], sizeof S_files[j], "content/p%zu.md", j);
        record_init(&S_rec[j]);
        S_bytes[j] = 0;
    }
    S_no_renderer = false;
    S_build_deadline = 0;
    S_cap = NULL;
    return 0;
}

static int S_teardown(void **state)
{
    (void)state;
    for (size_t j = 0; j < NJOBS; j++)
        record_free(&S_rec[j]);
    return 0;
}

static double S_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void S_run(int workers, double deadline, size_t n)
{
    render_env env;
    memset(&env, 0, sizeof env);
    pool_opts o = {.workers = workers, .deadline = deadline, .build_deadline = S_build_deadline,
                   .build_timeout = 1};
    assert_int_equal(pool_run(&env, &o, S_jobs, n, S_rec, S_cap), 0);
    /* every worker is waited for */
    pool_settle();
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void S_built(size_t job)
{
    const page_record *r = &S_rec[job];
    char url[32];
    snprintf(url, sizeof url, "/p%zu/", job);
    assert_int_equal(r->job, job);
    assert_int_equal(r->done, 1);
    assert_string_equal(r->url, url);
    assert_string_equal(r->src, S_files[job]);
    assert_int_equal(r->diags.n, 0);
    if (S_plan[job] == P_BIG) {
        assert_int_equal(strlen(r->summary), 300000 + job);
        assert_int_equal(r->summary[299999 + job], 'a' + (int)(job % 26));
    }
}

static void S_failed(size_t job, const char *msg)
{
    const page_record *r = &S_rec[job];
    assert_int_equal(r->job, job);
    assert_int_equal(r->done, 0);
    assert_string_equal(r->url, "");
    assert_int_equal(r->diags.n, 1);
    assert_int_equal(r->diags.v[0].level, DIAG_ERROR);
    assert_string_equal(r->diags.v[0].file, S_files[job]);
    assert_string_equal(r->diags.v[0].msg, msg);
}

/* Every other job number, some records larger than a pipe: each lands at its
 * number, the numbers not given stay untouched, with 1 to 5 workers. */
static void test_records_by_job(void **state)
{
    static const int workers[] = {1, 2, 3, 5};
    for (size_t k = 0; k < sizeof workers / sizeof *workers; k++) {
        S_teardown(state);
        S_setup(state);
        size_t n = 0;
        for (size_t j = 0; j < NJOBS; j += 2) {
            S_jobs[n++] = j;
            if (j % 74 == 0)
                S_plan[j] = P_BIG;
        }
        S_run(workers[k], 30, n);
        for (size_t j = 0; j < NJOBS; j++) {
            if (j % 2 == 0) {
                S_built(j);
            } else {
                assert_int_equal(S_rec[j].done, 0);
                assert_null(S_rec[j].url);
            }
        }
    }
}

/* A phase of a few jobs whose first is long (the report's pages and
 * checks.json): nothing waits queued behind the long one, the other worker
 * renders all the rest. */
static void test_few_jobs_not_queued_behind_a_long_one(void **state)
{
    (void)state;
    for (size_t j = 0; j < 12; j++)
        S_jobs[j] = j;
    S_plan[0] = P_LONG;
    S_run(2, 30, 12);
    for (size_t j = 1; j < 12; j++) {
        S_built(j);
        assert_string_not_equal(S_rec[j].summary, S_rec[0].summary);
    }
}

/* A crash and an exit in the middle of a worker's queue: those two jobs fail
 * with the worker's end, all the others are built. */
static void test_crash_fails_only_its_job(void **state)
{
    for (int workers = 1; workers <= 2; workers++) {
        S_teardown(state);
        S_setup(state);
        for (size_t j = 0; j < 40; j++)
            S_jobs[j] = j;
        S_plan[5] = P_TERM;
        S_plan[6] = P_BIG;
        S_plan[17] = P_EXIT;
        S_plan[39] = P_TERM; /* the very last job */
        S_run(workers, 30, 40);
        for (size_t j = 0; j < 40; j++) {
            if (j == 5 || j == 39)
                S_failed(j, "the worker rendering this page crashed (signal 15); the page was "
                            "not built");
            else if (j == 17)
                S_failed(j, "the worker rendering this page stopped (exit status 3, possibly "
                            "out of memory: limits.worker_memory)");
            else
                S_built(j);
        }
    }
}

/* A job that never ends is stopped at its deadline; the jobs queued behind it
 * are built by the next worker. */
static void test_timeout_fails_only_its_job(void **state)
{
    for (int workers = 1; workers <= 2; workers++) {
        S_teardown(state);
        S_setup(state);
        for (size_t j = 0; j < 30; j++)
            S_jobs[j] = j;
        S_plan[3] = P_HANG;
        S_plan[4] = P_BIG;
        S_run(workers, 0.4, 30);
        for (size_t j = 0; j < 30; j++) {
            if (j == 3)
                S_failed(j, "rendering took longer than 0.4 s (limits.page_timeout): stopped");
            else
                S_built(j);
        }
    }
}

/* Twelve jobs of 0.15 s each in one worker, a deadline of 0.4 s: all are sent
 * long before they start, and none may be stopped. */
static void test_deadline_counts_from_start(void **state)
{
    (void)state;
    for (size_t j = 0; j < 12; j++) {
        S_jobs[j] = j;
        S_plan[j] = P_SLOW;
    }
    S_run(1, 0.4, 12);
    for (size_t j = 0; j < 12; j++)
        S_built(j);
}

/* A build deadline: the jobs that did not finish in time fail, every worker
 * is stopped (the hanging one too, which no page deadline would catch yet),
 * and a later phase that starts past the deadline builds nothing. */
static void test_build_deadline(void **state)
{
    (void)state;
    for (size_t j = 0; j < 40; j++) {
        S_jobs[j] = j;
        S_plan[j] = P_SLOW;
    }
    S_plan[0] = P_HANG;
    S_build_deadline = S_mono() + 1.0;
    double t = S_mono();
    S_run(2, 30, 40);
    assert_true(S_mono() - t < 5);
    size_t built = 0, stopped = 0;
    for (size_t j = 0; j < 40; j++) {
        if (S_rec[j].done) {
            S_built(j);
            built++;
            continue;
        }
        const char *m = S_rec[j].diags.v[0].msg;
        assert_true(strstr(m, "the build took longer than 1 s (limits.build_timeout)") == m);
        stopped++;
    }
    assert_int_equal(S_rec[0].done, 0);
    assert_true(built >= 2 && built <= 12);
    assert_int_equal(built + stopped, 40);
    /* the next phase: past the deadline, nothing is built and nothing hangs */
    S_teardown(state);
    S_setup(state);
    S_build_deadline = S_mono() - 1;
    for (size_t j = 0; j < 5; j++)
        S_jobs[j] = j;
    S_run(2, 30, 5);
    for (size_t j = 0; j < 5; j++)
        S_failed(j, "the build took longer than 1 s (limits.build_timeout): not built");
}

/* The output limit: 200 jobs (every third job number) of 100 bytes after 50
 * counted before them, against 5,050 bytes: the 51st job passes it, with 1
 * to 4 workers alike. The run stops there (the jobs after the 60th would take
 * 150 ms each), and keeps no record after that job; under a higher limit
 * every job is built and nothing is said to pass; passed by the last job,
 * it is said once every record is in. */
static void test_output_cap(void **state)
{
    for (int workers = 1; workers <= 4; workers++) {
        for (size_t k = 0; k < 200; k++) {
            S_jobs[k] = 3 * k;
            S_bytes[3 * k] = 100;
            S_plan[3 * k] = k >= 60 ? P_SLOW : P_OK;
        }
        pool_cap cap = {.limit = 5050, .before = 50};
        S_cap = &cap;
        double t = S_mono();
        S_run(workers, 30, 200);
        assert_true(S_mono() - t < 5);
        assert_true(cap.passed);
        assert_int_equal(cap.job, S_jobs[50]);
        assert_int_equal(cap.total, 5150);
        for (size_t k = 0; k <= 50; k++)
            S_built(S_jobs[k]);
        for (size_t k = 51; k < 200; k++) {
            assert_int_equal(S_rec[S_jobs[k]].done, 0);
            assert_null(S_rec[S_jobs[k]].url);
        }
        S_teardown(state);
        S_setup(state);
    }
    /* 100 jobs of 100 bytes after 50: 10,050 in all, which passes 10,049
     * at the last job (found once every record is in) and not 10,050 */
    const uint64_t limits[] = {10050, 10049};
    for (size_t i = 0; i < 2; i++) {
        S_teardown(state);
        S_setup(state);
        for (size_t k = 0; k < 100; k++) {
            S_jobs[k] = k;
            S_bytes[k] = 100;
        }
        pool_cap cap = {.limit = limits[i], .before = 50};
        S_cap = &cap;
        S_run(2, 30, 100);
        assert_int_equal(cap.passed, limits[i] < 10050);
        if (cap.passed)
            assert_int_equal(cap.job, 99);
        assert_int_equal(cap.total, 10050);
        for (size_t k = 0; k < 100; k++)
            S_built(k);
    }
}

/* A worker that cannot set up its renderer fails one job per attempt, and
 * the run still ends. */
static void test_no_renderer(void **state)
{
    (void)state;
    for (size_t j = 0; j < 6; j++)
        S_jobs[j] = j;
    S_no_renderer = true;
    S_run(2, 30, 6);
    for (size_t j = 0; j < 6; j++)
        S_failed(j, "the worker rendering this page stopped (exit status 70, possibly out of "
                    "memory: limits.worker_memory)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_few_jobs_not_queued_behind_a_long_one, S_setup,
                                        S_teardown),
        cmocka_unit_test_setup_teardown(test_records_by_job, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_crash_fails_only_its_job, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_timeout_fails_only_its_job, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_deadline_counts_from_start, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_no_renderer, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_build_deadline, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_output_cap, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
