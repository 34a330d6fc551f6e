/*
 * Tests for src/sim: input files and their error messages, determinism, invariants on every
 * cycle, the event-driven clock, and scenarios asserting what each baseline policy is for.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "drover/policy.h"
#include "drover/sim.h"
#include "testutil.h"

/* Runs one built-in policy; returns the run's status and fills *sum. */
static int run(const drv_cluster_spec *c, const drv_workload *w, const char *policy, uint64_t seed,
               drv_summary *sum, drv_diag *d)
{
    drv_profile p;
    assert_int_equal(drv_profile_builtin(policy, &p, d), 0);
    drv_sim_config cfg = {.seed = seed, .check = true};
    drv_sim *s;
    int rc = drv_sim_new(c, w, &tu_cat, &p, &cfg, &s, d);
    if (rc)
        return rc;
    rc = drv_sim_run(s, d);
    if (!rc)
        drv_sim_summary(s, sum);
    drv_sim_free(s);
    return rc;
}

static void test_workload_errors(void **unused)
{
    (void)unused;
    struct {
        const char *file, *want;
    } cases[] = {
        {"bad-workload-cpu.yaml",
         "bad-workload-cpu.yaml:5: jobs[0].roles.worker.cpu: expected a CPU quantity such as 4, "
         "1.5 or 500m, found 'lots'"},
        {"bad-workload-model.yaml",
         "bad-workload-model.yaml:7: jobs[1].model: unknown model family 'alexnet'"},
        {"bad-workload-typo.yaml", "bad-workload-typo.yaml:4: jobs[0]: unknown field 'sumbit'"},
        {"bad-workload-bounds.yaml", "expected min <= replicas <= max, found 5, 4, 8"},
        {"bad-yaml.yaml", "bad-yaml.yaml:4:"},
        {"missing.yaml", "missing.yaml: cannot open"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        drv_workload w = {0};
        drv_diag d = {{0}};
        assert_int_not_equal(
            drv_workload_load(&w, tu_path("tests/fixtures/sim/%s", cases[i].file), &tu_cat, 1, &d),
            0);
        if (!strstr(d.msg, cases[i].want))
            fail_msg("%s: got '%s', want '%s'", cases[i].file, d.msg, cases[i].want);
        assert_int_equal(w.n, 0);
    }
}

static void test_cluster_errors_and_counts(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0};
    drv_diag d = {{0}};
    assert_int_equal(drv_cluster_load(&c, tu_path("tests/fixtures/sim/bad-cluster-mem.yaml"), &d),
                     DRV_EINVAL);
    assert_non_null(strstr(d.msg, "bad-cluster-mem.yaml:4: nodes[0].memory: expected a memory"));
    assert_int_equal(drv_cluster_load(&c, tu_path("tests/fixtures/sim/two-nodes.yaml"), &d), 0);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.nodes[1].name, "n-1");
    assert_int_equal(c.nodes[1].alloc.cpu, 32000);
    drv_cluster_fini(&c);
    /* kubernetes.io/hostname as a level needs no label: each node is its own domain */
    assert_int_equal(drv_cluster_load(&c, tu_path("tests/fixtures/sim/cluster-hostname.yaml"), &d),
                     0);
    assert_int_equal(c.ntopo, 2);
    assert_string_equal(c.topo[1], "kubernetes.io/hostname");
    drv_cluster_fini(&c);
}

static void test_job_that_fits_nowhere_is_refused(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_cluster_spec c;
    drv_diag d = {{0}};
    drv_summary s;
    assert_int_equal(
        drv_workload_load(&w, tu_path("tests/fixtures/sim/too-big.yaml"), &tu_cat, 1, &d), 0);
    drv_cluster_default(&c);
    assert_int_equal(run(&c, &w, "gang-fifo", 1, &s, &d), DRV_EINVAL);
    assert_string_equal(d.msg, "job whale: worker pod (cpu 64, memory 8Gi, gpu 0) fits on no node "
                               "of the cluster (largest: cpu 32, memory 128Gi, gpu 0)");
    /* Named by file and line when the caller says where the jobs came from. */
    drv_profile p;
    assert_int_equal(drv_profile_builtin("gang-fifo", &p, &d), 0);
    drv_sim_config cfg = {.seed = 1, .workload_file = "too-big.yaml"};
    drv_sim *sim = NULL;
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &sim, &d), DRV_EINVAL);
    assert_null(sim);
    assert_string_equal(d.msg, "too-big.yaml:2: job whale: worker pod (cpu 64, memory 8Gi, gpu 0) "
                               "fits on no node of the cluster (largest: cpu 32, memory 128Gi, "
                               "gpu 0)");
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* Two nodes of 5e18 bytes each wrapped the capacity sum negative and no job ever ran: such a
 * quantity is now refused where it is read, naming file, line and field. */
static void test_huge_quantities_refused(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0};
    drv_diag d = {{0}};
    char path[] = "/tmp/drover-test-huge-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("nodes:\n  - {name: a, count: 2, cpu: 4, memory: 5e18}\n", f);
    fclose(f);
    assert_int_equal(drv_cluster_load(&c, path, &d), DRV_ERANGE);
    char want[512];
    snprintf(want, sizeof want,
             "%s:2: nodes[0].memory: 5e18 is more than the largest memory quantity accepted, "
             "1024Ti",
             path);
    assert_string_equal(d.msg, want);
    f = fopen(path, "w");
    fputs("nodes:\n  - {name: a, cpu: 1e30, memory: 1Gi}\n", f);
    fclose(f);
    assert_int_equal(drv_cluster_load(&c, path, &d), DRV_ERANGE);
    snprintf(want, sizeof want,
             "%s:2: nodes[0].cpu: 1e30 is more than the largest CPU quantity accepted, 1000000000",
             path);
    assert_string_equal(d.msg, want);
    /* many nodes of the largest memory: refused before their sum leaves int64 */
    f = fopen(path, "w");
    fputs("nodes:\n  - {name: a, count: 5000, cpu: 1, memory: 1024Ti}\n", f);
    fclose(f);
    assert_int_equal(drv_cluster_load(&c, path, &d), DRV_ERANGE);
    snprintf(want, sizeof want,
             "%s:2: nodes[0]: the cluster grows past 100000 nodes or 4194304Ti of memory in all",
             path);
    assert_string_equal(d.msg, want);
    /* 100,000 nodes from one line load (the name check scanned every earlier name: 38 s) */
    f = fopen(path, "w");
    fputs("nodes:\n  - {name: a, count: 100000, cpu: 1, memory: 1Gi}\n  - {name: a-7, cpu: 1, "
          "memory: 1Gi}\n",
          f);
    fclose(f);
    assert_int_equal(drv_cluster_load(&c, path, &d), DRV_ERANGE);
    f = fopen(path, "w");
    fputs("nodes:\n  - {name: a, count: 99999, cpu: 1, memory: 1Gi}\n  - {name: a-7, cpu: 1, "
          "memory: 1Gi}\n",
          f);
    fclose(f);
    assert_int_equal(drv_cluster_load(&c, path, &d), DRV_EEXIST);
    snprintf(want, sizeof want, "%s:3: nodes[1].name: node 'a-7' defined twice", path);
    assert_string_equal(d.msg, want);
    f = fopen(path, "w");
    fputs("nodes:\n  - {name: a, count: 100000, cpu: 1, memory: 1Gi}\n", f);
    fclose(f);
    assert_int_equal(drv_cluster_load(&c, path, &d), 0);
    assert_int_equal(c.n, 100000);
    drv_cluster_fini(&c);
    remove(path);
}

/* gpuType (issue 27): Sia's example cluster reads as 64 GPUs of three types, each node's type
 * its label nvidia.com/gpu.product; an empty or malformed type, or one that conflicts with the
 * node's own label, is refused with file, line and field. */
static void test_cluster_gpu_types(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0};
    drv_diag d = {{0}};
    assert_int_equal(drv_cluster_load(&c, tu_path("examples/cluster-sia-hetero.yaml"), &d), 0);
    assert_true(c.gpu_types);
    assert_int_equal(c.n, 11);
    int64_t gpus = 0;
    int per_type[3] = {0};
    const char *const names[3] = {"aws", "rtx", "dgx-ext"};
    int32_t key = drv_strtab_intern(c.names, DRV_GPU_TYPE_LABEL);
    for (int32_t i = 0; i < c.n; i++) {
        gpus += c.nodes[i].alloc.gpu;
        const drv_nodeclass *k = &c.classes[c.nodes[i].node_class];
        assert_int_equal(k->nlabels, 1);
        assert_int_equal(k->labels[0].key, key);
        for (int t = 0; t < 3; t++)
            per_type[t] += strcmp(drv_strtab_str(c.names, k->labels[0].value), names[t]) == 0;
    }
    assert_int_equal(gpus, 64);
    assert_int_equal(per_type[0], 6);
    assert_int_equal(per_type[1], 3);
    assert_int_equal(per_type[2], 2);
    drv_cluster_fini(&c);
    const char *path = "gpu-types-test.yaml";
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"nodes:\n  - {name: a, cpu: 1, memory: 1Gi, gpu: 4, gpuType: \"\"}\n",
         ":2: nodes[0].gpuType: expected a name"},
        {"nodes:\n  - {name: a, cpu: 1, memory: 1Gi, gpu: 4, gpuType: \"A 100\"}\n",
         ":2: nodes[0].gpuType: expected a name"},
        {"nodes:\n  - {name: a, cpu: 1, memory: 1Gi, gpu: 4, gpuType: A100,\n"
         "     labels: {nvidia.com/gpu.product: T4}}\n",
         ":2: nodes[0].gpuType: 'A100' conflicts with its label nvidia.com/gpu.product: 'T4'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(path, "w");
        fputs(bad[i].text, f);
        fclose(f);
        assert_int_equal(drv_cluster_load(&c, path, &d), DRV_EINVAL);
        assert_non_null(strstr(d.msg, bad[i].want));
        assert_int_equal(strncmp(d.msg, path, strlen(path)), 0);
    }
    remove(path);
}

/* The crafted two-job workload: k8s-default deadlocks, gang-fifo finishes both. */
static void test_k8s_default_deadlocks_gang_does_not(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_cluster_spec c = {0};
    drv_diag d = {{0}};
    assert_int_equal(
        drv_workload_load(&w, tu_path("tests/fixtures/sim/two-jobs.yaml"), &tu_cat, 1, &d), 0);
    assert_int_equal(drv_cluster_load(&c, tu_path("tests/fixtures/sim/two-nodes.yaml"), &d), 0);
    drv_summary k, g;
    assert_int_equal(run(&c, &w, "k8s-default", 1, &k, &d), 0);
    assert_int_equal(run(&c, &w, "gang-fifo", 1, &g, &d), 0);
    assert_int_equal(k.done, 0);
    assert_int_equal(k.stuck, 2);
    assert_true(k.stuck_cpu > 0.5); /* the half-placed pods hold most of the cluster */
    assert_int_equal(g.done, 2);
    assert_true(g.cpu_wasted == 0);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* A job alone: its completion time is computable by hand from the model (a second way to
 * reach the simulator's answer). */
static void test_single_job_matches_model(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_cluster_spec c;
    drv_diag d = {{0}};
    drv_genparams g = {.jobs = 1, .mean_interarrival = 1, .seed = 3};
    assert_int_equal(drv_workload_generate(&w, &g, &tu_cat, &d), 0);
    w.jobs[0].submit = 10.5;
    drv_cluster_default(&c);
    drv_summary s;
    assert_int_equal(run(&c, &w, "gang-fifo", 1, &s, &d), 0);
    assert_int_equal(s.done, 1);
    /* Place the job as gang-fifo's least-allocated spread does: PS on node-0, then workers
     * spread one per emptiest node (node-1, node-2, ...), more PS likewise. */
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    for (int32_t i = 0; i < c.n; i++)
        assert_int_equal(drv_state_add_node(&st, c.nodes[i].name, c.nodes[i].alloc, "", "", NULL),
                         0);
    drv_job t;
    memset(&t, 0, sizeof t);
    memcpy(t.role, w.jobs[0].role, sizeof t.role);
    int32_t j;
    assert_int_equal(drv_state_add_job(&st, &t, &j), 0);
    int32_t node = 0;
    for (int r = 0; r < DRV_NROLES; r++)
        for (int32_t i = 0; i < t.role[r].replicas; i++)
            drv_state_bind(&st, drv_job_pod(&st, j, r, i), node++ % c.n);
    const drv_family *f = &tu_cat.v[w.jobs[0].model];
    drv_step step = drv_model_step(f, &c.net, &st, j);
    double expect = 10.5 + c.timing.pod_start + drv_steps_to_loss(f, f->target_loss) / step.rate;
    /* Cycles run on whole seconds: the job is placed at t=11, not 10.5. */
    expect += 0.5;
    if (fabs(s.makespan + 10.5 - expect) > 1e-6)
        fail_msg("simulated end %.6f, expected by hand %.6f", s.makespan + 10.5, expect);
    drv_state_fini(&st);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

static char *run_json(uint64_t seed)
{
    drv_workload w = {0};
    drv_cluster_spec c;
    drv_diag d = {{0}};
    drv_genparams g;
    drv_genparams_default(&g, seed);
    assert_int_equal(drv_workload_generate(&w, &g, &tu_cat, &d), 0);
    drv_cluster_default(&c);
    drv_summary s[2];
    assert_int_equal(run(&c, &w, "k8s-default", seed, &s[0], &d), 0);
    assert_int_equal(run(&c, &w, "gang-fifo", seed, &s[1], &d), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(drv_report_json(f, s, 2), 0);
    fclose(f);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
    return buf;
}

static void test_determinism(void **unused)
{
    (void)unused;
    char *a = run_json(7), *b = run_json(7), *c = run_json(8);
    assert_string_equal(a, b);
    assert_string_not_equal(a, c); /* the seed matters */
    free(a);
    free(b);
    free(c);
}

/* Every built-in policy on 400 jobs, checked: each finished job is released from the state as
 * soon as it is done (its memory returned page by page, so that any plugin or simulator read of
 * a finished job's id faults in these checked runs), nothing else is, and the per-job results
 * are those of a run that ticks every period. */
static void test_finished_jobs_are_released(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_cluster_spec c;
    drv_diag d = {{0}};
    drv_genparams g;
    drv_genparams_default(&g, 3);
    g.jobs = 400;
    assert_int_equal(drv_workload_generate(&w, &g, &tu_cat, &d), 0);
    drv_cluster_default(&c);
    for (int i = 0; i < drv_profile_builtin_count(); i++) {
        drv_profile p;
        assert_int_equal(drv_profile_builtin(drv_profile_builtin_name(i), &p, &d), 0);
        drv_sim *s[2];
        for (int tick = 0; tick < 2; tick++) {
            drv_sim_config cfg = {.seed = 3, .check = true, .tick = tick};
            assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s[tick], &d), 0);
            if (drv_sim_run(s[tick], &d) != 0)
                fail_msg("%s: %s", drv_profile_builtin_name(i), d.msg);
        }
        drv_summary sum;
        drv_sim_summary(s[0], &sum);
        const drv_state *st = drv_sim_state(s[0]);
        assert_true(sum.done > 0);
        assert_int_equal(st->nreleased, sum.done);
        assert_true(st->job_pages.returned > 0);
        int32_t n0, n1;
        const drv_jobresult *r0 = drv_sim_jobs(s[0], &n0), *r1 = drv_sim_jobs(s[1], &n1);
        assert_int_equal(n0, n1);
        for (int32_t j = 0; j < n0; j++) {
            assert_true(drv_state_job_released(st, j) == (r0[j].end >= 0));
            assert_memory_equal(&r0[j], &r1[j], sizeof r0[j]);
        }
        drv_sim_free(s[0]);
        drv_sim_free(s[1]);
    }
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* The default scenario under both baselines with the invariant checker on every cycle. */
static void test_default_scenario_invariants(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_cluster_spec c;
    drv_diag d = {{0}};
    drv_genparams g;
    drv_genparams_default(&g, 1);
    assert_int_equal(drv_workload_generate(&w, &g, &tu_cat, &d), 0);
    drv_cluster_default(&c);
    for (int i = 0; i < drv_profile_builtin_count(); i++) {
        drv_summary s;
        int rc = run(&c, &w, drv_profile_builtin_name(i), 1, &s, &d);
        if (rc)
            fail_msg("%s: %s", drv_profile_builtin_name(i), d.msg);
        assert_int_equal(s.jobs, 60);
        assert_true(s.cycles > 0);
        assert_true(s.cpu_util > 0 && s.cpu_util <= 1.0);
    }
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* Two jobs a day apart: an event-driven clock runs a handful of cycles, not 86,400. */
static void test_idle_time_costs_nothing(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_cluster_spec c;
    drv_diag d = {{0}};
    drv_genparams g = {.jobs = 2, .mean_interarrival = 1, .seed = 1};
    assert_int_equal(drv_workload_generate(&w, &g, &tu_cat, &d), 0);
    w.jobs[1].submit = 86400;
    drv_cluster_default(&c);
    drv_summary s;
    assert_int_equal(run(&c, &w, "gang-fifo", 1, &s, &d), 0);
    assert_int_equal(s.done, 2);
    assert_true(s.cycles <= 6);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* The built-in scenario of `drover sim` with seed 4. */
static void default_scenario(drv_workload *w, drv_cluster_spec *c)
{
    drv_diag d = {{0}};
    drv_genparams g;
    drv_genparams_default(&g, 4);
    assert_int_equal(drv_workload_generate(w, &g, &tu_cat, &d), 0);
    drv_cluster_default(c);
}

/* Runs profile p on (c, w) twice - skipping quiet cycles, and with a cycle every period
 * (cfg.tick) - and requires the same outcome for every job, to the last bit. Returns the
 * summaries (0: skipping, 1: ticking). */
static void same_both_ways(const drv_cluster_spec *c, const drv_workload *w, const drv_profile *p,
                           drv_summary *sum)
{
    drv_diag d = {{0}};
    drv_jobresult *res[2] = {NULL, NULL};
    int32_t n[2] = {0, 0};
    for (int tick = 0; tick < 2; tick++) {
        drv_sim_config cfg = {.seed = 4, .check = true, .tick = tick};
        drv_sim *s;
        assert_int_equal(drv_sim_new(c, w, &tu_cat, p, &cfg, &s, &d), 0);
        assert_int_equal(drv_sim_run(s, &d), 0);
        drv_sim_summary(s, &sum[tick]);
        const drv_jobresult *r = drv_sim_jobs(s, &n[tick]);
        res[tick] = malloc(sizeof *r * (size_t)(n[tick] + 1));
        assert_non_null(res[tick]);
        memcpy(res[tick], r, sizeof *r * (size_t)n[tick]);
        drv_sim_free(s);
    }
    assert_int_equal(n[0], n[1]);
    for (int32_t i = 0; i < n[0]; i++) {
        const drv_jobresult *a = &res[0][i], *b = &res[1][i];
        if (a->start != b->start || a->end != b->end || a->restarts != b->restarts ||
            a->migrations != b->migrations || a->preemptions != b->preemptions ||
            a->workers != b->workers)
            fail_msg("%s: job %d differs: start %.17g/%.17g end %.17g/%.17g restarts %d/%d "
                     "migrations %d/%d workers %d/%d",
                     p->name, (int)i, a->start, b->start, a->end, b->end, (int)a->restarts,
                     (int)b->restarts, (int)a->migrations, (int)b->migrations, (int)a->workers,
                     (int)b->workers);
    }
    assert_int_equal(sum[0].decisions, sum[1].decisions);
    assert_int_equal(sum[0].done, sum[1].done);
    assert_true(sum[0].makespan == sum[1].makespan);
    assert_int_equal(sum[1].skipped, 0);
    /* Utilisation is integrated over more, shorter intervals when ticking: equal up to
     * floating-point rounding. */
    assert_true(fabs(sum[0].cpu_useful - sum[1].cpu_useful) <= 1e-9 * sum[0].cpu_useful);
    free(res[0]);
    free(res[1]);
}

/* Event-driven cycles, and skipped quiet ones, must decide exactly what a cycle every period
 * decides: not running a cycle that would decide nothing may not change any outcome (two ways,
 * one answer). */
static void test_event_driven_equals_ticking(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_cluster_spec c;
    drv_diag d = {{0}};
    default_scenario(&w, &c);
    int fewer = 0, skipping = 0;
    for (int i = 0; i < drv_profile_builtin_count(); i++) {
        drv_profile p;
        assert_int_equal(drv_profile_builtin(drv_profile_builtin_name(i), &p, &d), 0);
        drv_summary sum[2];
        same_both_ways(&c, &w, &p, sum);
        /* Every cycle run when skipping is run when ticking too. */
        assert_true(sum[1].cycles >= sum[0].cycles);
        assert_true(sum[1].cycles == sum[0].cycles + sum[0].skipped || sum[0].skipped == 0);
        fewer += sum[1].cycles > sum[0].cycles;
        skipping += sum[0].skipped > 0;
        if (strcmp(p.name, "drover") == 0 || strcmp(p.name, "dragon") == 0)
            assert_true(sum[0].skipped > sum[0].cycles); /* their ticks are mostly quiet */
    }
    assert_true(fewer >= 4); /* k8s-default and gang-fifo are event-driven; dragon and drover
                                skip quiet ticks */
    assert_true(skipping >= 3);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* The same with SpeCon at work: a converging job migrates off a contended node (the scenario
 * of tests/scenario/test_specon.c) - its growth classes come from samples that, when skipping,
 * were taken late, at their own times. */
static void test_skipping_keeps_migrations(void **unused)
{
    (void)unused;
    drv_diag d = {{0}};
    drv_jobspec v[3];
    const char *names[3] = {"a", "c", "b"}, *models[3] = {"lenet", "birnn", "lenet"};
    /* C nearly done when B arrives, so moving A beside it pays (test_specon.c). */
    double submit[3] = {0, 0, 600}, steps[3] = {1e6, 1700, 1e5};
    int64_t limit[3] = {8000, 4000, 8000};
    for (int i = 0; i < 3; i++) {
        memset(&v[i], 0, sizeof v[i]);
        snprintf(v[i].name, sizeof v[i].name, "%s", names[i]);
        snprintf(v[i].user, sizeof v[i].user, "u");
        snprintf(v[i].queue, sizeof v[i].queue, "q");
        v[i].user_priority = 1;
        v[i].submit = submit[i];
        v[i].model = drv_catalogue_find(&tu_cat, models[i]);
        assert_true(v[i].model >= 0);
        v[i].role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {3000, 2LL << 30, 0}, limit[i]};
        v[i].max_steps = steps[i];
    }
    drv_workload w = {.jobs = v, .n = 3, .cap = 3};
    drv_cluster_spec c = {0};
    assert_int_equal(drv_cluster_uniform(&c, 2, (drv_res){8000, 64LL << 30, 0}), 0);
    const char *lines[] = {
        "gang=false period=10 admit=pod-by-pod score=least-allocated migrate=specon",
        "gang=false period=5 admit=pod-by-pod score=least-allocated migrate=specon(interval=20)",
        "gang=true period=5 queue_order=priority admit=dragon(grow_min_left=900) scale=dragon "
        "score=locality*4,ps-anti-affinity,least-allocated migrate=specon",
    };
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        drv_profile p;
        assert_int_equal(drv_profile_parse("t", lines[i], &p, &d), 0);
        drv_summary sum[2];
        same_both_ways(&c, &w, &p, sum);
        if (i != 1) /* a 20 s interval sees A converge too late for the gain to pay */
            assert_true(sum[0].migrations >= 1);
        assert_true(sum[0].skipped > sum[0].cycles);
    }
    drv_cluster_fini(&c);
}

/*
 * A start the scheduler is blind to is not a change (docs/cycle.md, "Quiet cycles"), but one it
 * is not blind to is: an elastic job admitted at 1 of up to 4 workers is grown by DRAGON after
 * it starts, and its containers take longer (30 s) than the quiet period (10 s), so the start
 * is the only thing left that makes the growth cycle run (the job arriving at 4000 s would
 * make a later one run, too late).
 */
static void test_starts_that_matter_run_a_cycle(void **unused)
{
    (void)unused;
    drv_diag d = {{0}};
    drv_jobspec v[2];
    for (int i = 0; i < 2; i++) {
        memset(&v[i], 0, sizeof v[i]);
        snprintf(v[i].name, sizeof v[i].name, "%c", 'a' + i);
        snprintf(v[i].user, sizeof v[i].user, "u");
        snprintf(v[i].queue, sizeof v[i].queue, "q");
        v[i].model = drv_catalogue_find(&tu_cat, "lenet");
        v[i].max_steps = 2e5;
    }
    v[0].role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 4, {2000, 1LL << 30, 0}, 2000};
    v[1].role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {1000, 1LL << 30, 0}, 1000};
    v[1].submit = 4000;
    drv_workload w = {.jobs = v, .n = 2, .cap = 2};
    drv_cluster_spec c = {0};
    assert_int_equal(drv_cluster_uniform(&c, 1, (drv_res){16000, 64LL << 30, 0}), 0);
    c.timing.pod_start = 30;
    drv_profile p;
    assert_int_equal(
        drv_profile_parse("t", "gang=true period=5 admit=dragon(quiet=10) scale=dragon", &p, &d),
        0);
    drv_summary sum[2];
    same_both_ways(&c, &w, &p, sum);
    drv_sim_config cfg = {.seed = 4};
    drv_sim *s;
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run(s, &d), 0);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_int_equal(r[0].workers, 4); /* grown after its start */
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

/* Arrivals enter the event heap one at a time: a workload listed out of submission order, with
 * a tie, still arrives in (submit, listing) order - each job here starts at its arrival, as the
 * cluster is empty by then - and the run ends with every job done. */
static void test_arrivals_in_submit_order(void **unused)
{
    (void)unused;
    drv_diag d = {{0}};
    enum { N = 5 };
    double submit[N] = {4000, 1000, 3000, 1000, 0};
    drv_jobspec v[N];
    for (int i = 0; i < N; i++) {
        memset(&v[i], 0, sizeof v[i]);
        snprintf(v[i].name, sizeof v[i].name, "j%d", i);
        snprintf(v[i].user, sizeof v[i].user, "u");
        snprintf(v[i].queue, sizeof v[i].queue, "q");
        v[i].model = drv_catalogue_find(&tu_cat, "lenet");
        v[i].max_steps = 1000;
        v[i].submit = submit[i];
        v[i].role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {1000, 1LL << 30, 0}, 1000};
    }
    drv_workload w = {.jobs = v, .n = N, .cap = N};
    drv_cluster_spec c = {0};
    assert_int_equal(drv_cluster_uniform(&c, 1, (drv_res){8000, 64LL << 30, 0}), 0);
    drv_profile p;
    assert_int_equal(drv_profile_builtin("gang-fifo", &p, &d), 0);
    drv_sim_config cfg = {.seed = 4, .check = true};
    drv_sim *s;
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run(s, &d), 0);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_int_equal(n, N);
    for (int i = 0; i < N; i++) {
        assert_true(r[i].submit == submit[i]);
        assert_true(r[i].start >= submit[i] && r[i].start < submit[i] + 60);
        assert_true(r[i].end > r[i].start);
    }
    drv_summary sum;
    drv_sim_summary(s, &sum);
    assert_int_equal(sum.done, N);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

/* Progress samples are drawn late (when read, or before a job's rate changes) but must be what a
 * sample at every cycle would have been: in each running job's ring, times go forward by the
 * period between cycle samples and steps never go back. Checked every 5 simulated minutes. */
static void test_lazy_samples_are_in_order(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_cluster_spec c;
    drv_diag d = {{0}};
    default_scenario(&w, &c);
    const char *names[] = {"drover", "flowcon", "specon"};
    for (int k = 0; k < 3; k++) {
        drv_profile p;
        assert_int_equal(drv_profile_builtin(names[k], &p, &d), 0);
        drv_sim_config cfg = {.seed = 4};
        drv_sim *s;
        assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
        int64_t seen = 0;
        for (double t = 300; t <= 3 * 3600; t += 300) {
            assert_int_equal(drv_sim_run_until(s, t, &d), 0);
            const drv_state *st = drv_sim_state(s);
            DRV_FOR_LIVE(st, j)
            {
                const drv_job *jb = &st->jobs[j];
                if (jb->phase != DRV_JOB_RUNNING)
                    continue;
                for (int i = 0; i + 1 < jb->nhist; i++) {
                    const drv_sample *a = drv_job_sample(jb, i + 1), *b = drv_job_sample(jb, i);
                    assert_true(a->t <= b->t);
                    if (b->steps < a->steps)
                        fail_msg("%s: job %d: steps %.17g at t=%g after %.17g at t=%g", names[k],
                                 (int)j, b->steps, b->t, a->steps, a->t);
                    seen++;
                }
                if (jb->nhist > 0)
                    assert_true(drv_job_sample(jb, 0)->t <= t);
            }
        }
        assert_true(seen > 100); /* the check looked at something */
        drv_sim_free(s);
    }
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* A 45-byte `generate: {jobs: 10000000}` asked for 3.3 GB: the limit is stated and refused. */
static void test_generate_limit(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    char path[] = "/tmp/drover-test-gen-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("generate: {jobs: 10000000}\n", f);
    fclose(f);
    assert_int_equal(drv_workload_load(&w, path, &tu_cat, 1, &d), DRV_ERANGE);
    char want[512];
    snprintf(want, sizeof want, "%s:1: generate.jobs: 10000000 is out of range [1, 100000]", path);
    assert_string_equal(d.msg, want);
    assert_int_equal(w.n, 0);
    remove(path);
}

/* examples/mix-seeded.yaml: `generate.maxSteps` caps each job at its family's steps (the fixed
 * mix's caps: vgg16 1500, ...), and the workload follows the seed: seeds 1 and 2 draw different
 * arrivals. Fails without the caps (every max_steps 0). */
static void test_generate_step_caps(void **unused)
{
    (void)unused;
    drv_workload w[2] = {{0}, {0}};
    drv_diag d = {{0}};
    for (int k = 0; k < 2; k++)
        assert_int_equal(
            drv_workload_load(&w[k], tu_path("examples/mix-seeded.yaml"), &tu_cat, 1 + k, &d), 0);
    static const struct {
        const char *family;
        double steps;
    } caps[] = {{"resnet50", 2500}, {"vgg16", 1500}, {"inception3", 2500}, {"lenet", 20000},
                {"lstm", 6000},     {"gru", 6000},   {"birnn", 5000}};
    int differ = 0;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(w[k].n, 60);
        for (int32_t i = 0; i < w[k].n; i++) {
            const drv_jobspec *j = &w[k].jobs[i];
            double want = -1;
            for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++)
                if (strcmp(tu_cat.v[j->model].name, caps[c].family) == 0)
                    want = caps[c].steps;
            assert_true(want > 0);
            assert_true(j->max_steps == want);
            differ += k == 1 && j->submit != w[0].jobs[i].submit;
        }
    }
    assert_true(differ > 50);
    drv_workload_fini(&w[0]);
    drv_workload_fini(&w[1]);
}

/* --workload OUT/summary.json --out OUT overwrote its own input. */
static void test_out_dir_holding_an_input_is_refused(void **unused)
{
    (void)unused;
    char dir[] = "/tmp/drover-test-out-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char in[600], other[600], want[1400];
    snprintf(in, sizeof in, "%s/summary.json", dir);
    snprintf(other, sizeof other, "%s/w.yaml", dir);
    fclose(fopen(in, "w"));
    fclose(fopen(other, "w"));
    drv_diag d = {{0}};
    const char *inputs[] = {NULL, other, in};
    assert_int_equal(drv_sim_check_out(dir, inputs, 3, &d), DRV_EINVAL);
    snprintf(want, sizeof want,
             "--out %s: the run would overwrite its own input %s (it writes summary.* there); "
             "choose another directory",
             dir, in);
    assert_string_equal(d.msg, want);
    /* the same directory named another way */
    char alias[700];
    snprintf(alias, sizeof alias, "%s/../%s", dir, strrchr(dir, '/') + 1);
    assert_int_equal(drv_sim_check_out(alias, inputs, 3, &d), DRV_EINVAL);
    /* a file the run does not write, and an out directory not made yet, are fine */
    assert_int_equal(drv_sim_check_out(dir, inputs, 2, &d), 0);
    snprintf(alias, sizeof alias, "%s/new", dir);
    assert_int_equal(drv_sim_check_out(alias, inputs, 3, &d), 0);
    remove(in);
    remove(other);
    rmdir(dir);
}

static char warned[2048];
static void keep_log(enum drv_log_level lvl, const char *msg, void *arg)
{
    (void)arg;
    if (lvl != DRV_LOG_WARN)
        return;
    strncat(warned, msg, sizeof warned - strlen(warned) - 2);
    strcat(warned, "\n");
}

/* Jobs that will never run (submitted past the horizon, or needing more than the whole cluster
 * at their smallest) were silently never run: each kind is warned about once, with a count. */
static void test_never_run_jobs_are_warned(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0};
    assert_int_equal(drv_cluster_uniform(&c, 2, (drv_res){4000, 16LL << 30, 0}), 0);
    c.timing.horizon = 1000;
    drv_jobspec v[3];
    memset(v, 0, sizeof v);
    for (int i = 0; i < 3; i++) {
        snprintf(v[i].name, sizeof v[i].name, "j%d", i);
        v[i].model = 0;
        v[i].target_loss = tu_cat.v[0].target_loss;
        v[i].role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {1000, 1LL << 30, 0}, 1000};
    }
    v[1].submit = 5000;                                                               /* late */
    v[2].role[DRV_ROLE_WORKER] = (drv_rolespec){3, 3, 3, {4000, 1LL << 30, 0}, 4000}; /* 12 > 8 */
    drv_workload w = {.jobs = v, .n = 3, .cap = 3};
    drv_profile p;
    drv_diag d;
    assert_int_equal(drv_profile_builtin("gang-fifo", &p, &d), 0);
    drv_sim_config cfg = {.seed = 1};
    drv_sim *s = NULL;
    warned[0] = 0;
    drv_log_set(keep_log, NULL, DRV_LOG_WARN);
    int rc = drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d);
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
    assert_int_equal(rc, 0);
    assert_string_equal(warned,
                        "1 job(s) submitted after the horizon (1000 s) will not run, the first j1 "
                        "at 5000 s\n"
                        "1 job(s) need more than the whole cluster at their smallest and will not "
                        "run, the first j2\n");
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workload_errors),
        cmocka_unit_test(test_cluster_errors_and_counts),
        cmocka_unit_test(test_cluster_gpu_types),
        cmocka_unit_test(test_job_that_fits_nowhere_is_refused),
        cmocka_unit_test(test_huge_quantities_refused),
        cmocka_unit_test(test_generate_limit),
        cmocka_unit_test(test_generate_step_caps),
        cmocka_unit_test(test_never_run_jobs_are_warned),
        cmocka_unit_test(test_out_dir_holding_an_input_is_refused),
        cmocka_unit_test(test_k8s_default_deadlocks_gang_does_not),
        cmocka_unit_test(test_single_job_matches_model),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_default_scenario_invariants),
        cmocka_unit_test(test_finished_jobs_are_released),
        cmocka_unit_test(test_idle_time_costs_nothing),
        cmocka_unit_test(test_event_driven_equals_ticking),
        cmocka_unit_test(test_skipping_keeps_migrations),
        cmocka_unit_test(test_starts_that_matter_run_a_cycle),
        cmocka_unit_test(test_arrivals_in_submit_order),
        cmocka_unit_test(test_lazy_samples_are_in_order),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
