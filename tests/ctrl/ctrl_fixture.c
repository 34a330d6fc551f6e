/*
 * ctrl_fixture.c - the shared part of the `drover run` end-to-end tests (ctrl_fixture.h).
 */
#include "ctrl_fixture.h"
#include "rbac_check.h"

#include "drover/policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void *run_main(void *arg)
{
    runner *r = arg;
    r->rc = drv_ctrl_run(r->c, &r->stop, &r->d);
    return NULL;
}

void start(fixture *f, runner *r)
{
    start_profile(f, r, "gang-fifo");
}

void start_profile(fixture *f, runner *r, const char *profile)
{
    start_with(f, r, profile, NULL);
}

void start_with(fixture *f, runner *r, const char *policy, const drv_ctrl_opts *extra)
{
    drv_profile prof; /* (the controller copies it) */
    drv_diag d = {{0}};
    if (strchr(policy, '='))
        assert_int_equal(drv_profile_parse("test", policy, &prof, &d), 0);
    else
        assert_int_equal(drv_profile_builtin(policy, &prof, &d), 0);
    drv_ctrl_opts o = extra ? *extra : (drv_ctrl_opts){0};
    o.profile = &prof;
    memset(r, 0, sizeof *r);
    r->cfg = f->cfg;
    r->cfg.component = "run"; /* told apart from the test's own requests (rbac_check.h) */
    assert_int_equal(drv_ctrl_new(&r->c, &r->cfg, &o, &d), 0);
    assert_int_equal(pthread_create(&r->t, NULL, run_main, r), 0);
}

void start_synced(fixture *f, runner *r)
{
    start(f, r);
    WAIT_FOR(drv_ctrl_get_stats(r->c).synced);
}

void stop(runner *r)
{
    atomic_store(&r->stop, 1);
    pthread_join(r->t, NULL);
    assert_int_equal(r->rc, 0);
    drv_ctrl_free(r->c);
}

void req(fixture *f, const char *method, const char *path, const char *fmt, ...)
{
    char body[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    drv_diag d = {{0}};
    long status = 0;
    const char *ctype = strcmp(method, "PATCH") == 0 ? "application/merge-patch+json" : NULL;
    if (drv_kube_request(f->k, method, path, ctype, body[0] ? body : NULL, &status, NULL, &d))
        fail_msg("%s %s: %s", method, path, d.msg);
}

json_t *get(fixture *f, const char *fmt, ...)
{
    char path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    drv_diag d = {{0}};
    json_t *o = NULL;
    long status = 0;
    if (drv_kube_request(f->k, "GET", path, NULL, NULL, &status, &o, &d) != 0) {
        if (status != 404) /* a failure that is not "not there" shows in the test's output */
            fprintf(stderr, "GET %s: %s\n", path, d.msg);
        return NULL;
    }
    return o;
}

void add_node(fixture *f, const char *name, const char *cpu)
{
    add_node_in(f, name, cpu, NULL);
}

void add_node_in(fixture *f, const char *name, const char *cpu, const char *zone)
{
    char labels[200] = "";
    if (zone)
        snprintf(labels, sizeof labels, ",\"labels\":{\"topology.kubernetes.io/zone\":\"%s\"}",
                 zone);
    req(f, "POST", "/api/v1/nodes",
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\"%s},\"spec\":{},"
        "\"status\":{\"allocatable\":{\"cpu\":\"%s\",\"memory\":\"64Gi\",\"pods\":\"110\"},"
        "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
        name, labels, cpu);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", name);
    req(f, "PATCH", path, "{\"spec\":{\"taints\":null}}");
}

/* ---- reading what the controller wrote ---------------------------------------------- */

json_t *pod(fixture *f, const char *name)
{
    return get(f, "/api/v1/namespaces/default/pods/%s", name);
}

bool pod_exists(fixture *f, const char *name)
{
    json_t *p = pod(f, name);
    json_decref(p);
    return p != NULL;
}

bool pod_bound(fixture *f, const char *name)
{
    json_t *p = pod(f, name);
    bool b = p && json_object_get(json_object_get(p, "spec"), "nodeName") &&
             !json_object_get(json_object_get(p, "metadata"), "deletionTimestamp");
    json_decref(p);
    return b;
}

void set_phase(fixture *f, const char *pod_name, const char *phase)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s/status", pod_name);
    req(f, "PATCH", path, "{\"status\":{\"phase\":\"%s\"}}", phase);
}

const char *tj_uid(fixture *f, const char *name, char *buf, size_t n)
{
    json_t *tj = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/%s", name);
    const char *uid = json_string_value(json_object_get(json_object_get(tj, "metadata"), "uid"));
    snprintf(buf, n, "%s", uid ? uid : "");
    json_decref(tj);
    return buf;
}

/* Events about obj with reason; *message gets the last one's message. */
/* Kubelet's part of graceful deletions: pods being deleted are removed. Returns how many. */
int kubelet_finish_deletes(fixture *f)
{
    json_t *l = get(f, "/api/v1/namespaces/default/pods");
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        json_t *m = json_object_get(p, "metadata");
        if (!json_object_get(m, "deletionTimestamp"))
            continue;
        char path[256];
        snprintf(path, sizeof path, "/api/v1/namespaces/default/pods/%s",
                 json_string_value(json_object_get(m, "name")));
        drv_diag d = {{0}};
        long status;
        drv_kube_delete(f->k, path, 0, NULL, &status, &d);
        n++;
    }
    json_decref(l);
    return n;
}

int events(fixture *f, const char *obj, const char *reason, char *message, size_t n)
{
    json_t *l = get(f, "/api/v1/namespaces/default/events");
    int count = 0;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(l, "items"), i, e)
    {
        const char *o =
            json_string_value(json_object_get(json_object_get(e, "involvedObject"), "name"));
        const char *r = json_string_value(json_object_get(e, "reason"));
        if (o && r && !strcmp(o, obj) && !strcmp(r, reason)) {
            count++;
            if (message)
                snprintf(message, n, "%s", json_string_value(json_object_get(e, "message")));
        }
    }
    json_decref(l);
    return count;
}

/* ---- cmocka setup and teardown -------------------------------------------------------------- */

int fixture_open(void **state, drv_apiserver_opts o)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    drv_diag d = {{0}};
    o.request_log = true; /* for fixture_close's RBAC check */
    if (getenv("DROVER_TEST_DEBUG"))
        drv_log_set(NULL, NULL, DRV_LOG_DEBUG);
    assert_int_equal(drv_apiserver_start(&f->srv, &o, &d), 0);
    snprintf(f->url, sizeof f->url, "http://127.0.0.1:%u", drv_apiserver_port(f->srv));
    f->cfg.server = f->url;
    f->cfg.qps = 1e6;
    f->cfg.burst = 1000000;
    assert_int_equal(drv_kube_new(&f->k, &f->cfg, &d), 0);
    *state = f;
    return 0;
}

int fixture_close(void **state)
{
    fixture *f = *state;
    /* every request the controller made, granted by deploy/rbac.yaml, else the test fails */
    int rc = drv_rbac_check_server(f->srv, stderr);
    drv_kube_free(f->k);
    drv_apiserver_free(f->srv);
    free(f);
    return rc;
}

/* ---- TrainingJobs ---- */

/* A role of replicaSpecs: "<Key>":{...} with n pods of cpu each (extra: more fields, ""). */
void role(char *buf, size_t n, const char *key, int replicas, const char *cpu, const char *extra)
{
    snprintf(buf, n,
             "\"%s\":{%s\"replicas\":%d,\"template\":{\"spec\":{\"schedulerName\":\"drover\","
             "\"containers\":[{\"name\":\"main\",\"image\":\"t\",\"env\":[{\"name\":\"MINE\","
             "\"value\":\"kept\"}],\"resources\":{\"requests\":{\"cpu\":\"%s\"}}}]}}}",
             key, extra, replicas, cpu);
}

void add_job(fixture *f, const char *name, const char *specs, const char *run_policy)
{
    req(f, "POST", "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs",
        "{\"apiVersion\":\"drover.dev/v1alpha1\",\"kind\":\"TrainingJob\",\"metadata\":{"
        "\"name\":\"%s\",\"namespace\":\"default\"},\"spec\":{%s\"replicaSpecs\":{%s}}}",
        name, run_policy, specs);
}

/* The job's condition of type: its status, reason and message copied ("" when absent); true
 * when it is the last of the list (the current one, as printer columns read it). */
bool cond_of(fixture *f, const char *job, const char *type, char *status, char *reason,
             char *message)
{
    status[0] = reason[0] = 0;
    if (message)
        message[0] = 0;
    json_t *o = get(f, "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs/%s", job);
    json_t *list = json_object_get(json_object_get(o, "status"), "conditions");
    bool last = false;
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "type")), type) != 0)
            continue;
        snprintf(status, 8, "%s", json_string_value(json_object_get(c, "status")));
        snprintf(reason, 48, "%s", json_string_value(json_object_get(c, "reason")));
        if (message)
            snprintf(message, 300, "%s", json_string_value(json_object_get(c, "message")));
        last = i + 1 == json_array_size(list);
    }
    json_decref(o);
    return last;
}

/* Is the job's current (last) condition type, True, with reason (any when NULL)? */
bool now_in(fixture *f, const char *job, const char *type, const char *reason)
{
    char st[8], why[48];
    bool last = cond_of(f, job, type, st, why, NULL);
    return last && !strcmp(st, "True") && (!reason || !strcmp(why, reason));
}
