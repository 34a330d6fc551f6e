/*
 * victims.c - the search for the gangs to evict so that a waiting gang fits (victims.h),
 * shared by preempt.c (priority and quota) and las.c (attained service).
 *
 * Why one search: both plugins want the same thing once they know who may be taken - the
 * fewest whole gangs (never part of one), and no eviction unless the waiting gang is placed in
 * the same cycle - and differ only in who may be taken and in what order.
 *
 * Algorithm for one preemptor P and its candidates (least important first):
 *   1. Elastic candidates shrink toward their minimum, one worker at a time, P tried after
 *      each step.
 *   2. Each candidate alone, by key (preempt: the work it would lose): the first whose eviction
 *      lets P fit is the one victim - exact when one gang is enough.
 *   3. Else candidates are evicted in order until P fits; then each is given back, highest key
 *      first, when P still fits without it (kube-scheduler's reprieve): a minimal set - no
 *      victim can be spared - though not always a minimum one (that is set cover).
 *   4. P is placed on the freed room (drv_ctx_place_gang); when it does not fit, everything is
 *      rolled back.
 * Worked example: one node of 8 CPUs; candidates A (2 CPUs, key 10), B (2, key 20), C (4, key
 * 100); P needs 4. Alone, A and B free too little, C frees 4: C is the one victim.
 *
 * Cost per preemptor: O(candidates) single tries, greedy steps and reprieves, each a gang
 * placement (a reprieve also O(candidates) evictions), plus one placement per shrink step.
 */
#include "victims.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int drv_victim_search_alloc(drv_ctx *c, drv_victim_search *s, int32_t n)
{
    drv_arena *ar = drv_ctx_arena(c);
    size_t sz = sizeof(drv_victim) * ((size_t)n + 1);
    s->cand = drv_arena_alloc(ar, sz);
    s->order = drv_arena_alloc(ar, sz);
    s->set = drv_arena_alloc(ar, sz);
    s->spared = drv_arena_alloc(ar, sizeof(bool) * ((size_t)n + 1));
    s->ncand = s->nset = 0;
    return s->cand && s->order && s->set && s->spared ? 0 : DRV_ENOMEM;
}

/* A job's minimum run time: its own (its priority class's), its queue's when longer. */
static double min_runtime(const drv_state *st, const drv_job *j)
{
    double q = st->nqueues > 0 ? st->queues[j->queue].min_runtime : 0;
    return j->min_runtime > q ? j->min_runtime : q;
}

bool drv_victim_settled(const drv_ctx *c, int32_t job)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_job *j = &st->jobs[job];
    if (drv_ctx_workers(c, job) != j->target[DRV_ROLE_WORKER])
        return false;
    /* its minimum run time (its class's, its queue's minRuntimeSeconds): younger, it is no
     * victim yet */
    double since = j->run_start >= 0 ? j->run_start : j->start; /* (a driver without run_start) */
    double least = min_runtime(st, j);
    if (least > 0 && (since < 0 || drv_ctx_now(c) - since < least))
        return false;
    bool bound = false;
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t pod = j->pod_base + k;
        int32_t at = drv_ctx_pod_node(c, pod);
        if (at != st->pods[pod].node)
            return false;
        bound = bound || at >= 0;
    }
    return bound;
}

double drv_victim_ripe_at(const drv_ctx *c)
{
    const drv_state *st = drv_ctx_state(c);
    /* (every cycle of a profile with las or preempt: no walk over the live jobs when no job
     * and no queue has a minimum run time) */
    bool any = st->has_job_min_runtime;
    for (int32_t q = 0; q < st->nqueues && !any; q++)
        any = st->queues[q].min_runtime > 0;
    if (!any)
        return INFINITY;
    double now = drv_ctx_now(c), t = INFINITY;
    DRV_FOR_LIVE(st, job)
    {
        const drv_job *j = &st->jobs[job];
        double since = j->run_start >= 0 ? j->run_start : j->start;
        double least = min_runtime(st, j);
        double at = since + least;
        if (least > 0 && since >= 0 && at > now && at < t)
            t = at;
    }
    return t;
}

static bool may_take(const drv_ctx *c, const drv_victim_search *s, int32_t v)
{
    return !s->may_take || s->may_take(c, s, v);
}

/* 1 when P's gang now fits and was placed, 0 when not (nothing changed), or an error. */
static int place(drv_ctx *c, const drv_victim_search *s)
{
    if (!drv_ctx_gang_room(c, s->job, s->size))
        return 0;
    return drv_ctx_place_gang(c, s->job, s->size);
}

/* Evicts every bound pod of v (reason preempt): 1, 0 when v may not be taken now, or an
 * error. */
static int evict_gang(drv_ctx *c, const drv_victim_search *s, int32_t v)
{
    if (!may_take(c, s, v))
        return 0;
    const drv_job *j = &drv_ctx_state(c)->jobs[v];
    for (int32_t k = 0; k < j->pod_count; k++) {
        int rc = drv_ctx_preempt(c, j->pod_base + k, s->job);
        if (rc)
            return rc;
    }
    return 1;
}

/* Evicts the chosen set in order, but for spared entries and entry `skip` (-1: none): 1, 0
 * when one may not be taken now, or an error. */
static int evict_set(drv_ctx *c, const drv_victim_search *s, int32_t skip)
{
    for (int32_t i = 0; i < s->nset; i++) {
        if (i == skip || s->spared[i])
            continue;
        int rc = evict_gang(c, s, s->set[i].job);
        if (rc <= 0)
            return rc;
    }
    return 1;
}

/* Step 1: shrinks elastic victims toward their minimum, one worker at a time, until P fits.
 * 1 when P was placed, 0 when it still does not fit (the shrinks stay), or an error. */
static int shrink_first(drv_ctx *c, const drv_victim_search *s)
{
    const drv_state *st = drv_ctx_state(c);
    for (int32_t i = 0; i < s->ncand; i++) {
        int32_t v = s->cand[i].job;
        int32_t lo = st->jobs[v].role[DRV_ROLE_WORKER].min, cur = drv_ctx_workers(c, v);
        drv_mark mv = drv_ctx_mark(c);
        for (int32_t w = cur - 1; w >= lo; w--) {
            drv_ctx_rollback(c, mv);
            if (!may_take(c, s, v))
                break;
            int rc = drv_ctx_scale(c, v, w);
            if (!rc)
                rc = place(c, s);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Key low first, then priority low first, then id: the order single victims are tried in. */
static int by_key(const void *pa, const void *pb)
{
    const drv_victim *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->prio != b->prio)
        return a->prio < b->prio ? -1 : 1;
    return (a->job > b->job) - (a->job < b->job);
}

/* Step 2: each candidate alone, lowest key first; the first that lets P fit is the best single
 * victim. 1 when P was placed (s->set holds the victim), 0, or an error. */
static int single(drv_ctx *c, drv_victim_search *s, drv_mark m)
{
    memcpy(s->order, s->cand, sizeof *s->order * (size_t)s->ncand);
    qsort(s->order, (size_t)s->ncand, sizeof *s->order, by_key);
    for (int32_t i = 0; i < s->ncand; i++) {
        drv_ctx_rollback(c, m);
        int rc = evict_gang(c, s, s->order[i].job);
        if (rc == 1)
            rc = place(c, s);
        if (rc < 0)
            return rc;
        if (rc == 1) {
            s->set[0] = s->order[i];
            s->spared[0] = false;
            s->nset = 1;
            return 1;
        }
    }
    drv_ctx_rollback(c, m);
    return 0;
}

/* Step 3: evict candidates in order until P fits, then give back each victim P can do
 * without, highest key first. 1 when P was placed on the remaining set's room, 0 (everything
 * since m rolled back), or an error. */
static int greedy(drv_ctx *c, drv_victim_search *s, drv_mark m)
{
    drv_ctx_rollback(c, m);
    s->nset = 0;
    int rc = 0;
    for (int32_t i = 0; i < s->ncand && rc == 0; i++) {
        int ev = evict_gang(c, s, s->cand[i].job);
        if (ev < 0)
            return ev;
        if (ev == 0)
            continue;
        s->spared[s->nset] = false;
        s->set[s->nset++] = s->cand[i];
        rc = place(c, s);
    }
    if (rc <= 0) {
        drv_ctx_rollback(c, m);
        return rc;
    }
    /* the reprieve: order[k] is the k-th victim by key, highest last */
    memcpy(s->order, s->set, sizeof *s->order * (size_t)s->nset);
    qsort(s->order, (size_t)s->nset, sizeof *s->order, by_key);
    for (int32_t k = s->nset - 1; k >= 0; k--) {
        int32_t i = 0;
        while (s->set[i].job != s->order[k].job)
            i++;
        drv_ctx_rollback(c, m);
        rc = evict_set(c, s, i);
        if (rc == 1)
            rc = place(c, s);
        if (rc < 0)
            return rc;
        s->spared[i] = rc == 1;
    }
    drv_ctx_rollback(c, m);
    rc = evict_set(c, s, -1);
    if (rc == 1)
        rc = place(c, s);
    if (rc <= 0) /* placement is deterministic, so this fit a moment ago; never evict in vain */
        drv_ctx_rollback(c, m);
    return rc;
}

int drv_victims_take(drv_ctx *c, drv_victim_search *s)
{
    s->nset = 0;
    drv_mark m0 = drv_ctx_mark(c);
    int rc = drv_ctx_place_gang(c, s->job, s->size);
    if (rc != 0) { /* it fits as it is: admission chose to leave it waiting, not ours to undo */
        if (rc == 1)
            drv_ctx_rollback(c, m0);
        return rc < 0 ? rc : 0;
    }
    if ((rc = shrink_first(c, s)) != 0) {
        s->nset = 0; /* placed by shrinking alone: no gang evicted */
        return rc;
    }
    drv_mark m1 = drv_ctx_mark(c);
    rc = single(c, s, m1);
    if (rc == 0)
        rc = greedy(c, s, m1);
    if (rc <= 0)
        drv_ctx_rollback(c, m0);
    return rc;
}
