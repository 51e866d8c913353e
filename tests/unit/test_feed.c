/* Unit tests for gen/feed.c: the Atom feed (newest first, at most
 * feed.entries, dates as RFC 3339, text escaped) and the sitemap (pages only,
 * lastmod from the page's date). The index and records are made by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "config.h"
#include "content.h"
#include "feed.h"
#include "record.h"

typedef struct {
    config cfg;
    page pages[4];
    page *ptrs[4];
    content_index idx;
    page_record recs[6];
} site;

static void S_set(char **field, const char *v)
{
    free(*field);
    *field = xstrdup(v);
}

static void S_site(site *s)
{
    memset(s, 0, sizeof *s);
    config_defaults(&s->cfg);
    S_set(&s->cfg.title, "A & B");
    S_set(&s->cfg.base_url, "https://example.org/");
    S_set(&s->cfg.language, "en");
    S_set(&s->cfg.author, "Ann <a@b>");
    s->cfg.feed_entries = 2;
    static const struct {
        page_kind kind;
        const char *url, *title, *date, *updated;
    } p[4] = {
        {PAGE_HOME, "/", "Home", NULL, NULL},
        {PAGE_REGULAR, "/old/", "Old", "2020-01-01", NULL},
        {PAGE_REGULAR, "/new/", "New <1>", "2024-05-06 07:08", "2024-06-01T10:00:00+02:00"},
        {PAGE_REGULAR, "/mid/", "Mid", "2022-02-02", NULL},
    };
    for (int i = 0; i < 4; i++) {
        s->pages[i].kind = p[i].kind;
        s->pages[i].url = (char *)p[i].url;
        s->pages[i].title = (char *)p[i].title;
        s->pages[i].date = (char *)p[i].date;
        s->pages[i].updated = (char *)p[i].updated;
        s->ptrs[i] = &s->pages[i];
    }
    s->idx.pages = s->ptrs;
    s->idx.npages = 4;
    content_listings(&s->idx);
    static const char *urls[6] = {"/", "/old/", "/new/", "/mid/", "/404.html", "/checks/"};
    for (int j = 0; j < 6; j++) {
        s->recs[j].done = 1;
        s->recs[j].url = (char *)urls[j];
        s->recs[j].out_bytes = 10;
        s->recs[j].summary = (char *)(j == 2 ? "Fresh & new" : "");
    }
}

static void S_free(site *s)
{
    config_free(&s->cfg); /* the pages and records point at literals */
    content_listings_free(&s->idx);
}

static void test_atom(void **state)
{
    (void)state;
    site s;
    S_site(&s);
    buf b = BUF_INIT;
    feed_atom(&b, &s.cfg, &s.idx, s.recs);
    const char *x = buf_cstr(&b);
    assert_non_null(strstr(x, "<feed xmlns=\"http://www.w3.org/2005/Atom\" xml:lang=\"en\">"));
    assert_non_null(strstr(x, "<title>A &amp; B</title>"));
    assert_non_null(strstr(x, "<link rel=\"self\" href=\"https://example.org/feed.xml\"/>"));
    assert_non_null(strstr(x, "<author><name>Ann &lt;a@b&gt;</name></author>"));
    /* the feed's date is the newest page's; a date with a time gets seconds */
    assert_non_null(strstr(x, "<updated>2024-05-06T07:08:00Z</updated>\n"));
    /* two entries (feed.entries), newest first; home is not an entry */
    const char *n = strstr(x, "<title>New &lt;1&gt;</title>");
    const char *m = strstr(x, "<title>Mid</title>");
    assert_non_null(n);
    assert_non_null(m);
    assert_true(n < m);
    assert_null(strstr(x, "<title>Old</title>"));
    assert_null(strstr(x, "<title>Home</title>"));
    assert_non_null(strstr(x, "<id>https://example.org/new/</id>"));
    /* updated: wins over the date, an offset kept as it is */
    assert_non_null(strstr(x, "<updated>2024-06-01T10:00:00+02:00</updated>"));
    assert_non_null(strstr(x, "<updated>2022-02-02T00:00:00Z</updated>"));
    assert_non_null(strstr(x, "<summary>Fresh &amp; new</summary>"));
    assert_int_equal(strstr(x, "<summary>") - x, strstr(x, "<summary>Fresh") - x); /* only one */
    assert_string_equal(x + b.len - 8, "</feed>\n");
    buf_free(&b);
    S_free(&s);
}

/* An undated page's entry has the newest page's date, not 1970 (issue 18). */
static void test_atom_undated(void **state)
{
    (void)state;
    site s;
    S_site(&s);
    s.pages[3].date = NULL; /* "Mid" */
    s.cfg.feed_entries = 3;
    buf b = BUF_INIT;
    feed_atom(&b, &s.cfg, &s.idx, s.recs);
    const char *x = buf_cstr(&b);
    const char *mid = strstr(x, "<title>Mid</title>");
    assert_non_null(mid);
    assert_non_null(strstr(mid, "<updated>2024-05-06T07:08:00Z</updated>"));
    assert_null(strstr(x, "1970"));
    buf_free(&b);
    S_free(&s);
}

/* The sitemap and Atom ids need a base_url with a host. */
static void test_absolute(void **state)
{
    (void)state;
    config c;
    config_defaults(&c);
    assert_false(feed_absolute(&c)); /* "/" */
    free(c.base_url);
    c.base_url = xstrdup("https://example.org/docs/");
    assert_true(feed_absolute(&c));
    free(c.base_url);
    c.base_url = xstrdup("/docs/");
    assert_false(feed_absolute(&c));
    config_free(&c);
}

static void test_atom_empty(void **state)
{
    (void)state;
    site s;
    S_site(&s);
    s.idx.npages = 1; /* home only */
    content_listings(&s.idx);
    S_set(&s.cfg.author, "");
    buf b = BUF_INIT;
    feed_atom(&b, &s.cfg, &s.idx, s.recs);
    /* no page has a date: the day of the build, not 1970 */
    const char *u = strstr(buf_cstr(&b), "<updated>");
    assert_non_null(u);
    assert_null(strstr(buf_cstr(&b), "1970-01-01"));
    assert_true(strncmp(u + 9, "20", 2) == 0 && u[13] == '-' && u[16] == '-' && u[19] == 'T');
    assert_null(strstr(buf_cstr(&b), "<entry>"));
    assert_null(strstr(buf_cstr(&b), "<author>"));
    buf_free(&b);
    S_free(&s);
}

static void test_sitemap(void **state)
{
    (void)state;
    site s;
    S_site(&s);
    s.recs[3].out_bytes = 0; /* failed: no file, not listed */
    buf b = BUF_INIT;
    feed_sitemap(&b, &s.cfg, &s.idx, s.recs, 6, 0);
    const char *x = buf_cstr(&b);
    assert_non_null(strstr(x, "<url><loc>https://example.org/</loc></url>\n"));
    assert_non_null(strstr(x, "<url><loc>https://example.org/old/</loc>"
                              "<lastmod>2020-01-01</lastmod></url>\n"));
    assert_non_null(strstr(x, "<url><loc>https://example.org/new/</loc>"
                              "<lastmod>2024-06-01</lastmod></url>\n"));
    assert_null(strstr(x, "/mid/"));
    assert_null(strstr(x, "404")); /* not a page */
    /* a generated page has no date */
    assert_non_null(strstr(x, "<url><loc>https://example.org/checks/</loc></url>\n"));
    assert_string_equal(x + b.len - 10, "</urlset>\n");
    buf_free(&b);
    S_free(&s);
}

/* Past FEED_SITEMAP_MAX pages: sitemap.xml is an index of parts of at most
 * that many URLs each, every page in exactly one, in job order. */
static void test_sitemap_parts(void **state)
{
    (void)state;
    site s;
    S_site(&s);
    buf names = BUF_INIT;
    assert_int_equal(feed_sitemap_files(&names, s.recs, 6), 0);
    assert_int_equal(names.len, sizeof "sitemap.xml");
    buf_free(&names);
    size_t n = 2 * FEED_SITEMAP_MAX + 1 + 1; /* and one that is not a page */
    page_record *recs = calloc(n, sizeof *recs);
    assert_non_null(recs);
    for (size_t j = 0; j < n; j++) {
        recs[j].done = 1;
        recs[j].out_bytes = 1;
        recs[j].url = j == 7 ? xstrdup("/404.html") : xasprintf("/p%zu/", j);
    }
    s.idx.npages = 0; /* generated pages: no lastmod */
    assert_int_equal(feed_sitemap_files(&names, recs, n), 3);
    static const char want[] = "sitemap.xml\0sitemap1.xml\0sitemap2.xml\0sitemap3.xml";
    assert_int_equal(names.len, sizeof want);
    assert_memory_equal(names.ptr, want, sizeof want);
    buf_free(&names);
    size_t total = 0;
    for (size_t k = 1; k <= 3; k++) {
        buf b = BUF_INIT;
        feed_sitemap(&b, &s.cfg, &s.idx, recs, n, k);
        size_t urls = 0;
        for (const char *x = buf_cstr(&b); (x = strstr(x, "<url>")); x++)
            urls++;
        assert_int_equal(urls, k < 3 ? FEED_SITEMAP_MAX : 1);
        total += urls;
        if (k == 2) { /* the 50,001st page is the first of part 2: p50001 (p7 is not one) */
            char first[64];
            snprintf(first, sizeof first, "<url><loc>https://example.org/p%d/</loc>",
                     FEED_SITEMAP_MAX + 1);
            assert_non_null(strstr(buf_cstr(&b), first));
        }
        buf_free(&b);
    }
    assert_int_equal(total, n - 1);
    buf b = BUF_INIT;
    feed_sitemap_index(&b, &s.cfg, 3);
    assert_non_null(strstr(buf_cstr(&b), "<sitemapindex "));
    assert_non_null(strstr(buf_cstr(&b), "<sitemap><loc>https://example.org/sitemap3.xml</loc></sitemap>\n"));
    assert_null(strstr(buf_cstr(&b), "sitemap4.xml"));
    buf_free(&b);
    for (size_t j = 0; j < n; j++)
        free(recs[j].url);
    free(recs);
    S_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_atom),
        cmocka_unit_test(test_atom_empty),
        cmocka_unit_test(test_atom_undated),
        cmocka_unit_test(test_absolute),
        cmocka_unit_test(test_sitemap),
        cmocka_unit_test(test_sitemap_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
