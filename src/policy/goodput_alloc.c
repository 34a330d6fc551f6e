/*
 * goodput_alloc.c - who gets how many GPUs in a round of the goodput plugin (goodput.c has the
 * design note): each job's minimum in LAS order while GPUs are left, then the rest by the
 * fairness-weighted utility of speed-ups, u(s) = s^p / p, greedily per GPU or exactly.
 */
#include "goodput.h"

#include <math.h>

static double utility(const goodput *g, double s)
{
    if (s <= 0)
        return -INFINITY;
    return g->p == 0 ? log(s) : pow(s, g->p) / g->p;
}

/* Utility of job x at n workers (n >= 1). */
static double value(goodput *g, const gjob *x, int32_t n)
{
    double s = goodput_of(g, x, n) / x->base;
    if (n != x->have && (x->running || g->price_start))
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

/* 3b, greedy: repeatedly the job and count whose extra GPUs raise the utility most per GPU
 * (the first in LAS order among equals), while it rises. Each job's best step is kept and
 * recomputed only when it was chosen or asks for more GPUs than are left: O(GPUs x (jobs +
 * top)). */
static int greedy(drv_ctx *c, gjob *v, int32_t n, int64_t gpus)
{
    double *r = drv_arena_alloc(drv_ctx_arena(c), sizeof *r * ((size_t)n + 1));
    int32_t *k = drv_arena_alloc(drv_ctx_arena(c), sizeof *k * ((size_t)n + 1));
    if (!r || !k)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < n; i++)
        k[i] = v[i].want > 0 ? best_step(&v[i], gpus, &r[i]) : 0;
    for (;;) {
        int32_t best = -1;
        for (int32_t i = 0; i < n; i++)
            if (k[i] > 0 && (best < 0 || r[i] > r[best] * (1 + 1e-12)))
                best = i;
        if (best < 0)
            return 0;
        v[best].want += k[best];
        gpus -= k[best];
        for (int32_t i = 0; i < n; i++)
            if (k[i] > 0 && (i == best || k[i] > gpus))
                k[i] = best_step(&v[i], gpus, &r[i]);
    }
}

/* 3b, exact: the counts that maximise the sum of utilities with at most `gpus` more GPUs in
 * all, by dynamic programming over the jobs (a multiple-choice knapsack on one resource):
 * f[e] = the best rise of the jobs so far with at most e more GPUs; the smallest count among
 * equals. O(jobs x gpus x top) time, O(jobs x gpus) memory. */
static int exact(drv_ctx *c, gjob *v, int32_t n, int64_t gpus)
{
    drv_arena *a = drv_ctx_arena(c);
    size_t e1 = (size_t)gpus + 1, m = 0;
    for (int32_t i = 0; i < n; i++)
        m += v[i].want > 0;
    double *f = drv_arena_alloc(a, sizeof *f * e1), *nf = drv_arena_alloc(a, sizeof *nf * e1);
    int32_t *pick = drv_arena_alloc(a, sizeof *pick * e1 * (m + 1));
    if (!f || !nf || !pick)
        return DRV_ENOMEM;
    for (size_t e = 0; e < e1; e++)
        f[e] = 0;
    int32_t *row = pick;
    for (int32_t i = 0; i < n; i++) {
        const gjob *x = &v[i];
        if (x->want == 0)
            continue;
        for (size_t e = 0; e < e1; e++) {
            double best = f[e];
            int32_t bk = 0;
            for (int32_t k = 1; x->want + k <= x->top && (size_t)k <= e; k++) {
                double q = f[e - (size_t)k] + (x->u[x->want + k] - x->u[x->want]);
                if (q > best + 1e-12 * fabs(best) + 1e-300) {
                    best = q;
                    bk = k;
                }
            }
            nf[e] = best;
            row[e] = bk;
        }
        row += e1;
        double *t = f;
        f = nf;
        nf = t;
    }
    size_t e = e1 - 1;
    for (int32_t i = n - 1; i >= 0; i--) {
        if (v[i].want == 0)
            continue;
        row -= e1;
        int32_t k = row[e];
        v[i].want += k;
        e -= (size_t)k;
    }
    return 0;
}

/* 3. Allocation over v (in LAS order): each job's minimum while GPUs are left, then the GPUs
 * left by utility (greedy or exact, knob `search`). Sets v[i].want. Utilities are computed
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
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        if (x->want == 0)
            continue;
        x->top = x->want + gpus < x->nmax ? x->want + (int32_t)gpus : x->nmax;
        x->u = drv_arena_alloc(drv_ctx_arena(c), sizeof *x->u * ((size_t)x->top + 1));
        if (!x->u)
            return DRV_ENOMEM;
        for (int32_t k = x->minw; k <= x->top; k++)
            x->u[k] = value(g, x, k);
    }
    return g->exact ? exact(c, v, n, gpus) : greedy(c, v, n, gpus);
}
