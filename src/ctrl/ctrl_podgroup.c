/*
 * ctrl_podgroup.c - `drover run` serves other operators' gangs: pods with our schedulerName
 * that Drover did not create (no drover.dev/job label), grouped by their
 * scheduling.x-k8s.io/pod-group label and its PodGroup (scheduler-plugins' coscheduling CRD,
 * which Kubeflow's training operator creates for a TFJob or PyTorchJob with gang scheduling),
 * or alone (a gang of one). Scheduler thread only (ctrl.h).
 *
 * Owns: c->mirror.groups (the table below). May touch: the mirror's state, job and pod records
 * (a gang becomes a job of the state here), names, the writer (PodGroup status, Events).
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
 * Bounds: admit visits every group, only on an iteration after a pod or PodGroup event
 * changed one (or, while a group waits for its minResources, after anything changed); a group
 * remembers at most one record per pod; the table holds only groups with a PodGroup, a pod
 * waiting or a live job (drop_idle). The timeouts visit every group, after each cycle and when
 * one comes (ctrl_loop.c).
 */
#include "ctrl.h"

#include <math.h>
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
    double since;          /* while a job: when it became one (wall), for its timeout */
    bool timeout_done;     /* its timeout was said, or it was placed before it */
    int32_t queue, pclass; /* interned: its PodGroup's spec.queue, spec.priorityClassName */
    char held[400];        /* the Event said about its missing queue or class, "" none */
} pg_group;

struct pg_table {
    pg_group *v;
    int32_t n, cap;
    int32_t *by_key; /* by interned key: index in v, or -1 */
    int32_t cap_key;
    bool changed;     /* since admit last looked */
    int32_t held_res; /* groups held back by their minResources (admit looks again) */
};

static struct pg_table *table(drv_ctrl *c)
{
    if (!c->mirror.groups)
        c->mirror.groups = drv_calloc(1, sizeof *c->mirror.groups);
    return c->mirror.groups;
}

/* The group of interned key, created when absent (NULL: out of memory). */
static pg_group *group_of(drv_ctrl *c, int32_t key, int32_t ns, int32_t name, bool lone)
{
    struct pg_table *t = table(c);
    if (!t)
        return NULL;
    int32_t old = t->cap_key;
    if (key >= old) {
        if (drv_grow(&t->by_key, sizeof *t->by_key, &t->cap_key, key + 1) != 0)
            return NULL;
        for (int32_t i = old; i < t->cap_key; i++)
            t->by_key[i] = -1;
    }
    if (t->by_key[key] >= 0)
        return &t->v[t->by_key[key]];
    if (drv_grow(&t->v, sizeof *t->v, &t->cap, t->n + 1) != 0)
        return NULL;
    pg_group *g = &t->v[t->n];
    *g = (pg_group){.key = key,
                    .ns = ns,
                    .name = name,
                    .lone = lone,
                    .exists = lone,
                    .min_member = 1,
                    .job = -1,
                    .said = -1};
    t->by_key[key] = t->n++;
    return g;
}

/* A group with nothing left to serve (no pods waiting, no job, and no PodGroup or alone) is
 * forgotten, so that the table holds only live groups: the last one takes its place. */
static void drop_idle(struct pg_table *t, int32_t key)
{
    int32_t i = key < t->cap_key ? t->by_key[key] : -1;
    if (i < 0)
        return;
    pg_group *g = &t->v[i];
    if (g->npods > 0 || g->job >= 0 || (g->exists && !g->lone))
        return;
    drv_free(g->pods);
    t->by_key[key] = -1;
    if (i != --t->n) {
        t->v[i] = t->v[t->n];
        t->by_key[t->v[i].key] = i;
    }
}

int ctrl_podgroup_apply(drv_ctrl *c, const ctrl_event *e)
{
    const drv_kpodgroup *pg = e->type == DRV_WATCH_DELETED ? &e->old.group : &e->cur.group;
    char ns[256], name[256], key[540];
    ctrl_name_str(c, pg->ns, ns, sizeof ns);
    ctrl_name_str(c, pg->name, name, sizeof name);
    if (c->ns[0] && strcmp(ns, c->ns) != 0)
        return 0;
    snprintf(key, sizeof key, "pg:%s/%s", ns, name);
    int32_t id = ctrl_name_intern(c, key);
    pg_group *g = id > 0 ? group_of(c, id, pg->ns, pg->name, false) : NULL;
    if (!g)
        return DRV_ENOMEM;
    g->exists = e->type != DRV_WATCH_DELETED;
    g->min_member = pg->min_member > 0 ? pg->min_member : 1;
    g->min_res = pg->min_resources;
    g->timeout_s = pg->timeout_s > 0 ? pg->timeout_s : 0;
    g->queue = pg->queue;
    g->pclass = pg->priority_class;
    g->said = -1; /* (its wait is said again, with the new minimum) */
    table(c)->changed = true;
    drop_idle(table(c), id);
    return 0;
}

/* The interned key of pod key's own gang of one ("pod:ns/name"); 0 when not interned and
 * !make, < 0 when out of memory. */
static int32_t lone_key(drv_ctrl *c, int32_t key, bool make)
{
    char pod[540], k[560];
    ctrl_name_str(c, key, pod, sizeof pod);
    snprintf(k, sizeof k, "pod:%s", pod);
    return make ? ctrl_name_intern(c, k) : ctrl_name_find(c, k);
}

/* Slot of pod key in the job of gang key, or -1. */
static int32_t member_slot(const drv_ctrl *c, int32_t gang, int32_t key)
{
    const ctrl_mirror *m = &c->mirror;
    int32_t j = gang > 0 && gang < m->cap_by_key ? m->job_of[gang] : -1;
    if (j < 0 || !m->jobs[j].members)
        return -1;
    for (int32_t k = 0; k < m->st.jobs[j].pod_count; k++)
        if (m->jobs[j].members[k] == key)
            return m->st.jobs[j].pod_base + k;
    return -1;
}

int32_t ctrl_podgroup_slot(drv_ctrl *c, const ctrl_event *e)
{
    const drv_kpod *p = e->type == DRV_WATCH_DELETED ? &e->old.pod : &e->cur.pod;
    int32_t s = member_slot(c, e->job_key, e->key);
    if (s >= 0 || !p->group)
        return s;
    return member_slot(c, lone_key(c, e->key, false), e->key); /* (came late: below) */
}

int ctrl_podgroup_pod(drv_ctrl *c, const ctrl_event *e)
{
    const drv_kpod *p = e->type == DRV_WATCH_DELETED ? &e->old.pod : &e->cur.pod;
    /* A pod of a group whose gang was admitted before it came is placed alone: the gang's
     * minimum is met, and (as with scheduler-plugins) members beyond it need not wait. */
    struct pg_table *t = table(c);
    int32_t key = e->job_key;
    bool late =
        p->group && t && key < t->cap_key && t->by_key[key] >= 0 && t->v[t->by_key[key]].job >= 0;
    if (late && (key = lone_key(c, e->key, true)) < 0)
        return DRV_ENOMEM;
    bool lone = !p->group || late;
    pg_group *g = group_of(c, key, p->ns, lone ? p->name : p->group, lone);
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
        g->pods[g->npods++] = (pg_member){e->key, *p};
    }
    table(c)->changed = true;
    drop_idle(table(c), key);
    return 0;
}

/* ---- admission: a gang becomes a job of the state ------------------------------------------- */

/* The name of the object a group's Events and status are about, and its kind. */
static void about(drv_ctrl *c, int32_t ns, int32_t name, char *nsb, char *nameb, size_t n)
{
    ctrl_name_str(c, ns, nsb, n);
    ctrl_name_str(c, name, nameb, n);
}

static void event_on(drv_ctrl *c, bool lone, int32_t ns, int32_t name, const char *type,
                     const char *reason, const char *msg)
{
    char nsb[256], nameb[256];
    about(c, ns, name, nsb, nameb, sizeof nsb);
    if (lone)
        ctrl_writer_event_kind(c, "Pod", "v1", nsb, nameb, "", type, reason, msg);
    else
        ctrl_writer_event_kind(c, "PodGroup", "scheduling.x-k8s.io/v1alpha1", nsb, nameb, "", type,
                               reason, msg);
}

/* Pods naming a PodGroup that does not exist: an Event on each (once per wait). */
static void say_missing(drv_ctrl *c, pg_group *g)
{
    if (g->said_missing)
        return;
    char ns[256], name[256], msg[700];
    about(c, g->ns, g->name, ns, name, sizeof ns);
    snprintf(msg, sizeof msg,
             "its scheduling.x-k8s.io/pod-group label names PodGroup %s/%s, which does not "
             "exist: waiting for it",
             ns, name);
    for (int32_t i = 0; i < g->npods; i++)
        event_on(c, true, g->pods[i].pod.ns, g->pods[i].pod.name, "Warning", "PodGroupMissing",
                 msg);
    g->said_missing = true;
}

/* Whether g's queue and priority class (Volcano's PodGroup fields) exist: *tmpl gets them;
 * when not, a Warning Event on the PodGroup says which, once per cause. */
static bool gang_resolved(drv_ctrl *c, pg_group *g, drv_job *tmpl)
{
    char why[400], reason[48];
    if (g->lone || (!g->queue && !g->pclass))
        return true;
    if (ctrl_shared_resolve_names(c, g->queue, g->pclass, tmpl, why, sizeof why, reason,
                                  sizeof reason)) {
        g->held[0] = 0;
        return true;
    }
    if (strcmp(g->held, why) != 0) {
        event_on(c, false, g->ns, g->name, "Warning", reason, why);
        snprintf(g->held, sizeof g->held, "%s", why);
    }
    return false;
}

/* The state's job for g, its slots the pods known now; its queue and class priority (when its
 * PodGroup names them) from `named`. */
static int make_job(drv_ctrl *c, pg_group *g, const drv_job *named)
{
    ctrl_mirror *m = &c->mirror;
    char ns[256], name[256], key[540];
    about(c, g->ns, g->name, ns, name, sizeof ns);
    snprintf(key, sizeof key, "%s/%s", ns, name);
    drv_job tmpl;
    memset(&tmpl, 0, sizeof tmpl);
    tmpl.name = drv_strtab_intern(m->st.names, key);
    tmpl.user = drv_strtab_intern(m->st.names, ns);
    tmpl.queue = named->queue; /* (Volcano's spec.queue; 0: the default queue) */
    if (tmpl.name < 0 || tmpl.user < 0)
        return DRV_ENOMEM;
    /* Its priority: its PodGroup's class, else its pods' (the API server resolved their
     * priorityClassName into spec.priority), the highest; its node constraints: the first
     * pod's (one template makes them all). */
    tmpl.priority = g->npods ? g->pods[0].pod.priority : 0;
    for (int32_t i = 1; i < g->npods; i++)
        if (g->pods[i].pod.priority > tmpl.priority)
            tmpl.priority = g->pods[i].pod.priority;
    if (g->pclass)
        tmpl.priority = named->priority;
    drv_diag d = {{0}};
    int crc = ctrl_mirror_constraint(c, g->npods ? g->pods[0].pod.cons : 0, key, "spec",
                                     &tmpl.cons[DRV_ROLE_WORKER], &d);
    if (crc == DRV_ENOMEM)
        return crc;
    if (crc) /* (the API server validates pods: only a test server lets this through) */
        drv_log(DRV_LOG_WARN, "pod group %s: node constraints ignored: %s", key, d.msg);
    tmpl.model = -1;
    tmpl.submit = drv_clock_mono() - c->loop.t0;
    tmpl.phase = DRV_JOB_PENDING;
    /* One role, the largest request per resource: the core places identical slots (pods of
     * different shapes are over-counted, never under-counted). */
    drv_res req = {0, 0, 0};
    for (int32_t i = 0; i < g->npods; i++) {
        const drv_res *r = &g->pods[i].pod.req;
        req.cpu = r->cpu > req.cpu ? r->cpu : req.cpu;
        req.mem = r->mem > req.mem ? r->mem : req.mem;
        req.gpu = r->gpu > req.gpu ? r->gpu : req.gpu;
    }
    tmpl.role[DRV_ROLE_WORKER] = (drv_rolespec){g->npods, g->npods, g->npods, req, req.cpu};
    int32_t *members = drv_malloc(sizeof *members * (size_t)g->npods);
    int32_t j;
    int rc = members ? drv_state_add_job(&m->st, &tmpl, &j) : DRV_ENOMEM;
    if (rc == 0)
        rc = ctrl_mirror_grow_records(c);
    if (rc != 0) {
        drv_free(members);
        return rc;
    }
    job_record *jr = &m->jobs[j];
    memset(jr, 0, sizeof *jr);
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
    jr->policy.ttl_after_finished_s = -1;
    jr->policy.backoff_limit = -1;
    const drv_job *jb = &m->st.jobs[j];
    for (int32_t k = 0; k < jb->pod_count; k++) {
        members[k] = g->pods[k].key;
        m->pods[jb->pod_base + k] =
            (pod_record){.phase = DRV_KPOD_PENDING, .api_node = -1, .want = -1};
    }
    m->job_of[g->key] = j;
    g->job = j;
    g->since = drv_clock_wall();
    g->timeout_done = false;
    ctrl_count(c, &c->counters.stats.jobs, 1);
    bool bound = true;
    for (int32_t k = 0; k < jb->pod_count && rc == 0; k++) {
        rc = ctrl_mirror_adopt(c, jb->pod_base + k, members[k], jr->t_ready);
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
static bool held_by_min_resources(drv_ctrl *c, pg_group *g)
{
    drv_res need = g->min_res, free = cluster_free(&c->mirror.st);
    bool held = (need.cpu || need.mem || need.gpu) && !drv_res_nonneg(drv_res_sub(free, need));
    if (held && !g->min_res_wait) {
        char msg[400];
        snprintf(msg, sizeof msg,
                 "its minResources (cpu %.1f, memory %.1f GiB, gpu %lld) exceed what the "
                 "schedulable nodes have free (cpu %.1f, memory %.1f GiB, gpu %lld): waiting "
                 "before any pod is tried",
                 (double)need.cpu / 1000, (double)need.mem / (1 << 30), (long long)need.gpu,
                 (double)free.cpu / 1000, (double)free.mem / (1 << 30), (long long)free.gpu);
        event_on(c, false, g->ns, g->name, "Normal", "Waiting", msg);
    }
    g->min_res_wait = held;
    return held;
}

int ctrl_podgroup_admit(drv_ctrl *c)
{
    struct pg_table *t = c->mirror.groups;
    if (!t || !(t->changed || (t->held_res > 0 && c->mirror.dirty)))
        return 0;
    t->changed = false;
    t->held_res = 0;
    int rc = 0;
    for (int32_t i = 0; i < t->n && rc == 0; i++) {
        pg_group *g = &t->v[i];
        if (g->job >= 0 || g->npods == 0)
            continue;
        if (ctrl_mirror_grow_by_key(c, g->key) != 0)
            return DRV_ENOMEM;
        if (!g->exists) {
            say_missing(c, g);
        } else if (g->npods < g->min_member) {
            if (g->said != g->npods) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "%d of its minMember %d pods exist: waiting for %d more before any is "
                         "placed",
                         g->npods, g->min_member, g->min_member - g->npods);
                event_on(c, false, g->ns, g->name, "Normal", "Waiting", msg);
                g->said = g->npods;
            }
        } else if (held_by_min_resources(c, g)) {
            t->held_res++;
        } else {
            drv_job named;
            memset(&named, 0, sizeof named);
            if (gang_resolved(c, g, &named))
                rc = make_job(c, g, &named);
        }
    }
    return rc;
}

double ctrl_podgroup_timeouts(drv_ctrl *c)
{
    struct pg_table *t = c->mirror.groups;
    const drv_state *st = &c->mirror.st;
    double now = drv_clock_wall(), next = INFINITY;
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
        event_on(c, false, g->ns, g->name, "Warning", "ScheduleTimeout", msg);
        g->timeout_done = true;
    }
    return next;
}

/* ---- after a cycle: phase, status, Events -----------------------------------------------------
 */

/* The gang's pods by what they do: running, succeeded, failed, bound (scheduled); and whether
 * every one is finished or gone. */
static bool count_pods(const drv_ctrl *c, int32_t j, int32_t n[4])
{
    const drv_job *jb = &c->mirror.st.jobs[j];
    bool over = true, any_done = false;
    memset(n, 0, sizeof(int32_t) * 4);
    for (int32_t k = 0; k < jb->pod_count; k++) {
        const pod_record *p = &c->mirror.pods[jb->pod_base + k];
        bool done = p->exists == 1 && ctrl_pod_terminal(p->phase);
        n[0] += p->exists == 1 && p->phase == DRV_KPOD_RUNNING;
        n[1] += p->exists == 1 && p->phase == DRV_KPOD_SUCCEEDED;
        n[2] += p->exists == 1 && p->phase == DRV_KPOD_FAILED;
        n[3] += c->mirror.st.pods[jb->pod_base + k].node >= 0 || p->api_node >= 0;
        any_done |= done;
        over &= done || p->exists == 0;
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
static void write_status(drv_ctrl *c, int32_t j, const char *phase, const int32_t n[4], int8_t st)
{
    job_record *jr = &c->mirror.jobs[j];
    if (jr->kind != JOB_PODGROUP ||
        (jr->written == st && !memcmp(jr->wrote_active, n, sizeof(int32_t) * 4)))
        return;
    status_request r;
    memset(&r, 0, sizeof r);
    char ns[256], name[256];
    about(c, jr->ns, jr->name, ns, name, sizeof ns);
    snprintf(r.path, sizeof r.path,
             "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/%s/podgroups/%s/status", ns, name);
    r.podgroup = true;
    snprintf(r.phase, sizeof r.phase, "%s", phase);
    r.active[0] = n[0];
    r.succeeded[0] = n[1];
    r.failed[0] = n[2];
    r.restarts = n[3];
    ctrl_writer_status_request(c, jr->key, &r);
    jr->written = st;
    memcpy(jr->wrote_active, n, sizeof(int32_t) * 4);
}

/* Every pod finished: the job ends, and its group may be admitted again from new pods. */
static void end_job(drv_ctrl *c, int32_t j, bool ok)
{
    ctrl_mirror *m = &c->mirror;
    const drv_job *jb = &m->st.jobs[j];
    for (int32_t k = 0; k < jb->pod_count; k++)
        if (m->st.pods[jb->pod_base + k].node >= 0)
            drv_state_unbind(&m->st, jb->pod_base + k);
    drv_state_set_phase(&m->st, j, DRV_JOB_DONE);
    m->dirty = true; /* its room is free now, after this cycle: the next one runs at once */
    ctrl_count(c, &c->counters.stats.jobs_done, 1);
    job_record *jr = &m->jobs[j];
    jr->status = ok ? ST_SUCCEEDED : ST_FAILED;
    m->job_of[jr->key] = -1;
    struct pg_table *t = m->groups;
    if (t && jr->key < t->cap_key && t->by_key[jr->key] >= 0) {
        t->v[t->by_key[jr->key]].job = -1;
        drop_idle(t, jr->key);
    }
}

void ctrl_podgroup_reconcile(drv_ctrl *c, int32_t j, bool placed, const char *why)
{
    ctrl_mirror *m = &c->mirror;
    job_record *jr = &m->jobs[j];
    const drv_job *jb = &m->st.jobs[j];
    int32_t n[4];
    bool over = count_pods(c, j, n);
    const char *phase = phase_of(jb->pod_count, n, over);
    if (over) {
        end_job(c, j, n[1] >= jb->pod_count);
        write_status(c, j, phase, n, jr->status);
        return;
    }
    bool lone = jr->kind == JOB_LONE_POD;
    if (!placed) {
        if (jb->phase != DRV_JOB_PENDING)
            drv_state_set_phase(&m->st, j, DRV_JOB_PENDING);
        jr->t_ready = -1;
        if (!jr->why_written && why && why[0]) {
            char msg[512];
            if (ctrl_lifecycle_never_fits(c, j, msg, sizeof msg))
                event_on(c, lone, jr->ns, jr->name, "Warning", "NeverFits", msg);
            else
                event_on(c, lone, jr->ns, jr->name, "Normal", "Waiting", why);
            jr->why_written = true;
        }
        jr->status = ST_PENDING;
    } else {
        if (jr->why_written || (jr->written == ST_NONE && !jr->adopted)) {
            char msg[256];
            snprintf(msg, sizeof msg, "%d pods bound by profile %s", jb->pod_count, c->prof.name);
            event_on(c, lone, jr->ns, jr->name, "Normal", "Scheduled", msg);
        }
        jr->why_written = false;
        bool running = n[0] + n[1] >= jb->pod_count;
        if (jb->phase == DRV_JOB_PENDING)
            drv_state_set_phase(&m->st, j, running ? DRV_JOB_RUNNING : DRV_JOB_STARTING);
        else if (jb->phase == DRV_JOB_STARTING && running)
            drv_state_set_phase(&m->st, j, DRV_JOB_RUNNING);
        jr->status = running ? ST_RUNNING : ST_PENDING;
        if (jr->written == ST_NONE)
            jr->written = ST_PENDING; /* (the Scheduled Event is said once) */
    }
    write_status(c, j, phase, n, jr->status);
}

void ctrl_podgroup_touch(drv_ctrl *c)
{
    if (c->mirror.groups)
        c->mirror.groups->changed = true;
}

void ctrl_podgroup_fini(drv_ctrl *c)
{
    struct pg_table *t = c->mirror.groups;
    if (!t)
        return;
    for (int32_t i = 0; i < t->n; i++)
        drv_free(t->v[i].pods);
    drv_free(t->v);
    drv_free(t->by_key);
    drv_free(t);
    c->mirror.groups = NULL;
}
