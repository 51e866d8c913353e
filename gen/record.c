#include "record.h"

#include <stdlib.h>
#include <string.h>

#include "stamp.h"

void record_init(page_record *r)
{
    memset(r, 0, sizeof *r);
    diag_list_init(&r->diags);
}

void record_free(page_record *r)
{
    if (r->block) {
        /* decoded: the strings are in the block, the arrays are their own */
        free(r->block);
        free(r->ids);
        free(r->links);
        free(r->figs);
        diag_list_free(&r->diags);
        free(r->reads);
        record_init(r);
        return;
    }
    free(r->url);
    free(r->src);
    free(r->summary);
    for (size_t i = 0; i < r->nids; i++)
        free(r->ids[i]);
    free(r->ids);
    for (size_t i = 0; i < r->nlinks; i++) {
        free(r->links[i].target);
        free(r->links[i].file);
    }
    free(r->links);
    fig_ctx tmp;
    fig_ctx_init(&tmp);
    tmp.figs = r->figs;
    tmp.nfigs = r->nfigs;
    fig_ctx_free(&tmp);
    diag_list_free(&r->diags);
    free(r->inputs);
    free(r->reads);
    record_init(r);
}

/* ---------- encoding ---------- */

static void S_u32(buf *b, uint32_t v) { buf_put(b, &v, sizeof v); }
static void S_u64(buf *b, uint64_t v) { buf_put(b, &v, sizeof v); }
static void S_f64(buf *b, double v) { buf_put(b, &v, sizeof v); }
static void S_bytes(buf *b, const char *s, size_t n)
{
    S_u32(b, (uint32_t)n);
    buf_put(b, s, n);
}
static void S_str(buf *b, const char *s) { S_bytes(b, s ? s : "", s ? strlen(s) : 0); }

void record_encode(const page_record *r, buf *out)
{
    S_u32(out, r->job);
    S_u32(out, r->done);
    S_str(out, r->url);
    S_str(out, r->src);
    S_str(out, r->summary);
    S_u32(out, (uint32_t)r->nids);
    for (size_t i = 0; i < r->nids; i++)
        S_str(out, r->ids[i]);
    S_u32(out, (uint32_t)r->nlinks);
    for (size_t i = 0; i < r->nlinks; i++) {
        S_str(out, r->links[i].target);
        S_u32(out, (uint32_t)r->links[i].line);
        S_u32(out, (uint32_t)r->links[i].col);
        S_str(out, r->links[i].file);
    }
    S_u32(out, (uint32_t)r->nfigs);
    for (size_t i = 0; i < r->nfigs; i++) {
        const figure *f = &r->figs[i];
        S_u32(out, (uint32_t)f->line);
        S_u32(out, (uint32_t)f->col);
        S_str(out, f->quote);
        S_str(out, f->expr);
        S_str(out, f->mode);
        S_u32(out, (uint32_t)f->tier);
        S_u32(out, f->ok);
        S_f64(out, f->value);
        S_str(out, f->detail);
        S_str(out, f->provenance);
        S_str(out, f->anchor);
    }
    S_u32(out, (uint32_t)r->diags.n);
    for (size_t i = 0; i < r->diags.n; i++) {
        const diag *d = &r->diags.v[i];
        S_str(out, d->file);
        S_u32(out, (uint32_t)d->line);
        S_u32(out, (uint32_t)d->col);
        S_u32(out, (uint32_t)d->level);
        S_str(out, d->msg);
    }
    S_u64(out, r->out_bytes);
    S_u64(out, r->out_stamp);
    S_bytes(out, r->inputs ? r->inputs : "", r->inputs ? r->inputs_len : 0);
    S_u32(out, (uint32_t)r->nreads);
    buf_put(out, r->reads, r->nreads * sizeof *r->reads);
}

/* ---------- decoding ---------- */

typedef struct {
    buf_reader in;
    char *block; /* where strings go: each takes its length + 1 <= its wire size */
    size_t used, cap;
} reader;

static void S_get(reader *rd, void *out, size_t n) { buf_rd_get(&rd->in, out, n); }
static uint32_t S_get_u32(reader *rd) { return buf_rd_u32(&rd->in); }
static uint64_t S_get_u64(reader *rd) { return buf_rd_u64(&rd->in); }

static double S_get_f64(reader *rd)
{
    double v;
    S_get(rd, &v, sizeof v);
    return v;
}

static char *S_get_bytes(reader *rd, size_t *len)
{
    uint32_t n = S_get_u32(rd);
    const char *from = rd->cap - rd->used < (size_t)n + 1 ? NULL : buf_rd_span(&rd->in, n);
    if (!from) {
        rd->in.bad = true;
        if (len)
            *len = 0;
        return rd->block + rd->cap; /* the spare NUL past the strings */
    }
    char *s = rd->block + rd->used;
    memcpy(s, from, n);
    s[n] = '\0';
    rd->used += (size_t)n + 1;
    if (len)
        *len = n;
    return s;
}

static char *S_get_str(reader *rd) { return S_get_bytes(rd, NULL); }

/* Counts are bounded by what is left, so a corrupt count cannot allocate much. */
static size_t S_get_count(reader *rd, size_t min_item)
{
    uint32_t n = S_get_u32(rd);
    if ((size_t)n > (size_t)(rd->in.end - rd->in.p) / min_item) {
        rd->in.bad = true;
        return 0;
    }
    return n;
}

int record_decode(const char *data, size_t len, page_record *r)
{
    /* one allocation for every string: decoded records stay in the parent
     * for the whole build, and 200,000 figures' worth of small strings cost
     * more in malloc's headers than in their bytes */
    reader rd = {{data, data + len, false}, xmalloc(len + 1), 0, len};
    rd.block[len] = '\0';
    record_init(r);
    r->block = rd.block;
    r->job = S_get_u32(&rd);
    r->done = S_get_u32(&rd);
    r->url = S_get_str(&rd);
    r->src = S_get_str(&rd);
    r->summary = S_get_str(&rd);
    r->nids = S_get_count(&rd, 4);
    r->ids = xcalloc(r->nids + 1, sizeof *r->ids);
    for (size_t i = 0; i < r->nids; i++)
        r->ids[i] = S_get_str(&rd);
    r->nlinks = S_get_count(&rd, 16);
    r->links = xcalloc(r->nlinks + 1, sizeof *r->links);
    for (size_t i = 0; i < r->nlinks; i++) {
        r->links[i].target = S_get_str(&rd);
        r->links[i].line = (int)S_get_u32(&rd);
        r->links[i].col = (int)S_get_u32(&rd);
        char *file = S_get_str(&rd);
        r->links[i].file = file[0] ? file : NULL;
    }
    r->nfigs = S_get_count(&rd, 40);
    r->figs = xcalloc(r->nfigs + 1, sizeof *r->figs);
    for (size_t i = 0; i < r->nfigs; i++) {
        figure *f = &r->figs[i];
        f->line = (int)S_get_u32(&rd);
        f->col = (int)S_get_u32(&rd);
        f->quote = S_get_str(&rd);
        f->expr = S_get_str(&rd);
        f->mode = S_get_str(&rd);
        uint32_t tier = S_get_u32(&rd);
        if (tier > FIG_CITED)
            rd.in.bad = true;
        f->tier = (fig_tier)(tier > FIG_CITED ? 0 : tier);
        uint32_t ok = S_get_u32(&rd);
        if (ok > 1)
            rd.in.bad = true;
        f->ok = ok == 1;
        f->value = S_get_f64(&rd);
        f->detail = S_get_str(&rd);
        f->provenance = S_get_str(&rd);
        f->anchor = S_get_str(&rd);
    }
    size_t nd = S_get_count(&rd, 20);
    for (size_t i = 0; i < nd && !rd.in.bad; i++) {
        char *file = S_get_str(&rd);
        int line = (int)S_get_u32(&rd);
        int col = (int)S_get_u32(&rd);
        uint32_t level = S_get_u32(&rd);
        if (level > DIAG_NOTE)
            rd.in.bad = true;
        diag_level lv = (diag_level)(level > DIAG_NOTE ? 0 : level);
        char *msg = S_get_str(&rd);
        diag_add(&r->diags, lv, file[0] ? file : NULL, line, col, "%s", msg);
    }
    r->out_bytes = S_get_u64(&rd);
    r->out_stamp = S_get_u64(&rd);
    r->inputs = S_get_bytes(&rd, &r->inputs_len);
    r->nreads = S_get_count(&rd, sizeof *r->reads);
    r->reads = xmalloc((r->nreads + 1) * sizeof *r->reads);
    S_get(&rd, r->reads, r->nreads * sizeof *r->reads);
    if (rd.in.bad || rd.in.p != rd.in.end) {
        record_free(r);
        return -1;
    }
    return 0;
}

/* ---------- digest ---------- */

static uint64_t S_mix(uint64_t h, const void *p, size_t n) { return stamp_bytes(h, p, n); }

static uint64_t S_mix_str(uint64_t h, const char *s)
{
    return S_mix(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

uint64_t record_digest(const page_record *r)
{
    uint64_t h = STAMP_SEED;
    h = S_mix_str(h, r->url);
    h = S_mix_str(h, r->src);
    h = S_mix_str(h, r->summary);
    uint64_t n = r->nfigs;
    h = S_mix(h, &n, sizeof n);
    for (size_t i = 0; i < r->nfigs; i++) {
        const figure *f = &r->figs[i];
        int32_t v[4] = {f->line, f->col, (int32_t)f->tier, f->ok};
        h = S_mix(h, v, sizeof v);
        h = S_mix(h, &f->value, sizeof f->value);
        h = S_mix_str(h, f->quote);
        h = S_mix_str(h, f->expr);
        h = S_mix_str(h, f->mode);
        h = S_mix_str(h, f->detail);
        h = S_mix_str(h, f->provenance);
        h = S_mix_str(h, f->anchor);
    }
    return h;
}
