/* feed: the listings of a whole site that are not pages: the Atom feed
 * (feed.xml, the newest pages by date) and sitemap.xml (every page). Each is
 * made from the content index and the jobs' records once every page is
 * rendered, and appended to a buffer the caller owns. */
#ifndef KV_FEED_H
#define KV_FEED_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "config.h"
#include "content.h"
#include "record.h"

/* The Atom feed: the site's cfg->feed_entries newest pages, each with its
 * record's summary. records: by job (a page's job is its index). */
void feed_atom(buf *out, const config *cfg, const content_index *idx, const page_record *records);

/* Whether cfg's base_url has a scheme and host ("https://host/..."): the
 * sitemap protocol and Atom ids need absolute URLs, so without one the build
 * writes no sitemap.xml and says so in a note (README: base_url). */
bool feed_absolute(const config *cfg);

/* The sitemap: every job that made a page (a URL ending in "/"), with the
 * page's date as lastmod. */
void feed_sitemap(buf *out, const config *cfg, const content_index *idx,
                  const page_record *records, size_t njobs);

#endif
