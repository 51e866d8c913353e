#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <ftw.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

char *fs_join(const char *a, const char *b)
{
    size_t n = strlen(a);
    if (n == 0 || (n == 1 && a[0] == '.'))
        return xstrdup(b);
    size_t m = strlen(b);
    bool slash = a[n - 1] != '/';
    char *p = xmalloc(n + slash + m + 1);
    memcpy(p, a, n);
    if (slash)
        p[n] = '/';
    memcpy(p + n + slash, b, m + 1);
    return p;
}

/* Appends the bytes of fd to out, up to max; st is fd's fstat. */
static int S_read_open(int fd, const struct stat *st, size_t max, buf *out)
{
    if (S_ISDIR(st->st_mode)) {
        errno = EISDIR;
        return FS_EOTHER;
    }
    if (S_ISREG(st->st_mode) && (size_t)st->st_size > max)
        return FS_ETOOBIG;
    size_t total = 0;
    /* a regular file is asked for one byte more than fstat says it has: the
     * short read ends it, and a request far past its end (a small file read
     * into a 64 KiB buffer) would set the kernel reading ahead for nothing */
    size_t expect = S_ISREG(st->st_mode) ? (size_t)st->st_size + 1 : 0;
    for (;;) {
        buf_grow(out, expect > total ? expect - total : 65536);
        size_t asked = out->cap - out->len - 1;
        if (expect > total && expect - total < asked)
            asked = expect - total;
        ssize_t r = read(fd, out->ptr + out->len, asked);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return FS_EOTHER;
        }
        if (r == 0)
            break;
        out->len += (size_t)r;
        out->ptr[out->len] = '\0';
        total += (size_t)r;
        if (total > max)
            return FS_ETOOBIG;
        /* a regular file reads short only at its end: no read to see 0 */
        if (S_ISREG(st->st_mode) && (size_t)r < asked)
            break;
    }
    buf_grow(out, 0);
    out->ptr[out->len] = '\0'; /* also for an empty file */
    return FS_OK;
}

/* path's bytes (S_read_open), opened with extra flags; with regular, only a
 * regular file's (FS_ENOTREG otherwise). */
static int S_read_path(const char *path, int flags, bool regular, size_t max, buf *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | flags);
    if (fd < 0)
        return errno == ENOENT ? FS_ENOENT : FS_EOTHER;
    struct stat st;
    int rc = fstat(fd, &st) != 0             ? FS_EOTHER
             : regular && !S_ISREG(st.st_mode) ? FS_ENOTREG
                                               : S_read_open(fd, &st, max, out);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int fs_read_file(const char *path, size_t max, buf *out)
{
    return S_read_path(path, 0, false, max, out);
}

int fs_read_regular(const char *path, size_t max, buf *out)
{
    return S_read_path(path, O_NOFOLLOW | O_NONBLOCK, true, max, out);
}

int fs_read_exact(int fd, void *p, size_t n)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r == 0)
                errno = 0;
            return -1;
        }
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

int fs_read_fd(int fd, size_t max, buf *out)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return FS_EOTHER;
    if (S_ISREG(st.st_mode) && st.st_nlink > 1)
        return FS_EHARDLINK;
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return FS_ENOTREG;
    return S_read_open(fd, &st, max, out);
}

/* True when rel is a relative path of plain components: not empty, no
 * leading '/', no empty, "." or ".." component. */
static bool S_plain_rel(const char *rel)
{
    if (!rel[0] || rel[0] == '/')
        return false;
    for (const char *seg = rel;;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return false;
        if (!end)
            return true;
        seg = end + 1;
    }
}

int fs_open_beneath_walk(int dir, const char *rel, int flags)
{
    if (!S_plain_rel(rel)) {
        errno = EXDEV;
        return -1;
    }
    int fd = dir;
    const char *seg = rel;
    char name[NAME_MAX + 1];
    for (;;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n > NAME_MAX) {
            errno = ENAMETOOLONG;
            break;
        }
        memcpy(name, seg, n);
        name[n] = '\0';
        int f = end ? O_RDONLY | O_DIRECTORY : flags;
        int next = openat(fd, name, f | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        int e = errno;
        struct stat st;
        /* O_NOFOLLOW | O_DIRECTORY on a link may say ENOTDIR: it is a link */
        if (next < 0 && e != ELOOP && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISLNK(st.st_mode))
            e = ELOOP;
        if (fd != dir)
            close(fd);
        errno = e;
        if (next < 0 || !end)
            return next;
        fd = next;
        seg = end + 1;
    }
    if (fd != dir)
        close(fd);
    return -1;
}

int fs_open_beneath(int dir, const char *rel, int flags)
{
    if (!S_plain_rel(rel)) {
        errno = EXDEV;
        return -1;
    }
#ifdef SYS_openat2
    struct open_how how = {
        .flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK),
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    long fd = syscall(SYS_openat2, dir, rel, &how, sizeof how);
    /* ENOTDIR: a link where O_DIRECTORY wants a folder says so, not ELOOP;
     * the walk tells the two apart */
    if (fd >= 0 || (errno != ENOSYS && errno != ENOTDIR))
        return (int)fd;
#endif
    return fs_open_beneath_walk(dir, rel, flags);
}

int fs_each_entry(int fd, int (*fn)(const char *name, unsigned char type, void *ctx), void *ctx)
{
    /* aligned for the kernel's struct linux_dirent64, which glibc's struct
     * dirent64 lays out */
    _Alignas(struct dirent64) char chunk[32768];
    for (;;) {
        ssize_t n = getdents64(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -1 : 0;
        for (ssize_t off = 0; off < n;) {
            const struct dirent64 *e = (const struct dirent64 *)(chunk + off);
            off += e->d_reclen;
            const char *nm = e->d_name;
            if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0')))
                continue;
            if (fn(nm, e->d_type, ctx))
                return 0;
        }
    }
}

int fs_root_open(const char *path)
{
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int fs_open_in(const char *root, const char *rel, int flags)
{
    int dir = fs_root_open(root);
    if (dir < 0)
        return -1;
    int fd = fs_open_beneath(dir, rel, flags);
    int e = errno;
    close(dir);
    errno = e;
    return fd;
}

int fs_read_beneath(int dir, const char *rel, size_t max, buf *out)
{
    int fd = fs_open_beneath(dir, rel, O_RDONLY);
    if (fd < 0)
        return errno == ENOENT ? FS_ENOENT : errno == ELOOP || errno == EXDEV ? FS_ELINK : FS_EOTHER;
    int rc = fs_read_fd(fd, max, out);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

int fs_read_in(const char *root, const char *rel, size_t max, buf *out)
{
    int dir = fs_root_open(root);
    if (dir < 0)
        return errno == ENOENT ? FS_ENOENT : FS_EOTHER;
    int rc = fs_read_beneath(dir, rel, max, out);
    int e = errno;
    close(dir);
    errno = e;
    return rc;
}

const char *fs_strerror(int status, size_t max)
{
    static __thread char msg[96];
    switch (status) {
    case FS_OK: return "ok";
    case FS_ENOENT: return "no such file";
    case FS_ETOOBIG:
        snprintf(msg, sizeof msg, "file too large (limit %zu bytes)", max);
        return msg;
    case FS_ELINK: return "a symbolic link (a project's files are read without following any): refused";
    case FS_EHARDLINK: return "a hard link (a file with more than one name): refused";
    case FS_ENOTREG: return "not a regular file: refused";
    default: return strerror(errno);
    }
}

int fs_mkdir_p(const char *path)
{
    if (!path[0]) {
        errno = ENOENT;
        return -1;
    }
    /* Deepest first: a build makes thousands of folders whose parent exists,
     * so the usual cost is one mkdir, not one per ancestor. On ENOENT walk up
     * (cutting the path at each '/') to an ancestor that exists or could be
     * made, then down again restoring the cuts. */
    char *p = xstrdup(path);
    size_t len = strlen(p);
    int rc = 0, e = 0;
    for (;;) {
        if (mkdir(p, 0777) == 0)
            break;
        e = errno;
        if (e == EEXIST && strlen(p) < len)
            break; /* an ancestor: the walk down makes the rest */
        if (e == EEXIST) {
            rc = fs_is_dir(p) ? 0 : -1; /* a file stands there: EEXIST, as mkdir -p says */
            goto done;
        }
        char *slash = strrchr(p, '/');
        if (e != ENOENT || !slash || slash == p) {
            rc = -1;
            goto done;
        }
        *slash = '\0';
    }
    for (size_t at = strlen(p); at < len; at = strlen(p)) {
        p[at] = '/';
        if (mkdir(p, 0777) == 0)
            continue;
        e = errno;
        /* EEXIST on the way down: a racing mkdir, or "a//b"; a file is an error */
        if (e != EEXIST || !fs_is_dir(p)) {
            rc = -1;
            goto done;
        }
    }
done:
    free(p);
    if (rc != 0)
        errno = e;
    return rc;
}

int fs_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int fs_send_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Writes data to fd and closes it; 0 or -1 with errno (of the first failure). */
static int S_write_close(int fd, const void *data, size_t len)
{
    if (fs_write_all(fd, data, len) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return close(fd) != 0 ? -1 : 0;
}

int fs_open_own(const char *path, bool empty)
{
    /* O_NONBLOCK: a FIFO without a reader fails the open (ENXIO) instead of
     * waiting for one; no O_TRUNC: what is there is looked at first */
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    for (int tries = 0; tries < 2; tries++) {
        int fd = open(path, flags, 0666);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink <= 1) {
            if (!empty || st.st_size == 0 || ftruncate(fd, 0) == 0)
                return fd;
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (fd < 0 && errno != ELOOP && errno != ENXIO && errno != EACCES)
            return -1; /* a folder among them: EISDIR, the caller's to judge */
        if (fd >= 0)
            close(fd);
        /* a link, a FIFO, a file with other names or one that may not be
         * written: removed (its other names and a link's target untouched),
         * then a new file */
        if (unlink(path) != 0 && errno != ENOENT)
            return -1;
        flags |= O_EXCL;
    }
    errno = EEXIST;
    return -1;
}

int fs_write_file(const char *path, const void *data, size_t len)
{
    int fd = fs_open_own(path, true);
    return fd < 0 ? -1 : S_write_close(fd, data, len);
}

int fs_copy_file(const char *from, const char *to, size_t *copied)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (out < 0) {
        int e = errno;
        close(in);
        errno = e;
        return -1;
    }
    char chunk[65536];
    size_t total = 0;
    int rc = 0;
    for (;;) {
        ssize_t r = read(in, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = r < 0 ? -1 : 0;
            break;
        }
        if (fs_write_all(out, chunk, (size_t)r) != 0) {
            rc = -1;
            break;
        }
        total += (size_t)r;
    }
    int e = errno;
    close(in);
    if (close(out) != 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (copied)
        *copied = total;
    errno = e;
    return rc;
}

static int S_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int rc = (flag == FTW_DP) ? rmdir(path) : unlink(path);
    return rc != 0 && errno != ENOENT ? -1 : 0;
}

int fs_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode))
        return unlink(path);
    return nftw(path, S_rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

bool fs_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool fs_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Opening to compare: a FIFO or device planted where a file was must not
 * block the open (O_NONBLOCK; fstat then tells it is not a regular file). */
#define S_CMP_FLAGS (O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)

/* True when the file at path (from dirfd) holds exactly data; *out (may be
 * NULL) gets its stat then. */

bool fs_same_at(int dirfd, const char *path, const void *data, size_t len, struct stat *out)
{
    int fd = openat(dirfd, path, S_CMP_FLAGS);
    if (fd < 0)
        return false;
    struct stat st;
    bool same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == len;
    char chunk[65536];
    size_t off = 0;
    while (same && off < len) {
        /* no more than the size fstat gave: a request past the end of a
         * small file sets the kernel reading ahead for nothing */
        size_t want = len - off < sizeof chunk ? len - off : sizeof chunk;
        ssize_t r = read(fd, chunk, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || off + (size_t)r > len || memcmp(chunk, (const char *)data + off, (size_t)r))
            same = false;
        else
            off += (size_t)r;
    }
    close(fd);
    if (same && out)
        *out = st;
    return same;
}

bool fs_same_files(const char *a, const char *b)
{
    int fa = open(a, S_CMP_FLAGS);
    int fb = fa < 0 ? -1 : open(b, S_CMP_FLAGS);
    struct stat sa, sb;
    bool same = fb >= 0 && fstat(fa, &sa) == 0 && fstat(fb, &sb) == 0 && S_ISREG(sa.st_mode) &&
                S_ISREG(sb.st_mode) && sa.st_size == sb.st_size;
    static char ca[65536], cb[65536]; /* one comparison at a time, in the parent */
    /* both of one size: compared up to it, asked for no more than is left
     * (see fs_same_at), then one read past it must find the end */
    size_t left = same ? (size_t)sa.st_size : 0;
    while (same) {
        ssize_t ra = read(fa, ca, left == 0 ? 1 : left < sizeof ca ? left : sizeof ca);
        if (ra < 0 && errno == EINTR)
            continue;
        if (ra <= 0) {
            same = ra == 0 && left == 0;
            break;
        }
        if ((size_t)ra > left) {
            same = false; /* grew since its fstat */
            break;
        }
        left -= (size_t)ra;
        ssize_t got = 0;
        while (got < ra) {
            ssize_t rb = read(fb, cb + got, (size_t)(ra - got));
            if (rb < 0 && errno == EINTR)
                continue;
            if (rb <= 0)
                break;
            got += rb;
        }
        same = got == ra && memcmp(ca, cb, (size_t)ra) == 0;
    }
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    return same;
}

bool fs_same(const char *path, const void *data, size_t len)
{
    return fs_same_at(AT_FDCWD, path, data, len, NULL);
}

/* Removes whatever blocks the folders leading to path (a file where a folder
 * must be) and makes them. */
static int S_make_parents(const char *path)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        if (fs_mkdir_p(dir) != 0) {
            /* a file stands in the way somewhere: remove the first one */
            for (char *p = dir + 1;; p++) {
                if (*p != '/' && *p != '\0')
                    continue;
                char keep = *p;
                *p = '\0';
                struct stat st;
                if (lstat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
                    unlink(dir);
                *p = keep;
                if (!keep)
                    break;
            }
            rc = fs_mkdir_p(dir);
        }
    }
    free(dir);
    return rc;
}

/* fs_open_own, the folders made first when they are missing, and a folder
 * standing where the file goes removed (an output's). */
static int S_open_for_write(const char *path)
{
    int fd = fs_open_own(path, true);
    if (fd < 0 && (errno == EISDIR || errno == ENOTDIR || errno == ENOENT)) {
        if (errno == EISDIR)
            fs_remove_tree(path);
        if (S_make_parents(path) != 0)
            return -1;
        fd = fs_open_own(path, true);
    }
    return fd;
}

int fs_sync_file(const char *path, const void *data, size_t len)
{
    return fs_sync_file_stat(path, data, len, NULL);
}

int fs_sync_file_stat(const char *path, const void *data, size_t len, struct stat *st)
{
    struct stat here;
    if (fs_same_at(AT_FDCWD, path, data, len, &here) && here.st_nlink <= 1) {
        if (st)
            *st = here;
        return 0;
    }
    return fs_put_file_stat(path, data, len, st);
}

int fs_put_file_stat(const char *path, const void *data, size_t len, struct stat *st)
{
    int fd = S_open_for_write(path);
    if (fd < 0)
        return -1;
    if (fs_write_all(fd, data, len) != 0 || (st && fstat(fd, st) != 0)) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return close(fd) != 0 ? -1 : 0;
}

/* ---------- fs_stream ---------- */

void fs_stream_open(fs_stream *w, const char *path, const char *old)
{
    memset(w, 0, sizeof *w);
    w->out = -1;
    w->path = xstrdup(path);
    w->in_place = old == NULL;
    w->cmp = open(old ? old : path, S_CMP_FLAGS);
    struct stat st;
    if (w->cmp >= 0 && (fstat(w->cmp, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(w->cmp);
        w->cmp = -1;
    }
    /* a file with other names is not kept nor written in place (they would
     * change with it): a new file is made, as output_write does */
    if (w->cmp >= 0 && w->in_place && st.st_nlink > 1) {
        close(w->cmp);
        w->cmp = -1;
    }
}

static void S_stream_fail(fs_stream *w)
{
    if (!w->err)
        w->err = errno ? errno : EIO;
}

/* The bytes differ from offset at on: path gets the first at bytes (the same
 * as the old ones) and is left open for the rest. */
static void S_stream_diverge(fs_stream *w, uint64_t at)
{
    if (w->in_place) {
        w->out = open(w->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (w->out < 0 || lseek(w->out, (off_t)at, SEEK_SET) < 0)
            S_stream_fail(w);
    } else {
        w->out = S_open_for_write(w->path);
        char chunk[65536];
        uint64_t done = 0;
        while (w->out >= 0 && done < at) {
            size_t want = at - done < sizeof chunk ? (size_t)(at - done) : sizeof chunk;
            ssize_t r = pread(w->cmp, chunk, want, (off_t)done);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0 || fs_write_all(w->out, chunk, (size_t)r) != 0) {
                if (r == 0)
                    errno = EIO; /* the old file shrank under us */
                break;
            }
            done += (uint64_t)r;
        }
        if (w->out < 0 || done < at)
            S_stream_fail(w);
    }
    close(w->cmp);
    w->cmp = -1;
}

/* True when the old file holds data at the stream's offset. */
static bool S_stream_same(fs_stream *w, const char *data, size_t len)
{
    if (w->scratch_cap < len) {
        free(w->scratch);
        w->scratch = xmalloc(len);
        w->scratch_cap = len;
    }
    size_t got = 0;
    while (got < len) {
        ssize_t r = pread(w->cmp, w->scratch + got, len - got, (off_t)(w->len + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return memcmp(w->scratch, data, len) == 0;
}

int fs_stream_write(fs_stream *w, const void *data, size_t len)
{
    if (w->err)
        return -1;
    if (w->cmp >= 0 && !S_stream_same(w, data, len))
        S_stream_diverge(w, w->len);
    else if (w->cmp < 0 && w->out < 0 && (w->out = S_open_for_write(w->path)) < 0)
        S_stream_fail(w);
    if (!w->err && w->out >= 0 && fs_write_all(w->out, data, len) != 0)
        S_stream_fail(w);
    w->len += len;
    return w->err ? -1 : 0;
}

int fs_stream_close(fs_stream *w, struct stat *st, bool *written)
{
    struct stat old;
    if (!w->err && w->cmp >= 0 && (fstat(w->cmp, &old) != 0 || (uint64_t)old.st_size != w->len))
        S_stream_diverge(w, w->len); /* the old file is longer (or gone): cut it */
    if (!w->err && w->cmp < 0 && w->out < 0 && (w->out = S_open_for_write(w->path)) < 0)
        S_stream_fail(w); /* nothing was written, and nothing was there */
    bool wrote = w->out >= 0;
    if (w->out >= 0) {
        if (!w->err && (ftruncate(w->out, (off_t)w->len) != 0 || (st && fstat(w->out, st) != 0)))
            S_stream_fail(w);
        if (close(w->out) != 0)
            S_stream_fail(w);
    } else if (w->cmp >= 0 && st && w->in_place) {
        *st = old;
    }
    if (w->cmp >= 0)
        close(w->cmp);
    int err = w->err;
    free(w->path);
    free(w->scratch);
    memset(w, 0, sizeof *w);
    if (written)
        *written = wrote && !err;
    errno = err;
    return err ? -1 : 0;
}

int fs_sync_copy(const char *from, const char *to, size_t *copied)
{
    buf b = BUF_INIT;
    int rc = fs_read_regular(from, (size_t)1 << 34, &b);
    if (rc != FS_OK) {
        if (rc == FS_ETOOBIG)
            errno = EFBIG;
        buf_free(&b);
        return -1;
    }
    if (copied)
        *copied = b.len;
    rc = fs_sync_file(to, buf_cstr(&b), b.len);
    buf_free(&b);
    return rc;
}

/* The folder rel (a/b) under the open folder top, opened without following
 * links. With create, missing folders are made and a file or link standing
 * where one goes is removed first; without, -1 when it is not there. */
static int S_open_dir_at(int top, const char *rel, bool create)
{
    int fd = dup(top);
    char *copy = xstrdup(rel), *save = NULL;
    for (char *seg = strtok_r(copy, "/", &save); seg && fd >= 0; seg = strtok_r(NULL, "/", &save)) {
        if (!strcmp(seg, "..") || !strcmp(seg, ".")) {
            /* O_NOFOLLOW stops links, not "..": it would climb out of top */
            close(fd);
            fd = -1;
            errno = EINVAL;
            break;
        }
        int next = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && create) {
            struct stat st;
            if (fstatat(fd, seg, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
                unlinkat(fd, seg, 0);
            if (mkdirat(fd, seg, 0777) == 0 || errno == EEXIST)
                next = openat(fd, seg, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        close(fd);
        fd = next;
    }
    free(copy);
    return fd;
}

int fs_remove_in(const char *top, const char *rel)
{
    int topfd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (topfd < 0)
        return -1;
    char *dir = xstrdup(rel);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : rel;
    if (slash)
        *slash = '\0';
    int fd = slash ? S_open_dir_at(topfd, dir, false) : dup(topfd);
    int rc = fd >= 0 && unlinkat(fd, base, 0) == 0 ? 0 : -1;
    if (fd >= 0)
        close(fd);
    /* then the folders left empty, deepest first */
    while (rc == 0 && slash) {
        slash = strrchr(dir, '/');
        const char *name = slash ? slash + 1 : dir;
        if (slash)
            *slash = '\0';
        int parent = slash ? S_open_dir_at(topfd, dir, false) : dup(topfd);
        bool gone = parent >= 0 && unlinkat(parent, name, AT_REMOVEDIR) == 0;
        if (parent >= 0)
            close(parent);
        if (!gone)
            break;
    }
    free(dir);
    close(topfd);
    return rc;
}

int fs_move_into(const char *from, const char *to, size_t *moved)
{
    size_t cap = 16, n = 0, count = 0;
    char **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = xstrdup("");
    int rc = 0;
    int top = open(to, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top < 0)
        rc = -1;
    while (n > 0 && rc == 0) {
        char *rel = stack[--n];
        char *dir = rel[0] ? fs_join(from, rel) : xstrdup(from);
        DIR *d = opendir(dir);
        int dst = d ? (rel[0] ? S_open_dir_at(top, rel, true) : dup(top)) : -1;
        if (!d || dst < 0) {
            rc = -1;
        } else {
            struct dirent *e;
            while (rc == 0 && (e = readdir(d))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                struct stat st;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                    rc = -1;
                } else if (S_ISDIR(st.st_mode)) {
                    if (n == cap)
                        stack = xrealloc(stack, (cap *= 2) * sizeof *stack);
                    stack[n++] = rel[0] ? fs_join(rel, e->d_name) : xstrdup(e->d_name);
                } else {
                    struct stat old;
                    if (fstatat(dst, e->d_name, &old, AT_SYMLINK_NOFOLLOW) == 0 &&
                        S_ISDIR(old.st_mode)) {
                        /* a folder stands where the file goes */
                        char *in_to = rel[0] ? xasprintf("%s/%s/%s", to, rel, e->d_name)
                                             : fs_join(to, e->d_name);
                        fs_remove_tree(in_to);
                        free(in_to);
                    }
                    if (renameat(dirfd(d), e->d_name, dst, e->d_name) != 0)
                        rc = -1;
                    else
                        count++;
                }
            }
        }
        if (d)
            closedir(d);
        if (dst >= 0)
            close(dst);
        free(dir);
        free(rel);
    }
    while (n > 0)
        free(stack[--n]);
    free(stack);
    if (top >= 0)
        close(top);
    if (moved)
        *moved = count;
    return rc;
}

int fs_window_read(int fd, fs_window *w, uint64_t off, size_t n, size_t ahead, const char **p)
{
    if (w->bytes.ptr && off >= w->off && n <= w->bytes.len && off - w->off <= w->bytes.len - n) {
        *p = w->bytes.ptr + (off - w->off);
        return 0;
    }
    size_t want = n > ahead ? n : ahead;
    buf_clear(&w->bytes);
    buf_grow(&w->bytes, want);
    w->off = off;
    while (w->bytes.len < want) {
        ssize_t r = pread(fd, w->bytes.ptr + w->bytes.len, want - w->bytes.len,
                          (off_t)(off + w->bytes.len));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            buf_clear(&w->bytes);
            return -1;
        }
        if (r == 0)
            break; /* the end of the file */
        w->bytes.len += (size_t)r;
    }
    if (w->bytes.len < n) {
        buf_clear(&w->bytes);
        errno = EIO;
        return -1;
    }
    *p = w->bytes.ptr;
    return 0;
}

void fs_window_free(fs_window *w)
{
    buf_free(&w->bytes);
    w->off = 0;
}
