/* record: what a worker sends back to the parent for each page it rendered, and
 * its wire format (length-prefixed fields over a pipe). The parent keeps the
 * records of every page for the listings, the link check and the checks report.
 * A record owns everything it points to; record_free releases it. */
#ifndef KV_RECORD_H
#define KV_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "diag.h"
#include "figure.h"
#include "markdown.h"

typedef struct {
    uint32_t job;         /* job number the parent gave */
    uint32_t done;        /* 1 when the page was rendered (even with errors) */
    char *url;            /* site path of what was written ("" for none) */
    char *src;            /* file the figures belong to ("" for generated pages) */
    char *summary;        /* first paragraph, plain text ("" for none) */
    char **ids;           /* every id a #fragment may name on this page */
    size_t nids;
    md_link *links;
    size_t nlinks;
    figure *figs;
    size_t nfigs;
    diag_list diags;
    uint64_t out_bytes;   /* bytes written */
    uint64_t out_stamp;   /* the written file's stamp (stamp_of_stat), 0: unknown */
    char *inputs;         /* NUL-separated files read (templates, checks/) */
    size_t inputs_len;
    uint32_t *reads;      /* jobs whose records this page read (listings, the
                           * report), each once, in first-read order */
    size_t nreads;
    char *block;          /* a decoded record's strings all live in this one
                           * allocation (NULL: each string is its own) */
} page_record;

void record_init(page_record *r);
void record_free(page_record *r);
void record_encode(const page_record *r, buf *out);
/* Returns 0, or -1 when the bytes are not a well-formed record. */
int record_decode(const char *data, size_t len, page_record *r);
/* A fingerprint of what other pages can read of a record (url, src, summary,
 * figures): a page that read it is stale when it changes. */
uint64_t record_digest(const page_record *r);

#endif
