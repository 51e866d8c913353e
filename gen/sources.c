#include "sources.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fsutil.h"
#include "paginate.h"

static int S_cmp_key(const void *a, const void *b, void *keys)
{
    char *const *k = keys;
    return strcmp(k[*(const size_t *)a], k[*(const size_t *)b]);
}

/* The page's order: the valid entries by key (keys are unique: a map's). */
static void S_order(sources *s)
{
    const yv *doc = s->doc;
    s->order = xmalloc((doc->n + 1) * sizeof *s->order);
    for (size_t i = 0; i < doc->n; i++)
        if (strmap_get(&s->by_key, doc->keys[i]))
            s->order[s->n++] = i;
    qsort_r(s->order, s->n, sizeof *s->order, S_cmp_key, (void *)doc->keys);
    for (size_t i = 0; i < s->n; i++)
        strmap_put(&s->pos, doc->keys[s->order[i]], (void *)(uintptr_t)(i + 1));
}

int sources_load(sources *s, const char *root, size_t max_bytes, diag_list *dl)
{
    memset(s, 0, sizeof *s);
    strmap_init(&s->by_key);
    strmap_init(&s->pos);
    buf text = BUF_INIT;
    int rc = fs_read_in(root, SOURCES_FILE, max_bytes, &text);
    if (rc == FS_ENOENT) {
        buf_free(&text);
        return 0;
    }
    if (rc != FS_OK) {
        diag_error(dl, SOURCES_FILE, 0, 0, "cannot read: %s", fs_strerror(rc, max_bytes));
        buf_free(&text);
        return -1;
    }
    yv_limits lim = yv_default_limits;
    lim.max_bytes = max_bytes;
    s->doc = yv_parse_yaml(buf_cstr(&text), text.len, &lim, SOURCES_FILE, 0, dl);
    buf_free(&text);
    if (!s->doc)
        return -1;
    if (s->doc->type == YV_NULL)
        return 0;
    if (s->doc->type != YV_MAP) {
        diag_error(dl, SOURCES_FILE, s->doc->line, s->doc->col,
                   "sources must be a map from a key to its entry (title, authors, year, url)");
        return -1;
    }
    int rc2 = 0;
    for (size_t i = 0; i < s->doc->n; i++) {
        const yv *e = s->doc->items[i];
        if (e->type != YV_MAP || !yv_string(yv_get(e, "title"))) {
            diag_error(dl, SOURCES_FILE, s->doc->key_lines[i], s->doc->key_cols[i],
                       "source \"%s\" must be a map with at least a title", s->doc->keys[i]);
            rc2 = -1;
            continue;
        }
        strmap_put(&s->by_key, s->doc->keys[i], (void *)e);
    }
    S_order(s);
    return rc2;
}

void sources_free(sources *s)
{
    yv_free(s->doc);
    strmap_free(&s->by_key);
    strmap_free(&s->pos);
    free(s->order);
    memset(s, 0, sizeof *s);
}

const yv *sources_get(const sources *s, const char *key) { return strmap_get(&s->by_key, key); }

bool sources_present(const sources *s) { return s->doc != NULL; }

void sources_set_per(sources *s, size_t per) { s->per = per; }

size_t sources_per(const sources *s) { return s->per ? s->per : SOURCES_PER_PAGE_DEFAULT; }

size_t sources_count(const sources *s) { return s->n; }

const yv *sources_at(const sources *s, size_t i, const char **key)
{
    if (i >= s->n)
        return NULL;
    *key = s->doc->keys[s->order[i]];
    return s->doc->items[s->order[i]];
}

bool sources_find(const sources *s, const char *key, size_t *i)
{
    size_t at = (size_t)(uintptr_t)strmap_get(&s->pos, key);
    if (at)
        *i = at - 1;
    return at != 0;
}

char *sources_path(const sources *s, const char *key)
{
    size_t at;
    char *listing =
        paginate_path("/sources/", sources_find(s, key, &at) ? paginate_number_of(at, sources_per(s)) : 1);
    char *path = xasprintf("%s#%s", listing, key);
    free(listing);
    return path;
}
