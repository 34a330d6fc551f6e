/*
 * Scenario: combined priority (priority.c). The queue order must follow the factors, and the
 * sprio-like breakdown must equal the weighted sum computed by hand.
 */
#include "scenario.h"

/*
 * One node of 10 CPUs; at t=0 a 10-CPU job holds it for a while. Three jobs queue behind it:
 *   low  (user prio 1, class 0,   4 workers) submitted at 1 s
 *   high (user prio 3, class 100, 1 worker)  submitted at 2 s
 *   mid  (user prio 2, class 10,  2 workers) submitted at 3 s
 * Each needs the whole node, so they run one after another in queue order. By hand, at any
 * time t when all three wait (defaults 0.4/0.3/0.2/0.1; wait normalised over 1..3 s ago):
 *   low  = 0.4·0   + 0.3·0     + 0.2·1   + 0.1·1   = 0.3
 *   high = 0.4·1   + 0.3·1     + 0.2·0.5 + 0.1·0   = 0.8
 *   mid  = 0.4·0.5 + 0.3·(10/100) + 0.2·0 + 0.1·(1/3) = 0.2633
 * so high runs first, then (with two left: low = 0.2+0.1 = 0.3, mid = 0.4+0.3 = 0.7) mid, then
 * low — the reverse of FIFO's low, high, mid.
 */
static void test_order_follows_factors(void **unused)
{
    (void)unused;
    drv_jobspec v[4] = {
        job("hog", "lenet", 0, 0, 1, 1, 1, 10000, 0, 3000),
        job("low", "lenet", 1, 0, 4, 4, 4, 2500, 0, 1000),
        job("high", "lenet", 2, 0, 1, 1, 1, 10000, 0, 1000),
        job("mid", "lenet", 3, 0, 2, 2, 2, 5000, 0, 1000),
    };
    v[2].user_priority = 3;
    v[2].priority = 100;
    v[3].user_priority = 2;
    v[3].priority = 10;
    drv_workload w = {.jobs = v, .n = 4, .cap = 4};
    drv_cluster_spec c = {0};
    drv_sim *s = start(&c, &w, 1, 10000, "gang=true period=1 queue_order=priority admit=gang");
    until(s, 5);
    drv_priority_breakdown b;
    drv_diag d;
    assert_int_equal(drv_priority_explain(drv_sim_state(s), 5, 2, NULL, 0, &b, &d), 0);
    assert_int_equal(b.queued, 3);
    assert_float_equal(b.total, 0.8, 1e-9);
    assert_int_equal(drv_priority_explain(drv_sim_state(s), 5, 3, NULL, 0, &b, &d), 0);
    assert_float_equal(b.total, 0.4 * 0.5 + 0.3 * 0.1 + 0.1 / 3, 1e-9);
    assert_float_equal(b.norm[DRV_PRIO_WAIT], 0, 1e-12);
    finish(s);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_true(r[2].start < r[3].start);
    assert_true(r[3].start < r[1].start);
    drv_sim_free(s);
    drv_cluster_fini(&c);

    /* Metamorphic check: with only the waiting-time weight the order is FIFO again. */
    s = start(&c, &w, 1, 10000,
              "gang=true period=1 queue_order=priority(w_user=0;w_class=0;w_wait=1;w_par=0) "
              "admit=gang");
    finish(s);
    r = drv_sim_jobs(s, &n);
    assert_true(r[1].start < r[2].start && r[2].start < r[3].start);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

static void test_explain_knob_errors(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    drv_knob k = {"w_colour", 1};
    drv_priority_breakdown b;
    drv_diag d;
    assert_int_equal(drv_priority_explain(&st, 0, 0, &k, 1, &b, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "unknown knob 'w_colour'"));
    assert_int_equal(drv_priority_explain(&st, 0, 0, NULL, 0, &b, &d), DRV_ENOENT);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_follows_factors),
        cmocka_unit_test(test_explain_knob_errors),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
