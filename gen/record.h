/* record: what a worker sends back to the parent for each page it rendered, and
 * its wire format (length-prefixed fields over a pipe). The parent keeps the
 * records of every page for the listings, the link check and the checks report.
 * A record owns everything it points to; record_free releases it. */
#ifndef KV_RECORD_H
#define KV_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "diag.h"
#include "figure.h"
#include "figstore.h"
#include "markdown.h"
#include "outrec.h"

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
    uint64_t links_at;    /* ids and links in a figstore (ids, links NULL; the
                           * counts stay): their encoding's offset there */
    uint32_t links_len;   /* and length; 0: in memory (record_links) */
    figure *figs;         /* NULL when they are in a figstore (or there are none) */
    size_t nfigs;
    uint64_t figs_at;     /* stored figures: their encoding's offset in the store */
    uint32_t figs_len;    /* and length */
    uint32_t fig_counts[FIG_TIERS + 1]; /* decoded records: figures per tier, then failed */
    uint64_t figs_hash;   /* decoded records: stamp of the figures' encoding */
    diag_list diags;
    uint64_t out_bytes;   /* bytes written */
    uint64_t out_stamp;   /* the written file's stamp (stamp_of_stat), 0: unknown */
    /* For the output tables (output_table_save): the written file's digest
     * and stamp, and the published file's stamp when it held the same bytes
     * (full builds); zero stamps when unknown */
    outrec_digest out_digest;
    outrec_stamp out_at, pub_at;
    uint32_t reads_totals; /* 1: the page showed the site's figure totals
                           * (render_env.site_totals): it depends on every
                           * page's counts, without a read of each record */
    uint32_t out_changed; /* 1: the file's bytes differ from the published output's
                           * (full builds, output_differs), or may */
    char *inputs;         /* NUL-separated files read (templates, checks/) */
    size_t inputs_len;
    uint32_t *reads;      /* jobs whose records this page read (listings, the
                           * report), each once, in first-read order */
    size_t nreads;        /* how many (also when they are in read_runs) */
    uint32_t *read_runs;  /* decoded records: the same as runs of consecutive
                           * jobs, (first, count) pairs, and reads NULL: a
                           * report page reads every record, page by page */
    size_t nruns;
    char *block;          /* a decoded record's strings all live in this one
                           * allocation (NULL: each string is its own) */
} page_record;

void record_init(page_record *r);
void record_free(page_record *r);
/* st: where r's figures are when r->figs is NULL (may be NULL otherwise). */
void record_encode(const page_record *r, const figstore *st, buf *out);
/* The same, reading stored figures through win (one reader's, see
 * figstore_view): records encoded one after the other share its reads. */
void record_encode_via(const page_record *r, const figstore *st, fs_window *win, buf *out);
/* Returns 0, or -1 when the bytes are not a well-formed record. With a store,
 * the figures, the ids and the links are appended to it as they are encoded
 * (checked, not kept). */
int record_decode(const char *data, size_t len, figstore *st, page_record *r);
/* A fingerprint of what other pages can read of a record (url, src, summary,
 * figures): a page that read it is stale when it changes. */
uint64_t record_digest(const page_record *r);

/* The jobs r read, in order, wherever they are kept: at starts at {0, 0};
 * sets *job to the next and returns true, or returns false at the end. */
typedef struct {
    size_t i, k;
} record_read_pos;
bool record_read_next(const page_record *r, record_read_pos *at, uint32_t *job);

/* A record's ids and links read back from a store, reused from one record
 * to the next. */
typedef struct {
    char **ids;
    md_link *links;
    char *block; /* their strings */
    buf raw;     /* their encoding */
    /* Set by a reader that goes through the records about in the order the
     * store got them (the link check, page after page): their encodings are
     * read through win, one pread serving dozens of records, not one each */
    bool in_order;
    fs_window win;
} record_links_buf;

void record_links_buf_free(record_links_buf *lb);
/* r's ids (r->nids) and links (r->nlinks): r's own, or read back from st
 * into lb, valid until lb is used again or freed (lb owns them). 0, or -1
 * when they cannot be read (an I/O error, or bytes that are not what r
 * says). A decoded record keeps them in the store: the parent holds every
 * record to the end, and they are most of a record (a report page links
 * every figure's row). */
int record_links(const page_record *r, const figstore *st, record_links_buf *lb,
                 char *const **ids, const md_link **links);

/* Figures decoded from a store, reused from one record to the next. */
typedef struct {
    figure *figs;
    size_t cap;
    fs_window win; /* the encoding read back: the figures' strings point into it */
} record_figs_buf;

void record_figs_buf_free(record_figs_buf *fb);
/* r's figures (r->nfigs of them): r->figs, or decoded from st into fb, valid
 * until fb is used again or freed. Stored figures are read into fb->win and
 * their strings point there, NUL-terminated (nothing else is copied): fb
 * owns them, the caller reads them only. NULL when they cannot be read (an
 * I/O error, or bytes that are not the figures r says). */
const figure *record_figures(const page_record *r, const figstore *st, record_figs_buf *fb);
/* counts[0..FIG_TIERS): figures per tier; counts[FIG_TIERS]: failed ones. */
void record_fig_counts(const page_record *r, uint32_t counts[FIG_TIERS + 1]);

#endif
