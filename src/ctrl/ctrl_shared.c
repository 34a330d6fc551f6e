/*
 * ctrl_shared.c - `drover run` on a shared cluster (issue 14, docs/running.md "Shared
 * clusters"): PriorityClasses and Drover's Queues followed from the API, a TrainingJob's
 * priority, queue and user resolved when it becomes a job of the state, and the jobs that name
 * a queue or priority class that does not exist held out of the state until it does.
 *
 * Owns: its struct (scheduler thread only). Touches: the mirror's state (its queues, through
 * drv_state_add_queue / set_queue), the writer (status and Events), names.
 *
 * A held job is not in the state, so no cycle sees it and every other job is served; its
 * TrainingJob's status says Queued with reason QueueMissing or PriorityClassMissing and an
 * Event says which (once per cause); one whose Queue does not list its namespace in
 * spec.namespaces is held the same way, with reason QueueNotAllowed (a Queue's quota is spent
 * only by the namespaces it names). When the Queue or PriorityClass appears, the next
 * iteration adds it as if its TrainingJob had just arrived. What it was given is kept: a job's
 * priority and queue do not change once admitted (as a pod's priority does not).
 *
 * Example: TrainingJob a names spec.queue: research before Queue research exists: held, Event
 * "spec.queue names Queue research, which does not exist: waiting for it". kubectl apply of the
 * Queue -> EV_QUEUE -> drv_state_add_queue, changed -> ctrl_shared_admit adds a; its Queue's
 * status then counts it (pending 1, then admitted 1 and its pods' requests as used).
 */
#include "ctrl_shared.h"

#include "drover/clock.h"
#include "drover/usage.h"

#include <math.h>

#include <stdio.h>
#include <string.h>

void ctrl_shared_init(ctrl_shared *s, ctrl_mirror *mirror, ctrl_names *names, ctrl_writer *writer,
                      const ctrl_config *cfg)
{
    s->mirror = mirror;
    s->names = names;
    s->writer = writer;
    s->cfg = cfg;
}

/* ---- PriorityClasses ------------------------------------------------------------------------ */

int ctrl_shared_apply_priorityclass(ctrl_shared *s, const ctrl_event *e, bool *changed)
{
    *changed = false;
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
    s->pc[i] = (prio_class){.name = k->name,
                            .value = k->value,
                            .global_default = k->global_default,
                            .min_runtime = k->min_runtime};
    s->changed = *changed = true; /* (a gang waiting for it is looked at again) */
    return 0;
}

/* The value and minimum run time of the class of interned name (0: the global default's, else
 * 0) into tmpl's priority and min_runtime; false when the class named does not exist. */
static bool class_value(const ctrl_shared *s, int32_t name, drv_job *tmpl)
{
    tmpl->priority = 0;
    tmpl->min_runtime = 0;
    bool found = false;
    for (int32_t i = 0; i < s->npc; i++) {
        const prio_class *p = &s->pc[i];
        /* (the API server allows one global default; of several, the highest counts) */
        if ((name && p->name == name) ||
            (!name && p->global_default && (!found || p->value > tmpl->priority))) {
            tmpl->priority = p->value;
            tmpl->min_runtime = p->min_runtime;
            found = true;
        }
    }
    return found || !name;
}

/* ---- Queues --------------------------------------------------------------------------------- */

/* Makes s->queues hold every queue of the state (the first queue added makes two). */
static int grow_seen(ctrl_shared *s)
{
    int32_t old = s->cap_queues;
    if (drv_grow(&s->queues, sizeof *s->queues, &s->cap_queues, s->mirror->st.nqueues) != 0)
        return DRV_ENOMEM;
    if (s->cap_queues > old)
        memset(s->queues + old, 0, sizeof *s->queues * (size_t)(s->cap_queues - old));
    return 0;
}

int ctrl_shared_apply_queue(ctrl_shared *s, const ctrl_event *e, bool *changed)
{
    *changed = false;
    drv_state *st = &s->mirror->st;
    const drv_kqueue *k = e->type == DRV_WATCH_DELETED ? &e->old.queue : &e->cur.queue;
    s->queues_served = true; /* (their CRD may have been applied after start) */
    char name[256], cohort[256], key[280];
    ctrl_name_str(s->names, k->name, name, sizeof name);
    ctrl_name_str(s->names, k->cohort, cohort, sizeof cohort);
    drv_queue q = {.name = drv_strtab_intern(st->names, name),
                   .cohort = k->cohort ? drv_strtab_intern(st->names, cohort) : 0,
                   .weight = k->weight,
                   .quota = k->quota,
                   .borrow = k->borrow,
                   .min_runtime = k->min_runtime};
    snprintf(key, sizeof key, "queue:%s", name);
    int32_t skey = ctrl_name_intern(s->names, key);
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
        drv_log(DRV_LOG_WARN,
                "queue %s: weight, quota, borrowing limit or minimum run time refused", name);
        return 0;
    }
    if (rc != 0 || (rc = grow_seen(s)) != 0)
        return rc;
    queue_seen *w = &s->queues[id];
    w->key = skey;
    w->gone = false;
    w->nns = k->nns;
    memcpy(w->ns, k->ns, sizeof w->ns);
    w->user_label = k->user_label;
    w->written = false; /* (its status is ours to write: say it again) */
    s->changed = *changed = true;
    s->mirror->dirty = true;
    return 0;
}

/* ---- resolving a new job's priority, queue and user ----------------------------------------- */

/* The Queue object of state queue q, or NULL (none, or deleted). */
static const queue_seen *queue_object(const ctrl_shared *s, int32_t q)
{
    if (q < 0 || q >= s->cap_queues || !s->queues[q].key || s->queues[q].gone)
        return NULL;
    return &s->queues[q];
}

/* Whether Queue w admits jobs of namespace ns (interned in names): its spec.namespaces lists
 * it, or it lists none. */
static bool admits(const queue_seen *w, int32_t ns)
{
    if (!w || w->nns < 0)
        return true;
    for (int32_t i = 0; i < w->nns; i++)
        if (w->ns[i] == ns)
            return true;
    return false;
}

bool ctrl_shared_resolve_names(ctrl_shared *s, int32_t ns, int32_t queue, int32_t pclass,
                               drv_job *tmpl, char *why, size_t n, char *reason, size_t nr)
{
    drv_state *st = &s->mirror->st;
    char buf[256], nsb[256];
    tmpl->queue = 0;
    if (!class_value(s, pclass, tmpl)) {
        ctrl_name_str(s->names, pclass, buf, sizeof buf);
        snprintf(why, n,
                 "spec.priorityClassName names PriorityClass %s, which does not exist: waiting "
                 "for it",
                 buf);
        snprintf(reason, nr, "PriorityClassMissing");
        return false;
    }
    int32_t q = 0; /* (no queue named: the default queue, which a Queue "default" may bound) */
    snprintf(buf, sizeof buf, "default");
    if (queue) {
        ctrl_name_str(s->names, queue, buf, sizeof buf);
        int32_t name = drv_strtab_find(st->names, buf);
        q = name > 0 ? drv_state_find_queue(st, name) : -1;
        if (!queue_object(s, q)) {
            if (s->queues_served)
                snprintf(why, n, "spec.queue names Queue %s, which does not exist: waiting for it",
                         buf);
            else
                snprintf(why, n,
                         "spec.queue names Queue %s, but the API does not serve "
                         "queues.drover.dev: apply deploy/queue-crd.yaml (drover asks again "
                         "every %.0f s) and the Queue",
                         buf, s->cfg->o.queue_recheck_s);
            snprintf(reason, nr, "QueueMissing");
            return false;
        }
    }
    if (!admits(queue_object(s, q), ns)) {
        ctrl_name_str(s->names, ns, nsb, sizeof nsb);
        snprintf(why, n,
                 "%s Queue %s, whose spec.namespaces does not list namespace %s: waiting until "
                 "it does",
                 queue ? "spec.queue names" : "no spec.queue: the default", buf, nsb);
        snprintf(reason, nr, "QueueNotAllowed");
        return false;
    }
    tmpl->queue = q;
    return true;
}

const char *ctrl_shared_user(ctrl_shared *s, const tj_record *t, int32_t q, char *buf, size_t n)
{
    const queue_seen *w = queue_object(s, q);
    if (!t->tj.user)
        return t->ns;
    ctrl_name_str(s->names, t->tj.user, buf, n);
    if (w && w->user_label)
        return buf;
    char msg[900];
    snprintf(msg, sizeof msg,
             "label drover.dev/user=%s ignored: its Queue %s does not say "
             "spec.userFromLabel: true; its user for fair share is its namespace, %s",
             buf,
             w ? drv_strtab_str(s->mirror->st.names, s->mirror->st.queues[q].name)
               : "default (no Queue object)",
             t->ns);
    ctrl_ref about = ctrl_ref_trainingjob(t->ns, t->name, t->uid);
    ctrl_writer_event(s->writer, &about, "Warning", "UserLabelIgnored", msg);
    return t->ns;
}

bool ctrl_shared_resolve(ctrl_shared *s, const tj_record *t, drv_job *tmpl, char *why, size_t n,
                         char *reason, size_t nr)
{
    return ctrl_shared_resolve_names(s, t->tj.ns, t->tj.queue, t->tj.priority_class, tmpl, why, n,
                                     reason, nr);
}

/* ---- held jobs ------------------------------------------------------------------------------ */

static int32_t held_index(const ctrl_shared *s, int32_t key)
{
    for (int32_t i = 0; i < s->nheld; i++)
        if (s->held[i].e.key == key)
            return i;
    return -1;
}

int ctrl_shared_hold(ctrl_shared *s, ctrl_event *e, const char *why, const char *reason)
{
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

void ctrl_shared_unhold(ctrl_shared *s, int32_t key)
{
    int32_t i = held_index(s, key);
    if (i < 0)
        return;
    ctrl_tj_record_free(s->held[i].e.tj);
    memmove(&s->held[i], &s->held[i + 1], sizeof *s->held * (size_t)(s->nheld - i - 1));
    s->nheld--;
}

/* The status and Event of a held job: Queued, with what holds it. */
static void tell(ctrl_shared *s, held_job *h)
{
    const tj_record *t = h->e.tj;
    status_request r; /* (its version: never over a status written since) */
    ctrl_status_trainingjob(&r, t->ns, t->name, t->tj.rv, "Pending",
                            !strcmp(h->reason, "QueueMissing")      ? "held: queue missing"
                            : !strcmp(h->reason, "QueueNotAllowed") ? "held: queue not allowed"
                                                                    : "held: priority class "
                                                                      "missing");
    memcpy(r.conds, t->conds, sizeof r.conds);
    double now = drv_clock_wall();
    drv_condition_set(r.conds, DRV_COND_QUEUED, true, h->reason, h->why, now);
    r.start_time = r.completion_time = -1;
    ctrl_writer_status(s->writer, h->e.key, &r);
    ctrl_ref about = ctrl_ref_trainingjob(t->ns, t->name, t->uid);
    ctrl_writer_event(s->writer, &about, "Warning", h->reason, h->why);
    drv_log(DRV_LOG_INFO, "trainingjob %s/%s held: %s", t->ns, t->name, h->why);
    h->told = true;
}

int ctrl_shared_admit(ctrl_shared *s, int (*add)(void *arg, ctrl_event *e), void *arg)
{
    bool retry = s->changed;
    s->changed = false;
    for (int32_t i = 0; i < s->nheld; i++) {
        held_job *h = &s->held[i];
        char why[400], reason[48];
        drv_job tmpl;
        memset(&tmpl, 0, sizeof tmpl);
        if (retry && ctrl_shared_resolve_names(s, h->e.tj->tj.ns, h->e.tj->tj.queue,
                                               h->e.tj->tj.priority_class, &tmpl, why, sizeof why,
                                               reason, sizeof reason)) {
            ctrl_event e = h->e;
            h->e.tj = NULL;
            ctrl_shared_unhold(s, e.key);
            int rc = add(arg, &e); /* (which may hold it again) */
            ctrl_tj_record_free(e.tj);
            if (rc)
                return rc;
            i = -1; /* (the list changed: from the start; each restart removes one) */
            continue;
        }
        if (!h->told)
            tell(s, h);
    }
    if (retry)
        ctrl_shared_queue_status(s);
    return 0;
}

/* ---- Queue status ------------------------------------------------------------------------- */

void ctrl_shared_queue_status(ctrl_shared *s)
{
    const drv_state *st = &s->mirror->st;
    if (st->nqueues == 0 || grow_seen(s) != 0)
        return;
    int32_t *count = drv_calloc((size_t)st->nqueues * 2, sizeof *count);
    if (!count)
        return;
    drv_res cap = drv_cluster_capacity(st);
    DRV_FOR_LIVE(st, j)
    {
        int32_t q = st->jobs[j].queue;
        count[2 * q + (st->jobs[j].phase == DRV_JOB_PENDING ? 0 : 1)]++;
    }
    for (int32_t q = 0; q < st->nqueues; q++) {
        queue_seen *w = &s->queues[q];
        if (!w->key || w->gone)
            continue; /* (no Queue object: nothing to write to) */
        /* (decayed usage moves every cycle: written when its shown thousandths change) */
        int32_t usage =
            st->half_life > 0 ? (int32_t)lround(1000 * drv_queue_usage(st, q, cap)) : -1;
        if (w->written && w->pending == count[2 * q] && w->admitted == count[2 * q + 1] &&
            !memcmp(&w->used, &st->queues[q].used, sizeof w->used) && w->usage == usage)
            continue;
        status_request r;
        memset(&r, 0, sizeof r);
        r.queue = true;
        snprintf(r.path, sizeof r.path, "/apis/drover.dev/v1alpha1/queues/%s/status",
                 drv_strtab_str(st->names, st->queues[q].name));
        r.active[0] = w->pending = count[2 * q];
        r.active[1] = w->admitted = count[2 * q + 1];
        r.used = w->used = st->queues[q].used;
        /* without a half-life: a usage maybe written before (by an earlier run) is removed
         * with the first write, then left out */
        r.usage = usage >= 0 ? usage / 1000.0 : !w->written || w->usage >= 0 ? -2 : -1;
        w->usage = usage;
        ctrl_writer_status(s->writer, w->key, &r);
        w->written = true;
    }
    drv_free(count);
}

void ctrl_shared_fini(ctrl_shared *s)
{
    for (int32_t i = 0; i < s->nheld; i++)
        ctrl_tj_record_free(s->held[i].e.tj);
    drv_free(s->held);
    drv_free(s->pc);
    drv_free(s->queues);
    s->pc = NULL;
    s->held = NULL;
    s->queues = NULL;
    s->npc = s->cap_pc = s->nheld = s->cap_held = s->cap_queues = 0;
}
