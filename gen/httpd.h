/* httpd: the HTTP side of `kvsite serve`, on libmicrohttpd (one thread per
 * connection: the event streams wait in theirs).
 *
 * It serves the output folder under the site's base path: index.html for a
 * folder (a folder's URL without its final '/' is redirected to it), the
 * site's 404.html with status 404 for what is not there, GET and HEAD. Every
 * request opens the output folder once and the file beneath that handle with
 * fs_open_beneath: no symbolic link is followed and no "." or ".." segment is
 * taken (403), so nothing outside the output is ever served, and a request
 * sees one output folder, the old or the new, when a rebuild swaps it.
 * HTML responses get reload.h's script (and overlay); the files on disk do
 * not.
 *
 * The state is shared with the thread that rebuilds: httpd_publish changes
 * it under the lock and wakes the event streams. Everything in an httpd is
 * owned by it (httpd_stop frees it). */
#ifndef KV_HTTPD_H
#define KV_HTTPD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct httpd httpd;

/* What a request path is, under the base path ("" or "/docs"). */
enum { HTTPD_OK = 0, HTTPD_NOT_FOUND = 1, HTTPD_FORBIDDEN = 2 };
/* path: the request's path, already %-decoded (libmicrohttpd does it). On
 * HTTPD_OK, *rel is the file or folder relative to the output ("" for its
 * top, "a/b/" for a folder named with its final '/', "a/b.css"), malloc'ed.
 * HTTPD_NOT_FOUND: outside the base path; HTTPD_FORBIDDEN: a "." or ".."
 * segment, a backslash, a control character. */
int httpd_resolve(const char *path, const char *base, char **rel);

/* The Content-Type of a file, by its name's extension. */
const char *httpd_mime(const char *name);
/* Whether that type gets the reload script (HTML). */
bool httpd_is_html(const char *mime);

/* Starts serving out_abs (absolute) under base on bind_addr (IPv4 or IPv6
 * literal):port (0: a free one). NULL with a message in err (errsz bytes)
 * when it cannot listen there. */
httpd *httpd_start(const char *out_abs, const char *base, const char *bind_addr, int port,
                   char *err, size_t errsz);
/* The port it listens on. */
int httpd_port(const httpd *h);
/* A build finished: base (the base path now), diags (NULL: it succeeded;
 * else the text its diagnostics were printed as) become what pages show,
 * and every open page is told to reload. */
void httpd_publish(httpd *h, const char *base, const char *diags);
/* Ends the event streams, stops the server, frees it. */
void httpd_stop(httpd *h);

#endif
