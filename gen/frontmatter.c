#include "frontmatter.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "paginate.h"
#include "utf8.h"
#include "yv.h"

/* Reads exactly n digits at s into *v (no signs, no spaces). */
static bool S_digits(const char *s, int n, int *v)
{
    *v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        *v = *v * 10 + (s[i] - '0');
    }
    return true;
}

static bool S_valid_date(const char *s)
{
    /* YYYY-MM-DD, optionally [T ]HH:MM[:SS][Z|+HH:MM|-HH:MM] */
    int y, mo, d;
    if (!S_digits(s, 4, &y) || s[4] != '-' || !S_digits(s + 5, 2, &mo) || s[7] != '-' ||
        !S_digits(s + 8, 2, &d))
        return false;
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1])
        return false;
    if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return false;
    const char *t = s + 10;
    if (!*t)
        return true;
    if (*t != 'T' && *t != ' ')
        return false;
    t++;
    int h, mi, sec;
    if (!S_digits(t, 2, &h) || t[2] != ':' || !S_digits(t + 3, 2, &mi) || h > 23 || mi > 59)
        return false;
    t += 5;
    if (*t == ':') {
        if (!S_digits(t + 1, 2, &sec) || sec > 60)
            return false;
        t += 3;
    }
    if (*t == 'Z') {
        t++;
    } else if (*t == '+' || *t == '-') {
        if (!S_digits(t + 1, 2, &h) || t[3] != ':' || !S_digits(t + 4, 2, &mi) || h > 14 ||
            mi > 59)
            return false;
        t += 6;
    }
    return *t == '\0';
}

/* ---------- front matter ---------- */

/* Finds the end of a line starting at i; returns the index after '\n' (or len). */
static size_t S_line_end(const char *t, size_t len, size_t i)
{
    const char *nl = memchr(t + i, '\n', len - i);
    return nl ? (size_t)(nl - t) + 1 : len;
}

static bool S_is_fence(const char *t, size_t a, size_t b, const char *fence)
{
    size_t n = b - a;
    while (n > 0 && (t[a + n - 1] == '\n' || t[a + n - 1] == '\r' || t[a + n - 1] == ' ' ||
                     t[a + n - 1] == '\t'))
        n--;
    return n == 3 && memcmp(t + a, fence, 3) == 0;
}

static char *S_string_field(const yv *v, const char *key, const char *file, diag_list *dl,
                            bool *bad)
{
    if (v->type == YV_STRING || v->type == YV_INT || v->type == YV_FLOAT)
        return xstrdup(v->str);
    diag_error(dl, file, v->line, v->col, "front matter \"%s\" must be a string, not %s", key,
               yv_type_a(v->type));
    *bad = true;
    return NULL;
}

/* ---------- front matter keys ---------- */

/* The keys kvsite reads itself; any other key is for templates. */
static const char *const S_KNOWN_KEYS[] = {"title", "date",   "updated", "tags",    "draft",
                                           "slug",  "template", "weight", "summary", "params"};

bool fm_key_known(const page *p, const char *key)
{
    for (size_t k = 0; k < sizeof S_KNOWN_KEYS / sizeof *S_KNOWN_KEYS; k++)
        if (!strcmp(key, S_KNOWN_KEYS[k]))
            return true;
    /* a section's (or home's) _index.md names its pages' template and how
     * many its listing shows per page */
    return p->kind != PAGE_REGULAR && (!strcmp(key, "page_template") || !strcmp(key, "paginate"));
}

/* Optimal string alignment distance (edits and swaps of neighbours) of two
 * short strings, in bytes; SIZE_MAX past FM_KEY_MAX. */
#define FM_KEY_MAX 32
static size_t S_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n > FM_KEY_MAX || m > FM_KEY_MAX)
        return SIZE_MAX;
    size_t d[FM_KEY_MAX + 1][FM_KEY_MAX + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < v)
                v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v)
                v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[n][m];
}

const char *fm_key_hint(const page *p, const char *key)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX, n = strlen(key);
    size_t nknown = sizeof S_KNOWN_KEYS / sizeof *S_KNOWN_KEYS;
    for (size_t k = 0; k <= nknown; k++) {
        const char *known = k < nknown ? S_KNOWN_KEYS[k]
                            : p->kind != PAGE_REGULAR ? "page_template" : NULL;
        if (!known)
            continue;
        size_t d = S_distance(key, known);
        /* a slip, not another word: at most 2 edits, and fewer than a third
         * of the longer name ("tag" is tags, "foo" is not tags) */
        size_t longer = n > strlen(known) ? n : strlen(known);
        if (d < best_d && d <= 2 && 3 * d <= longer) {
            best = known;
            best_d = d;
        }
    }
    return best;
}

/* params: a map of keys for templates, merged into page.params; a key both
 * there and at the top level is an error, since one would hide the other. */
static void S_check_params(const yv *fm, const yv *pm, const char *file, diag_list *dl)
{
    if (pm->type != YV_MAP) {
        diag_error(dl, file, pm->line, pm->col,
                   "front matter \"params\" must be a map of keys for templates, not %s",
                   yv_type_a(pm->type));
        return;
    }
    for (size_t k = 0; k < pm->n; k++) {
        if (strcmp(pm->keys[k], "params") != 0 && !yv_get(fm, pm->keys[k]))
            continue;
        diag_error(dl, file, pm->key_lines[k], pm->key_cols[k],
                   "\"%s\" is both a top-level front matter key and a key of params:",
                   pm->keys[k]);
    }
}

/* A hint for a page without a title: a key that looks like a slip of it. */
static void S_no_title(const page *p, const yv *fm, const char *file, diag_list *dl)
{
    for (size_t k = 0; k < (fm->type == YV_MAP ? fm->n : 0); k++) {
        const char *hint = fm_key_known(p, fm->keys[k])
                               ? NULL
                               : fm_key_hint(p, fm->keys[k]);
        if (hint && !strcmp(hint, "title")) {
            diag_error(dl, file, fm->key_lines[k], fm->key_cols[k],
                       "front matter has no \"title\"; did you mean title, not \"%s\"?",
                       fm->keys[k]);
            return;
        }
    }
    diag_error(dl, file, 2, 1, "front matter has no \"title\"");
}

int fm_parse_page(page *p, const char *text, size_t len, const config *cfg, diag_list *dl)
{
    const char *file = p->src;
    size_t errors = dl->errors;
    size_t first_end = S_line_end(text, len, 0);
    if (!S_is_fence(text, 0, first_end, "---")) {
        diag_error(dl, file, 1, 1,
                   "missing front matter: a page starts with a line \"---\", then YAML "
                   "(title: ...), then a closing \"---\"");
        return -1;
    }
    size_t i = first_end, yaml_start = first_end, yaml_end = 0;
    int line = 2;
    bool closed = false;
    while (i < len) {
        size_t e = S_line_end(text, len, i);
        if (S_is_fence(text, i, e, "---") || S_is_fence(text, i, e, "...")) {
            yaml_end = i;
            i = e;
            closed = true;
            break;
        }
        i = e;
        line++;
    }
    if (!closed) {
        diag_error(dl, file, 1, 1,
                   "front matter is not terminated: no closing \"---\" line after the opening one");
        return -1;
    }
    if (yaml_end - yaml_start > cfg->limits.front_matter_bytes) {
        diag_error(dl, file, 2, 1, "front matter too large (%zu bytes, limit %zu: limits.front_matter_bytes)",
                   yaml_end - yaml_start, cfg->limits.front_matter_bytes);
        return -1;
    }
    p->body_off = i;
    p->body_line = line + 1;
    yv_limits lim = yv_default_limits;
    lim.max_bytes = cfg->limits.front_matter_bytes;
    lim.max_depth = cfg->limits.depth;
    yv *fm = yv_parse_yaml(text + yaml_start, yaml_end - yaml_start, &lim, file, 1, dl);
    if (!fm)
        return -1;
    if (fm->type == YV_NULL) {
        /* an empty header: treated as an empty map */
    } else if (fm->type != YV_MAP) {
        diag_error(dl, file, fm->line, fm->col, "front matter must be a map of keys (title: ...), not %s",
                   yv_type_a(fm->type));
        yv_free(fm);
        return -1;
    }
    p->front = fm;
    bool bad = false;
    for (size_t k = 0; k < (fm->type == YV_MAP ? fm->n : 0); k++) {
        const char *key = fm->keys[k];
        const yv *v = fm->items[k];
        if (strcmp(key, "title") == 0) {
            p->title = S_string_field(v, key, file, dl, &bad);
        } else if (strcmp(key, "summary") == 0) {
            p->summary = S_string_field(v, key, file, dl, &bad);
        } else if (strcmp(key, "date") == 0 || strcmp(key, "updated") == 0) {
            char *d = S_string_field(v, key, file, dl, &bad);
            if (d && !S_valid_date(d)) {
                diag_error(dl, file, v->line, v->col,
                           "front matter \"%s\": \"%s\" is not a date (YYYY-MM-DD, optionally with a time)",
                           key, d);
                free(d);
                d = NULL;
            }
            if (key[0] == 'd')
                p->date = d;
            else
                p->updated = d;
        } else if (strcmp(key, "slug") == 0) {
            p->slug = S_string_field(v, key, file, dl, &bad);
            if (p->slug && !content_safe_segment(p->slug)) {
                diag_error(dl, file, v->line, v->col,
                           "slug \"%s\" is not a safe path segment (letters, digits, '-', '_', '.'; not starting with '.'; no '/')",
                           p->slug);
                free(p->slug);
                p->slug = NULL;
            }
        } else if (strcmp(key, "template") == 0) {
            p->template_name = S_string_field(v, key, file, dl, &bad);
            const char *t = p->template_name;
            if (t && (t[0] == '/' || strstr(t, "..") || !content_safe_segment(strrchr(t, '/') ? strrchr(t, '/') + 1 : t))) {
                diag_error(dl, file, v->line, v->col,
                           "template \"%s\" must be a file name under templates/ without \"..\"", t);
                free(p->template_name);
                p->template_name = NULL;
            }
        } else if (strcmp(key, "draft") == 0) {
            if (v->type != YV_BOOL)
                diag_error(dl, file, v->line, v->col, "front matter \"draft\" must be true or false, not %s",
                           yv_type_a(v->type));
            else
                p->draft = v->b;
        } else if (strcmp(key, "paginate") == 0 && p->kind != PAGE_REGULAR) {
            int per;
            paginate_check(v, file, &per, dl);
        } else if (strcmp(key, "weight") == 0) {
            if (v->type != YV_INT)
                diag_error(dl, file, v->line, v->col, "front matter \"weight\" must be an integer, not %s",
                           yv_type_a(v->type));
            else
                p->weight = v->i;
        } else if (strcmp(key, "tags") == 0) {
            if (v->type != YV_SEQ) {
                diag_error(dl, file, v->line, v->col,
                           "front matter \"tags\" must be a list of strings (tags: [a, b]), not %s",
                           yv_type_a(v->type));
                continue;
            }
            /* each tag page lists its pages with all their tags: without a cap
             * per page the output grows with the square of the tags */
            if (v->n > cfg->limits.page_tags) {
                diag_error(dl, file, v->line, v->col,
                           "%zu tags, more than limits.page_tags (%zu)", v->n,
                           cfg->limits.page_tags);
                continue;
            }
            p->tags = xcalloc(v->n ? v->n : 1, sizeof *p->tags);
            for (size_t t = 0; t < v->n; t++) {
                const yv *tv = v->items[t];
                if (tv->type != YV_STRING && tv->type != YV_INT) {
                    diag_error(dl, file, tv->line, tv->col, "a tag must be a string, not %s",
                               yv_type_a(tv->type));
                    continue;
                }
                char *slug = content_slugify(tv->str);
                if (!slug[0]) {
                    diag_error(dl, file, tv->line, tv->col,
                               "tag \"%s\" has no letters or digits to make a URL from", tv->str);
                    free(slug);
                    continue;
                }
                free(slug);
                p->tags[p->ntags++] = xstrdup(tv->str);
            }
        } else if (strcmp(key, "params") == 0) {
            S_check_params(fm, v, file, dl);
        }
    }
    (void)bad;
    if (!p->title && dl->errors == errors)
        S_no_title(p, fm, file, dl);
    return dl->errors == errors ? 0 : -1;
}


void fm_page_clear(page *p)
{
    free(p->title);
    free(p->date);
    free(p->updated);
    free(p->summary);
    free(p->slug);
    free(p->template_name);
    for (size_t i = 0; i < p->ntags; i++)
        free(p->tags[i]);
    free(p->tags);
    yv_free(p->front);
    p->title = p->date = p->updated = p->summary = p->slug = p->template_name = NULL;
    p->tags = NULL;
    p->ntags = 0;
    p->front = NULL;
}

void fm_page_move(page *to, page *from)
{
    to->title = from->title;
    to->date = from->date;
    to->updated = from->updated;
    to->summary = from->summary;
    to->slug = from->slug;
    to->template_name = from->template_name;
    to->tags = from->tags;
    to->ntags = from->ntags;
    to->draft = from->draft;
    to->weight = from->weight;
    to->body_line = from->body_line;
    to->body_off = from->body_off;
    to->fig_marks = from->fig_marks;
    to->front = from->front;
    from->title = from->date = from->updated = from->summary = from->slug = NULL;
    from->template_name = NULL;
    from->tags = NULL;
    from->ntags = 0;
    from->front = NULL;
}
