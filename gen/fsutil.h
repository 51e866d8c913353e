/* fsutil: the file-system calls kvsite needs, with sizes bounded and errors as
 * values. Paths are plain C strings; results that allocate say so. */
#ifndef KV_FSUTIL_H
#define KV_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum {
    FS_OK = 0,
    FS_ENOENT = -1,
    FS_ETOOBIG = -2,
    FS_EOTHER = -3,
    FS_ELINK = -4,     /* a symbolic link on the way, or a path that leaves its folder */
    FS_EHARDLINK = -5, /* a regular file with more than one name */
    FS_ENOTREG = -6    /* not a regular file (a folder, a FIFO, a device) */
};

/* Returns "a/b" (malloc'ed; caller frees). */
char *fs_join(const char *a, const char *b);
/* Appends the file's bytes to out. Returns FS_OK, FS_ENOENT, FS_ETOOBIG (more than
 * max bytes) or FS_EOTHER with errno set. */
int fs_read_file(const char *path, size_t max, buf *out);
/* fs_read_file for a file kvsite keeps (its state folder's, an output's):
 * only a regular file, not through a link; a FIFO or device put in its
 * place is FS_ENOTREG, not waited on (a FIFO's open waits for a writer). */
int fs_read_regular(const char *path, size_t max, buf *out);
/* Human text for a status of fs_read_file and the fs_*_beneath readers
 * (errno-based for FS_EOTHER). */
const char *fs_strerror(int status, size_t max);

/* ---- files of a project ----
 * Everything a pull request can change (content/, templates/, checks/,
 * site.yaml) is opened beneath a folder handle, never by a path name that the
 * kernel resolves freely: no symbolic link is followed, anywhere on the way,
 * and no ".." or absolute path is taken; a file is read from the descriptor
 * that was checked (fstat), so swapping it for a link after the check reads
 * nothing else. The project root itself is the one name resolved normally:
 * it comes from the command line, not from the pull request. */

/* Opens the folder at path (the project root) for the *_beneath calls; an fd
 * the caller closes, or -1 with errno. */
int fs_root_open(const char *path);
/* Opens rel ("a/b/c") beneath the open folder dir with flags (O_RDONLY,
 * O_RDONLY | O_DIRECTORY), adding O_CLOEXEC, O_NOFOLLOW and O_NONBLOCK (a FIFO
 * does not block the open). Uses openat2 with RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, or fs_open_beneath_walk where the kernel has no openat2
 * (ENOSYS). Returns an fd the caller closes, or -1 with errno: ELOOP for a
 * symbolic link anywhere in rel, EXDEV for an absolute path or an empty, "."
 * or ".." component, else what openat says (ENOENT, ENOTDIR, ...). */
int fs_open_beneath(int dir, const char *rel, int flags);
/* The same, one O_NOFOLLOW openat per component: the fallback, exported so
 * that the tests run it on kernels that have openat2. */
int fs_open_beneath_walk(int dir, const char *rel, int flags);
/* Calls fn for each entry of the open folder fd but "." and "..", with its
 * name and d_type (DT_UNKNOWN where the file system does not say), reading
 * the entries with getdents64 into one buffer (no DIR: a folder costs its
 * open, its reads and its close). fn returns nonzero to stop. 0, or -1 with
 * errno when the folder cannot be read. fd stays open. */
int fs_each_entry(int fd, int (*fn)(const char *name, unsigned char type, void *ctx), void *ctx);

/* fs_open_beneath from the folder at root (opened for this call only). */
int fs_open_in(const char *root, const char *rel, int flags);
/* All n bytes to fd (fs_send_all: to a socket, without SIGPIPE when the
 * other end is gone), or exactly n bytes from it, through short counts and
 * EINTR: 0, or -1 (errno set; 0 for the end of the input). */
int fs_write_all(int fd, const void *p, size_t n);
int fs_send_all(int fd, const void *p, size_t n);
int fs_read_exact(int fd, void *p, size_t n);
/* Appends the bytes of the regular file open at fd (not closed) to out, as
 * fs_read_file does, after an fstat of that fd: FS_ENOTREG for anything but a
 * regular file, FS_EHARDLINK for one with more than one name (a hard link can
 * put any file of the machine that the user can read into a checkout). */
int fs_read_fd(int fd, size_t max, buf *out);
/* fs_open_beneath then fs_read_fd: FS_OK, FS_ENOENT, FS_ELINK (ELOOP, EXDEV),
 * FS_ETOOBIG, FS_EHARDLINK, FS_ENOTREG or FS_EOTHER with errno set. */
int fs_read_beneath(int dir, const char *rel, size_t max, buf *out);
/* fs_read_beneath from the folder at root. */
int fs_read_in(const char *root, const char *rel, size_t max, buf *out);
/* mkdir -p; returns 0 or -1 with errno set. */
int fs_mkdir_p(const char *path);
/* Opens path for writing a file of kvsite's own (an output, a state file),
 * never through what stands there: a link, a FIFO, any file that is not
 * regular, a regular one with other names (a hard link: writing would
 * change them too) or one this user may not write is unlinked and a new
 * file made in its place (the folder's permission decides). With
 * empty, the file is truncated; without, its old bytes stay until written
 * over (the caller truncates at the end). The fd, or -1 with errno (EISDIR:
 * a folder stands there; ENOENT, ENOTDIR: a folder is missing). */
int fs_open_own(const char *path, bool empty);
/* fs_open_own, then len bytes; 0 or -1 with errno. */
int fs_write_file(const char *path, const void *data, size_t len);
/* Copies a regular file; 0 or -1 with errno. */
int fs_copy_file(const char *from, const char *to, size_t *copied);
/* Makes path hold exactly data: when it already does, nothing is written (no
 * new inode, no changed mtime); otherwise it is created or truncated and
 * written. Missing folders are made, and a file or folder that stands where a
 * folder or the file must go is removed first. 0 or -1 with errno. */
int fs_sync_file(const char *path, const void *data, size_t len);
/* The same, and *st (may be NULL) gets the file's stat as it is left. */
struct stat;
int fs_sync_file_stat(const char *path, const void *data, size_t len, struct stat *st);
/* fs_sync_file_stat without the comparison (the caller made it): path is
 * created or truncated and written. */
int fs_put_file_stat(const char *path, const void *data, size_t len, struct stat *st);
/* fs_sync_file for output too big to hold whole (checks.json): written in
 * chunks, compared with the file it would replace as they come. While the
 * bytes are the same nothing is written; from the first chunk that differs
 * on, chunks go to path (in place over the old file from that offset, or
 * after a copy of the same prefix when the old bytes are elsewhere). */
typedef struct {
    int cmp;        /* the old bytes, while they are the same; else -1 */
    int out;        /* path, open once the bytes differ; else -1 */
    bool in_place;  /* the old bytes are path's own */
    char *path;     /* owned */
    uint64_t len;   /* bytes so far */
    int err;        /* first errno; the stream writes nothing after it */
    char *scratch;  /* owned: the old bytes of a chunk */
    size_t scratch_cap;
} fs_stream;

/* old: the file whose bytes count as already there (an incremental build's
 * published copy); NULL: path itself. */
void fs_stream_open(fs_stream *w, const char *path, const char *old);
int fs_stream_write(fs_stream *w, const void *data, size_t len);
/* Finishes and frees w. 0 or -1 with errno (of the first failure). *st (may
 * be NULL) gets path's stat when the stream wrote it; *written says whether
 * it did (false: the old bytes were all the same). */
int fs_stream_close(fs_stream *w, struct stat *st, bool *written);
/* A reader's window on a file it reads by offset, about in order (records
 * of the build cache, figures of the figure store): one pread of `ahead`
 * bytes serves the records after the one asked for. */
typedef struct {
    buf bytes;    /* the file's bytes from off on */
    uint64_t off;
} fs_window;

/* Points *p at the n bytes at off of fd, through w: from the window when it
 * holds them, else read with up to max(n, ahead) bytes from off. Valid until
 * w is used again or freed. 0, or -1 with errno (EIO: the file ends before
 * off + n). */
int fs_window_read(int fd, fs_window *w, uint64_t off, size_t n, size_t ahead, const char **p);
void fs_window_free(fs_window *w);
/* True when the files at a and b are regular files with the same bytes. */
bool fs_same_files(const char *a, const char *b);
/* True when path is a regular file (not a link) holding exactly data. */
bool fs_same(const char *path, const void *data, size_t len);
/* The same for path relative to the folder open at dirfd (AT_FDCWD: the
 * working one; a writer keeps its output folder open and names its files
 * from there, not from /); *st (may be NULL) gets the file's stat when the
 * bytes are the same. */
bool fs_same_at(int dirfd, const char *path, const void *data, size_t len, struct stat *st);
/* Moves every file under from (a folder this process made) to the same place
 * under to, replacing what is there; folders are made as needed. Folders of
 * to are opened without following symbolic links, so a link planted in to
 * cannot lead a file out of it. 0, or -1 with errno (files moved so far stay
 * moved). *moved counts the files. */
int fs_move_into(const char *from, const char *to, size_t *moved);
/* Removes the file rel under the folder top, opening rel's folders without
 * following links, then the folders it leaves empty. 0 or -1. */
int fs_remove_in(const char *top, const char *rel);
/* The same for a copy of the file at from; *copied is its size. */
int fs_sync_copy(const char *from, const char *to, size_t *copied);
/* rm -rf without following symbolic links; 0 or -1 with errno. A missing path is 0. */
int fs_remove_tree(const char *path);
bool fs_is_dir(const char *path);
bool fs_exists(const char *path);

#endif
