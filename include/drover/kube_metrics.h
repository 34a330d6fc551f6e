/*
 * kube_metrics.h - a thread-safe registry of counters, gauges and histograms rendered in the
 * Prometheus text exposition format (version 0.0.4), and an HTTP endpoint (libmicrohttpd)
 * that serves it on /metrics beside the health checks /healthz and /readyz.
 *
 * The owner registers its metrics once, keeps the handles, and updates them from any thread:
 *
 *     drv_metrics *m;  drv_metric *cycles, *lat;
 *     drv_metrics_new(&m);
 *     drv_metrics_counter(m, "drover_cycles_total", "Scheduling cycles run.", NULL, &cycles, d);
 *     static const double b[] = {0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10};
 *     drv_metrics_histogram(m, "drover_cycle_seconds", "Cycle latency.", NULL, b, 10, &lat, d);
 *     drv_metrics_serve(m, "0.0.0.0", 8080, NULL, d);
 *     ...  drv_metric_add(cycles, 1);  drv_metric_observe(lat, 0.004);
 *
 * A metric has one fixed label set (or none), given at registration; several metrics may share
 * a name (a family) when their label sets differ, and are rendered under one # HELP / # TYPE.
 * Names follow Prometheus: [a-zA-Z_:][a-zA-Z0-9_:]*; label names [a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__", and "le" is reserved for histogram buckets.
 *
 * Health: the endpoint answers 200 "ok" on /healthz and /readyz while the owner's flags say so,
 * 503 with the reason it gave otherwise. A new registry is healthy and not ready.
 */
#ifndef DROVER_KUBE_METRICS_H
#define DROVER_KUBE_METRICS_H

#include "drover/base.h"

typedef struct drv_metrics drv_metrics;
/* A handle on one registered metric; valid until its registry is freed. */
typedef struct drv_metric drv_metric;

enum drv_metric_type { DRV_METRIC_COUNTER, DRV_METRIC_GAUGE, DRV_METRIC_HISTOGRAM };

/* Bucket bounds of a histogram: at most this many (the +Inf bucket is implicit). */
enum { DRV_METRICS_MAX_BUCKETS = 64 };

int drv_metrics_new(drv_metrics **out);
/* Stops the endpoint if it is served, and frees every metric. Accepts NULL. */
void drv_metrics_free(drv_metrics *m);

/*
 * Registration. labels: NULL, or a NULL-terminated list of name, value pairs
 * ({"profile", "default", NULL}); copied. help is copied. A bad name, a bad label name, a name
 * already registered with another type or help, or the same name with the same labels, is
 * DRV_EINVAL (DRV_EEXIST for the last) with the reason in d. histogram: bounds strictly
 * increasing and finite, 1..DRV_METRICS_MAX_BUCKETS of them.
 */
int drv_metrics_counter(drv_metrics *m, const char *name, const char *help,
                        const char *const *labels, drv_metric **out, drv_diag *d);
int drv_metrics_gauge(drv_metrics *m, const char *name, const char *help, const char *const *labels,
                      drv_metric **out, drv_diag *d);
int drv_metrics_histogram(drv_metrics *m, const char *name, const char *help,
                          const char *const *labels, const double *bounds, int nbounds,
                          drv_metric **out, drv_diag *d);

/* Updates; any thread. add: counters and gauges (a counter ignores v < 0 and NaN, which
 * would break its monotonicity, and logs it once). set: gauges. observe: histograms (NaN
 * is ignored). A call on a metric of another type is ignored. */
void drv_metric_add(drv_metric *x, double v);
void drv_metric_set(drv_metric *x, double v);
void drv_metric_observe(drv_metric *x, double v);
/* The current value of a counter or gauge; the observation count of a histogram. */
double drv_metric_value(drv_metric *x);

/* The exposition text of every metric, in registration order of the families (drv_malloc;
 * the caller frees it), or NULL when out of memory. Each histogram is read under its lock, so
 * its buckets, _sum and _count agree. */
char *drv_metrics_render(drv_metrics *m);

/* Health flags (any thread). reason (copied, may be NULL) is what a 503 says. */
void drv_metrics_set_healthy(drv_metrics *m, bool healthy, const char *reason);
void drv_metrics_set_ready(drv_metrics *m, bool ready, const char *reason);

/*
 * Serves GET and HEAD of /metrics (text/plain; version=0.0.4), /healthz and /readyz on its own
 * thread. bind_addr: an IPv4 or IPv6 literal ("127.0.0.1", "0.0.0.0", "::"), or NULL (or "")
 * for DRV_METRICS_DEFAULT_HOST, loopback only: every interface must be asked for. port 0 picks a
 * free one; *actual_port (may be NULL) receives the port bound. Other paths answer 404, other
 * methods 405. DRV_EINVAL for a bad address, DRV_EIO when the socket cannot be bound, DRV_EEXIST
 * when already serving.
 */
#define DRV_METRICS_DEFAULT_HOST "127.0.0.1"
/* Connections served at once (Prometheus and the kubelet's probes need a few; more wait in the
 * listen queue), and the seconds after which an idle or slow connection is closed. */
#define DRV_METRICS_MAX_CONNECTIONS 64
#define DRV_METRICS_TIMEOUT_S 10
/*
 * Parses a listen address "[HOST]:PORT" (":8080", "0.0.0.0:8080", "[::]:0") into host (the IP
 * literal, brackets removed; DRV_METRICS_DEFAULT_HOST when HOST is empty: loopback unless every
 * interface is asked for) and port. DRV_EINVAL, naming the text, when it is not of that form;
 * the address itself is checked by drv_metrics_serve.
 */
int drv_metrics_parse_addr(const char *text, char *host, size_t hostcap, uint16_t *port,
                           drv_diag *d);
int drv_metrics_serve(drv_metrics *m, const char *bind_addr, uint16_t port, uint16_t *actual_port,
                      drv_diag *d);
/* Stops serving (waits for requests in flight). No-op when not serving. */
void drv_metrics_stop(drv_metrics *m);

#endif
