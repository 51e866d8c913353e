/* Unit tests for gen/build.c: build_run on a small site in a temporary folder.
 * Exit statuses, the files a build writes, the no-change fast path, an
 * incremental rebuild that renders only what changed, a failed build that
 * leaves the output as it was, and kvsite check, which writes nothing. What
 * build_run prints goes to a file (stderr is redirected) and is checked. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "build.h"
#include "fsutil.h"

static const char *const S_tpl = "<title>{{ page.title }}</title>\n{{{ page.content }}}\n";

static void S_put(const char *dir, const char *rel, const char *text)
{
    char *p = xasprintf("%s/%s", dir, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    free(p);
}

static int S_setup(void **state)
{
    char *dir = strdup("/tmp/kvsite-test-build-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    static const char *const dirs[] = {"content", "templates", "checks"};
    for (int i = 0; i < 3; i++) {
        char *d = xasprintf("%s/%s", dir, dirs[i]);
        mkdir(d, 0777);
        free(d);
    }
    S_put(dir, "site.yaml", "title: Small\nlimits:\n  page_timeout: 5\n");
    static const char *const tpls[] = {"home", "page", "section", "tag", "tags", "sources"};
    for (int i = 0; i < 6; i++) {
        char *t = xasprintf("templates/%s.html", tpls[i]);
        S_put(dir, t, S_tpl);
        free(t);
    }
    S_put(dir, "templates/checks.html",
          "{% for _, f in ipairs(site.figures.list) do %}\n<p id=\"{{ f.anchor }}\">{{ f.quote }}</p>\n{% end %}\n");
    S_put(dir, "content/_index.md", "---\ntitle: Home\n---\nSee [a](/a/) and [b](/b/).\n");
    S_put(dir, "content/a.md", "---\ntitle: A\ndate: 2024-01-01\n---\nPage a.\n");
    S_put(dir, "content/b.md", "---\ntitle: B\ndate: 2024-02-02\n---\nPage b.\n");
    *state = dir;
    return 0;
}

static int S_teardown(void **state)
{
    fs_remove_tree(*state);
    free(*state);
    return 0;
}

/* build_run with stderr in *log (malloc'ed). */
static int S_run(void **state, bool check, bool no_cache, char **log)
{
    build_opts o = {.root = *state, .check_only = check, .jobs = 2, .no_cache = no_cache};
    char *path = xasprintf("%s.log", (char *)*state);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 2);
    close(fd);
    int rc = build_run(&o);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    buf b = BUF_INIT;
    assert_int_equal(fs_read_file(path, 1 << 20, &b), FS_OK);
    unlink(path);
    free(path);
    *log = buf_detach(&b);
    return rc;
}

static char *S_get(void **state, const char *rel)
{
    char *p = xasprintf("%s/%s", (char *)*state, rel);
    buf b = BUF_INIT;
    int rc = fs_read_file(p, 1 << 20, &b);
    free(p);
    if (rc != FS_OK) {
        buf_free(&b);
        return NULL;
    }
    return buf_detach(&b);
}

static bool S_has(void **state, const char *rel, const char *text)
{
    char *got = S_get(state, rel);
    bool ok = got && strstr(got, text);
    free(got);
    return ok;
}

static ino_t S_inode(void **state, const char *rel)
{
    char *p = xasprintf("%s/%s", (char *)*state, rel);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    free(p);
    return st.st_ino;
}

/* The project holds no state file but in .kvsite/, which holds only site.*. */
static void S_assert_state_only(void **state)
{
    DIR *d = opendir(*state);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, ".site", 5))
            fail_msg("beside the output: %s", e->d_name);
    closedir(d);
    char *sdir = xasprintf("%s/.kvsite", (char *)*state);
    d = opendir(sdir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strncmp(e->d_name, "site.", 5))
            fail_msg("in the state folder: %s", e->d_name);
    closedir(d);
    free(sdir);
}

static void test_full_build(void **state)
{
    char *log;
    assert_int_equal(S_run(state, false, false, &log), 0);
    if (!strstr(log, "kvsite: built 3 pages"))
        fail_msg("%s", log);
    free(log);
    assert_true(S_has(state, "site/index.html", "<title>Home</title>"));
    assert_true(S_has(state, "site/a/index.html", "Page a."));
    assert_true(S_has(state, "site/b/index.html", "Page b."));
    assert_true(S_has(state, "site/feed.xml", "<title>B</title>"));
    /* base_url is a path (the default): the sitemap protocol wants absolute URLs,
     * so there is no sitemap (feed_absolute) */
    assert_false(S_has(state, "site/sitemap.xml", ""));
    assert_true(S_has(state, "site/checks/index.html", ""));
    /* what the next build reads, in the state folder beside the output */
    assert_true(S_has(state, ".kvsite/site.stamp", "kvsite-stamp 6\n"));
    char *cache = S_get(state, ".kvsite/site.cache");
    assert_non_null(cache);
    free(cache);
    /* and only there: nothing else of kvsite's lands beside the output, and
     * the state folder holds the output's files and nothing else */
    S_assert_state_only(state);
}

static void test_up_to_date_then_incremental(void **state)
{
    char *log;
    assert_int_equal(S_run(state, false, false, &log), 0);
    free(log);
    /* nothing changed: nothing built */
    assert_int_equal(S_run(state, false, false, &log), 0);
    if (!strstr(log, "kvsite: up to date: 3 pages"))
        fail_msg("%s", log);
    free(log);
    ino_t a = S_inode(state, "site/a/index.html");
    ino_t b = S_inode(state, "site/b/index.html");
    /* b's body changes (longer, so its stamp changes whatever the clock) */
    S_put(*state, "content/b.md", "---\ntitle: B\ndate: 2024-02-02\n---\nPage b, changed.\n");
    assert_int_equal(S_run(state, false, false, &log), 0);
    size_t rendered = 0, unchanged = 0;
    const char *how = strstr(log, "rendered, ");
    if (!how || sscanf(strrchr(log, '(') + 1, "%zu rendered, %zu unchanged", &rendered,
                       &unchanged) != 2)
        fail_msg("not incremental: %s", log);
    free(log);
    assert_true(rendered >= 1);
    assert_true(unchanged >= 1); /* a at least */
    assert_true(S_has(state, "site/b/index.html", "Page b, changed."));
    /* the output was swapped in whole (the staging folder, made its copy):
     * the old output, a's file with it, is the staging folder now */
    assert_int_equal(S_inode(state, ".kvsite/site.prev/a/index.html"), a);
    assert_int_equal(S_inode(state, ".kvsite/site.prev/b/index.html"), b);
    assert_int_not_equal(S_inode(state, "site/b/index.html"), b);
    char *dir = xasprintf("%s/.kvsite/site.incr", (char *)*state);
    assert_false(fs_exists(dir)); /* moved in and removed */
    free(dir);
    S_assert_state_only(state);
    /* and a build with --no-cache renders everything again, to the same bytes */
    char *before = S_get(state, "site/b/index.html");
    assert_int_equal(S_run(state, false, true, &log), 0);
    assert_null(strstr(log, "unchanged since"));
    free(log);
    assert_true(S_has(state, "site/b/index.html", before));
    free(before);
}

static void test_failed_build_keeps_output(void **state)
{
    char *log;
    assert_int_equal(S_run(state, false, false, &log), 0);
    free(log);
    char *before = S_get(state, "site/a/index.html");
    S_put(*state, "content/a.md", "---\ntitle: A\n---\nA [broken](/nowhere/) link.\n");
    assert_int_equal(S_run(state, false, false, &log), 1);
    if (!strstr(log, "content/a.md:4:3: error: broken link to /nowhere/") ||
        !strstr(log, "the previous output is unchanged"))
        fail_msg("%s", log);
    free(log);
    char *after = S_get(state, "site/a/index.html");
    assert_string_equal(after, before);
    free(after);
    free(before);
    S_assert_state_only(state);
}

/* A failed first build leaves no output and nothing beside it but the state
 * folder. */
static void test_failed_first_build(void **state)
{
    char *log;
    S_put(*state, "content/a.md", "---\ntitle: A\n---\nA [broken](/nowhere/) link.\n");
    assert_int_equal(S_run(state, false, false, &log), 1);
    free(log);
    char *site = xasprintf("%s/site", (char *)*state);
    assert_false(fs_exists(site));
    free(site);
    S_assert_state_only(state);
}

static void test_check_writes_nothing(void **state)
{
    char *log;
    assert_int_equal(S_run(state, true, false, &log), 0);
    if (!strstr(log, "kvsite: checked 3 pages"))
        fail_msg("%s", log);
    free(log);
    char *site = xasprintf("%s/site", (char *)*state), *prev = xasprintf("%s/.kvsite", (char *)*state);
    assert_false(fs_exists(site));
    assert_false(fs_exists(prev)); /* no state folder either */
    free(site);
    free(prev);
}

static void test_configuration_errors(void **state)
{
    char *log;
    S_put(*state, "site.yaml", "title: [unclosed\n");
    assert_int_equal(S_run(state, false, false, &log), 2);
    assert_non_null(strstr(log, "configuration error: nothing was built"));
    free(log);
    char *site = xasprintf("%s/site", (char *)*state);
    assert_false(fs_exists(site));
    free(site);
    /* no project folder at all */
    build_opts o = {.root = "/nonexistent/kvsite-project"};
    fflush(stderr);
    int saved = dup(2), null = open("/dev/null", O_WRONLY);
    dup2(null, 2);
    int rc = build_run(&o);
    dup2(saved, 2);
    close(saved);
    close(null);
    assert_int_equal(rc, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_full_build, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_up_to_date_then_incremental, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_failed_build_keeps_output, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_failed_first_build, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_check_writes_nothing, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_configuration_errors, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
