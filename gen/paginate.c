#include "paginate.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "report.h"

int paginate_check(const yv *v, const char *file, int *out, diag_list *dl)
{
    if (v->type != YV_INT) {
        diag_error(dl, file, v->line, v->col,
                   "paginate must be a whole number of entries per page (1 to %d), not %s",
                   PAGINATE_MAX, yv_type_a(v->type));
        return -1;
    }
    if (v->i < 1 || v->i > PAGINATE_MAX) {
        diag_error(dl, file, v->line, v->col,
                   "paginate must be between 1 and %d entries per page, not %s", PAGINATE_MAX,
                   v->str);
        return -1;
    }
    *out = (int)v->i;
    return 0;
}

size_t paginate_of(const config *cfg, const page *p)
{
    const yv *v = p->front && p->front->type == YV_MAP ? yv_get(p->front, "paginate") : NULL;
    if (v && v->type == YV_INT && v->i >= 1 && v->i <= PAGINATE_MAX)
        return (size_t)v->i;
    return cfg->paginate >= 1 ? (size_t)cfg->paginate : PAGINATE_DEFAULT;
}

size_t paginate_tags_of(const config *cfg)
{
    return cfg->paginate_tags >= 1 ? (size_t)cfg->paginate_tags : PAGINATE_TAGS_DEFAULT;
}

bool paginate_in_report(const content_index *idx, size_t i)
{
    return idx->pages[i]->src != NULL && idx->pages[i]->fig_marks;
}

size_t paginate_slot(const paginate_plan_t *pl, size_t group)
{
    return group == REPORT_GROUP_ALL || group == REPORT_GROUP_ROOT || group >= pl->nslots
               ? pl->nslots - 1
               : group;
}

static void S_add(paginate_plan_t *pl, size_t *cap, pager_kind kind, size_t owner, size_t pages)
{
    for (size_t k = 2; k <= pages; k++) {
        if (pl->nitems == *cap) {
            *cap = *cap ? *cap * 2 : 16;
            pl->items = xrealloc(pl->items, *cap * sizeof *pl->items);
        }
        pl->items[pl->nitems++] = (pager_item){kind, owner, k, 0};
    }
}

void paginate_plan(paginate_plan_t *pl, const content_index *idx, const config *cfg,
                   const sources *src, const size_t *groups, size_t nsections)
{
    memset(pl, 0, sizeof *pl);
    size_t cap = 0;
    size_t site_per = cfg->paginate >= 1 ? (size_t)cfg->paginate : PAGINATE_DEFAULT;
    for (size_t i = 0; i < idx->npages; i++) {
        if (idx->pages[i]->kind == PAGE_REGULAR)
            continue;
        size_t n;
        content_kids(idx, i, &n);
        S_add(pl, &cap, PAGER_SECTION, i, paginate_count(n, paginate_of(cfg, idx->pages[i])));
    }
    /* the tag index lists the tags, paginate_tags on each of its pages */
    if (idx->ntags)
        S_add(pl, &cap, PAGER_TAGS, 0, paginate_count(idx->ntags, paginate_tags_of(cfg)));
    for (size_t t = 0; t < idx->ntags; t++)
        S_add(pl, &cap, PAGER_TAG, t, paginate_count(idx->tags[t].npages, site_per));
    /* the sources page lists the sources, sources_per on each of its pages */
    if (src && sources_present(src))
        S_add(pl, &cap, PAGER_SOURCES, 0, paginate_count(sources_count(src), sources_per(src)));
    /* the report: each group's pages with a file, in page order */
    pl->nslots = nsections + 1;
    pl->report_per = site_per;
    pl->report_pages = xcalloc(pl->nslots, sizeof *pl->report_pages);
    pl->report_number = xcalloc(idx->npages + 1, sizeof *pl->report_number);
    size_t *seen = xcalloc(pl->nslots, sizeof *seen);
    for (size_t i = 0; i < idx->npages; i++) {
        size_t s = paginate_slot(pl, groups ? groups[i] : REPORT_GROUP_ALL);
        if (!paginate_in_report(idx, i)) {
            pl->report_number[i] = 1;
            continue;
        }
        pl->report_number[i] = paginate_number_of(seen[s]++, site_per);
    }
    pl->report_base = xcalloc(pl->nslots + 1, sizeof *pl->report_base);
    pl->report_counted = seen; /* the plan's now */
    for (size_t s = 0; s < pl->nslots; s++) {
        pl->report_pages[s] = paginate_count(seen[s], site_per);
        pl->report_base[s + 1] = pl->report_base[s] + pl->report_pages[s];
        S_add(pl, &cap, PAGER_REPORT, s, pl->report_pages[s]);
    }
    pl->report_parts = xcalloc(pl->report_base[pl->nslots] + 1, sizeof *pl->report_parts);
    pl->nstatic = pl->nitems;
    /* each report page's pages, by counting then placing */
    size_t nreport = pl->report_base[pl->nslots];
    pl->report_list_at = xcalloc(nreport + 2, sizeof *pl->report_list_at);
    pl->report_list = xmalloc((idx->npages + 1) * sizeof *pl->report_list);
    size_t *at_of = xmalloc((idx->npages + 1) * sizeof *at_of);
    for (size_t i = 0; i < idx->npages; i++) {
        size_t s = paginate_slot(pl, groups ? groups[i] : REPORT_GROUP_ALL);
        size_t number = pl->report_number[i];
        at_of[i] = number >= 1 && number <= pl->report_pages[s] ? pl->report_base[s] + number - 1
                                                                 : SIZE_MAX;
        if (at_of[i] != SIZE_MAX)
            pl->report_list_at[at_of[i] + 1]++;
    }
    for (size_t k = 0; k < nreport; k++)
        pl->report_list_at[k + 1] += pl->report_list_at[k];
    size_t *fill = xmalloc((nreport + 1) * sizeof *fill);
    memcpy(fill, pl->report_list_at, (nreport + 1) * sizeof *fill);
    for (size_t i = 0; i < idx->npages; i++)
        if (at_of[i] != SIZE_MAX)
            pl->report_list[fill[at_of[i]]++] = i;
    free(fill);
    free(at_of);
}

const size_t *paginate_report_list(const paginate_plan_t *pl, size_t slot, size_t number,
                                   size_t *n)
{
    *n = 0;
    if (!pl->report_list_at || slot >= pl->nslots || number < 1 || number > pl->report_pages[slot])
        return NULL;
    size_t k = pl->report_base[slot] + number - 1;
    *n = pl->report_list_at[k + 1] - pl->report_list_at[k];
    return *n ? pl->report_list + pl->report_list_at[k] : NULL;
}

size_t paginate_rows_of(const paginate_plan_t *pl, size_t slot, size_t number)
{
    if (slot >= pl->nslots || number < 1)
        return paginate_part_rows(pl->report_per);
    size_t before = (number - 1) * pl->report_per, n = pl->report_counted[slot];
    return paginate_part_rows(n <= before ? 1 : n - before < pl->report_per ? n - before
                                                                           : pl->report_per);
}

size_t paginate_parts_of(const paginate_plan_t *pl, size_t slot, size_t number)
{
    if (!pl->report_parts || slot >= pl->nslots || number < 1 ||
        number > pl->report_pages[slot])
        return 1;
    size_t n = pl->report_parts[pl->report_base[slot] + number - 1];
    return n ? n : 1;
}

size_t paginate_plan_parts(paginate_plan_t *pl, const content_index *idx, const size_t *groups,
                           const size_t *nfigs)
{
    pl->nitems = pl->nstatic;
    size_t total = pl->report_base[pl->nslots];
    for (size_t k = 0; k < total; k++)
        pl->report_parts[k] = 1;
    for (size_t i = 0; i < idx->npages; i++) {
        size_t s = paginate_slot(pl, groups ? groups[i] : REPORT_GROUP_ALL);
        size_t number = pl->report_number[i];
        if (!nfigs[i] || number < 1 || number > pl->report_pages[s])
            continue;
        size_t parts = paginate_part_of(nfigs[i] - 1, paginate_rows_of(pl, s, number)) + 1;
        size_t *at = &pl->report_parts[pl->report_base[s] + number - 1];
        if (parts > *at)
            *at = parts;
    }
    size_t cap = pl->nitems;
    for (size_t s = 0; s < pl->nslots; s++)
        for (size_t n = 1; n <= pl->report_pages[s]; n++)
            for (size_t c = 1; c < pl->report_parts[pl->report_base[s] + n - 1]; c++) {
                if (pl->nitems == cap) {
                    cap = cap ? cap * 2 : 16;
                    pl->items = xrealloc(pl->items, cap * sizeof *pl->items);
                }
                pl->items[pl->nitems++] = (pager_item){PAGER_REPORT, s, n, c};
            }
    return pl->nitems - pl->nstatic;
}

void paginate_plan_free(paginate_plan_t *pl)
{
    free(pl->items);
    free(pl->report_number);
    free(pl->report_pages);
    free(pl->report_base);
    free(pl->report_parts);
    free(pl->report_counted);
    free(pl->report_list_at);
    free(pl->report_list);
    memset(pl, 0, sizeof *pl);
}
