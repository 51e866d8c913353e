/* Unit tests for gen/output.c: the one writer (write-if-changed, byte
 * accounting, the incremental comparison with the published file), the
 * output folder's checks and lock, the staging scan and sweep, and both
 * publishes. Every test works in its own temporary folder, set up with plain
 * POSIX calls. */
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir.h"

#include "buf.h"
#include "diag.h"
#include "fsutil.h"
#include "output.h"
#include "sealed.h"

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-output-XXXXXX"); }
static int S_teardown(void **state) { return tmpdir_teardown(state); }

static char *S_path(void **state, const char *rel)
{
    return xasprintf("%s/%s", (char *)*state, rel);
}

static void S_put(void **state, const char *rel, const char *text)
{
    char *p = S_path(state, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    free(p);
}

static void S_mkdir(void **state, const char *rel)
{
    char *p = S_path(state, rel);
    assert_int_equal(mkdir(p, 0777), 0);
    free(p);
}

/* The file's bytes, or NULL when it is missing (malloc'ed). */
static char *S_get(void **state, const char *rel)
{
    char *p = S_path(state, rel);
    buf b = BUF_INIT;
    int rc = fs_read_file(p, 1 << 20, &b);
    free(p);
    if (rc != FS_OK) {
        buf_free(&b);
        return NULL;
    }
    return buf_detach(&b);
}

/* The mark (proj/.kvsite/site.synced) loads as a sealed file and lists
 * exactly want's len bytes of NUL-separated names. */
static void S_expect_mark(void **state, const char *want, size_t len)
{
    char *mark = S_path(state, "proj/.kvsite/site.synced");
    sealed_map m;
    assert_true(sealed_load(&m, mark, "kvsite-synced 2\n", 1 << 20));
    assert_int_equal(m.len, len);
    assert_memory_equal(m.data, want, len);
    sealed_unmap(&m);
    free(mark);
}

static bool S_exists(void **state, const char *rel)
{
    char *p = S_path(state, rel);
    struct stat st;
    bool ok = lstat(p, &st) == 0;
    free(p);
    return ok;
}

static ino_t S_inode(void **state, const char *rel)
{
    char *p = S_path(state, rel);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    free(p);
    return st.st_ino;
}

/* How many entries the folder rel holds. */
static int S_count(void **state, const char *rel)
{
    char *p = S_path(state, rel);
    DIR *d = opendir(p);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    free(p);
    return n;
}

/* ---- the writer ---- */

static void test_write_check_mode(void **state)
{
    (void)state;
    output_dest d = {.dir = NULL};
    diag_list dl;
    diag_list_init(&dl);
    uint64_t bytes = 0;
    assert_int_equal(output_write(&d, "a/index.html", "hello", 5, NULL, NULL,
                                  &dl, &bytes, NULL), 0);
    assert_int_equal(bytes, 5);
    /* an empty file counts 1: a count of 0 means no file */
    assert_int_equal(output_write(&d, "b", NULL, 0, NULL, NULL, &dl, &bytes, NULL), 0);
    assert_int_equal(bytes, 6);
    assert_int_equal(dl.n, 0);
    diag_list_free(&dl);
}

static void test_write_full(void **state)
{
    char *dir = S_path(state, "stage");
    output_dest d = {.dir = dir};
    diag_list dl;
    diag_list_init(&dl);
    uint64_t bytes = 0;
    struct stat st;
    assert_int_equal(output_write(&d, "a/b/index.html", "<p>x</p>", 8, NULL, NULL,
                                  &dl, &bytes, &st), 1);
    assert_int_equal(bytes, 8);
    assert_int_equal(st.st_size, 8);
    char *got = S_get(state, "stage/a/b/index.html");
    assert_string_equal(got, "<p>x</p>");
    free(got);
    /* the same bytes again: the file is left alone (same inode), and counted */
    ino_t ino = S_inode(state, "stage/a/b/index.html");
    assert_int_equal(output_write(&d, "a/b/index.html", "<p>x</p>", 8, NULL, NULL,
                                  &dl, &bytes, &st), 1);
    assert_int_equal(S_inode(state, "stage/a/b/index.html"), ino);
    assert_int_equal(st.st_ino, ino);
    assert_int_equal(bytes, 16);
    /* other bytes replace them */
    assert_int_equal(output_write(&d, "a/b/index.html", "y", 1, NULL, NULL, &dl, &bytes, NULL), 1);
    got = S_get(state, "stage/a/b/index.html");
    assert_string_equal(got, "y");
    free(got);
    assert_int_equal(dl.n, 0);
    diag_list_free(&dl);
    free(dir);
}

static void test_write_incremental(void **state)
{
    S_mkdir(state, "out");
    S_put(state, "out/same.html", "same");
    S_put(state, "out/old.html", "old");
    char *dir = S_path(state, "incr"), *pub = S_path(state, "out");
    output_dest d = {.dir = dir, .same_dir = pub};
    diag_list dl;
    diag_list_init(&dl);
    uint64_t bytes = 0;
    /* the published file has the bytes: nothing written, but counted */
    assert_int_equal(output_write(&d, "same.html", "same", 4, NULL, NULL, &dl, &bytes, NULL), 0);
    assert_false(S_exists(state, "incr/same.html"));
    assert_int_equal(bytes, 4);
    /* it differs: written to the incremental folder, the published one kept */
    assert_int_equal(output_write(&d, "old.html", "new", 3, NULL, NULL, &dl, &bytes, NULL), 1);
    char *got = S_get(state, "incr/old.html");
    assert_string_equal(got, "new");
    free(got);
    got = S_get(state, "out/old.html");
    assert_string_equal(got, "old");
    free(got);
    assert_int_equal(bytes, 7);
    diag_list_free(&dl);
    free(dir);
    free(pub);
}

static void test_write_failure(void **state)
{
    /* a name longer than any file system takes (root may write anywhere) */
    char name[400];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    char *dir = S_path(state, "stage");
    output_dest d = {.dir = dir};
    diag_list dl;
    diag_list_init(&dl);
    uint64_t bytes = 3;
    assert_int_equal(output_write(&d, name, "x", 1, NULL, "content/x.md", &dl, &bytes, NULL), -1);
    assert_int_equal(errno, ENAMETOOLONG);
    assert_int_equal(bytes, 3); /* a file not written is not counted */
    assert_int_equal(dl.errors, 1);
    assert_string_equal(dl.v[0].file, "content/x.md");
    assert_non_null(strstr(dl.v[0].msg, "cannot write xxx"));
    diag_list_free(&dl);
    free(dir);
}

static void test_rel(void **state)
{
    (void)state;
    char *r = output_rel("/a/b/");
    assert_string_equal(r, "a/b/index.html");
    free(r);
    r = output_rel("/");
    assert_string_equal(r, "index.html");
    free(r);
    r = output_rel("/assets/x.css");
    assert_string_equal(r, "assets/x.css");
    free(r);
}

/* ---- the output folder ---- */

static int S_try_setup(void **state, const char *out, bool check_only, diag_list *dl, output *o)
{
    output_init(o);
    char *root = S_path(state, "proj");
    char real[4096];
    assert_non_null(realpath(root, real));
    int rc = output_setup(o, root, real, out, check_only, dl);
    free(root);
    return rc;
}

static void test_setup_refuses(void **state)
{
    S_mkdir(state, "proj");
    S_mkdir(state, "proj/content");
    S_put(state, "proj/afile", "x");
    char *target = S_path(state, "elsewhere");
    char *link = S_path(state, "proj/linked");
    assert_int_equal(symlink(target, link), 0);
    static const struct {
        const char *out, *why;
    } bad[] = {
        {".", "replace the project"},
        {"content/site", "replace the project"},
        {"afile", "is not a folder"},
        {"linked", "symbolic link"},
        {"missing/site", "parent folder does not exist"},
        {"/", "replace the project"}, /* it contains every project */
        {"..", "replace the project"},
        {".kvsite", "kvsite's state folder"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        diag_list dl;
        diag_list_init(&dl);
        output o;
        assert_int_equal(S_try_setup(state, bad[i].out, false, &dl, &o), -1);
        assert_int_equal(dl.errors, 1);
        if (!strstr(dl.v[0].msg, bad[i].why))
            fail_msg("%s: %s", bad[i].out, dl.v[0].msg);
        assert_null(o.staging);
        output_unlock(&o);
        output_free(&o);
        diag_list_free(&dl);
    }
    free(target);
    free(link);
}

static void test_setup_lock_and_staging(void **state)
{
    S_mkdir(state, "proj");
    diag_list dl;
    diag_list_init(&dl);
    output a, b;
    assert_int_equal(S_try_setup(state, NULL, false, &dl, &a), 0);
    assert_non_null(strstr(a.out_abs, "/proj/site"));
    assert_true(S_exists(state, "proj/.kvsite/site.prev"));
    assert_true(S_exists(state, "proj/.kvsite/site.lock"));
    char *side = output_side_path(&a, "cache");
    assert_string_equal(side + strlen(side) - strlen("/proj/.kvsite/site.cache"), "/proj/.kvsite/site.cache");
    free(side);
    /* the state folder is made on demand (0777 & umask), holds only the
     * output's files, and nothing else lands beside the output */
    mode_t mask = umask(022);
    umask(mask);
    struct stat st;
    char *sdir = S_path(state, "proj/.kvsite");
    assert_int_equal(lstat(sdir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0777 & ~mask);
    assert_string_equal(a.state_dir, sdir);
    free(sdir);
    assert_int_equal(S_count(state, "proj"), 1);
    assert_int_equal(S_count(state, "proj/.kvsite"), 2);
    /* a second build of the same output waits for none: it is refused */
    assert_int_equal(S_try_setup(state, NULL, false, &dl, &b), -1);
    assert_non_null(strstr(dl.v[0].msg, "another kvsite build"));
    output_unlock(&b);
    output_free(&b);
    output_unlock(&a);
    output_free(&a);
    /* check mode takes no lock and makes no staging folder */
    diag_list_free(&dl);
    diag_list_init(&dl);
    assert_int_equal(S_try_setup(state, "other", true, &dl, &a), 0);
    assert_null(a.staging);
    assert_false(output_writes(&a));
    assert_false(S_exists(state, "proj/.kvsite/other.prev"));
    assert_false(S_exists(state, "proj/.kvsite/other.lock"));
    output_unlock(&a);
    output_free(&a);
    diag_list_free(&dl);
}

/* A state folder that is a link or not a folder is refused: the lock, the
 * staging folder and the cache would go wherever it leads. */
static void test_state_dir_refused(void **state)
{
    S_mkdir(state, "proj");
    S_mkdir(state, "elsewhere");
    char *target = S_path(state, "elsewhere"), *link = S_path(state, "proj/.kvsite");
    assert_int_equal(symlink(target, link), 0);
    for (int i = 0; i < 2; i++) {
        diag_list dl;
        diag_list_init(&dl);
        output o;
        assert_int_equal(S_try_setup(state, NULL, false, &dl, &o), -1);
        assert_int_equal(dl.errors, 1);
        const char *why = i == 0 ? "is a symbolic link: refused" : "is not a folder: refused";
        if (!strstr(dl.v[0].msg, why) || !strstr(dl.v[0].msg, "/proj/.kvsite"))
            fail_msg("%s", dl.v[0].msg);
        assert_null(o.staging);
        assert_int_equal(o.lock_fd, -1);
        output_unlock(&o);
        output_free(&o);
        diag_list_free(&dl);
        assert_int_equal(S_count(state, "elsewhere"), 0);
        assert_int_equal(unlink(link), 0);
        S_put(state, "proj/.kvsite", "a file");
    }
    free(target);
    free(link);
}

/* A full build: the scan sees what the staging folder held, the sweep keeps
 * only this build's files, the publish swaps the folders. */
static void test_scan_sweep_publish(void **state)
{
    S_mkdir(state, "proj");
    S_mkdir(state, "proj/site");
    S_put(state, "proj/site/old-output.html", "published");
    diag_list dl;
    diag_list_init(&dl);
    output o;
    assert_int_equal(S_try_setup(state, NULL, false, &dl, &o), 0);
    S_mkdir(state, "proj/.kvsite/site.prev/stale");
    S_put(state, "proj/.kvsite/site.prev/stale/gone.html", "stale");
    S_mkdir(state, "proj/.kvsite/site.prev/empty");
    S_put(state, "proj/.kvsite/site.prev/kept.html", "old bytes");
    output_scan_start(&o);
    output_scan_finish(&o);
    assert_true(output_writes(&o));
    output_dest d = output_dest_of(&o);
    assert_ptr_equal(d.dir, o.staging);
    assert_null(d.same_dir);
    uint64_t bytes = 0;
    assert_int_equal(output_write(&d, "kept.html", "new bytes", 9, NULL, NULL,
                                  &dl, &bytes, NULL), 1);
    output_note(&o, "kept.html");
    assert_int_equal(output_emit(&o, "feed.xml", "<feed/>", 7, &dl), 0);
    assert_int_equal(o.extra_bytes, 7);
    assert_string_equal(o.extras.ptr, "feed.xml");
    output_sweep(&o);
    assert_false(S_exists(state, "proj/.kvsite/site.prev/stale"));
    assert_false(S_exists(state, "proj/.kvsite/site.prev/empty"));
    /* the writers compare with the published output */
    assert_ptr_equal(d.diff_dir, o.out_abs);
    assert_true(output_differs(&d, "kept.html", "new bytes", 9, NULL, NULL));
    assert_false(output_differs(&d, "old-output.html", "published", 9, NULL, NULL));
    static const char fresh[] = "kept.html";
    assert_int_equal(output_publish(&o, fresh, sizeof fresh, &dl), 0);
    char *got = S_get(state, "proj/site/kept.html");
    assert_string_equal(got, "new bytes");
    free(got);
    got = S_get(state, "proj/site/feed.xml");
    assert_string_equal(got, "<feed/>");
    free(got);
    /* the old output is the next build's staging folder */
    got = S_get(state, "proj/.kvsite/site.prev/old-output.html");
    assert_string_equal(got, "published");
    free(got);
    /* and it is marked as the new output's copy but for the fresh pages, the
     * extras and the files the new output lacks: the next incremental build
     * does not compare the two folders file by file */
    static const char want[] = "kept.html\0feed.xml\0old-output.html";
    S_expect_mark(state, want, sizeof want);
    assert_int_equal(dl.n, 0);
    output_done(&o);
    output_unlock(&o);
    output_free(&o);
    diag_list_free(&dl);
}

/* The published output walked in a thread once the pages are rendered
 * (output_scan_published): the mark lists what it held and the new output
 * lacks, folders deep; a build that fails instead stops and joins the walk. */
static void test_scan_published_thread(void **state)
{
    S_mkdir(state, "proj");
    S_mkdir(state, "proj/site");
    S_mkdir(state, "proj/site/a");
    S_mkdir(state, "proj/site/a/b");
    S_put(state, "proj/site/a/b/deep.html", "old");
    S_put(state, "proj/site/kept.html", "old bytes");
    for (int round = 0; round < 2; round++) {
        diag_list dl;
        diag_list_init(&dl);
        output o;
        assert_int_equal(S_try_setup(state, NULL, false, &dl, &o), 0);
        output_scan_start(&o);
        output_scan_finish(&o);
        output_dest d = output_dest_of(&o);
        uint64_t bytes = 0;
        assert_int_equal(output_write(&d, "kept.html", "new bytes", 9, NULL, NULL, &dl, &bytes, NULL),
                         1);
        output_note(&o, "kept.html");
        output_scan_published(&o);
        output_scan_published(&o); /* once */
        if (round == 0) {
            output_sweep(&o);
            static const char fresh[] = "kept.html";
            assert_int_equal(output_publish(&o, fresh, sizeof fresh, &dl), 0);
            static const char want[] = "kept.html\0a/b/deep.html";
            S_expect_mark(state, want, sizeof want);
        } else {
            output_discard(&o); /* a failed build: no publish */
        }
        assert_int_equal(dl.n, 0);
        output_done(&o);
        output_unlock(&o);
        output_free(&o);
        diag_list_free(&dl);
    }
    char *got = S_get(state, "proj/site/kept.html");
    assert_string_equal(got, "new bytes");
    free(got);
}

/* A link planted in the staging folder empties it before anything is written. */
static void test_scan_planted_link(void **state)
{
    S_mkdir(state, "proj");
    S_mkdir(state, "victim");
    S_put(state, "victim/precious", "keep me");
    diag_list dl;
    diag_list_init(&dl);
    output o;
    assert_int_equal(S_try_setup(state, NULL, false, &dl, &o), 0);
    char *target = S_path(state, "victim"), *link = S_path(state, "proj/.kvsite/site.prev/assets");
    assert_int_equal(symlink(target, link), 0);
    S_put(state, "proj/.kvsite/site.prev/x.html", "x");
    output_scan_finish(&o); /* no thread started: scanned here */
    assert_false(S_exists(state, "proj/.kvsite/site.prev/assets"));
    assert_false(S_exists(state, "proj/.kvsite/site.prev/x.html"));
    assert_true(S_exists(state, "proj/.kvsite/site.prev"));
    char *got = S_get(state, "victim/precious");
    assert_string_equal(got, "keep me");
    free(got);
    output_done(&o);
    output_unlock(&o);
    output_free(&o);
    diag_list_free(&dl);
    free(target);
    free(link);
}

/* An incremental build: only changed files are written; the staging folder
 * is made the output's copy, they are moved into it, the last build's files
 * this one did not make go, and it is swapped in whole. */
static void test_publish_incremental(void **state)
{
    S_mkdir(state, "proj");
    S_mkdir(state, "proj/site");
    S_put(state, "proj/site/same.html", "same");
    S_put(state, "proj/site/changed.html", "before");
    S_put(state, "proj/site/dropped.html", "dropped");
    diag_list dl;
    diag_list_init(&dl);
    output o;
    assert_int_equal(S_try_setup(state, NULL, false, &dl, &o), 0);
    ino_t same_ino = S_inode(state, "proj/site/same.html");
    assert_int_equal(output_begin_incremental(&o, &dl), 0);
    output_dest d = output_dest_of(&o);
    assert_ptr_equal(d.dir, o.incr_dir);
    assert_ptr_equal(d.same_dir, o.out_abs);
    uint64_t bytes = 0;
    assert_int_equal(output_write(&d, "same.html", "same", 4, NULL, NULL, &dl, &bytes, NULL), 0);
    assert_int_equal(output_write(&d, "changed.html", "after", 5, NULL, NULL,
                                  &dl, &bytes, NULL), 1);
    output_note(&o, "same.html");
    output_note(&o, "changed.html");
    static const char prev[] = "changed.html\0dropped.html\0same.html";
    assert_int_equal(output_publish_incremental(&o, prev, sizeof prev, &dl), 0);
    char *got = S_get(state, "proj/site/changed.html");
    assert_string_equal(got, "after");
    free(got);
    assert_false(S_exists(state, "proj/site/dropped.html"));
    got = S_get(state, "proj/site/same.html");
    assert_string_equal(got, "same");
    free(got);
    /* the old output is the staging folder now, whole, and the mark lists
     * what differs */
    assert_int_equal(S_inode(state, "proj/.kvsite/site.prev/same.html"), same_ino);
    got = S_get(state, "proj/.kvsite/site.prev/changed.html");
    assert_string_equal(got, "before");
    free(got);
    static const char differs[] = "changed.html\0dropped.html";
    S_expect_mark(state, differs, sizeof differs);
    output_done(&o);
    assert_false(S_exists(state, "proj/.kvsite/site.incr"));
    output_unlock(&o);
    output_free(&o);
    assert_int_equal(dl.n, 0);

    /* the next build: the mark brings the staging folder up first */
    assert_int_equal(S_try_setup(state, NULL, false, &dl, &o), 0);
    assert_int_equal(output_begin_incremental(&o, &dl), 0);
    d = output_dest_of(&o);
    assert_int_equal(output_write(&d, "same.html", "again", 5, NULL, NULL, &dl, &bytes, NULL), 1);
    output_note(&o, "same.html");
    output_note(&o, "changed.html");
    static const char prev2[] = "changed.html\0same.html";
    assert_int_equal(output_publish_incremental(&o, prev2, sizeof prev2, &dl), 0);
    got = S_get(state, "proj/site/changed.html");
    assert_string_equal(got, "after"); /* copied into the staging folder from the mark */
    free(got);
    got = S_get(state, "proj/site/same.html");
    assert_string_equal(got, "again");
    free(got);
    assert_false(S_exists(state, "proj/site/dropped.html"));
    output_done(&o);
    output_unlock(&o);
    output_free(&o);
    assert_int_equal(dl.n, 0);
    diag_list_free(&dl);
}

/* limits.output_bytes: a writer refuses the file that would pass the cap,
 * before writing it (the count is the process's: this test runs first), and
 * counts its bytes all the same (the parent's sum in page order, pool_cap). */
static void test_write_cap(void **state)
{
    char *dir = S_path(state, "out");
    output_dest d = {.dir = dir, .cap = 10};
    diag_list dl;
    diag_list_init(&dl);
    uint64_t bytes = 0;
    assert_int_equal(output_write(&d, "a.html", "12345", 5, NULL, NULL, &dl, &bytes, NULL), 1);
    assert_int_equal(output_write(&d, "b.html", "123456", 6, NULL, "content/b.md",
                                  &dl, &bytes, NULL), -1);
    assert_int_equal(errno, EFBIG);
    assert_int_equal(dl.errors, 1);
    assert_string_equal(dl.v[0].file, "content/b.md");
    assert_non_null(strstr(dl.v[0].msg, OUTPUT_CAP_MSG));
    assert_false(S_exists(state, "out/b.html"));
    assert_int_equal(bytes, 11);
    diag_list_free(&dl);
    free(dir);
}


/* ---- the tables ---- */

/* A full build's start: set up, the staging folder scanned, the tables loaded. */
static void S_full_start(void **state, diag_list *dl, output *o)
{
    assert_int_equal(S_try_setup(state, NULL, false, dl, o), 0);
    output_scan_start(o);
    output_scan_finish(o);
    output_load_tables(o);
}

/* Saves a table at rel listing file (in dir) with its stat as it is now and
 * the digest of text: made as if a second later (not racy). */
static void S_table(void **state, const char *rel, const char *dir, const char *file,
                    const char *text)
{
    char *path = S_path(state, dir), *at = fs_join(path, file), *table = S_path(state, rel);
    struct stat st;
    assert_int_equal(lstat(at, &st), 0);
    outrec_builder b;
    outrec_builder_init(&b);
    b.since_ns += 1000000000;
    outrec_stamp s = outrec_stamp_of(&st);
    outrec_digest d;
    outrec_digest_of(text, strlen(text), &d);
    outrec_add(&b, file, &s, &d);
    assert_int_equal(outrec_save(&b, table), 0);
    outrec_builder_free(&b);
    free(table);
    free(at);
    free(path);
}

/* A full build asks the tables before it reads a file: a file its table
 * lists with the page's digest and the file's stat is taken for the page
 * unread (here the table lies, so what stays shows it was not read); one
 * written since is compared by its bytes. */
static void test_tables_asked(void **state)
{
    S_mkdir(state, "proj");
    S_mkdir(state, "proj/site");
    S_put(state, "proj/site/pub.html", "published");
    S_put(state, "proj/site/pub2.html", "published");
    diag_list dl;
    diag_list_init(&dl);
    output o;
    assert_int_equal(S_try_setup(state, NULL, false, &dl, &o), 0);
    S_put(state, "proj/.kvsite/site.prev/page.html", "stale");
    S_put(state, "proj/.kvsite/site.prev/page2.html", "stale");
    S_table(state, "proj/.kvsite/site.prev.files", "proj/.kvsite/site.prev", "page.html", "fresh");
    S_table(state, "proj/.kvsite/site.files", "proj/site", "pub.html", "other");
    output_scan_start(&o);
    output_scan_finish(&o);
    output_load_tables(&o);
    /* the staging folder's table goes as it is loaded: that folder changes now */
    assert_false(S_exists(state, "proj/.kvsite/site.prev.files"));
    output_dest d = output_dest_of(&o);
    assert_ptr_equal(d.dir_rec, &o.stage_rec);
    assert_ptr_equal(d.diff_rec, &o.out_rec);
    output_dest_open(&d);
    outrec_digest fresh, other;
    outrec_digest_of("fresh", 5, &fresh);
    outrec_digest_of("other", 5, &other);
    uint64_t bytes = 0;
    struct stat st;
    assert_int_equal(output_write(&d, "page.html", "fresh", 5, &fresh, NULL, &dl, &bytes, &st), 1);
    char *got = S_get(state, "proj/.kvsite/site.prev/page.html");
    assert_string_equal(got, "stale");
    free(got);
    assert_int_equal(st.st_ino, S_inode(state, "proj/.kvsite/site.prev/page.html"));
    /* not listed: compared, and written */
    assert_int_equal(output_write(&d, "page2.html", "fresh", 5, &fresh, NULL,
                                  &dl, &bytes, NULL), 1);
    got = S_get(state, "proj/.kvsite/site.prev/page2.html");
    assert_string_equal(got, "fresh");
    free(got);
    /* the published side: the table's word, then bytes */
    struct stat pub;
    memset(&pub, 0, sizeof pub);
    assert_false(output_differs(&d, "pub.html", "other", 5, &other, &pub));
    assert_int_equal(pub.st_ino, S_inode(state, "proj/site/pub.html"));
    /* another digest than the table's: the bytes decide */
    outrec_digest published;
    outrec_digest_of("published", 9, &published);
    assert_false(output_differs(&d, "pub.html", "published", 9, &published, NULL));
    assert_true(output_differs(&d, "pub2.html", "other", 5, &other, NULL));
    /* written after the table was made: its stat moved, its bytes are read */
    struct timespec pause = {0, 20000000};
    nanosleep(&pause, NULL);
    S_put(state, "proj/.kvsite/site.prev/page.html", "fresh");
    S_put(state, "proj/.kvsite/site.prev/page.html", "stale");
    assert_int_equal(output_write(&d, "page.html", "fresh", 5, &fresh, NULL, &dl, &bytes, NULL), 1);
    got = S_get(state, "proj/.kvsite/site.prev/page.html");
    assert_string_equal(got, "fresh");
    free(got);
    output_dest_close(&d);
    output_done(&o);
    output_unlock(&o);
    output_free(&o);
    assert_int_equal(dl.n, 0);
}

/* The tables follow the folders: after a full publish the output's lists
 * what the build wrote, the staging folder's what it found unchanged in the
 * old output; an incremental publish exchanges them as it does the folders. */
static void test_tables_follow_publish(void **state)
{
    S_mkdir(state, "proj");
    S_mkdir(state, "proj/site");
    S_put(state, "proj/site/kept.html", "same");
    S_put(state, "proj/site/old.html", "before");
    diag_list dl;
    diag_list_init(&dl);
    output o;
    S_full_start(state, &dl, &o);
    output_dest d = output_dest_of(&o);
    output_dest_open(&d);
    const char *pages[][2] = {{"kept.html", "same"}, {"old.html", "after"}};
    struct {
        outrec_stamp written, published;
        outrec_digest dg;
        bool differs;
    } got[2];
    buf fresh = BUF_INIT;
    for (size_t i = 0; i < 2; i++) {
        const char *rel = pages[i][0], *text = pages[i][1];
        outrec_digest_of(text, strlen(text), &got[i].dg);
        uint64_t bytes = 0;
        struct stat st, pub;
        assert_int_equal(output_write(&d, rel, text, strlen(text), &got[i].dg, NULL, &dl,
                                      &bytes, &st), 1);
        output_note(&o, rel);
        got[i].differs = output_differs(&d, rel, text, strlen(text), &got[i].dg, &pub);
        assert_int_equal(got[i].differs, i == 1);
        if (got[i].differs)
            buf_put(&fresh, rel, strlen(rel) + 1);
        got[i].written = outrec_stamp_of(&st);
        got[i].published = outrec_stamp_of(&pub);
    }
    output_dest_close(&d);
    output_sweep(&o);
    assert_int_equal(output_publish(&o, fresh.ptr, fresh.len, &dl), 0);
    buf_free(&fresh);
    /* the tables, after the publish, as build.c makes them */
    for (int staging = 0; staging < 2; staging++) {
        outrec_builder b;
        output_table_start(&o, &b);
        b.since_ns += 10ll * 1000000000; /* as if written long before: not racy */
        for (size_t i = 0; i < 2; i++)
            if (!staging || !got[i].differs)
                outrec_add(&b, pages[i][0], staging ? &got[i].published : &got[i].written,
                           &got[i].dg);
        output_table_save(&o, staging, &b);
        outrec_builder_free(&b);
    }
    outrec t;
    char *files = S_path(state, "proj/.kvsite/site.files");
    char *prev = S_path(state, "proj/.kvsite/site.prev.files");
    assert_int_equal(outrec_load(&t, files), 2);
    outrec_free(&t);
    assert_int_equal(outrec_load(&t, prev), 1);
    /* the entry is the old output's kept.html, now the staging folder's */
    char *at = S_path(state, "proj/.kvsite/site.prev/kept.html");
    struct stat st;
    assert_int_equal(lstat(at, &st), 0);
    outrec_digest same;
    outrec_digest_of("same", 4, &same);
    assert_true(outrec_holds(&t, "kept.html", &st, &same));
    outrec_free(&t);
    free(at);
    output_done(&o);
    output_unlock(&o);
    output_free(&o);

    /* an incremental build's publish */
    assert_int_equal(S_try_setup(state, NULL, false, &dl, &o), 0);
    assert_int_equal(output_begin_incremental(&o, &dl), 0);
    d = output_dest_of(&o);
    assert_null(d.dir_rec);
    assert_null(d.diff_rec);
    uint64_t bytes = 0;
    assert_int_equal(output_write(&d, "old.html", "again", 5, NULL, NULL, &dl, &bytes, NULL), 1);
    output_note(&o, "old.html");
    output_note(&o, "kept.html");
    static const char last[] = "kept.html\0old.html";
    assert_int_equal(output_publish_incremental(&o, last, sizeof last, &dl), 0);
    /* exchanged with the folders: the output's table is the staging folder's
     * (kept.html, untouched, still matches), the staging folder's the old
     * output's */
    assert_int_equal(outrec_load(&t, files), 1);
    at = S_path(state, "proj/site/kept.html");
    assert_int_equal(lstat(at, &st), 0);
    assert_true(outrec_holds(&t, "kept.html", &st, &same));
    outrec_free(&t);
    free(at);
    assert_int_equal(outrec_load(&t, prev), 2);
    outrec_free(&t);
    output_done(&o);
    output_unlock(&o);
    output_free(&o);
    free(files);
    free(prev);
    assert_int_equal(dl.n, 0);
}

/* The new tables' racy line is the loading of the old ones, before any page
 * was written: a page this build wrote is left out however long the build
 * ran before the tables were made (a later write in the stamp's clock tick
 * would not show). */
static void test_tables_racy_line(void **state)
{
    S_mkdir(state, "proj");
    diag_list dl;
    diag_list_init(&dl);
    output o;
    S_full_start(state, &dl, &o);
    S_put(state, "proj/.kvsite/site.prev/page.html", "page");
    char *at = S_path(state, "proj/.kvsite/site.prev/page.html");
    struct stat st;
    assert_int_equal(lstat(at, &st), 0);
    struct timespec pause = {0, 300000000}; /* past the 0.1 s line */
    nanosleep(&pause, NULL);
    outrec_builder b;
    output_table_start(&o, &b);
    outrec_stamp s = outrec_stamp_of(&st);
    outrec_digest dg;
    outrec_digest_of("page", 4, &dg);
    outrec_add(&b, "page.html", &s, &dg);
    assert_int_equal(b.n, 0);
    outrec_builder_free(&b);
    free(at);
    output_done(&o);
    output_unlock(&o);
    output_free(&o);
    assert_int_equal(dl.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_check_mode),
        /* before any other write: the cap counts all of this process's */
        cmocka_unit_test_setup_teardown(test_write_cap, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_write_full, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_write_incremental, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_write_failure, S_setup, S_teardown),
        cmocka_unit_test(test_rel),
        cmocka_unit_test_setup_teardown(test_setup_refuses, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_setup_lock_and_staging, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_state_dir_refused, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_scan_sweep_publish, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_scan_published_thread, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_scan_planted_link, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_publish_incremental, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_tables_asked, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_tables_follow_publish, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_tables_racy_line, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
