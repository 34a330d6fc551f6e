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
    stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_labels_without_controller_ref_are_not_the_jobs, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
