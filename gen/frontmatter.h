/* frontmatter: a page's YAML front matter (libyaml through yv), its keys and
 * their types, and the slips a writer makes in them.
 *
 * fm_parse_page fills the fields of a page that its front matter sets
 * (title, dates, summary, slug, template, tags, draft, weight, params and the
 * body's position); the page owns what it gets (content.h: page). Errors go
 * to dl at file:line:col. */
#ifndef KV_FRONTMATTER_H
#define KV_FRONTMATTER_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "content.h"
#include "diag.h"

/* Splits a page's text into front matter and body and reads the front
 * matter into p. Returns 0, or -1 with errors in dl. */
int fm_parse_page(page *p, const char *text, size_t len, const config *cfg, diag_list *dl);

/* Front matter keys: whether kvsite reads key itself (title, date, ...,
 * params:, and page_template: in a section's _index.md); any other key is
 * for templates, as page.params.<key>. fm_key_hint names the known key
 * that key looks like a slip of ("darft": "draft"), or NULL. */
bool fm_key_known(const page *p, const char *key);
/* Frees what fm_parse_page set in p (not p, nor its path fields) and clears it. */
void fm_page_clear(page *p);
/* Moves what fm_parse_page set in from (the same fields) to to, whose own
 * are empty; from is left as fm_page_clear leaves it. */
void fm_page_move(page *to, page *from);
const char *fm_key_hint(const page *p, const char *key);

#endif
