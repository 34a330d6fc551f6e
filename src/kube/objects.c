/*
 * objects.c - compact decoding of Pods and Nodes, Status objects, and the binding body
 * (kube_types.h); quantities are quantity.c's.
 */
#include "drover/clock.h"
#include "drover/kube_types.h"
#include "json.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- helpers ------------------------------------------------------------------------------- */

static const char *str_at(json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

int drv_kube_intern(drv_strtab *t, const char *s, int32_t *out)
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
                         bool limits_default, drv_diag *d)
{
    json_t *req = json_object_get(json_object_get(c, "resources"), "requests");
    json_t *lim = json_object_get(json_object_get(c, "resources"), "limits");
    *r = (drv_res){0, 0, 0};
    if (!req && !(limits_default && lim))
        return 0;
    if ((req && !json_is_object(req)) || (limits_default && lim && !json_is_object(lim)))
        return drv_fail(d, DRV_EPARSE, "%s: %s[%zu].resources: requests and limits must be maps",
                        who, what, idx);
    static const char *keys[] = {"cpu", "memory", "nvidia.com/gpu"};
    for (int k = 0; k < 3; k++) {
        json_t *q = json_object_get(req, keys[k]);
        const char *from = "requests";
        if (!q && limits_default) { /* the API server defaults a missing request to the limit */
            q = json_object_get(lim, keys[k]);
            from = "limits";
        }
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
            return drv_fail(d, DRV_EPARSE, "%s: %s[%zu].resources.%s.%s: expected %s, found '%s'",
                            who, what, idx, from, keys[k],
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

static void who_is(json_t *meta, const char *kind, char *out, size_t n)
{
    const char *ns = str_at(meta, "namespace"), *name = str_at(meta, "name");
    snprintf(out, n, "%s %s%s%s", kind, ns ? ns : "", ns ? "/" : "", name ? name : "(unnamed)");
}

/* Names the object for messages ("pod ns/name"), checks it has a name, copies its
 * resourceVersion into rv. */
static int begin(json_t *meta, const char *kind, char *who, size_t nwho, char *rv, size_t nrv,
                 drv_diag *d)
{
    who_is(meta, kind, who, nwho);
    if (!json_is_object(meta) || !str_at(meta, "name"))
        return drv_fail(d, DRV_EPARSE, "%s: metadata.name: missing", who);
    const char *v = str_at(meta, "resourceVersion");
    snprintf(rv, nrv, "%s", v ? v : "");
    return 0;
}

/* ---- Pod ----------------------------------------------------------------------------------- */

/* A pod's CPU limit: the sum of its containers' limits.cpu (millicores), or 0 when one of
 * them has none or an unreadable one (unlimited; its requests are checked elsewhere). */
static int64_t pod_cpu_limit(json_t *containers)
{
    int64_t sum = 0;
    size_t i;
    json_t *c;
    json_array_foreach(containers, i, c)
    {
        const char *s = json_string_value(
            json_object_get(json_object_get(json_object_get(c, "resources"), "limits"), "cpu"));
        int64_t v;
        if (!s || drv_kube_quantity_milli(s, &v) != 0 || v <= 0)
            return 0;
        sum += v;
    }
    return sum;
}

/* The kubelet's restarts in place (each restartCount within [0, 1e6]; a bad one counts 0). */
static int32_t restart_count(json_t *status)
{
    static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
    int32_t n = 0;
    for (int l = 0; l < 2; l++) {
        size_t k;
        json_t *st;
        json_array_foreach(json_object_get(status, lists[l]), k, st)
        {
            json_int_t c = json_integer_value(json_object_get(st, "restartCount"));
            if (c > 0 && c <= 1000000 && n < INT32_MAX - 1000000)
                n += (int32_t)c;
        }
    }
    return n;
}

/* What drv_kube_decode_pod and _node (and the informer: metadata's name, namespace,
 * resourceVersion) never read: the informers' clients skip it (drv_json_loadb_skip). On the
 * recorded objects (tests/fixtures/k8s) that is 1,118 of a pod's 2,494 bytes and 746 of a
 * node's 1,589; a node's images list, absent there, is often the largest part of real ones. A
 * decoder that comes to read one of these must take it off the list. */
const char *const drv_kube_unread_pod[] = {"metadata.managedFields", "spec.volumes",
                                           "status.conditions", NULL};
const char *const drv_kube_unread_node[] = {"metadata.managedFields", "status.images",
                                            "status.nodeInfo", NULL};

/* The uid of the first of meta's ownerReferences that is its controller, or NULL. */
static const char *controller_uid(json_t *meta)
{
    size_t i;
    json_t *ref;
    json_array_foreach(
        json_object_get(meta, "ownerReferences"), i,
        ref) if (json_is_true(json_object_get(ref, "controller"))) return str_at(ref, "uid");
    return NULL;
}

static int pod_topology(json_t *meta, drv_strtab *names, const char *who, drv_kpod *out);

int drv_kube_decode_pod(json_t *obj, drv_strtab *names, drv_kpod *out, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    out->replica = -1;
    out->role = -1;
    json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    char who[300];
    int rc0 = begin(meta, "pod", who, sizeof who, out->rv, sizeof out->rv, d);
    if (rc0)
        return rc0;
    if (!json_is_object(spec))
        return drv_fail(d, DRV_EPARSE, "%s: spec: expected a map", who);
    json_t *labels = json_object_get(meta, "labels");
    if (drv_kube_intern(names, str_at(meta, "namespace"), &out->ns) ||
        drv_kube_intern(names, str_at(meta, "name"), &out->name) ||
        drv_kube_intern(names, str_at(spec, "nodeName"), &out->node) ||
        drv_kube_intern(names, str_at(labels, "drover.dev/job"), &out->job) ||
        drv_kube_intern(names, str_at(labels, "scheduling.x-k8s.io/pod-group"), &out->group) ||
        drv_kube_intern(names, str_at(spec, "schedulerName"), &out->scheduler) ||
        drv_kube_intern(names, controller_uid(meta), &out->owner))
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
    json_t *prio = json_object_get(spec, "priority");
    out->priority = json_is_integer(prio) ? (int32_t)json_integer_value(prio) : 0;
    /* Its constraints matter only for another operator's pod naming some scheduler of its
     * own (Drover's pods get theirs from their job's template): DaemonSet pods, whose
     * affinity names their node, would otherwise intern a text per node. */
    const char *sched = str_at(spec, "schedulerName");
    bool other = !out->job && sched && strcmp(sched, "default-scheduler") != 0;
    char *cons = other ? drv_kube_constraint_json(spec) : NULL;
    int crc = cons ? drv_kube_intern(names, cons, &out->cons) : 0;
    drv_free(cons);
    if (crc || (other && pod_topology(meta, names, who, out) != 0))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    const char *ip = str_at(json_object_get(obj, "status"), "podIP");
    if (ip) {
        if (inet_pton(AF_INET, ip, out->ip) == 1)
            out->ip_family = 4;
        else if (inet_pton(AF_INET6, ip, out->ip) == 1)
            out->ip_family = 6;
        else
            return drv_fail(d, DRV_EPARSE,
                            "%s: status.podIP: expected an IPv4 or IPv6 address, found '%s'", who,
                            ip);
    }
    const char *phase = str_at(json_object_get(obj, "status"), "phase");
    static const char *phases[] = {"Pending", "Running", "Succeeded", "Failed", "Unknown"};
    out->phase = DRV_KPOD_PENDING;
    for (int i = 0; phase && i < 5; i++)
        if (!strcmp(phase, phases[i]))
            out->phase = (int8_t)i;
    /* The first container that terminated with a code other than 0 (the one that failed the
     * pod, for restartPolicy ExitCode); else the first one's. */
    out->exit_code = -1;
    size_t k;
    json_t *st;
    json_array_foreach(json_object_get(json_object_get(obj, "status"), "containerStatuses"), k, st)
    {
        json_t *code = json_object_get(json_object_get(json_object_get(st, "state"), "terminated"),
                                       "exitCode");
        if (json_is_integer(code) && (out->exit_code <= 0 || k == 0))
            out->exit_code = (int16_t)json_integer_value(code);
        if (out->exit_code > 0)
            break;
    }
    out->restarts = restart_count(json_object_get(obj, "status"));
    json_t *cs = json_object_get(spec, "containers");
    if (!json_is_array(cs))
        return drv_fail(d, DRV_EPARSE, "%s: spec.containers: expected a list", who);
    size_t i;
    json_t *c;
    drv_res sum = {0, 0, 0}, r;
    json_array_foreach(cs, i, c)
    {
        int rc = container_req(c, "spec.containers", who, i, &r, false, d);
        if (rc)
            return rc;
        sum = drv_res_add(sum, r);
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        int rc = container_req(c, "spec.initContainers", who, i, &r, false, d);
        if (rc)
            return rc;
        sum = drv_res_max(sum, r);
    }
    out->req = sum;
    out->cpu_limit = pod_cpu_limit(cs);
    return 0;
}

/* ---- Node ---------------------------------------------------------------------------------- */

int drv_kube_decode_node(json_t *obj, drv_strtab *names, drv_knode *out, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    json_t *status = json_object_get(obj, "status");
    char who[300];
    int rc0 = begin(meta, "node", who, sizeof who, out->rv, sizeof out->rv, d);
    if (rc0)
        return rc0;
    json_t *labels = json_object_get(meta, "labels");
    if (drv_kube_intern(names, str_at(meta, "name"), &out->name) ||
        drv_kube_intern(names, str_at(labels, "topology.kubernetes.io/zone"), &out->zone) ||
        drv_kube_intern(names, str_at(labels, "drover.dev/rack"), &out->rack))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    out->unschedulable = json_is_true(json_object_get(spec, "unschedulable"));
    int rc1 = drv_kube_node_meta(obj, names, who, &out->meta, d);
    if (rc1)
        return rc1;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(spec, "taints"), i, t)
    {
        const char *e = str_at(t, "effect"), *key = str_at(t, "key");
        if (e && (!strcmp(e, "NoSchedule") || !strcmp(e, "NoExecute"))) {
            out->noschedule = true;
            out->not_ready |= key && (!strcmp(key, "node.kubernetes.io/not-ready") ||
                                      !strcmp(key, "node.kubernetes.io/unreachable"));
        }
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
    char *out = drv_json_dump(b, JSON_COMPACT);
    json_decref(b);
    return out;
}

/* ---- TrainingJob, PodGroup, Lease ---------------------------------------------------------- */

static const char *const tj_roles[DRV_NROLES] = {"PS", "Chief", "Worker", "Evaluator"};

static int get_int(json_t *o, const char *key, const char *who, const char *path, int64_t lo,
                   int64_t hi, int64_t dflt, int64_t *out, drv_diag *d)
{
    json_t *v = json_object_get(o, key);
    *out = dflt;
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return drv_fail(d, DRV_EPARSE, "%s: %s: expected an integer in [%lld, %lld]", who, path,
                        (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return 0;
}

/* replicaSpecs.<role>.restartPolicy: Never when absent. */
static int decode_restart(json_t *rs, const char *who, const char *key, int8_t *out, drv_diag *d)
{
    json_t *v = json_object_get(rs, "restartPolicy");
    drv_restart r = DRV_RESTART_NEVER;
    if (v && (!json_is_string(v) || drv_restart_parse(json_string_value(v), &r) != 0))
        return drv_fail(d, DRV_EPARSE,
                        "%s: spec.replicaSpecs.%s.restartPolicy: expected Never, OnFailure, "
                        "ExitCode or Always",
                        who, key);
    *out = (int8_t)r;
    return 0;
}

/* spec.runPolicy as Kubeflow names it; absent fields keep Kubeflow's defaults. */
static int decode_run_policy(json_t *rp, const char *who, drv_ktrainingjob *out, drv_diag *d)
{
    int64_t backoff, deadline, ttl;
    int rc = get_int(rp, "backoffLimit", who, "spec.runPolicy.backoffLimit", 0, 1000000, -1,
                     &backoff, d);
    if (!rc)
        rc = get_int(rp, "activeDeadlineSeconds", who, "spec.runPolicy.activeDeadlineSeconds", 1,
                     INT32_MAX, 0, &deadline, d);
    if (!rc)
        rc = get_int(rp, "ttlSecondsAfterFinished", who, "spec.runPolicy.ttlSecondsAfterFinished",
                     0, INT32_MAX, -1, &ttl, d);
    if (rc)
        return rc;
    out->backoff_limit = (int32_t)backoff;
    out->active_deadline_s = deadline;
    out->ttl_s = ttl;
    json_t *clean = json_object_get(rp, "cleanPodPolicy");
    drv_clean_pods cp = DRV_CLEAN_RUNNING;
    if (clean && (!json_is_string(clean) || drv_clean_pods_parse(json_string_value(clean), &cp)))
        return drv_fail(d, DRV_EPARSE,
                        "%s: spec.runPolicy.cleanPodPolicy: expected Running, All or None", who);
    out->clean_pods = (int8_t)cp;
    json_t *sus = json_object_get(rp, "suspend");
    if (sus && !json_is_boolean(sus))
        return drv_fail(d, DRV_EPARSE, "%s: spec.runPolicy.suspend: expected true or false", who);
    out->suspend = json_is_true(sus);
    return 0;
}

/* spec.progress: where the chief serves its training progress (defaults when absent). */
static int decode_progress(json_t *prog, const char *who, drv_ktrainingjob *out, drv_diag *d)
{
    snprintf(out->progress_path, sizeof out->progress_path, "/metrics");
    snprintf(out->step_metric, sizeof out->step_metric, "drover_train_step");
    snprintf(out->loss_metric, sizeof out->loss_metric, "drover_train_loss");
    if (prog) {
        int64_t port;
        int rc = get_int(prog, "port", who, "spec.progress.port", 1, 65535, -1, &port, d);
        if (rc)
            return rc;
        if (port < 0)
            return drv_fail(d, DRV_EPARSE, "%s: spec.progress.port: missing", who);
        out->progress_port = (int32_t)port;
        int64_t total;
        if ((rc = get_int(prog, "totalSteps", who, "spec.progress.totalSteps", 1, INT64_MAX / 2, 0,
                          &total, d)) != 0)
            return rc;
        out->total_steps = (double)total;
        static const char *keys[] = {"path", "step", "loss"};
        char *dst[] = {out->progress_path, out->step_metric, out->loss_metric};
        size_t cap[] = {sizeof out->progress_path, sizeof out->step_metric,
                        sizeof out->loss_metric};
        for (int k = 0; k < 3; k++) {
            json_t *v = json_object_get(prog, keys[k]);
            if (!v)
                continue;
            const char *t = json_string_value(v);
            bool ok = t && *t && strlen(t) < cap[k] && (k != 0 || t[0] == '/');
            for (const char *q = t; ok && *q; q++)
                ok = k == 0 ? *q > ' ' && *q < 127
                            : (isalnum((unsigned char)*q) || *q == '_' || *q == ':');
            if (!ok)
                return drv_fail(d, DRV_EPARSE, "%s: spec.progress.%s: expected %s", who, keys[k],
                                k == 0 ? "a URL path such as /metrics"
                                       : "a Prometheus metric name such as train_step");
            snprintf(dst[k], cap[k], "%s", t);
        }
    }
    return 0;
}

/* Kueue's topology annotations of another operator's pod (its PodGroup binds to them): a bad one
 * does not fail the pod's decode (its operator's pods are still seen, and counted as load), its
 * gang is held with the message (ctrl_podgroup.c). 0 or DRV_ENOMEM. */
static int pod_topology(json_t *meta, drv_strtab *names, const char *who, drv_kpod *out)
{
    drv_diag d = {{0}};
    int8_t mode;
    int32_t key;
    int rc = drv_kube_topology(json_object_get(meta, "annotations"), names, who,
                               "metadata.annotations", &mode, &key, &d);
    if (rc == DRV_ENOMEM)
        return rc;
    if (rc == 0 && mode < 0)
        mode = DRV_TOPO_NONE; /* (none given) */
    if (rc != 0) {
        mode = DRV_KPOD_TOPO_BAD;
        if (drv_kube_intern(names, d.msg, &key))
            return DRV_ENOMEM;
    }
    out->topo_mode = mode;
    out->topo_key = key;
    return 0;
}

/* Kueue's topology annotations of one role's pod template (metadata.annotations) into out's
 * gang-wide topo_mode and topo_key (drv_kube_topology): roles that give one agree. */
static int role_topology(json_t *tmeta, drv_strtab *names, const char *who, const char *key,
                         drv_ktrainingjob *out, drv_diag *d)
{
    char path[160];
    snprintf(path, sizeof path, "spec.replicaSpecs.%s.template.metadata.annotations", key);
    int8_t mode;
    int32_t k;
    int rc =
        drv_kube_topology(json_object_get(tmeta, "annotations"), names, who, path, &mode, &k, d);
    if (rc || mode < 0)
        return rc;
    if (out->topo_mode != DRV_TOPO_NONE && (out->topo_mode != mode || out->topo_key != k))
        return drv_fail(d, DRV_EPARSE,
                        "%s: %s: the roles' topology annotations differ (the gang is bound as a "
                        "whole)",
                        who, path);
    out->topo_mode = mode;
    out->topo_key = k;
    return 0;
}

/* A role template's node constraints: validated, kept as interned compact JSON. */
static int role_constraint(json_t *pspec, drv_strtab *names, const char *who, const char *key,
                           int32_t *out, drv_diag *d)
{
    char path[96];
    snprintf(path, sizeof path, "spec.replicaSpecs.%s.template.spec", key);
    drv_constraint c;
    int rc = drv_kube_decode_constraint(pspec, names, who, path, &c, d);
    if (rc)
        return rc;
    drv_constraint_fini(&c);
    char *s = drv_kube_constraint_json(pspec);
    rc = s ? drv_kube_intern(names, s, out) : 0;
    drv_free(s);
    return rc ? drv_fail(d, DRV_ENOMEM, "out of memory") : 0;
}

/* Annotation drover.dev/checkpoint-done: an RFC 3339 time (the job's word that its checkpoint is
 * written), -1 when absent. A value that is not one fails the decode with the annotation named:
 * a job whose script writes it wrong would otherwise wait out every timeout unnoticed. */
static int checkpoint_done(json_t *meta, const char *who, drv_ktrainingjob *out, drv_diag *d)
{
    json_t *v = json_object_get(json_object_get(meta, "annotations"), DRV_ANN_CHECKPOINT_DONE);
    out->checkpoint_done = -1;
    if (v && (!json_is_string(v) ||
              drv_time_parse_rfc3339(json_string_value(v), &out->checkpoint_done) != 0)) {
        out->checkpoint_done = -1;
        return drv_fail(d, DRV_EPARSE,
                        "%s: metadata.annotations." DRV_ANN_CHECKPOINT_DONE
                        ": expected an RFC 3339 time (2026-01-02T03:04:05Z)",
                        who);
    }
    return 0;
}

int drv_kube_decode_trainingjob(json_t *obj, drv_strtab *names, drv_ktrainingjob *out, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    json_t *meta = json_object_get(obj, "metadata");
    char who[300];
    int rc0 = begin(meta, "trainingjob", who, sizeof who, out->rv, sizeof out->rv, d);
    if (rc0)
        return rc0;
    json_t *gen = json_object_get(meta, "generation");
    out->generation = json_is_integer(gen) ? json_integer_value(gen) : 0;
    if (drv_kube_intern(names, str_at(meta, "namespace"), &out->ns) ||
        drv_kube_intern(names, str_at(meta, "name"), &out->name) ||
        drv_kube_intern(names, str_at(json_object_get(obj, "status"), "phase"), &out->phase))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    json_t *spec = json_object_get(obj, "spec");
    json_t *specs = json_object_get(spec, "replicaSpecs");
    if (!json_is_object(specs))
        return drv_fail(d, DRV_EPARSE, "%s: spec.replicaSpecs: expected a map of roles", who);
    static const char *const named[] = {"queue", "priorityClassName"};
    for (int k = 0; k < 2; k++)
        if (json_object_get(spec, named[k]) && !json_string_length(json_object_get(spec, named[k])))
            return drv_fail(d, DRV_EPARSE, "%s: spec.%s: expected a name", who, named[k]);
    if (drv_kube_intern(names, str_at(spec, "queue"), &out->queue) ||
        drv_kube_intern(names, str_at(spec, "priorityClassName"), &out->priority_class) ||
        drv_kube_intern(names, str_at(json_object_get(meta, "labels"), "drover.dev/user"),
                        &out->user))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    int rc = checkpoint_done(meta, who, out, d);
    if (!rc)
        rc =
            decode_progress(json_object_get(json_object_get(obj, "spec"), "progress"), who, out, d);
    if (!rc)
        rc = decode_run_policy(json_object_get(json_object_get(obj, "spec"), "runPolicy"), who, out,
                               d);
    json_t *sp = json_object_get(json_object_get(obj, "spec"), "successPolicy");
    const char *sps = json_string_value(sp);
    if (!rc && sp && (!sps || (strcmp(sps, "") && strcmp(sps, "AllWorkers"))))
        rc = drv_fail(d, DRV_EPARSE, "%s: spec.successPolicy: expected \"\" or AllWorkers", who);
    out->all_workers = sps && !strcmp(sps, "AllWorkers");
    if (rc)
        return rc;
    const char *key;
    json_t *rs;
    json_object_foreach(specs, key, rs)
    {
        int r = 0;
        while (r < DRV_NROLES && strcmp(key, tj_roles[r]) != 0)
            r++;
        if (!strcmp(key, "Master")) {
            r = DRV_ROLE_CHIEF;
            out->allreduce = true;
        }
        if (r == DRV_NROLES)
            return drv_fail(d, DRV_EPARSE,
                            "%s: spec.replicaSpecs.%s: expected PS, Chief, Master, Worker "
                            "or Evaluator",
                            who, key);
        if (r == DRV_ROLE_CHIEF && json_object_get(specs, "Chief") &&
            json_object_get(specs, "Master"))
            return drv_fail(d, DRV_EPARSE,
                            "%s: spec.replicaSpecs: expected Chief (TensorFlow) or Master "
                            "(all-reduce), not both",
                            who);
        if ((rc = decode_restart(rs, who, key, &out->restart[r], d)) != 0)
            return rc;
        char path[96];
        int64_t n, lo, hi;
        snprintf(path, sizeof path, "spec.replicaSpecs.%s.replicas", key);
        rc = get_int(rs, "replicas", who, path, 0, 100000, 1, &n, d);
        snprintf(path, sizeof path, "spec.replicaSpecs.%s.minReplicas", key);
        if (!rc)
            rc = get_int(rs, "minReplicas", who, path, 0, 100000, n, &lo, d);
        snprintf(path, sizeof path, "spec.replicaSpecs.%s.maxReplicas", key);
        if (!rc)
            rc = get_int(rs, "maxReplicas", who, path, 0, 100000, n, &hi, d);
        if (rc)
            return rc;
        if (lo > n || n > hi)
            return drv_fail(d, DRV_EPARSE,
                            "%s: spec.replicaSpecs.%s: expected minReplicas <= "
                            "replicas <= maxReplicas, found %lld, %lld, %lld",
                            who, key, (long long)lo, (long long)n, (long long)hi);
        json_t *pspec = json_object_get(json_object_get(rs, "template"), "spec");
        json_t *cs = json_object_get(pspec, "containers");
        if (!json_is_array(cs) || json_array_size(cs) == 0)
            return drv_fail(d, DRV_EPARSE,
                            "%s: spec.replicaSpecs.%s.template.spec.containers: "
                            "expected a pod template with at least one container",
                            who, key);
        if (!out->scheduler &&
            drv_kube_intern(names, str_at(pspec, "schedulerName"), &out->scheduler))
            return drv_fail(d, DRV_ENOMEM, "out of memory");
        if ((rc = role_constraint(pspec, names, who, key, &out->cons[r], d)) != 0 ||
            (rc = role_topology(json_object_get(json_object_get(rs, "template"), "metadata"), names,
                                who, key, out, d)) != 0)
            return rc;
        drv_res sum = {0, 0, 0}, q;
        size_t i;
        json_t *c;
        snprintf(path, sizeof path, "spec.replicaSpecs.%s.template.spec.containers", key);
        json_array_foreach(cs, i, c)
        {
            if ((rc = container_req(c, path, who, i, &q, true, d)) != 0)
                return rc;
            sum = drv_res_add(sum, q);
        }
        out->role[r] = (drv_rolespec){(int32_t)n, (int32_t)lo, (int32_t)hi, sum, sum.cpu};
    }
    if (out->role[DRV_ROLE_WORKER].max == 0 && out->role[DRV_ROLE_CHIEF].max == 0)
        return drv_fail(d, DRV_EPARSE,
                        "%s: spec.replicaSpecs.Worker: expected at least one worker (or a "
                        "Chief or Master)",
                        who);
    return 0;
}

int drv_kube_decode_podgroup(json_t *obj, drv_strtab *names, drv_kpodgroup *out, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    json_t *st = json_object_get(obj, "status");
    char who[300];
    int rc0 = begin(meta, "podgroup", who, sizeof who, out->rv, sizeof out->rv, d);
    if (rc0)
        return rc0;
    if (drv_kube_intern(names, str_at(meta, "namespace"), &out->ns) ||
        drv_kube_intern(names, str_at(meta, "name"), &out->name) ||
        drv_kube_intern(names, str_at(st, "phase"), &out->phase) ||
        drv_kube_intern(names, str_at(spec, "queue"), &out->queue) ||
        drv_kube_intern(names, str_at(spec, "priorityClassName"), &out->priority_class))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    int64_t v;
    int rc = get_int(spec, "minMember", who, "spec.minMember", 1, 1000000, -1, &v, d);
    if (!rc && v < 0)
        rc = drv_fail(d, DRV_EPARSE, "%s: spec.minMember: missing", who);
    if (rc)
        return rc;
    out->min_member = (int32_t)v;
    if ((rc = get_int(spec, "scheduleTimeoutSeconds", who, "spec.scheduleTimeoutSeconds", 0,
                      INT32_MAX, 0, &v, d)) != 0)
        return rc;
    out->timeout_s = (int32_t)v;
    json_t *mr = json_object_get(spec, "minResources");
    if (mr) {
        json_t *fake = json_pack("{s:{s:O}}", "resources", "requests", mr);
        rc = fake ? container_req(fake, "spec.minResources", who, 0, &out->min_resources, false, d)
                  : DRV_ENOMEM;
        json_decref(fake);
        if (rc)
            return rc;
    }
    static const char *counts[] = {"running", "succeeded", "failed", "scheduled"};
    int32_t *dst[] = {&out->running, &out->succeeded, &out->failed, &out->scheduled};
    for (int i = 0; i < 4; i++) {
        char path[32];
        snprintf(path, sizeof path, "status.%s", counts[i]);
        if ((rc = get_int(st, counts[i], who, path, 0, INT32_MAX, 0, &v, d)) != 0)
            return rc;
        *dst[i] = (int32_t)v;
    }
    return 0;
}

int drv_kube_decode_lease(json_t *obj, drv_klease *out, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    char who[300];
    int rc0 = begin(meta, "lease", who, sizeof who, out->rv, sizeof out->rv, d);
    if (rc0)
        return rc0;
    const char *h = str_at(spec, "holderIdentity");
    const char *rt = str_at(spec, "renewTime"), *at = str_at(spec, "acquireTime");
    snprintf(out->holder, sizeof out->holder, "%s", h ? h : "");
    snprintf(out->renew, sizeof out->renew, "%s", rt ? rt : "");
    snprintf(out->acquire, sizeof out->acquire, "%s", at ? at : "");
    int64_t v;
    int rc = get_int(spec, "leaseDurationSeconds", who, "spec.leaseDurationSeconds", 1, INT32_MAX,
                     15, &v, d);
    if (rc)
        return rc;
    out->duration_s = (int32_t)v;
    if ((rc = get_int(spec, "leaseTransitions", who, "spec.leaseTransitions", 0, INT32_MAX, 0, &v,
                      d)) != 0)
        return rc;
    out->transitions = (int32_t)v;
    return 0;
}

int drv_kube_decode_event(json_t *obj, drv_kevent *out, drv_diag *d)
{
    memset(out, 0, sizeof *out);
    json_t *meta = json_object_get(obj, "metadata"), *inv = json_object_get(obj, "involvedObject");
    char who[300], rv[24];
    int rc0 = begin(meta, "event", who, sizeof who, rv, sizeof rv, d);
    if (rc0)
        return rc0;
    if (!json_is_object(inv) || !str_at(inv, "name"))
        return drv_fail(d, DRV_EPARSE, "%s: involvedObject.name: missing", who);
    const char *f[] = {str_at(inv, "kind"), str_at(inv, "name"), str_at(obj, "reason"),
                       str_at(obj, "type"), str_at(obj, "message")};
    char *dst[] = {out->kind, out->name, out->reason, out->type, out->message};
    size_t n[] = {sizeof out->kind, sizeof out->name, sizeof out->reason, sizeof out->type,
                  sizeof out->message};
    for (int i = 0; i < 5; i++)
        snprintf(dst[i], n[i], "%s", f[i] ? f[i] : "");
    int64_t c;
    int rc = get_int(obj, "count", who, "count", 0, INT32_MAX, 1, &c, d);
    out->count = (int32_t)c;
    return rc;
}

/* ---- write-back ---------------------------------------------------------------------------- */

/* obj[key], created as an empty map when absent; NULL on allocation failure. */
static json_t *map_at(json_t *obj, const char *key)
{
    json_t *m = json_object_get(obj, key);
    if (json_is_object(m))
        return m;
    m = json_object();
    if (!m || json_object_set_new(obj, key, m) != 0)
        return NULL;
    return m;
}

const char *drv_kube_tj_role_key(int r, bool master)
{
    return r == DRV_ROLE_CHIEF && master ? "Master" : tj_roles[r];
}

int drv_kube_trainingjob_set_status(json_t *obj, const char *phase, const char *message,
                                    const int32_t active[DRV_NROLES],
                                    const char *const keys[DRV_NROLES])
{
    json_t *st = map_at(obj, "status");
    json_t *rs = st ? map_at(st, "replicaStatuses") : NULL;
    if (!rs || json_object_set_new(st, "phase", json_string(phase)) != 0 ||
        (message && json_object_set_new(st, "message", json_string(message)) != 0))
        return DRV_ENOMEM;
    json_t *specs = json_object_get(json_object_get(obj, "spec"), "replicaSpecs");
    for (int r = 0; r < DRV_NROLES; r++) {
        const char *key = keys ? keys[r] : tj_roles[r];
        if (!keys && r == DRV_ROLE_CHIEF && json_object_get(specs, "Master"))
            key = "Master";
        if (!key || (!keys && !json_object_get(specs, key)))
            continue;
        json_t *one = map_at(rs, key);
        if (!one || json_object_set_new(one, "active", json_integer(active[r])) != 0)
            return DRV_ENOMEM;
    }
    return 0;
}

int drv_kube_lease_set(json_t *obj, const char *holder, int32_t duration_s, const char *now)
{
    json_t *spec = map_at(obj, "spec");
    if (!spec)
        return DRV_ENOMEM;
    const char *was = str_at(spec, "holderIdentity");
    if (!was || strcmp(was, holder) != 0) { /* a new holder: acquired now, one more transition */
        json_t *t = json_object_get(spec, "leaseTransitions");
        json_int_t n = json_is_integer(t) ? json_integer_value(t) + (was ? 1 : 0) : 0;
        if (json_object_set_new(spec, "acquireTime", json_string(now)) != 0 ||
            json_object_set_new(spec, "leaseTransitions", json_integer(n)) != 0)
            return DRV_ENOMEM;
    }
    if (json_object_set_new(spec, "holderIdentity", json_string(holder)) != 0 ||
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(duration_s)) != 0 ||
        json_object_set_new(spec, "renewTime", json_string(now)) != 0)
        return DRV_ENOMEM;
    return 0;
}

int drv_kube_podgroup_set_status(json_t *obj, const char *phase, int32_t running, int32_t succeeded,
                                 int32_t failed, int32_t scheduled)
{
    json_t *st = map_at(obj, "status");
    if (!st || json_object_set_new(st, "phase", json_string(phase)) != 0 ||
        json_object_set_new(st, "running", json_integer(running)) != 0 ||
        json_object_set_new(st, "succeeded", json_integer(succeeded)) != 0 ||
        json_object_set_new(st, "failed", json_integer(failed)) != 0 ||
        json_object_set_new(st, "scheduled", json_integer(scheduled)) != 0)
        return DRV_ENOMEM;
    return 0;
}

static char *dump_new(json_t *o)
{
    if (!o)
        return NULL;
    char *out = drv_json_dump(o, JSON_COMPACT);
    json_decref(o);
    return out;
}

char *drv_kube_podgroup_json(const char *ns, const char *name, int32_t min_member,
                             drv_res min_resources, int32_t timeout_s)
{
    char cpu[32], mem[32], gpu[32];
    snprintf(cpu, sizeof cpu, "%lldm", (long long)min_resources.cpu);
    snprintf(mem, sizeof mem, "%lld", (long long)min_resources.mem);
    snprintf(gpu, sizeof gpu, "%lld", (long long)min_resources.gpu);
    json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:i, s:{s:s, s:s}}}", "apiVersion",
                          "scheduling.x-k8s.io/v1alpha1", "kind", "PodGroup", "metadata", "name",
                          name, "namespace", ns, "spec", "minMember", min_member, "minResources",
                          "cpu", cpu, "memory", mem);
    json_t *spec = json_object_get(o, "spec");
    if (o && min_resources.gpu > 0)
        json_object_set_new(json_object_get(spec, "minResources"), "nvidia.com/gpu",
                            json_string(gpu));
    if (o && timeout_s > 0)
        json_object_set_new(spec, "scheduleTimeoutSeconds", json_integer(timeout_s));
    return dump_new(o);
}

char *drv_kube_event_json(const char *ns, const char *kind, const char *api_version,
                          const char *name, const char *uid, const char *type, const char *reason,
                          const char *message, const char *now, const char *component)
{
    /* Event names are the object's name and a unique suffix, like kubectl's recorder (which
     * uses the time in nanoseconds): a controller restarted within the second it was killed
     * writes the same messages in the same order, so the wall clock's nanoseconds are mixed in
     * too, lest its Events collide with its predecessor's (409 AlreadyExists). */
    static uint64_t seq;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t h = 1469598103934665603ull ^ (uint64_t)__atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED) ^
                 ((uint64_t)ts.tv_nsec << 20);
    for (const char *p = now; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    for (const char *p = message; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    char ename[300];
    snprintf(ename, sizeof ename, "%s.%016llx", name, (unsigned long long)h);
    json_t *o = json_pack(
        "{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s}, s:s, s:s, "
        "s:i, s:s}",
        "apiVersion", "v1", "kind", "Event", "metadata", "name", ename, "namespace", ns,
        "involvedObject", "kind", kind, "apiVersion", api_version, "namespace", ns, "name", name,
        "uid", uid ? uid : "", "type", type, "reason", reason, "message", message, "source",
        "component", component, "firstTimestamp", now, "lastTimestamp", now, "count", 1,
        "reportingComponent", component);
    return dump_new(o);
}
