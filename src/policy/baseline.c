/*
 * baseline.c - the plugins of the two baselines every seed paper compares against.
 *
 *  fifo            queue_order  submission order (kube-scheduler's default queue sort orders
 *                               pods by priority, then creation time; all our jobs share one
 *                               priority here, so creation order it is).
 *  pod-by-pod      admit        kube-scheduler without gang: each pending pod is placed on its
 *                               own, in pod creation order (jobs submitted together interleave);
 *                               a pod that does not fit is skipped and retried next cycle. A job
 * whose pods are partly placed holds their resources while waiting, and two such jobs can deadlock.
 *  gang            admit        whole-job admission (Volcano gang / Kubeflow with PodGroups): all
 *                               pods at the requested size, or none. Knob strict=1 stops at the
 *                               first job that does not fit (strict FIFO, no backfill).
 *  least-allocated score        kube-scheduler's NodeResourcesFit LeastAllocated: prefer the
 *                               node with the most free share after placing, averaged over CPU,
 *                               memory (and GPUs where the node has any) — spreads pods.
 *  most-allocated  score        the opposite: bin-packing.
 */
#include "drover/policy.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

/* ---- fifo -------------------------------------------------------------------------------- */

/* The submission time as the key: the core's tie rule (submit, then id) does the rest. */
static double fifo_key(const drv_ctx *c, void *state, int32_t job)
{
    (void)state;
    return drv_ctx_state(c)->jobs[job].submit;
}

/* A job's key never changes. */
static bool fifo_kept(const drv_ctx *c, void *state)
{
    (void)c;
    (void)state;
    return true;
}

const drv_plugin drv_plugin_fifo = {
    .name = "fifo",
    .timeless = true,
    .doc = "queue order: submission time (first come, first served)",
    .queue_key = fifo_key,
    .queue_kept = fifo_kept,
    .starts_blind = drv_starts_blind,
};

/* ---- pod-by-pod ---------------------------------------------------------------------------- */

/*
 * kube-scheduler's active queue orders pods by creation time. An operator creates a job's pods
 * one after another, so pods of jobs submitted close together interleave: job A's PS, job B's
 * PS, A's worker 0, B's worker 0, ... That interleaving is what lets two half-placed jobs hold
 * each other's resources. We model a job's k-th pod (PS first, then chief, workers) as created
 * at submit + k * stagger.
 */
static const drv_knob_spec podwise_knobs[] = {
    {"stagger", 0.1, 0, 60, "seconds between the creations of one job's pods"},
};

typedef struct podwise_state {
    double stagger;
} podwise_state;

typedef struct pending_pod {
    double created;
    int32_t job, pod;
} pending_pod;

static int podwise_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[1];
    int rc = drv_knobs_read(podwise_knobs, 1, knobs, nknobs, v, d);
    if (rc)
        return rc;
    podwise_state *p = drv_calloc(1, sizeof *p);
    if (!p)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    p->stagger = v[0];
    *state = p;
    return 0;
}

static void podwise_fini(void *state)
{
    drv_free(state);
}

static int cmp_pending(const void *a, const void *b)
{
    const pending_pod *x = a, *y = b;
    if (x->created != y->created)
        return x->created < y->created ? -1 : 1;
    if (x->job != y->job)
        return x->job < y->job ? -1 : 1;
    return (x->pod > y->pod) - (x->pod < y->pod);
}

static void podwise_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    const podwise_state *ps = state;
    const drv_state *st = drv_ctx_state(c);
    static const int order[DRV_NROLES] = {DRV_ROLE_PS, DRV_ROLE_CHIEF, DRV_ROLE_WORKER,
                                          DRV_ROLE_EVALUATOR};
    int32_t cap = 0;
    for (int32_t i = 0; i < n; i++)
        cap += st->jobs[jobs[i]].pod_count;
    pending_pod *v = drv_arena_alloc(drv_ctx_arena(c), sizeof *v * ((size_t)cap + 1));
    if (!v) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    int32_t nv = 0;
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &st->jobs[jobs[i]];
        int32_t ordinal = 0;
        for (int k = 0; k < DRV_NROLES; k++) {
            int r = order[k];
            /* The first target[r] slots are the role's pods; the rest are never created. */
            for (int32_t idx = 0; idx < j->target[r]; idx++, ordinal++) {
                int32_t pod = drv_job_pod(st, jobs[i], r, idx);
                if (pod >= 0 && drv_ctx_pod_node(c, pod) < 0)
                    v[nv++] = (pending_pod){j->submit + ordinal * ps->stagger, jobs[i], pod};
            }
        }
    }
    qsort(v, (size_t)nv, sizeof *v, cmp_pending);
    for (int32_t i = 0; i < nv && !drv_ctx_error(c); i++) /* a failed bind fails the cycle */
        drv_ctx_place_pod(c, v[i].pod);
}

const drv_plugin drv_plugin_pod_by_pod = {
    .name = "pod-by-pod",
    .timeless = true,
    .doc = "admit: place each pod independently in creation order, no gang (kube-scheduler)",
    .init = podwise_init,
    .fini = podwise_fini,
    .admit = podwise_admit,
    .starts_blind = drv_starts_blind,
};

/* ---- gang ---------------------------------------------------------------------------------- */

static const drv_knob_spec gang_knobs[] = {
    {"strict", 0, 0, 1, "1: stop at the first job that does not fit (no backfill)"},
};

typedef struct gang_state {
    bool strict;
} gang_state;

static int gang_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[1];
    int rc = drv_knobs_read(gang_knobs, 1, knobs, nknobs, v, d);
    if (rc)
        return rc;
    gang_state *g = drv_calloc(1, sizeof *g);
    if (!g)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    g->strict = v[0] != 0;
    *state = g;
    return 0;
}

static void gang_fini(void *state)
{
    drv_free(state);
}

static void gang_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    const gang_state *g = state;
    const drv_state *st = drv_ctx_state(c);
    if (drv_ctx_queue_stuck(c))
        return; /* every job's place_gang below would fail and change nothing */
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &st->jobs[jobs[i]];
        int rc = drv_ctx_place_gang(c, jobs[i], j->target[DRV_ROLE_WORKER]);
        if (rc < 0)
            return;
        if (rc == 0 && g->strict)
            return;
    }
}

const drv_plugin drv_plugin_gang = {
    .name = "gang",
    .timeless = true,
    .doc = "admit: whole jobs at their requested size or not at all (Volcano gang)",
    .init = gang_init,
    .fini = gang_fini,
    .admit = gang_admit,
    .starts_blind = drv_starts_blind,
};

/* ---- least-allocated / most-allocated ------------------------------------------------------ */

/* Sum over the node's resources of the free share: the key both scores are monotone in. */
static double free_share_key(const drv_node *n, drv_res free)
{
    double sum = 0;
    if (n->alloc.cpu > 0)
        sum += (double)free.cpu / (double)n->alloc.cpu;
    if (n->alloc.mem > 0)
        sum += (double)free.mem / (double)n->alloc.mem;
    if (n->alloc.gpu > 0)
        sum += (double)free.gpu / (double)n->alloc.gpu;
    return sum;
}

static double neg_free_share_key(const drv_node *n, drv_res free)
{
    return -free_share_key(n, free);
}

/* Mean free share of the node's resources after placing the pod, 0..100. */
static int free_share_after(const drv_ctx *c, int32_t pod, int32_t node)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_node *n = &st->nodes[node];
    const drv_pod *p = &st->pods[pod];
    drv_res after = drv_res_sub(drv_ctx_free(c, node), st->jobs[p->job].role[p->role].req);
    int k = (n->alloc.cpu > 0) + (n->alloc.mem > 0) + (n->alloc.gpu > 0);
    return k ? (int)(100.0 * free_share_key(n, after) / k) : 0;
}

static int least_alloc_score(const drv_ctx *c, void *state, int32_t pod, int32_t node)
{
    (void)state;
    return free_share_after(c, pod, node);
}

static int most_alloc_score(const drv_ctx *c, void *state, int32_t pod, int32_t node)
{
    (void)state;
    return 100 - free_share_after(c, pod, node);
}

/*
 * Bounds over a set of nodes (drv_node_set). The free share is linear in free, so
 * share(free - req) = share(free) - share(req): with the index keyed by our own key, the set's
 * maximum key gives the bound directly (least-allocated: the largest share; most-allocated,
 * keyed by the negated share: the smallest). Otherwise least-allocated uses the set's
 * per-dimension maximum free, and most-allocated has no bound but 100. The 1e-6 absorbs
 * rounding differences between the two ways of computing the same share.
 */
static double req_share(const drv_ctx *c, int32_t pod, const drv_node_set *set)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_pod *p = &st->pods[pod];
    drv_node n = {.alloc = set->alloc};
    return free_share_key(&n, st->jobs[p->job].role[p->role].req);
}

/* least-allocated's state: req_share of up to LA_MEMO recent (request, allocatable) pairs. A
 * search bounds many sets of a few allocatables for one pod, and a gang's pods share their
 * request: the share is a function of the pair alone, so it is kept across pods and cycles. */
enum { LA_MEMO = 16 };
typedef struct la_state {
    struct {
        bool used;
        drv_res req, alloc;
        double share;
    } e[LA_MEMO];
} la_state;

static int la_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    (void)knobs; /* no knobs; those given are ignored, as for plugins without state */
    (void)nknobs;
    la_state *p = drv_calloc(1, sizeof *p);
    if (!p)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    *state = p;
    return 0;
}

static void la_fini(void *state)
{
    drv_free(state);
}

static double req_share_memo(const drv_ctx *c, la_state *m, int32_t pod, const drv_node_set *set)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_pod *p = &st->pods[pod];
    drv_res q = st->jobs[p->job].role[p->role].req, a = set->alloc;
    uint64_t h = (uint64_t)a.cpu * 31u + (uint64_t)a.mem * 7u + (uint64_t)a.gpu +
                 (uint64_t)q.cpu * 131u + (uint64_t)q.mem * 17u + (uint64_t)q.gpu * 3u;
    size_t i = (size_t)(h ^ (h >> 17) ^ (h >> 31)) % LA_MEMO;
    if (!m->e[i].used || memcmp(&m->e[i].req, &q, sizeof q) != 0 ||
        memcmp(&m->e[i].alloc, &a, sizeof a) != 0) {
        m->e[i].used = true;
        m->e[i].req = q;
        m->e[i].alloc = a;
        m->e[i].share = req_share(c, pod, set);
    }
    return m->e[i].share;
}

/* 100 / k for k resources: the bound multiplies where the score divides (no division on the
 * search's path); the two differ by a few units in the last place, far below the 1e-6 added.
 * The sum is then truncated, not floored: the same for the non-negative values that can win,
 * one more (still a bound) for negative ones, which the core clamps to 0 anyway. */
static const double per_dim[4] = {0, 100.0, 50.0, 100.0 / 3};

static int least_alloc_bound(const drv_ctx *c, void *state, int32_t pod, const drv_node_set *set)
{
    int k = drv_res_dims(set->alloc);
    if (set->mixed) {
        /* A node n of a mixed set scores at most 100·key(n)/k(n): share(req) >= 0 only lowers
         * it. Each node has at least the dimensions of the per-dimension minimum allocatable
         * (k(n) >= k), and key(n) <= maxkey_dims[k(n)], so the largest non-negative
         * maxkey_dims[d] over d, for d >= k, bounds them all — tighter than maxkey over k
         * when nodes with a GPU (three resources, keys up to 3) join nodes without (two, keys
         * up to 2, 100·key/2). Without our key, or with no dimension known, only 100 does. */
        if (set->key != free_share_key || !k)
            return 100;
        double top = 0;
        for (int d = k; d <= 3; d++)
            if (set->maxkey_dims[d] * per_dim[d] > top)
                top = set->maxkey_dims[d] * per_dim[d];
        return (int)(top + 1e-6);
    }
    if (!k)
        return 0;
    double top = set->maxkey;
    if (set->key != free_share_key) {
        drv_node n = {.alloc = set->alloc};
        top = free_share_key(&n, set->maxfree);
    }
    return (int)((top - req_share_memo(c, state, pod, set)) * per_dim[k] + 1e-6);
}

static int most_alloc_bound(const drv_ctx *c, void *state, int32_t pod, const drv_node_set *set)
{
    (void)state;
    int k = drv_res_dims(set->alloc);
    if (!k || set->key != neg_free_share_key || set->mixed)
        return 100;
    double low = -set->maxkey; /* the smallest free share in the set */
    return 100 - (int)floor(100.0 * (low - req_share(c, pod, set)) / k - 1e-6);
}

const drv_plugin drv_plugin_least_allocated = {
    .name = "least-allocated",
    .timeless = true,
    .doc = "score: prefer emptier nodes (spread; kube-scheduler default)",
    .init = la_init,
    .fini = la_fini,
    .score = least_alloc_score,
    .node_key = free_share_key,
    .score_bound = least_alloc_bound,
    .bound_mixed = true,
    .score_by_summary = true,
    .starts_blind = drv_starts_blind,
};

const drv_plugin drv_plugin_most_allocated = {
    .name = "most-allocated",
    .timeless = true,
    .doc = "score: prefer fuller nodes (bin-packing)",
    .score = most_alloc_score,
    .node_key = neg_free_share_key,
    .score_bound = most_alloc_bound,
    .bound_mixed = true,
    .score_by_summary = true,
    .starts_blind = drv_starts_blind,
};
