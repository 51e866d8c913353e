/* heap: the allocator's heap in transparent huge pages.
 *
 * The first write to a page of memory is a page fault. On a virtual machine
 * that is also a trap to the host: 10 to 20 us a page on the machines the
 * bench runs on, where a native fault costs well under one. A build of
 * 10,000 pages took about 15,000 of them in the parent alone (a tenth of its
 * CPU time), nearly all as the heap grew. One fault of a 2 MiB huge page maps
 * what 512 faults would.
 *
 * Most systems leave huge pages to the programs that ask for them
 * (/sys/kernel/mm/transparent_hugepage/enabled: "madvise"). Asking is done
 * per mapping, and the allocator's heap grows by mappings of its own: so
 * heap_prefer_huge_pages allocates one large block, advises its aligned
 * interior (MADV_HUGEPAGE) and frees it. tcmalloc, the allocator kvsite
 * links (Makefile), keeps the freed span and carves later blocks from it, so
 * the build's first megabytes of heap (but what lies below the block's first
 * huge page boundary, less than 2 MiB) and its workers' (forked, they
 * inherit the advice) come in huge pages. An allocator that unmaps a large
 * block when it is freed (glibc's, in the sanitizer builds) makes this a
 * no-op. The cost: memory is counted in whole huge pages, about 2 MiB more
 * peak RSS for a 10,000-page build. */
#ifndef KV_HEAP_H
#define KV_HEAP_H

#include <stdbool.h>
#include <stddef.h>

/* The heap's first `bytes`, advised for huge pages, once per process (a
 * second call does nothing). Call it before threads start. Returns whether
 * the kernel took the advice (false without THP or when the block could not
 * be had: nothing else changes). */
bool heap_prefer_huge_pages(size_t bytes);
/* Takes the advice back for what of the range is not yet in memory: the
 * huge pages there stay, the heap's later pages are 4 KiB ones. For the end
 * of a build, whose few megabytes of new blocks would otherwise count as
 * whole huge pages in its peak RSS. Returns whether there was advice to
 * take back. */
bool heap_prefer_small_pages(void);

#endif
