/* Unit tests for gen/url.c: the one rule for URLs written into pages (for
 * Markdown links and the templates' safe_url), percent-decoding, and how a
 * link's fragment names an id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "strmap.h"
#include "url.h"

typedef struct {
    const char *url;
    bool markdown, tpl; /* safe under URL_MARKDOWN, under URL_TEMPLATE */
} url_case;

static void test_rule(void **state)
{
    (void)state;
    static const url_case cases[] = {
        {"https://example.org/a?b#c", true, true},
        {"http://example.org", true, true},
        {"HTTPS://EXAMPLE.ORG", true, true},
        {"mailto:a@b.c", true, true},
        {"/checks/", true, true},
        {"/", true, true},
        {"../a/b.html", true, true},
        {"a/b:c", true, true}, /* a colon after a slash: a path */
        {"#frag", true, true},
        {"?q=1", true, true},
        {"", true, true},
        {"x.html", true, true},
        {"javascript:alert(1)", false, false},
        {"JaVaScRiPt:alert(1)", false, false},
        {" \x01javascript:alert(1)", false, false},
        {"java\tscript:alert(1)", false, false},
        {"java\nscript:alert(1)", false, false},
        {"vbscript:msgbox", false, false},
        {"file:///etc/passwd", false, false},
        {"data:text/html,<script>", false, false},
        {"data:image/png;base64,AAAA", true, false},
        {"DATA:IMAGE/WEBP;base64,AAAA", true, false},
        {"data:image/svg+xml,<svg>", false, false},
        {"//evil.example/", true, false},
        {"\\\\evil.example/", true, false},
        {"/\\evil.example/", true, false},
        {" //evil.example/", true, false},
        {"/\t/evil.example/", true, false},
        {"ftp://example.org/", true, false},
        {"tel:+1", true, false},
        {"irc://foo.bar:2233/baz", true, false},
        {"a+b+c:d", true, false},
        {"averyveryverylongschemename:x", true, false},
        {"javascriptx:1", true, false},
        {"1javascript:1", true, true}, /* not a scheme: a relative path */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const url_case *c = &cases[i];
        if (url_safe(c->url, URL_MARKDOWN) != c->markdown)
            fail_msg("\"%s\": markdown %d, expected %d", c->url, !c->markdown, c->markdown);
        if (url_safe(c->url, URL_TEMPLATE) != c->tpl)
            fail_msg("\"%s\": template %d, expected %d", c->url, !c->tpl, c->tpl);
        const char *v = url_or_unsafe(c->url);
        if (c->tpl)
            assert_ptr_equal(v, c->url);
        else
            assert_string_equal(v, "#");
    }
}

static void test_lua_helper(void **state)
{
    (void)state;
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    lua_pushcfunction(L, url_lua_safe_url);
    lua_setglobal(L, "safe_url");
    const char *code =
        "assert(safe_url('https://a.b/c?d=e&f') == 'https://a.b/c?d=e&f')\n"
        "assert(safe_url('javascript:alert(1)') == '#')\n"
        "assert(safe_url('//evil') == '#')\n"
        "assert(safe_url(nil) == '')\n"
        "assert(safe_url() == '')\n"
        "assert(safe_url(12) == '12')\n"
        "assert(not pcall(safe_url, {}))\n";
    if (luaL_dostring(L, code) != LUA_OK)
        fail_msg("%s", lua_tostring(L, -1));
    lua_close(L);
}

static void test_percent_decode(void **state)
{
    (void)state;
    char *s = url_percent_decode("a%2Fb%zz%4", 10);
    assert_string_equal(s, "a/b%zz%4");
    free(s);
    s = url_percent_decode("%E4%B8%AD", 9);
    assert_string_equal(s, "中");
    free(s);
    s = url_percent_decode("plain", 3);
    assert_string_equal(s, "pla");
    free(s);
}

/* Regression: "#%61-1" was reported broken, though browsers decode it. */
static void test_fragment(void **state)
{
    (void)state;
    strmap ids;
    strmap_init(&ids);
    strmap_put(&ids, "a-1", (void *)1);
    strmap_put(&ids, "代价", (void *)1);
    strmap_put(&ids, "50%-off", (void *)1);
    assert_true(url_fragment_in(&ids, "a-1"));
    assert_true(url_fragment_in(&ids, "%61-1"));
    assert_true(url_fragment_in(&ids, "%E4%BB%A3%E4%BB%B7"));
    assert_true(url_fragment_in(&ids, "代价"));
    assert_true(url_fragment_in(&ids, "50%-off"));   /* as written */
    assert_true(url_fragment_in(&ids, "50%25-off")); /* decoded */
    assert_false(url_fragment_in(&ids, "a-2"));
    assert_false(url_fragment_in(&ids, "%62-1"));
    assert_false(url_fragment_in(&ids, "%"));
    strmap_free(&ids);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_lua_helper),
        cmocka_unit_test(test_percent_decode),
        cmocka_unit_test(test_fragment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
