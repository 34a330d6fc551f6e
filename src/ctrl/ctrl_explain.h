/*
 * ctrl_explain.h - why a job of `drover run` waits, in words a kubectl user can act on: no node
 * can ever hold it, no node its constraints allow, its queue's quota, or room. The Events and
 * conditions that tell it come from the lifecycle, the cycle and the PodGroup unit.
 *
 * Owns nothing; reads the mirror's state (scheduler thread) and changes nothing. Calls nothing
 * of the controller.
 */
#ifndef DROVER_CTRL_EXPLAIN_H
#define DROVER_CTRL_EXPLAIN_H

#include "ctrl_mirror.h"

/* "it can never run: ..." when one of job j's pods, or its whole gang, asks for more than any
 * node (the whole cluster) allocates; else false (buf unchanged). */
bool ctrl_explain_never_fits(const ctrl_mirror *m, int32_t j, char *buf, size_t n);
/* Why no schedulable node satisfies some role's node constraints of job j, or false. */
bool ctrl_explain_nodes(const drv_state *st, int32_t j, char *buf, size_t n);
/* "queue q: cpu 6.0 used + 4.0 wanted > nominal quota 8.0" for the first dimension where the
 * job's unbound wanted pods do not fit its queue's quota and what it may borrow, or false. */
bool ctrl_explain_quota(const drv_state *st, int32_t j, char *buf, size_t n);
/* Whether node takes every wanted role of job j (nodeSelector, affinity, taints). */
bool ctrl_explain_node_fits(const drv_state *st, int32_t j, int32_t node);
/* Why job j waits (constraints, quota, or room with the numbers), for its Waiting Event; pos
 * is its place in the queue of npend, and the caller's drv_ctrl_opts.explain adds its own. */
void ctrl_explain_waiting(const ctrl_mirror *m, int32_t j, int32_t pos, int32_t npend, char *buf,
                          size_t n);

#endif
