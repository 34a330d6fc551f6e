/*
 * test_resize.c - CPU limits resized by a profile under `drover run` (src/ctrl/ctrl_resize.c,
 * issue 13), against the in-memory test API server on loopback, as a Kubernetes 1.33 (which
 * serves pods/resize) and as the recorded 1.24 (which does not).
 *
 * From the inside (the controller's private header; informers stopped once listed, so that the
 * test applies every answer itself): a resize is sent and seen on the server with 1.33; refused
 * (a Guaranteed pod's QoS class would change) it leaves the state equal to the server's limit;
 * without pods/resize nothing is sent, the state keeps the server's value, and the pod's next
 * creation carries the new limit. End to end: FlowCon gives a lone running worker its node's
 * CPUs through pods/resize. And the test server itself: 404 without 1.33, the QoS rule, only
 * resources taken from the patch.
 */
#include "ctrl.h"
#include "json.h"
#include "drover/clock.h"
#include "ctrl_fixture.h"
#include "rbac_check.h"
#include "drover/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static int start_server(void **state, bool resize)
{
    return fixture_open(state, (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR,
                                                    .crd_installed = true,
                                                    .pod_resize = resize});
}

static int setup_133(void **state)
{
    return start_server(state, true);
}

static int setup_124(void **state)
{
    return start_server(state, false);
}

static int teardown(void **state)
{
    return fixture_close(state);
}

/* Resources of the one container "main": Burstable (a CPU request) or Guaranteed (requests
 * equal to limits for cpu and memory). */
static const char *resources(bool guaranteed)
{
    return guaranteed ? "{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"limits\":{\"cpu\":"
                        "\"1\",\"memory\":\"1Gi\"}}"
                      : "{\"requests\":{\"cpu\":\"1\"}}";
}

/* TrainingJob "rz" of one worker, and its pod, already bound to node-a and Running. */
static void bound_job(fixture *f, bool guaranteed)
{
    add_node(f, "node-a", "4");
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{\"name\":"
        "\"rz\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":"
        "1,\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"t\","
        "\"resources\":%s}]}}}}}}",
        resources(guaranteed));
    char uid[128]; /* (controlled by rz, as Drover makes its pods) */
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"rz-worker-0\","
        "\"labels\":{\"drover.dev/job\":\"rz\",\"drover.dev/role\":\"worker\","
        "\"drover.dev/rank\":\"0\"},\"ownerReferences\":[{\"uid\":\"%s\",\"controller\":"
        "true}]},\"spec\":{\"schedulerName\":\"drover\",\"nodeName\":\"node-a\","
        "\"containers\":[{\"name\":\"main\",\"image\":\"t\",\"resources\":%s}]}}",
        tj_uid(f, "rz", uid, sizeof uid), resources(guaranteed));
    req(f, "PATCH", "/api/v1/namespaces/default/pods/rz-worker-0/status",
        "{\"status\":{\"phase\":\"Running\"}}");
}

/* The server's pod's first container's resources.<which>.cpu, "" when absent (into buf). */
static const char *server_cpu(fixture *f, const char *which, char *buf, size_t n)
{
    json_t *p = get(f, "/api/v1/namespaces/default/pods/rz-worker-0");
    json_t *c0 = json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0);
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(c0, "resources"), which), "cpu"));
    snprintf(buf, n, "%s", v ? v : "");
    json_decref(p);
    return buf;
}

/* The controller from the inside: listed, informers stopped, one binder thread started. */
typedef struct inside {
    drv_kube_config cfg; /* the fixture's, as component "run": User-Agent drover-run/... */
    drv_ctrl *c;
    ctrl_event *batch;
    int32_t cap;
    int32_t slot; /* the pod's */
} inside;

static void inside_start(fixture *f, inside *in)
{
    drv_profile prof;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_builtin("gang-fifo", &prof, &d), 0);
    drv_ctrl_opts o = {.profile = &prof, .binders = 1, .no_events = true};
    memset(in, 0, sizeof *in);
    in->cfg = f->cfg;
    in->cfg.component = "run"; /* told apart from the test's own requests (rbac_check.h) */
    assert_int_equal(drv_ctrl_new(&in->c, &in->cfg, &o, &d), 0);
    drv_ctrl *c = in->c;
    c->cfg.t0 = drv_clock_mono();
    c->loop.leader = true;
    assert_int_equal(ctrl_intake_start(&c->intake, &d), 0);
    ctrl_resize_discover(&c->resize, c->writer.client);
    for (int i = 0; i < 1000; i++) {
        bool synced = ctrl_intake_synced(&c->intake);
        int32_t n = ctrl_events_take(&c->events, &in->batch, &in->cap, drv_clock_mono() + 0.01);
        assert_int_equal(ctrl_apply_events(c, in->batch, n), 0);
        if (synced)
            break;
    }
    ctrl_intake_stop(&c->intake);
    assert_int_equal(ctrl_binder_start(&c->binder, &d), 0);
    assert_int_equal(c->mirror.st.njobs, 1);
    in->slot = c->mirror.st.jobs[0].pod_base;
    assert_true(c->mirror.st.pods[in->slot].node >= 0); /* adopted where the API has it */
}

/* Applies events until a binder's answer came. */
static void inside_answer(inside *in)
{
    for (int i = 0; i < 1000; i++) {
        int32_t n = ctrl_events_take(&in->c->events, &in->batch, &in->cap, drv_clock_mono() + 0.01);
        bool answered = false;
        for (int32_t k = 0; k < n; k++)
            answered |= in->batch[k].kind == EV_ANSWER;
        assert_int_equal(ctrl_apply_events(in->c, in->batch, n), 0);
        if (answered)
            return;
    }
    fail_msg("no answer from the binder");
}

static void inside_stop(inside *in)
{
    ctrl_binder_stop(&in->c->binder);
    drv_free(in->batch);
    drv_ctrl_free(in->c);
}

static drv_decision resize_to(const inside *in, int64_t milli)
{
    const drv_pod *p = &in->c->mirror.st.pods[in->slot];
    return (drv_decision){.kind = DRV_RESIZE,
                          .job = p->job,
                          .pod = in->slot,
                          .node = -1,
                          .value = milli,
                          .from = -1,
                          .prev = p->cpu_limit};
}

/* 1.33: the resize goes out, the server's pod has the new limit (its request untouched), and
 * the state says what the server says. */
static void test_resized_in_place(void **state)
{
    fixture *f = *state;
    bound_job(f, false);
    inside in;
    inside_start(f, &in);
    drv_ctrl *c = in.c;
    assert_true(c->resize.served);
    assert_int_equal(c->mirror.st.pods[in.slot].cpu_limit, 1000); /* no limit: its request */
    drv_decision x = resize_to(&in, 2500);
    assert_int_equal(ctrl_resize_decided(&c->resize, &x), 0);
    assert_int_equal(c->mirror.pods[in.slot].inflight, REQ_RESIZE);
    assert_int_equal(c->mirror.st.pods[in.slot].cpu_limit, 2500); /* assumed meanwhile */
    inside_answer(&in);
    char buf[32];
    assert_string_equal(server_cpu(f, "limits", buf, sizeof buf), "2500m");
    assert_string_equal(server_cpu(f, "requests", buf, sizeof buf), "1");
    assert_int_equal(c->mirror.st.pods[in.slot].cpu_limit, 2500);
    assert_int_equal(drv_ctrl_get_stats(c).resizes, 1);
    assert_int_equal(drv_state_check(&c->mirror.st, false, NULL), 0);
    inside_stop(&in);
}

/* 1.33, a Guaranteed pod: a limit-only resize would make it Burstable, and the server refuses
 * it (422): the state goes back to the server's limit. */
static void test_refused_resize_restores(void **state)
{
    fixture *f = *state;
    bound_job(f, true);
    inside in;
    inside_start(f, &in);
    drv_ctrl *c = in.c;
    assert_int_equal(c->mirror.st.pods[in.slot].cpu_limit, 1000);
    drv_decision x = resize_to(&in, 3000);
    assert_int_equal(ctrl_resize_decided(&c->resize, &x), 0);
    assert_int_equal(c->mirror.st.pods[in.slot].cpu_limit, 3000);
    inside_answer(&in);
    char buf[32];
    assert_string_equal(server_cpu(f, "limits", buf, sizeof buf), "1");
    assert_int_equal(c->mirror.st.pods[in.slot].cpu_limit, 1000); /* the server's "1" */
    assert_int_equal(c->mirror.pods[in.slot].want_cpu_limit, 0);
    assert_int_equal(drv_ctrl_get_stats(c).resizes, 0);
    assert_true(drv_ctrl_get_stats(c).api_errors >= 1);
    assert_int_equal(drv_state_check(&c->mirror.st, false, NULL), 0);
    inside_stop(&in);
}

/* 1.24: nothing is sent, the state keeps the server's value, and the pod created next (after a
 * restart) carries the wanted limit, which the state then takes from the API. */
static void test_applied_at_next_creation(void **state)
{
    fixture *f = *state;
    bound_job(f, false);
    inside in;
    inside_start(f, &in);
    drv_ctrl *c = in.c;
    assert_false(c->resize.served);
    long before = drv_apiserver_requests(f->srv);
    drv_decision x = resize_to(&in, 2500);
    assert_int_equal(ctrl_resize_decided(&c->resize, &x), 0);
    assert_int_equal(c->mirror.pods[in.slot].inflight, REQ_NONE); /* nothing sent */
    assert_int_equal(c->mirror.st.pods[in.slot].cpu_limit, 1000);
    char buf[32];
    assert_string_equal(server_cpu(f, "limits", buf, sizeof buf), "");
    assert_int_equal(drv_apiserver_requests(f->srv), before + 1); /* (that GET only) */
    /* the pod goes (as a restart deletes it) and is created again */
    drv_diag d = {{0}};
    long status = 0;
    assert_int_equal(
        drv_kube_delete(f->k, "/api/v1/namespaces/default/pods/rz-worker-0", 0, NULL, &status, &d),
        0);
    c->mirror.pods[in.slot].presence = POD_ABSENT;
    assert_int_equal(ctrl_binder_create(&c->binder, in.slot, c->mirror.st.pods[in.slot].node), 0);
    inside_answer(&in);
    assert_string_equal(server_cpu(f, "limits", buf, sizeof buf), "2500m");
    assert_string_equal(server_cpu(f, "requests", buf, sizeof buf), "1");
    drv_kpod kp = {.cpu_limit = 2500};
    ctrl_mirror_cpu_limit_seen(&c->mirror, in.slot, &kp); /* (its watch event, as applied) */
    assert_int_equal(c->mirror.st.pods[in.slot].cpu_limit, 2500);
    assert_int_equal(drv_ctrl_get_stats(c).resizes, 0);
    inside_stop(&in);
}

/* End to end under FlowCon: a lone running worker on a 4-CPU node is given the node's CPUs
 * (no progress measured: it counts as growing), in place. */
static void test_flowcon_resizes_on_133(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "4");
    runner r;
    start_profile(f, &r, "flowcon");
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{\"name\":"
        "\"rz\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":"
        "1,\"template\":{\"spec\":{\"schedulerName\":\"drover\",\"containers\":[{\"name\":"
        "\"main\",\"image\":\"t\",\"resources\":%s}]}}}}}}",
        resources(false));
    char buf[32];
    json_t *p = NULL;
    WAIT_FOR((json_decref(p), p = get(f, "/api/v1/namespaces/default/pods/rz-worker-0")) &&
             json_object_get(json_object_get(p, "spec"), "nodeName"));
    json_decref(p);
    req(f, "PATCH", "/api/v1/namespaces/default/pods/rz-worker-0/status",
        "{\"status\":{\"phase\":\"Running\"}}");
    WAIT_FOR(!strcmp(server_cpu(f, "limits", buf, sizeof buf), "4000m"));
    WAIT_FOR(drv_ctrl_get_stats(r.c).resizes >= 1);
    stop(&r);
}

/* The test server as 1.24 and as 1.33 (setup_124, setup_133): discovery names pods/resize
 * only as 1.33, where it serves it (404 otherwise); the QoS rule; only resources taken. */
static void server_resize(void **state)
{
    fixture *f = *state;
    json_t *list = get(f, "/api/v1");
    size_t i;
    json_t *e;
    bool served = false;
    json_array_foreach(json_object_get(list, "resources"), i, e)
    {
        served |= !strcmp(json_string_value(json_object_get(e, "name")), "pods/resize");
    }
    json_decref(list);
    bound_job(f, true);
    drv_diag d = {{0}};
    long status = 0;
    const char *path = "/api/v1/namespaces/default/pods/rz-worker-0/resize";
    const char *ct = "application/strategic-merge-patch+json";
    /* cpu and memory together, the image too: the class stays Guaranteed, the image is dropped */
    int rc = drv_kube_request(f->k, "PATCH", path, ct,
                              "{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"u\","
                              "\"resources\":{\"requests\":{\"cpu\":\"2\",\"memory\":\"1Gi\"},"
                              "\"limits\":{\"cpu\":\"2\",\"memory\":\"1Gi\"}}}]}}",
                              &status, NULL, &d);
    char buf[32];
    if (!served) {
        assert_int_not_equal(rc, 0);
        assert_int_equal(status, 404);
        assert_string_equal(server_cpu(f, "limits", buf, sizeof buf), "1");
        return;
    }
    assert_int_equal(rc, 0);
    assert_string_equal(server_cpu(f, "limits", buf, sizeof buf), "2");
    json_t *p = get(f, "/api/v1/namespaces/default/pods/rz-worker-0");
    json_t *c0 = json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0);
    assert_string_equal(json_string_value(json_object_get(c0, "image")), "t");
    json_decref(p);
    /* the limit alone: it would be Burstable */
    rc = drv_kube_request(f->k, "PATCH", path, ct,
                          "{\"spec\":{\"containers\":[{\"name\":\"main\",\"resources\":{"
                          "\"limits\":{\"cpu\":\"3\"}}}]}}",
                          &status, NULL, &d);
    assert_int_not_equal(rc, 0);
    assert_int_equal(status, 422);
    assert_non_null(strstr(d.msg, "Pod QOS Class may not change as a result of resizing"));
    /* a limit removed */
    rc = drv_kube_request(f->k, "PATCH", path, ct,
                          "{\"spec\":{\"containers\":[{\"name\":\"main\",\"resources\":{"
                          "\"limits\":{\"memory\":null}}}]}}",
                          &status, NULL, &d);
    assert_int_equal(status, 422);
    assert_string_equal(server_cpu(f, "limits", buf, sizeof buf), "2");
    /* resources stay immutable through the pod itself */
    rc = drv_kube_request(f->k, "PATCH", "/api/v1/namespaces/default/pods/rz-worker-0", ct,
                          "{\"spec\":{\"containers\":[{\"name\":\"main\",\"resources\":{"
                          "\"limits\":{\"cpu\":\"4\",\"memory\":\"1Gi\"}}}]}}",
                          &status, NULL, &d);
    assert_int_equal(status, 422);
}

static void test_server_resize_133(void **state)
{
    server_resize(state);
}

static void test_server_resize_124(void **state)
{
    server_resize(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_resized_in_place, setup_133, teardown),
        cmocka_unit_test_setup_teardown(test_refused_resize_restores, setup_133, teardown),
        cmocka_unit_test_setup_teardown(test_applied_at_next_creation, setup_124, teardown),
        cmocka_unit_test_setup_teardown(test_flowcon_resizes_on_133, setup_133, teardown),
        cmocka_unit_test_setup_teardown(test_server_resize_133, setup_133, teardown),
        cmocka_unit_test_setup_teardown(test_server_resize_124, setup_124, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
