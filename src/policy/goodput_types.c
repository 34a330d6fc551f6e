/*
 * goodput_types.c - the goodput plugin's allocation on a cluster of several GPU types (issue 27;
 * goodput.c has the design note): each job gets a type and a count, its GPUs all of that type,
 * as Sia (SOSP'23) allocates.
 *
 * Why: sizing a job against the free GPUs of every type together chooses counts no single type
 * has free, and the job then waits at that count (the core keeps a job's GPU pods on one type):
 * on Sia's cluster and its Philly workload 1, 2 of 160 jobs never finished.
 *
 * Per round, with T >= 2 types among the schedulable nodes (nodes without the label are a type
 * of their own); a homogeneous cluster takes goodput_allocate unchanged:
 *   1. Pools. cap[t] = free GPUs on type t + GPUs our jobs hold there (a job's are on one type).
 *   2. Minimum, in LAS order: a job holding GPUs keeps its type, while the type has room for
 *      its minimum (else it waits, as it would without types); one holding none takes the
 *      type of most speed x room: its one-GPU speed there (Sia's bootstrap sample, one GPU
 *      of each type at its batch) times the GPUs it could get there (left, at most its most).
 *   3. Greedy, as goodput_alloc.c, each job's further GPUs drawn from its own type's pool.
 * Example: 4 GPUs of T4 left and 6 of A100, a job 3 times as fast on one A100 as on one T4:
 * it gets an A100 (3 x 6 > 1 x 4) and may grow to 6 there; without types it could have been
 * given 8 "GPUs" and waited for them.
 *
 * [R] Sia values every (type, count) by the job's goodput there and solves an integer program
 * (GLPK/CBC); we choose the type by bootstrap speed x room and the count greedily (no
 * solver: the online model's goodput is type-blind until step 2 of issue 27 - per-type fits -
 * so an exact program would optimise a guess). The bootstrap sample's cost (seconds per type
 * in Sia) is not charged to the job yet. Cost per round: O(nodes + our jobs' pods) for the pools,
 * O(J x T) for the types, then goodput_alloc.c's greedy.
 */
#include "goodput.h"

#include "drover/strtab.h"

#include <string.h>

enum { MAX_TYPES = 16 };

typedef struct pools {
    int32_t n;               /* types seen (<= MAX_TYPES); < 2: not typed */
    int32_t type[MAX_TYPES]; /* interned type (drv_node_gpu_type), 0 for nodes without one */
    int64_t left[MAX_TYPES]; /* GPUs of the type not yet allocated this round */
} pools;

static int32_t type_index(pools *p, int32_t type, bool add)
{
    for (int32_t i = 0; i < p->n; i++)
        if (p->type[i] == type)
            return i;
    if (!add || p->n == MAX_TYPES)
        return -1;
    p->type[p->n] = type;
    p->left[p->n] = 0;
    return p->n++;
}

/* The type job's GPU workers are bound on now (interned), or -1 when none is bound. */
static int32_t job_type(const drv_ctx *c, int32_t job)
{
    const drv_state *st = drv_ctx_state(c);
    for (int32_t i = 0;; i++) {
        int32_t pod = drv_job_pod(st, job, DRV_ROLE_WORKER, i), at;
        if (pod < 0)
            return -1;
        if ((at = drv_ctx_pod_node(c, pod)) >= 0)
            return drv_node_gpu_type(st, at);
    }
}

/* 1. The pools, and each job's type now (x->type, -1 when it holds no GPU). False when the
 * cluster has fewer than two types (or more than MAX_TYPES: then every type is one pool). */
static bool read_pools(const drv_ctx *c, gjob *v, int32_t n, pools *p)
{
    const drv_state *st = drv_ctx_state(c);
    p->n = 0;
    if (!st->gpu_type_key)
        return false;
    for (int32_t nd = 0; nd < st->nnodes; nd++) {
        if (!st->nodes[nd].schedulable || st->nodes[nd].alloc.gpu <= 0)
            continue;
        int32_t t = type_index(p, drv_node_gpu_type(st, nd), true);
        if (t < 0)
            return false;
        p->left[t] += drv_ctx_free(c, nd).gpu;
    }
    if (p->n < 2)
        return false;
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        int32_t ty = x->have > 0 ? job_type(c, x->id) : -1;
        x->type = ty >= 0 ? ty : -1;
        int32_t t = ty >= 0 ? type_index(p, ty, false) : -1;
        if (t >= 0)
            p->left[t] += x->have;
    }
    return true;
}

/* Job x's bootstrap sample on type t (Sia's: one GPU of each type, at its batch): its
 * speed there, steps per second; 0 when the profiles have no such type (all alike then). */
static double speed1(const goodput *g, const drv_ctx *c, const gjob *x, int32_t type)
{
    const char *name = type > 0 ? drv_strtab_str(drv_ctx_state(c)->names, type) : NULL;
    int32_t e = drv_calib_for_type(g->calib, x->cj->app - 1, name, false);
    int32_t one = 1;
    double t = e >= 0 ? drv_calib_step_time(g->calib, e, &one, 1, x->cj->batch) : 0;
    return t > 0 ? 1 / t : 0;
}

/* 2. The type for job x's minimum: a job holding GPUs keeps its type (a move would be a
 * restart the release step does not see: it waits instead, as it would without types) while
 * the type has room for its minimum; a job holding none takes the type of most speed x room,
 * its one-GPU speed there (bootstrap) times the GPUs it could get there (left, at most its
 * most). Index into p, or -1 when it gets none. O(T) samples. */
static int32_t choose(const goodput *g, const drv_ctx *c, const pools *p, const gjob *x)
{
    int32_t best = -1;
    double best_v = 0;
    for (int32_t t = 0; t < p->n; t++) {
        if ((x->type >= 0 && p->type[t] != x->type) || p->left[t] < x->minw)
            continue;
        int64_t room = p->left[t] < x->nmax ? p->left[t] : x->nmax;
        double v = x->type >= 0 ? 1 : speed1(g, c, x, p->type[t]) * (double)room;
        if (best < 0 || v > best_v * (1 + 1e-12)) {
            best = t;
            best_v = v;
        }
    }
    return best;
}

int goodput_types_allocate(goodput *g, drv_ctx *c, gjob *v, int32_t n, int64_t gpus)
{
    pools p;
    if (!read_pools(c, v, n, &p))
        return goodput_allocate(g, c, v, n, gpus);
    int32_t *pool = drv_arena_alloc(drv_ctx_arena(c), sizeof *pool * ((size_t)n + 1));
    if (!pool)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        int32_t t = choose(g, c, &p, x);
        pool[i] = t;
        x->want = 0;
        if (t < 0)
            continue; /* no type has room for its minimum: it waits */
        x->want = x->minw;
        x->type = p.type[t];
        p.left[t] -= x->minw;
    }
    return goodput_grow_pooled(g, c, v, n, pool, p.left);
}

int32_t goodput_types_node_ok(const drv_ctx *c, const gjob *x, int32_t node)
{
    const drv_state *st = drv_ctx_state(c);
    return !st->gpu_type_key || x->type < 0 || drv_node_gpu_type(st, node) == x->type;
}
