/*
 * flowcon.c - FlowCon (seed 002): CPU limits from growth efficiency, and FlowCon 2.0
 * placement. Source: the authors' released code (Zheng et al., FlowCon, 2019/2020), as
 * summarised in docs/sources.md and docs/policies.md.
 *
 *  flowcon  reallocate  Every interval I (knob, 30 s) for each running job j:
 *                         normalised loss = loss / largest loss seen for j;
 *                         E_i, E_{i-1} = mean normalised loss over (now-I, now], (now-2I, now-I];
 *                         P_j = |E_i - E_{i-1}| / (I / unit);  R_j = mean CPU share of its compute
 * pods (effective CPU / node CPUs);  G_j = P_j / R_j. G < alpha twice in a row -> completing (first
 * time: watching); G >= alpha clears both. Per node, n jobs computing there, beta=1+1/n: if all are
 * completing every limit goes to the whole node; otherwise, ratio = G_j / sum G, completing ->
 * max(ratio, 1/(beta n)) * node CPUs, growing -> min(ratio, 1) * node CPUs, watching unchanged. A
 * job's share is split evenly over its compute pods on the node and never set below a pod's
 * request. While every job is completing the interval doubles (up to max_interval); when a job
 * starts or stops the interval resets and the limits are recomputed at once [R: else a node whose
 * limits were cut to G ratios leaves the leaver's CPU idle for up to an interval].
 * score       FlowCon 2.0 placement [R]: prefer the node whose running jobs have the lowest total
 * G (the most "completing" load): score = 100 * alpha / (alpha + sum G on the node), a job not yet
 * measured counting as growing (see below). Worked example: node of 8 CPUs, job A completing with
 * G=0.01, job B growing with G=0.09: n=2, beta=1.5, ratio A=0.1 -> max(0.1, 1/3)*8 = 2.67 CPUs, B:
 * 0.9*8 = 7.2 CPUs. [R] The time unit of P is a knob, `unit`, defaulting to I (30 s): with P per
 * second, alpha = 0.05 could only be reached by a job losing 1.5·R of its normalised loss per
 * interval, i.e. every job would count as completing from its first measurement; per interval,
 * alpha = 0.05 means "lost 5 % of its largest loss in one interval per unit of CPU share". A job
 * not yet measured (no two windows of samples) counts as growing with the largest G on its node (or
 * alpha when none there is measured) [R], in the limits and in the score alike. In the simulator
 * the new limit changes the worker's CPU share in the performance model; on Kubernetes it is an
 * in-place pods/resize.
 */
#include "drover/policy.h"

#include "progress.h"

#include <math.h>

static const drv_knob_spec fc_knobs[] = {
    {"interval", 30, 1, 3600, "seconds between limit updates (I)"},
    {"alpha", 0.05, 0.0001, 100, "growth-efficiency threshold below which a job is slowing"},
    {"max_interval", 480, 1, 86400, "cap of the exponential back-off of the interval"},
    {"unit", 30, 1, 3600, "seconds of the time unit of P (P is loss change per unit)"},
};
enum { NFC = sizeof fc_knobs / sizeof fc_knobs[0] };

/* What the score reads of one node: its running jobs' G, summed once per cycle (node_sums). */
typedef struct fc_node {
    double sum;    /* sum of G of the measured running jobs with a pod on the node */
    double gmax;   /* the largest of those G, or alpha */
    int32_t fresh; /* running jobs with a pod on it not yet measured */
    int32_t last;  /* the last job counted here (a job with two pods there counts once) */
} fc_node;

typedef struct fc_state {
    double interval, alpha, max_interval, unit;
    double cur_interval, next; /* current (backed-off) interval and next update time */
    uint64_t running_sig;      /* signature of the set of running jobs */
    drv_growth *g;
    int32_t cap;
    /* The score's per-node sums, valid for cycle sums_cycle while gen == sums_gen: they read
     * the snapshot (fixed in a cycle) and G, which fc_reallocate changes (gen counts its runs).
     * Without them each score walked every running job's pods: O(pods) per (pod, node). */
    fc_node *sums;
    int32_t sums_cap;
    bool sums_ok;
    uint32_t sums_cycle;
    uint64_t gen, sums_gen;
    int32_t *on, *on_start; /* fc_reallocate's running jobs per node (CSR): on[on_start[n]..] */
    int32_t *cur;           /* per node, a cursor while the list is built */
    int32_t on_cap, start_cap, cur_cap;
} fc_state;

static int fc_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[NFC];
    int rc = drv_knobs_read(fc_knobs, NFC, knobs, nknobs, v, d);
    if (rc)
        return rc;
    fc_state *s = drv_calloc(1, sizeof *s);
    if (!s)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    s->interval = s->cur_interval = v[0];
    s->alpha = v[1];
    s->max_interval = v[2];
    s->unit = v[3];
    s->next = -INFINITY;
    *state = s;
    return 0;
}

static void fc_fini(void *state)
{
    fc_state *s = state;
    if (s) {
        drv_free(s->g);
        drv_free(s->sums);
        drv_free(s->on);
        drv_free(s->on_start);
        drv_free(s->cur);
    }
    drv_free(s);
}

/* Mean normalised loss of samples in (t0, t1]; NAN when there is none. */
static double window_mean(const drv_job *j, double maxloss, double t0, double t1)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < j->nhist; i++) {
        const drv_sample *s = drv_job_sample(j, i);
        if (s->t > t0 && s->t <= t1) {
            sum += s->loss / maxloss;
            n++;
        }
    }
    return n ? sum / n : NAN;
}

/* CPU a pod gets: its limit, scaled down when the node's limits exceed its CPUs. */
static double pod_cpu(const drv_state *st, int32_t pod)
{
    const drv_pod *p = &st->pods[pod];
    const drv_node *n = &st->nodes[p->node];
    double f = n->cpu_limit > n->alloc.cpu ? (double)n->alloc.cpu / (double)n->cpu_limit : 1;
    return (double)p->cpu_limit * f;
}

/* Mean CPU share of the job's bound compute pods, fraction of their nodes. */
static double cpu_share(const drv_state *st, const drv_job *j)
{
    double sum = 0;
    int n = 0;
    for (int32_t k = 0; k < j->pod_count; k++) {
        const drv_pod *p = &st->pods[j->pod_base + k];
        if (p->node < 0 || !drv_pod_computes(p))
            continue;
        sum += pod_cpu(st, j->pod_base + k) / (double)st->nodes[p->node].alloc.cpu;
        n++;
    }
    return n ? sum / n : 0;
}

static void measure(const drv_ctx *c, fc_state *s, int32_t job, double now)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_job *j = drv_ctx_progress(c, job);
    drv_growth *g = &s->g[job];
    drv_growth_see(g, j);
    if (g->max_loss <= 0)
        return;
    double e1 = window_mean(j, g->max_loss, now - s->interval, now);
    double e0 = window_mean(j, g->max_loss, now - 2 * s->interval, now - s->interval);
    double r = cpu_share(st, j);
    if (isnan(e0) || isnan(e1) || r <= 0)
        return;
    drv_growth_update(g, fabs(e1 - e0) / (s->interval / s->unit) / r, s->alpha);
}

static double job_g(const fc_state *s, int32_t job, double fallback)
{
    return s->g[job].g >= 0 ? s->g[job].g : fallback;
}

/* Sets the limits of the jobs computing on one node. */
static void update_node(drv_ctx *c, fc_state *s, int32_t node, const int32_t *jobs, int32_t n)
{
    const drv_state *st = drv_ctx_state(c);
    double cpus = (double)st->nodes[node].alloc.cpu;
    int32_t *onnode = drv_arena_alloc(drv_ctx_arena(c), sizeof *onnode * ((size_t)n + 1));
    if (!onnode) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    int32_t m = 0;
    double gmax = s->alpha;
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &st->jobs[jobs[i]];
        bool here = false;
        for (int32_t k = 0; k < j->pod_count && !here; k++)
            here = st->pods[j->pod_base + k].node == node &&
                   drv_pod_computes(&st->pods[j->pod_base + k]);
        if (here) {
            onnode[m++] = jobs[i];
            if (s->g[jobs[i]].g > gmax)
                gmax = s->g[jobs[i]].g;
        }
    }
    if (m == 0)
        return;
    bool all_completing = true;
    double sum = 0;
    for (int32_t i = 0; i < m; i++) {
        all_completing = all_completing && s->g[onnode[i]].completing;
        sum += job_g(s, onnode[i], gmax);
    }
    double beta = 1.0 + 1.0 / m;
    for (int32_t i = 0; i < m; i++) {
        const drv_growth *g = &s->g[onnode[i]];
        double share;
        if (all_completing)
            share = 1.0;
        else if (g->watching || sum <= 0)
            continue;
        else if (g->completing)
            share = fmax(job_g(s, onnode[i], gmax) / sum, 1.0 / (beta * m));
        else
            share = fmin(job_g(s, onnode[i], gmax) / sum, 1.0);
        const drv_job *j = &st->jobs[onnode[i]];
        int32_t pods = 0;
        for (int32_t k = 0; k < j->pod_count; k++)
            pods += st->pods[j->pod_base + k].node == node &&
                    drv_pod_computes(&st->pods[j->pod_base + k]);
        for (int32_t k = 0; k < j->pod_count; k++) {
            const drv_pod *p = &st->pods[j->pod_base + k];
            if (p->node != node || !drv_pod_computes(p))
                continue;
            int64_t lim = (int64_t)(share * cpus / pods);
            int64_t req = j->role[p->role].req.cpu;
            lim = lim < req ? req : lim > (int64_t)cpus ? (int64_t)cpus : lim;
            if (drv_ctx_resize(c, j->pod_base + k, lim) != 0)
                return;
        }
    }
}

/*
 * The running jobs run[0..n) with a computing pod on each node, in run order, as a CSR list:
 * s->on[s->on_start[node] .. s->on_start[node + 1]). Two passes over the jobs' pods (count,
 * then fill at each node's cursor): O(nodes + pods of the running jobs), where asking every
 * node about every job cost O(nodes x pods). 0 or DRV_ENOMEM.
 */
static int jobs_per_node(const drv_state *st, fc_state *s, const int32_t *run, int32_t n)
{
    int32_t nn = st->nnodes;
    if (drv_grow(&s->on_start, sizeof *s->on_start, &s->start_cap, nn + 1) != 0 ||
        drv_grow(&s->cur, sizeof *s->cur, &s->cur_cap, nn + 1) != 0)
        return DRV_ENOMEM;
    for (int32_t v = 0; v <= nn; v++) {
        s->on_start[v] = 0;
        s->cur[v] = -1; /* the last job (index into run) counted on node v */
    }
    for (int32_t i = 0; i < n; i++) { /* counts, in on_start[node + 1] */
        const drv_job *j = &st->jobs[run[i]];
        for (int32_t k = 0; k < j->pod_count; k++) {
            const drv_pod *p = &st->pods[j->pod_base + k];
            if (p->node >= 0 && drv_pod_computes(p) && s->cur[p->node] != i) {
                s->cur[p->node] = i;
                s->on_start[p->node + 1]++;
            }
        }
    }
    for (int32_t v = 0; v < nn; v++)
        s->on_start[v + 1] += s->on_start[v];
    if (drv_grow(&s->on, sizeof *s->on, &s->on_cap, s->on_start[nn] + 1) != 0)
        return DRV_ENOMEM;
    for (int32_t v = 0; v < nn; v++)
        s->cur[v] = s->on_start[v]; /* now the next free slot of node v */
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &st->jobs[run[i]];
        for (int32_t k = 0; k < j->pod_count; k++) {
            const drv_pod *p = &st->pods[j->pod_base + k];
            int32_t v = p->node;
            if (v >= 0 && drv_pod_computes(p) &&
                (s->cur[v] == s->on_start[v] || s->on[s->cur[v] - 1] != run[i]))
                s->on[s->cur[v]++] = run[i];
        }
    }
    return 0;
}

static void fc_reallocate(drv_ctx *c, void *state)
{
    fc_state *s = state;
    const drv_state *st = drv_ctx_state(c);
    double now = drv_ctx_now(c);
    s->gen++; /* G may change below: the score's sums are stale */
    if (drv_growth_reserve(&s->g, &s->cap, st->njobs) != 0) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    int32_t *run = drv_arena_alloc(drv_ctx_arena(c), sizeof *run * ((size_t)st->nlive + 1));
    if (!run) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    int32_t n = 0;
    uint64_t sig = 1469598103934665603ULL;
    DRV_FOR_LIVE(st, j)
    if (st->jobs[j].phase == DRV_JOB_RUNNING) {
        run[n++] = j;
        sig = (sig ^ (uint64_t)j) * 1099511628211ULL;
    }
    if (sig != s->running_sig) { /* a job started or stopped: back-off resets */
        s->running_sig = sig;
        s->cur_interval = s->interval;
        s->next = now;
    }
    if (now < s->next || n == 0)
        return;
    bool all_completing = true;
    for (int32_t i = 0; i < n; i++) {
        measure(c, s, run[i], now);
        all_completing = all_completing && s->g[run[i]].completing;
    }
    if (jobs_per_node(st, s, run, n) != 0) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    for (int32_t node = 0; node < st->nnodes; node++)
        if (s->on_start[node + 1] > s->on_start[node])
            update_node(c, s, node, s->on + s->on_start[node],
                        s->on_start[node + 1] - s->on_start[node]);
    s->cur_interval = all_completing ? fmin(2 * s->cur_interval, s->max_interval) : s->interval;
    s->next = now + s->cur_interval;
}

/*
 * The score's per-node figures of this cycle: each running job's G added to the nodes that hold
 * one of its pods (a job not yet measured counted as fresh), in job order, so each node's sum
 * is the one a walk over the jobs for that node adds up, to the bit. O(nodes + pods of running
 * jobs) once per cycle (and again after fc_reallocate changed G); false when out of memory.
 */
static bool node_sums(const drv_ctx *c, fc_state *s)
{
    const drv_state *st = drv_ctx_state(c);
    if (s->sums_ok && s->sums_cycle == drv_ctx_cycle(c) && s->sums_gen == s->gen)
        return true;
    if (drv_grow(&s->sums, sizeof *s->sums, &s->sums_cap, st->nnodes) != 0)
        return false;
    for (int32_t v = 0; v < st->nnodes; v++)
        s->sums[v] = (fc_node){0, s->alpha, 0, -1};
    DRV_FOR_LIVE(st, j)
    {
        const drv_job *jb = &st->jobs[j];
        if (jb->phase != DRV_JOB_RUNNING)
            continue;
        bool fresh = j >= s->cap || s->g[j].g < 0;
        for (int32_t k = 0; k < jb->pod_count; k++) {
            int32_t v = st->pods[jb->pod_base + k].node;
            if (v < 0 || s->sums[v].last == j)
                continue;
            fc_node *x = &s->sums[v];
            x->last = j;
            if (fresh) {
                x->fresh++;
            } else {
                x->sum += s->g[j].g;
                x->gmax = fmax(x->gmax, s->g[j].g);
            }
        }
    }
    s->sums_ok = true;
    s->sums_cycle = drv_ctx_cycle(c);
    s->sums_gen = s->gen;
    return true;
}

/* O(1) per (pod, node) after node_sums, once per cycle. */
static int fc_score(const drv_ctx *c, void *state, int32_t pod, int32_t node)
{
    (void)pod;
    fc_state *s = state;
    /* A job not yet measured counts as growing, with the largest G on the node (alpha when
     * none is measured), as in update_node: counting it as 0 made a node of fresh jobs look
     * idle, and new jobs piled onto it (4 jobs on one node, 3 nodes half empty). */
    if (!node_sums(c, s))
        return drv_ctx_fail(c, DRV_ENOMEM), 0;
    const fc_node *x = &s->sums[node];
    double sum = x->sum + x->fresh * x->gmax;
    return (int)(100.0 * s->alpha / (s->alpha + sum) + 0.5);
}

/*
 * After a cycle that decided nothing: the limits change only at the next update (s->next),
 * and only while a job runs; the score reads the running jobs and G, which change only then or
 * when a job starts or stops. So: at the next update while a job runs, else never. A job that
 * starts is no concern here: this plugin is not blind to starts (no starts_blind), so a start
 * asks for the cycle that sees it - the simulator's start event, and the controller's
 * reconcile when it marks a job Running after a cycle (ctrl_mirror_set_phase). Without a wake
 * a queue of partly placed jobs (pod-by-pod admission can deadlock: docs/policies.md) was
 * cycled every period until the horizon, 777,600 cycles for 90 days.
 */
static double fc_wake(const drv_ctx *c, void *state)
{
    const fc_state *s = state;
    const drv_state *st = drv_ctx_state(c);
    DRV_FOR_LIVE(st, j)
    {
        if (st->jobs[j].phase == DRV_JOB_RUNNING)
            return s->next;
    }
    return INFINITY;
}

const drv_plugin drv_plugin_flowcon = {
    .name = "flowcon",
    .doc = "reallocate+score: CPU limits from growth efficiency G=P/R (FlowCon 2.0)",
    .init = fc_init,
    .fini = fc_fini,
    .score = fc_score,
    .reallocate = fc_reallocate,
    .wake = fc_wake,
};
