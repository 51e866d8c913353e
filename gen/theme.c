/* theme: the default theme's templates and assets, behind the site's own. */
#include "theme.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fsutil.h"
#include "paths.h"

#define THEME_MAX_DEPTH 16

int theme_check(const config *c, diag_list *dl)
{
    const char *v = c->theme ? c->theme : "";
    if (!v[0] || strcmp(v, "default") == 0 || strcmp(v, "none") == 0)
        return 0;
    int line = 0, col = 0;
    const yv *doc = c->doc;
    for (size_t i = 0; doc && doc->type == YV_MAP && i < doc->n; i++)
        if (strcmp(doc->keys[i], "theme") == 0) {
            line = doc->items[i]->line;
            col = doc->items[i]->col;
        }
    diag_error(dl, "site.yaml", line, col,
               "theme must be \"default\" (the installed default theme) or \"none\", not \"%s\"",
               v);
    return -1;
}

const char *theme_dir(const config *c, const char *root)
{
    const char *v = c->theme ? c->theme : "";
    if (strcmp(v, "none") == 0)
        return NULL;
    if (!v[0]) {
        /* no key: the theme only for a site without templates/ (a link
         * there counts as a folder: it is refused when it is read) */
        char *t = fs_join(root, "templates");
        struct stat st;
        bool has = lstat(t, &st) == 0;
        free(t);
        if (has)
            return NULL;
    }
    return paths_get()->theme;
}

int theme_open(const char *dir, const char *name)
{
    int fd = fs_open_in(dir, name, O_RDONLY);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode))) {
        close(fd);
        fd = -1;
        errno = EISDIR;
    }
    return fd;
}

/* True when the site has anything at templates/assets/<rel> (a link there
 * included: the site's copy refuses it, and the theme's must not stand in). */
static bool S_site_has(const char *root, const char *rel)
{
    char *p = xasprintf("templates/assets/%s", rel);
    int fd = fs_open_in(root, p, O_RDONLY);
    int err = errno;
    free(p);
    if (fd >= 0)
        close(fd);
    return fd >= 0 || err != ENOENT;
}

void theme_assets(const char *dir, const char *root, size_t max_files,
                  void (*copy)(void *ctx, const char *from, const char *to), void *ctx)
{
    /* folders to visit, as paths relative to assets/ ("" for assets/ itself) */
    size_t cap = 8, n = 0, files = 0;
    char **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = xstrdup("");
    while (n > 0) {
        char *rel = stack[--n];
        char *in = rel[0] ? xasprintf("assets/%s", rel) : xstrdup("assets");
        int dfd = fs_open_in(dir, in, O_RDONLY | O_DIRECTORY);
        DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
        if (!d && dfd >= 0)
            close(dfd);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char *child = rel[0] ? xasprintf("%s/%s", rel, e->d_name) : xstrdup(e->d_name);
            struct stat st;
            size_t depth = 1;
            for (const char *c = child; *c; c++)
                depth += *c == '/';
            if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
                /* gone since readdir: nothing to copy */
            } else if (S_ISDIR(st.st_mode) && depth < THEME_MAX_DEPTH) {
                if (n == cap) {
                    cap *= 2;
                    stack = xrealloc(stack, cap * sizeof *stack);
                }
                stack[n++] = child;
                child = NULL;
            } else if (S_ISREG(st.st_mode) && files < max_files && !S_site_has(root, child)) {
                files++;
                char *from = xasprintf("assets/%s", child);
                copy(ctx, from, from);
                free(from);
            }
            free(child);
        }
        if (d)
            closedir(d);
        free(in);
        free(rel);
    }
    free(stack);
}
