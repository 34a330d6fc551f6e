/*
 * `drover run --topology` end to end on the test API server (issue 29): a TrainingJob whose
 * role template carries Kueue's kueue.x-k8s.io/podset-required-topology is bound whole within
 * one rack, though the profile's spreading score alone would use both racks; one that no rack
 * holds waits, and its Waiting Event names the level and the largest free rack; one naming a
 * level --topology lacks fails as Invalid, naming the annotation. The same annotations on the
 * pods of another operator's PodGroup bind its gang alike; pods of one group that disagree are
 * not placed, a TopologyDiffers Event naming them. kubernetes.io/hostname as the lowest level
 * makes each node its own domain. The defrag plugin's migration for a rack-bound gang waits for
 * the moved job's checkpoint (the handshake of test_checkpoint.c).
 */
#include "drover/controller.h"
#include "drover/state.h"
#include "shared_fixture.h"
#include "json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

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
    char nodes[512];
    int k = bound(f, job, nodes, sizeof nodes);
    bool seen[2] = {false, false};
    for (const char *n = nodes; *n; n = strchr(n, ',') + 1)
        seen[n[0] == 'b'] = true;
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

/* --topology zone,rack,kubernetes.io/hostname: the nodes carry no hostname label (the test API
 * server sets none; a real one does, and Drover leaves it out of a node's class), yet each
 * node is a domain of its own: a gang of 2 x 4 CPUs required on one hostname lands both pods
 * on one node (the spreading score alone puts them on two); one of 3 x 4 waits, its Event
 * naming the largest free node. */
static void test_required_hostname(void **state)
{
    fixture *f = *state;
    runner r;
    rack_node(f, "a0", "rack-a");
    rack_node(f, "a1", "rack-a");
    rack_node(f, "b0", "rack-b");
    drv_ctrl_opts o = {.topology = LEVELS "," DRV_TOPO_HOSTNAME};
    start_with(f, &r, "gang-fifo", &o);
    rack_job(f, "pair", 2, DRV_TOPO_HOSTNAME);
    char nodes[128] = "";
    WAIT_FOR(bound(f, "pair", nodes, sizeof nodes) == 2);
    const char *second = strchr(nodes, ',') + 1;
    assert_memory_equal(nodes, second, (size_t)(second - nodes));
    rack_job(f, "three", 3, DRV_TOPO_HOSTNAME);
    char msg[1024] = "";
    WAIT_FOR(events(f, "three", "Waiting", msg, sizeof msg) >= 1);
    assert_non_null(strstr(msg, "needs 12.0 CPUs in one node (" DRV_TOPO_HOSTNAME ")"));
    assert_non_null(strstr(msg, "the largest free node has 8.0"));
    assert_int_equal(bound(f, "three", NULL, 0), 0);
    stop(&r);
}

/* A Ready node of 8 CPUs in zone z with no rack label. */
static void bare_node(fixture *f, const char *name)
{
    req(f, "POST", "/api/v1/nodes",
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
        "\"topology.kubernetes.io/zone\":\"z\"}},\"spec\":{},\"status\":{\"allocatable\":{"
        "\"cpu\":\"8\",\"memory\":\"64Gi\"},\"conditions\":[{\"type\":\"Ready\",\"status\":"
        "\"True\"}]}}",
        name);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", name);
    req(f, "PATCH", path, "{\"spec\":{\"taints\":[]}}"); /* (not-ready lifted) */
}

/* A node without the rack label: one Warning TopologyLabelMissing on the Node naming the key
 * (not repeated when the node changes), and it takes no pod of a gang required in one rack
 * (Kueue's TAS leaves such a node out): a gang of 2 x 4 CPUs lands both on a0, though the
 * spreading score alone would use the empty c0 too. */
static void test_label_missing(void **state)
{
    fixture *f = *state;
    runner r;
    rack_node(f, "a0", "rack-a");
    bare_node(f, "c0");
    drv_ctrl_opts o = {.topology = LEVELS};
    start_with(f, &r, "gang-fifo", &o);
    char msg[1024] = "";
    WAIT_FOR(events(f, "c0", "TopologyLabelMissing", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "node c0 has no label " RACK " (a drover run --topology level)"));
    rack_job(f, "pair", 2, RACK);
    char nodes[128] = "";
    WAIT_FOR(bound(f, "pair", nodes, sizeof nodes) == 2);
    assert_string_equal(nodes, "a0,a0,");
    /* c0 changes (a label), then d0 comes without the rack: once d0's Event is written, c0's
     * change was seen before it (one watch of nodes, in order) and told nothing again. */
    req(f, "PATCH", "/api/v1/nodes/c0", "{\"metadata\":{\"labels\":{\"team\":\"x\"}}}");
    bare_node(f, "d0");
    WAIT_FOR(events(f, "d0", "TopologyLabelMissing", NULL, 0) == 1);
    assert_int_equal(events(f, "c0", "TopologyLabelMissing", NULL, 0), 1);
    assert_int_equal(events(f, "a0", "TopologyLabelMissing", NULL, 0), 0);
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

/* The node of the running job of 1 worker, job, into node (n bytes): whether there is one. */
static bool running_on(fixture *f, const char *job, char *node, size_t n)
{
    node[0] = 0;
    if (bound(f, job, node, n) != 1)
        return false;
    node[strlen(node) - 1] = 0; /* (the trailing comma) */
    kubelet(f, job, 30);
    return now_in(f, job, "Running", NULL);
}

/* The mover among the small jobs xs: the one asked to checkpoint (its request's time into
 * asked, n bytes); NULL while none is. */
static const char *asked_mover(fixture *f, const char *const *xs, char *asked, size_t n)
{
    for (int i = 0; i < 4; i++)
        if (annotation(f, xs[i], "drover.dev/checkpoint-requested", asked, n))
            return xs[i];
    return NULL;
}

/* A migration goes through the checkpoint handshake (issue 29): four small unconstrained jobs
 * of 4 CPUs, one on each node, leave 4 free on each; gang (3 x 4 CPUs, required in one rack)
 * fits no rack, so defrag (wait=0, checkpoint=1, restart=0: a move loses under 4 CPU-s, the
 * gang's wait soon costs more) moves one small job out of a rack. Under checkpoint_timeout the
 * mover's TrainingJob is annotated drover.dev/checkpoint-requested, condition
 * CheckpointRequested True with reason Migration; while it has not answered (a later cycle
 * runs: probe's Event) its pod is not deleted and gang is not bound whole: no pod of gang is on
 * the mover's node, whose room the pod still holds (ctrl_binder_place binds a pod of the gang
 * where there is room already). After checkpoint-done its pod is deleted with its grace period,
 * gang binds within one rack, and the mover runs again in the other rack. With the migration's
 * handshake skipped (send_removal deleting at once) no annotation comes: the test fails at its
 * first wait. */
static void test_migration_waits_for_checkpoint(void **state)
{
    fixture *f = *state;
    runner r;
    rack_node(f, "a0", "rack-a");
    rack_node(f, "a1", "rack-a");
    rack_node(f, "b0", "rack-b");
    rack_node(f, "b1", "rack-b");
    drv_ctrl_opts o = {.topology = LEVELS};
    start_with(f, &r,
               "gang=true period=0.2 checkpoint_timeout=600 queue_order=fifo admit=gang "
               "score=least-allocated migrate=defrag(wait=0;checkpoint=1;restart=0)",
               &o);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    static const char *const xs[] = {"x0", "x1", "x2", "x3"};
    char node[4][64], used[512] = "";
    for (int i = 0; i < 4; i++) { /* (one by one: the spreading score puts each on a new node) */
        add_tj(f, xs[i], 1, "4", "", "\"terminationGracePeriodSeconds\":30,");
        WAIT_FOR(running_on(f, xs[i], node[i], sizeof node[i]));
        assert_null(strstr(used, node[i]));
        snprintf(used + strlen(used), sizeof used - strlen(used), "%s,", node[i]);
    }
    rack_job(f, "gang", 3, RACK);
    char asked[64], status[16], reason[64], msg[512];
    const char *m;
    WAIT_FOR((m = asked_mover(f, xs, asked, sizeof asked)) != NULL);
    /* (cond_of's result says whether it is the job's current condition: Running is) */
    WAIT_FOR((cond_of(f, m, "CheckpointRequested", status, reason, msg), !strcmp(status, "True")));
    assert_string_equal(reason, "Migration");
    add_tj(f, "probe", 1, "16", "", ""); /* (never fits: a later cycle says so) */
    WAIT_FOR(events(f, "probe", "NeverFits", NULL, 0) + events(f, "probe", "Waiting", NULL, 0) >=
             1);
    char pod[64];
    snprintf(pod, sizeof pod, "%s-worker-0", m);
    assert_int_equal(kubelet(f, m, 30), 0);
    assert_true(pod_exists(f, pod));
    char gang_nodes[128];
    assert_true(bound(f, "gang", gang_nodes, sizeof gang_nodes) < 3);
    assert_null(strstr(gang_nodes, node[m[1] - '0']));
    char path[128];
    snprintf(path, sizeof path, TJ_PATH "/%s", m);
    req(f, "PATCH", path,
        "{\"metadata\":{\"annotations\":{\"drover.dev/checkpoint-done\":\"%s\"}}}", asked);
    WAIT_FOR(kubelet(f, m, 30) == 1);
    snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s", pod); /* (its grace over) */
    req(f, "DELETE", path,
        "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0}");
    int racks = 0;
    WAIT_FOR(bound_racks(f, "gang", &racks) == 3);
    assert_int_equal(racks, 1);
    char was = node[m[1] - '0'][0], now[64];
    WAIT_FOR(running_on(f, m, now, sizeof now) && now[0] != was);
    stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_required_rack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_podgroup_required_rack, setup, teardown),
        cmocka_unit_test_setup_teardown(test_required_hostname, setup, teardown),
        cmocka_unit_test_setup_teardown(test_label_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_migration_waits_for_checkpoint, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
