/*
 * The hash table against a plain array model (a metamorphic check: the table and a linear
 * search must agree after every step), plus growth, deletion during iteration, forced
 * collisions, the hooks' ownership and failing allocations.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drover/hashmap.h"

/* Every key hashes to 7: one chain holds everything, so equality alone must tell keys apart. */
static uint64_t hash_const(const void *k)
{
    (void)k;
    return 7;
}

static int freed_vals;
static void count_free(void *v)
{
    freed_vals++;
    drv_free(v);
}

static const drv_hashmap_type colliding = {.hash = hash_const, .equal = drv_hashmap_equal_str};

static void test_put_get_remove_strings(void **unused)
{
    (void)unused;
    drv_hashmap *m = drv_hashmap_new(&drv_hashmap_strings);
    assert_non_null(m);
    int a = 1, b = 2;
    char key[8] = "alpha";
    assert_int_equal(drv_hashmap_put(m, key, &a), 0);
    strcpy(key, "zzz"); /* the table copied the key: changing ours must not matter */
    assert_ptr_equal(drv_hashmap_get(m, "alpha"), &a);
    assert_null(drv_hashmap_get(m, "zzz"));
    assert_int_equal(drv_hashmap_put(m, "alpha", &b), 0); /* replace */
    assert_ptr_equal(drv_hashmap_get(m, "alpha"), &b);
    assert_int_equal(drv_hashmap_len(m), 1);
    assert_int_equal(drv_hashmap_put(m, "beta", NULL), 0);
    assert_true(drv_hashmap_has(m, "beta"));
    assert_null(drv_hashmap_get(m, "beta"));
    assert_int_equal(drv_hashmap_remove(m, "alpha"), 0);
    assert_int_equal(drv_hashmap_remove(m, "alpha"), DRV_ENOENT);
    assert_false(drv_hashmap_has(m, "alpha"));
    assert_int_equal(drv_hashmap_len(m), 1);
    drv_hashmap_free(m);
    drv_hashmap_free(NULL);
}

/* Inserts, replaces and removes pseudo-random keys, checking against a flat array. */
static void check_against_model(const drv_hashmap_type *type, int nkeys, int steps)
{
    drv_hashmap *m = drv_hashmap_new(type);
    assert_non_null(m);
    char(*keys)[16] = drv_calloc((size_t)nkeys, sizeof *keys);
    int *val = drv_calloc((size_t)nkeys, sizeof *val); /* 0: absent in the model */
    assert_non_null(keys);
    assert_non_null(val);
    for (int i = 0; i < nkeys; i++)
        snprintf(keys[i], sizeof keys[i], "k%d", i);
    drv_rng r;
    drv_rng_seed(&r, 42);
    size_t present = 0;
    for (int s = 0; s < steps; s++) {
        int i = (int)drv_rng_range(&r, 0, nkeys - 1);
        if (drv_rng_uniform(&r) < 0.7) {
            present += val[i] == 0;
            val[i] = s + 1;
            assert_int_equal(drv_hashmap_put(m, keys[i], &val[i]), 0);
        } else {
            assert_int_equal(drv_hashmap_remove(m, keys[i]), val[i] ? 0 : DRV_ENOENT);
            present -= val[i] != 0;
            val[i] = 0;
        }
        assert_int_equal(drv_hashmap_len(m), present);
    }
    for (int i = 0; i < nkeys; i++)
        assert_ptr_equal(drv_hashmap_get(m, keys[i]), val[i] ? &val[i] : NULL);
    /* iteration visits every present key exactly once */
    int *seen = drv_calloc((size_t)nkeys, sizeof *seen);
    assert_non_null(seen);
    drv_hashmap_iter it;
    drv_hashmap_iter_init(&it, m);
    const void *k;
    void *v;
    size_t visited = 0;
    while (drv_hashmap_next(&it, &k, &v)) {
        int i = atoi((const char *)k + 1);
        assert_ptr_equal(v, &val[i]);
        assert_int_equal(seen[i]++, 0);
        visited++;
    }
    assert_int_equal(visited, present);
    drv_free(seen);
    drv_free(keys);
    drv_free(val);
    drv_hashmap_free(m);
}

static void test_growth_matches_model(void **unused)
{
    (void)unused;
    check_against_model(&drv_hashmap_strings, 5000, 40000); /* grows 64 -> 4096+ buckets */
}

static void test_collisions_match_model(void **unused)
{
    (void)unused;
    check_against_model(&colliding, 300, 3000); /* one chain of up to 300 entries */
}

/* Removing the entry just returned by the iterator, as the informer's relist does. */
static void test_remove_while_iterating(void **unused)
{
    (void)unused;
    drv_hashmap *m = drv_hashmap_new(&drv_hashmap_ints);
    assert_non_null(m);
    for (intptr_t i = 1; i <= 1000; i++)
        assert_int_equal(drv_hashmap_put(m, DRV_HASHMAP_INT(i), (void *)i), 0);
    drv_hashmap_iter it;
    drv_hashmap_iter_init(&it, m);
    const void *k;
    void *v;
    while (drv_hashmap_next(&it, &k, &v)) {
        assert_ptr_equal(k, v);
        if ((intptr_t)k % 3 == 0)
            assert_int_equal(drv_hashmap_remove(m, k), 0);
    }
    assert_int_equal(drv_hashmap_len(m), 1000 - 333);
    for (intptr_t i = 1; i <= 1000; i++)
        assert_int_equal(drv_hashmap_has(m, DRV_HASHMAP_INT(i)), i % 3 != 0);
    drv_hashmap_free(m);
}

/* val_free runs on replace, remove and free, never twice. */
static void test_value_hook(void **unused)
{
    (void)unused;
    drv_hashmap_type t = drv_hashmap_strings;
    t.val_free = count_free;
    freed_vals = 0;
    drv_hashmap *m = drv_hashmap_new(&t);
    assert_non_null(m);
    assert_int_equal(drv_hashmap_put(m, "a", drv_strdup("1")), 0);
    assert_int_equal(drv_hashmap_put(m, "a", drv_strdup("2")), 0);
    assert_int_equal(freed_vals, 1);
    assert_string_equal(drv_hashmap_get(m, "a"), "2");
    assert_int_equal(drv_hashmap_put(m, "b", drv_strdup("3")), 0);
    assert_int_equal(drv_hashmap_put(m, "c", drv_strdup("4")), 0);
    assert_int_equal(drv_hashmap_remove(m, "b"), 0);
    assert_int_equal(freed_vals, 2);
    drv_hashmap_free(m);
    assert_int_equal(freed_vals, 4);
}

/* Every allocation of a put, failed in turn, leaves the table as it was. */
static void test_failing_allocations(void **unused)
{
    (void)unused;
    drv_hashmap *m = drv_hashmap_new(&drv_hashmap_strings);
    assert_non_null(m);
    int v = 0;
    char key[16];
    for (int i = 0; i < 64; i++) { /* fill up to the doubling point */
        snprintf(key, sizeof key, "k%d", i);
        assert_int_equal(drv_hashmap_put(m, key, &v), 0);
    }
    for (long nth = 1; nth <= 2; nth++) { /* the entry, then the key's copy */
        drv_alloc_fail_at(nth);
        int rc = drv_hashmap_put(m, "new", &v);
        drv_alloc_fail_at(0);
        assert_int_equal(rc, DRV_ENOMEM);
        assert_int_equal(drv_hashmap_len(m), 64);
        assert_false(drv_hashmap_has(m, "new"));
    }
    /* the third allocation is the doubling: its failure is not an error */
    drv_alloc_fail_at(3);
    assert_int_equal(drv_hashmap_put(m, "new", &v), 0);
    drv_alloc_fail_at(0);
    assert_int_equal(drv_hashmap_len(m), 65);
    for (int i = 0; i < 64; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_ptr_equal(drv_hashmap_get(m, key), &v);
    }
    drv_hashmap_free(m);
    drv_alloc_fail_at(1);
    assert_null(drv_hashmap_new(&drv_hashmap_strings));
    drv_alloc_fail_at(2);
    assert_null(drv_hashmap_new(&drv_hashmap_strings));
    drv_alloc_fail_at(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_put_get_remove_strings),
                                       cmocka_unit_test(test_growth_matches_model),
                                       cmocka_unit_test(test_collisions_match_model),
                                       cmocka_unit_test(test_remove_while_iterating),
                                       cmocka_unit_test(test_value_hook),
                                       cmocka_unit_test(test_failing_allocations)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
