/*
 * test_podgroups.c - other operators' pods under `drover run`'s controller (issue 13): pods
 * with schedulerName drover and a scheduling.x-k8s.io/pod-group label are placed with their
 * PodGroup all or nothing, and bound (never created); the PodGroup's status is written; a lone
 * pod is a gang of one; a pod naming a missing PodGroup waits with an Event until it appears; a
 * group with fewer pods than minMember waits saying how many are missing; a group that can
 * never fit says so; minResources hold a group back untried while they are not free; a group
 * past its scheduleTimeoutSeconds says so and stays queued. Against the in-memory test API server
 * (loopback); kubelet's part (pod phases) is played by the test. No timing is asserted: each wait
 * is for an observable effect.
 */
#include "ctrl_fixture.h"
#include "rbac_check.h"
#include "drover/controller.h"
#include "drover/kube_types.h"
#include "drover/policy.h"
#include "json.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

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

/* A PodGroup in default. */
static void add_group(fixture *f, const char *name, int min_member)
{
    req(f, "POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
        "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
        "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
        "\"spec\":{\"minMember\":%d}}",
        name, min_member);
}

/* A PodGroup in default with more of its spec (extra: fields after minMember, with a comma). */
static void add_group_with(fixture *f, const char *name, int min_member, const char *extra)
{
    req(f, "POST", "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups",
        "{\"apiVersion\":\"scheduling.x-k8s.io/v1alpha1\",\"kind\":\"PodGroup\","
        "\"metadata\":{\"name\":\"%s\",\"namespace\":\"default\"},"
        "\"spec\":{\"minMember\":%d%s}}",
        name, min_member, extra);
}

/* Another scheduler's pod of cpu CPUs running on node (it takes room Drover must count). */
static void add_blocker(fixture *f, const char *node, const char *cpu)
{
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"blocker\"},"
        "\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"m\",\"image\":\"t\","
        "\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]}}",
        node, cpu);
    set_phase(f, "blocker", "Running");
}

static void remove_blocker(fixture *f)
{
    drv_diag d = {{0}};
    long status = 0;
    assert_int_equal(
        drv_kube_delete(f->k, "/api/v1/namespaces/default/pods/blocker", 0, NULL, &status, &d), 0);
}

/* A pod another operator created for us: schedulerName drover, in group (NULL: alone). */
static void add_pod(fixture *f, const char *name, const char *group, const char *cpu)
{
    char labels[256] = "";
    if (group)
        snprintf(labels, sizeof labels, "\"labels\":{\"scheduling.x-k8s.io/pod-group\":\"%s\"},",
                 group);
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{%s\"name\":\"%s\","
        "\"namespace\":\"default\"},\"spec\":{\"schedulerName\":\"drover\","
        "\"containers\":[{\"name\":\"main\",\"image\":\"t\",\"resources\":{\"requests\":"
        "{\"cpu\":\"%s\"}}}]}}",
        labels, name, cpu);
}

static int bound_of(fixture *f, const char *prefix, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        k += pod_bound(f, name);
    }
    return k;
}

/* The PodGroup's status field (a string's value, or an integer's in decimal; "" when absent). */
static void group_status(fixture *f, const char *name, const char *field, char *out, size_t n)
{
    json_t *o = get(f, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups/%s", name);
    json_t *v = json_object_get(json_object_get(o, "status"), field);
    if (json_is_string(v))
        snprintf(out, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, n, "%lld", (long long)json_integer_value(v));
    else
        out[0] = 0;
    json_decref(o);
}

static bool group_is(fixture *f, const char *name, const char *field, const char *want)
{
    char v[64];
    group_status(f, name, field, v, sizeof v);
    return !strcmp(v, want);
}

/* 4 pods of 2 CPUs: with 6 CPUs free (of 8) none is bound, and the PodGroup's Event says why;
 * once another scheduler's pod leaves, all 4 are bound by one cycle's requests; the status
 * follows them to Running and Succeeded. */
static void test_gang_all_or_nothing(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "6");
    add_node(f, "node-b", "2");
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"blocker\"},"
        "\"spec\":{\"nodeName\":\"node-b\",\"containers\":[{\"name\":\"m\",\"image\":\"t\","
        "\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]}}");
    set_phase(f, "blocker", "Running");
    add_group(f, "tf1", 4);
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "tf1-%d", i);
        add_pod(f, name, "tf1", "2");
    }
    runner r;
    start_synced(f, &r);
    char msg[600];
    WAIT_FOR(events(f, "tf1", "Waiting", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "gang of 4 pods"));
    WAIT_FOR(group_is(f, "tf1", "phase", "Pending"));
    assert_int_equal(bound_of(f, "tf1", 4), 0); /* 3 would fit: none is bound */
    assert_int_equal(drv_ctrl_get_stats(r.c).binds, 0);

    drv_diag d = {{0}};
    long status = 0;
    assert_int_equal(
        drv_kube_delete(f->k, "/api/v1/namespaces/default/pods/blocker", 0, NULL, &status, &d), 0);
    WAIT_FOR(bound_of(f, "tf1", 4) == 4);
    WAIT_FOR(events(f, "tf1", "Scheduled", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "4 pods bound"));
    WAIT_FOR(drv_ctrl_get_stats(r.c).binds == 4);
    assert_int_equal(drv_ctrl_get_stats(r.c).creates, 0); /* bound, never created */
    WAIT_FOR(group_is(f, "tf1", "phase", "Scheduled") && group_is(f, "tf1", "scheduled", "4"));

    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "tf1-%d", i);
        set_phase(f, name, "Running");
    }
    WAIT_FOR(group_is(f, "tf1", "phase", "Running") && group_is(f, "tf1", "running", "4"));
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "tf1-%d", i);
        set_phase(f, name, "Succeeded");
    }
    WAIT_FOR(group_is(f, "tf1", "phase", "Succeeded") && group_is(f, "tf1", "succeeded", "4"));
    assert_true(group_is(f, "tf1", "running", "0"));
    assert_int_equal(drv_ctrl_get_stats(r.c).deletes, 0);
    assert_true(pod_exists(f, "tf1-0") && pod_exists(f, "tf1-3")); /* their operator's to delete */
    stop(&r);
}

/* A pod with schedulerName drover and no pod-group label is a gang of one; a restarted
 * controller adopts it. */
static void test_lone_pod(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "4");
    runner r;
    start_synced(f, &r);
    add_pod(f, "solo", NULL, "1");
    WAIT_FOR(pod_bound(f, "solo"));
    WAIT_FOR(events(f, "solo", "Scheduled", NULL, 0) == 1);
    assert_int_equal(drv_ctrl_get_stats(r.c).creates, 0);
    stop(&r);
    /* A restarted controller adopts it where it is, without a second Scheduled Event. */
    start(f, &r);
    WAIT_FOR(drv_ctrl_get_stats(r.c).jobs == 1 && drv_ctrl_get_stats(r.c).cycles >= 1);
    usleep(500000); /* several periods: whatever it would announce is written by now */
    assert_int_equal(events(f, "solo", "Scheduled", NULL, 0), 1);
    assert_int_equal(drv_ctrl_get_stats(r.c).binds, 0);
    stop(&r);
}

/* A pod naming a PodGroup that does not exist waits, an Event on it saying so; another pod is
 * served meanwhile; the pod is bound once the group is created. */
static void test_missing_group(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "4");
    runner r;
    start_synced(f, &r);
    add_pod(f, "orphan-0", "late", "1");
    char msg[600];
    WAIT_FOR(events(f, "orphan-0", "PodGroupMissing", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "PodGroup default/late"));
    add_pod(f, "other", NULL, "1");
    WAIT_FOR(pod_bound(f, "other"));
    assert_false(pod_bound(f, "orphan-0"));
    add_group(f, "late", 1);
    WAIT_FOR(pod_bound(f, "orphan-0"));
    stop(&r);
}

/* minMember above the pods that exist: none is placed, the Event says how many are missing;
 * the missing pod arrives and the gang is bound whole by one cycle; a pod arriving after it is
 * placed alone. */
static void test_min_member_above_pods(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    add_group(f, "short", 3);
    add_pod(f, "short-0", "short", "1");
    add_pod(f, "short-1", "short", "1");
    runner r;
    start_synced(f, &r);
    char msg[600];
    WAIT_FOR(events(f, "short", "Waiting", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "2 of its minMember 3 pods exist: waiting for 1 more"));
    assert_int_equal(bound_of(f, "short", 2), 0);
    add_pod(f, "short-2", "short", "1");
    WAIT_FOR(bound_of(f, "short", 3) == 3);
    drv_ctrl_latency lat[8];
    WAIT_FOR(drv_ctrl_latencies(r.c, lat, 8) >= 1);
    assert_int_equal(drv_ctrl_latencies(r.c, lat, 8), 1);
    assert_int_equal(lat[0].pods, 3); /* one gang, its 3 bindings sent by one cycle */
    assert_int_equal(drv_ctrl_get_stats(r.c).creates, 0);
    /* a member beyond the admitted gang does not wait for another gang: it is placed alone */
    add_pod(f, "short-3", "short", "1");
    WAIT_FOR(pod_bound(f, "short-3"));
    WAIT_FOR(events(f, "short-3", "Scheduled", NULL, 0) == 1);
    stop(&r);
}

/* A gang whose pods can never fit says so; a lone pod is served meanwhile. */
static void test_never_fits(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    add_group(f, "huge", 2);
    add_pod(f, "huge-0", "huge", "16");
    add_pod(f, "huge-1", "huge", "16");
    runner r;
    start_synced(f, &r);
    WAIT_FOR(events(f, "huge", "NeverFits", NULL, 0) == 1);
    add_pod(f, "small", NULL, "1");
    WAIT_FOR(pod_bound(f, "small"));
    assert_int_equal(bound_of(f, "huge", 2), 0);
    stop(&r);
}

/* spec.minResources is checked before the gang is tried (scheduler-plugins' PreFilter): a
 * group whose one pod of 1 CPU would fit waits, untried, while its minResources (4 CPUs) exceed
 * the 2 free; once they are free its pod is bound. */
static void test_min_resources_wait_untried(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    add_blocker(f, "node-a", "6");
    add_group_with(f, "mr", 1, ",\"minResources\":{\"cpu\":\"4\"}");
    add_pod(f, "mr-0", "mr", "1");
    runner r;
    start_synced(f, &r);
    char msg[600];
    WAIT_FOR(events(f, "mr", "Waiting", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "minResources (cpu 4.0"));
    assert_non_null(strstr(msg, "free (cpu 2.0"));
    assert_false(pod_bound(f, "mr-0"));
    assert_int_equal(drv_ctrl_get_stats(r.c).jobs, 0); /* not tried: no job of the state */
    remove_blocker(f);
    WAIT_FOR(pod_bound(f, "mr-0"));
    assert_int_equal(events(f, "mr", "Waiting", NULL, 0), 1); /* said once */
    stop(&r);
}

/* spec.scheduleTimeoutSeconds: a gang not placed within it gets a Warning Event (once) and
 * stays queued and Pending, none of its pods bound; room made later places it whole. */
static void test_schedule_timeout(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    add_blocker(f, "node-a", "4");
    add_group_with(f, "to", 2, ",\"scheduleTimeoutSeconds\":1");
    add_pod(f, "to-0", "to", "3");
    add_pod(f, "to-1", "to", "3");
    runner r;
    start_synced(f, &r);
    char msg[600];
    WAIT_FOR(events(f, "to", "ScheduleTimeout", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "scheduleTimeoutSeconds (1 s)"));
    assert_int_equal(bound_of(f, "to", 2), 0);
    WAIT_FOR(group_is(f, "to", "phase", "Pending"));
    remove_blocker(f);
    WAIT_FOR(bound_of(f, "to", 2) == 2);
    assert_int_equal(events(f, "to", "ScheduleTimeout", NULL, 0), 1);
    stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gang_all_or_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lone_pod, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_member_above_pods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_never_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_min_resources_wait_untried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schedule_timeout, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
