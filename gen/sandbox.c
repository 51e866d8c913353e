#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <limits.h>
#include <lualib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fsutil.h"
#include "luadata.h"
#include "stamp.h"
#include "strmap.h"
#include "yv.h"

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
#if defined(__SANITIZE_ADDRESS__)
#define POOL_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_OFF 1
#endif
#endif
#define POOL_MAX 4096
#define POOL_CLASSES 20 /* 16 of 16..256 bytes, 512, 1024, 2048, 4096 */
#define POOL_REGION ((size_t)16 << 20)

typedef struct {
    yv *tree;   /* parsed data file, or NULL for text */
    char *text; /* text files */
    size_t len;
} data_entry;

struct sandbox {
    lua_State *L;
    sandbox_opts o;
    char *root;
    int checks_fd;     /* root/checks, opened without following links; -1: none */

    size_t used, limit; /* Lua heap accounting */
    bool mem_hit, in_handler;
    bool limit_surfaced; /* a budget or memory error reached C (and was reported) */
    long long budget_left;
    bool budget_hit;
    size_t gc_baseline;

    int proto_ref, env_ref, loaded_ref, modules_ref, libs_ref;
    int exprs_ref;       /* the list of compiled expressions (sandbox_eval) */
    size_t nexprs;
    struct expr_slot *expr_slots; /* their index in the list by their text */
    int used_ref;        /* the ones the page ran, given its environment: taken
                          * back at its end, or the cache would keep thousands
                          * of dead pages alive (26 MiB at 10,000 pages) */
    size_t nused;
    int used_cap;        /* entries its array part holds */
    bool arith_off;          /* tests: always compile (S_arith and S_block off) */
    unsigned long arith_count; /* expressions and blocks run without compiling */
    struct name_slot *names;   /* S_arith's names as Lua strings, NAME_SLOTS */
    const char *expr_file; /* the expression being evaluated: its place */
    int expr_line;
    const char *page_file;
    diag_list *dl;
    quote_unitset *units;
    bool measured;
    int prints;
    buf provenance;
    buf inputs;
    strmap data_cache;

    char *err_file; /* set by the message handler */
    int err_line;

    void *pool_free[POOL_CLASSES]; /* free blocks by size class */
    char *region;                  /* the pool's memory, or NULL: all from malloc */
    size_t region_used;            /* bytes of it handed out at least once */
};

/* The chunk name of cached expressions (sandbox_eval): positions Lua gives
 * in it are replaced by the expression's own place. */
#define EXPR_CHUNK "(expression)"
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

/* Names in figures, kept as Lua strings for S_arith: making the string again
 * (hashing it, finding it among Lua's strings) cost more than the rest of
 * the lookup. One slot per hash, the newest name wins; each slot's string
 * sits in the registry under a ref taken at setup, so replacing it never
 * allocates. */
#define ARITH_NAME 40 /* longest name: Lua interns names up to this length */
#define NAME_SLOTS 256
typedef struct name_slot {
    unsigned char len; /* 0 for a free slot */
    char text[ARITH_NAME];
    int ref;
} name_slot;

static sandbox *S_sb(lua_State *L)
{
    void *ud;
    lua_getallocf(L, &ud);
    return ud;
}

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
    sandbox *sb = S_sb(L);
    sb->budget_left -= HOOK_STEP;
    if (sb->budget_left < 0 || sb->budget_hit) {
        sb->budget_hit = true;
        /* from now on every instruction fails, so pcall cannot swallow it */
        lua_sethook(L, S_hook, LUA_MASKCOUNT, 1);
        luaL_error(L, "instruction budget exceeded (limits.lua_instructions = %I)",
                   (lua_Integer)sb->o.instructions);
    }
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
    sandbox *sb = S_sb(L);
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

/* ---------- host functions ---------- */

static void S_push_env(sandbox *sb) { lua_rawgeti(sb->L, LUA_REGISTRYINDEX, sb->env_ref); }

static int S_current_line(lua_State *L, const char **file)
{
    sandbox *sb = S_sb(L);
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); level++) {
        if (lua_getinfo(L, "Sl", &ar) && ar.source[0] == '=' && strcmp(ar.what, "C") != 0) {
            if (strcmp(ar.source, "=" EXPR_CHUNK) == 0 && sb->expr_file) {
                if (file)
                    *file = sb->expr_file;
                return sb->expr_line;
            }
            if (file)
                *file = ar.source + 1;
            return ar.currentline;
        }
    }
    return 0;
}

#define PRINT_LINES_MAX 200 /* per page: print is for debugging, not a log flood */

static int S_print(lua_State *L)
{
    sandbox *sb = S_sb(L);
    if (++sb->prints > PRINT_LINES_MAX) {
        if (sb->prints == PRINT_LINES_MAX + 1 && sb->dl)
            diag_add(sb->dl, DIAG_NOTE, sb->page_file, S_current_line(L, NULL), 0,
                     "print: more than %d lines on this page; the rest is not shown",
                     PRINT_LINES_MAX);
        return 0;
    }
    int n = lua_gettop(L);
    buf b = BUF_INIT;
    for (int i = 1; i <= n; i++) {
        if (i > 1)
            buf_putc(&b, '\t');
        sandbox_tostring(L, i, &b);
        if (b.len > 4096) {
            buf_truncate(&b, 4096);
            buf_puts(&b, "...");
            break;
        }
    }
    if (sb->dl)
        diag_add(sb->dl, DIAG_NOTE, sb->page_file, S_current_line(L, NULL), 0, "print: %s",
                 buf_cstr(&b));
    buf_free(&b);
    return 0;
}

/* The message handler of a page's xpcall, wrapped: once the budget or the
 * memory cap is spent, the error goes through untouched. Lua runs a handler
 * with hooks off when the error was raised by the count hook, so a looping
 * handler would otherwise escape the budget. */
static int S_xpcall_handler(lua_State *L)
{
    sandbox *sb = S_sb(L);
    if (sb->budget_hit || sb->mem_hit)
        return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

static int S_xpcall(lua_State *L)
{
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, lua_upvalueindex(1)); /* the real xpcall */
    lua_insert(L, 1);
    lua_pushvalue(L, 3); /* the page's handler */
    lua_pushcclosure(L, S_xpcall_handler, 1);
    lua_replace(L, 3);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static int S_setmetatable(lua_State *L)
{
    if (lua_type(L, 2) == LUA_TTABLE) {
        lua_pushliteral(L, "__gc");
        if (lua_rawget(L, 2) != LUA_TNIL)
            return luaL_error(L, "setmetatable: __gc metamethods are not allowed here");
        lua_pop(L, 1);
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/* load(chunk [, chunkname [, mode [, env]]]): text only, env defaults to the page's. */
static int S_load(lua_State *L)
{
    sandbox *sb = S_sb(L);
    size_t len;
    const char *s = lua_tolstring(L, 1, &len);
    if (!s || lua_type(L, 1) != LUA_TSTRING)
        return luaL_error(L, "load: only a string chunk is accepted here");
    luaL_optstring(L, 2, NULL); /* a chunk name is accepted but not used: see below */
    const char *mode = luaL_optstring(L, 3, "t");
    if (strchr(mode, 'b'))
        return luaL_error(L, "load: binary chunks are not allowed");
    bool has_env = lua_gettop(L) >= 4;
    /* "@" keeps loaded chunks apart from page and template chunks ("="), so a
     * page cannot forge the location of its errors */
    int status = luaL_loadbufferx(L, s, len, "@(load)", "t");
    if (status != LUA_OK) {
        luaL_pushfail(L);
        lua_insert(L, -2);
        return 2;
    }
    if (has_env)
        lua_pushvalue(L, 4);
    else
        S_push_env(sb);
    if (!lua_setupvalue(L, -2, 1))
        lua_pop(L, 1);
    return 1;
}

static bool S_safe_relpath(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > 200 || p[0] == '/')
        return false;
    const char *seg = p;
    for (const char *c = p;; c++) {
        if (*c == '/' || *c == '\0') {
            if (c == seg || seg[0] == '.')
                return false; /* empty segment, ".", "..", dotfiles */
            if (*c == '\0')
                break;
            seg = c + 1;
            continue;
        }
        unsigned char u = (unsigned char)*c;
        if (!((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') ||
              u == '-' || u == '_' || u == '.'))
            return false;
    }
    return true;
}

/* Opens rel under checks/ without following any symbolic link and without
 * "..", so nothing outside checks/ is reached (fs_open_beneath). Returns an fd
 * the caller reads with fs_read_fd and closes, or -1 with a reason in why. */
static int S_checks_open(sandbox *sb, const char *rel, const char **why)
{
    if (!S_safe_relpath(rel)) {
        *why = "not a plain relative path under checks/ (no \"..\", no absolute paths, no dotfiles)";
        return -1;
    }
    if (sb->checks_fd < 0) {
        *why = "there is no checks/ folder";
        return -1;
    }
    int fd = fs_open_beneath(sb->checks_fd, rel, O_RDONLY);
    if (fd < 0)
        *why = errno == ENOENT                    ? "no such file under checks/"
               : errno == ELOOP || errno == EXDEV ? "a symbolic link (nothing under checks/ is read through one): refused"
                                                  : "cannot be resolved";
    return fd;
}

static void S_note_input(sandbox *sb, const char *rel)
{
    /* a short list: avoid duplicates with a linear scan */
    const char *p = buf_cstr(&sb->inputs), *end = p + sb->inputs.len;
    while (p < end) {
        if (strcmp(p, rel) == 0)
            return;
        p += strlen(p) + 1;
    }
    buf_puts(&sb->inputs, rel);
    buf_putc(&sb->inputs, '\0');
}

static int S_module_newindex(lua_State *L)
{
    const char *mod = lua_tostring(L, lua_upvalueindex(1));
    const char *key = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?";
    return luaL_error(L, "module \"%s\" is read-only: cannot set %s.%s", mod, mod, key);
}

static int S_module_len(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)luaL_len(L, lua_upvalueindex(1)));
    return 1;
}

static int S_module_pairs(lua_State *L)
{
    lua_getglobal(L, "next"); /* the real next: the proxy itself is empty */
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushnil(L);
    return 3;
}

/* Pushes the metatable of read-only views of the table at mod. A view is an
 * empty table with this metatable; each page gets views of its own, so not
 * even rawset on one reaches another page. */
static void S_push_view_meta(lua_State *L, int mod, const char *name)
{
    mod = lua_absindex(L, mod);
    lua_createtable(L, 0, 5);
    lua_pushvalue(L, mod);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, name);
    lua_pushcclosure(L, S_module_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, mod);
    lua_pushcclosure(L, S_module_len, 1);
    lua_setfield(L, -2, "__len");
    lua_pushvalue(L, mod);
    lua_pushcclosure(L, S_module_pairs, 1);
    lua_setfield(L, -2, "__pairs");
    lua_pushliteral(L, "locked");
    lua_setfield(L, -2, "__metatable");
}

/* Replaces the module table on top of the stack by a read-only view of it. */
static void S_read_only(lua_State *L, const char *name)
{
    int mod = lua_gettop(L);
    lua_newtable(L);
    S_push_view_meta(L, mod, name);
    lua_setmetatable(L, -2);
    lua_remove(L, mod);
}

static int S_require(lua_State *L)
{
    sandbox *sb = S_sb(L);
    const char *name = luaL_checkstring(L, 1);
    size_t n = strlen(name);
    bool ok = n > 0 && n <= 64 && name[0] >= 'a' && name[0] <= 'z';
    for (size_t i = 0; ok && i < n; i++)
        ok = (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') ||
             name[i] == '_';
    if (!ok)
        return luaL_error(L, "require \"%s\": module names are lower-case letters, digits and _ "
                             "(a file checks/NAME.lua)", name);
    /* noted before it is read: a page that probes for a missing module
     * depends on its absence */
    char *input = xasprintf("checks/%s.lua", name);
    S_note_input(sb, input);
    free(input);
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->loaded_ref);
    int loaded = lua_gettop(L);
    int t = lua_getfield(L, loaded, name);
    if (t == LUA_TLIGHTUSERDATA)
        return luaL_error(L, "require \"%s\": circular require", name);
    if (t != LUA_TNIL)
        return 1;
    lua_pop(L, 1);
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->modules_ref);
    int modules = lua_gettop(L);
    if (lua_getfield(L, modules, name) != LUA_TFUNCTION) {
        lua_pop(L, 1);
        char *rel = xasprintf("%s.lua", name);
        const char *why = NULL;
        int fd = S_checks_open(sb, rel, &why);
        free(rel);
        if (fd < 0)
            return luaL_error(L, "require \"%s\": checks/%s.lua: %s", name, name, why);
        buf text = BUF_INIT;
        int rc = fs_read_fd(fd, sb->o.data_bytes, &text);
        close(fd);
        if (rc != FS_OK) {
            const char *e = fs_strerror(rc, sb->o.data_bytes);
            buf_free(&text);
            return luaL_error(L, "require \"%s\": cannot read checks/%s.lua: %s", name, name, e);
        }
        char chunk[96];
        snprintf(chunk, sizeof chunk, "@checks/%s.lua", name);
        int status = luaL_loadbufferx(L, buf_cstr(&text), text.len, chunk, "t");
        buf_free(&text);
        if (status != LUA_OK)
            return lua_error(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, modules, name);
    }
    /* a fresh instance for this page: the chunk runs with the page's environment */
    S_push_env(sb);
    lua_setupvalue(L, -2, 1);
    lua_pushlightuserdata(L, sb); /* marks "loading" to catch cycles */
    lua_setfield(L, loaded, name);
    lua_pushstring(L, name);
    if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        lua_pushnil(L); /* a module that failed can be required again */
        lua_setfield(L, loaded, name);
        return lua_error(L);
    }
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_pushboolean(L, 1);
    }
    if (lua_istable(L, -1))
        S_read_only(L, name);
    lua_pushvalue(L, -1);
    lua_setfield(L, loaded, name);
    return 1;
}

static const char *S_ext(const char *path)
{
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    return dot && (!slash || dot > slash) ? dot + 1 : "";
}

static int S_data(lua_State *L)
{
    sandbox *sb = S_sb(L);
    const char *rel = luaL_checkstring(L, 1);
    if (!S_safe_relpath(rel))
        return luaL_error(L, "data \"%s\": not a plain relative path under checks/ (no \"..\", "
                             "no absolute paths, no dotfiles)", rel);
    const char *ext = S_ext(rel);
    enum { D_YAML, D_JSON, D_CSV, D_TEXT } kind;
    if (!strcmp(ext, "yaml") || !strcmp(ext, "yml"))
        kind = D_YAML;
    else if (!strcmp(ext, "json"))
        kind = D_JSON;
    else if (!strcmp(ext, "csv"))
        kind = D_CSV;
    else if (!strcmp(ext, "txt") || !strcmp(ext, "log") || !strcmp(ext, "md"))
        kind = D_TEXT;
    else
        return luaL_error(L, "data \"%s\": unknown kind of file (.yaml, .yml, .json, .csv, .txt, "
                             ".log or .md)", rel);
    char *input = xasprintf("checks/%s", rel);
    S_note_input(sb, input); /* before reading: its absence counts too */
    free(input);
    data_entry *e = strmap_get(&sb->data_cache, rel);
    if (!e) {
        const char *why = NULL;
        int fd = S_checks_open(sb, rel, &why);
        if (fd < 0)
            return luaL_error(L, "data \"%s\": %s", rel, why);
        buf text = BUF_INIT;
        int rc = fs_read_fd(fd, sb->o.data_bytes, &text);
        close(fd);
        if (rc != FS_OK) {
            char msg[200];
            snprintf(msg, sizeof msg, "data \"%s\": cannot read: %s", rel,
                     fs_strerror(rc, sb->o.data_bytes));
            buf_free(&text);
            return luaL_error(L, "%s", msg);
        }
        char *shown = xasprintf("checks/%s", rel);
        diag_list dl;
        diag_list_init(&dl);
        yv_limits lim = yv_default_limits;
        lim.max_bytes = sb->o.data_bytes;
        lim.max_depth = sb->o.depth;
        data_entry ent = {0};
        if (kind == D_TEXT) {
            ent.len = text.len;
            ent.text = buf_detach(&text);
        } else {
            ent.tree = kind == D_YAML  ? yv_parse_yaml(buf_cstr(&text), text.len, &lim, shown, 0, &dl)
                       : kind == D_JSON ? yv_parse_json(buf_cstr(&text), text.len, &lim, shown, &dl)
                                        : yv_parse_csv(buf_cstr(&text), text.len, &lim, shown, &dl);
        }
        buf_free(&text);
        if (kind != D_TEXT && !ent.tree) {
            char msg[400];
            const diag *d = dl.n ? &dl.v[0] : NULL;
            snprintf(msg, sizeof msg, "data \"%s\": %s:%d:%d: %s", rel, shown, d ? d->line : 0,
                     d ? d->col : 0, d ? d->msg : "cannot parse");
            diag_list_free(&dl);
            free(shown);
            return luaL_error(L, "%s", msg);
        }
        diag_list_free(&dl);
        free(shown);
        e = xmalloc(sizeof *e);
        *e = ent;
        strmap_put(&sb->data_cache, rel, e);
    }
    if (e->text) {
        lua_pushlstring(L, e->text, e->len);
        return 1;
    }
    if (luadata_push(L, e->tree) != 0)
        return lua_error(L); /* the message luadata pushed */
    return 1;
}

static void S_provenance_field(lua_State *L, buf *b, const char *key)
{
    if (lua_getfield(L, 1, key) != LUA_TNIL) {
        if (b->len)
            buf_puts(b, "; ");
        buf_printf(b, "%s: ", key);
        sandbox_tostring(L, -1, b);
    }
    lua_pop(L, 1);
}

/* kvsite.measured(provenance): the figure being evaluated read a measurement. */
static int S_measured(lua_State *L)
{
    sandbox *sb = S_sb(L);
    buf b = BUF_INIT;
    if (lua_type(L, 1) == LUA_TTABLE) {
        static const char *keys[] = {"source", "machine", "engine", "build", "model",
                                     "command", "date", "file"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            S_provenance_field(L, &b, keys[i]);
    } else if (lua_type(L, 1) == LUA_TSTRING) {
        sandbox_tostring(L, 1, &b);
    } else {
        buf_free(&b);
        return luaL_error(L, "kvsite.measured: provenance must be a table or a string");
    }
    if (b.len > 2000)
        buf_truncate(&b, 2000);
    /* several measurements in one figure: keep them all */
    if (sb->measured && sb->provenance.len && b.len &&
        !strstr(buf_cstr(&sb->provenance), buf_cstr(&b))) {
        buf_puts(&sb->provenance, " | ");
        buf_put(&sb->provenance, b.ptr, b.len);
    } else if (!sb->measured) {
        buf_clear(&sb->provenance);
        buf_put(&sb->provenance, buf_cstr(&b), b.len);
    }
    sb->measured = true;
    buf_free(&b);
    return 0;
}

/* kvsite.unit(name, scale, kind): a unit the page's quotes may use. */
static int S_unit(lua_State *L)
{
    sandbox *sb = S_sb(L);
    const char *name = luaL_checkstring(L, 1);
    double scale = luaL_checknumber(L, 2);
    const char *kind = luaL_checkstring(L, 3);
    buf err = BUF_INIT;
    if (quote_units_define(sb->units, name, scale, kind, &err) != 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "kvsite.unit: %s", buf_cstr(&err));
        buf_free(&err);
        return luaL_error(L, "%s", msg);
    }
    buf_free(&err);
    return 0;
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
static void S_flatten(lua_State *L)
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
    for (size_t i = 0; i < NAME_SLOTS; i++) {
        lua_pushboolean(L, 0);
        sb->names[i].ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
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
            S_push_view_meta(L, -1, base_names[i]);
            lua_setfield(L, libs, base_names[i]);
            lua_pop(L, 1);
        } else {
            lua_setfield(L, proto, base_names[i]);
        }
    }
    lua_pushvalue(L, libs);
    S_flatten(L);
    sb->libs_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 1);
    lua_getglobal(L, "setmetatable");
    lua_pushcclosure(L, S_setmetatable, 1);
    lua_setfield(L, proto, "setmetatable");
    lua_getglobal(L, "xpcall");
    lua_pushcclosure(L, S_xpcall, 1);
    lua_setfield(L, proto, "xpcall");
    lua_pushcfunction(L, S_load);
    lua_setfield(L, proto, "load");
    lua_pushcfunction(L, S_print);
    lua_setfield(L, proto, "print");
    lua_pushcfunction(L, S_require);
    lua_setfield(L, proto, "require");
    lua_pushcfunction(L, S_data);
    lua_setfield(L, proto, "data");
    S_flatten(L);
    sb->proto_ref = luaL_ref(L, LUA_REGISTRYINDEX);
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

sandbox *sandbox_new(const sandbox_opts *o)
{
    sandbox *sb = xcalloc(1, sizeof *sb);
    sb->o = *o;
    sb->root = xstrdup(o->root);
    sb->limit = (size_t)-1;
    sb->env_ref = sb->loaded_ref = sb->exprs_ref = sb->used_ref = LUA_NOREF;
    sb->checks_fd = fs_open_in(o->root, CHECKS_DIR, O_RDONLY | O_DIRECTORY);
    strmap_init(&sb->data_cache);
    sb->names = xcalloc(NAME_SLOTS, sizeof *sb->names);
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
    for (size_t i = 0; i < sb->data_cache.cap; i++) {
        data_entry *e = sb->data_cache.vals ? sb->data_cache.vals[i] : NULL;
        if (sb->data_cache.keys && sb->data_cache.keys[i] && e) {
            yv_free(e->tree);
            free(e->text);
            free(e);
        }
    }
    strmap_free(&sb->data_cache);
    S_exprs_clear(sb);
    free(sb->expr_slots);
    free(sb->names);
    quote_units_free(sb->units);
    buf_free(&sb->provenance);
    buf_free(&sb->inputs);
    free(sb->err_file);
    if (sb->checks_fd >= 0)
        close(sb->checks_fd);
    free(sb->root);
    free(sb);
}

lua_State *sandbox_lua(sandbox *sb) { return sb->L; }
quote_unitset *sandbox_units(sandbox *sb) { return sb->units; }
const buf *sandbox_page_inputs(sandbox *sb) { return &sb->inputs; }
void sandbox_push_env(sandbox *sb) { S_push_env(sb); }

static int S_make_env(lua_State *L)
{
    sandbox *sb = lua_touserdata(L, 1);
    /* sized for the globals, the libraries and what the renderer adds, so
     * filling it never rehashes */
    lua_createtable(L, 0, 64);
    int env = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, sb->proto_ref); /* {k1, v1, ...}: S_flatten */
    lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
    for (lua_Integer i = 1; i < n; i += 2) {
        lua_rawgeti(L, -1, i);
        lua_rawgeti(L, -2, i + 1);
        lua_rawset(L, env);
    }
    lua_pop(L, 1);
    /* fresh read-only views of the libraries: no page can change what
     * another sees, and nothing is copied per page */
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
    lua_newtable(L);
    lua_pushcfunction(L, S_measured);
    lua_setfield(L, -2, "measured");
    lua_pushcfunction(L, S_unit);
    lua_setfield(L, -2, "unit");
    lua_setfield(L, env, "kvsite");
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
    lua_sethook(L, S_hook, LUA_MASKCOUNT, HOOK_STEP);
}

void sandbox_page_end(sandbox *sb)
{
    lua_State *L = sb->L;
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
    sb->env_ref = sb->loaded_ref = LUA_NOREF;
    sb->limit = (size_t)-1;
    sb->page_file = NULL;
    sb->dl = NULL;
    lua_settop(L, 0);
}

bool sandbox_exhausted(const sandbox *sb) { return sb->budget_hit || sb->mem_hit; }

bool sandbox_charge(sandbox *sb, long long instructions)
{
    /* a margin of one hook step: Lua, carrying on, finds the budget spent */
    if (sb->budget_hit || sb->budget_left - instructions < HOOK_STEP)
        return false;
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

static int S_block(sandbox *sb, const char *code, size_t len, sandbox_error *err);

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
    S_push_env(sb);
    lua_setupvalue(L, -2, 1);
    return sandbox_pcall(sb, 0, nres, err);
}

/* ---------- arithmetic without the compiler ---------- */

/* Most figures are arithmetic over numbers and page globals
 * (`per_token*tokens`): a text seen before cost a call into Lua (~1.8k
 * instructions), one that differs from page to page (`2*80*4*256*1024*4`)
 * a compilation (~13k). S_arith evaluates "return EXPR" itself when EXPR is nothing but numerals,
 * names, binary + - * / // % ^, unary minus, parentheses and a top-level
 * comma list. Lua does every conversion (lua_stringtonumber on the numeral
 * as its lexer cuts it) and every operation (lua_arith), on numbers only, so
 * no metamethod runs and values are Lua's bit for bit. Whatever else the text
 * holds, and wherever Lua would raise an error or coerce a string, S_arith
 * gives up and the compiled path runs: Lua then gives its own result. */
#define ARITH_LEN 512   /* longest EXPR handled */
#define ARITH_DEPTH 64  /* operators and parentheses pending at once */
#define ARITH_VALUES 64 /* values of a comma list; with ARITH_DEPTH, well under
                         * the 255 registers past which Lua refuses the text */
#define ARITH_NUM 64    /* longest numeral */
#define ARITH_MEM 65536 /* heap left under the cap, see S_arith */
#define ARITH_OPEN 0xff /* a parenthesis on the operator stack */
#define ARITH_UNM_PRI 12

typedef struct {
    unsigned char op;  /* LUA_OP*, or ARITH_OPEN */
    unsigned char pri; /* right priority: what binds tighter goes first */
} arith_op;

/* Character classes of Lua's lexer (lctype.c, ASCII only: Lua is built
 * without LUA_UCID, so other bytes are no part of a name). */
enum { C_SPACE = 1, C_DIGIT = 2, C_XDIGIT = 4, C_ALPHA = 8 };
static const unsigned char S_ctype[256] = {
    [' '] = C_SPACE, ['\t'] = C_SPACE, ['\n'] = C_SPACE, ['\r'] = C_SPACE, ['\f'] = C_SPACE,
    ['\v'] = C_SPACE, ['0' ... '9'] = C_DIGIT | C_XDIGIT, ['a' ... 'f'] = C_ALPHA | C_XDIGIT,
    ['A' ... 'F'] = C_ALPHA | C_XDIGIT, ['g' ... 'z'] = C_ALPHA, ['G' ... 'Z'] = C_ALPHA,
    ['_'] = C_ALPHA,
};
#define S_IS(c, cls) (S_ctype[(unsigned char)(c)] & (cls))

/* The end of the numeral at p (a digit, or '.' and a digit) as Lua's lexer
 * reads it (read_numeral): digits, points and exponents, and one letter more
 * when a letter touches it, so that Lua would call it malformed. */
static const char *S_numeral_end(const char *p, const char *end)
{
    const char *first = *p == '.' ? p + 1 : p;
    char e1 = 'e', e2 = 'E';
    p = first + 1;
    if (*first == '0' && p < end && (*p == 'x' || *p == 'X')) {
        e1 = 'p';
        e2 = 'P';
        p++;
    }
    while (p < end) {
        if (*p == e1 || *p == e2) {
            p++;
            if (p < end && (*p == '-' || *p == '+'))
                p++;
        } else if (S_IS(*p, C_XDIGIT) || *p == '.') {
            p++;
        } else {
            break;
        }
    }
    if (p < end && S_IS(*p, C_ALPHA))
        p++;
    return p;
}

static bool S_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* Lua's reserved words, by their first letter: called for every name. */
static bool S_lua_keyword(const char *s, size_t n)
{
    switch (s[0]) {
    case 'a': return S_is(s, n, "and");
    case 'b': return S_is(s, n, "break");
    case 'd': return S_is(s, n, "do");
    case 'e': return S_is(s, n, "else") || S_is(s, n, "elseif") || S_is(s, n, "end");
    case 'f': return S_is(s, n, "false") || S_is(s, n, "for") || S_is(s, n, "function");
    case 'g': return S_is(s, n, "goto");
    case 'i': return S_is(s, n, "if") || S_is(s, n, "in");
    case 'l': return S_is(s, n, "local");
    case 'n': return S_is(s, n, "nil") || S_is(s, n, "not");
    case 'o': return S_is(s, n, "or");
    case 'r': return S_is(s, n, "repeat") || S_is(s, n, "return");
    case 't': return S_is(s, n, "then") || S_is(s, n, "true");
    case 'u': return S_is(s, n, "until");
    case 'w': return S_is(s, n, "while");
    default: return false;
    }
}

/* The binary operator at p (*len its length, *left its left priority), or -1. */
static int S_binop(const char *p, const char *end, size_t *len, int *left)
{
    *len = 1;
    switch (*p) {
    case '+': *left = 10; return LUA_OPADD;
    case '-':
        *left = 10;
        return p + 1 < end && p[1] == '-' ? -1 : LUA_OPSUB; /* "--" starts a comment */
    case '*': *left = 11; return LUA_OPMUL;
    case '%': *left = 11; return LUA_OPMOD;
    case '^': *left = 14; return LUA_OPPOW;
    case '/':
        *left = 11;
        if (p + 1 < end && p[1] == '/') {
            *len = 2;
            return LUA_OPIDIV;
        }
        return LUA_OPDIV;
    default: return -1;
    }
}

/* Right priorities (Lua's lparser.c): ^ is right associative. */
static int S_right_pri(int op)
{
    switch (op) {
    case LUA_OPADD:
    case LUA_OPSUB: return 10;
    case LUA_OPPOW: return 13;
    default: return 11;
    }
}

/* Applies op to the value(s) on top; false where Lua would raise an error
 * (integer // or % by zero), nothing done then. */
static bool S_arith_apply(lua_State *L, int op)
{
    if ((op == LUA_OPIDIV || op == LUA_OPMOD) && lua_isinteger(L, -1) && lua_tointeger(L, -1) == 0)
        return false;
    lua_arith(L, op);
    return true;
}

/* Pushes the name s[0..n) (n <= ARITH_NAME) as a Lua string. */
static void S_push_name(sandbox *sb, const char *s, size_t n)
{
    lua_State *L = sb->L;
    name_slot *slot = &sb->names[stamp_key(s, n) & (NAME_SLOTS - 1)];
    if (slot->len == n && memcmp(slot->text, s, n) == 0) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, slot->ref);
        return;
    }
    lua_pushlstring(L, s, n);
    lua_pushvalue(L, -1);
    lua_rawseti(L, LUA_REGISTRYINDEX, slot->ref);
    memcpy(slot->text, s, n);
    slot->len = (unsigned char)n;
}

/* A name a block assigned: read from the overlay before the environment. */
typedef struct {
    const char *name; /* in the block's text */
    size_t len;
    int value; /* stack index of its value */
} block_set;

/* One evaluation by S_arith_list: where its names are read. */
typedef struct {
    sandbox *sb;
    int base;              /* the stack's top before: the environment goes above */
    int env;               /* stack index of the environment, 0 until a name needs it */
    const block_set *sets; /* S_block's assignments so far, oldest first */
    int nsets;
    long long tokens; /* read so far, for the instruction budget */
} arith_ctx;

/* Pushes the number a global name s[0..n) holds: what an assignment earlier
 * in the block gave it, else the environment's. False when it is no name
 * Lua would read as a global, or its value is no number. */
static bool S_arith_name(arith_ctx *cx, const char *s, size_t n)
{
    lua_State *L = cx->sb->L;
    /* _ENV names the environment itself, not a global */
    if (n > ARITH_NAME || S_lua_keyword(s, n) || (n == 4 && memcmp(s, "_ENV", 4) == 0))
        return false;
    for (int i = cx->nsets; i-- > 0;) {
        if (cx->sets[i].len == n && memcmp(cx->sets[i].name, s, n) == 0) {
            lua_pushvalue(L, cx->sets[i].value);
            return lua_type(L, -1) == LUA_TNUMBER;
        }
    }
    if (!cx->env) {
        /* below every value: operators work on the top */
        cx->env = cx->base + 1;
        S_push_env(cx->sb);
        lua_insert(L, cx->env);
        /* with a metatable, __index could answer */
        if (lua_type(L, cx->env) != LUA_TTABLE || lua_getmetatable(L, cx->env))
            return false;
    }
    S_push_name(cx->sb, s, n);
    return lua_rawget(L, cx->env) == LUA_TNUMBER;
}

/* Evaluates the comma list of arithmetic at *pp, pushing its values (*nvals
 * of them; the caller made room for ARITH_VALUES + ARITH_DEPTH + 4). The
 * list ends at the end of the text or, after an operand, at the first token
 * that cannot continue it; *pp is left there, spaces skipped. False (values
 * left on the stack for the caller to drop) when the list is not such
 * arithmetic or Lua would not give a number on it. */
static bool S_arith_list(arith_ctx *cx, const char **pp, const char *end, int *nvals)
{
    lua_State *L = cx->sb->L;
    const char *p = *pp;
    arith_op ops[ARITH_DEPTH];
    int nops = 0;
    *nvals = 0;
    bool operand = true; /* an operand comes next, else an operator */
    for (;;) {
        while (p < end && S_IS(*p, C_SPACE))
            p++;
        cx->tokens++;
        if (operand) {
            if (p == end)
                return false;
            if (*p == '-' || *p == '(') {
                if (nops == ARITH_DEPTH || (*p == '-' && p + 1 < end && p[1] == '-'))
                    return false;
                ops[nops++] = *p == '-' ? (arith_op){LUA_OPUNM, ARITH_UNM_PRI}
                                        : (arith_op){ARITH_OPEN, 0};
                p++;
            } else if (S_IS(*p, C_DIGIT) || (*p == '.' && p + 1 < end && S_IS(p[1], C_DIGIT))) {
                const char *e = S_numeral_end(p, end);
                char num[ARITH_NUM + 1];
                if ((size_t)(e - p) > ARITH_NUM)
                    return false;
                memcpy(num, p, (size_t)(e - p));
                num[e - p] = '\0';
                if (lua_stringtonumber(L, num) == 0)
                    return false;
                p = e;
                operand = false;
            } else if (S_IS(*p, C_ALPHA)) {
                const char *s = p;
                while (p < end && S_IS(*p, C_ALPHA | C_DIGIT))
                    p++;
                if (!S_arith_name(cx, s, (size_t)(p - s)))
                    return false;
                operand = false;
            } else {
                return false;
            }
            continue;
        }
        size_t oplen;
        int left;
        int op = p < end ? S_binop(p, end, &oplen, &left) : -1;
        if (op >= 0) {
            /* what binds tighter than op on its left is complete */
            while (nops > 0 && ops[nops - 1].pri >= left) {
                if (!S_arith_apply(L, ops[--nops].op))
                    return false;
            }
            if (nops == ARITH_DEPTH)
                return false;
            ops[nops++] = (arith_op){(unsigned char)op, (unsigned char)S_right_pri(op)};
            p += oplen;
            operand = true;
            continue;
        }
        while (nops > 0 && ops[nops - 1].op != ARITH_OPEN) {
            if (!S_arith_apply(L, ops[--nops].op))
                return false;
        }
        if (p < end && *p == ')') {
            if (nops == 0)
                return false;
            nops--;
            p++;
            continue;
        }
        if (nops > 0 || *nvals == ARITH_VALUES) /* a parenthesis left open, or too many */
            return false;
        ++*nvals;
        if (p == end || *p != ',')
            break;
        p++;
        operand = true;
    }
    *pp = p;
    return true;
}

/* Evaluates code ("return EXPR") as described above, leaving its values on
 * the stack (*nres of them). False, with the stack as it was, when EXPR is
 * not such arithmetic or Lua would not give a number on it. Nothing here
 * may raise an error outside a pcall: only pushing a name allocates (a
 * short string when it is new, bounded by the text's length), so it runs
 * only with ARITH_MEM of the cap left. */
static bool S_arith(sandbox *sb, const char *code, size_t len, int *nres)
{
    lua_State *L = sb->L;
    if (sb->arith_off || len < 8 || len - 7 > ARITH_LEN || memcmp(code, "return ", 7) != 0)
        return false;
    if (sb->used > sb->limit || sb->limit - sb->used < ARITH_MEM)
        return false;
    const char *p = code + 7, *end = code + len;
    int base = lua_gettop(L);
    /* the environment, the values, the pending operands and two more (for -
     * and S_push_name) */
    if (!lua_checkstack(L, ARITH_VALUES + ARITH_DEPTH + 4))
        return false;
    arith_ctx cx = {sb, base, 0, NULL, 0, 0};
    int nvals;
    /* anything after the list is no part of arithmetic */
    if (!S_arith_list(&cx, &p, end, &nvals) || p != end)
        goto fail;
    /* about what Lua's own instructions would have cost */
    if (!sandbox_charge(sb, cx.tokens))
        goto fail;
    if (cx.env)
        lua_remove(L, cx.env);
    *nres = nvals;
    sb->arith_count++;
    return true;
fail:
    lua_settop(L, base);
    return false;
}

/* ---------- blocks of assignments without the compiler ---------- */

/* Each page's {lua} block sets the model's numbers (`layers, heads = 80, 8`,
 * `per_token = 2 * layers * heads`), and Lua's parser cost ~45k instructions
 * a block. S_block runs a block itself when it is nothing but statements
 * `NAME {, NAME} = EXPR {, EXPR}`, EXPR what S_arith_list evaluates, between
 * spaces, `;` and `--` line comments, with Lua's semantics: every value
 * before any assignment, extra values dropped, missing ones nil, the last
 * name stored first (lparser.c, restassign), each store a rawset into the
 * page's environment (a plain table: no metatable). Statements are
 * evaluated into an overlay on the stack that later ones read first, and
 * the environment changes only once the whole block succeeded: on anything
 * else (another token, a nil or string global, an integer division by zero,
 * a bound) nothing has changed and Lua compiles and runs the block, giving
 * its own result or error. */
#define BLOCK_LEN 4096 /* longest block handled */
#define BLOCK_SETS 128 /* assignments in a block: the overlay */
#define BLOCK_NAMES 32 /* names on one left side */
/* heap left under the cap: at most a new string per name read or stored,
 * under 40 + n bytes for a name of n bytes, which takes n + 1 of the text */
#define BLOCK_MEM (ARITH_MEM + (size_t)BLOCK_LEN * 32)

/* Skips what separates statements: spaces, `;` and line comments. NULL at
 * `--[`, which may open a long comment. */
static const char *S_block_gap(const char *p, const char *end)
{
    for (;;) {
        while (p < end && (S_IS(*p, C_SPACE) || *p == ';'))
            p++;
        if (end - p < 2 || p[0] != '-' || p[1] != '-')
            return p;
        if (end - p >= 3 && p[2] == '[')
            return NULL;
        /* Lua's lexer ends a comment at either newline character */
        while (p < end && *p != '\n' && *p != '\r')
            p++;
    }
}

/* In a pcall: the block's stores (environment, name, value, name, value...),
 * since a store may grow the table past the memory cap. */
static int S_block_commit(lua_State *L)
{
    int top = lua_gettop(L);
    for (int i = 2; i < top; i += 2) {
        lua_pushvalue(L, i);
        lua_pushvalue(L, i + 1);
        lua_rawset(L, 1);
    }
    return 0;
}

/* Runs the block code as described above: 1 when it did, 0 (the stack as
 * it was, nothing changed) when Lua must run it, -1 with *err filled when
 * the stores hit the memory cap. Nothing raises an error outside a pcall:
 * only pushing a name allocates, and it runs only with BLOCK_MEM left. */
static int S_block(sandbox *sb, const char *code, size_t len, sandbox_error *err)
{
    lua_State *L = sb->L;
    if (sb->arith_off || len > BLOCK_LEN)
        return 0;
    if (sb->used > sb->limit || sb->limit - sb->used < BLOCK_MEM)
        return 0;
    /* the environment, the overlay's names and values, one list's
     * evaluation (see S_arith) */
    if (!lua_checkstack(L, 1 + 2 * BLOCK_SETS + ARITH_VALUES + ARITH_DEPTH + 4))
        return 0;
    int base = lua_gettop(L);
    S_push_env(sb);
    if (lua_type(L, -1) != LUA_TTABLE || lua_getmetatable(L, -1))
        goto fail;
    block_set sets[BLOCK_SETS];
    arith_ctx cx = {sb, base, base + 1, sets, 0, 0};
    const char *p = code, *end = code + len;
    for (;;) {
        p = S_block_gap(p, end);
        if (!p)
            goto fail;
        if (p == end)
            break;
        const char *names[BLOCK_NAMES];
        size_t lens[BLOCK_NAMES];
        int nnames = 0;
        for (;;) {
            const char *s = p;
            while (p < end && S_IS(*p, C_ALPHA | C_DIGIT))
                p++;
            size_t n = (size_t)(p - s);
            if (n == 0 || S_IS(*s, C_DIGIT) || n > ARITH_NAME || S_lua_keyword(s, n) ||
                (n == 4 && memcmp(s, "_ENV", 4) == 0) || nnames == BLOCK_NAMES)
                goto fail;
            /* twice on one side: Lua leaves the order of the stores open */
            for (int i = 0; i < nnames; i++) {
                if (lens[i] == n && memcmp(names[i], s, n) == 0)
                    goto fail;
            }
            names[nnames] = s;
            lens[nnames++] = n;
            cx.tokens++;
            while (p < end && S_IS(*p, C_SPACE))
                p++;
            if (p == end || *p != ',')
                break;
            p++;
            while (p < end && S_IS(*p, C_SPACE))
                p++;
        }
        if (p == end || *p != '=' || (p + 1 < end && p[1] == '='))
            goto fail;
        p++;
        int vals = lua_gettop(L) + 1, nvals;
        if (!S_arith_list(&cx, &p, end, &nvals) || cx.nsets + nnames > BLOCK_SETS)
            goto fail;
        /* the overlay gets the stores in Lua's order: the last name first */
        for (int i = nnames; i-- > 0;) {
            S_push_name(sb, names[i], lens[i]);
            if (i < nvals)
                lua_pushvalue(L, vals + i);
            else
                lua_pushnil(L);
        }
        lua_rotate(L, vals, -nvals); /* the values go to the top, then away */
        lua_pop(L, nvals);
        for (int k = 0; k < nnames; k++) {
            int i = nnames - 1 - k;
            sets[cx.nsets++] = (block_set){names[i], lens[i], vals + 2 * k + 1};
        }
    }
    if (!sandbox_charge(sb, cx.tokens))
        goto fail;
    sb->arith_count++;
    lua_pushcfunction(L, S_block_commit);
    lua_insert(L, base + 1);
    int nres;
    return sandbox_pcall(sb, 1 + 2 * cx.nsets, &nres, err) == 0 ? 1 : -1;
fail:
    lua_settop(L, base);
    return 0;
}

void sandbox_set_arith(sandbox *sb, bool on) { sb->arith_off = !on; }
unsigned long sandbox_arith_count(const sandbox *sb) { return sb->arith_count; }

/* In a pcall (sandbox_eval): a used list twice as long, since growing a
 * table can fail at the page's memory cap. The list's entries all sit in
 * its array part, so storing one never allocates. */
static int S_used_grow(lua_State *L)
{
    sandbox *sb = S_sb(L);
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
    S_push_env(sb);
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
