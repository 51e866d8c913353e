/* Unit tests for gen/config.c: defaults, every key of site.yaml, unknown keys,
 * wrong types and ranges at their line:col, and the forms of base_url. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "buf.h"
#include "config.h"
#include "diag.h"
#include "fsutil.h"
#include "yv.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- fixtures: one temporary project root per test ------------------------ */

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-config-XXXXXX"); }
static int S_teardown(void **state) { return tmpdir_teardown(state); }

static void S_site(void **state, const char *yaml)
{
    char *p = fs_join(*state, "site.yaml");
    assert_int_equal(fs_write_file(p, yaml, strlen(yaml)), 0);
    free(p);
}

/* Loads yaml as site.yaml; returns config_load's status. */
static int S_load(void **state, const char *yaml, config *c, diag_list *dl)
{
    S_site(state, yaml);
    config_defaults(c);
    diag_list_init(dl);
    return config_load(c, *state, dl);
}

/* Exactly one error, at line:col, with this message. */
static void S_one_error(const diag_list *dl, int line, int col, const char *msg)
{
    if (dl->n != 1)
        fail_msg("%zu diagnostics (first: %s), expected 1", dl->n, dl->n ? dl->v[0].msg : "-");
    assert_int_equal(dl->errors, 1);
    assert_string_equal(dl->v[0].file, "site.yaml");
    assert_string_equal(dl->v[0].msg, msg);
    assert_int_equal(dl->v[0].line, line);
    assert_int_equal(dl->v[0].col, col);
}

static void S_expect_error(void **state, const char *yaml, int line, int col, const char *msg)
{
    config c;
    diag_list dl;
    assert_int_equal(S_load(state, yaml, &c, &dl), -1);
    S_one_error(&dl, line, col, msg);
    config_free(&c);
    diag_list_free(&dl);
}

/* ---- defaults ------------------------------------------------------------- */

static void S_check_defaults(const config *c)
{
    assert_string_equal(c->title, "Untitled site");
    assert_string_equal(c->base_url, "/");
    assert_string_equal(c->base_path, "");
    assert_string_equal(c->language, "en");
    assert_string_equal(c->description, "");
    assert_string_equal(c->author, "");
    assert_false(c->unsafe_html);
    assert_false(c->unverified_error);
    assert_true(c->tolerance == 0.05);
    assert_int_equal(c->jobs, 0);
    assert_int_equal(c->feed_entries, 20);
    assert_false(c->search);
    assert_string_equal(c->pagefind, "");
    assert_true(c->search_timeout == 120.0);
    assert_int_equal(c->limits.page_bytes, 4u << 20);
    assert_int_equal(c->limits.front_matter_bytes, 64u << 10);
    assert_int_equal(c->limits.data_bytes, 8u << 20);
    assert_int_equal(c->limits.template_bytes, 1u << 20);
    assert_int_equal(c->limits.output_bytes, (size_t)1 << 30);
    assert_int_equal(c->limits.files, 100000);
    assert_int_equal(c->limits.depth, 32);
    assert_int_equal(c->limits.lua_instructions, 200000000);
    assert_int_equal(c->limits.lua_memory, 32u << 20);
    assert_true(c->limits.page_timeout == 10.0);
    assert_int_equal(c->limits.worker_memory, (size_t)2 << 30);
    assert_null(c->params);
}

static void test_defaults(void **state)
{
    (void)state;
    config c;
    config_defaults(&c);
    S_check_defaults(&c);
    assert_null(c.doc);
    config_free(&c);
    assert_null(c.title);
    config_free(&c); /* twice is harmless */
}

static void test_missing_file_is_fine(void **state)
{
    config c;
    config_defaults(&c);
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(config_load(&c, *state, &dl), 0);
    assert_int_equal(dl.n, 0);
    S_check_defaults(&c);
    assert_null(c.doc);
    config_free(&c);
    diag_list_free(&dl);
}

static void test_empty_file_keeps_defaults(void **state)
{
    static const char *empties[] = {"", "# only a comment\n", "\n\n"};
    for (size_t i = 0; i < N(empties); i++) {
        config c;
        diag_list dl;
        assert_int_equal(S_load(state, empties[i], &c, &dl), 0);
        assert_int_equal(dl.n, 0);
        S_check_defaults(&c);
        config_free(&c);
        diag_list_free(&dl);
    }
}

/* ---- every key ------------------------------------------------------------ */

static void test_every_key(void **state)
{
    config c;
    diag_list dl;
    int rc = S_load(state,
                    "title: KV-cache map\n"
                    "base_url: https://example.org/kv/\n"
                    "language: zh-CN\n"
                    "description: \"Every number checked\"\n"
                    "author: The study group\n"
                    "params:\n"
                    "  github: https://github.com/x/y\n"
                    "  nested: {a: 1}\n"
                    "markdown:\n"
                    "  unsafe: true\n"
                    "figures:\n"
                    "  unverified: error\n"
                    "  tolerance: 0.1\n"
                    "build:\n"
                    "  jobs: 4\n"
                    "feed:\n"
                    "  entries: 50\n"
                    "limits:\n"
                    "  page_bytes: 2048\n"
                    "  front_matter_bytes: 4096\n"
                    "  data_bytes: 1048576\n"
                    "  template_bytes: 65536\n"
                    "  output_bytes: 2097152\n"
                    "  files: 500\n"
                    "  depth: 8\n"
                    "  lua_instructions: 1000000000000\n"
                    "  lua_memory: 67108864\n"
                    "  page_timeout: 2.5\n"
                    "  worker_memory: 0\n",
                    &c, &dl);
    if (rc != 0)
        fail_msg("%s", dl.n ? dl.v[0].msg : "?");
    assert_int_equal(dl.n, 0);
    assert_string_equal(c.title, "KV-cache map");
    assert_string_equal(c.base_url, "https://example.org/kv/");
    assert_string_equal(c.base_path, "/kv");
    assert_string_equal(c.language, "zh-CN");
    assert_string_equal(c.description, "Every number checked");
    assert_string_equal(c.author, "The study group");
    assert_true(c.unsafe_html);
    assert_true(c.unverified_error);
    assert_true(c.tolerance == 0.1);
    assert_int_equal(c.jobs, 4);
    assert_int_equal(c.feed_entries, 50);
    assert_int_equal(c.limits.page_bytes, 2048);
    assert_int_equal(c.limits.front_matter_bytes, 4096);
    assert_int_equal(c.limits.data_bytes, 1048576);
    assert_int_equal(c.limits.template_bytes, 65536);
    assert_int_equal(c.limits.output_bytes, 2097152);
    assert_int_equal(c.limits.files, 500);
    assert_int_equal(c.limits.depth, 8);
    assert_true(c.limits.lua_instructions == 1000000000000LL);
    assert_int_equal(c.limits.lua_memory, 67108864);
    assert_true(c.limits.page_timeout == 2.5);
    assert_int_equal(c.limits.worker_memory, 0);
    assert_non_null(c.doc);
    assert_non_null(c.params);
    assert_int_equal(c.params->type, YV_MAP);
    assert_string_equal(yv_string(yv_get(c.params, "github")), "https://github.com/x/y");
    assert_int_equal(yv_get(yv_get(c.params, "nested"), "a")->i, 1);
    config_free(&c);
    diag_list_free(&dl);
}

static void test_scalars_as_strings_and_opposites(void **state)
{
    config c;
    diag_list dl;
    /* numbers are fine where text is expected, as written */
    assert_int_equal(S_load(state,
                            "title: 2024\n"
                            "author: 1.50\n"
                            "figures:\n"
                            "  unverified: warning\n"
                            "  tolerance: 0\n"
                            "markdown: {unsafe: false}\n"
                            "limits: {page_timeout: 3}\n",
                            &c, &dl),
                     0);
    assert_string_equal(c.title, "2024");
    assert_string_equal(c.author, "1.50");
    assert_false(c.unverified_error);
    assert_true(c.tolerance == 0.0);
    assert_false(c.unsafe_html);
    assert_true(c.limits.page_timeout == 3.0);
    config_free(&c);
    diag_list_free(&dl);
}

/* ---- unknown keys --------------------------------------------------------- */

static void test_unknown_top_level_key(void **state)
{
    S_expect_error(state, "title: x\ntitel: y\n", 2, 1,
                   "unknown key \"titel\"; known keys: title, base_url, language, description, "
                   "author, theme, params, content, markdown, figures, build, feed, paginate, "
                   "paginate_tags, paginate_sources, search, limits");
}

static void test_unknown_key_in_section(void **state)
{
    S_expect_error(state, "limits:\n  page_bytes: 4096\n  pages: 3\n", 3, 3,
                   "unknown key \"pages\" in limits; known keys: page_bytes, front_matter_bytes, "
                   "data_bytes, template_bytes, output_bytes, files, page_tags, depth, "
                   "lua_instructions, lua_memory, page_timeout, build_timeout, worker_memory");
    S_expect_error(state, "figures:\n  strict: true\n", 2, 3,
                   "unknown key \"strict\" in figures; known keys: unverified, tolerance");
    S_expect_error(state, "markdown: {unsafe: true, smart: true}\n", 1, 26,
                   "unknown key \"smart\" in markdown; known keys: unsafe");
}

static void test_dotted_key_is_unknown(void **state)
{
    /* keys nest: "markdown.unsafe" written as one top-level key is not a setting */
    S_expect_error(state, "markdown.unsafe: true\n", 1, 1,
                   "unknown key \"markdown.unsafe\"; known keys: title, base_url, language, "
                   "description, author, theme, params, content, markdown, figures, build, feed, paginate, "
                   "paginate_tags, paginate_sources, search, limits");
}

/* content.allow_active: a list of non-empty strings, kept as the YAML list */
static void test_allow_active(void **state)
{
    config c;
    diag_list dl;
    assert_null(((config){0}).allow_active);
    assert_int_equal(S_load(state, "content:\n  allow_active: [logo.svg, \"demos/*.html\"]\n", &c, &dl),
                     0);
    assert_non_null(c.allow_active);
    assert_int_equal(c.allow_active->n, 2);
    assert_string_equal(c.allow_active->items[1]->str, "demos/*.html");
    config_free(&c);
    diag_list_free(&dl);
    S_expect_error(state, "content:\n  allow_active: logo.svg\n", 2, 3,
                   "content.allow_active must be a list of file patterns, not a string");
    S_expect_error(state, "content:\n  allow_active: [a.svg, \"\"]\n", 2, 25,
                   "content.allow_active: every item must be a file pattern (\"demos/*.html\"), "
                   "not an empty string");
    S_expect_error(state, "content:\n  allow_active: [[a]]\n", 2, 18,
                   "content.allow_active: every item must be a file pattern (\"demos/*.html\"), "
                   "not a list");
}

static void test_every_error_is_reported(void **state)
{
    config c;
    diag_list dl;
    assert_int_equal(S_load(state,
                            "titel: a\n"
                            "build:\n"
                            "  jobs: many\n"
                            "limits:\n"
                            "  depth: 1\n"
                            "feed: 3\n",
                            &c, &dl),
                     -1);
    assert_int_equal(dl.errors, 4);
    assert_int_equal(dl.v[0].line, 1);
    assert_int_equal(dl.v[1].line, 3);
    assert_string_equal(dl.v[1].msg, "build.jobs must be an integer, not a string");
    assert_int_equal(dl.v[2].line, 5);
    assert_string_equal(dl.v[2].msg, "limits.depth must be between 2 and 1000, not 1");
    assert_int_equal(dl.v[3].line, 6);
    assert_int_equal(dl.v[3].col, 1);
    config_free(&c);
    diag_list_free(&dl);
}

/* ---- wrong types and ranges, at the key's line:col ------------------------ */

typedef struct {
    const char *yaml;
    int line, col;
    const char *msg;
} err_case;

static const err_case S_type_errors[] = {
    {"title: [a, b]\n", 1, 1, "title must be a string, not a list"},
    {"language:\n  en: 1\n", 1, 1, "language must be a string, not a map"},
    {"description: ~\n", 1, 1, "description must be a string, not null"},
    {"author: true\n", 1, 1, "author must be a string, not a boolean"},
    {"params: [1]\n", 1, 1, "params must be a map, not a list"},
    {"markdown:\n  unsafe: yes\n", 2, 3, "markdown.unsafe must be true or false, not a string"},
    {"figures:\n  unverified: fatal\n", 2, 3,
     "figures.unverified must be \"warning\" or \"error\""},
    {"figures:\n  unverified: true\n", 2, 3,
     "figures.unverified must be \"warning\" or \"error\""},
    {"figures:\n  tolerance: \"5%\"\n", 2, 3, "figures.tolerance must be a number, not a string"},
    {"figures:\n  tolerance: 1.5\n", 2, 3, "figures.tolerance must be between 0 and 1, not 1.5"},
    {"figures:\n  tolerance: -0.1\n", 2, 3,
     "figures.tolerance must be between 0 and 1, not -0.1"},
    {"figures:\n  tolerance: .nan\n", 2, 3,
     "figures.tolerance must be between 0 and 1, not .nan"},
    {"build:\n  jobs: 2.5\n", 2, 3, "build.jobs must be an integer, not a float"},
    {"build:\n  jobs: 300\n", 2, 3, "build.jobs must be between 0 and 256, not 300"},
    {"build:\n  jobs: -1\n", 2, 3, "build.jobs must be between 0 and 256, not -1"},
    {"feed:\n  entries: 0\n", 2, 3, "feed.entries must be between 1 and 10000, not 0"},
    {"search:\n  enabled: yes\n", 2, 3, "search.enabled must be true or false, not a string"},
    {"search:\n  timeout: 0\n", 2, 3, "search.timeout must be between 1 and 86400, not 0"},
    {"search:\n  pagefind: [a]\n", 2, 3, "search.pagefind must be a string, not a list"},
    {"limits:\n  page_bytes: 10\n", 2, 3,
     "limits.page_bytes must be between 1024 and 1e+09, not 10"},
    {"limits:\n  lua_memory: 1.5e7\n", 2, 3, "limits.lua_memory must be an integer, not a float"},
    {"limits:\n  depth: 1001\n", 2, 3, "limits.depth must be between 2 and 1000, not 1001"},
    {"limits:\n  page_timeout: 0.01\n", 2, 3,
     "limits.page_timeout must be between 0.1 and 86400, not 0.01"},
    {"limits:\n  files: 0x10000000\n", 2, 3,
     "limits.files must be between 1 and 1e+08, not 0x10000000"},
    {"limits:\n  lua_instructions: 999\n", 2, 3,
     "limits.lua_instructions must be between 1000 and 1e+15, not 999"},
    {"limits: [1]\n", 1, 1, "limits must be a map, not a list"},
    {"markdown: \"unsafe\"\n", 1, 1, "markdown must be a map, not a string"},
    {"  title: x\n  base_url: 5\n", 2, 3,
     "base_url \"5\" must start with \"/\" or \"http(s)://\""},
    {"- a\n- b\n", 1, 1, "site.yaml must be a map of settings"},
};

static void test_type_errors(void **state)
{
    for (size_t i = 0; i < N(S_type_errors); i++) {
        config c;
        diag_list dl;
        int rc = S_load(state, S_type_errors[i].yaml, &c, &dl);
        if (rc != -1 || dl.n != 1 || strcmp(dl.v[0].msg, S_type_errors[i].msg) != 0 ||
            dl.v[0].line != S_type_errors[i].line || dl.v[0].col != S_type_errors[i].col)
            fail_msg("case %zu (%s): rc %d, %zu diagnostics, first %d:%d \"%s\"", i,
                     S_type_errors[i].yaml, rc, dl.n, dl.n ? dl.v[0].line : 0,
                     dl.n ? dl.v[0].col : 0, dl.n ? dl.v[0].msg : "");
        assert_string_equal(dl.v[0].file, "site.yaml");
        config_free(&c);
        diag_list_free(&dl);
    }
}

static void test_type_names_read_as_english(void **state)
{
    /* "not an integer", never "not a integer" */
    S_expect_error(state, "markdown:\n  unsafe: 1\n", 2, 3,
                   "markdown.unsafe must be true or false, not an integer");
}

static void test_invalid_yaml(void **state)
{
    config c;
    diag_list dl;
    assert_int_equal(S_load(state, "title: ok\nbase_url: [\n", &c, &dl), -1);
    assert_int_equal(dl.errors, 1);
    assert_string_equal(dl.v[0].file, "site.yaml");
    assert_true(dl.v[0].line >= 2);
    S_check_defaults(&c);
    config_free(&c);
    diag_list_free(&dl);
}

static void test_unreadable_file(void **state)
{
    /* a folder named site.yaml */
    char *p = fs_join(*state, "site.yaml");
    assert_int_equal(mkdir(p, 0755), 0);
    config c;
    config_defaults(&c);
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(config_load(&c, *state, &dl), -1);
    char want[200];
    snprintf(want, sizeof want, "cannot read: %s", strerror(EISDIR));
    S_one_error(&dl, 0, 0, want);
    config_free(&c);
    diag_list_free(&dl);
    rmdir(p);

    /* larger than 1 MiB */
    size_t n = (1u << 20) + 1;
    char *big = xmalloc(n);
    memset(big, '#', n);
    big[n - 1] = '\n';
    assert_int_equal(fs_write_file(p, big, n), 0);
    free(big);
    free(p);
    config_defaults(&c);
    diag_list_init(&dl);
    assert_int_equal(config_load(&c, *state, &dl), -1);
    S_one_error(&dl, 0, 0, "cannot read: file too large (limit 1048576 bytes)");
    config_free(&c);
    diag_list_free(&dl);
}

/* ---- base_url ------------------------------------------------------------- */

typedef struct {
    const char *value;
    const char *base_url, *base_path;
} base_case;

static const base_case S_bases[] = {
    {"/", "/", ""},
    {"/docs", "/docs/", "/docs"},
    {"/docs/", "/docs/", "/docs"},
    {"/a/b/c/", "/a/b/c/", "/a/b/c"},
    {"https://h/x/", "https://h/x/", "/x"},
    {"https://h/x", "https://h/x/", "/x"},
    {"https://example.org", "https://example.org/", ""},
    {"https://example.org/", "https://example.org/", ""},
    {"http://localhost:8080/kv/site/", "http://localhost:8080/kv/site/", "/kv/site"},
    {"\"/中文/\"", "/中文/", "/中文"},
};

static void test_base_url_forms(void **state)
{
    for (size_t i = 0; i < N(S_bases); i++) {
        char yaml[200];
        snprintf(yaml, sizeof yaml, "title: t\nbase_url: %s\n", S_bases[i].value);
        config c;
        diag_list dl;
        int rc = S_load(state, yaml, &c, &dl);
        if (rc != 0)
            fail_msg("case %zu (%s): %s", i, S_bases[i].value, dl.n ? dl.v[0].msg : "?");
        if (strcmp(c.base_url, S_bases[i].base_url) != 0 ||
            strcmp(c.base_path, S_bases[i].base_path) != 0)
            fail_msg("case %zu (%s): base_url \"%s\", base_path \"%s\"", i, S_bases[i].value,
                     c.base_url, c.base_path);
        config_free(&c);
        diag_list_free(&dl);
    }
}

static const err_case S_base_errors[] = {
    {"title: t\nbase_url: docs/\n", 2, 1,
     "base_url \"docs/\" must start with \"/\" or \"http(s)://\""},
    {"base_url: \"\"\n", 1, 1, "base_url \"\" must start with \"/\" or \"http(s)://\""},
    {"base_url: ftp://h/x/\n", 1, 1,
     "base_url \"ftp://h/x/\" must start with \"/\" or \"http(s)://\""},
    {"base_url: https:///x/\n", 1, 1, "base_url \"https:///x/\" has no host"},
    {"base_url: https://\n", 1, 1, "base_url \"https://\" has no host"},
    {"base_url: \"/a b/\"\n", 1, 1, "base_url \"/a b/\" contains a character not allowed here"},
    {"base_url: /a?x=1\n", 1, 1, "base_url \"/a?x=1\" contains a character not allowed here"},
    {"base_url: \"/a#frag\"\n", 1, 1,
     "base_url \"/a#frag\" contains a character not allowed here"},
    {"base_url: \"/a\\\"b/\"\n", 1, 1,
     "base_url \"/a\"b/\" contains a character not allowed here"},
    {"base_url: \"/<x>/\"\n", 1, 1, "base_url \"/<x>/\" contains a character not allowed here"},
    /* regression: a protocol-relative base was accepted */
    {"base_url: \"//evil.example/\"\n", 1, 1,
     "base_url \"//evil.example/\" is protocol-relative; write \"https://host/...\" or a path "
     "\"/...\""},
    {"base_url: \"javascript:alert(1)//\"\n", 1, 1,
     "base_url \"javascript:alert(1)//\" must start with \"/\" or \"http(s)://\""},
};

static void test_base_url_errors(void **state)
{
    for (size_t i = 0; i < N(S_base_errors); i++) {
        config c;
        diag_list dl;
        int rc = S_load(state, S_base_errors[i].yaml, &c, &dl);
        if (rc != -1 || dl.n != 1 || strcmp(dl.v[0].msg, S_base_errors[i].msg) != 0 ||
            dl.v[0].line != S_base_errors[i].line || dl.v[0].col != S_base_errors[i].col)
            fail_msg("case %zu (%s): rc %d, %zu diagnostics, first %d:%d \"%s\"", i,
                     S_base_errors[i].yaml, rc, dl.n, dl.n ? dl.v[0].line : 0,
                     dl.n ? dl.v[0].col : 0, dl.n ? dl.v[0].msg : "");
        config_free(&c);
        diag_list_free(&dl);
    }
}

/* ---- ceilings (KVSITE_LIMITS) ------------------------------------------- */

/* Regression: site.yaml could lift every limit (page_timeout: 86400) and turn
 * on markdown.unsafe; ceilings pinned outside the tree now hold. */
static void test_ceilings(void **state)
{
    config c;
    diag_list dl;
    const char *yaml = "title: t\nlimits:\n  page_timeout: 86400\n  lua_instructions: "
                       "1000000000000000\n  depth: 10\nmarkdown:\n  unsafe: true\n";
    assert_int_equal(S_load(state, yaml, &c, &dl), 0);
    assert_int_equal(config_ceilings(&c, "page_timeout=10,lua_instructions=2e8,depth=20,"
                                          "unsafe=0,page_timeout=30", &dl), -1);
    assert_int_equal(dl.n, 3);
    /* in the order of the keys in README's table */
    assert_string_equal(dl.v[0].msg, "limits.lua_instructions is 1000000000000000, above the "
                                     "ceiling 200000000 that KVSITE_LIMITS (or --limits) sets");
    assert_int_equal(dl.v[0].line, 4);
    assert_int_equal(dl.v[0].col, 3);
    assert_string_equal(dl.v[1].msg, "limits.page_timeout is 86400, above the ceiling 10 that "
                                     "KVSITE_LIMITS (or --limits) sets");
    assert_int_equal(dl.v[1].line, 3);
    assert_string_equal(dl.v[2].msg,
                        "markdown.unsafe is true, but KVSITE_LIMITS (or --no-unsafe) forbids it");
    assert_int_equal(dl.v[2].line, 7);
    config_free(&c);
    diag_list_free(&dl);

    /* values within the ceilings stand; defaults above them are lowered */
    assert_int_equal(S_load(state, "limits:\n  page_timeout: 5\n  worker_memory: 0\n", &c, &dl), 0);
    assert_int_equal(config_ceilings(&c, "page_timeout=10,lua_instructions=1e6,lua_memory=2e6", &dl), 0);
    assert_true(c.limits.page_timeout == 5);
    assert_true(c.limits.lua_instructions == 1000000);
    assert_int_equal(c.limits.lua_memory, 2000000);
    assert_int_equal(c.limits.worker_memory, 0);
    assert_int_equal(config_ceilings(&c, "", &dl), 0);
    assert_int_equal(config_ceilings(&c, NULL, &dl), 0);
    assert_int_equal(dl.n, 0);
    /* worker_memory: 0 (none) is above any ceiling */
    assert_int_equal(config_ceilings(&c, "worker_memory=1e9", &dl), -1);
    assert_string_equal(dl.v[0].msg, "limits.worker_memory is 0 (none), above the ceiling "
                                     "1000000000 that KVSITE_LIMITS (or --limits) sets");
    config_free(&c);
    diag_list_free(&dl);

    /* malformed ceilings are errors, all of them */
    config_defaults(&c);
    diag_list_init(&dl);
    assert_int_equal(config_ceilings(&c, "x,files=,page_timeout=1e9,nope=1,unsafe=2,depth=-1", &dl), -1);
    assert_int_equal(dl.n, 6);
    assert_null(dl.v[0].file);
    assert_string_equal(dl.v[3].msg, "KVSITE_LIMITS: unknown limit \"nope\"");
    assert_string_equal(dl.v[2].msg,
                        "KVSITE_LIMITS: page_timeout must be between 0.1 and 86400, not 1e+09");
    config_free(&c);
    diag_list_free(&dl);
}

#define T(f) cmocka_unit_test_setup_teardown(f, S_setup, S_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        T(test_missing_file_is_fine),
        T(test_empty_file_keeps_defaults),
        T(test_every_key),
        T(test_scalars_as_strings_and_opposites),
        T(test_unknown_top_level_key),
        T(test_unknown_key_in_section),
        T(test_dotted_key_is_unknown),
        T(test_allow_active),
        T(test_every_error_is_reported),
        T(test_type_errors),
        T(test_type_names_read_as_english),
        T(test_invalid_yaml),
        T(test_unreadable_file),
        T(test_base_url_forms),
        T(test_base_url_errors),
        T(test_ceilings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
