/* fuzz_frontmatter: a whole page file through fm_parse_page (front
 * matter split, YAML, field checks), the same bytes through the three data
 * parsers of yv.h, and every tree that comes out through luadata_push into a
 * Lua state, as `data "x.yaml"` would. Seeds are Markdown pages and data files.
 *
 * Checked beyond "no crash": a parser that fails adds exactly one error; a
 * page that parses has a title and a body inside the input. */
#include <lauxlib.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "content.h"
#include "diag.h"
#include "frontmatter.h"
#include "luadata.h"
#include "yv.h"

static lua_State *S_L;
static config S_cfg;

static void S_page_clear(page *p)
{
    fm_page_clear(p);
    memset(p, 0, sizeof *p);
}

/* Pushes the tree into Lua and drops it again; a memory error is fine. */
static void S_push(yv *v)
{
    if (!v)
        return;
    (void)luadata_push(S_L, v);
    lua_settop(S_L, 0);
    yv_free(v);
}

static void S_one_error(const diag_list *dl, size_t before, const yv *v)
{
    if (!v && dl->errors != before + 1)
        __builtin_trap(); /* yv.h: on error exactly one diagnostic */
    if (v && dl->errors != before)
        __builtin_trap();
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    config_defaults(&S_cfg);
    S_L = luaL_newstate();
    return S_L ? 0 : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    diag_list dl;
    diag_list_init(&dl);

    page p;
    memset(&p, 0, sizeof p);
    p.src = "content/fuzz.md";
    if (fm_parse_page(&p, text, size, &S_cfg, &dl) == 0) {
        if (!p.title || p.body_off > size || p.body_line < 2)
            __builtin_trap();
        if (p.front)
            (void)luadata_push(S_L, p.front);
        lua_settop(S_L, 0);
    }
    S_page_clear(&p);

    size_t before = dl.errors;
    yv *v = yv_parse_yaml(text, size, NULL, "checks/fuzz.yaml", 0, &dl);
    S_one_error(&dl, before, v);
    S_push(v);

    before = dl.errors;
    v = yv_parse_json(text, size, NULL, "checks/fuzz.json", &dl);
    S_one_error(&dl, before, v);
    S_push(v);

    before = dl.errors;
    v = yv_parse_csv(text, size, NULL, "checks/fuzz.csv", &dl);
    S_one_error(&dl, before, v);
    S_push(v);

    diag_list_free(&dl);
    /* keep the state small between inputs */
    lua_gc(S_L, LUA_GCCOLLECT);
    return 0;
}
