/* Unit tests for gen/links.c: targets, character references and the
 * tag-aware scan of a page's HTML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "links.h"

static void S_target(const char *url, const char *base, const char *want)
{
    char *t = links_target(url, strlen(url), base, "/p/");
    if (!want)
        assert_null(t);
    else
        assert_string_equal(t, want);
    free(t);
}

static void test_target(void **state)
{
    (void)state;
    S_target("/a/b/", "", "/a/b/");
    S_target("#x", "", "/p/#x");
    S_target("/docs/a/?q=1#f", "/docs", "/a/#f");
    S_target("/docs", "/docs", "/");
    S_target("/other/a/", "/docs", NULL);
    S_target("/docsa/", "/docs", NULL);
    S_target("//cdn.example/x", "", NULL);
    S_target("https://example.com/", "", NULL);
    S_target("/%E5%BC%80/", "", "/\xe5\xbc\x80/");
    S_target("", "", NULL);
}

/* links_target_into appends to what the buffer holds, and leaves it as it
 * was for a link it does not follow. */
static void test_target_into(void **state)
{
    (void)state;
    buf t = BUF_INIT;
    buf_puts(&t, "kept|");
    assert_true(links_target_into("/a/%41?x=1#f%20g", 16, "", "/p/", &t));
    assert_string_equal(buf_cstr(&t), "kept|/a/A#f g");
    assert_int_equal(t.len, strlen(buf_cstr(&t)));
    assert_false(links_target_into("https://example.com/", 20, "", "/p/", &t));
    assert_string_equal(buf_cstr(&t), "kept|/a/A#f g");
    /* only n bytes of the url count */
    assert_true(links_target_into("/b/?q#z-and-more", 7, "", "/p/", &t));
    assert_string_equal(buf_cstr(&t), "kept|/a/A#f g/b/#z");
    assert_int_equal(t.len, strlen(buf_cstr(&t)));
    buf_free(&t);
}

static void S_decode(const char *in, const char *want)
{
    buf b = BUF_INIT;
    links_decode_attr(in, strlen(in), &b);
    assert_string_equal(buf_cstr(&b), want);
    buf_free(&b);
}

static void test_decode(void **state)
{
    (void)state;
    S_decode("a&amp;b&lt;&gt;&quot;&apos;", "a&b<>\"'");
    S_decode("&#39;&#x41;&#X42;", "'AB");
    S_decode("&#233;", "\xc3\xa9");
    S_decode("&nosuch; & &#; &#x;", "&nosuch; & &#; &#x;");
    S_decode("&#0;", "\xef\xbf\xbd");
    S_decode("&#99999999999;", "&#99999999999;"); /* more than 8 digits: left as is */
    /* the text between references comes in whole runs */
    S_decode("", "");
    S_decode("no references at all", "no references at all");
    S_decode("&amp;", "&");
    S_decode("tail &", "tail &");
    S_decode("&amp;&amp;x&lt;", "&&x<");
}

static char **S_scan(const char *html, size_t *n, page_record *rec)
{
    strmap seen;
    strmap_init(&seen);
    strmap_put(&seen, "/known/", (void *)1);
    links_scan_opts o = {"", "/p/", "templates/t.html", "/checks/#p-", 3};
    memset(rec, 0, sizeof *rec);
    links_scan_html(html, strlen(html), &o, &seen, rec);
    strmap_free(&seen);
    char **v = calloc(rec->nlinks + 1, sizeof *v);
    for (size_t i = 0; i < rec->nlinks; i++) {
        v[i] = rec->links[i].target;
        assert_string_equal(rec->links[i].file, "templates/t.html");
    }
    *n = rec->nlinks;
    return v;
}

static void S_free_rec(page_record *rec, char **v)
{
    for (size_t i = 0; i < rec->nlinks; i++) {
        free(rec->links[i].target);
        free(rec->links[i].file);
    }
    free(rec->links);
    for (size_t i = 0; i < rec->nids; i++)
        free(rec->ids[i]);
    free(rec->ids);
    free(v);
}

static void test_scan(void **state)
{
    (void)state;
    page_record rec;
    size_t n;
    char **v = S_scan("<a href=\"/d/\">x</a><a href='/s/'>x</a><A HREF=/u/>x</A>"
                      "<a data-href=\"/data/\" xsrc='/x/'>no</a>"
                      "<img alt='a > b' src = \"/i.png\">"
                      "<a href=\"/q/?a=1&amp;b=2#f\">q</a>"
                      "<a href=\"/known/\">seen</a><a href=\"/d/\">twice</a>"
                      "<a href=\"/checks/#p-2\">row</a><a href=\"/checks/#p-9\">not a row</a>"
                      "<!-- <a href=\"/comment/\"> -->"
                      "<script>var s = '<a href=\"/script/\">';</script>"
                      "<p>href=\"/text/\"</p>"
                      "<a href=\"#top\">t</a><a href=\"https://example.com/\">e</a>"
                      "<a =href=\"/eq/\" data=x>no</a><div\tid=\"y\"/>"
                      "<h2 id=\"h&amp;1\">h</h2><div id=x id='y'></div><a href='/open",
                      &n, &rec);
    const char *want[] = {"/d/", "/s/", "/u/", "/i.png", "/q/#f", "/checks/#p-9", "/p/#top"};
    assert_int_equal(n, sizeof want / sizeof *want);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(v[i], want[i]);
    const char *ids[] = {"y", "h&1", "x"};
    assert_int_equal(rec.nids, 3);
    for (size_t i = 0; i < rec.nids; i++)
        assert_string_equal(rec.ids[i], ids[i]);
    S_free_rec(&rec, v);
}

/* A record that comes with the Markdown's links (an array of their number)
 * gets the template's after them, however many. */
static void test_scan_appends(void **state)
{
    (void)state;
    page_record rec;
    memset(&rec, 0, sizeof rec);
    rec.nlinks = 1;
    rec.links = calloc(1, sizeof *rec.links);
    rec.links[0] = (md_link){strdup("/md/"), 3, 4, NULL};
    buf html = BUF_INIT;
    for (int i = 0; i < 100; i++)
        buf_printf(&html, "<a href=\"/t%d/\">%d</a><a href=\"/t%d/\">again</a>", i, i, i);
    strmap seen;
    strmap_init(&seen);
    strmap_put(&seen, "/md/", (void *)1);
    links_scan_opts o = {"", "/p/", "templates/t.html", NULL, 0};
    links_scan_html(buf_cstr(&html), html.len, &o, &seen, &rec);
    assert_int_equal(rec.nlinks, 101);
    assert_string_equal(rec.links[0].target, "/md/");
    assert_null(rec.links[0].file);
    for (int i = 0; i < 100; i++) {
        char want[16];
        snprintf(want, sizeof want, "/t%d/", i);
        assert_string_equal(rec.links[i + 1].target, want);
        assert_string_equal(rec.links[i + 1].file, "templates/t.html");
    }
    strmap_free(&seen);
    buf_free(&html);
    char **v = calloc(1, sizeof *v);
    S_free_rec(&rec, v);
}

/* The checks: a missing page, a missing id, a template's link once. */
static void test_check(void **state)
{
    (void)state;
    page_record r[2];
    memset(r, 0, sizeof r);
    char *ids[] = {(char *)"top"};
    md_link l0[] = {{(char *)"/b/#top", 1, 2, NULL}, {(char *)"/b/#nope", 3, 4, NULL},
                    {(char *)"/nowhere/", 5, 6, NULL}, {(char *)"/f.css", 7, 8, NULL},
                    {(char *)"/b/index.html", 9, 1, NULL}, {(char *)"/b", 9, 2, NULL}};
    md_link l1[] = {{(char *)"/gone/", 0, 0, (char *)"templates/t.html"}};
    r[0] = (page_record){.done = 1, .url = (char *)"/a/", .src = (char *)"content/a.md",
                         .out_bytes = 1, .links = l0, .nlinks = 6};
    r[1] = (page_record){.done = 1, .url = (char *)"/b/", .src = (char *)"content/b.md",
                         .out_bytes = 1, .links = l1, .nlinks = 1, .ids = ids, .nids = 1};
    strmap urls, files;
    strmap_init(&urls);
    strmap_init(&files);
    strmap_put(&files, "/f.css", (void *)1);
    diag_list dl;
    diag_list_init(&dl);
    links_check(r, 2, NULL, &urls, &files, NULL, 1, &dl);
    assert_int_equal(dl.n, 3);
    assert_string_equal(dl.v[0].file, "content/a.md");
    assert_int_equal(dl.v[0].line, 3);
    assert_non_null(strstr(dl.v[0].msg, "has no heading or anchor with id \"nope\""));
    assert_int_equal(dl.v[1].line, 5);
    assert_non_null(strstr(dl.v[1].msg, "broken link to /nowhere/: no page or file there"));
    assert_string_equal(dl.v[2].file, "templates/t.html");
    assert_non_null(strstr(dl.v[2].msg, "; in the output for /b/"));
    diag_list_free(&dl);
    /* only: page a's links are not checked */
    bool only[2] = {false, true};
    diag_list_init(&dl);
    links_check(r, 2, only, &urls, &files, NULL, 1, &dl);
    assert_int_equal(dl.n, 1);
    diag_list_free(&dl);
    strmap_free(&urls);
    strmap_free(&files);
}

/* What the check holds: a report page links an anchor of every figure of
 * half the pages; only a few pages' ids are held at a time, and of the
 * template's links only the broken one is remembered (it once kept a copy
 * of every id of every page linked, and every template link). */
static void test_check_memory(void **state)
{
    (void)state;
    enum { PAGES = 200, FIGS = 20, IDS = 2 * FIGS };
    page_record r[PAGES + 1];
    memset(r, 0, sizeof r);
    char *ids[PAGES][IDS];
    md_link rows[PAGES / 2 * FIGS + 3];
    size_t nrows = 0;
    for (size_t p = 0; p < PAGES; p++) {
        for (size_t f = 0; f < FIGS; f++) {
            ids[p][2 * f] = xasprintf("fig-%zu", f + 1);
            ids[p][2 * f + 1] = xasprintf("fig-%zu-d", f + 1); /* a popover's */
        }
        r[p] = (page_record){.done = 1, .url = xasprintf("/p%zu/", p), .src = (char *)"c.md",
                             .out_bytes = 1, .ids = ids[p], .nids = IDS};
        for (size_t f = 0; p % 2 == 0 && f < FIGS; f++)
            rows[nrows++] = (md_link){xasprintf("/p%zu/#fig-%zu", p, f + 1), 0, 0,
                                      (char *)"templates/checks.html"};
    }
    rows[nrows++] = (md_link){xstrdup("/p0/#%66ig-2"), 0, 0, (char *)"templates/checks.html"};
    rows[nrows++] = (md_link){xstrdup("/p0/#fig-99"), 0, 0, (char *)"templates/checks.html"};
    rows[nrows++] = (md_link){xstrdup("/p0/#fig-99"), 0, 0, (char *)"templates/checks.html"};
    r[PAGES] = (page_record){.done = 1, .url = (char *)"/checks/", .src = (char *)"",
                             .out_bytes = 1, .links = rows, .nlinks = nrows};
    /* a page's own typo still gets its suggestion */
    md_link typo = {(char *)"/p2/#fig-3-e", 4, 5, NULL};
    r[1].links = &typo;
    r[1].nlinks = 1;
    strmap urls, files;
    strmap_init(&urls);
    strmap_init(&files);
    diag_list dl;
    diag_list_init(&dl);
    links_stats st = {0, 0, 0};
    links_check_stats(r, PAGES + 1, NULL, &urls, &files, NULL, &dl, &st);
    assert_int_equal(dl.n, 2);
    assert_string_equal(dl.v[0].file, "c.md");
    assert_non_null(strstr(dl.v[0].msg, "id \"fig-3-e\"; did you mean #fig-3-d?"));
    assert_string_equal(dl.v[1].file, "templates/checks.html");
    assert_non_null(strstr(dl.v[1].msg, "/p0/ has no heading or anchor with id \"fig-99\""));
    /* a few pages' ids at a time (links_check's ID_SLOTS), not every page's */
    assert_true(st.held_ids >= IDS && st.held_ids <= 4 * IDS);
    assert_int_equal(st.remembered, 1);
    diag_list_free(&dl);
    for (size_t i = 0; i < nrows; i++)
        free(rows[i].target);
    for (size_t p = 0; p < PAGES; p++) {
        free(r[p].url);
        for (size_t i = 0; i < IDS; i++)
            free(ids[p][i]);
    }
    strmap_free(&urls);
    strmap_free(&files);
}

/* Records as the parent holds them, their ids and links in the figure
 * store: the same errors as from records in memory, suggestions included. */
static void test_check_from_store(void **state)
{
    (void)state;
    char *ids_b[] = {(char *)"top", (char *)"开始-here", (char *)"a-1"};
    md_link la[] = {{(char *)"/b/#%61-1", 1, 1, NULL}, {(char *)"/b/#开始-there", 2, 3, NULL},
                    {(char *)"/b/#top", 4, 5, NULL}, {(char *)"/a/#self", 6, 7, NULL},
                    {(char *)"/c/#x", 8, 9, (char *)"templates/t.html"}};
    md_link lb[] = {{(char *)"/c/#x", 0, 0, (char *)"templates/t.html"},
                    {(char *)"/a/#self", 0, 0, (char *)"templates/t.html"}};
    char *ids_a[] = {(char *)"self"};
    char *ids_c[] = {(char *)"y"};
    page_record mem[3] = {
        {.done = 1, .url = (char *)"/a/", .src = (char *)"content/a.md", .out_bytes = 1,
         .ids = ids_a, .nids = 1, .links = la, .nlinks = 5},
        {.done = 1, .url = (char *)"/b/", .src = (char *)"content/b.md", .out_bytes = 1,
         .ids = ids_b, .nids = 3, .links = lb, .nlinks = 2},
        {.done = 1, .url = (char *)"/c/", .src = (char *)"content/c.md", .out_bytes = 1,
         .ids = ids_c, .nids = 1}};
    figstore st;
    assert_int_equal(figstore_open(&st, "/tmp"), 0);
    page_record stored[3];
    for (size_t j = 0; j < 3; j++) {
        buf enc = BUF_INIT;
        mem[j].job = (uint32_t)j;
        record_encode(&mem[j], NULL, &enc);
        assert_int_equal(record_decode(enc.ptr, enc.len, &st, &stored[j]), 0);
        assert_null(stored[j].links);
        buf_free(&enc);
    }
    strmap urls, files;
    strmap_init(&urls);
    strmap_init(&files);
    diag_list a, b;
    diag_list_init(&a);
    diag_list_init(&b);
    links_check(mem, 3, NULL, &urls, &files, NULL, 1, &a);
    links_check(stored, 3, NULL, &urls, &files, &st, 1, &b);
    assert_int_equal(a.n, 2);
    assert_int_equal(b.n, a.n);
    for (size_t i = 0; i < a.n; i++) {
        assert_string_equal(b.v[i].msg, a.v[i].msg);
        assert_string_equal(b.v[i].file, a.v[i].file);
        assert_int_equal(b.v[i].line, a.v[i].line);
        assert_int_equal(b.v[i].col, a.v[i].col);
    }
    assert_non_null(strstr(a.v[0].msg, "id \"开始-there\"; did you mean #开始-here?"));
    assert_string_equal(a.v[1].file, "templates/t.html");
    assert_non_null(strstr(a.v[1].msg, "/c/ has no heading or anchor with id \"x\""));
    diag_list_free(&a);
    diag_list_free(&b);
    for (size_t j = 0; j < 3; j++)
        record_free(&stored[j]);
    figstore_close(&st);
    strmap_free(&urls);
    strmap_free(&files);
}

/* A page's links to its own anchors (a table of contents) are checked
 * against the ids read with its links: no second read of its record. */
static void test_check_own_anchors(void **state)
{
    (void)state;
    enum { PAGES = 3 };
    char *ids[] = {(char *)"h", (char *)"h-2"};
    md_link own[PAGES][2];
    page_record mem[PAGES], stored[PAGES];
    figstore st;
    assert_int_equal(figstore_open(&st, "/tmp"), 0);
    for (size_t j = 0; j < PAGES; j++) {
        char *url = xasprintf("/p%zu/", j);
        own[j][0] = (md_link){xasprintf("%s#h-2", url), 1, 1, NULL};
        own[j][1] = (md_link){xasprintf("%s#%s", url, j == 1 ? "hh" : "h"), 2, 1, NULL};
        mem[j] = (page_record){.job = (uint32_t)j, .done = 1, .url = url, .src = (char *)"c.md",
                               .out_bytes = 1, .ids = ids, .nids = 2, .links = own[j],
                               .nlinks = 2};
        buf enc = BUF_INIT;
        record_encode(&mem[j], NULL, &enc);
        assert_int_equal(record_decode(enc.ptr, enc.len, &st, &stored[j]), 0);
        buf_free(&enc);
    }
    strmap urls, files;
    strmap_init(&urls);
    strmap_init(&files);
    diag_list dl;
    diag_list_init(&dl);
    links_stats ls = {0};
    links_check_stats(stored, PAGES, NULL, &urls, &files, &st, &dl, &ls);
    assert_int_equal(ls.id_reads, 0);
    assert_int_equal(dl.n, 1);
    assert_int_equal(dl.v[0].line, 2);
    assert_non_null(strstr(dl.v[0].msg, "/p1/ has no heading or anchor with id \"hh\"; did you mean #h?"));
    diag_list_free(&dl);
    for (size_t j = 0; j < PAGES; j++) {
        record_free(&stored[j]);
        free(mem[j].url);
        free(own[j][0].target);
        free(own[j][1].target);
    }
    figstore_close(&st);
    strmap_free(&urls);
    strmap_free(&files);
}

/* A site large enough to be checked on several threads: every kind of
 * broken link (a missing page, a missing anchor, one near an id, a
 * template's, repeated on many pages, a link to a page that failed, which
 * stands), from records in memory and in the store, checked on 2, 3 and 8
 * threads and with `only`: the same messages in the same order as on one. */
static void S_same_diags(const diag_list *a, const diag_list *b)
{
    assert_int_equal(b->n, a->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(b->v[i].msg, a->v[i].msg);
        assert_string_equal(b->v[i].file ? b->v[i].file : "", a->v[i].file ? a->v[i].file : "");
        assert_int_equal(b->v[i].line, a->v[i].line);
        assert_int_equal(b->v[i].col, a->v[i].col);
    }
}

static void test_check_threads(void **state)
{
    (void)state;
    enum { PAGES = 3000, LINKS = 6 };
    char *ids[] = {(char *)"intro", (char *)"fig-1", (char *)"fig-2"};
    page_record *mem = calloc(PAGES, sizeof *mem), *stored = calloc(PAGES, sizeof *stored);
    md_link(*links)[LINKS] = calloc(PAGES, sizeof *links);
    figstore st;
    assert_int_equal(figstore_open(&st, "/tmp"), 0);
    strmap urls, files;
    strmap_init(&urls);
    strmap_init(&files);
    strmap_put(&files, "/style.css", (void *)1);
    for (size_t j = 0; j < PAGES; j++) {
        char *url = xasprintf("/p%zu/", j);
        size_t next = (j + 1) % PAGES, far = (j * 7919) % PAGES;
        links[j][0] = (md_link){xasprintf("/p%zu/#fig-1", next), 1, 1, NULL};
        links[j][1] = (md_link){xasprintf("/p%zu/", far), 2, 1, NULL};
        links[j][2] = (md_link){xstrdup("/style.css"), 3, 1, NULL};
        /* broken now and then: a missing page, a typo of an id, a template's
         * link (the same on every page that has it), a failed page's link */
        links[j][3] = (md_link){j % 97 == 5   ? xasprintf("/gone%zu/", j)
                                : j % 89 == 3 ? xasprintf("/p%zu/#fig-3", far)
                                              : xasprintf("%s#intro", url),
                                4, 2, NULL};
        links[j][4] = (md_link){j % 250 == 7 ? xstrdup("/missing/#x") : xstrdup("/p0/#intro"), 0,
                                0, (char *)"templates/page.html"};
        links[j][5] = (md_link){xstrdup("/failed/"), 6, 1, NULL};
        mem[j] = (page_record){.job = (uint32_t)j, .done = 1, .url = url, .src = (char *)"c.md",
                               .out_bytes = 1, .ids = ids, .nids = 3, .links = links[j],
                               .nlinks = LINKS};
        buf enc = BUF_INIT;
        record_encode(&mem[j], NULL, &enc);
        assert_int_equal(record_decode(enc.ptr, enc.len, &st, &stored[j]), 0);
        buf_free(&enc);
    }
    assert_int_equal(figstore_flush(&st), 0);
    strmap_put(&urls, "/failed/", (void *)1);
    bool *only = calloc(PAGES, sizeof *only);
    for (size_t j = 0; j < PAGES; j++)
        only[j] = j % 3 != 0;
    const page_record *sets[] = {mem, stored};
    for (size_t k = 0; k < 2; k++) {
        for (int with_only = 0; with_only < 2; with_only++) {
            const bool *o = with_only ? only : NULL;
            diag_list one;
            diag_list_init(&one);
            links_check(sets[k], PAGES, o, &urls, &files, &st, 1, &one);
            assert_true(one.n > 40);
            unsigned threads[] = {2, 3, 8};
            for (size_t t = 0; t < 3; t++) {
                diag_list many;
                diag_list_init(&many);
                links_check(sets[k], PAGES, o, &urls, &files, &st, threads[t], &many);
                S_same_diags(&one, &many);
                diag_list_free(&many);
            }
            diag_list_free(&one);
        }
    }
    for (size_t j = 0; j < PAGES; j++) {
        record_free(&stored[j]);
        free(mem[j].url);
        for (size_t k = 0; k < LINKS; k++)
            free(links[j][k].target);
    }
    free(only);
    free(links);
    free(mem);
    free(stored);
    figstore_close(&st);
    strmap_free(&urls);
    strmap_free(&files);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target),
        cmocka_unit_test(test_target_into),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_scan_appends),
        cmocka_unit_test(test_check),
        cmocka_unit_test(test_check_memory),
        cmocka_unit_test(test_check_from_store),
        cmocka_unit_test(test_check_own_anchors),
        cmocka_unit_test(test_check_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
