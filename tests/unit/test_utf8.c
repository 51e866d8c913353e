/* Unit tests for gen/utf8.c: validity (overlongs, surrogates, truncation,
 * out-of-range), sequence lengths, decoding and line:col positions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "utf8.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
    const char *s;
    size_t len;
    bool ok;
    size_t bad; /* offset of the first bad byte when !ok */
} valid_case;

#define OK(s) {s, sizeof(s) - 1, true, 0}
#define BAD(s, at) {s, sizeof(s) - 1, false, at}
static const valid_case S_valid[] = {
    OK(""),
    OK("plain ASCII"),
    OK("nul\0inside"),           /* U+0000 is valid UTF-8 */
    OK("\x7f"),                  /* DEL, last one-byte */
    OK("\xC2\x80"),              /* U+0080, first two-byte */
    OK("\xDF\xBF"),              /* U+07FF, last two-byte */
    OK("\xE0\xA0\x80"),          /* U+0800, first three-byte */
    OK("\xED\x9F\xBF"),          /* U+D7FF, just below the surrogates */
    OK("\xEE\x80\x80"),          /* U+E000, just above */
    OK("\xEF\xBF\xBF"),          /* U+FFFF */
    OK("\xEF\xBB\xBF"),          /* BOM */
    OK("\xF0\x90\x80\x80"),      /* U+10000, first four-byte */
    OK("\xF4\x8F\xBF\xBF"),      /* U+10FFFF, the last code point */
    OK("é 中文 😀 ≈ × 倍"),
    /* overlongs */
    BAD("\xC0\x80", 0),          /* NUL in two bytes */
    BAD("\xC1\xBF", 0),
    BAD("ab\xC0\xAF", 2),        /* '/' in two bytes */
    BAD("\xE0\x80\x80", 0),
    BAD("\xE0\x9F\xBF", 0),      /* U+07FF in three bytes */
    BAD("\xF0\x80\x80\x80", 0),
    BAD("\xF0\x8F\xBF\xBF", 0),  /* U+FFFF in four bytes */
    /* surrogates */
    BAD("\xED\xA0\x80", 0),      /* U+D800 */
    BAD("x\xED\xBF\xBF", 1),     /* U+DFFF */
    BAD("\xED\xA0\xBD\xED\xB8\x80", 0), /* CESU-8 pair */
    /* beyond U+10FFFF and invalid lead bytes */
    BAD("\xF4\x90\x80\x80", 0),
    BAD("\xF5\x80\x80\x80", 0),
    BAD("\xF7\xBF\xBF\xBF", 0),
    BAD("\xF8\x88\x80\x80\x80", 0),
    BAD("\xFC\x84\x80\x80\x80\x80", 0),
    BAD("\xFE", 0),
    BAD("ok\xFF", 2),
    /* stray continuation bytes */
    BAD("\x80", 0),
    BAD("a\xBF", 1),
    BAD("\xC3\xA9\xA9", 2),
    /* truncated and interrupted sequences */
    BAD("\xC3", 0),
    BAD("a\xE4\xB8", 1),
    BAD("中\xE4\xB8", 3),
    BAD("\xF0\x9F\x98", 0),
    BAD("\xE4\xB8" "a", 0),
    BAD("\xC3 ", 0),
    BAD("\xF0\x9F\x98\x41", 0),
};

static void test_valid_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(S_valid); i++) {
        const valid_case *c = &S_valid[i];
        size_t bad = 12345;
        bool ok = utf8_valid(c->s, c->len, &bad);
        if (ok != c->ok)
            fail_msg("case %zu: utf8_valid is %d, expected %d", i, ok, c->ok);
        if (!ok && bad != c->bad)
            fail_msg("case %zu: bad byte at %zu, expected %zu", i, bad, c->bad);
        if (ok && bad != 12345)
            fail_msg("case %zu: *bad written on success", i);
        /* a NULL bad pointer is allowed */
        assert_int_equal(utf8_valid(c->s, c->len, NULL), c->ok);
    }
}

static void test_valid_respects_len(void **state)
{
    (void)state;
    /* only len bytes are looked at */
    assert_true(utf8_valid("abc\xFF", 3, NULL));
    size_t bad = 0;
    /* a sequence cut by len is truncated even if the bytes after are fine */
    assert_false(utf8_valid("\xE4\xB8\xAD", 2, &bad));
    assert_int_equal(bad, 0);
    assert_true(utf8_valid("\xE4\xB8\xAD", 3, NULL));
    assert_true(utf8_valid(NULL, 0, NULL));
}

typedef struct {
    const char *s;
    size_t len;
} len_case;

static void test_char_len(void **state)
{
    (void)state;
    static const len_case cases[] = {
        {"a", 1},    {"\x7f", 1},          {"\x80", 1}, /* continuation: invalid lead */
        {"\xBF", 1}, {"\xC2\x80", 2},      {"\xDF", 2}, {"\xE0", 3},
        {"中", 3},   {"\xEF", 3},          {"\xF0", 4}, {"😀", 4},
        {"\xF7", 4}, {"\xF8", 1},          {"\xFC", 1}, {"\xFF", 1},
    };
    for (size_t i = 0; i < N(cases); i++)
        if (utf8_char_len((const unsigned char *)cases[i].s) != cases[i].len)
            fail_msg("case %zu: length %zu, expected %zu", i,
                     utf8_char_len((const unsigned char *)cases[i].s), cases[i].len);
}

typedef struct {
    const char *s;
    size_t n;
    uint32_t cp;
} dec_case;

static void test_decode(void **state)
{
    (void)state;
    static const dec_case cases[] = {
        {"A", 1, 0x41},
        {"\xC3\xA9", 2, 0xE9},
        {"\xC2\x80", 2, 0x80},
        {"中", 3, 0x4E2D},
        {"≈", 3, 0x2248},
        {"倍", 3, 0x500D},
        {"\xEF\xBF\xBF", 3, 0xFFFF},
        {"😀", 4, 0x1F600},
        {"\xF4\x8F\xBF\xBF", 4, 0x10FFFF},
    };
    for (size_t i = 0; i < N(cases); i++) {
        const unsigned char *p = (const unsigned char *)cases[i].s;
        assert_int_equal(utf8_char_len(p), cases[i].n);
        if (utf8_decode(p, cases[i].n) != cases[i].cp)
            fail_msg("case %zu: U+%04X, expected U+%04X", i, utf8_decode(p, cases[i].n),
                     cases[i].cp);
        /* and back: the same bytes */
        char out[4];
        assert_int_equal(utf8_encode(cases[i].cp, out), cases[i].n);
        assert_memory_equal(out, cases[i].s, cases[i].n);
    }
    /* the edges of each length */
    static const struct {
        uint32_t cp;
        size_t n;
    } edges[] = {{0, 1}, {0x7F, 1}, {0x80, 2}, {0x7FF, 2}, {0x800, 3}, {0xFFFF, 3},
                 {0x10000, 4}, {0x10FFFF, 4}};
    for (size_t i = 0; i < N(edges); i++) {
        char out[4];
        size_t n = utf8_encode(edges[i].cp, out);
        assert_int_equal(n, edges[i].n);
        assert_true(utf8_valid(out, n, NULL));
        assert_int_equal(utf8_decode((const unsigned char *)out, n), edges[i].cp);
    }
}

typedef struct {
    const char *s;
    size_t off;
    int line, col;
} pos_case;

static void test_position(void **state)
{
    (void)state;
    static const pos_case cases[] = {
        {"", 0, 1, 1},
        {"abc", 0, 1, 1},
        {"abc", 2, 1, 3},
        {"abc", 3, 1, 4},           /* the end is a position too */
        {"ab\ncd", 2, 1, 3},        /* the newline is on the first line */
        {"ab\ncd", 3, 2, 1},
        {"ab\ncd", 4, 2, 2},
        {"a\n\n\nb", 4, 4, 1},
        {"x\n", 2, 2, 1},
        {"中x", 3, 1, 4},           /* columns count bytes */
        {"中\n文 40 GB", 8, 2, 5},
        {"a\r\nb", 3, 2, 1},        /* CR is an ordinary byte */
        {"a\r\nb", 1, 1, 2},
        {"\tx", 1, 1, 2},           /* a tab is one column */
    };
    for (size_t i = 0; i < N(cases); i++) {
        int line = -1, col = -1;
        utf8_position(cases[i].s, cases[i].off, &line, &col);
        if (line != cases[i].line || col != cases[i].col)
            fail_msg("case %zu: %d:%d, expected %d:%d", i, line, col, cases[i].line,
                     cases[i].col);
    }
}

typedef struct {
    const char *line;
    int byte_col, col;
} column_case;

/* Columns in code points, as editors count them (issue 20). */
static void test_column(void **state)
{
    (void)state;
    static const column_case cases[] = {
        {"abc", 0, 0},                     /* unknown stays unknown */
        {"abc", 1, 1},
        {"abc", 3, 3},
        {"abc", 4, 4},                     /* the end of the line */
        {"abc", 7, 7},                     /* past it: one per byte */
        {"\xE4\xB8\xAD" "x", 4, 2},        /* 中x: x is column 2 */
        {"\xE4\xB8\xAD\xE6\x96\x87 40 GB", 8, 4}, /* 中文 40 GB: "40" */
        /* a CJK line of 30 characters then a figure: byte 92 is column 32 */
        {"\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80"
         "\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80"
         "\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80"
         "\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80\xE4\xB8\x80"
         "\xE4\xB8\x80\xE4\xB8\x80 `5 MiB`", 92, 32},
        {"\xC3\xA9t\xC3\xA9", 4, 3},       /* été: the second é */
        {"\xF0\x9F\x98\x80!", 5, 2},        /* an emoji is one code point */
        {"\xFF" "ab", 2, 2},               /* an invalid byte is one column */
        {"\xE4\xB8" "ab", 3, 3},           /* so is each byte of a cut sequence */
        {"\xE4\xB8\xAD", 3, 3},            /* a column inside a character */
        {"\xC0\x80x", 3, 3},               /* an overlong is two stray bytes */
        {"\xED\xA0\x80x", 4, 4},           /* so is a surrogate's three */
        {"\ta", 2, 2},                     /* a tab is one column */
    };
    for (size_t i = 0; i < N(cases); i++) {
        int col = utf8_column(cases[i].line, strlen(cases[i].line), cases[i].byte_col);
        if (col != cases[i].col)
            fail_msg("case %zu: byte %d -> %d, expected %d", i, cases[i].byte_col, col,
                     cases[i].col);
    }
    /* len bounds the line: bytes beyond it are not read */
    assert_int_equal(utf8_column("\xE4\xB8\xAD\xE4\xB8\xAD", 3, 7), 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_table),
        cmocka_unit_test(test_valid_respects_len),
        cmocka_unit_test(test_char_len),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_position),
        cmocka_unit_test(test_column),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
