#include "arena.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "asan.h"
#include "buf.h"


#ifdef KV_ASAN
#include <sanitizer/asan_interface.h>
#define S_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define S_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define REDZONE 16 /* after each block: an overflow runs into poison */
#else
#define S_POISON(p, n) ((void)(p), (void)(n))
#define S_UNPOISON(p, n) ((void)(p), (void)(n))
#define REDZONE 0
#endif

#define ALIGN 16
#define TAG_HEAP ((uintptr_t)1) /* never a block address: those are aligned */

/* A chunk is one mapping: this header, then blocks. */
typedef struct chunk {
    struct chunk *next;
    size_t size; /* bytes of the mapping */
} chunk;
#define CHUNK_HDR ALIGN

/* Precedes every block, so realloc knows how much to copy. */
typedef struct blk {
    size_t size;   /* bytes asked for */
    uintptr_t tag; /* TAG_HEAP, or the block before it in the same chunk (0: none),
                      so releasing the last block rewinds to the one before */
} blk;

/* A block from malloc, past the cap: linked so that reset frees it. */
typedef struct heapblk {
    struct heapblk *prev, *next;
    blk h;
} heapblk;

_Static_assert(sizeof(chunk) <= CHUNK_HDR, "chunk header");
_Static_assert(sizeof(blk) % ALIGN == 0, "block header keeps the alignment");
_Static_assert(sizeof(heapblk) % ALIGN == 0, "heap block header keeps the alignment");

struct arena {
    size_t chunk_size, keep, cap;
    chunk *used;     /* chunks holding blocks since the last reset */
    chunk *spare;    /* empty regular chunks, for the next round */
    chunk *spare_big; /* empty oversized chunks, for the next round's large blocks */
    char *pos, *end; /* the free room of the current regular chunk */
    blk *last;       /* the block that ends at pos, or NULL */
    heapblk *heap;
    size_t mapped, nchunks, nspare, nspare_big, spare_bytes, nheap, round_bytes, maps;
};

static size_t S_page_size(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    return ps > 0 ? (size_t)ps : 4096;
}

static size_t S_round(size_t n, size_t to) { return (n + to - 1) / to * to; }

/* A request no system can meet is refused before any allocation, the way
 * buf.h's policy words it (a sanitizer would stop at the malloc instead). */
static void S_too_big(size_t n)
{
    fprintf(stderr, "kvsite: out of memory (allocating %zu bytes)\n", n);
    exit(70);
}

#define MAX_BLOCK (SIZE_MAX / 4)

/* Bytes a block of n takes in a chunk; n is at most MAX_BLOCK. */
static size_t S_need(size_t n) { return S_round(sizeof(blk) + n + REDZONE, ALIGN); }

arena *arena_new(size_t chunk_size, size_t keep, size_t cap)
{
    arena *a = xcalloc(1, sizeof *a);
    size_t ps = S_page_size();
    a->chunk_size = S_round(chunk_size > ps ? chunk_size : ps, ps);
    a->keep = keep;
    a->cap = cap;
    return a;
}

/* A new mapping of size bytes, or NULL when it would pass the cap or the
 * system refuses (the caller then falls back to malloc). */
static chunk *S_map(arena *a, size_t size)
{
    if (size > a->cap || a->mapped > a->cap - size)
        return NULL;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    chunk *c = p;
    c->size = size;
    c->next = NULL;
    S_POISON((char *)c + CHUNK_HDR, size - CHUNK_HDR);
    a->mapped += size;
    a->nchunks++;
    a->maps++;
    return c;
}

static void S_unmap(arena *a, chunk *c)
{
    size_t size = c->size;
    /* the address range may be mapped again by anyone: leave no poison */
    S_UNPOISON(c, size);
    munmap(c, size);
    a->mapped -= size;
    a->nchunks--;
}

/* Puts hb, holding n bytes, at the head of a's list of heap blocks. */
static void *S_heap_link(arena *a, heapblk *hb, size_t n)
{
    hb->prev = NULL;
    hb->next = a->heap;
    if (a->heap)
        a->heap->prev = hb;
    a->heap = hb;
    hb->h.size = n;
    return hb + 1;
}

static void *S_heap_alloc(arena *a, size_t n)
{
    heapblk *hb = xmalloc(sizeof *hb + n);
    hb->h.tag = TAG_HEAP;
    a->nheap++;
    return S_heap_link(a, hb, n);
}

static void S_heap_unlink(arena *a, heapblk *hb)
{
    if (hb->prev)
        hb->prev->next = hb->next;
    else
        a->heap = hb->next;
    if (hb->next)
        hb->next->prev = hb->prev;
}

static void *S_carve(arena *a, size_t n, size_t need)
{
    blk *b = (blk *)a->pos;
    S_UNPOISON(b, sizeof *b + n);
    b->size = n;
    b->tag = (uintptr_t)a->last;
    a->last = b;
    a->pos += need;
    a->round_bytes += need;
    return b + 1;
}

/* The smallest spare oversized chunk of at least size bytes, taken off the
 * spare list; NULL when none is that large. */
static chunk *S_take_big(arena *a, size_t size)
{
    chunk **best = NULL;
    for (chunk **at = &a->spare_big; *at; at = &(*at)->next)
        if ((*at)->size >= size && (!best || (*at)->size < (*best)->size))
            best = at;
    if (!best)
        return NULL;
    chunk *c = *best;
    *best = c->next;
    a->nspare_big--;
    a->spare_bytes -= c->size;
    return c;
}

/* The rest of S_alloc: a new chunk, a chunk of its own, or malloc. */
static __attribute__((noinline)) void *S_alloc_slow(arena *a, size_t n, size_t need)
{
    if (need > a->chunk_size / 4) {
        /* its own chunk, behind the current one, which keeps its room: one
         * a large block of an earlier round left, or a new one */
        size_t size = S_round(CHUNK_HDR + need, S_page_size());
        chunk *c = S_take_big(a, size);
        if (!c)
            c = S_map(a, size);
        if (!c)
            return S_heap_alloc(a, n);
        c->next = a->used;
        a->used = c;
        blk *b = (blk *)((char *)c + CHUNK_HDR);
        S_UNPOISON(b, sizeof *b + n);
        b->size = n;
        b->tag = 0;
        a->round_bytes += need;
        return b + 1;
    }
    chunk *c = a->spare;
    if (c) {
        a->spare = c->next;
        a->nspare--;
        a->spare_bytes -= c->size;
    } else if (!(c = S_map(a, a->chunk_size))) {
        return S_heap_alloc(a, n);
    }
    c->next = a->used;
    a->used = c;
    a->pos = (char *)c + CHUNK_HDR;
    a->end = (char *)c + c->size;
    a->last = NULL;
    return S_carve(a, n, need);
}

/* A block of n <= MAX_BLOCK bytes: carved from the current chunk, the
 * common case, without a call. */
static inline void *S_alloc(arena *a, size_t n)
{
    size_t need = S_need(n);
    if (need <= (size_t)(a->end - a->pos))
        return S_carve(a, n, need);
    return S_alloc_slow(a, n, need);
}

void *arena_alloc(arena *a, size_t n)
{
    if (n > MAX_BLOCK)
        S_too_big(n);
    return S_alloc(a, n);
}

void *arena_calloc(arena *a, size_t n, size_t size)
{
    if (size && n > MAX_BLOCK / size)
        S_too_big(n > SIZE_MAX / size ? SIZE_MAX : n * size);
    size_t total = n * size;
    void *p = S_alloc(a, total);
    memset(p, 0, total);
    return p;
}

void arena_release(arena *a, void *p)
{
    if (!p)
        return;
    blk *b = (blk *)p - 1;
    if (b->tag == TAG_HEAP) {
        heapblk *hb = (heapblk *)p - 1;
        S_heap_unlink(a, hb);
        a->nheap--;
        free(hb);
        return;
    }
    if (b == a->last) {
        /* the room goes back to the chunk; the block before is last again */
        size_t need = S_need(b->size);
        a->last = (blk *)b->tag;
        a->pos = (char *)b;
        a->round_bytes -= need;
        S_POISON(b, need);
        return;
    }
    S_POISON(p, b->size);
}

void *arena_realloc(arena *a, void *p, size_t n)
{
    if (!p)
        return arena_alloc(a, n);
    if (n > MAX_BLOCK)
        S_too_big(n);
    blk *b = (blk *)p - 1;
    if (b->tag == TAG_HEAP) {
        heapblk *hb = (heapblk *)p - 1;
        S_heap_unlink(a, hb);
        hb = xrealloc(hb, sizeof *hb + n);
        return S_heap_link(a, hb, n);
    }
    if (b == a->last && S_need(n) <= (size_t)(a->end - (char *)b)) {
        /* the last block: grow or shrink where it is */
        size_t old = S_need(b->size), need = S_need(n);
        S_POISON(b, old);
        S_UNPOISON(b, sizeof *b + n);
        b->size = n;
        a->pos = (char *)b + need;
        a->round_bytes = a->round_bytes - old + need;
        return p;
    }
    if (n <= b->size) {
        S_POISON((char *)p + n, b->size - n);
        b->size = n;
        return p;
    }
    void *q = arena_alloc(a, n);
    memcpy(q, p, b->size);
    arena_release(a, p);
    return q;
}

void arena_reset(arena *a)
{
    while (a->heap) {
        heapblk *hb = a->heap;
        a->heap = hb->next;
        free(hb);
    }
    a->nheap = 0;
    chunk *c = a->used;
    while (c) {
        chunk *next = c->next;
        /* chunks are kept up to `keep` bytes, regular and oversized alike (the
         * next page of the same kind takes the same ones: memory given back
         * is faulted in again); the surplus of a larger round goes back to
         * the system */
        if (c->size <= a->keep && a->spare_bytes <= a->keep - c->size) {
            S_POISON((char *)c + CHUNK_HDR, c->size - CHUNK_HDR);
            if (c->size == a->chunk_size) {
                c->next = a->spare;
                a->spare = c;
                a->nspare++;
            } else {
                c->next = a->spare_big;
                a->spare_big = c;
                a->nspare_big++;
            }
            a->spare_bytes += c->size;
        } else {
            S_unmap(a, c);
        }
        c = next;
    }
    a->used = NULL;
    a->pos = a->end = NULL;
    a->last = NULL;
    a->round_bytes = 0;
}

void arena_free(arena *a)
{
    if (!a)
        return;
    arena_reset(a);
    chunk *lists[] = {a->spare, a->spare_big};
    for (size_t i = 0; i < 2; i++)
        while (lists[i]) {
            chunk *c = lists[i];
            lists[i] = c->next;
            S_unmap(a, c);
        }
    free(a);
}

void arena_get_stats(const arena *a, arena_stats *s)
{
    s->mapped = a->mapped;
    s->chunks = a->nchunks;
    s->spare = a->nspare + a->nspare_big;
    s->heap_blocks = a->nheap;
    s->round_bytes = a->round_bytes;
    s->maps = a->maps;
}
