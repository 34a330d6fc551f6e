/*
 * A scheduler that follows a state from cycle to cycle reads again only the nodes that changed
 * (the state's change list, and the nodes its own last decisions touched): it must decide
 * exactly what a scheduler made fresh for each cycle decides, which reads every node. Both run
 * on the same random state, through a random sequence of changes made between cycles by paths
 * other than the cycle's decisions: pods bound and unbound, jobs finished, nodes relabelled,
 * cordoned and uncordoned, resized and added, new jobs, a new constraint
 * telling apart nodes that no constraint told apart before (the index grouped them together:
 * drv_nodeindex_set_classes must split them); and the cycle's own
 * decisions applied or dropped (a driver may refuse them). A second long-lived scheduler on the
 * same state runs only every third cycle: it must see every change the first one already read;
 * the first one also runs, now and then, a cycle cut short by a failed allocation.
 * Metamorphic: two ways to the same answer must agree, decision by decision.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drover/policy.h"

#define GiB (1024LL * 1024 * 1024)

static const drv_res node_shapes[] = {{16000, 64 * GiB, 0}, {32000, 128 * GiB, 2}};
static const drv_res pod_shapes[] = {
    {1000, 2 * GiB, 0}, {2000, 4 * GiB, 0}, {4000, 8 * GiB, 0}, {4000, 16 * GiB, 1}};

enum { MAX_NODES = 512 }; /* at most 60 made first, then one per mutation */

typedef struct world {
    drv_state st;
    drv_rng r;
    int32_t pool_key, pool_a, cons_a; /* label pool=a, and the constraint asking for it */
    /* Every node n is labelled tier=t(n % 3), which no constraint reads until cons_t (tier=t1)
     * is added, -1 before: until then the tiers are one group to the index. */
    int32_t tier_key, tier[3], cons_t;
    bool pool[MAX_NODES]; /* node in the pool (labelled pool=a) */
    int32_t next_node, next_job;
} world;

/* Node n's labels: its tier, and pool=a when in the pool. */
static void label_node(world *w, int32_t n)
{
    drv_label l[2] = {{w->tier_key, w->tier[n % 3]}, {w->pool_key, w->pool_a}};
    assert_int_equal(drv_state_set_node_meta(&w->st, n, l, w->pool[n] ? 2 : 1, NULL, 0), 0);
}

static void add_node(world *w)
{
    char name[16], rack[8];
    snprintf(name, sizeof name, "n%d", w->next_node++);
    snprintf(rack, sizeof rack, "r%d", (int)drv_rng_range(&w->r, 0, 3));
    int32_t id;
    assert_int_equal(
        drv_state_add_node(&w->st, name, node_shapes[drv_rng_range(&w->r, 0, 1)], "z0", rack, &id),
        0);
    assert_true(id < MAX_NODES);
    w->pool[id] = drv_rng_uniform(&w->r) < 0.3;
    label_node(w, id);
}

static void add_job(world *w)
{
    drv_job t;
    memset(&t, 0, sizeof t);
    t.phase = DRV_JOB_PENDING;
    t.submit = w->next_job++;
    int32_t nw = (int32_t)drv_rng_range(&w->r, 1, 8), ps = (int32_t)drv_rng_range(&w->r, 0, 2);
    drv_res pr = pod_shapes[drv_rng_range(&w->r, 0, 1)];
    drv_res wr = pod_shapes[drv_rng_range(&w->r, 0, 3)];
    t.role[DRV_ROLE_PS] = (drv_rolespec){ps, ps, ps, pr, pr.cpu};
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){nw, nw, nw, wr, wr.cpu * 2};
    if (drv_rng_uniform(&w->r) < 0.2)
        t.cons[DRV_ROLE_WORKER] = w->cons_a;
    else if (w->cons_t >= 0 && drv_rng_uniform(&w->r) < 0.3)
        t.cons[DRV_ROLE_WORKER] = w->cons_t;
    assert_int_equal(drv_state_add_job(&w->st, &t, NULL), 0);
}

static void world_init(world *w, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    drv_rng_seed(&w->r, seed);
    assert_int_equal(drv_state_init(&w->st), 0);
    w->pool_key = drv_strtab_intern(w->st.names, "pool");
    w->pool_a = drv_strtab_intern(w->st.names, "a");
    drv_label sel = {w->pool_key, w->pool_a};
    drv_constraint c = {.selector = &sel, .nselector = 1};
    assert_int_equal(drv_state_add_constraint(&w->st, &c, NULL, &w->cons_a), 0);
    w->tier_key = drv_strtab_intern(w->st.names, "tier");
    for (int i = 0; i < 3; i++) {
        char t[4];
        snprintf(t, sizeof t, "t%d", i);
        w->tier[i] = drv_strtab_intern(w->st.names, t);
    }
    w->cons_t = -1;
    int32_t nn = (int32_t)drv_rng_range(&w->r, 6, 60);
    for (int32_t i = 0; i < nn; i++)
        add_node(w);
    int32_t nj = (int32_t)drv_rng_range(&w->r, 5, 40);
    for (int32_t i = 0; i < nj; i++)
        add_job(w);
}

/* Jobs whose wanted pods are all bound start running; running ones with a pod missing wait
 * again (a pod unbound by another path). */
static void settle(drv_state *st)
{
    DRV_FOR_LIVE(st, j)
    {
        const drv_job *job = &st->jobs[j];
        if (job->phase == DRV_JOB_PENDING && drv_job_complete(job))
            drv_state_set_phase(st, j, DRV_JOB_RUNNING);
        else if (job->phase == DRV_JOB_RUNNING && !drv_job_complete(job))
            drv_state_set_phase(st, j, DRV_JOB_PENDING);
    }
}

static void apply(drv_state *st, const drv_decisions *ds)
{
    for (int32_t i = 0; i < ds->n; i++)
        if (ds->v[i].kind == DRV_BIND && st->pods[ds->v[i].pod].node < 0)
            drv_state_bind(st, ds->v[i].pod, ds->v[i].node);
    settle(st);
}

/* A random live job, or -1. */
static int32_t some_job(world *w, int phase)
{
    int32_t pick = -1, seen = 0;
    DRV_FOR_LIVE(&w->st, j)
    if (w->st.jobs[j].phase == phase && drv_rng_range(&w->r, 0, seen++) == 0)
        pick = j;
    return pick;
}

/* One change by a path other than the cycle's decisions. */
static void mutate(world *w)
{
    drv_state *st = &w->st;
    int32_t n = (int32_t)drv_rng_range(&w->r, 0, st->nnodes - 1);
    drv_node *nd = &st->nodes[n];
    int32_t j;
    switch (drv_rng_range(&w->r, 0, 8)) {
    case 0: /* a job ends: its room is freed */
        if ((j = some_job(w, DRV_JOB_RUNNING)) >= 0) {
            for (int32_t k = 0; k < st->jobs[j].pod_count; k++)
                drv_state_unbind(st, st->jobs[j].pod_base + k);
            drv_state_set_phase(st, j, DRV_JOB_DONE);
        }
        break;
    case 1: /* one pod lost (its node's room grows); its job waits for it again */
        if ((j = some_job(w, DRV_JOB_RUNNING)) >= 0)
            drv_state_unbind(st, st->jobs[j].pod_base);
        break;
    case 2: { /* a pod bound by someone else, where it fits */
        if ((j = some_job(w, DRV_JOB_PENDING)) < 0)
            break;
        for (int32_t k = 0; k < st->jobs[j].pod_count; k++) {
            int32_t pod = st->jobs[j].pod_base + k;
            const drv_pod *p = &st->pods[pod];
            if (p->node < 0 && st->jobs[j].bound[p->role] < st->jobs[j].target[p->role] &&
                drv_res_fits(st->jobs[j].role[p->role].req, drv_node_free(nd))) {
                drv_state_bind(st, pod, n);
                break;
            }
        }
        break;
    }
    case 3: /* relabelled: in the pool or out of it */
        w->pool[n] = !w->pool[n];
        label_node(w, n);
        break;
    case 4: /* cordoned or uncordoned */
        drv_state_set_node(st, n, nd->alloc, !nd->schedulable);
        break;
    case 5: { /* allocatable changes, never below what is bound there */
        drv_res a = node_shapes[drv_rng_range(&w->r, 0, 1)];
        if (drv_res_fits(nd->used, a))
            drv_state_set_node(st, n, a, nd->schedulable);
        break;
    }
    case 6:
        add_node(w);
        break;
    case 7: /* tier t1 asked for: its nodes no longer stand with the other tiers' */
        if (w->cons_t < 0) {
            drv_label sel = {w->tier_key, w->tier[1]};
            drv_constraint c = {.selector = &sel, .nselector = 1};
            assert_int_equal(drv_state_add_constraint(st, &c, NULL, &w->cons_t), 0);
        }
        add_job(w);
        break;
    default:
        add_job(w);
        break;
    }
    settle(st);
}

static void expect_same(const drv_decisions *a, const drv_decisions *b, const char *line,
                        uint64_t seed, int step, const char *who, int64_t *compared)
{
    for (int32_t i = 0; i < a->n || i < b->n; i++) {
        if (i >= a->n || i >= b->n || a->v[i].kind != b->v[i].kind || a->v[i].pod != b->v[i].pod ||
            a->v[i].node != b->v[i].node || a->v[i].from != b->v[i].from ||
            a->v[i].value != b->v[i].value)
            fail_msg("%s, seed %llu, cycle %d: %s decision %d differs: pod %d -> node %d "
                     "against a fresh scheduler's pod %d -> node %d",
                     line, (unsigned long long)seed, step, who, i, i < a->n ? a->v[i].pod : -1,
                     i < a->n ? a->v[i].node : -1, i < b->n ? b->v[i].pod : -1,
                     i < b->n ? b->v[i].node : -1);
        (*compared)++;
    }
}

static void run_cycle(drv_sched *s, drv_state *st, int step, drv_decisions *out)
{
    drv_snapshot snap = {.st = st, .now = step};
    out->n = 0;
    assert_int_equal(drv_sched_cycle(s, &snap, out), 0);
}

/* 40 cycles of one profile on one random world; returns the decisions compared. */
static int64_t follow(const char *line, uint64_t seed, bool exhaustive)
{
    drv_diag d;
    drv_profile p;
    assert_int_equal(drv_profile_parse("t", line, &p, &d), 0);
    world w;
    world_init(&w, seed);
    drv_sched *inc, *inc2;
    assert_int_equal(drv_sched_new(&p, &inc, &d), 0);
    assert_int_equal(drv_sched_new(&p, &inc2, &d), 0);
    drv_sched_set_exhaustive(inc, exhaustive);
    drv_decisions a, b, c;
    drv_decisions_init(&a);
    drv_decisions_init(&b);
    drv_decisions_init(&c);
    int64_t compared = 0;
    for (int step = 0; step < 40; step++) {
        drv_sched *fresh;
        assert_int_equal(drv_sched_new(&p, &fresh, &d), 0);
        if (drv_rng_uniform(&w.r) < 0.2) { /* a cycle cut short by a failed allocation, its
                                              decisions dropped: the next must not care */
            drv_snapshot snap = {.st = &w.st, .now = step};
            a.n = 0;
            drv_alloc_fail_at(drv_rng_range(&w.r, 1, 8));
            int rc = drv_sched_cycle(inc, &snap, &a);
            drv_alloc_fail_at(0);
            assert_true(rc == 0 || rc == DRV_ENOMEM);
        }
        run_cycle(inc, &w.st, step, &a);
        run_cycle(fresh, &w.st, step, &b);
        expect_same(&a, &b, line, seed, step, "the following scheduler's", &compared);
        if (step % 3 == 2) {
            run_cycle(inc2, &w.st, step, &c);
            expect_same(&c, &b, line, seed, step, "the second follower's", &compared);
        }
        drv_sched_free(fresh);
        if (drv_rng_uniform(&w.r) < 0.6) /* else the driver refused them all */
            apply(&w.st, &a);
        for (int64_t k = drv_rng_range(&w.r, 0, 6); k > 0; k--)
            mutate(&w);
        drv_diag cd;
        assert_int_equal(drv_state_check(&w.st, false, &cd), 0);
    }
    drv_decisions_fini(&a);
    drv_decisions_fini(&b);
    drv_decisions_fini(&c);
    drv_sched_free(inc);
    drv_sched_free(inc2);
    drv_state_fini(&w.st);
    return compared;
}

static void test_follower_decides_as_fresh(void **unused)
{
    (void)unused;
    static const char *lines[] = {
        "gang=true admit=gang score=least-allocated",
        "gang=true admit=gang score=locality*4,ps-anti-affinity,least-allocated",
        "gang=false admit=pod-by-pod score=most-allocated",
    };
    int64_t compared = 0;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        for (uint64_t seed = 1; seed <= 12; seed++) {
            compared += follow(lines[i], seed * 31 + i, false);
            compared += follow(lines[i], seed * 37 + i, true); /* no index: maxfree scanned */
        }
    print_message("compared %lld\n", (long long)compared);
    assert_true(compared > 3000); /* the comparison saw real work */
}

/* The change list: each node once, in order of its last change, and a reader's clock finds
 * exactly the nodes changed after it. */
static void test_change_list(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    drv_res a = {8000, 8 * GiB, 0};
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(drv_state_add_node(&st, name, a, NULL, NULL, NULL), 0);
    }
    uint64_t seen = st.node_clock, epoch = st.node_epoch;
    drv_state_set_node(&st, 2, a, true); /* no change: nothing to read again */
    assert_true(st.node_clock == seen);
    drv_state_set_node(&st, 1, a, false);
    assert_true(st.node_epoch == epoch + 1);
    drv_state_node_changed(&st, 3, false);
    drv_state_node_changed(&st, 1, false); /* moves to the tail */
    assert_true(st.node_epoch == epoch + 1);
    int32_t got[8], n = 0;
    DRV_FOR_NODES_CHANGED(&st, seen, x)
    got[n++] = x;
    assert_int_equal(n, 2);
    assert_int_equal(got[0], 1);
    assert_int_equal(got[1], 3);
    n = 0; /* from the start: every node, once */
    DRV_FOR_NODES_CHANGED(&st, 0, x)
    got[n++] = x;
    assert_int_equal(n, 4);
    assert_int_equal(got[2], 2);
    assert_int_equal(got[3], 0);
    drv_diag d;
    assert_int_equal(drv_state_check(&st, false, &d), 0);
    uint64_t s3 = st.node_stamp[3];
    st.node_stamp[3] = st.node_stamp[1] + 1; /* out of order: the invariants must say so */
    assert_int_equal(drv_state_check(&st, false, &d), DRV_EINVARIANT);
    st.node_stamp[3] = s3;
    int32_t p1 = st.node_prev[1];
    st.node_prev[1] = -1; /* a broken back link */
    assert_int_equal(drv_state_check(&st, false, &d), DRV_EINVARIANT);
    st.node_prev[1] = p1;
    assert_int_equal(drv_state_check(&st, false, &d), 0);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_follower_decides_as_fresh),
                                       cmocka_unit_test(test_change_list)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
