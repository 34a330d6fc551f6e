/*
 * The metrics registry and its endpoint: the exposition text is parsed back and checked
 * against what was recorded (counter and gauge values, histogram buckets cumulative and
 * monotone with +Inf = _count and the right _sum, against a brute-force count per bound);
 * label escaping and families; registration errors; failing allocations; concurrent updates
 * that must add up while renders run beside them (each render a consistent histogram); and
 * the HTTP endpoint fetched with libcurl on 127.0.0.1: /metrics, health flipping to 503 and
 * back, 404 and 405.
 */
#include "drover/kube_metrics.h"

#include "wait.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

/* The value of the series written exactly as `series` (name and labels), or NAN. */
static double series_value(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (!strncmp(p, series, n) && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    }
    return NAN;
}

static int count_lines(const char *text, const char *prefix)
{
    int k = 0;
    size_t n = strlen(prefix);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        k += !strncmp(p, prefix, n);
    return k;
}

static const double BOUNDS[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                0.1,    0.25,  0.5,    1,     2.5,  5,     10};
enum { NB = sizeof BOUNDS / sizeof *BOUNDS };

/* Checks one histogram in text: buckets in order, cumulative, monotone, the le values are the
 * bounds, +Inf = _count; returns _count and fills cum[] (NB + 1) and *sum. */
static double check_histogram(const char *text, const char *name, const char *labels,
                              double cum[NB + 1], double *sum)
{
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s_bucket{%s%sle=\"", name, labels, *labels ? "," : "");
    size_t pn = strlen(prefix);
    int i = 0;
    double last = 0;
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, prefix, pn))
            continue;
        assert_true(i <= NB);
        const char *q = p + pn;
        if (i < NB)
            assert_true(strtod(q, NULL) == BOUNDS[i]);
        else
            assert_int_equal(strncmp(q, "+Inf\"}", 6), 0);
        double v = strtod(strchr(q, ' ') + 1, NULL);
        assert_true(v >= last); /* cumulative */
        cum[i++] = last = v;
    }
    assert_int_equal(i, NB + 1);
    char s[256];
    snprintf(s, sizeof s, "%s_count%s%s%s", name, *labels ? "{" : "", labels, *labels ? "}" : "");
    double count = series_value(text, s);
    assert_true(count == cum[NB]);
    snprintf(s, sizeof s, "%s_sum%s%s%s", name, *labels ? "{" : "", labels, *labels ? "}" : "");
    *sum = series_value(text, s);
    assert_false(isnan(*sum));
    return count;
}

static void test_render(void **unused)
{
    (void)unused;
    drv_metrics *m;
    drv_diag d;
    drv_metric *c, *g, *h, *c2;
    assert_int_equal(drv_metrics_new(&m), 0);
    assert_int_equal(drv_metrics_counter(m, "drover_binds_total", "Pods bound.", NULL, &c, &d), 0);
    static const char *const lab[] = {"profile", "de\"f\\ault\n", NULL};
    assert_int_equal(drv_metrics_counter(m, "drover_binds_total", "Pods bound.", lab, &c2, &d), 0);
    assert_int_equal(
        drv_metrics_gauge(m, "drover_pending_pods", "Pods waiting.\nSecond line.", NULL, &g, &d),
        0);
    assert_int_equal(drv_metrics_histogram(m, "drover_cycle_seconds", "Cycle latency.", NULL,
                                           BOUNDS, NB, &h, &d),
                     0);
    drv_metric_add(c, 1);
    drv_metric_add(c, 2.5);
    drv_metric_add(c, -1); /* ignored: counters only go up */
    drv_metric_add(c, NAN);
    drv_metric_add(c2, 7);
    drv_metric_set(g, -2);
    drv_metric_add(g, 0.5);
    /* observations on, below, between and above the bounds */
    double obs[] = {0, 0.0005, 0.0007, 0.001, 0.003, 0.3, 1, 9.99, 10, 11, 1e9, -1};
    double want_sum = 0;
    for (size_t i = 0; i < sizeof obs / sizeof *obs; i++) {
        drv_metric_observe(h, obs[i]);
        want_sum += obs[i];
    }
    drv_metric_observe(h, NAN); /* ignored */
    char *t = drv_metrics_render(m);
    assert_non_null(t);
    assert_true(series_value(t, "drover_binds_total") == 3.5);
    assert_true(series_value(t, "drover_binds_total{profile=\"de\\\"f\\\\ault\\n\"}") == 7);
    assert_true(series_value(t, "drover_pending_pods") == -1.5);
    assert_true(drv_metric_value(g) == -1.5);
    /* one HELP and TYPE per family, though two series */
    assert_int_equal(count_lines(t, "# HELP drover_binds_total "), 1);
    assert_int_equal(count_lines(t, "# TYPE drover_binds_total counter\n"), 1);
    assert_int_equal(count_lines(t, "# HELP drover_pending_pods Pods waiting.\\nSecond line.\n"),
                     1);
    assert_int_equal(count_lines(t, "# TYPE drover_cycle_seconds histogram\n"), 1);
    double cum[NB + 1], sum;
    double count = check_histogram(t, "drover_cycle_seconds", "", cum, &sum);
    assert_true(count == (double)(sizeof obs / sizeof *obs));
    assert_true(fabs(sum - want_sum) <= 1e-9 * fabs(want_sum));
    for (int i = 0; i < NB; i++) { /* brute force: observations <= bound */
        int k = 0;
        for (size_t j = 0; j < sizeof obs / sizeof *obs; j++)
            k += obs[j] <= BOUNDS[i];
        if (cum[i] != k)
            fail_msg("bucket le=%g: %g rendered, %d observed", BOUNDS[i], cum[i], k);
    }
    /* the shortest exact form of the bounds, not 0.00050000000000000001 */
    assert_non_null(strstr(t, "drover_cycle_seconds_bucket{le=\"0.0005\"} 3\n"));
    drv_free(t);
    drv_metrics_free(m);
}

static void test_registration_errors(void **unused)
{
    (void)unused;
    drv_metrics *m;
    drv_diag d;
    drv_metric *x;
    assert_int_equal(drv_metrics_new(&m), 0);
    assert_int_equal(drv_metrics_counter(m, "9lives", "", NULL, &x, &d), DRV_EINVAL);
    assert_int_equal(drv_metrics_counter(m, "a-b", "", NULL, &x, &d), DRV_EINVAL);
    assert_int_equal(drv_metrics_counter(m, "ok_total", "h", NULL, &x, &d), 0);
    assert_int_equal(drv_metrics_counter(m, "ok_total", "h", NULL, &x, &d), DRV_EEXIST);
    assert_int_equal(drv_metrics_gauge(m, "ok_total", "h", NULL, &x, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "counter"));
    static const char *const le[] = {"le", "1", NULL}, *const odd[] = {"a", NULL},
                             *const twice[] = {"a", "1", "a", "2", NULL},
                             *const reserved[] = {"__x", "1", NULL};
    double b[] = {1, 1};
    assert_int_equal(drv_metrics_histogram(m, "h", "", le, b, 1, &x, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "le"));
    assert_int_equal(drv_metrics_histogram(m, "h", "", NULL, b, 2, &x, &d), DRV_EINVAL);
    assert_int_equal(drv_metrics_histogram(m, "h", "", NULL, b, 0, &x, &d), DRV_EINVAL);
    assert_int_equal(drv_metrics_counter(m, "c", "", odd, &x, &d), DRV_EINVAL);
    assert_int_equal(drv_metrics_counter(m, "c", "", twice, &x, &d), DRV_EINVAL);
    assert_int_equal(drv_metrics_counter(m, "c", "", reserved, &x, &d), DRV_EINVAL);
    assert_int_equal(drv_metrics_gauge(m, "le_is_fine_on_gauges", "", le, &x, &d), 0);
    drv_metrics_free(m);
}

/* Every allocation of a registration and a render fails in turn: an error, no leak (ASan),
 * and once allocations succeed, the same text as a run that never failed. */
static void test_failing_allocations(void **unused)
{
    (void)unused;
    static const char *const lab[] = {"q", "v", NULL};
    char *want = NULL;
    for (long nth = 1; nth < 200; nth++) {
        drv_metrics *m;
        drv_metric *x = NULL;
        drv_diag d;
        assert_int_equal(drv_metrics_new(&m), 0);
        drv_alloc_fail_at(nth);
        int rc = drv_metrics_histogram(m, "lat_seconds", "Latency.", lab, BOUNDS, NB, &x, &d);
        char *t = rc == 0 ? drv_metrics_render(m) : NULL;
        drv_alloc_fail_at(0);
        if (rc)
            assert_int_equal(rc, DRV_ENOMEM);
        if (rc == 0 && t) {
            if (!want)
                want = t, t = NULL;
            else
                assert_string_equal(t, want);
            drv_free(t);
            drv_metrics_free(m);
            if (nth > 20)
                break;
            continue;
        }
        drv_metrics_free(m);
    }
    assert_non_null(want);
    drv_free(want);
}

typedef struct worker {
    drv_metric *c, *h;
    int n;
} worker;

static void *hammer(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < w->n; i++) {
        drv_metric_add(w->c, 1);
        drv_metric_observe(w->h, (double)(i % 7) * 0.01);
    }
    return NULL;
}

static void test_concurrent_updates(void **unused)
{
    (void)unused;
    drv_metrics *m;
    drv_diag d;
    worker w = {.n = 20000};
    assert_int_equal(drv_metrics_new(&m), 0);
    assert_int_equal(drv_metrics_counter(m, "ops_total", "Ops.", NULL, &w.c, &d), 0);
    assert_int_equal(drv_metrics_histogram(m, "op_seconds", "Op time.", NULL, BOUNDS, NB, &w.h, &d),
                     0);
    enum { T = 8 };
    pthread_t t[T];
    for (int i = 0; i < T; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer, &w), 0);
    /* renders while the threads run: every snapshot is a consistent histogram */
    for (int r = 0; r < 50; r++) {
        char *s = drv_metrics_render(m);
        assert_non_null(s);
        double cum[NB + 1], sum;
        check_histogram(s, "op_seconds", "", cum, &sum);
        drv_free(s);
    }
    for (int i = 0; i < T; i++)
        pthread_join(t[i], NULL);
    char *s = drv_metrics_render(m);
    assert_true(series_value(s, "ops_total") == (double)T * w.n);
    double cum[NB + 1], sum, want = 0;
    assert_true(check_histogram(s, "op_seconds", "", cum, &sum) == (double)T * w.n);
    for (int i = 0; i < w.n; i++)
        want += (double)(i % 7) * 0.01;
    assert_true(fabs(sum - T * want) < 1e-6 * T * want);
    drv_free(s);
    drv_metrics_free(m);
}

/* ---- the endpoint --------------------------------------------------------------------------- */

typedef struct fetched {
    long code;
    char body[65536];
    size_t n;
    char ctype[128];
} fetched;

static size_t on_body(char *p, size_t sz, size_t nm, void *arg)
{
    fetched *f = arg;
    size_t k = sz * nm;
    size_t room = sizeof f->body - 1 - f->n;
    memcpy(f->body + f->n, p, k < room ? k : room);
    f->n += k < room ? k : room;
    f->body[f->n] = 0;
    return k;
}

/* method path into f; the transfer's code (f->code 0 when no answer came). */
static CURLcode fetch_rc(uint16_t port, const char *method, const char *path, fetched *f)
{
    memset(f, 0, sizeof *f);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", (unsigned)port, path);
    CURL *h = curl_easy_init();
    assert_non_null(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, f);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET"))
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    CURLcode rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &f->code);
    char *ct = NULL;
    curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(f->ctype, sizeof f->ctype, "%s", ct ? ct : "");
    curl_easy_cleanup(h);
    return rc;
}

static void fetch(uint16_t port, const char *method, const char *path, fetched *f)
{
    assert_int_equal(fetch_rc(port, method, path, f), CURLE_OK);
}

static void test_endpoint(void **unused)
{
    (void)unused;
    drv_metrics *m;
    drv_diag d;
    drv_metric *c;
    assert_int_equal(drv_metrics_new(&m), 0);
    assert_int_equal(drv_metrics_counter(m, "requests_total", "Requests.", NULL, &c, &d), 0);
    drv_metric_add(c, 42);
    uint16_t port = 0;
    assert_int_equal(drv_metrics_serve(m, "not-an-ip", 0, &port, &d), DRV_EINVAL);
    assert_int_equal(drv_metrics_serve(m, "127.0.0.1", 0, &port, &d), 0);
    assert_true(port > 0);
    assert_int_equal(drv_metrics_serve(m, "127.0.0.1", 0, NULL, &d), DRV_EEXIST);
    /* a second registry cannot take the same port */
    drv_metrics *other;
    assert_int_equal(drv_metrics_new(&other), 0);
    assert_int_equal(drv_metrics_serve(other, "127.0.0.1", port, NULL, &d), DRV_EIO);
    drv_metrics_free(other);

    fetched f;
    fetch(port, "GET", "/metrics", &f);
    assert_int_equal(f.code, 200);
    assert_non_null(strstr(f.ctype, "version=0.0.4"));
    char *want = drv_metrics_render(m);
    assert_string_equal(f.body, want);
    drv_free(want);
    assert_true(series_value(f.body, "requests_total") == 42);
    fetch(port, "HEAD", "/metrics", &f);
    assert_int_equal(f.code, 200);
    assert_int_equal(f.n, 0);

    fetch(port, "GET", "/healthz", &f);
    assert_int_equal(f.code, 200);
    assert_string_equal(f.body, "ok\n");
    fetch(port, "GET", "/readyz", &f); /* a new registry is not ready */
    assert_int_equal(f.code, 503);
    drv_metrics_set_ready(m, true, NULL);
    fetch(port, "GET", "/readyz", &f);
    assert_int_equal(f.code, 200);
    drv_metrics_set_healthy(m, false, "informer lost the API server");
    fetch(port, "GET", "/healthz", &f);
    assert_int_equal(f.code, 503);
    assert_string_equal(f.body, "informer lost the API server\n");
    fetch(port, "GET", "/readyz", &f); /* the flags are independent */
    assert_int_equal(f.code, 200);
    drv_metrics_set_healthy(m, true, NULL);
    fetch(port, "GET", "/healthz", &f);
    assert_int_equal(f.code, 200);

    fetch(port, "GET", "/nope", &f);
    assert_int_equal(f.code, 404);
    fetch(port, "GET", "/metrics/", &f);
    assert_int_equal(f.code, 404);
    fetch(port, "POST", "/metrics", &f);
    assert_int_equal(f.code, 405);
    fetch(port, "DELETE", "/healthz", &f);
    assert_int_equal(f.code, 405);

    drv_metrics_stop(m);
    drv_metrics_stop(m); /* idempotent */
    /* served again after a stop, on a new port */
    assert_int_equal(drv_metrics_serve(m, "127.0.0.1", 0, &port, &d), 0);
    fetch(port, "GET", "/healthz", &f);
    assert_int_equal(f.code, 200);
    drv_metrics_free(m); /* stops the endpoint */
}

/* File descriptors this process has open. */
static int open_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    assert_non_null(dir);
    int n = 0;
    while (readdir(dir))
        n++;
    closedir(dir);
    return n - 3; /* (".", ".." and the directory's own) */
}

/* A non-blocking TCP connection to 127.0.0.1:port, begun. */
static int dial(uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    assert_true(rc == 0 || errno == EINPROGRESS);
    return fd;
}

enum { FLOOD = 10000 };

/* Issue 26's probe, on loopback: a client that sends half a header and holds its connection
 * does not keep others from /metrics; 10,000 connections at once take at most
 * DRV_METRICS_MAX_CONNECTIONS of the process's descriptors (counted in /proc/self/fd: the
 * server's side of each accepted connection is one; without the limit libmicrohttpd accepts
 * ~1,000), and once they close the endpoint answers again. */
static void test_connection_flood_and_slow_header(void **unused)
{
    (void)unused;
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < FLOOD + 2000 && rl.rlim_max >= FLOOD + 2000) {
        rl.rlim_cur = FLOOD + 2000;
        assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    if (rl.rlim_cur < FLOOD + 2000)
        skip(); /* (the machine allows too few descriptors for the probe) */
    drv_metrics *m;
    drv_diag d;
    assert_int_equal(drv_metrics_new(&m), 0);
    uint16_t port = 0;
    assert_int_equal(drv_metrics_serve(m, "127.0.0.1", 0, &port, &d), 0);
    fetched f;
    int slow = dial(port);
    struct pollfd pw = {.fd = slow, .events = POLLOUT};
    assert_int_equal(poll(&pw, 1, 5000), 1);
    static const char half[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    assert_int_equal(write(slow, half, sizeof half - 1), (ssize_t)(sizeof half - 1));
    fetch(port, "GET", "/metrics", &f);
    assert_int_equal(f.code, 200);

    int base = open_fds();
    static int fds[FLOOD];
    for (int i = 0; i < FLOOD; i++)
        fds[i] = dial(port);
    /* the server takes connections up to its limit (its descriptors: open_fds() - base) */
    WAIT_FOR(open_fds() - base - FLOOD >= DRV_METRICS_MAX_CONNECTIONS / 2);
    struct timespec settle = {0, 300 * 1000000L};
    nanosleep(&settle, NULL); /* (a server without the limit would take more meanwhile) */
    assert_true(open_fds() - base - FLOOD <= DRV_METRICS_MAX_CONNECTIONS);
    for (int i = 0; i < FLOOD; i++)
        close(fds[i]);
    WAIT_FOR(fetch_rc(port, "GET", "/metrics", &f) == CURLE_OK && f.code == 200);
    drv_metrics_free(m);
    close(slow);
}

/* 1 when a TCP connection to ip:port is accepted. */
static int connects(const char *ip, uint16_t port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    assert_int_equal(inet_pton(AF_INET, ip, &sa.sin_addr), 1);
    int ok = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return ok;
}

/* Without a host the endpoint listens on loopback only (it bound every interface): 127.0.0.2
 * reaches a socket bound to 0.0.0.0 but not one bound to 127.0.0.1, all without leaving lo.
 * And nothing served changes state: every method but GET and HEAD is 405. */
static void test_default_is_loopback_and_read_only(void **unused)
{
    (void)unused;
    drv_metrics *m;
    drv_diag d;
    uint16_t port = 0;
    assert_int_equal(drv_metrics_new(&m), 0);
    assert_int_equal(drv_metrics_serve(m, NULL, 0, &port, &d), 0);
    assert_true(connects("127.0.0.1", port));
    assert_false(connects("127.0.0.2", port));
    fetched f;
    const char *methods[] = {"POST", "PUT", "DELETE", "PATCH"};
    for (int i = 0; i < 4; i++) {
        fetch(port, methods[i], "/metrics", &f);
        assert_int_equal(f.code, 405);
        fetch(port, methods[i], "/healthz", &f);
        assert_int_equal(f.code, 405);
    }
    drv_metrics_free(m);
    /* the contrast that makes the check mean something: every interface, asked for */
    assert_int_equal(drv_metrics_new(&m), 0);
    assert_int_equal(drv_metrics_serve(m, "0.0.0.0", 0, &port, &d), 0);
    assert_true(connects("127.0.0.2", port));
    drv_metrics_free(m);
}

/* Listen addresses: an empty host is loopback, brackets come off IPv6, bad forms are named. */
static void test_parse_addr(void **unused)
{
    (void)unused;
    char host[64];
    uint16_t port = 1;
    drv_diag d;
    assert_int_equal(drv_metrics_parse_addr(":8080", host, sizeof host, &port, &d), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_int_equal(drv_metrics_parse_addr("0.0.0.0:0", host, sizeof host, &port, &d), 0);
    assert_string_equal(host, "0.0.0.0");
    assert_int_equal(port, 0);
    assert_int_equal(drv_metrics_parse_addr("[::]:9090", host, sizeof host, &port, &d), 0);
    assert_string_equal(host, "::");
    assert_int_equal(port, 9090);
    static const char *const bad[] = {"8080",   ":",       ":x",    ":-1", ":+80",
                                      ":65536", "[::1:80", "a]:80", ":80 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        port = 7;
        assert_int_equal(drv_metrics_parse_addr(bad[i], host, sizeof host, &port, &d), DRV_EINVAL);
        assert_int_equal(port, 7);
    }
    assert_string_equal(d.msg, "expected [HOST]:PORT such as :8080, found ':80 '");
    assert_int_equal(drv_metrics_parse_addr("1.2.3.4:80", host, 4, &port, &d), DRV_EINVAL);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_parse_addr),
                                       cmocka_unit_test(test_default_is_loopback_and_read_only),
                                       cmocka_unit_test(test_render),
                                       cmocka_unit_test(test_registration_errors),
                                       cmocka_unit_test(test_failing_allocations),
                                       cmocka_unit_test(test_concurrent_updates),
                                       cmocka_unit_test(test_endpoint),
                                       cmocka_unit_test(test_connection_flood_and_slow_header)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
