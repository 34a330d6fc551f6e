/*
 * Tests of the trace readers added after pollux, philly and tiresias (src/sim/trace_read.h):
 * helios, pai-task, pai-job, gavel, philly-log and a CSV mapped by --trace-columns, on the
 * small files in tests/fixtures/trace/ (README.md there says which are real and which ours).
 * Expected values are worked out by hand from the fixture rows and docs/data.md's mapping; a
 * job's step budget is checked against the calibrated step time of its packed placement
 * (duration / step), computed here independently.
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

#include "drover/trace.h"
#include "testutil.h"

static drv_trace_opts opts(const char *fmt, bool skip)
{
    drv_trace_opts o = {.format = drv_trace_format_parse(fmt),
                        .skip_bad = skip,
                        .seed = 1,
                        .calib = &tu_calib,
                        .gpus_per_node = 4};
    return o;
}

/* A rigid job of g one-GPU workers whose budget is duration seconds on its packed placement. */
static void assert_duration_job(const drv_jobspec *j, int32_t g, double duration)
{
    const drv_rolespec *r = &j->role[DRV_ROLE_WORKER];
    assert_int_equal(r->replicas, g);
    assert_int_equal(r->min, g);
    assert_int_equal(r->max, g);
    assert_int_equal(r->req.gpu, 1);
    assert_int_equal(j->role[DRV_ROLE_PS].replicas, 0);
    assert_true(j->calib_app >= 1 && j->calib_app <= tu_calib.n);
    int32_t gpn[64], nn = 0;
    for (int32_t left = g; left > 0; left -= 4)
        gpn[nn++] = left < 4 ? left : 4;
    double step = drv_calib_step_time(&tu_calib, j->calib_app - 1, gpn, nn, j->batch);
    assert_true(step > 0);
    assert_true(fabs(j->max_steps * step - fmax(duration, step)) < 1e-6 * duration + 1e-9);
}

static void test_helios(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("auto", false);
    int32_t skipped = -1;
    assert_int_equal(
        drv_trace_load(&w, tu_path("tests/fixtures/trace/helios.csv"), &tu_cat, &o, &skipped, &d),
        0);
    /* 4 rows: a CPU-only job (gpu_num 0) and one that ran 0 s are left out */
    assert_int_equal(w.n, 2);
    assert_int_equal(skipped, 0);
    assert_string_equal(w.jobs[0].name, "500001");
    assert_string_equal(w.jobs[0].user, "uA1");
    assert_string_equal(w.jobs[0].queue, "vcQ1");
    assert_true(w.jobs[0].submit == 0);
    assert_duration_job(&w.jobs[0], 1, 3600);
    assert_string_equal(w.jobs[1].name, "500002");
    assert_string_equal(w.jobs[1].queue, "vcQ2");
    assert_true(w.jobs[1].submit == 120); /* 10:02:00 - 10:00:00 */
    assert_duration_job(&w.jobs[1], 8, 300);
    drv_workload_fini(&w);
}

/* auto recognises a log longer than one buffer of its first line (a real one is 100s of MB) */
static void test_helios_long(void **unused)
{
    (void)unused;
    enum { ROWS = 200 };
    size_t cap = 128 * (ROWS + 1), n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    n += (size_t)snprintf(text + n, cap - n,
                          "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,"
                          "end_time,duration,queue\n");
    for (int i = 0; i < ROWS; i++)
        n += (size_t)snprintf(text + n, cap - n, "%d,u1,vc1,%d,4,1,COMPLETED,%d,%d,%d,600,0\n", i,
                              1 + i % 4, 100 + i, 100 + i, 700 + i);
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("auto", false);
    assert_int_equal(drv_trace_parse(&w, "long.csv", text, &tu_cat, &o, NULL, &d), 0);
    assert_int_equal(w.n, ROWS);
    assert_true(w.jobs[ROWS - 1].submit == ROWS - 1);
    assert_int_equal(w.jobs[ROWS - 1].role[DRV_ROLE_WORKER].replicas, 1 + (ROWS - 1) % 4);
    drv_workload_fini(&w);
    free(text);
}

static void test_helios_bad_rows(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("helios", false);
    assert_int_equal(
        drv_trace_load(&w, tu_path("tests/fixtures/trace/helios-bad.csv"), &tu_cat, &o, NULL, &d),
        DRV_EPARSE);
    assert_non_null(strstr(d.msg, "helios-bad.csv:3:17: gpu_num: expected a whole number"));
    assert_non_null(strstr(d.msg, "found 'four'"));
    assert_int_equal(w.n, 0);
    o = opts("helios", true);
    int32_t skipped = -1;
    assert_int_equal(drv_trace_load(&w, tu_path("tests/fixtures/trace/helios-bad.csv"), &tu_cat, &o,
                                    &skipped, &d),
                     0);
    /* four is not a number; row 4 stops before duration; "May 1st" is not a time */
    assert_int_equal(skipped, 3);
    assert_int_equal(w.n, 1);
    drv_workload_fini(&w);
}

static void test_pai_task(void **unused)
{
    (void)unused;
    drv_workload w = {0}, w2 = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("auto", false);
    assert_int_equal(
        drv_trace_load(&w, tu_path("tests/fixtures/trace/pai-task.csv"), &tu_cat, &o, NULL, &d), 0);
    /* left out: a ps task without GPUs, a Running task, a task that ran 0 s */
    assert_int_equal(w.n, 3);
    assert_string_equal(w.jobs[0].name, "a1f0c2.worker");
    assert_true(w.jobs[0].submit == 0);
    assert_duration_job(&w.jobs[0], 1, 3600);
    /* 4 instances x 200 % of a GPU */
    assert_string_equal(w.jobs[1].name, "b7e913.worker");
    assert_true(w.jobs[1].submit == 500);
    assert_duration_job(&w.jobs[1], 8, 7600);
    /* 25 % of a GPU still takes one */
    assert_string_equal(w.jobs[2].name, "d9a6b0.worker");
    assert_true(w.jobs[2].submit == 1500);
    assert_duration_job(&w.jobs[2], 1, 60);
    /* the published tables have no header: the format is named, the same jobs result */
    o = opts("pai-task", false);
    assert_int_equal(drv_trace_load(&w2, tu_path("tests/fixtures/trace/pai-task-noheader.csv"),
                                    &tu_cat, &o, NULL, &d),
                     0);
    assert_int_equal(w2.n, w.n);
    for (int32_t i = 0; i < w.n; i++) {
        assert_string_equal(w2.jobs[i].name, w.jobs[i].name);
        assert_true(w2.jobs[i].max_steps == w.jobs[i].max_steps);
        assert_int_equal(w2.jobs[i].calib_app, w.jobs[i].calib_app);
    }
    /* ... and auto cannot recognise it */
    o = opts("auto", false);
    assert_int_equal(drv_trace_load(&w2, tu_path("tests/fixtures/trace/pai-task-noheader.csv"),
                                    &tu_cat, &o, NULL, &d),
                     DRV_EPARSE);
    assert_non_null(strstr(d.msg, "pai-task-noheader.csv:1:1: header: expected the header"));
    drv_workload_fini(&w);
    drv_workload_fini(&w2);
}

static void test_pai_job(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("auto", false);
    assert_int_equal(
        drv_trace_load(&w, tu_path("tests/fixtures/trace/pai-job.csv"), &tu_cat, &o, NULL, &d), 0);
    assert_int_equal(w.n, 2); /* the Waiting job is left out */
    assert_string_equal(w.jobs[0].name, "a1f0c2");
    assert_string_equal(w.jobs[0].user, "u01");
    assert_duration_job(&w.jobs[0], 1, 600);
    assert_true(w.jobs[1].submit == 300);
    assert_duration_job(&w.jobs[1], 1, 60);
    drv_workload_fini(&w);
}

static void test_gavel(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("auto", false);
    assert_int_equal(drv_trace_load(&w, tu_path("tests/fixtures/trace/gavel-925e2b.trace"), &tu_cat,
                                    &o, NULL, &d),
                     0);
    assert_int_equal(w.n, 4);
    /* Transformer (batch size 128), 51427 steps, arrives at 0, 8 workers -> bert */
    assert_string_equal(w.jobs[0].name, "transformer-0");
    assert_true(w.jobs[0].submit == 0);
    assert_true(w.jobs[0].max_steps == 51427);
    assert_int_equal(w.jobs[0].calib_app, drv_calib_find(&tu_calib, "bert") + 1);
    assert_int_equal(w.jobs[0].role[DRV_ROLE_WORKER].replicas, 8);
    assert_int_equal(w.jobs[0].role[DRV_ROLE_WORKER].max, 8);
    /* Recommendation (batch size 8192) -> ncf, arrives at 9357 s */
    assert_int_equal(w.jobs[1].calib_app, drv_calib_find(&tu_calib, "ncf") + 1);
    assert_true(w.jobs[1].submit == 9357);
    assert_true(w.jobs[1].max_steps == 1033);
    /* ResNet-18 (batch size 32), one worker -> cifar10 at a batch of 32 if validated */
    const drv_calib_app *c10 = &tu_calib.v[drv_calib_find(&tu_calib, "cifar10")];
    assert_int_equal(w.jobs[3].calib_app, drv_calib_find(&tu_calib, "cifar10") + 1);
    assert_true(w.jobs[3].batch == fmin(fmax(32, c10->init_bsz), c10->max_bsz));
    assert_int_equal(w.jobs[3].role[DRV_ROLE_WORKER].replicas, 1);
    drv_workload_fini(&w);
}

static void test_philly_log(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("auto", false);
    assert_int_equal(
        drv_trace_load(&w, tu_path("tests/fixtures/trace/philly-log.json"), &tu_cat, &o, NULL, &d),
        0);
    assert_int_equal(w.n, 2); /* a job without attempts is left out */
    assert_string_equal(w.jobs[0].name, "application_1_0001");
    assert_string_equal(w.jobs[0].user, "usr1");
    assert_string_equal(w.jobs[0].queue, "vc01");
    /* last attempt on two servers of 4 GPUs; ran 60 s, then 3600 s */
    assert_duration_job(&w.jobs[0], 8, 3660);
    assert_true(w.jobs[0].submit == 0);
    /* the attempt still running (end_time null) does not count */
    assert_true(w.jobs[1].submit == 600);
    assert_duration_job(&w.jobs[1], 1, 1800);
    drv_workload_fini(&w);
}

static void test_philly_log_bad(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("philly-log", false);
    char text[] = "[{\"jobid\": \"app_9\", \"submitted_time\": \"yesterday\", \"attempts\": []}]";
    assert_int_equal(drv_trace_parse(&w, "log.json", text, &tu_cat, &o, NULL, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "log.json: job 0 (app_9): submitted_time: expected a time"));
    char broken[] = "[{\"jobid\": \"app_9\",\n  \"submitted_time\": }]";
    assert_int_equal(drv_trace_parse(&w, "log.json", broken, &tu_cat, &o, NULL, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "log.json:2:"));
    assert_int_equal(w.n, 0);
}

static void test_mapped_csv(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("auto", false);
    int32_t skipped = -1;
    assert_int_equal(drv_trace_load_columns(&w, tu_path("tests/fixtures/trace/mapped.csv"),
                                            "name=id,submit=queued_at,gpus=n_gpu,duration=secs,"
                                            "model=arch",
                                            &tu_cat, &o, &skipped, &d),
                     0);
    assert_int_equal(w.n, 2); /* job-c asks for no GPU */
    assert_int_equal(skipped, 0);
    assert_string_equal(w.jobs[0].name, "job-a");
    assert_int_equal(w.jobs[0].calib_app, drv_calib_find(&tu_calib, "imagenet") + 1);
    assert_duration_job(&w.jobs[0], 2, 600);
    assert_true(w.jobs[1].submit == 30);
    assert_duration_job(&w.jobs[1], 1, 300); /* "resnet" is not ours: a seeded model */
    /* a column the header does not have is named */
    assert_int_equal(drv_trace_load_columns(&w, tu_path("tests/fixtures/trace/mapped.csv"),
                                            "submit=queued_at,gpus=gpus,duration=secs", &tu_cat, &o,
                                            NULL, &d),
                     DRV_EPARSE);
    assert_non_null(strstr(d.msg, "mapped.csv:1:1: header: expected a column 'gpus' (gpus of "
                                  "format columns), found 'id,queued_at,n_gpu,secs,arch'"));
    assert_int_equal(w.n, 2); /* untouched */
    /* a mapping without a required key, or with an unknown one */
    assert_int_equal(drv_trace_load_columns(&w, tu_path("tests/fixtures/trace/mapped.csv"),
                                            "submit=queued_at,gpus=n_gpu", &tu_cat, &o, NULL, &d),
                     DRV_EINVAL);
    assert_non_null(strstr(d.msg, "--trace-columns: expected duration=COLUMN"));
    assert_int_equal(drv_trace_load_columns(&w, tu_path("tests/fixtures/trace/mapped.csv"),
                                            "gpu=n_gpu", &tu_cat, &o, NULL, &d),
                     DRV_EINVAL);
    assert_non_null(strstr(d.msg, "found 'gpu'"));
    drv_workload_fini(&w);
}

static void test_format_names(void **unused)
{
    (void)unused;
    static const char *const names[] = {"pollux", "philly",     "tiresias", "pai-job", "pai-task",
                                        "helios", "philly-log", "gavel",    "columns"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        int f = drv_trace_format_parse(names[i]);
        assert_true(f >= 0 && f < DRV_TRACE_NFORMATS);
        assert_string_equal(drv_trace_format_name(f), names[i]);
    }
    assert_int_equal(drv_trace_format_parse("alibaba"), -1);
    /* the same seed gives the same seeded models; the choice depends on the row only */
    drv_workload a = {0}, b = {0};
    drv_diag d = {{0}};
    drv_trace_opts o = opts("helios", false);
    assert_int_equal(
        drv_trace_load(&a, tu_path("tests/fixtures/trace/helios.csv"), &tu_cat, &o, NULL, &d), 0);
    assert_int_equal(
        drv_trace_load(&b, tu_path("tests/fixtures/trace/helios.csv"), &tu_cat, &o, NULL, &d), 0);
    for (int32_t i = 0; i < a.n; i++)
        assert_int_equal(a.jobs[i].calib_app, b.jobs[i].calib_app);
    drv_workload_fini(&a);
    drv_workload_fini(&b);
}

/* ---- one number, date and name rule for every reader (issue 26) ----------------------------- */

#define HELIOS_H                                                                                   \
    "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,"      \
    "queue\n"
#define HELIOS_ROW(id, user, gpus, submit)                                                         \
    id "," user ",vc1," gpus ",16,1,COMPLETED," submit ",2020-06-09 18:41:27,2020-06-09 "          \
       "18:45:36,249,0\n"
#define GOOD_T "2020-06-09 18:41:27"
#define PAI_H                                                                                      \
    "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\n"
#define LONG62 "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"
#define GAVEL_ROW "ResNet-18 (batch size 32)\tcd x\t-step\t1\t100\t0.0\t1\n"

/* A trace the readers must refuse: its format (or --trace-columns mapping), its text, and what
 * the message must hold. Each was accepted (or named the wrong line) before. */
typedef struct refusal {
    const char *format, *columns, *text, *want;
} refusal;

static const refusal refusals[] = {
    /* numbers: decimal only, as docs/data.md says (strtod took these) */
    {"auto", NULL, HELIOS_H HELIOS_ROW("1", "u1", "0x10", GOOD_T),
     "t.csv:2:10: gpu_num: expected a whole number in [0, 1e+07], found '0x10'"},
    {"auto", NULL, HELIOS_H HELIOS_ROW("1", "u1", " 2", GOOD_T),
     "gpu_num: expected a whole "
     "number in [0, 1e+07], found ' 2'"},
    {"auto", NULL, PAI_H "a1,worker,0x2,Terminated,1000,4600,600,29.3,100,V100\n",
     "t.csv:2:11: inst_num: expected a whole number in [0, 1e+06], found '0x2'"},
    {"columns", "name=id,submit=t,gpus=g,duration=d", "id,t,g,d\na,0x10,1,10\n",
     "t.csv:2:3: t: expected a time: seconds in [0, 1e11] or YYYY-MM-DD HH:MM:SS, found '0x10'"},
    {"columns", "name=id,submit=t,gpus=g,duration=d", "id,t,g,d\na,0,1.5,10\n",
     "t.csv:2:5: g: expected a whole number in [0, 1e+07], found '1.5'"},
    /* a run time that is not one: 0 leaves the row out, (0, 1) s is malformed */
    {"columns", "name=id,submit=t,gpus=g,duration=d", "id,t,g,d\na,0,1,1e-300\n",
     "t.csv:2: duration: expected a run time of 0 s (the row is left out) or in [1, 1e+09] s, "
     "found 1e-300"},
    /* dates: the calendar's (sscanf took February 31st and an hour of -1) */
    {"auto", NULL, HELIOS_H HELIOS_ROW("1", "u1", "4", "2017-02-31 00:00:00"),
     "t.csv:2:27: submit_time: expected a time: seconds in [0, 1e11] or YYYY-MM-DD HH:MM:SS, "
     "found '2017-02-31 00:00:00'"},
    {"auto", NULL, HELIOS_H HELIOS_ROW("1", "u1", "4", "2020-06-09 -1:41:27"),
     "found '2020-06-09 -1:41:27'"},
    {"philly", NULL,
     "timestamp,duration,num_gpus,gpu_time,cluster\n2017-02-31 00:00:00,100,1,100,c\n",
     "t.csv:2:1: timestamp: expected a time as YYYY-MM-DD HH:MM:SS, found '2017-02-31 "
     "00:00:00'"},
    {"philly", NULL,
     "timestamp,duration,num_gpus,gpu_time,cluster\n2017-01-01 -1:00:00,100,1,100,c\n",
     "t.csv:2:1: timestamp: expected a time as YYYY-MM-DD HH:MM:SS"},
    {"philly-log", NULL,
     "[{\"jobid\": \"j1\", \"submitted_time\": \"2017-02-29 00:00:00\", \"attempts\": []}]",
     "t.csv: job 0 (j1): submitted_time: expected a time as YYYY-MM-DD HH:MM:SS, found "
     "'2017-02-29 00:00:00'"},
    /* a job name twice, in every format (only pollux, philly and tiresias refused it) */
    {"auto", NULL, HELIOS_H HELIOS_ROW("1", "u1", "4", GOOD_T) HELIOS_ROW("1", "u1", "4", GOOD_T),
     "t.csv:3: name: job '1' is in the trace twice"},
    {"columns", "name=id,submit=t,gpus=g,duration=d", "id,t,g,d\na,0,1,10\na,5,1,10\n",
     "t.csv:3: name: job 'a' is in the trace twice"},
    {"philly-log", NULL,
     "[{\"jobid\": \"j1\", \"submitted_time\": \"2017-10-07 01:00:00\", \"attempts\": [{"
     "\"start_time\": \"2017-10-07 01:00:30\", \"end_time\": \"2017-10-07 01:01:30\", "
     "\"detail\": [{\"gpus\": [\"gpu0\"]}]}]},\n"
     " {\"jobid\": \"j1\", \"submitted_time\": \"2017-10-07 01:00:00\", \"attempts\": [{"
     "\"start_time\": \"2017-10-07 01:00:30\", \"end_time\": \"2017-10-07 01:01:30\", "
     "\"detail\": [{\"gpus\": [\"gpu0\"]}]}]}]",
     "t.csv: job 1 (j1): name: job 'j1' is in the trace twice"},
    {"auto", NULL,
     PAI_H "a1,w,1,Terminated,1000,4600,600,29.3,100,V100\n"
           "a1,w,1,Terminated,1000,4600,600,29.3,100,V100\n",
     "t.csv:3: name: job 'a1.w' is in the trace twice"},
    /* a name longer than a job's 63 bytes is refused, not cut (two such became one name) */
    {"auto", NULL,
     HELIOS_H HELIOS_ROW(LONG62 "xa", "u1", "4", GOOD_T) HELIOS_ROW(LONG62 "xb", "u1", "4", GOOD_T),
     "t.csv:2: name: expected a name of 1 to 63 letters, digits, '-', '_' or '.', found '" LONG62
     "xa'"},
    /* names that would break a CSV cell or a file name */
    {"auto", NULL, HELIOS_H HELIOS_ROW("1", "u\"1", "4", GOOD_T),
     "t.csv:2: user: expected a name of 1 to 31 letters, digits, '-', '_' or '.', found 'u\"1'"},
    {"pollux", NULL, "name,time,application,num_replicas,batch_size\nj/1,0,cifar10,1,128\n",
     "t.csv:2:1: name: expected a name of 1 to 63 letters, digits, '-', '_' or '.', found 'j/1'"},
    {"tiresias", NULL,
     "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n1,1,0,10,vgg 19,100,0\n",
     "t.csv:2:10: model_name: expected a name of 1 to 63 letters"},
    /* a key twice in a JSON object: jansson kept the last */
    {"philly-log", NULL,
     "[{\"jobid\": \"j1\", \"jobid\": \"j2\", \"submitted_time\": \"2017-10-07 01:00:00\"}]",
     "t.csv:1:"},
    /* the line named after blank lines (strtok skipped them: two lines early here) */
    {"columns", "name=id,submit=t,gpus=g,duration=d", "id,t,g,d\n\na,0,1,10\n\nb,1x,1,10\n",
     "t.csv:5:3: t: expected a time"},
    {"gavel", NULL,
     GAVEL_ROW "\n\n"
               "ResNet-18 (batch size 32)\tcd x\t-step\t1\tmany\t0.0\t1\n",
     "t.csv:4:"},
};

/* Loads text as a file t.csv (through the public loaders, as a user's file goes). */
static int load_text(const refusal *c, drv_diag *d)
{
    char dirp[] = "/tmp/drover-trace-XXXXXX", path[64];
    assert_non_null(mkdtemp(dirp));
    snprintf(path, sizeof path, "%s/t.csv", dirp);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(c->text, f);
    fclose(f);
    drv_workload w = {0};
    drv_trace_opts o = opts(c->columns ? "auto" : c->format, false);
    int rc = c->columns ? drv_trace_load_columns(&w, path, c->columns, &tu_cat, &o, NULL, d)
                        : drv_trace_load(&w, path, &tu_cat, &o, NULL, d);
    drv_workload_fini(&w);
    remove(path);
    rmdir(dirp);
    return rc;
}

static void test_one_rule_for_every_reader(void **unused)
{
    (void)unused;
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        drv_diag d = {{0}};
        int rc = load_text(&refusals[i], &d);
        if (rc != DRV_EPARSE || !strstr(d.msg, refusals[i].want))
            fail_msg("case %zu (%s): rc %d, '%s'; wanted '%s'", i, refusals[i].format, rc, d.msg,
                     refusals[i].want);
    }
    /* a header longer than the reader keeps (2047 bytes) is refused, not cut */
    static char longhead[2200];
    memset(longhead, 'x', sizeof longhead);
    memcpy(longhead, "id,t,g,d,", 9);
    memcpy(longhead + 2150, "\na,0,1,10\n", 11); /* with its NUL */
    refusal wide = {"columns", "name=id,submit=t,gpus=g,duration=d", longhead,
                    "t.csv:1:1: header: expected at most 2047 bytes, found 2150"};
    drv_diag dw = {{0}};
    assert_int_equal(load_text(&wide, &dw), DRV_EPARSE);
    if (!strstr(dw.msg, wide.want))
        fail_msg("a long header: '%s'", dw.msg);
    /* ... each one only because of what it holds: the same traces fixed are read */
    drv_diag d = {{0}};
    refusal ok = {"auto", NULL,
                  HELIOS_H HELIOS_ROW("1", "u1", "4", "2020-02-29 23:59:59")
                      HELIOS_ROW(LONG62 "x", "u_1.b-c", "2", GOOD_T),
                  NULL};
    assert_int_equal(load_text(&ok, &d), 0);
    /* a key twice in --trace-columns */
    drv_workload w = {0};
    drv_trace_opts o = opts("auto", false);
    assert_int_equal(drv_trace_load_columns(&w, tu_path("tests/fixtures/trace/mapped.csv"),
                                            "name=id,submit=queued_at,gpus=n_gpu,duration=secs,"
                                            "name=arch",
                                            &tu_cat, &o, NULL, &d),
                     DRV_EINVAL);
    assert_non_null(strstr(d.msg, "--trace-columns: key 'name' given twice"));
}

/* Every allocation of a load may fail: it then fails cleanly and leaves w untouched. */
static void test_failing_allocations(void **unused)
{
    (void)unused;
    static const char *const files[] = {"helios.csv", "gavel-925e2b.trace", "pai-task.csv"};
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        drv_trace_opts o = opts("auto", false);
        int rc = DRV_ENOMEM;
        long nth;
        for (nth = 1; nth < 1000 && rc == DRV_ENOMEM; nth++) {
            drv_workload w = {0};
            drv_diag d = {{0}};
            drv_alloc_fail_at(nth);
            rc = drv_trace_load(&w, tu_path("tests/fixtures/trace/%s", files[f]), &tu_cat, &o, NULL,
                                &d);
            drv_alloc_fail_at(0);
            if (rc == DRV_ENOMEM)
                assert_int_equal(w.n, 0);
            drv_workload_fini(&w);
        }
        assert_int_equal(rc, 0);
        assert_true(nth > 2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helios),
        cmocka_unit_test(test_helios_long),
        cmocka_unit_test(test_helios_bad_rows),
        cmocka_unit_test(test_pai_task),
        cmocka_unit_test(test_pai_job),
        cmocka_unit_test(test_gavel),
        cmocka_unit_test(test_philly_log),
        cmocka_unit_test(test_philly_log_bad),
        cmocka_unit_test(test_mapped_csv),
        cmocka_unit_test(test_format_names),
        cmocka_unit_test(test_one_rule_for_every_reader),
        cmocka_unit_test(test_failing_allocations),
    };
    return cmocka_run_group_tests(tests, tu_models_setup, tu_models_teardown);
}
