/*
 * sim_seeds.c - `drover sim --seeds`: each policy's results over several seeds.
 */
#include "sim_cmd.h"

#include "drover/sim_batch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* --seeds: each policy's mean and interval over the seeds, on stdout in --format, and with --out
 * in summary-seeds.json. sums is [seed * nprof + policy]. Returns 0 or the exit status. */
int sim_report_seeds(const sim_opts *o, const sim_inputs *in, const drv_summary *sums,
                     const char *desc)
{
    drv_summary_ci *ci = drv_calloc((size_t)in->nprof, sizeof *ci);
    drv_summary *runs = drv_calloc((size_t)in->nseeds, sizeof *runs);
    if (!ci || !runs) {
        drv_free(ci);
        drv_free(runs);
        fprintf(stderr, "drover: out of memory\n");
        return EXIT_RUN;
    }
    for (int p = 0; p < in->nprof; p++) {
        for (int k = 0; k < in->nseeds; k++)
            runs[k] = sums[k * in->nprof + p];
        drv_summary_ci_compute(runs, in->nseeds, &ci[p]);
    }
    int status = 0;
    if (o->out) {
        char path[4200];
        snprintf(path, sizeof path, "%s/summary-seeds.json", o->out);
        FILE *f = fopen(path, "w");
        if (f) {
            drv_report_ci_json(f, ci, in->nprof);
            status = fclose(f) == 0 ? 0 : EXIT_RUN;
        }
        if (!f || status)
            fprintf(stderr, "drover: %s: cannot write: %s\n", path, strerror(errno));
        status = f && !status ? 0 : EXIT_RUN;
    }
    if (status == 0 && strcmp(o->format, "json") == 0) {
        drv_report_ci_json(stdout, ci, in->nprof);
    } else if (status == 0 && strcmp(o->format, "csv") == 0) {
        drv_report_ci_csv(stdout, ci, in->nprof);
    } else if (status == 0) {
        printf("%s, seeds %s (%d runs of each policy)\n\n", desc, o->seeds, in->nseeds);
        drv_report_ci_table(stdout, ci, in->nprof);
        if (o->out)
            printf("\nwrote %s/summary-seeds.json; the other files and the report page are of "
                   "seed %llu\n",
                   o->out, (unsigned long long)in->seeds[0]);
    }
    drv_free(ci);
    drv_free(runs);
    return status;
}
