/* links: the site's internal links, normalised to site paths, collected from
 * rendered pages and checked once every page is rendered.
 *
 * Where links come from: the Markdown tree (markdown.c rewrites and records
 * cmark's link and image nodes, md_link), and the HTML a template writes,
 * which links_scan_html reads the way a browser does: tags only, the
 * attribute names href and src exactly (not data-href), values in double,
 * single or no quotes, character references decoded. The same scan notes
 * every id attribute as a target a #fragment may name.
 *
 * A link's target is a site path with its fragment and without the base
 * path or query: "/a/b/#x". Links to other sites are not checked. */
#ifndef KV_LINKS_H
#define KV_LINKS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "diag.h"
#include "record.h"
#include "strmap.h"

/* The target of url[0..n) as written on the page at site path page_url of a
 * site under base_path: a malloc'ed site path (query dropped, %XX decoded,
 * "#x" made page_url#x), or NULL for a link the check does not follow (other
 * sites, other schemes, a path outside base_path). */
char *links_target(const char *url, size_t n, const char *base_path, const char *page_url);
/* The same appended to t: true, or false (t as it was) for a link the check
 * does not follow. */
bool links_target_into(const char *url, size_t n, const char *base_path, const char *page_url,
                       buf *t);

/* Decodes the character references of an HTML attribute value v[0..n)
 * (&amp; &lt; &gt; &quot; &apos; &#N; &#xH;) into out (appended). */
void links_decode_attr(const char *v, size_t n, buf *out);

typedef struct {
    const char *base_path; /* the site's base path ("" or "/docs") */
    const char *page_url;  /* site path of the page scanned */
    const char *file;      /* the file its links are blamed on (a template) */
    /* a value that is skip_prefix followed by a number from 1 to skip_max is
     * one of the page's own figure rows, checked as a figure: not collected
     * (NULL: none) */
    const char *skip_prefix;
    size_t skip_max;
} links_scan_opts;

/* Adds to rec->links every href and src target of html[0..len) not in seen
 * (each then added to seen, with a non-NULL value as every value there must
 * be; the caller owns seen and its keys' copies), and
 * to rec->ids every id attribute's value not noted before. Linear in len. */
void links_scan_html(const char *html, size_t len, const links_scan_opts *o, strmap *seen,
                     page_record *rec);

/* Checks the links of records[0..n) (only those of jobs with only[j] when
 * only is not NULL) against the pages the records produced and the files in
 * files (site paths), and the ids of the page a #fragment names. A page
 * that failed to render has its own error: links to it (a URL in
 * page_urls) stand. A template's broken link is reported once. Decoded
 * records' links and ids are read back from fs (record_links). With
 * threads > 1, a site of many pages is first looked over by up to that many
 * threads for the pages with a broken link, and only those are checked
 * again for the messages: the same messages, in the same order, as with
 * one. The records, maps and store are only read. */
void links_check(const page_record *records, size_t n, const bool *only,
                 const strmap *page_urls, const strmap *files, const figstore *fs,
                 unsigned threads, diag_list *dl);

/* What links_check held, for the tests of its memory: the most ids it held
 * at once (of the few pages whose anchors it was looking up) and the
 * template links it remembered as reported (the broken ones); and how many
 * times it read a page's ids back for a link to another page's anchor. */
typedef struct {
    size_t held_ids;
    size_t remembered;
    size_t id_reads;
} links_stats;

/* links_check on one thread, noting in *st (when not NULL) what it held. */
void links_check_stats(const page_record *records, size_t n, const bool *only,
                       const strmap *page_urls, const strmap *files, const figstore *fs,
                       diag_list *dl, links_stats *st);

#endif
