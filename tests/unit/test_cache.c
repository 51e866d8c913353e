/* Unit tests for gen/cache.c: what one build saves comes back to the next
 * byte for byte, and a cache file that is missing, too large, cut short,
 * padded or corrupt is refused as a whole (an empty cache, no leak, no read
 * past the file), so that a damaged cache only costs a full build. */
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
#include "cache.h"
#include "record.h"
#include "fsutil.h"

/* ---- fixtures ------------------------------------------------------------- */

typedef struct {
    char *dir;  /* a fresh temporary folder */
    char *path; /* dir/c.cache */
} fixture;

static int S_setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = strdup("/tmp/kvsite-test-cache-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    f->path = malloc(strlen(f->dir) + 16);
    sprintf(f->path, "%s/c.cache", f->dir);
    *state = f;
    return 0;
}

static int S_teardown(void **state)
{
    fixture *f = *state;
    fs_remove_tree(f->dir);
    free(f->dir);
    free(f->path);
    free(f);
    return 0;
}

static void S_put(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* The whole file, read with plain stdio, into out. */
static void S_slurp(const char *path, buf *out)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char chunk[4096];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_put(out, chunk, r);
    fclose(f);
}

/* The number of entries in dir (to see that no temporary file is left). */
static int S_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

/* cache_encoders.record for a loaded cache: its own record, from its file. */
static void S_record_from_cache(void *ctx, size_t job, buf *out)
{
    buf rec = BUF_INIT;
    assert_int_equal(cache_record(ctx, job, &rec), 0);
    buf_put(out, rec.ptr, rec.len);
    buf_free(&rec);
}

/* A refused load leaves nothing behind. */
static void S_assert_empty(const cache *c)
{
    assert_int_equal(c->fd, -1);
    assert_null(c->tail.ptr);
    assert_true(c->global == 0);
    assert_int_equal(c->njobs, 0);
    assert_null(c->jobs);
    assert_null(c->outputs);
    assert_int_equal(c->outputs_len, 0);
}

/* Loads path, which must be refused. */
static void S_refused(const char *path, size_t max, const char *what)
{
    cache c;
    memset(&c, 0x5A, sizeof c); /* cache_load must not rely on an initialized c */
    if (cache_load(&c, path, max) != -1)
        fail_msg("%s: accepted", what);
    S_assert_empty(&c);
    cache_free(&c);
}

/* Writes bytes to the fixture's path and loads it, which must be refused. */
static void S_refused_bytes(fixture *f, const void *data, size_t len, const char *what)
{
    S_put(f->path, data, len);
    S_refused(f->path, 1 << 20, what);
}

/* ---- a cache to save ------------------------------------------------------ */

/* An encoded record with nids ids of idlen bytes each (sizes vary with both). */
static void S_record_bytes(buf *out, uint32_t job, size_t nids, size_t idlen)
{
    page_record r;
    record_init(&r);
    r.job = job;
    r.done = 1;
    r.url = xasprintf("/p/%u/", job);
    r.nids = nids;
    r.ids = xcalloc(nids + 1, sizeof *r.ids);
    for (size_t i = 0; i < nids; i++) {
        r.ids[i] = xmalloc(idlen + 1);
        memset(r.ids[i], 'a' + (int)(i % 26), idlen);
        r.ids[i][idlen] = '\0';
    }
    record_encode(&r, NULL, out);
    record_free(&r);
}

enum { NJOBS = 6 };

typedef struct {
    cache c;
    buf recs[NJOBS];
} saved;

static const char S_outputs[] = "a/index.html\0b/c/index.html\0feed.xml";

/* Jobs 0, 2, 3 and 5 present with records of 0 bytes to some 200 KiB; 1 and 4
 * absent. Fingerprints include 0 and all ones. */
static void S_make(saved *s)
{
    cache_init(&s->c);
    s->c.global = 0x0123456789ABCDEFull;
    s->c.njobs = NJOBS;
    s->c.jobs = xcalloc(NJOBS, sizeof *s->c.jobs);
    static const size_t nids[NJOBS] = {0, 0, 3, 4000, 0, 1};
    static const size_t idlen[NJOBS] = {0, 0, 5, 50, 0, 0};
    for (size_t j = 0; j < NJOBS; j++) {
        buf_init(&s->recs[j]);
        cache_entry *e = &s->c.jobs[j];
        if (j == 1 || j == 4)
            continue;
        e->present = true;
        e->deps = j == 0 ? 0 : 1000 + j;
        e->out_stamp = j == 0 ? UINT64_MAX : 2000 + j;
        e->stage_stamp = j == 2 ? 0 : 5000 + j; /* 0: not known */
        e->digest = 3000 + j;
        e->reads = j == 3 ? UINT64_MAX : 4000 + j;
        if (j != 0) /* job 0: a present entry with an empty record */
            S_record_bytes(&s->recs[j], (uint32_t)j, nids[j], idlen[j]);
        e->rec = s->recs[j].ptr;
        e->rec_len = s->recs[j].len;
    }
    s->c.outputs = S_outputs;
    s->c.outputs_len = sizeof S_outputs; /* the last name's NUL included */
}

static void S_unmake(saved *s)
{
    free(s->c.jobs);
    for (size_t j = 0; j < NJOBS; j++)
        buf_free(&s->recs[j]);
}

/* ---- round trips ---------------------------------------------------------- */

static void test_round_trip(void **state)
{
    fixture *f = *state;
    saved s;
    S_make(&s);
    assert_int_equal(cache_save(&s.c, f->path, NULL), 0);
    assert_int_equal(S_count_entries(f->dir), 1); /* no temporary file left */

    cache c;
    assert_int_equal(cache_load(&c, f->path, 1 << 20), 0);
    assert_true(c.global == s.c.global);
    assert_int_equal(c.njobs, NJOBS);
    for (size_t j = 0; j < NJOBS; j++) {
        const cache_entry *a = &s.c.jobs[j], *b = &c.jobs[j];
        assert_int_equal(b->present, a->present);
        if (!a->present) {
            assert_true(b->deps == 0 && b->out_stamp == 0 && b->stage_stamp == 0 &&
                        b->digest == 0 && b->reads == 0);
            assert_null(b->rec);
            assert_int_equal(b->rec_len, 0);
            continue;
        }
        assert_true(b->deps == a->deps);
        assert_true(b->out_stamp == a->out_stamp);
        assert_true(b->stage_stamp == a->stage_stamp);
        assert_true(b->digest == a->digest);
        assert_true(b->reads == a->reads);
        assert_int_equal(b->rec_len, a->rec_len);
        /* the record stays in the file until it is asked for */
        assert_null(b->rec);
        buf rec = BUF_INIT;
        assert_int_equal(cache_record(&c, j, &rec), 0);
        assert_int_equal(rec.len, a->rec_len);
        if (a->rec_len)
            assert_memory_equal(rec.ptr, a->rec, a->rec_len);
        if (j != 0) {
            page_record r;
            assert_int_equal(record_decode(rec.ptr, rec.len, NULL, &r), 0);
            assert_int_equal(r.job, j);
            record_free(&r);
        }
        buf_free(&rec);
    }
    assert_true(s.c.jobs[3].rec_len > 200000); /* the big one */
    assert_int_equal(c.outputs_len, sizeof S_outputs);
    assert_memory_equal(c.outputs, S_outputs, sizeof S_outputs);

    /* an absent job, or one past the end, has no record */
    buf none = BUF_INIT;
    assert_int_equal(cache_record(&c, c.njobs, &none), -1);
    for (size_t j = 0; j < c.njobs; j++)
        if (!c.jobs[j].present)
            assert_int_equal(cache_record(&c, j, &none), -1);
    buf_free(&none);

    /* saving what was loaded, its records read from the file, gives the same
     * bytes; the file it was loaded from is replaced, not written over */
    buf a = BUF_INIT, b = BUF_INIT;
    S_slurp(f->path, &a);
    char *again = malloc(strlen(f->path) + 3);
    sprintf(again, "%s.2", f->path);
    cache_encoders enc = {.record = S_record_from_cache, .ctx = &c};
    assert_int_equal(cache_save(&c, again, &enc), 0);
    S_slurp(again, &b);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.ptr, b.ptr, a.len);
    free(again);
    buf_free(&a);
    buf_free(&b);

    cache_free(&c);
    S_assert_empty(&c);
    cache_free(&c); /* twice is harmless */
    S_unmake(&s);
}

static void test_round_trip_empty(void **state)
{
    fixture *f = *state;
    /* no jobs, no outputs (NULL) */
    cache e;
    cache_init(&e);
    S_assert_empty(&e);
    assert_int_equal(cache_save(&e, f->path, NULL), 0);
    cache c;
    assert_int_equal(cache_load(&c, f->path, 1 << 20), 0);
    assert_true(c.global == 0);
    assert_int_equal(c.njobs, 0);
    assert_int_equal(c.outputs_len, 0);
    cache_free(&c);

    /* absent jobs only, an empty outputs list, all-ones global */
    e.global = UINT64_MAX;
    e.njobs = 3;
    e.jobs = xcalloc(3, sizeof *e.jobs);
    e.outputs = "";
    e.outputs_len = 0;
    assert_int_equal(cache_save(&e, f->path, NULL), 0); /* replaces the first file */
    assert_int_equal(cache_load(&c, f->path, 1 << 20), 0);
    assert_true(c.global == UINT64_MAX);
    assert_int_equal(c.njobs, 3);
    for (size_t j = 0; j < 3; j++)
        assert_false(c.jobs[j].present);
    assert_int_equal(c.outputs_len, 0);
    cache_free(&c);

    /* one output name, one byte long */
    e.outputs = "x";
    e.outputs_len = 2;
    assert_int_equal(cache_save(&e, f->path, NULL), 0);
    assert_int_equal(cache_load(&c, f->path, 1 << 20), 0);
    assert_int_equal(c.outputs_len, 2);
    assert_string_equal(c.outputs, "x");
    cache_free(&c);
    free(e.jobs);
}

/* The record checksums a save reports are those the loaded file carries,
 * and cache_loaded_from tells a loaded cache from one whose file changed
 * since (serve keeps the loaded cache for its next build). */
typedef struct {
    uint64_t sums[NJOBS];
    bool told[NJOBS];
} told_sums;

static void S_tell_sum(void *ctx, size_t job, uint64_t sum)
{
    told_sums *t = ctx;
    assert_true(job < NJOBS);
    t->sums[job] = sum;
    t->told[job] = true;
}

static void test_sums_and_loaded_from(void **state)
{
    fixture *f = *state;
    saved s;
    S_make(&s);
    told_sums t = {{0}, {false}};
    cache_encoders enc = {.record_sum = S_tell_sum, .ctx = &t};
    assert_int_equal(cache_save(&s.c, f->path, &enc), 0);
    cache c;
    assert_int_equal(cache_load(&c, f->path, 1 << 24), 0);
    for (size_t j = 0; j < NJOBS; j++) {
        assert_int_equal(t.told[j], c.jobs[j].present);
        if (c.jobs[j].present)
            assert_true(t.sums[j] == c.jobs[j].rec_sum);
    }
    assert_true(cache_loaded_from(&c, f->path));
    /* written over in place (as the next build saves it): not the same */
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    assert_int_equal(cache_save(&s.c, f->path, NULL), 0);
    assert_false(cache_loaded_from(&c, f->path));
    cache_free(&c);
    assert_int_equal(cache_load(&c, f->path, 1 << 24), 0);
    assert_true(cache_loaded_from(&c, f->path));
    unlink(f->path);
    assert_false(cache_loaded_from(&c, f->path));
    cache_free(&c);
    cache empty;
    cache_init(&empty);
    assert_false(cache_loaded_from(&empty, f->path));
    S_unmake(&s);
}

static void test_save_errors(void **state)
{
    fixture *f = *state;
    saved s;
    S_make(&s);
    char *p = malloc(strlen(f->dir) + 32);
    sprintf(p, "%s/no/such/dir/c.cache", f->dir);
    errno = 0;
    assert_int_equal(cache_save(&s.c, p, NULL), -1);
    assert_int_equal(errno, ENOENT);

    /* a folder where the file goes: refused, and the temporary file removed */
    sprintf(p, "%s/adir", f->dir);
    assert_int_equal(mkdir(p, 0755), 0);
    char *inner = malloc(strlen(p) + 8);
    sprintf(inner, "%s/keep", p);
    S_put(inner, "k", 1);
    assert_int_equal(cache_save(&s.c, p, NULL), -1);
    assert_int_equal(S_count_entries(f->dir), 1);
    assert_int_equal(access(inner, F_OK), 0);
    free(inner);

    /* a FIFO or a link where the file goes: replaced by the cache, the open
     * not waiting for a reader */
    const char *others[] = {"fifo", "link"};
    for (size_t k = 0; k < 2; k++) {
        sprintf(p, "%s/%s", f->dir, others[k]);
        if (k == 0)
            assert_int_equal(mkfifo(p, 0644), 0);
        else
            assert_int_equal(symlink("/etc/passwd", p), 0);
        assert_int_equal(cache_save(&s.c, p, NULL), 0);
        struct stat st;
        assert_int_equal(lstat(p, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        cache c;
        assert_int_equal(cache_load(&c, p, 1 << 20), 0);
        cache_free(&c);
        unlink(p);
    }
    free(p);
    S_unmake(&s);
}

/* ---- refusals ------------------------------------------------------------- */

/* The bytes of a small saved cache: one present job with a small record, one
 * absent, two output names. */
static void S_small_bytes(fixture *f, buf *out)
{
    cache c;
    cache_init(&c);
    c.global = 42;
    c.njobs = 2;
    c.jobs = xcalloc(2, sizeof *c.jobs);
    buf rec = BUF_INIT;
    S_record_bytes(&rec, 0, 1, 3);
    c.jobs[0] = (cache_entry){.present = true, .deps = 1, .out_stamp = 2, .stage_stamp = 5,
                              .digest = 3, .reads = 4, .rec = rec.ptr, .rec_len = rec.len};
    c.outputs = "a.html\0b.html";
    c.outputs_len = 14;
    assert_int_equal(cache_save(&c, f->path, NULL), 0);
    free(c.jobs);
    buf_free(&rec);
    S_slurp(f->path, out);
}

/* Offsets into the bytes above. */
enum {
    OFF_MAGIC = 0,
    OFF_NJOBS = 16 + 8,
    OFF_PRESENT0 = OFF_NJOBS + 4,
    OFF_REC_LEN0 = OFF_PRESENT0 + 4 + 6 * 8, /* five fingerprints and the record's sum */
    OFF_REC0 = OFF_REC_LEN0 + 4,
};

static void S_set_u32(buf *b, size_t off, uint32_t v) { memcpy(b->ptr + off, &v, 4); }

static uint32_t S_get_u32(const buf *b, size_t off)
{
    uint32_t v;
    memcpy(&v, b->ptr + off, 4);
    return v;
}

/* The bytes with the u32 at off set to v, which must be refused. */
static void S_refused_with(fixture *f, const buf *good, size_t off, uint32_t v, const char *what)
{
    buf b = BUF_INIT;
    buf_put(&b, good->ptr, good->len);
    S_set_u32(&b, off, v);
    S_refused_bytes(f, b.ptr, b.len, what);
    buf_free(&b);
}

static void test_small_layout(void **state)
{
    fixture *f = *state;
    buf good = BUF_INIT;
    S_small_bytes(f, &good);
    /* the offsets above describe these bytes */
    assert_memory_equal(good.ptr, "kvsite-cache 8\n", 16);
    assert_int_equal(S_get_u32(&good, OFF_NJOBS), 2);
    assert_int_equal(S_get_u32(&good, OFF_PRESENT0), 1);
    uint32_t rec_len = S_get_u32(&good, OFF_REC_LEN0);
    size_t off_absent = OFF_REC0 + rec_len;
    assert_int_equal(S_get_u32(&good, off_absent), 0);
    assert_int_equal(S_get_u32(&good, off_absent + 4), 14);
    /* then front_key, no fronts, the file's sum */
    assert_int_equal(good.len, off_absent + 4 + 4 + 14 + 8 + 4 + 8);
    cache c;
    assert_int_equal(cache_load(&c, f->path, good.len), 0); /* exactly the cap is fine */
    cache_free(&c);
    buf_free(&good);
}

static void test_missing_and_not_a_file(void **state)
{
    fixture *f = *state;
    S_refused(f->path, 1 << 20, "missing");
    S_refused(f->dir, 1 << 20, "a folder");
    S_refused_bytes(f, "", 0, "empty file");
}

static void test_wrong_magic(void **state)
{
    fixture *f = *state;
    buf good = BUF_INIT;
    S_small_bytes(f, &good);
    for (size_t i = 0; i < 16; i++) {
        buf b = BUF_INIT;
        buf_put(&b, good.ptr, good.len);
        b.ptr[i] ^= 0x01; /* "kvsite-cache 0\n" too: another version is refused */
        S_refused_bytes(f, b.ptr, b.len, "a magic byte changed");
        buf_free(&b);
    }
    /* the magic alone */
    S_refused_bytes(f, good.ptr, 16, "the magic alone");
    /* another file type */
    S_refused_bytes(f, "<!doctype html>\n<html></html>\n", 30, "an HTML file");
    buf_free(&good);
}

static void test_every_prefix_refused(void **state)
{
    fixture *f = *state;
    buf good = BUF_INIT;
    S_small_bytes(f, &good);
    for (size_t n = 0; n < good.len; n++) {
        char what[64];
        snprintf(what, sizeof what, "a prefix of %zu of %zu bytes", n, good.len);
        S_refused_bytes(f, good.ptr, n, what);
    }
    buf_free(&good);
}

static void test_trailing_garbage_refused(void **state)
{
    fixture *f = *state;
    buf good = BUF_INIT;
    S_small_bytes(f, &good);
    static const char *const tails[] = {"\0", "x", "\0\0\0\0", "kvsite-cache 3\n"};
    static const size_t lens[] = {1, 1, 4, 16};
    for (size_t k = 0; k < 4; k++) {
        buf b = BUF_INIT;
        buf_put(&b, good.ptr, good.len);
        buf_put(&b, tails[k], lens[k]);
        S_refused_bytes(f, b.ptr, b.len, "trailing bytes");
        buf_free(&b);
    }
    /* two caches back to back */
    buf b = BUF_INIT;
    buf_put(&b, good.ptr, good.len);
    buf_put(&b, good.ptr, good.len);
    S_refused_bytes(f, b.ptr, b.len, "two caches");
    buf_free(&b);
    buf_free(&good);
}

static void test_counts_and_lengths_refused(void **state)
{
    fixture *f = *state;
    buf good = BUF_INIT;
    S_small_bytes(f, &good);
    uint32_t rec_len = S_get_u32(&good, OFF_REC_LEN0);
    size_t off_outputs_len = OFF_REC0 + rec_len + 4;
    uint32_t left_after_count = (uint32_t)(good.len - OFF_PRESENT0);

    /* job counts that the file cannot hold: refused without allocating them */
    S_refused_with(f, &good, OFF_NJOBS, 0xFFFFFFFFu, "job count 2^32-1");
    S_refused_with(f, &good, OFF_NJOBS, 0x40000000u, "job count 2^30");
    S_refused_with(f, &good, OFF_NJOBS, left_after_count / 4 + 1, "job count just too big");
    S_refused_with(f, &good, OFF_NJOBS, 3, "one job more");
    S_refused_with(f, &good, OFF_NJOBS, 1, "one job less");
    S_refused_with(f, &good, OFF_NJOBS, 0, "no jobs");

    /* a record length pointing past the end, or short of the next field */
    S_refused_with(f, &good, OFF_REC_LEN0, 0xFFFFFFFFu, "record length 2^32-1");
    S_refused_with(f, &good, OFF_REC_LEN0, (uint32_t)(good.len - OFF_REC0 + 1),
                   "record length one past the end");
    S_refused_with(f, &good, OFF_REC_LEN0, (uint32_t)(good.len - OFF_REC0),
                   "record length up to the end");
    S_refused_with(f, &good, OFF_REC_LEN0, rec_len + 1, "record length one more");
    S_refused_with(f, &good, OFF_REC_LEN0, rec_len - 1, "record length one less");

    /* the outputs list */
    S_refused_with(f, &good, off_outputs_len, 0xFFFFFFFFu, "outputs length 2^32-1");
    S_refused_with(f, &good, off_outputs_len, 15, "outputs length one past the end");
    S_refused_with(f, &good, off_outputs_len, 13, "outputs not ending in NUL");
    S_refused_with(f, &good, off_outputs_len, 0, "outputs length 0 with bytes after");
    buf_free(&good);
}

static void test_outputs_without_final_nul(void **state)
{
    fixture *f = *state;
    cache c;
    cache_init(&c);
    c.outputs = "a.html\0b.html";
    c.outputs_len = 13; /* the last name's NUL left out */
    assert_int_equal(cache_save(&c, f->path, NULL), 0); /* saving does not check */
    S_refused(f->path, 1 << 20, "outputs without final NUL");
    c.outputs = "x";
    c.outputs_len = 1;
    assert_int_equal(cache_save(&c, f->path, NULL), 0);
    S_refused(f->path, 1 << 20, "a one-byte name without NUL");
}

static void test_max_bytes(void **state)
{
    fixture *f = *state;
    buf good = BUF_INIT;
    S_small_bytes(f, &good);
    S_refused(f->path, good.len - 1, "one byte over the cap");
    S_refused(f->path, 16, "the size of the magic");
    S_refused(f->path, 0, "cap 0");
    cache c;
    assert_int_equal(cache_load(&c, f->path, good.len), 0);
    cache_free(&c);
    buf_free(&good);
}

/* Every byte flipped in turn: load may accept or refuse, but never reads past
 * the file or leaks (the sanitizer run checks), and what it accepts stays
 * inside the file's bytes. */
static void test_bit_flips_never_crash(void **state)
{
    fixture *f = *state;
    buf good = BUF_INIT;
    S_small_bytes(f, &good);
    size_t accepted = 0;
    for (size_t i = 0; i < good.len; i++) {
        buf b = BUF_INIT;
        buf_put(&b, good.ptr, good.len);
        b.ptr[i] ^= (char)0xA5;
        S_put(f->path, b.ptr, b.len);
        cache c;
        if (cache_load(&c, f->path, 1 << 20) == 0) {
            accepted++;
            for (size_t j = 0; j < c.njobs; j++)
                if (c.jobs[j].present)
                    assert_true(c.jobs[j].rec_off + c.jobs[j].rec_len <= b.len);
            assert_true(c.outputs >= c.tail.ptr &&
                        c.outputs + c.outputs_len <= c.tail.ptr + c.tail.len);
            cache_free(&c);
        } else {
            S_assert_empty(&c);
        }
        buf_free(&b);
    }
    assert_true(accepted < good.len);
    buf_free(&good);
}

/* A damaged cache never lies (issue 14): whatever byte is changed, either the
 * file loads as no cache, or it loads and the one record holding the byte
 * fails its checksum; every other record reads back exactly as saved. */
static void test_no_flip_goes_unnoticed(void **state)
{
    fixture *f = *state;
    buf good = BUF_INIT;
    S_small_bytes(f, &good);
    cache orig;
    assert_int_equal(cache_load(&orig, f->path, 1 << 20), 0);
    buf want = BUF_INIT, got = BUF_INIT;
    for (size_t i = 0; i < good.len; i++) {
        buf b = BUF_INIT;
        buf_put(&b, good.ptr, good.len);
        b.ptr[i] ^= (char)0x01;
        S_put(f->path, b.ptr, b.len);
        cache c;
        if (cache_load(&c, f->path, 1 << 20) != 0) {
            buf_free(&b);
            continue;
        }
        size_t bad = 0;
        for (size_t j = 0; j < c.njobs; j++) {
            if (!c.jobs[j].present)
                continue;
            const cache_entry *e = &c.jobs[j];
            bool hit = i >= e->rec_off && i < e->rec_off + e->rec_len;
            if (cache_record(&c, j, &got) != 0) {
                assert_true(hit);
                assert_int_equal(errno, EILSEQ);
                bad++;
                continue;
            }
            assert_false(hit);
            /* the original, read from the good bytes */
            S_put(f->path, good.ptr, good.len);
            assert_int_equal(cache_record(&orig, j, &want), 0);
            assert_int_equal(got.len, want.len);
            assert_memory_equal(got.ptr, want.ptr, got.len);
            S_put(f->path, b.ptr, b.len);
        }
        assert_int_equal(bad, 1); /* it loaded: the flip was inside a record */
        cache_free(&c);
        buf_free(&b);
    }
    cache_free(&orig);
    buf_free(&want);
    buf_free(&got);
    buf_free(&good);
}

#define T(f) cmocka_unit_test_setup_teardown(f, S_setup, S_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_round_trip),
        T(test_round_trip_empty),
        T(test_sums_and_loaded_from),
        T(test_save_errors),
        T(test_small_layout),
        T(test_missing_and_not_a_file),
        T(test_wrong_magic),
        T(test_every_prefix_refused),
        T(test_trailing_garbage_refused),
        T(test_counts_and_lengths_refused),
        T(test_outputs_without_final_nul),
        T(test_max_bytes),
        T(test_bit_flips_never_crash),
        T(test_no_flip_goes_unnoticed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
