#include "yv.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "buf.h"
#include "stamp.h"

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

void yv_free(yv *v)
{
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

/* ------------------------------------------------------- shared helpers */

static int S_clamp(long long x)
{
    if (x > INT_MAX)
        return INT_MAX;
    return x < 0 ? 0 : (int)x;
}

/* A key or value as it appears in a message: quoted, one line, bounded. */
static char *S_quoted(const char *s, size_t len)
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

/* Length of the well-formed UTF-8 sequence at s, 0 if there is none
 * (overlong forms, surrogates and code points past U+10FFFF are refused). */
static size_t S_utf8_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k < n; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    return n;
}

static bool S_has_bom(const char *text, size_t len)
{
    return len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0;
}

/* 1-based line and byte column of byte off; lines end at LF; a leading BOM
 * takes no column, as in every parser here. */
static void S_pos_of(const char *text, size_t off, int line_offset, int *line, int *col)
{
    long long l = 1;
    size_t start = off >= 3 && S_has_bom(text, off) ? 3 : 0;
    for (size_t k = 0; k < off; k++) {
        if (text[k] == '\n') {
            l++;
            start = k + 1;
        }
    }
    *line = S_clamp(l + line_offset);
    *col = S_clamp((long long)(off - start + 1));
}

/* The checks every format shares: size, NUL bytes, UTF-8. */
static int S_check_input(const char *text, size_t len, const yv_limits *lim, const char *file,
                         int line_offset, diag_list *dl)
{
    if (len > lim->max_bytes) {
        diag_error(dl, file, 0, 0, "file too large (%zu bytes, limit %zu)", len, lim->max_bytes);
        return -1;
    }
    const unsigned char *s = (const unsigned char *)text;
    for (size_t k = 0; k < len;) {
        size_t n = s[k] ? S_utf8_len(s + k, len - k) : 0;
        if (n == 0) {
            int line, col;
            S_pos_of(text, k, line_offset, &line, &col);
            if (s[k] == 0)
                diag_error(dl, file, line, col, "NUL byte in input");
            else
                diag_error(dl, file, line, col, "invalid UTF-8 at byte %zu", k);
            return -1;
        }
        k += n;
    }
    return 0;
}

static size_t S_digits(const char *s, size_t n, size_t k)
{
    size_t start = k;
    while (k < n && s[k] >= '0' && s[k] <= '9')
        k++;
    return k - start;
}

static int S_digit_value(char c, int base)
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

static bool S_is_one_of(const char *s, const char *const *words)
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
            int dg = S_digit_value(s[k], base);
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
    if (k == n || S_digits(s, n, k) != n - k)
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
    if (S_is_one_of(s + k, infs)) {
        v->type = YV_FLOAT;
        v->f = neg ? -INFINITY : INFINITY;
        return true;
    }
    if (S_is_one_of(s, nans)) {
        v->type = YV_FLOAT;
        v->f = NAN;
        return true;
    }
    size_t whole = S_digits(s, n, k), frac = 0;
    k += whole;
    if (k < n && s[k] == '.') {
        frac = S_digits(s, n, k + 1);
        k += 1 + frac;
    }
    if (whole == 0 && frac == 0)
        return false;
    if (k < n && (s[k] == 'e' || s[k] == 'E')) {
        k++;
        if (k < n && (s[k] == '+' || s[k] == '-'))
            k++;
        size_t exp = S_digits(s, n, k);
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
static void S_resolve(yv *v)
{
    static const char *const nulls[] = {"null", "Null", "NULL", "~", NULL};
    static const char *const trues[] = {"true", "True", "TRUE", NULL};
    static const char *const falses[] = {"false", "False", "FALSE", NULL};
    if (v->len == 0 || S_is_one_of(v->str, nulls)) {
        v->type = YV_NULL;
    } else if (S_is_one_of(v->str, trues)) {
        v->type = YV_BOOL;
        v->b = true;
    } else if (S_is_one_of(v->str, falses)) {
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
static bool S_find_dup(char *const *keys, size_t n, size_t *dup, size_t *first)
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

/* ------------------------------------------------------ the tree builder */

/* The three parsers build through this: it attaches each new node where it
 * belongs, so on error freeing the root frees everything, and it enforces
 * the depth and node limits in one place. */
typedef struct {
    yv *v;
    size_t cap;    /* room in v's arrays */
    char *key;     /* YV_MAP: the key waiting for its value (owned), or NULL */
    int key_line, key_col;
} S_frame;

typedef struct {
    const yv_limits *lim;
    const char *file;
    diag_list *dl;
    S_frame *st;
    size_t depth, st_cap;
    yv *root;
    size_t nodes;
} S_builder;

static void S_b_init(S_builder *b, const yv_limits *lim, const char *file, diag_list *dl)
{
    memset(b, 0, sizeof *b);
    b->lim = lim;
    b->file = file;
    b->dl = dl;
}

static yv *S_b_fail(S_builder *b)
{
    for (size_t k = 0; k < b->depth; k++)
        free(b->st[k].key);
    free(b->st);
    yv_free(b->root);
    return NULL;
}

static yv *S_b_done(S_builder *b)
{
    free(b->st);
    return b->root;
}

static S_frame *S_b_top(S_builder *b) { return b->depth ? &b->st[b->depth - 1] : NULL; }

static bool S_b_want_key(S_builder *b)
{
    S_frame *f = S_b_top(b);
    return f && f->v->type == YV_MAP && !f->key;
}

static void S_b_key(S_builder *b, const char *s, size_t len, int line, int col)
{
    S_frame *f = S_b_top(b);
    f->key = xstrndup(s, len);
    f->key_line = line;
    f->key_col = col;
}

/* A new node of type t, attached under the open container (after its pending
 * key) or as the root. NULL, with the error reported, past max_nodes. */
static yv *S_b_node(S_builder *b, yv_type t, int line, int col)
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
    S_frame *f = S_b_top(b);
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

static yv *S_b_scalar(S_builder *b, const char *s, size_t len, int line, int col)
{
    yv *v = S_b_node(b, YV_STRING, line, col);
    if (v) {
        v->str = xstrndup(s, len);
        v->len = len;
    }
    return v;
}

static yv *S_b_open(S_builder *b, yv_type t, int line, int col)
{
    if ((long long)b->depth >= b->lim->max_depth) {
        diag_error(b->dl, b->file, line, col, "nesting deeper than %d levels", b->lim->max_depth);
        return NULL;
    }
    yv *v = S_b_node(b, t, line, col);
    if (!v)
        return NULL;
    if (b->depth == b->st_cap) {
        b->st_cap = b->st_cap ? b->st_cap * 2 : 16;
        b->st = xrealloc(b->st, b->st_cap * sizeof *b->st);
    }
    b->st[b->depth++] = (S_frame){v, 0, NULL, 0, 0};
    return v;
}

/* Closes the innermost container; maps are checked for duplicate keys. */
static int S_b_close(S_builder *b, bool check_dups)
{
    S_frame *f = &b->st[--b->depth];
    free(f->key); /* only set if a parser closed a map between key and value */
    yv *m = f->v;
    size_t dup, first;
    if (check_dups && m->type == YV_MAP && S_find_dup(m->keys, m->n, &dup, &first)) {
        char *q = S_quoted(m->keys[dup], strlen(m->keys[dup]));
        diag_error(b->dl, b->file, m->key_lines[dup], m->key_cols[dup],
                   "duplicate key %s (first at line %d)", q, m->key_lines[first]);
        free(q);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ YAML */

/* libyaml counts marks in characters; diagnostics count bytes. A cursor maps
 * a character index to its byte offset, walking from where it last stood:
 * events come in document order, so the walk is linear overall. */
typedef struct {
    const unsigned char *s;
    size_t len, base; /* base: where character 0 starts (after a BOM) */
    size_t ci, bi;
} S_cursor;

static size_t S_cursor_seek(S_cursor *c, size_t ci)
{
    while (c->ci < ci && c->bi < c->len) {
        c->bi++;
        while (c->bi < c->len && (c->s[c->bi] & 0xC0) == 0x80)
            c->bi++;
        c->ci++;
    }
    while (c->ci > ci && c->bi > c->base) {
        c->bi--;
        while (c->bi > c->base && (c->s[c->bi] & 0xC0) == 0x80)
            c->bi--;
        c->ci--;
    }
    return c->bi;
}

typedef struct {
    S_builder b;
    S_cursor at, line_start; /* two cursors, each moving mostly forward */
    int line_offset;
    const char *text;
    int docs;
} S_yaml;

static void S_yaml_pos(S_yaml *y, yaml_mark_t m, int *line, int *col)
{
    size_t at = S_cursor_seek(&y->at, m.index);
    size_t start = S_cursor_seek(&y->line_start, m.index >= m.column ? m.index - m.column : 0);
    *line = S_clamp((long long)m.line + 1 + y->line_offset);
    *col = S_clamp((long long)(at - start) + 1);
}

static void S_yaml_syntax_error(S_yaml *y, const yaml_parser_t *p)
{
    int line, col;
    if (p->error == YAML_MEMORY_ERROR) {
        diag_error(y->b.dl, y->b.file, 0, 0, "out of memory while parsing YAML");
        return;
    }
    if (p->error == YAML_READER_ERROR)
        S_pos_of(y->text, p->problem_offset, y->line_offset, &line, &col);
    else
        S_yaml_pos(y, p->problem_mark, &line, &col);
    diag_error(y->b.dl, y->b.file, line, col, "invalid YAML: %s",
               p->problem ? p->problem : "syntax error");
}

#define S_YAML_TAG "tag:yaml.org,2002:"

/* The standard tag t names (the part after "!!"), or NULL for any other. */
static const char *S_std_tag(const char *t)
{
    static const char *const known[] = {"str", "int", "float", "bool", "null", "seq", "map", NULL};
    size_t n = strlen(S_YAML_TAG);
    if (strncmp(t, S_YAML_TAG, n) != 0 || !S_is_one_of(t + n, known))
        return NULL;
    return t + n;
}

static int S_yaml_bad_tag(S_yaml *y, const char *tag, int line, int col)
{
    size_t n = strlen(S_YAML_TAG);
    bool std = strncmp(tag, S_YAML_TAG, n) == 0;
    char *q = std ? xasprintf("!!%s", tag + n) : xstrdup(tag);
    char *qq = S_quoted(q, strlen(q));
    diag_error(y->b.dl, y->b.file, line, col, "unsupported YAML tag %s here", qq);
    free(qq);
    free(q);
    return -1;
}

/* A tag on a collection may only restate what it is. */
static int S_yaml_collection_tag(S_yaml *y, const yaml_char_t *tag, yv_type t, int line, int col)
{
    if (!tag || strcmp((const char *)tag, "!") == 0)
        return 0;
    const char *std = S_std_tag((const char *)tag);
    if (std && strcmp(std, t == YV_SEQ ? "seq" : "map") == 0)
        return 0;
    return S_yaml_bad_tag(y, (const char *)tag, line, col);
}

static int S_yaml_scalar(S_yaml *y, const yaml_event_t *e, int line, int col)
{
    S_builder *b = &y->b;
    const char *val = (const char *)e->data.scalar.value;
    size_t len = e->data.scalar.length;
    const char *tag = (const char *)e->data.scalar.tag;
    const char *std = NULL;
    if (memchr(val, '\0', len)) {
        diag_error(b->dl, b->file, line, col, "NUL character in string");
        return -1;
    }
    if (tag && strcmp(tag, "!") != 0) {
        std = S_std_tag(tag);
        if (!std || strcmp(std, "seq") == 0 || strcmp(std, "map") == 0)
            return S_yaml_bad_tag(y, tag, line, col);
    }
    if (S_b_want_key(b)) {
        S_b_key(b, val, len, line, col); /* keys are text, whatever they look like */
        return 0;
    }
    yv *v = S_b_scalar(b, val, len, line, col);
    if (!v)
        return -1;
    v->quoted = e->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                e->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    if (!tag) {
        if (e->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
            S_resolve(v);
        return 0;
    }
    if (!std || strcmp(std, "str") == 0)
        return 0; /* "!" or "!!str": a string */
    S_resolve(v);
    if (strcmp(std, "float") == 0 && v->type == YV_INT) {
        v->type = YV_FLOAT;
        v->f = (double)v->i;
    }
    static const struct {
        const char *tag;
        yv_type type;
    } want[] = {{"int", YV_INT}, {"float", YV_FLOAT}, {"bool", YV_BOOL}, {"null", YV_NULL}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        if (strcmp(std, want[k].tag) == 0 && v->type != want[k].type) {
            char *q = S_quoted(val, len);
            diag_error(b->dl, b->file, line, col, "%s is not a valid !!%s", q, std);
            free(q);
            return -1;
        }
    }
    return 0;
}

static int S_yaml_open(S_yaml *y, const yaml_event_t *e, int line, int col)
{
    S_builder *b = &y->b;
    bool seq = e->type == YAML_SEQUENCE_START_EVENT;
    const yaml_char_t *anchor = seq ? e->data.sequence_start.anchor : e->data.mapping_start.anchor;
    const yaml_char_t *tag = seq ? e->data.sequence_start.tag : e->data.mapping_start.tag;
    yv_type t = seq ? YV_SEQ : YV_MAP;
    if (anchor) {
        diag_error(b->dl, b->file, line, col, "YAML anchors are not supported");
        return -1;
    }
    if (S_b_want_key(b)) {
        diag_error(b->dl, b->file, line, col, "YAML map keys must be scalars, not a %s",
                   yv_type_name(t));
        return -1;
    }
    if (S_yaml_collection_tag(y, tag, t, line, col) < 0)
        return -1;
    return S_b_open(b, t, line, col) ? 0 : -1;
}

/* One event; 1 at the end of the stream, -1 on error. */
static int S_yaml_event(S_yaml *y, const yaml_event_t *e)
{
    S_builder *b = &y->b;
    int line, col;
    S_yaml_pos(y, e->start_mark, &line, &col);
    switch (e->type) {
    case YAML_STREAM_END_EVENT:
        return 1;
    case YAML_DOCUMENT_START_EVENT:
        if (++y->docs > 1) {
            diag_error(b->dl, b->file, line, col, "more than one YAML document");
            return -1;
        }
        return 0;
    case YAML_ALIAS_EVENT:
        diag_error(b->dl, b->file, line, col, "YAML aliases are not supported");
        return -1;
    case YAML_SCALAR_EVENT:
        if (e->data.scalar.anchor) {
            diag_error(b->dl, b->file, line, col, "YAML anchors are not supported");
            return -1;
        }
        return S_yaml_scalar(y, e, line, col);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        return S_yaml_open(y, e, line, col);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return S_b_close(b, true);
    default:
        return 0;
    }
}

yv *yv_parse_yaml(const char *text, size_t len, const yv_limits *lim, const char *file,
                  int line_offset, diag_list *dl)
{
    lim = lim ? lim : &yv_default_limits;
    text = text ? text : ""; /* an empty buf has no storage */
    if (S_check_input(text, len, lim, file, line_offset, dl) < 0)
        return NULL;
    S_yaml y;
    memset(&y, 0, sizeof y);
    S_b_init(&y.b, lim, file, dl);
    y.text = text;
    y.line_offset = line_offset;
    /* libyaml skips a UTF-8 BOM before it counts characters */
    size_t base = S_has_bom(text, len) ? 3 : 0;
    y.at = (S_cursor){(const unsigned char *)text, len, base, 0, base};
    y.line_start = y.at;

    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        diag_error(dl, file, 0, 0, "out of memory while parsing YAML");
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = 0;
    while (rc == 0) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) {
            S_yaml_syntax_error(&y, &p);
            rc = -1;
            break;
        }
        rc = S_yaml_event(&y, &e);
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&p);
    if (rc < 0)
        return S_b_fail(&y.b);

    yv *root = S_b_done(&y.b);
    if (root && root->type == YV_NULL && root->len == 0) {
        /* "---" and nothing else: as empty as no document at all */
        yv_free(root);
        root = NULL;
    }
    if (!root) {
        root = xcalloc(1, sizeof *root);
        root->type = YV_MAP;
        root->line = S_clamp(1LL + line_offset);
        root->col = 1;
    }
    return root;
}

/* ------------------------------------------------------------------ JSON */

typedef struct {
    S_builder b;
    const char *s;
    size_t len, pos;
    int line;
    size_t line_start; /* byte offset where the current line starts */
    buf str;           /* scratch for decoded strings */
} S_json;

static int S_json_col(const S_json *j, size_t pos) { return S_clamp((long long)(pos - j->line_start) + 1); }

static int S_json_fail(S_json *j, size_t pos, const char *msg)
{
    diag_error(j->b.dl, j->b.file, j->line, S_json_col(j, pos), "invalid JSON: %s", msg);
    return -1;
}

static void S_json_ws(S_json *j)
{
    while (j->pos < j->len) {
        char c = j->s[j->pos];
        if (c == '\n') {
            j->line++;
            j->line_start = j->pos + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            return;
        }
        j->pos++;
    }
}

static void S_put_utf8(buf *b, unsigned cp)
{
    if (cp < 0x80) {
        buf_putc(b, (int)cp);
    } else if (cp < 0x800) {
        buf_putc(b, (int)(0xC0 | (cp >> 6)));
        buf_putc(b, (int)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        buf_putc(b, (int)(0xE0 | (cp >> 12)));
        buf_putc(b, (int)(0x80 | ((cp >> 6) & 0x3F)));
        buf_putc(b, (int)(0x80 | (cp & 0x3F)));
    } else {
        buf_putc(b, (int)(0xF0 | (cp >> 18)));
        buf_putc(b, (int)(0x80 | ((cp >> 12) & 0x3F)));
        buf_putc(b, (int)(0x80 | ((cp >> 6) & 0x3F)));
        buf_putc(b, (int)(0x80 | (cp & 0x3F)));
    }
}

/* The four hex digits of a \u escape at s[at] ('\\'), or -1. */
static long S_json_hex4(const S_json *j, size_t at)
{
    if (at + 6 > j->len || j->s[at] != '\\' || j->s[at + 1] != 'u')
        return -1;
    long cp = 0;
    for (size_t k = at + 2; k < at + 6; k++) {
        int d = S_digit_value(j->s[k], 16);
        if (d < 0)
            return -1;
        cp = cp * 16 + d;
    }
    return cp;
}

/* Decodes the string at j->pos (a '"') into j->str. */
static int S_json_string(S_json *j)
{
    size_t start = j->pos++;
    buf_clear(&j->str);
    for (;;) {
        if (j->pos >= j->len)
            return S_json_fail(j, start, "unterminated string");
        unsigned char c = (unsigned char)j->s[j->pos];
        if (c == '"') {
            j->pos++;
            return 0;
        }
        if (c < 0x20)
            return S_json_fail(j, j->pos, "control character in string");
        if (c != '\\') {
            buf_putc(&j->str, c);
            j->pos++;
            continue;
        }
        size_t esc = j->pos;
        char e = j->pos + 1 < j->len ? j->s[j->pos + 1] : '\0';
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *hit = e ? strchr(from, e) : NULL;
        if (hit) {
            buf_putc(&j->str, to[hit - from]);
            j->pos += 2;
            continue;
        }
        if (e != 'u')
            return S_json_fail(j, esc, "invalid escape");
        long cp = S_json_hex4(j, esc);
        if (cp < 0)
            return S_json_fail(j, esc, "invalid \\u escape");
        j->pos += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            long lo = S_json_hex4(j, j->pos);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return S_json_fail(j, esc, "unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            j->pos += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return S_json_fail(j, esc, "unpaired surrogate in \\u escape");
        } else if (cp == 0) {
            diag_error(j->b.dl, j->b.file, j->line, S_json_col(j, esc), "NUL character in string");
            return -1;
        }
        S_put_utf8(&j->str, (unsigned)cp);
    }
}

static int S_json_number(S_json *j)
{
    const char *s = j->s;
    size_t start = j->pos, k = start;
    bool integral = true;
    if (k < j->len && s[k] == '-')
        k++;
    size_t whole = S_digits(s, j->len, k);
    if (whole == 0 || (whole > 1 && s[k] == '0'))
        return S_json_fail(j, start, "invalid number");
    k += whole;
    if (k < j->len && s[k] == '.') {
        integral = false;
        size_t frac = S_digits(s, j->len, k + 1);
        if (frac == 0)
            return S_json_fail(j, start, "invalid number");
        k += 1 + frac;
    }
    if (k < j->len && (s[k] == 'e' || s[k] == 'E')) {
        integral = false;
        k++;
        if (k < j->len && (s[k] == '+' || s[k] == '-'))
            k++;
        size_t exp = S_digits(s, j->len, k);
        if (exp == 0)
            return S_json_fail(j, start, "invalid number");
        k += exp;
    }
    yv *v = S_b_scalar(&j->b, s + start, k - start, j->line, S_json_col(j, start));
    if (!v)
        return -1;
    j->pos = k;
    errno = 0;
    if (integral) {
        v->i = strtoll(v->str, NULL, 10);
        if (errno != ERANGE) {
            v->type = YV_INT;
            return 0;
        }
    }
    v->type = YV_FLOAT;
    v->f = strtod(v->str, NULL);
    return 0;
}

/* A value that is not a container: string, number, true, false, null. */
static int S_json_scalar(S_json *j)
{
    static const struct {
        const char *word;
        yv_type type;
        bool b;
    } lits[] = {{"true", YV_BOOL, true}, {"false", YV_BOOL, false}, {"null", YV_NULL, false}};
    char c = j->s[j->pos];
    int col = S_json_col(j, j->pos);
    if (c == '"') {
        if (S_json_string(j) < 0)
            return -1;
        return S_b_scalar(&j->b, j->str.ptr ? j->str.ptr : "", j->str.len, j->line, col) ? 0 : -1;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return S_json_number(j);
    for (size_t k = 0; k < sizeof lits / sizeof lits[0]; k++) {
        size_t n = strlen(lits[k].word);
        if (j->len - j->pos >= n && memcmp(j->s + j->pos, lits[k].word, n) == 0) {
            yv *v = S_b_scalar(&j->b, lits[k].word, n, j->line, col);
            if (!v)
                return -1;
            v->type = lits[k].type;
            v->b = lits[k].b;
            j->pos += n;
            return 0;
        }
    }
    return S_json_fail(j, j->pos, "expected a value");
}

enum { S_J_VALUE, S_J_VALUE_OR_END, S_J_KEY, S_J_KEY_OR_END, S_J_AFTER };

/* One step of the JSON state machine; 1 when the document is complete. */
static int S_json_step(S_json *j, int *state)
{
    S_json_ws(j);
    bool eof = j->pos >= j->len;
    char c = eof ? '\0' : j->s[j->pos];
    int col = S_json_col(j, j->pos);
    S_frame *top = S_b_top(&j->b);

    if ((*state == S_J_VALUE_OR_END && c == ']') || (*state == S_J_KEY_OR_END && c == '}')) {
        j->pos++;
        *state = S_J_AFTER;
        return S_b_close(&j->b, true);
    }
    if (*state == S_J_AFTER) {
        if (!top)
            return eof ? 1 : S_json_fail(j, j->pos, "unexpected content after the value");
        bool map = top->v->type == YV_MAP;
        if (c == ',') {
            j->pos++;
            *state = map ? S_J_KEY : S_J_VALUE;
            return 0;
        }
        if (c == (map ? '}' : ']')) {
            j->pos++;
            return S_b_close(&j->b, true);
        }
        if (eof)
            return S_json_fail(j, j->pos, "unexpected end of input");
        return S_json_fail(j, j->pos, map ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    if (eof)
        return S_json_fail(j, j->pos, "unexpected end of input");
    if (*state == S_J_KEY || *state == S_J_KEY_OR_END) {
        if (c != '"')
            return S_json_fail(j, j->pos, "expected a string key");
        if (S_json_string(j) < 0)
            return -1;
        S_b_key(&j->b, j->str.ptr ? j->str.ptr : "", j->str.len, j->line, col);
        S_json_ws(j);
        if (j->pos >= j->len || j->s[j->pos] != ':')
            return S_json_fail(j, j->pos, "expected ':'");
        j->pos++;
        *state = S_J_VALUE;
        return 0;
    }
    /* S_J_VALUE or S_J_VALUE_OR_END */
    if (c == '{' || c == '[') {
        if (!S_b_open(&j->b, c == '{' ? YV_MAP : YV_SEQ, j->line, col))
            return -1;
        j->pos++;
        *state = c == '{' ? S_J_KEY_OR_END : S_J_VALUE_OR_END;
        return 0;
    }
    *state = S_J_AFTER;
    return S_json_scalar(j);
}

yv *yv_parse_json(const char *text, size_t len, const yv_limits *lim, const char *file,
                  diag_list *dl)
{
    lim = lim ? lim : &yv_default_limits;
    text = text ? text : ""; /* an empty buf has no storage */
    if (S_check_input(text, len, lim, file, 0, dl) < 0)
        return NULL;
    S_json j;
    memset(&j, 0, sizeof j);
    S_b_init(&j.b, lim, file, dl);
    j.s = text;
    j.len = len;
    j.line = 1;
    buf_init(&j.str);
    if (S_has_bom(text, len))
        j.pos = j.line_start = 3; /* columns count from after the BOM, as editors show them */
    int state = S_J_VALUE, rc = 0;
    while (rc == 0)
        rc = S_json_step(&j, &state);
    buf_free(&j.str);
    return rc < 0 ? S_b_fail(&j.b) : S_b_done(&j.b);
}

/* ------------------------------------------------------------------- CSV */

typedef struct {
    buf text;
    int line, col;
} S_cell;

typedef struct {
    S_builder b;
    const char *s;
    size_t len, pos;
    int line;
    size_t line_start;
    S_cell *cells;
    size_t ncells, cap;
} S_csv;

static int S_csv_col(const S_csv *c, size_t pos) { return S_clamp((long long)(pos - c->line_start) + 1); }

static int S_csv_fail(S_csv *c, int line, int col, const char *msg)
{
    diag_error(c->b.dl, c->b.file, line, col, "invalid CSV: %s", msg);
    return -1;
}

static void S_csv_newline(S_csv *c, size_t next)
{
    c->line++;
    c->line_start = next;
}

/* Reads one quoted or plain field into cell. */
static int S_csv_field(S_csv *c, S_cell *cell)
{
    const char *s = c->s;
    if (c->pos < c->len && s[c->pos] == '"') {
        c->pos++;
        for (;;) {
            if (c->pos >= c->len)
                return S_csv_fail(c, cell->line, cell->col, "unterminated quoted field");
            char ch = s[c->pos++];
            if (ch == '"') {
                if (c->pos < c->len && s[c->pos] == '"') {
                    c->pos++;
                } else {
                    break;
                }
            } else if (ch == '\n') {
                S_csv_newline(c, c->pos);
            }
            buf_putc(&cell->text, ch);
        }
        if (c->pos < c->len && s[c->pos] != ',' && s[c->pos] != '\n' && s[c->pos] != '\r')
            return S_csv_fail(c, c->line, S_csv_col(c, c->pos),
                              "unexpected character after a closing quote");
        return 0;
    }
    size_t start = c->pos;
    while (c->pos < c->len && s[c->pos] != ',' && s[c->pos] != '\n' && s[c->pos] != '\r') {
        if (s[c->pos] == '"')
            return S_csv_fail(c, c->line, S_csv_col(c, c->pos), "quote in an unquoted field");
        c->pos++;
    }
    buf_put(&cell->text, s + start, c->pos - start);
    return 0;
}

/* Reads one record into c->cells; the caller has skipped blank lines. */
static int S_csv_record(S_csv *c)
{
    c->ncells = 0;
    for (;;) {
        if (c->ncells == c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 16;
            c->cells = xrealloc(c->cells, cap * sizeof *c->cells);
            for (size_t k = c->cap; k < cap; k++)
                buf_init(&c->cells[k].text);
            c->cap = cap;
        }
        S_cell *cell = &c->cells[c->ncells++];
        buf_clear(&cell->text);
        cell->line = c->line;
        cell->col = S_csv_col(c, c->pos);
        if (S_csv_field(c, cell) < 0)
            return -1;
        if (c->pos >= c->len)
            return 0;
        char ch = c->s[c->pos];
        if (ch == ',') {
            c->pos++;
            continue;
        }
        if (ch == '\r') {
            if (c->pos + 1 >= c->len || c->s[c->pos + 1] != '\n')
                return S_csv_fail(c, c->line, S_csv_col(c, c->pos),
                                  "carriage return without a line feed");
            c->pos++;
        }
        c->pos++;
        S_csv_newline(c, c->pos);
        return 0;
    }
}

static const char *S_cell_text(const S_cell *cell) { return cell->text.ptr ? cell->text.ptr : ""; }

/* Header names: present, and each once. */
static int S_csv_header(S_csv *c, char ***names)
{
    char **h = xmalloc(c->ncells * sizeof *h);
    for (size_t k = 0; k < c->ncells; k++)
        h[k] = xstrdup(S_cell_text(&c->cells[k]));
    *names = h;
    for (size_t k = 0; k < c->ncells; k++) {
        if (!h[k][0]) {
            diag_error(c->b.dl, c->b.file, c->cells[k].line, c->cells[k].col,
                       "empty column name in CSV header (column %zu)", k + 1);
            return -1;
        }
    }
    size_t dup, first;
    if (S_find_dup(h, c->ncells, &dup, &first)) {
        char *q = S_quoted(h[dup], strlen(h[dup]));
        diag_error(c->b.dl, c->b.file, c->cells[dup].line, c->cells[dup].col,
                   "duplicate column name %s in CSV header (first in column %zu)", q, first + 1);
        free(q);
        return -1;
    }
    return 0;
}

static int S_csv_row(S_csv *c, char **names, size_t ncols, int line)
{
    if (c->ncells != ncols) {
        diag_error(c->b.dl, c->b.file, line, 1, "CSV row has %zu cells, the header has %zu",
                   c->ncells, ncols);
        return -1;
    }
    if (!S_b_open(&c->b, YV_MAP, line, 1))
        return -1;
    for (size_t k = 0; k < ncols; k++) {
        S_cell *cell = &c->cells[k];
        S_b_key(&c->b, names[k], strlen(names[k]), cell->line, cell->col);
        yv *v = S_b_scalar(&c->b, S_cell_text(cell), cell->text.len, cell->line, cell->col);
        if (!v)
            return -1;
        S_resolve(v);
    }
    return S_b_close(&c->b, false); /* the header has no duplicates */
}

yv *yv_parse_csv(const char *text, size_t len, const yv_limits *lim, const char *file,
                 diag_list *dl)
{
    lim = lim ? lim : &yv_default_limits;
    text = text ? text : ""; /* an empty buf has no storage */
    if (S_check_input(text, len, lim, file, 0, dl) < 0)
        return NULL;
    S_csv c;
    memset(&c, 0, sizeof c);
    S_b_init(&c.b, lim, file, dl);
    c.s = text;
    c.len = len;
    c.line = 1;
    if (S_has_bom(text, len))
        c.pos = c.line_start = 3; /* spreadsheets write one */

    char **names = NULL;
    size_t ncols = 0;
    int rc = S_b_open(&c.b, YV_SEQ, 1, 1) ? 0 : -1;
    while (rc == 0 && c.pos < len) {
        if (text[c.pos] == '\n' || (text[c.pos] == '\r' && c.pos + 1 < len && text[c.pos + 1] == '\n')) {
            c.pos += text[c.pos] == '\r' ? 2 : 1;
            S_csv_newline(&c, c.pos); /* a blank line */
            continue;
        }
        if (!names && text[c.pos] == '#') {
            /* a comment line before the header: the provenance that engine
             * logs and our measurements carry */
            const char *nl = memchr(text + c.pos, '\n', len - c.pos);
            c.pos = nl ? (size_t)(nl - text) + 1 : len;
            S_csv_newline(&c, c.pos);
            continue;
        }
        int line = c.line;
        rc = S_csv_record(&c);
        if (rc < 0)
            break;
        if (names) {
            rc = S_csv_row(&c, names, ncols, line);
        } else {
            ncols = c.ncells;
            rc = S_csv_header(&c, &names);
        }
    }
    if (rc == 0)
        rc = S_b_close(&c.b, false);
    if (names)
        for (size_t k = 0; k < ncols; k++)
            free(names[k]);
    free(names);
    for (size_t k = 0; k < c.cap; k++)
        buf_free(&c.cells[k].text);
    free(c.cells);
    return rc < 0 ? S_b_fail(&c.b) : S_b_done(&c.b);
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

/* A string of n bytes, NUL-terminated; NULL when bad. */
static char *S_rd_str(buf_reader *r, uint32_t n)
{
    const char *s = buf_rd_span(r, n);
    return s ? xstrndup(s, n) : NULL;
}

size_t yv_decode(const char *data, size_t len, yv **out)
{
    buf_reader r = {data, data + len, false};
    /* slots still to fill, as pointers to where the next node goes */
    size_t cap = 16, n = 0;
    yv ***stack = xmalloc(cap * sizeof *stack);
    yv *root = NULL;
    stack[n++] = &root;
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
        yv *x = xcalloc(1, sizeof *x);
        *slot = x;
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
            x->str = S_rd_str(&r, sl);
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
        x->items = xcalloc((size_t)count + 1, sizeof *x->items);
        if (x->type == YV_MAP) {
            x->keys = xcalloc((size_t)count + 1, sizeof *x->keys);
            x->key_lines = xcalloc((size_t)count + 1, sizeof *x->key_lines);
            x->key_cols = xcalloc((size_t)count + 1, sizeof *x->key_cols);
            for (size_t k = 0; k < count && !r.bad; k++) {
                uint32_t kn = 0;
                buf_rd_get(&r, &kn, sizeof kn);
                x->keys[k] = S_rd_str(&r, kn);
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
        /* a partial tree: the unfilled slots are NULL, which yv_free skips */
        yv_free(root);
        *out = NULL;
        return 0;
    }
    *out = root;
    return (size_t)(r.p - data);
}
