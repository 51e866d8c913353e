/* paths: where kvsite's installed data is: the default theme, the checks
 * library and the starter sites.
 *
 * An installed binary at <prefix>/bin/kvsite finds them under
 * <prefix>/share/kvsite/{theme,checks,starter}; a binary in a build tree
 * (build/kvsite, build/san/kvsite; up to three folders below the
 * repository) finds the repository's share/theme,
 * checks/ and share/starter. Nothing is looked up on $PATH or in the
 * environment: the binary's own location (/proc/self/exe) decides, so a
 * build tree and an installed copy each use their own data.
 *
 * The strings of a paths_share are owned by it (paths_share_free);
 * paths_get's result is owned by the module and lives until exit. */
#ifndef KV_PATHS_H
#define KV_PATHS_H

typedef struct {
    char *theme;   /* the default theme's folder, or NULL when there is none */
    char *checks;  /* the checks library's folder, or NULL */
    char *starter; /* the starter sites' folder (en/, zh/ beneath), or NULL */
} paths_share;

/* Fills *out for a binary at exe (an absolute path): the installed layout
 * first, then a repository up to three folders above the binary. Each field is
 * an absolute, resolved path of an existing folder, or NULL. Returns 0 when
 * at least one was found, -1 when none was. */
int paths_resolve(const char *exe, paths_share *out);
void paths_share_free(paths_share *p);

/* paths_resolve for this process's binary, computed once (not thread-safe on
 * the first call: call it before starting threads; forked workers inherit it). */
const paths_share *paths_get(void);

#endif
