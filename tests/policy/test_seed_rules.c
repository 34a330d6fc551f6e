/*
 * Tests of the seed plugins' rules on hand-built states, with expected values worked out by
 * hand from ALGORITHMS.md: FlowCon's limit update, and the knob defaults and ranges the seeds
 * state (an out-of-range knob is refused, naming it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drover/policy.h"

#define GiB (1024LL * 1024 * 1024)

static const drv_decision *resize_of(const drv_decisions *ds, int32_t pod)
{
    for (int32_t i = 0; i < ds->n; i++)
        if (ds->v[i].kind == DRV_RESIZE && ds->v[i].pod == pod)
            return &ds->v[i];
    return NULL;
}

/*
 * One node of 8 CPUs; jobs A and B each run one worker asking 2 CPUs with an 8-CPU limit, so
 * each gets 4 CPUs: R = 0.5 for both. interval = unit = 30 s, alpha = 0.05.
 * Cycle at t=60: A's samples 1.0 (t=10), 0.99 (t=40): max 1.0, P = 0.01, G = 0.02 < alpha:
 *   watching (unchanged). B's 2.0 (t=10), 1.0 (t=40): normalised 1.0, 0.5, P = 0.5, G = 1.0:
 *   growing, ratio = 1.0 / 1.02 -> limit 0.98039 * 8000 = 7843.
 * Cycle at t=90 (limits as before; the test does not apply the first cycle): A adds 0.98
 *   (t=70): P = 0.01, G = 0.02 again: completing. B adds 0.6 (t=70): E = 0.3 vs 0.5, P = 0.2,
 *   G = 0.4: growing. n = 2, beta = 1.5, sum G = 0.42:
 *   A = max(0.02/0.42, 1/(1.5*2)) * 8000 = 2666;  B = min(0.4/0.42, 1) * 8000 = 7619.
 */
static void test_flowcon_limit_update(void **unused)
{
    (void)unused;
    drv_diag d;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    assert_int_equal(drv_state_add_node(&st, "n0", (drv_res){8000, 16 * GiB, 0}, "", "", NULL), 0);
    drv_job t;
    memset(&t, 0, sizeof t);
    t.phase = DRV_JOB_RUNNING;
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {2000, GiB, 0}, 8000};
    int32_t a, b;
    assert_int_equal(drv_state_add_job(&st, &t, &a), 0);
    assert_int_equal(drv_state_add_job(&st, &t, &b), 0);
    int32_t pa = drv_job_pod(&st, a, DRV_ROLE_WORKER, 0),
            pb = drv_job_pod(&st, b, DRV_ROLE_WORKER, 0);
    drv_state_bind(&st, pa, 0);
    drv_state_bind(&st, pb, 0);
    drv_job_add_sample(&st.jobs[a], (drv_sample){10, 0, 1.0});
    drv_job_add_sample(&st.jobs[a], (drv_sample){40, 0, 0.99});
    drv_job_add_sample(&st.jobs[b], (drv_sample){10, 0, 2.0});
    drv_job_add_sample(&st.jobs[b], (drv_sample){40, 0, 1.0});

    drv_profile p;
    assert_int_equal(drv_profile_parse("t", "admit=gang reallocate=flowcon", &p, &d), 0);
    drv_sched *s;
    assert_int_equal(drv_sched_new(&p, &s, &d), 0);
    drv_decisions ds;
    drv_decisions_init(&ds);
    drv_snapshot snap = {.st = &st, .now = 60};
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_null(resize_of(&ds, pa));
    assert_non_null(resize_of(&ds, pb));
    assert_int_equal(resize_of(&ds, pb)->value, 7843);

    ds.n = 0;
    drv_job_add_sample(&st.jobs[a], (drv_sample){70, 0, 0.98});
    drv_job_add_sample(&st.jobs[b], (drv_sample){70, 0, 0.6});
    snap.now = 90;
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_non_null(resize_of(&ds, pa));
    assert_non_null(resize_of(&ds, pb));
    assert_int_equal(resize_of(&ds, pa)->value, 2666);
    assert_int_equal(resize_of(&ds, pb)->value, 7619);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* A job of `w` workers in [wmin, wmax] of 2 CPUs each, in `phase`, its first w workers bound
 * to node 0 when it is not pending. */
static int32_t blind_job(drv_state *st, int phase, int32_t w, int32_t wmin, int32_t wmax,
                         double submit)
{
    drv_job t;
    memset(&t, 0, sizeof t);
    t.phase = phase;
    t.submit = submit;
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){w, wmin, wmax, {2000, GiB, 0}, 2000};
    int32_t id;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    for (int32_t k = 0; phase != DRV_JOB_PENDING && k < w; k++)
        drv_state_bind(st, drv_job_pod(st, id, DRV_ROLE_WORKER, k), 0);
    return id;
}

/* Runs one cycle at `now` that must decide nothing; returns drv_sched_starts_blind. */
static bool blind_after(const char *line, drv_state *st, double now)
{
    drv_diag d;
    drv_profile p;
    assert_int_equal(drv_profile_parse("t", line, &p, &d), 0);
    drv_sched *s;
    assert_int_equal(drv_sched_new(&p, &s, &d), 0);
    drv_decisions ds;
    drv_decisions_init(&ds);
    drv_snapshot snap = {.st = st, .now = now};
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(ds.n, 0);
    bool blind = drv_sched_starts_blind(s);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    return blind;
}

/*
 * DRAGON is blind to jobs starting while a waiting job's relief is not due (growth waits for
 * the queue), or when no job starting could change size; not when one could, and relief or
 * growth may run. One node of 8 CPUs: a rigid running job holds 6, a queued job wants 4
 * (submitted at 0, starve_wait 100).
 */
static void test_dragon_starts_blind(void **unused)
{
    (void)unused;
    const char *dragon = "gang=true period=5 admit=dragon(starve_wait=100;quiet=0) scale=dragon";
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    assert_int_equal(drv_state_add_node(&st, "n0", (drv_res){8000, 16 * GiB, 0}, "", "", NULL), 0);
    blind_job(&st, DRV_JOB_RUNNING, 3, 3, 3, 0);
    int32_t q = blind_job(&st, DRV_JOB_PENDING, 2, 2, 2, 0);
    assert_true(blind_after(dragon, &st, 10));  /* relief due at 100 */
    assert_true(blind_after(dragon, &st, 200)); /* due, but nothing starting can change */
    drv_state_set_phase(&st, q, DRV_JOB_DONE);
    assert_true(blind_after(dragon, &st, 200)); /* no queue, nothing starting */
    /* An elastic job starting: growth may take it, with or without a queue. */
    int32_t e = blind_job(&st, DRV_JOB_STARTING, 1, 1, 2, 0);
    assert_false(blind_after(dragon, &st, 200));
    drv_state_set_phase(&st, e, DRV_JOB_RESTARTING);
    assert_false(blind_after(dragon, &st, 200));
    blind_job(&st, DRV_JOB_PENDING, 4, 4, 4, 150); /* waits, relief due at 250 */
    assert_true(blind_after(dragon, &st, 200));
    assert_false(blind_after(dragon, &st, 260));
    drv_state_fini(&st);
}

/*
 * DRAGON's growth finds every running job that can change size among many that cannot, across
 * the words of the live set and its holes (it remembers which jobs have a fixed size and
 * skips them a word at a time): 300 running jobs of one 2-CPU worker on a node with room for
 * all, every 37th of them elastic (up to 3 workers), every 50th finished. Each elastic one
 * that is live, and no other, is scaled.
 */
static void test_dragon_grows_among_fixed(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    assert_int_equal(drv_state_add_node(&st, "n0", (drv_res){2000000, 4096 * GiB, 0}, "", "", NULL),
                     0);
    bool want[300];
    int32_t nwant = 0;
    for (int32_t i = 0; i < 300; i++) {
        bool elastic = i % 37 == 5;
        int32_t j = blind_job(&st, DRV_JOB_RUNNING, 1, 1, elastic ? 3 : 1, i);
        assert_int_equal(j, i);
        want[i] = elastic && i % 50 != 7;
        if (i % 50 == 7) {
            drv_state_unbind(&st, drv_job_pod(&st, j, DRV_ROLE_WORKER, 0));
            drv_state_set_phase(&st, j, DRV_JOB_DONE);
        }
        nwant += want[i];
    }
    drv_diag d;
    drv_profile p;
    assert_int_equal(drv_profile_parse("t",
                                       "gang=true period=5 admit=dragon(quiet=0) scale=dragon "
                                       "score=least-allocated",
                                       &p, &d),
                     0);
    drv_sched *s;
    assert_int_equal(drv_sched_new(&p, &s, &d), 0);
    drv_decisions ds;
    drv_decisions_init(&ds);
    drv_snapshot snap = {.st = &st, .now = 1000};
    for (int round = 0; round < 2; round++) { /* the second with the sizes remembered */
        ds.n = 0;
        assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
        bool scaled[300] = {false};
        for (int32_t k = 0; k < ds.n; k++)
            if (ds.v[k].kind == DRV_SCALE) {
                assert_true(ds.v[k].job >= 0 && ds.v[k].job < 300);
                assert_true(want[ds.v[k].job]);
                scaled[ds.v[k].job] = true;
            }
        int32_t n = 0;
        for (int32_t i = 0; i < 300; i++)
            n += scaled[i];
        assert_int_equal(n, nwant);
    }
    assert_true(nwant >= 7);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* The seeds' ranges are enforced and errors name the knob. */
static void test_knob_ranges(void **unused)
{
    (void)unused;
    static const char *const bad[][2] = {
        {"admit=gang queue_order=priority(w_user=2)", "w_user=2"},
        {"admit=dragon(starve_wait=-1)", "starve_wait=-1"},
        {"admit=autoscale(quiet=-5)", "quiet=-5"},
        {"admit=gang reallocate=flowcon(alpha=0)", "alpha=0"},
        {"admit=gang migrate=specon(alpha_node=2)", "alpha_node=2"},
        {"admit=gang score=locality(w_node=0;w_rack=0;w_zone=0;w_room=0)", "all 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        drv_profile p;
        drv_diag d;
        assert_int_equal(drv_profile_parse("t", bad[i][0], &p, &d), 0);
        drv_sched *s = NULL;
        assert_int_equal(drv_sched_new(&p, &s, &d), DRV_ERANGE);
        assert_non_null(strstr(d.msg, bad[i][1]));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flowcon_limit_update),
        cmocka_unit_test(test_knob_ranges),
        cmocka_unit_test(test_dragon_starts_blind),
        cmocka_unit_test(test_dragon_grows_among_fixed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
