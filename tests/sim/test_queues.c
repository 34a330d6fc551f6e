/*
 * Tests for the simulator's queues (src/sim/queues_read.c, src/sim/sim_queues.c): the cluster
 * file's queues and their defaults, jobs refused for an undeclared queue or a gang above their
 * queue's ceiling, Jain's index and finish-time fairness on hand-made cases, a two-job run whose
 * per-queue figures are worked by hand, and per-queue results that add up to the overall ones.
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

/* |got - want| <= tol, naming both on failure (this cmocka has no assert_double_equal). */
#define assert_near(got, want, tol)                                                                \
    do {                                                                                           \
        double g_ = (got), w_ = (want);                                                            \
        if (!(fabs(g_ - w_) <= (tol)))                                                             \
            fail_msg("%s = %.12g, expected %.12g", #got, g_, w_);                                  \
    } while (0)

/* Runs one built-in policy with the invariants checked (queues' use included) every cycle. */
static int run(const drv_cluster_spec *c, const drv_workload *w, const char *policy,
               drv_summary *sum, const drv_jobresult **res, drv_diag *d)
{
    drv_profile p;
    assert_int_equal(drv_profile_builtin(policy, &p, d), 0);
    drv_sim_config cfg = {.seed = 1, .check = true, .workload_file = "w.yaml"};
    drv_sim *s;
    int rc = drv_sim_new(c, w, &tu_cat, &p, &cfg, &s, d);
    if (rc)
        return rc;
    rc = drv_sim_run(s, d);
    if (!rc)
        drv_sim_summary(s, sum);
    if (!rc && res) { /* copied: the rows die with the run */
        int32_t n;
        const drv_jobresult *r = drv_sim_jobs(s, &n);
        drv_jobresult *copy = malloc(sizeof *copy * (size_t)n);
        assert_non_null(copy);
        memcpy(copy, r, sizeof *copy * (size_t)n);
        *res = copy;
    }
    drv_sim_free(s);
    return rc;
}

/* Queue spec with a name and weight, unlimited quota, no cohort. */
static drv_queuespec queue(const char *name, double weight)
{
    drv_queuespec q = {
        .weight = weight, .quota = {DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED}, .line = 1};
    snprintf(q.name, sizeof q.name, "%s", name);
    return q;
}

static void set_queues(drv_cluster_spec *c, const drv_queuespec *q, int32_t n)
{
    c->queues = drv_calloc((size_t)n, sizeof *c->queues); /* drv_cluster_fini frees it */
    assert_non_null(c->queues);
    memcpy(c->queues, q, sizeof *q * (size_t)n);
    c->nqueues = n;
    snprintf(c->queue_file, sizeof c->queue_file, "c.yaml");
}

static void test_queues_parsed(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0};
    drv_diag d = {{0}};
    assert_int_equal(drv_cluster_load(&c, tu_path("tests/fixtures/sim/cluster-queues.yaml"), &d),
                     0);
    assert_int_equal(c.nqueues, 3);
    const drv_queuespec *p = &c.queues[0], *r = &c.queues[1], *b = &c.queues[2];
    assert_string_equal(p->name, "prod");
    assert_string_equal(p->cohort, "lab");
    assert_true(p->weight == 3);
    assert_int_equal(p->quota.cpu, 16000);
    assert_int_equal(p->quota.mem, 64 * GiB);
    assert_int_equal(p->quota.gpu, 4);
    /* a resource the borrowing limit leaves out has no bound (Kueue's default) */
    assert_int_equal(p->borrow.gpu, 2);
    assert_true(p->borrow.cpu == DRV_UNLIMITED && p->borrow.mem == DRV_UNLIMITED);
    assert_int_equal(p->line, 5);
    assert_true(r->weight == 0.5);
    assert_int_equal(r->quota.cpu, 500);
    assert_true(r->quota.mem == DRV_UNLIMITED && r->quota.gpu == DRV_UNLIMITED);
    assert_true(r->borrow.gpu == DRV_UNLIMITED); /* in a cohort, no limit given: none */
    /* defaults: weight 1, no quota, no cohort and so nothing to borrow */
    assert_true(b->weight == 1);
    assert_string_equal(b->cohort, "");
    assert_true(b->quota.cpu == DRV_UNLIMITED && b->quota.gpu == DRV_UNLIMITED);
    assert_true(b->borrow.cpu == 0 && b->borrow.mem == 0 && b->borrow.gpu == 0);
    drv_cluster_fini(&c);
    /* no queues: none, as before */
    assert_int_equal(drv_cluster_load(&c, tu_path("tests/fixtures/sim/two-nodes.yaml"), &d), 0);
    assert_int_equal(c.nqueues, 0);
    assert_null(c.queues);
    drv_cluster_fini(&c);
}

/* n generated jobs, queue names given round-robin from qs (NULL: left "default"). */
static void jobs(drv_workload *w, int32_t n, const char *const *qs, int32_t nq)
{
    drv_diag d = {{0}};
    drv_genparams g;
    drv_genparams_default(&g, 1);
    g.jobs = n;
    assert_int_equal(drv_workload_generate(w, &g, &tu_cat, &d), 0);
    for (int32_t i = 0; qs && i < n; i++) {
        snprintf(w->jobs[i].queue, sizeof w->jobs[i].queue, "%s", qs[i % nq]);
        w->jobs[i].line = 10 + i;
    }
}

/* A job's smallest gang set to 1 PS of 2 CPUs and 2 workers of 4: 10 CPUs. */
static void gang_of_10(drv_jobspec *js)
{
    memset(js->role, 0, sizeof js->role);
    js->role[DRV_ROLE_PS] = (drv_rolespec){1, 1, 1, {2000, GiB, 0}, 2000};
    js->role[DRV_ROLE_WORKER] = (drv_rolespec){4, 2, 8, {4000, GiB, 0}, 4000};
}

static void test_bad_queue_refused(void **unused)
{
    (void)unused;
    drv_cluster_spec c;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_summary s;
    drv_cluster_default(&c);
    drv_queuespec q[2] = {queue("prod", 1), queue("research", 1)};
    q[0].quota.cpu = 8000;
    q[1].quota.cpu = 4000;
    strcpy(q[0].cohort, "lab");
    strcpy(q[1].cohort, "lab");
    q[0].borrow = (drv_res){DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED};
    set_queues(&c, q, 2);
    static const char *const names[] = {"prod", "nope"};
    jobs(&w, 2, names, 2);
    gang_of_10(&w.jobs[0]);
    gang_of_10(&w.jobs[1]);
    assert_int_equal(run(&c, &w, "gang-fifo", &s, NULL, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "w.yaml:11: job "));
    assert_non_null(strstr(d.msg, ": queue 'nope' is not declared in the cluster file (queues: "
                                  "default, prod, research)"));
    /* prod may hold its 8 CPUs plus research's 4: a gang of 10 fits its ceiling */
    strcpy(w.jobs[1].queue, "default");
    assert_int_equal(run(&c, &w, "gang-fifo", &s, NULL, &d), 0);
    /* with borrowing limited to 1 CPU, 9: refused, naming the job's and the queue's lines */
    c.queues[0].borrow.cpu = 1000;
    assert_int_equal(run(&c, &w, "gang-fifo", &s, NULL, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "w.yaml:10: job "));
    assert_non_null(strstr(d.msg, ": its smallest gang needs cpu 10, more than queue 'prod' may "
                                  "ever hold (cpu 9: its nominalQuota plus what it may borrow, "
                                  "c.yaml:1); it could never be admitted"));
    /* unlimited borrowing but research lends nothing: 8 */
    c.queues[0].borrow.cpu = DRV_UNLIMITED;
    c.queues[1].quota.cpu = 0;
    assert_int_equal(run(&c, &w, "gang-fifo", &s, NULL, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "(cpu 8: "));
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

static void test_jain_by_hand(void **unused)
{
    (void)unused;
    /* weights 1 and 3 holding 20 % and 60 %: weighted shares 0.2 and 0.2, perfectly fair */
    double even[] = {0.2 / 1, 0.6 / 3};
    assert_near(drv_jain_index(even, 2), 1.0, 1e-12);
    /* 40 % each with weights 1 and 3: x = 0.4, 0.1333; (0.5333)^2 / (2 (0.16 + 0.01778)) = 0.8 */
    double uneven[] = {0.4 / 1, 0.4 / 3};
    assert_near(drv_jain_index(uneven, 2), 0.8, 1e-12);
    /* one of three gets everything: 1/n */
    double one[] = {0.9, 0, 0};
    assert_near(drv_jain_index(one, 3), 1.0 / 3, 1e-12);
    /* 1, 2, 3: 36 / (3 * 14) = 6/7 */
    double ramp[] = {1, 2, 3};
    assert_near(drv_jain_index(ramp, 3), 6.0 / 7, 1e-12);
    double zero[] = {0, 0};
    assert_near(drv_jain_index(zero, 2), 1.0, 0);
    assert_true(isnan(drv_jain_index(zero, 0)));
}

static void test_ftf_by_hand(void **unused)
{
    (void)unused;
    /* JCT 300 s, ran 100 s, a quarter of the cluster with 2 tenants: half the cluster is its
     * slice, it fits, T_isolated = 100 s, rho = 3 */
    assert_near(drv_ftf_rho(300, 100, 0.25, 2), 3.0, 1e-12);
    /* three quarters with 2 tenants: 1.5 times its slice, T_isolated = 150 s, rho = 2 */
    assert_near(drv_ftf_rho(300, 100, 0.75, 2), 2.0, 1e-12);
    /* alone (1 tenant) on the whole cluster with no queueing: rho = 1 */
    assert_near(drv_ftf_rho(100, 100, 1.0, 1), 1.0, 1e-12);
    assert_true(isnan(drv_ftf_rho(100, 0, 0.5, 2)));
}

/*
 * Two equal jobs, each wanting the whole 4-CPU node, in queues a (weight 1, quota 8 CPUs) and
 * b (weight 3, no quota), submitted together; pods start at once (podStartSeconds 0). Gang-FIFO
 * runs a over [s_a, e_a], then b over [s_b, e_b]; the window is [0, e_b]. By hand, with run
 * times R_a = e_a - s_a, R_b = e_b - s_b:
 *   share_a = R_a / e_b, share_b = R_b / e_b (each holds the whole node: dominant share 1);
 *   quota use of a = (4/8) R_a / e_b; b has no quota (NaN);
 *   Jain over weighted shares of (share_a / 1, share_b / 3);
 *   rho = JCT / (run * max(1, N d)) with N = 2 queues, d = 1: rho_a = e_a / (2 R_a),
 *   rho_b = e_b / (2 R_b).
 * With s_a near 0 and R_a = R_b = R: shares 1/2 and 1/2, Jain (0.5 + 0.1667)^2 /
 * (2 (0.25 + 0.0278)) = 0.8, rho_a = 1/2, rho_b = 1, Jain(rho) = 2.25 / 2.5 = 0.9.
 */
static void test_two_queues_by_hand(void **unused)
{
    (void)unused;
    drv_cluster_spec c;
    drv_workload w = {0};
    drv_diag d = {{0}};
    assert_int_equal(drv_cluster_uniform(&c, 1, (drv_res){4000, 64 * GiB, 0}), 0);
    c.timing.pod_start = 0;
    drv_queuespec q[2] = {queue("a", 1), queue("b", 3)};
    q[0].quota.cpu = 8000;
    set_queues(&c, q, 2);
    static const char *const names[] = {"a", "b"};
    jobs(&w, 2, names, 2);
    for (int32_t i = 0; i < 2; i++) {
        drv_jobspec *js = &w.jobs[i];
        memset(js->role, 0, sizeof js->role);
        js->role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {4000, 1 * GiB, 0}, 4000};
        js->model = w.jobs[0].model;
        js->target_loss = w.jobs[0].target_loss;
        js->submit = 0;
        js->max_steps = 2000;
    }
    drv_summary s;
    const drv_jobresult *r;
    assert_int_equal(run(&c, &w, "gang-fifo", &s, &r, &d), 0);
    assert_int_equal(s.done, 2);
    assert_int_equal(s.nqueues, 2); /* the default queue has no job: not shown */
    assert_string_equal(s.queue[0].name, "a");
    assert_string_equal(s.queue[1].name, "b");
    assert_true(r[0].end <= r[1].start); /* one at a time: a first */
    double ra = r[0].end - r[0].start, rb = r[1].end - r[1].start, span = r[1].end;
    assert_near(s.queue[0].share, ra / span, 1e-9);
    assert_near(s.queue[1].share, rb / span, 1e-9);
    assert_near(s.queue[0].quota_use, 0.5 * ra / span, 1e-9);
    assert_true(isnan(s.queue[1].quota_use));
    double x = ra / span, y = rb / span / 3;
    assert_near(s.jain_share, (x + y) * (x + y) / (2 * (x * x + y * y)), 1e-9);
    double rho_a = r[0].end / (2 * ra), rho_b = r[1].end / (2 * rb);
    assert_near(s.ftf_max, rho_a > rho_b ? rho_a : rho_b, 1e-9);
    assert_near(s.ftf_jain,
                (rho_a + rho_b) * (rho_a + rho_b) / (2 * (rho_a * rho_a + rho_b * rho_b)), 1e-9);
    /* and the rounded figures of the comment: the jobs are equal and a starts at once */
    assert_near(s.jain_share, 0.8, 0.01);
    assert_near(s.ftf_max, 1.0, 0.01);
    assert_near(s.ftf_jain, 0.9, 0.01);
    assert_near(s.queue[0].avg_jct, r[0].end, 1e-9);
    assert_near(s.queue[1].avg_wait, r[1].start, 1e-9);
    free((void *)r);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* The built-in scenario's 60 jobs spread over three queues: the queues' counts and JCTs add up
 * to the overall ones (a second way to the same answer), and as every pod's dominant resource
 * is its CPU, the queues' shares add up to the CPU utilisation. */
static void test_queues_add_up(void **unused)
{
    (void)unused;
    drv_cluster_spec c;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_cluster_default(&c);
    drv_queuespec q[3] = {queue("prod", 3), queue("research", 2), queue("batch", 1)};
    set_queues(&c, q, 3);
    static const char *const names[] = {"prod", "research", "batch", "default"};
    jobs(&w, 60, names, 4);
    static const char *const policies[] = {"k8s-default", "gang-fifo", "drover"};
    for (size_t p = 0; p < sizeof policies / sizeof policies[0]; p++) {
        drv_summary s;
        assert_int_equal(run(&c, &w, policies[p], &s, NULL, &d), 0);
        assert_int_equal(s.nqueues, 4); /* the declared three, then default: jobs are in it */
        assert_string_equal(s.queue[3].name, "default");
        int32_t jobs = 0, done = 0;
        double jct = 0, share = 0;
        for (int32_t k = 0; k < s.nqueues; k++) {
            jobs += s.queue[k].jobs;
            done += s.queue[k].done;
            if (s.queue[k].done > 0)
                jct += s.queue[k].avg_jct * s.queue[k].done;
            share += s.queue[k].share;
            assert_int_equal(s.queue[k].jobs, 15);
            assert_true(isnan(s.queue[k].quota_use)); /* no quota */
        }
        assert_int_equal(jobs, s.jobs);
        assert_int_equal(done, s.done);
        assert_near(jct / done, s.avg_jct, 1e-6 * s.avg_jct);
        assert_near(share, s.cpu_util, 1e-9);
        assert_true(s.jain_share > 0.25 && s.jain_share <= 1);
        assert_true(s.ftf_max >= 0.5 && isfinite(s.ftf_jain));
    }
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* Reports: without queues nothing is added (the outputs stay byte-identical to before);
 * with them the table's block, summary.json's queues and summary.csv's columns appear. */
static void test_reports_only_with_queues(void **unused)
{
    (void)unused;
    drv_summary s = {.policy = "p", .jobs = 1, .done = 1};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    drv_report_table(f, &s, 1);
    assert_int_equal(drv_report_json(f, &s, 1), 0);
    drv_report_csv(f, &s, 1);
    fclose(f);
    assert_null(strstr(buf, "queue"));
    assert_null(strstr(buf, "jain"));
    free(buf);
    s.nqueues = 1;
    s.queue[0] = (drv_queue_summary){"prod", 2, 1, 1, 60, 6, 0.25, NAN, 0};
    s.jain_share = 1;
    s.ftf_max = 1.5;
    s.ftf_jain = 1;
    f = open_memstream(&buf, &len);
    assert_non_null(f);
    drv_report_table(f, &s, 1);
    fclose(f);
    assert_non_null(strstr(buf, "fairness: Jain(share/weight) 1.000; rho max 1.50, Jain(rho) "
                                "1.000\n  prod"));
    free(buf);
    f = open_memstream(&buf, &len);
    assert_non_null(f);
    drv_report_csv(f, &s, 1);
    fclose(f);
    assert_non_null(strstr(buf, ",jain_share,ftf_max,ftf_jain,prod.avg_jct_s,prod.avg_wait_s,"
                                "prod.share,prod.quota_use\n"));
    assert_non_null(strstr(buf, ",1,1.5,1,60,6,0.25,\n"));
    free(buf);
    f = open_memstream(&buf, &len);
    assert_non_null(f);
    assert_int_equal(drv_report_json(f, &s, 1), 0);
    fclose(f);
    assert_non_null(strstr(buf, "\"share\": 0.25,\n"));
    assert_non_null(strstr(buf, "\"quota_use\": null"));
    free(buf);
}

/* summary.json's queues read back by drover report's loader give the figures written, and
 * jobs-<policy>.csv names each job's queue. */
static void test_report_round_trip(void **unused)
{
    (void)unused;
    drv_cluster_spec c;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_cluster_default(&c);
    drv_queuespec q[2] = {queue("prod", 3), queue("research", 1)};
    q[0].quota.cpu = 128000;
    set_queues(&c, q, 2);
    static const char *const names[] = {"prod", "research"};
    jobs(&w, 12, names, 2);
    drv_profile p;
    assert_int_equal(drv_profile_builtin("gang-fifo", &p, &d), 0);
    drv_sim_config cfg = {.seed = 1, .check = true};
    drv_sim *s;
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run(s, &d), 0);
    drv_summary sum;
    drv_sim_summary(s, &sum);
    char dir[] = "drover-test-queues-XXXXXX"; /* in the test's working directory */
    assert_non_null(mkdtemp(dir));
    assert_int_equal(drv_report_run_files(dir, s, NULL, &d), 0);
    assert_int_equal(drv_report_summary_files(dir, &sum, 1, NULL, &d), 0);
    drv_sim_free(s);
    drv_report_data r;
    if (drv_report_load(&r, dir, &d) != 0)
        fail_msg("%s", d.msg);
    assert_int_equal(r.sum[0].nqueues, 2);
    for (int32_t k = 0; k < 2; k++) {
        const drv_queue_summary *a = &sum.queue[k], *b = &r.sum[0].queue[k];
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->jobs, b->jobs);
        assert_int_equal(a->done, b->done);
        assert_near(b->weight, a->weight, 0);
        assert_near(b->avg_jct, a->avg_jct, 1e-6 * a->avg_jct);
        assert_near(b->share, a->share, 1e-9);
    }
    assert_true(isnan(r.sum[0].queue[1].quota_use)); /* null: research has no quota */
    assert_near(r.sum[0].ftf_max, sum.ftf_max, 1e-9);
    assert_near(r.sum[0].jain_share, sum.jain_share, 1e-9);
    drv_report_data_fini(&r);
    char path[4200], line[512];
    snprintf(path, sizeof path, "%s/jobs-gang-fifo.csv", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, ",preemptions,queue\n"));
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, ",prod\n"));
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, ",research\n"));
    fclose(f);
    static const char *const files[] = {"jobs-gang-fifo.csv", "timeline-gang-fifo.csv",
                                        "summary.json", "summary.csv"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    assert_int_equal(rmdir(dir), 0);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queues_parsed),
        cmocka_unit_test(test_bad_queue_refused),
        cmocka_unit_test(test_jain_by_hand),
        cmocka_unit_test(test_ftf_by_hand),
        cmocka_unit_test(test_two_queues_by_hand),
        cmocka_unit_test(test_queues_add_up),
        cmocka_unit_test(test_reports_only_with_queues),
        cmocka_unit_test(test_report_round_trip),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
