/* yv: the data-value tree and its loaders (YAML, JSON, CSV).
 *
 * site.yaml, every page's front matter and the data files that page Lua loads
 * all become one tree of yv nodes that remember where they came from, so any
 * later complaint can point at file:line:col.
 *
 * Ownership: a parser returns a tree owned by the caller, released with
 * yv_free(). Every node, string, key and array in it belongs to the tree;
 * pointers into it (yv_get, yv_at, ->str, ->keys[i]) live as long as the tree.
 *
 * The input is untrusted (pull requests run in CI), so parsing is bounded by a
 * yv_limits (bytes, nesting depth, number of values) and refuses, with one
 * located error, anything outside the small safe subset:
 *   - invalid UTF-8 and NUL bytes anywhere in the input;
 *   - NUL characters produced by escapes ("\0", "\u0000"), so every string
 *     and key in a tree is a proper C string (len still given for speed);
 *   - YAML anchors and aliases (no alias bombs), tags other than the standard
 *     !!str !!int !!float !!bool !!null !!seq !!map (and the non-specific "!"),
 *     non-scalar map keys, more than one document;
 *   - duplicate map keys (compared as text: `1:` and `"1":` are the same key),
 *     in YAML and JSON alike.
 * On error a parser appends exactly one diagnostic to dl and returns NULL.
 * No code here recurses on input depth: parsers and yv_free use explicit
 * stacks, and nesting is capped at max_depth while parsing.
 *
 * Scalar typing, YAML 1.2 core schema, for YAML plain scalars and CSV cells
 * (quoted YAML scalars are always strings):
 *   null Null NULL ~ and empty     -> YV_NULL
 *   true True TRUE false False FALSE -> YV_BOOL
 *   [-+]?[0-9]+  0x[0-9a-fA-F]+  0o[0-7]+ -> YV_INT (out of range: YV_FLOAT)
 *   [-+]?(.[0-9]+|[0-9]+(.[0-9]*)?)([eE][-+]?[0-9]+)?, [-+]?.inf, .nan
 *                                  -> YV_FLOAT (also .Inf .INF .NaN .NAN)
 *   anything else (dates, 1_000, 0b1, f16) -> YV_STRING
 * JSON numbers are YV_INT when written without fraction or exponent and in
 * the range of long long, else YV_FLOAT (so 1.0 and 1e3 are floats, as the
 * author wrote them).
 *
 * Files: yv.c owns the tree (free, get/at, hash, bytes) and what the parsers
 * share (scalar typing, input checks, the builder: yv_build.h); the parsers
 * are yvyaml.c, yvjson.c and yvcsv.c. */
#ifndef KV_YV_H
#define KV_YV_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "diag.h"

typedef enum { YV_NULL, YV_BOOL, YV_INT, YV_FLOAT, YV_STRING, YV_SEQ, YV_MAP } yv_type;

typedef struct yv yv;
struct yv {
    yv_type type;
    int line, col;   /* 1-based position of the node in the file (offset applied);
                      * col counts bytes, as diag does */
    bool b;          /* YV_BOOL */
    bool quoted;     /* a YAML scalar written in quotes: its text starts at col + 1
                      * (beside b: a node is 96 bytes, not 104) */
    long long i;     /* YV_INT */
    double f;        /* YV_FLOAT */
    char *str;       /* every scalar: its text (the value for YV_STRING), NUL-terminated;
                      * NULL for YV_SEQ and YV_MAP */
    size_t len;      /* length of str */
    size_t n;        /* YV_SEQ: number of items; YV_MAP: number of pairs */
    yv **items;      /* YV_SEQ items; YV_MAP values, in document order */
    char **keys;     /* YV_MAP keys, parallel to items */
    int *key_lines, *key_cols; /* YV_MAP key positions */
    void *pool;      /* the root of a tree yv_decode made: the blocks all of it is
                      * in (yv_free frees them at once); NULL otherwise */
};

typedef struct {
    size_t max_bytes; /* input size */
    int max_depth;    /* open lists/maps at once; the root container is depth 1 */
    size_t max_nodes; /* values in the tree (map keys not counted) */
} yv_limits;

/* 1 MiB, depth 32, 100000 values. */
extern const yv_limits yv_default_limits;

/* All parsers: text need not be NUL-terminated; lim NULL means the defaults;
 * file (may be NULL) is only used for diagnostics. */

/* One YAML document. line_offset is added to every line (front matter that
 * starts on line 2 of its Markdown file passes 1). Empty input, input with
 * only comments, or a document that is an empty plain scalar gives a YV_MAP
 * with n = 0; any other root (list, scalar) is returned as is. */
yv *yv_parse_yaml(const char *text, size_t len, const yv_limits *lim, const char *file,
                  int line_offset, diag_list *dl);

/* One RFC 8259 JSON value (any type at the root); a leading UTF-8 BOM is skipped. */
yv *yv_parse_json(const char *text, size_t len, const yv_limits *lim, const char *file,
                  diag_list *dl);

/* RFC 4180 CSV with a header row: a YV_SEQ with one YV_MAP per row, keyed by
 * the header names, cells typed like YAML plain scalars whether quoted or not
 * (CSV quoting is a transport detail; spreadsheets quote everything). No
 * trimming: " 5" is a string. Lines end in LF or CRLF; blank lines are
 * skipped, and so are lines starting with "#" before the header (comments,
 * such as a measurement's provenance); an empty input or a header alone gives
 * an empty YV_SEQ. */
yv *yv_parse_csv(const char *text, size_t len, const yv_limits *lim, const char *file,
                 diag_list *dl);

/* Adds the tree's values (types, keys, scalar text; not positions) to the
 * running 64-bit hash h; iterative; NULL-safe. */
unsigned long long yv_hash(const yv *v, unsigned long long h);

/* A tree as bytes, for the build cache: yv_encode appends v (not NULL) to out;
 * yv_decode reads one tree from data[0..len) into *out (owned by the caller)
 * and returns the bytes it used, or 0 when they are not a well-formed tree.
 * Both iterative. */
void yv_encode(const yv *v, buf *out);
size_t yv_decode(const char *data, size_t len, yv **out);

/* Frees v and everything below it; iterative; NULL-safe. */
void yv_free(yv *v);

/* The value of key in map; NULL if absent or map is not a YV_MAP. */
const yv *yv_get(const yv *map, const char *key);
/* Item i of a YV_SEQ; NULL if out of range or seq is not a YV_SEQ. */
const yv *yv_at(const yv *seq, size_t i);
/* The string of a YV_STRING, else NULL. */
const char *yv_string(const yv *v);
/* True for YV_INT and YV_FLOAT, storing the value as a double in *out. */
bool yv_number(const yv *v, double *out);

/* "null", "boolean", "integer", "float", "string", "list", "map": for messages. */
const char *yv_type_name(yv_type t);
/* The same with its article, for messages: "an integer", "a list". */
const char *yv_type_a(yv_type t);

#endif
