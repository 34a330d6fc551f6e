/*
 * The controller's binder (src/ctrl/ctrl_binder.c) from the inside, against the in-memory test
 * API server on loopback: the mirror is filled by the real informers, which are then stopped so
 * that the test decides what the controller has not seen yet.
 *
 * Issue 12: a binding answered 409 because the pod is already bound (by a previous leader, or
 * a watch event the mirror applied before the answer) must be resolved by reading the pod, not
 * by undoing the assumption: undone, the state says "unbound" while the API says "bound", no
 * watch event corrects it, and every cycle sends the binding again. And what test_chaos found:
 * a failed creation taken to have made its pod (then bound, 404, forever), the room of pods
 * being deleted given away before they were gone (and of pods whose placement was still out
 * when their job ended), a finished job's pods created again after a restart, and a template's
 * spec.nodeName bypassing every check.
 */
#include "apiserver.h"
#include "ctrl.h"
#include "json.h"
#include "drover/clock.h"
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

/* Worker 0 of TrainingJob job (1 CPU), bound to node (NULL: unbound), as Drover makes it:
 * controlled by the job (its ownerReference naming the job's uid makes it the job's). */
static void add_job_pod(fixture *f, const char *job, const char *node)
{
    char path[256], body[1024];
    snprintf(path, sizeof path, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/%s",
             job);
    json_t *tj = NULL;
    long status = 0;
    drv_diag d = {{0}};
    assert_int_equal(drv_kube_request(f->k, "GET", path, NULL, NULL, &status, &tj, &d), 0);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s-worker-0\","
             "\"labels\":{\"drover.dev/job\":\"%s\",\"drover.dev/role\":\"worker\","
             "\"drover.dev/rank\":\"0\"},\"ownerReferences\":[{\"uid\":\"%s\",\"controller\":"
             "true}]},\"spec\":{\"schedulerName\":\"drover\"%s%s%s,\"containers\":[{\"name\":"
             "\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}",
             job, job, json_string_value(json_object_get(json_object_get(tj, "metadata"), "uid")),
             node ? ",\"nodeName\":\"" : "", node ? node : "", node ? "\"" : "");
    json_decref(tj);
    req(f, "POST", "/api/v1/namespaces/default/pods", body);
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
        bool synced = ctrl_intake_synced(&c->intake);
        int32_t n = ctrl_events_take(&c->events, batch, cap, drv_clock_mono() + 0.01);
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
        int32_t n = ctrl_events_take(&c->events, batch, cap, drv_clock_mono() + 0.01);
        bool answered = false;
        for (int32_t k = 0; k < n; k++)
            answered |= (*batch)[k].kind == EV_ANSWER;
        assert_int_equal(ctrl_apply_events(c, *batch, n), 0);
        if (answered)
            return;
    }
    fail_msg("no answer from the binder");
}

/* A TrainingJob "cw" of one worker of 1 CPU. */
static const char *const job_cw1 =
    "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{\"name\":"
    "\"cw\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":"
    "1,\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"t\","
    "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}";

/* A controller whose mirror holds what the API has now, its informers then stopped, and its
 * binder threads not started yet (requests wait in the queue). */
static drv_ctrl *open_ctrl_as(ctrl_event **batch, int32_t *cap, fixture *f, drv_metrics *m,
                              const char *profile)
{
    drv_profile prof;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_builtin(profile, &prof, &d), 0);
    drv_ctrl_opts o = {.profile = &prof, .binders = 1, .no_events = true, .metrics = m};
    drv_ctrl *c;
    assert_int_equal(drv_ctrl_new(&c, &f->cfg, &o, &d), 0);
    c->cfg.t0 = drv_clock_mono();
    c->loop.leader = true;
    assert_int_equal(ctrl_intake_start(&c->intake, &d), 0);
    sync_mirror(c, batch, cap);
    ctrl_intake_stop(&c->intake);
    return c;
}

/* The same, under gang-fifo. */
static drv_ctrl *open_ctrl_idle(ctrl_event **batch, int32_t *cap, fixture *f, drv_metrics *m)
{
    return open_ctrl_as(batch, cap, f, m, "gang-fifo");
}

/* node-a and the TrainingJob `job` in the cluster, then open_ctrl_idle. */
static drv_ctrl *one_job_idle(fixture *f, const char *job, ctrl_event **batch, int32_t *cap)
{
    add_node(f, "node-a");
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs", job);
    return open_ctrl_idle(batch, cap, f, NULL);
}

/* The same, its binder threads (one) started. */
static drv_ctrl *open_ctrl(ctrl_event **batch, int32_t *cap, fixture *f, drv_metrics *m)
{
    drv_ctrl *c = open_ctrl_idle(batch, cap, f, m);
    drv_diag d = {{0}};
    assert_int_equal(ctrl_binder_start(&c->binder, &d), 0);
    return c;
}

/* node-a and the TrainingJob `job` in the cluster, then open_ctrl. */
static drv_ctrl *one_job(fixture *f, const char *job, ctrl_event **batch, int32_t *cap,
                         drv_metrics *m)
{
    add_node(f, "node-a");
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs", job);
    return open_ctrl(batch, cap, f, m);
}

/* One cycle, its requests handed over as the loop's send phase does. */
static void run_cycle(drv_ctrl *c)
{
    assert_int_equal(ctrl_cycle_run(&c->cycle), 0);
    ctrl_binder_flush(&c->binder);
}

static void close_ctrl(drv_ctrl *c, ctrl_event *batch)
{
    ctrl_binder_stop(&c->binder);
    drv_free(batch);
    drv_ctrl_free(c);
}

static void test_conflict_is_read_not_undone(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a");
    add_node(f, "node-b");
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs", job_cw1);
    /* Its pod exists, unbound (created while the job waited). */
    add_job_pod(f, "cw", NULL);

    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = open_ctrl_idle(&batch, &cap, f, NULL); /* then sees only what the test applies */
    drv_state *st = &c->mirror.st;
    assert_int_equal(st->nnodes, 2);
    assert_int_equal(st->njobs, 1);
    int32_t s = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0);
    assert_true(s >= 0);
    assert_int_equal(c->mirror.pods[s].presence, POD_PRESENT);
    assert_int_equal(st->pods[s].node, -1);
    int32_t node_a = strcmp(drv_strtab_str(st->names, st->nodes[0].name), "node-a") ? 1 : 0;
    int32_t node_b = 1 - node_a;

    /* Someone binds it to node-b; the controller, not having seen that, assumes node-a. */
    req(f, "POST", "/api/v1/namespaces/default/pods/cw-worker-0/binding",
        "{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{\"name\":\"cw-worker-0\"},"
        "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"name\":\"node-b\"}}");
    drv_diag d = {{0}};
    assert_int_equal(ctrl_binder_start(&c->binder, &d), 0);
    drv_state_bind(st, s, node_a);
    assert_int_equal(ctrl_binder_place(&c->binder, s, node_a), 0);
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
    close_ctrl(c, batch);
}

/* ---- issue 12 under chaos: assumptions after 404/409/500, room of pods being deleted ------ */

/* A creation answered 409 that the API did not apply (the pod is not there when read): the pod
 * is not taken to exist, so the next placement creates it again instead of binding a pod that
 * does not exist (which was answered 404 forever); the read is no failed request. */
static void test_conflict_on_create_read_as_gone(void **state)
{
    fixture *f = *state;
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_metrics *m = NULL;
    assert_int_equal(drv_metrics_new(&m), 0);
    drv_ctrl *c = one_job(f, job_cw1, &batch, &cap, m);
    drv_state *st = &c->mirror.st;
    int32_t s = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0);
    assert_int_equal(c->mirror.pods[s].presence, POD_ABSENT);

    drv_apiserver_fail_next(f->srv, 409, 1, 0);
    drv_state_bind(st, s, 0);
    assert_int_equal(ctrl_binder_place(&c->binder, s, 0), 0);
    assert_int_equal(c->mirror.pods[s].inflight, REQ_CREATE);
    apply_answer(c, &batch, &cap);
    assert_int_equal(c->mirror.pods[s].presence, POD_ABSENT);
    assert_int_equal(st->pods[s].node, -1);
    drv_ctrl_stats stats = drv_ctrl_get_stats(c);
    assert_int_equal(stats.api_errors, 1); /* the 409 only: the read found no pod, no 404 */
    assert_int_equal(stats.creates, 0);
    ctrl_metrics_export(&c->counters, NULL);
    char *text = drv_metrics_render(m);
    assert_non_null(strstr(text, "drover_api_errors_total{profile=\"gang-fifo\",code=\"409\","
                                 "verb=\"POST\",resource=\"pods\"} 1\n"));
    assert_null(strstr(text, "code=\"404\""));
    drv_free(text);

    /* placed again: created (bound), not bound through pods/binding */
    drv_state_bind(st, s, 0);
    assert_int_equal(ctrl_binder_place(&c->binder, s, 0), 0);
    assert_int_equal(c->mirror.pods[s].inflight, REQ_CREATE);
    apply_answer(c, &batch, &cap);
    stats = drv_ctrl_get_stats(c);
    assert_int_equal(stats.creates, 1);
    assert_int_equal(stats.created_bound, 1);
    assert_int_equal(stats.binds, 0);
    assert_int_equal(c->mirror.pods[s].presence, POD_PRESENT);
    close_ctrl(c, batch);
    drv_metrics_free(m);
}

/* A binding answered 404: the pod does not exist (whatever was assumed), so it is created next
 * time rather than bound again and again. */
static void test_binding_404_forgets_the_pod(void **state)
{
    fixture *f = *state;
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = one_job(f, job_cw1, &batch, &cap, NULL);
    drv_state *st = &c->mirror.st;
    int32_t s = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0);
    c->mirror.pods[s].presence = POD_PRESENT; /* a wrong assumption */
    drv_state_bind(st, s, 0);
    assert_int_equal(ctrl_binder_place(&c->binder, s, 0), 0);
    assert_int_equal(c->mirror.pods[s].inflight, REQ_BIND);
    apply_answer(c, &batch, &cap);
    assert_int_equal(c->mirror.pods[s].presence, POD_ABSENT);
    assert_int_equal(st->pods[s].node, -1);
    drv_state_bind(st, s, 0);
    assert_int_equal(ctrl_binder_place(&c->binder, s, 0), 0);
    assert_int_equal(c->mirror.pods[s].inflight, REQ_CREATE);
    apply_answer(c, &batch, &cap);
    close_ctrl(c, batch);
}

/* A pod deleted where the state no longer has it (its job ended) holds its node's room until it
 * is gone; a deletion that fails keeps holding it and is sent again, after reading the pod. */
static void test_pod_being_deleted_holds_its_room(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a");
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs", job_cw1);
    add_job_pod(f, "cw", "node-a");
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = open_ctrl(&batch, &cap, f, NULL);
    drv_state *st = &c->mirror.st;
    int32_t s = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0);
    assert_int_equal(st->pods[s].node, 0); /* adopted where the API has it */
    assert_int_equal(drv_node_free(&st->nodes[0]).cpu, 3000);

    drv_state_unbind(st, s); /* its job ended */
    drv_apiserver_fail_next(f->srv, 409, 1, 0);
    assert_int_equal(ctrl_binder_delete(&c->binder, s), 0);
    assert_int_equal(drv_node_free(&st->nodes[0]).cpu, 3000); /* still held */
    apply_answer(c, &batch, &cap);
    /* read: there, not being deleted: sent again, the room still held */
    assert_int_equal(c->mirror.pods[s].inflight, REQ_DELETE);
    assert_int_equal(drv_node_free(&st->nodes[0]).cpu, 3000);
    apply_answer(c, &batch, &cap);
    drv_ctrl_stats stats = drv_ctrl_get_stats(c);
    assert_int_equal(stats.deletes, 1);
    assert_int_equal(stats.api_errors, 1);
    assert_int_equal(drv_node_free(&st->nodes[0]).cpu, 3000); /* until its watch says gone */
    close_ctrl(c, batch);
}

/* A pod whose job ends (or that is evicted) while its placement is still out is deleted once
 * that is answered; meanwhile the placement may land, so its room on that node stays held from
 * the moment the state lets go of it, not from the answer: a cycle in between gave it away,
 * and the node was over-committed. A placement that fails frees it. */
static void test_room_of_a_placement_out_held(void **state)
{
    fixture *f = *state;
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = one_job(f, job_cw1, &batch, &cap, NULL);
    ctrl_binder_stop(&c->binder); /* the creation stays out until the test answers it */
    drv_state *st = &c->mirror.st;
    int32_t s = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0);
    drv_state_bind(st, s, 0); /* (as a cycle assumes its decision) */
    assert_int_equal(ctrl_binder_place(&c->binder, s, 0), 0);
    assert_int_equal(c->mirror.pods[s].inflight, REQ_CREATE);
    assert_int_equal(drv_node_free(&st->nodes[0]).cpu, 3000);
    drv_state_unbind(st, s); /* its job ended (ctrl_lifecycle.c's finish) */
    assert_int_equal(ctrl_binder_delete(&c->binder, s), 0);
    assert_true(c->mirror.pods[s].delete_after);
    assert_int_equal(drv_node_free(&st->nodes[0]).cpu, 3000); /* held while it is out */
    ctrl_send_drop(&c->binder.send); /* answered as failed: not created, nothing to hold */
    apply_answer(c, &batch, &cap);
    assert_int_equal(c->mirror.pods[s].inflight, REQ_NONE);
    assert_int_equal(drv_node_free(&st->nodes[0]).cpu, 4000);
    close_ctrl(c, batch);
}

/* A restarted controller that finds a job's lead pod succeeded (its status not written before
 * the kill) ends the job before the cycle decides: none of its pods is created again. */
static void test_finished_job_not_placed_again(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a");
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"fj\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{"
        "\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\","
        "\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}");
    add_job_pod(f, "fj", "node-a");
    req(f, "PATCH", "/api/v1/namespaces/default/pods/fj-worker-0/status",
        "{\"status\":{\"phase\":\"Succeeded\"}}");
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = open_ctrl(&batch, &cap, f, NULL);
    ctrl_binder_stop(&c->binder); /* what the cycle sends stays queued, for the test to see */
    drv_state *st = &c->mirror.st;
    run_cycle(c);
    assert_int_equal(st->jobs[0].phase, DRV_JOB_DONE);
    for (int32_t k = 0; k < st->jobs[0].pod_count; k++)
        assert_int_not_equal(c->mirror.pods[st->jobs[0].pod_base + k].inflight, REQ_CREATE);
    close_ctrl(c, batch);
}

/* A job "hg" of 2 workers of 1 CPU whose worker 0 is bound to node-a while someone else's pod
 * takes the rest of the node, so worker 1 cannot be placed: a gang left partly bound (its other
 * creation failed before a kill). */
static void half_bound_gang(fixture *f)
{
    add_node(f, "node-a");
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"hg\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{"
        "\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\","
        "\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}");
    add_job_pod(f, "hg", "node-a");
    /* someone else's pod takes the rest of the node: worker 1 cannot be placed */
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"other\"},"
        "\"spec\":{\"nodeName\":\"node-a\",\"containers\":[{\"name\":\"main\",\"image\":"
        "\"t\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]}}");
}

/* A gang left partly bound (its other creation failed before a kill) that the cycle cannot
 * complete is rolled back: its bound pod is deleted, its room held until gone. */
static void test_partial_gang_rolled_back(void **state)
{
    fixture *f = *state;
    half_bound_gang(f);
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = open_ctrl(&batch, &cap, f, NULL);
    ctrl_binder_stop(&c->binder); /* what the cycle sends stays queued, for the test to see */
    drv_state *st = &c->mirror.st;
    int32_t w0 = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0),
            w1 = drv_job_pod(st, 0, DRV_ROLE_WORKER, 1);
    assert_int_equal(st->pods[w0].node, 0);
    run_cycle(c);
    assert_int_equal(st->pods[w1].node, -1);
    assert_int_equal(st->pods[w0].node, -1);
    assert_int_equal(c->mirror.pods[w0].inflight, REQ_DELETE);
    assert_int_equal(drv_node_free(&st->nodes[0]).cpu, 0); /* held until gone */
    close_ctrl(c, batch);
}

/* The same when the state has lost the bound pod's binding (the API has it on node-a, the
 * state nowhere): the API's pod runs all the same, so it is deleted with the rest. */
static void test_partial_gang_rolled_back_as_the_api_has_it(void **state)
{
    fixture *f = *state;
    half_bound_gang(f);
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = open_ctrl(&batch, &cap, f, NULL);
    ctrl_binder_stop(&c->binder); /* what the cycle sends stays queued, for the test to see */
    drv_state *st = &c->mirror.st;
    int32_t w0 = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0);
    assert_int_equal(st->pods[w0].node, 0);
    drv_state_unbind(st, w0); /* the state's binding lost; the API's stays */
    run_cycle(c);
    assert_int_equal(c->mirror.pods[w0].inflight, REQ_DELETE);
    assert_int_equal(drv_node_free(&st->nodes[0]).cpu, 0); /* held until gone */
    close_ctrl(c, batch);
}

/* A gang placed whole by a cycle whose one creation then fails is not taken for whole: when the
 * next cycle cannot place that pod again, the gang is rolled back. */
static void test_gang_failed_in_flight_rolled_back(void **state)
{
    fixture *f = *state;
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = one_job(
        f,
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"hf\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{"
        "\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\","
        "\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}",
        &batch, &cap, NULL);
    drv_state *st = &c->mirror.st;
    int32_t w0 = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0),
            w1 = drv_job_pod(st, 0, DRV_ROLE_WORKER, 1);
    drv_apiserver_fail_next(f->srv, 500, 1, 0); /* the first creation (one binder: in order) */
    run_cycle(c);
    for (int i = 0; i < 2 && drv_ctrl_get_stats(c).creates < 1; i++)
        apply_answer(c, &batch, &cap);
    while (c->mirror.pods[w0].inflight || c->mirror.pods[w1].inflight)
        apply_answer(c, &batch, &cap);
    assert_int_equal(drv_ctrl_get_stats(c).creates, 1);
    int32_t failed = c->mirror.pods[w0].presence != POD_ABSENT ? w1 : w0, made = w0 + w1 - failed;
    assert_int_equal(st->pods[failed].node, -1);
    /* the room it had is gone meanwhile */
    drv_state_set_node(st, 0, (drv_res){1000, 8LL << 30, 0}, true);
    run_cycle(c);
    assert_int_equal(st->pods[failed].node, -1);
    assert_int_equal(st->pods[made].node, -1);
    assert_int_equal(c->mirror.pods[made].inflight, REQ_DELETE);
    apply_answer(c, &batch, &cap);
    close_ctrl(c, batch);
}

/* A template's spec.nodeName is taken out: the pod Drover creates carries the node it chose,
 * or none, never the template's. */
static void test_template_node_name_ignored(void **state)
{
    fixture *f = *state;
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = one_job(
        f,
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"pin\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{"
        "\"replicas\":4,\"template\":{\"spec\":{\"nodeName\":\"node-a\",\"containers\":[{"
        "\"name\":\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]}}}}"
        "}}",
        &batch, &cap, NULL);
    drv_state *st = &c->mirror.st;
    assert_true(c->mirror.jobs[0].node_name);
    assert_null(strstr(c->mirror.jobs[0].tmpl[DRV_ROLE_WORKER], "nodeName"));
    /* 4 x 2 CPUs do not fit the 4-CPU node: the job waits, its pods created unbound */
    run_cycle(c);
    assert_int_equal(st->jobs[0].phase, DRV_JOB_PENDING);
    for (int i = 0; i < 4 && drv_ctrl_get_stats(c).creates < 4; i++)
        apply_answer(c, &batch, &cap);
    assert_int_equal(drv_ctrl_get_stats(c).creates, 4);
    assert_int_equal(drv_ctrl_get_stats(c).created_bound, 0);
    json_t *list = NULL;
    long status = 0;
    drv_diag d = {{0}};
    assert_int_equal(drv_kube_request(f->k, "GET", "/api/v1/namespaces/default/pods", NULL, NULL,
                                      &status, &list, &d),
                     0);
    json_t *items = json_object_get(list, "items");
    assert_int_equal(json_array_size(items), 4);
    size_t i;
    json_t *p;
    json_array_foreach(items, i, p)
    {
        assert_null(json_object_get(json_object_get(p, "spec"), "nodeName"));
    }
    json_decref(list);
    close_ctrl(c, batch);
}

/* Issue 17: a creation's body is rendered by the binder thread, from what the mirror had when
 * the creation was queued: the scheduler thread changing the job's template and the pod's wanted
 * CPU limit meanwhile changes nothing in what is sent (the binder never reads the mirror). And
 * the body is the whole pod: names, labels, owner reference, nodeName, scheduler, environment. */
static void test_creation_body_copied_when_queued(void **state)
{
    fixture *f = *state;
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = one_job_idle(f, job_cw1, &batch, &cap);
    drv_state *st = &c->mirror.st;
    int32_t s = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0);
    drv_state_bind(st, s, 0);
    assert_int_equal(ctrl_binder_place(&c->binder, s, 0), 0);
    assert_int_equal(c->mirror.pods[s].inflight, REQ_CREATE);
    job_record *jr = &c->mirror.jobs[0];
    drv_free(jr->tmpl[DRV_ROLE_WORKER]);
    jr->tmpl[DRV_ROLE_WORKER] =
        drv_strdup("{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"changed\"}]}}");
    assert_non_null(jr->tmpl[DRV_ROLE_WORKER]);
    c->mirror.pods[s].want_cpu_limit = 3000;
    drv_diag d = {{0}};
    assert_int_equal(ctrl_binder_start(&c->binder, &d), 0);
    apply_answer(c, &batch, &cap);
    assert_int_equal(drv_ctrl_get_stats(c).created_bound, 1);

    json_t *pod = NULL;
    long status = 0;
    assert_int_equal(drv_kube_request(f->k, "GET", "/api/v1/namespaces/default/pods/cw-worker-0",
                                      NULL, NULL, &status, &pod, &d),
                     0);
    json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
    json_t *labels = json_object_get(meta, "labels");
    assert_string_equal(json_string_value(json_object_get(meta, "namespace")), "default");
    assert_string_equal(json_string_value(json_object_get(labels, "drover.dev/job")), "cw");
    assert_string_equal(json_string_value(json_object_get(labels, "drover.dev/role")), "worker");
    assert_string_equal(json_string_value(json_object_get(labels, "drover.dev/rank")), "0");
    json_t *owner = json_array_get(json_object_get(meta, "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "kind")), "TrainingJob");
    assert_string_equal(json_string_value(json_object_get(owner, "name")), "cw");
    assert_string_equal(json_string_value(json_object_get(spec, "nodeName")), "node-a");
    assert_string_equal(json_string_value(json_object_get(spec, "schedulerName")),
                        c->cfg.scheduler);
    json_t *c0 = json_array_get(json_object_get(spec, "containers"), 0);
    assert_string_equal(json_string_value(json_object_get(c0, "image")), "t");
    assert_null(json_object_get(json_object_get(c0, "resources"), "limits"));
    json_t *env0 = json_array_get(json_object_get(c0, "env"), 0);
    assert_string_equal(json_string_value(json_object_get(env0, "name")), "TF_CONFIG");
    json_decref(pod);
    close_ctrl(c, batch);
}

/* The watch's echo of a pod Drover is creating: as the API has it, where the state assumed it,
 * it changes nothing a cycle reads, so it asks for none (in e2e_bind each echo ran a cycle: 180
 * of them while 2,000 pods were created); what does change something still does. */
static ctrl_event echo(drv_ctrl *c, const char *node, const char *phase)
{
    char text[900];
    snprintf(text, sizeof text,
             "{\"metadata\":{\"name\":\"cw-worker-0\",\"namespace\":\"default\","
             "\"resourceVersion\":\"9\",\"labels\":{\"drover.dev/job\":\"cw\",\"drover.dev/role\":"
             "\"worker\",\"drover.dev/rank\":\"0\"},\"ownerReferences\":[{\"uid\":\"%s\","
             "\"controller\":true}]},\"spec\":{\"schedulerName\":\"%s\","
             "\"nodeName\":\"%s\",\"containers\":[{\"name\":\"main\",\"image\":\"t\","
             "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]},\"status\":{\"phase\":\"%s\"}}",
             c->mirror.jobs[0].uid, c->cfg.scheduler, node, phase);
    json_t *obj = drv_json_loadb(text, strlen(text), NULL);
    assert_non_null(obj);
    ctrl_event e = {.kind = EV_POD, .type = DRV_WATCH_ADDED, .t = drv_clock_mono()};
    drv_diag d = {{0}};
    assert_int_equal(drv_kube_decode_pod(obj, c->names.tab, &e.cur.pod, &d), 0);
    json_decref(obj);
    e.key = ctrl_name_intern(&c->names, "default/cw-worker-0");
    e.job_key = ctrl_name_intern(&c->names, "default/cw");
    return e;
}

/* A controller (binders stopped, under profile) with cw's worker 0 being created on node-a,
 * as a cycle assumed it: its slot in *slot, node-a's index in *node. */
static drv_ctrl *creation_out_as(fixture *f, ctrl_event **batch, int32_t *cap, int32_t *slot,
                                 int32_t *node, const char *profile)
{
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs", job_cw1);
    drv_ctrl *c = open_ctrl_as(batch, cap, f, NULL, profile);
    drv_state *st = &c->mirror.st;
    *slot = drv_job_pod(st, 0, DRV_ROLE_WORKER, 0);
    *node = c->mirror.node_of[ctrl_name_find(&c->names, "node-a")];
    drv_state_bind(st, *slot, *node); /* (as a cycle assumes its decision) */
    assert_int_equal(ctrl_binder_place(&c->binder, *slot, *node), 0);
    assert_int_equal(c->mirror.pods[*slot].inflight, REQ_CREATE);
    return c;
}

static drv_ctrl *creation_out(fixture *f, ctrl_event **batch, int32_t *cap, int32_t *slot,
                              int32_t *node)
{
    return creation_out_as(f, batch, cap, slot, node, "gang-fifo");
}

static void test_echo_of_a_creation_asks_no_cycle(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a");
    add_node(f, "node-b");
    ctrl_event *batch = NULL;
    int32_t cap = 0, s, a;
    drv_ctrl *c = creation_out(f, &batch, &cap, &s, &a);
    drv_state *st = &c->mirror.st;
    /* the echo, before the answer and after it (the answer path asks for no cycle either) */
    for (int round = 0; round < 2; round++) {
        c->mirror.dirty = false;
        ctrl_event e = echo(c, "node-a", "Pending");
        assert_int_equal(ctrl_apply_events(c, &e, 1), 0);
        assert_false(c->mirror.dirty);
        assert_int_equal(c->mirror.pods[s].presence, POD_PRESENT);
        assert_int_equal(c->mirror.pods[s].api_node, a);
        if (round == 0) {
            drv_diag d = {{0}};
            assert_int_equal(ctrl_binder_start(&c->binder, &d), 0);
            apply_answer(c, &batch, &cap);
            assert_false(c->mirror.dirty);
            assert_int_equal(drv_ctrl_get_stats(c).created_bound, 1);
        }
    }
    /* what changes something: it runs, or the API has it elsewhere */
    c->mirror.dirty = false;
    ctrl_event e = echo(c, "node-a", "Running");
    assert_int_equal(ctrl_apply_events(c, &e, 1), 0);
    assert_true(c->mirror.dirty);
    c->mirror.dirty = false;
    e = echo(c, "node-b", "Running");
    assert_int_equal(ctrl_apply_events(c, &e, 1), 0);
    assert_true(c->mirror.dirty);
    assert_int_equal(st->pods[s].node, c->mirror.node_of[ctrl_name_find(&c->names, "node-b")]);
    close_ctrl(c, batch);
}

/* One cycle as the loop's run_cycle starts it (the mirror clean, the cycle's time its last);
 * then whether the loop's next iteration is due a cycle at once, with no event. */
static bool cycle_then_due(drv_ctrl *c)
{
    c->mirror.dirty = false;
    c->loop.last = drv_clock_mono() - c->cfg.t0;
    assert_int_equal(ctrl_cycle_run(&c->cycle), 0);
    return ctrl_loop_cycle_due(&c->loop, c->mirror.dirty, c->loop.last,
                               drv_sched_wake(c->cycle.sched), c->cfg.prof.period);
}

/* A job whose pods run is marked Running by the reconcile after the cycle that saw them, after
 * the plugins' wake-up time was computed from it as Starting: that change asks for the next
 * cycle at once, unless the profile is blind to starts (flowcon is not: its limits are the
 * running jobs'; gang-fifo is). A job that stays as it is asks for none: the idle loop stays
 * idle. Without it flowcon's first limits waited for its stale wake-up time (a period, while it
 * asked for every cycle while a job started; never, since), or for the next unrelated event. */
static void job_running_after_a_cycle(fixture *f, const char *profile, bool blind)
{
    add_node(f, "node-a");
    ctrl_event *batch = NULL;
    int32_t cap = 0, s, a;
    drv_ctrl *c = creation_out_as(f, &batch, &cap, &s, &a, profile);
    int32_t j = c->mirror.st.pods[s].job;
    ctrl_event e = echo(c, "node-a", "Pending");
    assert_int_equal(ctrl_apply_events(c, &e, 1), 0);
    assert_false(cycle_then_due(c)); /* placed: Starting, the cycle's own decision */
    assert_int_equal(c->mirror.st.jobs[j].phase, DRV_JOB_STARTING);
    e = echo(c, "node-a", "Running");
    assert_int_equal(ctrl_apply_events(c, &e, 1), 0);
    assert_true(c->mirror.dirty);
    assert_int_equal(cycle_then_due(c), !blind); /* Running now, after the cycle */
    assert_int_equal(c->mirror.st.jobs[j].phase, DRV_JOB_RUNNING);
    for (int k = 0; k < 3; k++) { /* it stays Running */
        cycle_then_due(c);
        assert_false(c->mirror.dirty);
        assert_int_equal(c->mirror.st.jobs[j].phase, DRV_JOB_RUNNING);
    }
    close_ctrl(c, batch);
}

static void test_job_running_after_a_cycle_asks_the_next(void **state)
{
    job_running_after_a_cycle(*state, "flowcon", false);
}

static void test_job_running_after_a_cycle_blind_to_starts(void **state)
{
    job_running_after_a_cycle(*state, "gang-fifo", true);
}

/* A job re-creating its pods for new peers is Scaling until the last is back, which only a
 * cycle's reconcile sees: the answer that creates one asks for a cycle, echo or not (without
 * it, test_kube_jobs' replicas edit stayed Scaling when the echo came before the answer). */
static void test_answer_of_a_peer_recreation_asks_a_cycle(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a");
    ctrl_event *batch = NULL;
    int32_t cap = 0, s, a;
    drv_ctrl *c = creation_out(f, &batch, &cap, &s, &a);
    c->mirror.jobs[c->mirror.st.pods[s].job].peers_pending = true;
    ctrl_event e = echo(c, "node-a", "Pending"); /* the echo first: no cycle for it */
    c->mirror.dirty = false;
    assert_int_equal(ctrl_apply_events(c, &e, 1), 0);
    assert_false(c->mirror.dirty);
    drv_diag d = {{0}};
    assert_int_equal(ctrl_binder_start(&c->binder, &d), 0);
    apply_answer(c, &batch, &cap);
    assert_true(c->mirror.dirty);
    close_ctrl(c, batch);
}

/* Peers that change while a pod's creation is out (its body has the old ones): the pod cannot
 * be re-created till its answer, which must then ask for the cycle that re-creates it. The
 * echo came first and nothing else is to come: without it, test_kube_jobs' shrinking edit
 * waited forever for worker 0 with its new peers when that answer was the last event. */
static void test_creation_out_when_peers_change_recreated(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a");
    ctrl_event *batch = NULL;
    int32_t cap = 0, s, a;
    drv_ctrl *c = creation_out(f, &batch, &cap, &s, &a);
    int32_t j = c->mirror.st.pods[s].job;
    ctrl_event e = echo(c, "node-a", "Pending");
    assert_int_equal(ctrl_apply_events(c, &e, 1), 0);
    c->mirror.jobs[j].env_gen++; /* (as the lifecycle's rerender does when the counts change) */
    ctrl_lifecycle_reconcile(&c->lifecycle, j);
    assert_int_equal(c->mirror.pods[s].inflight, REQ_CREATE); /* (not deleted while out) */
    c->mirror.dirty = false;
    drv_diag d = {{0}};
    assert_int_equal(ctrl_binder_start(&c->binder, &d), 0);
    apply_answer(c, &batch, &cap);
    assert_true(c->mirror.dirty);
    ctrl_lifecycle_reconcile(&c->lifecycle, j); /* (the cycle's) */
    assert_int_equal(c->mirror.pods[s].inflight, REQ_DELETE);
    assert_int_equal(c->mirror.pods[s].want, a); /* created again where it is */
    close_ctrl(c, batch);
}

/* A job of BIG workers that request nothing (so that one node takes them all). */
enum { BIG = 70 };
static const char *const job_big =
    "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{\"name\":"
    "\"big\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":"
    "70,\"template\":{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"t\"}]}}}}}}";

/* Applies events until want answers came; fails after many empty takes. */
static void take_answers(drv_ctrl *c, ctrl_event **batch, int32_t *cap, int want)
{
    int got = 0;
    for (int i = 0; i < 3000 && got < want; i++) {
        int32_t n = ctrl_events_take(&c->events, batch, cap, drv_clock_mono() + 0.01);
        for (int32_t k = 0; k < n; k++)
            got += (*batch)[k].kind == EV_ANSWER;
        assert_int_equal(ctrl_apply_events(c, *batch, n), 0);
    }
    assert_int_equal(got, want);
}

/* Between ctrl_binder_hold and ctrl_binder_flush (a cycle), requests reach the binder threads'
 * queue in batches of 64: none before the 64th, the rest at the flush, each once, in the order
 * placed, with its paths. What is staged or queued when the controller stops leading is
 * answered as dropped, each assumption undone. */
static void test_held_requests_go_in_batches(void **state)
{
    fixture *f = *state;
    ctrl_event *batch = NULL;
    int32_t cap = 0;
    drv_ctrl *c = one_job_idle(f, job_big, &batch, &cap);
    drv_state *st = &c->mirror.st;
    bind_ring *q = &c->binder.send.ring[SEND_URGENT];
    int32_t node = c->mirror.node_of[ctrl_name_find(&c->names, "node-a")];
    for (int round = 0; round < 2; round++) {
        ctrl_binder_hold(&c->binder);
        for (int i = 0; i < BIG; i++) {
            int32_t s = drv_job_pod(st, 0, DRV_ROLE_WORKER, i);
            drv_state_bind(st, s, node);
            assert_int_equal(ctrl_binder_place(&c->binder, s, node), 0);
            assert_int_equal(c->mirror.pods[s].inflight, REQ_CREATE);
            assert_int_equal(q->n, i < 63 ? 0 : 64);
        }
        if (round == 1)
            break;
        ctrl_send_drop(&c->binder.send); /* (64 queued, 6 staged) */
        take_answers(c, &batch, &cap, BIG);
        for (int i = 0; i < BIG; i++) {
            int32_t s = drv_job_pod(st, 0, DRV_ROLE_WORKER, i);
            assert_int_equal(c->mirror.pods[s].inflight, REQ_NONE);
            assert_int_equal(st->pods[s].node, -1);
        }
        ctrl_binder_flush(&c->binder);
        assert_int_equal(q->n, 0);
    }
    ctrl_binder_flush(&c->binder);
    assert_int_equal(q->n, BIG);
    for (int i = 0; i < BIG; i++) {
        const bind_request *r = &q->v[(q->head + i) % q->cap];
        char want[128];
        assert_int_equal(r->slot, drv_job_pod(st, 0, DRV_ROLE_WORKER, i));
        assert_string_equal(r->path, "/api/v1/namespaces/default/pods");
        snprintf(want, sizeof want, "/api/v1/namespaces/default/pods/big-worker-%d", i);
        assert_string_equal(r->pod_path, want);
    }
    drv_diag d = {{0}};
    assert_int_equal(ctrl_binder_start(&c->binder, &d), 0);
    take_answers(c, &batch, &cap, BIG);
    assert_int_equal(drv_ctrl_get_stats(c).created_bound, BIG);
    close_ctrl(c, batch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_conflict_is_read_not_undone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_conflict_on_create_read_as_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binding_404_forgets_the_pod, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pod_being_deleted_holds_its_room, setup, teardown),
        cmocka_unit_test_setup_teardown(test_room_of_a_placement_out_held, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_gang_rolled_back_as_the_api_has_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_finished_job_not_placed_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_gang_rolled_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gang_failed_in_flight_rolled_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_template_node_name_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_creation_body_copied_when_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(test_held_requests_go_in_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_echo_of_a_creation_asks_no_cycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_job_running_after_a_cycle_asks_the_next, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_job_running_after_a_cycle_blind_to_starts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_answer_of_a_peer_recreation_asks_a_cycle, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_creation_out_when_peers_change_recreated, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
