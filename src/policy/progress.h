/*
 * progress.h - what the progress-aware plugins (dragon, flowcon, specon) read from a job's
 * progress samples, in one place so they agree: the recent rate in worker-steps per second,
 * the time left at that rate, the largest loss seen (for normalising) and the per-job growth
 * classification state (FlowCon's and SpeCon's two-strike watching/converging machine).
 * Internal to src/policy; not a public header.
 */
#ifndef DROVER_POLICY_PROGRESS_H
#define DROVER_POLICY_PROGRESS_H

#include "drover/cycle.h"

#include <math.h>

/* Worker-steps per second over the newest samples (up to 4 back); 0 when unknown. */
static inline double drv_job_rate(const drv_job *j)
{
    if (j->nhist < 2)
        return 0;
    const drv_sample *a = drv_job_sample(j, 0);
    int k = j->nhist - 1 < 4 ? j->nhist - 1 : 4;
    const drv_sample *b = drv_job_sample(j, k);
    double dt = a->t - b->t;
    return dt > 0 && a->steps > b->steps ? (a->steps - b->steps) / dt : 0;
}

/* Seconds the job still needs at its recent rate; INFINITY when the rate is unknown. */
static inline double drv_job_remaining(const drv_job *j)
{
    double r = drv_job_rate(j);
    double left = j->steps_total - j->steps;
    return r > 0 ? (left > 0 ? left / r : 0) : INFINITY;
}

/* Two-strike growth classification (FlowCon 2.0; SpeCon feeds it its last two measurements). */
typedef struct drv_growth {
    double g;        /* last growth value, < 0 when not yet measured */
    double max_loss; /* largest loss seen, for normalising */
    bool watching;   /* one slow measurement seen */
    bool completing; /* two in a row: converging */
    double seen_t;   /* time of the newest sample folded into max_loss */
} drv_growth;

/* Folds the job's samples into g->max_loss. Only samples at or after the newest one already
 * folded are read: any older sample still in the ring was in it at the last fold too (the ring
 * keeps the newest), so the result equals the maximum over the whole ring and g's past. */
static inline void drv_growth_see(drv_growth *g, const drv_job *j)
{
    for (int i = 0; i < j->nhist; i++) {
        const drv_sample *x = drv_job_sample(j, i);
        if (x->t < g->seen_t)
            break;
        if (x->loss > g->max_loss)
            g->max_loss = x->loss;
    }
    if (j->nhist > 0)
        g->seen_t = drv_job_sample(j, 0)->t;
}

/* Applies one measurement g against threshold alpha (FlowCon's state machine). */
static inline void drv_growth_update(drv_growth *s, double g, double alpha)
{
    s->g = g;
    if (g >= alpha) {
        s->watching = s->completing = false;
    } else if (!s->watching && !s->completing) {
        s->watching = true;
    } else {
        s->watching = false;
        s->completing = true;
    }
}

/* Grows a per-job array of drv_growth to n entries (new ones unmeasured). 0 or DRV_ENOMEM. */
static inline int drv_growth_reserve(drv_growth **v, int32_t *cap, int32_t n)
{
    if (n <= *cap)
        return 0;
    int32_t ncap = n < 64 ? 64 : n + n / 2;
    drv_growth *p = drv_realloc(*v, (size_t)ncap * sizeof *p);
    if (!p)
        return DRV_ENOMEM;
    for (int32_t i = *cap; i < ncap; i++)
        p[i] = (drv_growth){-1, 0, false, false, -INFINITY};
    *v = p;
    *cap = ncap;
    return 0;
}

/* The job's compute pods (workers and chief) are those that do the steps. */
static inline bool drv_pod_computes(const drv_pod *p)
{
    return p->role == DRV_ROLE_WORKER || p->role == DRV_ROLE_CHIEF;
}

#endif
