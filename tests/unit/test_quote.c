/* Unit tests for gen/quote.c: grammar, units, rounding, messages and hints. */
#include <float.h>
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
#include "quote.h"

#define KIB 1024.0
#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)
#define TIB (1024.0 * GIB)
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* 2 x 80 layers x 8 KV heads x 128 x 131072 tokens x 2 bytes (Llama 70B, FP16) */
#define LLAMA70B_128K (2.0 * 80 * 8 * 128 * 131072 * 2)
#define THIN "\xE2\x80\x89"
#define NNBSP "\xE2\x80\xAF"
#define NBSP "\xC2\xA0"

static quote S_parse_ok(const quote_unitset *u, const char *s)
{
    quote q;
    buf err = BUF_INIT;
    int rc = quote_parse(s, strlen(s), u, &q, &err);
    if (rc != 0)
        print_error("parse \"%s\": %s\n", s, buf_cstr(&err));
    assert_int_equal(rc, 0);
    assert_int_equal(err.len, 0);
    buf_free(&err);
    return q;
}

/* ---- parsing -------------------------------------------------------------- */

typedef struct {
    const char *in;
    double number, mantissa;
    int decimals;
    const char *unit;
    quote_kind kind;
    bool approx, spaced;
    const char *text;
    size_t body;
} parse_case;

static const parse_case S_parse_cases[] = {
    {"224 MiB", 224, 224, 0, "MiB", QUOTE_BYTES, false, true, "224 MiB", 0},
    /* the plain form the parser reads first, and its edges */
    {"480MiB", 480, 480, 0, "MiB", QUOTE_BYTES, false, false, "480MiB", 0},
    {"480   MiB", 480, 480, 0, "MiB", QUOTE_BYTES, false, true, "480   MiB", 0},
    {"123456789012345", 123456789012345.0, 123456789012345.0, 0, "", QUOTE_COUNT, false, false,
     "123456789012345", 0},
    {"1.00000000000001", 1.00000000000001, 100000000000001.0, 14, "", QUOTE_COUNT, false, false,
     "1.00000000000001", 0},
    {"7 \xC3\x97", 7, 7, 0, "\xC3\x97", QUOTE_RATIO, false, true, "7 \xC3\x97", 0},
    {"0.06 GiB", 0.06, 6, 2, "GiB", QUOTE_BYTES, false, true, "0.06 GiB", 0},
    {"12.25 GiB", 12.25, 1225, 2, "GiB", QUOTE_BYTES, false, true, "12.25 GiB", 0},
    {"2 TiB", 2, 2, 0, "TiB", QUOTE_BYTES, false, true, "2 TiB", 0},
    {"4 KiB", 4, 4, 0, "KiB", QUOTE_BYTES, false, true, "4 KiB", 0},
    {"117.4 MB", 117.4, 1174, 1, "MB", QUOTE_BYTES, false, true, "117.4 MB", 0},
    {"3 KB", 3, 3, 0, "KB", QUOTE_BYTES, false, true, "3 KB", 0},
    {"3 kB", 3, 3, 0, "kB", QUOTE_BYTES, false, true, "3 kB", 0},
    {"40 GB", 40, 40, 0, "GB", QUOTE_BYTES, false, true, "40 GB", 0},
    {"1.5 TB", 1.5, 15, 1, "TB", QUOTE_BYTES, false, true, "1.5 TB", 0},
    {"512 B", 512, 512, 0, "B", QUOTE_BYTES, false, true, "512 B", 0},
    {"8.5 bit", 8.5, 85, 1, "bit", QUOTE_BYTES, false, true, "8.5 bit", 0},
    {"16 bits", 16, 16, 0, "bits", QUOTE_BYTES, false, true, "16 bits", 0},
    {"53.1%", 53.1, 531, 1, "%", QUOTE_FRACTION, false, false, "53.1%", 0},
    {"7\xC3\x97", 7, 7, 0, "\xC3\x97", QUOTE_RATIO, false, false, "7\xC3\x97", 0},
    {"7.03x", 7.03, 703, 2, "x", QUOTE_RATIO, false, false, "7.03x", 0},
    {"7\xE5\x80\x8D", 7, 7, 0, "\xE5\x80\x8D", QUOTE_RATIO, false, false, "7\xE5\x80\x8D", 0},
    {"7", 7, 7, 0, "", QUOTE_COUNT, false, false, "7", 0},
    {"  7 \t\n", 7, 7, 0, "", QUOTE_COUNT, false, false, "7", 0},
    {"1.005", 1.005, 1005, 3, "", QUOTE_COUNT, false, false, "1.005", 0},
    {"0", 0, 0, 0, "", QUOTE_COUNT, false, false, "0", 0},
    {"234,881,024 B", 234881024, 234881024, 0, "B", QUOTE_BYTES, false, true, "234,881,024 B", 0},
    {"234" THIN "881" THIN "024 B", 234881024, 234881024, 0, "B", QUOTE_BYTES, false, true,
     "234" THIN "881" THIN "024 B", 0},
    {"1" NNBSP "234" NNBSP "kB", 1234, 1234, 0, "kB", QUOTE_BYTES, false, true,
     "1" NNBSP "234" NNBSP "kB", 0},
    {"1,234.50 TB", 1234.5, 123450, 2, "TB", QUOTE_BYTES, false, true, "1,234.50 TB", 0},
    {"40" NBSP "GB", 40, 40, 0, "GB", QUOTE_BYTES, false, true, "40" NBSP "GB", 0},
    {"40GB", 40, 40, 0, "GB", QUOTE_BYTES, false, false, "40GB", 0},
    {"+5 B", 5, 5, 0, "B", QUOTE_BYTES, false, true, "+5 B", 0},
    {"-5 B", -5, -5, 0, "B", QUOTE_BYTES, false, true, "-5 B", 0},
    {"\xE2\x88\x92" "5%", -5, -5, 0, "%", QUOTE_FRACTION, false, false, "\xE2\x88\x92" "5%", 0},
    {"-0.25", -0.25, -25, 2, "", QUOTE_COUNT, false, false, "-0.25", 0},
    {"~40 GB", 40, 40, 0, "GB", QUOTE_BYTES, true, true, "~40 GB", 1},
    {"~ 40 GB", 40, 40, 0, "GB", QUOTE_BYTES, true, true, "~ 40 GB", 2},
    {"\xE2\x89\x88" "40 GB", 40, 40, 0, "GB", QUOTE_BYTES, true, true, "\xE2\x89\x88" "40 GB", 3},
    {"\xE7\xBA\xA6" "40 GB", 40, 40, 0, "GB", QUOTE_BYTES, true, true, "\xE7\xBA\xA6" "40 GB", 3},
    {"\xE2\x89\x88" NBSP "-3%", -3, -3, 0, "%", QUOTE_FRACTION, true, false,
     "\xE2\x89\x88" NBSP "-3%", 5},
    {"999,999,999,999,999", 999999999999999.0, 999999999999999.0, 0, "", QUOTE_COUNT, false,
     false, "999,999,999,999,999", 0},
    {"0.000000000000001", 1e-15, 1, 15, "", QUOTE_COUNT, false, false, "0.000000000000001", 0},
    {"1000000 B", 1e6, 1e6, 0, "B", QUOTE_BYTES, false, true, "1000000 B", 0},
};

static void test_parse_ok(void **state)
{
    (void)state;
    quote_unitset *u = quote_units_new();
    for (size_t i = 0; i < N(S_parse_cases); i++) {
        const parse_case *c = &S_parse_cases[i];
        quote q = S_parse_ok(u, c->in);
        assert_string_equal(q.text, c->text);
        assert_true(q.number == c->number);
        assert_true(q.mantissa == c->mantissa);
        assert_int_equal(q.decimals, c->decimals);
        assert_string_equal(q.unit.name, c->unit);
        assert_int_equal(q.unit.kind, c->kind);
        assert_int_equal(q.approx, c->approx);
        assert_int_equal(q.spaced, c->spaced);
        assert_int_equal(q.body, c->body);
    }
    quote_units_free(u);
}

/* Built-in unit table: name, kind, scale, companion. */
static void test_builtin_units(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        quote_kind kind;
        double scale;
        const char *companion;
    } units[] = {
        {"", QUOTE_COUNT, 1, NULL},        {"B", QUOTE_BYTES, 1, NULL},
        {"KB", QUOTE_BYTES, 1e3, "KiB"},   {"kB", QUOTE_BYTES, 1e3, "KiB"},
        {"MB", QUOTE_BYTES, 1e6, "MiB"},   {"GB", QUOTE_BYTES, 1e9, "GiB"},
        {"TB", QUOTE_BYTES, 1e12, "TiB"},  {"KiB", QUOTE_BYTES, KIB, "KB"},
        {"MiB", QUOTE_BYTES, MIB, "MB"},   {"GiB", QUOTE_BYTES, GIB, "GB"},
        {"TiB", QUOTE_BYTES, TIB, "TB"},   {"bit", QUOTE_BYTES, 0.125, NULL},
        {"bits", QUOTE_BYTES, 0.125, NULL}, {"%", QUOTE_FRACTION, 0.01, NULL},
        {"\xC3\x97", QUOTE_RATIO, 1, NULL}, {"x", QUOTE_RATIO, 1, NULL},
        {"\xE5\x80\x8D", QUOTE_RATIO, 1, NULL},
    };
    for (size_t i = 0; i < N(units); i++) {
        const quote_unit *un = quote_units_find(NULL, units[i].name, strlen(units[i].name));
        assert_non_null(un);
        assert_string_equal(un->name, units[i].name);
        assert_int_equal(un->kind, units[i].kind);
        assert_true(un->scale == units[i].scale);
        assert_true(un->builtin);
        if (units[i].companion)
            assert_string_equal(un->companion, units[i].companion);
        else
            assert_null(un->companion);
    }
    static const char *not_units[] = {"mb", "gb", "Gib", "GIB", "PB", "b", "X", "bytes"};
    for (size_t i = 0; i < N(not_units); i++)
        assert_null(quote_units_find(NULL, not_units[i], strlen(not_units[i])));
    /* prefixes and extensions of a unit's name, and names longer than any */
    assert_null(quote_units_find(NULL, "M", 1));
    assert_null(quote_units_find(NULL, "Mi", 2));
    assert_null(quote_units_find(NULL, "MiBs", 4));
    assert_null(quote_units_find(NULL, "MB\0", 3));
    assert_string_equal(quote_units_find(NULL, "bits", 3)->name, "bit");
    assert_string_equal(quote_units_find(NULL, "MiB and more", 3)->name, "MiB");
    assert_null(quote_units_find(NULL, "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB", 32));
    assert_string_equal(quote_kind_name(QUOTE_BYTES), "bytes");
    assert_string_equal(quote_kind_name(QUOTE_FRACTION), "fraction");
    assert_string_equal(quote_kind_name(QUOTE_RATIO), "ratio");
    assert_string_equal(quote_kind_name(QUOTE_COUNT), "count");
}

typedef struct {
    const char *in;
    size_t len; /* 0: strlen(in) */
    const char *msg;
} parse_error_case;

static const char S_long[] = "1111111111111111111111111111111111111111111111111111111111111111 B";

static const parse_error_case S_parse_errors[] = {
    {"1,23", 0, "malformed number \"1,23\": thousands groups must have 3 digits"},
    {"1,23.4", 0, "malformed number \"1,23.4\": thousands groups must have 3 digits"},
    {"-1,2345 B", 0, "malformed number \"-1,2345\": thousands groups must have 3 digits"},
    {"1,234,", 0, "malformed number \"1,234,\": thousands groups must have 3 digits"},
    {"1234,567", 0, "malformed number \"1234,567\": the first group must have 1 to 3 digits"},
    {"1,234" THIN "567", 0, "malformed number \"1,234" THIN "567\": mixed thousands separators"},
    {"1.234,5", 0,
     "malformed number \"1.234,5\": thousands separators are not allowed after the decimal "
     "point"},
    {"12..3", 0, "malformed number \"12..3\": more than one decimal point"},
    {".5 GB", 0, "malformed number \".5\": a digit must come before the decimal point"},
    {"5. GB", 0, "malformed number \"5.\": digits must follow the decimal point"},
    {"007", 0, "malformed number \"007\": leading zeros are not allowed"},
    {"0,123 B", 0, "malformed number \"0,123\": leading zeros are not allowed"},
    {"1234567890123456", 0,
     "malformed number \"1234567890123456\": more than 15 significant digits"},
    {"0.0000000000000001", 0, "malformed number \"0.0000000000000001\": more than 15 decimals"},
    {"1e9 B", 0, "malformed number \"1e9\": exponents are not allowed"},
    {"~2.5E-3", 0, "malformed number \"2.5E-3\": exponents are not allowed"},
    {"234 881 024 B", 0,
     "malformed number \"234 881 024\": thousands must be grouped with \",\" or a thin space "
     "(U+2009)"},
    {"GB", 0, "missing number before unit \"GB\""},
    {"~%", 0, "missing number before unit \"%\""},
    {"", 0, "empty quote"},
    {" \t\n ", 0, "empty quote"},
    {"~", 0, "missing number after \"~\""},
    {"\xE2\x88\x92", 0, "missing number after \"\xE2\x88\x92\""},
    {"~~5", 0, "expected a number, found \"~5\""},
    {"mb", 0, "expected a number, found \"mb\""},
    {"40 gb", 0, "unknown unit \"gb\" (units are case-sensitive; did you mean GB?)"},
    {"40 mb", 0, "unknown unit \"mb\" (units are case-sensitive; did you mean MB?)"},
    {"40 gib", 0, "unknown unit \"gib\" (units are case-sensitive; did you mean GiB?)"},
    {"40 kb", 0, "unknown unit \"kb\" (units are case-sensitive; did you mean KB or kB?)"},
    {"40 PB", 0, "unknown unit \"PB\""},
    {"40 GB extra", 0, "unknown unit \"GB extra\""},
    {"nan", 0, "\"nan\" is not a finite number"},
    {"NaN GB", 0, "\"NaN\" is not a finite number"},
    {"-inf", 0, "\"-inf\" is not a finite number"},
    {"~Infinity %", 0, "\"Infinity\" is not a finite number"},
    {"\xE2\x88\x9E", 0, "\"\xE2\x88\x9E\" is not a finite number"},
    {S_long, 0, "quote too long (66 bytes, at most 64)"},
    {"4\x01 GB", 0, "control character U+0001 in quote"},
    {"40\tGB", 0, "control character U+0009 in quote"},
    {"4\0 GB", 5, "control character U+0000 in quote"},
    {"40 GB\x7f", 0, "control character U+007F in quote"},
    {"40 \xC2\x85GB", 0, "control character U+0085 in quote"},
    {"40\xE2\x80\xAEGB", 0, "control character U+202E in quote"},
    {"4\xE2\x80\x8B" "0 GB", 0, "control character U+200B in quote"},
    {"40 \xff", 0, "invalid UTF-8 in quote"},
    {"40 \xC0\xAF", 0, "invalid UTF-8 in quote"},
    {"40 \xED\xA0\x80", 0, "invalid UTF-8 in quote"},
    {"40 \xE2\x80", 0, "invalid UTF-8 in quote"},
};

static void test_parse_errors(void **state)
{
    (void)state;
    quote_unitset *u = quote_units_new();
    for (size_t i = 0; i < N(S_parse_errors); i++) {
        const parse_error_case *c = &S_parse_errors[i];
        quote q;
        memset(&q, 0x5a, sizeof q);
        buf err = BUF_INIT;
        size_t len = c->len ? c->len : strlen(c->in);
        assert_int_equal(quote_parse(c->in, len, u, &q, &err), -1);
        assert_string_equal(buf_cstr(&err), c->msg);
        assert_int_equal(q.decimals, 0x5a5a5a5a); /* *out untouched on failure */
        buf_free(&err);
    }
    quote_units_free(u);
}

static void test_parse_bounds(void **state)
{
    (void)state;
    quote q;
    buf err = BUF_INIT;
    /* exactly QUOTE_MAX_LEN bytes is fine */
    char s64[QUOTE_MAX_LEN + 1];
    memset(s64, ' ', sizeof s64);
    memcpy(s64, "7", 1);
    memcpy(s64 + QUOTE_MAX_LEN - 3, "MiB", 3);
    s64[QUOTE_MAX_LEN] = '\0';
    memcpy(s64 + 1, NBSP, 2); /* the run of spaces between starts with a non-ASCII one */
    assert_int_equal(quote_parse(s64, QUOTE_MAX_LEN, NULL, &q, &err), 0);
    assert_string_equal(q.unit.name, "MiB");

    /* a huge input is refused by length, surrounding ASCII whitespace is not counted */
    size_t big = 1u << 20;
    char *s = xmalloc(big);
    memset(s, ' ', big);
    memcpy(s + big / 2, "7 GB", 4);
    assert_int_equal(quote_parse(s, big, NULL, &q, &err), 0);
    assert_string_equal(q.text, "7 GB");
    memset(s + big / 2, '7', 100);
    assert_int_equal(quote_parse(s, big, NULL, &q, &err), -1);
    assert_string_equal(buf_cstr(&err), "quote too long (100 bytes, at most 64)");
    free(s);

    /* NULL input and NULL err are allowed */
    buf_clear(&err);
    assert_int_equal(quote_parse(NULL, 5, NULL, &q, &err), -1);
    assert_string_equal(buf_cstr(&err), "empty quote");
    assert_int_equal(quote_parse("GB", 2, NULL, &q, NULL), -1);

    /* not NUL-terminated: only len bytes are read */
    char raw[] = {'4', '0', ' ', 'G', 'B', 'X'};
    assert_int_equal(quote_parse(raw, 5, NULL, &q, NULL), 0);
    assert_string_equal(q.text, "40 GB");

    /* err is appended to, not replaced */
    buf_clear(&err);
    buf_puts(&err, "p.md: ");
    assert_int_equal(quote_parse("", 0, NULL, &q, &err), -1);
    assert_string_equal(buf_cstr(&err), "p.md: empty quote");
    buf_free(&err);
}

/* ---- checking ------------------------------------------------------------- */

typedef struct {
    const char *quote;
    const char *expr;
    double value;
    bool approx;
    double rel_tol;
    const char *msg; /* NULL: passes */
} check_case;

static const check_case S_checks[] = {
    /* every unit, passing */
    {"224 MiB", "kv.bytes(qwen, 4096)", 234881024, false, 0, NULL},
    {"0.06 GiB", "E", 2.0 * 32 * 1 * 128 * 4096 * 2, false, 0, NULL}, /* 0.0625 GiB */
    {"12.25 GiB", "E", 12.25 * GIB, false, 0, NULL},
    {"2 TiB", "E", 2 * TIB, false, 0, NULL},
    {"4 KiB", "E", 4096, false, 0, NULL},
    {"117.4 MB", "E", 117440512, false, 0, NULL},
    {"40 GiB", "E", LLAMA70B_128K, false, 0, NULL},
    {"42.9 GB", "E", LLAMA70B_128K, false, 0, NULL},
    {"43 GB", "E", LLAMA70B_128K, false, 0, NULL},
    {"3 KB", "E", 3499, false, 0, NULL},
    {"3 kB", "E", 2500, false, 0, NULL},
    {"1.5 TB", "E", 1.54e12, false, 0, NULL},
    {"512 B", "E", 512.4, false, 0, NULL},
    {"8.5 bit", "E", 1.0625, false, 0, NULL},
    {"16 bits", "E", 2, false, 0, NULL},
    {"53.1%", "34/64", 34.0 / 64, false, 0, NULL},
    {"28.1%", "18/64", 18.0 / 64, false, 0, NULL},
    {"7\xC3\x97", "E", 7, false, 0, NULL},
    {"7.03x", "E", 7.03125, false, 0, NULL},
    {"7\xE5\x80\x8D", "E", 7.03, false, 0, NULL},
    {"7", "E", 7.2, false, 0, NULL},
    {"234,881,024 B", "E", 234881024, false, 0, NULL},
    {"234" THIN "881" THIN "024 B", "E", 234881024, false, 0, NULL},
    {"+5 B", "E", 5, false, 0, NULL},
    {"-5 B", "E", -5, false, 0, NULL},
    {"\xE2\x88\x92" "5%", "E", -0.05, false, 0, NULL},
    {"0 B", "E", 0.4, false, 0, NULL},
    {"-0", "E", 0, false, 0, NULL},
    /* rounding edges: half away from zero, halves that binary cannot hold */
    {"0.13", "E", 0.125, false, 0, NULL},
    {"0.12", "E", 0.125, false, 0, "quoted 0.12, but E = 0.1250; rounds to 0.13 (half away from zero)"},
    {"-0.13", "E", -0.125, false, 0, NULL},
    {"-0.12", "E", -0.125, false, 0, "quoted -0.12, but E = -0.1250; rounds to -0.13 (half away from zero)"},
    {"1.01", "E", 1.005, false, 0, NULL},
    {"1.00", "E", 1.005, false, 0, "quoted 1.00, but E = 1.0050; rounds to 1.01 (half away from zero)"},
    {"3", "E", 2.5, false, 0, NULL},
    {"2", "E", 2.5, false, 0, "quoted 2, but E = 2.50; rounds to 3 (half away from zero)"},
    {"2", "E", 2.4999, false, 0, NULL},
    {"224 MiB", "E", 223.5 * MIB, false, 0, NULL},
    {"224 MiB", "E", 224.49 * MIB, false, 0, NULL},
    {"225 MiB", "E", 224.5 * MIB, false, 0, NULL},
    {"224 MiB", "E", 224.5 * MIB, false, 0, "quoted 224 MiB, but E = 224.50 MiB; rounds to 225 MiB (half away from zero)"},
    {"224 MiB", "E", 223.49 * MIB, false, 0, "quoted 224 MiB, but E = 223.49 MiB; rounds to 223 MiB"},
    {"53.1%", "E", 0.5315, false, 0, "quoted 53.1%, but E = 53.150%; rounds to 53.2% (half away from zero)"},
    {"53.2%", "E", 0.5315, false, 0, NULL},
    {"53.1%", "E", 0.5305, false, 0, NULL},
    /* exact failures and their hints */
    {"25%", "18/32/2", 18.0 / 32 / 2, false, 0, "quoted 25%, but 18/32/2 = 28.13%"},
    {"40 GB", "kv.bytes(llama70b, 131072)", LLAMA70B_128K, false, 0,
     "quoted 40 GB, but kv.bytes(llama70b, 131072) = 42.95 GB (40.00 GiB); did you mean GiB?"},
    {"40GB", "E", LLAMA70B_128K, false, 0,
     "quoted 40GB, but E = 42.95GB (40.00GiB); did you mean GiB?"},
    {"42.95 GiB", "E", LLAMA70B_128K, false, 0,
     "quoted 42.95 GiB, but E = 40.0000 GiB (42.9497 GB); did you mean GB?"},
    {"224 MB", "E", 234881024, false, 0,
     "quoted 224 MB, but E = 234.88 MB (224.00 MiB); did you mean MiB?"},
    {"4 KiB", "E", 3500, false, 0,
     "quoted 4 KiB, but E = 3.42 KiB (3.50 KB); did you mean KB?"},
    {"4 kB", "E", 4500, false, 0,
     "quoted 4 kB, but E = 4.50 kB (4.39 KiB); did you mean KiB?"},
    {"2.0 TB", "E", 2 * TIB, false, 0,
     "quoted 2.0 TB, but E = 2.199 TB (2.000 TiB); did you mean TiB?"},
    {"448 MiB", "E", 234881024, false, 0,
     "quoted 448 MiB, but E = 224.00 MiB; the quote is 2\xC3\x97 the value: the expression "
     "may miss K or V, or the quote counts them twice"},
    {"112 MiB", "E", 234881024, false, 0,
     "quoted 112 MiB, but E = 224.00 MiB; the value is 2\xC3\x97 the quote: the quote may "
     "miss K or V, or the expression counts them twice"},
    {"14", "E", 7, false, 0,
     "quoted 14, but E = 7.00; the quote is 2\xC3\x97 the value: the expression may miss K "
     "or V, or the quote counts them twice"},
    {"53.1%", "E", 53.1, false, 0,
     "quoted 53.1%, but E = 5,310.000%; the expression must return a fraction (0.531 for "
     "53.1%), not a percentage"},
    {"\xE2\x88\x92" "5%", "E", -5, false, 0,
     "quoted \xE2\x88\x92" "5%, but E = -500.00%; the expression must return a fraction (-0.05 "
     "for \xE2\x88\x92" "5%), not a percentage"},
    {"\xE2\x88\x92" "5%", "E", 0.05, false, 0, "quoted \xE2\x88\x92" "5%, but E = 5.00%"},
    {"50%", "E", 0.25, false, 0, "quoted 50%, but E = 25.00%"}, /* no factor 2 for fractions */
    {"7\xC3\x97", "E", 3.5, false, 0, "quoted 7\xC3\x97, but E = 3.50\xC3\x97"},
    {"234,881,025 B", "E", 234881024, false, 0,
     "quoted 234,881,025 B, but E = 234,881,024.00 B"},
    {"8.5 bit", "E", 8.5, false, 0, "quoted 8.5 bit, but E = 68.000 bit"},
    /* issue 20: the quote side of percent, rounding, the European separator */
    {"0.281%", "E", 0.281, false, 0, "quoted 0.281%, but E = 28.10000%; did you mean 28.1%?"},
    {"2 KiB", "E", 3 * 1024, false, 0, "quoted 2 KiB, but E = 3.00 KiB"}, /* not a factor 2 */
    {"0.5 %", "E", 0.5, false, 0, "quoted 0.5 %, but E = 50.000 %; did you mean 50 %?"},
    {"12.2 GiB", "E", 12.25 * GIB, false, 0,
     "quoted 12.2 GiB, but E = 12.250 GiB; rounds to 12.3 GiB (half away from zero)"},
    {"12.2 GiB", "E", 12.27 * GIB, false, 0, "quoted 12.2 GiB, but E = 12.270 GiB; rounds to 12.3 GiB"},
    {"12.2 GiB", "E", 12.36 * GIB, false, 0, "quoted 12.2 GiB, but E = 12.360 GiB"},
    {"12.544 MiB", "E", 12544 * MIB, false, 0,
     "quoted 12.544 MiB, but E = 12,544.00000 MiB; did you mean 12,544 MiB? \".\" is the decimal "
     "point; thousands are grouped with \",\" or a thin space"},
    {"1.234", "E", 1234, false, 0,
     "quoted 1.234, but E = 1,234.00000; did you mean 1,234? \".\" is the decimal point; "
     "thousands are grouped with \",\" or a thin space"},
    /* approximate: by the mark or by the caller */
    {"~40 GB", "E", 41.9e9, false, 0.05, NULL},
    {"~40 GB", "E", 38.1e9, false, 0.05, NULL},
    {"40 GB", "E", 42e9, true, 0.05, NULL},
    {"~40 GB", "E", 42e9, false, 0.05, NULL}, /* exactly at the tolerance */
    {"\xE7\xBA\xA6" "40 GB", "E", 43e9, false, 0.1, NULL},
    {"~40 GB", "E", 45.1e9, false, 0.05, "quoted ~40 GB, but E = 45.10 GB, 12.8% off (tolerance 5%)"},
    {"~40 GB", "E", 42.9e9, false, 0.05,
     "quoted ~40 GB, but E = 42.90 GB (39.95 GiB), 7.3% off (tolerance 5%); did you mean GiB?"},
    {"\xE2\x89\x88" "40 GB", "E", 42.95e9, false, 0.05,
     "quoted \xE2\x89\x88" "40 GB, but E = 42.95 GB (40.00 GiB), 7.4% off (tolerance 5%); did "
     "you mean GiB?"},
    {"40 GB", "E", 50e9, true, 0.025, "quoted 40 GB, but E = 50.00 GB, 25.0% off (tolerance 2.5%)"},
    {"~40 GB", "E", 20e9, false, 0.05,
     "quoted ~40 GB, but E = 20.00 GB, 50.0% off (tolerance 5%); the quote is 2\xC3\x97 the "
     "value: the expression may miss K or V, or the quote counts them twice"},
    {"~53%", "E", 53, false, 0.05,
     "quoted ~53%, but E = 5,300.00%, 9,900.0% off (tolerance 5%); the expression must return "
     "a fraction (0.53 for 53%), not a percentage"},
    {"~0 B", "E", 1, false, 0.05, "quoted ~0 B, but E = 1.00 B, not 0 (tolerance 5% of 0)"},
    {"~0 B", "E", 0, false, 0.05, NULL},
    /* values and tolerances that are not numbers */
    {"40 GB", "E", NAN, false, 0, "quoted 40 GB, but E = nan (not a finite number)"},
    {"40 GB", "E", INFINITY, false, 0, "quoted 40 GB, but E = inf (not a finite number)"},
    {"~40 GB", "E", -INFINITY, false, 0.05, "quoted ~40 GB, but E = -inf (not a finite number)"},
    {"~40 GB", "E", 40e9, false, -0.05,
     "quoted ~40 GB, but the tolerance is not a non-negative finite number"},
    {"40 GB", "E", 40e9, true, NAN,
     "quoted 40 GB, but the tolerance is not a non-negative finite number"},
    /* the expression is shown on one line */
    {"1", "a\nb\tc", 2, false, 0, "quoted 1, but a b c = 2.00; the value is 2\xC3\x97 the quote: "
                                  "the quote may miss K or V, or the expression counts them twice"},
    {"1", NULL, 3, false, 0, "quoted 1, but value = 3.00"},
};

static void test_check(void **state)
{
    (void)state;
    quote_unitset *u = quote_units_new();
    for (size_t i = 0; i < N(S_checks); i++) {
        const check_case *c = &S_checks[i];
        quote q = S_parse_ok(u, c->quote);
        buf msg = BUF_INIT;
        bool ok = quote_check(&q, c->expr, c->value, c->approx, c->rel_tol, u, &msg);
        if (ok != (c->msg == NULL) || (c->msg && strcmp(buf_cstr(&msg), c->msg) != 0))
            print_error("case %zu: quote \"%s\" value %.17g: got %s \"%s\"\n", i, c->quote,
                        c->value, ok ? "pass" : "fail", buf_cstr(&msg));
        assert_int_equal(ok, c->msg == NULL);
        assert_string_equal(buf_cstr(&msg), c->msg ? c->msg : "");
        /* NULL msg gives the same verdict */
        assert_int_equal(quote_check(&q, c->expr, c->value, c->approx, c->rel_tol, u, NULL), ok);
        buf_free(&msg);
    }
    quote_units_free(u);
}

/* Huge values print in full, with separators, and no hint is invented. */
static void test_check_huge(void **state)
{
    (void)state;
    quote q = S_parse_ok(NULL, "40 GB");
    buf msg = BUF_INIT;
    assert_false(quote_check(&q, "E", DBL_MAX, false, 0, NULL, &msg));
    assert_memory_equal(msg.ptr, "quoted 40 GB, but E = 179,769,313,486,231,5", 43);
    /* 300 integer digits with 99 commas, then .dd GB */
    assert_int_equal(msg.len, 22 + 300 + 99 + 3 + 3);
    assert_int_equal(msg.ptr[msg.len - 6], '.');
    assert_string_equal(msg.ptr + msg.len - 3, " GB");
    buf_free(&msg);
}

static void test_check_long_expr(void **state)
{
    (void)state;
    char expr[300];
    memset(expr, 'a', sizeof expr - 1);
    expr[sizeof expr - 1] = '\0';
    memcpy(expr + 198, "\xC3\x97", 2); /* a two-byte character across the cut */
    quote q = S_parse_ok(NULL, "1");
    buf msg = BUF_INIT;
    assert_false(quote_check(&q, expr, 3, false, 0, NULL, &msg));
    buf want = BUF_INIT;
    buf_puts(&want, "quoted 1, but ");
    buf_put(&want, expr, 200);
    buf_puts(&want, "\xE2\x80\xA6 = 3.00");
    assert_string_equal(buf_cstr(&msg), buf_cstr(&want));
    memcpy(expr + 199, "\xC3\x97", 2);
    buf_clear(&msg);
    buf_clear(&want);
    assert_false(quote_check(&q, expr, 3, false, 0, NULL, &msg));
    buf_puts(&want, "quoted 1, but ");
    buf_put(&want, expr, 199);
    buf_puts(&want, "\xE2\x80\xA6 = 3.00");
    assert_string_equal(buf_cstr(&msg), buf_cstr(&want));
    buf_free(&msg);
    buf_free(&want);
}

/* ---- describe and format ---------------------------------------------------- */

typedef struct {
    const char *quote;
    double value;
    const char *want;
} describe_case;

static const describe_case S_describes[] = {
    {"224 MiB", 234881024, "234,881,024 B = 224.0 MiB"},
    {"53%", 17.0 / 32, "0.53125 = 53.1%"},
    {"53.1%", 17.0 / 32, "0.53125 = 53.13%"},
    {"7", 7, "7"},
    {"7", 7.0003, "7.0003"},
    {"7\xC3\x97", 7.03125, "7.03125\xC3\x97"},
    {"8.5 bit", 1.0625, "1.0625 B = 8.50 bit"},
    {"234,881,024 B", 234881024, "234,881,024 B"},
    {"40 GiB", LLAMA70B_128K, "42,949,672,960 B = 40.0 GiB"},
    {"0.06 GiB", 67108864, "67,108,864 B = 0.063 GiB"},
    {"~40 GB", 41.9e9, "41,900,000,000 B = 41.9 GB"},
    {"40GB", 40e9, "40,000,000,000 B = 40.0GB"},
    {"\xE2\x88\x92" "5%", -0.05, "-0.05 = -5.0%"},
    {"0.33", 1.0 / 3, "0.333333333333"},
    {"33.3%", 1.0 / 3, "0.333333333333 = 33.33%"},
    {"1 GB", NAN, "nan B = nan"},
    {"1 B", 4503599627370497.0, "4,503,599,627,370,497 B"},
    {"0.5 B", 0.5, "0.5 B"},
    {"1 GB", -1e9, "-1,000,000,000 B = -1.0 GB"},
};

static void test_describe(void **state)
{
    (void)state;
    quote_unitset *u = quote_units_new();
    for (size_t i = 0; i < N(S_describes); i++) {
        quote q = S_parse_ok(u, S_describes[i].quote);
        buf out = BUF_INIT;
        quote_describe(&q, S_describes[i].value, u, &out);
        assert_string_equal(buf_cstr(&out), S_describes[i].want);
        buf_free(&out);
    }
    quote_units_free(u);
}

typedef struct {
    double v;
    int decimals;
    const char *want;
} format_case;

static const format_case S_formats[] = {
    {0, 0, "0"},
    {0, 2, "0.00"},
    {-0.0, 1, "0.0"},
    {7, 0, "7"},
    {100, 0, "100"},
    {999, 0, "999"},
    {1000, 0, "1,000"},
    {123456, 0, "123,456"},
    {1234567.891, 2, "1,234,567.89"},
    {-1234.5, 0, "-1,235"},
    {0.5, 0, "1"},
    {-0.5, 0, "-1"},
    {0.4, 0, "0"},
    {-0.4, 0, "0"},
    {1.005, 2, "1.01"},
    {0.125, 2, "0.13"},
    {2.675, 2, "2.68"},
    {999.9995, 3, "1,000.000"},
    {0.0001234, 6, "0.000123"},
    {0.05, 2, "0.05"},
    {42.94967296, 2, "42.95"},
    {1e21, 0, "1,000,000,000,000,000,000,000"},
    {9007199254740993.0, 0, "9,007,199,254,740,992"},
    /* the last integers below 2^64 take the fast path, the next the printf one */
    {18446744073709549568.0, 0, "18,446,744,073,709,549,568"},
    {18446744073709551616.0, 0, "18,446,744,073,709,551,616"},
    {-18446744073709551616.0, 1, "-18,446,744,073,709,551,616.0"},
    {1e18, 2, "1,000,000,000,000,000,000.00"},
    {12345678.9, 1, "12,345,678.9"},
    {123.456, 5, "123.45600"},
    {0.001, 1, "0.0"},
    {-0.004, 2, "0.00"},
    {-0.006, 2, "-0.01"},
    {999999.5, 0, "1,000,000"},
    {123, -1, "123"},
    {1.5, 25, "1.50000000000000000000"},
    {NAN, 2, "nan"},
    {INFINITY, 2, "inf"},
    {-INFINITY, 0, "-inf"},
};

static void test_format_number(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(S_formats); i++) {
        buf out = BUF_INIT;
        quote_format_number(S_formats[i].v, S_formats[i].decimals, &out);
        assert_string_equal(buf_cstr(&out), S_formats[i].want);
        buf_free(&out);
    }
    buf out = BUF_INIT;
    quote_format_number(-DBL_MAX, 3, &out); /* v * 10^3 overflows: falls back to integers */
    assert_int_equal(out.len, 1 + 309 + 102);
    assert_memory_equal(out.ptr, "-179,769,313,486,231,570,", 25);
    buf_free(&out);
}


/* ---- quote_restate: what check --fix writes ---------------------------------- */

typedef struct {
    const char *quote;
    double value;
    int decimals; /* -1: the quote's own */
    const char *want;
} restate_case;

static const restate_case S_restates[] = {
    {"234,881,024 B", 234938368, -1, "234,938,368 B"},
    {"234" THIN "881" THIN "024 B", 234938368, -1, "234" THIN "938" THIN "368 B"},
    {"234" NNBSP "881" NNBSP "024 B", 1234938368, -1, "1" NNBSP "234" NNBSP "938" NNBSP "368 B"},
    {"234881024 B", 234938368, -1, "234938368 B"},  /* no separator stays none */
    {"224 MiB", 232.0 * 1048576, -1, "232 MiB"},
    {"224MiB", 232.0 * 1048576, -1, "232MiB"},       /* the spacing as written */
    {"224" NBSP "MiB", 232.0 * 1048576, -1, "232" NBSP "MiB"},
    {"12.25 GiB", 12.5 * 1073741824.0, -1, "12.50 GiB"}, /* the decimals kept */
    {"0.06 GiB", 0.0625 * 1073741824.0, -1, "0.06 GiB"}, /* rounded half away: 0.0625 */
    {"0.07 GiB", 0.0749 * 1073741824.0, -1, "0.07 GiB"},
    {"1.00", 1.005, -1, "1.01"}, /* a decimal half stored below it */
    {"53.1%", 0.5, -1, "50.0%"},
    {"7.03\xC3\x97", 7.5, -1, "7.50\xC3\x97"},
    {"40 GB", 42949672960.0, -1, "43 GB"},
    {"40 GB", 42949672960.0, 2, "42.95 GB"},
    {"-5 B", -7, -1, "-7 B"},
    {"\xE2\x88\x92" "5 B", -7, -1, "\xE2\x88\x92" "7 B"}, /* U+2212 kept */
    {"\xE2\x88\x92" "5 B", 7, -1, "7 B"},
    {"+5 B", 7, -1, "+7 B"},
    {"+5 B", -7, -1, "-7 B"},
    {"5 B", -0.2, -1, "0 B"},                      /* no minus on a zero */
    {"~40 GB", 42949672960.0, -1, "43 GB"},        /* the mark left out */
    {"\xE7\xBA\xA6 1,000 MB", 2.5e9, -1, "2,500 MB"},
    {"5 B", NAN, -1, "nan B"},
};

static void test_restate(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(S_restates); i++) {
        const restate_case *c = &S_restates[i];
        quote q = S_parse_ok(NULL, c->quote);
        buf out = BUF_INIT;
        quote_restate(&q, c->value, c->decimals < 0 ? q.decimals : c->decimals, &out);
        if (strcmp(buf_cstr(&out), c->want) != 0)
            fail_msg("restate(\"%s\", %g) = \"%s\", expected \"%s\"", c->quote, c->value,
                     buf_cstr(&out), c->want);
        /* an exact restatement parses and passes the one rule */
        if (c->decimals < 0 && isfinite(c->value) && !q.approx) {
            quote r = S_parse_ok(NULL, buf_cstr(&out));
            assert_true(quote_check(&r, "e", c->value, false, 0, NULL, NULL));
        }
        buf_free(&out);
    }
}

static void test_format_number_sep(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    quote_format_number_sep(1234567.891, 2, THIN, &out);
    assert_string_equal(buf_cstr(&out), "1" THIN "234" THIN "567.89");
    buf_clear(&out);
    quote_format_number_sep(-1234567, 0, "", &out);
    assert_string_equal(buf_cstr(&out), "-1234567");
    buf_clear(&out);
    quote_format_number_sep(999, 0, ",", &out);
    assert_string_equal(buf_cstr(&out), "999");
    buf_clear(&out);
    quote_format_number_sep(-DBL_MAX, 0, NNBSP, &out); /* the widest output fits */
    assert_int_equal(out.len, 1 + 309 + 102 * 3);
    buf_free(&out);
}

/* ---- user-defined units ------------------------------------------------------- */

typedef struct {
    const char *name;
    double scale;
    const char *kind;
    const char *msg; /* NULL: accepted */
} define_case;

static const define_case S_defines[] = {
    {"tok", 1, "count", NULL},
    {"tok", 1, "count", NULL}, /* identical again: no-op */
    {"ktok", 1000, "count", NULL},
    {"\xE2\x80\xB0", 0.001, "fraction", NULL}, /* ‰ */
    {"pp", 0.01, "fraction", NULL},
    {"PB", 1e15, "bytes", NULL},
    {"tok/s", 1, "ratio", NULL},
    {"tok", 2, "count", "unit \"tok\" is already defined with a different scale or kind"},
    {"tok", 1, "ratio", "unit \"tok\" is already defined with a different scale or kind"},
    {"GB", 1e9, "bytes", "unit \"GB\" is built in and cannot be redefined"},
    {"%", 0.01, "fraction", "unit \"%\" is built in and cannot be redefined"},
    {"x", 1, "ratio", "unit \"x\" is built in and cannot be redefined"},
    {"", 1, "count", "unit name is empty"},
    {NULL, 1, "count", "unit name is empty"},
    {"abcdefghijklmnopqrstuvwx", 1, "count", "unit name too long (24 bytes, at most 23)"},
    {"\xff", 1, "count", "unit name is not valid UTF-8"},
    {"a b", 1, "count", "unit name must not contain spaces or control characters"},
    {"a" THIN "b", 1, "count", "unit name must not contain spaces or control characters"},
    {"a\nb", 1, "count", "unit name must not contain spaces or control characters"},
    {"5x", 1, "count", "unit name \"5x\" must not start with a digit, sign or point"},
    {"-x", 1, "count", "unit name \"-x\" must not start with a digit, sign or point"},
    {".x", 1, "count", "unit name \".x\" must not start with a digit, sign or point"},
    {"e9", 1, "count", "unit name \"e9\" would read as an exponent"},
    {"a{b", 1, "count",
     "unit name \"a{b\" contains \"{\" (allowed: letters, digits, / _ ^ - and non-ASCII "
     "characters)"},
    {"tok2", 0, "count", "unit scale for \"tok2\" must be a positive finite number"},
    {"tok2", -1, "count", "unit scale for \"tok2\" must be a positive finite number"},
    {"tok2", NAN, "count", "unit scale for \"tok2\" must be a positive finite number"},
    {"tok2", INFINITY, "count", "unit scale for \"tok2\" must be a positive finite number"},
    {"tok2", 1, "weight",
     "unknown unit kind \"weight\" (expected bytes, fraction, ratio or count)"},
    {"tok2", 1, "a\nb", "unknown unit kind (expected bytes, fraction, ratio or count)"},
    {"tok2", 1, NULL, "unknown unit kind (expected bytes, fraction, ratio or count)"},
};

static void test_define(void **state)
{
    (void)state;
    quote_unitset *u = quote_units_new();
    for (size_t i = 0; i < N(S_defines); i++) {
        const define_case *c = &S_defines[i];
        buf err = BUF_INIT;
        int rc = quote_units_define(u, c->name, c->scale, c->kind, &err);
        assert_int_equal(rc, c->msg ? -1 : 0);
        assert_string_equal(buf_cstr(&err), c->msg ? c->msg : "");
        buf_free(&err);
    }

    const quote_unit *tok = quote_units_find(u, "tok", 3);
    assert_non_null(tok);
    assert_int_equal(tok->kind, QUOTE_COUNT);
    assert_false(tok->builtin);
    assert_null(quote_units_find(NULL, "tok", 3)); /* not a built-in */

    quote q = S_parse_ok(u, "4,096 tok");
    assert_string_equal(q.unit.name, "tok");
    assert_int_equal(q.unit.kind, QUOTE_COUNT);
    buf msg = BUF_INIT;
    assert_true(quote_check(&q, "E", 4096, false, 0, u, &msg));
    quote_describe(&q, 4096, u, &msg);
    assert_string_equal(buf_cstr(&msg), "4,096 tok");
    buf_clear(&msg);
    assert_false(quote_check(&q, "E", 2048, false, 0, u, &msg));
    assert_string_equal(buf_cstr(&msg), "quoted 4,096 tok, but E = 2,048.00 tok; the quote is "
                                        "2\xC3\x97 the value: the expression may miss K or "
                                        "V, or the quote counts them twice");

    buf_clear(&msg);
    q = S_parse_ok(u, "4.1 ktok");
    quote_describe(&q, 4096, u, &msg);
    assert_string_equal(buf_cstr(&msg), "4,096 = 4.10 ktok");

    buf_clear(&msg);
    q = S_parse_ok(u, "53.1\xE2\x80\xB0");
    assert_int_equal(q.unit.kind, QUOTE_FRACTION);
    assert_true(quote_check(&q, "E", 0.0531, false, 0, u, NULL));
    assert_false(quote_check(&q, "E", 53.1, false, 0, u, &msg));
    assert_string_equal(buf_cstr(&msg),
                        "quoted 53.1\xE2\x80\xB0, but E = 53,100.000\xE2\x80\xB0; the expression "
                        "must return a fraction (0.0531 for 53.1\xE2\x80\xB0), not a number of "
                        "\xE2\x80\xB0");

    q = S_parse_ok(u, "1.2 PB");
    assert_true(quote_check(&q, "E", 1.2e15, false, 0, u, NULL));

    /* suggestions include user units; the unit set is consulted */
    buf_clear(&msg);
    assert_int_equal(quote_parse("5 TOK", 5, u, &q, &msg), -1);
    assert_string_equal(buf_cstr(&msg),
                        "unknown unit \"TOK\" (units are case-sensitive; did you mean tok?)");
    buf_clear(&msg);
    assert_int_equal(quote_parse("5 tok", 5, NULL, &q, &msg), -1);
    assert_string_equal(buf_cstr(&msg), "unknown unit \"tok\"");
    buf_clear(&msg);
    assert_int_equal(quote_parse("ktok", 4, u, &q, &msg), -1);
    assert_string_equal(buf_cstr(&msg), "missing number before unit \"ktok\"");
    buf_free(&msg);
    quote_units_free(u);
}

static void test_define_cap(void **state)
{
    (void)state;
    quote_unitset *u = quote_units_new();
    char name[16];
    for (int i = 0; i < QUOTE_USER_UNITS_MAX; i++) {
        snprintf(name, sizeof name, "u%d", i);
        assert_int_equal(quote_units_define(u, name, 1, "count", NULL), 0);
    }
    buf err = BUF_INIT;
    assert_int_equal(quote_units_define(u, "one_more", 1, "count", &err), -1);
    assert_string_equal(buf_cstr(&err), "too many units (at most 64 may be defined)");
    /* redefining an existing one identically still works at the cap */
    assert_int_equal(quote_units_define(u, "u63", 1, "count", NULL), 0);
    assert_non_null(quote_units_find(u, "u63", 3));
    buf_free(&err);
    quote_units_free(u);
    quote_units_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok),     cmocka_unit_test(test_builtin_units),
        cmocka_unit_test(test_parse_errors), cmocka_unit_test(test_parse_bounds),
        cmocka_unit_test(test_check),        cmocka_unit_test(test_check_long_expr),
        cmocka_unit_test(test_check_huge),
        cmocka_unit_test(test_describe),     cmocka_unit_test(test_format_number),
        cmocka_unit_test(test_restate),      cmocka_unit_test(test_format_number_sep),
        cmocka_unit_test(test_define),       cmocka_unit_test(test_define_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
