/* hostlib: the host functions a page's Lua is given, and the read-only views
 * of tables it may read but not change. Internal to the sandbox: sandbox.c
 * builds page environments with these (see sandbox.h for what a page may use).
 *
 *   print                   a note (DIAG_NOTE) at the calling line, 200 a page
 *   load                    text chunks only, in the page's environment by default
 *   setmetatable            refuses __gc
 *   xpcall                  a handler cannot outlive a spent budget
 *   require "NAME"          checks/NAME.lua, one instance per page, read-only
 *   data "PATH"             checks/PATH: YAML, JSON, CSV as tables, text as is
 *   kvsite.measured, kvsite.unit
 *
 * Their state lives in struct sandbox (sandbox_internal.h), in the group marked
 * hostlib.c: what pages read under checks/, the figure's provenance, the units. */
#ifndef KV_HOSTLIB_H
#define KV_HOSTLIB_H

#include "sandbox_internal.h"

/* Sets the host functions of the base library on the prototype of page
 * environments (the table at index proto): setmetatable and xpcall wrapping the
 * real ones (read from the globals), load, print, require, data. */
void hostlib_fill_proto(lua_State *L, int proto);

/* Makes the kvsite table's functions, once per Lua state (in sandbox.c's
 * set-up, in a pcall), and keeps them at sb->kvsite_ref. The one place that
 * says what kvsite holds: a module adding kvsite.* functions adds them here. */
void hostlib_open_kvsite(sandbox *sb, lua_State *L);
/* Pushes a page's own kvsite table holding those functions. */
void hostlib_push_kvsite(sandbox *sb, lua_State *L);

/* Pushes the metatable of read-only views of the table at index mod, named name
 * in error messages. A view is an empty table with this metatable; each page
 * gets views of its own, so not even rawset on one reaches another page. Used
 * for the libraries (sandbox.c) and for modules (require). */
void hostlib_push_view_meta(lua_State *L, int mod, const char *name);

/* Frees what data() keeps for the worker (its cache of parsed files). */
void hostlib_free(sandbox *sb);

#endif
