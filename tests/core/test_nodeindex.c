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
        assert_int_equal(drv_nodeindex_build(ix, &st, fr, key_cpu_mem, 1), 0);
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
            drv_nodeindex_update(ix, u, fr[u]);
        }
        drv_nodeindex_free(ix);
        drv_free(fr);
        drv_state_fini(&st);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_index_matches_brute_force)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
