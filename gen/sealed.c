#include "sealed.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "stamp.h"

#define S_SUM_SIZE 8

struct sealed_writer {
    char *path, *tmp;
    int fd;
    int rc;
    uint64_t sum;
    size_t len;
    /* every chunk but the last is a multiple of eight bytes, so that the sum
     * of the chunks is stamp_bytes of the whole (stamp.c mixes eight bytes
     * at a step) */
    char chunk[65536];
};

sealed_writer *sealed_create(const char *path, const char magic[SEALED_MAGIC_SIZE])
{
    sealed_writer *w = xmalloc(sizeof *w);
    w->path = xstrdup(path);
    w->tmp = xasprintf("%s.new", path);
    w->fd = fs_open_own(w->tmp, true);
    w->rc = w->fd < 0 ? -1 : 0;
    w->sum = SEALED_SUM_SEED;
    w->len = 0;
    sealed_write(w, magic, SEALED_MAGIC_SIZE);
    return w;
}

static void S_flush(sealed_writer *w)
{
    w->sum = stamp_bytes(w->sum, w->chunk, w->len);
    if (w->rc == 0)
        w->rc = fs_write_all(w->fd, w->chunk, w->len);
    w->len = 0;
}

void sealed_write(sealed_writer *w, const void *p, size_t n)
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

int sealed_commit(sealed_writer *w)
{
    S_flush(w);
    uint64_t sum = w->sum;
    int rc = w->rc;
    if (rc == 0)
        rc = fs_write_all(w->fd, &sum, sizeof sum);
    if (w->fd >= 0 && close(w->fd) != 0 && rc == 0)
        rc = -1;
    if (rc == 0)
        rc = rename(w->tmp, w->path);
    if (rc != 0) {
        int e = errno;
        unlink(w->tmp);
        errno = e;
    }
    free(w->tmp);
    free(w->path);
    free(w);
    return rc;
}

bool sealed_load(sealed_map *m, const char *path, const char magic[SEALED_MAGIC_SIZE], size_t max)
{
    memset(m, 0, sizeof *m);
    /* a file of kvsite's own: a regular file, not through a link; a FIFO
     * put in its place is not waited on */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return false;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        (uint64_t)st.st_size >= SEALED_MAGIC_SIZE + S_SUM_SIZE && (uint64_t)st.st_size <= max) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            m->map = p;
            m->map_len = (size_t)st.st_size;
        }
    }
    close(fd);
    if (!m->map)
        return false;
    /* a file cut short under the mapping faults (SIGBUS) on the bytes past
     * its end: the state folder is kvsite's own, one build at a time writes
     * it (the lock), and these files are replaced by rename, never rewritten */
    const char *p = m->map;
    size_t body = m->map_len - S_SUM_SIZE;
    uint64_t sum;
    memcpy(&sum, p + body, sizeof sum);
    if (memcmp(p, magic, SEALED_MAGIC_SIZE) != 0 || stamp_bytes(SEALED_SUM_SEED, p, body) != sum) {
        sealed_unmap(m);
        return false;
    }
    m->data = p + SEALED_MAGIC_SIZE;
    m->len = body - SEALED_MAGIC_SIZE;
    return true;
}

void sealed_release(const sealed_map *m)
{
    if (m->map)
        madvise(m->map, m->map_len, MADV_DONTNEED);
}

void sealed_unmap(sealed_map *m)
{
    if (m->map)
        munmap(m->map, m->map_len);
    memset(m, 0, sizeof *m);
}
