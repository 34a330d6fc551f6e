/*
 * metrics.c - counters, gauges and histograms in the Prometheus text format, and the HTTP
 * endpoint that serves them with the health checks (kube_metrics.h).
 *
 * Each metric carries its own mutex: updates from many threads contend only per metric, and a
 * histogram is rendered under its lock so that its buckets, _sum and _count are one snapshot
 * (the +Inf bucket always equals _count). Buckets are stored per bucket and made cumulative
 * when rendered. The registry's mutex guards the list of metrics and the health flags; the
 * rendering walks the list under it, families in the order of their first registration:
 *
 *     # HELP drover_cycle_seconds Cycle latency.
 *     # TYPE drover_cycle_seconds histogram
 *     drover_cycle_seconds_bucket{le="0.001"} 3
 *     drover_cycle_seconds_bucket{le="+Inf"} 4
 *     drover_cycle_seconds_sum 0.0123
 *     drover_cycle_seconds_count 4
 *
 * Numbers are written in the shortest %g form that reads back to the same double (Go's
 * strconv 'g' with -1 precision does the same for Prometheus' own clients), +Inf, -Inf, NaN.
 * The endpoint is libmicrohttpd with its internal polling thread: one thread, small answers.
 */
#include "drover/kube_metrics.h"

#include "kbuf.h"

#include <arpa/inet.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct drv_metric {
    enum drv_metric_type type;
    char *name;
    char *help;
    char *labels; /* rendered pairs without braces, a="x",b="y"; "" when none */
    pthread_mutex_t mu;
    double value;     /* counter, gauge */
    double *bounds;   /* histogram: nb upper bounds, increasing */
    uint64_t *counts; /* histogram: nb + 1 per-bucket counts (the last is above every bound) */
    int nb;
    double sum;
    uint64_t count;
    bool warned; /* a bad counter update was logged */
};

struct drv_metrics {
    pthread_mutex_t mu; /* the list, the flags, the reasons */
    drv_metric **v;
    int32_t n, cap;
    bool healthy, ready;
    char why_unhealthy[256], why_unready[256];
    struct MHD_Daemon *mhd;
};

/* ---- text buffer ---------------------------------------------------------------------------- */

typedef drv_kbuf sbuf; /* the client's response buffer serves as a text buffer too */

static void sb_put(sbuf *b, const char *s, size_t len)
{
    if (!b->oom)
        drv_kbuf_write((char *)s, 1, len, b);
}

static void sb_str(sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

/* s with backslash, newline and (when quote) the double quote escaped. */
static void sb_escaped(sbuf *b, const char *s, bool quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            sb_str(b, "\\\\");
        else if (*s == '\n')
            sb_str(b, "\\n");
        else if (quote && *s == '"')
            sb_str(b, "\\\"");
        else
            sb_put(b, s, 1);
    }
}

/* The shortest of %.15g, %.16g, %.17g that reads back as v. */
static void fmt_num(char *out, size_t n, double v)
{
    if (isnan(v)) {
        snprintf(out, n, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(out, n, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

static void sb_num(sbuf *b, double v)
{
    char t[40];
    fmt_num(t, sizeof t, v);
    sb_str(b, t);
}

/* ---- registry ------------------------------------------------------------------------------- */

int drv_metrics_new(drv_metrics **out)
{
    drv_metrics *m = drv_calloc(1, sizeof *m);
    if (!m)
        return DRV_ENOMEM;
    pthread_mutex_init(&m->mu, NULL);
    m->healthy = true;
    snprintf(m->why_unready, sizeof m->why_unready, "not ready yet");
    *out = m;
    return 0;
}

static void metric_free(drv_metric *x)
{
    if (!x)
        return;
    pthread_mutex_destroy(&x->mu);
    drv_free(x->name);
    drv_free(x->help);
    drv_free(x->labels);
    drv_free(x->bounds);
    drv_free(x->counts);
    drv_free(x);
}

void drv_metrics_free(drv_metrics *m)
{
    if (!m)
        return;
    drv_metrics_stop(m);
    for (int32_t i = 0; i < m->n; i++)
        metric_free(m->v[i]);
    drv_free(m->v);
    pthread_mutex_destroy(&m->mu);
    drv_free(m);
}

static bool name_ok(const char *s, bool colon)
{
    if (!s || !*s)
        return false;
    for (const char *p = s; *p; p++) {
        bool alpha = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                     (colon && *p == ':');
        if (!alpha && !(p > s && *p >= '0' && *p <= '9'))
            return false;
    }
    return true;
}

/* Renders the label pairs into *out (drv_malloc), or fails with the reason. */
static int render_labels(const char *const *labels, bool histogram, char **out, drv_diag *d)
{
    sbuf b = {0};
    sb_str(&b, "");
    for (int i = 0; labels && labels[i]; i += 2) {
        const char *k = labels[i], *v = labels[i + 1];
        if (!v) {
            drv_free(b.p);
            return drv_fail(d, DRV_EINVAL, "label %s has no value (labels are name, value pairs)",
                            k);
        }
        if (!name_ok(k, false) || !strncmp(k, "__", 2) || (histogram && !strcmp(k, "le"))) {
            drv_free(b.p);
            return drv_fail(d, DRV_EINVAL, "bad label name '%s'", k);
        }
        for (int j = 0; j < i; j += 2)
            if (!strcmp(labels[j], k)) {
                drv_free(b.p);
                return drv_fail(d, DRV_EINVAL, "label %s given twice", k);
            }
        if (i)
            sb_str(&b, ",");
        sb_str(&b, k);
        sb_str(&b, "=\"");
        sb_escaped(&b, v, true);
        sb_str(&b, "\"");
    }
    if (b.oom) {
        drv_free(b.p);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    *out = b.p;
    return 0;
}

static int reg(drv_metrics *m, enum drv_metric_type type, const char *name, const char *help,
               const char *const *labels, const double *bounds, int nb, drv_metric **out,
               drv_diag *d)
{
    static const char *const tname[] = {"counter", "gauge", "histogram"};
    if (!name_ok(name, true))
        return drv_fail(d, DRV_EINVAL, "bad metric name '%s': expected [a-zA-Z_:][a-zA-Z0-9_:]*",
                        name ? name : "(null)");
    if (type == DRV_METRIC_HISTOGRAM) {
        if (nb < 1 || nb > DRV_METRICS_MAX_BUCKETS)
            return drv_fail(d, DRV_EINVAL, "%s: %d bucket bounds, expected 1 to %d", name, nb,
                            DRV_METRICS_MAX_BUCKETS);
        for (int i = 0; i < nb; i++)
            if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1]))
                return drv_fail(d, DRV_EINVAL,
                                "%s: bucket bound %d: expected finite and increasing", name, i);
    }
    drv_metric *x = drv_calloc(1, sizeof *x);
    if (!x)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    pthread_mutex_init(&x->mu, NULL);
    x->type = type;
    x->nb = type == DRV_METRIC_HISTOGRAM ? nb : 0;
    drv_diag why = {{0}};
    int rc = render_labels(labels, type == DRV_METRIC_HISTOGRAM, &x->labels, &why);
    if (rc) {
        metric_free(x);
        return drv_fail(d, rc, "%s: %s", name, why.msg);
    }
    x->name = drv_strdup(name);
    x->help = drv_strdup(help ? help : "");
    if (x->nb) {
        x->bounds = drv_malloc((size_t)nb * sizeof *x->bounds);
        x->counts = drv_calloc((size_t)nb + 1, sizeof *x->counts);
        if (x->bounds)
            memcpy(x->bounds, bounds, (size_t)nb * sizeof *bounds);
    }
    if (!x->name || !x->help || (x->nb && (!x->bounds || !x->counts))) {
        metric_free(x);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    pthread_mutex_lock(&m->mu);
    rc = 0;
    for (int32_t i = 0; i < m->n && !rc; i++) {
        drv_metric *y = m->v[i];
        if (strcmp(y->name, name))
            continue;
        if (y->type != type || strcmp(y->help, x->help))
            rc = drv_fail(d, DRV_EINVAL, "%s: registered already as a %s with other help", name,
                          tname[y->type]);
        else if (!strcmp(y->labels, x->labels))
            rc = drv_fail(d, DRV_EEXIST, "%s{%s}: registered already", name, x->labels);
    }
    if (!rc && drv_grow(&m->v, sizeof *m->v, &m->cap, m->n + 1))
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
    if (!rc)
        m->v[m->n++] = x;
    pthread_mutex_unlock(&m->mu);
    if (rc) {
        metric_free(x);
        return rc;
    }
    *out = x;
    return 0;
}

int drv_metrics_counter(drv_metrics *m, const char *name, const char *help,
                        const char *const *labels, drv_metric **out, drv_diag *d)
{
    return reg(m, DRV_METRIC_COUNTER, name, help, labels, NULL, 0, out, d);
}

int drv_metrics_gauge(drv_metrics *m, const char *name, const char *help, const char *const *labels,
                      drv_metric **out, drv_diag *d)
{
    return reg(m, DRV_METRIC_GAUGE, name, help, labels, NULL, 0, out, d);
}

int drv_metrics_histogram(drv_metrics *m, const char *name, const char *help,
                          const char *const *labels, const double *bounds, int nbounds,
                          drv_metric **out, drv_diag *d)
{
    return reg(m, DRV_METRIC_HISTOGRAM, name, help, labels, bounds, nbounds, out, d);
}

/* ---- updates -------------------------------------------------------------------------------- */

void drv_metric_add(drv_metric *x, double v)
{
    if (!x || x->type == DRV_METRIC_HISTOGRAM)
        return;
    pthread_mutex_lock(&x->mu);
    if (x->type == DRV_METRIC_COUNTER && !(v >= 0)) {
        if (!x->warned)
            drv_log(DRV_LOG_WARN, "metric %s: a counter cannot add %g (ignored)", x->name, v);
        x->warned = true;
    } else {
        x->value += v;
    }
    pthread_mutex_unlock(&x->mu);
}

void drv_metric_set(drv_metric *x, double v)
{
    if (!x || x->type != DRV_METRIC_GAUGE)
        return;
    pthread_mutex_lock(&x->mu);
    x->value = v;
    pthread_mutex_unlock(&x->mu);
}

void drv_metric_observe(drv_metric *x, double v)
{
    if (!x || x->type != DRV_METRIC_HISTOGRAM || isnan(v))
        return;
    /* binary search: the first bound >= v (Prometheus buckets are "less or equal") */
    int lo = 0, hi = x->nb;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (v <= x->bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    pthread_mutex_lock(&x->mu);
    x->counts[lo]++;
    x->count++;
    x->sum += v;
    pthread_mutex_unlock(&x->mu);
}

double drv_metric_value(drv_metric *x)
{
    if (!x)
        return 0;
    pthread_mutex_lock(&x->mu);
    double v = x->type == DRV_METRIC_HISTOGRAM ? (double)x->count : x->value;
    pthread_mutex_unlock(&x->mu);
    return v;
}

/* ---- rendering ------------------------------------------------------------------------------ */

/* name[suffix]{labels[,extra]} */
static void sb_series(sbuf *b, const drv_metric *x, const char *suffix, const char *extra)
{
    sb_str(b, x->name);
    sb_str(b, suffix);
    bool any = x->labels[0] || extra;
    if (any)
        sb_str(b, "{");
    sb_str(b, x->labels);
    if (extra) {
        if (x->labels[0])
            sb_str(b, ",");
        sb_str(b, extra);
    }
    if (any)
        sb_str(b, "}");
    sb_str(b, " ");
}

static void render_one(sbuf *b, drv_metric *x)
{
    pthread_mutex_lock(&x->mu);
    if (x->type != DRV_METRIC_HISTOGRAM) {
        sb_series(b, x, "", NULL);
        sb_num(b, x->value);
        sb_str(b, "\n");
    } else {
        uint64_t cum = 0;
        char le[64], num[40];
        for (int i = 0; i <= x->nb; i++) {
            cum += x->counts[i];
            if (i < x->nb)
                fmt_num(num, sizeof num, x->bounds[i]);
            snprintf(le, sizeof le, "le=\"%s\"", i < x->nb ? num : "+Inf");
            sb_series(b, x, "_bucket", le);
            snprintf(num, sizeof num, "%llu\n", (unsigned long long)cum);
            sb_str(b, num);
        }
        sb_series(b, x, "_sum", NULL);
        sb_num(b, x->sum);
        sb_str(b, "\n");
        sb_series(b, x, "_count", NULL);
        snprintf(num, sizeof num, "%llu\n", (unsigned long long)x->count);
        sb_str(b, num);
    }
    pthread_mutex_unlock(&x->mu);
}

char *drv_metrics_render(drv_metrics *m)
{
    static const char *const tname[] = {"counter", "gauge", "histogram"};
    sbuf b = {0};
    sb_str(&b, "");
    pthread_mutex_lock(&m->mu);
    /* O(metrics^2) name compares: registries hold tens of metrics */
    for (int32_t i = 0; i < m->n; i++) {
        drv_metric *x = m->v[i];
        bool seen = false;
        for (int32_t j = 0; j < i && !seen; j++)
            seen = !strcmp(m->v[j]->name, x->name);
        if (seen)
            continue;
        sb_str(&b, "# HELP ");
        sb_str(&b, x->name);
        sb_str(&b, " ");
        sb_escaped(&b, x->help, false);
        sb_str(&b, "\n# TYPE ");
        sb_str(&b, x->name);
        sb_str(&b, " ");
        sb_str(&b, tname[x->type]);
        sb_str(&b, "\n");
        for (int32_t j = i; j < m->n; j++)
            if (!strcmp(m->v[j]->name, x->name))
                render_one(&b, m->v[j]);
    }
    pthread_mutex_unlock(&m->mu);
    if (b.oom) {
        drv_free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- health and the endpoint ---------------------------------------------------------------- */

static void set_flag(drv_metrics *m, bool *flag, char *why, size_t n, bool v, const char *reason)
{
    pthread_mutex_lock(&m->mu);
    *flag = v;
    snprintf(why, n, "%s", reason ? reason : "");
    pthread_mutex_unlock(&m->mu);
}

void drv_metrics_set_healthy(drv_metrics *m, bool healthy, const char *reason)
{
    set_flag(m, &m->healthy, m->why_unhealthy, sizeof m->why_unhealthy, healthy, reason);
}

void drv_metrics_set_ready(drv_metrics *m, bool ready, const char *reason)
{
    set_flag(m, &m->ready, m->why_unready, sizeof m->why_unready, ready, reason);
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned code, const char *ctype,
                              const char *body, size_t len)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    if (code == 405)
        MHD_add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls)
{
    (void)version, (void)upload, (void)upload_size, (void)con_cls;
    drv_metrics *m = cls;
    static const char text[] = "text/plain; charset=utf-8";
    if (strcmp(method, "GET") && strcmp(method, "HEAD"))
        return answer(c, 405, text, "method not allowed\n", 19);
    if (!strcmp(url, "/metrics")) {
        char *s = drv_metrics_render(m);
        if (!s)
            return answer(c, 500, text, "out of memory\n", 14);
        enum MHD_Result ok =
            answer(c, 200, "text/plain; version=0.0.4; charset=utf-8", s, strlen(s));
        drv_free(s);
        return ok;
    }
    bool healthz = !strcmp(url, "/healthz");
    if (!healthz && strcmp(url, "/readyz"))
        return answer(c, 404, text, "404 page not found\n", 19);
    char msg[300];
    pthread_mutex_lock(&m->mu);
    bool ok = healthz ? m->healthy : m->ready;
    const char *why = healthz ? m->why_unhealthy : m->why_unready;
    snprintf(msg, sizeof msg, "%s\n", ok ? "ok" : (*why ? why : "not ok"));
    pthread_mutex_unlock(&m->mu);
    return answer(c, ok ? 200 : 503, text, msg, strlen(msg));
}

int drv_metrics_parse_addr(const char *text, char *host, size_t hostcap, uint16_t *port,
                           drv_diag *d)
{
    const char *colon = strrchr(text, ':');
    char *end = NULL;
    long p = colon ? strtol(colon + 1, &end, 10) : -1;
    size_t hl = colon ? (size_t)(colon - text) : 0;
    const char *h = text;
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']') { /* [IPv6]:port */
        h++;
        hl -= 2;
    }
    bool stray = memchr(h, '[', hl) || memchr(h, ']', hl); /* "[::1", "a]" */
    if (!colon || !colon[1] || colon[1] == '-' || colon[1] == '+' || *end || p < 0 || p > 65535 ||
        hl >= hostcap || stray)
        return drv_fail(d, DRV_EINVAL, "expected [HOST]:PORT such as :8080, found '%s'", text);
    if (hl == 0)
        snprintf(host, hostcap, "%s", DRV_METRICS_DEFAULT_HOST);
    else
        snprintf(host, hostcap, "%.*s", (int)hl, h);
    *port = (uint16_t)p;
    return 0;
}

int drv_metrics_serve(drv_metrics *m, const char *bind_addr, uint16_t port, uint16_t *actual_port,
                      drv_diag *d)
{
    struct sockaddr_in sa4;
    struct sockaddr_in6 sa6;
    memset(&sa4, 0, sizeof sa4);
    memset(&sa6, 0, sizeof sa6);
    struct sockaddr *sa = (struct sockaddr *)&sa4;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD;
    /* Loopback unless told otherwise: metrics and health say what the cluster runs, and an
     * operator must choose to show them beyond the node (deploy/drover.yaml does, for probes). */
    const char *addr = bind_addr && *bind_addr ? bind_addr : DRV_METRICS_DEFAULT_HOST;
    if (inet_pton(AF_INET, addr, &sa4.sin_addr) == 1) {
        sa4.sin_family = AF_INET;
        sa4.sin_port = htons(port);
    } else if (inet_pton(AF_INET6, addr, &sa6.sin6_addr) == 1) {
        sa6.sin6_family = AF_INET6;
        sa6.sin6_port = htons(port);
        sa = (struct sockaddr *)&sa6;
        flags |= MHD_USE_IPv6;
    } else {
        return drv_fail(d, DRV_EINVAL, "metrics: bind address '%s': expected an IP address", addr);
    }
    if (m->mhd)
        return drv_fail(d, DRV_EEXIST, "metrics: served already");
    /* Bounded, whoever connects (issue 26): at most DRV_METRICS_MAX_CONNECTIONS open at once
     * (more wait in the listen queue, then time out: a flood never takes the controller's file
     * descriptors, which its API clients need), and a connection idle or sending its header
     * slowly for DRV_METRICS_TIMEOUT_S is closed (a slow client holds one place for that long,
     * never the polling thread: tests/kube/test_metrics.c). */
    m->mhd = MHD_start_daemon(flags, port, NULL, NULL, handle, m, MHD_OPTION_SOCK_ADDR, sa,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)DRV_METRICS_TIMEOUT_S,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)DRV_METRICS_MAX_CONNECTIONS,
                              MHD_OPTION_END);
    if (!m->mhd)
        return drv_fail(d, DRV_EIO, "metrics: cannot listen on %s port %u (in use, or not allowed)",
                        addr, (unsigned)port);
    if (actual_port) {
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->mhd, MHD_DAEMON_INFO_BIND_PORT);
        *actual_port = info ? info->port : port;
    }
    return 0;
}

void drv_metrics_stop(drv_metrics *m)
{
    if (m && m->mhd) {
        MHD_stop_daemon(m->mhd);
        m->mhd = NULL;
    }
}
