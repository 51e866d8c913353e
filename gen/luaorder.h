/* luaorder: `next` and `pairs` that visit a table's keys in the same order in
 * every build.
 *
 * Lua 5.4 seeds its string hash from the clock and from addresses when a state
 * starts, so the order in which the stock `next` visits string keys changes
 * from one run to the next, and a page that concatenates a table in `pairs`
 * order would publish different bytes each time. The sandbox gives pages and
 * templates these functions instead (DESIGN.md: builds are byte-identical).
 *
 * The order: numbers first, ascending (integers and floats compared as
 * numbers); then strings by their bytes (memcmp, never the locale); then
 * false before true; then every other key (tables, functions, userdata: keys
 * whose only identity is an address) in Lua's own order, which no build can
 * make stable.
 *
 * A traversal (next(t, nil) onwards) works on a snapshot of the keys taken
 * when it starts, kept in a weak table so it dies with t: assigning to or
 * clearing existing fields during the traversal is allowed, as in Lua; keys
 * cleared before they are reached are skipped; a key added during the
 * traversal is not visited (Lua leaves that undefined). next(t, k) with a key
 * the snapshot lacks rebuilds it; a key t does not hold raises Lua's own
 * "invalid key to 'next'" error. Sorting costs O(n log n) per traversal and
 * allocates through Lua, so a page's memory cap applies. */
#ifndef KV_LUAORDER_H
#define KV_LUAORDER_H

#include <lua.h>

/* Pushes two functions: the ordered `next`, then an ordered `pairs` that
 * honours __pairs like Lua's and otherwise returns that next, t, nil. Each
 * call makes a new pair with its own snapshot table (one per Lua state is
 * enough: pages and templates can share them, as they hold no page data
 * beyond traversals that are under way). */
void luaorder_push(lua_State *L);

#endif
