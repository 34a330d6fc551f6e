/*
 * progress.h - how far `drover sim` has got, on stderr: a redrawn line on a terminal, a plain
 * line every few seconds when stderr is a pipe or a file, nothing with --quiet.
 */
#ifndef DROVER_CLI_PROGRESS_H
#define DROVER_CLI_PROGRESS_H

#include "drover/sim.h"

#include <stdbool.h>

typedef enum { PROGRESS_OFF, PROGRESS_TTY, PROGRESS_PLAIN } progress_mode;

typedef struct progress {
    progress_mode mode;
    double period;   /* seconds of wall time between two lines (plain mode) */
    double t0, last; /* wall clock at the start and at the last line drawn */
    int run, runs;   /* index of the policy being simulated, number of policies */
    const char *policy;
    double frac; /* fraction of all runs done, when runs go side by side; < 0: from run */
    bool shown;  /* a terminal line is on screen (to clear) */
} progress;

/*
 * Starts a report for runs policies. quiet: nothing is shown. Otherwise a terminal gets the
 * redrawn line, anything else a plain line every DROVER_PROGRESS_SECONDS seconds (default 5;
 * a value that is not a number in [0, 86400] is reported once and the default used).
 */
void progress_init(progress *g, bool quiet, int runs);
/* How far one run is, in [0, 1]: the larger of its jobs done and its simulated time over its
 * horizon, since a run ends at its horizon with jobs unfinished (a trace's jobs past the horizon
 * never start: counting only jobs gave an ETA of minutes for a run that ended seconds later). */
double progress_fraction(const drv_progress *p);
/* A drv_progress_fn: arg is the progress. */
void progress_cb(void *arg, const drv_progress *p);
/* Clears a terminal line (before anything else is printed). */
void progress_clear(progress *g);

#endif
