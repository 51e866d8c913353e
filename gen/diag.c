#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

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

/* Workflow commands end at a newline and treat % specially. */
static void S_put_gh_escaped(FILE *out, const char *s, bool property)
{
    for (; *s; s++) {
        if (*s == '%')
            fputs("%25", out);
        else if (*s == '\r')
            fputs("%0D", out);
        else if (*s == '\n')
            fputs("%0A", out);
        else if (property && *s == ':')
            fputs("%3A", out);
        else if (property && *s == ',')
            fputs("%2C", out);
        else
            fputc(*s, out);
    }
}

void diag_print(const diag_list *dl, FILE *out, bool github)
{
    for (size_t i = 0; i < dl->n; i++) {
        const diag *d = &dl->v[i];
        if (d->file) {
            fputs(d->file, out);
            if (d->line > 0) {
                fprintf(out, ":%d", d->line);
                if (d->col > 0)
                    fprintf(out, ":%d", d->col);
            }
            fputs(": ", out);
        } else {
            fputs("kvsite: ", out);
        }
        fprintf(out, "%s: %s\n", diag_level_name(d->level), d->msg);
    }
    if (!github)
        return;
    for (size_t i = 0; i < dl->n; i++) {
        const diag *d = &dl->v[i];
        if (d->level == DIAG_NOTE)
            continue;
        fprintf(out, "::%s", d->level == DIAG_ERROR ? "error" : "warning");
        if (d->file) {
            fputs(" file=", out);
            S_put_gh_escaped(out, d->file, true);
            if (d->line > 0)
                fprintf(out, ",line=%d", d->line);
            if (d->col > 0)
                fprintf(out, ",col=%d", d->col);
        }
        fputs("::", out);
        S_put_gh_escaped(out, d->msg, false);
        fputc('\n', out);
    }
}
