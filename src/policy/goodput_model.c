/*
 * goodput_model.c - a job's goodput on n GPUs for the goodput plugin (goodput.c has the design
 * note): online, from the job's own throughput model (online.h) and the gradient statistics at
 * its current batch; for the oracle ablation, from the measured profiles, cached per (model, n
 * packed, epoch) in tables. And the price of changing a job's allocation.
 */
#include "goodput.h"

#include <math.h>

int32_t goodput_packed(int32_t n, int32_t per, int32_t *gpn)
{
    int32_t k = 0;
    while (n > 0 && k < GOODPUT_MAXNODES) {
        gpn[k] = n < per ? n : per;
        n -= gpn[k++];
    }
    return k;
}

void goodput_drop_tables(goodput *g)
{
    for (int32_t i = 0; i < g->ntab; i++) {
        drv_free(g->tab[i].v);
        for (int32_t n = 0; n <= GOODPUT_MAXW; n++)
            drv_free(g->tab[i].cand[n].batch);
    }
    drv_free(g->tab);
    g->tab = NULL;
    g->ntab = 0;
}

/* The oracle's goodput tables: per model of this calibration, for this cluster's GPUs per node
 * (rebuilt when either changes). False when there are none to plan with. */
bool goodput_ready_tables(const drv_ctx *c, goodput *g, const drv_calib *calib)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t per = 0;
    for (int32_t nd = 0; nd < st->nnodes; nd++)
        if (st->nodes[nd].alloc.gpu > per)
            per = (int32_t)st->nodes[nd].alloc.gpu;
    if (g->calib != calib || g->gpn != per) {
        goodput_drop_tables(g);
        g->tab = drv_calloc((size_t)calib->n + 1, sizeof *g->tab);
        if (!g->tab) {
            drv_ctx_fail(c, DRV_ENOMEM);
            return false;
        }
        g->ntab = calib->n;
        g->calib = calib;
        g->gpn = per;
    }
    return per > 0;
}

/* G(model, n, epoch) for a job with batch range [lo, hi]; 0 when n GPUs cannot run it. */
static double table_goodput(goodput *g, const drv_calib_job *j, int32_t n, int32_t epoch,
                            double *batch)
{
    int32_t app = j->app - 1, gpn[GOODPUT_MAXNODES];
    const drv_calib_app *a = &g->calib->v[app];
    if (n <= 0 || n > GOODPUT_MAXW)
        return 0;
    table *t = app < g->ntab ? &g->tab[app] : NULL;
    if (t && !t->v) {
        t->v = drv_calloc((size_t)(GOODPUT_MAXW + 1) * (size_t)a->max_epochs, sizeof *t->v);
        t->lo = j->batch_min;
        t->hi = j->batch_max;
    }
    cell *x = t && t->v && t->lo == j->batch_min && t->hi == j->batch_max
                  ? &t->v[(size_t)n * (size_t)a->max_epochs + (size_t)epoch]
                  : NULL;
    if (!x || x->batch == 0) {
        cell y = {0, 0};
        int32_t nn = goodput_packed(n, g->gpn, gpn);
        cands *k = x ? &t->cand[n] : NULL;
        if (k && !k->batch) {
            k->batch = drv_malloc(2 * DRV_CALIB_MAXCAND * sizeof *k->batch);
            if (k->batch) {
                k->step = k->batch + DRV_CALIB_MAXCAND;
                k->n = drv_calib_batches(g->calib, app, gpn, nn, j->batch_min, j->batch_max,
                                         k->batch, k->step);
            }
        }
        if (k && k->batch) { /* as drv_calib_best_batch, from the cached step times */
            for (int32_t i = 0; i < k->n; i++) {
                double gp = k->step[i] > 0
                                ? drv_calib_gain(g->calib, app, k->batch[i], epoch) / k->step[i]
                                : 0;
                if (gp > y.goodput) {
                    y.goodput = gp;
                    y.batch = k->batch[i];
                }
            }
        } else {
            y.batch = drv_calib_best_batch(g->calib, app, gpn, nn, epoch, j->batch_min,
                                           j->batch_max, &y.goodput);
        }
        if (y.batch == 0)
            y.batch = -1; /* computed: no batch fits */
        if (!x) {
            if (batch)
                *batch = y.batch;
            return y.goodput;
        }
        *x = y;
    }
    if (batch)
        *batch = x->batch;
    return x->goodput;
}

/* Online (oracle=0): job x's best goodput on n GPUs packed on the fewest nodes (of x->gpn
 * GPUs), from its fit x->fit and the gradient statistics at its current batch (its batch into
 * *batch when not NULL), times x->fscale. Before its first measurement Pollux's prior: a
 * linear speed-up, G(n) = n (times x->fscale), its batch kept (0). */
static double online_goodput(const goodput *g, const gjob *x, int32_t n, double *batch)
{
    const drv_online_job *o = x->fit;
    double gp = 0, b = 0;
    if (!o || o->nobs == 0)
        gp = n;
    else if (n >= 1)
        b = drv_online_best_batch(o, &g->calib->v[x->cj->app - 1], &x->grad,
                                  (n + x->gpn - 1) / x->gpn, n, x->cj->batch_min, x->cj->batch_max,
                                  &gp);
    if (batch)
        *batch = b;
    return gp * x->fscale;
}

double goodput_of(goodput *g, const gjob *x, int32_t n)
{
    return g->oracle ? table_goodput(g, x->cj, n, x->epoch, NULL) : online_goodput(g, x, n, NULL);
}

/* Online: the job's predicted goodput at its current batch where it is placed. */
double goodput_now(const goodput *g, const gjob *x, int32_t nodes, int32_t replicas)
{
    const drv_online_job *o = x->fit;
    double atomic;
    int32_t accum;
    if (replicas < 1 || !o)
        return 0;
    drv_calib_split(&g->calib->v[x->cj->app - 1], replicas, x->cj->batch, &atomic, &accum);
    double t = drv_online_step(o, nodes, replicas, atomic, accum);
    return t > 0 ? drv_online_gain(&x->grad, x->cj->batch) / t : 0;
}

double goodput_best_batch(goodput *g, const gjob *x, const int32_t *gpn, int32_t nn, double *gp)
{
    const drv_calib_job *j = x->cj;
    int32_t r = 0, pk[GOODPUT_MAXNODES];
    for (int32_t i = 0; i < nn; i++)
        r += gpn[i];
    if (!g->oracle) {
        const drv_online_job *o = x->fit;
        *gp = 0;
        return !o || o->nobs == 0 ? 0
                                  : drv_online_best_batch(o, &g->calib->v[j->app - 1], &x->grad, nn,
                                                          r, j->batch_min, j->batch_max, gp);
    }
    /* packed the way the table assumes (in some node order): its cached answer */
    int32_t np = goodput_packed(r, g->gpn, pk), full = 0, part = 0;
    for (int32_t i = 0; i < nn; i++)
        full += gpn[i] == g->gpn, part += gpn[i] != g->gpn;
    if (np == nn && part <= 1 && full == (r % g->gpn ? np - 1 : np) && r <= GOODPUT_MAXW) {
        double b = 0;
        *gp = table_goodput(g, j, r, x->epoch, &b);
        return b > 0 ? b : 0;
    }
    return drv_calib_best_batch(g->calib, j->app - 1, gpn, nn, x->epoch, j->batch_min, j->batch_max,
                                gp);
}

/* The price of changing job j's allocation, as a factor on its speed-up: (1 - penalty) times
 * Pollux's max(age - restarts * delay, 0) / (age + delay), which is near 0 for a young or
 * often-restarted job and tends to 1 as it ages (age from its submission). */
double goodput_change_price(const goodput *g, const drv_job *j, double now)
{
    double f = 1 - g->penalty;
    if (g->delay > 0) {
        double age = fmax(now - j->submit, 0);
        f *= fmax(age - j->restarts * g->delay, 0) / (age + g->delay);
    }
    return f;
}
