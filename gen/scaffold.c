/* scaffold: kvsite new (a site from a starter, a page with front matter). */
#include "scaffold.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "paths.h"

#define SCAFFOLD_MAX_DEPTH 16
#define SCAFFOLD_MAX_PARTS 8

/* True when path is a folder with no entries. */
static bool S_empty_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return false;
    struct dirent *e;
    bool empty = true;
    while (empty && (e = readdir(d)))
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

int scaffold_site(const char *starter, const char *dir, buf *err)
{
    struct stat st;
    if (lstat(dir, &st) == 0 && !(S_ISDIR(st.st_mode) && S_empty_dir(dir))) {
        buf_printf(err, "%s: %s; a new site goes into a missing or empty folder", dir,
                   S_ISDIR(st.st_mode) ? "not empty" : "not a folder");
        return -1;
    }
    if (!fs_is_dir(starter)) {
        buf_printf(err, "no starter site at %s (is kvsite installed with `make install`?)", starter);
        return -1;
    }
    if (fs_mkdir_p(dir) != 0) {
        buf_printf(err, "%s: %s", dir, strerror(errno));
        return -1;
    }
    /* folders still to copy, relative to starter ("" for itself) */
    size_t cap = 8, n = 0;
    char **stack = xmalloc(cap * sizeof *stack);
    stack[n++] = xstrdup("");
    int rc = 0;
    while (n > 0) {
        char *rel = stack[--n];
        char *from_dir = rel[0] ? xasprintf("%s/%s", starter, rel) : xstrdup(starter);
        DIR *d = rc == 0 ? opendir(from_dir) : NULL;
        if (!d && rc == 0) {
            buf_printf(err, "%s: %s", from_dir, strerror(errno));
            rc = -1;
        }
        struct dirent *e;
        while (d && rc == 0 && (e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char *child = rel[0] ? xasprintf("%s/%s", rel, e->d_name) : xstrdup(e->d_name);
            char *from = xasprintf("%s/%s", starter, child);
            char *to = xasprintf("%s/%s", dir, child);
            size_t depth = 1;
            for (const char *c = child; *c; c++)
                depth += *c == '/';
            if (lstat(from, &st) != 0) {
                buf_printf(err, "%s: %s", from, strerror(errno));
                rc = -1;
            } else if (S_ISDIR(st.st_mode) && depth < SCAFFOLD_MAX_DEPTH) {
                if (fs_mkdir_p(to) != 0) {
                    buf_printf(err, "%s: %s", to, strerror(errno));
                    rc = -1;
                } else {
                    if (n == cap) {
                        cap *= 2;
                        stack = xrealloc(stack, cap * sizeof *stack);
                    }
                    stack[n++] = child;
                    child = NULL;
                }
            } else if (S_ISREG(st.st_mode) && fs_copy_file(from, to, NULL) != 0) {
                buf_printf(err, "cannot copy %s to %s: %s", from, to, strerror(errno));
                rc = -1;
            }
            free(child);
            free(from);
            free(to);
        }
        if (d)
            closedir(d);
        free(from_dir);
        free(rel);
    }
    while (n > 0)
        free(stack[--n]);
    free(stack);
    return rc;
}

char *scaffold_title(const char *name)
{
    char *t = xstrdup(name);
    for (char *p = t; *p; p++)
        if (*p == '-' || *p == '_')
            *p = ' ';
    if (t[0] >= 'a' && t[0] <= 'z')
        t[0] = (char)(t[0] - 'a' + 'A');
    return t;
}

char *scaffold_page_path(const char *spec, buf *err)
{
    size_t len = strlen(spec);
    if (len > 3 && strcmp(spec + len - 3, ".md") == 0)
        len -= 3;
    if (len == 0 || len > 400) {
        buf_printf(err, "page \"%s\": expected SECTION/NAME, say articles/my-topic", spec);
        return NULL;
    }
    size_t parts = 1;
    bool start = true;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)spec[i];
        if (c == '/') {
            if (start)
                break; /* an empty component */
            parts++;
            start = true;
            continue;
        }
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c >= 0x80 || (c == '.' && !start);
        if (!ok) {
            buf_printf(err, "page \"%s\": a name is letters, digits, \"-\", \"_\" (or CJK), "
                            "and does not start with \".\"", spec);
            return NULL;
        }
        start = false;
    }
    if (start || parts > SCAFFOLD_MAX_PARTS) {
        buf_printf(err, "page \"%s\": expected SECTION/NAME with no empty part and at most %d parts",
                   spec, SCAFFOLD_MAX_PARTS);
        return NULL;
    }
    return xasprintf("content/%.*s.md", (int)len, spec);
}

int scaffold_page(const char *root, const char *spec, const char *today, buf *err)
{
    char *rel = scaffold_page_path(spec, err);
    if (!rel)
        return -1;
    char *path = fs_join(root, rel);
    char *folder = xstrdup(path);
    *strrchr(folder, '/') = '\0';
    const char *base = strrchr(rel, '/') + 1;
    char *name = xstrndup(base, strlen(base) - 3);
    char *title = scaffold_title(name);
    int rc = -1;
    int fd = -1;
    if (fs_mkdir_p(folder) != 0) {
        buf_printf(err, "%s: %s", folder, strerror(errno));
    } else if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0) {
        buf_printf(err, "%s: %s", path, errno == EEXIST ? "already exists" : strerror(errno));
    } else {
        buf text = BUF_INIT;
        buf_printf(&text, "---\ntitle: \"%s\"\ndate: %s\ntags: []\n---\n\n", title, today);
        rc = write(fd, text.ptr, text.len) == (ssize_t)text.len && close(fd) == 0 ? 0 : -1;
        if (rc != 0)
            buf_printf(err, "%s: %s", path, strerror(errno));
        buf_free(&text);
    }
    free(title);
    free(name);
    free(folder);
    free(path);
    free(rel);
    return rc;
}

static int S_usage(const char *msg)
{
    fprintf(stderr, "kvsite new: %s\n"
                    "usage: kvsite new DIR [--lang en|zh]\n"
                    "       kvsite new page [-C DIR] SECTION/NAME\n", msg);
    return 2;
}

static int S_new_page(int argc, char **argv)
{
    const char *root = ".", *spec = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-C") == 0 && i + 1 < argc)
            root = argv[++i];
        else if (argv[i][0] == '-' || spec)
            return S_usage("new page takes [-C DIR] and one SECTION/NAME");
        else
            spec = argv[i];
    }
    if (!spec)
        return S_usage("new page needs SECTION/NAME, say articles/my-topic");
    char *content = fs_join(root, "content");
    char *config = fs_join(root, "site.yaml");
    struct stat st;
    bool site = fs_is_dir(content) || stat(config, &st) == 0;
    free(content);
    free(config);
    if (!site) {
        fprintf(stderr, "kvsite new page: %s is not a kvsite project (no site.yaml, no content/)\n",
                root);
        return 2;
    }
    char today[16];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(today, sizeof today, "%Y-%m-%d", &tm);
    buf err = BUF_INIT;
    int rc = scaffold_page(root, spec, today, &err);
    if (rc != 0)
        fprintf(stderr, "kvsite new page: %s\n", buf_cstr(&err));
    else {
        char *rel = scaffold_page_path(spec, &err);
        printf("made %s\n", rel);
        free(rel);
    }
    buf_free(&err);
    return rc == 0 ? 0 : 1;
}

int scaffold_main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "page") == 0)
        return S_new_page(argc - 1, argv + 1);
    const char *dir = NULL, *lang = "en";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--lang") == 0 && i + 1 < argc)
            lang = argv[++i];
        else if (strncmp(argv[i], "--lang=", 7) == 0)
            lang = argv[i] + 7;
        else if (argv[i][0] == '-' || dir)
            return S_usage("new takes one DIR and --lang en|zh");
        else
            dir = argv[i];
    }
    if (!dir)
        return S_usage("new needs the folder of the new site");
    const char *l = strcmp(lang, "zh") == 0 || strcmp(lang, "zh-CN") == 0 ? "zh"
                    : strcmp(lang, "en") == 0                              ? "en"
                                                                           : NULL;
    if (!l)
        return S_usage("--lang is en or zh");
    const char *starters = paths_get()->starter;
    if (!starters) {
        fprintf(stderr, "kvsite new: no starter sites next to this kvsite (install it with "
                        "`make install`, or run build/kvsite from its repository)\n");
        return 1;
    }
    char *starter = xasprintf("%s/%s", starters, l);
    buf err = BUF_INIT;
    int rc = scaffold_site(starter, dir, &err);
    if (rc != 0)
        fprintf(stderr, "kvsite new: %s\n", buf_cstr(&err));
    else
        printf("made a new site in %s; next:\n  cd %s && kvsite build --strict\n", dir, dir);
    buf_free(&err);
    free(starter);
    return rc == 0 ? 0 : 2;
}
