#include "figstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Writes n bytes after the flushed ones. After a failed write the bytes
 * are counted all the same (and lost), so later offsets stay right. */
static void S_write_out(figstore *st, const char *p, size_t n)
{
    while (n > 0 && !st->err) {
        ssize_t w = pwrite(st->fd, p, n, (off_t)st->flushed);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            st->err = w < 0 ? errno : EIO;
            break;
        }
        p += w;
        n -= (size_t)w;
        st->flushed += (uint64_t)w;
    }
    st->flushed += n;
}

int figstore_open(figstore *st, const char *dir)
{
    memset(st, 0, sizeof *st);
    st->fd = -1;
    pthread_mutex_init(&st->lock, NULL);
    st->owner = getpid();
    void *m = mmap(NULL, FIGSTORE_PENDING, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED)
        return -1;
    st->pending = m;
    /* not inherited (see figstore.h); a kernel without it (before Linux
     * 4.14) shares the pages until they are written, as with malloc */
    madvise(st->pending, FIGSTORE_PENDING, MADV_WIPEONFORK);
    st->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (st->fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        /* a file system without O_TMPFILE: a named file, unlinked at once */
        char *tmpl = xasprintf("%s/.kvsite-figures-XXXXXX", dir);
        st->fd = mkostemp(tmpl, O_CLOEXEC);
        if (st->fd >= 0)
            unlink(tmpl);
        free(tmpl);
    }
    if (st->fd < 0) {
        int err = errno;
        munmap(st->pending, FIGSTORE_PENDING);
        st->pending = NULL;
        errno = err;
        return -1;
    }
    return 0;
}

void figstore_close(figstore *st)
{
    if (st->fd >= 0)
        close(st->fd);
    if (st->pending)
        munmap(st->pending, FIGSTORE_PENDING);
    pthread_mutex_destroy(&st->lock);
    memset(st, 0, sizeof *st);
    st->fd = -1;
}

int figstore_flush(figstore *st)
{
    S_write_out(st, st->pending, st->npending);
    st->npending = 0;
    if (st->err) {
        errno = st->err;
        return -1;
    }
    return 0;
}

uint64_t figstore_append(figstore *st, const void *p, size_t n)
{
    pthread_mutex_lock(&st->lock);
    uint64_t off = st->flushed + st->npending;
    if (n > FIGSTORE_PENDING - st->npending)
        figstore_flush(st); /* an error stays in st->err */
    if (n > FIGSTORE_PENDING) {
        S_write_out(st, p, n);
    } else if (n > 0) {
        memcpy(st->pending + st->npending, p, n);
        st->npending += n;
    }
    pthread_mutex_unlock(&st->lock);
    return off;
}

int figstore_read(const figstore *st, uint64_t off, size_t n, buf *out)
{
    buf_clear(out);
    if (off + n < off || off + n > st->flushed + st->npending) {
        errno = EINVAL;
        return -1;
    }
    if (off + n > st->flushed && st->owner != getpid()) {
        errno = EIO; /* another process's pending bytes: not in this one's buffer */
        return -1;
    }
    buf_grow(out, n);
    size_t got = 0;
    while (got < n && off + got < st->flushed) {
        size_t want = n - got;
        if (off + got + want > st->flushed)
            want = (size_t)(st->flushed - (off + got));
        ssize_t r = pread(st->fd, out->ptr + got, want, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = EIO;
            return -1;
        }
        got += (size_t)r;
    }
    if (got < n) /* the rest is still pending */
        memcpy(out->ptr + got, st->pending + (off + got - st->flushed), n - got);
    out->len = n;
    out->ptr[n] = '\0';
    return 0;
}

int figstore_view(const figstore *st, fs_window *w, uint64_t off, size_t n,
                  const char **p)
{
    if (off + n < off || off + n > st->flushed + st->npending) {
        errno = EINVAL;
        return -1;
    }
    if (off + n <= st->flushed)
        return fs_window_read(st->fd, w, off, n, FIGSTORE_WINDOW, p);
    /* some of them are still pending: the parent, before a flush */
    if (figstore_read(st, off, n, &w->bytes) != 0) {
        buf_clear(&w->bytes);
        return -1;
    }
    w->off = off;
    *p = w->bytes.ptr;
    return 0;
}
