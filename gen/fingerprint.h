/* fingerprint: stylesheets and scripts also published under a name that
 * says their content, "assets/style.3f9c0a1b2d4e.css" (cache busting, like
 * Hugo's fingerprint): a browser may keep such a file for ever and still
 * never use a stale one, since a new content is a new name.
 *
 * The build fingerprints the assets of templates/assets/ and of the theme's
 * assets/ once, in the parent before the workers start (fingerprints_add);
 * a template asks for the URL with asset_url (helpers.c), which notes the
 * asset's source file as an input of the page, so an incremental build
 * renders every page that links it again when it changes; the copy step
 * (build.c) writes the bytes that were hashed under both names. The plain
 * name stays: templates written before asset_url (a site's own head.html
 * over the theme's) and links from elsewhere keep working. */
#ifndef KV_FINGERPRINT_H
#define KV_FINGERPRINT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "strmap.h"

typedef struct {
    char *site_path; /* "/assets/style.css" */
    char *hashed;    /* "/assets/style.3f9c0a1b2d4e.css" */
    char *input;     /* the file pages that link it depend on, as the build's
                      * input stamp names it: "templates/assets/style.css", or
                      * "theme/assets/theme.css" for the theme's (incremental.c) */
    char *shadow;    /* a theme's asset: the site's file that would replace it
                      * ("templates/assets/theme.css"), an input too, since
                      * its coming changes the pages; NULL for the site's own */
    buf bytes;       /* the content that was hashed: what the copy step writes */
} fingerprint;

/* Everything here is owned by the set (fingerprints_free). */
typedef struct {
    strmap by_path; /* site_path -> fingerprint * */
    fingerprint **v;
    size_t n, cap;
} fingerprints;

void fingerprints_init(fingerprints *f);
void fingerprints_free(fingerprints *f);

/* Whether an asset at this path gets a fingerprinted copy: stylesheets and
 * scripts (.css, .js), the files a page loads on every visit. */
bool fingerprint_wanted(const char *path);
/* path ("/assets/style.css") with the content hash of its bytes before the
 * extension: "/assets/style.3f9c0a1b2d4e.css" (12 hex digits of a 64-bit
 * hash). malloc'ed. */
char *fingerprint_name(const char *path, const void *bytes, size_t len);

/* Adds the asset at site_path (taking bytes over: *bytes is left empty) and
 * returns it; the first of two for one path stays (the site's own assets
 * are added before the theme's). shadow: see fingerprint (may be NULL). */
const fingerprint *fingerprints_add(fingerprints *f, const char *site_path, const char *input,
                                    const char *shadow, buf *bytes);
/* The asset at site_path ("/assets/x.css"), or NULL. */
const fingerprint *fingerprints_get(const fingerprints *f, const char *site_path);

#endif
