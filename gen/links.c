#include "links.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "markdown.h"
#include "url.h"
#include "utf8.h"

/* ---------- normalising ---------- */

bool links_target_into(const char *url, size_t un, const char *base, const char *page_url,
                       buf *t)
{
    size_t bn = strlen(base), from = t->len;
    if (un > 0 && url[0] == '#') {
        buf_puts(t, page_url);
        buf_put(t, url, un);
    } else if (un > 0 && url[0] == '/' && !(un > 1 && url[1] == '/')) {
        if (bn == 0 || (un >= bn && !memcmp(url, base, bn) && (un == bn || url[bn] == '/'))) {
            if (un == bn)
                buf_putc(t, '/');
            else
                buf_put(t, url + bn, un - bn);
        }
    }
    if (t->len == from)
        return false;
    char *target = t->ptr + from;
    if (memchr(target, '%', t->len - from)) {
        char *dec = url_percent_decode(target, t->len - from);
        t->len = from;
        buf_puts(t, dec);
        free(dec);
        target = t->ptr + from;
    }
    char *q = strchr(target, '?');
    if (q) {
        char *frag = strchr(q, '#');
        size_t keep = frag ? strlen(frag) : 0;
        memmove(q, frag ? frag : "", keep + 1);
        t->len = (size_t)(q - t->ptr) + keep;
    }
    return true;
}

char *links_target(const char *url, size_t un, const char *base, const char *page_url)
{
    buf t = BUF_INIT;
    if (!links_target_into(url, un, base, page_url, &t)) {
        buf_free(&t);
        return NULL;
    }
    return buf_detach(&t);
}

static void S_put_utf8(buf *b, uint32_t c)
{
    if (c == 0 || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        c = 0xFFFD; /* as HTML does */
    char u[4];
    buf_put(b, u, utf8_encode(c, u));
}

void links_decode_attr(const char *v, size_t n, buf *out)
{
    static const struct {
        const char *name;
        char c;
    } named[] = {{"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
    for (size_t i = 0; i < n; i++) {
        /* the text up to the next reference, in one piece */
        const char *amp = memchr(v + i, '&', n - i);
        size_t run = amp ? (size_t)(amp - v) - i : n - i;
        buf_put(out, v + i, run);
        i += run;
        if (i == n)
            break;
        const char *s = v + i + 1;
        size_t left = n - i - 1, used = 0;
        if (left >= 2 && s[0] == '#') {
            bool hex = s[1] == 'x' || s[1] == 'X';
            size_t k = hex ? 2 : 1, digits = 0;
            uint32_t c = 0;
            for (; k < left && digits < 8; k++, digits++) { /* bounded: at most 8 digits */
                char d = s[k];
                int x = d >= '0' && d <= '9' ? d - '0'
                        : hex && d >= 'a' && d <= 'f' ? d - 'a' + 10
                        : hex && d >= 'A' && d <= 'F' ? d - 'A' + 10 : -1;
                if (x < 0)
                    break;
                c = c * (hex ? 16 : 10) + (uint32_t)x;
            }
            if (digits && k < left && s[k] == ';') {
                S_put_utf8(out, c);
                used = k + 1;
            }
        } else {
            for (size_t e = 0; e < sizeof named / sizeof *named; e++) {
                size_t len = strlen(named[e].name);
                if (left >= len && !memcmp(s, named[e].name, len)) {
                    buf_putc(out, named[e].c);
                    used = len;
                    break;
                }
            }
        }
        if (used)
            i += used;
        else
            buf_putc(out, '&');
    }
}

/* ---------- collecting from HTML ---------- */

static bool S_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static bool S_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool S_name_is(const char *s, size_t n, const char *name)
{
    return strlen(name) == n && !strncasecmp(s, name, n);
}

/* Where the text after position p ends that starts with needle (n bytes),
 * or end: a linear search (memchr on the first byte). */
static const char *S_find(const char *p, const char *end, const char *needle, size_t n,
                          bool nocase)
{
    while (p < end && (size_t)(end - p) >= n) {
        if (nocase ? !strncasecmp(p, needle, n) : !memcmp(p, needle, n))
            return p;
        p++;
    }
    return end;
}

typedef struct {
    const links_scan_opts *o;
    strmap *seen;
    strmap ids;
    size_t ids_cap, links_cap;
    page_record *rec;
    buf u; /* scratch buffers for every value: a page has hundreds of links */
    buf t;
} scan_state;

static void S_id(scan_state *st, const char *v, size_t n)
{
    /* ids a template writes (map groups, report rows) are link targets too */
    page_record *rec = st->rec;
    buf_clear(&st->u);
    links_decode_attr(v, n, &st->u);
    if (strmap_put(&st->ids, buf_cstr(&st->u), (void *)1))
        return; /* seen on this page already */
    if (rec->nids == st->ids_cap)
        rec->ids = xrealloc(rec->ids, (st->ids_cap = st->ids_cap ? st->ids_cap * 2 : 64) *
                                          sizeof *rec->ids);
    rec->ids[rec->nids++] = xstrdup(buf_cstr(&st->u));
}

static void S_link(scan_state *st, const char *v, size_t vn)
{
    const links_scan_opts *o = st->o;
    if (o->skip_prefix) {
        size_t pn = strlen(o->skip_prefix);
        if (vn > pn && !memcmp(v, o->skip_prefix, pn)) {
            size_t num = 0, k = pn;
            while (k < vn && v[k] >= '0' && v[k] <= '9' && num <= o->skip_max)
                num = num * 10 + (size_t)(v[k++] - '0');
            if (k == vn && num >= 1 && num <= o->skip_max)
                return; /* one of this page's figures */
        }
    }
    if (memchr(v, '&', vn)) { /* most values have no character reference */
        buf_clear(&st->u);
        links_decode_attr(v, vn, &st->u);
        v = buf_cstr(&st->u);
        vn = st->u.len;
    }
    /* made in scratch: most targets were seen already on this page */
    buf_clear(&st->t);
    if (!links_target_into(v, vn, o->base_path, o->page_url, &st->t))
        return;
    const char *target = buf_cstr(&st->t);
    if (strmap_put(st->seen, target, (void *)1))
        return; /* seen on this page already */
    page_record *rec = st->rec;
    if (rec->nlinks == st->links_cap)
        rec->links = xrealloc(rec->links, (st->links_cap = st->links_cap ? st->links_cap * 2 : 16) *
                                              sizeof *rec->links);
    rec->links[rec->nlinks++] = (md_link){xstrdup(target), 0, 0, xstrdup(o->file)};
}

/* One tag's attributes from p (just after its name) to its '>'; returns
 * where the tag ends. */
static const char *S_attributes(scan_state *st, const char *p, const char *end)
{
    while (p < end) {
        while (p < end && (S_space(*p) || *p == '/'))
            p++;
        if (p >= end || *p == '>')
            return p;
        /* the name: to a space, '/', '>' or '=' (a name may start with '=') */
        static const unsigned char stop[256] = {[' '] = 1, ['\t'] = 1, ['\n'] = 1, ['\r'] = 1,
                                                ['\f'] = 1, ['/'] = 1,  ['>'] = 1,  ['='] = 1};
        const char *name = p;
        if (*p == '=')
            p++;
        while (p < end && !stop[(unsigned char)*p])
            p++;
        size_t nn = (size_t)(p - name);
        while (p < end && S_space(*p))
            p++;
        const char *v = NULL;
        size_t vn = 0;
        if (p < end && *p == '=') {
            p++;
            while (p < end && S_space(*p))
                p++;
            if (p < end && (*p == '"' || *p == '\'')) {
                const char *q = memchr(p + 1, *p, (size_t)(end - p - 1));
                if (!q)
                    return end; /* unterminated: the rest is the value; not a link */
                v = p + 1;
                vn = (size_t)(q - v);
                p = q + 1;
            } else {
                v = p;
                while (p < end && !S_space(*p) && *p != '>')
                    p++;
                vn = (size_t)(p - v);
            }
        }
        if (!v)
            continue;
        if (S_name_is(name, nn, "href") || S_name_is(name, nn, "src"))
            S_link(st, v, vn);
        else if (S_name_is(name, nn, "id"))
            S_id(st, v, vn);
    }
    return end;
}

/* The tokenizer is a loop over the input: linear, no recursion. */
void links_scan_html(const char *html, size_t len, const links_scan_opts *o, strmap *seen,
                     page_record *rec)
{
    scan_state st = {o, seen, {0}, rec->nids, rec->nlinks, rec, BUF_INIT, BUF_INIT};
    strmap_init(&st.ids);
    const char *p = html, *end = html + len;
    while (p < end && (p = memchr(p, '<', (size_t)(end - p)))) {
        const char *q = p + 1;
        if (q < end && *q == '!') {
            bool comment = end - q >= 3 && q[1] == '-' && q[2] == '-';
            const char *e = comment ? S_find(q + 3, end, "-->", 3, false)
                                    : memchr(q, '>', (size_t)(end - q));
            p = e && e < end ? e + 1 : end;
            continue;
        }
        if (q >= end || !S_alpha(*q)) {
            p = q; /* an end tag, or text: a stray '<' */
            continue;
        }
        const char *name = q;
        while (q < end && (S_alpha(*q) || (*q >= '0' && *q <= '9') || *q == '-'))
            q++;
        size_t nn = (size_t)(q - name);
        q = S_attributes(&st, q, end);
        p = q < end ? q + 1 : end;
        /* the text of script and style is not markup */
        if (S_name_is(name, nn, "script") || S_name_is(name, nn, "style")) {
            const char *close = S_find(p, end, nn == 6 ? "</script" : "</style", nn + 2, true);
            p = close;
        }
    }
    buf_free(&st.u);
    buf_free(&st.t);
    strmap_free(&st.ids);
}

/* ---------- checking ---------- */

/* The ids of the pages #fragments name, for lookups: a few pages' at a
 * time, each sorted (indices into its ids). Links to one page's anchors
 * mostly come together (a report page's rows, a table of contents), and a
 * decoded record's ids are in the figure store (record_links): the check
 * holds no page's ids for long, whatever the site links. */
#define ID_SLOTS 4
typedef struct {
    const page_record *r; /* whose ids; NULL: none */
    record_links_buf lb;
    char *const *ids;
    uint32_t *order;
    size_t n;
} id_slot;

typedef struct {
    const figstore *st;
    id_slot slot[ID_SLOTS];
    size_t next;
    /* The page whose links are checked: its ids came with its links (one
     * read), so links to its own #fragments (a table of contents) read
     * nothing more. self.r is set once they are sorted. */
    const page_record *page;
    char *const *page_ids;
    id_slot self;
    links_stats *stats;
} id_cache;

static int S_cmp_id(const void *a, const void *b, void *ids)
{
    char *const *v = ids;
    return strcmp(v[*(const uint32_t *)a], v[*(const uint32_t *)b]);
}

/* The slot with t's ids, read and sorted on a miss; NULL when they cannot
 * be read back. */
static id_slot *S_ids_of(id_cache *c, const page_record *t)
{
    for (size_t k = 0; k < ID_SLOTS; k++)
        if (c->slot[k].r == t)
            return &c->slot[k];
    if (t == c->self.r)
        return &c->self;
    id_slot *s;
    if (t == c->page) {
        s = &c->self;
        s->ids = c->page_ids;
    } else {
        s = &c->slot[c->next];
        c->next = (c->next + 1) % ID_SLOTS;
        s->r = NULL;
        s->n = 0;
        const md_link *links;
        if (c->stats)
            c->stats->id_reads++;
        if (record_links(t, c->st, &s->lb, &s->ids, &links) != 0)
            return NULL;
    }
    s->order = xrealloc(s->order, (t->nids + 1) * sizeof *s->order);
    for (size_t i = 0; i < t->nids; i++)
        s->order[i] = (uint32_t)i;
    qsort_r(s->order, t->nids, sizeof *s->order, S_cmp_id, (void *)s->ids);
    s->r = t;
    s->n = t->nids;
    if (c->stats) {
        size_t held = 0;
        for (size_t k = 0; k < ID_SLOTS; k++)
            held += c->slot[k].n;
        held += c->self.r ? c->self.n : 0;
        if (held > c->stats->held_ids)
            c->stats->held_ids = held;
    }
    return s;
}

static bool S_has_id(const void *ctx, const char *id)
{
    const id_slot *s = ctx;
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(id, s->ids[s->order[mid]]);
        if (c == 0)
            return true;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return false;
}

/* A template's broken links in one page's output: the first few each with
 * its error, then how many more, not one line per link (a report template
 * whose rows all link to a missing anchor would print thousands). */
#define BROKEN_SHOWN 3
typedef struct {
    const char *file;
    char *msg[BROKEN_SHOWN];
    size_t n;
} tpl_broken;

static void S_broken(tpl_broken **v, size_t *n, const char *file, char *msg)
{
    size_t i = 0;
    while (i < *n && strcmp((*v)[i].file, file))
        i++;
    if (i == *n) {
        *v = xrealloc(*v, (*n + 1) * sizeof **v);
        (*v)[(*n)++] = (tpl_broken){file, {NULL}, 0};
    }
    tpl_broken *b = &(*v)[i];
    if (b->n < BROKEN_SHOWN)
        b->msg[b->n] = msg;
    else
        free(msg);
    b->n++;
}

static void S_broken_flush(tpl_broken *v, size_t *n, const char *url, diag_list *dl)
{
    for (size_t i = 0; i < *n; i++) {
        size_t shown = v[i].n < BROKEN_SHOWN ? v[i].n : BROKEN_SHOWN;
        for (size_t k = 0; k < shown; k++) {
            if (k + 1 == shown && v[i].n > shown)
                diag_error(dl, v[i].file, 0, 0,
                           "%s (and %zu more broken links of %s in the output for %s)",
                           v[i].msg[k], v[i].n - shown, v[i].file, url);
            else
                diag_error(dl, v[i].file, 0, 0, "%s", v[i].msg[k]);
            free(v[i].msg[k]);
        }
    }
    *n = 0;
}

#define SUGGEST_MAX_CP 128    /* code points of a fragment or id compared */
#define SUGGEST_MAX_IDS 20000 /* ids of one page searched for the nearest */

/* s as at most SUGGEST_MAX_CP code points (an invalid byte counts as one);
 * returns how many, or SIZE_MAX when s is longer. */
static size_t S_cps(const char *s, uint32_t *out)
{
    size_t n = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (n == SUGGEST_MAX_CP)
            return SIZE_MAX;
        size_t l = utf8_char_len(p), k = 1;
        while (k < l && p[k])
            k++;
        out[n++] = k == l && utf8_valid((const char *)p, l, NULL) ? utf8_decode(p, l) : *p;
        p += k == l ? l : 1;
    }
    return n;
}

/* The id of ids nearest to frag by edit distance in code points, when it is
 * near enough to be a typo (at most a third of the longer, at least 1), or
 * NULL. */
static const char *S_nearest_id(const char *frag, char *const *ids, size_t nids)
{
    uint32_t a[SUGGEST_MAX_CP], b[SUGGEST_MAX_CP];
    size_t row[SUGGEST_MAX_CP + 1], na = S_cps(frag, a);
    if (na == SIZE_MAX || na == 0 || nids > SUGGEST_MAX_IDS)
        return NULL;
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (size_t k = 0; k < nids; k++) {
        size_t nb = S_cps(ids[k], b);
        if (nb == SIZE_MAX || nb == 0)
            continue;
        size_t longer = na > nb ? na : nb, limit = longer / 3 ? longer / 3 : 1;
        if ((na > nb ? na - nb : nb - na) > limit)
            continue;
        for (size_t j = 0; j <= nb; j++)
            row[j] = j;
        for (size_t i = 1; i <= na; i++) {
            size_t corner = row[0];
            row[0] = i;
            for (size_t j = 1; j <= nb; j++) {
                size_t up = row[j];
                size_t d = corner + (a[i - 1] != b[j - 1]);
                if (up + 1 < d)
                    d = up + 1;
                if (row[j - 1] + 1 < d)
                    d = row[j - 1] + 1;
                row[j] = d;
                corner = up;
            }
        }
        if (row[nb] <= limit && row[nb] < best_d) {
            best_d = row[nb];
            best = ids[k];
        }
    }
    return best;
}

/* The error of the link l on page r, or NULL when it holds (or stands: a
 * link to a page that failed to render, which has its own error). A
 * function of l's target alone for a template's link (l->file). */
static char *S_link_error(const page_record *r, const md_link *l, const strmap *pages,
                          id_cache *ids, const strmap *page_urls, const strmap *files, buf *pb)
{
    const char *hash = strchr(l->target, '#');
    size_t n = hash ? (size_t)(hash - l->target) : strlen(l->target);
    const char *frag = hash ? hash + 1 : NULL;
    /* "/a/b/index.html" and "/a/b" name the page "/a/b/" */
    if (n >= 10 && memcmp(l->target + n - 10, "index.html", 10) == 0)
        n -= 10;
    buf_clear(pb); /* the path, in the caller's scratch buffer: one per link */
    buf_put(pb, l->target, n);
    const page_record *target = strmap_get(pages, buf_cstr(pb));
    if (!target && n > 0 && pb->ptr[n - 1] != '/') {
        buf_putc(pb, '/');
        target = strmap_get(pages, buf_cstr(pb));
        buf_truncate(pb, n);
    }
    const char *path = buf_cstr(pb);
    /* a page that failed to render has its own error: links to it stand */
    bool failed_page = !target && strmap_get(page_urls, path);
    bool stands = !target && (failed_page || (r->out_bytes == 0 && !l->file));
    char *err = NULL;
    id_slot *slot = NULL;
    if (!stands && !target && !strmap_get(files, path)) {
        err = l->file ? xasprintf("broken link to %s: no page or file there; in the output for %s",
                                  l->target, r->url)
                      : xasprintf("broken link to %s: no page or file there", l->target);
    } else if (!stands && target && frag && frag[0] && !(slot = S_ids_of(ids, target))) {
        err = xasprintf("cannot check the link to %s: the ids of %s cannot be read back: %s",
                        l->target, target->url, strerror(errno));
    } else if (slot && !url_fragment_names(frag, S_has_id, slot)) {
        const char *near = l->file ? NULL : S_nearest_id(frag, slot->ids, target->nids);
        err = xasprintf("broken link to %s: %s has no heading or anchor with id \"%s\"%s%s%s",
                        l->target, target->url, frag, near ? "; did you mean #" : "",
                        near ? near : "", near ? "?" : "");
    }
    return err;
}

/* The pages the records produced, by URL (the records are the values). */
static void S_pages(const page_record *records, size_t njobs, strmap *pages)
{
    strmap_init(pages);
    strmap_reserve(pages, njobs);
    for (size_t j = 0; j < njobs; j++) {
        const page_record *r = &records[j];
        if (r->done && r->url && r->url[0] && r->out_bytes > 0)
            strmap_put(pages, r->url, (void *)r);
    }
}

static void S_id_cache_free(id_cache *ids)
{
    for (size_t k = 0; k < ID_SLOTS; k++) {
        record_links_buf_free(&ids->slot[k].lb);
        free(ids->slot[k].order);
    }
    free(ids->self.order);
}

/* Page r's links into *links, and its ids into the cache as the page whose
 * links are checked (read back from fs through own when the record is
 * decoded). 0, or -1 when they cannot be read back. */
static int S_page_links(const page_record *r, const figstore *fs, record_links_buf *own,
                        id_cache *ids, const md_link **links)
{
    char *const *rids = r->ids;
    *links = r->links;
    ids->self.r = NULL; /* the last page's ids, in own, go with the next read */
    if (r->nlinks && record_links(r, fs, own, &rids, links) != 0)
        return -1;
    ids->page = r;
    ids->page_ids = rids;
    return 0;
}

/* The check of the pages only selects (NULL: all), in job order, each
 * broken link with its message (links_check). */
static void S_check(const page_record *records, size_t njobs, const bool *only,
                    const strmap *pages, const strmap *page_urls, const strmap *files,
                    const figstore *fs, diag_list *dl, links_stats *st)
{
    tpl_broken *broken = NULL;
    size_t nbroken = 0;
    strmap reported;
    strmap_init(&reported);
    id_cache ids = {.st = fs, .stats = st};
    record_links_buf own = {.in_order = true}; /* page after page */
    buf path = BUF_INIT;
    size_t unread = 0;
    const char *unread_url = NULL;
    int unread_err = 0;
    for (size_t j = 0; j < njobs; j++) {
        const page_record *r = &records[j];
        if (only && !only[j])
            continue;
        const md_link *links;
        if (S_page_links(r, fs, &own, &ids, &links) != 0) {
            /* one cause (the figure store not written, a full disk) fails
             * them all alike: the first page says so, with the count */
            if (!unread++) {
                unread_url = r->url;
                unread_err = errno;
            }
            continue;
        }
        for (size_t k = 0; k < r->nlinks; k++) {
            const md_link *l = &links[k];
            char *err = S_link_error(r, l, pages, &ids, page_urls, files, &path);
            if (!err)
                continue;
            if (!l->file) {
                const char *file = r->src && r->src[0] ? r->src : NULL;
                diag_error(dl, file, l->line, l->col, "%s", err);
                free(err);
                continue;
            }
            /* a template's broken link is reported once, not once per page:
             * only broken ones are remembered (a report template links every
             * figure, and those links hold) */
            char *key = xasprintf("%s\n%s", l->file, l->target);
            if (strmap_get(&reported, key)) {
                free(err);
            } else {
                strmap_put(&reported, key, (void *)1);
                if (st)
                    st->remembered++;
                S_broken(&broken, &nbroken, l->file, err);
            }
            free(key);
        }
        S_broken_flush(broken, &nbroken, r->url, dl);
    }
    if (unread == 1)
        diag_error(dl, NULL, 0, 0, "cannot check the links of %s: they cannot be read back: %s",
                   unread_url, strerror(unread_err));
    else if (unread)
        diag_error(dl, NULL, 0, 0,
                   "cannot check the links of %s and %zu more pages: they cannot be read back: %s",
                   unread_url, unread - 1, strerror(unread_err));
    free(broken);
    S_id_cache_free(&ids);
    buf_free(&path);
    record_links_buf_free(&own);
    strmap_free(&reported);
}

void links_check_stats(const page_record *records, size_t njobs, const bool *only,
                       const strmap *page_urls, const strmap *files, const figstore *fs,
                       diag_list *dl, links_stats *st)
{
    strmap pages;
    S_pages(records, njobs, &pages);
    S_check(records, njobs, only, &pages, page_urls, files, fs, dl, st);
    strmap_free(&pages);
}

/* ---------- the check on several threads ---------- */

/* Below this many pages a thread, one thread checks them all: starting one
 * costs about what checking a few pages does. */
#define S_PAGES_PER_THREAD 256
#define S_MAX_THREADS 16

/* What the threads of the first pass share: all read-only but next and the
 * flags of the pages each took. */
typedef struct {
    const page_record *records;
    size_t njobs;
    const bool *only;
    const strmap *pages, *page_urls, *files;
    const figstore *fs;
    bool *suspect;     /* out: the pages S_check must see */
    atomic_size_t next; /* the first page no thread has taken */
} S_pass;

/* Pages a thread takes at once: few, so the costly ones (the report's, that
 * link every figure) spread over the threads; not one, so a run of pages
 * linking the same page's anchors keeps its ids at hand. */
#define S_CHUNK 16

/* The first pass: which pages have a link that does not hold, or links that
 * cannot be read back. It asks what S_check asks (S_link_error) and says
 * nothing: the messages, and which page reports a template's broken link
 * first, come from S_check over those pages alone, in job order. */
static void *S_find_suspects(void *arg)
{
    S_pass *ps = arg;
    id_cache ids = {.st = ps->fs};
    record_links_buf own = {.in_order = true};
    buf path = BUF_INIT;
    for (;;) {
        size_t j = atomic_fetch_add_explicit(&ps->next, S_CHUNK, memory_order_relaxed);
        if (j >= ps->njobs)
            break;
        size_t end = ps->njobs - j < S_CHUNK ? ps->njobs : j + S_CHUNK;
        for (; j < end; j++) {
            const page_record *r = &ps->records[j];
            if ((ps->only && !ps->only[j]) || r->nlinks == 0)
                continue;
            const md_link *links;
            if (S_page_links(r, ps->fs, &own, &ids, &links) != 0) {
                ps->suspect[j] = true;
                continue;
            }
            for (size_t k = 0; k < r->nlinks && !ps->suspect[j]; k++) {
                char *err = S_link_error(r, &links[k], ps->pages, &ids, ps->page_urls,
                                         ps->files, &path);
                ps->suspect[j] = err != NULL;
                free(err);
            }
        }
    }
    S_id_cache_free(&ids);
    buf_free(&path);
    record_links_buf_free(&own);
    return NULL;
}

void links_check(const page_record *records, size_t njobs, const bool *only,
                 const strmap *page_urls, const strmap *files, const figstore *fs,
                 unsigned threads, diag_list *dl)
{
    strmap pages;
    S_pages(records, njobs, &pages);
    size_t n = njobs / S_PAGES_PER_THREAD;
    if (n > threads)
        n = threads;
    if (n > S_MAX_THREADS)
        n = S_MAX_THREADS;
    if (n < 2) {
        S_check(records, njobs, only, &pages, page_urls, files, fs, dl, NULL);
        strmap_free(&pages);
        return;
    }
    bool *suspect = xcalloc(njobs, sizeof *suspect);
    S_pass ps = {records, njobs, only, &pages, page_urls, files, fs, suspect, 0};
    atomic_init(&ps.next, 0);
    pthread_t tids[S_MAX_THREADS];
    size_t started = 0;
    /* a thread that cannot be started leaves its share to the others */
    for (size_t t = 1; t < n; t++)
        if (pthread_create(&tids[started], NULL, S_find_suspects, &ps) == 0)
            started++;
    S_find_suspects(&ps);
    for (size_t t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    S_check(records, njobs, suspect, &pages, page_urls, files, fs, dl, NULL);
    free(suspect);
    strmap_free(&pages);
}
