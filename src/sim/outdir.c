/*
 * outdir.c - refuses an output directory where a run would overwrite one of its own inputs:
 * `drover sim --workload OUT/summary.json --out OUT` replaced the workload with the summary.
 *
 * An input is refused when it lies directly in OUT and its name is one a run (or the report
 * page written after it) may write: summary.*, scenario.json, jobs-*.csv, placements-*.csv,
 * timeline-*.csv, *.svg, *.png, index.html. Other files in OUT are left alone, so
 * `--workload w.yaml --out .` still works. Paths are compared after realpath(3), so
 * "OUT/../OUT/x" and symbolic links are seen through; an OUT that does not exist yet holds
 * nothing.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "drover/sim.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

static const char *const written[] = {
    "summary.*",      "scenario.json", "jobs-*.csv", "placements-*.csv",
    "timeline-*.csv", "*.svg",         "*.png",      "index.html"};

int drv_sim_check_out(const char *out, const char *const *inputs, int n, drv_diag *d)
{
    char dir[PATH_MAX], in[PATH_MAX];
    if (!out || !realpath(out, dir))
        return 0;
    size_t len = strlen(dir);
    for (int i = 0; i < n; i++) {
        if (!inputs[i] || !realpath(inputs[i], in))
            continue;
        const char *base = strrchr(in, '/') + 1; /* realpath's result is absolute */
        if ((size_t)(base - in) != (len == 1 ? 1 : len + 1) || strncmp(in, dir, len) != 0)
            continue; /* not directly in dir */
        for (size_t k = 0; k < sizeof written / sizeof written[0]; k++)
            if (fnmatch(written[k], base, 0) == 0)
                return drv_fail(d, DRV_EINVAL,
                                "--out %s: the run would overwrite its own input %s (it writes "
                                "%s there); choose another directory",
                                out, inputs[i], written[k]);
    }
    return 0;
}
