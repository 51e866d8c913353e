/* arena: a bump allocator for objects that all die at the same moment (one
 * page's cmark tree, its strbufs and its rendered HTML).
 *
 * Blocks are carved from chunks in order; arena_release() of a block gives
 * nothing back (except for the block allocated last, which is simply
 * rewound), and arena_reset() drops every block at once by rewinding. Chunks
 * are kept across resets, so an arena that serves pages of ordinary size does
 * no system allocation at all once warm; after an unusually large round the
 * reset unmaps (chunks are mmap'ed) the chunks beyond `keep` bytes, so
 * resident memory returns to what `keep` allows.
 *
 * Requests larger than a quarter of a chunk get a chunk of their own, which
 * a reset keeps as well (within `keep`): a later round's large block takes
 * the smallest kept one that holds it, so pages of one kind, a buffer
 * growing through the same sizes on each, map nothing once warm. The
 * chunks together never exceed `cap` bytes: past it (or when the system
 * refuses a chunk) each block comes from malloc with a 32-byte header and is
 * really freed, so a hostile input that allocates and frees without end
 * grows the arena no further than malloc would grow. Allocation failure
 * follows buf.h's policy (exit 70).
 *
 * arena_realloc() grows the block allocated last in place when its chunk has
 * room (the way strbufs grow), and copies otherwise.
 *
 * Under AddressSanitizer every block is followed by a poisoned red zone,
 * released blocks and rewound memory are poisoned, so a use after reset is
 * reported as it would be after free().
 *
 * An arena belongs to one thread. Pointers into it are valid until the next
 * arena_reset() or arena_free(). */
#ifndef KV_ARENA_H
#define KV_ARENA_H

#include <stddef.h>

typedef struct arena arena;

typedef struct {
    size_t mapped;       /* bytes of chunks held, spare ones included */
    size_t chunks;       /* chunks held */
    size_t spare;        /* of those, empty ones waiting for reuse */
    size_t heap_blocks;  /* live blocks that came from malloc (past the cap) */
    size_t round_bytes;  /* bytes handed out since the last reset, headers included */
    size_t maps;         /* chunks ever mapped: stays put once the arena is warm */
} arena_stats;

/* chunk: bytes of a regular chunk (rounded up to pages); keep: bytes of
 * regular chunks a reset keeps; cap: bytes of chunks the arena may hold.
 * Never NULL. */
arena *arena_new(size_t chunk, size_t keep, size_t cap);
/* Releases every chunk and every block; a NULL a is fine. */
void arena_free(arena *a);

/* Blocks are aligned for any type; n == 0 gives a valid unique block. */
void *arena_alloc(arena *a, size_t n);
void *arena_calloc(arena *a, size_t n, size_t size);
/* p == NULL: arena_alloc(a, n). The contents up to min(old, n) are kept. */
void *arena_realloc(arena *a, void *p, size_t n);
/* Frees p if it came from malloc; an arena block is only poisoned (and
 * rewound if it was the last one). p == NULL is fine. */
void arena_release(arena *a, void *p);

/* Drops every block at once. */
void arena_reset(arena *a);

void arena_get_stats(const arena *a, arena_stats *s);

#endif
