#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

/* ---------- the writer ---------- */

int output_write(const output_dest *d, const char *rel, const void *data, size_t len,
                 const char *file, diag_list *dl, uint64_t *bytes, struct stat *st)
{
    size_t counted = len ? len : 1;
    if (!d->dir) { /* kvsite check writes nothing */
        *bytes += counted;
        return 0;
    }
    if (!data)
        data = "";
    if (d->same_dir) {
        char *published = fs_join(d->same_dir, rel);
        bool same = fs_same(published, data, len);
        free(published);
        if (same) {
            *bytes += counted;
            return 0;
        }
    }
    char *path = fs_join(d->dir, rel);
    int rc = fs_sync_file_stat(path, data, len, st);
    int err = errno;
    free(path);
    if (rc != 0) {
        diag_error(dl, file, 0, 0, "cannot write %s: %s", rel, strerror(err));
        errno = err;
        return -1;
    }
    *bytes += counted;
    return 1;
}

char *output_rel(const char *url)
{
    size_t n = strlen(url);
    return n && url[n - 1] == '/' ? xasprintf("%sindex.html", url + 1) : xstrdup(url + 1);
}

/* ---------- location ---------- */

void output_init(output *o)
{
    memset(o, 0, sizeof *o);
    o->lock_fd = -1;
    strmap_init(&o->outputs);
    buf_init(&o->extras);
    buf_init(&o->scan.files);
    buf_init(&o->scan.empty_dirs);
}

static char *S_absolute(const char *path)
{
    char real[PATH_MAX];
    if (realpath(path, real))
        return xstrdup(real);
    /* not there yet: resolve the parent */
    char *copy = xstrdup(path);
    size_t n = strlen(copy);
    while (n > 1 && copy[n - 1] == '/')
        copy[--n] = '\0';
    char *slash = strrchr(copy, '/');
    const char *base = slash ? slash + 1 : copy;
    const char *parent = slash ? (slash == copy ? "/" : copy) : ".";
    if (slash && slash != copy)
        *slash = '\0';
    char *res = NULL;
    if (realpath(parent, real) && strcmp(base, ".") && strcmp(base, ".."))
        res = xasprintf("%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
    free(copy);
    return res;
}

static bool S_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* The lock and the staging folder, beside the output folder. */
static int S_lock_and_stage(output *o, diag_list *dl)
{
    char *slash = strrchr(o->out_abs, '/');
    char *parent = slash == o->out_abs ? xstrdup("/") : xstrndup(o->out_abs, (size_t)(slash - o->out_abs));
    /* one build at a time per output folder */
    char *lock = xasprintf("%s/.%s.lock", parent, slash + 1);
    o->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (o->lock_fd < 0 || flock(o->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        diag_error(dl, NULL, 0, 0, "%s: %s", lock,
                   errno == EWOULDBLOCK ? "another kvsite build is writing this output"
                                        : strerror(errno));
        free(lock);
        free(parent);
        return -1;
    }
    free(lock);
    /* The staging folder is the output of the build before the last one: the
     * build rewrites only what changed in it and then swaps it with the
     * output. Reusing files keeps the file system from allocating thousands
     * of inodes per build. */
    o->staging = xasprintf("%s/.%s.prev", parent, slash + 1);
    free(parent);
    struct stat sst;
    if (lstat(o->staging, &sst) == 0 && !S_ISDIR(sst.st_mode))
        fs_remove_tree(o->staging);

    if (mkdir(o->staging, 0777) != 0 && errno != EEXIST) {
        diag_error(dl, NULL, 0, 0, "cannot create the staging folder %s: %s", o->staging,
                   strerror(errno));
        free(o->staging);
        o->staging = NULL;
        return -1;
    }
    return 0;
}

int output_setup(output *o, const char *root, const char *root_real, const char *out,
                 bool check_only, diag_list *dl)
{
    char *want = out ? (out[0] == '/' ? xstrdup(out) : fs_join(root, out)) : fs_join(root, "site");
    struct stat lst;
    if (lstat(want, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        diag_error(dl, NULL, 0, 0,
                   "output %s is a symbolic link: refused (it would replace the folder it "
                   "points to)", want);
        free(want);
        return -1;
    }
    o->out_abs = S_absolute(want);
    if (!o->out_abs) {
        diag_error(dl, NULL, 0, 0, "output folder %s: its parent folder does not exist", want);
        free(want);
        return -1;
    }
    free(want);
    const char *protect[] = {"content", "templates", "checks"};
    bool bad = S_within(root_real, o->out_abs);
    for (size_t i = 0; i < 3 && !bad; i++) {
        char *d = fs_join(root_real, protect[i]);
        bad = S_within(o->out_abs, d);
        free(d);
    }
    if (bad) {
        diag_error(dl, NULL, 0, 0,
                   "refusing to write the site to %s: it would replace the project or its sources",
                   o->out_abs);
        return -1;
    }
    struct stat st;
    if (lstat(o->out_abs, &st) == 0 && !S_ISDIR(st.st_mode)) {
        diag_error(dl, NULL, 0, 0, "output %s exists and is not a folder", o->out_abs);
        return -1;
    }
    return check_only ? 0 : S_lock_and_stage(o, dl);
}

char *output_side_path(const output *o, const char *what)
{
    char *slash = strrchr(o->out_abs, '/');
    return xasprintf("%.*s/.%s.%s", (int)(slash - o->out_abs), o->out_abs, slash + 1, what);
}

/* ---------- the staging folder's scan ---------- */

static void *S_scan_staging(void *arg)
{
    output_scan *sc = arg;
    size_t cap = 64, n = 0;
    char **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = xstrdup("");
    while (n > 0) {
        char *rel = stack[--n];
        char *path = rel[0] ? fs_join(sc->dir, rel) : xstrdup(sc->dir);
        DIR *d = sc->links || atomic_load_explicit(&sc->stop, memory_order_relaxed) ? NULL : opendir(path);
        if (d) {
            struct dirent *e;
            size_t entries = 0;
            while ((e = readdir(d)) && !sc->links) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                entries++;
                unsigned char type = e->d_type;
                if (type == DT_UNKNOWN) {
                    struct stat st;
                    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
                        continue;
                    type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
                }
                if (type == DT_DIR) {
                    if (n == cap)
                        stack = xrealloc(stack, (cap *= 2) * sizeof *stack);
                    stack[n++] = rel[0] ? fs_join(rel, e->d_name) : xstrdup(e->d_name);
                } else if (type == DT_REG) {
                    if (rel[0]) {
                        buf_puts(&sc->files, rel);
                        buf_putc(&sc->files, '/');
                    }
                    buf_put(&sc->files, e->d_name, strlen(e->d_name) + 1);
                } else {
                    sc->links = true;
                }
            }
            if (entries == 0 && rel[0])
                buf_put(&sc->empty_dirs, rel, strlen(rel) + 1);
            closedir(d);
        }
        free(path);
        free(rel);
    }
    while (n > 0)
        free(stack[--n]);
    free(stack);
    return NULL;
}

static void S_scan_reset(output_scan *sc, const char *dir)
{
    buf_free(&sc->files);
    buf_free(&sc->empty_dirs);
    memset(sc, 0, sizeof *sc);
    sc->dir = dir;
    buf_init(&sc->files);
    buf_init(&sc->empty_dirs);
}

void output_scan_start(output *o)
{
    output_scan *sc = &o->scan;
    S_scan_reset(sc, o->staging);
    sc->started = pthread_create(&sc->thread, NULL, S_scan_staging, sc) == 0;
}

void output_scan_stop(output *o)
{
    output_scan *sc = &o->scan;
    if (sc->started) {
        atomic_store(&sc->stop, true);
        pthread_join(sc->thread, NULL);
        sc->started = false;
    }
}

void output_scan_finish(output *o)
{
    output_scan *sc = &o->scan;
    if (!sc->done) {
        if (sc->started)
            pthread_join(sc->thread, NULL);
        else {
            S_scan_reset(sc, o->staging);
            S_scan_staging(sc);
        }
        sc->started = false;
        sc->done = true;
    }
    if (sc->links) {
        /* links planted in the staging folder could lead writes out of it */
        fs_remove_tree(o->staging);
        mkdir(o->staging, 0777);
        buf_clear(&sc->files);
        buf_clear(&sc->empty_dirs);
        sc->links = false;
    }
}

/* ---------- where files go ---------- */

int output_begin_incremental(output *o, diag_list *dl)
{
    o->incr_dir = output_side_path(o, "incr");
    fs_remove_tree(o->incr_dir);
    if (mkdir(o->incr_dir, 0777) != 0) {
        diag_error(dl, NULL, 0, 0, "cannot create %s: %s", o->incr_dir, strerror(errno));
        return -1;
    }
    o->incremental = true;
    return 0;
}

output_dest output_dest_of(const output *o)
{
    output_dest d = {.dir = o->incremental ? o->incr_dir : o->staging,
                     .same_dir = o->incremental ? o->out_abs : NULL};
    return d;
}

bool output_writes(const output *o) { return o->staging || o->incremental; }

void output_note(output *o, const char *rel) { strmap_put(&o->outputs, rel, (void *)1); }

void output_note_extra(output *o, const char *rel)
{
    buf_put(&o->extras, rel, strlen(rel) + 1);
    output_note(o, rel);
}

int output_emit(output *o, const char *rel, const void *data, size_t len, diag_list *dl)
{
    output_note_extra(o, rel);
    output_dest d = output_dest_of(o);
    return output_write(&d, rel, data, len, NULL, dl, &o->extra_bytes, NULL) < 0 ? -1 : 0;
}

/* ---------- sweep and publish ---------- */

/* Removes the folders above path (in the staging folder) while they are empty. */
static void S_prune(const output *o, char *path)
{
    for (char *slash = strrchr(path, '/'); slash && slash > path + strlen(o->staging);
         slash = strrchr(path, '/')) {
        *slash = '\0';
        if (rmdir(path) != 0)
            break;
    }
}

void output_sweep(output *o)
{
    const output_scan *sc = &o->scan;
    const char *p = buf_cstr(&sc->files), *end = p + sc->files.len;
    for (; p < end; p += strlen(p) + 1) {
        if (strmap_get(&o->outputs, p))
            continue;
        char *path = fs_join(o->staging, p);
        unlink(path);
        S_prune(o, path);
        free(path);
    }
    p = buf_cstr(&sc->empty_dirs), end = p + sc->empty_dirs.len;
    for (; p < end; p += strlen(p) + 1) {
        char *path = fs_join(o->staging, p);
        if (rmdir(path) == 0)
            S_prune(o, path);
        free(path);
    }
}

int output_publish(output *o, diag_list *dl)
{
    struct stat st;
    if (lstat(o->out_abs, &st) != 0) {
        if (rename(o->staging, o->out_abs) != 0)
            goto fail;
        return 0;
    }
    if (renameat2(AT_FDCWD, o->staging, AT_FDCWD, o->out_abs, RENAME_EXCHANGE) != 0) {
        /* file systems without RENAME_EXCHANGE: two renames */
        char *old = xasprintf("%s.old-%ld", o->staging, (long)getpid());
        if (rename(o->out_abs, old) != 0) {
            free(old);
            goto fail;
        }
        if (rename(o->staging, o->out_abs) != 0) {
            rename(old, o->out_abs);
            free(old);
            goto fail;
        }
        rename(old, o->staging);
        free(old);
    }
    return 0;
fail:
    diag_error(dl, NULL, 0, 0, "cannot publish %s: %s", o->out_abs, strerror(errno));
    return -1;
}

int output_publish_incremental(output *o, const char *prev, size_t prev_len, diag_list *dl)
{
    size_t moved = 0;
    if (fs_move_into(o->incr_dir, o->out_abs, &moved) != 0) {
        diag_error(dl, NULL, 0, 0, "cannot publish %s: %s", o->out_abs, strerror(errno));
        return -1;
    }
    const char *p = prev, *end = p + prev_len;
    for (; p && p < end; p += strlen(p) + 1)
        if (!strmap_get(&o->outputs, p))
            fs_remove_in(o->out_abs, p);
    return 0;
}

/* ---------- the end ---------- */

void output_done(output *o)
{
    if (o->incr_dir)
        fs_remove_tree(o->incr_dir);
    if (o->scan.started)
        pthread_join(o->scan.thread, NULL);
    o->scan.started = false;
    buf_free(&o->scan.files);
    buf_free(&o->scan.empty_dirs);
}

void output_unlock(output *o)
{
    if (o->lock_fd >= 0)
        close(o->lock_fd);
    o->lock_fd = -1;
}

void output_free(output *o)
{
    strmap_free(&o->outputs);
    buf_free(&o->extras);
    buf_free(&o->scan.files);
    buf_free(&o->scan.empty_dirs);
    free(o->incr_dir);
    free(o->out_abs);
    free(o->staging);
}
