/* sealed: a file of kvsite's state that is read whole and checked, or not at
 * all: the tables of the output (outrec.h) and the walks' memories (walk.h).
 *
 * The file is a magic of SEALED_MAGIC_SIZE bytes, the caller's bytes, then a
 * sum (stamp_bytes, seeded with SEALED_SUM_SEED) of everything before it.
 * It is written to a side file (path.new) and renamed over path, so a reader
 * sees the old file or the new one; it is loaded by mapping it read-only and
 * checking the magic and the sum. A file that does not check is no file:
 * the caller starts from nothing, which costs work, never a wrong result.
 * Numbers go in the machine's order: these files never leave the machine
 * that made them. */
#ifndef KV_SEALED_H
#define KV_SEALED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SEALED_MAGIC_SIZE 16
#define SEALED_SUM_SEED 0x6f75747265632031ull

/* A file being written: owned by the caller from sealed_create to
 * sealed_commit, which frees it. */
typedef struct sealed_writer sealed_writer;

/* Starts writing path (by way of path.new, whatever stands there replaced)
 * with its magic. Never NULL: a side file that cannot be made fails the
 * commit. */
sealed_writer *sealed_create(const char *path, const char magic[SEALED_MAGIC_SIZE]);
/* Appends n bytes (buffered: written a chunk at a time, so the caller need
 * not hold the whole file). */
void sealed_write(sealed_writer *w, const void *p, size_t n);
/* Ends the file with its sum and renames it over path; frees w. 0, or -1
 * with errno (path unchanged, the side file removed). */
int sealed_commit(sealed_writer *w);

/* A loaded file. data and len are the caller's bytes (after the magic, before
 * the sum); the mapping is the process's until sealed_unmap. */
typedef struct {
    const char *data;
    size_t len;
    void *map;
    size_t map_len;
} sealed_map;

/* Maps path when it is a regular file (not a link; a FIFO in its place is
 * not waited on) of at most max bytes whose magic and sum check. True, or
 * false with m empty. */
bool sealed_load(sealed_map *m, const char *path, const char magic[SEALED_MAGIC_SIZE], size_t max);
/* Once the caller has checked what it reads: the pages the checks touched
 * (every one, for the sum) leave the process's memory, and are faulted in
 * again from the page cache when read. */
void sealed_release(const sealed_map *m);
void sealed_unmap(sealed_map *m);

/* The numbers in a loaded file, at any offset (the mapping need not align
 * them). */
static inline uint32_t sealed_u32(const char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint64_t sealed_u64(const char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#endif
