/*
 * Scenario: DRAGON (dragon.c, elastic.c). A starving job is admitted by shrinking a running
 * job towards its minimum (never its PS or worker 0), and the shrunk job grows back when the
 * cluster idles again.
 */
#include "scenario.h"

/*
 * One node of 16 CPUs. Job A (1 PS of 2 CPUs + 3 workers of 4, min 1, max 3) starts at t=0 and
 * fills 14 CPUs. Job B (1 PS + 1 worker, 6 CPUs) arrives with it and does not fit (2 free).
 * After 30 s of waiting, relief removes one of A's workers (6 free: B fits), so A runs with 2
 * workers and B starts. B is short; after it ends and 60 quiet seconds pass, A grows back to 3.
 */
static void test_relief_then_growth(void **unused)
{
    (void)unused;
    drv_jobspec v[2] = {job("a", "lenet", 0, 1, 3, 1, 3, 4000, 0, 60000),
                        job("b", "lenet", 0, 1, 1, 1, 1, 4000, 0, 500)};
    drv_workload w = {.jobs = v, .n = 2, .cap = 2};
    drv_cluster_spec c = {0};
    drv_sim *s = start(&c, &w, 1, 16000,
                       "gang=true period=15 queue_order=fifo admit=dragon scale=dragon "
                       "score=locality");
    until(s, 29);
    const drv_state *st = drv_sim_state(s);
    assert_int_equal(st->jobs[1].phase, DRV_JOB_PENDING); /* waited < 30 s: no relief yet */
    assert_int_equal(st->jobs[0].target[DRV_ROLE_WORKER], 3);
    until(s, 31); /* the cycle at t=30 relieves */
    assert_int_equal(st->jobs[0].target[DRV_ROLE_WORKER], 2);
    assert_int_equal(st->jobs[0].bound[DRV_ROLE_PS], 1);
    assert_true(st->pods[drv_job_pod(st, 0, DRV_ROLE_WORKER, 0)].node >= 0); /* worker 0 kept */
    assert_true(st->jobs[1].bound[DRV_ROLE_WORKER] == 1);
    finish(s);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_true(r[1].end > 0);
    assert_true(r[0].end > r[1].end + 60);
    assert_int_equal(r[0].workers, 3); /* grew back */
    assert_true(r[0].restarts >= 2);   /* shrink and growth are checkpoint-restarts */
    drv_sim_free(s);
    drv_cluster_fini(&c);

    /* Without the scale point (gang only), B waits for A to finish. */
    s = start(&c, &w, 1, 16000, "gang=true period=15 queue_order=fifo admit=dragon");
    finish(s);
    r = drv_sim_jobs(s, &n);
    assert_true(r[1].start >= r[0].end);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

/* Admission below the requested size: B asks for 3 workers but 2 fit, its minimum is 1. */
static void test_admits_between_min_and_requested(void **unused)
{
    (void)unused;
    drv_jobspec v[1] = {job("b", "lenet", 0, 1, 3, 1, 3, 4000, 0, 500)};
    drv_workload w = {.jobs = v, .n = 1, .cap = 1};
    drv_cluster_spec c = {0};
    drv_sim *s = start(&c, &w, 1, 10000, "gang=true period=15 admit=dragon");
    until(s, 1);
    assert_int_equal(drv_sim_state(s)->jobs[0].bound[DRV_ROLE_WORKER], 2);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

/*
 * start_wait: B asks for 3 workers on a node where 2 fit (its minimum is 1). With
 * start_wait=60 it waits for room at its size - none comes - and starts with 2 workers at the
 * cycle at t = 60, which runs only because the plugin's wake says so (nothing else happens in
 * between, and the simulator skips quiet cycles; a scale point makes the run periodic, as for
 * starve_wait); with 0 (DRAGON) at t = 0. Fails without the wait, or without its wake.
 */
static void test_start_wait(void **unused)
{
    (void)unused;
    drv_jobspec v[1] = {job("b", "lenet", 0, 1, 3, 1, 3, 4000, 0, 500)};
    drv_workload w = {.jobs = v, .n = 1, .cap = 1};
    const char *lines[] = {"gang=true period=1 admit=dragon(start_wait=60) scale=dragon",
                           "gang=true period=1 admit=dragon scale=dragon"};
    for (int k = 0; k < 2; k++) {
        drv_cluster_spec c = {0};
        drv_sim *s = start(&c, &w, 1, 10000, lines[k]);
        finish(s); /* no stop on the way: a stop is an event, and the cycle after it would run */
        int32_t n;
        const drv_jobresult *r = drv_sim_jobs(s, &n);
        assert_int_equal(r[0].workers, 2);
        if (k == 0)
            assert_true(r[0].start >= 60 && r[0].start <= 61 + 5); /* + the pod start */
        else
            assert_true(r[0].start <= 1 + 5);
        drv_sim_free(s);
        drv_cluster_fini(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relief_then_growth),
        cmocka_unit_test(test_admits_between_min_and_requested),
        cmocka_unit_test(test_start_wait),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
