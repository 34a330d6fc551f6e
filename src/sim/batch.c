/*
 * batch.c - simulation runs spread over every core, and intervals over seeds (sim_batch.h).
 *
 * Threads take the next task index from a shared counter until none is left, so a long run
 * never holds up the short ones queued behind it on another thread. Each run owns its drv_sim;
 * the inputs are only read. Progress callbacks are serialised by one lock, so the caller's
 * progress printer needs none of its own.
 *
 * Intervals: for n seeds with mean m and sample standard deviation s, the 95 % interval is
 * m ± t(n-1) s / sqrt(n), t from Student's distribution (a table up to 30 degrees of freedom,
 * then a Cornish-Fisher expansion around the normal 1.96, within 0.01 % of t). Worked
 * example: JCTs 1, 2, 3 s give 2 ± 4.303 * 1 / sqrt(3) = 2 ± 2.48 s.
 */
#include "drover/sim_batch.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

enum { MAX_THREADS = 256 };

typedef struct batch {
    drv_sim_task *tasks;
    int n, next;
    pthread_mutex_t lock; /* guards next and every progress callback */
} batch;

typedef struct progress_relay {
    batch *b;
    drv_sim_task *task;
} progress_relay;

static void relay_progress(void *arg, const drv_progress *p)
{
    progress_relay *r = arg;
    pthread_mutex_lock(&r->b->lock);
    r->task->cfg.progress(r->task->cfg.progress_arg, p);
    pthread_mutex_unlock(&r->b->lock);
}

static void run_task(batch *b, drv_sim_task *t)
{
    progress_relay relay = {b, t};
    drv_sim_config cfg = t->cfg;
    if (cfg.progress) {
        cfg.progress = relay_progress;
        cfg.progress_arg = &relay;
    }
    drv_sim *s = NULL;
    t->rc = drv_sim_new(t->cluster, t->workload, t->catalogue, t->profile, &cfg, &s, &t->d);
    if (!t->rc)
        t->rc = drv_sim_run(s, &t->d);
    if (!t->rc) {
        drv_sim_summary(s, &t->summary);
        if (t->out_dir)
            t->rc = drv_report_run_files(t->out_dir, s, t->meta, &t->d);
    }
    drv_sim_free(s);
}

static void *worker(void *arg)
{
    batch *b = arg;
    for (;;) {
        pthread_mutex_lock(&b->lock);
        int i = b->next < b->n ? b->next++ : -1;
        pthread_mutex_unlock(&b->lock);
        if (i < 0)
            return NULL;
        run_task(b, &b->tasks[i]);
    }
}

int drv_sim_batch_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

int drv_sim_batch_run(drv_sim_task *tasks, int n, int threads)
{
    batch b = {.tasks = tasks, .n = n};
    pthread_mutex_init(&b.lock, NULL);
    if (threads <= 0)
        threads = drv_sim_batch_threads();
    if (threads > n)
        threads = n;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    pthread_t tid[MAX_THREADS];
    int started = 0;
    /* Threads beyond the first that cannot start leave their share to the others; the calling
     * thread always works too, so the batch finishes even when none can be started. */
    for (int i = 1; i < threads; i++)
        if (pthread_create(&tid[started], NULL, worker, &b) == 0)
            started++;
    worker(&b);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&b.lock);
    for (int i = 0; i < n; i++)
        if (tasks[i].rc)
            return tasks[i].rc;
    return 0;
}

/* ---- intervals ----------------------------------------------------------------------------- */

/* The metrics' names in the CSV and JSON outputs (their columns and keys). */
static const char *const metric_names[DRV_CI_NMETRICS] = {
    "avg_jct_s", "p50_jct_s", "p95_jct_s",   "p99_jct_s",  "makespan_s", "avg_wait_s",
    "cpu_util",  "gpu_util",  "preemptions", "migrations", "done"};

double drv_t95(int df)
{
    static const double t[31] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                 2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                 2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                 2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    if (df < 1)
        return NAN;
    if (df <= 30)
        return t[df];
    /* Cornish-Fisher expansion around the normal quantile z: within 0.01 % of t above 30 */
    double z = 1.959964, v = (double)df;
    return z + (z * z * z + z) / (4 * v) + (5 * pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * v * v);
}

static double metric(const drv_summary *s, int m)
{
    switch (m) {
    case DRV_CI_AVG_JCT:
        return s->avg_jct;
    case DRV_CI_P50_JCT:
        return s->p50_jct;
    case DRV_CI_P95_JCT:
        return s->p95_jct;
    case DRV_CI_P99_JCT:
        return s->p99_jct;
    case DRV_CI_MAKESPAN:
        return s->makespan;
    case DRV_CI_AVG_WAIT:
        return s->avg_wait;
    case DRV_CI_CPU_UTIL:
        return s->cpu_util;
    case DRV_CI_GPU_UTIL:
        return s->gpu_util;
    case DRV_CI_PREEMPTIONS:
        return (double)s->preemptions;
    case DRV_CI_MIGRATIONS:
        return (double)s->migrations;
    case DRV_CI_DONE:
        return s->done;
    default:
        return NAN;
    }
}

void drv_summary_ci_compute(const drv_summary *runs, int n, drv_summary_ci *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->policy, sizeof out->policy, "%s", n > 0 ? runs[0].policy : "");
    out->runs = n;
    for (int m = 0; m < DRV_CI_NMETRICS && n > 0; m++) {
        double sum = 0, sq = 0;
        for (int i = 0; i < n; i++)
            sum += metric(&runs[i], m);
        double mean = sum / n;
        for (int i = 0; i < n; i++)
            sq += (metric(&runs[i], m) - mean) * (metric(&runs[i], m) - mean);
        out->m[m].mean = mean;
        out->m[m].half = n > 1 ? drv_t95(n - 1) * sqrt(sq / (n - 1)) / sqrt((double)n) : 0;
    }
}

/* ---- output -------------------------------------------------------------------------------- */

static void cell(char *buf, size_t n, drv_interval v, double scale, int decimals)
{
    snprintf(buf, n, "%.*f ± %.*f", decimals, v.mean * scale, decimals, v.half * scale);
}

void drv_report_ci_table(FILE *f, const drv_summary_ci *ci, int n)
{
    bool gpu = false;
    for (int i = 0; i < n; i++)
        gpu |= ci[i].m[DRV_CI_GPU_UTIL].mean > 0;
    /* durations in minutes, as drv_report_table prints them */
    fprintf(f, "%-18s %4s  %-18s %-18s %-18s %-16s %-14s\n", "policy", "runs", "avg JCT (min)",
            "p95 JCT (min)", "makespan (min)", "queueing (min)", gpu ? "util% gpu" : "util% cpu");
    for (int i = 0; i < n; i++) {
        char a[48], b[48], c[48], w[48], u[48];
        cell(a, sizeof a, ci[i].m[DRV_CI_AVG_JCT], 1 / 60.0, 1);
        cell(b, sizeof b, ci[i].m[DRV_CI_P95_JCT], 1 / 60.0, 1);
        cell(c, sizeof c, ci[i].m[DRV_CI_MAKESPAN], 1 / 60.0, 1);
        cell(w, sizeof w, ci[i].m[DRV_CI_AVG_WAIT], 1 / 60.0, 1);
        cell(u, sizeof u, ci[i].m[gpu ? DRV_CI_GPU_UTIL : DRV_CI_CPU_UTIL], 100, 1);
        /* "±" is two bytes in UTF-8: pad by one more byte per cell */
        fprintf(f, "%-18s %4d  %-19s %-19s %-19s %-17s %-15s\n", ci[i].policy, ci[i].runs, a, b, c,
                w, u);
    }
    fprintf(f, "\nmean ± half-width of the 95 %% confidence interval over seeds (Student's t)\n");
}

void drv_report_ci_csv(FILE *f, const drv_summary_ci *ci, int n)
{
    fprintf(f, "policy,runs");
    for (int m = 0; m < DRV_CI_NMETRICS; m++)
        fprintf(f, ",%s_mean,%s_ci95", metric_names[m], metric_names[m]);
    fprintf(f, "\n");
    for (int i = 0; i < n; i++) {
        /* a name holding a comma or a quote is quoted, quotes doubled (RFC 4180) */
        bool quote = strpbrk(ci[i].policy, ",\"\n") != NULL;
        fputs(quote ? "\"" : "", f);
        for (const char *p = ci[i].policy; *p; p++)
            fputs(*p == '"' ? "\"\"" : (char[]){*p, 0}, f);
        fprintf(f, "%s,%d", quote ? "\"" : "", ci[i].runs);
        for (int m = 0; m < DRV_CI_NMETRICS; m++)
            fprintf(f, ",%.17g,%.17g", ci[i].m[m].mean, ci[i].m[m].half);
        fprintf(f, "\n");
    }
}

void drv_report_ci_json(FILE *f, const drv_summary_ci *ci, int n)
{
    fprintf(f, "[");
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s\n  {\"policy\": \"", i ? "," : "");
        for (const char *p = ci[i].policy; *p; p++) /* JSON string escaping */
            if (*p == '"' || *p == '\\')
                fprintf(f, "\\%c", *p);
            else if ((unsigned char)*p < 0x20)
                fprintf(f, "\\u%04x", (unsigned char)*p);
            else
                fputc(*p, f);
        fprintf(f, "\", \"runs\": %d", ci[i].runs);
        for (int m = 0; m < DRV_CI_NMETRICS; m++)
            fprintf(f, ", \"%s\": {\"mean\": %.17g, \"ci95\": %.17g}", metric_names[m],
                    ci[i].m[m].mean, ci[i].m[m].half);
        fprintf(f, "}");
    }
    fprintf(f, "\n]\n");
}
