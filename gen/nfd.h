/* nfd: Unicode canonical decomposition (NFD), so that two spellings of one
 * name (U+00E9 and U+0065 U+0301, as macOS writes file names) compare equal.
 * Two strings are canonically equivalent exactly when their NFDs are equal.
 * The tables (nfd_data.h) are generated from Python's unicodedata. */
#ifndef KV_NFD_H
#define KV_NFD_H

#include <stddef.h>

#include "buf.h"

/* Appends the NFD of s[0..len) to out. Text that is not well-formed UTF-8 is
 * appended as it is. Bounded: a run of combining marks is sorted by
 * insertion, so callers pass names (a file path), not documents. */
void nfd_append(buf *out, const char *s, size_t len);
/* The NFD of a NUL-terminated string; the caller frees it. */
char *nfd(const char *s);

#endif
