/* theme: the default theme, a second place to look for templates and assets.
 *
 * Lookup order (like Hugo's): a template name is looked up in the site's
 * templates/ first, then in the theme folder; an asset is copied from the
 * site's templates/assets/ or, when the site has no file of that name there,
 * from the theme's assets/. Which theme a site uses is site.yaml's `theme`:
 *   default   the installed default theme (paths.h)
 *   none      no theme: every template comes from templates/
 *   (absent)  the default theme when the site has no templates/ folder at
 *             all, else none, so a site with its own templates builds as
 *             it always did.
 * The theme folder is installed, not part of a pull request, so it is
 * trusted; its files are still opened without following symbolic links. */
#ifndef KV_THEME_H
#define KV_THEME_H

#include "config.h"
#include "diag.h"

/* Checks site.yaml's theme value; 0, or -1 with an error at its line. */
int theme_check(const config *c, diag_list *dl);

/* The theme folder the site at root uses, or NULL for none (owned by paths.h,
 * lives until exit). */
const char *theme_dir(const config *c, const char *root);

/* Opens the regular file <dir>/<name> (name already checked to be a plain
 * relative path) without following links: an fd the caller closes, or -1
 * with errno (EISDIR for a folder). */
int theme_open(const char *dir, const char *name);

/* Calls copy(ctx, from, to) for every regular file of <dir>/assets (from:
 * "assets/<rel>" beneath dir; to: "assets/<rel>" in the output) that the site
 * at root does not have as templates/assets/<rel>: the site's own assets win.
 * Symbolic links and dotfiles in the theme are skipped; at most max_files
 * files and 16 levels of folders. */
void theme_assets(const char *dir, const char *root, size_t max_files,
                  void (*copy)(void *ctx, const char *from, const char *to), void *ctx);

#endif
