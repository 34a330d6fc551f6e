/*
 * The index's branch and bound with topology scores must choose nodes that score as high as the
 * best an exhaustive scan finds. Checked inside real cycles: a test admit plugin asks the core for
 * the best node of each pod (indexed), scans every node itself with the same filter and score, and
 * counts choices that score lower than the scan's best. Random clusters with zones, racks and
 * three node shapes; random jobs placed pod by pod, so jobs spread over racks and zones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drover/cycle.h"

/* A keyed score: free CPU share after placing, 0..100. */
static double cpu_key(const drv_node *n, drv_res f)
{
    return (double)f.cpu / (double)n->alloc.cpu;
}

static int cpu_score(const drv_ctx *c, void *st, int32_t pod, int32_t node)
{
    (void)st;
    const drv_state *s = drv_ctx_state(c);
    const drv_node *n = &s->nodes[node];
    const drv_pod *p = &s->pods[pod];
    drv_res f = drv_res_sub(drv_ctx_free(c, node), s->jobs[p->job].role[p->role].req);
    return (int)(100.0 * cpu_key(n, f));
}

/* Bound of cpu_score: through the index's key when it is ours, else the set's max free CPU. */
static int cpu_bound(const drv_ctx *c, void *st, int32_t pod, const drv_node_set *set)
{
    (void)st;
    const drv_state *s = drv_ctx_state(c);
    const drv_pod *p = &s->pods[pod];
    double req = (double)s->jobs[p->job].role[p->role].req.cpu / (double)set->alloc.cpu;
    double k = set->key == cpu_key ? set->maxkey : (double)set->maxfree.cpu / set->alloc.cpu;
    return (int)(100.0 * (k - req) + 1e-6);
}

/* A topology bonus: 100 on a node with the job's pods, 60 in such a rack, 30 in such a zone. */
static int topo_score(const drv_ctx *c, void *st, int32_t pod, int32_t node)
{
    (void)st;
    const drv_state *s = drv_ctx_state(c);
    const drv_job *j = &s->jobs[s->pods[pod].job];
    int best = 0;
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t n = drv_ctx_pod_node(c, j->pod_base + k);
        if (n < 0)
            continue;
        if (n == node)
            return 100;
        if (s->nodes[n].rack == s->nodes[node].rack && best < 60)
            best = 60;
        else if (s->nodes[n].zone == s->nodes[node].zone && best < 30)
            best = 30;
    }
    return best;
}

/* Bound of topo_score over a set (drv_node_set says which nodes a set stands for). */
static int topo_bound(const drv_ctx *c, void *st, int32_t pod, const drv_node_set *set)
{
    (void)st;
    const drv_state *s = drv_ctx_state(c);
    const drv_job *j = &s->jobs[s->pods[pod].job];
    int best = 0;
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t n = drv_ctx_pod_node(c, j->pod_base + k);
        if (n < 0)
            continue;
        if (set->rack >= 0) /* nodes of that rack, any zone */
            best = s->nodes[n].rack == set->rack ? 60 : best > 30 ? best : 30;
        else if (set->zone >= 0 && s->nodes[n].zone == set->zone && best < 30)
            best = 30;
    }
    return best;
}

typedef struct check {
    int64_t placed, worse;
} check;

static check result;

static void checking_admit(drv_ctx *c, void *st, const int32_t *jobs, int32_t n)
{
    (void)st;
    const drv_state *s = drv_ctx_state(c);
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &s->jobs[jobs[i]];
        for (int32_t k = 0; k < j->pod_count; k++) {
            int32_t pod = j->pod_base + k;
            if (s->pods[pod].index >= j->target[s->pods[pod].role])
                continue;
            int32_t got = drv_ctx_best_node(c, pod);
            int64_t best = -1;
            for (int32_t m = 0; m < s->nnodes; m++)
                if (drv_ctx_filter(c, pod, m) == DRV_FIT) {
                    int64_t sc = drv_ctx_score(c, pod, m);
                    if (sc > best)
                        best = sc;
                }
            if ((got < 0) != (best < 0) || (got >= 0 && drv_ctx_score(c, pod, got) < best))
                result.worse++;
            if (got >= 0) {
                drv_ctx_bind(c, pod, got);
                result.placed++;
            }
        }
    }
}

static const drv_plugin keyed = {
    .name = "t-key", .score = cpu_score, .node_key = cpu_key, .score_bound = cpu_bound};
static const drv_plugin topo = {.name = "t-topo", .score = topo_score, .score_bound = topo_bound};
static const drv_plugin admit = {.name = "t-admit", .admit = checking_admit};

static void test_topology_index_is_exact(void **unused)
{
    (void)unused;
    drv_rng r;
    drv_rng_seed(&r, 5);
    static const int64_t cpus[] = {8000, 16000, 32000};
    for (int round = 0; round < 10; round++) {
        drv_state st;
        assert_int_equal(drv_state_init(&st), 0);
        int32_t nn = (int32_t)drv_rng_range(&r, 20, 300);
        for (int32_t i = 0; i < nn; i++) {
            char name[16], zone[8], rack[8];
            snprintf(name, sizeof name, "n%d", i);
            snprintf(zone, sizeof zone, "z%d", (int)drv_rng_range(&r, 0, 3));
            snprintf(rack, sizeof rack, "r%d", (int)drv_rng_range(&r, 0, 11));
            drv_res a = {cpus[drv_rng_range(&r, 0, 2)], 1 << 30, 0};
            assert_int_equal(drv_state_add_node(&st, name, a, zone, rack, NULL), 0);
        }
        for (int32_t jn = 0; jn < 60; jn++) {
            drv_job t;
            memset(&t, 0, sizeof t);
            t.phase = DRV_JOB_PENDING;
            t.submit = jn;
            int32_t w = (int32_t)drv_rng_range(&r, 1, 12);
            t.role[DRV_ROLE_WORKER] =
                (drv_rolespec){w, w, w, {drv_rng_range(&r, 1, 8) * 1000, 1, 0}, 0};
            assert_int_equal(drv_state_add_job(&st, &t, NULL), 0);
        }
        drv_profile p;
        memset(&p, 0, sizeof p);
        strcpy(p.name, "t");
        p.use[DRV_PT_ADMIT][0] = (drv_plugin_use){.p = &admit, .weight = 1};
        p.use[DRV_PT_SCORE][0] = (drv_plugin_use){.p = &keyed, .weight = 1};
        p.use[DRV_PT_SCORE][1] = (drv_plugin_use){.p = &topo, .weight = 2};
        p.nuse[DRV_PT_ADMIT] = 1;
        p.nuse[DRV_PT_SCORE] = 2;
        drv_sched *s;
        drv_diag d;
        assert_int_equal(drv_sched_new(&p, &s, &d), 0);
        drv_decisions ds;
        drv_decisions_init(&ds);
        drv_snapshot snap = {.st = &st, .now = 0};
        assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
        drv_decisions_fini(&ds);
        drv_sched_free(s);
        drv_state_fini(&st);
    }
    assert_true(result.placed > 1000);
    if (result.worse)
        fail_msg("%lld of %lld indexed choices scored below the exhaustive best",
                 (long long)result.worse, (long long)result.placed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_topology_index_is_exact)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
