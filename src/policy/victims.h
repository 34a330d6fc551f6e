/*
 * victims.h - choosing and evicting the gangs that make room for a waiting gang, shared by the
 * plugins that preempt (preempt.c: by priority and quota; las.c: by attained service);
 * implemented in victims.c. Internal to src/policy. Who may be a victim, and in what order, is
 * the caller's policy; how few gangs are taken, and that nothing is evicted without the waiting
 * gang being placed, is this module's.
 */
#ifndef DROVER_POLICY_VICTIMS_H
#define DROVER_POLICY_VICTIMS_H

#include "drover/policy.h"

/* A job that may lose its room, with the keys the search orders by. */
typedef struct drv_victim {
    double key;   /* single victims are tried by key, lowest first (then prio, then id); the
                     reprieve gives back the highest key first (preempt: the work it would lose) */
    int32_t prio; /* priority class value: the tie-break after key */
    int32_t job;
} drv_victim;

/* One search: a preemptor and the victims it may take. The caller fills the inputs; the
 * arrays are the caller's (the cycle's arena), each of room for ncand entries. */
typedef struct drv_victim_search {
    int32_t job, size; /* the preemptor and the worker count to place it at */
    drv_victim *cand;  /* the victims it may take, in the caller's order: shrinks, the greedy
                          step and the cut follow it (least important first) */
    int32_t ncand;
    drv_victim *order; /* scratch, ncand entries */
    drv_victim *set;   /* out: the victims chosen, in eviction order */
    bool *spared;      /* out: per set entry, given back by the reprieve */
    int32_t nset;      /* out */
    /* Whether victim may still lose room now (checked before each eviction and shrink); NULL:
     * always. preempt: another queue's job only while that queue borrows. */
    bool (*may_take)(const drv_ctx *c, const struct drv_victim_search *s, int32_t victim);
} drv_victim_search;

/* Points cand, order, set and spared at room for n victims each in the cycle's arena and
 * empties cand and set. 0 or DRV_ENOMEM. */
int drv_victim_search_alloc(drv_ctx *c, drv_victim_search *s, int32_t n);

/*
 * A live job with pods bound that no decision of this cycle has changed yet (its pods where the
 * state has them, its worker count the state's target) and that has run, since it last started,
 * at least its minimum run time (its own min_runtime, its priority class's, or its queue's
 * minRuntimeSeconds when longer): what may be a victim. O(its pods).
 */
bool drv_victim_settled(const drv_ctx *c, int32_t job);

/*
 * The earliest time after now at which a live job kept from being a victim only by its minimum
 * run time (drv_victim_settled) comes of age (what a preempting plugin's wake returns with its
 * own: the cluster does not change then, but the victims do); INFINITY when none is. O(live).
 */
double drv_victim_ripe_at(const drv_ctx *c);

/*
 * Makes room for s->job's gang at s->size and places it there (drv_ctx_place_gang), or changes
 * nothing:
 *   0. when the gang fits as the cluster is, nothing is done (0): admission left it waiting;
 *   1. elastic candidates shrink toward their worker minimum, in cand order, one worker at a
 *      time, the gang tried after each step (the shrinks stay when it still does not fit);
 *   2. whole gangs are evicted (EVICT reason preempt, naming s->job): each candidate alone by
 *      key (the first that makes room is the one victim), else candidates in cand order until
 *      the gang fits, then each given back, highest key first, when it fits without it (a
 *      minimal set).
 * When the gang cannot be placed, every decision of the call is rolled back. Returns 1 placed
 * (s->set[0..nset) minus the spared are the victims), 0 not placed (nothing changed), or an
 * error from a decision. Cost: O(ncand) gang placements for the single tries, the greedy step
 * and the reprieve each, O(ncand) evictions per reprieve step, plus one placement per shrink.
 */
int drv_victims_take(drv_ctx *c, drv_victim_search *s);

#endif
