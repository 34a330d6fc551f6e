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

/* Runs each distinct plugin's init once, however many points it fills, and points every use
 * at its plugin's state. On failure the plugins made so far are finished (cycle_plugins_fini)
 * and d names the plugin. */
static int plugins_init(cycle_plugins *pl, const drv_profile *prof, drv_diag *d)
{
    *pl = (cycle_plugins){0};
    for (int pt = 0; pt < DRV_NPOINTS; pt++) {
        for (int i = 0; i < prof->nuse[pt]; i++) {
            const drv_plugin_use *u = &prof->use[pt][i];
            int32_t k = 0;
            while (k < pl->n && pl->inst[k].p != u->p)
                k++;
            if (k == pl->n && u->p->init) {
                drv_diag pd = {{0}};
                int rc = u->p->init(&pl->inst[k].state, drv_profile_knobs(prof, u), u->nknobs, &pd);
                if (rc)
                    return drv_fail(d, rc, "profile %s: plugin %s: %s", prof->name, u->p->name,
                                    pd.msg);
            }
            if (k == pl->n)
                pl->inst[pl->n++].p = u->p;
            pl->ustate[pt][i] = pl->inst[k].state;
        }
    }
    return 0;
}

static void plugins_fini(cycle_plugins *pl)
{
    for (int32_t k = 0; k < pl->n; k++)
        if (pl->inst[k].p->fini)
            pl->inst[k].p->fini(pl->inst[k].state);
    *pl = (cycle_plugins){0};
}

/* Whether and how placement may use the best-node index: with no filters and either one keyed
 * score alone (best by key), or scores that all have bounds, at most one of them keyed (branch
 * and bound). Makes the index when it applies. 0 or DRV_ENOMEM. */
static int index_init(cycle_index *x, const drv_profile *pr)
{
    *x = (cycle_index){0};
    int keyed = 0, bounded = 0, mixed = 0, summary = 0, nscore = pr->nuse[DRV_PT_SCORE];
    drv_node_key_fn key = NULL;
    for (int i = 0; i < nscore; i++) {
        const drv_plugin *p = pr->use[DRV_PT_SCORE][i].p;
        if (p->node_key) {
            keyed++;
            key = p->node_key;
        }
        bounded += p->score_bound != NULL;
        mixed += p->bound_mixed;
        summary += p->score_by_summary;
    }
    if (pr->nuse[DRV_PT_FILTER] == 0 && keyed == 1 && nscore == 1) {
        x->use = true;
        x->bb = false;
        x->fam = 1;
        x->key = key;
    } else if (pr->nuse[DRV_PT_FILTER] == 0 && nscore > 0 && bounded == nscore && keyed <= 1) {
        x->use = true;
        x->bb = true;
        x->fam = DRV_IX_FAMILIES;
        x->mixed = mixed == nscore;
        x->summary = summary == nscore;
        x->key = key;
    }
    if (x->use && !(x->ix = drv_nodeindex_new()))
        return DRV_ENOMEM;
    return 0;
}

static void index_fini(cycle_index *x)
{
    drv_nodeindex_free(x->ix);
    *x = (cycle_index){0};
}

int drv_sched_new(const drv_profile *prof, drv_sched **out, drv_diag *d)
{
    if (prof->nuse[DRV_PT_ADMIT] == 0)
        return drv_fail(d, DRV_EINVAL, "profile %s: no admit plugin", prof->name);
    drv_sched *s = drv_calloc(1, sizeof *s);
    if (!s)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    s->prof = prof;
    drv_arena_init(&s->arena, 256 * 1024);
    cycle_assumed_init(&s->assumed);
    cycle_follow_init(&s->follow);
    cycle_memo_init(&s->memo);
    cycle_own_init(&s->own);
    cycle_queue_init(&s->queue);
    cons_table_init(&s->cons);
    topo_table_init(&s->topo);
    int rc = plugins_init(&s->plug, prof, d);
    if (!rc && index_init(&s->index, prof) != 0)
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
    if (rc) {
        drv_sched_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void drv_sched_set_exhaustive(drv_sched *s, bool on)
{
    s->index.exhaustive = on;
}

bool drv_sched_indexed(const drv_sched *s)
{
    return s->index.use;
}

void drv_sched_free(drv_sched *s)
{
    if (!s)
        return;
    plugins_fini(&s->plug);
    index_fini(&s->index);
    cycle_assumed_fini(&s->assumed);
    cycle_follow_fini(&s->follow);
    cycle_memo_fini(&s->memo);
    cycle_own_fini(&s->own);
    cycle_queue_fini(&s->queue);
    cons_table_fini(&s->cons);
    topo_table_fini(&s->topo);
    drv_arena_fini(&s->arena);
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
    return c->s->assumed.free[node];
}

int32_t drv_ctx_pod_node(const drv_ctx *c, int32_t pod)
{
    return cycle_pod_node(c, pod);
}

drv_res drv_ctx_queue_used(const drv_ctx *c, int32_t queue)
{
    return c->snap->st->nqueues > 0 ? c->s->assumed.qused[queue] : (drv_res){0, 0, 0};
}

int32_t drv_ctx_workers(const drv_ctx *c, int32_t job)
{
    return cycle_map_get(&c->s->assumed.job_workers, job,
                         c->snap->st->jobs[job].target[DRV_ROLE_WORKER]);
}

int32_t drv_ctx_node_role_pods(const drv_ctx *c, int32_t node, int role)
{
    return c->s->assumed.nrole[node * DRV_NROLES + role];
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
    if (drv_grow(&s->assumed.free, sizeof *s->assumed.free, &s->assumed.cap_free, st->nnodes) !=
            0 ||
        grow_zeroed(&s->assumed.job_touch, sizeof *s->assumed.job_touch, &s->assumed.cap_touch,
                    st->njobs) != 0 ||
        grow_zeroed(&s->memo.job, sizeof *s->memo.job, &s->memo.cap_job, st->njobs) != 0)
        return DRV_ENOMEM;
    /* own.seen and rmark grow zeroed, each at once: new entries are never equal to a tag in
     * use, even when a later allocation here fails and prepare is retried */
    if (drv_grow(&s->assumed.nrole, sizeof *s->assumed.nrole, &s->assumed.cap_nrole,
                 st->nnodes * DRV_NROLES) != 0 ||
        grow_zeroed(&s->own.seen, sizeof *s->own.seen, &s->own.cap_seen, st->nnodes) != 0 ||
        grow_zeroed(&s->follow.rmark, sizeof *s->follow.rmark, &s->follow.cap_rmark, st->nnodes) !=
            0 ||
        drv_grow(&s->follow.rnodes, sizeof *s->follow.rnodes, &s->follow.cap_rnodes, st->nnodes) !=
            0 ||
        drv_grow(&s->own.node, sizeof *s->own.node, &s->own.cap, st->nnodes) != 0 ||
        drv_grow(&s->assumed.qused, sizeof *s->assumed.qused, &s->assumed.cap_qused, st->nqueues) !=
            0 ||
        drv_grow(&s->follow.admits, sizeof *s->follow.admits, &s->follow.cap_admits, st->nnodes) !=
            0)
        return DRV_ENOMEM;
    for (int32_t n = s->follow.nodes; n < st->nnodes; n++) {
        s->assumed.free[n] = (drv_res){0, 0, 0};
        s->follow.admits[n] = (node_admits){0, false};
        memset(s->assumed.nrole + n * DRV_NROLES, 0, sizeof *s->assumed.nrole * DRV_NROLES);
    }
    return 0;
}

/* Reads node n again from the state (once per prepare: rmark), keeping totfree the exact sum
 * of free[] over the nodes follow.admits says are schedulable, and lists it in rnodes when its
 * free room or PS count differ from the end of the last cycle (what the index holds: a
 * decision the driver applied leaves both as they were). Returns whether it may admit more
 * than at the end of the last cycle: more room in some dimension, or its class or schedulable
 * flag changed (relabelled, retainted, cordoned or uncordoned). */
static bool sync_node(drv_sched *s, const drv_state *st, int32_t n)
{
    if (s->follow.rmark[n] == s->follow.rtag)
        return false;
    s->follow.rmark[n] = s->follow.rtag;
    const drv_node *nd = &st->nodes[n];
    drv_res f = drv_node_free(nd);
    if (memcmp(&f, &s->assumed.free[n], sizeof f) != 0 ||
        nd->nrole[DRV_ROLE_PS] != s->assumed.nrole[n * DRV_NROLES + DRV_ROLE_PS])
        s->follow.rnodes[s->follow.nrnodes++] = n;
    node_admits *was = &s->follow.admits[n];
    bool grew = !drv_res_fits(f, s->assumed.free[n]) || nd->node_class != was->node_class ||
                nd->schedulable != was->schedulable;
    if (was->schedulable)
        s->assumed.totfree = drv_res_sub(s->assumed.totfree, s->assumed.free[n]);
    if (nd->schedulable)
        s->assumed.totfree = drv_res_add(s->assumed.totfree, f);
    s->assumed.free[n] = f;
    *was = (node_admits){nd->node_class, nd->schedulable};
    memcpy(s->assumed.nrole + n * DRV_NROLES, nd->nrole, sizeof nd->nrole);
    return grew;
}

/*
 * Brings free[], nrole, follow.admits and totfree up to the state. Between two cycles on the
 * same state a node can differ from it only if the state changed it (its change list, read
 * from follow.clock) or the last cycle's standing decisions changed it in the overlay (odirty;
 * rolled-back ones restored it exactly): only those are read, so the cost follows what
 * changed. Any other state, or after a failure, every node is. Exactness of the memo rule:
 * a node not read has the free room and class it had at the end of the last cycle, so it
 * cannot have "grown"; every node that could is compared as before. Returns whether some
 * node may admit more than at the end of the last cycle (or nodes were added).
 */
static bool sync_nodes(drv_sched *s, const drv_state *st, bool whole)
{
    bool grew = st->nnodes != s->follow.nodes;
    if (++s->follow.rtag == 0) { /* wrapped: no mark may look current */
        memset(s->follow.rmark, 0, (size_t)s->follow.cap_rmark * sizeof *s->follow.rmark);
        s->follow.rtag = 1;
    }
    s->follow.nrnodes = 0;
    if (whole) {
        for (int32_t n = 0; n < st->nnodes; n++)
            grew |= sync_node(s, st, n);
        s->assumed.totfree =
            (drv_res){0, 0, 0}; /* summed afresh: the old sum may be of other nodes */
        for (int32_t n = 0; n < st->nnodes; n++)
            if (st->nodes[n].schedulable)
                s->assumed.totfree = drv_res_add(s->assumed.totfree, s->assumed.free[n]);
    } else {
        for (int32_t i = 0; i < s->follow.nodirty; i++)
            grew |= sync_node(s, st, s->follow.odirty[i]);
        DRV_FOR_NODES_CHANGED(st, s->follow.clock, n)
        grew |= sync_node(s, st, n);
    }
    s->follow.nodirty = 0;
    s->follow.st = st;
    s->follow.clock = st->node_clock;
    s->follow.nodes = st->nnodes;
    s->follow.resync = false;
    return grew;
}

/* The index for this cycle: refreshed for the nodes sync_nodes read when it followed every
 * change since it was last built for these node types, else built (which regroups only when
 * the types changed). Then maxfree, exact: the index's summary of the schedulable nodes'
 * free room, or without an index a pass over the nodes (whose placement scans them anyway). */
static void index_nodes(drv_sched *s, const drv_state *st, bool whole)
{
    s->index.ok = false;
    /* With topology levels on racks or zones, a domain's nodes are a look-up in those families
     * (cycle_topo.c): they are built whatever the scores need. */
    int nfam = st->ntopo > 0 ? DRV_IX_FAMILIES : s->index.fam;
    if (s->index.use && !s->index.exhaustive) {
        int rc = !whole && s->index.synced && s->index.epoch == st->node_epoch
                     ? drv_nodeindex_refresh(
                           s->index.ix, st, s->assumed.free, s->assumed.nrole + DRV_ROLE_PS,
                           DRV_NROLES, s->index.key, nfam, s->follow.rnodes, s->follow.nrnodes)
                     : drv_nodeindex_build(s->index.ix, st, s->assumed.free,
                                           s->assumed.nrole + DRV_ROLE_PS, DRV_NROLES, s->index.key,
                                           nfam);
        s->index.ok = rc == 0;
        s->index.epoch = st->node_epoch;
    }
    s->index.synced = s->index.ok;
    s->index.nodes = 0;
    for (int32_t g = 0; s->index.ok && g < drv_nodeindex_groups(s->index.ix, DRV_IX_GLOBAL); g++)
        s->index.nodes += drv_nodeindex_group_nodes(s->index.ix, DRV_IX_GLOBAL, g);
    if (s->index.ok) {
        s->assumed.maxfree = drv_nodeindex_maxfree(s->index.ix);
        return;
    }
    s->assumed.maxfree = (drv_res){0, 0, 0};
    for (int32_t n = 0; n < st->nnodes; n++)
        if (st->nodes[n].schedulable)
            s->assumed.maxfree = drv_res_max(s->assumed.maxfree, s->assumed.free[n]);
}

static int prepare(drv_sched *s, const drv_state *st)
{
    /* Everything is allocated before a node is read: a failure leaves the overlay as the
     * last cycle left it, and resync makes the next prepare read every node. */
    if (grow_arrays(s, st) != 0) {
        s->follow.resync = true;
        return DRV_ENOMEM;
    }
    for (int32_t q = 0; q < st->nqueues; q++)
        s->assumed.qused[q] = st->queues[q].used;
    bool whole = s->follow.resync || s->follow.st != st || st->node_clock < s->follow.clock;
    /* Failed gang shapes stay valid while no node has more room than when the last cycle
     * ended (kube-scheduler keeps unschedulable pods aside until capacity is freed). */
    if (sync_nodes(s, st, whole))
        cycle_memo_forget(s);
    s->stamp++;
    cycle_map_clear(&s->assumed.pod_node);
    cycle_map_clear(&s->assumed.job_workers);
    drv_arena_reset(&s->arena);
    bool synced = s->index.synced;
    s->index.ok = s->index.synced = false; /* until index_nodes: nodes were read, the index not */
    if (cycle_cons_refresh(s, st) != 0 || cycle_topo_refresh(s, st) != 0)
        return DRV_ENOMEM;
    s->index.synced = synced;
    index_nodes(s, st, whole);
    return 0;
}

/* After a cycle: the nodes its standing decisions changed in the overlay, which the next
 * prepare reads again from the state whether or not the driver applied them. */
static void note_overlay(drv_sched *s, const drv_decisions *out, int32_t base)
{
    s->follow.nodirty = 0;
    if (drv_grow(&s->follow.odirty, sizeof *s->follow.odirty, &s->follow.cap_odirty,
                 2 * (out->n - base)) != 0) {
        s->follow.resync = true; /* not known: read every node next time */
        return;
    }
    for (int32_t i = base; i < out->n; i++) {
        if (out->v[i].node >= 0)
            s->follow.odirty[s->follow.nodirty++] = out->v[i].node;
        if (out->v[i].from >= 0)
            s->follow.odirty[s->follow.nodirty++] = out->v[i].from;
    }
}

/* Phases 2-6: admit (placing pods through filter and score), scale, reallocate, migrate - each
 * point's plugins in profile order, until the cycle fails. A plugin whose arena allocation
 * failed fails the cycle even when it did not say so (a void callback has no other way to). */
static void run_points(drv_ctx *c, const int32_t *pend, int32_t npend)
{
    drv_sched *s = c->s;
    const drv_profile *pr = s->prof;
    static const int points[] = {DRV_PT_ADMIT, DRV_PT_SCALE, DRV_PT_REALLOCATE, DRV_PT_MIGRATE};
    for (size_t k = 0; k < sizeof points / sizeof points[0]; k++) {
        int pt = points[k];
        for (int i = 0; i < pr->nuse[pt] && !s->fault.code; i++) {
            const drv_plugin *p = pr->use[pt][i].p;
            void *state = s->plug.ustate[pt][i];
            cycle_running(s, p, pt);
            if (pt == DRV_PT_ADMIT)
                p->admit(c, state, pend, npend);
            else if (pt == DRV_PT_SCALE)
                p->scale(c, state);
            else if (pt == DRV_PT_REALLOCATE)
                p->reallocate(c, state);
            else
                p->migrate(c, state);
            if (s->arena.failed)
                drv_ctx_fail(c, DRV_ENOMEM);
            cycle_running(s, NULL, -1);
        }
    }
}

/* Phase 7, wake: after a cycle that decided nothing, the earliest time any plugin could decide
 * something on this state - each plugin asked once, however many points it fills. A cycle that
 * decided something changed the state: the next one must run. */
static void ask_wake(drv_ctx *c)
{
    drv_sched *s = c->s;
    s->wake = -INFINITY;
    s->blind = false;
    if (s->fault.code || c->out->n != c->base)
        return;
    s->wake = INFINITY;
    s->blind = true;
    for (int32_t k = 0; k < s->plug.n; k++) {
        const drv_plugin *p = s->plug.inst[k].p;
        cycle_running(s, p, -1);
        double w = p->wake ? p->wake(c, s->plug.inst[k].state) : p->timeless ? INFINITY : -INFINITY;
        if (w < s->wake)
            s->wake = w;
        if (s->blind)
            s->blind = p->starts_blind && p->starts_blind(c, s->plug.inst[k].state);
        cycle_running(s, NULL, -1);
    }
}

int drv_sched_cycle(drv_sched *s, const drv_snapshot *snap, drv_decisions *out)
{
    cycle_fault_init(&s->fault);
    drv_ctx c = {.s = s, .snap = snap, .out = out, .base = out->n};
    if (prepare(s, snap->st) != 0)
        return drv_ctx_fail(&c, DRV_ENOMEM);
    /* 1. queue_order: the queued jobs (phase pending, some wanted pod unbound), most urgent
     * first. */
    int32_t *pend, npend;
    int rc = cycle_order_queue(&c, &pend, &npend);
    if (rc)
        return drv_ctx_fail(&c, rc);
    run_points(&c, pend, npend); /* 2-6 */
    ask_wake(&c);                /* 7 */
    note_overlay(s, out, c.base);
    if (s->fault.code) /* a shape found failing while the cycle failed may not fail: forget all */
        cycle_memo_forget(s);
    return s->fault.code;
}

int drv_ctx_fail(const drv_ctx *c, int code)
{
    cycle_fault *f = &c->s->fault;
    if (code < 0 && f->code == 0) {
        f->code = code;
        f->plugin = f->running;
        f->point = f->running ? f->running_point : -1;
    }
    return code;
}

int drv_ctx_error(const drv_ctx *c)
{
    return c->s->fault.code;
}

const drv_plugin *drv_sched_failed_in(const drv_sched *s, int *point)
{
    if (point)
        *point = s->fault.code ? s->fault.point : -1;
    return s->fault.code ? s->fault.plugin : NULL;
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
