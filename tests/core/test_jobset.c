/*
 * drv_jobset_next (state.h), the one walk over a job set, against a plain scan of the bitmap (a
 * metamorphic check: both must name the same next member for every start), with and without an
 * except mask, on sets that span several summary words (4,096 jobs each) and ragged ends.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "drover/state.h"
#include "testutil.h"

enum { MAXJOBS = 3 * 4096 + 77, NW = (MAXJOBS + 63) / 64, NSW = (NW + 63) / 64 };

static uint64_t bits[NW], sum[NSW], except[NW];

static bool has(const uint64_t *b, int32_t j)
{
    return (b[j / 64] >> (j % 64)) & 1;
}

/* The next member >= from of bits less the first nexcept words of except, one id at a time. */
static int32_t scan_next(int32_t njobs, int32_t from, int32_t nexcept)
{
    for (int32_t j = from < 0 ? 0 : from; j < njobs; j++)
        if (has(bits, j) && !(j / 64 < nexcept && has(except, j)))
            return j;
    return -1;
}

/* A set of njobs with members drawn at `density` per mille, and its summary. */
static void fill(int32_t njobs, int density, uint64_t *seed)
{
    memset(bits, 0, sizeof bits);
    memset(sum, 0, sizeof sum);
    for (int32_t j = 0; j < njobs; j++)
        if ((int)(tu_rnd(seed) % 1000) < density)
            bits[j / 64] |= (uint64_t)1 << (j % 64);
    for (int32_t w = 0; w < NW; w++)
        if (bits[w])
            sum[w / 64] |= (uint64_t)1 << (w % 64);
}

static void check_all(int32_t njobs, int32_t nexcept)
{
    drv_jobset js = {.bits = bits, .sum = sum, .cap_bits = NW, .cap_sum = NSW};
    const uint64_t *ex = nexcept > 0 ? except : NULL;
    for (int32_t from = -2; from <= njobs + 65; from++)
        assert_int_equal(drv_jobset_next(&js, njobs, from, ex, nexcept),
                         scan_next(njobs, from, nexcept));
}

static void test_matches_scan(void **unused)
{
    (void)unused;
    static const int32_t sizes[] = {1, 63, 64, 65, 4095, 4096, 4097, MAXJOBS};
    static const int densities[] = {0, 1, 20, 500, 1000};
    uint64_t seed = 7;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t d = 0; d < sizeof densities / sizeof *densities; d++) {
            int32_t njobs = sizes[s], nw = (njobs + 63) / 64;
            fill(njobs, densities[d], &seed);
            check_all(njobs, 0);             /* no mask: the state's plain look-up */
            for (int32_t w = 0; w < NW; w++) /* most members masked, some words whole */
                except[w] = w % 3 == 0 ? ~(uint64_t)0 : bits[w] & (tu_rnd(&seed) << 1);
            check_all(njobs, nw);
            check_all(njobs, nw / 2); /* a mask shorter than the set: nothing excepted past it */
        }
}

/* Every member masked: the walk ends at -1 however many summary words it crosses. */
static void test_all_excepted(void **unused)
{
    (void)unused;
    uint64_t seed = 3;
    fill(MAXJOBS, 300, &seed);
    memcpy(except, bits, sizeof except);
    drv_jobset js = {.bits = bits, .sum = sum, .cap_bits = NW, .cap_sum = NSW};
    assert_int_equal(drv_jobset_next(&js, MAXJOBS, 0, except, NW), -1);
    assert_true(bits[NW - 1] != 0);
    except[NW - 1] &= except[NW - 1] - 1; /* the last word's lowest member let through */
    int32_t last = (NW - 1) * 64 + __builtin_ctzll(bits[NW - 1]);
    assert_int_equal(drv_jobset_next(&js, MAXJOBS, 0, except, NW), last);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_scan),
        cmocka_unit_test(test_all_excepted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
