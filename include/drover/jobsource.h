/*
 * jobsource.h - jobs handed to the simulator one at a time, in order of submission, so that a
 * run never holds the whole workload (a streamed run, drv_sim_new_stream in sim.h).
 *
 * A source announces how many jobs it will give and how many pod slots they need (the
 * simulator reserves ids for them up front, pages.h: reserving costs address space, not
 * memory), then gives them on demand. The simulator looks one job ahead: job i+1 is read when
 * job i is submitted. Sources:
 *   - the generator of the `generate:` scenario (drv_workload_generate): job i is drawn when
 *     asked for, from the same seeded stream, so a streamed run of it equals the in-memory
 *     run of drv_workload_generate's workload job for job;
 *   - a CSV trace read row by row as the clock reaches it (drv_jobsource_csv): one pass checks
 *     every row and counts jobs and pods (a bad or out-of-order row is an error naming
 *     file:line before anything runs), a second pass hands the rows over as asked for;
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

/*
 * A CSV trace (drv_trace_load_columns' format, columns mapped by columns) read row by row: the
 * same jobs as drv_trace_load_columns gives, each with its line. Its rows must be in order of
 * submission: a row submitted before the one above is an error naming file:line (sort the
 * file first). Reads the file twice (jobsource_csv.c). 0, DRV_ENOENT, DRV_EPARSE, DRV_EINVAL,
 * DRV_EIO or DRV_ENOMEM; src is usable only on 0. The trace options (o, its calib) and cat are
 * borrowed and must outlive the source.
 */
struct drv_trace_opts;
int drv_jobsource_csv(drv_jobsource *src, const char *path, const char *columns,
                      const drv_catalogue *cat, const struct drv_trace_opts *o, drv_diag *d);

/* Frees what the source holds; accepts a zeroed source. */
void drv_jobsource_fini(drv_jobsource *src);

/* Generator internals shared with drv_workload_generate: job i of a generated scenario, drawn
 * from r after jobs 0..i-1 were (*t: the next submission time, 0 before job 0). */
void drv_generate_job(drv_rng *r, double *t, int32_t i, const drv_genparams *g,
                      const drv_catalogue *cat, drv_jobspec *out);

#endif
