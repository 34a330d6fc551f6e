/*
 * testutil.h - what many tests share, once (library drover_testutil, tests/CMakeLists.txt):
 * paths in the source tree; the built-in catalogue and the Pollux calibration as cmocka group
 * fixtures; and hand-built states driven by hand through cycles - n equal nodes, a profile
 * line's scheduler, a cycle's decisions applied, whole jobs started, a job finished.
 *
 * The helpers assert with cmocka: call them from a test (or a group fixture), not elsewhere.
 */
#ifndef DROVER_TEST_TESTUTIL_H
#define DROVER_TEST_TESTUTIL_H

#include "drover/calib.h"
#include "drover/model.h"
#include "drover/policy.h"

/* $DROVER_SOURCE_DIR/ followed by fmt formatted ("." when unset; ctest sets it), e.g.
 * tu_path("tests/fixtures/sim/%s", name). The result lives until 8 more calls: the paths of
 * one call stay valid together. */
const char *tu_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The built-in catalogue, loaded by tu_catalogue_setup or tu_models_setup (group fixtures:
 * cmocka_run_group_tests(tests, tu_catalogue_setup, tu_catalogue_teardown)), and the
 * calibration of data/pollux/profiles, loaded by tu_calib_setup or tu_models_setup (both).
 * -1 when loading fails. */
extern drv_catalogue tu_cat;
extern drv_calib tu_calib;
int tu_catalogue_setup(void **unused);
int tu_catalogue_teardown(void **unused);
int tu_calib_setup(void **unused);
int tu_calib_teardown(void **unused);
int tu_models_setup(void **unused);
int tu_models_teardown(void **unused);

/* The next number of a fixed pseudo-random sequence (xorshift64; *x not 0). */
uint64_t tu_rnd(uint64_t *x);

/* A fresh state of n nodes "n0".."n{n-1}", each of `alloc`, in zone and rack. */
void tu_make_state(drv_state *st, int n, drv_res alloc, const char *zone, const char *rack);

/* A pending job "name" of ps PS pods and w workers (elastic within [wmin, wmax]), each pod of
 * `cpu` millicores and 1 GiB; its id. */
int32_t tu_add_job(drv_state *st, const char *name, int ps, int wmin, int w, int wmax, int64_t cpu);

/* A scheduler for the profile line, parsed into *p (which the scheduler borrows). */
drv_sched *tu_sched(drv_profile *p, const char *line);

/* Applies a cycle's decisions to the state the way a driver does: BIND binds, EVICT unbinds,
 * MIGRATE moves, SCALE sets the workers; the rest change nothing here. */
void tu_apply(drv_state *st, const drv_decisions *ds);

/* The state must pass drv_state_check (with gang: no job half placed); fails the test naming
 * the invariant broken. */
void tu_check_state(const drv_state *st, bool gang);

/* Pending jobs whose every wanted pod is bound start running; then tu_check_state. */
void tu_settle(drv_state *st, bool gang);

/* One cycle of s at time now on st (decisions into ds), applied and settled. */
void tu_cycle(drv_sched *s, drv_state *st, drv_decisions *ds, double now, bool gang);

/* The job finishes: its pods leave their nodes and it is done. */
void tu_finish(drv_state *st, int32_t job);

#endif
