/*
 * ctrl_mirror.c - `drover run`'s mirror: applies the informers' events about nodes and pods
 * (and the progress collector's samples) to the scheduler thread's drv_state, so that a cycle
 * sees the cluster as the API has it; and keeps the job and pod records beside it
 * (ctrl_mirror.h).
 *
 * Owns: the state, the job and pod records, the tables by interned key; on the scheduler
 * thread only, without a lock. Touches: names (ctrl_name_*), counters.
 *
 * What the core sees:
 *   a node      its allocatable minus the requests of pods Drover does not schedule (other
 *               schedulers' pods, DaemonSets) bound there and not finished: "foreign" load;
 *   a job       one drv_job per TrainingJob of our schedulerName (and namespace), its pods the
 *               job's slots (ctrl_trainingjob.c adds it), or per gang of another operator's
 *               pods (ctrl_podgroup.c); a drover pod is its job's only when the job is its
 *               controller (ownerReference uid: claim); one seen before its job, or not its
 *               job's, is "parked" as foreign load (and adopted when its job shows up), one
 *               bound to a node not seen yet is an orphan bound when the node shows up;
 *   a pod       where the API has it bound is the truth (adopted after a restart), except a
 *               pod being deleted, which holds its node's room until gone (its "ghost").
 * Example: node n1 allocates 8 CPUs and runs a DaemonSet pod asking 1: the state has n1 with 7.
 *
 * Into the core: an event is described as a record of what the API said, then pushed in one
 * call that makes the whole change (src/core/state_apply.c): drv_state_apply_node for a node
 * (its labels read by the core from their text; whether it lacks a topology level's label),
 * drv_state_apply_pod for a pod (the foreign load it moves, its ghost's queue hold, its CPU
 * limit and placement, gathered while it is claimed), drv_state_end_job. The mirror's own
 * calls that change a pod (a ghost, an adoption, a CPU limit back, a placement) apply one
 * record each, all through apply(). A job is added whole by ctrl_mirror_job.c.
 */
#include "ctrl_mirror.h"
#include "ctrl_writer.h"
#include "peers.h"

#include "drover/clock.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const ctrl_status_name[] = {"", "Pending", "Running", "Succeeded", "Failed"};

int ctrl_mirror_init(ctrl_mirror *m, ctrl_names *names, ctrl_counters *counters,
                     const ctrl_config *cfg)
{
    m->names = names;
    m->counters = counters;
    m->cfg = cfg;
    if (drv_state_init(&m->st) != 0)
        return DRV_ENOMEM;
    /* GPU types: the label's key interned first (configure: cfg is filled before the units) */
    if (drv_state_set_gpu_type_label(&m->st, cfg->gpu_type_label) != 0)
        return DRV_ENOMEM;
    char buf[sizeof cfg->topology];
    const char *keys[DRV_MAX_TOPO], *why = "";
    int32_t n = drv_topology_split(cfg->topology, buf, sizeof buf, keys, &why);
    return n < 0 ? DRV_EINVAL : drv_state_set_topology(&m->st, keys, n, &why);
}

bool ctrl_pod_terminal(int phase)
{
    return phase == DRV_KPOD_SUCCEEDED || phase == DRV_KPOD_FAILED;
}

/* Makes the tables by interned key hold id. */
static int grow_by_key(ctrl_mirror *m, int32_t id)
{
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
        m->parked[i] = (parked_pod){0};
        m->foreign[i] = (drv_res){0, 0, 0};
    }
    m->cap_by_key = cap;
    return 0;
}

int ctrl_mirror_grow_by_key(ctrl_mirror *m, int32_t id)
{
    return grow_by_key(m, id);
}

int ctrl_mirror_grow_records(ctrl_mirror *m)
{
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

/* ---- pod records into the state ------------------------------------------------------------ */

/* A pod record for the core about slot pod (-1: none), nothing in it yet. */
static drv_pod_desc pod_desc(int32_t pod)
{
    return (drv_pod_desc){.pod = pod, .node = -1};
}

/* d's pod placed at node (-1: unbound) when d is applied. */
static void place(drv_pod_desc *d, int32_t node)
{
    d->place = true;
    d->node = node;
}

/* The one way the mirror changes a pod in the state: a record, applied whole. */
static void apply(ctrl_mirror *m, const drv_pod_desc *d)
{
    drv_state_apply_pod(&m->st, d);
}

void ctrl_mirror_place(ctrl_mirror *m, int32_t s, int32_t node)
{
    drv_pod_desc d = pod_desc(s);
    place(&d, node);
    apply(m, &d);
}

void ctrl_mirror_set_cpu_limit(ctrl_mirror *m, int32_t s, int64_t cpu_limit)
{
    drv_pod_desc d = pod_desc(s);
    d.set_cpu_limit = true;
    d.cpu_limit = cpu_limit;
    apply(m, &d);
}

/* ---- foreign load and ghosts ---------------------------------------------------------------- */

/* Room in d for one more load or hold (state.h's bound, asserted): past it, a release build
 * applies the loads and holds so far, in order, rather than write past the arrays. */
static void desc_room(ctrl_mirror *m, drv_pod_desc *d)
{
    assert(d->nloads < DRV_POD_LOADS && d->nholds < DRV_POD_HOLDS);
    if (d->nloads < DRV_POD_LOADS && d->nholds < DRV_POD_HOLDS)
        return;
    drv_pod_desc part = *d; /* (they commute with the limit and placement applied at the end) */
    part.pod = -1;
    apply(m, &part);
    d->nloads = d->nholds = 0;
}

/* What a pod Drover does not schedule takes from its node: its request while it is bound and
 * not finished, into d (the load held at node name, m->foreign). */
static void foreign_res(ctrl_mirror *m, drv_pod_desc *d, int32_t name, drv_res req, int sign)
{
    if (!name || name >= m->cap_by_key) /* (names of events: held, ctrl_apply_events) */
        return;
    int32_t n = m->node_of[name];
    desc_room(m, d);
    d->load[d->nloads++] = (drv_pod_load){.held = &m->foreign[name],
                                          .req = req,
                                          .sign = (int8_t)sign,
                                          .node = n,
                                          .allocatable = n >= 0 ? m->allocatable[n] : (drv_res){0},
                                          .usable = n >= 0 && m->usable[n]};
    if (n >= 0)
        m->dirty = true;
}

/* A pod Drover does not schedule, added (sign > 0) to or taken off its node's foreign load. */
static void foreign_add(ctrl_mirror *m, drv_pod_desc *d, const drv_kpod *p, int sign)
{
    if (!ctrl_pod_terminal(p->phase))
        foreign_res(m, d, p->node, p->req, sign);
}

/* (Like kube-scheduler, which counts terminating pods; when the state no longer has the pod
 * there, evicted, migrated or its job over, its room is counted as foreign and its request as
 * its queue's use meanwhile, as Kueue keeps a workload admitted until its pods are gone.) */
static void ghost(ctrl_mirror *m, drv_pod_desc *d, pod_record *p, int32_t name, drv_res req)
{
    if (p->ghost == name && !memcmp(&p->ghost_req, &req, sizeof req))
        return;
    if (p->ghost)
        foreign_res(m, d, p->ghost, p->ghost_req, -1);
    if (p->ghost_queue >= 0) {
        desc_room(m, d);
        d->hold[d->nholds++] = (drv_queue_hold){p->ghost_queue, p->ghost_req, -1};
        m->dirty = true;
    }
    p->ghost = name;
    p->ghost_req = req;
    p->ghost_queue = -1;
    if (!name)
        return;
    foreign_res(m, d, name, req, +1);
    if (m->st.nqueues > 0) {
        p->ghost_queue = m->st.jobs[m->st.pods[p - m->pods].job].queue;
        desc_room(m, d);
        d->hold[d->nholds++] = (drv_queue_hold){p->ghost_queue, req, +1};
    }
}

void ctrl_mirror_set_ghost(ctrl_mirror *m, pod_record *p, int32_t name, drv_res req)
{
    drv_pod_desc d = pod_desc(-1);
    ghost(m, &d, p, name, req);
    apply(m, &d);
}

/* Mirrored as its watch event would be, which may not come again if it was applied already. */
int32_t ctrl_mirror_pod_read(ctrl_mirror *m, int32_t slot, int32_t node_name)
{
    pod_record *p = &m->pods[slot];
    const drv_pod *sp = &m->st.pods[slot];
    int32_t node = node_name && node_name < m->cap_by_key ? m->node_of[node_name] : -1;
    if (p->presence == POD_ABSENT)
        p->presence = POD_PRESENT;
    p->api_name = node_name;
    p->api_node = node;
    m->dirty = true;
    if (node < 0 || p->want >= 0 || p->phase == DRV_KPOD_FAILED ||
        m->st.jobs[sp->job].phase == DRV_JOB_DONE)
        return -1;
    return node;
}

/* ---- nodes ---------------------------------------------------------------------------------- */

/* The pods bound in the API to node name that were seen before it (orphans), to be placed
 * there: their slots into m->adopt, the others kept as orphans. Returns how many. */
static int32_t take_orphans(ctrl_mirror *m, int32_t name)
{
    int32_t k = 0, n = 0;
    for (int32_t i = 0; i < m->norphans; i++) {
        const orphan_pod *o = &m->orphans[i];
        if (o->node != name) {
            m->orphans[k++] = *o;
            continue;
        }
        const pod_record *p = &m->pods[o->slot];
        const drv_pod *sp = &m->st.pods[o->slot];
        if (p->presence != POD_ABSENT && p->api_name == name && p->phase != DRV_KPOD_FAILED &&
            sp->node < 0 && m->st.jobs[sp->job].phase != DRV_JOB_DONE)
            m->adopt[n++] = o->slot;
    }
    m->norphans = k;
    return n;
}

/* Room in the per-node records for one node more. */
static int grow_nodes(ctrl_mirror *m)
{
    int32_t want = m->st.nnodes + 1, old = m->cap_nodes, cap = old, cap2 = old, cap3 = old;
    int32_t cap4 = old, cap5 = old;
    if (drv_grow(&m->allocatable, sizeof *m->allocatable, &cap, want) != 0 ||
        drv_grow(&m->usable, sizeof *m->usable, &cap2, want) != 0 ||
        drv_grow(&m->meta, sizeof *m->meta, &cap3, want) != 0 ||
        drv_grow(&m->node_key, sizeof *m->node_key, &cap4, want) != 0 ||
        drv_grow(&m->topo_told, sizeof *m->topo_told, &cap5, want) != 0)
        return DRV_ENOMEM;
    memset(m->topo_told + old, 0, sizeof *m->topo_told * (size_t)(cap5 - old));
    m->cap_nodes = cap;
    return 0;
}

/*
 * A Node event as one record for the core (drv_state_apply_node): a node seen for the first
 * time is added with its names and the pods bound to it before it was seen (orphans); its
 * labels and taints, as their interned text, when they changed; its room, allocatable minus
 * the foreign load. Every name is an id of the shared table, read by the core under its lock.
 */
static int describe_node(ctrl_mirror *m, const ctrl_event *e, int32_t id, drv_node_desc *d)
{
    const drv_knode *kn = e->type == DRV_WATCH_DELETED ? &e->old.node : &e->cur.node;
    /* A NoSchedule taint keeps away only the pods that do not tolerate it (the core's filter),
     * but the node lifecycle's not-ready taint means the node is not used at all, as when its
     * Ready condition is not True (a toleration of it is not honoured: Drover waits). */
    *d = (drv_node_desc){
        .names = m->names->tab,
        .name = kn->name,
        .zone = kn->zone,
        .rack = kn->rack,
        .allocatable = kn->alloc,
        .held = m->foreign[kn->name],
        .usable = e->type != DRV_WATCH_DELETED && kn->ready && !kn->unschedulable && !kn->not_ready,
        .bind = m->adopt,
    };
    if (id < 0) {
        if (grow_nodes(m) != 0)
            return DRV_ENOMEM;
        d->nbind = take_orphans(m, kn->name);
    }
    /* A node deleted keeps its slot, cordoned with nothing allocatable; its pods are deleted by
     * the cluster and leave through their own events. Zone and rack do not move once seen;
     * the other labels and the taints are followed (pods bound stay, as under kube-scheduler:
     * IgnoredDuringExecution). */
    d->set_meta = e->type != DRV_WATCH_DELETED && (id < 0 ? 0 : m->meta[id]) != kn->meta;
    d->meta = kn->meta;
    return 0;
}

int ctrl_mirror_apply_node(ctrl_mirror *m, const ctrl_event *e)
{
    const drv_knode *kn = e->type == DRV_WATCH_DELETED ? &e->old.node : &e->cur.node;
    int32_t id = m->node_of[kn->name], was = id; /* (its key held: ctrl_apply_events) */
    if (id < 0 && e->type == DRV_WATCH_DELETED)
        return 0;
    drv_node_desc d;
    bool gap = false;
    int rc = describe_node(m, e, id, &d);
    if (rc == 0) {
        ctrl_names_lock(m->names); /* (its names and meta text are read from the table) */
        rc = drv_state_apply_node(&m->st, &d, &id, &gap);
        ctrl_names_unlock(m->names);
    }
    if (was < 0 && id >= 0) { /* (added, even when its labels then failed) */
        m->node_key[id] = kn->name;
        m->node_of[kn->name] = id;
        m->meta[id] = 0;
        for (int32_t i = 0; i < d.nbind; i++)
            m->pods[d.bind[i]].api_node = id;
    }
    if (rc == 0 && e->type != DRV_WATCH_DELETED)
        rc = ctrl_mirror_topology_gap(m, id, gap);
    if (rc != 0)
        return rc;
    if (e->type != DRV_WATCH_DELETED) /* (labels refused too: not tried again till changed) */
        m->meta[id] = kn->meta;
    m->allocatable[id] = kn->alloc;
    m->usable[id] = d.usable;
    m->dirty = true;
    return 0;
}

/* ---- pods ----------------------------------------------------------------------------------- */

static void job_placeable(ctrl_mirror *m, int32_t j, double t)
{
    job_record *jr = &m->jobs[j];
    if (jr->t_ready < 0)
        jr->t_ready = t;
}

/* Slot of pod key in the job of gang key (another operator's pods), or -1. */
static int32_t member_slot(const ctrl_mirror *m, int32_t gang, int32_t key)
{
    int32_t j = gang > 0 && gang < m->cap_by_key ? m->job_of[gang] : -1;
    if (j < 0 || !m->jobs[j].members)
        return -1;
    for (int32_t k = 0; k < m->st.jobs[j].pod_count; k++)
        if (m->jobs[j].members[k] == key)
            return m->st.jobs[j].pod_base + k;
    return -1;
}

/* Who a pod event is about, decided once (claim). */
typedef enum pod_claim {
    CLAIM_FOREIGN, /* another scheduler's pod: its node's foreign load */
    CLAIM_PARKED,  /* ours by its labels, of no job known, or a job's that does not control it:
                      foreign load by its key until a job claims it (park) */
    CLAIM_SLOT     /* a pod slot of the state's */
} pod_claim;

/*
 * What pod p of event e is, and its slot (CLAIM_SLOT). Another operator's pod is a member of
 * its gang's job or (it came after its gang was admitted) of its own gang of one. A pod with
 * Drover's labels is a TrainingJob's only when that job controls it: its controller
 * ownerReference names the job's uid, as Kubeflow's and client-go's ControllerRef adopt. A
 * pod with the labels and another controller, or the uid of a deleted job of the same name, is
 * not the job's (issue 26: anyone who may create a pod in the namespace could otherwise stand in
 * for a job's worker): it stays parked, as foreign load.
 */
static pod_claim claim(const ctrl_mirror *m, const ctrl_event *e, const drv_kpod *p, int32_t *slot)
{
    *slot = -1;
    if (p->scheduler != m->names->scheduler)
        return CLAIM_FOREIGN;
    if (!p->job) { /* another operator's pod */
        *slot = member_slot(m, e->job_key, e->key);
        if (*slot < 0 && p->group)
            *slot = member_slot(m, e->lone_key, e->key);
    } else {
        int32_t j = e->job_key && e->job_key < m->cap_by_key ? m->job_of[e->job_key] : -1;
        if (j >= 0 && p->role >= 0 && p->replica >= 0 && p->owner == m->jobs[j].uid_id)
            *slot = drv_job_pod(&m->st, j, p->role, p->replica);
    }
    return *slot >= 0 ? CLAIM_SLOT : CLAIM_PARKED;
}

/* Slot s's pod went away: the slot is free again (unless it waits to be created elsewhere). */
static void own_pod_gone(ctrl_mirror *m, drv_pod_desc *d, int32_t s, double t)
{
    pod_record *p = &m->pods[s];
    int32_t job = m->st.pods[s].job;
    ghost(m, d, p, 0, (drv_res){0, 0, 0});
    p->presence = POD_ABSENT;
    p->delete_assumed = false;
    p->delete_tries = 0;
    p->api_node = -1;
    p->api_name = 0;
    p->ip_family = 0;
    p->phase = DRV_KPOD_PENDING;
    if (p->want < 0)
        place(d, -1);
    /* A job that waited for this pod to go (to be placed again whole) is placeable now. */
    if (m->st.jobs[job].phase == DRV_JOB_PENDING)
        job_placeable(m, job, t);
}

/* Whether the pod event of slot s, its pod on the state's node `node` (-1: unbound), echoes
 * what the controller sent in the state it expects at that step:
 * - bound where the mirror has it, or where a creation still out puts it (whose answer, when
 *   it succeeds, changes the record in the same way without a cycle);
 * - bound where a binding still out puts it (the binding's echo, before its answer);
 * - --bind-mode=binding: unbound, created for the node the state placed it on (p->want) with
 *   its creation still out, or with its creation answered and its binding there still out.
 * Anything else (unbound elsewhere, bound where nothing sent it) is a change. */
static bool echoes(const ctrl_mirror *m, int32_t s, const drv_kpod *kp, int32_t node)
{
    const pod_record *p = &m->pods[s];
    int32_t at = m->st.pods[s].node;
    bool creating = p->presence == POD_ABSENT && p->inflight == REQ_CREATE;
    bool binding = p->presence == POD_PRESENT && p->inflight == REQ_BIND && p->api_node < 0;
    if (at < 0)
        return false;
    if (node >= 0)
        return at == node && p->want < 0 &&
               (p->presence == POD_PRESENT
                    ? p->api_node == node || (binding && p->inflight_node == node)
                    : creating && p->inflight_node == node);
    if (kp->node) /* (bound to a node the mirror does not know) */
        return false;
    return (creating && p->inflight_node < 0 && p->want == at) ||
           (binding && p->inflight_node == at && p->want < 0);
}

/* Whether kp, a live pod of slot s on the state's node `node`, only confirms what the mirror
 * has or assumed: an echo of what was sent (echoes), in the same phase, not finished (its exit
 * code matters only once it is), with the same restarts and address. Such an event (the
 * watch's echo of each pod Drover creates or binds) calls for no cycle: nothing a cycle reads
 * changes. */
static bool confirms(const ctrl_mirror *m, int32_t s, const drv_kpod *kp, int32_t node)
{
    const pod_record *p = &m->pods[s];
    return echoes(m, s, kp, node) && !kp->deleting && !ctrl_pod_terminal(kp->phase) &&
           p->phase == kp->phase && p->restarts == kp->restarts && p->ip_family == kp->ip_family &&
           !memcmp(p->ip, kp->ip, sizeof p->ip);
}

int64_t ctrl_mirror_api_cpu_limit(const ctrl_mirror *m, int32_t s)
{
    const drv_pod *p = &m->st.pods[s];
    const drv_rolespec *r = &m->st.jobs[p->job].role[p->role];
    if (m->pods[s].api_cpu_limit > 0)
        return m->pods[s].api_cpu_limit;
    return r->cpu_limit ? r->cpu_limit : r->req.cpu;
}

/* Slot's CPU limit back to the API's, into d (d's pod). */
static void cpu_limit_back(ctrl_mirror *m, drv_pod_desc *d, int32_t slot)
{
    int64_t lim = ctrl_mirror_api_cpu_limit(m, slot);
    if (m->st.pods[slot].cpu_limit != lim) {
        d->set_cpu_limit = true;
        d->cpu_limit = lim;
        m->dirty = true;
    }
}

void ctrl_mirror_cpu_limit_back(ctrl_mirror *m, int32_t slot)
{
    drv_pod_desc d = pod_desc(slot);
    cpu_limit_back(m, &d, slot);
    apply(m, &d);
}

/* Slot's pod kp says its CPU limit: followed, into d, unless a resize of it is out. */
static void cpu_limit_seen(ctrl_mirror *m, drv_pod_desc *d, int32_t slot, const drv_kpod *kp)
{
    pod_record *p = &m->pods[slot];
    p->api_cpu_limit = kp->cpu_limit;
    if (p->inflight != REQ_RESIZE) /* (else the assumption stands until its answer) */
        cpu_limit_back(m, d, slot);
}

void ctrl_mirror_cpu_limit_seen(ctrl_mirror *m, int32_t slot, const drv_kpod *kp)
{
    drv_pod_desc d = pod_desc(slot);
    cpu_limit_seen(m, &d, slot, kp);
    apply(m, &d);
}

/* Slot s's pod kp is being deleted: its phase says nothing of the job any more (kubelet may
 * mark a pod it kills Failed), and it holds its node's room until it is gone. */
static void own_pod_deleting(ctrl_mirror *m, drv_pod_desc *d, int32_t s, const drv_kpod *kp,
                             int32_t node)
{
    pod_record *p = &m->pods[s];
    const drv_pod *sp = &m->st.pods[s];
    p->presence = POD_DELETING;
    p->delete_assumed = false;
    /* (re-created in place, want == its node: the state's binding holds the room for the new
     * pod, so the old one is no ghost; ctrl_lifecycle.c) */
    bool in_place = p->want >= 0 && p->want == node;
    bool held = sp->node >= 0 && sp->node == node && (p->want < 0 || in_place);
    if (ctrl_pod_terminal(kp->phase) && held && !in_place)
        place(d, -1);
    ghost(m, d, p, held || ctrl_pod_terminal(kp->phase) ? 0 : kp->node, kp->req);
}

/* A pod of a known job changed (kp) or went away (kp NULL): what it changes in the state into
 * d (slot s's). */
static int own_pod(ctrl_mirror *m, drv_pod_desc *d, int32_t s, const drv_kpod *kp, double t)
{
    pod_record *p = &m->pods[s];
    const drv_pod *sp = &m->st.pods[s];
    int32_t node = kp && kp->node && kp->node < m->cap_by_key ? m->node_of[kp->node] : -1;
    if (!kp || !confirms(m, s, kp, node))
        m->dirty = true; /* (else only what it changes below may, a CPU limit) */
    if (!kp) {
        own_pod_gone(m, d, s, t);
        return 0;
    }
    if (kp->deleting) {
        own_pod_deleting(m, d, s, kp, node);
        return 0;
    }
    /* A finished pod holds no room (as kube-scheduler counts it), its ghost neither. */
    if (ctrl_pod_terminal(kp->phase))
        ghost(m, d, p, 0, (drv_res){0, 0, 0});
    if (p->presence == POD_DELETING) {
        /* Being deleted (its deletion sent, or seen): this event is older than that (a
         * deletionTimestamp, once set, stays), and the pod is not placed again from it. */
        p->phase = kp->phase;
        return 0;
    }
    p->presence = POD_PRESENT;
    p->phase = kp->phase;
    p->exit_code = kp->exit_code;
    p->restarts = kp->restarts;
    cpu_limit_seen(m, d, s, kp);
    p->ip_family = kp->ip_family;
    memcpy(p->ip, kp->ip, sizeof p->ip);
    p->api_node = node;
    p->api_name = kp->node;
    if (kp->node && node < 0 && kp->phase != DRV_KPOD_FAILED) {
        /* Bound to a node not seen yet (the pod informer listed first): bound in the state
         * when the node shows up. */
        int32_t cap = m->cap_orphans;
        if (drv_grow(&m->orphans, sizeof *m->orphans, &m->cap_orphans, m->norphans + 1) != 0 ||
            drv_grow(&m->adopt, sizeof *m->adopt, &cap, m->cap_orphans) != 0)
            return DRV_ENOMEM;
        m->orphans[m->norphans++] = (orphan_pod){.slot = s, .node = kp->node};
        return 0;
    }
    /* A failed pod is restarted or fails its job (ctrl_lifecycle.c, after the next cycle): it
     * holds its slot till then, so that no cycle places it meanwhile. A succeeded one keeps
     * its slot, done: the gang stays whole and the pod is never placed again (a worker may
     * finish before its chief); its room is counted as held until the job ends. */
    if (m->st.jobs[sp->job].phase == DRV_JOB_DONE)
        return 0;                 /* (its pods are no longer the state's) */
    if (node >= 0 && p->want < 0) /* (bound where the state does not have it: adopted after a
                                     restart, or bound by someone else: the API is the truth) */
        place(d, node);
    return 0;
}

/* The pod parked under key, if any, is no longer: taken off its job key's chain; returned
 * (the caller's to free), its foreign load still counted. */
static drv_kpod *unpark(ctrl_mirror *m, int32_t key)
{
    parked_pod *pp = &m->parked[key];
    drv_kpod *pk = pp->pod;
    if (!pk)
        return NULL;
    int32_t *link = &m->parked[pp->job].first;
    while (pp->job && *link && *link != key)
        link = &m->parked[*link].next;
    if (pp->job && *link == key)
        *link = pp->next;
    *pp = (parked_pod){.first = pp->first};
    return pk;
}

/* Parked pod key (p) names job j by its labels, and j does not control it: reported once. */
static int stand_in_seen(ctrl_mirror *m, int32_t key, const drv_kpod *p, int32_t j)
{
    parked_pod *pp = &m->parked[key];
    if (pp->warned || !p->job || j < 0 || p->owner == m->jobs[j].uid_id)
        return 0;
    if (drv_grow(&m->stand_ins, sizeof *m->stand_ins, &m->cap_stand_ins, m->nstand_ins + 1) != 0)
        return DRV_ENOMEM;
    m->stand_ins[m->nstand_ins++] = (stand_in){key, j};
    pp->warned = true;
    return 0;
}

const stand_in *ctrl_mirror_take_stand_ins(ctrl_mirror *m, int32_t *n)
{
    *n = m->nstand_ins;
    m->nstand_ins = 0;
    return m->stand_ins;
}

/* A pod of ours that is no slot's (its job not known yet, or not its controller): counted as
 * foreign until a job claims it, parked under its key and chained under job_key. */
static int park(ctrl_mirror *m, drv_pod_desc *d, int32_t key, int32_t job_key, const drv_kpod *cur)
{
    bool warned = m->parked[key].pod && m->parked[key].warned; /* (kept while it stays) */
    drv_kpod *pk = unpark(m, key);
    if (pk) {
        foreign_add(m, d, pk, -1);
        drv_free(pk);
    }
    if (!cur)
        return 0;
    if (!(pk = drv_malloc(sizeof *pk)))
        return DRV_ENOMEM;
    *pk = *cur;
    parked_pod *pp = &m->parked[key];
    pp->pod = pk;
    pp->job = job_key;
    pp->warned = warned;
    if (job_key) {
        pp->next = m->parked[job_key].first;
        m->parked[job_key].first = key;
    }
    foreign_add(m, d, pk, +1);
    return stand_in_seen(m, key, pk, job_key ? m->job_of[job_key] : -1);
}

/* What pod event e is (claim) and what it changes, gathered into d; the caller applies d. */
static int describe_pod(ctrl_mirror *m, const ctrl_event *e, drv_pod_desc *d, bool *gang)
{
    const drv_kpod *cur = e->type == DRV_WATCH_DELETED ? NULL : &e->cur.pod;
    const drv_kpod *old = e->has_old ? &e->old.pod : NULL;
    const drv_kpod *any = cur ? cur : old;
    int32_t s;
    switch (claim(m, e, any, &s)) {
    case CLAIM_FOREIGN:
        if (old)
            foreign_add(m, d, old, -1);
        if (cur)
            foreign_add(m, d, cur, +1);
        if (!cur && m->name_waits > 0) /* (the name a job's pod waits for may be free) */
            m->dirty = true;
        return 0;
    case CLAIM_PARKED: {
        if (!cur && m->name_waits > 0)
            m->dirty = true;
        int rc = park(m, d, e->key, e->job_key, cur);
        *gang = rc == 0 && !any->job;
        return rc;
    }
    case CLAIM_SLOT:
        break;
    }
    d->pod = s;
    if (m->parked[e->key].pod) /* (parked before: its controller was not the job's) */
        park(m, d, e->key, 0, NULL);
    return own_pod(m, d, s, cur, e->t);
}

int ctrl_mirror_apply_pod(ctrl_mirror *m, const ctrl_event *e, bool *gang)
{
    *gang = false; /* (its keys held by the tables by key: ctrl_apply_events) */
    drv_pod_desc d = pod_desc(-1);
    int rc = describe_pod(m, e, &d, gang);
    apply(m, &d); /* (what was decided before a failure too) */
    return rc;
}

/* ---- jobs ----------------------------------------------------------------------------------- */

void ctrl_mirror_end_job(ctrl_mirror *m, int32_t j, bool finished)
{
    drv_state_end_job(&m->st, j);
    if (finished)
        ctrl_count(m->counters, &m->counters->stats.jobs_done, 1);
}

void ctrl_mirror_set_phase(ctrl_mirror *m, int32_t j, int phase)
{
    int was = m->st.jobs[j].phase;
    if (was == phase)
        return; /* (a job that stays as it was asks for no cycle: the idle loop stays idle) */
    drv_state_set_phase(&m->st, j, phase);
    bool start = phase == DRV_JOB_RUNNING && (was == DRV_JOB_STARTING || was == DRV_JOB_RESTARTING);
    if (phase != DRV_JOB_STARTING && !(start && m->starts_blind))
        m->dirty = true;
}

int ctrl_mirror_adopt_parked(ctrl_mirror *m, int32_t j, double now)
{
    const job_record *jr = &m->jobs[j];
    for (int32_t key = m->parked[jr->key].first, next; key; key = next) {
        next = m->parked[key].next;
        const drv_kpod *p = m->parked[key].pod;
        if (p->owner != jr->uid_id || p->role < 0 || p->replica < 0) {
            if (stand_in_seen(m, key, p, j) != 0) /* (another controller's pod stays parked) */
                return DRV_ENOMEM;
            continue;
        }
        int32_t s = drv_job_pod(&m->st, j, p->role, p->replica);
        if (s >= 0 && m->pods[s].presence == POD_ABSENT) {
            int rc = ctrl_mirror_adopt(m, s, key, now);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int ctrl_mirror_adopt(ctrl_mirror *m, int32_t slot, int32_t pod_key, double now)
{
    drv_kpod *pk = pod_key > 0 && pod_key < m->cap_by_key ? unpark(m, pod_key) : NULL;
    if (!pk)
        return 0;
    drv_pod_desc d = pod_desc(slot);
    foreign_add(m, &d, pk, -1);
    int rc = own_pod(m, &d, slot, pk, now);
    apply(m, &d);
    drv_free(pk);
    return rc;
}

/* A progress sample scraped from a running job's chief. */
int ctrl_mirror_apply_progress(ctrl_mirror *m, const ctrl_event *e)
{
    int32_t j = e->key < m->cap_by_key ? m->job_of[e->key] : -1;
    if (j < 0 || m->st.jobs[j].phase != DRV_JOB_RUNNING)
        return 0;
    drv_job *jb = &m->st.jobs[j];
    double loss = isnan(e->u.progress.loss) ? jb->loss : e->u.progress.loss;
    drv_sample x = {.t = e->t - m->cfg->t0, .steps = e->u.progress.step, .loss = loss};
    if (drv_job_add_sample(jb, x) != 0)
        return DRV_ENOMEM;
    jb->steps = e->u.progress.step;
    jb->loss = loss;
    if (jb->loss0 == 0)
        jb->loss0 = loss;
    ctrl_counters_sample(m->counters, jb->steps, loss);
    return 0;
}

/* ---- what other units read ------------------------------------------------------------------ */

void ctrl_mirror_pod_name_in(ctrl_mirror *m, int32_t slot, const char *job_name, char *buf,
                             size_t n)
{
    const drv_pod *p = &m->st.pods[slot];
    const job_record *jr = &m->jobs[p->job];
    char name[600];
    if (jr->members) { /* another operator's pod: its own name (its key is "ns/name") */
        ctrl_name_str(m->names, jr->members[slot - m->st.jobs[p->job].pod_base], name, sizeof name);
        const char *slash = strchr(name, '/');
        snprintf(buf, n, "%s", slash ? slash + 1 : name);
        return;
    }
    snprintf(buf, n, "%s-%s-%d", job_name, drv_peers_role_name(p->role, jr->allreduce), p->index);
}

void ctrl_mirror_pod_name(ctrl_mirror *m, int32_t slot, char *buf, size_t n)
{
    ctrl_mirror_pod_name_in(m, slot, m->jobs[m->st.pods[slot].job].name_text, buf, n);
}

void ctrl_mirror_node_name(const ctrl_mirror *m, int32_t node, char *buf, size_t n)
{
    ctrl_name_str(m->names, m->node_key[node], buf, n);
}

int32_t ctrl_mirror_node_key(const ctrl_mirror *m, int32_t node)
{
    return m->node_key[node];
}

bool ctrl_mirror_job_complete(const ctrl_mirror *m, int32_t job)
{
    return drv_job_complete(&m->st.jobs[job]);
}

void ctrl_mirror_job_active(const ctrl_mirror *m, int32_t job, int32_t active[DRV_NROLES],
                            bool *all_running)
{
    const drv_state *st = &m->st;
    const drv_job *jb = &st->jobs[job];
    *all_running = ctrl_mirror_job_complete(m, job) && drv_job_wanted(jb) > 0;
    memset(active, 0, sizeof(int32_t) * DRV_NROLES);
    for (int32_t k = 0; k < jb->pod_count; k++) {
        const drv_pod *p = &st->pods[jb->pod_base + k];
        const pod_record *pr = &m->pods[jb->pod_base + k];
        if (p->node >= 0 && pr->phase == DRV_KPOD_RUNNING)
            active[p->role]++;
        else if (p->node >= 0 && pr->phase != DRV_KPOD_SUCCEEDED) /* (done: not waited for) */
            *all_running = false;
    }
}

void ctrl_mirror_attain(ctrl_mirror *m, double dt)
{
    drv_state *st = &m->st;
    if (dt <= 0)
        return;
    DRV_FOR_LIVE(st, j)
    {
        drv_job *jb = &st->jobs[j];
        if (jb->phase != DRV_JOB_RUNNING)
            continue;
        drv_res held = {0, 0, 0};
        for (int r = 0; r < DRV_NROLES; r++)
            held = drv_res_add(held, drv_res_scale(jb->role[r].req, jb->bound[r]));
        jb->attained += dt * (double)(held.gpu > 0 ? held.gpu * 1000 : held.cpu) / 1000.0;
    }
}

ctrl_gauges ctrl_mirror_gauges(const ctrl_mirror *m)
{
    ctrl_gauges g = {.pending = m->st.npending};
    DRV_FOR_LIVE(&m->st, j)
    g.running += m->st.jobs[j].phase == DRV_JOB_RUNNING;
    return g;
}

void ctrl_mirror_fini(ctrl_mirror *m)
{
    for (int32_t j = 0; j < m->st.njobs && m->jobs; j++) {
        for (int r = 0; r < DRV_NROLES; r++)
            drv_free(m->jobs[j].tmpl[r]);
        drv_free(m->jobs[j].members);
    }
    drv_free(m->jobs);
    drv_free(m->pods);
    drv_free(m->allocatable);
    drv_free(m->foreign);
    drv_free(m->orphans);
    drv_free(m->adopt);
    drv_free(m->stand_ins);
    drv_free(m->topo_told);
    drv_free(m->topo_gaps);
    drv_free(m->usable);
    drv_free(m->meta);
    drv_free(m->node_key);
    for (int32_t i = 0; i < m->cap_by_key; i++)
        drv_free(m->parked[i].pod);
    drv_free(m->parked);
    drv_free(m->job_of);
    drv_free(m->node_of);
    drv_free(m->cons_of);
    drv_state_fini(&m->st);
}
