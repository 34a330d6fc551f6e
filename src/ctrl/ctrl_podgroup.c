/*
 * ctrl_podgroup.c - `drover run` serves other operators' gangs: pods with our schedulerName
 * that Drover did not create (no drover.dev/job label), grouped by their
 * scheduling.x-k8s.io/pod-group label and its PodGroup (scheduler-plugins' coscheduling CRD,
 * which Kubeflow's training operator creates for a TFJob or PyTorchJob with gang scheduling),
 * or alone (a gang of one). Scheduler thread only (ctrl_podgroup.h).
 *
 * Owns: the table below. Touches: the mirror's state, job and pod records (a gang becomes a job
 * of the state here), names, the shared objects, the writer (PodGroup status, Events).
 *
 * A gang is a job of the same core and profile as TrainingJobs: one drv_job whose slots are
 * its pods (role Worker, index = arrival order, each asking the largest request among them),
 * admitted all or nothing. Until then its pods are remembered here (and counted as foreign
 * load when bound, by the mirror). It becomes a job once its PodGroup exists and at least
 * spec.minMember of its pods exist unfinished; every such pod known then is a slot. Drover
 * BINDS these pods (pods/binding) and never creates, deletes or restarts them: their operator
 * owns them (ctrl_binder_place, ctrl_cycle.c's removals).
 *
 * Worked example: PodGroup ml/tf1 (minMember 4) and pods tf1-worker-0..3 arrive. While only
 * three exist the group waits, its Event saying "3 of its minMember 4 pods exist: waiting for
 * 1 more"; the fourth makes job "ml/tf1" with 4 slots (a fifth, later, is placed alone). The
 * cycle binds all 4 (or none, and the PodGroup's Event says why), and the PodGroup's status
 * goes Pending -> Scheduled -> Running (every slot running or done) -> Succeeded (every one
 * succeeded) or Failed (all done, one failed), in scheduler-plugins' phase names.
 *
 * scheduler-plugins' other two fields, as its coscheduling plugin reads them:
 *   spec.minResources   checked before the gang is tried (its PreFilter): while they exceed
 *                       what the schedulable nodes have free in all, the group is not made a
 *                       job (the core never tries it) and an Event says so once;
 *   spec.scheduleTimeoutSeconds
 *                       how long a gang may wait for room (its Permit wait): past it, not
 *                       placed, a Warning Event ScheduleTimeout says so once. scheduler-plugins
 *                       then rejects the pods it holds in Permit and retries the group after a
 *                       back-off, its phase staying Pending; Drover never holds a gang half
 *                       bound, so the group simply stays queued, Pending. Absent: no timeout.
 *
 * Kueue's topology annotations (kueue.x-k8s.io/podset-{required,preferred,unconstrained}-
 * topology) on the pods bind the gang as a TrainingJob's role templates do (the same decode,
 * drv_kube_topology, and level rule, ctrl_mirror_topology): all in one domain of the level.
 * Pods of one group that disagree, or a level --topology lacks: not made a job, a Warning
 * Event (TopologyDiffers, InvalidTopology) naming the pods and annotations.
 *
 * Bounds: admit visits every group, only on an iteration after a pod or PodGroup event
 * changed one (or, while a group waits for its minResources, after anything changed); a group
 * remembers at most one record per pod; the table holds only groups with a PodGroup, a pod
 * waiting or a live job (drop_idle). The timeouts visit every group, after each cycle and when
 * one comes (ctrl_loop.c).
 */
#include "ctrl_podgroup.h"

#include "ctrl_explain.h"

#include "drover/clock.h"
#include "kube/json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A pod of a gang that is not a job yet. */
typedef struct pg_member {
    int32_t key; /* interned "ns/name" (the pod informer's key) */
    drv_kpod pod;
} pg_member;

typedef struct pg_group {
    int32_t key;      /* interned "pg:ns/name" or "pod:ns/name" */
    int32_t ns, name; /* interned: the PodGroup's (or the lone pod's) */
    bool lone;        /* a pod without a pod-group label */
    bool exists;      /* its PodGroup is seen (always, alone) */
    int32_t min_member;
    pg_member *pods; /* its unfinished pods not in a job */
    int32_t npods, cap;
    int32_t job;           /* the state's job while it is one, else -1 */
    int32_t said;          /* the pod count its last waiting Event was about, -1: none */
    bool said_missing;     /* the Events about its missing PodGroup were written */
    drv_res min_res;       /* spec.minResources (0: none) */
    int32_t timeout_s;     /* spec.scheduleTimeoutSeconds (0: none) */
    bool min_res_wait;     /* held back by its minResources (its Event written) */
    double since;          /* while a job: when it became one (mono), for its timeout */
    bool timeout_done;     /* its timeout was said, or it was placed before it */
    int32_t queue, pclass; /* interned: its PodGroup's spec.queue, spec.priorityClassName */
    char held[512];        /* the Event said about its missing queue, class or topology, "" none */
} pg_group;

struct pg_table {
    pg_group *v;
    int32_t n, cap;
    int32_t *by_key; /* by interned key: index in v, or -1 */
    int32_t cap_key;
    bool changed;     /* since admit last looked */
    int32_t held_res; /* groups held back by their minResources (admit looks again) */
};

void ctrl_podgroup_init(ctrl_podgroup *pg, ctrl_mirror *mirror, ctrl_names *names,
                        ctrl_shared *shared, ctrl_writer *writer, const ctrl_config *cfg)
{
    pg->mirror = mirror;
    pg->names = names;
    pg->shared = shared;
    pg->writer = writer;
    pg->cfg = cfg;
}

static struct pg_table *table(ctrl_podgroup *pg)
{
    if (!pg->groups)
        pg->groups = drv_calloc(1, sizeof *pg->groups);
    return pg->groups;
}

int ctrl_podgroup_grow_by_key(ctrl_podgroup *pg, int32_t id)
{
    struct pg_table *t = table(pg);
    if (!t)
        return DRV_ENOMEM;
    int32_t old = t->cap_key;
    if (id < old)
        return 0;
    if (drv_grow(&t->by_key, sizeof *t->by_key, &t->cap_key, id + 1) != 0)
        return DRV_ENOMEM;
    for (int32_t i = old; i < t->cap_key; i++)
        t->by_key[i] = -1;
    return 0;
}

/* The group of interned key (held by the table by key: ctrl_podgroup_grow_by_key), created
 * when absent (NULL: out of memory). A new group takes the member array a dropped one left in
 * its slot (drop_idle). */
static pg_group *group_of(struct pg_table *t, int32_t key, int32_t ns, int32_t name, bool lone)
{
    if (t->by_key[key] >= 0)
        return &t->v[t->by_key[key]];
    int32_t old = t->cap;
    if (drv_grow(&t->v, sizeof *t->v, &t->cap, t->n + 1) != 0)
        return NULL;
    memset(t->v + old, 0, sizeof *t->v * (size_t)(t->cap - old));
    pg_group *g = &t->v[t->n];
    *g = (pg_group){.key = key,
                    .ns = ns,
                    .name = name,
                    .lone = lone,
                    .exists = lone,
                    .min_member = 1,
                    .pods = g->pods,
                    .cap = g->cap,
                    .job = -1,
                    .said = -1};
    t->by_key[key] = t->n++;
    return g;
}

/* A group with nothing left to serve (no pods waiting, no job, and no PodGroup or alone) is
 * forgotten, so that the table holds only live groups: the last one takes its place, and its
 * member array (empty) stays in the slot left free, for the next group (freed by fini). */
static void drop_idle(struct pg_table *t, int32_t key)
{
    int32_t i = t->by_key[key];
    if (i < 0)
        return;
    pg_group *g = &t->v[i];
    if (g->npods > 0 || g->job >= 0 || (g->exists && !g->lone))
        return;
    t->by_key[key] = -1;
    if (i != --t->n) {
        pg_group idle = *g;
        t->v[i] = t->v[t->n];
        t->v[t->n] = (pg_group){.pods = idle.pods, .cap = idle.cap};
        t->by_key[t->v[i].key] = i;
    }
}

int ctrl_podgroup_apply(ctrl_podgroup *pg, const ctrl_event *e)
{
    const drv_kpodgroup *k = e->type == DRV_WATCH_DELETED ? &e->old.group : &e->cur.group;
    char ns[256], name[256], key[540];
    ctrl_name_str(pg->names, k->ns, ns, sizeof ns);
    ctrl_name_str(pg->names, k->name, name, sizeof name);
    if (pg->cfg->ns[0] && strcmp(ns, pg->cfg->ns) != 0)
        return 0;
    snprintf(key, sizeof key, "pg:%s/%s", ns, name);
    int32_t id = ctrl_name_intern(pg->names, key);
    pg_group *g = id > 0 && ctrl_podgroup_grow_by_key(pg, id) == 0
                      ? group_of(pg->groups, id, k->ns, k->name, false)
                      : NULL;
    if (!g)
        return DRV_ENOMEM;
    g->exists = e->type != DRV_WATCH_DELETED;
    g->min_member = k->min_member > 0 ? k->min_member : 1;
    g->min_res = k->min_resources;
    g->timeout_s = k->timeout_s > 0 ? k->timeout_s : 0;
    g->queue = k->queue;
    g->pclass = k->priority_class;
    g->said = -1; /* (its wait is said again, with the new minimum) */
    pg->groups->changed = true;
    drop_idle(pg->groups, id);
    return 0;
}

int ctrl_podgroup_pod(ctrl_podgroup *pg, const ctrl_event *e)
{
    const drv_kpod *p = e->type == DRV_WATCH_DELETED ? &e->old.pod : &e->cur.pod;
    /* A pod of a group whose gang was admitted before it came is placed alone: the gang's
     * minimum is met, and (as with scheduler-plugins) members beyond it need not wait. */
    struct pg_table *t = pg->groups; /* (its keys held: ctrl_apply_events) */
    int32_t key = e->job_key;
    bool late = p->group && t->by_key[key] >= 0 && t->v[t->by_key[key]].job >= 0;
    if (late)
        key = e->lone_key; /* (its own gang of one, "pod:ns/name") */
    bool lone = !p->group || late;
    pg_group *g = group_of(t, key, p->ns, lone ? p->name : p->group, lone);
    if (!g)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < g->npods; i++)
        if (g->pods[i].key == e->key) {
            g->pods[i] = g->pods[--g->npods];
            break;
        }
    bool live = e->type != DRV_WATCH_DELETED && !p->deleting && !ctrl_pod_terminal(p->phase);
    if (live) {
        if (drv_grow(&g->pods, sizeof *g->pods, &g->cap, g->npods + 1) != 0)
            return DRV_ENOMEM;
        g->pods[g->npods++] = (pg_member){.key = e->key, .pod = *p};
    }
    t->changed = true;
    drop_idle(t, key);
    return 0;
}

/* ---- admission: a gang becomes a job of the state ------------------------------------------- */

/* The name of the object a group's Events and status are about, and its kind. */
static void about(ctrl_podgroup *pg, int32_t ns, int32_t name, char *nsb, char *nameb, size_t n)
{
    ctrl_name_str(pg->names, ns, nsb, n);
    ctrl_name_str(pg->names, name, nameb, n);
}

static void event_on(ctrl_podgroup *pg, bool lone, int32_t ns, int32_t name, const char *type,
                     const char *reason, const char *msg)
{
    char nsb[256], nameb[256];
    about(pg, ns, name, nsb, nameb, sizeof nsb);
    ctrl_ref obj = {.kind = lone ? "Pod" : "PodGroup",
                    .api_version = lone ? "v1" : "scheduling.x-k8s.io/v1alpha1",
                    .ns = nsb,
                    .name = nameb,
                    .uid = ""};
    ctrl_writer_event(pg->writer, &obj, type, reason, msg);
}

/* Pods naming a PodGroup that does not exist: an Event on each (once per wait). */
static void say_missing(ctrl_podgroup *pg, pg_group *g)
{
    if (g->said_missing)
        return;
    char ns[256], name[256], msg[700];
    about(pg, g->ns, g->name, ns, name, sizeof ns);
    snprintf(msg, sizeof msg,
             "its scheduling.x-k8s.io/pod-group label names PodGroup %s/%s, which does not "
             "exist: waiting for it",
             ns, name);
    for (int32_t i = 0; i < g->npods; i++)
        event_on(pg, true, g->pods[i].pod.ns, g->pods[i].pod.name, "Warning", "PodGroupMissing",
                 msg);
    g->said_missing = true;
}

/* Whether g's queue and priority class (Volcano's PodGroup fields) exist and its Queue admits
 * its namespace: *tmpl gets them; when not, a Warning Event on the PodGroup says which, once
 * per cause. */
static bool gang_resolved(ctrl_podgroup *pg, pg_group *g, drv_job *tmpl)
{
    char why[400], reason[48];
    if (g->lone) /* (no PodGroup: the default queue, no Queue check) */
        return true;
    if (ctrl_shared_resolve_names(pg->shared, g->ns, g->queue, g->pclass, tmpl, why, sizeof why,
                                  reason, sizeof reason)) {
        g->held[0] = 0;
        return true;
    }
    if (strcmp(g->held, why) != 0) {
        event_on(pg, false, g->ns, g->name, "Warning", reason, why);
        snprintf(g->held, sizeof g->held, "%s", why);
    }
    return false;
}

/* A pod's Kueue topology annotation as its Events say it. */
static void topo_text(ctrl_podgroup *pg, const drv_kpod *p, char *buf, size_t n)
{
    char lk[256];
    ctrl_name_str(pg->names, p->topo_key, lk, sizeof lk);
    if (p->topo_mode == DRV_TOPO_NONE)
        snprintf(buf, n, "no topology level");
    else
        snprintf(buf, n, "%s: %s", drv_kube_topology_keys[p->topo_mode], lk);
}

/* Whether g's pods agree on Kueue's topology annotation (the gang is bound as a whole, as a
 * TrainingJob's roles are) and its level is one of --topology's (ctrl_mirror_topology, the
 * TrainingJob's rule): named gets it. When not, a Warning Event on the PodGroup (or the lone
 * pod) says which pod's annotation differs or is wrong, once per cause; the group is not
 * placed. Pods without an annotation and with the unconstrained one agree. */
static bool gang_topology(ctrl_podgroup *pg, pg_group *g, drv_job *named)
{
    char why[512] = "", a[300], b[300], pa[256], pb[256];
    const drv_kpod *p0 = &g->pods[0].pod;
    const char *reason = "InvalidTopology";
    for (int32_t i = 0; i < g->npods && !why[0]; i++) {
        const drv_kpod *p = &g->pods[i].pod;
        if (p->topo_mode == DRV_KPOD_TOPO_BAD) {
            ctrl_name_str(pg->names, p->topo_key, why, sizeof why);
        } else if (p->topo_mode != p0->topo_mode || p->topo_key != p0->topo_key) {
            topo_text(pg, p0, a, sizeof a);
            topo_text(pg, p, b, sizeof b);
            ctrl_name_str(pg->names, p0->name, pa, sizeof pa);
            ctrl_name_str(pg->names, p->name, pb, sizeof pb);
            snprintf(why, sizeof why,
                     "its pods' Kueue topology annotations differ: pod %.60s has %.120s, pod %.60s "
                     "has %.120s "
                     "(the gang is bound as a whole: none is placed)",
                     pa, a, pb, b);
            reason = "TopologyDiffers";
        }
    }
    if (!why[0] &&
        ctrl_mirror_topology(pg->mirror, p0->topo_mode, p0->topo_key, named, why, sizeof why))
        return true;
    if (strcmp(g->held, why) != 0) {
        event_on(pg, g->lone, g->ns, g->name, "Warning", reason, why);
        snprintf(g->held, sizeof g->held, "%s", why);
    }
    return false;
}

/* The state's job template for g (named key "ns/name" and user ns): one role, the largest request
 * per resource (the core places identical slots: pods of different shapes are over-counted,
 * never under-counted); its queue and class priority (when its PodGroup names them) from
 * `named`, else its pods' priority (the API server resolved their priorityClassName into
 * spec.priority), the highest; its node constraints the first pod's (one template makes them
 * all). 0 or DRV_ENOMEM. */
static int gang_template(ctrl_podgroup *pg, const pg_group *g, const drv_job *named,
                         const char *key, const char *ns, ctrl_job_add *a)
{
    ctrl_mirror *m = pg->mirror;
    drv_job *tmpl = &a->d.tmpl;
    memset(a, 0, sizeof *a);
    a->d.name = key;
    a->d.user = ns;
    tmpl->queue = named->queue;         /* (Volcano's spec.queue; 0: the default queue) */
    tmpl->topo_mode = named->topo_mode; /* (gang_topology) */
    tmpl->topo_level = named->topo_level;
    tmpl->priority = g->npods ? g->pods[0].pod.priority : 0;
    for (int32_t i = 1; i < g->npods; i++)
        if (g->pods[i].pod.priority > tmpl->priority)
            tmpl->priority = g->pods[i].pod.priority;
    if (g->pclass) {
        tmpl->priority = named->priority;
        tmpl->min_runtime = named->min_runtime; /* (its class's drover.dev/min-runtime-seconds) */
    }
    drv_diag d = {{0}};
    int32_t cons = g->npods ? g->pods[0].pod.cons : 0;
    char *text = cons ? ctrl_name_dup(pg->names, cons) : NULL;
    int crc = ctrl_mirror_constraint(m, a, DRV_ROLE_WORKER, cons, text, false, key, "spec", &d);
    drv_free(text);
    if (crc == DRV_ENOMEM)
        return crc;
    if (crc) /* (the API server validates pods: only a test server lets this through) */
        drv_log(DRV_LOG_WARN, "pod group %s: node constraints ignored: %s", key, d.msg);
    tmpl->model = -1;
    tmpl->submit = drv_clock_mono() - pg->cfg->t0;
    tmpl->phase = DRV_JOB_PENDING;
    drv_res req = {0, 0, 0};
    for (int32_t i = 0; i < g->npods; i++) {
        const drv_res *r = &g->pods[i].pod.req;
        req.cpu = r->cpu > req.cpu ? r->cpu : req.cpu;
        req.mem = r->mem > req.mem ? r->mem : req.mem;
        req.gpu = r->gpu > req.gpu ? r->gpu : req.gpu;
    }
    tmpl->role[DRV_ROLE_WORKER] = (drv_rolespec){
        .replicas = g->npods, .min = g->npods, .max = g->npods, .req = req, .cpu_limit = req.cpu};
    return 0;
}

/* The state's job for g, its slots the pods known now (gang_template). */
static int make_job(ctrl_podgroup *pg, pg_group *g, const drv_job *named)
{
    ctrl_mirror *m = pg->mirror;
    char ns[256], name[256], key[540];
    about(pg, g->ns, g->name, ns, name, sizeof ns);
    snprintf(key, sizeof key, "%s/%s", ns, name);
    int32_t *members = drv_malloc(sizeof *members * (size_t)g->npods);
    if (!members)
        return DRV_ENOMEM;
    ctrl_job_add a;
    int32_t j;
    int rc = gang_template(pg, g, named, key, ns, &a);
    if (rc == 0)
        rc = ctrl_mirror_add_job(m, &a, g->key, &j);
    if (rc != 0) {
        drv_free(members);
        return rc;
    }
    job_record *jr = &m->jobs[j];
    *jr = (job_record){.key = g->key,
                       .ns = g->ns,
                       .name = g->name,
                       .members = members,
                       .kind = g->lone ? JOB_LONE_POD : JOB_PODGROUP,
                       .t_ready = drv_clock_mono(),
                       .status = ST_PENDING,
                       .created = true,
                       .cond = -1,
                       .start_time = -1,
                       .completion_time = -1};
    snprintf(jr->ns_text, sizeof jr->ns_text, "%.*s", CTRL_NS_LEN - 1, ns);
    snprintf(jr->name_text, sizeof jr->name_text, "%.*s", CTRL_NAME_LEN - 1, name);
    jr->policy.ttl_after_finished_s = -1;
    jr->policy.backoff_limit = -1;
    const drv_job *jb = &m->st.jobs[j];
    for (int32_t k = 0; k < jb->pod_count; k++)
        members[k] = g->pods[k].key;
    g->job = j;
    g->since = drv_clock_mono();
    g->timeout_done = false;
    bool bound = true;
    for (int32_t k = 0; k < jb->pod_count && rc == 0; k++) {
        rc = ctrl_mirror_adopt(m, jb->pod_base + k, members[k], jr->t_ready);
        bound &= m->pods[jb->pod_base + k].api_node >= 0;
    }
    jr->adopted = bound; /* (placed before: by an earlier controller, no second Scheduled) */
    g->npods = 0;        /* (the job's now) */
    g->said = -1;
    m->dirty = true;
    return rc;
}

/* What the schedulable nodes have free in all (as a cycle would count it now). */
static drv_res cluster_free(const drv_state *st)
{
    drv_res free = {0, 0, 0};
    for (int32_t i = 0; i < st->nnodes; i++) {
        drv_res f = drv_node_free(&st->nodes[i]);
        if (st->nodes[i].schedulable && drv_res_nonneg(f))
            free = drv_res_add(free, f);
    }
    return free;
}

/* Whether g's minResources exceed the free cluster: it waits, its Event said once. */
static bool held_by_min_resources(ctrl_podgroup *pg, pg_group *g)
{
    drv_res need = g->min_res, free = cluster_free(&pg->mirror->st);
    bool held = (need.cpu || need.mem || need.gpu) && !drv_res_nonneg(drv_res_sub(free, need));
    if (held && !g->min_res_wait) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "its minResources (cpu %.1f, memory %.1f GiB, gpu %lld) exceed what the "
                 "schedulable nodes have free (cpu %.1f, memory %.1f GiB, gpu %lld): waiting "
                 "before any pod is tried",
                 (double)need.cpu / 1000, (double)need.mem / (1 << 30), (long long)need.gpu,
                 (double)free.cpu / 1000, (double)free.mem / (1 << 30), (long long)free.gpu);
        event_on(pg, false, g->ns, g->name, "Normal", "Waiting", msg);
    }
    g->min_res_wait = held;
    return held;
}

int ctrl_podgroup_admit(ctrl_podgroup *pg)
{
    struct pg_table *t = pg->groups;
    if (!t || !(t->changed || (t->held_res > 0 && pg->mirror->dirty)))
        return 0;
    t->changed = false;
    t->held_res = 0;
    int rc = 0;
    for (int32_t i = 0; i < t->n && rc == 0; i++) {
        pg_group *g = &t->v[i];
        if (g->job >= 0 || g->npods == 0)
            continue;
        if (ctrl_mirror_grow_by_key(pg->mirror, g->key) != 0)
            return DRV_ENOMEM;
        if (!g->exists) {
            say_missing(pg, g);
        } else if (g->npods < g->min_member) {
            if (g->said != g->npods) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "%d of its minMember %d pods exist: waiting for %d more before any is "
                         "placed",
                         g->npods, g->min_member, g->min_member - g->npods);
                event_on(pg, false, g->ns, g->name, "Normal", "Waiting", msg);
                g->said = g->npods;
            }
        } else if (held_by_min_resources(pg, g)) {
            t->held_res++;
        } else {
            drv_job named;
            memset(&named, 0, sizeof named);
            if (gang_topology(pg, g, &named) && gang_resolved(pg, g, &named))
                rc = make_job(pg, g, &named);
        }
    }
    return rc;
}

double ctrl_podgroup_timeouts(ctrl_podgroup *pg)
{
    struct pg_table *t = pg->groups;
    const drv_state *st = &pg->mirror->st;
    double now = drv_clock_mono(), next = INFINITY;
    for (int32_t i = 0; t && i < t->n; i++) {
        pg_group *g = &t->v[i];
        if (g->job < 0 || g->timeout_s <= 0 || g->timeout_done || g->lone)
            continue;
        const drv_job *jb = &st->jobs[g->job];
        if ((drv_job_complete(jb) && drv_job_wanted(jb) > 0) || jb->phase == DRV_JOB_DONE) {
            g->timeout_done = true; /* placed in time */
            continue;
        }
        double at = g->since + g->timeout_s;
        if (now < at) {
            next = at < next ? at : next;
            continue;
        }
        char msg[300];
        snprintf(msg, sizeof msg,
                 "not placed within scheduleTimeoutSeconds (%d s): its %d pods stay queued, "
                 "none bound, until there is room for all of them",
                 g->timeout_s, jb->pod_count);
        event_on(pg, false, g->ns, g->name, "Warning", "ScheduleTimeout", msg);
        g->timeout_done = true;
    }
    return next - now;
}

/* ---- after a cycle: phase, status, Events -----------------------------------------------------
 */

/* The gang's pods by what they do: running, succeeded, failed, bound (scheduled); and whether
 * every one is finished or gone. */
static bool count_pods(const ctrl_mirror *m, int32_t j, int32_t n[4])
{
    const drv_job *jb = &m->st.jobs[j];
    bool over = true, any_done = false;
    memset(n, 0, sizeof(int32_t) * 4);
    for (int32_t k = 0; k < jb->pod_count; k++) {
        const pod_record *p = &m->pods[jb->pod_base + k];
        bool here = p->presence == POD_PRESENT;
        bool done = here && ctrl_pod_terminal(p->phase);
        n[0] += here && p->phase == DRV_KPOD_RUNNING;
        n[1] += here && p->phase == DRV_KPOD_SUCCEEDED;
        n[2] += here && p->phase == DRV_KPOD_FAILED;
        n[3] += m->st.pods[jb->pod_base + k].node >= 0 || p->api_node >= 0;
        any_done |= done;
        over &= done || p->presence == POD_ABSENT;
    }
    return over && any_done;
}

/* scheduler-plugins' phases from the counts (minMember: the gang's size here). */
static const char *phase_of(int32_t min, const int32_t n[4], bool over)
{
    if (over)
        return n[1] >= min ? "Succeeded" : "Failed";
    if (n[0] + n[1] >= min)
        return "Running";
    return n[3] >= min ? "Scheduled" : "Pending";
}

/* The PodGroup's status, when it differs from what was last asked (lone pods have none). */
static void write_status(ctrl_podgroup *pg, int32_t j, const char *phase, const int32_t n[4],
                         int8_t st)
{
    job_record *jr = &pg->mirror->jobs[j];
    if (jr->kind != JOB_PODGROUP ||
        (jr->written == st && !memcmp(jr->wrote_active, n, sizeof(int32_t) * 4)))
        return;
    status_request r;
    memset(&r, 0, sizeof r);
    char ns[256], name[256];
    about(pg, jr->ns, jr->name, ns, name, sizeof ns);
    snprintf(r.path, sizeof r.path,
             "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups/%s/status", ns, name);
    r.podgroup = true;
    snprintf(r.phase, sizeof r.phase, "%s", phase);
    r.active[0] = n[0];
    r.succeeded[0] = n[1];
    r.failed[0] = n[2];
    r.restarts = n[3];
    ctrl_writer_status(pg->writer, jr->key, &r);
    jr->written = st;
    memcpy(jr->wrote_active, n, sizeof(int32_t) * 4);
}

/* Every pod finished: the job ends, and its group may be admitted again from new pods. */
static void end_job(ctrl_podgroup *pg, int32_t j, bool ok)
{
    ctrl_mirror *m = pg->mirror;
    ctrl_mirror_end_job(m, j, true);
    m->dirty = true; /* its room is free now, after this cycle: the next one runs at once */
    job_record *jr = &m->jobs[j];
    jr->status = ok ? ST_SUCCEEDED : ST_FAILED;
    m->job_of[jr->key] = -1;
    struct pg_table *t = pg->groups;
    if (t && jr->key < t->cap_key && t->by_key[jr->key] >= 0) {
        t->v[t->by_key[jr->key]].job = -1;
        drop_idle(t, jr->key);
    }
}

/* A gang not placed: pending, its Event saying why once per wait (why: the cycle's words). */
static void not_placed(ctrl_podgroup *pg, int32_t j, const char *why)
{
    ctrl_mirror *m = pg->mirror;
    job_record *jr = &m->jobs[j];
    if (m->st.jobs[j].phase != DRV_JOB_PENDING)
        ctrl_mirror_set_phase(m, j, DRV_JOB_PENDING);
    jr->t_ready = -1;
    if (!jr->why_written && why && why[0]) {
        char msg[512];
        bool lone = jr->kind == JOB_LONE_POD;
        if (ctrl_explain_never_fits(m, j, msg, sizeof msg))
            event_on(pg, lone, jr->ns, jr->name, "Warning", "NeverFits", msg);
        else
            event_on(pg, lone, jr->ns, jr->name, "Normal", "Waiting", why);
        jr->why_written = true;
    }
    jr->status = ST_PENDING;
}

/* A gang placed: Scheduled once (unless adopted), Running once every pod runs or is done. */
static void placed_gang(ctrl_podgroup *pg, int32_t j, const int32_t n[4])
{
    ctrl_mirror *m = pg->mirror;
    job_record *jr = &m->jobs[j];
    const drv_job *jb = &m->st.jobs[j];
    if (jr->why_written || (jr->written == ST_NONE && !jr->adopted)) {
        char msg[256];
        snprintf(msg, sizeof msg, "%d pods bound by profile %s", jb->pod_count, pg->cfg->prof.name);
        event_on(pg, jr->kind == JOB_LONE_POD, jr->ns, jr->name, "Normal", "Scheduled", msg);
    }
    jr->why_written = false;
    bool running = n[0] + n[1] >= jb->pod_count;
    if (jb->phase == DRV_JOB_PENDING)
        ctrl_mirror_set_phase(m, j, running ? DRV_JOB_RUNNING : DRV_JOB_STARTING);
    else if (jb->phase == DRV_JOB_STARTING && running)
        ctrl_mirror_set_phase(m, j, DRV_JOB_RUNNING);
    jr->status = running ? ST_RUNNING : ST_PENDING;
    if (jr->written == ST_NONE)
        jr->written = ST_PENDING; /* (the Scheduled Event is said once) */
}

void ctrl_podgroup_reconcile(ctrl_podgroup *pg, int32_t j, bool placed, const char *why)
{
    ctrl_mirror *m = pg->mirror;
    job_record *jr = &m->jobs[j];
    int32_t n[4];
    bool over = count_pods(m, j, n);
    const char *phase = phase_of(m->st.jobs[j].pod_count, n, over);
    if (over)
        end_job(pg, j, n[1] >= m->st.jobs[j].pod_count);
    else if (!placed)
        not_placed(pg, j, why);
    else
        placed_gang(pg, j, n);
    write_status(pg, j, phase, n, jr->status);
}

void ctrl_podgroup_touch(ctrl_podgroup *pg)
{
    if (pg->groups)
        pg->groups->changed = true;
}

void ctrl_podgroup_fini(ctrl_podgroup *pg)
{
    struct pg_table *t = pg->groups;
    if (!t)
        return;
    for (int32_t i = 0; i < t->cap; i++) /* (the idle slots' arrays too: drop_idle) */
        drv_free(t->v[i].pods);
    drv_free(t->v);
    drv_free(t->by_key);
    drv_free(t);
    pg->groups = NULL;
}
