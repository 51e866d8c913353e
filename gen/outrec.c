#include "outrec.h"

#include <errno.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

struct outrec_entry {
    char *path;
    outrec_stamp stamp;
    outrec_digest digest;
};

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
    return t->data.ptr + S_HEAD + (size_t)i * S_ENTRY;
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
    buf_init(&t->data);
    t->count = 0;
    if (fs_read_regular(path, S_MAX_BYTES, &t->data) != FS_OK ||
        !S_valid(t->data.ptr, t->data.len, &t->count)) {
        buf_free(&t->data);
        t->count = 0;
    }
    return t->count;
}

void outrec_free(outrec *t)
{
    buf_free(&t->data);
    t->count = 0;
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

void outrec_builder_init(outrec_builder *b)
{
    memset(b, 0, sizeof *b);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    b->since_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

void outrec_builder_free(outrec_builder *b)
{
    for (size_t i = 0; i < b->n; i++)
        free(b->v[i].path);
    free(b->v);
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
        b->v = xrealloc(b->v, (b->cap = b->cap ? 2 * b->cap : 256) * sizeof *b->v);
    b->v[b->n++] = (struct outrec_entry){xstrdup(rel), *s, *d};
}

/* By path, and for one path in the order added (the last one wins). */
static int S_by_path(const void *a, const void *b)
{
    const struct outrec_entry *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    return c ? c : x < y ? -1 : 1;
}

int outrec_save(outrec_builder *b, const char *path)
{
    qsort(b->v, b->n, sizeof *b->v, S_by_path);
    size_t n = 0; /* the entries kept: the last of each path */
    uint64_t pool_len = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (i + 1 < b->n && !strcmp(b->v[i].path, b->v[i + 1].path))
            continue;
        n++;
        pool_len += strlen(b->v[i].path) + 1;
    }
    if (n > UINT32_MAX || pool_len > UINT32_MAX) {
        errno = EFBIG;
        return -1;
    }
    buf out = BUF_INIT, pool = BUF_INIT;
    buf_put(&out, S_MAGIC, sizeof S_MAGIC);
    uint32_t head[2] = {(uint32_t)n, (uint32_t)pool_len};
    buf_put(&out, head, sizeof head);
    for (size_t i = 0; i < b->n; i++) {
        const struct outrec_entry *e = &b->v[i];
        if (i + 1 < b->n && !strcmp(e->path, b->v[i + 1].path))
            continue;
        uint32_t at[2] = {(uint32_t)pool.len, (uint32_t)strlen(e->path)};
        buf_put(&out, at, sizeof at);
        buf_put(&out, &e->stamp, sizeof e->stamp);
        buf_put(&out, e->digest.b, OUTREC_DIGEST_SIZE);
        buf_put(&pool, e->path, at[1] + 1);
    }
    buf_put(&out, pool.ptr, pool.len);
    uint64_t sum = stamp_bytes(OUTREC_SUM_SEED, out.ptr, out.len);
    buf_put(&out, &sum, sizeof sum);
    char *tmp = xasprintf("%s.new", path);
    unlink(tmp); /* a side file of ours: whatever stands there goes */
    int rc = fs_write_file(tmp, out.ptr, out.len);
    if (rc == 0 && (rc = rename(tmp, path)) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
    }
    free(tmp);
    buf_free(&pool);
    buf_free(&out);
    return rc;
}
