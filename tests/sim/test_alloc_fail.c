/*
 * Failing allocations in the parsers (conf, cluster with its queues, workload, trace, profiles),
 * in a whole small simulation and in streamed ones (generated and CSV job sources): for every n up
 * to a bound, the nth allocation fails (drv_alloc_fail_at) and the call must return DRV_ENOMEM with
 * a message, leave its output as it was, and crash or leak nothing (the ASan build's leak checker
 * runs at exit). A case ends when allocation n never comes (drv_alloc_fail_pending): every
 * allocation of the call has been failed once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drover/conf.h"
#include "drover/jobsource.h"
#include "drover/policy.h"
#include "drover/trace.h"
#include "testutil.h"

/* One attempt at a parse or a run: 0, or a negative code with d filled. */
typedef int (*attempt_fn)(drv_diag *d);

/* Fails allocation n = 1, 2, ... until the call makes fewer than n allocations (at most max);
 * returns how many n failed cleanly. A call may absorb a failure and succeed (a sample
 * dropped): that is fine, and counted apart. */
static int fail_each(const char *what, attempt_fn f, int max)
{
    int clean = 0, absorbed = 0, n;
    for (n = 1; n <= max; n++) {
        drv_diag d = {{0}};
        drv_alloc_fail_at(n);
        int rc = f(&d);
        long pending = drv_alloc_fail_pending();
        drv_alloc_fail_at(0);
        if (pending > 0) { /* allocation n never came: every one has been failed */
            assert_int_equal(rc, 0);
            break;
        }
        if (rc == 0) {
            absorbed++;
            continue;
        }
        if (rc != DRV_ENOMEM || !strstr(d.msg, "out of memory"))
            fail_msg("%s: allocation %d failed: got %d '%s', want DRV_ENOMEM and 'out of memory'",
                     what, n, rc, d.msg);
        clean++;
    }
    assert_true(n <= max); /* the bound was large enough to see every allocation */
    print_message("%s: %d allocations: %d failed cleanly, %d absorbed\n", what, n - 1, clean,
                  absorbed);
    return clean;
}

static int conf_once(drv_diag *d)
{
    drv_conf_doc doc = {0};
    int rc = drv_conf_load_file(&doc, tu_path("examples/workload.yaml"), d);
    if (!rc)
        drv_conf_doc_fini(&doc);
    return rc;
}

static int cluster_once(drv_diag *d)
{
    drv_cluster_spec c = {0};
    int rc = drv_cluster_load(&c, tu_path("examples/cluster-hetero-8node.yaml"), d);
    if (!rc)
        drv_cluster_fini(&c);
    else
        assert_int_equal(c.n, 0); /* untouched */
    return rc;
}

static int workload_once(drv_diag *d)
{
    drv_workload w = {0};
    int rc = drv_workload_load(&w, tu_path("tests/fixtures/sim/two-jobs.yaml"), &tu_cat, 1, d);
    if (!rc)
        drv_workload_fini(&w);
    else
        assert_int_equal(w.n, 0);
    return rc;
}

static int generate_once(drv_diag *d)
{
    drv_workload w = {0};
    int rc = drv_workload_load(&w, tu_path("examples/workload.yaml"), &tu_cat, 1, d);
    if (!rc)
        drv_workload_fini(&w);
    return rc;
}

static int trace_once(drv_diag *d)
{
    drv_workload w = {0};
    drv_trace_opts o = {DRV_TRACE_AUTO, false, 1, &tu_calib, 4};
    int rc =
        drv_trace_load(&w, tu_path("tests/fixtures/trace/pollux-good.csv"), &tu_cat, &o, NULL, d);
    if (!rc)
        drv_workload_fini(&w);
    return rc;
}

static int profile_once(drv_diag *d)
{
    drv_profile *p = NULL;
    int n = 0;
    int rc = drv_profile_file_load(tu_path("tests/fixtures/policy/profiles.yaml"), &p, &n, d);
    if (!rc)
        drv_free(p);
    else
        assert_null(p);
    return rc;
}

/* The cluster and workload files (source-tree paths) run to the end with a built-in policy,
 * the invariants checked every cycle; *sum filled when the run succeeds. */
static int run_files(const char *cluster, const char *workload, const char *policy, bool placements,
                     drv_summary *sum, drv_diag *d)
{
    drv_cluster_spec c = {0};
    drv_workload w = {0};
    drv_profile p;
    drv_sim *s = NULL;
    int rc = drv_cluster_load(&c, tu_path("%s", cluster), d);
    if (!rc)
        rc = drv_workload_load(&w, tu_path("%s", workload), &tu_cat, 1, d);
    if (!rc)
        rc = drv_profile_builtin(policy, &p, d);
    drv_sim_config cfg = {.seed = 1, .check = true, .placements = placements};
    if (!rc)
        rc = drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, d);
    if (!rc)
        rc = drv_sim_run(s, d);
    if (!rc)
        drv_sim_summary(s, sum);
    drv_sim_free(s);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
    return rc;
}

/* Two nodes, two jobs, a gang policy and an elastic one, run to the end. */
static const char *sim_policy;
static int sim_once(drv_diag *d)
{
    drv_summary sum;
    int rc = run_files("tests/fixtures/sim/two-nodes.yaml", "tests/fixtures/sim/two-jobs.yaml",
                       sim_policy, true, &sum, d);
    if (!rc)
        assert_int_equal(sum.jobs, 2);
    return rc;
}

/* The tainted-pool example (labels, taints, selectors, affinity, tolerations) parsed and run
 * with the drover profile. */
static int constraints_once(drv_diag *d)
{
    drv_summary sum;
    int rc = run_files("examples/cluster-tainted.yaml", "examples/tainted-workload.yaml", "drover",
                       false, &sum, d);
    if (!rc)
        assert_int_equal(sum.jobs, 4);
    return rc;
}

/* Queues (the tenants' cluster: its queues parsed, entered into the state, each job's queue
 * mapped, per-queue results and fairness summed up) with the tainted example's jobs, which
 * all go to the default queue. */
static int queues_once(drv_diag *d)
{
    drv_summary sum;
    int rc = run_files("examples/cluster-tenants.yaml", "examples/tainted-workload.yaml",
                       "gang-fifo", false, &sum, d);
    if (!rc)
        assert_int_equal(sum.nqueues, 4); /* prod, research, batch, then default */
    return rc;
}

/* The clusters of the streamed runs, made before allocations fail (their makers cannot say). */
static drv_cluster_spec cpu_cluster, gpu_cluster;

/* A streamed run (drv_sim_new_stream) of jobs from src. */
static int stream_run(drv_jobsource *src, const drv_cluster_spec *c, bool calibrated, drv_diag *d)
{
    drv_profile p;
    drv_sim *s = NULL;
    int rc = drv_profile_builtin("drover", &p, d);
    drv_sim_config cfg = {.seed = 1, .check = true, .calib = calibrated ? &tu_calib : NULL};
    if (!rc)
        rc = drv_sim_new_stream(c, src, &tu_cat, &p, &cfg, &s, d);
    if (!rc)
        rc = drv_sim_run(s, d);
    if (!rc) {
        drv_summary sum;
        drv_sim_summary(s, &sum);
        assert_int_equal(sum.jobs, src->jobs);
    }
    drv_sim_free(s);
    return rc;
}

/* The generated scenario, streamed: the source, the run, every job read on the way. */
static int stream_generate_once(drv_diag *d)
{
    drv_genparams g;
    drv_genparams_default(&g, 1);
    g.jobs = 20;
    drv_jobsource src = {0};
    int rc = drv_jobsource_generate(&src, &g, &tu_cat, d);
    if (!rc)
        rc = stream_run(&src, &cpu_cluster, false, d);
    drv_jobsource_fini(&src);
    return rc;
}

/* A CSV trace read row by row: both passes, and the run. */
static int stream_csv_once(drv_diag *d)
{
    char file[4096];
    const char *dir = getenv("DROVER_BINARY_DIR");
    snprintf(file, sizeof file, "%s/test_alloc_fail_stream.csv", dir ? dir : ".");
    drv_trace_opts o = {DRV_TRACE_CSV, false, 1, &tu_calib, DRV_POLLUX_GPUS};
    drv_jobsource src = {0};
    int rc =
        drv_jobsource_csv(&src, file, "name=n,submit=t,gpus=g,duration=s,model=m", &tu_cat, &o, d);
    if (!rc)
        rc = stream_run(&src, &gpu_cluster, true, d);
    drv_jobsource_fini(&src);
    return rc;
}

static void test_streamed(void **unused)
{
    (void)unused;
    char file[4096];
    const char *dir = getenv("DROVER_BINARY_DIR");
    snprintf(file, sizeof file, "%s/test_alloc_fail_stream.csv", dir ? dir : ".");
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fprintf(f, "n,t,g,s,m\n");
    for (int i = 0; i < 12; i++)
        fprintf(f, "j%d,%d,%d,%d,%s\n", i, 60 * i, 1 << (i % 3), 600 + 300 * i,
                i % 2 ? "cifar10" : "bert");
    fclose(f);
    drv_cluster_default(&cpu_cluster);
    drv_cluster_pollux(&gpu_cluster, 4, DRV_POLLUX_GPUS);
    assert_true(fail_each("streamed generate", stream_generate_once, 20000) > 50);
    assert_true(fail_each("streamed csv", stream_csv_once, 20000) > 50);
    remove(file);
    drv_cluster_fini(&cpu_cluster);
    drv_cluster_fini(&gpu_cluster);
}

static void test_constraints(void **unused)
{
    (void)unused;
    assert_true(fail_each("constraints", constraints_once, 20000) > 50);
    assert_true(fail_each("queues", queues_once, 20000) > 50);
}

static void test_parsers(void **unused)
{
    (void)unused;
    assert_true(fail_each("conf", conf_once, 500) > 10);
    assert_true(fail_each("cluster", cluster_once, 500) > 10);
    assert_true(fail_each("workload", workload_once, 500) > 10);
    assert_true(fail_each("generate", generate_once, 500) > 5);
    assert_true(fail_each("trace", trace_once, 500) > 3);
    assert_true(fail_each("profiles", profile_once, 500) > 5);
}

static void test_whole_simulation(void **unused)
{
    (void)unused;
    static const char *const policies[] = {"gang-fifo", "drover"};
    for (int i = 0; i < 2; i++) {
        sim_policy = policies[i];
        assert_true(fail_each(policies[i], sim_once, 20000) > 50);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parsers),
        cmocka_unit_test(test_whole_simulation),
        cmocka_unit_test(test_constraints),
        cmocka_unit_test(test_streamed),
    };
    return cmocka_run_group_tests(tests, tu_models_setup, tu_models_teardown);
}
