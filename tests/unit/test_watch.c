/* Unit tests for gen/watch.c: editors' scratch files, the debounce, and the
 * inotify watch on a real folder (a save by rename, a new folder and a file
 * in it, site.yaml watched by name). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "buf.h"
#include "fsutil.h"
#include "watch.h"

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-watch-XXXXXX"); }
static int S_teardown(void **state) { return tmpdir_teardown(state); }

static void test_ignored(void **state)
{
    (void)state;
    static const char *const scratch[] = {".page.md.swp", ".page.md.swx", "page.md~", "4913",
                                          ".#page.md", "#page.md#", "page.md.tmp",
                                          ".page.md.kate-swp", ".hidden", ""};
    for (size_t i = 0; i < sizeof scratch / sizeof *scratch; i++)
        assert_true(watch_ignored(scratch[i]));
    static const char *const real[] = {"page.md", "site.yaml", "fx.lua", "a.swap.md", "4914",
                                       "x#y", "style.css"};
    for (size_t i = 0; i < sizeof real / sizeof *real; i++)
        assert_false(watch_ignored(real[i]));
}

static void test_debounce(void **state)
{
    (void)state;
    watch_debounce d;
    watch_debounce_init(&d, 30, 5, 300);
    assert_int_equal(watch_debounce_wait(&d, 1000), -1); /* nothing pending: wait for a change */
    watch_debounce_change(&d, 1000, false);
    assert_int_equal(watch_debounce_wait(&d, 1000), 30);
    assert_int_equal(watch_debounce_wait(&d, 1010.5), 20); /* rounded up, never early */
    watch_debounce_change(&d, 1020, false); /* a second write of the same save: quiet again */
    assert_int_equal(watch_debounce_wait(&d, 1030), 20);
    assert_int_equal(watch_debounce_wait(&d, 1050), 0);
    watch_debounce_fired(&d);
    assert_int_equal(watch_debounce_wait(&d, 1060), -1);
    /* a stream of changes never quiet: the cap rebuilds all the same */
    for (double t = 2000; t < 2290; t += 10)
        watch_debounce_change(&d, t, false);
    assert_int_equal(watch_debounce_wait(&d, 2290), 10);
    watch_debounce_change(&d, 2295, false);
    assert_int_equal(watch_debounce_wait(&d, 2300), 0);
    watch_debounce_fired(&d);
    /* a file finished (closed, or renamed into place): the shorter settle
     * time, until a change that did not finish one comes after it */
    watch_debounce_change(&d, 3000, false);
    watch_debounce_change(&d, 3002, true);
    assert_int_equal(watch_debounce_wait(&d, 3002), 5);
    assert_int_equal(watch_debounce_wait(&d, 3007), 0);
    watch_debounce_change(&d, 3006, false);
    assert_int_equal(watch_debounce_wait(&d, 3007), 29);
    watch_debounce_change(&d, 3010, true);
    assert_int_equal(watch_debounce_wait(&d, 3011), 4);
}

/* Polls the watch for up to a second: whether a change counted. */
static bool S_changed(watch *w)
{
    for (int i = 0; i < 100; i++) {
        if (watch_read(w))
            return true;
        usleep(10000);
    }
    return false;
}

static void test_inotify(void **state)
{
    const char *dir = *state;
    tmpdir_put(dir, "content/a.md", "a");
    tmpdir_put(dir, "site.yaml", "title: x\n");
    tmpdir_put(dir, "other.txt", "x");
    watch w;
    assert_int_equal(watch_open(&w), 0);
    char *content = fs_join(dir, "content");
    watch_add_tree(&w, content);
    watch_add_file(&w, dir, "site.yaml");
    assert_false(watch_read(&w));
    /* a file beside site.yaml is not watched */
    tmpdir_put(dir, "other.txt", "y");
    assert_false(S_changed(&w));
    /* what changed is noted by path, for the stamp: every file of a folder
     * watched whole, editors' scratch files too; a new folder makes it wide */
    watch_forget(&w);
    tmpdir_put(dir, "content/a.md", "a2");
    assert_true(S_changed(&w));
    char *a_path = fs_join(dir, "content/a.md");
    assert_false(w.wide);
    assert_true(w.changed.len >= strlen(a_path) + 1);
    assert_string_equal(w.changed.ptr, a_path);
    watch_forget(&w);
    assert_int_equal(w.changed.len, 0);
    free(a_path);
    /* an editor's swap file is not a change; its save by rename is */
    tmpdir_put(dir, "content/.a.md.swp", "swap");
    assert_false(S_changed(&w));
    assert_true(w.changed.len > 0); /* noted all the same */
    assert_false(w.wide);
    tmpdir_put(dir, "content/a.md.new~", "b");
    assert_false(S_changed(&w));
    char *from = fs_join(dir, "content/a.md.new~"), *to = fs_join(dir, "content/a.md");
    assert_int_equal(rename(from, to), 0);
    assert_true(S_changed(&w));
    assert_true(w.saved); /* moved into place: the file is whole */
    /* a change of mode only finishes no write */
    assert_int_equal(chmod(to, 0600), 0);
    assert_true(S_changed(&w));
    assert_false(w.saved);
    /* a new folder is watched, and so is what is written in it */
    watch_forget(&w);
    tmpdir_put(dir, "content/new/b.md", "b");
    assert_true(S_changed(&w));
    assert_true(w.wide);
    watch_forget(&w);
    assert_false(w.wide);
    assert_false(watch_read(&w));
    tmpdir_put(dir, "content/new/b.md", "c");
    assert_true(S_changed(&w));
    assert_true(w.saved); /* written and closed */
    /* site.yaml replaced by rename (the inode changes) is still seen */
    tmpdir_put(dir, "site.yaml.tmp", "title: y\n");
    char *yf = fs_join(dir, "site.yaml.tmp"), *yt = fs_join(dir, "site.yaml");
    assert_int_equal(rename(yf, yt), 0);
    assert_true(S_changed(&w));
    tmpdir_put(dir, "site.yaml", "title: z\n");
    assert_true(S_changed(&w));
    /* a watched folder that did not exist yet: made, then written in */
    watch_add_file(&w, dir, "templates");
    tmpdir_put(dir, "templates/page.html", "x");
    assert_true(S_changed(&w));
    assert_false(watch_read(&w));
    tmpdir_put(dir, "templates/page.html", "y");
    assert_true(S_changed(&w));
    watch_close(&w);
    free(content);
    free(from);
    free(to);
    free(yf);
    free(yt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ignored),
        cmocka_unit_test(test_debounce),
        cmocka_unit_test_setup_teardown(test_inotify, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
