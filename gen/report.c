#include "report.h"

#include <math.h>

/* s escaped for a JSON string, without the quotes */
static void S_json_chars(buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : ""), *run = p;
    for (; *p; p++) {
        if (*p >= 0x20 && *p != '"' && *p != '\\')
            continue; /* copied in runs */
        buf_put(b, run, (size_t)(p - run));
        if (*p == '"' || *p == '\\') {
            buf_putc(b, '\\');
            buf_putc(b, (char)*p);
        } else if (*p == '\n') {
            buf_puts(b, "\\n");
        } else if (*p == '\t') {
            buf_puts(b, "\\t");
        } else {
            static const char hex[] = "0123456789abcdef";
            char u[6] = {'\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15]};
            buf_put(b, u, sizeof u);
        }
        run = p + 1;
    }
    buf_put(b, run, (size_t)(p - run));
}

static void S_json_str(buf *b, const char *s)
{
    buf_putc(b, '"');
    S_json_chars(b, s);
    buf_putc(b, '"');
}

void report_json_head(buf *out) { buf_puts(out, "{\n  \"figures\": ["); }

void report_json_figure(buf *b, report_totals *t, const char *page_url, const char *src,
                        const figure *fg)
{
    buf_puts(b, t->total ? ",\n    {\"page\": " : "\n    {\"page\": ");
    S_json_str(b, page_url);
    buf_puts(b, ", \"file\": ");
    S_json_str(b, src);
    buf_puts(b, ", \"line\": ");
    buf_put_int(b, fg->line);
    buf_puts(b, ", \"col\": ");
    buf_put_int(b, fg->col);
    buf_puts(b, ", \"quote\": ");
    S_json_str(b, fg->quote);
    buf_puts(b, ", \"expr\": ");
    S_json_str(b, fg->expr);
    buf_puts(b, ", \"mode\": ");
    S_json_str(b, fg->mode);
    if (fg->tier == FIG_CITED || !isfinite(fg->value)) {
        buf_puts(b, ", \"value\": null");
    } else {
        buf_puts(b, ", \"value\": ");
        buf_put_g17(b, fg->value);
    }
    buf_puts(b, ", \"tier\": \"");
    buf_puts(b, fig_tier_name(fg->tier));
    buf_puts(b, fg->ok ? "\", \"status\": \"pass\", \"detail\": "
                       : "\", \"status\": \"fail\", \"detail\": ");
    S_json_str(b, fg->detail);
    buf_puts(b, ", \"provenance\": ");
    S_json_str(b, fg->provenance);
    buf_puts(b, ", \"anchor\": ");
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
    buf_puts(b, "\": ");
    buf_put_int(b, (long long)n);
    buf_puts(b, after);
}

void report_json_tail(buf *b, const report_totals *t)
{
    buf_puts(b, "\n  ],\n  \"totals\": {");
    S_total(b, "figures", t->total, ", ");
    S_total(b, "computed", t->tiers[FIG_COMPUTED], ", ");
    S_total(b, "measured", t->tiers[FIG_MEASURED], ", ");
    S_total(b, "cited", t->tiers[FIG_CITED], ", ");
    S_total(b, "passed", t->total - t->failed, ", ");
    S_total(b, "failed", t->failed, "}\n}\n");
}
