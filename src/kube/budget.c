/*
 * budget.c - one API budget for all of a process's clients (kube.h): a shared token bucket and
 * the count of non-2xx answers by code, verb and resource.
 *
 * client-go gives every client of one process the same rate limiter, so a controller's many
 * clients together stay within --kube-api-qps; kube-scheduler does the same. Counting every
 * non-2xx answer here, retried ones included, is what lets a user see a conflict loop in
 * drover_api_errors_total instead of "0 failed requests".
 *
 * Labels: POST /api/v1/namespaces/default/pods/w-1/binding is (POST, pods/binding);
 * GET /api/v1/nodes is (LIST, nodes); GET ...?watch=1 is (WATCH, ...). At most MAX_ROWS
 * distinct label sets are kept; later ones are counted in the total and in one "other" row.
 */
#include "drover/clock.h"
#include "drover/kube.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { MAX_ROWS = 128 };

void drv_token_bucket_init(drv_token_bucket *b, double qps, int burst, double now)
{
    *b = (drv_token_bucket){.qps = qps, .tokens = burst, .burst = burst, .last = now};
}

double drv_token_bucket_take(drv_token_bucket *b, double now)
{
    if (now > b->last) {
        b->tokens += (now - b->last) * b->qps;
        if (b->tokens > b->burst)
            b->tokens = b->burst;
        b->last = now;
    }
    b->tokens -= 1; /* reserved: a negative balance is a queue of waiting requests */
    return b->tokens >= 0 ? 0 : -b->tokens / b->qps;
}

struct drv_kube_budget {
    pthread_mutex_t mu; /* guards everything below */
    drv_token_bucket tb;
    drv_kube_api_errors rows[MAX_ROWS];
    size_t nrows;
    long total;
};

int drv_kube_budget_new(drv_kube_budget **out, double qps, int burst, drv_diag *d)
{
    if (!(qps > 0) || burst < 1)
        return drv_fail(d, DRV_EINVAL, "API budget: qps must be above 0 and burst at least 1");
    drv_kube_budget *b = drv_calloc(1, sizeof *b);
    if (!b)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    pthread_mutex_init(&b->mu, NULL);
    drv_token_bucket_init(&b->tb, qps, burst, drv_clock_mono());
    *out = b;
    return 0;
}

void drv_kube_budget_free(drv_kube_budget *b)
{
    if (!b)
        return;
    pthread_mutex_destroy(&b->mu);
    drv_free(b);
}

double drv_kube_budget_take(drv_kube_budget *b)
{
    pthread_mutex_lock(&b->mu);
    double wait = drv_token_bucket_take(&b->tb, drv_clock_mono());
    pthread_mutex_unlock(&b->mu);
    return wait;
}

/* The i-th segment of path (before any query) into buf; false when there is none. */
static bool segment(const char *path, int i, char *buf, size_t n)
{
    const char *p = path;
    size_t len = strcspn(path, "?");
    const char *end = path + len;
    for (int k = 0; p < end; k++) {
        while (p < end && *p == '/')
            p++;
        const char *q = p;
        while (q < end && *q != '/')
            q++;
        if (q == p)
            break;
        if (k == i) {
            snprintf(buf, n, "%.*s", (int)(q - p), p);
            return true;
        }
        p = q;
    }
    return false;
}

void drv_kube_request_labels(const char *method, const char *path, char *verb, size_t nverb,
                             char *resource, size_t nres)
{
    char seg[6][96] = {{0}};
    int nseg = 0;
    /* /api/v1/... has 2 prefix segments, /apis/GROUP/VERSION/... 3 */
    char first[16] = "";
    segment(path, 0, first, sizeof first);
    int at = strcmp(first, "apis") == 0 ? 3 : 2;
    while (nseg < 6 && segment(path, at + nseg, seg[nseg], sizeof seg[nseg]))
        nseg++;
    int r = 0; /* index of the resource's plural */
    if (nseg >= 3 && strcmp(seg[0], "namespaces") == 0)
        r = 2; /* namespaces/NS/RESOURCE/... ; namespaces/NS alone is the namespace itself */
    bool named = nseg > r + 1;
    if (nseg > r + 2)
        snprintf(resource, nres, "%s/%s", seg[r], seg[r + 2]);
    else
        snprintf(resource, nres, "%s", nseg > r ? seg[r] : "");
    bool watch = strstr(path, "watch=1") || strstr(path, "watch=true");
    if (strcmp(method, "GET") == 0 && watch)
        snprintf(verb, nverb, "WATCH");
    else if (strcmp(method, "GET") == 0 && !named)
        snprintf(verb, nverb, "LIST");
    else
        snprintf(verb, nverb, "%s", method);
}

void drv_kube_budget_count(drv_kube_budget *b, const char *method, const char *path, long code)
{
    char verb[8], res[48];
    drv_kube_request_labels(method, path, verb, sizeof verb, res, sizeof res);
    pthread_mutex_lock(&b->mu);
    b->total++;
    size_t i = 0;
    while (i < b->nrows && !(b->rows[i].code == code && !strcmp(b->rows[i].verb, verb) &&
                             !strcmp(b->rows[i].resource, res)))
        i++;
    if (i == b->nrows && b->nrows == MAX_ROWS) { /* full: the last row gathers the rest */
        i = MAX_ROWS - 1;
        b->rows[i].code = 0;
        snprintf(b->rows[i].verb, sizeof b->rows[i].verb, "other");
        snprintf(b->rows[i].resource, sizeof b->rows[i].resource, "other");
    } else if (i == b->nrows) {
        b->rows[i] = (drv_kube_api_errors){.code = code};
        snprintf(b->rows[i].verb, sizeof b->rows[i].verb, "%s", verb);
        snprintf(b->rows[i].resource, sizeof b->rows[i].resource, "%s", res);
        b->nrows++;
    }
    b->rows[i].n++;
    pthread_mutex_unlock(&b->mu);
}

size_t drv_kube_budget_errors(drv_kube_budget *b, drv_kube_api_errors *out, size_t n)
{
    pthread_mutex_lock(&b->mu);
    size_t have = b->nrows;
    if (out && n > 0)
        memcpy(out, b->rows, (n < have ? n : have) * sizeof *out);
    pthread_mutex_unlock(&b->mu);
    return have;
}

long drv_kube_budget_error_total(drv_kube_budget *b)
{
    pthread_mutex_lock(&b->mu);
    long t = b->total;
    pthread_mutex_unlock(&b->mu);
    return t;
}
