#include "url.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>
#include <lua.h>

#include "buf.h"

/* The scheme of u, lower-cased into out (of size cap), as a browser parses
 * it: leading spaces and C0 controls skipped, tabs and line breaks ignored.
 * Returns its length, 0 when u has no scheme (a path, query or fragment).
 * *rest is set past the ':'. A scheme longer than cap - 1 is returned cut
 * (and then matches none of the known ones). */
static size_t S_scheme(const char *u, char *out, size_t cap, const char **rest)
{
    const unsigned char *p = (const unsigned char *)u;
    while (*p && *p <= 0x20)
        p++;
    size_t n = 0;
    for (;; p++) {
        unsigned char c = *p;
        if (c == '\t' || c == '\n' || c == '\r')
            continue;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        bool later = (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
        if (c == ':' && n > 0) {
            out[n < cap ? n : cap - 1] = '\0';
            *rest = (const char *)p + 1;
            return n;
        }
        if (!alpha && !(n > 0 && later))
            return 0;
        if (n < cap - 1)
            out[n] = (char)(alpha ? (c | 0x20) : c);
        n++;
    }
}

/* True when u, with no scheme, starts a protocol-relative URL ("//host",
 * and "\\host" or "/\host", which browsers read the same way). */
static bool S_protocol_relative(const char *u)
{
    const unsigned char *p = (const unsigned char *)u;
    while (*p && *p <= 0x20)
        p++;
    int slashes = 0;
    for (; *p && slashes < 2; p++) {
        if (*p == '\t' || *p == '\n' || *p == '\r')
            continue;
        if (*p != '/' && *p != '\\')
            break;
        slashes++;
    }
    return slashes == 2;
}

bool url_safe(const char *u, url_policy p)
{
    char scheme[16];
    const char *rest = NULL;
    size_t n = S_scheme(u, scheme, sizeof scheme, &rest);
    if (n == 0)
        return p == URL_MARKDOWN || !S_protocol_relative(u);
    if (p == URL_TEMPLATE)
        return strcmp(scheme, "http") == 0 || strcmp(scheme, "https") == 0 ||
               strcmp(scheme, "mailto") == 0;
    if (strcmp(scheme, "javascript") == 0 || strcmp(scheme, "vbscript") == 0 ||
        strcmp(scheme, "file") == 0)
        return false;
    if (strcmp(scheme, "data") == 0) {
        static const char *const ok[] = {"image/png", "image/gif", "image/jpeg", "image/webp"};
        for (size_t k = 0; k < 4; k++)
            if (strncasecmp(rest, ok[k], strlen(ok[k])) == 0)
                return true;
        return false;
    }
    return true;
}

const char *url_or_unsafe(const char *u)
{
    return url_safe(u, URL_TEMPLATE) ? u : URL_UNSAFE_VALUE;
}

int url_lua_safe_url(lua_State *L)
{
    if (lua_isnoneornil(L, 1)) {
        lua_pushliteral(L, "");
        return 1;
    }
    const char *u = luaL_checkstring(L, 1);
    if (url_safe(u, URL_TEMPLATE))
        lua_settop(L, 1); /* the string itself, as written */
    else
        lua_pushliteral(L, URL_UNSAFE_VALUE);
    return 1;
}

static int S_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *url_percent_decode(const char *s, size_t n)
{
    if (!memchr(s, '%', n))
        return xstrndup(s, n); /* most URLs have no escapes */
    buf b = BUF_INIT;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && S_hex(s[i + 1]) >= 0 && S_hex(s[i + 2]) >= 0) {
            buf_putc(&b, (char)(S_hex(s[i + 1]) * 16 + S_hex(s[i + 2])));
            i += 2;
        } else {
            buf_putc(&b, s[i]);
        }
    }
    return buf_detach(&b);
}

bool url_fragment_names(const char *frag, bool (*has)(const void *ctx, const char *id),
                        const void *ctx)
{
    if (has(ctx, frag))
        return true;
    if (!strchr(frag, '%'))
        return false;
    char *dec = url_percent_decode(frag, strlen(frag));
    bool found = has(ctx, dec);
    free(dec);
    return found;
}

static bool S_in_strmap(const void *ids, const char *id) { return strmap_get(ids, id) != NULL; }

bool url_fragment_in(const strmap *ids, const char *frag)
{
    return url_fragment_names(frag, S_in_strmap, ids);
}
