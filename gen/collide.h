/* collide: every file a build publishes has one producer, and what content/
 * may publish at all. Checked when the build is planned, before anything
 * renders.
 *
 * The producers: kvsite's generated pages (jobs.c's table: the tag index and
 * the tag pages, the sources page, the checks report, its section pages and
 * checks.json, 404.html; and the section and home pages that have no file),
 * the feed and the sitemap, templates/assets/ copied to assets/, the pages of
 * the content index and the other files of content/, copied as they are. Two
 * producers of one output file are an error naming both, at the one claimed
 * later in that order (a page, not the checks report it would replace); so
 * are two files whose paths differ only in ASCII letter case or Unicode
 * normalisation (one file on macOS and Windows), and a file where another
 * producer needs a folder. Page against page is content_load's, which uses
 * collide_fold and collide_how too.
 *
 * Names: a file or folder name beneath content/ or templates/assets/ that is
 * not UTF-8 or holds a control character is refused (collide_name_ok): it
 * would be written into URLs, the sitemap and the feed.
 *
 * Active files: a file of content/ that a browser runs script from when it
 * is opened (.html, .htm, .shtml, .xhtml, .xht, .xml, .xsl, .xslt, .svg,
 * .svgz, .js, .mjs, .cjs, in any letter case) runs that script in the site's
 * origin; it is refused unless a pattern of site.yaml's content.allow_active
 * names it (fnmatch with FNM_PATHNAME, relative to content/, so a star stays
 * within one folder: "logo.svg", "demos/" then star ".html"). */
#ifndef KV_COLLIDE_H
#define KV_COLLIDE_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "diag.h"
#include "render.h"

/* False (and an error at shown) when name, one file or folder name, is not
 * well-formed UTF-8 or holds a control character (C0, DEL, C1). */
bool collide_name_ok(const char *shown, const char *name, diag_list *dl);

/* The key under which two output paths are one file on a file system that
 * ignores letter case (ASCII) and Unicode normalisation. The caller frees it. */
char *collide_fold(const char *path);
/* How two paths with one collide_fold key differ: "letter case", "Unicode
 * normalisation (NFC/NFD)" or both, and where that makes them collide. Static. */
const char *collide_how(const char *a, const char *b);

/* True when the file (a path relative to content/) is active: see above. */
bool collide_active(const char *rel);
/* True when site.yaml's content.allow_active names the file. */
bool collide_allowed(const config *cfg, const char *rel);

/* The files of templates/assets/, paths relative to it ("css/site.css"), in
 * the order they are copied. The list owns its strings. */
typedef struct {
    char **v;
    size_t n;
} collide_files;

/* Lists templates/assets/ beneath root: folders opened and files checked
 * without following symbolic links (a link is an error, and not copied),
 * dotfiles skipped, at most limits.files files and limits.depth levels. */
void collide_list_assets(const char *root, const config *cfg, collide_files *out,
                         diag_list *dl);
void collide_files_free(collide_files *f);

/* Claims every output file of the build planned in e (its jobs, its content
 * index's files, the feed, the sitemap, assets): every collision, and every
 * active file content.allow_active does not allow, is an error in dl.
 * Returns 0 when it added none. */
int collide_check(const render_env *e, const collide_files *assets, diag_list *dl);

#endif
