/* Unit tests for gen/highlight.c: every language named in highlight.h gives
 * its tokens their kinds, unknown languages and blocks over the bounds stay
 * with the caller, the text is escaped, and the queries' predicates
 * (#match?, #eq?) decide as the grammars mean them. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "highlight.h"

/* code highlighted as lang; NULL when hl_html declined. Caller frees. */
static char *S_hl(const char *lang, const char *code)
{
    buf b = BUF_INIT;
    if (!hl_html(lang, strlen(lang), code, strlen(code), &b)) {
        assert_int_equal(b.len, 0);
        buf_free(&b);
        return NULL;
    }
    return buf_detach(&b);
}

/* html has "<span class="hl-KIND">token</span>" */
static void S_has(const char *html, const char *kind, const char *token)
{
    char want[256];
    snprintf(want, sizeof want, "<span class=\"hl-%s\">%s</span>", kind, token);
    if (!strstr(html, want))
        fail_msg("no %s in:\n%s", want, html);
}

static void test_languages(void **state)
{
    (void)state;
    static const struct {
        const char *lang, *code, *kind, *token;
    } cases[] = {
        {"lua", "local x = 1 -- note\n", "keyword", "local"},
        {"lua", "local x = 1 -- note\n", "comment", "-- note"},
        {"lua", "local s = 'q'\n", "string", "&#39;q&#39;"},
        {"c", "static int x = 42;\n", "type", "int"},
        {"c", "static int x = 42;\n", "constant", "42"},
        {"h", "#include <stdio.h>\n", "keyword", "#include"},
        {"sh", "echo \"hi\" # c\n", "function", "echo"},
        {"bash", "if true; then ls; fi\n", "keyword", "if"},
        {"yaml", "key: 3\n", "property", "key"},
        {"yml", "key: 3\n", "constant", "3"},
        {"json", "{\"a\": [1, true]}\n", "property", "&quot;a&quot;"},
        {"json", "{\"a\": [1, true]}\n", "constant", "true"},
        {"python", "def f():\n    return None\n", "keyword", "def"},
        {"py", "def f():\n    return None\n", "function", "f"},
        {"markdown", "# Title\n\ntext\n", "heading", "Title"},
        {"md", "- item\n", "punct", "- "},
        {"LUA", "return 1\n", "keyword", "return"}, /* fence names ignore case */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_true(hl_known(cases[i].lang, strlen(cases[i].lang)));
        char *h = S_hl(cases[i].lang, cases[i].code);
        assert_non_null(h);
        S_has(h, cases[i].kind, cases[i].token);
        free(h);
    }
}

/* Highlighting only adds spans: without them the text is the escaped code. */
static void test_text_kept(void **state)
{
    (void)state;
    const char *code = "-- <b>&\"x\"</b>\nlocal t = {'a', [[long\nstring]]} -- 中文\n";
    char *h = S_hl("lua", code);
    assert_non_null(h);
    buf plain = BUF_INIT;
    for (const char *p = h; *p;) {
        if (strncmp(p, "<span class=\"", 13) == 0) {
            p = strchr(p, '>') + 1;
        } else if (strncmp(p, "</span>", 7) == 0) {
            p += 7;
        } else {
            assert_true(*p != '<');
            buf_putc(&plain, *p++);
        }
    }
    buf want = BUF_INIT;
    buf_put_html(&want, code, strlen(code));
    assert_string_equal(buf_cstr(&plain), buf_cstr(&want));
    buf_free(&plain);
    buf_free(&want);
    free(h);
}

static void test_plain(void **state)
{
    (void)state;
    assert_false(hl_known("cobol", 5));
    assert_false(hl_known("", 0));
    assert_false(hl_known("luax", 4));
    assert_true(hl_known("luax", 3)); /* the first lang_len bytes only */
    assert_null(S_hl("cobol", "MOVE 1 TO X.\n"));
    assert_null(S_hl("lua", "")); /* nothing to colour */
    /* over the size bound: the caller prints it plain */
    size_t n = HL_MAX_BYTES + 1;
    char *big = malloc(n + 1);
    memset(big, 'x', n);
    big[n] = '\0';
    assert_null(S_hl("lua", big));
    memcpy(big + HL_MAX_BYTES - 8, "\nlocal\n", 7);
    big[HL_MAX_BYTES] = '\0';
    char *h = S_hl("lua", big);
    assert_non_null(h);
    free(h);
    free(big);
}

static void test_predicates(void **state)
{
    (void)state;
    /* #match? with anchors (Python's constants "^[A-Z][A-Z_]*$") */
    char *h = S_hl("python", "X_Y = Xy\n");
    assert_non_null(h);
    S_has(h, "constant", "X_Y");
    assert_null(strstr(h, ">Xy<"));
    free(h);
    /* #match? with \d in brackets (C's constants "^[A-Z][A-Z\\d_]*$") */
    h = S_hl("c", "int a = MAX_2 + max_2;\n");
    assert_non_null(h);
    S_has(h, "constant", "MAX_2");
    assert_null(strstr(h, ">max_2<"));
    free(h);
    /* #eq? (Lua's self) */
    h = S_hl("lua", "return self, selfish\n");
    assert_non_null(h);
    S_has(h, "keyword", "self");
    assert_null(strstr(h, ">selfish<"));
    free(h);
    /* broken input still comes out whole */
    h = S_hl("python", "def (:\n  '''\n");
    assert_non_null(h);
    free(h);
}

/* Each thread keeps its parser and query cursor from block to block: a
 * block comes out the same whatever was highlighted before it, in this
 * thread or in another at the same time, broken input included. */
static const struct {
    const char *lang, *code;
} S_mix[] = {
    {"python", "def (:\n  '''\n"},
    {"c", "int a = MAX_2 + max_2; /* c */\n"},
    {"sh", "for f in *; do echo \"$f\"; done\n"},
    {"yaml", "a: [1, {b: c}]\n"},
    {"lua", "local t = {1, 'x'} -- n\n"},
    {"c", "int main(void) { return 0; }\n"},
    {"json", "{\"a\": [1, true, null]}\n"},
    {"markdown", "# T\n\n- [x] done\n"},
    {"python", "X_Y = f(1, 'a')\n"},
};
#define S_NMIX (sizeof S_mix / sizeof S_mix[0])

/* One thread's run: the blocks again and again against what they gave
 * first. It notes the first difference instead of asserting: cmocka's
 * checks belong to the test's own thread. */
typedef struct {
    char *const *want;    /* S_NMIX outputs */
    const char *differed; /* the language of the first block that differed, or NULL */
} mix_run;

static void *S_mix_run(void *arg)
{
    mix_run *run = arg;
    for (size_t r = 0; r < 50; r++) {
        for (size_t i = 0; i < S_NMIX; i++) {
            buf b = BUF_INIT;
            bool ok = hl_html(S_mix[i].lang, strlen(S_mix[i].lang), S_mix[i].code,
                              strlen(S_mix[i].code), &b);
            if ((!ok || strcmp(buf_cstr(&b), run->want[i]) != 0) && !run->differed)
                run->differed = S_mix[i].lang;
            buf_free(&b);
        }
    }
    return NULL;
}

static void test_blocks_independent(void **state)
{
    (void)state;
    char *first[S_NMIX] = {0};
    for (size_t i = S_NMIX; i-- > 0;) /* backwards, then forwards */
        first[i] = S_hl(S_mix[i].lang, S_mix[i].code);
    for (size_t i = 0; i < S_NMIX; i++) {
        assert_non_null(first[i]);
        char *again = S_hl(S_mix[i].lang, S_mix[i].code);
        assert_string_equal(again, first[i]);
        free(again);
    }
    pthread_t t[2];
    mix_run runs[2] = {{first, NULL}, {first, NULL}};
    for (size_t k = 0; k < 2; k++)
        assert_int_equal(pthread_create(&t[k], NULL, S_mix_run, &runs[k]), 0);
    for (size_t k = 0; k < 2; k++) {
        pthread_join(t[k], NULL);
        if (runs[k].differed)
            fail_msg("thread %zu: a %s block came out differently", k, runs[k].differed);
    }
    for (size_t i = 0; i < S_NMIX; i++)
        free(first[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_languages),
        cmocka_unit_test(test_text_kept),
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_predicates),
        cmocka_unit_test(test_blocks_independent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
