/* url: the rules for URLs that come from pages, templates and data: which
 * ones may become an href or src, and how a fragment names an id.
 *
 * One rule for every place a URL is written into a page: Markdown links and
 * images (markdown.c) and the templates' safe_url helper (render.c). */
#ifndef KV_URL_H
#define KV_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "strmap.h"

typedef enum {
    /* a Markdown link or image: any URL but those that run script or read
     * local files: javascript:, vbscript:, file:, and data: other than a
     * png, gif, jpeg or webp image */
    URL_MARKDOWN,
    /* a value a template writes into href or src (safe_url): only http:,
     * https:, mailto:, and paths, queries and fragments of this site; never
     * a protocol-relative //host */
    URL_TEMPLATE,
} url_policy;

/* True when u may be written as an href or src under policy p. The scheme
 * is read as a browser reads it: leading spaces and C0 controls skipped,
 * tabs and line breaks inside ignored, case ignored. */
bool url_safe(const char *u, url_policy p);

/* What the safe_url helper writes for u: u itself when url_safe(u,
 * URL_TEMPLATE), else URL_UNSAFE_VALUE. */
#define URL_UNSAFE_VALUE "#"
const char *url_or_unsafe(const char *u);

/* The templates' safe_url(s) helper, a Lua C function: s (a string or a
 * number; nil gives "") as url_or_unsafe gives it. */
typedef struct lua_State lua_State;
int url_lua_safe_url(lua_State *L);

/* Decodes the %XX escapes of s[0..n) (URLs in HTML are percent-encoded,
 * heading ids and file names are not). Caller frees. */
char *url_percent_decode(const char *s, size_t n);

/* True when the fragment frag (after '#', as written in a link) names an id
 * of the set ids (keys: the ids): as written, or, as browsers also look it
 * up, with its percent-escapes decoded ("%61-1" names "a-1"). */
bool url_fragment_in(const strmap *ids, const char *frag);
/* The same rule for ids kept elsewhere: has(ctx, id) says whether id is one. */
bool url_fragment_names(const char *frag, bool (*has)(const void *ctx, const char *id),
                        const void *ctx);

#endif
