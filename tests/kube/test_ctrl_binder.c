/*
 * The controller's binder (src/kube/ctrl_binder.c) from the inside, against the in-memory test
 * API server on loopback: the mirror is filled by the real informers, which are then stopped so
 * that the test decides what the controller has not seen yet.
 *
 * Issue 12: a binding answered 409 because the pod is already bound (by a previous leader, or
 * a watch event the mirror applied before the answer) must be resolved by reading the pod, not
 * by undoing the assumption: undone, the state says "unbound" while the API says "bound", no
 * watch event corrects it, and every cycle sends the binding again.
 */
#include "apiserver.h"
#include "ctrl.h"
#include "drover/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

typedef struct fixture {
    drv_apiserver *srv;
    drv_kube *k;
    drv_kube_config cfg;
    char url[64];
} fixture;

static void req(fixture *f, const char *method, const char *path, const char *body)
{
    drv_diag d = {{0}};
    long status = 0;
    const char *ctype = strcmp(method, "PATCH") == 0 ? "application/merge-patch+json" : NULL;
    if (drv_kube_request(f->k, method, path, ctype, body, &status, NULL, &d) != 0)
        fail_msg("%s %s: %s", method, path, d.msg);
}

static void add_node(fixture *f, const char *name)
{
    char body[600], path[128];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"},\"spec\":{},"
             "\"status\":{\"allocatable\":{\"cpu\":\"4\",\"memory\":\"8Gi\",\"pods\":\"110\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             name);
    req(f, "POST", "/api/v1/nodes", body);
    snprintf(path, sizeof path, "/api/v1/nodes/%s", name);
    req(f, "PATCH", path, "{\"spec\":{\"taints\":null}}"); /* (as the node controller would) */
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    drv_diag d = {{0}};
    drv_apiserver_opts o = {.fixture_dir = FIXTURE_DIR, .crd_installed = true};
    assert_int_equal(drv_apiserver_start(&f->srv, &o, &d), 0);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u", drv_apiserver_port(f->srv));
    f->cfg.server = f->url;
    f->cfg.qps = 1e6;
    f->cfg.burst = 1000000;
    assert_int_equal(drv_kube_new(&f->k, &f->cfg, &d), 0);
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

/* Applies events until every informer has listed and what it listed is applied (the synced
 * flag read before the batch is taken: an item listed before it is in that batch). */
static void sync_mirror(drv_ctrl *c, ctrl_event **batch, int32_t *cap)
{
    for (int i = 0; i < 1000; i++) {
        bool synced = ctrl_intake_synced(c);
        int32_t n = ctrl_events_take(c, batch, cap, drv_clock_mono() + 0.01);
        assert_int_equal(ctrl_apply_events(c, *batch, n), 0);
        if (synced)
            return;
    }
    fail_msg("the informers never synced");
}

/* The answer to the one request out, applied as the scheduler thread would. */
static void apply_answer(drv_ctrl *c, ctrl_event **batch, int32_t *cap)
{
    for (int i = 0; i < 1000; i++) {
        int32_t n = ctrl_events_take(c, batch, cap, drv_clock_mono() + 0.01);
        bool answered = false;
        for (int32_t k = 0; k < n; k++)
            answered |= (*batch)[k].kind == EV_ANSWER;
        assert_int_equal(ctrl_apply_events(c, *batch, n), 0);
        if (answered)
            return;
    }
    fail_msg("no answer from the binder");
}

static void test_conflict_is_read_not_undone(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a");
    add_node(f, "node-b");
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{\"name\":"
        "\"cw\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":"
        "1,\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"t\","
        "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}");
    /* Its pod exists, unbound (created while the job waited). */
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"cw-worker-0\","
        "\"labels\":{\"drover.dev/job\":\"cw\",\"drover.dev/role\":\"worker\","
        "\"drover.dev/rank\":\"0\"}},\"spec\":{\"schedulerName\":\"drover\",\"containers\":[{"
        "\"name\":\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}");

    drv_profile prof;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_builtin("gang-fifo", &prof, &d), 0);
    drv_ctrl_opts o = {.profile = &prof, .binders = 1, .no_events = true};
    drv_ctrl *c;
    assert_int_equal(drv_ctrl_new(&c, &f->cfg, &o, &d), 0);
    c->loop.t0 = drv_clock_mono();
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    assert_int_equal(ctrl_intake_start(c, &d), 0);
    sync_mirror(c, &batch, &cap);
    ctrl_intake_stop(c); /* from here on, the mirror sees only what the test applies */
    drv_state *st = &c->mirror.st;
    assert_int_equal(st->nnodes, 2);
    assert_int_equal(st->njobs, 1);
    int32_t s = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0);
    assert_true(s >= 0);
    assert_int_equal(c->mirror.pods[s].exists, 1);
    assert_int_equal(st->pods[s].node, -1);
    int32_t node_a = strcmp(drv_strtab_str(st->names, st->nodes[0].name), "node-a") ? 1 : 0;
    int32_t node_b = 1 - node_a;

    /* Someone binds it to node-b; the controller, not having seen that, assumes node-a. */
    req(f, "POST", "/api/v1/namespaces/default/pods/cw-worker-0/binding",
        "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"cw-worker-0\"},"
        "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"node-b\"}}");
    assert_int_equal(ctrl_binder_start(c, &d), 0);
    drv_state_bind(st, s, node_a);
    assert_int_equal(ctrl_binder_place(c, s, node_a), 0);
    assert_int_equal(c->mirror.pods[s].inflight, REQ_BIND);
    apply_answer(c, &batch, &cap);

    /* 409, read: the state has it where the API has it, and nothing is left to send. */
    assert_int_equal(c->mirror.pods[s].inflight, REQ_NONE);
    assert_int_equal(st->pods[s].node, node_b);
    assert_int_equal(c->mirror.pods[s].api_node, node_b);
    assert_int_equal(st->nodes[node_a].npods, 0);
    drv_ctrl_stats stats = drv_ctrl_get_stats(c);
    assert_int_equal(stats.binds, 0);
    assert_int_equal(stats.api_errors, 1); /* the 409 (every failed answer is counted) */

    ctrl_binder_stop(c);
    drv_free(batch);
    drv_ctrl_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_conflict_is_read_not_undone, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
