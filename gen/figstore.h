/* figstore: the figures of every record, kept in a file instead of memory.
 *
 * A site of 10,000 pages has 200,000 figures: tens of megabytes that the
 * parent only passes on (to the report pages, checks.json and the cache).
 * The records' ids and links go there too (record_links): the link check
 * reads them back once, at the end.
 * The parent appends each record's encoded figures as it arrives and keeps
 * where they went; workers forked afterwards read them back with pread().
 * The file has no name (O_TMPFILE, or unlinked at once) and goes away with
 * the last process that holds it.
 *
 * Appends are buffered: figstore_flush() before forking readers, which
 * read flushed bytes only. The buffer is not inherited (MADV_WIPEONFORK):
 * the parent fills it while its workers run, and in memory they shared
 * every first write to a page would copy it (a page fault and a TLB flush,
 * per page, per phase). Pending bytes are read in the process that opened
 * the store only; elsewhere the read fails (EIO). Appends from several
 * threads at once are safe (a lock; the parent decodes cached records in
 * two threads); reads beside appends are not, except reads of flushed bytes
 * (pread). */
#ifndef KV_FIGSTORE_H
#define KV_FIGSTORE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "fsutil.h"

typedef struct {
    int fd;
    uint64_t flushed; /* bytes in the file */
    char *pending;    /* FIGSTORE_PENDING bytes, mapped (figstore_close unmaps) */
    size_t npending;  /* bytes of it after the flushed ones, not yet written */
    pid_t owner;      /* the process whose pending bytes they are */
    int err;          /* first errno of a failed write; 0 */
    pthread_mutex_t lock; /* figstore_append's */
} figstore;

/* The buffer's size: appends go out once it is full (a larger one at once). */
#define FIGSTORE_PENDING ((size_t)1 << 20)

/* Opens an empty store in the folder dir. Returns 0, or -1 with errno. */
int figstore_open(figstore *st, const char *dir);
void figstore_close(figstore *st);
/* Appends n bytes; returns their offset. A write error is kept in st->err
 * (and makes later reads of those bytes fail). */
uint64_t figstore_append(figstore *st, const void *p, size_t n);
/* Writes what is pending. 0, or -1 with errno. */
int figstore_flush(figstore *st);
/* Sets out to the n bytes at off (replacing its content). 0, or -1. */
int figstore_read(const figstore *st, uint64_t off, size_t n, buf *out);

/* Readers go through the records about in the order they were appended:
 * one pread of FIGSTORE_WINDOW bytes serves dozens of them (a report of
 * 200,000 figures made 30,000 preads). */
#define FIGSTORE_WINDOW (256u << 10)

/* Points *p at the n bytes at off, read through w (fs_window_read; bytes
 * still pending are copied into it). 0, or -1 with errno. */
int figstore_view(const figstore *st, fs_window *w, uint64_t off, size_t n,
                  const char **p);

#endif
