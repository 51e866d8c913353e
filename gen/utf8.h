/* utf8: validation and positions. Columns are counted in bytes, 1-based, the
 * way compilers report them. */
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
/* Writes code point c (a scalar value) as UTF-8 to out; returns the bytes written. */
size_t utf8_encode(uint32_t c, char out[4]);
/* Line and byte column (1-based) of offset off in s. */
void utf8_position(const char *s, size_t off, int *line, int *col);

#endif
