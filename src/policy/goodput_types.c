/*
 * goodput_types.c - the goodput plugin's allocation on a cluster of several GPU types (issue 27;
 * goodput.c has the design note): each job gets a type and a count, its GPUs all of that type,
 * as Sia (SOSP'23) allocates; and a job's throughput fits per type (`fits`).
 *
 * By default (`solver=1`) the allocation is Sia's integer program (ilp_allocate below, solved
 * by goodput_ilp.c) after step 1 and the bootstrap: each job's candidates (type, count) are
 * its minimum, Sia's counts (powers of two up to a node, then whole nodes) up to its most and
 * the type's GPUs, and its current count; valued by its goodput there over that on its
 * candidate of least goodput (times the change price at a change), cost value^ilp_p
 * (+ lambda_a at a change), lambda_n for none. Steps 2-4 below are the greedy (`solver=0`).
 *
 * Why: sizing a job against the free GPUs of every type together chooses counts no single type
 * has free, and the job then waits at that count (the core keeps a job's GPU pods on one type):
 * on Sia's cluster and its Philly workload 1, 2 of 160 jobs never finished.
 *
 * Per round, with T >= 2 types among the schedulable nodes (nodes without the label are a type
 * of their own); a homogeneous cluster takes goodput_allocate unchanged:
 *   1. Pools. cap[t] = free GPUs on type t + GPUs our jobs hold there (a job's are on one type);
 *      per type the most GPUs a node has, which a job's GPUs there are packed by.
 *   2. Minimum, in LAS order: a job holding GPUs keeps its type, while the type has room for
 *      its minimum (else it waits, as it would without types); one holding none takes the
 *      type of most speed x room: its one-GPU speed there (Sia's bootstrap sample, one GPU
 *      of each type at its batch) times the GPUs it could get there (left, at most its most)
 *      (`fits=1`: its goodput there from its fits). A job that has never run gets none until
 *      its bootstrap is over (submission + T x `bootstrap` seconds: its cost, paid in JCT).
 *   3. Greedy, as goodput_alloc.c, each job's further GPUs drawn from its own type's pool.
 *   4. Moves (`move`): step 2 values a type by all its room, so every new job picks the fastest
 *      type and the greedy shares it out while slower types idle; now each job may take the
 *      GPUs another type has left (its minimum, a power of two, or all it may get there) when
 *      its goodput there is higher - for a job holding GPUs (`move=2`) times the change price,
 *      a move being a restart - and the greedy runs again on what the moves freed.
 * A job's goodput on a type it has not run: its fit (the type-blind one, or with `fits` that of
 * a type it ran on) times the ratio of its one-GPU speeds on the two types (Sia's bootstrap).
 * Example: 4 GPUs of T4 left and 6 of A100, a job 3 times as fast on one A100 as on one T4:
 * it gets an A100 (3 x 6 > 1 x 4) and may grow to 6 there; without types it could have been
 * given 8 "GPUs" and waited for them. If the greedy leaves it 1 A100 and the T4s idle, step 4
 * moves it to 4 T4s when its goodput there (x 0.8 if it held the A100) beats one A100's.
 *
 * [S, R] (docs/model.md, "On several GPU types") The program is Sia's; on Sia's Philly
 * workloads it beat the greedy with moves on each of the 8, and per-type fits (on by default)
 * beat one type-blind fit under the program on each of the 8 (under the greedy they lost).
 * Cost per round: O(nodes + our jobs' pods) for the pools, O(J x T) for the one-GPU speeds;
 * the program O(J x T x (log gpn + most / gpn)) goodputs and GLPK's solve; the greedy
 * goodput_alloc.c's greedy twice and O(3 x J x T x log(most)) goodputs for the moves.
 */
#include "goodput.h"

#include "drover/strtab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_TYPES = 16 };

typedef struct pools {
    int32_t n;               /* types seen (<= MAX_TYPES); < 2: not typed */
    int32_t type[MAX_TYPES]; /* interned type (drv_node_gpu_type), 0 for nodes without one */
    int64_t left[MAX_TYPES]; /* GPUs of the type not yet allocated this round */
    int32_t gpn[MAX_TYPES];  /* most GPUs on one node of the type: how a job's GPUs pack there */
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
    p->gpn[p->n] = 0;
    return p->n++;
}

int32_t goodput_job_type(const drv_ctx *c, int32_t job)
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

drv_online_job *goodput_fit_slot(goodput *g, int32_t job, int32_t type)
{
    struct seen *s = &g->seen[job];
    if (!g->fits)
        return &s->ol[0];
    for (int32_t k = 0; k < GOODPUT_FITS; k++)
        if (s->ol_type[k] == type)
            return &s->ol[k];
    for (int32_t k = 0; k < GOODPUT_FITS; k++)
        if (s->ol_type[k] < 0) {
            s->ol_type[k] = type;
            return &s->ol[k];
        }
    return &s->ol[GOODPUT_FITS - 1]; /* more types than slots: the last is shared */
}

drv_online_job *goodput_home_fit(goodput *g, int32_t job, int32_t now_type)
{
    struct seen *s = &g->seen[job];
    if (!g->fits || now_type >= 0)
        return goodput_fit_slot(g, job, now_type > 0 ? now_type : 0);
    int32_t best = 0; /* holding none: the fit of most samples (the first among equals) */
    for (int32_t k = 1; k < GOODPUT_FITS; k++)
        if (s->ol[k].nobs > s->ol[best].nobs)
            best = k;
    return &s->ol[best];
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
        if (st->nodes[nd].alloc.gpu > p->gpn[t])
            p->gpn[t] = (int32_t)st->nodes[nd].alloc.gpu;
    }
    if (p->n < 2)
        return false;
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        x->type = x->now_type;
        int32_t t = x->now_type >= 0 ? type_index(p, x->now_type, false) : -1;
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

/* sp[a] / sp[b], 1 when either is unknown. */
static double ratio(const double *sp, int32_t a, int32_t b)
{
    return a >= 0 && b >= 0 && sp[a] > 0 && sp[b] > 0 ? sp[a] / sp[b] : 1;
}

/* Job x seen on type index t: the fit its goodput there is read from and the factor on it
 * (x->fit, x->fscale), and how its GPUs pack there (x->gpn). With `fits`: the type's own fit
 * once the job ran there; else the fit of another type it ran on (its current type's first,
 * else the one of most samples) times the ratio of one-GPU speeds sp (Sia's bootstrap); else
 * the prior, scaled from the slowest type `ref`. Type-blind (`fits=0`): the one fit, unscaled. */
static void view(goodput *g, const pools *p, gjob *x, int32_t t, const double *sp, int32_t ref)
{
    struct seen *s = &g->seen[x->id];
    x->gpn = p->gpn[t];
    x->fscale = 1;
    x->fit = &s->ol[0];
    if (!g->fits)
        return;
    int32_t donor = -1;
    for (int32_t k = 0; k < GOODPUT_FITS; k++) {
        if (s->ol_type[k] < 0 || s->ol[k].nobs == 0)
            continue;
        if (s->ol_type[k] == p->type[t]) {
            x->fit = &s->ol[k];
            return;
        }
        if (donor < 0 || s->ol_type[k] == x->now_type ||
            (s->ol_type[donor] != x->now_type && s->ol[k].nobs > s->ol[donor].nobs))
            donor = k;
    }
    if (donor >= 0) {
        x->fit = &s->ol[donor];
        x->fscale = ratio(sp, t, type_index((pools *)p, s->ol_type[donor], false));
    } else {
        x->fit = NULL;
        x->fscale = ratio(sp, t, ref);
    }
}

/* 2. The type for job x's minimum, index into p, or -1 when no type has room for it: a job
 * holding GPUs keeps its type while that type has room for its minimum (step 4 may move it);
 * a job holding none takes the type of highest goodput at the GPUs it could get there (left,
 * at most its most): with `fits` from its fits, type-blind its one-GPU speed there
 * (bootstrap) times those GPUs. O(T) goodputs. */
static int32_t choose(goodput *g, const pools *p, gjob *x, const double *sp, int32_t ref)
{
    int32_t best = -1;
    double best_v = 0;
    for (int32_t t = 0; t < p->n; t++) {
        if ((x->now_type >= 0 && p->type[t] != x->now_type) || p->left[t] < x->minw)
            continue;
        int64_t room = p->left[t] < x->nmax ? p->left[t] : x->nmax;
        double v = 1;
        if (x->now_type < 0 && !g->fits)
            v = sp[t] * (double)room;
        else if (x->now_type < 0) {
            view(g, p, x, t, sp, ref);
            v = goodput_of(g, x, (int32_t)room);
        }
        if (best < 0 || v > best_v * (1 + 1e-12)) {
            best = t;
            best_v = v;
        }
    }
    return best;
}

/* Job x's goodput at k GPUs of type index t. Type-blind (`fits=0`) the one fit is taken as its
 * current type's (or the slowest's) and scaled by the one-GPU speed ratio. */
static double raw(goodput *g, const pools *p, gjob *x, int32_t t, int32_t k, const double *sp,
                  int32_t ref)
{
    if (k <= 0)
        return 0;
    int32_t now = x->now_type >= 0 ? type_index((pools *)p, x->now_type, false) : -1;
    view(g, p, x, t, sp, ref);
    return goodput_of(g, x, k) * (g->fits ? 1 : ratio(sp, t, now >= 0 ? now : ref));
}

/* Whether k GPUs of type index t are a change for job x (it holds GPUs, of another type or
 * count). */
static bool change(const pools *p, const gjob *x, int32_t t, int32_t k)
{
    return x->running && (p->type[t] != x->now_type || k != x->have);
}

/* raw, times the change price when that is a change. */
static double priced(goodput *g, const pools *p, gjob *x, int32_t t, int32_t k, const double *sp,
                     int32_t ref)
{
    double v = raw(g, p, x, t, k, sp, ref);
    return change(p, x, t, k) ? v * x->price : v;
}

/* 4. Moves, after the greedy: a job (in LAS order) whose goodput, priced, is higher on the
 * GPUs another type has left - at its minimum, a power of two or all it may get there - takes
 * them and gives back its own; a job holding GPUs only with `move`. Up to 3 sweeps, while one
 * moves. Why: step 2 values a type by all of its room, so every new job picks the fastest type
 * and the greedy then shares that type out while the others idle (on Sia's workload 2, 42 % of
 * GPUs busy). O(sweeps x J x T x log(most)) goodputs. Returns how many moved. */
static int32_t moves(goodput *g, const pools *p0, int64_t *left, gjob *v, int32_t n, int32_t *pool,
                     const double *sp, const int32_t *ref)
{
    pools *p = (pools *)p0;
    int32_t moved = 0;
    for (int32_t sweep = 0, any = 1; sweep < 3 && any; sweep++) {
        any = 0;
        for (int32_t i = 0; i < n; i++) {
            gjob *x = &v[i];
            const double *s = sp + (size_t)i * MAX_TYPES;
            if (pool[i] < -1 || (x->now_type >= 0 && g->move < 2))
                continue; /* bootstrapping, or keeps its type */
            int32_t cur = pool[i], bt = -1, bk = 0;
            double best = cur >= 0 ? priced(g, p, x, cur, x->want, s, ref[i]) : 0;
            for (int32_t t = 0; t < p->n; t++) {
                int64_t room = left[t] < x->nmax ? left[t] : x->nmax;
                for (int32_t k = x->minw; t != cur && k <= room;) {
                    double val = priced(g, p, x, t, k, s, ref[i]);
                    if (val > best * (1 + 1e-9)) {
                        best = val;
                        bt = t;
                        bk = k;
                    }
                    int32_t nk = k < 2 ? 2 : 2 * k;
                    k = k < room && nk > room ? (int32_t)room : nk;
                }
            }
            if (bt < 0)
                continue;
            if (cur >= 0)
                left[cur] += x->want;
            left[bt] -= bk;
            pool[i] = bt;
            x->want = bk;
            x->type = p->type[bt];
            x->moved = x->now_type >= 0 && x->now_type != x->type;
            any = 1;
            moved++;
        }
    }
    for (int32_t i = 0; i < n; i++)
        if (pool[i] >= 0)
            view(g, p, &v[i], pool[i], sp + (size_t)i * MAX_TYPES, ref[i]);
    return moved;
}

/* Whether job x, which has never run, is still being profiled (Sia's bootstrap: one GPU of
 * each of the T types, `bootstrap` seconds each, one after the other): it gets no GPUs before
 * its submission + T x bootstrap, which its completion time so pays. */
static bool bootstrapping(const goodput *g, const drv_ctx *c, const pools *p, const gjob *x)
{
    return g->bootstrap > 0 && x->have == 0 && g->seen[x->id].most == 0 &&
           drv_ctx_now(c) < x->submit + g->bootstrap * p->n;
}

/* The count after k among Sia's candidate counts on a type of gpn GPUs a node: powers of two
 * up to a node, then whole nodes (1, 2, 4, 8, 12, ... on 4 GPUs a node). */
static int32_t next_count(int32_t k, int32_t gpn)
{
    if (k < gpn)
        return 2 * k < gpn ? 2 * k : gpn;
    return gpn > 0 ? (k / gpn + 1) * gpn : 2 * k;
}

/* Job x's candidate counts on type index t into ks (at most nk), increasing: its minimum,
 * Sia's counts above it, and its current count on its current type; none above its most
 * (twice the most it ran: `explore`) or the type's GPUs. Returns how many. */
static int32_t counts(const pools *p, const gjob *x, int32_t t, int32_t *ks, int32_t nk)
{
    int64_t most = p->left[t] < x->nmax ? p->left[t] : x->nmax;
    int32_t m = 0, have = x->running && p->type[t] == x->now_type ? x->have : 0;
    for (int32_t k = 1, last = 0; m < nk && (k <= most || have > last);
         k = next_count(k, p->gpn[t])) {
        int32_t want = k <= x->minw ? x->minw : k;
        if (have > last && have < want && have <= most)
            ks[m++] = have; /* its current count, between two of Sia's */
        if (m < nk && want > last && want <= most)
            ks[m++] = want;
        last = m > 0 ? ks[m - 1] : 0;
        if (k > most)
            break;
    }
    return m;
}

/* Job x's candidates (pool index, k, cost) into cand from index nc; returns the new count.
 * Its value at each is its goodput there over its goodput on its candidate of least goodput,
 * times its change price at a change (Sia's re-allocation factor); its cost value^ilp_p, plus
 * lambda_a at a change. */
static int32_t job_cands(goodput *g, const pools *p, gjob *x, int32_t job, const double *sp,
                         int32_t ref, goodput_cand *cand, int32_t nc)
{
    int32_t first = nc, ks[GOODPUT_MAXW + 2];
    double base = 0;
    for (int32_t t = 0; t < p->n; t++) {
        if (p->left[t] < x->minw)
            continue;
        int32_t m = counts(p, x, t, ks, GOODPUT_MAXW + 2);
        for (int32_t a = 0; a < m; a++) {
            double r = raw(g, p, x, t, ks[a], sp, ref);
            if (r <= 0)
                continue;
            cand[nc++] = (goodput_cand){.job = job, .pool = t, .k = ks[a], .cost = r};
            base = base == 0 || r < base ? r : base;
        }
    }
    for (int32_t i = first; i < nc; i++) {
        goodput_cand *y = &cand[i];
        bool ch = change(p, x, y->pool, y->k);
        y->cost = pow(y->cost / base * (ch ? x->price : 1), g->ilp_p) + (ch ? g->lambda_a : 0);
    }
    return nc;
}

/* Sia's allocation (`solver` >= 1) in place of steps 2-4: every job not bootstrapping gets its
 * candidates (job_cands) and goodput_ilp_solve chooses one or none for each, within each
 * type's GPUs (those free and those our jobs hold); with solver=2 the greedy (step 3) then
 * shares out the GPUs the program left. 0, DRV_ENOMEM, or DRV_EINVAL when GLPK found no
 * optimum (the caller then takes the greedy). O(J x T x (log gpn + most / gpn)) goodputs. */
static int ilp_allocate(goodput *g, drv_ctx *c, pools *p, gjob *v, int32_t n, int32_t *pool,
                        const double *sp, const int32_t *ref)
{
    drv_arena *ar = drv_ctx_arena(c);
    size_t per = 0; /* most candidates a job may have: Sia's counts up to the most workers + 2 */
    for (int32_t t = 0; t < p->n; t++)
        for (int32_t k = 1; k <= GOODPUT_MAXW; k = next_count(k, p->gpn[t]))
            per++;
    per += 2 * (size_t)p->n;
    goodput_cand *cand = drv_arena_alloc(ar, sizeof *cand * ((size_t)n * per + 1));
    int32_t *pick = drv_arena_alloc(ar, sizeof *pick * ((size_t)n + 1));
    if (!cand || !pick)
        return DRV_ENOMEM;
    int32_t nc = 0;
    for (int32_t i = 0; i < n; i++)
        if (pool[i] != -2)
            nc = job_cands(g, p, &v[i], i, sp + (size_t)i * MAX_TYPES, ref[i], cand, nc);
    int rc = goodput_ilp_solve(cand, nc, n, p->left, p->n, g->lambda_n, pick);
    if (rc)
        return rc;
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        x->want = 0;
        pool[i] = pool[i] == -2 ? -2 : -1;
        if (pick[i] < 0)
            continue;
        const goodput_cand *y = &cand[pick[i]];
        pool[i] = y->pool;
        x->want = y->k;
        x->type = p->type[y->pool];
        x->moved = x->now_type >= 0 && x->now_type != x->type;
        p->left[y->pool] -= y->k;
        view(g, p, x, y->pool, sp + (size_t)i * MAX_TYPES, ref[i]);
    }
    return g->solver == 2 ? goodput_grow_pooled(g, c, v, n, pool, p->left) : 0;
}

int goodput_types_allocate(goodput *g, drv_ctx *c, gjob *v, int32_t n, int64_t gpus)
{
    pools p;
    if (!read_pools(c, v, n, &p))
        return goodput_allocate(g, c, v, n, gpus);
    drv_arena *ar = drv_ctx_arena(c);
    int32_t *pool = drv_arena_alloc(ar, sizeof *pool * ((size_t)n + 1));
    int32_t *ref = drv_arena_alloc(ar, sizeof *ref * ((size_t)n + 1));
    double *sp = drv_arena_alloc(ar, sizeof *sp * MAX_TYPES * ((size_t)n + 1));
    if (!pool || !ref || !sp)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        double *s = sp + (size_t)i * MAX_TYPES;
        ref[i] = -1; /* the slowest type on one GPU: the speed-up's reference */
        for (int32_t t = 0; t < p.n; t++) {
            s[t] = speed1(g, c, x, p.type[t]);
            if (s[t] > 0 && (ref[i] < 0 || s[t] < s[ref[i]]))
                ref[i] = t;
        }
        if (g->fits && !g->oracle && ref[i] >= 0) { /* G at its minimum on the slowest type */
            view(g, &p, x, ref[i], s, ref[i]);
            double b = goodput_of(g, x, x->minw);
            x->base = b > 0 ? b : x->base;
        }
        pool[i] = bootstrapping(g, c, &p, x) ? -2 : -1;
    }
    if (g->solver > 0) {
        int rc = ilp_allocate(g, c, &p, v, n, pool, sp, ref);
        if (rc != DRV_EINVAL)
            return rc; /* else (no optimum found) the greedy below */
    }
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        const double *s = sp + (size_t)i * MAX_TYPES;
        int32_t t = pool[i] == -2 ? -2 : choose(g, &p, x, s, ref[i]);
        pool[i] = t;
        x->want = 0;
        if (t < 0)
            continue; /* no type has room for its minimum: it waits */
        view(g, &p, x, t, s, ref[i]);
        x->want = x->minw;
        x->type = p.type[t];
        p.left[t] -= x->minw;
    }
    int rc = goodput_grow_pooled(g, c, v, n, pool, p.left);
    if (rc || g->move == 0 || moves(g, &p, p.left, v, n, pool, sp, ref) == 0)
        return rc;
    return goodput_grow_pooled(g, c, v, n, pool, p.left); /* what the moves freed */
}

int32_t goodput_types_node_ok(const drv_ctx *c, const gjob *x, int32_t node)
{
    const drv_state *st = drv_ctx_state(c);
    return !st->gpu_type_key || x->type < 0 || drv_node_gpu_type(st, node) == x->type;
}
