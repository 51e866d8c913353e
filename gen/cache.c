#include "cache.h"

#include <errno.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

static const char S_MAGIC[16] = "kvsite-cache 3\n";

void cache_init(cache *c)
{
    memset(c, 0, sizeof *c);
    buf_init(&c->data);
}

void cache_free(cache *c)
{
    buf_free(&c->data);
    free(c->jobs);
    free(c->fronts);
    cache_init(c);
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
    if (fs_read_file(path, max_bytes, &c->data) != FS_OK || c->data.len < sizeof S_MAGIC ||
        memcmp(c->data.ptr, S_MAGIC, sizeof S_MAGIC) != 0) {
        cache_free(c);
        return -1;
    }
    buf_reader rd = {c->data.ptr + sizeof S_MAGIC, c->data.ptr + c->data.len, false};
    c->global = buf_rd_u64(&rd);
    uint32_t n = buf_rd_u32(&rd);
    /* every entry takes at least 4 bytes: a corrupt count cannot allocate much */
    if (rd.bad || n > (size_t)(rd.end - rd.p) / 4) {
        cache_free(c);
        return -1;
    }
    c->njobs = n;
    c->jobs = xcalloc((size_t)n + 1, sizeof *c->jobs);
    for (size_t i = 0; i < n && !rd.bad; i++) {
        cache_entry *e = &c->jobs[i];
        e->present = buf_rd_u32(&rd) == 1;
        if (!e->present)
            continue;
        e->deps = buf_rd_u64(&rd);
        e->out_stamp = buf_rd_u64(&rd);
        e->digest = buf_rd_u64(&rd);
        e->reads = buf_rd_u64(&rd);
        e->rec_len = buf_rd_u32(&rd);
        e->rec = buf_rd_span(&rd, e->rec_len);
    }
    c->outputs_len = buf_rd_u32(&rd);
    c->outputs = buf_rd_span(&rd, c->outputs_len);
    c->front_key = buf_rd_u64(&rd);
    uint32_t nf = buf_rd_u32(&rd);
    if (rd.bad || nf > (size_t)(rd.end - rd.p) / 16) {
        cache_free(c);
        return -1;
    }
    c->fronts = xcalloc((size_t)nf + 1, sizeof *c->fronts);
    c->nfronts = nf;
    for (size_t i = 0; i < nf && !rd.bad; i++) {
        cache_front *f = &c->fronts[i];
        uint32_t srclen = buf_rd_u32(&rd);
        f->src = buf_rd_span(&rd, srclen);
        if (!f->src || srclen == 0 || f->src[srclen - 1] != '\0')
            rd.bad = true;
        f->stamp = buf_rd_u64(&rd);
        f->page_len = buf_rd_u32(&rd);
        f->page = buf_rd_span(&rd, f->page_len);
    }
    if (rd.bad || rd.p != rd.end || !S_plain_names(c->outputs, c->outputs_len)) {
        cache_free(c);
        return -1;
    }
    return 0;
}

/* Written through stdio: records are copied once, from where they are. */
static void S_put(FILE *f, const void *p, size_t n)
{
    if (n) /* fwrite wants a buffer even for nothing */
        fwrite(p, 1, n, f);
}
static void S_put_u64(FILE *f, uint64_t v) { S_put(f, &v, sizeof v); }
static void S_put_u32(FILE *f, uint32_t v) { S_put(f, &v, sizeof v); }

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
    /* Written over the last cache in place: a new file of 10 MB and the
     * release of the old one cost the kernel more than writing the bytes.
     * The magic is written last: until then the file reads as no cache, so
     * a build killed halfway leaves nothing that could be taken for one. */
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0 && errno == ELOOP && unlink(path) == 0)
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
        errno = EINVAL;
    }
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
    S_put(f, invalid, sizeof invalid);
    S_put_u64(f, c->global);
    S_put_u32(f, (uint32_t)c->njobs);
    for (size_t i = 0; i < c->njobs; i++) {
        const cache_entry *e = &c->jobs[i];
        S_put_u32(f, e->present ? 1 : 0);
        if (!e->present)
            continue;
        S_put_u64(f, e->deps);
        S_put_u64(f, e->out_stamp);
        S_put_u64(f, e->digest);
        S_put_u64(f, e->reads);
        const char *bytes = e->rec;
        size_t len = e->rec_len;
        if (!bytes) {
            buf_clear(&scratch);
            if (enc && enc->record)
                enc->record(enc->ctx, i, &scratch);
            bytes = buf_cstr(&scratch);
            len = scratch.len;
        }
        S_put_u32(f, (uint32_t)len);
        S_put(f, bytes, len);
    }
    S_put_u32(f, (uint32_t)c->outputs_len);
    S_put(f, c->outputs, c->outputs_len);
    S_put_u64(f, c->front_key);
    S_put_u32(f, (uint32_t)c->nfronts);
    for (size_t i = 0; i < c->nfronts; i++) {
        const cache_front *e = &c->fronts[i];
        S_put_u32(f, (uint32_t)strlen(e->src) + 1);
        S_put(f, e->src, strlen(e->src) + 1);
        S_put_u64(f, e->stamp);
        const char *bytes = e->page;
        size_t len = e->page_len;
        if (!bytes) {
            buf_clear(&scratch);
            if (enc && enc->front)
                enc->front(enc->ctx, e, &scratch);
            bytes = buf_cstr(&scratch);
            len = scratch.len;
        }
        S_put_u32(f, (uint32_t)len);
        S_put(f, bytes, len);
    }
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
