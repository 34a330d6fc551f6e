/*
 * trace.h - readers for published job traces (Pollux workloads, the Philly-derived trace,
 * Tiresias' job list) and the Pollux simulator's cluster. Formats and the mapping from a trace
 * row to a Drover job: docs/data.md.
 */
#ifndef DROVER_TRACE_H
#define DROVER_TRACE_H

#include "drover/calib.h"
#include "drover/sim.h"

enum { DRV_TRACE_AUTO = -2 };

/* "pollux", "philly", "tiresias" -> format; "auto" -> DRV_TRACE_AUTO; else -1. */
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
 * receives the malformed rows skipped. Errors name file:line:column and field.
 */
int drv_trace_load(drv_workload *w, const char *path, const drv_catalogue *cat,
                   const drv_trace_opts *o, int32_t *skipped, drv_diag *d);
/* The same on text in memory (modified); file names it in messages. */
int drv_trace_parse(drv_workload *w, const char *file, char *text, const drv_catalogue *cat,
                    const drv_trace_opts *o, int32_t *skipped, drv_diag *d);

/* The Pollux simulator's mechanics (docs/data.md): nodes x gpus GPUs, a 30 s pause at every
 * (re)start; the 60 s round is the profile period (drover sim --mechanics pollux sets it). */
#define DRV_POLLUX_NODES 16
#define DRV_POLLUX_GPUS 4
#define DRV_POLLUX_ROUND 60.0
#define DRV_POLLUX_RESTART 30.0
void drv_cluster_pollux(drv_cluster_spec *c, int32_t nodes, int32_t gpus);

#endif
