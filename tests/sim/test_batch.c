/*
 * test_batch.c - runs spread over threads (src/sim/batch.c): the same results on one thread
 * and on several (a metamorphic check: two ways to the same answer), failures reported per
 * run, and the confidence interval against values worked out by hand.
 */
#include "drover/policy.h"
#include "drover/sim_batch.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

enum { NPOL = 3, NSEED = 3 };
static const char *const policies[NPOL] = {"k8s-default", "gang-fifo", "drover"};

typedef struct inputs {
    drv_catalogue cat;
    drv_cluster_spec cluster;
    drv_workload wl[NSEED];
    drv_profile prof[NPOL];
} inputs;

static void load(inputs *in)
{
    drv_diag d = {{0}};
    memset(in, 0, sizeof *in);
    assert_int_equal(drv_catalogue_builtin(&in->cat, &d), 0);
    drv_cluster_default(&in->cluster);
    for (int s = 0; s < NSEED; s++) {
        drv_genparams g;
        drv_genparams_default(&g, (uint64_t)s + 1);
        g.jobs = 20;
        assert_int_equal(drv_workload_generate(&in->wl[s], &g, &in->cat, &d), 0);
    }
    for (int p = 0; p < NPOL; p++)
        assert_int_equal(drv_profile_builtin(policies[p], &in->prof[p], &d), 0);
}

static void unload(inputs *in)
{
    for (int s = 0; s < NSEED; s++)
        drv_workload_fini(&in->wl[s]);
    drv_cluster_fini(&in->cluster);
    drv_catalogue_fini(&in->cat);
}

static void tasks_for(inputs *in, drv_sim_task *t)
{
    for (int p = 0; p < NPOL; p++)
        for (int s = 0; s < NSEED; s++)
            t[p * NSEED + s] = (drv_sim_task){.cluster = &in->cluster,
                                              .workload = &in->wl[s],
                                              .catalogue = &in->cat,
                                              .profile = &in->prof[p],
                                              .cfg = {.seed = (uint64_t)s + 1, .check = true}};
}

static void threads_do_not_change_results(void **state)
{
    (void)state;
    static inputs in;
    load(&in);
    drv_sim_task one[NPOL * NSEED], many[NPOL * NSEED];
    tasks_for(&in, one);
    tasks_for(&in, many);
    assert_int_equal(drv_sim_batch_run(one, NPOL * NSEED, 1), 0);
    assert_int_equal(drv_sim_batch_run(many, NPOL * NSEED, 4), 0);
    for (int i = 0; i < NPOL * NSEED; i++) {
        assert_int_equal(one[i].rc, 0);
        assert_string_equal(one[i].summary.policy, policies[i / NSEED]);
        assert_int_equal(one[i].summary.done, 20);
        assert_memory_equal(&one[i].summary, &many[i].summary, sizeof one[i].summary);
    }
    /* the seeds give different workloads, so their JCTs differ */
    assert_true(one[0].summary.avg_jct != one[1].summary.avg_jct);
    unload(&in);
}

static void a_failed_run_is_reported(void **state)
{
    (void)state;
    static inputs in;
    load(&in);
    drv_sim_task t[NPOL * NSEED];
    tasks_for(&in, t);
    t[4].out_dir = "/nonexistent/dir/for/drover/test"; /* its files cannot be written */
    int rc = drv_sim_batch_run(t, NPOL * NSEED, 2);
    assert_true(rc < 0);
    assert_int_equal(t[4].rc, rc);
    assert_true(strlen(t[4].d.msg) > 0);
    for (int i = 0; i < NPOL * NSEED; i++)
        if (i != 4)
            assert_int_equal(t[i].rc, 0);
    unload(&in);
}

static void interval_by_hand(void **state)
{
    (void)state;
    drv_summary r[3] = {{.avg_jct = 1}, {.avg_jct = 2}, {.avg_jct = 3}};
    snprintf(r[0].policy, sizeof r[0].policy, "p");
    drv_summary_ci ci;
    drv_summary_ci_compute(r, 3, &ci);
    assert_string_equal(ci.policy, "p");
    assert_int_equal(ci.runs, 3);
    assert_true(fabs(ci.m[DRV_CI_AVG_JCT].mean - 2) < 1e-12);
    /* s = 1, t(2) = 4.303: 4.303 / sqrt(3) */
    assert_true(fabs(ci.m[DRV_CI_AVG_JCT].half - 4.303 / sqrt(3)) < 1e-9);
    assert_true(ci.m[DRV_CI_MAKESPAN].half == 0); /* all equal */
    drv_summary_ci_compute(r, 1, &ci);
    assert_true(ci.m[DRV_CI_AVG_JCT].half == 0);
    /* t beyond the table: t(40) = 2.021, t(120) = 1.980 */
    assert_true(fabs(drv_t95(40) - 2.021) < 0.001);
    assert_true(fabs(drv_t95(120) - 1.980) < 0.001);
    assert_true(fabs(drv_t95(30) - 2.042) < 1e-9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threads_do_not_change_results),
        cmocka_unit_test(a_failed_run_is_reported),
        cmocka_unit_test(interval_by_hand),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
