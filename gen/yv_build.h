/* yv_build: what the three parsers (yvyaml.c, yvjson.c, yvcsv.c) share, all
 * implemented in yv.c: the checks every input gets, positions, scalar typing
 * by the YAML 1.2 core schema (yv.h), duplicate keys, and the tree builder.
 * Included by those four files only: everyone else goes through yv.h.
 *
 * Ownership: the builder owns the tree it builds until yvb_done() hands the
 * root to the caller; yvb_fail() frees everything built so far. Nodes that
 * yvb_scalar and yvb_open return belong to the tree: a parser may set their
 * fields (type, value) but never frees them. */
#ifndef KV_YV_BUILD_H
#define KV_YV_BUILD_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "yv.h"

/* x clamped to 0..INT_MAX, for lines and columns. */
int yvb_clamp(long long x);
/* A key or value as it appears in a message: quoted, one line, bounded.
 * Caller frees. */
char *yvb_quoted(const char *s, size_t len);
/* True when text starts with a UTF-8 byte order mark. */
bool yvb_has_bom(const char *text, size_t len);
/* 1-based line (plus line_offset) and byte column of byte off of text. */
void yvb_pos_of(const char *text, size_t off, int line_offset, int *line, int *col);
/* Where every parser starts: *lim NULL becomes the defaults and *text NULL
 * "" (an empty buf has no storage); then the checks every format shares
 * (size, NUL bytes, UTF-8). 0, or -1 with one located error in dl. */
int yvb_input(const char **text, size_t len, const yv_limits **lim, const char *file,
              int line_offset, diag_list *dl);
/* Number of ASCII digits in s[k..n). */
size_t yvb_digits(const char *s, size_t n, size_t k);
/* Value of the digit c in base (up to 16), or -1. */
int yvb_digit_value(char c, int base);
/* True when s is one of the NULL-terminated words. */
bool yvb_is_one_of(const char *s, const char *const *words);
/* Types v->str by the YAML 1.2 core schema (see yv.h). */
void yvb_resolve(yv *v);
/* The earliest of keys[0..n) that repeats an earlier one: true, with its
 * index in *dup and the first one's in *first. */
bool yvb_find_dup(char *const *keys, size_t n, size_t *dup, size_t *first);

/* ---------- the tree builder ---------- */

/* The three parsers build through this: it attaches each new node where it
 * belongs, so on error freeing the root frees everything, and it enforces
 * the depth and node limits in one place. */
typedef struct {
    yv *v;
    size_t cap;    /* room in v's arrays */
    char *key;     /* YV_MAP: the key waiting for its value (owned), or NULL */
    int key_line, key_col;
} yvb_frame;

typedef struct {
    const yv_limits *lim;
    const char *file;
    diag_list *dl;
    yvb_frame *st;
    size_t depth, st_cap;
    yv *root;
    size_t nodes;
} yvb_builder;

void yvb_init(yvb_builder *b, const yv_limits *lim, const char *file, diag_list *dl);
/* Frees what was built; returns NULL (for `return yvb_fail(b);`). */
yv *yvb_fail(yvb_builder *b);
/* The root (NULL when nothing was built), now the caller's. */
yv *yvb_done(yvb_builder *b);
/* The innermost open container, or NULL. */
yvb_frame *yvb_top(yvb_builder *b);
/* True when the innermost container is a map waiting for a key. */
bool yvb_want_key(yvb_builder *b);
/* Sets the key of the next value of the innermost (map) container. */
void yvb_key(yvb_builder *b, const char *s, size_t len, int line, int col);
/* A new YV_STRING node with a copy of s, attached; NULL (error reported)
 * past max_nodes. */
yv *yvb_scalar(yvb_builder *b, const char *s, size_t len, int line, int col);
/* Opens a YV_SEQ or YV_MAP, attached; NULL (error reported) past max_depth
 * or max_nodes. */
yv *yvb_open(yvb_builder *b, yv_type t, int line, int col);
/* Closes the innermost container; maps are checked for duplicate keys when
 * check_dups. 0, or -1 with the error reported. */
int yvb_close(yvb_builder *b, bool check_dups);

#endif
