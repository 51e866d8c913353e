/* Unit tests for gen/reload.c: the script and the overlay go before the
 * page's last </body>, the diagnostics escaped; the events' format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "reload.h"

static char *S_inject(const char *html, uint64_t gen, const char *diags)
{
    buf out = BUF_INIT;
    reload_inject(html, strlen(html), gen, diags, &out);
    buf_putc(&out, '\0');
    return buf_detach(&out);
}

static void test_script_before_body_end(void **state)
{
    (void)state;
    char *got = S_inject("<html><body><p>x</body></html>", 7, NULL);
    const char *script = strstr(got, "<script>");
    assert_non_null(script);
    assert_ptr_equal(strstr(got, "<html><body><p>x<script>"), got);
    assert_non_null(strstr(got, "</script>\n</body></html>"));
    assert_non_null(strstr(got, "g='7'"));
    assert_non_null(strstr(got, "new EventSource('" RELOAD_EVENTS "')"));
    assert_non_null(strstr(got, "sessionStorage")); /* the scroll position is kept */
    assert_null(strstr(got, "kvsite-overlay"));      /* no overlay after a good build */
    free(got);
    /* the last </body>, in any case; none: at the end */
    got = S_inject("<pre>&lt;/body&gt; </body></pre></BODY>\n", 1, NULL);
    assert_non_null(strstr(got, "</pre><script>"));
    assert_non_null(strstr(got, "</script>\n</BODY>\n"));
    free(got);
    got = S_inject("<p>fragment", 2, NULL);
    assert_ptr_equal(strstr(got, "<p>fragment<script>"), got);
    free(got);
    got = S_inject("", 3, NULL);
    assert_ptr_equal(strstr(got, "<script>"), got);
    free(got);
}

static void test_overlay(void **state)
{
    (void)state;
    const char *diags = "content/a.md:3:7: error: quoted 40 GB, but <x> & \"y\" = 42\n"
                        "  hint: kv_bytes(131072) is 42.9 GB\n";
    char *got = S_inject("<body>page</body>", 9, diags);
    const char *overlay = strstr(got, "<div id=\"kvsite-overlay\"");
    assert_non_null(overlay);
    assert_true(overlay < strstr(got, "<script>"));
    assert_non_null(strstr(got, "content/a.md:3:7: error: quoted 40 GB, but &lt;x&gt; &amp; "
                                "&quot;y&quot; = 42\n  hint: kv_bytes(131072) is 42.9 GB\n"));
    assert_null(strstr(got, "<x>"));
    assert_ptr_equal(strstr(got, "<body>page<div"), got);
    free(got);
}

static void test_event(void **state)
{
    (void)state;
    buf b = BUF_INIT;
    reload_event(12, &b);
    assert_int_equal(b.len, strlen("data: 12\n\n"));
    assert_memory_equal(b.ptr, "data: 12\n\n", b.len);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_script_before_body_end),
        cmocka_unit_test(test_overlay),
        cmocka_unit_test(test_event),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
