/* helpers: the functions every template and page sees besides the sandbox's
 * libraries: markdown_inline(text), url_for(path), format_number(v [, d]),
 * date(d [, fmt]), escape(v) and fmt (string.format).
 *
 * markdown_inline renders with the worker's Markdown setup for the page being
 * rendered (its figures join the page's); url_for resolves content/ paths
 * through the content index. Both read the renderer (render_state.h). */
#ifndef KV_HELPERS_H
#define KV_HELPERS_H

#include <lua.h>

typedef struct renderer renderer;

/* Sets the helpers as fields of the table on top of the stack (a page's
 * environment, whose `string` gives fmt). With r NULL only the helpers that
 * need no renderer (format_number, date, escape, fmt) are set. */
void helpers_open(lua_State *L, renderer *r);

#endif
