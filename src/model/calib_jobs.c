/*
 * calib_jobs.c - the per-job side of the calibrated model (calib.h): which measured model a
 * job of a run follows and at what batch, kept by the driver beside the core's job records,
 * which hold no model. One record per job id, allocated once per run.
 */
#include "drover/calib.h"

#include <string.h>

int drv_calib_jobs_init(drv_calib_jobs *m, const drv_calib *calib, int32_t njobs)
{
    drv_calib_job *v = drv_calloc((size_t)njobs + 1, sizeof *v);
    if (!v)
        return DRV_ENOMEM;
    *m = (drv_calib_jobs){.calib = calib, .v = v, .n = njobs};
    return 0;
}

void drv_calib_jobs_fini(drv_calib_jobs *m)
{
    drv_free(m->v);
    memset(m, 0, sizeof *m);
}
