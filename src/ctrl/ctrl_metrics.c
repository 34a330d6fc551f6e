/*
 * ctrl_metrics.c - `drover run`'s counters (drv_ctrl_get_stats), gang latencies
 * (drv_ctrl_latencies) and, when the caller gave a registry, the drover_* metrics that export
 * them (docs/running.md) (ctrl_metrics.h).
 *
 * Owns: the counters. Any thread counts under counters.mu; the scheduler thread exports the
 * differences since its last export to the registry (which has its own locks) after each cycle
 * and after each batch of answers between cycles. Touches nothing else: the job gauges come in
 * as numbers.
 */
#include "ctrl_metrics.h"

#include <stdio.h>
#include <string.h>

static int register_metrics(ctrl_counters *k, drv_diag *d)
{
    drv_metrics *r = k->metrics;
    static const double lat[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                 0.01,   0.025,   0.05,   0.1,   0.25,   1};
    const char *const prof[] = {"profile", k->profile, NULL};
    int rc = 0;
#define COUNTER(field, name, help)                                                                 \
    if (!rc)                                                                                       \
    rc = drv_metrics_counter(r, name, help, prof, &k->field, d)
#define GAUGE(field, name, help)                                                                   \
    if (!rc)                                                                                       \
    rc = drv_metrics_gauge(r, name, help, prof, &k->field, d)
    COUNTER(cycles, "drover_cycles_total", "Scheduling cycles run.");
    COUNTER(binds, "drover_bindings_total", "pods/binding requests that succeeded.");
    COUNTER(creates, "drover_pods_created_total", "Pods created (bound or not).");
    COUNTER(deletes, "drover_pods_deleted_total", "Pods deleted.");
    COUNTER(resizes, "drover_pod_resizes_total", "pods/resize requests that succeeded.");
    COUNTER(status, "drover_status_writes_total", "TrainingJob status updates written.");
    COUNTER(events, "drover_events_total", "Events written.");
    COUNTER(samples, "drover_progress_samples_total", "Progress samples scraped.");
    GAUGE(pending, "drover_jobs_pending", "TrainingJobs waiting for their pods to be placed.");
    GAUGE(running, "drover_jobs_running", "TrainingJobs with every wanted pod running.");
    GAUGE(leader, "drover_leader", "1 while this controller schedules (holds the lease).");
#undef COUNTER
#undef GAUGE
    if (!rc)
        rc = drv_metrics_histogram(r, "drover_cycle_seconds", "Duration of a scheduling cycle.",
                                   prof, lat, 12, &k->cycle_s, d);
    if (!rc)
        rc = drv_metrics_histogram(r, "drover_decision_seconds",
                                   "Watch event completing a gang to its last binding request "
                                   "sent.",
                                   prof, lat, 12, &k->latency_s, d);
    return rc;
}

int ctrl_counters_init(ctrl_counters *k, drv_metrics *metrics, drv_kube_budget *budget,
                       const char *profile, drv_diag *d)
{
    pthread_mutex_init(&k->mu, NULL);
    k->metrics = metrics;
    k->budget = budget;
    k->profile = profile;
    return metrics ? register_metrics(k, d) : 0;
}

void ctrl_counters_fini(ctrl_counters *k)
{
    drv_free(k->lat);
    drv_free(k->api_errors);
    drv_free(k->api_exported);
    pthread_mutex_destroy(&k->mu);
}

void ctrl_count(ctrl_counters *k, long *field, long by)
{
    pthread_mutex_lock(&k->mu);
    *field += by;
    pthread_mutex_unlock(&k->mu);
}

void ctrl_counters_latency(ctrl_counters *k, const drv_ctrl_latency *l)
{
    pthread_mutex_lock(&k->mu);
    if (drv_grow(&k->lat, sizeof *k->lat, &k->cap_lat, k->nlat + 1) == 0)
        k->lat[k->nlat++] = *l;
    pthread_mutex_unlock(&k->mu);
}

void ctrl_counters_sample(ctrl_counters *k, double step, double loss)
{
    pthread_mutex_lock(&k->mu);
    k->stats.samples++;
    k->stats.last_step = step;
    k->stats.last_loss = loss;
    pthread_mutex_unlock(&k->mu);
}

void ctrl_counters_leader(ctrl_counters *k, bool on)
{
    pthread_mutex_lock(&k->mu);
    k->stats.leader = on;
    k->stats.leaderships += on;
    pthread_mutex_unlock(&k->mu);
}

void ctrl_counters_synced(ctrl_counters *k)
{
    pthread_mutex_lock(&k->mu);
    k->stats.synced = true;
    pthread_mutex_unlock(&k->mu);
    if (k->metrics)
        drv_metrics_set_ready(k->metrics, true, NULL);
}

void ctrl_counters_cycle(ctrl_counters *k, double seconds)
{
    if (k->metrics)
        drv_metric_observe(k->cycle_s, seconds);
    ctrl_count(k, &k->stats.cycles, 1);
}

drv_ctrl_stats ctrl_counters_stats(ctrl_counters *k)
{
    pthread_mutex_lock(&k->mu);
    drv_ctrl_stats s = k->stats;
    pthread_mutex_unlock(&k->mu);
    /* every client's non-2xx answers, retried ones included (the budget counts them all; what
     * the units count themselves would miss the client's retries) */
    s.api_errors = drv_kube_budget_error_total(k->budget);
    return s;
}

size_t ctrl_counters_latencies(ctrl_counters *k, drv_ctrl_latency *out, size_t n)
{
    pthread_mutex_lock(&k->mu);
    size_t have = (size_t)k->nlat;
    size_t copy = n < have ? n : have;
    if (out && copy > 0) /* (none recorded: k->lat is NULL, which memcpy may not be given) */
        memcpy(out, k->lat, sizeof *out * copy);
    pthread_mutex_unlock(&k->mu);
    return have;
}

/* drover_api_errors_total{code,verb,resource}: a counter per row of the budget, registered
 * when the row first appears (at most the budget's 128 rows), advanced by what the row gained
 * since the last export. */
static void export_api_errors(ctrl_counters *k)
{
    drv_kube_api_errors rows[128];
    size_t n = drv_kube_budget_errors(k->budget, rows, 128);
    if (n > 128)
        n = 128;
    for (size_t i = 0; i < n; i++) {
        if ((int32_t)i >= k->napi) {
            int32_t cap = k->cap_api;
            if (drv_grow(&k->api_errors, sizeof *k->api_errors, &k->cap_api, (int32_t)i + 1) != 0 ||
                drv_grow(&k->api_exported, sizeof *k->api_exported, &cap, (int32_t)i + 1) != 0)
                return; /* (out of memory: exported later) */
            char code[16];
            snprintf(code, sizeof code, "%ld", rows[i].code);
            const char *const labels[] = {"profile",    k->profile, "code",           code, "verb",
                                          rows[i].verb, "resource", rows[i].resource, NULL};
            drv_diag d = {{0}};
            drv_metric *x = NULL;
            if (drv_metrics_counter(k->metrics, "drover_api_errors_total",
                                    "API answers other than 2xx, retried ones included.", labels,
                                    &x, &d) != 0) {
                drv_log(DRV_LOG_WARN, "drover_api_errors_total: %s", d.msg);
                return;
            }
            k->api_errors[i] = x;
            k->api_exported[i] = 0;
            k->napi = (int32_t)i + 1;
        }
        drv_metric_add(k->api_errors[i], (double)(rows[i].n - k->api_exported[i]));
        k->api_exported[i] = rows[i].n;
    }
}

void ctrl_metrics_export(ctrl_counters *k, const ctrl_gauges *gauges)
{
    if (!k->metrics)
        return;
    drv_ctrl_stats s = ctrl_counters_stats(k), *l = &k->exported;
    drv_metric_add(k->cycles, (double)(s.cycles - l->cycles));
    drv_metric_add(k->binds, (double)(s.binds - l->binds));
    drv_metric_add(k->creates, (double)(s.creates - l->creates));
    drv_metric_add(k->deletes, (double)(s.deletes - l->deletes));
    drv_metric_add(k->resizes, (double)(s.resizes - l->resizes));
    export_api_errors(k);
    drv_metric_add(k->status, (double)(s.status_writes - l->status_writes));
    drv_metric_add(k->events, (double)(s.events - l->events));
    drv_metric_add(k->samples, (double)(s.samples - l->samples));
    drv_metric_set(k->leader, s.leader ? 1 : 0);
    *l = s;
    pthread_mutex_lock(&k->mu); /* (the latencies recorded since: drover_decision_seconds) */
    for (; k->lat_exported < k->nlat; k->lat_exported++)
        drv_metric_observe(k->latency_s, k->lat[k->lat_exported].sent);
    pthread_mutex_unlock(&k->mu);
    if (!gauges)
        return;
    drv_metric_set(k->pending, gauges->pending);
    drv_metric_set(k->running, gauges->running);
}
