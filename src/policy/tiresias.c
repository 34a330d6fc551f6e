/*
 * tiresias.c - Tiresias' two-dimensional least-attained-service scheduler with discretised
 * priority queues (Gu et al., NSDI'19; as the Pollux artifact's simulator runs it).
 *
 * Why: the standard research baseline for GPU clusters that knows nothing about jobs but
 * what they have consumed; it favours short jobs without knowing durations.
 *
 * Algorithm, every cycle (the profile's period; 60 s under --mechanics pollux):
 *   1. Each live job's attained service is its resource-seconds so far (GPU-seconds: GPUs held
 *      x time, the "two dimensions"; CPU-seconds for CPU jobs). It sits in queue k, the number
 *      of thresholds threshold * factor^i (i = 0 .. queues-2) it has reached. A job moved down
 *      remembers when, and a lower queue is ordered by that time (then submission), as the
 *      queues are FIFO lists; queue 0 is ordered by submission.
 *   2. Walk all live jobs, queue 0 first: a job is selected when its whole demand (all its
 *      pods at the requested size) fits in what the cluster's total capacity has left after
 *      the jobs selected before it (capacity counted in total, not per node: Tiresias' choice),
 *      and, when the cluster has queues (issue 14), its queue admits it on top of the demand of
 *      the jobs of every queue selected before it (drv_queue_admits): a job beyond its quota
 *      is neither placed nor a reason to preempt others, and a running one its queue no
 *      longer admits (its quota lowered, its cohort's lender back) is preempted as in 3.
 *   3. Running jobs not selected are preempted (all pods evicted; they keep their progress and
 *      pay a restart when they resume). Selected jobs not running are placed, pods going one
 *      node at a time to the node with the most free GPUs (CPU for CPU jobs), as many as fit:
 *      consolidated placement.
 * Example: 64 GPUs, threshold 57600 GPU-s. A 32-GPU job that has run 30 min (57600 GPU-s)
 * drops to queue 1; a new 8-GPU arrival, in queue 0, now goes first, and if the free GPUs do
 * not cover it, the demoted job is preempted in the next cycle.
 *
 * The pass runs at admit and again at migrate (the preemption point), so demotions happen on
 * the period even when no job arrives; the second run in a cycle finds nothing to change.
 * Knobs (ranges in the table below): threshold, factor, queues.
 */
#include "drover/policy.h"
#include "helper.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const drv_knob_spec knobs[] = {
    {"threshold", 57600, 1, 1e9, "attained service (GPU- or CPU-seconds) of the first demotion"},
    {"factor", 10, 1, 1000, "each further queue's threshold is this times the previous one"},
    {"queues", 2, 1, 8, "number of priority queues"},
};
enum { NKNOBS = sizeof knobs / sizeof knobs[0] };

typedef struct tiresias {
    double threshold, factor;
    int32_t queues;
    int32_t *level;  /* per job id: queue as last seen */
    double *demoted; /* per job id: when it entered its current queue */
    int32_t cap;
} tiresias;

static int t_init(void **state, const drv_knob *kv, int nkv, drv_diag *d)
{
    double v[NKNOBS];
    int rc = drv_knobs_read(knobs, NKNOBS, kv, nkv, v, d);
    if (rc)
        return rc;
    tiresias *t = drv_calloc(1, sizeof *t);
    if (!t)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    t->threshold = v[0];
    t->factor = v[1];
    t->queues = (int32_t)v[2];
    *state = t;
    return 0;
}

static void t_fini(void *state)
{
    tiresias *t = state;
    if (!t)
        return;
    drv_free(t->level);
    drv_free(t->demoted);
    drv_free(t);
}

static int32_t level_of(const tiresias *t, double attained)
{
    int32_t k = 0;
    double th = t->threshold;
    while (k < t->queues - 1 && attained >= th) {
        k++;
        th *= t->factor;
    }
    return k;
}

/* Updates the per-job queue memory; returns DRV_ENOMEM on failure. */
static int refresh(tiresias *t, const drv_ctx *c)
{
    const drv_state *st = drv_ctx_state(c);
    if (st->njobs > t->cap) {
        int32_t nc = st->njobs + st->njobs / 2 + 16;
        int32_t *l = drv_realloc(t->level, (size_t)nc * sizeof *l);
        if (!l)
            return DRV_ENOMEM;
        t->level = l;
        double *dm = drv_realloc(t->demoted, (size_t)nc * sizeof *dm);
        if (!dm)
            return DRV_ENOMEM;
        t->demoted = dm;
        for (int32_t i = t->cap; i < nc; i++) {
            t->level[i] = 0;
            t->demoted[i] = -1;
        }
        t->cap = nc;
    }
    DRV_FOR_LIVE(st, i)
    {
        const drv_job *j = drv_ctx_job_now(c, i);
        if (j->phase == DRV_JOB_FUTURE || j->phase == DRV_JOB_DONE)
            continue;
        int32_t k = level_of(t, j->attained);
        if (k != t->level[i]) {
            t->level[i] = k;
            t->demoted[i] = drv_ctx_now(c);
        }
    }
    return 0;
}

static int t_cmp(const drv_ctx *c, void *state, int32_t a, int32_t b)
{
    const tiresias *t = state;
    const drv_state *st = drv_ctx_state(c);
    int32_t la = a < t->cap ? t->level[a] : level_of(t, drv_ctx_job_now(c, a)->attained);
    int32_t lb = b < t->cap ? t->level[b] : level_of(t, drv_ctx_job_now(c, b)->attained);
    if (la != lb)
        return la < lb ? -1 : 1;
    if (la > 0 && a < t->cap && b < t->cap && t->demoted[a] != t->demoted[b])
        return t->demoted[a] < t->demoted[b] ? -1 : 1;
    if (st->jobs[a].submit != st->jobs[b].submit)
        return st->jobs[a].submit < st->jobs[b].submit ? -1 : 1;
    return (a > b) - (a < b);
}

/* The job's demand at its requested size. */
static drv_res demand(const drv_job *j)
{
    drv_res r = {0, 0, 0};
    for (int role = 0; role < DRV_NROLES; role++)
        r = drv_res_add(r, drv_res_scale(j->role[role].req, j->role[role].replicas));
    return r;
}

static bool has_pods(const drv_ctx *c, const drv_job *j)
{
    for (int32_t k = 0; k < j->pod_count; k++)
        if (drv_ctx_pod_node(c, j->pod_base + k) >= 0)
            return true;
    return false;
}

/* A live job's place in the queues: the order t_cmp defines. */
typedef struct key {
    int32_t level;
    double demoted, submit;
    int32_t job;
} key;

static int cmp_key(const void *pa, const void *pb)
{
    const key *a = pa, *b = pb;
    if (a->level != b->level)
        return a->level < b->level ? -1 : 1;
    if (a->demoted != b->demoted)
        return a->demoted < b->demoted ? -1 : 1;
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    return (a->job > b->job) - (a->job < b->job);
}

static void pass(drv_ctx *c, tiresias *t)
{
    const drv_state *st = drv_ctx_state(c);
    if (refresh(t, c) != 0) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    drv_arena *a = drv_ctx_arena(c);
    int32_t *live = drv_arena_alloc(a, sizeof(int32_t) * ((size_t)st->nlive + 1));
    bool *sel = drv_arena_alloc(a, sizeof(bool) * ((size_t)st->nlive + 1));
    if (!live || !sel) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    int32_t n = 0;
    DRV_FOR_LIVE(st, i)
    if (st->jobs[i].phase != DRV_JOB_FUTURE && st->jobs[i].phase != DRV_JOB_DONE)
        live[n++] = i;
    /* sort keys, so the order costs n log n however long the backlog */
    key *ord = drv_arena_alloc(a, sizeof(key) * ((size_t)n + 1));
    if (!ord) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    for (int32_t x = 0; x < n; x++) {
        int32_t i = live[x];
        ord[x] = (key){t->level[i], t->level[i] > 0 ? t->demoted[i] : 0, st->jobs[i].submit, i};
    }
    qsort(ord, (size_t)n, sizeof *ord, cmp_key);
    for (int32_t x = 0; x < n; x++)
        live[x] = ord[x].job;
    drv_res left = drv_cluster_capacity(st);
    /* per queue, the demand selected so far: what each queue would use (none without queues) */
    drv_res *quse = drv_arena_alloc(a, sizeof(drv_res) * ((size_t)st->nqueues + 1));
    if (!quse) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    memset(quse, 0, sizeof(drv_res) * ((size_t)st->nqueues + 1));
    for (int32_t x = 0; x < n; x++) {
        const drv_job *j = &st->jobs[live[x]];
        drv_res need = demand(j);
        sel[x] = drv_res_fits(need, left) && drv_queue_admits(st, quse, j->queue, need);
        if (sel[x]) {
            left = drv_res_sub(left, need);
            if (st->nqueues > 0)
                quse[j->queue] = drv_res_add(quse[j->queue], need);
        }
    }
    /* preempt first, so the freed room is there for the placements */
    for (int32_t x = 0; x < n; x++) {
        const drv_job *j = &st->jobs[live[x]];
        if (sel[x] || !has_pods(c, j))
            continue;
        for (int32_t k = 0; k < j->pod_count; k++)
            if (drv_ctx_evict(c, j->pod_base + k, DRV_REASON_PREEMPT) != 0)
                return;
    }
    for (int32_t x = 0; x < n; x++) {
        const drv_job *j = &st->jobs[live[x]];
        if (!sel[x])
            continue;
        if (drv_ctx_workers(c, live[x]) != j->role[DRV_ROLE_WORKER].replicas &&
            drv_ctx_scale(c, live[x], j->role[DRV_ROLE_WORKER].replicas) != 0)
            return;
        if (drv_place_packed(c, live[x]) < 0)
            return;
    }
}

static void t_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t njobs)
{
    (void)jobs;
    (void)njobs;
    pass(c, state);
}

static void t_preempt(drv_ctx *c, void *state)
{
    pass(c, state);
}

const drv_plugin drv_plugin_tiresias = {
    .name = "tiresias",
    .doc = "2D least-attained-service with discretised queues, preemptive (Tiresias, NSDI'19)",
    .init = t_init,
    .fini = t_fini,
    .queue_cmp = t_cmp,
    .admit = t_admit,
    .migrate = t_preempt,
};
