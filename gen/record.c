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

/* The figures' encoding: what a figstore keeps. */
static void S_encode_figs(const figure *figs, size_t n, buf *out)
{
    for (size_t i = 0; i < n; i++) {
        const figure *f = &figs[i];
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
}

void record_encode(const page_record *r, const figstore *st, buf *out)
{
    S_u32(out, r->job);
    S_u32(out, r->done);
    /* the figures first, as one span: a decoder that stores them elsewhere
     * knows at once how much of the record is left for it to keep */
    S_u32(out, (uint32_t)r->nfigs);
    size_t at = out->len;
    S_u32(out, 0);
    if (r->figs || r->nfigs == 0) {
        S_encode_figs(r->figs, r->nfigs, out);
    } else {
        buf b = BUF_INIT;
        if (st && figstore_read(st, r->figs_at, r->figs_len, &b) == 0)
            buf_put(out, b.ptr, b.len);
        buf_free(&b);
    }
    uint32_t flen = (uint32_t)(out->len - at - sizeof flen);
    memcpy(out->ptr + at, &flen, sizeof flen);
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

/* A string of a figure: into the reader's block, or only stepped over when
 * there is nowhere to keep it (NULL). */
static char *S_fig_str(reader *rd, bool keep)
{
    if (keep)
        return S_get_str(rd);
    buf_rd_span(&rd->in, S_get_u32(rd));
    return NULL;
}

/* Reads n figures into figs, or, with figs NULL, only checks them (nothing
 * is copied); counts[] as record_fig_counts. The one description of the
 * figures' encoding besides S_encode_figs. */
static void S_decode_figs(reader *rd, size_t n, figure *figs, uint32_t counts[4])
{
    figure scratch;
    bool keep = figs != NULL;
    for (size_t i = 0; i < n && !rd->in.bad; i++) {
        figure *f = keep ? &figs[i] : &scratch;
        f->line = (int)S_get_u32(rd);
        f->col = (int)S_get_u32(rd);
        f->quote = S_fig_str(rd, keep);
        f->expr = S_fig_str(rd, keep);
        f->mode = S_fig_str(rd, keep);
        uint32_t tier = S_get_u32(rd);
        if (tier > FIG_CITED)
            rd->in.bad = true;
        f->tier = (fig_tier)(tier > FIG_CITED ? 0 : tier);
        uint32_t ok = S_get_u32(rd);
        if (ok > 1)
            rd->in.bad = true;
        f->ok = ok == 1;
        f->value = S_get_f64(rd);
        f->detail = S_fig_str(rd, keep);
        f->provenance = S_fig_str(rd, keep);
        f->anchor = S_fig_str(rd, keep);
        counts[f->tier]++;
        counts[3] += !f->ok;
    }
}

/* Checks n encoded figures without keeping them, and counts them. */
static bool S_check_figs(const char *p, size_t len, size_t n, uint32_t counts[4])
{
    reader rd = {{p, p + len, false}, NULL, 0, 0};
    S_decode_figs(&rd, n, NULL, counts);
    return !rd.in.bad && rd.in.p == rd.in.end;
}

int record_decode(const char *data, size_t len, figstore *st, page_record *r)
{
    record_init(r);
    buf_reader head = {data, data + len, false};
    r->job = buf_rd_u32(&head);
    r->done = buf_rd_u32(&head);
    uint32_t nfigs = buf_rd_u32(&head), flen = buf_rd_u32(&head);
    const char *figs = buf_rd_span(&head, flen);
    if (head.bad || nfigs > flen / 40)
        return -1;
    r->nfigs = nfigs;
    r->figs_hash = stamp_bytes(STAMP_SEED, figs, flen);
    /* one allocation for every string: decoded records stay in the parent
     * for the whole build, and 200,000 figures' worth of small strings cost
     * more in malloc's headers than in their bytes; stored figures need
     * none of it */
    size_t room = st ? (size_t)(head.end - head.p) : len;
    reader rd = {head, xmalloc(room + 1), 0, room};
    rd.block[room] = '\0';
    r->block = rd.block;
    if (st) {
        if (!S_check_figs(figs, flen, nfigs, r->fig_counts)) {
            record_free(r);
            return -1;
        }
        r->figs_at = figstore_append(st, figs, flen);
        r->figs_len = flen;
    } else {
        reader fr = {{figs, figs + flen, false}, rd.block, 0, room};
        r->figs = xcalloc(r->nfigs + 1, sizeof *r->figs);
        S_decode_figs(&fr, nfigs, r->figs, r->fig_counts);
        if (fr.in.bad || fr.in.p != fr.in.end) {
            record_free(r);
            return -1;
        }
        rd.used = fr.used;
    }
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
    /* the figures as encoded: a decoded record knows their stamp, whether
     * they are in memory or in a store */
    uint64_t figs = r->figs_hash;
    if (!r->block) {
        buf b = BUF_INIT;
        S_encode_figs(r->figs, r->nfigs, &b);
        figs = stamp_bytes(STAMP_SEED, b.ptr ? b.ptr : "", b.len);
        buf_free(&b);
    }
    return S_mix(h, &figs, sizeof figs);
}

/* ---------- figures in a store ---------- */

void record_figs_buf_free(record_figs_buf *fb)
{
    free(fb->figs);
    buf_free(&fb->bytes);
    buf_free(&fb->block);
    memset(fb, 0, sizeof *fb);
}

const figure *record_figures(const page_record *r, const figstore *st, record_figs_buf *fb)
{
    if (r->figs || r->nfigs == 0)
        return r->figs;
    if (!st || figstore_read(st, r->figs_at, r->figs_len, &fb->bytes) != 0)
        return NULL;
    if (fb->cap < r->nfigs) {
        free(fb->figs);
        fb->figs = xcalloc(r->nfigs, sizeof *fb->figs);
        fb->cap = r->nfigs;
    }
    buf_clear(&fb->block);
    buf_grow(&fb->block, fb->bytes.len);
    reader rd = {{fb->bytes.ptr, fb->bytes.ptr + fb->bytes.len, false}, fb->block.ptr, 0,
                 fb->bytes.len};
    uint32_t counts[4] = {0, 0, 0, 0};
    S_decode_figs(&rd, r->nfigs, fb->figs, counts);
    return rd.in.bad ? NULL : fb->figs;
}

void record_fig_counts(const page_record *r, uint32_t counts[4])
{
    if (r->block) {
        memcpy(counts, r->fig_counts, sizeof r->fig_counts);
        return;
    }
    memset(counts, 0, 4 * sizeof *counts);
    for (size_t i = 0; i < r->nfigs; i++) {
        counts[r->figs[i].tier]++;
        counts[3] += !r->figs[i].ok;
    }
}
