/*
 * fairshare.c - fair share among queues and among the users of a queue (issue 14).
 *
 * Among queues, weighted dominant-resource fairness (Ghodsi et al., "Dominant Resource
 * Fairness", NSDI 2011; Volcano's drf and proportion plugins, Kueue's fair sharing): a queue's
 * share of a resource is its use over the cluster's capacity (allocatable of the schedulable
 * nodes), its dominant share the largest of those over CPU, memory and GPUs, and its weighted
 * share that divided by its weight. The `fairshare` queue_order plugin puts the jobs of the
 * queue with the smallest weighted share first, so freed capacity goes to the queue furthest
 * below its share; jobs of one queue tie (the next plugin of the chain, or submission order,
 * decides among them).
 *
 * Worked example: 64 CPUs and 8 GPUs; queue a (weight 2) uses 32 CPUs and 2 GPUs: shares 0.5
 * and 0.25, dominant 0.5, weighted 0.25. Queue b (weight 1) uses 8 CPUs and 2 GPUs: dominant
 * 0.25, weighted 0.25. They tie; once b takes 1 more GPU (0.375) a's jobs go first.
 *
 * With progressive=1 the key of a queue's k-th job (in submission order) is the queue's
 * weighted share as if its k - 1 jobs before it were admitted too (DRF's progressive filling;
 * the first job's key is the queue's share, as without): the
 * queues' jobs interleave in one cycle instead of the least-served queue taking all the room of
 * a cycle, at the price of a strict submission order within each queue (no chained plugin is
 * asked there: keys of one queue's jobs differ).
 *
 * Over time (the profile's half_life > 0; usage.c): a queue's weighted share is its decayed
 * dominant share over its weight, so a queue that ran all night does not keep winning in the
 * morning; progressive keys add the demand of the queue's earlier jobs to that. With half_life
 * 0 (the default) the share is what is bound now, exactly as above.
 *
 * Among users within a queue, a user's share is the dominant share of the resources its bound
 * pods in that queue take, against the queue's nominal quota where it is bounded and the
 * cluster's capacity where it is not: what the combined priority's `share` factor reads
 * (priority.c: less used, higher priority).
 *
 * A state with no queue orders nothing here: every key is 0, and the plugin says so
 * (queue_idle), so the core leaves it out of the chain: `fairshare,priority` then costs what
 * `priority` alone does, and orders the same.
 * Cost otherwise: O(nodes + queues) per cycle, O(1) per key; progressive: O(pending log
 * pending) per cycle, O(log pending) per key.
 */
#include "drover/policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const drv_knob_spec fs_knobs[] = {
    {"progressive", 0, 0, 1,
     "1: a job's key counts the jobs of its queue submitted before it as admitted (DRF "
     "progressive filling: queues interleave within a cycle, each queue in submission order)"},
};
enum { NKNOBS = sizeof fs_knobs / sizeof fs_knobs[0] };

/* A pending job and its key (progressive). */
typedef struct fs_ent {
    int32_t job;
    int32_t queue;
    double submit;
    double key;
} fs_ent;

typedef struct fs_state {
    bool progressive;
    double *share; /* per queue: its weighted dominant share at queue_begin */
    int32_t cap_share;
    fs_ent *ent; /* progressive: the pending jobs, by job id once keyed */
    int32_t nent, cap_ent;
    drv_res *acc; /* progressive: per queue, use plus the demand of its jobs so far */
    int32_t cap_acc;
    bool active; /* the state had queues at queue_begin */
} fs_state;

/* ---- the plugin -------------------------------------------------------------------------- */

static int fs_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[NKNOBS];
    int rc = drv_knobs_read(fs_knobs, NKNOBS, knobs, nknobs, v, d);
    if (rc)
        return rc;
    fs_state *f = drv_calloc(1, sizeof *f);
    if (!f)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    f->progressive = v[0] != 0;
    *state = f;
    return 0;
}

static void fs_fini(void *state)
{
    fs_state *f = state;
    drv_free(f->share);
    drv_free(f->ent);
    drv_free(f->acc);
    drv_free(f);
}

static int by_queue_submit(const void *a, const void *b)
{
    const fs_ent *x = a, *y = b;
    if (x->queue != y->queue)
        return x->queue < y->queue ? -1 : 1;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return x->job < y->job ? -1 : x->job > y->job;
}

static int by_job(const void *a, const void *b)
{
    const fs_ent *x = a, *y = b;
    return x->job < y->job ? -1 : x->job > y->job;
}

/* Progressive filling: each pending job's key with the demand of its queue's earlier jobs
 * counted (not its own: DRF gives the next job to the queue whose share is least now). On
 * allocation failure the cycle fails (drv_ctx_fail). */
static void progressive_keys(const drv_ctx *c, fs_state *f, const int32_t *jobs, int32_t n,
                             drv_res cap)
{
    const drv_state *st = drv_ctx_state(c);
    f->nent = 0;
    if (drv_grow(&f->ent, sizeof *f->ent, &f->cap_ent, n) != 0 ||
        drv_grow(&f->acc, sizeof *f->acc, &f->cap_acc, st->nqueues) != 0) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &st->jobs[jobs[i]];
        f->ent[i] = (fs_ent){jobs[i], j->queue, j->submit, 0};
    }
    qsort(f->ent, (size_t)n, sizeof *f->ent, by_queue_submit);
    /* Now only, a queue's use starts the sum; over time, its decayed share (f->share) is the
     * base and the demand of its earlier jobs is added to it. */
    bool decayed = st->half_life > 0;
    for (int32_t q = 0; q < st->nqueues; q++)
        f->acc[q] = decayed ? (drv_res){0, 0, 0} : drv_ctx_queue_used(c, q);
    for (int32_t i = 0; i < n; i++) {
        fs_ent *e = &f->ent[i]; /* DRF: the next job goes to the queue whose share is least */
        e->key = (decayed ? f->share[e->queue] : 0) +
                 drv_queue_share(st, e->queue, f->acc[e->queue], cap);
        f->acc[e->queue] = drv_res_add(f->acc[e->queue], drv_job_demand(&st->jobs[e->job]));
    }
    qsort(f->ent, (size_t)n, sizeof *f->ent, by_job);
    f->nent = n;
}

static void fs_begin(const drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    fs_state *f = state;
    const drv_state *st = drv_ctx_state(c);
    f->active = st->nqueues > 0;
    f->nent = 0;
    if (!f->active)
        return;
    drv_res cap = drv_cluster_capacity(st);
    if (drv_grow(&f->share, sizeof *f->share, &f->cap_share, st->nqueues) != 0) {
        f->active = false;
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    for (int32_t q = 0; q < st->nqueues; q++)
        f->share[q] = st->half_life > 0 ? drv_queue_fair_share(st, q, cap)
                                        : drv_queue_share(st, q, drv_ctx_queue_used(c, q), cap);
    if (f->progressive)
        progressive_keys(c, f, jobs, n, cap);
}

/* Without queues every key is 0, so keys kept from the last cycle still stand. */
static bool fs_kept(const drv_ctx *c, void *state)
{
    (void)c;
    return !((const fs_state *)state)->active;
}

/* Without queues every key is 0: the core leaves the plugin out of the chain. */
static bool fs_idle(const drv_ctx *c, void *state)
{
    (void)c;
    return !((const fs_state *)state)->active;
}

/* Timeless now only; over time the shares move without a change of the cluster, so a quiet
 * cycle may order differently at the next period. */
static double fs_wake(const drv_ctx *c, void *state)
{
    const fs_state *f = state;
    return f->active && drv_ctx_state(c)->half_life > 0 ? -INFINITY : INFINITY;
}

/* Smaller first: the weighted dominant share of the job's queue (progressive: with the
 * queue's jobs before it counted). */
static double fs_key(const drv_ctx *c, void *state, int32_t job)
{
    const fs_state *f = state;
    if (!f->active)
        return 0;
    if (f->nent > 0) {
        fs_ent k = {.job = job};
        const fs_ent *e = bsearch(&k, f->ent, (size_t)f->nent, sizeof *f->ent, by_job);
        if (e)
            return e->key;
    }
    return f->share[drv_ctx_state(c)->jobs[job].queue];
}

const drv_plugin drv_plugin_fairshare = {
    .name = "fairshare",
    .timeless = true,
    .doc = "queue order: weighted dominant-resource fair share of each job's queue (DRF; "
           "Volcano drf/proportion, Kueue fair sharing)",
    .init = fs_init,
    .fini = fs_fini,
    .queue_begin = fs_begin,
    .queue_key = fs_key,
    .queue_kept = fs_kept,
    .queue_idle = fs_idle,
    .wake = fs_wake,
    .starts_blind = drv_starts_blind,
};
