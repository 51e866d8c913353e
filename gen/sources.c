#include "sources.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fsutil.h"

int sources_load(sources *s, const char *root, size_t max_bytes, diag_list *dl)
{
    memset(s, 0, sizeof *s);
    strmap_init(&s->by_key);
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
    return rc2;
}

void sources_free(sources *s)
{
    yv_free(s->doc);
    strmap_free(&s->by_key);
    memset(s, 0, sizeof *s);
}

const yv *sources_get(const sources *s, const char *key) { return strmap_get(&s->by_key, key); }

bool sources_present(const sources *s) { return s->doc != NULL; }
