/* luasite: `site` and `report` as templates see them, and the helpers that
 * let a template find what it needs without scanning a list: site.section,
 * site.page, site.pages_by_tag, site.page_with_template, and a listing's
 * page.paginator. Part of the renderer (render_state.h).
 *
 * Every list here is a read-only view (luaview.h) over the build's listings,
 * made once by the parent (content.h's by_date, kids, sections; the tags;
 * paginate.h's plan): a page that reads site.pages pays for the entries it
 * reads, not for sorting the site. The views expire when the page's job ends,
 * so a page cannot keep one for the next (tests/e2e/hostile.sh). */
#ifndef KV_LUASITE_H
#define KV_LUASITE_H

#include <stddef.h>

typedef struct renderer renderer;

/* Pushes `site` for the current job. */
void lv_push_site(renderer *r);
/* Pushes `report` of part (0..) of page number (1..) of a report group's
 * pages (report.h's REPORT_GROUP_ or a report section's position;
 * paginate.h's parts). */
void lv_push_report(renderer *r, size_t group, size_t number, size_t part);
/* Pushes a view of n tags of site.tags from the lo-th (0-based): a page of
 * the tag index, its page.terms. */
void lv_push_tag_slice(renderer *r, size_t lo, size_t n);
/* Pushes a view of n entries of site.sources from the lo-th (0-based): a
 * page of the sources page, its page.sources. */
void lv_push_source_slice(renderer *r, size_t lo, size_t n);
/* Pushes a listing's paginator: {number, total_pages, per_page, total (the
 * entries), first, last, prev, next (URLs with the base path; prev and next
 * nil at the ends)}. first_path: the listing's first page ("/posts/"). */
void lv_push_paginator(renderer *r, const char *first_path, size_t number, size_t nitems,
                       size_t per);

#endif
