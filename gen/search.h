/* search: the optional site search (search.enabled in site.yaml), a
 * Pagefind index that a full build writes into its staging folder before it
 * is swapped in, so the published output never changes after the swap.
 *
 * Pagefind is a program of its own (npm `pagefind`, a native binary; `make
 * deps` installs it under tools/npm): kvsite runs it on the built pages,
 * bounded by search.timeout, and reports its failure, with what it printed,
 * as a build error. Which pages it indexes is the templates' business
 * (data-pagefind-body, data-pagefind-ignore: see README, "Search"). */
#ifndef KV_SEARCH_H
#define KV_SEARCH_H

#include "config.h"
#include "diag.h"

/* The folder of the index in the output, and the URL path under base_path. */
#define SEARCH_DIR "pagefind"

/* At most this much of Pagefind's output is kept for the error. */
#define SEARCH_OUTPUT_MAX ((size_t)16 << 10)

/* The Pagefind program for the site in root: search.pagefind (relative to
 * root unless absolute) when set, else "pagefind" on PATH. NULL when search
 * is off; NULL and one warning in dl when it is on and there is no such
 * program (the site is then built without search). Malloc'ed. */
char *search_find(const config *c, const char *root, diag_list *dl);

/* Runs prog on the built site in site_dir, which gets site_dir/SEARCH_DIR.
 * It gets timeout seconds of wall clock, then it is killed. 0, or -1 with
 * an error in dl that quotes the end of its output. */
int search_index(const char *prog, const char *site_dir, double timeout, diag_list *dl);

#endif
