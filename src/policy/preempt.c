/*
 * preempt.c - gang-aware preemption (issue 14): to admit a more important gang, or to give a
 * queue back the quota another queue of its cohort borrowed, evict whole gangs of others -
 * never part of one - after elastic jobs have shrunk to their minimum. A migrate-point plugin,
 * so it sees what admission and scaling left waiting.
 *
 * Who may preempt (the preemptor P): a queued job (phase pending, some wanted pod unbound) that
 * still misses pods after the cycle's admit and scale points and whose gang at its worker
 * minimum cannot be placed as the cluster is. Preemptors are tried in the order priority
 * (drv_job.priority, the PriorityClass value) high first, then submission, then id; at most
 * `max_preemptors` per cycle reach a placement attempt.
 *
 * Who may be a victim V of P: a live job with pods bound, none of them (nor its worker count)
 * changed earlier in this cycle, that has not preempted P before (below), and
 *   - in P's queue (or the state has no queues): priority(V) < priority(P);
 *   - in another queue QV of P's cohort, only while QV is borrowing (its assumed use exceeds its
 *     nominal quota in some dimension, checked again before each eviction), and either
 *     priority(V) < priority(P), or (knob `reclaim`) P's queue QP stays within its nominal
 *     quota in every dimension with P admitted: a reclaim, at any priority of V.
 * A queue's jobs within its nominal quota are never taken by another queue (its quota is a
 * guarantee, as Kueue's); jobs of the default queue or of no cohort only by their own queue.
 * With knob `adaptive=0`, batch-adaptive jobs (drv_calib_job_adaptive, calib.h) are neither
 * preemptors nor victims: another plugin (goodput) owns them.
 *
 * What is evicted, for one P, in this order, stopping as soon as P's gang fits (the search is
 * victims.c's, shared with las.c; this file decides who may be taken and in what order):
 *   1. Elastic victims shrink toward their worker minimum (SCALE, its EVICTs reason shrink),
 *      lowest priority first (then id), one worker at a time, P tried after each step.
 *   2. Whole gangs (every bound pod, EVICT reason preempt), the fewest victims first, then the
 *      least lost work, then the lowest priority. The candidates are the first `candidates`
 *      eligible victims by priority, then id. Each alone is tried in the order lost work,
 *      priority, id (so when one gang is enough, the set is the exact optimum among them);
 *      else they are evicted in their order until P fits, and then each is given back, most
 *      lost work first, when P still fits without it (kube-scheduler's reprieve): a minimal
 *      set - no victim can be spared - though not always a minimum one (that is set cover).
 *   3. P is placed (drv_ctx_place_gang at its worker minimum) on the freed room in the same
 *      cycle. When it does not fit, every decision for P is rolled back: no eviction without
 *      an admission. Each eviction names P (drv_ctx_preempt: the decision's value), what a
 *      driver writes in the victims' Events; P's shrinks and evictions are followed directly
 *      by P's SCALE and BINDs.
 * Lost work (the victims' key, victims.h) is the work since the last checkpoint; the core knows
 * no checkpoints, so it is the job's attained service (drv_job.attained, resource-seconds),
 * which bounds it.
 *
 * No cycles: a victim never preempts its preemptor back.
 *   - In one cycle: a victim was bound before the cycle, so it is not queued and never a
 *     preemptor in it; a preemptor placed in the cycle is changed by it, so never a victim.
 *   - Priority: V is taken only when priority(V) < priority(P), so P is never a victim of V.
 *   - Reclaim: P stays within its quota when admitted, but its queue may borrow later (another of
 *     its jobs admitted beyond quota) while V's queue is back under quota, so the queues' use
 *     alone does not forbid V reclaiming from P. Example: quota 4 CPUs each for queues a and b
 *     of one cohort on 8 CPUs; b's job V borrows all 8; a's job P (4) reclaims: V is evicted.
 *     Then a's job X (4) borrows b's unused share, a is at 8 > 4 while V waits in b at 0 < 4.
 *     So the plugin remembers each (victim, preemptor) pair while both are live and never lets
 *     a victim take its preemptor: V's reclaim may take X, never P. (tests/policy/test_preempt.c)
 *
 * Worked example: one node of 8 CPUs; running low-priority jobs A (2 CPUs, attained 10), B (2,
 * attained 20) and C (4, attained 100), all priority 0, one worker each; P (priority 10) needs
 * 4. Alone, A and B free too little, C frees 4: C is the one victim, though A and B lost less
 * work together. Decisions: EVICT C/worker-0 preempt, BIND P/worker-0 n0.
 *
 * Cost: O(1) when nothing is queued; else one pass over the queued and the live jobs, and when
 * some queued job outranks a running one (or a queue borrows), per preemptor tried: O(victim
 * pods) to find candidates, up to `candidates` single tries, `candidates` greedy steps and
 * `candidates` reprieves (each O(candidates) evictions) with a gang placement each, plus a
 * placement per shrink step; at most `max_preemptors` preemptors per cycle.
 *
 * Quiet cycles: whether anything is preempted depends on the cluster state only (orders of
 * priorities and ids); attained service only picks among sets that work. So a cycle that
 * decided nothing would decide nothing later on the same state: the wake is "never".
 */
#include "drover/calib.h"
#include "drover/policy.h"
#include "victims.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const drv_knob_spec knobs[] = {
    {"max_preemptors", 4, 0, 1024, "pending gangs that may try to preempt per cycle (0: off)"},
    {"candidates", 32, 1, 4096,
     "victims considered per preemptor: the lowest priorities, then ids"},
    {"reclaim", 1, 0, 1, "a queue within its quota takes back what its cohort borrowed"},
    {"adaptive", 1, 0, 1, "0: batch-adaptive jobs are left to another plugin (goodput)"},
};
enum { NKNOBS = sizeof knobs / sizeof knobs[0] };

/* A victim that took the room of its preemptor, kept while both are live. */
typedef struct pair {
    int32_t victim, by;
} pair;

typedef struct preempt {
    int32_t max_preemptors; /* preemptors tried per cycle */
    int32_t candidates;     /* victims considered per preemptor for multi-gang sets */
    bool reclaim;           /* reclaim of borrowed quota on */
    bool adaptive;          /* batch-adaptive jobs take part */
    pair *pairs;            /* who preempted whom, among live jobs */
    int32_t npairs, cap_pairs;
} preempt;

/* What one preemptor's attempt works with, in the cycle's arena. */
typedef struct attempt {
    drv_victim_search s; /* the preemptor (s.job at s.size, its minimum) and its victims */
    bool reclaims;       /* its queue stays within its nominal quota with it admitted */
} attempt;

static int pr_init(void **state, const drv_knob *kv, int nkv, drv_diag *d)
{
    double v[NKNOBS];
    int rc = drv_knobs_read(knobs, NKNOBS, kv, nkv, v, d);
    if (rc)
        return rc;
    preempt *p = drv_calloc(1, sizeof *p);
    if (!p)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    p->max_preemptors = (int32_t)v[0];
    p->candidates = (int32_t)v[1];
    p->reclaim = v[2] != 0;
    p->adaptive = v[3] != 0;
    *state = p;
    return 0;
}

static void pr_fini(void *state)
{
    preempt *p = state;
    if (!p)
        return;
    drv_free(p->pairs);
    drv_free(p);
}

static bool is_live(const drv_state *st, int32_t job)
{
    return drv_state_next_live(st, job) == job;
}

/* Forgets pairs whose victim or preemptor is no longer live (its id is never reused). */
static void prune_pairs(preempt *p, const drv_state *st)
{
    int32_t n = 0;
    for (int32_t i = 0; i < p->npairs; i++)
        if (is_live(st, p->pairs[i].victim) && is_live(st, p->pairs[i].by))
            p->pairs[n++] = p->pairs[i];
    p->npairs = n;
}

/* True when `job` was preempted by `other` (so it may never take `other`). O(pairs). */
static bool was_preempted_by(const preempt *p, int32_t job, int32_t other)
{
    for (int32_t i = 0; i < p->npairs; i++)
        if (p->pairs[i].victim == job && p->pairs[i].by == other)
            return true;
    return false;
}

/* Room for n more pairs, made before an attempt decides anything: a preemption is never left
 * unremembered for want of memory. 0 or DRV_ENOMEM. */
static int reserve_pairs(preempt *p, int32_t n)
{
    return drv_grow(&p->pairs, sizeof *p->pairs, &p->cap_pairs, p->npairs + n) ? DRV_ENOMEM : 0;
}

static bool skipped(const preempt *p, const drv_ctx *c, int32_t job)
{
    const drv_calib_jobs *m = drv_ctx_snap(c)->model;
    return !p->adaptive && m && m->nlive_adaptive > 0 && drv_calib_job_adaptive(m, job);
}

/* What the job's gang at `workers` still misses, in resources; *pods receives how many pods. */
static drv_res missing(const drv_ctx *c, int32_t job, int32_t workers, int32_t *pods)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_job *j = &st->jobs[job];
    drv_res need = {0, 0, 0};
    *pods = 0;
    for (int r = 0; r < DRV_NROLES; r++) {
        int32_t want = r == DRV_ROLE_WORKER ? workers : j->target[r];
        for (int32_t i = 0, pod; (pod = drv_job_pod(st, job, r, i)) >= 0; i++)
            want -= drv_ctx_pod_node(c, pod) >= 0;
        if (want > 0) {
            need = drv_res_add(need, drv_res_scale(j->role[r].req, want));
            *pods += want;
        }
    }
    return need;
}

/* Its assumed use exceeds its nominal quota in some dimension. */
static bool borrowing(const drv_ctx *c, int32_t q)
{
    const drv_queue *dq = &drv_ctx_state(c)->queues[q];
    drv_res u = drv_ctx_queue_used(c, q);
    return (dq->quota.cpu != DRV_UNLIMITED && u.cpu > dq->quota.cpu) ||
           (dq->quota.mem != DRV_UNLIMITED && u.mem > dq->quota.mem) ||
           (dq->quota.gpu != DRV_UNLIMITED && u.gpu > dq->quota.gpu);
}

static bool within(int64_t used, int64_t need, int64_t quota)
{
    return quota == DRV_UNLIMITED || need <= quota - used;
}

/* The preemptor's queue stays within its nominal quota with `need` more. */
static bool stays_within(const drv_ctx *c, int32_t q, drv_res need)
{
    const drv_queue *dq = &drv_ctx_state(c)->queues[q];
    drv_res u = drv_ctx_queue_used(c, q);
    return within(u.cpu, need.cpu, dq->quota.cpu) && within(u.mem, need.mem, dq->quota.mem) &&
           within(u.gpu, need.gpu, dq->quota.gpu);
}

/* May P (attempt a) take room from V, as the opening comment defines? Borrowing of V's queue
 * is checked again at each eviction (taken_ok). */
static bool eligible(const preempt *p, const drv_ctx *c, const attempt *a, int32_t v)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_job *jp = &st->jobs[a->s.job], *jv = &st->jobs[v];
    if (v == a->s.job || skipped(p, c, v) || was_preempted_by(p, a->s.job, v) ||
        !drv_victim_settled(c, v))
        return false;
    if (st->nqueues == 0 || jp->queue == jv->queue)
        return jv->priority < jp->priority;
    const drv_queue *qp = &st->queues[jp->queue], *qv = &st->queues[jv->queue];
    if (qp->cohort == 0 || qv->cohort != qp->cohort || !borrowing(c, jv->queue))
        return false;
    return jv->priority < jp->priority || a->reclaims;
}

/* Whether V may still lose room to P now: another queue's job only while its queue borrows
 * (drv_victim_search.may_take). */
static bool taken_ok(const drv_ctx *c, const drv_victim_search *s, int32_t v)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t qv = st->jobs[v].queue;
    return st->nqueues == 0 || qv == st->jobs[s->job].queue || borrowing(c, qv);
}

static int cmp_id(int32_t a, int32_t b)
{
    return (a > b) - (a < b);
}

/* Priority low first, then id: the order of shrinks, of the greedy step and of the cut. */
static int by_priority(const void *pa, const void *pb)
{
    const drv_victim *a = pa, *b = pb;
    if (a->prio != b->prio)
        return a->prio < b->prio ? -1 : 1;
    return cmp_id(a->job, b->job);
}

/* One preemptor: 1 placed (its victims evicted), 0 not (nothing changed), or an error (a
 * failed decision: the core then stops the cycle, cycle.h). */
static int try_one(preempt *p, drv_ctx *c, attempt *a)
{
    if (reserve_pairs(p, a->s.ncand) != 0)
        return DRV_ENOMEM;
    int rc = drv_victims_take(c, &a->s);
    if (rc <= 0)
        return rc;
    for (int32_t i = 0; i < a->s.nset; i++)
        if (!a->s.spared[i])
            p->pairs[p->npairs++] = (pair){a->s.set[i].job, a->s.job};
    return 1;
}

/* The victims P may take, by priority then id, cut to `candidates`. 0 or DRV_ENOMEM. */
static int find_candidates(const preempt *p, drv_ctx *c, attempt *a, const int32_t *pool,
                           int32_t npool)
{
    if (drv_victim_search_alloc(c, &a->s, npool) != 0)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < npool; i++)
        if (eligible(p, c, a, pool[i])) {
            const drv_job *j = drv_ctx_job_now(c, pool[i]);
            a->s.cand[a->s.ncand++] = (drv_victim){j->attained, j->priority, pool[i]};
        }
    qsort(a->s.cand, (size_t)a->s.ncand, sizeof *a->s.cand, by_priority);
    if (a->s.ncand > p->candidates)
        a->s.ncand = p->candidates;
    return 0;
}

/* A queued job that may try to preempt, with its sort keys. */
typedef struct claimant {
    int32_t prio;
    double submit;
    int32_t job;
} claimant;

/* Priority high first, then submission, then id: the order preemptors are tried in. */
static int by_claim(const void *pa, const void *pb)
{
    const claimant *a = pa, *b = pb;
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    return cmp_id(a->job, b->job);
}

/* The live jobs with pods bound (*low: their lowest priority), and the queued jobs that could
 * take from them: a higher priority than `low`, or any when some queue borrows. Returns the
 * number of claimants (sorted), or DRV_ENOMEM. */
static int32_t gather(drv_ctx *c, int32_t **pool, int32_t *npool, claimant **claim)
{
    const drv_state *st = drv_ctx_state(c);
    drv_arena *ar = drv_ctx_arena(c);
    *pool = drv_arena_alloc(ar, sizeof(int32_t) * ((size_t)st->nlive + 1));
    *claim = drv_arena_alloc(ar, sizeof(claimant) * ((size_t)st->nqueued + 1));
    if (!*pool || !*claim)
        return DRV_ENOMEM;
    int32_t low = INT32_MAX;
    *npool = 0;
    DRV_FOR_LIVE(st, j)
    {
        const drv_job *jb = &st->jobs[j];
        int32_t nb = 0;
        for (int r = 0; r < DRV_NROLES; r++)
            nb += jb->bound[r];
        if (nb > 0) {
            (*pool)[(*npool)++] = j;
            low = jb->priority < low ? jb->priority : low;
        }
    }
    bool borrow = false;
    for (int32_t q = 0; q < st->nqueues && !borrow; q++)
        borrow = borrowing(c, q);
    int32_t n = 0;
    for (int32_t j = drv_state_next_queued(st, 0); j >= 0; j = drv_state_next_queued(st, j + 1))
        if (borrow || st->jobs[j].priority > low)
            (*claim)[n++] = (claimant){st->jobs[j].priority, st->jobs[j].submit, j};
    qsort(*claim, (size_t)n, sizeof **claim, by_claim);
    return n;
}

static void pr_migrate(drv_ctx *c, void *state)
{
    preempt *p = state;
    const drv_state *st = drv_ctx_state(c);
    if (st->nqueued == 0 || p->max_preemptors == 0)
        return;
    prune_pairs(p, st);
    int32_t *pool, npool;
    claimant *claim;
    int32_t nclaim = gather(c, &pool, &npool, &claim);
    if (nclaim < 0) {
        drv_ctx_fail(c, nclaim);
        return;
    }
    for (int32_t i = 0, tried = 0; i < nclaim && tried < p->max_preemptors; i++) {
        attempt a = {.s = {.job = claim[i].job, .may_take = taken_ok}};
        const drv_job *j = &st->jobs[a.s.job];
        a.s.size = j->role[DRV_ROLE_WORKER].min;
        int32_t npods;
        drv_res need = missing(c, a.s.job, a.s.size, &npods);
        if (npods == 0 || skipped(p, c, a.s.job))
            continue; /* placed by admission in this cycle, or not ours */
        a.reclaims = p->reclaim && st->nqueues > 0 && st->queues[j->queue].cohort != 0 &&
                     stays_within(c, j->queue, need);
        if (find_candidates(p, c, &a, pool, npool) != 0) {
            drv_ctx_fail(c, DRV_ENOMEM);
            return;
        }
        if (a.s.ncand == 0)
            continue;
        int rc = try_one(p, c, &a);
        if (rc < 0) {
            drv_ctx_fail(c, rc);
            return;
        }
        tried++;
    }
}

/* Whether anything is preempted depends on the cluster state alone (opening comment), but for
 * a queue's minimum run time: a job comes of age as time passes. */
static double pr_wake(const drv_ctx *c, void *state)
{
    (void)state;
    return drv_victim_ripe_at(c);
}

const drv_plugin drv_plugin_preempt = {
    .name = "preempt",
    .doc = "gang-aware preemption: whole lower-priority gangs, or a cohort's borrowed quota, "
           "after elastic shrinks",
    .init = pr_init,
    .fini = pr_fini,
    .migrate = pr_migrate,
    .wake = pr_wake,
    .starts_blind = drv_starts_blind,
};
