/*
 * GPU types in the core (state.h "GPU types", cycle_place.c): a job's GPU pods all land on one
 * type, also when the scores would start it on a type too small for it (the gang is then tried
 * on the others); a job whose GPUs hold a type grows there only; a cluster of one type decides
 * exactly as a cluster without types; a job that asks for a type no node has never runs.
 * Expected placements follow from the capacities written here, not from the core's output.
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

/* Profiles that place through each path: gang admission with spreading and packing scores
 * (the node index), and pod-by-pod admission (pods one at a time, no gang). */
static const char *const lines[] = {
    "gang=true period=1 queue_order=fifo admit=gang score=least-allocated",
    "gang=true period=1 queue_order=fifo admit=gang score=locality*3,most-allocated",
    "gang=false period=1 queue_order=fifo admit=pod-by-pod score=least-allocated",
};
enum { NLINES = sizeof lines / sizeof lines[0] };

/* A state of nodes with the given GPU counts and types ("" for no type label); the state reads
 * types when `typed`. */
static void make_cluster(drv_state *st, int n, const int *gpus, const char *const *types,
                         bool typed)
{
    assert_int_equal(drv_state_init(st), 0);
    if (typed)
        assert_int_equal(drv_state_set_gpu_type_label(st, DRV_GPU_TYPE_LABEL), 0);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(
            drv_state_add_node(st, name, (drv_res){32000, 128 * GiB, gpus[i]}, "z", "r", NULL), 0);
        if (!*types[i])
            continue;
        drv_label l = {drv_strtab_intern(st->names, DRV_GPU_TYPE_LABEL),
                       drv_strtab_intern(st->names, types[i])};
        assert_int_equal(drv_state_set_node_meta(st, i, &l, 1, NULL, 0), 0);
    }
}

/* A pending job of w workers (elastic up to wmax) of one GPU and one CPU each; its id. */
static int32_t add_gpu_job(drv_state *st, const char *name, int w, int wmax)
{
    drv_job t;
    memset(&t, 0, sizeof t);
    t.name = drv_strtab_intern(st->names, name);
    t.phase = DRV_JOB_PENDING;
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){w, w, wmax, {1000, GiB, 1}, 1000};
    int32_t id;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    return id;
}

/* The GPU types the job's bound pods are on: how many distinct, and the last one seen. */
static int types_of_job(const drv_state *st, int32_t job, int32_t *type)
{
    const drv_job *j = &st->jobs[job];
    int32_t seen[8];
    int n = 0;
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t at = st->pods[j->pod_base + k].node;
        if (at < 0)
            continue;
        int32_t ty = drv_node_gpu_type(st, at), i;
        for (i = 0; i < n && seen[i] != ty; i++)
            ;
        if (i == n)
            seen[n++] = ty;
        *type = ty;
    }
    return n;
}

static int32_t bound_pods(const drv_state *st, int32_t job)
{
    return st->jobs[job].bound[DRV_ROLE_WORKER];
}

/* 6 one-GPU workers; type a has 4 GPUs on one node (first or last in id order), type b 6 free
 * on two nodes: only b holds the whole gang, and without the rule 4 + 2 would do. Placed pod
 * by pod (no gang), the job still keeps to the type of its first pod. */
static void test_one_type_per_job(void **unused)
{
    (void)unused;
    for (int order = 0; order < 2; order++)
        for (int li = 0; li < NLINES; li++) {
            const int gpus[2][3] = {{4, 4, 4}, {4, 4, 4}};
            const char *const types[2][3] = {{"a", "b", "b"}, {"b", "b", "a"}};
            drv_state st;
            make_cluster(&st, 3, gpus[order], types[order], true);
            /* one GPU of each b node is taken: b keeps 6 free, a 4 */
            int32_t x = add_gpu_job(&st, "x", 2, 2);
            int32_t b0 = order ? 0 : 1, b1 = order ? 1 : 2;
            drv_state_bind(&st, st.jobs[x].pod_base, b0);
            drv_state_bind(&st, st.jobs[x].pod_base + 1, b1);
            tu_settle(&st, true);
            int32_t j = add_gpu_job(&st, "big", 6, 6);
            drv_profile p;
            drv_sched *s = tu_sched(&p, lines[li]);
            drv_decisions ds;
            drv_decisions_init(&ds);
            tu_cycle(s, &st, &ds, 1, li < 2);
            int32_t ty = 0;
            assert_int_equal(types_of_job(&st, j, &ty), 1);
            if (li < 2) { /* a gang: whole, on the one type that holds it */
                assert_int_equal(bound_pods(&st, j), 6);
                assert_int_equal(ty, drv_strtab_intern(st.names, "b"));
            } else { /* pod by pod: as many as the first pod's type holds, no more */
                assert_int_equal(bound_pods(&st, j),
                                 ty == drv_strtab_intern(st.names, "b") ? 6 : 4);
            }
            drv_decisions_fini(&ds);
            drv_sched_free(s);
            drv_state_fini(&st);
        }
}

/* A running job on type b grows only on b, even when a has the free GPUs. */
static void test_growth_stays_on_type(void **unused)
{
    (void)unused;
    const int gpus[] = {8, 2};
    const char *const types[] = {"a", "b"};
    drv_state st;
    make_cluster(&st, 2, gpus, types, true);
    int32_t j = add_gpu_job(&st, "j", 1, 4);
    drv_state_bind(&st, st.jobs[j].pod_base, 1);
    tu_settle(&st, true);
    drv_profile p;
    drv_sched *s = tu_sched(&p, "gang=true period=1 queue_order=fifo admit=gang "
                                "scale=dragon(quiet=0) score=least-allocated");
    drv_decisions ds;
    drv_decisions_init(&ds);
    for (int t = 1; t < 5; t++)
        tu_cycle(s, &st, &ds, 100.0 * t, true);
    int32_t ty = 0;
    assert_int_equal(types_of_job(&st, j, &ty), 1);
    assert_int_equal(ty, drv_strtab_intern(st.names, "b"));
    assert_true(bound_pods(&st, j) <= 2);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* Metamorphic: nodes all of one type decide as nodes without types, job for job. */
static void test_one_type_is_no_type(void **unused)
{
    (void)unused;
    const int gpus[] = {4, 2, 8, 1, 4};
    const char *const one[] = {"a", "a", "a", "a", "a"};
    for (int li = 0; li < NLINES; li++) {
        drv_state st[2];
        make_cluster(&st[0], 5, gpus, one, false);
        make_cluster(&st[1], 5, gpus, one, true);
        drv_profile p[2];
        drv_sched *s[2] = {tu_sched(&p[0], lines[li]), tu_sched(&p[1], lines[li])};
        drv_decisions ds;
        drv_decisions_init(&ds);
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < 8; i++) {
                char name[8];
                snprintf(name, sizeof name, "j%d", i);
                add_gpu_job(&st[k], name, 1 + i % 4, 1 + i % 4);
            }
            tu_cycle(s[k], &st[k], &ds, 1, li < 2);
        }
        for (int32_t i = 0; i < st[0].npods; i++)
            assert_int_equal(st[0].pods[i].node, st[1].pods[i].node);
        drv_decisions_fini(&ds);
        for (int k = 0; k < 2; k++) {
            drv_sched_free(s[k]);
            drv_state_fini(&st[k]);
        }
    }
}

/* A nodeSelector on a type no node has: the job never runs, the others do. */
static void test_missing_type_never_fits(void **unused)
{
    (void)unused;
    const int gpus[] = {4, 4};
    const char *const types[] = {"a", "b"};
    drv_state st;
    make_cluster(&st, 2, gpus, types, true);
    drv_label sel = {drv_strtab_intern(st.names, DRV_GPU_TYPE_LABEL),
                     drv_strtab_intern(st.names, "h100")};
    drv_constraint c = {.selector = &sel, .nselector = 1};
    int32_t k;
    assert_int_equal(drv_state_add_constraint(&st, &c, NULL, &k), 0);
    int32_t j = add_gpu_job(&st, "wants-h100", 1, 1);
    st.jobs[j].cons[DRV_ROLE_WORKER] = k;
    int32_t other = add_gpu_job(&st, "any", 2, 2);
    drv_profile p;
    drv_sched *s = tu_sched(&p, lines[0]);
    drv_decisions ds;
    drv_decisions_init(&ds);
    tu_cycle(s, &st, &ds, 1, true);
    assert_int_equal(bound_pods(&st, j), 0);
    assert_int_equal(bound_pods(&st, other), 2);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_type_per_job),
        cmocka_unit_test(test_growth_stays_on_type),
        cmocka_unit_test(test_one_type_is_no_type),
        cmocka_unit_test(test_missing_type_never_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
