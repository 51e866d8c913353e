#include "stamp.h"

#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
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

/* The stats of a folder's entries, taken by two threads when there are many
 * (a section of 10,000 pages: 10,000 fstatat calls, a kernel path walk each),
 * in chunks of S_CHUNK names into one reused buffer. */
#define S_CHUNK 2048
#define S_SPLIT 256 /* below this many names, one thread (a thread costs about 0.1 ms here) */

typedef struct {
    int dirfd;
    char **names;
    struct stat *st;
    bool *ok;
    size_t n;
} S_stat_span;

static void *S_stat_main(void *arg)
{
    S_stat_span *sp = arg;
    for (size_t i = 0; i < sp->n; i++)
        sp->ok[i] = fstatat(sp->dirfd, sp->names[i], &sp->st[i], AT_SYMLINK_NOFOLLOW) == 0;
    return NULL;
}

static void S_stat_names(int dirfd, char **names, size_t n, struct stat *st, bool *ok)
{
    S_stat_span a = {dirfd, names, st, ok, n}, b;
    pthread_t t;
    bool split = n >= S_SPLIT;
    if (split) {
        a.n = n / 2;
        b = (S_stat_span){dirfd, names + a.n, st + a.n, ok + a.n, n - a.n};
        split = pthread_create(&t, NULL, S_stat_main, &b) == 0;
        if (!split)
            a.n = n; /* no thread to be had (a sandboxed worker): all here */
    }
    S_stat_main(&a);
    if (split)
        pthread_join(t, NULL);
}

void stamp_files_at(int dirfd, char **paths, size_t n, uint64_t *stamps)
{
    struct stat *st = xmalloc((S_CHUNK + 1) * sizeof *st);
    bool *ok = xmalloc(S_CHUNK + 1);
    for (size_t at = 0; at < n; at += S_CHUNK) {
        size_t k = n - at < S_CHUNK ? n - at : S_CHUNK;
        S_stat_names(dirfd, paths + at, k, st, ok);
        for (size_t i = 0; i < k; i++) {
            uint64_t h = stamp_str(STAMP_SEED, paths[at + i]);
            stamps[at + i] = ok[i] ? S_stat(h, &st[i]) : stamp_str(h, "(missing)");
        }
    }
    free(ok);
    free(st);
}

uint64_t stamp_entry(const char *key, const struct stat *st)
{
    return S_stat(stamp_str(STAMP_SEED, key), st) | 1;
}

/* An entry's key in a sum (stamp.h): the path, "path/" for a folder, "?path"
 * for what is neither a folder nor a regular file. Malloc'ed. */
static char *S_entry_key(const char *dir, const char *name, const struct stat *st)
{
    char *path = fs_join(dir, name); /* as stamp_tree_each names files: no "./" */
    if (S_ISREG(st->st_mode))
        return path;
    char *key = S_ISDIR(st->st_mode) ? xasprintf("%s/", path) : xasprintf("?%s", path);
    free(path);
    return key;
}

/* The walk of stamp_tree_each and stamp_tree_sum: with sum, the result is the
 * sum of the entries' stamps and each() sees every entry by its key; without,
 * every name and stat goes into the chain h and each() sees regular files. */
static uint64_t S_walk(uint64_t h, const char *root, const char *rel, size_t max_files,
                       size_t *files, void (*each)(void *ctx, const char *path, uint64_t stamp),
                       void *ctx, bool sum)
{
    size_t cap = 16, n = 0, seen = 0;
    char **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = xstrdup(rel);
    struct stat *sts = NULL; /* the stats of a chunk of a folder's names */
    bool *oks = NULL;
    while (n > 0) {
        char *dir = stack[--n];
        char *path = fs_join(root, dir);
        if (!sum)
            h = stamp_str(h, dir);
        DIR *d = opendir(path);
        if (!d) {
            /* in a sum, only the top folder can be missing: a folder
             * beneath it that went between the readdir and here is as if
             * it were empty */
            if (!sum)
                h = stamp_str(h, "(no folder)");
            else if (!strcmp(dir, rel))
                h += stamp_str(stamp_str(STAMP_SEED, rel), "(no folder)");
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
                if (i % S_CHUNK == 0) {
                    if (!sts) {
                        sts = xmalloc(S_CHUNK * sizeof *sts);
                        oks = xmalloc(S_CHUNK * sizeof *oks);
                    }
                    size_t left = nn - i < S_CHUNK ? nn - i : S_CHUNK;
                    S_stat_names(dirfd(d), names + i, left, sts, oks);
                }
                const struct stat st = sts[i % S_CHUNK];
                if (sum && oks[i % S_CHUNK]) {
                    char *key = S_entry_key(dir, names[i], &st);
                    uint64_t one = stamp_entry(key, &st);
                    h += one;
                    if (each)
                        each(ctx, key, one);
                    free(key);
                } else if (!sum) {
                    h = stamp_str(h, names[i]);
                }
                if (oks[i % S_CHUNK]) {
                    if (!sum)
                        h = S_stat(h, &st);
                    if (S_ISDIR(st.st_mode) && seen < max_files) {
                        if (n == cap)
                            stack = xrealloc(stack, (cap *= 2) * sizeof *stack);
                        stack[n++] = fs_join(dir, names[i]);
                    } else {
                        seen++;
                        if (!sum && each && S_ISREG(st.st_mode)) {
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
    free(sts);
    free(oks);
    if (files)
        *files = seen;
    return h;
}

uint64_t stamp_tree_each(uint64_t h, const char *root, const char *rel, size_t max_files,
                         size_t *files, void (*each)(void *ctx, const char *path, uint64_t stamp),
                         void *ctx)
{
    return S_walk(h, root, rel, max_files, files, each, ctx, false);
}

uint64_t stamp_tree_sum(const char *root, const char *rel, size_t max_files, size_t *files,
                        void (*each)(void *ctx, const char *key, uint64_t stamp), void *ctx)
{
    return S_walk(0, root, rel, max_files, files, each, ctx, true);
}
