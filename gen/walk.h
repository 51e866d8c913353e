/* walk: a folder tree's regular files and empty folders, listed by several
 * threads at once.
 *
 * Listing a tree is one small read per folder; when the kernel has not kept
 * them (a big site's output has a folder per page), each waits on the disk,
 * and a virtual disk answers several requests at once about as fast as one.
 * So several threads take folders from one queue. The list comes in no set
 * order. Folders are opened beneath the top one: a link where a folder was
 * is not followed, and anything that is neither a regular file nor a folder
 * ends the walk (the caller decides what a planted link means). */
#ifndef KV_WALK_H
#define KV_WALK_H

#include <stdatomic.h>
#include <stdbool.h>

#include "buf.h"

/* Threads a walk uses at most (the caller's among them). */
#define WALK_THREADS 8

typedef struct {
    buf files;      /* regular files, relative to the top, NUL-separated */
    buf empty_dirs; /* folders with nothing in them (never the top one), the same way */
    bool other;     /* something else was found (the lists are then incomplete) */
} walk_list;

void walk_list_init(walk_list *l);
void walk_list_free(walk_list *l);

/* Lists the tree at dir into l (appended), with up to threads threads, all
 * joined before it returns. It stops early when stop (may be NULL) becomes
 * true: the lists are then incomplete. 0, or -1 when dir cannot be opened
 * (l unchanged). */
int walk_tree(const char *dir, unsigned threads, const atomic_bool *stop, walk_list *l);

#endif
