/*
 * ctrl_lifecycle.h - a TrainingJob's life in `drover run` as Kubeflow's operators lead it: its
 * conditions, its failed pods restarted under restartPolicy and backoffLimit,
 * activeDeadlineSeconds, cleanPodPolicy, suspend and resume, replicas edited, invalid specs
 * failed with the field named; and what is written about it (its status, its Events).
 *
 * Owns: the lifecycle fields of the job records (scheduler thread). Touches: the mirror (its
 * pods leave the state), the binder (pods deleted), the writer (status, Events); a job's names
 * are its record's text (job_record.ns_text). The rules are kube/lifecycle.c's (pure); this unit
 * feeds them and acts.
 */
#ifndef DROVER_CTRL_LIFECYCLE_H
#define DROVER_CTRL_LIFECYCLE_H

#include "ctrl_checkpoint.h"

typedef struct ctrl_lifecycle {
    ctrl_mirror *mirror;
    ctrl_binder *binder;
    ctrl_checkpoint *checkpoint; /* pods re-created for new peers are deleted through it */
    ctrl_writer *writer;
} ctrl_lifecycle;

/* Job j (a TrainingJob, just added) takes t's run policy, restart policies and the status a
 * predecessor wrote; it is Created (said once). */
void ctrl_lifecycle_init(ctrl_lifecycle *lc, int32_t j, const tj_record *t);
/* Job j's status was written finished by someone else: its phase, conditions and times are
 * taken as written (the job ends at the next cycle, its status written back the same). */
void ctrl_lifecycle_finished_by_status(ctrl_lifecycle *lc, int32_t j, const tj_record *t);
/* After a cycle: true when job j ended (Succeeded or Failed) by this call. */
bool ctrl_lifecycle_reconcile(ctrl_lifecycle *lc, int32_t j);
/* Before a cycle: ends job j (true) when its pods say it is over, and does nothing else, so
 * that a restarted controller never places the pods of a job whose chief has succeeded. */
bool ctrl_lifecycle_end_finished(ctrl_lifecycle *lc, int32_t j);
void ctrl_lifecycle_suspend(ctrl_lifecycle *lc, int32_t j);
/* Job j is the state's new job for a TrainingJob resumed: old, its record while suspended. */
void ctrl_lifecycle_resumed(ctrl_lifecycle *lc, int32_t j, const job_record *old);
/* Job j's spec was edited to t: run policy, restart policies, worker replicas. 0. */
int ctrl_lifecycle_edit(ctrl_lifecycle *lc, int32_t j, const tj_record *t);
/* e's TrainingJob (of ours, not finished) has an invalid spec: written Failed, with the reason. */
void ctrl_lifecycle_invalid(ctrl_lifecycle *lc, const ctrl_event *e);
/* Finished jobs past their TTL are deleted; a job past its activeDeadlineSeconds makes the
 * mirror dirty. Returns the seconds until the next deadline, INFINITY when none. */
double ctrl_lifecycle_expire(ctrl_lifecycle *lc);

/* Asks for job j's status to be written, when it differs from what was last asked. */
void ctrl_lifecycle_status(ctrl_lifecycle *lc, int32_t j, const char *message);
/* An Event about job j's TrainingJob. */
void ctrl_lifecycle_event(ctrl_lifecycle *lc, int32_t j, const char *type, const char *reason,
                          const char *message);

#endif
