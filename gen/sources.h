/* sources: the bibliography in checks/sources.yaml. Cited figures ({cite KEY})
 * must name one of its keys; the sources page lists every entry, sorted by
 * key, `per` to a page (/sources/, /sources/page/2/, ...: paginate.h).
 *
 * Format: a map from key to an entry map (title, authors, year, url, note, ...).
 * sources_load() keeps the parsed tree; entries point into it. The order and
 * the positions are made once, at load: the workers read them. */
#ifndef KV_SOURCES_H
#define KV_SOURCES_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "strmap.h"
#include "yv.h"

typedef struct {
    yv *doc;       /* owned; NULL when there is no sources file */
    strmap by_key; /* key -> const yv* entry */
    size_t *order; /* owned: doc's entries by key (indices into doc->items) */
    size_t n;      /* entries in order */
    strmap pos;    /* key -> its place in order, plus one */
    size_t per;    /* entries a page of the sources page lists (sources_set_per) */
} sources;

/* Loads <root>/checks/sources.yaml if it exists. Returns 0, or -1 with errors. */
int sources_load(sources *s, const char *root, size_t max_bytes, diag_list *dl);
void sources_free(sources *s);
const yv *sources_get(const sources *s, const char *key);
bool sources_present(const sources *s);

/* Entries a page of the sources page lists by default (paginate_sources): an
 * entry is a few lines, so 100 make a page of a few dozen kilobytes. */
#define SOURCES_PER_PAGE_DEFAULT 100
/* Sets how many entries a page of the sources page lists (0: the default). */
void sources_set_per(sources *s, size_t per);
size_t sources_per(const sources *s);
/* Entries, and the i-th of them by key (0-based; its key in *key). */
size_t sources_count(const sources *s);
const yv *sources_at(const sources *s, size_t i, const char **key);
/* Whether key is an entry; its place in the order into *i. */
bool sources_find(const sources *s, const char *key, size_t *i);
/* The site path of key's entry on the sources pages, "/sources/#key" or
 * "/sources/page/N/#key" (without the base path): what a cited figure and
 * the report link to. Malloc'ed. */
char *sources_path(const sources *s, const char *key);

#define SOURCES_FILE "checks/sources.yaml"

#endif
