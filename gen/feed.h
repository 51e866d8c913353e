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

/* URLs one sitemap file may list (the sitemap protocol's limit, as its 50 MB
 * is: sitemaps.org). A site with more has sitemap.xml as an index of
 * sitemap1.xml, sitemap2.xml, ..., each listing this many (Zola's way). */
#define FEED_SITEMAP_MAX 50000

/* How many sitemap parts a site of this many pages has (0: none, sitemap.xml
 * lists them itself), and part k's file name ("sitemap<k>.xml", into a buffer
 * of FEED_PART_NAME bytes; its length). */
size_t feed_sitemap_parts(size_t pages);
#define FEED_PART_NAME 48
size_t feed_sitemap_part_name(char name[FEED_PART_NAME], size_t k);

/* The sitemap's files, NUL-separated, appended to names: sitemap.xml, then
 * sitemap1.xml ... when the site's pages are more than FEED_SITEMAP_MAX.
 * Returns how many of those parts there are (0: sitemap.xml lists the pages
 * itself). */
size_t feed_sitemap_files(buf *names, const page_record *records, size_t njobs);

/* Sitemap part (1..) of the pages, or with part 0 all of them: every job
 * that made a page (a URL ending in "/"), with the page's date as lastmod. */
void feed_sitemap(buf *out, const config *cfg, const content_index *idx,
                  const page_record *records, size_t njobs, size_t part);

/* The sitemap index of nparts parts (sitemap.xml when the pages need parts). */
void feed_sitemap_index(buf *out, const config *cfg, size_t nparts);

#endif
