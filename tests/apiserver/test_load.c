/*
 * test_load.c - the test server's load model (load.c, issue 28): service times drawn with the
 * median and 90th percentile asked for; a list's time by its page's size; a priority level's
 * seats, its queue served in order, and 429 with Retry-After when the queue is full, as
 * kube-apiserver's API Priority and Fairness answers; a dedicated level (by User-Agent) not
 * throttled by the other's load; a bad model refused at start. Ordered without timing: a
 * request holds its seat while drv_apiserver_hold keeps it, and the test polls the model's
 * counts, never a clock.
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
#include <time.h>

#include <cmocka.h>

#include "http_call.h"

static const char POD[] = "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},"
                          "\"spec\":{\"schedulerName\":\"drover\",\"containers\":[{\"name\":"
                          "\"main\",\"image\":\"busybox\"}]}}";
static const char PODS[] = "/api/v1/namespaces/default/pods";

/* A create of pod `name` by `agent`, its body in buf (kept alive by the caller). */
static struct call create_call(uint16_t port, char *buf, size_t n, const char *name,
                               const char *agent)
{
    snprintf(buf, n, POD, name);
    return (struct call){.port = port, .method = "POST", .path = PODS, .body = buf, .agent = agent};
}

/* A server with model l (every service time zero unless the test sets one). */
static drv_apiserver *start(const drv_apiserver_load *l, drv_diag *d)
{
    static char fx[512];
    const char *src = getenv("DROVER_SOURCE_DIR");
    snprintf(fx, sizeof fx, "%.400s/tests/fixtures/k8s", src ? src : ".");
    drv_apiserver_opts o = {.fixture_dir = fx, .load = l};
    drv_apiserver *s = NULL;
    return drv_apiserver_start(&s, &o, d) == 0 ? s : NULL;
}

static drv_apiserver_load zero_model(int seats, int queue)
{
    drv_apiserver_load l = {.level = {{.seats = seats, .queue = queue}}};
    return l;
}

/* Polls until cond(s) holds (at most ~20 s: a loaded machine), then asserts it. */
static void wait_for(drv_apiserver *s, bool (*cond)(drv_apiserver *))
{
    for (int i = 0; i < 2000 && !cond(s); i++) {
        struct timespec t = {0, 10 * 1000000L};
        nanosleep(&t, NULL);
    }
    assert_true(cond(s));
}

static bool one_held(drv_apiserver *s)
{
    return drv_apiserver_held(s) == 1;
}

static bool one_waiting(drv_apiserver *s)
{
    return drv_apiserver_load_counts(s, 0).waiting == 1;
}

/* The draws' median and 90th percentile are the ones asked for (20,000 draws: within 4 %), the
 * tail goes beyond p90, and p90 == p50 gives p50 every time. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_draws_follow_p50_and_p90(void **state)
{
    (void)state;
    enum { N = 20000 };
    static double v[N];
    uint64_t rng = 7;
    for (int i = 0; i < N; i++)
        v[i] = drv_apiserver_load_draw(&rng, (drv_apiserver_latency){15, 31});
    qsort(v, N, sizeof *v, cmp_double);
    assert_true(v[N / 2] > 15 * 0.96 && v[N / 2] < 15 * 1.04);
    assert_true(v[N * 9 / 10] > 31 * 0.96 && v[N * 9 / 10] < 31 * 1.04);
    assert_true(v[N * 99 / 100] > 31 * 1.5); /* (log-normal: p99 ~ 57 ms) */
    assert_true(v[0] > 0);
    for (int i = 0; i < 10; i++)
        assert_true(drv_apiserver_load_draw(&rng, (drv_apiserver_latency){4, 4}) == 4.0);
}

/* Each verb's service time is drawn and counted; a list's is its base plus its page's objects
 * (limit=2 of 3 pods: 2 objects), by the size of the page, not of the store. */
static void test_service_time_by_verb_and_list_size(void **state)
{
    (void)state;
    drv_apiserver_load l = zero_model(4, 4);
    l.create = (drv_apiserver_latency){1, 1};
    l.write = (drv_apiserver_latency){2, 2};
    l.list_ms = 0.5;
    l.list_item_us = 1000;
    drv_diag d = {{0}};
    drv_apiserver *s = start(&l, &d);
    assert_non_null(s);
    char b[512];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        struct call c = create_call(drv_apiserver_port(s), b, sizeof b, name, NULL);
        do_call(&c);
        drv_free(c.out.p);
        assert_int_equal(c.code, 201);
    }
    struct call c = {
        .port = drv_apiserver_port(s), .method = "GET", .path = "/api/v1/pods?limit=2"};
    do_call(&c);
    drv_free(c.out.p);
    assert_int_equal(c.code, 200);
    c = (struct call){.port = drv_apiserver_port(s),
                      .method = "DELETE",
                      .path = "/api/v1/namespaces/default/pods/p0"};
    do_call(&c);
    drv_free(c.out.p);
    assert_int_equal(c.code, 200);
    drv_apiserver_load_stats st = drv_apiserver_load_counts(s, 0);
    assert_int_equal(st.served[DRV_LOAD_CREATE], 3);
    assert_true(st.modelled_ms[DRV_LOAD_CREATE] == 3.0);
    assert_int_equal(st.served[DRV_LOAD_LIST], 1);
    assert_true(st.modelled_ms[DRV_LOAD_LIST] == 2.5);
    assert_int_equal(st.served[DRV_LOAD_WRITE], 1);
    assert_true(st.modelled_ms[DRV_LOAD_WRITE] == 2.0);
    assert_int_equal(st.admitted, 5);
    assert_int_equal(st.rejected, 0);
    drv_apiserver_free(s);
}

/* One seat, a queue of one: the first create holds the seat (held), the second waits in the
 * queue, the third is refused with kube-apiserver's 429 (Retry-After: 1, TooManyRequests) and
 * not applied; once released, the first two are served. */
static void test_full_queue_answers_429(void **state)
{
    (void)state;
    drv_apiserver_load l = zero_model(1, 1);
    drv_diag d = {{0}};
    drv_apiserver *s = start(&l, &d);
    assert_non_null(s);
    uint16_t port = drv_apiserver_port(s);
    char b1[512], b2[512], b3[512];
    struct call first = create_call(port, b1, sizeof b1, "first", NULL);
    struct call second = create_call(port, b2, sizeof b2, "second", NULL);
    struct call third = create_call(port, b3, sizeof b3, "third", NULL);
    drv_apiserver_hold(s, "POST", PODS, NULL);
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, do_call, &first), 0);
    wait_for(s, one_held);
    assert_int_equal(pthread_create(&t2, NULL, do_call, &second), 0);
    wait_for(s, one_waiting);
    do_call(&third);
    assert_int_equal(third.code, 429);
    assert_string_equal(third.retry_after, "1");
    json_t *j = json_loads(third.out.p, 0, NULL);
    drv_free(third.out.p);
    assert_string_equal(json_string_value(json_object_get(j, "reason")), "TooManyRequests");
    json_decref(j);
    drv_apiserver_release(s);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    drv_free(first.out.p);
    drv_free(second.out.p);
    assert_int_equal(first.code, 201);
    assert_int_equal(second.code, 201);
    drv_apiserver_load_stats st = drv_apiserver_load_counts(s, 0);
    assert_int_equal(st.max_in_use, 1);
    assert_int_equal(st.queued, 1);
    assert_int_equal(st.rejected, 1);
    char *dump = drv_apiserver_dump(s, "pods");
    assert_null(strstr(dump, "third"));
    assert_non_null(strstr(dump, "second"));
    drv_free(dump);
    drv_apiserver_free(s);
}

/* A dedicated level (level 1, by User-Agent prefix) has its own seats: with level 0's one seat
 * taken and its queue of none, another client is refused while Drover's request is served. */
static void test_dedicated_level_not_throttled(void **state)
{
    (void)state;
    drv_apiserver_load l = zero_model(1, 0);
    l.level[1] = (drv_apiserver_level){.agent_prefix = "drover/", .seats = 1, .queue = 0};
    drv_diag d = {{0}};
    drv_apiserver *s = start(&l, &d);
    assert_non_null(s);
    uint16_t port = drv_apiserver_port(s);
    char b1[512], b2[512], b3[512];
    struct call batch = create_call(port, b1, sizeof b1, "batch-1", "batch/1.0");
    struct call batch2 = create_call(port, b2, sizeof b2, "batch-2", "batch/1.0");
    struct call ours = create_call(port, b3, sizeof b3, "ours", "drover/0.1");
    drv_apiserver_hold(s, "POST", PODS, "batch/");
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, do_call, &batch), 0);
    wait_for(s, one_held);
    do_call(&batch2);
    drv_free(batch2.out.p);
    assert_int_equal(batch2.code, 429);
    do_call(&ours);
    drv_free(ours.out.p);
    assert_int_equal(ours.code, 201);
    drv_apiserver_release(s);
    pthread_join(t, NULL);
    drv_free(batch.out.p);
    assert_int_equal(batch.code, 201);
    assert_int_equal(drv_apiserver_load_counts(s, 1).admitted, 1);
    assert_int_equal(drv_apiserver_load_counts(s, 0).rejected, 1);
    drv_apiserver_free(s);
}

/* A model the server cannot serve is refused at start, saying what was expected. */
static void test_bad_model_refused(void **state)
{
    (void)state;
    drv_apiserver_load l = zero_model(0, 1);
    drv_diag d = {{0}};
    assert_null(start(&l, &d));
    assert_non_null(strstr(d.msg, "seats must be 1.."));
    l = zero_model(1, 1);
    l.create = (drv_apiserver_latency){20, 10};
    d = (drv_diag){{0}};
    assert_null(start(&l, &d));
    assert_non_null(strstr(d.msg, "p50 <= p90"));
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_draws_follow_p50_and_p90),
        cmocka_unit_test(test_service_time_by_verb_and_list_size),
        cmocka_unit_test(test_full_queue_answers_429),
        cmocka_unit_test(test_dedicated_level_not_throttled),
        cmocka_unit_test(test_bad_model_refused),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
