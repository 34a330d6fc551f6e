/*
 * Tests for terminating pods in the simulator (src/sim/sim_grace.c, the cluster's
 * timing.terminationGraceSeconds): a removed pod keeps its node room and its queue's use for the
 * grace, so a waiting job is bound only once they are released, and a queue's use (bound pods
 * and terminating ones) never exceeds its quota; with grace 0 the waiting job starts at once.
 * The knob's reading and its bad values are checked too.
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

#define GiB (1024LL * 1024 * 1024)
#define SPAN 20000 /* seconds watched, one sample a second (both jobs end well before) */

/* Jobs A (submitted at 0) and B (at 1), each a chief and a worker of 2 CPUs: 4 CPUs a job. */
static void two_jobs(drv_workload *w, const char *queue)
{
    drv_diag d = {{0}};
    drv_genparams g;
    drv_genparams_default(&g, 1);
    g.jobs = 2;
    assert_int_equal(drv_workload_generate(w, &g, &tu_cat, &d), 0);
    for (int32_t i = 0; i < 2; i++) {
        drv_jobspec *js = &w->jobs[i];
        memset(js->role, 0, sizeof js->role);
        js->role[DRV_ROLE_CHIEF] = (drv_rolespec){1, 1, 1, {2000, GiB, 0}, 2000};
        js->role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {2000, GiB, 0}, 2000};
        js->model = w->jobs[0].model;
        js->target_loss = w->jobs[0].target_loss;
        js->submit = i;
        js->max_steps = 2000;
        snprintf(js->queue, sizeof js->queue, "%s", queue ? queue : "default");
        js->line = 10 + i;
    }
}

/* What the run looked like each second: the queue's use (bound and held) and node 0's room. */
typedef struct trace {
    int64_t qused[SPAN], alloc[SPAN];
    double a_end, b_start;
} trace;

/* Runs gang-fifo with the invariants checked every cycle, sampling each second. */
static void run(const drv_cluster_spec *c, const drv_workload *w, trace *t)
{
    drv_diag d = {{0}};
    drv_profile p;
    assert_int_equal(drv_profile_builtin("gang-fifo", &p, &d), 0);
    drv_sim_config cfg = {.seed = 1, .check = true, .workload_file = "w.yaml"};
    drv_sim *s;
    assert_int_equal(drv_sim_new(c, w, &tu_cat, &p, &cfg, &s, &d), 0);
    const drv_state *st = drv_sim_state(s);
    int32_t q = -1; /* the queue of quota 4 CPUs, if any */
    for (int32_t i = 0; i < st->nqueues; i++)
        if (st->queues[i].quota.cpu == 4000)
            q = i;
    for (int32_t k = 0; k < SPAN; k++) {
        assert_int_equal(drv_sim_run_until(s, k + 1, &d), 0); /* events before k + 1 */
        t->qused[k] = q >= 0 ? st->queues[q].used.cpu : 0;
        t->alloc[k] = st->nodes[0].alloc.cpu;
    }
    assert_int_equal(drv_sim_run(s, &d), 0);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_int_equal(n, 2);
    t->a_end = r[0].end;
    t->b_start = r[1].start;
    assert_true(t->a_end > 0 && t->b_start >= 0 && r[1].end > 0 && r[1].end < SPAN);
    drv_sim_free(s);
}

/* One node of 16 CPUs (room is no limit), queue q of 4 CPUs (a job's whole gang). */
static void queue_cluster(drv_cluster_spec *c, double grace)
{
    assert_int_equal(drv_cluster_uniform(c, 1, (drv_res){16000, 64 * GiB, 0}), 0);
    c->timing.pod_start = 0;
    c->timing.grace = grace;
    drv_queuespec qs = {
        .weight = 1, .quota = {4000, DRV_UNLIMITED, DRV_UNLIMITED}, .line = 1, .name = "q"};
    c->queues = drv_calloc(1, sizeof *c->queues); /* drv_cluster_fini frees it */
    assert_non_null(c->queues);
    c->queues[0] = qs;
    c->nqueues = 1;
    snprintf(c->queue_file, sizeof c->queue_file, "c.yaml");
}

/* With grace 30, A's pods keep the queue's 4 CPUs for 30 s after A ends: B, waiting for the
 * quota, starts no earlier, and the queue's use (its bound pods and A's terminating ones) is
 * never above 4 CPUs; with grace 0, B starts as A ends. */
static void test_grace_holds_queue(void **unused)
{
    (void)unused;
    static trace t;
    drv_cluster_spec c;
    drv_workload w = {0};
    two_jobs(&w, "q");
    queue_cluster(&c, 30);
    run(&c, &w, &t);
    assert_true(t.b_start >= t.a_end + 30);
    for (int32_t k = 0; k < SPAN; k++)
        assert_true(t.qused[k] <= 4000);
    /* in between, A's terminating pods hold the whole quota although nothing is bound */
    for (int32_t k = (int32_t)ceil(t.a_end); k + 1 < t.a_end + 30; k++)
        assert_int_equal(t.qused[k], 4000);
    drv_cluster_fini(&c);
    queue_cluster(&c, 0);
    run(&c, &w, &t);
    assert_true(t.b_start >= t.a_end && t.b_start < t.a_end + 30);
    drv_cluster_fini(&c);
    drv_workload_fini(&w);
}

/* Without queues, a node of 4 CPUs: A's terminating pods keep its room for the grace, so B
 * (which needs the whole node) is bound only after; the node's room is whole again after. */
static void test_grace_holds_node(void **unused)
{
    (void)unused;
    static trace t;
    drv_cluster_spec c;
    drv_workload w = {0};
    two_jobs(&w, NULL);
    assert_int_equal(drv_cluster_uniform(&c, 1, (drv_res){4000, 64 * GiB, 0}), 0);
    c.timing.pod_start = 0;
    c.timing.grace = 30;
    run(&c, &w, &t);
    assert_true(t.b_start >= t.a_end + 30);
    int32_t k = (int32_t)ceil(t.a_end);
    assert_int_equal(t.alloc[k], 0); /* all of it held by A's two terminating pods */
    assert_int_equal(t.alloc[SPAN - 1], 4000);
    c.timing.grace = 0;
    run(&c, &w, &t);
    assert_true(t.b_start >= t.a_end && t.b_start < t.a_end + 30);
    drv_cluster_fini(&c);
    drv_workload_fini(&w);
}

/*
 * A victim and its claimant decided in one cycle (tests/sim/test_preempt.c's scenario: at 300 the
 * urgent 6-pod gang preempts low-a and shrinks low-elastic). With grace 30 the victims' pods hold
 * their room until 330: the urgent gang is not bound at 300 - not even the pods that would fit in
 * free room, so no gang is half placed (the invariants are checked every cycle, node capacity
 * included) - and it is bound whole once the room is released.
 */
static void test_grace_delays_claimant(void **unused)
{
    (void)unused;
    enum { LOW_A, URGENT = 4, NJOBS };
    drv_cluster_spec c = {0};
    drv_workload w = {0};
    drv_profile *profs = NULL;
    int nprofs = 0;
    drv_diag d = {{0}};
    if (drv_cluster_load(&c, tu_path("examples/cluster-4node.yaml"), &d) ||
        drv_workload_load(&w, tu_path("examples/preempt-4node.yaml"), &tu_cat, 1, &d) ||
        drv_profile_file_load(tu_path("examples/preempt-profiles.yaml"), &profs, &nprofs, &d))
        fail_msg("%s", d.msg);
    c.timing.grace = 30;
    const drv_profile *p = NULL;
    for (int i = 0; i < nprofs; i++)
        if (strcmp(profs[i].name, "gang-preempt") == 0)
            p = &profs[i];
    assert_non_null(p);
    assert_int_equal(w.n, NJOBS);
    drv_sim_config cfg = {.seed = 1, .check = true};
    drv_sim *s = NULL;
    if (drv_sim_new(&c, &w, &tu_cat, p, &cfg, &s, &d) || drv_sim_run_until(s, 301, &d))
        fail_msg("%s", d.msg);
    const drv_state *st = drv_sim_state(s);
    assert_int_equal(st->jobs[LOW_A].preemptions, 1); /* the victim is off ... */
    int bound = 0;
    for (int r = 0; r < DRV_NROLES; r++)
        bound += st->jobs[URGENT].bound[r];
    assert_int_equal(bound, 0); /* ... but its room is held: the claimant waits whole */
    if (drv_sim_run(s, &d))
        fail_msg("%s", d.msg);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_true(r[URGENT].start >= 330 && r[URGENT].start <= 330 + 30);
    assert_true(r[URGENT].end > 0 && r[LOW_A].end > 0);
    drv_sim_free(s);
    drv_free(profs);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* examples/cluster-tenants.yaml's 30 jobs in three queues under DRAGON (which scales, preempts
 * and binds in the same cycles) with grace 30: every job finishes, the invariants checked every
 * cycle - a gang whose bind waited for held room gives back what it had bound, so none is left
 * half placed, and no node is over its room. */
static void test_grace_dragon_tenants(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0};
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_profile p;
    if (drv_cluster_load(&c, tu_path("examples/cluster-tenants.yaml"), &d) ||
        drv_workload_load(&w, tu_path("examples/tenants-workload.yaml"), &tu_cat, 1, &d) ||
        drv_profile_builtin("dragon", &p, &d))
        fail_msg("%s", d.msg);
    c.timing.grace = 30;
    drv_sim_config cfg = {.seed = 1, .check = true};
    drv_sim *s = NULL;
    if (drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d) || drv_sim_run(s, &d))
        fail_msg("%s", d.msg);
    drv_summary sum;
    drv_sim_summary(s, &sum);
    assert_int_equal(sum.done, w.n);
    drv_sim_free(s);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* timing.terminationGraceSeconds: read, 0 when absent, and a bad value named with its line. */
static void test_grace_read(void **unused)
{
    (void)unused;
    static const struct {
        const char *value, *want; /* want: NULL for accepted (as 12.5) */
    } cases[] = {{"12.5", NULL},
                 {"-1", "c.yaml:4: timing.terminationGraceSeconds: -1 is out of range"},
                 {"soon", "c.yaml:4: timing.terminationGraceSeconds: expected a number"},
                 {"\"30\"", "c.yaml:4: timing.terminationGraceSeconds: expected a number"}};
    char dir[] = "/tmp/drover-grace-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/c.yaml", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f,
                "nodes:\n  - {name: n0, cpu: 4, memory: 8Gi}\ntiming:\n"
                "  terminationGraceSeconds: %s\n",
                cases[i].value);
        fclose(f);
        drv_cluster_spec c = {0};
        drv_diag d = {{0}};
        int rc = drv_cluster_load(&c, path, &d);
        if (!cases[i].want) {
            assert_int_equal(rc, 0);
            assert_true(c.timing.grace == 12.5);
            drv_cluster_fini(&c);
        } else {
            assert_int_not_equal(rc, 0);
            if (!strstr(d.msg, cases[i].want))
                fail_msg("%s: got '%s', expected '%s'", cases[i].value, d.msg, cases[i].want);
        }
    }
    drv_cluster_spec c = {0};
    drv_diag d = {{0}};
    assert_int_equal(drv_cluster_load(&c, tu_path("tests/fixtures/sim/two-nodes.yaml"), &d), 0);
    assert_true(c.timing.grace == 0);
    drv_cluster_fini(&c);
    remove(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grace_holds_queue),
        cmocka_unit_test(test_grace_holds_node),
        cmocka_unit_test(test_grace_delays_claimant),
        cmocka_unit_test(test_grace_dragon_tenants),
        cmocka_unit_test(test_grace_read),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
