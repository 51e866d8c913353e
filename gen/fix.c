#include "fix.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "quote.h"
#include "strmap.h"

#define S_CONTEXT 3 /* lines of context in the diff */

int fix_quote(const figure *f, buf *out, const char **why)
{
    quote q, r;
    if (f->tier == FIG_REFUTED || f->tier == FIG_CITED)
        return *why = f->tier == FIG_REFUTED ? "a refuted claim" : "a cited figure", -1;
    if (strcmp(f->mode, "=") != 0)
        return *why = "not an exact quote", -1;
    if (f->ok)
        return *why = "it passes", -1;
    if (!isfinite(f->value))
        return *why = "its expression gave no number", -1;
    if (quote_parse(f->quote, strlen(f->quote), NULL, &q, NULL) != 0)
        return *why = "its unit is not built in", -1;
    if (q.approx)
        return *why = "an approximate quote", -1;
    if (quote_check(&q, NULL, f->value, false, 0, NULL, NULL))
        return *why = "its first value agrees; another one does not", -1;
    buf b = BUF_INIT;
    quote_restate(&q, f->value, q.decimals, &b);
    /* the new quote must read back and pass the one rule */
    bool ok = quote_parse(b.ptr, b.len, NULL, &r, NULL) == 0 &&
              quote_check(&r, NULL, f->value, false, 0, NULL, NULL);
    if (ok)
        buf_put(out, b.ptr, b.len);
    buf_free(&b);
    return ok ? 0 : (*why = "the value does not fit in a quote (more than 15 digits)", -1);
}

long fix_locate(const char *text, size_t len, int line, const char *q, size_t nth)
{
    size_t i = 0, qn = strlen(q);
    for (int l = 1; l < line; l++) {
        const char *nl = memchr(text + i, '\n', len - i);
        if (!nl)
            return -1;
        i = (size_t)(nl - text) + 1;
    }
    if (line < 1 || qn == 0)
        return -1;
    const char *nl = memchr(text + i, '\n', len - i);
    size_t end = nl ? (size_t)(nl - text) : len;
    for (size_t p = i; p + qn <= end; p++) {
        if (text[p] != q[0] || memcmp(text + p, q, qn) != 0)
            continue;
        size_t b = p, a = p + qn;
        while (b > i && (text[b - 1] == ' ' || text[b - 1] == '\t'))
            b--;
        while (a < end && (text[a] == ' ' || text[a] == '\t'))
            a++;
        if (b == i || text[b - 1] != '`' || a >= end || text[a] != '{')
            continue;
        /* a figure span, not code that looks like one: up to its backtick */
        const char *close = memchr(text + a, '`', len - a);
        if (!close || fig_classify(text + p, (size_t)(close - (text + p))) != SPAN_FIGURE)
            continue;
        if (nth-- == 0)
            return (long)p;
    }
    return -1;
}

/* ---------- the diff ---------- */

typedef struct {
    const char *s;
    size_t n; /* with its newline, if it has one */
} S_line;

static S_line *S_lines(const char *t, size_t len, size_t *n)
{
    size_t cap = 16;
    S_line *v = xmalloc(cap * sizeof *v);
    *n = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(t + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - t) + 1 : len;
        if (*n == cap)
            v = xrealloc(v, (cap *= 2) * sizeof *v);
        v[(*n)++] = (S_line){t + i, e - i};
        i = e;
    }
    return v;
}

static void S_diff_line(buf *out, char mark, S_line l)
{
    buf_putc(out, mark);
    buf_put(out, l.s, l.n);
    if (l.n == 0 || l.s[l.n - 1] != '\n')
        buf_puts(out, "\n\\ No newline at end of file\n");
}

static bool S_same(S_line a, S_line b) { return a.n == b.n && memcmp(a.s, b.s, a.n) == 0; }

void fix_udiff(buf *out, const char *rel, const char *old, size_t olen, const char *new_,
               size_t nlen)
{
    if (olen == nlen && memcmp(old, new_, olen) == 0)
        return;
    size_t no, nn;
    S_line *o = S_lines(old, olen, &no), *w = S_lines(new_, nlen, &nn);
    buf_printf(out, "--- a/%s\n+++ b/%s\n", rel, rel);
    if (no != nn) {
        /* fixes never add or remove lines; should they, one hunk says it all */
        buf_printf(out, "@@ -1,%zu +1,%zu @@\n", no, nn);
        for (size_t k = 0; k < no; k++)
            S_diff_line(out, '-', o[k]);
        for (size_t k = 0; k < nn; k++)
            S_diff_line(out, '+', w[k]);
    }
    for (size_t k = 0; no == nn && k < no;) {
        if (S_same(o[k], w[k])) {
            k++;
            continue;
        }
        /* a hunk: changed lines closer than twice the context join it */
        size_t start = k > S_CONTEXT ? k - S_CONTEXT : 0, last = k;
        for (size_t j = k + 1; j < no && j <= last + 2 * S_CONTEXT + 1; j++)
            if (!S_same(o[j], w[j]))
                last = j;
        size_t end = last + 1 + S_CONTEXT < no ? last + 1 + S_CONTEXT : no;
        buf_printf(out, "@@ -%zu,%zu +%zu,%zu @@\n", start + 1, end - start, start + 1,
                   end - start);
        for (size_t j = start; j < end;) {
            if (S_same(o[j], w[j])) {
                S_diff_line(out, ' ', o[j++]);
                continue;
            }
            size_t run = j;
            while (run < end && !S_same(o[run], w[run]))
                run++;
            for (size_t x = j; x < run; x++)
                S_diff_line(out, '-', o[x]);
            for (size_t x = j; x < run; x++)
                S_diff_line(out, '+', w[x]);
            j = run;
        }
        k = end;
    }
    free(o);
    free(w);
}

/* ---------- the files ---------- */

/* One quote to rewrite in a file. */
typedef struct {
    int line, col;
    size_t nth;       /* among the figures with this quote on its line */
    long off;         /* where it is, once found */
    const char *old;  /* the figure's quote (owned by the figures read) */
    char *new_;       /* owned */
} S_edit;

static int S_edit_cmp(const void *a, const void *b)
{
    const S_edit *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static char *S_key(const char *file, int line, int col)
{
    return xasprintf("%s\n%d\n%d", file ? file : "", line, col);
}

/* The file rel beneath root, read from the descriptor that was checked (no
 * link on the way, a regular file with one name). 0, or -1 with a reason. */
static int S_read(const char *root, const char *rel, size_t cap, buf *text, struct stat *st,
                  const char **why)
{
    int fd = fs_open_in(root, rel, O_RDONLY);
    if (fd < 0)
        return *why = errno == ELOOP || errno == EXDEV ? "a symbolic link on the way"
                                                       : strerror(errno), -1;
    int rc = fstat(fd, st) == 0 ? fs_read_fd(fd, cap, text) : FS_EOTHER;
    close(fd);
    if (rc != FS_OK)
        return *why = fs_strerror(rc, cap), -1;
    return 0;
}

/* Replaces rel beneath root by data: a new file beside it, with its mode,
 * renamed over it, unless rel changed since it was read (was). */
static int S_write(const char *root, const char *rel, const buf *data, const struct stat *was,
                   const char **why)
{
    const char *slash = strrchr(rel, '/');
    char *dir = xstrndup(rel, (size_t)(slash - rel)); /* rel is under content/ */
    const char *base = slash + 1;
    int dfd = fs_open_in(root, dir, O_RDONLY | O_DIRECTORY);
    free(dir);
    if (dfd < 0)
        return *why = strerror(errno), -1;
    struct stat st;
    if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_ino != was->st_ino || st.st_dev != was->st_dev || st.st_size != was->st_size ||
        st.st_mtim.tv_sec != was->st_mtim.tv_sec || st.st_mtim.tv_nsec != was->st_mtim.tv_nsec) {
        close(dfd);
        return *why = "the file changed while it was checked; run the check again", -1;
    }
    char tmp[64];
    snprintf(tmp, sizeof tmp, ".kvsite-fix.%ld", (long)getpid());
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int rc = fd < 0 ? -1 : fs_write_all(fd, data->ptr, data->len);
    if (rc == 0 && (fchmod(fd, st.st_mode & 07777) != 0 || fsync(fd) != 0))
        rc = -1;
    int err = errno;
    if (fd >= 0 && close(fd) != 0 && rc == 0)
        rc = -1, err = errno;
    if (rc == 0 && renameat(dfd, tmp, dfd, base) != 0)
        rc = -1, err = errno;
    if (rc != 0 && fd >= 0)
        unlinkat(dfd, tmp, 0);
    close(dfd);
    if (rc != 0)
        *why = strerror(err);
    return rc;
}

/* The first error of the check (and their count in *n) that is not at a
 * figure that computed a value or cites a source (evaluated, by
 * "file\nline\ncol"); NULL when there is none. */
static const diag *S_other_error(const build_result *r, const strmap *evaluated, size_t *n)
{
    const diag *first = NULL;
    *n = 0;
    for (size_t i = 0; i < r->dl->n; i++) {
        const diag *d = &r->dl->v[i];
        if (d->level != DIAG_ERROR)
            continue;
        char *k = S_key(d->file, d->line, d->col);
        if (!d->file || !strmap_get(evaluated, k)) {
            first = first ? first : d;
            ++*n;
        }
        free(k);
    }
    return first;
}

typedef struct {
    const fix_opts *o;
    const build_result *r;
    strmap errors_at; /* every error's location */
    buf diff;
    size_t fixed, files, failed_files;
} S_run;

/* Plans, finds and applies the fixes of one page's file. */
static void S_fix_file(S_run *x, const char *rel, const figure *figs, size_t n)
{
    S_edit *ed = xmalloc((n + 1) * sizeof *ed);
    size_t ne = 0;
    buf nq = BUF_INIT;
    FILE *err = x->o->err;
    for (size_t i = 0; i < n; i++) {
        const figure *f = &figs[i];
        char *k = S_key(rel, f->line, f->col);
        bool reported = strmap_get(&x->errors_at, k) != NULL;
        free(k);
        if (f->ok || !reported)
            continue; /* the page's figures that failed at the page's lines */
        const char *why;
        buf_clear(&nq);
        if (fix_quote(f, &nq, &why) != 0) {
            fprintf(err, "%s:%d:%d: not fixed: %s\n", rel, f->line, f->col, why);
            continue;
        }
        size_t nth = 0;
        for (size_t j = 0; j < i; j++) /* the same figure twice counts once */
            nth += figs[j].line == f->line && !strcmp(figs[j].quote, f->quote) &&
                   !(figs[j].col == f->col && !strcmp(figs[j].expr, f->expr));
        ed[ne++] = (S_edit){f->line, f->col, nth, -1, f->quote, buf_detach(&nq)};
    }
    buf_free(&nq);
    buf text = BUF_INIT, out = BUF_INIT;
    struct stat st;
    const char *why = NULL;
    if (ne && S_read(x->r->root, rel, x->r->page_bytes, &text, &st, &why) != 0) {
        fprintf(err, "%s: error: not fixed: %s\n", rel, why);
        x->failed_files++;
        for (size_t i = 0; i < ne; i++)
            free(ed[i].new_);
        ne = 0;
    }
    size_t keep = 0;
    for (size_t i = 0; i < ne; i++) {
        ed[i].off = fix_locate(text.ptr, text.len, ed[i].line, ed[i].old, ed[i].nth);
        if (ed[i].off < 0)
            fprintf(err, "%s:%d:%d: not fixed: the quote is not on its line as a figure\n", rel,
                    ed[i].line, ed[i].col);
        if (ed[i].off < 0)
            free(ed[i].new_);
        else
            ed[keep++] = ed[i];
    }
    ne = keep;
    qsort(ed, ne, sizeof *ed, S_edit_cmp);
    size_t at = 0, nfix = 0;
    for (size_t i = 0; i < ne; i++) {
        if (i > 0 && ed[i].off == ed[i - 1].off)
            continue;
        buf_put(&out, text.ptr + at, (size_t)ed[i].off - at);
        buf_puts(&out, ed[i].new_);
        at = (size_t)ed[i].off + strlen(ed[i].old);
        nfix++;
    }
    buf_put(&out, text.ptr + at, text.len - at);
    if (nfix && x->o->dry_run) {
        fix_udiff(&x->diff, rel, text.ptr, text.len, out.ptr, out.len);
    } else if (nfix && S_write(x->r->root, rel, &out, &st, &why) != 0) {
        fprintf(err, "%s: error: not fixed: %s\n", rel, why);
        x->failed_files++;
        nfix = 0;
    }
    for (size_t i = 0; i < ne; i++) {
        if (nfix && !x->o->dry_run && !(i > 0 && ed[i].off == ed[i - 1].off))
            fprintf(x->o->out, "%s:%d:%d: fixed: %s -> %s\n", rel, ed[i].line, ed[i].col,
                    ed[i].old, ed[i].new_);
        free(ed[i].new_);
    }
    x->fixed += nfix;
    x->files += nfix > 0;
    buf_free(&text);
    buf_free(&out);
    free(ed);
}

int fix_after_check(void *ctx, const build_result *r)
{
    const fix_opts *o = ctx;
    S_run x = {.o = o, .r = r};
    strmap evaluated;
    strmap_init(&evaluated);
    strmap_init(&x.errors_at);
    record_figs_buf fb = {0};
    int status = 0;
    /* every failing figure of a page that computed a value, where it is */
    for (size_t j = 0; j < r->nrecords && status == 0; j++) {
        const page_record *rec = &r->records[j];
        const figure *figs = rec->nfigs ? record_figures(rec, r->figs, &fb) : NULL;
        if (rec->nfigs && !figs) {
            fprintf(o->err, "kvsite: check --fix: cannot read the figures of %s\n", rec->src);
            status = 1;
        }
        for (size_t i = 0; figs && i < rec->nfigs; i++) {
            /* cited figures have no value, and their errors are no parse errors */
            if (figs[i].ok || (!isfinite(figs[i].value) && figs[i].tier != FIG_CITED))
                continue;
            char *k = S_key(rec->src, figs[i].line, figs[i].col);
            strmap_put(&evaluated, k, (void *)1);
            free(k);
        }
    }
    size_t other;
    const diag *first = status ? NULL : S_other_error(r, &evaluated, &other);
    if (first) {
        fprintf(o->err,
                "kvsite: check --fix: refused, nothing written: %zu error%s %s not about a "
                "figure's value (the first: %s:%d:%d: %s); fix %s, then run --fix again\n",
                other, other == 1 ? "" : "s", other == 1 ? "is" : "are",
                first->file ? first->file : "", first->line, first->col, first->msg,
                other == 1 ? "it" : "them");
        status = 2;
    }
    for (size_t i = 0; status == 0 && i < r->dl->n; i++) {
        const diag *d = &r->dl->v[i];
        char *k = S_key(d->file, d->line, d->col);
        if (d->level == DIAG_ERROR)
            strmap_put(&x.errors_at, k, (void *)1);
        free(k);
    }
    for (size_t j = 0; status == 0 && j < r->nrecords; j++) {
        const page_record *rec = &r->records[j];
        if (!rec->nfigs || strncmp(rec->src, "content/", 8) != 0)
            continue;
        const figure *figs = record_figures(rec, r->figs, &fb);
        if (figs)
            S_fix_file(&x, rec->src, figs, rec->nfigs);
    }
    if (status == 0) {
        fwrite(x.diff.ptr ? x.diff.ptr : "", 1, x.diff.len, o->out);
        fflush(o->out);
        size_t left = r->dl->errors > x.fixed ? r->dl->errors - x.fixed : 0;
        fprintf(o->err, "kvsite: check --fix%s: %zu quote%s in %zu file%s %s, %zu error%s left\n",
                o->dry_run ? " --dry-run" : "", x.fixed, x.fixed == 1 ? "" : "s", x.files,
                x.files == 1 ? "" : "s",
                o->dry_run ? "would be fixed (nothing written)" : "fixed", left,
                left == 1 ? "" : "s");
        status = left || x.failed_files ? 1 : 0;
    }
    record_figs_buf_free(&fb);
    buf_free(&x.diff);
    strmap_free(&evaluated);
    strmap_free(&x.errors_at);
    return status;
}
