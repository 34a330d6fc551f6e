/*
 * Scenario: locality placement (locality.c). When one node has room for a whole job, the
 * locality score puts the PS and all its workers there; plain spreading does not.
 */
#include "scenario.h"

/* 4 empty nodes of 16 CPUs; one job of 1 PS (2 CPUs) + 3 workers (4 CPUs) = 14 CPUs. */
static void test_colocates_ps_and_workers(void **unused)
{
    (void)unused;
    drv_jobspec v[1] = {job("a", "resnet50", 0, 1, 3, 3, 3, 4000, 0, 100)};
    drv_workload w = {.jobs = v, .n = 1, .cap = 1};
    drv_cluster_spec c = {0};
    drv_sim *s = start(&c, &w, 4, 16000, "admit=gang score=locality*3,least-allocated");
    until(s, 1.5);
    assert_int_equal(nodes_of(drv_sim_state(s), 0), 1);
    drv_sim_free(s);
    drv_cluster_fini(&c);
    /* The same job spread by least-allocated alone lands on every node. */
    s = start(&c, &w, 4, 16000, "admit=gang score=least-allocated");
    until(s, 1.5);
    assert_int_equal(nodes_of(drv_sim_state(s), 0), 4);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

/*
 * When the job does not fit on one node, the PS goes where most of its workers fit and the
 * rest stays in the same rack: nodes of 10 CPUs, n0 and n1 in rack r0, n2 and n3 in r1; n0 is
 * taken by a 10-CPU job. The 1 PS + 3 workers (14 CPUs) job must use n1 plus one node, and
 * that node must be n2 or n3 only if r0 has no room — here r0's n0 is full, so it spans 2
 * nodes and the PS shares a node with at least 1 worker.
 */
static void test_ps_with_workers(void **unused)
{
    (void)unused;
    drv_jobspec v[2] = {job("hog", "lenet", 0, 0, 1, 1, 1, 10000, 0, 1e6),
                        job("a", "resnet50", 1, 1, 3, 3, 3, 4000, 0, 100)};
    drv_workload w = {.jobs = v, .n = 2, .cap = 2};
    drv_cluster_spec c = {0};
    drv_sim *s = start(&c, &w, 4, 10000, "admit=gang score=locality*3,least-allocated");
    until(s, 2.5);
    const drv_state *st = drv_sim_state(s);
    assert_int_equal(nodes_of(st, 1), 2);
    int32_t ps = drv_job_pod(st, 1, DRV_ROLE_PS, 0);
    int with_ps = 0;
    for (int i = 0; i < 3; i++)
        with_ps += st->pods[drv_job_pod(st, 1, DRV_ROLE_WORKER, i)].node == st->pods[ps].node;
    assert_int_equal(with_ps, 2); /* 2 + 4 + 4 = 10 CPUs: the PS node is filled */
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_colocates_ps_and_workers),
        cmocka_unit_test(test_ps_with_workers),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
