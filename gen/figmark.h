/* figmark: the HTML of a verified figure in its page, in one place for every tier.
 *
 * A figure reads as its quote, a button that opens a popover with its details
 * (HTML popover and popovertarget: touch, mouse and keyboard, no JavaScript;
 * the button's aria-describedby makes screen readers read them): the tier,
 * the expression, the value in the quote's unit, the provenance or the source,
 * and a link to the figure's row in the checks report. The figure's element has
 * the figure's anchor as its id, so the report links back to it. Words are in
 * the page's language (S_words in figmark.c: English and Chinese).
 *
 * A tier is one row of a table in figmark.c (its key, its label in each
 * language); the look of each tier, a glyph besides its colour, is the
 * theme's CSS, keyed by data-tier. Nothing here allocates but the output buf. */
#ifndef KV_FIGMARK_H
#define KV_FIGMARK_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "figure.h"

/* The language of the words: 1 for Chinese (site.language "zh", "zh-CN",
 * "zh-Hans"...: the theme's partials/i18n.html reads the same), 0 for English
 * (anything else, NULL too). */
int figmark_lang(const char *language);

/* The tier's key in markup, reports and checks.json: "computed", "measured"... */
const char *figmark_tier_key(fig_tier t);

/* What the details of one figure show. Strings are not escaped (figmark does),
 * except the URLs, which are given escaped for an attribute. */
typedef struct {
    const figure *f;     /* its quote, expr, tier, ok, provenance, anchor */
    const char *value;   /* the value in the quote's unit: "234,881,024 B = 224.0 MiB";
                          * NULL for cited or failing figures */
    const char *message; /* why the figure fails; NULL when it passes */
    const char *source;  /* a cited figure's source title, or NULL */
    const char *true_value; /* a refuted claim that holds: the true value as its
                             * quote writes it ("43 GB"), shown beside the struck
                             * quote; NULL otherwise */
    const char *source_url; /* escaped URL of the source entry, or NULL */
    const char *report_url; /* escaped URL of the figure's report row up to the
                             * row's number ("/checks/#notes-x-"), or NULL */
    size_t report_url_len;
    const char *row;     /* the row's number: appended to report_url */
    int lang;            /* figmark_lang */
    bool in_link;        /* inside a link: no button, no popover (no nesting of
                          * interactive content); the quote keeps id and tier */
} figmark;

/* The markup before the quote's (escaped) text, into enter; after it, into exit. */
void figmark_open(buf *enter, const figmark *m);
void figmark_close(buf *exit, const figmark *m);

#endif
