#include "jobs.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "paginate.h"
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
    /* phase and template: those of the listing it continues (S_pager_*) */
    [JOB_PAGER] = {JOB_PAGER, "pager", 2, "templates/section.html", NULL, NULL},
};

/* The listing page a JOB_PAGER job continues: phase, template file, URL. */
static int S_pager_phase(const render_env *e, const pager_item *it)
{
    switch (it->kind) {
    case PAGER_SECTION: return e->idx->pages[it->owner]->kind == PAGE_HOME ? 3 : 2;
    case PAGER_TAGS: return S_KINDS[JOB_TAGS].phase;
    case PAGER_TAG: return S_KINDS[JOB_TAG].phase;
    case PAGER_SOURCES: return S_KINDS[JOB_SOURCES].phase;
    default: return S_KINDS[JOB_CHECKS].phase;
    }
}

static const char *S_pager_file(const render_env *e, const pager_item *it)
{
    switch (it->kind) {
    case PAGER_SECTION:
        return e->idx->pages[it->owner]->src ? e->idx->pages[it->owner]->src
                                              : S_KINDS[JOB_PAGER].template;
    case PAGER_TAGS: return S_KINDS[JOB_TAGS].template;
    case PAGER_TAG: return S_KINDS[JOB_TAG].template;
    case PAGER_SOURCES: return S_KINDS[JOB_SOURCES].template;
    default:
        return it->owner + 1 < e->pages_plan->nslots ? S_KINDS[JOB_CHECKS_SECTION].template
                                                      : S_KINDS[JOB_CHECKS].template;
    }
}

char *jobs_pager_first(const render_env *e, const pager_item *it)
{
    switch (it->kind) {
    case PAGER_SECTION: return xstrdup(e->idx->pages[it->owner]->url);
    case PAGER_TAGS: return xstrdup(S_KINDS[JOB_TAGS].url);
    case PAGER_TAG: return xstrdup(e->idx->tags[it->owner].url);
    case PAGER_SOURCES: return xstrdup(S_KINDS[JOB_SOURCES].url);
    default:
        return report_path(e->idx, e->report_sections,
                           it->owner + 1 < e->pages_plan->nslots ? it->owner
                                                                  : REPORT_GROUP_ROOT);
    }
}

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
    case JOB_PAGER: return e->pages_plan ? e->pages_plan->nitems : 0;
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
            if (k == JOB_PAGE || k == JOB_TAG || k == JOB_CHECKS_SECTION || k == JOB_PAGER)
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
    if (k == JOB_PAGER)
        return S_pager_phase(e, &e->pages_plan->items[i]);
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
    if (k == JOB_PAGER)
        return S_pager_file(e, &e->pages_plan->items[i]);
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
    case JOB_PAGER: {
        const pager_item *it = &e->pages_plan->items[i];
        char *first = jobs_pager_first(e, it);
        char *u = paginate_path(first, it->number);
        free(first);
        if (it->part) {
            char *p = paginate_part_path(u, it->part);
            free(u);
            u = p;
        }
        return u;
    }
    default: return xstrdup(S_KINDS[k].url);
    }
}
