/* Unit tests for gen/incremental.c: the input stamp sees every input file,
 * the stamp file round-trips (up to date only while the inputs and the
 * listed output files are as they were), and without a cache no build is
 * incremental. Each test works in its own temporary folder. */
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
#include "config.h"
#include "diag.h"
#include "fsutil.h"
#include "incremental.h"
#include "output.h"

typedef struct {
    char *dir;
    config cfg;
    diag_list dl;
    output out;
    incr inc;
} fixture;

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
    fixture *f = calloc(1, sizeof *f);
    f->dir = strdup("/tmp/kvsite-test-incr-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    static const char *const dirs[] = {"content", "templates", "checks", "site"};
    for (int i = 0; i < 4; i++) {
        char *d = xasprintf("%s/%s", f->dir, dirs[i]);
        mkdir(d, 0777);
        free(d);
    }
    S_put(f->dir, "site.yaml", "title: T\n");
    S_put(f->dir, "content/a.md", "a");
    S_put(f->dir, "templates/page.html", "p");
    S_put(f->dir, "site/index.html", "home");
    config_defaults(&f->cfg);
    diag_list_init(&f->dl);
    output_init(&f->out);
    f->out.out_abs = xasprintf("%s/site", f->dir);
    f->out.state_dir = xasprintf("%s/" OUTPUT_STATE_DIR, f->dir);
    mkdir(f->out.state_dir, 0777);
    incr_init(&f->inc);
    f->inc.root = f->dir;
    f->inc.cfg = &f->cfg;
    f->inc.out = &f->out;
    f->inc.dl = &f->dl;
    f->inc.stamp_path = output_side_path(&f->out, "stamp");
    f->inc.cache_path = output_side_path(&f->out, "cache");
    *state = f;
    return 0;
}

static int S_teardown(void **state)
{
    fixture *f = *state;
    incr_free(&f->inc);
    output_free(&f->out);
    diag_list_free(&f->dl);
    config_free(&f->cfg);
    fs_remove_tree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void test_input_stamp(void **state)
{
    fixture *f = *state;
    uint64_t s1 = incr_input_stamp(&f->inc);
    assert_int_equal(f->inc.in_stamp, s1);
    assert_non_null(strmap_get(&f->inc.stamps, "content/a.md"));
    assert_non_null(strmap_get(&f->inc.stamps, "templates/page.html"));
    assert_null(strmap_get(&f->inc.stamps, "site/index.html")); /* the output is no input */
    /* the same files: the same stamp */
    incr i2 = f->inc;
    strmap_init(&i2.stamps);
    assert_int_equal(incr_input_stamp(&i2), s1);
    strmap_free(&i2.stamps);
    /* any input changed, or a flag: another */
    S_put(f->dir, "content/a.md", "a, longer");
    strmap_init(&i2.stamps);
    uint64_t s2 = incr_input_stamp(&i2);
    assert_int_not_equal(s2, s1);
    strmap_free(&i2.stamps);
    strmap_init(&i2.stamps);
    i2.strict = true;
    assert_int_not_equal(incr_input_stamp(&i2), s2);
    strmap_free(&i2.stamps);
}

/* A fresh walk's stamp of f's inputs, into a table of its own. */
static uint64_t S_walked(fixture *f)
{
    incr i2 = f->inc;
    strmap_init(&i2.stamps);
    uint64_t h = incr_input_stamp(&i2);
    strmap_free(&i2.stamps);
    return h;
}

/* serve's stamp from a kept table and inotify's list of what changed is the
 * stamp a walk of every file gives, through edits in place, a new page, a
 * removed one, a rename over a page and a template; a folder that came means
 * a walk; entries gone read as no stamp */
static void test_input_stamp_known(void **state)
{
    fixture *f = *state;
    char *sub = xasprintf("%s/content/s", f->dir);
    assert_int_equal(mkdir(sub, 0777), 0);
    S_put(f->dir, "content/s/b.md", "b");
    S_put(f->dir, "content/s/c.md", "c");
    incr_input_stamp(&f->inc);
    assert_non_null(strmap_get(&f->inc.stamps, "content/s/")); /* a folder, by its key */
    static const struct {
        const char *what;
        const char *changed; /* NUL-separated; the last NUL is the literal's own */
        size_t len;
    } steps[] = {
        {"edit in place", "content/s/b.md", 15},
        {"new page", "content/s/d.md", 15},
        {"removed page", "content/s/c.md", 15},
        {"renamed over, with a backup left", "content/a.md\0content/a.md~", 27},
        {"a template and a page", "content/s/b.md\0templates/page.html", 35},
    };
    for (size_t k = 0; k < sizeof steps / sizeof *steps; k++) {
        switch (k) {
        case 0: S_put(f->dir, "content/s/b.md", "b, longer"); break;
        case 1: S_put(f->dir, "content/s/d.md", "d"); break;
        case 2: {
            char *c = xasprintf("%s/content/s/c.md", f->dir);
            assert_int_equal(unlink(c), 0);
            free(c);
            break;
        }
        case 3: {
            S_put(f->dir, "content/a.md~", "a");
            S_put(f->dir, "content/a.md.new", "a, renamed over");
            char *from = xasprintf("%s/content/a.md.new", f->dir);
            char *to = xasprintf("%s/content/a.md", f->dir);
            assert_int_equal(rename(from, to), 0);
            free(from);
            free(to);
            break;
        }
        case 4:
            S_put(f->dir, "content/s/b.md", "b, again");
            S_put(f->dir, "templates/page.html", "p, again");
            break;
        }
        strmap kept = f->inc.stamps;
        strmap_init(&f->inc.stamps);
        if (!incr_input_stamp_known(&f->inc, &kept, f->inc.content_sum, f->inc.content_entries,
                                    steps[k].changed, steps[k].len))
            fail_msg("%s: not known", steps[k].what);
        strmap_free(&kept);
        if (f->inc.in_stamp != S_walked(f))
            fail_msg("%s: the stamp is not a walk's", steps[k].what);
    }
    assert_null(strmap_get(&f->inc.stamps, "content/s/c.md")); /* removed: no stamp */
    assert_non_null(strmap_get(&f->inc.stamps, "content/s/d.md"));
    assert_non_null(strmap_get(&f->inc.stamps, "templates/page.html"));
    /* a new folder: what is in it is not known, the caller walks */
    char *t = xasprintf("%s/content/t", f->dir);
    assert_int_equal(mkdir(t, 0777), 0);
    S_put(f->dir, "content/t/e.md", "e");
    strmap kept = f->inc.stamps;
    strmap_init(&f->inc.stamps);
    assert_false(incr_input_stamp_known(&f->inc, &kept, f->inc.content_sum,
                                        f->inc.content_entries, "content/t/e.md", 15));
    assert_int_equal(f->inc.stamps.len, 0);
    strmap_free(&kept);
    free(t);
    free(sub);
}

static void test_stamp_round_trip(void **state)
{
    fixture *f = *state;
    char counts[INCR_COUNTS];
    buf warnings = BUF_INIT;
    incr_input_stamp(&f->inc);
    /* no stamp file: not up to date */
    assert_false(incr_up_to_date(&f->inc, counts, &warnings));
    diag_warning(&f->dl, "content/a.md", 1, 2, "something to say");
    /* the output's stamp as a successful build saves it (no jobs: the extras) */
    output_note_extra(&f->out, "index.html");
    buf listed = BUF_INIT, again = BUF_INIT;
    uint64_t st = incr_outputs(&f->inc, &listed, NULL);
    assert_string_equal(listed.ptr, "index.html");
    incr_save_stamp(&f->inc, "1 page, 0 figures", &listed, st);
    assert_true(incr_up_to_date(&f->inc, counts, &warnings));
    assert_string_equal(counts, "1 page, 0 figures");
    assert_non_null(strstr(buf_cstr(&warnings), "content/a.md:1:2: warning: something to say"));
    /* an output file changed: not up to date */
    S_put(f->dir, "site/index.html", "home, edited");
    assert_false(incr_up_to_date(&f->inc, counts, &warnings));
    /* back to a saved state, then an input changes: not up to date */
    incr_save_stamp(&f->inc, "1 page", &listed, incr_outputs(&f->inc, &again, NULL));
    assert_true(incr_up_to_date(&f->inc, counts, &warnings));
    f->inc.in_stamp ^= 1;
    assert_false(incr_up_to_date(&f->inc, counts, &warnings));
    buf_free(&again);
    buf_free(&listed);
    buf_free(&warnings);
}

/* A build whose warnings would make the stamp longer than incr_up_to_date
 * reads leaves no stamp (nor an older one, nor a side file): the next build
 * is not "up to date" and replays them from its records. Fewer warnings
 * again: a stamp again. */
static void test_stamp_too_many_warnings(void **state)
{
    fixture *f = *state;
    char counts[INCR_COUNTS];
    buf warnings = BUF_INIT, listed = BUF_INIT;
    incr_input_stamp(&f->inc);
    output_note_extra(&f->out, "index.html");
    uint64_t st = incr_outputs(&f->inc, &listed, NULL);
    incr_save_stamp(&f->inc, "1 page", &listed, st);
    assert_true(incr_up_to_date(&f->inc, counts, &warnings));
    char msg[400];
    memset(msg, 'w', sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    for (int i = 0; i < 45000; i++) /* 18 MB of text */
        diag_warning(&f->dl, "content/a.md", i + 1, 1, "%s", msg);
    incr_save_stamp(&f->inc, "1 page", &listed, st);
    assert_false(fs_exists(f->inc.stamp_path));
    char *side = xasprintf("%s.new", f->inc.stamp_path);
    assert_false(fs_exists(side));
    assert_false(incr_up_to_date(&f->inc, counts, &warnings));
    diag_list_free(&f->dl);
    diag_list_init(&f->dl);
    diag_warning(&f->dl, "content/a.md", 1, 2, "one to say");
    incr_save_stamp(&f->inc, "1 page", &listed, st);
    assert_false(fs_exists(side));
    buf_clear(&warnings);
    assert_true(incr_up_to_date(&f->inc, counts, &warnings));
    assert_string_equal(buf_cstr(&warnings), "content/a.md:1:2: warning: one to say\n");
    free(side);
    buf_free(&listed);
    buf_free(&warnings);
}

static void test_no_cache_no_incremental(void **state)
{
    fixture *f = *state;
    incr_read_cache(&f->inc, true); /* there is none */
    assert_int_equal(f->inc.prev.njobs, 0);
    assert_false(incr_possible(&f->inc, false));
    assert_false(f->inc.global_known);
    /* a garbage cache file reads as none */
    S_put(f->dir, ".kvsite/site.cache", "not a cache");
    incr_read_cache(&f->inc, true);
    assert_int_equal(f->inc.prev.njobs, 0);
    assert_false(incr_possible(&f->inc, false));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_input_stamp, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_input_stamp_known, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_stamp_round_trip, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_stamp_too_many_warnings, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_no_cache_no_incremental, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
