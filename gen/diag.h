/* diag: kvsite's one error type and the one place that prints diagnostics.
 *
 * A diagnostic is a located message: file:line:col, a level and a text. Code
 * that can fail returns an int status (0 ok, -1 failed) and appends what went
 * wrong to a diag_list that its caller owns; nothing else prints.
 *
 * file is a path relative to the project root (as the user typed it in the
 * tree); line and col are 1-based, 0 when unknown (then omitted in output).
 * col counts bytes where a diagnostic is made (parsers work in bytes);
 * diag_code_point_columns turns it into code points, what editors such as
 * VS Code and GitHub's annotations count, before the list is printed. */
#ifndef KV_DIAG_H
#define KV_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

typedef enum { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE } diag_level;

typedef struct {
    char *file; /* owned; NULL for diagnostics with no file */
    int line, col;
    diag_level level;
    char *msg; /* owned */
} diag;

typedef struct {
    diag *v;
    size_t n, cap;
    size_t errors, warnings;
    size_t cp_done; /* v[0..cp_done) have code point columns already */
} diag_list;

void diag_list_init(diag_list *dl);
void diag_list_free(diag_list *dl);

/* Appends a diagnostic; file may be NULL. The list copies file and message. */
void diag_add(diag_list *dl, diag_level level, const char *file, int line, int col,
              const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void diag_error(diag_list *dl, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void diag_warning(diag_list *dl, const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Moves every diagnostic of src to the end of dst; src is left empty. */
void diag_move(diag_list *dst, diag_list *src);

/* Moves every diagnostic of src to the end of dst, keeping one of those that
 * are alike (same level, file, line, col and message): the error of a broken
 * template that every page using it reports. The one kept says how many:
 * "... (broke 3 pages)" for an error, "(in 3 pages)" for a warning or note.
 * src holds one diagnostic per page and problem; it is left empty. */
void diag_move_merged(diag_list *dst, diag_list *src);

/* A page's run of one kind of warning (raw HTML, unverified figures), which
 * a page can repeat thousands of times: the first DIAG_FOLD_SHOWN are listed,
 * the rest become one warning at the first of them that says how many and
 * to which line they go. Errors are never folded (every error is reported):
 * a fold made with on = false lists every one. Zeroed by diag_fold_init. */
#define DIAG_FOLD_SHOWN 10
typedef struct {
    bool on;
    size_t shown, more;
    int line, col;  /* the first one not listed */
    int last_line;  /* the last one not listed */
} diag_fold;

void diag_fold_init(diag_fold *f, bool on);
/* Whether the one at line:col is to be listed; otherwise it is counted. */
bool diag_fold_take(diag_fold *f, int line, int col);
/* The warning for those not listed, if any: "N more MANY in this file, from
 * here to line L (not listed one by one)", ONE for a single one. */
void diag_fold_end(diag_fold *f, diag_list *dl, const char *file, const char *one,
                   const char *many);

/* Turns the byte column of every diagnostic not yet converted into a column
 * in code points, reading each file it names (relative to root, beneath it,
 * at most max_bytes; one read per file). A file that cannot be read leaves
 * its columns in bytes. Call it on the whole list before printing it. */
void diag_code_point_columns(diag_list *dl, const char *root, size_t max_bytes);

/* Keeps the first diagnostic whose message starts with prefix and removes
 * the others, which its message then counts: "... (and N more WHAT)". For
 * one cause that fails many things alike (a full disk). */
void diag_keep_first(diag_list *dl, const char *prefix, const char *what);

/* Turns every warning into an error (--strict). */
void diag_promote_warnings(diag_list *dl);

/* Sorts by file, line, col, then keeps insertion order (stable), so the
 * report reads like a compiler's and two builds print the same. */
void diag_sort(diag_list *dl);

/* Prints every diagnostic as `file:line:col: level: message`. With github,
 * errors and warnings are also printed as GitHub Actions workflow commands. */
void diag_print(const diag_list *dl, FILE *out, bool github);

const char *diag_level_name(diag_level level);

/* One located line that is not a diagnostic (check --diff's changes), cleaned
 * as diag_print cleans: `file:line:col: msg` (line and col omitted when 0),
 * and with gh_kind ("notice", "warning") also the GitHub workflow command
 * `::notice file=,line=,col=::msg` after it. */
void diag_print_line(FILE *out, const char *file, int line, int col, const char *msg,
                     const char *gh_kind);

#endif
