#include "report.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "strmap.h"


/* What a byte becomes inside a JSON string: 0 itself, else the letter after
 * the backslash ('u': \u00XX). Only what must be escaped is. */
static const unsigned char S_esc[256] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 't', 'n', 'u', 'u', 'u', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    ['"'] = '"', ['\\'] = '\\'};

/* Whether one of the eight bytes of w is below 0x20, '"' or '\\' (a byte
 * equal to c is zero after the xor; (x - ones*k) & ~x & high is nonzero
 * exactly when some byte of x is below k). */
static inline bool S_esc_word(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = w ^ (ones * '"'), s = w ^ (ones * '\\');
    return (((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((s - ones) & ~s)) & high;
}

/* One byte of a string, escaped; returns the output's new end. */
static inline char *S_esc_byte(char *o, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char e = S_esc[c];
    if (!e) {
        *o++ = (char)c;
    } else if (e != 'u') {
        o[0] = '\\';
        o[1] = (char)e;
        o += 2;
    } else {
        memcpy(o, "\\u00", 4);
        o[4] = hex[c >> 4];
        o[5] = hex[c & 15];
        o += 6;
    }
    return o;
}

/* s escaped for a JSON string, with its quotes. 200,000 figures make tens
 * of megabytes: the worst case is reserved once, and plain text (nearly all
 * of it) is checked and copied eight bytes at a time. */
static void S_json_str(buf *b, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (6 * n + 2 >= b->cap - b->len)
        buf_grow(b, 6 * n + 2);
    char *o = b->ptr + b->len;
    *o++ = '"';
    size_t i = 0;
    while (n - i >= 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (!S_esc_word(w)) {
            memcpy(o, &w, 8);
            o += 8;
            i += 8;
            continue;
        }
        for (size_t stop = i + 8; i < stop; i++)
            o = S_esc_byte(o, (unsigned char)s[i]);
    }
    for (; i < n; i++)
        o = S_esc_byte(o, (unsigned char)s[i]);
    *o++ = '"';
    b->len = (size_t)(o - b->ptr);
    b->ptr[b->len] = '\0';
}

void report_json_head(buf *out) { buf_puts(out, "{\n  \"figures\": ["); }

void report_json_page(buf *head, const char *page_url, const char *src)
{
    buf_clear(head);
    BUF_PUT_LIT(head, "\n    {\"page\": ");
    S_json_str(head, page_url);
    BUF_PUT_LIT(head, ", \"file\": ");
    S_json_str(head, src);
    BUF_PUT_LIT(head, ", \"line\": ");
}

/* What follows the value, by tier and status (tier * 2 + ok): the names are
 * fig_tier_name's (a unit test holds them to it). */
#define S_TS(tier, status) ", \"tier\": \"" tier "\", \"status\": \"" status "\", \"detail\": "
static const struct {
    const char *s;
    size_t len;
} S_tier_status[2 * FIG_TIERS] = {
    {S_TS("computed", "fail"), sizeof S_TS("computed", "fail") - 1},
    {S_TS("computed", "pass"), sizeof S_TS("computed", "pass") - 1},
    {S_TS("measured", "fail"), sizeof S_TS("measured", "fail") - 1},
    {S_TS("measured", "pass"), sizeof S_TS("measured", "pass") - 1},
    {S_TS("cited", "fail"), sizeof S_TS("cited", "fail") - 1},
    {S_TS("cited", "pass"), sizeof S_TS("cited", "pass") - 1},
    {S_TS("refuted", "fail"), sizeof S_TS("refuted", "fail") - 1},
    {S_TS("refuted", "pass"), sizeof S_TS("refuted", "pass") - 1},
};

void report_json_figure(buf *b, report_totals *t, const buf *head, const figure *fg)
{
    if (t->total)
        buf_putc(b, ',');
    buf_put(b, head->ptr, head->len);
    buf_put_int(b, fg->line);
    BUF_PUT_LIT(b, ", \"col\": ");
    buf_put_int(b, fg->col);
    BUF_PUT_LIT(b, ", \"quote\": ");
    S_json_str(b, fg->quote);
    BUF_PUT_LIT(b, ", \"expr\": ");
    S_json_str(b, fg->expr);
    BUF_PUT_LIT(b, ", \"mode\": ");
    S_json_str(b, fg->mode);
    if (fg->tier == FIG_CITED || !isfinite(fg->value)) {
        BUF_PUT_LIT(b, ", \"value\": null");
    } else {
        BUF_PUT_LIT(b, ", \"value\": ");
        buf_put_g17(b, fg->value);
    }
    unsigned ts = (unsigned)fg->tier * 2 + fg->ok;
    buf_put(b, S_tier_status[ts].s, S_tier_status[ts].len);
    S_json_str(b, fg->detail);
    BUF_PUT_LIT(b, ", \"provenance\": ");
    S_json_str(b, fg->provenance);
    BUF_PUT_LIT(b, ", \"anchor\": ");
    S_json_str(b, fg->anchor);
    buf_putc(b, '}');
    t->tiers[fg->tier]++;
    t->failed += !fg->ok;
    t->total++;
}

static void S_total(buf *b, const char *key, size_t n, const char *after)
{
    buf_putc(b, '"');
    buf_puts(b, key);
    BUF_PUT_LIT(b, "\": ");
    buf_put_int(b, (long long)n);
    buf_puts(b, after);
}

void report_json_tail(buf *b, const report_totals *t)
{
    BUF_PUT_LIT(b, "\n  ],\n  \"totals\": {");
    S_total(b, "figures", t->total, ", ");
    S_total(b, "computed", t->tiers[FIG_COMPUTED], ", ");
    S_total(b, "measured", t->tiers[FIG_MEASURED], ", ");
    S_total(b, "cited", t->tiers[FIG_CITED], ", ");
    S_total(b, "refuted", t->tiers[FIG_REFUTED], ", ");
    S_total(b, "passed", t->total - t->failed, ", ");
    S_total(b, "failed", t->failed, "}\n}\n");
}

/* ---------- report groups ---------- */

size_t *report_sections(const content_index *idx, size_t *n)
{
    size_t *v = xmalloc((idx->npages + 1) * sizeof *v);
    *n = 0;
    for (size_t i = 0; i < idx->npages; i++) {
        const page *p = idx->pages[i];
        if (p->kind == PAGE_SECTION && p->parent && p->parent->kind == PAGE_HOME)
            v[(*n)++] = i;
    }
    return v;
}

/* The top-level section page a page belongs to, or NULL for the root group. */
static const page *S_top_section(const page *p)
{
    /* parents lead to home: a chain as deep as the content folders */
    while (p && p->parent && p->parent->kind != PAGE_HOME)
        p = p->parent;
    return p && p->kind != PAGE_HOME && p->parent && p->kind == PAGE_SECTION ? p : NULL;
}

size_t *report_groups(const content_index *idx, const size_t *sections, size_t n)
{
    size_t *groups = xmalloc((idx->npages + 1) * sizeof *groups);
    strmap top_of;
    strmap_init(&top_of);
    for (size_t k = 0; k < n; k++)
        strmap_put(&top_of, idx->pages[sections[k]]->url, (void *)(k + 1));
    for (size_t j = 0; j < idx->npages; j++) {
        const page *top = n ? S_top_section(idx->pages[j]) : NULL;
        size_t k = top ? (size_t)strmap_get(&top_of, top->url) : 0;
        groups[j] = !n ? REPORT_GROUP_ALL : k ? k - 1 : REPORT_GROUP_ROOT;
    }
    strmap_free(&top_of);
    return groups;
}

char *report_path(const content_index *idx, const size_t *sections, size_t group)
{
    if (group == REPORT_GROUP_ALL || group == REPORT_GROUP_ROOT)
        return xstrdup("/checks/");
    return xasprintf("/checks%s", idx->pages[sections[group]]->url);
}
