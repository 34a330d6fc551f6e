/*
 * test_peers.c - peer discovery (src/ctrl/peers.c): the names, TF_CONFIG and all-reduce
 * variables a job's pods get, and its headless Service. Expected values are written from
 * Kubeflow's conventions (peers.h), not from the program's output.
 */
#include "peers.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static drv_peer_job tf_job(void)
{
    drv_peer_job j = {.ns = "ml", .name = "mnist", .framework = DRV_FRAMEWORK_TENSORFLOW};
    j.replicas[DRV_ROLE_PS] = 1;
    j.replicas[DRV_ROLE_CHIEF] = 1;
    j.replicas[DRV_ROLE_WORKER] = 2;
    j.replicas[DRV_ROLE_EVALUATOR] = 1;
    return j;
}

static json_t *pod_template(void)
{
    json_t *pod = json_loads("{\"metadata\":{},\"spec\":{\"containers\":[{\"name\":\"a\","
                             "\"env\":[{\"name\":\"TF_CONFIG\",\"value\":\"stale\"},"
                             "{\"name\":\"KEEP\",\"value\":\"1\"}]},{\"name\":\"b\"}]}}",
                             0, NULL);
    assert_non_null(pod);
    return pod;
}

/* The value of variable name in container c of pod, or NULL; fails on duplicates. */
static const char *env_of(json_t *pod, size_t c, const char *name)
{
    json_t *env = json_object_get(
        json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), c), "env");
    const char *found = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0) {
            assert_null(found);
            found = json_string_value(json_object_get(e, "value"));
        }
    }
    return found;
}

static void tf_config_names_every_training_peer(void **state)
{
    (void)state;
    drv_peer_job j = tf_job();
    char *text = drv_peers_tf_config(&j, DRV_ROLE_WORKER, 1);
    assert_non_null(text);
    json_t *tf = json_loads(text, 0, NULL);
    assert_non_null(tf);
    json_t *cluster = json_object_get(tf, "cluster");
    assert_int_equal(json_object_size(cluster), 3); /* chief, ps, worker: no evaluator */
    assert_null(json_object_get(cluster, "evaluator"));
    json_t *workers = json_object_get(cluster, "worker");
    assert_int_equal(json_array_size(workers), 2);
    assert_string_equal(json_string_value(json_array_get(workers, 1)),
                        "mnist-worker-1.mnist.ml.svc:2222");
    assert_string_equal(json_string_value(json_array_get(json_object_get(cluster, "ps"), 0)),
                        "mnist-ps-0.mnist.ml.svc:2222");
    assert_string_equal(json_string_value(json_array_get(json_object_get(cluster, "chief"), 0)),
                        "mnist-chief-0.mnist.ml.svc:2222");
    json_t *task = json_object_get(tf, "task");
    assert_string_equal(json_string_value(json_object_get(task, "type")), "worker");
    assert_int_equal(json_integer_value(json_object_get(task, "index")), 1);
    assert_string_equal(json_string_value(json_object_get(tf, "environment")), "cloud");
    json_decref(tf);
    drv_free(text);
}

static void evaluator_sees_only_itself(void **state)
{
    (void)state;
    drv_peer_job j = tf_job();
    char *text = drv_peers_tf_config(&j, DRV_ROLE_EVALUATOR, 0);
    json_t *tf = json_loads(text, 0, NULL);
    assert_non_null(tf);
    json_t *cluster = json_object_get(tf, "cluster");
    assert_int_equal(json_object_size(cluster), 1);
    assert_string_equal(json_string_value(json_array_get(json_object_get(cluster, "evaluator"), 0)),
                        "mnist-evaluator-0.mnist.ml.svc:2222");
    json_decref(tf);
    drv_free(text);
}

static void apply_sets_hostname_and_replaces_stale_env(void **state)
{
    (void)state;
    drv_peer_job j = tf_job();
    json_t *pod = pod_template();
    drv_diag d = {{0}};
    assert_int_equal(drv_peers_apply(&j, DRV_ROLE_PS, 0, pod, &d), 0);
    json_t *spec = json_object_get(pod, "spec");
    assert_string_equal(json_string_value(json_object_get(spec, "hostname")), "mnist-ps-0");
    assert_string_equal(json_string_value(json_object_get(spec, "subdomain")), "mnist");
    for (size_t c = 0; c < 2; c++) { /* every container, the stale value replaced */
        const char *v = env_of(pod, c, "TF_CONFIG");
        assert_non_null(v);
        assert_non_null(strstr(v, "\"type\":\"ps\""));
    }
    assert_string_equal(env_of(pod, 0, "KEEP"), "1");
    json_decref(pod);
}

static void allreduce_job_gets_ranks(void **state)
{
    (void)state;
    drv_peer_job j = {.ns = "ml", .name = "bert", .framework = DRV_FRAMEWORK_ALLREDUCE};
    j.replicas[DRV_ROLE_CHIEF] = 1;
    j.replicas[DRV_ROLE_WORKER] = 3;
    json_t *master = pod_template(), *worker = pod_template();
    drv_diag d = {{0}};
    assert_int_equal(drv_peers_apply(&j, DRV_ROLE_CHIEF, 0, master, &d), 0);
    assert_int_equal(drv_peers_apply(&j, DRV_ROLE_WORKER, 2, worker, &d), 0);
    assert_string_equal(env_of(master, 0, "MASTER_ADDR"), "bert-master-0.bert.ml.svc");
    assert_string_equal(env_of(master, 0, "MASTER_PORT"), "23456");
    assert_string_equal(env_of(master, 0, "WORLD_SIZE"), "4");
    assert_string_equal(env_of(master, 0, "RANK"), "0");
    assert_string_equal(env_of(worker, 1, "RANK"), "3");
    assert_string_equal(env_of(worker, 1, "WORLD_SIZE"), "4");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(master, "spec"), "hostname")),
        "bert-master-0");
    json_decref(master);
    json_decref(worker);
}

/* Every role's name in pod names, written from Kubeflow's replica types (not from the core's
 * role names), the all-reduce chief's "master" and an out-of-range role; and the pods of both
 * frameworks are named with them. */
static void role_names_are_kubeflows(void **state)
{
    (void)state;
    static const char *const tf[DRV_NROLES] = {"ps", "chief", "worker", "evaluator"};
    static const char *const ar[DRV_NROLES] = {"ps", "master", "worker", "evaluator"};
    drv_peer_job j = tf_job();
    char buf[64], want[64];
    for (int allreduce = 0; allreduce < 2; allreduce++) {
        j.framework = allreduce ? DRV_FRAMEWORK_ALLREDUCE : DRV_FRAMEWORK_TENSORFLOW;
        const char *const *names = allreduce ? ar : tf;
        for (int r = 0; r < DRV_NROLES; r++) {
            assert_string_equal(drv_peers_role_name(r, allreduce), names[r]);
            assert_string_equal(drv_peers_role(&j, r), names[r]);
            assert_int_equal(drv_peers_pod_name(&j, r, 2, buf, sizeof buf), 0);
            snprintf(want, sizeof want, "mnist-%s-2", names[r]);
            assert_string_equal(buf, want);
        }
        assert_string_equal(drv_peers_role_name(-1, allreduce), "?");
        assert_string_equal(drv_peers_role_name(DRV_NROLES, allreduce), "?");
    }
}

static void service_is_headless_and_owned(void **state)
{
    (void)state;
    drv_peer_job j = tf_job();
    char *text = drv_peers_service_json(&j, "uid-1");
    assert_non_null(text);
    json_t *svc = json_loads(text, 0, NULL);
    drv_free(text);
    assert_non_null(svc);
    json_t *spec = json_object_get(svc, "spec");
    assert_string_equal(json_string_value(json_object_get(spec, "clusterIP")), "None");
    assert_true(json_is_true(json_object_get(spec, "publishNotReadyAddresses")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(spec, "selector"), "drover.dev/job")),
        "mnist");
    json_t *meta = json_object_get(svc, "metadata");
    assert_string_equal(json_string_value(json_object_get(meta, "name")), "mnist");
    json_t *owner = json_array_get(json_object_get(meta, "ownerReferences"), 0);
    assert_string_equal(json_string_value(json_object_get(owner, "uid")), "uid-1");
    assert_string_equal(json_string_value(json_object_get(owner, "kind")), "TrainingJob");
    json_decref(svc);
}

static void bad_templates_and_long_names_are_refused(void **state)
{
    (void)state;
    drv_peer_job j = tf_job();
    json_t *pod = json_loads("{\"spec\":{}}", 0, NULL);
    drv_diag d = {{0}};
    assert_int_equal(drv_peers_apply(&j, DRV_ROLE_WORKER, 0, pod, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "spec.containers"));
    json_decref(pod);
    char name[80];
    memset(name, 'a', 60);
    name[60] = 0;
    j.name = name; /* a-...-a-worker-0 is longer than a DNS label */
    char buf[128];
    assert_int_equal(drv_peers_pod_name(&j, DRV_ROLE_WORKER, 0, buf, sizeof buf), DRV_ERANGE);
    pod = pod_template();
    assert_int_equal(drv_peers_apply(&j, DRV_ROLE_WORKER, 0, pod, &d), DRV_ERANGE);
    json_decref(pod);
}

/* ---- TF_CONFIG, text against a tree ---------------------------------------------------------
 * peers.c writes TF_CONFIG as text; the reference here builds the same object with jansson, as
 * peers.c did before, and dumps it sorted: every byte must agree, names needing escapes, outside
 * ASCII (valid or not) and too long for a hostname included. */

static json_t *ref_address(const drv_peer_job *j, int role, int rank)
{
    char pod[64], buf[512];
    if (drv_peers_pod_name(j, role, rank, pod, sizeof pod) != 0)
        return NULL;
    snprintf(buf, sizeof buf, "%s.%s.%s.svc:%d", pod, j->name, j->ns,
             j->port > 0 ? j->port : DRV_PEERS_TF_PORT);
    return json_string(buf);
}

static char *ref_tf_config(const drv_peer_job *j, int role, int rank)
{
    json_t *cluster = json_object();
    bool ok = true;
    if (role == DRV_ROLE_EVALUATOR) { /* (an address jansson refuses: an empty list) */
        json_t *self = json_array();
        json_array_append_new(self, ref_address(j, role, rank));
        json_object_set_new(cluster, "evaluator", self);
    }
    for (int r = 0; role != DRV_ROLE_EVALUATOR && r < DRV_NROLES; r++) {
        if (r == DRV_ROLE_EVALUATOR || j->replicas[r] <= 0)
            continue;
        json_t *list = json_array();
        json_object_set_new(cluster, drv_peers_role(j, r), list);
        for (int i = 0; i < j->replicas[r]; i++)
            ok = ok && json_array_append_new(list, ref_address(j, r, i)) == 0;
    }
    json_t *tf = json_pack("{s:o, s:{s:s, s:i}, s:s}", "cluster", cluster, "task", "type",
                           drv_peers_role(j, role), "index", rank, "environment", "cloud");
    char *out = ok ? json_dumps(tf, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(tf);
    return out;
}

/* want (the tree's text, jansson's: free) and got (the text's: drv_free) agree: both NULL, or
 * the same bytes; counted in *compared, and in *refused when both are NULL; both freed. where
 * names the case in a failure. */
static void compare(const char *where, char *want, char *got, int *compared, int *refused)
{
    if (!want != !got)
        fail_msg("%s: %s only", where, want ? "the tree" : "the text");
    if (want && strcmp(want, got) != 0)
        fail_msg("%s:\nwant %s\ngot  %s", where, want, got);
    (*compared)++;
    *refused += !want;
    free(want);
    drv_free(got);
}

static void tf_config_text_is_the_tree_dumped(void **state)
{
    (void)state;
    static const char *const names[] = {"mnist", "a\"b\\c\td\x01/e\x7f", "caf\xc3\xa9", "bad\xff",
                                        "j-name-long-enough-that-its-pods-exceed-63-ch"};
    static const char *const spaces[] = {"ml", "n\"s\n", "\xe6\x97\xa5", "\xc3"};
    int compared = 0, refused = 0;
    for (size_t n = 0; n < sizeof names / sizeof *names; n++)
        for (size_t s = 0; s < sizeof spaces / sizeof *spaces; s++)
            for (int shape = 0; shape < 4; shape++)
                for (int role = 0; role < DRV_NROLES; role++)
                    for (int rank = 0; rank < 3; rank++) {
                        drv_peer_job j = {.ns = spaces[s],
                                          .name = names[n],
                                          .framework = DRV_FRAMEWORK_TENSORFLOW};
                        j.replicas[DRV_ROLE_PS] = shape & 1 ? 2 : 0;
                        j.replicas[DRV_ROLE_CHIEF] = shape & 2 ? 1 : 0;
                        j.replicas[DRV_ROLE_WORKER] = 1 + shape;
                        j.replicas[DRV_ROLE_EVALUATOR] = shape == 3;
                        j.port = shape == 2 ? 31337 : 0;
                        char where[80];
                        snprintf(where, sizeof where, "name %zu ns %zu shape %d role %d rank %d", n,
                                 s, shape, role, rank);
                        compare(where, ref_tf_config(&j, role, rank),
                                drv_peers_tf_config(&j, role, rank), &compared, &refused);
                    }
    /* both outcomes were seen: texts compared, and names refused by both */
    assert_true(refused > 0 && refused < compared);
}

/* The Service as text against the tree it was built as before (jansson, dumped compact), for
 * names needing escapes, outside ASCII and not UTF-8 (refused by both). */
static void service_text_is_the_tree_dumped(void **state)
{
    (void)state;
    static const char *const names[] = {"mnist", "a\"b\\c\td\x01/e", "caf\xc3\xa9", "bad\xff"};
    int compared = 0, refused = 0;
    for (size_t n = 0; n < sizeof names / sizeof *names; n++)
        for (int port = 0; port < 2; port++)
            for (int fw = 0; fw < 2; fw++) {
                drv_peer_job j = {.ns = n == 1 ? "n\"s" : "ml",
                                  .name = names[n],
                                  .framework = (drv_framework)fw,
                                  .port = port ? 8080 : 0};
                const char *uid = n == 2 ? "u\xc3\xa9" : "uid-\"1";
                int p = j.port > 0                      ? j.port
                        : fw == DRV_FRAMEWORK_ALLREDUCE ? DRV_PEERS_MASTER_PORT
                                                        : DRV_PEERS_TF_PORT;
                json_t *svc = json_pack(
                    "{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]},"
                    " s:{s:s, s:b, s:{s:s}, s:[{s:s, s:i, s:i}]}}",
                    "apiVersion", "v1", "kind", "Service", "metadata", "name", j.name, "namespace",
                    j.ns, "labels", "drover.dev/job", j.name, "ownerReferences", "apiVersion",
                    "drover.dev/v1alpha1", "kind", "TrainingJob", "name", j.name, "uid", uid,
                    "controller", 1, "blockOwnerDeletion", 1, "spec", "clusterIP", "None",
                    "publishNotReadyAddresses", 1, "selector", "drover.dev/job", j.name, "ports",
                    "name", "peers", "port", p, "targetPort", p);
                char *want = svc ? json_dumps(svc, JSON_COMPACT) : NULL;
                json_decref(svc);
                char where[32];
                snprintf(where, sizeof where, "name %zu", n);
                compare(where, want, drv_peers_service_json(&j, uid), &compared, &refused);
            }
    assert_true(refused > 0 && refused < compared);
}

/* Every allocation of the texts failing in turn: NULL (nothing leaked: the sanitizer build
 * says), or the same text as when none fails. */
static void texts_under_failing_allocations(void **state)
{
    (void)state;
    drv_peer_job j = tf_job();
    j.replicas[DRV_ROLE_WORKER] = 40; /* (TF_CONFIG past the first buffer: it grows) */
    for (int which = 0; which < 2; which++) {
        char *want = which ? drv_peers_service_json(&j, "uid-1")
                           : drv_peers_tf_config(&j, DRV_ROLE_WORKER, 3);
        assert_non_null(want);
        int failed = 0;
        for (long nth = 1; nth < 100; nth++) {
            drv_alloc_fail_at(nth);
            char *got = which ? drv_peers_service_json(&j, "uid-1")
                              : drv_peers_tf_config(&j, DRV_ROLE_WORKER, 3);
            long pending = drv_alloc_fail_pending();
            drv_alloc_fail_at(0);
            if (got)
                assert_string_equal(got, want);
            failed += !got;
            drv_free(got);
            if (pending > 0)
                break; /* (fewer than nth allocations) */
        }
        assert_true(failed > 0);
        drv_free(want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tf_config_names_every_training_peer),
        cmocka_unit_test(evaluator_sees_only_itself),
        cmocka_unit_test(tf_config_text_is_the_tree_dumped),
        cmocka_unit_test(apply_sets_hostname_and_replaces_stale_env),
        cmocka_unit_test(allreduce_job_gets_ranks),
        cmocka_unit_test(role_names_are_kubeflows),
        cmocka_unit_test(service_is_headless_and_owned),
        cmocka_unit_test(service_text_is_the_tree_dumped),
        cmocka_unit_test(texts_under_failing_allocations),
        cmocka_unit_test(bad_templates_and_long_names_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
