#include "heap.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define S_HUGE ((uintptr_t)2 << 20) /* x86-64's and arm64's (4 KiB pages) huge page */

bool heap_prefer_huge_pages(size_t bytes)
{
    static bool done;
    if (done)
        return false;
    done = true;
    /* not xmalloc: no block this large is needed, so none is no error */
    char *block = malloc(bytes);
    if (!block)
        return false;
    uintptr_t from = ((uintptr_t)block + S_HUGE - 1) & ~(S_HUGE - 1);
    uintptr_t to = ((uintptr_t)block + bytes) & ~(S_HUGE - 1);
    bool advised = to > from && madvise((void *)from, to - from, MADV_HUGEPAGE) == 0;
    free(block); /* untouched: the advice stays with the mapping, not the block */
    return advised;
}
