#include "record.h"

#include <pthread.h>
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
        free(r->read_runs);
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
    free(r->read_runs);
    record_init(r);
}

bool record_read_next(const page_record *r, record_read_pos *at, uint32_t *job)
{
    if (!r->read_runs) {
        if (at->i >= r->nreads)
            return false;
        *job = r->reads[at->i++];
        return true;
    }
    while (at->i < r->nruns && at->k >= r->read_runs[2 * at->i + 1]) {
        at->i++;
        at->k = 0;
    }
    if (at->i >= r->nruns)
        return false;
    *job = r->read_runs[2 * at->i] + (uint32_t)at->k++;
    return true;
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

/* A figure's string: its length, its bytes and their NUL, so that figures
 * read back can point at their strings where they are (S_decode_figs). */
static void S_fig_str_put(buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    S_u32(b, (uint32_t)n);
    buf_put(b, s ? s : "", n + 1);
}

/* The figures' encoding: what a figstore keeps. */
static void S_encode_figs(const figure *figs, size_t n, buf *out)
{
    for (size_t i = 0; i < n; i++) {
        const figure *f = &figs[i];
        S_u32(out, (uint32_t)f->line);
        S_u32(out, (uint32_t)f->col);
        S_fig_str_put(out, f->quote);
        S_fig_str_put(out, f->expr);
        S_fig_str_put(out, f->mode);
        S_u32(out, (uint32_t)f->tier);
        S_u32(out, f->ok);
        S_f64(out, f->value);
        S_fig_str_put(out, f->detail);
        S_fig_str_put(out, f->provenance);
        S_fig_str_put(out, f->anchor);
    }
}

void record_encode(const page_record *r, const figstore *st, buf *out)
{
    fs_window win = {BUF_INIT, 0};
    record_encode_via(r, st, &win, out);
    fs_window_free(&win);
}

void record_encode_via(const page_record *r, const figstore *st, fs_window *win, buf *out)
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
        const char *p;
        if (st && figstore_view(st, win, r->figs_at, r->figs_len, &p) == 0)
            buf_put(out, p, r->figs_len);
    }
    uint32_t flen = (uint32_t)(out->len - at - sizeof flen);
    memcpy(out->ptr + at, &flen, sizeof flen);
    S_str(out, r->url);
    S_str(out, r->src);
    S_str(out, r->summary);
    if (r->links_len) {
        /* stored as encoded: copied back; unreadable, a count no decoder
         * accepts (a cache refuses the record, the page is rendered again) */
        const char *p;
        if (st && figstore_view(st, win, r->links_at, r->links_len, &p) == 0)
            buf_put(out, p, r->links_len);
        else
            S_u32(out, UINT32_MAX);
    } else {
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
    buf_put(out, &r->out_digest, sizeof r->out_digest);
    buf_put(out, &r->out_at, sizeof r->out_at);
    buf_put(out, &r->pub_at, sizeof r->pub_at);
    S_u32(out, r->out_changed);
    S_u32(out, r->reads_totals);
    S_bytes(out, r->inputs ? r->inputs : "", r->inputs ? r->inputs_len : 0);
    S_u32(out, (uint32_t)r->nreads);
    if (!r->read_runs) {
        buf_put(out, r->reads, r->nreads * sizeof *r->reads);
        return;
    }
    record_read_pos pos = {0, 0};
    for (uint32_t job; record_read_next(r, &pos, &job);)
        S_u32(out, job);
}

/* ---------- decoding ---------- */

typedef struct {
    buf_reader in;
    char *block; /* where strings go: each takes its length + 1 <= its wire size */
    size_t used, cap;
} reader;

static uint32_t S_get_u32(reader *rd) { return buf_rd_u32(&rd->in); }
static uint64_t S_get_u64(reader *rd) { return buf_rd_u64(&rd->in); }

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

/* Decoded records' lists of inputs, one copy of each: every page of a
 * section reads the same dozen templates, and the parent holds every record
 * (9 MB of copies at 10,000 pages of the figures corpus). Kept for the life
 * of the process (kvsite serve: across rebuilds), up to S_INTERN_MAX lists
 * and S_INTERN_BYTES bytes (a site whose pages read files of their own makes
 * many: past either cap they are copied into the record as before). */
#define S_INTERN_MAX 65536
#define S_INTERN_BYTES ((size_t)64 << 20)

typedef struct {
    uint64_t hash;
    size_t len;
    char *bytes; /* len bytes and a NUL */
} S_interned;

static struct {
    pthread_mutex_t lock;
    S_interned *slots; /* open addressing, cap a power of two */
    size_t n, cap, bytes;
} S_intern = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0};

/* The one copy of these n bytes, or NULL past the cap. */
static char *S_intern_bytes(const char *p, size_t n)
{
    uint64_t h = stamp_bytes(STAMP_SEED, p, n);
    char *found = NULL;
    pthread_mutex_lock(&S_intern.lock);
    if (S_intern.n + 1 > S_intern.cap / 2 && S_intern.n < S_INTERN_MAX) {
        size_t cap = S_intern.cap ? 2 * S_intern.cap : 64;
        S_interned *slots = xcalloc(cap, sizeof *slots);
        for (size_t i = 0; i < S_intern.cap; i++) {
            const S_interned *e = &S_intern.slots[i];
            if (!e->bytes)
                continue;
            size_t k = e->hash & (cap - 1);
            while (slots[k].bytes)
                k = (k + 1) & (cap - 1);
            slots[k] = *e;
        }
        free(S_intern.slots);
        S_intern.slots = slots;
        S_intern.cap = cap;
    }
    for (size_t k = S_intern.cap ? h & (S_intern.cap - 1) : 0; S_intern.cap;
         k = (k + 1) & (S_intern.cap - 1)) {
        S_interned *e = &S_intern.slots[k];
        if (!e->bytes) {
            if (S_intern.n < S_INTERN_MAX && S_intern.n + 1 <= S_intern.cap / 2 &&
                S_intern.bytes + n <= S_INTERN_BYTES) {
                S_intern.bytes += n + 1;
                e->hash = h;
                e->len = n;
                e->bytes = xmalloc(n + 1);
                memcpy(e->bytes, p, n);
                e->bytes[n] = '\0';
                S_intern.n++;
                found = e->bytes;
            }
            break;
        }
        if (e->hash == h && e->len == n && memcmp(e->bytes, p, n) == 0) {
            found = e->bytes;
            break;
        }
    }
    pthread_mutex_unlock(&S_intern.lock);
    return found;
}

/* The next bytes as S_get_bytes, from the intern table when they fit. */
static char *S_get_interned(reader *rd, size_t *len)
{
    uint32_t n;
    size_t left = rd->in.bad ? 0 : (size_t)(rd->in.end - rd->in.p);
    if (left < sizeof n)
        return S_get_bytes(rd, len);
    memcpy(&n, rd->in.p, sizeof n);
    if (left - sizeof n < (size_t)n)
        return S_get_bytes(rd, len);
    char *one = S_intern_bytes(rd->in.p + sizeof n, n);
    if (!one)
        return S_get_bytes(rd, len);
    S_get_u32(rd);
    buf_rd_span(&rd->in, n);
    *len = n;
    return one;
}

/* The next string, or same (a string of the block) without a copy when it
 * is the same: a page's links mostly name one template, a report page's
 * thousands of rows all of them. */
static char *S_get_str_as(reader *rd, char *same)
{
    uint32_t n;
    size_t left = rd->in.bad ? 0 : (size_t)(rd->in.end - rd->in.p);
    if (!same || left < sizeof n)
        return S_get_str(rd);
    memcpy(&n, rd->in.p, sizeof n);
    if (left - sizeof n < (size_t)n || strlen(same) != n || memcmp(rd->in.p + sizeof n, same, n))
        return S_get_str(rd);
    S_get_u32(rd);
    buf_rd_span(&rd->in, n);
    return same;
}

static void S_rebase(char **p, const char *from, size_t len, char *to)
{
    if (*p && *p >= from && *p < from + len)
        *p = to + (*p - from);
}

/* Moves r's strings from the block they were decoded into (sized for the
 * whole record) to one of their own size: the parent keeps every record for
 * the whole build, and most of a record's bytes are not its strings (the
 * reads, the numbers, the lengths, strings stored once for many links). */
static void S_fit_block(page_record *r, reader *rd)
{
    char *old = rd->block, *to = xmalloc(rd->used + 1);
    size_t len = rd->used;
    memcpy(to, old, len);
    to[len] = '\0';
    S_rebase(&r->url, old, len, to);
    S_rebase(&r->src, old, len, to);
    S_rebase(&r->summary, old, len, to);
    S_rebase(&r->inputs, old, len, to);
    for (size_t i = 0; r->ids && i < r->nids; i++)
        S_rebase(&r->ids[i], old, len, to);
    for (size_t i = 0; r->links && i < r->nlinks; i++) {
        S_rebase(&r->links[i].target, old, len, to);
        S_rebase(&r->links[i].file, old, len, to);
    }
    for (size_t i = 0; r->figs && i < r->nfigs; i++) {
        figure *f = &r->figs[i];
        char **strs[] = {&f->quote, &f->expr, &f->mode, &f->detail, &f->provenance, &f->anchor};
        for (size_t k = 0; k < sizeof strs / sizeof *strs; k++)
            S_rebase(strs[k], old, len, to);
    }
    free(old);
    r->block = rd->block = to;
}

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

/* A string of a figure at p: its length, its bytes and their NUL. Sets *s
 * to it where it is and returns what follows, or NULL when it is not
 * well-formed within end. */
static inline const char *S_fig_str(const char *p, const char *end, char **s)
{
    uint32_t n;
    if (end - p < 4)
        return NULL;
    memcpy(&n, p, 4);
    p += 4;
    if ((size_t)(end - p) <= n || p[n] != '\0')
        return NULL;
    *s = (char *)p; /* not const only because figure's fields are not */
    return p + n + 1;
}

/* Checks the n figures encoded in the len bytes at p and counts them in
 * counts[] (as record_fig_counts); with figs, also sets figs[] to them. A
 * decoded figure's strings point into p: nothing is copied, and they live
 * as long as p's bytes. True when the bytes are exactly n well-formed
 * figures. The one description of the encoding besides S_encode_figs; the
 * parent runs it on every record, so it reads with one pointer. */
static bool S_decode_figs(const char *p, size_t len, size_t n, figure *figs, uint32_t counts[FIG_TIERS + 1])
{
    const char *end = p + len;
    figure scratch;
    for (size_t i = 0; i < n; i++) {
        figure *f = figs ? &figs[i] : &scratch;
        uint32_t u[2];
        if (end - p < 8)
            return false;
        memcpy(u, p, 8);
        f->line = (int)u[0];
        f->col = (int)u[1];
        if (!(p = S_fig_str(p + 8, end, &f->quote)) || !(p = S_fig_str(p, end, &f->expr)) ||
            !(p = S_fig_str(p, end, &f->mode)) || end - p < 16)
            return false;
        memcpy(u, p, 8); /* tier, ok */
        memcpy(&f->value, p + 8, 8);
        if (u[0] >= FIG_TIERS || u[1] > 1)
            return false;
        f->tier = (fig_tier)u[0];
        f->ok = u[1] == 1;
        if (!(p = S_fig_str(p + 16, end, &f->detail)) ||
            !(p = S_fig_str(p, end, &f->provenance)) || !(p = S_fig_str(p, end, &f->anchor)))
            return false;
        counts[f->tier]++;
        counts[FIG_TIERS] += !f->ok;
    }
    return p == end;
}

/* The ids and the links of a record into r (ids, nids, links, nlinks):
 * the one description of their encoding besides record_encode_via's. With
 * keep false only their counts are set: the bytes are checked, nothing is
 * allocated (a record whose links stay in the figure store). */
static void S_get_links(reader *rd, page_record *r, bool keep)
{
    r->nids = S_get_count(rd, 4);
    if (keep)
        r->ids = xcalloc(r->nids + 1, sizeof *r->ids);
    for (size_t i = 0; i < r->nids; i++) {
        char *id = S_get_str(rd);
        if (keep)
            r->ids[i] = id;
    }
    r->nlinks = S_get_count(rd, 16);
    if (keep)
        r->links = xcalloc(r->nlinks + 1, sizeof *r->links);
    char *last_file = NULL;
    for (size_t i = 0; i < r->nlinks; i++) {
        md_link link;
        link.target = S_get_str(rd);
        link.line = (int)S_get_u32(rd);
        link.col = (int)S_get_u32(rd);
        char *file = S_get_str_as(rd, last_file);
        link.file = file[0] ? file : NULL;
        last_file = link.file;
        if (keep)
            r->links[i] = link;
    }
}

void record_links_buf_free(record_links_buf *lb)
{
    free(lb->ids);
    free(lb->links);
    free(lb->block);
    buf_free(&lb->raw);
    fs_window_free(&lb->win);
    memset(lb, 0, sizeof *lb);
}

int record_links(const page_record *r, const figstore *st, record_links_buf *lb,
                 char *const **ids, const md_link **links)
{
    if (!r->links_len) {
        *ids = r->ids;
        *links = r->links;
        return 0;
    }
    size_t n = r->links_len;
    const char *p = NULL;
    if (!st)
        return -1;
    if (lb->in_order ? figstore_view(st, &lb->win, r->links_at, n, &p) != 0
                     : figstore_read(st, r->links_at, n, &lb->raw) != 0)
        return -1;
    if (!lb->in_order)
        p = lb->raw.ptr;
    free(lb->ids);
    free(lb->links);
    free(lb->block);
    /* each string takes its length + 1 <= its 4 + length bytes there */
    reader rd = {{p, p + n, false}, xmalloc(n + 1), 0, n};
    rd.block[n] = '\0';
    page_record got;
    S_get_links(&rd, &got, true);
    lb->ids = got.ids;
    lb->links = got.links;
    lb->block = rd.block;
    if (rd.in.bad || rd.in.p != rd.in.end || got.nids != r->nids || got.nlinks != r->nlinks)
        return -1;
    *ids = lb->ids;
    *links = lb->links;
    return 0;
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
        if (!S_decode_figs(figs, flen, nfigs, NULL, r->fig_counts)) {
            record_free(r);
            return -1;
        }
        r->figs_at = figstore_append(st, figs, flen);
        r->figs_len = flen;
    } else {
        /* the figures' span, copied at once to the block's start, holds
         * their strings (flen < room: the span is part of the record) */
        memcpy(rd.block, figs, flen);
        r->figs = xcalloc(r->nfigs + 1, sizeof *r->figs);
        if (!S_decode_figs(rd.block, flen, nfigs, r->figs, r->fig_counts)) {
            record_free(r);
            return -1;
        }
        rd.used = flen;
    }
    r->url = S_get_str(&rd);
    r->src = S_get_str(&rd);
    r->summary = S_get_str(&rd);
    const char *links_from = rd.in.p;
    size_t used = rd.used;
    S_get_links(&rd, r, !st);
    if (st && !rd.in.bad) {
        /* checked; kept in the store, their strings' room in the block
         * given back to what follows */
        r->links_at = figstore_append(st, links_from, (size_t)(rd.in.p - links_from));
        r->links_len = (uint32_t)(rd.in.p - links_from);
        rd.used = used;
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
    buf_rd_get(&rd.in, &r->out_digest, sizeof r->out_digest);
    buf_rd_get(&rd.in, &r->out_at, sizeof r->out_at);
    buf_rd_get(&rd.in, &r->pub_at, sizeof r->pub_at);
    r->out_changed = S_get_u32(&rd);
    r->reads_totals = S_get_u32(&rd) != 0;
    r->inputs = st ? S_get_interned(&rd, &r->inputs_len) : S_get_bytes(&rd, &r->inputs_len);
    r->nreads = S_get_count(&rd, sizeof *r->reads);
    size_t cap = 0;
    for (size_t i = 0; i < r->nreads; i++) {
        uint32_t job = S_get_u32(&rd);
        if (r->nruns && (uint64_t)r->read_runs[2 * r->nruns - 2] + r->read_runs[2 * r->nruns - 1] == job) {
            r->read_runs[2 * r->nruns - 1]++;
            continue;
        }
        if (r->nruns == cap)
            r->read_runs = xrealloc(r->read_runs, (cap = cap ? 2 * cap : 4) * 2 * sizeof *r->read_runs);
        r->read_runs[2 * r->nruns] = job;
        r->read_runs[2 * r->nruns + 1] = 1;
        r->nruns++;
    }
    if (rd.in.bad || rd.in.p != rd.in.end) {
        record_free(r);
        return -1;
    }
    S_fit_block(r, &rd);
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
    fs_window_free(&fb->win);
    memset(fb, 0, sizeof *fb);
}

const figure *record_figures(const page_record *r, const figstore *st, record_figs_buf *fb)
{
    if (r->figs || r->nfigs == 0)
        return r->figs;
    const char *bytes;
    if (!st || figstore_view(st, &fb->win, r->figs_at, r->figs_len, &bytes) != 0)
        return NULL;
    if (fb->cap < r->nfigs) {
        free(fb->figs);
        fb->figs = xcalloc(r->nfigs, sizeof *fb->figs);
        fb->cap = r->nfigs;
    }
    uint32_t counts[FIG_TIERS + 1] = {0};
    bool ok = S_decode_figs(bytes, r->figs_len, r->nfigs, fb->figs, counts);
    return ok ? fb->figs : NULL;
}

void record_fig_counts(const page_record *r, uint32_t counts[FIG_TIERS + 1])
{
    if (r->block) {
        memcpy(counts, r->fig_counts, sizeof r->fig_counts);
        return;
    }
    memset(counts, 0, (FIG_TIERS + 1) * sizeof *counts);
    for (size_t i = 0; i < r->nfigs; i++) {
        counts[r->figs[i].tier]++;
        counts[FIG_TIERS] += !r->figs[i].ok;
    }
}
