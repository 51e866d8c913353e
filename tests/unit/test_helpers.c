/* Unit tests for gen/helpers.c: the template helpers that need no renderer
 * (format_number, date, escape, fmt). markdown_inline and url_for are
 * tested through the binary (tests/e2e). */
#include <lauxlib.h>
#include <lualib.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "helpers.h"

static lua_State *S_L;

static int S_setup(void **state)
{
    (void)state;
    S_L = luaL_newstate();
    luaL_openlibs(S_L);
    lua_pushglobaltable(S_L);
    helpers_open(S_L, NULL);
    lua_pop(S_L, 1);
    return 0;
}

static int S_teardown(void **state)
{
    (void)state;
    lua_close(S_L);
    return 0;
}

/* code's result, or its error (rc != 0) */
static int S_eval(const char *code, char *out, size_t n)
{
    int rc = luaL_loadstring(S_L, code) || lua_pcall(S_L, 0, 1, 0);
    const char *s = lua_tostring(S_L, -1);
    snprintf(out, n, "%s", s ? s : "(nil)");
    lua_pop(S_L, 1);
    return rc;
}

static void S_is(const char *code, const char *want)
{
    char out[256];
    assert_int_equal(S_eval(code, out, sizeof out), 0);
    assert_string_equal(out, want);
}

static void test_date(void **state)
{
    (void)state;
    S_is("return date('2024-03-05', '%d.%m.%Y')", "05.03.2024");
    S_is("return date('2024-03-05 14:07', '%Y%m%d %H:%M:%S %% %q')", "20240305 14:07:00 % %q");
    S_is("return date('2024-03-05T14:07:09')", "2024-03-05");
    S_is("return date('', '%Y')", "");
    S_is("return date('2024-03-05 04:00', '%Y年%-m月%-d日 %-H:%M')", "2024年3月5日 4:00");
    S_is("return date('2024-12-10', '%-m/%-d %-q %-')", "12/10 %-q %-");
    S_is("return date('2024-01-01 00:00', '%-H')", "0");
    S_is("return date(nil)", "");
    char out[256];
    assert_int_not_equal(S_eval("return date('March 5')", out, sizeof out), 0);
    assert_non_null(strstr(out, "not a date (YYYY-MM-DD)"));
}

static void test_format_number(void **state)
{
    (void)state;
    S_is("return format_number(1234567)", "1,234,567");
    S_is("return format_number(3.14159, 2)", "3.14");
    S_is("return format_number(2, -3)", "2");
}

static void test_escape_fmt(void **state)
{
    (void)state;
    S_is("return escape('<a href=\"x\">&</a>')", "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
    S_is("return escape(12)", "12");
    S_is("return fmt('%03d', 7)", "007");
    S_is("return tostring(markdown_inline)", "nil"); /* needs a renderer */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_date),
        cmocka_unit_test(test_format_number),
        cmocka_unit_test(test_escape_fmt),
    };
    return cmocka_run_group_tests(tests, S_setup, S_teardown);
}
