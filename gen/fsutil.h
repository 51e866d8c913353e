/* fsutil: the file-system calls kvsite needs, with sizes bounded and errors as
 * values. Paths are plain C strings; results that allocate say so. */
#ifndef KV_FSUTIL_H
#define KV_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

enum { FS_OK = 0, FS_ENOENT = -1, FS_ETOOBIG = -2, FS_EOTHER = -3 };

/* Returns "a/b" (malloc'ed; caller frees). */
char *fs_join(const char *a, const char *b);
/* Appends the file's bytes to out. Returns FS_OK, FS_ENOENT, FS_ETOOBIG (more than
 * max bytes) or FS_EOTHER with errno set. */
int fs_read_file(const char *path, size_t max, buf *out);
/* Human text for a status of fs_read_file (errno-based for FS_EOTHER). */
const char *fs_strerror(int status, size_t max);
/* mkdir -p; returns 0 or -1 with errno set. */
int fs_mkdir_p(const char *path);
/* Creates or truncates path and writes len bytes; 0 or -1 with errno. */
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
