/*
 * optimus.c - Optimus' marginal-gain resource allocation (Peng et al., EuroSys'18; as the
 * Pollux artifact's simulator runs it).
 *
 * Why: the research baseline that sizes elastic jobs by how much each extra worker shortens
 * their remaining time, from a model of their convergence and of their speed.
 *
 * Algorithm, every cycle (the profile's period; 60 s under --mechanics pollux):
 *   1. Remaining work R of a job: its steps to convergence minus its steps done. The
 *      simulator's loss curve l(k) = 1/(b0*k + b1) + b2 (or a calibrated job's validation
 *      curve) is known exactly here, so the fitted curve is the true one; this is also what
 *      the Pollux simulator's Optimus does (it reads the validation curve).
 *   2. Speed s(n) in steps/s at n workers. A job with a calibrated model (calib.h) reads it
 *      from its measured profile: 1 / step time of n GPUs packed onto the fewest nodes, at its
 *      batch - what the Pollux simulator's Optimus does (predict_step_time). Learning it
 *      online instead was our low-load bias: with idle GPUs the extrapolation grew a job far
 *      past its size, the next measurement shrank it, and each change cost a restart
 *      (docs/data.md, "Peer fidelity"). Any other job: measured between two cycles in which it ran
 *      at n workers without a restart in between; for other n, the measured speed closest in
 *      n scaled by g(n) = n / (1 + sigma*(n - 1)), an Amdahl-style speed-up whose serial
 *      fraction sigma is fitted from the two most distant measured counts (knob `sigma` until
 *      two counts are measured).
 *   3. Every live job (submission order) gets one worker while the cluster has room; then, one
 *      worker at a time, the job with the largest gain  R * (1/s(n) - 1/s(n+1))  gets one more,
 *      up to its maximum. A job with no speed known yet grows first to its requested size.
 *   4. Jobs whose worker count changes are restarted at the new size (pods evicted, SCALE,
 *      re-placed), smallest jobs first, each on the nodes with most free GPUs (consolidated).
 *      Jobs left with no worker are preempted; they keep their progress.
 * Example: cifar10 measured at 2 workers (0.20 steps/s... per step time), at 4 it is predicted
 * from sigma; its gain for a third worker is R * (1/s(2) - 1/s(3)).
 *
 * Capacity is counted in GPUs (or CPU for CPU jobs) over the whole cluster, as Optimus does.
 * The pass runs at admit and at scale (so it ticks on the period); the second run in a cycle
 * changes nothing.
 */
#include "drover/calib.h"
#include "drover/policy.h"
#include "helper.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const drv_knob_spec knobs[] = {
    {"sigma", 0.05, 0, 1, "serial fraction of the speed-up model until it is fitted"},
};
/* MAXW: most workers Optimus gives a job; NSPEED: worker counts whose speed a job remembers
 * (the oldest is forgotten first), so its memory is bounded whatever its history. */
enum { NKNOBS = sizeof knobs / sizeof knobs[0], MAXW = 128, NSPEED = 16 };

typedef struct obs {
    double t, steps; /* the previous observation, when the job ran */
    int32_t n, restarts;
    bool valid;
    int16_t at[NSPEED]; /* worker counts measured ... */
    double sp[NSPEED];  /* ... and their steps/s */
    int8_t nsp, next;   /* entries used; the one to overwrite when full */
} obs;

typedef struct optimus {
    double sigma;
    double last; /* time of the last measurement pass */
    obs *o;
    int32_t cap;
} optimus;

static int o_init(void **state, const drv_knob *kv, int nkv, drv_diag *d)
{
    double v[NKNOBS];
    int rc = drv_knobs_read(knobs, NKNOBS, kv, nkv, v, d);
    if (rc)
        return rc;
    optimus *p = drv_calloc(1, sizeof *p);
    if (!p)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    p->sigma = v[0];
    p->last = -1;
    *state = p;
    return 0;
}

static void o_fini(void *state)
{
    optimus *p = state;
    if (!p)
        return;
    drv_free(p->o);
    drv_free(p);
}

static double g(double n, double sigma)
{
    return n / (1 + sigma * (n - 1));
}

/* Measured steps/s at n workers, or 0. */
static double measured(const obs *o, int32_t n)
{
    for (int i = 0; i < o->nsp; i++)
        if (o->at[i] == n)
            return o->sp[i];
    return 0;
}

static void remember(obs *o, int32_t n, double v)
{
    for (int i = 0; i < o->nsp; i++)
        if (o->at[i] == n) {
            o->sp[i] = v;
            return;
        }
    int i = o->nsp < NSPEED ? o->nsp++ : o->next;
    if (o->nsp == NSPEED && i == o->next)
        o->next = (int8_t)((o->next + 1) % NSPEED);
    o->at[i] = (int16_t)n;
    o->sp[i] = v;
}

/* Predicted steps/s at n workers, or 0 when nothing is measured. */
static double speed(const optimus *p, const obs *o, int32_t n)
{
    if (n <= 0)
        return 0;
    double m = measured(o, n);
    if (m > 0)
        return m;
    int32_t lo = 0, hi = 0, near = 0;
    for (int i = 0; i < o->nsp; i++) {
        int32_t k = o->at[i];
        if (!lo || k < lo)
            lo = k;
        if (k > hi)
            hi = k;
        if (!near || abs(k - n) < abs(near - n) || (abs(k - n) == abs(near - n) && k < near))
            near = k;
    }
    if (!near)
        return 0;
    double sigma = p->sigma;
    if (hi > lo) {
        double r = measured(o, hi) / measured(o, lo);
        double den = r * lo * (hi - 1) - (double)hi * (lo - 1);
        if (den != 0) {
            sigma = (hi - r * lo) / den;
            sigma = sigma < 0 ? 0 : sigma > 1 ? 1 : sigma;
        }
    }
    return measured(o, near) * g(n, sigma) / g(near, sigma);
}

/* Steps/s of a calibrated job at n replicas packed `per` to a node, read from its measured
 * profile as the Pollux simulator's Optimus reads it (predict_step_time: the true step time of
 * a packed placement); 0 for a job without a calibrated model. */
static double profiled(const drv_ctx *c, int32_t job, int32_t n, int32_t per)
{
    const drv_calib_jobs *m = drv_ctx_snap(c)->model;
    const drv_calib_job *cj = drv_calib_job_of(m, job);
    if (!cj || !m->calib || cj->app > m->calib->n || per <= 0 || n <= 0 || n > MAXW)
        return 0;
    int32_t gpn[MAXW], nn = 0;
    for (int32_t left = n; left > 0; left -= gpn[nn++])
        gpn[nn] = left < per ? left : per;
    double t = drv_calib_step_time(m->calib, cj->app - 1, gpn, nn, cj->batch);
    return t > 0 ? 1 / t : 0;
}

static int32_t bound_workers(const drv_ctx *c, const drv_job *j)
{
    int32_t n = 0;
    for (int32_t k = 0; k < j->pod_count; k++) {
        const drv_pod *pd = &drv_ctx_state(c)->pods[j->pod_base + k];
        if ((pd->role == DRV_ROLE_WORKER || pd->role == DRV_ROLE_CHIEF) &&
            drv_ctx_pod_node(c, j->pod_base + k) >= 0)
            n++;
    }
    return n;
}

static int measure(optimus *p, const drv_ctx *c)
{
    const drv_state *st = drv_ctx_state(c);
    double now = drv_ctx_now(c);
    if (st->njobs > p->cap) {
        int32_t nc = st->njobs + st->njobs / 2 + 16;
        obs *o = drv_realloc(p->o, (size_t)nc * sizeof *o);
        if (!o)
            return DRV_ENOMEM;
        memset(o + p->cap, 0, (size_t)(nc - p->cap) * sizeof *o);
        p->o = o;
        p->cap = nc;
    }
    if (now == p->last)
        return 0;
    p->last = now;
    DRV_FOR_LIVE(st, i)
    {
        const drv_job *j = drv_ctx_job_now(c, i); /* its steps read below */
        obs *o = &p->o[i];
        if (j->phase != DRV_JOB_RUNNING) {
            o->valid = false;
            continue;
        }
        int32_t n = j->bound[DRV_ROLE_WORKER] + j->bound[DRV_ROLE_CHIEF];
        if (o->valid && o->n == n && o->restarts == j->restarts && now > o->t && n <= MAXW &&
            j->steps > o->steps)
            remember(o, n, (j->steps - o->steps) / (now - o->t));
        o->t = now; /* the speeds measured so far stay */
        o->steps = j->steps;
        o->n = n;
        o->restarts = j->restarts;
        o->valid = true;
    }
    return 0;
}

static int32_t worker_max(const drv_job *j)
{
    return j->role[DRV_ROLE_WORKER].max > MAXW ? MAXW : j->role[DRV_ROLE_WORKER].max;
}

/* Resources one more worker takes, and a job's fixed part (PS, chief, evaluator). */
static drv_res fixed_part(const drv_job *j)
{
    drv_res r = {0, 0, 0};
    for (int role = 0; role < DRV_NROLES; role++)
        if (role != DRV_ROLE_WORKER)
            r = drv_res_add(r, drv_res_scale(j->role[role].req, j->role[role].replicas));
    return r;
}

typedef struct sub {
    double submit;
    int32_t job;
} sub;

static int cmp_sub(const void *pa, const void *pb)
{
    const sub *a = pa, *b = pb;
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    return (a->job > b->job) - (a->job < b->job);
}

static void pass(drv_ctx *c, optimus *p)
{
    const drv_state *st = drv_ctx_state(c);
    if (measure(p, c) != 0) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    drv_arena *a = drv_ctx_arena(c);
    int32_t *live = drv_arena_alloc(a, sizeof(int32_t) * ((size_t)st->nlive + 1));
    int32_t *want = drv_arena_alloc(a, sizeof(int32_t) * ((size_t)st->nlive + 1));
    double *gain = drv_arena_alloc(a, sizeof(double) * ((size_t)st->nlive + 1));
    if (!live || !want || !gain) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    int32_t n = 0;
    DRV_FOR_LIVE(st, i)
    if (st->jobs[i].phase != DRV_JOB_FUTURE && st->jobs[i].phase != DRV_JOB_DONE)
        live[n++] = i;
    /* submission order, then id */
    sub *ord = drv_arena_alloc(a, sizeof(sub) * ((size_t)n + 1));
    if (!ord) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    for (int32_t x = 0; x < n; x++)
        ord[x] = (sub){st->jobs[live[x]].submit, live[x]};
    qsort(ord, (size_t)n, sizeof *ord, cmp_sub);
    for (int32_t x = 0; x < n; x++)
        live[x] = ord[x].job;
    drv_res left = {0, 0, 0};
    int32_t per = 0; /* GPUs per node, for a packed placement */
    for (int32_t i = 0; i < st->nnodes; i++)
        if (st->nodes[i].schedulable) {
            left = drv_res_add(left, st->nodes[i].alloc);
            per = st->nodes[i].alloc.gpu > per ? (int32_t)st->nodes[i].alloc.gpu : per;
        }
    /* 3a. one worker each (or the job's minimum), in submission order */
    for (int32_t x = 0; x < n; x++) {
        const drv_job *j = &st->jobs[live[x]];
        int32_t base = j->role[DRV_ROLE_WORKER].min > 1 ? j->role[DRV_ROLE_WORKER].min : 1;
        drv_res need =
            drv_res_add(fixed_part(j), drv_res_scale(j->role[DRV_ROLE_WORKER].req, base));
        want[x] = 0;
        if (j->role[DRV_ROLE_WORKER].max >= base && drv_res_fits(need, left)) {
            want[x] = base;
            left = drv_res_sub(left, need);
        }
    }
    /* 3b. then by largest marginal gain */
    for (;;) {
        int32_t best = -1;
        double bestg = 0;
        for (int32_t x = 0; x < n; x++) {
            const drv_job *j = drv_ctx_job_now(c, live[x]); /* steps read below */
            if (want[x] == 0 || want[x] >= worker_max(j) ||
                !drv_res_fits(j->role[DRV_ROLE_WORKER].req, left))
                continue;
            const obs *o = &p->o[live[x]];
            double s0 = profiled(c, live[x], want[x], per),
                   s1 = profiled(c, live[x], want[x] + 1, per), gx;
            if (s0 <= 0 || s1 <= 0) {
                s0 = speed(p, o, want[x]);
                s1 = speed(p, o, want[x] + 1);
            }
            if (s0 <= 0 || s1 <= 0) /* unmeasured: its requested size first */
                gx = want[x] < j->role[DRV_ROLE_WORKER].replicas ? INFINITY : 0;
            else
                gx = (j->steps_total - j->steps) * (1 / s0 - 1 / s1);
            if (gx > bestg) {
                bestg = gx;
                best = x;
            }
        }
        if (best < 0)
            break;
        want[best]++;
        left = drv_res_sub(left, st->jobs[live[best]].role[DRV_ROLE_WORKER].req);
    }
    /* 4. apply: drop, then re-place the changed jobs, smallest first */
    for (int32_t x = 0; x < n; x++) {
        const drv_job *j = &st->jobs[live[x]];
        int32_t have = bound_workers(c, j);
        bool running = have > 0;
        if (running && have == want[x] && drv_ctx_workers(c, live[x]) == want[x])
            continue;
        for (int32_t k = 0; running && k < j->pod_count; k++)
            if (drv_ctx_evict(c, j->pod_base + k,
                              want[x] == 0 ? DRV_REASON_PREEMPT : DRV_REASON_SHRINK) != 0)
                return;
        if (want[x] > 0 && drv_ctx_scale(c, live[x], want[x]) != 0)
            return;
    }
    for (int32_t size = 1; size <= MAXW; size++)
        for (int32_t x = 0; x < n; x++)
            if (want[x] == size && bound_workers(c, &st->jobs[live[x]]) < size &&
                drv_place_packed(c, live[x]) < 0)
                return;
}

static void o_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t njobs)
{
    (void)jobs;
    (void)njobs;
    pass(c, state);
}

static void o_scale(drv_ctx *c, void *state)
{
    pass(c, state);
}

const drv_plugin drv_plugin_optimus = {
    .name = "optimus",
    .doc = "marginal-gain worker allocation from remaining work and learnt speed (Optimus)",
    .init = o_init,
    .fini = o_fini,
    .admit = o_admit,
    .scale = o_scale,
};
