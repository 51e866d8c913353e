/* output: where a build's files go and how they get there. One writer
 * (output_write: write-if-changed, with the output byte accounting) serves
 * the workers' pages and the parent's files alike; the rest is the build's
 * output folder: its location and lock, the staging folder a full build
 * writes into, the folder an incremental build writes its changed files to,
 * the sweep of stale files, and publishing.
 *
 * kvsite's state lives in one folder beside the output, <parent>/.kvsite
 * (OUTPUT_STATE_DIR): for the output <out>, <out>.lock, the staging folder
 * <out>.prev, <out>.incr, <out>.synced, the tables <out>.files and
 * <out>.prev.files (outrec.h), the walks' memos of the two folders
 * <out>.dirs and <out>.prev.dirs (walk.h), the cache and stamp build.c keeps, and
 * <out>.serve (serve.h: the running kvsite serve's lock and
 * address); nothing else goes there. It is on the output's file system, as
 * the swap below needs.
 *
 * A full build writes into the staging folder (<out>.prev, the output of the
 * build before the last one: only what changed is rewritten) and publishes by
 * swapping it with the output. An incremental build writes the files whose
 * bytes differ from the published ones into <out>.incr; to publish, the
 * staging folder is made the output's copy (after an incremental build it
 * is one but for the files a mark file, <out>.synced, lists), those files
 * are moved into it, and it is swapped with the output the same way. Either
 * way the output is the old one or the new one, whenever the build stops. */
#ifndef KV_OUTPUT_H
#define KV_OUTPUT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "diag.h"
#include "outrec.h"
#include "strmap.h"

struct stat;

/* The state folder's name, beside the output. */
#define OUTPUT_STATE_DIR ".kvsite"

/* Where one file goes. */
typedef struct {
    const char *dir;      /* the folder written to; NULL: nothing is written (kvsite check) */
    const char *same_dir; /* NULL, or the published output (incremental builds): a
                           * file whose bytes are already there is not written */
    uint64_t cap;         /* limits.output_bytes, 0: none. Once what this process
                           * counted through output_write would pass it, nothing
                           * more is written (an error at the file) */
    const char *diff_dir; /* NULL, or the published output (full builds that have
                           * one): output_differs compares with it */
    /* Descriptors of dir, same_dir and diff_dir open as folders (fs_open_dirs),
     * or 0 for none: a file is then compared from the folder's descriptor,
     * not looked up again from / (a writer of 10,000 pages makes 10,000
     * lookups of each folder's path otherwise) */
    int dir_fd, same_fd, diff_fd;
    /* NULL, or what the last builds left in dir and diff_dir (outrec.h): a
     * file there whose stat and digest its table lists is not read */
    const outrec *dir_rec, *diff_rec;
} output_dest;

/* The start of the error of a site larger than limits.output_bytes: the
 * parent reports it once, whoever found it first. */
#define OUTPUT_CAP_MSG "the site is larger than limits.output_bytes"
/* The start of the error of a page that could not be written for a full
 * disk (or quota): the parent reports the first, with how many more. */
#define OUTPUT_FULL_MSG "no room on the disk for the output"
/* Adds bytes written elsewhere (the workers' pages, in the parent) to what
 * this process counts against the cap. */
void output_count(uint64_t bytes);
/* That error, at file (may be NULL): total bytes against the cap. */
void output_cap_error(diag_list *dl, const char *file, uint64_t total, uint64_t cap);

/* Makes d->dir/rel hold len bytes of data, unless d->same_dir/rel already
 * does (and leaves an unchanged file alone: no new inode, no write). dg: NULL,
 * or the data's digest, with which d->dir_rec may tell the file is unchanged
 * from a stat. *bytes
 * grows by the file's size as the output limit counts it (an empty file
 * counts 1: a count of 0 means no file), unless the write fails for another
 * reason than the cap. Returns 1
 * when d->dir/rel holds data now (written, or left alone because it already
 * did: st, which may be NULL, gets its stat either way), 0 when nothing was
 * to be written there (no dir, or same_dir has the bytes), -1 on failure (an
 * error at file, which may be NULL, goes to dl; errno set: EFBIG past the
 * cap). */
int output_write(const output_dest *d, const char *rel, const void *data, size_t len,
                 const outrec_digest *dg, const char *file, diag_list *dl, uint64_t *bytes,
                 struct stat *st);

/* After output_write: whether d->diff_dir/rel lacks these bytes (true when
 * there is no diff_dir). A full build's writers report it, so that the
 * staging folder it leaves (the old output) is marked as the new output's
 * copy but for those files, and the next incremental build need not compare
 * the two folders. dg as for output_write (d->diff_rec). When it returns
 * false and same_st is not NULL, *same_st is the published file's stat (for
 * the tables after the swap: output_table_save). */
bool output_differs(const output_dest *d, const char *rel, const void *data, size_t len,
                    const outrec_digest *dg, struct stat *same_st);

/* Opens d's folders for its *_fd fields (each left 0 when it cannot be
 * opened: the path serves then), and closes them. */
void output_dest_open(output_dest *d);
void output_dest_close(output_dest *d);

/* The output file of a URL, relative to the output folder: "/a/b/" is
 * "a/b/index.html", "/x.css" is "x.css". Malloc'ed; the caller frees it. */
char *output_rel(const char *url);

/* What the staging folder holds before a full build: its regular files
 * (relative paths, NUL-separated), and whether anything in it is neither a
 * regular file nor a folder (a link planted there could lead writes out).
 * One walk serves both the safety check and the sweep after the build; it
 * runs in a thread of its own while the parent reads the content. */
typedef struct {
    const char *dir;
    char *memo;     /* the walk's memo of dir (walk.h), or NULL; owned */
    buf files;
    buf empty_dirs; /* folders with nothing in them, the same way */
    bool links;
    pthread_t thread;
    bool started, done;
    atomic_bool stop; /* set by the parent when the scan is not needed */
} output_scan;

/* One build's output. Everything in it is owned by it (output_free). */
typedef struct {
    char *out_abs;     /* the final output folder, absolute */
    char *state_dir;   /* <its parent>/.kvsite: made by output_setup unless check_only */
    char *staging;     /* NULL in check mode */
    char *incr_dir;    /* output_begin_incremental's folder; NULL before */
    bool had_output;   /* the output existed when the build chose full or
                        * incremental: a full build's writers compare with it */
    bool incremental;  /* files go to incr_dir, compared with out_abs's */
    /* An incremental build's view of the staging folder, read when it
     * begins: whether the last publish's mark was there (then the folder is
     * the output's copy but for the files it lists, dirty, NUL-separated,
     * each also a key of dirty_set), and the publish syncs only those */
    bool marked;
    buf dirty;
    strmap dirty_set;
    int lock_fd;       /* one build at a time per output folder; -1 */
    strmap outputs;    /* every file of this build, relative to the output folder */
    buf extras;        /* the output files that are not jobs' pages, NUL-separated */
    uint64_t extra_bytes; /* their bytes as output_write counts them */
    uint64_t cap;      /* limits.output_bytes, for output_dest_of */
    output_scan scan;
    /* The published output's files: after the swap they are the staging
     * folder's, which the mark lists against the new output's. Walked in a
     * thread of its own beside the staging folder's scan, and done with it
     * (no thread runs while workers fork: a fork copies only the forking
     * thread, and an allocator lock another thread held would never be
     * released): on a cold page cache, the walk brings in the folders the
     * writers then look up, several at a time (walk.h), where the writers
     * would wait on them one by one. A full build that scanned late walks
     * it once no worker forks any more. */
    output_scan published;
    /* The tables (outrec.h) of the output (<out>.files) and of the staging
     * folder (<out>.prev.files), loaded for a full build; the new ones are
     * made after the swap (output_table_save), when the staging folder's
     * files are the output's and the old output's are the staging folder's */
    outrec out_rec, stage_rec;
    int64_t tables_since; /* when they were loaded: the new ones' racy line */
    bool tables;          /* output_load_tables ran */
    bool published_full;  /* output_publish swapped the folders */
} output;

void output_init(output *o);
/* Works out the output folder (out: relative to root unless absolute; NULL
 * for <root>/site), refuses one that would replace the project or its
 * sources, and, unless check_only, makes the state folder, takes the lock
 * and makes the staging folder. 0, or -1 with an error in dl. */
int output_setup(output *o, const char *root, const char *root_real, const char *out,
                 bool check_only, diag_list *dl);
/* Makes the state folder (o->state_dir, set by output_setup) unless it is
 * there, refusing one that is a link or not a folder. 0, or -1 with an
 * error in dl. */
int output_state_dir(const output *o, diag_list *dl);
/* A file of the state folder a build keeps: "<state_dir>/<out>.<what>".
 * Malloc'ed. */
char *output_side_path(const output *o, const char *what);

/* Starts scanning the staging folder in a thread of its own, and walking the
 * published output (when there is one) in another. */
void output_scan_start(output *o);
/* A full build that had an output, once no more workers fork: starts walking
 * the published output in a thread of its own unless it was walked;
 * output_publish waits for it (and walks it then when it was not started). */
void output_scan_published(output *o);
/* Stops the scans when they are not needed (nothing to build). */
void output_scan_stop(output *o);
/* Waits for the scans (or makes the staging folder's now when no thread runs
 * it: then the published output is walked later). A staging folder with
 * links planted in it is emptied. */
void output_scan_finish(output *o);

/* A full build, before its files are written: loads the tables of the output
 * and the staging folder (whose file goes: the staging folder is about to
 * change), and notes the time: the new tables' racy line. */
void output_load_tables(output *o);
/* Once the workers are done: frees the loaded tables. */
void output_tables_read(output *o);
/* After output_publish: a new table for the output (staging false: what the
 * build wrote, each page's stamp in the staging folder as its writer left
 * it) or for the staging folder (true: the old output's pages whose bytes
 * the build found unchanged, each with that file's stamp). The caller fills
 * b, started with output_table_start (its racy line is the loading of the
 * old tables, before any page was written), one table at a time: a table of
 * every page of a big site is megabytes. Saved only after a full build's
 * publish, the staging folder's only when it holds the old output. */
void output_table_start(const output *o, outrec_builder *b);
void output_table_save(const output *o, bool staging, outrec_builder *b);

/* From here on, files go to a folder of their own (<out>.incr), moved into
 * the output when the build succeeds. -1 (an error in dl) when the folder
 * cannot be made: the build is then not incremental. */
int output_begin_incremental(output *o, diag_list *dl);
/* An incremental build: whether the staging folder's rel is, by the last
 * publish's mark, the output's copy that this build's publish leaves as it
 * is (so a stat of it now is the published file's once the folders swap). */
bool output_staging_keeps(const output *o, const char *rel);
/* An incremental build found the staging folder's rel changed since the
 * last build left it: its publish copies the output's over it, as it does
 * the files the mark lists. Not thread-safe. */
void output_staging_repair(output *o, const char *rel);
/* Where this build's files go. */
output_dest output_dest_of(const output *o);
/* Whether this build writes files (false: kvsite check). */
bool output_writes(const output *o);

/* Notes rel as a file of this build (kept by the sweep and the publish). */
void output_note(output *o, const char *rel);
/* Makes room for n more notes at once (no table grown step by step). */
void output_note_room(output *o, size_t n);
/* The same for a file that is not a job's page (an asset, the feed). */
void output_note_extra(output *o, const char *rel);
/* Notes rel as an extra and writes it (output_write), its bytes counted in
 * extra_bytes. 0 or -1 (an error in dl). */
int output_emit(output *o, const char *rel, const void *data, size_t len, diag_list *dl);

/* A full build is about to rewrite the staging folder: it is no longer the
 * output's copy (the mark goes). */
void output_unmark(output *o);

/* A full build: removes from the staging folder every file this build did
 * not produce (as the scan found them before the build), and the folders
 * left empty: nothing stale survives. */
void output_sweep(output *o);
/* A full build: swaps the staging folder in, in one rename; the old output
 * becomes the staging folder of the next build. fresh (NUL-separated,
 * fresh_len bytes; NULL: unknown) lists the pages whose bytes differ from
 * the old output's (output_differs): with it, the old output is marked as
 * the new one's copy but for those, the extras and the files the new output
 * lacks (the mark an incremental publish leaves). 0, or -1 with an error in
 * dl. */
int output_publish(output *o, const char *fresh, size_t fresh_len, diag_list *dl);
/* An incremental build: makes the staging folder the output's copy (prev:
 * the files the last build wrote, NUL-separated, prev_len bytes), moves what
 * this build wrote into it, removes from it the files of prev this build did
 * not write, and swaps it in. 0, or -1 with an error in dl (the output
 * unchanged). */
int output_publish_incremental(output *o, const char *prev, size_t prev_len, diag_list *dl);
/* After a failed build: removes what it wrote (the incremental folder; the
 * staging folder a full build rewrote), never the output. */
void output_discard(output *o);

/* After publishing (or failing): removes the incremental folder and ends the
 * scan. */
void output_done(output *o);
/* Lets the next build of this output folder start. */
void output_unlock(output *o);
/* Frees everything (output_done and output_unlock first). */
void output_free(output *o);

#endif
