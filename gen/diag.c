#include "diag.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fsutil.h"
#include "strmap.h"
#include "utf8.h"

void diag_list_init(diag_list *dl) { memset(dl, 0, sizeof *dl); }

void diag_list_free(diag_list *dl)
{
    for (size_t i = 0; i < dl->n; i++) {
        free(dl->v[i].file);
        free(dl->v[i].msg);
    }
    free(dl->v);
    diag_list_init(dl);
}

static void S_push(diag_list *dl, diag d)
{
    if (dl->n == dl->cap) {
        dl->cap = dl->cap ? dl->cap * 2 : 16;
        dl->v = xrealloc(dl->v, dl->cap * sizeof *dl->v);
    }
    dl->v[dl->n++] = d;
    if (d.level == DIAG_ERROR)
        dl->errors++;
    else if (d.level == DIAG_WARNING)
        dl->warnings++;
}

static void S_vadd(diag_list *dl, diag_level level, const char *file, int line, int col,
                   const char *fmt, va_list ap)
{
    buf b = BUF_INIT;
    buf_vprintf(&b, fmt, ap);
    diag d = {file ? xstrdup(file) : NULL, line, col, level, buf_detach(&b)};
    S_push(dl, d);
}

void diag_add(diag_list *dl, diag_level level, const char *file, int line, int col,
              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    S_vadd(dl, level, file, line, col, fmt, ap);
    va_end(ap);
}

void diag_error(diag_list *dl, const char *file, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    S_vadd(dl, DIAG_ERROR, file, line, col, fmt, ap);
    va_end(ap);
}

void diag_warning(diag_list *dl, const char *file, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    S_vadd(dl, DIAG_WARNING, file, line, col, fmt, ap);
    va_end(ap);
}

void diag_move(diag_list *dst, diag_list *src)
{
    for (size_t i = 0; i < src->n; i++)
        S_push(dst, src->v[i]);
    free(src->v);
    diag_list_init(src);
}

void diag_move_merged(diag_list *dst, diag_list *src)
{
    strmap first; /* "level line col file\nmsg" -> 1 + index in src of its first */
    strmap_init(&first);
    size_t *count = xcalloc(src->n + 1, sizeof *count);
    buf key = BUF_INIT;
    for (size_t i = 0; i < src->n; i++) {
        const diag *d = &src->v[i];
        buf_clear(&key);
        buf_printf(&key, "%d %d %d %s\n%s", (int)d->level, d->line, d->col,
                   d->file ? d->file : "", d->msg);
        uintptr_t at = (uintptr_t)strmap_get(&first, buf_cstr(&key));
        if (at) {
            count[at - 1]++;
            count[i] = 0;
        } else {
            strmap_put(&first, buf_cstr(&key), (void *)(uintptr_t)(i + 1));
            count[i] = 1;
        }
    }
    for (size_t i = 0; i < src->n; i++) {
        diag *d = &src->v[i];
        if (!count[i]) {
            free(d->file);
            free(d->msg);
            continue;
        }
        if (count[i] > 1) {
            char *m = xasprintf("%s (%s %zu pages)", d->msg,
                                d->level == DIAG_ERROR ? "broke" : "in", count[i]);
            free(d->msg);
            d->msg = m;
        }
        S_push(dst, *d);
    }
    buf_free(&key);
    free(count);
    strmap_free(&first);
    free(src->v);
    diag_list_init(src);
}

/* A file read for its columns: its text and where each line starts. */
typedef struct {
    buf text;
    bool ok;
    size_t *starts; /* starts[l - 1]: offset of line l */
    size_t nlines;
} S_cpfile;

static void S_cpfile_free(void *p)
{
    S_cpfile *f = p;
    buf_free(&f->text);
    free(f->starts);
    free(f);
}

static S_cpfile *S_cpfile_get(strmap *files, const char *root, const char *rel, size_t max)
{
    S_cpfile *f = strmap_get(files, rel);
    if (f)
        return f;
    f = xcalloc(1, sizeof *f);
    f->ok = fs_read_in(root, rel, max, &f->text) == FS_OK;
    if (f->ok) {
        size_t cap = 64;
        f->starts = xmalloc(cap * sizeof *f->starts);
        f->starts[f->nlines++] = 0;
        const char *t = f->text.ptr ? f->text.ptr : "", *end = t + f->text.len;
        for (const char *p = t; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++) {
            if (f->nlines == cap)
                f->starts = xrealloc(f->starts, (cap *= 2) * sizeof *f->starts);
            f->starts[f->nlines++] = (size_t)(p + 1 - t);
        }
    }
    strmap_put(files, rel, f);
    return f;
}

void diag_code_point_columns(diag_list *dl, const char *root, size_t max_bytes)
{
    strmap files;
    strmap_init(&files);
    for (size_t i = dl->cp_done; i < dl->n; i++) {
        diag *d = &dl->v[i];
        if (!d->file || d->line <= 0 || d->col <= 1)
            continue;
        S_cpfile *f = S_cpfile_get(&files, root, d->file, max_bytes);
        if (!f->ok || (size_t)d->line > f->nlines)
            continue;
        const char *t = f->text.ptr;
        size_t at = f->starts[d->line - 1];
        size_t end = (size_t)d->line < f->nlines ? f->starts[d->line] - 1 : f->text.len;
        if (end > at && t[end - 1] == '\r')
            end--;
        /* columns on the first line count from after a byte order mark */
        if (d->line == 1 && end - at >= 3 && !memcmp(t, "\xEF\xBB\xBF", 3))
            at += 3;
        d->col = utf8_column(t + at, end - at, d->col);
    }
    dl->cp_done = dl->n;
    strmap_free_with(&files, S_cpfile_free);
}

void diag_fold_init(diag_fold *f, bool on) { *f = (diag_fold){.on = on}; }

bool diag_fold_take(diag_fold *f, int line, int col)
{
    if (!f->on || f->shown < DIAG_FOLD_SHOWN) {
        f->shown++;
        return true;
    }
    if (f->more++ == 0) {
        f->line = line;
        f->col = col;
    }
    f->last_line = line;
    return false;
}

void diag_fold_end(diag_fold *f, diag_list *dl, const char *file, const char *one,
                   const char *many)
{
    if (f->more)
        diag_warning(dl, file, f->line, f->col,
                     "%zu more %s in this file, from here to line %d (not listed one by one)",
                     f->more, f->more == 1 ? one : many, f->last_line);
    f->more = 0;
}

void diag_keep_first(diag_list *dl, const char *prefix, const char *what)
{
    size_t plen = strlen(prefix), first = SIZE_MAX, more = 0, to = 0, cp_done = 0;
    for (size_t i = 0; i < dl->n; i++) {
        if (i == dl->cp_done)
            cp_done = to; /* the converted ones kept stay first */
        diag *d = &dl->v[i];
        if (strncmp(d->msg, prefix, plen) == 0 && first != SIZE_MAX) {
            more++;
            if (d->level == DIAG_ERROR)
                dl->errors--;
            else if (d->level == DIAG_WARNING)
                dl->warnings--;
            free(d->file);
            free(d->msg);
            continue;
        }
        if (strncmp(d->msg, prefix, plen) == 0)
            first = to;
        dl->v[to++] = *d;
    }
    dl->cp_done = dl->cp_done >= dl->n ? to : cp_done;
    dl->n = to;
    if (more) {
        diag *d = &dl->v[first];
        char *msg = xasprintf("%s (and %zu more %s)", d->msg, more, what);
        free(d->msg);
        d->msg = msg;
    }
}

void diag_promote_warnings(diag_list *dl)
{
    for (size_t i = 0; i < dl->n; i++) {
        if (dl->v[i].level == DIAG_WARNING) {
            dl->v[i].level = DIAG_ERROR;
            dl->warnings--;
            dl->errors++;
        }
    }
}

static int S_cmp(const diag *a, const diag *b)
{
    const char *fa = a->file ? a->file : "", *fb = b->file ? b->file : "";
    int c = strcmp(fa, fb);
    if (c)
        return c;
    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    if (a->col != b->col)
        return a->col < b->col ? -1 : 1;
    return 0;
}

void diag_sort(diag_list *dl)
{
    /* insertion sort keeps equal keys in order; lists are short */
    for (size_t i = 1; i < dl->n; i++) {
        diag d = dl->v[i];
        size_t j = i;
        while (j > 0 && S_cmp(&dl->v[j - 1], &d) > 0) {
            dl->v[j] = dl->v[j - 1];
            j--;
        }
        dl->v[j] = d;
    }
}

const char *diag_level_name(diag_level level)
{
    switch (level) {
    case DIAG_ERROR: return "error";
    case DIAG_WARNING: return "warning";
    default: return "note";
    }
}

/* How S_put_clean writes a string: a line of the log, or the message or a
 * property of a GitHub workflow command. */
typedef enum { S_PLAIN, S_GH_MSG, S_GH_PROP } S_clean;

/* s into b, such that it cannot end the line, start another, or reach the
 * terminal as a control: page text (print, error) and file names come from
 * the pull request. Line breaks show as \n and \r (in workflow commands
 * percent-encoded, as GitHub decodes them), other C0 and C1 controls, DEL
 * and bytes that are not UTF-8 as \xNN (C1 as \u0080..\u009f). Tabs stay.
 * Workflow commands also encode '%', and ':' and ',' in properties. */
static void S_put_clean(buf *b, const char *str, S_clean how)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned char c = *s;
        if (c >= 0x20 && c < 0x7f) {
            if (how != S_PLAIN && c == '%')
                buf_puts(b, "%25");
            else if (how == S_GH_PROP && c == ':')
                buf_puts(b, "%3A");
            else if (how == S_GH_PROP && c == ',')
                buf_puts(b, "%2C");
            else
                buf_putc(b, (char)c);
            s++;
        } else if (c == '\t') {
            buf_putc(b, (char)c);
            s++;
        } else if (c == '\n' || c == '\r') {
            buf_puts(b, how == S_PLAIN ? (c == '\n' ? "\\n" : "\\r") : (c == '\n' ? "%0A" : "%0D"));
            s++;
        } else if (c < 0x80) {
            buf_printf(b, "\\x%02x", c);
            s++;
        } else {
            size_t n = utf8_char_len(s), k = 1;
            while (k < n && s[k])
                k++;
            if (k < n || !utf8_valid((const char *)s, n, NULL)) {
                buf_printf(b, "\\x%02x", c);
                s++;
            } else if (c == 0xc2 && s[1] < 0xa0) {
                buf_printf(b, "\\u%04x", (unsigned)s[1]); /* C1: U+0080..U+009F */
                s += 2;
            } else {
                buf_put(b, (const char *)s, n);
                s += n;
            }
        }
    }
}

/* The line `file:line:col: ` (or `kvsite: ` for none) into b. */
static void S_put_place(buf *b, const char *file, int line, int col)
{
    if (!file) {
        buf_puts(b, "kvsite: ");
        return;
    }
    S_put_clean(b, file, S_PLAIN);
    if (line > 0) {
        buf_printf(b, ":%d", line);
        if (col > 0)
            buf_printf(b, ":%d", col);
    }
    buf_puts(b, ": ");
}

/* A workflow command for GitHub's annotations into b: ::kind file=F,line=L,col=C::msg */
static void S_put_workflow(buf *b, const char *kind, const char *file, int line, int col,
                           const char *msg)
{
    buf_printf(b, "::%s", kind);
    if (file) {
        buf_puts(b, " file=");
        S_put_clean(b, file, S_GH_PROP);
        if (line > 0)
            buf_printf(b, ",line=%d", line);
        if (line > 0 && col > 0)
            buf_printf(b, ",col=%d", col);
    }
    buf_puts(b, "::");
    S_put_clean(b, msg, S_GH_MSG);
    buf_putc(b, '\n');
}

/* Writes b's whole lines to out once it holds FLUSH_AT bytes (force: all
 * of it). stderr is unbuffered: a build with 60,000 broken links wrote
 * its report a character a system call, 13 s of it. */
#define FLUSH_AT ((size_t)64 << 10)
static void S_flush(buf *b, FILE *out, bool force)
{
    if (b->len && (force || b->len >= FLUSH_AT)) {
        fwrite(b->ptr, 1, b->len, out);
        buf_clear(b);
    }
}

void diag_print(const diag_list *dl, FILE *out, bool github)
{
    buf b = BUF_INIT;
    for (size_t i = 0; i < dl->n; i++) {
        const diag *d = &dl->v[i];
        S_put_place(&b, d->file, d->line, d->col);
        buf_printf(&b, "%s: ", diag_level_name(d->level));
        S_put_clean(&b, d->msg, S_PLAIN);
        buf_putc(&b, '\n');
        S_flush(&b, out, false);
    }
    for (size_t i = 0; github && i < dl->n; i++) {
        const diag *d = &dl->v[i];
        if (d->level == DIAG_NOTE)
            continue;
        S_put_workflow(&b, d->level == DIAG_ERROR ? "error" : "warning", d->file, d->line, d->col,
                       d->msg);
        S_flush(&b, out, false);
    }
    S_flush(&b, out, true);
    buf_free(&b);
}

void diag_print_line(FILE *out, const char *file, int line, int col, const char *msg,
                     const char *gh_kind)
{
    buf b = BUF_INIT;
    S_put_place(&b, file, line, col);
    S_put_clean(&b, msg, S_PLAIN);
    buf_putc(&b, '\n');
    if (gh_kind)
        S_put_workflow(&b, gh_kind, file, line, col, msg);
    S_flush(&b, out, true);
    buf_free(&b);
}
