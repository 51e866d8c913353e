/* Unit tests for gen/strmap.c: insert, replace, lookups, key ownership and
 * rehashing with many keys, values freed by strmap_free_with. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "strmap.h"

static void test_empty(void **state)
{
    (void)state;
    strmap m;
    strmap_init(&m);
    assert_int_equal(m.len, 0);
    assert_int_equal(m.cap, 0);
    assert_null(strmap_get(&m, "x"));
    assert_null(strmap_get(&m, ""));
    strmap_free(&m);
    strmap_free(&m); /* twice is harmless */
    assert_null(m.slots);
}

static void test_put_get_replace(void **state)
{
    (void)state;
    strmap m;
    strmap_init(&m);
    int a = 1, b = 2, c = 3;
    assert_null(strmap_put(&m, "alpha", &a));
    assert_null(strmap_put(&m, "beta", &b));
    assert_null(strmap_put(&m, "", &c)); /* the empty key is a key */
    assert_int_equal(m.len, 3);
    assert_ptr_equal(strmap_get(&m, "alpha"), &a);
    assert_ptr_equal(strmap_get(&m, "beta"), &b);
    assert_ptr_equal(strmap_get(&m, ""), &c);
    assert_null(strmap_get(&m, "alph"));
    assert_null(strmap_get(&m, "alphaa"));
    assert_null(strmap_get(&m, "Alpha")); /* case-sensitive */

    /* replacing returns the previous value and keeps the count */
    assert_ptr_equal(strmap_put(&m, "alpha", &b), &a);
    assert_int_equal(m.len, 3);
    assert_ptr_equal(strmap_get(&m, "alpha"), &b);
    /* a NULL value is stored (and reads back as NULL) */
    assert_ptr_equal(strmap_put(&m, "beta", NULL), &b);
    assert_null(strmap_get(&m, "beta"));
    assert_int_equal(m.len, 3);
    assert_null(strmap_put(&m, "beta", &c));
    assert_ptr_equal(strmap_get(&m, "beta"), &c);
    strmap_free(&m);
    assert_int_equal(m.len, 0);
    assert_int_equal(m.cap, 0);
}

static void test_keys_are_copied(void **state)
{
    (void)state;
    strmap m;
    strmap_init(&m);
    char key[16] = "content/a.md";
    int v = 7;
    strmap_put(&m, key, &v);
    strcpy(key, "changed");
    assert_ptr_equal(strmap_get(&m, "content/a.md"), &v);
    assert_null(strmap_get(&m, "changed"));
    /* UTF-8 keys are plain bytes */
    strmap_put(&m, "键值缓存", &v);
    assert_ptr_equal(strmap_get(&m, "键值缓存"), &v);
    assert_null(strmap_get(&m, "键值"));
    strmap_free(&m);
}

static void test_many_keys_rehash(void **state)
{
    (void)state;
    enum { NKEYS = 20000 };
    strmap m;
    strmap_init(&m);
    static int vals[NKEYS];
    char key[32];
    for (int i = 0; i < NKEYS; i++) {
        vals[i] = i;
        snprintf(key, sizeof key, "k%d", i);
        assert_null(strmap_put(&m, key, &vals[i]));
        /* the table stays at most half full, and a power of two */
        assert_true(m.len * 2 <= m.cap);
        assert_int_equal(m.cap & (m.cap - 1), 0);
    }
    assert_int_equal(m.len, NKEYS);
    for (int i = 0; i < NKEYS; i++) {
        snprintf(key, sizeof key, "k%d", i);
        int *p = strmap_get(&m, key);
        if (p != &vals[i])
            fail_msg("key %s lost after rehashing", key);
    }
    for (int i = NKEYS; i < NKEYS + 1000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_null(strmap_get(&m, key));
    }
    /* every key present exactly once in the slots */
    size_t seen = 0;
    for (size_t i = 0; i < m.cap; i++)
        if (m.slots[i].key)
            seen++;
    assert_int_equal(seen, NKEYS);
    /* replacing after growth still finds the same slot */
    snprintf(key, sizeof key, "k%d", 12345);
    assert_ptr_equal(strmap_put(&m, key, NULL), &vals[12345]);
    assert_int_equal(m.len, NKEYS);
    strmap_free(&m);
}

/* A reserved map takes that many keys without growing, and keeps what it
 * held before the reserve */
static void test_reserve(void **state)
{
    (void)state;
    strmap m;
    strmap_init(&m);
    int v[3] = {1, 2, 3};
    strmap_put(&m, "before", &v[0]);
    strmap_reserve(&m, 5000);
    size_t cap = m.cap;
    assert_true(cap >= 2 * 5000);
    assert_ptr_equal(strmap_get(&m, "before"), &v[0]);
    char key[32];
    for (int i = 0; i < 4999; i++) {
        snprintf(key, sizeof key, "r%d", i);
        strmap_put(&m, key, &v[1]);
    }
    assert_int_equal(m.cap, cap);
    assert_int_equal(m.len, 5000);
    assert_ptr_equal(strmap_get(&m, "r4998"), &v[1]);
    assert_ptr_equal(strmap_get(&m, "before"), &v[0]);
    strmap_reserve(&m, 10); /* never shrinks */
    assert_int_equal(m.cap, cap);
    strmap_free(&m);
    strmap_reserve(&m, 0); /* an empty map gets a table */
    assert_ptr_equal(strmap_put(&m, "x", &v[2]), NULL);
    assert_ptr_equal(strmap_get(&m, "x"), &v[2]);
    strmap_free(&m);
}

static void test_similar_keys(void **state)
{
    (void)state;
    /* keys that differ in one byte, or are prefixes of each other */
    static const char *keys[] = {"a", "aa", "aaa", "ab", "ba", "a/b", "a/b/", "a-b", "a_b",
                                 "A", "/a/", "/a/b/", "x.md", "x.MD"};
    strmap m;
    strmap_init(&m);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        strmap_put(&m, keys[i], (void *)(uintptr_t)(i + 1));
    assert_int_equal(m.len, sizeof keys / sizeof keys[0]);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        assert_int_equal((uintptr_t)strmap_get(&m, keys[i]), i + 1);
    strmap_free(&m);
}

/* strmap_free_with: each stored value once, NULL values skipped, replaced
 * values left to whoever replaced them. */
static int S_freed[8];

static void S_count_free(void *v) { S_freed[*(int *)v]++; }

static void test_free_with(void **state)
{
    (void)state;
    memset(S_freed, 0, sizeof S_freed);
    static int ids[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    strmap m;
    strmap_init(&m);
    strmap_put(&m, "a", &ids[1]);
    strmap_put(&m, "b", &ids[2]);
    assert_ptr_equal(strmap_put(&m, "b", &ids[3]), &ids[2]); /* 2 is the caller's again */
    strmap_put(&m, "c", NULL);
    char key[16];
    for (int i = 0; i < 100; i++) { /* grown, so the values moved */
        snprintf(key, sizeof key, "k%d", i);
        strmap_put(&m, key, &ids[4]);
    }
    strmap_free_with(&m, S_count_free);
    assert_int_equal(S_freed[1], 1);
    assert_int_equal(S_freed[2], 0);
    assert_int_equal(S_freed[3], 1);
    assert_int_equal(S_freed[4], 100);
    assert_int_equal(S_freed[0] + S_freed[5] + S_freed[6] + S_freed[7], 0);
    assert_null(m.slots);
    assert_int_equal(m.len, 0);
    strmap_free_with(&m, S_count_free); /* an empty map: nothing */
    assert_int_equal(S_freed[1], 1);

    /* with free itself: ASan reports a value freed twice or leaked */
    strmap_init(&m);
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof key, "x%d", i);
        strmap_put(&m, key, xstrdup(key));
    }
    strmap_free_with(&m, free);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_put_get_replace),
        cmocka_unit_test(test_keys_are_copied),
        cmocka_unit_test(test_many_keys_rehash),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_similar_keys),
        cmocka_unit_test(test_free_with),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
