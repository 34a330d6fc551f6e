/*
 * test_shared.c - `drover run` on a shared cluster (issue 14, cluster side), end to end against
 * the in-memory test API server (loopback): Node labels and taints against TrainingJobs'
 * nodeSelector, node affinity and tolerations (tolerating jobs land only on the tainted nodes,
 * a non-tolerating one never; a selector no node satisfies says so while other jobs are
 * served), a bad toleration failing its job as Invalid, a missing PriorityClass or Queue holding
 * a job until the object is created (a Queue also when its CRD is applied after start), a
 * Queue's status counting its jobs and their use, a Queue admitting only the namespaces it
 * lists, and the drover.dev/user label honoured only where the Queue says so.
 * Kubelet's part (pod phases) is played by the test where needed.
 */
#include "ctrl_fixture.h"
#include "shared_fixture.h"
#include "rbac_check.h"
#include "drover/controller.h"
#include "drover/policy.h"
#include "json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* A Ready node with cpu CPUs, its labels and taints (JSON object and list) as given. */
static void add_node_with(fixture *f, const char *name, const char *cpu, const char *labels,
                          const char *taints)
{
    req(f, "POST", "/api/v1/nodes",
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":%s},"
        "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"64Gi\"},"
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
        name, labels, cpu);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", name);
    req(f, "PATCH", path, "{\"spec\":{\"taints\":%s}}", taints); /* (not-ready lifted) */
}

/* Whether job's condition of type is True with reason (its message into msg when given). */
static bool cond(fixture *f, const char *job, const char *type, const char *reason, char *msg,
                 size_t n)
{
    json_t *o = get(f, TJ_PATH "/%s", job);
    bool yes = false;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(o, "status"), "conditions"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        const char *s = json_string_value(json_object_get(c, "status"));
        const char *r = json_string_value(json_object_get(c, "reason"));
        if (t && s && r && !strcmp(t, type) && !strcmp(s, "True") && !strcmp(r, reason)) {
            yes = true;
            if (msg)
                snprintf(msg, n, "%s", json_string_value(json_object_get(c, "message")));
        }
    }
    json_decref(o);
    return yes;
}

static int setup(void **state)
{
    return fixture_open(
        state,
        (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR, .crd_installed = true, .queue_crd = true});
}

/* The same with PodGroups served (deploy/podgroup-crd.yaml). */
static int setup_pg(void **state)
{
    return fixture_open(state, (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR,
                                                    .crd_installed = true,
                                                    .queue_crd = true,
                                                    .podgroup_crd = true});
}

/* The TrainingJob CRD only: Queues are not served until a test applies their CRD. */
static int setup_no_queue_crd(void **state)
{
    return fixture_open(state,
                        (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR, .crd_installed = true});
}

static int teardown(void **state)
{
    return fixture_close(state);
}

#define GPU_LABELS "{\"pool\":\"gpu\",\"kubernetes.io/hostname\":\"%s\"}"
#define GPU_TAINT "[{\"key\":\"gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"}]"
#define TOLERATE_GPU                                                                               \
    "\"nodeSelector\":{\"pool\":\"gpu\"},\"tolerations\":[{\"key\":\"gpu\",\"operator\":"          \
    "\"Exists\",\"effect\":\"NoSchedule\"}],"

/* Two tainted GPU nodes and two plain ones: the tolerating job goes only to the first, the
 * plain job only to the second, although both would fit anywhere by room; a job selecting a
 * pool no node has waits and says why, and a preference for a zone is followed. */
static void test_taints_and_selectors(void **state)
{
    fixture *f = *state;
    char labels[256];
    for (int i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof name, "gpu-%d", i);
        snprintf(labels, sizeof labels, GPU_LABELS, name);
        add_node_with(f, name, "8", labels, GPU_TAINT);
        snprintf(name, sizeof name, "cpu-%d", i);
        snprintf(labels, sizeof labels, "{\"pool\":\"cpu\",\"zone\":\"z%d\"}", i);
        add_node_with(f, name, "8", labels, "[]");
    }
    runner r;
    start_synced(f, &r);
    add_tj(f, "tol", 4, "2", "", TOLERATE_GPU);
    add_tj(f, "tol2", 1, "2", "", TOLERATE_GPU); /* (the same constraint, known by its text) */
    add_tj(f, "plain", 4, "2", "", "");
    add_tj(f, "tpu", 1, "1", "", "\"nodeSelector\":{\"pool\":\"tpu\"},");
    add_tj(f, "pref", 1, "1", "",
           "\"affinity\":{\"nodeAffinity\":{\"preferredDuringSchedulingIgnoredDuringExecution\":"
           "[{\"weight\":100,\"preference\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":"
           "\"In\",\"values\":[\"z1\"]}]}}]}},");
    char nodes[512], msg[512];
    WAIT_FOR(bound(f, "tol", NULL, 0) == 4 && bound(f, "plain", NULL, 0) == 4 &&
             bound(f, "pref", NULL, 0) == 1 && bound(f, "tol2", NULL, 0) == 1);
    bound(f, "tol", nodes, sizeof nodes);
    assert_null(strstr(nodes, "cpu-"));
    bound(f, "tol2", nodes, sizeof nodes);
    assert_null(strstr(nodes, "cpu-"));
    bound(f, "plain", nodes, sizeof nodes);
    assert_null(strstr(nodes, "gpu-"));
    bound(f, "pref", nodes, sizeof nodes);
    assert_string_equal(nodes, "cpu-1,");
    WAIT_FOR(cond(f, "tpu", "Queued", "NoNodeMatches", msg, sizeof msg));
    assert_non_null(strstr(msg, "nodeSelector label pool=tpu"));
    WAIT_FOR(events(f, "tpu", "NoNodeMatches", msg, sizeof msg) == 1);
    assert_int_equal(bound(f, "tpu", NULL, 0), 0);
    stop(&r);
}

/* A job that tolerates nothing, on a cluster whose only free room is tainted, waits and its
 * Event names the taint; one given a bad toleration fails as Invalid naming the field. */
static void test_untolerated_taint_and_invalid(void **state)
{
    fixture *f = *state;
    add_node_with(f, "gpu-0", "8", "{\"pool\":\"gpu\"}", GPU_TAINT);
    runner r;
    start_synced(f, &r);
    add_tj(f, "plain", 1, "1", "", "");
    add_tj(f, "bad", 1, "1", "",
           "\"tolerations\":[{\"key\":\"gpu\",\"operator\":\"Exists\",\"effect\":\"Never\"}],");
    char msg[512];
    WAIT_FOR(cond(f, "plain", "Queued", "NoNodeMatches", msg, sizeof msg));
    assert_non_null(strstr(msg, "taint gpu=true:NoSchedule"));
    WAIT_FOR(cond(f, "bad", "Failed", "Invalid", msg, sizeof msg));
    assert_non_null(
        strstr(msg, "spec.replicaSpecs.Worker.template.spec.tolerations[0].effect: expected"));
    WAIT_FOR(events(f, "bad", "Invalid", NULL, 0) == 1);
    assert_int_equal(bound(f, "plain", NULL, 0), 0);
    /* (the taint lifted, plain is placed when some node next gains room, not at once: the
     * core's failed-gang memo ignores taint changes; docs/running.md, "What it does not do
     * yet") */
    stop(&r);
}

/* A job naming a PriorityClass that does not exist is held (condition and Event) while another
 * is served, and placed once the class is created. */
static void test_missing_priority_class(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    add_tj(f, "vip", 2, "1", "\"priorityClassName\":\"high\",", "");
    add_tj(f, "other", 2, "1", "", "");
    char msg[512];
    WAIT_FOR(cond(f, "vip", "Queued", "PriorityClassMissing", msg, sizeof msg));
    assert_non_null(strstr(msg, "PriorityClass high"));
    WAIT_FOR(events(f, "vip", "PriorityClassMissing", NULL, 0) == 1);
    WAIT_FOR(bound(f, "other", NULL, 0) == 2);
    assert_int_equal(bound(f, "vip", NULL, 0), 0);
    req(f, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
        "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":{"
        "\"name\":\"high\"},\"value\":1000}");
    WAIT_FOR(bound(f, "vip", NULL, 0) == 2);
    assert_int_equal(events(f, "vip", "PriorityClassMissing", NULL, 0), 1); /* said once */
    stop(&r);
}

/* The used cpu a Queue's status shows ("" when none). */
static void queue_status(fixture *f, const char *name, char *cpu, size_t n, int *pending,
                         int *admitted)
{
    json_t *q = get(f, "/apis/drover.dev/v1alpha1/queues/%s", name);
    json_t *st = json_object_get(q, "status");
    const char *c = json_string_value(json_object_get(json_object_get(st, "used"), "cpu"));
    snprintf(cpu, n, "%s", c ? c : "");
    *pending = (int)json_integer_value(json_object_get(st, "pending"));
    *admitted = (int)json_integer_value(json_object_get(st, "admitted"));
    json_decref(q);
}

/* A job naming a Queue that does not exist is held, and admitted once the Queue is created;
 * the Queue's status then counts it and the room its pods take. */
static void test_missing_queue_then_status(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    add_tj(f, "res", 3, "1500m", "\"queue\":\"research\",", "");
    char msg[512];
    WAIT_FOR(cond(f, "res", "Queued", "QueueMissing", msg, sizeof msg));
    assert_non_null(strstr(msg, "Queue research, which does not exist"));
    WAIT_FOR(events(f, "res", "QueueMissing", NULL, 0) == 1);
    req(f, "POST", "/apis/drover.dev/v1alpha1/queues",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
        "\"research\"},\"spec\":{\"weight\":2,\"nominalQuota\":{\"cpu\":\"6\"}}}");
    WAIT_FOR(bound(f, "res", NULL, 0) == 3);
    char cpu[32];
    int pending = -1, admitted = -1;
    WAIT_FOR((queue_status(f, "research", cpu, sizeof cpu, &pending, &admitted),
              !strcmp(cpu, "4500m") && admitted == 1 && pending == 0));
    stop(&r);
}

/* Without queues.drover.dev served at start (setup_no_queue_crd): a job naming a Queue is
 * held, saying the API does not serve Queues; the CRD applied and the Queue created while the
 * controller runs, discovery asked again (every 0.2 s here) finds it and the job is placed, no
 * restart. */
static void test_queue_crd_applied_later(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    drv_profile prof;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_builtin("gang-fifo", &prof, &d), 0);
    drv_ctrl_opts o = {.profile = &prof, .queue_recheck_s = 0.2};
    runner r;
    memset(&r, 0, sizeof r);
    r.cfg = f->cfg;
    r.cfg.component = "run";
    assert_int_equal(drv_ctrl_new(&r.c, &r.cfg, &o, &d), 0);
    assert_int_equal(pthread_create(&r.t, NULL, run_main, &r), 0);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    add_tj(f, "res", 2, "1", "\"queue\":\"research\",", "");
    char msg[512];
    WAIT_FOR(cond(f, "res", "Queued", "QueueMissing", msg, sizeof msg));
    assert_non_null(strstr(msg, "does not serve queues.drover.dev"));
    req(f, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"queues.drover.dev\"},\"spec\":{\"group\":\"drover.dev\","
        "\"scope\":\"Cluster\",\"names\":{\"plural\":\"queues\",\"singular\":\"queue\","
        "\"kind\":\"Queue\",\"listKind\":\"QueueList\"},\"versions\":[{\"name\":\"v1alpha1\","
        "\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}}}]}}");
    req(f, "POST", "/apis/drover.dev/v1alpha1/queues",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
        "\"research\"}}");
    WAIT_FOR(bound(f, "res", NULL, 0) == 2);
    char cpu[32];
    int pending = -1, admitted = -1;
    WAIT_FOR((queue_status(f, "research", cpu, sizeof cpu, &pending, &admitted),
              !strcmp(cpu, "2") && admitted == 1));
    stop(&r);
}

/* The node a pod is bound to ("" when none). */
static void node_of(fixture *f, const char *pod, char *out, size_t n)
{
    json_t *p = get(f, "/api/v1/namespaces/default/pods/%s", pod);
    const char *node = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
    snprintf(out, n, "%s", node ? node : "");
    json_decref(p);
}

/* Labels and taints given to nodes while the controller runs are followed for the jobs that
 * come after; a lone pod of another operator is placed by its own tolerations and selector. */
static void test_node_changes_followed(void **state)
{
    fixture *f = *state;
    add_node(f, "n1", "4");
    add_node(f, "n2", "4");
    runner r;
    start_synced(f, &r);
    /* A probe selecting the label to come: its NoNodeMatches condition goes once the
     * controller has seen the label, and with it the taint given before (one informer, in
     * order). (The probe itself would wait on: a gang that failed is tried again when room
     * grows, docs/running.md.) */
    add_tj(f, "probe", 1, "1", "", "\"nodeSelector\":{\"pool\":\"tpu\"},");
    WAIT_FOR(cond(f, "probe", "Queued", "NoNodeMatches", NULL, 0));
    req(f, "PATCH", "/api/v1/nodes/n1",
        "{\"spec\":{\"taints\":[{\"key\":\"dedicated\",\"value\":\"infer\",\"effect\":"
        "\"NoExecute\"}]}}");
    req(f, "PATCH", "/api/v1/nodes/n2", "{\"metadata\":{\"labels\":{\"pool\":\"tpu\"}}}");
    WAIT_FOR(!cond(f, "probe", "Queued", "NoNodeMatches", NULL, 0));
    drv_diag d = {{0}};
    long status = 0; /* (FIFO: the probe would hold the others back) */
    assert_int_equal(drv_kube_delete(f->k, TJ_PATH "/probe", -1, NULL, &status, &d), 0);
    /* (t asks the same as the probe in other words: the probe's failure, remembered by the
     * core until room grows, is not t's) */
    add_tj(f, "t", 1, "1", "",
           "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":"
           "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":"
           "\"In\",\"values\":[\"tpu\"]}]}]}}},");
    add_tj(f, "p", 1, "1", "", "");
    char nodes[128];
    WAIT_FOR(bound(f, "t", NULL, 0) == 1 && bound(f, "p", NULL, 0) == 1);
    bound(f, "t", nodes, sizeof nodes);
    assert_string_equal(nodes, "n2,");
    bound(f, "p", nodes, sizeof nodes);
    assert_string_equal(nodes, "n2,"); /* (n1's taint is not tolerated) */
    /* another operator's lone pod, tolerating n1's taint and selecting nothing: n2 is full
     * after one more, n1 takes it */
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"infer-0\"},"
        "\"spec\":{\"schedulerName\":\"drover\",\"tolerations\":[{\"key\":\"dedicated\","
        "\"operator\":\"Equal\",\"value\":\"infer\"}],\"nodeSelector\":{\"pool\":\"tpu\"},"
        "\"containers\":[{\"name\":\"m\",\"image\":\"t\",\"resources\":{\"requests\":{"
        "\"cpu\":\"1\"}}}]}}");
    char node[64];
    WAIT_FOR((node_of(f, "infer-0", node, sizeof node), node[0] != 0));
    assert_string_equal(node, "n2"); /* (its selector: pool=tpu) */
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"infer-1\"},"
        "\"spec\":{\"schedulerName\":\"drover\",\"tolerations\":[{\"key\":\"dedicated\","
        "\"operator\":\"Equal\",\"value\":\"infer\"}],\"containers\":[{\"name\":\"m\","
        "\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]}}");
    WAIT_FOR((node_of(f, "infer-1", node, sizeof node), node[0] != 0));
    assert_string_equal(node, "n1"); /* (n2 has 1 CPU left; it tolerates n1's taint) */
    stop(&r);
}

/* Another operator's PodGroup naming a Queue (Volcano's spec.queue) that does not exist
 * waits, a Warning Event on it saying so, and is placed once the Queue is created. */
static void test_podgroup_queue(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    req(f, "POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
        "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\",\"metadata\""
        ":{\"name\":\"vg\",\"namespace\":\"default\"},\"spec\":{\"minMember\":2,"
        "\"queue\":\"team\"}}");
    for (int i = 0; i < 2; i++)
        req(f, "POST", "/api/v1/namespaces/default/pods",
            "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"vg-%d\","
            "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"vg\"}},\"spec\":{"
            "\"schedulerName\":\"drover\",\"containers\":[{\"name\":\"m\",\"image\":\"t\","
            "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}",
            i);
    char msg[512], node[64];
    WAIT_FOR(events(f, "vg", "QueueMissing", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "Queue team, which does not exist"));
    node_of(f, "vg-0", node, sizeof node);
    assert_string_equal(node, "");
    req(f, "POST", "/apis/drover.dev/v1alpha1/queues",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
        "\"team\"}}");
    WAIT_FOR((node_of(f, "vg-1", node, sizeof node), node[0] != 0));
    char cpu[32];
    int pending = -1, admitted = -1;
    WAIT_FOR((queue_status(f, "team", cpu, sizeof cpu, &pending, &admitted),
              !strcmp(cpu, "2") && admitted == 1));
    stop(&r);
}

/* A Queue called name with spec fields spec (JSON members, "" for none). */
static void add_queue(fixture *f, const char *name, const char *spec)
{
    req(f, "POST", "/apis/drover.dev/v1alpha1/queues",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
        "\"%s\"},\"spec\":{%s}}",
        name, spec);
}

/* A Queue whose spec.namespaces does not list a job's namespace holds the job (condition and
 * one Event, QueueNotAllowed) while a job of the default queue is served; the Queue edited to
 * list the namespace, the job is placed. */
static void test_queue_namespaces(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    add_queue(f, "team", "\"namespaces\":[\"team-a\"]");
    add_tj(f, "intruder", 2, "1", "\"queue\":\"team\",", "");
    add_tj(f, "other", 2, "1", "", "");
    char msg[512];
    WAIT_FOR(cond(f, "intruder", "Queued", "QueueNotAllowed", msg, sizeof msg));
    assert_non_null(strstr(msg, "Queue team, whose spec.namespaces does not list namespace "
                                "default"));
    WAIT_FOR(events(f, "intruder", "QueueNotAllowed", NULL, 0) == 1);
    WAIT_FOR(bound(f, "other", NULL, 0) == 2);
    assert_int_equal(bound(f, "intruder", NULL, 0), 0);
    req(f, "PATCH", "/apis/drover.dev/v1alpha1/queues/team",
        "{\"spec\":{\"namespaces\":[\"team-a\",\"default\"]}}");
    WAIT_FOR(bound(f, "intruder", NULL, 0) == 2);
    stop(&r);
}

/* A TrainingJob (name, more spec fields) of one worker, labelled drover.dev/user=alice. */
#define LABELLED_TJ                                                                                \
    "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"              \
    "\"name\":\"%s\",\"namespace\":\"default\",\"labels\":{\"drover.dev/user\":\"alice\"}},"       \
    "\"spec\":{%s\"replicaSpecs\":{\"Worker\":{\"replicas\":1,\"template\":{\"spec\":{"            \
    "\"schedulerName\":\"drover\",\"containers\":[{\"name\":\"main\",\"image\":\"t\","             \
    "\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}"

/* A TrainingJob labelled drover.dev/user: its label is ignored, with a Warning Event, unless
 * its Queue says spec.userFromLabel (then no Event). */
static void test_user_label_trust(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    add_queue(f, "vouched", "\"userFromLabel\":true");
    req(f, "POST", TJ_PATH, LABELLED_TJ, "claims", "");
    char msg[512];
    WAIT_FOR(events(f, "claims", "UserLabelIgnored", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "drover.dev/user=alice ignored"));
    assert_non_null(strstr(msg, "its user for fair share is its namespace, default"));
    req(f, "POST", TJ_PATH, LABELLED_TJ, "vouched", "\"queue\":\"vouched\",");
    WAIT_FOR(bound(f, "vouched", NULL, 0) == 1);
    WAIT_FOR(bound(f, "claims", NULL, 0) == 1);
    assert_int_equal(events(f, "vouched", "UserLabelIgnored", NULL, 0), 0);
    assert_int_equal(events(f, "claims", "UserLabelIgnored", NULL, 0), 1);
    stop(&r);
}

/* A job whose queue's quota is what holds it back: its Waiting Event says so, with the
 * numbers; a job in the default queue is served meanwhile. */
static void test_quota_named_in_waiting_event(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    req(f, "POST", "/apis/drover.dev/v1alpha1/queues",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
        "\"small\"},\"spec\":{\"cohort\":\"lab\",\"nominalQuota\":{\"cpu\":\"2\"},"
        "\"borrowingLimit\":{\"cpu\":\"1\"}}}");
    runner r;
    start_synced(f, &r);
    add_tj(f, "big", 3, "2", "", "");
    WAIT_FOR(bound(f, "big", NULL, 0) == 3);
    add_tj(f, "q", 2, "2", "\"queue\":\"small\",", "");
    char msg[512];
    WAIT_FOR(events(f, "q", "Waiting", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "queue small: cpu 0.0 used + 4.0 wanted > nominal quota 2.0"));
    assert_non_null(strstr(msg, "cohort lab lends 0.0 now")); /* (no other queue in lab) */
    assert_int_equal(bound(f, "q", NULL, 0), 0);
    stop(&r);
}

/* A preempted job (Tiresias demotes it once it has had its share) has its pods deleted with
 * their terminationGracePeriodSeconds, not at once, and an Event names who took its place. */
static void test_preemption_keeps_grace_and_says_why(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    drv_profile prof;
    start_text(f, &r,
               "gang=true period=1 queue_order=tiresias(threshold=1) admit=tiresias(threshold=1) "
               "migrate=tiresias(threshold=1)",
               &prof);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    add_tj(f, "a", 2, "4", "", "\"terminationGracePeriodSeconds\":45,");
    WAIT_FOR(bound(f, "a", NULL, 0) == 2);
    kubelet(f, "a", 45);
    add_tj(f, "b", 2, "4", "", "");
    WAIT_FOR(kubelet(f, "a", 45) == 2);
    char msg[512];
    WAIT_FOR(events(f, "a", "Preempted", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "preempted by default/b"));
    assert_non_null(strstr(msg, "grace period"));
    assert_int_equal(bound(f, "b", NULL, 0), 0); /* (a's pods hold the room until gone) */
    stop(&r);
}

/* PriorityClasses drive preemption through drover run: a gang of class high preempts a
 * running gang of class low (the preempt plugin), whose Event names its preemptor and both
 * priorities. */
static void test_priority_class_preempts(void **state)
{
    fixture *f = *state;
    runner r;
    drv_profile prof;
    preemption_scene(f, &r,
                     "gang=true period=1 queue_order=priority admit=gang score=least-allocated "
                     "migrate=preempt",
                     &prof);
    WAIT_FOR(kubelet(f, "low-a", 30) == 2);
    char msg[512];
    WAIT_FOR(events(f, "low-a", "Preempted", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "preempted by default/vip (priority 1000; this job's 0)"));
    stop(&r);
}

/* Two gangs that each need three quarters of the cluster (the case of Volcano's and Kueue's
 * issues where each holds part of it and neither can start, until a timeout requeues one):
 * submitted together, one is bound whole and the other waits whole, saying why, with none of
 * its pods bound; once the first has finished the second is bound whole. No timeout, no
 * requeue, no pod of a gang left bound alone. */
static void test_half_fitting_gangs_no_deadlock(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    add_node(f, "node-b", "8");
    add_tj(f, "ga", 2, "6", "", "");
    add_tj(f, "gb", 2, "6", "", "");
    runner r;
    start(f, &r);
    WAIT_FOR(bound(f, "ga", NULL, 0) + bound(f, "gb", NULL, 0) == 2);
    bool a_first = bound(f, "ga", NULL, 0) == 2;
    const char *first = a_first ? "ga" : "gb", *second = a_first ? "gb" : "ga";
    WAIT_FOR(events(f, second, "Waiting", NULL, 0) == 1);
    assert_int_equal(bound(f, first, NULL, 0), 2);
    assert_int_equal(bound(f, second, NULL, 0), 0);
    char pod_name[64];
    for (int i = 0; i < 2; i++) {
        snprintf(pod_name, sizeof pod_name, "%s-worker-%d", first, i);
        set_phase(f, pod_name, "Succeeded");
    }
    WAIT_FOR(bound(f, second, NULL, 0) == 2);
    WAIT_FOR(cond(f, first, "Succeeded", "JobSucceeded", NULL, 0));
    stop(&r);
}

/* Whether pod name is being deleted (its deletionTimestamp set) and still there. */
static bool deleting(fixture *f, const char *name)
{
    json_t *p = pod(f, name);
    bool yes = json_object_get(json_object_get(p, "metadata"), "deletionTimestamp") != NULL;
    json_decref(p);
    return yes;
}

/* A Queue of 4 CPUs, full with job a (a Chief and a Worker of 2 CPUs each, 30 s of grace):
 * when a's chief succeeds, a is over and its running worker is deleted, with grace; while that
 * worker still runs (its deletionTimestamp set, the pod present) it holds its queue's use, so
 * job b of the same queue (4 CPUs) is not bound, though the node has room, until the worker is
 * gone (issue 26). Job c of the default queue, submitted after the deletion, is bound
 * meanwhile: the cycles that could have bound b have run. */
static void test_terminating_pod_holds_quota(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "16");
    req(f, "POST", "/apis/drover.dev/v1alpha1/queues",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
        "\"q4\"},\"spec\":{\"nominalQuota\":{\"cpu\":\"4\"}}}");
    runner r;
    start_synced(f, &r);
    static const char *const role = "{\"replicas\":1,\"template\":{\"spec\":{"
                                    "\"terminationGracePeriodSeconds\":30,\"schedulerName\":"
                                    "\"drover\",\"containers\":[{\"name\":\"main\","
                                    "\"image\":\"t\",\"resources\":{\"requests\":{"
                                    "\"cpu\":\"2\"}}}]}}}";
    req(f, "POST", TJ_PATH,
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"a\",\"namespace\":\"default\"},\"spec\":{\"queue\":\"q4\","
        "\"replicaSpecs\":{\"Chief\":%s,\"Worker\":%s}}}",
        role, role);
    WAIT_FOR(bound(f, "a", NULL, 0) == 2);
    kubelet(f, "a", 30);
    add_tj(f, "b", 2, "2", "\"queue\":\"q4\",", "");
    WAIT_FOR(events(f, "b", "Waiting", NULL, 0) == 1);
    set_phase(f, "a-chief-0", "Succeeded");
    WAIT_FOR(deleting(f, "a-worker-0")); /* (its worker being deleted, still there) */
    add_tj(f, "c", 1, "1", "", "");
    WAIT_FOR(bound(f, "c", NULL, 0) == 1);
    assert_true(pod_exists(f, "a-worker-0"));
    assert_int_equal(bound(f, "b", NULL, 0), 0);
    req(f, "DELETE", "/api/v1/namespaces/default/pods/a-worker-0",
        "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"gracePeriodSeconds\":0}");
    WAIT_FOR(bound(f, "b", NULL, 0) == 2);
    stop(&r);
}

/* Pods of jobs whose name starts with prefix that are bound and have not ended; the name of the
 * first such pod into first (n bytes) when given. */
static int running(fixture *f, const char *prefix, char *first, size_t n)
{
    json_t *l = get(f, "/api/v1/namespaces/default/pods");
    int k = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        json_t *m = json_object_get(p, "metadata");
        const char *name = json_string_value(json_object_get(m, "name"));
        const char *phase =
            json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
        if (!name || strncmp(name, prefix, strlen(prefix)) != 0 ||
            !json_object_get(json_object_get(p, "spec"), "nodeName") ||
            json_object_get(m, "deletionTimestamp") || (phase && !strcmp(phase, "Succeeded")))
            continue;
        if (first && k == 0)
            snprintf(first, n, "%s", name);
        k++;
    }
    json_decref(l);
    return k;
}

/* Two queues of equal weight through drover run with the fairshare queue order: queue a fills
 * the cluster (8 jobs of 2 CPUs on 16) before queue b submits; as a's jobs end one by one, the
 * room goes to b until both hold 8 CPUs, and stays even after (no preemption: shares move only
 * as jobs end). */
static void test_equal_weights_converge(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    add_node(f, "node-b", "8");
    for (int q = 0; q < 2; q++)
        req(f, "POST", "/apis/drover.dev/v1alpha1/queues",
            "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{"
            "\"name\":\"%c\"},\"spec\":{\"weight\":1}}",
            "ab"[q]);
    runner r;
    drv_profile prof;
    start_text(f, &r, "gang=true period=1 queue_order=fairshare admit=gang score=least-allocated",
               &prof);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    char name[32];
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "a-%d", i);
        add_tj(f, name, 1, "2", "\"queue\":\"a\",", "");
    }
    WAIT_FOR(running(f, "a-", NULL, 0) == 8);
    for (int i = 0; i < 10; i++) {
        snprintf(name, sizeof name, "b-%d", i);
        add_tj(f, name, 1, "2", "\"queue\":\"b\",", "");
    }
    /* the controller has seen every b job waiting (they come in order), so the first room
     * freed is not given to a's own waiting jobs for want of knowing b's */
    WAIT_FOR(events(f, "b-9", "Waiting", NULL, 0) == 1);
    /* five of a's jobs end, one at a time: b gains until even, then a takes its own back */
    for (int round = 1; round <= 5; round++) {
        char pod_name[64];
        assert_true(running(f, "a-", pod_name, sizeof pod_name) > 0);
        set_phase(f, pod_name, "Succeeded");
        int want_b = round < 4 ? round : 4;
        WAIT_FOR(running(f, "a-", NULL, 0) == 8 - want_b && running(f, "b-", NULL, 0) == want_b);
    }
    assert_int_equal(running(f, "a-", NULL, 0), 4);
    assert_int_equal(running(f, "b-", NULL, 0), 4);
    stop(&r);
}

/* A Queue's status.usage ("" when absent). */
static void queue_usage(fixture *f, const char *name, char *usage, size_t n)
{
    json_t *q = get(f, "/apis/drover.dev/v1alpha1/queues/%s", name);
    const char *u = json_string_value(json_object_get(json_object_get(q, "status"), "usage"));
    snprintf(usage, n, "%s", u ? u : "");
    json_decref(q);
}

/* Fair share over time through drover run: with the profile's half_life (0.5 s here), the Queue
 * status shows the queue's decayed usage, which converges to its share while its job holds half
 * the cluster (0.500), and decays to 0 once the job has ended; without half_life there is no
 * status.usage at all. No timing is asserted: only where the usage converges to. */
static void test_decayed_usage_status(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    req(f, "POST", "/apis/drover.dev/v1alpha1/queues",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{"
        "\"name\":\"research\"},\"spec\":{\"weight\":1}}");
    runner r;
    drv_profile prof;
    start_text(f, &r,
               "gang=true period=0.1 half_life=0.5 queue_order=fairshare admit=gang "
               "score=least-allocated",
               &prof);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    add_tj(f, "res", 1, "4", "\"queue\":\"research\",", "");
    WAIT_FOR(bound(f, "res", NULL, 0) == 1);
    char usage[32];
    WAIT_FOR((queue_usage(f, "research", usage, sizeof usage), !strcmp(usage, "0.500")));
    set_phase(f, "res-worker-0", "Succeeded");
    WAIT_FOR(cond(f, "res", "Succeeded", "JobSucceeded", NULL, 0));
    WAIT_FOR((queue_usage(f, "research", usage, sizeof usage), !strcmp(usage, "0.000")));
    stop(&r);
    /* half-life 0: the same queue's status loses its usage (now only: nothing to show) */
    start_text(f, &r, "gang=true period=0.1 queue_order=fairshare admit=gang", &prof);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    add_tj(f, "res2", 1, "4", "\"queue\":\"research\",", "");
    WAIT_FOR(bound(f, "res2", NULL, 0) == 1);
    int pending = -1, admitted = -1;
    char cpu[32];
    WAIT_FOR(
        (queue_status(f, "research", cpu, sizeof cpu, &pending, &admitted), !strcmp(cpu, "4")));
    queue_usage(f, "research", usage, sizeof usage);
    assert_string_equal(usage, "");
    stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_taints_and_selectors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_untolerated_taint_and_invalid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_changes_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_priority_class, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_queue_then_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_crd_applied_later, setup_no_queue_crd, teardown),
        cmocka_unit_test_setup_teardown(test_quota_named_in_waiting_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_namespaces, setup, teardown),
        cmocka_unit_test_setup_teardown(test_user_label_trust, setup, teardown),
        cmocka_unit_test_setup_teardown(test_podgroup_queue, setup_pg, teardown),
        cmocka_unit_test_setup_teardown(test_preemption_keeps_grace_and_says_why, setup, teardown),
        cmocka_unit_test_setup_teardown(test_priority_class_preempts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_terminating_pod_holds_quota, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_fitting_gangs_no_deadlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_equal_weights_converge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_decayed_usage_status, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
