/* Tests for src/model: the loss curve, the catalogue reader and the step-time model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drover/model.h"

#define GiB (1024LL * 1024 * 1024)

static const drv_netparams net = {DRV_DEF_INTRA_MBPS, DRV_DEF_INTER_MBPS, DRV_DEF_HOP_S};

static void test_loss_curve_inverse(void **unused)
{
    (void)unused;
    drv_family f = {.beta0 = 0.002, .beta1 = 0.4, .beta2 = 0.1};
    assert_true(fabs(drv_loss(&f, 0) - 2.6) < 1e-12);
    for (double target = 0.2; target < 2.5; target += 0.3) {
        double k = drv_steps_to_loss(&f, target);
        assert_true(fabs(drv_loss(&f, k) - target) < 1e-9);
    }
    assert_true(isinf(drv_steps_to_loss(&f, 0.1))); /* the floor is never reached */
    /* Noise is deterministic per (seed, job, sample) and small. */
    drv_family g = f;
    g.noise = 0.02;
    double x = drv_loss_observed(&g, 100, 7, 3, 5), y = drv_loss_observed(&g, 100, 7, 3, 5);
    assert_true(x == y);
    assert_true(fabs(x / drv_loss(&g, 100) - 1) < 0.05);
}

static void test_builtin_catalogue(void **unused)
{
    (void)unused;
    drv_catalogue cat = {0};
    drv_diag d;
    assert_int_equal(drv_catalogue_builtin(&cat, &d), 0);
    /* The families the seed papers used. */
    const char *want[] = {"resnet50", "vgg16", "inception3", "lenet", "lstm", "gru", "birnn"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_true(drv_catalogue_find(&cat, want[i]) >= 0);
    for (int32_t i = 0; i < cat.n; i++)
        assert_true(cat.v[i].target_loss > cat.v[i].beta2);
    drv_catalogue_fini(&cat);
}

static void test_catalogue_errors(void **unused)
{
    (void)unused;
    drv_catalogue cat = {0};
    drv_diag d;
    const char *hdr = "name,kind,compute_s,model_mb,beta0,beta1,beta2,target_loss,noise\n";
    char buf[512];
    assert_int_equal(drv_catalogue_parse(&cat, "m.csv", "name,kind\n", &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "m.csv:1:"));
    snprintf(buf, sizeof buf, "%s# comment\n\nx,cnn,1,2,abc,1,0.1,0.5,0\n", hdr);
    assert_int_equal(drv_catalogue_parse(&cat, "m.csv", buf, &d), DRV_EINVAL);
    assert_string_equal(d.msg, "m.csv:4:11: beta0: expected a number >= 0, found 'abc'");
    snprintf(buf, sizeof buf, "%sx,cnn,1,2,0.1,1,0.5,0.4,0\n", hdr);
    assert_int_equal(drv_catalogue_parse(&cat, "m.csv", buf, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "never reached"));
    snprintf(buf, sizeof buf, "%sx,cnn,1,2,0.1,1,0.1,0.4,0\nx,cnn,1,2,0.1,1,0.1,0.4,0\n", hdr);
    assert_int_equal(drv_catalogue_parse(&cat, "m.csv", buf, &d), DRV_EEXIST);
    assert_int_equal(cat.n, 0); /* failures leave the output untouched */
}

/* A state with `nodes` nodes of 16 CPUs and one job: nps PS + nw workers of 4 CPUs. */
static int32_t setup(drv_state *st, int nodes, int nps, int nw)
{
    assert_int_equal(drv_state_init(st), 0);
    for (int i = 0; i < nodes; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(drv_state_add_node(st, name, (drv_res){16000, 64 * GiB, 0}, "", "", NULL),
                         0);
    }
    drv_job t;
    memset(&t, 0, sizeof t);
    t.role[DRV_ROLE_PS] = (drv_rolespec){nps, nps, nps, {4000, GiB, 0}, 4000};
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){nw, nw, nw, {4000, GiB, 0}, 4000};
    int32_t id;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    return id;
}

static void test_ps_locality_and_cpu(void **unused)
{
    (void)unused;
    drv_family f = {.compute_s = 1.0, .model_mb = 100};
    drv_state st;
    int32_t j = setup(&st, 2, 1, 2);
    int32_t ps = drv_job_pod(&st, j, DRV_ROLE_PS, 0);
    int32_t w0 = drv_job_pod(&st, j, DRV_ROLE_WORKER, 0);
    drv_step none = drv_model_step(&f, &net, &st, j);
    assert_true(none.rate == 0); /* nothing bound: cannot run */
    drv_state_bind(&st, ps, 0);
    drv_state_bind(&st, w0, 0);
    drv_state_bind(&st, w0 + 1, 0);
    drv_step local = drv_model_step(&f, &net, &st, j);
    /* Expected by hand: 2 workers x 2*100 MB through the PS at intra bandwidth. */
    assert_true(fabs(local.exchange - 2 * 200.0 / DRV_DEF_INTRA_MBPS) < 1e-12);
    assert_true(fabs(local.compute - 1.0) < 1e-12);
    drv_state_unbind(&st, w0 + 1);
    drv_state_bind(&st, w0 + 1, 1);
    drv_step split = drv_model_step(&f, &net, &st, j);
    assert_true(split.exchange > local.exchange);
    assert_true(split.rate < local.rate);
    /* Halving a worker's CPU limit doubles its compute time (the step waits for it). */
    drv_state_set_cpu_limit(&st, w0, 2000);
    drv_step slow = drv_model_step(&f, &net, &st, j);
    assert_true(fabs(slow.compute - 2.0) < 1e-12);
    /* Overcommitted limits are shared in proportion: PS 4000m + worker 16000m on 16000m. */
    drv_state_set_cpu_limit(&st, w0, 16000);
    assert_true(fabs(drv_model_pod_cpu(&st, w0) - 16000.0 * 16000 / 20000) < 1e-9);
    drv_state_fini(&st);
}

static void test_allreduce_spans_nodes(void **unused)
{
    (void)unused;
    drv_family f = {.compute_s = 0.5, .model_mb = 50};
    drv_state st;
    int32_t j = setup(&st, 4, 0, 4);
    int32_t w = drv_job_pod(&st, j, DRV_ROLE_WORKER, 0);
    for (int i = 0; i < 4; i++)
        drv_state_bind(&st, w + i, 0);
    double one = drv_model_step(&f, &net, &st, j).exchange;
    drv_state_unbind(&st, w + 3);
    drv_state_bind(&st, w + 3, 1);
    double two = drv_model_step(&f, &net, &st, j).exchange;
    drv_state_unbind(&st, w + 2);
    drv_state_bind(&st, w + 2, 2);
    double three = drv_model_step(&f, &net, &st, j).exchange;
    assert_true(one < two && two < three);
    assert_true(fabs(one - 2.0 * 3 / 4 * 50 / DRV_DEF_INTRA_MBPS) < 1e-12);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_curve_inverse),    cmocka_unit_test(test_builtin_catalogue),
        cmocka_unit_test(test_catalogue_errors),      cmocka_unit_test(test_ps_locality_and_cpu),
        cmocka_unit_test(test_allreduce_spans_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
