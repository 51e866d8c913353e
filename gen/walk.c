#include "walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

/* The walk's shared state: the folders waiting to be listed. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t more;   /* folders were queued, or the walk ended */
    char **queue;          /* relative paths, malloc'ed; "" is the top */
    size_t n, cap;
    size_t busy;           /* threads listing a folder now */
    bool done;
    int root;
    const atomic_bool *stop;
    atomic_bool other;
} S_walk;

/* One thread's share: what it found, merged by walk_tree at the end. */
typedef struct {
    S_walk *w;
    pthread_t thread;
    bool started;
    walk_list found;
    char **dirs;           /* the folder being listed's subfolders */
    size_t ndirs, capdirs;
    /* the folder being listed */
    int fd;
    const char *rel;
    size_t entries;
} S_part;

static int S_entry(const char *name, unsigned char type, void *ctx)
{
    S_part *p = ctx;
    p->entries++;
    if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(p->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            return 0; /* gone since the folder was read */
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
    }
    if (type == DT_DIR) {
        if (p->ndirs == p->capdirs)
            p->dirs = xrealloc(p->dirs, (p->capdirs = p->capdirs ? 2 * p->capdirs : 16) *
                                            sizeof *p->dirs);
        p->dirs[p->ndirs++] = p->rel[0] ? fs_join(p->rel, name) : xstrdup(name);
    } else if (type == DT_REG) {
        if (p->rel[0]) {
            buf_puts(&p->found.files, p->rel);
            buf_putc(&p->found.files, '/');
        }
        buf_put(&p->found.files, name, strlen(name) + 1);
    } else {
        atomic_store(&p->w->other, true);
        return 1; /* the walk ends here */
    }
    return 0;
}

static void S_list(S_part *p, const char *rel)
{
    S_walk *w = p->w;
    int fd = rel[0] ? fs_open_beneath(w->root, rel, O_RDONLY | O_DIRECTORY)
                    : fcntl(w->root, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return; /* gone, or a link planted where a folder was: not followed */
    p->fd = fd;
    p->rel = rel;
    p->entries = 0;
    fs_each_entry(fd, S_entry, p);
    if (p->entries == 0 && rel[0])
        buf_put(&p->found.empty_dirs, rel, strlen(rel) + 1);
    close(fd);
}

static bool S_stopped(const S_walk *w)
{
    return atomic_load_explicit(&w->other, memory_order_relaxed) ||
           (w->stop && atomic_load_explicit(w->stop, memory_order_relaxed));
}

/* Takes folders from the queue until none is left and no thread is listing
 * one (that could queue more), or the walk is stopped. */
static void *S_run(void *arg)
{
    S_part *p = arg;
    S_walk *w = p->w;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->n == 0 && w->busy > 0 && !w->done)
            pthread_cond_wait(&w->more, &w->mu);
        if (w->done || w->n == 0) {
            w->done = true;
            pthread_cond_broadcast(&w->more);
            break;
        }
        char *rel = w->queue[--w->n];
        w->busy++;
        pthread_mutex_unlock(&w->mu);
        S_list(p, rel);
        free(rel);
        pthread_mutex_lock(&w->mu);
        w->busy--;
        if (p->ndirs > 0) {
            if (w->n + p->ndirs > w->cap)
                w->queue = xrealloc(w->queue, (w->cap = 2 * (w->n + p->ndirs)) * sizeof *w->queue);
            memcpy(w->queue + w->n, p->dirs, p->ndirs * sizeof *p->dirs);
            w->n += p->ndirs;
            p->ndirs = 0;
        }
        if (S_stopped(w))
            w->done = true;
        pthread_cond_broadcast(&w->more);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

void walk_list_init(walk_list *l)
{
    buf_init(&l->files);
    buf_init(&l->empty_dirs);
    l->other = false;
}

void walk_list_free(walk_list *l)
{
    buf_free(&l->files);
    buf_free(&l->empty_dirs);
}

int walk_tree(const char *dir, unsigned threads, const atomic_bool *stop, walk_list *l)
{
    int root = fs_root_open(dir);
    if (root < 0)
        return -1;
    if (threads < 1)
        threads = 1;
    if (threads > WALK_THREADS)
        threads = WALK_THREADS;
    S_walk w = {.cap = 64, .root = root, .stop = stop};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.more, NULL);
    atomic_init(&w.other, false);
    w.queue = xmalloc(w.cap * sizeof *w.queue);
    w.queue[w.n++] = xstrdup("");
    S_part *parts = xcalloc(threads, sizeof *parts);
    for (unsigned i = 0; i < threads; i++) {
        parts[i].w = &w;
        walk_list_init(&parts[i].found);
    }
    /* the caller's thread is the first; the others wait for folders */
    for (unsigned i = 1; i < threads; i++)
        parts[i].started = pthread_create(&parts[i].thread, NULL, S_run, &parts[i]) == 0;
    S_run(&parts[0]);
    for (unsigned i = 0; i < threads; i++) {
        if (parts[i].started)
            pthread_join(parts[i].thread, NULL);
        buf_put(&l->files, parts[i].found.files.ptr, parts[i].found.files.len);
        buf_put(&l->empty_dirs, parts[i].found.empty_dirs.ptr, parts[i].found.empty_dirs.len);
        walk_list_free(&parts[i].found);
        for (size_t k = 0; k < parts[i].ndirs; k++)
            free(parts[i].dirs[k]);
        free(parts[i].dirs);
    }
    for (size_t k = 0; k < w.n; k++) /* a stopped walk's leftovers */
        free(w.queue[k]);
    free(w.queue);
    free(parts);
    l->other = l->other || atomic_load(&w.other);
    pthread_cond_destroy(&w.more);
    pthread_mutex_destroy(&w.mu);
    close(root);
    return 0;
}
