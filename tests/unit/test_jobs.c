/* Unit tests for gen/jobs.c: job numbers, kinds, phases and files from the
 * table of job kinds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "render.h"

static void test_numbering(void **state)
{
    (void)state;
    page home = {0}, sec = {0}, reg = {0};
    home.kind = PAGE_HOME;
    sec.kind = PAGE_SECTION;
    reg.kind = PAGE_REGULAR;
    reg.src = (char *)"content/a/b.md";
    page *pages[] = {&home, &sec, &reg};
    content_index idx;
    memset(&idx, 0, sizeof idx);
    idx.pages = pages;
    idx.npages = 3;
    idx.ntags = 2;
    size_t sections[] = {1};
    render_env e;
    memset(&e, 0, sizeof e);
    e.idx = &idx;
    e.report_sections = sections;
    e.nreport_sections = 1;
    e.nrecords = 12;
    /* pages, tags index, 2 tags, sources, checks, 404, checks.json, 1 section */
    assert_int_equal(render_job_count(&e), 3 + 1 + 2 + 4 + 1);
    const job_kind want[] = {JOB_PAGE, JOB_PAGE, JOB_PAGE, JOB_TAGS, JOB_TAG, JOB_TAG,
                             JOB_SOURCES, JOB_CHECKS, JOB_404, JOB_CHECKS_JSON,
                             JOB_CHECKS_SECTION};
    const size_t want_index[] = {0, 1, 2, 0, 0, 1, 0, 0, 0, 0, 0};
    const int want_phase[] = {3, 2, 1, 2, 2, 2, 2, 4, 2, 4, 4};
    unsigned char *ph = render_job_phases(&e);
    for (size_t j = 0; j < 11; j++) {
        size_t i = 99;
        assert_int_equal(render_job_kind(&e, j, &i), want[j]);
        assert_int_equal(i, want_index[j]);
        assert_int_equal(render_job_phase(&e, j), want_phase[j]);
        assert_int_equal(ph[j], want_phase[j]);
    }
    assert_int_equal(ph[11], 255); /* a record past the jobs: never readable */
    free(ph);
    assert_string_equal(render_job_file(&e, 2), "content/a/b.md");
    assert_string_equal(render_job_file(&e, 0), "templates/page.html"); /* no source */
    assert_string_equal(render_job_file(&e, 4), "templates/tag.html");
    assert_string_equal(render_job_file(&e, 10), "templates/checks-section.html");
    assert_string_equal(jobs_info(JOB_404)->url, "/404.html");
    assert_string_equal(jobs_info(JOB_CHECKS_SECTION)->name, "checks");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbering),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
