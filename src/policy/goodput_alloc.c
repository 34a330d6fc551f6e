/*
 * goodput_alloc.c - who gets how many GPUs in a round of the goodput plugin (goodput.c has the
 * design note): each job's minimum in LAS order while GPUs are left, then the rest by the
 * fairness-weighted utility of speed-ups, u(s) = s^p / p, greedily per GPU.
 */
#include "goodput.h"

#include <math.h>

static double utility(const goodput *g, double s)
{
    if (s <= 0)
        return -INFINITY;
    return g->p == 0 ? log(s) : pow(s, g->p) / g->p;
}

/* Utility of job x at n workers (n >= 1); a change (another count, or another GPU type) is
 * priced. */
static double value(goodput *g, const gjob *x, int32_t n)
{
    double s = goodput_of(g, x, n) / x->base;
    if ((n != x->have || x->moved) && (x->running || g->delay > 0))
        s *= x->price;
    return utility(g, s);
}

/* The speed-up's reference: with base=1 each job's goodput at its fair share of our GPUs,
 * ceil(gpus / n) workers packed (Pollux's, there "the cluster's GPUs over its jobs"), kept
 * within its minimum and what its batch range allows; else its minimum (x->base already). */
void goodput_fair_bases(goodput *g, gjob *v, int32_t n, int64_t gpus)
{
    if (!g->fair_base || n == 0)
        return;
    int64_t fair = (gpus + n - 1) / n;
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        int32_t r = fair < x->cap ? (int32_t)fair : x->cap;
        if (r <= x->minw)
            continue;
        double b = goodput_of(g, x, r);
        if (b > 0)
            x->base = b;
    }
}

/* Job x's best rise in utility per GPU for k more GPUs, k <= left (the smallest k among equals):
 * its ratio into *r (0 when none rises), k returned (0: none). O(k's tried). */
static int32_t best_step(const gjob *x, int64_t left, double *r)
{
    int32_t bestk = 0;
    double bestr = 0, u0 = x->u[x->want];
    for (int32_t k = 1; x->want + k <= x->top && k <= left; k++) {
        double q = (x->u[x->want + k] - u0) / k;
        if (q > bestr * (1 + 1e-12)) {
            bestr = q;
            bestk = k;
        }
    }
    *r = bestr;
    return bestk;
}

/* Pool of job i: pool[i], or the one pool when pool is NULL. */
#define POOL(i) (pool ? pool[i] : 0)

/* 3b, greedy: repeatedly the job and count whose extra GPUs raise the utility most per GPU
 * (the first in LAS order among equals), while it rises, each job's GPUs drawn from its pool's
 * left[POOL(i)]. Each job's best step is kept and recomputed only when it was chosen or asks
 * for more GPUs than its pool has left: O(GPUs x (jobs + top)). */
static int greedy(drv_ctx *c, gjob *v, int32_t n, const int32_t *pool, int64_t *left)
{
    double *r = drv_arena_alloc(drv_ctx_arena(c), sizeof *r * ((size_t)n + 1));
    int32_t *k = drv_arena_alloc(drv_ctx_arena(c), sizeof *k * ((size_t)n + 1));
    if (!r || !k)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < n; i++)
        k[i] = v[i].want > 0 && v[i].u ? best_step(&v[i], left[POOL(i)], &r[i]) : 0;
    for (;;) {
        int32_t best = -1;
        for (int32_t i = 0; i < n; i++)
            if (k[i] > 0 && (best < 0 || r[i] > r[best] * (1 + 1e-12)))
                best = i;
        if (best < 0)
            return 0;
        v[best].want += k[best];
        left[POOL(best)] -= k[best];
        for (int32_t i = 0; i < n; i++)
            if (k[i] > 0 && (i == best || k[i] > left[POOL(i)]))
                k[i] = best_step(&v[i], left[POOL(i)], &r[i]);
    }
}

int goodput_grow_pooled(goodput *g, drv_ctx *c, gjob *v, int32_t n, const int32_t *pool,
                        int64_t *left)
{
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        x->u = NULL; /* none computed: it does not grow */
        if (x->want == 0 || left[POOL(i)] <= 0)
            continue;
        int64_t room = left[POOL(i)];
        x->top = x->want + room < x->nmax ? x->want + (int32_t)room : x->nmax;
        x->u = drv_arena_alloc(drv_ctx_arena(c), sizeof *x->u * ((size_t)x->top + 1));
        if (!x->u)
            return DRV_ENOMEM;
        for (int32_t k = x->minw; k <= x->top; k++)
            x->u[k] = value(g, x, k);
    }
    return greedy(c, v, n, pool, left);
}

/* 3. Allocation over v (in LAS order): each job's minimum while GPUs are left, then the GPUs
 * left greedily by utility per GPU. Sets v[i].want. Utilities are computed
 * only for jobs that got their minimum, up to what is left: O(min(jobs, GPUs) x min(most
 * workers, GPUs)) goodput evaluations. 0, or DRV_ENOMEM from the arena. */
int goodput_allocate(goodput *g, drv_ctx *c, gjob *v, int32_t n, int64_t gpus)
{
    /* 3a. its minimum (one worker) each, in LAS order */
    for (int32_t i = 0; i < n; i++)
        if (gpus >= v[i].minw) {
            v[i].want = v[i].minw;
            gpus -= v[i].minw;
        }
    if (gpus <= 0)
        return 0;
    return goodput_grow_pooled(g, c, v, n, NULL, &gpus);
}
