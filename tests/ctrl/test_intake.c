/*
 * test_intake.c - what `drover run` refuses or cannot place as it takes a TrainingJob in,
 * end to end against the in-memory test API server (loopback): names Kubernetes would refuse
 * for the job's Service or pods (issue 26), and GPU types (issue 27): a job's GPU pods on one
 * type only, a type no node has said never to fit. Kubelet's part is played by the test.
 */
#include "ctrl_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static int setup(void **state)
{
    return fixture_open(state,
                        (drv_apiserver_opts){.fixture_dir = FIXTURE_DIR, .crd_installed = true});
}

static int teardown(void **state)
{
    return fixture_close(state);
}

/* Names Kubernetes would refuse are caught at intake: a job whose last pod name
 * ("<job>-worker-9") would be 64 characters, and one whose name has a dot (its Service's name
 * must be a DNS-1035 label), fail as Invalid naming metadata.name; a name one character shorter
 * is served. */
static void test_derived_names_checked(void **state)
{
    fixture *f = *state;
    add_node(f, "node-a", "32");
    runner r;
    start_synced(f, &r);
    char workers[1024], one[1024], longest[64], too_long[64];
    role(workers, sizeof workers, "Worker", 10, "1", "");
    role(one, sizeof one, "Worker", 1, "1", "");
    memset(too_long, 'a', 55);
    too_long[55] = 0; /* + "-worker-9": 64 */
    memset(longest, 'b', 54);
    longest[54] = 0; /* + "-worker-9": 63 */
    add_job(f, too_long, workers, "");
    add_job(f, "dotted.name", one, "");
    add_job(f, longest, workers, "");
    char msg[600], pod[80];
    WAIT_FOR(now_in(f, too_long, "Failed", "Invalid"));
    WAIT_FOR(events(f, too_long, "Invalid", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "metadata.name: its pod"));
    assert_non_null(strstr(msg, "-worker-9 would be named with 64 characters"));
    WAIT_FOR(now_in(f, "dotted.name", "Failed", "Invalid"));
    WAIT_FOR(events(f, "dotted.name", "Invalid", msg, sizeof msg) == 1);
    assert_non_null(strstr(msg, "metadata.name: expected a DNS-1035 label"));
    snprintf(pod, sizeof pod, "%s-worker-9", longest);
    WAIT_FOR(pod_bound(f, pod));
    stop(&r);
}

/* A Node of 4 GPUs whose GPU type label (nvidia.com/gpu.product, the default) is type. */
static void add_gpu_node(fixture *f, const char *name, const char *type)
{
    req(f, "POST", "/api/v1/nodes",
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
        "\"nvidia.com/gpu.product\":\"%s\"}},\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":"
        "\"16\",\"memory\":\"64Gi\",\"nvidia.com/gpu\":\"4\",\"pods\":\"110\"},\"conditions\":[{"
        "\"type\":\"Ready\",\"status\":\"True\"}]}}",
        name, type);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", name);
    req(f, "PATCH", path, "{\"spec\":{\"taints\":null}}");
}

/* The node a pod is bound to ("" when none). */
static void node_of_pod(fixture *f, const char *name, char *out, size_t n)
{
    json_t *p = pod(f, name);
    const char *at =
        p ? json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName")) : NULL;
    snprintf(out, n, "%s", at ? at : "");
    json_decref(p);
}

/* Two GPU types (issue 27): one T4 node, two A100 nodes, 4 GPUs each. A gang of 6 one-GPU
 * workers fits only on the A100s together and lands there whole (T4 + A100 would also hold
 * it, and least-allocated spreading would start on the empty T4); a job requiring H100 is
 * said never to fit, naming the type; one requiring 4 A100 GPUs while 2 are free waits, its
 * Event naming the type and what is free of it. */
static void test_gpu_types_one_per_job(void **state)
{
    fixture *f = *state;
    add_gpu_node(f, "t4-0", "Tesla-T4");
    add_gpu_node(f, "a100-0", "A100-SXM4-40GB");
    add_gpu_node(f, "a100-1", "A100-SXM4-40GB");
    runner r;
    start_synced(f, &r);
    char big[1024], h100[1024];
    role(big, sizeof big, "Worker", 6, "1\",\"nvidia.com/gpu\":\"1", "");
    add_job(f, "six", big, "");
    snprintf(h100, sizeof h100,
             "\"Worker\":{\"replicas\":1,\"template\":{\"spec\":{\"schedulerName\":\"drover\","
             "\"nodeSelector\":{\"nvidia.com/gpu.product\":\"H100\"},\"containers\":[{\"name\":"
             "\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\","
             "\"nvidia.com/gpu\":\"1\"}}}]}}}");
    add_job(f, "h100", h100, "");
    WAIT_FOR(pod_bound(f, "six-worker-0") && pod_bound(f, "six-worker-5"));
    for (int i = 0; i < 6; i++) {
        char name[32], at[64];
        snprintf(name, sizeof name, "six-worker-%d", i);
        WAIT_FOR(pod_bound(f, name));
        node_of_pod(f, name, at, sizeof at);
        assert_int_equal(strncmp(at, "a100-", 5), 0);
    }
    WAIT_FOR(now_in(f, "h100", "Queued", "NeverFits"));
    char st[8], why[48], cmsg[300];
    cond_of(f, "h100", "Queued", st, why, cmsg);
    assert_non_null(strstr(cmsg, "GPU type H100"));
    /* 4 more A100 GPUs wanted, 2 free there (the T4's 4 do not count): its wait names both */
    char four[1024], msg[600];
    snprintf(four, sizeof four,
             "\"Worker\":{\"replicas\":4,\"template\":{\"spec\":{\"schedulerName\":\"drover\","
             "\"nodeSelector\":{\"nvidia.com/gpu.product\":\"A100-SXM4-40GB\"},\"containers\":[{"
             "\"name\":\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"1\","
             "\"nvidia.com/gpu\":\"1\"}}}]}}}");
    add_job(f, "four", four, "");
    WAIT_FOR(events(f, "four", "Waiting", msg, sizeof msg) >= 1);
    assert_non_null(strstr(msg, "waiting for 4 x A100-SXM4-40GB; 2 free"));
    stop(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_derived_names_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpu_types_one_per_job, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
