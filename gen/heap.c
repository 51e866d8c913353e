#include "heap.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define S_HUGE ((uintptr_t)2 << 20) /* x86-64's and arm64's (4 KiB pages) huge page */

/* The range advised, [S_from, S_to): nothing before the first call. */
static uintptr_t S_from, S_to;

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
    if (advised) {
        S_from = from;
        S_to = to;
    }
    free(block); /* untouched: the advice stays with the mapping, not the block */
    return advised;
}

bool heap_prefer_small_pages(void)
{
    if (S_to == 0)
        return false;
    bool taken = madvise((void *)S_from, S_to - S_from, MADV_NOHUGEPAGE) == 0;
    S_from = S_to = 0;
    return taken;
}
