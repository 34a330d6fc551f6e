/*
 * Scenario: SpeCon (specon.c). A converging job on a contended node is migrated to another
 * node when the predicted net gain (the source node's jobs and the mover win, the target's
 * jobs lose) exceeds the migration cost, and not when the cost is higher or the target loses
 * more.
 */
#include "scenario.h"

/*
 * Two nodes of 8 CPUs. A (LeNet, 3 CPUs, limit 8) starts at t=0 on n0 and C (BiRNN, 3 CPUs,
 * limit 4) on n1 (least-allocated spreads them). At t=600, A has converged and B (LeNet, 3
 * CPUs, limit 8) arrives: both nodes have 5 CPUs free, so B goes to n0 (lower id). n0's limits
 * now add up to 16 > 8: B, a growing job, is throttled to half. Moving A to n1 (limits 4 + 8 =
 * 12: A still fits by request, 3 + 3 <= 8) gives B the whole of n0 and A 8/12 instead of 8/16
 * of its limit, but throttles C to 8/12 of its limit. c_steps sets how much work C has left.
 */
static drv_sim *scenario(drv_cluster_spec *c, drv_workload *w, drv_jobspec *v, double c_steps,
                         const char *migrate)
{
    v[0] = job("a", "lenet", 0, 0, 1, 1, 1, 3000, 8000, 1e6);
    v[1] = job("c", "birnn", 0, 0, 1, 1, 1, 3000, 4000, c_steps);
    v[2] = job("b", "lenet", 600, 0, 1, 1, 1, 3000, 8000, 1e5);
    *w = (drv_workload){.jobs = v, .n = 3, .cap = 3};
    char line[256];
    snprintf(line, sizeof line,
             "gang=false period=10 admit=pod-by-pod score=least-allocated migrate=%s", migrate);
    return start(c, w, 2, 8000, line);
}

static int32_t node_of(const drv_state *st, int32_t job)
{
    return st->pods[drv_job_pod(st, job, DRV_ROLE_WORKER, 0)].node;
}

/* C is about to finish (about 40 s left at t=600, done near t=640): the move pays. */
static void test_migrates_only_when_gain_exceeds_cost(void **unused)
{
    (void)unused;
    drv_jobspec v[3];
    drv_workload w;
    drv_cluster_spec c = {0};
    drv_sim *s = scenario(&c, &w, v, 1700, "specon");
    until(s, 599);
    const drv_state *st = drv_sim_state(s);
    assert_int_equal(node_of(st, 0), 0);
    assert_int_equal(node_of(st, 1), 1);
    until(s, 900);
    assert_true(st->jobs[0].migrations >= 1);
    assert_int_equal(node_of(st, 0), 1);
    assert_int_equal(st->jobs[2].migrations, 0); /* the growing job stays */
    drv_sim_free(s);
    drv_cluster_fini(&c);

    /* The same run with a migration cost above any gain: nothing moves. */
    s = scenario(&c, &w, v, 1700, "specon(migration_cost=86400)");
    until(s, 900);
    st = drv_sim_state(s);
    assert_int_equal(st->jobs[0].migrations, 0);
    assert_int_equal(node_of(st, 0), 0);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

/* C has hours of work left: throttling it to 8/12 costs more than B and A win, so A stays.
 * Counting only the source node's gain moved A here too. */
static void test_no_move_that_slows_the_target_more(void **unused)
{
    (void)unused;
    drv_jobspec v[3];
    drv_workload w;
    drv_cluster_spec c = {0};
    drv_sim *s = scenario(&c, &w, v, 1e6, "specon");
    until(s, 900);
    const drv_state *st = drv_sim_state(s);
    assert_int_equal(node_of(st, 2), 0); /* B did join A: n0 is contended */
    assert_int_equal(st->jobs[0].migrations, 0);
    assert_int_equal(node_of(st, 0), 0);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrates_only_when_gain_exceeds_cost),
        cmocka_unit_test(test_no_move_that_slows_the_target_more),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
