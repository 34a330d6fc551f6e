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
        drv_sched *ix, *scan;
        assert_int_equal(drv_sched_new(&p, &ix, &d), 0);
        assert_int_equal(drv_sched_new(&p, &scan, &d), 0);
        assert_true(drv_sched_indexed(ix)); /* else the comparison would be vacuous */
        drv_sched_set_exhaustive(scan, true);
        drv_decisions a, b;
        drv_decisions_init(&a);
        drv_decisions_init(&b);
        for (int cyc = 0; cyc < 3; cyc++) {
            drv_snapshot snap = {.st = &st, .now = cyc * 10.0};
            a.n = b.n = 0;
            assert_int_equal(drv_sched_cycle(ix, &snap, &a), 0);
            assert_int_equal(drv_sched_cycle(scan, &snap, &b), 0);
            for (int32_t i = 0; i < a.n || i < b.n; i++) {
                if (i >= a.n || i >= b.n || a.v[i].kind != b.v[i].kind ||
                    a.v[i].pod != b.v[i].pod || a.v[i].node != b.v[i].node)
                    fail_msg("%s, seed %llu round %d cycle %d: decision %d differs: index "
                             "pod %d -> node %d, scan pod %d -> node %d",
                             line, (unsigned long long)seed, round, cyc, i,
                             i < a.n ? a.v[i].pod : -1, i < a.n ? a.v[i].node : -1,
                             i < b.n ? b.v[i].pod : -1, i < b.n ? b.v[i].node : -1);
                (*compared)++;
            }
            apply(&st, &a);
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
        drv_decisions_fini(&a);
        drv_decisions_fini(&b);
        drv_sched_free(ix);
        drv_sched_free(scan);
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

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_index_equals_scan)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
