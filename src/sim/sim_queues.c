/*
 * sim_queues.c - tenants in the simulator: the cluster file's queues (queues_read.c) entered
 * into the state, each job's queue name mapped to its queue, and what a run measures per queue
 * and across them (docs/formats.md "Queues", docs/model.md "Queues and fairness").
 *
 * Setup refuses two inputs that cannot be meant: a job naming a queue the cluster file does not
 * declare (the default queue, "default", always exists), and a job whose smallest gang is above
 * the most its queue may ever hold - its nominal quota plus what it may borrow, which is at most
 * the nominal quota the other queues of its cohort have - as it could never be admitted once
 * quotas are enforced. Both name the job's file and line. Without declared queues nothing here
 * runs: the state holds no queue and every output is as before.
 *
 * Measures, between events (the used resources of a queue are the state's, derived on bind):
 *  - share: the queue's dominant share (DRF) of the cluster, max over cpu, memory and gpu of
 *    used / capacity, averaged over the run's window (the utilisation window);
 *  - quota use: max over dimensions with a finite quota > 0 of used / quota, averaged likewise;
 *  - Jain's index over the weighted shares share/weight of the queues with jobs;
 *  - finish-time fairness rho per finished job (drv_ftf_rho), its maximum and Jain's index;
 *  - with the profile's half_life > 0, the queue's decayed usage at the end (usage.h).
 *
 * Worked example (tests/sim/test_queues.c): queues a (weight 1) and b (weight 3) holding on
 * average 20 % and 60 % of the cluster have weighted shares 0.2 and 0.2: Jain's index 1. With
 * shares 0.4 and 0.4 they are 0.4 and 0.133: (0.533)^2 / (2 * (0.16 + 0.0178)) = 0.8.
 */
#include "sim_int.h"

#include <stdio.h>
#include <string.h>

static int64_t add_sat(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? DRV_UNLIMITED : r;
}

static int64_t dim(drv_res r, int k)
{
    return k == 0 ? r.cpu : k == 1 ? r.mem : r.gpu;
}

/* "cpu 4", "cpu 500m", "memory 8Gi", "gpu 2": one dimension as people write it. */
static void dim_text(int k, int64_t v, char *buf, size_t n)
{
    if (k == 0 && v % 1000 == 0)
        snprintf(buf, n, "cpu %lld", (long long)(v / 1000));
    else if (k == 0)
        snprintf(buf, n, "cpu %lldm", (long long)v);
    else if (k == 1)
        snprintf(buf, n, "memory %.4gGi", (double)v / (1LL << 30));
    else
        snprintf(buf, n, "gpu %lld", (long long)v);
}

/* "w.yaml:12: job a: " or "job a: " (a generated job) before the message. */
static int job_error(const drv_sim *s, const drv_jobspec *js, drv_diag *d, const char *what)
{
    const char *file = s->cfg.workload_file;
    if (file && js->line > 0)
        return drv_fail(d, DRV_EINVAL, "%s:%d: job %s: %s", file, js->line, js->name, what);
    return drv_fail(d, DRV_EINVAL, "job %s: %s", js->name, what);
}

/* The most queue q may ever hold in dimension k: its quota plus the least of its borrowing
 * limit and the nominal quota of the other queues of its cohort. O(queues). */
static int64_t ceiling(const drv_state *st, int32_t q, int k)
{
    const drv_queue *x = &st->queues[q];
    int64_t lendable = 0;
    for (int32_t o = 0; x->cohort != 0 && o < st->nqueues; o++)
        if (o != q && st->queues[o].cohort == x->cohort)
            lendable = add_sat(lendable, dim(st->queues[o].quota, k));
    int64_t b = dim(x->borrow, k) < lendable ? dim(x->borrow, k) : lendable;
    return add_sat(dim(x->quota, k), b);
}

/* Job i's queue as a state id in s->qidx[i], refusing an undeclared queue and a gang above the
 * queue's ceiling. */
static int map_job(drv_sim *s, int32_t i, drv_diag *d)
{
    const drv_jobspec *js = &s->wl->jobs[i];
    const drv_state *st = &s->st;
    char what[1024];
    int32_t q = drv_state_find_queue(st, s->names[i].queue);
    if (q < 0) {
        size_t len =
            (size_t)snprintf(what, sizeof what,
                             "queue '%s' is not declared in the cluster file (queues:", js->queue);
        for (int32_t k = 0; k < st->nqueues && len < sizeof what; k++)
            len += (size_t)snprintf(what + len, sizeof what - len, "%s %s", k ? "," : "",
                                    drv_strtab_str(st->names, st->queues[k].name));
        if (len < sizeof what)
            snprintf(what + len, sizeof what - len, ")");
        return job_error(s, js, d, what);
    }
    s->qidx[i] = q;
    drv_res need = {0, 0, 0};
    for (int r = 0; r < DRV_NROLES; r++) {
        int64_t n = js->role[r].min < js->role[r].replicas ? js->role[r].min : js->role[r].replicas;
        need = drv_res_add(need, drv_res_scale(js->role[r].req, n));
    }
    for (int k = 0; k < 3; k++) {
        int64_t cap = ceiling(st, q, k);
        if (dim(need, k) <= cap)
            continue;
        char n[48], c[48];
        dim_text(k, dim(need, k), n, sizeof n);
        dim_text(k, cap, c, sizeof c);
        const drv_queuespec *qs = NULL;
        for (int32_t k2 = 0; k2 < s->cluster->nqueues; k2++)
            if (strcmp(s->cluster->queues[k2].name, js->queue) == 0)
                qs = &s->cluster->queues[k2];
        snprintf(what, sizeof what,
                 "its smallest gang needs %s, more than queue '%s' may ever hold (%s: its "
                 "nominalQuota plus what it may borrow, %s:%d); it could never be admitted",
                 n, js->queue, c, s->cluster->queue_file, qs ? qs->line : 0);
        return job_error(s, js, d, what);
    }
    return 0;
}

/* Adds queue spec q to the state; *id receives its id. */
static int add_queue(drv_sim *s, const drv_queuespec *q, int32_t *id, drv_diag *d)
{
    drv_queue x = {
        .weight = q->weight, .quota = q->quota, .borrow = q->borrow, .min_runtime = q->min_runtime};
    x.name = drv_strtab_intern(s->st.names, q->name);
    x.cohort = drv_strtab_intern(s->st.names, q->cohort);
    if (x.name < 0 || x.cohort < 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    int rc = drv_state_add_queue(&s->st, &x, id);
    return rc ? drv_fail(d, rc, "%s:%d: queue %s: %s", s->cluster->queue_file, q->line, q->name,
                         drv_strerror(rc))
              : 0;
}

int sim_add_queues(drv_sim *s, drv_diag *d)
{
    const drv_cluster_spec *c = s->cluster;
    if (c->nqueues == 0)
        return 0;
    /* "default", when declared, goes first: it must be queue 0 (state.h) */
    int32_t ids[DRV_MAX_QUEUES], dflt = -1;
    for (int32_t k = 0; k < c->nqueues; k++)
        if (strcmp(c->queues[k].name, "default") == 0)
            dflt = k;
    int rc = dflt >= 0 ? add_queue(s, &c->queues[dflt], &ids[dflt], d) : 0;
    for (int32_t k = 0; k < c->nqueues && !rc; k++)
        if (k != dflt)
            rc = add_queue(s, &c->queues[k], &ids[k], d);
    if (rc)
        return rc;
    s->qidx = drv_calloc((size_t)s->wl->n + 1, sizeof *s->qidx);
    if (!s->qidx)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    bool in_default = false;
    for (int32_t i = 0; i < s->wl->n; i++) {
        if ((rc = map_job(s, i, d)) != 0)
            return rc;
        in_default |= s->qidx[i] == 0;
    }
    for (int32_t k = 0; k < c->nqueues; k++)
        s->qshow[s->nqshow++] = ids[k];
    if (dflt < 0 && in_default)
        s->qshow[s->nqshow++] = 0;
    return 0;
}

/* max over dimensions of used / of (skipping a zero of), and over those of a with a finite
 * bound only when finite_only: a queue's dominant share, or its use of its quota. */
static double dominant(drv_res used, drv_res of, bool finite_only, bool *any)
{
    double m = 0;
    *any = false;
    for (int k = 0; k < 3; k++) {
        int64_t b = dim(of, k);
        if (b <= 0 || (finite_only && b == DRV_UNLIMITED))
            continue;
        *any = true;
        double f = (double)dim(used, k) / (double)b;
        if (f > m)
            m = f;
    }
    return m;
}

void sim_queues_integrate(drv_sim *s, double dt)
{
    bool any;
    for (int32_t q = 0; q < s->st.nqueues && q < DRV_MAX_QUEUES; q++) {
        const drv_queue *x = &s->st.queues[q];
        s->q_share_area[q] += dominant(x->used, s->capacity, false, &any) * dt;
        s->q_quota_area[q] += dominant(x->used, x->quota, true, &any) * dt;
    }
}

double drv_jain_index(const double *x, int32_t n)
{
    if (n <= 0)
        return NAN;
    double sum = 0, sq = 0;
    for (int32_t i = 0; i < n; i++) {
        sum += x[i];
        sq += x[i] * x[i];
    }
    return sq > 0 ? sum * sum / ((double)n * sq) : 1.0;
}

double drv_ftf_rho(double jct, double run, double dshare, int32_t ntenants)
{
    if (!(run > 0))
        return NAN;
    double stretch = (double)ntenants * dshare;
    return jct / (run * (stretch > 1 ? stretch : 1));
}

/* Per shown queue: jobs, finished jobs, mean JCT and mean wait from the result rows. */
static void queue_jobs(const drv_sim *s, drv_summary *o)
{
    double jct[DRV_MAX_QUEUES] = {0}, wait[DRV_MAX_QUEUES] = {0};
    int32_t started[DRV_MAX_QUEUES] = {0}, row[DRV_MAX_QUEUES];
    for (int32_t q = 0; q < DRV_MAX_QUEUES; q++)
        row[q] = -1;
    for (int32_t k = 0; k < s->nqshow; k++)
        row[s->qshow[k]] = k;
    for (int32_t i = 0; i < s->wl->n; i++) {
        const drv_jobresult *r = &s->res[i];
        int32_t k = row[s->qidx[i]];
        if (k < 0)
            continue;
        o->queue[k].jobs++;
        if (r->start >= 0) {
            wait[k] += r->start - r->submit;
            started[k]++;
        }
        if (r->end >= 0) {
            jct[k] += r->end - r->submit;
            o->queue[k].done++;
        }
    }
    for (int32_t k = 0; k < s->nqshow; k++) {
        drv_queue_summary *x = &o->queue[k];
        x->avg_jct = x->done ? jct[k] / x->done : NAN;
        x->avg_wait = started[k] ? wait[k] / started[k] : NAN;
    }
}

/* Finish-time fairness over the finished jobs: the largest rho and Jain's index over them. */
static void finish_time_fairness(const drv_sim *s, drv_summary *o, int32_t ntenants)
{
    double *rho = drv_calloc((size_t)s->wl->n + 1, sizeof *rho);
    int32_t n = 0;
    o->ftf_max = NAN;
    for (int32_t i = 0; rho && i < s->wl->n; i++) {
        const drv_jobresult *r = &s->res[i];
        if (r->end < 0 || r->start < 0)
            continue;
        const drv_jobspec *js = &s->wl->jobs[i];
        drv_res want = {0, 0, 0};
        for (int k = 0; k < DRV_NROLES; k++)
            want = drv_res_add(want, drv_res_scale(js->role[k].req, js->role[k].replicas));
        bool any;
        double x = drv_ftf_rho(r->end - r->submit, r->end - r->start,
                               dominant(want, s->capacity, false, &any), ntenants);
        if (!isfinite(x))
            continue;
        rho[n++] = x;
        if (!(x <= o->ftf_max))
            o->ftf_max = x;
    }
    o->ftf_jain = rho ? drv_jain_index(rho, n) : NAN; /* out of memory: unknown */
    drv_free(rho);
}

void sim_queues_summary(const drv_sim *s, drv_summary *o, double span)
{
    if (!s->qidx)
        return;
    o->nqueues = s->nqshow;
    o->half_life = s->st.half_life;
    double x[DRV_MAX_QUEUES];
    int32_t nx = 0;
    for (int32_t k = 0; k < s->nqshow; k++) {
        const drv_queue *q = &s->st.queues[s->qshow[k]];
        drv_queue_summary *r = &o->queue[k];
        snprintf(r->name, sizeof r->name, "%s", drv_strtab_str(s->st.names, q->name));
        r->weight = q->weight;
        bool any;
        dominant(q->used, q->quota, true, &any);
        r->share = span > 0 ? s->q_share_area[s->qshow[k]] / span : 0;
        r->quota_use = !any ? NAN : span > 0 ? s->q_quota_area[s->qshow[k]] / span : 0;
        r->usage = q->usage;
    }
    queue_jobs(s, o);
    for (int32_t k = 0; k < s->nqshow; k++)
        if (o->queue[k].jobs > 0)
            x[nx++] = o->queue[k].share / o->queue[k].weight;
    o->jain_share = drv_jain_index(x, nx);
    finish_time_fairness(s, o, nx);
}
