/*
 * sim_batch.h - many simulation runs at once: policies and seeds spread over every core, and
 * the mean of each metric over seeds with its 95 % confidence interval.
 *
 * Runs share nothing but their borrowed inputs (cluster, workload, catalogue, profile are only
 * read), so a run gives the same result on any thread: drv_sim_batch_run with 1 thread and with
 * 16 gives byte-identical summaries.
 */
#ifndef DROVER_SIM_BATCH_H
#define DROVER_SIM_BATCH_H

#include "drover/sim.h"

#include <stdio.h>

/* One run: its inputs (borrowed), and its results once drv_sim_batch_run returns. */
typedef struct drv_sim_task {
    const drv_cluster_spec *cluster;
    const drv_workload *workload;
    const drv_catalogue *catalogue;
    const drv_profile *profile;
    drv_sim_config cfg;  /* cfg.progress, if set, is called under the batch's lock */
    const char *out_dir; /* write the run's per-job, timeline and placement files here, or NULL */
    const drv_report_meta *meta; /* for those files (model names); may be NULL */
    /* results */
    drv_summary summary;
    int rc; /* 0, or the run's error code (d says what) */
    drv_diag d;
} drv_sim_task;

/* The number of threads that keeps every core busy (online processors, at least 1). */
int drv_sim_batch_threads(void);

/*
 * Runs every task, at most `threads` at a time (threads <= 0: drv_sim_batch_threads()), in
 * order of index as threads free up. Returns 0 when all succeeded, else the error code of the
 * first failed task in index order (its d says why); every task's rc is set either way.
 */
int drv_sim_batch_run(drv_sim_task *tasks, int n, int threads);

/* The metrics given with a confidence interval. */
enum drv_ci_metric {
    DRV_CI_AVG_JCT,
    DRV_CI_P50_JCT,
    DRV_CI_P95_JCT,
    DRV_CI_P99_JCT,
    DRV_CI_MAKESPAN,
    DRV_CI_AVG_WAIT,
    DRV_CI_CPU_UTIL,
    DRV_CI_GPU_UTIL,
    DRV_CI_PREEMPTIONS,
    DRV_CI_MIGRATIONS,
    DRV_CI_DONE, /* jobs finished: last, so the CSV's earlier columns keep their places */
    DRV_CI_NMETRICS
};

typedef struct drv_interval {
    double mean;
    double half; /* half-width of the 95 % confidence interval (Student's t); 0 for one run */
} drv_interval;

typedef struct drv_summary_ci {
    char policy[64];
    int32_t runs; /* seeds averaged */
    drv_interval m[DRV_CI_NMETRICS];
} drv_summary_ci;

/* Mean and 95 % interval of each metric over n runs of one policy (n >= 1). */
void drv_summary_ci_compute(const drv_summary *runs, int n, drv_summary_ci *out);

/* Student's t quantile for a two-sided 95 % interval with df degrees of freedom (df >= 1). */
double drv_t95(int df);

/* One row per policy: mean ± half-width of the main metrics. */
void drv_report_ci_table(FILE *f, const drv_summary_ci *ci, int n);
/* The same as CSV: policy, runs, then <metric>_mean and <metric>_ci95 for each metric. */
void drv_report_ci_csv(FILE *f, const drv_summary_ci *ci, int n);
/* The same as JSON: [{"policy":..,"runs":..,"avg_jct_s":{"mean":..,"ci95":..},...}]. */
void drv_report_ci_json(FILE *f, const drv_summary_ci *ci, int n);

#endif
