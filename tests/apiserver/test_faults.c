/*
 * test_faults.c - the test server's own semantics that the conformance replay cannot show:
 * fault injection (429 with Retry-After, 500, dropped watch connections, expired
 * resourceVersions), watch bookmarks, field-selector transitions in a watch, and foreground
 * deletion with dependents; a delayed request whose client has gone is not applied; a status
 * write with a stale resourceVersion refused (409); a held request served only when released.
 * Expectations come from the recordings' shapes (INDEX.md): a 410 arrives as an ERROR event
 * with reason Expired, bookmarks carry only a resourceVersion.
 */
#include "apiserver.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "http_call.h"
#include "kbuf.h"

static drv_apiserver *srv;
static uint16_t port;

static long call(const char *method, const char *path, const char *body, drv_kbuf *out)
{
    struct call c = {.port = port, .method = method, .path = path, .body = body};
    do_call(&c);
    if (out)
        *out = c.out;
    else
        drv_free(c.out.p);
    return c.code;
}

static int setup(void **state)
{
    (void)state;
    static char fx[512];
    const char *src = getenv("DROVER_SOURCE_DIR");
    snprintf(fx, sizeof fx, "%.400s/tests/fixtures/k8s", src ? src : ".");
    drv_apiserver_opts o = {.fixture_dir = fx, .bookmark_ms = 200, .crd_installed = true};
    drv_diag d = {{0}};
    if (drv_apiserver_start(&srv, &o, &d))
        return -1;
    port = drv_apiserver_port(srv);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    drv_apiserver_free(srv);
    srv = NULL;
    return 0;
}

static const char POD[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},"
                          "\"spec\":{\"schedulerName\":\"drover\",\"containers\":[{\"name\":"
                          "\"main\",\"image\":\"busybox\"}]}}";

static void make_pod(const char *name)
{
    char b[512];
    snprintf(b, sizeof b, POD, name);
    assert_int_equal(call("POST", "/api/v1/namespaces/default/pods", b, NULL), 201);
}

static void test_injected_429_then_ok(void **state)
{
    (void)state;
    drv_apiserver_fail_next(srv, 429, 1, 2);
    struct call c = {.port = port, .method = "GET", .path = "/api/v1/nodes"};
    do_call(&c);
    assert_int_equal(c.code, 429);
    assert_string_equal(c.retry_after, "2");
    json_t *j = json_loads(c.out.p, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "reason")), "TooManyRequests");
    json_decref(j);
    drv_free(c.out.p);
    assert_int_equal(call("GET", "/api/v1/nodes", NULL, NULL), 200);
    drv_apiserver_fail_next(srv, 500, 2, 0);
    assert_int_equal(call("GET", "/api/v1/nodes", NULL, NULL), 500);
    assert_int_equal(call("GET", "/api/v1/nodes", NULL, NULL), 500);
    assert_int_equal(call("GET", "/api/v1/nodes", NULL, NULL), 200);
}

/* Writes kept (drv_apiserver_keep_writes) are those served since it was asked, in order, as
 * sent: method, path with query, content type, body; not GETs, not a write refused by a fault. */
static void test_writes_kept_as_sent(void **state)
{
    (void)state;
    make_pod("before"); /* (not kept: asked later) */
    drv_apiserver_keep_writes(srv);
    make_pod("kept-1");
    assert_int_equal(call("GET", "/api/v1/namespaces/default/pods/kept-1", NULL, NULL), 200);
    drv_apiserver_fail_next(srv, 500, 1, 0);
    assert_int_equal(call("DELETE", "/api/v1/namespaces/default/pods/kept-1", NULL, NULL), 500);
    struct call c = {.port = port,
                     .method = "PATCH",
                     .path = "/api/v1/namespaces/default/pods/kept-1?fieldManager=t%20m",
                     .body = "{\"metadata\":{\"labels\":{\"a\":\"b\"}}}",
                     .ctype = "application/merge-patch+json"};
    do_call(&c);
    drv_free(c.out.p);
    assert_int_equal(c.code, 200);
    drv_apiserver_write *w = NULL;
    int32_t n = drv_apiserver_writes(srv, &w);
    assert_int_equal(n, 2);
    char body[512];
    snprintf(body, sizeof body, POD, "kept-1");
    assert_string_equal(w[0].method, "POST");
    assert_string_equal(w[0].path, "/api/v1/namespaces/default/pods");
    assert_string_equal(w[0].content_type, "application/json");
    assert_int_equal(w[0].len, strlen(body));
    assert_string_equal(w[0].body, body);
    assert_string_equal(w[1].method, "PATCH");
    assert_string_equal(w[1].path, "/api/v1/namespaces/default/pods/kept-1?fieldManager=t%20m");
    assert_string_equal(w[1].content_type, "application/merge-patch+json");
    assert_string_equal(w[1].body, c.body);
    drv_apiserver_writes_free(w, n);
}

static void test_watch_from_expired_rv_gets_410(void **state)
{
    (void)state;
    make_pod("exp-0");
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/pods?watch=1&resourceVersion=%llu",
             (unsigned long long)drv_apiserver_rv(srv) - 1);
    drv_apiserver_expire(srv);
    drv_kbuf out = {0};
    assert_int_equal(call("GET", path, NULL, &out), 200);
    json_t *ev = json_loads(out.p, JSON_DISABLE_EOF_CHECK, NULL);
    assert_string_equal(json_string_value(json_object_get(ev, "type")), "ERROR");
    json_t *st = json_object_get(ev, "object");
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "Expired");
    assert_int_equal(json_integer_value(json_object_get(st, "code")), 410);
    json_decref(ev);
    drv_free(out.p);
}

static void test_watch_bookmarks_and_selector_transition(void **state)
{
    (void)state;
    make_pod("sel-0");
    char path[512];
    snprintf(path, sizeof path,
             "/api/v1/namespaces/default/pods?watch=1&allowWatchBookmarks=true&timeoutSeconds=1&"
             "fieldSelector=spec.nodeName%%3D&resourceVersion=%llu",
             (unsigned long long)drv_apiserver_rv(srv));
    struct call c = {.port = port, .method = "GET", .path = path};
    pthread_t t;
    pthread_create(&t, NULL, do_call, &c);
    /* Binding moves sel-0 out of the "unbound" selector: the watch must say DELETED. */
    assert_int_equal(call("POST", "/api/v1/namespaces/default/pods/sel-0/binding",
                          "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":"
                          "\"sel-0\"},\"target\":{\"kind\":\"Node\",\"name\":\"n1\"}}",
                          NULL),
                     201);
    pthread_join(t, NULL);
    assert_int_equal(c.cc, CURLE_OK);
    assert_non_null(c.out.p);
    assert_non_null(strstr(c.out.p, "\"type\":\"DELETED\""));
    assert_non_null(strstr(c.out.p, "\"type\":\"BOOKMARK\""));
    drv_free(c.out.p);
}

static void test_drop_cuts_open_watch(void **state)
{
    (void)state;
    struct call c = {.port = port,
                     .method = "GET",
                     .path = "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=10"};
    pthread_t t;
    pthread_create(&t, NULL, do_call, &c);
    /* The watch may not be registered yet when we first drop: drop again (bounded, 50 ms
     * apart) until the transfer has ended. */
    for (int i = 0; i < 100 && !__atomic_load_n(&c.done, __ATOMIC_ACQUIRE); i++) {
        drv_apiserver_drop_watches(srv);
        nanosleep(&(struct timespec){0, 50000000L}, NULL);
    }
    pthread_join(t, NULL);
    assert_int_not_equal(c.cc, CURLE_OK); /* no terminating chunk: the client sees an error */
    drv_free(c.out.p);
}

static void test_foreground_delete_removes_dependents_first(void **state)
{
    (void)state;
    drv_kbuf out = {0};
    assert_int_equal(
        call("POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
             "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":"
             "{\"name\":\"owner\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":1}}}}",
             &out),
        201);
    json_t *tj = json_loads(out.p, 0, NULL);
    drv_free(out.p);
    char b[1024];
    snprintf(b, sizeof b,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"dep-0\","
             "\"ownerReferences\":[{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":"
             "\"TrainingJob\",\"name\":\"owner\",\"uid\":\"%s\",\"controller\":true,"
             "\"blockOwnerDeletion\":true}]},\"spec\":{\"containers\":[{\"name\":\"m\","
             "\"image\":\"x\"}]}}",
             json_string_value(json_object_get(json_object_get(tj, "metadata"), "uid")));
    json_decref(tj);
    assert_int_equal(call("POST", "/api/v1/namespaces/default/pods", b, NULL), 201);
    const char *owner = "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/owner";
    char path[300];
    snprintf(path, sizeof path, "%s?propagationPolicy=Foreground", owner);
    assert_int_equal(call("DELETE", path, NULL, &out), 200);
    assert_non_null(strstr(out.p, "foregroundDeletion"));
    drv_free(out.p);
    assert_int_equal(call("GET", owner, NULL, NULL), 200); /* still there, being deleted */
    assert_int_equal(call("GET", "/api/v1/namespaces/default/pods/dep-0", NULL, NULL), 404);
    assert_int_equal(call("GET", owner, NULL, NULL), 404);
}

/* A DELETE whose preconditions name another uid is refused (409 Conflict, as kube-apiserver
 * answers), the right uid deletes: how a kubelet confirms a graceful deletion without touching
 * a pod created again under the same name. */
static void test_delete_uid_precondition(void **state)
{
    (void)state;
    drv_kbuf out = {0};
    char b[512];
    snprintf(b, sizeof b, POD, "again");
    assert_int_equal(call("POST", "/api/v1/namespaces/default/pods", b, &out), 201);
    json_t *pod = json_loads(out.p, 0, NULL);
    drv_free(out.p);
    char uid[64];
    snprintf(uid, sizeof uid, "%s",
             json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid")));
    json_decref(pod);
    const char *path = "/api/v1/namespaces/default/pods/again";
    out = (drv_kbuf){0};
    assert_int_equal(
        call("DELETE", path,
             "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":"
             "0,\"preconditions\":{\"uid\":\"not-its-uid\"}}",
             &out),
        409);
    json_t *st = json_loads(out.p, 0, NULL);
    drv_free(out.p);
    assert_string_equal(json_string_value(json_object_get(st, "reason")), "Conflict");
    assert_non_null(strstr(json_string_value(json_object_get(st, "message")), "Precondition"));
    json_decref(st);
    assert_int_equal(call("GET", path, NULL, NULL), 200);
    snprintf(b, sizeof b,
             "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0,"
             "\"preconditions\":{\"uid\":\"%s\"}}",
             uid);
    assert_int_equal(call("DELETE", path, b, NULL), 200);
    assert_int_equal(call("GET", path, NULL, NULL), 404);
}

static const char MERGE[] = "application/merge-patch+json";

/* method path body (of content type ctype) as a JSON answer (NULL when none); *code its status. */
static json_t *call_json(const char *method, const char *path, const char *ctype, const char *body,
                         long *code)
{
    struct call c = {.port = port, .method = method, .path = path, .body = body, .ctype = ctype};
    do_call(&c);
    *code = c.code;
    json_t *j = c.out.p ? json_loads(c.out.p, 0, NULL) : NULL;
    drv_free(c.out.p);
    return j;
}

static const char *rv_of(json_t *o)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), "resourceVersion"));
}

/* A write of a TrainingJob's status subresource whose metadata.resourceVersion is not the
 * object's is refused as kube-apiserver refuses it (06-merge-patch-stale-resourceversion and
 * 09-lease-conflict-put record the same for a pod and a Lease): 409 with a Status naming the
 * object, its group and plural, the object untouched, whether the write would change it or
 * not, by a merge patch or a PUT; with the current one it is applied. Drover's writer relies on
 * it to never land a status computed before someone else's. */
static void test_status_precondition(void **state)
{
    (void)state;
    const char *tjs = "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs";
    const char *st = "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/tj/status";
    long code;
    json_t *o = call_json("POST", tjs, NULL,
                          "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\","
                          "\"metadata\":{\"name\":\"tj\"},\"spec\":{\"replicaSpecs\":{\"Worker\":"
                          "{\"replicas\":1}}}}",
                          &code);
    assert_int_equal(code, 201);
    char rv0[24], rv1[24], body[512];
    snprintf(rv0, sizeof rv0, "%s", rv_of(o));
    json_decref(o);
    o = call_json("PATCH", st, MERGE, "{\"status\":{\"phase\":\"Succeeded\"}}", &code);
    assert_int_equal(code, 200);
    snprintf(rv1, sizeof rv1, "%s", rv_of(o));
    assert_string_not_equal(rv0, rv1);
    json_decref(o);
    const char *phases[] = {"Running", "Succeeded"}; /* (a change, and a no-op) */
    for (int i = 0; i < 2; i++) {
        snprintf(body, sizeof body,
                 "{\"metadata\":{\"resourceVersion\":\"%s\"},\"status\":{\"phase\":\"%s\"}}", rv0,
                 phases[i]);
        o = call_json("PATCH", st, MERGE, body, &code);
        assert_int_equal(code, 409);
        assert_string_equal(json_string_value(json_object_get(o, "kind")), "Status");
        assert_string_equal(json_string_value(json_object_get(o, "apiVersion")), "v1");
        assert_string_equal(json_string_value(json_object_get(o, "status")), "Failure");
        assert_string_equal(json_string_value(json_object_get(o, "reason")), "Conflict");
        assert_int_equal(json_integer_value(json_object_get(o, "code")), 409);
        assert_string_equal(json_string_value(json_object_get(o, "message")),
                            "Operation cannot be fulfilled on trainingjobs.drover.dev \"tj\": the "
                            "object has been modified; please apply your changes to the latest "
                            "version and try again");
        json_t *det = json_object_get(o, "details");
        assert_string_equal(json_string_value(json_object_get(det, "name")), "tj");
        assert_string_equal(json_string_value(json_object_get(det, "group")), "drover.dev");
        assert_string_equal(json_string_value(json_object_get(det, "kind")), "trainingjobs");
        json_decref(o);
    }
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
             "\"name\":\"tj\",\"namespace\":\"default\",\"resourceVersion\":\"%s\"},\"spec\":{"
             "\"replicaSpecs\":{\"Worker\":{\"replicas\":1}}},\"status\":{\"phase\":\"Running\"}}",
             rv0);
    o = call_json("PUT", st, NULL, body, &code);
    assert_int_equal(code, 409);
    json_decref(o);
    o = call_json("GET", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/tj", NULL, NULL,
                  &code);
    assert_int_equal(code, 200);
    assert_string_equal(rv_of(o), rv1);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "status"), "phase")),
                        "Succeeded");
    json_decref(o);
    snprintf(body, sizeof body,
             "{\"metadata\":{\"resourceVersion\":\"%s\"},\"status\":{\"phase\":\"Failed\"}}", rv1);
    o = call_json("PATCH", st, MERGE, body, &code);
    assert_int_equal(code, 200);
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "status"), "phase")),
                        "Failed");
    assert_string_not_equal(rv_of(o), rv1);
    json_decref(o);
}

/* Until the request started on another thread is held by srv (30 s at most): then one is. */
static void wait_held(void)
{
    for (int i = 0; i < 3000 && drv_apiserver_held(srv) == 0; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(drv_apiserver_held(srv), 1);
}

/* A held request waits, unserved, until released, while the same write from another client is
 * served: the order of a race is the test's (the request waits; the test waits on
 * drv_apiserver_held, not on time). */
static void test_hold_orders_a_race(void **state)
{
    (void)state;
    make_pod("raced");
    const char *path = "/api/v1/namespaces/default/pods/raced";
    drv_apiserver_hold(srv, "PATCH", path, "held-client/");
    struct call late = {.port = port,
                        .method = "PATCH",
                        .path = path,
                        .ctype = MERGE,
                        .agent = "held-client/1.0",
                        .body = "{\"metadata\":{\"labels\":{\"who\":\"late\"}}}"};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, do_call, &late), 0);
    wait_held();
    long code;
    json_t *o =
        call_json("PATCH", path, MERGE, "{\"metadata\":{\"labels\":{\"who\":\"early\"}}}", &code);
    assert_int_equal(code, 200); /* (another client's: not held) */
    json_decref(o);
    assert_int_equal(__atomic_load_n(&late.done, __ATOMIC_ACQUIRE), 0);
    drv_apiserver_release(srv);
    pthread_join(t, NULL);
    drv_free(late.out.p);
    assert_int_equal(late.code, 200);
    assert_int_equal(drv_apiserver_held(srv), 0);
    o = call_json("GET", path, NULL, NULL, &code);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(o, "metadata"), "labels"), "who")),
                        "late");
    char rv[24];
    snprintf(rv, sizeof rv, "%s", rv_of(o));
    json_decref(o);
    /* Released with an answer: the held request gets a Conflict, unserved. */
    drv_apiserver_hold(srv, "PATCH", path, "held-client/");
    late = (struct call){.port = port,
                         .method = "PATCH",
                         .path = path,
                         .ctype = MERGE,
                         .agent = "held-client/1.0",
                         .body = "{\"metadata\":{\"labels\":{\"who\":\"refused\"}}}"};
    assert_int_equal(pthread_create(&t, NULL, do_call, &late), 0);
    wait_held();
    drv_apiserver_release_answer(srv, 409);
    pthread_join(t, NULL);
    assert_int_equal(late.code, 409);
    o = json_loads(late.out.p, 0, NULL);
    drv_free(late.out.p);
    assert_string_equal(json_string_value(json_object_get(o, "reason")), "Conflict");
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "details"), "name")),
                        "raced");
    json_decref(o);
    o = call_json("GET", path, NULL, NULL, &code);
    assert_string_equal(rv_of(o), rv);
    json_decref(o);
}

/* A request still waiting out its delay when its client goes (a controller SIGKILLed while its
 * binding was slow) is not applied: kube-apiserver cancels it with its client, and a late
 * write would land after the killed controller's successor listed the node as free (the
 * over-commit test_chaos's history once showed). Ordered without timing: the client sends the
 * whole request and closes before the delay ends; the server says when it has given it up. */
static void test_request_of_a_gone_client_not_applied(void **state)
{
    (void)state;
    drv_apiserver_set_delay(srv, 200);
    char b[512], req[1024];
    snprintf(b, sizeof b, POD, "late");
    int n = snprintf(req, sizeof req,
                     "POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     strlen(b), b);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(send(fd, req, (size_t)n, 0), n);
    close(fd);
    for (int i = 0; i < 1000 && drv_apiserver_abandoned(srv) == 0; i++) {
        struct timespec t = {0, 10 * 1000000L};
        nanosleep(&t, NULL);
    }
    assert_int_equal(drv_apiserver_abandoned(srv), 1);
    drv_apiserver_set_delay(srv, 0);
    assert_int_equal(call("GET", "/api/v1/namespaces/default/pods/late", NULL, NULL), 404);
    /* a client that waits is served after the delay as before */
    drv_apiserver_set_delay(srv, 50);
    make_pod("waited");
    drv_apiserver_set_delay(srv, 0);
    assert_int_equal(call("GET", "/api/v1/namespaces/default/pods/waited", NULL, NULL), 200);
    assert_int_equal(drv_apiserver_abandoned(srv), 1);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_injected_429_then_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writes_kept_as_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_from_expired_rv_gets_410, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_bookmarks_and_selector_transition, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_drop_cuts_open_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreground_delete_removes_dependents_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_delete_uid_precondition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_request_of_a_gone_client_not_applied, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_precondition, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hold_orders_a_race, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
