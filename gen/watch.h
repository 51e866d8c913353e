/* watch: what `kvsite serve` watches for changes, with inotify, and when it
 * rebuilds (the debounce).
 *
 * Folders are watched with every folder beneath them, including those made
 * later (each new folder is added as it appears, and counts as a change: files
 * may be in it before its watch is). Single files (site.yaml) are watched
 * through their folder, by name: an editor that saves by writing a new file
 * and renaming it over the old one replaces the inode, which a watch on the
 * file itself would lose. Editors' scratch files (swap files, backups, lock
 * files) are not changes.
 *
 * A watch owns its descriptor and its folder table (watch_close frees them). */
#ifndef KV_WATCH_H
#define KV_WATCH_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define WATCH_MAX_DIRS 16384 /* folders watched at most: the rest are not */

typedef struct {
    int fd;          /* the inotify descriptor (non-blocking), -1 before watch_open */
    int *wds;        /* by slot: the watch descriptor, -1 when free */
    char **paths;    /* by slot: the folder's path (owned) */
    bool *whole;     /* by slot: every file counts (false: only names in files) */
    size_t n, cap;
    char **files;    /* "site.yaml": names that count in the folders not whole */
    size_t nfiles;
    bool full;       /* WATCH_MAX_DIRS reached: some folders are not watched */
    bool saved;      /* after watch_read: its last change that counts finished a
                      * file (closed after writing, or moved into place) */
    /* Since the caller last emptied them (watch_forget): the paths of the
     * files that had an event in the folders watched whole (folder path as
     * added, '/', name; NUL-separated; editors' scratch files too, which
     * count for no rebuild but are files all the same), or wide: what
     * changed is not known by path (a folder came, went or moved, events
     * were lost, the list grew past WATCH_MAX_CHANGED bytes). */
    buf changed;
    bool wide;
} watch;

#define WATCH_MAX_CHANGED (1u << 20)

/* Opens the watch. 0, or -1 with errno (no inotify). */
int watch_open(watch *w);
/* Watches the folder at path and every folder beneath it (a missing folder is
 * not an error: nothing is watched). */
void watch_add_tree(watch *w, const char *path);
/* Watches the file at dir/name (dir itself, for that name only); a folder
 * of that name made later is watched whole from then on. */
void watch_add_file(watch *w, const char *dir, const char *name);
/* Reads the pending events: true when one of them is a change that counts
 * (new folders are watched as it goes; w->saved says how the last one
 * ended). Never blocks. */
bool watch_read(watch *w);
void watch_close(watch *w);
/* Empties changed and wide: a rebuild took them. */
void watch_forget(watch *w);

/* Whether a file of this name is an editor's scratch file, not a change:
 * vim's .x.swp/.x.swx/4913 and x~, emacs' .#x and #x#, kate's and others'
 * x.tmp / .x.kate-swp, hidden files in general. */
bool watch_ignored(const char *name);

/* The debounce: a rebuild starts once no change came for quiet_ms (settle_ms
 * when the last change finished a file: an editor's save is whole then, and
 * only a second file of the same save would come after), or max_ms after the
 * first change it waits for, whichever is first, so that a save that touches
 * several files (or an editor that writes, renames and chmods) rebuilds
 * once, and a stream of changes still rebuilds now and then. A change after
 * the rebuild started brings another. Times are in milliseconds on one
 * monotonic clock. */
typedef struct {
    long quiet_ms, settle_ms, max_ms;
    bool pending;
    double first, last; /* the first and the last change since the last rebuild */
    long wait_ms;       /* the quiet time after last: quiet_ms or settle_ms */
} watch_debounce;

void watch_debounce_init(watch_debounce *d, long quiet_ms, long settle_ms, long max_ms);
/* A change came at now; saved: it finished a file (watch.saved). */
void watch_debounce_change(watch_debounce *d, double now, bool saved);
/* How long to wait from now before watch_debounce_due: -1 when nothing is
 * pending (wait for a change), 0 when a rebuild is due. */
long watch_debounce_wait(const watch_debounce *d, double now);
/* A rebuild starts: nothing is pending. */
void watch_debounce_fired(watch_debounce *d);

#endif
