/*
 * test_quota_plugins.c - the plugins that choose nodes themselves obey queue quotas too
 * (docs/cycle.md, "Admission within quota"): Tiresias selects only what each queue admits, so
 * a job beyond its queue's quota is neither placed nor a reason to preempt, and a running job
 * its queue no longer admits is preempted like any job not selected; Optimus' packed placement
 * refuses a gang its queue does not admit; DRAGON grows an elastic job only as far as its
 * queue's quota (growth goes through drv_ctx_place_gang).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "drover/policy.h"
#include "testutil.h"

#define GiB (1024LL * 1024 * 1024)
#define UNL DRV_UNLIMITED

/* 2 nodes of 4 GPUs; queue a may use 2 GPUs. */
static int32_t make_state(drv_state *st)
{
    tu_make_state(st, 2, (drv_res){32000, 128 * GiB, 4}, "", "");
    drv_queue q = {.name = drv_strtab_intern(st->names, "a"),
                   .weight = 1,
                   .quota = {UNL, UNL, 2},
                   .borrow = {0, 0, 0}};
    int32_t id;
    assert_int_equal(drv_state_add_queue(st, &q, &id), 0);
    return id;
}

/* A pending job of `gpus` one-GPU workers (up to max) in queue q. */
static int32_t add_job(drv_state *st, int32_t q, int gpus, int max, double submit)
{
    static int seq;
    char name[32];
    snprintf(name, sizeof name, "j%d", seq++);
    drv_job t;
    memset(&t, 0, sizeof t);
    t.name = drv_strtab_intern(st->names, name);
    t.user = drv_strtab_intern(st->names, "u");
    t.queue = q;
    t.submit = submit;
    t.phase = DRV_JOB_PENDING;
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){gpus, gpus, max, {1000, GiB, 1}, 1000};
    int32_t id = -1;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    return id;
}

static int32_t count(const drv_decisions *ds, int kind, int32_t job)
{
    int32_t n = 0;
    for (int32_t i = 0; i < ds->n; i++)
        n += ds->v[i].kind == kind && ds->v[i].job == job;
    return n;
}

static void test_tiresias(void **unused)
{
    (void)unused;
    drv_state st;
    int32_t qa = make_state(&st);
    int32_t a1 = add_job(&st, qa, 2, 2, 0), a2 = add_job(&st, qa, 2, 2, 1);
    int32_t b = add_job(&st, 0, 4, 4, 2);
    drv_profile p;
    drv_diag d;
    assert_int_equal(drv_profile_parse("t",
                                       "gang=true period=60 queue_order=tiresias admit=tiresias "
                                       "migrate=tiresias",
                                       &p, &d),
                     0);
    drv_sched *s;
    assert_int_equal(drv_sched_new(&p, &s, &d), 0);
    drv_decisions ds;
    drv_decisions_init(&ds);
    drv_snapshot snap = {.st = &st, .now = 0};
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    /* a1 takes a's 2 GPUs; a2 would fit the cluster but not a's quota; b goes too */
    assert_int_equal(count(&ds, DRV_BIND, a1), 2);
    assert_int_equal(count(&ds, DRV_BIND, a2), 0);
    assert_int_equal(count(&ds, DRV_BIND, b), 4);
    tu_apply(&st, &ds);
    assert_int_equal(drv_state_check(&st, true, &d), 0);
    drv_state_set_phase(&st, a1, DRV_JOB_RUNNING);
    drv_state_set_phase(&st, b, DRV_JOB_RUNNING);
    /* a's quota drops to 1 GPU: a1 is no longer admitted and is preempted; a2 still waits */
    drv_queue q = st.queues[qa];
    q.quota.gpu = 1;
    assert_int_equal(drv_state_set_queue(&st, qa, &q), 0);
    ds.n = 0;
    snap.now = 60;
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(count(&ds, DRV_EVICT, a1), 2);
    assert_int_equal(count(&ds, DRV_BIND, a2), 0);
    assert_int_equal(count(&ds, DRV_EVICT, b), 0);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

static void test_optimus(void **unused)
{
    (void)unused;
    drv_state st;
    int32_t qa = make_state(&st);
    int32_t a1 = add_job(&st, qa, 3, 3, 0), b = add_job(&st, 0, 3, 3, 1);
    drv_profile p;
    drv_diag d;
    assert_int_equal(
        drv_profile_parse("t", "gang=true period=60 admit=optimus scale=optimus", &p, &d), 0);
    drv_sched *s;
    assert_int_equal(drv_sched_new(&p, &s, &d), 0);
    drv_decisions ds;
    drv_decisions_init(&ds);
    drv_snapshot snap = {.st = &st, .now = 0};
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    /* a1's 3 GPUs exceed a's quota of 2: not placed; b is */
    tu_apply(&st, &ds);
    assert_int_equal(st.jobs[a1].bound[DRV_ROLE_WORKER], 0);
    assert_int_equal(st.jobs[b].bound[DRV_ROLE_WORKER], 3);
    assert_int_equal(st.queues[qa].used.gpu, 0);
    assert_int_equal(drv_state_check(&st, true, &d), 0);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* An elastic job (1..8 workers of 1 GPU) in queue a (2 GPUs) on 8 free GPUs: DRAGON starts it
 * and grows it while nobody waits, to 2 workers, not 8; the same job in the default queue grows
 * to 8. */
static void test_dragon_growth(void **unused)
{
    (void)unused;
    for (int inq = 1; inq >= 0; inq--) {
        drv_state st;
        int32_t qa = make_state(&st);
        int32_t j = add_job(&st, inq ? qa : 0, 1, 8, 0);
        drv_profile p;
        drv_diag d;
        assert_int_equal(drv_profile_parse("t",
                                           "gang=true period=15 queue_order=fifo "
                                           "admit=dragon(quiet=0) scale=dragon(quiet=0)",
                                           &p, &d),
                         0);
        drv_sched *s;
        assert_int_equal(drv_sched_new(&p, &s, &d), 0);
        drv_decisions ds;
        drv_decisions_init(&ds);
        for (int t = 0; t < 6; t++) {
            drv_snapshot snap = {.st = &st, .now = 15.0 * t};
            ds.n = 0;
            assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
            tu_apply(&st, &ds);
            assert_int_equal(drv_state_check(&st, true, &d), 0);
            if (drv_job_complete(&st.jobs[j]) && st.jobs[j].phase != DRV_JOB_RUNNING)
                drv_state_set_phase(&st, j, DRV_JOB_RUNNING);
        }
        assert_int_equal(st.jobs[j].bound[DRV_ROLE_WORKER], inq ? 2 : 8);
        drv_decisions_fini(&ds);
        drv_sched_free(s);
        drv_state_fini(&st);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiresias),
        cmocka_unit_test(test_optimus),
        cmocka_unit_test(test_dragon_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
