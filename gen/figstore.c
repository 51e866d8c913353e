#include "figstore.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The pending bytes go out once there are this many. */
#define FLUSH_AT ((size_t)1 << 20)

int figstore_open(figstore *st, const char *dir)
{
    memset(st, 0, sizeof *st);
    buf_init(&st->pending);
    pthread_mutex_init(&st->lock, NULL);
    st->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (st->fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        /* a file system without O_TMPFILE: a named file, unlinked at once */
        char *tmpl = xasprintf("%s/.kvsite-figures-XXXXXX", dir);
        st->fd = mkostemp(tmpl, O_CLOEXEC);
        if (st->fd >= 0)
            unlink(tmpl);
        free(tmpl);
    }
    return st->fd < 0 ? -1 : 0;
}

void figstore_close(figstore *st)
{
    if (st->fd >= 0)
        close(st->fd);
    buf_free(&st->pending);
    pthread_mutex_destroy(&st->lock);
    memset(st, 0, sizeof *st);
    st->fd = -1;
}

int figstore_flush(figstore *st)
{
    const char *p = st->pending.ptr;
    size_t left = st->pending.len;
    while (left > 0 && !st->err) {
        ssize_t w = pwrite(st->fd, p, left, (off_t)st->flushed);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            st->err = w < 0 ? errno : EIO;
            break;
        }
        p += w;
        left -= (size_t)w;
        st->flushed += (uint64_t)w;
    }
    if (st->err) {
        /* the bytes are lost: count them, so later offsets stay right */
        st->flushed += left;
        buf_clear(&st->pending);
        errno = st->err;
        return -1;
    }
    buf_clear(&st->pending);
    return 0;
}

uint64_t figstore_append(figstore *st, const void *p, size_t n)
{
    pthread_mutex_lock(&st->lock);
    uint64_t off = st->flushed + st->pending.len;
    buf_put(&st->pending, p, n);
    if (st->pending.len >= FLUSH_AT)
        figstore_flush(st);
    pthread_mutex_unlock(&st->lock);
    return off;
}

int figstore_read(const figstore *st, uint64_t off, size_t n, buf *out)
{
    buf_clear(out);
    if (off + n < off || off + n > st->flushed + st->pending.len) {
        errno = EINVAL;
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
        memcpy(out->ptr + got, st->pending.ptr + (off + got - st->flushed), n - got);
    out->len = n;
    out->ptr[n] = '\0';
    return 0;
}

int figstore_view(const figstore *st, fs_window *w, uint64_t off, size_t n,
                  const char **p)
{
    if (off + n < off || off + n > st->flushed + st->pending.len) {
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
