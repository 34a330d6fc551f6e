/*
 * Tests of the cycle's mechanics in src/core on hand-built states, with admit plugins written
 * here: gang placement and its rollback, shrinking below a job's workers, queues and their
 * quotas, the failed-gang memo (kept, cleared when a node changes, forgotten on rollback),
 * queue keys kept from one cycle to the next, drv_ctx_gang_room, drv_ctx_queue_stuck, and a
 * profile without an admit plugin refused.
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

/* Every node of these tests' clusters (tu_make_state, zone "z", rack "r"): 8 CPUs / 32 GiB. */
static const drv_res NODE8 = {8000, 32 * GiB, 0};

/* A gang admit plugin for the cycle tests: place each job whole at its requested size. */
static void admit_whole(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &drv_ctx_state(c)->jobs[jobs[i]];
        drv_ctx_place_gang(c, jobs[i], j->role[DRV_ROLE_WORKER].replicas);
    }
}

static const drv_plugin admit_plugin = {
    .name = "test-admit", .admit = admit_whole, .starts_blind = drv_starts_blind};

/* A gang scheduler whose only plugin is one admit plugin. */
static drv_sched *gang_sched(const drv_plugin *admit)
{
    /* A scheduler borrows its profile (drv_sched_new): the profiles live here, a ring of 8 (no
     * test has more schedulers alive at once). */
    static drv_profile ring[8];
    static int next;
    drv_profile *prof = &ring[next++ % 8];
    drv_diag d;
    memset(prof, 0, sizeof *prof);
    strcpy(prof->name, "test");
    prof->gang = true;
    prof->use[DRV_PT_ADMIT][0].p = admit;
    prof->nuse[DRV_PT_ADMIT] = 1;
    drv_sched *s;
    assert_int_equal(drv_sched_new(prof, &s, &d), 0);
    return s;
}

static void test_cycle_gang_rollback(void **unused)
{
    (void)unused;
    drv_state st;
    drv_diag d;
    tu_make_state(&st, 2, NODE8, "z", "r");             /* 16 CPUs in all */
    int32_t a = tu_add_job(&st, "a", 1, 3, 3, 3, 3000); /* 12 CPUs: fits */
    int32_t b = tu_add_job(&st, "b", 1, 2, 2, 2, 3000); /* 9 CPUs: cannot fit after a */
    int32_t c = tu_add_job(&st, "c", 0, 1, 1, 1, 2000); /* 2 CPUs: fits after a */
    drv_sched *s = gang_sched(&admit_plugin);
    drv_snapshot snap = {.st = &st, .now = 0};
    drv_decisions ds;
    drv_decisions_init(&ds);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    /* a: 4 binds, b: rolled back entirely, c: 1 bind. */
    assert_int_equal(ds.n, 5);
    for (int32_t i = 0; i < ds.n; i++) {
        assert_int_equal(ds.v[i].kind, DRV_BIND);
        assert_int_not_equal(ds.v[i].job, b);
    }
    assert_int_equal(ds.v[4].job, c);
    assert_false(drv_sched_starts_blind(s)); /* it decided something */
    tu_apply(&st, &ds);
    assert_int_equal(drv_state_check(&st, true, &d), 0);
    assert_true(drv_job_complete(&st.jobs[a]));
    assert_int_equal(st.jobs[b].bound[DRV_ROLE_PS], 0);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* A gang that failed because no node admitted it is tried again once a node changes what it
 * admits (its taint lifted, a cordon lifted), though no capacity was freed: the failed-gang
 * memo must not outlive the change. Two jobs of the same shape fail in turn. */
static void test_memo_cleared_by_node_change(void **unused)
{
    (void)unused;
    drv_state st;
    drv_diag d;
    tu_make_state(&st, 2, NODE8, "z", "r");
    drv_taint t = {drv_strtab_intern(st.names, "gpu"), drv_strtab_intern(st.names, "true"),
                   DRV_EFFECT_NO_SCHEDULE};
    assert_int_equal(drv_state_set_node_meta(&st, 0, NULL, 0, &t, 1), 0);
    drv_state_set_node(&st, 1, st.nodes[1].alloc, false); /* cordoned */
    int32_t a = tu_add_job(&st, "a", 0, 1, 1, 1, 4000);
    drv_sched *s = gang_sched(&admit_plugin);
    drv_snapshot snap = {.st = &st, .now = 0};
    drv_decisions ds;
    drv_decisions_init(&ds);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(ds.n, 0); /* tainted and cordoned: nowhere */
    int32_t b = tu_add_job(&st, "b", 0, 1, 1, 1, 4000);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(ds.n, 0);
    /* the taint goes: node 0's class changes, nothing is freed */
    assert_int_equal(drv_state_set_node_meta(&st, 0, NULL, 0, NULL, 0), 0);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(ds.n, 2); /* both fit on node 0 (8 CPUs) */
    tu_apply(&st, &ds);
    assert_true(drv_job_complete(&st.jobs[a]) && drv_job_complete(&st.jobs[b]));
    /* node 0 full; a third job fails, then the cordon on node 1 is lifted */
    int32_t c = tu_add_job(&st, "c", 0, 1, 1, 1, 4000);
    ds.n = 0;
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(ds.n, 0);
    drv_state_set_node(&st, 1, st.nodes[1].alloc, true);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(ds.n, 1);
    assert_int_equal(ds.v[0].job, c);
    assert_int_equal(ds.v[0].node, 1);
    tu_apply(&st, &ds);
    assert_int_equal(drv_state_check(&st, true, &d), 0);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* An admit plugin that holds job 0's gang tentatively, finds job 1's gang not fitting beside
 * it, rolls job 0 back and asks for job 1 again (as autoscale-operator's growth rounds do):
 * records each answer. */
static int memo_seen[2];
static void admit_memo_probe(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    (void)jobs;
    (void)n;
    drv_mark m = drv_ctx_mark(c);
    assert_int_equal(drv_ctx_place_gang(c, 0, 1), 1);
    memo_seen[0] = drv_ctx_place_gang(c, 1, 2);
    drv_ctx_rollback(c, m);
    memo_seen[1] = drv_ctx_place_gang(c, 1, 2);
}

static const drv_plugin memo_probe_plugin = {.name = "test-memo", .admit = admit_memo_probe};

/* A gang found not to fit while another's tentative binds were held fits once they are rolled
 * back: the failed-gang memo must not outlive the room it was recorded against. */
static void test_memo_forgotten_on_rollback(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 2, NODE8, "z", "r");
    tu_add_job(&st, "a", 0, 1, 1, 1, 5000); /* on one node */
    tu_add_job(&st, "b", 0, 2, 2, 2, 5000); /* in all, the room is there beside a; one per node is
                                            not: found in placement, not by the bounds */
    drv_sched *s = gang_sched(&memo_probe_plugin);
    drv_snapshot snap = {.st = &st, .now = 0};
    drv_decisions ds;
    drv_decisions_init(&ds);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(memo_seen[0], 0); /* beside a: no room */
    assert_int_equal(memo_seen[1], 1); /* a rolled back: room again */
    assert_int_equal(ds.n, 2);
    for (int32_t i = 0; i < ds.n; i++)
        assert_int_equal(st.pods[ds.v[i].pod].job, 1);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* An admit plugin that places job 1's gang, rolls it back and places it again, recording the
 * assumed use of queue 1 at each step. */
static drv_res queue_seen[4];
static void admit_queue_probe(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    (void)jobs;
    (void)n;
    queue_seen[0] = drv_ctx_queue_used(c, 1);
    drv_mark m = drv_ctx_mark(c);
    assert_int_equal(drv_ctx_place_gang(c, 1, 2), 1);
    queue_seen[1] = drv_ctx_queue_used(c, 1);
    drv_ctx_rollback(c, m);
    queue_seen[2] = drv_ctx_queue_used(c, 1);
    assert_int_equal(drv_ctx_place_gang(c, 1, 2), 1);
    queue_seen[3] = drv_ctx_queue_used(c, 1);
}

static const drv_plugin queue_probe_plugin = {.name = "test-queue", .admit = admit_queue_probe};

/* Queues: the default queue is made with the first, names are unique, bad numbers refused;
 * a queue's use follows binds, survives a change of quota, is checked as an invariant, and the
 * cycle's assumed use follows its binds and rollbacks. */
static void test_queues(void **unused)
{
    (void)unused;
    drv_state st;
    drv_diag d;
    tu_make_state(&st, 2, NODE8, "z", "r");
    int32_t early = tu_add_job(&st, "early", 0, 1, 1, 1, 1000); /* before any queue: queue 0 */
    drv_state_bind(&st, st.jobs[early].pod_base, 0);
    drv_queue q = {.name = drv_strtab_intern(st.names, "team-a"),
                   .weight = 2,
                   .quota = {4000, 64 * GiB, 0},
                   .borrow = {1000, 0, 0}};
    int32_t qa = -1;
    assert_int_equal(drv_state_add_queue(&st, &q, &qa), 0);
    assert_int_equal(qa, 1);
    assert_int_equal(st.nqueues, 2);
    assert_string_equal(drv_strtab_str(st.names, st.queues[0].name), "default");
    assert_int_equal(st.queues[0].used.cpu, 1000); /* what was bound before */
    assert_int_equal(st.queues[0].quota.cpu, DRV_UNLIMITED);
    assert_int_equal(drv_state_add_queue(&st, &q, NULL), DRV_EEXIST);
    assert_int_equal(drv_state_find_queue(&st, q.name), 1);
    assert_int_equal(drv_state_find_queue(&st, drv_strtab_intern(st.names, "nope")), -1);
    drv_queue bad = q;
    bad.name = drv_strtab_intern(st.names, "bad");
    bad.weight = 0;
    assert_int_equal(drv_state_add_queue(&st, &bad, NULL), DRV_EINVAL);
    bad.weight = 1;
    bad.quota.gpu = -1;
    assert_int_equal(drv_state_add_queue(&st, &bad, NULL), DRV_EINVAL);

    /* a job naming queue 1 (added after it), one naming a queue that does not exist */
    drv_job t;
    memset(&t, 0, sizeof t);
    t.name = drv_strtab_intern(st.names, "j1");
    t.phase = DRV_JOB_PENDING;
    t.queue = 1;
    t.role[DRV_ROLE_PS] = (drv_rolespec){1, 1, 1, {1000, GiB, 0}, 1000};
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){2, 2, 2, {1500, GiB, 0}, 1500};
    int32_t j1;
    assert_int_equal(drv_state_add_job(&st, &t, &j1), 0);
    t.queue = 7;
    assert_int_equal(drv_state_add_job(&st, &t, NULL), DRV_EINVAL);

    /* the cycle: job `early` (queue 0) is bound; j1's gang uses 4000m of queue 1 */
    drv_sched *s = gang_sched(&queue_probe_plugin);
    drv_snapshot snap = {.st = &st, .now = 0};
    drv_decisions ds;
    drv_decisions_init(&ds);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(queue_seen[0].cpu, 0);
    assert_int_equal(queue_seen[1].cpu, 4000);
    assert_int_equal(queue_seen[2].cpu, 0);
    assert_int_equal(queue_seen[3].cpu, 4000);
    assert_int_equal(queue_seen[3].mem, 3 * GiB);
    tu_apply(&st, &ds);
    assert_int_equal(st.queues[1].used.cpu, 4000);
    assert_int_equal(drv_state_check(&st, true, &d), 0);

    /* a new quota keeps the use; a drifted use is an invariant violation */
    q.quota.cpu = 2000;
    assert_int_equal(drv_state_set_queue(&st, 1, &q), 0);
    assert_int_equal(st.queues[1].used.cpu, 4000);
    assert_int_equal(st.queues[1].quota.cpu, 2000);
    q.weight = -1;
    assert_int_equal(drv_state_set_queue(&st, 1, &q), DRV_EINVAL);
    st.queues[1].used.cpu++;
    assert_int_equal(drv_state_check(&st, true, &d), DRV_EINVARIANT);
    assert_non_null(strstr(d.msg, "queue team-a"));
    st.queues[1].used.cpu--;
    drv_state_unbind(&st, st.jobs[j1].pod_base);
    assert_int_equal(st.queues[1].used.cpu, 3000);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* An admit plugin that only says "job 0 now wants 2 workers". */
static void admit_shrink(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    (void)jobs;
    (void)n;
    assert_int_equal(drv_ctx_scale(c, 0, 2), 0);
}

static const drv_plugin shrink_plugin = {.name = "test-shrink", .admit = admit_shrink};

/* A SCALE below the workers bound evicts the surplus first, highest slots first; one that
 * evicted its own victims first (DRAGON's relief) has nothing left to take. */
static void test_scale_down_evicts_surplus(void **unused)
{
    (void)unused;
    drv_state st;
    drv_diag d;
    tu_make_state(&st, 2, NODE8, "z", "r");
    int32_t j = tu_add_job(&st, "a", 1, 1, 4, 4, 1000);
    for (int k = 0; k < st.jobs[j].pod_count; k++)
        drv_state_bind(&st, st.jobs[j].pod_base + k, k % 2);
    drv_state_set_phase(&st, j, DRV_JOB_RUNNING);
    drv_sched *s = gang_sched(&shrink_plugin);
    drv_snapshot snap = {.st = &st, .now = 0};
    drv_decisions ds;
    drv_decisions_init(&ds);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(ds.n, 3);
    assert_int_equal(ds.v[0].kind, DRV_EVICT);
    assert_int_equal(ds.v[0].pod, drv_job_pod(&st, j, DRV_ROLE_WORKER, 3));
    assert_int_equal(ds.v[0].reason, DRV_REASON_SHRINK);
    assert_int_equal(ds.v[1].kind, DRV_EVICT);
    assert_int_equal(ds.v[1].pod, drv_job_pod(&st, j, DRV_ROLE_WORKER, 2));
    assert_int_equal(ds.v[2].kind, DRV_SCALE);
    assert_int_equal(ds.v[2].value, 2);
    for (int32_t i = 0; i < ds.n; i++)
        if (ds.v[i].kind == DRV_EVICT)
            drv_state_unbind(&st, ds.v[i].pod);
        else
            drv_state_set_workers(&st, ds.v[i].job, (int32_t)ds.v[i].value);
    assert_int_equal(drv_state_check(&st, true, &d), 0);
    assert_int_equal(st.jobs[j].bound[DRV_ROLE_WORKER], 2);
    /* Already at 2 bound: a second shrink to 2 is no decision, and one to 1 evicts one. */
    ds.n = 0;
    snap.now = 1;
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(ds.n, 0);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* A keyed queue plugin whose keys come from a table, counting how often it is asked, and
 * saying through queue_kept whether they changed; an admit plugin that records its queue. */
typedef struct keyed_state {
    double key[8];
    bool kept;
    int asked;
    int32_t seen[8], nseen;
} keyed_state;

static keyed_state keyed;

static double table_key(const drv_ctx *c, void *state, int32_t job)
{
    (void)c;
    (void)state;
    keyed.asked++;
    return keyed.key[job];
}

static bool table_kept(const drv_ctx *c, void *state)
{
    (void)c;
    (void)state;
    return keyed.kept;
}

static void admit_record(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)c;
    (void)state;
    keyed.nseen = n;
    memcpy(keyed.seen, jobs, (size_t)n * sizeof *jobs);
}

static const drv_plugin table_plugin = {.name = "test-table",
                                        .queue_key = table_key,
                                        .queue_kept = table_kept,
                                        .starts_blind = drv_starts_blind};
static const drv_plugin record_plugin = {.name = "test-record", .admit = admit_record};
static const drv_plugin blind_record_plugin = {
    .name = "test-record", .admit = admit_record, .starts_blind = drv_starts_blind};

static void assert_queue(const int32_t *want, int32_t n)
{
    assert_int_equal(keyed.nseen, n);
    for (int32_t i = 0; i < n; i++)
        assert_int_equal(keyed.seen[i], want[i]);
}

/* The core orders by key, then submit time, then id; it keeps the keys of jobs already queued
 * when queue_kept says they did not change, asking only newcomers, and asks every job again
 * when it says they did. */
static void test_queue_keys_kept(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 1, NODE8, "z", "r");
    int32_t j[4];
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "j%d", i);
        j[i] = tu_add_job(&st, name, 0, 1, 1, 1, 100000); /* fits nowhere: stays queued */
    }
    st.jobs[j[1]].submit = 5; /* the same key for j1 and j2: the earlier submission first */
    st.jobs[j[2]].submit = 1;
    memset(&keyed, 0, sizeof keyed);
    keyed.key[j[0]] = 2;
    keyed.key[j[1]] = keyed.key[j[2]] = 1;
    drv_profile prof;
    memset(&prof, 0, sizeof prof);
    strcpy(prof.name, "test");
    prof.gang = true;
    prof.use[DRV_PT_QUEUE_ORDER][0].p = &table_plugin;
    prof.nuse[DRV_PT_QUEUE_ORDER] = 1;
    prof.use[DRV_PT_ADMIT][0].p = &record_plugin;
    prof.nuse[DRV_PT_ADMIT] = 1;
    drv_sched *s;
    drv_diag d;
    assert_int_equal(drv_sched_new(&prof, &s, &d), 0);
    drv_snapshot snap = {.st = &st, .now = 0};
    drv_decisions ds;
    drv_decisions_init(&ds);
    keyed.kept = true; /* no previous cycle: every key is asked all the same */
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(keyed.asked, 3);
    assert_queue((int32_t[]){j[2], j[1], j[0]}, 3);
    /* Kept: the new table is not read for j0..j2; the newcomer j3 is asked. */
    j[3] = tu_add_job(&st, "j3", 0, 1, 1, 1, 100000);
    keyed.key[j[0]] = 0;
    keyed.key[j[3]] = 1.5;
    keyed.asked = 0;
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(keyed.asked, 1);
    assert_queue((int32_t[]){j[2], j[1], j[3], j[0]}, 4);
    /* Not kept: every key is asked again, and j0's new key puts it first. */
    keyed.kept = false;
    keyed.asked = 0;
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(keyed.asked, 4);
    assert_queue((int32_t[]){j[0], j[2], j[1], j[3]}, 4);
    /* A job that leaves the queue leaves the kept order too. */
    drv_state_set_phase(&st, j[2], DRV_JOB_DONE);
    keyed.kept = true;
    keyed.asked = 0;
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_int_equal(keyed.asked, 0);
    assert_queue((int32_t[]){j[0], j[1], j[3]}, 3);
    assert_int_equal(ds.n, 0);
    /* Blind to starts only when every plugin says so: record_plugin has no starts_blind. */
    assert_false(drv_sched_starts_blind(s));
    drv_sched_free(s);
    prof.use[DRV_PT_ADMIT][0].p = &blind_record_plugin;
    assert_int_equal(drv_sched_new(&prof, &s, &d), 0);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_true(drv_sched_starts_blind(s));
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* An admit plugin that records drv_ctx_gang_room for job 0 at 1..4 workers, then places it at
 * 4 workers. */
static bool room[5];
static int placed;
static void admit_room(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    (void)jobs;
    (void)n;
    for (int w = 1; w <= 4; w++)
        room[w] = drv_ctx_gang_room(c, 0, w);
    placed = drv_ctx_place_gang(c, 0, 4);
}

static const drv_plugin room_plugin = {.name = "test-room", .admit = admit_room};

/* drv_ctx_gang_room is false exactly when the free room of all nodes together (or of the
 * largest node, for one pod) cannot hold what the gang misses; a gang it refuses is not placed
 * and leaves no decision. */
static void test_gang_room(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 2, NODE8, "z", "r"); /* 2 x 8 CPUs */
    tu_add_job(&st, "a", 1, 1, 4, 4, 3000); /* PS + w workers: 3 (1 + w) CPUs */
    drv_sched *s = gang_sched(&room_plugin);
    drv_snapshot snap = {.st = &st, .now = 0};
    drv_decisions ds;
    drv_decisions_init(&ds);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    /* 6, 9 and 12 CPUs are within 16; 15 too, but 5 pods of 3 CPUs fit 2 nodes of 8 only as
     * 2 + 2: the bound passes it, the placement fails. */
    assert_true(room[1] && room[2] && room[3] && room[4]);
    assert_int_equal(placed, 0);
    assert_int_equal(ds.n, 0);
    drv_sched_free(s);
    drv_state_fini(&st);
    tu_make_state(&st, 2, NODE8, "z", "r");
    tu_add_job(&st, "b", 1, 1, 4, 4, 5000); /* 10, 15: within 16; 20, 25: not */
    s = gang_sched(&room_plugin);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_true(room[1] && room[2]);
    assert_false(room[3] || room[4]);
    assert_int_equal(placed, 0);
    assert_int_equal(ds.n, 0);
    drv_sched_free(s);
    drv_state_fini(&st);
    tu_make_state(&st, 2, NODE8, "z", "r");
    tu_add_job(&st, "c", 1, 1, 1, 4, 9000); /* each pod larger than any node */
    s = gang_sched(&room_plugin);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    assert_false(room[1] || room[2] || room[3] || room[4]);
    assert_int_equal(ds.n, 0);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* An admit plugin that records drv_ctx_queue_stuck, then binds job 0's first pod to node 0 when
 * bind_first is set, and asks again. */
static bool stuck[2], bind_first;
static void admit_stuck(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    (void)state;
    (void)jobs;
    (void)n;
    stuck[0] = drv_ctx_queue_stuck(c);
    if (bind_first)
        assert_int_equal(drv_ctx_bind(c, drv_ctx_state(c)->jobs[0].pod_base, 0), 0);
    stuck[1] = drv_ctx_queue_stuck(c);
}

static const drv_plugin stuck_plugin = {.name = "test-stuck", .admit = admit_stuck};

static bool stuck_at_start(drv_state *st)
{
    drv_sched *s = gang_sched(&stuck_plugin);
    drv_snapshot snap = {.st = st, .now = 0};
    drv_decisions ds;
    drv_decisions_init(&ds);
    assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    return stuck[0];
}

/* The queue is stuck when no pod of it fits anywhere, no queued job has a pod bound and every
 * gang at the minimum has a pod; each condition alone undoes it. */
static void test_queue_stuck(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 2, NODE8, "z", "r"); /* 8 CPUs each */
    tu_add_job(&st, "big", 0, 1, 2, 2, 9000);
    assert_true(stuck_at_start(&st));
    int32_t small = tu_add_job(&st, "small", 0, 1, 1, 1, 8000); /* fits a node exactly */
    assert_false(stuck_at_start(&st));
    drv_state_set_phase(&st, small, DRV_JOB_DONE);
    assert_true(stuck_at_start(&st));
    /* no worker at the minimum and no PS: its smallest gang has no pod */
    int32_t none = tu_add_job(&st, "none", 0, 0, 1, 1, 9000);
    assert_false(stuck_at_start(&st));
    drv_state_set_phase(&st, none, DRV_JOB_DONE);
    /* a PS bound, its workers too large: still queued, with a pod bound */
    int32_t half = tu_add_job(&st, "half", 1, 1, 1, 1, 9000);
    st.jobs[half].role[DRV_ROLE_PS].req.cpu = 1000; /* (the state's own counts stay right) */
    drv_state_bind(&st, drv_job_pod(&st, half, DRV_ROLE_PS, 0), 1);
    assert_int_equal(st.nqueued_bound, 1);
    assert_false(stuck_at_start(&st));
    drv_state_unbind(&st, drv_job_pod(&st, half, DRV_ROLE_PS, 0));
    assert_int_equal(st.nqueued_bound, 0);
    drv_state_set_phase(&st, half, DRV_JOB_DONE);
    assert_true(stuck_at_start(&st));
    drv_state_fini(&st);
    /* Once a decision is made, it no longer says so. */
    tu_make_state(&st, 1, NODE8, "z", "r");
    tu_add_job(&st, "a", 0, 1, 1, 1, 9000);
    bind_first = true; /* (drv_ctx_bind checks no room: the cycle's helpers do) */
    assert_true(stuck_at_start(&st));
    assert_false(stuck[1]);
    bind_first = false;
    drv_state_fini(&st);
}

static void test_cycle_without_admit_is_refused(void **unused)
{
    (void)unused;
    drv_profile prof;
    memset(&prof, 0, sizeof prof);
    strcpy(prof.name, "empty");
    drv_sched *s = NULL;
    drv_diag d;
    assert_int_equal(drv_sched_new(&prof, &s, &d), DRV_EINVAL);
    assert_null(s);
    assert_non_null(strstr(d.msg, "no admit plugin"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cycle_gang_rollback),
        cmocka_unit_test(test_scale_down_evicts_surplus),
        cmocka_unit_test(test_queues),
        cmocka_unit_test(test_memo_forgotten_on_rollback),
        cmocka_unit_test(test_memo_cleared_by_node_change),
        cmocka_unit_test(test_queue_keys_kept),
        cmocka_unit_test(test_gang_room),
        cmocka_unit_test(test_queue_stuck),
        cmocka_unit_test(test_cycle_without_admit_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
