/* shrec: a build's array of page records, in memory shared with its workers.
 *
 * The parent stores each record (pool.c) while the workers of its phase
 * run. In memory the workers got copy-on-write, every first store to a page
 * of the array costs a page fault, a copy of the page and a TLB flush on
 * every core the parent ran on (an interrupt of the worker there): about
 * 4% of a 10,000-page build. In a shared mapping (MAP_SHARED) the stores
 * cost nothing more than stores.
 *
 * The workers read the records of earlier phases only (render_record), all
 * stored before they were forked, and never one of their own phase, which
 * the parent may be writing. Each worker seals the array (shrec_seal): a
 * store from a worker faults, so no worker can change a record the parent
 * reads, as none could in copy-on-write memory.
 *
 * The array's pointers (urls, diagnostics) are into the parent's heap, as
 * before: a worker sees what they point to as it was when it was forked.
 * An array that outlives the build (a keep, build.h) is moved to the heap
 * first (shrec_to_heap): a process forked later (serve's builder) must not
 * share the records it frees. Every function exits, as xmalloc does, when
 * memory cannot be had. */
#ifndef KV_SHREC_H
#define KV_SHREC_H

#include <stddef.h>

#include "record.h"

/* n records, zeroed (record_init's state is all zeroes: see shrec.c), in a
 * new shared mapping. The caller frees them with shrec_free(a, n). */
page_record *shrec_new(size_t n);
/* a's n records moved into a new mapping of more records (the new ones
 * zeroed); a is unmapped. Returns the new array. */
page_record *shrec_grow(page_record *a, size_t n, size_t more);
/* Unmaps a (of n records; the records' own memory is the caller's to free
 * first). NULL does nothing. */
void shrec_free(page_record *a, size_t n);
/* a's n records copied into a new heap array (free() it), and a unmapped. */
page_record *shrec_to_heap(page_record *a, size_t n);
/* Makes a (of n records) read-only in the calling process. 0, or -1 with
 * errno. */
int shrec_seal(const page_record *a, size_t n);
/* Undoes shrec_seal as a worker ends: valgrind's leak check looks for
 * pointers in writable memory only, and would take the heap blocks only a
 * sealed array points to (the records' urls, diagnostics) for leaks. 0, or
 * -1 with errno. */
int shrec_unseal(const page_record *a, size_t n);

#endif
