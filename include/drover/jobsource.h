/*
 * jobsource.h - jobs handed to the simulator one at a time, in order of submission, so that a
 * run holds only the jobs in flight instead of the whole workload (a streamed run,
 * drv_sim_new_stream in sim.h).
 *
 * A source announces how many jobs it will give and how many pod slots they need (the
 * simulator reserves ids for them up front, pages.h: reserving costs address space, not
 * memory), then gives them on demand. The simulator looks one job ahead: job i+1 is read when
 * job i is submitted. Sources:
 *   - the generator of the `generate:` scenario (drv_workload_generate): job i is drawn when
 *     asked for, from the same seeded stream, so a streamed run of it equals the in-memory
 *     run of drv_workload_generate's workload job for job;
 *   - any other implementation of the two operations below (a test's fixed rows).
 * The in-memory workload (drv_workload, drv_sim_new) is the third way in, random access.
 */
#ifndef DROVER_JOBSOURCE_H
#define DROVER_JOBSOURCE_H

#include "drover/sim.h"

typedef struct drv_jobsource drv_jobsource;

typedef struct drv_jobsource_ops {
    /* 1 and *out: the next job, never submitted before the previous one; 0: no job left;
     * negative: an error, d says which (file:line for a file). */
    int (*next)(drv_jobsource *src, drv_jobspec *out, drv_diag *d);
    void (*fini)(drv_jobsource *src); /* frees what the source owns; accepts a failed init */
} drv_jobsource_ops;

struct drv_jobsource {
    const drv_jobsource_ops *ops;
    int32_t jobs;     /* how many jobs next gives in all */
    int64_t pods;     /* their pod slots (per role the larger of replicas and max), summed */
    const char *file; /* where the jobs come from, for messages (NULL: generated) */
    void *ctx;        /* the implementation's state */
};

/*
 * The `generate:` scenario's jobs as a source (g and cat borrowed, must outlive the source).
 * Counting the pods draws every job once without keeping it: O(jobs) time, O(1) memory.
 * 0 or DRV_ENOMEM.
 */
int drv_jobsource_generate(drv_jobsource *src, const drv_genparams *g, const drv_catalogue *cat,
                           drv_diag *d);

/* Frees what the source holds; accepts a zeroed source. */
void drv_jobsource_fini(drv_jobsource *src);

/* Generator internals shared with drv_workload_generate: job i of a generated scenario, drawn
 * from r after jobs 0..i-1 were (*t: the next submission time, 0 before job 0). */
void drv_generate_job(drv_rng *r, double *t, int32_t i, const drv_genparams *g,
                      const drv_catalogue *cat, drv_jobspec *out);

#endif
