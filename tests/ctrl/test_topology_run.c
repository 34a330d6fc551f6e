/*
 * `drover run --topology` end to end on the test API server (issue 29): a TrainingJob whose
 * role template carries Kueue's kueue.x-k8s.io/podset-required-topology is bound whole within
 * one rack, though the profile's spreading score alone would use both racks; one that no rack
 * holds waits, and its Waiting Event names the level and the largest free rack; one naming a
 * level --topology lacks fails as Invalid, naming the annotation. The same annotations on the
 * pods of another operator's PodGroup bind its gang alike; pods of one group that disagree are
 * not placed, a TopologyDiffers Event naming them.
 */
#include "ctrl_fixture.h"
#include "drover/controller.h"
#include "json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define TJ_PATH "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs"
#define RACK "cloud.provider.com/topology-rack"
#define LEVELS "topology.kubernetes.io/zone," RACK

static int setup(void **state)
{
    return fixture_open(state, (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR,
                                                    .crd_installed = true,
                                                    .podgroup_crd = true});
}

static int teardown(void **state)
{
    return fixture_close(state);
}

/* A Ready node of 8 CPUs in zone z and rack. */
static void rack_node(fixture *f, const char *name, const char *rack)
{
    req(f, "POST", "/api/v1/nodes",
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
        "\"topology.kubernetes.io/zone\":\"z\",\"" RACK "\":\"%s\"}},\"spec\":{},\"status\":{"
        "\"allocatable\":{\"cpu\":\"8\",\"memory\":\"64Gi\"},\"conditions\":[{\"type\":"
        "\"Ready\",\"status\":\"True\"}]}}",
        name, rack);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", name);
    req(f, "PATCH", path, "{\"spec\":{\"taints\":[]}}"); /* (not-ready lifted) */
}

/* Racks rack-a (nodes a0, a1) and rack-b (b0, b1), and drover run with --topology LEVELS. */
static void two_racks(fixture *f, runner *r)
{
    rack_node(f, "a0", "rack-a");
    rack_node(f, "a1", "rack-a");
    rack_node(f, "b0", "rack-b");
    rack_node(f, "b1", "rack-b");
    drv_ctrl_opts o = {.topology = LEVELS};
    start_with(f, r, "gang-fifo", &o);
}

/* A TrainingJob of n workers of 4 CPUs whose template requires one domain of level. */
static void rack_job(fixture *f, const char *name, int n, const char *level)
{
    req(f, "POST", TJ_PATH,
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{"
        "\"replicas\":%d,\"template\":{\"metadata\":{\"annotations\":{"
        "\"kueue.x-k8s.io/podset-required-topology\":\"%s\"}},\"spec\":{\"schedulerName\":"
        "\"drover\",\"containers\":[{\"name\":\"main\",\"image\":\"t\",\"resources\":{"
        "\"requests\":{\"cpu\":\"4\"}}}]}}}}}}",
        name, n, level);
}

/* How many of job's pods are bound, and in how many racks (node names start with the rack). */
static int bound_racks(fixture *f, const char *job, int *racks)
{
    json_t *l = get(f, "/api/v1/namespaces/default/pods");
    int k = 0;
    bool seen[2] = {false, false};
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        json_t *m = json_object_get(p, "metadata");
        const char *j =
            json_string_value(json_object_get(json_object_get(m, "labels"), "drover.dev/job"));
        const char *node =
            json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        if (!j || strcmp(j, job) != 0 || !node)
            continue;
        k++;
        seen[node[0] == 'b'] = true;
    }
    json_decref(l);
    *racks = seen[0] + seen[1];
    return k;
}

/* Whether job's current condition is type with reason (its message into msg). */
static bool cond_msg(fixture *f, const char *job, const char *type, const char *reason, char *msg)
{
    char status[32], why[64];
    return cond_of(f, job, type, status, why, msg) && strcmp(why, reason) == 0;
}

static void test_required_rack(void **state)
{
    fixture *f = *state;
    runner r;
    two_racks(f, &r);
    /* 4 x 4 CPUs: one rack's 16 exactly (spread by the score alone: one pod a node). */
    rack_job(f, "fits", 4, RACK);
    int racks = 0;
    WAIT_FOR(bound_racks(f, "fits", &racks) == 4);
    assert_int_equal(racks, 1);
    /* 5 x 4 CPUs: no rack holds 20; the other rack has 16 free. */
    rack_job(f, "big", 5, RACK);
    char msg[1024] = "";
    WAIT_FOR(events(f, "big", "Waiting", msg, sizeof msg) >= 1);
    assert_non_null(strstr(msg, "needs 20.0 CPUs in one rack (" RACK ")"));
    assert_non_null(strstr(msg, "the largest free rack has 16.0"));
    assert_int_equal(bound_racks(f, "big", &racks), 0);
    /* A level --topology does not list: Invalid, the annotation named. */
    rack_job(f, "odd", 1, "example.com/pod");
    WAIT_FOR(cond_msg(f, "odd", "Failed", "Invalid", msg));
    assert_non_null(strstr(msg, "kueue.x-k8s.io/podset-required-topology: level "
                                "example.com/pod is not one of drover run's --topology levels"));
    stop(&r);
}

/* A pod another operator made for us in PodGroup group, of cpu CPUs, with Kueue's topology
 * annotation ann (its "key":"value" text). */
static void group_pod(fixture *f, const char *name, const char *group, const char *cpu,
                      const char *ann)
{
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
        "\"default\",\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"%s\"},\"annotations\":{%s}},"
        "\"spec\":{\"schedulerName\":\"drover\",\"containers\":[{\"name\":\"main\",\"image\":"
        "\"t\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]}}",
        name, group, ann, cpu);
}

static void add_group(fixture *f, const char *name, int min_member)
{
    req(f, "POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
        "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
        "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{\"minMember\":%d}}",
        name, min_member);
}

/* How many of the pods prefix-0..n-1 are bound, and in how many racks. */
static int group_racks(fixture *f, const char *prefix, int n, int *racks)
{
    int k = 0;
    bool seen[2] = {false, false};
    for (int i = 0; i < n; i++) {
        json_t *p = get(f, "/api/v1/namespaces/default/pods/%s-%d", prefix, i);
        const char *node =
            json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        if (node && *node) {
            k++;
            seen[node[0] == 'b'] = true;
        }
        json_decref(p);
    }
    *racks = seen[0] + seen[1];
    return k;
}

#define REQ_RACK "\"kueue.x-k8s.io/podset-required-topology\":\"" RACK "\""

/* A PodGroup whose pods carry the required-rack annotation lands in one rack (the score alone
 * spreads it over both); one whose pods disagree is not placed, its Event naming both. */
static void test_podgroup_required_rack(void **state)
{
    fixture *f = *state;
    runner r;
    two_racks(f, &r);
    add_group(f, "pg", 4);
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "pg-%d", i);
        group_pod(f, name, "pg", "4", REQ_RACK);
    }
    int racks = 0;
    WAIT_FOR(group_racks(f, "pg", 4, &racks) == 4);
    assert_int_equal(racks, 1);
    /* Two pods, two different annotations: neither is bound. */
    add_group(f, "mix", 2);
    group_pod(f, "mix-0", "mix", "1", REQ_RACK);
    group_pod(f, "mix-1", "mix", "1",
              "\"kueue.x-k8s.io/podset-preferred-topology\":\"topology.kubernetes.io/zone\"");
    char msg[1024] = "";
    WAIT_FOR(events(f, "mix", "TopologyDiffers", msg, sizeof msg) >= 1);
    assert_non_null(strstr(msg, "kueue.x-k8s.io/podset-required-topology: " RACK));
    assert_non_null(
        strstr(msg, "kueue.x-k8s.io/podset-preferred-topology: topology.kubernetes.io/zone"));
    assert_int_equal(group_racks(f, "mix", 2, &racks), 0);
    stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_required_rack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_podgroup_required_rack, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
