/* Unit tests for gen/heap.c: the heap advised for huge pages. With tcmalloc
 * (kvsite's allocator) the blocks allocated afterwards lie in a mapping the
 * kernel marks advised ("hg" in /proc/self/smaps); with an allocator that
 * unmaps large blocks on free (glibc's, in sanitizer builds) nothing is
 * asserted of them. Either way the advice is taken once, and taken back
 * once. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "heap.h"

/* The mappings with the VmFlags flag ("hg": advised for huge pages, "nh":
 * advised against them) in /proc/self/smaps, as [lo, hi) pairs into r;
 * returns how many. */
static size_t S_flagged(const char *flag, uintptr_t (*r)[2], size_t max)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    assert_non_null(f);
    char line[512];
    unsigned long lo = 0, hi = 0;
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long a, b;
        if (sscanf(line, "%lx-%lx ", &a, &b) == 2) { /* a mapping's first line */
            lo = a;
            hi = b;
        } else if (strncmp(line, "VmFlags:", 8) == 0 && strstr(line, flag) && n < max) {
            r[n][0] = lo;
            r[n][1] = hi;
            n++;
        }
    }
    fclose(f);
    return n;
}

static bool S_within(uintptr_t (*r)[2], size_t n, const void *p)
{
    for (size_t i = 0; i < n; i++)
        if ((uintptr_t)p >= r[i][0] && (uintptr_t)p < r[i][1])
            return true;
    return false;
}

/* The blocks the allocator makes new room for come from the advised block,
 * but for its first 2 MiB at most (below the first huge page boundary in
 * it) and the spans the allocator had carved before: of 8 MiB of small
 * blocks, most. */
static void test_later_blocks_in_advised_heap(void **state)
{
    (void)state;
    bool advised = heap_prefer_huge_pages((size_t)16 << 20);
    assert_false(heap_prefer_huge_pages((size_t)16 << 20)); /* once per process */
    if (!advised)
        skip(); /* a kernel without transparent huge pages */
    if (!dlsym(RTLD_DEFAULT, "tc_malloc"))
        skip(); /* not tcmalloc: the freed block went back to the system */
    enum { N = 16384, SIZE = 512 };
    void **blocks = malloc(N * sizeof *blocks);
    for (size_t i = 0; i < N; i++)
        blocks[i] = malloc(SIZE);
    uintptr_t ranges[64][2];
    size_t n = S_flagged(" hg", ranges, 64);
    size_t in = 0;
    for (size_t i = 0; i < N; i++)
        in += S_within(ranges, n, blocks[i]);
    assert_true(in >= N / 2);
    assert_true(S_within(ranges, n, blocks[N - 1]));
    /* the advice taken back: the same range now says no, once */
    assert_true(heap_prefer_small_pages());
    assert_false(heap_prefer_small_pages());
    uintptr_t after[64][2];
    size_t na = S_flagged(" nh", after, 64);
    assert_true(S_within(after, na, blocks[N - 1]));
    assert_false(S_within(ranges, S_flagged(" hg", ranges, 64), blocks[N - 1]));
    for (size_t i = 0; i < N; i++)
        free(blocks[i]);
    free(blocks);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_later_blocks_in_advised_heap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
