/* luaquote: the C rules that Lua code shares, exposed on the `kvsite` table.
 *
 * The quote rule (quote.c), the unit table (quote.c) and the JSON and CSV
 * readers (yv.c, typed and converted as data() does) have one implementation
 * each; the checks library's expect, units, json and csv modules are thin
 * wrappers over these functions, the way Lua's one numeral reader serves its
 * lexer, VM and API. Fields set on the table:
 *
 *   kvsite.quote_check(value, quote [, tol]) -> true | false, message
 *       The figure rule: `quote {= value}` (approximate when the quote has a
 *       mark, within tol, default the site's figures.tolerance). The message
 *       is the build's own ("quoted 1.00, but value = 1.0050 ...").
 *   kvsite.parse_quote(quote) -> {text, approx, number, decimals, unit, kind,
 *       scale} | nil, message
 *   kvsite.unit_scale(name) -> scale, kind | nil   (built-ins and kvsite.unit())
 *   kvsite.to_unit(value, unit), kvsite.from_unit(x, unit) -> number
 *       base units to the unit and back; an unknown unit raises.
 *   kvsite.json(text [, name [, first_line]]) -> value, lines
 *   kvsite.csv(text [, name [, first_line]]) -> rows, header, lines
 *       As data() reads .json and .csv files (yv.h: typing, nulls, limits):
 *       lines maps every table made from a JSON object or array, and every CSV
 *       row, to its line (first_line is the number of the text's first line,
 *       default 1). CSV text may start with "#" comment lines. A malformed
 *       text raises "name:line:col: message".
 *
 * The functions are made once per Lua state (luaquote_push) and reached from
 * every page's fresh `kvsite` table; they keep no page state and borrow the
 * context below, which the caller owns and keeps alive as long as the state. */
#ifndef KV_LUAQUOTE_H
#define KV_LUAQUOTE_H

#include <lua.h>

#include "quote.h"
#include "yv.h"

typedef struct {
    quote_unitset *(*units)(void *ud); /* the current page's units */
    void *ud;
    double tolerance;                  /* default of approximate quotes */
    yv_limits limits;                  /* for kvsite.json and kvsite.csv */
} luaquote_ctx;

/* Pushes a table {name = function, ...} of the functions above, bound to ctx. */
void luaquote_push(lua_State *L, const luaquote_ctx *ctx);

#endif
