#include "jobs.h"

#include <limits.h>
#include <string.h>

#include "buf.h"
#include "render.h"
#include "report.h"
#include "sources.h"

/* In job order after the pages; a kind with one job per item (tags, report
 * sections) takes that many numbers. */
static const job_kind_info S_KINDS[JOB_KIND_COUNT] = {
    [JOB_PAGE] = {JOB_PAGE, "page", 0, "templates/page.html", NULL, NULL},
    [JOB_TAGS] = {JOB_TAGS, "tags", 2, "templates/tags.html", "Tags", "/tags/"},
    [JOB_TAG] = {JOB_TAG, "tag", 2, "templates/tag.html", NULL, NULL},
    [JOB_SOURCES] = {JOB_SOURCES, "sources", 2, "templates/sources.html", "Sources", "/sources/"},
    [JOB_CHECKS] = {JOB_CHECKS, "checks", 4, "templates/checks.html", "Checks", "/checks/"},
    [JOB_404] = {JOB_404, "404", 2, "templates/404.html", "Page not found", "/404.html"},
    [JOB_CHECKS_JSON] = {JOB_CHECKS_JSON, "checks.json", 4, "templates/page.html", NULL,
                         "/checks.json"},
    [JOB_CHECKS_SECTION] = {JOB_CHECKS_SECTION, "checks", 4,
                            "templates/" RENDER_REPORT_SECTION_TEMPLATE, NULL, NULL},
};

const job_kind_info *jobs_info(job_kind k)
{
    return &S_KINDS[k < JOB_KIND_COUNT ? k : JOB_PAGE];
}

/* How many jobs kind k has. */
static size_t S_count(const render_env *e, job_kind k)
{
    switch (k) {
    case JOB_PAGE: return e->idx->npages;
    case JOB_TAG: return e->idx->ntags;
    case JOB_CHECKS_SECTION: return e->nreport_sections;
    default: return 1;
    }
}

size_t render_job_count(const render_env *e)
{
    size_t n = 0;
    for (int k = 0; k < JOB_KIND_COUNT; k++)
        n += S_count(e, (job_kind)k);
    return n;
}

job_kind render_job_kind(const render_env *e, size_t job, size_t *index)
{
    *index = 0;
    for (int k = 0; k < JOB_KIND_COUNT; k++) {
        size_t n = S_count(e, (job_kind)k);
        if (job < n) {
            if (k == JOB_PAGE || k == JOB_TAG || k == JOB_CHECKS_SECTION)
                *index = job;
            return (job_kind)k;
        }
        job -= n;
    }
    return JOB_CHECKS_JSON; /* past the last job: the caller's mistake */
}

int render_job_phase(const render_env *e, size_t job)
{
    size_t i;
    job_kind k = render_job_kind(e, job, &i);
    if (k != JOB_PAGE)
        return S_KINDS[k].phase;
    switch (e->idx->pages[i]->kind) {
    case PAGE_REGULAR: return 1;
    case PAGE_SECTION: return 2;
    default: return 3;
    }
}

unsigned char *render_job_phases(const render_env *e)
{
    size_t n = render_job_count(e), all = n > e->nrecords ? n : e->nrecords;
    unsigned char *v = xmalloc(all + 1);
    for (size_t j = 0; j < n; j++)
        v[j] = (unsigned char)render_job_phase(e, j);
    memset(v + n, UCHAR_MAX, all - n); /* records past the jobs: never readable */
    return v;
}

const char *render_job_file(const render_env *e, size_t job)
{
    size_t i;
    job_kind k = render_job_kind(e, job, &i);
    if (k == JOB_PAGE && e->idx->pages[i]->src)
        return e->idx->pages[i]->src;
    return S_KINDS[k].template;
}

bool jobs_present(const render_env *e, job_kind k, bool have_404)
{
    switch (k) {
    case JOB_TAGS:
    case JOB_TAG: return e->idx->ntags > 0;
    case JOB_SOURCES: return sources_present(e->src);
    case JOB_404: return have_404;
    default: return true;
    }
}

char *jobs_url(const render_env *e, size_t job)
{
    size_t i;
    job_kind k = render_job_kind(e, job, &i);
    switch (k) {
    case JOB_PAGE: return xstrdup(e->idx->pages[i]->url);
    case JOB_TAG: return xstrdup(e->idx->tags[i].url);
    case JOB_CHECKS_SECTION: return report_path(e->idx, e->report_sections, i);
    default: return xstrdup(S_KINDS[k].url);
    }
}
