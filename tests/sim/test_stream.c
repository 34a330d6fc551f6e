/*
 * Tests for streamed runs (drv_sim_new_stream, jobsource.h): a streamed run equals the
 * in-memory run of the same jobs (summary bit for bit, every job's result row), also when the
 * horizon cuts the trace, for generated jobs and for a CSV trace read row by row; it releases
 * the memory of finished jobs; a source out of order or short of what it announced stops the
 * run with an error naming the job and file:line; a CSV trace's bad or unsorted rows are
 * errors naming file:line before anything runs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drover/jobsource.h"
#include "drover/policy.h"
#include "drover/sim.h"
#include "drover/trace.h"
#include "testutil.h"

/* Result rows told through drv_sim_config.finished, by job id; each told exactly once. */
typedef struct rows {
    drv_jobresult *r;
    char (*name)[64];
    int32_t n, told;
    bool twice;
} rows;

static void on_finished(void *arg, int32_t job, const drv_jobspec *spec, const drv_jobresult *r)
{
    rows *x = arg;
    assert_true(job >= 0 && job < x->n);
    x->twice |= x->name[job][0] != 0;
    x->r[job] = *r;
    snprintf(x->name[job], sizeof x->name[job], "%s", spec->name);
    x->told++;
}

static void rows_init(rows *x, int32_t n)
{
    x->r = calloc((size_t)n, sizeof *x->r);
    x->name = calloc((size_t)n, sizeof *x->name);
    x->n = n;
    x->told = 0;
    x->twice = false;
}

static void rows_fini(rows *x)
{
    free(x->r);
    free(x->name);
}

/* One policy on g's jobs, in memory and streamed; both checked on every cycle. */
static void compare(const drv_cluster_spec *c, const drv_genparams *g, const char *policy,
                    bool all_done)
{
    drv_diag d = {{0}};
    drv_workload w = {0};
    assert_int_equal(drv_workload_generate(&w, g, &tu_cat, &d), 0);
    drv_profile p;
    assert_int_equal(drv_profile_builtin(policy, &p, &d), 0);
    rows mem, str;
    rows_init(&mem, w.n);
    rows_init(&str, w.n);

    drv_sim_config cfg = {.seed = 5, .check = true, .finished = on_finished, .finished_arg = &mem};
    drv_sim *a, *b;
    assert_int_equal(drv_sim_new(c, &w, &tu_cat, &p, &cfg, &a, &d), 0);
    if (drv_sim_run(a, &d) != 0)
        fail_msg("%s in memory: %s", policy, d.msg);
    drv_jobsource src;
    assert_int_equal(drv_jobsource_generate(&src, g, &tu_cat, &d), 0);
    assert_int_equal(src.jobs, w.n);
    cfg.finished_arg = &str;
    assert_int_equal(drv_sim_new_stream(c, &src, &tu_cat, &p, &cfg, &b, &d), 0);
    if (drv_sim_run(b, &d) != 0)
        fail_msg("%s streamed: %s", policy, d.msg);

    drv_summary sa, sb;
    drv_sim_summary(a, &sa);
    drv_sim_summary(b, &sb);
    assert_true(sa.done > 0);
    assert_memory_equal(&sa, &sb, sizeof sa);

    /* every row told once, the same in both, and the in-memory ones those of drv_sim_jobs */
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(a, &n);
    assert_int_equal(n, w.n);
    assert_false(mem.twice || str.twice);
    assert_int_equal(mem.told, str.told);
    for (int32_t j = 0; j < n; j++) {
        if (mem.name[j][0])
            assert_memory_equal(&mem.r[j], &r[j], sizeof r[j]);
        assert_string_equal(mem.name[j], str.name[j]);
        assert_memory_equal(&mem.r[j], &str.r[j], sizeof r[j]);
    }
    assert_null(drv_sim_jobs(b, &n));
    assert_int_equal(n, 0);
    assert_null(drv_sim_workload(b));

    /* finished jobs' state went back: every finished job released, their pages returned */
    const drv_state *st = drv_sim_state(b);
    assert_int_equal(st->nreleased, sb.done);
    if (all_done) { /* then whole pages of them went back */
        assert_int_equal(sb.done, w.n);
        assert_true(st->job_pages.returned > 0);
    }
    drv_sim_free(a);
    drv_sim_free(b);
    drv_jobsource_fini(&src);
    rows_fini(&mem);
    rows_fini(&str);
    drv_workload_fini(&w);
}

/* Every built-in policy on 300 generated jobs: the streamed run is the in-memory one. */
static void test_stream_equals_memory(void **unused)
{
    (void)unused;
    drv_cluster_spec c;
    drv_cluster_default(&c);
    drv_genparams g;
    drv_genparams_default(&g, 11);
    g.jobs = 300;
    g.mean_interarrival = 30;
    for (int i = 0; i < drv_profile_builtin_count(); i++)
        compare(&c, &g, drv_profile_builtin_name(i), true);
    drv_cluster_fini(&c);
}

/* Generated jobs are named <family>-<index>, their users user-<k> and queue "default" (the
 * generator writes them without snprintf: these are what it used to write). */
static void test_generated_names(void **unused)
{
    (void)unused;
    drv_genparams g = {.jobs = 0, .mean_interarrival = 1.0, .seed = 5};
    drv_rng r;
    drv_rng_seed(&r, g.seed);
    double t = 0;
    static const int32_t idx[] = {0, 1, 9, 10, 99, 12345, 999999, 1000000, 2147483647};
    for (size_t k = 0; k < sizeof idx / sizeof idx[0]; k++) {
        drv_jobspec j;
        drv_generate_job(&r, &t, idx[k], &g, &tu_cat, &j);
        char want[64];
        snprintf(want, sizeof want, "%s-%d", tu_cat.v[j.model].name, idx[k]);
        assert_string_equal(j.name, want);
        assert_true(strncmp(j.user, "user-", 5) == 0 && j.user[5] >= '0' && j.user[5] <= '3' &&
                    j.user[6] == '\0');
        assert_string_equal(j.queue, "default");
    }
}

/* A horizon in mid-trace: jobs still running are told at the end, jobs never submitted are
 * not, and the summaries still agree (unfinished jobs count in neither). */
static void test_stream_horizon(void **unused)
{
    (void)unused;
    drv_cluster_spec c;
    drv_cluster_default(&c);
    c.timing.horizon = 3000; /* about 100 of the 200 jobs submitted */
    drv_genparams g;
    drv_genparams_default(&g, 4);
    g.jobs = 200;
    g.mean_interarrival = 30;
    compare(&c, &g, "gang-fifo", false);
    compare(&c, &g, "drover", false);
    drv_cluster_fini(&c);
}

/* A source of fixed rows: submission times and lines of a pretend file. */
typedef struct fixed {
    const double *submit;
    int32_t n, next;
} fixed;

static int fixed_next(drv_jobsource *src, drv_jobspec *out, drv_diag *d)
{
    (void)d;
    fixed *f = src->ctx;
    if (f->next >= f->n)
        return 0;
    drv_genparams g;
    drv_genparams_default(&g, 1);
    drv_rng r;
    drv_rng_seed(&r, (uint64_t)f->next + 1);
    double t = 0;
    drv_generate_job(&r, &t, f->next, &g, &tu_cat, out);
    out->submit = f->submit[f->next];
    out->line = 2 + f->next; /* a header, then one job per line */
    f->next++;
    return 1;
}

static const drv_jobsource_ops fixed_ops = {.next = fixed_next};

/* Runs a fixed source announcing `announced` jobs; returns drv_sim_run's status. */
static int run_fixed(const double *submit, int32_t n, int32_t announced, drv_diag *d)
{
    drv_cluster_spec c;
    drv_cluster_default(&c);
    fixed f = {submit, n, 0};
    drv_jobsource src = {.ops = &fixed_ops,
                         .jobs = announced,
                         .pods = 40 * announced,
                         .file = "jobs.csv",
                         .ctx = &f};
    drv_profile p;
    assert_int_equal(drv_profile_builtin("gang-fifo", &p, d), 0);
    drv_sim_config cfg = {.seed = 1, .check = true};
    drv_sim *s;
    assert_int_equal(drv_sim_new_stream(&c, &src, &tu_cat, &p, &cfg, &s, d), 0);
    int rc = drv_sim_run(s, d);
    drv_sim_free(s);
    drv_cluster_fini(&c);
    return rc;
}

static void test_stream_errors(void **unused)
{
    (void)unused;
    drv_diag d = {{0}};
    static const double sorted[] = {0, 10, 10, 20}, unsorted[] = {0, 10, 5, 20};
    assert_int_equal(run_fixed(sorted, 4, 4, &d), 0);
    assert_int_equal(run_fixed(unsorted, 4, 4, &d), DRV_EINVAL);
    /* the third job, on line 4 of the pretend file */
    assert_non_null(strstr(d.msg, "jobs.csv:4: job "));
    assert_non_null(strstr(d.msg, "order of submission"));
    memset(&d, 0, sizeof d);
    assert_int_equal(run_fixed(sorted, 3, 4, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "4 jobs announced, 3 read"));

    drv_cluster_spec c;
    drv_cluster_default(&c);
    c.nqueues = 1; /* a cluster declaring queues is refused before anything is read */
    snprintf(c.queue_file, sizeof c.queue_file, "cluster.yaml");
    drv_jobsource src = {.ops = &fixed_ops, .jobs = 1, .pods = 40, .file = "jobs.csv"};
    drv_profile p;
    assert_int_equal(drv_profile_builtin("gang-fifo", &p, &d), 0);
    drv_sim_config cfg = {.seed = 1};
    drv_sim *s = NULL;
    assert_int_equal(drv_sim_new_stream(&c, &src, &tu_cat, &p, &cfg, &s, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "cluster.yaml: queues"));
    assert_null(s);
    c.nqueues = 0;
    drv_cluster_fini(&c);
}

/* ---- a CSV trace read row by row ------------------------------------------------------- */

#define COLUMNS "name=job,submit=t,gpus=g,duration=secs,model=app"

/* Writes a trace of n jobs (a header, then one row each) to a file of the build directory;
 * swap: rows 2 and 3 exchanged (out of order); bad: the GPUs of row 3 not a number. */
static const char *write_trace(const char *name, int n, bool swap, bool bad)
{
    static char file[4096];
    const char *dir = getenv("DROVER_BINARY_DIR");
    snprintf(file, sizeof file, "%s/%s", dir ? dir : ".", name);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    static const char *apps[] = {"cifar10", "imagenet", "bert", "ncf", "not-calibrated"};
    fprintf(f, "job,t,g,secs,app\n");
    for (int i = 0; i < n; i++) {
        int k = swap && (i == 1 || i == 2) ? 3 - i : i; /* rows 2, 3: jobs 2 and 1 */
        /* arrivals every 40 s on average, 1-8 GPUs, 5 min to 3 h: deterministic spread */
        double t = 40.0 * k + (k * 7919 % 13);
        int g = 1 << (k * 31 % 4);
        double secs = 300 + (k * 104729 % 10500);
        if (bad && i == 2)
            fprintf(f, "job-%d,%.0f,many,%.0f,%s\n", k, t, secs, apps[k % 5]);
        else
            fprintf(f, "job-%d,%.0f,%d,%.0f,%s\n", k, t, g, secs, apps[k % 5]);
    }
    fclose(f);
    return file;
}

/* The trace read whole and streamed, each run with the policy: the same runs. */
static void compare_csv(const char *file, const char *policy)
{
    drv_diag d = {{0}};
    drv_trace_opts o = {DRV_TRACE_CSV, false, 7, &tu_calib, DRV_POLLUX_GPUS};
    drv_workload w = {0};
    assert_int_equal(drv_trace_load_columns(&w, file, COLUMNS, &tu_cat, &o, NULL, &d), 0);
    drv_jobsource src;
    if (drv_jobsource_csv(&src, file, COLUMNS, &tu_cat, &o, &d) != 0)
        fail_msg("%s", d.msg);
    assert_int_equal(src.jobs, w.n);
    drv_cluster_spec c = {0};
    drv_cluster_pollux(&c, 8, DRV_POLLUX_GPUS);
    drv_profile p;
    assert_int_equal(drv_profile_builtin(policy, &p, &d), 0);
    p.period = DRV_POLLUX_ROUND;
    rows mem, str;
    rows_init(&mem, w.n);
    rows_init(&str, w.n);
    drv_sim_config cfg = {.seed = 2,
                          .check = true,
                          .calib = &tu_calib,
                          .finished = on_finished,
                          .finished_arg = &mem};
    drv_sim *a, *b;
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &a, &d), 0);
    assert_int_equal(drv_sim_run(a, &d), 0);
    cfg.finished_arg = &str;
    assert_int_equal(drv_sim_new_stream(&c, &src, &tu_cat, &p, &cfg, &b, &d), 0);
    if (drv_sim_run(b, &d) != 0)
        fail_msg("%s streamed: %s", policy, d.msg);
    drv_summary sa, sb;
    drv_sim_summary(a, &sa);
    drv_sim_summary(b, &sb);
    assert_int_equal(sa.done, w.n);
    assert_memory_equal(&sa, &sb, sizeof sa);
    assert_int_equal(mem.told, w.n);
    assert_int_equal(str.told, w.n);
    for (int32_t j = 0; j < w.n; j++) {
        assert_string_equal(mem.name[j], w.jobs[j].name);
        assert_string_equal(str.name[j], w.jobs[j].name);
        assert_memory_equal(&mem.r[j], &str.r[j], sizeof mem.r[j]);
    }
    drv_sim_free(a);
    drv_sim_free(b);
    drv_jobsource_fini(&src);
    rows_fini(&mem);
    rows_fini(&str);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

static void test_stream_csv_equals_memory(void **unused)
{
    (void)unused;
    const char *file = write_trace("test_stream_sorted.csv", 300, false, false);
    compare_csv(file, "gang-fifo");
    compare_csv(file, "tiresias");
    compare_csv(file, "drover");
    remove(file);
}

static void test_stream_csv_errors(void **unused)
{
    (void)unused;
    drv_diag d = {{0}};
    drv_trace_opts o = {DRV_TRACE_CSV, false, 7, &tu_calib, DRV_POLLUX_GPUS};
    drv_jobsource src;
    char want[4200];

    /* rows 2 and 3 (lines 3 and 4) swapped: line 4 is submitted before line 3 */
    const char *file = write_trace("test_stream_unsorted.csv", 10, true, false);
    assert_int_equal(drv_jobsource_csv(&src, file, COLUMNS, &tu_cat, &o, &d), DRV_EINVAL);
    snprintf(want, sizeof want, "%s:4: submit: expected rows in order of submission", file);
    assert_non_null(strstr(d.msg, want));
    assert_null(src.ops);
    remove(file);

    /* a bad row: file:line:column and the field, before anything runs ... */
    file = write_trace("test_stream_bad.csv", 10, false, true);
    assert_int_equal(drv_jobsource_csv(&src, file, COLUMNS, &tu_cat, &o, &d), DRV_EPARSE);
    snprintf(want, sizeof want, "%s:4:", file);
    assert_non_null(strstr(d.msg, want));
    assert_non_null(strstr(d.msg, "g: expected"));
    /* ... or with skip_bad left out, here and in the run, like the in-memory reader does */
    o.skip_bad = true;
    drv_workload w = {0};
    int32_t skipped = 0;
    assert_int_equal(drv_trace_load_columns(&w, file, COLUMNS, &tu_cat, &o, &skipped, &d), 0);
    assert_int_equal(skipped, 1);
    assert_int_equal(drv_jobsource_csv(&src, file, COLUMNS, &tu_cat, &o, &d), 0);
    assert_int_equal(src.jobs, w.n);
    int32_t n = 0;
    drv_jobspec js;
    while (src.ops->next(&src, &js, &d) == 1) {
        assert_string_equal(js.name, w.jobs[n].name);
        assert_true(js.submit == w.jobs[n].submit);
        assert_int_equal(js.line, n < 2 ? n + 2 : n + 3); /* line 4 was the bad one */
        n++;
    }
    assert_int_equal(n, w.n);
    drv_jobsource_fini(&src);
    drv_workload_fini(&w);
    remove(file);

    o.skip_bad = false;
    memset(&d, 0, sizeof d);
    assert_int_equal(drv_jobsource_csv(&src, "/nonexistent/trace.csv", COLUMNS, &tu_cat, &o, &d),
                     DRV_ENOENT);
    assert_non_null(strstr(d.msg, "/nonexistent/trace.csv"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_equals_memory),     cmocka_unit_test(test_generated_names),
        cmocka_unit_test(test_stream_horizon),           cmocka_unit_test(test_stream_errors),
        cmocka_unit_test(test_stream_csv_equals_memory), cmocka_unit_test(test_stream_csv_errors),
    };
    return cmocka_run_group_tests(tests, tu_models_setup, tu_models_teardown);
}
