/*
 * ctrl_cycle.h - one scheduling cycle of `drover run` and what follows it on the scheduler
 * thread: the core decides on the mirror's state, the decisions are assumed and handed to the
 * binder, and every job is reconciled (its lifecycle, its pods, its status and Events).
 *
 * Owns: the scheduler (drv_sched) and whether the batch-size warning was logged. Touches: the
 * mirror, the binder, the lifecycle, the PodGroup unit, the resize unit, counters. Only the
 * loop runs a cycle (ctrl_loop.c), and it hands the requests over afterwards (its send phase).
 */
#ifndef DROVER_CTRL_CYCLE_H
#define DROVER_CTRL_CYCLE_H

#include "ctrl_podgroup.h"
#include "ctrl_resize.h"
#include "ctrl_lifecycle.h"

typedef struct ctrl_cycle {
    drv_sched *sched;  /* owned */
    bool warned_batch; /* the warning that batch sizes are not sent was logged */
    /* fixed at init */
    ctrl_mirror *mirror;
    ctrl_binder *binder;
    ctrl_checkpoint *checkpoint;
    ctrl_lifecycle *lifecycle;
    ctrl_podgroup *podgroup;
    ctrl_resize *resize;
    ctrl_counters *counters;
    const ctrl_config *cfg;
} ctrl_cycle;

/* Its scheduler, for cfg's profile. 0 or the profile's error (d says). */
int ctrl_cycle_init(ctrl_cycle *cy, const ctrl_config *cfg, drv_diag *d);
void ctrl_cycle_fini(ctrl_cycle *cy);
/* One cycle: decide, assume, send (held: ctrl_binder_flush hands them over), reconcile. 0, or
 * the cycle's error (a plugin's failure: drv_sched_cycle's), or DRV_ENOMEM. */
int ctrl_cycle_run(ctrl_cycle *cy);
/* Without a job to schedule (no cycle runs): brings the queues' decayed usage to now, so it
 * decays on an idle cluster too (fair share over time, usage.h). True when it moved (the
 * profile has a half-life and the cluster queues): the Queue status is then worth writing. */
bool ctrl_cycle_idle(ctrl_cycle *cy);

#endif
