/*
 * cycle_queue.h - the queue phase of the cycle (cycle_queue.c), for cycle.c (internal to core).
 */
#ifndef DROVER_CYCLE_QUEUE_H
#define DROVER_CYCLE_QUEUE_H

#include "cycle_int.h"

/* Phase 1: collects the queued jobs and orders them (queue_order plugins); *jobs receives them
 * in order (the scheduler's: valid until the next cycle), *n their count; c->s->queue.order holds
 * their records, kept for the next cycle. O(queued) at worst; O(newcomers + queued / 64) when no
 * job left the queue and the order held. 0 or DRV_ENOMEM. */
int cycle_order_queue(drv_ctx *c, int32_t **jobs, int32_t *n);

#endif
