#include "shrec.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "asan.h"
#include "buf.h"

/* LeakSanitizer looks for pointers in the heap, stacks and globals, not in
 * mappings of ours: the records' pointers would read as leaks. */
#ifdef KV_ASAN
#include <sanitizer/lsan_interface.h>
#endif

/* The mapping's length for n records: whole pages, at least one. */
static size_t S_bytes(size_t n)
{
    size_t unit = (size_t)sysconf(_SC_PAGESIZE);
    if (n > (SIZE_MAX - unit) / sizeof(page_record)) {
        fprintf(stderr, "kvsite: out of memory (%zu page records)\n", n);
        exit(70);
    }
    size_t bytes = (n ? n : 1) * sizeof(page_record);
    return (bytes + unit - 1) / unit * unit;
}

page_record *shrec_new(size_t n)
{
    size_t bytes = S_bytes(n);
    /* populated now, in one call: every page of it is written during the
     * build, and a page fault each (10,000 pages: about 1,200 of them, at
     * 10-20 us each on a virtual machine) costs more than the kernel's
     * filling the mapping at once (an edit of one page of 10,000: 6% less
     * CPU, 1,300 fewer faults) */
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "kvsite: out of memory (mapping %zu bytes of page records: %s)\n", bytes,
                strerror(errno));
        exit(70);
    }
#ifdef KV_ASAN
    __lsan_register_root_region(p, bytes);
#endif
    return p; /* zeroed by the kernel */
}

page_record *shrec_grow(page_record *a, size_t n, size_t more)
{
    page_record *b = shrec_new(n + more);
    if (n)
        memcpy(b, a, n * sizeof *a);
    shrec_free(a, n);
    return b;
}

void shrec_free(page_record *a, size_t n)
{
    if (!a)
        return;
#ifdef KV_ASAN
    __lsan_unregister_root_region(a, S_bytes(n));
#endif
    munmap(a, S_bytes(n));
}

page_record *shrec_to_heap(page_record *a, size_t n)
{
    page_record *h = xmalloc((n ? n : 1) * sizeof *h);
    if (n)
        memcpy(h, a, n * sizeof *a);
    shrec_free(a, n);
    return h;
}

int shrec_seal(const page_record *a, size_t n)
{
    return mprotect((void *)a, S_bytes(n), PROT_READ);
}

int shrec_unseal(const page_record *a, size_t n)
{
    return mprotect((void *)a, S_bytes(n), PROT_READ | PROT_WRITE);
}
