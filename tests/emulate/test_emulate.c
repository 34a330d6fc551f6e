/*
 * The emulator against the in-memory API server: it registers its nodes (read back with their
 * labels, allocatable and Ready condition; a node that existed keeps its own labels and loses
 * the not-ready taint) and keeps them Ready with heartbeats; a pod bound to an emulated node
 * becomes Running (conditions, containerStatuses, startTime) and then Succeeded after its
 * annotated duration (terminated, exit code 0); a pod without a duration keeps running; a pod
 * bound to another node is left alone; a graceful deletion of a pod on an emulated node is
 * confirmed (the pod disappears) and the pod forgotten; a pod created again under a deleted
 * pod's name is started afresh; an unreachable server is a clear error; stop is clean (ASan).
 * No timing assertions: every wait polls for up to 10 s (speed 100 makes the real waits short).
 */
#include "apiserver.h"
#include "drover/emulator.h"
#include "drover/kube_types.h"
#include "json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

typedef struct fixture {
    drv_apiserver *srv;
    char url[64];
    drv_kube_config cfg;
    drv_kube *k; /* the test's own client */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    drv_diag d;
    drv_apiserver_opts o = {.fixture_dir = FIXTURE_DIR, .bookmark_ms = 200};
    if (!f || drv_apiserver_start(&f->srv, &o, &d))
        return -1;
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u", drv_apiserver_port(f->srv));
    f->cfg = (drv_kube_config){
        .server = f->url, .qps = 10000, .burst = 10000, .backoff_ms = 5, .backoff_max_ms = 50};
    if (drv_kube_new(&f->k, &f->cfg, &d))
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    drv_kube_free(f->k);
    drv_apiserver_free(f->srv);
    free(f);
    return 0;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static const drv_emu_node NODES[] = {
    {.name = "emu-0",
     .zone = "zone-a",
     .rack = "rack-0",
     .alloc = {32000, 128LL << 30, 4},
     .labels = "pool=gpu,gpu-generation=4",
     .taints = "gpu=true:NoSchedule"},
    {.name = "emu-1", .zone = "zone-b", .rack = "rack-1", .alloc = {7500, 3LL << 29, 0}},
};

static drv_emulator *start_emulator(fixture *f)
{
    drv_emulator_opts o;
    drv_emulator_opts_default(&o);
    o.speed = 100;       /* a 50 s pod runs 0.5 s */
    o.start_delay_s = 1; /* 10 ms */
    o.heartbeat_s = 0.1; /* real seconds: heartbeats happen during the test */
    o.watch_timeout_s = 5;
    drv_emulator *e;
    drv_diag d;
    assert_int_equal(drv_emulator_new(&e, &f->cfg, NODES, 2, &o, &d), 0);
    int rc = drv_emulator_start(e, &d);
    if (rc)
        fail_msg("start: %s", d.msg);
    return e;
}

static json_t *get(fixture *f, const char *path, long *st)
{
    json_t *o = NULL;
    drv_diag d;
    *st = 0;
    drv_kube_request(f->k, "GET", path, NULL, NULL, st, &o, &d);
    return o;
}

static const char *str_at(json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

static void create_pod(fixture *f, const char *name, const char *duration)
{
    char body[512], ann[128] = "";
    if (duration)
        snprintf(ann, sizeof ann, ",\"annotations\":{\"%s\":\"%s\"}", DRV_EMU_DURATION_ANNOTATION,
                 duration);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"%s},"
             "\"spec\":{\"schedulerName\":\"drover\",\"containers\":[{\"name\":\"main\","
             "\"image\":\"busybox\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}",
             name, ann);
    long st;
    drv_diag d;
    int rc = drv_kube_request(f->k, "POST", "/api/v1/namespaces/default/pods", NULL, body, &st,
                              NULL, &d);
    if (rc)
        fail_msg("create %s: %s", name, d.msg);
}

static void bind_pod(fixture *f, const char *name, const char *node)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s/binding", name);
    char *body = drv_kube_binding_json("default", name, node);
    long st;
    drv_diag d;
    int rc = drv_kube_request(f->k, "POST", path, NULL, body, &st, NULL, &d);
    drv_free(body);
    if (rc)
        fail_msg("bind %s: %s", name, d.msg);
}

/* Polls the pod (up to 10 s) until its phase is want ("" waits for it to be gone); returns the
 * object (decref it), or fails. */
static json_t *wait_phase(fixture *f, const char *name, const char *want)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s", name);
    const char *last = "?";
    char lastb[32] = "?";
    for (int i = 0; i < 1000; i++) {
        long st;
        json_t *o = get(f, path, &st);
        if (!*want && st == 404)
            return NULL;
        const char *ph = str_at(o, "status", "phase");
        if (ph && *want && !strcmp(ph, want))
            return o;
        snprintf(lastb, sizeof lastb, "%s", ph ? ph : (st == 404 ? "(gone)" : "?"));
        last = lastb;
        json_decref(o);
        sleep_ms(10);
    }
    fail_msg("pod %s: still %s after 10 s, expected %s", name, last, *want ? want : "gone");
    return NULL;
}

static const char *condition(json_t *pod, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, type))
            return json_string_value(json_object_get(c, "status"));
    }
    return NULL;
}

static void test_registers_nodes(void **state)
{
    fixture *f = *state;
    long st;
    drv_diag d;
    /* emu-1 exists already, with a label of its own and the taint a new node gets */
    const char *pre = "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"emu-1\","
                      "\"labels\":{\"keep\":\"me\"}},\"spec\":{\"taints\":[{\"key\":"
                      "\"node.kubernetes.io/not-ready\",\"effect\":\"NoSchedule\"}]}}";
    assert_int_equal(drv_kube_request(f->k, "POST", "/api/v1/nodes", NULL, pre, &st, NULL, &d), 0);
    drv_emulator *e = start_emulator(f);
    drv_strtab *names = drv_strtab_new();
    for (int i = 0; i < 2; i++) {
        char path[400];
        snprintf(path, sizeof path, "/api/v1/nodes/%.63s", NODES[i].name);
        json_t *n = get(f, path, &st);
        assert_int_equal(st, 200);
        drv_knode kn;
        if (drv_kube_decode_node(n, names, &kn, &d))
            fail_msg("%s", d.msg);
        assert_true(kn.alloc.cpu == NODES[i].alloc.cpu);
        assert_true(kn.alloc.mem == NODES[i].alloc.mem);
        assert_true(kn.alloc.gpu == NODES[i].alloc.gpu);
        assert_string_equal(drv_strtab_str(names, kn.zone), NODES[i].zone);
        assert_string_equal(drv_strtab_str(names, kn.rack), NODES[i].rack);
        assert_true(kn.ready);
        assert_false(kn.not_ready);             /* the not-ready taint is gone */
        assert_true(kn.noschedule == (i == 0)); /* emu-0's own taint stays */
        json_t *taints = json_object_get(json_object_get(n, "spec"), "taints");
        assert_int_equal(json_array_size(taints), i == 0 ? 1 : 0);
        if (i == 0) {
            json_t *t0 = json_array_get(taints, 0);
            assert_string_equal(json_string_value(json_object_get(t0, "key")), "gpu");
            assert_string_equal(json_string_value(json_object_get(t0, "value")), "true");
            assert_string_equal(json_string_value(json_object_get(t0, "effect")), "NoSchedule");
            json_t *l = json_object_get(json_object_get(n, "metadata"), "labels");
            assert_string_equal(json_string_value(json_object_get(l, "pool")), "gpu");
            assert_string_equal(json_string_value(json_object_get(l, "gpu-generation")), "4");
        }
        json_t *labels = json_object_get(json_object_get(n, "metadata"), "labels");
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/hostname")),
                            NODES[i].name);
        assert_string_equal(json_string_value(json_object_get(labels, DRV_EMU_NODE_LABEL)), "true");
        if (i == 1) /* what was there is kept */
            assert_string_equal(json_string_value(json_object_get(labels, "keep")), "me");
        /* capacity is written too */
        assert_non_null(str_at(json_object_get(n, "status"), "capacity", "cpu"));
        json_decref(n);
    }
    drv_strtab_free(names);
    /* heartbeats follow */
    drv_emulator_stats s = drv_emulator_get_stats(e);
    for (int i = 0; i < 1000 && s.heartbeats < 4; i++) {
        sleep_ms(10);
        s = drv_emulator_get_stats(e);
    }
    assert_true(s.heartbeats >= 4);
    assert_int_equal(s.nodes_registered, 2);
    drv_emulator_free(e);
    /* a second emulator over the same nodes registers them again (they exist) */
    e = start_emulator(f);
    assert_int_equal(drv_emulator_get_stats(e).nodes_registered, 2);
    drv_emulator_free(e);
}

static void test_pod_lifecycle(void **state)
{
    fixture *f = *state;
    drv_emulator *e = start_emulator(f);
    /* a pod bound elsewhere first: if the emulator took it, it would start it before the next */
    create_pod(f, "other", "1");
    bind_pod(f, "other", "real-node");
    create_pod(f, "forever", NULL);
    bind_pod(f, "forever", "emu-1");
    json_t *p = wait_phase(f, "forever", "Running");
    assert_string_equal(condition(p, "Ready"), "True");
    assert_string_equal(condition(p, "PodScheduled"), "True");
    assert_non_null(str_at(p, "status", "startTime"));
    json_t *cs =
        json_array_get(json_object_get(json_object_get(p, "status"), "containerStatuses"), 0);
    assert_string_equal(json_string_value(json_object_get(cs, "name")), "main");
    assert_non_null(json_object_get(json_object_get(cs, "state"), "running"));
    json_decref(p);
    long st;
    p = get(f, "/api/v1/namespaces/default/pods/other", &st);
    assert_string_equal(str_at(p, "status", "phase"), "Pending");
    json_decref(p);

    /* an unbound pod is left alone until it is bound */
    create_pod(f, "short", "50");
    p = get(f, "/api/v1/namespaces/default/pods/short", &st);
    assert_string_equal(str_at(p, "status", "phase"), "Pending");
    json_decref(p);
    bind_pod(f, "short", "emu-0");
    p = wait_phase(f, "short", "Succeeded");
    assert_string_equal(condition(p, "Ready"), "False");
    cs = json_array_get(json_object_get(json_object_get(p, "status"), "containerStatuses"), 0);
    json_t *term = json_object_get(json_object_get(cs, "state"), "terminated");
    assert_non_null(term);
    assert_int_equal(json_integer_value(json_object_get(term, "exitCode")), 0);
    assert_non_null(json_object_get(term, "finishedAt"));
    json_decref(p);
    /* the one without a duration still runs (it started before "short" finished) */
    p = get(f, "/api/v1/namespaces/default/pods/forever", &st);
    assert_string_equal(str_at(p, "status", "phase"), "Running");
    json_decref(p);
    /* only "forever" is tracked (a late watch event may track a finished pod for a moment);
     * the watch may also drop "short" before the writer has counted its Succeeded write */
    drv_emulator_stats s = drv_emulator_get_stats(e);
    for (int i = 0; i < 1000 && (s.tracked != 1 || s.started < 2 || s.succeeded < 1); i++) {
        sleep_ms(10);
        s = drv_emulator_get_stats(e);
    }
    assert_int_equal(s.tracked, 1);
    assert_int_equal(s.started, 2);
    assert_int_equal(s.succeeded, 1);
    drv_emulator_free(e);
}

static void test_deletion(void **state)
{
    fixture *f = *state;
    drv_emulator *e = start_emulator(f);
    create_pod(f, "victim", NULL);
    bind_pod(f, "victim", "emu-0");
    json_t *p = wait_phase(f, "victim", "Running");
    char uid[64];
    snprintf(uid, sizeof uid, "%s", str_at(p, "metadata", "uid"));
    json_decref(p);
    /* graceful delete: the server keeps a bound pod until its kubelet confirms */
    long st;
    drv_diag d;
    assert_int_equal(
        drv_kube_delete(f->k, "/api/v1/namespaces/default/pods/victim", 30, NULL, &st, &d), 0);
    wait_phase(f, "victim", "");
    drv_emulator_stats s = drv_emulator_get_stats(e);
    /* the informer's DELETED may lag, and the worker counts its confirmation only once the
     * DELETE is answered, which may come after the watch event */
    for (int i = 0; i < 1000 && (s.tracked > 0 || s.deleted < 1); i++) {
        sleep_ms(10);
        s = drv_emulator_get_stats(e);
    }
    assert_int_equal(s.deleted, 1);
    assert_int_equal(s.tracked, 0);

    /* the name again: a new pod, started afresh */
    create_pod(f, "victim", "100000");
    bind_pod(f, "victim", "emu-0");
    p = wait_phase(f, "victim", "Running");
    assert_string_not_equal(str_at(p, "metadata", "uid"), uid);
    json_decref(p);
    /* deleted with grace 0 by someone else: forgotten */
    assert_int_equal(
        drv_kube_delete(f->k, "/api/v1/namespaces/default/pods/victim", 0, NULL, &st, &d), 0);
    s = drv_emulator_get_stats(e);
    /* (its Running write is counted when the answer is read, which may come after the test
     * saw the phase and the pod is gone: wait for both) */
    for (int i = 0; i < 1000 && (s.tracked > 0 || s.started < 2); i++) {
        sleep_ms(10);
        s = drv_emulator_get_stats(e);
    }
    assert_int_equal(s.tracked, 0);
    assert_int_equal(s.deleted, 1);
    assert_int_equal(s.started, 2);
    drv_emulator_free(e);
}

/* Many pods at once (more than the tracking table's first size, so it grows): every one
 * succeeds, and nothing stays tracked. */
static void test_many_pods(void **state)
{
    fixture *f = *state;
    drv_emulator *e = start_emulator(f);
    enum { N = 150 };
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "m-%d", i);
        create_pod(f, name, i % 3 ? "20" : "0");
        bind_pod(f, name, NODES[i % 2].name);
    }
    for (int i = 0; i < N; i++) {
        char name[32];
        snprintf(name, sizeof name, "m-%d", i);
        json_decref(wait_phase(f, name, "Succeeded"));
    }
    /* Wait for the counts asserted, not for the table to empty: the watch's Succeeded may drop
     * a pod before the writer thread has read the answer to its write and counted it. */
    drv_emulator_stats s = drv_emulator_get_stats(e);
    for (int i = 0; i < 1000 && (s.tracked > 0 || s.started < N || s.succeeded < N); i++) {
        sleep_ms(10);
        s = drv_emulator_get_stats(e);
    }
    assert_int_equal(s.tracked, 0);
    assert_int_equal(s.started, N);
    assert_int_equal(s.succeeded, N);
    drv_emulator_free(e);
}

static void test_unreachable_and_bad_options(void **state)
{
    (void)state;
    /* a port nobody listens on: a server started and stopped */
    drv_apiserver *srv;
    drv_diag d;
    drv_apiserver_opts ao = {.fixture_dir = FIXTURE_DIR};
    assert_int_equal(drv_apiserver_start(&srv, &ao, &d), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u", drv_apiserver_port(srv));
    drv_apiserver_free(srv);
    drv_kube_config cfg = {.server = url, .retries = -1};
    drv_emulator *e;
    assert_int_equal(drv_emulator_new(&e, &cfg, NODES, 2, NULL, &d), 0);
    assert_int_equal(drv_emulator_start(e, &d), DRV_EIO);
    assert_non_null(strstr(d.msg, "emu-0"));
    print_message("unreachable: %s\n", d.msg);
    assert_non_null(strstr(d.msg, "127.0.0.1"));
    drv_emulator_free(e);

    drv_emulator_opts o;
    drv_emulator_opts_default(&o);
    o.speed = 0;
    assert_int_equal(drv_emulator_new(&e, &cfg, NODES, 2, &o, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "speed"));
    drv_emulator_opts_default(&o);
    o.start_delay_s = -1;
    assert_int_equal(drv_emulator_new(&e, &cfg, NODES, 2, &o, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "start delay"));
    drv_emu_node twice[2] = {NODES[0], NODES[0]};
    assert_int_equal(drv_emulator_new(&e, &cfg, twice, 2, NULL, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "twice"));
    assert_int_equal(drv_emulator_new(&e, &cfg, NODES, 0, NULL, &d), DRV_EINVAL);
    /* never started: stop and free are fine */
    assert_int_equal(drv_emulator_new(&e, &cfg, NODES, 2, NULL, &d), 0);
    drv_emulator_stop(e);
    drv_emulator_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_registers_nodes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deletion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_pods, setup, teardown),
        cmocka_unit_test(test_unreachable_and_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
