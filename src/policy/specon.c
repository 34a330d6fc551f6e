/*
 * specon.c - SpeCon (seed 003): speculative migration of slow-growing jobs off contended
 * nodes. Source: SpeCon's released configuration (10 s monitor interval, alpha 0.1); the
 * algorithm is our reconstruction (ALGORITHMS.md [R]); node ranking is ProCon's.
 *
 * Every interval (at the first cycle at or after each multiple of it), per running job: growth
 * g = |L(t_m) - L(t_m-1)| on loss normalised by its first observed loss [R: SpeCon says its
 * largest; for a falling curve that is the first, and unlike a running maximum it does not
 * depend on which samples were looked at], per `unit` seconds [R: per monitor interval, so
 * alpha=0.1 means "lost 10 % of its loss in one interval"]; FlowCon's two-strike machine
 * classes it growing, watching or converging - applied to the last two measurements, which are
 * recomputed from the job's progress samples when needed, so the plugin keeps no state and a
 * cycle that did not run changes nothing (docs/cycle.md, "Quiet cycles"). A node is contended when
 * its CPU limits exceed its CPUs (pods are throttled) and a growing job computes there. A
 * converging job computing on a contended node is migrated — all its pods on that node, a
 * checkpoint-restart there — to the node with the best ProCon rank, if that node differs, has room,
 * and the predicted gain exceeds the cost: gain = Σ over growing jobs g on the node of remaining_g
 * · (1 − share_before/share_after) cost = migration_cost + the converging job's own pause (the same
 * restart time) where share is the node's throttling factor (CPUs / Σ limits, at most 1) before and
 * after the move. At most one migration per node per interval. ProCon rank of node n: each pod
 * there has remaining time P (its job's, at its recent rate); EJR[t] = pods with P > t on a grid of
 * `grid` seconds; C = 1 + Σ_t EJR[t]; nodes with requested CPU above alpha_node · capacity are
 * excluded; smallest C · n_pods wins. Worked example: node 0 (8 CPUs, limits 12) runs growing B
 * (remaining 600 s) and converging A (4 CPUs of limit); moving A makes limits 8: B's share goes
 * 0.67 -> 1, gain = 600 · 0.33 = 200 s > cost 2·30 s: migrate.
 */
#include "drover/policy.h"

#include "progress.h"

#include <math.h>

static const drv_knob_spec sc_knobs[] = {
    {"interval", 10, 1, 3600, "seconds between growth measurements"},
    {"alpha", 0.1, 0.0001, 100, "growth (per unit) below which a job is slowing"},
    {"unit", 10, 1, 3600, "seconds of the growth unit (g is loss change per unit)"},
    {"migration_cost", 30, 0, 86400, "seconds a migration costs (checkpoint + restart)"},
    {"alpha_node", 0.9, 0.1, 1, "nodes with requested CPU above this share are not targets"},
    {"grid", 10, 1, 3600, "seconds per step of ProCon's remaining-time grid"},
};
enum { NSC = sizeof sc_knobs / sizeof sc_knobs[0] };

typedef struct sc_state {
    double interval, alpha, unit, cost, alpha_node, grid;
} sc_state;

static int sc_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[NSC];
    int rc = drv_knobs_read(sc_knobs, NSC, knobs, nknobs, v, d);
    if (rc)
        return rc;
    sc_state *s = drv_calloc(1, sizeof *s);
    if (!s)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    *s = (sc_state){v[0], v[1], v[2], v[3], v[4], v[5]};
    *state = s;
    return 0;
}

static void sc_fini(void *state)
{
    drv_free(state);
}

static bool computes_on(const drv_state *st, const drv_job *j, int32_t node)
{
    for (int32_t k = 0; k < j->pod_count; k++)
        if (st->pods[j->pod_base + k].node == node && drv_pod_computes(&st->pods[j->pod_base + k]))
            return true;
    return false;
}

/* Index of the newest sample at least one interval older than sample ia, or -1. */
static int interval_back(const sc_state *s, const drv_job *j, int ia)
{
    double t = drv_job_sample(j, ia)->t;
    for (int i = ia + 1; i < j->nhist; i++)
        if (t - drv_job_sample(j, i)->t >= s->interval)
            return i;
    return -1;
}

/* Growth over the interval that ends at sample ia (its index back in *ib), or -1. */
static double growth(const sc_state *s, const drv_job *j, int ia, int *ib)
{
    *ib = interval_back(s, j, ia);
    if (*ib < 0 || j->loss0 <= 0)
        return -1;
    const drv_sample *a = drv_job_sample(j, ia), *b = drv_job_sample(j, *ib);
    return fabs(a->loss - b->loss) / j->loss0 / ((a->t - b->t) / s->unit);
}

/* A job's growth class: FlowCon's two-strike machine (progress.h) fed the last two interval
 * measurements, recomputed from the job's samples when needed - nothing is kept between cycles,
 * so a cycle that was not run changes nothing. g < 0: not measurable yet. */
static drv_growth classify(const sc_state *s, const drv_job *j)
{
    drv_growth k = {-1, 0, false, false, -INFINITY};
    int ib = -1, ib0 = -1;
    double g1 = j->nhist < 2 ? -1 : growth(s, j, 0, &ib);
    if (g1 < 0)
        return k;
    if (g1 < s->alpha) { /* the one before matters only for a slow last measurement */
        double g0 = growth(s, j, ib, &ib0);
        if (g0 >= 0)
            drv_growth_update(&k, g0, s->alpha);
    }
    drv_growth_update(&k, g1, s->alpha);
    return k;
}

/* Throttling factor of a node whose limits sum to lim: the share of its limit a pod gets. */
static double throttle(const drv_node *n, double lim)
{
    return lim > (double)n->alloc.cpu ? (double)n->alloc.cpu / lim : 1.0;
}

/* ProCon: C · n_pods for node, or INFINITY when excluded. */
static double procon_rank(const drv_ctx *c, const sc_state *s, int32_t node)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_node *n = &st->nodes[node];
    if (!n->schedulable ||
        (double)(n->alloc.cpu - drv_ctx_free(c, node).cpu) > s->alpha_node * (double)n->alloc.cpu)
        return INFINITY;
    double sum = 0;
    int32_t pods = 0;
    DRV_FOR_LIVE(st, j)
    {
        const drv_job *jb = &st->jobs[j];
        if (jb->phase == DRV_JOB_DONE || jb->phase == DRV_JOB_FUTURE)
            continue;
        for (int32_t k = 0; k < jb->pod_count; k++) {
            if (drv_ctx_pod_node(c, jb->pod_base + k) != node)
                continue;
            pods++;
            double p = drv_job_remaining(drv_ctx_progress(c, j));
            sum += isfinite(p) ? floor(p / s->grid) : 1e6;
        }
    }
    return (1.0 + sum) * (pods ? pods : 1);
}

/* Tries to migrate one converging job off contended node; true when it did. */
static bool relieve_node(drv_ctx *c, const sc_state *s, int32_t node, const int32_t *run,
                         const drv_growth *cls, int32_t n)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_node *nd = &st->nodes[node];
    if (nd->cpu_limit <= nd->alloc.cpu)
        return false;
    bool growing_here = false;
    for (int32_t i = 0; i < n; i++) {
        const drv_growth *g = &cls[i];
        if (g->g >= 0 && !g->watching && !g->completing && computes_on(st, &st->jobs[run[i]], node))
            growing_here = true;
    }
    if (!growing_here)
        return false;
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &st->jobs[run[i]];
        if (!cls[i].completing || !computes_on(st, j, node))
            continue;
        /* Limits the job holds on this node, and the gain if they left. */
        double lim = 0;
        for (int32_t k = 0; k < j->pod_count; k++)
            if (st->pods[j->pod_base + k].node == node)
                lim += (double)st->pods[j->pod_base + k].cpu_limit;
        double before = throttle(nd, (double)nd->cpu_limit);
        double after = throttle(nd, (double)nd->cpu_limit - lim);
        double gain = 0;
        for (int32_t q = 0; q < n; q++) {
            const drv_growth *g = &cls[q];
            const drv_job *o = &st->jobs[run[q]];
            if (q == i || g->completing || !computes_on(st, o, node))
                continue;
            double left = drv_job_remaining(drv_ctx_progress(c, run[q]));
            if (isfinite(left))
                gain += left * (1.0 - before / after);
        }
        if (gain <= 2 * s->cost)
            continue;
        /* Best target by ProCon rank, with room for every pod moving. */
        int32_t best = -1;
        double best_rank = INFINITY;
        for (int32_t t = 0; t < st->nnodes; t++) {
            if (t == node)
                continue;
            double r = procon_rank(c, s, t);
            if (r < best_rank) {
                best_rank = r;
                best = t;
            }
        }
        if (best < 0)
            continue;
        drv_mark m = drv_ctx_mark(c);
        bool ok = true;
        for (int32_t k = 0; k < j->pod_count && ok; k++) {
            int32_t pod = j->pod_base + k;
            if (drv_ctx_pod_node(c, pod) != node)
                continue;
            ok = drv_ctx_filter(c, pod, best) == DRV_FIT && drv_ctx_migrate(c, pod, best) == 0;
        }
        if (ok)
            return true;
        drv_ctx_rollback(c, m);
    }
    return false;
}

/* A node is contended when its CPU limits exceed its CPUs (pods are throttled). */
static bool contended(const drv_node *n)
{
    return n->cpu_limit > n->alloc.cpu;
}

/* SpeCon measures once per interval: at the first cycle at or after each multiple of it. A
 * pure function of the time, so it does not matter which earlier cycles ran. */
static bool measuring(const drv_ctx *c, const sc_state *s)
{
    double now = drv_ctx_now(c);
    return floor(now / s->interval) * s->interval > now - drv_ctx_period(c);
}

static void sc_migrate(drv_ctx *c, void *state)
{
    const sc_state *s = state;
    const drv_state *st = drv_ctx_state(c);
    if (!measuring(c, s))
        return;
    /* Only a contended node can be relieved: most intervals have none, and then no job needs
     * classifying. */
    int32_t first = -1;
    for (int32_t node = 0; node < st->nnodes && first < 0; node++)
        if (contended(&st->nodes[node]))
            first = node;
    if (first < 0)
        return;
    int32_t *run = drv_arena_alloc(drv_ctx_arena(c), sizeof *run * ((size_t)st->nlive + 1));
    drv_growth *cls = drv_arena_alloc(drv_ctx_arena(c), sizeof *cls * ((size_t)st->nlive + 1));
    if (!run || !cls)
        return;
    int32_t n = 0;
    DRV_FOR_LIVE(st, j)
    if (st->jobs[j].phase == DRV_JOB_RUNNING) {
        cls[n] = classify(s, drv_ctx_progress(c, j));
        run[n++] = j;
    }
    for (int32_t node = first; node < st->nnodes; node++)
        if (contended(&st->nodes[node]))
            relieve_node(c, s, node, run, cls, n);
}

/* With no contended node nothing can be migrated until something changes; with one, growth
 * classes move with time, so every cycle counts. */
static double sc_wake(const drv_ctx *c, void *state)
{
    (void)state;
    const drv_state *st = drv_ctx_state(c);
    for (int32_t node = 0; node < st->nnodes; node++)
        if (contended(&st->nodes[node]))
            return -INFINITY;
    return INFINITY;
}

const drv_plugin drv_plugin_specon = {
    .name = "specon",
    .doc = "migrate: move converging jobs off contended nodes when gain > cost (seed 003)",
    .init = sc_init,
    .fini = sc_fini,
    .migrate = sc_migrate,
    .wake = sc_wake,
    .starts_blind = drv_starts_blind,
};
