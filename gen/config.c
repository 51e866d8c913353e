#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "fsutil.h"
#include "paginate.h"
#include "sources.h"
#include "theme.h"

#define CONFIG_FILE "site.yaml"
#define CONFIG_MAX_BYTES (1u << 20)

void config_defaults(config *c)
{
    memset(c, 0, sizeof *c);
    c->title = xstrdup("Untitled site");
    c->base_url = xstrdup("/");
    c->base_path = xstrdup("");
    c->language = xstrdup("en");
    c->description = xstrdup("");
    c->author = xstrdup("");
    c->theme = xstrdup("");
    c->tolerance = 0.05;
    c->feed_entries = 20;
    c->paginate = PAGINATE_DEFAULT;
    c->paginate_tags = PAGINATE_TAGS_DEFAULT;
    c->paginate_sources = SOURCES_PER_PAGE_DEFAULT;
    c->pagefind = xstrdup("");
    c->search_timeout = 120.0;
    c->limits.page_bytes = 4u << 20;
    c->limits.front_matter_bytes = 64u << 10;
    c->limits.data_bytes = 8u << 20;
    c->limits.template_bytes = 1u << 20;
    c->limits.output_bytes = (size_t)1 << 30;
    c->limits.files = 100000;
    c->limits.page_tags = 64;
    c->limits.depth = 32;
    c->limits.lua_instructions = 200000000;
    c->limits.lua_memory = 32u << 20;
    c->limits.page_timeout = 10.0;
    c->limits.build_timeout = 3600.0;
    c->limits.worker_memory = (size_t)2 << 30;
}

void config_free(config *c)
{
    free(c->title);
    free(c->base_url);
    free(c->base_path);
    free(c->language);
    free(c->description);
    free(c->author);
    free(c->theme);
    free(c->pagefind);
    yv_free(c->doc);
    memset(c, 0, sizeof *c);
}

typedef enum { K_STRING, K_BOOL, K_SIZE, K_INT, K_NUMBER, K_UNVERIFIED, K_MAP, K_PATTERNS } key_kind;

typedef struct {
    const char *path; /* "section.key" */
    key_kind kind;
    size_t offset;
    double min, max;
} key_spec;

#define OFF(f) offsetof(config, f)
static const key_spec S_keys[] = {
    {"title", K_STRING, OFF(title), 0, 0},
    {"base_url", K_STRING, OFF(base_url), 0, 0},
    {"language", K_STRING, OFF(language), 0, 0},
    {"description", K_STRING, OFF(description), 0, 0},
    {"author", K_STRING, OFF(author), 0, 0},
    {"theme", K_STRING, OFF(theme), 0, 0},
    {"params", K_MAP, 0, 0, 0},
    {"content.allow_active", K_PATTERNS, OFF(allow_active), 0, 0},
    {"markdown.unsafe", K_BOOL, OFF(unsafe_html), 0, 0},
    {"figures.unverified", K_UNVERIFIED, OFF(unverified_error), 0, 0},
    {"figures.tolerance", K_NUMBER, OFF(tolerance), 0, 1},
    {"build.jobs", K_INT, OFF(jobs), 0, 256},
    {"feed.entries", K_INT, OFF(feed_entries), 1, 10000},
    {"paginate", K_INT, OFF(paginate), 1, PAGINATE_MAX},
    {"paginate_tags", K_INT, OFF(paginate_tags), 1, PAGINATE_MAX},
    {"paginate_sources", K_INT, OFF(paginate_sources), 1, PAGINATE_MAX},
    {"search.enabled", K_BOOL, OFF(search), 0, 0},
    {"search.pagefind", K_STRING, OFF(pagefind), 0, 0},
    {"search.timeout", K_NUMBER, OFF(search_timeout), 1, 86400},
    {"limits.page_bytes", K_SIZE, OFF(limits.page_bytes), 1024, 1e9},
    {"limits.front_matter_bytes", K_SIZE, OFF(limits.front_matter_bytes), 64, 1e8},
    {"limits.data_bytes", K_SIZE, OFF(limits.data_bytes), 1024, 1e9},
    {"limits.template_bytes", K_SIZE, OFF(limits.template_bytes), 1024, 1e9},
    {"limits.output_bytes", K_SIZE, OFF(limits.output_bytes), 1 << 20, 1e13},
    {"limits.files", K_SIZE, OFF(limits.files), 1, 1e8},
    {"limits.page_tags", K_SIZE, OFF(limits.page_tags), 1, 10000},
    {"limits.depth", K_INT, OFF(limits.depth), 2, 1000},
    {"limits.lua_instructions", K_SIZE, OFF(limits.lua_instructions), 1000, 1e15},
    {"limits.lua_memory", K_SIZE, OFF(limits.lua_memory), 1 << 20, 1e12},
    {"limits.page_timeout", K_NUMBER, OFF(limits.page_timeout), 0.1, 86400},
    {"limits.build_timeout", K_NUMBER, OFF(limits.build_timeout), 1, 604800},
    {"limits.worker_memory", K_SIZE, OFF(limits.worker_memory), 0, 1e13},
};
#define NKEYS (sizeof S_keys / sizeof S_keys[0])

static const key_spec *S_find(const char *path)
{
    for (size_t i = 0; i < NKEYS; i++)
        if (strcmp(S_keys[i].path, path) == 0)
            return &S_keys[i];
    return NULL;
}

static bool S_is_section(const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < NKEYS; i++)
        if (strncmp(S_keys[i].path, name, n) == 0 && S_keys[i].path[n] == '.')
            return true;
    return false;
}

static void S_known_keys(buf *b, const char *section)
{
    size_t n = section ? strlen(section) : 0;
    const char *sep = "";
    for (size_t i = 0; i < NKEYS; i++) {
        const char *p = S_keys[i].path;
        const char *dot = strchr(p, '.');
        if (section) {
            if (strncmp(p, section, n) != 0 || p[n] != '.')
                continue;
            buf_printf(b, "%s%s", sep, p + n + 1);
        } else if (dot) {
            /* list each section once */
            bool seen = false;
            for (size_t j = 0; j < i; j++)
                if (strncmp(S_keys[j].path, p, (size_t)(dot - p) + 1) == 0)
                    seen = true;
            if (seen)
                continue;
            buf_printf(b, "%s%.*s", sep, (int)(dot - p), p);
        } else {
            buf_printf(b, "%s%s", sep, p);
        }
        sep = ", ";
    }
}

static int S_set(config *c, const key_spec *k, const yv *v, const char *file, int line,
                 int col, diag_list *dl)
{
    char *base = (char *)c;
    switch (k->kind) {
    case K_STRING:
        if (v->type != YV_STRING && v->type != YV_INT && v->type != YV_FLOAT) {
            diag_error(dl, file, line, col, "%s must be a string, not %s", k->path,
                       yv_type_a(v->type));
            return -1;
        } else {
            char **slot = (char **)(base + k->offset);
            free(*slot);
            *slot = xstrdup(v->str);
        }
        return 0;
    case K_BOOL:
        if (v->type != YV_BOOL) {
            diag_error(dl, file, line, col, "%s must be true or false, not %s", k->path,
                       yv_type_a(v->type));
            return -1;
        }
        *(bool *)(base + k->offset) = v->b;
        return 0;
    case K_UNVERIFIED:
        if (v->type != YV_STRING || (strcmp(v->str, "warning") && strcmp(v->str, "error"))) {
            diag_error(dl, file, line, col, "%s must be \"warning\" or \"error\"", k->path);
            return -1;
        }
        *(bool *)(base + k->offset) = strcmp(v->str, "error") == 0;
        return 0;
    case K_MAP:
        if (v->type != YV_MAP) {
            diag_error(dl, file, line, col, "%s must be a map, not %s", k->path,
                       yv_type_a(v->type));
            return -1;
        }
        c->params = v;
        return 0;
    case K_PATTERNS:
        if (v->type != YV_SEQ) {
            diag_error(dl, file, line, col, "%s must be a list of file patterns, not %s",
                       k->path, yv_type_a(v->type));
            return -1;
        }
        for (size_t i = 0; i < v->n; i++) {
            if (v->items[i]->type != YV_STRING || !v->items[i]->str[0]) {
                diag_error(dl, file, v->items[i]->line, v->items[i]->col,
                           "%s: every item must be a file pattern (\"demos/*.html\"), not %s",
                           k->path, v->items[i]->type == YV_STRING ? "an empty string"
                                                                  : yv_type_a(v->items[i]->type));
                return -1;
            }
        }
        *(const yv **)(base + k->offset) = v;
        return 0;
    case K_SIZE:
    case K_INT:
    case K_NUMBER: {
        double d;
        if (v->type == YV_INT)
            d = (double)v->i;
        else if (v->type == YV_FLOAT && k->kind == K_NUMBER)
            d = v->f;
        else {
            diag_error(dl, file, line, col, "%s must be %s, not %s", k->path,
                       k->kind == K_NUMBER ? "a number" : "an integer", yv_type_a(v->type));
            return -1;
        }
        if (!(d >= k->min && d <= k->max)) {
            diag_error(dl, file, line, col, "%s must be between %g and %g, not %s", k->path,
                       k->min, k->max, v->str);
            return -1;
        }
        if (k->kind == K_SIZE) {
            if (strcmp(k->path, "limits.lua_instructions") == 0)
                *(long long *)(base + k->offset) = (long long)d;
            else
                *(size_t *)(base + k->offset) = (size_t)d;
        } else if (k->kind == K_INT)
            *(int *)(base + k->offset) = (int)d;
        else
            *(double *)(base + k->offset) = d;
        return 0;
    }
    }
    return -1;
}

/* base_url must be absolute ("/", "/docs/", "https://host/docs/"); the path part
 * prefixes every internal URL in the output. */
static int S_base_url(config *c, const char *file, int line, int col, diag_list *dl)
{
    const char *u = c->base_url;
    const char *path = NULL;
    if (u[0] == '/' && u[1] == '/') {
        /* "//host/": the scheme of whoever reads the page, a host of the pull
         * request's choosing in every URL of the site */
        diag_error(dl, file, line, col,
                   "base_url \"%s\" is protocol-relative; write \"https://host/...\" or a "
                   "path \"/...\"", u);
        return -1;
    } else if (u[0] == '/') {
        path = u;
    } else if (strncmp(u, "https://", 8) == 0 || strncmp(u, "http://", 7) == 0) {
        const char *host = strstr(u, "://") + 3;
        path = strchr(host, '/');
        if (!path)
            path = "";
        if (host[0] == '\0' || host[0] == '/') {
            diag_error(dl, file, line, col, "base_url \"%s\" has no host", u);
            return -1;
        }
    } else {
        diag_error(dl, file, line, col,
                   "base_url \"%s\" must start with \"/\" or \"http(s)://\"", u);
        return -1;
    }
    for (const char *p = u; *p; p++) {
        if ((unsigned char)*p <= ' ' || *p == '"' || *p == '<' || *p == '>' || *p == '\\' ||
            *p == '?' || *p == '#') {
            diag_error(dl, file, line, col, "base_url \"%s\" contains a character not allowed here",
                       u);
            return -1;
        }
    }
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/')
        n--;
    free(c->base_path);
    c->base_path = xstrndup(path, n);
    if (u[strlen(u) - 1] != '/') {
        char *withslash = xasprintf("%s/", u);
        free(c->base_url);
        c->base_url = withslash;
    }
    return 0;
}

/* The folders and files a project's reads start from must not be symbolic
 * links: through one, a pull request would make any folder of the machine
 * the project's content, templates or checks. (Links further down are
 * refused where each file is opened, by fs_open_beneath.) */
static int S_check_layout(const char *root, diag_list *dl)
{
    static const char *const tops[] = {"site.yaml", "content", "templates", "templates/assets",
                                       "checks", "checks/sources.yaml"};
    int dir = fs_root_open(root);
    if (dir < 0)
        return 0; /* said by whoever opens it next */
    size_t before = dl->errors;
    for (size_t i = 0; i < sizeof tops / sizeof *tops; i++) {
        struct stat st;
        if (fstatat(dir, tops[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            diag_error(dl, tops[i], 0, 0,
                       "a symbolic link: refused (content/, templates/, templates/assets/, "
                       "checks/, checks/sources.yaml and site.yaml must be the project's own "
                       "folders and files)");
    }
    close(dir);
    return dl->errors == before ? 0 : -1;
}

static int S_load(config *c, const char *root, diag_list *dl)
{
    if (S_check_layout(root, dl) != 0)
        return -1;
    buf text = BUF_INIT;
    int rc = fs_read_in(root, CONFIG_FILE, CONFIG_MAX_BYTES, &text);
    if (rc == FS_ENOENT) {
        buf_free(&text);
        return 0;
    }
    if (rc != 0) {
        diag_error(dl, CONFIG_FILE, 0, 0, "cannot read: %s", fs_strerror(rc, CONFIG_MAX_BYTES));
        buf_free(&text);
        return -1;
    }
    size_t before = dl->errors;
    yv *doc = yv_parse_yaml(buf_cstr(&text), text.len, &yv_default_limits, CONFIG_FILE, 0, dl);
    buf_free(&text);
    if (!doc)
        return -1;
    c->doc = doc;
    if (doc->type == YV_NULL)
        return 0;
    if (doc->type != YV_MAP) {
        diag_error(dl, CONFIG_FILE, doc->line, doc->col, "site.yaml must be a map of settings");
        return -1;
    }
    int base_line = 0, base_col = 0;
    for (size_t i = 0; i < doc->n; i++) {
        const char *key = doc->keys[i];
        const yv *v = doc->items[i];
        int kl = doc->key_lines[i], kc = doc->key_cols[i];
        /* "markdown.unsafe: true" at the top is not the nested key */
        const key_spec *k = strchr(key, '.') ? NULL : S_find(key);
        if (k) {
            S_set(c, k, v, CONFIG_FILE, kl, kc, dl);
            if (strcmp(key, "base_url") == 0)
                base_line = kl, base_col = kc;
            continue;
        }
        if (!S_is_section(key)) {
            buf known = BUF_INIT;
            S_known_keys(&known, NULL);
            diag_error(dl, CONFIG_FILE, kl, kc, "unknown key \"%s\"; known keys: %s", key,
                       buf_cstr(&known));
            buf_free(&known);
            continue;
        }
        if (v->type != YV_MAP) {
            diag_error(dl, CONFIG_FILE, kl, kc, "%s must be a map, not %s", key,
                       yv_type_a(v->type));
            continue;
        }
        for (size_t j = 0; j < v->n; j++) {
            char *full = xasprintf("%s.%s", key, v->keys[j]);
            const key_spec *sub = S_find(full);
            if (sub) {
                S_set(c, sub, v->items[j], CONFIG_FILE, v->key_lines[j], v->key_cols[j], dl);
            } else {
                buf known = BUF_INIT;
                S_known_keys(&known, key);
                diag_error(dl, CONFIG_FILE, v->key_lines[j], v->key_cols[j],
                           "unknown key \"%s\" in %s; known keys: %s", v->keys[j], key,
                           buf_cstr(&known));
                buf_free(&known);
            }
            free(full);
        }
    }
    if (dl->errors == before)
        S_base_url(c, CONFIG_FILE, base_line, base_col, dl);
    c->base_url_line = base_line;
    c->base_url_col = base_col;
    return dl->errors == before ? 0 : -1;
}

/* ---------- ceilings: KVSITE_LIMITS ---------- */

/* A numeric setting's value as a double; worker_memory 0 (none) as infinity. */
static double S_get_num(const config *c, const key_spec *k)
{
    const char *base = (const char *)c;
    if (k->kind == K_NUMBER)
        return *(const double *)(base + k->offset);
    if (k->kind == K_INT)
        return *(const int *)(base + k->offset);
    if (strcmp(k->path, "limits.lua_instructions") == 0)
        return (double)*(const long long *)(base + k->offset);
    size_t v = *(const size_t *)(base + k->offset);
    if (v == 0 && strcmp(k->path, "limits.worker_memory") == 0)
        return INFINITY;
    return (double)v;
}

static void S_put_num(config *c, const key_spec *k, double d)
{
    char *base = (char *)c;
    if (k->kind == K_NUMBER)
        *(double *)(base + k->offset) = d;
    else if (k->kind == K_INT)
        *(int *)(base + k->offset) = (int)d;
    else if (strcmp(k->path, "limits.lua_instructions") == 0)
        *(long long *)(base + k->offset) = (long long)d;
    else
        *(size_t *)(base + k->offset) = (size_t)d;
}

/* Where site.yaml sets section.key (line and col), or false when it does not. */
static bool S_key_pos(const yv *doc, const char *section, const char *key, int *line, int *col)
{
    if (!doc || doc->type != YV_MAP)
        return false;
    for (size_t i = 0; i < doc->n; i++) {
        const yv *v = doc->items[i];
        if (strcmp(doc->keys[i], section) != 0 || v->type != YV_MAP)
            continue;
        for (size_t j = 0; j < v->n; j++) {
            if (strcmp(v->keys[j], key) == 0) {
                *line = v->key_lines[j];
                *col = v->key_cols[j];
                return true;
            }
        }
    }
    return false;
}

int config_ceilings(config *c, const char *spec, diag_list *dl)
{
    size_t before = dl->errors;
    size_t nkeys = sizeof S_keys / sizeof S_keys[0];
    double pin[sizeof S_keys / sizeof S_keys[0]];
    bool pinned[sizeof S_keys / sizeof S_keys[0]] = {false};
    bool no_unsafe = false;
    const char *p = spec ? spec : "";
    while (*p) {
        size_t n = strcspn(p, ",");
        char *item = xstrndup(p, n);
        p += n + (p[n] == ',');
        char *eq = strchr(item, '=');
        char *end = NULL;
        double d = eq ? strtod(eq + 1, &end) : 0;
        if (!eq || end == eq + 1 || *end || !(d >= 0) || isinf(d)) {
            if (item[0])
                diag_error(dl, NULL, 0, 0,
                           "KVSITE_LIMITS: \"%s\" is not NAME=NUMBER (names: the limits.* "
                           "keys of site.yaml without \"limits.\", and unsafe=0)",
                           item);
            free(item);
            continue;
        }
        *eq = '\0';
        if (strcmp(item, "unsafe") == 0) {
            if (d != 0 && d != 1)
                diag_error(dl, NULL, 0, 0, "KVSITE_LIMITS: unsafe must be 0 or 1");
            no_unsafe |= d == 0;
            free(item);
            continue;
        }
        size_t k = 0;
        for (; k < nkeys; k++)
            if (strncmp(S_keys[k].path, "limits.", 7) == 0 && strcmp(S_keys[k].path + 7, item) == 0)
                break;
        if (k == nkeys) {
            diag_error(dl, NULL, 0, 0, "KVSITE_LIMITS: unknown limit \"%s\"", item);
        } else if (!(d >= S_keys[k].min && d <= S_keys[k].max) && !(d == 0 && S_keys[k].min == 0)) {
            diag_error(dl, NULL, 0, 0, "KVSITE_LIMITS: %s must be between %g and %g, not %g",
                       item, S_keys[k].min, S_keys[k].max, d);
        } else if (!pinned[k] || d < pin[k]) {
            /* the same limit pinned twice: the lower ceiling holds */
            pinned[k] = true;
            pin[k] = d == 0 ? INFINITY : d; /* worker_memory=0: no ceiling */
        }
        free(item);
    }
    if (dl->errors != before)
        return -1;
    for (size_t k = 0; k < nkeys; k++) {
        if (!pinned[k])
            continue;
        const key_spec *ks = &S_keys[k];
        double v = S_get_num(c, ks);
        if (v <= pin[k])
            continue;
        int line = 0, col = 0;
        if (S_key_pos(c->doc, "limits", ks->path + 7, &line, &col)) {
            buf have = BUF_INIT, ceil = BUF_INIT;
            buf_printf(&have, isinf(v) ? "0 (none)" : "%.17g", v);
            buf_printf(&ceil, "%.17g", pin[k]);
            diag_error(dl, CONFIG_FILE, line, col,
                       "%s is %s, above the ceiling %s that KVSITE_LIMITS (or --limits) sets",
                       ks->path, buf_cstr(&have), buf_cstr(&ceil));
            buf_free(&have);
            buf_free(&ceil);
        } else {
            S_put_num(c, ks, pin[k]); /* a default above the ceiling: the ceiling */
        }
    }
    if (no_unsafe && c->unsafe_html) {
        int line = 0, col = 0;
        S_key_pos(c->doc, "markdown", "unsafe", &line, &col);
        diag_error(dl, CONFIG_FILE, line, col,
                   "markdown.unsafe is true, but KVSITE_LIMITS (or --no-unsafe) forbids it");
    }
    return dl->errors == before ? 0 : -1;
}

int config_load(config *c, const char *root, diag_list *dl)
{
    if (S_load(c, root, dl) != 0 || theme_check(c, dl) != 0)
        return -1;
    return config_ceilings(c, getenv("KVSITE_LIMITS"), dl);
}
