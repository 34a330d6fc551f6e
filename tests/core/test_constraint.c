/*
 * Node constraints (constraint.c): Kubernetes' matching rules one by one, node classes shared by
 * equal label and taint sets, and the index staying exact when constraints refuse groups of
 * nodes (indexed best node against a scan of every node, inside real cycles, with expected
 * feasibility computed here from the rules, not by the core).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drover/cycle.h"

static int32_t S(drv_state *st, const char *s)
{
    return drv_strtab_intern(st->names, s);
}

/* A state with one node per class below: 0 plain; 1 pool=gpu, gen=5 and gpu=true:NoSchedule;
 * 2 pool=cpu, gen=x and spot=yes:PreferNoSchedule; 3 gen=3 and dead=1:NoExecute. */
static void four_nodes(drv_state *st)
{
    assert_int_equal(drv_state_init(st), 0);
    for (int i = 0; i < 4; i++) {
        char name[8];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(drv_state_add_node(st, name, (drv_res){1000, 1, 0}, "z", "r", NULL), 0);
    }
    drv_label l1[] = {{S(st, "pool"), S(st, "gpu")}, {S(st, "gen"), S(st, "5")}};
    drv_taint t1 = {S(st, "gpu"), S(st, "true"), DRV_EFFECT_NO_SCHEDULE};
    drv_label l2[] = {{S(st, "pool"), S(st, "cpu")}, {S(st, "gen"), S(st, "x")}};
    drv_taint t2 = {S(st, "spot"), S(st, "yes"), DRV_EFFECT_PREFER_NO_SCHEDULE};
    drv_label l3 = {S(st, "gen"), S(st, "3")};
    drv_taint t3 = {S(st, "dead"), S(st, "1"), DRV_EFFECT_NO_EXECUTE};
    assert_int_equal(drv_state_set_node_meta(st, 1, l1, 2, &t1, 1), 0);
    assert_int_equal(drv_state_set_node_meta(st, 2, l2, 2, &t2, 1), 0);
    assert_int_equal(drv_state_set_node_meta(st, 3, &l3, 1, &t3, 1), 0);
}

/* Which of the four nodes fit constraint c, as a bit mask. */
static int fits_mask(drv_state *st, const drv_constraint *c)
{
    int32_t id;
    assert_int_equal(drv_state_add_constraint(st, c, NULL, &id), 0);
    int m = 0;
    for (int i = 0; i < 4; i++)
        m |= drv_constraint_fits(st, id, st->nodes[i].node_class, NULL) << i;
    return m;
}

static void test_taints_and_tolerations(void **unused)
{
    (void)unused;
    drv_state st;
    four_nodes(&st);
    drv_constraint none = {0};
    /* nothing tolerated: the plain node and the PreferNoSchedule one only */
    assert_int_equal(fits_mask(&st, &none), 0x1 | 0x4);
    drv_toleration eq = {S(&st, "gpu"), S(&st, "true"), false, DRV_EFFECT_NO_SCHEDULE};
    drv_constraint c = {.tol = &eq, .ntol = 1};
    assert_int_equal(fits_mask(&st, &c), 0x7);
    eq.value = S(&st, "false"); /* Equal with another value tolerates nothing */
    assert_int_equal(fits_mask(&st, &c), 0x5);
    eq.exists = true; /* Exists ignores the value */
    assert_int_equal(fits_mask(&st, &c), 0x7);
    eq.effect = DRV_EFFECT_NO_EXECUTE; /* the effect must match */
    assert_int_equal(fits_mask(&st, &c), 0x5);
    drv_toleration all = {0, 0, true, DRV_EFFECT_ANY}; /* empty key, Exists: every taint */
    c.tol = &all;
    assert_int_equal(fits_mask(&st, &c), 0xf);
    drv_state_fini(&st);
}

static void test_selectors_and_affinity(void **unused)
{
    (void)unused;
    drv_state st;
    four_nodes(&st);
    drv_toleration all = {0, 0, true, DRV_EFFECT_ANY};
    drv_label sel = {S(&st, "pool"), S(&st, "gpu")};
    drv_constraint c = {.selector = &sel, .nselector = 1, .tol = &all, .ntol = 1};
    assert_int_equal(fits_mask(&st, &c), 0x2);
    drv_selexpr e = {.term = 0, .key = S(&st, "pool"), .op = DRV_SEL_IN, .nvalues = 2};
    e.values[0] = S(&st, "gpu");
    e.values[1] = S(&st, "cpu");
    drv_constraint a = {.expr = &e, .nexpr = 1, .nrequired = 1, .tol = &all, .ntol = 1};
    assert_int_equal(fits_mask(&st, &a), 0x6);
    e.op = DRV_SEL_NOT_IN; /* absent label: NotIn holds */
    assert_int_equal(fits_mask(&st, &a), 0x9);
    e.op = DRV_SEL_EXISTS;
    e.nvalues = 0;
    assert_int_equal(fits_mask(&st, &a), 0x6);
    e.op = DRV_SEL_DOES_NOT_EXIST;
    assert_int_equal(fits_mask(&st, &a), 0x9);
    e.key = S(&st, "gen");
    e.op = DRV_SEL_GT; /* gen=x is no integer: no match */
    e.num = 4;
    assert_int_equal(fits_mask(&st, &a), 0x2);
    e.op = DRV_SEL_LT;
    assert_int_equal(fits_mask(&st, &a), 0x8);
    /* two terms ORed; two expressions of one term ANDed */
    drv_selexpr two[3] = {{.term = 0, .key = S(&st, "gen"), .op = DRV_SEL_GT, .num = 4},
                          {.term = 1, .key = S(&st, "gen"), .op = DRV_SEL_LT, .num = 4},
                          {.term = 1, .key = S(&st, "pool"), .op = DRV_SEL_EXISTS}};
    drv_constraint b = {.expr = two, .nexpr = 3, .nrequired = 2, .tol = &all, .ntol = 1};
    assert_int_equal(fits_mask(&st, &b), 0x2);
    b.nexpr = 2;
    assert_int_equal(fits_mask(&st, &b), 0xa);
    drv_state_fini(&st);
}

static void test_scores_and_classes(void **unused)
{
    (void)unused;
    drv_state st;
    four_nodes(&st);
    /* equal sets share a class, whatever their order */
    drv_label l[] = {{S(&st, "gen"), S(&st, "5")}, {S(&st, "pool"), S(&st, "gpu")}};
    drv_taint t = {S(&st, "gpu"), S(&st, "true"), DRV_EFFECT_NO_SCHEDULE};
    assert_int_equal(drv_state_add_node(&st, "n4", (drv_res){1000, 1, 0}, "z", "r", NULL), 0);
    assert_int_equal(drv_state_set_node_meta(&st, 4, l, 2, &t, 1), 0);
    assert_int_equal(st.nodes[4].node_class, st.nodes[1].node_class);
    drv_label dup[] = {{S(&st, "a"), S(&st, "1")}, {S(&st, "a"), S(&st, "2")}};
    assert_int_equal(drv_state_set_node_meta(&st, 4, dup, 2, NULL, 0), DRV_EINVAL);
    /* preferred term weight 30 on pool=cpu: 2 x 30, plus 100 where no PreferNoSchedule taint
     * is untolerated (node 2 has one) */
    drv_selexpr e = {.term = 0, .key = S(&st, "pool"), .op = DRV_SEL_IN, .nvalues = 1};
    e.values[0] = S(&st, "cpu");
    int32_t w = 30, id, sc;
    drv_constraint c = {.expr = &e, .nexpr = 1, .npreferred = 1, .weight = &w};
    assert_int_equal(drv_state_add_constraint(&st, &c, NULL, &id), 0);
    assert_true(drv_constraint_fits(&st, id, st.nodes[2].node_class, &sc));
    assert_int_equal(sc, 60);
    assert_true(drv_constraint_fits(&st, id, st.nodes[0].node_class, &sc));
    assert_int_equal(sc, 100);
    w = 0; /* weights are 1..100 */
    assert_int_equal(drv_state_add_constraint(&st, &c, NULL, &id), DRV_EINVAL);
    drv_state_fini(&st);
}

/* ---- the index stays exact -------------------------------------------------------------- */

/* Random rule of the metamorphic test: nodes of class k (node % 4) carry label tier=k and, for
 * k >= 2, a NoSchedule taint; job j selects tier j % 5 (4: no selector) and tolerates the taint
 * when j % 3 == 0. */
static bool expect_fit(int32_t job, int32_t node)
{
    int32_t k = node % 4, want = job % 5;
    if (want < 4 && want != k)
        return false;
    return k < 2 || job % 3 == 0;
}

static double cpu_key(const drv_node *n, drv_res f)
{
    return (double)f.cpu / (double)n->alloc.cpu;
}

static int cpu_score(const drv_ctx *c, void *st, int32_t pod, int32_t node)
{
    (void)st;
    const drv_state *s = drv_ctx_state(c);
    const drv_pod *p = &s->pods[pod];
    drv_res f = drv_res_sub(drv_ctx_free(c, node), s->jobs[p->job].role[p->role].req);
    return (int)(100.0 * cpu_key(&s->nodes[node], f));
}

static int cpu_bound(const drv_ctx *c, void *st, int32_t pod, const drv_node_set *set)
{
    (void)st;
    const drv_state *s = drv_ctx_state(c);
    const drv_pod *p = &s->pods[pod];
    double req = (double)s->jobs[p->job].role[p->role].req.cpu / (double)set->alloc.cpu;
    return (int)(100.0 * (set->maxkey - req) + 1e-6);
}

/* A score the index cannot key (forces branch and bound): 10 x (node % 7), bounded by 60. */
static int flat_score(const drv_ctx *c, void *st, int32_t pod, int32_t node)
{
    (void)c, (void)st, (void)pod;
    return 10 * (node % 7);
}

static int flat_bound(const drv_ctx *c, void *st, int32_t pod, const drv_node_set *set)
{
    (void)c, (void)st, (void)pod, (void)set;
    return 60;
}

static int64_t placed, worse, refused;

static void checking_admit(drv_ctx *c, void *st, const int32_t *jobs, int32_t n)
{
    (void)st;
    const drv_state *s = drv_ctx_state(c);
    for (int32_t i = 0; i < n; i++) {
        const drv_job *j = &s->jobs[jobs[i]];
        for (int32_t k = 0; k < j->pod_count; k++) {
            int32_t pod = j->pod_base + k, got = drv_ctx_best_node(c, pod);
            int64_t best = -1;
            for (int32_t m = 0; m < s->nnodes; m++) {
                bool fit = drv_ctx_filter(c, pod, m) == DRV_FIT;
                bool room =
                    drv_res_fits(s->jobs[jobs[i]].role[DRV_ROLE_WORKER].req, drv_ctx_free(c, m));
                if (fit != (room && expect_fit(jobs[i], m)))
                    refused++; /* the filter disagrees with the rule */
                if (fit && drv_ctx_score(c, pod, m) > best)
                    best = drv_ctx_score(c, pod, m);
            }
            if ((got < 0) != (best < 0) || (got >= 0 && drv_ctx_score(c, pod, got) < best))
                worse++;
            if (got >= 0 && !expect_fit(jobs[i], got))
                refused++;
            if (got >= 0) {
                drv_ctx_bind(c, pod, got);
                placed++;
            }
        }
    }
}

static const drv_plugin keyed = {
    .name = "t-key", .score = cpu_score, .node_key = cpu_key, .score_bound = cpu_bound};
static const drv_plugin flat = {
    .name = "t-flat", .score = flat_score, .score_bound = flat_bound, .bound_mixed = true};
static const drv_plugin admit = {.name = "t-admit", .admit = checking_admit};

/* The job template's constraint for job j (expect_fit's rule). */
static int32_t rule_constraint(drv_state *st, int32_t j)
{
    drv_label sel = {S(st, "tier"), 0};
    char v[8];
    snprintf(v, sizeof v, "%d", j % 5);
    sel.value = S(st, v);
    drv_toleration tol = {S(st, "hot"), 0, true, DRV_EFFECT_NO_SCHEDULE};
    drv_constraint c = {.selector = &sel, .nselector = j % 5 < 4, .tol = &tol, .ntol = j % 3 == 0};
    int32_t id;
    assert_int_equal(drv_state_add_constraint(st, &c, NULL, &id), 0);
    return id;
}

static void test_index_exact_with_constraints(void **unused)
{
    (void)unused;
    drv_rng r;
    drv_rng_seed(&r, 9);
    for (int round = 0; round < 6; round++) {
        drv_state st;
        assert_int_equal(drv_state_init(&st), 0);
        int32_t nn = (int32_t)drv_rng_range(&r, 20, 200);
        for (int32_t i = 0; i < nn; i++) {
            char name[16], tier[8];
            snprintf(name, sizeof name, "n%d", i);
            snprintf(tier, sizeof tier, "%d", i % 4);
            drv_res a = {drv_rng_range(&r, 1, 3) * 8000, 1 << 30, 0};
            assert_int_equal(drv_state_add_node(&st, name, a, "z", "r", NULL), 0);
            drv_label l = {S(&st, "tier"), S(&st, tier)};
            drv_taint t = {S(&st, "hot"), S(&st, "1"), DRV_EFFECT_NO_SCHEDULE};
            assert_int_equal(drv_state_set_node_meta(&st, i, &l, 1, &t, i % 4 >= 2), 0);
        }
        for (int32_t jn = 0; jn < 80; jn++) {
            drv_job t;
            memset(&t, 0, sizeof t);
            t.phase = DRV_JOB_PENDING;
            t.submit = jn;
            int32_t w = (int32_t)drv_rng_range(&r, 1, 6);
            t.role[DRV_ROLE_WORKER] =
                (drv_rolespec){w, w, w, {drv_rng_range(&r, 1, 8) * 1000, 1, 0}, 0};
            t.cons[DRV_ROLE_WORKER] = rule_constraint(&st, jn);
            assert_int_equal(drv_state_add_job(&st, &t, NULL), 0);
        }
        drv_profile p;
        memset(&p, 0, sizeof p);
        strcpy(p.name, "t");
        p.use[DRV_PT_ADMIT][0] = (drv_plugin_use){.p = &admit, .weight = 1};
        p.use[DRV_PT_SCORE][0] = (drv_plugin_use){.p = &keyed, .weight = 1};
        p.use[DRV_PT_SCORE][1] = (drv_plugin_use){.p = &flat, .weight = 1};
        p.nuse[DRV_PT_ADMIT] = 1;
        p.nuse[DRV_PT_SCORE] = 1 + round % 2; /* odd rounds: branch and bound */
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
    assert_true(placed > 500);
    assert_int_equal(refused, 0);
    assert_int_equal(worse, 0);
}

/* Many classes (issue 17: 5,000 nodes of 1,000 kinds were a scan of every class per node): two
 * nodes share a class exactly when their sets are equal, judged here by their texts; the
 * classes are as many as the distinct sets; failing allocations are DRV_ENOMEM and leave no
 * class half made. */
static void test_many_classes(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    enum { NODES = 600, KINDS = 150 };
    int32_t kind[NODES];
    for (int i = 0; i < NODES; i++) {
        char name[16], rack[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(drv_state_add_node(&st, name, (drv_res){1000, 1, 0}, "z", "r", NULL), 0);
        int k = (i * 7) % KINDS; /* (kinds come back in another order) */
        kind[i] = k;
        snprintf(rack, sizeof rack, "rack-%d", k / 3);
        /* kinds k and k + 1 of one rack differ by a taint's effect or its presence alone */
        drv_label l[] = {{S(&st, "rack"), S(&st, rack)}, {S(&st, "pool"), S(&st, "gpu")}};
        drv_taint t = {S(&st, "gpu"), S(&st, "true"),
                       k % 3 == 1 ? DRV_EFFECT_NO_EXECUTE : DRV_EFFECT_NO_SCHEDULE};
        int rc = DRV_ENOMEM;
        for (long nth = 1; rc == DRV_ENOMEM && nth < 20; nth++) {
            int32_t before = st.nclasses;
            drv_alloc_fail_at(i % 10 == 0 ? nth : 0); /* (every tenth node: each failure) */
            rc = drv_state_set_node_meta(&st, i, l, 2, &t, k % 3 != 2);
            drv_alloc_fail_at(0);
            if (rc == DRV_ENOMEM) /* (class 0 may stay: it has no arrays) */
                assert_true(st.nclasses == before || (before == 0 && st.nclasses == 1));
        }
        assert_int_equal(rc, 0);
    }
    assert_int_equal(st.nclasses, KINDS + 1); /* (and class 0) */
    for (int i = 0; i < NODES; i++)
        for (int j = i + 1; j < NODES; j += 37)
            assert_int_equal(st.nodes[i].node_class == st.nodes[j].node_class, kind[i] == kind[j]);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_taints_and_tolerations),
        cmocka_unit_test(test_selectors_and_affinity),
        cmocka_unit_test(test_scores_and_classes),
        cmocka_unit_test(test_many_classes),
        cmocka_unit_test(test_index_exact_with_constraints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
