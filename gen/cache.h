/* cache: what the last successful build knew about each page, for
 * incremental builds. One file in the state folder (.kvsite/<out>.cache) holds, for
 * every job of that build, the page's encoded record and four fingerprints:
 *
 *   deps       its source file and every template and checks/ file it read
 *              (as the build's file stamps saw them: size, mtime, ctime, inode);
 *   out_stamp  its output file as the build left it;
 *   stage_stamp its file in the staging folder as the build left it, when
 *              that holds the same bytes (the old output's copy, swapped
 *              out: incr_outputs need not stat it again once it is back);
 *              0: not known;
 *   digest     what other pages can read of its record (record_digest);
 *   reads      the digests of the records it read, in order.
 *
 * and the build's global key (binary, flags, site.yaml, the sources, the
 * whole page index): when that differs, no job's entry is used.
 *
 * Beside them, each page's parsed front matter with its file's stamp, so an
 * unchanged file is not read and parsed again (valid while front_key holds,
 * whatever the global key).
 *
 * A loaded cache keeps the file open and holds only the fingerprints, the
 * output list and the front matter: a record is read from the file when it
 * is asked for (cache_record), so a 40 MB cache of 200,000 figures never
 * sits in memory. Saving over the file a cache was loaded from ends that
 * cache's use: its records are not to be read afterwards. */
#ifndef KV_CACHE_H
#define KV_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "fsutil.h"

typedef struct {
    bool present;
    uint64_t deps, out_stamp, stage_stamp, digest, reads;
    uint64_t rec_sum; /* loaded: the checksum of the record's bytes */
    const char *rec;  /* saving: the encoded record, or NULL: made by
                       * cache_encoders.record; loaded: NULL (cache_record) */
    size_t rec_len;
    uint64_t rec_off; /* loaded: where the record is in the file */
} cache_entry;

/* A page's parsed front matter, valid while its file keeps the same stamp. */
typedef struct {
    const char *src;  /* "content/a.md" */
    uint64_t stamp;
    const char *page; /* content_page_encode; NULL: made by cache_encoders.front */
    size_t page_len;
    size_t ref;       /* the saver's own number for the page */
} cache_front;

typedef struct {
    int fd;              /* the loaded file; -1 */
    buf tail;            /* the loaded outputs and front matter bytes */
    fs_window win;       /* bytes of the file read ahead for cache_record */
    uint64_t global;
    size_t njobs;
    cache_entry *jobs;   /* njobs entries */
    const char *outputs; /* NUL-separated output files of that build, sorted */
    size_t outputs_len;
    uint64_t front_key;  /* what parsing depends on (binary, site.yaml) */
    size_t nfronts;
    cache_front *fronts;
    uint64_t file_stamp; /* loaded: the file's stamp (stamp.h) as it was read */
} cache;

void cache_init(cache *c);
/* Reads path (at most max_bytes). Returns 0, or -1 when it is missing, too
 * large, malformed or damaged (any byte but a record's fails the file's
 * checksum): c is then empty. */
int cache_load(cache *c, const char *path, size_t max_bytes);
void cache_free(cache *c);
/* True when c was loaded from the file that is at path now, unchanged since
 * (the same inode, size, modification and change times as when it was
 * read: a file written over in place is not the same). */
bool cache_loaded_from(const cache *c, const char *path);
/* Sets out to the encoded record of a present job of a loaded cache. 0, or
 * -1 (an I/O error, or EILSEQ: the record's bytes fail their checksum; errno
 * set): the caller renders the page instead. Reads ahead: asking for records in job
 * order reads the file in a few large pieces. */
int cache_record(cache *c, size_t job, buf *out);
/* The same through the caller's window (fs_window, freed by the caller):
 * threads that read records at once each bring their own. */
int cache_record_via(const cache *c, size_t job, fs_window *win, buf *out);

/* Bytes made while saving, one entry at a time, so a big site's cache is
 * never whole in memory: they append to out. */
typedef struct {
    void (*record)(void *ctx, size_t job, buf *out);
    void (*front)(void *ctx, const cache_front *f, buf *out);
    /* NULL, or told each present job's record checksum as it is written
     * (what cache_entry.rec_sum will be once the file is loaded) */
    void (*record_sum)(void *ctx, size_t job, uint64_t sum);
    void *ctx;
} cache_encoders;

/* Writes c to path, over the file that is there, its magic last (until
 * then it loads as no cache); entries without bytes get them from enc (which
 * may be NULL when all have them). Returns 0, or -1 with errno. */
int cache_save(const cache *c, const char *path, const cache_encoders *enc);
/* The same, but the file keeps reading as no cache until cache_finish(path):
 * for a cache written while the build that makes it may still fail. */
int cache_save_unfinished(const cache *c, const char *path, const cache_encoders *enc);
int cache_finish(const char *path);

#endif
