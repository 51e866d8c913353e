/* config: site.yaml, every key optional, with the defaults documented in README.md.
 *
 * config_load() fills a config from <root>/site.yaml (a missing file is fine) and
 * reports unknown keys and wrong types as errors at their line; the caller treats
 * any such error as a configuration error (exit status 2). Strings in a config are
 * owned by it and released by config_free(). */
#ifndef KV_CONFIG_H
#define KV_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "diag.h"
#include "yv.h"

typedef struct {
    size_t page_bytes;         /* one Markdown file */
    size_t front_matter_bytes; /* its YAML header */
    size_t data_bytes;         /* one file read by data() or require() */
    size_t template_bytes;     /* one template */
    size_t output_bytes;       /* everything a build writes */
    size_t files;              /* files under content/ */
    size_t page_tags;          /* tags in one page's front matter */
    int depth;                 /* directory, YAML and Markdown nesting */
    long long lua_instructions; /* per page */
    size_t lua_memory;         /* bytes of Lua heap per page */
    double page_timeout;       /* seconds of wall clock per page */
    double build_timeout;      /* seconds of wall clock for all the pages of a build */
    size_t worker_memory;      /* address-space limit of a worker, bytes; 0 = none */
} config_limits;

typedef struct {
    char *title;
    char *base_url;    /* as configured, always ending in '/' */
    char *base_path;   /* path part of base_url without the final '/': "" or "/docs" */
    int base_url_line, base_url_col; /* where site.yaml sets base_url; 0 when it does not */
    char *language;
    char *description;
    char *author;
    char *theme;       /* "default", "none", or "" (the default theme when there is no
                          templates/ folder): see theme.h */
    bool unsafe_html;        /* markdown.unsafe */
    bool unverified_error;   /* figures.unverified: error */
    double tolerance;        /* figures.tolerance, relative, for approximate quotes */
    int jobs;                /* build.jobs; 0 = number of cores */
    int feed_entries;        /* feed.entries */
    int paginate;            /* entries per listing page (paginate.h) */
    int paginate_tags;       /* tags per page of the tag index (paginate.h) */
    int paginate_sources;    /* entries per page of the sources page (sources.h) */
    bool search;             /* search.enabled: a Pagefind index (search.h) */
    char *pagefind;          /* search.pagefind: the program, "" for pagefind on PATH */
    double search_timeout;   /* search.timeout: seconds Pagefind may take */
    config_limits limits;
    yv *doc;                 /* the parsed file (owned), NULL when there is none */
    const yv *params;        /* params: passed to templates as site.params; into doc */
    const yv *allow_active;  /* content.allow_active: a list of strings (glob patterns
                              * of content/ files that may run script); into doc */
} config;

void config_defaults(config *c);
/* Returns 0, or -1 after adding errors to dl. Applies the ceilings of the
 * environment variable KVSITE_LIMITS (config_ceilings) after site.yaml. */
int config_load(config *c, const char *root, diag_list *dl);

/* Ceilings that site.yaml cannot exceed, pinned by whoever runs the build
 * (CI) rather than by the tree it builds: spec is "NAME=NUMBER,..." where
 * NAME is a limits.* key without "limits." (page_timeout=10,
 * lua_instructions=2e8; worker_memory=0 pins nothing) or unsafe=0 (forbids
 * markdown.unsafe). A limit pinned twice keeps the lower value. A setting
 * site.yaml gives above its ceiling is an error at its line naming both
 * values; a default above it is lowered to it. spec NULL or "": nothing
 * pinned. Returns 0, or -1 after adding errors to dl. */
int config_ceilings(config *c, const char *spec, diag_list *dl);
void config_free(config *c);

#endif
