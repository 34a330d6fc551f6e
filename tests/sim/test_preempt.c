/*
 * Scenario through the simulator: examples/preempt-4node.yaml on examples/cluster-4node.yaml
 * with the profiles of examples/preempt-profiles.yaml (invariants checked after every cycle, so
 * no gang is ever left half-bound). With `gang-preempt`, the urgent gang starts at once by
 * shrinking the elastic job and preempting one whole low-priority gang, which keeps its
 * progress, waits and finishes later; nothing else is touched. With `gang-priority` (no
 * preemption) the urgent gang waits for a job to end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drover/policy.h"
#include "drover/sim.h"
#include "testutil.h"

enum { LOW_A, LOW_B, LOW_ELASTIC, MID, URGENT, NJOBS };

static drv_cluster_spec cluster;
static drv_workload wl;
static drv_profile *profs;
static int nprofs;

static int setup(void **unused)
{
    drv_diag d = {{0}};
    if (tu_catalogue_setup(unused) ||
        drv_cluster_load(&cluster, tu_path("examples/cluster-4node.yaml"), &d) ||
        drv_workload_load(&wl, tu_path("examples/preempt-4node.yaml"), &tu_cat, 1, &d) ||
        drv_profile_file_load(tu_path("examples/preempt-profiles.yaml"), &profs, &nprofs, &d)) {
        fprintf(stderr, "%s\n", d.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **unused)
{
    drv_free(profs);
    drv_workload_fini(&wl);
    drv_cluster_fini(&cluster);
    tu_catalogue_teardown(unused);
    return 0;
}

static drv_sim *start(const char *policy)
{
    const drv_profile *p = NULL;
    for (int i = 0; i < nprofs; i++)
        if (strcmp(profs[i].name, policy) == 0)
            p = &profs[i];
    assert_non_null(p);
    assert_int_equal(wl.n, NJOBS);
    drv_sim_config cfg = {.seed = 1, .check = true};
    drv_sim *s = NULL;
    drv_diag d = {{0}};
    if (drv_sim_new(&cluster, &wl, &tu_cat, p, &cfg, &s, &d))
        fail_msg("%s", d.msg);
    return s;
}

static void run_until(drv_sim *s, double t)
{
    drv_diag d = {{0}};
    if (drv_sim_run_until(s, t, &d))
        fail_msg("%s", d.msg);
}

static int bound(const drv_state *st, int32_t job)
{
    int n = 0;
    for (int r = 0; r < DRV_NROLES; r++)
        n += st->jobs[job].bound[r];
    return n;
}

static void test_urgent_gang_preempts_one_whole_gang(void **unused)
{
    (void)unused;
    drv_sim *s = start("gang-preempt");
    run_until(s, 299);
    const drv_state *st = drv_sim_state(s);
    for (int j = LOW_A; j <= MID; j++)
        assert_int_equal(st->jobs[j].phase, DRV_JOB_RUNNING);
    run_until(s, 301);
    /* the cycle at 300: low-elastic at its minimum, low-a off the cluster with its progress */
    assert_int_equal(st->jobs[LOW_ELASTIC].target[DRV_ROLE_WORKER], 1);
    assert_int_equal(bound(st, LOW_ELASTIC), 2);
    assert_int_equal(bound(st, LOW_A), 0);
    assert_int_equal(st->jobs[LOW_A].phase, DRV_JOB_PENDING);
    double kept = st->jobs[LOW_A].steps;
    assert_true(kept > 0);
    assert_int_equal(bound(st, LOW_B), 4);
    assert_int_equal(bound(st, MID), 4);
    assert_int_equal(bound(st, URGENT), 6);
    run_until(s, 1400); /* low-b and mid have ended: low-a runs again from where it was */
    assert_int_equal(st->jobs[LOW_A].phase, DRV_JOB_RUNNING);
    assert_true(st->jobs[LOW_A].steps >= kept);
    drv_diag d = {{0}};
    assert_int_equal(drv_sim_run(s, &d), 0);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_int_equal(n, NJOBS);
    assert_true(r[URGENT].start <= 300 + 10);
    assert_int_equal(r[LOW_A].preemptions, 1);
    assert_true(r[LOW_A].restarts >= 1 && r[LOW_A].end > 0);
    for (int j = LOW_B; j <= URGENT; j++)
        assert_int_equal(r[j].preemptions, 0);
    drv_summary sum;
    drv_sim_summary(s, &sum);
    assert_int_equal(sum.preemptions, 1);
    drv_sim_free(s);
}

static void test_without_preemption_urgent_waits(void **unused)
{
    (void)unused;
    drv_sim *s = start("gang-priority");
    drv_diag d = {{0}};
    assert_int_equal(drv_sim_run(s, &d), 0);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_true(r[URGENT].start > 1000);
    for (int j = 0; j < NJOBS; j++)
        assert_int_equal(r[j].preemptions, 0);
    drv_sim_free(s);
}

/*
 * A priority class's minimum run time (a job's minRuntimeSeconds; on Kubernetes the class's
 * drover.dev/min-runtime-seconds): with 3600 s on every job below urgent's priority, none is a
 * victim at t = 300 (they started at 0), so urgent waits as without preemption and nothing is
 * preempted; read from a workload file the same way (tests/fixtures/sim/minruntime.yaml).
 */
static void test_class_min_runtime_protects(void **unused)
{
    (void)unused;
    for (int j = LOW_A; j <= MID; j++)
        wl.jobs[j].min_runtime = 3600;
    drv_sim *s = start("gang-preempt"); /* (it reads a job's spec when the job comes) */
    drv_diag d = {{0}};
    assert_int_equal(drv_sim_run(s, &d), 0);
    for (int j = LOW_A; j <= MID; j++)
        wl.jobs[j].min_runtime = 0;
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_true(r[URGENT].start > 1000);
    for (int j = 0; j < NJOBS; j++)
        assert_int_equal(r[j].preemptions, 0);
    drv_sim_free(s);
    drv_workload w = {0};
    if (drv_workload_load(&w, tu_path("tests/fixtures/sim/minruntime.yaml"), &tu_cat, 1, &d))
        fail_msg("%s", d.msg);
    assert_true(w.jobs[0].min_runtime == 600 && w.jobs[1].min_runtime == 0);
    drv_workload_fini(&w);
}

/*
 * Lost work (issue 29): examples/checkpoint-4node.yaml is the same scenario with every job
 * checkpointing each 240 s of running. At the cycle of t = 300, low-a (preempted) and
 * low-elastic (shrunk) each go back to their last checkpoint: low-a keeps fewer steps than in
 * the same run without intervals, and the run is charged (300 - run_start) mod 240 seconds on each
 * job's 8 CPUs, run_start read from the state before. gang-priority, which preempts nothing, is
 * charged nothing; the scenario without intervals shows no lost work at all.
 */
static void test_checkpoint_interval_charges_lost_work(void **unused)
{
    (void)unused;
    drv_workload ck = {0};
    drv_diag d = {{0}};
    if (drv_workload_load(&ck, tu_path("examples/checkpoint-4node.yaml"), &tu_cat, 1, &d))
        fail_msg("%s", d.msg);
    const drv_profile *p[2] = {NULL, NULL};
    for (int i = 0; i < nprofs; i++)
        for (int k = 0; k < 2; k++)
            if (!strcmp(profs[i].name, k ? "gang-priority" : "gang-preempt"))
                p[k] = &profs[i];
    assert_non_null(p[0]);
    assert_non_null(p[1]);
    drv_sim_config cfg = {.seed = 1, .check = true};
    drv_sim *s = NULL;
    if (drv_sim_new(&cluster, &ck, &tu_cat, p[0], &cfg, &s, &d))
        fail_msg("%s", d.msg);
    run_until(s, 299);
    const drv_state *st = drv_sim_state(s);
    double since_a = st->jobs[LOW_A].run_start, since_e = st->jobs[LOW_ELASTIC].run_start;
    assert_true(since_a >= 0 && since_e >= 0);
    run_until(s, 301);
    assert_int_equal(bound(st, LOW_A), 0);
    /* (the same run without intervals keeps low-a's progress at 300: this one has less) */
    drv_sim *plain = start("gang-preempt");
    run_until(plain, 301);
    assert_true(st->jobs[LOW_A].steps < drv_sim_state(plain)->jobs[LOW_A].steps);
    drv_sim_free(plain);
    assert_int_equal(drv_sim_run(s, &d), 0);
    drv_summary sum;
    drv_sim_summary(s, &sum);
    double want = (fmod(300 - since_a, 240) * 8 + fmod(300 - since_e, 240) * 8) / 3600;
    assert_true(sum.lost_modelled);
    assert_true(want > 0);
    assert_true(fabs(sum.lost_cpu_h - want) < 1e-9);
    assert_true(sum.lost_gpu_h == 0);
    drv_sim_free(s);
    if (drv_sim_new(&cluster, &ck, &tu_cat, p[1], &cfg, &s, &d))
        fail_msg("%s", d.msg);
    assert_int_equal(drv_sim_run(s, &d), 0);
    drv_sim_summary(s, &sum);
    assert_true(sum.lost_modelled && sum.lost_cpu_h == 0);
    drv_sim_free(s);
    s = start("gang-preempt"); /* (no checkpointSeconds: nothing modelled) */
    assert_int_equal(drv_sim_run(s, &d), 0);
    drv_sim_summary(s, &sum);
    assert_true(!sum.lost_modelled && sum.lost_cpu_h == 0);
    drv_sim_free(s);
    drv_workload_fini(&ck);
}

/*
 * Quiet cycles (docs/cycle.md): the plugin's wake is "never", as whether it preempts depends on
 * the cluster state alone. Skipping quiet cycles must then change nothing: the heterogeneous
 * mix (three priority classes, elastic jobs) under DRAGON with preemption gives every job the
 * same start, end, restarts, preemptions and workers, to the bit, as running every cycle.
 */
static void test_skipping_quiet_cycles_changes_nothing(void **unused)
{
    (void)unused;
    drv_diag d = {{0}};
    drv_cluster_spec c = {0};
    drv_workload w = {0};
    assert_int_equal(drv_cluster_load(&c, tu_path("examples/cluster-hetero-8node.yaml"), &d), 0);
    assert_int_equal(
        drv_workload_load(&w, tu_path("examples/mix-8node-60job.yaml"), &tu_cat, 1, &d), 0);
    drv_profile p;
    assert_int_equal(drv_profile_parse("dragon-preempt",
                                       "gang=true period=5 queue_order=priority admit=dragon "
                                       "scale=dragon score=locality*3,least-allocated "
                                       "migrate=preempt",
                                       &p, &d),
                     0);
    drv_sim *s[2];
    for (int tick = 0; tick < 2; tick++) {
        drv_sim_config cfg = {.seed = 1, .check = true, .tick = tick == 1};
        assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s[tick], &d), 0);
        assert_int_equal(drv_sim_run(s[tick], &d), 0);
    }
    int32_t n0, n1;
    const drv_jobresult *a = drv_sim_jobs(s[0], &n0), *b = drv_sim_jobs(s[1], &n1);
    assert_int_equal(n0, n1);
    int preempted = 0;
    for (int32_t i = 0; i < n0; i++) {
        assert_memory_equal(&a[i], &b[i], sizeof a[i]);
        preempted += a[i].preemptions;
    }
    assert_true(preempted > 0);
    drv_summary s0, s1;
    drv_sim_summary(s[0], &s0);
    drv_sim_summary(s[1], &s1);
    assert_true(s0.skipped > 0);
    assert_int_equal(s1.skipped, 0);
    for (int tick = 0; tick < 2; tick++)
        drv_sim_free(s[tick]);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_urgent_gang_preempts_one_whole_gang),
        cmocka_unit_test(test_without_preemption_urgent_waits),
        cmocka_unit_test(test_class_min_runtime_protects),
        cmocka_unit_test(test_checkpoint_interval_charges_lost_work),
        cmocka_unit_test(test_skipping_quiet_cycles_changes_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
