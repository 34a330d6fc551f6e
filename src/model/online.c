/*
 * online.c - a job's throughput model learnt from its own measurements (online.h), as Pollux's
 * agent fits it (Qiao et al., OSDI'21, sec. 3.2; adaptdl's goodput.py fit_perf_params), and
 * the goodput of a batch from gradient statistics measured at the current batch only.
 *
 * Why: a scheduler that reads every placement's measured step time knows more than any real
 * scheduler can (docs/peer-fidelity.md). A job measures only what it runs: per configuration
 * (nodes, replicas, per-pass batch, accumulation) its pass time T_grad and its sync time.
 *
 * Fit, after each new configuration (closed form, at most DRV_ONLINE_MAXOBS points):
 *   1. ac, bc: least squares of T_grad on the per-pass batch; with one batch seen, Pollux's
 *      fixing: ac = mean / 2 and bc the rest (optimistic about bigger batches).
 *   2. ar, br over single-node multi-replica points, an, bn over multi-node ones: least
 *      squares of the sync time on replicas - 2; one replica count seen: the mean, slope 0
 *      (optimistic: no retrogression until two counts show one, as Pollux fixes the slopes
 *      while no job ran more than 2 replicas and penalises them in its fit); none seen: 0
 *      (Pollux's fixed lower bounds), so an unexplored shape looks free to sync and the prior
 *      is a linear speed-up.
 *   Negative least-squares coefficients are clamped to 0 with the other refitted.
 *   Prior across nodes (Pollux's): with no multi-node point, an >= inter_prior * ar and
 *   bn >= inter_prior * br (1.1): a job that has measured its sync on one node expects
 *   crossing nodes to cost at least that much more, not nothing.
 *   3. gamma in [1, 10] (steps of 0.05): the overlap that best explains the synchronised pass
 *      (T_grad + sync as measured) from the fitted terms, in squared log error.
 * Prediction: the model's step time; at a shape (nodes, replicas) it has measured, scaled by
 * measured / modelled at its measurement there nearest in per-replica batch (`residual`), so a
 * configuration it ran is predicted as it ran, and the fit's error matters only elsewhere.
 * Example: cifar10 seen on 1 replica only (T_grad 0.02 s at 128): ac = bc * 128 = 0.01, no
 * sync, so 4 replicas on one node are predicted 4x as fast - until it runs there and the
 * measured sync time enters ar; from then on 8 replicas on 2 nodes are predicted with an
 * inter-node sync of at least 1.1 times that, until it runs across nodes.
 */
#include "drover/online.h"

#include <math.h>
#include <string.h>

void drv_online_job_init(drv_online_job *o)
{
    memset(o, 0, sizeof *o);
    o->p.gamma = 1;
    o->inter_prior = DRV_ONLINE_INTER_PRIOR;
    o->residual = true;
}

void drv_online_job_fini(drv_online_job *o)
{
    if (!o)
        return;
    drv_free(o->obs);
    memset(o, 0, sizeof *o);
}

/* y = a + b x by least squares over n points, a and b >= 0; one distinct x: a = mean, b = 0.
 * Returns false when n == 0 (a = b = 0). */
static bool line(const double *x, const double *y, int32_t n, double *a, double *b)
{
    *a = *b = 0;
    if (n == 0)
        return false;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (int32_t i = 0; i < n; i++) {
        sx += x[i];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
    }
    double den = n * sxx - sx * sx;
    if (fabs(den) <= 1e-12 * (n * sxx + 1)) { /* one distinct x */
        *a = fmax(sy / n, 0);
        return true;
    }
    *b = (n * sxy - sx * sy) / den;
    *a = (sy - *b * sx) / n;
    if (*b < 0) { /* clamp: a constant */
        *b = 0;
        *a = fmax(sy / n, 0);
    } else if (*a < 0) { /* clamp: through the origin */
        *a = 0;
        *b = sxx > 0 ? fmax(sxy / sxx, 0) : 0;
    }
    return true;
}

static double sync_of(const drv_online_params *p, int32_t nodes, int32_t replicas)
{
    if (replicas <= 1)
        return 0;
    double r = replicas - 2;
    return nodes <= 1 ? p->ar + p->br * r : p->an + p->bn * r;
}

static double iter_time(double tg, double ts, double gamma)
{
    if (ts <= 0)
        return tg;
    if (tg <= 0)
        return ts;
    return pow(pow(tg, gamma) + pow(ts, gamma), 1 / gamma);
}

/* The pass time the compute terms explain: on one GPU (no sync term) the whole pass. */
static double pass_time(const drv_calib_sample *s)
{
    return s->compute + (s->replicas == 1 ? s->sync : 0);
}

static void refit(drv_online_job *o)
{
    double x[DRV_ONLINE_MAXOBS] = {0}, y[DRV_ONLINE_MAXOBS] = {0};
    drv_online_params p = {0};
    int32_t n = o->nobs;
    /* 1. compute */
    for (int32_t i = 0; i < n; i++) {
        x[i] = o->obs[i].atomic;
        y[i] = pass_time(&o->obs[i]);
    }
    bool one = true;
    for (int32_t i = 1; i < n; i++)
        one = one && x[i] == x[0];
    line(x, y, n, &p.ac, &p.bc);
    if (one && n > 0 && x[0] > 0) { /* one batch seen: Pollux's fixing */
        p.ac /= 2;
        p.bc = p.ac / x[0];
    }
    /* 2. sync within one node, then across nodes */
    for (int pass = 0; pass < 2; pass++) {
        int32_t m = 0;
        for (int32_t i = 0; i < n; i++) {
            const drv_calib_sample *s = &o->obs[i];
            if (s->replicas > 1 && (s->nodes > 1) == (pass == 1)) {
                /* what the compute terms leave of the synchronised pass: the totals fit */
                x[m] = s->replicas - 2;
                y[m++] = fmax(s->compute + s->sync - (p.ac + p.bc * s->atomic), 0);
            }
        }
        if (pass == 0)
            line(x, y, m, &p.ar, &p.br);
        else if (!line(x, y, m, &p.an, &p.bn)) { /* no multi-node point: Pollux's prior */
            p.an = o->inter_prior * p.ar;
            p.bn = o->inter_prior * p.br;
        }
    }
    /* 3. overlap */
    double best = INFINITY;
    p.gamma = 1;
    for (int32_t k = 0; k <= 180; k++) {
        double gm = 1 + 0.05 * k, err = 0;
        for (int32_t i = 0; i < n; i++) {
            const drv_calib_sample *s = &o->obs[i];
            double tg = p.ac + p.bc * s->atomic, ts = sync_of(&p, s->nodes, s->replicas);
            double pred = iter_time(tg, ts, gm), seen = pass_time(s) + (s->replicas > 1) * s->sync;
            if (pred > 0 && seen > 0)
                err += pow(log(pred / seen), 2);
        }
        if (err < best - 1e-15) {
            best = err;
            p.gamma = gm;
        }
    }
    o->p = p;
    o->version++;
}

int drv_online_observe(drv_online_job *o, const drv_calib_sample *s)
{
    if (s->replicas < 1 || s->nodes < 1 || !(s->step > 0) || !(s->compute >= 0) || !(s->sync >= 0))
        return DRV_EINVAL;
    int32_t k = 0;
    while (k < o->nobs && !(o->obs[k].nodes == s->nodes && o->obs[k].replicas == s->replicas &&
                            o->obs[k].atomic == s->atomic && o->obs[k].accum == s->accum))
        k++;
    if (k < o->nobs && o->obs[k].compute == s->compute && o->obs[k].sync == s->sync)
        return 0; /* the same again: nothing new to fit */
    if (k == o->nobs) {
        if (o->nobs == DRV_ONLINE_MAXOBS) { /* forget the oldest */
            memmove(o->obs, o->obs + 1, sizeof *o->obs * (size_t)(o->nobs - 1));
            k = --o->nobs;
        } else if (drv_grow(&o->obs, sizeof *o->obs, &o->cap, o->nobs + 1) != 0) {
            return DRV_ENOMEM;
        }
        o->nobs++;
    }
    o->obs[k] = *s;
    if (s->replicas > o->most)
        o->most = s->replicas;
    refit(o);
    return 0;
}

static double model_step(const drv_online_params *p, int32_t nodes, int32_t replicas, double atomic,
                         int32_t accum)
{
    double tg = p->ac + p->bc * atomic;
    return accum * tg + iter_time(tg, sync_of(p, nodes, replicas), p->gamma);
}

double drv_online_step(const drv_online_job *o, int32_t nodes, int32_t replicas, double atomic,
                       int32_t accum)
{
    if (replicas < 1)
        return 0;
    double t = model_step(&o->p, nodes, replicas, atomic, accum);
    if (o->residual) { /* the shape measured: the model scaled to its nearest measurement */
        const drv_calib_sample *near = NULL;
        for (int32_t i = 0; i < o->nobs; i++) {
            const drv_calib_sample *s = &o->obs[i];
            if (s->nodes == nodes && s->replicas == replicas &&
                (!near || fabs(s->atomic - atomic) < fabs(near->atomic - atomic)))
                near = s;
        }
        if (near) {
            double m = model_step(&o->p, near->nodes, near->replicas, near->atomic, near->accum);
            if (m > 0)
                t *= near->step / m;
        }
    }
    return t;
}

double drv_online_gain(const drv_online_grad *g, double batch)
{
    double scale = batch / g->init_bsz;
    double den = g->var / scale + g->sqr;
    return den > 0 ? (g->var + g->sqr) / den : 1;
}

void drv_online_noise_init(drv_online_noise *n)
{
    *n = (drv_online_noise){.epoch = -1};
}

double drv_online_noise_ahead(drv_online_noise *n, const drv_online_grad *g, int32_t epoch,
                              double now, double ahead)
{
    if (ahead <= 0 || !(g->sqr > 0) || !(g->var > 0))
        return g->var;
    double lphi = log(g->var / g->sqr);
    if (n->epoch < 0 || epoch < n->epoch) { /* first, or a new run of the job: start again */
        *n = (drv_online_noise){.epoch = epoch, .lphi = lphi, .at = now};
    } else if (epoch > n->epoch) {
        double de = epoch - n->epoch;
        double slope = (lphi - n->lphi) / de;
        n->slope = n->slope == 0 ? slope : 0.5 * n->slope + 0.5 * slope;
        n->rate = de / fmax(now - n->at, 1);
        n->epoch = epoch;
        n->lphi = lphi;
        n->at = now;
    }
    double on = n->slope * n->rate * ahead; /* log phi's rise over `ahead` seconds */
    return on > 0 ? g->var * exp(fmin(on, 1)) : g->var;
}

double drv_online_best_batch(const drv_online_job *o, const drv_calib_app *app,
                             const drv_online_grad *g, int32_t nodes, int32_t replicas, double lo,
                             double hi, double *goodput)
{
    double best = 0, bestg = 0;
    if (replicas >= 1) {
        double llo = fmax(ceil(lo / replicas - 1e-9), ceil(app->min_local_bsz - 1e-9)),
               lhi = floor(hi / replicas + 1e-9);
        llo = fmax(llo, 1);
        /* a geometric grid over [llo, lhi] with its ends, then the multiples of the largest
         * local batch (where accumulation adds a pass): DRV_ONLINE_CANDS in all */
        enum { GRID = DRV_ONLINE_CANDS - 8 };
        double l[DRV_ONLINE_CANDS];
        int32_t n = 0;
        for (int32_t k = 0; llo <= lhi && k <= GRID; k++)
            l[n++] = k == GRID ? lhi : floor(llo * pow(lhi / llo, (double)k / GRID) + 0.5);
        for (double m = app->max_local_bsz; llo <= lhi && m <= lhi && n < DRV_ONLINE_CANDS;
             m += app->max_local_bsz)
            if (m >= llo)
                l[n++] = m;
        for (int32_t i = 0; i < n; i++) {
            double b = l[i] * replicas, atomic;
            int32_t accum;
            drv_calib_split(app, replicas, b, &atomic, &accum);
            double t = drv_online_step(o, nodes, replicas, atomic, accum);
            double gp = t > 0 ? drv_online_gain(g, b) / t : 0;
            if (gp > bestg * (1 + 1e-12) || (best == 0 && gp > 0)) {
                bestg = gp;
                best = b;
            }
        }
    }
    if (goodput)
        *goodput = bestg;
    return best;
}
