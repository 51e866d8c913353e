#include "search.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fsutil.h"

extern char **environ;

static bool S_runnable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *search_find(const config *c, const char *root, diag_list *dl)
{
    if (!c->search)
        return NULL;
    if (c->pagefind && c->pagefind[0]) {
        char *p = c->pagefind[0] == '/' ? xstrdup(c->pagefind) : fs_join(root, c->pagefind);
        if (S_runnable(p))
            return p;
        diag_warning(dl, "site.yaml", 0, 0,
                     "search.pagefind: %s is not a program that can be run: the site is "
                     "built without search",
                     p);
        free(p);
        return NULL;
    }
    const char *path = getenv("PATH");
    for (const char *d = path ? path : ""; *d;) {
        size_t n = strcspn(d, ":");
        if (n > 0) {
            char *dir = xstrndup(d, n);
            char *p = fs_join(dir, "pagefind");
            free(dir);
            if (S_runnable(p))
                return p;
            free(p);
        }
        d += n + (d[n] == ':');
    }
    diag_warning(dl, "site.yaml", 0, 0,
                 "search.enabled: no pagefind on PATH (nor search.pagefind): the site is built "
                 "without search; `make deps` installs Pagefind under tools/npm");
    return NULL;
}

static double S_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Keeps the last SEARCH_OUTPUT_MAX bytes of what was read. */
static void S_keep_tail(buf *out, const char *data, size_t n)
{
    buf_put(out, data, n);
    if (out->len > 2 * SEARCH_OUTPUT_MAX) {
        size_t drop = out->len - SEARCH_OUTPUT_MAX;
        memmove(out->ptr, out->ptr + drop, out->len - drop);
        buf_truncate(out, out->len - drop);
    }
}

/* Starts prog with its stdout and stderr into a pipe (*rfd), stdin from
 * /dev/null, in a process group of its own (a wrapper's children are killed
 * with it). Returns the pid, or -1 with errno set. */
static pid_t S_spawn(char *const argv[], int *rfd)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    posix_spawnattr_init(&at);
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, SIGTERM);
    sigaddset(&dfl, SIGINT);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        errno = rc;
        return -1;
    }
    *rfd = p[0];
    return pid;
}

int search_index(const char *prog, const char *site_dir, double timeout, diag_list *dl)
{
    char *argv[] = {(char *)prog, "--site", (char *)site_dir, "--output-subdir", SEARCH_DIR,
                    NULL};
    int fd = -1;
    pid_t pid = S_spawn(argv, &fd);
    if (pid < 0) {
        diag_error(dl, NULL, 0, 0, "search: cannot run %s: %s", prog, strerror(errno));
        return -1;
    }
    buf out = BUF_INIT;
    double deadline = S_now() + timeout;
    bool timed_out = false;
    for (;;) {
        double left = deadline - S_now();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, left > 1000 ? 1000000 : (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue; /* the deadline is checked above */
        char chunk[4096];
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* end of output: the program is done */
        S_keep_tail(&out, chunk, (size_t)n);
    }
    close(fd);
    if (timed_out)
        kill(-pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    /* what it printed, for the error: its last SEARCH_OUTPUT_MAX bytes, on
     * one line (a diagnostic is one line) */
    const char *tail = buf_cstr(&out);
    if (out.len > SEARCH_OUTPUT_MAX)
        tail += out.len - SEARCH_OUTPUT_MAX;
    buf one = BUF_INIT;
    for (const char *p = tail; *p; p++) {
        if (*p == '\n') {
            if (p[1])
                buf_puts(&one, " | ");
        } else if (*p != '\r') {
            buf_putc(&one, *p);
        }
    }
    const char *said = one.len ? buf_cstr(&one) : "nothing";
    int rc = 0;
    char *entry = xasprintf("%s/%s/pagefind-entry.json", site_dir, SEARCH_DIR);
    if (timed_out) {
        diag_error(dl, NULL, 0, 0, "search: %s did not finish in search.timeout (%g s); it "
                   "printed: %s", prog, timeout, said);
        rc = -1;
    } else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        diag_error(dl, NULL, 0, 0, "search: %s failed (%s %d); it printed: %s", prog,
                   WIFEXITED(st) ? "exit status" : "signal",
                   WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), said);
        rc = -1;
    } else if (!fs_exists(entry)) {
        diag_error(dl, NULL, 0, 0, "search: %s wrote no %s/pagefind-entry.json; it printed: %s",
                   prog, SEARCH_DIR, said);
        rc = -1;
    }
    free(entry);
    buf_free(&one);
    buf_free(&out);
    return rc;
}
