#include "fingerprint.h"

#include <stdlib.h>
#include <string.h>

#include "stamp.h"

void fingerprints_init(fingerprints *f)
{
    memset(f, 0, sizeof *f);
    strmap_init(&f->by_path);
}

void fingerprints_free(fingerprints *f)
{
    for (size_t i = 0; i < f->n; i++) {
        fingerprint *p = f->v[i];
        free(p->site_path);
        free(p->hashed);
        free(p->input);
        free(p->shadow);
        buf_free(&p->bytes);
        free(p);
    }
    free(f->v);
    strmap_free(&f->by_path);
    memset(f, 0, sizeof *f);
}

/* The extension of the last path segment ("" for none). */
static const char *S_ext(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash : path, '.');
    /* a dotfile's leading dot is no extension */
    return dot && dot != (slash ? slash + 1 : path) ? dot : "";
}

bool fingerprint_wanted(const char *path)
{
    const char *e = S_ext(path);
    return !strcmp(e, ".css") || !strcmp(e, ".js");
}

char *fingerprint_name(const char *path, const void *bytes, size_t len)
{
    /* stamp_key folds the hash's well-mixed high half into its low bits */
    unsigned long long h = stamp_key(bytes, len) & 0xffffffffffffull;
    const char *e = S_ext(path);
    size_t stem = strlen(path) - strlen(e);
    return xasprintf("%.*s.%012llx%s", (int)stem, path, h, e);
}

const fingerprint *fingerprints_add(fingerprints *f, const char *site_path, const char *input,
                                    const char *shadow, buf *bytes)
{
    fingerprint *old = strmap_get(&f->by_path, site_path);
    if (old)
        return old;
    fingerprint *p = xcalloc(1, sizeof *p);
    p->site_path = xstrdup(site_path);
    p->hashed = fingerprint_name(site_path, bytes->ptr ? bytes->ptr : "", bytes->len);
    p->input = xstrdup(input);
    p->shadow = shadow ? xstrdup(shadow) : NULL;
    p->bytes = *bytes;
    buf_init(bytes);
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 8;
        f->v = xrealloc(f->v, f->cap * sizeof *f->v);
    }
    f->v[f->n++] = p;
    strmap_put(&f->by_path, site_path, p);
    return p;
}

const fingerprint *fingerprints_get(const fingerprints *f, const char *site_path)
{
    return strmap_get(&f->by_path, site_path);
}
