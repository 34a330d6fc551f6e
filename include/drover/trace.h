/*
 * trace.h - readers for published job traces (Pollux workloads, the Philly-derived trace,
 * Tiresias' job list, Alibaba PAI 2020's job and task tables, Helios' cluster_log, Gavel's
 * .trace files, Philly's raw cluster_job_log, and any CSV with a column mapping) and the
 * Pollux simulator's cluster. Formats and the mapping from a trace row to a Drover job:
 * docs/data.md.
 */
#ifndef DROVER_TRACE_H
#define DROVER_TRACE_H

#include "drover/calib.h"
#include "drover/sim.h"

enum drv_trace_format {
    DRV_TRACE_AUTO = -2,
    DRV_TRACE_POLLUX = 0,
    DRV_TRACE_PHILLY,
    DRV_TRACE_TIRESIAS,
    DRV_TRACE_PAI_JOB,    /* pai_job_table (no GPU count: every job gets one GPU) */
    DRV_TRACE_PAI_TASK,   /* pai_task_table: one job per GPU task */
    DRV_TRACE_HELIOS,     /* Helios cluster_log.csv */
    DRV_TRACE_GAVEL,      /* Gavel's tab-separated .trace (no header) */
    DRV_TRACE_PHILLY_LOG, /* Philly's cluster_job_log (JSON) */
    DRV_TRACE_CSV,        /* "columns": any CSV, columns named (drv_trace_load_columns) */
    DRV_TRACE_NFORMATS
};

/* "pollux", "philly", "tiresias", "pai-job", "pai-task", "helios", "gavel", "philly-log",
 * "columns" -> format; "auto" -> DRV_TRACE_AUTO; else -1. */
int drv_trace_format_parse(const char *name);
const char *drv_trace_format_name(int fmt);

typedef struct drv_trace_opts {
    int format;             /* a drv_trace_format_parse value */
    bool skip_bad;          /* log and skip malformed rows instead of failing */
    uint64_t seed;          /* for the choices a trace leaves open (model of a Philly job) */
    const drv_calib *calib; /* required: jobs take their speed from it (borrowed) */
    int32_t gpus_per_node;  /* to size a rigid job's budget on a packed placement */
} drv_trace_opts;

/*
 * Reads a trace into w (replacing it on success; untouched on failure). *skipped (may be NULL)
 * receives the malformed rows skipped. Errors name file:line:column and field. A file larger
 * than 1 GiB is refused (stream it: drv_jobsource_csv); numbers, dates and names follow one
 * rule in every format (text.h, clock.h).
 */
int drv_trace_load(drv_workload *w, const char *path, const drv_catalogue *cat,
                   const drv_trace_opts *o, int32_t *skipped, drv_diag *d);
/*
 * The same for a CSV file whose columns are named by columns: "key=COLUMN,..." with keys name,
 * user, queue, submit, start, end, duration, gpus, model, batch, steps (docs/data.md);
 * o->format is not used. A column missing from the header is an error naming it (file:1).
 */
int drv_trace_load_columns(drv_workload *w, const char *path, const char *columns,
                           const drv_catalogue *cat, const drv_trace_opts *o, int32_t *skipped,
                           drv_diag *d);
/* The same on text in memory (modified); file names it in messages. */
int drv_trace_parse(drv_workload *w, const char *file, char *text, const drv_catalogue *cat,
                    const drv_trace_opts *o, int32_t *skipped, drv_diag *d);
int drv_trace_parse_columns(drv_workload *w, const char *file, char *text, const char *columns,
                            const drv_catalogue *cat, const drv_trace_opts *o, int32_t *skipped,
                            drv_diag *d);

/* The Pollux simulator's mechanics (docs/data.md): nodes x gpus GPUs, a 30 s pause at every
 * (re)start; the 60 s round is the profile period (drover sim --mechanics pollux sets it). */
#define DRV_POLLUX_NODES 16
#define DRV_POLLUX_GPUS 4
#define DRV_POLLUX_ROUND 60.0
#define DRV_POLLUX_RESTART 30.0
void drv_cluster_pollux(drv_cluster_spec *c, int32_t nodes, int32_t gpus);

#endif
