/* luadata: a yv tree as fresh Lua values, for `data "measurements/x.yaml"`.
 *
 * Mapping:
 *   YV_MAP    -> a new table with string keys (no metatable)
 *   YV_SEQ    -> a new table with items at 1..n
 *   YV_INT    -> an integer; YV_FLOAT -> a float; YV_BOOL -> a boolean;
 *   YV_STRING -> a string
 *   YV_NULL   -> in a map: the key is left out (row.x == nil reads naturally,
 *                and arithmetic on it fails with Lua's own clear message);
 *                in a list: the null sentinel (luadata_push_null), so a null
 *                never makes a hole that breaks # or ipairs;
 *                at the root: nil.
 *
 * Nothing pushed refers back to the tree: the caller may yv_free it at once.
 * The conversion runs inside lua_pcall and keeps no C allocations, so a Lua
 * memory error (e.g. a per-page memory cap) is returned, never longjmp'd
 * through C that owns memory. It walks the tree with an explicit stack and
 * refuses trees deeper than LUADATA_MAX_DEPTH (parsers cap depth far lower). */
#ifndef KV_LUADATA_H
#define KV_LUADATA_H

#include <lua.h>

#include "yv.h"

#define LUADATA_MAX_DEPTH 200

/* Pushes one value for v (see above). Returns 0, or -1 with an error message
 * string pushed instead ("not enough memory", "data nested deeper than 200
 * levels"). Either way exactly one value is pushed. Like any push it needs
 * free stack slots: 2, which a fresh state and every C function have. */
int luadata_push(lua_State *L, const yv *v);

/* The same, and when lines is a stack index (not 0) of a table, sets
 * lines[t] = line + line_offset for every table t made from a map or a list:
 * where each object, array or CSV row starts, for messages. */
int luadata_push_lines(lua_State *L, const yv *v, int lines, int line_offset);

/* Pushes the null sentinel that stands for a null inside a list: the light
 * userdata NULL, the same value in every state, so Lua code can compare with
 * it once the environment exposes it (e.g. as data.null). */
void luadata_push_null(lua_State *L);

#endif
