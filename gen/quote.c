#include "quote.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct quote_unitset {
    quote_unit user[QUOTE_USER_UNITS_MAX];
    size_t n;
};

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)
#define TIB (1024.0 * 1024.0 * 1024.0 * 1024.0)

static const quote_unit S_builtin[] = {
    {"", QUOTE_COUNT, 1, NULL, true},
    {"B", QUOTE_BYTES, 1, NULL, true},
    {"KB", QUOTE_BYTES, 1e3, "KiB", true},
    {"kB", QUOTE_BYTES, 1e3, "KiB", true},
    {"MB", QUOTE_BYTES, 1e6, "MiB", true},
    {"GB", QUOTE_BYTES, 1e9, "GiB", true},
    {"TB", QUOTE_BYTES, 1e12, "TiB", true},
    {"KiB", QUOTE_BYTES, KIB, "KB", true},
    {"MiB", QUOTE_BYTES, MIB, "MB", true},
    {"GiB", QUOTE_BYTES, GIB, "GB", true},
    {"TiB", QUOTE_BYTES, TIB, "TB", true},
    {"bit", QUOTE_BYTES, 0.125, NULL, true},
    {"bits", QUOTE_BYTES, 0.125, NULL, true},
    {"%", QUOTE_FRACTION, 0.01, NULL, true},
    {"\xC3\x97", QUOTE_RATIO, 1, NULL, true}, /* × U+00D7 */
    {"x", QUOTE_RATIO, 1, NULL, true},
    {"\xE5\x80\x8D", QUOTE_RATIO, 1, NULL, true}, /* 倍 U+500D */
};
#define N_BUILTIN (sizeof S_builtin / sizeof S_builtin[0])

/* Powers of ten up to 1e22 are exact doubles. */
static const double S_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#define FORMAT_MAX_DECIMALS 20
#define EXPR_MAX_SHOWN 200 /* bytes of an expression echoed in a message */

/* ---- UTF-8 and character classes ---------------------------------------- */

/* Decodes the sequence at s[i..len): returns its length and sets *cp, or 0 when
 * it is not well-formed UTF-8 (overlong, surrogate, beyond U+10FFFF). */
static size_t S_utf8(const unsigned char *s, size_t len, size_t i, uint32_t *cp)
{
    unsigned c = s[i];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        n = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n > len - i)
        return 0;
    for (size_t k = 1; k < n; k++) {
        if ((s[i + k] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i + k] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

/* Control characters, and the invisible format characters (zero-width and
 * bidi controls) that would make a quote read differently from what it is. */
static bool S_is_control(uint32_t cp)
{
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) ||
           (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2060 && cp <= 0x2069) || cp == 0xFEFF;
}

static bool S_is_digit(int c) { return c >= '0' && c <= '9'; }

static bool S_is_ascii_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static bool S_has(const char *t, size_t len, size_t i, const char *lit)
{
    size_t n = strlen(lit);
    /* the first byte settles most calls before memcmp */
    return n <= len - i && (n == 0 || (t[i] == lit[0] && memcmp(t + i, lit, n) == 0));
}

#define U_NBSP "\xC2\xA0"
#define U_THIN "\xE2\x80\x89"
#define U_NNBSP "\xE2\x80\xAF"
#define U_MINUS "\xE2\x88\x92"
#define U_APPROX "\xE2\x89\x88"
#define U_YUE "\xE7\xBA\xA6"
#define U_INFINITY "\xE2\x88\x9E"

/* Length of the space at t[i] (ASCII space, NBSP, thin, narrow NBSP), else 0. */
static size_t S_space_len(const char *t, size_t len, size_t i)
{
    if (i >= len)
        return 0;
    if (t[i] == ' ')
        return 1;
    if (S_has(t, len, i, U_NBSP))
        return 2;
    if (S_has(t, len, i, U_THIN) || S_has(t, len, i, U_NNBSP))
        return 3;
    return 0;
}

/* Thousands separator at t[i]: 1 ',', 2 thin space, 3 narrow NBSP; 0 none.
 * *n is its length in bytes. */
static int S_sep_kind(const char *t, size_t len, size_t i, size_t *n)
{
    if (i < len && t[i] == ',')
        return *n = 1, 1;
    if (S_has(t, len, i, U_THIN))
        return *n = 3, 2;
    if (S_has(t, len, i, U_NNBSP))
        return *n = 3, 3;
    return *n = 0, 0;
}

static int S_ascii_lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

static bool S_equal_nocase(const char *a, size_t alen, const char *b)
{
    if (strlen(b) != alen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (S_ascii_lower((unsigned char)a[i]) != S_ascii_lower((unsigned char)b[i]))
            return false;
    return true;
}

/* ---- units ---------------------------------------------------------------- */

quote_unitset *quote_units_new(void) { return xcalloc(1, sizeof(quote_unitset)); }

void quote_units_clear(quote_unitset *u) { u->n = 0; }

void quote_units_free(quote_unitset *u) { free(u); }

const char *quote_kind_name(quote_kind kind)
{
    switch (kind) {
    case QUOTE_BYTES: return "bytes";
    case QUOTE_FRACTION: return "fraction";
    case QUOTE_RATIO: return "ratio";
    case QUOTE_COUNT: return "count";
    }
    return "?";
}

static bool S_name_is(const quote_unit *unit, const char *name, size_t len)
{
    /* the first byte rules out most units; then the name ends right after
     * len equal bytes (name[len] is inside the array), without strlen */
    if (len == 0)
        return unit->name[0] == '\0';
    return unit->name[0] == name[0] && len <= QUOTE_UNIT_NAME_MAX && unit->name[len] == '\0' &&
           unit->name[len - 1] != '\0' && memcmp(unit->name, name, len) == 0;
}

const quote_unit *quote_units_find(const quote_unitset *u, const char *name, size_t len)
{
    for (size_t i = 0; i < N_BUILTIN; i++)
        if (S_name_is(&S_builtin[i], name, len))
            return &S_builtin[i];
    if (u)
        for (size_t i = 0; i < u->n; i++)
            if (S_name_is(&u->user[i], name, len))
                return &u->user[i];
    return NULL;
}

static void S_err(buf *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void S_err(buf *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(err, fmt, ap);
    va_end(ap);
}

static int S_kind_from(const char *kind, quote_kind *out)
{
    static const struct {
        const char *name;
        quote_kind kind;
    } kinds[] = {{"bytes", QUOTE_BYTES},
                 {"fraction", QUOTE_FRACTION},
                 {"ratio", QUOTE_RATIO},
                 {"count", QUOTE_COUNT}};
    for (size_t i = 0; kind && i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kind, kinds[i].name) == 0)
            return *out = kinds[i].kind, 0;
    return -1;
}

/* Whether name can follow a number in a quote without being misread. */
static int S_check_unit_name(const char *name, buf *err)
{
    size_t len = name ? strlen(name) : 0;
    const unsigned char *s = (const unsigned char *)name;
    if (len == 0)
        return S_err(err, "unit name is empty"), -1;
    if (len > QUOTE_UNIT_NAME_MAX) {
        S_err(err, "unit name too long (%zu bytes, at most %d)", len, QUOTE_UNIT_NAME_MAX);
        return -1;
    }
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = S_utf8(s, len, i, &cp);
        if (n == 0)
            return S_err(err, "unit name is not valid UTF-8"), -1;
        if (S_is_control(cp) || S_is_ascii_space((int)cp) || S_space_len(name, len, i)) {
            S_err(err, "unit name must not contain spaces or control characters");
            return -1;
        }
        i += n;
    }
    if (S_is_digit(s[0]) || s[0] == '.' || s[0] == ',' || s[0] == '+' || s[0] == '-') {
        S_err(err, "unit name \"%s\" must not start with a digit, sign or point", name);
        return -1;
    }
    if ((s[0] == 'e' || s[0] == 'E') && len > 1 && (S_is_digit(s[1]) || s[1] == '-')) {
        S_err(err, "unit name \"%s\" would read as an exponent", name);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        int c = s[i];
        bool ok = c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  S_is_digit(c) || c == '/' || c == '_' || c == '^' || c == '-';
        if (!ok) {
            S_err(err,
                  "unit name \"%s\" contains \"%c\" (allowed: letters, digits, / _ ^ - "
                  "and non-ASCII characters)",
                  name, c);
            return -1;
        }
    }
    return 0;
}

int quote_units_define(quote_unitset *u, const char *name, double scale, const char *kind,
                       buf *err)
{
    quote_kind k;
    const quote_unit *old = name && *name ? quote_units_find(u, name, strlen(name)) : NULL;
    if (old && old->builtin) {
        S_err(err, "unit \"%s\" is built in and cannot be redefined", name);
        return -1;
    }
    if (S_check_unit_name(name, err) < 0)
        return -1;
    if (S_kind_from(kind, &k) < 0) {
        bool show = kind && strlen(kind) <= 32;
        for (size_t i = 0; show && kind[i]; i++)
            show = kind[i] >= 0x20 && kind[i] < 0x7F;
        S_err(err, "unknown unit kind%s%s%s (expected bytes, fraction, ratio or count)",
              show ? " \"" : "", show ? kind : "", show ? "\"" : "");
        return -1;
    }
    if (!(scale > 0) || !isfinite(scale)) {
        S_err(err, "unit scale for \"%s\" must be a positive finite number", name);
        return -1;
    }
    if (old) {
        if (old->kind == k && old->scale == scale)
            return 0;
        S_err(err, "unit \"%s\" is already defined with a different scale or kind", name);
        return -1;
    }
    if (u->n >= QUOTE_USER_UNITS_MAX) {
        S_err(err, "too many units (at most %d may be defined)", QUOTE_USER_UNITS_MAX);
        return -1;
    }
    quote_unit *nu = &u->user[u->n++];
    memset(nu, 0, sizeof *nu);
    memcpy(nu->name, name, strlen(name) + 1);
    nu->kind = k;
    nu->scale = scale;
    return 0;
}

/* ---- parsing -------------------------------------------------------------- */

/* Appends the units that match name[0..len) ignoring ASCII case: "MB", or
 * "KB or kB". Returns how many. */
static int S_suggest(const quote_unitset *u, const char *name, size_t len, buf *out)
{
    const quote_unit *found[8];
    int n = 0;
    for (size_t i = 0; i < N_BUILTIN && n < 8; i++)
        if (S_builtin[i].name[0] && S_equal_nocase(name, len, S_builtin[i].name))
            found[n++] = &S_builtin[i];
    for (size_t i = 0; u && i < u->n && n < 8; i++)
        if (S_equal_nocase(name, len, u->user[i].name))
            found[n++] = &u->user[i];
    for (int i = 0; i < n; i++) {
        if (i > 0)
            buf_puts(out, i == n - 1 ? " or " : ", ");
        buf_puts(out, found[i]->name);
    }
    return n;
}

const quote_unit *quote_units_lookup(const quote_unitset *u, const char *name, size_t len,
                                     buf *err)
{
    const quote_unit *unit = quote_units_find(u, name, len);
    if (unit)
        return unit;
    buf sug = BUF_INIT;
    if (S_suggest(u, name, len, &sug) > 0)
        S_err(err, "unknown unit \"%.*s\" (units are case-sensitive; did you mean %s?)",
              (int)len, name, buf_cstr(&sug));
    else
        S_err(err, "unknown unit \"%.*s\"", (int)len, name);
    buf_free(&sug);
    return NULL;
}

size_t quote_units_prefix(const char *s, size_t n, const quote_unit **unit)
{
    size_t best = 0;
    for (size_t i = 0; i < N_BUILTIN; i++) {
        const quote_unit *c = &S_builtin[i];
        size_t l = strlen(c->name);
        if (c->kind == QUOTE_COUNT || l <= best || l > n || memcmp(s, c->name, l) != 0)
            continue;
        best = l;
        if (unit)
            *unit = c;
    }
    return best;
}

/* Validates the number t[p..end) (digits, separators, one point) and computes
 * its digits. Returns NULL or the reason it is malformed. */
static const char *S_number(const char *t, size_t p, size_t end, double *mantissa,
                            int *decimals)
{
    int dots = 0, sepkind = 0, ndig = 0, nsig = 0;
    size_t group = 0;
    bool first_group = true, leading_zero = false;
    double m = 0;
    *decimals = 0;
    if (t[p] == '.')
        return "a digit must come before the decimal point";
    for (size_t i = p; i < end;) {
        size_t n;
        int kind = S_sep_kind(t, end, i, &n);
        if (S_is_digit(t[i])) {
            if (ndig == 0 && t[i] == '0' && !dots)
                leading_zero = true;
            else if (!dots && leading_zero)
                return "leading zeros are not allowed";
            if (nsig > 0 || t[i] != '0')
                nsig++;
            if (nsig > QUOTE_MAX_DIGITS)
                return "more than 15 significant digits";
            m = m * 10 + (t[i] - '0');
            ndig++;
            group++;
            if (dots && ++*decimals > QUOTE_MAX_DIGITS)
                return "more than 15 decimals";
            i++;
        } else if (t[i] == '.') {
            if (++dots > 1)
                return "more than one decimal point";
            if (!first_group && group != 3)
                return "thousands groups must have 3 digits";
            i++;
        } else if (kind) {
            if (dots)
                return "thousands separators are not allowed after the decimal point";
            if (sepkind && kind != sepkind)
                return "mixed thousands separators";
            if (first_group && group > 3)
                return "the first group must have 1 to 3 digits";
            if (!first_group && group != 3)
                return "thousands groups must have 3 digits";
            sepkind = kind;
            first_group = false;
            group = 0;
            i += n;
        } else {
            return "unexpected character"; /* not reached: the caller scans */
        }
    }
    if (t[end - 1] == '.')
        return "digits must follow the decimal point";
    if (!dots && !first_group && group != 3)
        return "thousands groups must have 3 digits";
    *mantissa = m;
    return NULL;
}

/* End of the number that starts at t[p]: digits, ',', '.', and thin or narrow
 * no-break spaces that are followed by a digit (otherwise they are the space
 * before the unit). */
static size_t S_scan_number(const char *t, size_t len, size_t p)
{
    while (p < len) {
        size_t n;
        if (S_is_digit(t[p]) || t[p] == '.' || t[p] == ',')
            p++;
        else if (S_sep_kind(t, len, p, &n) && p + n < len && S_is_digit(t[p + n]))
            p += n;
        else
            break;
    }
    return p;
}

/* After a number: a quote that starts like nan or inf, else 0. */
static size_t S_nonfinite_word(const char *t, size_t len, size_t p)
{
    if (S_has(t, len, p, U_INFINITY))
        return 3;
    size_t e = p;
    while (e < len && ((t[e] >= 'a' && t[e] <= 'z') || (t[e] >= 'A' && t[e] <= 'Z')))
        e++;
    if (S_equal_nocase(t + p, e - p, "nan") || S_equal_nocase(t + p, e - p, "inf") ||
        S_equal_nocase(t + p, e - p, "infinity"))
        return e - p;
    return 0;
}

/* The common quote "480 MiB", "53.1%", "7": no mark, no sign, no separators,
 * a first digit of 1-9, at most one point, ASCII spaces before the unit. Fills
 * q's number and unit and returns true when t[0..len) is such a quote of a
 * known unit; otherwise (also for every malformed quote) false, and the
 * general parser decides, as it would decide for these too. */
static bool S_parse_plain(const char *t, size_t len, const quote_unitset *u, quote *q)
{
    if (!(t[0] >= '1' && t[0] <= '9'))
        return false;
    double m = 0;
    size_t i = 0, point = 0;
    int ndig = 0;
    for (; i < len; i++) {
        if (S_is_digit(t[i])) {
            m = m * 10 + (t[i] - '0');
            ndig++;
        } else if (t[i] == '.' && !point && i + 1 < len && S_is_digit(t[i + 1])) {
            point = i;
        } else {
            break;
        }
    }
    if (ndig > QUOTE_MAX_DIGITS)
        return false;
    size_t end = i;
    /* what could continue the number (a point, a separator, an exponent) or
     * be a space other than ASCII is the general parser's */
    if (i < len && (t[i] == '.' || t[i] == ',' || t[i] == 'e' || t[i] == 'E' ||
                    (unsigned char)t[i] == 0xC2 || (unsigned char)t[i] == 0xE2))
        return false;
    while (i < len && t[i] == ' ')
        i++;
    if (i < len && ((unsigned char)t[i] == 0xC2 || (unsigned char)t[i] == 0xE2 || S_is_digit(t[i])))
        return false;
    const quote_unit *unit = quote_units_find(u, t + i, len - i);
    if (!unit)
        return false;
    q->decimals = point ? (int)(end - point - 1) : 0;
    q->mantissa = m;
    q->number = m / S_pow10[q->decimals];
    q->spaced = i > end && unit->name[0];
    q->unit = *unit;
    return true;
}

int quote_parse(const char *s, size_t len, const quote_unitset *u, quote *out, buf *err)
{
    if (!s)
        len = 0;
    while (len > 0 && S_is_ascii_space((unsigned char)s[0]))
        s++, len--;
    while (len > 0 && S_is_ascii_space((unsigned char)s[len - 1]))
        len--;
    if (len == 0)
        return S_err(err, "empty quote"), -1;
    if (len > QUOTE_MAX_LEN) {
        S_err(err, "quote too long (%zu bytes, at most %d)", len, QUOTE_MAX_LEN);
        return -1;
    }
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7F) { /* printable ASCII: most of a quote */
            i++;
            continue;
        }
        uint32_t cp;
        size_t n = S_utf8((const unsigned char *)s, len, i, &cp);
        if (n == 0)
            return S_err(err, "invalid UTF-8 in quote"), -1;
        if (S_is_control(cp)) {
            S_err(err, "control character U+%04X in quote", (unsigned)cp);
            return -1;
        }
        i += n;
    }

    quote q;
    memset(&q, 0, sizeof q);
    memcpy(q.text, s, len);
    const char *t = q.text;
    if (S_parse_plain(t, len, u, &q)) {
        *out = q;
        return 0;
    }
    size_t p = 0;

    if (S_has(t, len, p, "~"))
        q.approx = true, p += 1;
    else if (S_has(t, len, p, U_APPROX) || S_has(t, len, p, U_YUE))
        q.approx = true, p += 3;
    if (q.approx)
        for (size_t n; (n = S_space_len(t, len, p)) > 0;)
            p += n;
    q.body = p;

    bool neg = false;
    if (S_has(t, len, p, "+") || S_has(t, len, p, "-"))
        neg = t[p] == '-', p += 1;
    else if (S_has(t, len, p, U_MINUS))
        neg = true, p += 3;

    if (p == len) {
        S_err(err, "missing number after \"%.*s\"", (int)p, t);
        return -1;
    }
    if (!S_is_digit(t[p]) && t[p] != '.') {
        size_t w = S_nonfinite_word(t, len, p);
        if (w) {
            S_err(err, "\"%.*s\" is not a finite number", (int)(p + w - q.body), t + q.body);
            return -1;
        }
        if (quote_units_find(u, t + p, len - p))
            S_err(err, "missing number before unit \"%.*s\"", (int)(len - p), t + p);
        else
            S_err(err, "expected a number, found \"%.*s\"", (int)(len - p), t + p);
        return -1;
    }

    size_t end = S_scan_number(t, len, p);
    if (end < len && (t[end] == 'e' || t[end] == 'E') && end + 1 < len &&
        (S_is_digit(t[end + 1]) || t[end + 1] == '+' || t[end + 1] == '-')) {
        size_t e = end + 2;
        while (e < len && S_is_digit(t[e]))
            e++;
        S_err(err, "malformed number \"%.*s\": exponents are not allowed", (int)(e - q.body),
              t + q.body);
        return -1;
    }
    const char *why = S_number(t, p, end, &q.mantissa, &q.decimals);
    if (why) {
        S_err(err, "malformed number \"%.*s\": %s", (int)(end - q.body), t + q.body, why);
        return -1;
    }

    size_t unit_at = end;
    for (size_t n; (n = S_space_len(t, len, unit_at)) > 0;)
        unit_at += n;
    if (unit_at < len && S_is_digit(t[unit_at])) {
        /* "234 881 024": grouped with a space that is not a separator */
        size_t e = unit_at;
        for (;;) {
            size_t n = S_space_len(t, len, e);
            if (e < len && (S_is_digit(t[e]) || t[e] == ',' || t[e] == '.'))
                e++;
            else if (n && e + n < len && S_is_digit(t[e + n]))
                e += n;
            else
                break;
        }
        S_err(err,
              "malformed number \"%.*s\": thousands must be grouped with \",\" or a thin "
              "space (U+2009)",
              (int)(e - q.body), t + q.body);
        return -1;
    }
    const quote_unit *unit = quote_units_lookup(u, t + unit_at, len - unit_at, err);
    if (!unit)
        return -1;

    q.spaced = unit_at > end && unit->name[0];
    if (neg)
        q.mantissa = -q.mantissa;
    q.number = q.mantissa / S_pow10[q.decimals];
    q.unit = *unit;
    *out = q;
    return 0;
}

/* ---- rounding and formatting ------------------------------------------------ */

/* Rounds half away from zero; a value just short of a half (see QUOTE_TIE_REL
 * in quote.h) counts as the half. */
static double S_round_half_away(double x)
{
    double a = fabs(x);
    if (!(a < 4503599627370496.0)) /* 2^52: integral already, or not finite */
        return x;
    /* floor and fmin without their calls: a is finite, below 2^52 and >= 0 */
    double n = (double)(int64_t)a;
    double tol = a * QUOTE_TIE_REL;
    if (tol > 1.0 / 1024)
        tol = 1.0 / 1024;
    if (a - n >= 0.5 - tol)
        n += 1;
    return copysign(n, x);
}

void quote_format_number(double v, int decimals, buf *out)
{
    quote_format_number_sep(v, decimals, ",", out);
}

void quote_format_number_sep(double v, int decimals, const char *sep, buf *out)
{
    size_t seplen = strlen(sep);
    if (seplen > 3)
        seplen = 3; /* the longest separator of the grammar */
    if (isnan(v)) {
        buf_puts(out, "nan");
        return;
    }
    if (isinf(v)) {
        buf_puts(out, v < 0 ? "-inf" : "inf");
        return;
    }
    if (decimals < 0)
        decimals = 0;
    if (decimals > FORMAT_MAX_DECIMALS)
        decimals = FORMAT_MAX_DECIMALS;
    double x = v * S_pow10[decimals];
    if (!isfinite(x))
        x = v, decimals = 0;
    double r = fabs(S_round_half_away(x));
    /* the text is put together from its end and appended at once: the
     * decimals (zeros first when there are fewer digits), the point, the
     * integer digits with a separator every three, the sign */
    char o[400 + 3 * (400 / 3) + FORMAT_MAX_DECIMALS + 4];
    char *end = o + sizeof o, *q = end;
    size_t dec = (size_t)decimals;
    if (r < 18446744073709551616.0) {
        /* an integral double below 2^64 is that integer exactly: its digits
         * are what %.0f prints, without printf's cost (figures call this a
         * lot), laid out as they come */
        unsigned long long u = (unsigned long long)r;
        for (size_t i = 0; i < dec; i++) {
            *--q = (char)('0' + u % 10);
            u /= 10;
        }
        if (dec > 0)
            *--q = '.';
        for (int group = 0;; group++) {
            if (group == 3) {
                q -= seplen;
                memcpy(q, sep, seplen);
                group = 0;
            }
            *--q = (char)('0' + u % 10);
            u /= 10;
            if (!u)
                break;
        }
    } else {
        /* an integral %.0f prints no decimal point and no grouping: locale-free */
        char big[400];
        int nd = snprintf(big, sizeof big, "%.0f", r);
        if (nd <= 0 || (size_t)nd >= sizeof big)
            return;
        size_t n = (size_t)nd;
        for (size_t i = 0; i < dec; i++)
            *--q = i < n ? big[n - 1 - i] : '0';
        if (dec > 0)
            *--q = '.';
        size_t nint = n > dec ? n - dec : 0;
        if (nint == 0)
            *--q = '0';
        for (size_t i = 0; i < nint; i++) {
            if (i > 0 && i % 3 == 0) {
                q -= seplen;
                memcpy(q, sep, seplen);
            }
            *--q = big[nint - 1 - i];
        }
    }
    if (r != 0 && v < 0)
        *--q = '-';
    buf_put(out, q, (size_t)(end - q));
}

/* The fewest decimals (at most 17) that show v to QUOTE_TIE_REL. */
static int S_shortest_decimals(double v)
{
    double a = fabs(v);
    if (!isfinite(a) || a == 0)
        return 0;
    if (a < 4503599627370496.0 && (double)(int64_t)a == a) /* integral: most values */
        return 0;
    for (int d = 0; d < 17; d++) {
        double x = a * S_pow10[d];
        if (!isfinite(x) || x >= 4503599627370496.0)
            return d;
        if (fabs(S_round_half_away(x) / S_pow10[d] - a) <= a * QUOTE_TIE_REL)
            return d;
    }
    return 17;
}

static void S_put_shortest(buf *out, double v) { quote_format_number(v, S_shortest_decimals(v), out); }

/* Decimals a fraction needs to show a number written in a unit of this scale:
 * 2 for % (53.1% is 0.531). */
static int S_scale_decimals(double scale)
{
    int k = 0;
    while (scale * S_pow10[k] < 1 - 1e-9 && k < 8)
        k++;
    return k;
}

/* v (in unit) with decimals, then the unit as the quote spaces it. */
static void S_put_in_unit(buf *out, const quote *q, const quote_unit *unit, double v,
                          int decimals)
{
    quote_format_number(v, decimals, out);
    if (unit->name[0]) {
        if (q->spaced)
            buf_putc(out, ' ');
        buf_puts(out, unit->name);
    }
}

/* The expression on one line and bounded, cut at a character boundary. */
static void S_put_expr(buf *out, const char *expr)
{
    if (!expr) {
        buf_puts(out, "value");
        return;
    }
    size_t len = strlen(expr);
    bool cut = len > EXPR_MAX_SHOWN;
    if (cut) {
        len = EXPR_MAX_SHOWN;
        while (len > 0 && ((unsigned char)expr[len] & 0xC0) == 0x80)
            len--;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)expr[i];
        buf_putc(out, c < 0x20 || c == 0x7F ? ' ' : c);
    }
    if (cut)
        buf_puts(out, "\xE2\x80\xA6"); /* … */
}

/* ---- checking ---------------------------------------------------------------- */

/* Does value (base units), read in a unit of this scale, agree with q? */
static bool S_passes(const quote *q, double value, double scale, bool approx, double rel_tol)
{
    if (approx) {
        double quoted = q->number * scale;
        double diff = fabs(value - quoted), tol = rel_tol * fabs(quoted);
        return diff <= tol + fabs(quoted) * QUOTE_TIE_REL;
    }
    double x = value / scale * S_pow10[q->decimals];
    if (!isfinite(x))
        return false;
    return S_round_half_away(x) == q->mantissa;
}

/* The hint of a failed check after the companion unit's: what the numbers
 * show, said without guessing which side is wrong when either could be. At
 * most one, the first that applies:
 *   a factor of 2 either way (bytes and counts: K and V);
 *   a fraction quoted without the 100 (0.281% for 0.281: did you mean 28.1%?),
 *   or, for a value above 1, a percentage returned instead of a fraction;
 *   "." written as a thousands separator (12.544 MiB for 12,544 MiB);
 *   an exact quote one last digit off: how the value rounds. */
static void S_hint(const quote *q, double value, bool approx, double rel_tol, buf *hint)
{
    const quote_unit *unit = &q->unit;
    bool countable = unit->kind == QUOTE_BYTES || unit->kind == QUOTE_COUNT;
    /* a factor of 2 only when it explains the gap: 2 KiB for 3 KiB passes
     * halved at that precision, but is nearer the value than half of it */
    double quoted = quote_from_unit(unit, q->number), gap = fabs(value - quoted);
    if (countable && fabs(value * 2 - quoted) * 4 <= gap &&
        S_passes(q, value * 2, unit->scale, approx, rel_tol)) {
        buf_puts(hint, "the quote is 2\xC3\x97 the value: the expression may miss K or V, or "
                       "the quote counts them twice");
        return;
    }
    if (countable && fabs(value / 2 - quoted) * 4 <= gap &&
        S_passes(q, value / 2, unit->scale, approx, rel_tol)) {
        buf_puts(hint, "the value is 2\xC3\x97 the quote: the quote may miss K or V, or the "
                       "expression counts them twice");
        return;
    }
    int sd = S_scale_decimals(unit->scale);
    if (unit->kind == QUOTE_FRACTION &&
        S_passes(q, value * unit->scale, unit->scale, approx, rel_tol)) {
        if (fabs(value) <= 1) {
            /* a fraction, as the expression must return: the quote lost the 100 */
            int dec = q->decimals > sd ? q->decimals - sd : 0;
            buf_puts(hint, "did you mean ");
            S_put_in_unit(hint, q, unit, quote_in_unit(unit, value), dec);
            buf_putc(hint, '?');
            return;
        }
        buf_puts(hint, "the expression must return a fraction (");
        quote_format_number(q->number * unit->scale, q->decimals + sd, hint);
        buf_printf(hint, " for %s), not ", q->text + q->body);
        if (strcmp(unit->name, "%") == 0)
            buf_puts(hint, "a percentage");
        else
            buf_printf(hint, "a number of %s", unit->name);
        return;
    }
    if (q->decimals == 3 && !approx && strchr(q->text + q->body, '.')) {
        /* 12.544 read as 12544: the European thousands separator */
        quote whole = *q;
        whole.decimals = 0;
        if (S_passes(&whole, value, unit->scale, false, 0)) {
            buf_puts(hint, "did you mean ");
            S_put_in_unit(hint, q, unit, quote_in_unit(unit, value), 0);
            buf_puts(hint, "? \".\" is the decimal point; thousands are grouped with \",\" or "
                           "a thin space");
            return;
        }
    }
    if (!approx) {
        double x = quote_in_unit(unit, value) * S_pow10[q->decimals];
        double r = S_round_half_away(x);
        if (r != 0 && x != r && fabs(r - q->mantissa) == 1) {
            double a = fabs(x);
            bool tie = fabs(a - (double)(int64_t)a - 0.5) <= fmin(a * QUOTE_TIE_REL, 1.0 / 1024);
            buf_puts(hint, "rounds to ");
            S_put_in_unit(hint, q, unit, r / S_pow10[q->decimals], q->decimals);
            if (tie)
                buf_puts(hint, " (half away from zero)");
        }
    }
}

bool quote_check(const quote *q, const char *expr, double value, bool approx, double rel_tol,
                 const quote_unitset *u, buf *msg)
{
    const quote_unit *unit = &q->unit;
    approx = approx || q->approx;
    if (!isfinite(value)) {
        if (msg) {
            buf_printf(msg, "quoted %s, but ", q->text);
            S_put_expr(msg, expr);
            buf_puts(msg, " = ");
            quote_format_number(value, 0, msg);
            buf_puts(msg, " (not a finite number)");
        }
        return false;
    }
    if (approx && !(rel_tol >= 0 && isfinite(rel_tol))) {
        if (msg)
            buf_printf(msg, "quoted %s, but the tolerance is not a non-negative finite number",
                       q->text);
        return false;
    }
    if (S_passes(q, value, unit->scale, approx, rel_tol))
        return true;
    if (!msg)
        return false;

    int decimals = q->decimals + 2;
    buf hint = BUF_INIT;
    buf_printf(msg, "quoted %s, but ", q->text);
    S_put_expr(msg, expr);
    buf_puts(msg, " = ");
    S_put_in_unit(msg, q, unit, quote_in_unit(unit, value), decimals);

    const quote_unit *comp =
        unit->companion ? quote_units_find(u, unit->companion, strlen(unit->companion)) : NULL;
    if (comp && S_passes(q, value, comp->scale, approx, rel_tol)) {
        buf_puts(msg, " (");
        S_put_in_unit(msg, q, comp, quote_in_unit(comp, value), decimals);
        buf_puts(msg, ")");
        buf_printf(&hint, "did you mean %s?", comp->name);
    }

    if (approx) {
        double quoted = quote_from_unit(unit, q->number);
        buf_puts(msg, ", ");
        if (quoted != 0) {
            quote_format_number(fabs(value - quoted) / fabs(quoted) * 100, 1, msg);
            buf_puts(msg, "% off (tolerance ");
        } else {
            buf_puts(msg, "not 0 (tolerance ");
        }
        S_put_shortest(msg, rel_tol * 100);
        buf_puts(msg, quoted != 0 ? "%)" : "% of 0)");
    }

    if (hint.len == 0)
        S_hint(q, value, approx, rel_tol, &hint);
    if (hint.len > 0)
        buf_printf(msg, "; %s", hint.ptr);
    buf_free(&hint);
    return false;
}

void quote_describe(const quote *q, double value, const quote_unitset *u, buf *out)
{
    const quote_unit *unit = &q->unit;
    (void)u; /* the quote carries its unit; u is kept for symmetry with quote_check */
    S_put_shortest(out, value);
    if (unit->scale == 1) {
        if (unit->name[0]) {
            if (q->spaced)
                buf_putc(out, ' ');
            buf_puts(out, unit->name);
        }
        return;
    }
    if (unit->kind == QUOTE_BYTES)
        buf_put(out, " B", 2);
    buf_put(out, " = ", 3);
    if (!isfinite(value)) {
        quote_format_number(value, 0, out);
        return;
    }
    S_put_in_unit(out, q, unit, quote_in_unit(unit, value), q->decimals + 1);
}

void quote_restate(const quote *q, double value, int decimals, buf *out)
{
    const char *t = q->text;
    size_t len = strlen(t), p = q->body;
    const char *sign = NULL;
    if (S_has(t, len, p, "+") || S_has(t, len, p, "-"))
        sign = t[p] == '+' ? "+" : "-", p += 1;
    else if (S_has(t, len, p, U_MINUS))
        sign = U_MINUS, p += 3;
    size_t end = S_scan_number(t, len, p);
    const char *sep = "";
    for (size_t i = p, n; i < end && !*sep; i++)
        if (S_sep_kind(t, end, i, &n))
            sep = t[i] == ',' ? "," : S_has(t, end, i, U_THIN) ? U_THIN : U_NNBSP;
    if (decimals < 0)
        decimals = 0;
    if (decimals > FORMAT_MAX_DECIMALS)
        decimals = FORMAT_MAX_DECIMALS;
    double x = quote_in_unit(&q->unit, value);
    if (!isfinite(x)) {
        quote_format_number(x, 0, out);
    } else {
        double scaled = fabs(x) * S_pow10[decimals];
        bool negative = x < 0 && (!isfinite(scaled) || S_round_half_away(scaled) != 0);
        /* the quote's own minus (- or U+2212); a + stays on a positive value */
        if (negative)
            buf_puts(out, sign && strcmp(sign, "+") ? sign : "-");
        else if (sign && !strcmp(sign, "+"))
            buf_putc(out, '+');
        quote_format_number_sep(fabs(x), decimals, sep, out);
    }
    buf_put(out, t + end, len - end);
}
