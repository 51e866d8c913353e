/* Unit tests for gen/record.c: a page record survives encode/decode with every
 * field, encoding is deterministic, and decode refuses every truncation and
 * the corruptions a broken pipe or a confused worker could produce. The digest
 * changes with everything other pages can read of a record, and only that. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "diag.h"
#include "figure.h"
#include "markdown.h"
#include "record.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const char S_inputs[] = "templates/page.html\0checks/kv.lua\0checks/m/x.yaml";

static void S_fig(figure *g, int line, int col, const char *q, const char *e, const char *m,
                  fig_tier tier, bool ok, double v, const char *detail, const char *prov,
                  const char *anchor)
{
    g->line = line;
    g->col = col;
    g->quote = xstrdup(q);
    g->expr = xstrdup(e);
    g->mode = xstrdup(m);
    g->tier = tier;
    g->ok = ok;
    g->value = v;
    g->detail = xstrdup(detail);
    g->provenance = xstrdup(prov);
    g->anchor = xstrdup(anchor);
}

/* The jobs d read, in order, into out (at most max); returns how many. */
static size_t S_reads_of(const page_record *d, uint32_t *out, size_t max)
{
    size_t n = 0;
    record_read_pos at = {0, 0};
    for (uint32_t job; n < max && record_read_next(d, &at, &job);)
        out[n++] = job;
    return n;
}

/* A record with every field set, and values that are easy to get wrong:
 * UTF-8, 64-bit sizes, negative zero, a link from a template, a diagnostic
 * without a file. */
static void S_full(page_record *r)
{
    record_init(r);
    r->job = 7;
    r->done = 1;
    r->url = xstrdup("/articles/kv/");
    r->src = xstrdup("content/articles/kv.md");
    r->summary = xstrdup("Sum … 键值缓存");
    r->nids = 3;
    r->ids = xcalloc(3, sizeof *r->ids);
    r->ids[0] = xstrdup("a");
    r->ids[1] = xstrdup("b-1");
    r->ids[2] = xstrdup("键值");
    r->nlinks = 2;
    r->links = xcalloc(2, sizeof *r->links);
    r->links[0] = (md_link){xstrdup("/articles/b/#x"), 3, 14, NULL};
    r->links[1] = (md_link){xstrdup("/about/"), 9, 2, xstrdup("templates/page.html")};
    r->nfigs = 2;
    r->figs = xcalloc(2, sizeof *r->figs);
    S_fig(&r->figs[0], 5, 8, "224 MiB", "kv.bytes(qwen, 4096)", "=", FIG_MEASURED, true,
          234881024.0, "234,881,024 B = 224.0 MiB", "source: bench; machine: A100", "fig-1");
    S_fig(&r->figs[1], 6, 1, "7.03×", "quest2024", "cite", FIG_CITED, false, -0.0, "", "",
          "articles-kv-2");
    diag_error(&r->diags, "content/articles/kv.md", 3, 4, "quoted 40 GB, but …");
    diag_warning(&r->diags, NULL, 0, 0, "no file");
    diag_add(&r->diags, DIAG_NOTE, "content/articles/kv.md", 1, 0, "print: x\ty");
    r->out_bytes = ((uint64_t)1 << 40) + 5;
    r->out_changed = 1;
    r->reads_totals = 1;
    r->inputs = xmalloc(sizeof S_inputs);
    memcpy(r->inputs, S_inputs, sizeof S_inputs);
    r->inputs_len = sizeof S_inputs;
    r->nreads = 3;
    r->reads = xcalloc(3, sizeof *r->reads);
    r->reads[0] = 4;
    r->reads[1] = 0;
    r->reads[2] = UINT32_MAX;
}

static void S_same_fig(const figure *a, const figure *b)
{
    assert_int_equal(a->line, b->line);
    assert_int_equal(a->col, b->col);
    assert_string_equal(a->quote, b->quote);
    assert_string_equal(a->expr, b->expr);
    assert_string_equal(a->mode, b->mode);
    assert_int_equal(a->tier, b->tier);
    assert_int_equal(a->ok, b->ok);
    assert_memory_equal(&a->value, &b->value, sizeof a->value); /* bit for bit */
    assert_string_equal(a->detail, b->detail);
    assert_string_equal(a->provenance, b->provenance);
    assert_string_equal(a->anchor, b->anchor);
}

static void test_round_trip_every_field(void **state)
{
    (void)state;
    page_record r, d;
    S_full(&r);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &d), 0);

    assert_int_equal(d.job, 7);
    assert_int_equal(d.done, 1);
    assert_string_equal(d.url, "/articles/kv/");
    assert_string_equal(d.src, "content/articles/kv.md");
    assert_string_equal(d.summary, "Sum … 键值缓存");
    assert_int_equal(d.nids, 3);
    assert_string_equal(d.ids[0], "a");
    assert_string_equal(d.ids[1], "b-1");
    assert_string_equal(d.ids[2], "键值");
    assert_int_equal(d.nlinks, 2);
    assert_string_equal(d.links[0].target, "/articles/b/#x");
    assert_int_equal(d.links[0].line, 3);
    assert_int_equal(d.links[0].col, 14);
    assert_null(d.links[0].file);
    assert_string_equal(d.links[1].target, "/about/");
    assert_int_equal(d.links[1].line, 9);
    assert_int_equal(d.links[1].col, 2);
    assert_string_equal(d.links[1].file, "templates/page.html");
    assert_int_equal(d.nfigs, 2);
    S_same_fig(&d.figs[0], &r.figs[0]);
    S_same_fig(&d.figs[1], &r.figs[1]);
    assert_true(signbit(d.figs[1].value));
    assert_int_equal(d.diags.n, 3);
    assert_int_equal(d.diags.errors, 1);
    assert_int_equal(d.diags.warnings, 1);
    for (size_t i = 0; i < 3; i++) {
        const diag *a = &r.diags.v[i], *b = &d.diags.v[i];
        if (a->file)
            assert_string_equal(b->file, a->file);
        else
            assert_null(b->file);
        assert_int_equal(b->line, a->line);
        assert_int_equal(b->col, a->col);
        assert_int_equal(b->level, a->level);
        assert_string_equal(b->msg, a->msg);
    }
    assert_true(d.out_bytes == ((uint64_t)1 << 40) + 5);
    assert_int_equal(d.out_changed, 1);
    assert_int_equal(d.reads_totals, 1);
    assert_int_equal(d.inputs_len, sizeof S_inputs);
    assert_memory_equal(d.inputs, S_inputs, sizeof S_inputs);
    assert_int_equal(d.nreads, 3);
    uint32_t got[3];
    assert_int_equal(S_reads_of(&d, got, 3), 3);
    assert_int_equal(got[0], 4);
    assert_int_equal(got[1], 0);
    assert_true(got[2] == UINT32_MAX);

    /* encoding is deterministic: the decoded record encodes to the same bytes */
    buf again = BUF_INIT;
    record_encode(&d, NULL, &again);
    assert_int_equal(again.len, enc.len);
    assert_memory_equal(again.ptr, enc.ptr, enc.len);
    buf_free(&again);
    record_free(&d);
    assert_null(d.url);
    record_free(&d); /* twice is harmless */
    record_free(&r);
    buf_free(&enc);
}

static void test_round_trip_empty(void **state)
{
    (void)state;
    page_record r, d;
    record_init(&r);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &d), 0);
    assert_int_equal(d.job, 0);
    assert_int_equal(d.done, 0);
    assert_string_equal(d.url, ""); /* NULL strings travel as "" */
    assert_string_equal(d.src, "");
    assert_string_equal(d.summary, "");
    assert_int_equal(d.nids, 0);
    assert_int_equal(d.nlinks, 0);
    assert_int_equal(d.nfigs, 0);
    assert_int_equal(d.diags.n, 0);
    assert_true(d.out_bytes == 0);
    assert_int_equal(d.inputs_len, 0);
    assert_int_equal(d.nreads, 0);
    record_free(&d);
    /* appending to a buffer that holds something already */
    buf_clear(&enc);
    buf_puts(&enc, "HDR");
    record_encode(&r, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr + 3, enc.len - 3, NULL, &d), 0);
    record_free(&d);
    record_free(&r);
    buf_free(&enc);
}

static void test_round_trip_many(void **state)
{
    (void)state;
    page_record r, d;
    record_init(&r);
    r.nids = 1000;
    r.ids = xcalloc(r.nids, sizeof *r.ids);
    for (size_t i = 0; i < r.nids; i++)
        r.ids[i] = xasprintf("id-%zu", i);
    for (int i = 0; i < 500; i++)
        diag_error(&r.diags, "f.md", i, i, "e%d", i);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &d), 0);
    assert_int_equal(d.nids, 1000);
    assert_string_equal(d.ids[999], "id-999");
    assert_int_equal(d.diags.n, 500);
    assert_int_equal(d.diags.errors, 500);
    assert_string_equal(d.diags.v[499].msg, "e499");
    record_free(&d);
    record_free(&r);
    buf_free(&enc);
}

/* ---- refusals ------------------------------------------------------------- */

static void test_every_prefix_refused(void **state)
{
    (void)state;
    page_record r, d;
    S_full(&r);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    for (size_t n = 0; n < enc.len; n++) {
        /* a copy of exactly n bytes, so a sanitizer sees any read past it */
        char *part = xmalloc(n ? n : 1);
        memcpy(part, enc.ptr, n);
        if (record_decode(part, n, NULL, &d) != -1)
            fail_msg("a prefix of %zu of %zu bytes was accepted", n, enc.len);
        /* a refused record is left empty */
        assert_null(d.url);
        assert_int_equal(d.nfigs, 0);
        assert_int_equal(d.diags.n, 0);
        free(part);
    }
    /* one byte too many is refused as well */
    buf_putc(&enc, 0);
    assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &d), -1);
    record_free(&r);
    buf_free(&enc);
}

/* Offsets into the encoding of a record with one figure and one diagnostic. */
static void S_small(page_record *r)
{
    record_init(r);
    r->nfigs = 1;
    r->figs = xcalloc(1, sizeof *r->figs);
    S_fig(&r->figs[0], 1, 2, "1 B", "1", "=", FIG_COMPUTED, true, 1.0, "d", "", "fig-1");
    diag_error(&r->diags, "a.md", 1, 1, "m");
}

/* job, done, then the figures as one span (count, length, bytes: a figure's
 * strings are length, bytes, NUL), then the rest of the record */
enum {
    OFF_NFIGS = 8,
    OFF_FIGS_LEN = OFF_NFIGS + 4,
    OFF_QUOTE_NUL = OFF_FIGS_LEN + 4 + 4 + 4 + 4 + 3,
    OFF_TIER = OFF_QUOTE_NUL + 1 + (4 + 1 + 1) + (4 + 1 + 1),
    OFF_OK = OFF_TIER + 4,
    OFF_ANCHOR_NUL = OFF_OK + 4 + 8 + (4 + 1 + 1) + (4 + 1) + 4 + 5,
    OFF_URL_LEN = OFF_ANCHOR_NUL + 1,
    OFF_NIDS = OFF_URL_LEN + 4 * 3,
    OFF_NLINKS = OFF_NIDS + 4,
    OFF_NDIAGS = OFF_NLINKS + 4,
    OFF_LEVEL = OFF_NDIAGS + 4 + (4 + 4) + 4 + 4,
};

static void S_put_u32(buf *b, size_t off, uint32_t v) { memcpy(b->ptr + off, &v, 4); }

static int S_decode_with(const buf *enc, size_t off, uint32_t v)
{
    buf b = BUF_INIT;
    buf_put(&b, enc->ptr, enc->len);
    S_put_u32(&b, off, v);
    page_record d;
    int rc = record_decode(b.ptr, b.len, NULL, &d);
    if (rc == 0)
        record_free(&d);
    buf_free(&b);
    return rc;
}

static void test_corruption_refused(void **state)
{
    (void)state;
    page_record r;
    S_small(&r);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    /* the offsets above describe this encoding */
    uint32_t v;
    memcpy(&v, enc.ptr + OFF_NFIGS, 4);
    assert_int_equal(v, 1);
    memcpy(&v, enc.ptr + OFF_TIER, 4);
    assert_int_equal(v, FIG_COMPUTED);
    memcpy(&v, enc.ptr + OFF_NDIAGS, 4);
    assert_int_equal(v, 1);
    memcpy(&v, enc.ptr + OFF_LEVEL, 4);
    assert_int_equal(v, DIAG_ERROR);
    assert_int_equal(S_decode_with(&enc, OFF_TIER, FIG_CITED), 0);
    assert_int_equal(enc.ptr[OFF_QUOTE_NUL], '\0');
    assert_int_equal(enc.ptr[OFF_ANCHOR_NUL], '\0');
    assert_memory_equal(enc.ptr + OFF_ANCHOR_NUL - 5, "fig-1", 5);

    /* counts and lengths beyond what is there: refused without allocating them */
    assert_int_equal(S_decode_with(&enc, OFF_URL_LEN, 0xFFFFFFFFu), -1);
    assert_int_equal(S_decode_with(&enc, OFF_URL_LEN, 1), -1);
    assert_int_equal(S_decode_with(&enc, OFF_NIDS, 0xFFFFFFFFu), -1);
    assert_int_equal(S_decode_with(&enc, OFF_NIDS, 1), -1);
    assert_int_equal(S_decode_with(&enc, OFF_NLINKS, 0x40000000u), -1);
    assert_int_equal(S_decode_with(&enc, OFF_NFIGS, 0xFFFFFFFFu), -1);
    assert_int_equal(S_decode_with(&enc, OFF_NFIGS, 2), -1);
    assert_int_equal(S_decode_with(&enc, OFF_NFIGS, 0), -1);
    assert_int_equal(S_decode_with(&enc, OFF_FIGS_LEN, 0xFFFFFFFFu), -1);
    assert_int_equal(S_decode_with(&enc, OFF_FIGS_LEN, OFF_URL_LEN - OFF_FIGS_LEN - 5), -1);
    assert_int_equal(S_decode_with(&enc, OFF_FIGS_LEN, OFF_URL_LEN - OFF_FIGS_LEN - 3), -1);
    assert_int_equal(S_decode_with(&enc, OFF_NDIAGS, 0xFFFFFFFFu), -1);
    assert_int_equal(S_decode_with(&enc, OFF_NDIAGS, 0), -1);
    record_free(&r);
    buf_free(&enc);
}

/* A figure's string without its NUL is refused, kept in memory or in a
 * store: decoded figures point at their strings where they are. */
static void test_figure_string_nul_required(void **state)
{
    (void)state;
    page_record r, d;
    S_small(&r);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    figstore st;
    assert_int_equal(figstore_open(&st, "/tmp"), 0);
    const size_t at[] = {OFF_QUOTE_NUL, OFF_ANCHOR_NUL};
    for (size_t i = 0; i < 2; i++) {
        enc.ptr[at[i]] = 'x';
        assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &d), -1);
        assert_int_equal(record_decode(enc.ptr, enc.len, &st, &d), -1);
        enc.ptr[at[i]] = '\0';
    }
    assert_int_equal(record_decode(enc.ptr, enc.len, &st, &d), 0);
    /* only the good one: its figures, then its ids and links */
    assert_int_equal(st.npending, OFF_URL_LEN - OFF_FIGS_LEN - 4 + OFF_NDIAGS - OFF_NIDS);
    record_free(&d);
    figstore_close(&st);
    record_free(&r);
    buf_free(&enc);
}

static void test_enum_out_of_range_refused(void **state)
{
    (void)state;
    page_record r;
    S_small(&r);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    /* values outside their enums are not well-formed records */
    int tier3 = S_decode_with(&enc, OFF_TIER, FIG_TIERS);
    int refuted = S_decode_with(&enc, OFF_TIER, FIG_REFUTED); /* the last tier is one */
    int tier_big = S_decode_with(&enc, OFF_TIER, 0x80000001u);
    int level3 = S_decode_with(&enc, OFF_LEVEL, 3);
    record_free(&r);
    buf_free(&enc);
    assert_int_equal(tier3, -1);
    assert_int_equal(refuted, 0);
    assert_int_equal(tier_big, -1);
    assert_int_equal(level3, -1);
}

static void test_bit_flips_never_crash(void **state)
{
    (void)state;
    page_record r, d;
    S_full(&r);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    /* every byte flipped in turn: decode may accept or refuse, but never reads
     * out of bounds, leaks or allocates what is not there (the sanitizer run
     * checks the first two) */
    size_t accepted = 0;
    for (size_t i = 0; i < enc.len; i++) {
        char *copy = xmalloc(enc.len);
        memcpy(copy, enc.ptr, enc.len);
        copy[i] ^= (char)0xA5;
        if (record_decode(copy, enc.len, NULL, &d) == 0) {
            accepted++;
            record_free(&d);
        } else {
            assert_null(d.url);
        }
        free(copy);
    }
    assert_true(accepted < enc.len);
    record_free(&r);
    buf_free(&enc);
}

/* ---- the reads array ------------------------------------------------------ */

/* A report page reads every record in a few runs of consecutive jobs: a
 * decoded record keeps them as runs (it kept 4 bytes a job, 40 MB for the
 * report of 200,000 figures), reads them back in order, and encodes them
 * as they came. */
static void test_reads_kept_as_runs(void **state)
{
    (void)state;
    page_record r, d;
    record_init(&r);
    r.url = xstrdup("/checks/page/7/");
    r.nreads = 30000;
    r.reads = xcalloc(r.nreads, sizeof *r.reads);
    for (size_t i = 0; i < r.nreads; i++) /* 70..19999, 0..69, then 25000..34929 */
        r.reads[i] = (uint32_t)(i < 19930 ? 70 + i : i < 20000 ? i - 19930 : i + 5000);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &d), 0);
    assert_null(d.reads);
    assert_int_equal(d.nruns, 3);
    assert_int_equal(d.nreads, r.nreads);
    uint32_t *got = xcalloc(r.nreads + 1, sizeof *got);
    assert_int_equal(S_reads_of(&d, got, r.nreads + 1), r.nreads);
    assert_memory_equal(got, r.reads, r.nreads * sizeof *got);
    free(got);
    buf again = BUF_INIT;
    record_encode(&d, NULL, &again);
    assert_int_equal(again.len, enc.len);
    assert_memory_equal(again.ptr, enc.ptr, enc.len);
    buf_free(&again);
    buf_free(&enc);
    record_free(&d);
    record_free(&r);
}

/* A record whose reads are n jobs; the rest empty. */
static void S_with_reads(page_record *r, size_t n)
{
    record_init(r);
    r->url = xstrdup("/r/");
    r->nreads = n;
    r->reads = n ? xcalloc(n, sizeof *r->reads) : NULL;
    for (size_t i = 0; i < n; i++)
        r->reads[i] = (uint32_t)(i * 2654435761u); /* spread over 32 bits, some > 2^31 */
}

static void test_reads_round_trip(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 1000, 100000};
    for (size_t k = 0; k < N(sizes); k++) {
        page_record r, d;
        S_with_reads(&r, sizes[k]);
        buf enc = BUF_INIT;
        record_encode(&r, NULL, &enc);
        assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &d), 0);
        assert_int_equal(d.nreads, sizes[k]);
        uint32_t *got = xcalloc(sizes[k] + 1, sizeof *got);
        assert_int_equal(S_reads_of(&d, got, sizes[k] + 1), sizes[k]);
        if (sizes[k])
            assert_memory_equal(got, r.reads, sizes[k] * sizeof *r.reads);
        free(got);
        assert_string_equal(d.url, "/r/");
        /* the decoded record encodes to the same bytes */
        buf again = BUF_INIT;
        record_encode(&d, NULL, &again);
        assert_int_equal(again.len, enc.len);
        assert_memory_equal(again.ptr, enc.ptr, enc.len);
        buf_free(&again);
        record_free(&d);
        assert_null(d.reads);
        assert_int_equal(d.nreads, 0);
        record_free(&r);
        buf_free(&enc);
    }
}

static void test_reads_truncated_refused(void **state)
{
    (void)state;
    page_record r, d;
    S_with_reads(&r, 2);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    size_t off = enc.len - 4 - 2 * 4; /* the count comes last, before the items */
    uint32_t v;
    memcpy(&v, enc.ptr + off, 4);
    assert_int_equal(v, 2);

    /* cut inside the items, inside the count, and just before it */
    static const size_t cuts[] = {1, 4, 7, 8, 9, 12};
    for (size_t k = 0; k < N(cuts); k++) {
        size_t n = enc.len - cuts[k];
        char *part = xmalloc(n);
        memcpy(part, enc.ptr, n);
        if (record_decode(part, n, NULL, &d) != -1)
            fail_msg("cut by %zu bytes: accepted", cuts[k]);
        assert_null(d.reads);
        assert_int_equal(d.nreads, 0);
        free(part);
    }
    /* counts that do not match the items that follow */
    assert_int_equal(S_decode_with(&enc, off, 3), -1);
    assert_int_equal(S_decode_with(&enc, off, 0xFFFFFFFFu), -1);
    assert_int_equal(S_decode_with(&enc, off, 0x40000000u), -1);
    assert_int_equal(S_decode_with(&enc, off, 1), -1); /* 4 bytes left over */
    assert_int_equal(S_decode_with(&enc, off, 0), -1);
    assert_int_equal(S_decode_with(&enc, off, 2), 0);
    record_free(&r);
    buf_free(&enc);
}

/* ---- the digest ----------------------------------------------------------- */

static void S_set(char **field, const char *v)
{
    free(*field);
    *field = xstrdup(v);
}

enum { FIG_FIELDS = 11 };

/* Changes field k of figure g to something else. */
static void S_change_fig(figure *g, int k)
{
    switch (k) {
    case 0: g->line++; break;
    case 1: g->col++; break;
    case 2: S_set(&g->quote, "225 MiB"); break;
    case 3: S_set(&g->expr, "kv.bytes(qwen, 8192)"); break;
    case 4: S_set(&g->mode, "≈5%"); break;
    case 5: g->tier = g->tier == FIG_CITED ? FIG_MEASURED : FIG_CITED; break;
    case 6: g->ok = !g->ok; break;
    case 7: g->value = 42.5; break;
    case 8: S_set(&g->detail, "another detail"); break;
    case 9: S_set(&g->provenance, "source: elsewhere"); break;
    case 10: S_set(&g->anchor, "fig-9"); break;
    }
}

static void test_digest_stable(void **state)
{
    (void)state;
    page_record r, d;
    S_full(&r);
    uint64_t h = record_digest(&r);
    assert_true(h == record_digest(&r));
    /* a record and its decoded copy have the same digest */
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &d), 0);
    assert_true(record_digest(&d) == h);
    record_free(&d);
    buf_free(&enc);

    /* NULL strings travel as "": the digest does not tell them apart */
    page_record e;
    record_init(&e);
    record_encode(&e, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &d), 0);
    assert_true(record_digest(&d) == record_digest(&e));
    assert_true(record_digest(&e) != h);
    record_free(&d);
    record_free(&e);
    buf_free(&enc);
    record_free(&r);
}

static void test_digest_sees_what_pages_read(void **state)
{
    (void)state;
    page_record r;
    S_full(&r);
    uint64_t h = record_digest(&r);
    record_free(&r);

    for (int k = 0; k < 3; k++) {
        S_full(&r);
        S_set(k == 0 ? &r.url : k == 1 ? &r.src : &r.summary, "changed");
        if (record_digest(&r) == h)
            fail_msg("the digest missed a change of %s", k == 0 ? "url" : k == 1 ? "src" : "summary");
        record_free(&r);
    }
    for (size_t i = 0; i < 2; i++) {
        for (int k = 0; k < FIG_FIELDS; k++) {
            S_full(&r);
            S_change_fig(&r.figs[i], k);
            if (record_digest(&r) == h)
                fail_msg("the digest missed a change of field %d of figure %zu", k, i);
            record_free(&r);
        }
    }
    /* a figure less, and the two figures swapped */
    S_full(&r);
    r.nfigs = 1; /* record_free frees only nfigs: free the other one here */
    figure *last = &r.figs[1];
    free(last->quote);
    free(last->expr);
    free(last->mode);
    free(last->detail);
    free(last->provenance);
    free(last->anchor);
    assert_true(record_digest(&r) != h);
    record_free(&r);
    S_full(&r);
    figure t = r.figs[0];
    r.figs[0] = r.figs[1];
    r.figs[1] = t;
    assert_true(record_digest(&r) != h);
    record_free(&r);

    /* where one string ends and the next begins counts */
    page_record a, b;
    record_init(&a);
    record_init(&b);
    a.url = xstrdup("ab");
    a.src = xstrdup("");
    b.url = xstrdup("a");
    b.src = xstrdup("b");
    assert_true(record_digest(&a) != record_digest(&b));
    record_free(&a);
    record_free(&b);
}

static void test_digest_ignores_what_pages_cannot_read(void **state)
{
    (void)state;
    page_record r;
    S_full(&r);
    uint64_t h = record_digest(&r);
    record_free(&r);

    for (int k = 0; k < 9; k++) {
        S_full(&r);
        const char *what = "";
        switch (k) {
        case 0:
            what = "a diagnostic more";
            diag_error(&r.diags, "x.md", 1, 1, "another");
            break;
        case 1:
            what = "no diagnostics";
            diag_list_free(&r.diags);
            diag_list_init(&r.diags);
            break;
        case 2:
            what = "a link target";
            S_set(&r.links[0].target, "/elsewhere/");
            r.links[1].line++;
            break;
        case 3:
            what = "an id";
            S_set(&r.ids[2], "other");
            break;
        case 4:
            what = "an id less";
            free(r.ids[2]);
            r.nids = 2;
            break;
        case 5:
            what = "the inputs";
            free(r.inputs);
            r.inputs = xstrdup("templates/other.html");
            r.inputs_len = strlen(r.inputs) + 1;
            break;
        case 6:
            what = "the reads";
            r.reads[0] = 99;
            break;
        case 7:
            what = "no reads";
            r.nreads = 0;
            break;
        case 8:
            what = "out_bytes";
            r.out_bytes = 1;
            break;
        }
        if (record_digest(&r) != h)
            fail_msg("the digest changed with %s", what);
        record_free(&r);
    }
}

/* With a figstore, decoded records keep their ids and links there too (a
 * report page's links to 200,000 figures' rows were most of the parent's
 * memory): record_links reads them back, in memory or stored, pending or
 * flushed; the stored record encodes to the same bytes; a store that does
 * not hold them is an error, and the encoding then one no decoder takes.
 * The same read one record at a time or through a window (in_order). */
static void S_links_in_a_store(bool in_order)
{
    figstore st;
    assert_int_equal(figstore_open(&st, "/tmp"), 0);
    page_record r, stored, other;
    S_full(&r);
    buf enc = BUF_INIT, again = BUF_INIT;
    record_encode(&r, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr, enc.len, &st, &other), 0);
    assert_int_equal(record_decode(enc.ptr, enc.len, &st, &stored), 0);
    assert_null(stored.ids);
    assert_null(stored.links);
    assert_int_equal(stored.nids, 3);
    assert_int_equal(stored.nlinks, 2);
    assert_true(stored.links_len > 0 && stored.links_at > other.links_at);
    record_links_buf lb = {.in_order = in_order};
    char *const *ids;
    const md_link *links;
    assert_int_equal(record_links(&r, &st, &lb, &ids, &links), 0); /* its own */
    assert_ptr_equal(ids, r.ids);
    assert_ptr_equal(links, r.links);
    for (int pass = 0; pass < 2; pass++) { /* pending, then flushed */
        assert_int_equal(record_links(&stored, &st, &lb, &ids, &links), 0);
        for (size_t i = 0; i < 3; i++)
            assert_string_equal(ids[i], r.ids[i]);
        for (size_t i = 0; i < 2; i++) {
            assert_string_equal(links[i].target, r.links[i].target);
            assert_int_equal(links[i].line, r.links[i].line);
            assert_int_equal(links[i].col, r.links[i].col);
        }
        assert_null(links[0].file);
        assert_string_equal(links[1].file, "templates/page.html");
        buf_clear(&again);
        record_encode(&stored, &st, &again);
        assert_int_equal(again.len, enc.len);
        assert_memory_equal(again.ptr, enc.ptr, enc.len);
        assert_int_equal(figstore_flush(&st), 0);
    }
    /* not in the store: an error, and an encoding that is refused */
    stored.links_at += 1000;
    assert_int_equal(record_links(&stored, &st, &lb, &ids, &links), -1);
    assert_int_equal(record_links(&stored, NULL, &lb, &ids, &links), -1);
    buf_clear(&again);
    record_encode(&stored, &st, &again);
    page_record bad;
    assert_int_equal(record_decode(again.ptr, again.len, NULL, &bad), -1);
    record_links_buf_free(&lb);
    record_free(&r);
    record_free(&stored);
    record_free(&other);
    buf_free(&enc);
    buf_free(&again);
    figstore_close(&st);
}

static void test_links_in_a_store(void **state)
{
    (void)state;
    S_links_in_a_store(false);
}

static void test_links_in_a_store_in_order(void **state)
{
    (void)state;
    S_links_in_a_store(true);
}

/* Read through a window, many records come back whole in any order (the
 * link check goes by job, the store by arrival): forward, backward, and
 * across the window's end. */
static void test_links_window_any_order(void **state)
{
    (void)state;
    enum { N = 3000 };
    figstore st;
    assert_int_equal(figstore_open(&st, "/tmp"), 0);
    page_record r;
    S_full(&r);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    page_record *v = xcalloc(N, sizeof *v);
    for (size_t i = 0; i < N; i++)
        assert_int_equal(record_decode(enc.ptr, enc.len, &st, &v[i]), 0);
    assert_true(v[N - 1].links_at > FIGSTORE_WINDOW); /* more than one window */
    assert_int_equal(figstore_flush(&st), 0);
    record_links_buf lb = {.in_order = true};
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < N; k++) {
            size_t i = pass == 0 ? k : N - 1 - k;
            char *const *ids;
            const md_link *links;
            assert_int_equal(record_links(&v[i], &st, &lb, &ids, &links), 0);
            assert_string_equal(ids[2], r.ids[2]);
            assert_string_equal(links[1].target, r.links[1].target);
        }
    }
    record_links_buf_free(&lb);
    for (size_t i = 0; i < N; i++)
        record_free(&v[i]);
    free(v);
    record_free(&r);
    buf_free(&enc);
    figstore_close(&st);
}

/* Records decoded for a store share one copy of a list of inputs: the
 * parent holds every record, and pages read the same templates. The copy
 * outlives the records. */
static void test_inputs_shared(void **state)
{
    (void)state;
    figstore st;
    assert_int_equal(figstore_open(&st, "/tmp"), 0);
    page_record r, a, b, c;
    S_full(&r);
    buf enc = BUF_INIT;
    record_encode(&r, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr, enc.len, &st, &a), 0);
    assert_int_equal(record_decode(enc.ptr, enc.len, &st, &b), 0);
    assert_ptr_equal(a.inputs, b.inputs);
    assert_int_equal(a.inputs_len, sizeof S_inputs);
    record_free(&a);
    assert_memory_equal(b.inputs, S_inputs, sizeof S_inputs);
    /* without a store (a record read and dropped at once): its own copy */
    assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &c), 0);
    assert_true(c.inputs != b.inputs);
    assert_memory_equal(c.inputs, S_inputs, sizeof S_inputs);
    record_free(&b);
    record_free(&c);
    record_free(&r);
    buf_free(&enc);
    figstore_close(&st);
}

/* A page's links that name one template share its name (one copy). */
static void test_link_files_shared(void **state)
{
    (void)state;
    page_record r, d;
    S_full(&r);
    r.links = xrealloc(r.links, 4 * sizeof *r.links);
    r.links[2] = (md_link){xstrdup("/x/"), 1, 1, xstrdup("templates/page.html")};
    r.links[3] = (md_link){xstrdup("/y/"), 1, 1, xstrdup("templates/other.html")};
    r.nlinks = 4;
    buf enc = BUF_INIT, again = BUF_INIT;
    record_encode(&r, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &d), 0);
    assert_ptr_equal(d.links[1].file, d.links[2].file);
    assert_string_equal(d.links[3].file, "templates/other.html");
    record_encode(&d, NULL, &again);
    assert_int_equal(again.len, enc.len);
    assert_memory_equal(again.ptr, enc.ptr, enc.len);
    record_free(&d);
    record_free(&r);
    buf_free(&enc);
    buf_free(&again);
}

/* With a figstore, decoded records keep their figures there: counts and the
 * digest are the same as in memory, record_figures reads them back, and
 * encoding the stored record gives the same bytes. */
static void test_figures_in_a_store(void **state)
{
    (void)state;
    figstore st;
    assert_int_equal(figstore_open(&st, "/tmp"), 0);
    page_record r, mem, stored, other;
    S_full(&r);
    buf enc = BUF_INIT, again = BUF_INIT;
    record_encode(&r, NULL, &enc);
    assert_int_equal(record_decode(enc.ptr, enc.len, NULL, &mem), 0);
    /* another record first, so the figures are not at offset 0 */
    assert_int_equal(record_decode(enc.ptr, enc.len, &st, &other), 0);
    assert_int_equal(record_decode(enc.ptr, enc.len, &st, &stored), 0);
    assert_null(stored.figs);
    assert_int_equal(stored.nfigs, 2);
    assert_true(stored.figs_at > 0);
    assert_int_equal(record_digest(&stored), record_digest(&mem));
    assert_int_equal(record_digest(&stored), record_digest(&r));
    uint32_t a[FIG_TIERS + 1], b[FIG_TIERS + 1];
    record_fig_counts(&stored, a);
    record_fig_counts(&r, b);
    assert_memory_equal(a, b, sizeof a);
    assert_int_equal(a[FIG_MEASURED], 1);
    assert_int_equal(a[FIG_CITED], 1);
    assert_int_equal(a[FIG_TIERS], 1);
    record_figs_buf fb = {0};
    for (int pass = 0; pass < 2; pass++) { /* pending, then flushed */
        const figure *f = record_figures(&stored, &st, &fb);
        assert_non_null(f);
        S_same_fig(&f[0], &r.figs[0]);
        S_same_fig(&f[1], &r.figs[1]);
        /* nothing copied: the strings are in the bytes read back */
        for (int k = 0; k < 2; k++) {
            const char *strs[] = {f[k].quote, f[k].expr, f[k].mode, f[k].detail,
                                  f[k].provenance, f[k].anchor};
            for (size_t i = 0; i < N(strs); i++)
                assert_true(strs[i] > fb.win.bytes.ptr &&
                            strs[i] + strlen(strs[i]) < fb.win.bytes.ptr + fb.win.bytes.len);
        }
        buf_clear(&again);
        record_encode(&stored, &st, &again);
        assert_int_equal(again.len, enc.len);
        assert_memory_equal(again.ptr, enc.ptr, enc.len);
        assert_int_equal(figstore_flush(&st), 0);
    }
    /* the store cannot be read past its end */
    stored.figs_at += 1000;
    assert_null(record_figures(&stored, &st, &fb));
    record_figs_buf_free(&fb);
    record_free(&r);
    record_free(&mem);
    record_free(&stored);
    record_free(&other);
    buf_free(&enc);
    buf_free(&again);
    figstore_close(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_field),
        cmocka_unit_test(test_round_trip_empty),
        cmocka_unit_test(test_round_trip_many),
        cmocka_unit_test(test_every_prefix_refused),
        cmocka_unit_test(test_corruption_refused),
        cmocka_unit_test(test_enum_out_of_range_refused),
        cmocka_unit_test(test_figure_string_nul_required),
        cmocka_unit_test(test_bit_flips_never_crash),
        cmocka_unit_test(test_reads_round_trip),
        cmocka_unit_test(test_reads_kept_as_runs),
        cmocka_unit_test(test_reads_truncated_refused),
        cmocka_unit_test(test_digest_stable),
        cmocka_unit_test(test_digest_sees_what_pages_read),
        cmocka_unit_test(test_digest_ignores_what_pages_cannot_read),
        cmocka_unit_test(test_figures_in_a_store),
        cmocka_unit_test(test_links_in_a_store),
        cmocka_unit_test(test_links_in_a_store_in_order),
        cmocka_unit_test(test_links_window_any_order),
        cmocka_unit_test(test_inputs_shared),
        cmocka_unit_test(test_link_files_shared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
