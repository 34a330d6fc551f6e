/*
 * usage.c - shares of the cluster, now and decayed over time (issue 14; issue 29, part 3).
 *
 * Now: a queue's dominant share is the largest over CPU, memory and GPUs of what its bound pods
 * take over the cluster's capacity (DRF, Ghodsi et al., NSDI 2011); a user's share within its
 * queue is the same against the queue's nominal quota where bounded.
 *
 * Over time: DRF over what runs now lets a queue that ran all night keep its lead in the
 * morning, when the others arrive (kueue#9734, volcano#5160). So each queue and each
 * (queue, user) pair also carries a decayed usage u, an exponentially weighted average of its
 * share s with a half-life H (Slurm's PriorityDecayHalfLife, KAI's usage-based fair share,
 * Kueue's admission fair sharing, each with its own units; this is our own):
 *
 *     u(t + dt) = u(t) * 2^(-dt/H) + s * (1 - 2^(-dt/H))
 *
 * where s is the share held over [t, t + dt). The drivers call drv_state_usage_advance before
 * the state changes at a time, so s is exactly what was bound over the interval: the
 * simulator at every event, the controller at every cycle. A share held for H counts half,
 * 2H three quarters. u stays in [0, max s], the scale of a share, so the fairshare order and
 * the priority's share factor read it in place of the share now.
 *
 * Worked example, H = 1 h: queue a holds 0.8 of the cluster all night (u = 0.8), queue b
 * nothing (u = 0). At 08:00 a's jobs end and both queues submit; by shares now both are 0 and
 * they tie, but by usage b goes first until b's u exceeds a's decaying 0.8 * 2^(-t/1h).
 *
 * Zero half-life means "now only", explicitly: every reader then takes the share of what is
 * bound now, the order exactly as before this file had time in it (kueue PR #15228 found a
 * zero half-life silently turning the feature off; here it is the plain DRF order, tested).
 */
#include "drover/usage.h"

#include <math.h>
#include <stdlib.h>

drv_res drv_cluster_capacity(const drv_state *st)
{
    drv_res cap = {0, 0, 0};
    for (int32_t n = 0; n < st->nnodes; n++)
        if (st->nodes[n].schedulable)
            cap = drv_res_add(cap, st->nodes[n].alloc);
    return cap;
}

double drv_dominant_share(drv_res part, drv_res whole)
{
    double s = 0;
    if (whole.cpu > 0 && (double)part.cpu / (double)whole.cpu > s)
        s = (double)part.cpu / (double)whole.cpu;
    if (whole.mem > 0 && (double)part.mem / (double)whole.mem > s)
        s = (double)part.mem / (double)whole.mem;
    if (whole.gpu > 0 && (double)part.gpu / (double)whole.gpu > s)
        s = (double)part.gpu / (double)whole.gpu;
    return s;
}

double drv_queue_share(const drv_state *st, int32_t queue, drv_res used, drv_res capacity)
{
    return drv_dominant_share(used, capacity) / st->queues[queue].weight;
}

double drv_user_share(const drv_state *st, int32_t queue, drv_res used, drv_res capacity)
{
    const drv_res *q = &st->queues[queue].quota;
    drv_res whole = {q->cpu != DRV_UNLIMITED && q->cpu > 0 ? q->cpu : capacity.cpu,
                     q->mem != DRV_UNLIMITED && q->mem > 0 ? q->mem : capacity.mem,
                     q->gpu != DRV_UNLIMITED && q->gpu > 0 ? q->gpu : capacity.gpu};
    return drv_dominant_share(used, whole);
}

/* Resources of the bound pods of a job. */
static drv_res job_use(const drv_job *j)
{
    drv_res r = {0, 0, 0};
    for (int k = 0; k < DRV_NROLES; k++)
        r = drv_res_add(r, drv_res_scale(j->role[k].req, j->bound[k]));
    return r;
}

/* By queue, then user; 0 for the same pair. */
static int pair_cmp(int32_t qa, int32_t ua, int32_t qb, int32_t ub)
{
    if (qa != qb)
        return qa < qb ? -1 : 1;
    return ua < ub ? -1 : ua > ub;
}

static int use_cmp(const void *a, const void *b)
{
    const drv_user_use *x = a, *y = b;
    return pair_cmp(x->queue, x->user, y->queue, y->user);
}

int drv_user_use_build(const drv_state *st, drv_user_use **tab, int32_t *n, int32_t *cap)
{
    if (drv_grow(tab, sizeof **tab, cap, st->nlive > 0 ? st->nlive : 1) != 0)
        return DRV_ENOMEM;
    drv_user_use *t = *tab;
    int32_t m = 0;
    DRV_FOR_LIVE(st, j)
    {
        const drv_job *job = &st->jobs[j];
        drv_res u = job_use(job);
        if (m < *cap && (u.cpu > 0 || u.mem > 0 || u.gpu > 0))
            t[m++] = (drv_user_use){job->queue, job->user, u};
    }
    qsort(t, (size_t)m, sizeof *t, use_cmp);
    int32_t w = 0; /* merge entries of one (queue, user) */
    for (int32_t i = 0; i < m; i++) {
        if (w > 0 && use_cmp(&t[w - 1], &t[i]) == 0)
            t[w - 1].used = drv_res_add(t[w - 1].used, t[i].used);
        else
            t[w++] = t[i];
    }
    *n = w;
    return 0;
}

drv_res drv_user_use_find(const drv_user_use *tab, int32_t n, int32_t queue, int32_t user)
{
    int32_t lo = 0, hi = n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (pair_cmp(tab[mid].queue, tab[mid].user, queue, user) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && pair_cmp(tab[lo].queue, tab[lo].user, queue, user) == 0 ? tab[lo].used
                                                                             : (drv_res){0, 0, 0};
}

/* ---- over time --------------------------------------------------------------------------- */

/* A decayed share below this is dropped from the users' table (it would take 30 half-lives
 * from a share of 1): the table stays as small as the pairs that ran recently. */
#define USAGE_FLOOR 1e-9

int drv_state_set_half_life(drv_state *st, double half_life)
{
    if (!(half_life >= 0 && half_life <= DRV_MAX_HALF_LIFE))
        return DRV_EINVAL;
    st->half_life = half_life;
    st->usage_at = -1;
    st->nuser_usage = 0;
    for (int32_t q = 0; q < st->nqueues; q++)
        st->queues[q].usage = 0;
    return 0;
}

/* Merges the users' shares now (cur, sorted) into the decayed table: keep weighs the old
 * share, 1 - keep the share now. O(pairs). */
static int advance_users(drv_state *st, const drv_user_use *cur, int32_t ncur, double keep,
                         drv_res cap)
{
    int32_t nold = st->nuser_usage;
    drv_user_usage *out = drv_malloc(sizeof *out * (size_t)(nold + ncur > 0 ? nold + ncur : 1));
    if (!out)
        return DRV_ENOMEM;
    int32_t i = 0, k = 0, m = 0;
    while (i < nold || k < ncur) {
        const drv_user_usage *o = i < nold ? &st->user_usage[i] : NULL;
        const drv_user_use *c = k < ncur ? &cur[k] : NULL;
        int cmp = !o ? 1 : !c ? -1 : pair_cmp(o->queue, o->user, c->queue, c->user);
        drv_user_usage e = cmp <= 0 ? *o : (drv_user_usage){c->queue, c->user, 0};
        double now = cmp >= 0 ? drv_user_share(st, c->queue, c->used, cap) : 0;
        e.share = e.share * keep + now * (1 - keep);
        i += cmp <= 0;
        k += cmp >= 0;
        if (e.share >= USAGE_FLOOR)
            out[m++] = e;
    }
    drv_free(st->user_usage);
    st->user_usage = out;
    st->nuser_usage = m;
    st->cap_user_usage = nold + ncur > 0 ? nold + ncur : 1;
    return 0;
}

int drv_state_usage_advance(drv_state *st, double now)
{
    if (st->half_life <= 0 || st->nqueues == 0)
        return 0;
    if (st->usage_at < 0) {
        st->usage_at = now;
        return 0;
    }
    if (!(now > st->usage_at))
        return 0;
    double keep = exp2(-(now - st->usage_at) / st->half_life);
    drv_res cap = drv_cluster_capacity(st);
    drv_user_use *cur = NULL;
    int32_t ncur = 0, capc = 0;
    if (drv_user_use_build(st, &cur, &ncur, &capc) != 0 ||
        advance_users(st, cur, ncur, keep, cap) != 0) {
        drv_free(cur);
        return DRV_ENOMEM;
    }
    drv_free(cur);
    for (int32_t q = 0; q < st->nqueues; q++) {
        drv_queue *qu = &st->queues[q];
        qu->usage = qu->usage * keep + drv_dominant_share(qu->used, cap) * (1 - keep);
    }
    st->usage_at = now;
    return 0;
}

double drv_queue_usage(const drv_state *st, int32_t queue, drv_res capacity)
{
    if (st->half_life <= 0)
        return drv_dominant_share(st->queues[queue].used, capacity);
    return st->queues[queue].usage;
}

double drv_queue_fair_share(const drv_state *st, int32_t queue, drv_res capacity)
{
    return drv_queue_usage(st, queue, capacity) / st->queues[queue].weight;
}

double drv_user_fair_share(const drv_state *st, int32_t queue, int32_t user, drv_res used_now,
                           drv_res capacity)
{
    if (st->half_life <= 0)
        return drv_user_share(st, queue, used_now, capacity);
    int32_t lo = 0, hi = st->nuser_usage;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        const drv_user_usage *e = &st->user_usage[mid];
        if (pair_cmp(e->queue, e->user, queue, user) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const drv_user_usage *e = lo < st->nuser_usage ? &st->user_usage[lo] : NULL;
    return e && e->queue == queue && e->user == user ? e->share : 0;
}
