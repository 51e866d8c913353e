#include "outrec.h"

#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "stamp.h"

/* The file: the magic, the entry count and the paths' pool size (u32 each),
 * the entries sorted by path (S_ENTRY bytes each: the path's offset in the
 * pool and its length (u32), size, inode, mtime and ctime in nanoseconds
 * (64 bits each), the digest), the pool (paths, each NUL-terminated), then
 * a stamp_bytes sum of all of that. Numbers in the machine's order: the
 * table never leaves the machine that made it. */
static const char S_MAGIC[16] = "kvsite-outrec 1\n";
#define S_HEAD (sizeof S_MAGIC + 8)
#define S_ENTRY (8 + 4 * 8 + OUTREC_DIGEST_SIZE)
/* Far more than a site's table (100,000 pages: about 10 MB) */
#define S_MAX_BYTES ((size_t)1 << 30)

/* Times this close to a table's start (or closer, or later) may share a clock
 * tick with a write after the stamp was taken. File systems that keep whole
 * seconds (no nanoseconds in either time) get two. */
#define S_RACY_NS 100000000ll
#define S_RACY_COARSE_NS 2000000000ll

/* A builder's entry in its bytes: the stamp, the digest, then the path */
#define S_ENTRY_PATH (sizeof(outrec_stamp) + OUTREC_DIGEST_SIZE)

void outrec_digest_of(const void *data, size_t len, outrec_digest *d)
{
    struct sha256_ctx ctx;
    sha256_init(&ctx);
    sha256_update(&ctx, len, data);
    sha256_digest(&ctx, OUTREC_DIGEST_SIZE, d->b);
}

outrec_stamp outrec_stamp_of(const struct stat *st)
{
    outrec_stamp s = {(uint64_t)st->st_size, (uint64_t)st->st_ino,
                      (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
                      (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec};
    return s;
}

bool outrec_stamp_known(const outrec_stamp *s) { return s->ino != 0 || s->ctime_ns != 0; }

/* ---------- a loaded table ---------- */

static uint32_t S_u32_at(const char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static const char *S_entry(const outrec *t, uint32_t i)
{
    return t->data + S_HEAD + (size_t)i * S_ENTRY;
}

static const char *S_pool(const outrec *t) { return S_entry(t, t->count); }

/* Whether the bytes are a table: the sum, then every entry's path in the
 * pool, NUL-terminated with no NUL inside, strictly after the one before
 * (the lookup's binary search relies on the order). */
static bool S_valid(const char *p, size_t len, uint32_t *count)
{
    if (len < S_HEAD + 8 || memcmp(p, S_MAGIC, sizeof S_MAGIC) != 0)
        return false;
    uint64_t sum;
    memcpy(&sum, p + len - 8, sizeof sum);
    if (stamp_bytes(OUTREC_SUM_SEED, p, len - 8) != sum)
        return false;
    uint32_t n = S_u32_at(p + sizeof S_MAGIC), pool_len = S_u32_at(p + sizeof S_MAGIC + 4);
    if ((uint64_t)n * S_ENTRY + pool_len != len - S_HEAD - 8)
        return false;
    const char *pool = p + S_HEAD + (size_t)n * S_ENTRY, *before = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const char *e = p + S_HEAD + (size_t)i * S_ENTRY;
        uint32_t off = S_u32_at(e), plen = S_u32_at(e + 4);
        if ((uint64_t)off + plen >= pool_len || pool[off + plen] != '\0' ||
            memchr(pool + off, '\0', plen) != NULL)
            return false;
        if (before && strcmp(before, pool + off) >= 0)
            return false;
        before = pool + off;
    }
    *count = n;
    return true;
}

size_t outrec_load(outrec *t, const char *path)
{
    memset(t, 0, sizeof *t);
    /* a table of kvsite's own: a regular file, not through a link; a FIFO
     * put in its place is not waited on */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= S_MAX_BYTES) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            t->data = p;
            t->len = (size_t)st.st_size;
        }
    }
    close(fd);
    /* a file cut short under the mapping faults (SIGBUS) on the bytes past
     * its end: the state folder is kvsite's own, and one build at a time
     * writes it (the lock); tables are replaced by rename, never rewritten */
    if (t->data && !S_valid(t->data, t->len, &t->count))
        outrec_free(t);
    else if (t->data) /* the checksum touched every page: let them go from this
                       * process's memory until a lookup needs them (the
                       * workers' lookups, mostly, fault them in from the
                       * page cache) */
        madvise((void *)t->data, t->len, MADV_DONTNEED);
    return t->count;
}

void outrec_free(outrec *t)
{
    if (t->data)
        munmap((void *)t->data, t->len);
    memset(t, 0, sizeof *t);
}

bool outrec_holds(const outrec *t, const char *rel, const struct stat *st, const outrec_digest *d)
{
    const char *pool = t->count ? S_pool(t) : NULL;
    uint32_t lo = 0, hi = t->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const char *e = S_entry(t, mid);
        int c = strcmp(rel, pool + S_u32_at(e));
        if (c == 0) {
            outrec_stamp want;
            memcpy(&want, e + 8, sizeof want);
            outrec_stamp now = outrec_stamp_of(st);
            return memcmp(&want, &now, sizeof want) == 0 &&
                   memcmp(e + 8 + sizeof want, d->b, OUTREC_DIGEST_SIZE) == 0;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return false;
}

/* ---------- making one ---------- */

int64_t outrec_now_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

void outrec_builder_init(outrec_builder *b)
{
    memset(b, 0, sizeof *b);
    buf_init(&b->bytes);
    b->since_ns = outrec_now_ns();
}

void outrec_builder_free(outrec_builder *b)
{
    buf_free(&b->bytes);
    free(b->at);
    memset(b, 0, sizeof *b);
}

static bool S_racy(const outrec_builder *b, const outrec_stamp *s)
{
    bool coarse = s->mtime_ns % 1000000000 == 0 && s->ctime_ns % 1000000000 == 0;
    int64_t line = b->since_ns - (coarse ? S_RACY_COARSE_NS : S_RACY_NS);
    return s->mtime_ns >= line || s->ctime_ns >= line;
}

void outrec_add(outrec_builder *b, const char *rel, const outrec_stamp *s, const outrec_digest *d)
{
    if (!outrec_stamp_known(s) || S_racy(b, s))
        return;
    if (b->n == b->cap)
        b->at = xrealloc(b->at, (b->cap = b->cap ? 2 * b->cap : 256) * sizeof *b->at);
    b->at[b->n++] = b->bytes.len;
    buf_put(&b->bytes, s, sizeof *s);
    buf_put(&b->bytes, d->b, OUTREC_DIGEST_SIZE);
    buf_put(&b->bytes, rel, strlen(rel) + 1);
}

/* By path, and for one path in the order added (the last one wins). */
static int S_by_path(const void *x, const void *y, void *ctx)
{
    const char *bytes = ctx;
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    int c = strcmp(bytes + a + S_ENTRY_PATH, bytes + b + S_ENTRY_PATH);
    return c ? c : a < b ? -1 : 1;
}

/* The file, written a chunk at a time: the table of a big site is megabytes
 * the parent need not hold at its busiest. The sum goes along; every chunk
 * but the last is a multiple of eight bytes, so it is stamp_bytes of the
 * whole (stamp.c mixes eight bytes at a step). */
typedef struct {
    int fd;
    int rc;
    uint64_t sum;
    size_t len;
    char chunk[65536];
} S_out;

static void S_flush(S_out *w)
{
    w->sum = stamp_bytes(w->sum, w->chunk, w->len);
    if (w->rc == 0)
        w->rc = fs_write_all(w->fd, w->chunk, w->len);
    w->len = 0;
}

static void S_write(S_out *w, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        size_t room = sizeof w->chunk - w->len, k = n < room ? n : room;
        memcpy(w->chunk + w->len, c, k);
        w->len += k, c += k, n -= k;
        if (w->len == sizeof w->chunk)
            S_flush(w);
    }
}

int outrec_save(outrec_builder *b, const char *path)
{
    const char *bytes = b->bytes.ptr;
    if (b->n > 1) /* none: b->at is NULL, which qsort_r may not be given */
        qsort_r(b->at, b->n, sizeof *b->at, S_by_path, (void *)bytes);
    size_t n = 0; /* the entries kept: the last of each path */
    uint64_t pool_len = 0;
    for (size_t i = 0; i < b->n; i++) {
        const char *p = bytes + b->at[i] + S_ENTRY_PATH;
        if (i + 1 < b->n && !strcmp(p, bytes + b->at[i + 1] + S_ENTRY_PATH)) {
            b->at[i] = SIZE_MAX; /* a later one follows */
        } else {
            n++;
            pool_len += strlen(p) + 1;
        }
    }
    if (n > UINT32_MAX || pool_len > UINT32_MAX) {
        errno = EFBIG;
        return -1;
    }
    char *tmp = xasprintf("%s.new", path);
    S_out *w = xmalloc(sizeof *w);
    w->fd = fs_open_own(tmp, true);
    w->rc = w->fd < 0 ? -1 : 0;
    w->sum = OUTREC_SUM_SEED;
    w->len = 0;
    S_write(w, S_MAGIC, sizeof S_MAGIC);
    uint32_t head[2] = {(uint32_t)n, (uint32_t)pool_len};
    S_write(w, head, sizeof head);
    uint32_t pool_at = 0;
    for (size_t i = 0; i < b->n && w->rc == 0; i++) {
        if (b->at[i] == SIZE_MAX)
            continue;
        const char *e = bytes + b->at[i];
        uint32_t at[2] = {pool_at, (uint32_t)strlen(e + S_ENTRY_PATH)};
        S_write(w, at, sizeof at);
        S_write(w, e, S_ENTRY_PATH); /* the stamp and the digest */
        pool_at += at[1] + 1;
    }
    for (size_t i = 0; i < b->n && w->rc == 0; i++) {
        if (b->at[i] == SIZE_MAX)
            continue;
        const char *p = bytes + b->at[i] + S_ENTRY_PATH;
        S_write(w, p, strlen(p) + 1);
    }
    S_flush(w);
    uint64_t sum = w->sum;
    int rc = w->rc;
    if (rc == 0)
        rc = fs_write_all(w->fd, &sum, sizeof sum);
    if (w->fd >= 0 && close(w->fd) != 0 && rc == 0)
        rc = -1;
    if (rc == 0)
        rc = rename(tmp, path);
    if (rc != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
    }
    free(w);
    free(tmp);
    return rc;
}
