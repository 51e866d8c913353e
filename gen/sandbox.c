#include "sandbox.h"

#include <fcntl.h>
#include <lauxlib.h>
#include <limits.h>
#include <lualib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arith.h"
#include "asan.h"
#include "fsutil.h"
#include "fuse.h"
#include "hostlib.h"
#include "sandbox_internal.h"
#include "stamp.h"

#define HOOK_STEP 1000          /* instructions between two budget checks */
#define MSG_MAX 600             /* bytes of an error message kept */
#define GC_SLACK (8u << 20)     /* garbage tolerated between full collections */
#define CHECKS_DIR "checks"

/* Lua's objects (strings, tables, closures, upvalues) come and go by the
 * hundred thousand in a build, and malloc spent more on them than Lua did.
 * Blocks up to POOL_MAX bytes come from free lists, one per size class
 * (multiples of 16 bytes up to 256, then powers of two), carved from one
 * region mapped for the sandbox's life; Lua tells the old size on every
 * free and realloc, so blocks need no header, and a block is the pool's
 * when its address is in the region. Larger blocks, and every block once
 * the region is used up, come from malloc: the pool holds at most
 * POOL_REGION bytes whatever a page allocates. Under AddressSanitizer every
 * block comes from malloc, so Lua's use of memory stays checked. */
#ifdef KV_ASAN
#define POOL_OFF 1
#endif
#define POOL_MAX 4096 /* POOL_CLASSES: sandbox_internal.h */
#define POOL_REGION ((size_t)16 << 20)

/* sandbox_eval's cache of compiled expressions (EXPR_CHUNK: sandbox_internal.h) */
#define EXPRS_MAX 4096
#define EXPR_SLOTS 8192 /* twice EXPRS_MAX: probes stay short */
#define USED_MIN 256    /* the used list's first size; it doubles when full */

/* The expression cache is looked up by the text in C, hashed a word at a
 * time: making a Lua string of every figure's code only to look it up cost
 * more than running the code. */
typedef struct expr_slot {
    char *text; /* owned; NULL for a free slot */
    size_t len;
    uint64_t hash;
    lua_Integer index; /* of the compiled function in the list at exprs_ref */
} expr_slot;

/* ---------- memory and instruction limits ---------- */

static bool S_pooled(const sandbox *sb, const void *p)
{
    return sb->region && (uintptr_t)p - (uintptr_t)sb->region < POOL_REGION;
}

/* The size class of a block of 1..POOL_MAX bytes, and its size. */
static size_t S_class(size_t n)
{
    if (n <= 256)
        return (n - 1) / 16;
    size_t k = 16;
    for (size_t c = 512; c < n; c *= 2)
        k++;
    return k;
}

static size_t S_class_size(size_t k) { return k < 16 ? (k + 1) * 16 : (size_t)512 << (k - 16); }

/* A block of n bytes (1..POOL_MAX) from the pool, or NULL when its region
 * is used up. Blocks of a class are multiples of 16 bytes apart from the
 * (page-aligned) region: aligned for any Lua value. */
static void *S_pool_get(sandbox *sb, size_t n)
{
    size_t k = S_class(n);
    void *b = sb->pool_free[k];
    if (b) {
        sb->pool_free[k] = *(void **)b;
        return b;
    }
    size_t size = S_class_size(k);
    if (!sb->region || POOL_REGION - sb->region_used < size)
        return NULL;
    b = sb->region + sb->region_used;
    sb->region_used += size;
    return b;
}

static void S_pool_put(sandbox *sb, void *b, size_t n)
{
    size_t k = S_class(n);
    *(void **)b = sb->pool_free[k];
    sb->pool_free[k] = b;
}

/* realloc for Lua's blocks: ptr (NULL, or osize bytes) to nsize > 0 bytes.
 * NULL when there is no memory, ptr then unchanged. */
static void *S_pool_realloc(sandbox *sb, void *ptr, size_t osize, size_t nsize)
{
    bool was_pooled = ptr && S_pooled(sb, ptr);
    if (was_pooled && nsize <= POOL_MAX && S_class(osize) == S_class(nsize))
        return ptr;
    void *q = nsize <= POOL_MAX ? S_pool_get(sb, nsize) : NULL;
    if (!q) {
        if (ptr && !was_pooled)
            return realloc(ptr, nsize);
        q = malloc(nsize);
    }
    if (!q || !ptr)
        return q;
    memcpy(q, ptr, osize < nsize ? osize : nsize);
    if (was_pooled)
        S_pool_put(sb, ptr, osize);
    else
        free(ptr);
    return q;
}

static void *S_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    sandbox *sb = ud;
    if (!ptr)
        osize = 0; /* osize is a type tag then */
    if (nsize == 0) {
        if (ptr && S_pooled(sb, ptr))
            S_pool_put(sb, ptr, osize);
        else
            free(ptr);
        sb->used -= osize;
        return NULL;
    }
    if (nsize > osize && !sb->in_handler && sb->used - osize + nsize > sb->limit) {
        sb->mem_hit = true;
        return NULL;
    }
    void *p = S_pool_realloc(sb, ptr, osize, nsize);
    if (!p)
        return NULL;
    sb->used = sb->used - osize + nsize;
    return p;
}

static void S_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    sandbox *sb = sandbox_of(L);
    sb->budget_left -= HOOK_STEP;
    if (sb->budget_left < 0 || sb->budget_hit) {
        if (sb->late)
            sb->cut = 1; /* counted on a bound, maybe not past its budget: again */
        sb->budget_hit = true;
        /* from now on every instruction fails, so pcall cannot swallow it */
        lua_sethook(L, S_hook, LUA_MASKCOUNT, 1);
        luaL_error(L, "instruction budget exceeded (limits.lua_instructions = %I)",
                   (lua_Integer)sb->o.instructions);
    }
}

/* A page that is cut: every instruction fails, as past the budget
 * (budget_hit: what stops a page everywhere else stops it too). */
static void S_cut_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    sandbox *sb = sandbox_of(L);
    sb->budget_hit = true;
    luaL_error(L, "cut short, to be rendered again with its instructions counted");
}

static void S_cut(sandbox *sb)
{
    sb->cut = 1;
    lua_sethook(sb->L, S_cut_hook, LUA_MASKCOUNT, 1);
}

/* An unmetered page from here on is metered "late": the Lua instructions it
 * ran are bounded by its CPU time (fuse_disarm's, or its bound of it) at
 * SANDBOX_MAX_RATE, and it counts on what that bound and its charges leave
 * of its budget. Ending within that,
 * it ends as it would have metered from its start; hitting it, it may not
 * be past its budget, so it is cut and rendered again. A margin of one hook
 * step covers the step a metered page may not have counted. */
static void S_meter_late(sandbox *sb)
{
    sb->unmetered = false;
    sb->late = true;
    long long ns = fuse_disarm();
    long long room = sb->o.instructions - sb->charged - HOOK_STEP, left = -1;
    if (ns >= 0 && room > 0 && ns < room / SANDBOX_MAX_RATE)
        left = room - ns * SANDBOX_MAX_RATE;
    if (left < HOOK_STEP) {
        S_cut(sb);
        return;
    }
    sb->budget_left = left;
    lua_sethook(sb->L, S_hook, LUA_MASKCOUNT, HOOK_STEP);
}

/* The hook the fuse sets: the next instruction meters the page late. */
static void S_late_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    sandbox *sb = sandbox_of(L);
    if (sb->unmetered)
        S_meter_late(sb);
    else if (!sb->cut)
        lua_sethook(L, S_hook, LUA_MASKCOUNT, HOOK_STEP);
    if (sb->cut) {
        sb->budget_hit = true;
        luaL_error(L, "cut short, to be rendered again with its instructions counted");
    }
}

/* The fuse blew: called in a signal handler, so only what one may do (Lua's
 * lua_sethook is made to be called from one). */
static void S_fuse_blown(void *ctx)
{
    sandbox *sb = ctx;
    lua_sethook(sb->L, S_late_hook, LUA_MASKCOUNT, 1);
}

static int S_panic(lua_State *L)
{
    const char *m = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
    fprintf(stderr, "kvsite: Lua panic: %s\n", m);
    abort();
}

static void S_warn(void *ud, const char *msg, int tocont)
{
    (void)ud;
    (void)msg;
    (void)tocont; /* warnings are off: nothing a page does should print here */
}

/* ---------- text of values ---------- */

void sandbox_put_float(buf *out, double d)
{
    if (d == floor(d) && fabs(d) < 1e15 && !(d == 0 && signbit(d)))
        buf_put_int(out, (long long)d); /* what "%.0f" prints, faster */
    else if (d == floor(d) && fabs(d) < 1e15)
        buf_puts(out, "-0");
    else
        buf_printf(out, "%.14g", d);
}

bool sandbox_tostring(lua_State *L, int idx, buf *out)
{
    switch (lua_type(L, idx)) {
    case LUA_TNIL: return true;
    case LUA_TBOOLEAN: buf_puts(out, lua_toboolean(L, idx) ? "true" : "false"); return true;
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx)) {
            buf_put_int(out, (long long)lua_tointeger(L, idx));
        } else {
            sandbox_put_float(out, lua_tonumber(L, idx));
        }
        return true;
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        buf_put(out, s, n);
        return true;
    }
    default:
        buf_printf(out, "(a %s value)", luaL_typename(L, idx));
        return false;
    }
}

/* ---------- error handling ---------- */

static int S_msgh(lua_State *L)
{
    sandbox *sb = sandbox_of(L);
    sb->in_handler = true;
    buf m = BUF_INIT;
    int t = lua_type(L, 1);
    if (t == LUA_TSTRING || t == LUA_TNUMBER) {
        size_t n;
        const char *s = lua_tolstring(L, 1, &n);
        buf_put(&m, s, n > MSG_MAX ? MSG_MAX : n);
        if (n > MSG_MAX)
            buf_puts(&m, "...");
    } else {
        /* never call __tostring on an error object: it could loop or fail */
        buf_printf(&m, "error object is a %s value", luaL_typename(L, 1));
    }
    free(sb->err_file);
    sb->err_file = NULL;
    sb->err_line = 0;
    lua_Debug ar;
    for (int level = 0; lua_getstack(L, level, &ar); level++) {
        if (!lua_getinfo(L, "Sl", &ar))
            continue;
        if (ar.source && ar.source[0] == '=' && strcmp(ar.what, "C") != 0 &&
            ar.currentline > 0) {
            bool expr = strcmp(ar.source, "=" EXPR_CHUNK) == 0 && sb->expr_file;
            sb->err_file = xstrdup(expr ? sb->expr_file : ar.source + 1);
            sb->err_line = expr ? sb->expr_line : ar.currentline;
            break;
        }
    }
    lua_pushlstring(L, buf_cstr(&m), m.len);
    buf_free(&m);
    sb->in_handler = false;
    return 1;
}

/* Removes a "file:123: " prefix that names a page or template chunk. */
static char *S_strip_position(const char *msg, const char *file, int *line)
{
    if (file) {
        size_t n = strlen(file);
        if (strncmp(msg, file, n) == 0 && msg[n] == ':') {
            const char *p = msg + n + 1;
            int l = 0;
            while (*p >= '0' && *p <= '9')
                l = l * 10 + (*p++ - '0');
            if (p > msg + n + 1 && p[0] == ':' && p[1] >= '0' && p[1] <= '9') {
                p++; /* a template's column (template.c): the error keeps the line */
                while (*p >= '0' && *p <= '9')
                    p++;
            }
            if (p > msg + n + 1 && p[0] == ':' && p[1] == ' ') {
                if (line && *line == 0)
                    *line = l;
                return xstrdup(p + 2);
            }
        }
    }
    return xstrdup(msg);
}

static void S_fill_error(sandbox *sb, const char *msg, sandbox_error *err)
{
    err->file = sb->err_file ? xstrdup(sb->err_file) : NULL;
    err->line = sb->err_line;
    /* an error that crossed an include names the included template first */
    if (strncmp(msg, "templates/", 10) == 0) {
        const char *colon = strchr(msg, ':');
        const char *p = colon ? colon + 1 : NULL;
        while (p && *p >= '0' && *p <= '9')
            p++;
        if (p && p > colon + 1 && p[0] == ':' && p[1] >= '0' && p[1] <= '9')
            for (p++; *p >= '0' && *p <= '9';)
                p++;
        if (p && p > colon + 1 && p[0] == ':' && p[1] == ' ') {
            free(err->file);
            err->file = xstrndup(msg, (size_t)(colon - msg));
            err->line = 0; /* taken from the message below */
        }
    }
    if (strncmp(msg, EXPR_CHUNK ":", sizeof EXPR_CHUNK) == 0) {
        int ignored = 1;
        err->msg = S_strip_position(msg, EXPR_CHUNK, &ignored);
    } else {
        err->msg = S_strip_position(msg, err->file, &err->line);
    }
    err->limit = sb->budget_hit || sb->mem_hit;
    sb->limit_surfaced |= err->limit;
    if (sb->mem_hit && !sb->budget_hit) {
        free(err->msg);
        err->msg = xasprintf("memory cap exceeded (limits.lua_memory = %zu bytes)", sb->o.memory);
    }
}

void sandbox_error_free(sandbox_error *err)
{
    free(err->file);
    free(err->msg);
    memset(err, 0, sizeof *err);
}

/* ---------- set-up ---------- */

static void S_open(lua_State *L, const char *name, lua_CFunction f)
{
    luaL_requiref(L, name, f, 1);
    lua_pop(L, 1);
}

/* Replaces the table on top of the stack by the list {k1, v1, k2, v2, ...}
 * of its entries in lua_next order: every page copies it, and reading a list
 * by index costs less than lua_next, while the page's table gets its entries
 * in the same order as before. */
void sandbox_flatten(lua_State *L)
{
    int t = lua_gettop(L);
    lua_newtable(L);
    lua_Integer i = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pushvalue(L, -2);
        lua_rawseti(L, t + 1, ++i); /* the key */
        lua_rawseti(L, t + 1, ++i); /* the value */
    }
    lua_replace(L, t);
}

static int S_setup(lua_State *L)
{
    sandbox *sb = lua_touserdata(L, 1);
    arith_open(sb->arith, L);
    /* sandbox_eval's lists, sized so that storing into them never
     * allocates: an allocation there could fail at a page's memory cap,
     * outside any pcall */
    lua_createtable(L, EXPRS_MAX, 0);
    sb->exprs_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_createtable(L, USED_MIN, 0);
    sb->used_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    sb->used_cap = USED_MIN;
    S_open(L, LUA_GNAME, luaopen_base);
    S_open(L, LUA_STRLIBNAME, luaopen_string);
    S_open(L, LUA_TABLIBNAME, luaopen_table);
    S_open(L, LUA_MATHLIBNAME, luaopen_math);
    S_open(L, LUA_UTF8LIBNAME, luaopen_utf8);
    /* string.dump stays reachable through ("").dump unless removed at the source */
    lua_getglobal(L, "string");
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    /* protect the shared string metatable from getmetatable("").__index = ... */
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 3);

    lua_newtable(L); /* the prototype of every page environment */
    int proto = lua_gettop(L);
    static const char *base_names[] = {"assert", "error", "getmetatable", "ipairs", "next",
                                       "pairs", "pcall", "rawequal", "rawget", "rawlen",
                                       "rawset", "select", "tonumber", "tostring", "type",
                                       "_VERSION", "string", "table", "math", "utf8"};
    lua_newtable(L); /* library name -> metatable of its views */
    int libs = lua_gettop(L);
    for (size_t i = 0; i < sizeof base_names / sizeof base_names[0]; i++) {
        lua_getglobal(L, base_names[i]);
        if (lua_istable(L, -1)) {
            hostlib_push_view_meta(L, -1, base_names[i]);
            lua_setfield(L, libs, base_names[i]);
            lua_pop(L, 1);
        } else {
            lua_setfield(L, proto, base_names[i]);
        }
    }
    lua_pushvalue(L, libs);
    sandbox_flatten(L);
    sb->libs_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 1);
    hostlib_fill_proto(L, proto);
    sandbox_flatten(L);
    sb->proto_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    hostlib_open_kvsite(sb, L);
    lua_newtable(L);
    sb->modules_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    /* the real globals are unreachable from pages; empty them all the same */
    lua_pushglobaltable(L);
    lua_pushnil(L);
    lua_setfield(L, -2, "dofile");
    lua_pushnil(L);
    lua_setfield(L, -2, "loadfile");
    lua_pushnil(L);
    lua_setfield(L, -2, "collectgarbage");
    lua_pop(L, 1);
    return 0;
}

void sandbox_set_library(sandbox *sb, const char *dir)
{
    if (sb->library_fd >= 0)
        close(sb->library_fd);
    sb->library_fd = dir ? fs_root_open(dir) : -1;
}

void sandbox_set_tolerance(sandbox *sb, double tolerance) { sb->shared.tolerance = tolerance; }

sandbox *sandbox_new(const sandbox_opts *o)
{
    sandbox *sb = xcalloc(1, sizeof *sb);
    sb->o = *o;
    sb->root = xstrdup(o->root);
    sb->limit = (size_t)-1;
    sb->env_ref = sb->loaded_ref = sb->exprs_ref = sb->used_ref = sb->tenv_ref = LUA_NOREF;
    sb->checks_fd = fs_open_in(o->root, CHECKS_DIR, O_RDONLY | O_DIRECTORY);
    sb->library_fd = -1;
    strmap_init(&sb->data_cache);
    sb->shared.tolerance = 0.05; /* figures.tolerance's default; see sandbox_set_tolerance */
    sb->arith = arith_new();
    sb->expr_slots = xcalloc(EXPR_SLOTS, sizeof *sb->expr_slots);
#ifndef POOL_OFF
    /* address space only: pages are touched as blocks are handed out */
    void *region = mmap(NULL, POOL_REGION, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    sb->region = region == MAP_FAILED ? NULL : region;
#endif
    sb->L = lua_newstate(S_alloc, sb);
    if (!sb->L) {
        sandbox_free(sb);
        return NULL;
    }
    lua_atpanic(sb->L, S_panic);
    lua_setwarnf(sb->L, S_warn, NULL);
    lua_pushcfunction(sb->L, S_setup);
    lua_pushlightuserdata(sb->L, sb);
    if (lua_pcall(sb->L, 1, 0, 0) != LUA_OK) {
        sandbox_free(sb);
        return NULL;
    }
    return sb;
}

static void S_exprs_clear(sandbox *sb)
{
    if (!sb->expr_slots)
        return;
    for (size_t i = 0; i < EXPR_SLOTS; i++)
        free(sb->expr_slots[i].text);
    memset(sb->expr_slots, 0, EXPR_SLOTS * sizeof *sb->expr_slots);
}

void sandbox_free(sandbox *sb)
{
    if (!sb)
        return;
    if (sb->L)
        lua_close(sb->L);
    if (sb->region)
        munmap(sb->region, POOL_REGION);
    hostlib_free(sb);
    S_exprs_clear(sb);
    free(sb->expr_slots);
    arith_free(sb->arith);
    quote_units_free(sb->units);
    buf_free(&sb->provenance);
    buf_free(&sb->inputs);
    free(sb->err_file);
    if (sb->checks_fd >= 0)
        close(sb->checks_fd);
    if (sb->library_fd >= 0)
        close(sb->library_fd);
    free(sb->root);
    free(sb);
}

lua_State *sandbox_lua(sandbox *sb) { return sb->L; }
quote_unitset *sandbox_units(sandbox *sb) { return sb->units; }
const buf *sandbox_page_inputs(sandbox *sb) { return &sb->inputs; }
void sandbox_push_env(sandbox *sb) { lua_rawgeti(sb->L, LUA_REGISTRYINDEX, sb->env_ref); }

void sandbox_capture_print(sandbox *sb, buf *out, size_t cap)
{
    sb->capture = out;
    sb->capture_cap = cap;
}

/* Fills the table at env with what every environment starts from: the
 * base functions, fresh read-only views of the libraries (no page can change
 * what another sees, and nothing is copied per page), _G and kvsite. */
static void S_fill_env(lua_State *L, sandbox *sb, int env)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->proto_ref); /* {k1, v1, ...}: sandbox_flatten */
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i < n; i += 2) {
        lua_rawgeti(L, -1, i);
        lua_rawgeti(L, -2, i + 1);
        lua_rawset(L, env);
    }
    lua_pop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->libs_ref);
    n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i < n; i += 2) {
        lua_rawgeti(L, -1, i);
        lua_newtable(L);
        lua_rawgeti(L, -3, i + 1);
        lua_setmetatable(L, -2);
        lua_rawset(L, env);
    }
    lua_pop(L, 1);
    lua_pushvalue(L, env);
    lua_setfield(L, env, "_G");
    hostlib_push_kvsite(sb, L);
    lua_setfield(L, env, "kvsite");
}

static int S_make_env(lua_State *L)
{
    sandbox *sb = lua_touserdata(L, 1);
    /* sized for the globals, the libraries and what the renderer adds, so
     * filling it never rehashes */
    lua_createtable(L, 0, 64);
    S_fill_env(L, sb, lua_gettop(L));
    /* the same random sequence on every page, whatever worker renders it */
    lua_getglobal(L, "math");
    lua_getfield(L, -1, "randomseed");
    lua_pushinteger(L, 20261129);
    lua_call(L, 1, 0);
    lua_pop(L, 1);
    sb->env_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_newtable(L);
    sb->loaded_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* The templates' environment of this page: its own builtins, falling back
 * to the page's environment for the rest (see sandbox.h). */
static int S_make_template_env(lua_State *L)
{
    sandbox *sb = lua_touserdata(L, 1);
    lua_createtable(L, 0, 64);
    int env = lua_gettop(L);
    S_fill_env(L, sb, env);
    lua_createtable(L, 0, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->env_ref);
    lua_setfield(L, -2, "__index");
    lua_setmetatable(L, env);
    sb->tenv_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

void sandbox_push_template_env(sandbox *sb)
{
    lua_State *L = sb->L;
    if (sb->tenv_ref == LUA_NOREF) {
        lua_pushcfunction(L, S_make_template_env);
        lua_pushlightuserdata(L, sb);
        if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
            fprintf(stderr, "kvsite: cannot create a Lua environment (out of memory)\n");
            exit(70);
        }
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->tenv_ref);
}

void sandbox_page_begin(sandbox *sb, const char *file, diag_list *dl)
{
    lua_State *L = sb->L;
    sandbox_page_end(sb);
    sb->page_file = file;
    sb->dl = dl;
    /* one unit set per worker, emptied for each page */
    if (sb->units)
        quote_units_clear(sb->units);
    else
        sb->units = quote_units_new();
    buf_clear(&sb->inputs);
    sb->limit = (size_t)-1;
    if (sb->used > sb->gc_baseline + GC_SLACK) {
        lua_gc(L, LUA_GCCOLLECT);
        sb->gc_baseline = sb->used;
    }
    lua_pushcfunction(L, S_make_env);
    lua_pushlightuserdata(L, sb);
    if (lua_pcall(L, 1, 0, 0) != LUA_OK) {
        fprintf(stderr, "kvsite: cannot create a Lua environment (out of memory)\n");
        exit(70);
    }
    sb->mem_hit = sb->budget_hit = sb->limit_surfaced = false;
    sb->prints = 0;
    sb->budget_left = sb->o.instructions;
    sb->limit = sb->used + sb->o.memory;
    sb->cut = 0;
    sb->late = sb->rerun = false;
    sb->charged = 0;
    bool try_unmetered = sb->unmetered_ok && !sb->meter_next;
    sb->meter_next = false;
    long long fuse_ns = sb->o.instructions / 2 / SANDBOX_MAX_RATE;
    sb->unmetered = try_unmetered && fuse_ns > 0 && fuse_arm(fuse_ns, S_fuse_blown, sb);
    if (!sb->unmetered)
        lua_sethook(L, S_hook, LUA_MASKCOUNT, HOOK_STEP);
}

bool sandbox_page_cut(sandbox *sb)
{
    if (sb->unmetered)
        S_meter_late(sb); /* what it ran is known now: judged, metered after */
    if (sb->cut && !sb->rerun) {
        sb->rerun = true;
        sb->meter_next = true;
    }
    return sb->rerun;
}

void sandbox_set_unmetered(sandbox *sb, bool on) { sb->unmetered_ok = on; }

bool sandbox_take_rerun(sandbox *sb)
{
    bool r = sb->rerun;
    sb->rerun = false;
    return r;
}

void sandbox_page_end(sandbox *sb)
{
    lua_State *L = sb->L;
    sandbox_page_cut(sb);
    lua_sethook(L, NULL, 0, 0);
    sb->limit = (size_t)-1;
    if (sb->nused) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, sb->used_ref);
        for (size_t i = 1; i <= sb->nused; i++) {
            lua_rawgeti(L, -1, (lua_Integer)i);
            lua_pushnil(L);
            lua_setupvalue(L, -2, 1);
            lua_pop(L, 1);
            lua_pushnil(L);
            lua_rawseti(L, -2, (lua_Integer)i);
        }
        lua_pop(L, 1);
        sb->nused = 0;
    }
    luaL_unref(L, LUA_REGISTRYINDEX, sb->env_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, sb->loaded_ref);
    luaL_unref(L, LUA_REGISTRYINDEX, sb->tenv_ref);
    sb->env_ref = sb->loaded_ref = sb->tenv_ref = LUA_NOREF;
    sb->limit = (size_t)-1;
    sb->page_file = NULL;
    sb->dl = NULL;
    lua_settop(L, 0);
}

bool sandbox_exhausted(const sandbox *sb) { return sb->budget_hit || sb->mem_hit; }

bool sandbox_charge(sandbox *sb, long long instructions)
{
    if (sb->unmetered) {
        if (!sb->cut && sb->charged + instructions <= sb->o.instructions / 2 - HOOK_STEP) {
            sb->charged += instructions;
            return true;
        }
        S_meter_late(sb); /* past its half: counted from here */
    }
    /* a margin of one hook step: Lua, carrying on, finds the budget spent */
    if (sb->budget_hit || sb->cut || sb->budget_left - instructions < HOOK_STEP) {
        if (sb->late)
            S_cut(sb);
        return false;
    }
    sb->budget_left -= instructions;
    return true;
}

const char *sandbox_swallowed_limit(const sandbox *sb)
{
    if (sb->limit_surfaced)
        return NULL;
    if (sb->budget_hit)
        return "instruction budget exceeded (limits.lua_instructions), inside a pcall";
    if (sb->mem_hit)
        return "memory cap exceeded (limits.lua_memory), inside a pcall";
    return NULL;
}

void sandbox_figure_begin(sandbox *sb)
{
    sb->measured = false;
    buf_clear(&sb->provenance);
}

bool sandbox_figure_measured(sandbox *sb, const char **prov)
{
    if (prov)
        *prov = buf_cstr(&sb->provenance);
    return sb->measured;
}

/* ---------- plain arithmetic without the compiler (arith.c) ---------- */

/* Whether need bytes of the page's heap are left under its memory cap. */
static bool S_headroom(const sandbox *sb, size_t need)
{
    return sb->used <= sb->limit && sb->limit - sb->used >= need;
}

/* sandbox_eval's "return EXPR" by arith_expr: true with its values on the
 * stack (*nres of them), false with the stack as it was. */
static bool S_arith(sandbox *sb, const char *code, size_t len, int *nres)
{
    lua_State *L = sb->L;
    if (sb->arith_off || !S_headroom(sb, ARITH_EXPR_MEM))
        return false;
    int base = lua_gettop(L);
    long long tokens;
    if (!arith_expr(sb->arith, L, sb->env_ref, code, len, nres, &tokens))
        return false;
    /* about what Lua's own instructions would have cost */
    if (!sandbox_charge(sb, tokens)) {
        lua_settop(L, base);
        return false;
    }
    sb->arith_count++;
    return true;
}

/* sandbox_run's block of assignments by arith_block: 1 when it ran, 0 (the
 * stack as it was, nothing changed) when Lua must run it, -1 with *err
 * filled when the stores hit the memory cap. */
static int S_block(sandbox *sb, const char *code, size_t len, sandbox_error *err)
{
    lua_State *L = sb->L;
    if (sb->arith_off || !S_headroom(sb, ARITH_BLOCK_MEM))
        return 0;
    int base = lua_gettop(L), nstores;
    long long tokens;
    if (!arith_block(sb->arith, L, sb->env_ref, code, len, &nstores, &tokens))
        return 0;
    if (!sandbox_charge(sb, tokens)) {
        lua_settop(L, base);
        return 0;
    }
    sb->arith_count++;
    /* the environment changes only now that the whole block evaluated */
    lua_pushcfunction(L, arith_block_store);
    lua_insert(L, base + 1);
    int nres;
    return sandbox_pcall(sb, 1 + 2 * nstores, &nres, err) == 0 ? 1 : -1;
}

/* ---------- running code ---------- */

typedef struct {
    int newlines;
    const char *code;
    size_t len;
    int state;
} line_reader;

/* Feeds first_line - 1 newlines and then the code, so Lua's line numbers are
 * the file's without copying the code. */
static const char *S_read(lua_State *L, void *ud, size_t *size)
{
    (void)L;
    static const char nl[256] = {[0 ... 255] = '\n'};
    line_reader *r = ud;
    if (r->newlines > 0) {
        int n = r->newlines > 256 ? 256 : r->newlines;
        r->newlines -= n;
        *size = (size_t)n;
        return nl;
    }
    if (r->state == 0) {
        r->state = 1;
        *size = r->len;
        return r->code;
    }
    *size = 0;
    return NULL;
}

static int S_limit_error(sandbox *sb, sandbox_error *err)
{
    memset(err, 0, sizeof *err);
    err->file = sb->page_file ? xstrdup(sb->page_file) : NULL;
    err->limit = true;
    sb->limit_surfaced = true;
    err->msg = sb->budget_hit
                   ? xasprintf("instruction budget exceeded (limits.lua_instructions = %lld)",
                               sb->o.instructions)
                   : xasprintf("memory cap exceeded (limits.lua_memory = %zu bytes)", sb->o.memory);
    return -1;
}

int sandbox_pcall(sandbox *sb, int nargs, int *nres, sandbox_error *err)
{
    lua_State *L = sb->L;
    if (sb->budget_hit || sb->mem_hit) {
        lua_pop(L, nargs + 1);
        return S_limit_error(sb, err);
    }
    int fn = lua_gettop(L) - nargs;
    /* memory errors skip the handler: never report an older error's place */
    free(sb->err_file);
    sb->err_file = NULL;
    sb->err_line = 0;
    lua_pushcfunction(L, S_msgh);
    lua_insert(L, fn);
    int status = lua_pcall(L, nargs, LUA_MULTRET, fn);
    if (status != LUA_OK) {
        memset(err, 0, sizeof *err);
        const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "error";
        if (status == LUA_ERRMEM)
            msg = "not enough memory";
        S_fill_error(sb, msg, err);
        lua_settop(L, fn - 1);
        return -1;
    }
    lua_remove(L, fn);
    if (nres)
        *nres = lua_gettop(L) - fn + 1;
    return 0;
}

int sandbox_run(sandbox *sb, const char *code, size_t len, const char *file, int first_line,
                int *nres, sandbox_error *err)
{
    lua_State *L = sb->L;
    if (sb->budget_hit || sb->mem_hit)
        return S_limit_error(sb, err);
    int fast = S_block(sb, code, len, err);
    if (fast != 0) {
        if (nres)
            *nres = 0; /* a block of assignments returns nothing */
        return fast > 0 ? 0 : -1;
    }
    line_reader r = {first_line > 1 ? first_line - 1 : 0, code, len, 0};
    char *chunk = xasprintf("=%s", file);
    int status = lua_load(L, S_read, &r, chunk, "t");
    free(chunk);
    if (status != LUA_OK) {
        memset(err, 0, sizeof *err);
        const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "syntax error";
        err->file = xstrdup(file);
        err->msg = S_strip_position(msg, file, &err->line);
        err->limit = sb->mem_hit;
        lua_pop(L, 1);
        return -1;
    }
    sandbox_push_env(sb);
    lua_setupvalue(L, -2, 1);
    return sandbox_pcall(sb, 0, nres, err);
}

void sandbox_set_arith(sandbox *sb, bool on) { sb->arith_off = !on; }
unsigned long sandbox_arith_count(const sandbox *sb) { return sb->arith_count; }

/* In a pcall (sandbox_eval): a used list twice as long, since growing a
 * table can fail at the page's memory cap. The list's entries all sit in
 * its array part, so storing one never allocates. */
static int S_used_grow(lua_State *L)
{
    sandbox *sb = sandbox_of(L);
    if (sb->used_cap > INT_MAX / 2)
        return luaL_error(L, "too many expressions on one page");
    int cap = 2 * sb->used_cap;
    lua_createtable(L, cap, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->used_ref);
    for (size_t i = 1; i <= sb->nused; i++) {
        lua_rawgeti(L, -1, (lua_Integer)i);
        lua_rawseti(L, -3, (lua_Integer)i);
    }
    lua_pop(L, 1);
    lua_rawseti(L, LUA_REGISTRYINDEX, sb->used_ref); /* an existing entry: no allocation */
    sb->used_cap = cap;
    return 0;
}

/* The error of an expression that ran out of memory before it ran. */
static int S_expr_memory_error(sandbox *sb, const char *file, int line, sandbox_error *err)
{
    memset(err, 0, sizeof *err);
    err->file = xstrdup(file);
    err->line = line;
    err->limit = sb->mem_hit;
    sb->limit_surfaced |= err->limit;
    err->msg = sb->mem_hit ? xasprintf("memory cap exceeded (limits.lua_memory = %zu bytes)",
                                       sb->o.memory)
                           : xstrdup("not enough memory");
    return -1;
}

int sandbox_eval(sandbox *sb, const char *code, size_t len, const char *file, int line, int *nres,
                 sandbox_error *err)
{
    lua_State *L = sb->L;
    if (sb->budget_hit || sb->mem_hit)
        return S_limit_error(sb, err);
    int fast_nres;
    if (S_arith(sb, code, len, &fast_nres)) {
        if (nres)
            *nres = fast_nres;
        return 0;
    }
    if (sb->nexprs >= EXPRS_MAX) {
        /* full: start over rather than grow without bound */
        lua_rawgeti(L, LUA_REGISTRYINDEX, sb->exprs_ref);
        for (size_t k = 1; k <= sb->nexprs; k++) {
            lua_pushnil(L);
            lua_rawseti(L, -2, (lua_Integer)k);
        }
        lua_pop(L, 1);
        sb->nexprs = 0;
        S_exprs_clear(sb);
    }
    if (sb->nused == (size_t)sb->used_cap) {
        lua_pushcfunction(L, S_used_grow);
        if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
            lua_pop(L, 1);
            return S_expr_memory_error(sb, file, line, err);
        }
    }
    uint64_t h = stamp_key(code, len);
    size_t i = (size_t)h & (EXPR_SLOTS - 1);
    expr_slot *slot;
    while ((slot = &sb->expr_slots[i])->text &&
           !(slot->hash == h && slot->len == len && memcmp(slot->text, code, len) == 0))
        i = (i + 1) & (EXPR_SLOTS - 1);
    /* the cache and the used list have room in their array parts (made at
     * setup and above): storing into them allocates nothing, so nothing
     * here can raise an error outside a pcall */
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->exprs_ref);
    if (slot->text) {
        lua_rawgeti(L, -1, slot->index);
    } else {
        int status = luaL_loadbufferx(L, code, len, "=" EXPR_CHUNK, "t");
        if (status == LUA_ERRMEM) {
            lua_pop(L, 2);
            return S_expr_memory_error(sb, file, line, err);
        }
        if (status != LUA_OK) {
            memset(err, 0, sizeof *err);
            const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "syntax error";
            int ignored = 1;
            err->file = xstrdup(file);
            err->line = line;
            err->msg = S_strip_position(msg, EXPR_CHUNK, &ignored);
            err->limit = sb->mem_hit;
            lua_pop(L, 2);
            return -1;
        }
        lua_pushvalue(L, -1);
        lua_rawseti(L, -3, (lua_Integer)++sb->nexprs);
        slot->text = xstrndup(code, len);
        slot->len = len;
        slot->hash = h;
        slot->index = (lua_Integer)sb->nexprs;
    }
    lua_remove(L, -2); /* the cache table */
    sandbox_push_env(sb);
    lua_setupvalue(L, -2, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->used_ref);
    lua_pushvalue(L, -2);
    lua_rawseti(L, -2, (lua_Integer)++sb->nused);
    lua_pop(L, 1);
    const char *saved_file = sb->expr_file;
    int saved_line = sb->expr_line;
    sb->expr_file = file;
    sb->expr_line = line;
    int rc = sandbox_pcall(sb, 0, nres, err);
    sb->expr_file = saved_file;
    sb->expr_line = saved_line;
    return rc;
}
