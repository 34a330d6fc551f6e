/*
 * test_checkpoint.c - `drover run`'s checkpoint handshake and a Queue's minRuntimeSeconds
 * (issue 29), end to end against the in-memory test API server (loopback): a preemption that
 * waits for the victim's drover.dev/checkpoint-done annotation, one that deletes at the
 * profile's checkpoint_timeout, and a young victim a Queue's minimum run time spares, or its
 * PriorityClass's drover.dev/min-runtime-seconds.
 * Kubelet's part (pod phases) is played by the test.
 */
#include "shared_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* Job's condition CheckpointRequested: its status and reason copied (n bytes each). */
static void ckpt_cond(fixture *f, const char *job, char *status, char *reason)
{
    char msg[512];
    status[0] = reason[0] = 0;
    cond_of(f, job, "CheckpointRequested", status, reason, msg);
}

/* The checkpoint handshake (issue 29): under checkpoint_timeout, vip (high) preempts low-a
 * (low), whose TrainingJob is annotated drover.dev/checkpoint-requested and given condition
 * CheckpointRequested True; its pods are not deleted, and vip not bound, while it has not
 * answered (a later cycle runs meanwhile); once low-a's script annotates checkpoint-done with
 * that time, its pods are deleted with their grace period and the condition goes False,
 * CheckpointWritten. Without the handshake (checkpoint_timeout=0) no annotation comes: the test
 * fails at its first wait. */
static void test_preemption_waits_for_checkpoint(void **state)
{
    fixture *f = *state;
    runner r;
    drv_profile prof;
    preemption_scene(f, &r,
                     "gang=true period=0.2 checkpoint_timeout=600 queue_order=priority admit=gang "
                     "score=least-allocated migrate=preempt",
                     &prof);
    char asked[64], status[16], reason[64];
    WAIT_FOR(annotation(f, "low-a", "drover.dev/checkpoint-requested", asked, sizeof asked));
    WAIT_FOR((ckpt_cond(f, "low-a", status, reason), !strcmp(status, "True")));
    assert_string_equal(reason, "Preemption");
    WAIT_FOR(events(f, "low-a", "CheckpointRequested", NULL, 0) == 1);
    char msg[512];
    WAIT_FOR(events(f, "low-a", "Preempted", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "deleted once it has checkpointed"));
    /* A later cycle (the one that says why probe waits: no room) still deletes nothing, and
     * vip still waits (the room is held). */
    add_tj(f, "probe", 1, "1", "\"priorityClassName\":\"low\",", "");
    WAIT_FOR(events(f, "probe", "Waiting", NULL, 0) >= 1);
    assert_int_equal(kubelet(f, "low-a", 30), 0);
    assert_true(pod_exists(f, "low-a-worker-0") && pod_exists(f, "low-a-worker-1"));
    assert_int_equal(bound(f, "vip", NULL, 0), 0);
    req(f, "PATCH", TJ_PATH "/low-a",
        "{\"metadata\":{\"annotations\":{\"drover.dev/checkpoint-done\":\"%s\"}}}", asked);
    WAIT_FOR(kubelet(f, "low-a", 30) == 2);
    WAIT_FOR((ckpt_cond(f, "low-a", status, reason), !strcmp(status, "False")));
    assert_string_equal(reason, "CheckpointWritten");
    assert_int_equal(bound(f, "vip", NULL, 0), 0); /* (until low-a's pods are gone) */
    stop(&r);
}

/* The handshake's bound: a victim that never answers has its pods deleted once
 * checkpoint_timeout has passed, its condition False with reason CheckpointTimeout and a
 * Warning Event. */
static void test_checkpoint_timeout_deletes(void **state)
{
    fixture *f = *state;
    runner r;
    drv_profile prof;
    preemption_scene(f, &r,
                     "gang=true period=0.2 checkpoint_timeout=2 queue_order=priority admit=gang "
                     "score=least-allocated migrate=preempt",
                     &prof);
    char asked[64], status[16], reason[64];
    WAIT_FOR(annotation(f, "low-a", "drover.dev/checkpoint-requested", asked, sizeof asked));
    WAIT_FOR(kubelet(f, "low-a", 30) == 2);
    WAIT_FOR((ckpt_cond(f, "low-a", status, reason), !strcmp(status, "False")));
    assert_string_equal(reason, "CheckpointTimeout");
    /* (an Event is the writer thread's, perhaps written after the status) */
    WAIT_FOR(events(f, "low-a", "CheckpointTimeout", NULL, 0) == 1);
    stop(&r);
}

/* A scale-down goes through the handshake too: TrainingJob ed (2 workers of 1 CPU, elastic
 * 1-4) runs; its Worker replicas edited to 1, the pod that goes is not deleted until ed says
 * it has checkpointed: ed is annotated drover.dev/checkpoint-requested, condition
 * CheckpointRequested True with reason Scaling, and no pod of ed is deleted meanwhile (a later
 * cycle runs: probe's Waiting Event); after checkpoint-done, its pods are deleted with their
 * grace period and the condition goes False, CheckpointWritten. Without the handshake
 * (checkpoint_timeout=0) no annotation comes: the test fails at its first wait. */
static void test_scale_down_waits_for_checkpoint(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    runner r;
    drv_profile prof;
    start_text(f, &r,
               "gang=true period=0.2 checkpoint_timeout=600 queue_order=fifo admit=gang "
               "score=least-allocated",
               &prof);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    req(f, "POST", TJ_PATH,
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"ed\",\"namespace\":\"default\"},\"spec\":{\"replicaSpecs\":{\"Worker\":{"
        "\"replicas\":2,\"minReplicas\":1,\"maxReplicas\":4,\"template\":{\"spec\":{"
        "\"terminationGracePeriodSeconds\":30,\"schedulerName\":\"drover\",\"containers\":[{"
        "\"name\":\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}}}}}");
    WAIT_FOR(bound(f, "ed", NULL, 0) == 2);
    kubelet(f, "ed", 30);
    WAIT_FOR(now_in(f, "ed", "Running", NULL));
    req(f, "PATCH", TJ_PATH "/ed", "{\"spec\":{\"replicaSpecs\":{\"Worker\":{\"replicas\":1}}}}");
    char asked[64], status[16], reason[64];
    WAIT_FOR(annotation(f, "ed", "drover.dev/checkpoint-requested", asked, sizeof asked));
    WAIT_FOR((ckpt_cond(f, "ed", status, reason), !strcmp(status, "True")));
    assert_string_equal(reason, "Scaling");
    add_tj(f, "probe", 1, "16", "", ""); /* (never fits: a later cycle says so) */
    WAIT_FOR(events(f, "probe", "NeverFits", NULL, 0) + events(f, "probe", "Waiting", NULL, 0) >=
             1);
    assert_int_equal(kubelet(f, "ed", 30), 0);
    assert_true(pod_exists(f, "ed-worker-0") && pod_exists(f, "ed-worker-1"));
    req(f, "PATCH", TJ_PATH "/ed",
        "{\"metadata\":{\"annotations\":{\"drover.dev/checkpoint-done\":\"%s\"}}}", asked);
    WAIT_FOR(kubelet(f, "ed", 30) >= 1);
    WAIT_FOR((ckpt_cond(f, "ed", status, reason), !strcmp(status, "False")));
    assert_string_equal(reason, "CheckpointWritten");
    stop(&r);
}

/* low-a (class low_class, and queue when not NULL) running on node-a's 8 CPUs, then vip (high,
 * the same queue): vip waits instead of preempting it, low-a's pods stay. */
static void young_victim_spared(fixture *f, const char *low_class, const char *queue)
{
    char low[128], high[128];
    snprintf(low, sizeof low, "%s%s%s\"priorityClassName\":\"%s\",", queue ? "\"queue\":\"" : "",
             queue ? queue : "", queue ? "\"," : "", low_class);
    snprintf(high, sizeof high, "%s%s%s\"priorityClassName\":\"high\",",
             queue ? "\"queue\":\"" : "", queue ? queue : "", queue ? "\"," : "");
    runner r;
    drv_profile prof;
    start_text(f, &r,
               "gang=true period=0.2 queue_order=priority admit=gang score=least-allocated "
               "migrate=preempt",
               &prof);
    WAIT_FOR(drv_ctrl_get_stats(r.c).synced);
    add_tj(f, "low-a", 2, "4", low, "");
    WAIT_FOR(bound(f, "low-a", NULL, 0) == 2);
    kubelet(f, "low-a", 30);
    WAIT_FOR(now_in(f, "low-a", "Running", NULL));
    add_tj(f, "vip", 2, "4", high, "");
    /* (the cycle that said why vip waits is the one that would have preempted for it) */
    WAIT_FOR(events(f, "vip", "Waiting", NULL, 0) >= 1);
    assert_int_equal(events(f, "low-a", "Preempted", NULL, 0), 0);
    assert_int_equal(kubelet(f, "low-a", 30), 0);
    assert_int_equal(bound(f, "vip", NULL, 0), 0);
    stop(&r);
}

/* A Queue's spec.minRuntimeSeconds (issue 29): a job of it younger than that is no victim, so
 * vip (high, same queue) waits instead of preempting it. With minRuntimeSeconds 0 low-a is
 * preempted (test_priority_class_preempts): this test then fails on its Preempted Event. */
static void test_queue_min_runtime_spares_young_victim(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    add_classes(f);
    req(f, "POST", "/apis/drover.dev/v1alpha1/queues",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
        "\"train\"},\"spec\":{\"minRuntimeSeconds\":3600}}");
    young_victim_spared(f, "low", "train");
}

/* A PriorityClass's drover.dev/min-runtime-seconds (issue 29): low-a, of class patient (value
 * 0, as low, with the annotation 3600) and of no Queue, is no victim while younger, so vip
 * (high) waits instead of preempting it. With the annotation not read (or not taken by the
 * victims code) low-a is preempted as under class low: the test fails at its first wait. */
static void test_class_min_runtime_spares_young_victim(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "8");
    add_classes(f);
    req(f, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
        "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":"
        "{\"name\":\"patient\",\"annotations\":{\"drover.dev/min-runtime-seconds\":\"3600\"}},"
        "\"value\":0}");
    young_victim_spared(f, "patient", NULL);
}

static int setup(void **state)
{
    return fixture_open(
        state,
        (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR, .crd_installed = true, .queue_crd = true});
}

static int teardown(void **state)
{
    return fixture_close(state);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_preemption_waits_for_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checkpoint_timeout_deletes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scale_down_waits_for_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_min_runtime_spares_young_victim, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_class_min_runtime_spares_young_victim, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
