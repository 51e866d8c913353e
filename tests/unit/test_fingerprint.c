/* Unit tests for gen/fingerprint.c: which assets get a content-hashed name,
 * what the name looks like, and the set the build keeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fingerprint.h"

static void test_wanted(void **state)
{
    (void)state;
    assert_true(fingerprint_wanted("/assets/style.css"));
    assert_true(fingerprint_wanted("assets/js/search.js"));
    assert_false(fingerprint_wanted("/assets/favicon.svg"));
    assert_false(fingerprint_wanted("/assets/css"));
    assert_false(fingerprint_wanted("/assets/.css"));    /* a dotfile, no extension */
    assert_false(fingerprint_wanted("/assets.css/logo")); /* the folder's dot */
    assert_false(fingerprint_wanted("/assets/style.css.map"));
}

/* "/assets/style.css" -> "/assets/style.<12 hex>.css": the same bytes give
 * the same name, one changed byte another. */
static void test_name(void **state)
{
    (void)state;
    const char *css = "body { color: #222; background: #fff }\n";
    char *a = fingerprint_name("/assets/style.css", css, strlen(css));
    char *b = fingerprint_name("/assets/style.css", css, strlen(css));
    assert_string_equal(a, b);
    assert_int_equal(strlen(a), strlen("/assets/style..css") + 12);
    assert_memory_equal(a, "/assets/style.", 14);
    assert_string_equal(a + 14 + 12, ".css");
    for (size_t i = 14; i < 26; i++)
        assert_non_null(strchr("0123456789abcdef", a[i]));
    char *changed = xstrdup(css);
    changed[strlen(changed) - 3] = 'e'; /* in the last, byte-at-a-time, bytes */
    char *c = fingerprint_name("/assets/style.css", changed, strlen(changed));
    assert_string_not_equal(a, c);
    changed[strlen(changed) - 3] = 'f';
    changed[3] = 'Y'; /* in the first eight-byte word */
    char *d = fingerprint_name("/assets/style.css", changed, strlen(changed));
    assert_string_not_equal(a, d);
    char *e = fingerprint_name("/assets/x.min.js", "", 0);
    assert_memory_equal(e, "/assets/x.min.", 14);
    assert_string_equal(e + 14 + 12, ".js");
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    free(changed);
}

/* The first asset of a path stays (the site's own are added before the
 * theme's); the set owns the bytes it was given. */
static void test_set(void **state)
{
    (void)state;
    fingerprints f;
    fingerprints_init(&f);
    buf b = BUF_INIT;
    buf_puts(&b, "site");
    const fingerprint *p = fingerprints_add(&f, "/assets/theme.css", "templates/assets/theme.css", NULL, &b);
    assert_int_equal(b.len, 0);
    assert_null(b.ptr);
    assert_string_equal(p->input, "templates/assets/theme.css");
    assert_string_equal(buf_cstr(&p->bytes), "site");
    char *want = fingerprint_name("/assets/theme.css", "site", 4);
    assert_string_equal(p->hashed, want);
    free(want);
    buf_puts(&b, "theme");
    const fingerprint *q = fingerprints_add(&f, "/assets/theme.css", "theme/assets/theme.css", "templates/assets/theme.css", &b);
    assert_ptr_equal(p, q);
    buf_free(&b);
    assert_ptr_equal(fingerprints_get(&f, "/assets/theme.css"), p);
    assert_null(fingerprints_get(&f, "/assets/other.css"));
    fingerprints_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wanted),
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
