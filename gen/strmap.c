#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

/* FNV-1a: short keys, no adversarial pressure that matters at these sizes
 * (the number of files is capped by limits.files). */
static uint64_t S_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

void strmap_init(strmap *m) { memset(m, 0, sizeof *m); }

void strmap_free(strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    strmap_init(m);
}

static size_t S_slot(const strmap *m, const char *key)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)S_hash(key) & mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & mask;
    return i;
}

void *strmap_get(const strmap *m, const char *key)
{
    if (m->cap == 0)
        return NULL;
    size_t i = S_slot(m, key);
    return m->keys[i] ? m->vals[i] : NULL;
}

static void S_rehash(strmap *m, size_t cap)
{
    strmap old = *m;
    m->cap = cap;
    m->len = 0;
    m->keys = xcalloc(cap, sizeof *m->keys);
    m->vals = xcalloc(cap, sizeof *m->vals);
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.keys[i])
            continue;
        size_t j = S_slot(m, old.keys[i]);
        m->keys[j] = old.keys[i];
        m->vals[j] = old.vals[i];
        m->len++;
    }
    free(old.keys);
    free(old.vals);
}

void *strmap_put(strmap *m, const char *key, void *val)
{
    if ((m->len + 1) * 2 > m->cap)
        S_rehash(m, m->cap ? m->cap * 2 : 64);
    size_t i = S_slot(m, key);
    if (m->keys[i]) {
        void *prev = m->vals[i];
        m->vals[i] = val;
        return prev;
    }
    m->keys[i] = xstrdup(key);
    m->vals[i] = val;
    m->len++;
    return NULL;
}
