/* reload: what `kvsite serve` adds to the HTML pages it serves, never to the
 * output on disk: a few lines of script that listen to the server's events
 * (Server-Sent Events at RELOAD_EVENTS) and reload the page, keeping its
 * scroll position, when a rebuild finished; and, when the last rebuild
 * failed, an overlay with its diagnostics as the terminal printed them
 * (diag_print's text: path:line:col: error: ..., with the hints). */
#ifndef KV_RELOAD_H
#define KV_RELOAD_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* The event stream's path; outside any base path, and no output file can
 * have it (the output's own names never start with "__kvsite"). */
#define RELOAD_EVENTS "/__kvsite/events"

/* Appends to out the page html (len bytes) with the script (generation: the
 * build the page belongs to; the script reloads when the server announces
 * another) and, when diags is not NULL, the overlay listing them, put before
 * the page's last </body> (or at its end when it has none). */
void reload_inject(const char *html, size_t len, uint64_t generation, const char *diags,
                   buf *out);

/* One event of the stream: "data: <generation>\n\n". */
void reload_event(uint64_t generation, buf *out);

#endif
