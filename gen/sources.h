/* sources: the bibliography in checks/sources.yaml. Cited figures ({cite KEY})
 * must name one of its keys; the sources page lists every entry.
 *
 * Format: a map from key to an entry map (title, authors, year, url, note, ...).
 * sources_load() keeps the parsed tree; entries point into it. */
#ifndef KV_SOURCES_H
#define KV_SOURCES_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "strmap.h"
#include "yv.h"

typedef struct {
    yv *doc;      /* owned; NULL when there is no sources file */
    strmap by_key; /* key -> const yv* entry */
} sources;

/* Loads <root>/checks/sources.yaml if it exists. Returns 0, or -1 with errors. */
int sources_load(sources *s, const char *root, size_t max_bytes, diag_list *dl);
void sources_free(sources *s);
const yv *sources_get(const sources *s, const char *key);
bool sources_present(const sources *s);

#define SOURCES_FILE "checks/sources.yaml"

#endif
