/*
 * test_ownership.c - which pods `drover run` takes as a TrainingJob's (issue 26), end to end
 * against the in-memory test API server (loopback): only a pod whose controller ownerReference
 * names the job's uid, as Kubeflow's and client-go's ControllerRef adopt. A pod that carries the
 * job's labels (drover.dev/job, role, rank) but another controller, a deleted job's uid, or the
 * job's uid in a reference that is not its controller, stands in for no worker: it is another
 * workload's load on its node, and the job's own pods are created.
 * Kubelet's part (pod phases) is played by the test.
 */
#include "ctrl_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define TJ_PATH "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs"

static int setup(void **state)
{
    return fixture_open(state,
                        (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR, .crd_installed = true});
}

static int teardown(void **state)
{
    return fixture_close(state);
}

/* A running pod of namespace default with schedulerName drover asking 1 CPU, bound to node;
 * meta: more metadata fields ("" or ",..."). */
static void add_pod(fixture *f, const char *name, const char *node, const char *meta)
{
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
        "\"default\"%s},\"spec\":{\"schedulerName\":\"drover\"%s%s%s,\"containers\":[{\"name\":"
        "\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}",
        name, meta, node ? ",\"nodeName\":\"" : "", node ? node : "", node ? "\"" : "");
    if (node)
        set_phase(f, name, "Running");
}

/* A pod labelled as worker rank of TrainingJob tj, bound to node, with the ownerReferences
 * refs (a JSON list). */
static void add_stand_in(fixture *f, const char *name, int rank, const char *refs)
{
    char meta[1024];
    snprintf(meta, sizeof meta,
             ",\"labels\":{\"drover.dev/job\":\"tj\",\"drover.dev/role\":\"worker\","
             "\"drover.dev/rank\":\"%d\"},\"ownerReferences\":%s",
             rank, refs);
    add_pod(f, name, "node-a", meta);
}

/* A TrainingJob's controller reference of uid (controller: true or false). */
#define REF(uid, controller)                                                                       \
    "[{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"name\":\"tj\","           \
    "\"uid\":\"" uid "\",\"controller\":" controller "}]"

/* TrainingJob tj of three workers of 2 CPUs waits, as the cluster has no room; three pods labelled
 * as its workers 0, 1 and 2 then appear on node-a: one controlled by a ReplicaSet, one by a
 * TrainingJob tj deleted before (another uid), one naming tj's uid but not as its controller.
 * None is taken for tj's: once room comes (node-b), tj's own three workers are created and
 * bound there, and the stand-ins are left as they are. (A lone pod of ours, bound after the
 * stand-ins in the pods' watch, shows the controller has read them before node-b comes.) With
 * the labels alone the three would fill tj's slots, and tj's workers would never be created. */
static void test_labels_without_controller_ref_are_not_the_jobs(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "3");
    add_node(f, "node-m", "1");
    runner r;
    start_synced(f, &r);
    req(f, "POST", TJ_PATH,
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"tj\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{"
        "\"replicas\":3,\"template\":{\"spec\":{\"schedulerName\":\"drover\",\"containers\":"
        "[{\"name\":\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]}}}}}"
        "}");
    WAIT_FOR(events(f, "tj", "NeverFits", NULL, 0) >= 1); /* (known, and no pod created) */
    char uid[128];
    tj_uid(f, "tj", uid, sizeof uid);
    add_stand_in(f, "rs-pod", 0,
                 "[{\"apiVersion\":\"apps/v1\",\"kind\":\"ReplicaSet\",\"name\":\"rs\",\"uid\":"
                 "\"5f1c7a1e-0000-4000-8000-00000000aaaa\",\"controller\":true}]");
    add_stand_in(f, "stale-pod", 1, REF("5f1c7a1e-0000-4000-8000-00000000bbbb", "true"));
    char refs[512];
    snprintf(refs, sizeof refs,
             "[{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"name\":\"tj\","
             "\"uid\":\"%s\",\"controller\":false}]",
             uid);
    add_stand_in(f, "ref-pod", 2, refs);
    add_pod(f, "marker", NULL, "");
    WAIT_FOR(pod_bound(f, "marker"));
    add_node(f, "node-b", "8");
    char name[64];
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, "tj-worker-%d", i);
        WAIT_FOR(pod_bound(f, name));
        json_t *p = pod(f, name);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName")), "node-b");
        json_decref(p);
    }
    assert_true(pod_bound(f, "rs-pod") && pod_bound(f, "stale-pod") && pod_bound(f, "ref-pod"));
    /* Each stand-in is said once, by a Warning on tj naming it; a change to one (an annotation)
     * is not said again. */
    WAIT_FOR(events(f, "tj", "PodNotControlled", NULL, 0) == 3);
    char msg[1024];
    events(f, "tj", "PodNotControlled", msg, sizeof msg);
    assert_non_null(strstr(msg, "default/"));
    assert_non_null(strstr(msg, "-pod has this job's labels"));
    req(f, "PATCH", "/api/v1/namespaces/default/pods/rs-pod",
        "{\"metadata\":{\"annotations\":{\"touched\":\"1\"}}}");
    add_pod(f, "marker2", NULL, "");
    WAIT_FOR(pod_bound(f, "marker2")); /* (the controller has seen the change: it came before) */
    assert_int_equal(events(f, "tj", "PodNotControlled", NULL, 0), 3);
    stop(&r);
}

/* The controller ownerReference's uid of pod name ("" when none) into buf. */
static const char *owner_uid(fixture *f, const char *name, char *buf, size_t n)
{
    json_t *p = pod(f, name);
    json_t *ref =
        json_array_get(json_object_get(json_object_get(p, "metadata"), "ownerReferences"), 0);
    const char *u = json_string_value(json_object_get(ref, "uid"));
    snprintf(buf, n, "%s", u ? u : "");
    json_decref(p);
    return buf;
}

/* A pod of another scheduler, unbound and of no controller, holds the name tj's worker 0 would
 * have (tj-worker-0) before tj is created. tj's creation of its worker meets a 409; the pod read
 * after it is not tj's (no controller ownerReference with tj's uid): it is never adopted (never
 * bound by Drover, as the labels-free read once did), a Warning on tj names it, and tj waits.
 * Once the pod is deleted, tj's own worker is created and bound. */
static void test_a_foreign_pod_holding_the_name_is_not_adopted(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "4");
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"tj-worker-0\","
        "\"namespace\":\"default\"},\"spec\":{\"schedulerName\":\"default-scheduler\","
        "\"containers\":[{\"name\":\"main\",\"image\":\"t\"}]}}");
    runner r;
    start_synced(f, &r);
    char specs[512];
    role(specs, sizeof specs, "Worker", 1, "1", "");
    add_job(f, "tj", specs, "");
    char msg[1024];
    WAIT_FOR(events(f, "tj", "PodNameTaken", msg, sizeof msg) >= 1);
    assert_non_null(strstr(msg, "pod default/tj-worker-0 already exists and is not this job's"));
    add_pod(f, "marker", NULL, "");
    WAIT_FOR(pod_bound(f, "marker")); /* (cycles have run since) */
    assert_false(pod_bound(f, "tj-worker-0"));
    assert_int_equal(events(f, "tj", "PodNameTaken", NULL, 0), 1);
    drv_diag d = {{0}};
    long status = 0;
    assert_int_equal(
        drv_kube_delete(f->k, "/api/v1/namespaces/default/pods/tj-worker-0", 0, NULL, &status, &d),
        0);
    WAIT_FOR(pod_bound(f, "tj-worker-0"));
    char uid[128], owner[128];
    assert_string_equal(owner_uid(f, "tj-worker-0", owner, sizeof owner),
                        tj_uid(f, "tj", uid, sizeof uid));
    stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_labels_without_controller_ref_are_not_the_jobs, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_foreign_pod_holding_the_name_is_not_adopted, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
