/*
 * test_jobs.c - real training jobs under `drover run`'s controller (issue 13), end to end
 * against the in-memory test API server (loopback): peer discovery (TF_CONFIG, the all-reduce
 * ranks, hostnames and the headless Service), Kubeflow's lifecycle (conditions, a failed pod
 * restarted under OnFailure and the job failed past backoffLimit, suspend and resume), edits
 * of replicas followed, an invalid job failed while another runs, a job that can never fit,
 * a restarted controller that does not announce an adopted job again, and a status written
 * finished by someone else kept as written, no status computed before it landing after it (the
 * race forced by holding the controller's write in the server), a status refused by a 409 sent
 * again. Kubelet's part (pod phases, removing deleted pods) is played by the test.
 */
#include "ctrl_fixture.h"
#include "rbac_check.h"
#include "drover/controller.h"
#include "drover/emulator.h"
#include "drover/kube_types.h"
#include "drover/policy.h"
#include "json.h"

#include <stdatomic.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* The value of env variable var in the pod's first container ("" when absent). */
static const char *env_of(json_t *p, const char *var)
{
    json_t *c0 = json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(c0, "env"), i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "name")), var))
            return json_string_value(json_object_get(e, "value"));
    }
    return "";
}

static bool pod_failed(fixture *f, const char *name)
{
    json_t *p = pod(f, name);
    const char *ph = json_string_value(json_object_get(json_object_get(p, "status"), "phase"));
    bool failed = ph && !strcmp(ph, "Failed");
    json_decref(p);
    return failed;
}

static bool phase_is(fixture *f, const char *job, const char *phase)
{
    json_t *o = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/%s", job);
    const char *p = json_string_value(json_object_get(json_object_get(o, "status"), "phase"));
    bool same = p && !strcmp(p, phase);
    json_decref(o);
    return same;
}

static int setup(void **state)
{
    return fixture_open(
        state,
        (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR, .crd_installed = true, .audit = true});
}

/* The controller had no refused request but status conflicts. Its status writes carry the
 * resourceVersion they were made from, so a user's edit of the spec at the same moment answers
 * one of them 409 Conflict; the writer rebases it and sends it again (test_status_conflict_*),
 * and the budget counts the 409 with every other refusal. Any other refusal fails the test and
 * names each request the server refused (code, verb, path, client). */
static void no_api_errors(fixture *f, drv_ctrl *c)
{
    long n = drv_ctrl_get_stats(c).api_errors;
    char *errs = drv_apiserver_errors(f->srv);
    assert_non_null(errs);
    long conflicts = 0, other = 0;
    for (const char *line = errs; *line;) {
        size_t len = strcspn(line, "\n");
        char code[8] = "", verb[8] = "", path[512] = "", agent[64] = "";
        /* the test's own reads are refused too: a 404 for a pod it expects gone */
        if (sscanf(line, "%7s %7s %511s %63s", code, verb, path, agent) == 4 &&
            strncmp(agent, "drover-run/", 11) == 0) {
            size_t pl = strlen(path);
            bool conflict = !strcmp(code, "409") && !strcmp(verb, "PATCH") && pl > 7 &&
                            !strcmp(path + pl - 7, "/status");
            conflicts += conflict;
            other += !conflict;
        }
        line += len + (line[len] == '\n');
    }
    if (other || n != conflicts)
        fprintf(stderr, "%ld refused request(s), %ld status conflicts; the server refused:\n%s", n,
                conflicts, errs);
    drv_free(errs);
    assert_int_equal(other, 0);
    assert_int_equal(n, conflicts);
}

static int teardown(void **state)
{
    return fixture_close(state);
}

/* A TensorFlow job: every pod names its peers in TF_CONFIG, has its hostname and subdomain,
 * keeps the template's own variables, and the job's headless Service exists. */
static void test_tf_job_peers(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char ps[1024], chief[1024], worker[1024], specs[3200];
    role(ps, sizeof ps, "PS", 1, "1", "");
    role(chief, sizeof chief, "Chief", 1, "1", "");
    role(worker, sizeof worker, "Worker", 2, "1", "");
    snprintf(specs, sizeof specs, "%s,%s,%s", ps, chief, worker);
    add_job(f, "mnist", specs, "");
    WAIT_FOR(pod_bound(f, "mnist-worker-1") && pod_bound(f, "mnist-ps-0") &&
             pod_bound(f, "mnist-chief-0") && pod_bound(f, "mnist-worker-0"));
    json_t *p = pod(f, "mnist-worker-1");
    json_t *spec = json_object_get(p, "spec");
    assert_string_equal(json_string_value(json_object_get(spec, "hostname")), "mnist-worker-1");
    assert_string_equal(json_string_value(json_object_get(spec, "subdomain")), "mnist");
    assert_string_equal(env_of(p, "MINE"), "kept");
    json_t *tf = json_loads(env_of(p, "TF_CONFIG"), 0, NULL);
    assert_non_null(tf);
    json_t *cluster = json_object_get(tf, "cluster");
    json_t *workers = json_object_get(cluster, "worker");
    assert_int_equal(json_array_size(workers), 2);
    assert_string_equal(json_string_value(json_array_get(workers, 1)),
                        "mnist-worker-1.mnist.default.svc:2222");
    assert_string_equal(json_string_value(json_array_get(json_object_get(cluster, "ps"), 0)),
                        "mnist-ps-0.mnist.default.svc:2222");
    assert_string_equal(json_string_value(json_array_get(json_object_get(cluster, "chief"), 0)),
                        "mnist-chief-0.mnist.default.svc:2222");
    json_t *task = json_object_get(tf, "task");
    assert_string_equal(json_string_value(json_object_get(task, "type")), "worker");
    assert_int_equal(json_integer_value(json_object_get(task, "index")), 1);
    json_decref(tf);
    json_decref(p);
    json_t *job = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/mnist");
    const char *uid = json_string_value(json_object_get(json_object_get(job, "metadata"), "uid"));
    json_t *svc = NULL;
    WAIT_FOR((json_decref(svc), svc = get(f, "/api/v1/namespaces/default/services/mnist")));
    json_t *ss = json_object_get(svc, "spec");
    assert_string_equal(json_string_value(json_object_get(ss, "clusterIP")), "None");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(ss, "selector"), "drover.dev/job")),
        "mnist");
    json_t *owner =
        json_array_get(json_object_get(json_object_get(svc, "metadata"), "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "uid")), uid);
    json_decref(svc);
    json_decref(job);
    no_api_errors(f, r.c);
    stop(&r);
}

/* A PyTorch-shaped job (Master + Workers): ranks, world size, the master's address. */
static void test_allreduce_ranks(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char master[1024], worker[1024], specs[2100];
    role(master, sizeof master, "Master", 1, "1", "");
    role(worker, sizeof worker, "Worker", 3, "1", "");
    snprintf(specs, sizeof specs, "%s,%s", master, worker);
    add_job(f, "pt", specs, "");
    const char *names[] = {"pt-master-0", "pt-worker-0", "pt-worker-1", "pt-worker-2"};
    WAIT_FOR(pod_bound(f, names[0]) && pod_bound(f, names[1]) && pod_bound(f, names[2]) &&
             pod_bound(f, names[3]));
    for (int i = 0; i < 4; i++) {
        json_t *p = pod(f, names[i]);
        assert_non_null(p);
        char rank[8];
        snprintf(rank, sizeof rank, "%d", i);
        assert_string_equal(env_of(p, "RANK"), rank);
        assert_string_equal(env_of(p, "WORLD_SIZE"), "4");
        assert_string_equal(env_of(p, "MASTER_ADDR"), "pt-master-0.pt.default.svc");
        assert_string_equal(env_of(p, "MASTER_PORT"), "23456");
        assert_string_equal(env_of(p, "TF_CONFIG"), "");
        json_decref(p);
    }
    stop(&r);
}

/* status.replicaStatuses.<key>.<field> of job, or -1 when it is not there. */
static int replica_count(fixture *f, const char *job, const char *key, const char *field)
{
    json_t *o = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/%s", job);
    json_t *v = json_object_get(
        json_object_get(json_object_get(json_object_get(o, "status"), "replicaStatuses"), key),
        field);
    int n = json_is_integer(v) ? (int)json_integer_value(v) : -1;
    json_decref(o);
    return n;
}

/* status.replicaStatuses counts each role's running, then succeeded pods under the key its
 * spec gave it ("Master", not "Chief"), though a status patch carries no spec to list them. */
static void test_replica_statuses(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char master[1024], worker[1024], specs[2100];
    role(master, sizeof master, "Master", 1, "1", "");
    role(worker, sizeof worker, "Worker", 2, "1", "");
    snprintf(specs, sizeof specs, "%s,%s", master, worker);
    add_job(f, "rp", specs, "");
    const char *names[] = {"rp-master-0", "rp-worker-0", "rp-worker-1"};
    WAIT_FOR(pod_bound(f, names[0]) && pod_bound(f, names[1]) && pod_bound(f, names[2]));
    for (int i = 0; i < 3; i++)
        set_phase(f, names[i], "Running");
    WAIT_FOR(replica_count(f, "rp", "Master", "active") == 1 &&
             replica_count(f, "rp", "Worker", "active") == 2);
    /* the workers first: the master's success may end the job before theirs are counted */
    set_phase(f, names[1], "Succeeded");
    set_phase(f, names[2], "Succeeded");
    WAIT_FOR(replica_count(f, "rp", "Worker", "succeeded") == 2);
    assert_int_equal(replica_count(f, "rp", "Worker", "failed"), 0);
    set_phase(f, names[0], "Succeeded");
    WAIT_FOR(phase_is(f, "rp", "Succeeded"));
    assert_int_equal(replica_count(f, "rp", "Master", "succeeded"), 1);
    assert_int_equal(replica_count(f, "rp", "Worker", "succeeded"), 2);
    assert_int_equal(replica_count(f, "rp", "Chief", "active"), -1);
    assert_int_equal(replica_count(f, "rp", "PS", "active"), -1);
    stop(&r);
}

/* restartPolicy OnFailure with backoffLimit 1: the first failure restarts the pod (deleted,
 * created again), the second fails the job. */
static void test_restart_then_backoff(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char worker[1024];
    role(worker, sizeof worker, "Worker", 2, "1", "\"restartPolicy\":\"OnFailure\",");
    add_job(f, "rs", worker, "\"runPolicy\":{\"backoffLimit\":1},");
    WAIT_FOR(pod_bound(f, "rs-worker-0") && pod_bound(f, "rs-worker-1"));
    set_phase(f, "rs-worker-0", "Running");
    set_phase(f, "rs-worker-1", "Running");
    WAIT_FOR(now_in(f, "rs", "Running", NULL));
    set_phase(f, "rs-worker-1", "Failed");
    WAIT_FOR(events(f, "rs", "PodRestarting", NULL, 0) == 1);
    /* deleted (a finished pod goes at once), then created again, bound, not failed */
    WAIT_FOR(
        (kubelet_finish_deletes(f), pod_bound(f, "rs-worker-1") && !pod_failed(f, "rs-worker-1")));
    char st[8], why[48];
    cond_of(f, "rs", "Restarting", st, why, NULL);
    assert_string_equal(why, "PodRestarting");
    /* a restart is not a change of the job's size */
    assert_int_equal(events(f, "rs", "JobScaling", NULL, 0), 0);
    set_phase(f, "rs-worker-1", "Running");
    WAIT_FOR(now_in(f, "rs", "Running", NULL));
    /* Fails again: past the limit. */
    set_phase(f, "rs-worker-1", "Failed");
    WAIT_FOR(now_in(f, "rs", "Failed", "BackoffLimitExceeded"));
    json_t *o = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/rs");
    json_t *status = json_object_get(o, "status");
    assert_string_equal(json_string_value(json_object_get(status, "phase")), "Failed");
    assert_non_null(json_object_get(status, "completionTime"));
    assert_non_null(json_object_get(status, "startTime"));
    assert_int_equal(json_integer_value(json_object_get(status, "restarts")), 1);
    json_decref(o);
    cond_of(f, "rs", "Running", st, why, NULL);
    assert_string_equal(st, "False");
    /* (an Event is the writer thread's, perhaps written after the status) */
    WAIT_FOR(events(f, "rs", "BackoffLimitExceeded", NULL, 0) == 1);
    /* cleanPodPolicy Running (the default): the running worker 0 is deleted; the failed
     * worker 1 is kept, for its logs. */
    WAIT_FOR((kubelet_finish_deletes(f), !pod_exists(f, "rs-worker-0")));
    assert_true(pod_failed(f, "rs-worker-1"));
    stop(&r);
}

/* spec.runPolicy.suspend: the pods go and the job is Suspended; resumed, it is queued and
 * placed again. */
static void test_suspend_and_resume(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char worker[1024];
    role(worker, sizeof worker, "Worker", 2, "1", "");
    add_job(f, "sp", worker, "");
    WAIT_FOR(pod_bound(f, "sp-worker-0") && pod_bound(f, "sp-worker-1"));
    const char *path = "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/sp";
    req(f, "PATCH", path, "{\"spec\":{\"runPolicy\":{\"suspend\":true}}}");
    WAIT_FOR(now_in(f, "sp", "Suspended", "JobSuspended"));
    int gone = 0;
    WAIT_FOR((gone += kubelet_finish_deletes(f)) == 2);
    assert_false(pod_exists(f, "sp-worker-0"));
    usleep(200000); /* several cycles: nothing is placed while suspended */
    assert_false(pod_exists(f, "sp-worker-0"));
    req(f, "PATCH", path, "{\"spec\":{\"runPolicy\":{\"suspend\":false}}}");
    WAIT_FOR(pod_bound(f, "sp-worker-0") && pod_bound(f, "sp-worker-1"));
    char st[8], why[48];
    cond_of(f, "sp", "Suspended", st, why, NULL);
    WAIT_FOR((cond_of(f, "sp", "Suspended", st, why, NULL), !strcmp(st, "False")));
    /* (an Event is the writer thread's, perhaps written after the status) */
    WAIT_FOR(events(f, "sp", "JobResumed", NULL, 0) == 1);
    no_api_errors(f, r.c);
    stop(&r);
}

/* A finished job stays finished when suspend is set on it: no Suspended condition, no Event,
 * its status Succeeded (Kubeflow's operators leave a finished job alone). The edit is known
 * applied once a job submitted after it is bound (one informer, applied in order), and its
 * Event would be written once the later job's JobCreated is (the writer sends them in order). */
static void test_finished_job_not_suspended(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char worker[1024];
    role(worker, sizeof worker, "Worker", 1, "1", "");
    add_job(f, "done", worker, "");
    WAIT_FOR(pod_bound(f, "done-worker-0"));
    set_phase(f, "done-worker-0", "Running");
    WAIT_FOR(now_in(f, "done", "Running", "JobRunning"));
    set_phase(f, "done-worker-0", "Succeeded");
    WAIT_FOR(now_in(f, "done", "Succeeded", "JobSucceeded") && phase_is(f, "done", "Succeeded"));
    req(f, "PATCH", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/done",
        "{\"spec\":{\"runPolicy\":{\"suspend\":true}}}");
    add_job(f, "after", worker, "");
    WAIT_FOR(pod_bound(f, "after-worker-0"));
    WAIT_FOR(events(f, "after", "JobCreated", NULL, 0) == 1); /* (Events go out in order) */
    assert_int_equal(events(f, "done", "JobSuspended", NULL, 0), 0);
    assert_true(now_in(f, "done", "Succeeded", "JobSucceeded"));
    assert_true(phase_is(f, "done", "Succeeded"));
    no_api_errors(f, r.c);
    stop(&r);
}

/* The number of workers in a pod's TF_CONFIG (-1: no pod, or none). */
static int tf_workers(fixture *f, const char *name)
{
    json_t *p = pod(f, name);
    json_t *tf = p ? json_loads(env_of(p, "TF_CONFIG"), 0, NULL) : NULL;
    json_t *w = json_object_get(json_object_get(tf, "cluster"), "worker");
    int n = w ? (int)json_array_size(w) : -1;
    json_decref(tf);
    json_decref(p);
    return n;
}

/* An edit of Worker replicas within its bounds is followed, up then down; the pods that stay
 * are re-created with their new peers (Scaling meanwhile). */
static void test_replicas_edit(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char worker[1024];
    role(worker, sizeof worker, "Worker", 2, "1", "\"minReplicas\":1,\"maxReplicas\":4,");
    add_job(f, "ed", worker, "");
    WAIT_FOR(pod_bound(f, "ed-worker-0") && pod_bound(f, "ed-worker-1"));
    assert_false(pod_exists(f, "ed-worker-2"));
    assert_int_equal(tf_workers(f, "ed-worker-0"), 2);
    const char *path = "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/ed";
    req(f, "PATCH", path, "{\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":3}}}}");
    WAIT_FOR(now_in(f, "ed", "Scaling", "JobScaling"));
    WAIT_FOR((kubelet_finish_deletes(f),
              pod_bound(f, "ed-worker-2") && pod_bound(f, "ed-worker-0") &&
                  pod_bound(f, "ed-worker-1") && tf_workers(f, "ed-worker-0") == 3 &&
                  tf_workers(f, "ed-worker-1") == 3));
    assert_int_equal(tf_workers(f, "ed-worker-2"), 3);
    WAIT_FOR(events(f, "ed", "PeersChanged", NULL, 0) == 1);
    req(f, "PATCH", path, "{\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":1}}}}");
    WAIT_FOR((kubelet_finish_deletes(f),
              !pod_exists(f, "ed-worker-1") && !pod_exists(f, "ed-worker-2") &&
                  pod_bound(f, "ed-worker-0") && tf_workers(f, "ed-worker-0") == 1));
    /* (Events are written by the writer thread, held while pod requests are out: waited for) */
    WAIT_FOR(events(f, "ed", "ReplicasEdited", NULL, 0) == 2);
    WAIT_FOR(!now_in(f, "ed", "Scaling", NULL));
    stop(&r);
}

/* An invalid job is failed with reason Invalid, its Event naming the field; another job is
 * served meanwhile. A job larger than the cluster is said never to fit. */
static void test_invalid_and_never_fits(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "32");
    add_node(f, "node-b", "32");
    runner r;
    start_synced(f, &r);
    char bad[1024], good[1024], big[1024];
    role(bad, sizeof bad, "Launcher", 1, "1", "");
    add_job(f, "bad", bad, "");
    role(good, sizeof good, "Worker", 1, "1", "");
    add_job(f, "good", good, "");
    role(big, sizeof big, "Worker", 10, "32", "");
    add_job(f, "big", big, "");
    WAIT_FOR(now_in(f, "bad", "Failed", "Invalid"));
    char msg[600];
    WAIT_FOR(events(f, "bad", "Invalid", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "spec.replicaSpecs.Launcher"));
    WAIT_FOR(pod_bound(f, "good-worker-0"));
    WAIT_FOR(now_in(f, "big", "Queued", "NeverFits"));
    char st[8], why[48], cmsg[300];
    cond_of(f, "big", "Queued", st, why, cmsg);
    assert_non_null(strstr(cmsg, "can never run"));
    assert_int_equal(events(f, "big", "Waiting", NULL, 0), 0);
    json_t *o = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/bad");
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "status"), "phase")),
                        "Failed");
    json_decref(o);
    stop(&r);
}

/* A restarted controller adopts a running job without a second Scheduled or Running Event. */
static void test_adopted_job_not_announced_again(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char worker[1024];
    role(worker, sizeof worker, "Worker", 2, "1", "");
    add_job(f, "ad", worker, "");
    WAIT_FOR(pod_bound(f, "ad-worker-0") && pod_bound(f, "ad-worker-1"));
    set_phase(f, "ad-worker-0", "Running");
    set_phase(f, "ad-worker-1", "Running");
    WAIT_FOR(now_in(f, "ad", "Running", "JobRunning"));
    WAIT_FOR(events(f, "ad", "JobRunning", NULL, 0) == 1);
    assert_int_equal(events(f, "ad", "Scheduled", NULL, 0), 1);
    stop(&r);
    start_synced(f, &r);
    WAIT_FOR(drv_ctrl_get_stats(r.c).cycles >= 1);
    usleep(500000); /* several periods: whatever it would announce is written by now */
    assert_int_equal(events(f, "ad", "Scheduled", NULL, 0), 1);
    assert_int_equal(events(f, "ad", "JobRunning", NULL, 0), 1);
    assert_int_equal(events(f, "ad", "JobCreated", NULL, 0), 1);
    stop(&r);
}

/* ---- status writes against other writers (ctrl_writer.c) ------------------------------------ */

#define TJ_PATH "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/"

/* The HTTP codes of the controller's PATCHes of job's status so far, in the order answered,
 * into codes (at most n); how many there were. */
static int status_patches(fixture *f, const char *job, int *codes, int n)
{
    char *log = drv_apiserver_request_log(f->srv);
    char needle[256];
    snprintf(needle, sizeof needle, " PATCH " TJ_PATH "%s/status drover-run/", job);
    int k = 0;
    for (char *line = log; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        if (strstr(line, needle)) {
            if (k < n)
                codes[k] = atoi(line);
            k++;
        }
        line = nl ? nl + 1 : NULL;
    }
    drv_free(log);
    return k;
}

/* A running job of two workers whose next status write the server holds: worker 1 has
 * succeeded (its active count changes), and the PATCH that says so waits unserved, computed
 * from the version before whatever the test writes next. The controller runs in r. Returns
 * the status writes it had made by then (its counter). */
static long held_status_write(fixture *f, runner *r, const char *job)
{
    add_node(f, "node-a", "8");
    start_synced(f, r);
    char worker[1024], w0[128], w1[128];
    role(worker, sizeof worker, "Worker", 2, "1", "");
    add_job(f, job, worker, "");
    snprintf(w0, sizeof w0, "%s-worker-0", job);
    snprintf(w1, sizeof w1, "%s-worker-1", job);
    WAIT_FOR(pod_bound(f, w0) && pod_bound(f, w1));
    set_phase(f, w0, "Running");
    set_phase(f, w1, "Running");
    WAIT_FOR(now_in(f, job, "Running", "JobRunning"));
    char path[256];
    snprintf(path, sizeof path, TJ_PATH "%s/status", job);
    drv_apiserver_hold(f->srv, "PATCH", path, "drover-run/");
    set_phase(f, w1, "Succeeded");
    WAIT_FOR(drv_apiserver_held(f->srv) == 1);
    return drv_ctrl_get_stats(r->c).status_writes;
}

/* What a watch from a version replays of one TrainingJob: its versions, and how many of them
 * are not Succeeded. */
typedef struct replayed {
    const char *name;
    int versions, not_succeeded;
} replayed;

static int on_replayed(const drv_watch_event *ev, void *arg)
{
    replayed *p = arg;
    json_t *m = json_object_get(ev->object, "metadata");
    const char *name = json_string_value(json_object_get(m, "name"));
    if (ev->type == DRV_WATCH_BOOKMARK || !name || strcmp(name, p->name) != 0)
        return 0;
    const char *ph =
        json_string_value(json_object_get(json_object_get(ev->object, "status"), "phase"));
    p->versions++;
    p->not_succeeded += !ph || strcmp(ph, "Succeeded") != 0;
    return 0;
}

/*
 * A status written Succeeded by someone else (a predecessor killed after writing it, whose
 * writing this controller sees only through its watch) stays Succeeded, its condition's reason
 * kept: the controller ends the job as that status says rather than failing it (test_chaos once
 * ended with a job Failed whose worker 0 had succeeded, written so by a successor). And no
 * status the controller computed before it lands after it, not even for a moment: the race is
 * forced. The controller's PATCH saying worker 1 succeeded (phase Running) is held by the
 * server; the test writes Succeeded; the held PATCH is released only then. Its precondition
 * (the version before) makes it a 409, and every version of the object from the test's on is
 * Succeeded (a watch from that version replays them all). Without the precondition the held
 * PATCH lands and the replay shows a Running.
 */
static void test_status_finished_elsewhere_kept(void **state)
{
    fixture *f = *state;
    runner r;
    long writes = held_status_write(f, &r, "fin");
    drv_diag d = {{0}};
    long code = 0;
    json_t *o = NULL;
    assert_int_equal(
        drv_kube_request(f->k, "PATCH", TJ_PATH "fin/status", "application/merge-patch+json",
                         "{\"status\":{\"phase\":\"Succeeded\",\"conditions\":[{\"type\":"
                         "\"Running\",\"status\":\"False\",\"reason\":\"JobRunning\",\"message\":"
                         "\"m\"},{\"type\":\"Succeeded\",\"status\":\"True\",\"reason\":"
                         "\"JobSucceeded\",\"message\":\"worker 0 succeeded\"}]}}",
                         &code, &o, &d),
        0);
    char rv[24];
    snprintf(rv, sizeof rv, "%s",
             json_string_value(json_object_get(json_object_get(o, "metadata"), "resourceVersion")));
    json_decref(o);
    int codes[64];
    int n0 = status_patches(f, "fin", codes, 64);
    drv_apiserver_release(f->srv);
    WAIT_FOR(status_patches(f, "fin", codes, 64) > n0);
    assert_int_equal(codes[n0], 409); /* the held one: refused */
    WAIT_FOR(drv_ctrl_get_stats(r.c).jobs_done == 1);
    WAIT_FOR(drv_ctrl_get_stats(r.c).status_writes > writes); /* its own, once it ended it */
    assert_true(phase_is(f, "fin", "Succeeded"));
    assert_true(now_in(f, "fin", "Succeeded", "JobSucceeded"));
    assert_int_equal(events(f, "fin", "StatusFinished", NULL, 0), 0);
    replayed p = {.name = "fin"};
    char last[24];
    atomic_int halt = 0;
    assert_int_equal(drv_kube_watch(f->k,
                                    "/apis/drover.dev/v1alpha1/namespaces/default/"
                                    "trainingjobs",
                                    rv, 1, on_replayed, &p, last, sizeof last, &halt, &d),
                     0);
    assert_true(p.versions >= 1); /* (the controller's own ending write, at least) */
    assert_int_equal(p.not_succeeded, 0);
    stop(&r);
}

/* A status write refused because the object changed under it (a label edited, not its status)
 * is sent again from the version that changed it, once the controller has seen it: the held
 * PATCH meets a 409, and the status it wanted (worker 1 succeeded) is written after all (the
 * only status the controller had to write), the edit kept. Retried with the refused
 * precondition instead, it would meet a 409 every time. */
static void test_status_conflict_rebased(void **state)
{
    fixture *f = *state;
    runner r;
    long writes = held_status_write(f, &r, "cf");
    req(f, "PATCH", TJ_PATH "cf", "{\"metadata\":{\"labels\":{\"team\":\"edited\"}}}");
    int codes[64];
    int n0 = status_patches(f, "cf", codes, 64);
    drv_apiserver_release(f->srv);
    WAIT_FOR(drv_ctrl_get_stats(r.c).status_writes > writes);
    int n = status_patches(f, "cf", codes, 64);
    assert_true(n >= n0 + 2 && n <= 64);
    assert_int_equal(codes[n0], 409);
    assert_int_equal(codes[n - 1], 200);
    json_t *o = get(f, TJ_PATH "cf");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_object_get(o, "metadata"), "labels"), "team")),
                        "edited");
    assert_string_equal(json_string_value(json_object_get(json_object_get(o, "status"), "phase")),
                        "Running");
    json_decref(o);
    stop(&r);
}

/* A 409 when the object did not change (an injected one, as test_chaos injects): the writer's
 * retry sends the same status with the same precondition after its back-off, and it lands. One
 * failed answer, counted. */
static void test_status_conflict_retried(void **state)
{
    fixture *f = *state;
    runner r;
    long writes = held_status_write(f, &r, "rt");
    int codes[64];
    int n0 = status_patches(f, "rt", codes, 64);
    drv_apiserver_release_answer(f->srv, 409);
    WAIT_FOR(drv_ctrl_get_stats(r.c).status_writes > writes);
    int n = status_patches(f, "rt", codes, 64);
    assert_int_equal(n, n0 + 2);
    assert_int_equal(codes[n0], 409);
    assert_int_equal(codes[n0 + 1], 200);
    assert_int_equal(drv_ctrl_get_stats(r.c).api_errors, 1);
    assert_true(phase_is(f, "rt", "Running"));
    stop(&r);
}

/* activeDeadlineSeconds fails a running job; ttlSecondsAfterFinished deletes a finished one. */
static void test_deadline_and_ttl(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char worker[1024];
    role(worker, sizeof worker, "Worker", 1, "1", "");
    add_job(f, "dl", worker, "\"runPolicy\":{\"activeDeadlineSeconds\":1},");
    add_job(f, "tt", worker, "\"runPolicy\":{\"ttlSecondsAfterFinished\":1},");
    WAIT_FOR(pod_bound(f, "dl-worker-0") && pod_bound(f, "tt-worker-0"));
    set_phase(f, "dl-worker-0", "Running");
    set_phase(f, "tt-worker-0", "Running");
    WAIT_FOR(now_in(f, "tt", "Running", "JobRunning"));
    set_phase(f, "tt-worker-0", "Succeeded");
    WAIT_FOR(now_in(f, "tt", "Succeeded", NULL));
    json_t *o = NULL;
    WAIT_FOR((json_decref(o),
              o = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/tt")) == NULL);
    WAIT_FOR(now_in(f, "dl", "Failed", "DeadlineExceeded"));
    assert_non_null(o = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/dl"));
    json_decref(o);
    stop(&r);
}

/* A job's deadlines are kept: a job waits out its ttlSecondsAfterFinished (2 s) alone and is
 * deleted, with no job live at all; another fails with DeadlineExceeded activeDeadlineSeconds
 * (2 s) after it started. That the loop wakes for a deadline, and runs no cycle before it, is
 * test_loop.c's (its wake and due time as functions, with no clock read). */
static void test_deadlines_are_kept(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    start_synced(f, &r);
    char worker[1024];
    role(worker, sizeof worker, "Worker", 1, "1", "");
    add_job(f, "tt", worker, "\"runPolicy\":{\"ttlSecondsAfterFinished\":2},");
    WAIT_FOR(pod_bound(f, "tt-worker-0"));
    set_phase(f, "tt-worker-0", "Running");
    WAIT_FOR(now_in(f, "tt", "Running", "JobRunning"));
    set_phase(f, "tt-worker-0", "Succeeded");
    WAIT_FOR(now_in(f, "tt", "Succeeded", NULL));
    json_t *o = NULL;
    WAIT_FOR((json_decref(o),
              o = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/tt")) == NULL);
    add_job(f, "dl", worker, "\"runPolicy\":{\"activeDeadlineSeconds\":2},");
    WAIT_FOR(pod_bound(f, "dl-worker-0"));
    set_phase(f, "dl-worker-0", "Running");
    WAIT_FOR(now_in(f, "dl", "Running", "JobRunning"));
    WAIT_FOR(now_in(f, "dl", "Failed", "DeadlineExceeded"));
    stop(&r);
}

/* A job whose one worker runs under the emulator (kubelet's part), annotated to end with
 * exit_code the first fail_times times, under restartPolicy (its role's; its pod's is Never,
 * or OnFailure with in_place: the kubelet restarts its container in place). */
static drv_emulator *emulated_job(fixture *f, const char *name, const char *restart, bool in_place,
                                  int exit_code, int fail_times)
{
    drv_emu_node node = {.name = "emu-0", .alloc = {8000, 64LL << 30, 0}};
    drv_emulator_opts o;
    drv_emulator_opts_default(&o);
    o.speed = 100; /* its 10 s run takes 0.1 s */
    o.start_delay_s = 1;
    drv_emulator *e;
    drv_diag d = {{0}};
    assert_int_equal(drv_emulator_new(&e, &f->cfg, &node, 1, &o, &d), 0);
    assert_int_equal(drv_emulator_start(e, &d), 0);
    char times[64] = ""; /* (absent: every run fails) */
    if (fail_times >= 0)
        snprintf(times, sizeof times, ",\"" DRV_EMU_FAIL_TIMES_ANNOTATION "\":\"%d\"", fail_times);
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{\"runPolicy\":{"
        "\"backoffLimit\":3},\"replicaSpecs\":{\"Worker\":{\"replicas\":1,\"restartPolicy\":"
        "\"%s\",\"template\":{\"metadata\":{\"annotations\":{\"" DRV_EMU_DURATION_ANNOTATION
        "\":\"10\",\"" DRV_EMU_EXIT_CODE_ANNOTATION "\":\"%d\"%s}},\"spec\":{\"schedulerName\":"
        "\"drover\",\"restartPolicy\":\"%s\",\"containers\":[{\"name\":\"main\",\"image\":"
        "\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}",
        name, restart, exit_code, times, in_place ? "OnFailure" : "Never");
    return e;
}

/* restartPolicy ExitCode, pods run by the emulator: killed by a signal (137) the pod is
 * restarted and then succeeds; an exit code of 1 fails the job at once (PermanentError). */
static void test_exit_code_policy(void **state)
{
    fixture *f = *state;
    runner r;
    start_synced(f, &r);
    drv_emulator *e = emulated_job(f, "ok", "ExitCode", false, 137, 1);
    WAIT_FOR(now_in(f, "ok", "Succeeded", "JobSucceeded"));
    /* (an Event is the writer thread's, perhaps written after the status) */
    WAIT_FOR(events(f, "ok", "PodRestarting", NULL, 0) == 1);
    json_t *o = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/ok");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "status"), "restarts")),
                     1);
    json_decref(o);
    assert_int_equal(drv_emulator_get_stats(e).failed, 1);
    drv_emulator_free(e);
    e = emulated_job(f, "perm", "ExitCode", false, 1, -1);
    WAIT_FOR(now_in(f, "perm", "Failed", "PermanentError"));
    assert_int_equal(events(f, "perm", "PodRestarting", NULL, 0), 0);
    drv_emulator_free(e);
    stop(&r);
}

/* restartPolicy OnFailure with the pod's own restartPolicy OnFailure: the kubelet (the emulator)
 * restarts the failing container in place, the pod stays Running, and its restartCount counts
 * toward backoffLimit (3) as Kubeflow counts it: the fourth restart fails the job although no
 * pod failed and Drover restarted none. */
static void test_kubelet_restarts_count(void **state)
{
    fixture *f = *state;
    runner r;
    start_synced(f, &r);
    drv_emulator *e = emulated_job(f, "inplace", "OnFailure", true, 1, -1);
    WAIT_FOR(now_in(f, "inplace", "Failed", "BackoffLimitExceeded"));
    json_t *p = pod(f, "inplace-worker-0");
    if (p) { /* (cleanPodPolicy Running deletes it; when still there, it never failed) */
        json_t *st = json_object_get(p, "status");
        assert_string_equal(json_string_value(json_object_get(st, "phase")), "Running");
        json_t *c0 = json_array_get(json_object_get(st, "containerStatuses"), 0);
        assert_true(json_integer_value(json_object_get(c0, "restartCount")) >= 4);
        json_decref(p);
    }
    /* (the emulator counts a failure once its write has returned, which may be after the
     * controller has seen it and failed the job) */
    WAIT_FOR(drv_emulator_get_stats(e).failed >= 4);
    assert_int_equal(events(f, "inplace", "PodRestarting", NULL, 0), 0);
    drv_emulator_free(e);
    stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tf_job_peers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_allreduce_ranks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replica_statuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_then_backoff, setup, teardown),
        cmocka_unit_test_setup_teardown(test_suspend_and_resume, setup, teardown),
        cmocka_unit_test_setup_teardown(test_finished_job_not_suspended, setup, teardown),
        cmocka_unit_test_setup_teardown(test_replicas_edit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_and_never_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_adopted_job_not_announced_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_finished_elsewhere_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_conflict_rebased, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_conflict_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline_and_ttl, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadlines_are_kept, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_code_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kubelet_restarts_count, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
