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
#include "sealed.h"
#include "walk.h"

/* ---------- the writer ---------- */

/* What this process has counted through output_write: a worker's own pages,
 * or the parent's files. */
static uint64_t S_total;

void output_count(uint64_t bytes) { S_total += bytes; }

void output_cap_error(diag_list *dl, const char *file, uint64_t total, uint64_t cap)
{
    diag_error(dl, file, 0, 0, "%s (%llu > %llu bytes)", OUTPUT_CAP_MSG,
               (unsigned long long)total, (unsigned long long)cap);
}

/* Whether dir/rel holds data, named from fd when it is open: one stat when
 * the folder's table lists the file with that stat and data's digest dg,
 * otherwise its bytes compared. st gets the file's stat when it does. */
static bool S_same_in(const char *dir, int fd, const outrec *rec, const char *rel,
                      const void *data, size_t len, const outrec_digest *dg, struct stat *st)
{
    if (fd > 0 && rec && dg) {
        struct stat here;
        if (fstatat(fd, rel, &here, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(here.st_mode) &&
            outrec_holds(rec, rel, &here, dg)) {
            if (st)
                *st = here;
            return true;
        }
    }
    if (fd > 0)
        return fs_same_at(fd, rel, data, len, st);
    char *path = fs_join(dir, rel);
    bool same = fs_same_at(AT_FDCWD, path, data, len, st);
    free(path);
    return same;
}

int output_write(const output_dest *d, const char *rel, const void *data, size_t len,
                 const outrec_digest *dg, const char *file, diag_list *dl, uint64_t *bytes,
                 struct stat *st)
{
    size_t counted = len ? len : 1;
    if (!d->dir) { /* kvsite check writes nothing */
        *bytes += counted;
        return 0;
    }
    if (d->cap && S_total + counted > d->cap) {
        /* refused before anything is written: a site over the cap must not
         * fill the disk first. Counted all the same: the parent adds up the
         * pages' bytes in page order (pool_cap), and where that sum passes
         * the cap must not depend on which worker refused first */
        output_cap_error(dl, file, S_total + counted, d->cap);
        *bytes += counted;
        errno = EFBIG;
        return -1;
    }
    S_total += counted;
    if (!data)
        data = "";
    if (d->same_dir && S_same_in(d->same_dir, d->same_fd, NULL, rel, data, len, NULL, NULL)) {
        *bytes += counted;
        return 0;
    }
    /* the same bytes stay, unless the file has other names (a hard link
     * planted there would be published as a page: written anew) */
    struct stat here;
    if (d->dir_fd > 0 && S_same_in(d->dir, d->dir_fd, d->dir_rec, rel, data, len, dg, &here) &&
        here.st_nlink <= 1) {
        if (st)
            *st = here;
        *bytes += counted;
        return 1;
    }
    char *path = fs_join(d->dir, rel);
    int rc = d->dir_fd > 0 ? fs_put_file_stat(path, data, len, st)
                           : fs_sync_file_stat(path, data, len, st);
    int err = errno;
    free(path);
    if (rc != 0) {
        if (err == ENOSPC || err == EDQUOT)
            diag_error(dl, file, 0, 0,
                       OUTPUT_FULL_MSG ": cannot write %s (%s); the output is replaced whole "
                       "or not at all, so the disk needs room for a second copy of it",
                       rel, strerror(err));
        else
            diag_error(dl, file, 0, 0, "cannot write %s: %s", rel, strerror(err));
        errno = err;
        return -1;
    }
    *bytes += counted;
    return 1;
}

bool output_differs(const output_dest *d, const char *rel, const void *data, size_t len,
                    const outrec_digest *dg, struct stat *same_st)
{
    struct stat st;
    if (!d->diff_dir ||
        !S_same_in(d->diff_dir, d->diff_fd, d->diff_rec, rel, data ? data : "", len, dg, &st))
        return true;
    if (same_st)
        *same_st = st;
    return false;
}

static int S_open_dir(const char *dir)
{
    int fd = dir ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd == 0) { /* 0 means none in an output_dest: moved to another number */
        fd = fcntl(0, F_DUPFD_CLOEXEC, 1);
        close(0);
    }
    return fd > 0 ? fd : 0;
}

void output_dest_open(output_dest *d)
{
    d->dir_fd = S_open_dir(d->dir);
    d->same_fd = S_open_dir(d->same_dir);
    d->diff_fd = S_open_dir(d->diff_dir);
}

void output_dest_close(output_dest *d)
{
    int *fds[] = {&d->dir_fd, &d->same_fd, &d->diff_fd};
    for (size_t i = 0; i < 3; i++) {
        if (*fds[i] > 0)
            close(*fds[i]);
        *fds[i] = 0;
    }
}

char *output_rel(const char *url)
{
    size_t n = strlen(url);
    return n && url[n - 1] == '/' ? xasprintf("%sindex.html", url + 1) : xstrdup(url + 1);
}

/* ---------- location ---------- */

void output_init(output *o)
{
    S_total = 0; /* one build's count: kvsite serve builds again and again */
    memset(o, 0, sizeof *o);
    o->lock_fd = -1;
    strmap_init(&o->outputs);
    buf_init(&o->extras);
    buf_init(&o->scan.files);
    buf_init(&o->scan.empty_dirs);
    buf_init(&o->published.files);
    buf_init(&o->published.empty_dirs);
    buf_init(&o->dirty);
    strmap_init(&o->dirty_set);
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
    if (!strcmp(dir, "/"))
        return true; /* "/" + "/" would never match */
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* kvsite's state folder beside the output ("<parent>/.kvsite"): made on
 * demand, refused when it is a link or not a folder (writes through it
 * could land anywhere). It stays on the output's file system: the staging
 * folder in it is swapped with the output by one rename. */
int output_state_dir(const output *o, diag_list *dl)
{
    struct stat st;
    if (mkdir(o->state_dir, 0777) != 0 && errno != EEXIST) {
        diag_error(dl, NULL, 0, 0, "cannot create kvsite's state folder %s: %s", o->state_dir,
                   strerror(errno));
        return -1;
    }
    if (lstat(o->state_dir, &st) != 0) {
        diag_error(dl, NULL, 0, 0, "kvsite's state folder %s: %s", o->state_dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        diag_error(dl, NULL, 0, 0, "kvsite's state folder %s %s: refused", o->state_dir,
                   S_ISLNK(st.st_mode) ? "is a symbolic link" : "exists and is not a folder");
        return -1;
    }
    return 0;
}

/* The lock and the staging folder, in the state folder. */
static int S_lock_and_stage(output *o, diag_list *dl)
{
    if (output_state_dir(o, dl) != 0)
        return -1;
    /* one build at a time per output folder */
    char *lock = output_side_path(o, "lock");
    o->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (o->lock_fd < 0 || flock(o->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        diag_error(dl, NULL, 0, 0, "%s: %s", lock,
                   errno == EWOULDBLOCK ? "another kvsite build is writing this output"
                                        : strerror(errno));
        free(lock);
        return -1;
    }
    free(lock);
    /* The staging folder is the output of the build before the last one: the
     * build rewrites only what changed in it and then swaps it with the
     * output. Reusing files keeps the file system from allocating thousands
     * of inodes per build. */
    o->staging = output_side_path(o, "prev");
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
    o->had_output = lstat(o->out_abs, &st) == 0;
    if (o->had_output && !S_ISDIR(st.st_mode)) {
        diag_error(dl, NULL, 0, 0, "output %s exists and is not a folder", o->out_abs);
        return -1;
    }
    char *slash = strrchr(o->out_abs, '/');
    if (!strcmp(slash + 1, OUTPUT_STATE_DIR)) {
        diag_error(dl, NULL, 0, 0, "output %s: that name is kvsite's state folder", o->out_abs);
        return -1;
    }
    o->state_dir = slash == o->out_abs ? xstrdup("/" OUTPUT_STATE_DIR)
                                       : xasprintf("%.*s/" OUTPUT_STATE_DIR,
                                                   (int)(slash - o->out_abs), o->out_abs);
    return check_only ? 0 : S_lock_and_stage(o, dl);
}

char *output_side_path(const output *o, const char *what)
{
    return xasprintf("%s/%s.%s", o->state_dir, strrchr(o->out_abs, '/') + 1, what);
}

/* ---------- the staging folder's scan ---------- */

/* The walks' memos (walk.h) of the output and of the staging folder, as
 * state files "<out>.dirs" and "<out>.prev.dirs": exchanged whenever the two
 * folders are (S_swap). */
#define S_OUTPUT_MEMO "dirs"
#define S_STAGING_MEMO "prev.dirs"

/* Walks sc->dir (walk.h, with its memo sc->memo): its regular files and
 * empty folders, and whether anything else is there. */
static void *S_scan_staging(void *arg)
{
    output_scan *sc = arg;
    walk_list l;
    walk_list_init(&l);
    walk_tree(sc->dir, WALK_THREADS, &sc->stop, sc->memo, &l);
    buf_put(&sc->files, l.files.ptr, l.files.len);
    buf_put(&sc->empty_dirs, l.empty_dirs.ptr, l.empty_dirs.len);
    sc->links = sc->links || l.other;
    walk_list_free(&l);
    return NULL;
}

/* The published output's walk (output_scan_published): done unless stopped. */
static void *S_scan_published_main(void *arg)
{
    output_scan *sc = arg;
    S_scan_staging(sc);
    sc->done = !atomic_load_explicit(&sc->stop, memory_order_relaxed);
    return NULL;
}

static void S_scan_free(output_scan *sc)
{
    buf_free(&sc->files);
    buf_free(&sc->empty_dirs);
    free(sc->memo);
    sc->memo = NULL;
}

/* A scan of dir, whose walk's memo is the state file "<out>.<memo>" (NULL:
 * none). */
static void S_scan_reset(const output *o, output_scan *sc, const char *dir, const char *memo)
{
    S_scan_free(sc);
    memset(sc, 0, sizeof *sc);
    sc->dir = dir;
    sc->memo = memo ? output_side_path(o, memo) : NULL;
    buf_init(&sc->files);
    buf_init(&sc->empty_dirs);
}

void output_scan_start(output *o)
{
    output_scan *sc = &o->scan;
    S_scan_reset(o, sc, o->staging, S_STAGING_MEMO);
    sc->started = pthread_create(&sc->thread, NULL, S_scan_staging, sc) == 0;
    output_scan_published(o);
}

void output_scan_published(output *o)
{
    output_scan *sc = &o->published;
    if (sc->started || sc->done || !o->staging || o->incremental || !o->had_output)
        return;
    S_scan_reset(o, sc, o->out_abs, S_OUTPUT_MEMO);
    sc->started = pthread_create(&sc->thread, NULL, S_scan_published_main, sc) == 0;
}

/* Waits for the published output's walk, stopping it first unless wanted. */
static void S_published_join(output *o, bool wanted)
{
    output_scan *sc = &o->published;
    if (!sc->started)
        return;
    if (!wanted)
        atomic_store(&sc->stop, true);
    pthread_join(sc->thread, NULL);
    sc->started = false;
}

void output_scan_stop(output *o)
{
    output_scan *sc = &o->scan;
    if (sc->started) {
        atomic_store(&sc->stop, true);
        pthread_join(sc->thread, NULL);
        sc->started = false;
    }
    S_published_join(o, false);
}

void output_scan_finish(output *o)
{
    S_published_join(o, true); /* started beside this one: done before workers fork */
    output_scan *sc = &o->scan;
    if (!sc->done) {
        if (sc->started)
            pthread_join(sc->thread, NULL);
        else {
            S_scan_reset(o, sc, o->staging, S_STAGING_MEMO);
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

/* ---------- the tables ---------- */

/* Exchanges the state files "<out>.<a>" and "<out>.<b>", the two folders' files
 * when the folders are swapped: one that is missing leaves the other alone
 * under the other name. */
static void S_swap_sides(const output *o, const char *a, const char *b)
{
    char *pa = output_side_path(o, a), *pb = output_side_path(o, b);
    if (renameat2(AT_FDCWD, pa, AT_FDCWD, pb, RENAME_EXCHANGE) != 0) {
        /* one of them is missing (or the file system cannot exchange) */
        struct stat st;
        bool has_a = lstat(pa, &st) == 0, has_b = lstat(pb, &st) == 0;
        if (has_a && !has_b) {
            rename(pa, pb);
        } else if (has_b && !has_a) {
            rename(pb, pa);
        } else {
            unlink(pa);
            unlink(pb);
        }
    }
    free(pb);
    free(pa);
}

void output_load_tables(output *o)
{
    if (o->tables || !o->staging || o->incremental)
        return;
    o->tables_since = outrec_now_ns(); /* the pages are written from now on */
    char *files = output_side_path(o, "files"), *prev = output_side_path(o, "prev.files");
    if (o->had_output)
        outrec_load(&o->out_rec, files);
    outrec_load(&o->stage_rec, prev);
    unlink(prev); /* the staging folder is about to change */
    o->tables = true;
    free(prev);
    free(files);
}

void output_tables_read(output *o)
{
    outrec_free(&o->out_rec);
    outrec_free(&o->stage_rec);
}

void output_table_start(const output *o, outrec_builder *b)
{
    outrec_builder_init(b);
    if (o->tables)
        b->since_ns = o->tables_since;
}

void output_table_save(const output *o, bool staging, outrec_builder *b)
{
    struct stat st;
    if (!o->tables || !o->published_full ||
        (staging && (!o->had_output || lstat(o->staging, &st) != 0 || !S_ISDIR(st.st_mode))))
        return; /* the staging folder is not the old output: its table is none */
    char *path = output_side_path(o, staging ? "prev.files" : "files");
    outrec_save(b, path); /* a table that cannot be written is only missing */
    free(path);
}

/* Both tables go before a full build swaps the folders: it saves new ones
 * (a table that describes another folder than its own could not publish
 * wrong bytes either, its entries' inodes being another folder's, but it
 * would only cost stats). */
static void S_drop_tables(const output *o)
{
    const char *names[] = {"files", "prev.files"};
    for (size_t i = 0; i < 2; i++) {
        char *path = output_side_path(o, names[i]);
        unlink(path);
        free(path);
    }
}

/* After an incremental publish's swap: the old output, untouched, is the
 * staging folder now, so its table is that folder's; the new output is the
 * staging folder it was, but for the files the publish copied or moved in,
 * so the staging folder's table is the output's. Those files' entries no
 * longer match: a file made after a table was saved has a later ctime than
 * any entry in it (the racy rule), so they cost reads, never wrong bytes. */
static void S_swap_tables(const output *o) { S_swap_sides(o, "files", "prev.files"); }

/* ---------- where files go ---------- */

static bool S_read_mark(const char *path, buf *dirty);

int output_begin_incremental(output *o, diag_list *dl)
{
    o->incr_dir = output_side_path(o, "incr");
    fs_remove_tree(o->incr_dir);
    if (mkdir(o->incr_dir, 0777) != 0) {
        diag_error(dl, NULL, 0, 0, "cannot create %s: %s", o->incr_dir, strerror(errno));
        return -1;
    }
    o->incremental = true;
    /* the mark, read now: the reuse checks ask which staging files it spares */
    char *mark = output_side_path(o, "synced");
    struct stat st;
    o->marked = lstat(o->staging, &st) == 0 && S_ISDIR(st.st_mode) && S_read_mark(mark, &o->dirty);
    free(mark);
    if (!o->marked)
        buf_clear(&o->dirty);
    for (const char *p = o->dirty.ptr, *end = p + o->dirty.len; p && p < end; p += strlen(p) + 1)
        strmap_put(&o->dirty_set, p, (void *)1);
    return 0;
}

bool output_staging_keeps(const output *o, const char *rel)
{
    return o->incremental && o->marked && !strmap_get(&o->dirty_set, rel);
}

void output_staging_repair(output *o, const char *rel)
{
    if (strmap_get(&o->dirty_set, rel))
        return;
    buf_put(&o->dirty, rel, strlen(rel) + 1);
    strmap_put(&o->dirty_set, rel, (void *)1);
}

output_dest output_dest_of(const output *o)
{
    output_dest d = {.dir = o->incremental ? o->incr_dir : o->staging,
                     .same_dir = o->incremental ? o->out_abs : NULL,
                     .cap = o->cap,
                     .diff_dir = !o->incremental && o->had_output ? o->out_abs : NULL,
                     .dir_rec = o->tables ? &o->stage_rec : NULL,
                     .diff_rec = o->tables ? &o->out_rec : NULL};
    return d;
}

bool output_writes(const output *o) { return o->staging || o->incremental; }

void output_note(output *o, const char *rel) { strmap_put(&o->outputs, rel, (void *)1); }

void output_note_room(output *o, size_t n) { strmap_reserve(&o->outputs, o->outputs.len + n); }

void output_note_extra(output *o, const char *rel)
{
    buf_put(&o->extras, rel, strlen(rel) + 1);
    output_note(o, rel);
}

int output_emit(output *o, const char *rel, const void *data, size_t len, diag_list *dl)
{
    output_note_extra(o, rel);
    output_dest d = output_dest_of(o);
    return output_write(&d, rel, data, len, NULL, NULL, dl, &o->extra_bytes, NULL) < 0 ? -1 : 0;
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

/* Swaps the staging folder in: one rename, so a reader sees the old output or
 * the new one, never a mix. 0, or -1 with errno (the output unchanged). */
static int S_swap(output *o)
{
    struct stat st;
    if (lstat(o->out_abs, &st) != 0) {
        if (rename(o->staging, o->out_abs) != 0)
            return -1;
        S_swap_sides(o, S_OUTPUT_MEMO, S_STAGING_MEMO);
        return 0;
    }
    if (renameat2(AT_FDCWD, o->staging, AT_FDCWD, o->out_abs, RENAME_EXCHANGE) == 0) {
        S_swap_sides(o, S_OUTPUT_MEMO, S_STAGING_MEMO);
        return 0;
    }
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    /* file systems without RENAME_EXCHANGE: two renames */
    char *old = xasprintf("%s.old-%ld", o->staging, (long)getpid());
    int rc = rename(o->out_abs, old);
    if (rc == 0 && (rc = rename(o->staging, o->out_abs)) != 0) {
        int e = errno;
        rename(old, o->out_abs);
        errno = e;
    }
    if (rc == 0) {
        rename(old, o->staging);
        S_swap_sides(o, S_OUTPUT_MEMO, S_STAGING_MEMO);
    }
    free(old);
    return rc;
}

static void S_publish_error(output *o, diag_list *dl, int err)
{
    /* the old output stays until the new one is whole: a full disk is
     * what that costs, said so */
    bool full = err == ENOSPC || err == EDQUOT;
    diag_error(dl, NULL, 0, 0, "cannot publish %s: %s%s", o->out_abs, strerror(err),
               full ? " (the output is replaced whole or not at all, so the disk needs room for "
                      "a second copy of it)"
                    : "");
}


/* ---------- the staging folder as a copy of the output ---------- */

/* The mark (.kvsite/<out>.synced): "the staging folder holds the output's files,
 * byte for byte, except those listed" (NUL-separated: the files the last
 * publish changed, to be copied from the output or removed). It is removed
 * before the staging folder is touched, and written only once the output is
 * whole again: a build killed in between leaves no mark, and the next one
 * compares the two folders instead. A sealed file (sealed.h): one whose
 * bytes changed since (a name turned into another would leave that file's
 * old bytes in the staging folder, and the next publish would put them
 * out) does not load, and is no mark. */
static const char S_MARK_MAGIC[SEALED_MAGIC_SIZE] = "kvsite-synced 2\n";

static bool S_read_mark(const char *path, buf *dirty)
{
    sealed_map m;
    if (!sealed_load(&m, path, S_MARK_MAGIC, (size_t)1 << 30))
        return false;
    bool ok = m.len == 0 || m.data[m.len - 1] == '\0'; /* whole names only */
    if (ok)
        buf_put(dirty, m.data, m.len);
    sealed_unmap(&m);
    return ok;
}

/* Written whole or not at all: sealed_commit renames a side file over it. */
static void S_write_mark(const output *o, const buf *changed)
{
    char *mark = output_side_path(o, "synced");
    sealed_writer *w = sealed_create(mark, S_MARK_MAGIC);
    sealed_write(w, changed->ptr ? changed->ptr : "", changed->len);
    sealed_commit(w); /* one that cannot be written leaves none: the next build compares */
    free(mark);
}

int output_publish(output *o, const char *fresh, size_t fresh_len, diag_list *dl)
{
    S_published_join(o, true);
    bool scanned = o->published.done; /* while the site was finished (output_scan_published) */
    S_drop_tables(o);
    if (S_swap(o) != 0) {
        S_publish_error(o, dl, errno);
        return -1;
    }
    o->published_full = true;
    struct stat st;
    if (!fresh || !o->had_output || lstat(o->staging, &st) != 0 || !S_ISDIR(st.st_mode))
        return 0; /* no old output in the staging folder now: nothing to mark */
    /* The staging folder is the old output: the new one's copy but for the
     * pages whose bytes differ (the writers compared them), the extras (not
     * compared: few) and what the new output lacks. */
    output_scan walked;
    memset(&walked, 0, sizeof walked);
    S_scan_reset(o, &walked, o->staging, S_STAGING_MEMO);
    if (!scanned) /* a build that chose full late: walked now */
        S_scan_staging(&walked);
    const output_scan *old = scanned ? &o->published : &walked;
    if (!old->links) { /* a link there: no mark, the next build compares all */
        buf changed = BUF_INIT;
        buf_put(&changed, fresh, fresh_len);
        buf_put(&changed, o->extras.ptr, o->extras.len);
        const char *p = buf_cstr(&old->files), *end = p + old->files.len;
        for (; p < end; p += strlen(p) + 1)
            if (!strmap_get(&o->outputs, p))
                buf_put(&changed, p, strlen(p) + 1);
        S_write_mark(o, &changed);
        buf_free(&changed);
    }
    S_scan_free(&walked);
    return 0;
}

void output_unmark(output *o)
{
    char *mark = output_side_path(o, "synced");
    unlink(mark);
    free(mark);
}

/* Whether the staging folder's old holds the bytes of the output's from and
 * has no other name (a hard link there would be published: made anew). */
static bool S_stays(const char *from, const char *old)
{
    struct stat st;
    return lstat(old, &st) == 0 && st.st_nlink <= 1 && fs_same_files(from, old);
}

/* Makes staging/rel what out/rel is, by way of the incremental folder (whose
 * files are moved in without following links, fs_move_into): a copy there,
 * unless this build wrote its own, or staging/rel gone when the output has
 * no such file. With compare, a staging file with the same bytes stays
 * (S_stays). */
static int S_sync_one(const output *o, const char *rel, bool compare)
{
    char *from = fs_join(o->out_abs, rel);
    char *via = fs_join(o->incr_dir, rel);
    struct stat st;
    int rc = 0;
    if (lstat(from, &st) == 0 && S_ISREG(st.st_mode)) {
        char *old = compare ? fs_join(o->staging, rel) : NULL;
        if (lstat(via, &st) != 0 && !(old && S_stays(from, old)))
            rc = fs_sync_copy(from, via, NULL);
        free(old);
    } else if (fs_remove_in(o->staging, rel) != 0 && errno != ENOENT) {
        rc = -1;
    }
    free(via);
    free(from);
    return rc;
}

/* Brings the staging folder to the output's files (listed in files, the last
 * build's): with the mark, only the files it lists; without, every file is
 * compared and whatever else the staging folder holds is removed. */
static int S_sync(output *o, const char *files, size_t files_len)
{
    /* the mark, as output_begin_incremental read it: the reuse checks took
     * the staging files it spares for the output's */
    char *mark = output_side_path(o, "synced");
    unlink(mark);
    free(mark);
    bool marked = o->marked;
    int rc = 0;
    if (mkdir(o->staging, 0777) == 0)
        marked = false; /* no staging folder: the mark says nothing of an empty one */
    else if (errno != EEXIST)
        rc = -1;
    const char *list = marked ? buf_cstr(&o->dirty) : files;
    size_t len = marked ? o->dirty.len : files_len;
    if (rc == 0 && !marked) {
        strmap keep;
        strmap_init(&keep);
        for (const char *p = files; p && p < files + files_len; p += strlen(p) + 1)
            strmap_put(&keep, p, (void *)1);
        S_scan_reset(o, &o->scan, o->staging, S_STAGING_MEMO);
        S_scan_staging(&o->scan);
        if (o->scan.links) {
            /* links planted in the staging folder could lead writes out of it */
            fs_remove_tree(o->staging);
            rc = mkdir(o->staging, 0777);
            buf_clear(&o->scan.files);
            o->scan.links = false;
        }
        const char *p = buf_cstr(&o->scan.files), *end = p + o->scan.files.len;
        for (; rc == 0 && p < end; p += strlen(p) + 1)
            if (!strmap_get(&keep, p) && fs_remove_in(o->staging, p) != 0)
                rc = -1;
        strmap_free(&keep);
    }
    for (const char *p = list; rc == 0 && p && p < list + len; p += strlen(p) + 1)
        rc = S_sync_one(o, p, !marked);
    return rc;
}

int output_publish_incremental(output *o, const char *prev, size_t prev_len, diag_list *dl)
{
    /* The staging folder becomes the output's copy, then the new files go
     * into it and the stale ones out of it, and it is swapped in: the output
     * is the old one or the new one whenever the build stops, and unchanged
     * after any error. */
    buf changed = BUF_INIT; /* what differs between the two folders afterwards */
    output_scan incr;
    memset(&incr, 0, sizeof incr);
    S_scan_reset(o, &incr, o->incr_dir, NULL);
    S_scan_staging(&incr);
    buf_put(&changed, buf_cstr(&incr.files), incr.files.len);
    int rc = S_sync(o, prev, prev_len);
    size_t moved = 0;
    if (rc == 0)
        rc = fs_move_into(o->incr_dir, o->staging, &moved);
    for (const char *p = prev; rc == 0 && p && p < prev + prev_len; p += strlen(p) + 1) {
        if (strmap_get(&o->outputs, p))
            continue;
        if (fs_remove_in(o->staging, p) != 0 && errno != ENOENT)
            rc = -1;
        buf_put(&changed, p, strlen(p) + 1);
    }
    if (rc == 0)
        rc = S_swap(o);
    int err = errno;
    if (rc == 0) {
        S_swap_tables(o);
        /* the staging folder is the old output: the output but for these */
        S_write_mark(o, &changed);
    } else {
        S_publish_error(o, dl, err);
    }
    buf_free(&changed);
    S_scan_free(&incr);
    return rc;
}

void output_discard(output *o)
{
    if (o->incremental)
        fs_remove_tree(o->incr_dir);
    else if (o->staging) {
        /* a full build rewrote the staging folder: what it holds is of no use
         * (and, on a full disk, in the way) */
        output_unmark(o);
        fs_remove_tree(o->staging);
    }
}

/* ---------- the end ---------- */

void output_done(output *o)
{
    if (o->incr_dir)
        fs_remove_tree(o->incr_dir);
    if (o->scan.started)
        pthread_join(o->scan.thread, NULL);
    o->scan.started = false;
    S_published_join(o, false);
    S_scan_free(&o->scan);
    S_scan_free(&o->published);
}

void output_unlock(output *o)
{
    if (o->lock_fd >= 0)
        close(o->lock_fd);
    o->lock_fd = -1;
}

void output_free(output *o)
{
    outrec_free(&o->out_rec);
    outrec_free(&o->stage_rec);
    o->tables = false;
    strmap_free(&o->outputs);
    buf_free(&o->extras);
    S_scan_free(&o->scan);
    S_scan_free(&o->published);
    buf_free(&o->dirty);
    strmap_free(&o->dirty_set);
    free(o->incr_dir);
    free(o->out_abs);
    free(o->state_dir);
    free(o->staging);
}
