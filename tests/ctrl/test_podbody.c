/*
 * test_podbody.c - a pod creation's body (src/ctrl/podbody.c): the shape spliced per pod
 * (podbody_render) against the template parsed, edited and dumped per pod (podbody_dump), byte
 * for byte, over varied templates (env present or absent, duplicates, several containers,
 * annotations, init containers, a template holding a marker), both frameworks, every role,
 * bound and not, with and without a CPU limit, and values that need escapes or fall back. The
 * test fails on any difference, and when the shapes served fewer bodies than they should (a
 * render that always fell back would compare equal).
 */
#include "ctrl.h"
#include "json.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *const TEMPLATES[] = {
    NULL, /* {}: no containers, no environment (drv_peers_apply refuses: both fall back) */
    "{\"spec\":{\"containers\":[{\"name\":\"main\",\"image\":\"t\"}]}}",
    /* env present: a stale RANK and TF_CONFIG replaced, a duplicate RANK left, others kept */
    "{\"metadata\":{\"labels\":{\"team\":\"a\",\"drover.dev/rank\":\"old\"},\"annotations\":"
    "{\"note\":\"q\\\"uote\\\\ \\u00e9\\n\"}},\"spec\":{\"restartPolicy\":\"OnFailure\","
    "\"initContainers\":[{\"name\":\"init\",\"image\":\"busybox\",\"env\":[{\"name\":\"RANK\","
    "\"value\":\"x\"}]}],\"containers\":[{\"name\":\"main\",\"image\":\"t\",\"env\":[{\"name\":"
    "\"A\",\"value\":\"1\"},{\"name\":\"RANK\",\"value\":\"stale\"},{\"name\":\"RANK\",\"value\":"
    "\"dup\"},{\"name\":\"TF_CONFIG\",\"value\":\"{}\"}],\"resources\":{\"limits\":{\"cpu\":"
    "\"9\",\"memory\":\"1Gi\"},\"requests\":{\"cpu\":\"1\"}}},{\"name\":\"side\",\"image\":\"s\"}]}"
    "}",
    /* one container whose env is not an array, resources without limits, a nodeName set */
    "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"ignored\",\"labels\":7},"
    "\"spec\":{\"nodeName\":\"elsewhere\",\"hostname\":\"h\",\"containers\":[{\"name\":\"main\","
    "\"env\":{\"RANK\":\"1\"},\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]}}",
    /* a template that already holds a marker's text: the shape cannot be cut, falls back */
    "{\"metadata\":{\"annotations\":{\"x\":\"\\u0001drvA\\u0001\"}},\"spec\":{\"containers\":"
    "[{\"name\":\"main\"}]}}",
    /* the env's value of an entry is not a string, an entry without a name */
    "{\"spec\":{\"containers\":[{\"name\":\"main\",\"env\":[{\"value\":\"nameless\"},{\"name\":"
    "\"WORLD_SIZE\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"x\"}}},{\"name\":\"RANK\","
    "\"value\":5}]}]}}",
};
enum { NTEMPLATES = sizeof TEMPLATES / sizeof TEMPLATES[0] };

/* Job names and namespaces: plain, needing escapes, outside ASCII (falls back), too long for a
 * hostname (falls back). */
static const char *const JOBS[] = {"mnist", "a\"b\\c\td\x01", "caf\xc3\xa9",
                                   "a-job-name-long-enough-that-its-pods-hostnames-exceed-63"};
enum { NJOBS = sizeof JOBS / sizeof JOBS[0] };

/* The strings a filled render points at (one render at a time). */
static char pod_name[600], node_name[64], uid[64];

static void fill(pod_render *r, const char *tmpl, int job, int framework, int role, int rank,
                 bool bound, int64_t limit)
{
    memset(r, 0, sizeof *r);
    r->tmpl = tmpl;
    r->sched = "drover";
    r->ns = job == 1 ? "n\"s" : "ml";
    r->job = JOBS[job];
    snprintf(pod_name, sizeof pod_name, "%s-%s-%d", JOBS[job], drv_role_name(role), rank);
    r->pod = pod_name;
    snprintf(node_name, sizeof node_name, "node-%d%s", rank, job == 1 ? "\n" : "");
    r->node = bound ? node_name : "";
    snprintf(uid, sizeof uid, "uid-%d", job);
    r->uid = uid;
    r->role = role;
    r->rank = rank;
    r->peers.ns = r->ns;
    r->peers.name = r->job;
    r->peers.framework = (drv_framework)framework;
    r->peers.replicas[DRV_ROLE_CHIEF] = 1;
    r->peers.replicas[DRV_ROLE_WORKER] = 3 + job;
    r->peers.replicas[DRV_ROLE_PS] = framework == DRV_FRAMEWORK_TENSORFLOW ? 2 : 0;
    r->cpu_limit = limit;
}

/* Every combination, twice (the second pass from cached shapes): the same bytes both ways. */
static void test_same_bytes(void **unused)
{
    (void)unused;
    podbody_cache *pc = podbody_cache_new();
    assert_non_null(pc);
    int compared = 0, spliceable = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int t = 0; t < NTEMPLATES; t++)
            for (int j = 0; j < NJOBS; j++)
                for (int fw = 0; fw < 2; fw++)
                    for (int role = 0; role < DRV_NROLES; role++)
                        for (int rank = 0; rank < 3; rank++)
                            for (int b = 0; b < 4; b++) {
                                pod_render r;
                                fill(&r, TEMPLATES[t], j, fw, role, rank, b & 1, b & 2 ? 1500 : 0);
                                char *want = podbody_dump(&r);
                                char *got = podbody_render(pc, &r);
                                /* (NULL both: a TF job whose peers' names are too long) */
                                if (!want != !got)
                                    fail_msg("template %d job %d fw %d role %d rank %d b %d: "
                                             "%s body only",
                                             t, j, fw, role, rank, b, want ? "one" : "the other");
                                if (want && strcmp(want, got) != 0)
                                    fail_msg("template %d job %d fw %d role %d rank %d b %d:\n"
                                             "want %s\ngot  %s",
                                             t, j, fw, role, rank, b, want, got);
                                compared++;
                                /* a shape serves templates 1-3, 5 and the first two jobs */
                                spliceable += TEMPLATES[t] && t != 4 && j < 2;
                                drv_free(want);
                                drv_free(got);
                            }
    assert_true(compared > 0);
    assert_int_equal(podbody_spliced(pc), spliceable);
    podbody_cache_free(pc);
}

/* The body is the pod: the spliced values parse back to what they were (not only the same
 * bytes as the other path), e.g. a job name with a quote, a backslash, a tab and \x01. */
static void test_values_parse_back(void **unused)
{
    (void)unused;
    podbody_cache *pc = podbody_cache_new();
    pod_render r;
    fill(&r, TEMPLATES[2], 1, DRV_FRAMEWORK_ALLREDUCE, DRV_ROLE_WORKER, 2, true, 2500);
    for (int k = 0; k < 2; k++) { /* (the second from the cached shape) */
        char *body = podbody_render(pc, &r);
        json_t *pod = json_loads(body, 0, NULL);
        assert_non_null(pod);
        json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
        assert_string_equal(json_string_value(json_object_get(meta, "name")), r.pod);
        assert_string_equal(json_string_value(json_object_get(meta, "namespace")), "n\"s");
        json_t *labels = json_object_get(meta, "labels");
        assert_string_equal(json_string_value(json_object_get(labels, "drover.dev/job")),
                            "a\"b\\c\td\x01");
        assert_string_equal(json_string_value(json_object_get(labels, "drover.dev/rank")), "2");
        assert_string_equal(json_string_value(json_object_get(labels, "team")), "a");
        assert_string_equal(json_string_value(json_object_get(spec, "nodeName")), "node-2\n");
        assert_string_equal(json_string_value(json_object_get(spec, "restartPolicy")), "OnFailure");
        json_t *c0 = json_array_get(json_object_get(spec, "containers"), 0);
        json_t *env = json_object_get(c0, "env");
        /* RANK of worker 2 with a master: 3, in the first RANK entry; the duplicate kept */
        assert_string_equal(json_string_value(json_object_get(json_array_get(env, 1), "value")),
                            "3");
        assert_string_equal(json_string_value(json_object_get(json_array_get(env, 2), "value")),
                            "dup");
        /* two containers: no CPU limit set (ctrl_resize_render only sets a single one's) */
        json_t *limits = json_object_get(json_object_get(c0, "resources"), "limits");
        assert_string_equal(json_string_value(json_object_get(limits, "cpu")), "9");
        json_decref(pod);
        drv_free(body);
    }
    assert_int_equal(podbody_spliced(pc), 2);
    podbody_cache_free(pc);
}

/* TF_CONFIG's cluster part is kept per job (podbody.c): a job scaled, given another port, or
 * another job of the same name in another namespace, gets its own, never the one kept. */
static void test_cluster_part_follows_the_job(void **unused)
{
    (void)unused;
    podbody_cache *pc = podbody_cache_new();
    assert_non_null(pc);
    static const char *const spaces[] = {"ml", "ml", "ml", "other", "ml"};
    static const int workers[] = {3, 5, 5, 5, 3}, ports[] = {0, 0, 7000, 7000, 0};
    char *first = NULL;
    for (int k = 0; k < 5; k++) {
        pod_render r;
        fill(&r, TEMPLATES[1], 0, DRV_FRAMEWORK_TENSORFLOW, DRV_ROLE_WORKER, 1, true, 0);
        r.ns = r.peers.ns = spaces[k];
        r.peers.replicas[DRV_ROLE_WORKER] = workers[k];
        r.peers.port = ports[k];
        char *want = podbody_dump(&r), *got = podbody_render(pc, &r);
        assert_non_null(want);
        assert_non_null(got);
        if (strcmp(want, got) != 0)
            fail_msg("case %d:\nwant %s\ngot  %s", k, want, got);
        if (k == 0)
            first = got;
        else if (k == 4) /* (back to the first job as it was: the same body again) */
            assert_string_equal(got, first);
        else
            assert_string_not_equal(got, first);
        if (got != first)
            drv_free(got);
        drv_free(want);
    }
    drv_free(first);
    podbody_cache_free(pc);
}

/* Every allocation of a render fails in turn: NULL or the right body, no leak (ASan). */
static void test_alloc_failures(void **unused)
{
    (void)unused;
    pod_render r;
    fill(&r, TEMPLATES[2], 0, DRV_FRAMEWORK_TENSORFLOW, DRV_ROLE_WORKER, 1, true, 1000);
    char *want = podbody_dump(&r);
    assert_non_null(want);
    for (long nth = 1; nth < 400; nth++) {
        podbody_cache *pc = podbody_cache_new();
        assert_non_null(pc);
        drv_alloc_fail_at(nth);
        char *got = podbody_render(pc, &r);
        long pending = drv_alloc_fail_pending();
        drv_alloc_fail_at(0);
        if (got)
            assert_string_equal(got, want);
        drv_free(got);
        char *again = podbody_render(pc, &r); /* a shape cached under failure still renders */
        assert_non_null(again);
        assert_string_equal(again, want);
        drv_free(again);
        podbody_cache_free(pc);
        if (pending > 0)
            break; /* (the render made fewer than nth allocations) */
    }
    drv_free(want);
}

/* (the templates without containers are logged once per pod by both paths) */
static void quiet(enum drv_log_level lvl, const char *msg, void *arg)
{
    (void)lvl, (void)msg, (void)arg;
}

int main(void)
{
    drv_log_set(quiet, NULL, DRV_LOG_ERROR);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_bytes),
        cmocka_unit_test(test_values_parse_back),
        cmocka_unit_test(test_cluster_part_follows_the_job),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
