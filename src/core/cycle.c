/*
 * cycle.c - runs one scheduling cycle (docs/cycle.md) and implements the helpers plugins call.
 *
 * The cycle never changes the drv_state it is given: what its decisions would do is kept in an
 * assumed overlay (cycle_int.h says how). A cycle is a list of phases: prepare the overlay,
 * order the queue (below), run the admit, scale, reallocate and migrate plugins (which
 * decide through cycle_decide.c and place through cycle_place.c), then ask the plugins when
 * the next cycle could decide anything.
 */
#include "cycle_int.h"

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
    drv_free(s->order2);
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
            s->maxfree = cycle_res_max(s->maxfree, s->free[n]);
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

/* ---- the queue (phase 1) ------------------------------------------------------------------
 *
 * The records of last cycle's queue are kept (s->order) and collected again in that order, so
 * a queue whose order did not change costs one pass; with a lone keyed queue_order plugin the
 * jobs are ordered by (key, submit time, id) read from the records, with no call per
 * comparison. Here, not in a file of its own, so that the compiler can fold it into
 * drv_sched_cycle: apart, the cycle cost 3 % more CPU on the Philly replay. */

/* A record for job: its order (key 0 until asked), and in a qfit entry taken for it what
 * drv_ctx_queue_stuck needs, which a job's specification fixes (roles other than workers keep
 * their replicas as targets). Needs a free entry (qfit_room). */
static qent make_qent(drv_sched *s, const drv_state *st, int32_t job)
{
    const drv_job *j = &st->jobs[job];
    int32_t t = s->nqfree > 0 ? s->qfree[--s->nqfree] : s->nqfit++;
    qfit *f = &s->qfit[t];
    qfit e = {
        {INT64_MAX, INT64_MAX, INT64_MAX}, {0, 0, 0}, {0, 0, 0}, j->role[DRV_ROLE_WORKER].min >= 1};
    for (int r = 0; r < DRV_NROLES; r++) {
        const drv_rolespec *rs = &j->role[r];
        if (r != DRV_ROLE_WORKER && rs->replicas > 0)
            e.has_pod = true;
        if (rs->replicas > 0 || rs->max > 0) {
            e.least.cpu = rs->req.cpu < e.least.cpu ? rs->req.cpu : e.least.cpu;
            e.least.mem = rs->req.mem < e.least.mem ? rs->req.mem : e.least.mem;
            e.least.gpu = rs->req.gpu < e.least.gpu ? rs->req.gpu : e.least.gpu;
        }
        int32_t pods = j->target[r];
        if (r == DRV_ROLE_WORKER && rs->min < pods)
            pods = rs->min;
        if (pods > 0) {
            e.floor = drv_res_add(e.floor, drv_res_scale(rs->req, pods));
            e.podmax = cycle_res_max(e.podmax, rs->req);
        }
    }
    *f = e;
    return (qent){0,
                  j->submit,
                  job,
                  t,
                  e.podmax.gpu < INT32_MAX ? (int32_t)e.podmax.gpu : INT32_MAX,
                  e.floor.gpu < INT32_MAX ? (int32_t)e.floor.gpu : INT32_MAX};
}

/* Room for n records' entries in all: every entry handed out is in use by a record or free. 0
 * or DRV_ENOMEM. */
static int qfit_room(drv_sched *s, int32_t n)
{
    if (n < s->nqfit)
        n = s->nqfit;
    if (drv_grow(&s->qfit, sizeof *s->qfit, &s->cap_qfit, n) != 0 ||
        drv_grow(&s->qfree, sizeof *s->qfree, &s->cap_qfree, n) != 0)
        return DRV_ENOMEM;
    return 0;
}

static int queue_cmp(const drv_ctx *c, int32_t a, int32_t b)
{
    const drv_profile *pr = c->s->prof;
    for (int i = 0; i < c->s->nqo; i++) { /* the chain, idle plugins left out */
        const drv_plugin *p = pr->use[DRV_PT_QUEUE_ORDER][c->s->qo[i]].p;
        int r;
        if (p->queue_key) { /* keys were asked once this cycle (sort_by_plugins) */
            double ka = c->s->qkey[i][a], kb = c->s->qkey[i][b];
            r = ka < kb ? -1 : ka > kb ? 1 : 0;
        } else {
            r = p->queue_cmp(c, c->s->ustate[DRV_PT_QUEUE_ORDER][c->s->qo[i]], a, b);
        }
        if (r)
            return r;
    }
    const drv_job *ja = &c->snap->st->jobs[a], *jb = &c->snap->st->jobs[b];
    if (ja->submit != jb->submit)
        return ja->submit < jb->submit ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Stable merge sort with a context (qsort_r is not standard C). */
static void merge_sort(const drv_ctx *c, int32_t *v, int32_t *tmp, int32_t n)
{
    if (n < 2)
        return;
    int32_t h = n / 2;
    merge_sort(c, v, tmp, h);
    merge_sort(c, v + h, tmp, n - h);
    if (queue_cmp(c, v[h - 1], v[h]) <= 0)
        return; /* already in order: queues usually are, so a sort is often O(n) */
    int32_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = queue_cmp(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

/* queue_cmp for a lone keyed plugin, on records. */
static int qent_cmp(const qent *a, const qent *b)
{
    if (a->key < b->key)
        return -1;
    if (a->key > b->key)
        return 1;
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    return a->job < b->job ? -1 : a->job > b->job;
}

/*
 * Sorts v[0..n), indices of records, by qent_cmp: one pass finds the ascending runs (v[0..from)
 * is known to be one), then neighbouring runs are merged pairwise until one is left. O(n) for
 * a queue in order, O(n log r) for r runs: a few newcomers placed, or a few keys that moved
 * after the bounds changed, cost a few runs, not a sort of the whole queue. The order is total
 * (ties go by submit time, then id): any sort gives the same. tmp needs n, run n + 1 entries.
 */
static void natural_sort_idx(const qent *rec, int32_t *v, int32_t *tmp, int32_t *run, int32_t n,
                             int32_t from)
{
    int32_t nr = 0;
    run[nr++] = 0;
    for (int32_t i = from > 1 ? from : 1; i < n; i++)
        if (qent_cmp(&rec[v[i - 1]], &rec[v[i]]) > 0)
            run[nr++] = i;
    run[nr] = n;
    int32_t *a = v, *b = tmp;
    while (nr > 1) {
        int32_t k = 0;
        for (int32_t r = 0; r < nr; r += 2) {
            int32_t lo = run[r], mid = run[r + 1], hi = r + 2 <= nr ? run[r + 2] : mid;
            int32_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                b[o++] = qent_cmp(&rec[a[j]], &rec[a[i]]) < 0 ? a[j++] : a[i++];
            while (i < mid)
                b[o++] = a[i++];
            while (j < hi)
                b[o++] = a[j++];
            run[k++] = lo;
        }
        run[k] = n;
        nr = k;
        int32_t *t = a;
        a = b;
        b = t;
    }
    if (a != v)
        memcpy(v, a, (size_t)n * sizeof *v);
}

/* Is every record's least request above `free` in dimension d (0 cpu, 1 mem, 2 gpu)? Stops at
 * the first that is not: when something fits, that is usually the queue's first job. */
/* Folds a record's entry into the summary over the records (drv_sched.qsum_least). */
static void qsum_add(drv_sched *s, const qfit *f)
{
    s->qsum_least.cpu = f->least.cpu < s->qsum_least.cpu ? f->least.cpu : s->qsum_least.cpu;
    s->qsum_least.mem = f->least.mem < s->qsum_least.mem ? f->least.mem : s->qsum_least.mem;
    s->qsum_least.gpu = f->least.gpu < s->qsum_least.gpu ? f->least.gpu : s->qsum_least.gpu;
    s->qsum_pods = s->qsum_pods && f->has_pod;
}

/* The summary computed again over every record: O(records). */
static void qsum_build(drv_sched *s)
{
    s->qsum_least = (drv_res){INT64_MAX, INT64_MAX, INT64_MAX};
    s->qsum_pods = true;
    for (int32_t i = 0; i < s->norder; i++)
        qsum_add(s, &s->qfit[s->order[i].fit]);
    s->qsum_ok = true;
}

bool drv_ctx_queue_stuck(const drv_ctx *c)
{
    drv_sched *s = c->s;
    if (c->out->n != c->base || s->norder == 0 || c->snap->st->nqueued_bound != 0)
        return false;
    if (!s->qsum_ok)
        qsum_build(s);
    const drv_res *m = &s->maxfree, *l = &s->qsum_least;
    if (l->gpu <= m->gpu && l->cpu <= m->cpu && l->mem <= m->mem)
        return false; /* in each dimension some pod fits: no pod is shown not to fit */
    return s->qsum_pods;
}

bool drv_ctx_queued_cannot_fit(const drv_ctx *c, int32_t i, int32_t job)
{
    const drv_sched *s = c->s;
    const drv_state *st = c->snap->st;
    if (i < 0 || i >= s->norder)
        return false;
    const qent *r = &s->order[i];
    if (r->job != job || (s->touch_stamp == s->stamp && s->job_touch[job] == s->stamp) ||
        (st->nqueued_bound > 0 && (st->queued_bound.bits[job / 64] >> (job % 64)) & 1))
        return false; /* not the cycle's queue, or pods of it bound or moved: its gang is less */
    if (r->gpu_podmax > s->maxfree.gpu || r->gpu_floor > s->totfree.gpu)
        return true; /* the GPUs alone: no read of the entry */
    const qfit *e = &s->qfit[r->fit];
    return !drv_res_fits(e->podmax, s->maxfree) || !drv_res_fits(e->floor, s->totfree);
}

/* Marks job as having a record (in) or not in s->inq. */
static inline void inq_put(drv_sched *s, int32_t job, bool in)
{
    uint64_t bit = (uint64_t)1 << (job % 64);
    if (in)
        s->inq[job / 64] |= bit;
    else
        s->inq[job / 64] &= ~bit;
}

/* A record dropped: its job has none, its qfit entry is free. */
static void drop_record(drv_sched *s, const drv_state *st, const qent *e)
{
    if (e->job < st->njobs)
        inq_put(s, e->job, false);
    s->qfree[s->nqfree++] = e->fit;
    s->qsum_ok = false;
}

/* Last cycle's records less the jobs that left the queue, in their order: O(records), or O(1)
 * when no job left the queue since they were collected (most cycles: nothing was admitted). */
static int32_t keep_records(drv_sched *s, const drv_state *st)
{
    if (s->order_st == st && s->order_leaves == st->queue_leaves && s->norder <= st->nqueued)
        return s->norder;
    int32_t nq = st->nqueued;
    qent *rec = s->order;
    int32_t npend = 0, i = 0;
    const uint64_t *qbits = st->queued.bits; /* drv_state_is_queued, inline */
    for (; i < s->norder && npend < nq; i++)
        if (rec[i].job < st->njobs && (qbits[rec[i].job / 64] >> (rec[i].job % 64)) & 1) {
            if (npend != i)
                rec[npend] = rec[i];
            npend++;
        } else {
            drop_record(s, st, &rec[i]); /* left the queue */
        }
    for (; i < s->norder; i++) /* all queued jobs found: the rest left */
        drop_record(s, st, &rec[i]);
    return npend;
}

/* Collects the queued jobs into s->order: last cycle's records of jobs still queued, in their
 * order (keep_records), then newcomers in id order. The queue order is a total order (ties go
 * by submit time, then id), so the sorted result does not depend on the order jobs are
 * collected in. The queued set says which are still queued without reading the jobs; records
 * stay in place. The newcomers are the queued set less the jobs with a record (s->inq), a word
 * at a time over the set's non-empty words: O(records + queued / 64 + jobs / 4096), the first
 * term only when some job left the queue. Returns how many came from last cycle's queue. Needs
 * s->inq to cover every job. */
static int32_t collect(drv_sched *s, const drv_state *st)
{
    int32_t nq = st->nqueued;
    qent *rec = s->order;
    const uint64_t *qbits = st->queued.bits;
    int32_t npend = keep_records(s, st);
    s->norder = npend;
    s->order_st = st;
    s->order_leaves = st->queue_leaves;
    int32_t nold = npend;
    int32_t nw = (st->njobs + 63) / 64;
    for (int32_t sw = 0; sw < (nw + 63) / 64 && npend < nq; sw++)
        for (uint64_t sb = st->queued.sum[sw]; sb && npend < nq; sb &= sb - 1) {
            int32_t w = sw * 64 + __builtin_ctzll(sb);
            for (uint64_t b = w < nw ? qbits[w] & ~s->inq[w] : 0; b && npend < nq; b &= b - 1) {
                int32_t j = w * 64 + __builtin_ctzll(b);
                rec[npend] = make_qent(s, st, j);
                if (s->qsum_ok)
                    qsum_add(s, &s->qfit[rec[npend].fit]);
                npend++;
                inq_put(s, j, true);
            }
        }
    s->norder = npend;
    return nold;
}

/* A lone keyed plugin: orders the records by (key, submit, id). Keys of jobs queued last cycle
 * (the first nold) are kept when the plugin says they did not change: then only newcomers are
 * asked. Returns true when the records are in order already, else fills idx with the sorted
 * order of record indices. */
static bool sort_keyed(drv_ctx *c, const drv_plugin *q0, void *q0s, int32_t nold, bool was_keyed,
                       int32_t *idx, int32_t *tmp, int32_t *run)
{
    qent *rec = c->s->order;
    int32_t npend = c->s->norder;
    bool kept = was_keyed && q0->queue_kept && q0->queue_kept(c, q0s);
    for (int32_t i = kept ? nold : 0; i < npend; i++)
        rec[i].key = q0->queue_key(c, q0s, rec[i].job);
    /* Most cycles collect the queue already in order: the merge sort would then only compare
     * each boundary and merge nothing - the same as this one pass. With the keys kept, the
     * first nold records are last cycle's sorted queue less the jobs that left, still in
     * order (a subsequence of a sorted list is sorted): only the newcomers are checked. */
    bool sorted = true;
    int32_t from = kept && nold > 1 ? nold : 1, i = from;
    for (; i < npend && sorted; i++)
        sorted = qent_cmp(&rec[i - 1], &rec[i]) <= 0;
    if (!sorted) {
        for (int32_t k = 0; k < npend; k++)
            idx[k] = k;
        natural_sort_idx(rec, idx, tmp, run, npend, i - 1); /* in order before the descent */
    }
    return sorted;
}

/* Any other queue_order: sorts the job ids with the plugins' comparison (each keyed plugin's
 * keys asked once per job, in the order queue_begin was handed the jobs), then rebuilds the
 * records in that order. 0 or DRV_ENOMEM. */
static int sort_by_plugins(drv_ctx *c, int32_t *pend, int32_t *tmp)
{
    drv_sched *s = c->s;
    const drv_state *st = c->snap->st;
    int32_t npend = s->norder;
    for (int i = 0; i < s->nqo; i++) {
        const drv_plugin *p = s->prof->use[DRV_PT_QUEUE_ORDER][s->qo[i]].p;
        void *ps = s->ustate[DRV_PT_QUEUE_ORDER][s->qo[i]];
        if (!p->queue_key)
            continue;
        if (drv_grow(&s->qkey[i], sizeof *s->qkey[i], &s->cap_qkey[i], st->njobs) != 0)
            return DRV_ENOMEM;
        for (int32_t k = 0; k < npend; k++)
            s->qkey[i][pend[k]] = p->queue_key(c, ps, pend[k]);
    }
    merge_sort(c, pend, tmp, npend);
    s->nqfit = s->nqfree = 0; /* every record made again: every entry free */
    s->qsum_ok = false;
    for (int32_t i = 0; i < npend; i++)
        s->order[i] = make_qent(s, st, pend[i]);
    return 0;
}

/* Puts the records in the sorted order idx: the other buffer takes them and becomes s->order;
 * pend follows. 0 or DRV_ENOMEM. */
static int adopt_order(drv_sched *s, const int32_t *idx, int32_t *pend)
{
    int32_t npend = s->norder;
    if (drv_grow(&s->order2, sizeof *s->order2, &s->cap_order2, npend) != 0)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < npend; i++) {
        s->order2[i] = s->order[idx[i]];
        pend[i] = s->order2[i].job;
    }
    qent *t = s->order;
    int32_t tc = s->cap_order;
    s->order = s->order2;
    s->cap_order = s->cap_order2;
    s->order2 = t;
    s->cap_order2 = tc;
    return 0;
}

/* Phase 1: collects the queued jobs and orders them (queue_order plugins); *jobs receives them
 * in order (in the cycle's arena), *n their count; s->order holds their records. 0 or
 * DRV_ENOMEM. */
static int order_queue(drv_ctx *c, int32_t **jobs, int32_t *n)
{
    drv_sched *s = c->s;
    const drv_state *st = c->snap->st;
    const drv_profile *pr = s->prof;
    int32_t nq = st->nqueued;
    int32_t *pend = drv_arena_alloc(&s->arena, sizeof(int32_t) * ((size_t)nq + 1));
    int32_t *tmp = drv_arena_alloc(&s->arena, sizeof(int32_t) * ((size_t)nq + 1));
    int32_t *idx = drv_arena_alloc(&s->arena, sizeof(int32_t) * ((size_t)nq + 1));
    int32_t *run = drv_arena_alloc(&s->arena, sizeof(int32_t) * ((size_t)nq + 1));
    if (!pend || !tmp || !idx || !run ||
        drv_grow(&s->order, sizeof *s->order, &s->cap_order, nq) != 0 || qfit_room(s, nq) != 0)
        return DRV_ENOMEM;
    int32_t inq_old = s->cap_inq;
    if (drv_grow(&s->inq, sizeof *s->inq, &s->cap_inq, st->njobs / 64 + 1) != 0)
        return DRV_ENOMEM;
    if (s->cap_inq > inq_old) /* new jobs have no record */
        memset(s->inq + inq_old, 0, (size_t)(s->cap_inq - inq_old) * sizeof *s->inq);
    bool was_keyed = s->order_keyed;
    int32_t was_use = s->order_use;
    s->order_keyed = false; /* until this cycle's keys are in the records */
    int32_t nold = collect(s, st);
    int32_t npend = s->norder;
    for (int32_t i = 0; i < npend; i++)
        pend[i] = s->order[i].job;
    for (int i = 0; i < pr->nuse[DRV_PT_QUEUE_ORDER]; i++)
        if (pr->use[DRV_PT_QUEUE_ORDER][i].p->queue_begin)
            pr->use[DRV_PT_QUEUE_ORDER][i].p->queue_begin(c, s->ustate[DRV_PT_QUEUE_ORDER][i], pend,
                                                          npend);
    s->nqo = 0; /* the chain this cycle: plugins that order something */
    for (int i = 0; i < pr->nuse[DRV_PT_QUEUE_ORDER]; i++) {
        const drv_plugin *p = pr->use[DRV_PT_QUEUE_ORDER][i].p;
        if (!p->queue_idle || !p->queue_idle(c, s->ustate[DRV_PT_QUEUE_ORDER][i]))
            s->qo[s->nqo++] = i;
    }
    const drv_plugin *q0 = s->nqo > 0 ? pr->use[DRV_PT_QUEUE_ORDER][s->qo[0]].p : NULL;
    void *q0s = s->nqo > 0 ? s->ustate[DRV_PT_QUEUE_ORDER][s->qo[0]] : NULL;
    bool lone_key = s->nqo == 1 && q0->queue_key;
    bool sorted = true;
    if (lone_key) /* keys kept only from the same plugin's */
        sorted = sort_keyed(c, q0, q0s, nold, was_keyed && was_use == s->qo[0], idx, tmp, run);
    else if (sort_by_plugins(c, pend, tmp) != 0)
        return DRV_ENOMEM;
    if (!sorted && adopt_order(s, idx, pend) != 0)
        return DRV_ENOMEM;
    s->order_keyed = lone_key;
    s->order_use = lone_key ? s->qo[0] : -1;
    *jobs = pend;
    *n = npend;
    return 0;
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
    if (order_queue(&c, &pend, &npend) != 0)
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

const drv_job *drv_ctx_progress(const drv_ctx *c, int32_t job)
{
    if (c->snap->steps_now)
        c->snap->steps_now(c->snap->sync_arg, job);
    if (c->snap->sync)
        c->snap->sync(c->snap->sync_arg, job);
    return &c->snap->st->jobs[job];
}

const drv_job *drv_ctx_job_now(const drv_ctx *c, int32_t job)
{
    if (c->snap->steps_now)
        c->snap->steps_now(c->snap->sync_arg, job);
    return &c->snap->st->jobs[job];
}
