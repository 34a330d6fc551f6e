/*
 * objects.c - compact decoding of Pods and Nodes, Status objects, Kubernetes quantities, and
 * the binding body (kube_types.h).
 */
#include "drover/kube_types.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- quantities ---------------------------------------------------------------------------- */

/* Splits s into a validated decimal number and a suffix multiplier. */
static int quantity(const char *s, double *value)
{
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {{"", 1},
                 {"m", 1e-3},
                 {"k", 1e3},
                 {"M", 1e6},
                 {"G", 1e9},
                 {"T", 1e12},
                 {"P", 1e15},
                 {"E", 1e18},
                 {"Ki", 1024.0},
                 {"Mi", 1048576.0},
                 {"Gi", 1073741824.0},
                 {"Ti", 1099511627776.0},
                 {"Pi", 1125899906842624.0},
                 {"Ei", 1152921504606846976.0}};
    const char *p = s;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, digits++;
    }
    if (!digits)
        return DRV_EINVAL;
    if ((*p == 'e' || *p == 'E') && p[1] != 0 && p[1] != 'i') { /* exponent, not "Ei" */
        const char *q = p + 1;
        if (*q == '+' || *q == '-')
            q++;
        if (*q < '0' || *q > '9')
            return DRV_EINVAL;
        while (*q >= '0' && *q <= '9')
            q++;
        p = q;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(p, units[i].suffix)) {
            char num[64];
            if ((size_t)(p - s) >= sizeof num)
                return DRV_EINVAL;
            memcpy(num, s, (size_t)(p - s));
            num[p - s] = 0;
            *value = strtod(num, NULL) * units[i].mult;
            return isfinite(*value) && *value < 9.0e18 ? 0 : DRV_ERANGE;
        }
    return DRV_EINVAL;
}

int drv_kube_quantity_milli(const char *s, int64_t *out)
{
    double v;
    int rc = quantity(s, &v);
    if (rc || v * 1000.0 >= 9.0e18)
        return rc ? rc : DRV_ERANGE;
    *out = (int64_t)ceil(v * 1000.0 - 1e-9); /* Kubernetes rounds fractional millis up */
    return 0;
}

int drv_kube_quantity(const char *s, int64_t *out)
{
    double v;
    int rc = quantity(s, &v);
    if (rc)
        return rc;
    *out = (int64_t)ceil(v - 1e-9);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------- */

static const char *str_at(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static int intern(drv_strtab *t, const char *s, int32_t *out)
{
    *out = 0;
    if (!s || !*s)
        return 0;
    int32_t id = drv_strtab_intern(t, s);
    if (id < 0)
        return DRV_ENOMEM;
    *out = id;
    return 0;
}

/* Reads requests (cpu, memory, nvidia.com/gpu) of one container into r. */
static int container_req(json_t *c, const char *what, const char *who, size_t idx, drv_res *r,
                         drv_diag *d)
{
    json_t *req = json_object_get(json_object_get(c, "resources"), "requests");
    *r = (drv_res){0, 0, 0};
    if (!req)
        return 0;
    if (!json_is_object(req))
        return drv_fail(d, DRV_EPARSE, "%s: spec.%s[%zu].resources.requests: expected a map", who,
                        what, idx);
    static const char *keys[] = {"cpu", "memory", "nvidia.com/gpu"};
    for (int k = 0; k < 3; k++) {
        json_t *q = json_object_get(req, keys[k]);
        if (!q)
            continue;
        const char *s = json_string_value(q);
        char num[32];
        if (!s && json_is_integer(q)) { /* a bare number is a quantity too */
            snprintf(num, sizeof num, "%lld", (long long)json_integer_value(q));
            s = num;
        }
        int64_t v = 0;
        int rc = !s       ? DRV_EINVAL
                 : k == 0 ? drv_kube_quantity_milli(s, &v)
                          : drv_kube_quantity(s, &v);
        if (rc)
            return drv_fail(d, DRV_EPARSE,
                            "%s: spec.%s[%zu].resources.requests.%s: expected %s, "
                            "found '%s'",
                            who, what, idx, keys[k],
                            k == 0 ? "a CPU quantity such as 500m or 2"
                                   : "a quantity such as 128Gi, 500M or 1",
                            s ? s : "(not a string)");
        if (k == 0)
            r->cpu = v;
        else if (k == 1)
            r->mem = v;
        else
            r->gpu = v;
    }
    return 0;
}

static drv_res res_max(drv_res a, drv_res b)
{
    return (drv_res){a.cpu > b.cpu ? a.cpu : b.cpu, a.mem > b.mem ? a.mem : b.mem,
                     a.gpu > b.gpu ? a.gpu : b.gpu};
}

static void who_is(json_t *meta, const char *kind, char *out, size_t n)
{
    const char *ns = str_at(meta, "namespace"), *name = str_at(meta, "name");
    snprintf(out, n, "%s %s%s%s", kind, ns ? ns : "", ns ? "/" : "", name ? name : "(unnamed)");
}

/* ---- Pod ----------------------------------------------------------------------------------- */

int drv_kube_decode_pod(json_t *obj, drv_strtab *names, drv_kpod *out, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    out->replica = -1;
    out->role = -1;
    json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    char who[300];
    who_is(meta, "pod", who, sizeof who);
    if (!json_is_object(meta) || !str_at(meta, "name"))
        return drv_fail(d, DRV_EPARSE, "%s: metadata.name: missing", who);
    if (!json_is_object(spec))
        return drv_fail(d, DRV_EPARSE, "%s: spec: expected a map", who);
    const char *rv = str_at(meta, "resourceVersion");
    snprintf(out->rv, sizeof out->rv, "%s", rv ? rv : "");
    json_t *labels = json_object_get(meta, "labels");
    if (intern(names, str_at(meta, "namespace"), &out->ns) ||
        intern(names, str_at(meta, "name"), &out->name) ||
        intern(names, str_at(spec, "nodeName"), &out->node) ||
        intern(names, str_at(labels, "drover.dev/job"), &out->job) ||
        intern(names, str_at(spec, "schedulerName"), &out->scheduler))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    const char *role = str_at(labels, "drover.dev/role");
    if (role && (out->role = (int8_t)drv_role_parse(role)) < 0)
        return drv_fail(d, DRV_EPARSE,
                        "%s: metadata.labels.drover.dev/role: expected ps, chief, "
                        "worker or evaluator, found '%s'",
                        who, role);
    const char *rank = str_at(labels, "drover.dev/rank");
    if (rank) {
        char *end;
        long v = strtol(rank, &end, 10);
        if (*end || end == rank || v < 0 || v > 1000000)
            return drv_fail(d, DRV_EPARSE,
                            "%s: metadata.labels.drover.dev/rank: expected a "
                            "replica index, found '%s'",
                            who, rank);
        out->replica = (int32_t)v;
    }
    out->deleting = json_object_get(meta, "deletionTimestamp") != NULL;
    const char *phase = str_at(json_object_get(obj, "status"), "phase");
    static const char *phases[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown"};
    out->phase = DRV_KPOD_PENDING;
    for (int i = 0; phase && i < 5; i++)
        if (!strcmp(phase, phases[i]))
            out->phase = (int8_t)i;
    json_t *cs = json_object_get(spec, "containers");
    if (!json_is_array(cs))
        return drv_fail(d, DRV_EPARSE, "%s: spec.containers: expected a list", who);
    size_t i;
    json_t *c;
    drv_res sum = {0, 0, 0}, r;
    json_array_foreach(cs, i, c)
    {
        int rc = container_req(c, "containers", who, i, &r, d);
        if (rc)
            return rc;
        sum = drv_res_add(sum, r);
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        int rc = container_req(c, "initContainers", who, i, &r, d);
        if (rc)
            return rc;
        sum = res_max(sum, r);
    }
    out->req = sum;
    return 0;
}

/* ---- Node ---------------------------------------------------------------------------------- */

int drv_kube_decode_node(json_t *obj, drv_strtab *names, drv_knode *out, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    json_t *status = json_object_get(obj, "status");
    char who[300];
    who_is(meta, "node", who, sizeof who);
    if (!json_is_object(meta) || !str_at(meta, "name"))
        return drv_fail(d, DRV_EPARSE, "%s: metadata.name: missing", who);
    const char *rv = str_at(meta, "resourceVersion");
    snprintf(out->rv, sizeof out->rv, "%s", rv ? rv : "");
    json_t *labels = json_object_get(meta, "labels");
    if (intern(names, str_at(meta, "name"), &out->name) ||
        intern(names, str_at(labels, "topology.kubernetes.io/zone"), &out->zone) ||
        intern(names, str_at(labels, "drover.dev/rack"), &out->rack))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    out->unschedulable = json_is_true(json_object_get(spec, "unschedulable"));
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "taints"), i, t)
    {
        const char *e = str_at(t, "effect");
        if (e && (!strcmp(e, "NoSchedule") || !strcmp(e, "NoExecute")))
            out->noschedule = true;
    }
    json_array_foreach(json_object_get(status, "conditions"), i, t)
    {
        const char *ty = str_at(t, "type"), *st = str_at(t, "status");
        if (ty && st && !strcmp(ty, "Ready"))
            out->ready = !strcmp(st, "True");
    }
    json_t *a = json_object_get(status, "allocatable");
    static const char *keys[] = {"cpu", "memory", "nvidia.com/gpu"};
    for (int k = 0; a && k < 3; k++) {
        const char *s = str_at(a, keys[k]);
        if (!s)
            continue;
        int64_t v;
        int rc = k == 0 ? drv_kube_quantity_milli(s, &v) : drv_kube_quantity(s, &v);
        if (rc)
            return drv_fail(d, DRV_EPARSE,
                            "%s: status.allocatable.%s: expected a quantity, found "
                            "'%s'",
                            who, keys[k], s);
        if (k == 0)
            out->alloc.cpu = v;
        else if (k == 1)
            out->alloc.mem = v;
        else
            out->alloc.gpu = v;
    }
    return 0;
}

/* ---- Status and Binding -------------------------------------------------------------------- */

int drv_kube_decode_status(json_t *obj, long *code, const char **reason, drv_diag *d)
{
    const char *kind = str_at(obj, "kind"), *status = str_at(obj, "status");
    json_t *c = json_object_get(obj, "code");
    if (!kind || strcmp(kind, "Status") != 0)
        return drv_fail(d, DRV_EPARSE, "expected a Status object, found kind %s",
                        kind ? kind : "(none)");
    /* A success Status (DELETE of most resources) may carry no code. */
    if (!json_is_integer(c) && !(status && !strcmp(status, "Success")))
        return drv_fail(d, DRV_EPARSE, "a Status object with status %s and no code",
                        status ? status : "(none)");
    *code = json_is_integer(c) ? (long)json_integer_value(c) : 0;
    *reason = str_at(obj, "reason");
    return 0;
}

char *drv_kube_binding_json(const char *ns, const char *pod, const char *node)
{
    json_t *b = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s}}", "apiVersion", "v1", "kind",
                          "Binding", "metadata", "name", pod, "namespace", ns, "target",
                          "apiVersion", "v1", "kind", "Node", "name", node);
    if (!b)
        return NULL;
    char *s = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    char *out = s ? drv_strdup(s) : NULL;
    free(s);
    return out;
}
