/*
 * The best-node index must answer exactly what a brute-force search answers: per class, the
 * fitting node of highest key, lowest id among equal keys. Random heterogeneous clusters,
 * random requests, random updates in between (a metamorphic check: two ways, one answer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "../../src/core/nodeindex.h"
#include "testutil.h"

static double key_cpu_mem(const drv_node *n, drv_res f)
{
    return (double)f.cpu / (double)n->alloc.cpu + (double)f.mem / (double)n->alloc.mem;
}

static int32_t brute(const drv_state *st, const drv_res *fr, drv_res alloc, drv_res req)
{
    int32_t best = -1;
    double bk = 0;
    for (int32_t i = 0; i < st->nnodes; i++) {
        const drv_node *n = &st->nodes[i];
        if (!n->schedulable || memcmp(&n->alloc, &alloc, sizeof alloc) != 0 ||
            !drv_res_fits(req, fr[i]))
            continue;
        double k = key_cpu_mem(n, fr[i]);
        if (best < 0 || k > bk) {
            best = i;
            bk = k;
        }
    }
    return best;
}

static void test_index_matches_brute_force(void **unused)
{
    (void)unused;
    static const drv_res shapes[] = {{8000, 32, 0}, {16000, 64, 0}, {16000, 32, 0}};
    drv_rng r;
    drv_rng_seed(&r, 11);
    for (int round = 0; round < 20; round++) {
        drv_state st;
        assert_int_equal(drv_state_init(&st), 0);
        int32_t n = (int32_t)drv_rng_range(&r, 1, 300);
        drv_res *fr = drv_calloc((size_t)n, sizeof *fr);
        for (int32_t i = 0; i < n; i++) {
            char name[16];
            snprintf(name, sizeof name, "n%d", i);
            drv_res a = shapes[drv_rng_range(&r, 0, 2)];
            assert_int_equal(drv_state_add_node(&st, name, a, "", "", NULL), 0);
            st.nodes[i].schedulable = drv_rng_uniform(&r) > 0.1;
            /* Coarse values so that equal keys (ties) are common. */
            fr[i] = (drv_res){a.cpu / 4 * drv_rng_range(&r, 0, 4),
                              a.mem / 4 * drv_rng_range(&r, 0, 4), 0};
        }
        drv_nodeindex *ix = drv_nodeindex_new();
        assert_non_null(ix);
        int32_t *nps = drv_calloc((size_t)n, sizeof *nps);
        assert_non_null(nps);
        assert_int_equal(drv_nodeindex_build(ix, &st, fr, nps, 1, key_cpu_mem, 1), 0);
        for (int q = 0; q < 200; q++) {
            drv_res req = {drv_rng_range(&r, 0, 16000), drv_rng_range(&r, 0, 64), 0};
            for (int32_t c = 0; c < drv_nodeindex_groups(ix, DRV_IX_GLOBAL); c++) {
                int32_t got = drv_nodeindex_best(ix, DRV_IX_GLOBAL, c, req);
                drv_res alloc = {-1, -1, -1};
                for (int32_t i = 0; i < n; i++)
                    if (st.nodes[i].schedulable) {
                        /* Class c is the c-th distinct allocatable among schedulable nodes. */
                        int32_t seen = 0;
                        drv_res prev[3];
                        for (int32_t j = 0; j <= i; j++) {
                            if (!st.nodes[j].schedulable)
                                continue;
                            bool dup = false;
                            for (int32_t m = 0; m < seen; m++)
                                dup |= !memcmp(&prev[m], &st.nodes[j].alloc, sizeof(drv_res));
                            if (!dup)
                                prev[seen++] = st.nodes[j].alloc;
                        }
                        if (seen > c) {
                            alloc = prev[c];
                            break;
                        }
                    }
                int32_t want = brute(&st, fr, alloc, req);
                if (got != want)
                    fail_msg("round %d query %d class %d: index %d, brute force %d", round, q, c,
                             got, want);
            }
            /* Change a node and tell the index. */
            int32_t u = (int32_t)drv_rng_range(&r, 0, n - 1);
            drv_res a = st.nodes[u].alloc;
            fr[u] = (drv_res){a.cpu / 4 * drv_rng_range(&r, 0, 4),
                              a.mem / 4 * drv_rng_range(&r, 0, 4), 0};
            drv_nodeindex_update(ix, u, fr[u], 0);
        }
        drv_nodeindex_free(ix);
        drv_free(nps);
        drv_free(fr);
        drv_state_fini(&st);
    }
}

/* Branch and bound with a score that mixes free memory share and the PS pod count, and whose
 * bound uses only the set's summary (max free memory, min PS count). */
typedef struct bb_world {
    const drv_state *st;
    const drv_res *fr;
    const int32_t *nps;
    drv_res req;
    bool loose; /* add slack to the bound: slower, never less exact */
} bb_world;

static int64_t bb_of(const drv_node *n, drv_res free, int32_t nps)
{
    return (int64_t)(60.0 * (double)free.mem / (double)n->alloc.mem) + 40 / (1 + nps);
}

static int64_t bb_score(void *arg, int32_t node)
{
    const bb_world *w = arg;
    return bb_of(&w->st->nodes[node], drv_res_sub(w->fr[node], w->req), w->nps[node]);
}

static int64_t bb_bound(void *arg, const drv_node_set *set)
{
    const bb_world *w = arg;
    drv_node n = {.alloc = set->alloc};
    return bb_of(&n, drv_res_sub(set->maxfree, w->req), set->min_ps) + (w->loose ? 7 : 0);
}

static void test_branch_and_bound_matches_brute_force(void **unused)
{
    (void)unused;
    drv_rng r;
    drv_rng_seed(&r, 11);
    static const drv_res shapes[] = {{8000, 32, 0}, {16000, 64, 0}};
    int64_t leaves = 0, queries = 0;
    for (int round = 0; round < 20; round++) {
        drv_state st;
        assert_int_equal(drv_state_init(&st), 0);
        int32_t n = (int32_t)drv_rng_range(&r, 1, 400);
        drv_res *fr = drv_calloc((size_t)n, sizeof *fr);
        int32_t *nps = drv_calloc((size_t)n, sizeof *nps);
        assert_non_null(fr);
        assert_non_null(nps);
        for (int32_t i = 0; i < n; i++) {
            char name[16];
            snprintf(name, sizeof name, "n%d", i);
            drv_res a = shapes[drv_rng_range(&r, 0, 1)];
            assert_int_equal(drv_state_add_node(&st, name, a, "", "", NULL), 0);
            fr[i] = (drv_res){a.cpu / 4 * drv_rng_range(&r, 0, 4),
                              a.mem / 4 * drv_rng_range(&r, 0, 4), 0};
            nps[i] = (int32_t)drv_rng_range(&r, 0, 3);
        }
        drv_nodeindex *ix = drv_nodeindex_new();
        assert_non_null(ix);
        assert_int_equal(drv_nodeindex_build(ix, &st, fr, nps, 1, key_cpu_mem, 1), 0);
        for (int q = 0; q < 100; q++) {
            bb_world w = {&st,
                          fr,
                          nps,
                          {drv_rng_range(&r, 0, 8000), drv_rng_range(&r, 0, 32), 0},
                          q % 2 == 1};
            int32_t best = -1;
            int64_t best_sc = -1;
            for (int32_t g = 0; g < drv_nodeindex_groups(ix, DRV_IX_GLOBAL); g++)
                leaves += drv_nodeindex_search(ix, DRV_IX_GLOBAL, g, w.req, -1, -1, bb_bound,
                                               bb_score, &w, &best, &best_sc);
            queries++;
            int32_t want = -1;
            int64_t want_sc = -1;
            for (int32_t i = 0; i < n; i++)
                if (drv_res_fits(w.req, fr[i]) && bb_score(&w, i) > want_sc) {
                    want = i;
                    want_sc = bb_score(&w, i);
                }
            if (best != want)
                fail_msg("round %d query %d: search %d (score %lld), brute force %d (%lld)", round,
                         q, best, (long long)best_sc, want, (long long)want_sc);
            int32_t u = (int32_t)drv_rng_range(&r, 0, n - 1);
            nps[u] = (int32_t)drv_rng_range(&r, 0, 3);
            fr[u].mem = st.nodes[u].alloc.mem / 4 * drv_rng_range(&r, 0, 4);
            drv_nodeindex_update(ix, u, fr[u], nps[u]);
        }
        drv_nodeindex_free(ix);
        drv_free(nps);
        drv_free(fr);
        drv_state_fini(&st);
    }
    /* The point of the index: far fewer leaves scored than nodes exist. */
    print_message("branch and bound: %.1f leaves scored per query\n", (double)leaves / queries);
}

/* Classes the constraint table treats alike share groups; when a new row tells them apart, the
 * next build splits them again, and a failed allocation leaves the map as it was. */
static void test_class_map(void **unused)
{
    (void)unused;
    drv_state st;
    drv_res a = {8000, 32, 0};
    tu_make_state(&st, 12, a, "", "");
    int32_t key = drv_strtab_intern(st.names, "rack");
    for (int32_t i = 0; i < 12; i++) { /* classes 1..4: rack=r0..r3, three nodes each */
        char rack[8];
        snprintf(rack, sizeof rack, "r%d", i % 4);
        drv_label l = {key, drv_strtab_intern(st.names, rack)};
        assert_int_equal(drv_state_set_node_meta(&st, i, &l, 1, NULL, 0), 0);
    }
    int32_t ncls = st.nclasses;
    assert_int_equal(ncls, 5);
    drv_res fr[12];
    int32_t nps[12] = {0};
    for (int32_t i = 0; i < 12; i++)
        fr[i] = a;
    drv_nodeindex *ix = drv_nodeindex_new();
    assert_non_null(ix);
    assert_int_equal(drv_nodeindex_build(ix, &st, fr, nps, 1, key_cpu_mem, 1), 0);
    assert_int_equal(drv_nodeindex_groups(ix, DRV_IX_GLOBAL), 4); /* by class */
    /* One row (no constraint): every class alike, one group standing for the lowest class (0,
     * which no node has: the table's column is what counts). */
    int32_t fit[2 * 5] = {0,  0,  0, 0,  0, /* row 1, below: only class 2 (rack=r1) fits */
                          -1, -1, 7, -1, -1};
    assert_int_equal(drv_nodeindex_set_classes(ix, fit, 1, ncls), 0);
    assert_int_equal(drv_nodeindex_build(ix, &st, fr, nps, 1, key_cpu_mem, 1), 0);
    assert_int_equal(drv_nodeindex_groups(ix, DRV_IX_GLOBAL), 1);
    assert_int_equal(drv_nodeindex_group_nodes(ix, DRV_IX_GLOBAL, 0), 12);
    assert_int_equal(drv_nodeindex_class(ix, DRV_IX_GLOBAL, 0), 0);
    /* A second row tells class 2 apart; the map fails first (nothing changes), then holds. */
    drv_alloc_fail_at(1);
    assert_int_equal(drv_nodeindex_set_classes(ix, fit, 2, ncls), DRV_ENOMEM);
    drv_alloc_fail_at(0);
    assert_int_equal(drv_nodeindex_refresh(ix, &st, fr, nps, 1, key_cpu_mem, 1, NULL, 0), 0);
    assert_int_equal(drv_nodeindex_groups(ix, DRV_IX_GLOBAL), 1);
    assert_int_equal(drv_nodeindex_set_classes(ix, fit, 2, ncls), 0);
    /* A refresh (no node changed) must regroup too. */
    assert_int_equal(drv_nodeindex_refresh(ix, &st, fr, nps, 1, key_cpu_mem, 1, NULL, 0), 0);
    assert_int_equal(drv_nodeindex_groups(ix, DRV_IX_GLOBAL), 2);
    for (int32_t g = 0; g < 2; g++) {
        int32_t c = drv_nodeindex_class(ix, DRV_IX_GLOBAL, g);
        assert_true(c == 0 || c == 2);
        assert_int_equal(drv_nodeindex_group_nodes(ix, DRV_IX_GLOBAL, g), c == 2 ? 3 : 9);
        /* class 2's group holds n1, n5, n9 (rack r1): the best of equal keys is the lowest */
        assert_int_equal(drv_nodeindex_best(ix, DRV_IX_GLOBAL, g, a), c == 2 ? 1 : 0);
    }
    /* Without a table: by class again. */
    assert_int_equal(drv_nodeindex_set_classes(ix, NULL, 0, 0), 0);
    assert_int_equal(drv_nodeindex_build(ix, &st, fr, nps, 1, key_cpu_mem, 1), 0);
    assert_int_equal(drv_nodeindex_groups(ix, DRV_IX_GLOBAL), 4);
    drv_nodeindex_free(ix);
    drv_state_fini(&st);
}

/* A node lowered, then raised above what the tree holds, again and again before any read (a
 * plugin that evicts and binds pods on it one at a time, or rolls back): each raise leaves a
 * superseded kept entry behind, more than one per node, and their room (nnodes + 1 entries)
 * must not overflow. Under ASan this wrote past the entries before they were applied when
 * full; the last values stand. */
static void test_kept_updates_bounded(void **unused)
{
    (void)unused;
    drv_state st;
    drv_res a = {64000, 64, 0}, low = {1000, 1, 0};
    tu_make_state(&st, 3, a, "", "");
    drv_res fr[3] = {low, low, low};
    int32_t nps[3] = {0};
    drv_nodeindex *ix = drv_nodeindex_new();
    assert_non_null(ix);
    assert_int_equal(drv_nodeindex_build(ix, &st, fr, nps, 1, key_cpu_mem, 1), 0);
    for (int64_t i = 1; i <= 40; i++) {
        drv_res down = {1000 * i - 500, i, 0}, up = {1000 * (i + 1), i + 1, 0};
        drv_nodeindex_update(ix, 0, down, 0); /* below the tree's value: kept */
        drv_nodeindex_update(ix, 0, up, 0);   /* above it: applied, the kept one superseded */
    }
    assert_int_equal(drv_nodeindex_best(ix, DRV_IX_GLOBAL, 0, (drv_res){41000, 41, 0}), 0);
    assert_int_equal(drv_nodeindex_maxfree(ix).cpu, 41000);
    drv_nodeindex_free(ix);
    drv_state_fini(&st);
}

/* Updates that lower a node are kept until a tree is read (drv_nodeindex_update): every read
 * after them must see them, one that raises a node must supersede a kept one, and a refresh
 * must compare the leaves with them applied. Each assertion fails if a kept update is read
 * stale. */
static void test_kept_updates(void **unused)
{
    (void)unused;
    drv_state st;
    drv_res a = {8000, 32, 0};
    tu_make_state(&st, 3, a, "", "");
    drv_res fr[3] = {a, a, a};
    int32_t nps[3] = {0};
    drv_res half = {4000, 16, 0}, little = {2000, 8, 0}, req = {6000, 1, 0};
    drv_nodeindex *ix = drv_nodeindex_new();
    assert_non_null(ix);
    assert_int_equal(drv_nodeindex_build(ix, &st, fr, nps, 1, key_cpu_mem, 1), 0);
    assert_int_equal(drv_nodeindex_best(ix, DRV_IX_GLOBAL, 0, req), 0);
    uint64_t grown = drv_nodeindex_grown(ix);
    fr[0] = half; /* lowered: kept, and nothing rose */
    drv_nodeindex_update(ix, 0, fr[0], 0);
    assert_int_equal(drv_nodeindex_grown(ix), grown);
    assert_int_equal(drv_nodeindex_best(ix, DRV_IX_GLOBAL, 0, req), 1);
    fr[1] = little; /* lowered twice: one write */
    drv_nodeindex_update(ix, 1, half, 0);
    drv_nodeindex_update(ix, 1, fr[1], 0);
    fr[2] = little;
    drv_nodeindex_update(ix, 2, fr[2], 0);
    assert_int_equal(drv_nodeindex_best(ix, DRV_IX_GLOBAL, 0, req), -1);
    drv_res m = drv_nodeindex_maxfree(ix);
    assert_int_equal(m.cpu, 4000);
    /* Kept, then raised: the raise holds, and grown moves. */
    drv_nodeindex_update(ix, 2, (drv_res){1000, 4, 0}, 0);
    fr[2] = a;
    drv_nodeindex_update(ix, 2, fr[2], 0);
    assert_true(drv_nodeindex_grown(ix) != grown);
    assert_int_equal(drv_nodeindex_best(ix, DRV_IX_GLOBAL, 0, req), 2);
    /* Kept when a refresh comes: it sees the leaves as they stand for. */
    fr[2] = little;
    drv_nodeindex_update(ix, 2, fr[2], 0);
    int32_t changed[1] = {2};
    assert_int_equal(drv_nodeindex_refresh(ix, &st, fr, nps, 1, key_cpu_mem, 1, changed, 1), 0);
    assert_int_equal(drv_nodeindex_maxfree(ix).cpu, 4000);
    assert_int_equal(drv_nodeindex_best(ix, DRV_IX_GLOBAL, 0, (drv_res){3000, 1, 0}), 0);
    drv_nodeindex_free(ix);
    drv_state_fini(&st);
}

/* A node lowered (kept), then raised above what its leaves hold (applied at once, the kept
 * entry superseded), then lowered again (kept anew), many times with no read between: what a
 * plugin evicting gangs and rolling them back does within one cycle. The kept entries must stay
 * within the room made for every node of the grouping (ASan saw the index write past it before
 * the fix), and the last value must be the one read. */
static void test_kept_updates_alternate(void **unused)
{
    (void)unused;
    drv_state st;
    drv_res a = {8000, 32, 0}, wide = {8000, 16, 0}, tall = {4000, 32, 0}, low = {2000, 8, 0};
    tu_make_state(&st, 2, a, "", "");
    drv_res fr[2] = {wide, wide};
    int32_t nps[2] = {0};
    drv_nodeindex *ix = drv_nodeindex_new();
    assert_non_null(ix);
    assert_int_equal(drv_nodeindex_build(ix, &st, fr, nps, 1, key_cpu_mem, 1), 0);
    for (int i = 0; i < 50; i++) {
        drv_nodeindex_update(ix, 0, low, 0);                 /* lowered: kept */
        drv_nodeindex_update(ix, 0, i % 2 ? wide : tall, 0); /* raised in one dimension: applied */
    }
    drv_nodeindex_update(ix, 0, low, 0);
    assert_int_equal(drv_nodeindex_maxfree(ix).cpu, 8000); /* node 1 */
    assert_int_equal(drv_nodeindex_best(ix, DRV_IX_GLOBAL, 0, (drv_res){3000, 20, 0}), -1);
    assert_int_equal(drv_nodeindex_best(ix, DRV_IX_GLOBAL, 0, (drv_res){3000, 10, 0}), 1);
    drv_nodeindex_free(ix);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_index_matches_brute_force),
                                       cmocka_unit_test(test_branch_and_bound_matches_brute_force),
                                       cmocka_unit_test(test_class_map),
                                       cmocka_unit_test(test_kept_updates),
                                       cmocka_unit_test(test_kept_updates_alternate),

                                       cmocka_unit_test(test_kept_updates_bounded)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
