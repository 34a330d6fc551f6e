/*
 * report_cmd.c - `drover report DIR`, and the drawing of plots and index.html it shares with
 * `drover sim --out`: both read the directory's files back, so a page drawn later is the same
 * as one drawn right after the run.
 */
#include "cli.h"

#include <stdio.h>

const cli_command report_command = {
    .name = "report",
    .args = "DIR",
    .min_args = 1,
    .max_args = 1,
    .about = "Redraws the plots (jct-cdf, utilisation, queue, gantt-<policy>; SVG and PNG) and\n"
             "index.html in DIR from the files `drover sim --out DIR` wrote there: summary.json,\n"
             "scenario.json, jobs-*.csv, timeline-*.csv and placements-*.csv, and\n"
             "summary-seeds.json after --seeds (the page's multi-seed table; when malformed,\n"
             "a warning and no table). Nothing is simulated.\n",
    .footer = "Exit status: 0 done; 1 gnuplot is missing or failed (index.html is still written);\n"
              "2 a file is missing or malformed (reported as file:line: what was expected).\n",
};

int cli_render_dir(const char *dir, const char *who, bool *skipped)
{
    drv_diag d = {{0}};
    drv_report_data r;
    *skipped = false;
    int rc = drv_report_load(&r, dir, &d);
    if (rc) {
        fprintf(stderr, "%s: %s\n", who, d.msg);
        return rc == DRV_ENOMEM || rc == DRV_EIO ? EXIT_RUN : EXIT_USAGE;
    }
    int status = 0;
    if (r.seeds.msg[0])
        fprintf(stderr, "%s: %s; the page has no multi-seed table\n", who, r.seeds.msg);
    rc = drv_plot_render(dir, &r, &d);
    if (rc == DRV_ENOENT) {
        fprintf(stderr,
                "%s: gnuplot not found on PATH; plots skipped (data and index.html written; "
                "install gnuplot and run `drover report %s`)\n",
                who, dir);
        *skipped = true;
    } else if (rc) {
        fprintf(stderr, "%s: plots skipped: %s\n", who, d.msg);
        *skipped = true;
    }
    if (drv_report_html(dir, &r, rc == 0, &d) != 0) {
        fprintf(stderr, "%s: %s\n", who, d.msg);
        status = EXIT_RUN;
    }
    drv_report_data_fini(&r);
    return status;
}

int cmd_report(int argc, char **argv)
{
    int first, status = cli_begin(&report_command, argc, argv, NULL, &first);
    if (status >= 0)
        return status;
    const char *dir = argv[first];
    bool skipped;
    status = cli_render_dir(dir, "drover report", &skipped);
    if (status == 0 && !skipped)
        printf("wrote %s/index.html and its plots\n", dir);
    return status ? status : skipped ? EXIT_RUN : 0;
}
