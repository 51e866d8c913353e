#include "pool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "asan.h"
#include "fsutil.h"
#include "shrec.h"

#define RECORD_MAX (256u << 20)
/* Jobs a worker may hold (the one it works on and those waiting behind it):
 * enough that it goes from page to page without waiting for the parent, few
 * enough that the last jobs still spread over the workers. */
#define QUEUE_MAX 8
#define READ_CHUNK 65536

_Static_assert(QUEUE_MAX * sizeof(uint32_t) <= PIPE_BUF, "one send of job numbers is atomic");


/* Each record travels as this header and `len` bytes of record_encode(). */
typedef struct {
    uint32_t len;
    uint32_t unused; /* keeps `finished` aligned */
    double finished; /* the worker's CLOCK_MONOTONIC when it was done with the job */
} frame;

/* Two channels per worker. `ctl` is a socket pair: job numbers go down, and
 * the worker "rings" (sends one byte) up when it starts the last job it has,
 * when it has none, or when the record pipe is full. Records go up a pipe
 * that the parent reads only after a ring, so a worker with jobs queued does
 * not wake the parent for every page. The parent polls `ctl` alone: a ring
 * or the worker's end (the socket hangs up when the process is gone). */
typedef struct {
    pid_t pid;             /* -1 when there is no process */
    int ctl_fd;            /* parent's end of the socket pair */
    int res_fd;            /* parent's end of the record pipe */
    uint32_t q[QUEUE_MAX]; /* jobs given and not answered, a ring; the head is in progress */
    double sent[QUEUE_MAX]; /* when each was sent */
    int qhead, qlen;
    int nsent;             /* q[0..nsent) went to this process (the rest: to its predecessor) */
    double started;        /* when the head job started */
    bool rang;             /* wants jobs */
    bool fresh;            /* no record received since the process started */
    bool broken;           /* a send failed: send nothing more, wait for its end */
    buf in;                /* bytes of records not yet decoded */
} worker;

static double S_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---------- the worker ---------- */

static void S_ring(int ctl)
{
    char c = 0;
    /* never blocks: a full socket already holds rings the parent will see */
    while (send(ctl, &c, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno == EINTR)
        ;
}

/* Writes one frame to the (non-blocking) record pipe; when the pipe is full,
 * rings so the parent empties it. */
static int S_put_record(int res, int ctl, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(res, p, n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            S_ring(ctl);
            struct pollfd pf = {res, POLLOUT, 0};
            if (poll(&pf, 1, -1) < 0 && errno != EINTR)
                return -1;
            continue;
        }
        return -1;
    }
    return 0;
}

static void S_worker_main(const render_env *env, const pool_opts *o, int ctl, int res)
{
#ifndef KV_ASAN
    if (o->worker_memory) {
        struct rlimit rl = {o->worker_memory, o->worker_memory};
        setrlimit(RLIMIT_AS, &rl);
    }
#endif
    if (o->build_deadline > 0) {
        /* CPU time can never exceed the wall-clock time left, so a worker the
         * watchdog cannot stop (a stopped parent) still ends */
        double left = o->build_deadline - S_now();
        rlim_t cpu = left < 1 ? 1 : (rlim_t)left + 1;
        struct rlimit rl = {cpu, cpu + 1};
        setrlimit(RLIMIT_CPU, &rl);
    }
    /* the records the parent stores meanwhile are not this worker's to change */
    if (env->records_shared && shrec_seal(env->records, env->nrecords) != 0)
        _exit(70);
    renderer *r = render_new(env);
    if (!r)
        _exit(70);
    fcntl(res, F_SETFL, O_NONBLOCK);
    buf out = BUF_INIT;
    char jobs[2 * QUEUE_MAX * sizeof(uint32_t)]; /* job numbers received, not yet started */
    size_t have = 0;
    for (;;) {
        if (have < sizeof(uint32_t)) {
            /* out of jobs: take what was sent meanwhile, else ask and wait */
            ssize_t got = recv(ctl, jobs + have, sizeof jobs - have, MSG_DONTWAIT);
            if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                S_ring(ctl);
                got = recv(ctl, jobs + have, sizeof jobs - have, 0);
            }
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                break; /* the parent closed its end: no more jobs */
            have += (size_t)got;
            continue;
        }
        uint32_t job;
        memcpy(&job, jobs, sizeof job);
        have -= sizeof job;
        memmove(jobs, jobs + sizeof job, have);
        if (have < sizeof(uint32_t))
            S_ring(ctl); /* the last one: more can come while it renders */
        page_record rec;
        record_init(&rec);
        render_job(r, job, &rec);
        buf_clear(&out);
        frame f = {0, 0, 0.0};
        buf_put(&out, &f, sizeof f);
        record_encode(&rec, NULL, &out);
        record_free(&rec);
        f.len = (uint32_t)(out.len - sizeof f);
        f.finished = S_now();
        memcpy(out.ptr, &f, sizeof f);
        if (S_put_record(res, ctl, out.ptr, out.len) != 0)
            break;
    }
    /* the process ends: its memory goes with it, and the parent does not
     * wait for render_free's milliseconds of frees */
    buf_free(&out);
    if (env->records_shared)
        shrec_unseal(env->records, env->nrecords); /* for a leak checker (shrec.h) */
    _exit(0);
}

/* ---------- the parent ---------- */

static int S_spawn(worker *w, worker *all, int nall, const render_env *env, const pool_opts *o)
{
    int sp[2], rp[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0)
        return -1;
    if (pipe2(rp, O_CLOEXEC) != 0) {
        close(sp[0]);
        close(sp[1]);
        return -1;
    }
    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(sp[0]);
        close(sp[1]);
        close(rp[0]);
        close(rp[1]);
        errno = err;
        return -1;
    }
    if (pid == 0) {
        /* a worker never outlives the build: killed with its parent, and
         * gone already if the parent died before this line */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(70);
        /* the child keeps only its own two ends */
        for (int i = 0; i < nall; i++) {
            if (all[i].pid > 0) {
                close(all[i].ctl_fd);
                close(all[i].res_fd);
            }
        }
        close(sp[0]);
        close(rp[0]);
        S_worker_main(env, o, sp[1], rp[1]);
    }
    close(sp[1]);
    close(rp[1]);
    fcntl(rp[0], F_SETFL, O_NONBLOCK);
    w->pid = pid;
    w->ctl_fd = sp[0];
    w->res_fd = rp[0];
    w->nsent = 0;
    w->rang = true;
    w->fresh = true;
    w->broken = false;
    buf_clear(&w->in);
    return 0;
}

static void S_reap(worker *w, int *status)
{
    if (w->ctl_fd >= 0)
        close(w->ctl_fd);
    close(w->res_fd);
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (status)
        *status = st;
    w->pid = -1;
}

/* Workers that finished their phase and were told to end (their sockets
 * closed), not yet waited for: pool_settle waits for them, pool_run for
 * those already gone. A worker's exit (unmapping what it shared with the
 * parent) takes milliseconds that the next phase need not wait for. */
static pid_t *S_leaving;
static size_t S_nleaving, S_capleaving;

static void S_leave(pid_t pid)
{
    if (S_nleaving == S_capleaving)
        S_leaving = xrealloc(S_leaving, (S_capleaving = S_capleaving ? 2 * S_capleaving : 8) *
                                            sizeof *S_leaving);
    S_leaving[S_nleaving++] = pid;
}

/* Waits for the leaving workers: all of them (block), or those gone. */
static void S_wait_leaving(bool block)
{
    size_t kept = 0;
    for (size_t i = 0; i < S_nleaving; i++) {
        pid_t got;
        while ((got = waitpid(S_leaving[i], NULL, block ? 0 : WNOHANG)) < 0 && errno == EINTR)
            ;
        if (got == 0)
            S_leaving[kept++] = S_leaving[i]; /* still exiting */
    }
    S_nleaving = kept;
    if (!S_nleaving) {
        free(S_leaving);
        S_leaving = NULL;
        S_capleaving = 0;
    }
}

void pool_settle(void) { S_wait_leaving(true); }

static int S_at(const worker *w, int i)
{
    return (w->qhead + i) % QUEUE_MAX;
}

static uint32_t S_pop(worker *w)
{
    uint32_t job = w->q[w->qhead];
    w->qhead = S_at(w, 1);
    w->qlen--;
    if (w->nsent > 0)
        w->nsent--;
    return job;
}

/* Queues up to `want` jobs from jobs[*next..n) and sends the worker every
 * queued job it has not had, in one send (a few bytes, so all or nothing). */
static void S_feed(worker *w, const size_t *jobs, size_t n, size_t *next, size_t want)
{
    while ((size_t)w->qlen < want && *next < n) {
        w->q[S_at(w, w->qlen)] = (uint32_t)jobs[(*next)++];
        w->qlen++;
    }
    if (w->nsent == w->qlen)
        return;
    uint32_t msg[QUEUE_MAX];
    int k = 0;
    for (int i = w->nsent; i < w->qlen; i++)
        msg[k++] = w->q[S_at(w, i)];
    bool idle = w->nsent == 0;
    if (fs_send_all(w->ctl_fd, msg, (size_t)k * sizeof *msg) == 0) {
        double now = S_now();
        for (int i = w->nsent; i < w->qlen; i++)
            w->sent[S_at(w, i)] = now;
        if (idle)
            w->started = now;
        w->nsent = w->qlen;
        return;
    }
    /* The worker has ended. One that was idle after some work died idle:
     * replace it quietly, its jobs kept. Otherwise the end of its pipes will
     * tell how it ended and which job to blame. */
    if (idle && !w->fresh) {
        S_reap(w, NULL);
    } else {
        w->broken = true;
        if (idle)
            w->started = S_now();
    }
}

/* Takes the rings. Returns true when the worker has ended (end of file or an
 * error on the socket). */
static bool S_take_rings(worker *w)
{
    char c[64];
    for (;;) {
        ssize_t r = recv(w->ctl_fd, c, sizeof c, MSG_DONTWAIT);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno != EAGAIN && errno != EWOULDBLOCK;
        if (r == 0)
            return true;
        w->rang = true;
        if ((size_t)r < sizeof c)
            return false;
    }
}

/* Reads what the worker has written so far. Returns true at end of file (or
 * a read error): the worker has ended and wrote all it will. */
static bool S_read_records(worker *w)
{
    for (;;) {
        buf_grow(&w->in, READ_CHUNK);
        size_t room = w->in.cap - w->in.len - 1;
        ssize_t r = read(w->res_fd, w->in.ptr + w->in.len, room);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errno != EAGAIN && errno != EWOULDBLOCK;
        if (r == 0)
            return true;
        w->in.len += (size_t)r;
        w->in.ptr[w->in.len] = '\0';
        /* a short read emptied the pipe: no need to ask again */
        if ((size_t)r < room)
            return false;
    }
}

/* The job a worker held failed as a whole: one error at the job's file. */
static void S_fail_job(const render_env *env, page_record *records, uint8_t *stored, uint32_t job,
                       const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void S_fail_job(const render_env *env, page_record *records, uint8_t *stored, uint32_t job,
                       const char *fmt, ...)
{
    stored[job] = 1;
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

/* Stores every complete record in w->in, each for the job at the head of the
 * queue (and marks it in stored); the next job started when the worker
 * finished the previous one (or when it was sent, if later). Returns the
 * number stored; sets *bad when a length is out of bounds (the worker is
 * confused). */
static size_t S_store_records(const render_env *env, worker *w, page_record *records,
                              uint8_t *stored, double now, bool *bad)
{
    size_t off = 0, count = 0;
    while (w->qlen > 0 && w->in.len - off >= sizeof(frame)) {
        frame f;
        memcpy(&f, w->in.ptr + off, sizeof f);
        if (f.len > RECORD_MAX) {
            *bad = true;
            break;
        }
        if (w->in.len - off - sizeof f < (size_t)f.len)
            break;
        uint32_t job = S_pop(w);
        page_record *rec = &records[job];
        record_free(rec);
        if (record_decode(w->in.ptr + off + sizeof f, f.len, env->figs, rec) != 0 ||
            rec->job != job) {
            record_free(rec);
            S_fail_job(env, records, stored, job,
                       "internal error: a worker sent a malformed record");
        }
        stored[job] = 1;
        off += sizeof f + (size_t)f.len;
        if (w->qlen > 0) {
            double t = f.finished, sent = w->sent[w->qhead];
            if (!(t >= sent)) /* also when not a number */
                t = sent;
            w->started = t < now ? t : now;
        }
        w->fresh = false;
        count++;
    }
    if (off > 0) {
        memmove(w->in.ptr, w->in.ptr + off, w->in.len - off);
        buf_truncate(&w->in, w->in.len - off);
    }
    return count;
}

/* Stops every worker at once. */
static void S_kill_all(worker *ws, int nw)
{
    for (int i = 0; i < nw; i++) {
        if (ws[i].pid > 0) {
            kill(ws[i].pid, SIGKILL);
            S_reap(&ws[i], NULL);
        }
    }
}

/* The build's deadline has passed: every job still queued or not yet given
 * out fails, and the workers are stopped. Returns how many jobs failed. */
static size_t S_fail_all(const render_env *env, const pool_opts *o, worker *ws, int nw,
                         const size_t *jobs, size_t n, size_t *next, page_record *records,
                         uint8_t *stored)
{
    size_t failed = 0;
    S_kill_all(ws, nw);
    for (int i = 0; i < nw; i++) {
        worker *w = &ws[i];
        while (w->qlen > 0) {
            S_fail_job(env, records, stored, S_pop(w),
                       "the build took longer than %g s (limits.build_timeout): stopped",
                       o->build_timeout);
            failed++;
        }
    }
    for (; *next < n; (*next)++, failed++)
        S_fail_job(env, records, stored, (uint32_t)jobs[*next],
                   "the build took longer than %g s (limits.build_timeout): not built",
                   o->build_timeout);
    return failed;
}

/* pool_run's marks of the jobs whose records are in, also here: a worker
 * forked during the run holds a copy it never frees, and S_worker_main, which
 * does not return, keeps no register or stack slot that points to it; a
 * leak checker finds it from here (volatile: stores nothing reads are not
 * left out). */
static uint8_t *volatile S_stored;

/* Moves *front past the jobs of jobs[] whose records are in, adding their
 * bytes to cap->total. True once that passes cap->limit (cap->job says where). */
static bool S_cap_passed(pool_cap *cap, const size_t *jobs, size_t n, const page_record *records,
                         const uint8_t *stored, size_t *front)
{
    for (; *front < n && stored[jobs[*front]]; (*front)++) {
        cap->total += records[jobs[*front]].out_bytes;
        if (cap->total > cap->limit) {
            cap->passed = true;
            cap->job = jobs[(*front)++];
            return true;
        }
    }
    return false;
}

int pool_run(const render_env *env, const pool_opts *o, const size_t *jobs, size_t n,
             page_record *records, pool_cap *cap)
{
    S_wait_leaving(false); /* the last phase's, gone by now */
    if (cap) {
        cap->passed = false;
        cap->total = cap->before;
    }
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
    int *pw = xcalloc((size_t)nw, sizeof *pw); /* worker of each pfd entry */
    size_t span = 0, front = 0; /* jobs[0..front) have their records */
    for (size_t k = 0; k < n; k++)
        if (jobs[k] >= span)
            span = jobs[k] + 1;
    uint8_t *stored = xcalloc(span, 1); /* by job: its record is in */
    S_stored = stored;
    bool watch_cap = cap && cap->limit > 0;
    while (done < n) {
        if (watch_cap && S_cap_passed(cap, jobs, n, records, stored, &front)) {
            /* what is left would only be thrown away: the build fails here */
            S_kill_all(ws, nw);
            for (int i = 0; i < nw; i++)
                ws[i].qlen = ws[i].nsent = 0;
            break;
        }
        if (o->build_deadline > 0 && S_now() >= o->build_deadline) {
            done += S_fail_all(env, o, ws, nw, jobs, n, &next, records, stored);
            continue;
        }
        /* keep every worker alive; give jobs to those that asked */
        for (int i = 0; i < nw; i++) {
            worker *w = &ws[i];
            if (w->pid < 0 && (w->qlen > 0 || next < n) && S_spawn(w, ws, nw, env, o) != 0) {
                int err = errno;
                uint32_t job = w->qlen > 0 ? S_pop(w) : (uint32_t)jobs[next++];
                S_fail_job(env, records, stored, job, "cannot start a worker process: %s",
                           strerror(err));
                done++;
                continue;
            }
            if (w->pid < 0 || w->broken || !w->rang)
                continue;
            w->rang = false;
            /* near the end hold fewer, so the last jobs spread over the workers;
             * a phase of a few jobs (the report's pages, checks.json) is
             * given one job at a time: they are few and large, and a job
             * queued behind the longest would wait for it */
            size_t want = n < (size_t)nw * QUEUE_MAX * 4 ? 1 : 1 + (n - next) / (2 * (size_t)nw);
            S_feed(w, jobs, n, &next, want < QUEUE_MAX ? want : QUEUE_MAX);
        }
        double now = S_now(), wait = o->deadline;
        if (o->build_deadline > 0 && o->build_deadline - now < wait)
            wait = o->build_deadline - now;
        int np = 0;
        for (int i = 0; i < nw; i++) {
            if (ws[i].pid < 0)
                continue;
            pfd[np].fd = ws[i].ctl_fd;
            pfd[np].events = POLLIN;
            pfd[np].revents = 0;
            pw[np++] = i;
            /* a head not yet seen answered may have started later: then the
             * wake-up below reads its records and waits on */
            double left = ws[i].started + o->deadline - now;
            if (ws[i].qlen > 0 && left < wait)
                wait = left;
        }
        if (np == 0)
            continue;
        int ms = wait <= 0 ? 0 : (int)(wait * 1000) + 1;
        int pr = poll(pfd, (nfds_t)np, ms);
        if (pr < 0 && errno != EINTR)
            break;
        now = S_now();
        for (int k = 0; k < np; k++) {
            worker *w = &ws[pw[k]];
            bool late = w->qlen > 0 && now - w->started > o->deadline;
            bool dead = false, bad = false;
            if (pfd[k].revents & (POLLIN | POLLHUP | POLLERR))
                dead = S_take_rings(w) || (pfd[k].revents & (POLLHUP | POLLERR));
            if (pfd[k].revents || late)
                dead |= S_read_records(w);
            done += S_store_records(env, w, records, stored, now, &bad);
            if (bad)
                dead = true;
            if (w->qlen == 0) {
                if (dead)
                    S_reap(w, NULL); /* ended between jobs: nothing lost */
                continue;
            }
            if (dead) {
                int st = 0;
                uint32_t job = S_pop(w);
                kill(w->pid, SIGKILL);
                S_reap(w, &st);
                if (WIFSIGNALED(st))
                    S_fail_job(env, records, stored, job,
                               "the worker rendering this page crashed (signal %d); the page "
                               "was not built",
                               WTERMSIG(st));
                else
                    S_fail_job(env, records, stored, job,
                               "the worker rendering this page stopped (exit status %d, "
                               "possibly out of memory: limits.worker_memory)",
                               WIFEXITED(st) ? WEXITSTATUS(st) : -1);
                done++;
            } else if (now - w->started > o->deadline) {
                uint32_t job = S_pop(w);
                kill(w->pid, SIGKILL);
                S_reap(w, NULL);
                S_fail_job(env, records, stored, job,
                           "rendering took longer than %g s (limits.page_timeout): stopped",
                           o->deadline);
                done++;
            }
            /* the jobs queued behind a failed one go to the next process */
        }
    }
    if (watch_cap && !cap->passed)
        S_cap_passed(cap, jobs, n, records, stored, &front); /* the last jobs' */
    /* the records after the job that passed the cap, which some worker
     * happened to finish, go: what the build reports does not depend on them */
    for (size_t k = front; watch_cap && cap->passed && k < n; k++) {
        if (stored[jobs[k]]) {
            record_free(&records[jobs[k]]);
            record_init(&records[jobs[k]]);
        }
    }
    free(stored);
    S_stored = NULL;
    /* closing the sockets ends every worker at once; pool_settle (or the
     * next pool_run) waits for them */
    for (int i = 0; i < nw; i++) {
        if (ws[i].pid > 0) {
            close(ws[i].ctl_fd);
            close(ws[i].res_fd);
            S_leave(ws[i].pid);
        }
        buf_free(&ws[i].in);
    }
    free(ws);
    free(pfd);
    free(pw);
    sigaction(SIGPIPE, &old_pipe, NULL);
    return 0;
}
