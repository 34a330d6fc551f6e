/*
 * test_loop.c - the controller loop's two decisions, as functions of its state with no clock
 * read (src/ctrl/ctrl_loop.c): when it wakes (ctrl_loop_next_wake) and whether a cycle is due
 * (ctrl_loop_cycle_due). A deadline wakes the loop when it comes, and an idle loop runs no cycle
 * before it, however often it wakes to notice stop: what test_jobs once asserted as a count of
 * cycles in a window of wall-clock time.
 */
#include "ctrl.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

/* Equal to within rounding (the loop adds its bounds to now as these tests do). */
static bool near(double a, double b)
{
    return fabs(a - b) < 1e-9;
}

static ctrl_loop synced_leader(void)
{
    return (ctrl_loop){.synced = true, .leader = true, .last = 90, .deadline = INFINITY};
}

/* Before the caches are synced: it looks again soon, and at once once every informer listed. */
static void test_wakes_while_syncing(void **unused)
{
    (void)unused;
    ctrl_loop l = {.deadline = INFINITY};
    assert_true(near(ctrl_loop_next_wake(&l, 5, INFINITY, 1, false), 5 + CTRL_IDLE_MAX_S));
    assert_true(near(ctrl_loop_next_wake(&l, 5, INFINITY, 1, true), 5));
}

/* A lifecycle deadline closer than the idle bound is when it wakes, when it leads; a follower
 * does not wake for it. */
static void test_wakes_at_a_deadline(void **unused)
{
    (void)unused;
    ctrl_loop l = synced_leader();
    l.deadline = 100.02;
    assert_true(near(ctrl_loop_next_wake(&l, 100, INFINITY, 1, true), 100.02));
    l.deadline = 107;
    assert_true(near(ctrl_loop_next_wake(&l, 100, INFINITY, 1, true), 100 + CTRL_IDLE_MAX_S));
    l.leader = false;
    l.deadline = 100.02;
    assert_true(near(ctrl_loop_next_wake(&l, 100, INFINITY, 1, true), 100 + CTRL_IDLE_MAX_S));
}

/* A plugin's wake time, or a period after the last cycle when a plugin wants every cycle. */
static void test_wakes_for_plugins(void **unused)
{
    (void)unused;
    ctrl_loop l = synced_leader(); /* (its last cycle at 90) */
    assert_true(near(ctrl_loop_next_wake(&l, 90.5, -INFINITY, 0.51, true), 90.51));
    assert_true(near(ctrl_loop_next_wake(&l, 90.5, 90.52, 1, true), 90.52));
    assert_true(near(ctrl_loop_next_wake(&l, 90.5, 95, 1, true), 90.5 + CTRL_IDLE_MAX_S));
}

/* Nothing changed and no plugin asked for a time: no cycle is due, however long it idles
 * (a passed deadline makes the mirror dirty first: ctrl_lifecycle_expire). */
static void test_idle_runs_no_cycle(void **unused)
{
    (void)unused;
    ctrl_loop l = synced_leader();
    l.deadline = 100;
    for (double now = 90; now < 200; now += CTRL_IDLE_MAX_S)
        assert_false(ctrl_loop_cycle_due(&l, false, now, INFINITY, 1));
    assert_true(ctrl_loop_cycle_due(&l, true, 90, INFINITY, 1));
}

/* A plugin that wants every cycle is due a period after the last; one that asked for a time,
 * at that time. */
static void test_due_for_plugins(void **unused)
{
    (void)unused;
    ctrl_loop l = synced_leader();
    assert_false(ctrl_loop_cycle_due(&l, false, 90.9, -INFINITY, 1));
    assert_true(ctrl_loop_cycle_due(&l, false, 91, -INFINITY, 1));
    assert_false(ctrl_loop_cycle_due(&l, false, 94.9, 95, 1));
    assert_true(ctrl_loop_cycle_due(&l, false, 95, 95, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wakes_while_syncing), cmocka_unit_test(test_wakes_at_a_deadline),
        cmocka_unit_test(test_wakes_for_plugins),   cmocka_unit_test(test_idle_runs_no_cycle),
        cmocka_unit_test(test_due_for_plugins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
