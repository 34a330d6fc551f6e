/*
 * The best-node index must decide exactly what scanning every node decides, with the real score
 * plugins that have bounds (locality, ps-anti-affinity, least-allocated, most-allocated): one
 * scheduler uses the index, a second one is told to scan (drv_sched_set_exhaustive), both run
 * cycles on the same random states, and their decision lists must be equal, entry by entry.
 *
 * States: heterogeneous nodes in several zones and racks (some unlabelled), part of them
 * already holding running jobs with PS pods (so anti-affinity and locality have something to
 * see), and pending gangs of PS + workers of mixed shapes; both schedulers' decisions are
 * applied between cycles so later cycles start from spread, partly filled clusters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drover/policy.h"

#define GiB (1024LL * 1024 * 1024)

/* layout 0: nodes spread over random zones and racks, some unlabelled; 1: one zone; 2: one
 * zone and one rack per node type. In 1 and 2 a zone or rack group holds every node of its type
 * (the index shares such a group's tree with the global one). */
static void make_state(drv_state *st, drv_rng *r, int layout)
{
    static const drv_res shapes[] = {
        {16000, 64 * GiB, 0}, {32000, 128 * GiB, 0}, {64000, 256 * GiB, 4}};
    static const drv_res pods[] = {
        {1000, 2 * GiB, 0}, {2000, 4 * GiB, 0}, {4000, 8 * GiB, 0}, {4000, 16 * GiB, 1}};
    assert_int_equal(drv_state_init(st), 0);
    int32_t nn = (int32_t)drv_rng_range(r, 10, 400);
    for (int32_t i = 0; i < nn; i++) {
        char name[16], zone[8], rack[8];
        snprintf(name, sizeof name, "n%d", i);
        snprintf(zone, sizeof zone, "z%d", layout ? 0 : (int)drv_rng_range(r, 0, 2));
        snprintf(rack, sizeof rack, "r%d", (int)drv_rng_range(r, 0, 7));
        bool labelled = drv_rng_uniform(r) > 0.1 || layout;
        int64_t shape = drv_rng_range(r, 0, 2);
        if (layout == 2)
            snprintf(rack, sizeof rack, "r%d", (int)shape);
        assert_int_equal(drv_state_add_node(st, name, shapes[shape], labelled ? zone : "",
                                            labelled ? rack : "", NULL),
                         0);
    }
    int32_t nj = (int32_t)drv_rng_range(r, 5, 80);
    for (int32_t jn = 0; jn < nj; jn++) {
        drv_job t;
        memset(&t, 0, sizeof t);
        t.phase = DRV_JOB_PENDING;
        t.submit = jn;
        int32_t w = (int32_t)drv_rng_range(r, 1, 24), ps = (int32_t)drv_rng_range(r, 0, 3);
        drv_res pr = pods[drv_rng_range(r, 0, 2)], wr = pods[drv_rng_range(r, 0, 3)];
        t.role[DRV_ROLE_PS] = (drv_rolespec){ps, ps, ps, pr, pr.cpu};
        t.role[DRV_ROLE_WORKER] = (drv_rolespec){w, w, w, wr, wr.cpu};
        int32_t id;
        assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    }
}

/* Applies a cycle's BIND decisions to the state, so the next cycle starts from them. */
static void apply(drv_state *st, const drv_decisions *ds)
{
    for (int32_t i = 0; i < ds->n; i++)
        if (ds->v[i].kind == DRV_BIND && st->pods[ds->v[i].pod].node < 0)
            drv_state_bind(st, ds->v[i].pod, ds->v[i].node);
    for (int32_t j = 0; j < st->njobs; j++)
        if (st->jobs[j].phase == DRV_JOB_PENDING && drv_job_complete(&st->jobs[j]))
            drv_state_set_phase(st, j, DRV_JOB_RUNNING);
}

/* An indexed scheduler and one told to scan every node, on the same profile, and their
 * decision lists. */
typedef struct pair {
    drv_sched *ix, *scan;
    drv_decisions a, b;
} pair;

static void pair_new(pair *q, const drv_profile *p)
{
    drv_diag d;
    assert_int_equal(drv_sched_new(p, &q->ix, &d), 0);
    assert_int_equal(drv_sched_new(p, &q->scan, &d), 0);
    assert_true(drv_sched_indexed(q->ix)); /* else the comparison would be vacuous */
    drv_sched_set_exhaustive(q->scan, true);
    drv_decisions_init(&q->a);
    drv_decisions_init(&q->b);
}

static void pair_free(pair *q)
{
    drv_decisions_fini(&q->a);
    drv_decisions_fini(&q->b);
    drv_sched_free(q->ix);
    drv_sched_free(q->scan);
}

/* One cycle of both at `now` on st: the two decision lists must be equal (kind, pod, node),
 * else the test fails naming `where`. Returns how many decisions were compared; *binds (when
 * not NULL) counts the BINDs among them. */
static int64_t pair_cycle(pair *q, drv_state *st, double now, const char *where, int64_t *binds)
{
    drv_snapshot snap = {.st = st, .now = now};
    drv_decisions *a = &q->a, *b = &q->b;
    a->n = b->n = 0;
    assert_int_equal(drv_sched_cycle(q->ix, &snap, a), 0);
    assert_int_equal(drv_sched_cycle(q->scan, &snap, b), 0);
    int32_t i = 0;
    for (; i < a->n || i < b->n; i++) {
        if (i >= a->n || i >= b->n || a->v[i].kind != b->v[i].kind || a->v[i].pod != b->v[i].pod ||
            a->v[i].node != b->v[i].node)
            fail_msg("%s: decision %d differs: index pod %d -> node %d, scan pod %d -> node %d",
                     where, i, i < a->n ? a->v[i].pod : -1, i < a->n ? a->v[i].node : -1,
                     i < b->n ? b->v[i].pod : -1, i < b->n ? b->v[i].node : -1);
        if (binds)
            *binds += a->v[i].kind == DRV_BIND;
    }
    return i;
}

static void check_profile(const char *line, uint64_t seed, int64_t *compared)
{
    drv_rng r;
    drv_rng_seed(&r, seed);
    drv_diag d;
    drv_profile p;
    assert_int_equal(drv_profile_parse("t", line, &p, &d), 0);
    for (int round = 0; round < 12; round++) {
        drv_state st;
        make_state(&st, &r, round % 3);
        pair q;
        pair_new(&q, &p);
        for (int cyc = 0; cyc < 3; cyc++) {
            char where[256];
            snprintf(where, sizeof where, "%s, seed %llu round %d cycle %d", line,
                     (unsigned long long)seed, round, cyc);
            *compared += pair_cycle(&q, &st, cyc * 10.0, where, NULL);
            apply(&st, &q.a);
            /* New pending work for the next cycle: a few more gangs. */
            drv_state tmp;
            make_state(&tmp, &r, 0);
            for (int32_t j = 0; j < tmp.njobs && j < 10; j++) {
                drv_job t = tmp.jobs[j];
                t.hist = NULL;
                t.submit = 100 + cyc * 10 + j;
                assert_int_equal(drv_state_add_job(&st, &t, NULL), 0);
            }
            drv_state_fini(&tmp);
        }
        pair_free(&q);
        drv_state_fini(&st);
    }
}

static void test_index_equals_scan(void **unused)
{
    (void)unused;
    static const char *lines[] = {
        "gang=true admit=gang score=locality*4,ps-anti-affinity,least-allocated",
        "gang=true admit=gang score=locality*3,most-allocated",
        "gang=true admit=gang score=locality*2,ps-anti-affinity,least-allocated",
        "gang=true admit=gang score=locality(w_room=5;w_zone=3),least-allocated",
        "gang=true admit=gang score=ps-anti-affinity,most-allocated",
    };
    int64_t compared = 0;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        check_profile(lines[i], 7 + i, &compared);
    assert_true(compared > 5000); /* the comparison saw real work */
}

/* Alike nodes (one shape, one zone, two racks) already holding single-pod jobs of the one pod
 * shape every job asks for, PS or worker: nodes often have equal free room while holding
 * different numbers of a gang's pods, of its PS pods, or of other jobs' PS pods — what tells
 * them apart for locality and ps-anti-affinity when the core scores one own node of each kind
 * (score_by_summary). Pending gangs of 1-40 pods spread one pod per node over such nodes. */
static void make_alike(drv_state *st, drv_rng *r)
{
    const drv_res node = {8000, 32 * GiB, 0}, pod = {1000, 2 * GiB, 0};
    assert_int_equal(drv_state_init(st), 0);
    int32_t nn = (int32_t)drv_rng_range(r, 8, 120);
    for (int32_t i = 0; i < nn; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(drv_state_add_node(st, name, node, "z", i % 2 ? "r1" : "r0", NULL), 0);
    }
    int32_t fill = (int32_t)drv_rng_range(r, 0, 2 * nn);
    for (int32_t k = 0; k < fill; k++) { /* running single-pod jobs, PS or worker */
        drv_job t;
        memset(&t, 0, sizeof t);
        t.phase = DRV_JOB_PENDING;
        int role = drv_rng_uniform(r) < 0.5 ? DRV_ROLE_PS : DRV_ROLE_WORKER;
        t.role[role] = (drv_rolespec){1, 1, 1, pod, pod.cpu};
        int32_t id;
        assert_int_equal(drv_state_add_job(st, &t, &id), 0);
        int32_t at = (int32_t)drv_rng_range(r, 0, nn - 1);
        if (drv_res_fits(pod, drv_node_free(&st->nodes[at]))) {
            drv_state_bind(st, drv_job_pod(st, id, role, 0), at);
            drv_state_set_phase(st, id, DRV_JOB_RUNNING);
        }
    }
    int32_t nj = (int32_t)drv_rng_range(r, 3, 30);
    for (int32_t jn = 0; jn < nj; jn++) {
        drv_job t;
        memset(&t, 0, sizeof t);
        t.phase = DRV_JOB_PENDING;
        t.submit = 1000 + jn;
        int32_t w = (int32_t)drv_rng_range(r, 1, 36), ps = (int32_t)drv_rng_range(r, 0, 4);
        t.role[DRV_ROLE_PS] = (drv_rolespec){ps, ps, ps, pod, pod.cpu};
        t.role[DRV_ROLE_WORKER] = (drv_rolespec){w, w, w, pod, pod.cpu};
        assert_int_equal(drv_state_add_job(st, &t, NULL), 0);
    }
}

static void test_alike_nodes_equal_scan(void **unused)
{
    (void)unused;
    static const char *lines[] = {
        "gang=true admit=gang score=locality*4,ps-anti-affinity,least-allocated",
        "gang=true admit=gang score=locality,least-allocated*6",
        "gang=true admit=gang score=locality(w_room=0),ps-anti-affinity*2,least-allocated*4",
        "gang=true admit=gang score=ps-anti-affinity*3,locality(w_room=0),least-allocated*2",
    };
    int64_t compared = 0;
    for (size_t l = 0; l < sizeof lines / sizeof lines[0]; l++) {
        drv_rng r;
        drv_rng_seed(&r, 31 + l);
        drv_diag d;
        drv_profile p;
        assert_int_equal(drv_profile_parse("t", lines[l], &p, &d), 0);
        for (int round = 0; round < 40; round++) {
            drv_state st;
            make_alike(&st, &r);
            pair q;
            pair_new(&q, &p);
            char where[256];
            snprintf(where, sizeof where, "%s, round %d", lines[l], round);
            pair_cycle(&q, &st, 0, where, &compared);
            pair_free(&q);
            drv_state_fini(&st);
        }
    }
    assert_true(compared > 3000); /* the comparison saw real work */
}

/* One job of ps PS and w workers of one shape, pending; its id. */
static int32_t add_job(drv_state *st, int32_t ps, int32_t w, double submit)
{
    const drv_res pod = {1000, 2 * GiB, 0};
    drv_job t;
    memset(&t, 0, sizeof t);
    t.phase = DRV_JOB_PENDING;
    t.submit = submit;
    t.role[DRV_ROLE_PS] = (drv_rolespec){ps, ps, ps, pod, pod.cpu};
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){w, w, w, pod, pod.cpu};
    int32_t id;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    return id;
}

/*
 * Own nodes alike but in one thing a score reads: n0 and n1 have equal free room (two pods
 * each), the job's pods on them differ in count, in how many are PS, or the nodes differ in
 * other jobs' PS pods; n2 is fuller. The pending job's other pods are bound already, one pod
 * is left to place, and it belongs on n1 — never on n0, the lower id, which is what scoring
 * one node per summary would pick if the summary missed that difference.
 *   kind 0, job pods per node: n0 holds 1 of them and another job's worker, n1 holds 2;
 *          locality prefers n1.
 *   kind 1, the job's PS: n0 holds its worker and another job's PS, n1 its PS and another
 *          job's worker; the last PS prefers n1 (ps-anti-affinity does not count its own).
 *   kind 2, other jobs' PS: n0 and n1 hold one worker of the job each, n0 another job's PS,
 *          n1 another job's worker; the PS prefers n1.
 */
static void own_kind_case(int kind, const char *line)
{
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(
            drv_state_add_node(&st, name, (drv_res){8000, 32 * GiB, 0}, "z", "r", NULL), 0);
    }
    int32_t job, ps_filler = add_job(&st, 1, 0, 0), w_filler = add_job(&st, 0, 1, 0);
    int32_t w_filler2 = add_job(&st, 0, 1, 0), w_filler3 = add_job(&st, 0, 1, 0);
    drv_state_bind(&st, drv_job_pod(&st, w_filler2, DRV_ROLE_WORKER, 0), 2);
    drv_state_bind(&st, drv_job_pod(&st, w_filler3, DRV_ROLE_WORKER, 0), 2);
    if (kind == 0) {
        job = add_job(&st, 0, 4, 1);
        drv_state_bind(&st, drv_job_pod(&st, job, DRV_ROLE_WORKER, 0), 0);
        drv_state_bind(&st, drv_job_pod(&st, w_filler, DRV_ROLE_WORKER, 0), 0);
        drv_state_bind(&st, drv_job_pod(&st, job, DRV_ROLE_WORKER, 1), 1);
        drv_state_bind(&st, drv_job_pod(&st, job, DRV_ROLE_WORKER, 2), 1);
        drv_state_bind(&st, drv_job_pod(&st, ps_filler, DRV_ROLE_PS, 0), 2);
    } else if (kind == 1) {
        job = add_job(&st, 2, 1, 1);
        drv_state_bind(&st, drv_job_pod(&st, job, DRV_ROLE_WORKER, 0), 0);
        drv_state_bind(&st, drv_job_pod(&st, ps_filler, DRV_ROLE_PS, 0), 0);
        drv_state_bind(&st, drv_job_pod(&st, job, DRV_ROLE_PS, 0), 1);
        drv_state_bind(&st, drv_job_pod(&st, w_filler, DRV_ROLE_WORKER, 0), 1);
    } else {
        job = add_job(&st, 1, 2, 1);
        drv_state_bind(&st, drv_job_pod(&st, job, DRV_ROLE_WORKER, 0), 0);
        drv_state_bind(&st, drv_job_pod(&st, ps_filler, DRV_ROLE_PS, 0), 0);
        drv_state_bind(&st, drv_job_pod(&st, job, DRV_ROLE_WORKER, 1), 1);
        drv_state_bind(&st, drv_job_pod(&st, w_filler, DRV_ROLE_WORKER, 0), 1);
    }
    for (int32_t j = 0; j < st.njobs; j++)
        if (j != job)
            drv_state_set_phase(&st, j, DRV_JOB_RUNNING);
    drv_diag d;
    drv_profile p;
    assert_int_equal(drv_profile_parse("t", line, &p, &d), 0);
    drv_sched *ix, *scan;
    assert_int_equal(drv_sched_new(&p, &ix, &d), 0);
    assert_int_equal(drv_sched_new(&p, &scan, &d), 0);
    assert_true(drv_sched_indexed(ix));
    drv_sched_set_exhaustive(scan, true);
    drv_decisions a, b;
    drv_decisions_init(&a);
    drv_decisions_init(&b);
    drv_snapshot snap = {.st = &st, .now = 0};
    assert_int_equal(drv_sched_cycle(ix, &snap, &a), 0);
    assert_int_equal(drv_sched_cycle(scan, &snap, &b), 0);
    int32_t binds = 0;
    for (int32_t i = 0; i < a.n; i++)
        if (a.v[i].kind == DRV_BIND) {
            assert_int_equal(a.v[i].node, 1);
            binds++;
        }
    assert_int_equal(binds, 1);
    assert_int_equal(a.n, b.n);
    for (int32_t i = 0; i < a.n; i++)
        assert_int_equal(a.v[i].node, b.v[i].node);
    drv_decisions_fini(&a);
    drv_decisions_fini(&b);
    drv_sched_free(ix);
    drv_sched_free(scan);
    drv_state_fini(&st);
}

static void test_own_nodes_told_apart(void **unused)
{
    (void)unused;
    own_kind_case(0, "gang=true admit=gang score=locality(w_room=0),least-allocated");
    /* locality weighs enough that its bound for n1 as a node without the job's pods (which
     * the rack's search uses) falls below n0's score: only n1's own score finds it. */
    own_kind_case(1, "gang=true admit=gang score=locality*8(w_room=0),ps-anti-affinity");
    own_kind_case(2, "gang=true admit=gang score=locality*8(w_room=0),ps-anti-affinity");
}

/* Node classes and constraints (issue 14) with queues: a pool labelled pool=gpu and tainted
 * NoSchedule, a pool labelled pool=fast, nodes with a PreferNoSchedule taint (which makes the
 * constraint score count), and unlabelled nodes, mixed in zones and racks; jobs in two queues
 * whose roles select the gpu pool (tolerating it), prefer the fast pool, require either pool
 * while preferring gpu and tolerating the soft taint, or ask nothing. The index bounds the
 * constraint score per class (exact) and per mixed set (the largest), and leaves out the
 * classes a pod may not use. */
static void make_constrained(drv_state *st, drv_rng *r)
{
    make_state(st, r, (int)drv_rng_range(r, 0, 2));
    int32_t pool = drv_strtab_intern(st->names, "pool"), gpu = drv_strtab_intern(st->names, "gpu");
    int32_t fast = drv_strtab_intern(st->names, "fast"), yes = drv_strtab_intern(st->names, "true");
    int32_t spot = drv_strtab_intern(st->names, "spot");
    drv_label l_gpu = {pool, gpu}, l_fast = {pool, fast};
    drv_taint t_gpu = {gpu, yes, DRV_EFFECT_NO_SCHEDULE},
              t_spot = {spot, yes, DRV_EFFECT_PREFER_NO_SCHEDULE};
    for (int32_t i = 0; i < st->nnodes; i++) {
        int64_t k = drv_rng_range(r, 0, 3);
        if (k == 1)
            assert_int_equal(drv_state_set_node_meta(st, i, &l_gpu, 1, &t_gpu, 1), 0);
        else if (k == 2)
            assert_int_equal(drv_state_set_node_meta(st, i, &l_fast, 1, NULL, 0), 0);
        else if (k == 3)
            assert_int_equal(drv_state_set_node_meta(st, i, NULL, 0, &t_spot, 1), 0);
    }
    drv_toleration tol_gpu = {gpu, 0, true, DRV_EFFECT_NO_SCHEDULE};
    drv_toleration tols[2] = {tol_gpu, {spot, 0, true, DRV_EFFECT_PREFER_NO_SCHEDULE}};
    drv_selexpr in_fast = {
        .term = 0, .key = pool, .op = DRV_SEL_IN, .nvalues = 1, .values = {fast}};
    drv_selexpr either[2] = {
        {.term = 0, .key = pool, .op = DRV_SEL_IN, .nvalues = 2, .values = {fast, gpu}},
        {.term = 1, .key = pool, .op = DRV_SEL_IN, .nvalues = 1, .values = {gpu}}};
    int32_t w50 = 50, w30 = 30;
    drv_constraint cs[3] = {{.selector = &l_gpu, .nselector = 1, .tol = &tol_gpu, .ntol = 1},
                            {.expr = &in_fast, .nexpr = 1, .npreferred = 1, .weight = &w50},
                            {.expr = either,
                             .nexpr = 2,
                             .nrequired = 1,
                             .npreferred = 1,
                             .weight = &w30,
                             .tol = tols,
                             .ntol = 2}};
    int32_t id[4] = {0};
    for (int k = 0; k < 3; k++)
        assert_int_equal(drv_state_add_constraint(st, &cs[k], NULL, &id[k + 1]), 0);
    int32_t q0 = 0;
    for (int q = 0; q < 2; q++) {
        char name[8];
        snprintf(name, sizeof name, "q%d", q);
        drv_queue dq = {.name = drv_strtab_intern(st->names, name),
                        .cohort = drv_strtab_intern(st->names, "c"),
                        .weight = 1 + q,
                        .quota = {DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED},
                        .borrow = {DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED}};
        int32_t qid;
        assert_int_equal(drv_state_add_queue(st, &dq, &qid), 0);
        if (q == 0)
            q0 = qid;
    }
    for (int32_t j = 0; j < st->njobs; j++) {
        int64_t k = drv_rng_range(r, 0, 3);
        for (int role = 0; role < DRV_NROLES; role++) /* now and then a role of its own */
            st->jobs[j].cons[role] = id[drv_rng_uniform(r) < 0.8 ? k : drv_rng_range(r, 0, 3)];
        st->jobs[j].queue = q0 + (int32_t)drv_rng_range(r, 0, 1);
    }
}

static void test_constrained_equal_scan(void **unused)
{
    (void)unused;
    static const char *lines[] = {
        "gang=true admit=gang score=locality*4,ps-anti-affinity,least-allocated",
        "gang=true admit=gang score=locality*2,most-allocated",
        "gang=true admit=gang score=ps-anti-affinity,least-allocated*3",
    };
    int64_t compared = 0;
    for (size_t l = 0; l < sizeof lines / sizeof lines[0]; l++) {
        drv_rng r;
        drv_rng_seed(&r, 77 + l);
        drv_diag d;
        drv_profile p;
        assert_int_equal(drv_profile_parse("t", lines[l], &p, &d), 0);
        for (int round = 0; round < 12; round++) {
            drv_state st;
            make_constrained(&st, &r);
            pair q;
            pair_new(&q, &p);
            for (int cyc = 0; cyc < 2; cyc++) {
                char where[256];
                snprintf(where, sizeof where, "%s, round %d cycle %d", lines[l], round, cyc);
                pair_cycle(&q, &st, cyc * 10.0, where, &compared);
                apply(&st, &q.a);
            }
            pair_free(&q);
            drv_state_fini(&st);
        }
    }
    assert_true(compared > 2000); /* the comparison saw real work */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_equals_scan), cmocka_unit_test(test_alike_nodes_equal_scan),
        cmocka_unit_test(test_own_nodes_told_apart), cmocka_unit_test(test_constrained_equal_scan)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
