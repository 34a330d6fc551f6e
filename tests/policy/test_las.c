/*
 * Tests of the las plugin (src/policy/las.c) on hand-built GPU states, through drv_sched_cycle
 * and the built-in `drover` profile where the point is what the default does: rigid jobs are
 * queued by attained service and a waiting one takes the room of a more-served one, never of a
 * job of its own level, an elastic job or a higher PriorityClass; the wake is the next
 * threshold; a preempted job that waited long enough is promoted (knob starve).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "drover/policy.h"
#include "testutil.h"

#define GiB (1024LL * 1024 * 1024)
#define GPUS(n) ((drv_res){1000LL * (n), 4 * GiB * (n), (n)})

/* 57600 GPU-seconds: las's first threshold by default. */
enum { THRESHOLD = 57600 };

/*
 * A job of `gpus` one-GPU workers, elastic down to `wmin` (rigid when wmin == gpus), priority
 * class prio, submitted at `submit` with `attained` GPU-seconds of service: running on node 0
 * when run, else pending.
 */
static int32_t add_job(drv_state *st, int gpus, int wmin, int prio, double submit, double attained,
                       bool run)
{
    drv_job t;
    memset(&t, 0, sizeof t);
    t.priority = prio;
    t.submit = submit;
    t.attained = attained;
    t.phase = run ? DRV_JOB_RUNNING : DRV_JOB_PENDING;
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){gpus, wmin, gpus, GPUS(1), 1000};
    int32_t id;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    for (int32_t k = 0; run && k < st->jobs[id].pod_count; k++)
        drv_state_bind(st, st->jobs[id].pod_base + k, 0);
    return id;
}

/* One cycle at now, applied as a driver does: a job every wanted pod of which is bound runs, a
 * job that lost its pods waits again (tu_cycle leaves an evicted job running). */
static void cycle(drv_sched *s, drv_state *st, drv_decisions *ds, double now)
{
    tu_cycle(s, st, ds, now, true);
    for (int32_t i = 0; i < ds->n; i++)
        if (ds->v[i].kind == DRV_EVICT && !drv_job_complete(&st->jobs[ds->v[i].job]))
            drv_state_set_phase(st, ds->v[i].job, DRV_JOB_PENDING);
}

static int bound(const drv_state *st, int32_t job)
{
    return st->jobs[job].bound[DRV_ROLE_WORKER];
}

/* Evictions of job's pods for preemption in the cycle's decisions, each naming `by`. */
static int preempted(const drv_decisions *ds, int32_t job, int32_t by)
{
    int n = 0;
    for (int32_t i = 0; i < ds->n; i++)
        n += ds->v[i].kind == DRV_EVICT && ds->v[i].job == job &&
             ds->v[i].reason == DRV_REASON_PREEMPT && ds->v[i].value == by;
    return n;
}

/* The built-in profile by name, with its scheduler. */
static drv_sched *builtin(drv_profile *p, const char *name)
{
    drv_diag d;
    assert_int_equal(drv_profile_builtin(name, p, &d), 0);
    drv_sched *s;
    assert_int_equal(drv_sched_new(p, &s, &d), 0);
    return s;
}

/*
 * One node of 4 GPUs, two rigid 4-GPU jobs waiting: A, submitted first, has had 100,000
 * GPU-seconds (it ran before: the second queue), B none. `drover` starts B: the less-served job
 * goes first although A has waited longer (the combined priority alone, `volcano-priority`,
 * starts A: the order is las's). Fails when las's order is switched off.
 */
static void test_queue_by_attained_service(void **unused)
{
    (void)unused;
    const char *names[] = {"drover", "volcano-priority"};
    for (int k = 0; k < 2; k++) {
        drv_state st;
        tu_make_state(&st, 1, GPUS(4), "", "");
        int32_t a = add_job(&st, 4, 4, 0, 0, 100000, false);
        int32_t b = add_job(&st, 4, 4, 0, 10, 0, false);
        drv_profile p;
        drv_sched *s = builtin(&p, names[k]);
        drv_decisions ds;
        drv_decisions_init(&ds);
        cycle(s, &st, &ds, 20);
        assert_int_equal(bound(&st, a), k == 0 ? 0 : 4);
        assert_int_equal(bound(&st, b), k == 0 ? 4 : 0);
        drv_decisions_fini(&ds);
        drv_sched_free(s);
        drv_state_fini(&st);
    }
}

/* What one `drover` cycle did in a contest for one node of 4 GPUs. */
typedef struct contest {
    int evicted;          /* V's pods evicted for preemption, naming P */
    int v_bound, p_bound; /* after the cycle */
} contest;

/* V (4 GPUs, elastic down to vmin, class vprio, vatt GPU-seconds) holds the node; rigid P (4
 * GPUs, class 0, no service) waits; one `drover` cycle at t = 200. */
static contest run_contest(int vmin, int vprio, double vatt)
{
    drv_state st;
    tu_make_state(&st, 1, GPUS(4), "", "");
    int32_t v = add_job(&st, 4, vmin, vprio, 0, vatt, true);
    int32_t p = add_job(&st, 4, 4, 0, 100, 0, false);
    drv_profile pr;
    drv_sched *s = builtin(&pr, "drover");
    drv_decisions ds;
    drv_decisions_init(&ds);
    cycle(s, &st, &ds, 200);
    contest r = {preempted(&ds, v, p), bound(&st, v), bound(&st, p)};
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
    return r;
}

static void expect(contest c, int evicted, int v_bound, int p_bound)
{
    assert_int_equal(c.evicted, evicted);
    assert_int_equal(c.v_bound, v_bound);
    assert_int_equal(c.p_bound, p_bound);
}

/*
 * Rigid V holds the node: under `drover` it is preempted for P - every pod evicted naming P, P
 * bound in the same cycle - when it has passed the threshold, and not when it is 1 GPU-second
 * short of it (the same level as P).
 */
static void test_preempts_more_served(void **unused)
{
    (void)unused;
    expect(run_contest(4, 0, THRESHOLD), 4, 0, 4);
    expect(run_contest(4, 0, THRESHOLD - 1), 0, 4, 0);
}

/*
 * The same, with V far past the threshold but elastic (2..4 workers), or rigid of a higher
 * PriorityClass than P's: neither is taken (an elastic job has other ways to make room; a class
 * is never overtaken from below).
 */
static void test_keeps_elastic_and_higher_class(void **unused)
{
    (void)unused;
    expect(run_contest(2, 0, 10 * THRESHOLD), 0, 4, 0);
    expect(run_contest(4, 10, 10 * THRESHOLD), 0, 4, 0);
}

/*
 * Rigid V (2 GPUs, 50,000 GPU-seconds) runs on a node of 4 GPUs; rigid P (4 GPUs) waits and
 * does not fit. The cycle decides nothing, and las's wake is when V reaches the threshold at 2
 * GPU-seconds a second: 100 + 7,600 / 2 = 3,900. With nothing waiting, never.
 */
static void test_wake_at_threshold(void **unused)
{
    (void)unused;
    for (int waits = 0; waits < 2; waits++) {
        drv_state st;
        tu_make_state(&st, 1, GPUS(4), "", "");
        add_job(&st, 2, 2, 0, 0, 50000, true);
        if (waits)
            add_job(&st, 4, 4, 0, 50, 0, false);
        drv_profile pr;
        drv_sched *s = tu_sched(&pr, "gang=true period=1 queue_order=las admit=gang migrate=las");
        drv_decisions ds;
        drv_decisions_init(&ds);
        cycle(s, &st, &ds, 100);
        assert_int_equal(ds.n, 0);
        double wake = drv_sched_wake(s);
        if (waits)
            assert_true(fabs(wake - 3900) < 1e-6); /* (cmocka's float compare passes inf) */
        else
            assert_true(isinf(wake) && wake > 0);
        drv_decisions_fini(&ds);
        drv_sched_free(s);
        drv_state_fini(&st);
    }
}

/*
 * Promotion (starve=1): V (4 GPUs, 60,000 GPU-seconds: 15,000 s on its GPUs) is preempted at
 * t = 0 for P; W (4 GPUs, no service) is submitted after V. When P ends at t = 20,000, V has
 * waited 20,000 s >= 1 x 15,000 s: promoted to the first queue, it is started before W (it
 * waited longer: the combined priority decides within a queue). Without promotion (starve=0) W
 * goes first. Fails when promotion is switched off.
 */
static void test_promotion_after_starving(void **unused)
{
    (void)unused;
    const char *lines[] = {
        "gang=true period=1 queue_order=las(starve=1),priority admit=gang migrate=las",
        "gang=true period=1 queue_order=las,priority admit=gang migrate=las"};
    for (int k = 0; k < 2; k++) {
        drv_state st;
        tu_make_state(&st, 1, GPUS(4), "", "");
        int32_t v = add_job(&st, 4, 4, 0, 0, 60000, true);
        int32_t p = add_job(&st, 4, 4, 0, 0, 0, false);
        int32_t w = add_job(&st, 4, 4, 0, 10, 0, false);
        drv_profile pr;
        drv_sched *s = tu_sched(&pr, lines[k]);
        drv_decisions ds;
        drv_decisions_init(&ds);
        cycle(s, &st, &ds, 0);
        assert_int_equal(preempted(&ds, v, p), 4);
        assert_int_equal(bound(&st, p), 4);
        tu_finish(&st, p);
        cycle(s, &st, &ds, 20000);
        assert_int_equal(bound(&st, v), k == 0 ? 4 : 0);
        assert_int_equal(bound(&st, w), k == 0 ? 0 : 4);
        drv_decisions_fini(&ds);
        drv_sched_free(s);
        drv_state_fini(&st);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_queue_by_attained_service),
                                       cmocka_unit_test(test_preempts_more_served),
                                       cmocka_unit_test(test_keeps_elastic_and_higher_class),
                                       cmocka_unit_test(test_wake_at_threshold),
                                       cmocka_unit_test(test_promotion_after_starving)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
