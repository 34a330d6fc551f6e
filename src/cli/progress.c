/*
 * progress.c - the progress report of `drover sim` on stderr.
 *
 * On a terminal, once the run has taken more than TTY_AFTER seconds, one line is redrawn at
 * most every TTY_EVERY seconds and cleared at the end. When stderr is not a terminal (a piped
 * or logged run of an 82k-job trace that takes minutes), a plain line is appended every period
 * seconds of wall time instead, e.g.
 *
 *   drover: progress: tiresias (1/2): 8192/82000 jobs done, simulated 310.5 h, 1630 jobs/s,
 *   ETA 96 s
 *
 * The rate is jobs finished per wall second since the first policy started; the ETA extrapolates
 * the fraction of all runs done, a run's fraction being the larger of its jobs done and its
 * simulated time over its horizon (a run stops at the horizon, finished or not). The simulator
 * calls progress_cb every DRV_PROGRESS_EVERY events and at the end of each run; this file is the
 * only one that reads a clock for it, so the report cannot change a run's results.
 */
#include "progress.h"

#include "drover/clock.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define TTY_AFTER 1.0
#define TTY_EVERY 0.25
#define DEF_PLAIN_PERIOD 5.0
#define MAX_PLAIN_PERIOD 86400.0

/* DROVER_PROGRESS_SECONDS, or the default (with a message when the value is not usable). */
static double plain_period(void)
{
    const char *v = getenv("DROVER_PROGRESS_SECONDS");
    if (!v || !*v)
        return DEF_PLAIN_PERIOD;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x >= 0 && x <= MAX_PLAIN_PERIOD)) {
        fprintf(stderr,
                "drover: DROVER_PROGRESS_SECONDS: expected a number of seconds in [0, %g], "
                "found '%s'; using %g\n",
                MAX_PLAIN_PERIOD, v, DEF_PLAIN_PERIOD);
        return DEF_PLAIN_PERIOD;
    }
    return x;
}

void progress_init(progress *g, bool quiet, int runs)
{
    *g = (progress){.runs = runs > 0 ? runs : 1, .t0 = drv_clock_mono(), .frac = -1};
    g->last = g->t0;
    g->mode = quiet ? PROGRESS_OFF : isatty(STDERR_FILENO) == 1 ? PROGRESS_TTY : PROGRESS_PLAIN;
    g->period = g->mode == PROGRESS_PLAIN ? plain_period() : TTY_EVERY;
}

double progress_fraction(const drv_progress *p)
{
    double jobs = p->jobs > 0 ? (double)p->done / p->jobs : 1;
    double time = p->horizon > 0 && isfinite(p->horizon) ? p->now / p->horizon : 0;
    double f = jobs > time ? jobs : time;
    return f < 0 ? 0 : f > 1 ? 1 : f;
}

void progress_cb(void *arg, const drv_progress *p)
{
    progress *g = arg;
    if (g->mode == PROGRESS_OFF)
        return;
    double now = drv_clock_mono(), elapsed = now - g->t0;
    if (g->mode == PROGRESS_TTY && elapsed < TTY_AFTER)
        return;
    if (now - g->last < g->period)
        return;
    double frac = g->frac >= 0 ? g->frac : (g->run + progress_fraction(p)) / g->runs;
    char eta[32] = "?";
    if (frac > 0.01)
        snprintf(eta, sizeof eta, "%.0f s", elapsed * (1 - frac) / frac);
    if (g->mode == PROGRESS_TTY) {
        fprintf(stderr, "\r\033[K%s (%d/%d): %d/%d jobs done, simulated %.1f h, ETA %s", g->policy,
                g->run + 1, g->runs, p->done, p->jobs, p->now / 3600.0, eta);
        g->shown = true;
    } else {
        /* Jobs per wall second over the whole invocation: runs before this one count too. */
        double done = frac * g->runs * p->jobs;
        fprintf(stderr,
                "drover: progress: %s (%d/%d): %d/%d jobs done, simulated %.1f h, %.0f jobs/s, "
                "ETA %s\n",
                g->policy ? g->policy : "?", g->run + 1, g->runs, p->done, p->jobs, p->now / 3600.0,
                elapsed > 0 ? done / elapsed : 0.0, eta);
    }
    fflush(stderr);
    g->last = now;
}

void progress_clear(progress *g)
{
    if (g->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        g->shown = false;
    }
}
