/* yvjson: yv_parse_json (yv.h), RFC 8259, as a state machine over the
 * bytes (no recursion: nesting is the builder's stack, yv_build.h). */
#include "yv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "utf8.h"
#include "yv_build.h"

typedef struct {
    yvb_builder b;
    const char *s;
    size_t len, pos;
    int line;
    size_t line_start; /* byte offset where the current line starts */
    buf str;           /* scratch for decoded strings */
} S_json;

static int S_json_col(const S_json *j, size_t pos) { return yvb_clamp((long long)(pos - j->line_start) + 1); }

static int S_json_fail(S_json *j, size_t pos, const char *msg)
{
    diag_error(j->b.dl, j->b.file, j->line, S_json_col(j, pos), "invalid JSON: %s", msg);
    return -1;
}

static void S_json_ws(S_json *j)
{
    while (j->pos < j->len) {
        char c = j->s[j->pos];
        if (c == '\n') {
            j->line++;
            j->line_start = j->pos + 1;
        } else if (c != ' ' && c != '\t' && c != '\r') {
            return;
        }
        j->pos++;
    }
}

/* The four hex digits of a \u escape at s[at] ('\\'), or -1. */
static long S_json_hex4(const S_json *j, size_t at)
{
    if (at + 6 > j->len || j->s[at] != '\\' || j->s[at + 1] != 'u')
        return -1;
    long cp = 0;
    for (size_t k = at + 2; k < at + 6; k++) {
        int d = yvb_digit_value(j->s[k], 16);
        if (d < 0)
            return -1;
        cp = cp * 16 + d;
    }
    return cp;
}

/* Decodes the string at j->pos (a '"') into j->str. */
static int S_json_string(S_json *j)
{
    size_t start = j->pos++;
    buf_clear(&j->str);
    for (;;) {
        if (j->pos >= j->len)
            return S_json_fail(j, start, "unterminated string");
        unsigned char c = (unsigned char)j->s[j->pos];
        if (c == '"') {
            j->pos++;
            return 0;
        }
        if (c < 0x20)
            return S_json_fail(j, j->pos, "control character in string");
        if (c != '\\') {
            buf_putc(&j->str, c);
            j->pos++;
            continue;
        }
        size_t esc = j->pos;
        char e = j->pos + 1 < j->len ? j->s[j->pos + 1] : '\0';
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *hit = e ? strchr(from, e) : NULL;
        if (hit) {
            buf_putc(&j->str, to[hit - from]);
            j->pos += 2;
            continue;
        }
        if (e != 'u')
            return S_json_fail(j, esc, "invalid escape");
        long cp = S_json_hex4(j, esc);
        if (cp < 0)
            return S_json_fail(j, esc, "invalid \\u escape");
        j->pos += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            long lo = S_json_hex4(j, j->pos);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return S_json_fail(j, esc, "unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            j->pos += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return S_json_fail(j, esc, "unpaired surrogate in \\u escape");
        } else if (cp == 0) {
            diag_error(j->b.dl, j->b.file, j->line, S_json_col(j, esc), "NUL character in string");
            return -1;
        }
        char u[4];
        buf_put(&j->str, u, utf8_encode((uint32_t)cp, u));
    }
}

static int S_json_number(S_json *j)
{
    const char *s = j->s;
    size_t start = j->pos, k = start;
    bool integral = true;
    if (k < j->len && s[k] == '-')
        k++;
    size_t whole = yvb_digits(s, j->len, k);
    if (whole == 0 || (whole > 1 && s[k] == '0'))
        return S_json_fail(j, start, "invalid number");
    k += whole;
    if (k < j->len && s[k] == '.') {
        integral = false;
        size_t frac = yvb_digits(s, j->len, k + 1);
        if (frac == 0)
            return S_json_fail(j, start, "invalid number");
        k += 1 + frac;
    }
    if (k < j->len && (s[k] == 'e' || s[k] == 'E')) {
        integral = false;
        k++;
        if (k < j->len && (s[k] == '+' || s[k] == '-'))
            k++;
        size_t exp = yvb_digits(s, j->len, k);
        if (exp == 0)
            return S_json_fail(j, start, "invalid number");
        k += exp;
    }
    yv *v = yvb_scalar(&j->b, s + start, k - start, j->line, S_json_col(j, start));
    if (!v)
        return -1;
    j->pos = k;
    errno = 0;
    if (integral) {
        v->i = strtoll(v->str, NULL, 10);
        if (errno != ERANGE) {
            v->type = YV_INT;
            return 0;
        }
    }
    v->type = YV_FLOAT;
    v->f = strtod(v->str, NULL);
    return 0;
}

/* A value that is not a container: string, number, true, false, null. */
static int S_json_scalar(S_json *j)
{
    static const struct {
        const char *word;
        yv_type type;
        bool b;
    } lits[] = {{"true", YV_BOOL, true}, {"false", YV_BOOL, false}, {"null", YV_NULL, false}};
    char c = j->s[j->pos];
    int col = S_json_col(j, j->pos);
    if (c == '"') {
        if (S_json_string(j) < 0)
            return -1;
        return yvb_scalar(&j->b, j->str.ptr ? j->str.ptr : "", j->str.len, j->line, col) ? 0 : -1;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return S_json_number(j);
    for (size_t k = 0; k < sizeof lits / sizeof lits[0]; k++) {
        size_t n = strlen(lits[k].word);
        if (j->len - j->pos >= n && memcmp(j->s + j->pos, lits[k].word, n) == 0) {
            yv *v = yvb_scalar(&j->b, lits[k].word, n, j->line, col);
            if (!v)
                return -1;
            v->type = lits[k].type;
            v->b = lits[k].b;
            j->pos += n;
            return 0;
        }
    }
    return S_json_fail(j, j->pos, "expected a value");
}

enum { S_J_VALUE, S_J_VALUE_OR_END, S_J_KEY, S_J_KEY_OR_END, S_J_AFTER };

/* One step of the JSON state machine; 1 when the document is complete. */
static int S_json_step(S_json *j, int *state)
{
    S_json_ws(j);
    bool eof = j->pos >= j->len;
    char c = eof ? '\0' : j->s[j->pos];
    int col = S_json_col(j, j->pos);
    yvb_frame *top = yvb_top(&j->b);

    if ((*state == S_J_VALUE_OR_END && c == ']') || (*state == S_J_KEY_OR_END && c == '}')) {
        j->pos++;
        *state = S_J_AFTER;
        return yvb_close(&j->b, true);
    }
    if (*state == S_J_AFTER) {
        if (!top)
            return eof ? 1 : S_json_fail(j, j->pos, "unexpected content after the value");
        bool map = top->v->type == YV_MAP;
        if (c == ',') {
            j->pos++;
            *state = map ? S_J_KEY : S_J_VALUE;
            return 0;
        }
        if (c == (map ? '}' : ']')) {
            j->pos++;
            return yvb_close(&j->b, true);
        }
        if (eof)
            return S_json_fail(j, j->pos, "unexpected end of input");
        return S_json_fail(j, j->pos, map ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    if (eof)
        return S_json_fail(j, j->pos, "unexpected end of input");
    if (*state == S_J_KEY || *state == S_J_KEY_OR_END) {
        if (c != '"')
            return S_json_fail(j, j->pos, "expected a string key");
        if (S_json_string(j) < 0)
            return -1;
        yvb_key(&j->b, j->str.ptr ? j->str.ptr : "", j->str.len, j->line, col);
        S_json_ws(j);
        if (j->pos >= j->len || j->s[j->pos] != ':')
            return S_json_fail(j, j->pos, "expected ':'");
        j->pos++;
        *state = S_J_VALUE;
        return 0;
    }
    /* S_J_VALUE or S_J_VALUE_OR_END */
    if (c == '{' || c == '[') {
        if (!yvb_open(&j->b, c == '{' ? YV_MAP : YV_SEQ, j->line, col))
            return -1;
        j->pos++;
        *state = c == '{' ? S_J_KEY_OR_END : S_J_VALUE_OR_END;
        return 0;
    }
    *state = S_J_AFTER;
    return S_json_scalar(j);
}

yv *yv_parse_json(const char *text, size_t len, const yv_limits *lim, const char *file,
                  diag_list *dl)
{
    if (yvb_input(&text, len, &lim, file, 0, dl) < 0)
        return NULL;
    S_json j;
    memset(&j, 0, sizeof j);
    yvb_init(&j.b, lim, file, dl);
    j.s = text;
    j.len = len;
    j.line = 1;
    buf_init(&j.str);
    if (yvb_has_bom(text, len))
        j.pos = j.line_start = 3; /* columns count from after the BOM, as editors show them */
    int state = S_J_VALUE, rc = 0;
    while (rc == 0)
        rc = S_json_step(&j, &state);
    buf_free(&j.str);
    return rc < 0 ? yvb_fail(&j.b) : yvb_done(&j.b);
}
