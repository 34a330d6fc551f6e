/*
 * test_controller.c - `drover run`'s controller end to end against the in-memory test API
 * server (loopback): TrainingJobs become pods bound as whole gangs within node capacity,
 * waiting jobs get pods and an Event that says why, a finished job's room goes to the next, a
 * foreign pod's request is respected, and a restarted controller adopts what is bound instead
 * of binding it again. Kubelet's part (pod phases) is played by the test with status writes.
 */
#include "ctrl_fixture.h"
#include "drover/kube_types.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <microhttpd.h>

/* A TrainingJob of ps PS pods and w workers (elastic from lo to hi when lo > 0), each asking
 * for cpu millicores. */
static void add_tj_elastic(fixture *f, const char *name, int ps, int w, int lo, int hi, int cpu)
{
    char bounds[128] = "";
    if (lo > 0)
        snprintf(bounds, sizeof bounds, "\"minReplicas\":%d,\"maxReplicas\":%d,", lo, hi);
    char pss[512] = "";
    if (ps)
        snprintf(pss, sizeof pss,
                 ",\"PS\":{\"replicas\":%d,\"template\":{\"spec\":{\"containers\":[{\"name\":"
                 "\"ps\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"%dm\"}}}]}}}",
                 ps, cpu);
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{\"name\":"
        "\"%s\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{%s\"replicas\":"
        "%d,\"template\":{\"spec\":{\"schedulerName\":\"drover\",\"containers\":[{\"name\":"
        "\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"%dm\"}}}]}}}%s}}}",
        name, bounds, w, cpu, pss);
}

static void add_tj(fixture *f, const char *name, int ps, int w, int cpu)
{
    add_tj_elastic(f, name, ps, w, 0, 0, cpu);
}

/* The pods of job (all jobs: NULL): how many exist and how many are bound. */
static void pods_of(fixture *f, const char *job, int *exist, int *bound)
{
    *exist = *bound = 0;
    json_t *l = get(f, "/api/v1/namespaces/default/pods");
    assert_non_null(l);
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *j = json_string_value(json_object_get(
            json_object_get(json_object_get(p, "metadata"), "labels"), "drover.dev/job"));
        if (job && (!j || strcmp(j, job) != 0))
            continue;
        (*exist)++;
        if (json_object_get(json_object_get(p, "spec"), "nodeName"))
            (*bound)++;
    }
    json_decref(l);
}

/* Requests per node of the bound, unfinished pods never exceed its 4 CPUs (or 1 for node-c). */
static void check_capacity(fixture *f)
{
    json_t *l = get(f, "/api/v1/pods");
    assert_non_null(l);
    long used[3] = {0, 0, 0}, cap[3] = {4000, 4000, 1000};
    const char *names[3] = {"node-a", "node-b", "node-c"};
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *n = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        const char *ph = json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
        if (!n || (ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"))))
            continue;
        json_t *c0 = json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0);
        const char *cpu = json_string_value(
            json_object_get(json_object_get(json_object_get(c0, "resources"), "requests"), "cpu"));
        int64_t m = 0;
        if (cpu)
            assert_int_equal(drv_kube_quantity_milli(cpu, &m), 0);
        for (int k = 0; k < 3; k++)
            if (!strcmp(n, names[k]))
                used[k] += m;
    }
    json_decref(l);
    for (int k = 0; k < 3; k++)
        if (used[k] > cap[k])
            fail_msg("%s: %ld millicores requested by bound pods, %ld allocatable", names[k],
                     used[k], cap[k]);
}

static char *tj_phase(fixture *f, const char *name, char *buf, size_t n)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/%s",
             name);
    json_t *o = get(f, "%s", path);
    const char *ph = json_string_value(json_object_get(json_object_get(o, "status"), "phase"));
    snprintf(buf, n, "%s", ph ? ph : "");
    json_decref(o);
    return buf;
}

/* Kubelet's part, for each pod of job. Terminating: of one being deleted, with phase, write it
 * (as a kubelet that killed the pod may); without, remove the pod (grace 0). Else: start one
 * bound to a node, not being deleted and not Running yet (written Running). Returns how many
 * pods it acted on. */
static int kubelet(fixture *f, const char *job, bool terminating, const char *phase)
{
    json_t *l = get(f, "/api/v1/namespaces/default/pods");
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        json_t *m = json_object_get(p, "metadata");
        const char *j =
            json_string_value(json_object_get(json_object_get(m, "labels"), "drover.dev/job"));
        const char *ph = json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
        bool deleting = json_object_get(m, "deletionTimestamp") != NULL;
        bool to_start = !deleting && json_object_get(json_object_get(p, "spec"), "nodeName") &&
                        !(ph && !strcmp(ph, "Running"));
        if (!j || strcmp(j, job) != 0 || !(terminating ? deleting : to_start))
            continue;
        const char *name = json_string_value(json_object_get(m, "name"));
        if (!terminating || phase) {
            set_phase(f, name, terminating ? phase : "Running");
        } else {
            char path[256];
            snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s", name);
            drv_diag d = {{0}};
            long status;
            drv_kube_delete(f->k, path, 0, NULL, &status, &d);
        }
        n++;
    }
    json_decref(l);
    return n;
}

static int kubelet_starts(fixture *f, const char *job)
{
    return kubelet(f, job, false, NULL);
}

static int mark_terminating(fixture *f, const char *job, const char *phase)
{
    return kubelet(f, job, true, phase);
}

static int finish_deletes(fixture *f, const char *job)
{
    return kubelet(f, job, true, NULL);
}

static int setup(void **state)
{
    return fixture_open(state,
                        (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR, .crd_installed = true});
}

static int teardown(void **state)
{
    /* every request the controllers made (the Lease's too), granted by deploy/rbac.yaml */
    return fixture_close(state);
}

static void test_gangs_bind_wait_and_follow(void **state)
{
    fixture *f = *state;
    add_node_in(f, "node-a", "4", "z1");
    add_node_in(f, "node-b", "4", "z1");
    add_node_in(f, "node-c", "1", "z2");
    /* A foreign pod (default scheduler) takes 3 of node-b's 4 CPUs. */
    req(f, "POST", "/api/v1/namespaces/default/pods",
        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"web\"},\"spec\":{"
        "\"nodeName\":\"node-b\",\"containers\":[{\"name\":\"w\",\"image\":\"nginx\","
        "\"resources\":{\"requests\":{\"cpu\":\"3\"}}}]}}");
    runner r;
    start_with(f, &r, "gang-fifo", NULL);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);

    /* tj1: 1 PS + 2 workers of 1 CPU: fits, bound whole by bound creations. */
    add_tj(f, "tj1", 1, 2, 1000);
    int exist, bound;
    WAIT_FOR((pods_of(f, "tj1", &exist, &bound), bound == 3));
    assert_int_equal(exist, 3);
    check_capacity(f);
    /* tj2: 4 workers of 1.5 CPU = 6 CPUs; 3 + 1 + 1 CPUs are free (node-b has the web pod):
     * it waits, with its pods created unbound and an Event saying why. */
    add_tj(f, "tj2", 0, 4, 1500);
    WAIT_FOR((pods_of(f, "tj2", &exist, &bound), exist == 4));
    assert_int_equal(bound, 0);
    WAIT_FOR(events(f, "tj2", "Waiting", NULL, 0) > 0);
    char ph[32];
    WAIT_FOR(!strcmp(tj_phase(f, "tj2", ph, sizeof ph), "Pending"));

    /* Kubelet's part: tj1 runs, then its worker 0 succeeds: tj1 is done, its other pods are
     * deleted, and tj2 still does not fit (6 CPUs wanted; 4 + 1 + 1 free, at most 2 pods of
     * 1.5 CPUs on node-a): it keeps waiting. */
    set_phase(f, "tj1-ps-0", "Running");
    set_phase(f, "tj1-worker-0", "Running");
    set_phase(f, "tj1-worker-1", "Running");
    WAIT_FOR(!strcmp(tj_phase(f, "tj1", ph, sizeof ph), "Running"));
    set_phase(f, "tj1-worker-0", "Succeeded");
    WAIT_FOR(!strcmp(tj_phase(f, "tj1", ph, sizeof ph), "Succeeded"));
    /* Its running PS and worker 1 are deleted gracefully; kubelet removes them. */
    int terminating = 0;
    WAIT_FOR((terminating += finish_deletes(f, "tj1")) >= 2);
    WAIT_FOR((pods_of(f, "tj1", &exist, &bound), exist == 1)); /* the succeeded pod stays */
    usleep(200000);
    pods_of(f, "tj2", &exist, &bound);
    assert_int_equal(bound, 0);
    /* The web pod goes: now node-a and node-b take 2 pods of 1.5 CPUs each, and tj2 is bound
     * whole through pods/binding (its pods exist). */
    drv_diag d = {{0}};
    long status;
    assert_int_equal(
        drv_kube_delete(f->k, "/api/v1/namespaces/default/pods/web", 0, NULL, &status, &d), 0);
    WAIT_FOR((pods_of(f, "tj2", &exist, &bound), bound == 4));
    check_capacity(f);
    /* (the binders' answers are counted when the controller reads them: wait for them) */
    WAIT_FOR(drv_ctrl_get_stats(r.c).binds + drv_ctrl_get_stats(r.c).creates >= 11);
    drv_ctrl_stats st = drv_ctrl_get_stats(r.c);
    assert_int_equal(st.binds, 4);   /* tj2's pods */
    assert_int_equal(st.creates, 7); /* tj1's 3 bound, tj2's 4 unbound */
    assert_int_equal(st.api_errors, 0);
    WAIT_FOR(events(f, "tj2", "Scheduled", NULL, 0) >
             0); /* (the writer thread sends it, in its time) */
    drv_ctrl_latency lat[8];
    size_t nl = drv_ctrl_latencies(r.c, lat, 8);
    /* tj1 only: tj2 waited for room a foreign pod held, and no event of its own completed it */
    assert_int_equal(nl, 1);
    assert_int_equal(lat[0].pods, 3);
    assert_true(lat[0].decide <= lat[0].sent && lat[0].sent <= lat[0].done);
    stop(&r);

    /* A new controller adopts the bound pods: it binds nothing again, and a new job that fits
     * only where tj2 does not run is placed there. */
    start_with(f, &r, "gang-fifo", NULL);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    add_tj(f, "tj3", 0, 1, 1000);
    WAIT_FOR((pods_of(f, "tj3", &exist, &bound), bound == 1));
    check_capacity(f);
    WAIT_FOR(drv_ctrl_get_stats(r.c).creates >= 1);
    usleep(100000);
    st = drv_ctrl_get_stats(r.c);
    assert_int_equal(st.binds, 0);
    assert_int_equal(st.creates, 1);
    stop(&r);
}

static void test_deleted_job_pods_go(void **state)
{
    fixture *f = *state;
    add_node_in(f, "node-a", "4", "z1");
    runner r;
    start_with(f, &r, "drover", NULL);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    add_tj(f, "big", 0, 2, 1000);
    int exist, bound;
    WAIT_FOR((pods_of(f, "big", &exist, &bound), bound == 2));
    /* The test server has no garbage collector: the controller deletes the pods itself. */
    drv_diag d = {{0}};
    long status;
    assert_int_equal(
        drv_kube_delete(f->k, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/big", -1,
                        NULL, &status, &d),
        0);
    WAIT_FOR((finish_deletes(f, "big"), pods_of(f, "big", &exist, &bound), exist == 0));
    /* Created again under the same name: a new job, placed like the first. */
    add_tj(f, "big", 0, 3, 1000);
    WAIT_FOR((pods_of(f, "big", &exist, &bound), bound == 3));
    check_capacity(f);
    stop(&r);
}

/* --bind-mode=binding (issue 28): a gang's pods are created unbound (no spec.nodeName in the
 * bodies the server received), then bound through pods/binding, each after its creation. */
static void test_bind_mode_binding(void **state)
{
    fixture *f = *state;
    add_node_in(f, "node-a", "4", "z1");
    drv_apiserver_keep_writes(f->srv);
    runner r;
    start_with(f, &r, "gang-fifo", &(drv_ctrl_opts){.bind_with_binding = true});
    add_tj(f, "two", 0, 2, 1000);
    int exist, bound;
    WAIT_FOR((pods_of(f, "two", &exist, &bound), bound == 2));
    WAIT_FOR(drv_ctrl_get_stats(r.c).binds == 2);
    drv_ctrl_stats st = drv_ctrl_get_stats(r.c);
    assert_int_equal(st.creates, 2);
    assert_int_equal(st.created_bound, 0);
    stop(&r);
    drv_apiserver_write *w = NULL;
    int32_t n = drv_apiserver_writes(f->srv, &w), creates = 0, bindings = 0;
    for (int32_t i = 0; i < n; i++) {
        if (!strcmp(w[i].path, "/api/v1/namespaces/default/pods")) {
            assert_null(strstr(w[i].body, "nodeName"));
            creates++;
        } else if (strstr(w[i].path, "/binding")) {
            assert_true(creates > bindings); /* (each after its pod's creation) */
            bindings++;
        }
    }
    assert_int_equal(creates, 2);
    assert_int_equal(bindings, 2);
    drv_apiserver_writes_free(w, n);
}

/* --bind-mode=binding (issue 28): the watch's echoes of a pod created unbound and of its binding
 * confirm what the controller assumed and ask for no cycle. Gangs submitted one after another
 * (the period too long to run any) take a cycle or two each (the TrainingJob's event and its
 * status's), not one more for each of their pods' echoes: a count, not a timing. */
static void test_bind_mode_binding_cycles(void **state)
{
    enum { JOBS = 8, WORKERS = 4 };
    fixture *f = *state;
    add_node_in(f, "node-a", "64", "z1");
    runner r;
    start_with(f, &r, "gang=true period=3600 queue_order=fifo admit=gang score=least-allocated",
               &(drv_ctrl_opts){.bind_with_binding = true});
    for (int i = 0; i < JOBS; i++) {
        char name[16];
        snprintf(name, sizeof name, "j%d", i);
        add_tj(f, name, 0, WORKERS, 1000);
        WAIT_FOR(drv_ctrl_get_stats(r.c).binds == WORKERS * (i + 1));
    }
    long cycles = drv_ctrl_get_stats(r.c).cycles;
    stop(&r);
    print_message("cycles %ld for %d gangs of %d\n", cycles, JOBS, WORKERS);
    assert_true(cycles <= 2 * JOBS);
}

/* Does a pod of job have a deletionTimestamp? */
static bool deleting(fixture *f, const char *job)
{
    json_t *l = get(f, "/api/v1/namespaces/default/pods");
    bool any = false;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        json_t *m = json_object_get(p, "metadata");
        const char *j =
            json_string_value(json_object_get(json_object_get(m, "labels"), "drover.dev/job"));
        any |= j && !strcmp(j, job) && json_object_get(m, "deletionTimestamp");
    }
    json_decref(l);
    return any;
}

static bool pod_there(fixture *f, const char *name, bool *bound)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s", name);
    json_t *o = get(f, "%s", path);
    if (bound)
        *bound = o && json_object_get(json_object_get(o, "spec"), "nodeName");
    json_decref(o);
    return o != NULL;
}

/* Elastic jobs: started at the size that fits, grown by bound creations when a node comes,
 * shrunk by deletions when a rigid job has waited. */
static void test_elastic_grow_and_shrink(void **state)
{
    fixture *f = *state;
    add_node_in(f, "node-a", "4", "z1");
    runner r;
    start_with(f, &r,
               "gang=true period=1 queue_order=fifo admit=dragon(quiet=0;starve_wait=0) "
               "scale=dragon score=least-allocated",
               NULL);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    /* e1: 1 PS + 4 workers (1..4) of 1 CPU on 4 CPUs: starts with 3 workers. */
    add_tj_elastic(f, "e1", 1, 4, 1, 4, 1000);
    int exist, bound;
    WAIT_FOR((pods_of(f, "e1", &exist, &bound), bound == 4));
    assert_int_equal(exist, 4);
    assert_false(pod_there(f, "e1-worker-3", NULL));
    check_capacity(f);
    const char *pods[] = {"e1-ps-0", "e1-worker-0", "e1-worker-1", "e1-worker-2"};
    for (int i = 0; i < 4; i++)
        set_phase(f, pods[i], "Running");
    char ph[32];
    WAIT_FOR(!strcmp(tj_phase(f, "e1", ph, sizeof ph), "Running"));
    /* A second node: e1 grows to its maximum; the new worker is created bound. */
    add_node_in(f, "node-b", "4", "z1");
    bool b = false;
    WAIT_FOR(pod_there(f, "e1-worker-3", &b) && b);
    /* Its peers changed: its other pods are re-created where they are, with the new
     * environment (issue 13); kubelet removes the old ones. */
    const char *all[] = {"e1-ps-0", "e1-worker-0", "e1-worker-1", "e1-worker-2", "e1-worker-3"};
    WAIT_FOR((finish_deletes(f, "e1"), pods_of(f, "e1", &exist, &bound),
              bound == 5 && !deleting(f, "e1")));
    for (int i = 0; i < 5; i++)
        set_phase(f, all[i], "Running");
    /* e2, rigid 4 x 1 CPU, does not fit in the 3 CPUs left: e1 gives up workers for it (down
     * to what e2 needs), they are deleted gracefully, and once they are gone e2 is bound. */
    add_tj(f, "e2", 0, 4, 1000);
    /* While e1's surplus workers terminate they hold their room: e2 waits. When kubelet has
     * stopped them (and marks them Failed, as it may), the room is free, and their phase does
     * not fail e1. */
    WAIT_FOR(mark_terminating(f, "e1", "Running") > 0);
    usleep(300000);
    pods_of(f, "e2", &exist, &bound);
    assert_int_equal(bound, 0);
    mark_terminating(f, "e1", "Failed");
    WAIT_FOR((pods_of(f, "e2", &exist, &bound), bound == 4));
    /* (the pods e1 keeps are re-created with their new peers, one after another: kubelet
     * removes each old one and starts each new one once it is bound, whenever that is, and
     * e1 runs again once all are; waiting for ps-0 alone, a worker re-created after it stayed
     * Pending and e1 never ran) */
    WAIT_FOR((finish_deletes(f, "e1"), pods_of(f, "e2", &exist, &bound), bound == 4));
    WAIT_FOR((finish_deletes(f, "e1"), kubelet_starts(f, "e1") == 0 && !deleting(f, "e1") &&
                                           !strcmp(tj_phase(f, "e1", ph, sizeof ph), "Running")));
    pods_of(f, "e1", &exist, &bound);
    assert_true(bound >= 2 && bound <= 4); /* PS and at least worker 0 stay */
    assert_true(pod_there(f, "e1-ps-0", NULL) && pod_there(f, "e1-worker-0", NULL));
    check_capacity(f);
    assert_int_equal(drv_ctrl_get_stats(r.c).api_errors, 0);
    stop(&r);
}

/* Two controllers with leader election: one schedules; when it stops, the other takes the
 * lease once it has expired and schedules what comes next. */
static void test_leader_election(void **state)
{
    fixture *f = *state;
    add_node_in(f, "node-a", "8", "z1");
    req(f, "POST", "/api/v1/namespaces",
        "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
        "\"metadata\":{\"name\":\"drover-system\"}}");
    /* (a 3 s lease renewed every 0.2 s: a leader's renewals stalled past the lease - ASan on a
     * loaded machine stalled them past 1 s - would hand it over while the test says it must
     * not; the hand-over below waits for it to expire) */
    drv_ctrl_opts oa = {
        .lease_name = "drover", .identity = "a", .lease_s = 3, .renew_s = 2, .retry_s = 0.2};
    drv_ctrl_opts ob = oa;
    ob.identity = "b";
    runner a, b;
    start_with(f, &a, "gang-fifo", &oa);
    WAIT_FOR(drv_ctrl_get_stats(a.c).leader);
    start_with(f, &b, "gang-fifo", &ob);
    WAIT_FOR(drv_ctrl_get_stats(b.c).synced);
    add_tj(f, "l1", 0, 2, 1000);
    int exist, bound;
    WAIT_FOR((pods_of(f, "l1", &exist, &bound), bound == 2));
    usleep(500000); /* b had time to renew twice: it must still follow */
    assert_false(drv_ctrl_get_stats(b.c).leader);
    assert_int_equal(drv_ctrl_get_stats(b.c).creates + drv_ctrl_get_stats(b.c).binds, 0);
    json_t *l = get(f, "/apis/coordination.k8s.io/v1/namespaces/drover-system/leases/drover");
    assert_non_null(l);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(l, "spec"), "holderIdentity")), "a");
    json_decref(l);
    stop(&a);
    WAIT_FOR(drv_ctrl_get_stats(b.c).leader);
    add_tj(f, "l2", 0, 2, 1000);
    WAIT_FOR((pods_of(f, "l2", &exist, &bound), bound == 2));
    check_capacity(f);
    WAIT_FOR(drv_ctrl_get_stats(b.c).creates >= 2);
    usleep(100000);
    assert_int_equal(drv_ctrl_get_stats(b.c).creates, 2); /* l2's only: l1 was adopted */
    stop(&b);
}

/* Issue 13: a job's workers finish before its chief. Their slots are done, not free: the
 * controller sends nothing about them (a binding of a finished pod is refused with 409, as
 * the test server does), and the job stays Running until its chief ends. */
static void test_chief_outlives_workers(void **state)
{
    fixture *f = *state;
    add_node_in(f, "node-a", "4", "z1");
    runner r;
    start_with(f, &r, "gang-fifo", NULL);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"cw\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{"
        "\"Chief\":{\"replicas\":1,\"template\":{\"spec\":{\"containers\":[{\"name\":"
        "\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}},"
        "\"Worker\":{\"replicas\":2,\"template\":{\"spec\":{\"containers\":[{\"name\":"
        "\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}");
    int exist, bound;
    WAIT_FOR((pods_of(f, "cw", &exist, &bound), bound == 3));
    const char *pods[] = {"cw-chief-0", "cw-worker-0", "cw-worker-1"};
    for (int i = 0; i < 3; i++)
        set_phase(f, pods[i], "Running");
    char ph[32];
    WAIT_FOR(!strcmp(tj_phase(f, "cw", ph, sizeof ph), "Running"));
    WAIT_FOR(drv_ctrl_get_stats(r.c).creates >= 3);
    /* The workers finish; the status written for that (fewer active workers) settles. */
    set_phase(f, "cw-worker-0", "Succeeded");
    set_phase(f, "cw-worker-1", "Succeeded");
    long writes = -1;
    while (writes != drv_ctrl_get_stats(r.c).status_writes) { /* settled: none for 200 ms */
        writes = drv_ctrl_get_stats(r.c).status_writes;
        usleep(200000);
    }
    long before = drv_apiserver_requests(f->srv);
    drv_ctrl_stats st0 = drv_ctrl_get_stats(r.c);
    usleep(500000); /* several cycles' time: a controller rebinding them would have sent */
    drv_ctrl_stats st1 = drv_ctrl_get_stats(r.c);
    assert_int_equal(drv_apiserver_requests(f->srv) - before, 0);
    assert_int_equal(st1.binds + st1.creates, st0.binds + st0.creates);
    assert_int_equal(st1.api_errors, 0);
    assert_string_equal(tj_phase(f, "cw", ph, sizeof ph), "Running");
    pods_of(f, "cw", &exist, &bound);
    assert_int_equal(exist, 3);
    /* The chief ends: the job has succeeded. */
    set_phase(f, "cw-chief-0", "Succeeded");
    WAIT_FOR(!strcmp(tj_phase(f, "cw", ph, sizeof ph), "Succeeded"));
    assert_int_equal(drv_ctrl_get_stats(r.c).binds, 0);
    stop(&r);
}

/* Issue 12: a restarted controller decides nothing before all it listed is applied. Many jobs
 * whose pods are all bound already (a previous leader's work) are adopted: no request about
 * them. A first cycle run on a partly applied pod list would create or bind pods that exist. */
static void test_restart_adopts_before_deciding(void **state)
{
    fixture *f = *state;
    add_node_in(f, "node-a", "64", "z1");
    add_node_in(f, "node-b", "64", "z1");
    enum { JOBS = 40, WORKERS = 4 };
    for (int j = 0; j < JOBS; j++) {
        char name[32];
        snprintf(name, sizeof name, "r%d", j);
        add_tj(f, name, 0, WORKERS, 100);
        /* (each controlled by its job, as the leader created it: ctrl_mirror.c, claim) */
        char uid[128];
        tj_uid(f, name, uid, sizeof uid);
        for (int w = 0; w < WORKERS; w++)
            req(f, "POST", "/api/v1/namespaces/default/pods",
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
                "\"%s-worker-%d\",\"labels\":{\"drover.dev/job\":\"%s\",\"drover.dev/role\":"
                "\"worker\",\"drover.dev/rank\":\"%d\"},\"ownerReferences\":[{\"apiVersion\":"
                "\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"name\":\"%s\",\"uid\":"
                "\"%s\",\"controller\":true}]},\"spec\":{\"schedulerName\":\"drover\","
                "\"nodeName\":\"%s\",\"containers\":[{\"name\":\"main\",\"image\":\"t\","
                "\"resources\":{\"requests\":{\"cpu\":\"100m\"}}}]}}",
                name, w, name, w, name, uid, j % 2 ? "node-b" : "node-a");
    }
    /* Restarted several times: each start is a fresh chance for the informers' lists and the
     * loop to interleave badly (the race this guards against is not deterministic). */
    for (int round = 0; round < 8; round++) {
        runner r;
        start_with(f, &r, "gang-fifo", NULL);
        WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
        WAIT_FOR(drv_ctrl_get_stats(r.c).cycles >= 1);
        usleep(300000);
        drv_ctrl_stats st = drv_ctrl_get_stats(r.c);
        assert_int_equal(st.jobs, JOBS);
        assert_int_equal(st.creates + st.binds + st.deletes, 0);
        assert_int_equal(st.api_errors, 0);
        int exist, bound;
        pods_of(f, NULL, &exist, &bound);
        assert_int_equal(exist, JOBS * WORKERS);
        assert_int_equal(bound, JOBS * WORKERS);
        stop(&r);
    }
}

/* A training job's chief serving progress as Prometheus text; the step grows per request. */
static int metrics_calls;
static enum MHD_Result serve_metrics(void *cls, struct MHD_Connection *conn, const char *url,
                                     const char *method, const char *version, const char *upload,
                                     size_t *upload_size, void **con_cls)
{
    (void)cls, (void)version, (void)upload, (void)upload_size, (void)con_cls, (void)method;
    char body[256];
    int step = 1200 + 100 * __atomic_fetch_add(&metrics_calls, 1, __ATOMIC_SEQ_CST);
    snprintf(body, sizeof body,
             "# HELP drover_train_step steps\n# TYPE drover_train_step counter\n"
             "drover_train_step %d\ntrain_loss{job=\"p1\"} 0.75\n",
             step);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
    enum MHD_Result rc = MHD_queue_response(conn, strcmp(url, "/m") ? 404 : 200, r);
    MHD_destroy_response(r);
    return rc;
}

/* spec.progress: the chief's step and loss are scraped every period and become samples. */
static void test_progress_scraped(void **state)
{
    fixture *f = *state;
    struct MHD_Daemon *m = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
                                            serve_metrics, NULL, MHD_OPTION_END);
    assert_non_null(m);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(m, MHD_DAEMON_INFO_BIND_PORT);
    int port = info->port;
    add_node_in(f, "node-a", "4", "z1");
    runner r;
    start_with(f, &r, "gang=true period=1 queue_order=fifo admit=gang score=least-allocated", NULL);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"p1\",\"namespace\":\"default\"},\"spec\":{\"progress\":{\"port\":%d,"
        "\"path\":\"/m\",\"loss\":\"train_loss\",\"totalSteps\":5000},\"replicaSpecs\":{"
        "\"Worker\":{\"replicas\":1,\"template\":{\"spec\":{\"containers\":[{\"name\":"
        "\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}",
        port);
    int exist, bound;
    WAIT_FOR((pods_of(f, "p1", &exist, &bound), bound == 1));
    req(f, "PATCH", "/api/v1/namespaces/default/pods/p1-worker-0/status",
        "{\"status\":{\"phase\":\"Running\",\"podIP\":\"127.0.0.1\"}}");
    WAIT_FOR(drv_ctrl_get_stats(r.c).samples >= 2);
    drv_ctrl_stats st = drv_ctrl_get_stats(r.c);
    assert_true(st.last_step >= 1300 && st.last_step == (int)st.last_step);
    assert_true(st.last_loss == 0.75);
    stop(&r);
    MHD_stop_daemon(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gangs_bind_wait_and_follow, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deleted_job_pods_go, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_mode_binding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bind_mode_binding_cycles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_elastic_grow_and_shrink, setup, teardown),
        cmocka_unit_test_setup_teardown(test_leader_election, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_scraped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chief_outlives_workers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_adopts_before_deciding, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
