#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "build.h"
#include "config.h"
#include "diag.h"
#include "fsutil.h"
#include "highlight.h"
#include "httpd.h"
#include "output.h"
#include "paths.h"
#include "theme.h"
#include "watch.h"

#define S_QUIET_MS 20  /* no change for this long: the save is complete (an editor's
                        * write, rename and chmod come within a few ms) */
#define S_SETTLE_MS 5  /* the same after a file was closed or moved into place */
#define S_MAX_MS 300   /* a stream of changes still rebuilds this often */

typedef struct {
    const char *root;
    const char *bind;
    int port;
    bool drafts, open;
} S_opts;

typedef struct {
    S_opts o;
    httpd *http;
    char *base;       /* the base path of the last build's site.yaml */
    char *diags;      /* NULL, or what the last build printed when it failed */
    int lock_fd;      /* <out>.serve, locked while this serve runs */
    char *lock_path;
    int status;       /* of the last build */
    build_keep *keep; /* the last build's records, for the next (build.h) */
    /* The builder: a process forked before any thread starts, which runs
     * every rebuild. The pool forks the workers of a build, and a fork copies
     * only the forking thread: forked from this process, whose HTTP threads
     * may hold an allocator's lock at that moment (AddressSanitizer's, for
     * one), a worker could wait on it forever. -1: none (builds run here). */
    int builder_fd;
    pid_t builder;
    /* In the builder: its end of the socket, where build_opts.done answers
     * as soon as the output is published, so that the pages reload while
     * the build saves its cache and keeps its state; -1 in serve. */
    int answer_fd;
    bool answered; /* this build's answer went out */
} S_server;

static double S_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int S_usage(const char *msg)
{
    fprintf(stderr, "kvsite serve: %s\nusage: kvsite serve [-C DIR] [--port N] [--bind ADDR] "
                    "[--drafts] [--open]\n", msg);
    return 2;
}

static int S_parse(int argc, char **argv, S_opts *o)
{
    static const struct option longs[] = {{"port", required_argument, 0, 'p'},
                                          {"bind", required_argument, 0, 'b'},
                                          {"drafts", no_argument, 0, 'd'},
                                          {"open", no_argument, 0, 'O'},
                                          {0, 0, 0, 0}};
    *o = (S_opts){.root = ".", .bind = "127.0.0.1", .port = SERVE_DEFAULT_PORT};
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "C:", longs, NULL)) != -1) {
        switch (c) {
        case 'C': o->root = optarg; break;
        case 'b': o->bind = optarg; break;
        case 'd': o->drafts = true; break;
        case 'O': o->open = true; break;
        case 'p': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || !optarg[0] || n < 0 || n > 65535)
                return S_usage("--port needs a port number from 0 (any free one) to 65535");
            o->port = (int)n;
            break;
        }
        default: {
            char msg[120];
            snprintf(msg, sizeof msg, "unknown or incomplete option \"%s\"", argv[optind - 1]);
            return S_usage(msg);
        }
        }
    }
    if (optind < argc)
        return S_usage("unexpected argument");
    return 0;
}

/* The site's base path, as site.yaml says now ("" when it cannot be read:
 * the build says why). */
static char *S_base_path(const char *root)
{
    config cfg;
    diag_list dl;
    diag_list_init(&dl);
    config_defaults(&cfg);
    char *base = xstrdup(config_load(&cfg, root, &dl) == 0 && cfg.base_path ? cfg.base_path : "");
    config_free(&cfg);
    diag_list_free(&dl);
    return base;
}

/* A message between serve and its builder: a tag, a length, the bytes. */
static bool S_send(int fd, char kind, const char *p, size_t n)
{
    char head[1 + sizeof(size_t)];
    head[0] = kind;
    memcpy(head + 1, &n, sizeof n);
    return fs_send_all(fd, head, sizeof head) == 0 && fs_send_all(fd, p, n) == 0;
}

static bool S_recv(int fd, char *kind, buf *b)
{
    char head[1 + sizeof(size_t)];
    size_t n;
    buf_clear(b);
    if (fs_read_exact(fd, head, sizeof head) != 0)
        return false;
    *kind = head[0];
    memcpy(&n, head + 1, sizeof n);
    if (n > ((size_t)1 << 30))
        return false;
    buf_grow(b, n);
    if (fs_read_exact(fd, b->ptr, n) != 0)
        return false;
    b->len = n;
    b->ptr[n] = '\0';
    return true;
}

/* The builder's answer to serve's request: the status ('0' or '1') and
 * what the build printed when it failed. Once per build. */
static void S_answer(S_server *s)
{
    if (s->answered)
        return;
    s->answered = true;
    const char *d = s->diags ? s->diags : "";
    if (!S_send(s->answer_fd, s->status ? '1' : '0', d, strlen(d))) {
        /* serve is gone: the builder ends after this build */
        close(s->answer_fd);
        s->answer_fd = -1;
        return;
    }
    if (getenv("KVSITE_TRACE"))
        fprintf(stderr, "kvsite: trace: the builder answered serve: the pages reload\n");
}

/* build_opts.done: what the build printed goes to the pages, the same text. */
static void S_built(void *ctx, int status, const diag_list *dl)
{
    S_server *s = ctx;
    s->status = status;
    if (s->answer_fd < 0) { /* the builder's is of no use: serve reads site.yaml itself */
        free(s->base);
        s->base = S_base_path(s->o.root);
    }
    char *text = NULL;
    size_t len = 0;
    if (status != 0) {
        FILE *f = open_memstream(&text, &len);
        if (f) {
            diag_print(dl, f, false); /* the one printer, as on the terminal */
            if (!dl->n)
                fputs("the build failed (see the terminal)\n", f);
            fclose(f);
        }
    }
    free(s->diags);
    s->diags = status != 0 ? (text ? text : xstrdup("")) : NULL;
    if (status == 0)
        free(text);
    if (s->http)
        httpd_publish(s->http, s->base, s->diags);
    if (s->answer_fd >= 0)
        S_answer(s);
}

/* One build here: changed (NUL-separated paths beneath the project) names
 * what changed in content/ when known. */
static void S_build_here(S_server *s, const buf *changed, bool known)
{
    build_opts bo = {.root = s->o.root, .drafts = s->o.drafts, .done = S_built, .done_ctx = s,
                     .keep = s->keep};
    if (known) {
        bo.changed = buf_cstr(changed);
        bo.changed_len = changed->len;
        bo.changed_known = true;
    }
    build_run(&bo);
}

/* The builder's loop: a request ('k': the changes known, 'u': not) is one
 * build; its answer ('0' or '1', the status) carries what S_built made for
 * the pages, sent once the output is published: serve reloads the pages
 * while the build here saves its cache, keeps its state for the next and
 * frees the rest, and a request that comes meanwhile waits in the socket.
 * Ends when serve closes its end. */
static void S_builder_main(S_server *s, int fd)
{
    buf req = BUF_INIT;
    char kind;
    s->answer_fd = fd;
    while (s->answer_fd >= 0 && S_recv(fd, &kind, &req)) {
        s->answered = false;
        S_build_here(s, &req, kind == 'k'); /* build_opts.done answers (S_built) */
        if (s->answer_fd >= 0)
            S_answer(s); /* a build that ended before it told */
    }
    buf_free(&req);
}

/* Forks the builder (before any thread starts). Builds run here when it
 * cannot be made. */
static void S_builder_start(S_server *s, int *close_in_child, size_t nclose)
{
    int sv[2];
    s->builder_fd = -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(sv[0]);
        for (size_t i = 0; i < nclose; i++)
            if (close_in_child[i] >= 0)
                close(close_in_child[i]);
        S_builder_main(s, sv[1]);
        _exit(0);
    }
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        return;
    }
    s->builder = pid;
    s->builder_fd = sv[0];
}

/* Serve's end: the builder finishes the build under way and is reaped. */
static void S_builder_stop(S_server *s)
{
    if (s->builder_fd < 0)
        return;
    close(s->builder_fd);
    s->builder_fd = -1;
    while (waitpid(s->builder, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* A build; w (NULL for the first) has the changes that made it: the paths
 * beneath the project go with it (build_opts.changed) unless the watch does
 * not know them all. It runs in the builder when there is one. */
static void S_build(S_server *s, watch *w)
{
    buf changed = BUF_INIT;
    bool known = false;
    if (w && !w->wide && !w->full) {
        /* the watch's paths begin as fs_join(root, "content") does */
        char *probe = fs_join(s->o.root, "content");
        size_t skip = strlen(probe) - strlen("content");
        const char *p = buf_cstr(&w->changed), *end = p + w->changed.len;
        for (; p < end; p += strlen(p) + 1)
            if (!strncmp(p, probe, skip) && !strncmp(p + skip, "content/", 8))
                buf_put(&changed, p + skip, strlen(p + skip) + 1);
        free(probe);
        known = true;
    }
    if (w)
        watch_forget(w);
    char kind;
    buf answer = BUF_INIT;
    if (s->builder_fd < 0) {
        S_build_here(s, &changed, known);
    } else if (S_send(s->builder_fd, known ? 'k' : 'u', buf_cstr(&changed), changed.len) &&
               S_recv(s->builder_fd, &kind, &answer)) {
        /* what S_built made there, published here */
        s->status = kind != '0';
        free(s->base);
        s->base = S_base_path(s->o.root);
        free(s->diags);
        s->diags = s->status ? buf_detach(&answer) : NULL;
        if (s->http)
            httpd_publish(s->http, s->base, s->diags);
    } else {
        /* the builder is gone (killed): from now on builds run here */
        fprintf(stderr, "kvsite: warning: serve's builder process stopped; building here\n");
        close(s->builder_fd);
        s->builder_fd = -1;
        while (waitpid(s->builder, NULL, 0) < 0 && errno == EINTR)
            ;
        S_build_here(s, &changed, known);
    }
    buf_free(&answer);
    buf_free(&changed);
}

/* The output folder and the state folder beside it, and serve's lock there:
 * 0, or 2 with the reason printed (another serve holds it: its address). */
static int S_lock(S_server *s, char **out_abs)
{
    output o;
    output_init(&o);
    diag_list dl;
    diag_list_init(&dl);
    char real[4096];
    int rc = 0;
    if (!realpath(s->o.root, real)) {
        fprintf(stderr, "kvsite: error: project folder %s: %s\n", s->o.root, strerror(errno));
        rc = 2;
    } else if (output_setup(&o, s->o.root, real, NULL, true, &dl) != 0 ||
               output_state_dir(&o, &dl) != 0) {
        diag_print(&dl, stderr, false);
        rc = 2;
    }
    if (rc == 0) {
        s->lock_path = output_side_path(&o, "serve");
        s->lock_fd = open(s->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (s->lock_fd < 0) {
            fprintf(stderr, "kvsite: error: %s: %s\n", s->lock_path, strerror(errno));
            rc = 2;
        } else if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
            buf says = BUF_INIT;
            fs_read_regular(s->lock_path, 4096, &says);
            char *nl = strchr(buf_cstr(&says), '\n');
            if (nl)
                *nl = '\0';
            fprintf(stderr, "kvsite: error: this project is already served%s%s (another kvsite "
                            "serve holds %s); open that address, or stop it first\n",
                    says.len ? " at " : "", buf_cstr(&says), s->lock_path);
            buf_free(&says);
            close(s->lock_fd);
            s->lock_fd = -1;
            rc = 2;
        }
    }
    if (rc == 0)
        *out_abs = xstrdup(o.out_abs);
    output_free(&o);
    diag_list_free(&dl);
    return rc;
}

/* The address goes into the lock file, for a second serve to name. */
static void S_say_where(S_server *s, const char *url)
{
    char line[512];
    int n = snprintf(line, sizeof line, "%s\npid %ld\n", url, (long)getpid());
    if (ftruncate(s->lock_fd, 0) != 0 || pwrite(s->lock_fd, line, (size_t)n, 0) != n)
        fprintf(stderr, "kvsite: warning: %s: %s\n", s->lock_path, strerror(errno));
}

/* --open: the desktop's browser, in a process of its own that serve does not
 * wait for (a second fork: it is nobody's child here). */
static void S_open_browser(const char *url)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (fork() == 0) {
            execlp("xdg-open", "xdg-open", url, (char *)NULL);
            _exit(127);
        }
        _exit(0);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
}

/* The theme folder the site uses now: watched from the start and again
 * after every rebuild, since a site.yaml edit (theme: default) or a removed
 * templates/ folder brings the theme in while serving. A theme no longer used
 * stays watched: a change there rebuilds for nothing, no more. */
static void S_watch_theme(watch *w, const char *root)
{
    config cfg;
    diag_list dl;
    diag_list_init(&dl);
    config_defaults(&cfg);
    if (config_load(&cfg, root, &dl) == 0) {
        const char *theme = theme_dir(&cfg, root);
        if (theme)
            watch_add_tree(w, theme);
    }
    config_free(&cfg);
    diag_list_free(&dl);
}

/* What a change in means a rebuild: the project's inputs and the installed
 * folders it reads. */
static void S_watch_all(watch *w, const char *root)
{
    static const char *const dirs[] = {"content", "templates", "checks"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char *d = fs_join(root, dirs[i]);
        watch_add_tree(w, d);
        watch_add_file(w, root, dirs[i]); /* made (or replaced) later */
        free(d);
    }
    watch_add_file(w, root, "site.yaml");
    S_watch_theme(w, root);
    if (paths_get()->checks)
        watch_add_tree(w, paths_get()->checks);
}

/* The event loop: changes (debounced) rebuild, a signal ends it. Returns on
 * SIGINT or SIGTERM. */
static void S_loop(S_server *s, int sigfd, watch *w)
{
    watch_debounce db;
    watch_debounce_init(&db, S_QUIET_MS, S_SETTLE_MS, S_MAX_MS);
    for (;;) {
        long wait = watch_debounce_wait(&db, S_ms());
        if (wait == 0) {
            watch_debounce_fired(&db);
            S_build(s, w);
            S_watch_theme(w, s->o.root);
            continue;
        }
        struct pollfd p[2] = {{.fd = sigfd, .events = POLLIN}, {.fd = w->fd, .events = POLLIN}};
        int n = poll(p, 2, wait < 0 ? -1 : (int)wait);
        if (n < 0 && errno != EINTR)
            break;
        if (p[0].revents & POLLIN)
            break;
        if ((p[1].revents & POLLIN) && watch_read(w))
            watch_debounce_change(&db, S_ms(), w->saved);
    }
}

int serve_main(int argc, char **argv)
{
    S_server s = {.lock_fd = -1, .builder_fd = -1, .answer_fd = -1};
    int rc = S_parse(argc, argv, &s.o);
    char *out_abs = NULL;
    if (rc != 0 || (rc = S_lock(&s, &out_abs)) != 0) {
        free(s.lock_path);
        return rc;
    }
    s.keep = build_keep_new(); /* once this serve is the project's */
    /* Signals come through a descriptor the loop polls: blocked here, before
     * any thread starts, so that none of them takes one. The pool's workers
     * inherit the mask; the terminal's Ctrl-C reaches the whole group, and
     * the build under way finishes, its workers reaped. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    int sigfd = signalfd(-1, &sigs, SFD_CLOEXEC);
    watch w = {.fd = -1};
    if (sigfd < 0 || watch_open(&w) != 0) {
        fprintf(stderr, "kvsite: error: serve needs signalfd and inotify: %s\n", strerror(errno));
        rc = 2;
    } else {
        S_watch_all(&w, s.o.root); /* before the build: a save during it counts */
        hl_preload(); /* once here, not in the workers of every rebuild */
        S_build(&s, NULL);
        /* the rebuilds' process, with the first build's keep, before the
         * HTTP threads start; it has no use for the lock, the signals or
         * the watch (the signals stay blocked there: a Ctrl-C ends serve,
         * which closes the builder's end after the build under way) */
        int close_there[] = {s.lock_fd, sigfd, w.fd};
        S_builder_start(&s, close_there, sizeof close_there / sizeof *close_there);
        char err[256];
        s.http = httpd_start(out_abs, s.base ? s.base : "", s.o.bind, s.o.port, err, sizeof err);
        if (!s.http) {
            fprintf(stderr, "kvsite: error: %s\n", err);
            rc = 2;
        }
    }
    if (s.http) {
        httpd_publish(s.http, s.base, s.diags); /* the first build's outcome, now served */
        bool v6 = strchr(s.o.bind, ':') != NULL;
        char *url = xasprintf("http://%s%s%s:%d%s/", v6 ? "[" : "", s.o.bind, v6 ? "]" : "",
                              httpd_port(s.http), s.base);
        S_say_where(&s, url);
        fprintf(stderr, "kvsite: serving %s (%s) at %s\nkvsite: watching for changes; Ctrl-C "
                        "stops\n", s.o.root, out_abs, url);
        if (s.o.open)
            S_open_browser(url);
        S_loop(&s, sigfd, &w);
        fprintf(stderr, "kvsite: stopping\n");
        free(url);
        httpd_stop(s.http);
    }
    S_builder_stop(&s);
    if (w.fd >= 0)
        watch_close(&w);
    if (sigfd >= 0)
        close(sigfd);
    int cleared = ftruncate(s.lock_fd, 0); /* the address is no more */
    (void)cleared;
    close(s.lock_fd); /* the lock goes with it */
    free(s.lock_path);
    build_keep_free(s.keep);
    free(s.base);
    free(s.diags);
    free(out_abs);
    return rc;
}
