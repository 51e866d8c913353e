/* Unit tests for gen/frontmatter.c: a page's front matter read into the page,
 * and the slips in its keys. (Loading whole content/ trees, with front matter
 * errors found on the way, is tested in test_content.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "config.h"
#include "content.h"
#include "diag.h"
#include "frontmatter.h"

/* Parses text as content/x.md with the default settings. */
static int S_parse(const char *text, page *p, diag_list *dl)
{
    config cfg;
    config_defaults(&cfg);
    memset(p, 0, sizeof *p);
    p->src = "content/x.md";
    diag_list_init(dl);
    int rc = fm_parse_page(p, text, strlen(text), &cfg, dl);
    config_free(&cfg);
    return rc;
}

static void test_fields_and_params(void **state)
{
    (void)state;
    page p;
    diag_list dl;
    assert_int_equal(S_parse("---\ntitle: A\ntags: [x, y]\nweight: 3\n"
                             "params: {mood: calm}\n---\nBody\n", &p, &dl), 0);
    assert_string_equal(p.title, "A");
    assert_int_equal(p.ntags, 2);
    assert_int_equal(p.weight, 3);
    assert_int_equal(dl.n, 0);
    diag_list_free(&dl);
    fm_page_clear(&p);
    /* a key both at the top level and under params: is an error at the inner key */
    assert_int_equal(S_parse("---\ntitle: A\nmood: x\nparams: {mood: calm}\n---\n", &p, &dl), -1);
    assert_int_equal(dl.n, 1);
    assert_int_equal(dl.v[0].line, 4);
    diag_list_free(&dl);
    fm_page_clear(&p);
}

/* fm_page_move carries every field the build cache keeps of a parse (what
 * content_page_encode writes is what fm_parse_page sets), and leaves none
 * behind */
static void test_move_carries_every_field(void **state)
{
    (void)state;
    page p, q;
    diag_list dl;
    assert_int_equal(S_parse("---\ntitle: A\ndate: 2026-01-02\nupdated: 2026-02-03\n"
                             "summary: S\nslug: s-a\ntemplate: t.html\ntags: [x, y]\n"
                             "weight: 3\ndraft: true\nparams: {mood: calm}\n---\n\nBody {= 1}\n",
                             &p, &dl), 0);
    p.fig_marks = true;
    buf before = BUF_INIT, after = BUF_INIT;
    content_page_encode(&p, &before);
    memset(&q, 0, sizeof q);
    fm_page_move(&q, &p);
    content_page_encode(&q, &after);
    assert_int_equal(before.len, after.len);
    assert_memory_equal(before.ptr, after.ptr, before.len);
    assert_null(p.title);
    assert_null(p.date);
    assert_null(p.updated);
    assert_null(p.summary);
    assert_null(p.slug);
    assert_null(p.template_name);
    assert_null(p.tags);
    assert_int_equal(p.ntags, 0);
    assert_null(p.front);
    fm_page_clear(&p); /* frees nothing now: q owns it all */
    fm_page_clear(&q);
    buf_free(&before);
    buf_free(&after);
    diag_list_free(&dl);
}

static void test_title_slip(void **state)
{
    (void)state;
    page p;
    diag_list dl;
    assert_int_equal(S_parse("---\ntittle: A\n---\n", &p, &dl), -1);
    assert_int_equal(dl.n, 1);
    assert_non_null(strstr(dl.v[0].msg, "did you mean title"));
    diag_list_free(&dl);
    fm_page_clear(&p);
}

static void test_front_key_hints(void **state)
{
    (void)state;
    page reg = {.kind = PAGE_REGULAR}, sec = {.kind = PAGE_SECTION};
    assert_true(fm_key_known(&reg, "draft"));
    assert_true(fm_key_known(&reg, "params"));
    assert_false(fm_key_known(&reg, "mood"));
    assert_false(fm_key_known(&reg, "page_template"));
    assert_true(fm_key_known(&sec, "page_template"));
    assert_string_equal(fm_key_hint(&reg, "darft"), "draft");
    assert_string_equal(fm_key_hint(&reg, "tag"), "tags");
    assert_string_equal(fm_key_hint(&reg, "summery"), "summary");
    assert_string_equal(fm_key_hint(&reg, "tittle"), "title");
    assert_string_equal(fm_key_hint(&reg, "Title"), "title");
    assert_null(fm_key_hint(&reg, "mood"));
    assert_null(fm_key_hint(&reg, "foo"));
    assert_null(fm_key_hint(&reg, "page_templat"));
    assert_string_equal(fm_key_hint(&sec, "page_templat"), "page_template");
    /* long keys are not compared (a bounded table) */
    assert_null(fm_key_hint(&reg, "titleeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_and_params),
        cmocka_unit_test(test_move_carries_every_field),
        cmocka_unit_test(test_title_slip),
        cmocka_unit_test(test_front_key_hints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
