/* fuzz_quote: the quote grammar and the comparison of a quote with a value.
 *
 * Input (text, so seeds read well and mutate usefully), one field per line:
 *   1  the quote as written in Markdown: "224 MiB", "~40 GB", "53.1%"
 *   2  the value in base units, as C reads a double: "234881024", "nan", "-1e308"
 *   3  optional: "~" forces an approximate check, then a relative tolerance
 *   4  optional: a user unit "name scale kind" defined before parsing
 * Missing fields take harmless defaults. Every public function of quote.h runs
 * on what the input makes; the invariants checked are the ones the header
 * promises (one line per message, never an empty one on failure). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "quote.h"

#define FIELDS 4

/* Splits data into up to FIELDS lines; the last field takes the rest. */
static void S_fields(const char *s, size_t n, const char **f, size_t *fl)
{
    size_t i = 0;
    for (int k = 0; k < FIELDS; k++) {
        f[k] = s + i;
        size_t j = i;
        while (j < n && (k == FIELDS - 1 || s[j] != '\n'))
            j++;
        fl[k] = j - i;
        i = j < n ? j + 1 : j;
    }
}

/* A NUL-terminated copy of at most cap-1 bytes. */
static void S_cstr(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static void S_one_line(const buf *b)
{
    /* messages are one line without a trailing newline */
    if (b->len && (memchr(b->ptr, '\n', b->len) || b->ptr[b->len - 1] == '\n'))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *f[FIELDS];
    size_t fl[FIELDS];
    S_fields((const char *)data, size, f, fl);

    char num[64];
    S_cstr(num, sizeof num, f[1], fl[1]);
    double value = fl[1] ? strtod(num, NULL) : 1.0;

    bool approx = fl[2] && f[2][0] == '~';
    char tol[64];
    S_cstr(tol, sizeof tol, approx ? f[2] + 1 : f[2], approx ? fl[2] - 1 : fl[2]);
    double rel = fl[2] ? strtod(tol, NULL) : 0.05;

    quote_unitset *u = quote_units_new();
    buf err = BUF_INIT;
    if (fl[3]) {
        char def[128], name[64] = "", kind[32] = "";
        double scale = 0;
        S_cstr(def, sizeof def, f[3], fl[3]);
        if (sscanf(def, "%63s %lf %31s", name, &scale, kind) == 3) {
            if (quote_units_define(u, name, scale, kind, &err) != 0 && err.len == 0)
                __builtin_trap(); /* a refusal always says why */
            S_one_line(&err);
            buf_clear(&err);
        }
    }

    quote q;
    if (quote_parse(f[0], fl[0], u, &q, &err) == 0) {
        if (strlen(q.text) > QUOTE_MAX_LEN || q.body > strlen(q.text) ||
            q.decimals < 0 || q.decimals > QUOTE_MAX_DIGITS)
            __builtin_trap();
        buf msg = BUF_INIT, desc = BUF_INIT;
        bool ok = quote_check(&q, "e", value, approx, rel, u, &msg);
        if (!ok && msg.len == 0)
            __builtin_trap(); /* a failing figure always has a message */
        S_one_line(&msg);
        /* the quote's own number, in its unit, must pass an exact check */
        if (!q.approx && fabs(q.number) < 1e12) {
            buf self = BUF_INIT;
            if (!quote_check(&q, NULL, q.number * q.unit.scale, false, 0, u, &self))
                __builtin_trap();
            buf_free(&self);
        }
        quote_describe(&q, value, u, &desc);
        S_one_line(&desc);
        quote_format_number(value, q.decimals, &desc);
        quote_format_number(value, (int)(size % 40) - 10, &desc); /* clamped to 0..20 */
        buf_free(&msg);
        buf_free(&desc);
    } else {
        if (err.len == 0)
            __builtin_trap(); /* a refusal always says why */
        S_one_line(&err);
    }
    (void)quote_units_find(u, f[0], fl[0] > QUOTE_UNIT_NAME_MAX ? QUOTE_UNIT_NAME_MAX : fl[0]);
    buf_free(&err);
    quote_units_free(u);
    return 0;
}
