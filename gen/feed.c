#include "feed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void S_xml(buf *b, const char *s) { buf_put_xml(b, s ? s : "", s ? strlen(s) : 0); }

bool feed_absolute(const config *c)
{
    return strncmp(c->base_url, "https://", 8) == 0 || strncmp(c->base_url, "http://", 7) == 0;
}

/* date as RFC 3339; an undated page (date NULL) gets fallback, the newest
 * page's date, as Atom requires a date and 1970 would be a false one. */
static void S_rfc3339(buf *b, const char *date, const char *fallback)
{
    if (!date || strlen(date) < 10)
        date = fallback;
    if (!date || strlen(date) < 10) {
        /* no page of the site has a date: the day of the build */
        char today[16];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(today, sizeof today, "%Y-%m-%d", &tm);
        buf_printf(b, "%sT00:00:00Z", today);
        return;
    }
    if (strlen(date) == 10)
        buf_printf(b, "%sT00:00:00Z", date);
    else if (strlen(date) == 16)
        buf_printf(b, "%.10sT%s:00Z", date, date + 11);
    else {
        buf_put(b, date, 10);
        buf_putc(b, 'T');
        buf_puts(b, date + 11);
        if (!strchr(date + 11, 'Z') && !strchr(date + 11, '+') && !strchr(date + 13, '-'))
            buf_putc(b, 'Z');
    }
}

void feed_atom(buf *out, const config *c, const content_index *idx, const page_record *records)
{
    size_t n;
    size_t *order = content_by_date(idx, &n);
    const char *newest = NULL; /* undated pages sort last */
    for (size_t k = 0; k < n && !newest; k++)
        newest = idx->pages[order[k]]->date;
    buf_puts(out, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    buf_printf(out, "<feed xmlns=\"http://www.w3.org/2005/Atom\" xml:lang=\"");
    S_xml(out, c->language);
    buf_puts(out, "\">\n  <title>");
    S_xml(out, c->title);
    buf_puts(out, "</title>\n  <link href=\"");
    S_xml(out, c->base_url);
    buf_puts(out, "\"/>\n  <link rel=\"self\" href=\"");
    S_xml(out, c->base_url);
    buf_puts(out, "feed.xml\"/>\n  <id>");
    S_xml(out, c->base_url);
    buf_puts(out, "</id>\n  <updated>");
    S_rfc3339(out, newest, NULL);
    buf_puts(out, "</updated>\n");
    if (c->author[0]) {
        buf_puts(out, "  <author><name>");
        S_xml(out, c->author);
        buf_puts(out, "</name></author>\n");
    }
    for (size_t k = 0; k < n && k < (size_t)c->feed_entries; k++) {
        const page *p = idx->pages[order[k]];
        const page_record *r = &records[order[k]];
        char *link = xasprintf("%s%s", c->base_url, p->url + 1);
        buf_puts(out, "  <entry>\n    <title>");
        S_xml(out, p->title);
        buf_puts(out, "</title>\n    <link href=\"");
        S_xml(out, link);
        buf_puts(out, "\"/>\n    <id>");
        S_xml(out, link);
        buf_puts(out, "</id>\n    <updated>");
        S_rfc3339(out, p->updated ? p->updated : p->date, newest);
        buf_puts(out, "</updated>\n");
        const char *summary = r->summary;
        if (summary && summary[0]) {
            buf_puts(out, "    <summary>");
            S_xml(out, summary);
            buf_puts(out, "</summary>\n");
        }
        buf_puts(out, "  </entry>\n");
        free(link);
    }
    buf_puts(out, "</feed>\n");
    free(order);
}

/* Whether job j made a page the sitemap lists. */
static bool S_in_sitemap(const page_record *r)
{
    size_t un = r->url ? strlen(r->url) : 0;
    /* not a page: 404.html, checks.json */
    return r->done && un > 0 && r->url[un - 1] == '/' && r->out_bytes > 0;
}

size_t feed_sitemap_parts(size_t pages)
{
    return pages > FEED_SITEMAP_MAX ? (pages - 1) / FEED_SITEMAP_MAX + 1 : 0;
}

size_t feed_sitemap_part_name(char name[FEED_PART_NAME], size_t k)
{
    return (size_t)snprintf(name, FEED_PART_NAME, "sitemap%zu.xml", k);
}

size_t feed_sitemap_files(buf *names, const page_record *records, size_t njobs)
{
    size_t n = 0;
    for (size_t j = 0; j < njobs; j++)
        n += S_in_sitemap(&records[j]);
    buf_put(names, "sitemap.xml", sizeof "sitemap.xml");
    size_t parts = feed_sitemap_parts(n);
    for (size_t k = 1; k <= parts; k++) {
        char name[FEED_PART_NAME];
        buf_put(names, name, feed_sitemap_part_name(name, k) + 1);
    }
    return parts;
}

void feed_sitemap_index(buf *out, const config *cfg, size_t nparts)
{
    buf_puts(out, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
                  "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    for (size_t k = 1; k <= nparts; k++) {
        buf_puts(out, "  <sitemap><loc>");
        S_xml(out, cfg->base_url);
        char name[FEED_PART_NAME];
        buf_put(out, name, feed_sitemap_part_name(name, k));
        buf_puts(out, "</loc></sitemap>\n");
    }
    buf_puts(out, "</sitemapindex>\n");
}

void feed_sitemap(buf *out, const config *cfg, const content_index *idx,
                  const page_record *records, size_t njobs, size_t part)
{
    buf_puts(out, "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
                  "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n");
    size_t first = part ? (part - 1) * FEED_SITEMAP_MAX : 0, seen = 0;
    for (size_t j = 0; j < njobs; j++) {
        const page_record *r = &records[j];
        if (!S_in_sitemap(r))
            continue;
        size_t at = seen++;
        if (at < first)
            continue;
        if (part && at >= first + FEED_SITEMAP_MAX)
            break;
        buf_puts(out, "  <url><loc>");
        S_xml(out, cfg->base_url);
        S_xml(out, r->url + 1);
        buf_puts(out, "</loc>");
        if (j < idx->npages) {
            const page *p = idx->pages[j];
            const char *d = p->updated ? p->updated : p->date;
            if (d) {
                buf_puts(out, "<lastmod>");
                buf_put(out, d, 10);
                buf_puts(out, "</lastmod>");
            }
        }
        buf_puts(out, "</url>\n");
    }
    buf_puts(out, "</urlset>\n");
}
