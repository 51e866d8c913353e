#include "walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "outrec.h"
#include "sealed.h"

/* ---------- the memo ----------
 *
 * The sealed file's bytes: the folder count and a zero (u32 each), then the
 * index (a u64 per folder: its record's offset from the first record, in
 * the order of the folders' paths), then the records. A record: the stamp
 * (S_STAMP bytes), the path's length and the entries' length (u32 each), the
 * path with its NUL ("" for the top), the entries (each a type, 'f' for a
 * regular file or 'd' for a folder, then the name with its NUL), and zeros
 * to a multiple of eight bytes. */
static const char S_MAGIC[SEALED_MAGIC_SIZE] = "kvsite-walk 1\n\0";
#define S_STAMP sizeof(outrec_stamp)
#define S_REC_HEAD (S_STAMP + 8)
/* Far more than the memo of a site's output (100,000 pages: about 6 MB) */
#define S_MAX_BYTES ((size_t)1 << 30)

typedef struct {
    sealed_map file;
    uint32_t count;
    const char *index, *records;
    size_t records_len;
} S_memo;

static size_t S_padded(size_t n) { return (n + 7) & ~(size_t)7; }

/* A record's size, from its head. */
static size_t S_rec_size(const char *r)
{
    return S_padded(S_REC_HEAD + (size_t)sealed_u32(r + S_STAMP) + 1 + sealed_u32(r + S_STAMP + 4));
}

static const char *S_rec_path(const char *r) { return r + S_REC_HEAD; }

static const char *S_rec_entries(const char *r, size_t *len)
{
    *len = sealed_u32(r + S_STAMP + 4);
    return r + S_REC_HEAD + sealed_u32(r + S_STAMP) + 1;
}

/* Whether a record's entries are what a walk trusts: names that stay in
 * their folder (no '/', not "." or ".."), each a file or a folder. */
static bool S_entries_valid(const char *e, size_t len)
{
    const char *end = e + len;
    while (e < end) {
        if (*e != 'f' && *e != 'd')
            return false;
        const char *name = e + 1, *nul = memchr(name, '\0', (size_t)(end - name));
        if (!nul || nul == name || memchr(name, '/', (size_t)(nul - name)) ||
            !strcmp(name, ".") || !strcmp(name, ".."))
            return false;
        e = nul + 1;
    }
    return true;
}

/* Whether the (sealed) bytes are a memo: every record within the bytes and
 * well formed, the paths in strictly rising order (the lookup's binary
 * search relies on it). */
static bool S_memo_valid(S_memo *m)
{
    const char *p = m->file.data;
    size_t len = m->file.len;
    if (len < 8)
        return false;
    uint64_t n = sealed_u32(p);
    if (sealed_u32(p + 4) != 0 || n * 8 > len - 8)
        return false;
    m->count = (uint32_t)n;
    m->index = p + 8;
    m->records = m->index + n * 8;
    m->records_len = len - 8 - n * 8;
    const char *before = NULL;
    for (uint32_t i = 0; i < m->count; i++) {
        uint64_t off = sealed_u64(m->index + (size_t)i * 8);
        if (off % 8 != 0 || off > m->records_len || m->records_len - off < S_REC_HEAD)
            return false;
        const char *r = m->records + off;
        uint64_t plen = sealed_u32(r + S_STAMP), elen = sealed_u32(r + S_STAMP + 4);
        if (S_padded(S_REC_HEAD + plen + 1 + elen) > m->records_len - off)
            return false;
        const char *path = S_rec_path(r);
        if (path[plen] != '\0' || memchr(path, '\0', plen) ||
            !S_entries_valid(path + plen + 1, elen))
            return false;
        if (before && strcmp(before, path) >= 0)
            return false;
        before = path;
    }
    return true;
}

static void S_memo_load(S_memo *m, const char *path)
{
    memset(m, 0, sizeof *m);
    if (!path || !sealed_load(&m->file, path, S_MAGIC, S_MAX_BYTES))
        return;
    if (S_memo_valid(m)) {
        sealed_release(&m->file);
    } else {
        sealed_unmap(&m->file);
        memset(m, 0, sizeof *m);
    }
}

/* The record of the folder at rel, or NULL. */
static const char *S_memo_find(const S_memo *m, const char *rel)
{
    uint32_t lo = 0, hi = m->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const char *r = m->records + sealed_u64(m->index + (size_t)mid * 8);
        int c = strcmp(rel, S_rec_path(r));
        if (c == 0)
            return r;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* ---------- the walk ---------- */

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
    const S_memo *memo;
    int64_t since_ns;      /* the walk's start: the line of the racy rule */
    bool remember;         /* records are made for a new memo */
} S_walk;

/* One thread's share: what it found, merged by walk_tree at the end. */
typedef struct {
    S_walk *w;
    pthread_t thread;
    bool started;
    walk_list found;
    buf seen;              /* records of the folders listed, for the new memo */
    char **dirs;           /* the folder being listed's subfolders */
    size_t ndirs, capdirs;
    /* the folder being listed */
    int fd;
    const char *rel;
    size_t entries;
    size_t rec;            /* its record's offset in seen; SIZE_MAX: none */
    size_t recalled, read; /* folders taken from the memo, folders read */
} S_part;

static void S_found(S_part *p, unsigned char type, const char *name)
{
    p->entries++;
    if (type == DT_DIR) {
        if (p->ndirs == p->capdirs)
            p->dirs = xrealloc(p->dirs, (p->capdirs = p->capdirs ? 2 * p->capdirs : 16) *
                                            sizeof *p->dirs);
        p->dirs[p->ndirs++] = p->rel[0] ? fs_join(p->rel, name) : xstrdup(name);
    } else {
        if (p->rel[0]) {
            buf_puts(&p->found.files, p->rel);
            buf_putc(&p->found.files, '/');
        }
        buf_put(&p->found.files, name, strlen(name) + 1);
    }
}

static int S_entry(const char *name, unsigned char type, void *ctx)
{
    S_part *p = ctx;
    if (type == DT_UNKNOWN) {
        struct stat st;
        if (fstatat(p->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            return 0; /* gone since the folder was read */
        type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
    }
    if (type != DT_DIR && type != DT_REG) {
        atomic_store(&p->w->other, true);
        return 1; /* the walk ends here */
    }
    S_found(p, type, name);
    if (p->rec != SIZE_MAX) {
        buf_putc(&p->seen, type == DT_DIR ? 'd' : 'f');
        buf_put(&p->seen, name, strlen(name) + 1);
    }
    return 0;
}

/* Starts the record of the folder being listed in p->seen, unless its stamp
 * is racy (it is then not remembered). */
static void S_record_start(S_part *p, const struct stat *st)
{
    outrec_stamp s = outrec_stamp_of(st);
    p->rec = SIZE_MAX;
    if (!p->w->remember || outrec_stamp_racy(&s, p->w->since_ns))
        return;
    p->rec = p->seen.len;
    uint32_t lens[2] = {(uint32_t)strlen(p->rel), 0};
    buf_put(&p->seen, &s, sizeof s);
    buf_put(&p->seen, lens, sizeof lens);
    buf_put(&p->seen, p->rel, lens[0] + 1);
}

/* Ends it: its entries' length, and the padding. */
static void S_record_end(S_part *p)
{
    if (p->rec == SIZE_MAX)
        return;
    size_t entries_at = p->rec + S_REC_HEAD + strlen(p->rel) + 1;
    if (p->seen.len - entries_at > UINT32_MAX) {
        p->seen.len = p->rec; /* more than a record holds: not remembered */
        return;
    }
    uint32_t elen = (uint32_t)(p->seen.len - entries_at);
    memcpy(p->seen.ptr + p->rec + S_STAMP + 4, &elen, sizeof elen);
    while (p->seen.len % 8)
        buf_putc(&p->seen, '\0');
}

/* The folder at rel from the memo, when its stat still equals the stamp
 * there. A folder is looked up by its path from the top, through folders
 * found unchanged the same way: a link planted in place of one of them
 * would have changed its parent. */
static bool S_recall(S_part *p, const char *rel)
{
    S_walk *w = p->w;
    const char *r = w->memo->count ? S_memo_find(w->memo, rel) : NULL;
    if (!r)
        return false;
    struct stat st;
    if ((rel[0] ? fstatat(w->root, rel, &st, AT_SYMLINK_NOFOLLOW) : fstat(w->root, &st)) != 0 ||
        !S_ISDIR(st.st_mode))
        return false;
    outrec_stamp now = outrec_stamp_of(&st);
    if (memcmp(&now, r, sizeof now) != 0)
        return false;
    size_t len;
    const char *e = S_rec_entries(r, &len), *end = e + len;
    for (; e < end; e += strlen(e) + 1)
        S_found(p, e[0] == 'd' ? DT_DIR : DT_REG, e + 1);
    if (w->remember)
        buf_put(&p->seen, r, S_rec_size(r));
    p->recalled++;
    return true;
}

static void S_list(S_part *p, const char *rel)
{
    S_walk *w = p->w;
    p->rel = rel;
    p->entries = 0;
    if (!S_recall(p, rel)) {
        int fd = rel[0] ? fs_open_beneath(w->root, rel, O_RDONLY | O_DIRECTORY)
                        : fcntl(w->root, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
            return; /* gone, or a link planted where a folder was: not followed */
        p->read++;
        p->fd = fd;
        /* the stamp before the entries: a change after it moves the times */
        struct stat st;
        if (fstat(fd, &st) == 0)
            S_record_start(p, &st);
        else
            p->rec = SIZE_MAX;
        if (fs_each_entry(fd, S_entry, p) != 0 || atomic_load(&w->other)) {
            if (p->rec != SIZE_MAX)
                p->seen.len = p->rec; /* not read whole: not remembered */
        } else {
            S_record_end(p);
        }
        close(fd);
    }
    if (p->entries == 0 && rel[0])
        buf_put(&p->found.empty_dirs, rel, strlen(rel) + 1);
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

/* By path: the records the threads made, for the new memo. */
static int S_by_path(const void *a, const void *b)
{
    return strcmp(S_rec_path(*(const char *const *)a), S_rec_path(*(const char *const *)b));
}

/* Writes the records of every part as the memo at path. */
static void S_memo_save(const char *path, const S_part *parts, unsigned nparts)
{
    size_t n = 0, cap = 0;
    const char **recs = NULL;
    for (unsigned i = 0; i < nparts; i++)
        for (size_t off = 0; off < parts[i].seen.len;) {
            const char *r = parts[i].seen.ptr + off;
            if (n == cap)
                recs = xrealloc(recs, (cap = cap ? 2 * cap : 256) * sizeof *recs);
            recs[n++] = r;
            off += S_rec_size(r);
        }
    if (n > UINT32_MAX) {
        free(recs);
        return;
    }
    if (n > 1)
        qsort(recs, n, sizeof *recs, S_by_path);
    sealed_writer *sw = sealed_create(path, S_MAGIC);
    uint32_t head[2] = {(uint32_t)n, 0};
    sealed_write(sw, head, sizeof head);
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        sealed_write(sw, &at, sizeof at);
        at += S_rec_size(recs[i]);
    }
    for (size_t i = 0; i < n; i++)
        sealed_write(sw, recs[i], S_rec_size(recs[i]));
    sealed_commit(sw); /* one that cannot be written: the old one stays, still true */
    free(recs);
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

int walk_tree(const char *dir, unsigned threads, const atomic_bool *stop, const char *memo,
              walk_list *l)
{
    int root = fs_root_open(dir);
    if (root < 0)
        return -1;
    if (threads < 1)
        threads = 1;
    if (threads > WALK_THREADS)
        threads = WALK_THREADS;
    S_memo known;
    S_memo_load(&known, memo);
    S_walk w = {.cap = 64, .root = root, .stop = stop, .memo = &known,
                .since_ns = outrec_now_ns(), .remember = memo != NULL};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.more, NULL);
    atomic_init(&w.other, false);
    w.queue = xmalloc(w.cap * sizeof *w.queue);
    w.queue[w.n++] = xstrdup("");
    S_part *parts = xcalloc(threads, sizeof *parts);
    for (unsigned i = 0; i < threads; i++) {
        parts[i].w = &w;
        walk_list_init(&parts[i].found);
        buf_init(&parts[i].seen);
    }
    /* the caller's thread is the first; the others wait for folders */
    for (unsigned i = 1; i < threads; i++)
        parts[i].started = pthread_create(&parts[i].thread, NULL, S_run, &parts[i]) == 0;
    S_run(&parts[0]);
    for (unsigned i = 0; i < threads; i++)
        if (parts[i].started)
            pthread_join(parts[i].thread, NULL);
    bool other = atomic_load(&w.other);
    bool stopped = w.n > 0 || (stop && atomic_load(stop));
    size_t recalled = 0, read = 0;
    for (unsigned i = 0; i < threads; i++)
        recalled += parts[i].recalled, read += parts[i].read;
    /* every folder of the memo taken from it and none read: the new memo
     * would be the same bytes */
    bool same = read == 0 && recalled == known.count;
    if (memo && !other && !stopped && !same)
        S_memo_save(memo, parts, threads);
    for (unsigned i = 0; i < threads; i++) {
        buf_put(&l->files, parts[i].found.files.ptr, parts[i].found.files.len);
        buf_put(&l->empty_dirs, parts[i].found.empty_dirs.ptr, parts[i].found.empty_dirs.len);
        walk_list_free(&parts[i].found);
        buf_free(&parts[i].seen);
        for (size_t k = 0; k < parts[i].ndirs; k++)
            free(parts[i].dirs[k]);
        free(parts[i].dirs);
    }
    for (size_t k = 0; k < w.n; k++) /* a stopped walk's leftovers */
        free(w.queue[k]);
    free(w.queue);
    free(parts);
    l->other = l->other || other;
    sealed_unmap(&known.file);
    pthread_cond_destroy(&w.more);
    pthread_mutex_destroy(&w.mu);
    close(root);
    return 0;
}
