/*
 * The API client against the in-memory test API server (loopback): requests and the errors
 * they surface, paged lists, retries on 429 (with Retry-After) and 500, no retry on a
 * conflict, watches that resume, end on the server's timeout, reconnect after a dropped
 * connection is reported, and ask for a relist after 410 Expired; the token bucket with a
 * fake clock; the back-off schedule.
 */
#include "apiserver.h"
#include "drover/kube.h"
#include "drover/kube_types.h"
#include "json.h"

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

typedef struct world {
    drv_apiserver *srv;
    drv_kube *k;
} world;

static int setup(void **state)
{
    world *w = calloc(1, sizeof *w);
    drv_diag d;
    drv_apiserver_opts o = {.fixture_dir = FIXTURE_DIR, .crd_installed = true, .bookmark_ms = 200};
    if (drv_apiserver_start(&w->srv, &o, &d) != 0) {
        fprintf(stderr, "apiserver: %s\n", d.msg);
        return -1;
    }
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(w->srv));
    drv_kube_config c = {.server = url,
                         .qps = 1000,
                         .burst = 1000,
                         .backoff_ms = 10,
                         .backoff_max_ms = 50,
                         .retry_after_max_s = 1};
    if (drv_kube_new(&w->k, &c, &d) != 0) {
        fprintf(stderr, "client: %s\n", d.msg);
        return -1;
    }
    *state = w;
    return 0;
}

static int teardown(void **state)
{
    world *w = *state;
    drv_kube_free(w->k);
    drv_apiserver_free(w->srv);
    free(w);
    return 0;
}

static void create_pod(drv_kube *k, const char *name)
{
    char body[512];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"app\":\"t\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
             "\"image\":\"busybox\"}]}}",
             name);
    long st;
    json_t *out;
    drv_diag d;
    int rc =
        drv_kube_request(k, "POST", "/api/v1/namespaces/default/pods", NULL, body, &st, &out, &d);
    if (rc)
        fail_msg("create %s: %s", name, d.msg);
    assert_int_equal(st, 201);
    assert_string_equal(json_string_value(json_object_get(out, "kind")), "Pod");
    json_decref(out);
}

/* metadata.labels[key] of an object, or NULL. */
static const char *label(json_t *obj, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), key));
}

static void test_request_and_errors(void **state)
{
    world *w = *state;
    create_pod(w->k, "a");
    long st;
    json_t *out;
    drv_diag d;
    assert_int_equal(drv_kube_request(w->k, "GET", "/api/v1/namespaces/default/pods/a", NULL, NULL,
                                      &st, &out, &d),
                     0);
    assert_int_equal(st, 200);
    const char *rv =
        json_string_value(json_object_get(json_object_get(out, "metadata"), "resourceVersion"));
    assert_non_null(rv);
    json_decref(out);
    /* 404: an error naming verb, path, status, reason */
    assert_int_equal(drv_kube_request(w->k, "GET", "/api/v1/namespaces/default/pods/nope", NULL,
                                      NULL, &st, &out, &d),
                     DRV_EIO);
    assert_int_equal(st, 404);
    assert_null(out);
    assert_non_null(strstr(d.msg, "GET /api/v1/namespaces/default/pods/nope: 404 NotFound"));
    /* 409 on an update with a stale resourceVersion, and it is not retried */
    long before = drv_kube_requests(w->k);
    const char *stale = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"a\","
                        "\"resourceVersion\":\"1\"},\"spec\":{\"containers\":[{\"name\":\"c\","
                        "\"image\":\"busybox\"}]}}";
    assert_int_equal(drv_kube_request(w->k, "PUT", "/api/v1/namespaces/default/pods/a", NULL, stale,
                                      &st, NULL, &d),
                     DRV_EIO);
    assert_int_equal(st, 409);
    assert_int_equal(drv_kube_requests(w->k) - before, 1);
    assert_non_null(strstr(d.msg, "Conflict"));
    /* merge patch with its content type */
    assert_int_equal(drv_kube_request(w->k, "PATCH", "/api/v1/namespaces/default/pods/a",
                                      "application/merge-patch+json",
                                      "{\"metadata\":{\"labels\":{\"x\":\"y\"}}}", &st, &out, &d),
                     0);
    assert_string_equal(label(out, "x"), "y");
    json_decref(out);
    /* JSON patch (RFC 6902), and its failing test op surfaced as 422 */
    assert_int_equal(drv_kube_request(w->k, "PATCH", "/api/v1/namespaces/default/pods/a",
                                      "application/json-patch+json",
                                      "[{\"op\":\"add\",\"path\":\"/metadata/labels/j\","
                                      "\"value\":\"p\"}]",
                                      &st, &out, &d),
                     0);
    assert_string_equal(label(out, "j"), "p");
    json_decref(out);
    assert_int_equal(drv_kube_request(w->k, "PATCH", "/api/v1/namespaces/default/pods/a",
                                      "application/json-patch+json",
                                      "[{\"op\":\"test\",\"path\":\"/metadata/labels/j\","
                                      "\"value\":\"q\"}]",
                                      &st, &out, &d),
                     DRV_EIO);
    assert_int_equal(st, 422);
    /* a gzip-encoded answer (the OpenAPI documents) is decoded */
    assert_int_equal(drv_kube_request(w->k, "GET", "/openapi/v3/api/v1", NULL, NULL, &st, &out, &d),
                     0);
    assert_non_null(json_object_get(out, "paths"));
    json_decref(out);
    /* DELETE without a body */
    assert_int_equal(drv_kube_request(w->k, "DELETE", "/api/v1/namespaces/default/pods/a", NULL,
                                      NULL, &st, NULL, &d),
                     0);
    assert_int_equal(drv_kube_request(w->k, "GET", "/api/v1/namespaces/default/pods/a", NULL, NULL,
                                      &st, NULL, &d),
                     DRV_EIO);
    assert_int_equal(st, 404);
}

/* mutate for test_update_conflict: adds a label; on its first call another writer changes
 * the object first, so the PUT that follows meets 409 and must be redone on fresh data. */
typedef struct race {
    drv_kube *other;
    int calls;
} race;

static int add_label(json_t *obj, void *arg)
{
    race *r = arg;
    if (r->calls++ == 0) {
        long st;
        drv_diag d;
        assert_int_equal(drv_kube_request(r->other, "PATCH", "/api/v1/namespaces/default/pods/u",
                                          "application/merge-patch+json",
                                          "{\"metadata\":{\"labels\":{\"theirs\":\"1\"}}}", &st,
                                          NULL, &d),
                         0);
    }
    json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
    json_object_set_new(labels, "ours", json_string("1"));
    return 0;
}

static void test_update_conflict_and_delete(void **state)
{
    world *w = *state;
    create_pod(w->k, "u");
    drv_kube *other;
    drv_diag d;
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(w->srv));
    drv_kube_config c = {.server = url};
    assert_int_equal(drv_kube_new(&other, &c, &d), 0);
    race r = {other, 0};
    json_t *out;
    if (drv_kube_update(w->k, "/api/v1/namespaces/default/pods/u", add_label, &r, 3, &out, NULL,
                        &d))
        fail_msg("%s", d.msg);
    assert_int_equal(r.calls, 2); /* the conflict made it read and apply again */
    json_t *labels = json_object_get(json_object_get(out, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "theirs")), "1"); /* kept */
    assert_string_equal(json_string_value(json_object_get(labels, "ours")), "1");
    assert_string_equal(json_string_value(json_object_get(labels, "app")), "t");
    json_decref(out);
    drv_kube_free(other);
    /* delete with options: a grace period of 0 removes an unbound pod at once */
    long st;
    assert_int_equal(
        drv_kube_delete(w->k, "/api/v1/namespaces/default/pods/u", 0, "Background", &st, &d), 0);
    assert_int_equal(drv_kube_request(w->k, "GET", "/api/v1/namespaces/default/pods/u", NULL, NULL,
                                      &st, NULL, &d),
                     DRV_EIO);
    assert_int_equal(st, 404);
    assert_int_equal(drv_kube_delete(w->k, "/api/v1/namespaces/default/pods/u", -1, NULL, &st, &d),
                     DRV_EIO);
    assert_int_equal(st, 404);
}

/* The bodies Drover writes are accepted by the API server: an Event, a binding, a
 * TrainingJob's status through the status subresource (unknown fields kept). */
static int set_tj_status(json_t *obj, void *arg)
{
    (void)arg;
    int32_t active[DRV_NROLES] = {1, 0, 2, 0};
    return drv_kube_trainingjob_set_status(obj, "Running", "gang bound", active, NULL);
}

static void test_typed_writes(void **state)
{
    world *w = *state;
    long st;
    drv_diag d;
    const char *tj = "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\","
                     "\"metadata\":{\"name\":\"tj1\"},\"spec\":{\"futureField\":7,"
                     "\"replicaSpecs\":{\"PS\":{\"replicas\":1,\"template\":{\"spec\":"
                     "{\"containers\":[{\"name\":\"ps\",\"image\":\"t\"}]}}},"
                     "\"Worker\":{\"replicas\":2,\"template\":{\"spec\":{\"containers\":"
                     "[{\"name\":\"w\",\"image\":\"t\"}]}}}}}}";
    if (drv_kube_request(w->k, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
                         NULL, tj, &st, NULL, &d))
        fail_msg("%s", d.msg);
    json_t *out;
    if (drv_kube_update(w->k,
                        "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/tj1/status",
                        set_tj_status, NULL, 3, &out, NULL, &d))
        fail_msg("%s", d.msg);
    drv_strtab *names = drv_strtab_new();
    drv_ktrainingjob j;
    assert_int_equal(drv_kube_decode_trainingjob(out, names, &j, &d), 0);
    assert_string_equal(drv_strtab_str(names, j.phase), "Running");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(out, "spec"), "futureField")), 7);
    json_decref(out);
    drv_strtab_free(names);
    char *ev = drv_kube_event_json("default", "TrainingJob", "drover.dev/v1alpha1", "tj1", NULL,
                                   "Normal", "GangScheduled", "Bound 3/3 pods",
                                   "2026-11-22T04:11:10Z", "drover-scheduler");
    if (drv_kube_request(w->k, "POST", "/api/v1/namespaces/default/events", NULL, ev, &st, NULL,
                         &d))
        fail_msg("%s", d.msg);
    assert_int_equal(st, 201);
    drv_free(ev);
    create_pod(w->k, "b0");
    char *b = drv_kube_binding_json("default", "b0", "node-1");
    const char *node = "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":"
                       "\"node-1\"}}";
    assert_int_equal(drv_kube_request(w->k, "POST", "/api/v1/nodes", NULL, node, &st, NULL, &d), 0);
    if (drv_kube_request(w->k, "POST", "/api/v1/namespaces/default/pods/b0/binding", NULL, b, &st,
                         NULL, &d))
        fail_msg("%s", d.msg);
    assert_int_equal(st, 201);
    drv_free(b);
    assert_int_equal(drv_kube_request(w->k, "GET", "/api/v1/namespaces/default/pods/b0", NULL, NULL,
                                      &st, &out, &d),
                     0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(out, "spec"), "nodeName")), "node-1");
    json_decref(out);
}

static void test_retries(void **state)
{
    world *w = *state;
    long st;
    drv_diag d;
    /* 429 with Retry-After: 1, then success: two requests, one retry */
    drv_apiserver_fail_next(w->srv, 429, 1, 1);
    long before = drv_kube_requests(w->k), retries = drv_kube_retries(w->k);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(drv_kube_request(w->k, "GET", "/api/v1/namespaces", NULL, NULL, &st, NULL, &d),
                     0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(st, 200);
    assert_int_equal(drv_kube_requests(w->k) - before, 2);
    assert_int_equal(drv_kube_retries(w->k) - retries, 1);
    /* Retry-After was honoured: not a timing assertion on speed, a lower bound on a wait */
    assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 900);
    /* 500 twice then success on a GET */
    drv_apiserver_fail_next(w->srv, 500, 2, 0);
    before = drv_kube_requests(w->k);
    assert_int_equal(drv_kube_request(w->k, "GET", "/api/v1/namespaces", NULL, NULL, &st, NULL, &d),
                     0);
    assert_int_equal(drv_kube_requests(w->k) - before, 3);
    /* 500 on a POST is not retried (it may have been processed) */
    drv_apiserver_fail_next(w->srv, 500, 1, 0);
    before = drv_kube_requests(w->k);
    assert_int_equal(drv_kube_request(w->k, "POST", "/api/v1/namespaces/default/configmaps", NULL,
                                      "{\"metadata\":{\"name\":\"cm\"}}", &st, NULL, &d),
                     DRV_EIO);
    assert_int_equal(st, 500);
    assert_int_equal(drv_kube_requests(w->k) - before, 1);
    /* more failures than retries: the last answer is the error */
    drv_apiserver_fail_next(w->srv, 503, 20, 0);
    assert_int_equal(drv_kube_request(w->k, "GET", "/api/v1/namespaces", NULL, NULL, &st, NULL, &d),
                     DRV_EIO);
    assert_int_equal(st, 503);
    drv_apiserver_fail_next(w->srv, 503, 0, 0);
}

static int count_item(json_t *item, void *arg)
{
    (void)item;
    (*(int *)arg)++;
    return 0;
}

/* Counts items and fails on the third. */
static int fail_third(json_t *item, void *arg)
{
    (void)item;
    return ++*(int *)arg == 3 ? -42 : 0;
}

static void test_list_pages(void **state)
{
    world *w = *state;
    for (int i = 0; i < 7; i++) {
        char n[16];
        snprintf(n, sizeof n, "p%d", i);
        create_pod(w->k, n);
    }
    int items = 0;
    char rv[32];
    drv_diag d;
    long before = drv_kube_requests(w->k);
    assert_int_equal(drv_kube_list(w->k, "/api/v1/namespaces/default/pods", "labelSelector=app%3Dt",
                                   2, count_item, &items, rv, sizeof rv, &d),
                     0);
    assert_int_equal(items, 7);
    assert_int_equal(drv_kube_requests(w->k) - before, 4); /* 2+2+2+1 */
    char want[32];
    snprintf(want, sizeof want, "%llu", (unsigned long long)drv_apiserver_rv(w->srv));
    assert_string_equal(rv, want);
    /* no paging: one request */
    items = 0;
    before = drv_kube_requests(w->k);
    assert_int_equal(drv_kube_list(w->k, "/api/v1/namespaces/default/pods", NULL, 0, count_item,
                                   &items, rv, sizeof rv, &d),
                     0);
    assert_int_equal(items, 7);
    assert_int_equal(drv_kube_requests(w->k) - before, 1);
    /* the callback's error ends the list with its code; the pager, two pages ahead, asks for
     * the two pages after the failing one at most (pages of one: 7 pages, the third fails) */
    items = 0;
    before = drv_kube_requests(w->k);
    assert_int_equal(drv_kube_list(w->k, "/api/v1/namespaces/default/pods", NULL, 1, fail_third,
                                   &items, rv, sizeof rv, &d),
                     -42);
    assert_int_equal(items, 3);
    assert_true(drv_kube_requests(w->k) - before <= 5);
}

typedef struct seen {
    int added, modified, deleted, bookmarks;
    char names[16][32];
} seen;

static int on_ev(const drv_watch_event *ev, void *arg)
{
    seen *s = arg;
    if (ev->type == DRV_WATCH_ADDED) {
        const char *n =
            json_string_value(json_object_get(json_object_get(ev->object, "metadata"), "name"));
        if (s->added < 16)
            snprintf(s->names[s->added], sizeof s->names[0], "%s", n ? n : "?");
        s->added++;
    }
    s->modified += ev->type == DRV_WATCH_MODIFIED;
    s->deleted += ev->type == DRV_WATCH_DELETED;
    s->bookmarks += ev->type == DRV_WATCH_BOOKMARK;
    return 0;
}

static void test_watch_resume_timeout_expire(void **state)
{
    world *w = *state;
    char rv0[32];
    snprintf(rv0, sizeof rv0, "%llu", (unsigned long long)drv_apiserver_rv(w->srv));
    create_pod(w->k, "w1");
    create_pod(w->k, "w2");
    seen s = {0};
    char last[32];
    drv_diag d;
    /* from rv0: the two creations arrive in order, then the server's timeout ends the stream */
    assert_int_equal(drv_kube_watch(w->k, "/api/v1/namespaces/default/pods", rv0, 1, on_ev, &s,
                                    last, sizeof last, NULL, &d),
                     0);
    assert_int_equal(s.added, 2);
    assert_string_equal(s.names[0], "w1");
    assert_string_equal(s.names[1], "w2");
    char now[32];
    snprintf(now, sizeof now, "%llu", (unsigned long long)drv_apiserver_rv(w->srv));
    assert_string_equal(last, now);
    /* resuming from last: no duplicates */
    seen s2 = {0};
    assert_int_equal(drv_kube_watch(w->k, "/api/v1/namespaces/default/pods", last, 1, on_ev, &s2,
                                    last, sizeof last, NULL, &d),
                     0);
    assert_int_equal(s2.added + s2.modified + s2.deleted, 0);
    /* everything expired: watching from an old resourceVersion asks for a relist */
    drv_apiserver_expire(w->srv);
    seen s3 = {0};
    assert_int_equal(drv_kube_watch(w->k, "/api/v1/namespaces/default/pods", rv0, 1, on_ev, &s3,
                                    last, sizeof last, NULL, &d),
                     DRV_KUBE_RELIST);
}

typedef struct dropper {
    drv_apiserver *srv;
    const char *corrupt; /* NULL: drop the watches; else send this line */
} dropper;

static void *drop_soon(void *arg)
{
    dropper *x = arg;
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    if (x->corrupt)
        drv_apiserver_corrupt_watches(x->srv, x->corrupt);
    else
        drv_apiserver_drop_watches(x->srv);
    return NULL;
}

static void test_watch_dropped(void **state)
{
    world *w = *state;
    char rv[32], last[32];
    snprintf(rv, sizeof rv, "%llu", (unsigned long long)drv_apiserver_rv(w->srv));
    dropper x = {w->srv, NULL};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, drop_soon, &x), 0);
    seen s = {0};
    drv_diag d;
    int rc = drv_kube_watch(w->k, "/api/v1/namespaces/default/pods", rv, 30, on_ev, &s, last,
                            sizeof last, NULL, &d);
    pthread_join(t, NULL);
    assert_int_equal(rc, DRV_EIO); /* a drop is not a clean end: the caller backs off */
    assert_non_null(strstr(d.msg, "watch pods"));
    /* a malformed line: an error naming resource, resourceVersion and byte offset */
    dropper y = {w->srv, "{not json"};
    assert_int_equal(pthread_create(&t, NULL, drop_soon, &y), 0);
    rc = drv_kube_watch(w->k, "/api/v1/namespaces/default/pods", rv, 30, on_ev, &s, last,
                        sizeof last, NULL, &d);
    pthread_join(t, NULL);
    assert_int_equal(rc, DRV_EPARSE);
    assert_non_null(strstr(d.msg, "watch pods after resourceVersion"));
    assert_non_null(strstr(d.msg, "byte"));
}

static void test_token_bucket(void **unused)
{
    (void)unused;
    drv_token_bucket b;
    drv_token_bucket_init(&b, 5, 10, 100.0);
    for (int i = 0; i < 10; i++) /* the burst goes at once */
        assert_true(drv_token_bucket_take(&b, 100.0) == 0);
    /* the 11th waits a fifth of a second, the 12th two fifths */
    assert_true(fabs(drv_token_bucket_take(&b, 100.0) - 0.2) < 1e-9);
    assert_true(fabs(drv_token_bucket_take(&b, 100.0) - 0.4) < 1e-9);
    /* after 10 s the bucket is full again, not fuller */
    drv_token_bucket_init(&b, 5, 10, 0.0);
    for (int i = 0; i < 10; i++)
        drv_token_bucket_take(&b, 0.0);
    for (int i = 0; i < 10; i++)
        assert_true(drv_token_bucket_take(&b, 10.0) == 0);
    assert_true(drv_token_bucket_take(&b, 10.0) > 0);
}

static void test_backoff(void **unused)
{
    (void)unused;
    drv_rng r;
    drv_rng_seed(&r, 3);
    for (int a = 0; a < 12; a++) {
        int ms = drv_kube_backoff_ms(a, 100, 5000, &r);
        double full = 100.0 * (1 << a);
        if (full > 5000)
            full = 5000;
        assert_true(ms >= (int)(full / 2) - 1 && ms <= (int)full);
    }
}

static void test_bad_config(void **unused)
{
    (void)unused;
    drv_kube *k;
    drv_diag d;
    drv_kube_config c = {.server = "ftp://x"};
    assert_int_equal(drv_kube_new(&k, &c, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "expected an http:// or https:// URL"));
    drv_kube_config none = {0};
    assert_int_equal(drv_kube_new(&k, &none, &d), DRV_EINVAL);
    /* nothing listens on this port (connection refused), and retries are off */
    drv_kube_config dead = {.server = "http://127.0.0.1:1", .retries = -1};
    assert_int_equal(drv_kube_new(&k, &dead, &d), 0);
    long st;
    assert_int_equal(drv_kube_request(k, "GET", "/api", NULL, NULL, &st, NULL, &d), DRV_EIO);
    assert_int_equal(st, 0);
    assert_non_null(strstr(d.msg, "GET http://127.0.0.1:1/api"));
    drv_kube_free(k);
}

/* A token is refused when it could inject a header, or travel in clear to a remote server. */
static void test_token_refusals(void **unused)
{
    (void)unused;
    drv_kube *k = NULL;
    drv_diag d;
    drv_kube_config crlf = {.server = "https://x:6443", .token = "abc\r\nX-Injected: 1"};
    assert_int_equal(drv_kube_new(&k, &crlf, &d), DRV_EINVAL);
    assert_string_equal(d.msg, "token: contains a control character (byte 3)");
    drv_kube_config clear = {.server = "http://10.0.0.1:8080", .token = "t"};
    assert_int_equal(drv_kube_new(&k, &clear, &d), DRV_EINVAL);
    assert_string_equal(d.msg, "server http://10.0.0.1:8080: plain http would send the bearer "
                               "token unencrypted; use https://, or set insecure-skip-tls-verify "
                               "to accept that");
    assert_null(k);
    /* said explicitly: accepted (with a warning); loopback: accepted */
    drv_log_set(NULL, NULL, DRV_LOG_ERROR);
    clear.insecure = true;
    assert_int_equal(drv_kube_new(&k, &clear, &d), 0);
    drv_kube_free(k);
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
    drv_kube_config local = {.server = "http://127.0.0.1:1", .token = "t"};
    assert_int_equal(drv_kube_new(&k, &local, &d), 0);
    drv_kube_free(k);
}

/* The log sink of the sentinel test: every line, concatenated. */
static char logged[1 << 16];
static void capture(enum drv_log_level lvl, const char *msg, void *arg)
{
    (void)lvl;
    (void)arg;
    strncat(logged, msg, sizeof logged - strlen(logged) - 2);
    strcat(logged, "\n");
}

/* No token or key in any log line, at every level up to the most verbose, through successes,
 * errors, retries and a connection refused: a sentinel token is looked for in everything logged. */
static void test_no_token_in_logs(void **state)
{
    world *w = *state;
    static const char sentinel[] = "SENTINEL-TOKEN-5b1f0c", key[] = "SENTINEL-KEY-93ad7e";
    drv_kube_config c = {.server = NULL,
                         .token = (char *)sentinel,
                         .key_data = (char *)key,
                         .qps = 1000,
                         .burst = 1000,
                         .backoff_ms = 1,
                         .backoff_max_ms = 2,
                         .retries = 2,
                         .retry_after_max_s = 1};
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(w->srv));
    c.server = url;
    logged[0] = 0;
    for (int lvl = DRV_LOG_ERROR; lvl <= DRV_LOG_DEBUG; lvl++) {
        drv_log_set(capture, NULL, (enum drv_log_level)lvl);
        drv_kube *k = NULL;
        drv_diag d;
        assert_int_equal(drv_kube_new(&k, &c, &d), 0);
        long st;
        json_t *out = NULL;
        drv_kube_request(k, "GET", "/api/v1/namespaces/default/pods", NULL, NULL, &st, &out, &d);
        json_decref(out);
        drv_kube_request(k, "GET", "/api/v1/namespaces/default/pods/none", NULL, NULL, &st, NULL,
                         &d);
        assert_null(strstr(d.msg, sentinel));
        drv_kube_request(k, "POST", "/api/v1/namespaces/default/pods", NULL, "{bad", &st, NULL, &d);
        assert_null(strstr(d.msg, sentinel));
        drv_kube_free(k);
        drv_kube_config dead = c;
        dead.server = "http://127.0.0.1:1";
        assert_int_equal(drv_kube_new(&k, &dead, &d), 0);
        assert_int_equal(drv_kube_request(k, "GET", "/api", NULL, NULL, &st, NULL, &d), DRV_EIO);
        assert_null(strstr(d.msg, sentinel));
        drv_kube_free(k);
    }
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
    assert_true(strlen(logged) > 0); /* the retries were logged: the check saw real lines */
    assert_null(strstr(logged, sentinel));
    assert_null(strstr(logged, key));
}

/* The plain-http guard decides on the host libcurl will connect to, not on the URL's text: a
 * user name ("127.0.0.1@", "localhost:pw@") or a host that merely begins with "127." does not
 * make a remote server loopback. A URL with user information is refused even when insecure is
 * set, and nothing logged or returned repeats its password. Loopback itself stays accepted,
 * with no warning. */
static void test_plain_http_hosts(void **unused)
{
    (void)unused;
    /* each remote URL, and the same without user information (NULL: it has none) */
    static const char *const remote[][2] = {
        {"http://127.0.0.1@evil.example:80", "http://evil.example:80/"},
        {"http://localhost:pw@evil.example:80", "http://evil.example:80/"},
        {"http://user:pw@10.0.0.1:8080/k8s", "http://10.0.0.1:8080/k8s"},
        {"http://127.evil.example:80", NULL},
        {"http://localhost.evil:80", NULL},
        {"http://[::2]:80", NULL}};
    static const char *const local[] = {"http://127.0.0.1:8080", "http://localhost:6443",
                                        "http://[::1]:80", "http://127.200.3.4:80",
                                        "http://LOCALHOST:80"};
    drv_kube *k = NULL;
    drv_diag d;
    char want[512];
    logged[0] = 0;
    drv_log_set(capture, NULL, DRV_LOG_DEBUG);
    for (size_t i = 0; i < sizeof remote / sizeof remote[0]; i++) {
        drv_kube_config c = {.server = (char *)remote[i][0], .token = "t"};
        assert_int_equal(drv_kube_new(&k, &c, &d), DRV_EINVAL);
        assert_null(k);
        if (remote[i][1])
            snprintf(want, sizeof want,
                     "server %s: the URL carries a user name or password (not shown); expected "
                     "scheme://host[:port][/path] (authenticate with a token, a tokenFile or a "
                     "client certificate)",
                     remote[i][1]);
        else
            snprintf(want, sizeof want,
                     "server %s: plain http would send the bearer token unencrypted; use "
                     "https://, or set insecure-skip-tls-verify to accept that",
                     remote[i][0]);
        assert_string_equal(d.msg, want);
        c.insecure = true; /* accepting clear text does not accept a URL with user information */
        int rc = drv_kube_new(&k, &c, &d);
        drv_kube_free(k);
        k = NULL;
        assert_int_equal(rc, remote[i][1] ? DRV_EINVAL : 0);
        assert_null(strstr(d.msg, "pw"));
    }
    assert_non_null(strstr(logged, "http://127.evil.example:80: plain http")); /* (insecure) */
    assert_null(strstr(logged, "pw"));
    assert_null(strstr(logged, "127.0.0.1@"));
    logged[0] = 0;
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++) {
        drv_kube_config c = {.server = (char *)local[i], .token = "t"};
        if (drv_kube_new(&k, &c, &d) != 0)
            fail_msg("%s: %s", local[i], d.msg);
        drv_kube_free(k);
        k = NULL;
    }
    assert_string_equal(logged, ""); /* loopback: no warning */
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
}

/* One client keeps a header list per content type (client.c): each request still carries its
 * own type, past the lists it keeps too, and a 2xx body nobody reads is still a success while an
 * error's body still makes the message. The server answers a patch of a type it does not take
 * with 415, and applies the others as their type says. */
static void test_content_types_per_request(void **state)
{
    world *w = *state;
    create_pod(w->k, "ct");
    const char *path = "/api/v1/namespaces/default/pods/ct";
    long st;
    drv_diag d;
    json_t *out;
    static const char *const patches[][2] = {
        {"application/merge-patch+json", "{\"metadata\":{\"labels\":{\"m\":\"1\"}}}"},
        {"text/x-1", "{}"},
        {"text/x-2", "{}"},
        {"text/x-3", "{}"},
        {"text/x-4", "{}"},
        {"text/x-5", "{}"},
        {"application/strategic-merge-patch+json", "{\"metadata\":{\"labels\":{\"s\":\"2\"}}}"},
        {NULL, "{\"metadata\":{\"labels\":{\"j\":\"3\"}}}"}, /* application/json: refused */
        {"application/merge-patch+json", "{\"metadata\":{\"labels\":{\"m\":\"4\"}}}"},
    };
    for (size_t i = 0; i < sizeof patches / sizeof patches[0]; i++) {
        const char *ct = patches[i][0];
        bool takes = ct && strncmp(ct, "text/", 5) != 0;
        int rc = drv_kube_request(w->k, "PATCH", path, ct, patches[i][1], &st, NULL, &d);
        if (takes && (rc != 0 || st != 200))
            fail_msg("patch %zu (%s): %ld %s", i, ct, st, d.msg);
        if (!takes) {
            assert_int_equal(rc, DRV_EIO);
            assert_int_equal(st, 415);
            assert_non_null(strstr(d.msg, "UnsupportedMediaType"));
        }
    }
    assert_int_equal(drv_kube_request(w->k, "GET", path, NULL, NULL, &st, &out, &d), 0);
    assert_string_equal(label(out, "m"), "4");
    assert_string_equal(label(out, "s"), "2");
    assert_null(label(out, "j"));
    json_decref(out);
}

/* drv_kube_request_rv hands back the version a write made: the one a GET then reads, and a
 * newer one for each write, never "". */
static void test_request_rv_is_the_version_made(void **state)
{
    world *w = *state;
    create_pod(w->k, "rv");
    const char *path = "/api/v1/namespaces/default/pods/rv";
    long st;
    drv_diag d;
    json_t *out;
    char made[2][24];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(drv_kube_request_rv(w->k, "PATCH", path, "application/merge-patch+json",
                                             i ? "{\"metadata\":{\"labels\":{\"v\":\"2\"}}}"
                                               : "{\"metadata\":{\"labels\":{\"v\":\"1\"}}}",
                                             &st, made[i], sizeof made[i], &d),
                         0);
        assert_int_equal(st, 200);
        assert_int_equal(drv_kube_request(w->k, "GET", path, NULL, NULL, &st, &out, &d), 0);
        assert_string_equal(made[i], json_string_value(json_object_get(
                                         json_object_get(out, "metadata"), "resourceVersion")));
        json_decref(out);
    }
    assert_string_not_equal(made[0], made[1]);
    assert_true(made[0][0] != 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_request_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_content_types_per_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_rv_is_the_version_made, setup, teardown),
        cmocka_unit_test_setup_teardown(test_update_conflict_and_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_typed_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_resume_timeout_expire, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_dropped, setup, teardown),
        cmocka_unit_test(test_token_bucket),
        cmocka_unit_test(test_backoff),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_token_refusals),
        cmocka_unit_test(test_plain_http_hosts),
        cmocka_unit_test_setup_teardown(test_no_token_in_logs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
