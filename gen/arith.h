/* arith: arithmetic without Lua's compiler.
 *
 * Most figures are arithmetic over numbers and page globals (`per_token*tokens`)
 * and most {lua} blocks assign such arithmetic to globals (`layers, heads = 80, 8`).
 * Compiling them cost more than running them, so the sandbox (sandbox.c) hands
 * them here first:
 *
 *   arith_expr   "return EXPR", EXPR numerals, global names, binary + - * / // % ^,
 *                unary minus, parentheses and a top-level comma list;
 *   arith_block  statements `NAME {, NAME} = EXPR {, EXPR}` between spaces, `;`
 *                and `--` line comments.
 *
 * Lua does every conversion (lua_stringtonumber on each numeral as its lexer cuts
 * it) and every operation (lua_arith), on numbers only, so no metamethod runs and
 * values are Lua's bit for bit. On anything else, and wherever Lua would raise an
 * error or coerce a string, these functions give up, with the stack as it was and
 * nothing changed: the caller then lets Lua compile the text, which gives its own
 * result or error. Nothing here raises a Lua error, provided the caller leaves the
 * heap headroom given below (only pushing a name allocates).
 *
 * What is not here: the instruction budget (the caller charges *tokens), the
 * memory cap (the caller checks the headroom), running the stores of a block in
 * a pcall (the caller calls arith_block_store), and counting what was evaluated. */
#ifndef KV_ARITH_H
#define KV_ARITH_H

#include <lua.h>
#include <stdbool.h>
#include <stddef.h>

#define ARITH_LEN 512        /* longest EXPR handled */
#define ARITH_BLOCK_LEN 4096 /* longest block handled */
/* Heap the caller must leave under a memory cap before calling: an expression
 * allocates at most a short string per name, bounded by the text's length; a
 * block at most a new string per name read or stored, under 40 + n bytes for a
 * name of n bytes, which takes n + 1 of the text. */
#define ARITH_EXPR_MEM 65536
#define ARITH_BLOCK_MEM (ARITH_EXPR_MEM + (size_t)ARITH_BLOCK_LEN * 32)

/* The names seen in figures, kept as Lua strings in L's registry. */
typedef struct arith arith;

/* Returns a new evaluator, not yet tied to a Lua state; free it with arith_free
 * (after lua_close of the state it was opened on, or its registry slots stay). */
arith *arith_new(void);
/* Takes the registry slots of the name cache in L. Allocates in Lua: call it
 * once, in a pcall. */
void arith_open(arith *a, lua_State *L);
void arith_free(arith *a);

/* Evaluates code ("return EXPR") with the globals of the table in the registry
 * at env_ref, pushing EXPR's values (*nvals of them). A name is read with
 * rawget: an environment with a metatable (whose __index could answer) or one
 * that is no table makes any name give up. *tokens is the number of tokens read,
 * about what Lua's own instructions would have cost. False, with the stack as it
 * was, when code is not such arithmetic or Lua would not give a number on it. */
bool arith_expr(arith *a, lua_State *L, int env_ref, const char *code, size_t len, int *nvals,
                long long *tokens);

/* Evaluates the block code with Lua's semantics of assignment: every value of a
 * statement before any of its stores, extra values dropped, missing ones nil, the
 * last name stored first (lparser.c, restassign). Later statements read what
 * earlier ones assigned. Changes nothing: true with, above the stack's former top,
 * the environment (from env_ref, a table without a metatable) and *nstores pairs
 * name, value in the order Lua would store them; arith_block_store then makes the
 * stores. False, with the stack as it was, when Lua must run the block (another
 * token, a nil or string global, an integer division by zero, a bound). *tokens
 * as for arith_expr. */
bool arith_block(arith *a, lua_State *L, int env_ref, const char *code, size_t len,
                 int *nstores, long long *tokens);
/* A lua_CFunction: arith_block_store(env, name, value, name, value, ...) rawsets
 * each pair into env in order. Call it in a pcall: a store may grow the table
 * past a memory cap. */
int arith_block_store(lua_State *L);

#endif
