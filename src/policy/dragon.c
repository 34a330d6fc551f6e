/*
 * dragon.c - the DRAGON plugin (seed 001): gang admission that may start a job between its
 * minimum and requested workers, starvation relief by shrinking running jobs to their minimum
 * (non-PS-node workers first, never PS or worker 0), and growth after a quiet period.
 * The loop itself is elastic.c (shared with the autoscaling operator); this file is DRAGON's
 * knobs. Source: DRAGON's released controller; defaults from it: 15 s reconcile period (the
 * profile's period), 30 s starvation wait, 60 s quiet period before scale-up.
 */
#include "elastic.h"

static const drv_knob_spec dragon_knobs[] = {
    {"starve_wait", 30, 0, 86400, "seconds the queue head waits before running jobs shrink"},
    {"quiet", 60, 0, 86400, "seconds without admission or scaling before jobs grow"},
    {"grow_min_left", 0, 0, 86400,
     "do not grow a job with fewer seconds of work left (0: always grow, as DRAGON)"},
    {"grow_queued", 0, 0, 1, "1: grow even while jobs wait (DRAGON grows only when none does)"},
    {"start_share", 0, 0, 1,
     "start a job only with at least this fraction of its requested workers (0: any size >= min, "
     "as DRAGON)"},
    {"start_wait", 0, 0, 86400,
     "seconds a job waits for room at its requested size before it may start below it (0: "
     "at once, as DRAGON)"},
    {"adaptive", 1, 0, 1,
     "0: leave jobs whose batch a policy may choose to another plugin (goodput); 1: all jobs"},
};
enum { NDRAGON = sizeof dragon_knobs / sizeof dragon_knobs[0] };

static int dragon_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[NDRAGON];
    int rc = drv_knobs_read(dragon_knobs, NDRAGON, knobs, nknobs, v, d);
    if (rc)
        return rc;
    drv_elastic_cfg cfg = {.starve_wait = v[0],
                           .quiet = v[1],
                           .grow_min_left = v[2],
                           .grow_queued = v[3] != 0,
                           .start_share = v[4],
                           .start_wait = v[5],
                           .skip_adaptive = v[6] == 0,
                           .symmetric = false};
    return drv_elastic_new(state, &cfg, d);
}

const drv_plugin drv_plugin_dragon = {
    .name = "dragon",
    .doc = "admit+scale: gang at min..requested, starvation relief, idle growth (DRAGON)",
    .init = dragon_init,
    .fini = drv_elastic_free,
    .admit = drv_elastic_admit,
    .scale = drv_elastic_scale,
    .wake = drv_elastic_wake,
    .starts_blind = drv_elastic_starts_blind,
};
