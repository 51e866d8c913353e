#include "luatest.h"

#include <lauxlib.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "config.h"
#include "fsutil.h"
#include "paths.h"
#include "sandbox.h"

typedef struct {
    const char *file;
    int passed, failed;
    bool verbose;
} run_state;

static int S_test(lua_State *L)
{
    run_state *rs = lua_touserdata(L, lua_upvalueindex(1));
    const char *name = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    if (lua_pcall(L, 0, 0, 0) == LUA_OK) {
        rs->passed++;
        if (rs->verbose)
            printf("ok   %s: %s\n", rs->file, name);
    } else {
        rs->failed++;
        buf m = BUF_INIT;
        if (!sandbox_tostring(L, -1, &m))
            buf_puts(&m, " (error object)");
        printf("FAIL %s: %s: %s\n", rs->file, name, buf_cstr(&m));
        buf_free(&m);
        lua_pop(L, 1);
    }
    return 0;
}

int luatest_main(int argc, char **argv)
{
    const char *root = ".";
    bool verbose = false;
    int first = 1;
    while (first < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "-C") == 0 && first + 1 < argc) {
            root = argv[first + 1];
            first += 2;
        } else if (strcmp(argv[first], "-v") == 0) {
            verbose = true;
            first++;
        } else {
            fprintf(stderr, "kvsite lua-test: unknown option %s\n", argv[first]);
            return 2;
        }
    }
    if (first >= argc) {
        fprintf(stderr, "usage: kvsite lua-test [-C DIR] [-v] FILE...\n");
        return 2;
    }
    config cfg;
    config_defaults(&cfg);
    sandbox_opts so = {root, cfg.limits.lua_instructions * 10, cfg.limits.lua_memory * 4,
                       cfg.limits.data_bytes, cfg.limits.depth};
    sandbox *sb = sandbox_new(&so);
    config_free(&cfg);
    if (!sb) {
        fprintf(stderr, "kvsite lua-test: cannot start Lua\n");
        return 70;
    }
    sandbox_set_library(sb, paths_get()->checks);
    int passed = 0, failed = 0;
    for (int i = first; i < argc; i++) {
        run_state rs = {argv[i], 0, 0, verbose};
        buf text = BUF_INIT;
        int rc = fs_read_file(argv[i], 16u << 20, &text);
        if (rc != FS_OK) {
            printf("FAIL %s: cannot read: %s\n", argv[i], fs_strerror(rc, 16u << 20));
            failed++;
            buf_free(&text);
            continue;
        }
        diag_list dl;
        diag_list_init(&dl);
        sandbox_page_begin(sb, argv[i], &dl);
        lua_State *L = sandbox_lua(sb);
        sandbox_push_env(sb);
        lua_pushlightuserdata(L, &rs);
        lua_pushcclosure(L, S_test, 1);
        lua_setfield(L, -2, "test");
        lua_pop(L, 1);
        sandbox_error err;
        int nres = 0;
        if (sandbox_run(sb, buf_cstr(&text), text.len, argv[i], 1, &nres, &err) != 0) {
            printf("FAIL %s:%d: %s\n", argv[i], err.line, err.msg);
            rs.failed++;
            sandbox_error_free(&err);
        } else {
            lua_pop(L, nres);
        }
        sandbox_page_end(sb);
        for (size_t k = 0; k < dl.n; k++)
            if (verbose)
                printf("     %s:%d: %s\n", argv[i], dl.v[k].line, dl.v[k].msg);
        diag_list_free(&dl);
        buf_free(&text);
        passed += rs.passed;
        failed += rs.failed;
    }
    sandbox_free(sb);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
