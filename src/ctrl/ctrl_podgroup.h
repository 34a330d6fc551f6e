/*
 * ctrl_podgroup.h - `drover run` serves other operators' gangs: pods with our schedulerName
 * that Drover did not create, grouped by their scheduling.x-k8s.io/pod-group label and its
 * PodGroup, or alone (a gang of one). Each becomes a job of the state once complete enough;
 * Drover binds its pods and never creates, deletes or restarts them.
 *
 * Owns: the table of gangs (scheduler thread only). Touches: the mirror (a gang becomes a job),
 * names, the shared objects (a PodGroup's queue and priority class), the writer (PodGroup
 * status, Events).
 */
#ifndef DROVER_CTRL_PODGROUP_H
#define DROVER_CTRL_PODGROUP_H

#include "ctrl_shared.h"

typedef struct ctrl_podgroup {
    struct pg_table *groups; /* ctrl_podgroup.c (created at the first gang) */
    /* fixed at init */
    ctrl_mirror *mirror;
    ctrl_names *names;
    ctrl_shared *shared;
    ctrl_writer *writer;
    const ctrl_config *cfg;
} ctrl_podgroup;

void ctrl_podgroup_init(ctrl_podgroup *pg, ctrl_mirror *mirror, ctrl_names *names,
                        ctrl_shared *shared, ctrl_writer *writer, const ctrl_config *cfg);
void ctrl_podgroup_fini(ctrl_podgroup *pg);

/* Makes the groups' table by interned key hold id (ctrl_apply_events, for each batch of
 * events: every key a pod event carries). 0 or DRV_ENOMEM. */
int ctrl_podgroup_grow_by_key(ctrl_podgroup *pg, int32_t id);
int ctrl_podgroup_apply(ctrl_podgroup *pg, const ctrl_event *e); /* an EV_PODGROUP */
/* A pod of ours with a pod-group label (or alone) whose gang is not a job yet: remembered. */
int ctrl_podgroup_pod(ctrl_podgroup *pg, const ctrl_event *e);
/* Gangs complete enough (and whose minResources are free) become jobs of the state; those
 * that wait say why once. */
int ctrl_podgroup_admit(ctrl_podgroup *pg);
/* Gangs past their scheduleTimeoutSeconds unplaced say so; the seconds until the next timeout,
 * INFINITY: none. */
double ctrl_podgroup_timeouts(ctrl_podgroup *pg);
/* After a cycle, instead of the TrainingJob lifecycle: phase, PodGroup status, Events. */
void ctrl_podgroup_reconcile(ctrl_podgroup *pg, int32_t j, bool placed, const char *why);
/* Makes the next ctrl_podgroup_admit look at every waiting gang (a Queue or class came). */
void ctrl_podgroup_touch(ctrl_podgroup *pg);

#endif
