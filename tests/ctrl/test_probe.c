/*
 * test_probe.c - issue 26's inputs nobody had tried on `drover run`, each end to end against the
 * in-memory test API server (loopback), each bounded: two replicas at once (the follower writes
 * nothing), a 253-character pod name, a pod of 100,000 labels in the watch and the list, and a
 * TrainingJob edited a thousand times in a second. Kubelet's part (pod phases)
 * is played by the test.
 */
#include "ctrl_fixture.h"

#include "ctrl_writer.h"
#include "drover/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A pod of schedulerName drover asking 100m, unbound (another operator's: its own gang);
 * meta: more metadata fields ("" or ",..."). */
static void add_lone(fixture *f, const char *name, const char *meta)
{
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\",\"namespace\":"
        "\"default\"%s},\"spec\":{\"schedulerName\":\"drover\",\"containers\":[{\"name\":"
        "\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}",
        name, meta);
}

static void *run_thread(void *arg)
{
    runner *r = arg;
    r->rc = drv_ctrl_run(r->c, &r->stop, &r->d);
    return NULL;
}

/* Requests of the request log whose User-Agent starts with agent and whose method is not GET. */
static int writes_by(fixture *f, const char *agent)
{
    char *log = drv_apiserver_request_log(f->srv);
    assert_non_null(log);
    int n = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        const char *ua = strrchr(line, ' ');
        const char *method = strchr(line, ' ');
        if (ua && method && !strncmp(ua + 1, agent, strlen(agent)) && strncmp(method + 1, "GET", 3))
            n++;
    }
    drv_free(log);
    return n;
}

/* TrainingJob tj of two workers of 1 CPU, placed and running (kubelet's part played). */
static void run_two_workers(fixture *f)
{
    char specs[512];
    role(specs, sizeof specs, "Worker", 2, "1", "");
    add_job(f, "tj", specs, "");
    WAIT_FOR(pod_bound(f, "tj-worker-0") && pod_bound(f, "tj-worker-1"));
    set_phase(f, "tj-worker-0", "Running");
    set_phase(f, "tj-worker-1", "Running");
    WAIT_FOR(now_in(f, "tj", "Running", NULL));
}

/* Two replicas with leader election run at once (as the Deployment's two do): a job placed,
 * run and finished meanwhile; the request log shows the follower (its own User-Agent,
 * drover-follower/...) never wrote: no pod, binding, status, Event nor Lease write. */
static void test_two_replicas_the_follower_never_writes(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    req(f, "POST", "/api/v1/namespaces",
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"drover-system\"}}");
    drv_ctrl_opts oa = {
        .lease_name = "drover", .identity = "a", .lease_s = 5, .renew_s = 4, .retry_s = 0.2};
    runner a;
    start_with(f, &a, "gang-fifo", &oa);
    WAIT_FOR(drv_ctrl_get_stats(a.c).leader);
    /* b: the same, told apart by its User-Agent */
    drv_profile prof;
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_builtin("gang-fifo", &prof, &d), 0);
    drv_ctrl_opts ob = oa;
    ob.identity = "b";
    ob.profile = &prof;
    runner b = {0};
    b.cfg = f->cfg;
    b.cfg.component = "follower";
    assert_int_equal(drv_ctrl_new(&b.c, &b.cfg, &ob, &d), 0);
    assert_int_equal(pthread_create(&b.t, NULL, run_thread, &b), 0);
    WAIT_FOR(drv_ctrl_get_stats(b.c).synced);
    run_two_workers(f);
    set_phase(f, "tj-worker-0", "Succeeded");
    set_phase(f, "tj-worker-1", "Succeeded");
    WAIT_FOR(now_in(f, "tj", "Succeeded", NULL));
    assert_true(drv_ctrl_get_stats(a.c).leader);
    assert_false(drv_ctrl_get_stats(b.c).leader);
    assert_true(writes_by(f, "drover-run/") > 0); /* (the log names the leader's writes) */
    assert_int_equal(writes_by(f, "drover-follower/"), 0);
    stop(&b);
    stop(&a);
}

/* A pod name of 253 characters, the most Kubernetes allows: another operator's pod of ours so
 * named is placed like any other. */
static void test_a_253_character_pod_name(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "4");
    runner r;
    start_synced(f, &r);
    char name[254];
    memset(name, 'a', 253);
    name[253] = 0;
    for (int i = 63; i < 253; i += 64)
        name[i] = '.'; /* (a DNS subdomain: labels of at most 63) */
    add_lone(f, name, "");
    WAIT_FOR(pod_bound(f, name));
    stop(&r);
}

/* A pod with 100,000 labels (1.4 MB of JSON; the test server takes bodies up to 4 MB, as
 * kube-apiserver takes 3 MB) comes through the pods' watch, then through the list of a
 * controller started after it: it is decoded and counted as its node's load, and the
 * controller goes on (a pod after it is placed). (The watch decoder's own bound on one event,
 * 16 MB, and a 10 MB event: tests/kube/test_watch.c.) */
static void test_a_pod_of_100000_labels(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "4");
    runner r;
    start_synced(f, &r);
    enum { NLABELS = 100000 };
    char *body = malloc((size_t)NLABELS * 20 + 4096), *p = body;
    assert_non_null(body);
    p += sprintf(p, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                    "\"many-labels\",\"namespace\":\"default\",\"labels\":{");
    for (int i = 0; i < NLABELS; i++)
        p += sprintf(p, "%s\"l%d\":\"v\"", i ? "," : "", i);
    sprintf(p, "}},\"spec\":{\"nodeName\":\"node-a\",\"containers\":[{\"name\":\"main\","
               "\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]}}");
    drv_diag d = {{0}};
    long status = 0;
    assert_int_equal(drv_kube_request(f->k, "POST", "/api/v1/namespaces/default/pods", NULL, body,
                                      &status, NULL, &d),
                     0);
    free(body);
    set_phase(f, "many-labels", "Running");
    add_lone(f, "after", "");
    WAIT_FOR(pod_bound(f, "after"));
    stop(&r);
    /* a controller started now lists it; its 3 CPUs of node-a's 4 are counted: a pod of 100m
     * fits beside them, one of 1 CPU does not */
    start_synced(f, &r);
    add_lone(f, "after2", "");
    WAIT_FOR(pod_bound(f, "after2"));
    stop(&r);
}

/* TrainingJob tj (workers 1 to 4) has spec.replicaSpecs.Worker.replicas edited 1,000 times as
 * fast as the API takes them (1, 2, 3, 4, 1, ...; the last 3): the controller follows the last
 * spec (exactly three workers bound, the fourth gone), and writes at most EVENT_BURST
 * ReplicasEdited Events for the storm, not one per edit it saw. */
static void test_a_job_edited_a_thousand_times(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char specs[512];
    role(specs, sizeof specs, "Worker", 1, "1", "\"minReplicas\":1,\"maxReplicas\":4,");
    add_job(f, "tj", specs, "");
    WAIT_FOR(pod_bound(f, "tj-worker-0"));
    set_phase(f, "tj-worker-0", "Running");
    long before = drv_ctrl_get_stats(r.c).creates;
    for (int i = 0; i < 1000; i++)
        req(f, "PATCH", TJ_PATH "/tj",
            "{\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":%d}}}}",
            i == 999 ? 3 : 1 + i % 4);
    WAIT_FOR((kubelet_finish_deletes(f),
              pod_bound(f, "tj-worker-0") && pod_bound(f, "tj-worker-1") &&
                  pod_bound(f, "tj-worker-2") && !pod_exists(f, "tj-worker-3")));
    /* (without the writer's budget per object and reason: 536 Events) */
    assert_true(events(f, "tj", "ReplicasEdited", NULL, 0) <= EVENT_BURST);
    long creates = drv_ctrl_get_stats(r.c).creates - before;
    print_message("pods created during the storm: %ld\n", creates);
    stop(&r);
}

/* The node name of pod name ("" when unbound or absent) into buf. */
static const char *node_of(fixture *f, const char *name, char *buf, size_t n)
{
    json_t *p = pod(f, name);
    const char *nn = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
    snprintf(buf, n, "%s", nn ? nn : "");
    json_decref(p);
    return buf;
}

/* A node deleted under a running job's bound pods (its Node object gone, as when a machine is
 * removed). Drover deletes no pod for it: kube-controller-manager's pod garbage collector
 * deletes the pods bound to a node that no longer exists, and the test plays it (a deletion
 * with no grace: no kubelet is left to confirm one). The job is not left waiting for pods on a
 * node that is no more, nor placed there again: its pods are created again on a node that
 * exists (node-b). */
static void test_a_node_deleted_under_bound_pods(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "4");
    runner r;
    start_synced(f, &r);
    run_two_workers(f);
    add_node(f, "node-b", "4");
    drv_diag d = {{0}};
    long status = 0;
    assert_int_equal(drv_kube_delete(f->k, "/api/v1/nodes/node-a", 0, NULL, &status, &d), 0);
    /* Markers of 100m until one lands on node-b: after the controller has seen node-a go, every
     * one does; before, one may land on either. Nodes and pods come on two watches, in no order
     * between them (on a real server too), so one marker right after the deletion proves
     * nothing. What is checked is below: the workers are made again on node-b only. */
    char n0[64], n1[64], m[64] = "";
    for (int i = 0; strcmp(m, "node-b") != 0; i++) {
        char name[32];
        snprintf(name, sizeof name, "marker-%d", i);
        add_lone(f, name, "");
        WAIT_FOR(pod_bound(f, name));
        node_of(f, name, m, sizeof m);
        assert_true(i < 20); /* (node-a's 2 free CPUs hold 20) */
    }
    assert_int_equal(
        drv_kube_delete(f->k, "/api/v1/namespaces/default/pods/tj-worker-0", 0, NULL, &status, &d),
        0);
    assert_int_equal(
        drv_kube_delete(f->k, "/api/v1/namespaces/default/pods/tj-worker-1", 0, NULL, &status, &d),
        0);
    WAIT_FOR((kubelet_finish_deletes(f),
              !strcmp(node_of(f, "tj-worker-0", n0, sizeof n0), "node-b") &&
                  !strcmp(node_of(f, "tj-worker-1", n1, sizeof n1), "node-b")));
    stop(&r);
}

/* Requests of the request log whose line contains all of what (NULL-ended). */
static int logged(fixture *f, const char *const *what)
{
    char *log = drv_apiserver_request_log(f->srv);
    assert_non_null(log);
    int n = 0;
    for (char *line = strtok(log, "\n"); line; line = strtok(NULL, "\n")) {
        bool all = true;
        for (const char *const *w = what; *w; w++)
            all = all && strstr(line, *w);
        n += all;
    }
    drv_free(log);
    return n;
}

/* Namespace team is deleted while its job runs (the namespace controller's part played: the
 * Namespace object goes, then its pods, then its TrainingJob). The job's room goes back to the
 * cluster: a job of default that needs the whole node is placed. (Between the pods' deletion
 * and the TrainingJob's, the controller may restart the gang, and its creations meet 404s, the
 * namespace being gone; their number is printed.) */
static void test_a_namespace_deleted_while_its_job_runs(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "4");
    req(f, "POST", "/api/v1/namespaces",
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team\"}}");
    runner r;
    start_synced(f, &r);
    char specs[512];
    role(specs, sizeof specs, "Worker", 2, "2", "");
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/team/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"tj\",\"namespace\":\"team\"},\"spec\":{\"replicaSpecs\":{%s}}}",
        specs);
    json_t *p = NULL;
    WAIT_FOR((json_decref(p), p = get(f, "/api/v1/namespaces/team/pods/tj-worker-1"),
              p && json_object_get(json_object_get(p, "spec"), "nodeName")));
    json_decref(p);
    role(specs, sizeof specs, "Worker", 1, "4", "");
    add_job(f, "next", specs, "");
    WAIT_FOR(events(f, "next", "Waiting", NULL, 0) >= 1 || events(f, "next", "NeverFits", NULL, 0));
    drv_diag d = {{0}};
    long status = 0;
    assert_int_equal(drv_kube_delete(f->k, "/api/v1/namespaces/team", 0, NULL, &status, &d), 0);
    for (int i = 0; i < 2; i++) {
        char path[128];
        snprintf(path, sizeof path, "/api/v1/namespaces/team/pods/tj-worker-%d", i);
        assert_int_equal(drv_kube_delete(f->k, path, 0, NULL, &status, &d), 0);
    }
    assert_int_equal(drv_kube_delete(f->k,
                                     "/apis/drover.dev/v1alpha1/namespaces/team/trainingjobs/tj", 0,
                                     NULL, &status, &d),
                     0);
    WAIT_FOR(pod_bound(f, "next-worker-0"));
    static const char *const gone[] = {"404 POST /api/v1/namespaces/team/pods", "drover-run/",
                                       NULL};
    print_message("pod creations refused in the deleted namespace: %d\n", logged(f, gone));
    stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_replicas_the_follower_never_writes, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_a_253_character_pod_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_pod_of_100000_labels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_job_edited_a_thousand_times, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_node_deleted_under_bound_pods, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_namespace_deleted_while_its_job_runs, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
