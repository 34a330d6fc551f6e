/*
 * Jobs already running at t0 (a snapshot of a live cluster, docs/what-if.md): the workload's
 * startedAt, runningOn and doneSteps. The simulator binds such a job's pods to the nodes named
 * at t0 with no pod-start pause, counts the time it ran (its start, its minRuntimeSeconds age)
 * and finishes it after the work it has left: doneSteps when given, else an estimate from its
 * rate times the time it ran. Bad fields are refused with file:line and the field.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "drover/policy.h"
#include "drover/sim.h"
#include "testutil.h"

static char path[256];

/* Writes text as a workload file and loads it (rc returned, message in d). */
static int load(drv_workload *w, const char *text, drv_diag *d)
{
    snprintf(path, sizeof path, "/tmp/drover-test-running-%d.yaml", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    int rc = drv_workload_load(w, path, &tu_cat, 1, d);
    remove(path);
    return rc;
}

/* A job `r` running on node-3 and node-5 for 600 s, with `extra` added to it, and a job `p`
 * that waits. */
static const char *workload(char *buf, size_t n, const char *extra)
{
    snprintf(buf, n,
             "jobs:\n"
             "  - name: r\n    model: resnet50\n    maxSteps: 20000\n"
             "    roles: {worker: {replicas: 2, cpu: 30, memory: 1Gi}}\n"
             "    startedAt: -600\n    runningOn: {worker: [node-3, node-5]}\n%s"
             "  - name: p\n    model: resnet50\n    maxSteps: 20000\n"
             "    roles: {worker: {replicas: 1, cpu: 4, memory: 1Gi}}\n",
             extra);
    return buf;
}

static drv_sim *start(const drv_cluster_spec *c, const drv_workload *w, const drv_profile *p)
{
    drv_sim_config cfg = {.seed = 1, .check = true, .workload_file = "w.yaml"};
    drv_sim *s = NULL;
    drv_diag d = {{0}};
    assert_int_equal(drv_sim_new(c, w, &tu_cat, p, &cfg, &s, &d), 0);
    return s;
}

static void test_bound_at_t0_on_its_nodes(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0};
    drv_cluster_default(&c);
    drv_workload w = {0};
    drv_diag d = {{0}};
    char buf[1024];
    assert_int_equal(load(&w, workload(buf, sizeof buf, ""), &d), 0);
    drv_profile p;
    assert_int_equal(drv_profile_builtin("drover", &p, &d), 0);
    drv_sim *s = start(&c, &w, &p);
    assert_int_equal(drv_sim_run_until(s, 0.5, &d), 0); /* before any pod-start pause ends */
    const drv_state *st = drv_sim_state(s);
    const drv_job *j = &st->jobs[0];
    assert_int_equal(j->phase, DRV_JOB_RUNNING);
    assert_true(j->start == -600.0); /* its minRuntimeSeconds age counts from its start */
    assert_int_equal(j->bound[DRV_ROLE_WORKER], 2);
    const char *nodes[2];
    for (int k = 0; k < 2; k++)
        nodes[k] = drv_strtab_str(st->names, st->nodes[st->pods[j->pod_base + k].node].name);
    assert_string_equal(nodes[0], "node-3");
    assert_string_equal(nodes[1], "node-5");
    assert_int_not_equal(st->jobs[1].phase, DRV_JOB_RUNNING); /* p waits its pod start */
    assert_int_equal(drv_sim_run(s, &d), 0);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_true(r[0].start == 0 && r[0].submit == 0); /* results count from t0 */
    assert_true(r[0].end > 0);
    drv_sim_free(s);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* The job's end under doneSteps given as d_steps ("" for none). */
static double end_with(const char *extra)
{
    drv_cluster_spec c = {0};
    drv_cluster_default(&c);
    drv_workload w = {0};
    drv_diag d = {{0}};
    char buf[1024];
    assert_int_equal(load(&w, workload(buf, sizeof buf, extra), &d), 0);
    drv_profile p;
    assert_int_equal(drv_profile_builtin("k8s-default", &p, &d), 0);
    drv_sim *s = start(&c, &w, &p);
    assert_int_equal(drv_sim_run(s, &d), 0);
    int32_t n;
    double end = drv_sim_jobs(s, &n)[0].end;
    drv_sim_free(s);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
    return end;
}

static void test_work_left(void **unused)
{
    (void)unused;
    double none = end_with("    doneSteps: 0\n");
    double some = end_with("    doneSteps: 500\n");
    double est = end_with(""); /* 600 s at its rate: less than all, more than nothing */
    assert_true(some > 0 && some < none - 1);
    assert_true(est > 0 && est < none - 500 && est > none - 700);
}

/* Each bad field: its message. */
static void test_bad_fields(void **unused)
{
    (void)unused;
    static const struct {
        const char *extra, *want;
    } cases[] = {
        {"    doneSteps: -1\n", "jobs[0].doneSteps: -1 is out of range"},
        {"    submit: 5\n", "jobs[0].submit: a running job is submitted at 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        drv_workload w = {0};
        drv_diag d = {{0}};
        char buf[1024];
        assert_int_not_equal(load(&w, workload(buf, sizeof buf, cases[i].extra), &d), 0);
        if (!strstr(d.msg, cases[i].want))
            fail_msg("%s: %s", cases[i].want, d.msg);
        drv_workload_fini(&w);
    }
    static const struct {
        const char *text, *want;
    } whole[] = {
        {"jobs:\n  - {name: a, model: resnet50, roles: {worker: {cpu: 1}}, startedAt: -5}\n",
         "jobs[0].runningOn: missing"},
        {"jobs:\n  - {name: a, model: resnet50, roles: {worker: {cpu: 1}}, startedAt: 5, "
         "runningOn: {worker: [node-0]}}\n",
         "jobs[0].startedAt: 5 is out of range"},
        {"jobs:\n  - {name: a, model: resnet50, roles: {worker: {replicas: 2, cpu: 1}}, "
         "startedAt: -5, runningOn: {worker: [node-0]}}\n",
         "jobs[0].runningOn.worker: expected one node per replica (2), found 1 nodes"},
        {"jobs:\n  - {name: a, model: resnet50, roles: {ps: {cpu: 1}, worker: {cpu: 1}}, "
         "startedAt: -5, runningOn: {worker: [node-0]}}\n",
         "jobs[0].runningOn.ps: missing"},
    };
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        drv_workload w = {0};
        drv_diag d = {{0}};
        assert_int_not_equal(load(&w, whole[i].text, &d), 0);
        if (!strstr(d.msg, whole[i].want))
            fail_msg("%s: %s", whole[i].want, d.msg);
        drv_workload_fini(&w);
    }
}

/* A node the cluster does not have: the run refuses, naming the file, line, job and node. */
static void test_unknown_node(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0};
    drv_cluster_default(&c);
    drv_workload w = {0};
    drv_diag d = {{0}};
    assert_int_equal(load(&w,
                          "jobs:\n  - {name: a, model: resnet50, roles: {worker: {cpu: 1}},\n"
                          "     startedAt: -5, runningOn: {worker: [node-99]}}\n",
                          &d),
                     0);
    drv_profile p;
    assert_int_equal(drv_profile_builtin("drover", &p, &d), 0);
    drv_sim *s = start(&c, &w, &p);
    assert_int_not_equal(drv_sim_run(s, &d), 0);
    if (!strstr(d.msg, "w.yaml:3: job a: runningOn.worker: node 'node-99' is not in the cluster"))
        fail_msg("%s", d.msg);
    drv_sim_free(s);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_at_t0_on_its_nodes),
        cmocka_unit_test(test_work_left),
        cmocka_unit_test(test_bad_fields),
        cmocka_unit_test(test_unknown_node),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
