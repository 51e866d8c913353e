#include "outrec.h"

#include <errno.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fsutil.h"

/* The sealed file's bytes: the entry count and the paths' pool size (u32
 * each), the entries sorted by path (S_ENTRY bytes each: the path's offset
 * in the pool and its length (u32), size, inode, mtime and ctime in
 * nanoseconds (64 bits each), the digest), then the pool (paths, each
 * NUL-terminated). */
static const char S_MAGIC[SEALED_MAGIC_SIZE] = "kvsite-outrec 1\n";
#define S_HEAD 8
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

bool outrec_stamp_racy(const outrec_stamp *s, int64_t since_ns)
{
    bool coarse = s->mtime_ns % 1000000000 == 0 && s->ctime_ns % 1000000000 == 0;
    int64_t line = since_ns - (coarse ? S_RACY_COARSE_NS : S_RACY_NS);
    return s->mtime_ns >= line || s->ctime_ns >= line;
}

/* ---------- a loaded table ---------- */

static const char *S_entry(const outrec *t, uint32_t i)
{
    return t->file.data + S_HEAD + (size_t)i * S_ENTRY;
}

static const char *S_pool(const outrec *t) { return S_entry(t, t->count); }

/* Whether the (sealed) bytes are a table: every entry's path in the pool,
 * NUL-terminated with no NUL inside, strictly after the one before (the
 * lookup's binary search relies on the order). */
static bool S_valid(const char *p, size_t len, uint32_t *count)
{
    if (len < S_HEAD)
        return false;
    uint32_t n = sealed_u32(p), pool_len = sealed_u32(p + 4);
    if ((uint64_t)n * S_ENTRY + pool_len != len - S_HEAD)
        return false;
    const char *pool = p + S_HEAD + (size_t)n * S_ENTRY, *before = NULL;
    for (uint32_t i = 0; i < n; i++) {
        const char *e = p + S_HEAD + (size_t)i * S_ENTRY;
        uint32_t off = sealed_u32(e), plen = sealed_u32(e + 4);
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
    if (!sealed_load(&t->file, path, S_MAGIC, S_MAX_BYTES))
        return 0;
    if (!S_valid(t->file.data, t->file.len, &t->count))
        outrec_free(t);
    else /* the checks touched every page: the workers' lookups, mostly, fault
          * in the few they read */
        sealed_release(&t->file);
    return t->count;
}

void outrec_free(outrec *t)
{
    sealed_unmap(&t->file);
    memset(t, 0, sizeof *t);
}

bool outrec_holds(const outrec *t, const char *rel, const struct stat *st, const outrec_digest *d)
{
    const char *pool = t->count ? S_pool(t) : NULL;
    uint32_t lo = 0, hi = t->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const char *e = S_entry(t, mid);
        int c = strcmp(rel, pool + sealed_u32(e));
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

void outrec_builder_reserve(outrec_builder *b, size_t n, size_t path_bytes)
{
    if (b->cap < b->n + n)
        b->at = xrealloc(b->at, (b->cap = b->n + n) * sizeof *b->at);
    buf_grow(&b->bytes, n * S_ENTRY_PATH + path_bytes);
}

void outrec_builder_free(outrec_builder *b)
{
    buf_free(&b->bytes);
    free(b->at);
    memset(b, 0, sizeof *b);
}


void outrec_add(outrec_builder *b, const char *rel, const outrec_stamp *s, const outrec_digest *d)
{
    if (!outrec_stamp_known(s) || outrec_stamp_racy(s, b->since_ns))
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
    /* written a chunk at a time: the table of a big site is megabytes the
     * parent need not hold twice at its busiest */
    sealed_writer *w = sealed_create(path, S_MAGIC);
    uint32_t head[2] = {(uint32_t)n, (uint32_t)pool_len};
    sealed_write(w, head, sizeof head);
    uint32_t pool_at = 0;
    for (size_t i = 0; i < b->n; i++) {
        if (b->at[i] == SIZE_MAX)
            continue;
        const char *e = bytes + b->at[i];
        uint32_t at[2] = {pool_at, (uint32_t)strlen(e + S_ENTRY_PATH)};
        sealed_write(w, at, sizeof at);
        sealed_write(w, e, S_ENTRY_PATH); /* the stamp and the digest */
        pool_at += at[1] + 1;
    }
    for (size_t i = 0; i < b->n; i++) {
        if (b->at[i] == SIZE_MAX)
            continue;
        const char *p = bytes + b->at[i] + S_ENTRY_PATH;
        sealed_write(w, p, strlen(p) + 1);
    }
    return sealed_commit(w);
}
