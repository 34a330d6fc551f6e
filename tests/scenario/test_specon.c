/*
 * Scenario: SpeCon (specon.c). A converging job on a contended node is migrated to another
 * node when the predicted gain exceeds the migration cost, and not when the cost is higher.
 */
#include "scenario.h"

/*
 * Two nodes of 8 CPUs. A (LeNet, 3 CPUs, limit 8) starts at t=0 on n0 and C (BiRNN, 3 CPUs,
 * limit 4) on n1 (least-allocated spreads them). At t=600, A has converged and B (LeNet, 3
 * CPUs, limit 8) arrives: both nodes have 5 CPUs free, so B goes to n0 (lower id). n0's limits
 * now add up to 16 > 8: B, a growing job, is throttled to half. SpeCon must move A to n1
 * (limits 4 + 8 = 12: A still fits by request, 3 + 3 <= 8) — but only when the gain (B's long
 * remaining time × the share it wins) exceeds the cost.
 */
static drv_sim *scenario(drv_cluster_spec *c, drv_workload *w, const char *migrate)
{
    char line[256];
    snprintf(line, sizeof line,
             "gang=false period=10 admit=pod-by-pod score=least-allocated migrate=%s", migrate);
    return start(c, w, 2, 8000, line);
}

static void test_migrates_only_when_gain_exceeds_cost(void **unused)
{
    (void)unused;
    drv_jobspec v[3] = {job("a", "lenet", 0, 0, 1, 1, 1, 3000, 8000, 1e6),
                        job("c", "birnn", 0, 0, 1, 1, 1, 3000, 4000, 1e6),
                        job("b", "lenet", 600, 0, 1, 1, 1, 3000, 8000, 1e5)};
    drv_workload w = {v, 3, 3};
    drv_cluster_spec c = {0};
    drv_sim *s = scenario(&c, &w, "specon");
    until(s, 599);
    const drv_state *st = drv_sim_state(s);
    assert_int_equal(st->pods[drv_job_pod(st, 0, DRV_ROLE_WORKER, 0)].node, 0);
    until(s, 900);
    assert_true(st->jobs[0].migrations >= 1);
    assert_int_equal(st->pods[drv_job_pod(st, 0, DRV_ROLE_WORKER, 0)].node, 1);
    assert_int_equal(st->jobs[2].migrations, 0); /* the growing job stays */
    drv_sim_free(s);
    drv_cluster_fini(&c);

    /* The same run with a migration cost above any gain: nothing moves. */
    s = scenario(&c, &w, "specon(migration_cost=86400)");
    until(s, 900);
    st = drv_sim_state(s);
    assert_int_equal(st->jobs[0].migrations, 0);
    assert_int_equal(st->pods[drv_job_pod(st, 0, DRV_ROLE_WORKER, 0)].node, 0);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrates_only_when_gain_exceeds_cost),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
