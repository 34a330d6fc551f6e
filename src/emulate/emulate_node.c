/*
 * emulate_node.c - the emulator's nodes (emulate.h): registered with the capacity, labels,
 * taints and cordon asked for, the not-ready taint the API server puts on a new node lifted once it
 * is Ready, and a heartbeat that keeps them Ready: one merge-PATCH of the status (the conditions
 * list is the kubelet's to own, so replacing it whole is right); lastTransitionTime stays the
 * registration time.
 */
#include "emulate.h"
#include "kube/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- nodes ---------------------------------------------------------------------------------- */

static void quantity_cpu(char *out, size_t n, int64_t milli)
{
    if (milli % 1000 == 0)
        snprintf(out, n, "%lld", (long long)(milli / 1000));
    else
        snprintf(out, n, "%lldm", (long long)milli);
}

static void quantity_bytes(char *out, size_t n, int64_t b)
{
    static const char *const suf[] = {"Ti", "Gi", "Mi", "Ki"};
    for (int i = 0; i < 4; i++) {
        int64_t unit = (int64_t)1 << (10 * (4 - i));
        if (b >= unit && b % unit == 0) {
            snprintf(out, n, "%lld%s", (long long)(b / unit), suf[i]);
            return;
        }
    }
    snprintf(out, n, "%lld", (long long)b);
}

static json_t *resources_json(const drv_emu_node *nd)
{
    char cpu[32], mem[32], gpu[24];
    quantity_cpu(cpu, sizeof cpu, nd->alloc.cpu);
    quantity_bytes(mem, sizeof mem, nd->alloc.mem);
    snprintf(gpu, sizeof gpu, "%lld", (long long)nd->alloc.gpu);
    return json_pack("{s:s, s:s, s:s, s:s}", "cpu", cpu, "memory", mem, "nvidia.com/gpu", gpu,
                     "pods", "110");
}

/* The node's status as the emulated kubelet reports it; heartbeat is now. */
static json_t *node_status(const drv_emulator *e, const drv_emu_node *nd, const char *heartbeat)
{
    json_t *res = resources_json(nd);
    if (!res)
        return NULL;
    json_t *conds = json_array();
    static const char *const pressure[][3] = {
        {"MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory"},
        {"DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
        {"PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"}};
    for (int i = 0; i < 3; i++)
        json_array_append_new(conds,
                              json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", pressure[i][0],
                                        "status", "False", "reason", pressure[i][1], "message",
                                        pressure[i][2], "lastHeartbeatTime", heartbeat,
                                        "lastTransitionTime", e->registered_at));
    json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", "Ready",
                                           "status", "True", "reason", "KubeletReady", "message",
                                           "kubelet is posting ready status (drover emulate)",
                                           "lastHeartbeatTime", heartbeat, "lastTransitionTime",
                                           e->registered_at));
    return json_pack("{s:O, s:o, s:o, s:[{s:s, s:s}], s:{s:s, s:s, s:s}}", "capacity", res,
                     "allocatable", res, "conditions", conds, "addresses", "type", "Hostname",
                     "address", nd->name, "nodeInfo", "kubeletVersion", "drover-emulate",
                     "operatingSystem", "linux", "architecture", "amd64");
}

/* Our labels onto labels (an object). */
static int set_labels(json_t *labels, const drv_emu_node *nd)
{
    int rc = json_object_set_new(labels, "kubernetes.io/hostname", json_string(nd->name));
    rc |= json_object_set_new(labels, "kubernetes.io/os", json_string("linux"));
    rc |= json_object_set_new(labels, DRV_EMU_NODE_LABEL, json_string("true"));
    if (nd->zone[0])
        rc |= json_object_set_new(labels, "topology.kubernetes.io/zone", json_string(nd->zone));
    if (nd->rack[0])
        rc |= json_object_set_new(labels, "drover.dev/rack", json_string(nd->rack));
    char buf[sizeof nd->labels], *save = NULL;
    snprintf(buf, sizeof buf, "%s", nd->labels);
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (eq) {
            *eq = 0;
            rc |= json_object_set_new(labels, kv, json_string(eq + 1));
        }
    }
    return rc ? DRV_ENOMEM : 0;
}

/* Our taints ("key[=value]:Effect,...") as the API's list; NULL when out of memory. */
static json_t *taints_json(const drv_emu_node *nd)
{
    json_t *list = json_array();
    char buf[sizeof nd->taints], *save = NULL;
    snprintf(buf, sizeof buf, "%s", nd->taints);
    for (char *t = strtok_r(buf, ",", &save); t && list; t = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(t, ':'), *eq = strchr(t, '=');
        if (!colon)
            continue;
        *colon = 0;
        if (eq && eq < colon)
            *eq = 0;
        json_t *one = json_pack("{s:s, s:s}", "key", t, "effect", colon + 1);
        if (one && eq && eq < colon)
            json_object_set_new(one, "value", json_string(eq + 1));
        if (!one || json_array_append_new(list, one) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list;
}

/* Our taints and cordon onto an existing node's spec (taints of others kept); *changed says
 * whether anything changed. */
static int set_taints(json_t *node, const drv_emu_node *nd, bool *changed)
{
    json_t *spec = json_object_get(node, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        if (!spec || json_object_set_new(node, "spec", spec))
            return DRV_ENOMEM;
    }
    json_t *have = json_object_get(spec, "taints"), *ours = taints_json(nd);
    if (!ours)
        return DRV_ENOMEM;
    if (!json_is_array(have)) {
        have = json_array();
        if (!have || json_object_set_new(spec, "taints", have)) {
            json_decref(ours);
            return DRV_ENOMEM;
        }
    }
    size_t i, k;
    json_t *t, *h;
    json_array_foreach(ours, i, t)
    {
        bool found = false;
        json_array_foreach(have, k, h) found |= json_equal(h, t);
        if (!found) {
            json_array_append(have, t);
            *changed = true;
        }
    }
    json_decref(ours);
    if (json_is_true(json_object_get(spec, "unschedulable")) != nd->unschedulable) {
        json_object_set_new(spec, "unschedulable", json_boolean(nd->unschedulable));
        *changed = true;
    }
    return 0;
}

/* Removes the node.kubernetes.io/not-ready taint the API server puts on a new node; *changed
 * says whether there was one. */
static void drop_not_ready(json_t *node, bool *changed)
{
    json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
    size_t i = 0;
    while (i < json_array_size(taints)) {
        const char *k = json_string_value(json_object_get(json_array_get(taints, i), "key"));
        if (k && !strcmp(k, "node.kubernetes.io/not-ready")) {
            json_array_remove(taints, i);
            *changed = true;
        } else {
            i++;
        }
    }
}

typedef struct node_arg {
    const drv_emu_node *nd;
    bool changed;
} node_arg;

static int mut_node(json_t *obj, void *arg)
{
    node_arg *a = arg;
    json_t *meta = json_object_get(obj, "metadata");
    json_t *labels = json_object_get(meta, "labels");
    if (!json_is_object(labels)) {
        labels = json_object();
        if (!labels || json_object_set_new(meta, "labels", labels))
            return DRV_ENOMEM;
    }
    json_t *before = json_deep_copy(labels);
    int rc = set_labels(labels, a->nd);
    a->changed = !json_equal(before, labels);
    json_decref(before);
    if (rc || (rc = set_taints(obj, a->nd, &a->changed)) != 0)
        return rc;
    drop_not_ready(obj, &a->changed);
    return a->changed ? 0 : DRV_EEXIST; /* DRV_EEXIST: nothing to write */
}

int emu_patch_node_status(drv_emulator *e, drv_kube *k, const drv_emu_node *nd, drv_diag *d)
{
    char now[32], path[160];
    drv_time_rfc3339(now, sizeof now, drv_clock_wall(), false);
    json_t *p = json_pack("{s:o}", "status", node_status(e, nd, now));
    char *body = p ? json_dumps(p, JSON_COMPACT) : NULL;
    json_decref(p);
    if (!body)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    snprintf(path, sizeof path, "/api/v1/nodes/%s/status", nd->name);
    long st = 0;
    int rc = drv_kube_request(k, "PATCH", path, "application/merge-patch+json", body, &st, NULL, d);
    free(body);
    return rc;
}

int emu_register_node(drv_emulator *e, const drv_emu_node *nd, drv_diag *d)
{
    char now[32];
    drv_time_rfc3339(now, sizeof now, drv_clock_wall(), false);
    json_t *labels = json_object();
    json_t *obj =
        json_pack("{s:s, s:s, s:{s:s, s:O}, s:{s:o, s:b}, s:o}", "apiVersion", "v1", "kind", "Node",
                  "metadata", "name", nd->name, "labels", labels, "spec", "taints", taints_json(nd),
                  "unschedulable", nd->unschedulable, "status", node_status(e, nd, now));
    int rc = obj && labels
                 ? set_labels(json_object_get(json_object_get(obj, "metadata"), "labels"), nd)
                 : DRV_ENOMEM;
    json_decref(labels);
    char *body = rc ? NULL : json_dumps(obj, JSON_COMPACT);
    if (!body) {
        json_decref(obj);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    json_decref(obj);
    long st = 0;
    json_t *created = NULL;
    char path[160];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", nd->name);
    rc = drv_kube_request(e->writer, "POST", "/api/v1/nodes", NULL, body, &st, &created, d);
    free(body);
    /* Ready first, then the taint: the node lifecycle controller, when one runs, puts the
     * not-ready taint back on a node it does not see Ready. */
    node_arg a = {nd, false};
    bool exists = rc && st == 409;
    if (rc == 0) { /* new: only the not-ready taint may need to go */
        drop_not_ready(created, &a.changed);
        json_decref(created);
    }
    if (rc == 0 || exists)
        rc = emu_patch_node_status(e, e->writer, nd, d);
    if (rc == 0 && (a.changed || exists)) /* exists: our labels too */
        rc = drv_kube_update(e->writer, path, mut_node, &a, 0, NULL, NULL, d);
    if (rc == DRV_EEXIST) /* nothing to change */
        rc = 0;
    if (rc) {
        char why[sizeof d->msg];
        snprintf(why, sizeof why, "%s", d ? d->msg : "");
        return drv_fail(d, rc, "emulate: node %s: %s", nd->name, why);
    }
    return 0;
}
