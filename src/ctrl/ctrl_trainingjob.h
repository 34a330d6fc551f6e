/*
 * ctrl_trainingjob.h - TrainingJobs, as the informer brings them, applied to the mirror: a new
 * one of ours becomes a job of the state (or is held, ctrl_shared.h, or failed when invalid),
 * an edited one is suspended, resumed or resized, a deleted one ends.
 *
 * Owns nothing: a TrainingJob's job is the mirror's, its lifecycle ctrl_lifecycle's. Touches:
 * the mirror, names, the shared objects (its queue and priority class), the lifecycle, the
 * writer (a status computed before a version it applies is re-based).
 */
#ifndef DROVER_CTRL_TRAININGJOB_H
#define DROVER_CTRL_TRAININGJOB_H

#include "ctrl_lifecycle.h"
#include "ctrl_shared.h"

typedef struct ctrl_trainingjobs {
    ctrl_mirror *mirror;
    ctrl_names *names;
    ctrl_shared *shared;
    ctrl_lifecycle *lifecycle;
    ctrl_checkpoint *checkpoint; /* told each job's drover.dev/checkpoint-done */
    ctrl_writer *writer;
    const ctrl_config *cfg;
} ctrl_trainingjobs;

/* An EV_TRAININGJOB (e->tj may be taken: a job held keeps it). 0 or DRV_ENOMEM. */
int ctrl_trainingjob_apply(ctrl_trainingjobs *t, ctrl_event *e);
/* A TrainingJob held (ctrl_shared_admit) added as its event would have been: e->tj taken. */
int ctrl_trainingjob_add(ctrl_trainingjobs *t, ctrl_event *e);

#endif
