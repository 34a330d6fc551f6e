/*
 * las.c - least attained service for jobs of unknown length: Tiresias' discretised
 * two-dimensional LAS (Gu et al., NSDI'19, "Tiresias: A GPU Cluster Manager for Distributed Deep
 * Learning") as a queue order for every job and as preemption among rigid jobs, inside a
 * profile whose admission and placement are other plugins'.
 *
 * Why: on a trace of rigid jobs whose lengths nobody knows (the Philly trace), first come,
 * first served lets a job of days block hundreds of jobs of minutes, and the combined priority,
 * whose parallelism factor puts wide jobs first (there the long ones), did worse still. What is
 * known is how much service each job has had: the jobs that have had least are the likeliest to
 * end soonest (job lengths are heavy-tailed), so they go first, and a long job gives way to
 * them. Discretising the service into a few queues keeps jobs of one queue from preempting
 * each other back and forth. The `tiresias` baseline replans the whole cluster every period
 * from its total capacity; here a waiting job takes room only when it needs it, whole gangs at
 * a time, the fewest (victims.c), and lands where the profile's admission and scores put it.
 *
 * A job's service is its attained resource-seconds (drv_job.attained: GPUs held x seconds,
 * CPUs for CPU jobs - the "two dimensions"), counted from its last promotion (below). Its queue
 * (level) is the number of thresholds threshold * factor^i (i = 0 .. queues-2) its service has
 * reached. Each cycle:
 *   - queue order: a job's key is its level (lower first); jobs of one level tie, for the next
 *     plugin of the chain (e.g. `queue_order=fairshare,las,priority`). When every queued job
 *     has level 0 the plugin orders nothing (queue_idle) and costs nothing.
 *   - preemption (migrate point), among *rigid* jobs only: a fixed worker count (max <= min) and
 *     no batch a policy may choose (drv_calib_job_adaptive). Elastic jobs have other ways to
 *     make room (shrinking, DRAGON's relief), and batch-adaptive ones belong to `goodput`. A
 *     queued rigid job P that admission left waiting takes room from running rigid jobs V of
 *     its own queue (cluster queue, issue 14) with level(V) > level(P) and priority(V) <=
 *     priority(P): never from a higher PriorityClass, nor from a job of its own level (so no
 *     two jobs preempt each other back and forth while neither is promoted). Preemptors are
 *     tried by priority (high first), level (low first), submission, id - at most
 *     `max_preemptors` a cycle; one whose gang does not fit in the free room plus what the
 *     running rigid jobs above its level hold, in total, is passed over uncounted (no set of
 *     victims could make room for it). Victims are ranked least important first: priority
 *     low, level high, service high, id; the first `candidates` of them go to the search
 *     (victims.c: one gang alone if one is enough, tried in rank order, else a minimal set),
 *     and P is placed in the same cycle or nothing happens.
 *   - promotion (knob `starve`, Tiresias' STARVELIMIT): a job this plugin preempted that has
 *     waited, since, `starve` times as long as it ran since its last promotion is promoted:
 *     its service counts from zero again (level 0), so it may take its room back. 0: never.
 *     Tiresias counts all the waiting since the last promotion; we count the current wait
 *     [R], which the plugin knows exactly (it made the eviction).
 * Example: 8 GPUs, threshold 57600 GPU-s (16 GPU-hours). Job A (4 GPUs) has run 5 h: 72,000
 * GPU-s, level 1. Job B (2 GPUs, 1 h, level 0) and C (2 GPUs) run too; D (4 GPUs) arrives:
 * no room; D (level 0) may take A's (level 1) but not B's or C's; A is evicted, D placed. A
 * waits at level 1 until room is free, or (starve=4) 20 h later is promoted back to level 0.
 *
 * Quiet cycles: levels move with time while rigid jobs run, and a promotion comes at a time;
 * the wake is the earliest of the running rigid jobs' next threshold (assuming each accrues
 * from now at its request: early, never late) and of the pending promotions, while a rigid
 * job waits; never when none does. A start changes neither levels nor the wake's bound
 * (starts_blind).
 *
 * Cost per cycle with a rigid job waiting: O(running jobs) to find those above level 0, most
 * passed over on per-job arrays without a read of the job (passed_over()), O(queued) for the
 * claimants, and only when some claimant could be placed, the pool sorted (O(p log p)) and per
 * preemptor tried O(pool) plus the victim search (victims.h); O(1) per key; the wake O(running
 * jobs + jobs it preempted and still waiting).
 */
#include "drover/calib.h"
#include "drover/policy.h"
#include "victims.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const drv_knob_spec knobs[] = {
    {"threshold", 57600, 1, 1e9,
     "service (GPU- or CPU-seconds) at which a job enters the second queue"},
    {"factor", 10, 1, 1000, "each further queue's threshold is this times the previous one"},
    {"queues", 2, 1, 8, "number of queues (1: no order, no preemption)"},
    {"starve", 0, 0, 1000,
     "promote a job it preempted once it has waited this many times as long as it ran since "
     "its last promotion (0: never)"},
    {"max_preemptors", 4, 0, 1024, "waiting rigid gangs that may try to preempt per cycle"},
    {"candidates", 32, 1, 4096, "victims considered per preemptor, least important first"},
};
enum { NKNOBS = sizeof knobs / sizeof knobs[0] };

/* Per job id, what the preemption's walk over the running jobs reads for every one of them, in
 * one record of 16 bytes (the walk runs in most cycles on Philly: running jobs' ids are close
 * together, so a cache line serves four of them; it read three arrays before). */
typedef struct las_rec {
    /* its level as last read and a time before which it cannot have changed: the read's time
     * plus what its next threshold is away at its full request (-INFINITY: not read, or
     * promoted since). Levels only rise while a job runs, at most at its request, so the job
     * need not be read again (drv_ctx_job_now brings a running job's service to now: reading
     * every running job every cycle was most of this plugin's cost on Philly). */
    double until;
    int32_t lvl;
    uint8_t kind; /* 0 not read yet, 1 rigid, 2 not (a job's kind never changes) */
} las_rec;

typedef struct las {
    double threshold, factor, starve;
    int32_t queues, max_preemptors, candidates;
    /* per job id, grown to the state's jobs: the service at its last promotion (0: never),
     * and when this plugin last preempted it (-1: it is not waiting after our eviction) */
    double *base, *stop;
    /* per job id, what the preemption's walk over the running jobs reads (las_rec) */
    las_rec *rec;
    drv_res *res; /* per rigid job id, once its kind is read: its wanted pods' requests (fixed) */
    int32_t cap;
    int32_t *stopped; /* the jobs with stop >= 0, at most cap */
    int32_t nstopped;
    bool idle; /* every job handed to the last queue_begin has level 0 */
} las;

static int las_init(void **state, const drv_knob *kv, int nkv, drv_diag *d)
{
    double v[NKNOBS];
    int rc = drv_knobs_read(knobs, NKNOBS, kv, nkv, v, d);
    if (rc)
        return rc;
    las *l = drv_calloc(1, sizeof *l);
    if (!l)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    l->threshold = v[0];
    l->factor = v[1];
    l->queues = (int32_t)v[2];
    l->starve = v[3];
    l->max_preemptors = (int32_t)v[4];
    l->candidates = (int32_t)v[5];
    *state = l;
    return 0;
}

static void las_fini(void *state)
{
    las *l = state;
    if (!l)
        return;
    drv_free(l->base);
    drv_free(l->stop);
    drv_free(l->rec);
    drv_free(l->res);
    drv_free(l->stopped);
    drv_free(l);
}

/* Room for every job of st in the per-job arrays; on failure they are as they were. 0 or
 * DRV_ENOMEM. */
static int room(las *l, const drv_state *st)
{
    int32_t need = st->njobs, c[5] = {l->cap, l->cap, l->cap, l->cap, l->cap};
    if (need <= l->cap)
        return 0;
    if (drv_grow(&l->base, sizeof *l->base, &c[0], need) ||
        drv_grow(&l->stop, sizeof *l->stop, &c[1], need) ||
        drv_grow(&l->stopped, sizeof *l->stopped, &c[2], need) ||
        drv_grow(&l->rec, sizeof *l->rec, &c[3], need) ||
        drv_grow(&l->res, sizeof *l->res, &c[4], need))
        return DRV_ENOMEM;
    int32_t cap = c[0];
    for (int k = 1; k < 5; k++)
        cap = c[k] < cap ? c[k] : cap;
    for (int32_t i = l->cap; i < cap; i++) {
        l->base[i] = 0;
        l->stop[i] = -1;
        l->rec[i] = (las_rec){.until = -INFINITY};
    }
    l->cap = cap;
    return 0;
}

/* The job's service since its last promotion. */
static double service(const las *l, const drv_job *j, int32_t job)
{
    return job < l->cap ? j->attained - l->base[job] : j->attained;
}

/* Its level: the thresholds its service has reached; *next the service of the next one
 * (INFINITY in the last queue). */
static int32_t level_of(const las *l, double service, double *next)
{
    int32_t k = 0;
    double th = l->threshold;
    while (k < l->queues - 1 && service >= th) {
        k++;
        th *= l->factor;
    }
    if (next)
        *next = k < l->queues - 1 ? th : INFINITY;
    return k;
}

/* Its wanted pods' requests, in total. */
static drv_res wanted(const drv_job *j)
{
    drv_res r = {0, 0, 0};
    for (int role = 0; role < DRV_NROLES; role++)
        r = drv_res_add(r, drv_res_scale(j->role[role].req, j->target[role]));
    return r;
}

/* Resources it accrues service at while running: GPUs, else CPUs, of its wanted pods. */
static double demand(const drv_job *j)
{
    drv_res r = wanted(j);
    return r.gpu > 0 ? (double)r.gpu : (double)r.cpu / 1000.0;
}

/* The job's level now: read (and remembered with how long it holds) when the last read may
 * be out of date, else the last read's. */
static int32_t level(las *l, const drv_ctx *c, int32_t job)
{
    double now = drv_ctx_now(c);
    if (job < l->cap && now < l->rec[job].until)
        return l->rec[job].lvl;
    const drv_job *j = drv_ctx_job_now(c, job);
    double next, sv = service(l, j, job), dem = demand(j);
    int32_t k = level_of(l, sv, &next);
    if (job < l->cap) {
        l->rec[job].lvl = k;
        l->rec[job].until = dem > 0 ? now + (next - sv) / dem : INFINITY;
    }
    return k;
}

/* Fixed worker count and a batch nobody may choose; read once per job (las.kind). */
static bool rigid(las *l, const drv_ctx *c, int32_t job)
{
    if (job < l->cap && l->rec[job].kind)
        return l->rec[job].kind == 1;
    const drv_job *j = &drv_ctx_state(c)->jobs[job];
    const drv_calib_jobs *m = drv_ctx_snap(c)->model;
    bool r = j->role[DRV_ROLE_WORKER].max <= j->role[DRV_ROLE_WORKER].min &&
             !(m && drv_calib_job_adaptive(m, job));
    if (job < l->cap) {
        l->rec[job].kind = r ? 1 : 2;
        l->res[job] = wanted(j);
    }
    return r;
}

static bool has_pods(const drv_job *j)
{
    for (int r = 0; r < DRV_NROLES; r++)
        if (j->bound[r] > 0)
            return true;
    return false;
}

/* The first live job with id >= from that is not queued (it has all the pods it wants), or
 * -1: the queued ones skipped a word at a time. */
static int32_t next_running(const drv_state *st, int32_t from)
{
    return drv_jobset_next(&st->live, st->njobs, from, st->queued.bits, st->queued.cap_bits);
}

/* A running job that is not rigid, or whose level is 0 and cannot have moved: what the
 * preemption passes over without reading the job. */
static bool passed_over(const las *l, const drv_ctx *c, int32_t job)
{
    return job < l->cap &&
           (l->rec[job].kind == 2 ||
            (l->rec[job].kind == 1 && l->rec[job].lvl == 0 && drv_ctx_now(c) < l->rec[job].until));
}

/* When a job we preempted, waiting since stop, is promoted: stop + starve x the time it ran
 * since its last promotion; INFINITY when promotion is off. */
static double promotion_at(const las *l, const drv_job *j, int32_t job)
{
    double dem = demand(j);
    if (l->starve <= 0 || dem <= 0)
        return INFINITY;
    return l->stop[job] + l->starve * service(l, j, job) / dem;
}

/* Brings the jobs this plugin preempted up to now: one running again, or gone, is forgotten;
 * one that has waited long enough is promoted (its service counts from now). O(those jobs). */
static void refresh(las *l, const drv_ctx *c)
{
    const drv_state *st = drv_ctx_state(c);
    double now = drv_ctx_now(c);
    int32_t n = 0;
    for (int32_t i = 0; i < l->nstopped; i++) {
        int32_t job = l->stopped[i];
        const drv_job *j = &st->jobs[job];
        if (drv_state_next_live(st, job) != job || has_pods(j)) {
            l->stop[job] = -1;
            continue;
        }
        if (now >= promotion_at(l, j, job)) {
            l->base[job] = j->attained; /* waiting: its service does not move */
            l->stop[job] = -1;
            l->rec[job].until = -INFINITY;
            continue;
        }
        l->stopped[n++] = job;
    }
    l->nstopped = n;
}

static void las_begin(const drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    las *l = state;
    room(l, drv_ctx_state(c)); /* on failure, jobs past the arrays are read each time */
    refresh(l, c);
    l->idle = true;
    for (int32_t i = 0; i < n && l->idle; i++)
        l->idle = level(l, c, jobs[i]) == 0;
}

static double las_key(const drv_ctx *c, void *state, int32_t job)
{
    return level(state, c, job);
}

static bool las_idle(const drv_ctx *c, void *state)
{
    (void)c;
    return ((const las *)state)->idle;
}

/* ---- preemption among rigid jobs ------------------------------------------------------------ */

/* A running rigid job that may lose its room, or a queued one that may take some. */
typedef struct entry {
    int32_t prio, level;
    double service, submit;
    int32_t job;
    drv_res res; /* its wanted pods' requests */
} entry;

/* Victims: least important first - priority low, level high, service high, id. */
static int by_rank(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    if (a->prio != b->prio)
        return a->prio < b->prio ? -1 : 1;
    if (a->level != b->level)
        return a->level > b->level ? -1 : 1;
    if (a->service != b->service)
        return a->service > b->service ? -1 : 1;
    return (a->job > b->job) - (a->job < b->job);
}

/* Preemptors: priority high, level low, submission, id. */
static int by_claim(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    if (a->level != b->level)
        return a->level < b->level ? -1 : 1;
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    return (a->job > b->job) - (a->job < b->job);
}

static entry make_entry(const las *l, const drv_ctx *c, int32_t job, int32_t lv)
{
    const drv_job *j = drv_ctx_job_now(c, job);
    return (entry){j->priority, lv, service(l, j, job), j->submit, job, wanted(j)};
}

/* The free room of the schedulable nodes, in total, as this cycle assumes it. O(nodes). */
static drv_res free_room(const drv_ctx *c)
{
    const drv_state *st = drv_ctx_state(c);
    drv_res free = {0, 0, 0};
    for (int32_t nd = 0; nd < st->nnodes; nd++)
        if (st->nodes[nd].schedulable)
            free = drv_res_add(free, drv_ctx_free(c, nd));
    return free;
}

/* What one cycle's preemption works with, in the cycle's arena. */
typedef struct sweep {
    entry *pool; /* running rigid jobs above level 0, ranked once there are claimants */
    int32_t npool;
    entry *claim; /* queued rigid jobs some set of victims could make room for, in claim order */
    int32_t nclaim;
    drv_res up[8]; /* per level k, the pool's resources above level k, in total */
    drv_res free;  /* the free room of all nodes, in total */
} sweep;

/* Some pod of the job is bound as this cycle assumes (admission placed it in this cycle). */
static bool placed_now(const drv_ctx *c, const drv_job *j)
{
    for (int32_t k = 0; k < j->pod_count; k++)
        if (drv_ctx_pod_node(c, j->pod_base + k) >= 0)
            return true;
    return false;
}

/*
 * Fills r: the pool (the running rigid jobs above level 0), and the claimants - queued rigid
 * jobs none of whose pods are bound, nor placed by this cycle's admission, whose gang fits in the
 * free room plus what the pool's jobs above their level hold, in total (a bound: no search for the
 * others can succeed). The pool is ranked only when there is a claimant. O(live) with levels mostly
 * remembered (level()), plus O(pool log pool + claimants log claimants) when there are claimants. 0
 * or DRV_ENOMEM.
 */
static int gather(las *l, drv_ctx *c, sweep *r)
{
    const drv_state *st = drv_ctx_state(c);
    drv_arena *ar = drv_ctx_arena(c);
    int32_t *idx = drv_arena_alloc(ar, sizeof(int32_t) * ((size_t)st->nlive + 1));
    int32_t *lv = drv_arena_alloc(ar, sizeof(int32_t) * ((size_t)st->nlive + 1));
    r->claim = drv_arena_alloc(ar, sizeof(entry) * ((size_t)st->nqueued + 1));
    if (!idx || !lv || !r->claim)
        return DRV_ENOMEM;
    for (int32_t k = 0; k < l->queues; k++)
        r->up[k] = (drv_res){0, 0, 0};
    r->npool = r->nclaim = 0;
    for (int32_t job = next_running(st, 0); job >= 0; job = next_running(st, job + 1)) {
        int32_t k;
        if (passed_over(l, c, job) || !rigid(l, c, job) || (k = level(l, c, job)) == 0)
            continue;
        idx[r->npool] = job;
        lv[r->npool++] = k;
        for (int32_t b = 0; b < k; b++)
            r->up[b] = drv_res_add(r->up[b], job < l->cap ? l->res[job] : wanted(&st->jobs[job]));
    }
    if (r->npool == 0)
        return 0;
    r->free = free_room(c);
    for (int32_t job = drv_state_next_queued(st, 0); job >= 0;
         job = drv_state_next_queued(st, job + 1)) {
        const drv_job *j = &st->jobs[job];
        if (!rigid(l, c, job) || has_pods(j))
            continue;
        int32_t k = level(l, c, job);
        if (k < l->queues - 1 && drv_res_fits(wanted(j), drv_res_add(r->free, r->up[k])) &&
            !placed_now(c, j))
            r->claim[r->nclaim++] = make_entry(l, c, job, k);
    }
    if (r->nclaim == 0)
        return 0;
    r->pool = drv_arena_alloc(ar, sizeof(entry) * ((size_t)r->npool + 1));
    if (!r->pool)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < r->npool; i++)
        r->pool[i] = make_entry(l, c, idx[i], lv[i]);
    qsort(r->pool, (size_t)r->npool, sizeof *r->pool, by_rank);
    qsort(r->claim, (size_t)r->nclaim, sizeof *r->claim, by_claim);
    return 0;
}

/* The victims P may take, in rank order, cut to `candidates`: running rigid jobs of its queue,
 * settled, of a priority no higher and a level above its own. *room receives whether P's gang
 * fits in the free room and all of them together, in total: when not, no search can succeed.
 * 0 or DRV_ENOMEM. */
static int candidates(const las *l, drv_ctx *c, const sweep *r, const entry *p,
                      drv_victim_search *s, bool *room)
{
    const drv_state *st = drv_ctx_state(c);
    if (drv_victim_search_alloc(c, s, r->npool) != 0)
        return DRV_ENOMEM;
    drv_res free = r->free;
    for (int32_t i = 0; i < r->npool; i++) {
        const entry *v = &r->pool[i];
        if (v->prio > p->prio || v->level <= p->level ||
            (st->nqueues > 0 && st->jobs[v->job].queue != st->jobs[p->job].queue) ||
            !drv_victim_settled(c, v->job))
            continue;
        free = drv_res_add(free, v->res);
        if (s->ncand < l->candidates) {
            s->cand[s->ncand] = (drv_victim){s->ncand, v->prio, v->job};
            s->ncand++;
        }
    }
    *room = s->ncand > 0 && drv_res_fits(p->res, free);
    return 0;
}

/* Remembers the victims of a search that placed its preemptor: when they were stopped. */
static void note_victims(las *l, const drv_ctx *c, const drv_victim_search *s)
{
    for (int32_t k = 0; k < s->nset; k++) {
        int32_t v = s->set[k].job;
        if (!s->spared[k] && v < l->cap && l->stop[v] < 0) {
            l->stop[v] = drv_ctx_now(c);
            l->stopped[l->nstopped++] = v;
        }
    }
}

static void las_migrate(drv_ctx *c, void *state)
{
    las *l = state;
    const drv_state *st = drv_ctx_state(c);
    if (st->nqueued == 0 || l->max_preemptors == 0 || l->queues < 2)
        return;
    room(l, st); /* on failure, jobs past the arrays are read each time and not promoted */
    refresh(l, c);
    sweep r;
    if (gather(l, c, &r) != 0) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    for (int32_t i = 0, tried = 0; i < r.nclaim && tried < l->max_preemptors; i++) {
        const entry *p = &r.claim[i];
        if (placed_now(c, &st->jobs[p->job]))
            continue;
        drv_victim_search s = {.job = p->job, .size = st->jobs[p->job].role[DRV_ROLE_WORKER].min};
        bool fits;
        if (candidates(l, c, &r, p, &s, &fits) != 0) {
            drv_ctx_fail(c, DRV_ENOMEM);
            return;
        }
        tried++; /* each try costs O(pool) at least: at most max_preemptors a cycle */
        if (!fits)
            continue;
        int rc = drv_victims_take(c, &s);
        if (rc < 0) {
            drv_ctx_fail(c, rc);
            return;
        }
        if (rc == 1) {
            note_victims(l, c, &s);
            r.free = free_room(c);
        }
    }
}

/* ---- quiet cycles ------------------------------------------------------------------------- */

/* The earliest time a level moves while a rigid job waits: a running rigid job's next
 * threshold, were it to accrue from now at its request (a starting one accrues later, so this
 * is early, never late), or a promotion due. INFINITY while no rigid job waits. */
static double las_wake(const drv_ctx *c, void *state)
{
    las *l = state;
    const drv_state *st = drv_ctx_state(c);
    bool waits = false;
    for (int32_t job = drv_state_next_queued(st, 0); job >= 0 && !waits;
         job = drv_state_next_queued(st, job + 1))
        waits = rigid(l, c, job);
    if (!waits || l->queues < 2)
        return INFINITY;
    double t = INFINITY;
    for (int32_t i = 0; i < l->nstopped; i++) {
        int32_t job = l->stopped[i];
        double at = promotion_at(l, &st->jobs[job], job);
        t = at < t ? at : t;
    }
    for (int32_t job = next_running(st, 0); job >= 0; job = next_running(st, job + 1)) {
        if (job >= l->cap || !rigid(l, c, job))
            continue;
        if (level(l, c, job) < l->queues - 1)
            t = l->rec[job].until < t ? l->rec[job].until : t;
    }
    double ripe = drv_victim_ripe_at(c); /* a victim coming of age (its min run time) */
    return ripe < t ? ripe : t;
}

const drv_plugin drv_plugin_las = {
    .name = "las",
    .doc = "queue order by attained-service level, and preemption of rigid jobs by it "
           "(Tiresias' discretised 2D-LAS)",
    .init = las_init,
    .fini = las_fini,
    .queue_begin = las_begin,
    .queue_key = las_key,
    .queue_idle = las_idle,
    .migrate = las_migrate,
    .wake = las_wake,
    .starts_blind = drv_starts_blind,
};
