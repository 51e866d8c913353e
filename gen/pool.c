#include "pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NO_JOB UINT32_MAX
#define RECORD_MAX (256u << 20)

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

typedef struct {
    pid_t pid;
    int job_fd;  /* parent writes job numbers */
    int res_fd;  /* parent reads records */
    uint32_t job; /* NO_JOB when idle */
    double started;
    buf in;      /* bytes of the record being received */
} worker;

static double S_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int S_read_full(int fd, void *p, size_t n)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static int S_write_full(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

static void S_worker_main(const render_env *env, const pool_opts *o, int job_fd, int res_fd)
{
#ifndef UNDER_ASAN
    if (o->worker_memory) {
        struct rlimit rl = {o->worker_memory, o->worker_memory};
        setrlimit(RLIMIT_AS, &rl);
    }
#else
    (void)o;
#endif
    renderer *r = render_new(env);
    if (!r)
        _exit(70);
    buf out = BUF_INIT;
    for (;;) {
        uint32_t job;
        if (S_read_full(job_fd, &job, sizeof job) != 0 || job == NO_JOB)
            break;
        page_record rec;
        record_init(&rec);
        render_job(r, job, &rec);
        buf_clear(&out);
        uint32_t len = 0;
        buf_put(&out, &len, sizeof len);
        record_encode(&rec, &out);
        len = (uint32_t)(out.len - sizeof len);
        memcpy(out.ptr, &len, sizeof len);
        record_free(&rec);
        if (S_write_full(res_fd, out.ptr, out.len) != 0)
            break;
    }
    buf_free(&out);
    render_free(r);
    _exit(0);
}

static int S_spawn(worker *w, worker *all, int nall, const render_env *env, const pool_opts *o)
{
    int jp[2], rp[2];
    if (pipe2(jp, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(rp, O_CLOEXEC) != 0) {
        close(jp[0]);
        close(jp[1]);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(jp[0]);
        close(jp[1]);
        close(rp[0]);
        close(rp[1]);
        return -1;
    }
    if (pid == 0) {
        /* the child keeps only its own two pipe ends */
        for (int i = 0; i < nall; i++) {
            if (all[i].pid > 0) {
                close(all[i].job_fd);
                close(all[i].res_fd);
            }
        }
        close(jp[1]);
        close(rp[0]);
        S_worker_main(env, o, jp[0], rp[1]);
    }
    close(jp[0]);
    close(rp[1]);
    fcntl(rp[0], F_SETFL, O_NONBLOCK);
    w->pid = pid;
    w->job_fd = jp[1];
    w->res_fd = rp[0];
    w->job = NO_JOB;
    buf_clear(&w->in);
    return 0;
}

static void S_reap(worker *w, int *status)
{
    close(w->job_fd);
    close(w->res_fd);
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (status)
        *status = st;
    w->pid = -1;
}

/* The job a worker held failed as a whole: one error at the job's file. */
static void S_fail_job(const render_env *env, page_record *records, uint32_t job,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void S_fail_job(const render_env *env, page_record *records, uint32_t job,
                       const char *fmt, ...)
{
    page_record *rec = &records[job];
    record_free(rec);
    record_init(rec);
    rec->job = job;
    rec->url = xstrdup("");
    rec->src = xstrdup("");
    rec->summary = xstrdup("");
    buf msg = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    diag_add(&rec->diags, DIAG_ERROR, render_job_file(env, job), 0, 0, "%s", buf_cstr(&msg));
    buf_free(&msg);
}

int pool_run(const render_env *env, const pool_opts *o, const size_t *jobs, size_t n,
             page_record *records)
{
    if (n == 0)
        return 0;
    int nw = o->workers < 1 ? 1 : o->workers;
    if ((size_t)nw > n)
        nw = (int)n;
    struct sigaction sa = {0}, old_pipe;
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &old_pipe);
    worker *ws = xcalloc((size_t)nw, sizeof *ws);
    for (int i = 0; i < nw; i++) {
        ws[i].pid = -1;
        buf_init(&ws[i].in);
    }
    size_t next = 0, done = 0;
    struct pollfd *pfd = xcalloc((size_t)nw, sizeof *pfd);
    while (done < n) {
        /* keep every worker alive and busy */
        for (int i = 0; i < nw; i++) {
            worker *w = &ws[i];
            if (w->pid < 0 && next < n && S_spawn(w, ws, nw, env, o) != 0) {
                S_fail_job(env, records, (uint32_t)jobs[next], "cannot start a worker process: %s", strerror(errno));
                next++;
                done++;
                continue;
            }
            if (w->pid > 0 && w->job == NO_JOB && next < n) {
                uint32_t job = (uint32_t)jobs[next];
                if (S_write_full(w->job_fd, &job, sizeof job) != 0) {
                    S_reap(w, NULL);
                    continue;
                }
                w->job = job;
                w->started = S_now();
                next++;
            }
        }
        double now = S_now(), wait = o->deadline;
        int np = 0;
        for (int i = 0; i < nw; i++) {
            pfd[i].fd = ws[i].pid > 0 && ws[i].job != NO_JOB ? ws[i].res_fd : -1;
            pfd[i].events = POLLIN;
            pfd[i].revents = 0;
            if (pfd[i].fd >= 0) {
                np++;
                double left = ws[i].started + o->deadline - now;
                if (left < wait)
                    wait = left;
            }
        }
        if (np == 0)
            continue;
        int ms = wait <= 0 ? 0 : (int)(wait * 1000) + 1;
        int pr = poll(pfd, (nfds_t)nw, ms);
        if (pr < 0 && errno != EINTR)
            break;
        now = S_now();
        for (int i = 0; i < nw; i++) {
            worker *w = &ws[i];
            if (w->pid < 0 || w->job == NO_JOB)
                continue;
            bool dead = false;
            if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) {
                char chunk[65536];
                for (;;) {
                    ssize_t r = read(w->res_fd, chunk, sizeof chunk);
                    if (r > 0) {
                        buf_put(&w->in, chunk, (size_t)r);
                        continue;
                    }
                    if (r == 0)
                        dead = true;
                    break;
                }
            }
            /* complete records */
            while (w->in.len >= 4) {
                uint32_t len;
                memcpy(&len, w->in.ptr, sizeof len);
                if (len > RECORD_MAX) {
                    dead = true;
                    break;
                }
                if (w->in.len < 4 + (size_t)len)
                    break;
                page_record *rec = &records[w->job];
                record_free(rec);
                if (record_decode(w->in.ptr + 4, len, rec) != 0 || rec->job != w->job) {
                    record_free(rec);
                    S_fail_job(env, records, w->job, "internal error: a worker sent a malformed record");
                }
                memmove(w->in.ptr, w->in.ptr + 4 + len, w->in.len - 4 - len);
                buf_truncate(&w->in, w->in.len - 4 - len);
                w->job = NO_JOB;
                done++;
                break;
            }
            if (w->job == NO_JOB)
                continue;
            if (dead) {
                int st = 0;
                uint32_t job = w->job;
                kill(w->pid, SIGKILL);
                S_reap(w, &st);
                if (WIFSIGNALED(st))
                    S_fail_job(env, records, job,
                               "the worker rendering this page crashed (signal %d); the page "
                               "was not built",
                               WTERMSIG(st));
                else
                    S_fail_job(env, records, job,
                               "the worker rendering this page stopped (exit status %d, "
                               "possibly out of memory: limits.worker_memory)",
                               WIFEXITED(st) ? WEXITSTATUS(st) : -1);
                done++;
            } else if (now - w->started > o->deadline) {
                uint32_t job = w->job;
                kill(w->pid, SIGKILL);
                S_reap(w, NULL);
                S_fail_job(env, records, job,
                           "rendering took longer than %g s (limits.page_timeout): stopped",
                           o->deadline);
                done++;
            }
        }
    }
    for (int i = 0; i < nw; i++) {
        if (ws[i].pid > 0) {
            uint32_t stop = NO_JOB;
            S_write_full(ws[i].job_fd, &stop, sizeof stop);
            S_reap(&ws[i], NULL);
        }
        buf_free(&ws[i].in);
    }
    free(ws);
    free(pfd);
    sigaction(SIGPIPE, &old_pipe, NULL);
    return 0;
}
