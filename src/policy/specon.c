/*
 * specon.c - SpeCon (seed 003): speculative migration of slow-growing jobs off contended
 * nodes. Source: SpeCon's released configuration (10 s monitor interval, alpha 0.1); the
 * algorithm is our reconstruction ([R], docs/policies.md); node ranking is ProCon's.
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
 * and the predicted net gain exceeds the cost. Gain, in seconds of job time: every other job on
 * the source wins remaining · (1 − f_before/f_after), every job on the target loses the same way
 * (its factor falls), and the mover wins remaining · (1 − f_source/f_target_after), where f is a
 * node's throttling factor (CPUs / Σ limits, at most 1) [R: the source's growing jobs alone
 * would justify moving a converging job onto a node whose long jobs it then slows]. Cost =
 * migration_cost + the converging job's own pause (the same restart time), so gain > 2·cost.
 * At most one migration per node per interval. ProCon rank of node n: each pod
 * there has remaining time P (its job's, at its recent rate); EJR[t] = pods with P > t on a grid of
 * `grid` seconds; C = 1 + Σ_t EJR[t]; nodes with requested CPU above alpha_node · capacity are
 * excluded; smallest C · n_pods wins. Worked example: node 0 (8 CPUs, limits 12) runs growing B
 * (remaining 600 s) and converging A (4 CPUs of limit, 100 s left) to an idle node 1; moving A
 * makes node 0's limits 8: B's factor goes 0.67 -> 1, gain = 600 · 0.33 + A's 100 · 0.33 = 233 s >
 * cost 2·30 s: migrate. Had node 1 held a job with 900 s left and limits 8, its factor would fall
 * 1 -> 0.67 and it would lose 450 s: A stays.
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

/* Seconds of remaining time the jobs computing on node (other than job `skip`) win when the
 * node's throttling factor goes from f0 to f1 (negative: they lose). A job's speed is
 * proportional to its CPU, so its time left scales by f0 / f1. */
static double node_gain(const drv_ctx *c, const int32_t *run, int32_t n, int32_t node, int32_t skip,
                        double f0, double f1)
{
    const drv_state *st = drv_ctx_state(c);
    double gain = 0;
    for (int32_t q = 0; q < n; q++) {
        if (run[q] == skip || !computes_on(st, &st->jobs[run[q]], node))
            continue;
        double left = drv_job_remaining(drv_ctx_progress(c, run[q]));
        if (isfinite(left))
            gain += left * (1.0 - f0 / f1);
    }
    return gain;
}

/* Net seconds of job time won by moving job (holding lim of CPU limits on `from`) to `to`: the
 * jobs left on `from` speed up, those on `to` slow down, and the job itself runs at `to`'s
 * throttling instead of `from`'s [R: the paper says "the predicted gain"; counting only
 * the source node's growing jobs moved converging jobs onto busy nodes, 41 migrations and
 * +37 % average JCT on the FlowCon scenario with unit=30]. */
static double net_gain(const drv_ctx *c, const int32_t *run, int32_t n, int32_t job, double lim,
                       int32_t from, int32_t to)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_node *a = &st->nodes[from], *b = &st->nodes[to];
    double fa0 = throttle(a, (double)a->cpu_limit), fa1 = throttle(a, (double)a->cpu_limit - lim);
    double fb0 = throttle(b, (double)b->cpu_limit), fb1 = throttle(b, (double)b->cpu_limit + lim);
    double gain =
        node_gain(c, run, n, from, job, fa0, fa1) + node_gain(c, run, n, to, job, fb0, fb1);
    double left = drv_job_remaining(drv_ctx_progress(c, job));
    if (isfinite(left))
        gain += left * (1.0 - fa0 / fb1);
    return gain;
}

/* Best target by ProCon rank other than node, or -1. */
static int32_t procon_best(const drv_ctx *c, const sc_state *s, int32_t node)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t best = -1;
    double best_rank = INFINITY;
    for (int32_t t = 0; t < st->nnodes; t++) {
        double r = t == node ? INFINITY : procon_rank(c, s, t);
        if (r < best_rank) {
            best_rank = r;
            best = t;
        }
    }
    return best;
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
    int32_t best = procon_best(c, s, node);
    if (best < 0)
        return false;
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &st->jobs[run[i]];
        if (!cls[i].completing || !computes_on(st, j, node))
            continue;
        double lim = 0; /* limits the job holds on this node */
        for (int32_t k = 0; k < j->pod_count; k++)
            if (st->pods[j->pod_base + k].node == node)
                lim += (double)st->pods[j->pod_base + k].cpu_limit;
        if (net_gain(c, run, n, run[i], lim, node, best) <= 2 * s->cost)
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
    if (!run || !cls) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
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
    .doc = "migrate: move converging jobs off contended nodes when gain > cost (SpeCon)",
    .init = sc_init,
    .fini = sc_fini,
    .migrate = sc_migrate,
    .wake = sc_wake,
    .starts_blind = drv_starts_blind,
};
