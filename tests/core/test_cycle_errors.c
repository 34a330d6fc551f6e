/*
 * A cycle's errors reach its caller (docs/cycle.md, "Errors"), on a hand-built state with
 * plugins written here: a plugin fails the cycle with drv_ctx_fail from a void callback and
 * from a const one, the first code wins and no plugin runs after it; a NULL from the cycle's
 * arena fails the plugin's call though the plugin says nothing; a core helper that cannot
 * allocate fails it too; drv_sched_failed_in names the plugin and its point; and the scheduler
 * decides the next cycle as a fresh one would.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drover/cycle.h"
#include "testutil.h"

#define GiB (1024LL * 1024 * 1024)

/* What the plugins below do this cycle, and what they saw. */
static int fail_with;       /* the code the failing plugin gives (0: it does not fail) */
static int seen_error;      /* drv_ctx_error right after it failed */
static int second_rc;       /* what a second drv_ctx_fail returned */
static int later_calls;     /* calls of the plugin that runs after it */
static int admit_calls;     /* calls of the admit plugin */
static bool arena_null;     /* the arena plugin got NULL */
static bool helper_refused; /* the helper plugin's bind returned an error */

static void binder_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    admit_calls++;
    for (int32_t i = 0; i < n; i++)
        drv_ctx_place_pod(c, drv_job_pod(drv_ctx_state(c), jobs[i], DRV_ROLE_WORKER, 0));
    if (fail_with) {
        drv_ctx_fail(c, fail_with);
        seen_error = drv_ctx_error(c);
        second_rc = drv_ctx_fail(c, DRV_ERANGE);
    }
}

static void later_scale(drv_ctx *c, void *state)
{
    (void)c;
    (void)state;
    later_calls++;
}

static double keyed_key(const drv_ctx *c, void *state, int32_t job)
{
    (void)state;
    if (fail_with)
        drv_ctx_fail(c, fail_with);
    return (double)job;
}

/* Takes scratch from the arena, its first allocation failed; says nothing of it. */
static void arena_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    (void)jobs;
    (void)n;
    drv_alloc_fail_at(fail_with ? 1 : 0);
    arena_null = drv_arena_alloc(drv_ctx_arena(c), 64) == NULL;
    drv_alloc_fail_at(0);
}

/* Binds with the decision list's first growth failed. */
static void helper_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    drv_alloc_fail_at(fail_with ? 1 : 0);
    for (int32_t i = 0; i < n && !helper_refused; i++)
        helper_refused =
            drv_ctx_bind(c, drv_job_pod(drv_ctx_state(c), jobs[i], DRV_ROLE_WORKER, 0), 0) != 0;
    drv_alloc_fail_at(0);
}

static const drv_plugin binder = {.name = "binder", .admit = binder_admit};
static const drv_plugin later = {.name = "later", .scale = later_scale};
static const drv_plugin keyed = {.name = "keyed", .queue_key = keyed_key};
static const drv_plugin arena = {.name = "arena", .admit = arena_admit};
static const drv_plugin helper = {.name = "helper", .admit = helper_admit};

/* A profile of the plugins given per point (NULL-terminated lists), no knobs. */
static void make_profile(drv_profile *p, const drv_plugin *qo, const drv_plugin *admit,
                         const drv_plugin *scale)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "errors");
    p->period = 1;
    const drv_plugin *at[DRV_NPOINTS] = {
        [DRV_PT_QUEUE_ORDER] = qo, [DRV_PT_ADMIT] = admit, [DRV_PT_SCALE] = scale};
    for (int pt = 0; pt < DRV_NPOINTS; pt++)
        if (at[pt]) {
            p->use[pt][0] = (drv_plugin_use){at[pt], 1, 0, 0};
            p->nuse[pt] = 1;
        }
}

/* Two nodes of 4 CPUs, three pending jobs of one 1-CPU worker each. */
static void make_state(drv_state *st)
{
    tu_make_state(st, 2, (drv_res){4000, 8 * GiB, 0}, "", "");
    for (int i = 0; i < 3; i++)
        tu_add_job(st, i == 0 ? "a" : i == 1 ? "b" : "c", 0, 1, 1, 1, 1000);
}

/* One cycle at time 0 into a fresh list: its code, and its decisions' count in *ndec. */
static int cycle(drv_sched *s, const drv_state *st, int32_t *ndec)
{
    drv_decisions ds;
    drv_decisions_init(&ds);
    drv_snapshot snap = {.st = st, .now = 0};
    int rc = drv_sched_cycle(s, &snap, &ds);
    *ndec = ds.n;
    drv_decisions_fini(&ds);
    return rc;
}

/* The state, a profile of these plugins (point by point, NULL: none) and its scheduler. */
static drv_sched *start(drv_state *st, drv_profile *p, const drv_plugin *qo,
                        const drv_plugin *admit, const drv_plugin *scale)
{
    make_state(st);
    make_profile(p, qo, admit, scale);
    drv_sched *s;
    drv_diag d;
    assert_int_equal(drv_sched_new(p, &s, &d), 0);
    return s;
}

/* After a failed cycle, with nothing failing: the scheduler decides what a fresh one would
 * (want decisions), and says no plugin failed. Then both go. */
static void recovers(drv_sched *s, drv_state *st, int32_t want)
{
    int32_t ndec;
    int pt = 99;
    fail_with = 0;
    assert_int_equal(cycle(s, st, &ndec), 0);
    assert_int_equal(ndec, want);
    assert_null(drv_sched_failed_in(s, &pt));
    assert_int_equal(pt, -1);
    drv_sched_free(s);
    drv_state_fini(st);
}

static void reset(int code)
{
    fail_with = code;
    seen_error = second_rc = later_calls = admit_calls = 0;
    arena_null = helper_refused = false;
}

static void test_plugin_fails_the_cycle(void **unused)
{
    (void)unused;
    drv_state st;
    drv_profile p;
    drv_sched *s = start(&st, &p, NULL, &binder, &later);
    int32_t ndec;
    int pt;
    reset(DRV_EINVAL); /* binds all three, then fails: no success with those binds */
    assert_int_equal(cycle(s, &st, &ndec), DRV_EINVAL);
    assert_int_equal(ndec, 3);                /* appended, not to be applied */
    assert_int_equal(seen_error, DRV_EINVAL); /* at once */
    assert_int_equal(second_rc, DRV_ERANGE);  /* returned to its caller, but the first wins */
    assert_int_equal(later_calls, 0);         /* nothing runs after a failure */
    assert_ptr_equal(drv_sched_failed_in(s, &pt), &binder);
    assert_int_equal(pt, DRV_PT_ADMIT);
    recovers(s, &st, 3);
    assert_int_equal(later_calls, 1);
}

static void test_const_callback_fails_the_cycle(void **unused)
{
    (void)unused;
    drv_state st;
    drv_profile p;
    drv_sched *s = start(&st, &p, &keyed, &binder, NULL);
    int32_t ndec;
    int pt;
    reset(DRV_ENOTSUP);
    assert_int_equal(cycle(s, &st, &ndec), DRV_ENOTSUP);
    assert_int_equal(admit_calls, 0); /* the queue phase failed: no admission on it */
    assert_ptr_equal(drv_sched_failed_in(s, &pt), &keyed);
    assert_int_equal(pt, DRV_PT_QUEUE_ORDER);
    recovers(s, &st, 3);
}

static void test_arena_null_fails_the_call(void **unused)
{
    (void)unused;
    drv_state st;
    drv_profile p;
    drv_sched *s = start(&st, &p, NULL, &arena, &later);
    int32_t ndec;
    int pt;
    reset(DRV_ENOMEM);
    assert_int_equal(cycle(s, &st, &ndec), DRV_ENOMEM);
    assert_true(arena_null);
    assert_int_equal(later_calls, 0);
    assert_ptr_equal(drv_sched_failed_in(s, &pt), &arena);
    assert_int_equal(pt, DRV_PT_ADMIT);
    recovers(s, &st, 0); /* the arena is reset, and with it its failure */
    assert_false(arena_null);
    assert_int_equal(later_calls, 1);
}

static void test_helper_failure_fails_the_cycle(void **unused)
{
    (void)unused;
    drv_state st;
    drv_profile p;
    drv_sched *s = start(&st, &p, NULL, &helper, &later);
    int32_t ndec;
    reset(DRV_ENOMEM);
    assert_int_equal(cycle(s, &st, &ndec), DRV_ENOMEM);
    assert_true(helper_refused);
    assert_int_equal(ndec, 0);
    assert_int_equal(later_calls, 0);
    assert_ptr_equal(drv_sched_failed_in(s, NULL), &helper);
    helper_refused = false;
    recovers(s, &st, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plugin_fails_the_cycle),
        cmocka_unit_test(test_const_callback_fails_the_cycle),
        cmocka_unit_test(test_arena_null_fails_the_call),
        cmocka_unit_test(test_helper_failure_fails_the_cycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
