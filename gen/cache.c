#include "cache.h"

#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stamp.h"

static const char S_MAGIC[16] = "kvsite-cache 8\n";

/* Integrity: every record carries a checksum of its bytes, checked when it is
 * read; everything else the loader reads (fingerprints, outputs, front
 * matter) is summed as it is read and checked against the file's last eight
 * bytes. A damaged cache is never used: a bad record is not reused (its page
 * is rendered again), anything else makes the whole file count as no cache. */
#define SUM_SEED 0x6b76736974652d63ull /* "kvsite-c" */

void cache_init(cache *c)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    buf_init(&c->tail);
    buf_init(&c->win.bytes);
}

void cache_free(cache *c)
{
    if (c->fd >= 0)
        close(c->fd);
    buf_free(&c->tail);
    fs_window_free(&c->win);
    free(c->jobs);
    free(c->fronts);
    cache_init(c);
}

bool cache_loaded_from(const cache *c, const char *path)
{
    struct stat st;
    return c->fd >= 0 && stat(path, &st) == 0 &&
           stamp_of_stat(STAMP_SEED, "", &st) == c->file_stamp;
}

/* What cache_record reads at a time. */
#define READ_AHEAD ((size_t)256 << 10)

int cache_record(cache *c, size_t job, buf *out)
{
    return cache_record_via(c, job, &c->win, out);
}

int cache_record_via(const cache *c, size_t job, fs_window *win, buf *out)
{
    buf_clear(out);
    if (c->fd < 0 || job >= c->njobs || !c->jobs[job].present) {
        errno = EINVAL;
        return -1;
    }
    const cache_entry *e = &c->jobs[job];
    const char *p;
    /* EIO: the file shrank, it was replaced in place */
    if (fs_window_read(c->fd, win, e->rec_off, e->rec_len, READ_AHEAD, &p) != 0)
        return -1;
    if (stamp_bytes(SUM_SEED, p, e->rec_len) != e->rec_sum) {
        errno = EILSEQ; /* damaged: the page is rendered again */
        return -1;
    }
    buf_put(out, p, e->rec_len);
    return 0;
}

/* ---------- loading: the file read once, front to back ---------- */

typedef struct {
    int fd;
    uint64_t size;
    uint64_t boff;   /* file offset of win[0] */
    size_t have, at; /* bytes in win, the next one */
    bool bad;
    uint64_t sum;    /* of every byte read but the magic and the records */
    char win[65536];
} file_reader;

/* The bytes left in the file from the reader's place. */
static uint64_t S_left(const file_reader *r)
{
    uint64_t at = r->boff + r->at;
    return at < r->size ? r->size - at : 0;
}

/* At least n (<= sizeof win) bytes in the window from at, or bad. */
static bool S_need(file_reader *r, size_t n)
{
    if (r->bad || n > S_left(r)) { /* never into the file's sum, or past the end */
        r->bad = true;
        return false;
    }
    if (r->have - r->at >= n)
        return true;
    memmove(r->win, r->win + r->at, r->have - r->at);
    r->boff += r->at;
    r->have -= r->at;
    r->at = 0;
    while (r->have < n) {
        ssize_t got = pread(r->fd, r->win + r->have, sizeof r->win - r->have,
                            (off_t)(r->boff + r->have));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            r->bad = true;
            return false;
        }
        r->have += (size_t)got;
    }
    return true;
}

static uint32_t S_rd_u32(file_reader *r)
{
    uint32_t v = 0;
    if (S_need(r, sizeof v)) {
        memcpy(&v, r->win + r->at, sizeof v);
        r->sum = stamp_bytes(r->sum, r->win + r->at, sizeof v);
        r->at += sizeof v;
    }
    return v;
}

static uint64_t S_rd_u64(file_reader *r)
{
    uint64_t v = 0;
    if (S_need(r, sizeof v)) {
        memcpy(&v, r->win + r->at, sizeof v);
        r->sum = stamp_bytes(r->sum, r->win + r->at, sizeof v);
        r->at += sizeof v;
    }
    return v;
}

/* Skips n bytes; returns their file offset. */
static uint64_t S_rd_skip(file_reader *r, uint64_t n)
{
    uint64_t off = r->boff + r->at;
    if (r->bad || n > S_left(r)) {
        r->bad = true;
        return off;
    }
    if (n <= r->have - r->at) {
        r->at += (size_t)n;
    } else {
        r->boff = off + n;
        r->have = r->at = 0;
    }
    return off;
}

/* Appends n bytes to out (which has room: no reallocation moves it). */
static void S_rd_bytes(file_reader *r, size_t n, buf *out)
{
    if (r->bad || n > S_left(r) || out->cap - out->len < n + 1) {
        r->bad = true;
        return;
    }
    while (n > 0 && !r->bad) {
        size_t step = n < sizeof r->win ? n : sizeof r->win;
        if (!S_need(r, step))
            break;
        buf_put(out, r->win + r->at, step);
        r->sum = stamp_bytes(r->sum, r->win + r->at, step);
        r->at += step;
        n -= step;
    }
}

/* Output names are removed from the output folder when a build no longer
 * writes them: each must be a plain relative path (no "..", ".", empty part,
 * leading "/"), and the list must end in NUL. */
static bool S_plain_names(const char *list, size_t len)
{
    if (len && list[len - 1] != '\0')
        return false;
    for (const char *p = list; p < list + len; p += strlen(p) + 1) {
        if (!*p || *p == '/')
            return false;
        for (const char *seg = p; seg;) {
            const char *slash = strchr(seg, '/');
            size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
            if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
                return false;
            seg = slash ? slash + 1 : NULL;
        }
    }
    return true;
}

int cache_load(cache *c, const char *path, size_t max_bytes)
{
    cache_init(c);
    file_reader *rd = xcalloc(1, sizeof *rd);
    rd->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    char magic[sizeof S_MAGIC];
    if (rd->fd < 0 || fstat(rd->fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size > max_bytes || (size_t)st.st_size < sizeof S_MAGIC)
        goto bad;
    rd->size = (uint64_t)st.st_size;
    c->file_stamp = stamp_of_stat(STAMP_SEED, "", &st);
    if (!S_need(rd, sizeof magic))
        goto bad;
    memcpy(magic, rd->win, sizeof magic);
    rd->at = sizeof magic;
    if (memcmp(magic, S_MAGIC, sizeof S_MAGIC) != 0 || rd->size < sizeof magic + 8)
        goto bad;
    rd->sum = SUM_SEED;
    rd->size -= 8; /* the sum: read on its own at the end */
    c->global = S_rd_u64(rd);
    uint32_t n = S_rd_u32(rd);
    /* every entry takes at least 4 bytes: a corrupt count cannot allocate much */
    if (rd->bad || n > S_left(rd) / 4)
        goto bad;
    c->njobs = n;
    c->jobs = xcalloc((size_t)n + 1, sizeof *c->jobs);
    for (size_t i = 0; i < n && !rd->bad; i++) {
        cache_entry *e = &c->jobs[i];
        e->present = S_rd_u32(rd) == 1;
        if (!e->present)
            continue;
        e->deps = S_rd_u64(rd);
        e->out_stamp = S_rd_u64(rd);
        e->stage_stamp = S_rd_u64(rd);
        e->digest = S_rd_u64(rd);
        e->reads = S_rd_u64(rd);
        e->rec_sum = S_rd_u64(rd);
        e->rec_len = S_rd_u32(rd);
        e->rec_off = S_rd_skip(rd, e->rec_len);
    }
    /* the rest (outputs, front matter) stays in memory, in one block that
     * never moves: it can hold no more than what is left of the file */
    if (rd->bad)
        goto bad;
    buf_grow(&c->tail, (size_t)S_left(rd));
    c->outputs_len = S_rd_u32(rd);
    size_t outputs_at = c->tail.len;
    S_rd_bytes(rd, c->outputs_len, &c->tail);
    c->outputs = c->tail.ptr + outputs_at;
    c->front_key = S_rd_u64(rd);
    uint32_t nf = S_rd_u32(rd);
    if (rd->bad || nf > S_left(rd) / 16)
        goto bad;
    c->fronts = xcalloc((size_t)nf + 1, sizeof *c->fronts);
    c->nfronts = nf;
    for (size_t i = 0; i < nf && !rd->bad; i++) {
        cache_front *f = &c->fronts[i];
        uint32_t srclen = S_rd_u32(rd);
        size_t at = c->tail.len;
        S_rd_bytes(rd, srclen, &c->tail);
        f->src = c->tail.ptr + at;
        if (rd->bad || srclen == 0 || f->src[srclen - 1] != '\0')
            rd->bad = true;
        f->stamp = S_rd_u64(rd);
        f->page_len = S_rd_u32(rd);
        at = c->tail.len;
        S_rd_bytes(rd, f->page_len, &c->tail);
        f->page = c->tail.ptr + at;
    }
    if (rd->bad || S_left(rd) != 0 || !S_plain_names(c->outputs, c->outputs_len))
        goto bad;
    uint64_t sum = rd->sum;
    rd->size += 8;
    if (S_rd_u64(rd) != sum || rd->bad)
        goto bad;
    c->fd = rd->fd;
    free(rd);
    return 0;
bad:
    if (rd->fd >= 0)
        close(rd->fd);
    free(rd);
    cache_free(c);
    return -1;
}

/* Written through stdio: records are copied once, from where they are. All
 * but the records' bytes go into the file's sum (see SUM_SEED). */
typedef struct {
    FILE *f;
    uint64_t sum;
} writer;

static void S_put_raw(writer *w, const void *p, size_t n)
{
    if (n) /* fwrite wants a buffer even for nothing */
        fwrite(p, 1, n, w->f);
}
static void S_put(writer *w, const void *p, size_t n)
{
    w->sum = stamp_bytes(w->sum, p, n);
    S_put_raw(w, p, n);
}
static void S_put_u64(writer *w, uint64_t v) { S_put(w, &v, sizeof v); }
static void S_put_u32(writer *w, uint32_t v) { S_put(w, &v, sizeof v); }

static int S_save(const cache *c, const char *path, const cache_encoders *enc, bool finish);

int cache_save(const cache *c, const char *path, const cache_encoders *enc)
{
    return S_save(c, path, enc, true);
}

int cache_save_unfinished(const cache *c, const char *path, const cache_encoders *enc)
{
    return S_save(c, path, enc, false);
}

int cache_finish(const char *path)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    int rc = pwrite(fd, S_MAGIC, sizeof S_MAGIC, 0) == (ssize_t)sizeof S_MAGIC ? 0 : -1;
    if (close(fd) != 0)
        rc = -1;
    return rc;
}

static int S_save(const cache *c, const char *path, const cache_encoders *enc, bool finish)
{
    buf scratch = BUF_INIT;
    /* Written over the last cache in place: a new file of 40 MB and the
     * release of the old one cost the kernel more than writing the bytes
     * (0.1 s at the end of a build of 200,000 figures). The magic is written
     * last: until then the file reads as no cache, so a build killed halfway
     * leaves nothing that could be taken for one. */
    int fd = fs_open_own(path, false); /* never through a link or another name */
    FILE *f = fd < 0 ? NULL : fdopen(fd, "wb");
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* glibc ignores the size without a buffer of ours: 4 KiB writes else */
    char *iobuf = xmalloc(1u << 20);
    setvbuf(f, iobuf, _IOFBF, 1u << 20);
    static const char invalid[16] = "kvsite-cache -\n";
    writer wr = {f, SUM_SEED}, *w = &wr;
    S_put_raw(w, invalid, sizeof invalid);
    S_put_u64(w, c->global);
    S_put_u32(w, (uint32_t)c->njobs);
    for (size_t i = 0; i < c->njobs; i++) {
        const cache_entry *e = &c->jobs[i];
        S_put_u32(w, e->present ? 1 : 0);
        if (!e->present)
            continue;
        S_put_u64(w, e->deps);
        S_put_u64(w, e->out_stamp);
        S_put_u64(w, e->stage_stamp);
        S_put_u64(w, e->digest);
        S_put_u64(w, e->reads);
        const char *bytes = e->rec;
        size_t len = e->rec_len;
        if (!bytes) {
            buf_clear(&scratch);
            if (enc && enc->record)
                enc->record(enc->ctx, i, &scratch);
            bytes = buf_cstr(&scratch);
            len = scratch.len;
        }
        uint64_t rec_sum = stamp_bytes(SUM_SEED, bytes, len);
        if (enc && enc->record_sum)
            enc->record_sum(enc->ctx, i, rec_sum);
        S_put_u64(w, rec_sum);
        S_put_u32(w, (uint32_t)len);
        S_put_raw(w, bytes, len);
    }
    S_put_u32(w, (uint32_t)c->outputs_len);
    S_put(w, c->outputs, c->outputs_len);
    S_put_u64(w, c->front_key);
    S_put_u32(w, (uint32_t)c->nfronts);
    for (size_t i = 0; i < c->nfronts; i++) {
        const cache_front *e = &c->fronts[i];
        S_put_u32(w, (uint32_t)strlen(e->src) + 1);
        S_put(w, e->src, strlen(e->src) + 1);
        S_put_u64(w, e->stamp);
        const char *bytes = e->page;
        size_t len = e->page_len;
        if (!bytes) {
            buf_clear(&scratch);
            if (enc && enc->front)
                enc->front(enc->ctx, e, &scratch);
            bytes = buf_cstr(&scratch);
            len = scratch.len;
        }
        S_put_u32(w, (uint32_t)len);
        S_put(w, bytes, len);
    }
    uint64_t sum = w->sum;
    S_put_raw(w, &sum, sizeof sum);
    int rc = ferror(f) || fflush(f) != 0 ? -1 : 0;
    off_t size = ftello(f);
    if (rc == 0 && (size < 0 || ftruncate(fd, size) != 0 ||
                    (finish && pwrite(fd, S_MAGIC, sizeof S_MAGIC, 0) != (ssize_t)sizeof S_MAGIC)))
        rc = -1;
    int saved = errno;
    if (fclose(f) != 0 && rc == 0)
        rc = -1;
    errno = saved;
    free(iobuf);
    buf_free(&scratch);
    return rc;
}
