#include "buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static void S_oom(size_t n)
{
    fprintf(stderr, "kvsite: out of memory (allocating %zu bytes)\n", n);
    exit(70);
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        S_oom(n);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        S_oom(n * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        S_oom(n);
    return q;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    /* one formatting pass for the usual short result, two for a long one */
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return xstrdup("");
    if ((size_t)n < sizeof tmp)
        return xstrndup(tmp, (size_t)n);
    buf b = BUF_INIT;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    return buf_detach(&b);
}

void buf_init(buf *b)
{
    b->ptr = NULL;
    b->len = b->cap = 0;
}

void buf_free(buf *b)
{
    free(b->ptr);
    buf_init(b);
}

void buf_clear(buf *b)
{
    b->len = 0;
    if (b->ptr)
        b->ptr[0] = '\0';
}

void buf_grow(buf *b, size_t extra)
{
    if (extra >= (size_t)-1 / 2 - b->len)
        S_oom(extra);
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    b->ptr = xrealloc(b->ptr, cap);
    b->cap = cap;
}

/* Room for extra more bytes and the NUL: the common case inline, without a
 * call (an empty buffer has cap 0 and always takes the call). */
static inline void S_room(buf *b, size_t extra)
{
    if (extra >= b->cap - b->len)
        buf_grow(b, extra);
}



void buf_puts(buf *b, const char *s) { buf_put(b, s, strlen(s)); }


void buf_vprintf(buf *b, const char *fmt, va_list ap)
{
    /* straight into the room there is; measured and written again only
     * when it does not fit */
    size_t room = b->cap - b->len;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(room ? b->ptr + b->len : NULL, room, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        if (room)
            b->ptr[b->len] = '\0';
        return;
    }
    if ((size_t)n >= room) {
        buf_grow(b, (size_t)n);
        vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    }
    b->len += (size_t)n;
}

void buf_printf(buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void buf_truncate(buf *b, size_t len)
{
    if (len < b->len) {
        b->len = len;
        b->ptr[len] = '\0';
    }
}

char *buf_detach(buf *b)
{
    char *p = b->ptr ? b->ptr : xstrdup("");
    buf_init(b);
    return p;
}

const char *buf_cstr(const buf *b) { return b->ptr ? b->ptr : ""; }

/* What each byte becomes in HTML: 0 for itself, else an index into S_html_rep. */
static const unsigned char S_html_class[256] = {['&'] = 1, ['<'] = 2, ['>'] = 3, ['"'] = 4,
                                                 ['\''] = 5};
static const char *const S_html_rep[] = {"", "&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
static const unsigned char S_html_rep_len[] = {0, 5, 4, 4, 6, 5};

/* Whether one of the eight bytes of w is one of the five HTML escapes (a
 * byte equal to c becomes zero after the xor, and the expression is
 * nonzero exactly when w has a zero byte). */
static bool S_html_word(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t a = w ^ (ones * '&'), b = w ^ (ones * '<'), c = w ^ (ones * '>'),
             d = w ^ (ones * '"'), e = w ^ (ones * '\'');
    return (((a - ones) & ~a) | ((b - ones) & ~b) | ((c - ones) & ~c) | ((d - ones) & ~d) |
            ((e - ones) & ~e)) & high;
}

void buf_put_html(buf *b, const char *s, size_t len)
{
    /* room for the text as it is: most of it has nothing to escape */
    S_room(b, len);
    size_t run = 0, i = 0;
    while (i < len) {
        while (i + 8 <= len) { /* eight bytes at a time past plain text */
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (S_html_word(w))
                break;
            i += 8;
        }
        for (size_t stop = len - i > 8 ? i + 8 : len; i < stop; i++) {
            unsigned k = S_html_class[(unsigned char)s[i]];
            if (!k)
                continue;
            buf_put(b, s + run, i - run);
            buf_put(b, S_html_rep[k], S_html_rep_len[k]);
            run = i + 1;
        }
    }
    buf_put(b, s + run, len - run);
}

/* Length of the sequence XML 1.0 forbids at s[0..n) (see buf_put_xml), or
 * 0 for an allowed character. */
static size_t S_xml_bad(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x20)
        return c == '\t' || c == '\n' || c == '\r' ? 0 : 1;
    if (c < 0x80)
        return 0;
    size_t k = utf8_char_len(s);
    if (k > n || k == 1 || !utf8_valid((const char *)s, k, NULL))
        return 1;
    if (k == 3 && c == 0xEF && s[1] == 0xBF && s[2] >= 0xBE)
        return 3; /* U+FFFE, U+FFFF */
    return 0;
}

void buf_put_xml(buf *b, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t run = 0, i = 0;
    while (i < len) {
        size_t bad = (u[i] < 0x20 || u[i] >= 0x80) ? S_xml_bad(u + i, len - i) : 0;
        if (!bad) {
            i += u[i] < 0x80 ? 1 : utf8_char_len(u + i);
            continue;
        }
        buf_put_html(b, s + run, i - run);
        buf_put(b, "\xEF\xBF\xBD", 3); /* U+FFFD */
        i += bad;
        run = i;
    }
    buf_put_html(b, s + run, len - run);
}

/* "00" to "99": two digits per division. */
static const char S_pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                              "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                              "8081828384858687888990919293949596979899";
static const unsigned long long S_pow10[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
    1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
    100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
    1000000000000000000ull, 10000000000000000000ull};

void buf_put_int(buf *b, long long v)
{
    S_room(b, 20); /* "-9223372036854775808" */
    char *o = b->ptr + b->len;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    if (v < 0)
        *o++ = '-';
    size_t n = 1;
    while (n < 20 && u >= S_pow10[n])
        n++;
    char *e = o + n;
    b->len = (size_t)(e - b->ptr);
    *e = '\0';
    while (u >= 100) {
        e -= 2;
        memcpy(e, S_pairs + 2 * (u % 100), 2);
        u /= 100;
    }
    if (u >= 10) {
        e -= 2;
        memcpy(e, S_pairs + 2 * u, 2);
    } else {
        *--e = (char)('0' + u);
    }
}

/* v = m / 2^k with k <= 10 has the exact decimal N / 10^k, N = m * 5^k.
 * When N < 1e17 it has at most 17 digits, so %.17g prints them all without
 * rounding, and as a fixed-point number (v >= 2^-10 > 1e-4, v < 1e17),
 * trailing zeros dropped: that text is written here. False: not such a v
 * (nothing written). Quotes' fractions (0.5, 0.875, 40.25) are these. */
static bool S_put_dyadic(buf *b, double v)
{
    double m = fabs(v);
    if (!(m < 1e17))
        return false;
    unsigned k = 0;
    while (m != (double)(long long)m) { /* exact: a power of two's multiple */
        if (++k > 10)
            return false;
        m *= 2;
    }
    unsigned long long n = (unsigned long long)m, pow5 = 1;
    for (unsigned i = 0; i < k; i++)
        pow5 *= 5;
    if (k == 0 || n >= 100000000000000000ull / pow5)
        return false;
    n *= pow5;
    unsigned long long scale = S_pow10[k], frac = n % scale;
    if (v < 0)
        buf_putc(b, '-');
    buf_put_int(b, (long long)(n / scale));
    char digits[10];
    for (unsigned i = k; i-- > 0; frac /= 10)
        digits[i] = (char)('0' + frac % 10);
    while (k > 0 && digits[k - 1] == '0')
        k--;
    S_room(b, 11);
    char *o = b->ptr + b->len;
    *o++ = '.';
    memcpy(o, digits, k);
    b->len += k + 1;
    b->ptr[b->len] = '\0';
    return true;
}

void buf_put_g17(buf *b, double v)
{
    /* An integral value below 1e17 has at most 17 digits, and %.17g prints
     * all of them, without a point or an exponent (from 1e17 on it writes an
     * exponent): its integer digits are the same text. -0.0 keeps its sign
     * through printf. NaN fails the first test, so it is never cast. */
    if (fabs(v) < 1e17 && v == (double)(long long)v && (v != 0 || !signbit(v))) {
        buf_put_int(b, (long long)v);
        return;
    }
    if (S_put_dyadic(b, v))
        return;
    S_room(b, 32); /* "-2.2250738585072014e-308" is the longest */
    int n = snprintf(b->ptr + b->len, 32, "%.17g", v);
    if (n > 0 && n < 32)
        b->len += (size_t)n;
    b->ptr[b->len] = '\0';
}
