/* paths: the share folder found from the binary's own location. */
#include "paths.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

static bool S_is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* base/rel resolved, when it is a folder; else NULL. */
static char *S_dir(const char *base, const char *rel)
{
    char *p = xasprintf("%s/%s", base, rel);
    char real[PATH_MAX];
    char *r = S_is_dir(p) && realpath(p, real) ? xstrdup(real) : NULL;
    free(p);
    return r;
}

int paths_resolve(const char *exe, paths_share *out)
{
    memset(out, 0, sizeof *out);
    if (!exe || exe[0] != '/')
        return -1;
    char *dir = xstrdup(exe);
    char *slash = strrchr(dir, '/');
    slash[slash == dir ? 1 : 0] = '\0';
    /* installed: <prefix>/bin/kvsite and <prefix>/share/kvsite */
    char *share = xasprintf("%s/../share/kvsite", dir);
    if (S_is_dir(share)) {
        out->theme = S_dir(share, "theme");
        out->checks = S_dir(share, "checks");
        out->starter = S_dir(share, "starter");
    } else {
        /* a build tree: the repository is the folder above build/ (or
         * build/san/, or their tests/ for the unit tests); it is recognised
         * by its sources, so a stray share/ folder elsewhere is not taken
         * for one */
        const char *up[] = {"..", "../..", "../../.."};
        for (size_t i = 0; i < sizeof up / sizeof up[0]; i++) {
            char *repo = xasprintf("%s/%s", dir, up[i]);
            char *marker = xasprintf("%s/gen/paths.c", repo);
            struct stat st;
            bool found = stat(marker, &st) == 0 && S_ISREG(st.st_mode);
            free(marker);
            if (found) {
                out->theme = S_dir(repo, "share/theme");
                out->checks = S_dir(repo, "checks");
                out->starter = S_dir(repo, "share/starter");
            }
            free(repo);
            if (found)
                break;
        }
    }
    free(share);
    free(dir);
    return out->theme || out->checks || out->starter ? 0 : -1;
}

void paths_share_free(paths_share *p)
{
    free(p->theme);
    free(p->checks);
    free(p->starter);
    memset(p, 0, sizeof *p);
}

static paths_share S_share;

static void S_find_share(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        paths_resolve(exe, &S_share);
    }
}

const paths_share *paths_get(void)
{
    /* once, whichever thread asks first (a build reads its cache in a
     * thread beside the input stamp, both asking) */
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, S_find_share);
    return &S_share;
}
