/*
 * test_progress.c - a running job's loss in the simulator's state is always its family's loss
 * curve at its steps, wherever it is read: by a plugin through drv_ctx_progress during a cycle,
 * and by the caller after drv_sim_run_until. The simulator brings a running job's steps and
 * attained service to now only where a plugin reads them (drv_ctx_job_now, drv_ctx_progress)
 * and computes the loss only where it is read, so a loss left stale anywhere shows here as a
 * loss that is not the curve's at the job's steps; and a plugin reading steps and service
 * through drv_ctx_job_now must see them move with time between cycles in which nothing
 * happened, as they would if every running job's were brought to now each cycle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "drover/model.h"
#include "drover/policy.h"
#include "drover/sim.h"
#include "testutil.h"

static int32_t checked; /* running jobs whose loss was compared */

/* The loss of a running job is the curve's at its steps, to the bit. */
static void check_loss(const drv_job *j)
{
    if (j->phase != DRV_JOB_RUNNING)
        return;
    double want = drv_loss(&tu_cat.v[j->model], j->steps);
    if (j->loss != want)
        fail_msg("loss %.17g at %.17g steps, the curve says %.17g", j->loss, j->steps, want);
    checked++;
}

/* A scale plugin that reads every running job's progress, as plugins do. */
static void reading_scale(drv_ctx *c, void *state)
{
    (void)state;
    const drv_state *st = drv_ctx_state(c);
    DRV_FOR_LIVE(st, j)
    check_loss(drv_ctx_progress(c, j));
}

static const drv_plugin reading = {.name = "reading", .scale = reading_scale};

/* Every built-in profile's run on 200 jobs, stopped now and then: the caller's state holds the
 * curve's loss for every running job. */
static void test_loss_after_run_until(void **unused)
{
    (void)unused;
    drv_workload w = {0};
    drv_cluster_spec c;
    drv_diag d = {{0}};
    drv_genparams g;
    drv_genparams_default(&g, 5);
    g.jobs = 200;
    assert_int_equal(drv_workload_generate(&w, &g, &tu_cat, &d), 0);
    drv_cluster_default(&c);
    checked = 0;
    for (int i = 0; i < drv_profile_builtin_count(); i++) {
        drv_profile p;
        assert_int_equal(drv_profile_builtin(drv_profile_builtin_name(i), &p, &d), 0);
        drv_sim_config cfg = {.seed = 5, .check = true};
        drv_sim *s;
        assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
        for (double t = 317; t < 20000; t += 1291) {
            if (drv_sim_run_until(s, t, &d) != 0)
                fail_msg("%s: %s", drv_profile_builtin_name(i), d.msg);
            const drv_state *st = drv_sim_state(s);
            DRV_FOR_LIVE(st, j)
            check_loss(&st->jobs[j]);
        }
        drv_sim_free(s);
    }
    assert_true(checked > 100);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* A 120-job generated run (seed) of a gang profile with pl as its one scale plugin; fails on
 * any error of the run. */
static void run_with_scale_plugin(const drv_plugin *pl, uint64_t seed)
{
    drv_workload w = {0};
    drv_cluster_spec c;
    drv_diag d = {{0}};
    drv_genparams g;
    drv_genparams_default(&g, seed);
    g.jobs = 120;
    assert_int_equal(drv_workload_generate(&w, &g, &tu_cat, &d), 0);
    drv_cluster_default(&c);
    drv_profile p;
    assert_int_equal(drv_profile_parse("t",
                                       "gang=true period=5 queue_order=fifo admit=gang "
                                       "score=least-allocated",
                                       &p, &d),
                     0);
    p.use[DRV_PT_SCALE][0] = (drv_plugin_use){pl, 1, 0, 0};
    p.nuse[DRV_PT_SCALE] = 1;
    drv_sim_config cfg = {.seed = seed, .check = true};
    drv_sim *s;
    assert_int_equal(drv_sim_new(&c, &w, &tu_cat, &p, &cfg, &s, &d), 0);
    if (drv_sim_run(s, &d) != 0)
        fail_msg("%s", d.msg);
    drv_sim_free(s);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
}

/* A plugin reading progress mid-run (between the cycle's steps update and any anchor move)
 * sees the curve's loss. */
static void test_loss_read_by_plugin(void **unused)
{
    (void)unused;
    checked = 0;
    run_with_scale_plugin(&reading, 6);
    assert_true(checked > 100);
}

/* Per job: the time, steps and service at the last cycle that read it running, and the
 * restarts then (a restart loses steps). */
enum { MAXJ = 256 };
static struct {
    double t, steps, attained;
    int32_t restarts;
    bool seen;
} last[MAXJ];
static int32_t moved; /* reads at a later cycle that found steps and service advanced */

/* A scale plugin that reads running jobs' steps and service through drv_ctx_job_now only (no
 * samples, no loss): twice (the same numbers), and at a later cycle never less, and more. */
static void steps_scale(drv_ctx *c, void *state)
{
    (void)state;
    const drv_state *st = drv_ctx_state(c);
    double now = drv_ctx_now(c);
    DRV_FOR_LIVE(st, j)
    {
        assert_true(j < MAXJ);
        const drv_job *a = drv_ctx_job_now(c, j);
        if (a->phase != DRV_JOB_RUNNING) {
            last[j].seen = false;
            continue;
        }
        double steps = a->steps, att = a->attained;
        const drv_job *b = drv_ctx_job_now(c, j);
        assert_true(b->steps == steps && b->attained == att); /* idempotent */
        if (last[j].seen && last[j].restarts == a->restarts && now > last[j].t &&
            steps < a->steps_total) {
            if (!(steps > last[j].steps && att > last[j].attained))
                fail_msg("job %d at %g: steps %.17g service %.17g, at %g %.17g and %.17g", (int)j,
                         now, steps, att, last[j].t, last[j].steps, last[j].attained);
            moved++;
        }
        last[j].t = now;
        last[j].steps = steps;
        last[j].attained = att;
        last[j].restarts = a->restarts;
        last[j].seen = true;
    }
}

static const drv_plugin steps_reader = {.name = "steps", .scale = steps_scale};

static void test_steps_read_by_plugin(void **unused)
{
    (void)unused;
    memset(last, 0, sizeof last);
    moved = 0;
    run_with_scale_plugin(&steps_reader, 7);
    assert_true(moved > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_after_run_until),
        cmocka_unit_test(test_loss_read_by_plugin),
        cmocka_unit_test(test_steps_read_by_plugin),
    };
    return cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown);
}
