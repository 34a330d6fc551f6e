/*
 * snapshot_cmd.c - `drover snapshot`: the cluster as it is, written as the files `drover sim`
 * reads, so that `drover sim --from-snapshot DIR` can replay it under other policies
 * (docs/what-if.md; whatif.c reads DIR).
 *
 * Read-only, and the same reads as `drover run` (lists of nodes, pods, TrainingJobs, PodGroups,
 * PriorityClasses and Queues through the client library's pager): deploy/'s RBAC needs no new
 * grant (tests/ctrl/test_snapshot_rbac.c judges its requests by drover run's account). Written
 * into DIR:
 *   snapshot.yaml  version, when, from which server, and what was left out and why;
 *   cluster.yaml   every node (allocatable less what pods Drover does not schedule hold on it,
 *                  labels, taints, GPU type, cordon) and the Queues;
 *   workload.yaml  every TrainingJob and PodGroup gang not finished: running ones (every pod
 *                  bound) with startedAt (its earliest pod start, before now) and runningOn
 *                  (each pod's node); pending ones submitted at 0. Priority is the
 *                  PriorityClass's value, the queue spec.queue, the model family the
 *                  annotation drover.dev/model (else --model's, said in a comment).
 * Each file is written under a temporary name and renamed, so DIR never holds half a snapshot
 * from this run. Progress is not scraped (no new HTTP path): the endpoint is the chief pod's IP
 * (out of reach from outside the cluster network; through the API server it would need
 * pods/proxy, which drover run is not granted), and the TrainingJob status Drover writes has no
 * step count. A running job's remaining work is estimated by the simulator (sim_running.c)
 * unless doneSteps is added by hand.
 */
#include "cli.h"

#include "drover/clock.h"
#include "drover/file.h"
#include "drover/sim.h"
#include "drover/text.h"
#include "kube/json.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct snap_opts {
    const char *kubeconfig, *context, *out, *ns, *gpu_label, *model;
    bool incluster;
} snap_opts;

#define AT(field) .at = offsetof(snap_opts, field)
static const cli_flag snap_flags[] = {
    {.name = "out",
     .kind = FLAG_TEXT,
     AT(out),
     .arg = "DIR",
     .help = "write snapshot.yaml, cluster.yaml and workload.yaml into DIR (created\n"
             "if missing; required)"},
    CLI_KUBE_FLAGS(snap_opts, kubeconfig, context, incluster),
    {.name = "namespace",
     .kind = FLAG_TEXT,
     AT(ns),
     .arg = "NS",
     .help = "TrainingJobs and gangs of this namespace only (default: every one)"},
    {.name = "gpu-type-label",
     .kind = FLAG_TEXT,
     AT(gpu_label),
     .arg = "KEY",
     .help = "the node label whose value is a node's GPU type (default:\n"
             "nvidia.com/gpu.product), written as the node's gpuType"},
    {.name = "model",
     .kind = FLAG_TEXT,
     AT(model),
     .arg = "FAMILY",
     .help = "the model family of a job without the annotation drover.dev/model\n"
             "(default: resnet50; docs/model.md lists the families)"},
};
#undef AT

const cli_command snapshot_command = {
    .name = "snapshot",
    .about = "Writes the cluster as it is now - nodes, running and pending TrainingJobs and "
             "gangs,\n"
             "Queues, PriorityClasses - as a cluster file and a workload file that `drover sim\n"
             "--from-snapshot DIR --policy A,B` replays from this moment under each policy\n"
             "(docs/what-if.md). Read-only: the same list permissions as `drover run`.\n",
    .footer = "Exit status: 0 written; 1 the API server failed or DIR could not be written; 2 "
              "bad usage\n"
              "or configuration (unreadable kubeconfig, an object the files cannot hold).\n",
    .flags = snap_flags,
    .nflags = (int)(sizeof snap_flags / sizeof snap_flags[0]),
};

/* ---- what is read ------------------------------------------------------------------------- */

/* A pod: what its job's entry needs. */
typedef struct spod {
    drv_kpod k;
    double started; /* status.startTime, epoch seconds; NAN when absent */
} spod;

/* A TrainingJob or a PodGroup gang, and what its pods say. */
typedef struct sjob {
    int32_t ns, name;    /* interned */
    int32_t uid;         /* interned metadata.uid: its pods' controller */
    bool group;          /* a PodGroup (its pods' scheduling.x-k8s.io/pod-group) */
    drv_ktrainingjob tj; /* for a TrainingJob */
    drv_kpodgroup pg;    /* for a PodGroup */
    char model[32];      /* drover.dev/model, "" when absent */
    bool finished;       /* status.phase Succeeded or Failed */
} sjob;

typedef struct snap {
    drv_kube *k;
    drv_strtab *names;
    const snap_opts *o;
    double now;
    json_t *nodes; /* the node list's items, kept (borrowed references taken) */
    spod *pods;
    int32_t npods, cap_pods;
    sjob *jobs;
    int32_t njobs, cap_jobs;
    drv_kpriorityclass *pcs;
    int32_t npcs, cap_pcs;
    drv_kqueue *queues;
    int32_t nqueues, cap_queues;
    int32_t skipped_finished, skipped_partial, skipped_single;
    drv_diag d;
} snap;

static const char *str(const snap *s, int32_t id)
{
    return drv_strtab_str(s->names, id);
}

static int keep_node(json_t *item, void *arg)
{
    snap *s = arg;
    return json_array_append(s->nodes, item) ? DRV_ENOMEM : 0;
}

static int keep_pod(json_t *item, void *arg)
{
    snap *s = arg;
    if (drv_grow(&s->pods, sizeof *s->pods, &s->cap_pods, s->npods + 1) != 0)
        return DRV_ENOMEM;
    spod *p = &s->pods[s->npods];
    int rc = drv_kube_decode_pod(item, s->names, &p->k, &s->d);
    if (rc)
        return rc;
    const char *st =
        json_string_value(json_object_get(json_object_get(item, "status"), "startTime"));
    if (drv_time_parse_rfc3339(st, &p->started) != 0)
        p->started = NAN;
    s->npods++;
    return 0;
}

/* The parts of a job's object the decoders do not keep: uid, the model annotation, a finished
 * phase. */
static int job_meta(snap *s, json_t *item, sjob *j)
{
    json_t *meta = json_object_get(item, "metadata");
    const char *uid = json_string_value(json_object_get(meta, "uid"));
    j->uid = uid && *uid ? drv_strtab_intern(s->names, uid) : 0;
    const char *model = json_string_value(
        json_object_get(json_object_get(meta, "annotations"), "drover.dev/model"));
    if (model)
        snprintf(j->model, sizeof j->model, "%s", model);
    const char *phase =
        json_string_value(json_object_get(json_object_get(item, "status"), "phase"));
    j->finished = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
    return j->uid < 0 ? DRV_ENOMEM : 0;
}

static sjob *new_job(snap *s)
{
    if (drv_grow(&s->jobs, sizeof *s->jobs, &s->cap_jobs, s->njobs + 1) != 0)
        return NULL;
    sjob *j = &s->jobs[s->njobs];
    memset(j, 0, sizeof *j);
    return j;
}

static int keep_tj(json_t *item, void *arg)
{
    snap *s = arg;
    sjob *j = new_job(s);
    if (!j)
        return DRV_ENOMEM;
    int rc = drv_kube_decode_trainingjob(item, s->names, &j->tj, &s->d);
    if (rc == 0 && (rc = job_meta(s, item, j)) == 0) {
        j->ns = j->tj.ns;
        j->name = j->tj.name;
        s->njobs++;
    }
    return rc;
}

static int keep_pg(json_t *item, void *arg)
{
    snap *s = arg;
    sjob *j = new_job(s);
    if (!j)
        return DRV_ENOMEM;
    int rc = drv_kube_decode_podgroup(item, s->names, &j->pg, &s->d);
    if (rc == 0 && (rc = job_meta(s, item, j)) == 0) {
        j->ns = j->pg.ns;
        j->name = j->pg.name;
        j->group = true;
        s->njobs++;
    }
    return rc;
}

static int keep_pc(json_t *item, void *arg)
{
    snap *s = arg;
    if (drv_grow(&s->pcs, sizeof *s->pcs, &s->cap_pcs, s->npcs + 1) != 0)
        return DRV_ENOMEM;
    int rc = drv_kube_decode_priorityclass(item, s->names, &s->pcs[s->npcs], &s->d);
    s->npcs += rc == 0;
    return rc;
}

static int keep_queue(json_t *item, void *arg)
{
    snap *s = arg;
    if (drv_grow(&s->queues, sizeof *s->queues, &s->cap_queues, s->nqueues + 1) != 0)
        return DRV_ENOMEM;
    int rc = drv_kube_decode_queue(item, s->names, &s->queues[s->nqueues], &s->d);
    s->nqueues += rc == 0;
    return rc;
}

/* Every list, as `drover run` reads them (ctrl_intake.c's paths), 500 items a page. A missing
 * CRD (404) is an empty list for PodGroups and Queues, as for the controller. */
static int read_all(snap *s)
{
    static const struct {
        const char *path;
        drv_kube_item_cb cb;
        bool optional;
    } lists[] = {{"/apis/scheduling.k8s.io/v1/priorityclasses", keep_pc, false},
                 {"/apis/drover.dev/v1alpha1/queues", keep_queue, true},
                 {"/api/v1/nodes", keep_node, false},
                 {"/apis/drover.dev/v1alpha1/trainingjobs", keep_tj, false},
                 {"/apis/scheduling.x-k8s.io/v1alpha1/podgroups", keep_pg, true},
                 {"/api/v1/pods", keep_pod, false}};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        char rv[64];
        s->d.msg[0] = 0;
        int rc =
            drv_kube_list(s->k, lists[i].path, NULL, 500, lists[i].cb, s, rv, sizeof rv, &s->d);
        if (rc && lists[i].optional && strstr(s->d.msg, "404")) {
            s->d.msg[0] = 0;
            continue;
        }
        if (rc) {
            if (!s->d.msg[0])
                drv_fail(&s->d, rc, "%s: %s", lists[i].path, drv_strerror(rc));
            return rc;
        }
    }
    return 0;
}

/* ---- what is written ---------------------------------------------------------------------- */

/* A YAML double-quoted string (JSON's escapes, which YAML reads). */
static void put_q(FILE *f, const char *v)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void put_res(FILE *f, drv_res r)
{
    fprintf(f, "cpu: %lldm, memory: %lld, gpu: %lld", (long long)r.cpu, (long long)r.mem,
            (long long)r.gpu);
}

/* Whether pod p is one of job j's. A TrainingJob's pods through their controller's uid, as
 * the controller decides (DESIGN.md's trust boundary); a PodGroup's through its label. */
static bool pod_of(const snap *s, const spod *p, const sjob *j)
{
    (void)s;
    if (p->k.ns != j->ns)
        return false;
    if (j->group)
        return p->k.group == j->name && p->k.job == 0;
    return j->uid ? p->k.owner == j->uid : p->k.job == j->name;
}

static bool pod_live(const spod *p)
{
    return !p->k.deleting && p->k.phase != DRV_KPOD_SUCCEEDED && p->k.phase != DRV_KPOD_FAILED;
}

/* Per pod, the job it belongs to (an index of s->jobs), or -1. O(pods x jobs). */
static int32_t *pods_to_jobs(const snap *s)
{
    int32_t *owner = drv_malloc((size_t)(s->npods > 0 ? s->npods : 1) * sizeof *owner);
    for (int32_t i = 0; owner && i < s->npods; i++) {
        owner[i] = -1;
        for (int32_t k = 0; k < s->njobs && owner[i] < 0; k++)
            if (pod_of(s, &s->pods[i], &s->jobs[k]))
                owner[i] = k;
    }
    return owner;
}

/* One node's entry; held: what pods no job of the snapshot owns hold on it. */
static int put_node(snap *s, FILE *f, json_t *item, drv_res held)
{
    drv_knode n;
    int rc = drv_kube_decode_node(item, s->names, &n, &s->d);
    if (rc)
        return rc;
    const char *name = str(s, n.name);
    if (!drv_name_ok(name, 39))
        return drv_name_fail(&s->d, "node", name, 39);
    drv_res a = drv_res_sub(n.alloc, held);
    a.cpu = a.cpu > 0 ? a.cpu : 0;
    a.mem = a.mem > 0 ? a.mem : 0;
    a.gpu = a.gpu > 0 ? a.gpu : 0;
    fprintf(f, "  - name: %s\n    cpu: %lldm\n    memory: %lld\n    gpu: %lld\n", name,
            (long long)a.cpu, (long long)a.mem, (long long)a.gpu);
    if (n.zone && drv_name_ok(str(s, n.zone), 31))
        fprintf(f, "    zone: %s\n", str(s, n.zone));
    if (n.rack && drv_name_ok(str(s, n.rack), 31))
        fprintf(f, "    rack: %s\n", str(s, n.rack));
    if (held.cpu || held.mem || held.gpu) {
        fprintf(f, "    # allocatable less what pods Drover does not schedule hold here: ");
        put_res(f, held);
        fprintf(f, "\n");
    }
    json_t *meta = json_object_get(item, "metadata");
    json_t *labels = json_object_get(meta, "labels");
    const char *gpu_label = s->o->gpu_label ? s->o->gpu_label : DRV_GPU_TYPE_LABEL;
    const char *type = json_string_value(json_object_get(labels, gpu_label));
    bool typed = type && drv_name_ok(type, 63); /* else it stays a label like any other */
    const char *key;
    json_t *v;
    int nl = 0;
    json_object_foreach(labels, key, v)
    {
        if (!json_is_string(v) || !strcmp(key, "kubernetes.io/hostname") ||
            (typed && (!strcmp(key, gpu_label) || !strcmp(key, DRV_GPU_TYPE_LABEL))))
            continue;
        fprintf(f, nl++ ? ", " : "    labels: {");
        put_q(f, key);
        fprintf(f, ": ");
        put_q(f, json_string_value(v));
    }
    if (nl)
        fprintf(f, "}\n");
    if (typed)
        fprintf(f, "    gpuType: %s\n", type);
    size_t i;
    json_t *t;
    int nt = 0;
    json_array_foreach(json_object_get(json_object_get(item, "spec"), "taints"), i, t)
    {
        const char *k = json_string_value(json_object_get(t, "key"));
        const char *val = json_string_value(json_object_get(t, "value"));
        const char *eff = json_string_value(json_object_get(t, "effect"));
        if (!k || !eff)
            continue;
        fprintf(f, nt++ ? ", " : "    taints: [");
        fprintf(f, "{key: ");
        put_q(f, k);
        if (val) {
            fprintf(f, ", value: ");
            put_q(f, val);
        }
        fprintf(f, ", effect: ");
        put_q(f, eff);
        fprintf(f, "}");
    }
    if (nt)
        fprintf(f, "]\n");
    if (n.unschedulable || !n.ready || n.not_ready)
        fprintf(f, "    unschedulable: true%s\n",
                n.unschedulable ? "" : "  # not Ready: no pod is placed there");
    return 0;
}

static void put_quota(FILE *f, const char *field, drv_res q)
{
    const char *keys[3] = {"cpu", "memory", "gpu"};
    int64_t v[3] = {q.cpu, q.mem, q.gpu};
    int n = 0;
    for (int i = 0; i < 3; i++) {
        if (v[i] == DRV_UNLIMITED)
            continue;
        fprintf(f, n++ ? ", " : "    %s: {", field);
        fprintf(f, "%s: %lld%s", keys[i], (long long)v[i], i == 0 ? "m" : "");
    }
    if (n)
        fprintf(f, "}\n");
}

static int put_queues(snap *s, FILE *f)
{
    if (s->nqueues == 0)
        return 0;
    fprintf(f, "queues:  # the Queues (queues.drover.dev)\n");
    for (int32_t i = 0; i < s->nqueues; i++) {
        const drv_kqueue *q = &s->queues[i];
        if (!drv_name_ok(str(s, q->name), DRV_QUEUE_NAME_MAX))
            return drv_name_fail(&s->d, "Queue", str(s, q->name), DRV_QUEUE_NAME_MAX);
        fprintf(f, "  - name: %s\n    weight: %.17g\n", str(s, q->name), q->weight);
        if (q->cohort)
            fprintf(f, "    cohort: %s\n", str(s, q->cohort));
        put_quota(f, "nominalQuota", q->quota);
        if (q->cohort)
            put_quota(f, "borrowingLimit", q->borrow);
    }
    return 0;
}

static int write_cluster(snap *s, FILE *f, const int32_t *owner)
{
    fprintf(f, "# drover snapshot: the cluster's nodes and queues (docs/formats.md)\nnodes:\n");
    size_t i;
    json_t *item;
    json_array_foreach(s->nodes, i, item)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
        int32_t id = name ? drv_strtab_find(s->names, name) : -1;
        drv_res held = {0, 0, 0};
        for (int32_t k = 0; id > 0 && k < s->npods; k++)
            if (owner[k] < 0 && s->pods[k].k.node == id && pod_live(&s->pods[k]))
                held = drv_res_add(held, s->pods[k].k.req);
        int rc = put_node(s, f, item, held);
        if (rc)
            return rc;
    }
    return put_queues(s, f);
}

/* A PriorityClass's value: the named one's, or without a name the global default's (the
 * largest, as kube-apiserver picks), else 0. *known: the class named exists; *min_rt: its
 * drover.dev/min-runtime-seconds (0: none). */
static int32_t priority_of(const snap *s, int32_t name, bool *known, double *min_rt)
{
    int32_t v = 0;
    bool found = false;
    *known = name == 0;
    *min_rt = 0;
    for (int32_t i = 0; i < s->npcs; i++) {
        const drv_kpriorityclass *p = &s->pcs[i];
        if (name && p->name == name) {
            *known = true;
            *min_rt = p->min_runtime;
            return p->value;
        }
        if (!name && p->global_default && (!found || p->value > v)) {
            v = p->value;
            *min_rt = p->min_runtime;
            found = true;
        }
    }
    return v;
}

/* A job's pods by role: live ones, bound ones, each bound one's node in order; the earliest
 * start of a bound one. */
typedef struct job_pods {
    int32_t live[DRV_NROLES], bound[DRV_NROLES];
    drv_res req; /* a PodGroup's: its first live pod's request (one role, worker) */
    double started;
} job_pods;

static job_pods count_pods(const snap *s, const int32_t *owner, int32_t job)
{
    job_pods jp = {.started = INFINITY};
    for (int32_t i = 0; i < s->npods; i++) {
        const spod *p = &s->pods[i];
        if (owner[i] != job || !pod_live(p))
            continue;
        int r = s->jobs[job].group || p->k.role < 0 ? DRV_ROLE_WORKER : p->k.role;
        if (jp.live[r]++ == 0 && s->jobs[job].group)
            jp.req = p->k.req;
        if (p->k.node) {
            jp.bound[r]++;
            if (isfinite(p->started) && p->started < jp.started)
                jp.started = p->started;
        }
    }
    return jp;
}

/* The roles of job j as the workload's; running: with the counts its bound pods give. */
static void put_roles(const snap *s, FILE *f, const sjob *j, const job_pods *jp, bool running)
{
    fprintf(f, "    roles:\n");
    for (int r = 0; r < DRV_NROLES; r++) {
        drv_rolespec rs;
        const char *cons = NULL;
        if (j->group) {
            if (r != DRV_ROLE_WORKER)
                continue;
            int32_t n = jp->live[r];
            int32_t mn = j->pg.min_member < n ? j->pg.min_member : n;
            rs = (drv_rolespec){n, mn, n, jp->req, jp->req.cpu};
        } else {
            rs = j->tj.role[r];
            cons = j->tj.cons[r] ? str(s, j->tj.cons[r]) : NULL;
        }
        if (rs.replicas <= 0 && rs.max <= 0)
            continue;
        if (running) {
            rs.replicas = jp->bound[r];
            rs.min = rs.min < rs.replicas ? rs.min : rs.replicas;
            rs.max = rs.max > rs.replicas ? rs.max : rs.replicas;
        }
        if (rs.replicas <= 0)
            continue;
        fprintf(f, "      %s: {replicas: %d, ", drv_role_name(r), rs.replicas);
        if (r == DRV_ROLE_WORKER)
            fprintf(f, "min: %d, max: %d, ", rs.min, rs.max);
        put_res(f, rs.req);
        /* the template's nodeSelector, affinity.nodeAffinity and tolerations: JSON in the
         * workload's spelling (docs/formats.md, "Node constraints"), spliced in */
        if (cons && cons[0] == '{' && strlen(cons) > 2)
            fprintf(f, ", %.*s", (int)strlen(cons) - 2, cons + 1);
        fprintf(f, "}\n");
    }
}

/* runningOn: each bound pod's node, per role. */
static void put_running_on(const snap *s, FILE *f, const int32_t *owner, int32_t job)
{
    fprintf(f, "    runningOn:\n");
    for (int r = 0; r < DRV_NROLES; r++) {
        int n = 0;
        for (int32_t i = 0; i < s->npods; i++) {
            const spod *p = &s->pods[i];
            int pr = s->jobs[job].group || p->k.role < 0 ? DRV_ROLE_WORKER : p->k.role;
            if (owner[i] != job || !pod_live(p) || !p->k.node || pr != r)
                continue;
            if (n++ == 0)
                fprintf(f, "      %s: [", drv_role_name(r));
            fprintf(f, "%s%s", n > 1 ? ", " : "", str(s, p->k.node));
        }
        if (n)
            fprintf(f, "]\n");
    }
}

/* Whether every role's live pods are bound and at least its gang's minimum: the job runs. */
static bool is_running(const sjob *j, const job_pods *jp)
{
    int32_t bound = 0;
    for (int r = 0; r < DRV_NROLES; r++) {
        if (jp->bound[r] != jp->live[r])
            return false;
        int32_t need = j->group               ? (r == DRV_ROLE_WORKER ? j->pg.min_member : 0)
                       : r == DRV_ROLE_WORKER ? j->tj.role[r].min
                                              : j->tj.role[r].replicas;
        if (jp->bound[r] < need)
            return false;
        bound += jp->bound[r];
    }
    return bound > 0;
}

/* One job's entry, or nothing (counted) for a finished one or one half bound. */
static int put_job(snap *s, FILE *f, const int32_t *owner, int32_t job)
{
    const sjob *j = &s->jobs[job];
    if (s->o->ns && strcmp(str(s, j->ns), s->o->ns) != 0)
        return 0;
    if (j->finished) {
        s->skipped_finished++;
        return 0;
    }
    job_pods jp = count_pods(s, owner, job);
    bool running = is_running(j, &jp);
    int32_t nbound = 0, nlive = 0;
    for (int r = 0; r < DRV_NROLES; r++) {
        nbound += jp.bound[r];
        nlive += jp.live[r];
    }
    if (j->group && nlive == 0) { /* a gang with no pod yet: nothing to size it by */
        s->skipped_single++;
        return 0;
    }
    char name[160];
    snprintf(name, sizeof name, "%s.%s", str(s, j->ns), str(s, j->name));
    if (!drv_name_ok(name, DRV_JOB_NAME_MAX))
        return drv_name_fail(&s->d, "job (namespace.name)", name, DRV_JOB_NAME_MAX);
    int32_t qname = j->group ? j->pg.queue : j->tj.queue;
    int32_t pclass = j->group ? j->pg.priority_class : j->tj.priority_class;
    bool known;
    double min_rt;
    int32_t prio = priority_of(s, pclass, &known, &min_rt);
    fprintf(f, "  - name: %s\n", name);
    if (j->model[0])
        fprintf(f, "    model: %s\n", j->model);
    else
        fprintf(f, "    model: %s  # assumed: no annotation drover.dev/model\n",
                s->o->model ? s->o->model : "resnet50");
    if (qname)
        fprintf(f, "    queue: %s\n", str(s, qname));
    if (prio || pclass)
        fprintf(f, "    priority: %d  # PriorityClass %s%s\n", prio,
                pclass ? str(s, pclass) : "(the global default)", known ? "" : " (not found: 0)");
    if (min_rt > 0)
        fprintf(
            f,
            "    minRuntimeSeconds: %.17g  # its PriorityClass's drover.dev/min-runtime-seconds\n",
            min_rt);
    if (!j->group && j->tj.user && drv_name_ok(str(s, j->tj.user), DRV_USER_NAME_MAX))
        fprintf(f, "    user: %s\n", str(s, j->tj.user));
    if (!j->group && j->tj.total_steps > 0)
        fprintf(f, "    maxSteps: %.17g\n", j->tj.total_steps);
    put_roles(s, f, j, &jp, running);
    if (running) {
        double since = isfinite(jp.started) && jp.started < s->now ? jp.started - s->now : 0;
        fprintf(f, "    startedAt: %.3f  # seconds before the snapshot\n", since);
        put_running_on(s, f, owner, job);
    } else if (nbound > 0) {
        fprintf(f, "    # %d of its pods are bound, not the whole gang: pending here\n", nbound);
        s->skipped_partial++;
    }
    return 0;
}

static int write_workload(snap *s, FILE *f, const int32_t *owner)
{
    fprintf(f, "# drover snapshot: TrainingJobs and PodGroup gangs not finished (docs/formats.md,\n"
               "# \"Running jobs\"); pending ones submitted at 0, the snapshot's moment\njobs:\n");
    int rc = 0;
    long at = ftell(f);
    for (int32_t k = 0; k < s->njobs && !rc; k++)
        rc = put_job(s, f, owner, k);
    if (!rc && ftell(f) == at)
        fprintf(f, "  []\n");
    return rc;
}

/* snapshot.yaml: what whatif.c checks (version) and shows (when, from where). */
static void write_meta(const snap *s, FILE *f, const char *server)
{
    char when[64];
    drv_time_rfc3339(when, sizeof when, s->now, false);
    fprintf(f,
            "# drover snapshot (docs/what-if.md): replay with\n"
            "#   drover sim --from-snapshot DIR --policy A,B\n"
            "version: 1\ntakenAt: \"%s\"\nserver: ",
            when);
    put_q(f, server);
    fprintf(f,
            "\n# %d nodes, %d pods, %d TrainingJobs and PodGroups, %d Queues, %d "
            "PriorityClasses read;\n# left out: %d finished jobs, %d gangs with no pod; %d "
            "jobs half bound written as pending\n",
            (int)json_array_size(s->nodes), s->npods, s->njobs, s->nqueues, s->npcs,
            s->skipped_finished, s->skipped_single, s->skipped_partial);
}

/* Writes the three files into o->out, each atomically. 0 or an error code, s->d says what. */
static int write_files(snap *s, const char *server)
{
    int32_t *owner = pods_to_jobs(s);
    if (!owner)
        return drv_fail(&s->d, DRV_ENOMEM, "out of memory");
    int rc = 0;
    /* workload first: it counts what is left out, which snapshot.yaml says */
    static const char *const files[] = {"workload.yaml", "cluster.yaml", "snapshot.yaml"};
    for (int i = 0; i < 3 && !rc; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", s->o->out, files[i]);
        drv_file_out fo = {0};
        if ((rc = drv_file_out_open(&fo, path, &s->d)) != 0)
            break;
        rc = i == 0   ? write_workload(s, fo.f, owner)
             : i == 1 ? write_cluster(s, fo.f, owner)
                      : (write_meta(s, fo.f, server), 0);
        rc = rc ? (drv_file_out_abort(&fo), rc) : drv_file_out_commit(&fo, &s->d);
    }
    drv_free(owner);
    return rc;
}

static void snap_fini(snap *s)
{
    json_decref(s->nodes);
    drv_free(s->pods);
    drv_free(s->jobs);
    drv_free(s->pcs);
    drv_free(s->queues);
    drv_strtab_free(s->names);
    drv_kube_free(s->k);
}

int cmd_snapshot(int argc, char **argv)
{
    snap_opts o = {0};
    int first, status = cli_begin(&snapshot_command, argc, argv, &o, &first);
    if (status >= 0)
        return status;
    if (!o.out) {
        fputs("drover snapshot: --out DIR is required\n", stderr);
        return EXIT_USAGE;
    }
    if (o.incluster && (o.kubeconfig || o.context)) {
        fputs("drover snapshot: --in-cluster cannot be combined with --kubeconfig or --context\n",
              stderr);
        return EXIT_USAGE;
    }
    if (o.model && !drv_name_ok(o.model, 31)) {
        fprintf(stderr, "drover snapshot: --model: expected a model family name, found '%s'\n",
                o.model);
        return EXIT_USAGE;
    }
    snap s = {.o = &o, .names = drv_strtab_new(), .nodes = json_array()};
    drv_kube_config cfg;
    memset(&cfg, 0, sizeof cfg);
    int rc = !s.names || !s.nodes ? drv_fail(&s.d, DRV_ENOMEM, "out of memory")
             : o.incluster        ? drv_kube_incluster(&cfg, NULL, &s.d)
                                  : drv_kubeconfig_load(&cfg, o.kubeconfig, o.context, &s.d);
    status = rc ? EXIT_USAGE : 0;
    char server[512] = "";
    if (!rc) {
        snprintf(server, sizeof server, "%s", cfg.server ? cfg.server : "");
        cfg.component = "snapshot";
        rc = drv_kube_new(&s.k, &cfg, &s.d);
        status = rc ? EXIT_USAGE : 0;
    }
    drv_kube_config_fini(&cfg);
    if (!rc) {
        s.now = drv_clock_wall();
        rc = read_all(&s);
        status = rc ? EXIT_RUN : 0;
    }
    if (!rc && mkdir(o.out, 0777) != 0 && errno != EEXIST) {
        rc = drv_fail(&s.d, DRV_EIO, "--out %s: cannot create directory: %s", o.out,
                      strerror(errno));
        status = EXIT_RUN;
    }
    if (!rc) {
        rc = write_files(&s, server);
        status = rc == DRV_EINVAL ? EXIT_USAGE : rc ? EXIT_RUN : 0;
    }
    if (rc)
        fprintf(stderr, "drover snapshot: %s\n", s.d.msg[0] ? s.d.msg : drv_strerror(rc));
    else
        printf("wrote %s/snapshot.yaml, cluster.yaml, workload.yaml; replay it with\n"
               "  drover sim --from-snapshot %s --policy k8s-default,drover\n",
               o.out, o.out);
    snap_fini(&s);
    return status;
}
