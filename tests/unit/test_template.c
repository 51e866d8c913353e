/* Unit tests for gen/template.c: translation to Lua with the template's line
 * numbers, escaped and raw output, statement lines, includes (and include
 * cycles), errors at templates/<file>:<line>, unterminated tags, caps. */
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
#include <lauxlib.h>
#include <lua.h>

#include "buf.h"
#include "diag.h"
#include "fsutil.h"
#include "sandbox.h"
#include "template.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define PAGE "content/p.md"

/* ---- fixtures ------------------------------------------------------------- */

typedef struct {
    char *root;
    sandbox_opts o;
    size_t max_bytes, max_output;
    sandbox *sb;
    templates *t;
    diag_list dl;
} fx;

static void S_tpl(fx *f, const char *name, const char *text)
{
    char *rel = fs_join("templates", name);
    char *p = fs_join(f->root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    assert_int_equal(fs_mkdir_p(p), 0);
    *slash = '/';
    assert_int_equal(fs_write_file(p, text, strlen(text)), 0);
    free(p);
    free(rel);
}

static int S_setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->root = strdup("/tmp/kvsite-test-template-XXXXXX");
    if (!mkdtemp(f->root))
        return -1;
    f->o = (sandbox_opts){f->root, 1000000, 16u << 20, 1u << 20, 32};
    f->max_bytes = 1u << 20;
    f->max_output = 1u << 20;
    diag_list_init(&f->dl);
    *state = f;
    return 0;
}

static int S_teardown(void **state)
{
    fx *f = *state;
    tpl_free(f->t); /* before the sandbox */
    if (f->sb) {
        sandbox_page_end(f->sb);
        sandbox_free(f->sb);
    }
    diag_list_free(&f->dl);
    fs_remove_tree(f->root);
    free(f->root);
    free(f);
    return 0;
}

/* Starts the sandbox, the templates and a page whose globals are set by lua. */
static void S_start(fx *f, const char *lua)
{
    f->sb = sandbox_new(&f->o);
    assert_non_null(f->sb);
    f->t = tpl_new(f->sb, f->root, f->max_bytes, f->max_output);
    sandbox_page_begin(f->sb, PAGE, &f->dl);
    int nres = 0;
    sandbox_error err;
    if (sandbox_run(f->sb, lua, strlen(lua), PAGE, 1, &nres, &err) != 0)
        fail_msg("page Lua: %s", err.msg);
    lua_pop(sandbox_lua(f->sb), nres);
}

/* Renders name, which must succeed, and compares the output. */
static void S_render_ok(fx *f, const char *name, const char *want)
{
    buf out = BUF_INIT;
    if (tpl_render(f->t, name, &out, &f->dl) != 0)
        fail_msg("render %s: %s:%d: %s", name, f->dl.n ? f->dl.v[f->dl.n - 1].file : "-",
                 f->dl.n ? f->dl.v[f->dl.n - 1].line : 0, f->dl.n ? f->dl.v[f->dl.n - 1].msg : "");
    if (strcmp(buf_cstr(&out), want) != 0)
        fail_msg("render %s:\n--- got\n%s\n--- expected\n%s", name, buf_cstr(&out), want);
    assert_int_equal(lua_gettop(sandbox_lua(f->sb)), 0);
    buf_free(&out);
}

/* Renders name, which must fail with exactly one new error. */
static void S_render_err_at(fx *f, const char *name, const char *file, int line, int col,
                            const char *msg)
{
    buf out = BUF_INIT;
    buf_puts(&out, "before|");
    size_t n0 = f->dl.n;
    assert_int_equal(tpl_render(f->t, name, &out, &f->dl), -1);
    assert_int_equal(f->dl.n, n0 + 1);
    const diag *d = &f->dl.v[n0];
    if (d->level != DIAG_ERROR || strcmp(d->file, file) != 0 || d->line != line ||
        strcmp(d->msg, msg) != 0)
        fail_msg("render %s: %s:%d: \"%s\"\n  expected %s:%d: \"%s\"", name, d->file, d->line,
                 d->msg, file, line, msg);
    assert_int_equal(d->col, col);
    /* nothing of a failed render is left in the output */
    assert_string_equal(buf_cstr(&out), "before|");
    assert_int_equal(lua_gettop(sandbox_lua(f->sb)), 0);
    buf_free(&out);
}

/* The same for an error without a column (all but syntax errors). */
static void S_render_err(fx *f, const char *name, const char *file, int line, const char *msg)
{
    S_render_err_at(f, name, file, line, 0, msg);
}

/* ---- translation ---------------------------------------------------------- */

typedef struct {
    const char *src, *lua;
} tr_case;

static void test_translate_exact(void **state)
{
    (void)state;
    static const tr_case cases[] = {
        {"", "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; \n"},
        {"Hi {{ name }}!\n",
         "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; _o(\"Hi \") _oe( name ) _o(\"!\\n\")\n\n"},
        {"{{{ x }}}", "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; _or( x ) \n"},
        {"a\"b\\c\td\x7f", "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; _o(\"a\\\"b\\\\c\\009d\\127\") \n"},
        {"{% for i = 1, 2 do %}\n{{ i }}\n{% end %}\n",
         "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...;  for i = 1, 2 do  \n_oe( i ) _o(\"\\n\")\n end  \n\n"},
        /* a quoted name: in place, through this template's writers */
        {"{{ include \"partials/h.html\" }}",
         "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; _inc(\"partials/h.html\", _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc) \n"},
        {"{{include('x.html')}}", "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; _inc('x.html', _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc) \n"},
        /* anything else: the include function's string */
        {"{{ include \"a\" .. x }}{{ include(n) }}{{ include 'a\\'b' }}{{{ include 'r' }}}",
         "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; _o( include \"a\" .. x ) "
         "_o( include(n) ) _o( include 'a\\'b' ) _or( include 'r' ) \n"},
        {"{{ included }}", "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; _oe( included ) \n"},
        /* name.field asks the host first, then runs as written */
        {"{{ f.quote }}{{{ p.url }}}",
         "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; if not _of(f, \"quote\") then _oe( "
         "f.quote ) end if not _ofr(p, \"url\") then _or( p.url ) end \n"},
        /* a loop that only writes text and its variable's fields */
        {"{% for _, f in ipairs(site.x) do %}<{{ f.a }}|{{{ f.b }}}>{% end %}",
         "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; for _, f in "
         "_oloop(ipairs, site.x, \"t1:<e1:at1:|r1:bt1:>\") do _o(\"<\") if not _of(f, \"a\") "
         "then _oe( f.a ) end _o(\"|\") if not _ofr(f, \"b\") then _or( f.b ) end _o(\">\")  "
         "end  \n"},
        /* not such a loop: as written */
        {"{% for _, f in ipairs(x) do %}{{ g.a }}{% end %}",
         "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...;  for _, f in ipairs(x) do  if "
         "not _of(g, \"a\") then _oe( g.a ) end  end  \n"},
        /* anything else, as written */
        {"{{ f.a.b }}{{ f:m() }}{{ not.x }}{{ f.end }}{{ 1.5 }}{{ f . x }}",
         "local _o, _esc, _raw, _oe, _or, _of, _ofr, _oloop, _inc = ...; _oe( f.a.b ) _oe( f:m() ) _oe( not.x ) "
         "_oe( f.end ) _oe( 1.5 ) _oe( f . x ) \n"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        buf lua = BUF_INIT;
        diag_list dl;
        diag_list_init(&dl);
        assert_int_equal(tpl_translate(cases[i].src, strlen(cases[i].src), "templates/t.html",
                                       &lua, &dl),
                         0);
        assert_int_equal(dl.n, 0);
        if (strcmp(buf_cstr(&lua), cases[i].lua) != 0)
            fail_msg("case %zu:\n--- got\n%s--- expected\n%s", i, buf_cstr(&lua), cases[i].lua);
        buf_free(&lua);
        diag_list_free(&dl);
    }
}

static size_t S_count_nl(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += s[i] == '\n';
    return c;
}

static void test_translate_keeps_lines(void **state)
{
    (void)state;
    static const char *srcs[] = {
        "a\nb\nc\n",
        "{% if x then %}\nyes\n{% else %}\nno\n{% end %}\n",
        "  {% for i = 1, 3 do %}  \n<li>{{ i }}</li>\n  {% end %}\n",
        "{{\n  x\n}}\n{%\nlocal y = 1\n%}\n{{{\n y\n}}}",
        "text {% if a then %}inline{% end %} more\n\n\n",
        "{% a() %}{% b() %}\n{% c() %}\n",
        /* an include of a literal name, rendered in place: its tag's breaks too */
        "{{\ninclude \"p.html\"\n}}\nx\n",
        "{{ include(\n'p.html') }}\n",
    };
    for (size_t i = 0; i < N(srcs); i++) {
        buf lua = BUF_INIT;
        diag_list dl;
        diag_list_init(&dl);
        assert_int_equal(tpl_translate(srcs[i], strlen(srcs[i]), "t", &lua, &dl), 0);
        /* one Lua line per template line, plus the final newline */
        size_t want = S_count_nl(srcs[i], strlen(srcs[i])) + 1;
        if (S_count_nl(lua.ptr, lua.len) != want)
            fail_msg("case %zu: %zu Lua lines, expected %zu:\n%s", i, S_count_nl(lua.ptr, lua.len),
                     want, lua.ptr);
        buf_free(&lua);
        diag_list_free(&dl);
    }
}

typedef struct {
    const char *src;
    int line, col;
    const char *msg;
} unterminated_case;

static void test_translate_unterminated(void **state)
{
    (void)state;
    static const unterminated_case cases[] = {
        {"a\n{{ x", 2, 1, "unterminated {{ tag: no closing \"}}\""},
        {"{% if x then", 1, 1, "unterminated {% tag: no closing \"%}\""},
        {"a\nb\n{{{ x }}", 3, 1, "unterminated {{{ tag: no closing \"}}}\""},
        {"{{ ok }}\n{{ x }\n", 2, 1, "unterminated {{ tag: no closing \"}}\""},
        {"{%", 1, 1, "unterminated {% tag: no closing \"%}\""},
        {"x{{", 1, 2, "unterminated {{ tag: no closing \"}}\""},
    };
    for (size_t i = 0; i < N(cases); i++) {
        buf lua = BUF_INIT;
        diag_list dl;
        diag_list_init(&dl);
        assert_int_equal(tpl_translate(cases[i].src, strlen(cases[i].src), "templates/u.html",
                                       &lua, &dl),
                         -1);
        assert_int_equal(dl.n, 1);
        assert_string_equal(dl.v[0].file, "templates/u.html");
        if (dl.v[0].line != cases[i].line || strcmp(dl.v[0].msg, cases[i].msg) != 0)
            fail_msg("case %zu: %d: %s", i, dl.v[0].line, dl.v[0].msg);
        assert_int_equal(dl.v[0].col, cases[i].col); /* the tag's */
        buf_free(&lua);
        diag_list_free(&dl);
    }
    /* braces that open no tag are text */
    buf lua = BUF_INIT;
    diag_list dl;
    diag_list_init(&dl);
    const char *src = "{ x } {x} }} %} {";
    assert_int_equal(tpl_translate(src, strlen(src), "t", &lua, &dl), 0);
    buf_free(&lua);
    diag_list_free(&dl);
}

/* ---- rendering ------------------------------------------------------------ */

static void test_escaped_and_raw(void **state)
{
    fx *f = *state;
    S_tpl(f, "e.html", "[{{ page.title }}]\n[{{{ page.title }}}]\n");
    S_tpl(f, "v.html", "{{ 1/4 }}|{{ 2^10 }}|{{ nil }}|{{ true }}|{{ 7 // 2 }}|{{ 'a' .. 1 }}");
    S_start(f, "page = {title = [[<b>\"x\" & 'y'</b>]]}");
    S_render_ok(f, "e.html",
                "[&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;]\n[<b>\"x\" & 'y'</b>]\n");
    S_render_ok(f, "v.html", "0.25|1024||true|3|a1");
}

static void test_text_passes_through(void **state)
{
    fx *f = *state;
    const char *text = "quote \" backslash \\ tab \t bell \x07 del \x7f 键值 ]] [[ ]=] "
                       "{ x } {x} }} %} ' \\n \r\n end\n";
    S_tpl(f, "raw.html", text);
    S_start(f, "");
    S_render_ok(f, "raw.html", text);
}

static void test_statement_lines_swallowed(void **state)
{
    fx *f = *state;
    S_tpl(f, "list.html", "<ul>\n{% for i = 1, 3 do %}\n  <li>{{ i }}</li>\n{% end %}\n</ul>\n");
    S_tpl(f, "indent.html", "a\n  {% if true then %}  \nyes\n\t{% else %}\nno\n  {% end %}\nb\n");
    S_tpl(f, "inline.html", "a {% if true then %}b{% end %} c\n");
    S_tpl(f, "local.html", "{% local n = 2 %}{{ n * 3 }}\n{% local m = 5 %}\n{{ m }}");
    S_tpl(f, "two.html", "{% if true then %}{% end %}\nx\n");
    S_tpl(f, "last.html", "x\n{% if false then %}\ny\n{% end %}");
    S_start(f, "");
    S_render_ok(f, "list.html", "<ul>\n  <li>1</li>\n  <li>2</li>\n  <li>3</li>\n</ul>\n");
    S_render_ok(f, "indent.html", "a\nyes\nb\n");
    S_render_ok(f, "inline.html", "a b c\n");
    S_render_ok(f, "local.html", "6\n5");
    S_render_ok(f, "two.html", "\nx\n"); /* two tags on a line: not alone, the line stays */
    S_render_ok(f, "last.html", "x\n");
}

static void test_include(void **state)
{
    fx *f = *state;
    S_tpl(f, "partials/head.html", "<title>{{ page.title }}</title>\n");
    S_tpl(f, "page.html",
          "<html>\n{{ include \"partials/head.html\" }}<body>{{ page.title }}</body>\n"
          "{{ include('partials/head.html') }}{{{ include 'partials/head.html' }}}</html>\n");
    S_start(f, "page = {title = 'T & U'}");
    S_render_ok(f, "page.html",
                "<html>\n<title>T &amp; U</title>\n<body>T &amp; U</body>\n"
                "<title>T &amp; U</title>\n<title>T &amp; U</title>\n</html>\n");
    const buf *in = tpl_inputs(f->t);
    const char want[] = "templates/page.html\0templates/partials/head.html";
    assert_int_equal(in->len, sizeof want);
    assert_memory_equal(in->ptr, want, sizeof want);
}

/* {{ include "name" }} renders in place, through the writers of the
 * template it is in: the same output as the include function's string, in
 * the same order; a writer kept from it works while that template runs and
 * fails after; an error in it is located in the included file, and nothing
 * it wrote stays; _inc called by hand is refused. */
static void test_include_in_place(void **state)
{
    fx *f = *state;
    S_tpl(f, "partials/b.html", "B{{ x }}{{ include \"partials/c.html\" }}b");
    S_tpl(f, "partials/c.html", "C{% for i = 1, 2 do %}{{ i }}{% end %}");
    S_tpl(f, "a.html", "A{{ include \"partials/b.html\" }}|{{{ include('partials/b.html') }}}Z");
    S_tpl(f, "partials/k.html", "{% k = _o %}k");
    S_tpl(f, "keep.html", "{{ include 'partials/k.html' }}{% k('+') %}.");
    S_tpl(f, "later.html", "{% k('late') %}");
    S_tpl(f, "partials/e.html", "e\n{{ nope() }}");
    S_tpl(f, "err.html", "x{{ include 'partials/e.html' }}y");
    S_tpl(f, "byhand.html", "{% _inc('partials/c.html') %}");
    S_start(f, "x = '<&>'");
    S_render_ok(f, "a.html", "AB&lt;&amp;&gt;C12b|B&lt;&amp;&gt;C12bZ");
    S_render_ok(f, "keep.html", "k+.");
    S_render_err(f, "later.html", "templates/later.html", 1,
                 "a template writer was called after its template returned");
    S_render_err(f, "err.html", "templates/partials/e.html", 2,
                 "attempt to call a nil value (global 'nope')");
    S_render_err(f, "byhand.html", "templates/byhand.html", 1,
                 "_inc is kvsite's own: write {{ include \"partials/c.html\" }}");
}

static void test_include_refusals(void **state)
{
    fx *f = *state;
    S_tpl(f, "unsafe.html", "a\n{{ include '../secret.html' }}");
    S_tpl(f, "missing.html", "\n\n{{ include 'partials/none.html' }}");
    S_tpl(f, "abs.html", "{{ include '/etc/passwd' }}");
    S_start(f, "");
    S_render_err(f, "unsafe.html", "templates/unsafe.html", 2,
                 "template name \"../secret.html\" is not a plain path under templates/");
    S_render_err(f, "missing.html", "templates/missing.html", 3,
                 "template templates/partials/none.html: no such file");
    S_render_err(f, "abs.html", "templates/abs.html", 1,
                 "template name \"/etc/passwd\" is not a plain path under templates/");
}

static void test_include_cycle(void **state)
{
    fx *f = *state;
    S_tpl(f, "loop.html", "a\n{{ include 'loop.html' }}");
    S_tpl(f, "ping.html", "{{ include 'pong.html' }}");
    S_tpl(f, "pong.html", "\n{{ include 'ping.html' }}");
    S_start(f, "");
    S_render_err(f, "loop.html", "templates/loop.html", 2,
                 "include \"loop.html\": includes nested deeper than 16 (an include cycle?)");
    /* ping includes pong includes ping ...: the 17th include is ping's */
    S_render_err(f, "ping.html", "templates/ping.html", 1,
                 "include \"pong.html\": includes nested deeper than 16 (an include cycle?)");
}

static void test_errors_at_template_line(void **state)
{
    fx *f = *state;
    S_tpl(f, "call.html", "line1\nline2\n{{ nope() }}\n");
    S_tpl(f, "syn.html", "a\n{% local = 1 %}\nb\n");
    S_tpl(f, "table.html", "\n{{ page }}");
    S_tpl(f, "rawtable.html", "{{{ page }}}");
    S_tpl(f, "stmt.html", "{% for i = 1, 2 do %}\n{% end %}\n{% error('custom', 0) %}\n");
    S_tpl(f, "partials/bad.html", "\n{{ page.missing.field }}");
    S_tpl(f, "outer.html", "x\n\n{{ include 'partials/bad.html' }}");
    S_tpl(f, "multi.html", "{{\n\n  nope2()\n}}");
    S_tpl(f, "partials/fine.html", "fine");
    S_tpl(f, "after_include.html", "{{\n  include \"partials/fine.html\"\n}}\n{{ nope3() }}\n");
    S_tpl(f, "unterm.html", "ok\n{{ x");
    S_start(f, "page = {title = 't'}");
    S_render_err(f, "call.html", "templates/call.html", 3,
                 "attempt to call a nil value (global 'nope')");
    S_render_err_at(f, "syn.html", "templates/syn.html", 2, 1, "<name> expected near '='");
    S_render_err(f, "table.html", "templates/table.html", 2, "cannot show a table value in {{ }}");
    S_render_err(f, "rawtable.html", "templates/rawtable.html", 1,
                 "cannot show a table value in {{{ }}}");
    S_render_err(f, "stmt.html", "templates/stmt.html", 3, "custom");
    S_render_err(f, "multi.html", "templates/multi.html", 3,
                 "attempt to call a nil value (global 'nope2')");
    /* after an include tag that spans lines, errors are still at their line */
    S_render_err(f, "after_include.html", "templates/after_include.html", 4,
                 "attempt to call a nil value (global 'nope3')");
    S_render_err_at(f, "unterm.html", "templates/unterm.html", 2, 1,
                 "unterminated {{ tag: no closing \"}}\"");
    /* an error in an included template is reported where it happened */
    S_render_err(f, "outer.html", "templates/partials/bad.html", 2,
                 "attempt to index a nil value (field 'missing')");
    /* a missing template */
    S_render_err(f, "none.html", "templates/none.html", 0, "template templates/none.html: no such file");
}

/* ---- caps, cache, existence ----------------------------------------------- */

static void test_output_cap(void **state)
{
    fx *f = *state;
    f->max_output = 1024;
    S_tpl(f, "big.html", "{{ string.rep('x', 2000) }}");
    S_tpl(f, "ok.html", "{{ string.rep('x', 1000) }}");
    S_start(f, "");
    S_render_err(f, "big.html", "templates/big.html", 1, "template output larger than 1024 bytes (limits.output_bytes)");
    buf out = BUF_INIT;
    assert_int_equal(tpl_render(f->t, "ok.html", &out, &f->dl), 0);
    assert_int_equal(out.len, 1000);
    buf_free(&out);
}

static void test_template_size_cap(void **state)
{
    fx *f = *state;
    f->max_bytes = 1024;
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    S_tpl(f, "big.html", big);
    S_start(f, "");
    S_render_err(f, "big.html", "templates/big.html", 0,
                 "template templates/big.html: file too large (limit 1024 bytes)");
}

static void test_budget_in_template(void **state)
{
    fx *f = *state;
    f->o.instructions = 100000;
    S_tpl(f, "spin.html", "a\n{% while true do end %}\n");
    S_start(f, "");
    S_render_err(f, "spin.html", "templates/spin.html", 2,
                 "instruction budget exceeded (limits.lua_instructions = 100000)");
}

static void test_compiled_once(void **state)
{
    fx *f = *state;
    S_tpl(f, "c.html", "first {{ page.n }}");
    S_start(f, "page = {n = 1}");
    S_render_ok(f, "c.html", "first 1");
    S_tpl(f, "c.html", "second {{ page.n }}");
    /* the next page reuses the compiled template, in its own environment */
    sandbox_page_begin(f->sb, "content/q.md", &f->dl);
    int nres = 0;
    sandbox_error err;
    assert_int_equal(sandbox_run(f->sb, "page = {n = 2}", 14, "content/q.md", 1, &nres, &err), 0);
    S_render_ok(f, "c.html", "first 2");
    const buf *in = tpl_inputs(f->t);
    assert_int_equal(in->len, sizeof "templates/c.html");
}

static void test_exists(void **state)
{
    fx *f = *state;
    S_tpl(f, "page.html", "x");
    S_tpl(f, "partials/head.html", "x");
    S_start(f, "");
    assert_true(tpl_exists(f->t, "page.html"));
    assert_true(tpl_exists(f->t, "partials/head.html"));
    assert_false(tpl_exists(f->t, "partials"));
    assert_false(tpl_exists(f->t, "missing.html"));
    assert_false(tpl_exists(f->t, "../templates/page.html"));
    assert_false(tpl_exists(f->t, "/etc/passwd"));
    assert_false(tpl_exists(f->t, "partials//head.html"));
    assert_false(tpl_exists(f->t, ""));
    assert_false(tpl_exists(f->t, "page .html"));
}

static int S_gc(lua_State *L)
{
    lua_gc(L, LUA_GCCOLLECT);
    return 0;
}

/* Regression: a writer kept by Lua (a global set to _o inside an include)
 * and called after its template returned wrote into a freed buffer. It now
 * fails with an error at the call, and the output is left as it was. */
static void test_kept_writer(void **state)
{
    fx *f = *state;
    S_tpl(f, "partials/keep.html", "{% keep, keepe = _o, _oe %}inc");
    S_tpl(f, "page.html", "{{{ include 'partials/keep.html' }}}|{% gc() %}\n{% keep('late') %}");
    S_tpl(f, "esc.html", "{% keepe('late') %}");
    S_tpl(f, "top.html", "{% top = _o %}top");
    S_tpl(f, "later.html", "a\n{% gc(); top('late') %}");
    S_start(f, "x = 1");
    lua_State *L = sandbox_lua(f->sb);
    sandbox_push_env(f->sb);
    lua_pushcfunction(L, S_gc);
    lua_setfield(L, -2, "gc");
    lua_pop(L, 1);
    const char *msg = "a template writer was called after its template returned";
    S_render_err(f, "page.html", "templates/page.html", 2, msg);
    S_render_err(f, "esc.html", "templates/esc.html", 1, msg);
    /* the writers of a template rendered before fail the same way */
    S_render_ok(f, "top.html", "top");
    S_render_err(f, "later.html", "templates/later.html", 2, msg);
    /* and the writers of the call in progress still write */
    S_tpl(f, "self.html", "{% local w = _o %}a{% w('b') %}c");
    S_render_ok(f, "self.html", "abc");
}

#define T(f) cmocka_unit_test_setup_teardown(f, S_setup, S_teardown)

/* ---- the host's fast way to show obj.field --------------------------------- */

/* Gives field "w" of any full userdata ("<W&>", which the template escapes
 * or not); leaves everything else to Lua. */
static bool S_reader(void *ctx, lua_State *L, int obj, const char *field, tpl_value *v)
{
    (*(int *)ctx)++;
    assert_int_equal(lua_type(L, obj), LUA_TUSERDATA);
    if (strcmp(field, "w") != 0)
        return false;
    *v = (tpl_value){LUA_TSTRING, false, "<W&>", 0, 0};
    return true;
}

static void test_field_reader(void **state)
{
    fx *f = *state;
    S_tpl(f, "w.html", "{{ u.w }}|{{{ u.w }}}|{{ u.x }}|{{ t.w }}|{{ t.x }}|{{ u.w .. '' }}");
    S_start(f, "t = {w = 'tw', x = '<x>'}");
    int calls = 0;
    tpl_set_field_reader(f->t, S_reader, &calls);
    lua_State *L = sandbox_lua(f->sb);
    /* u: a userdata whose __index gives "lua:<key>" */
    sandbox_push_env(f->sb);
    lua_newuserdatauv(L, 1, 0);
    assert_int_equal(luaL_dostring(L, "return {__index = function(_, k) return 'lua:' .. k end}"), 0);
    lua_setmetatable(L, -2);
    lua_setfield(L, -2, "u");
    lua_pop(L, 1);
    S_render_ok(f, "w.html", "&lt;W&amp;&gt;|<W&>|lua:x|tw|&lt;x&gt;|lua:w");
    assert_int_equal(calls, 3); /* u.w twice and u.x; never for tables */
}

/* {{ t.k }} of a table: a string it holds is written by the host at once;
 * anything else (a number, a missing key that __index makes, a table) goes
 * through Lua as written, with the same output and the same errors. */
static void test_table_fields(void **state)
{
    fx *f = *state;
    S_tpl(f, "t.html", "{{ t.s }}|{{{ t.s }}}|{{ t.n }}|{{ t.f }}|{{ m.here }}|{{ m.made }}|"
                       "{{ t.none }}|{{ t[\"s\"] }}\n");
    S_tpl(f, "bad.html", "{{ t.sub }}\n");
    S_tpl(f, "nil.html", "{{ nothing.x }}\n");
    S_start(f, "t = {s = '<a&b>', n = 2.5, f = 3, sub = {}}\n"
               "m = setmetatable({here = 'raw'}, {__index = function(_, k) return 'made:' .. k end})");
    S_render_ok(f, "t.html", "&lt;a&amp;b&gt;|<a&b>|2.5|3|raw|made:made||&lt;a&amp;b&gt;\n");
    S_render_err(f, "bad.html", "templates/bad.html", 1, "cannot show a table value in {{ }}");
    S_render_err(f, "nil.html", "templates/nil.html", 1, "attempt to index a nil value (global 'nothing')");
}

/* ---- loops that only write fields, rendered in C ------------------------- */

static void test_field_loops(void **state)
{
    fx *f = *state;
    /* the same loop body, once as a C loop and once where Lua must run it */
    S_tpl(f, "l.html", "{% for _, r in ipairs(rows) do %}\n<{{ r.a }}|{{{ r.a }}}|{{ r.n }}|{{ r.x }}>\n{% end %}\n");
    S_tpl(f, "lua.html", "{% for _, r in ipairs(rows) do %}\n<{{ r.a }}|{{{ r.a }}}|{{ r.n }}|{{ r.x }}{{ '' }}>\n{% end %}\n");
    S_start(f, "rows = {{a = '<b>', n = 1}, {a = 'x&y', n = 2.5, x = true}, {a = 'z', n = -0.0}}\n"
               "meta = setmetatable({a = 'm'}, {__index = function(_, k) return k .. '!' end})\n"
               "mixed = {{a = 'one'}, meta, {a = 'three'}}");
    const char *want = "<&lt;b&gt;|<b>|1|>\n<x&amp;y|x&y|2.5|true>\n<z|z|-0|>\n";
    S_render_ok(f, "l.html", want);
    S_render_ok(f, "lua.html", want);
    /* an item with a metatable: its Lua reads it, and the rows after it */
    S_tpl(f, "m.html", "{% for i, r in ipairs(mixed) do %}[{{ r.a }}{{ r.b }}]{% end %}");
    S_render_ok(f, "m.html", "[one][mb!][three]");
    /* an empty list, a list that is not a table */
    S_tpl(f, "e.html", "({% for _, r in ipairs({}) do %}[{{ r.a }}]{% end %})");
    S_render_ok(f, "e.html", "()");
}

static void test_field_loop_errors(void **state)
{
    fx *f = *state;
    f->o.instructions = 200000;
    f->max_output = 4096;
    /* a value Lua refuses to show: the error is at the body's line */
    S_tpl(f, "t.html", "{% for _, r in ipairs(rows) do %}\n[{{ r.a }}]\n{% end %}");
    /* a list that is not one */
    S_tpl(f, "n.html", "{% for _, r in ipairs(nothing) do %}{{ r.a }}{% end %}");
    S_tpl(f, "n2.html", "{% for _, r in ipairs(nothing) do %}{{ r.a }}{{ '' }}{% end %}");
    /* an ipairs of the page's own is called, as written */
    S_tpl(f, "own.html", "{% ipairs = function(t) return next, {{a = 'own'}}, nil end %}{% for k, r in ipairs(rows) do %}<{{ r.a }}>{% end %}");
    /* the output cap and the budget stop it where Lua would */
    S_tpl(f, "cap.html", "{% for _, r in ipairs(many) do %}\n{{ r.a }}\n{% end %}");
    S_start(f, "rows = {{a = 'ok'}, {a = {}}}\n"
               "many = {} for i = 1, 300 do many[i] = {a = string.rep('y', 20)} end");
    S_render_err(f, "t.html", "templates/t.html", 2, "cannot show a table value in {{ }}");
    S_render_err(f, "n.html", "templates/n.html", 1, "attempt to index a nil value");
    S_render_err(f, "n2.html", "templates/n2.html", 1, "attempt to index a nil value");
    S_render_err(f, "cap.html", "templates/cap.html", 2,
                 "template output larger than 4096 bytes (limits.output_bytes)");
    S_render_ok(f, "own.html", "<own>"); /* last: it changes the page's ipairs */
}

static void test_field_loop_budget(void **state)
{
    fx *f = *state;
    f->o.instructions = 50000;
    S_tpl(f, "b.html", "{% for _, r in ipairs(many) do %}\n{{ r.a }}\n{% end %}");
    S_start(f, "many = {} for i = 1, 5000 do many[i] = {a = 'z'} end");
    /* a fresh page: the set-up above spent part of its budget */
    sandbox_page_begin(f->sb, PAGE, &f->dl);
    lua_State *L = sandbox_lua(f->sb);
    sandbox_push_env(f->sb);
    lua_newtable(L);
    for (int i = 1; i <= 20000; i++) {
        lua_newtable(L);
        lua_pushliteral(L, "z");
        lua_setfield(L, -2, "a");
        lua_rawseti(L, -2, i);
    }
    lua_setfield(L, -2, "many");
    lua_pop(L, 1);
    S_render_err(f, "b.html", "templates/b.html", 2,
                 "instruction budget exceeded (limits.lua_instructions = 50000)");
}


/* ---- lists the host reads in place --------------------------------------- */

/* A host list: a userdata of 5 items whose Lua __index makes {a = "lua<i>",
 * n = i}; the reader gives "<h<i>>" for field a and i for n in place, except
 * for item 3, which it leaves to Lua, and past the end. */
typedef struct {
    int opens, fields;
    void *list;
    char text[16];
} list_host;

static void *S_list_open(void *ctx, lua_State *L, int list)
{
    list_host *h = ctx;
    h->opens++;
    return lua_touserdata(L, list) == h->list ? h->list : NULL;
}

/* Keys: 0 for a, 1 for n; the items have no other field. */
static int S_list_key(void *ctx, void *list, const char *k)
{
    list_host *h = ctx;
    assert_ptr_equal(list, h->list);
    return strcmp(k, "a") == 0 ? 0 : strcmp(k, "n") == 0 ? 1 : -1;
}

static bool S_list_item(void *ctx, void *list, lua_Integer i, const int *keys, size_t n,
                        tpl_value *v)
{
    list_host *h = ctx;
    h->fields++;
    assert_ptr_equal(list, h->list);
    if (i < 1 || i > 5 || i == 3)
        return false;
    snprintf(h->text, sizeof h->text, "<h%d>", (int)i);
    for (size_t j = 0; j < n; j++) {
        if (keys[j] == 0)
            v[j] = (tpl_value){LUA_TSTRING, false, h->text, 0, 0};
        else
            v[j] = (tpl_value){LUA_TNUMBER, true, NULL, (long long)i, 0};
    }
    return true;
}

static const tpl_list_reader S_LIST = {S_list_open, S_list_key, S_list_item};

/* Sets the page global `list` to a new host list whose Lua __index is the
 * function the chunk index returns. */
static void S_set_list(fx *f, list_host *h, const char *index)
{
    lua_State *L = sandbox_lua(f->sb);
    tpl_set_list_reader(f->t, &S_LIST, h);
    sandbox_push_env(f->sb);
    h->list = lua_newuserdatauv(L, 1, 0);
    lua_newtable(L);
    assert_int_equal(luaL_dostring(L, index), 0);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, -2);
    lua_setfield(L, -2, "list");
    lua_pop(L, 1);
}

static void test_list_reader(void **state)
{
    fx *f = *state;
    S_tpl(f, "l.html", "{% for i, r in ipairs(list) do %}[{{ r.a }}|{{{ r.a }}}|{{ r.n }}]{% end %}");
    /* a field the host does not give: Lua reads every item */
    S_tpl(f, "z.html", "{% for i, r in ipairs(list) do %}[{{ r.z }}]{% end %}");
    /* a body Lua must run: the host is not asked */
    S_tpl(f, "b.html", "{% for i, r in ipairs(list) do %}[{{ r.a }}{{ i }}]{% end %}");
    S_tpl(f, "t.html", "{% for i, r in ipairs(rows) do %}[{{ r.a }}]{% end %}");
    S_start(f, "rows = {{a = 'x'}, {a = 'y'}}");
    list_host h = {0};
    S_set_list(f, &h, "return function(_, i) if i <= 5 then "
                      "return {a = 'lua' .. i, n = i, z = 'z' .. i} end end");
    S_render_ok(f, "l.html",
                "[&lt;h1&gt;|<h1>|1][&lt;h2&gt;|<h2>|2][lua3|lua3|3][&lt;h4&gt;|<h4>|4]"
                "[&lt;h5&gt;|<h5>|5]");
    assert_int_equal(h.opens, 1);
    S_render_ok(f, "z.html", "[z1][z2][z3][z4][z5]");
    S_render_ok(f, "b.html", "[lua11][lua22][lua33][lua44][lua55]");
    int opens = h.opens;
    S_render_ok(f, "t.html", "[x][y]"); /* tables are not offered to the host */
    assert_int_equal(h.opens, opens);
}

/* The output cap and the budget stop a host list where Lua would stop: items
 * 1, 2, 4, 5 from the host, then an endless list from Lua. */
#define S_ENDLESS "return function(_, i) return {a = string.rep('q', 100), n = i} end"

static void test_list_reader_cap(void **state)
{
    fx *f = *state;
    f->max_output = 4096;
    S_tpl(f, "cap.html", "{% for _, r in ipairs(list) do %}\n{{ r.a }}{{ r.a }}{{ r.a }}\n{% end %}");
    S_start(f, "");
    list_host h = {0};
    S_set_list(f, &h, S_ENDLESS);
    S_render_err(f, "cap.html", "templates/cap.html", 2,
                 "template output larger than 4096 bytes (limits.output_bytes)");
}

static void test_list_reader_budget(void **state)
{
    fx *f = *state;
    f->o.instructions = 50000;
    S_tpl(f, "b.html", "{% for _, r in ipairs(list) do %}\n{{ r.n }}\n{% end %}");
    S_start(f, "");
    list_host h = {0};
    sandbox_page_begin(f->sb, PAGE, &f->dl); /* a fresh budget */
    S_set_list(f, &h, S_ENDLESS);
    /* at the for line: the items' Lua __index spends the budget there */
    S_render_err(f, "b.html", "templates/b.html", 1,
                 "instruction budget exceeded (limits.lua_instructions = 50000)");
    assert_true(h.fields >= 4);
}

/* ---- include_cached ------------------------------------------------------ */

/* A host that notes what a render "reads" (note(n) in Lua) the way render.c
 * notes records: into the capture while a cached render runs, and logs
 * what each reuse replays (which is captured too, for an outer render). */
typedef struct {
    uint32_t cap[256];
    size_t ncap;
    int depth;
    uint32_t log[256];
    size_t nlog;
    bool refuse;
} cache_host;
static cache_host *S_host;

static int S_note(lua_State *L)
{
    if (S_host->depth && S_host->ncap < N(S_host->cap))
        S_host->cap[S_host->ncap++] = (uint32_t)luaL_checkinteger(L, 1);
    return 0;
}

static tpl_cache_mark S_host_begin(void *ctx)
{
    cache_host *h = ctx;
    h->depth++;
    return (tpl_cache_mark){h->ncap, 0};
}

static bool S_host_end(void *ctx, tpl_cache_mark m, buf *deps)
{
    cache_host *h = ctx;
    if (!h->refuse)
        buf_put(deps, (const char *)(h->cap + m.at), (h->ncap - m.at) * sizeof *h->cap);
    if (--h->depth == 0)
        h->ncap = 0;
    return !h->refuse;
}

static void S_host_replay(void *ctx, const char *deps, size_t len)
{
    cache_host *h = ctx;
    for (size_t i = 0; i + 4 <= len; i += 4) {
        uint32_t v;
        memcpy(&v, deps + i, 4);
        h->log[h->nlog++] = v;
        if (h->depth)
            h->cap[h->ncap++] = v;
    }
}

static const tpl_cache_host S_HOST = {S_host_begin, S_host_end, S_host_replay};

static void S_cached_start(fx *f, cache_host *h, const char *lua)
{
    S_start(f, lua);
    memset(h, 0, sizeof *h);
    S_host = h;
    tpl_set_cache_host(f->t, &S_HOST, h);
    lua_State *L = sandbox_lua(f->sb);
    sandbox_push_env(f->sb);
    lua_pushcfunction(L, S_note);
    lua_setfield(L, -2, "note");
    lua_pop(L, 1);
}

static void S_run(fx *f, const char *lua)
{
    int nres = 0;
    sandbox_error err;
    if (sandbox_run(f->sb, lua, strlen(lua), PAGE, 1, &nres, &err) != 0)
        fail_msg("page Lua: %s", err.msg);
    lua_pop(sandbox_lua(f->sb), nres);
}

static void S_counts_are(fx *f, size_t hits, size_t misses)
{
    size_t h, m;
    tpl_cache_counts(f->t, &h, &m);
    if (h != hits || m != misses)
        fail_msg("hits %zu, misses %zu; expected %zu, %zu", h, m, hits, misses);
}

/* Rendered once per key, shown raw; the key, not the page, decides; what
 * the render read is replayed on every reuse. */
static void test_include_cached(void **state)
{
    fx *f = *state;
    cache_host h;
    S_tpl(f, "partials/c.html", "<b>{{ page.title }}</b>{% note(7) %}");
    S_tpl(f, "page.html",
          "{{ include_cached(\"partials/c.html\", KEY) }}|{{ include_cached('partials/c.html', KEY) }}\n");
    S_cached_start(f, &h, "page = {title = 'A & B'} KEY = 'a'");
    S_render_ok(f, "page.html", "<b>A &amp; B</b>|<b>A &amp; B</b>\n");
    S_counts_are(f, 1, 1);
    assert_int_equal(h.nlog, 1);
    assert_int_equal(h.log[0], 7);
    /* another page, the same key: the same output (the key names what it shows) */
    S_run(f, "page = {title = 'C'}");
    S_render_ok(f, "page.html", "<b>A &amp; B</b>|<b>A &amp; B</b>\n");
    S_counts_are(f, 3, 1);
    assert_int_equal(h.nlog, 3);
    /* another key: rendered again; numbers are keys too */
    S_run(f, "KEY = 2");
    S_render_ok(f, "page.html", "<b>C</b>|<b>C</b>\n");
    S_counts_are(f, 4, 2);
}

/* A cached render's reads include those of the cached renders inside it:
 * reusing the outer one replays both. */
static void test_include_cached_nested(void **state)
{
    fx *f = *state;
    cache_host h;
    S_tpl(f, "partials/o.html", "{% note(1) %}o{{ include_cached('partials/i.html', 'x') }}");
    S_tpl(f, "partials/i.html", "{% note(2) %}i");
    S_tpl(f, "outer.html", "{{ include_cached('partials/o.html', 'x') }}");
    S_tpl(f, "inner.html", "{{ include_cached('partials/i.html', 'x') }}");
    S_cached_start(f, &h, "");
    S_render_ok(f, "outer.html", "oi");
    S_counts_are(f, 0, 2);
    S_render_ok(f, "inner.html", "i");
    S_counts_are(f, 1, 2);
    assert_int_equal(h.nlog, 1);
    assert_int_equal(h.log[0], 2);
    S_render_ok(f, "outer.html", "oi");
    S_counts_are(f, 2, 2);
    assert_int_equal(h.nlog, 3);
    assert_int_equal(h.log[1], 1);
    assert_int_equal(h.log[2], 2);
}

/* What is not kept: a render that failed (it runs, and fails, again), one
 * the host refuses, any without a host; a write to a global is an error
 * (the page keeps its own); keys are strings or numbers of bounded size. */
static void test_include_cached_refusals(void **state)
{
    fx *f = *state;
    cache_host h;
    S_tpl(f, "partials/e.html", "{% if FAIL then error('boom') end %}ok");
    S_tpl(f, "e.html", "{{ include_cached('partials/e.html', 1) }}");
    S_tpl(f, "partials/w.html", "{% local y = 1 %}\n{% X = y %}");
    S_tpl(f, "w.html", "{{ include_cached('partials/w.html', 1) }}{{ X }}");
    S_tpl(f, "k.html", "{{ include_cached('partials/e.html', {}) }}");
    S_tpl(f, "long.html", "{{ include_cached('partials/e.html', string.rep('k', 2000)) }}");
    S_cached_start(f, &h, "FAIL = true X = 'page'");
    S_render_err(f, "e.html", "templates/partials/e.html", 1, "boom");
    S_run(f, "FAIL = false");
    S_render_ok(f, "e.html", "ok");
    S_counts_are(f, 0, 2);
    S_render_ok(f, "e.html", "ok");
    S_counts_are(f, 1, 2);
    S_render_err(f, "w.html", "templates/partials/w.html", 2,
                 "templates/partials/w.html: include_cached renders it once for many pages, so "
                 "it cannot set the global X (use a local)");
    S_tpl(f, "x.html", "{{ X }}");
    S_render_ok(f, "x.html", "page");
    S_render_err(f, "k.html", "templates/k.html", 1,
                 "include_cached \"partials/e.html\": the key must be a string or a number, "
                 "not table");
    S_render_err(f, "long.html", "templates/long.html", 1,
                 "include_cached \"partials/e.html\": a key is at most 1024 bytes, without NUL");
    /* refused by the host: rendered every time */
    S_tpl(f, "r.html", "{{ include_cached('partials/e.html', 'r') }}{{ include_cached('partials/e.html', 'r') }}");
    h.refuse = true;
    S_render_ok(f, "r.html", "okok");
    S_counts_are(f, 1, 5); /* w.html's render counted too */
    /* no host: nothing kept */
    h.refuse = false;
    tpl_set_cache_host(f->t, NULL, NULL);
    S_tpl(f, "n.html", "{{ include_cached('partials/e.html', 'n') }}{{ include_cached('partials/e.html', 'n') }}");
    S_render_ok(f, "n.html", "okok");
    S_counts_are(f, 1, 7);
}

/* The cache is bounded whole: keys and entries count, so a template asking
 * for 20,000 keys of 1,000 bytes (20 MB) keeps the first ones only. */
static void test_include_cached_bounded(void **state)
{
    fx *f = *state;
    cache_host h;
    f->o.instructions = 2000000000LL;
    S_tpl(f, "partials/k.html", "");
    S_tpl(f, "fill.html",
          "{% local pad = string.rep('k', 1000) %}"
          "{% for i = 1, 20000 do %}{{ include_cached('partials/k.html', pad .. i) }}{% end %}");
    S_tpl(f, "first.html", "{{ include_cached('partials/k.html', string.rep('k', 1000) .. 1) }}");
    S_tpl(f, "last.html", "{{ include_cached('partials/k.html', string.rep('k', 1000) .. 20000) }}");
    S_cached_start(f, &h, "");
    S_render_ok(f, "fill.html", "");
    S_counts_are(f, 0, 20000);
    S_render_ok(f, "first.html", "");
    S_counts_are(f, 1, 20000);
    S_render_ok(f, "last.html", "");
    S_counts_are(f, 1, 20001);
}

/* t's inputs, as one string with '|' between the names. */
static char *S_inputs(const fx *f)
{
    const buf *in = tpl_inputs(f->t);
    buf b = BUF_INIT;
    for (const char *p = in->ptr; p && p < in->ptr + in->len; p += strlen(p) + 1) {
        if (b.len)
            buf_putc(&b, '|');
        buf_puts(&b, p);
    }
    return buf_detach(&b);
}

static void S_inputs_are(const fx *f, const char *want)
{
    char *got = S_inputs(f);
    if (strcmp(got, want) != 0)
        fail_msg("inputs \"%s\", expected \"%s\"", got, want);
    free(got);
}

static void S_next_page(fx *f, const char *lua)
{
    sandbox_page_begin(f->sb, "content/q.md", &f->dl);
    tpl_page_begin(f->t);
    int nres = 0;
    sandbox_error err;
    assert_int_equal(sandbox_run(f->sb, lua, strlen(lua), "content/q.md", 1, &nres, &err), 0);
    lua_pop(sandbox_lua(f->sb), nres);
}

/* A page's inputs are the templates its own render looked up, found or not,
 * compiled for it or for a page before: not every template the worker has
 * looked up so far (a missing templates/<section>/page.html per section
 * made every page's list as long as the site's sections: quadratic). */
static void test_inputs_are_the_pages_own(void **state)
{
    fx *f = *state;
    S_tpl(f, "page.html", "<{{ include 'partials/h.html' }}>");
    S_tpl(f, "partials/h.html", "h");
    S_tpl(f, "s2/page.html", "two");
    S_start(f, "page = {}");
    tpl_page_begin(f->t);
    assert_false(tpl_exists(f->t, "s1/page.html"));
    S_render_ok(f, "page.html", "<h>");
    S_inputs_are(f, "templates/s1/page.html|templates/page.html|templates/partials/h.html");
    S_next_page(f, "page = {}");
    assert_true(tpl_exists(f->t, "s2/page.html"));
    S_render_ok(f, "s2/page.html", "two");
    S_inputs_are(f, "templates/s2/page.html");
    S_next_page(f, "page = {}");
    assert_false(tpl_exists(f->t, "s1/page.html")); /* known missing: still its input */
    S_render_ok(f, "page.html", "<h>");
    S_render_ok(f, "page.html", "<h>"); /* each name once */
    S_inputs_are(f, "templates/s1/page.html|templates/page.html|templates/partials/h.html");
    tpl_note_file(f->t, "templates/assets/x.css");
    S_inputs_are(f, "templates/s1/page.html|templates/page.html|templates/partials/h.html|"
                    "templates/assets/x.css");
    S_next_page(f, "page = {}");
    S_inputs_are(f, "");
}

/* A page that reuses an include_cached output depends on the templates it
 * was made from, those of the cached renders inside it too. */
static void test_include_cached_inputs(void **state)
{
    fx *f = *state;
    cache_host h;
    S_tpl(f, "partials/o.html", "o{{ include 'partials/in.html' }}{{ include_cached('partials/i.html', 1) }}");
    S_tpl(f, "partials/in.html", "n");
    S_tpl(f, "partials/i.html", "i");
    S_tpl(f, "outer.html", "[{{ include_cached('partials/o.html', 'x') }}]");
    S_tpl(f, "inner.html", "({{ include_cached('partials/i.html', 1) }})");
    S_cached_start(f, &h, "");
    tpl_page_begin(f->t);
    S_render_ok(f, "inner.html", "(i)");
    S_inputs_are(f, "templates/inner.html|templates/partials/i.html");
    S_next_page(f, "");
    S_render_ok(f, "outer.html", "[oni]"); /* i.html reused inside o.html's render */
    S_counts_are(f, 1, 2);
    S_inputs_are(f, "templates/outer.html|templates/partials/o.html|templates/partials/in.html|"
                    "templates/partials/i.html");
    S_next_page(f, "");
    S_render_ok(f, "outer.html", "[oni]");
    S_counts_are(f, 2, 2);
    S_inputs_are(f, "templates/outer.html|templates/partials/o.html|templates/partials/in.html|"
                    "templates/partials/i.html");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_translate_exact),
        cmocka_unit_test(test_translate_keeps_lines),
        cmocka_unit_test(test_translate_unterminated),
        T(test_escaped_and_raw),
        T(test_text_passes_through),
        T(test_statement_lines_swallowed),
        T(test_include),
        T(test_include_in_place),
        T(test_include_refusals),
        T(test_include_cycle),
        T(test_errors_at_template_line),
        T(test_output_cap),
        T(test_template_size_cap),
        T(test_budget_in_template),
        T(test_compiled_once),
        T(test_exists),
        T(test_inputs_are_the_pages_own),
        T(test_field_reader),
        T(test_table_fields),
        T(test_field_loops),
        T(test_field_loop_errors),
        T(test_field_loop_budget),
        T(test_list_reader),
        T(test_list_reader_cap),
        T(test_list_reader_budget),
        T(test_kept_writer),
        T(test_include_cached),
        T(test_include_cached_nested),
        T(test_include_cached_inputs),
        T(test_include_cached_refusals),
        T(test_include_cached_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
