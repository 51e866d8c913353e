/* Unit tests for gen/paginate.c: page counts and bounds, page URLs, the
 * `paginate` value's bounds, and the build's plan (which listings get pages
 * 2.., on which report page each page's figures are); and for the listings
 * content_load makes once per build (content_listings: site.pages, a
 * section's pages, a page's neighbours) that the plan and the templates'
 * helpers read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "content.h"
#include "diag.h"
#include "figure.h"
#include "paginate.h"
#include "report.h"
#include "tmpdir.h"
#include "yv.h"

static void test_count_and_bounds(void **state)
{
    (void)state;
    assert_int_equal(paginate_count(0, 10), 1); /* an empty listing still has its page */
    assert_int_equal(paginate_count(1, 10), 1);
    assert_int_equal(paginate_count(10, 10), 1);
    assert_int_equal(paginate_count(11, 10), 2);
    assert_int_equal(paginate_count(10000, 10), 1000);
    assert_int_equal(paginate_count(7, 1), 7);
    size_t lo, hi;
    paginate_bounds(25, 10, 1, &lo, &hi);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 10);
    paginate_bounds(25, 10, 3, &lo, &hi);
    assert_int_equal(lo, 20);
    assert_int_equal(hi, 25);
    /* past the last page: the last page; before the first: the first */
    paginate_bounds(25, 10, 99, &lo, &hi);
    assert_int_equal(lo, 20);
    assert_int_equal(hi, 25);
    paginate_bounds(25, 10, 0, &lo, &hi);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 10);
    paginate_bounds(0, 10, 1, &lo, &hi);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 0);
    assert_int_equal(paginate_number_of(0, 10), 1);
    assert_int_equal(paginate_number_of(9, 10), 1);
    assert_int_equal(paginate_number_of(10, 10), 2);
}

static void test_paths(void **state)
{
    (void)state;
    char *u = paginate_path("/posts/", 1);
    assert_string_equal(u, "/posts/");
    free(u);
    u = paginate_path("/posts/", 2);
    assert_string_equal(u, "/posts/page/2/");
    free(u);
    u = paginate_path("/", 12);
    assert_string_equal(u, "/page/12/");
    free(u);
    u = paginate_path("/tags/go/", 3);
    assert_string_equal(u, "/tags/go/page/3/");
    free(u);
}

/* The value of `paginate: text` in a section's front matter, checked. */
static int S_check(const char *text, int *out, diag_list *dl)
{
    char *doc = xasprintf("paginate: %s\n", text);
    diag_list_init(dl);
    yv *v = yv_parse_yaml(doc, strlen(doc), NULL, "content/a/_index.md", 0, dl);
    free(doc);
    assert_non_null(v);
    assert_int_equal(dl->n, 0);
    int rc = paginate_check(yv_get(v, "paginate"), "content/a/_index.md", out, dl);
    yv_free(v);
    return rc;
}

static void test_check_bounds(void **state)
{
    (void)state;
    int per = 0;
    diag_list dl;
    assert_int_equal(S_check("5", &per, &dl), 0);
    assert_int_equal(per, 5);
    assert_int_equal(dl.n, 0);
    diag_list_free(&dl);
    assert_int_equal(S_check("1000", &per, &dl), 0);
    diag_list_free(&dl);
    static const char *const bad[] = {"0", "-3", "1001", "99999999999", "ten", "2.5", "[1]"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(S_check(bad[i], &per, &dl), -1);
        assert_int_equal(dl.errors, 1);
        assert_string_equal(dl.v[0].file, "content/a/_index.md");
        assert_int_equal(dl.v[0].line, 1);
        assert_int_equal(dl.v[0].col, 11);
        assert_non_null(strstr(dl.v[0].msg, "paginate must be"));
        diag_list_free(&dl);
    }
}

/* site.yaml's paginate and paginate_tags: the same bounds, at the key's line
 * and column. */
static void test_config_bounds(void **state)
{
    static const char *const bad[] = {"0", "-1", "1001", "many"};
    static const char *const keys[] = {"paginate", "paginate_tags"};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            char *yaml = xasprintf("title: t\n%s: %s\n", keys[k], bad[i]);
            tmpdir_put(*state, "site.yaml", yaml);
            free(yaml);
            config c;
            diag_list dl;
            config_defaults(&c);
            diag_list_init(&dl);
            assert_int_equal(config_load(&c, *state, &dl), -1);
            assert_int_equal(dl.errors, 1);
            assert_string_equal(dl.v[0].file, "site.yaml");
            assert_int_equal(dl.v[0].line, 2);
            assert_int_equal(dl.v[0].col, 1); /* config.c's errors are at the key */
            char *want = xasprintf("%s must be", keys[k]);
            assert_non_null(strstr(dl.v[0].msg, want));
            free(want);
            config_free(&c);
            diag_list_free(&dl);
        }
    tmpdir_put(*state, "site.yaml", "title: t\npaginate: 3\n");
    config c;
    diag_list dl;
    config_defaults(&c);
    assert_int_equal(c.paginate, PAGINATE_DEFAULT);
    diag_list_init(&dl);
    assert_int_equal(config_load(&c, *state, &dl), 0);
    assert_int_equal(c.paginate, 3);
    assert_int_equal(paginate_tags_of(&c), PAGINATE_TAGS_DEFAULT);
    config_free(&c);
    diag_list_free(&dl);
}

/* A site: home, section a (paginate: 2 in its _index.md) with 5 dated pages
 * tagged t, section b (no _index.md) with one page. */
static void S_site(const char *dir, content_index *idx, config *cfg)
{
    tmpdir_put(dir, "site.yaml", "title: t\npaginate: 3\npaginate_tags: 3\npaginate_sources: 3\n");
    tmpdir_put(dir, "checks/sources.yaml",
               "s1: {title: A}\ns2: {title: B}\ns3: {title: C}\ns4: {title: D}\n"
               "s5: {title: E}\ns6: {title: F}\ns7: {title: G}\n");
    tmpdir_put(dir, "content/_index.md", "---\ntitle: Home\n---\n");
    tmpdir_put(dir, "content/a/_index.md", "---\ntitle: A\npaginate: 2\n---\n");
    for (int i = 1; i <= 5; i++) {
        char rel[64], text[128];
        snprintf(rel, sizeof rel, "content/a/p%d.md", i);
        snprintf(text, sizeof text,
                 "---\ntitle: P%d\ndate: 2026-01-0%d\ntags: [t]\n---\n`1 B {= 1}`\n", i, i);
        tmpdir_put(dir, rel, text);
    }
    tmpdir_put(dir, "content/b/q.md",
               "---\ntitle: Q\ndate: 2025-06-01\ntags: [u, v, w, x]\n---\nx\n");
    diag_list dl;
    diag_list_init(&dl);
    config_defaults(cfg);
    assert_int_equal(config_load(cfg, dir, &dl), 0);
    content_opts opts = {.drafts = false, .threads = 1};
    assert_int_equal(content_load(idx, dir, cfg, &opts, &dl), 0);
    assert_int_equal(dl.n, 0);
    diag_list_free(&dl);
}

static size_t S_at(const content_index *idx, const char *url)
{
    size_t i = content_index_of(idx, url);
    assert_true(i != SIZE_MAX);
    return i;
}

static void test_listings(void **state)
{
    content_index idx;
    config cfg;
    S_site(*state, &idx, &cfg);
    /* site.pages: every regular page, newest first */
    assert_int_equal(idx.nby_date, 6);
    assert_string_equal(idx.pages[idx.by_date[0]]->title, "P5");
    assert_string_equal(idx.pages[idx.by_date[5]]->title, "Q");
    /* a section's pages in listing order (newest first), without copying */
    size_t a = S_at(&idx, "/a/"), n;
    const size_t *kids = content_kids(&idx, a, &n);
    assert_int_equal(n, 5);
    assert_string_equal(idx.pages[kids[0]]->title, "P5");
    assert_string_equal(idx.pages[kids[4]]->title, "P1");
    /* neighbours in the section */
    size_t p3 = S_at(&idx, "/a/p3/");
    assert_string_equal(idx.pages[content_prev(&idx, p3)]->title, "P4");
    assert_string_equal(idx.pages[content_next(&idx, p3)]->title, "P2");
    assert_true(content_prev(&idx, S_at(&idx, "/a/p5/")) == SIZE_MAX);
    assert_true(content_next(&idx, S_at(&idx, "/a/p1/")) == SIZE_MAX);
    assert_true(content_prev(&idx, S_at(&idx, "/")) == SIZE_MAX); /* home has no section */
    /* home lists the two sections; b is a virtual section page */
    kids = content_kids(&idx, S_at(&idx, "/"), &n);
    assert_int_equal(n, 2);
    assert_int_equal(idx.nsections, 2);
    assert_true(content_index_of(&idx, "/nope/") == SIZE_MAX);
    /* the copying interface gives the same listing */
    size_t nc;
    size_t *copy = content_children(&idx, idx.pages[a], &nc);
    kids = content_kids(&idx, a, &n);
    assert_int_equal(nc, n);
    assert_memory_equal(copy, kids, n * sizeof *kids);
    free(copy);
    content_index_free(&idx);
    config_free(&cfg);
}

static void test_plan(void **state)
{
    content_index idx;
    config cfg;
    S_site(*state, &idx, &cfg);
    size_t *groups = report_groups(&idx, NULL, 0);
    sources src;
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(sources_load(&src, *state, 1 << 20, &dl), 0);
    sources_set_per(&src, (size_t)cfg.paginate_sources);
    paginate_plan_t pl;
    paginate_plan(&pl, &idx, &cfg, &src, groups, 0);
    free(groups);
    /* section a: 5 pages by 2 (its own paginate) = 3 pages, 2 extra;
     * the tag index: 5 tags by 3 = 2 pages, 1 extra, before the tags';
     * tag t: 5 pages by 3 (site.yaml) = 2 pages, 1 extra; home and b: 1 page;
     * the sources: 7 by 3 (paginate_sources) = 3 pages, 2 extra, after the
     * tags';
     * the report: the 5 pages with a figure's mark (p1..p5; home, a's
     * _index.md and q have none, b no file) by 3 = 2 pages, 1 extra */
    size_t a = S_at(&idx, "/a/");
    size_t nsec = 0, nindex = 0, ntag = 0, nsrc = 0, nrep = 0;
    for (size_t i = 0; i < pl.nitems; i++) {
        const pager_item *it = &pl.items[i];
        assert_true(it->number >= 2);
        if (it->kind == PAGER_SECTION) {
            assert_int_equal(it->owner, a);
            assert_int_equal(it->number, 2 + nsec);
            nsec++;
        } else if (it->kind == PAGER_TAGS) {
            assert_int_equal(it->owner, 0);
            assert_int_equal(it->number, 2);
            assert_int_equal(ntag + nrep, 0);
            nindex++;
        } else if (it->kind == PAGER_TAG) {
            ntag++;
        } else if (it->kind == PAGER_SOURCES) {
            assert_int_equal(it->owner, 0);
            assert_int_equal(it->number, 2 + nsrc);
            assert_int_equal(ntag, 1);
            assert_int_equal(nrep, 0);
            nsrc++;
        } else {
            nrep++;
        }
    }
    assert_int_equal(nsec, 2);
    assert_int_equal(nindex, 1);
    assert_int_equal(ntag, 1);
    assert_int_equal(nsrc, 2);
    /* s7 is the seventh by key, on page 3 */
    char *at = sources_path(&src, "s7");
    assert_string_equal(at, "/sources/page/3/#s7");
    free(at);
    sources_free(&src);
    diag_list_free(&dl);
    assert_int_equal(pl.nslots, 1);
    assert_int_equal(pl.report_per, 3);
    assert_int_equal(pl.report_pages[0], 2);
    assert_int_equal(nrep, 1);
    /* report pages follow page order: the first three counted on page 1;
     * a page without a mark is on page 1 */
    size_t seen = 0;
    for (size_t i = 0; i < idx.npages; i++) {
        if (!paginate_in_report(&idx, i)) {
            assert_int_equal(pl.report_number[i], 1);
            continue;
        }
        assert_int_equal(pl.report_number[i], seen / 3 + 1);
        seen++;
    }
    assert_int_equal(seen, 5);
    assert_int_equal(paginate_of(&cfg, idx.pages[a]), 2);
    assert_int_equal(paginate_of(&cfg, idx.pages[S_at(&idx, "/")]), 3);
    paginate_plan_free(&pl);
    content_index_free(&idx);
    config_free(&cfg);
}

/* A report page's parts: a figure's part follows from its place on its
 * page alone; rows over the pages listed keep a part near
 * PAGINATE_REPORT_ROWS. */
static void test_parts(void **state)
{
    (void)state;
    assert_int_equal(paginate_part_rows(10), PAGINATE_REPORT_ROWS / 10);
    assert_int_equal(paginate_part_rows(1), PAGINATE_REPORT_ROWS);
    assert_int_equal(paginate_part_rows(PAGINATE_REPORT_ROWS), 1);
    assert_int_equal(paginate_part_rows(PAGINATE_MAX), 1); /* one figure of each: at least */
    assert_int_equal(paginate_part_rows(0), PAGINATE_REPORT_ROWS);
    for (size_t per = 1; per <= PAGINATE_MAX; per++) /* the row budget holds */
        assert_true(paginate_part_rows(per) * per <= (per > PAGINATE_REPORT_ROWS ? per : PAGINATE_REPORT_ROWS));
    assert_int_equal(paginate_part_of(0, 7), 0);
    assert_int_equal(paginate_part_of(6, 7), 0);
    assert_int_equal(paginate_part_of(7, 7), 1);
    assert_int_equal(paginate_part_of(21, 7), 3);
    assert_int_equal(paginate_part_of(21, 0), 0); /* no parts: all on the page */
    size_t lo, hi;
    paginate_part_bounds(22, 7, 0, &lo, &hi);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 7);
    paginate_part_bounds(22, 7, 3, &lo, &hi);
    assert_int_equal(lo, 21);
    assert_int_equal(hi, 22);
    paginate_part_bounds(22, 7, 4, &lo, &hi); /* past its last: none */
    assert_int_equal(lo, hi);
    paginate_part_bounds(3, 7, 1, &lo, &hi); /* a page with fewer: none on part 2 */
    assert_int_equal(lo, hi);
    paginate_part_bounds(14, 7, 2, &lo, &hi);
    assert_int_equal(lo, hi);
    paginate_part_bounds(5, 0, 0, &lo, &hi);
    assert_int_equal(hi - lo, 5);
    /* every figure's part lists it */
    for (size_t n = 1; n < 40; n++)
        for (size_t k = 0; k < n; k++) {
            paginate_part_bounds(n, 7, paginate_part_of(k, 7), &lo, &hi);
            assert_true(lo <= k && k < hi);
        }
    char *u = paginate_part_path("/checks/", 0);
    assert_string_equal(u, "/checks/");
    free(u);
    u = paginate_part_path("/checks/page/3/", 1);
    assert_string_equal(u, "/checks/page/3/part/2/");
    free(u);
    u = paginate_part_path("/checks/notes/", 11);
    assert_string_equal(u, "/checks/notes/part/12/");
    free(u);
}

/* The parts of each report page, once the pages' figures are known: the
 * most any of its pages needs; their items come after the others and are
 * made again, not added twice, on a second call. */
static void test_plan_parts(void **state)
{
    content_index idx;
    config cfg;
    S_site(*state, &idx, &cfg);
    size_t *groups = report_groups(&idx, NULL, 0);
    paginate_plan_t pl;
    paginate_plan(&pl, &idx, &cfg, NULL, groups, 0);
    /* report page 1 counts 3 pages, page 2 the last 2 */
    size_t before = pl.nitems, rows1 = paginate_rows_of(&pl, 0, 1), rows = paginate_rows_of(&pl, 0, 2);
    assert_int_equal(rows1, PAGINATE_REPORT_ROWS / 3);
    assert_int_equal(rows, PAGINATE_REPORT_ROWS / 2);
    assert_int_equal(paginate_parts_of(&pl, 0, 1), 1); /* unknown yet */
    size_t *nfigs = calloc(idx.npages + 1, sizeof *nfigs);
    size_t on2 = SIZE_MAX;
    for (size_t i = 0; i < idx.npages; i++)
        if (paginate_in_report(&idx, i) && pl.report_number[i] == 2)
            on2 = i;
    assert_true(on2 != SIZE_MAX);
    nfigs[on2] = 2 * rows + 1; /* three parts on report page 2 */
    for (size_t i = 0; i < idx.npages; i++)
        if (i != on2 && pl.report_number[i] == 1)
            nfigs[i] = rows1; /* one part on page 1, however many pages have that many */
    assert_int_equal(paginate_plan_parts(&pl, &idx, groups, nfigs), 2);
    assert_int_equal(pl.nitems, before + 2);
    assert_int_equal(paginate_parts_of(&pl, 0, 1), 1);
    assert_int_equal(paginate_parts_of(&pl, 0, 2), 3);
    assert_int_equal(paginate_parts_of(&pl, 0, 3), 1); /* no such page */
    for (size_t k = 0; k < 2; k++) {
        const pager_item *it = &pl.items[before + k];
        assert_int_equal(it->kind, PAGER_REPORT);
        assert_int_equal(it->number, 2);
        assert_int_equal(it->part, k + 1);
    }
    nfigs[on2] = rows + 1;
    assert_int_equal(paginate_plan_parts(&pl, &idx, groups, nfigs), 1);
    assert_int_equal(pl.nitems, before + 1);
    assert_int_equal(paginate_parts_of(&pl, 0, 2), 2);
    free(nfigs);
    free(groups);
    paginate_plan_free(&pl);
    content_index_free(&idx);
    config_free(&cfg);
}

/* The marks that let a page count in the report's pages. */
static void test_figure_marks(void **state)
{
    (void)state;
    static const char *const yes[] = {"`224 MiB {= x}`", "`40 GB {\xe2\x89\x88 x}`",
                                      "`40 GB {~ x}`", "`7x {cite k}`", "{=", "a {cite"};
    static const char *const no[] = {"", "plain text", "{lua} x", "`{lua} 1`", "{ = 1}", "{", "{ci"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        assert_true(fig_may_have(yes[i], strlen(yes[i])));
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        assert_false(fig_may_have(no[i], strlen(no[i])));
}

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-paginate-XXXXXX"); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_and_bounds),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_check_bounds),
        cmocka_unit_test(test_figure_marks),
        cmocka_unit_test(test_parts),
        cmocka_unit_test_setup_teardown(test_plan_parts, S_setup, tmpdir_teardown),
        cmocka_unit_test_setup_teardown(test_config_bounds, S_setup, tmpdir_teardown),
        cmocka_unit_test_setup_teardown(test_listings, S_setup, tmpdir_teardown),
        cmocka_unit_test_setup_teardown(test_plan, S_setup, tmpdir_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
