/*
 * Scenario: FlowCon (flowcon.c). CPU moves from a converging job to a growing one: on a shared
 * node, the job whose loss has flattened gets a lower CPU limit than the newly started one.
 */
#include "scenario.h"

/*
 * One node of 8 CPUs; two single-container LeNet jobs asking 2 CPUs with limits of 8 (the
 * FlowCon set-up: containers may use the whole node). A starts at t=0 and has converged by
 * t=600 (its loss curve is nearly flat); B starts at t=600. A few intervals later B's limit
 * must exceed A's, and B must get more CPU than the 4 an even split would give it.
 */
static void test_cpu_moves_to_growing_job(void **unused)
{
    (void)unused;
    drv_jobspec v[2] = {job("a", "lenet", 0, 0, 1, 1, 1, 2000, 8000, 1e6),
                        job("b", "lenet", 600, 0, 1, 1, 1, 2000, 8000, 1e6)};
    drv_workload w = {.jobs = v, .n = 2, .cap = 2};
    drv_cluster_spec c = {0};
    drv_sim *s = start(&c, &w, 1, 8000, "gang=false period=10 admit=pod-by-pod reallocate=flowcon");
    until(s, 700);
    const drv_state *st = drv_sim_state(s);
    int64_t la = st->pods[drv_job_pod(st, 0, DRV_ROLE_WORKER, 0)].cpu_limit;
    int64_t lb = st->pods[drv_job_pod(st, 1, DRV_ROLE_WORKER, 0)].cpu_limit;
    assert_true(lb > la);
    assert_true(lb > 4000);
    /* The limits never go below the request nor above the node. */
    assert_true(la >= 2000 && lb <= 8000);
    drv_sim_free(s);
    drv_cluster_fini(&c);

    /* Without reallocation, the limits stay as requested (8 CPUs each, shared evenly). */
    s = start(&c, &w, 1, 8000, "gang=false period=10 admit=pod-by-pod");
    until(s, 700);
    st = drv_sim_state(s);
    assert_int_equal(st->pods[drv_job_pod(st, 0, DRV_ROLE_WORKER, 0)].cpu_limit, 8000);
    assert_int_equal(st->pods[drv_job_pod(st, 1, DRV_ROLE_WORKER, 0)].cpu_limit, 8000);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

/* Node a pod of job `job` is bound to, or -1. */
static int32_t node_of(const drv_state *st, int32_t job)
{
    return st->pods[drv_job_pod(st, job, DRV_ROLE_WORKER, 0)].node;
}

/*
 * FlowCon 2.0 placement: a new job goes where the running jobs have the lowest total growth,
 * and a job not yet measured counts as growing. Two nodes of 8 CPUs: A (3 CPUs) has converged
 * on one by t=600; B (2 CPUs) starts on the other at t=600 and C arrives at t=605, before B has
 * been measured. Least-allocated alone prefers B's node (less requested); the FlowCon score
 * must outweigh it and put C beside the converged A. Counting the unmeasured B as 0 made B's
 * node look idle and piled C onto it.
 */
static void test_new_job_joins_converged_one(void **unused)
{
    (void)unused;
    drv_jobspec v[3] = {job("a", "lenet", 0, 0, 1, 1, 1, 3000, 8000, 1e6),
                        job("b", "lenet", 600, 0, 1, 1, 1, 2000, 8000, 1e6),
                        job("c", "lenet", 605, 0, 1, 1, 1, 2000, 8000, 1e6)};
    drv_workload w = {.jobs = v, .n = 3, .cap = 3};
    drv_cluster_spec c = {0};
    drv_sim *s = start(&c, &w, 2, 8000,
                       "gang=false period=10 admit=pod-by-pod score=flowcon*2,least-allocated "
                       "reallocate=flowcon");
    until(s, 630);
    const drv_state *st = drv_sim_state(s);
    assert_true(node_of(st, 0) >= 0 && node_of(st, 1) >= 0);
    assert_int_not_equal(node_of(st, 0), node_of(st, 1));
    assert_int_equal(node_of(st, 2), node_of(st, 0));
    drv_sim_free(s);
    drv_cluster_fini(&c);

    /* The same jobs without the FlowCon score: C follows least-allocated, to B's node. */
    s = start(&c, &w, 2, 8000,
              "gang=false period=10 admit=pod-by-pod score=least-allocated reallocate=flowcon");
    until(s, 630);
    st = drv_sim_state(s);
    assert_int_equal(node_of(st, 2), node_of(st, 1));
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

/*
 * Partly placed jobs under pod-by-pod admission (issue 26): on one node of 8 CPUs, two jobs of
 * a 2-CPU PS and two 3-CPU workers (each fits alone, exactly) get both PS pods and one worker
 * between them, and neither can ever start - the deadlock kube-scheduler's baseline has
 * (docs/policies.md). No job runs, so FlowCon can decide
 * nothing more: the run must end after a handful of cycles, as it does without FlowCon. It
 * used to run a cycle every period to the 90-day horizon (777,600 of them; 55 s for 100 jobs
 * submitted at once), because the plugin never said when it could next decide (drv_plugin.wake).
 */
static void test_stuck_queue_is_not_cycled(void **unused)
{
    (void)unused;
    drv_jobspec v[2] = {job("a", "lenet", 0, 1, 2, 2, 2, 3000, 3000, 1e6),
                        job("b", "lenet", 0, 1, 2, 2, 2, 3000, 3000, 1e6)};
    drv_workload w = {.jobs = v, .n = 2, .cap = 2};
    static const char *const lines[] = {
        "gang=false period=10 admit=pod-by-pod score=flowcon*2,least-allocated "
        "reallocate=flowcon",
        "gang=false period=10 admit=pod-by-pod score=least-allocated"};
    for (int k = 0; k < 2; k++) {
        drv_cluster_spec c = {0};
        drv_sim *s = start(&c, &w, 1, 8000, lines[k]);
        finish(s);
        drv_summary sum;
        drv_sim_summary(s, &sum);
        assert_int_equal(sum.done, 0);
        assert_true(sum.stuck_cpu > 0.8); /* two PS pods and a worker: 7 of the 8 CPUs */
        if (sum.cycles > 10)
            fail_msg("%s: %lld cycles on a queue that cannot move", lines[k],
                     (long long)sum.cycles);
        drv_sim_free(s);
        drv_cluster_fini(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu_moves_to_growing_job),
        cmocka_unit_test(test_new_job_joins_converged_one),
        cmocka_unit_test(test_stuck_queue_is_not_cycled),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
