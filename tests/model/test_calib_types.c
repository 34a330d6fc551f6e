/*
 * Tests for per-GPU-type calibration (src/model/calibrate.c, issue 27): a profile directory in
 * Sia's layout (MODEL/placements-TYPE.csv, no placements.csv) written here with synthetic
 * numbers (type "slow" measured exactly twice as slow as "fast"), read into one entry per model
 * and type; a type a model has no profile for is -1 unless the caller asks for the fallback;
 * slowdown factors scale every step time of one model; bad input is named.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "drover/calib.h"

static const struct {
    const char *name;
    int epochs; /* calibrate.c's apps[]: the curves must cover them */
} models[] = {{"bert", 2},      {"cifar10", 100}, {"deepspeech2", 80},
              {"imagenet", 90}, {"ncf", 10},      {"yolov3", 50}};

static char root[64];

static void put(const char *model, const char *file, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/%s", root, model, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Every model: two validation curves, and placements-fast.csv / placements-slow.csv where slow
 * takes twice fast's time at every point (1, 2 and 11 GPUs per node, local batch 32 and 64). */
static void write_profiles(bool with_base)
{
    snprintf(root, sizeof root, "/tmp/drover-calibtypes-XXXXXX");
    assert_non_null(mkdtemp(root));
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        char dir[128], buf[8192];
        snprintf(dir, sizeof dir, "%s/%s", root, models[m].name);
        assert_int_equal(mkdir(dir, 0700), 0);
        for (int b = 64; b <= 128; b += 64) {
            int n = snprintf(buf, sizeof buf, "progress,grad_sqr,grad_var\n");
            for (int e = 0; e < models[m].epochs; e++)
                n += snprintf(buf + n, sizeof buf - (size_t)n, "%d,1.0,%.1f\n", (e + 1) * 1000,
                              b == 64 ? 4.0 : 2.0);
            char name[32];
            snprintf(name, sizeof name, "validation-%d.csv", b);
            put(models[m].name, name, buf);
        }
        for (int slow = 0; slow <= 1; slow++) {
            double k = slow ? 2.0 : 1.0;
            snprintf(buf, sizeof buf,
                     "placement,local_bsz,step_time,sync_time\n"
                     "1,32,%g,0\n1,64,%g,0\n2,32,%g,%g\n2,64,%g,%g\n11,32,%g,%g\n11,64,%g,%g\n",
                     0.1 * k, 0.2 * k, 0.12 * k, 0.02 * k, 0.22 * k, 0.02 * k, 0.15 * k, 0.05 * k,
                     0.25 * k, 0.05 * k);
            put(models[m].name, slow ? "placements-slow.csv" : "placements-fast.csv", buf);
            if (with_base && !slow) {
                put(models[m].name, "placements.csv", buf);
                put(models[m].name, "scalability.csv",
                    "num_nodes,num_replicas,local_bsz,step_time,sync_time\n1,1,32,0.1,0\n");
            }
        }
    }
}

static void remove_profiles(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

static double step_on(const drv_calib *c, int32_t e, int32_t g0, int32_t g1, double batch)
{
    int32_t gpn[2] = {g0, g1};
    return drv_calib_step_time(c, e, gpn, g1 ? 2 : 1, batch);
}

static void test_types_read(void **unused)
{
    (void)unused;
    write_profiles(false);
    drv_calib c = {0};
    drv_diag d = {{0}};
    assert_int_equal(drv_calib_load(&c, root, &d), 0);
    assert_int_equal(c.n, 6);     /* one untyped entry per model, indices as before */
    assert_int_equal(c.nall, 18); /* and two types each */
    for (int32_t app = 0; app < c.n; app++) {
        int32_t f = drv_calib_for_type(&c, app, "fast", false);
        int32_t s = drv_calib_for_type(&c, app, "slow", false);
        assert_true(f >= c.n && s >= c.n && f != s);
        assert_string_equal(c.v[f].type, "fast");
        assert_int_equal(c.v[f].base, app);
        /* each type its own measurements: at every measured point slow is twice fast */
        for (int g = 1; g <= 2; g++)
            for (double b = 32; b <= 64; b += 32) {
                double tf = step_on(&c, f, g, 0, b * g), ts = step_on(&c, s, g, 0, b * g);
                assert_true(tf > 0 && fabs(ts - 2 * tf) < 1e-9 * ts);
            }
        if (strcmp(c.v[app].name, "yolov3") != 0) /* its local batch is capped at 8 */
            assert_true(fabs(step_on(&c, f, 1, 1, 64) - 0.15) < 1e-9);
        /* the validation curves are the model's, shared */
        assert_ptr_equal(c.v[f].cv, c.v[app].cv);
        assert_true(c.v[f].init_bsz == 64 && c.v[s].max_bsz == 128);
        /* no placements.csv: an untyped node, or a type without a file, only when asked */
        assert_true(c.v[app].no_base);
        assert_string_equal(c.v[app].type_first, "fast");
        assert_int_equal(drv_calib_for_type(&c, app, NULL, false), -1);
        assert_int_equal(drv_calib_for_type(&c, app, "A100", false), -1);
        assert_int_equal(drv_calib_for_type(&c, app, "A100", true), app);
        assert_int_equal(drv_calib_for_type(&c, app, "", true), app);
    }
    drv_calib_fini(&c);
    remove_profiles();
}

static void test_base_kept(void **unused)
{
    (void)unused;
    write_profiles(true);
    drv_calib c = {0};
    drv_diag d = {{0}};
    assert_int_equal(drv_calib_load(&c, root, &d), 0);
    int32_t app = drv_calib_find(&c, "cifar10");
    assert_false(c.v[app].no_base);
    assert_int_equal(drv_calib_for_type(&c, app, NULL, false), app);
    assert_int_equal(drv_calib_for_type(&c, app, "A100", false), -1);
    assert_int_equal(c.v[app].nsc, 1);
    drv_calib_fini(&c);
    remove_profiles();
}

static void test_slowdowns(void **unused)
{
    (void)unused;
    write_profiles(false);
    drv_calib c = {0};
    drv_diag d = {{0}};
    assert_int_equal(drv_calib_load(&c, root, &d), 0);
    int32_t cif = drv_calib_find(&c, "cifar10"), ncf = drv_calib_find(&c, "ncf");
    int32_t f = drv_calib_for_type(&c, cif, "fast", false);
    int32_t s = drv_calib_for_type(&c, cif, "slow", false);
    int32_t n = drv_calib_for_type(&c, ncf, "fast", false);
    double tf = step_on(&c, f, 2, 0, 128), ts = step_on(&c, s, 2, 0, 128);
    double tn = step_on(&c, n, 2, 0, 128);
    assert_int_equal(drv_calib_parse_slowdowns(&c, "cifar10=1.8,ncf=1.5", &d), 0);
    assert_true(fabs(step_on(&c, f, 2, 0, 128) - 1.8 * tf) < 1e-9);
    assert_true(fabs(step_on(&c, s, 2, 0, 128) - 1.8 * ts) < 1e-9);
    assert_true(fabs(step_on(&c, n, 2, 0, 128) - 1.5 * tn) < 1e-9);
    /* a second setting replaces the first, it does not compound */
    assert_int_equal(drv_calib_set_slowdown(&c, "cifar10", 1.0), 0);
    assert_true(fabs(step_on(&c, f, 2, 0, 128) - tf) < 1e-9);
    assert_int_equal(drv_calib_parse_slowdowns(&c, "resnet=2", &d), DRV_ENOENT);
    assert_non_null(strstr(d.msg, "'resnet': no such model"));
    assert_int_equal(drv_calib_parse_slowdowns(&c, "cifar10", &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "'cifar10': expected MODEL=FACTOR"));
    assert_int_equal(drv_calib_parse_slowdowns(&c, "cifar10=0", &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "cifar10: expected a factor above 0, found '0'"));
    drv_calib_fini(&c);
    remove_profiles();
}

static void test_bad_type_file(void **unused)
{
    (void)unused;
    write_profiles(false);
    put("ncf", "placements-slow.csv", "placement,local_bsz,step_time,sync_time\n1,32,x,0\n");
    drv_calib c = {0};
    drv_diag d = {{0}};
    assert_int_equal(drv_calib_load(&c, root, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "ncf/placements-slow.csv:2:6: step_time: expected a number"));
    put("ncf", "placements-slow.csv", "placement,local_bsz,step_time,sync_time\n");
    put("ncf", "placements-a b.csv", "placement,local_bsz,step_time,sync_time\n1,32,1,0\n");
    assert_int_equal(drv_calib_load(&c, root, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "GPU type: expected a name, found 'a b'"));
    assert_null(c.v);
    remove_profiles();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types_read),
        cmocka_unit_test(test_base_kept),
        cmocka_unit_test(test_slowdowns),
        cmocka_unit_test(test_bad_type_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
