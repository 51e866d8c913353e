#include "yv.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "stamp.h"
#include "utf8.h"
#include "yv_build.h"

const yv_limits yv_default_limits = {1024 * 1024, 32, 100000};

/* ------------------------------------------------------------------ the tree */

const char *yv_type_a(yv_type t)
{
    switch (t) {
    case YV_NULL: return "null";
    case YV_BOOL: return "a boolean";
    case YV_INT: return "an integer";
    case YV_FLOAT: return "a float";
    case YV_STRING: return "a string";
    case YV_SEQ: return "a list";
    case YV_MAP: return "a map";
    }
    return "an unknown value";
}

const char *yv_type_name(yv_type t)
{
    switch (t) {
    case YV_NULL: return "null";
    case YV_BOOL: return "boolean";
    case YV_INT: return "integer";
    case YV_FLOAT: return "float";
    case YV_STRING: return "string";
    case YV_SEQ: return "list";
    case YV_MAP: return "map";
    }
    return "unknown";
}

const yv *yv_get(const yv *map, const char *key)
{
    if (!map || map->type != YV_MAP)
        return NULL;
    for (size_t k = 0; k < map->n; k++)
        if (strcmp(map->keys[k], key) == 0)
            return map->items[k];
    return NULL;
}

const yv *yv_at(const yv *seq, size_t i)
{
    if (!seq || seq->type != YV_SEQ || i >= seq->n)
        return NULL;
    return seq->items[i];
}

const char *yv_string(const yv *v) { return v && v->type == YV_STRING ? v->str : NULL; }

bool yv_number(const yv *v, double *out)
{
    if (v && v->type == YV_INT) {
        *out = (double)v->i;
        return true;
    }
    if (v && v->type == YV_FLOAT) {
        *out = v->f;
        return true;
    }
    return false;
}

/* yv_decode's blocks: a tree from the cache is made in a few, not in a
 * malloc per node, string and array (a page's front matter is dozens of
 * them, and a rebuild decodes every unchanged page's). */
typedef struct S_block {
    struct S_block *next;
    size_t cap, used;
    max_align_t data[];
} S_block;

static void S_blocks_free(S_block *b)
{
    while (b) {
        S_block *next = b->next;
        free(b);
        b = next;
    }
}

void yv_free(yv *v)
{
    if (v && v->pool) {
        S_blocks_free(v->pool); /* v is in the first of them */
        return;
    }
    /* children wait on an explicit stack: the input chose the depth */
    yv **stack = NULL;
    size_t n = 0, cap = 0;
    while (v) {
        if (v->type == YV_SEQ || v->type == YV_MAP) {
            if (n + v->n > cap) {
                while (n + v->n > cap)
                    cap = cap ? cap * 2 : 64;
                stack = xrealloc(stack, cap * sizeof *stack);
            }
            for (size_t k = 0; k < v->n; k++)
                if (v->items[k])
                    stack[n++] = v->items[k];
            if (v->keys)
                for (size_t k = 0; k < v->n; k++)
                    free(v->keys[k]);
            free(v->items);
            free(v->keys);
            free(v->key_lines);
            free(v->key_cols);
        }
        free(v->str);
        free(v);
        v = n ? stack[--n] : NULL;
    }
    free(stack);
}

/* ------------------------------------- shared by the parsers (yv_build.h) */

int yvb_clamp(long long x)
{
    if (x > INT_MAX)
        return INT_MAX;
    return x < 0 ? 0 : (int)x;
}

/* A key or value as it appears in a message: quoted, one line, bounded. */
char *yvb_quoted(const char *s, size_t len)
{
    buf b = BUF_INIT;
    buf_putc(&b, '"');
    for (size_t k = 0; k < len; k++) {
        unsigned char c = (unsigned char)s[k];
        if (k >= 60 && (c & 0xC0) != 0x80) { /* cut on a character boundary */
            buf_puts(&b, "...");
            break;
        }
        if (c == '"' || c == '\\')
            buf_printf(&b, "\\%c", c);
        else if (c < 0x20 || c == 0x7F)
            buf_printf(&b, "\\x%02X", c);
        else
            buf_putc(&b, c);
    }
    buf_putc(&b, '"');
    return buf_detach(&b);
}

bool yvb_has_bom(const char *text, size_t len)
{
    return len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0;
}

/* 1-based line and byte column of byte off; lines end at LF; a leading BOM
 * takes no column, as in every parser here. */
void yvb_pos_of(const char *text, size_t off, int line_offset, int *line, int *col)
{
    long long l = 1;
    size_t start = off >= 3 && yvb_has_bom(text, off) ? 3 : 0;
    for (size_t k = 0; k < off; k++) {
        if (text[k] == '\n') {
            l++;
            start = k + 1;
        }
    }
    *line = yvb_clamp(l + line_offset);
    *col = yvb_clamp((long long)(off - start + 1));
}

/* The checks every format shares: size, NUL bytes, UTF-8 (utf8.h's rule);
 * the first bad byte is the one reported. */
int yvb_input(const char **text, size_t len, const yv_limits **lim, const char *file,
              int line_offset, diag_list *dl)
{
    *lim = *lim ? *lim : &yv_default_limits;
    *text = *text ? *text : ""; /* an empty buf has no storage */
    if (len > (*lim)->max_bytes) {
        diag_error(dl, file, 0, 0, "file too large (%zu bytes, limit %zu)", len, (*lim)->max_bytes);
        return -1;
    }
    const char *nul = memchr(*text, '\0', len);
    size_t bad = len; /* utf8_valid sets it only when there is a bad byte */
    utf8_valid(*text, len, &bad);
    if (nul && (size_t)(nul - *text) < bad) {
        int line, col;
        yvb_pos_of(*text, (size_t)(nul - *text), line_offset, &line, &col);
        diag_error(dl, file, line, col, "NUL byte in input");
        return -1;
    }
    if (bad < len) {
        int line, col;
        yvb_pos_of(*text, bad, line_offset, &line, &col);
        diag_error(dl, file, line, col, "invalid UTF-8 at byte %zu", bad);
        return -1;
    }
    return 0;
}

size_t yvb_digits(const char *s, size_t n, size_t k)
{
    size_t start = k;
    while (k < n && s[k] >= '0' && s[k] <= '9')
        k++;
    return k - start;
}

int yvb_digit_value(char c, int base)
{
    int d = -1;
    if (c >= '0' && c <= '9')
        d = c - '0';
    else if (c >= 'a' && c <= 'f')
        d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
        d = c - 'A' + 10;
    return d < base ? d : -1;
}

bool yvb_is_one_of(const char *s, const char *const *words)
{
    for (; *words; words++)
        if (strcmp(s, *words) == 0)
            return true;
    return false;
}

/* [-+]?[0-9]+ | 0x[0-9a-fA-F]+ | 0o[0-7]+; out of range becomes a float. */
static bool S_resolve_int(yv *v)
{
    const char *s = v->str;
    size_t n = v->len;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
        int base = s[1] == 'x' ? 16 : 8;
        long long x = 0;
        double d = 0;
        bool over = false;
        for (size_t k = 2; k < n; k++) {
            int dg = yvb_digit_value(s[k], base);
            if (dg < 0)
                return false;
            if (!over && x > (LLONG_MAX - dg) / base)
                over = true;
            if (!over)
                x = x * base + dg;
            d = d * base + dg;
        }
        if (over) {
            v->type = YV_FLOAT;
            v->f = d;
        } else {
            v->type = YV_INT;
            v->i = x;
        }
        return true;
    }
    size_t k = (s[0] == '+' || s[0] == '-') ? 1 : 0;
    if (k == n || yvb_digits(s, n, k) != n - k)
        return false;
    errno = 0;
    long long x = strtoll(s, NULL, 10);
    if (errno == ERANGE) {
        v->type = YV_FLOAT;
        v->f = strtod(s, NULL);
    } else {
        v->type = YV_INT;
        v->i = x;
    }
    return true;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, [-+]?.inf, .nan */
static bool S_resolve_float(yv *v)
{
    static const char *const infs[] = {".inf", ".Inf", ".INF", NULL};
    static const char *const nans[] = {".nan", ".NaN", ".NAN", NULL};
    const char *s = v->str;
    size_t n = v->len, k = 0;
    bool neg = false;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        k = 1;
    }
    if (yvb_is_one_of(s + k, infs)) {
        v->type = YV_FLOAT;
        v->f = neg ? -INFINITY : INFINITY;
        return true;
    }
    if (yvb_is_one_of(s, nans)) {
        v->type = YV_FLOAT;
        v->f = NAN;
        return true;
    }
    size_t whole = yvb_digits(s, n, k), frac = 0;
    k += whole;
    if (k < n && s[k] == '.') {
        frac = yvb_digits(s, n, k + 1);
        k += 1 + frac;
    }
    if (whole == 0 && frac == 0)
        return false;
    if (k < n && (s[k] == 'e' || s[k] == 'E')) {
        k++;
        if (k < n && (s[k] == '+' || s[k] == '-'))
            k++;
        size_t exp = yvb_digits(s, n, k);
        if (exp == 0)
            return false;
        k += exp;
    }
    if (k != n)
        return false;
    v->type = YV_FLOAT;
    v->f = strtod(s, NULL); /* the grammar above is a subset of strtod's */
    return true;
}

/* Types v->str by the YAML 1.2 core schema (see yv.h). */
void yvb_resolve(yv *v)
{
    static const char *const nulls[] = {"null", "Null", "NULL", "~", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    if (v->len == 0 || yvb_is_one_of(v->str, nulls)) {
        v->type = YV_NULL;
    } else if (yvb_is_one_of(v->str, trues)) {
        v->type = YV_BOOL;
        v->b = true;
    } else if (yvb_is_one_of(v->str, falses)) {
        v->type = YV_BOOL;
        v->b = false;
    } else if (!S_resolve_int(v) && !S_resolve_float(v)) {
        v->type = YV_STRING;
    }
}

typedef struct {
    const char *key;
    size_t idx;
} S_keyref;

static int S_keyref_cmp(const void *pa, const void *pb)
{
    const S_keyref *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    if (c)
        return c;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Finds the earliest key that repeats an earlier one. Sorting keeps this
 * O(n log n) whatever keys a hostile file picks. */
bool yvb_find_dup(char *const *keys, size_t n, size_t *dup, size_t *first)
{
    if (n < 2)
        return false;
    S_keyref *r = xmalloc(n * sizeof *r);
    for (size_t k = 0; k < n; k++)
        r[k] = (S_keyref){keys[k], k};
    qsort(r, n, sizeof *r, S_keyref_cmp);
    bool found = false;
    size_t group = 0;
    for (size_t k = 1; k < n; k++) {
        if (strcmp(r[k].key, r[group].key) != 0) {
            group = k;
        } else if (!found || r[k].idx < *dup) {
            found = true;
            *dup = r[k].idx;
            *first = r[group].idx;
        }
    }
    free(r);
    return found;
}

/* ------------------------------------------ the tree builder (yv_build.h) */

void yvb_init(yvb_builder *b, const yv_limits *lim, const char *file, diag_list *dl)
{
    memset(b, 0, sizeof *b);
    b->lim = lim;
    b->file = file;
    b->dl = dl;
}

yv *yvb_fail(yvb_builder *b)
{
    for (size_t k = 0; k < b->depth; k++)
        free(b->st[k].key);
    free(b->st);
    yv_free(b->root);
    return NULL;
}

yv *yvb_done(yvb_builder *b)
{
    free(b->st);
    return b->root;
}

yvb_frame *yvb_top(yvb_builder *b) { return b->depth ? &b->st[b->depth - 1] : NULL; }

bool yvb_want_key(yvb_builder *b)
{
    yvb_frame *f = yvb_top(b);
    return f && f->v->type == YV_MAP && !f->key;
}

void yvb_key(yvb_builder *b, const char *s, size_t len, int line, int col)
{
    yvb_frame *f = yvb_top(b);
    f->key = xstrndup(s, len);
    f->key_line = line;
    f->key_col = col;
}

/* A new node of type t, attached under the open container (after its pending
 * key) or as the root. NULL, with the error reported, past max_nodes. */
static yv *S_node(yvb_builder *b, yv_type t, int line, int col)
{
    if (b->nodes >= b->lim->max_nodes) {
        diag_error(b->dl, b->file, line, col, "more than %zu values", b->lim->max_nodes);
        return NULL;
    }
    b->nodes++;
    yv *v = xcalloc(1, sizeof *v);
    v->type = t;
    v->line = line;
    v->col = col;
    yvb_frame *f = yvb_top(b);
    if (!f) {
        b->root = v;
        return v;
    }
    yv *p = f->v;
    if (p->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 4;
        p->items = xrealloc(p->items, f->cap * sizeof *p->items);
        if (p->type == YV_MAP) {
            p->keys = xrealloc(p->keys, f->cap * sizeof *p->keys);
            p->key_lines = xrealloc(p->key_lines, f->cap * sizeof *p->key_lines);
            p->key_cols = xrealloc(p->key_cols, f->cap * sizeof *p->key_cols);
        }
    }
    if (p->type == YV_MAP) {
        p->keys[p->n] = f->key;
        p->key_lines[p->n] = f->key_line;
        p->key_cols[p->n] = f->key_col;
        f->key = NULL;
    }
    p->items[p->n++] = v;
    return v;
}

yv *yvb_scalar(yvb_builder *b, const char *s, size_t len, int line, int col)
{
    yv *v = S_node(b, YV_STRING, line, col);
    if (v) {
        v->str = xstrndup(s, len);
        v->len = len;
    }
    return v;
}

yv *yvb_open(yvb_builder *b, yv_type t, int line, int col)
{
    if ((long long)b->depth >= b->lim->max_depth) {
        diag_error(b->dl, b->file, line, col, "nesting deeper than %d levels", b->lim->max_depth);
        return NULL;
    }
    yv *v = S_node(b, t, line, col);
    if (!v)
        return NULL;
    if (b->depth == b->st_cap) {
        b->st_cap = b->st_cap ? b->st_cap * 2 : 16;
        b->st = xrealloc(b->st, b->st_cap * sizeof *b->st);
    }
    b->st[b->depth++] = (yvb_frame){v, 0, NULL, 0, 0};
    return v;
}

/* Closes the innermost container; maps are checked for duplicate keys. */
int yvb_close(yvb_builder *b, bool check_dups)
{
    yvb_frame *f = &b->st[--b->depth];
    free(f->key); /* only set if a parser closed a map between key and value */
    yv *m = f->v;
    size_t dup, first;
    if (check_dups && m->type == YV_MAP && yvb_find_dup(m->keys, m->n, &dup, &first)) {
        char *q = yvb_quoted(m->keys[dup], strlen(m->keys[dup]));
        diag_error(b->dl, b->file, m->key_lines[dup], m->key_cols[dup],
                   "duplicate key %s (first at line %d)", q, m->key_lines[first]);
        free(q);
        return -1;
    }
    return 0;
}

/* ---------- hash ---------- */

unsigned long long yv_hash(const yv *v, unsigned long long h)
{
    if (!v)
        return stamp_bytes(h, "-", 1);
    size_t cap = 16, n = 0;
    const yv **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = v;
    while (n > 0) {
        const yv *x = stack[--n];
        unsigned char t = (unsigned char)x->type;
        h = stamp_bytes(h, &t, 1);
        if (x->str)
            h = stamp_bytes(h, x->str, x->len + 1);
        if (x->type != YV_SEQ && x->type != YV_MAP)
            continue;
        h = stamp_bytes(h, &x->n, sizeof x->n);
        if (n + x->n > cap) {
            while (n + x->n > cap)
                cap *= 2;
            stack = xrealloc(stack, cap * sizeof *stack);
        }
        /* pushed in reverse: items come off the stack in document order */
        for (size_t i = x->n; i-- > 0;) {
            if (x->type == YV_MAP)
                h = stamp_bytes(h, x->keys[i], strlen(x->keys[i]) + 1);
            stack[n++] = x->items[i];
        }
    }
    free(stack);
    return h;
}

/* ---------- bytes, for the build cache ---------- */

/* A node: u8 type, u8 flags (1 bool true, 2 quoted, 4 has a string), i32 line,
 * i32 col, then an i64 (YV_INT) or f64 (YV_FLOAT), the string (u32 length,
 * bytes) when it has one, and for containers u32 n and the keys (u32 length,
 * bytes, i32 line, i32 col each, YV_MAP). Children follow in document order. */
enum { S_F_TRUE = 1, S_F_QUOTED = 2, S_F_STR = 4 };

static void S_put_text(buf *out, const char *s, size_t len, int32_t line, int32_t col)
{
    uint32_t n = (uint32_t)len;
    buf_grow(out, sizeof n + len + 2 * sizeof line);
    buf_put(out, &n, sizeof n);
    buf_put(out, s, len);
    buf_put(out, &line, sizeof line);
    buf_put(out, &col, sizeof col);
}

void yv_encode(const yv *v, buf *out)
{
    size_t cap = 16, n = 0;
    const yv **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = v;
    while (n > 0) {
        const yv *x = stack[--n];
        bool container = x->type == YV_SEQ || x->type == YV_MAP;
        unsigned char head[2] = {(unsigned char)x->type,
                                 (unsigned char)((x->b ? S_F_TRUE : 0) | (x->quoted ? S_F_QUOTED : 0) |
                                                 (x->str ? S_F_STR : 0))};
        int32_t pos[2] = {x->line, x->col};
        buf_grow(out, sizeof head + sizeof pos + 8 + 4 + (x->str ? x->len : 0) + 4);
        buf_put(out, head, sizeof head);
        buf_put(out, pos, sizeof pos);
        if (x->type == YV_INT) {
            int64_t i = x->i;
            buf_put(out, &i, sizeof i);
        } else if (x->type == YV_FLOAT) {
            buf_put(out, &x->f, sizeof x->f);
        }
        if (x->str) {
            uint32_t len = (uint32_t)x->len;
            buf_put(out, &len, sizeof len);
            buf_put(out, x->str, x->len);
        }
        if (!container)
            continue;
        uint32_t count = (uint32_t)x->n;
        buf_put(out, &count, sizeof count);
        if (x->type == YV_MAP)
            for (size_t k = 0; k < x->n; k++)
                S_put_text(out, x->keys[k], strlen(x->keys[k]), x->key_lines ? x->key_lines[k] : 0,
                           x->key_cols ? x->key_cols[k] : 0);
        if (n + x->n > cap) {
            while (n + x->n > cap)
                cap *= 2;
            stack = xrealloc(stack, cap * sizeof *stack);
        }
        for (size_t k = x->n; k-- > 0;) /* first child on top */
            stack[n++] = x->items[k];
    }
    free(stack);
}

/* What S_take takes for n bytes: rounded up to max_align_t. */
static size_t S_taken(size_t n)
{
    return (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
}

/* n zeroed bytes from the blocks after *last (the first, *first, made on
 * the first call, about size_hint bytes). */
static void *S_take(S_block **first, S_block **last, size_t n, size_t size_hint)
{
    n = S_taken(n);
    S_block *b = *last;
    if (!b || b->cap - b->used < n) {
        size_t cap = b ? 2 * b->cap : size_hint;
        if (cap < n)
            cap = n;
        S_block *nb = xmalloc(sizeof *nb + cap);
        nb->next = NULL;
        nb->cap = cap;
        nb->used = 0;
        if (b)
            b->next = nb;
        else
            *first = nb;
        *last = b = nb;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

/* A string of n bytes, NUL-terminated, in the blocks; NULL when bad. */
static char *S_rd_str(buf_reader *r, uint32_t n, S_block **first, S_block **last, size_t hint)
{
    const char *s = buf_rd_span(r, n);
    if (!s)
        return NULL;
    char *t = S_take(first, last, (size_t)n + 1, hint);
    memcpy(t, s, n);
    return t;
}

/* The bytes yv_decode will take from its blocks for the tree at data, read
 * ahead (the nodes come in document order, each container's count saying
 * how many follow), so that the tree is made in one block of its size. A
 * hint only: should it fall short, S_take makes another block. */
static size_t S_decoded_size(const char *data, size_t len)
{
    buf_reader r = {data, data + len, false};
    size_t size = 0, left = 1;
    while (left > 0 && !r.bad) {
        left--;
        unsigned char head[2];
        int32_t pos[2];
        uint32_t n = 0;
        buf_rd_get(&r, head, sizeof head);
        buf_rd_get(&r, pos, sizeof pos);
        size += S_taken(sizeof(yv));
        if (head[0] == YV_INT || head[0] == YV_FLOAT)
            buf_rd_span(&r, 8);
        if (head[1] & S_F_STR) {
            buf_rd_get(&r, &n, sizeof n);
            buf_rd_span(&r, n);
            size += S_taken((size_t)n + 1);
        }
        if (head[0] != YV_SEQ && head[0] != YV_MAP)
            continue;
        buf_rd_get(&r, &n, sizeof n);
        if (r.bad || n > (size_t)(r.end - r.p))
            break;
        size += S_taken(((size_t)n + 1) * sizeof(yv *));
        if (head[0] == YV_MAP) {
            size += S_taken(((size_t)n + 1) * sizeof(char *)) +
                    2 * S_taken(((size_t)n + 1) * sizeof(int));
            for (uint32_t k = 0; k < n && !r.bad; k++) {
                uint32_t kn = 0;
                buf_rd_get(&r, &kn, sizeof kn);
                buf_rd_span(&r, kn);
                buf_rd_span(&r, 2 * sizeof(int32_t));
                size += S_taken((size_t)kn + 1);
            }
        }
        left += n;
    }
    return size;
}

size_t yv_decode(const char *data, size_t len, yv **out)
{
    buf_reader r = {data, data + len, false};
    /* slots still to fill, as pointers to where the next node goes */
    size_t cap = 16, n = 0;
    yv ***stack = xmalloc(cap * sizeof *stack);
    yv *root = NULL;
    stack[n++] = &root;
    /* one block of the tree's size (a tree takes 1 to 8 times its bytes:
     * a guess either wastes most of a block or makes a second one) */
    S_block *first = NULL, *last = NULL;
    size_t hint = S_decoded_size(data, len);
    while (n > 0 && !r.bad) {
        yv **slot = stack[--n];
        unsigned char head[2];
        int32_t pos[2];
        buf_rd_get(&r, head, sizeof head);
        buf_rd_get(&r, pos, sizeof pos);
        if (r.bad)
            break;
        int type = head[0];
        bool container = type == YV_SEQ || type == YV_MAP;
        if (type > YV_MAP || (head[1] & ~(S_F_TRUE | S_F_QUOTED | S_F_STR))) {
            r.bad = true;
            break;
        }
        yv *x = S_take(&first, &last, sizeof *x, hint);
        *slot = x;
        if (!root->pool)
            root->pool = first; /* the root is the first node taken */
        x->type = (yv_type)type;
        x->line = pos[0];
        x->col = pos[1];
        x->b = (head[1] & S_F_TRUE) != 0;
        x->quoted = (head[1] & S_F_QUOTED) != 0;
        if (type == YV_INT) {
            int64_t i = 0;
            buf_rd_get(&r, &i, sizeof i);
            x->i = i;
        } else if (type == YV_FLOAT) {
            buf_rd_get(&r, &x->f, sizeof x->f);
        }
        if (head[1] & S_F_STR) {
            uint32_t sl = 0;
            buf_rd_get(&r, &sl, sizeof sl);
            x->str = S_rd_str(&r, sl, &first, &last, hint);
            x->len = sl;
        }
        if (!container)
            continue;
        uint32_t count = 0;
        buf_rd_get(&r, &count, sizeof count);
        /* every child takes at least its head: a corrupt count cannot allocate much */
        if (r.bad || count > (size_t)(r.end - r.p) / (sizeof head + sizeof pos)) {
            r.bad = true;
            break;
        }
        x->n = count;
        x->items = S_take(&first, &last, ((size_t)count + 1) * sizeof *x->items, hint);
        if (x->type == YV_MAP) {
            x->keys = S_take(&first, &last, ((size_t)count + 1) * sizeof *x->keys, hint);
            x->key_lines = S_take(&first, &last, ((size_t)count + 1) * sizeof *x->key_lines, hint);
            x->key_cols = S_take(&first, &last, ((size_t)count + 1) * sizeof *x->key_cols, hint);
            for (size_t k = 0; k < count && !r.bad; k++) {
                uint32_t kn = 0;
                buf_rd_get(&r, &kn, sizeof kn);
                x->keys[k] = S_rd_str(&r, kn, &first, &last, hint);
                int32_t kl = 0, kc = 0;
                buf_rd_get(&r, &kl, sizeof kl);
                buf_rd_get(&r, &kc, sizeof kc);
                x->key_lines[k] = kl;
                x->key_cols[k] = kc;
            }
        }
        if (n + count > cap) {
            while (n + count > cap)
                cap *= 2;
            stack = xrealloc(stack, cap * sizeof *stack);
        }
        for (size_t k = count; k-- > 0;)
            stack[n++] = &x->items[k];
    }
    free(stack);
    if (r.bad || n > 0) {
        S_blocks_free(first); /* a partial tree: all of it is in them */
        *out = NULL;
        return 0;
    }
    *out = root;
    return (size_t)(r.p - data);
}

