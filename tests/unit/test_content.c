/* Unit tests for gen/content.c: the page index built from temporary project
 * trees. URLs, sections (real and virtual), tags, drafts, listing order, every
 * front-matter error at its line, URL collisions, symlinks, caps, slugs, and
 * the same index from one parse thread or several. */
#include <errno.h>
#include <limits.h>
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

#include "buf.h"
#include "config.h"
#include "content.h"
#include "frontmatter.h"
#include "diag.h"
#include "fsutil.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- fixtures ------------------------------------------------------------- */

typedef struct {
    char *root;  /* temporary project root */
    char *other; /* a second temporary folder, outside the project */
    config cfg;
    content_opts opts;
    content_index idx;
    diag_list dl;
    bool loaded;
} fx;

static int S_setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->root = strdup("/tmp/kvsite-test-content-XXXXXX");
    f->other = strdup("/tmp/kvsite-test-content-other-XXXXXX");
    if (!mkdtemp(f->root) || !mkdtemp(f->other))
        return -1;
    config_defaults(&f->cfg);
    diag_list_init(&f->dl);
    *state = f;
    return 0;
}

static int S_teardown(void **state)
{
    fx *f = *state;
    if (f->loaded)
        content_index_free(&f->idx);
    diag_list_free(&f->dl);
    config_free(&f->cfg);
    fs_remove_tree(f->root);
    fs_remove_tree(f->other);
    free(f->root);
    free(f->other);
    free(f);
    return 0;
}

/* Writes root/rel, creating folders on the way. */
static void S_write(const char *root, const char *rel, const char *text)
{
    char *p = fs_join(root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    assert_int_equal(fs_mkdir_p(p), 0);
    *slash = '/';
    assert_int_equal(fs_write_file(p, text, strlen(text)), 0);
    free(p);
}

static void S_page(fx *f, const char *rel, const char *front)
{
    char text[1024];
    snprintf(text, sizeof text, "---\n%s---\nBody of %s.\n", front, rel);
    char *path = fs_join("content", rel);
    S_write(f->root, path, text);
    free(path);
}

static void S_link(fx *f, const char *target, const char *rel)
{
    char *p = fs_join(f->root, rel);
    char *slash = strrchr(p, '/');
    *slash = '\0';
    assert_int_equal(fs_mkdir_p(p), 0);
    *slash = '/';
    assert_int_equal(symlink(target, p), 0);
    free(p);
}

static int S_load(fx *f)
{
    assert_false(f->loaded);
    int rc = content_load(&f->idx, f->root, &f->cfg, &f->opts, &f->dl);
    f->loaded = true;
    return rc;
}

static void S_dump(const fx *f)
{
    for (size_t i = 0; i < f->dl.n; i++)
        print_message("  %s:%d:%d: %s\n", f->dl.v[i].file ? f->dl.v[i].file : "-",
                      f->dl.v[i].line, f->dl.v[i].col, f->dl.v[i].msg);
}

static void S_load_ok(fx *f)
{
    int rc = S_load(f);
    if (rc != 0 || f->dl.n != 0) {
        S_dump(f);
        fail_msg("content_load: %d with %zu diagnostics", rc, f->dl.n);
    }
}

static const page *S_url(const fx *f, const char *url)
{
    const page *p = strmap_get(&f->idx.by_url, url);
    if (!p)
        fail_msg("no page at %s", url);
    return p;
}

/* The diagnostic with this message, or a failure. */
static const diag *S_find_diag(const fx *f, const char *msg)
{
    for (size_t i = 0; i < f->dl.n; i++)
        if (strcmp(f->dl.v[i].msg, msg) == 0)
            return &f->dl.v[i];
    S_dump(f);
    fail_msg("no diagnostic \"%s\"", msg);
    return NULL;
}

static void S_diag_at(const diag *d, const char *file, int line, int col)
{
    assert_int_equal(d->level, DIAG_ERROR);
    assert_string_equal(d->file, file);
    assert_int_equal(d->line, line);
    assert_int_equal(d->col, col);
}

/* ---- URLs, kinds, sections ------------------------------------------------ */

static void test_urls_and_sections(void **state)
{
    fx *f = *state;
    S_page(f, "_index.md", "title: Home\n");
    S_page(f, "about.md", "title: About\n");
    S_page(f, "articles/_index.md", "title: Articles\n");
    S_page(f, "articles/kv.md", "title: KV\ndate: 2024-05-01\n");
    S_page(f, "articles/custom.md", "title: Custom\nslug: renamed\n");
    S_page(f, "notes/_index.md", "title: Notes\nslug: study\n");
    S_page(f, "notes/n1.md", "title: N1\n");
    S_page(f, "a/b/c.md", "title: Deep\n");
    S_write(f->root, "content/articles/img.png", "PNG");
    S_page(f, ".hidden.md", "title: Hidden\n");
    S_page(f, ".git/x.md", "title: Git\n");
    S_load_ok(f);

    assert_int_equal(f->idx.npages, 10);
    const page *home = S_url(f, "/");
    assert_int_equal(home->kind, PAGE_HOME);
    assert_string_equal(home->src, "content/_index.md");
    assert_string_equal(home->rel, "_index.md");
    assert_string_equal(home->section, "");
    assert_string_equal(home->out, "index.html");
    assert_string_equal(home->title, "Home");
    assert_null(home->parent);
    assert_non_null(home->front);

    const page *about = S_url(f, "/about/");
    assert_int_equal(about->kind, PAGE_REGULAR);
    assert_string_equal(about->src, "content/about.md");
    assert_string_equal(about->rel, "about.md");
    assert_string_equal(about->section, "");
    assert_string_equal(about->out, "about/index.html");
    assert_ptr_equal(about->parent, home);
    assert_int_equal(about->body_line, 4);

    const page *arts = S_url(f, "/articles/");
    assert_int_equal(arts->kind, PAGE_SECTION);
    assert_string_equal(arts->src, "content/articles/_index.md");
    assert_string_equal(arts->rel, "articles/_index.md");
    assert_string_equal(arts->section, "articles");
    assert_string_equal(arts->out, "articles/index.html");
    assert_ptr_equal(arts->parent, home);

    const page *kv = S_url(f, "/articles/kv/");
    assert_string_equal(kv->out, "articles/kv/index.html");
    assert_string_equal(kv->section, "articles");
    assert_string_equal(kv->date, "2024-05-01");
    assert_ptr_equal(kv->parent, arts);

    const page *custom = S_url(f, "/articles/renamed/");
    assert_string_equal(custom->src, "content/articles/custom.md");
    assert_string_equal(custom->slug, "renamed");
    assert_string_equal(custom->out, "articles/renamed/index.html");

    /* a slug renames the section page; its pages keep the folder path */
    const page *notes = S_url(f, "/study/");
    assert_int_equal(notes->kind, PAGE_SECTION);
    assert_string_equal(notes->section, "notes");
    assert_string_equal(notes->out, "study/index.html");
    const page *n1 = S_url(f, "/notes/n1/");
    assert_ptr_equal(n1->parent, notes);

    /* folders without _index.md get virtual sections, titled after the folder */
    const page *a = S_url(f, "/a/");
    assert_int_equal(a->kind, PAGE_SECTION);
    assert_null(a->src);
    assert_null(a->rel);
    assert_null(a->front);
    assert_string_equal(a->title, "A");
    assert_string_equal(a->section, "a");
    assert_string_equal(a->out, "a/index.html");
    assert_ptr_equal(a->parent, home);
    const page *ab = S_url(f, "/a/b/");
    assert_string_equal(ab->title, "B");
    assert_string_equal(ab->section, "a/b");
    assert_ptr_equal(ab->parent, a);
    const page *c = S_url(f, "/a/b/c/");
    assert_ptr_equal(c->parent, ab);
    assert_string_equal(c->section, "a/b");

    /* lookups by source and by section */
    assert_ptr_equal(strmap_get(&f->idx.by_rel, "articles/kv.md"), kv);
    assert_ptr_equal(strmap_get(&f->idx.by_rel, "_index.md"), home);
    assert_null(strmap_get(&f->idx.by_rel, ".hidden.md"));
    assert_ptr_equal(strmap_get(&f->idx.by_section, ""), home);
    assert_ptr_equal(strmap_get(&f->idx.by_section, "notes"), notes);
    assert_ptr_equal(strmap_get(&f->idx.by_section, "a/b"), ab);

    /* assets: everything that is not Markdown */
    assert_int_equal(f->idx.nassets, 1);
    assert_string_equal(f->idx.assets[0].src, "content/articles/img.png");
    assert_string_equal(f->idx.assets[0].out, "articles/img.png");
    assert_ptr_equal(strmap_get(&f->idx.assets_by_out, "articles/img.png"), &f->idx.assets[0]);

    /* the home lists the top-level pages and sections, by title */
    size_t n = 0;
    size_t *kids = content_children(&f->idx, home, &n);
    assert_int_equal(n, 4);
    assert_ptr_equal(f->idx.pages[kids[0]], a);
    assert_ptr_equal(f->idx.pages[kids[1]], about);
    assert_ptr_equal(f->idx.pages[kids[2]], arts);
    assert_ptr_equal(f->idx.pages[kids[3]], notes);
    free(kids);
    kids = content_children(&f->idx, arts, &n);
    assert_int_equal(n, 2);
    assert_ptr_equal(f->idx.pages[kids[0]], kv); /* dated pages before undated ones */
    assert_ptr_equal(f->idx.pages[kids[1]], custom);
    free(kids);
}

static void test_virtual_home(void **state)
{
    fx *f = *state;
    free(f->cfg.title);
    f->cfg.title = xstrdup("My site");
    S_page(f, "only.md", "title: Only\n");
    S_load_ok(f);
    assert_int_equal(f->idx.npages, 2);
    const page *home = S_url(f, "/");
    assert_int_equal(home->kind, PAGE_HOME);
    assert_null(home->src);
    assert_string_equal(home->title, "My site");
    assert_string_equal(home->out, "index.html");
    assert_ptr_equal(S_url(f, "/only/")->parent, home);
}

static void test_no_content_folder(void **state)
{
    fx *f = *state;
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.n, 1);
    S_diag_at(&f->dl.v[0], "content", 0, 0);
    char want[200];
    snprintf(want, sizeof want, "no content folder (%s): nothing to build", strerror(ENOENT));
    assert_string_equal(f->dl.v[0].msg, want);
}

/* ---- front matter --------------------------------------------------------- */

/* Parses text as content/x.md. */
static int S_parse(const config *cfg, const char *text, page *p, diag_list *dl)
{
    memset(p, 0, sizeof *p);
    p->src = "content/x.md";
    diag_list_init(dl);
    return fm_parse_page(p, text, strlen(text), cfg, dl);
}

static void S_page_clear(page *p)
{
    fm_page_clear(p);
    memset(p, 0, sizeof *p);
}

static void test_parse_fields(void **state)
{
    fx *f = *state;
    page p;
    diag_list dl;
    const char *text = "---\n"
                       "title: \"KV cache: 224 MiB\"\n"
                       "date: 2024-05-01T10:30:00+08:00\n"
                       "updated: 2024-06-01\n"
                       "summary: Short.\n"
                       "slug: kv-224\n"
                       "template: techniques/card.html\n"
                       "draft: true\n"
                       "weight: -3\n"
                       "tags: [KV Cache, GQA, 2024]\n"
                       "extra: {kept: yes}\n"
                       "---\n"
                       "Body\n";
    assert_int_equal(S_parse(&f->cfg, text, &p, &dl), 0);
    assert_int_equal(dl.n, 0);
    assert_string_equal(p.title, "KV cache: 224 MiB");
    assert_string_equal(p.date, "2024-05-01T10:30:00+08:00");
    assert_string_equal(p.updated, "2024-06-01");
    assert_string_equal(p.summary, "Short.");
    assert_string_equal(p.slug, "kv-224");
    assert_string_equal(p.template_name, "techniques/card.html");
    assert_true(p.draft);
    assert_int_equal(p.weight, -3);
    assert_int_equal(p.ntags, 3);
    assert_string_equal(p.tags[0], "KV Cache");
    assert_string_equal(p.tags[1], "GQA");
    assert_string_equal(p.tags[2], "2024");
    assert_int_equal(p.body_line, 13);
    assert_int_equal(p.body_off, strlen(text) - strlen("Body\n"));
    /* the whole front matter is kept, unknown keys included */
    assert_string_equal(yv_string(yv_get(yv_get(p.front, "extra"), "kept")), "yes");
    S_page_clear(&p);
    diag_list_free(&dl);
}

typedef struct {
    const char *text;
    size_t off;
    int line;
} body_case;

static void test_parse_fences_and_body(void **state)
{
    fx *f = *state;
    static const body_case cases[] = {
        {"---\ntitle: T\n---\nBody", 17, 4},
        {"---\ntitle: T\n---", 16, 4},               /* no body, no final newline */
        {"---  \ntitle: T\n---\t\nB", 20, 4},        /* trailing blanks on fences */
        {"---\r\ntitle: T\r\n---\r\nBody\r\n", 20, 4}, /* CRLF */
        {"---\ntitle: T\n...\nBody", 17, 4},         /* YAML's document end */
        {"---\ntitle: T\n\n# c\n---\n\nBody", 22, 6},
    };
    for (size_t i = 0; i < N(cases); i++) {
        page p;
        diag_list dl;
        int rc = S_parse(&f->cfg, cases[i].text, &p, &dl);
        if (rc != 0)
            fail_msg("case %zu: %s", i, dl.n ? dl.v[0].msg : "?");
        assert_string_equal(p.title, "T");
        if (p.body_off != cases[i].off || p.body_line != cases[i].line)
            fail_msg("case %zu: body at %zu (line %d), expected %zu (line %d)", i, p.body_off,
                     p.body_line, cases[i].off, cases[i].line);
        S_page_clear(&p);
        diag_list_free(&dl);
    }
}

typedef struct {
    const char *text;
    int line, col;
    const char *msg;
} fm_error;

#define MISSING                                                                              \
    "missing front matter: a page starts with a line \"---\", then YAML (title: ...), then a " \
    "closing \"---\""
#define UNTERMINATED                                                                         \
    "front matter is not terminated: no closing \"---\" line after the opening one"
#define SLUG_MSG(s)                                                                          \
    "slug \"" s "\" is not a safe path segment (letters, digits, '-', '_', '.'; not starting " \
    "with '.'; no '/')"

static const fm_error S_fm_errors[] = {
    {"Hello\n", 1, 1, MISSING},
    {"", 1, 1, MISSING},
    {"--- x\ntitle: T\n---\n", 1, 1, MISSING},
    {"----\ntitle: T\n----\n", 1, 1, MISSING},
    {"\n---\ntitle: T\n---\n", 1, 1, MISSING},
    {"---\ntitle: x\n", 1, 1, UNTERMINATED},
    {"---\n- a\n---\n", 2, 1, "front matter must be a map of keys (title: ...), not a list"},
    {"---\njust text\n---\n", 2, 1,
     "front matter must be a map of keys (title: ...), not a string"},
    {"---\ntitle: [a]\n---\n", 2, 8, "front matter \"title\" must be a string, not a list"},
    {"---\ntitle: T\nsummary: {a: 1}\n---\n", 3, 10,
     "front matter \"summary\" must be a string, not a map"},
    {"---\n---\n", 2, 1, "front matter has no \"title\""},
    {"---\ndate: 2024-01-01\n---\nBody\n", 2, 1, "front matter has no \"title\""},
    {"---\ntitle: T\ndate: 2024-13-01\n---\n", 3, 7,
     "front matter \"date\": \"2024-13-01\" is not a date (YYYY-MM-DD, optionally with a time)"},
    {"---\ntitle: T\nupdated: yesterday\n---\n", 3, 10,
     "front matter \"updated\": \"yesterday\" is not a date (YYYY-MM-DD, optionally with a "
     "time)"},
    {"---\ntitle: T\ndate: [2024]\n---\n", 3, 7,
     "front matter \"date\" must be a string, not a list"},
    {"---\ntitle: T\nslug: a/b\n---\n", 3, 7, SLUG_MSG("a/b")},
    {"---\ntitle: T\nslug: .x\n---\n", 3, 7, SLUG_MSG(".x")},
    {"---\ntitle: T\nslug: \"\"\n---\n", 3, 7, SLUG_MSG("")},
    {"---\ntitle: T\nslug: a b\n---\n", 3, 7, SLUG_MSG("a b")},
    {"---\ntitle: T\nslug: \"..\"\n---\n", 3, 7, SLUG_MSG("..")},
    {"---\ntitle: T\ntemplate: ../x.html\n---\n", 3, 11,
     "template \"../x.html\" must be a file name under templates/ without \"..\""},
    {"---\ntitle: T\ntemplate: /etc/passwd\n---\n", 3, 11,
     "template \"/etc/passwd\" must be a file name under templates/ without \"..\""},
    {"---\ntitle: T\ntemplate: a/.x.html\n---\n", 3, 11,
     "template \"a/.x.html\" must be a file name under templates/ without \"..\""},
    {"---\ntitle: T\ndraft: yes\n---\n", 3, 8,
     "front matter \"draft\" must be true or false, not a string"},
    {"---\ntitle: T\nweight: 1.5\n---\n", 3, 9,
     "front matter \"weight\" must be an integer, not a float"},
    {"---\ntitle: T\ntags: kv\n---\n", 3, 7,
     "front matter \"tags\" must be a list of strings (tags: [a, b]), not a string"},
    {"---\ntitle: T\ntags: [a, {b: 1}]\n---\n", 3, 11, "a tag must be a string, not a map"},
    {"---\ntitle: T\ntags:\n  - ok\n  - \"!!!\"\n---\n", 5, 5,
     "tag \"!!!\" has no letters or digits to make a URL from"},
    /* YAML errors point at the line of the Markdown file */
    {"---\ntitle: T\nfoo: bar: baz\n---\n", 3, 9,
     "invalid YAML: mapping values are not allowed in this context"},
    {"---\ntitle: A\nsummary: s\ntitle: B\n---\n", 4, 1,
     "duplicate key \"title\" (first at line 2)"},
};

static void test_front_matter_errors(void **state)
{
    fx *f = *state;
    for (size_t i = 0; i < N(S_fm_errors); i++) {
        const fm_error *c = &S_fm_errors[i];
        page p;
        diag_list dl;
        int rc = S_parse(&f->cfg, c->text, &p, &dl);
        if (rc != -1 || dl.n != 1 || dl.errors != 1 || strcmp(dl.v[0].msg, c->msg) != 0 ||
            dl.v[0].line != c->line || dl.v[0].col != c->col ||
            strcmp(dl.v[0].file, "content/x.md") != 0)
            fail_msg("case %zu: rc %d, %zu diagnostics, first %d:%d \"%s\"", i, rc, dl.n,
                     dl.n ? dl.v[0].line : 0, dl.n ? dl.v[0].col : 0, dl.n ? dl.v[0].msg : "");
        S_page_clear(&p);
        diag_list_free(&dl);
    }
}

static void test_front_matter_too_large(void **state)
{
    fx *f = *state;
    f->cfg.limits.front_matter_bytes = 64;
    char text[256];
    snprintf(text, sizeof text, "---\ntitle: T\nsummary: %s\n---\n",
             "0123456789012345678901234567890123456789012345678901234567890123456789");
    page p;
    diag_list dl;
    assert_int_equal(S_parse(&f->cfg, text, &p, &dl), -1);
    assert_int_equal(dl.n, 1);
    assert_int_equal(dl.v[0].line, 2);
    assert_int_equal(dl.v[0].col, 1);
    assert_string_equal(dl.v[0].msg,
                        "front matter too large (89 bytes, limit 64: limits.front_matter_bytes)");
    S_page_clear(&p);
    diag_list_free(&dl);
}

static void test_several_field_errors_at_once(void **state)
{
    fx *f = *state;
    page p;
    diag_list dl;
    assert_int_equal(S_parse(&f->cfg,
                             "---\ntitle: T\ndraft: 1\nweight: x\nslug: a/b\n---\n", &p, &dl),
                     -1);
    assert_int_equal(dl.errors, 3);
    assert_int_equal(dl.v[0].line, 3);
    assert_int_equal(dl.v[1].line, 4);
    assert_int_equal(dl.v[2].line, 5);
    S_page_clear(&p);
    diag_list_free(&dl);
}

static void test_dates(void **state)
{
    fx *f = *state;
    static const char *good[] = {
        "2024-01-15",          "2024-02-29",           "2000-02-29",
        "2024-12-31",          "2024-01-15T10:30",     "2024-01-15 10:30",
        "2024-01-15T10:30:59", "2024-01-15T23:59:60Z", "2024-01-15T10:30:00+08:00",
        "2024-01-15T10:30-05:00",
    };
    static const char *bad[] = {
        "2023-02-29",          "1900-02-29",       "2024-04-31",          "2024-00-10",
        "2024-01-00",          "2024-1-15",        "24-01-15",            "2024/01/15",
        "2024-01-15x",         "2024-01-15T",      "2024-01-15T24:00",    "2024-01-15T10:60",
        "2024-01-15T10",       "2024-01-15T10:30:5", "2024-01-15T10:30+8", "2024-01-15T-1:00",
        "2024-01-15T10:-5",    "2024-01-15T10:30:-1", "2024-01-15T 1:00",  "+202-01-15",
    };
    int wrong = 0;
    for (size_t i = 0; i < N(good) + N(bad); i++) {
        bool ok = i < N(good);
        const char *d = ok ? good[i] : bad[i - N(good)];
        char text[200];
        snprintf(text, sizeof text, "---\ntitle: T\ndate: \"%s\"\n---\n", d);
        page p;
        diag_list dl;
        int rc = S_parse(&f->cfg, text, &p, &dl);
        if ((rc == 0) != ok || (ok ? !p.date || strcmp(p.date, d) : p.date != NULL)) {
            print_error("date \"%s\" %s\n", d, ok ? "refused" : "accepted");
            wrong++;
        }
        S_page_clear(&p);
        diag_list_free(&dl);
    }
    assert_int_equal(wrong, 0);
}

/* ---- errors found while loading ------------------------------------------- */

static void test_load_reports_every_file(void **state)
{
    fx *f = *state;
    S_page(f, "good.md", "title: Good\n");
    S_write(f->root, "content/a.md", "no front matter\n");
    S_write(f->root, "content/b.md", "---\ntitle: T\nweight: w\n---\n");
    S_write(f->root, "content/sub/c.md", "---\ntitle: [x]\n---\n");
    S_write(f->root, "content/nul.md", "---\ntitle: T\n---\nab\0cd");
    char bad_utf8[] = "---\ntitle: T\n---\nline\nok \xC0\xAF\n";
    S_write(f->root, "content/utf.md", bad_utf8);
    /* the NUL must be written explicitly: S_write stops at it */
    char *nul = fs_join(f->root, "content/nul.md");
    assert_int_equal(fs_write_file(nul, "---\ntitle: T\n---\nab\0cd", 22), 0);
    free(nul);
    assert_int_equal(S_load(f), -1);
    /* a NUL or invalid UTF-8 in a body is reported where the body is
     * rendered (md_render, tested there); the index only reads headers */
    assert_int_equal(f->dl.errors, 3);
    diag_sort(&f->dl);
    S_diag_at(&f->dl.v[0], "content/a.md", 1, 1);
    S_diag_at(&f->dl.v[1], "content/b.md", 3, 9);
    S_diag_at(&f->dl.v[2], "content/sub/c.md", 2, 8);
    /* the index still holds what loaded, for further reporting */
    S_url(f, "/good/");
    assert_null(strmap_get(&f->idx.by_rel, "b.md"));
}

static void test_page_too_large(void **state)
{
    fx *f = *state;
    f->cfg.limits.page_bytes = 1024;
    char big[2000];
    snprintf(big, sizeof big, "---\ntitle: T\n---\n");
    memset(big + strlen(big), 'x', 1500);
    big[1999] = '\0';
    S_write(f->root, "content/big.md", big);
    S_page(f, "small.md", "title: S\n");
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.n, 1);
    S_diag_at(&f->dl.v[0], "content/big.md", 0, 0);
    assert_string_equal(f->dl.v[0].msg,
                        "page too large (limit 1024 bytes: limits.page_bytes in site.yaml)");
    S_url(f, "/small/");
}

/* ---- tags, drafts, listing order ------------------------------------------ */

static void test_tags_merge_by_slug(void **state)
{
    fx *f = *state;
    S_page(f, "p1.md", "title: P1\ndate: 2024-01-01\ntags: [KV Cache, GQA]\n");
    S_page(f, "p2.md", "title: P2\ndate: 2024-02-01\ntags: [kv-cache, 键值缓存]\n");
    S_page(f, "p3.md", "title: P3\ntags: [kv cache, KV-Cache]\n");
    S_page(f, "p4.md", "title: P4\ndraft: true\ntags: [drafty]\n");
    S_load_ok(f);
    assert_int_equal(f->idx.ntags, 3);
    const tag *gqa = &f->idx.tags[0];
    const tag *kv = &f->idx.tags[1];
    const tag *cjk = &f->idx.tags[2];
    assert_string_equal(gqa->slug, "gqa");
    assert_string_equal(gqa->name, "GQA");
    assert_string_equal(gqa->url, "/tags/gqa/");
    assert_int_equal(gqa->npages, 1);
    assert_ptr_equal(f->idx.pages[gqa->pages[0]], S_url(f, "/p1/"));

    /* one tag for three spellings, named as the newest page writes it, its
     * pages newest first and each page once */
    assert_string_equal(kv->slug, "kv-cache");
    assert_string_equal(kv->name, "kv-cache");
    assert_string_equal(kv->url, "/tags/kv-cache/");
    assert_int_equal(kv->npages, 3);
    assert_ptr_equal(f->idx.pages[kv->pages[0]], S_url(f, "/p2/"));
    assert_ptr_equal(f->idx.pages[kv->pages[1]], S_url(f, "/p1/"));
    assert_ptr_equal(f->idx.pages[kv->pages[2]], S_url(f, "/p3/"));

    assert_string_equal(cjk->slug, "键值缓存");
    assert_string_equal(cjk->url, "/tags/键值缓存/");
    assert_int_equal(cjk->npages, 1);
}

static void test_drafts(void **state)
{
    fx *f = *state;
    S_page(f, "pub.md", "title: Pub\n");
    S_page(f, "d.md", "title: D\ndraft: true\n");
    S_page(f, "onlydrafts/x.md", "title: X\ndraft: true\n");
    S_page(f, "sec/_index.md", "title: Sec\ndraft: true\n");
    S_page(f, "sec/p.md", "title: P\n");
    S_load_ok(f);
    assert_null(strmap_get(&f->idx.by_url, "/d/"));
    assert_null(strmap_get(&f->idx.by_url, "/onlydrafts/"));
    assert_null(strmap_get(&f->idx.by_url, "/onlydrafts/x/"));
    /* a draft _index.md leaves a virtual section behind */
    const page *sec = S_url(f, "/sec/");
    assert_null(sec->src);
    assert_string_equal(sec->title, "Sec");
    assert_int_equal(f->idx.npages, 4); /* home, pub, sec, sec/p */
    content_index_free(&f->idx);
    f->loaded = false;

    f->opts.drafts = true;
    S_load_ok(f);
    assert_true(S_url(f, "/d/")->draft);
    assert_true(S_url(f, "/onlydrafts/x/")->draft);
    S_url(f, "/onlydrafts/");
    assert_string_equal(S_url(f, "/sec/")->src, "content/sec/_index.md");
    assert_int_equal(f->idx.npages, 7);
}

static void test_listing_order(void **state)
{
    fx *f = *state;
    S_page(f, "list/_index.md", "title: List\n");
    S_page(f, "list/heavy.md", "title: Z heavy\nweight: 1\n");
    S_page(f, "list/light.md", "title: Y light\nweight: -1\n");
    S_page(f, "list/new.md", "title: M new\ndate: 2024-06-01\n");
    S_page(f, "list/newer.md", "title: M newer\ndate: 2024-06-01T08:00\n");
    S_page(f, "list/old.md", "title: A old\ndate: 2023-01-01\n");
    S_page(f, "list/b.md", "title: B\n");
    S_page(f, "list/a.md", "title: A\n");
    S_page(f, "list/same2.md", "title: Same\ndate: 2020-01-01\n");
    S_page(f, "list/same1.md", "title: Same\ndate: 2020-01-01\n");
    /* the sort compares the dates' first eight bytes first (S_sort_pages):
     * these differ after them, or in them */
    S_page(f, "list/next-day.md", "title: Next day\ndate: 2024-06-02\n");
    S_page(f, "list/month.md", "title: Month before\ndate: 2024-05-31\n");
    S_load_ok(f);
    static const char *want[] = {"/list/light/", "/list/next-day/", "/list/newer/",
                                 "/list/new/",   "/list/month/",    "/list/old/",
                                 "/list/same1/", "/list/same2/",    "/list/a/",
                                 "/list/b/",     "/list/heavy/"};
    size_t n = 0;
    size_t *v = content_children(&f->idx, S_url(f, "/list/"), &n);
    assert_int_equal(n, N(want));
    for (size_t i = 0; i < n; i++)
        if (strcmp(f->idx.pages[v[i]]->url, want[i]) != 0)
            fail_msg("position %zu: %s, expected %s", i, f->idx.pages[v[i]]->url, want[i]);
    free(v);

    /* by date: regular pages only, newest first, undated last (by URL) */
    static const char *by_date[] = {"/list/next-day/", "/list/newer/", "/list/new/",
                                    "/list/month/",    "/list/old/",   "/list/same1/",
                                    "/list/same2/",    "/list/a/",     "/list/b/",
                                    "/list/heavy/",    "/list/light/"};
    v = content_by_date(&f->idx, &n);
    assert_int_equal(n, N(by_date));
    for (size_t i = 0; i < n; i++)
        if (strcmp(f->idx.pages[v[i]]->url, by_date[i]) != 0)
            fail_msg("by date %zu: %s, expected %s", i, f->idx.pages[v[i]]->url, by_date[i]);
    free(v);
}

/* The menu: top-level sections only, by weight, then title, then URL; a
 * date does not move a section in it (a listing's order would). */
static void test_menu_order(void **state)
{
    fx *f = *state;
    S_page(f, "a/_index.md", "title: Zeta\n");
    S_page(f, "b/_index.md", "title: Alpha\n");
    S_page(f, "c/_index.md", "title: Heavy\nweight: 5\n");
    S_page(f, "d/_index.md", "title: Light\nweight: -1\ndate: 2024-06-01\n");
    S_page(f, "f/_index.md", "title: Alpha\ndate: 2025-01-01\n");
    S_page(f, "e/page.md", "title: In a folder without _index.md\n");
    S_page(f, "a/sub/_index.md", "title: Nested\nweight: -9\n");
    S_page(f, "top.md", "title: A page, not a section\nweight: -9\n");
    S_load_ok(f);
    static const char *want[] = {"/d/", "/b/", "/f/", "/e/", "/a/", "/c/"};
    assert_int_equal(f->idx.nmenu, N(want));
    for (size_t i = 0; i < f->idx.nmenu; i++)
        if (strcmp(f->idx.pages[f->idx.menu[i]]->url, want[i]) != 0)
            fail_msg("menu %zu: %s, expected %s", i, f->idx.pages[f->idx.menu[i]]->url, want[i]);
}

/* ---- collisions ----------------------------------------------------------- */

static void test_duplicate_urls(void **state)
{
    fx *f = *state;
    S_page(f, "a.md", "title: A\n");
    S_page(f, "b.md", "title: B\nslug: a\n");
    S_page(f, "x.md", "title: X\n");
    S_page(f, "x/_index.md", "title: X section\n");
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.errors, 2);
    /* blamed on the slug that made the clash, at its line */
    S_diag_at(S_find_diag(f, "two pages on one URL /a/: this page and content/a.md"),
              "content/b.md", 3, 7);
    S_diag_at(S_find_diag(f, "two pages on one URL /x/: this page and content/x.md"),
              "content/x/_index.md", 1, 1);
}

static void test_case_collisions(void **state)
{
    fx *f = *state;
    S_page(f, "Guide.md", "title: G1\n");
    S_page(f, "guide.md", "title: G2\n");
    S_page(f, "docs/Intro.md", "title: I\n");
    S_page(f, "DOCS/intro.md", "title: I2\n");
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.errors, 3);
    S_diag_at(S_find_diag(f, "URL /docs/ differs from /DOCS/ only in letter case: they collide "
                             "on case-insensitive file systems"),
              "content", 0, 0);
    S_diag_at(S_find_diag(f, "URL /guide/ differs from /Guide/ only in letter case: they "
                             "collide on case-insensitive file systems"),
              "content/guide.md", 1, 1);
    S_diag_at(S_find_diag(f, "URL /docs/Intro/ differs from /DOCS/intro/ only in letter case: "
                             "they collide on case-insensitive file systems"),
              "content/docs/Intro.md", 1, 1);
}

/* ---- symlinks ------------------------------------------------------------- */

/* Every symbolic link under content/ is refused, wherever it points: files
 * are opened beneath content/ without following any (see S_visit). */
#define LINK_REFUSED                                                                          \
    "a symbolic link: refused (files under content/ are read without following any; copy " \
    "the file or folder instead)"

static void test_symlink_leaving_content(void **state)
{
    fx *f = *state;
    S_page(f, "ok.md", "title: OK\n");
    S_write(f->other, "secret.md", "---\ntitle: Secret\n---\n");
    S_write(f->other, "dir/x.md", "---\ntitle: X\n---\n");
    S_write(f->root, "outside.md", "---\ntitle: Root file\n---\n");
    char *secret = fs_join(f->other, "secret.md");
    char *dir = fs_join(f->other, "dir");
    S_link(f, secret, "content/secret.md");
    S_link(f, dir, "content/dir");
    S_link(f, "../outside.md", "content/up.md");
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.errors, 3);
    S_diag_at(&f->dl.v[0], "content/dir", 0, 0);
    S_diag_at(&f->dl.v[1], "content/secret.md", 0, 0);
    S_diag_at(&f->dl.v[2], "content/up.md", 0, 0);
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(f->dl.v[i].msg, LINK_REFUSED);
    assert_null(strmap_get(&f->idx.by_url, "/secret/"));
    assert_null(strmap_get(&f->idx.by_url, "/dir/x/"));
    assert_null(strmap_get(&f->idx.by_url, "/up/"));
    S_url(f, "/ok/");
    free(secret);
    free(dir);
}

static void test_symlink_inside_content(void **state)
{
    fx *f = *state;
    S_page(f, "articles/kv.md", "title: KV\n");
    S_link(f, "articles/kv.md", "content/alias.md");
    S_link(f, "articles", "content/more");
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.n, 2);
    S_diag_at(&f->dl.v[0], "content/alias.md", 0, 0);
    S_diag_at(&f->dl.v[1], "content/more", 0, 0);
    assert_string_equal(f->dl.v[0].msg, LINK_REFUSED);
    assert_string_equal(f->dl.v[1].msg, LINK_REFUSED);
    assert_null(strmap_get(&f->idx.by_url, "/alias/"));
    assert_null(strmap_get(&f->idx.by_url, "/more/kv/"));
    assert_string_equal(S_url(f, "/articles/kv/")->src, "content/articles/kv.md");
    assert_int_equal(f->idx.npages, 3); /* home, articles, kv */
}

static void test_symlink_loops(void **state)
{
    fx *f = *state;
    S_page(f, "ok.md", "title: OK\n");
    S_page(f, "a/p.md", "title: P\n");
    S_link(f, "l2.md", "content/l1.md");
    S_link(f, "l1.md", "content/l2.md");
    S_link(f, "nowhere.md", "content/dangling.md");
    S_link(f, "../a", "content/a/self");
    S_link(f, "..", "content/a/up");
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.errors, 5);
    /* in walk order: the root's entries, then a/'s */
    const char *where[] = {"content/dangling.md", "content/l1.md", "content/l2.md",
                           "content/a/self", "content/a/up"};
    for (size_t i = 0; i < 5; i++) {
        S_diag_at(&f->dl.v[i], where[i], 0, 0);
        assert_string_equal(f->dl.v[i].msg, LINK_REFUSED);
    }
    S_url(f, "/ok/");
    assert_int_equal(f->idx.npages, 4); /* home, ok, a, a/p */
}

static void test_content_is_a_symlink(void **state)
{
    fx *f = *state;
    S_write(f->other, "real/x.md", "---\ntitle: X\n---\n");
    char *real = fs_join(f->other, "real");
    S_link(f, real, "content");
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.errors, 1);
    S_diag_at(&f->dl.v[0], "content", 0, 0);
    if (!strstr(f->dl.v[0].msg, "a symbolic link: refused"))
        fail_msg("%s", f->dl.v[0].msg);
    assert_int_equal(f->idx.npages, 0);
    free(real);
}

static void test_hard_link_page(void **state)
{
    fx *f = *state;
    S_page(f, "ok.md", "title: OK\n");
    S_write(f->other, "secret.md", "---\ntitle: Secret outside\n---\n");
    char *from = fs_join(f->other, "secret.md");
    char *to = fs_join(f->root, "content/twin.md");
    assert_int_equal(link(from, to), 0);
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.errors, 1);
    S_diag_at(&f->dl.v[0], "content/twin.md", 0, 0);
    assert_string_equal(f->dl.v[0].msg,
                        "cannot read: a hard link (a file with more than one name): refused");
    assert_null(strmap_get(&f->idx.by_url, "/twin/"));
    free(from);
    free(to);
}

/* ---- caps ----------------------------------------------------------------- */

static void test_files_cap(void **state)
{
    fx *f = *state;
    f->cfg.limits.files = 3;
    S_page(f, "a.md", "title: A\n");
    S_page(f, "b.md", "title: B\n");
    S_page(f, "c.md", "title: C\n");
    S_page(f, "d.md", "title: D\n");
    S_page(f, "e.md", "title: E\n");
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.n, 1); /* once, not once per extra file */
    S_diag_at(&f->dl.v[0], "content/d.md", 0, 0);
    assert_string_equal(f->dl.v[0].msg, "more than 3 files under content/ (limits.files)");
}

static void test_depth_cap(void **state)
{
    fx *f = *state;
    f->cfg.limits.depth = 2;
    S_page(f, "a/b/ok.md", "title: OK\n");
    S_page(f, "a/b/c/deep.md", "title: Deep\n");
    S_page(f, "a/b/c/d/deeper.md", "title: Deeper\n");
    assert_int_equal(S_load(f), -1);
    assert_int_equal(f->dl.n, 1);
    S_diag_at(&f->dl.v[0], "content/a/b/c", 0, 0);
    assert_string_equal(f->dl.v[0].msg, "folders nested deeper than 2 levels (limits.depth)");
    S_url(f, "/a/b/ok/");
    assert_null(strmap_get(&f->idx.by_url, "/a/b/c/deep/"));
}

/* ---- slugs ---------------------------------------------------------------- */

typedef struct {
    const char *in, *out;
} slug_case;

static void test_slugify(void **state)
{
    (void)state;
    static const slug_case cases[] = {
        {"Hello, World!", "hello-world"},
        {"KV Cache", "kv-cache"},
        {"GQA vs. MQA", "gqa-vs-mqa"},
        {"键值缓存", "键值缓存"},
        {"KV 缓存：计算", "kv-缓存-计算"},
        {"日本語、テスト。", "日本語-テスト"},
        {"《书名》", "书名"},
        {"\xE2\x80\x9Cquoted\xE2\x80\x9D", "quoted"},
        {"Qwen2.5-7B", "qwen2-5-7b"},
        {"  leading and trailing  ", "leading-and-trailing"},
        {"a/b:c", "a-b-c"},
        {"snake_case-kebab", "snake_case-kebab"},
        {"C++ & Rust", "c-rust"},
        {"2 × 3 ≈ 6", "2-3-6"},
        {"a\tb", "a-b"},
        {"x--y", "x--y"},
        {"Ünïcödé", "Ünïcödé"},
        {"!!!", ""},
        {"", ""},
        {"(53.1%) [KV] {x} 'q' \"d\"", "53-1-kv-x-q-d"},
        {"ＧＰＵ", "ＧＰＵ"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        char *s = content_slugify(cases[i].in);
        if (strcmp(s, cases[i].out) != 0)
            fail_msg("slugify(\"%s\") = \"%s\", expected \"%s\"", cases[i].in, s, cases[i].out);
        free(s);
    }
}

typedef struct {
    const char *s;
    bool ok;
} seg_case;

static void test_safe_segment(void **state)
{
    (void)state;
    char long_ok[201], long_bad[202];
    memset(long_ok, 'a', 200);
    long_ok[200] = '\0';
    memset(long_bad, 'a', 201);
    long_bad[201] = '\0';
    const seg_case cases[] = {
        {"a", true},       {"kv-cache_2.5", true}, {"键值", true},     {"A.B", true},
        {long_ok, true},   {"", false},            {".x", false},      {"..", false},
        {"a/b", false},    {"a b", false},         {"a?b", false},     {"a%20b", false},
        {"a\\b", false},   {long_bad, false},      {"\xFF", false},    {"\xC0\xAF", false},
        {"a:b", false},    {"a#b", false},
    };
    for (size_t i = 0; i < N(cases); i++)
        if (content_safe_segment(cases[i].s) != cases[i].ok)
            fail_msg("safe_segment(\"%s\") is %d", cases[i].s, !cases[i].ok);
}

/* ---- threads --------------------------------------------------------------- */

/* Everything content_load produced, as text, in the order it is stored. */
static char *S_index_text(const content_index *idx, const diag_list *dl)
{
    buf b = BUF_INIT;
    for (size_t i = 0; i < dl->n; i++) {
        const diag *d = &dl->v[i];
        buf_printf(&b, "diag %s:%d:%d %d %s\n", d->file ? d->file : "-", d->line, d->col,
                   (int)d->level, d->msg);
    }
    for (size_t i = 0; i < idx->npages; i++) {
        const page *p = idx->pages[i];
        buf_printf(&b, "page %d %s %s %s %s %s [%s] %s %s %s %d %lld %d %zu %s |", (int)p->kind,
                   p->src ? p->src : "-", p->rel ? p->rel : "-", p->url, p->out, p->title,
                   p->section, p->date ? p->date : "-", p->slug ? p->slug : "-",
                   p->template_name ? p->template_name : "-", p->draft, p->weight, p->body_line,
                   p->body_off, p->parent ? p->parent->url : "-");
        for (size_t t = 0; t < p->ntags; t++)
            buf_printf(&b, " %s", p->tags[t]);
        buf_putc(&b, '\n');
    }
    for (size_t i = 0; i < idx->nassets; i++)
        buf_printf(&b, "asset %s %s\n", idx->assets[i].src, idx->assets[i].out);
    for (size_t i = 0; i < idx->ntags; i++) {
        const tag *t = &idx->tags[i];
        buf_printf(&b, "tag %s %s %s:", t->name, t->slug, t->url);
        for (size_t k = 0; k < t->npages; k++)
            buf_printf(&b, " %zu", t->pages[k]);
        buf_putc(&b, '\n');
    }
    return buf_detach(&b);
}

static char *S_load_text(fx *f, int threads, int *rc)
{
    content_index idx;
    diag_list dl;
    diag_list_init(&dl);
    content_opts opts = {.drafts = false, .threads = threads};
    *rc = content_load(&idx, f->root, &f->cfg, &opts, &dl);
    char *text = S_index_text(&idx, &dl);
    content_index_free(&idx);
    diag_list_free(&dl);
    return text;
}

/* Enough files for several parse threads, with failures and walk errors
 * between them: any thread count gives the same index and the same
 * diagnostics in the same order as one thread. */
static void test_threads_same_index(void **state)
{
    fx *f = *state;
    f->cfg.limits.page_bytes = 600;
    f->cfg.limits.worker_memory = 0; /* else it caps the threads at four */
    char big[800];
    snprintf(big, sizeof big, "---\ntitle: Big\n---\n");
    memset(big + strlen(big), 'x', sizeof big - strlen(big) - 1);
    big[sizeof big - 1] = '\0';
    static const char *const tags[] = {"KV Cache", "kv-cache", "GQA", "键值缓存", "Paging"};
    for (int i = 0; i < 400; i++) {
        char rel[64], front[256];
        snprintf(rel, sizeof rel, "s%d/p%03d.md", i % 7, i);
        switch (i % 23) {
        case 3: /* no front matter */
            snprintf(front, sizeof front, "content/%s", rel);
            S_write(f->root, front, "no header\n");
            continue;
        case 5:
            snprintf(front, sizeof front, "title: W%d\nweight: heavy\n", i);
            break;
        case 8:
            snprintf(front, sizeof front, "title: D%d\ndraft: true\n", i);
            break;
        case 11: /* the URL of the page seven before, in the same folder */
            snprintf(front, sizeof front, "title: S%d\nslug: p%03d\n", i, i - 7);
            break;
        case 13:
            snprintf(front, sizeof front, "content/%s", rel);
            S_write(f->root, front, big);
            continue;
        case 17:
            snprintf(front, sizeof front, "title: [x]\ndate: 2024-13-01\n");
            break;
        default:
            snprintf(front, sizeof front, "title: P%d\ndate: 2024-%02d-%02d\ntags: [%s, %s]\n", i,
                     i % 12 + 1, i % 28 + 1, tags[i % 5], tags[(i / 5) % 5]);
        }
        S_page(f, rel, front);
        if (i % 50 == 0) {
            char img[64];
            snprintf(img, sizeof img, "content/s%d/img%03d.png", i % 7, i);
            S_write(f->root, img, "png");
        }
        if (i % 97 == 0) {
            char link[64];
            snprintf(link, sizeof link, "content/s%d/q%03d.md", i % 7, i);
            S_link(f, "/etc/hostname", link);
        }
    }
    S_page(f, "s2/_index.md", "title: Section two\n");
    int rc1;
    char *one = S_load_text(f, 1, &rc1);
    assert_int_equal(rc1, -1);
    assert_non_null(strstr(one, "a symbolic link: refused"));
    assert_non_null(strstr(one, "page too large"));
    assert_non_null(strstr(one, "two pages on one URL"));
    for (int threads = 2; threads <= 8; threads++) {
        for (int rep = 0; rep < 3; rep++) {
            int rc;
            char *many = S_load_text(f, threads, &rc);
            assert_int_equal(rc, rc1);
            assert_string_equal(many, one);
            free(many);
        }
    }
    free(one);
}

#define T(f) cmocka_unit_test_setup_teardown(f, S_setup, S_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_urls_and_sections),
        T(test_virtual_home),
        T(test_no_content_folder),
        T(test_parse_fields),
        T(test_parse_fences_and_body),
        T(test_front_matter_errors),
        T(test_front_matter_too_large),
        T(test_several_field_errors_at_once),
        T(test_dates),
        T(test_load_reports_every_file),
        T(test_page_too_large),
        T(test_tags_merge_by_slug),
        T(test_drafts),
        T(test_listing_order),
        T(test_menu_order),
        T(test_duplicate_urls),
        T(test_case_collisions),
        T(test_symlink_leaving_content),
        T(test_symlink_inside_content),
        T(test_symlink_loops),
        T(test_content_is_a_symlink),
        T(test_hard_link_page),
        T(test_files_cap),
        T(test_depth_cap),
        T(test_threads_same_index),
        cmocka_unit_test(test_slugify),
        cmocka_unit_test(test_safe_segment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
