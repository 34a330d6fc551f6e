/*
 * Golden tests for the trace readers (src/sim/trace.c) on small excerpts in
 * tests/fixtures/trace/: the jobs each format turns into, the errors a malformed row gives
 * (file:line:column: field), --on-bad-row skip counting, header detection, and a calibrated
 * job replayed through the simulator under the Pollux mechanics. Expected values are worked
 * out by hand from the fixture rows and docs/data.md's mapping.
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

static drv_trace_opts opts(const char *fmt, bool skip)
{
    return (drv_trace_opts){drv_trace_format_parse(fmt), skip, 1, &tu_calib, 4};
}

static void test_pollux(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("auto", false);
    int32_t skipped = -1;
    assert_int_equal(drv_trace_load(&w, tu_path("tests/fixtures/trace/pollux-good.csv"), &tu_cat,
                                    &o, &skipped, &d),
                     0);
    assert_int_equal(w.n, 3);
    assert_int_equal(skipped, 0);
    /* cifar10-0,107,cifar10,6,2048: 6 one-GPU workers, elastic 1..min(64, 2048/32) */
    assert_string_equal(w.jobs[0].name, "cifar10-0");
    assert_true(w.jobs[0].submit == 107);
    const drv_rolespec *r = &w.jobs[0].role[DRV_ROLE_WORKER];
    assert_int_equal(r->replicas, 6);
    assert_int_equal(r->min, 1);
    assert_int_equal(r->max, 64);
    assert_int_equal(r->req.gpu, 1);
    assert_int_equal(w.jobs[0].role[DRV_ROLE_PS].replicas, 0);
    assert_int_equal(w.jobs[0].calib_app, drv_calib_find(&tu_calib, "cifar10") + 1);
    assert_true(w.jobs[0].batch == 2048);
    /* ncf does not scale: at most one worker */
    assert_int_equal(w.jobs[1].role[DRV_ROLE_WORKER].max, 1);
    /* bert-9 at 384 with local batches from 4: 384 / 4 = 96, capped at 64 workers */
    assert_true(w.jobs[2].submit == 2957.5);
    assert_int_equal(w.jobs[2].role[DRV_ROLE_WORKER].replicas, 12);
    assert_int_equal(w.jobs[2].role[DRV_ROLE_WORKER].max, 64);
    drv_workload_fini(&w);
}

static void test_pollux_bad_rows(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("pollux", false);
    const char *f = tu_path("tests/fixtures/trace/pollux-bad.csv");
    assert_int_equal(drv_trace_load(&w, f, &tu_cat, &o, NULL, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "pollux-bad.csv:3:7: time: expected a number"));
    assert_non_null(strstr(d.msg, "found '1x0'"));
    assert_int_equal(w.n, 0); /* untouched */

    drv_log_set(NULL, NULL, DRV_LOG_ERROR); /* the skips are logged as warnings */
    o.skip_bad = true;
    int32_t skipped = 0;
    assert_int_equal(drv_trace_load(&w, f, &tu_cat, &o, &skipped, &d), 0);
    assert_int_equal(skipped, 5);
    assert_int_equal(w.n, 2);
    assert_string_equal(w.jobs[1].name, "ncf-2");
    drv_workload_fini(&w);

    /* each malformed row on its own, to see every message */
    static const struct {
        const char *row, *want;
    } cases[] = {
        {"bad-2,200,resnet,6,2048", ":2:11: application: expected one of bert"},
        {"bad-3,300,cifar10,6", ":2:1: row: expected 5 comma-separated fields, found 4"},
        {"bad-4,400,cifar10,0,2048", ":2:19: num_replicas: expected a whole number in [1, 64]"},
        {"bad-5,500,cifar10,4,100000", ":2:21: batch_size: expected a batch in [128, 4096]"},
        {"bad-6,-1,cifar10,4,256", ":2:7: time: expected a number in [0,"},
    };
    o.skip_bad = false;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "name,time,application,num_replicas,batch_size\n%s\n",
                 cases[i].row);
        assert_int_equal(drv_trace_parse(&w, "t.csv", text, &tu_cat, &o, NULL, &d), DRV_EPARSE);
        if (!strstr(d.msg, cases[i].want))
            fail_msg("row '%s': got '%s', want '%s'", cases[i].row, d.msg, cases[i].want);
    }
}

static void test_philly(void **unused)
{
    (void)unused;
    drv_workload w = {0}, w2 = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("philly", false);
    const char *f = tu_path("tests/fixtures/trace/philly-good.csv");
    assert_int_equal(drv_trace_load(&w, f, &tu_cat, &o, NULL, &d), 0);
    assert_int_equal(w.n, 3);
    /* times after the earliest row (2017-10-09 06:13:03): 48 min 52 s, 0, one day */
    assert_true(w.jobs[0].submit == 2932);
    assert_true(w.jobs[1].submit == 0);
    assert_true(w.jobs[2].submit == 86400);
    /* rigid at num_gpus */
    const drv_rolespec *r = &w.jobs[2].role[DRV_ROLE_WORKER];
    assert_int_equal(r->replicas, 8);
    assert_int_equal(r->min, 8);
    assert_int_equal(r->max, 8);
    /* the step budget lasts `duration` on the packed placement (two nodes of 4) */
    int32_t gpn[2] = {4, 4};
    double step = drv_calib_step_time(&tu_calib, w.jobs[2].calib_app - 1, gpn, 2, w.jobs[2].batch);
    assert_true(fabs(w.jobs[2].max_steps * step - 600) < 1e-6);
    /* seeded choices: the same seed gives the same jobs */
    assert_int_equal(drv_trace_load(&w2, f, &tu_cat, &o, NULL, &d), 0);
    for (int32_t i = 0; i < w.n; i++) {
        assert_int_equal(w.jobs[i].calib_app, w2.jobs[i].calib_app);
        assert_true(w.jobs[i].max_steps == w2.jobs[i].max_steps);
    }
    drv_workload_fini(&w);
    drv_workload_fini(&w2);

    f = tu_path("tests/fixtures/trace/philly-bad.csv");
    assert_int_equal(drv_trace_load(&w, f, &tu_cat, &o, NULL, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "philly-bad.csv:3:1: timestamp: expected a time"));
    drv_log_set(NULL, NULL, DRV_LOG_ERROR);
    o.skip_bad = true;
    int32_t skipped = 0;
    assert_int_equal(drv_trace_load(&w, f, &tu_cat, &o, &skipped, &d), 0);
    assert_int_equal(skipped, 3);
    assert_int_equal(w.n, 1);
    drv_workload_fini(&w);
    char text[] = "timestamp,duration,num_gpus,gpu_time,cluster\n"
                  "2017-10-10 06:13:03,600.0,2.5,4800.0,x\n";
    o.skip_bad = false;
    assert_int_equal(drv_trace_parse(&w, "p.csv", text, &tu_cat, &o, NULL, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "p.csv:2:27: num_gpus: expected a whole number"));
}

static void test_tiresias_and_headers(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("auto", false);
    assert_int_equal(drv_trace_load(&w, tu_path("tests/fixtures/trace/tiresias-good.csv"), &tu_cat,
                                    &o, NULL, &d),
                     0);
    assert_int_equal(w.n, 2);
    assert_string_equal(w.jobs[1].name, "vgg11-1");
    assert_true(w.jobs[1].submit == 30);
    assert_int_equal(w.jobs[1].role[DRV_ROLE_WORKER].replicas, 8);
    drv_workload_fini(&w);
    char bad[] = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
                 "0,1,0,606,vgg19,164,30\n"
                 "1,8,30,133,vgg11,0,23\n";
    assert_int_equal(drv_trace_parse(&w, "t.csv", bad, &tu_cat, &o, NULL, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "t.csv:3:18: duration: expected a number in [1,"));

    assert_int_equal(
        drv_trace_load(&w, tu_path("tests/fixtures/trace/unknown.csv"), &tu_cat, &o, NULL, &d),
        DRV_EPARSE);
    assert_non_null(strstr(d.msg, "unknown.csv:1:1: header: expected the header of a pollux"));
    o = opts("pollux", false);
    assert_int_equal(
        drv_trace_load(&w, tu_path("tests/fixtures/trace/philly-good.csv"), &tu_cat, &o, NULL, &d),
        DRV_EPARSE);
    assert_non_null(strstr(d.msg, "(format pollux)"));
    assert_int_equal(drv_trace_format_parse("csv"), -1);
    o.calib = NULL;
    assert_int_equal(
        drv_trace_load(&w, tu_path("tests/fixtures/trace/pollux-good.csv"), &tu_cat, &o, NULL, &d),
        DRV_EINVAL);
}

/*
 * One cifar10 job alone under the Pollux mechanics: it arrives at 107, the 60 s round at 120
 * places it, it starts after the 30 s pause and then needs exactly steps x step time. With 4
 * workers on one node its JCT is 120 - 107 + 30 + steps(256) * step({4}, 256).
 */
static void test_pollux_mechanics_one_job(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("pollux", false);
    char text[] = "name,time,application,num_replicas,batch_size\n"
                  "cifar10-0,107,cifar10,4,256\n";
    assert_int_equal(drv_trace_parse(&w, "one.csv", text, &tu_cat, &o, NULL, &d), 0);
    drv_cluster_spec c = {0};
    drv_cluster_pollux(&c, DRV_POLLUX_NODES, DRV_POLLUX_GPUS);
    drv_profile p;
    assert_int_equal(drv_profile_builtin("tiresias", &p, &d), 0);
    p.period = DRV_POLLUX_ROUND;
    drv_sim_config cfg = {.seed = 1, .check = true, .calib = &tu_calib};
    drv_sim *s = NULL;
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run(s, &d), 0);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    int32_t app = drv_calib_find(&tu_calib, "cifar10"), gpn[1] = {4};
    double want =
        120 - 107 + 30 +
        drv_calib_steps(&tu_calib, app, 256) * drv_calib_step_time(&tu_calib, app, gpn, 1, 256);
    assert_true(fabs((r[0].end - r[0].submit) - want) < 1e-6 * want);
    assert_int_equal(r[0].workers, 4);
    drv_sim_free(s);
    drv_cluster_fini(&c);
    drv_workload_fini(&w);
}

/* Every allocation of a trace load may fail: the load then fails cleanly (ASan checks for
 * leaks) and leaves the workload untouched; eventually it succeeds. */
static void test_failing_allocations(void **unused)
{
    (void)unused;
    drv_trace_opts o = opts("auto", false);
    int rc = DRV_ENOMEM;
    long nth;
    for (nth = 1; nth < 1000 && rc == DRV_ENOMEM; nth++) {
        drv_workload w = {0};
        drv_diag d = {{0}};
        drv_alloc_fail_at(nth);
        rc = drv_trace_load(&w, tu_path("tests/fixtures/trace/pollux-good.csv"), &tu_cat, &o, NULL,
                            &d);
        drv_alloc_fail_at(0);
        if (rc == DRV_ENOMEM)
            assert_int_equal(w.n, 0);
        else
            assert_int_equal(w.n, 3);
        drv_workload_fini(&w);
    }
    assert_int_equal(rc, 0);
    assert_true(nth > 2); /* some allocation did fail on the way */
    rc = DRV_ENOMEM;
    for (nth = 1; nth < 100000 && rc != 0; nth++) {
        drv_calib c = {0};
        drv_diag d = {{0}};
        drv_alloc_fail_at(nth);
        rc = drv_calib_load(&c, tu_path("data/pollux/profiles"), &d);
        drv_alloc_fail_at(0);
        if (rc) {
            assert_int_equal(rc, DRV_ENOMEM);
            assert_null(c.v);
        }
        drv_calib_fini(&c);
        nth += nth / 8; /* the load allocates a few hundred times: sample, do not try all */
    }
    assert_int_equal(rc, 0);
}

/* Blank lines count: a bad row after them is named by its own line (strtok skipped them and
 * named the row two lines early). A job name twice is refused, and so is a NUL byte. */
static void test_lines_duplicates_nul(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("auto", false);
    char text[] = "name,time,application,num_replicas,batch_size\n"
                  "a,0,cifar10,1,128\n\n\nb,1x,cifar10,1,128\n";
    assert_int_equal(drv_trace_parse(&w, "t.csv", text, &tu_cat, &o, NULL, &d), DRV_EPARSE);
    assert_string_equal(d.msg, "t.csv:5:3: time: expected a number in [0, 1e+10], found '1x'");
    char dup[] = "name,time,application,num_replicas,batch_size\r\n"
                 "a,0,cifar10,1,128\r\n\r\nb,1,cifar10,1,128\r\na,2,cifar10,1,128\r\n";
    assert_int_equal(drv_trace_parse(&w, "t.csv", dup, &tu_cat, &o, NULL, &d), DRV_EPARSE);
    assert_string_equal(d.msg, "t.csv:5:1: row: job 'a' is in the trace twice");
    assert_int_equal(w.n, 0);
    /* with --on-bad-row skip the second 'a' is skipped and counted like any bad row */
    char dup2[] = "name,time,application,num_replicas,batch_size\n"
                  "a,0,cifar10,1,128\nb,1,cifar10,1,128\na,2,cifar10,1,128\n";
    drv_trace_opts skip = opts("auto", true);
    int32_t skipped = 0;
    drv_log_set(NULL, NULL, DRV_LOG_ERROR);
    assert_int_equal(drv_trace_parse(&w, "t.csv", dup2, &tu_cat, &skip, &skipped, &d), 0);
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
    assert_int_equal(skipped, 1);
    assert_int_equal(w.n, 2);
    assert_true(w.jobs[1].submit == 1);
    drv_workload_fini(&w);
    char ok[] = "name,time,application,num_replicas,batch_size\n\na,0,cifar10,1,128\n";
    assert_int_equal(drv_trace_parse(&w, "t.csv", ok, &tu_cat, &o, NULL, &d), 0);
    assert_int_equal(w.n, 1);
    assert_int_equal(w.jobs[0].line, 3);
    drv_workload_fini(&w);

    char tmp[] = "/tmp/drover-test-nul-XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    fwrite("name,time,application,num_replicas,batch_size\na,0,cifar10,1,128\n\0b,1,x\n", 1, 71, f);
    fclose(f);
    assert_int_equal(drv_trace_load(&w, tmp, &tu_cat, &o, NULL, &d), DRV_EPARSE);
    char want[300];
    snprintf(want, sizeof want, "%s: byte 64: a NUL byte; expected text", tmp);
    assert_string_equal(d.msg, want);
    assert_int_equal(w.n, 0);
    remove(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_duplicates_nul),
        cmocka_unit_test(test_pollux),
        cmocka_unit_test(test_pollux_bad_rows),
        cmocka_unit_test(test_philly),
        cmocka_unit_test(test_tiresias_and_headers),
        cmocka_unit_test(test_pollux_mechanics_one_job),
        cmocka_unit_test(test_failing_allocations),
    };
    return cmocka_run_group_tests(tests, tu_models_setup, tu_models_teardown);
}
