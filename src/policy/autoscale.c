/*
 * autoscale.c - the autoscaling resource-adjustment operator (seed 000, Jeong & Yu; abstract
 * only, so the algorithm is our reconstruction): DRAGON's loop (elastic.c) with symmetric
 * release and growth — a starving job takes workers one at a time from whichever running job
 * has the most above its minimum, and idle capacity is handed out one worker at a time to the
 * job with the fewest workers relative to its maximum — and affinity-first placement, which is
 * the profile's `locality` score with a high weight. Shorter quiet period than DRAGON: the
 * operator "dynamically allocates" as soon as capacity idles [R].
 */
#include "elastic.h"

static const drv_knob_spec autoscale_knobs[] = {
    {"starve_wait", 30, 0, 86400, "seconds the queue head waits before running jobs shrink"},
    {"quiet", 30, 0, 86400, "seconds without admission or scaling before jobs grow"},
    {"grow_min_left", 0, 0, 86400, "do not grow a job with fewer seconds of work left"},
};
enum { NAUTO = sizeof autoscale_knobs / sizeof autoscale_knobs[0] };

static int autoscale_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[NAUTO];
    int rc = drv_knobs_read(autoscale_knobs, NAUTO, knobs, nknobs, v, d);
    if (rc)
        return rc;
    drv_elastic_cfg cfg = {
        .starve_wait = v[0], .quiet = v[1], .grow_min_left = v[2], .symmetric = true};
    return drv_elastic_new(state, &cfg, d);
}

const drv_plugin drv_plugin_autoscale = {
    .name = "autoscale",
    .doc = "admit+scale: DRAGON's loop with symmetric release and growth (Jeong & Yu's autoscaling "
           "operator)",
    .init = autoscale_init,
    .fini = drv_elastic_free,
    .admit = drv_elastic_admit,
    .scale = drv_elastic_scale,
    .wake = drv_elastic_wake,
    .starts_blind = drv_elastic_starts_blind,
};
