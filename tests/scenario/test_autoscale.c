/*
 * Scenario: the autoscaling operator (autoscale.c) releases workers symmetrically — one at a
 * time from whichever running job has the most above its minimum — where DRAGON takes them
 * from the first running job in queue order.
 */
#include "scenario.h"

/*
 * One node of 24 CPUs. A and B (each 1 PS of 2 CPUs + 4 workers of 2 CPUs, min 1) fill 20.
 * C (1 PS of 2 CPUs + 1 worker of 6 CPUs) needs 8 and finds 4. After 30 s, relief must free
 * 4 CPUs = two workers: autoscale takes one from A and one from B (3 and 3 left); DRAGON
 * takes both from A (2 and 4 left).
 */
static void relief_split(const char *plugin, int want_a, int want_b)
{
    drv_jobspec v[3] = {job("a", "lenet", 0, 1, 4, 1, 4, 2000, 0, 1e6),
                        job("b", "lenet", 0, 1, 4, 1, 4, 2000, 0, 1e6),
                        job("c", "lenet", 0, 1, 1, 1, 1, 6000, 0, 1000)};
    drv_workload w = {.jobs = v, .n = 3, .cap = 3};
    drv_cluster_spec c = {0};
    char line[160];
    snprintf(line, sizeof line, "gang=true period=15 admit=%s scale=%s score=locality", plugin,
             plugin);
    drv_sim *s = start(&c, &w, 1, 24000, line);
    until(s, 31);
    const drv_state *st = drv_sim_state(s);
    assert_int_equal(st->jobs[0].target[DRV_ROLE_WORKER], want_a);
    assert_int_equal(st->jobs[1].target[DRV_ROLE_WORKER], want_b);
    assert_int_equal(st->jobs[2].bound[DRV_ROLE_WORKER], 1);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

static void test_symmetric_release(void **unused)
{
    (void)unused;
    relief_split("autoscale", 3, 3);
    relief_split("dragon", 2, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symmetric_release),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
