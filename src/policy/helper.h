/*
 * helper.h - placement shared by policy plugins (tiresias.c, optimus.c); implemented in
 * helper.c. Internal to src/policy.
 */
#ifndef DROVER_POLICY_HELPER_H
#define DROVER_POLICY_HELPER_H

#include "drover/policy.h"

/*
 * Binds the job's wanted unbound pods (drv_ctx_workers workers, the target of other roles),
 * each on the node being filled while it fits, else on the schedulable node with the most free
 * GPUs (CPU for pods without GPUs; ties to the lower id). All or nothing; nothing when the
 * job's queue does not admit the gang (drv_ctx_queue_room).
 * Returns 1 placed, 0 did not fit (nothing bound), or DRV_ENOMEM from drv_ctx_bind.
 */
int drv_place_packed(drv_ctx *c, int32_t job);

#endif
