/*
 * cycle.c - runs one scheduling cycle (docs/cycle.md) and implements the helpers plugins call.
 *
 * The cycle never changes the drv_state it is given. What its decisions would do is kept in an
 * "assumed" overlay (kube-scheduler calls this assume/reserve): per-node free resources copied
 * at the start of the cycle, and per-pod node / per-job worker overrides that are valid only
 * when their stamp equals the cycle's stamp, so starting a cycle costs O(nodes), not O(pods).
 * Every decision updates the overlay, and rolling back to a mark undoes decisions newest first.
 *
 * Two summaries make hopeless placements cheap: `maxfree`, an upper bound on each dimension
 * of any node's free resources (exact at the start of a cycle and after every full scan; taking
 * resources leaves it a valid bound, giving them back raises it), and `totfree`, the exact sum.
 * A pod larger than maxfree, or a gang larger than totfree, is rejected in O(1) instead of
 * scanning every node — in a saturated cluster with a long queue that is most attempts.
 * Third, the shapes of gangs that failed this cycle (pods missing per role and their requests)
 * are remembered until capacity is given back: a gang that needs at least as many pods, each at
 * least as large, in every role, fails the same way and is not tried.
 *
 * Worked example (gang, 2 nodes with 4 free CPUs each, a job of 1 PS + 2 workers of 3 CPUs):
 * PS -> node0 (free 1,4), worker -> node1 (free 1,1), next worker fits nowhere -> roll back both
 * binds; the decision list and the overlay are exactly as before the attempt.
 */
#include "drover/cycle.h"
#include "nodeindex.h"

#include <math.h>
#include <string.h>

enum { MAX_FAILED = 32, MAX_ORDER = 64 /* groups of a family ordered by bound (search_family) */ };

/* What a gang still needs: pods missing per role, and each role's per-pod request. */
typedef struct gang_shape {
    int32_t missing[DRV_NROLES];
    drv_res req[DRV_NROLES];
} gang_shape;

/* The distinct nodes, zones and racks of one job's placed pods, for indexed_best: kept from
 * one query to the next while the only change in between (drv_ctx_changes one higher) placed
 * the pod last asked about, so a gang's next pod adds at most one node instead of rereading
 * every pod of the job. */
typedef struct own_list {
    uint32_t cycle;   /* the cycle's stamp when valid; 0: empty (stamps count from 1) */
    uint64_t changes; /* drv_ctx_changes it reflects */
    int32_t job, pod; /* the job, and the pod last asked about */
    bool pod_free;    /* that pod was not placed */
    int32_t *node;    /* the nodes, marked node_seen == seen_tag; room for every node */
    int32_t n, cap;
    int32_t zones[16], racks[16], nz, nr;
    bool all_z, all_r; /* more than 16 zones / racks */
} own_list;

/* A queued job as the cycle orders it: with a lone keyed queue_order plugin, by key, then
 * submit time, then id, read from here - no call and no read of the job per comparison. */
typedef struct qent {
    double key, submit;
    int32_t job;
    bool has_pod;  /* every gang of the job with at least min(min, target) workers has a pod */
    drv_res least; /* per dimension, the least request of a pod of the job */
} qent;

/* A record for job: its order (key 0 until asked) and what drv_ctx_queue_stuck needs, which a
 * job's specification fixes (roles other than workers keep their replicas as targets). */
static qent make_qent(const drv_state *st, int32_t job)
{
    const drv_job *j = &st->jobs[job];
    qent e = {
        0, j->submit, job, j->role[DRV_ROLE_WORKER].min >= 1, {INT64_MAX, INT64_MAX, INT64_MAX}};
    for (int r = 0; r < DRV_NROLES; r++) {
        const drv_rolespec *rs = &j->role[r];
        if (r != DRV_ROLE_WORKER && rs->replicas > 0)
            e.has_pod = true;
        if (rs->replicas > 0 || rs->max > 0) {
            e.least.cpu = rs->req.cpu < e.least.cpu ? rs->req.cpu : e.least.cpu;
            e.least.mem = rs->req.mem < e.least.mem ? rs->req.mem : e.least.mem;
            e.least.gpu = rs->req.gpu < e.least.gpu ? rs->req.gpu : e.least.gpu;
        }
    }
    return e;
}

typedef struct plugin_inst {
    const drv_plugin *p;
    void *state;
} plugin_inst;

struct drv_sched {
    drv_profile prof;
    plugin_inst inst[DRV_NPOINTS * DRV_MAX_SLOT_PLUGINS]; /* distinct plugins */
    int32_t ninst;
    void *ustate[DRV_NPOINTS][DRV_MAX_SLOT_PLUGINS]; /* state of each use's plugin */
    drv_arena arena;
    uint32_t stamp; /* cycle counter; overlay entries are valid when their stamp matches */
    drv_res *free;  /* assumed free resources per node */
    int32_t cap_free;
    int32_t cap_free_used;         /* nodes in free[] at the end of the last cycle */
    drv_res maxfree;               /* per-dimension upper bound of free[] over schedulable nodes */
    drv_res totfree;               /* sum of free[] over schedulable nodes */
    drv_nodeindex *ix;             /* best-node index, when the profile allows it (nodeindex.h) */
    bool use_ix;                   /* the profile allows it */
    bool ix_bb;                    /* branch and bound over score bounds, else best by key */
    bool ix_mixed;                 /* every score plugin bounds mixed sets (bound_mixed) */
    int ix_fam;                    /* families to build: 1, or 3 for branch and bound */
    drv_node_key_fn ix_key;        /* the keyed score plugin's key, or NULL */
    bool ix_ok;                    /* this cycle's index was built */
    bool exhaustive;               /* drv_sched_set_exhaustive: never use the index */
    int32_t ix_nodes;              /* nodes in the index (schedulable ones) */
    gang_shape failed[MAX_FAILED]; /* gangs that did not fit since capacity last grew */
    int32_t nfailed;
    bool rolling_back; /* give() during a rollback restores, it does not free capacity */
    int32_t *pod_node;
    uint32_t *pod_stamp;
    int32_t cap_pods;
    int32_t *job_workers;
    uint32_t *job_stamp;
    int32_t cap_jobs;
    uint32_t *job_touch; /* == stamp: some pod of the job changed node this cycle */
    int32_t cap_touch;
    uint32_t memo_epoch;       /* bumps whenever the failed-shape memo is cleared */
    uint32_t *job_fail_epoch;  /* memo_epoch + 1 when the job's gang last failed (0: never) */
    int32_t *job_fail_workers; /* at that many workers */
    int32_t cap_fail;
    int32_t *nrole; /* per node and role (node * DRV_NROLES + role): pods, assumed state */
    int32_t cap_nrole;
    uint32_t *node_seen; /* per node: == seen_tag when in own.node */
    uint32_t seen_tag;
    int32_t cap_node_seen;
    own_list own;
    qent *order; /* the last cycle's queue, in order: this cycle starts from it */
    int32_t norder, cap_order;
    qent *order2; /* where a sort puts the records; then the two swap */
    int32_t cap_order2;
    bool order_keyed; /* order[].key holds the keys of a lone keyed queue plugin */
    uint32_t *seen;   /* per job: == stamp when already in this cycle's queue */
    int32_t cap_seen;
    double wake;  /* drv_sched_wake: computed at the end of each cycle */
    bool blind;   /* drv_sched_starts_blind: likewise */
    double *qkey; /* per job: the first queue_order plugin's key this cycle (pending jobs only) */
    int32_t cap_qkey;
};

struct drv_ctx {
    drv_sched *s;
    const drv_snapshot *snap;
    drv_decisions *out;
    int32_t base;     /* out->n when the cycle started: rollback never goes below it */
    int err;          /* first allocation failure, reported by drv_sched_cycle */
    uint64_t changes; /* drv_ctx_changes */
};

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
    s->prof = *prof;
    drv_arena_init(&s->arena, 256 * 1024);
    if (s->prof.nuse[DRV_PT_ADMIT] == 0) {
        drv_free(s);
        return drv_fail(d, DRV_EINVAL, "profile %s: no admit plugin", prof->name);
    }
    for (int pt = 0; pt < DRV_NPOINTS; pt++) {
        for (int i = 0; i < s->prof.nuse[pt]; i++) {
            const drv_plugin_use *u = &s->prof.use[pt][i];
            int32_t k = 0;
            while (k < s->ninst && s->inst[k].p != u->p)
                k++;
            if (k == s->ninst) {
                s->inst[k].p = u->p;
                s->ninst++;
                if (u->p->init) {
                    drv_diag pd = {{0}};
                    int rc = u->p->init(&s->inst[k].state, u->knobs, u->nknobs, &pd);
                    if (rc) {
                        const char *pname = u->p->name; /* u lives in s: read it first */
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
    const drv_profile *pr = &s->prof;
    int keyed = 0, bounded = 0, mixed = 0, nscore = pr->nuse[DRV_PT_SCORE];
    for (int i = 0; i < nscore; i++) {
        const drv_plugin *p = pr->use[DRV_PT_SCORE][i].p;
        if (p->node_key) {
            keyed++;
            s->ix_key = p->node_key;
        }
        bounded += p->score_bound != NULL;
        mixed += p->bound_mixed;
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
    drv_free(s->pod_node);
    drv_free(s->pod_stamp);
    drv_free(s->job_workers);
    drv_free(s->job_stamp);
    drv_free(s->job_touch);
    drv_free(s->job_fail_epoch);
    drv_free(s->job_fail_workers);
    drv_free(s->qkey);
    drv_free(s->order);
    drv_free(s->order2);
    drv_free(s->seen);
    drv_free(s->nrole);
    drv_free(s->node_seen);
    drv_free(s->own.node);
    drv_free(s);
}

const drv_profile *drv_sched_profile(const drv_sched *s)
{
    return &s->prof;
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
    const drv_sched *s = c->s;
    return s->pod_stamp[pod] == s->stamp ? s->pod_node[pod] : c->snap->st->pods[pod].node;
}

int32_t drv_ctx_workers(const drv_ctx *c, int32_t job)
{
    const drv_sched *s = c->s;
    return s->job_stamp[job] == s->stamp ? s->job_workers[job]
                                         : c->snap->st->jobs[job].target[DRV_ROLE_WORKER];
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

static void ix_update(drv_sched *s, int32_t node)
{
    drv_nodeindex_update(s->ix, node, s->free[node], s->nrole[node * DRV_NROLES + DRV_ROLE_PS]);
}

static void set_pod_node(drv_ctx *c, int32_t pod, int32_t node)
{
    int role = c->snap->st->pods[pod].role;
    int32_t from = drv_ctx_pod_node(c, pod);
    if (from >= 0)
        c->s->nrole[from * DRV_NROLES + role]--;
    if (node >= 0)
        c->s->nrole[node * DRV_NROLES + role]++;
    if (role == DRV_ROLE_PS && c->s->ix_ok) { /* the index keeps PS counts for bounds */
        if (from >= 0)
            ix_update(c->s, from);
        if (node >= 0)
            ix_update(c->s, node);
    }
    c->s->pod_stamp[pod] = c->s->stamp;
    c->s->pod_node[pod] = node;
    c->s->job_touch[c->snap->st->pods[pod].job] = c->s->stamp;
}

static void set_workers(drv_ctx *c, int32_t job, int32_t n)
{
    c->s->job_stamp[job] = c->s->stamp;
    c->s->job_workers[job] = n;
}

static drv_res pod_req(const drv_state *st, int32_t pod)
{
    const drv_pod *p = &st->pods[pod];
    return st->jobs[p->job].role[p->role].req;
}

static drv_res res_max(drv_res a, drv_res b)
{
    return (drv_res){a.cpu > b.cpu ? a.cpu : b.cpu, a.mem > b.mem ? a.mem : b.mem,
                     a.gpu > b.gpu ? a.gpu : b.gpu};
}

static void take(drv_ctx *c, int32_t node, drv_res r)
{
    drv_sched *s = c->s;
    s->free[node] = drv_res_sub(s->free[node], r);
    if (c->snap->st->nodes[node].schedulable)
        s->totfree = drv_res_sub(s->totfree, r);
    if (s->ix_ok)
        ix_update(s, node);
}

static void give(drv_ctx *c, int32_t node, drv_res r)
{
    drv_sched *s = c->s;
    s->free[node] = drv_res_add(s->free[node], r);
    if (s->ix_ok)
        ix_update(s, node);
    if (c->snap->st->nodes[node].schedulable) {
        s->totfree = drv_res_add(s->totfree, r);
        s->maxfree = res_max(s->maxfree, s->free[node]);
    }
    if (!s->rolling_back && s->nfailed) {
        s->nfailed = 0; /* capacity grew: a gang that failed may fit now */
        s->memo_epoch++;
    }
}

/* Remembers that job's gang at `workers` does not fit in the current memo epoch. */
static void mark_failed(drv_sched *s, int32_t job, int32_t workers)
{
    s->job_fail_epoch[job] = s->memo_epoch + 1;
    s->job_fail_workers[job] = workers;
}

/* Does gang a need at least what gang b needs, in every role? */
static bool dominates(const gang_shape *a, const gang_shape *b)
{
    for (int r = 0; r < DRV_NROLES; r++) {
        if (a->missing[r] < b->missing[r])
            return false;
        if (b->missing[r] > 0 && !drv_res_fits(b->req[r], a->req[r]))
            return false;
    }
    return true;
}

static int push(drv_ctx *c, drv_decision x)
{
    int rc = drv_decisions_push(c->out, x);
    if (rc && !c->err)
        c->err = rc;
    c->changes += rc == 0;
    return rc;
}

/* ---- decisions --------------------------------------------------------------------------- */

int drv_ctx_bind(drv_ctx *c, int32_t pod, int32_t node)
{
    const drv_state *st = c->snap->st;
    drv_decision x = {
        .kind = DRV_BIND, .job = st->pods[pod].job, .pod = pod, .node = node, .from = -1};
    int rc = push(c, x);
    if (rc)
        return rc;
    take(c, node, pod_req(st, pod));
    set_pod_node(c, pod, node);
    return 0;
}

int drv_ctx_evict(drv_ctx *c, int32_t pod, int reason)
{
    const drv_state *st = c->snap->st;
    int32_t from = drv_ctx_pod_node(c, pod);
    if (from < 0)
        return 0;
    drv_decision x = {.kind = DRV_EVICT,
                      .job = st->pods[pod].job,
                      .pod = pod,
                      .node = -1,
                      .reason = reason,
                      .from = from};
    int rc = push(c, x);
    if (rc)
        return rc;
    give(c, from, pod_req(st, pod));
    set_pod_node(c, pod, -1);
    return 0;
}

int drv_ctx_scale(drv_ctx *c, int32_t job, int32_t workers)
{
    int32_t prev = drv_ctx_workers(c, job);
    if (prev == workers)
        return 0;
    /* A shrink below the workers bound takes the surplus off first, highest slots first (a
     * role never has more pods bound than its target, docs/cycle.md): a plugin that only
     * means "this job now wants n" (tiresias resetting a job grown by dragon) cannot leave
     * workers running that nobody wants. A shrink that evicted its victims itself finds none
     * left to take. */
    const drv_state *st = c->snap->st;
    int32_t nbound = 0, slots = 0;
    for (int32_t pod; (pod = drv_job_pod(st, job, DRV_ROLE_WORKER, slots)) >= 0; slots++)
        nbound += drv_ctx_pod_node(c, pod) >= 0;
    for (int32_t i = slots - 1; i >= 0 && nbound > workers; i--) {
        int32_t pod = drv_job_pod(st, job, DRV_ROLE_WORKER, i);
        if (drv_ctx_pod_node(c, pod) < 0)
            continue;
        int rc = drv_ctx_evict(c, pod, DRV_REASON_SHRINK);
        if (rc)
            return rc;
        nbound--;
    }
    drv_decision x = {.kind = DRV_SCALE,
                      .job = job,
                      .pod = -1,
                      .node = -1,
                      .value = workers,
                      .from = -1,
                      .prev = prev};
    int rc = push(c, x);
    if (rc)
        return rc;
    set_workers(c, job, workers);
    return 0;
}

int drv_ctx_resize(drv_ctx *c, int32_t pod, int64_t cpu_limit)
{
    const drv_state *st = c->snap->st;
    const drv_pod *p = &st->pods[pod];
    if (p->cpu_limit == cpu_limit)
        return 0;
    drv_decision x = {.kind = DRV_RESIZE,
                      .job = p->job,
                      .pod = pod,
                      .node = -1,
                      .value = cpu_limit,
                      .from = -1,
                      .prev = p->cpu_limit};
    return push(c, x);
}

int drv_ctx_migrate(drv_ctx *c, int32_t pod, int32_t node)
{
    const drv_state *st = c->snap->st;
    int32_t from = drv_ctx_pod_node(c, pod);
    drv_decision x = {
        .kind = DRV_MIGRATE, .job = st->pods[pod].job, .pod = pod, .node = node, .from = from};
    int rc = push(c, x);
    if (rc)
        return rc;
    if (from >= 0)
        give(c, from, pod_req(st, pod));
    take(c, node, pod_req(st, pod));
    set_pod_node(c, pod, node);
    return 0;
}

int drv_ctx_set_batch(drv_ctx *c, int32_t job, int64_t batch)
{
    int64_t prev = (int64_t)drv_ctx_batch(c, job);
    if (prev == batch)
        return 0;
    drv_decision x = {.kind = DRV_BATCH,
                      .job = job,
                      .pod = -1,
                      .node = -1,
                      .value = batch,
                      .from = -1,
                      .prev = prev};
    return push(c, x);
}

/* The newest BATCH of this cycle for the job (a rollback pops it), else the state's: batch
 * decisions are few, so no per-job array is kept for them. */
double drv_ctx_batch(const drv_ctx *c, int32_t job)
{
    for (int32_t i = c->out->n - 1; i >= c->base; i--)
        if (c->out->v[i].kind == DRV_BATCH && c->out->v[i].job == job)
            return (double)c->out->v[i].value;
    return c->snap->st->jobs[job].batch;
}

drv_mark drv_ctx_mark(const drv_ctx *c)
{
    return (drv_mark){c->out->n};
}

void drv_ctx_rollback(drv_ctx *c, drv_mark m)
{
    const drv_state *st = c->snap->st;
    if (m.ndec < c->base)
        m.ndec = c->base;
    c->changes += 2;
    c->s->rolling_back = true;
    while (c->out->n > m.ndec) {
        const drv_decision *x = &c->out->v[--c->out->n];
        switch (x->kind) {
        case DRV_BIND:
            give(c, x->node, pod_req(st, x->pod));
            set_pod_node(c, x->pod, -1);
            break;
        case DRV_EVICT:
            take(c, x->from, pod_req(st, x->pod));
            set_pod_node(c, x->pod, x->from);
            break;
        case DRV_SCALE:
            set_workers(c, x->job, (int32_t)x->prev);
            break;
        case DRV_MIGRATE:
            give(c, x->node, pod_req(st, x->pod));
            if (x->from >= 0)
                take(c, x->from, pod_req(st, x->pod));
            set_pod_node(c, x->pod, x->from);
            break;
        default:
            break;
        }
    }
    c->s->rolling_back = false;
}

/* ---- placement --------------------------------------------------------------------------- */

int drv_ctx_filter(const drv_ctx *c, int32_t pod, int32_t node)
{
    const drv_state *st = c->snap->st;
    const drv_node *n = &st->nodes[node];
    drv_res req = pod_req(st, pod);
    if (!n->schedulable || !drv_res_fits(req, n->alloc))
        return DRV_UNRESOLVABLE;
    if (!drv_res_fits(req, c->s->free[node]))
        return DRV_UNSCHEDULABLE;
    const drv_profile *pr = &c->s->prof;
    for (int i = 0; i < pr->nuse[DRV_PT_FILTER]; i++) {
        int r = pr->use[DRV_PT_FILTER][i].p->filter(c, c->s->ustate[DRV_PT_FILTER][i], pod, node);
        if (r != DRV_FIT)
            return r;
    }
    return DRV_FIT;
}

int64_t drv_ctx_score(const drv_ctx *c, int32_t pod, int32_t node)
{
    const drv_profile *pr = &c->s->prof;
    int64_t sum = 0;
    for (int i = 0; i < pr->nuse[DRV_PT_SCORE]; i++) {
        const drv_plugin_use *u = &pr->use[DRV_PT_SCORE][i];
        int v = u->p->score(c, c->s->ustate[DRV_PT_SCORE][i], pod, node);
        v = v < 0 ? 0 : v > 100 ? 100 : v;
        sum += (int64_t)u->weight * v;
    }
    return sum;
}

/* Keeps the better of (n, its real score) and the best so far; ties go to the lower id. */
static void consider(const drv_ctx *c, int32_t pod, int32_t n, int32_t *best, int64_t *best_sc)
{
    if (n < 0)
        return;
    int64_t sc = drv_ctx_score(c, pod, n);
    if (sc > *best_sc || (sc == *best_sc && n < *best)) {
        *best = n;
        *best_sc = sc;
    }
}

/* Branch and bound callbacks: the weighted sum of the score plugins' bounds; the real score. */
typedef struct bb_arg {
    const drv_ctx *c;
    int32_t pod;
} bb_arg;

static int64_t bb_bound(void *arg, const drv_node_set *set)
{
    const bb_arg *a = arg;
    const drv_profile *pr = &a->c->s->prof;
    int64_t sum = 0;
    for (int i = 0; i < pr->nuse[DRV_PT_SCORE]; i++) {
        const drv_plugin_use *u = &pr->use[DRV_PT_SCORE][i];
        int v = u->p->score_bound(a->c, a->c->s->ustate[DRV_PT_SCORE][i], a->pod, set);
        v = v < 0 ? 0 : v > 100 ? 100 : v;
        sum += (int64_t)u->weight * v;
    }
    return sum;
}

static int64_t bb_score(void *arg, int32_t node)
{
    const bb_arg *a = arg;
    return drv_ctx_score(a->c, a->pod, node);
}

/* Searches every group of family fam, or those labelled label (>= 0). Returns the number of
 * nodes in the groups. */
static int32_t search_family(const drv_ctx *c, bb_arg *a, drv_res req, int fam, int32_t label,
                             int32_t *best, int64_t *best_sc)
{
    const drv_nodeindex *ix = c->s->ix;
    const int32_t *g = NULL;
    int32_t n =
        label >= 0 ? drv_nodeindex_with_label(ix, fam, label, &g) : drv_nodeindex_groups(ix, fam);
    int32_t nodes;
    drv_node_set u;
    int32_t fit = drv_nodeindex_union(ix, fam, g, n, req, fam == DRV_IX_ZONE ? label : -1,
                                      fam == DRV_IX_RACK ? label : -1, &u, &nodes);
    if (fit == 0)
        return nodes; /* no node here fits */
    /* One bound for all the classes at once (a mixed set of the same zone and rack labels, so
     * the plugins' bounds hold for each of its nodes): when it is below the best score found,
     * no node here can beat it, nor tie it (a tie would need an equal score). Most placements
     * land on the job's own nodes and skip their racks and zones this way. With label -1 the
     * groups' labels differ: no one set stands for them (but for the global family's). */
    if (fit > 1 && *best >= 0 && c->s->ix_mixed && (label >= 0 || fam == DRV_IX_GLOBAL) &&
        bb_bound(a, &u) < *best_sc)
        return nodes;
    /* Bound every group first, then search the most promising first: the best node found
     * there lets the others be pruned at their root (any order finds the same node). */
    struct {
        int32_t grp;
        int64_t ub;
    } o[MAX_ORDER];
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t grp = g ? g[i] : i;
        int32_t lab = drv_nodeindex_label(ix, fam, grp);
        int32_t zone = fam == DRV_IX_ZONE ? lab : -1, rack = fam == DRV_IX_RACK ? lab : -1;
        if (n > MAX_ORDER) { /* too many to order: in group order */
            drv_nodeindex_search(ix, fam, grp, req, zone, rack, bb_bound, bb_score, a, best,
                                 best_sc);
            continue;
        }
        if (!drv_nodeindex_root(ix, fam, grp, req, zone, rack, &u))
            continue;
        int64_t ub = bb_bound(a, &u);
        int32_t at = m++;
        for (; at > 0 && o[at - 1].ub < ub; at--) /* by bound, descending; stable */
            o[at] = o[at - 1];
        o[at].grp = grp;
        o[at].ub = ub;
    }
    for (int32_t i = 0; i < m; i++) {
        int32_t lab = drv_nodeindex_label(ix, fam, o[i].grp);
        drv_nodeindex_search_ub(ix, fam, o[i].grp, req, fam == DRV_IX_ZONE ? lab : -1,
                                fam == DRV_IX_RACK ? lab : -1, o[i].ub, bb_bound, bb_score, a, best,
                                best_sc);
    }
    return nodes;
}

/* Lists node n in o unless it is listed already. */
static void own_add(drv_sched *s, const drv_state *st, own_list *o, int32_t n)
{
    if (s->node_seen[n] == s->seen_tag)
        return;
    s->node_seen[n] = s->seen_tag;
    o->node[o->n++] = n;
    int32_t z = st->nodes[n].zone, r = st->nodes[n].rack, i;
    for (i = 0; i < o->nz && o->zones[i] != z; i++)
        ;
    if (i == o->nz && !(o->all_z = o->all_z || o->nz == 16))
        o->zones[o->nz++] = z;
    for (i = 0; i < o->nr && o->racks[i] != r; i++)
        ;
    if (i == o->nr && !(o->all_r = o->all_r || o->nr == 16))
        o->racks[o->nr++] = r;
}

/* The nodes, zones and racks of the placed pods of pod's job, in the assumed state. */
static const own_list *own_nodes(const drv_ctx *c, int32_t pod)
{
    const drv_state *st = c->snap->st;
    drv_sched *s = c->s;
    own_list *o = &s->own;
    int32_t job = st->pods[pod].job, at;
    bool same = o->cycle == s->stamp && o->job == job;
    if (same && o->changes + 1 == c->changes && o->pod_free &&
        (at = drv_ctx_pod_node(c, o->pod)) >= 0) {
        own_add(s, st, o, at); /* the one change since: o->pod placed on at */
    } else if (!same || o->changes != c->changes) {
        if (++s->seen_tag == 0) { /* a new tag marks no node */
            memset(s->node_seen, 0, (size_t)s->cap_node_seen * sizeof *s->node_seen);
            s->seen_tag = 1;
        }
        o->n = o->nz = o->nr = 0;
        o->all_z = o->all_r = false;
        const drv_job *j = &st->jobs[job];
        for (int32_t k = 0; k < j->pod_count; k++)
            if ((at = drv_ctx_pod_node(c, j->pod_base + k)) >= 0)
                own_add(s, st, o, at);
    }
    o->cycle = s->stamp;
    o->changes = c->changes;
    o->job = job;
    o->pod = pod;
    o->pod_free = drv_ctx_pod_node(c, pod) < 0;
    return o;
}

/*
 * Best node through the index, exact (docs/cycle.md, "Cost"). With one keyed score alone: each
 * allocatable class's best fitting node by key. Otherwise branch and bound, covering every node
 * with a search whose bounds hold for it (drv_node_set): the job's own nodes are scored exactly;
 * nodes of the job's racks are searched rack by rack; other nodes of the job's zones zone by
 * zone; all others class by class. Leaves are scored for real, so every candidate is exact.
 */
static int32_t indexed_best(const drv_ctx *c, int32_t pod, drv_res req)
{
    int32_t best = -1;
    int64_t best_sc = -1;
    if (!c->s->ix_bb) {
        int32_t ng = drv_nodeindex_groups(c->s->ix, DRV_IX_GLOBAL);
        for (int32_t g = 0; g < ng; g++)
            consider(c, pod, drv_nodeindex_best(c->s->ix, DRV_IX_GLOBAL, g, req), &best, &best_sc);
        return best;
    }
    const own_list *o = own_nodes(c, pod);
    /* A job's pods often share nodes: each node is scored once. */
    for (int32_t i = 0; i < o->n; i++)
        if (drv_ctx_filter(c, pod, o->node[i]) == DRV_FIT)
            consider(c, pod, o->node[i], &best, &best_sc);
    const int32_t *zones = o->zones, *racks = o->racks;
    int32_t nz = o->nz, nr = o->nr;
    bool all_z = o->all_z, all_r = o->all_r;
    bb_arg a = {c, pod};
    if (all_r) { /* spread over too many racks to list: every rack group covers its nodes */
        search_family(c, &a, req, DRV_IX_RACK, -1, &best, &best_sc);
        return best;
    }
    for (int32_t i = 0; i < nr; i++)
        search_family(c, &a, req, DRV_IX_RACK, racks[i], &best, &best_sc);
    if (all_z) { /* every zone group: together they cover every node outside the racks */
        search_family(c, &a, req, DRV_IX_ZONE, -1, &best, &best_sc);
        return best;
    }
    int32_t covered = 0;
    for (int32_t i = 0; i < nz; i++)
        covered += search_family(c, &a, req, DRV_IX_ZONE, zones[i], &best, &best_sc);
    /* The job's zones hold every indexed node (one-zone clusters): no node is left for the
     * global groups. */
    if (covered < c->s->ix_nodes)
        search_family(c, &a, req, DRV_IX_GLOBAL, -1, &best, &best_sc);
    return best;
}

int32_t drv_ctx_best_node(const drv_ctx *c, int32_t pod)
{
    const drv_state *st = c->snap->st;
    drv_sched *s = c->s;
    drv_res req = pod_req(st, pod);
    if (!drv_res_fits(req, s->maxfree))
        return -1; /* larger than any node's free room: no need to look */
    if (s->ix_ok)
        return indexed_best(c, pod, req);
    int32_t best = -1;
    int64_t best_score = -1;
    drv_res exact = {0, 0, 0};
    for (int32_t n = 0; n < st->nnodes; n++) {
        if (st->nodes[n].schedulable)
            exact = res_max(exact, s->free[n]);
        if (drv_ctx_filter(c, pod, n) != DRV_FIT)
            continue;
        int64_t sc = drv_ctx_score(c, pod, n);
        if (sc > best_score) {
            best = n;
            best_score = sc;
        }
    }
    s->maxfree = exact; /* the scan saw every node: the bound is exact again */
    return best;
}

int32_t drv_ctx_place_pod(drv_ctx *c, int32_t pod)
{
    int32_t n = drv_ctx_best_node(c, pod);
    if (n >= 0 && drv_ctx_bind(c, pod, n) != 0)
        return -1;
    return n;
}

/* Intra-job placement order: PS first, then chief, workers, evaluators (Volcano task-order). */
static const int role_order[DRV_NROLES] = {DRV_ROLE_PS, DRV_ROLE_CHIEF, DRV_ROLE_WORKER,
                                           DRV_ROLE_EVALUATOR};

/* What the gang of job at `workers` still needs (its shape), and whether that passes the
 * capacity bounds: every missing pod within maxfree, all of them within totfree. Changes
 * nothing. */
static bool gang_room(const drv_ctx *c, int32_t job, int32_t workers, gang_shape *shape)
{
    const drv_state *st = c->snap->st;
    const drv_job *j = &st->jobs[job];
    const drv_sched *s = c->s;
    drv_res need = {0, 0, 0};
    for (int r = 0; r < DRV_NROLES; r++) {
        int32_t want = r == DRV_ROLE_WORKER ? workers : j->target[r];
        int32_t have = j->bound[r];
        if (s->job_touch[job] == s->stamp) /* pods moved this cycle: count them */
            for (int32_t i = 0, pod; (pod = drv_job_pod(st, job, r, i)) >= 0; i++)
                have += (drv_ctx_pod_node(c, pod) >= 0) - (st->pods[pod].node >= 0);
        shape->missing[r] = want > have ? want - have : 0;
        shape->req[r] = j->role[r].req;
        if (shape->missing[r] == 0)
            continue;
        if (!drv_res_fits(j->role[r].req, s->maxfree))
            return false;
        need = drv_res_add(need, drv_res_scale(j->role[r].req, shape->missing[r]));
    }
    return drv_res_fits(need, s->totfree);
}

bool drv_ctx_gang_room(const drv_ctx *c, int32_t job, int32_t workers)
{
    gang_shape shape;
    return gang_room(c, job, workers, &shape);
}

/* Is every record's least request above `free` in dimension d (0 cpu, 1 mem, 2 gpu)? Stops at
 * the first that is not: when something fits, that is usually the queue's first job. */
static bool all_above(const qent *rec, int32_t n, int d, int64_t free)
{
    for (int32_t i = 0; i < n; i++) {
        const drv_res *q = &rec[i].least;
        if ((d == 0 ? q->cpu : d == 1 ? q->mem : q->gpu) <= free)
            return false;
    }
    return true;
}

bool drv_ctx_queue_stuck(const drv_ctx *c)
{
    const drv_sched *s = c->s;
    if (c->out->n != c->base || s->norder == 0 || c->snap->st->nqueued_bound != 0)
        return false;
    const drv_res *m = &s->maxfree;
    if (!all_above(s->order, s->norder, 2, m->gpu) && !all_above(s->order, s->norder, 0, m->cpu) &&
        !all_above(s->order, s->norder, 1, m->mem))
        return false; /* in each dimension some pod fits: no pod is shown not to fit */
    for (int32_t i = 0; i < s->norder; i++)
        if (!s->order[i].has_pod)
            return false;
    return true;
}

int drv_ctx_place_gang(drv_ctx *c, int32_t job, int32_t workers)
{
    const drv_state *st = c->snap->st;
    const drv_job *j = &st->jobs[job];
    drv_sched *s = c->s;
    /* The same gang already failed and no capacity was given back since: O(1). */
    if (s->job_fail_epoch[job] == s->memo_epoch + 1 && s->job_fail_workers[job] == workers &&
        s->job_touch[job] != s->stamp)
        return 0;
    /* Necessary conditions first: every unplaced pod within maxfree, all within totfree, and
     * not at least as large as a gang that already failed. */
    gang_shape shape;
    if (!gang_room(c, job, workers, &shape))
        return 0;
    for (int32_t k = 0; k < s->nfailed; k++)
        if (dominates(&shape, &s->failed[k])) {
            mark_failed(s, job, workers);
            return 0;
        }
    drv_mark m = drv_ctx_mark(c);
    if (drv_ctx_scale(c, job, workers) != 0)
        return DRV_ENOMEM;
    for (int k = 0; k < DRV_NROLES; k++) {
        int r = role_order[k];
        int32_t want = r == DRV_ROLE_WORKER ? workers : j->target[r];
        int32_t have = 0;
        int32_t first = drv_job_pod(st, job, r, 0);
        int32_t nslots = 0;
        while (first >= 0 && drv_job_pod(st, job, r, nslots) >= 0)
            nslots++;
        for (int32_t i = 0; i < nslots; i++)
            if (drv_ctx_pod_node(c, first + i) >= 0)
                have++;
        for (int32_t i = 0; i < nslots && have < want; i++) {
            int32_t pod = first + i;
            if (drv_ctx_pod_node(c, pod) >= 0)
                continue;
            if (drv_ctx_place_pod(c, pod) < 0) {
                int err = c->err;
                drv_ctx_rollback(c, m);
                if (!err && s->nfailed < MAX_FAILED)
                    s->failed[s->nfailed++] = shape;
                if (!err)
                    mark_failed(s, job, workers);
                return err ? err : 0;
            }
            have++;
        }
    }
    return 1;
}

/* ---- the cycle --------------------------------------------------------------------------- */

static int queue_cmp(const drv_ctx *c, int32_t a, int32_t b)
{
    const drv_profile *pr = &c->s->prof;
    for (int i = 0; i < pr->nuse[DRV_PT_QUEUE_ORDER]; i++) {
        const drv_plugin *p = pr->use[DRV_PT_QUEUE_ORDER][i].p;
        void *ps = c->s->ustate[DRV_PT_QUEUE_ORDER][i];
        int r;
        if (p->queue_key) {
            /* The first plugin's keys were computed once for this cycle. */
            double ka = i == 0 ? c->s->qkey[a] : p->queue_key(c, ps, a);
            double kb = i == 0 ? c->s->qkey[b] : p->queue_key(c, ps, b);
            r = ka < kb ? -1 : ka > kb ? 1 : 0;
        } else {
            r = p->queue_cmp(c, ps, a, b);
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

/* merge_sort's algorithm on indices of records, so ties and all resolve alike; what moves is
 * an index, not a record. */
static void merge_sort_idx(const qent *rec, int32_t *v, int32_t *tmp, int32_t n)
{
    if (n < 2)
        return;
    int32_t h = n / 2;
    merge_sort_idx(rec, v, tmp, h);
    merge_sort_idx(rec, v + h, tmp, n - h);
    if (qent_cmp(&rec[v[h - 1]], &rec[v[h]]) <= 0)
        return;
    int32_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = qent_cmp(&rec[v[j]], &rec[v[i]]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

/* Grows an overlay (values + stamps) to hold need entries; new stamps are 0, never current. */
static int grow_overlay(int32_t **val, uint32_t **stamp, int32_t *cap, int32_t need)
{
    if (need <= *cap)
        return 0;
    int32_t ncap = need < 64 ? 64 : need + need / 2;
    int32_t *v = drv_realloc(*val, (size_t)ncap * sizeof *v);
    if (!v)
        return DRV_ENOMEM;
    *val = v;
    uint32_t *t = drv_realloc(*stamp, (size_t)ncap * sizeof *t);
    if (!t)
        return DRV_ENOMEM;
    *stamp = t;
    memset(t + *cap, 0, (size_t)(ncap - *cap) * sizeof *t);
    *cap = ncap;
    return 0;
}

static int prepare(drv_sched *s, const drv_state *st)
{
    /* Failed gang shapes stay valid while no node has more room than when the last cycle
     * ended (kube-scheduler keeps unschedulable pods aside until capacity is freed). */
    bool grew = st->nnodes != s->cap_free_used;
    int32_t oldn = s->cap_free_used;
    int32_t touch_old = s->cap_touch;
    if (drv_grow(&s->free, sizeof *s->free, &s->cap_free, st->nnodes) != 0 ||
        grow_overlay(&s->pod_node, &s->pod_stamp, &s->cap_pods, st->npods) != 0 ||
        grow_overlay(&s->job_workers, &s->job_stamp, &s->cap_jobs, st->njobs) != 0 ||
        drv_grow(&s->job_touch, sizeof *s->job_touch, &s->cap_touch, st->njobs) != 0)
        return DRV_ENOMEM;
    if (s->cap_touch > touch_old)
        memset(s->job_touch + touch_old, 0, (size_t)(s->cap_touch - touch_old) * sizeof(uint32_t));
    int32_t fail_old = s->cap_fail, cap2 = s->cap_fail;
    if (drv_grow(&s->job_fail_epoch, sizeof *s->job_fail_epoch, &s->cap_fail, st->njobs) != 0 ||
        drv_grow(&s->job_fail_workers, sizeof *s->job_fail_workers, &cap2, s->cap_fail) != 0)
        return DRV_ENOMEM;
    if (s->cap_fail > fail_old)
        memset(s->job_fail_epoch + fail_old, 0,
               (size_t)(s->cap_fail - fail_old) * sizeof *s->job_fail_epoch);
    if (drv_grow(&s->nrole, sizeof *s->nrole, &s->cap_nrole, st->nnodes * DRV_NROLES) != 0)
        return DRV_ENOMEM;
    for (int32_t n = 0; n < st->nnodes; n++)
        memcpy(s->nrole + n * DRV_NROLES, st->nodes[n].nrole, sizeof st->nodes[n].nrole);
    int32_t ns_old = s->cap_node_seen;
    if (drv_grow(&s->node_seen, sizeof *s->node_seen, &s->cap_node_seen, st->nnodes) != 0)
        return DRV_ENOMEM;
    if (s->cap_node_seen > ns_old) /* new entries: never equal to a tag in use */
        memset(s->node_seen + ns_old, 0,
               (size_t)(s->cap_node_seen - ns_old) * sizeof *s->node_seen);
    if (drv_grow(&s->own.node, sizeof *s->own.node, &s->own.cap, st->nnodes) != 0)
        return DRV_ENOMEM;
    s->maxfree = s->totfree = (drv_res){0, 0, 0};
    s->cap_free_used = st->nnodes;
    for (int32_t n = 0; n < st->nnodes; n++) {
        drv_res f = drv_node_free(&st->nodes[n]);
        if (!grew && n < oldn && !drv_res_fits(f, s->free[n]))
            grew = true;
        s->free[n] = f;
        if (st->nodes[n].schedulable) {
            s->maxfree = res_max(s->maxfree, s->free[n]);
            s->totfree = drv_res_add(s->totfree, s->free[n]);
        }
    }
    if (grew && s->nfailed) {
        s->nfailed = 0;
        s->memo_epoch++;
    }
    s->stamp++;
    drv_arena_reset(&s->arena);
    s->ix_ok = false;
    if (s->use_ix && !s->exhaustive)
        s->ix_ok = drv_nodeindex_build(s->ix, st, s->free, s->nrole + DRV_ROLE_PS, DRV_NROLES,
                                       s->ix_key, s->ix_fam) == 0;
    s->ix_nodes = 0;
    for (int32_t g = 0; s->ix_ok && g < drv_nodeindex_groups(s->ix, DRV_IX_GLOBAL); g++)
        s->ix_nodes += drv_nodeindex_group_nodes(s->ix, DRV_IX_GLOBAL, g);
    return 0;
}

int drv_sched_cycle(drv_sched *s, const drv_snapshot *snap, drv_decisions *out)
{
    const drv_state *st = snap->st;
    if (prepare(s, st) != 0)
        return DRV_ENOMEM;
    drv_ctx c = {.s = s, .snap = snap, .out = out, .base = out->n};
    const drv_profile *pr = &s->prof;

    /* 1. queue_order: the queued jobs (phase pending, some wanted pod unbound), most urgent
     * first. */
    int32_t nq = st->nqueued;
    int32_t *pend = drv_arena_alloc(&s->arena, sizeof(int32_t) * ((size_t)nq + 1));
    int32_t *tmp = drv_arena_alloc(&s->arena, sizeof(int32_t) * ((size_t)nq + 1));
    int32_t *idx = drv_arena_alloc(&s->arena, sizeof(int32_t) * ((size_t)nq + 1));
    if (!pend || !tmp || !idx || drv_grow(&s->order, sizeof *s->order, &s->cap_order, nq) != 0)
        return DRV_ENOMEM;
    /* The queue order is a total order (ties go by submit time, then id), so the sorted result
     * does not depend on the order jobs are collected in. Collect them in last cycle's order,
     * newcomers after (in id order): an order that did not change costs one pass. The queued
     * set says which are still queued without reading the jobs; the records stay in place. */
    int32_t seen_old = s->cap_seen;
    if (drv_grow(&s->seen, sizeof *s->seen, &s->cap_seen, st->njobs) != 0)
        return DRV_ENOMEM;
    if (s->cap_seen > seen_old)
        memset(s->seen + seen_old, 0, (size_t)(s->cap_seen - seen_old) * sizeof *s->seen);
    bool was_keyed = s->order_keyed;
    s->order_keyed = false; /* until this cycle's keys are in the records */
    qent *rec = s->order;
    int32_t npend = 0;
    const uint64_t *qbits = st->queued.bits; /* drv_state_is_queued, inline */
    for (int32_t i = 0; i < s->norder && npend < nq; i++)
        if (rec[i].job < st->njobs && (qbits[rec[i].job / 64] >> (rec[i].job % 64)) & 1) {
            if (npend != i)
                rec[npend] = rec[i];
            npend++;
        }
    s->norder = npend;
    int32_t nold = npend;
    if (nold < nq) { /* newcomers: the queued jobs not seen above */
        for (int32_t i = 0; i < nold; i++)
            s->seen[rec[i].job] = s->stamp;
        for (int32_t j = drv_state_next_queued(st, 0); j >= 0 && npend < nq;
             j = drv_state_next_queued(st, j + 1))
            if (s->seen[j] != s->stamp)
                rec[npend++] = make_qent(st, j);
        s->norder = npend;
    }
    for (int32_t i = 0; i < npend; i++)
        pend[i] = rec[i].job;
    for (int i = 0; i < pr->nuse[DRV_PT_QUEUE_ORDER]; i++)
        if (pr->use[DRV_PT_QUEUE_ORDER][i].p->queue_begin)
            pr->use[DRV_PT_QUEUE_ORDER][i].p->queue_begin(&c, s->ustate[DRV_PT_QUEUE_ORDER][i],
                                                          pend, npend);
    const drv_plugin *q0 =
        pr->nuse[DRV_PT_QUEUE_ORDER] > 0 ? pr->use[DRV_PT_QUEUE_ORDER][0].p : NULL;
    void *q0s = s->ustate[DRV_PT_QUEUE_ORDER][0];
    bool lone_key = pr->nuse[DRV_PT_QUEUE_ORDER] == 1 && q0->queue_key;
    bool sorted = true;
    if (lone_key) {
        /* Order by (key, submit, id) read from the records. Keys of jobs queued last cycle are
         * kept when the plugin says they did not change: then only newcomers are asked. */
        bool kept = was_keyed && q0->queue_kept && q0->queue_kept(&c, q0s);
        for (int32_t i = kept ? nold : 0; i < npend; i++)
            rec[i].key = q0->queue_key(&c, q0s, rec[i].job);
        /* Most cycles collect the queue already in order: the merge sort would then only
         * compare each boundary and merge nothing - the same as this one pass. */
        for (int32_t i = 1; i < npend && sorted; i++)
            sorted = qent_cmp(&rec[i - 1], &rec[i]) <= 0;
        if (!sorted) {
            for (int32_t i = 0; i < npend; i++)
                idx[i] = i;
            merge_sort_idx(rec, idx, tmp, npend);
        }
    } else {
        if (q0 && q0->queue_key) {
            if (drv_grow(&s->qkey, sizeof *s->qkey, &s->cap_qkey, st->njobs) != 0)
                return DRV_ENOMEM;
            for (int32_t i = 0; i < npend; i++)
                s->qkey[pend[i]] = q0->queue_key(&c, q0s, pend[i]);
        }
        merge_sort(&c, pend, tmp, npend);
        for (int32_t i = 0; i < npend; i++)
            rec[i] = make_qent(st, pend[i]);
    }
    if (!sorted) { /* records in sorted order: the other buffer takes them, and becomes order */
        if (drv_grow(&s->order2, sizeof *s->order2, &s->cap_order2, npend) != 0)
            return DRV_ENOMEM;
        for (int32_t i = 0; i < npend; i++) {
            s->order2[i] = rec[idx[i]];
            pend[i] = s->order2[i].job;
        }
        qent *t = s->order;
        int32_t tc = s->cap_order;
        s->order = s->order2;
        s->cap_order = s->cap_order2;
        s->order2 = t;
        s->cap_order2 = tc;
        rec = s->order;
    }
    s->order_keyed = lone_key;

    /* 2. admit (placing pods through filter and score). */
    for (int i = 0; i < pr->nuse[DRV_PT_ADMIT] && !c.err; i++)
        pr->use[DRV_PT_ADMIT][i].p->admit(&c, s->ustate[DRV_PT_ADMIT][i], pend, npend);
    /* 4-6. scale, reallocate, migrate. */
    for (int i = 0; i < pr->nuse[DRV_PT_SCALE] && !c.err; i++)
        pr->use[DRV_PT_SCALE][i].p->scale(&c, s->ustate[DRV_PT_SCALE][i]);
    for (int i = 0; i < pr->nuse[DRV_PT_REALLOCATE] && !c.err; i++)
        pr->use[DRV_PT_REALLOCATE][i].p->reallocate(&c, s->ustate[DRV_PT_REALLOCATE][i]);
    for (int i = 0; i < pr->nuse[DRV_PT_MIGRATE] && !c.err; i++)
        pr->use[DRV_PT_MIGRATE][i].p->migrate(&c, s->ustate[DRV_PT_MIGRATE][i]);

    /* 7. wake: after a cycle that decided nothing, the earliest time any plugin could decide
     * something on this state - each plugin asked once, however many points it fills. A cycle
     * that decided something changed the state: the next one must run. */
    s->wake = -INFINITY;
    s->blind = false;
    if (!c.err && out->n == c.base) {
        s->wake = INFINITY;
        s->blind = true;
        for (int32_t k = 0; k < s->ninst; k++) {
            const drv_plugin *p = s->inst[k].p;
            double w = p->wake ? p->wake(&c, s->inst[k].state) : p->timeless ? INFINITY : -INFINITY;
            if (w < s->wake)
                s->wake = w;
            if (s->blind)
                s->blind = p->starts_blind && p->starts_blind(&c, s->inst[k].state);
        }
    }
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
    return c->s->prof.period;
}

const drv_job *drv_ctx_progress(const drv_ctx *c, int32_t job)
{
    if (c->snap->sync)
        c->snap->sync(c->snap->sync_arg, job);
    return &c->snap->st->jobs[job];
}
