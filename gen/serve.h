/* serve: `kvsite serve`, the writing loop. It builds the site (build_run, the
 * same build as `kvsite build`: incremental, published atomically), serves
 * the output over HTTP (httpd.h), watches the project (watch.h) and builds
 * again after a change, and tells open pages to reload; when a build fails
 * the last good site stays served and every page shows its diagnostics
 * (reload.h) as the terminal printed them.
 *
 * Its state is in memory, and in the state folder beside the output
 * (output.h): <out>.serve, locked while it runs and holding its address, so
 * that a second serve of the same output says where the first one is. Nothing
 * of serve's goes into the output: a build after it writes what it would
 * have written without it.
 *
 * SIGINT and SIGTERM stop it cleanly: the build under way finishes (its
 * workers are the pool's, reaped by it), the server stops, the lock goes. */
#ifndef KV_SERVE_H
#define KV_SERVE_H

#define SERVE_DEFAULT_PORT 1313 /* as Hugo's: the port writers already know */

/* kvsite serve's arguments (argv[0] is "serve"): the exit status. */
int serve_main(int argc, char **argv);

#endif
