/*
 * running_read.h - a workload job's startedAt, runningOn and doneSteps: the job already runs at
 * t0 (a snapshot of a live cluster, docs/formats.md "Running jobs"). Internal to src/sim.
 */
#ifndef DROVER_RUNNING_READ_H
#define DROVER_RUNNING_READ_H

#include "drover/conf.h"
#include "drover/sim.h"

/* Reads job jn's (jobs[i]) running fields into w->running and w->runpods, setting j->running;
 * absent, nothing changes. j's roles are read. 0, DRV_EINVAL or DRV_ENOMEM with file:line and
 * the field in d. */
int drv_read_running(const drv_conf_doc *doc, drv_conf *jn, int32_t i, drv_jobspec *j,
                     drv_workload *w, drv_diag *d);

#endif
