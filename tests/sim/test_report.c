/*
 * Tests for the report files and reading them back (src/sim/report.c, report_read.c): the CSV
 * reader and its file:line messages, the placement log, the progress callback, and a round
 * trip (what a run writes, drv_report_load reads back to the same numbers), also under failing
 * allocations.
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

static char dir[256];

static int setup(void **unused)
{
    (void)unused;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/drover-test-report-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **unused)
{
    (void)unused;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to dir/name and returns the path. */
static const char *put(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static const char *const want[] = {"jct_s", "job"};

static void test_csv_reads_columns_by_name(void **unused)
{
    (void)unused;
    /* Columns in another order, an extra column, CRLF line ends, an empty cell. */
    const char *p = put("a.csv", "job,extra,jct_s\r\nj1,x,12.5\r\nj2,y,\r\n");
    drv_csv c;
    drv_diag d = {{0}};
    assert_int_equal(drv_csv_open(&c, p, want, 2, &d), 0);
    assert_int_equal(drv_csv_next(&c, &d), 1);
    assert_string_equal(drv_csv_get(&c, 1), "j1");
    double x = 0;
    assert_int_equal(drv_csv_num(&c, 0, false, &x, &d), 0);
    assert_true(x == 12.5);
    assert_int_equal(drv_csv_next(&c, &d), 1);
    assert_string_equal(drv_csv_get(&c, 1), "j2");
    assert_int_equal(drv_csv_num(&c, 0, true, &x, &d), 0);
    assert_true(x == -1);
    assert_int_equal(drv_csv_num(&c, 0, false, &x, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "a.csv:3: jct_s: expected a number, found an empty cell"));
    assert_int_equal(drv_csv_next(&c, &d), 0);
    drv_csv_close(&c);
}

static void test_csv_long_line(void **unused)
{
    (void)unused;
    char text[8192], name[5000];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    snprintf(text, sizeof text, "job,jct_s\n%s,1\n", name);
    drv_csv c;
    drv_diag d = {{0}};
    assert_int_equal(drv_csv_open(&c, put("long.csv", text), want, 2, &d), 0);
    assert_int_equal(drv_csv_next(&c, &d), 1);
    assert_int_equal(strlen(drv_csv_get(&c, 1)), sizeof name - 1);
    drv_csv_close(&c);
}

static void test_csv_errors(void **unused)
{
    (void)unused;
    struct {
        const char *name, *text, *msg;
        int open_rc; /* expected from open; 0 means the error comes from reading the rows */
    } cases[] = {
        {"nocol.csv", "job,jct\nj,1\n", "nocol.csv:1: expected a column 'jct_s' in the header",
         DRV_EPARSE},
        {"empty.csv", "", "empty.csv:1: expected a header line", DRV_EPARSE},
        {"short.csv", "job,jct_s\nj1,1\nj2\n",
         "short.csv:3: expected 2 fields like the header, found 1", 0},
        {"long.csv2", "job,jct_s\nj1,1,7\n",
         "long.csv2:2: expected 2 fields like the header, found 3", 0},
        {"nan.csv", "job,jct_s\nj1,1\nj2,1\nj3,12x\n",
         "nan.csv:4: jct_s: expected a number, found '12x'", 0},
        {"inf.csv", "job,jct_s\nj1,inf\n", "inf.csv:2: jct_s: expected a number, found 'inf'", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        drv_csv c;
        drv_diag d = {{0}};
        const char *p = put(cases[i].name, cases[i].text);
        int rc = drv_csv_open(&c, p, want, 2, &d);
        if (cases[i].open_rc) {
            assert_int_equal(rc, cases[i].open_rc);
        } else {
            assert_int_equal(rc, 0);
            double x;
            while ((rc = drv_csv_next(&c, &d)) == 1 &&
                   (rc = drv_csv_num(&c, 0, false, &x, &d)) == 0)
                ;
            assert_int_equal(rc, DRV_EPARSE);
            drv_csv_close(&c);
        }
        if (!strstr(d.msg, cases[i].msg))
            fail_msg("case %s: got '%s', want '%s'", cases[i].name, d.msg, cases[i].msg);
    }
    drv_csv c;
    drv_diag d = {{0}};
    char p[512];
    snprintf(p, sizeof p, "%s/missing.csv", dir);
    assert_int_equal(drv_csv_open(&c, p, want, 2, &d), DRV_ENOENT);
    assert_non_null(strstr(d.msg, "missing.csv: cannot read"));
}

/* ---- runs --------------------------------------------------------------------------------- */

typedef struct prog_log {
    int calls;
    int32_t last_done, jobs;
    bool monotone;
} prog_log;

static void on_progress(void *arg, const drv_progress *p)
{
    prog_log *l = arg;
    if (p->done < l->last_done)
        l->monotone = false;
    l->last_done = p->done;
    l->jobs = p->jobs;
    l->calls++;
}

typedef struct scenario {
    drv_catalogue cat;
    drv_cluster_spec cluster;
    drv_workload wl;
} scenario;

static void scenario_init(scenario *sc, int32_t jobs)
{
    drv_diag d = {{0}};
    memset(sc, 0, sizeof *sc);
    assert_int_equal(drv_catalogue_builtin(&sc->cat, &d), 0);
    drv_cluster_default(&sc->cluster);
    drv_genparams g;
    drv_genparams_default(&g, 3);
    g.jobs = jobs;
    assert_int_equal(drv_workload_generate(&sc->wl, &g, &sc->cat, &d), 0);
}

static void scenario_fini(scenario *sc)
{
    drv_workload_fini(&sc->wl);
    drv_cluster_fini(&sc->cluster);
    drv_catalogue_fini(&sc->cat);
}

static drv_sim *run_policy(scenario *sc, const char *policy, drv_sim_config *cfg)
{
    drv_profile p;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_builtin(policy, &p, &d), 0);
    drv_sim *s = NULL;
    assert_int_equal(drv_sim_new(&sc->cluster, &sc->wl, &sc->cat, &p, cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run(s, &d), 0);
    return s;
}

/* The placement log is off by default; on, every interval is well formed and the log agrees
 * with the job results (a job's pods are bound from its start until its end). */
static void test_placement_log(void **unused)
{
    (void)unused;
    scenario sc;
    scenario_init(&sc, 20);
    drv_sim_config off = {.seed = 1, .check = true};
    drv_sim *s = run_policy(&sc, "gang-fifo", &off);
    int32_t n = -1;
    assert_null(drv_sim_placements(s, &n));
    drv_summary a;
    drv_sim_summary(s, &a);
    drv_sim_free(s);

    prog_log pl = {.monotone = true};
    drv_sim_config on = {
        .seed = 1, .check = true, .placements = true, .progress = on_progress, .progress_arg = &pl};
    s = run_policy(&sc, "gang-fifo", &on);
    const drv_placement *p = drv_sim_placements(s, &n);
    assert_non_null(p);
    assert_true(n > 0);
    int32_t nj;
    const drv_jobresult *r = drv_sim_jobs(s, &nj);
    for (int32_t i = 0; i < n; i++) {
        assert_true(p[i].start >= 0);
        assert_true(p[i].end < 0 || p[i].end >= p[i].start);
        assert_true(p[i].job >= 0 && p[i].job < nj);
        if (r[p[i].job].end >= 0)
            assert_true(p[i].end >= 0 && p[i].end <= r[p[i].job].end);
        assert_true(r[p[i].job].start >= 0 && p[i].start <= r[p[i].job].start);
    }
    /* Recording changes nothing about the run. */
    drv_summary b;
    drv_sim_summary(s, &b);
    assert_memory_equal(&a, &b, sizeof a);
    /* Progress: called, never going backwards, last call sees every finished job. */
    assert_true(pl.calls >= 1);
    assert_true(pl.monotone);
    assert_int_equal(pl.last_done, b.done);
    assert_int_equal(pl.jobs, 20);
    drv_sim_free(s);
    scenario_fini(&sc);
}

/* Writes two policies' files into dir, then reads them back; fills want_sum. */
static void write_run(scenario *sc, drv_summary *sums, int32_t *nticks, int32_t *npl)
{
    const char *pol[] = {"k8s-default", "gang-fifo"};
    drv_diag d = {{0}};
    for (int i = 0; i < 2; i++) {
        drv_sim_config cfg = {.seed = 1, .placements = true};
        drv_sim *s = run_policy(sc, pol[i], &cfg);
        drv_sim_summary(s, &sums[i]);
        drv_sim_ticks(s, &nticks[i]);
        drv_sim_placements(s, &npl[i]);
        assert_int_equal(drv_report_run_files(dir, s, NULL, &d), 0);
        drv_sim_free(s);
    }
    assert_int_equal(drv_report_summary_files(dir, sums, 2, NULL, &d), 0);
    drv_scenario scen = {
        .desc = "test scenario", .jobs = 12, .nodes = 8, .cpu_m = 256000, .seed = 1};
    assert_int_equal(drv_report_scenario_file(dir, &scen, &d), 0);
}

static void test_round_trip(void **unused)
{
    (void)unused;
    scenario sc;
    scenario_init(&sc, 12);
    drv_summary sums[2];
    int32_t nticks[2], npl[2];
    write_run(&sc, sums, nticks, npl);

    drv_report_data r;
    drv_diag d = {{0}};
    assert_int_equal(drv_report_load(&r, dir, &d), 0);
    assert_int_equal(r.n, 2);
    assert_true(r.has_scen);
    assert_string_equal(r.scen.desc, "test scenario");
    assert_true(r.scen.cpu_m == 256000);
    for (int i = 0; i < 2; i++) {
        assert_string_equal(r.sum[i].policy, sums[i].policy);
        assert_int_equal(r.sum[i].done, sums[i].done);
        assert_true(fabs(r.sum[i].avg_jct - sums[i].avg_jct) < 1e-6 * sums[i].avg_jct);
        assert_int_equal(r.runs[i].jobs, 12);
        for (int32_t k = 0; k < 12; k++) {
            assert_string_equal(r.runs[i].job_names[k], sc.wl.jobs[k].name);
            assert_string_equal(r.runs[i].users[r.runs[i].job_user[k]], sc.wl.jobs[k].user);
        }
        assert_true(r.runs[i].nusers >= 1 && r.runs[i].nusers <= 4);
        assert_int_equal(r.runs[i].njct, sums[i].done);
        /* Two ways to the mean JCT agree: the summary's and the jobs file's. */
        double sum = 0;
        for (int32_t k = 0; k < r.runs[i].njct; k++) {
            sum += r.runs[i].jct[k];
            if (k)
                assert_true(r.runs[i].jct[k - 1] <= r.runs[i].jct[k]);
        }
        assert_true(fabs(sum / r.runs[i].njct - sums[i].avg_jct) < 0.01);
        assert_int_equal(r.runs[i].nticks, nticks[i]);
        assert_true(r.runs[i].has_pl);
        assert_int_equal(r.runs[i].npl, npl[i]);
        assert_int_equal(r.runs[i].nnodes, 8);
        assert_string_equal(r.runs[i].nodes[0], "node-0");
        assert_string_equal(r.runs[i].nodes[7], "node-7");
        assert_true(drv_plot_has_gantt(&r.runs[i]));
    }
    drv_report_data_fini(&r);

    /* Every allocation of the read-back may fail: the result is DRV_ENOMEM and no leak. */
    for (long nth = 1;; nth++) {
        drv_alloc_fail_at(nth);
        int rc = drv_report_load(&r, dir, &d);
        drv_alloc_fail_at(0);
        if (rc == 0) {
            drv_report_data_fini(&r);
            break;
        }
        assert_int_equal(rc, DRV_ENOMEM);
        assert_true(nth < 100000);
    }
    scenario_fini(&sc);
}

/* A malformed summary.json names the file, the line and the field. */
static void test_bad_summary(void **unused)
{
    (void)unused;
    scenario sc;
    scenario_init(&sc, 12);
    drv_summary sums[2];
    int32_t nticks[2], npl[2];
    write_run(&sc, sums, nticks, npl);
    put("summary.json", "[\n  {\"policy\": \"k8s-default\"},\n  {\"policy\": \"gang-fifo\",\n"
                        "   \"jobs\": \"many\"}\n]\n");
    drv_report_data r;
    drv_diag d = {{0}};
    assert_int_equal(drv_report_load(&r, dir, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "summary.json:2: policy #1: \"avg_jct_s\": expected a number"));
    put("summary.json", "[\n  {\"policy\": \n");
    assert_int_equal(drv_report_load(&r, dir, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "summary.json:3: expected JSON"));
    scenario_fini(&sc);
}

/* Reads dir/name into a static buffer (at most 1 MiB), NUL-terminated. */
static const char *slurp(const char *name)
{
    static char buf[1 << 20];
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* Replaces every "from" by "to" in dir/name. */
static void replace_in(const char *name, const char *from, const char *to)
{
    const char *text = slurp(name);
    size_t cap = strlen(text) * (strlen(to) + 1) + 1;
    char *out = malloc(cap), *o = out;
    assert_non_null(out);
    for (const char *p = text; *p;) {
        if (strncmp(p, from, strlen(from)) == 0) {
            o += sprintf(o, "%s", to);
            p += strlen(from);
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    put(name, out);
    free(out);
}

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/*
 * Names are data, never code. A policy (from a profiles file) and a node whose names would close
 * gnuplot's quoted title and call system(), with markup, cannot come from any input any more
 * (the name rule: text.h): the report reader refuses both, naming file and line. Behind that
 * rule the plots and the page still treat names as text: the same names put into the loaded
 * data reach them escaped, and nothing named PWNED appears (gnuplot runs in the current
 * directory).
 */
static void test_hostile_names(void **unused)
{
    (void)unused;
    static const char *const evil = "x'.system('touch PWNED').'<u>";
    static const char *const evil_node = "n'.system('touch PWNED-node').'";
    remove("PWNED");
    remove("PWNED-node");
    scenario sc;
    scenario_init(&sc, 12);
    drv_profile p;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_builtin("gang-fifo", &p, &d), 0);
    snprintf(p.name, sizeof p.name, "%s", evil);
    drv_sim_config cfg = {.seed = 1, .placements = true};
    drv_sim *s = NULL;
    assert_int_equal(drv_sim_new(&sc.cluster, &sc.wl, &sc.cat, &p, &cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run(s, &d), 0);
    drv_summary sum;
    drv_sim_summary(s, &sum);
    drv_sim_free(s);
    assert_int_equal(drv_report_summary_files(dir, &sum, 1, NULL, &d), 0);
    drv_report_data r;
    assert_int_equal(drv_report_load(&r, dir, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "summary.json:2: policy #1: \"policy\": expected a name"));

    /* the same run under a plain name loads; a hostile node name in its placements does not */
    snprintf(p.name, sizeof p.name, "plain");
    assert_int_equal(drv_sim_new(&sc.cluster, &sc.wl, &sc.cat, &p, &cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run(s, &d), 0);
    drv_sim_summary(s, &sum);
    assert_int_equal(drv_report_run_files(dir, s, NULL, &d), 0);
    drv_sim_free(s);
    assert_int_equal(drv_report_summary_files(dir, &sum, 1, NULL, &d), 0);
    replace_in("placements-plain.csv", "node-0,", "n'.system('touch PWNED-node').',");
    assert_int_equal(drv_report_load(&r, dir, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "placements-plain.csv:"));
    assert_non_null(strstr(d.msg, ": node: expected a name of 1 to 63 letters"));
    replace_in("placements-plain.csv", "n'.system('touch PWNED-node').',", "node-0,");
    assert_int_equal(drv_report_load(&r, dir, &d), 0);

    /* behind the rule: the names as data reach the plots and the page escaped */
    snprintf(r.sum[0].policy, sizeof r.sum[0].policy, "%s", evil);
    drv_free(r.runs[0].nodes[0]);
    r.runs[0].nodes[0] = drv_strdup(evil_node);
    assert_non_null(r.runs[0].nodes[0]);
    int rc = drv_plot_render(dir, &r, &d);
    assert_true(rc == 0 || rc == DRV_ENOENT); /* DRV_ENOENT: no gnuplot here */
    assert_int_equal(drv_report_html(dir, &r, rc == 0, &d), 0);
    drv_report_data_fini(&r);
    char path[512];
    snprintf(path, sizeof path, "%s/PWNED", dir);
    assert_false(exists("PWNED") || exists("PWNED-node") || exists(path));
    const char *html = slurp("index.html");
    assert_non_null(strstr(html, "x&#39;.system(&#39;touch PWNED&#39;).&#39;&lt;u&gt;"));
    assert_null(strstr(html, "<u>"));
    /* The links to its files are percent-encoded. */
    assert_non_null(
        strstr(html, "href=\"jobs-x%27.system%28%27touch%20PWNED%27%29.%27%3Cu%3E.csv\""));
    scenario_fini(&sc);
}

/* A policy name that breaks the name rule (it names files: jobs-<policy>.csv) is refused,
 * naming the file and the record. */
static void test_policy_name_refused(void **unused)
{
    (void)unused;
    static const char *const bad[] = {"../x", "a\\nb", "a,b", "x'y", "a b", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "[\n  {\"policy\": \"%s\"}\n]\n", bad[i]);
        put("summary.json", text);
        drv_report_data r;
        drv_diag d = {{0}};
        assert_int_equal(drv_report_load(&r, dir, &d), DRV_EPARSE);
        if (!strstr(d.msg, "summary.json:2: policy #1: \"policy\": expected a name of 1 to 63 "
                           "letters, digits, '-', '_' or '.'"))
            fail_msg("policy '%s': got '%s'", bad[i], d.msg);
    }
}

/* A minimal directory for one policy "p": summary, one job, the given timeline rows. */
static void put_minimal(const char *timeline_rows)
{
    char text[4096];
    snprintf(text, sizeof text,
             "[{\"policy\": \"p\", \"jobs\": 1, \"done\": 1, \"avg_jct_s\": 1, "
             "\"p50_jct_s\": 1, \"p95_jct_s\": 1, \"p99_jct_s\": 1, \"makespan_s\": 1, "
             "\"avg_wait_s\": 0, \"cpu_util\": 0, \"cpu_useful\": 0, \"cpu_wasted\": 0, "
             "\"gpu_util\": 0, \"gpu_useful\": 0, \"gpu_wasted\": 0, \"preemptions\": 0, "
             "\"migrations\": 0, \"restarts\": 0, \"scales\": 0, \"resizes\": 0, "
             "\"stuck\": 0, \"stuck_cpu\": 0, \"end_s\": 1}]\n");
    put("summary.json", text);
    put("jobs-p.csv", "job,user,jct_s\nj0,u,1\n");
    snprintf(text, sizeof text,
             "t_s,cpu_used_m,cpu_useful_m,gpu_used,gpu_useful,pending_jobs,running_jobs\n%s",
             timeline_rows);
    put("timeline-p.csv", text);
}

/* A job count that does not fit an int is refused with file:line, not cast. */
static void test_timeline_count_range(void **unused)
{
    (void)unused;
    static const char *const rows[] = {"0,0,0,0,0,1e300,0\n", "0,0,0,0,0,0,-1\n",
                                       "0,0,0,0,0,1.5,0\n"};
    static const char *const found[] = {"'1e300'", "'-1'", "'1.5'"};
    char path[512];
    snprintf(path, sizeof path, "%s/placements-p.csv", dir);
    remove(path);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, "1,0,0,0,0,2,3\n%s", rows[i]);
        put_minimal(text);
        drv_report_data r;
        drv_diag d = {{0}};
        assert_int_equal(drv_report_load(&r, dir, &d), DRV_EPARSE);
        assert_non_null(strstr(d.msg, "timeline-p.csv:3: "));
        assert_non_null(strstr(d.msg, "expected a whole number from 0 to 2147483647"));
        assert_non_null(strstr(d.msg, found[i]));
    }
    put_minimal("1,0,0,0,0,2147483647,3\n");
    drv_report_data r;
    drv_diag d = {{0}};
    assert_int_equal(drv_report_load(&r, dir, &d), 0);
    assert_int_equal(r.runs[0].ticks[0].pending, 2147483647);
    drv_report_data_fini(&r);
}

/* A timeline is a step function in time: a row earlier than the row above is refused with
 * file:line (gnuplot failed on it after the page was written); equal times are fine. So is a
 * placement that ends before it starts. */
static void test_time_goes_forward(void **unused)
{
    (void)unused;
    char path[512];
    snprintf(path, sizeof path, "%s/placements-p.csv", dir);
    remove(path);
    put_minimal("0,0,0,0,0,1,0\n5,0,0,0,0,1,0\n5,0,0,0,0,0,1\n4.5,0,0,0,0,0,0\n");
    drv_report_data r;
    drv_diag d = {{0}};
    assert_int_equal(drv_report_load(&r, dir, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "timeline-p.csv:5: t_s: expected a time not before the row "
                                  "above (5), found '4.5'"));
    put_minimal("0,0,0,0,0,1,0\n5,0,0,0,0,1,0\n5,0,0,0,0,0,1\n");
    assert_int_equal(drv_report_load(&r, dir, &d), 0);
    assert_int_equal(r.runs[0].nticks, 3);
    drv_report_data_fini(&r);
    put("placements-p.csv", "job,pod,node,start_s,end_s\nj0,worker0,node-0,10,\n"
                            "j0,worker0,node-0,10,9\n");
    assert_int_equal(drv_report_load(&r, dir, &d), DRV_EPARSE);
    assert_non_null(strstr(d.msg, "placements-p.csv:3: end_s: expected a time not before "
                                  "start_s (10), found '9'"));
    remove(path);
}

/*
 * 60,000 nodes (a scan per row made this quadratic): every node is read once, sorted
 * naturally, and each placement still names the node its row named (the two ways to a row's
 * node agree: the name written and nodes[pl.node] read back).
 */
static void test_many_nodes(void **unused)
{
    (void)unused;
    enum { N = 60000 };
    put_minimal("1,0,0,0,0,0,1\n");
    char path[512];
    snprintf(path, sizeof path, "%s/placements-p.csv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("job,pod,node,start_s,end_s\n", f);
    /* Rows in a scrambled order, each node twice. */
    for (int i = 0; i < 2 * N; i++)
        fprintf(f, "j0,worker0,node-%d,%d,\n", (int)((i * 7919L) % N), i);
    fclose(f);
    drv_report_data r;
    drv_diag d = {{0}};
    assert_int_equal(drv_report_load(&r, dir, &d), 0);
    const drv_report_run *run = &r.runs[0];
    assert_int_equal(run->nnodes, N);
    assert_int_equal(run->npl, 2 * N);
    for (int32_t k = 0; k < N; k++) {
        char want_name[32];
        snprintf(want_name, sizeof want_name, "node-%d", k);
        assert_string_equal(run->nodes[k], want_name);
    }
    for (int32_t i = 0; i < run->npl; i++) {
        assert_true(run->pl[i].start == i);
        assert_int_equal(run->pl[i].node, (int32_t)((i * 7919L) % N));
    }
    drv_report_data_fini(&r);
    /* Failing allocations while the table grows: DRV_ENOMEM, no leak. */
    for (long nth = 1; nth < 200; nth += 7) {
        drv_alloc_fail_at(nth);
        int rc = drv_report_load(&r, dir, &d);
        drv_alloc_fail_at(0);
        if (rc == 0)
            drv_report_data_fini(&r);
        else
            assert_int_equal(rc, DRV_ENOMEM);
    }
}

/* summary.json records version, seed, profile line and inputs with their SHA-256 (the
 * FIPS 180-2 example: "abc"); jobs-*.csv names each job's model. */
static void test_provenance(void **unused)
{
    (void)unused;
    scenario sc;
    scenario_init(&sc, 12);
    const char *input = put("input.txt", "abc");
    drv_profile p;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_builtin("gang-fifo", &p, &d), 0);
    drv_report_meta meta = {.cat = &sc.cat,
                            .seed = 42,
                            .profiles = &p,
                            .inputs = {{"workload", input}, {"cluster", NULL}},
                            .ninputs = 2};
    drv_sim_config cfg = {.seed = 1};
    drv_sim *s = NULL;
    assert_int_equal(drv_sim_new(&sc.cluster, &sc.wl, &sc.cat, &p, &cfg, &s, &d), 0);
    assert_int_equal(drv_sim_run(s, &d), 0);
    drv_summary sum;
    drv_sim_summary(s, &sum);
    assert_int_equal(drv_report_run_files(dir, s, &meta, &d), 0);
    drv_sim_free(s);
    assert_int_equal(drv_report_summary_files(dir, &sum, 1, &meta, &d), 0);
    const char *js = slurp("summary.json");
    assert_non_null(strstr(js, "\"seed\": 42"));
    assert_non_null(strstr(js, "\"drover_version\": \""));
    assert_non_null(strstr(js, "\"profile\": \"gang=true "));
    assert_non_null(strstr(js, "\"role\": \"workload\""));
    assert_null(strstr(js, "\"cluster\"")); /* not given: not listed */
    assert_non_null(strstr(
        js, "\"sha256\": \"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\""));
    /* Every job row names a model of the catalogue, never an index. */
    const char *csv = slurp("jobs-gang-fifo.csv");
    int rows = 0;
    for (const char *line = strchr(csv, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
        char job[64], user[64], model[64];
        assert_int_equal(sscanf(line + 1, "%63[^,],%63[^,],%63[^,]", job, user, model), 3);
        bool known = false;
        for (int32_t k = 0; k < sc.cat.n; k++)
            known |= strcmp(sc.cat.v[k].name, model) == 0;
        if (!known)
            fail_msg("row %d: model '%s' is not a catalogue name", rows + 1, model);
        rows++;
    }
    assert_int_equal(rows, 12);
    /* An input that cannot be read is an error naming it; no summary.json is half written. */
    meta.inputs[0].path = "/nonexistent/drover-input";
    assert_int_equal(drv_report_summary_files(dir, &sum, 1, &meta, &d), DRV_ENOENT);
    assert_non_null(strstr(d.msg, "/nonexistent/drover-input: cannot read"));
    scenario_fini(&sc);
}

/* The table of a GPU cluster leads with GPU utilisation, then shows the CPU's in full (a mixed
 * cluster's CPU-only jobs hold no GPU: their use showed only as one CPU figure); a CPU cluster's
 * table has the CPU's alone. A legend says what the columns mean. */
static void test_table_gpu_first(void **unused)
{
    (void)unused;
    drv_summary v = {.policy = "pollux-like",
                     .jobs = 4,
                     .done = 4,
                     .cpu_util = 0.491,
                     .cpu_useful = 0.4,
                     .cpu_wasted = 0.091,
                     .gpu_util = 0.81,
                     .gpu_useful = 0.75,
                     .gpu_wasted = 0.06,
                     .scales = 3};
    for (int gpu = 1; gpu >= 0; gpu--) {
        if (!gpu)
            v.gpu_util = v.gpu_useful = v.gpu_wasted = 0;
        assert_int_equal(drv_report_gpu_first(&v, 1), gpu);
        char buf[4096] = {0};
        FILE *f = fmemopen(buf, sizeof buf - 1, "w");
        assert_non_null(f);
        drv_report_table(f, &v, 1);
        fclose(f);
        assert_non_null(strstr(buf, "useful: held by jobs whose gang is complete"));
        assert_non_null(strstr(buf, "scale: worker-count changes"));
        char *units = strchr(buf, '\n') + 1, *row = strchr(units, '\n') + 1;
        *strchr(units, '\n') = 0;
        double x[6] = {-1, -1, -1, -1, -1, -1};
        long long scale = -1;
        /* policy, done, six durations (each "-": no JCT given), then util useful wasted of each
         * resource shown, preempt, migr, scale. */
        if (gpu) {
            int got =
                sscanf(row, "%*s %*s %*s %*s %*s %*s %*s %*s %lf %lf %lf %lf %lf %lf %*d %*d %lld",
                       &x[0], &x[1], &x[2], &x[3], &x[4], &x[5], &scale);
            assert_int_equal(got, 7);
            assert_non_null(strstr(units, "gpu    gpu    gpu    cpu    cpu    cpu"));
            assert_true(x[0] == 81.0 && x[1] == 75.0 && x[2] == 6.0);
            assert_true(x[3] == 49.1 && x[4] == 40.0 && x[5] == 9.1);
        } else {
            int got = sscanf(row, "%*s %*s %*s %*s %*s %*s %*s %*s %lf %lf %lf %*d %*d %lld", &x[0],
                             &x[1], &x[2], &scale);
            assert_int_equal(got, 4);
            assert_non_null(strstr(units, "cpu    cpu    cpu"));
            assert_null(strstr(units, "gpu"));
            assert_true(x[0] == 49.1 && x[1] == 40.0 && x[2] == 9.1);
        }
        assert_int_equal(scale, 3);
    }
}

/* Two runs with the same figures are said to be equal under the table (specon on the built-in
 * scenario migrates nothing: its row is k8s-default's), to 1e-9 relative (utilisation summed in
 * more pieces by a run with more events); an interrupted run is named with where it stopped. */
static void test_table_notes(void **unused)
{
    (void)unused;
    drv_summary v[3] = {
        {.policy = "k8s-default", .jobs = 60, .done = 60, .avg_jct = 1710.6, .cpu_util = 0.6471},
        {.policy = "drover", .jobs = 60, .done = 60, .avg_jct = 1010.2, .cpu_util = 0.69},
        {.policy = "specon", .jobs = 60, .done = 60, .avg_jct = 1710.6, .cpu_util = 0.6471},
    };
    v[2].cpu_util *= 1 + 1e-12;
    v[0].p50_jct = v[1].p50_jct = v[2].p50_jct = NAN;
    assert_int_equal(drv_report_same_as(v, 3, 2), 0);
    assert_int_equal(drv_report_same_as(v, 3, 1), -1);
    assert_int_equal(drv_report_same_as(v, 3, 0), -1);
    char buf[8192] = {0};
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    drv_report_table(f, v, 3);
    fclose(f);
    assert_non_null(strstr(buf, "= specon: every figure equals k8s-default's"));
    assert_null(strstr(buf, "= drover"));
    v[2].cpu_util = 0.65; /* any figure that differs: no note */
    v[1].interrupted = true, v[1].done = 41, v[1].end = 3000;
    memset(buf, 0, sizeof buf);
    f = fmemopen(buf, sizeof buf - 1, "w");
    drv_report_table(f, v, 3);
    fclose(f);
    assert_null(strstr(buf, "every figure equals"));
    assert_non_null(strstr(buf, "drover: interrupted at simulated t=50.0 min; 41 of 60 job(s) "
                                "finished by then"));
}

/* The page of a GPU cluster leads with GPU utilisation too, then CPU (the Pollux case: 81 % of
 * GPUs, 49.1 % of CPUs). */
static void test_page_gpu_first(void **unused)
{
    (void)unused;
    drv_summary s = {.policy = "pollux",
                     .jobs = 4,
                     .done = 4,
                     .cpu_util = 0.491,
                     .cpu_useful = 0.4,
                     .cpu_wasted = 0.091,
                     .gpu_util = 0.81,
                     .gpu_useful = 0.75,
                     .gpu_wasted = 0.06};
    drv_report_run run = {0};
    drv_report_data r = {.sum = &s, .runs = &run, .n = 1};
    drv_diag d = {{0}};
    assert_int_equal(drv_report_html(dir, &r, false, &d), 0);
    const char *html = slurp("index.html");
    assert_non_null(strstr(html, "<th>gpu</th><th>gpu</th><th>gpu</th><th>cpu</th><th>cpu</th>"));
    assert_non_null(strstr(html, "<td>81.0</td><td>75.0</td><td>6.0</td><td>49.1</td><td>40.0</td>"
                                 "<td>9.1</td>"));
    assert_non_null(strstr(html, "GPU utilisation 81%, CPU 49%"));
}

/* The runs shown in detail: the baseline by name (else the first), the best among the others
 * by jobs done, then mean JCT, a NaN mean counting as worst. */
static void test_pick(void **unused)
{
    (void)unused;
    drv_summary s[4] = {
        {.policy = "a", .jobs = 10, .done = 10, .avg_jct = 50},
        {.policy = "b", .jobs = 10, .done = 9, .avg_jct = 10}, /* fewer done: not best */
        {.policy = "k8s-default", .jobs = 10, .done = 10, .avg_jct = 5},
        {.policy = "d", .jobs = 10, .done = 10, .avg_jct = 40},
    };
    drv_report_data r = {.sum = s, .n = 4};
    int32_t best, base;
    drv_report_pick(&r, &best, &base);
    assert_int_equal(base, 2);
    assert_int_equal(best, 3);
    s[3].avg_jct = NAN;
    drv_report_pick(&r, &best, &base);
    assert_int_equal(best, 0);
    snprintf(s[2].policy, sizeof s[2].policy, "c"); /* no k8s-default: the first is the baseline */
    drv_report_pick(&r, &best, &base);
    assert_int_equal(base, 0);
    assert_int_equal(best, 2);
    r.n = 1;
    drv_report_pick(&r, &best, &base);
    assert_int_equal(base, 0);
    assert_int_equal(best, 0);
}

/* Placement nodes are found through a hash (a scan per row was quadratic in 10^5 nodes), then
 * sorted naturally, and every placement still names the node it named in the file. */
static void test_placement_nodes_sorted_and_mapped(void **unused)
{
    (void)unused;
    char tdir[] = "/tmp/drover-test-nodes-XXXXXX";
    assert_non_null(mkdtemp(tdir));
    static const char *const files[][2] = {
        {"summary.json",
         "[{\"policy\":\"p\",\"jobs\":1,\"done\":1,\"avg_jct_s\":10,\"p50_jct_s\":10,"
         "\"p95_jct_s\":10,\"p99_jct_s\":10,\"makespan_s\":10,\"avg_wait_s\":0,"
         "\"cpu_util\":0.5,\"cpu_useful\":0.5,\"cpu_wasted\":0,\"gpu_util\":0,"
         "\"gpu_useful\":0,\"gpu_wasted\":0,\"preemptions\":0,\"migrations\":0,"
         "\"restarts\":0,\"scales\":0,\"resizes\":0,\"cycles\":1,\"cycles_skipped\":0,"
         "\"events\":2,\"decisions\":1,\"stuck\":0,\"stuck_cpu\":0,\"end_s\":10}]"},
        {"jobs-p.csv", "job,user,model,ps,workers_requested,workers_last,submit_s,start_s,end_s,"
                       "wait_s,jct_s,restarts,migrations,preemptions\n"
                       "a,u,0,0,1,1,0,0,10,0,10,0,0,0\n"},
        {"timeline-p.csv", "t_s,cpu_used_m,cpu_useful_m,gpu_used,gpu_useful,pending_jobs,"
                           "running_jobs\n0,1000,1000,0,0,0,1\n"},
        {"placements-p.csv", "job,pod,node,start_s,end_s\n"
                             "a,w0,node-10,0,1\na,w0,node-2,1,2\na,w0,node-1,2,3\n"
                             "a,w0,node-2,3,4\n"},
    };
    char path[256];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", tdir, files[i][0]);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fputs(files[i][1], f);
        fclose(f);
    }
    drv_report_data r;
    drv_diag d;
    if (drv_report_load(&r, tdir, &d) != 0)
        fail_msg("%s", d.msg);
    drv_report_run *run = &r.runs[0];
    assert_int_equal(run->nnodes, 3);
    assert_string_equal(run->nodes[0], "node-1");
    assert_string_equal(run->nodes[1], "node-2");
    assert_string_equal(run->nodes[2], "node-10");
    static const char *const named[] = {"node-10", "node-2", "node-1", "node-2"};
    assert_int_equal(run->npl, 4);
    for (int i = 0; i < 4; i++)
        assert_string_equal(run->nodes[run->pl[i].node], named[i]);
    drv_report_data_fini(&r);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", tdir, files[i][0]);
        remove(path);
    }
    rmdir(tdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement_nodes_sorted_and_mapped),
        cmocka_unit_test(test_csv_reads_columns_by_name),
        cmocka_unit_test(test_csv_long_line),
        cmocka_unit_test(test_csv_errors),
        cmocka_unit_test(test_placement_log),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad_summary),
        cmocka_unit_test(test_hostile_names),
        cmocka_unit_test(test_policy_name_refused),
        cmocka_unit_test(test_time_goes_forward),
        cmocka_unit_test(test_timeline_count_range),
        cmocka_unit_test(test_many_nodes),
        cmocka_unit_test(test_provenance),
        cmocka_unit_test(test_table_gpu_first),
        cmocka_unit_test(test_table_notes),
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_page_gpu_first),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
