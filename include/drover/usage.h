/*
 * usage.h - shares of the cluster and fair share over time (src/core/usage.c).
 *
 * A queue's (and a user's within its queue) dominant share of the cluster now, and the same
 * share decayed over time: an exponentially weighted average with a half-life, so a queue that
 * ran all night does not keep winning in the morning (issue 29, part 3). The fairshare queue
 * order and the priority plugin's `share` factor read these; the drivers (simulator,
 * controller) advance the decayed usage as time passes (drv_state_usage_advance).
 */
#ifndef DROVER_USAGE_H
#define DROVER_USAGE_H

#include "drover/state.h"

/* The longest half-life a profile may give, in seconds (30 days). */
#define DRV_MAX_HALF_LIFE 2592000.0

/* The cluster's capacity: allocatable summed over the schedulable nodes. O(nodes). */
drv_res drv_cluster_capacity(const drv_state *st);
/* The largest of part/whole over the dimensions whole has (> 0); 0 when it has none. */
double drv_dominant_share(drv_res part, drv_res whole);
/* A queue's weighted dominant share: the dominant share of `used` (its use, state's or a
 * cycle's) in `capacity`, divided by its weight. What the fairshare plugin orders by. */
double drv_queue_share(const drv_state *st, int32_t queue, drv_res used, drv_res capacity);
/* A user's share within its queue: the dominant share of `used` (its bound pods in that queue)
 * against the queue's nominal quota where bounded, the capacity where not. */
double drv_user_share(const drv_state *st, int32_t queue, drv_res used, drv_res capacity);

/* Per (queue, user), the resources of the bound pods of its live jobs. */
typedef struct drv_user_use {
    int32_t queue, user; /* the pair; tables are sorted by queue, then user */
    drv_res used;
} drv_user_use;
/* Fills *tab (grown with drv_grow, *cap its capacity; the caller drv_frees it) with the
 * (queue, user) pairs that have pods bound, sorted; *n their count. O(live log live).
 * 0 or DRV_ENOMEM. */
int drv_user_use_build(const drv_state *st, drv_user_use **tab, int32_t *n, int32_t *cap);
/* A pair's use in such a table (zero when absent). O(log n). */
drv_res drv_user_use_find(const drv_user_use *tab, int32_t n, int32_t queue, int32_t user);

/* ---- over time --------------------------------------------------------------------------- */

/* Sets the half-life (seconds, 0..DRV_MAX_HALF_LIFE) of the decayed usage. 0 means "now
 * only": every reader below then sees the share of what is bound now, exactly as without
 * decay (it does not turn fair share off). Forgets the usage so far. DRV_EINVAL out of range
 * (NaN included). */
int drv_state_set_half_life(drv_state *st, double half_life);

/* Brings the decayed usage of every queue and (queue, user) pair to time `now`: the share each
 * held since the last call (what is bound now: call it before the state changes at `now`)
 * weighs 1 - 2^(-dt / half_life), the older usage the rest. The first call only sets the
 * clock; a call with now <= the last one does nothing. A no-op with half-life 0 or without
 * queues. O(queues) plus O(live log live) for the users. 0 or DRV_ENOMEM (then the usage is
 * as before the call). */
int drv_state_usage_advance(drv_state *st, double now);

/* A queue's weighted share for fair share: its decayed dominant share over its weight, or,
 * with half-life 0, drv_queue_share of what it uses now. */
double drv_queue_fair_share(const drv_state *st, int32_t queue, drv_res capacity);
/* A queue's decayed dominant share (unweighted; half-life 0: its dominant share now): what
 * reports show per queue. */
double drv_queue_usage(const drv_state *st, int32_t queue, drv_res capacity);
/* A user's share within its queue for fair share: decayed, or with half-life 0 drv_user_share
 * of `used_now` (its bound pods in the queue, from a drv_user_use table). O(log pairs). */
double drv_user_fair_share(const drv_state *st, int32_t queue, int32_t user, drv_res used_now,
                           drv_res capacity);

#endif
