#include "stamp.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"

/* FNV-1a's scheme, eight bytes at a step (a record's figures are hashed as
 * they arrive: tens of megabytes), the rest a byte at a time. The shift
 * brings the high bits a multiply leaves alone back into the low ones. */
static uint64_t S_mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (; n >= 8; c += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, c, sizeof w);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    for (; n > 0; c++, n--) {
        h ^= *c;
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t stamp_bytes(uint64_t h, const void *p, size_t n) { return S_mix(h, p, n); }

uint64_t stamp_str(uint64_t h, const char *s) { return S_mix(h, s, strlen(s) + 1); }

uint64_t stamp_key(const void *p, size_t n)
{
    uint64_t h = S_mix(STAMP_SEED, p, n);
    return h ^ (h >> 32);
}

static uint64_t S_stat(uint64_t h, const struct stat *st)
{
    /* ctime too: it changes on every write, even when mtime is put back */
    uint64_t v[6] = {(uint64_t)st->st_size, (uint64_t)st->st_mtim.tv_sec,
                     (uint64_t)st->st_mtim.tv_nsec, (uint64_t)st->st_ino,
                     (uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec};
    return S_mix(h, v, sizeof v);
}

uint64_t stamp_of_stat(uint64_t h, const char *path, const struct stat *st)
{
    return S_stat(stamp_str(h, path), st);
}

uint64_t stamp_file(uint64_t h, const char *path)
{
    struct stat st;
    h = stamp_str(h, path);
    if (lstat(path, &st) != 0)
        return stamp_str(h, "(missing)");
    return S_stat(h, &st);
}

uint64_t stamp_file_at(uint64_t h, int dirfd, const char *path)
{
    struct stat st;
    h = stamp_str(h, path);
    if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return stamp_str(h, "(missing)");
    return S_stat(h, &st);
}

static int S_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

uint64_t stamp_tree(uint64_t h, const char *root, const char *rel, size_t max_files,
                    size_t *files)
{
    return stamp_tree_each(h, root, rel, max_files, files, NULL, NULL);
}

uint64_t stamp_tree_each(uint64_t h, const char *root, const char *rel, size_t max_files,
                         size_t *files, void (*each)(void *ctx, const char *path, uint64_t stamp),
                         void *ctx)
{
    size_t cap = 16, n = 0, seen = 0;
    char **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = xstrdup(rel);
    while (n > 0) {
        char *dir = stack[--n];
        char *path = fs_join(root, dir);
        h = stamp_str(h, dir);
        DIR *d = opendir(path);
        if (!d) {
            h = stamp_str(h, "(no folder)");
        } else {
            char **names = NULL;
            size_t nn = 0, nc = 0;
            struct dirent *e;
            while ((e = readdir(d))) {
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                    continue;
                if (nn == nc)
                    names = xrealloc(names, (nc = nc ? nc * 2 : 64) * sizeof *names);
                names[nn++] = xstrdup(e->d_name);
            }
            if (nn)
                qsort(names, nn, sizeof *names, S_cmp);
            for (size_t i = 0; i < nn; i++) {
                struct stat st;
                h = stamp_str(h, names[i]);
                if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) == 0) {
                    h = S_stat(h, &st);
                    if (S_ISDIR(st.st_mode) && seen < max_files) {
                        if (n == cap)
                            stack = xrealloc(stack, (cap *= 2) * sizeof *stack);
                        stack[n++] = fs_join(dir, names[i]);
                    } else {
                        seen++;
                        if (each && S_ISREG(st.st_mode)) {
                            char *file = fs_join(dir, names[i]);
                            each(ctx, file, S_stat(stamp_str(STAMP_SEED, file), &st));
                            free(file);
                        }
                    }
                }
                free(names[i]);
            }
            free(names);
            closedir(d);
        }
        free(path);
        free(dir);
        if (seen > max_files)
            break;
    }
    while (n > 0)
        free(stack[--n]);
    free(stack);
    if (files)
        *files = seen;
    return h;
}
