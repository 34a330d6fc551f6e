/*
 * elastic.h - the elastic admission and scaling loop shared by the DRAGON (dragon.c) and
 * autoscaling-operator (autoscale.c) plugins; implemented in elastic.c. Internal to src/policy.
 */
#ifndef DROVER_POLICY_ELASTIC_H
#define DROVER_POLICY_ELASTIC_H

#include "drover/policy.h"

typedef struct drv_elastic_cfg {
    double starve_wait;   /* seconds the queue head waits before others shrink for it */
    double quiet;         /* seconds without admission or scaling before growing */
    double grow_min_left; /* do not grow a job with less than this many seconds of work left */
    double start_share;   /* start a job only with >= this fraction of its requested workers */
    double start_wait;    /* start a job below its requested workers only once it has waited this
                             long since its submission (0: at once) */
    bool symmetric;       /* release and grow one worker at a time across jobs (000) */
    bool grow_queued;     /* grow even while jobs wait (they can reclaim by starvation relief) */
    bool skip_adaptive;   /* leave batch-adaptive jobs (drv_calib_job_adaptive, calib.h) to another
                             plugin */
} drv_elastic_cfg;

typedef struct drv_elastic {
    drv_elastic_cfg cfg;
    double last_action; /* time of the last admission or scale, -inf at first */
    int32_t *queue;     /* pending jobs in queue order, as last given to admit */
    int32_t nqueue, cap_queue;
    /* A bit per job id: known, the job was read; fixed, its worker count cannot change (max <=
     * min). A job's specification never changes and ids are never reused, so relief and growth
     * pass a fixed job without reading it (every job of the Philly trace is one). Grown by
     * admit; a job past cap_known is read each time. */
    uint64_t *known, *fixed;
    int32_t cap_known; /* words in both */
} drv_elastic;

int drv_elastic_new(void **state, const drv_elastic_cfg *cfg, drv_diag *d);
void drv_elastic_free(void *state);
void drv_elastic_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t n);
void drv_elastic_scale(drv_ctx *c, void *state);
double drv_elastic_wake(const drv_ctx *c, void *state);
bool drv_elastic_starts_blind(const drv_ctx *c, void *state);

#endif
