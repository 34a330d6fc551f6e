/*
 * ctrl_checkpoint.h - `drover run`'s checkpoint handshake (issue 29; docs/running.md,
 * "Checkpoint handshake"): before a TrainingJob's pod is deleted for a preemption, a migration
 * or a scaling, the job is asked to checkpoint (annotation drover.dev/checkpoint-requested and
 * condition CheckpointRequested on its TrainingJob), and the deletion waits until the job says
 * its checkpoint is written (annotation drover.dev/checkpoint-done at or after the request) or
 * until the profile's checkpoint_timeout has passed. Meanwhile the pod is taken as being
 * deleted: its room stays held (its ghost), so the claimant waits for it as it waits for any pod
 * in its grace period, and nothing is over-committed.
 *
 * Owns: the list of deletions that wait. Touches: the mirror's job and pod records (the
 * request's time, the pod's presence and ghost), the binder (the deletions, once released), the
 * writer (the annotation, Events). Scheduler thread only. Below the lifecycle and the
 * cycle, which hand it their deletions.
 */
#ifndef DROVER_CTRL_CHECKPOINT_H
#define DROVER_CTRL_CHECKPOINT_H

#include "ctrl_binder.h"

/* Why a pod is deleted (the condition's reason, the Event's words). */
typedef enum ckpt_why { CKPT_PREEMPTION, CKPT_MIGRATION, CKPT_SCALING } ckpt_why;

/* A deletion that waits for the job's checkpoint. */
typedef struct ckpt_wait {
    int32_t slot, job;
} ckpt_wait;

typedef struct ctrl_checkpoint {
    ckpt_wait *waits; /* the deletions that wait, in the order asked */
    int32_t nwaits, cap_waits;
    /* fixed at init */
    ctrl_mirror *mirror;
    ctrl_binder *binder;
    ctrl_writer *writer;
    const ctrl_config *cfg;
} ctrl_checkpoint;

void ctrl_checkpoint_fini(ctrl_checkpoint *ck);

/* Deletes slot's pod, for why: at once (ctrl_binder_delete) without a handshake (the profile's
 * checkpoint_timeout is 0; another operator's pod; a pod not bound in the API or with a
 * request about it out, which has not run: nothing to checkpoint); else its job is asked to
 * checkpoint (once per handshake) and the deletion waits (ctrl_checkpoint_release). 0 or
 * DRV_ENOMEM. */
int ctrl_checkpoint_delete(ctrl_checkpoint *ck, int32_t slot, ckpt_why why);
/* The deletions whose job has checkpointed since it was asked, or whose timeout has passed,
 * or whose job is gone, are sent; a job none of whose deletions waits any more has its
 * condition CheckpointRequested False (reason CheckpointWritten or CheckpointTimeout) and an
 * Event. Before each cycle. 0 or DRV_ENOMEM. */
int ctrl_checkpoint_release(ctrl_checkpoint *ck);
/* Seconds from now until the earliest timeout of a waiting deletion (<= 0: one has passed, and
 * the mirror is made dirty so that a cycle releases it), INFINITY when none waits. */
double ctrl_checkpoint_next(ctrl_checkpoint *ck);
/* TrainingJob job j's drover.dev/checkpoint-done annotation is done (wall seconds, -1: none):
 * the mirror is made dirty when a handshake of j waits for it. */
void ctrl_checkpoint_done(ctrl_checkpoint *ck, int32_t j, double done);

#endif
