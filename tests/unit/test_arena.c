/* Unit tests for gen/arena.c: the bump allocator behind each page's cmark
 * tree. Blocks, in-place growth of the last block, rewinding, reuse of chunks
 * across resets, oversized blocks, the keep and cap limits, the
 * out-of-memory policy, the AddressSanitizer poisoning when built with it;
 * and md_render reusing one md_ctx's arena page after page, large pages'
 * chunks included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "arena.h"
#include "buf.h"
#include "asan.h"
#include "markdown.h"

#ifdef KV_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

static arena_stats S_stats(const arena *a)
{
    arena_stats s;
    arena_get_stats(a, &s);
    return s;
}

static void test_blocks_are_aligned_and_distinct(void **state)
{
    (void)state;
    arena *a = arena_new(64 * KIB, MIB, 64 * MIB);
    char *prev = NULL;
    for (size_t n = 0; n < 300; n++) {
        char *p = arena_alloc(a, n);
        assert_non_null(p);
        assert_int_equal((uintptr_t)p % 16, 0);
        assert_true(p != prev);
        memset(p, 0xab, n);
        prev = p;
    }
    arena_free(a);
    arena_free(NULL);
}

static void test_calloc_zeroes_reused_memory(void **state)
{
    (void)state;
    arena *a = arena_new(64 * KIB, MIB, 64 * MIB);
    unsigned char *p = arena_alloc(a, 1000);
    memset(p, 0xff, 1000);
    arena_reset(a);
    unsigned char *q = arena_calloc(a, 10, 100);
    assert_ptr_equal(p, q); /* the same memory, rewound */
    for (size_t i = 0; i < 1000; i++)
        assert_int_equal(q[i], 0);
    arena_free(a);
}

static void test_realloc_last_grows_in_place(void **state)
{
    (void)state;
    arena *a = arena_new(64 * KIB, MIB, 64 * MIB);
    char *p = arena_realloc(a, NULL, 8);
    memcpy(p, "abcdefg", 8);
    for (size_t n = 16; n <= 8 * KIB; n = n * 3 / 2) {
        char *q = arena_realloc(a, p, n);
        assert_ptr_equal(q, p);
        assert_string_equal(q, "abcdefg");
    }
    /* shrinking stays in place too */
    assert_ptr_equal(arena_realloc(a, p, 8), p);
    assert_string_equal(p, "abcdefg");
    arena_free(a);
}

static void test_realloc_other_copies(void **state)
{
    (void)state;
    arena *a = arena_new(64 * KIB, MIB, 64 * MIB);
    char *p = arena_alloc(a, 6);
    memcpy(p, "hello", 6);
    char *other = arena_alloc(a, 32); /* p is no longer the last block */
    char *q = arena_realloc(a, p, 100);
    assert_true(q != p);
    assert_string_equal(q, "hello");
    assert_true(q > other);
    /* a smaller size keeps the block where it is */
    char *r = arena_alloc(a, 40);
    memcpy(r, "kept", 5);
    arena_alloc(a, 1);
    assert_ptr_equal(arena_realloc(a, r, 10), r);
    assert_string_equal(r, "kept");
    arena_free(a);
}

static void test_release_rewinds_last(void **state)
{
    (void)state;
    arena *a = arena_new(64 * KIB, MIB, 64 * MIB);
    char *keep = arena_alloc(a, 24);
    char *tmp = arena_alloc(a, 100);
    arena_release(a, tmp);
    /* the room is back, and the block before is last again: it grows in place */
    assert_ptr_equal(arena_realloc(a, keep, 200), keep);
    char *next = arena_alloc(a, 10);
    assert_true(next > keep && next < keep + 300);
    /* releasing a block in the middle gives nothing back */
    char *x = arena_alloc(a, 10);
    arena_release(a, next);
    assert_true((char *)arena_alloc(a, 10) > x);
    arena_release(a, NULL);
    arena_free(a);
}

static void test_reset_reuses_chunks(void **state)
{
    (void)state;
    arena *a = arena_new(64 * KIB, MIB, 64 * MIB);
    char *first = NULL;
    size_t maps = 0;
    for (int round = 0; round < 50; round++) {
        char *p = arena_alloc(a, 100);
        if (round == 0)
            first = p;
        assert_ptr_equal(p, first);
        /* about five chunks' worth of small blocks and a growing buffer */
        char *grow = NULL;
        for (int i = 0; i < 1500; i++) {
            arena_calloc(a, 1, 120);
            if (i % 100 == 0)
                grow = arena_realloc(a, grow, (size_t)(i / 100 + 1) * 800);
        }
        assert_true(S_stats(a).round_bytes > 128 * KIB);
        arena_reset(a);
        if (round == 1)
            maps = S_stats(a).maps;
        if (round > 1)
            assert_int_equal(S_stats(a).maps, maps); /* warm: no new chunk */
    }
    assert_int_equal(S_stats(a).round_bytes, 0);
    arena_free(a);
}

static void test_oversized_own_chunk(void **state)
{
    (void)state;
    arena *a = arena_new(64 * KIB, MIB, 64 * MIB);
    char *small = arena_alloc(a, 16);
    size_t before = S_stats(a).mapped;
    char *big = arena_alloc(a, 1 * MIB);
    memset(big, 1, MIB);
    assert_true(S_stats(a).mapped >= before + MIB);
    /* the current chunk keeps its room: the next small block follows */
    char *small2 = arena_alloc(a, 16);
    assert_true(small2 > small && small2 < small + 256);
    /* the oversized block grows by copying */
    char *bigger = arena_realloc(a, big, 2 * MIB);
    assert_int_equal(bigger[MIB - 1], 1);
    arena_reset(a);
    /* oversized chunks larger than keep go back at once */
    assert_int_equal(S_stats(a).mapped, 64 * KIB);
    arena_free(a);
}

/* Oversized chunks within keep serve the next rounds' large blocks: a page
 * whose HTML grows through the same sizes every time maps nothing once
 * warm (each chunk given back was faulted in again on the next page). */
static void test_oversized_reused(void **state)
{
    (void)state;
    arena *a = arena_new(64 * KIB, 8 * MIB, 64 * MIB);
    size_t maps = 0, mapped = 0;
    for (int round = 0; round < 20; round++) {
        char *grow = NULL;
        for (size_t len = 32 * KIB; len <= MIB; len += len / 2) {
            arena_alloc(a, 100); /* the buffer is not the last block: it moves */
            grow = arena_realloc(a, grow, len);
            memset(grow, round, len);
        }
        assert_int_equal((unsigned char)grow[MIB / 2], round);
        arena_reset(a);
        arena_stats s = S_stats(a);
        assert_int_equal(s.spare, s.chunks);
        assert_true(s.mapped <= 8 * MIB);
        if (round == 0) {
            maps = s.maps;
            mapped = s.mapped;
        } else {
            assert_int_equal(s.maps, maps); /* warm: every chunk came from the spares */
            assert_int_equal(s.mapped, mapped);
        }
    }
    /* a larger block than any kept gets a new chunk; the smaller ones stay */
    char *huge = arena_alloc(a, 4 * MIB);
    memset(huge, 1, 4 * MIB);
    assert_int_equal(S_stats(a).maps, maps + 1);
    arena_free(a);
}

static void test_keep_releases_surplus(void **state)
{
    (void)state;
    arena *a = arena_new(64 * KIB, 256 * KIB, 64 * MIB);
    for (int i = 0; i < 2000; i++)
        arena_alloc(a, 4 * KIB); /* about 8 MiB in regular chunks */
    assert_true(S_stats(a).mapped >= 8 * MIB);
    arena_reset(a);
    arena_stats s = S_stats(a);
    assert_true(s.mapped <= 256 * KIB);
    assert_int_equal(s.spare, s.chunks);
    /* a normal round after the big one runs on the kept chunks */
    size_t maps = s.maps;
    for (int i = 0; i < 30; i++)
        arena_alloc(a, 4 * KIB);
    assert_int_equal(S_stats(a).maps, maps);
    arena_free(a);
}

static void test_cap_falls_back_to_malloc(void **state)
{
    (void)state;
    arena *a = arena_new(64 * KIB, 64 * KIB, 128 * KIB);
    char *blocks[200];
    for (int i = 0; i < 200; i++) {
        blocks[i] = arena_alloc(a, 2 * KIB);
        memset(blocks[i], i, 2 * KIB);
    }
    arena_stats s = S_stats(a);
    assert_true(s.mapped <= 128 * KIB);
    assert_true(s.heap_blocks > 100);
    for (int i = 0; i < 200; i++)
        assert_int_equal((unsigned char)blocks[i][2 * KIB - 1], i);
    /* heap blocks are really freed, grown by realloc, and aligned */
    char *h = blocks[199];
    arena_release(a, h);
    assert_int_equal(S_stats(a).heap_blocks, s.heap_blocks - 1);
    h = blocks[198];
    h = arena_realloc(a, h, 100 * KIB);
    assert_int_equal((uintptr_t)h % 16, 0);
    assert_int_equal((unsigned char)h[2 * KIB - 1], 198);
    assert_int_equal((uintptr_t)arena_calloc(a, 3, 7) % 16, 0);
    /* an oversized request past the cap is a heap block too */
    char *big = arena_alloc(a, MIB);
    memset(big, 0, MIB);
    arena_reset(a); /* frees every heap block (the leak checker would see one left) */
    assert_int_equal(S_stats(a).heap_blocks, 0);
    assert_true(S_stats(a).mapped <= 128 * KIB);
    arena_free(a);
}

static arena *volatile S_child; /* a root for the leak checker when the child exits */

static void test_overflow_exits_70(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        S_child = arena_new(64 * KIB, MIB, 64 * MIB);
        arena_calloc(S_child, SIZE_MAX / 2, 4); /* n * size overflows */
        _exit(0);
    }
    close(fds[1]);
    char out[256] = {0};
    size_t got = 0;
    ssize_t r;
    while (got < sizeof out - 1 && (r = read(fds[0], out + got, sizeof out - 1 - got)) > 0)
        got += (size_t)r;
    close(fds[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 70)
        fail_msg("the child ended with status 0x%x: %s", (unsigned)st, out);
    assert_non_null(strstr(out, "kvsite: out of memory"));
}

static void test_poisoning(void **state)
{
    (void)state;
#ifdef KV_ASAN
    arena *a = arena_new(64 * KIB, MIB, 64 * MIB);
    char *p = arena_alloc(a, 40);
    assert_false(__asan_address_is_poisoned(p));
    assert_false(__asan_address_is_poisoned(p + 39));
    assert_true(__asan_address_is_poisoned(p + 40)); /* the red zone */
    char *q = arena_alloc(a, 40);
    arena_release(a, p);
    assert_true(__asan_address_is_poisoned(p));
    q = arena_realloc(a, q, 1000);
    assert_false(__asan_address_is_poisoned(q + 999));
    assert_true(__asan_address_is_poisoned(q + 1000));
    arena_reset(a);
    assert_true(__asan_address_is_poisoned(q)); /* a use after reset is caught */
    arena_free(a);
#else
    skip();
#endif
}

/* ---- md_render on one md_ctx, page after page ------------------------------ */

static char *S_render(md_ctx *m, const char *text)
{
    md_result res;
    md_result_init(&res);
    diag_list dl;
    diag_list_init(&dl);
    assert_int_equal(md_render(m, NULL, "a.md", text, strlen(text), 1, 1, false, &res, &dl), 0);
    char *html = xstrdup(buf_cstr(&res.html));
    assert_non_null(res.summary); /* copied out before the reset */
    md_result_free(&res);
    diag_list_free(&dl);
    return html;
}

static void test_md_pages_share_the_arena(void **state)
{
    (void)state;
    sources none;
    memset(&none, 0, sizeof none);
    md_opts o = {NULL, NULL, &none, NULL, false, true, true, DIAG_WARNING, false, NULL, false};
    static const char *const pages[] = {
        "# Title\n\nFirst *para* with `code` and a [link](http://x.org).\n\n## Sub\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n- ~~old~~ new\n",
        "中文段落，\n换行之后。\n\n> quote\n> more\n\n```c\nint x;\n```\n",
        "<div>raw</div>\n\n![img](data:image/png;base64,AA) [js](javascript:alert(1))\n",
    };
    char *want[3]; /* each page from a fresh md_ctx */
    for (int i = 0; i < 3; i++) {
        md_ctx *f = md_new(&o);
        want[i] = S_render(f, pages[i]);
        md_free(f);
    }
    md_ctx *m = md_new(&o);
    for (int round = 0; round < 20; round++)
        for (int i = 0; i < 3; i++) {
            char *got = S_render(m, pages[i]);
            assert_string_equal(got, want[i]);
            free(got);
        }
    md_free(m);
    for (int i = 0; i < 3; i++)
        free(want[i]);
}

/* A page with a large table (several MiB of cmark objects and a large HTML
 * buffer) leaves its chunks to the next page: given back, they were faulted
 * in again page after page (200 pages with a 1,500-row table each built in
 * 4 times the time). An ordinary page after it maps nothing either. */
static void test_md_large_pages_keep_their_chunks(void **state)
{
    (void)state;
    sources none;
    memset(&none, 0, sizeof none);
    md_opts o = {NULL, NULL, &none, NULL, false, true, true, DIAG_WARNING, false, NULL, false};
    buf table = BUF_INIT;
    buf_puts(&table, "Rows.\n\n| a | b | c |\n|---|---|---|\n");
    for (int r = 0; r < 1500; r++)
        buf_printf(&table, "| %d | x%d | %d |\n", r, r, r * r);
    md_ctx *m = md_new(&o);
    arena_stats first, again;
    char *want = S_render(m, buf_cstr(&table));
    md_arena_stats(m, &first);
    assert_true(first.mapped > 2 * MIB); /* far more than an ordinary page */
    for (int round = 0; round < 3; round++) {
        char *got = S_render(m, buf_cstr(&table));
        assert_string_equal(got, want);
        free(got);
        md_arena_stats(m, &again);
        assert_int_equal(again.maps, first.maps); /* nothing mapped again */
        assert_int_equal(again.mapped, first.mapped);
    }
    free(S_render(m, "# Title\n\nA paragraph with *emphasis*.\n"));
    md_arena_stats(m, &again);
    assert_int_equal(again.maps, first.maps);
    assert_true(again.mapped <= first.mapped);
    md_free(m);
    free(want);
    buf_free(&table);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocks_are_aligned_and_distinct),
        cmocka_unit_test(test_calloc_zeroes_reused_memory),
        cmocka_unit_test(test_realloc_last_grows_in_place),
        cmocka_unit_test(test_realloc_other_copies),
        cmocka_unit_test(test_release_rewinds_last),
        cmocka_unit_test(test_reset_reuses_chunks),
        cmocka_unit_test(test_oversized_own_chunk),
        cmocka_unit_test(test_oversized_reused),
        cmocka_unit_test(test_keep_releases_surplus),
        cmocka_unit_test(test_cap_falls_back_to_malloc),
        cmocka_unit_test(test_overflow_exits_70),
        cmocka_unit_test(test_poisoning),
        cmocka_unit_test(test_md_pages_share_the_arena),
        cmocka_unit_test(test_md_large_pages_keep_their_chunks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
