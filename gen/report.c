#include "report.h"

#include <math.h>
#include <string.h>

/* A string literal's bytes, without strlen. */
#define S_LIT(b, s) buf_put((b), (s), sizeof(s) - 1)

/* s escaped for a JSON string, with its quotes. 200,000 figures make tens
 * of megabytes: the worst case is reserved once, and bytes are copied in a
 * plain loop (most strings are short and need no escape at all). */
static void S_json_str(buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = s ? strlen(s) : 0;
    buf_grow(b, 6 * n + 2);
    char *o = b->ptr + b->len;
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s, *end = p + n; p < end; p++) {
        unsigned char c = *p;
        if (c >= 0x20 && c != '"' && c != '\\') {
            *o++ = (char)c;
        } else if (c == '"' || c == '\\') {
            *o++ = '\\';
            *o++ = (char)c;
        } else if (c == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        } else if (c == '\t') {
            *o++ = '\\';
            *o++ = 't';
        } else {
            memcpy(o, "\\u00", 4);
            o[4] = hex[c >> 4];
            o[5] = hex[c & 15];
            o += 6;
        }
    }
    *o++ = '"';
    b->len = (size_t)(o - b->ptr);
    b->ptr[b->len] = '\0';
}

void report_json_head(buf *out) { buf_puts(out, "{\n  \"figures\": ["); }

void report_json_figure(buf *b, report_totals *t, const char *page_url, const char *src,
                        const figure *fg)
{
    if (t->total)
        buf_putc(b, ',');
    S_LIT(b, "\n    {\"page\": ");
    S_json_str(b, page_url);
    S_LIT(b, ", \"file\": ");
    S_json_str(b, src);
    S_LIT(b, ", \"line\": ");
    buf_put_int(b, fg->line);
    S_LIT(b, ", \"col\": ");
    buf_put_int(b, fg->col);
    S_LIT(b, ", \"quote\": ");
    S_json_str(b, fg->quote);
    S_LIT(b, ", \"expr\": ");
    S_json_str(b, fg->expr);
    S_LIT(b, ", \"mode\": ");
    S_json_str(b, fg->mode);
    if (fg->tier == FIG_CITED || !isfinite(fg->value)) {
        S_LIT(b, ", \"value\": null");
    } else {
        S_LIT(b, ", \"value\": ");
        buf_put_g17(b, fg->value);
    }
    S_LIT(b, ", \"tier\": \"");
    buf_puts(b, fig_tier_name(fg->tier));
    buf_puts(b, fg->ok ? "\", \"status\": \"pass\", \"detail\": "
                       : "\", \"status\": \"fail\", \"detail\": ");
    S_json_str(b, fg->detail);
    S_LIT(b, ", \"provenance\": ");
    S_json_str(b, fg->provenance);
    S_LIT(b, ", \"anchor\": ");
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
    S_LIT(b, "\": ");
    buf_put_int(b, (long long)n);
    buf_puts(b, after);
}

void report_json_tail(buf *b, const report_totals *t)
{
    S_LIT(b, "\n  ],\n  \"totals\": {");
    S_total(b, "figures", t->total, ", ");
    S_total(b, "computed", t->tiers[FIG_COMPUTED], ", ");
    S_total(b, "measured", t->tiers[FIG_MEASURED], ", ");
    S_total(b, "cited", t->tiers[FIG_CITED], ", ");
    S_total(b, "passed", t->total - t->failed, ", ");
    S_total(b, "failed", t->failed, "}\n}\n");
}
