/*
 * ctrl_intake.h - `drover run`'s intake: six informers (nodes, pods, TrainingJobs,
 * PriorityClasses and, when the API serves them, PodGroups and Queues), each on its own thread
 * with its own API client, decode what changed and push it as an event.
 *
 * Owns: the informers, their clients and threads. Touches: names (decoders intern), the event
 * queue. Knows nothing of what the scheduler thread does with the events.
 */
#ifndef DROVER_CTRL_INTAKE_H
#define DROVER_CTRL_INTAKE_H

#include "ctrl_config.h"
#include "ctrl_events.h"
#include "ctrl_names.h"

#include "drover/kube_informer.h"

#include <stdatomic.h>

typedef struct ctrl_intake ctrl_intake;

/* What an informer's callbacks get: the intake, and which kind they decode. */
typedef struct informer_arg {
    ctrl_intake *in;
    int kind;
    /* (the informer's thread alone: drv_informer_ops.hold) inside a run of watch events: its
     * changes are queued without waking the scheduler thread; held: some were, it is woken at
     * the run's end */
    bool holding, held;
} informer_arg;

struct ctrl_intake {
    drv_kube *client[NINFORMERS];
    drv_informer *informer[NINFORMERS];
    informer_arg arg[NINFORMERS];
    pthread_t thread[NINFORMERS];
    bool started[NINFORMERS];
    bool queue_late;    /* Queues were not served at start: their thread re-checks discovery and
                           owns informer[EV_QUEUE] (ctrl_intake_synced does not read it) */
    bool queues_served; /* ... or they were (read by the scheduler thread after start) */
    atomic_int stop;    /* set by the loop's stop: the informers return */
    /* fixed at init */
    ctrl_names *names;
    ctrl_events *events;
    const ctrl_config *cfg;
};

/* How often discovery is asked again for Queues not served at start: given, or its default
 * when out of range (drv_ctrl_opts.queue_recheck_s). */
double ctrl_intake_recheck_s(double given);

/* One client of kcfg per informer. 0 or the client's error (d says). */
int ctrl_intake_init(ctrl_intake *in, const drv_kube_config *kcfg, ctrl_names *names,
                     ctrl_events *events, const ctrl_config *cfg, drv_diag *d);
/* Asks the API (blocking) whether it serves PodGroups and Queues, and starts the informers. */
int ctrl_intake_start(ctrl_intake *in, drv_diag *d);
/* Whether every informer has listed once. */
bool ctrl_intake_synced(ctrl_intake *in);
/* Tells the informers to return (they do within a read); stop tells and joins them. */
void ctrl_intake_tell_stop(ctrl_intake *in);
void ctrl_intake_stop(ctrl_intake *in);
void ctrl_intake_fini(ctrl_intake *in);

#endif
