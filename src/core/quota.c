/*
 * quota.c - admission within queue quotas (issue 14): whether a queue may take more resources,
 * Kueue's rule for a ClusterQueue in a cohort, on the cycle's assumed use of each queue.
 *
 * For each dimension the placement adds to (cpu, memory, GPUs), with u the queue's use after
 * the placement:
 *   - u <= quota: within its nominal quota, admitted;
 *   - else, when the queue is in a cohort: u <= quota + borrowing limit, and the cohort still
 *     has that much unused - the sum over the cohort's queues of max(0, quota - use) covers the
 *     excess of all its borrowing members, sum of max(0, use - quota). The two sums differ by
 *     sum(quota - use), so that is: the cohort's total use (this queue's at u) <= its total
 *     quota;
 *   - else refused.
 * DRV_UNLIMITED never binds: an unlimited quota admits anything, an unlimited borrowing limit
 * leaves only the cohort's room, and a cohort with a member of unlimited quota in a dimension
 * has unlimited room there. Sums saturate at INT64_MAX (= unlimited), so no quota, limit or
 * use near INT64_MAX overflows. A dimension the placement does not add to never binds: a
 * queue over its GPU quota (after its quota was lowered) may still start CPU-only pods.
 *
 * Worked example (cohort "lab": queue a quota 8 GPUs borrow 4, queue b quota 8 borrow 0; a uses
 * 6, b uses 5): a may grow to 8 on its own quota, and to 11 (3 borrowed) since the cohort then
 * uses 11 + 5 = 16 <= 16; not to 12 (the cohort would use 17). b, which may not borrow, may
 * grow to 8: its nominal quota is its own even while a borrows (the cluster's room permitting;
 * Kueue has b reclaim lent quota by preemption, which is not the core's). With b at 7, a's 3
 * borrowed GPUs exceed the 1 b leaves unused: a may not grow at all until one gives some back.
 *
 * Cost: O(1) for a queue within its quota or with no cohort, O(queues) when it borrows; nothing
 * at all (one test) for a state with no queue.
 */
#include "cycle_int.h"

/* a + b for values >= 0, saturating at INT64_MAX. */
static int64_t sat_add(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int64_t dim(drv_res r, int d)
{
    return d == 0 ? r.cpu : d == 1 ? r.mem : r.gpu;
}

/* Kueue's rule for queue q in dimension d at use u (its use after the placement), the others'
 * use read from used[]. */
static bool dim_admits(const drv_state *st, const drv_res *used, int32_t q, int d, int64_t u)
{
    const drv_queue *qu = &st->queues[q];
    int64_t quota = dim(qu->quota, d);
    if (quota == DRV_UNLIMITED || u <= quota)
        return true;
    if (qu->cohort == 0 || u > sat_add(quota, dim(qu->borrow, d)))
        return false; /* lends and borrows nothing, or beyond its borrowing limit */
    int64_t total_quota = 0, total_use = 0;
    for (int32_t i = 0; i < st->nqueues; i++) {
        if (st->queues[i].cohort != qu->cohort)
            continue;
        int64_t qi = dim(st->queues[i].quota, d);
        if (qi == DRV_UNLIMITED)
            return true; /* a member with no bound lends without bound */
        total_quota = sat_add(total_quota, qi);
        total_use = sat_add(total_use, i == q ? u : dim(used[i], d));
    }
    return total_quota == INT64_MAX || total_use <= total_quota;
}

bool drv_queue_admits(const drv_state *st, const drv_res *used, int32_t queue, drv_res add)
{
    if (st->nqueues == 0)
        return true;
    for (int d = 0; d < 3; d++) {
        int64_t a = dim(add, d);
        if (a > 0 && !dim_admits(st, used, queue, d, sat_add(dim(used[queue], d), a)))
            return false;
    }
    return true;
}

bool drv_ctx_queue_fits(const drv_ctx *c, int32_t queue, drv_res add)
{
    const drv_state *st = c->snap->st;
    return st->nqueues == 0 || drv_queue_admits(st, c->s->assumed.qused, queue, add);
}

drv_res cycle_gang_need(const drv_ctx *c, int32_t job, int32_t workers)
{
    const drv_job *j = &c->snap->st->jobs[job];
    drv_res need = {0, 0, 0};
    for (int r = 0; r < DRV_NROLES; r++)
        need = drv_res_add(need,
                           drv_res_scale(j->role[r].req, cycle_role_missing(c, job, r, workers)));
    return need;
}

bool drv_ctx_queue_room(const drv_ctx *c, int32_t job, int32_t workers)
{
    const drv_state *st = c->snap->st;
    if (st->nqueues == 0)
        return true;
    return drv_queue_admits(st, c->s->assumed.qused, st->jobs[job].queue,
                            cycle_gang_need(c, job, workers));
}
