#include "nfd.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

typedef struct {
    uint32_t cp;
    uint32_t to[4]; /* 0 after the last */
} nfd_decomp;

typedef struct {
    uint32_t lo, hi;
    uint8_t ccc;
} nfd_ccc;

#include "nfd_data.h"

/* Hangul syllables decompose arithmetically (Unicode 3.12). */
#define S_BASE 0xAC00u
#define L_BASE 0x1100u
#define V_BASE 0x1161u
#define T_BASE 0x11A7u
#define T_COUNT 28u
#define N_COUNT 588u /* V_COUNT * T_COUNT */
#define S_COUNT 11172u

static const nfd_decomp *S_decomp(uint32_t c)
{
    size_t lo = 0, hi = sizeof NFD_DECOMP / sizeof *NFD_DECOMP;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (NFD_DECOMP[mid].cp == c)
            return &NFD_DECOMP[mid];
        if (NFD_DECOMP[mid].cp < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static unsigned S_ccc(uint32_t c)
{
    if (c < 0x300)
        return 0; /* nothing below U+0300 combines */
    size_t lo = 0, hi = sizeof NFD_CCC / sizeof *NFD_CCC;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c < NFD_CCC[mid].lo)
            hi = mid;
        else if (c > NFD_CCC[mid].hi)
            lo = mid + 1;
        else
            return NFD_CCC[mid].ccc;
    }
    return 0;
}

/* The code points the decomposition is made of, in v (which grows). */
typedef struct {
    uint32_t *v;
    size_t n, cap;
} cps;

static void S_push(cps *c, uint32_t cp)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->v = xrealloc(c->v, c->cap * sizeof *c->v);
    }
    /* canonical order: a mark moves before the marks of a higher class
     * that precede it, back to the last starter (class 0) */
    unsigned k = S_ccc(cp);
    size_t i = c->n++;
    while (k && i > 0 && S_ccc(c->v[i - 1]) > k) {
        c->v[i] = c->v[i - 1];
        i--;
    }
    c->v[i] = cp;
}

void nfd_append(buf *out, const char *s, size_t len)
{
    /* ASCII is its own NFD (the first code point that decomposes is U+00C0;
     * the combining marks start at U+0300): most names are */
    size_t ascii = 0;
    while (ascii < len && (unsigned char)s[ascii] < 0x80)
        ascii++;
    if (ascii == len || !utf8_valid(s, len, NULL)) {
        buf_put(out, s, len);
        return;
    }
    cps c = {NULL, 0, 0};
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        size_t n = utf8_char_len(p);
        uint32_t cp = utf8_decode(p, n);
        p += n;
        const nfd_decomp *d;
        if (cp >= S_BASE && cp < S_BASE + S_COUNT) {
            uint32_t si = cp - S_BASE;
            S_push(&c, L_BASE + si / N_COUNT);
            S_push(&c, V_BASE + (si % N_COUNT) / T_COUNT);
            if (si % T_COUNT)
                S_push(&c, T_BASE + si % T_COUNT);
        } else if ((d = cp >= 0xC0 ? S_decomp(cp) : NULL)) {
            for (int k = 0; k < 4 && d->to[k]; k++)
                S_push(&c, d->to[k]);
        } else {
            S_push(&c, cp);
        }
    }
    for (size_t i = 0; i < c.n; i++) {
        char enc[4];
        buf_put(out, enc, utf8_encode(c.v[i], enc));
    }
    free(c.v);
}

char *nfd(const char *s)
{
    buf b = BUF_INIT;
    nfd_append(&b, s, strlen(s));
    return buf_detach(&b);
}
