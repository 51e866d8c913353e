#include "arith.h"

#include <lauxlib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "stamp.h"

/* ---------- expressions ---------- */

/* Most figures are arithmetic over numbers and page globals
 * (`per_token*tokens`): a text seen before cost a call into Lua (~1.8k
 * instructions), one that differs from page to page (`2*80*4*256*1024*4`)
 * a compilation (~13k). arith_expr evaluates "return EXPR" itself when EXPR
 * is nothing but numerals, names, binary + - * / // % ^, unary minus,
 * parentheses and a top-level comma list (see arith.h). */
#define ARITH_DEPTH 64  /* operators and parentheses pending at once */
#define ARITH_VALUES 64 /* values of a comma list; with ARITH_DEPTH, well under
                         * the 255 registers past which Lua refuses the text */
#define ARITH_NUM 64    /* longest numeral */
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

/* Names in figures, kept as Lua strings: making the string again (hashing
 * it, finding it among Lua's strings) cost more than the rest of the lookup.
 * One slot per hash, the newest name wins; each slot's string sits in the
 * registry under a ref taken by arith_open, so replacing it never allocates. */
#define ARITH_NAME 40 /* longest name: Lua interns names up to this length */
#define NAME_SLOTS 256
typedef struct {
    unsigned char len; /* 0 for a free slot */
    char text[ARITH_NAME];
    int ref;
} name_slot;

struct arith {
    name_slot names[NAME_SLOTS];
};

arith *arith_new(void) { return xcalloc(1, sizeof(arith)); }

void arith_open(arith *a, lua_State *L)
{
    for (size_t i = 0; i < NAME_SLOTS; i++) {
        lua_pushboolean(L, 0);
        a->names[i].ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
}

void arith_free(arith *a) { free(a); }

/* Pushes the name s[0..n) (n <= ARITH_NAME) as a Lua string. */
static void S_push_name(arith *a, lua_State *L, const char *s, size_t n)
{
    name_slot *slot = &a->names[stamp_key(s, n) & (NAME_SLOTS - 1)];
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
    arith *a;
    lua_State *L;
    int env_ref;           /* the environment in the registry */
    int base;              /* the stack's top before: the environment goes above */
    int env;               /* stack index of the environment, 0 until a name needs it */
    const block_set *sets; /* arith_block's assignments so far, oldest first */
    int nsets;
    long long tokens; /* read so far, for the instruction budget */
} arith_ctx;

/* Pushes the number a global name s[0..n) holds: what an assignment earlier
 * in the block gave it, else the environment's. False when it is no name
 * Lua would read as a global, or its value is no number. */
static bool S_arith_name(arith_ctx *cx, const char *s, size_t n)
{
    lua_State *L = cx->L;
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
        lua_rawgeti(L, LUA_REGISTRYINDEX, cx->env_ref);
        lua_insert(L, cx->env);
        /* with a metatable, __index could answer */
        if (lua_type(L, cx->env) != LUA_TTABLE || lua_getmetatable(L, cx->env))
            return false;
    }
    S_push_name(cx->a, L, s, n);
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
    lua_State *L = cx->L;
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

/* Nothing here may raise an error outside a pcall: only pushing a name
 * allocates (a short string when it is new, bounded by the text's length),
 * and the caller leaves ARITH_EXPR_MEM of the heap for it. */
bool arith_expr(arith *a, lua_State *L, int env_ref, const char *code, size_t len, int *nvals,
                long long *tokens)
{
    if (len < 8 || len - 7 > ARITH_LEN || memcmp(code, "return ", 7) != 0)
        return false;
    const char *p = code + 7, *end = code + len;
    int base = lua_gettop(L);
    /* the environment, the values, the pending operands and two more (for -
     * and S_push_name) */
    if (!lua_checkstack(L, ARITH_VALUES + ARITH_DEPTH + 4))
        return false;
    arith_ctx cx = {a, L, env_ref, base, 0, NULL, 0, 0};
    /* anything after the list is no part of arithmetic */
    if (!S_arith_list(&cx, &p, end, nvals) || p != end) {
        lua_settop(L, base);
        return false;
    }
    if (cx.env)
        lua_remove(L, cx.env);
    *tokens = cx.tokens;
    return true;
}

/* ---------- blocks of assignments ---------- */

/* Each page's {lua} block sets the model's numbers (`layers, heads = 80, 8`,
 * `per_token = 2 * layers * heads`), and Lua's parser cost ~45k instructions
 * a block. arith_block evaluates a block itself when it is nothing but statements
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
#define BLOCK_SETS 128 /* assignments in a block: the overlay */
#define BLOCK_NAMES 32 /* names on one left side */

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
int arith_block_store(lua_State *L)
{
    int top = lua_gettop(L);
    for (int i = 2; i < top; i += 2) {
        lua_pushvalue(L, i);
        lua_pushvalue(L, i + 1);
        lua_rawset(L, 1);
    }
    return 0;
}

/* Evaluates the block code as described above (see arith.h for what it
 * leaves). Nothing raises an error outside a pcall: only pushing a name
 * allocates, and the caller leaves ARITH_BLOCK_MEM of the heap for it. */
bool arith_block(arith *a, lua_State *L, int env_ref, const char *code, size_t len,
                 int *nstores, long long *tokens)
{
    if (len > ARITH_BLOCK_LEN)
        return false;
    /* the environment, the overlay's names and values, one list's
     * evaluation (see arith_expr) */
    if (!lua_checkstack(L, 1 + 2 * BLOCK_SETS + ARITH_VALUES + ARITH_DEPTH + 4))
        return false;
    int base = lua_gettop(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, env_ref);
    if (lua_type(L, -1) != LUA_TTABLE || lua_getmetatable(L, -1))
        goto fail;
    block_set sets[BLOCK_SETS];
    arith_ctx cx = {a, L, env_ref, base, base + 1, sets, 0, 0};
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
            S_push_name(a, L, names[i], lens[i]);
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
    *nstores = cx.nsets;
    *tokens = cx.tokens;
    return true;
fail:
    lua_settop(L, base);
    return false;
}
