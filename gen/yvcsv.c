/* yvcsv: yv_parse_csv (yv.h), RFC 4180 with a header row: one map per
 * row, cells typed like YAML plain scalars (yv_build.h's yvb_resolve). */
#include "yv.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "yv_build.h"

typedef struct {
    buf text;
    int line, col;
} S_cell;

typedef struct {
    yvb_builder b;
    const char *s;
    size_t len, pos;
    int line;
    size_t line_start;
    S_cell *cells;
    size_t ncells, cap;
} S_csv;

static int S_csv_col(const S_csv *c, size_t pos) { return yvb_clamp((long long)(pos - c->line_start) + 1); }

static int S_csv_fail(S_csv *c, int line, int col, const char *msg)
{
    diag_error(c->b.dl, c->b.file, line, col, "invalid CSV: %s", msg);
    return -1;
}

static void S_csv_newline(S_csv *c, size_t next)
{
    c->line++;
    c->line_start = next;
}

/* Reads one quoted or plain field into cell. */
static int S_csv_field(S_csv *c, S_cell *cell)
{
    const char *s = c->s;
    if (c->pos < c->len && s[c->pos] == '"') {
        c->pos++;
        for (;;) {
            if (c->pos >= c->len)
                return S_csv_fail(c, cell->line, cell->col, "unterminated quoted field");
            char ch = s[c->pos++];
            if (ch == '"') {
                if (c->pos < c->len && s[c->pos] == '"') {
                    c->pos++;
                } else {
                    break;
                }
            } else if (ch == '\n') {
                S_csv_newline(c, c->pos);
            }
            buf_putc(&cell->text, ch);
        }
        if (c->pos < c->len && s[c->pos] != ',' && s[c->pos] != '\n' && s[c->pos] != '\r')
            return S_csv_fail(c, c->line, S_csv_col(c, c->pos),
                              "unexpected character after a closing quote");
        return 0;
    }
    size_t start = c->pos;
    while (c->pos < c->len && s[c->pos] != ',' && s[c->pos] != '\n' && s[c->pos] != '\r') {
        if (s[c->pos] == '"')
            return S_csv_fail(c, c->line, S_csv_col(c, c->pos), "quote in an unquoted field");
        c->pos++;
    }
    buf_put(&cell->text, s + start, c->pos - start);
    return 0;
}

/* Reads one record into c->cells; the caller has skipped blank lines. */
static int S_csv_record(S_csv *c)
{
    c->ncells = 0;
    for (;;) {
        if (c->ncells == c->cap) {
            size_t cap = c->cap ? c->cap * 2 : 16;
            c->cells = xrealloc(c->cells, cap * sizeof *c->cells);
            for (size_t k = c->cap; k < cap; k++)
                buf_init(&c->cells[k].text);
            c->cap = cap;
        }
        S_cell *cell = &c->cells[c->ncells++];
        buf_clear(&cell->text);
        cell->line = c->line;
        cell->col = S_csv_col(c, c->pos);
        if (S_csv_field(c, cell) < 0)
            return -1;
        if (c->pos >= c->len)
            return 0;
        char ch = c->s[c->pos];
        if (ch == ',') {
            c->pos++;
            continue;
        }
        if (ch == '\r') {
            if (c->pos + 1 >= c->len || c->s[c->pos + 1] != '\n')
                return S_csv_fail(c, c->line, S_csv_col(c, c->pos),
                                  "carriage return without a line feed");
            c->pos++;
        }
        c->pos++;
        S_csv_newline(c, c->pos);
        return 0;
    }
}

static const char *S_cell_text(const S_cell *cell) { return cell->text.ptr ? cell->text.ptr : ""; }

/* Header names: present, and each once. */
static int S_csv_header(S_csv *c, char ***names)
{
    char **h = xmalloc(c->ncells * sizeof *h);
    for (size_t k = 0; k < c->ncells; k++)
        h[k] = xstrdup(S_cell_text(&c->cells[k]));
    *names = h;
    for (size_t k = 0; k < c->ncells; k++) {
        if (!h[k][0]) {
            diag_error(c->b.dl, c->b.file, c->cells[k].line, c->cells[k].col,
                       "empty column name in CSV header (column %zu)", k + 1);
            return -1;
        }
    }
    size_t dup, first;
    if (yvb_find_dup(h, c->ncells, &dup, &first)) {
        char *q = yvb_quoted(h[dup], strlen(h[dup]));
        diag_error(c->b.dl, c->b.file, c->cells[dup].line, c->cells[dup].col,
                   "duplicate column name %s in CSV header (first in column %zu)", q, first + 1);
        free(q);
        return -1;
    }
    return 0;
}

static int S_csv_row(S_csv *c, char **names, size_t ncols, int line)
{
    if (c->ncells != ncols) {
        diag_error(c->b.dl, c->b.file, line, 1, "CSV row has %zu cells, the header has %zu",
                   c->ncells, ncols);
        return -1;
    }
    if (!yvb_open(&c->b, YV_MAP, line, 1))
        return -1;
    for (size_t k = 0; k < ncols; k++) {
        S_cell *cell = &c->cells[k];
        yvb_key(&c->b, names[k], strlen(names[k]), cell->line, cell->col);
        yv *v = yvb_scalar(&c->b, S_cell_text(cell), cell->text.len, cell->line, cell->col);
        if (!v)
            return -1;
        yvb_resolve(v);
    }
    return yvb_close(&c->b, false); /* the header has no duplicates */
}

yv *yv_parse_csv(const char *text, size_t len, const yv_limits *lim, const char *file,
                 diag_list *dl)
{
    if (yvb_input(&text, len, &lim, file, 0, dl) < 0)
        return NULL;
    S_csv c;
    memset(&c, 0, sizeof c);
    yvb_init(&c.b, lim, file, dl);
    c.s = text;
    c.len = len;
    c.line = 1;
    if (yvb_has_bom(text, len))
        c.pos = c.line_start = 3; /* spreadsheets write one */

    char **names = NULL;
    size_t ncols = 0;
    int rc = yvb_open(&c.b, YV_SEQ, 1, 1) ? 0 : -1;
    while (rc == 0 && c.pos < len) {
        if (text[c.pos] == '\n' || (text[c.pos] == '\r' && c.pos + 1 < len && text[c.pos + 1] == '\n')) {
            c.pos += text[c.pos] == '\r' ? 2 : 1;
            S_csv_newline(&c, c.pos); /* a blank line */
            continue;
        }
        if (!names && text[c.pos] == '#') {
            /* a comment line before the header: the provenance that engine
             * logs and our measurements carry */
            const char *nl = memchr(text + c.pos, '\n', len - c.pos);
            c.pos = nl ? (size_t)(nl - text) + 1 : len;
            S_csv_newline(&c, c.pos);
            continue;
        }
        int line = c.line;
        rc = S_csv_record(&c);
        if (rc < 0)
            break;
        if (names) {
            rc = S_csv_row(&c, names, ncols, line);
        } else {
            ncols = c.ncells;
            rc = S_csv_header(&c, &names);
        }
    }
    if (rc == 0)
        rc = yvb_close(&c.b, false);
    if (names)
        for (size_t k = 0; k < ncols; k++)
            free(names[k]);
    free(names);
    for (size_t k = 0; k < c.cap; k++)
        buf_free(&c.cells[k].text);
    free(c.cells);
    return rc < 0 ? yvb_fail(&c.b) : yvb_done(&c.b);
}
