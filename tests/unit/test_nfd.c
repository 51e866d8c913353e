/* Unit tests for gen/nfd.c: canonical decomposition (tables and Hangul),
 * canonical ordering of marks, text left alone, and equivalence. The
 * expected bytes were worked out with Python's unicodedata.normalize. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "nfd.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
    const char *in, *want;
} S_cases[] = {
    {"", ""},
    {"plain/ascii.md", "plain/ascii.md"},
    {"caf\xc3\xa9", "cafe\xcc\x81"},                         /* U+00E9 */
    {"cafe\xcc\x81", "cafe\xcc\x81"},                        /* already NFD */
    {"\xe1\xb9\xa9", "s\xcc\xa3\xcc\x87"},                   /* U+1E69: two levels */
    {"\xe1\xb8\x8b\xcc\xa3", "d\xcc\xa3\xcc\x87"},           /* reordered after decomposing */
    {"q\xcc\x87\xcc\xa3", "q\xcc\xa3\xcc\x87"},              /* marks put in class order */
    {"\xed\x95\x9c\xea\xb8\x80",                             /* Hangul, with a final */
     "\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab\xe1\x84\x80\xe1\x85\xb3\xe1\x86\xaf"},
    {"\xea\xb0\x80", "\xe1\x84\x80\xe1\x85\xa1"},             /* U+AC00: no final */
    {"\xe2\x84\xab", "A\xcc\x8a"},                           /* ANGSTROM SIGN */
    {"\xcd\x84", "\xcc\x88\xcc\x81"},                        /* a mark that decomposes */
    {"\xf0\x9d\x85\x9e", "\xf0\x9d\x85\x97\xf0\x9d\x85\xa5"}, /* four-byte */
    {"\xe0\xbd\xb3", "\xe0\xbd\xb1\xe0\xbd\xb2"},
    {"\xef\xac\x81", "\xef\xac\x81"},                        /* ligature fi: <compat>, kept */
    {"bad\xff\xc3\xa9", "bad\xff\xc3\xa9"},                  /* not UTF-8: as it is */
};

static void test_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(S_cases); i++) {
        char *got = nfd(S_cases[i].in);
        if (strcmp(got, S_cases[i].want) != 0)
            fail_msg("case %zu: nfd(\"%s\") = \"%s\", want \"%s\"", i, S_cases[i].in, got,
                     S_cases[i].want);
        free(got);
    }
}

/* The two spellings macOS and Linux give one accented name are one name. */
static void test_equivalent(void **state)
{
    (void)state;
    char *a = nfd("notes/\xc3\x85ngstr\xc3\xb6m.md"), *b = nfd("notes/A\xcc\x8angstro\xcc\x88m.md");
    assert_string_equal(a, b);
    free(a);
    free(b);
    a = nfd("r\xc3\xa9sum\xc3\xa9");
    b = nfd("resume");
    assert_string_not_equal(a, b);
    free(a);
    free(b);
}

/* nfd_append appends to what the buffer holds and reads only len bytes. */
static void test_append(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    buf_puts(&b, "x/");
    nfd_append(&b, "\xc3\xa9zzz", 2);
    assert_string_equal(buf_cstr(&b), "x/e\xcc\x81");
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_equivalent),
        cmocka_unit_test(test_append),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
