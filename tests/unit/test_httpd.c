/* Unit tests for gen/httpd.c: request paths under the base path (the
 * traversal refusals), content types. The server itself is tested end to end
 * (tests/e2e/serve.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "httpd.h"

static void S_ok(const char *path, const char *base, const char *want)
{
    char *rel = NULL;
    assert_int_equal(httpd_resolve(path, base, &rel), HTTPD_OK);
    assert_string_equal(rel, want);
    free(rel);
}

static void S_refused(const char *path, const char *base, int how)
{
    char *rel = (char *)"unchanged";
    assert_int_equal(httpd_resolve(path, base, &rel), how);
    assert_null(rel);
}

static void test_resolve(void **state)
{
    (void)state;
    S_ok("/", "", "");
    S_ok("/a/b/", "", "a/b/");
    S_ok("/a/b", "", "a/b");
    S_ok("//a///b.css", "", "a/b.css");
    S_ok("/assets/style.css", "", "assets/style.css");
    S_ok("/a..b/c.d", "", "a..b/c.d");         /* dots inside a name are a name */
    S_ok("/.well-known/x", "", ".well-known/x"); /* the file system decides */
    /* under a base path */
    S_ok("/docs/", "/docs", "");
    S_ok("/docs", "/docs", "");
    S_ok("/docs/a/", "/docs", "a/");
    S_refused("/", "/docs", HTTPD_NOT_FOUND);
    S_refused("/docsx/a", "/docs", HTTPD_NOT_FOUND);
    S_refused("/other/a", "/docs", HTTPD_NOT_FOUND);
    /* traversal: ".." and "." segments, decoded or not (libmicrohttpd
     * decodes %2e%2e before we see it), backslashes, controls */
    S_refused("/..", "", HTTPD_FORBIDDEN);
    S_refused("/../etc/passwd", "", HTTPD_FORBIDDEN);
    S_refused("/a/../../etc/passwd", "", HTTPD_FORBIDDEN);
    S_refused("/a/./b", "", HTTPD_FORBIDDEN);
    S_refused("/docs/../site.yaml", "/docs", HTTPD_FORBIDDEN);
    S_refused("/a/..\\..\\x", "", HTTPD_FORBIDDEN);
    S_refused("/a\x01b", "", HTTPD_FORBIDDEN);
    S_refused("/a/..", "", HTTPD_FORBIDDEN);
}

static void test_mime(void **state)
{
    (void)state;
    assert_string_equal(httpd_mime("index.html"), "text/html; charset=utf-8");
    assert_string_equal(httpd_mime("a/B.HTML"), "text/html; charset=utf-8");
    assert_string_equal(httpd_mime("assets/style.css"), "text/css; charset=utf-8");
    assert_string_equal(httpd_mime("feed.xml"), "application/xml");
    assert_string_equal(httpd_mime("checks.json"), "application/json");
    assert_string_equal(httpd_mime("layout.svg"), "image/svg+xml");
    assert_string_equal(httpd_mime("a.js"), "text/javascript; charset=utf-8");
    assert_string_equal(httpd_mime("f.woff2"), "font/woff2");
    assert_string_equal(httpd_mime("x.png"), "image/png");
    assert_string_equal(httpd_mime("noext"), "application/octet-stream");
    assert_string_equal(httpd_mime("dir.html/file"), "application/octet-stream");
    assert_true(httpd_is_html(httpd_mime("a.htm")));
    assert_false(httpd_is_html(httpd_mime("a.css")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_mime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
