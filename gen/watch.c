#include "watch.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "buf.h"
#include "fsutil.h"

#define S_MASK                                                                                   \
    (IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |       \
     IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW)

int watch_open(watch *w)
{
    memset(w, 0, sizeof *w);
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    return w->fd < 0 ? -1 : 0;
}

/* The slot of watch descriptor wd, or n when it has none. */
static size_t S_slot(const watch *w, int wd)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->wds[i] == wd)
            return i;
    return w->n;
}

/* Watches the one folder at path; false when it cannot be (not a folder, a
 * link, the limit). */
static bool S_add_dir(watch *w, const char *path, bool whole)
{
    if (w->n >= WATCH_MAX_DIRS) {
        w->full = true;
        return false;
    }
    int wd = inotify_add_watch(w->fd, path, S_MASK);
    if (wd < 0)
        return false;
    size_t i = S_slot(w, wd); /* the same folder twice: one slot */
    if (i < w->n) {
        w->whole[i] = w->whole[i] || whole;
        return true;
    }
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 16;
        w->wds = xrealloc(w->wds, w->cap * sizeof *w->wds);
        w->paths = xrealloc(w->paths, w->cap * sizeof *w->paths);
        w->whole = xrealloc(w->whole, w->cap * sizeof *w->whole);
    }
    w->wds[w->n] = wd;
    w->paths[w->n] = xstrdup(path);
    w->whole[w->n] = whole;
    w->n++;
    return true;
}

void watch_add_tree(watch *w, const char *path)
{
    /* a stack of folders, not recursion: the depth is the tree's */
    size_t cap = 16, n = 0;
    char **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = xstrdup(path);
    while (n > 0) {
        char *dir = stack[--n];
        DIR *d = S_add_dir(w, dir, true) ? opendir(dir) : NULL;
        for (struct dirent *e; d && (e = readdir(d));) {
            if (e->d_type != DT_DIR || watch_ignored(e->d_name))
                continue; /* links are not followed (DT_LNK), hidden folders not watched */
            if (n == cap)
                stack = xrealloc(stack, (cap *= 2) * sizeof *stack);
            stack[n++] = fs_join(dir, e->d_name);
        }
        if (d)
            closedir(d);
        free(dir);
    }
    free(stack);
}

void watch_add_file(watch *w, const char *dir, const char *name)
{
    w->files = xrealloc(w->files, (w->nfiles + 1) * sizeof *w->files);
    w->files[w->nfiles++] = xstrdup(name);
    S_add_dir(w, dir, false);
}

bool watch_ignored(const char *name)
{
    size_t n = strlen(name);
    static const char *const ends[] = {"~", ".swp", ".swx", ".swo", ".tmp", ".kate-swp"};
    if (n == 0 || name[0] == '.' || !strcmp(name, "4913") || (name[0] == '#' && name[n - 1] == '#'))
        return true;
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
        size_t k = strlen(ends[i]);
        if (n >= k && !strcmp(name + n - k, ends[i]))
            return true;
    }
    return false;
}

static bool S_named(const watch *w, const char *name)
{
    for (size_t i = 0; i < w->nfiles; i++)
        if (!strcmp(w->files[i], name))
            return true;
    return false;
}

/* One event: whether it is a change that counts. */
static bool S_counts(watch *w, const struct inotify_event *ev)
{
    if (ev->mask & IN_Q_OVERFLOW)
        return true; /* events were lost: rebuild, the build finds what changed */
    size_t i = S_slot(w, ev->wd);
    if (i == w->n)
        return false;
    if (ev->mask & IN_IGNORED) { /* the folder went: its slot is free */
        free(w->paths[i]);
        w->n--;
        w->wds[i] = w->wds[w->n];
        w->paths[i] = w->paths[w->n];
        w->whole[i] = w->whole[w->n];
        return false;
    }
    if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF))
        return w->whole[i];
    const char *name = ev->len ? ev->name : "";
    if (!w->whole[i]) {
        if (!name[0] || !S_named(w, name))
            return false;
        if ((ev->mask & IN_ISDIR) && (ev->mask & (IN_CREATE | IN_MOVED_TO))) {
            char *sub = fs_join(w->paths[i], name); /* a watched folder made later */
            watch_add_tree(w, sub);
            free(sub);
        }
        return true;
    }
    if (ev->mask & IN_ISDIR) {
        if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && !watch_ignored(name)) {
            char *sub = fs_join(w->paths[i], name);
            watch_add_tree(w, sub);
            free(sub);
        }
        return !(ev->mask & (IN_ATTRIB | IN_MODIFY | IN_CLOSE_WRITE)) && !watch_ignored(name);
    }
    return name[0] && !watch_ignored(name);
}

/* One event into w->changed or w->wide (before S_counts, which frees the
 * slot of a folder that went). */
static void S_note(watch *w, const struct inotify_event *ev)
{
    if (w->wide)
        return;
    if (ev->mask & IN_Q_OVERFLOW) {
        w->wide = true;
        return;
    }
    size_t i = S_slot(w, ev->wd);
    if (i == w->n)
        return;
    const char *name = ev->len ? ev->name : "";
    /* a folder watched whole went, or one came, went or moved in it (or,
     * in a folder watched for some names, one of those names) */
    bool folder = (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) ||
                  ((ev->mask & IN_ISDIR) &&
                   (ev->mask & (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)));
    if (folder && (w->whole[i] || (name[0] && S_named(w, name)))) {
        w->wide = true;
        return;
    }
    /* what else has a name in a folder watched whole is noted by it: a
     * file, or a folder whose own times changed */
    if (folder || !w->whole[i] || !name[0])
        return;
    if (w->changed.len > WATCH_MAX_CHANGED) {
        w->wide = true;
        return;
    }
    buf_puts(&w->changed, w->paths[i]);
    buf_putc(&w->changed, '/');
    buf_put(&w->changed, name, strlen(name) + 1);
}

void watch_forget(watch *w)
{
    buf_clear(&w->changed);
    w->wide = false;
}

bool watch_read(watch *w)
{
    /* aligned as struct inotify_event wants */
    _Alignas(struct inotify_event) char chunk[16384];
    bool changed = false;
    for (;;) {
        ssize_t got = read(w->fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        for (char *p = chunk; p < chunk + got;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            S_note(w, ev);
            if (S_counts(w, ev)) {
                changed = true;
                w->saved = !(ev->mask & IN_ISDIR) && (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO));
            }
            p += sizeof *ev + ev->len;
        }
    }
    return changed;
}

void watch_close(watch *w)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    for (size_t i = 0; i < w->n; i++)
        free(w->paths[i]);
    for (size_t i = 0; i < w->nfiles; i++)
        free(w->files[i]);
    free(w->wds);
    free(w->paths);
    free(w->whole);
    free(w->files);
    buf_free(&w->changed);
    w->wds = NULL;
    w->paths = NULL;
    w->whole = NULL;
    w->files = NULL;
    w->n = w->cap = w->nfiles = 0;
}

/* ---------- the debounce ---------- */

void watch_debounce_init(watch_debounce *d, long quiet_ms, long settle_ms, long max_ms)
{
    memset(d, 0, sizeof *d);
    d->quiet_ms = quiet_ms;
    d->settle_ms = settle_ms;
    d->max_ms = max_ms;
}

void watch_debounce_change(watch_debounce *d, double now, bool saved)
{
    if (!d->pending)
        d->first = now;
    d->pending = true;
    d->last = now;
    d->wait_ms = saved ? d->settle_ms : d->quiet_ms;
}

long watch_debounce_wait(const watch_debounce *d, double now)
{
    if (!d->pending)
        return -1;
    double quiet = d->last + (double)d->wait_ms, cap = d->first + (double)d->max_ms;
    double due = quiet < cap ? quiet : cap;
    if (now >= due)
        return 0;
    long ms = (long)(due - now + 0.999); /* rounded up: never early */
    return ms < 1 ? 1 : ms;
}

void watch_debounce_fired(watch_debounce *d) { d->pending = false; }
