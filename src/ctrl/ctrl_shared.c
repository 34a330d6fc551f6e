/*
 * ctrl_shared.c - `drover run` on a shared cluster (issue 14, docs/running.md "Shared
 * clusters"): PriorityClasses and Drover's Queues followed from the API, a TrainingJob's
 * priority, queue and user resolved when it becomes a job of the state, and the jobs that name
 * a queue or priority class that does not exist held out of the state until it does.
 *
 * Owns: c->shared (scheduler thread only). May touch: the mirror's state (its queues, through
 * drv_state_add_queue / set_queue), the writer (status and Events), names.
 *
 * A held job is not in the state, so no cycle sees it and every other job is served; its
 * TrainingJob's status says Queued with reason QueueMissing or PriorityClassMissing and an
 * Event says which (once per cause). When the Queue or PriorityClass appears, the next
 * iteration adds it as if its TrainingJob had just arrived. What it was given is kept: a job's
 * priority and queue do not change once admitted (as a pod's priority does not).
 *
 * Example: TrainingJob a names spec.queue: research before Queue research exists: held, Event
 * "spec.queue names Queue research, which does not exist: waiting for it". kubectl apply of the
 * Queue -> EV_QUEUE -> drv_state_add_queue, changed -> ctrl_shared_admit adds a; its Queue's
 * status then counts it (pending 1, then admitted 1 and its pods' requests as used).
 */
#include "ctrl.h"

#include <string.h>

/* ---- PriorityClasses ------------------------------------------------------------------------ */

int ctrl_shared_apply_priorityclass(drv_ctrl *c, const ctrl_event *e)
{
    ctrl_shared *s = &c->shared;
    const drv_kpriorityclass *k = e->type == DRV_WATCH_DELETED ? &e->old.pclass : &e->cur.pclass;
    int32_t i = 0;
    while (i < s->npc && s->pc[i].name != k->name)
        i++;
    if (e->type == DRV_WATCH_DELETED) {
        if (i < s->npc)
            s->pc[i] = s->pc[--s->npc];
        return 0;
    }
    if (i == s->npc && drv_grow(&s->pc, sizeof *s->pc, &s->cap_pc, ++s->npc) != 0)
        return DRV_ENOMEM;
    s->pc[i] = (prio_class){k->name, k->value, k->global_default};
    s->changed = true;
    ctrl_podgroup_touch(c); /* (a gang waiting for it is looked at again) */
    return 0;
}

/* The value of the class of interned name (0: the global default's, else 0); false when the
 * class named does not exist. */
static bool class_value(const ctrl_shared *s, int32_t name, int32_t *value)
{
    *value = 0;
    bool found = false;
    for (int32_t i = 0; i < s->npc; i++) {
        const prio_class *p = &s->pc[i];
        /* (the API server allows one global default; of several, the highest counts) */
        if ((name && p->name == name) ||
            (!name && p->global_default && (!found || p->value > *value))) {
            *value = p->value;
            found = true;
        }
    }
    return found || !name;
}

/* ---- Queues --------------------------------------------------------------------------------- */

/* Makes s->queues hold every queue of the state (the first queue added makes two). */
static int grow_seen(drv_ctrl *c)
{
    ctrl_shared *s = &c->shared;
    int32_t old = s->cap_queues;
    if (drv_grow(&s->queues, sizeof *s->queues, &s->cap_queues, c->mirror.st.nqueues) != 0)
        return DRV_ENOMEM;
    if (s->cap_queues > old)
        memset(s->queues + old, 0, sizeof *s->queues * (size_t)(s->cap_queues - old));
    return 0;
}

int ctrl_shared_apply_queue(drv_ctrl *c, const ctrl_event *e)
{
    ctrl_shared *s = &c->shared;
    drv_state *st = &c->mirror.st;
    const drv_kqueue *k = e->type == DRV_WATCH_DELETED ? &e->old.queue : &e->cur.queue;
    s->queues_served = true; /* (their CRD may have been applied after start) */
    char name[256], cohort[256], key[280];
    ctrl_name_str(c, k->name, name, sizeof name);
    ctrl_name_str(c, k->cohort, cohort, sizeof cohort);
    drv_queue q = {.name = drv_strtab_intern(st->names, name),
                   .cohort = k->cohort ? drv_strtab_intern(st->names, cohort) : 0,
                   .weight = k->weight,
                   .quota = k->quota,
                   .borrow = k->borrow};
    snprintf(key, sizeof key, "queue:%s", name);
    int32_t skey = ctrl_name_intern(c, key);
    if (q.name < 0 || q.cohort < 0 || skey < 0)
        return DRV_ENOMEM;
    int32_t id = drv_state_find_queue(st, q.name);
    if (e->type == DRV_WATCH_DELETED) {
        /* The state keeps its queues: its jobs stay in it; new ones naming it are held. */
        if (id >= 0 && id < s->cap_queues)
            s->queues[id].gone = true;
        return 0;
    }
    int rc = id < 0 ? drv_state_add_queue(st, &q, &id) : drv_state_set_queue(st, id, &q);
    if (rc == DRV_EINVAL) {
        drv_log(DRV_LOG_WARN, "queue %s: weight, quota or borrowing limit refused", name);
        return 0;
    }
    if (rc != 0 || (rc = grow_seen(c)) != 0)
        return rc;
    s->queues[id].key = skey;
    s->queues[id].gone = false;
    s->queues[id].written = false; /* (its status is ours to write: say it again) */
    s->changed = true;
    ctrl_podgroup_touch(c);
    c->mirror.dirty = true;
    return 0;
}

/* ---- resolving a new job's priority, queue and user ----------------------------------------- */

bool ctrl_shared_resolve_names(drv_ctrl *c, int32_t queue, int32_t pclass, drv_job *tmpl, char *why,
                               size_t n, char *reason, size_t nr)
{
    ctrl_shared *s = &c->shared;
    drv_state *st = &c->mirror.st;
    char buf[256];
    tmpl->queue = 0;
    if (!class_value(s, pclass, &tmpl->priority)) {
        ctrl_name_str(c, pclass, buf, sizeof buf);
        snprintf(why, n,
                 "spec.priorityClassName names PriorityClass %s, which does not exist: waiting "
                 "for it",
                 buf);
        snprintf(reason, nr, "PriorityClassMissing");
        return false;
    }
    if (!queue)
        return true;
    ctrl_name_str(c, queue, buf, sizeof buf);
    int32_t name = drv_strtab_find(st->names, buf);
    int32_t q = name > 0 ? drv_state_find_queue(st, name) : -1;
    if (q >= 0 && q < s->cap_queues && s->queues[q].key && !s->queues[q].gone) {
        tmpl->queue = q;
        return true;
    }
    if (s->queues_served)
        snprintf(why, n, "spec.queue names Queue %s, which does not exist: waiting for it", buf);
    else
        snprintf(why, n,
                 "spec.queue names Queue %s, but the API does not serve queues.drover.dev: "
                 "apply deploy/queue-crd.yaml (drover asks again every %.0f s) and the Queue",
                 buf, c->o.queue_recheck_s);
    snprintf(reason, nr, "QueueMissing");
    return false;
}

bool ctrl_shared_resolve(drv_ctrl *c, const tj_record *t, drv_job *tmpl, char *why, size_t n,
                         char *reason, size_t nr)
{
    char buf[256];
    ctrl_name_str(c, t->tj.user ? t->tj.user : t->tj.ns, buf, sizeof buf);
    tmpl->user = drv_strtab_intern(c->mirror.st.names, buf);
    if (tmpl->user < 0)
        tmpl->user = 0; /* (out of memory: the job is served, its user unnamed) */
    return ctrl_shared_resolve_names(c, t->tj.queue, t->tj.priority_class, tmpl, why, n, reason,
                                     nr);
}

/* ---- held jobs ------------------------------------------------------------------------------ */

static int32_t held_index(const ctrl_shared *s, int32_t key)
{
    for (int32_t i = 0; i < s->nheld; i++)
        if (s->held[i].e.key == key)
            return i;
    return -1;
}

int ctrl_shared_hold(drv_ctrl *c, ctrl_event *e, const char *why, const char *reason)
{
    ctrl_shared *s = &c->shared;
    int32_t i = held_index(s, e->key);
    if (i < 0) {
        if (drv_grow(&s->held, sizeof *s->held, &s->cap_held, s->nheld + 1) != 0)
            return DRV_ENOMEM;
        i = s->nheld++;
        memset(&s->held[i], 0, sizeof s->held[i]);
    } else {
        ctrl_tj_record_free(s->held[i].e.tj);
    }
    held_job *h = &s->held[i];
    h->e = *e;
    e->tj = NULL; /* (taken) */
    /* Told once per cause: its own status write comes back as an event and holds it again. */
    if (strcmp(h->why, why) != 0)
        h->told = false;
    snprintf(h->why, sizeof h->why, "%s", why);
    snprintf(h->reason, sizeof h->reason, "%s", reason);
    return 0;
}

void ctrl_shared_unhold(drv_ctrl *c, int32_t key)
{
    ctrl_shared *s = &c->shared;
    int32_t i = held_index(s, key);
    if (i < 0)
        return;
    ctrl_tj_record_free(s->held[i].e.tj);
    memmove(&s->held[i], &s->held[i + 1], sizeof *s->held * (size_t)(s->nheld - i - 1));
    s->nheld--;
}

/* The status and Event of a held job: Queued, with what holds it. */
static void tell(drv_ctrl *c, held_job *h)
{
    const tj_record *t = h->e.tj;
    char ns[256], name[256];
    ctrl_name_str(c, t->tj.ns, ns, sizeof ns);
    ctrl_name_str(c, t->tj.name, name, sizeof name);
    status_request r;
    memset(&r, 0, sizeof r);
    snprintf(r.path, sizeof r.path,
             "/apis/drover.dev/v1alpha1/namespaces/%s/trainingjobs/%s/status", ns, name);
    snprintf(r.rv, sizeof r.rv, "%s", t->tj.rv); /* (never over a status written since) */
    snprintf(r.phase, sizeof r.phase, "Pending");
    snprintf(r.message, sizeof r.message, "held: %s",
             strcmp(h->reason, "QueueMissing") ? "priority class missing" : "queue missing");
    memcpy(r.conds, t->conds, sizeof r.conds);
    double now = drv_clock_wall();
    drv_condition_set(r.conds, DRV_COND_QUEUED, true, h->reason, h->why, now);
    r.start_time = r.completion_time = -1;
    ctrl_writer_status_request(c, h->e.key, &r);
    ctrl_writer_event_about(c, ns, name, t->uid, "Warning", h->reason, h->why);
    drv_log(DRV_LOG_INFO, "trainingjob %s/%s held: %s", ns, name, h->why);
    h->told = true;
}

int ctrl_shared_admit(drv_ctrl *c)
{
    ctrl_shared *s = &c->shared;
    bool retry = s->changed;
    s->changed = false;
    for (int32_t i = 0; i < s->nheld; i++) {
        held_job *h = &s->held[i];
        char why[400], reason[48];
        drv_job tmpl;
        memset(&tmpl, 0, sizeof tmpl);
        if (retry &&
            ctrl_shared_resolve(c, h->e.tj, &tmpl, why, sizeof why, reason, sizeof reason)) {
            ctrl_event e = h->e;
            h->e.tj = NULL;
            ctrl_shared_unhold(c, e.key);
            int rc = ctrl_mirror_add_held(c, &e); /* (which may hold it again) */
            ctrl_tj_record_free(e.tj);
            if (rc)
                return rc;
            i = -1; /* (the list changed: from the start; each restart removes one) */
            continue;
        }
        if (!h->told)
            tell(c, h);
    }
    if (retry)
        ctrl_shared_queue_status(c);
    return 0;
}

/* ---- Queue status and why a quota holds a job back ------------------------------------------ */

void ctrl_shared_queue_status(drv_ctrl *c)
{
    ctrl_shared *s = &c->shared;
    const drv_state *st = &c->mirror.st;
    if (st->nqueues == 0 || grow_seen(c) != 0)
        return;
    int32_t *count = drv_calloc((size_t)st->nqueues * 2, sizeof *count);
    if (!count)
        return;
    DRV_FOR_LIVE(st, j)
    {
        int32_t q = st->jobs[j].queue;
        count[2 * q + (st->jobs[j].phase == DRV_JOB_PENDING ? 0 : 1)]++;
    }
    for (int32_t q = 0; q < st->nqueues; q++) {
        queue_seen *w = &s->queues[q];
        if (!w->key || w->gone)
            continue; /* (no Queue object: nothing to write to) */
        if (w->written && w->pending == count[2 * q] && w->admitted == count[2 * q + 1] &&
            !memcmp(&w->used, &st->queues[q].used, sizeof w->used))
            continue;
        status_request r;
        memset(&r, 0, sizeof r);
        r.queue = true;
        snprintf(r.path, sizeof r.path, "/apis/drover.dev/v1alpha1/queues/%s/status",
                 drv_strtab_str(st->names, st->queues[q].name));
        r.active[0] = w->pending = count[2 * q];
        r.active[1] = w->admitted = count[2 * q + 1];
        r.used = w->used = st->queues[q].used;
        ctrl_writer_status_request(c, w->key, &r);
        w->written = true;
    }
    drv_free(count);
}

/* What queue q may borrow in dimension k: what the other queues of its cohort leave unused of
 * their nominal quota, within its borrowing limit (state.h's model; the core decides, this
 * only explains). */
static int64_t may_borrow(const drv_state *st, int32_t q, int k)
{
    const drv_queue *me = &st->queues[q];
    const int64_t lim = k == 0 ? me->borrow.cpu : k == 1 ? me->borrow.mem : me->borrow.gpu;
    if (!me->cohort || lim == 0)
        return 0;
    int64_t free = 0;
    for (int32_t o = 0; o < st->nqueues; o++) {
        const drv_queue *x = &st->queues[o];
        if (o == q || x->cohort != me->cohort)
            continue;
        int64_t quota = k == 0 ? x->quota.cpu : k == 1 ? x->quota.mem : x->quota.gpu;
        int64_t used = k == 0 ? x->used.cpu : k == 1 ? x->used.mem : x->used.gpu;
        if (quota == DRV_UNLIMITED)
            return lim; /* (a lender without bound: the limit is all that holds) */
        free += quota > used ? quota - used : 0;
    }
    return lim < free ? lim : free;
}

/* "cpu 6.0 used + 4.0 wanted > nominal quota 8.0" for the first dimension where the job's
 * unbound wanted pods do not fit its queue's quota and what it may borrow, or false. */
bool ctrl_shared_quota_why(const drv_ctrl *c, int32_t j, char *buf, size_t n)
{
    const drv_state *st = &c->mirror.st;
    const drv_job *jb = &st->jobs[j];
    if (st->nqueues == 0)
        return false;
    const drv_queue *q = &st->queues[jb->queue];
    drv_res need = {0, 0, 0};
    for (int32_t k = 0; k < jb->pod_count; k++) {
        const drv_pod *p = &st->pods[jb->pod_base + k];
        if (p->node < 0 && p->index < jb->target[p->role])
            need = drv_res_add(need, jb->role[p->role].req);
    }
    static const char *const dim[] = {"cpu", "memory (GiB)", "gpu"};
    const int64_t used[] = {q->used.cpu, q->used.mem, q->used.gpu};
    const int64_t want[] = {need.cpu, need.mem, need.gpu};
    const int64_t quota[] = {q->quota.cpu, q->quota.mem, q->quota.gpu};
    const int64_t borrow[] = {q->borrow.cpu, q->borrow.mem, q->borrow.gpu};
    const double unit[] = {1000.0, 1073741824.0, 1.0};
    for (int k = 0; k < 3; k++) {
        if (quota[k] == DRV_UNLIMITED || want[k] == 0 || used[k] + want[k] <= quota[k])
            continue;
        int64_t lend_now = may_borrow(st, jb->queue, k);
        if (lend_now == DRV_UNLIMITED || used[k] + want[k] - quota[k] <= lend_now)
            continue; /* (borrowing covers it) */
        char lend[160] = "";
        if (q->cohort && borrow[k] != 0)
            snprintf(lend, sizeof lend, "; cohort %s lends %.1f now",
                     drv_strtab_str(st->names, q->cohort), (double)lend_now / unit[k]);
        snprintf(buf, n, "queue %s: %s %.1f used + %.1f wanted > nominal quota %.1f%s",
                 drv_strtab_str(st->names, q->name), dim[k], (double)used[k] / unit[k],
                 (double)want[k] / unit[k], (double)quota[k] / unit[k], lend);
        return true;
    }
    return false;
}

/* ---- why no node will do -------------------------------------------------------------------- */

/* Whether toleration list c tolerates taint t (state.h's rule: effect empty or equal, key equal
 * or empty with Exists, Exists or value equal). */
static bool tolerates(const drv_constraint *c, const drv_taint *t)
{
    for (int32_t i = 0; i < c->ntol; i++) {
        const drv_toleration *o = &c->tol[i];
        if ((o->effect == DRV_EFFECT_ANY || o->effect == t->effect) &&
            (o->key == t->key || (!o->key && o->exists)) && (o->exists || o->value == t->value))
            return true;
    }
    return false;
}

static int32_t class_label(const drv_nodeclass *k, int32_t key)
{
    for (int32_t i = 0; i < k->nlabels; i++)
        if (k->labels[i].key == key)
            return k->labels[i].value;
    return -1;
}

/* What keeps role r's constraint off every schedulable node, in words: a selector label no node
 * has, a taint not tolerated on the nodes left, or the required affinity. */
static void describe(const drv_state *st, int r, const drv_constraint *k, char *buf, size_t n)
{
    static const drv_nodeclass none = {0};
    for (int32_t i = 0; i < k->nselector; i++) {
        int32_t have = 0;
        for (int32_t x = 0; x < st->nnodes; x++) {
            const drv_node *nd = &st->nodes[x];
            const drv_nodeclass *cl = nd->node_class > 0 ? &st->classes[nd->node_class] : &none;
            have += nd->schedulable && class_label(cl, k->selector[i].key) == k->selector[i].value;
        }
        if (have == 0) {
            snprintf(buf, n, "no schedulable node has its %s pods' nodeSelector label %s=%s",
                     drv_role_name(r), drv_strtab_str(st->names, k->selector[i].key),
                     drv_strtab_str(st->names, k->selector[i].value));
            return;
        }
    }
    for (int32_t x = 0; x < st->nnodes; x++) {
        const drv_node *nd = &st->nodes[x];
        const drv_nodeclass *cl = nd->node_class > 0 ? &st->classes[nd->node_class] : &none;
        for (int32_t i = 0; nd->schedulable && i < cl->ntaints; i++) {
            const drv_taint *t = &cl->taints[i];
            if (t->effect != DRV_EFFECT_PREFER_NO_SCHEDULE && !tolerates(k, t)) {
                snprintf(buf, n,
                         "no schedulable node will take its %s pods: node %s and others have "
                         "taint %s=%s:%s, which they do not tolerate, or do not match their "
                         "nodeSelector or required node affinity",
                         drv_role_name(r), drv_strtab_str(st->names, nd->name),
                         drv_strtab_str(st->names, t->key), drv_strtab_str(st->names, t->value),
                         drv_effect_name(t->effect));
                return;
            }
        }
    }
    snprintf(buf, n, "no schedulable node matches its %s pods' required node affinity",
             drv_role_name(r));
}

bool ctrl_shared_nodes_why(const drv_ctrl *c, int32_t j, char *buf, size_t n)
{
    const drv_state *st = &c->mirror.st;
    const drv_job *jb = &st->jobs[j];
    bool some = false; /* (no node at all, or none schedulable: not the constraints' doing) */
    for (int32_t x = 0; x < st->nnodes && !some; x++)
        some = st->nodes[x].schedulable;
    for (int r = 0; r < DRV_NROLES && some; r++) {
        if (jb->target[r] == 0)
            continue; /* (a role that asks nothing is still kept off tainted nodes) */
        bool any = false;
        for (int32_t x = 0; x < st->nnodes && !any; x++)
            any = st->nodes[x].schedulable &&
                  drv_constraint_fits(st, jb->cons[r], st->nodes[x].node_class, NULL);
        if (!any) {
            static const drv_constraint nothing = {0};
            describe(st, r, jb->cons[r] > 0 ? &st->cons[jb->cons[r]] : &nothing, buf, n);
            return true;
        }
    }
    return false;
}

bool ctrl_shared_node_fits(const drv_ctrl *c, int32_t j, int32_t node)
{
    const drv_state *st = &c->mirror.st;
    const drv_job *jb = &st->jobs[j];
    for (int r = 0; r < DRV_NROLES; r++)
        if (jb->target[r] > 0 &&
            !drv_constraint_fits(st, jb->cons[r], st->nodes[node].node_class, NULL))
            return false;
    return true;
}

void ctrl_shared_fini(drv_ctrl *c)
{
    ctrl_shared *s = &c->shared;
    for (int32_t i = 0; i < s->nheld; i++)
        ctrl_tj_record_free(s->held[i].e.tj);
    drv_free(s->held);
    drv_free(s->pc);
    drv_free(s->queues);
    memset(s, 0, sizeof *s);
}
