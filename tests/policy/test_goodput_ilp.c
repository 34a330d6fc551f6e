/*
 * Tests for the goodput plugin's integer program on several GPU types (src/policy/goodput_ilp.c,
 * Sia's allocation, issue 27), on small examples whose optimum is worked out by hand here:
 *  - two types, A of 4 GPUs and B of 2, three jobs, none = 1.1 for a job without GPUs; costs
 *      job 0: A4 0.50, A2 0.70, B2 0.80;  job 1: A2 0.60, B2 0.90;  job 2: A2 0.75, B2 0.95.
 *    A holds one 4 or two 2s, B one 2. All three placed: A to {1, 2} and B to 0 costs
 *    0.60 + 0.75 + 0.80 = 2.15; A to {0, 1}, B to 2: 2.25; A to {0, 2}, B to 1: 2.35. Job 0 on
 *    A4 leaves one job without GPUs: at best 0.50 + 0.90 + 1.1 = 2.50. The optimum is the
 *    first: job 0 on B though its cheapest candidate is A4, which a choice job by job (each its
 *    cheapest while it fits, in order) would give it, for 2.50;
 *  - a candidate costing `none` or more is never chosen (the job waits), nor one larger than its
 *    type's GPUs;
 *  - a job is given at most one candidate even when GPUs are left for a second.
 * The first fails without the type constraint (every job its cheapest: A4, A2, A2 on 4 GPUs of
 * A) and with a choice job by job; checked by removing the capacity rows in goodput_ilp.c.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../src/policy/goodput.h"

static void test_hand_worked_optimum(void **state)
{
    (void)state;
    enum { A, B };
    const goodput_cand c[] = {
        {.job = 0, .pool = A, .k = 4, .cost = 0.50}, {.job = 0, .pool = A, .k = 2, .cost = 0.70},
        {.job = 0, .pool = B, .k = 2, .cost = 0.80}, {.job = 1, .pool = A, .k = 2, .cost = 0.60},
        {.job = 1, .pool = B, .k = 2, .cost = 0.90}, {.job = 2, .pool = A, .k = 2, .cost = 0.75},
        {.job = 2, .pool = B, .k = 2, .cost = 0.95},
    };
    const int64_t cap[] = {4, 2};
    int32_t pick[3];
    assert_int_equal(goodput_ilp_solve(c, 7, 3, cap, 2, 1.1, pick), 0);
    assert_int_equal(pick[0], 2); /* job 0 on B2 */
    assert_int_equal(pick[1], 3); /* job 1 on A2 */
    assert_int_equal(pick[2], 5); /* job 2 on A2 */
}

static void test_none_and_too_large(void **state)
{
    (void)state;
    const goodput_cand c[] = {
        {.job = 0, .pool = 0, .k = 1, .cost = 1.2}, /* dearer than waiting */
        {.job = 1, .pool = 0, .k = 8, .cost = 0.1}, /* more GPUs than the type has */
        {.job = 1, .pool = 0, .k = 2, .cost = 0.9},
    };
    const int64_t cap[] = {4};
    int32_t pick[2];
    assert_int_equal(goodput_ilp_solve(c, 3, 2, cap, 1, 1.1, pick), 0);
    assert_int_equal(pick[0], -1);
    assert_int_equal(pick[1], 2);
}

static void test_one_candidate_per_job(void **state)
{
    (void)state;
    const goodput_cand c[] = {
        {.job = 0, .pool = 0, .k = 1, .cost = 0.9},
        {.job = 0, .pool = 1, .k = 1, .cost = 0.8},
    };
    const int64_t cap[] = {1, 1};
    int32_t pick[1];
    assert_int_equal(goodput_ilp_solve(c, 2, 1, cap, 2, 1.1, pick), 0);
    assert_int_equal(pick[0], 1);
    assert_int_equal(goodput_ilp_solve(c, 0, 1, cap, 2, 1.1, pick), 0); /* no candidates */
    assert_int_equal(pick[0], -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_worked_optimum),
        cmocka_unit_test(test_none_and_too_large),
        cmocka_unit_test(test_one_candidate_per_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
