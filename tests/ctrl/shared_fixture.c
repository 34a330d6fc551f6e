/*
 * shared_fixture.c - shared_fixture.h's helpers: requests to the test API server and a
 * controller thread, nothing else.
 */
#include "shared_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

/* A TrainingJob of n workers of cpu each; spec: more spec fields ("" or "...,"); pod: more
 * pod spec fields ("" or "...,"). */
void add_tj(fixture *f, const char *name, int n, const char *cpu, const char *spec, const char *pod)
{
    req(f, "POST", TJ_PATH,
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{%s\"replicaSpecs\":{\"Worker\":{"
        "\"replicas\":%d,\"template\":{\"spec\":{%s\"schedulerName\":\"drover\",\"containers\":"
        "[{\"name\":\"main\",\"image\":\"t\",\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]}}}}}"
        "}",
        name, spec, n, pod, cpu);
}

/* How many of job's pods are bound, and (nodes, when given) to which, comma-separated. */
int bound(fixture *f, const char *job, char *nodes, size_t n)
{
    json_t *l = get(f, "/api/v1/namespaces/default/pods");
    int k = 0;
    size_t i;
    json_t *p;
    if (nodes)
        nodes[0] = 0;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        json_t *m = json_object_get(p, "metadata");
        const char *j =
            json_string_value(json_object_get(json_object_get(m, "labels"), "drover.dev/job"));
        const char *node =
            json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        if (!j || strcmp(j, job) != 0 || !node)
            continue;
        k++;
        if (nodes)
            snprintf(nodes + strlen(nodes), n - strlen(nodes), "%s,", node);
    }
    json_decref(l);
    return k;
}

/* TrainingJob job's annotation key into buf (n bytes; "" when absent); whether it is there. */
bool annotation(fixture *f, const char *job, const char *key, char *buf, size_t n)
{
    json_t *o = get(f, TJ_PATH "/%s", job);
    const char *v = json_string_value(
        json_object_get(json_object_get(json_object_get(o, "metadata"), "annotations"), key));
    snprintf(buf, n, "%s", v ? v : "");
    json_decref(o);
    return v != NULL;
}

void *run_main(void *arg)
{
    runner *r = arg;
    r->rc = drv_ctrl_run(r->c, &r->stop, &r->d);
    return NULL;
}

/* A controller under the given profile text. */
void start_text(fixture *f, runner *r, const char *text, drv_profile *prof)
{
    drv_diag d = {{0}};
    assert_int_equal(drv_profile_parse("test", text, prof, &d), 0);
    drv_ctrl_opts o = {.profile = prof};
    memset(r, 0, sizeof *r);
    r->cfg = f->cfg;
    r->cfg.component = "run"; /* told apart from the test's own requests (rbac_check.h) */
    assert_int_equal(drv_ctrl_new(&r->c, &r->cfg, &o, &d), 0);
    assert_int_equal(pthread_create(&r->t, NULL, run_main, r), 0);
}

/* Kubelet's part: the pods of job bound and not being deleted run; those being deleted go.
 * Returns how many are being deleted with grace_s as their grace period. */
int kubelet(fixture *f, const char *job, long grace_s)
{
    json_t *l = get(f, "/api/v1/namespaces/default/pods");
    int graceful = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        json_t *m = json_object_get(p, "metadata");
        const char *j =
            json_string_value(json_object_get(json_object_get(m, "labels"), "drover.dev/job"));
        const char *name = json_string_value(json_object_get(m, "name"));
        if (!j || strcmp(j, job) != 0)
            continue;
        char path[256];
        snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s", name);
        if (json_object_get(m, "deletionTimestamp")) {
            json_t *g = json_object_get(m, "deletionGracePeriodSeconds");
            graceful += json_is_integer(g) && json_integer_value(g) == grace_s;
        } else if (json_object_get(json_object_get(p, "spec"), "nodeName")) {
            strncat(path, "/status", sizeof path - strlen(path) - 1);
            req(f, "PATCH", path, "{\"status\":{\"phase\":\"Running\"}}");
        }
    }
    json_decref(l);
    return graceful;
}

/* PriorityClasses high (1000) and low (0). */
void add_classes(fixture *f)
{
    static const char *const classes[][2] = {{"high", "1000"}, {"low", "0"}};
    for (int i = 0; i < 2; i++)
        req(f, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
            "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\",\"metadata\":"
            "{\"name\":\"%s\"},\"value\":%s}",
            classes[i][0], classes[i][1]);
}

void preemption_scene(fixture *f, runner *r, const char *profile, drv_profile *prof)
{
    add_node(f, "node-a", "8");
    add_classes(f);
    start_text(f, r, profile, prof);
    WAIT_FOR(drv_ctrl_get_stats(r->c).synced);
    add_tj(f, "low-a", 2, "4", "\"priorityClassName\":\"low\",",
           "\"terminationGracePeriodSeconds\":30,");
    WAIT_FOR(bound(f, "low-a", NULL, 0) == 2);
    kubelet(f, "low-a", 30);
    /* (running as the controller sees it: a pod whose creation is not answered yet has not
     * run, and is deleted without a checkpoint handshake) */
    WAIT_FOR(now_in(f, "low-a", "Running", NULL));
    add_tj(f, "vip", 2, "4", "\"priorityClassName\":\"high\",", "");
}
