/*
 * Tests for the online throughput model (src/model/online.c) against the measured profiles
 * (data/pollux/profiles), each measurement made by drv_calib_measure as a running job makes it:
 *  - converges: a job of every model that has run 1, 2, 4 GPUs on one node and 8 and 16 packed
 *    on 2 and 4 nodes predicts, from the fitted model alone (residual off), the step time of
 *    every configuration it ran within 25 %
 *    (largest seen 21 %, yolov3 on 16 GPUs: Pollux's model has one sync line across nodes
 *    with a non-negative slope, and the measured sync time per replica falls from 8 GPUs on
 *    2 nodes to 16 on 4; 1 GPU within 1 %, 4 GPUs on one node within 0.1 %);
 *  - the prior: a job seen on one GPU only is predicted a linear speed-up at the same per-GPU
 *    batch (no sync term before any multi-GPU measurement), on one node and across nodes;
 *  - the prior across nodes: a job that has run on one node only (1, 2 and 4 GPUs) predicts
 *    at least 1.1 times its intra-node sync terms across nodes (Pollux's bound), so 8 GPUs on
 *    2 nodes are slower than the same 8 on one node would be; with the bound off
 *    (inter_prior = 0) crossing nodes is free; once it has run across nodes, the measurement
 *    decides;
 *  - residual: with it on (the default), each of those configurations is predicted as
 *    measured, and a shape it has not run from the model alone; off, some is not;
 *  - a measurement seen again refits nothing; a bad one is refused; a failed allocation
 *    leaves the model as it was;
 *  - the best batch lies within the range and gives each replica the smallest local batch;
 *  - the noise trend: on a noise scale growing by the same factor every epoch, the variance
 *    anticipated one epoch's time on is the next epoch's (what the job will see, not what it
 *    sees); a falling noise is not anticipated, a rise is capped at a factor e, and nothing is
 *    anticipated before two epochs or with ahead = 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drover/online.h"
#include "testutil.h"

/* n GPUs packed 4 per node into gpn; returns the node count. */
static int32_t packed(int32_t n, int32_t *gpn)
{
    int32_t k = 0;
    for (; n > 0; n -= gpn[k++])
        gpn[k] = n < 4 ? n : 4;
    return k;
}

/* A total batch for n GPUs inside the app's range: the initial batch or, when larger, n times
 * the smallest local batch. */
static double batch_for(const drv_calib_app *a, int32_t n)
{
    double b = fmax(a->init_bsz, n * a->min_local_bsz);
    return fmin(b, a->max_bsz);
}

/* Runs app on 1, 2, 4, 8 and 16 GPUs packed at batch_for, into o; the measurements into ran. */
static void run_packed(drv_online_job *o, int32_t app, drv_calib_sample *ran)
{
    static const int32_t sizes[] = {1, 2, 4, 8, 16};
    for (int32_t i = 0; i < 5; i++) {
        int32_t gpn[8], nn = packed(sizes[i], gpn);
        assert_int_equal(drv_calib_measure(&tu_calib, app, gpn, nn,
                                           batch_for(&tu_calib.v[app], sizes[i]), &ran[i]),
                         0);
        assert_int_equal(drv_online_observe(o, &ran[i]), 0);
    }
}

static void test_converges_on_what_it_ran(void **unused)
{
    (void)unused;
    double worst = 0;
    for (int32_t app = 0; app < tu_calib.n; app++) {
        const drv_calib_app *a = &tu_calib.v[app];
        drv_online_job o;
        drv_online_job_init(&o);
        o.residual = false; /* the fit's own error */
        drv_calib_sample ran[5];
        run_packed(&o, app, ran);
        assert_int_equal(o.most, 16);
        for (int32_t i = 0; i < 5; i++) {
            double t =
                drv_online_step(&o, ran[i].nodes, ran[i].replicas, ran[i].atomic, ran[i].accum);
            double err = fabs(t - ran[i].step) / ran[i].step;
            worst = fmax(worst, err);
            if (err > 0.25 || (ran[i].replicas == 1 && err > 0.01) ||
                (ran[i].replicas == 4 && err > 0.001))
                fail_msg("%s on %d GPUs: predicted %g s, measured %g s", a->name, ran[i].replicas,
                         t, ran[i].step);
        }
        drv_online_job_fini(&o);
    }
    print_message("largest relative error on a configuration run: %.3f\n", worst);
}

static void test_residual_at_measured_shapes(void **unused)
{
    (void)unused;
    double off_worst = 0;
    for (int32_t app = 0; app < tu_calib.n; app++) {
        drv_online_job on, off;
        drv_online_job_init(&on);
        drv_online_job_init(&off);
        off.residual = false;
        drv_calib_sample ran[5], ran2[5];
        run_packed(&on, app, ran);
        run_packed(&off, app, ran2);
        for (int32_t i = 0; i < 5; i++) {
            const drv_calib_sample *s = &ran[i];
            double t = drv_online_step(&on, s->nodes, s->replicas, s->atomic, s->accum);
            if (fabs(t - s->step) > 1e-9 * s->step)
                fail_msg("%s on %d GPUs: predicted %g s, measured %g s", tu_calib.v[app].name,
                         s->replicas, t, s->step);
            double u = drv_online_step(&off, s->nodes, s->replicas, s->atomic, s->accum);
            off_worst = fmax(off_worst, fabs(u - s->step) / s->step);
        }
        /* a shape it has not run (12 GPUs on 3 nodes): the model alone, on or off */
        double a = drv_online_step(&on, 3, 12, ran[4].atomic, ran[4].accum),
               b = drv_online_step(&off, 3, 12, ran[4].atomic, ran[4].accum);
        assert_true(fabs(a - b) <= 1e-12 * b);
        drv_online_job_fini(&on);
        drv_online_job_fini(&off);
    }
    assert_true(off_worst > 0.01); /* the fit alone misses some measured configuration */
}

static void test_prior_is_linear(void **unused)
{
    (void)unused;
    for (int32_t app = 0; app < tu_calib.n; app++) {
        const drv_calib_app *a = &tu_calib.v[app];
        drv_online_job o;
        drv_online_job_init(&o);
        int32_t one = 1;
        drv_calib_sample s;
        assert_int_equal(drv_calib_measure(&tu_calib, app, &one, 1, a->init_bsz, &s), 0);
        assert_int_equal(drv_online_observe(&o, &s), 0);
        double t1 = drv_online_step(&o, 1, 1, s.atomic, s.accum);
        assert_true(fabs(t1 - s.step) <= 1e-9 * s.step); /* the one point it saw */
        /* same per-GPU batch on 4 and 8 GPUs: the same step time, so 4x and 8x the samples */
        assert_true(fabs(drv_online_step(&o, 1, 4, s.atomic, s.accum) - t1) <= 1e-12);
        assert_true(fabs(drv_online_step(&o, 2, 8, s.atomic, s.accum) - t1) <= 1e-12);
        /* while the measured profile has a real sync cost there (not linear) */
        int32_t gpn[2] = {4, 4};
        double real = drv_calib_step_time(&tu_calib, app, gpn, 2, 8 * s.atomic);
        assert_true(real > 0);
        drv_online_job_fini(&o);
    }
}

/* Runs app on 1, 2 and 4 GPUs of one node at batch_for: o then knows intra-node sync only. */
static void run_one_node(drv_online_job *o, int32_t app)
{
    const drv_calib_app *a = &tu_calib.v[app];
    for (int32_t r = 1; r <= 4; r *= 2) {
        drv_calib_sample s;
        assert_int_equal(drv_calib_measure(&tu_calib, app, &r, 1, batch_for(a, r), &s), 0);
        assert_int_equal(drv_online_observe(o, &s), 0);
    }
}

static void test_prior_across_nodes(void **unused)
{
    (void)unused;
    for (int32_t app = 0; app < tu_calib.n; app++) {
        const drv_calib_app *a = &tu_calib.v[app];
        drv_online_job o, off;
        drv_online_job_init(&o);
        drv_online_job_init(&off);
        off.inter_prior = 0;
        run_one_node(&o, app);
        run_one_node(&off, app);
        const drv_online_params *p = &o.p;
        assert_true(p->ar + p->br > 0); /* it has measured a sync cost on one node */
        assert_true(p->an >= 1.1 * p->ar * (1 - 1e-12) && p->bn >= 1.1 * p->br * (1 - 1e-12));
        double atomic;
        int32_t accum;
        drv_calib_split(a, 8, batch_for(a, 8), &atomic, &accum);
        double one = drv_online_step(&o, 1, 8, atomic, accum),
               two = drv_online_step(&o, 2, 8, atomic, accum);
        if (!(two > one))
            fail_msg("%s: 8 GPUs on 2 nodes predicted %g s, on one node %g s", a->name, two, one);
        /* switched off, the inter-node terms are free until measured: as fast as 1 GPU */
        assert_true(off.p.an == 0 && off.p.bn == 0);
        assert_true(drv_online_step(&off, 2, 8, atomic, accum) < one);
        /* a multi-node measurement replaces the prior: that configuration is predicted from it */
        int32_t gpn[2] = {4, 4};
        drv_calib_sample s;
        assert_int_equal(drv_calib_measure(&tu_calib, app, gpn, 2, batch_for(a, 8), &s), 0);
        assert_int_equal(drv_online_observe(&o, &s), 0);
        double t = drv_online_step(&o, 2, 8, s.atomic, s.accum);
        if (fabs(t - s.step) > 0.05 * s.step)
            fail_msg("%s: after running 8 on 2 nodes predicted %g s, measured %g s", a->name, t,
                     s.step);
        drv_online_job_fini(&o);
        drv_online_job_fini(&off);
    }
}

static void test_seen_again_refits_nothing(void **unused)
{
    (void)unused;
    drv_online_job o;
    drv_online_job_init(&o);
    int32_t gpn[1] = {2};
    drv_calib_sample s;
    assert_int_equal(drv_calib_measure(&tu_calib, 0, gpn, 1, tu_calib.v[0].init_bsz, &s), 0);
    assert_int_equal(drv_online_observe(&o, &s), 0);
    uint32_t v = o.version;
    assert_int_equal(drv_online_observe(&o, &s), 0);
    assert_int_equal(o.version, v);
    assert_int_equal(o.nobs, 1);
    drv_calib_sample bad = s;
    bad.step = 0;
    assert_int_equal(drv_online_observe(&o, &bad), DRV_EINVAL);
    bad = s;
    bad.replicas = 0;
    assert_int_equal(drv_online_observe(&o, &bad), DRV_EINVAL);
    assert_int_equal(o.version, v);
    drv_online_job_fini(&o);
}

static void test_failed_allocation_keeps_model(void **unused)
{
    (void)unused;
    drv_online_job o;
    drv_online_job_init(&o);
    int32_t one = 1;
    drv_calib_sample s;
    assert_int_equal(drv_calib_measure(&tu_calib, 1, &one, 1, tu_calib.v[1].init_bsz, &s), 0);
    drv_alloc_fail_at(1);
    assert_int_equal(drv_online_observe(&o, &s), DRV_ENOMEM);
    drv_alloc_fail_at(0);
    assert_int_equal(o.nobs, 0);
    assert_int_equal(o.version, 0);
    assert_int_equal(drv_online_observe(&o, &s), 0);
    assert_int_equal(o.nobs, 1);
    drv_online_job_fini(&o);
}

static void test_best_batch_in_range(void **unused)
{
    (void)unused;
    for (int32_t app = 0; app < tu_calib.n; app++) {
        const drv_calib_app *a = &tu_calib.v[app];
        drv_online_job o;
        drv_online_job_init(&o);
        int32_t one = 1;
        drv_calib_sample s;
        assert_int_equal(drv_calib_measure(&tu_calib, app, &one, 1, a->init_bsz, &s), 0);
        assert_int_equal(drv_online_observe(&o, &s), 0);
        drv_online_grad g = {0};
        g.init_bsz = a->init_bsz;
        drv_calib_grad(&tu_calib, app, a->init_bsz, a->max_epochs / 2, &g.sqr, &g.var);
        for (int32_t r = 1; r <= 16; r *= 2) {
            double gp = 0;
            double b =
                drv_online_best_batch(&o, a, &g, (r + 3) / 4, r, a->init_bsz, a->max_bsz, &gp);
            if (b == 0) { /* none fits: r times the smallest local batch is past the range */
                assert_true(r * a->min_local_bsz > a->max_bsz);
                continue;
            }
            assert_true(b >= a->init_bsz && b <= a->max_bsz);
            assert_true(b >= r * a->min_local_bsz - 1e-9);
            assert_true(gp > 0);
        }
        drv_online_job_fini(&o);
    }
}

/* Epoch e at time 100 e with phi = var / sqr = 2 exp(k e), var's anticipation `ahead` on. */
static double noise_at(drv_online_noise *n, int32_t e, double k, double ahead)
{
    drv_online_grad g = {.sqr = 0.5, .var = exp(k * e), .init_bsz = 128};
    return drv_online_noise_ahead(n, &g, e, 100.0 * e, ahead);
}

static void test_noise_ahead(void **unused)
{
    (void)unused;
    drv_online_noise n;
    drv_online_noise_init(&n);
    /* one epoch seen: no trend yet */
    assert_true(fabs(noise_at(&n, 0, 0.2, 100) - 1) < 1e-12);
    /* from the second on: one epoch's time (100 s) on is the next epoch's noise */
    for (int32_t e = 1; e <= 5; e++)
        assert_true(fabs(noise_at(&n, e, 0.2, 100) / exp(0.2 * (e + 1)) - 1) < 1e-9);
    /* half of it on, half the rise in log phi */
    assert_true(fabs(noise_at(&n, 5, 0.2, 50) / exp(0.2 * 5.5) - 1) < 1e-9);
    /* far on: the rise is capped at e */
    assert_true(fabs(noise_at(&n, 5, 0.2, 1e6) / exp(0.2 * 5 + 1) - 1) < 1e-9);
    /* ahead = 0: the current noise */
    assert_true(fabs(noise_at(&n, 5, 0.2, 0) - exp(0.2 * 5)) < 1e-12);
    /* falling noise: the current one */
    drv_online_noise_init(&n);
    for (int32_t e = 0; e <= 3; e++)
        assert_true(fabs(noise_at(&n, e, -0.2, 100) - exp(-0.2 * e)) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_converges_on_what_it_ran),
        cmocka_unit_test(test_prior_is_linear),
        cmocka_unit_test(test_prior_across_nodes),
        cmocka_unit_test(test_residual_at_measured_shapes),
        cmocka_unit_test(test_seen_again_refits_nothing),
        cmocka_unit_test(test_failed_allocation_keeps_model),
        cmocka_unit_test(test_best_batch_in_range),
        cmocka_unit_test(test_noise_ahead),
    };
    return cmocka_run_group_tests(tests, tu_calib_setup, tu_calib_teardown);
}
