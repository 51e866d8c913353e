/* Unit tests for gen/outrec.c: the output tables. A table lists what it was
 * given and nothing racy, a file whose stat moved is not held, and a file
 * that is not a well-formed table (damaged, cut short, forged with a right
 * sum but a wrong shape) loads as an empty table. */
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
#include "fsutil.h"
#include "outrec.h"
#include "stamp.h"

static int S_setup(void **state) { return tmpdir_setup(state, "/tmp/kvsite-test-outrec-XXXXXX"); }
static int S_teardown(void **state) { return tmpdir_teardown(state); }

static char *S_path(void **state, const char *rel)
{
    return xasprintf("%s/%s", (char *)*state, rel);
}

/* A stamp from an hour before the builder's start (not racy). */
static outrec_stamp S_old(const outrec_builder *b, uint64_t size, uint64_t ino)
{
    int64_t t = b->since_ns - 3600ll * 1000000000 + 123456789;
    outrec_stamp s = {size, ino, t, t + 1000};
    return s;
}

/* The stat a stamp says. */
static struct stat S_stat_of(const outrec_stamp *s)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    st.st_size = (off_t)s->size;
    st.st_ino = (ino_t)s->ino;
    st.st_mtim.tv_sec = s->mtime_ns / 1000000000;
    st.st_mtim.tv_nsec = s->mtime_ns % 1000000000;
    st.st_ctim.tv_sec = s->ctime_ns / 1000000000;
    st.st_ctim.tv_nsec = s->ctime_ns % 1000000000;
    return st;
}

static void test_round_trip(void **state)
{
    outrec_builder b;
    outrec_builder_init(&b);
    outrec_digest da, db;
    outrec_digest_of("alpha", 5, &da);
    outrec_digest_of("beta", 4, &db);
    assert_memory_not_equal(da.b, db.b, OUTREC_DIGEST_SIZE);
    outrec_stamp sa = S_old(&b, 5, 11), sb = S_old(&b, 4, 12);
    /* added out of order: the table sorts them */
    outrec_add(&b, "z/index.html", &sb, &db);
    outrec_add(&b, "a/index.html", &sa, &da);
    char *path = S_path(state, "site.files");
    assert_int_equal(outrec_save(&b, path), 0);
    outrec_builder_free(&b);
    outrec t;
    assert_int_equal(outrec_load(&t, path), 2);
    struct stat sta = S_stat_of(&sa), stb = S_stat_of(&sb);
    assert_true(outrec_holds(&t, "a/index.html", &sta, &da));
    assert_true(outrec_holds(&t, "z/index.html", &stb, &db));
    /* another digest, another stat, another path: not held */
    assert_false(outrec_holds(&t, "a/index.html", &sta, &db));
    assert_false(outrec_holds(&t, "z/index.html", &sta, &db));
    struct stat moved = sta;
    moved.st_ctim.tv_nsec++;
    assert_false(outrec_holds(&t, "a/index.html", &moved, &da));
    moved = sta;
    moved.st_ino++;
    assert_false(outrec_holds(&t, "a/index.html", &moved, &da));
    assert_false(outrec_holds(&t, "m/index.html", &sta, &da));
    assert_false(outrec_holds(&t, "a/index.htm", &sta, &da));
    outrec_free(&t);
    /* the side file is gone */
    char *side = S_path(state, "site.files.new");
    assert_false(fs_exists(side));
    free(side);
    free(path);
}

/* Racy entries, unknown stamps: left out. A path given twice: the last. */
static void test_left_out(void **state)
{
    outrec_builder b;
    outrec_builder_init(&b);
    outrec_digest d, d2;
    outrec_digest_of("x", 1, &d);
    outrec_digest_of("y", 1, &d2);
    outrec_stamp recent = S_old(&b, 1, 1);
    recent.ctime_ns = b.since_ns - 50000000; /* 50 ms before the start */
    outrec_stamp later = S_old(&b, 1, 2);
    later.mtime_ns = b.since_ns + 1000;
    /* whole seconds: a coarse file system, two seconds of margin */
    int64_t sec = (b.since_ns / 1000000000) * 1000000000;
    outrec_stamp coarse_near = {1, 3, sec - 1000000000ll, sec - 1000000000ll};
    outrec_stamp coarse_far = {1, 4, sec - 5000000000ll, sec - 5000000000ll};
    outrec_stamp unknown = {1, 0, 0, 0};
    outrec_stamp first = S_old(&b, 1, 6), last = S_old(&b, 1, 7);
    outrec_add(&b, "recent", &recent, &d);
    outrec_add(&b, "later", &later, &d);
    outrec_add(&b, "coarse-near", &coarse_near, &d);
    outrec_add(&b, "coarse-far", &coarse_far, &d);
    outrec_add(&b, "unknown", &unknown, &d);
    outrec_add(&b, "twice", &first, &d);
    outrec_add(&b, "twice", &last, &d2);
    char *path = S_path(state, "t.files");
    assert_int_equal(outrec_save(&b, path), 0);
    outrec_builder_free(&b);
    outrec t;
    assert_int_equal(outrec_load(&t, path), 2);
    struct stat st = S_stat_of(&coarse_far);
    assert_true(outrec_holds(&t, "coarse-far", &st, &d));
    st = S_stat_of(&recent);
    assert_false(outrec_holds(&t, "recent", &st, &d));
    st = S_stat_of(&last);
    assert_true(outrec_holds(&t, "twice", &st, &d2));
    st = S_stat_of(&first);
    assert_false(outrec_holds(&t, "twice", &st, &d));
    outrec_free(&t);
    free(path);
}

/* A real file: held while untouched, not once it is written again, even
 * with the same size and its mtime put back. */
static void test_real_file(void **state)
{
    char *path = S_path(state, "page.html"), *table = S_path(state, "t.files");
    assert_int_equal(fs_write_file(path, "<p>one</p>", 10), 0);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    outrec_builder b;
    outrec_builder_init(&b);
    b.since_ns += 1000000000; /* as if the table were made a second later */
    outrec_digest d;
    outrec_digest_of("<p>one</p>", 10, &d);
    outrec_stamp s = outrec_stamp_of(&st);
    outrec_add(&b, "page.html", &s, &d);
    assert_int_equal(outrec_save(&b, table), 0);
    outrec_builder_free(&b);
    outrec t;
    assert_int_equal(outrec_load(&t, table), 1);
    struct stat now;
    assert_int_equal(lstat(path, &now), 0);
    assert_true(outrec_holds(&t, "page.html", &now, &d));
    struct timespec pause = {0, 20000000}; /* past the clock's tick */
    nanosleep(&pause, NULL);
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "<p>two</p>", 10), 10);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    assert_int_equal(futimens(fd, times), 0);
    close(fd);
    assert_int_equal(lstat(path, &now), 0);
    assert_int_equal(now.st_mtim.tv_nsec, st.st_mtim.tv_nsec);
    assert_false(outrec_holds(&t, "page.html", &now, &d));
    outrec_free(&t);
    free(table);
    free(path);
}

/* A saved table of two entries, its bytes in out. */
static void S_saved(void **state, buf *out)
{
    outrec_builder b;
    outrec_builder_init(&b);
    outrec_digest d;
    outrec_digest_of("x", 1, &d);
    outrec_stamp s1 = S_old(&b, 1, 1), s2 = S_old(&b, 1, 2);
    outrec_add(&b, "aa", &s1, &d);
    outrec_add(&b, "bb", &s2, &d);
    char *path = S_path(state, "good.files");
    assert_int_equal(outrec_save(&b, path), 0);
    outrec_builder_free(&b);
    buf_init(out);
    assert_int_equal(fs_read_file(path, 1 << 20, out), FS_OK);
    free(path);
}

/* Writes bytes as a table (its sum made right again when resum) and
 * returns how many entries it loads with. */
static size_t S_load_bytes(void **state, buf *bytes, bool resum)
{
    if (resum) {
        uint64_t sum = stamp_bytes(SEALED_SUM_SEED, bytes->ptr, bytes->len - 8);
        memcpy(bytes->ptr + bytes->len - 8, &sum, sizeof sum);
    }
    char *path = S_path(state, "bad.files");
    assert_int_equal(fs_write_file(path, bytes->ptr, bytes->len), 0);
    outrec t;
    size_t n = outrec_load(&t, path);
    assert_int_equal(t.count, n);
    if (n == 0)
        assert_null(t.file.data);
    outrec_free(&t);
    free(path);
    return n;
}

/* Offsets in the file (outrec.c): the magic (16), the count and the pool's
 * size (u32 each), then the entries: path offset, path length (u32 each),
 * the stamp (32) and the digest (32). */
#define COUNT_AT 16
#define POOL_LEN_AT 20
#define ENTRY_AT(i) (24 + (i) * 72)

static void test_malformed(void **state)
{
    buf good;
    S_saved(state, &good);
    assert_int_equal(S_load_bytes(state, &good, false), 2);
    char *missing = S_path(state, "none.files");
    outrec t;
    assert_int_equal(outrec_load(&t, missing), 0);
    outrec_free(&t);
    free(missing);
    struct {
        size_t at;
        uint32_t value; /* written as a u32 at `at`, or the byte flipped when UINT32_MAX */
        bool resum;
    } cases[] = {
        {ENTRY_AT(0) + 20, UINT32_MAX, false},  /* a stamp's byte: the sum says no */
        {3, UINT32_MAX, true},                  /* the magic */
        {COUNT_AT, 3, true},                    /* more entries than the bytes hold */
        {COUNT_AT, 1, true},                    /* fewer */
        {POOL_LEN_AT, 1000, true},              /* a pool larger than what follows */
        {ENTRY_AT(1), 0, true},                 /* both entries at "aa": not in order */
        {ENTRY_AT(1), 4000000000u, true},       /* a path past the pool */
        {ENTRY_AT(1) + 4, 1, true},             /* "b" then no NUL where it should end */
        {ENTRY_AT(1) + 4, 3, true},             /* "bb" and a byte past the pool */
        {ENTRY_AT(0) + 4, 5, true},             /* "aa\0bb": a NUL inside the path */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        buf bad = BUF_INIT;
        buf_put(&bad, good.ptr, good.len);
        if (cases[i].value == UINT32_MAX)
            bad.ptr[cases[i].at] ^= 0x40;
        else
            memcpy(bad.ptr + cases[i].at, &cases[i].value, 4);
        if (S_load_bytes(state, &bad, cases[i].resum) != 0)
            fail_msg("case %zu loaded", i);
        buf_free(&bad);
    }
    /* cut short anywhere */
    for (size_t len = 0; len < good.len; len += 7) {
        buf bad = BUF_INIT;
        buf_put(&bad, good.ptr, len);
        char *path = S_path(state, "short.files");
        assert_int_equal(fs_write_file(path, bad.ptr, bad.len), 0);
        assert_int_equal(outrec_load(&t, path), 0);
        outrec_free(&t);
        free(path);
        buf_free(&bad);
    }
    buf_free(&good);
}

/* A table of several chunks (outrec_save writes 64 KiB at a time, its sum
 * along): loads whole, every entry found; room made for fewer entries than
 * are added grows as before. */
static void test_large_table(void **state)
{
    outrec_builder b;
    outrec_builder_init(&b);
    outrec_builder_reserve(&b, 1000, 10);
    assert_true(b.cap >= 1000 && b.bytes.cap > 1000 * sizeof(outrec_stamp));
    char rel[64];
    outrec_digest d;
    for (int i = 0; i < 3000; i++) {
        snprintf(rel, sizeof rel, "posts/p%05d/index.html", (i * 7919) % 3000);
        outrec_digest_of(rel, strlen(rel), &d);
        outrec_stamp s = S_old(&b, (uint64_t)i, (uint64_t)i + 1);
        outrec_add(&b, rel, &s, &d);
    }
    char *path = S_path(state, "large.files");
    int64_t since = b.since_ns;
    assert_int_equal(outrec_save(&b, path), 0);
    outrec_builder_free(&b);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 3 * 65536);
    outrec t;
    assert_int_equal(outrec_load(&t, path), 3000);
    outrec_builder_init(&b);
    b.since_ns = since; /* S_old's times again */
    for (int i = 0; i < 3000; i += 37) {
        snprintf(rel, sizeof rel, "posts/p%05d/index.html", (i * 7919) % 3000);
        outrec_digest_of(rel, strlen(rel), &d);
        outrec_stamp s = S_old(&b, (uint64_t)i, (uint64_t)i + 1);
        struct stat want = S_stat_of(&s);
        assert_true(outrec_holds(&t, rel, &want, &d));
    }
    outrec_builder_free(&b);
    outrec_free(&t);
    free(path);
}

/* An empty table is a table; the lookups of an empty one find nothing. */
static void test_empty(void **state)
{
    outrec_builder b;
    outrec_builder_init(&b);
    char *path = S_path(state, "empty.files");
    assert_int_equal(outrec_save(&b, path), 0);
    outrec_builder_free(&b);
    outrec t;
    assert_int_equal(outrec_load(&t, path), 0);
    assert_non_null(t.file.data);
    struct stat st;
    memset(&st, 0, sizeof st);
    outrec_digest d;
    outrec_digest_of("", 0, &d);
    assert_false(outrec_holds(&t, "x", &st, &d));
    outrec_free(&t);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_left_out, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_real_file, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_malformed, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_large_table, S_setup, S_teardown),
        cmocka_unit_test_setup_teardown(test_empty, S_setup, S_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
