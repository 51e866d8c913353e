/* buf: the one growable byte buffer used everywhere in kvsite.
 *
 * A buf owns its storage. buf_init() makes an empty buffer without allocating;
 * buf_free() releases the storage and leaves an empty buffer behind. The content
 * is always NUL-terminated once anything was written, so b.ptr can be passed to
 * C string functions when the data has no NUL of its own.
 *
 * Out-of-memory policy: allocation failure is not recoverable in a build tool;
 * the xmalloc family prints one line and exits with status 70 (EX_SOFTWARE).
 * Bounded inputs keep that path for genuine exhaustion. */
#ifndef KV_BUF_H
#define KV_BUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char *ptr;  /* NULL until the first write */
    size_t len; /* bytes used, not counting the terminating NUL */
    size_t cap; /* bytes allocated */
} buf;

#define BUF_INIT {NULL, 0, 0}

void buf_init(buf *b);
void buf_free(buf *b);
void buf_clear(buf *b);                 /* len = 0, keeps the storage */
void buf_grow(buf *b, size_t extra);    /* room for extra more bytes + NUL */
void buf_puts(buf *b, const char *s);

/* The two writes everything else is made of, inline: records, checks.json
 * and pages are written a few bytes at a time, and a call per field (whose
 * memcpy of 4 or 8 bytes could not be inlined) was a tenth of encoding. */
static inline void buf_put(buf *b, const void *data, size_t len)
{
    if (len >= b->cap - b->len)
        buf_grow(b, len);
    if (len)
        memcpy(b->ptr + b->len, data, len);
    b->len += len;
    b->ptr[b->len] = '\0';
}

static inline void buf_putc(buf *b, int c)
{
    if (1 >= b->cap - b->len)
        buf_grow(b, 1);
    b->ptr[b->len++] = (char)c;
    b->ptr[b->len] = '\0';
}
/* A string literal's bytes, without strlen (hot paths write many). */
#define BUF_PUT_LIT(b, lit) buf_put((b), "" lit, sizeof(lit) - 1)
void buf_printf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vprintf(buf *b, const char *fmt, va_list ap);
void buf_truncate(buf *b, size_t len);
/* Decimal text of v, without printf (hot loops write millions of these). */
void buf_put_int(buf *b, long long v);
/* v as "%.17g" writes it (integers below 1e17 without printf). */
void buf_put_g17(buf *b, double v);
/* Returns the content as a malloc'ed NUL-terminated string owned by the caller
 * (never NULL) and leaves b empty. */
char *buf_detach(buf *b);
/* The content as a C string; "" for an empty buffer. Owned by b. */
const char *buf_cstr(const buf *b);

/* HTML-escapes s (& < > " ') onto b. */
void buf_put_html(buf *b, const char *s, size_t len);
/* As buf_put_html, for XML 1.0 (the feed, the sitemap): what XML forbids,
 * C0 controls but tab and line breaks, U+FFFE, U+FFFF and bytes that are not
 * UTF-8, is written as U+FFFD, so the document stays well-formed. */
void buf_put_xml(buf *b, const char *s, size_t len);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A bounded reader of bytes, for the cache and record formats: a read past
 * the end marks it bad and yields zeros (or NULL), so a decoder checks once,
 * at the end. Nothing is copied or owned. */
typedef struct {
    const char *p, *end;
    bool bad;
} buf_reader;

/* Inline: decoding a record or a page's figures reads a few bytes at a
 * time, and a call for each was most of the work. */
static inline void buf_rd_get(buf_reader *r, void *out, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p, n);
    r->p += n;
}

static inline uint32_t buf_rd_u32(buf_reader *r)
{
    uint32_t v;
    buf_rd_get(r, &v, sizeof v);
    return v;
}

static inline uint64_t buf_rd_u64(buf_reader *r)
{
    uint64_t v;
    buf_rd_get(r, &v, sizeof v);
    return v;
}

/* The next n bytes where they are; NULL when fewer are left. */
static inline const char *buf_rd_span(buf_reader *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = true;
        return NULL;
    }
    const char *s = r->p;
    r->p += n;
    return s;
}

#endif
