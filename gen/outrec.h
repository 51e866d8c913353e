/* outrec: tables of what a build left in an output folder, so that the next
 * full build can tell a file holds the bytes it would write from one stat,
 * without reading the file.
 *
 * A table lists files by their path in the folder, each with its stamp (size,
 * inode, mtime and ctime as a stat gives them) and the SHA-256 of its bytes.
 * A file whose stat equals its entry's stamp still holds the bytes the digest
 * was taken of: any write since would have moved its ctime, which no one can
 * set back. The exception is a write within the same tick of the file
 * system's clock as the stat the stamp was taken from ("racily clean", as git
 * calls its index entries): an entry whose times are that close to the table's
 * making is left out (outrec_add), and the file is read as before.
 *
 * The file (output.h names them) is sealed (sealed.h): a table that does not
 * load (absent, damaged, from another version) is empty, which costs reads,
 * never wrong bytes. */
#ifndef KV_OUTREC_H
#define KV_OUTREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "sealed.h"

struct stat;

#define OUTREC_DIGEST_SIZE 32

/* The SHA-256 of a file's bytes. */
typedef struct {
    unsigned char b[OUTREC_DIGEST_SIZE];
} outrec_digest;

void outrec_digest_of(const void *data, size_t len, outrec_digest *d);

/* What a stat says of a file's identity and last change. All zero: none
 * (no file had a zero inode and ctime). */
typedef struct {
    uint64_t size, ino;
    int64_t mtime_ns, ctime_ns;
} outrec_stamp;

outrec_stamp outrec_stamp_of(const struct stat *st);
bool outrec_stamp_known(const outrec_stamp *s);
/* Whether s changed too close to since_ns (a CLOCK_REALTIME time in
 * nanoseconds, before the stat s was taken from), or after it, for a later
 * change within the same tick of the file system's clock to show in it: a
 * stamp that cannot tell such a change is not to be kept. */
bool outrec_stamp_racy(const outrec_stamp *s, int64_t since_ns);

/* A loaded table: the file mapped read-only, so that forked workers share
 * it, and unmapped (outrec_free) it no longer counts in the process's
 * memory, as freed heap would. */
typedef struct {
    sealed_map file; /* file.data NULL: none */
    uint32_t count;  /* entries */
} outrec;

/* Loads path into t (empty when it is absent or not a well-formed table).
 * Returns the number of entries. */
size_t outrec_load(outrec *t, const char *path);
void outrec_free(outrec *t);
/* Whether t lists rel with stamp st and digest d: then the file at rel,
 * with that stat, holds the bytes d is the digest of. */
bool outrec_holds(const outrec *t, const char *rel, const struct stat *st, const outrec_digest *d);

/* A table being made. Entries are copied in, one after the other in bytes
 * (stamp, digest, path with its NUL): a table for every page of a site is
 * made while the parent holds all of the site's records. */
typedef struct {
    buf bytes;
    size_t *at;       /* each entry's offset in bytes */
    size_t n, cap;
    int64_t since_ns; /* the making's start, CLOCK_REALTIME: the racy rule's line */
} outrec_builder;

/* Now, CLOCK_REALTIME in nanoseconds: a racy line (since_ns). */
int64_t outrec_now_ns(void);
/* Starts a table whose entries' stamps are all taken from now on. */
void outrec_builder_init(outrec_builder *b);
void outrec_builder_free(outrec_builder *b);
/* Makes room for n entries whose paths take path_bytes in all (with their
 * NULs), so that adding them grows nothing step by step. */
void outrec_builder_reserve(outrec_builder *b, size_t n, size_t path_bytes);
/* Adds rel (unless its stamp is unknown or racy: changed too close to the
 * start for a later write within the same clock tick to show). */
void outrec_add(outrec_builder *b, const char *rel, const outrec_stamp *s, const outrec_digest *d);
/* Writes the table to path (by way of path.new). 0, or -1 with errno. A
 * path listed twice keeps its last entry. The builder is then only to be
 * freed. */
int outrec_save(outrec_builder *b, const char *path);

#endif
