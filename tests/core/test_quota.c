/*
 * test_quota.c - admission within queue quotas (src/core/quota.c, docs/cycle.md "Admission
 * within quota"): Kueue's rule on hand-made numbers, the placement helpers refusing what a
 * queue may not take, borrowing only what the cohort leaves unused, many cycles of random
 * arrivals and completions checked bind by bind against the rule written out again here, and
 * two gangs of 60 % of the cluster each never deadlocking.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "drover/cycle.h"
#include "testutil.h"

#define GiB (1024LL * 1024 * 1024)
#define UNL DRV_UNLIMITED

/* ---- fixtures ---------------------------------------------------------------------------- */

/* A node: 8 CPUs, 64 GiB, 8 GPUs. */
static const drv_res NODE = {8000, 64 * GiB, 8};

static int32_t add_queue(drv_state *st, const char *name, const char *cohort, double weight,
                         drv_res quota, drv_res borrow)
{
    drv_queue q = {.name = drv_strtab_intern(st->names, name),
                   .cohort = cohort ? drv_strtab_intern(st->names, cohort) : 0,
                   .weight = weight,
                   .quota = quota,
                   .borrow = borrow};
    int32_t id = -1;
    assert_int_equal(drv_state_add_queue(st, &q, &id), 0);
    return id;
}

/* A pending job of queue q: ps PS pods and w workers, each of req. */
static int32_t add_job(drv_state *st, int32_t q, int ps, int w, drv_res req, double submit)
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
    t.role[DRV_ROLE_PS] = (drv_rolespec){ps, ps, ps, req, req.cpu};
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){w, w, w, req, req.cpu};
    int32_t id = -1;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    return id;
}

/* Admit plugins: every queued job's gang at its target; or every wanted pod alone. */
static void admit_gangs(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    for (int32_t i = 0; i < n; i++)
        if (drv_ctx_place_gang(c, jobs[i],
                               drv_ctx_state(c)->jobs[jobs[i]].target[DRV_ROLE_WORKER]) < 0)
            return;
}

static void admit_pods(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    const drv_state *st = drv_ctx_state(c);
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &st->jobs[jobs[i]];
        for (int32_t k = 0; k < j->pod_count; k++)
            if (drv_ctx_pod_node(c, j->pod_base + k) < 0)
                drv_ctx_place_pod(c, j->pod_base + k);
    }
}

static const drv_plugin gang_plugin = {.name = "t-gang", .admit = admit_gangs};
static const drv_plugin pods_plugin = {.name = "t-pods", .admit = admit_pods};

static drv_sched *new_sched(const drv_plugin *admit, bool gang)
{
    static drv_profile ring[4]; /* borrowed by the scheduler (drv_sched_new) */
    static int next;
    drv_profile *prof = &ring[next++ % 4];
    memset(prof, 0, sizeof *prof);
    strcpy(prof->name, "test");
    prof->gang = gang;
    prof->use[DRV_PT_ADMIT][0].p = admit;
    prof->nuse[DRV_PT_ADMIT] = 1;
    drv_sched *s;
    drv_diag d;
    assert_int_equal(drv_sched_new(prof, &s, &d), 0);
    return s;
}

/* Runs one cycle and applies its decisions (binds, scales); jobs now whole start running; the
 * state checked, gangs whole when the profile admits gangs. */
static void cycle(drv_sched *s, drv_state *st, drv_decisions *ds)
{
    tu_cycle(s, st, ds, 0, drv_sched_profile(s)->gang);
}

static int32_t bound_pods(const drv_state *st, int32_t job)
{
    int32_t n = 0;
    for (int r = 0; r < DRV_NROLES; r++)
        n += st->jobs[job].bound[r];
    return n;
}

/* ---- the rule ---------------------------------------------------------------------------- */

/* Kueue's rule, written again apart from the core: in each dimension added to, after the add,
 * within quota; or in a cohort, within quota + borrowing limit and the cohort's use within its
 * quota. Values here stay far from INT64_MAX but for DRV_UNLIMITED, handled first. */
static bool reference_admits(const drv_state *st, const drv_res *used, int32_t q, drv_res add)
{
    for (int d = 0; d < 3; d++) {
        const int64_t *a = d == 0 ? &add.cpu : d == 1 ? &add.mem : &add.gpu;
        if (*a == 0)
            continue;
        size_t off = d == 0   ? offsetof(drv_res, cpu)
                     : d == 1 ? offsetof(drv_res, mem)
                              : offsetof(drv_res, gpu);
#define AT(r) (*(const int64_t *)((const char *)&(r) + off))
        const drv_queue *qu = &st->queues[q];
        int64_t u = AT(used[q]) + *a;
        if (AT(qu->quota) == UNL || u <= AT(qu->quota))
            continue;
        if (qu->cohort == 0)
            return false;
        if (AT(qu->borrow) != UNL && u > AT(qu->quota) + AT(qu->borrow))
            return false;
        bool unlimited = false;
        int64_t tq = 0, tu = 0;
        for (int32_t i = 0; i < st->nqueues; i++)
            if (st->queues[i].cohort == qu->cohort) {
                unlimited = unlimited || AT(st->queues[i].quota) == UNL;
                tq += unlimited ? 0 : AT(st->queues[i].quota);
                tu += i == q ? u : AT(used[i]);
            }
        if (!unlimited && tu > tq)
            return false;
#undef AT
    }
    return true;
}

/* The worked example of quota.c and the edges: no cohort, unlimited quota and borrowing, a
 * dimension not added to, saturating sums, a state with no queue. */
static void test_rule(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 1, NODE, "z", "r");
    drv_res none = {0, 0, 0};
    drv_res add = {0, 0, 1};
    assert_true(drv_queue_admits(&st, NULL, 0, add)); /* no queue: nothing binds */
    int32_t a = add_queue(&st, "a", "lab", 1, (drv_res){UNL, UNL, 8}, (drv_res){0, 0, 4});
    int32_t b = add_queue(&st, "b", "lab", 1, (drv_res){UNL, UNL, 8}, none);
    int32_t c = add_queue(&st, "c", NULL, 1, (drv_res){UNL, UNL, 2}, (drv_res){0, 0, 100});
    drv_res used[12] = {{0, 0, 0}}; /* every queue below */
    used[a].gpu = 6;
    used[b].gpu = 5;
    add.gpu = 2; /* a to 8: its own quota */
    assert_true(drv_queue_admits(&st, used, a, add));
    add.gpu = 5; /* a to 11: 3 borrowed, the cohort at 16 of 16 */
    assert_true(drv_queue_admits(&st, used, a, add));
    add.gpu = 6; /* a to 12: within 8 + 4, but the cohort at 17 */
    assert_false(drv_queue_admits(&st, used, a, add));
    add.gpu = 3; /* b to 8: its quota, whatever a borrows */
    used[a].gpu = 11;
    assert_true(drv_queue_admits(&st, used, b, add));
    add.gpu = 4; /* b to 9: b may not borrow */
    assert_false(drv_queue_admits(&st, used, b, add));
    used[b].gpu = 7; /* a borrows 3 of the 1 b leaves: not one more */
    add.gpu = 1;
    assert_false(drv_queue_admits(&st, used, a, add));
    used[a].gpu = 6; /* a to 9 and the cohort at 16: yes; to 10: no */
    add.gpu = 3;
    assert_true(drv_queue_admits(&st, used, a, add) && reference_admits(&st, used, a, add));
    add.gpu = 4;
    assert_false(drv_queue_admits(&st, used, a, add) || reference_admits(&st, used, a, add));
    /* no cohort: the borrowing limit lends nothing */
    add.gpu = 3;
    assert_false(drv_queue_admits(&st, used, c, add));
    add.gpu = 2;
    assert_true(drv_queue_admits(&st, used, c, add));
    /* over its GPU quota, c still starts what needs no GPU */
    used[c].gpu = 5;
    assert_true(drv_queue_admits(&st, used, c, (drv_res){4000, GiB, 0}));
    assert_false(drv_queue_admits(&st, used, c, (drv_res){4000, GiB, 1}));
    /* an unlimited borrowing limit leaves the cohort's room; an unlimited member lends all */
    int32_t e = add_queue(&st, "e", "open", 1, (drv_res){4000, UNL, UNL}, (drv_res){UNL, 0, 0});
    int32_t f = add_queue(&st, "f", "open", 1, (drv_res){4000, UNL, UNL}, none);
    assert_true(drv_queue_admits(&st, used, e, (drv_res){8000, 0, 0}));
    assert_false(drv_queue_admits(&st, used, e, (drv_res){8001, 0, 0}));
    used[f].cpu = 1000;
    assert_false(drv_queue_admits(&st, used, e, (drv_res){7001, 0, 0}));
    add_queue(&st, "g", "open", 1, (drv_res){UNL, UNL, UNL}, none);
    assert_true(drv_queue_admits(&st, used, e, (drv_res){INT64_MAX / 2, 0, 0}));
    /* quotas and uses near INT64_MAX: sums saturate instead of wrapping negative */
    int32_t h = add_queue(&st, "h", "big", 1, (drv_res){INT64_MAX - 1, UNL, UNL},
                          (drv_res){INT64_MAX - 1, 0, 0});
    add_queue(&st, "i", "big", 1, (drv_res){INT64_MAX - 1, UNL, UNL}, none);
    used[h].cpu = INT64_MAX - 2;
    assert_true(drv_queue_admits(&st, used, h, (drv_res){1, 0, 0}));
    assert_true(drv_queue_admits(&st, used, h, (drv_res){INT64_MAX - 1, 0, 0}));
    int32_t k = add_queue(&st, "k", NULL, 1, (drv_res){INT64_MAX - 1, UNL, UNL}, none);
    used[k].cpu = INT64_MAX - 2;
    assert_false(drv_queue_admits(&st, used, k, (drv_res){2, 0, 0})); /* would wrap */
    drv_state_fini(&st);
}

/* ---- the placement helpers ------------------------------------------------------------- */

/* drv_ctx_place_pod and drv_ctx_place_gang refuse what the queue may not take, leaving no
 * trace; a gang quota refuses is remembered nowhere: the same shape in another queue is placed
 * in the same cycle, and the job itself as soon as its quota is raised (no capacity given
 * back). */
static void test_helpers(void **unused)
{
    (void)unused;
    drv_state st;
    drv_decisions ds;
    drv_decisions_init(&ds);
    tu_make_state(&st, 4, NODE, "z", "r"); /* 32 CPUs */
    int32_t qa = add_queue(&st, "a", NULL, 1, (drv_res){3000, UNL, UNL}, (drv_res){0, 0, 0});
    drv_res one = {1000, GiB, 0};
    int32_t j[5];
    for (int i = 0; i < 5; i++)
        j[i] = add_job(&st, qa, 0, 1, one, i);
    drv_sched *s = new_sched(&pods_plugin, false);
    cycle(s, &st, &ds);
    assert_int_equal(st.queues[qa].used.cpu, 3000);
    assert_int_equal(bound_pods(&st, j[3]) + bound_pods(&st, j[4]), 0);
    cycle(s, &st, &ds); /* and stays so */
    assert_int_equal(ds.n, 0);
    drv_sched_free(s);

    /* gangs: a's gang of 4 CPUs exceeds its quota of 5 with 3 used; the default queue's gang
     * of the same shape goes in the same cycle */
    drv_queue q = st.queues[qa];
    q.quota.cpu = 5000;
    assert_int_equal(drv_state_set_queue(&st, qa, &q), 0);
    int32_t ga = add_job(&st, qa, 1, 3, one, 10);
    int32_t g0 = add_job(&st, 0, 1, 3, one, 11);
    tu_finish(&st, j[3]); /* not placed: done without running */
    tu_finish(&st, j[4]);
    s = new_sched(&gang_plugin, true);
    cycle(s, &st, &ds);
    assert_int_equal(bound_pods(&st, ga), 0);
    assert_int_equal(bound_pods(&st, g0), 4);
    assert_int_equal(st.queues[qa].used.cpu, 3000);
    /* the quota raised, nothing else changed: the next cycle places it */
    q.quota.cpu = 7000;
    assert_int_equal(drv_state_set_queue(&st, qa, &q), 0);
    cycle(s, &st, &ds);
    assert_int_equal(bound_pods(&st, ga), 4);
    assert_int_equal(st.queues[qa].used.cpu, 7000);
    drv_sched_free(s);
    drv_decisions_fini(&ds);
    drv_state_fini(&st);
}

/* An admit plugin that asks the O(1) questions for job 0 of the queue at 1 and 3 workers. */
static bool room_seen[4];
static void admit_ask(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    assert_true(n >= 1);
    room_seen[0] = drv_ctx_queue_room(c, jobs[0], 1);
    room_seen[1] = drv_ctx_queue_room(c, jobs[0], 3);
    room_seen[2] = drv_ctx_gang_room(c, jobs[0], 1);
    room_seen[3] = drv_ctx_gang_room(c, jobs[0], 3);
    assert_int_equal(drv_ctx_place_gang(c, jobs[0], 3), room_seen[3]);
    assert_false(drv_ctx_queue_stuck(c) && room_seen[2]);
}
static const drv_plugin ask_plugin = {.name = "t-ask", .admit = admit_ask};

/* drv_ctx_queue_room and drv_ctx_gang_room say what place_gang will do when quota binds. */
static void test_room_questions(void **unused)
{
    (void)unused;
    drv_state st;
    drv_decisions ds;
    drv_decisions_init(&ds);
    tu_make_state(&st, 4, NODE, "z", "r");
    int32_t qa = add_queue(&st, "a", NULL, 1, (drv_res){2500, UNL, UNL}, (drv_res){0, 0, 0});
    add_job(&st, qa, 0, 1, (drv_res){1000, GiB, 0}, 0);
    drv_sched *s = new_sched(&ask_plugin, true);
    cycle(s, &st, &ds);
    assert_true(room_seen[0] && room_seen[2]);  /* 1 worker: 1000 of 2500 */
    assert_false(room_seen[1] || room_seen[3]); /* 3 workers: 3000 */
    drv_sched_free(s);
    drv_decisions_fini(&ds);
    drv_state_fini(&st);
}

/* ---- borrowing ----------------------------------------------------------------------------- */

static int32_t cpu_of(const drv_state *st, int32_t q)
{
    return (int32_t)(st->queues[q].used.cpu / 1000);
}

/* A queue borrows what its cohort leaves unused and no more: 1-CPU jobs of queue a (quota 4,
 * borrowing limit 8) beside queue b (quota 6, no borrowing) on 32 CPUs. */
static void test_borrow_unused(void **unused)
{
    (void)unused;
    drv_state st;
    drv_decisions ds;
    drv_decisions_init(&ds);
    tu_make_state(&st, 4, NODE, "z", "r");
    drv_res cpu1 = {1000, GiB, 0};
    int32_t qa = add_queue(&st, "a", "lab", 1, (drv_res){4000, UNL, UNL}, (drv_res){8000, 0, 0});
    int32_t qb = add_queue(&st, "b", "lab", 1, (drv_res){6000, UNL, UNL}, (drv_res){0, 0, 0});
    int32_t bj = add_job(&st, qb, 0, 4, cpu1, 0); /* b runs 4 */
    for (int i = 0; i < 16; i++)
        add_job(&st, qa, 0, 1, cpu1, 1 + i);
    drv_sched *s = new_sched(&gang_plugin, true);
    cycle(s, &st, &ds);
    assert_int_equal(cpu_of(&st, qb), 4);
    assert_int_equal(cpu_of(&st, qa), 6); /* its 4 and the 2 b leaves unused */
    tu_finish(&st, bj);
    cycle(s, &st, &ds);
    assert_int_equal(cpu_of(&st, qa), 10); /* b uses nothing: 6 more, within 4 + 8 */
    int32_t bk = add_job(&st, qb, 0, 6, cpu1, 100);
    cycle(s, &st, &ds);
    assert_int_equal(bound_pods(&st, bk), 6); /* b's own quota, though a borrows it */
    for (int i = 0; i < 5; i++)
        cycle(s, &st, &ds);
    assert_int_equal(cpu_of(&st, qa), 10); /* and a takes no more */
    drv_sched_free(s);
    drv_decisions_fini(&ds);
    drv_state_fini(&st);
}

/* Many cycles of random arrivals (gangs of up to 1 PS + 4 workers, CPUs and GPUs, in three
 * queues and the default one) and completions on 4 nodes: every BIND is admitted by the rule
 * at its place in the list, and no queue ever goes beyond quota + borrowing limit; with the
 * demand far above the quotas, the queues do reach their limits and do borrow. */
static void test_random_arrivals(void **unused)
{
    (void)unused;
    for (int admit = 0; admit < 2; admit++) {
        drv_state st;
        drv_decisions ds;
        drv_decisions_init(&ds);
        tu_make_state(&st, 4, NODE, "z", "r"); /* 32 CPUs, 32 GPUs */
        int32_t qs[4] = {0, -1, -1, -1};
        qs[1] = add_queue(&st, "a", "lab", 1, (drv_res){8000, UNL, 8}, (drv_res){4000, UNL, 4});
        qs[2] = add_queue(&st, "b", "lab", 1, (drv_res){8000, UNL, 8}, (drv_res){0, 0, 0});
        qs[3] = add_queue(&st, "c", NULL, 1, (drv_res){6000, UNL, 4}, (drv_res){UNL, 0, 0});
        drv_sched *s = new_sched(admit ? &pods_plugin : &gang_plugin, admit == 0);
        uint64_t x = 88172645463325252ull;
        int borrowed = 0, full = 0;
        for (int cyc = 0; cyc < 300; cyc++) {
            for (int k = (int)(tu_rnd(&x) % 4); k > 0; k--) {
                int32_t q = qs[tu_rnd(&x) % 4];
                drv_res req = {500 + 500 * (int64_t)(tu_rnd(&x) % 4), GiB,
                               (int64_t)(tu_rnd(&x) % 3)};
                if (q == 0) /* the default queue: small, so the others find room */
                    req = (drv_res){500, GiB, 0};
                add_job(&st, q, (int)(tu_rnd(&x) % 2), 1 + (int)(tu_rnd(&x) % 4), req, cyc);
            }
            drv_res used[4];
            for (int32_t q = 0; q < 4; q++)
                used[q] = st.queues[q].used;
            drv_snapshot snap = {.st = &st, .now = cyc};
            ds.n = 0;
            assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
            for (int32_t i = 0; i < ds.n; i++) {
                const drv_decision *d = &ds.v[i];
                if (d->kind == DRV_BIND) {
                    int32_t q = st.jobs[d->job].queue;
                    drv_res r = st.jobs[d->job].role[st.pods[d->pod].role].req;
                    assert_true(reference_admits(&st, used, q, r));
                    used[q] = drv_res_add(used[q], r);
                    drv_state_bind(&st, d->pod, d->node);
                } else if (d->kind == DRV_SCALE) {
                    drv_state_set_workers(&st, d->job, (int32_t)d->value);
                }
            }
            drv_diag dg;
            assert_int_equal(drv_state_check(&st, admit == 0, &dg), 0);
            for (int32_t q = 1; q < 4; q++) {
                const drv_queue *qu = &st.queues[q];
                assert_true(qu->used.cpu <= qu->quota.cpu + (qu->cohort ? qu->borrow.cpu : 0));
                assert_true(qu->used.gpu <= qu->quota.gpu + (qu->cohort ? qu->borrow.gpu : 0));
                borrowed += qu->used.cpu > qu->quota.cpu || qu->used.gpu > qu->quota.gpu;
                full += qu->used.cpu + 2000 > qu->quota.cpu + (qu->cohort ? qu->borrow.cpu : 0);
            }
            DRV_FOR_LIVE(&st, j)
            if (st.jobs[j].phase == DRV_JOB_RUNNING && tu_rnd(&x) % 8 == 0)
                tu_finish(&st, j);
            else if (drv_job_complete(&st.jobs[j]) && st.jobs[j].phase == DRV_JOB_PENDING)
                drv_state_set_phase(&st, j, DRV_JOB_RUNNING);
        }
        assert_true(borrowed > 30); /* the rule was exercised, not just never reached */
        assert_true(full > 100);
        drv_sched_free(s);
        drv_decisions_fini(&ds);
        drv_state_fini(&st);
    }
}

/* ---- no deadlock ------------------------------------------------------------------------ */

/* Two gangs of 60 % of the cluster each, in two queues that may each take it all: one runs
 * whole, the other waits with no pod bound (never half placed, nothing requeued or timed out
 * while it waits), and runs whole once the first is done. */
static void test_no_deadlock(void **unused)
{
    (void)unused;
    drv_state st;
    drv_decisions ds;
    drv_decisions_init(&ds);
    tu_make_state(&st, 5, NODE, "z", "r"); /* 40 CPUs: each gang 24 */
    int32_t qa = add_queue(&st, "a", "lab", 1, (drv_res){20000, UNL, UNL}, (drv_res){UNL, 0, 0});
    int32_t qb = add_queue(&st, "b", "lab", 1, (drv_res){20000, UNL, UNL}, (drv_res){UNL, 0, 0});
    drv_res req = {2000, GiB, 0};
    int32_t ja = add_job(&st, qa, 1, 11, req, 0);
    int32_t jb = add_job(&st, qb, 1, 11, req, 0);
    drv_sched *s = new_sched(&gang_plugin, true);
    for (int i = 0; i < 20; i++) {
        cycle(s, &st, &ds); /* drv_state_check with gang: whole or nothing, every cycle */
        assert_int_equal(bound_pods(&st, ja), 12);
        assert_int_equal(bound_pods(&st, jb), 0);
        assert_int_equal(ds.n, i == 0 ? 12 : 0);
    }
    tu_finish(&st, ja);
    cycle(s, &st, &ds);
    assert_int_equal(bound_pods(&st, jb), 12);
    drv_sched_free(s);
    /* The control: placed pod by pod, the second is half placed (8 of its 12 pods hold 16 CPUs
     * while it cannot run), what the checks above catch and gang admission prevents. */
    int32_t jc = add_job(&st, qa, 1, 11, req, 1);
    s = new_sched(&pods_plugin, false);
    cycle(s, &st, &ds);
    assert_int_equal(bound_pods(&st, jc), 8);
    drv_diag d;
    assert_int_equal(drv_state_check(&st, true, &d), DRV_EINVARIANT);
    drv_sched_free(s);
    drv_decisions_fini(&ds);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_helpers),
        cmocka_unit_test(test_room_questions),
        cmocka_unit_test(test_borrow_unused),
        cmocka_unit_test(test_random_arrivals),
        cmocka_unit_test(test_no_deadlock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
