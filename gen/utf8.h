/* utf8: validation and positions. utf8_position counts columns in bytes,
 * 1-based, as the parsers locate things; diagnostics show columns in code
 * points (utf8_column), as editors count them. */
#ifndef KV_UTF8_H
#define KV_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True when s[0..len) is well-formed UTF-8 (no overlongs, no surrogates). On
 * failure *bad (if not NULL) is the offset of the first bad byte. */
bool utf8_valid(const char *s, size_t len, size_t *bad);
/* Length of the sequence starting at p (1 for an invalid lead byte). */
size_t utf8_char_len(const unsigned char *p);
/* Code point of a valid sequence of n bytes. */
uint32_t utf8_decode(const unsigned char *p, size_t n);
/* The UTF-8 bytes of code point cp (at most U+10FFFF; surrogates are the
 * caller's to refuse or replace) in out; returns how many (1 to 4). */
size_t utf8_encode(uint32_t cp, char out[4]);
/* Line and byte column (1-based) of offset off in s. */
void utf8_position(const char *s, size_t off, int *line, int *col);

/* The 1-based column in code points of byte column byte_col (1-based) on a
 * line of len bytes (without its newline): what editors such as VS Code show
 * for it. A byte that does not start a well-formed sequence, or a sequence
 * cut by byte_col, counts as one column per byte; a column past the end of
 * the line counts one per byte beyond it. 0 (unknown) stays 0. */
int utf8_column(const char *line, size_t len, int byte_col);

#endif
