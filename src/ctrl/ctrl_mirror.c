/*
 * ctrl_mirror.c - `drover run`'s mirror: applies the informers' events about nodes, pods and
 * TrainingJobs (and the progress collector's samples) to the scheduler thread's drv_state, so
 * that a cycle sees the cluster as the API has it (ctrl.h).
 *
 * Owns: c->mirror (the state, the job and pod records, the tables by interned key), on the
 * scheduler thread only, without a lock. May touch: names (through ctrl_name_*), counters
 * (ctrl_count).
 *
 * What the core sees:
 *   a node      its allocatable minus the requests of pods Drover does not schedule (other
 *               schedulers' pods, DaemonSets) bound there and not finished: "foreign" load;
 *   a job       one drv_job per TrainingJob of our schedulerName (and namespace), its pods the
 *               job's slots (or per gang of another operator's pods: ctrl_podgroup.c); a drover
 *               pod seen before its job is "parked" as foreign load and
 *               adopted when the job shows up, one bound to a node not seen yet is an orphan
 *               bound when the node shows up;
 *   a pod       where the API has it bound is the truth (adopted after a restart), except a
 *               pod being deleted, which holds its node's room until gone (its "ghost").
 * Example: node n1 allocates 8 CPUs and runs a DaemonSet pod asking 1: the state has n1 with 7.
 */
#include "ctrl.h"

#include <math.h>
#include <string.h>

bool ctrl_pod_terminal(int phase)
{
    return phase == DRV_KPOD_SUCCEEDED || phase == DRV_KPOD_FAILED;
}

/* Makes the tables by interned key hold id. */
static int grow_by_key(drv_ctrl *c, int32_t id)
{
    ctrl_mirror *m = &c->mirror;
    int32_t old = m->cap_by_key;
    if (id < old)
        return 0;
    int32_t cap = old;
    if (drv_grow(&m->job_of, sizeof *m->job_of, &cap, id + 1) != 0)
        return DRV_ENOMEM;
    int32_t cap2 = old, cap3 = old, cap4 = old, cap5 = old;
    if (drv_grow(&m->node_of, sizeof *m->node_of, &cap2, cap) != 0 ||
        drv_grow(&m->parked, sizeof *m->parked, &cap3, cap) != 0 ||
        drv_grow(&m->foreign, sizeof *m->foreign, &cap4, cap) != 0 ||
        drv_grow(&m->cons_of, sizeof *m->cons_of, &cap5, cap) != 0)
        return DRV_ENOMEM;
    for (int32_t i = old; i < cap; i++) {
        m->job_of[i] = m->node_of[i] = m->cons_of[i] = -1;
        m->parked[i] = NULL;
        m->foreign[i] = (drv_res){0, 0, 0};
    }
    m->cap_by_key = cap;
    return 0;
}

int ctrl_mirror_grow_by_key(drv_ctrl *c, int32_t id)
{
    return grow_by_key(c, id);
}

int ctrl_mirror_grow_records(drv_ctrl *c)
{
    ctrl_mirror *m = &c->mirror;
    int32_t cap = m->cap_jobs;
    if (drv_grow(&m->jobs, sizeof *m->jobs, &cap, m->st.njobs) != 0)
        return DRV_ENOMEM;
    m->cap_jobs = cap;
    cap = m->cap_pods;
    if (drv_grow(&m->pods, sizeof *m->pods, &cap, m->st.npods) != 0)
        return DRV_ENOMEM;
    m->cap_pods = cap;
    return 0;
}

/* What a pod Drover does not schedule takes from its node: its request while it is bound and
 * not finished. */
static void foreign_res(drv_ctrl *c, int32_t name, drv_res req, int sign)
{
    ctrl_mirror *m = &c->mirror;
    if (!name || grow_by_key(c, name) != 0)
        return;
    drv_res *f = &m->foreign[name];
    *f = sign > 0 ? drv_res_add(*f, req) : drv_res_sub(*f, req);
    int32_t n = m->node_of[name];
    if (n >= 0) {
        drv_state_set_node(&m->st, n, drv_res_sub(m->allocatable[n], *f), m->usable[n]);
        m->dirty = true;
    }
}

/* A pod Drover does not schedule, added (sign > 0) to or taken off its node's foreign load. */
static void foreign_add(drv_ctrl *c, const drv_kpod *p, int sign)
{
    if (!ctrl_pod_terminal(p->phase))
        foreign_res(c, p->node, p->req, sign);
}

/* A pod of ours being deleted holds its node's room until it is gone, like kube-scheduler
 * counts terminating pods; when the state no longer has it there (evicted, migrated), that room
 * is counted as foreign meanwhile. */
void ctrl_mirror_set_ghost(drv_ctrl *c, pod_record *p, int32_t name, drv_res req)
{
    if (p->ghost == name && !memcmp(&p->ghost_req, &req, sizeof req))
        return;
    if (p->ghost)
        foreign_res(c, p->ghost, p->ghost_req, -1);
    p->ghost = name;
    p->ghost_req = req;
    if (name)
        foreign_res(c, name, req, +1);
}

/* A binder read slot's pod after a conflict: it exists, bound to the node interned as
 * node_name (0: unbound). Mirrored as its watch event would be, which may not come again if
 * it was applied already. Returns whether the state now has it bound where the API has it. */
bool ctrl_mirror_pod_read(drv_ctrl *c, int32_t slot, int32_t node_name)
{
    ctrl_mirror *m = &c->mirror;
    pod_record *p = &m->pods[slot];
    const drv_pod *sp = &m->st.pods[slot];
    int32_t node = node_name && node_name < m->cap_by_key ? m->node_of[node_name] : -1;
    if (p->exists == 0)
        p->exists = 1;
    p->api_name = node_name;
    p->api_node = node;
    m->dirty = true;
    if (node < 0 || p->want >= 0 || p->phase == DRV_KPOD_FAILED ||
        m->st.jobs[sp->job].phase == DRV_JOB_DONE)
        return false;
    if (sp->node != node) {
        if (sp->node >= 0)
            drv_state_unbind(&m->st, slot);
        drv_state_bind(&m->st, slot, node);
    }
    return true;
}

static void adopt_orphans(drv_ctrl *c, int32_t name, int32_t node)
{
    ctrl_mirror *m = &c->mirror;
    int32_t k = 0;
    for (int32_t i = 0; i < m->norphans; i++) {
        const orphan_pod *o = &m->orphans[i];
        if (o->node != name) {
            m->orphans[k++] = *o;
            continue;
        }
        const pod_record *p = &m->pods[o->slot];
        const drv_pod *sp = &m->st.pods[o->slot];
        if (p->exists && p->api_name == name && p->phase != DRV_KPOD_FAILED && sp->node < 0 &&
            m->st.jobs[sp->job].phase != DRV_JOB_DONE) {
            drv_state_bind(&m->st, o->slot, node);
            m->pods[o->slot].api_node = node;
        }
    }
    m->norphans = k;
}

/* Node id's labels and taints become those of meta (interned text, drv_knode.meta). */
static int node_meta(drv_ctrl *c, int32_t id, int32_t meta)
{
    ctrl_mirror *m = &c->mirror;
    char *text = meta ? ctrl_name_dup(c, meta) : NULL;
    if (meta && !text)
        return DRV_ENOMEM;
    drv_label *l;
    drv_taint *t;
    int32_t nl, nt;
    int rc = drv_kube_node_meta_parse(text, m->st.names, &l, &nl, &t, &nt);
    if (rc == 0)
        rc = drv_state_set_node_meta(&m->st, id, l, nl, t, nt);
    drv_free(l);
    drv_free(t);
    drv_free(text);
    if (rc == DRV_EINVAL) {
        /* (labels with one key twice cannot come from a real API server: logged, kept as were) */
        drv_log(DRV_LOG_WARN, "node %s: labels or taints not followed (a key given twice)",
                drv_strtab_str(m->st.names, m->st.nodes[id].name));
        rc = 0;
    }
    if (rc == 0)
        m->meta[id] = meta;
    return rc;
}

int ctrl_mirror_apply_node(drv_ctrl *c, const ctrl_event *e)
{
    ctrl_mirror *m = &c->mirror;
    const drv_knode *kn = e->type == DRV_WATCH_DELETED ? &e->old.node : &e->cur.node;
    if (grow_by_key(c, kn->name) != 0)
        return DRV_ENOMEM;
    int32_t id = m->node_of[kn->name];
    /* A NoSchedule taint keeps away only the pods that do not tolerate it (the core's filter),
     * but the node lifecycle's not-ready taint means the node is not used at all, as when its
     * Ready condition is not True (a toleration of it is not honoured: Drover waits). */
    bool ok = e->type != DRV_WATCH_DELETED && kn->ready && !kn->unschedulable && !kn->not_ready;
    if (id < 0) {
        if (e->type == DRV_WATCH_DELETED)
            return 0;
        char name[256], zone[256], rack[256];
        ctrl_name_str(c, kn->name, name, sizeof name);
        int rc = drv_state_add_node(&m->st, name, kn->alloc,
                                    kn->zone ? ctrl_name_str(c, kn->zone, zone, sizeof zone) : NULL,
                                    kn->rack ? ctrl_name_str(c, kn->rack, rack, sizeof rack) : NULL,
                                    &id);
        if (rc != 0)
            return rc;
        int32_t cap = m->cap_nodes, cap2 = m->cap_nodes, cap3 = m->cap_nodes;
        if (drv_grow(&m->allocatable, sizeof *m->allocatable, &cap, m->st.nnodes) != 0 ||
            drv_grow(&m->usable, sizeof *m->usable, &cap2, m->st.nnodes) != 0 ||
            drv_grow(&m->meta, sizeof *m->meta, &cap3, m->st.nnodes) != 0)
            return DRV_ENOMEM;
        m->cap_nodes = cap;
        m->meta[id] = 0;
        m->node_of[kn->name] = id;
        adopt_orphans(c, kn->name, id);
    }
    /* A node deleted keeps its slot, cordoned with nothing allocatable; its pods are deleted by
     * the cluster and leave through their own events. Zone and rack do not move once seen;
     * the other labels and the taints are followed (pods bound stay, as under kube-scheduler:
     * IgnoredDuringExecution). */
    if (e->type != DRV_WATCH_DELETED && m->meta[id] != kn->meta) {
        int rc = node_meta(c, id, kn->meta);
        if (rc)
            return rc;
    }
    m->allocatable[id] = kn->alloc;
    m->usable[id] = ok;
    drv_state_set_node(&m->st, id, drv_res_sub(m->allocatable[id], m->foreign[kn->name]), ok);
    m->dirty = true;
    return 0;
}

static void job_placeable(drv_ctrl *c, int32_t j, double t)
{
    job_record *jr = &c->mirror.jobs[j];
    if (jr->t_ready < 0)
        jr->t_ready = t;
}

/* The pod slot a drover pod record stands for, or -1. */
static int32_t slot_of(drv_ctrl *c, const ctrl_event *e, const drv_kpod *p)
{
    const ctrl_mirror *m = &c->mirror;
    if (!p->job) /* another operator's pod */
        return ctrl_podgroup_slot(c, e);
    if (!e->job_key || e->job_key >= m->cap_by_key || m->job_of[e->job_key] < 0 || p->role < 0 ||
        p->replica < 0)
        return -1;
    return drv_job_pod(&m->st, m->job_of[e->job_key], p->role, p->replica);
}

/* Drover's own pods, and other operators' that name our scheduler (ctrl_podgroup.c). */
static bool ours(const drv_kpod *p, int32_t scheduler)
{
    return p->scheduler == scheduler;
}

/* Slot s's pod went away: the slot is free again (unless it waits to be created elsewhere). */
static void own_pod_gone(drv_ctrl *c, int32_t s, double t)
{
    ctrl_mirror *m = &c->mirror;
    pod_record *p = &m->pods[s];
    int32_t job = m->st.pods[s].job;
    ctrl_mirror_set_ghost(c, p, 0, (drv_res){0, 0, 0});
    p->exists = 0;
    p->delete_assumed = false;
    p->delete_tries = 0;
    p->api_node = -1;
    p->api_name = 0;
    p->ip_family = 0;
    p->phase = DRV_KPOD_PENDING;
    if (p->want < 0 && m->st.pods[s].node >= 0)
        drv_state_unbind(&m->st, s);
    /* A job that waited for this pod to go (to be placed again whole) is placeable now. */
    if (m->st.jobs[job].phase == DRV_JOB_PENDING)
        job_placeable(c, job, t);
}

/* Whether kp, a live pod of slot s on the state's node `node`, only confirms what the mirror
 * has or assumed: the pod as it is known (or the one being created there, whose answer, when
 * it succeeds, changes the record in the same way without a cycle), in the same phase, not
 * finished (its exit code matters only once it is), with the same restarts and address, bound
 * where the state has it. Such an event (the watch's echo of each pod Drover creates) calls
 * for no cycle: nothing a cycle reads changes. */
static bool confirms(const drv_ctrl *c, int32_t s, const drv_kpod *kp, int32_t node)
{
    const pod_record *p = &c->mirror.pods[s];
    bool known = p->exists == 1
                     ? p->api_node == node
                     : p->exists == 0 && p->inflight == REQ_CREATE && p->inflight_node == node;
    return known && node >= 0 && c->mirror.st.pods[s].node == node && p->want < 0 &&
           !kp->deleting && !ctrl_pod_terminal(kp->phase) && p->phase == kp->phase &&
           p->restarts == kp->restarts && p->ip_family == kp->ip_family &&
           !memcmp(p->ip, kp->ip, sizeof p->ip);
}

/* A pod of a known job changed (kp) or went away (kp NULL). */
static int own_pod(drv_ctrl *c, int32_t s, const drv_kpod *kp, double t)
{
    ctrl_mirror *m = &c->mirror;
    pod_record *p = &m->pods[s];
    const drv_pod *sp = &m->st.pods[s];
    int32_t node = kp && kp->node && kp->node < m->cap_by_key ? m->node_of[kp->node] : -1;
    if (!kp || !confirms(c, s, kp, node))
        m->dirty = true; /* (else only what it changes below may, a CPU limit) */
    if (!kp) {
        own_pod_gone(c, s, t);
        return 0;
    }
    if (kp->deleting) {
        /* Its phase says nothing of the job any more (kubelet may mark a pod it kills Failed),
         * and it holds its node's room until it is gone. */
        p->exists = 2;
        p->delete_assumed = false;
        /* (re-created in place, want == its node: the state's binding holds the room for the
         * new pod, so the old one is no ghost; ctrl_lifecycle.c) */
        bool in_place = p->want >= 0 && p->want == node;
        bool held = sp->node >= 0 && sp->node == node && (p->want < 0 || in_place);
        if (ctrl_pod_terminal(kp->phase) && held && !in_place)
            drv_state_unbind(&m->st, s);
        ctrl_mirror_set_ghost(c, p, held || ctrl_pod_terminal(kp->phase) ? 0 : kp->node, kp->req);
        return 0;
    }
    /* A finished pod holds no room (as kube-scheduler counts it), its ghost neither. */
    if (ctrl_pod_terminal(kp->phase))
        ctrl_mirror_set_ghost(c, p, 0, (drv_res){0, 0, 0});
    if (p->exists == 2) {
        /* Being deleted (its deletion sent, or seen): this event is older than that (a
         * deletionTimestamp, once set, stays), and the pod is not placed again from it. */
        p->phase = kp->phase;
        return 0;
    }
    p->exists = 1;
    p->phase = kp->phase;
    p->exit_code = kp->exit_code;
    p->restarts = kp->restarts;
    ctrl_resize_seen(c, s, kp);
    p->ip_family = kp->ip_family;
    memcpy(p->ip, kp->ip, sizeof p->ip);
    p->api_node = node;
    p->api_name = kp->node;
    if (kp->node && node < 0 && kp->phase != DRV_KPOD_FAILED) {
        /* Bound to a node not seen yet (the pod informer listed first): bound in the state
         * when the node shows up. */
        if (drv_grow(&m->orphans, sizeof *m->orphans, &m->cap_orphans, m->norphans + 1) != 0)
            return DRV_ENOMEM;
        m->orphans[m->norphans++] = (orphan_pod){s, kp->node};
        return 0;
    }
    /* A failed pod is restarted or fails its job (ctrl_lifecycle.c, after the next cycle): it
     * holds its slot till then, so that no cycle places it meanwhile. A succeeded one keeps
     * its slot, done: the gang stays whole and the pod is never placed again (a worker may
     * finish before its chief); its room is counted as held until the job ends. */
    if (m->st.jobs[sp->job].phase == DRV_JOB_DONE)
        return 0; /* (its pods are no longer the state's) */
    if (node >= 0 && sp->node != node && p->want < 0) {
        /* Bound where the state does not have it (adopted after a restart, or bound by someone
         * else): the API is the truth. */
        if (sp->node >= 0)
            drv_state_unbind(&m->st, s);
        drv_state_bind(&m->st, s, node);
    }
    return 0;
}

/* A drover pod of a job not known (yet): counted as foreign until its job shows up. */
static int park(drv_ctrl *c, int32_t key, const drv_kpod *cur)
{
    ctrl_mirror *m = &c->mirror;
    drv_kpod *pk = m->parked[key];
    if (pk) {
        foreign_add(c, pk, -1);
        drv_free(pk);
        m->parked[key] = NULL;
    }
    if (cur) {
        if (!(pk = drv_malloc(sizeof *pk)))
            return DRV_ENOMEM;
        *pk = *cur;
        m->parked[key] = pk;
        foreign_add(c, pk, +1);
    }
    return 0;
}

int ctrl_mirror_apply_pod(drv_ctrl *c, const ctrl_event *e)
{
    const drv_kpod *cur = e->type == DRV_WATCH_DELETED ? NULL : &e->cur.pod;
    const drv_kpod *old = e->has_old ? &e->old.pod : NULL;
    if (grow_by_key(c, e->key) != 0 || (e->job_key && grow_by_key(c, e->job_key) != 0))
        return DRV_ENOMEM;
    const drv_kpod *any = cur ? cur : old;
    if (!ours(any, c->names.scheduler)) {
        if (old)
            foreign_add(c, old, -1);
        if (cur)
            foreign_add(c, cur, +1);
        return 0;
    }
    int32_t s = slot_of(c, e, any);
    if (s < 0) {
        int rc = park(c, e->key, cur);
        return rc == 0 && !any->job ? ctrl_podgroup_pod(c, e) : rc;
    }
    return own_pod(c, s, cur, e->t);
}

/* Its pods seen before it (named as the controller names them): adopted. O(slots). */
static int adopt_parked(drv_ctrl *c, int32_t j, const tj_record *t, const char *ns, double now)
{
    ctrl_mirror *m = &c->mirror;
    const drv_job *jb = &m->st.jobs[j];
    for (int32_t k = 0; k < jb->pod_count; k++) {
        int32_t s = jb->pod_base + k;
        char pod[600], pod_key[900];
        ctrl_pod_name(c, s, pod, sizeof pod);
        snprintf(pod_key, sizeof pod_key, "%s/%s", ns, pod);
        int32_t id = ctrl_name_find(c, pod_key);
        drv_kpod *pk = id > 0 && id < m->cap_by_key ? m->parked[id] : NULL;
        if (!pk || pk->ns != t->tj.ns || pk->job != t->tj.name)
            continue;
        foreign_add(c, pk, -1);
        int rc = 0;
        if (pk->role == m->st.pods[s].role && pk->replica == m->st.pods[s].index)
            rc = own_pod(c, s, pk, now);
        drv_free(pk);
        m->parked[id] = NULL;
        if (rc)
            return rc;
    }
    return 0;
}

int ctrl_mirror_adopt(drv_ctrl *c, int32_t slot, int32_t pod_key, double now)
{
    ctrl_mirror *m = &c->mirror;
    drv_kpod *pk = pod_key > 0 && pod_key < m->cap_by_key ? m->parked[pod_key] : NULL;
    if (!pk)
        return 0;
    foreign_add(c, pk, -1);
    m->parked[pod_key] = NULL;
    int rc = own_pod(c, slot, pk, now);
    drv_free(pk);
    return rc;
}

int ctrl_mirror_constraint(drv_ctrl *c, int32_t json, const char *who, const char *path,
                           int32_t *id, drv_diag *d)
{
    ctrl_mirror *m = &c->mirror;
    *id = 0;
    if (json <= 0)
        return 0;
    if (grow_by_key(c, json) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    if (m->cons_of[json] >= 0) {
        *id = m->cons_of[json];
        return 0;
    }
    char *text = ctrl_name_dup(c, json);
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    drv_free(text);
    if (!o)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    drv_constraint k;
    int rc = drv_kube_decode_constraint(o, m->st.names, who, path, &k, d);
    json_decref(o);
    if (rc)
        return rc;
    rc = drv_state_add_constraint(&m->st, &k, NULL, id);
    drv_constraint_fini(&k);
    if (rc)
        return drv_fail(d, rc, "%s: %s: node constraints refused by the core", who, path);
    m->cons_of[json] = *id;
    return 0;
}

/* The constraints of t's role templates into tmpl (validated by the decoder already). */
static int job_constraints(drv_ctrl *c, const tj_record *t, const char *key, drv_job *tmpl)
{
    for (int r = 0; r < DRV_NROLES; r++) {
        drv_diag d = {{0}};
        int rc =
            ctrl_mirror_constraint(c, t->tj.cons[r], key, drv_role_name(r), &tmpl->cons[r], &d);
        if (rc == DRV_ENOMEM)
            return rc;
        if (rc)
            drv_log(DRV_LOG_ERROR, "trainingjob %s: constraints ignored: %s", key, d.msg);
    }
    return 0;
}

/* The job record of the state's new job j, taking over t's templates. */
static void job_record_init(drv_ctrl *c, int32_t j, const ctrl_event *e, tj_record *t)
{
    job_record *jr = &c->mirror.jobs[j];
    memset(jr, 0, sizeof *jr);
    jr->key = e->key;
    jr->ns = t->tj.ns;
    jr->name = t->tj.name;
    snprintf(jr->uid, sizeof jr->uid, "%s", t->uid);
    for (int r = 0; r < DRV_NROLES; r++) {
        jr->tmpl[r] = t->tmpl[r];
        t->tmpl[r] = NULL; /* taken over */
    }
    jr->t_ready = e->t;
    jr->node_name = t->node_name;
    jr->status = ST_PENDING;
    jr->port = t->tj.progress_port;
    snprintf(jr->path, sizeof jr->path, "%s", t->tj.progress_path);
    snprintf(jr->step, sizeof jr->step, "%s", t->tj.step_metric);
    snprintf(jr->loss, sizeof jr->loss, "%s", t->tj.loss_metric);
}

static int add_job(drv_ctrl *c, ctrl_event *e)
{
    ctrl_mirror *m = &c->mirror;
    tj_record *t = e->tj;
    if (t->finished || (t->tj.scheduler && t->tj.scheduler != c->names.scheduler))
        return 0;
    char ns[256], name[256], key[520];
    ctrl_name_str(c, t->tj.ns, ns, sizeof ns);
    ctrl_name_str(c, t->tj.name, name, sizeof name);
    if (c->ns[0] && strcmp(ns, c->ns) != 0)
        return 0;
    drv_job tmpl;
    memset(&tmpl, 0, sizeof tmpl);
    snprintf(key, sizeof key, "%s/%s", ns, name);
    int32_t name_id = drv_strtab_intern(m->st.names, key);
    if (name_id < 0)
        return DRV_ENOMEM;
    tmpl.name = name_id;
    tmpl.model = -1;
    tmpl.submit = e->t - c->loop.t0;
    tmpl.phase = DRV_JOB_PENDING;
    tmpl.steps_total = t->tj.total_steps;
    int32_t wanted = 0;
    for (int r = 0; r < DRV_NROLES; r++) {
        tmpl.role[r] = t->tj.role[r];
        wanted += t->tj.role[r].replicas;
    }
    if (wanted == 0)
        return 0;
    char why[400], reason[48];
    if (!ctrl_shared_resolve(c, t, &tmpl, why, sizeof why, reason, sizeof reason))
        return ctrl_shared_hold(c, e, why, reason); /* (its queue or priority class missing) */
    int rc = job_constraints(c, t, key, &tmpl);
    if (rc != 0)
        return rc;
    int32_t j;
    rc = drv_state_add_job(&m->st, &tmpl, &j);
    if (rc != 0)
        return rc;
    ctrl_shared_unhold(c, e->key);
    if ((rc = ctrl_mirror_grow_records(c)) != 0)
        return rc;
    job_record_init(c, j, e, t);
    ctrl_lifecycle_init(c, j, t);
    m->jobs[j].spec_workers = t->tj.role[DRV_ROLE_WORKER].replicas;
    const drv_job *jb = &m->st.jobs[j];
    for (int32_t k = 0; k < jb->pod_count; k++)
        m->pods[jb->pod_base + k] =
            (pod_record){.phase = DRV_KPOD_PENDING, .api_node = -1, .want = -1};
    m->job_of[e->key] = j;
    ctrl_count(c, &c->counters.stats.jobs, 1);
    if ((rc = adopt_parked(c, j, t, ns, e->t)) != 0)
        return rc;
    if (t->tj.suspend)
        ctrl_lifecycle_suspend(c, j);
    m->dirty = true;
    return 0;
}

/* Known job j's spec was edited: suspended, resumed, or its replicas or run policy changed. */
static int edit_job(drv_ctrl *c, int32_t j, ctrl_event *e)
{
    ctrl_mirror *m = &c->mirror;
    if (e->tj->invalid[0]) {
        drv_log(DRV_LOG_WARN, "edit not followed: %s", e->tj->invalid);
        return 0;
    }
    if (e->tj->tj.suspend && !m->jobs[j].suspended) {
        m->jobs[j].policy.suspend = true;
        ctrl_lifecycle_suspend(c, j);
        return 0;
    }
    if (!e->tj->tj.suspend && m->jobs[j].suspended) {
        /* Resumed: queued again as a new job of the state, its conditions carried on. */
        job_record old = m->jobs[j];
        m->jobs[j].gone = true;
        m->job_of[e->key] = -1;
        int rc = add_job(c, e);
        int32_t j2 = m->job_of[e->key];
        if (rc == 0 && j2 >= 0)
            ctrl_lifecycle_resumed(c, j2, &old);
        return rc;
    }
    return ctrl_lifecycle_edit(c, j, e->tj);
}

/* A TrainingJob whose spec is invalid: failed with the reason, when it is ours. */
static int invalid_job(drv_ctrl *c, const ctrl_event *e)
{
    const tj_record *t = e->tj;
    char ns[256];
    ctrl_name_str(c, t->tj.ns, ns, sizeof ns);
    if (!t->finished && (!t->tj.scheduler || t->tj.scheduler == c->names.scheduler) &&
        (!c->ns[0] || !strcmp(ns, c->ns)))
        ctrl_lifecycle_invalid(c, e);
    return 0;
}

int ctrl_mirror_add_held(drv_ctrl *c, ctrl_event *e)
{
    return add_job(c, e);
}

int ctrl_mirror_apply_trainingjob(drv_ctrl *c, ctrl_event *e)
{
    ctrl_mirror *m = &c->mirror;
    if (grow_by_key(c, e->key) != 0)
        return DRV_ENOMEM;
    if (e->type == DRV_WATCH_DELETED || e->tj->invalid[0])
        ctrl_shared_unhold(c, e->key); /* (a held one: gone, or failed below) */
    if (e->type != DRV_WATCH_DELETED)  /* (its status writes computed before: ctrl_writer.c) */
        ctrl_writer_seen(c, e->key, e->tj->tj.rv, e->tj->finished);
    int32_t j = m->job_of[e->key];
    if (j >= 0 && e->type != DRV_WATCH_DELETED && strcmp(m->jobs[j].uid, e->tj->uid) != 0) {
        /* Deleted and created again under the same name (its deletion not seen, or seen and
         * done): the old job is over, without touching pods, which may be the new one's. */
        const drv_job *jb = &m->st.jobs[j];
        if (jb->phase != DRV_JOB_DONE) {
            for (int32_t k = 0; k < jb->pod_count; k++)
                if (m->st.pods[jb->pod_base + k].node >= 0)
                    drv_state_unbind(&m->st, jb->pod_base + k);
            drv_state_set_phase(&m->st, j, DRV_JOB_DONE);
            ctrl_count(c, &c->counters.stats.jobs_done, 1);
        }
        m->jobs[j].gone = true;
        m->job_of[e->key] = -1;
        return e->tj->invalid[0] ? invalid_job(c, e) : add_job(c, e);
    }
    if (e->type == DRV_WATCH_DELETED) {
        if (j >= 0) {
            m->jobs[j].gone = true;
            if (m->jobs[j].status < ST_SUCCEEDED)
                m->jobs[j].status = ST_FAILED;
            m->dirty = true;
        }
        return 0;
    }
    if (j < 0 && e->tj->invalid[0])
        return invalid_job(c, e);
    if (j < 0)
        return add_job(c, e);
    snprintf(m->jobs[j].rv, sizeof m->jobs[j].rv, "%s", e->tj->tj.rv); /* (its next status's) */
    /* A status written by someone else as finished ends it, as that status says. */
    if (e->tj->finished && m->jobs[j].status < ST_SUCCEEDED) {
        ctrl_lifecycle_finished_by_status(c, j, e->tj);
        m->dirty = true;
        return 0;
    }
    return edit_job(c, j, e);
}

/* A progress sample scraped from a running job's chief. */
int ctrl_mirror_apply_progress(drv_ctrl *c, const ctrl_event *e)
{
    ctrl_mirror *m = &c->mirror;
    int32_t j = e->key < m->cap_by_key ? m->job_of[e->key] : -1;
    if (j < 0 || m->st.jobs[j].phase != DRV_JOB_RUNNING)
        return 0;
    drv_job *jb = &m->st.jobs[j];
    double loss = isnan(e->u.progress.loss) ? jb->loss : e->u.progress.loss;
    if (drv_job_add_sample(jb, (drv_sample){e->t - c->loop.t0, e->u.progress.step, loss}) != 0)
        return DRV_ENOMEM;
    jb->steps = e->u.progress.step;
    jb->loss = loss;
    if (jb->loss0 == 0)
        jb->loss0 = loss;
    pthread_mutex_lock(&c->counters.mu);
    c->counters.stats.samples++;
    c->counters.stats.last_step = jb->steps;
    c->counters.stats.last_loss = loss;
    pthread_mutex_unlock(&c->counters.mu);
    return 0;
}

void ctrl_mirror_fini(drv_ctrl *c)
{
    ctrl_mirror *m = &c->mirror;
    for (int32_t j = 0; j < m->st.njobs && m->jobs; j++) {
        for (int r = 0; r < DRV_NROLES; r++)
            drv_free(m->jobs[j].tmpl[r]);
        drv_free(m->jobs[j].members);
    }
    ctrl_podgroup_fini(c);
    drv_free(m->jobs);
    drv_free(m->pods);
    drv_free(m->allocatable);
    drv_free(m->foreign);
    drv_free(m->orphans);
    drv_free(m->usable);
    drv_free(m->meta);
    for (int32_t i = 0; i < m->cap_by_key; i++)
        drv_free(m->parked[i]);
    drv_free(m->parked);
    drv_free(m->job_of);
    drv_free(m->node_of);
    drv_free(m->cons_of);
    drv_state_fini(&m->st);
}
