/*
 * ctrl_metrics.h - `drover run`'s counters (drv_ctrl_get_stats), gang latencies
 * (drv_ctrl_latencies) and, when the caller gave a registry, the drover_* metrics that export
 * them (docs/running.md).
 *
 * Owns: the counters, under their lock (any thread counts). Calls nothing of the controller:
 * the job gauges are handed in by whoever reads the state.
 */
#ifndef DROVER_CTRL_METRICS_H
#define DROVER_CTRL_METRICS_H

#include "drover/controller.h"

#include <pthread.h>

typedef struct ctrl_counters {
    pthread_mutex_t mu;    /* guards stats, lat, nlat, cap_lat, lat_exported */
    drv_ctrl_stats stats;  /* the counters (drv_ctrl_get_stats) */
    drv_ctrl_latency *lat; /* every gang's latency, in order (drv_ctrl_latencies) */
    int32_t nlat, cap_lat; /* latencies in lat; its room */
    int32_t lat_exported;  /* latencies observed in drover_decision_seconds so far (export) */
    /* fixed at init: the caller's registry (NULL: no metrics), the API budget whose errors are
     * exported, and the profile's name (every metric's label) */
    drv_metrics *metrics;
    drv_kube_budget *budget;
    const char *profile;
    /* with metrics (scheduler thread): the metrics, and what was last exported */
    drv_metric *cycles, *binds, *creates, *deletes, *resizes, *status, *events, *samples;
    drv_metric *pending, *running, *leader, *cycle_s, *latency_s;
    drv_ctrl_stats exported;
    /* drover_api_errors_total{code,verb,resource}: one counter per row of the budget's
     * (drv_kube_budget_errors, rows in order of first occurrence), registered as rows appear;
     * and the count of each row last exported */
    drv_metric **api_errors;
    long *api_exported;
    int32_t napi, cap_api;
} ctrl_counters;

/* Registers the metrics in `metrics` (when not NULL). 0, or the registry's error (d says). */
int ctrl_counters_init(ctrl_counters *k, drv_metrics *metrics, drv_kube_budget *budget,
                       const char *profile, drv_diag *d);
void ctrl_counters_fini(ctrl_counters *k);

void ctrl_count(ctrl_counters *k, long *field, long by); /* field: in k->stats */
/* Records a gang's latency; its "sent" figure is observed in drover_decision_seconds by the
 * next export (ctrl_metrics_export), on the scheduler thread with the other metrics. */
void ctrl_counters_latency(ctrl_counters *k, const drv_ctrl_latency *l);
/* A progress sample applied (its step and loss are the latest). */
void ctrl_counters_sample(ctrl_counters *k, double step, double loss);
/* This controller leads (or no longer does); synced: every informer has listed. */
void ctrl_counters_leader(ctrl_counters *k, bool on);
void ctrl_counters_synced(ctrl_counters *k);
/* A cycle took seconds (drover_cycle_seconds). */
void ctrl_counters_cycle(ctrl_counters *k, double seconds);

/* The counters, every client's API errors included (the budget's count). */
drv_ctrl_stats ctrl_counters_stats(ctrl_counters *k);
/* Copies up to n latencies (oldest first) into out; returns how many exist. */
size_t ctrl_counters_latencies(ctrl_counters *k, drv_ctrl_latency *out, size_t n);

/* The job gauges, from whoever reads the state. */
typedef struct ctrl_gauges {
    int32_t pending, running;
} ctrl_gauges;
/* Adds what changed since the last export (scheduler thread): the counters, and the gangs'
 * latencies recorded since; gauges NULL: no gauges (between cycles). */
void ctrl_metrics_export(ctrl_counters *k, const ctrl_gauges *gauges);

#endif
