/*
 * goodput.c - Pollux-style co-adaptation of GPUs and batch size for jobs with a calibrated
 * model (Qiao et al., OSDI'21, "Pollux: co-adaptive cluster scheduling for goodput-optimized
 * deep learning"), with Tiresias' least-attained-service order deciding who runs first.
 *
 * Why: a data-parallel job's useful speed is not its throughput but its goodput, progress per
 * second = throughput x statistical efficiency of its batch. More GPUs only pay when the batch
 * grows with them, and a bigger batch only pays while the gradient noise is large (later
 * epochs). Choosing both together, for every job, is what Pollux gains over fixed-batch
 * schedulers; ordering by attained service keeps short jobs short without knowing durations.
 *
 * Which jobs: those whose batch a policy may choose (drv_calib_job_adaptive: a calibrated
 * model and a validated batch range, i.e. GPU data-parallel jobs with measured profiles and
 * gradient statistics) and whose workers take one GPU each (a replica of the model). Every other
 * job is left to the profile's other plugins, which must leave these alone (dragon's knob
 * `adaptive=0`); their GPUs are not counted as ours.
 *
 * Every `interval` (60 s: Pollux's round; at the first cycle at or after each multiple):
 *   1. Goodput. For a job in epoch e (from its progress, calib.h) on n GPUs packed on the
 *      fewest nodes: G(n) = max over candidate batches B of gain(B) / step_time(n, B), B in the
 *      job's validated range with every replica getting at least the smallest local batch
 *      (goodput_model.c). Its speed-up is s(n) = G(n) / G(its minimum, 1 worker in the traces)
 *      (`base=1`: / G(its fair share), Pollux's reference).
 *      Online (the default, oracle=0), as Pollux: step_time is the job's own model
 *      (online.h), fitted from the measurements the driver publishes of the configuration it
 *      runs (drv_calib_job.seen) and nothing else; until it has run across nodes its
 *      inter-node sync is taken as at least 1.1 times its intra-node sync (`inter_prior`,
 *      Pollux's prior), and at a shape it has run the model is scaled to what it measured
 *      there (`residual`); gain(B) is extrapolated from the gradient statistics at its current
 *      batch, its variance anticipated `ahead` (60) seconds on from the noise's trend over the
 *      epochs it ran (drv_online_noise_ahead: the choice holds until the next round);
 *      before its first measurement G(n) = n (Pollux's prior of a linear speed-up), and it
 *      gets at most `explore` (2) times the most GPUs it has run on. Oracle (oracle=1, an
 *      ablation): the measured profiles' step time of every placement and the statistics at
 *      every batch (drv_calib_best_batch), cached per (model, n, epoch).
 *   2. Order (Tiresias' discretised LAS): queue k = number of thresholds threshold*factor^i
 *      the job's attained GPU-seconds have passed; by queue, then submission, then id.
 *   3. Allocation (goodput_alloc.c). Our GPUs = free GPUs + those our jobs hold. In order, each
 *      job gets its minimum (1 worker) while GPUs are left; the others wait (a running one is
 *      preempted). Then, repeatedly, the job and count k whose extra k GPUs raise the utility
 *      sum_j u(s_j(n_j)) most per GPU get them, while it rises. u(s) = s^p / p (log s at
 *      p = 0): p = 1 maximises the total speed-up; p = -1 (Pollux's default) weighs a job's
 *      rise in speed-up by 1/s^2, favouring the jobs that are slow so far. A running job's
 *      speed-up at any size but its current one is multiplied by (1 - penalty): the price
 *      of its restart (`delay`: Pollux's price by age and restarts instead). With 0.2 a job
 *      grows only when that raises its speed-up 1.25 times, so by more than a quarter of its
 *      GPUs where its speed-up is at most linear: fewer, larger changes, fewer restarts.
 *   4. Apply. A job whose count changed, or that waits and got GPUs, is evicted and re-placed
 *      (largest first; each on the node that fits its remaining workers most tightly, else
 *      the freest). With `compact`, a job that grew (or starts above its minimum) and could
 *      only be placed on more nodes than its GPUs need is held back - it keeps its GPUs, or
 *      gets its minimum - the round's decisions are rolled back and 3-4 run again; a job held
 *      back cannot be again, so this ends. Each placed job gets the best batch for the
 *      placement it actually got (BATCH). A job that keeps its GPUs is re-batched when the
 *      best batch raises its goodput: in place (AdaptDL, `batch_restart=0`) by any margin
 *      over 0.1 %; with a restart (`batch_restart=1`) only by the fraction `rebatch`, checked
 *      once per epoch, placement, batch and model.
 * Example: cifar10 in epoch 60 has large gradient noise: a step at B = 1024 gains 7.1 times
 * one at its initial 128 (of a possible 8; 1.5 in epoch 0), so on 4 GPUs a batch well above
 * 128 has the higher goodput, and more GPUs usually want a bigger batch still. Whether it gets
 * GPUs 5..8 depends on how much they raise its u(s) against what they would do for others.
 *
 * [R] Reconstructions (docs/model.md has each, measured against Pollux's choice): Pollux
 * searches allocations with a genetic algorithm over per-node matrices; we allocate greedily
 * by utility per GPU on packed shapes and hold back a change that would spread a job. Pollux
 * fits its throughput model by L-BFGS on the log error; online.c fits the same model in closed
 * form. On several GPU types we solve Sia's integer program (goodput_types.c, goodput_ilp.c)
 * instead of the greedy. Pollux prices a change by age and restarts, takes the fair share as the
 * speed-up's reference and starts a job on 1 GPU; we keep a constant price, one GPU as reference,
 * and 2 (knobs `delay`, `base`, `first` give Pollux's). Pollux changes a batch without restarting
 * (AdaptDL); so do we by default, but at our rounds, not at every epoch boundary, and for the
 * gradient noise anticipated `ahead` seconds on (0 gives Pollux's current noise). Pollux has no
 * queue order; we add Tiresias' LAS order for who gets a first GPU when GPUs are short (on
 * Pollux workloads 1-4 they never were: its knobs do not change the averages).
 *
 * Cost per round, J our live jobs, G the GPUs we may use, W = min(most workers a job may get,
 * G): O(J log J) to order them, O(J) goodput evaluations for their references, and for the at
 * most G jobs that get their minimum O(W) evaluations each (an evaluation tries at most
 * DRV_ONLINE_CANDS batches, online) and O(G x (G + W)) for the greedy; with `compact`, the
 * allocation and placement again at most once per job held back (at most G times). A refit
 * (online.c) only when a job measures a new configuration.
 */
#include "goodput.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const drv_knob_spec knobs[] = {
    {"p", -1, -10, 1,
     "fairness exponent of the utility u(s) = s^p / p (0: log s): 1 maximises "
     "total speed-up, -1 favours slow jobs (Pollux)"},
    {"penalty", 0.2, 0, 0.99,
     "a running job's speed-up at any size but its current one counts this much less (the "
     "price of its restart; 0.2: it grows only for 1.25 times its speed-up)"},
    {"rebatch", 0.1, 0, 10,
     "restart a job that keeps its GPUs at a better batch only when its "
     "goodput rises by this fraction"},
    {"threshold", 57600, 1, 1e9, "attained GPU-seconds of the first demotion (LAS queues)"},
    {"factor", 10, 1, 1000, "each further queue's threshold is this times the previous one"},
    {"queues", 2, 1, 8, "number of LAS queues (1: first come, first served)"},
    {"explore", 2, 0, 64,
     "a job gets at most this times the most GPUs it has run on (0: no limit; "
     "2: Pollux's exploration)"},
    {"interval", 60, 1, 3600,
     "seconds between re-allocations (Pollux's scheduling round): it runs at the first cycle "
     "at or after each multiple"},
    {"oracle", 0, 0, 1,
     "1: read every placement's measured step time and the gradient statistics at every "
     "batch (an ablation); 0: learn each job's throughput from what it has run (Pollux)"},
    {"batch_restart", 0, 0, 1,
     "1: a batch change of a running job costs a checkpoint-restart; 0: it changes in place, "
     "as AdaptDL does under Pollux"},
    {"inter_prior", 1.1, 0, 10,
     "online: until a job has run across nodes its inter-node sync terms are at least this "
     "times its intra-node ones (Pollux: 1.1; 0: free until measured)"},
    {"delay", 0, 0, 3600,
     "Pollux's change price: a job's speed-up at any allocation but its current one, a waiting "
     "job's first included, is multiplied by max(age - restarts * delay, 0) / (age + delay) "
     "(Pollux: 30 s; 0: none)"},
    {"base", 0, 0, 1,
     "the speed-up's reference: 1 the job's fair share, ceil(GPUs / jobs) packed (Pollux); "
     "0 its minimum (one GPU)"},
    {"first", 0, 0, 64,
     "most GPUs a job that has not run yet may get (Pollux: 1); 0: `explore` times one"},
    {"compact", 1, 0, 1,
     "1: a job is not grown (or started above its minimum) onto more nodes than its GPUs "
     "need; it keeps its GPUs and the allocation is made again"},
    {"residual", 1, 0, 1,
     "online: 1 a job's prediction at a shape (nodes, GPUs) it has run is scaled to what it "
     "measured there; 0 the fitted model alone (Pollux)"},
    {"ahead", 60, 0, 3600,
     "online: a job's batch and GPUs are chosen for the gradient noise anticipated this many "
     "seconds on, from its trend over the epochs it ran (60: one round; 0: its current noise, "
     "Pollux)"},
    {"types", 1, 0, 1,
     "1: on a cluster of several GPU types each job gets a type and a count of its GPUs "
     "(goodput_types.c); 0: every type's GPUs sized as one pool (heterogeneity off)"},
    {"fits", 1, 0, 1,
     "with types=1: 1 a job's online model is fitted per GPU type from what it ran there, other "
     "types read through the one-GPU speed ratio (Sia's bootstrap); 0 one type-blind fit"},
    {"move", 2, 0, 2,
     "with types, after the greedy: 1 a job starting takes another type's GPUs left when its "
     "goodput there is higher; 2 so may a job holding GPUs, priced as a restart; 0 neither"},
    {"bootstrap", 10, 0, 3600,
     "with types: seconds Sia's bootstrap profile takes on one GPU of each type; a new job "
     "gets GPUs no earlier than this times the cluster's types after its submission"},
    {"solver", 1, 0, 2,
     "with types: 0 the greedy and its moves; 1 Sia's integer program over (type, count) per "
     "job, solved exactly by GLPK every round; 2 the program, then the greedy on what it left"},
    {"ilp_p", -0.5, -10, -0.01,
     "with solver >= 1: a job's cost at a candidate is its value (goodput over its goodput on "
     "its smallest candidate, times the change price at a change) to this power (Sia: -0.5)"},
    {"lambda_n", 1.1, 0, 100,
     "with solver >= 1: the cost of a job left without GPUs (Sia: 1.1; a candidate costs <= 1)"},
    {"lambda_a", 0.01, 0, 100,
     "with solver >= 1: added to the cost of a change of a running job's allocation (Sia: 0.01)"},
};
enum { NKNOBS = sizeof knobs / sizeof knobs[0] };
/* A batch changed in place (free) still needs this predicted gain: no churn on rounding. */
static const double MIN_GAIN = 1e-3;

static int g_init(void **state, const drv_knob *kv, int nkv, drv_diag *d)
{
    double v[NKNOBS];
    int rc = drv_knobs_read(knobs, NKNOBS, kv, nkv, v, d);
    if (rc)
        return rc;
    goodput *g = drv_calloc(1, sizeof *g);
    if (!g)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    g->p = v[0];
    g->penalty = v[1];
    g->rebatch = v[2];
    g->threshold = v[3];
    g->factor = v[4];
    g->queues = (int32_t)v[5];
    g->explore = v[6];
    g->interval = v[7];
    g->oracle = v[8] != 0;
    g->batch_restart = v[9] != 0;
    g->inter_prior = v[10];
    g->delay = v[11];
    g->fair_base = v[12] != 0;
    g->first = (int32_t)v[13];
    g->compact = v[14] != 0;
    g->residual = v[15] != 0;
    g->ahead = v[16];
    g->types = v[17] != 0;
    g->fits = v[18] != 0 && g->types; /* heterogeneity off (types=0): one fit */
    g->move = (int32_t)v[19];
    g->bootstrap = v[20];
    g->solver = (int32_t)v[21];
    g->ilp_p = v[22];
    g->lambda_n = v[23];
    g->lambda_a = v[24];
    *state = g;
    return 0;
}

static void g_fini(void *state)
{
    goodput *g = state;
    if (!g)
        return;
    goodput_drop_tables(g);
    for (int32_t i = 0; i < g->cap_seen; i++)
        for (int32_t k = 0; k < GOODPUT_FITS; k++)
            drv_online_job_fini(&g->seen[i].ol[k]);
    drv_free(g->seen);
    drv_free(g);
}

static int cmp_order(const void *pa, const void *pb)
{
    const gjob *a = pa, *b = pb;
    if (a->level != b->level)
        return a->level < b->level ? -1 : 1;
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static int32_t level_of(const goodput *g, double attained)
{
    int32_t k = 0;
    double th = g->threshold;
    while (k < g->queues - 1 && attained >= th) {
        k++;
        th *= g->factor;
    }
    return k;
}

static int32_t bound_workers(const drv_ctx *c, int32_t job)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t n = 0;
    for (int32_t i = 0;; i++) {
        int32_t pod = drv_job_pod(st, job, DRV_ROLE_WORKER, i);
        if (pod < 0)
            return n;
        n += drv_ctx_pod_node(c, pod) >= 0;
    }
}

/* The job's GPUs per node as assumed now, nodes in the order its worker slots first reach them
 * (the simulator's calib_step lists them by node id: the same placement up to rotation only when
 * at most two counts differ — docs/peer-fidelity.md is generated with this); returns the node
 * count. */
static int32_t placement(const drv_ctx *c, int32_t job, int32_t *gpn)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t node[GOODPUT_MAXNODES], nn = 0;
    for (int32_t i = 0;; i++) {
        int32_t pod = drv_job_pod(st, job, DRV_ROLE_WORKER, i);
        if (pod < 0)
            break;
        int32_t at = drv_ctx_pod_node(c, pod), k = 0;
        if (at < 0)
            continue;
        while (k < nn && node[k] != at)
            k++;
        if (k == nn && nn < GOODPUT_MAXNODES) {
            node[nn] = at;
            gpn[nn++] = 0;
        }
        if (k < nn)
            gpn[k]++; /* a replica (worker) is a GPU in the calibrated model */
    }
    return nn;
}

/* Places the job's wanted workers, each batch of them on the node that holds all that are
 * left most tightly, else on the freest node. All or nothing: 1 placed, 0 not (no room, or
 * its queue's quota refuses them), < 0 error. */
static int place(drv_ctx *c, const gjob *x)
{
    int32_t job = x->id;
    const drv_state *st = drv_ctx_state(c);
    if (!drv_ctx_queue_room(c, job, drv_ctx_workers(c, job)))
        return 0;
    drv_res req = st->jobs[job].role[DRV_ROLE_WORKER].req;
    int32_t left = drv_ctx_workers(c, job) - bound_workers(c, job), slot = 0;
    int32_t probe = -1; /* a worker pod, to ask the job's node constraints (drv_ctx_allowed) */
    for (int32_t k = 0; k < st->jobs[job].pod_count && probe < 0; k++)
        if (st->pods[st->jobs[job].pod_base + k].role == DRV_ROLE_WORKER)
            probe = st->jobs[job].pod_base + k;
    drv_mark m = drv_ctx_mark(c);
    while (left > 0) {
        int32_t tight = -1, freest = -1;
        int64_t tight_v = INT64_MAX, freest_v = 0;
        for (int32_t nd = 0; nd < st->nnodes; nd++) {
            if (!st->nodes[nd].schedulable || (probe >= 0 && !drv_ctx_allowed(c, probe, nd)) ||
                !goodput_types_node_ok(c, x, nd))
                continue;
            drv_res f = drv_ctx_free(c, nd);
            int64_t fit = INT64_MAX; /* workers that fit there */
            if (req.gpu > 0)
                fit = f.gpu / req.gpu;
            if (req.cpu > 0 && f.cpu / req.cpu < fit)
                fit = f.cpu / req.cpu;
            if (req.mem > 0 && f.mem / req.mem < fit)
                fit = f.mem / req.mem;
            if (fit >= left && fit < tight_v) {
                tight_v = fit;
                tight = nd;
            }
            if (fit > freest_v) {
                freest_v = fit;
                freest = nd;
            }
        }
        int32_t nd = tight >= 0 ? tight : freest;
        if (nd < 0) {
            drv_ctx_rollback(c, m);
            return 0;
        }
        int64_t k = tight >= 0 ? left : freest_v;
        for (; k > 0; k--) {
            int32_t pod;
            while ((pod = drv_job_pod(st, job, DRV_ROLE_WORKER, slot)) >= 0 &&
                   drv_ctx_pod_node(c, pod) >= 0)
                slot++;
            if (pod < 0) {
                drv_ctx_rollback(c, m);
                return 0;
            }
            int rc = drv_ctx_bind(c, pod, nd);
            if (rc)
                return rc;
            left--;
        }
    }
    return 1;
}

/* The best batch for the job where it is now placed, and its goodput there (online: 0 before
 * its first measurement, which keeps its batch). */
static double best_here(goodput *g, const drv_ctx *c, const gjob *x, double *gp)
{
    int32_t gpn[GOODPUT_MAXNODES], nn = placement(c, x->id, gpn);
    return goodput_best_batch(g, x, gpn, nn, gp);
}

static int cmp_want(const void *pa, const void *pb)
{
    const gjob *a = pa, *b = pb;
    if (a->want != b->want)
        return a->want > b->want ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Online: what job x has measured of the configuration it runs (only that: the driver's
 * cj->seen) enters its model, and its gradient statistics at its current batch, in its
 * current epoch, are what the goodput of every batch is estimated from. 0 or DRV_ENOMEM. */
static int learn(goodput *g, gjob *x, const drv_calib_job *cj, double now)
{
    int32_t app = cj->app - 1;
    x->grad.init_bsz = g->calib->v[app].init_bsz;
    drv_calib_grad(g->calib, app, cj->batch, x->epoch, &x->grad.sqr, &x->grad.var);
    x->grad.var = drv_online_noise_ahead(&g->seen[x->id].noise, &x->grad, x->epoch, now, g->ahead);
    drv_online_job *o = goodput_home_fit(g, x->id, x->now_type); /* its type's when running */
    x->fit = o;
    if (!x->running || cj->seen.replicas != x->have)
        return 0; /* not running the configuration it measured (yet) */
    int rc = drv_online_observe(o, &cj->seen);
    return rc == DRV_ENOMEM ? rc : 0;
}

/* Our jobs (live, batch-adaptive, one GPU per worker, runnable on their minimum) into v, with
 * their epoch, LAS level, GPUs held and bounds; *gpus receives our GPUs (free ones plus those
 * our jobs hold). Returns how many, or -1 when g->seen cannot grow. */
static int32_t our_jobs(const drv_ctx *c, goodput *g, const drv_calib_jobs *m, gjob *v,
                        int64_t *gpus)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_calib *calib = m->calib;
    if (st->njobs > g->cap_seen) {
        int32_t old = g->cap_seen;
        if (drv_grow(&g->seen, sizeof *g->seen, &g->cap_seen, st->njobs) != 0)
            return -1;
        for (int32_t k = old; k < g->cap_seen; k++) {
            g->seen[k] = (struct seen){.epoch = -1, .restarts = -1, .have = -1};
            drv_online_noise_init(&g->seen[k].noise);
            for (int32_t f = 0; f < GOODPUT_FITS; f++) {
                drv_online_job_init(&g->seen[k].ol[f]);
                g->seen[k].ol[f].inter_prior = g->inter_prior;
                g->seen[k].ol[f].residual = g->residual;
                g->seen[k].ol_type[f] = -1;
            }
        }
    }
    int32_t n = 0;
    *gpus = 0;
    for (int32_t nd = 0; nd < st->nnodes; nd++)
        if (st->nodes[nd].schedulable)
            *gpus += drv_ctx_free(c, nd).gpu;
    DRV_FOR_LIVE(st, i)
    {
        const drv_job *j = &st->jobs[i];
        const drv_calib_job *cj = drv_calib_job_of(m, i);
        if (!drv_calib_job_adaptive(m, i) || cj->app > calib->n ||
            j->role[DRV_ROLE_WORKER].req.gpu != 1)
            continue;
        j = drv_ctx_job_now(c, i); /* its steps and attained service read below */
        int32_t app = cj->app - 1;
        gjob x = {.id = i, .cj = cj, .submit = j->submit, .type = -1, .fscale = 1, .gpn = g->gpn};
        x.epoch = drv_calib_epoch(calib, app, drv_calib_progress(calib, app, cj->batch, j->steps));
        x.level = level_of(g, j->attained);
        x.have = bound_workers(c, i);
        x.now_type = x.have > 0 && st->gpu_type_key ? goodput_job_type(c, i) : -1;
        x.running = x.have > 0 && j->phase != DRV_JOB_PENDING;
        int32_t cap = (int32_t)floor(cj->batch_max / calib->v[app].min_local_bsz + 1e-9);
        x.nmax = j->role[DRV_ROLE_WORKER].max;
        x.nmax = x.nmax < cap ? x.nmax : cap;
        x.nmax = x.nmax < GOODPUT_MAXW ? x.nmax : GOODPUT_MAXW;
        x.cap = x.nmax;
        if (x.running && x.have > g->seen[i].most)
            g->seen[i].most = x.have;
        if (g->explore > 0) {
            int32_t most = g->seen[i].most;
            int32_t lim = most == 0 && g->first > 0
                              ? g->first
                              : (int32_t)floor(g->explore * (most > 1 ? most : 1) + 1e-9);
            x.nmax = x.nmax < lim ? x.nmax : lim;
        }
        x.minw = j->role[DRV_ROLE_WORKER].min > 1 ? j->role[DRV_ROLE_WORKER].min : 1;
        x.price = goodput_change_price(g, j, drv_ctx_now(c));
        if (!g->oracle && learn(g, &x, cj, drv_ctx_now(c)) != 0)
            return -1;
        x.base = goodput_of(g, &x, x.minw);
        if (x.base <= 0 || x.nmax < x.minw)
            continue; /* no batch in its range runs on its minimum: it waits (none in traces) */
        *gpus += x.have;
        v[n++] = x;
    }
    return n;
}

/* 4a. Releases every job whose count changed (or that waits): its pods evicted, its wanted
 * workers set. 0 or an error from the decision list. */
static int release(drv_ctx *c, gjob *v, int32_t n)
{
    const drv_state *st = drv_ctx_state(c);
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        const drv_job *j = &st->jobs[x->id];
        bool same =
            x->running && !x->moved && x->want == x->have && drv_ctx_workers(c, x->id) == x->want;
        if (same)
            continue;
        for (int32_t k = 0; x->have > 0 && k < j->pod_count; k++) {
            int rc = drv_ctx_evict(c, j->pod_base + k,
                                   x->want == 0 ? DRV_REASON_PREEMPT : DRV_REASON_SHRINK);
            if (rc)
                return rc;
        }
        x->have = 0;
        int rc = x->want > 0 ? drv_ctx_scale(c, x->id, x->want) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

/* The batch to give job x, or 0 for none: where a job placed this round got placed, its best
 * batch there; a job that kept its GPUs, its best batch only when that raises its goodput by
 * the fraction `rebatch` (checked once per epoch, placement and batch). */
static double batch_for(drv_ctx *c, goodput *g, gjob *x)
{
    const drv_job *j = &drv_ctx_state(c)->jobs[x->id];
    const drv_calib_job *cj = x->cj;
    double gp = 0, b;
    if (x->placed)
        return best_here(g, c, x, &gp);
    if (x->have == 0)
        return 0; /* released and not placed: it waits */
    struct seen *was = &g->seen[x->id];
    uint32_t ver = g->oracle || !x->fit ? 0 : x->fit->version;
    if (x->epoch == was->epoch && j->restarts == was->restarts && x->have == was->have &&
        cj->batch == was->batch && ver == was->ver)
        return 0; /* checked on this epoch, placement, batch and model already: no gain */
    was->ver = ver;
    was->epoch = x->epoch;
    was->restarts = j->restarts;
    was->have = x->have;
    was->batch = cj->batch;
    b = best_here(g, c, x, &gp);
    int32_t gpn[GOODPUT_MAXNODES], nn = placement(c, x->id, gpn);
    double cur = g->oracle ? drv_calib_goodput(g->calib, cj->app - 1, gpn, nn, cj->batch, x->epoch)
                           : goodput_now(g, x, nn, x->have);
    return gp > cur * (1 + (g->batch_restart ? g->rebatch : MIN_GAIN)) ? b : 0;
}

/* 4b. Places every released job that got GPUs, largest first (v sorted so). 0 or an error. */
static int place_released(drv_ctx *c, gjob *v, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        x->placed = false;
        if (x->want == 0 || x->have > 0)
            continue;
        int rc = place(c, x);
        if (rc < 0)
            return rc;
        x->placed = rc > 0;
    }
    return 0;
}

/* 4c. With `compact`: a job placed this round on more nodes than its GPUs need (packed) is
 * held back when that is a change it chose - it grew, or starts above its minimum: a running
 * one keeps its GPUs, a waiting one gets its minimum (its most workers set so). Returns how
 * many were held back; a job held back cannot be again, so a round allocates at most once
 * more per job that got GPUs. */
static int32_t hold_spread(const drv_ctx *c, gjob *v, int32_t n)
{
    int32_t held = 0;
    for (int32_t i = 0; i < n; i++) {
        gjob *x = &v[i];
        int32_t keep = x->had > x->minw ? x->had : x->minw;
        if (!x->placed || x->want <= keep)
            continue;
        int32_t gpn[GOODPUT_MAXNODES], nn = placement(c, x->id, gpn);
        if (nn > (x->want + x->gpn - 1) / x->gpn) {
            x->nmax = keep;
            held++;
        }
    }
    return held;
}

static void pass(drv_ctx *c, goodput *g)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_calib_jobs *m = drv_ctx_snap(c)->model;
    if (!m || !m->calib || g->ran == drv_ctx_cycle(c) + 1)
        return;
    g->ran = drv_ctx_cycle(c) + 1;
    if (m->nlive_adaptive == 0 || !goodput_ready_tables(c, g, m->calib))
        return;
    gjob *v = drv_arena_alloc(drv_ctx_arena(c), sizeof *v * ((size_t)st->nlive + 1));
    int64_t gpus;
    int32_t n = v ? our_jobs(c, g, m, v, &gpus) : -1;
    if (n < 0)
        drv_ctx_fail(c, DRV_ENOMEM);
    if (n <= 0)
        return;
    goodput_fair_bases(g, v, n, gpus);
    for (int32_t i = 0; i < n; i++)
        v[i].had = v[i].have;
    for (;;) {
        qsort(v, (size_t)n, sizeof *v, cmp_order); /* 2. LAS order */
        if ((g->types ? goodput_types_allocate : goodput_allocate)(g, c, v, n, gpus) != 0) {
            drv_ctx_fail(c, DRV_ENOMEM);
            return;
        }
        /* 4. apply: release first, then place the changed jobs, largest first */
        drv_mark mk = drv_ctx_mark(c);
        if (release(c, v, n) != 0)
            return;
        qsort(v, (size_t)n, sizeof *v, cmp_want);
        if (place_released(c, v, n) != 0)
            return;
        if (!g->compact || hold_spread(c, v, n) == 0)
            break;
        drv_ctx_rollback(c, mk); /* again, with the spread jobs held back */
        for (int32_t i = 0; i < n; i++) {
            v[i].have = v[i].had;
            v[i].want = 0;
        }
    }
    for (int32_t i = 0; i < n; i++) {
        if (v[i].want == 0)
            continue;
        double b = batch_for(c, g, &v[i]);
        int (*set)(drv_ctx *, int32_t, int64_t, int64_t) =
            g->batch_restart ? drv_ctx_set_batch : drv_ctx_set_batch_inplace;
        if (b > 0 && set(c, v[i].id, (int64_t)b, v[i].cj->batch) != 0) /* same: no-op */
            return;
    }
}

/* It re-allocates once per interval, at the first cycle at or after each multiple of it (every
 * cycle when the period is the interval, as under --mechanics pollux): a pure function of the
 * time, so which earlier cycles ran does not matter. */
static bool round_due(const drv_ctx *c, const goodput *g)
{
    double now = drv_ctx_now(c);
    return floor(now / g->interval) * g->interval > now - drv_ctx_period(c);
}

static void g_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t njobs)
{
    (void)jobs;
    (void)njobs;
    if (round_due(c, state))
        pass(c, state);
}

static void g_scale(drv_ctx *c, void *state)
{
    if (round_due(c, state))
        pass(c, state);
}

/* Its jobs' epochs, attained service and gradient statistics move with time: while it has a
 * live job it may decide at the next round; with none, not until one arrives. */
static double g_wake(const drv_ctx *c, void *state)
{
    const goodput *g = state;
    const drv_calib_jobs *m = drv_ctx_snap(c)->model;
    if (!m || !m->calib || m->nlive_adaptive == 0)
        return INFINITY;
    return (floor(drv_ctx_now(c) / g->interval) + 1) * g->interval;
}

const drv_plugin drv_plugin_goodput = {
    .name = "goodput",
    .doc = "GPUs and batch size by goodput for calibrated jobs, LAS order (Pollux + Tiresias)",
    .init = g_init,
    .fini = g_fini,
    .admit = g_admit,
    .scale = g_scale,
    .wake = g_wake,
    /* It decides only at its rounds, which its wake makes the driver run: a job starting
     * between two rounds changes nothing it would decide before the next. */
    .starts_blind = drv_starts_blind,
};
