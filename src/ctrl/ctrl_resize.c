/*
 * ctrl_resize.c - CPU limits that a profile resizes (FlowCon's RESIZE decisions) on a real
 * cluster: in place through the pod's `resize` subresource where the API serves it (Kubernetes
 * >= 1.33, in-place pod resize beta and on by default), otherwise at the pod's next creation.
 * The state never holds a limit the API does not (ctrl.h; docs/running.md, "CPU limits").
 *
 *   start      GET /api/v1 once: does its resource list name pods/resize? (discover)
 *   decided    served, and the pod exists, runs on the node the API has it on, with no request
 *              about it out: the new limit is assumed in the state and a strategic merge PATCH
 *              of pods/NAME/resize, {"spec":{"containers":[{"name":C,"resources":{"limits":
 *              {"cpu":"1500m"}}}]}}, goes out through a binder thread (the shared API budget;
 *              never on the scheduler thread);
 *              otherwise the limit is kept as the pod's wanted one and the state keeps the
 *              API's: the next time the pod is created (a restart, a re-render, a migration)
 *              its first container gets it (render).
 *   answered   done: the API holds the new limit; refused (a 422: the QoS class would change,
 *              a Guaranteed pod whose requests equal its limits; a 404: the pod is gone): the
 *              state is restored to the pod's limit as the informer last had it, and the wanted
 *              limit is dropped (the profile decides again at its next interval).
 *   seen       every watch event of the pod carries its limit: the state takes it, unless a
 *              resize of it is out (the assumption stands until its answer; the mirror's).
 *
 * Only a pod of one container is resized: the state's per-pod limit is that container's (a
 * pod's limit is the sum of its containers', and which of several to change is not ours to
 * guess). Other operators' pods are never resized. A pod without a CPU limit in the API counts
 * in the state with its role's (its request when the template has none).
 *
 * Example: FlowCon gives worker 0 of "mnist" 4 CPUs on a node where it is alone. With 1.33 the
 * PATCH sets containers[0].resources.limits.cpu to "4000m" and the state says 4000 at once;
 * with 1.30 nothing is sent, the state keeps the template's 1000, and the worker gets 4000m when
 * it is next created.
 *
 * Owns: served and told (scheduler thread after start), the pod records' want_cpu_limit.
 * Touches the state's pod limits through the mirror (ctrl_mirror_set_cpu_limit; the mirror
 * follows the API's with each pod event, and ctrl_mirror_cpu_limit_back), the binder (the
 * PATCH), counters.
 */
#include "ctrl_resize.h"

#include "kube/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ctrl_resize_discover(ctrl_resize *rz, drv_kube *client)
{
    /* The resource list of the core group answers 200 on every version: one request, counted
     * for nothing when the subresource is absent (asking the subresource itself would 404). */
    drv_diag d = {{0}};
    long status = 0;
    json_t *list = NULL;
    int rc = drv_kube_request(client, "GET", "/api/v1", NULL, NULL, &status, &list, &d);
    bool served = false;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(list, "resources"), i, r)
    {
        const char *name = json_string_value(json_object_get(r, "name"));
        served |= name && strcmp(name, "pods/resize") == 0;
    }
    json_decref(list);
    rz->served = served;
    drv_log(DRV_LOG_INFO, "pods/resize is %s: CPU limits a profile resizes are %s",
            served ? "served"
            : rc   ? d.msg
                   : "not served (Kubernetes < 1.33)",
            served ? "changed in place" : "given to each pod when it is next created");
}

/* The name of the only container of slot s's pod template into buf; false when the template
 * has none or several (not resized: see the top). */
static bool only_container(const ctrl_mirror *m, int32_t s, char *buf, size_t n)
{
    const drv_pod *p = &m->st.pods[s];
    const char *tmpl = m->jobs[p->job].tmpl[p->role];
    json_t *tm = tmpl ? json_loads(tmpl, 0, NULL) : NULL;
    json_t *cs = json_object_get(json_object_get(tm, "spec"), "containers");
    const char *name = json_string_value(json_object_get(json_array_get(cs, 0), "name"));
    bool one = json_array_size(cs) == 1 && name;
    if (one)
        snprintf(buf, n, "%s", name);
    json_decref(tm);
    return one;
}

static void tell_once(ctrl_resize *rz)
{
    if (rz->told)
        return;
    rz->told = true;
    drv_log(DRV_LOG_INFO, "profile %s resizes CPU limits: %s (docs/running.md)", rz->cfg->prof.name,
            rz->served ? "in place, through pods/resize"
                       : "pods/resize is not served, so each pod gets its new limit when "
                         "it is next created");
}

int ctrl_resize_decided(ctrl_resize *rz, const drv_decision *x)
{
    ctrl_mirror *m = rz->mirror;
    int32_t s = x->pod;
    pod_record *p = &m->pods[s];
    char container[254];
    if (m->jobs[m->st.pods[s].job].members || !only_container(m, s, container, sizeof container))
        return 0; /* (another operator's pod, or one of several containers: not resized) */
    tell_once(rz);
    /* Not now (the pod is being created, bound or deleted, or not there): at its creation. */
    bool now = rz->served && p->presence == POD_PRESENT && !ctrl_pod_terminal(p->phase) &&
               p->inflight == REQ_NONE && p->api_node >= 0 && p->api_node == m->st.pods[s].node;
    p->want_cpu_limit = x->value;
    if (!now)
        return 0;
    char body[400];
    snprintf(body, sizeof body,
             "{\"spec\":{\"containers\":[{\"name\":\"%s\",\"resources\":{\"limits\":{\"cpu\":"
             "\"%lldm\"}}}]}}",
             container, (long long)x->value);
    char *own = drv_strdup(body);
    if (!own)
        return DRV_ENOMEM;
    ctrl_mirror_set_cpu_limit(m, s, x->value); /* assumed until the answer */
    int rc = ctrl_binder_resize(rz->binder, s, own);
    if (rc != 0)
        ctrl_mirror_set_cpu_limit(m, s, ctrl_mirror_api_cpu_limit(m, s));
    return rc;
}

void ctrl_resize_answered(ctrl_resize *rz, const ctrl_event *e)
{
    ctrl_mirror *m = rz->mirror;
    int32_t s = e->u.answer.slot;
    pod_record *p = &m->pods[s];
    if (e->u.answer.ok) {
        p->api_cpu_limit = m->st.pods[s].cpu_limit; /* (its watch event says so too) */
        ctrl_count(rz->counters, &rz->counters->stats.resizes, 1);
        return;
    }
    ctrl_mirror_cpu_limit_back(m, s);
    p->want_cpu_limit = 0;
    m->dirty = true;
}
