/* walk: a folder tree's regular files and empty folders, listed by several
 * threads at once.
 *
 * Listing a tree is one small read per folder; when the kernel has not kept
 * them (a big site's output has a folder per page), each waits on the disk,
 * and a virtual disk answers several requests at once about as fast as one.
 * So several threads take folders from one queue. The list comes in no set
 * order. Folders are opened beneath the top one: a link where a folder was
 * is not followed, and anything that is neither a regular file nor a folder
 * ends the walk (the caller decides what a planted link means).
 *
 * A walk may keep a memory of the tree (a memo: a sealed file, sealed.h):
 * each folder it read, with the folder's stamp (inode, size, mtime and ctime
 * as a stat gives them, outrec.h) and its entries. The next walk takes a
 * folder whose stat still equals its stamp from the memo: one stat instead
 * of an open, two reads and a close. Adding, removing or renaming an entry
 * moves the folder's mtime and ctime, and no one can set a ctime back; a
 * folder changed within a clock tick of a walk's start could keep its times
 * through a later change, so it is not remembered (outrec_stamp_racy).
 * Stamps name inodes: a memo of another tree, or a forged one, matches no
 * folder here. A memo that does not load is no memo: every folder is read. */
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
 * true: the lists are then incomplete. memo: NULL, or the path of the tree's
 * memo, read before the walk and, when the walk ends complete (not stopped,
 * nothing other found), replaced by what it saw (a memo that cannot be
 * written is left as it was). 0, or -1 when dir cannot be opened (l
 * unchanged). */
int walk_tree(const char *dir, unsigned threads, const atomic_bool *stop, const char *memo,
              walk_list *l);

#endif
