/* Unit tests for gen/sandbox.c: the page environment of the worker's Lua
 * state. What is absent or refuses, the instruction budget (also inside
 * pcall), the memory cap, isolation between pages, require from checks/ only,
 * data() and its path refusals, provenance of measured figures, user units,
 * error locations in the Markdown file and hostile error objects. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "buf.h"
#include "diag.h"
#include "fsutil.h"
#include "quote.h"
#include "sandbox.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define PAGE "content/p.md"

/* ---- fixtures ------------------------------------------------------------- */

typedef struct {
    char *root;  /* project with checks/ */
    char *other; /* a folder outside the project */
    sandbox_opts o;
    sandbox *sb;
    diag_list dl;
} fx;

static void S_write(const char *root, const char *rel, const char *text)
{
    char *p = fs_join(root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    assert_int_equal(fs_mkdir_p(p), 0);
    *slash = '/';
    assert_int_equal(fs_write_file(p, text, strlen(text)), 0);
    free(p);
}

static void S_project(fx *f)
{
    S_write(f->root, "checks/m.lua",
            "local M = {}\n"
            "count = (count or 0) + 1\n"
            "function M.twice(x) return 2 * x end\n"
            "M.count = count\n"
            "return M\n");
    S_write(f->root, "checks/nothing.lua", "nothing_ran = true\n");
    S_write(f->root, "checks/syn.lua", "return {\n");
    S_write(f->root, "checks/boom.lua", "local x = 1\nerror('boom')\n");
    S_write(f->root, "checks/ca.lua", "return require \"cb\"\n");
    S_write(f->root, "checks/cb.lua", "return require \"ca\"\n");
    S_write(f->root, "checks/fail.lua",
            "local M = {}\nfunction M.f() error(\"bad input\") end\nreturn M\n");
    S_write(f->root, "checks/measurements/x.yaml",
            "model: qwen\nlayers: 28\ngib: 0.21875\nlist: [1, 2, 3]\nnone: ~\n");
    S_write(f->root, "checks/x.yml", "a: 1\n");
    S_write(f->root, "checks/x.json", "{\"a\": [1, 2.5, \"s\"], \"b\": {\"c\": true}}");
    S_write(f->root, "checks/x.csv", "tokens,bytes\n4096,234881024\n8192,469762048\n");
    S_write(f->root, "checks/log.txt", "line1\nline2\n");
    S_write(f->root, "checks/bad.json", "{\"a\": }");
    S_write(f->other, "evil.lua", "return 'evil'\n");
    S_write(f->other, "out.yaml", "secret: 1\n");
    S_write(f->other, "x.yaml", "secret: 2\n");
    char *evil = fs_join(f->other, "evil.lua");
    char *out = fs_join(f->other, "out.yaml");
    char *p;
    p = fs_join(f->root, "checks/evil.lua");
    assert_int_equal(symlink(evil, p), 0);
    free(p);
    p = fs_join(f->root, "checks/out.yaml");
    assert_int_equal(symlink(out, p), 0);
    free(p);
    p = fs_join(f->root, "checks/ext");
    assert_int_equal(symlink(f->other, p), 0);
    free(p);
    p = fs_join(f->root, "checks/alias.yaml");
    assert_int_equal(symlink("measurements/x.yaml", p), 0);
    free(p);
    /* a hard link to a file outside: a second name of it inside checks/ */
    char *x = fs_join(f->other, "x.yaml");
    p = fs_join(f->root, "checks/twin.yaml");
    assert_int_equal(link(x, p), 0);
    free(p);
    free(x);
    free(evil);
    free(out);
}

static int S_setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->root = strdup("/tmp/kvsite-test-sandbox-XXXXXX");
    f->other = strdup("/tmp/kvsite-test-sandbox-other-XXXXXX");
    if (!mkdtemp(f->root) || !mkdtemp(f->other))
        return -1;
    S_project(f);
    f->o = (sandbox_opts){f->root, 1000000, 8u << 20, 1u << 20, 32};
    diag_list_init(&f->dl);
    *state = f;
    return 0;
}

static int S_teardown(void **state)
{
    fx *f = *state;
    if (f->sb) {
        sandbox_page_end(f->sb);
        sandbox_free(f->sb);
    }
    diag_list_free(&f->dl);
    fs_remove_tree(f->root);
    fs_remove_tree(f->other);
    free(f->root);
    free(f->other);
    free(f);
    return 0;
}

/* Creates the sandbox (with f->o as set by the test) and begins a page. */
static sandbox *S_sb(fx *f)
{
    f->sb = sandbox_new(&f->o);
    assert_non_null(f->sb);
    sandbox_page_begin(f->sb, PAGE, &f->dl);
    return f->sb;
}

static void S_new_page(fx *f) { sandbox_page_begin(f->sb, PAGE, &f->dl); }

/* Runs code that must succeed; returns its first result as text (malloc'ed). */
static char *S_eval_at(fx *f, const char *code, int first_line)
{
    int nres = -1;
    sandbox_error err;
    lua_State *L = sandbox_lua(f->sb);
    if (sandbox_run(f->sb, code, strlen(code), PAGE, first_line, &nres, &err) != 0) {
        fail_msg("Lua failed: %s:%d: %s\n  code: %s", err.file ? err.file : "-", err.line,
                 err.msg, code);
    }
    buf b = BUF_INIT;
    if (nres > 0)
        sandbox_tostring(L, -nres, &b);
    lua_pop(L, nres);
    assert_int_equal(lua_gettop(L), 0);
    return buf_detach(&b);
}

static char *S_eval(fx *f, const char *code) { return S_eval_at(f, code, 1); }

static void S_expect(fx *f, const char *code, const char *want)
{
    char *got = S_eval(f, code);
    if (strcmp(got, want) != 0)
        fail_msg("%s\n  gave \"%s\", expected \"%s\"", code, got, want);
    free(got);
}

/* Runs code that must fail; fills *err (caller frees). */
static void S_fail_at(fx *f, const char *code, int first_line, sandbox_error *err)
{
    int nres = -1;
    if (sandbox_run(f->sb, code, strlen(code), PAGE, first_line, &nres, err) == 0)
        fail_msg("expected an error from: %s", code);
    assert_int_equal(lua_gettop(sandbox_lua(f->sb)), 0);
}

/* The error message of code run at line 1. */
static void S_expect_error(fx *f, const char *code, const char *msg)
{
    sandbox_error err;
    S_fail_at(f, code, 1, &err);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("%s\n  error \"%s\"\n  expected \"%s\"", code, err.msg, msg);
    assert_false(err.limit);
    sandbox_error_free(&err);
}

/* ---- what a page cannot reach --------------------------------------------- */

static void test_forbidden_absent(void **state)
{
    fx *f = *state;
    S_sb(f);
    static const char *absent[] = {
        "dofile",        "loadfile",        "collectgarbage",   "io",
        "os",            "debug",           "package",          "string.dump",
        "(\"\").dump",   "loadstring",      "module",           "setfenv",
        "_G.io",         "_ENV.os",         "rawget(_G, 'os')", "_G.debug",
        "utf8.dump",     "_G.package",      "newproxy",         "unpack",
    };
    for (size_t i = 0; i < N(absent); i++) {
        char code[100];
        snprintf(code, sizeof code, "return type(%s)", absent[i]);
        S_expect(f, code, "nil");
    }
    static const char *present[][2] = {
        {"string.format", "function"}, {"table.concat", "function"}, {"math.floor", "function"},
        {"utf8.char", "function"},     {"pcall", "function"},       {"load", "function"},
        {"require", "function"},       {"data", "function"},        {"print", "function"},
        {"kvsite.measured", "function"}, {"kvsite.unit", "function"}, {"_G", "table"},
        {"setmetatable", "function"},  {"select", "function"},      {"tonumber", "function"},
    };
    for (size_t i = 0; i < N(present); i++) {
        char code[100];
        snprintf(code, sizeof code, "return type(%s)", present[i][0]);
        S_expect(f, code, present[i][1]);
    }
    S_expect(f, "return _VERSION", "Lua 5.4");
    S_expect(f, "return _G == _ENV", "true");
    /* the shared string metatable is not handed out */
    S_expect(f, "return getmetatable('')", "false");
    S_expect(f, "return ('ab'):rep(2)", "abab");
}

static void test_load_is_text_only(void **state)
{
    fx *f = *state;
    S_sb(f);
    S_expect(f, "return load('return 6 * 7')()", "42");
    S_expect(f, "x = 5 return load('return x')()", "5"); /* the page's environment */
    S_expect(f, "return load('return y', 'n', 't', {y = 7})()", "7");
    S_expect(f, "return load('return _G')() == _G", "true");
    S_expect(f, "local f, e = load('\\27Lua binary') return e",
             "attempt to load a binary chunk (mode is 't')");
    S_expect(f, "local f, e = load('return +') return type(f) .. ' ' .. e",
             "nil (load):1: unexpected symbol near '+'");
    S_expect_error(f, "return load('return 1', 'n', 'bt')", "load: binary chunks are not allowed");
    S_expect_error(f, "return load('return 1', 'n', 'b')", "load: binary chunks are not allowed");
    S_expect_error(f, "return load(function() return nil end)",
                   "load: only a string chunk is accepted here");
    S_expect(f, "return select(2, load(42))", "(load):1: unexpected symbol near '42'");
}

static void test_setmetatable_refuses_gc(void **state)
{
    fx *f = *state;
    S_sb(f);
    S_expect_error(f, "setmetatable({}, {__gc = function() end})",
                   "setmetatable: __gc metamethods are not allowed here");
    S_expect_error(f, "setmetatable({}, {__gc = true})",
                   "setmetatable: __gc metamethods are not allowed here");
    S_expect(f, "return getmetatable(setmetatable({}, {__index = {a = 1}})).__index.a", "1");
    S_expect(f, "return setmetatable({}, {__index = function(t, k) return k .. '!' end}).hi",
             "hi!");
    S_expect(f, "local t = setmetatable({}, nil) return type(t)", "table");
}

static void test_random_same_on_every_page(void **state)
{
    fx *f = *state;
    S_sb(f);
    const char *code = "return math.random(1, 1000000000) .. ',' .. math.random(1, 1000000000)";
    char *a = S_eval(f, code);
    S_new_page(f);
    char *b = S_eval(f, code);
    assert_string_equal(a, b);
    /* a page may reseed its own generator without changing the next page's */
    S_expect(f, "math.randomseed(1) return 1", "1");
    S_new_page(f);
    char *c = S_eval(f, code);
    assert_string_equal(a, c);
    free(a);
    free(b);
    free(c);
}

/* ---- limits --------------------------------------------------------------- */

static void test_budget_exceeded(void **state)
{
    fx *f = *state;
    f->o.instructions = 100000;
    S_sb(f);
    sandbox_error err;
    S_fail_at(f, "local n = 0\nwhile true do n = n + 1 end\n", 10, &err);
    assert_true(err.limit);
    assert_string_equal(err.msg, "instruction budget exceeded (limits.lua_instructions = 100000)");
    assert_string_equal(err.file, PAGE);
    assert_int_equal(err.line, 11);
    sandbox_error_free(&err);
    /* everything after fails the same way, without running */
    S_fail_at(f, "return 1", 20, &err);
    assert_true(err.limit);
    assert_string_equal(err.msg, "instruction budget exceeded (limits.lua_instructions = 100000)");
    assert_string_equal(err.file, PAGE);
    sandbox_error_free(&err);
    /* a new page has a new budget */
    S_new_page(f);
    S_expect(f, "local s = 0 for i = 1, 1000 do s = s + i end return s", "500500");
}

static void test_budget_inside_pcall(void **state)
{
    fx *f = *state;
    f->o.instructions = 100000;
    S_sb(f);
    static const char *codes[] = {
        "local ok, e = pcall(function() while true do end end)\nreturn ok, e",
        "for i = 1, 100 do pcall(function() while true do end end) end\nreturn 1",
        "local ok = xpcall(function() while true do end end, function(m) return m end)\n"
        "while true do end",
        "local ok = pcall(error, 'x')\nlocal t = {}\nfor i = 1, 1e9 do\n"
        "  pcall(function() t[#t % 10 + 1] = i end)\nend\nreturn 1",
    };
    for (size_t i = 0; i < N(codes); i++) {
        sandbox_error err;
        S_fail_at(f, codes[i], 1, &err);
        if (!err.limit ||
            strcmp(err.msg, "instruction budget exceeded (limits.lua_instructions = 100000)"))
            fail_msg("case %zu: %s (limit %d)", i, err.msg, err.limit);
        sandbox_error_free(&err);
        S_new_page(f);
    }
}

/* Unmetered pages: no count hook, a fuse on the thread's CPU time. The
 * budget here is 2e7 instructions: the fuse blows after 1 ms of CPU time, and
 * a loop of 0.6 of the budget (1.2e7 instructions) takes far longer on any
 * machine, so it is cut unmetered although it is within its budget metered. */
#define UNMETERED_BUDGET 20000000
#define LOOP_60 "local s = 0 for i = 1, 6000000 do s = s + 1 end return s"

static void test_unmetered_within_budget(void **state)
{
    fx *f = *state;
    f->o.instructions = UNMETERED_BUDGET;
    f->sb = sandbox_new(&f->o);
    assert_non_null(f->sb);
    sandbox_set_unmetered(f->sb, true);
    for (int i = 0; i < 3; i++) {
        S_new_page(f);
        S_expect(f, "local s = 0 for i = 1, 1000 do s = s + i end return s", "500500");
        assert_false(sandbox_page_cut(f->sb));
        /* settled: what is left runs metered, on what is left of the first half */
        S_expect(f, "return 7", "7");
        sandbox_page_end(f->sb);
        assert_false(sandbox_take_rerun(f->sb));
    }
}

static void test_unmetered_cut_then_metered(void **state)
{
    fx *f = *state;
    f->o.instructions = UNMETERED_BUDGET;
    f->sb = sandbox_new(&f->o);
    assert_non_null(f->sb);
    sandbox_set_unmetered(f->sb, true);
    for (int round = 0; round < 2; round++) {
        /* unmetered: past the fuse, cut (an error, whatever the code does) */
        S_new_page(f);
        sandbox_error err;
        S_fail_at(f, LOOP_60, 1, &err);
        assert_true(err.limit);
        sandbox_error_free(&err);
        /* everything after fails too, without running */
        S_fail_at(f, "return 1", 2, &err);
        sandbox_error_free(&err);
        assert_true(sandbox_page_cut(f->sb));
        assert_true(sandbox_page_cut(f->sb)); /* settled once */
        sandbox_page_end(f->sb);
        assert_true(sandbox_take_rerun(f->sb));
        assert_false(sandbox_take_rerun(f->sb)); /* told once */
        /* the page again: metered, within its budget, as it always was */
        S_new_page(f);
        S_expect(f, LOOP_60, "6000000");
        assert_false(sandbox_page_cut(f->sb));
        sandbox_page_end(f->sb);
        assert_false(sandbox_take_rerun(f->sb));
        /* and the next page runs unmetered again (round 2 is cut the same way) */
    }
}

/* A cut page cannot catch the cut: pcall, xpcall and loops of them. */
static void test_unmetered_cut_not_swallowed(void **state)
{
    fx *f = *state;
    f->o.instructions = UNMETERED_BUDGET;
    f->sb = sandbox_new(&f->o);
    assert_non_null(f->sb);
    sandbox_set_unmetered(f->sb, true);
    static const char *codes[] = {
        "local ok, e = pcall(function() while true do end end)\nreturn ok, e",
        "for i = 1, 100 do pcall(function() while true do end end) end\nreturn 1",
        "local ok = xpcall(function() while true do end end, function(m) return m end)\n"
        "while true do end",
    };
    for (size_t i = 0; i < N(codes); i++) {
        S_new_page(f);
        sandbox_error err;
        S_fail_at(f, codes[i], 1, &err);
        assert_true(err.limit);
        sandbox_error_free(&err);
        sandbox_page_end(f->sb);
        assert_true(sandbox_take_rerun(f->sb));
        /* metered, the same page stops at its budget, with the usual message */
        S_new_page(f);
        S_fail_at(f, codes[i], 1, &err);
        if (!err.limit ||
            strcmp(err.msg, "instruction budget exceeded (limits.lua_instructions = 20000000)"))
            fail_msg("case %zu: %s (limit %d)", i, err.msg, err.limit);
        sandbox_error_free(&err);
        sandbox_page_end(f->sb);
        assert_false(sandbox_take_rerun(f->sb));
    }
}

/* What C counts for a page (sandbox_charge) is held to the other half of
 * the budget when the page runs unmetered; past it, the page is metered on
 * what its CPU time and its charges leave, and a charge that a page metered
 * from its start would pass but this one cannot is a cut. */
static void test_unmetered_charges(void **state)
{
    fx *f = *state;
    f->o.instructions = UNMETERED_BUDGET;
    f->sb = sandbox_new(&f->o);
    assert_non_null(f->sb);
    sandbox_set_unmetered(f->sb, true);
    const long long b = UNMETERED_BUDGET, step = 1000; /* HOOK_STEP */
    const long long last = b - b / 4 - b / 8 - 3 * step / 2;
    S_new_page(f);
    assert_true(sandbox_charge(f->sb, b / 4));
    assert_true(sandbox_charge(f->sb, b / 8));
    assert_false(sandbox_charge(f->sb, last)); /* within the budget, not the bound */
    assert_false(sandbox_charge(f->sb, 1));
    sandbox_error err;
    S_fail_at(f, "return 1", 1, &err);
    sandbox_error_free(&err);
    sandbox_page_end(f->sb);
    assert_true(sandbox_take_rerun(f->sb));
    /* metered, the same charges pass */
    S_new_page(f);
    assert_true(sandbox_charge(f->sb, b / 4));
    assert_true(sandbox_charge(f->sb, b / 8));
    assert_true(sandbox_charge(f->sb, last));
    S_expect(f, "return 1", "1");
    sandbox_page_end(f->sb);
    assert_false(sandbox_take_rerun(f->sb));
    /* unmetered again: past the half, metered late; far from the budget, not cut */
    S_new_page(f);
    assert_true(sandbox_charge(f->sb, b / 2));
    assert_true(sandbox_charge(f->sb, b / 8));
    S_expect(f, "return 2", "2");
    assert_false(sandbox_page_cut(f->sb));
    sandbox_page_end(f->sb);
    assert_false(sandbox_take_rerun(f->sb));
}

static long long S_thread_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A page that runs past its fuse but far from its budget is metered late
 * and ends, not cut: 2e8 instructions of a budget of 1e9 (the fuse: 50 ms;
 * the loop takes longer on any machine: it is checked). */
static void test_unmetered_late(void **state)
{
    fx *f = *state;
    f->o.instructions = 1000000000;
    f->sb = sandbox_new(&f->o);
    assert_non_null(f->sb);
    sandbox_set_unmetered(f->sb, true);
    S_new_page(f);
    long long t0 = S_thread_ns();
    S_expect(f, "local s = 0 for i = 1, 100000000 do s = s + 1 end return s", "100000000");
    long long ns = S_thread_ns() - t0;
    assert_true(ns > 1000000000LL / 2 / SANDBOX_MAX_RATE);
    assert_false(sandbox_page_cut(f->sb));
    sandbox_page_end(f->sb);
    assert_false(sandbox_take_rerun(f->sb));
}

static void test_memory_cap(void **state)
{
    fx *f = *state;
    f->o.instructions = 1000000000;
    f->o.memory = 2u << 20;
    S_sb(f);
    static const char *codes[] = {
        "local t = {}\nfor i = 1, 1e8 do t[i] = i end\nreturn #t",
        "return #string.rep('x', 1e8)",
        "local s = 'x'\nfor i = 1, 40 do s = s .. s end\nreturn #s",
        "local t = {}\nfor i = 1, 1e7 do t[#t + 1] = tostring(i) end",
    };
    for (size_t i = 0; i < N(codes); i++) {
        sandbox_error err;
        S_fail_at(f, codes[i], 1, &err);
        if (!err.limit || strcmp(err.msg, "memory cap exceeded (limits.lua_memory = 2097152 bytes)"))
            fail_msg("case %zu: %s (limit %d)", i, err.msg, err.limit);
        /* located at the page (or left to the caller's location) */
        assert_true(!err.file || strcmp(err.file, PAGE) == 0);
        sandbox_error_free(&err);
        /* later runs on the page fail the same way */
        S_fail_at(f, "return 1", 1, &err);
        assert_true(err.limit);
        assert_string_equal(err.msg, "memory cap exceeded (limits.lua_memory = 2097152 bytes)");
        sandbox_error_free(&err);
        /* and the next page starts afresh */
        S_new_page(f);
        S_expect(f, "return #string.rep('y', 100000)", "100000");
    }
}

/* ---- isolation ------------------------------------------------------------ */

static void test_memory_error_location_not_stale(void **state)
{
    fx *f = *state;
    f->o.instructions = 1000000000;
    f->o.memory = 2u << 20;
    S_sb(f);
    sandbox_error err;
    S_fail_at(f, "\n\nerror('earlier block')", 1, &err);
    assert_int_equal(err.line, 3);
    sandbox_error_free(&err);
    /* a later block of the page hits the cap: the earlier error's line must
     * not be reused for it */
    S_fail_at(f, "local a = 1\nlocal b = 2\nreturn #string.rep('x', 1e8)", 50, &err);
    assert_true(err.limit);
    assert_string_equal(err.msg, "memory cap exceeded (limits.lua_memory = 2097152 bytes)");
    if (err.line != 0 && err.line != 52)
        fail_msg("memory cap reported at %s:%d", err.file ? err.file : "-", err.line);
    sandbox_error_free(&err);
}

static void test_page_isolation(void **state)
{
    fx *f = *state;
    S_sb(f);
    S_expect(f, "x = 1; _G.y = 5; kvsite.extra = 4; return x + y", "6");
    S_expect(f, "return x + y", "6"); /* runs of one page share its environment */
    /* the libraries are shared views that no page can change */
    S_expect_error(f, "string.foo = 2", "module \"string\" is read-only: cannot set string.foo");
    S_expect_error(f, "math.pi = 3", "module \"math\" is read-only: cannot set math.pi");
    S_expect_error(f, "table.insert = nil",
                   "module \"table\" is read-only: cannot set table.insert");
    S_expect(f, "return getmetatable(string)", "locked");
    S_expect_error(f, "setmetatable(string, nil)", "cannot change a protected metatable");
    /* not even with rawset: whatever it does, the next page must not see it */
    S_expect(f,
             "pcall(rawset, string, 'foo', 2) pcall(rawset, math, 'pi', 3)\n"
             "pcall(rawset, string, 'upper', function() return 'hacked' end) return 1",
             "1");
    S_new_page(f);
    S_expect(f,
             "return tostring(x) .. tostring(y) .. tostring(kvsite.extra) .. "
             "tostring(string.foo) .. tostring(math.pi) .. string.upper('a') .. ('b'):upper()",
             "nilnilnilnil3.1415926535898AB");
}

/* A compiled expression is kept for the next page, but the page it ran on is
 * not: at 10,000 pages the cache had kept thousands of dead pages alive. A
 * function the expression made still sees its page until the page ends. */
static void test_expression_cache_keeps_no_page(void **state)
{
    fx *f = *state;
    S_sb(f);
    lua_State *L = sandbox_lua(f->sb);
    /* a weak table that holds the page's environment only while others do */
    lua_newtable(L);
    lua_newtable(L);
    lua_pushliteral(L, "v");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    sandbox_push_env(f->sb);
    lua_rawseti(L, -2, 1);
    int weak = luaL_ref(L, LUA_REGISTRYINDEX);
    static const char code[] = "return (function() f = function() return 6 * 7 end; return 1 end)()";
    int nres = 0;
    sandbox_error err;
    assert_int_equal(sandbox_eval(f->sb, code, strlen(code), PAGE, 1, &nres, &err), 0);
    lua_pop(L, nres);
    S_expect(f, "return f()", "42");
    assert_int_equal(sandbox_eval(f->sb, code, strlen(code), PAGE, 2, &nres, &err), 0);
    lua_pop(L, nres);
    S_expect(f, "return f()", "42"); /* the same page: its function still works */
    S_new_page(f);
    lua_gc(L, LUA_GCCOLLECT);
    lua_rawgeti(L, LUA_REGISTRYINDEX, weak);
    assert_int_equal(lua_rawgeti(L, -1, 1), LUA_TNIL);
    lua_pop(L, 2);
    luaL_unref(L, LUA_REGISTRYINDEX, weak);
    /* and the cached expression runs on the new page */
    assert_int_equal(sandbox_eval(f->sb, code, strlen(code), PAGE, 1, &nres, &err), 0);
    lua_pop(L, nres);
    S_expect(f, "return f()", "42");
}

/* ---- require -------------------------------------------------------------- */

static void test_require_from_checks(void **state)
{
    fx *f = *state;
    S_sb(f);
    S_expect(f, "local m = require 'm' return m.twice(21)", "42");
    S_expect(f, "return require('m') == require('m')", "true"); /* once per page */
    S_expect(f, "return count", "1"); /* the module ran in the page's environment */
    S_expect(f, "return require 'nothing'", "true");
    S_expect(f, "return nothing_ran", "true");
    /* pages get a read-only view of a module */
    S_expect_error(f, "local m = require 'm' m.x = 1", "module \"m\" is read-only: cannot set m.x");
    S_expect(f, "local n = 0 for k in pairs(require 'm') do n = n + 1 end return n", "2");
    /* a fresh instance on the next page */
    S_new_page(f);
    S_expect(f, "return tostring(count) .. ' ' .. require('m').count .. ' ' .. count", "nil 1 1");
}

static void test_require_refusals(void **state)
{
    fx *f = *state;
    S_sb(f);
    static const char *bad_names[] = {"../x", "Kv", "a.b", "", "x/y", "1abc", "a-b"};
    for (size_t i = 0; i < N(bad_names); i++) {
        char code[100], msg[200];
        snprintf(code, sizeof code, "return require '%s'", bad_names[i]);
        snprintf(msg, sizeof msg,
                 "require \"%s\": module names are lower-case letters, digits and _ (a file "
                 "checks/NAME.lua)",
                 bad_names[i]);
        S_expect_error(f, code, msg);
    }
    S_expect_error(f, "return require 'os'",
                   "require \"os\": checks/os.lua: no such file under checks/");
    S_expect_error(f, "return require 'evil'",
                   "require \"evil\": checks/evil.lua: a symbolic link (nothing under checks/ "
                   "is read through one): refused");
    S_expect_error(f, "return require 'syn'", "checks/syn.lua:2: unexpected symbol near <eof>");
    S_expect_error(f, "return require 'ca'", "checks/cb.lua:1: require \"ca\": circular require");
}

static void test_require_error_then_retry(void **state)
{
    fx *f = *state;
    S_sb(f);
    sandbox_error err;
    S_fail_at(f, "\n\nrequire 'boom'", 5, &err);
    assert_string_equal(err.msg, "checks/boom.lua:2: boom");
    assert_string_equal(err.file, PAGE);
    assert_int_equal(err.line, 7); /* the page line that required it */
    sandbox_error_free(&err);
    /* a module that failed is not "being loaded" forever: asking again gives
     * its own error again, not a circular require */
    S_expect(f, "local ok, e = pcall(require, 'boom') return e", "checks/boom.lua:2: boom");
}

static void test_require_size_cap_and_no_checks(void **state)
{
    fx *f = *state;
    f->o.data_bytes = 1024;
    char big[2000];
    memset(big, '-', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    S_write(f->root, "checks/bigmod.lua", big);
    S_sb(f);
    S_expect_error(f, "return require 'bigmod'",
                   "require \"bigmod\": cannot read checks/bigmod.lua: file too large (limit "
                   "1024 bytes)");
    sandbox_page_end(f->sb);
    sandbox_free(f->sb);
    f->sb = NULL;

    /* a project without checks/ */
    f->o.root = f->other;
    S_sb(f);
    S_expect_error(f, "return require 'm'", "require \"m\": checks/m.lua: there is no checks/ folder");
    S_expect_error(f, "return data 'x.yaml'", "data \"x.yaml\": there is no checks/ folder");
}

/* The installed checks library (sandbox_opts.library) is looked in after the
 * site's checks/: for modules and data, with the same rules, and only for
 * files the site does not have. */
static void test_require_library(void **state)
{
    fx *f = *state;
    char *lib = xasprintf("%s/lib", f->other);
    S_write(f->other, "lib/libmod.lua", "return {v = 7}");
    S_write(f->other, "lib/m.lua", "return {twice = function() return 'library' end}");
    S_write(f->other, "lib/d/x.yaml", "a: 1");
    S_write(f->other, "lib/outside.lua", "return {}");
    S_sb(f);
    sandbox_set_library(f->sb, lib);
    S_expect(f, "return require('libmod').v", "7");
    S_expect(f, "return require('m').twice(2)", "4"); /* the site's own wins */
    S_expect(f, "return data('d/x.yaml').a", "1");
    S_expect_error(f, "return require 'none'",
                   "require \"none\": checks/none.lua: no such file under checks/ nor in the "
                   "checks library");
    S_expect_error(f, "return require '../lib/outside'",
                   "require \"../lib/outside\": module names are lower-case letters, digits "
                   "and _ (a file checks/NAME.lua)");
    sandbox_page_end(f->sb);
    sandbox_free(f->sb);
    f->sb = NULL;
    /* a site without checks/ uses the library alone */
    f->o.root = f->other;
    S_sb(f);
    sandbox_set_library(f->sb, lib);
    S_expect(f, "return require('m').twice(2)", "library");
    S_expect_error(f, "return data 'none.yaml'",
                   "data \"none.yaml\": there is no checks/ folder, and the checks library has "
                   "no such file");
    free(lib);
}

/* ---- data ----------------------------------------------------------------- */

static void test_data_kinds(void **state)
{
    fx *f = *state;
    S_sb(f);
    S_expect(f, "local d = data 'measurements/x.yaml' return d.model .. d.layers .. #d.list",
             "qwen283");
    S_expect(f, "local d = data 'measurements/x.yaml' return math.type(d.gib) .. d.gib",
             "float0.21875");
    S_expect(f, "return tostring(data('measurements/x.yaml').none)", "nil");
    S_expect(f, "return data('x.yml').a", "1");
    S_expect(f, "local d = data 'x.json' return d.a[2] + (d.b.c and 1 or 0) .. d.a[3]", "3.5s");
    S_expect(f, "local d = data 'x.csv' return #d .. ':' .. d[2].bytes .. ':' .. d[1].tokens",
             "2:469762048:4096");
    S_expect(f, "return data 'log.txt'", "line1\nline2\n");
    /* a link that stays inside checks/ is refused too: none is followed */
    S_expect_error(f, "return data('alias.yaml').model",
                   "data \"alias.yaml\": a symbolic link (nothing under checks/ is read "
                   "through one): refused");
    /* each call gives fresh tables: a page cannot spoil the cache */
    S_expect(f, "local a = data 'x.json' a.a = nil return type(data('x.json').a)", "table");
    S_new_page(f);
    S_expect(f, "return #data('x.json').a", "3");
}

static void test_data_refusals(void **state)
{
    fx *f = *state;
    S_sb(f);
    static const char *unsafe[] = {"../site.yaml", "/etc/hosts.txt", "a/../x.yaml",
                                   ".secret.yaml", "a//b.yaml",      "a b.yaml",
                                   "./x.yaml",     "measurements/../x.json"};
    for (size_t i = 0; i < N(unsafe); i++) {
        char code[100], msg[200];
        snprintf(code, sizeof code, "return data '%s'", unsafe[i]);
        snprintf(msg, sizeof msg,
                 "data \"%s\": not a plain relative path under checks/ (no \"..\", no absolute "
                 "paths, no dotfiles)",
                 unsafe[i]);
        S_expect_error(f, code, msg);
    }
    S_expect_error(f, "return data 'x.xml'",
                   "data \"x.xml\": unknown kind of file (.yaml, .yml, .json, .csv, .txt, .log "
                   "or .md)");
    S_expect_error(f, "return data 'noext'",
                   "data \"noext\": unknown kind of file (.yaml, .yml, .json, .csv, .txt, .log "
                   "or .md)");
    S_expect_error(f, "return data 'nope.yaml'", "data \"nope.yaml\": no such file under checks/");
    S_expect_error(f, "return data 'out.yaml'",
                   "data \"out.yaml\": a symbolic link (nothing under checks/ is read through "
                   "one): refused");
    S_expect_error(f, "return data 'twin.yaml'",
                   "data \"twin.yaml\": cannot read: a hard link (a file with more than one "
                   "name): refused");
    S_expect_error(f, "return data 'ext/x.yaml'",
                   "data \"ext/x.yaml\": a symbolic link (nothing under checks/ is read through "
                   "one): refused");

    sandbox_error err;
    S_fail_at(f, "return data 'bad.json'", 1, &err);
    const char *prefix = "data \"bad.json\": checks/bad.json:1:7: ";
    if (strncmp(err.msg, prefix, strlen(prefix)) != 0 || strlen(err.msg) <= strlen(prefix))
        fail_msg("parse error reads \"%s\"", err.msg);
    sandbox_error_free(&err);
}

static void test_data_size_cap(void **state)
{
    fx *f = *state;
    f->o.data_bytes = 1024;
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    S_write(f->root, "checks/big.txt", big);
    S_sb(f);
    S_expect_error(f, "return data 'big.txt'",
                   "data \"big.txt\": cannot read: file too large (limit 1024 bytes)");
    S_expect(f, "return data('x.yml').a", "1");
}

static void test_page_inputs(void **state)
{
    fx *f = *state;
    S_sb(f);
    assert_int_equal(sandbox_page_inputs(f->sb)->len, 0);
    S_expect(f, "require 'm' data 'x.json' require 'm' data 'x.json' data 'log.txt' return 1",
             "1");
    const buf *in = sandbox_page_inputs(f->sb);
    const char want[] = "checks/m.lua\0checks/x.json\0checks/log.txt";
    assert_int_equal(in->len, sizeof want);
    assert_memory_equal(in->ptr, want, sizeof want);
    S_new_page(f);
    assert_int_equal(sandbox_page_inputs(f->sb)->len, 0);
}

/* ---- kvsite.measured and kvsite.unit -------------------------------------- */

static void test_measured_provenance(void **state)
{
    fx *f = *state;
    S_sb(f);
    const char *prov = "unset";
    sandbox_figure_begin(f->sb);
    assert_false(sandbox_figure_measured(f->sb, &prov));
    assert_string_equal(prov, "");
    S_expect(f, "return 1", "1");
    assert_false(sandbox_figure_measured(f->sb, NULL));

    S_expect(f,
             "kvsite.measured{source = 'bench', machine = 'A100', engine = 'vllm',\n"
             "                date = '2024-05-01', other = 'ignored', build = 7}\n"
             "return 1",
             "1");
    assert_true(sandbox_figure_measured(f->sb, &prov));
    assert_string_equal(prov, "source: bench; machine: A100; engine: vllm; build: 7; "
                              "date: 2024-05-01");
    /* several measurements in one figure are all kept, each once */
    S_expect(f, "kvsite.measured('second run') kvsite.measured('second run') return 1", "1");
    assert_true(sandbox_figure_measured(f->sb, &prov));
    assert_string_equal(prov, "source: bench; machine: A100; engine: vllm; build: 7; "
                              "date: 2024-05-01 | second run");
    sandbox_figure_begin(f->sb);
    assert_false(sandbox_figure_measured(f->sb, &prov));
    assert_string_equal(prov, "");
    S_expect(f, "kvsite.measured('only') return 1", "1");
    assert_true(sandbox_figure_measured(f->sb, &prov));
    assert_string_equal(prov, "only");
    /* the kind of evidence comes first: reproduced logs or transcribed numbers */
    sandbox_figure_begin(f->sb);
    S_expect(f, "kvsite.measured{source = 'make measure', evidence = 'reproduced'} return 1", "1");
    assert_true(sandbox_figure_measured(f->sb, &prov));
    assert_string_equal(prov, "evidence: reproduced; source: make measure");
    S_expect_error(f, "kvsite.measured(42)",
                   "kvsite.measured: provenance must be a table or a string");
    S_expect_error(f, "kvsite.measured()",
                   "kvsite.measured: provenance must be a table or a string");
}

static void test_user_units(void **state)
{
    fx *f = *state;
    S_sb(f);
    assert_null(quote_units_find(sandbox_units(f->sb), "tok", 3));
    S_expect(f, "kvsite.unit('tok', 1, 'count') return 1", "1");
    const quote_unit *u = quote_units_find(sandbox_units(f->sb), "tok", 3);
    assert_non_null(u);
    assert_int_equal(u->kind, QUOTE_COUNT);
    assert_true(u->scale == 1.0);
    assert_false(u->builtin);
    sandbox_error err;
    S_fail_at(f, "kvsite.unit('GB', 1, 'bytes')", 1, &err);
    assert_true(strncmp(err.msg, "kvsite.unit: ", 13) == 0 && strlen(err.msg) > 13);
    sandbox_error_free(&err);
    S_expect_error(f, "kvsite.unit('x', 'y', 'count')",
                   "bad argument #2 to 'unit' (number expected, got string)");
    /* units belong to the page that defined them */
    S_new_page(f);
    assert_null(quote_units_find(sandbox_units(f->sb), "tok", 3));
    assert_non_null(quote_units_find(sandbox_units(f->sb), "GiB", 3));
}

/* ---- errors --------------------------------------------------------------- */

typedef struct {
    const char *code;
    int first_line;
    int line;
    const char *msg;
} err_case;

static void test_error_lines(void **state)
{
    fx *f = *state;
    S_sb(f);
    static const err_case cases[] = {
        {"local a = 1\nlocal b = 2\nerror('boom')\n", 40, 42, "boom"},
        {"local x = 1\nlocal = 2\n", 10, 11, "<name> expected near '='"},
        {"local function g()\n  return nil + 1\nend\n\ng()\n", 100, 101,
         "attempt to perform arithmetic on a nil value"},
        {"local m = require 'fail'\n\nm.f()\n", 20, 22, "checks/fail.lua:2: bad input"},
        {"\nerror('plain', 0)", 7, 8, "plain"},
        {"error(42)", 3, 3, "42"},
        {"error()", 5, 5, "error object is a nil value"},
        {"error({code = 1})", 6, 6, "error object is a table value"},
        {"load('error(\"in load\")')()", 9, 9, "(load):1: in load"},
        {"return 1 +", 1, 1, "unexpected symbol near <eof>"},
        {"x = 1\nreturn undefined_fn()", 0, 2,
         "attempt to call a nil value (global 'undefined_fn')"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        sandbox_error err;
        S_fail_at(f, cases[i].code, cases[i].first_line, &err);
        if (!err.file || strcmp(err.file, PAGE) != 0 || err.line != cases[i].line ||
            strcmp(err.msg, cases[i].msg) != 0 || err.limit)
            fail_msg("case %zu: %s:%d: %s (limit %d)", i, err.file ? err.file : "-", err.line,
                     err.msg, err.limit);
        sandbox_error_free(&err);
    }
}

static void test_long_error_truncated(void **state)
{
    fx *f = *state;
    S_sb(f);
    sandbox_error err;
    S_fail_at(f, "error(string.rep('x', 1000), 0)", 1, &err);
    assert_int_equal(strlen(err.msg), 603);
    assert_string_equal(err.msg + 600, "...");
    assert_int_equal(err.msg[599], 'x');
    sandbox_error_free(&err);
}

static void test_hostile_tostring_not_run(void **state)
{
    fx *f = *state;
    S_sb(f);
    sandbox_error err;
    S_fail_at(f,
              "hit = false\n"
              "error(setmetatable({}, {__tostring = function() hit = true; while true do end end,\n"
              "                        __index = function() hit = true end}))",
              1, &err);
    assert_string_equal(err.msg, "error object is a table value");
    assert_false(err.limit);
    assert_int_equal(err.line, 2);
    sandbox_error_free(&err);
    S_expect(f, "return hit", "false");
    /* inside the page's own pcall the error object stays what it was */
    S_expect(f, "return select('#', pcall(error, setmetatable({}, {__tostring = error})))", "2");
}

static void test_print_is_a_note(void **state)
{
    fx *f = *state;
    S_sb(f);
    char *s = S_eval_at(f, "local t = {}\nprint('a', 1, nil, true, 2.5, t)\nreturn 1", 10);
    free(s);
    assert_int_equal(f->dl.n, 1);
    assert_int_equal(f->dl.v[0].level, DIAG_NOTE);
    assert_string_equal(f->dl.v[0].file, PAGE);
    assert_int_equal(f->dl.v[0].line, 11);
    assert_int_equal(f->dl.v[0].col, 0);
    assert_string_equal(f->dl.v[0].msg, "print: a\t1\t\ttrue\t2.5\t(a table value)");
    assert_int_equal(f->dl.errors, 0);
    s = S_eval(f, "print(string.rep('y', 10000)) return 1");
    free(s);
    assert_int_equal(f->dl.n, 2);
    assert_int_equal(strlen(f->dl.v[1].msg), strlen("print: ") + 4096 + 3);
}

static void test_pcall_api(void **state)
{
    fx *f = *state;
    S_sb(f);
    free(S_eval_at(f, "function add(a, b)\n  return a + b\nend", 30));
    lua_State *L = sandbox_lua(f->sb);
    sandbox_push_env(f->sb);
    lua_getfield(L, -1, "add");
    lua_remove(L, -2);
    lua_pushinteger(L, 2);
    lua_pushinteger(L, 3);
    int nres = -1;
    sandbox_error err;
    assert_int_equal(sandbox_pcall(f->sb, 2, &nres, &err), 0);
    assert_int_equal(nres, 1);
    assert_int_equal(lua_tointeger(L, -1), 5);
    lua_pop(L, 1);
    assert_int_equal(lua_gettop(L), 0);

    sandbox_push_env(f->sb);
    lua_getfield(L, -1, "add");
    lua_remove(L, -2);
    lua_pushnil(L);
    lua_pushinteger(L, 3);
    assert_int_equal(sandbox_pcall(f->sb, 2, &nres, &err), -1);
    assert_string_equal(err.file, PAGE);
    assert_int_equal(err.line, 31);
    assert_string_equal(err.msg, "attempt to perform arithmetic on a nil value (local 'a')");
    assert_int_equal(lua_gettop(L), 0);
    sandbox_error_free(&err);
}

/* ---- sandbox_tostring ----------------------------------------------------- */

static void test_tostring(void **state)
{
    (void)state;
    lua_State *L = luaL_newstate();
    static const struct {
        const char *expr, *text;
        bool ok;
    } cases[] = {
        {"42", "42", true},
        {"-7", "-7", true},
        {"math.maxinteger", "9223372036854775807", true},
        {"2.5", "2.5", true},
        {"2.0", "2", true},
        {"1e15", "1e+15", true},
        {"1e20", "1e+20", true},
        {"123456789012345.0", "123456789012345", true},
        {"0.1", "0.1", true},
        {"0.1 + 0.2", "0.3", true},
        {"1 / 3", "0.33333333333333", true},
        {"234881024 / 2^20", "224", true},
        {"math.huge", "inf", true},
        {"-math.huge", "-inf", true},
        {"true", "true", true},
        {"false", "false", true},
        {"nil", "", true},
        {"'text'", "text", true},
        {"'a\\0b'", "a\0b", true},
        {"{}", "(a table value)", false},
        {"print", "(a function value)", false},
        {"setmetatable({}, {__tostring = function() return 'no' end})", "(a table value)", false},
        {"coroutine.create(print)", "(a thread value)", false},
    };
    luaL_openlibs(L);
    for (size_t i = 0; i < N(cases); i++) {
        char code[200];
        snprintf(code, sizeof code, "return %s", cases[i].expr);
        assert_int_equal(luaL_dostring(L, code), LUA_OK);
        buf b = BUF_INIT;
        bool ok = sandbox_tostring(L, -1, &b);
        size_t want_len = strcmp(cases[i].expr, "'a\\0b'") == 0 ? 3 : strlen(cases[i].text);
        if (ok != cases[i].ok || b.len != want_len || memcmp(buf_cstr(&b), cases[i].text, want_len))
            fail_msg("%s gave \"%s\" (%d)", cases[i].expr, buf_cstr(&b), ok);
        buf_free(&b);
        lua_settop(L, 0);
    }
    lua_close(L);
}

/* sandbox_eval keeps compiled expressions by their text: a repeated text
 * gives the same function, a syntax error is not kept, different texts never
 * mix, and past 4096 texts the cache starts over without losing a value. */
static void test_expression_cache(void **state)
{
    fx *f = *state;
    S_sb(f);
    sandbox_set_arith(f->sb, false); /* these texts are arithmetic: make them compile */
    lua_State *L = sandbox_lua(f->sb);
    sandbox_error err;
    int nres = 0;
    const char *bad = "return 1 +";
    for (int k = 0; k < 2; k++) {
        assert_int_equal(sandbox_eval(f->sb, bad, strlen(bad), PAGE, 7, &nres, &err), -1);
        assert_int_equal(err.line, 7);
        sandbox_error_free(&err);
        assert_int_equal(lua_gettop(L), 0);
    }
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 5000; i++) {
            char code[64];
            /* texts of every length around the hash's eight-byte words */
            int n = snprintf(code, sizeof code, "return %d + %.*s0", i, i % 17, "0000000000000000");
            assert_int_equal(sandbox_eval(f->sb, code, (size_t)n, PAGE, 1, &nres, &err), 0);
            assert_int_equal(nres, 1);
            assert_int_equal(lua_tointeger(L, -1), i);
            lua_pop(L, 1);
        }
    }
    /* a prefix of a cached text is another expression */
    const char *a = "return 12", *b = "return 123";
    assert_int_equal(sandbox_eval(f->sb, b, strlen(b), PAGE, 1, &nres, &err), 0);
    assert_int_equal(lua_tointeger(L, -1), 123);
    lua_pop(L, 1);
    assert_int_equal(sandbox_eval(f->sb, a, strlen(a), PAGE, 1, &nres, &err), 0);
    assert_int_equal(lua_tointeger(L, -1), 12);
    lua_pop(L, 1);
    /* a cached function sees the current page's environment */
    free(S_eval_at(f, "x = 1", 1));
    const char *x = "return x";
    assert_int_equal(sandbox_eval(f->sb, x, strlen(x), PAGE, 1, &nres, &err), 0);
    assert_int_equal(lua_tointeger(L, -1), 1);
    lua_pop(L, 1);
    S_new_page(f);
    assert_int_equal(sandbox_eval(f->sb, x, strlen(x), PAGE, 1, &nres, &err), 0);
    assert_true(lua_isnil(L, -1));
    lua_pop(L, 1);
}

/* ---- arithmetic without the compiler (S_arith) ----------------------------- */

/* Evaluates code with sandbox_eval's arithmetic path on, then off (Lua
 * compiles it), and asserts both give the same: return code, error, number
 * of values, and each value's type, subtype and bits. fast tells whether the
 * arithmetic path must have taken it (else it must have left it to Lua). */
static void S_same_as_lua(fx *f, const char *code, size_t len, bool fast)
{
    lua_State *L = sandbox_lua(f->sb);
    sandbox_error e1, e2;
    int n1 = -1, n2 = -1;
    unsigned long before = sandbox_arith_count(f->sb);
    sandbox_set_arith(f->sb, true);
    int rc1 = sandbox_eval(f->sb, code, len, PAGE, 3, &n1, &e1);
    bool took = sandbox_arith_count(f->sb) != before;
    if (took != fast)
        fail_msg("%.*s: %s", (int)len, code, took ? "taken by the arithmetic path" : "left to Lua");
    int top1 = lua_gettop(L);
    sandbox_set_arith(f->sb, false);
    int rc2 = sandbox_eval(f->sb, code, len, PAGE, 3, &n2, &e2);
    sandbox_set_arith(f->sb, true);
    assert_int_equal(sandbox_arith_count(f->sb), took ? before + 1 : before);
    if (rc1 != rc2)
        fail_msg("%.*s: returned %d, Lua %d", (int)len, code, rc1, rc2);
    if (rc1 != 0) {
        if (strcmp(e1.msg, e2.msg) != 0 || e1.line != e2.line || e1.limit != e2.limit ||
            strcmp(e1.file, e2.file) != 0)
            fail_msg("%.*s: error \"%s\", Lua's \"%s\"", (int)len, code, e1.msg, e2.msg);
        sandbox_error_free(&e1);
        sandbox_error_free(&e2);
        assert_int_equal(lua_gettop(L), 0);
        return;
    }
    if (n1 != n2 || top1 != n1 || lua_gettop(L) != n1 + n2)
        fail_msg("%.*s: %d values, Lua %d", (int)len, code, n1, n2);
    for (int i = 1; i <= n1; i++) {
        int a = i, b = n1 + i;
        if (lua_type(L, a) != lua_type(L, b))
            fail_msg("%.*s: value %d is a %s, Lua's a %s", (int)len, code, i,
                     luaL_typename(L, a), luaL_typename(L, b));
        if (lua_type(L, a) == LUA_TNUMBER) {
            if (lua_isinteger(L, a) != lua_isinteger(L, b))
                fail_msg("%.*s: value %d integer %d, Lua's %d", (int)len, code, i,
                         lua_isinteger(L, a), lua_isinteger(L, b));
            if (lua_isinteger(L, a)) {
                assert_true(lua_tointeger(L, a) == lua_tointeger(L, b));
            } else {
                double x = lua_tonumber(L, a), y = lua_tonumber(L, b);
                if (memcmp(&x, &y, sizeof x) != 0)
                    fail_msg("%.*s: value %d is %.17g, Lua's %.17g", (int)len, code, i, x, y);
            }
        } else if (lua_type(L, a) == LUA_TSTRING) {
            assert_string_equal(lua_tostring(L, a), lua_tostring(L, b));
        }
    }
    lua_settop(L, 0);
}

static void S_same_expr(fx *f, const char *expr, bool fast)
{
    buf code = BUF_INIT;
    buf_puts(&code, "return ");
    buf_puts(&code, expr);
    S_same_as_lua(f, code.ptr, code.len, fast);
    buf_free(&code);
}

/* The value of one expression through sandbox_eval, which must succeed. */
static void S_eval_number(fx *f, const char *expr, bool integer, double want)
{
    lua_State *L = sandbox_lua(f->sb);
    char code[200];
    int n = snprintf(code, sizeof code, "return %s", expr);
    int nres = 0;
    sandbox_error err;
    assert_int_equal(sandbox_eval(f->sb, code, (size_t)n, PAGE, 1, &nres, &err), 0);
    assert_int_equal(nres, 1);
    assert_int_equal(lua_isinteger(L, -1), integer);
    if (lua_tonumber(L, -1) != want)
        fail_msg("%s gave %.17g, expected %.17g", expr, lua_tonumber(L, -1), want);
    lua_settop(L, 0);
}

static void test_arith_same_as_lua(void **state)
{
    fx *f = *state;
    S_sb(f);
    free(S_eval(f, "a, b, f, z, nz, big = 6, 7, 2.5, 0, 0.0, math.maxinteger\n"
                   "s, t, w = '10', {}, 'x'\n"
                   "n40_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 3\n"
                   "n41_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 4\n"
                   "g = function() return 1 end"));
    static const char *fast[] = {
        "9223372036854775807+1", "7//2", "7.0//2", "-7//2", "7%-3", "-7.5%2", "2^-1", "1/0",
        "-(2)^2", "-2^2", "2^3^2", "2^-3^2", "1e308*10", "0x10*2", "3 - -2", "(1+2)*3",
        "a*b", "a*b, 2*3", "a, b, f, 1", "-a*b", "-a^2", "a*b*f/3+2-1%4",
        "1+2*3^2/4//1%5-6", "\t1 +\n 2 \r\f\v", "((((1))))", "f//1", "f%1", "big*2", "big//-1",
        "(-big-1)//-1", "(-big-1)%-1", "-big-2", "5 % 0.0", "-5 % 0.0", "0/0", "-0/1",
        "-0.0", "0.0*-1", "1 - 1.0", "7 // 0.0", "-7 // 0.0", "z - 0", "nz*-1", "z/nz",
        "3 % -2.5", "-3 % 2", "4 // -3.0", "2^0.5", "1e-5", "1E+3", "0X1P-2", "0x1p4", "0xA",
        "3.", ".5*2", "1.5e3", "0xffffffffffffffff", "0x7fffffffffffffff+0x1",
        "9223372036854775808", "-9223372036854775808", "18446744073709551616*2",
        "0.1+0.2", "1/3", "2^63", "2^1024", "-2^1024", "a//b", "b%a", "big%-2",
        "n40_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa*2", "1,2,3,4,5", "(a)", "- - -1",
        "2*60*1*64*32768*2", "0x1e+1", "budget*1024", "x_", "a-b", "a+-b", "a^-b",
        "2*a", "1, a", "(1+a)*b", "1 - -a^2*b", "2^a^-b", "1,2,a,3,b*f", "z//f",
    };
    free(S_eval(f, "budget, x_ = 80, 0.25"));
    for (size_t i = 0; i < N(fast); i++)
        S_same_expr(f, fast[i], true);
    static const char *lua[] = {
        /* Lua raises, coerces or gives something that is no number */
        "x_nil*2", "x_nil", "s*2", "s", "s+1", "t*2", "t", "w*2", "g*2", "1//0", "1%0", "a//z",
        "a%z", "-7%0", "\"10\"*2", "'a'",
        /* other tokens */
        "a.b", "a[1]", "g()", "#t", "a<b", "a==b", "a and b", "a or b", "not a", "1 .. 2",
        "1 -- comment", "3--2", "a~b", "a&b", "a|b", "a<<1", "a>>1", "~a", "1;", "math.pi*2",
        "[[x]]", "{}", "true", "nil", "...", "_ENV", "_G", "function() end", "a:b()",
        /* malformed */
        "1 +", "(1", "1)", "(1,2)", "1,", ",1", "", " ", "a b", "2a", "3..2", "0x", "1e",
        "1e+", "0x1p", ".0x1", "0x.p1", "1 2", "()", "-", "a--b", "1.2.3", "08x",
        /* names Lua would not treat as globals */
        "n41_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa*2", "and", "end+1", "return",
        "\xc3\xa9",
    };
    for (size_t i = 0; i < N(lua); i++)
        S_same_expr(f, lua[i], false);
    /* the text must be "return EXPR", nothing looser */
    static const char *shapes[] = {"return(1)", "return\t1", " return 1", "return", "retur 1",
                                   "x = 1 return 1", "return 1 return 2"};
    for (size_t i = 0; i < N(shapes); i++)
        S_same_as_lua(f, shapes[i], strlen(shapes[i]), false);
    S_same_as_lua(f, "return 1\0+1", 11, false);
    S_same_as_lua(f, "return a\0", 9, false);
    /* _ENV is the environment, even when a global has its name */
    free(S_eval(f, "rawset(_G, '_ENV', 5)"));
    S_same_expr(f, "_ENV*2", false);
    /* a few values spelled out, in case both paths agreed on a wrong one */
    S_eval_number(f, "-2^2", false, -4);
    S_eval_number(f, "2^3^2", false, 512);
    S_eval_number(f, "7//2", true, 3);
    S_eval_number(f, "-7//2", true, -4);
    S_eval_number(f, "7%-3", true, -2);
    S_eval_number(f, "-7.5%2", false, 0.5);
    S_eval_number(f, "9223372036854775807+1", true, -9223372036854775807.0 - 1);
    S_eval_number(f, "3 - -2", true, 5);
    S_eval_number(f, "a*b", true, 42);
}

/* Bounds: operators and parentheses pending at once, values, the length of
 * the text and of a numeral. Past them Lua evaluates the text, whatever it gives. */
static void test_arith_bounds(void **state)
{
    fx *f = *state;
    S_sb(f);
    buf e = BUF_INIT;
    for (int depth = 63; depth <= 66; depth++) {
        buf_clear(&e);
        for (int i = 0; i < depth; i++)
            buf_putc(&e, '(');
        buf_putc(&e, '1');
        for (int i = 0; i < depth; i++)
            buf_putc(&e, ')');
        S_same_expr(f, e.ptr, depth <= 64);
        buf_clear(&e);
        for (int i = 0; i < depth; i++)
            buf_puts(&e, "- ");
        buf_putc(&e, '1');
        S_same_expr(f, e.ptr, depth <= 64);
        buf_clear(&e);
        for (int i = 0; i < depth; i++)
            buf_puts(&e, "2^");
        buf_putc(&e, '1');
        S_same_expr(f, e.ptr, depth <= 64);
    }
    buf_clear(&e);
    for (int i = 0; i < 100; i++)
        buf_puts(&e, "1+1*");
    buf_putc(&e, '1');
    S_same_expr(f, e.ptr, true); /* long, but 1+ is done before the next one */
    buf_clear(&e);
    for (int i = 0; i < 600; i++)
        buf_puts(&e, i ? "+1" : "1");
    S_same_expr(f, e.ptr, false); /* longer than the arithmetic path reads */
    buf_clear(&e);
    for (int i = 0; i < 64; i++)
        buf_puts(&e, i ? ",1" : "1");
    S_same_expr(f, e.ptr, true); /* 64 values */
    buf_puts(&e, ",1");
    S_same_expr(f, e.ptr, false);
    for (int i = 0; i < 200; i++)
        buf_puts(&e, ",1");
    S_same_expr(f, e.ptr, false); /* Lua: too many registers */
    buf_clear(&e);
    buf_puts(&e, "1.");
    for (int i = 0; i < 62; i++)
        buf_putc(&e, '5');
    S_same_expr(f, e.ptr, true); /* a numeral of 64 bytes */
    buf_putc(&e, '5');
    S_same_expr(f, e.ptr, false);
    buf_free(&e);
}

/* More names than the arithmetic path keeps as strings: each still finds its
 * own value, also once the page changed it. */
static void test_arith_many_names(void **state)
{
    fx *f = *state;
    S_sb(f);
    free(S_eval(f, "for i = 1, 2000 do _G['v' .. i] = i end"));
    for (int round = 0; round < 2; round++) {
        for (int i = 1; i <= 2000; i++) {
            char e[64];
            snprintf(e, sizeof e, "v%d * 2 + v%d", i, 2001 - i);
            S_eval_number(f, e, true, 2.0 * i + 2001 - i + round * 3000.0);
        }
        free(S_eval(f, "for i = 1, 2000 do _G['v' .. i] = _G['v' .. i] + 1000 end"));
    }
    S_same_expr(f, "v1 * v2000", true);
}

/* The page's environment with a metatable: Lua looks names up through it. */
static void test_arith_env_metatable(void **state)
{
    fx *f = *state;
    S_sb(f);
    free(S_eval(f, "a = 6 setmetatable(_G, {__index = function(t, k) return 7 end})"));
    S_same_expr(f, "a*2", false);
    S_same_expr(f, "undefined*2", false);
    S_eval_number(f, "undefined*2", true, 14);
    S_same_expr(f, "1+2", true); /* no name: nothing to look up */
}

/* The arithmetic path counts against the instruction budget, and once the
 * budget is spent sandbox_eval fails as it always did. */
static void test_arith_budget(void **state)
{
    fx *f = *state;
    f->o.instructions = 20000;
    S_sb(f);
    lua_State *L = sandbox_lua(f->sb);
    const char *code = "return 1 + 2 * 3";
    sandbox_error err;
    int nres = 0, i;
    for (i = 0; i < 100000; i++) {
        if (sandbox_eval(f->sb, code, strlen(code), PAGE, 1, &nres, &err) != 0)
            break;
        assert_int_equal(nres, 1);
        lua_pop(L, 1);
    }
    assert_true(i < 100000);
    assert_true(err.limit);
    assert_non_null(strstr(err.msg, "instruction budget exceeded"));
    sandbox_error_free(&err);
    assert_int_equal(lua_gettop(L), 0);
    unsigned long count = sandbox_arith_count(f->sb);
    assert_int_equal(sandbox_eval(f->sb, code, strlen(code), PAGE, 1, &nres, &err), -1);
    assert_true(err.limit);
    sandbox_error_free(&err);
    assert_int_equal(sandbox_arith_count(f->sb), count);
    assert_int_equal(lua_gettop(L), 0);
}

/* ---- blocks of assignments without the compiler (S_block) ----------------- */

/* The globals of the page's environment in lua_next order, each key and a
 * snapshot of its value: type, integer or float and bits, text. */
static void S_globals(fx *f, buf *out)
{
    lua_State *L = sandbox_lua(f->sb);
    sandbox_push_env(f->sb);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        buf_printf(out, "%s=%s:", lua_tostring(L, -2), luaL_typename(L, -1));
        if (lua_type(L, -1) == LUA_TNUMBER && lua_isinteger(L, -1)) {
            buf_printf(out, "i%lld", (long long)lua_tointeger(L, -1));
        } else if (lua_type(L, -1) == LUA_TNUMBER) {
            double d = lua_tonumber(L, -1);
            uint64_t bits;
            memcpy(&bits, &d, sizeof bits);
            buf_printf(out, "f%016llx", (unsigned long long)bits);
        } else if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TBOOLEAN) {
            sandbox_tostring(L, -1, out);
        }
        buf_putc(out, '\n');
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

#define BLOCK_PRELUDE "a, b, f, z, s, big = 6, 7, 2.5, 0, '10', math.maxinteger n = 0"

/* Runs code as a block at line 5 of a fresh page, with the fast path on,
 * then off (Lua compiles it), and asserts both give the same: return code,
 * number of results, error (message, file, line, limit), and every global
 * of the page afterwards, in the same lua_next order (so stored in the same
 * order). fast tells whether the fast path must have taken it. */
static void S_same_block(fx *f, const char *code, size_t len, bool fast)
{
    lua_State *L = sandbox_lua(f->sb);
    sandbox_error e[2];
    int rc[2], nres[2];
    buf g[2] = {BUF_INIT, BUF_INIT};
    bool took = false;
    for (int k = 0; k < 2; k++) {
        S_new_page(f);
        free(S_eval(f, BLOCK_PRELUDE));
        unsigned long before = sandbox_arith_count(f->sb);
        sandbox_set_arith(f->sb, k == 0);
        nres[k] = -1;
        rc[k] = sandbox_run(f->sb, code, len, PAGE, 5, &nres[k], &e[k]);
        sandbox_set_arith(f->sb, true);
        if (k == 0)
            took = sandbox_arith_count(f->sb) != before;
        else
            assert_int_equal(sandbox_arith_count(f->sb), before);
        if (rc[k] == 0)
            lua_pop(L, nres[k]);
        assert_int_equal(lua_gettop(L), 0);
        S_globals(f, &g[k]);
    }
    if (took != fast)
        fail_msg("%.*s: %s", (int)len, code, took ? "taken by the fast path" : "left to Lua");
    if (rc[0] != rc[1] || (rc[0] == 0 && nres[0] != nres[1]))
        fail_msg("%.*s: returned %d (%d results), Lua %d (%d)", (int)len, code, rc[0], nres[0],
                 rc[1], nres[1]);
    if (rc[0] != 0) {
        if (strcmp(e[0].msg, e[1].msg) != 0 || e[0].line != e[1].line ||
            e[0].limit != e[1].limit || strcmp(e[0].file, e[1].file) != 0)
            fail_msg("%.*s: error %d \"%s\", Lua's %d \"%s\"", (int)len, code, e[0].line,
                     e[0].msg, e[1].line, e[1].msg);
        sandbox_error_free(&e[0]);
        sandbox_error_free(&e[1]);
    }
    if (strcmp(buf_cstr(&g[0]), buf_cstr(&g[1])) != 0)
        fail_msg("%.*s: globals\n%s\nLua's\n%s", (int)len, code, buf_cstr(&g[0]),
                 buf_cstr(&g[1]));
    buf_free(&g[0]);
    buf_free(&g[1]);
}

static void S_same_block_text(fx *f, const char *code, bool fast)
{
    S_same_block(f, code, strlen(code), fast);
}

static void test_block_same_as_lua(void **state)
{
    fx *f = *state;
    S_sb(f);
    static const char *fast[] = {
        "",
        "-- only a comment",
        "x = 1",
        "x, y = 1, 2",
        "x, y, w = 1, 2.0, 2^2",
        "a, b = b, a",
        "a, b, z = z, a, b",
        "x, y, w = 1",
        "x = 1, 2, 3",
        "x, y = 1, 2, a * b",
        "x = 2\ny = x * 3\nx = y + x\nz = x // y",
        "a = a + 1\nb = a * b\na = a + b",
        "-- the model\nlayers, heads = 80, 8 -- trailing\n--| echo: true\nper = 2 * layers * heads",
        "x = 1; y = 2;;\n;z = x + y;",
        "x = 1 y = 2",
        "x=1",
        "x\n=\n1\n,\n2",
        "x\t,\ty\t=\t(1 + 2) * 3\t, -a",
        "x = 1\r\ny = 2\r\n",
        "x = 1 -- c\ry = x",
        "x = 7 // 2 y = 7 / 2 w = 7 % -3 v = -7.5 % 2 u = big + 1 t = 1e308 * 10",
        "x = 0/0 y = -0.0 w = 2^63 v = 9223372036854775808 u = 0x10",
        "_G = 1",
        "x, y = 1\ny = x",
        "n = n + 1 n = n + 1 n = n + 1",
        "--|\n--| eval: true\nx = 1",
        "--\nx = 1",
        "-- [[ not a long comment\nx = 1",
        "n40_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 3",
        "layers, kv_heads, q_heads, head_dim, width = 80, 1, 4, 96, 4\n"
        "tokens, long_tokens, batch, budget_gib = 8192, 32768, 4, 8\n"
        "per_token = 2 * layers * kv_heads * head_dim * width\n",
    };
    for (size_t i = 0; i < N(fast); i++)
        S_same_block_text(f, fast[i], true);
    static const char *lua[] = {
        /* fails part-way: Lua's error at its line, a and b already stored */
        "a = a + 1\nb = 2\nc = a // 0\n",
        "a = a + 1\nb = nothing * 2",
        "a = a + 1\nb = s * 2",
        "x, y = 1\nw = y + 1",
        "a = a + 1\nlocal q = 1",
        "local x = 1",
        "local a = 1\nb = a",
        "x = 1 --[[ long ]] y = 2",
        "x = 1 --[==[ long\n]==] y = 2",
        "--[ short, but not read here\nx = 1",
        "x = 'str'",
        "x = \"s\" .. 1",
        "x = s",
        "x = math.pi * 2",
        "x = f(1)",
        "print(1)",
        "x = 1 (print)(2)",
        "x = 1, nothing",
        "x = {}",
        "a.b = 1",
        "a[1] = 2",
        "x = 1 == 2",
        "x = a < b",
        "x = 1, y = 2",
        "x, x = 1, 2",
        "x, y, x = 1, 2, 3",
        "_ENV = 1",
        "x, _ENV = 1, 2",
        "and = 1",
        "x = end",
        "return 1",
        "x = 1 return x",
        "x = -- c\n 1",
        "x -- c\n = 1",
        "x, = 1",
        ", x = 1",
        "x y = 1",
        "x =",
        "x = 1 2",
        "1 = 2",
        "x = (1",
        "x = 1)",
        "x = 1 // 0",
        "x = 1e",
        "x = 3b = 4",
        "n41_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa = 3",
        "x = 1\nfunction g() end",
        "\xef\xbb\xbfx = 1",
        "x = 1\xc3\xa9",
    };
    for (size_t i = 0; i < N(lua); i++)
        S_same_block_text(f, lua[i], false);
    S_same_block(f, "x = 1\0y = 2", 11, false);
    S_same_block(f, "x = 1 --\0\ny = 2", 15, true);
}

/* Bounds: the block's length, its assignments, the names on one side and
 * the values of one list. Past them Lua runs the block. */
static void test_block_bounds(void **state)
{
    fx *f = *state;
    S_sb(f);
    buf c = BUF_INIT;
    for (int names = 31; names <= 33; names++) {
        buf_clear(&c);
        for (int i = 0; i < names; i++)
            buf_printf(&c, "%sv%d", i ? ", " : "", i);
        buf_puts(&c, " = 1, 2.5");
        S_same_block(f, c.ptr, c.len, names <= 32);
    }
    for (int sets = 127; sets <= 129; sets++) {
        buf_clear(&c);
        for (int i = 0; i < sets; i++)
            buf_printf(&c, "v%d = %d\n", i % 100, i);
        S_same_block(f, c.ptr, c.len, sets <= 128);
    }
    buf_clear(&c);
    buf_puts(&c, "x = 1");
    while (c.len < 4096)
        buf_putc(&c, ' ');
    S_same_block(f, c.ptr, c.len, true);
    buf_putc(&c, ' ');
    S_same_block(f, c.ptr, c.len, false);
    buf_clear(&c);
    buf_puts(&c, "x = 0");
    for (int i = 0; i < 64; i++)
        buf_puts(&c, ", 1");
    S_same_block(f, c.ptr, c.len, false); /* 65 values */
    buf_free(&c);
}

/* The page's environment with a metatable: Lua's stores could call it. */
static void test_block_env_metatable(void **state)
{
    fx *f = *state;
    S_sb(f);
    lua_State *L = sandbox_lua(f->sb);
    free(S_eval(f, "log = {} setmetatable(_G, {__newindex = function(t, k, v) "
                   "rawset(t, k, v) log[#log + 1] = k end})"));
    unsigned long before = sandbox_arith_count(f->sb);
    free(S_eval(f, "x, y = 1, 2"));
    assert_int_equal(sandbox_arith_count(f->sb), before);
    char *got = S_eval(f, "return log[1] .. log[2]");
    assert_string_equal(got, "yx");
    free(got);
    assert_int_equal(lua_gettop(L), 0);
}

/* The fast path counts against the instruction budget; once it is spent,
 * the block fails as Lua would have. */
static void test_block_budget(void **state)
{
    fx *f = *state;
    f->o.instructions = 20000;
    S_sb(f);
    const char *code = "x, y = 1, 2 w = x * y + 3";
    int nres = 0, i;
    sandbox_error err;
    for (i = 0; i < 100000; i++) {
        if (sandbox_run(f->sb, code, strlen(code), PAGE, 1, &nres, &err) != 0)
            break;
        assert_int_equal(nres, 0);
    }
    assert_true(i < 100000);
    assert_true(err.limit);
    assert_non_null(strstr(err.msg, "instruction budget exceeded"));
    sandbox_error_free(&err);
    assert_int_equal(lua_gettop(sandbox_lua(f->sb)), 0);
    unsigned long count = sandbox_arith_count(f->sb);
    assert_int_equal(sandbox_run(f->sb, code, strlen(code), PAGE, 1, &nres, &err), -1);
    assert_true(err.limit);
    sandbox_error_free(&err);
    assert_int_equal(sandbox_arith_count(f->sb), count);
}

/* ---- the compiled path's bookkeeping at the memory cap --------------------- */

/* In a pcall: a userdata of argument 1's size, kept by the page. */
static int S_pad(lua_State *L)
{
    lua_newuserdatauv(L, (size_t)lua_tointeger(L, 1), 0);
    lua_setfield(L, lua_upvalueindex(1), "pad");
    return 0;
}

/* Runs `code` before times on a fresh sandbox's page, leaves about room
 * bytes under the memory cap, and runs it once more: it either runs or fails
 * with the memory-cap error at the figure (never a Lua panic), and on the
 * next page it runs. Returns whether the last run ran. */
static bool S_eval_near_cap(fx *f, int before, size_t room)
{
    const char *code = "return tostring(7)";
    sandbox_error err;
    int nres = 0;
    bool ran = false;
    f->sb = sandbox_new(&f->o);
    assert_non_null(f->sb);
    S_new_page(f);
    lua_State *L = sandbox_lua(f->sb);
    for (int i = 0; i < before; i++) {
        assert_int_equal(sandbox_eval(f->sb, code, strlen(code), PAGE, 9, &nres, &err), 0);
        lua_pop(L, nres);
    }
    sandbox_push_env(f->sb);
    lua_pushcclosure(L, S_pad, 1);
    lua_pushinteger(L, (lua_Integer)(f->o.memory - room));
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) { /* no room for this much */
        lua_pop(L, 1);
    } else if (sandbox_eval(f->sb, code, strlen(code), PAGE, 9, &nres, &err) == 0) {
        ran = true;
        assert_int_equal(nres, 1);
        lua_pop(L, 1);
    } else {
        assert_true(err.limit);
        assert_non_null(strstr(err.msg, "memory cap exceeded"));
        /* at the figure: placed there, or placed nowhere */
        assert_true(!err.file || strcmp(err.file, PAGE) == 0);
        assert_true(err.line == 0 || err.line == 9);
        sandbox_error_free(&err);
        S_new_page(f);
        assert_int_equal(sandbox_eval(f->sb, code, strlen(code), PAGE, 9, &nres, &err), 0);
        assert_string_equal(lua_tostring(L, -1), "7");
        lua_pop(L, 1);
    }
    assert_int_equal(lua_gettop(L), 0);
    sandbox_page_end(f->sb);
    sandbox_free(f->sb);
    f->sb = NULL;
    return ran;
}

/* sandbox_eval keeps a function it compiled in its cache and in the page's
 * list of used ones: storing into them must not raise an error outside a
 * pcall when the page sits just under its memory cap, neither for the first
 * expression nor when the used list has to grow. */
static void test_eval_memory_cap_bookkeeping(void **state)
{
    fx *f = *state;
    f->o.memory = 64u << 10;
    int ran = 0, capped = 0;
    for (size_t room = 4096; room > 0; room -= 8)
        S_eval_near_cap(f, 0, room) ? ran++ : capped++;
    assert_true(ran > 0 && capped > 0);
    ran = capped = 0;
    /* 256 uses fill the used list as made at setup: the next one grows it */
    for (size_t room = 12288; room > 0; room -= 64)
        S_eval_near_cap(f, 256, room) ? ran++ : capped++;
    assert_true(ran > 0 && capped > 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, S_setup, S_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_forbidden_absent),
        T(test_load_is_text_only),
        T(test_setmetatable_refuses_gc),
        T(test_random_same_on_every_page),
        T(test_budget_exceeded),
        T(test_budget_inside_pcall),
        T(test_unmetered_within_budget),
        T(test_unmetered_cut_then_metered),
        T(test_unmetered_cut_not_swallowed),
        T(test_unmetered_charges),
        T(test_unmetered_late),
        T(test_memory_cap),
        T(test_memory_error_location_not_stale),
        T(test_page_isolation),
        T(test_expression_cache_keeps_no_page),
        T(test_require_from_checks),
        T(test_require_library),
        T(test_require_refusals),
        T(test_require_error_then_retry),
        T(test_require_size_cap_and_no_checks),
        T(test_data_kinds),
        T(test_data_refusals),
        T(test_data_size_cap),
        T(test_page_inputs),
        T(test_measured_provenance),
        T(test_user_units),
        T(test_error_lines),
        T(test_long_error_truncated),
        T(test_hostile_tostring_not_run),
        T(test_print_is_a_note),
        T(test_pcall_api),
        T(test_expression_cache),
        T(test_arith_same_as_lua),
        T(test_arith_bounds),
        T(test_arith_many_names),
        T(test_arith_env_metatable),
        T(test_arith_budget),
        T(test_block_same_as_lua),
        T(test_block_bounds),
        T(test_block_env_metatable),
        T(test_block_budget),
        T(test_eval_memory_cap_bookkeeping),
        cmocka_unit_test(test_tostring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
