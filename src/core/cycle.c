/*
 * cycle.c - runs one scheduling cycle (docs/cycle.md) and implements the helpers plugins call.
 *
 * The cycle never changes the drv_state it is given: what its decisions would do is kept in an
 * assumed overlay (cycle_int.h says how). A cycle is a list of phases: prepare the overlay,
 * order the queue (cycle_queue.c), run the admit, scale, reallocate and migrate plugins (which
 * decide through cycle_decide.c and place through cycle_place.c), then ask the plugins when
 * the next cycle could decide anything.
 */
#include "cycle_queue.h"

#include <math.h>
#include <string.h>

const char *drv_point_name(int pt)
{
    static const char *const names[] = {"queue_order", "admit",      "filter", "score",
                                        "scale",       "reallocate", "migrate"};
    return (pt >= 0 && pt < DRV_NPOINTS) ? names[pt] : "?";
}

/* ---- scheduler lifecycle ----------------------------------------------------------------- */

int drv_sched_new(const drv_profile *prof, drv_sched **out, drv_diag *d)
{
    drv_sched *s = drv_calloc(1, sizeof *s);
    if (!s)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    s->prof = prof;
    drv_arena_init(&s->arena, 256 * 1024);
    if (s->prof->nuse[DRV_PT_ADMIT] == 0) {
        drv_free(s);
        return drv_fail(d, DRV_EINVAL, "profile %s: no admit plugin", prof->name);
    }
    for (int pt = 0; pt < DRV_NPOINTS; pt++) {
        for (int i = 0; i < s->prof->nuse[pt]; i++) {
            const drv_plugin_use *u = &s->prof->use[pt][i];
            int32_t k = 0;
            while (k < s->ninst && s->inst[k].p != u->p)
                k++;
            if (k == s->ninst) {
                s->inst[k].p = u->p;
                s->ninst++;
                if (u->p->init) {
                    drv_diag pd = {{0}};
                    int rc =
                        u->p->init(&s->inst[k].state, drv_profile_knobs(prof, u), u->nknobs, &pd);
                    if (rc) {
                        const char *pname = u->p->name;
                        s->ninst--;
                        drv_sched_free(s);
                        return drv_fail(d, rc, "profile %s: plugin %s: %s", prof->name, pname,
                                        pd.msg);
                    }
                }
            }
            s->ustate[pt][i] = s->inst[k].state;
        }
    }
    /* The index applies with no filters and either one keyed score alone (best by key), or
     * scores that all have bounds, at most one of them keyed (branch and bound). */
    const drv_profile *pr = s->prof;
    int keyed = 0, bounded = 0, mixed = 0, summary = 0, nscore = pr->nuse[DRV_PT_SCORE];
    for (int i = 0; i < nscore; i++) {
        const drv_plugin *p = pr->use[DRV_PT_SCORE][i].p;
        if (p->node_key) {
            keyed++;
            s->ix_key = p->node_key;
        }
        bounded += p->score_bound != NULL;
        mixed += p->bound_mixed;
        summary += p->score_by_summary;
    }
    s->use_ix = false;
    if (pr->nuse[DRV_PT_FILTER] == 0 && keyed == 1 && nscore == 1) {
        s->use_ix = true;
        s->ix_bb = false;
        s->ix_fam = 1;
    } else if (pr->nuse[DRV_PT_FILTER] == 0 && nscore > 0 && bounded == nscore && keyed <= 1) {
        s->use_ix = true;
        s->ix_bb = true;
        s->ix_fam = DRV_IX_FAMILIES;
        s->ix_mixed = mixed == nscore;
        s->ix_summary = summary == nscore;
        if (!keyed)
            s->ix_key = NULL;
    }
    if (s->use_ix && !(s->ix = drv_nodeindex_new())) {
        drv_sched_free(s);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    *out = s;
    return 0;
}

void drv_sched_set_exhaustive(drv_sched *s, bool on)
{
    s->exhaustive = on;
}

bool drv_sched_indexed(const drv_sched *s)
{
    return s->use_ix;
}

void drv_sched_free(drv_sched *s)
{
    if (!s)
        return;
    for (int32_t k = 0; k < s->ninst; k++)
        if (s->inst[k].p->fini)
            s->inst[k].p->fini(s->inst[k].state);
    drv_arena_fini(&s->arena);
    drv_nodeindex_free(s->ix);
    drv_free(s->free);
    drv_free(s->qused);
    drv_free(s->node_admits);
    drv_free(s->odirty);
    drv_free(s->rnodes);
    drv_free(s->rmark);
    drv_free(s->pod_node.slot);
    drv_free(s->job_workers.slot);
    drv_free(s->job_touch);
    drv_free(s->job_fail_epoch);
    drv_free(s->job_fail_workers);
    for (int i = 0; i < DRV_MAX_SLOT_PLUGINS; i++)
        drv_free(s->qkey[i]);
    drv_free(s->cfit);
    drv_free(s->order);
    drv_free(s->pend);
    drv_free(s->order2);
    drv_free(s->qscratch);
    drv_free(s->qfit);
    drv_free(s->qfree);
    drv_free(s->inq);
    drv_free(s->nrole);
    drv_free(s->node_seen);
    drv_free(s->own.node);
    drv_free(s->own.cnt);
    drv_free(s);
}

const drv_profile *drv_sched_profile(const drv_sched *s)
{
    return s->prof;
}

/* ---- the overlay ------------------------------------------------------------------------- */

const drv_snapshot *drv_ctx_snap(const drv_ctx *c)
{
    return c->snap;
}

const drv_state *drv_ctx_state(const drv_ctx *c)
{
    return c->snap->st;
}

double drv_ctx_now(const drv_ctx *c)
{
    return c->snap->now;
}

drv_arena *drv_ctx_arena(drv_ctx *c)
{
    return &c->s->arena;
}

drv_res drv_ctx_free(const drv_ctx *c, int32_t node)
{
    return c->s->free[node];
}

int32_t drv_ctx_pod_node(const drv_ctx *c, int32_t pod)
{
    return cycle_pod_node(c, pod);
}

drv_res drv_ctx_queue_used(const drv_ctx *c, int32_t queue)
{
    return c->snap->st->nqueues > 0 ? c->s->qused[queue] : (drv_res){0, 0, 0};
}

int32_t drv_ctx_workers(const drv_ctx *c, int32_t job)
{
    return cycle_map_get(&c->s->job_workers, job, c->snap->st->jobs[job].target[DRV_ROLE_WORKER]);
}

int32_t drv_ctx_node_role_pods(const drv_ctx *c, int32_t node, int role)
{
    return c->s->nrole[node * DRV_NROLES + role];
}

uint32_t drv_ctx_cycle(const drv_ctx *c)
{
    return c->s->stamp;
}

uint64_t drv_ctx_changes(const drv_ctx *c)
{
    return c->changes;
}

/* Grows a per-id array of elem-byte entries to need, new entries zero: from fresh zeroed memory
 * (calloc), not cleared by hand, so that the pages of ids never written are never touched - a
 * reserved state has every id of its trace from the start. 0 or DRV_ENOMEM. */
static int grow_zeroed(void *arr, size_t elem, int32_t *cap, int32_t need)
{
    if (need <= *cap)
        return 0;
    int64_t ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    if (ncap > INT32_MAX)
        return DRV_ENOMEM;
    void **p = arr;
    void *q = drv_calloc((size_t)ncap, elem);
    if (!q)
        return DRV_ENOMEM;
    if (*cap)
        memcpy(q, *p, (size_t)*cap * elem);
    drv_free(*p);
    *p = q;
    *cap = (int32_t)ncap;
    return 0;
}

/* Grows the per-job, per-pod and per-node arrays to the state's sizes; new stamps are 0, never
 * current; nodes new to the scheduler start with no free room, no pod and admitting nothing
 * (read from the state by sync_nodes). Allocates everything prepare needs. 0 or DRV_ENOMEM. */
static int grow_arrays(drv_sched *s, const drv_state *st)
{
    int32_t cap2 = s->cap_fail;
    if (drv_grow(&s->free, sizeof *s->free, &s->cap_free, st->nnodes) != 0 ||
        grow_zeroed(&s->job_touch, sizeof *s->job_touch, &s->cap_touch, st->njobs) != 0 ||
        grow_zeroed(&s->job_fail_workers, sizeof *s->job_fail_workers, &cap2, st->njobs) != 0 ||
        grow_zeroed(&s->job_fail_epoch, sizeof *s->job_fail_epoch, &s->cap_fail, st->njobs) != 0)
        return DRV_ENOMEM;
    /* node_seen and rmark grow zeroed, each at once: new entries are never equal to a tag in
     * use, even when a later allocation here fails and prepare is retried */
    if (drv_grow(&s->nrole, sizeof *s->nrole, &s->cap_nrole, st->nnodes * DRV_NROLES) != 0 ||
        grow_zeroed(&s->node_seen, sizeof *s->node_seen, &s->cap_node_seen, st->nnodes) != 0 ||
        grow_zeroed(&s->rmark, sizeof *s->rmark, &s->cap_rmark, st->nnodes) != 0 ||
        drv_grow(&s->rnodes, sizeof *s->rnodes, &s->cap_rnodes, st->nnodes) != 0 ||
        drv_grow(&s->own.node, sizeof *s->own.node, &s->own.cap, st->nnodes) != 0 ||
        drv_grow(&s->qused, sizeof *s->qused, &s->cap_qused, st->nqueues) != 0 ||
        drv_grow(&s->node_admits, sizeof *s->node_admits, &s->cap_node_admits, st->nnodes) != 0)
        return DRV_ENOMEM;
    for (int32_t n = s->cap_free_used; n < st->nnodes; n++) {
        s->free[n] = (drv_res){0, 0, 0};
        s->node_admits[n] = 0;
        memset(s->nrole + n * DRV_NROLES, 0, sizeof *s->nrole * DRV_NROLES);
    }
    return 0;
}

/* Reads node n again from the state (once per prepare: rmark), keeping totfree the exact sum
 * of free[] over the nodes node_admits says are schedulable, and lists it in rnodes when its
 * free room or PS count differ from the end of the last cycle (what the index holds: a
 * decision the driver applied leaves both as they were). Returns whether it may admit more
 * than at the end of the last cycle: more room in some dimension, or its class or schedulable
 * flag changed (relabelled, retainted, cordoned or uncordoned). */
static bool sync_node(drv_sched *s, const drv_state *st, int32_t n)
{
    if (s->rmark[n] == s->rtag)
        return false;
    s->rmark[n] = s->rtag;
    const drv_node *nd = &st->nodes[n];
    drv_res f = drv_node_free(nd);
    if (memcmp(&f, &s->free[n], sizeof f) != 0 ||
        nd->nrole[DRV_ROLE_PS] != s->nrole[n * DRV_NROLES + DRV_ROLE_PS])
        s->rnodes[s->nrnodes++] = n;
    int32_t admits = nd->node_class * 2 + nd->schedulable;
    bool grew = !drv_res_fits(f, s->free[n]) || admits != s->node_admits[n];
    if (s->node_admits[n] & 1)
        s->totfree = drv_res_sub(s->totfree, s->free[n]);
    if (nd->schedulable)
        s->totfree = drv_res_add(s->totfree, f);
    s->free[n] = f;
    s->node_admits[n] = admits;
    memcpy(s->nrole + n * DRV_NROLES, nd->nrole, sizeof nd->nrole);
    return grew;
}

/*
 * Brings free[], nrole, node_admits and totfree up to the state. Between two cycles on the
 * same state a node can differ from it only if the state changed it (its change list, read
 * from seen_clock) or the last cycle's standing decisions changed it in the overlay (odirty;
 * rolled-back ones restored it exactly): only those are read, so the cost follows what
 * changed. Any other state, or after a failure, every node is. Exactness of the memo rule:
 * a node not read has the free room and class it had at the end of the last cycle, so it
 * cannot have "grown"; every node that could is compared as before. Returns whether some
 * node may admit more than at the end of the last cycle (or nodes were added).
 */
static bool sync_nodes(drv_sched *s, const drv_state *st, bool whole)
{
    bool grew = st->nnodes != s->cap_free_used;
    if (++s->rtag == 0) { /* wrapped: no mark may look current */
        memset(s->rmark, 0, (size_t)s->cap_rmark * sizeof *s->rmark);
        s->rtag = 1;
    }
    s->nrnodes = 0;
    if (whole) {
        for (int32_t n = 0; n < st->nnodes; n++)
            grew |= sync_node(s, st, n);
        s->totfree = (drv_res){0, 0, 0}; /* summed afresh: the old sum may be of other nodes */
        for (int32_t n = 0; n < st->nnodes; n++)
            if (st->nodes[n].schedulable)
                s->totfree = drv_res_add(s->totfree, s->free[n]);
    } else {
        for (int32_t i = 0; i < s->nodirty; i++)
            grew |= sync_node(s, st, s->odirty[i]);
        DRV_FOR_NODES_CHANGED(st, s->seen_clock, n)
        grew |= sync_node(s, st, n);
    }
    s->nodirty = 0;
    s->seen_st = st;
    s->seen_clock = st->node_clock;
    s->cap_free_used = st->nnodes;
    s->resync = false;
    return grew;
}

/* The index for this cycle: refreshed for the nodes sync_nodes read when it followed every
 * change since it was last built for these node types, else built (which regroups only when
 * the types changed). Then maxfree, exact: the index's summary of the schedulable nodes'
 * free room, or without an index a pass over the nodes (whose placement scans them anyway). */
static void index_nodes(drv_sched *s, const drv_state *st, bool whole)
{
    s->ix_ok = false;
    if (s->use_ix && !s->exhaustive) {
        int rc = !whole && s->ix_synced && s->ix_epoch == st->node_epoch
                     ? drv_nodeindex_refresh(s->ix, st, s->free, s->nrole + DRV_ROLE_PS, DRV_NROLES,
                                             s->ix_key, s->ix_fam, s->rnodes, s->nrnodes)
                     : drv_nodeindex_build(s->ix, st, s->free, s->nrole + DRV_ROLE_PS, DRV_NROLES,
                                           s->ix_key, s->ix_fam);
        s->ix_ok = rc == 0;
        s->ix_epoch = st->node_epoch;
    }
    s->ix_synced = s->ix_ok;
    s->ix_nodes = 0;
    for (int32_t g = 0; s->ix_ok && g < drv_nodeindex_groups(s->ix, DRV_IX_GLOBAL); g++)
        s->ix_nodes += drv_nodeindex_group_nodes(s->ix, DRV_IX_GLOBAL, g);
    if (s->ix_ok) {
        s->maxfree = drv_nodeindex_maxfree(s->ix);
        return;
    }
    s->maxfree = (drv_res){0, 0, 0};
    for (int32_t n = 0; n < st->nnodes; n++)
        if (st->nodes[n].schedulable)
            s->maxfree = drv_res_max(s->maxfree, s->free[n]);
}

static int prepare(drv_sched *s, const drv_state *st)
{
    /* Everything is allocated before a node is read: a failure leaves the overlay as the
     * last cycle left it, and resync makes the next prepare read every node. */
    if (grow_arrays(s, st) != 0) {
        s->resync = true;
        return DRV_ENOMEM;
    }
    for (int32_t q = 0; q < st->nqueues; q++)
        s->qused[q] = st->queues[q].used;
    bool whole = s->resync || s->seen_st != st || st->node_clock < s->seen_clock;
    /* Failed gang shapes stay valid while no node has more room than when the last cycle
     * ended (kube-scheduler keeps unschedulable pods aside until capacity is freed). */
    if (sync_nodes(s, st, whole))
        cycle_memo_forget(s);
    s->stamp++;
    cycle_map_clear(&s->pod_node);
    cycle_map_clear(&s->job_workers);
    drv_arena_reset(&s->arena);
    bool synced = s->ix_synced;
    s->ix_ok = s->ix_synced = false; /* until index_nodes: nodes were read, the index not */
    if (cycle_cons_refresh(s, st) != 0)
        return DRV_ENOMEM;
    s->ix_synced = synced;
    index_nodes(s, st, whole);
    return 0;
}

/* After a cycle: the nodes its standing decisions changed in the overlay, which the next
 * prepare reads again from the state whether or not the driver applied them. */
static void note_overlay(drv_sched *s, const drv_decisions *out, int32_t base)
{
    s->nodirty = 0;
    if (drv_grow(&s->odirty, sizeof *s->odirty, &s->cap_odirty, 2 * (out->n - base)) != 0) {
        s->resync = true; /* not known: read every node next time */
        return;
    }
    for (int32_t i = base; i < out->n; i++) {
        if (out->v[i].node >= 0)
            s->odirty[s->nodirty++] = out->v[i].node;
        if (out->v[i].from >= 0)
            s->odirty[s->nodirty++] = out->v[i].from;
    }
}

/* Phases 2-6: admit (placing pods through filter and score), scale, reallocate, migrate - each
 * point's plugins in profile order, until an allocation fails. */
static void run_points(drv_ctx *c, const int32_t *pend, int32_t npend)
{
    drv_sched *s = c->s;
    const drv_profile *pr = s->prof;
    for (int i = 0; i < pr->nuse[DRV_PT_ADMIT] && !c->err; i++)
        pr->use[DRV_PT_ADMIT][i].p->admit(c, s->ustate[DRV_PT_ADMIT][i], pend, npend);
    for (int i = 0; i < pr->nuse[DRV_PT_SCALE] && !c->err; i++)
        pr->use[DRV_PT_SCALE][i].p->scale(c, s->ustate[DRV_PT_SCALE][i]);
    for (int i = 0; i < pr->nuse[DRV_PT_REALLOCATE] && !c->err; i++)
        pr->use[DRV_PT_REALLOCATE][i].p->reallocate(c, s->ustate[DRV_PT_REALLOCATE][i]);
    for (int i = 0; i < pr->nuse[DRV_PT_MIGRATE] && !c->err; i++)
        pr->use[DRV_PT_MIGRATE][i].p->migrate(c, s->ustate[DRV_PT_MIGRATE][i]);
}

/* Phase 7, wake: after a cycle that decided nothing, the earliest time any plugin could decide
 * something on this state - each plugin asked once, however many points it fills. A cycle that
 * decided something changed the state: the next one must run. */
static void ask_wake(drv_ctx *c)
{
    drv_sched *s = c->s;
    s->wake = -INFINITY;
    s->blind = false;
    if (c->err || c->out->n != c->base)
        return;
    s->wake = INFINITY;
    s->blind = true;
    for (int32_t k = 0; k < s->ninst; k++) {
        const drv_plugin *p = s->inst[k].p;
        double w = p->wake ? p->wake(c, s->inst[k].state) : p->timeless ? INFINITY : -INFINITY;
        if (w < s->wake)
            s->wake = w;
        if (s->blind)
            s->blind = p->starts_blind && p->starts_blind(c, s->inst[k].state);
    }
}

int drv_sched_cycle(drv_sched *s, const drv_snapshot *snap, drv_decisions *out)
{
    if (prepare(s, snap->st) != 0)
        return DRV_ENOMEM;
    drv_ctx c = {.s = s, .snap = snap, .out = out, .base = out->n};
    /* 1. queue_order: the queued jobs (phase pending, some wanted pod unbound), most urgent
     * first. */
    int32_t *pend, npend;
    if (cycle_order_queue(&c, &pend, &npend) != 0)
        return DRV_ENOMEM;
    run_points(&c, pend, npend); /* 2-6 */
    ask_wake(&c);                /* 7 */
    note_overlay(s, out, c.base);
    if (c.err) /* a shape found failing while an allocation failed may not fail: forget all */
        cycle_memo_forget(s);
    return c.err;
}

double drv_sched_wake(const drv_sched *s)
{
    return s->wake;
}

bool drv_sched_starts_blind(const drv_sched *s)
{
    return s->blind;
}

bool drv_starts_blind(const drv_ctx *c, void *state)
{
    (void)c;
    (void)state;
    return true;
}

double drv_ctx_period(const drv_ctx *c)
{
    return c->s->prof->period;
}

const drv_job *drv_ctx_job_now(const drv_ctx *c, int32_t job)
{
    if (c->snap->steps_now)
        c->snap->steps_now(c->snap->sync_arg, job);
    return &c->snap->st->jobs[job];
}

const drv_job *drv_ctx_progress(const drv_ctx *c, int32_t job)
{
    const drv_job *jb = drv_ctx_job_now(c, job);
    if (c->snap->sync)
        c->snap->sync(c->snap->sync_arg, job);
    return jb;
}
