/* Unit tests for gen/collide.c: file names, the fold key and how two names
 * differ, active files and content.allow_active, the listing of
 * templates/assets and the claims of a planned build. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "collide.h"
#include "content.h"
#include "fsutil.h"
#include "render.h"
#include "sources.h"

static bool S_has(const diag_list *dl, const char *file, const char *msg_part)
{
    for (size_t i = 0; i < dl->n; i++)
        if ((!file || (dl->v[i].file && strcmp(dl->v[i].file, file) == 0)) &&
            strstr(dl->v[i].msg, msg_part))
            return true;
    return false;
}

static void test_names(void **state)
{
    (void)state;
    diag_list dl;
    diag_list_init(&dl);
    assert_true(collide_name_ok("content/a.md", "a.md", &dl));
    assert_true(collide_name_ok("content/x", "caf\xc3\xa9 \xe4\xb8\xad.md", &dl));
    assert_int_equal(dl.errors, 0);
    assert_false(collide_name_ok("content/bad", "bad\xff.md", &dl));
    assert_true(S_has(&dl, "content/bad", "not UTF-8"));
    assert_false(collide_name_ok("content/c", "a\x01" "b", &dl));
    assert_false(collide_name_ok("content/d", "a\x7f", &dl));
    assert_false(collide_name_ok("content/e", "a\xc2\x85", &dl)); /* NEL, a C1 control */
    assert_false(collide_name_ok("content/f", "line\nbreak", &dl));
    assert_int_equal(dl.errors, 5);
    diag_list_free(&dl);
}

static void test_fold_and_how(void **state)
{
    (void)state;
    char *a = collide_fold("/Notes/Caf\xc3\xa9.PNG"), *b = collide_fold("/notes/cafe\xcc\x81.png");
    assert_string_equal(a, b);
    free(a);
    free(b);
    assert_string_equal(collide_how("/A.png", "/a.png"),
                        "letter case: they collide on case-insensitive file systems");
    assert_non_null(strstr(collide_how("/caf\xc3\xa9", "/cafe\xcc\x81"), "Unicode normalisation"));
    assert_non_null(strstr(collide_how("/Caf\xc3\xa9", "/cafe\xcc\x81"), "letter case and Unicode"));
}

static void test_active(void **state)
{
    (void)state;
    const char *active[] = {"a.html", "b/c.HTM", "x.svg", "y.svgz", "z.js", "m.mjs",
                            "d/e.xhtml", "f.xml", "g.XSLT", "h.shtml"};
    const char *passive[] = {"a.png", "b.css", "c.json", "html", "d.html/e.png", "f.txt", "g"};
    for (size_t i = 0; i < sizeof active / sizeof *active; i++)
        assert_true(collide_active(active[i]));
    for (size_t i = 0; i < sizeof passive / sizeof *passive; i++)
        assert_false(collide_active(passive[i]));

    config cfg;
    config_defaults(&cfg);
    assert_false(collide_allowed(&cfg, "logo.svg")); /* nothing allowed by default */
    diag_list dl;
    diag_list_init(&dl);
    const char *yaml = "[\"logo.svg\", \"demos/*.html\"]";
    yv *list = yv_parse_yaml(yaml, strlen(yaml), &yv_default_limits, "site.yaml", 0, &dl);
    assert_non_null(list);
    cfg.allow_active = list;
    assert_true(collide_allowed(&cfg, "logo.svg"));
    assert_true(collide_allowed(&cfg, "demos/a.html"));
    assert_false(collide_allowed(&cfg, "demos/sub/a.html")); /* FNM_PATHNAME */
    assert_false(collide_allowed(&cfg, "other/logo.svg"));
    cfg.allow_active = NULL;
    yv_free(list);
    config_free(&cfg);
    diag_list_free(&dl);
}

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

/* A project with one collision of each kind the plan finds. */
static void test_check(void **state)
{
    (void)state;
    char root[] = "/tmp/kvsite-test-collide-XXXXXX";
    assert_non_null(mkdtemp(root));
    S_write(root, "content/_index.md", "---\ntitle: Home\n---\n");
    S_write(root, "content/a/p1.md", "---\ntitle: P1\ntags: [go]\n---\n");
    S_write(root, "content/a/p1/index.png", "x");
    S_write(root, "content/a/P1/index.html", "x");
    S_write(root, "content/checks.json", "{}");
    S_write(root, "content/tags/go.md", "---\ntitle: Go\n---\n");
    S_write(root, "content/assets/site.css", "x");
    S_write(root, "content/sitemap.xml/x.png", "x");
    S_write(root, "templates/assets/site.css", "x");
    S_write(root, "templates/assets/.hidden", "x");
    config cfg;
    config_defaults(&cfg);
    diag_list dl;
    diag_list_init(&dl);
    content_index idx;
    content_opts copts = {.threads = 1};
    content_load(&idx, root, &cfg, &copts, &dl);
    assert_int_equal(dl.errors, 0);
    sources src;
    sources_load(&src, root, cfg.limits.data_bytes, &dl);
    collide_files assets;
    collide_list_assets(root, &cfg, &assets, &dl);
    assert_int_equal(assets.n, 1); /* dotfiles are not copied */
    assert_string_equal(assets.v[0], "site.css");
    render_env env = {.root = root, .cfg = &cfg, .idx = &idx, .src = &src};
    assert_int_equal(collide_check(&env, &assets, &dl), -1);
    assert_true(S_has(&dl, "content/checks.json", "which kvsite writes (the checks report, as JSON)"));
    assert_true(S_has(&dl, "content/tags/go.md", "the page of tag \"go\""));
    assert_true(S_has(&dl, "content/tags", "(the tag index)"));
    assert_true(S_has(&dl, "content/assets/site.css", "templates/assets/site.css publishes too"));
    assert_true(S_has(&dl, "content/sitemap.xml/x.png", "inside /sitemap.xml"));
    assert_true(S_has(&dl, "content/a/P1/index.html", "only in letter case"));
    assert_true(S_has(&dl, "content/a/P1/index.html", "can run script"));
    assert_false(S_has(&dl, "content/a/p1/index.png", "would publish")); /* beside, not on */
    assert_int_equal(dl.errors, 7);
    collide_files_free(&assets);
    sources_free(&src);
    content_index_free(&idx);
    config_free(&cfg);
    diag_list_free(&dl);
    fs_remove_tree(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_fold_and_how),
        cmocka_unit_test(test_active),
        cmocka_unit_test(test_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
