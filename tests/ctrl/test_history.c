/*
 * test_history.c - the audit-log checks of history.h on small hand-written histories: each
 * violation is counted once it happens, and a clean history counts none.
 */
#include "history.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* A node of 4 CPUs and 8Gi, as the audit log has it. */
static const char NODE[] = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":{"
                           "\"name\":\"n-0\"},\"status\":{\"allocatable\":{\"cpu\":\"4\","
                           "\"memory\":\"8Gi\"}}}}\n";

/* Appends one pod event: uid, TrainingJob job (rank 0 worker + rank) or PodGroup group, node
 * ("" unbound), phase, CPU request. */
static void pod(char *log, size_t n, const char *type, const char *uid, const char *job, int rank,
                const char *node, const char *phase, const char *cpu)
{
    char labels[256], spec_node[64] = "";
    if (!strncmp(job, "pg:", 3))
        snprintf(labels, sizeof labels, "{\"scheduling.x-k8s.io/pod-group\":\"%s\"}", job + 3);
    else
        snprintf(labels, sizeof labels,
                 "{\"drover.dev/job\":\"%s\",\"drover.dev/role\":\"worker\","
                 "\"drover.dev/rank\":\"%d\"}",
                 job, rank);
    if (node[0])
        snprintf(spec_node, sizeof spec_node, "\"nodeName\":\"%s\",", node);
    size_t len = strlen(log);
    snprintf(log + len, n - len,
             "{\"type\":\"%s\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"uid\":\"%s\","
             "\"name\":\"%s-%d-%s\",\"namespace\":\"default\",\"labels\":%s},\"spec\":{%s"
             "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"%s\",\"memory\":\"1Gi\"}}}]},"
             "\"status\":{\"phase\":\"%s\"}}}\n",
             type, uid, job, rank, uid, labels, spec_node, cpu, phase);
}

static hist_counts replay(const char *log, const char *gang, int slots)
{
    hist *h = hist_new();
    hist_gang(h, gang, slots);
    hist_replay(h, log);
    hist_counts c = hist_result(h);
    hist_free(h);
    return c;
}

static void clean_run(void **state)
{
    (void)state;
    char log[8192];
    snprintf(log, sizeof log, "%s", NODE);
    pod(log, sizeof log, "ADDED", "a", "j", 0, "", "Pending", "2");
    pod(log, sizeof log, "ADDED", "b", "j", 1, "", "Pending", "2");
    pod(log, sizeof log, "MODIFIED", "a", "j", 0, "n-0", "Pending", "2");
    pod(log, sizeof log, "MODIFIED", "b", "j", 1, "n-0", "Pending", "2");
    pod(log, sizeof log, "MODIFIED", "a", "j", 0, "n-0", "Succeeded", "2");
    pod(log, sizeof log, "MODIFIED", "b", "j", 1, "n-0", "Succeeded", "2");
    /* a second job in the room the first left */
    pod(log, sizeof log, "ADDED", "c", "k", 0, "n-0", "Running", "4");
    hist *h = hist_new();
    hist_gang(h, "default/j", 2);
    hist_replay(h, log);
    hist_counts c = hist_result(h);
    assert_int_equal(c.events, 8);
    assert_int_equal(c.overcommits + c.double_binds + c.twice_done + c.half_gangs, 0);
    const char *order[4];
    assert_int_equal(hist_bind_order(h, order, 4), 2);
    assert_string_equal(order[0], "default/j");
    assert_string_equal(order[1], "default/k");
    assert_int_equal(hist_binds(h, "default/j"), 2);
    hist_free(h);
}

static void overcommit(void **state)
{
    (void)state;
    char log[8192];
    snprintf(log, sizeof log, "%s", NODE);
    pod(log, sizeof log, "ADDED", "a", "j", 0, "n-0", "Running", "3");
    pod(log, sizeof log, "ADDED", "b", "k", 0, "n-0", "Pending", "2"); /* 5 of 4 CPUs */
    pod(log, sizeof log, "MODIFIED", "a", "j", 0, "n-0", "Succeeded", "3");
    pod(log, sizeof log, "MODIFIED", "b", "k", 0, "n-0", "Running", "2"); /* fits now */
    assert_int_equal(replay(log, "default/j", 1).overcommits, 1);
}

static void double_bind(void **state)
{
    (void)state;
    char log[8192];
    snprintf(log, sizeof log, "%s", NODE);
    pod(log, sizeof log, "ADDED", "a", "j", 0, "n-0", "Running", "1");
    pod(log, sizeof log, "ADDED", "b", "j", 0, "n-0", "Pending", "1"); /* same rank, live */
    hist_counts c = replay(log, "default/j", 1);
    assert_int_equal(c.double_binds, 1);
    /* the same rank bound again after its first pod was deleted: fine */
    snprintf(log, sizeof log, "%s", NODE);
    pod(log, sizeof log, "ADDED", "a", "j", 0, "n-0", "Running", "1");
    pod(log, sizeof log, "DELETED", "a", "j", 0, "n-0", "Running", "1");
    pod(log, sizeof log, "ADDED", "b", "j", 0, "n-0", "Pending", "1");
    pod(log, sizeof log, "MODIFIED", "b", "j", 0, "n-0", "Succeeded", "1");
    c = replay(log, "default/j", 1);
    assert_int_equal(c.double_binds + c.twice_done, 0);
    /* ... but not succeeding twice */
    pod(log, sizeof log, "ADDED", "c", "j", 0, "n-0", "Succeeded", "1");
    assert_int_equal(replay(log, "default/j", 1).twice_done, 1);
}

static void half_gang(void **state)
{
    (void)state;
    char log[8192];
    snprintf(log, sizeof log, "%s", NODE);
    pod(log, sizeof log, "ADDED", "a", "pg:g", 0, "n-0", "Running", "1");
    pod(log, sizeof log, "ADDED", "b", "pg:g", 1, "", "Pending", "1");
    pod(log, sizeof log, "MODIFIED", "a", "pg:g", 0, "n-0", "Failed", "1"); /* b unbound */
    pod(log, sizeof log, "MODIFIED", "b", "pg:g", 1, "n-0", "Succeeded", "1");
    assert_int_equal(replay(log, "default/g", 2).half_gangs, 1);
    /* a gang not declared is not checked */
    assert_int_equal(replay(log, "default/other", 2).half_gangs, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clean_run),
        cmocka_unit_test(overcommit),
        cmocka_unit_test(double_bind),
        cmocka_unit_test(half_gang),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
