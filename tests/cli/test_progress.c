/*
 * The progress report of `drover sim` (src/cli/progress.c): how far a run is. A run ends when
 * its jobs are done or at its horizon, whichever comes first, so its fraction is the larger of
 * the two (a trace whose jobs run past the horizon showed "ETA 900 s" and then ended at once,
 * 74,108 jobs unfinished).
 */
#include "progress.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static void test_fraction_of_jobs_or_time(void **unused)
{
    (void)unused;
    /* Most jobs will never finish: 10 % done, but 90 % of the horizon simulated. */
    drv_progress p = {.done = 10, .jobs = 100, .now = 900, .horizon = 1000};
    assert_true(fabs(progress_fraction(&p) - 0.9) < 1e-12);
    /* Jobs ahead of time: the jobs say. */
    p = (drv_progress){.done = 75, .jobs = 100, .now = 100, .horizon = 1000};
    assert_true(fabs(progress_fraction(&p) - 0.75) < 1e-12);
    /* No horizon (or an infinite one): jobs alone; no jobs: done. */
    p = (drv_progress){.done = 30, .jobs = 100, .now = 5e9, .horizon = INFINITY};
    assert_true(fabs(progress_fraction(&p) - 0.3) < 1e-12);
    p = (drv_progress){.done = 0, .jobs = 0, .now = 0, .horizon = 1000};
    assert_true(progress_fraction(&p) == 1);
    /* Past the horizon (its last event): at most 1. */
    p = (drv_progress){.done = 1, .jobs = 100, .now = 2000, .horizon = 1000};
    assert_true(progress_fraction(&p) == 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fraction_of_jobs_or_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
