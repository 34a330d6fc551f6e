/*
 * test_queue_cache.c - what a scheduler remembers from one cycle to the next to order and admit
 * its queue faster (the priority plugin's factor pool and its bounds carried over, the kept
 * keys and sorted records of the queue, the record of each queued job's smallest gang, the memo
 * of gangs that failed the capacity bounds) must never change a decision. Metamorphic: one
 * scheduler runs a long random stream of cycles on a state that changes between them (jobs
 * arrive, start, finish and shrink, room is freed or not, the oldest job leaves the queue, a
 * running job comes back to it);
 * at every cycle a scheduler made afresh, remembering nothing, decides on the same state, and
 * the two decision lists must be equal. A cache that goes stale - an input changed between
 * cycles and the kept value was not refreshed - decides differently from the fresh one.
 * And drv_ctx_queued_cannot_fit, which a fresh scheduler shares, checked against
 * drv_ctx_gang_room itself for every queued job of every cycle, and drv_ctx_queued_skip
 * against asking it job by job.
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

/* A node: 8 GPUs, 32 CPUs. */
static const drv_res NODE = {32000, 256 * GiB, 8};

/* run_stream and checking_stream: between cycles, now and then a queued job's worker target is
 * set anew (edit_target) */
static bool edit_targets;

/* When not NULL, the first queue_order plugin of the profiles run_stream makes is this one. */
static const drv_plugin *order0;

/* add_job makes no PS (a queue of GPU pods only can be stuck), and now and then a job of
 * worker minimum 0 */
static bool no_ps;

/* A pending elastic job: maybe a PS, 1-6 workers of 1-4 GPUs, random user priority, class and
 * submission time (ties with the last job's on purpose). */
static void add_job(drv_state *st, uint64_t *x, double now)
{
    static int seq;
    char name[32];
    snprintf(name, sizeof name, "j%d", seq++);
    drv_job t;
    memset(&t, 0, sizeof t);
    t.name = drv_strtab_intern(st->names, name);
    t.user = drv_strtab_intern(st->names, tu_rnd(x) % 2 ? "u1" : "u2");
    t.submit = now - (double)(tu_rnd(x) % 3);
    t.user_priority = (int32_t)(tu_rnd(x) % 4);
    t.priority = (int32_t[]){0, 10, 100}[tu_rnd(x) % 3];
    t.phase = DRV_JOB_PENDING;
    int32_t w = 1 + (int32_t)(tu_rnd(x) % 6), min = 1 + (int32_t)(tu_rnd(x) % (uint64_t)w);
    if (no_ps && tu_rnd(x) % 8 == 0)
        min = 0; /* its smallest gang has no pod: the queue is not stuck while it waits */
    int64_t gpu = 1 + (int64_t)(tu_rnd(x) % 4);
    t.role[DRV_ROLE_WORKER] =
        (drv_rolespec){w, min, w + (int32_t)(tu_rnd(x) % 3), {2000, 4 * GiB, gpu}, 2000};
    if (!no_ps && tu_rnd(x) % 2)
        t.role[DRV_ROLE_PS] = (drv_rolespec){1, 1, 1, {4000, 8 * GiB, 0}, 4000};
    int32_t id = -1;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
}

/* A queued job with no pod bound, if any, gets a new worker target within its bounds (a user's
 * edit of the replicas, drv_state_set_workers): its smallest gang stays its minimum. */
static void edit_target(drv_state *st, uint64_t *x)
{
    int32_t pick = -1, seen_n = 0;
    for (int32_t j = drv_state_next_queued(st, 0); j >= 0; j = drv_state_next_queued(st, j + 1))
        if (st->jobs[j].bound[DRV_ROLE_WORKER] == 0 && tu_rnd(x) % (uint64_t)++seen_n == 0)
            pick = j;
    if (pick < 0)
        return;
    const drv_rolespec *w = &st->jobs[pick].role[DRV_ROLE_WORKER];
    drv_state_set_workers(st, pick,
                          w->min + (int32_t)(tu_rnd(x) % (uint64_t)(w->max - w->min + 1)));
}

/* The keyed queue order of a coarse class (user priority 0-1 or 2-3) and no queue_kept: chained
 * before priority, the core orders by a row of two keys per record. */
static double coarse_key(const drv_ctx *c, void *state, int32_t job)
{
    (void)state;
    return drv_ctx_state(c)->jobs[job].user_priority / 2;
}

static const drv_plugin coarse = {.name = "coarse", .queue_key = coarse_key};

/* A scheduler of profile line, its first queue_order plugin order0 when set. */
static drv_sched *sched_of(drv_profile *p, const char *line)
{
    drv_diag d;
    assert_int_equal(drv_profile_parse("t", line, p, &d), 0);
    if (order0)
        p->use[DRV_PT_QUEUE_ORDER][0].p = order0;
    drv_sched *s;
    assert_int_equal(drv_sched_new(p, &s, &d), 0);
    return s;
}

/* A running job's pods all unbound and the job pending again: it leaves the running jobs
 * and comes back to the queue it left. */
static void requeue(drv_state *st, int32_t job)
{
    const drv_job *j = &st->jobs[job];
    for (int32_t k = 0; k < j->pod_count; k++)
        drv_state_unbind(st, j->pod_base + k);
    drv_state_set_phase(st, job, DRV_JOB_PENDING);
}

/*
 * `steps` cycles of profile `line` on `nodes` nodes: before each, 0-3 jobs arrive (none in some
 * stretches, so that the queue stays the same), running jobs finish (none in some stretches, so
 * that no room is given back), and now and then the oldest queued job is withdrawn (a bound of
 * the wait factor leaves) or a running job is queued again. Returns the decisions made in all, so a
 * caller can see the stream decided something.
 */
static int32_t run_stream(const char *line, int nodes, int steps, uint64_t seed)
{
    drv_state st;
    drv_profile pk, pf;
    drv_decisions dk, df;
    tu_make_state(&st, nodes, NODE, "", "");
    drv_decisions_init(&dk);
    drv_decisions_init(&df);
    drv_sched *kept = sched_of(&pk, line);
    uint64_t x = seed;
    int32_t decided = 0;
    for (int t = 0; t < steps; t++) {
        int phase = (t / 7) % 4; /* 0: all moves, 1: arrivals only, 2: finishes only, 3: none */
        if (phase <= 1)
            for (int k = (int)(tu_rnd(&x) % 4); k > 0; k--)
                add_job(&st, &x, t);
        if (phase == 0 || phase == 2) {
            DRV_FOR_LIVE(&st, j)
            if (st.jobs[j].phase == DRV_JOB_RUNNING && tu_rnd(&x) % 4 == 0)
                tu_finish(&st, j);
        }
        if (tu_rnd(&x) % 9 == 0) { /* the oldest queued job withdrawn */
            int32_t old = -1;
            for (int32_t j = drv_state_next_queued(&st, 0); j >= 0;
                 j = drv_state_next_queued(&st, j + 1))
                if (old < 0 || st.jobs[j].submit < st.jobs[old].submit)
                    old = j;
            if (old >= 0 && st.nqueued_bound == 0)
                tu_finish(&st, old);
        }
        if (tu_rnd(&x) % 7 == 0) { /* a running job stopped whole, queued again (a restart) */
            int32_t r = -1;
            DRV_FOR_LIVE(&st, j)
            if (r < 0 && st.jobs[j].phase == DRV_JOB_RUNNING)
                r = j;
            if (r >= 0)
                requeue(&st, r);
        }
        if (edit_targets && tu_rnd(&x) % 2 == 0)
            edit_target(&st, &x);
        drv_snapshot snap = {.st = &st, .now = t};
        dk.n = df.n = 0;
        assert_int_equal(drv_sched_cycle(kept, &snap, &dk), 0);
        drv_sched *fresh = sched_of(&pf, line);
        assert_int_equal(drv_sched_cycle(fresh, &snap, &df), 0);
        drv_sched_free(fresh);
        if (dk.n != df.n || (dk.n > 0 && memcmp(dk.v, df.v, (size_t)dk.n * sizeof *dk.v) != 0))
            fail_msg("%s: cycle %d: %d decisions kept, %d fresh", line, t, (int)dk.n, (int)df.n);
        decided += dk.n;
        tu_apply(&st, &dk);
        tu_settle(&st, true);
    }
    drv_sched_free(kept);
    drv_decisions_fini(&dk);
    drv_decisions_fini(&df);
    drv_state_fini(&st);
    return decided;
}

/* The combined priority with DRAGON's elastic admission and relief (quiet 0: growth is not
 * timed by an earlier action, so a fresh scheduler grows alike). */
static void test_priority_dragon(void **unused)
{
    (void)unused;
    for (uint64_t seed = 1; seed <= 6; seed++)
        assert_true(run_stream("gang=true period=1 queue_order=priority "
                               "admit=dragon(quiet=0;starve_wait=5) scale=dragon "
                               "score=least-allocated",
                               4, 300, seed * 7919) > 0);
}

/* drover's queue order and admission (fairshare idle without queues). */
static void test_drover_order(void **unused)
{
    (void)unused;
    for (uint64_t seed = 1; seed <= 4; seed++)
        assert_true(run_stream("gang=true period=1 queue_order=fairshare,priority "
                               "admit=dragon(quiet=0;starve_wait=86400) scale=dragon "
                               "score=locality*4,ps-anti-affinity,least-allocated",
                               6, 300, seed * 104729) > 0);
}

/* Two keyed orders in a chain: each record keeps a row of keys, priority's kept from cycle to
 * cycle while its bounds hold (queue_kept), the coarse order's asked every cycle; queued jobs'
 * targets edited between cycles. A row key kept when its plugin's moved orders the queue
 * otherwise than a fresh scheduler does. */
static void test_keyed_chain_targets(void **unused)
{
    (void)unused;
    order0 = &coarse;
    edit_targets = true;
    for (uint64_t seed = 1; seed <= 4; seed++)
        assert_true(run_stream("gang=true period=1 queue_order=fifo,priority "
                               "admit=dragon(quiet=0;starve_wait=5) scale=dragon "
                               "score=least-allocated",
                               4, 300, seed * 6151) > 0);
    order0 = NULL;
    edit_targets = false;
}

/* Whole gangs in priority order, no elasticity: the failed-gang memos alone. */
static void test_priority_gang(void **unused)
{
    (void)unused;
    for (uint64_t seed = 1; seed <= 4; seed++)
        assert_true(run_stream("gang=true period=1 queue_order=priority admit=gang "
                               "score=least-allocated",
                               3, 300, seed * 15485863) > 0);
}

/* ---- drv_ctx_queued_cannot_fit is never wrong ------------------------------------------- */

static struct {
    int32_t cannot, can; /* jobs it said cannot fit; jobs it did not, whose gang had room */
    bool stuck;          /* drv_ctx_queue_stuck at the start of the last admit */
    int32_t nstuck[2];   /* cycles the kept scheduler found the queue not stuck, stuck */
} seen;

/* Gang admission in queue order that first checks, for every queued job, that a job said not
 * to fit fails drv_ctx_gang_room at every size from min(min, target) up. */
static void checking_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    const drv_state *st = drv_ctx_state(c);
    seen.stuck = drv_ctx_queue_stuck(c);
    for (int32_t i = 0; i < n; i++) {
        /* drv_ctx_queued_skip answers what asking each job in turn does */
        int32_t next = i;
        while (next < n && drv_ctx_queued_cannot_fit(c, next, jobs[next]))
            next++;
        assert_int_equal(drv_ctx_queued_skip(c, i, jobs, n), next);
        const drv_job *j = &st->jobs[jobs[i]];
        const drv_rolespec *w = &j->role[DRV_ROLE_WORKER];
        int32_t lo = w->min < j->target[DRV_ROLE_WORKER] ? w->min : j->target[DRV_ROLE_WORKER];
        if (drv_ctx_queued_cannot_fit(c, i, jobs[i])) {
            seen.cannot++;
            for (int32_t k = lo; k <= w->max; k++)
                assert_false(drv_ctx_gang_room(c, jobs[i], k));
            continue;
        }
        seen.can += drv_ctx_gang_room(c, jobs[i], lo);
        assert_true(drv_ctx_place_gang(c, jobs[i], lo) >= 0);
    }
}

static const drv_plugin checking = {.name = "checking", .admit = checking_admit};

/* 300 cycles of the checking admission; drv_ctx_queue_stuck compared with a fresh scheduler's
 * at each. */
static void checking_stream(void)
{
    drv_state st;
    drv_profile p;
    drv_diag d;
    drv_decisions ds;
    tu_make_state(&st, 3, NODE, "", "");
    drv_decisions_init(&ds);
    assert_int_equal(drv_profile_parse("t",
                                       "gang=true period=1 queue_order=priority admit=gang "
                                       "score=least-allocated",
                                       &p, &d),
                     0);
    p.use[DRV_PT_ADMIT][0].p = &checking;
    drv_sched *s;
    assert_int_equal(drv_sched_new(&p, &s, &d), 0);
    uint64_t x = 424242;
    memset(&seen, 0, sizeof seen);
    for (int t = 0; t < 300; t++) {
        for (int k = (int)(tu_rnd(&x) % 4); k > 0; k--)
            add_job(&st, &x, t);
        DRV_FOR_LIVE(&st, j)
        if (st.jobs[j].phase == DRV_JOB_RUNNING && tu_rnd(&x) % 4 == 0)
            tu_finish(&st, j);
        if (edit_targets)
            edit_target(&st, &x);
        drv_snapshot snap = {.st = &st, .now = t};
        /* drv_ctx_queue_stuck's summary over the kept records must answer as a fresh one */
        drv_sched *fresh;
        assert_int_equal(drv_sched_new(&p, &fresh, &d), 0);
        ds.n = 0;
        seen.stuck = false;
        assert_int_equal(drv_sched_cycle(fresh, &snap, &ds), 0);
        bool want = seen.stuck;
        drv_sched_free(fresh);
        ds.n = 0;
        assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
        if (seen.stuck != want)
            fail_msg("cycle %d: queue stuck %d, a fresh scheduler says %d", t, seen.stuck, want);
        seen.nstuck[seen.stuck]++;
        tu_apply(&st, &ds);
        tu_settle(&st, true);
    }
    assert_true(seen.cannot > 100); /* both answers were given, many times */
    assert_true(seen.can > 100);
    drv_sched_free(s);
    drv_decisions_fini(&ds);
    drv_state_fini(&st);
}

static void test_cannot_fit_exact(void **unused)
{
    (void)unused;
    no_ps = false;
    checking_stream();
}

/* GPU pods only: the queue is often stuck (no pod of it fits the largest free room), and the
 * kept summary of the records' least requests must say so exactly when a fresh one does - a
 * summary not cleared when its least job leaves says "not stuck". */
static void test_queue_stuck_kept(void **unused)
{
    (void)unused;
    no_ps = true;
    checking_stream();
    no_ps = false;
    assert_true(seen.nstuck[0] > 10 && seen.nstuck[1] > 10);
}

/* Queued jobs' targets edited between cycles: drv_ctx_queued_cannot_fit reads the record of the
 * job's smallest gang, made once while it waits, which no edit within the bounds moves. */
static void test_cannot_fit_targets(void **unused)
{
    (void)unused;
    edit_targets = true;
    checking_stream();
    edit_targets = false;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_priority_dragon),    cmocka_unit_test(test_drover_order),
        cmocka_unit_test(test_priority_gang),      cmocka_unit_test(test_cannot_fit_exact),
        cmocka_unit_test(test_queue_stuck_kept),   cmocka_unit_test(test_keyed_chain_targets),
        cmocka_unit_test(test_cannot_fit_targets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
