/* strmap: a string-keyed hash map (open addressing). Keys are copied and owned by
 * the map; values are opaque pointers the caller owns, or hands to the map's
 * end with strmap_free_with. */
#ifndef KV_STRMAP_H
#define KV_STRMAP_H

#include <stddef.h>
#include <stdint.h>

/* One slot, its key's hash beside it: a probe reads one cache line, not
 * three arrays' (a map of a site's 10,000 URLs is larger than the cache). */
typedef struct {
    char *key;     /* NULL: a free slot */
    void *val;
    uint32_t hash; /* of the key: compared before the key, kept for rehashing */
} strmap_slot;

typedef struct {
    strmap_slot *slots;
    size_t cap, len;
} strmap;

void strmap_init(strmap *m);
void strmap_free(strmap *m);           /* frees keys, not values */
/* Frees keys, and each non-NULL value with free_val (e.g. free). */
void strmap_free_with(strmap *m, void (*free_val)(void *));
void *strmap_get(const strmap *m, const char *key);
/* Inserts or replaces; returns the previous value or NULL. */
void *strmap_put(strmap *m, const char *key, void *val);
/* Makes room for n keys in all, so that putting that many does not grow
 * the table again (a map filled with a known number of keys). */
void strmap_reserve(strmap *m, size_t n);

#endif
