#include "reload.h"

#include <stdio.h>
#include <string.h>

/* Before a reload the scroll position goes to sessionStorage, per path; the
 * reloaded page takes it back once laid out. */
static const char S_script[] =
    "<script>/* kvsite serve: live reload */(function(){"
    "var k='kvsite-scroll:'+location.pathname,y=sessionStorage.getItem(k),g='%llu';"
    "if(y!==null){sessionStorage.removeItem(k);"
    "addEventListener('load',function(){scrollTo(0,+y);});}"
    "var s=new EventSource('" RELOAD_EVENTS "');"
    "s.onmessage=function(e){if(e.data!==g){s.close();"
    "sessionStorage.setItem(k,String(scrollY));location.reload();}};"
    "})();</script>\n";

static const char S_overlay_head[] =
    "<div id=\"kvsite-overlay\" role=\"alert\" style=\"position:fixed;inset:0;z-index:2147483647;"
    "overflow:auto;margin:0;padding:1.5em;background:rgba(30,0,0,.94);color:#fff;"
    "font:14px/1.5 ui-monospace,monospace\">"
    "<p style=\"margin:0 0 1em;font-weight:bold\">kvsite: the last rebuild failed; this is the "
    "last good build. Fix the file and save: the page reloads. "
    "<button type=\"button\" onclick=\"this.closest('#kvsite-overlay').remove()\">hide</button>"
    "</p><pre style=\"margin:0;white-space:pre-wrap\">";
static const char S_overlay_tail[] = "</pre></div>\n";

static void S_escape(buf *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': buf_puts(out, "&amp;"); break;
        case '<': buf_puts(out, "&lt;"); break;
        case '>': buf_puts(out, "&gt;"); break;
        case '"': buf_puts(out, "&quot;"); break;
        default: buf_putc(out, *s);
        }
    }
}

/* The offset of the last "</body" (any case) in html, or len. */
static size_t S_body_end(const char *html, size_t len)
{
    static const char tag[] = "</body";
    size_t k = sizeof tag - 1;
    for (size_t i = len >= k ? len - k + 1 : 0; i-- > 0;)
        if (html[i] == '<' && strncasecmp(html + i, tag, k) == 0)
            return i;
    return len;
}

void reload_inject(const char *html, size_t len, uint64_t generation, const char *diags,
                   buf *out)
{
    size_t at = S_body_end(html, len);
    buf_put(out, html, at);
    if (diags) {
        buf_puts(out, S_overlay_head);
        S_escape(out, diags);
        buf_puts(out, S_overlay_tail);
    }
    char script[sizeof S_script + 32];
    snprintf(script, sizeof script, S_script, (unsigned long long)generation);
    buf_puts(out, script);
    buf_put(out, html + at, len - at);
}

void reload_event(uint64_t generation, buf *out)
{
    char line[48];
    snprintf(line, sizeof line, "data: %llu\n\n", (unsigned long long)generation);
    buf_puts(out, line);
}
