/*
 * Tests for the goodput plugin (src/policy/goodput.c) and the BATCH decision it makes, on the
 * Pollux workloads and the measured profiles (data/pollux):
 *  - with the oracle (oracle=1), on a cluster too small for two jobs at full size, the GPUs
 *    beyond one each go to the job whose goodput rises more with them (from the calibrated
 *    model, not from a number here);
 *  - a batch is only ever set within the job's validated range, every job finishes, and a job
 *    keeps its progress across batch changes (its steps never pass its steps to finish);
 *  - the fixed-batch baselines never change a batch;
 *  - by default (explore=2) a job never gets more than twice the most workers it has run with;
 *  - with oracle=0 (the default) the plugin reads no step time of a configuration a job has
 *    not run: handed a copy of the profiles whose every measured step and sync time is
 *    poisoned (scaled by a factor that varies with the placement), it decides exactly as with
 *    the true ones, job for job; the oracle (oracle=1) decides differently (the check can fail);
 *  - with compact=1 (the default) no job is grown, or started above its minimum, onto more nodes
 *    than its GPUs need packed; with compact=0 some are, on the same jobs (the check can fail);
 *  - with Pollux's change price (delay=D) no running job grows while its age is at most D times
 *    its restarts (the price is 0 there, and rises with age); with delay=0 some do, on the same
 *    jobs (the check can fail);
 *  - with the default change price (penalty = 0.2) no running job grows to 1.25 times its
 *    workers or fewer (its speed-up must rise by 1 / 0.8); with penalty=0 some do (the check can
 *    fail);
 *  - the drover profile gives every job the same start, end, restarts and workers whether the
 *    simulator skips quiet cycles or runs every one (docs/cycle.md, "Quiet cycles").
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
#include "drover/trace.h"
#include "testutil.h"

/* The first n jobs of a Pollux workload. */
static void load(drv_workload *w, int w_no, int32_t n)
{
    char rel[128];
    snprintf(rel, sizeof rel, "data/pollux/workloads/workload-%d.csv", w_no);
    drv_trace_opts o = {drv_trace_format_parse("pollux"), false, 1, &tu_calib, DRV_POLLUX_GPUS};
    drv_diag d = {{0}};
    assert_int_equal(drv_trace_load(w, tu_path("%s", rel), &tu_cat, &o, NULL, &d), 0);
    if (w->n > n)
        w->n = n;
}

static void profile(const char *name, drv_profile *p)
{
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_builtin(name, p, &d), 0);
    p->period = DRV_POLLUX_ROUND; /* as --mechanics pollux */
}

/* A job of app submitted at 0, requesting one worker at the app's initial batch. */
static drv_jobspec job(const char *app, const char *name)
{
    drv_jobspec j;
    memset(&j, 0, sizeof j);
    int32_t a = drv_calib_find(&tu_calib, app);
    assert_true(a >= 0);
    snprintf(j.name, sizeof j.name, "%s", name);
    snprintf(j.user, sizeof j.user, "u");
    snprintf(j.queue, sizeof j.queue, "q");
    j.model = 0;
    j.role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 16, {1000, 4LL << 30, 1}, 1000};
    j.target_loss = -INFINITY;
    j.calib_app = a + 1;
    j.batch = tu_calib.v[a].init_bsz;
    j.batch_min = tu_calib.v[a].init_bsz;
    j.batch_max = tu_calib.v[a].max_bsz;
    j.max_steps = drv_calib_steps(&tu_calib, a, j.batch);
    return j;
}

/* Goodput speed-up of app from 1 to n GPUs packed on nodes of 4, at epoch 0. */
static double speedup(const char *app, int32_t n)
{
    int32_t a = drv_calib_find(&tu_calib, app), one[1] = {1}, gpn[4] = {0}, nn = 0;
    for (int32_t left = n; left > 0; left -= 4)
        gpn[nn++] = left < 4 ? left : 4;
    double g1 = 0, gn = 0;
    drv_calib_best_batch(&tu_calib, a, one, 1, 0, tu_calib.v[a].init_bsz, tu_calib.v[a].max_bsz,
                         &g1);
    drv_calib_best_batch(&tu_calib, a, gpn, nn, 0, tu_calib.v[a].init_bsz, tu_calib.v[a].max_bsz,
                         &gn);
    return gn / g1;
}

static void test_gpus_go_where_goodput_rises(void **unused)
{
    (void)unused;
    /* imagenet and yolov3 scale differently (docs/data.md); which gains more is the model's */
    drv_jobspec v[2] = {job("imagenet", "a"), job("yolov3", "b")};
    drv_workload w = {.jobs = v, .n = 2, .cap = 2};
    drv_cluster_spec c = {0};
    drv_cluster_pollux(&c, 2, 4);
    drv_profile p;
    drv_diag d = {{0}};
    /* the oracle ablation: at the first round only it knows how each job scales */
    assert_int_equal(drv_profile_parse("oracle",
                                       "gang=true period=60 admit=goodput(oracle=1;explore=0) "
                                       "scale=goodput",
                                       &p, &d),
                     0);
    drv_sim_config cfg = {.seed = 1, .check = true, .calib = &tu_calib};
    drv_sim *s;
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run_until(s, 1, &d), 0); /* the first cycle, at 0 */
    const drv_state *st = drv_sim_state(s);
    int32_t na = st->jobs[0].target[DRV_ROLE_WORKER], nb = st->jobs[1].target[DRV_ROLE_WORKER];
    assert_int_equal(na + nb, 8); /* every GPU is worth something to one of them */
    assert_true(na >= 1 && nb >= 1);
    double ra = speedup("imagenet", 7), rb = speedup("yolov3", 7);
    if (ra > rb)
        assert_true(na > nb);
    else
        assert_true(nb > na);
    /* each got the best batch for its placement, within range */
    const drv_calib_job *m = drv_sim_model(s)->v; /* batches live in the model (calib.h) */
    for (int i = 0; i < 2; i++)
        assert_true(m[i].batch >= v[i].batch_min && m[i].batch <= v[i].batch_max);
    assert_true(m[0].batch > v[0].batch || m[1].batch > v[1].batch);
    drv_sim_free(s);
    drv_cluster_fini(&c);
}

/* Runs s to its end, checks that every job of w finished, and frees s, c, w and last. */
static void run_out(drv_sim *s, drv_cluster_spec *c, drv_workload *w, void *last)
{
    drv_diag d = {{0}};
    assert_int_equal(drv_sim_run(s, &d), 0);
    drv_summary sum;
    drv_sim_summary(s, &sum);
    assert_int_equal(sum.done, w->n);
    free(last);
    drv_sim_free(s);
    drv_cluster_fini(c);
    drv_workload_fini(w);
}

/* Runs a workload with a policy, checking every 10 simulated minutes that each calibrated job's
 * batch is within its range and its steps within its steps to finish; returns BATCH changes
 * seen (a change of a job's batch between two looks). */
static int run_checking_batches(const char *policy, int w_no, int32_t n)
{
    drv_workload w = {0};
    load(&w, w_no, n);
    drv_cluster_spec c = {0};
    drv_cluster_pollux(&c, DRV_POLLUX_NODES, DRV_POLLUX_GPUS);
    drv_profile p;
    profile(policy, &p);
    drv_sim_config cfg = {.seed = 1, .check = true, .calib = &tu_calib};
    drv_sim *s;
    drv_diag d = {{0}};
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
    double *last = calloc((size_t)w.n, sizeof *last);
    assert_non_null(last);
    int changes = 0;
    for (double t = 600; t < 1e6; t += 600) {
        assert_int_equal(drv_sim_run_until(s, t, &d), 0);
        const drv_state *st = drv_sim_state(s);
        for (int32_t i = 0; i < st->njobs; i++) {
            if (drv_state_job_released(st, i)) /* finished: its memory is given back */
                continue;
            const drv_job *j = &st->jobs[i];
            if (j->phase == DRV_JOB_FUTURE) /* not submitted: a blank placeholder */
                continue;
            const drv_calib_job *m = &drv_sim_model(s)->v[i]; /* its batch (calib.h) */
            assert_true(m->batch >= m->batch_min && m->batch <= m->batch_max);
            assert_true(m->batch_min == w.jobs[i].batch_min && m->batch_max == w.jobs[i].batch_max);
            assert_true(j->steps <= j->steps_total);
            changes += last[i] != 0 && last[i] != m->batch;
            last[i] = m->batch;
        }
    }
    run_out(s, &c, &w, last);
    return changes;
}

static void test_batches_in_range(void **unused)
{
    (void)unused;
    assert_true(run_checking_batches("drover", 1, 30) > 0);
    assert_int_equal(run_checking_batches("tiresias", 1, 30), 0);
    assert_int_equal(run_checking_batches("optimus", 1, 30), 0);
}

static void test_drover_skipping_equals_ticking(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    load(&w, 3, 25);
    drv_cluster_spec c = {0};
    drv_cluster_pollux(&c, DRV_POLLUX_NODES, DRV_POLLUX_GPUS);
    drv_profile p;
    profile("drover", &p);
    drv_jobresult *res[2] = {NULL, NULL};
    drv_summary sum[2];
    int32_t n[2] = {0, 0};
    for (int tick = 0; tick < 2; tick++) {
        drv_sim_config cfg = {.seed = 4, .check = true, .tick = tick, .calib = &tu_calib};
        drv_sim *s;
        drv_diag d = {{0}};
        assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
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
        assert_true(a->start == b->start && a->end == b->end);
        assert_int_equal(a->restarts, b->restarts);
        assert_int_equal(a->workers, b->workers);
    }
    assert_int_equal(sum[0].decisions, sum[1].decisions);
    assert_int_equal(sum[0].done, w.n);
    free(res[0]);
    free(res[1]);
    drv_cluster_fini(&c);
    drv_workload_fini(&w);
}

/* The default (explore=2): a job never wants more than twice the most workers it has run with (one
 * to start with). Looked at after every round: what a round saw bound is what the next one limits
 * by. */
static void test_explore_limits_growth(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    load(&w, 1, 30);
    drv_cluster_spec c = {0};
    drv_cluster_pollux(&c, DRV_POLLUX_NODES, DRV_POLLUX_GPUS);
    drv_profile p;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_parse("explore",
                                       "gang=true period=60 admit=goodput "
                                       "scale=goodput",
                                       &p, &d),
                     0);
    drv_sim_config cfg = {.seed = 1, .check = true, .calib = &tu_calib};
    drv_sim *s;
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
    int32_t *most = calloc((size_t)w.n, sizeof *most);
    assert_non_null(most);
    int grew = 0;
    for (double t = 1; t < 3e5; t += DRV_POLLUX_ROUND) {
        assert_int_equal(drv_sim_run_until(s, t, &d), 0);
        const drv_state *st = drv_sim_state(s);
        for (int32_t i = 0; i < st->njobs; i++) {
            if (drv_state_job_released(st, i))
                continue;
            const drv_job *j = &st->jobs[i];
            int32_t bound = j->bound[DRV_ROLE_WORKER];
            if (bound == 0)
                continue;
            assert_true(bound <= 2 * (most[i] > 1 ? most[i] : 1));
            grew += bound > 1;
            if (j->phase != DRV_JOB_PENDING && bound > most[i])
                most[i] = bound;
        }
    }
    assert_true(grew > 0);
    free(most);
    drv_sim_free(s);
    drv_cluster_fini(&c);
    drv_workload_fini(&w);
}

/* Runs 25 jobs of workload 2 with admit=goodput(KNOBS), the plugins handed `seen` (the run
 * uses the true profiles); each job's start, end and restarts into r[0..n). */
static int32_t run_seeing(const char *knobs, const drv_calib *seen, drv_jobresult *r, int32_t n)
{
    drv_workload w = {0};
    load(&w, 2, n);
    drv_cluster_spec c = {0};
    drv_cluster_pollux(&c, DRV_POLLUX_NODES, DRV_POLLUX_GPUS);
    drv_profile p;
    drv_diag d = {{0}};
    char text[256];
    snprintf(text, sizeof text, "gang=true period=60 admit=goodput(%s) scale=goodput", knobs);
    assert_int_equal(drv_profile_parse("seeing", text, &p, &d), 0);
    drv_sim_config cfg = {.seed = 1, .check = true, .calib = &tu_calib, .policy_calib = seen};
    drv_sim *s;
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run(s, &d), 0);
    int32_t got = 0;
    const drv_jobresult *res = drv_sim_jobs(s, &got);
    assert_int_equal(got, w.n);
    memcpy(r, res, sizeof *r * (size_t)got);
    drv_sim_free(s);
    drv_cluster_fini(&c);
    drv_workload_fini(&w);
    return got;
}

static bool same_runs(const drv_jobresult *a, const drv_jobresult *b, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        if (a[i].start != b[i].start || a[i].end != b[i].end || a[i].restarts != b[i].restarts)
            return false;
    return true;
}

static void test_online_reads_only_what_ran(void **unused)
{
    (void)unused;
    drv_calib poisoned = {0}; /* drv_calib_load frees what it held */
    drv_diag d = {{0}};
    assert_int_equal(drv_calib_load(&poisoned, tu_path("data/pollux/profiles"), &d), 0);
    for (int32_t a = 0; a < poisoned.n; a++) {
        drv_calib_app *x = &poisoned.v[a];
        for (int32_t k = 0; k < x->npl; k++) { /* 0.3x to 3.3x, by placement */
            double f = 0.3 + (double)(x->pl[k].placement % 7) / 2;
            x->pl[k].step *= f;
            x->pl[k].sync *= f;
        }
        for (int32_t k = 0; k < x->nsc; k++) {
            double f = 0.3 + (double)((x->sc[k].replicas + x->sc[k].nodes) % 7) / 2;
            x->sc[k].step *= f;
            x->sc[k].sync *= f;
        }
    }
    enum { N = 25 };
    drv_jobresult truth[N], lied[N];
    int32_t n = run_seeing("oracle=0", &tu_calib, truth, N);
    assert_int_equal(run_seeing("oracle=0", &poisoned, lied, N), n);
    assert_true(same_runs(truth, lied, n));
    assert_int_equal(run_seeing("oracle=1", &tu_calib, truth, N), n);
    assert_int_equal(run_seeing("oracle=1", &poisoned, lied, N), n);
    assert_false(same_runs(truth, lied, n));
    drv_calib_fini(&poisoned);
}

/* Nodes job j's bound workers span. */
static int32_t nodes_of(const drv_state *st, int32_t j)
{
    int32_t seen[64], n = 0;
    for (int32_t i = 0;; i++) {
        int32_t pod = drv_job_pod(st, j, DRV_ROLE_WORKER, i);
        if (pod < 0)
            return n;
        int32_t at = st->pods[pod].node, k = 0;
        while (at >= 0 && k < n && seen[k] != at)
            k++;
        if (at >= 0 && k == n && n < 64)
            seen[n++] = at;
    }
}

/* A simulator of the first n jobs of workload w_no with admit=goodput(KNOBS) scale=goodput on
 * the Pollux cluster; w, c and p receive the jobs, the cluster and the profile, which the run
 * borrows (run_out frees the run, w and c). */
static drv_sim *start_goodput(const char *knobs, int w_no, int32_t n, drv_workload *w,
                              drv_cluster_spec *c, drv_profile *p)
{
    load(w, w_no, n);
    drv_cluster_pollux(c, DRV_POLLUX_NODES, DRV_POLLUX_GPUS);
    drv_diag d = {{0}};
    char text[256];
    snprintf(text, sizeof text, "gang=true period=60 admit=goodput(%s) scale=goodput", knobs);
    assert_int_equal(drv_profile_parse("goodput", text, p, &d), 0);
    drv_sim_config cfg = {.seed = 1, .check = true, .calib = &tu_calib};
    drv_sim *s;
    assert_int_equal(drv_sim_new(c, w, &tu_cat, p, &cfg, &s, &d), 0);
    return s;
}

/* Runs the first n jobs of workload w_no with admit=goodput(KNOBS) and counts, after every round,
 * the jobs that grew since the last round (or started above one worker) onto more nodes than
 * their workers need packed 4 to a node. */
static int32_t spread_growth(const char *knobs, int w_no, int32_t n)
{
    drv_workload w = {0};
    drv_cluster_spec c = {0};
    drv_profile p;
    drv_diag d = {{0}};
    drv_sim *s = start_goodput(knobs, w_no, n, &w, &c, &p);
    int32_t *last = calloc((size_t)w.n, sizeof *last), spread = 0, grew = 0;
    assert_non_null(last);
    for (double t = 1; t < 2e5; t += DRV_POLLUX_ROUND) {
        assert_int_equal(drv_sim_run_until(s, t, &d), 0);
        const drv_state *st = drv_sim_state(s);
        for (int32_t i = 0; i < st->njobs; i++) {
            if (drv_state_job_released(st, i) || st->jobs[i].phase == DRV_JOB_FUTURE)
                continue;
            int32_t b = st->jobs[i].bound[DRV_ROLE_WORKER];
            if (b > (last[i] > 1 ? last[i] : 1)) {
                grew++;
                spread += nodes_of(st, i) > (b + DRV_POLLUX_GPUS - 1) / DRV_POLLUX_GPUS;
            }
            last[i] = b;
        }
    }
    assert_true(grew > 0);
    run_out(s, &c, &w, last);
    return spread;
}

static void test_compact_growth(void **unused)
{
    (void)unused;
    assert_int_equal(spread_growth("compact=1", 1, 60), 0);
    assert_true(spread_growth("compact=0", 1, 60) > 0);
}

/* Runs the first n jobs of workload w_no with admit=goodput(KNOBS) and counts, looking after
 * every round (one round between two looks), the running jobs that grew
 *  - while Pollux's change price with `delay` was 0: age (from submission, at the look: never
 *    before the decision) at most delay times the restarts it had at the look before (delay < 0:
 *    any age), and
 *  - to at most `ratio` times the workers they had: a growth the price `penalty` forbids where a
 *    job's speed-up is at most linear in its GPUs (it must raise it by 1 / (1 - penalty)).
 * *grew receives all growths of running jobs. */
static int32_t priced_growth(const char *knobs, double delay, double ratio, int w_no, int32_t n,
                             int32_t *grew)
{
    drv_workload w = {0};
    drv_cluster_spec c = {0};
    drv_profile p;
    drv_diag d = {{0}};
    drv_sim *s = start_goodput(knobs, w_no, n, &w, &c, &p);
    int32_t *last = calloc((size_t)w.n * 2, sizeof *last), count = 0;
    assert_non_null(last);
    int32_t *restarts = last + w.n;
    *grew = 0;
    for (double t = 1; t < 2e5; t += DRV_POLLUX_ROUND) {
        assert_int_equal(drv_sim_run_until(s, t, &d), 0);
        const drv_state *st = drv_sim_state(s);
        for (int32_t i = 0; i < st->njobs; i++) {
            if (drv_state_job_released(st, i) || st->jobs[i].phase == DRV_JOB_FUTURE)
                continue;
            const drv_job *j = &st->jobs[i];
            int32_t b = j->bound[DRV_ROLE_WORKER];
            if (last[i] > 0 && b > last[i]) {
                (*grew)++;
                count +=
                    (delay < 0 || t - j->submit <= delay * restarts[i]) && b <= ratio * last[i];
            }
            last[i] = j->phase == DRV_JOB_PENDING ? 0 : b; /* running: it pays the price */
            restarts[i] = j->restarts;
        }
    }
    assert_true(*grew > 0);
    run_out(s, &c, &w, last);
    return count;
}

/* Pollux's change price, max(age - restarts * delay, 0) / (age + delay), is 0 for a job no older
 * than delay times its restarts and rises towards 1 as it ages: with delay=1800 no running job
 * grows while it is that young, yet jobs do grow once older; with the price off (delay=0) the
 * same jobs grow young (the check can fail). */
static void test_change_price_falls_with_age(void **unused)
{
    (void)unused;
    int32_t grew = 0;
    assert_int_equal(priced_growth("delay=1800", 1800, INFINITY, 1, 40, &grew), 0);
    assert_true(grew > 0);
    assert_true(priced_growth("delay=0", 1800, INFINITY, 1, 40, &grew) > 0);
}

/* The default price of a change (penalty = 0.2): a running job grows only when that raises its
 * speed-up by 1 / 0.8 = 1.25, so never to 1.25 times its workers or fewer; with the price off
 * (penalty=0) the same jobs do (the check can fail). */
static void test_change_price_holds_small_growth(void **unused)
{
    (void)unused;
    int32_t grew = 0;
    assert_int_equal(priced_growth("", -1, 1.25, 2, 40, &grew), 0);
    assert_true(priced_growth("penalty=0", -1, 1.25, 2, 40, &grew) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpus_go_where_goodput_rises),
        cmocka_unit_test(test_batches_in_range),
        cmocka_unit_test(test_drover_skipping_equals_ticking),
        cmocka_unit_test(test_explore_limits_growth),
        cmocka_unit_test(test_online_reads_only_what_ran),
        cmocka_unit_test(test_compact_growth),
        cmocka_unit_test(test_change_price_falls_with_age),
        cmocka_unit_test(test_change_price_holds_small_growth),
    };
    return cmocka_run_group_tests(tests, tu_models_setup, tu_models_teardown);
}
