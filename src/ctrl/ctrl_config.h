/*
 * ctrl_config.h - what every unit of `drover run`'s controller may read and none may change: the
 * caller's options, the profile, the names it serves, and the loop's clock zero. Filled by
 * drv_ctrl_new (t0 at the loop's start), before any thread of the controller runs; read-only
 * from then on, on any thread.
 */
#ifndef DROVER_CTRL_CONFIG_H
#define DROVER_CTRL_CONFIG_H

#include "drover/controller.h"

typedef struct ctrl_config {
    drv_ctrl_opts o;          /* copied; o.profile points at prof, o.scheduler at scheduler, and
                                 o.namespace_ at ns (NULL when every namespace is served) */
    drv_profile prof;         /* copied */
    char scheduler[64];       /* the schedulerName served ("drover") */
    char ns[254];             /* TrainingJobs and PodGroups of this namespace only; "": every one */
    char gpu_type_label[254]; /* the node label of GPU types; "": none read */
    char topology[1024];      /* the topology levels, comma-separated widest first; "": none */
    double t0;                /* drv_clock_mono() when the loop started: the snapshot's zero, and
                                 what every time kept on the loop's clock counts from */
} ctrl_config;

#endif
