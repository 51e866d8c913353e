#include "figdiff.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "quote.h"
#include "strmap.h"
#include "yv.h"

void figdiff_set_free(figdiff_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].file);
        free(s->v[i].quote);
        free(s->v[i].expr);
        free(s->v[i].tier);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

static figdiff_fig *S_push(figdiff_set *s)
{
    if (s->n == s->cap)
        s->v = xrealloc(s->v, (s->cap = s->cap ? 2 * s->cap : 64) * sizeof *s->v);
    figdiff_fig *f = &s->v[s->n++];
    memset(f, 0, sizeof *f);
    return f;
}

void figdiff_add(figdiff_set *s, const char *file, const figure *f)
{
    figdiff_fig *d = S_push(s);
    d->file = xstrdup(file);
    d->quote = xstrdup(f->quote ? f->quote : "");
    d->expr = xstrdup(f->expr ? f->expr : "");
    d->tier = xstrdup(fig_tier_name(f->tier));
    d->line = f->line;
    d->col = f->col;
    d->ok = f->ok;
    d->has_value = f->tier != FIG_CITED && isfinite(f->value);
    d->value = d->has_value ? f->value : 0;
}

/* The string field key of figure map m, or NULL (then *bad names it). */
static const char *S_str(const yv *m, const char *key, const char **bad)
{
    const char *s = yv_string(yv_get(m, key));
    if (!s && !*bad)
        *bad = key;
    return s;
}

int figdiff_load_json(figdiff_set *s, const char *text, size_t len, const char *name,
                      diag_list *dl)
{
    const yv_limits lim = {FIGDIFF_MAX_BYTES, 8, FIGDIFF_MAX_NODES};
    yv *doc = yv_parse_json(text, len, &lim, name, dl);
    if (!doc)
        return -1;
    const yv *figs = yv_get(doc, "figures");
    if (!figs || figs->type != YV_SEQ) {
        diag_error(dl, name, doc->line, doc->col,
                   "not a checks.json: no \"figures\" list at the top");
        yv_free(doc);
        return -1;
    }
    for (size_t i = 0; i < figs->n; i++) {
        const yv *m = figs->items[i];
        const char *bad = NULL;
        const char *file = S_str(m, "file", &bad), *qt = S_str(m, "quote", &bad);
        const char *expr = S_str(m, "expr", &bad), *tier = S_str(m, "tier", &bad);
        const char *status = S_str(m, "status", &bad);
        double line = 0, col = 0, value = 0;
        const yv *v = yv_get(m, "value");
        if (!bad && (!yv_number(yv_get(m, "line"), &line) || !yv_number(yv_get(m, "col"), &col)))
            bad = "line";
        if (!bad && (!v || (v->type != YV_NULL && !yv_number(v, &value))))
            bad = "value";
        if (bad) {
            diag_error(dl, name, m->line, m->col,
                       "not a checks.json: figure %zu has no valid \"%s\"", i + 1, bad);
            yv_free(doc);
            return -1;
        }
        figdiff_fig *d = S_push(s);
        d->file = xstrdup(file);
        d->quote = xstrdup(qt);
        d->expr = xstrdup(expr);
        d->tier = xstrdup(tier);
        d->line = line >= 0 && line < 1e9 ? (int)line : 0;
        d->col = col >= 0 && col < 1e9 ? (int)col : 0;
        d->ok = strcmp(status, "pass") == 0;
        d->has_value = v->type != YV_NULL && isfinite(value);
        d->value = d->has_value ? value : 0;
    }
    yv_free(doc);
    return 0;
}

/* ---------- comparing ---------- */

/* "file\nexpr\nk" for the k-th figure of expr in file; counts keeps k. */
static char *S_match_key(const figdiff_fig *f, strmap *counts)
{
    char *group = xasprintf("%s\n%s", f->file, f->expr);
    uintptr_t k = (uintptr_t)strmap_get(counts, group);
    strmap_put(counts, group, (void *)(k + 1));
    char *key = xasprintf("%s\n%ju", group, (uintmax_t)k);
    free(group);
    return key;
}

/* f's value written as its quote writes its number, extra decimals more;
 * cited figures and figures without a number show their quote. */
static void S_value(buf *b, const figdiff_fig *f, int extra)
{
    quote q;
    if (!f->has_value) {
        buf_puts(b, f->quote[0] ? f->quote : "no value");
    } else if (quote_parse(f->quote, strlen(f->quote), NULL, &q, NULL) == 0) {
        quote_restate(&q, f->value, q.decimals + extra, b);
    } else {
        /* a unit the page defined: the value in base units */
        buf_printf(b, "%.*g", 6 + extra, f->value);
    }
}

typedef struct {
    const figdiff_fig *o, *n; /* either may be NULL */
    char *msg;
    bool warn;
} S_change;

static int S_change_cmp(const void *a, const void *b)
{
    const S_change *x = a, *y = b;
    const figdiff_fig *p = x->n ? x->n : x->o, *q = y->n ? y->n : y->o;
    int c = strcmp(p->file, q->file);
    if (c)
        return c;
    if (p->line != q->line)
        return p->line < q->line ? -1 : 1;
    if (p->col != q->col)
        return p->col < q->col ? -1 : 1;
    return (x->n != NULL) - (y->n != NULL); /* removed first */
}

/* The message of a matched pair, or NULL when nothing changed. */
static char *S_pair_msg(const figdiff_fig *o, const figdiff_fig *n, figdiff_totals *t, bool *warn)
{
    bool value = o->has_value != n->has_value || (n->has_value && o->value != n->value);
    bool status = o->ok != n->ok, tier = strcmp(o->tier, n->tier) != 0;
    if (!value && !status && !tier)
        return NULL;
    t->changed++;
    t->values += value;
    t->statuses += status;
    t->tiers += tier;
    *warn = status && !n->ok;
    buf m = BUF_INIT, a = BUF_INIT, b = BUF_INIT;
    if (value) {
        /* decimals enough to tell them apart */
        for (int extra = 0; extra <= 6; extra++) {
            buf_clear(&a);
            buf_clear(&b);
            S_value(&a, o, extra);
            S_value(&b, n, extra);
            if (strcmp(buf_cstr(&a), buf_cstr(&b)) != 0)
                break;
        }
        buf_printf(&m, "%s -> %s", buf_cstr(&a), buf_cstr(&b));
    } else {
        S_value(&m, n, 0);
    }
    buf_printf(&m, " (%s)", n->expr);
    if (tier)
        buf_printf(&m, "; %s -> %s", o->tier, n->tier);
    if (status)
        buf_printf(&m, "; %s -> %s", o->ok ? "pass" : "fail", n->ok ? "pass" : "fail");
    buf_free(&a);
    buf_free(&b);
    return buf_detach(&m);
}

static char *S_one_msg(const char *what, const figdiff_fig *f)
{
    buf m = BUF_INIT;
    buf_puts(&m, what);
    S_value(&m, f, 0);
    buf_printf(&m, " (%s)", f->expr);
    return buf_detach(&m);
}

void figdiff_compare(const figdiff_set *old, const figdiff_set *new_, bool github, FILE *out,
                     figdiff_totals *t)
{
    memset(t, 0, sizeof *t);
    strmap counts, by_key;
    strmap_init(&counts);
    strmap_init(&by_key);
    for (size_t i = 0; i < old->n; i++) {
        char *k = S_match_key(&old->v[i], &counts);
        strmap_put(&by_key, k, (void *)(i + 1));
        free(k);
    }
    strmap_free(&counts);
    strmap_init(&counts);
    bool *matched = xcalloc(old->n + 1, sizeof *matched);
    S_change *ch = xmalloc((old->n + new_->n + 1) * sizeof *ch);
    size_t nch = 0;
    for (size_t i = 0; i < new_->n; i++) {
        const figdiff_fig *n = &new_->v[i];
        char *k = S_match_key(n, &counts);
        size_t at = (size_t)(uintptr_t)strmap_get(&by_key, k);
        free(k);
        bool warn = false;
        char *msg;
        if (at) {
            matched[at - 1] = true;
            msg = S_pair_msg(&old->v[at - 1], n, t, &warn);
            if (!msg) {
                t->same++;
                continue;
            }
        } else {
            msg = S_one_msg("new figure: ", n);
            t->added++;
            warn = !n->ok;
        }
        ch[nch++] = (S_change){at ? &old->v[at - 1] : NULL, n, msg, warn};
    }
    for (size_t i = 0; i < old->n; i++) {
        if (matched[i])
            continue;
        ch[nch++] = (S_change){&old->v[i], NULL, S_one_msg("figure removed: ", &old->v[i]), true};
        t->removed++;
    }
    qsort(ch, nch, sizeof *ch, S_change_cmp);
    for (size_t i = 0; i < nch; i++) {
        const figdiff_fig *f = ch[i].n ? ch[i].n : ch[i].o;
        /* a removed figure's line is gone: its annotation names the file */
        diag_print_line(out, f->file, f->line, f->col, ch[i].msg,
                        !github ? NULL : ch[i].warn ? "warning" : "notice");
        free(ch[i].msg);
    }
    free(ch);
    free(matched);
    strmap_free(&counts);
    strmap_free(&by_key);
}

int figdiff_after_check(void *ctx, const build_result *r)
{
    const figdiff_opts *o = ctx;
    char *path = fs_is_dir(o->old) ? fs_join(o->old, "checks.json") : xstrdup(o->old);
    buf text = BUF_INIT;
    diag_list dl;
    diag_list_init(&dl);
    figdiff_set old = {0}, now = {0};
    int rc = fs_read_file(path, FIGDIFF_MAX_BYTES, &text);
    int status = r->status;
    if (rc != FS_OK) {
        fprintf(o->err, "kvsite: check --diff: cannot read %s: %s\n", path,
                fs_strerror(rc, FIGDIFF_MAX_BYTES));
        status = 2;
    } else if (figdiff_load_json(&old, text.ptr, text.len, path, &dl) != 0) {
        diag_print(&dl, o->err, false);
        status = 2;
    }
    record_figs_buf fb = {0};
    for (size_t j = 0; status != 2 && j < r->nrecords; j++) {
        const page_record *rec = &r->records[j];
        const figure *figs = rec->nfigs ? record_figures(rec, r->figs, &fb) : NULL;
        if (rec->nfigs && !figs) {
            fprintf(o->err, "kvsite: check --diff: cannot read the figures of %s\n", rec->src);
            status = 2;
        }
        for (size_t i = 0; figs && i < rec->nfigs; i++)
            figdiff_add(&now, rec->src, &figs[i]);
    }
    record_figs_buf_free(&fb);
    if (status != 2) {
        figdiff_totals t;
        figdiff_compare(&old, &now, r->github, o->out, &t);
        fflush(o->out);
        fprintf(o->err,
                "kvsite: check --diff: %zu figure%s changed (%zu value%s, %zu status%s, %zu "
                "tier%s), %zu new, %zu removed, %zu unchanged since %s\n",
                t.changed, t.changed == 1 ? "" : "s", t.values, t.values == 1 ? "" : "s",
                t.statuses, t.statuses == 1 ? "" : "es", t.tiers, t.tiers == 1 ? "" : "s",
                t.added, t.removed, t.same, path);
    }
    figdiff_set_free(&old);
    figdiff_set_free(&now);
    diag_list_free(&dl);
    buf_free(&text);
    free(path);
    return status;
}
