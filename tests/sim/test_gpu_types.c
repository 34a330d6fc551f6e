/*
 * Tests for the simulator's reports per GPU type (issue 27; sim_metrics.c, report.c): each
 * type's utilisation, worked out by hand from the inputs; the type each job ran on in
 * jobs-POLICY.csv; the per-type block of the table, summary.json, summary.csv and the report
 * page (read back from the files); and nothing of it on a cluster without types.
 *
 * The cluster: node f, type fast, 2 GPUs; node s, type slow, 3 GPUs. Jobs A and B, alike, each
 * one worker of 2 GPUs, submitted at 0: each node fits one of them and no more (2 + 2 > 3), so
 * one runs on each type, both bound by the cycle at 0 and, being alike, ending together at T.
 * Job C holds no GPU and does one step (it ends long before T). So over the window [0, T]:
 * fast holds 2 of its 2 GPUs all along (utilisation 1), slow 2 of its 3 (2/3), the cluster
 * 4 of 5 (0.8) - whatever T is.
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

/* Writes text to path and loads it as a cluster into c. */
static void load_cluster(drv_cluster_spec *c, const char *path, const char *text)
{
    drv_diag d = {{0}};
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(drv_cluster_load(c, path, &d), 0);
    remove(path);
}

/* Jobs A and B (one worker of 2 GPUs, alike) and C (one worker of 1 CPU, one step). */
static void three_jobs(drv_workload *w)
{
    drv_diag d = {{0}};
    drv_genparams g;
    drv_genparams_default(&g, 1);
    g.jobs = 3;
    assert_int_equal(drv_workload_generate(w, &g, &tu_cat, &d), 0);
    for (int32_t i = 0; i < 3; i++) {
        drv_jobspec *js = &w->jobs[i];
        memset(js->role, 0, sizeof js->role);
        js->role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {1000, GiB, i < 2 ? 2 : 0}, 1000};
        js->model = w->jobs[0].model;
        js->target_loss = w->jobs[0].target_loss;
        js->submit = 0;
        js->max_steps = i < 2 ? 5000 : 1;
        snprintf(js->name, sizeof js->name, "%c", 'A' + i);
    }
}

/* Runs gang-fifo on c, its summary into *sum; with dir, its files written there. */
static void run(const drv_cluster_spec *c, const drv_workload *w, drv_summary *sum, const char *dir)
{
    drv_diag d = {{0}};
    drv_profile p;
    assert_int_equal(drv_profile_builtin("gang-fifo", &p, &d), 0);
    drv_sim_config cfg = {.seed = 1, .check = true};
    drv_sim *s;
    assert_int_equal(drv_sim_new(c, w, &tu_cat, &p, &cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run(s, &d), 0);
    drv_sim_summary(s, sum);
    int32_t n;
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    assert_int_equal(n, 3);
    /* the window's premise: A and B bound at 0 (start is after the pod-start pause), alike */
    assert_true(r[0].start >= 0 && r[0].start == r[1].start && r[0].end == r[1].end);
    assert_true(r[2].end > 0 && r[2].end < r[0].end);
    if (dir)
        assert_int_equal(drv_report_run_files(dir, s, NULL, &d), 0);
    drv_sim_free(s);
}

static const char typed[] = "nodes:\n"
                            "  - {name: f, cpu: 8, memory: 32Gi, gpu: 2, gpuType: fast}\n"
                            "  - {name: s, cpu: 8, memory: 32Gi, gpu: 3, gpuType: slow}\n";

/* Each type's utilisation is the hand-worked answer, and they sum, weighted, to the cluster's. */
static void test_util_per_type(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0};
    drv_workload w = {0};
    load_cluster(&c, "types-util.yaml", typed);
    three_jobs(&w);
    drv_summary sum;
    run(&c, &w, &sum, NULL);
    assert_int_equal(sum.ngpu_types, 2);
    assert_string_equal(sum.gpu_type[0].name, "fast"); /* the cluster file's order */
    assert_string_equal(sum.gpu_type[1].name, "slow");
    assert_int_equal(sum.gpu_type[0].gpus, 2);
    assert_int_equal(sum.gpu_type[1].gpus, 3);
    assert_true(fabs(sum.gpu_type[0].util - 2.0 / 2.0) < 1e-9);
    assert_true(fabs(sum.gpu_type[1].util - 2.0 / 3.0) < 1e-9);
    assert_true(fabs(sum.gpu_util - 4.0 / 5.0) < 1e-9);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* Reads the whole file at path into buf (NUL-terminated). */
static void slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t got = fread(buf, 1, n - 1, f);
    buf[got] = 0;
    fclose(f);
}

/* The report page of dir (its summary files written from sum first) into buf; then the
 * directory's files are removed and the directory too. */
static void page_of(const char *dir, const drv_summary *sum, char *buf, size_t n)
{
    drv_diag d = {{0}};
    drv_report_data r;
    assert_int_equal(drv_report_summary_files(dir, sum, 1, NULL, &d), 0);
    assert_int_equal(drv_report_load(&r, dir, &d), 0);
    assert_int_equal(drv_report_html(dir, &r, false, &d), 0);
    drv_report_data_fini(&r);
    char path[256];
    snprintf(path, sizeof path, "%s/index.html", dir);
    slurp(path, buf, n);
    static const char *const files[] = {"jobs-gang-fifo.csv", "timeline-gang-fifo.csv",
                                        "summary.json", "summary.csv", "index.html"};
    for (size_t k = 0; k < sizeof files / sizeof files[0]; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        remove(path);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* jobs-gang-fifo.csv's last column names each job's type: A and B one each, C none; the report
 * page, read back from the directory, shows each type's utilisation. */
static void test_gpu_type_column(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0};
    drv_workload w = {0};
    load_cluster(&c, "types-col.yaml", typed);
    three_jobs(&w);
    char dir[] = "/tmp/drover-types-XXXXXX", path[256], buf[4096];
    assert_non_null(mkdtemp(dir));
    drv_summary sum;
    run(&c, &w, &sum, dir);
    snprintf(path, sizeof path, "%s/jobs-gang-fifo.csv", dir);
    slurp(path, buf, sizeof buf);
    const char *nl = strchr(buf, '\n');
    assert_non_null(nl);
    assert_int_equal(strncmp(nl - 9, ",gpu_type", 9), 0);
    char *row[3];
    const char *type[3];
    for (int i = 0; i < 3; i++) { /* each row's start, before any is cut at its end */
        char want[4] = {'\n', (char)('A' + i), ',', 0};
        assert_non_null(row[i] = strstr(buf, want));
        row[i]++;
    }
    for (int i = 0; i < 3; i++) {
        *strchr(row[i], '\n') = 0;
        type[i] = strrchr(row[i], ',') + 1;
    }
    const char *ta = type[0], *tb = type[1], *tc = type[2];
    assert_true((!strcmp(ta, "fast") && !strcmp(tb, "slow")) ||
                (!strcmp(ta, "slow") && !strcmp(tb, "fast")));
    assert_string_equal(tc, "");
    static char page[65536];
    page_of(dir, &sum, page, sizeof page);
    const char *sec = strstr(page, "<h2 id=\"gpu-types\">");
    assert_non_null(sec);
    assert_non_null(strstr(sec, "<th>fast (2 GPUs) %</th><th>slow (3 GPUs) %</th>"));
    assert_non_null(strstr(sec, "<tr><td>gang-fifo</td><td>100.0</td><td>66.7</td></tr>"));
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* The table's per-type block, summary.json's gpu_types and summary.csv's NAME.gpu_util; on an
 * untyped cluster none of them, and the job rows have no gpu_type column. */
static void test_outputs_only_with_types(void **unused)
{
    (void)unused;
    drv_cluster_spec c = {0}, plain = {0};
    drv_workload w = {0};
    load_cluster(&c, "types-out.yaml", typed);
    load_cluster(&plain, "types-plain.yaml",
                 "nodes:\n  - {name: f, cpu: 8, memory: 32Gi, gpu: 2}\n"
                 "  - {name: s, cpu: 8, memory: 32Gi, gpu: 3}\n");
    three_jobs(&w);
    drv_summary v[2];
    run(&c, &w, &v[0], NULL);
    run(&plain, &w, &v[1], NULL);
    assert_int_equal(v[1].ngpu_types, 0);
    static char buf[16384];
    for (int k = 0; k < 2; k++) {
        FILE *f = fmemopen(buf, sizeof buf - 1, "w");
        drv_report_table(f, &v[k], 1);
        fputc(0, f);
        fclose(f);
        const char *blk = strstr(buf, "per GPU type");
        assert_true(k == 0 ? blk != NULL : blk == NULL);
        if (k == 0) /* policy row: 100.0 for fast, 66.7 for slow */
            assert_non_null(strstr(blk, "gang-fifo          100.0      66.7"));
        f = fmemopen(buf, sizeof buf - 1, "w");
        assert_int_equal(drv_report_json(f, &v[k], 1), 0);
        fputc(0, f);
        fclose(f);
        assert_true(k == 0 ? strstr(buf, "\"gpu_types\"") != NULL
                           : strstr(buf, "gpu_types") == NULL);
        if (k == 0)
            assert_non_null(strstr(buf, "\"type\": \"slow\",\n        \"gpus\": 3,"));
        f = fmemopen(buf, sizeof buf - 1, "w");
        drv_report_csv(f, &v[k], 1);
        fputc(0, f);
        fclose(f);
        const char *hdr_end = strstr(buf, "resizes");
        assert_non_null(hdr_end);
        assert_true(k == 0 ? !strncmp(hdr_end, "resizes,fast.gpu_util,slow.gpu_util\n", 36)
                           : !strncmp(hdr_end, "resizes\n", 8));
        if (k == 0)
            assert_non_null(strstr(buf, ",1,0.666667\n"));
    }
    char dir[] = "/tmp/drover-types-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    run(&plain, &w, &v[1], dir);
    snprintf(path, sizeof path, "%s/jobs-gang-fifo.csv", dir);
    slurp(path, buf, sizeof buf);
    assert_null(strstr(buf, "gpu_type"));
    assert_non_null(strstr(buf, "preemptions\n"));
    static char page[65536];
    page_of(dir, &v[1], page, sizeof page);
    assert_null(strstr(page, "gpu-types"));
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
    drv_cluster_fini(&plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_util_per_type),
        cmocka_unit_test(test_gpu_type_column),
        cmocka_unit_test(test_outputs_only_with_types),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
