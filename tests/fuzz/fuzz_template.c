/* fuzz_template: template text through tpl_translate, the Lua it produces
 * compiled in a sandbox, and the template rendered for real by tpl_render in
 * a page environment (so {{ }}, {{{ }}}, {% %} and include all run).
 *
 * The input is written to templates/fuzz.html, next to a partial, in a
 * project made at start-up under $TMPDIR and removed at exit. The sandbox is
 * one per process, as in a worker, with a small budget so each input stays
 * fast.
 *
 * Checked beyond "no crash": the translation keeps the template's line
 * numbers (one Lua line per template line, plus the final newline), which is
 * what makes errors name templates/<file>:<line>. */
#include <lauxlib.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag.h"
#include "fsutil.h"
#include "sandbox.h"
#include "template.h"

static sandbox *S_sb;
static char *S_root; /* $TMPDIR/kvsite-fuzz-template-XXXXXX */
static char *S_file;

static size_t S_lines(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += s[i] == '\n';
    return c;
}

static void S_cleanup(void)
{
    sandbox_free(S_sb);
    fs_remove_tree(S_root);
    free(S_root);
    free(S_file);
}

static void S_write(const char *rel, const char *text)
{
    char *path = fs_join(S_root, rel);
    if (fs_write_file(path, text, strlen(text)) != 0)
        abort();
    free(path);
}

/* What templates see: a page with hostile text and a site with a list. */
static void S_globals(lua_State *L)
{
    sandbox_push_env(S_sb);
    lua_newtable(L);
    lua_pushliteral(L, "<script>alert(1)</script> & \"q\"");
    lua_setfield(L, -2, "title");
    lua_pushliteral(L, "<p>body</p>");
    lua_setfield(L, -2, "content");
    lua_setfield(L, -2, "page");
    lua_newtable(L);
    lua_pushliteral(L, "Site");
    lua_setfield(L, -2, "title");
    lua_newtable(L);
    for (int i = 1; i <= 3; i++) {
        lua_pushinteger(L, i);
        lua_rawseti(L, -2, i);
    }
    lua_setfield(L, -2, "pages");
    lua_setfield(L, -2, "site");
    lua_pop(L, 1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    S_root = xasprintf("%s/kvsite-fuzz-template-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(S_root))
        abort();
    char *dir = fs_join(S_root, "templates/partials");
    if (fs_mkdir_p(dir) != 0)
        abort();
    free(dir);
    S_write("templates/partials/p.html", "<b>{{ page.title }}</b>{% for i = 1, 3 do %}{{ i }}{% end %}\n");
    S_file = fs_join(S_root, "templates/fuzz.html");
    sandbox_opts o = {S_root, 1000000, 8u << 20, 1u << 20, 32};
    S_sb = sandbox_new(&o);
    if (!S_sb)
        abort();
    atexit(S_cleanup);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *src = (const char *)data;
    lua_State *L = sandbox_lua(S_sb);
    diag_list dl;
    diag_list_init(&dl);

    buf lua = BUF_INIT;
    if (tpl_translate(src, size, "templates/fuzz.html", &lua, &dl) == 0) {
        if (S_lines(lua.ptr, lua.len) != S_lines(src, size) + 1)
            __builtin_trap();
        (void)luaL_loadbufferx(L, buf_cstr(&lua), lua.len, "=templates/fuzz.html", "t");
        lua_settop(L, 0);
    } else if (dl.errors != 1) {
        __builtin_trap();
    }
    buf_free(&lua);

    if (fs_write_file(S_file, data, size) != 0)
        abort();
    templates *t = tpl_new(S_sb, S_root, 1u << 20, 1u << 20);
    sandbox_page_begin(S_sb, "content/fuzz.md", &dl);
    S_globals(L);
    buf out = BUF_INIT;
    size_t before = dl.errors;
    int rc = tpl_render(t, "fuzz.html", &out, &dl);
    if ((rc == 0) != (dl.errors == before))
        __builtin_trap(); /* -1 exactly when an error was added */
    if (rc != 0 && out.len != 0)
        __builtin_trap(); /* a failed render leaves no partial output */
    buf_free(&out);
    sandbox_page_end(S_sb);
    tpl_free(t);
    diag_list_free(&dl);
    return 0;
}
