/*
 * objects_doc.c - Pods and Nodes decoded from a document (json.h's drv_jdoc) into the records
 * drv_kube_decode_pod and _node give (issue 17).
 *
 * Why: the pod and node informers decode every listed object and every watch echo. Through
 * jansson that cost ~7.4 us per object on the test server's 300-byte pods, mostly building the
 * tree (an allocation per value, a hash table per object) and freeing it; a document is parsed
 * into reused arrays, and the fields are read from it in place.
 *
 * How: each decoder reads the fields as objects.c does, in two steps: first it looks at every
 * field it needs and checks it, then it interns the strings, in objects.c's order (the ids a
 * table gives depend on it). Whatever objects.c would refuse or treat with a rarer rule (a bad
 * quantity, a bad label, a meta text longer than a node's usual; a pod of another scheduler
 * whose constraints are kept is decoded here, its constraints from a jansson copy of its spec) is
 * not decoded here: the object is handed to objects.c as a jansson value (drv_jdoc_json), so its
 * record or its error message is objects.c's own, and nothing was interned before.
 * tests/kube/test_objects.c compares the two on every recorded pod and node and on mutated ones.
 *
 * Example: a pod with labels drover.dev/role=worker and drover.dev/rank=x is handed to
 * objects.c, which says "pod ns/p: metadata.labels.drover.dev/rank: expected a replica index,
 * found 'x'".
 */
#include "drover/kube_types.h"
#include "json.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SLOW = 1 }; /* this object is objects.c's to decode */

/* doc's member key of o (-1: none) and its string (NULL: none or not a string). */
#define AT(o, key) drv_jdoc_get(doc, (o), (key))
#define STR(o, key) drv_jdoc_str(doc, AT((o), (key)))
#define TYPE(v) drv_jdoc_type(doc, (v))

static void copy_rv(char *rv, size_t n, const char *v)
{
    size_t len = v ? strlen(v) : 0;
    if (len >= n)
        len = n - 1; /* (truncated as objects.c's snprintf does) */
    memcpy(rv, v ? v : "", len);
    rv[len] = 0;
}

/* One container's resources.requests into r (objects.c's container_req without limits). */
static int container_req(const drv_jdoc *doc, int32_t c, drv_res *r)
{
    static const char *const keys[] = {"cpu", "memory", "nvidia.com/gpu"};
    int32_t req = AT(AT(c, "resources"), "requests");
    *r = (drv_res){0, 0, 0};
    if (req < 0)
        return 0;
    if (TYPE(req) != DRV_JOBJECT)
        return SLOW;
    for (int k = 0; k < 3; k++) {
        int32_t q = AT(req, keys[k]);
        if (q < 0)
            continue;
        const char *s = drv_jdoc_str(doc, q);
        char num[32];
        if (!s && TYPE(q) == DRV_JINT) { /* a bare number is a quantity too */
            snprintf(num, sizeof num, "%lld", (long long)doc->v[q].i);
            s = num;
        }
        int64_t v = 0;
        if (!s || (k == 0 ? drv_kube_quantity_milli(s, &v) : drv_kube_quantity(s, &v)) != 0)
            return SLOW;
        if (k == 0)
            r->cpu = v;
        else if (k == 1)
            r->mem = v;
        else
            r->gpu = v;
    }
    return 0;
}

/* The effective request (containers summed, init containers' max) and the CPU limit. */
static int pod_resources(const drv_jdoc *doc, int32_t spec, drv_kpod *out)
{
    int32_t cs = AT(spec, "containers"), ics = AT(spec, "initContainers");
    if (TYPE(cs) != DRV_JARRAY)
        return SLOW;
    drv_res sum = {0, 0, 0}, r;
    for (int32_t c = doc->v[cs].child; c >= 0; c = doc->v[c].next) {
        if (container_req(doc, c, &r) != 0)
            return SLOW;
        sum = drv_res_add(sum, r);
    }
    for (int32_t c = TYPE(ics) == DRV_JARRAY ? doc->v[ics].child : -1; c >= 0; c = doc->v[c].next) {
        if (container_req(doc, c, &r) != 0)
            return SLOW;
        sum = drv_res_max(sum, r);
    }
    out->req = sum;
    int64_t limit = 0; /* unlimited when one container has no (readable) limits.cpu */
    for (int32_t c = doc->v[cs].child; c >= 0; c = doc->v[c].next) {
        const char *s = STR(AT(AT(c, "resources"), "limits"), "cpu");
        int64_t v;
        if (!s || drv_kube_quantity_milli(s, &v) != 0 || v <= 0) {
            limit = 0;
            break;
        }
        limit += v;
    }
    out->cpu_limit = limit;
    return 0;
}

/* status: podIP, phase, the exit code and the restarts in place. */
static int pod_status(const drv_jdoc *doc, int32_t status, drv_kpod *out)
{
    const char *ip = STR(status, "podIP");
    if (ip) {
        if (inet_pton(AF_INET, ip, out->ip) == 1)
            out->ip_family = 4;
        else if (inet_pton(AF_INET6, ip, out->ip) == 1)
            out->ip_family = 6;
        else
            return SLOW;
    }
    static const char *const phases[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown"};
    const char *phase = STR(status, "phase");
    out->phase = DRV_KPOD_PENDING;
    for (int i = 0; phase && i < 5; i++)
        if (!strcmp(phase, phases[i]))
            out->phase = (int8_t)i;
    out->exit_code = -1;
    int32_t cst = AT(status, "containerStatuses");
    int32_t k = 0;
    for (int32_t st = TYPE(cst) == DRV_JARRAY ? doc->v[cst].child : -1; st >= 0;
         st = doc->v[st].next, k++) {
        int32_t code = AT(AT(AT(st, "state"), "terminated"), "exitCode");
        if (TYPE(code) == DRV_JINT && (out->exit_code <= 0 || k == 0))
            out->exit_code = (int16_t)doc->v[code].i;
        if (out->exit_code > 0)
            break;
    }
    static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
    int32_t n = 0;
    for (int l = 0; l < 2; l++) {
        int32_t a = AT(status, lists[l]);
        for (int32_t st = TYPE(a) == DRV_JARRAY ? doc->v[a].child : -1; st >= 0;
             st = doc->v[st].next) {
            int32_t c = AT(st, "restartCount");
            json_int_t v = TYPE(c) == DRV_JINT ? doc->v[c].i : 0;
            if (v > 0 && v <= 1000000 && n < INT32_MAX - 1000000)
                n += (int32_t)v;
        }
    }
    out->restarts = n;
    return 0;
}

/* The pod's record without its interned fields, or SLOW (meta, spec, labels: obj's members). */
static int pod_fields(const drv_jdoc *doc, int32_t obj, int32_t meta, int32_t spec, int32_t labels,
                      drv_kpod *out)
{
    if (TYPE(meta) != DRV_JOBJECT || !STR(meta, "name") || TYPE(spec) != DRV_JOBJECT)
        return SLOW;
    copy_rv(out->rv, sizeof out->rv, STR(meta, "resourceVersion"));
    const char *role = STR(labels, "drover.dev/role"), *rank = STR(labels, "drover.dev/rank");
    if (role && (out->role = (int8_t)drv_role_parse(role)) < 0)
        return SLOW;
    if (rank) {
        char *end;
        long v = strtol(rank, &end, 10);
        if (*end || end == rank || v < 0 || v > 1000000)
            return SLOW;
        out->replica = (int32_t)v;
    }
    out->deleting = AT(meta, "deletionTimestamp") >= 0;
    int32_t prio = AT(spec, "priority");
    out->priority = TYPE(prio) == DRV_JINT ? (int32_t)doc->v[prio].i : 0;
    int rc = pod_status(doc, AT(obj, "status"), out);
    return rc ? rc : pod_resources(doc, spec, out);
}

/* The uid of the first of meta's ownerReferences that is its controller (objects.c's
 * controller_uid), or NULL. */
static const char *controller_uid(const drv_jdoc *doc, int32_t meta)
{
    int32_t refs = AT(meta, "ownerReferences");
    for (int32_t r = TYPE(refs) == DRV_JARRAY ? doc->v[refs].child : -1; r >= 0; r = doc->v[r].next)
        if (TYPE(AT(r, "controller")) == DRV_JTRUE)
            return STR(r, "uid");
    return NULL;
}

/* The pod at node obj of doc, or SLOW. */
static int pod_fast(const drv_jdoc *doc, int32_t obj, drv_strtab *names, drv_kpod *out)
{
    memset(out, 0, sizeof *out);
    out->replica = -1;
    out->role = -1;
    /* (each found once: a member look-up walks its object's members) */
    int32_t meta = AT(obj, "metadata"), spec = AT(obj, "spec"), labels = AT(meta, "labels");
    int rc = pod_fields(doc, obj, meta, spec, labels, out);
    if (rc)
        return rc;
    const char *job = STR(labels, "drover.dev/job"), *sched = STR(spec, "schedulerName");
    /* Another operator's pod naming a scheduler of its own keeps its constraints (objects.c):
     * built from the spec's jansson copy, as objects.c builds it. */
    bool other = !(job && *job) && sched && strcmp(sched, "default-scheduler") != 0;
    for (int k = 0; other && k < 3; k++) /* (Kueue's topology annotations: objects.c's) */
        if (AT(AT(meta, "annotations"), drv_kube_topology_keys[k]) >= 0)
            return SLOW;
    if (drv_kube_intern(names, STR(meta, "namespace"), &out->ns) ||
        drv_kube_intern(names, STR(meta, "name"), &out->name) ||
        drv_kube_intern(names, STR(spec, "nodeName"), &out->node) ||
        drv_kube_intern(names, job, &out->job) ||
        drv_kube_intern(names, STR(labels, "scheduling.x-k8s.io/pod-group"), &out->group) ||
        drv_kube_intern(names, sched, &out->scheduler) ||
        drv_kube_intern(names, controller_uid(doc, meta), &out->owner))
        return DRV_ENOMEM;
    if (other) {
        json_t *js = drv_jdoc_json(doc, spec);
        char *cons = js ? drv_kube_constraint_json(js) : NULL;
        rc = !js ? DRV_ENOMEM : cons ? drv_kube_intern(names, cons, &out->cons) : 0;
        json_decref(js);
        drv_free(cons);
    }
    return rc;
}

/* ---- Node ---------------------------------------------------------------------------------- */

enum { META_MAX = 4096, META_LINE = 1200 }; /* the usual meta text; objects.c's line buffer */

/* Appends a meta line of parts (NULL-terminated) to buf, or SLOW when objects.c would truncate
 * the line or buf has no room (its appending has none of these bounds). */
static int meta_line(char *buf, size_t *n, char tag, const char *const *parts)
{
    size_t len = 1;
    for (const char *const *p = parts; *p; p++)
        len += 1 + strlen(*p);
    if (len + 1 >= META_LINE || *n + len + 1 >= META_MAX)
        return SLOW;
    buf[(*n)++] = tag;
    for (const char *const *p = parts; *p; p++) {
        size_t k = strlen(*p);
        buf[(*n)++] = '\t';
        memcpy(buf + *n, *p, k);
        *n += k;
    }
    buf[(*n)++] = '\n';
    buf[*n] = 0;
    return 0;
}

static bool plain(const char *s)
{
    return s && !strpbrk(s, "\t\n");
}

/* objects_sched.c's meta text of the node's labels and taints (its metadata.labels and
 * spec.taints) into buf (META_MAX bytes), or SLOW. A repeated label key is SLOW too: jansson
 * keeps its first place and last value. */
static int node_meta_text(const drv_jdoc *doc, int32_t labels, int32_t taints, char *buf, size_t *n)
{
    *n = 0;
    buf[0] = 0;
    if ((labels >= 0 && TYPE(labels) != DRV_JOBJECT) || (taints >= 0 && TYPE(taints) != DRV_JARRAY))
        return SLOW;
    for (int32_t l = labels >= 0 ? doc->v[labels].child : -1; l >= 0; l = doc->v[l].next) {
        const char *k = doc->v[l].key, *val = drv_jdoc_str(doc, l);
        for (int32_t p = doc->v[labels].child; p != l; p = doc->v[p].next)
            if (!strcmp(doc->v[p].key, k))
                return SLOW;
        if (!plain(k) || !plain(val))
            return SLOW;
        if (!strcmp(k, "kubernetes.io/hostname")) /* (objects_sched.c's class_label) */
            continue;
        if (meta_line(buf, n, 'l', (const char *const[]){k, val, NULL}) != 0)
            return SLOW;
    }
    for (int32_t t = taints >= 0 ? doc->v[taints].child : -1; t >= 0; t = doc->v[t].next) {
        const char *key = STR(t, "key"), *val = STR(t, "value"), *eff = STR(t, "effect");
        if (!plain(key) || !*key || (val && !plain(val)) || !eff || drv_effect_parse(eff) < 0)
            return SLOW;
        if (meta_line(buf, n, 't', (const char *const[]){key, val ? val : "", eff, NULL}) != 0)
            return SLOW;
    }
    return 0;
}

/* The node's record but its interned fields, or SLOW (meta, spec, taints: obj's members, the
 * spec's). */
static int node_fields(const drv_jdoc *doc, int32_t obj, int32_t meta, int32_t spec, int32_t taints,
                       drv_knode *out)
{
    if (TYPE(meta) != DRV_JOBJECT || !STR(meta, "name"))
        return SLOW;
    copy_rv(out->rv, sizeof out->rv, STR(meta, "resourceVersion"));
    out->unschedulable = TYPE(AT(spec, "unschedulable")) == DRV_JTRUE;
    int32_t status = AT(obj, "status"), conds = AT(status, "conditions");
    for (int32_t t = TYPE(taints) == DRV_JARRAY ? doc->v[taints].child : -1; t >= 0;
         t = doc->v[t].next) {
        const char *e = STR(t, "effect"), *key = STR(t, "key");
        if (e && (!strcmp(e, "NoSchedule") || !strcmp(e, "NoExecute"))) {
            out->noschedule = true;
            out->not_ready |= key && (!strcmp(key, "node.kubernetes.io/not-ready") ||
                                      !strcmp(key, "node.kubernetes.io/unreachable"));
        }
    }
    for (int32_t c = TYPE(conds) == DRV_JARRAY ? doc->v[conds].child : -1; c >= 0;
         c = doc->v[c].next) {
        const char *ty = STR(c, "type"), *st = STR(c, "status");
        if (ty && st && !strcmp(ty, "Ready"))
            out->ready = !strcmp(st, "True");
    }
    static const char *const keys[] = {"cpu", "memory", "nvidia.com/gpu"};
    int32_t a = AT(status, "allocatable");
    for (int k = 0; a >= 0 && k < 3; k++) {
        const char *s = STR(a, keys[k]);
        int64_t v;
        if (!s)
            continue;
        if ((k == 0 ? drv_kube_quantity_milli(s, &v) : drv_kube_quantity(s, &v)) != 0)
            return SLOW;
        if (k == 0)
            out->alloc.cpu = v;
        else if (k == 1)
            out->alloc.mem = v;
        else
            out->alloc.gpu = v;
    }
    return 0;
}

static int node_fast(const drv_jdoc *doc, int32_t obj, drv_strtab *names, drv_knode *out)
{
    memset(out, 0, sizeof *out);
    char text[META_MAX];
    size_t n;
    /* (each found once: a member look-up walks its object's members) */
    int32_t meta = AT(obj, "metadata"), spec = AT(obj, "spec"), labels = AT(meta, "labels"),
            taints = AT(spec, "taints");
    int rc = node_fields(doc, obj, meta, spec, taints, out);
    if (!rc)
        rc = node_meta_text(doc, labels, taints, text, &n);
    if (rc)
        return rc;
    if (drv_kube_intern(names, STR(meta, "name"), &out->name) ||
        drv_kube_intern(names, STR(labels, "topology.kubernetes.io/zone"), &out->zone) ||
        drv_kube_intern(names, STR(labels, "drover.dev/rack"), &out->rack) ||
        drv_kube_intern(names, n ? text : NULL, &out->meta))
        return DRV_ENOMEM;
    return 0;
}

/* ---- entry points -------------------------------------------------------------------------- */

/* rc of a fast decoder: its record, out of memory, or objects.c's decoder on a jansson copy. */
static int finish(int rc, const drv_jdoc *doc, int32_t obj, drv_strtab *names, void *out, bool pod,
                  drv_diag *d)
{
    if (rc != SLOW)
        return rc == DRV_ENOMEM ? drv_fail(d, DRV_ENOMEM, "out of memory") : rc;
    json_t *o = drv_jdoc_json(doc, obj);
    if (!o)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    rc = pod ? drv_kube_decode_pod(o, names, out, d) : drv_kube_decode_node(o, names, out, d);
    json_decref(o);
    return rc;
}

int drv_kube_decode_pod_doc(const drv_jdoc *doc, int32_t obj, drv_strtab *names, drv_kpod *out,
                            drv_diag *d)
{
    return finish(pod_fast(doc, obj, names, out), doc, obj, names, out, true, d);
}

int drv_kube_decode_node_doc(const drv_jdoc *doc, int32_t obj, drv_strtab *names, drv_knode *out,
                             drv_diag *d)
{
    return finish(node_fast(doc, obj, names, out), doc, obj, names, out, false, d);
}
