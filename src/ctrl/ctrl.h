/*
 * ctrl.h - `drover run`'s controller as one object: its units, each with its own header, put
 * together (src/ctrl/README.md draws them; the public API is include/drover/controller.h, the
 * user's guide docs/running.md). Only the loop (ctrl_loop.c), which creates every unit and
 * runs the scheduler thread, and the tests of the units include it.
 *
 * The units, in layers that call one way (a unit calls only those below it, or beside it at
 * its own level through what it was handed at init):
 *
 *   loop        ctrl_loop.c      the scheduler thread's phases; creates and frees every unit
 *   cycle       ctrl_cycle.c     one scheduling cycle, and each job reconciled after it
 *   mirror      ctrl_trainingjob.c, ctrl_podgroup.c   TrainingJobs, other operators' gangs
 *               ctrl_lifecycle.c a job's conditions, restarts, suspend, edits, status, Events
 *               ctrl_checkpoint.c the checkpoint handshake before a pod is deleted
 *               ctrl_shared.c    PriorityClasses, Queues, jobs held for them
 *               ctrl_resize.c    CPU limits resized in place or at the next creation
 *               ctrl_binder.c    requests about pods assumed; their answers applied
 *               ctrl_explain.c   why a job waits
 *               ctrl_mirror.c    the state and the records of what the API has
 *   senders     ctrl_send.c      the binder threads and their bounded rings
 *               ctrl_writer.c    the writer thread: status and Events
 *   intake      ctrl_intake.c    the informer threads
 *   beside      ctrl_lease.c, ctrl_progress.c (threads), ctrl_metrics.c (counters),
 *               ctrl_events.c (the queue to the scheduler thread), ctrl_names.c (names)
 *
 * Following a TrainingJob: an informer decodes it and pushes an event (intake, events); the
 * loop takes the batch and applies it (ctrl_trainingjob.c adds a job to the mirror); a cycle
 * decides and assumes its placement (cycle, mirror); the binder queues the requests and a
 * binder thread sends them (binder, send); their answers come back as events (binder); the
 * lifecycle hands its status to the writer.
 *
 * Threads: only the scheduler thread touches the mirror, the records and the units above the
 * senders; no lock is held while it reads the state or runs a cycle. No unit holds two locks
 * at once.
 */
#ifndef DROVER_CTRL_H
#define DROVER_CTRL_H

#include "ctrl_cycle.h"
#include "ctrl_intake.h"
#include "ctrl_lease.h"
#include "ctrl_progress.h"
#include "ctrl_trainingjob.h"

/* The loop's own state (scheduler thread). Times on the loop's clock: monotonic seconds since
 * ctrl_config.t0. */
typedef struct ctrl_loop {
    ctrl_event *batch; /* the events being applied (swapped with the queue's) */
    int32_t cap_batch;
    bool synced;     /* every informer has listed once */
    bool leader;     /* it schedules (the lease thread said so, or no election) */
    double last;     /* when the last cycle ran */
    double deadline; /* the lifecycle's next deadline (INFINITY: none) */
} ctrl_loop;

/* The loop waits at most this long (an idle iteration runs no cycle): it notices stop. */
#define CTRL_IDLE_MAX_S 0.05

struct drv_ctrl {
    ctrl_config cfg;
    drv_kube_budget *budget; /* every client's: one token bucket, every non-2xx answer counted
                                (the caller's when its config has one, else owned_budget) */
    drv_kube_budget *owned_budget;
    ctrl_names names;
    ctrl_events events;
    ctrl_counters counters;
    ctrl_mirror mirror;
    ctrl_writer writer;
    ctrl_binder binder;
    ctrl_checkpoint checkpoint;
    ctrl_lifecycle lifecycle;
    ctrl_shared shared;
    ctrl_podgroup podgroup;
    ctrl_trainingjobs trainingjobs;
    ctrl_resize resize;
    ctrl_cycle cycle;
    ctrl_intake intake;
    ctrl_progress progress;
    ctrl_lease lease;
    ctrl_loop loop;
};

/* The loop's phase that applies a batch of events, each by the unit it concerns; frees their
 * tj records. 0 or DRV_ENOMEM. */
int ctrl_apply_events(drv_ctrl *c, ctrl_event *ev, int32_t n);

/* When the loop is to look again, on its clock (now: its clock's now; plugin_wake:
 * drv_sched_wake's answer; period: the profile's; listed: every informer has listed). */
double ctrl_loop_next_wake(const ctrl_loop *l, double now, double plugin_wake, double period,
                           bool listed);
/* Whether a cycle is due: something changed (dirty), or the time a plugin asked for came. */
bool ctrl_loop_cycle_due(const ctrl_loop *l, bool dirty, double now, double plugin_wake,
                         double period);

#endif
