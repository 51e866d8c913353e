#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "stamp.h"

/* Keys are paths and URLs; no adversarial pressure that matters at these
 * sizes (the number of files is capped by limits.files). */
static uint32_t S_hash(const char *s) { return (uint32_t)stamp_key(s, strlen(s)); }

void strmap_init(strmap *m) { memset(m, 0, sizeof *m); }

void strmap_free(strmap *m) { strmap_free_with(m, NULL); }

void strmap_free_with(strmap *m, void (*free_val)(void *))
{
    for (size_t i = 0; i < m->cap; i++) {
        if (free_val && m->slots[i].key && m->slots[i].val)
            free_val(m->slots[i].val);
        free(m->slots[i].key);
    }
    free(m->slots);
    strmap_init(m);
}

static size_t S_slot(const strmap *m, const char *key, uint32_t h)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)h & mask;
    while (m->slots[i].key && (m->slots[i].hash != h || strcmp(m->slots[i].key, key) != 0))
        i = (i + 1) & mask;
    return i;
}

void *strmap_get(const strmap *m, const char *key)
{
    if (m->cap == 0)
        return NULL;
    size_t i = S_slot(m, key, S_hash(key));
    return m->slots[i].key ? m->slots[i].val : NULL;
}

static void S_rehash(strmap *m, size_t cap)
{
    strmap old = *m;
    m->cap = cap;
    m->len = 0;
    m->slots = xcalloc(cap, sizeof *m->slots);
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.slots[i].key)
            continue;
        /* the keys are distinct: the first free slot from the hash's */
        size_t j = (size_t)old.slots[i].hash & (cap - 1);
        while (m->slots[j].key)
            j = (j + 1) & (cap - 1);
        m->slots[j] = old.slots[i];
        m->len++;
    }
    free(old.slots);
}

void strmap_reserve(strmap *m, size_t n)
{
    size_t cap = m->cap ? m->cap : 64;
    while ((n + 1) * 2 > cap)
        cap *= 2;
    if (cap > m->cap)
        S_rehash(m, cap);
}

void *strmap_put(strmap *m, const char *key, void *val)
{
    if ((m->len + 1) * 2 > m->cap)
        S_rehash(m, m->cap ? m->cap * 2 : 64);
    uint32_t h = S_hash(key);
    size_t i = S_slot(m, key, h);
    strmap_slot *sl = &m->slots[i];
    if (sl->key) {
        void *prev = sl->val;
        sl->val = val;
        return prev;
    }
    *sl = (strmap_slot){xstrdup(key), val, h};
    m->len++;
    return NULL;
}
