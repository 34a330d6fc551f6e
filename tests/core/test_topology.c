/*
 * Topology-bound gangs in the core (state.h "Topology-bound gangs", cycle_topo.c): a gang
 * required in one rack is placed whole in one rack, in the one with the least free room that
 * holds it (best fit), or waits when no rack holds it; a preferred gang goes up a level when no
 * rack holds it; a job's growth stays in its rack; the node index's look-up and the scan of a
 * domain agree with the exhaustive scan. Each through the index by key, branch and bound, and
 * the scan. Expected placements follow from the capacities written here, not from the core's
 * output.
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
#define ZONE "topology.kubernetes.io/zone"
#define RACK "cloud.provider.com/topology-rack"

static const char *const lines[] = {
    "gang=true period=1 queue_order=fifo admit=gang score=least-allocated",
    "gang=true period=1 queue_order=fifo admit=gang score=locality*3,least-allocated",
};
enum { NLINES = sizeof lines / sizeof lines[0] };

/* Nodes of 8 GPUs in the given racks (labels), zone z. With on_field the node's own rack is
 * the label's value (the index's rack family finds a rack's nodes), else "r" for every node
 * (the rack's nodes are scanned). With topo, the state reads the levels zone > rack. */
static void make_cluster(drv_state *st, int n, const char *const *racks, bool on_field, bool topo)
{
    assert_int_equal(drv_state_init(st), 0);
    if (topo) {
        const char *keys[] = {ZONE, RACK};
        const char *why = NULL;
        assert_int_equal(drv_state_set_topology(st, keys, 2, &why), 0);
    }
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(drv_state_add_node(st, name, (drv_res){32000, 128 * GiB, 8}, "z",
                                            on_field ? racks[i] : "r", NULL),
                         0);
        drv_label l[2] = {
            {drv_strtab_intern(st->names, ZONE), drv_strtab_intern(st->names, "z")},
            {drv_strtab_intern(st->names, RACK), drv_strtab_intern(st->names, racks[i])}};
        assert_int_equal(drv_state_set_node_meta(st, i, l, 2, NULL, 0), 0);
    }
}

/* A pending job of w workers (elastic up to wmax) of g GPUs each, bound to the rack level as
 * mode says (enum drv_topo_mode); its id. */
static int32_t add_job(drv_state *st, const char *name, int w, int wmax, int g, int mode)
{
    drv_job t;
    memset(&t, 0, sizeof t);
    t.name = drv_strtab_intern(st->names, name);
    t.phase = DRV_JOB_PENDING;
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){w, w, wmax, {1000, GiB, g}, 1000};
    t.topo_mode = (int8_t)mode;
    t.topo_level = 1; /* the rack */
    int32_t id;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    return id;
}

/* Binds k pods of a one-GPU filler job on node n (taking k GPUs there). */
static void fill(drv_state *st, int n, int k)
{
    char name[16];
    snprintf(name, sizeof name, "fill%d", n);
    int32_t f = add_job(st, name, k, k, 1, DRV_TOPO_NONE);
    for (int i = 0; i < k; i++)
        drv_state_bind(st, st->jobs[f].pod_base + i, n);
}

/* The racks the job's bound pods are on: how many distinct, and the last one (a name). */
static int racks_of(const drv_state *st, int32_t job, const char *const *racks, const char **last)
{
    const drv_job *j = &st->jobs[job];
    const char *seen[16];
    int n = 0;
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t at = st->pods[j->pod_base + k].node;
        if (at < 0)
            continue;
        int i;
        for (i = 0; i < n && strcmp(seen[i], racks[at]) != 0; i++)
            ;
        if (i == n)
            seen[n++] = racks[at];
        *last = racks[at];
    }
    return n;
}

/* Runs one cycle of profile line li on st (exhaustive: the scan instead of the index). */
static void run(drv_state *st, int li, bool exhaustive)
{
    drv_profile p;
    drv_sched *s = tu_sched(&p, lines[li]);
    drv_sched_set_exhaustive(s, exhaustive);
    drv_decisions ds;
    drv_decisions_init(&ds);
    tu_cycle(s, st, &ds, 1, true);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
}

/* Racks: b (n0..n3, 32 free GPUs), a (n4, n5, 16 free). A gang of 2 x 8 GPUs required in one
 * rack goes to a, the least room that holds it, though the scores alone take n0 and n1 (the
 * lowest ids of equal score); one of 3 x 8 to b (a cannot hold 24); one of 5 x 8 waits (no
 * rack holds 40, the cluster does). */
static void test_required_best_fit(void **unused)
{
    (void)unused;
    const char *const racks[] = {"b", "b", "b", "b", "a", "a"};
    for (int v = 0; v < 2 * NLINES * 2; v++) {
        int li = v % NLINES;
        bool on_field = (v / NLINES) % 2, exh = v / (2 * NLINES);
        drv_state st;
        make_cluster(&st, 6, racks, on_field, true);
        int32_t small = add_job(&st, "small", 2, 2, 8, DRV_TOPO_REQUIRED);
        run(&st, li, exh);
        const char *r = NULL;
        assert_int_equal(st.jobs[small].bound[DRV_ROLE_WORKER], 2);
        assert_int_equal(racks_of(&st, small, racks, &r), 1);
        assert_string_equal(r, "a");
        int32_t mid = add_job(&st, "mid", 3, 3, 8, DRV_TOPO_REQUIRED);
        int32_t big = add_job(&st, "big", 5, 5, 8, DRV_TOPO_REQUIRED);
        run(&st, li, exh);
        assert_int_equal(st.jobs[mid].bound[DRV_ROLE_WORKER], 3);
        assert_int_equal(racks_of(&st, mid, racks, &r), 1);
        assert_string_equal(r, "b");
        assert_int_equal(st.jobs[big].bound[DRV_ROLE_WORKER], 0);
        drv_state_fini(&st);
    }
}

/* Racks a (n0, n1) and b (n2, n3), 6 GPUs taken on n0 and n2: each rack has 10 free, 2 + 8.
 * A gang of 3 x 4 GPUs required in one rack waits (the scores alone would put it on n1, n3 and
 * n1); one of 2 x 4 lands both on one rack's free node (the scores alone: n1, then n3, the
 * emptier). Its domain would hold 2 x 4 only on that one node: the rack's sum is not enough. */
static void test_required_waits_or_stays(void **unused)
{
    (void)unused;
    const char *const racks[] = {"a", "a", "b", "b"};
    for (int v = 0; v < 2 * NLINES * 2; v++) {
        int li = v % NLINES;
        bool on_field = (v / NLINES) % 2, exh = v / (2 * NLINES);
        drv_state st;
        make_cluster(&st, 4, racks, on_field, true);
        fill(&st, 0, 6);
        fill(&st, 2, 6);
        tu_settle(&st, true);
        int32_t three = add_job(&st, "three", 3, 3, 4, DRV_TOPO_REQUIRED);
        run(&st, li, exh);
        assert_int_equal(st.jobs[three].bound[DRV_ROLE_WORKER], 0);
        int32_t two = add_job(&st, "two", 2, 2, 4, DRV_TOPO_REQUIRED);
        run(&st, li, exh);
        const char *r = NULL;
        assert_int_equal(st.jobs[two].bound[DRV_ROLE_WORKER], 2);
        assert_int_equal(racks_of(&st, two, racks, &r), 1);
        drv_state_fini(&st);
    }
}

/* Preferred: a gang no rack holds goes up to the zone (and is placed); required, it waits. */
static void test_preferred_goes_up(void **unused)
{
    (void)unused;
    const char *const racks[] = {"a", "a", "b", "b"};
    for (int li = 0; li < NLINES; li++) {
        drv_state st;
        make_cluster(&st, 4, racks, true, true);
        int32_t req = add_job(&st, "req", 3, 3, 8, DRV_TOPO_REQUIRED);
        int32_t pref = add_job(&st, "pref", 3, 3, 8, DRV_TOPO_PREFERRED);
        run(&st, li, false);
        assert_int_equal(st.jobs[req].bound[DRV_ROLE_WORKER], 0);
        assert_int_equal(st.jobs[pref].bound[DRV_ROLE_WORKER], 3);
        drv_state_fini(&st);
    }
}

/* Levels zone > kubernetes.io/hostname, no node carrying the hostname label (Kubernetes'
 * classes leave it out): each node is its own domain. A gang of 2 x 4 GPUs required on one
 * hostname lands both pods on one node (the scores alone spread it: least-allocated takes the
 * emptiest); one of 2 x 8 waits (no node has 16), its reason naming the largest free node. */
static void test_required_hostname(void **unused)
{
    (void)unused;
    const char *const racks[] = {"a", "a", "b", "b"};
    for (int v = 0; v < NLINES * 2; v++) {
        int li = v % NLINES;
        bool exh = v / NLINES;
        drv_state st;
        make_cluster(&st, 4, racks, true, false);
        const char *keys[] = {ZONE, DRV_TOPO_HOSTNAME}, *why = NULL;
        assert_int_equal(drv_state_set_topology(&st, keys, 2, &why), 0);
        assert_int_equal(st.topo_host, 2);
        int32_t two = add_job(&st, "two", 2, 2, 4, DRV_TOPO_REQUIRED);
        int32_t big = add_job(&st, "big", 2, 2, 8, DRV_TOPO_REQUIRED);
        run(&st, li, exh);
        const drv_job *j = &st.jobs[two];
        assert_int_equal(j->bound[DRV_ROLE_WORKER], 2);
        assert_int_equal(st.pods[j->pod_base].node, st.pods[j->pod_base + 1].node);
        assert_int_equal(st.jobs[big].bound[DRV_ROLE_WORKER], 0);
        char buf[256];
        assert_true(drv_topo_explain(&st, big, buf, sizeof buf));
        assert_string_equal(buf, "needs 16 GPUs in one node (kubernetes.io/hostname); the "
                                 "largest free node has 8");
        drv_state_fini(&st);
    }
}

/* A running job required in rack b grows in b only, though rack a is empty. */
static void test_growth_stays_in_rack(void **unused)
{
    (void)unused;
    const char *const racks[] = {"a", "a", "b"};
    drv_state st;
    make_cluster(&st, 3, racks, true, true);
    int32_t j = add_job(&st, "j", 1, 4, 4, DRV_TOPO_REQUIRED);
    drv_state_bind(&st, st.jobs[j].pod_base, 2);
    tu_settle(&st, true);
    drv_profile p;
    drv_sched *s = tu_sched(&p, "gang=true period=1 queue_order=fifo admit=gang "
                                "scale=dragon(quiet=0) score=least-allocated");
    drv_decisions ds;
    drv_decisions_init(&ds);
    for (int t = 1; t < 5; t++)
        tu_cycle(s, &st, &ds, 100.0 * t, true);
    const char *r = NULL;
    assert_int_equal(racks_of(&st, j, racks, &r), 1);
    assert_string_equal(r, "b");
    assert_true(st.jobs[j].bound[DRV_ROLE_WORKER] <= 2);
    drv_decisions_fini(&ds);
    drv_sched_free(s);
    drv_state_fini(&st);
}

/* Metamorphic: over seeded random clusters (racks of 1-4 nodes, some GPUs taken) and queues
 * of required, preferred and free gangs, the index (by key, branch and bound; rack on the
 * node's field or not) places every pod where the exhaustive scan does. */
static void test_index_agrees_with_scan(void **unused)
{
    (void)unused;
    uint64_t seed = 29;
    const char *const names[] = {"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"};
    for (int round = 0; round < 40; round++) {
        const char *racks[24];
        int n = 8 + (int)(tu_rnd(&seed) % 16);
        for (int i = 0; i < n; i++)
            racks[i] = names[tu_rnd(&seed) % 8];
        int li = 1; /* branch and bound: decides as the scan, node for node (docs/cycle.md) */
        bool on_field = round % 2;
        drv_state st[2];
        for (int k = 0; k < 2; k++)
            make_cluster(&st[k], n, racks, on_field, true);
        uint64_t s2 = seed;
        for (int k = 0; k < 2; k++) {
            s2 = seed;
            for (int i = 0; i < n; i++) {
                int taken = (int)(tu_rnd(&s2) % 9);
                if (taken)
                    fill(&st[k], i, taken);
            }
            tu_settle(&st[k], true);
            for (int i = 0; i < 12; i++) {
                char name[8];
                snprintf(name, sizeof name, "j%d", i);
                add_job(&st[k], name, 1 + (int)(tu_rnd(&s2) % 6), 6, 1 + (int)(tu_rnd(&s2) % 8),
                        (int)(tu_rnd(&s2) % 3));
            }
            run(&st[k], li, k == 1);
        }
        seed = s2;
        for (int32_t i = 0; i < st[0].npods; i++)
            assert_int_equal(st[0].pods[i].node, st[1].pods[i].node);
        for (int k = 0; k < 2; k++)
            drv_state_fini(&st[k]);
    }
}

/* Bad levels: an empty key, a key twice, too many: refused with the rule named, the state's
 * levels untouched; a job naming a level the state lacks is refused. */
static void test_bad_levels(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    const char *why = NULL;
    const char *dup[] = {ZONE, RACK, ZONE};
    assert_int_equal(drv_state_set_topology(&st, dup, 3, &why), DRV_EINVAL);
    assert_string_equal(why, "a label key given twice");
    const char *empty[] = {ZONE, ""};
    assert_int_equal(drv_state_set_topology(&st, empty, 2, &why), DRV_EINVAL);
    assert_string_equal(why, "an empty label key");
    const char *many[DRV_MAX_TOPO + 1];
    char buf[DRV_MAX_TOPO + 1][8];
    for (int i = 0; i <= DRV_MAX_TOPO; i++) {
        snprintf(buf[i], sizeof buf[i], "k%d", i);
        many[i] = buf[i];
    }
    assert_int_equal(drv_state_set_topology(&st, many, DRV_MAX_TOPO + 1, &why), DRV_EINVAL);
    assert_int_equal(st.ntopo, 0);
    drv_job t;
    memset(&t, 0, sizeof t);
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {1000, GiB, 0}, 1000};
    t.topo_mode = DRV_TOPO_REQUIRED;
    t.topo_level = 0;
    assert_int_equal(drv_state_add_job(&st, &t, NULL), DRV_EINVAL);
    assert_int_equal(drv_state_topo_level(&st, RACK), -1);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_required_best_fit), cmocka_unit_test(test_required_waits_or_stays),
        cmocka_unit_test(test_preferred_goes_up), cmocka_unit_test(test_growth_stays_in_rack),
        cmocka_unit_test(test_required_hostname), cmocka_unit_test(test_index_agrees_with_scan),
        cmocka_unit_test(test_bad_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
