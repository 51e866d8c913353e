/* Unit tests for gen/luatest.c (kvsite lua-test): luatest_main on test files
 * written to a temporary folder, with what it prints to stdout captured in a
 * file: the pass and fail counts, the failure lines, -v, -C (require reads
 * that project's checks/), and the exit statuses. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "buf.h"
#include "fsutil.h"
#include "luatest.h"


static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-luatest-XXXXXX"); }
static int S_teardown(void **state) { return tmpdir_teardown(state); }

/* luatest_main("lua-test", args...) run in dir, what it prints (stdout,
 * then stderr, which only usage errors use) in *out (malloc'ed). */
static int S_run(const char *dir, char **out, int nargs, ...)
{
    char *argv[16];
    int argc = 0;
    argv[argc++] = (char *)"lua-test";
    va_list ap;
    va_start(ap, nargs);
    for (int i = 0; i < nargs && argc < 15; i++)
        argv[argc++] = va_arg(ap, char *);
    va_end(ap);
    argv[argc] = NULL;
    char *path = xasprintf("%s.out", dir);
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    fflush(stdout);
    fflush(stderr);
    int saved = dup(1), saved_err = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && saved_err >= 0 && fd >= 0);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    int rc = luatest_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved, 1);
    dup2(saved_err, 2);
    close(saved);
    close(saved_err);
    assert_int_equal(chdir(cwd), 0);
    buf b = BUF_INIT;
    assert_int_equal(fs_read_file(path, 1 << 20, &b), FS_OK);
    unlink(path);
    free(path);
    *out = buf_detach(&b);
    return rc;
}

static void S_has(const char *out, const char *want)
{
    if (!strstr(out, want))
        fail_msg("no \"%s\" in:\n%s", want, out);
}

static const char *const S_mixed =
    "test('adds', function() assert(1 + 1 == 2) end)\n"
    "test('breaks', function()\n"
    "  error('boom')\n"
    "end)\n"
    "test('no io', function() assert(io == nil and os == nil) end)\n";

/* Passing and failing cases: one line per failure with its place, the
 * counts, and status 1. */
static void test_counts(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "t_mixed.lua", S_mixed);
    char *out;
    assert_int_equal(S_run(dir, &out, 1, "t_mixed.lua"), 1);
    assert_string_equal(out, "FAIL t_mixed.lua: breaks: t_mixed.lua:3: boom\n"
                             "2 passed, 1 failed\n");
    free(out);
    /* -v names the passing ones too */
    assert_int_equal(S_run(dir, &out, 2, "-v", "t_mixed.lua"), 1);
    assert_string_equal(out, "ok   t_mixed.lua: adds\n"
                             "FAIL t_mixed.lua: breaks: t_mixed.lua:3: boom\n"
                             "ok   t_mixed.lua: no io\n"
                             "2 passed, 1 failed\n");
    free(out);
}

/* Several files add up; all passing is status 0. */
static void test_all_pass(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "t_a.lua", "test('a', function() end)\ntest('b', function() end)\n");
    tmpdir_put(dir, "t_b.lua", "test('c', function() assert(math.max(2, 3) == 3) end)\n");
    char *out;
    assert_int_equal(S_run(dir, &out, 2, "t_a.lua", "t_b.lua"), 0);
    assert_string_equal(out, "3 passed, 0 failed\n");
    free(out);
}

/* A file that does not load, or cannot be read, counts as one failure and
 * the others still run; an error that is not a string is said to be one. */
static void test_broken_files(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "t_syntax.lua", "test('x', function() end)\nlocal = 1\n");
    tmpdir_put(dir, "t_ok.lua", "test('fine', function() end)\n");
    tmpdir_put(dir, "t_obj.lua", "test('table error', function() error({}) end)\n");
    char *out;
    assert_int_equal(S_run(dir, &out, 4, "t_syntax.lua", "t_missing.lua", "t_obj.lua", "t_ok.lua"),
                     1);
    S_has(out, "FAIL t_syntax.lua:2: ");
    S_has(out, "FAIL t_missing.lua: cannot read: ");
    S_has(out, "FAIL t_obj.lua: table error: ");
    S_has(out, "1 passed, 3 failed\n");
    free(out);
}

/* -C DIR: require loads DIR/checks/<name>.lua. */
static void test_project(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "proj/checks/twice.lua", "return { of = function(x) return 2 * x end }\n");
    tmpdir_put(dir, "t_req.lua",
          "local twice = require 'twice'\n"
          "test('twice', function() assert(twice.of(21) == 42) end)\n");
    char *out;
    assert_int_equal(S_run(dir, &out, 3, "-C", "proj", "t_req.lua"), 0);
    assert_string_equal(out, "1 passed, 0 failed\n");
    free(out);
    /* without it, the module is not there */
    assert_int_equal(S_run(dir, &out, 1, "t_req.lua"), 1);
    S_has(out, "FAIL t_req.lua:1: ");
    S_has(out, "0 passed, 1 failed\n");
    free(out);
}

/* Usage errors: status 2, nothing run. */
static void test_usage(void **state)
{
    const char *dir = *state;
    char *out;
    const char *usage = "usage: kvsite lua-test [-C DIR] [-v] FILE...\n";
    assert_int_equal(S_run(dir, &out, 0), 2);
    assert_string_equal(out, usage);
    free(out);
    assert_int_equal(S_run(dir, &out, 2, "-x", "t.lua"), 2);
    assert_string_equal(out, "kvsite lua-test: unknown option -x\n");
    free(out);
    assert_int_equal(S_run(dir, &out, 1, "-v"), 2);
    assert_string_equal(out, usage);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_counts, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_all_pass, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_broken_files, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_project, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_usage, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
