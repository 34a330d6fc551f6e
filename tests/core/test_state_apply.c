/* Tests for src/core/state_apply.c: a controller's records pushed into the state in one step
 * (drv_state_apply_node, drv_node_meta_parse, drv_state_place_pod, drv_state_apply_pod,
 * drv_state_end_job). Each test
 * checks every part of the step's work, so that a step skipping one part fails, and the state's
 * invariants after. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "drover/state.h"
#include "testutil.h"

/* A node record naming its node in another table (a controller's), with two pods bound to it
 * before it was seen and one label: added, named, the pods placed, the label set, its room
 * allocatable minus held. */
static void test_apply_node_adds_whole(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    int32_t job = tu_add_job(&st, "j", 0, 2, 2, 2, 1000);
    drv_strtab *api = drv_strtab_new();
    assert_non_null(api);
    int32_t name = drv_strtab_intern(api, "n1"), zone = drv_strtab_intern(api, "z1");
    int32_t rack = drv_strtab_intern(api, "r1");
    int32_t meta = drv_strtab_intern(api, "l\tpool\ta\nt\tgpu\ttrue\tNoSchedule\n");
    int32_t bind[] = {st.jobs[job].pod_base, st.jobs[job].pod_base + 1};
    drv_node_desc d = {.names = api,
                       .name = name,
                       .zone = zone,
                       .rack = rack,
                       .allocatable = {8000, 1LL << 34, 4},
                       .held = {1000, 0, 1},
                       .usable = true,
                       .set_meta = true,
                       .meta = meta,
                       .bind = bind,
                       .nbind = 2};
    int32_t id = -1;
    bool gap = true;
    assert_int_equal(drv_state_apply_node(&st, &d, &id, &gap), 0);
    assert_false(gap); /* (no topology levels) */
    assert_int_equal(id, 0);
    assert_int_equal(st.nnodes, 1);
    const drv_node *n = &st.nodes[id];
    assert_string_equal(drv_strtab_str(st.names, n->name), "n1");
    assert_string_equal(drv_strtab_str(st.names, n->zone), "z1");
    assert_string_equal(drv_strtab_str(st.names, n->rack), "r1");
    assert_int_equal(n->alloc.cpu, 7000);
    assert_int_equal(n->alloc.gpu, 3);
    assert_true(n->schedulable);
    assert_int_equal(n->npods, 2);
    assert_int_equal(st.pods[bind[0]].node, id);
    assert_int_equal(st.pods[bind[1]].node, id);
    assert_int_not_equal(n->node_class, 0);
    const drv_nodeclass *c = &st.classes[n->node_class];
    assert_int_equal(c->nlabels, 1);
    assert_string_equal(drv_strtab_str(st.names, c->labels[0].key), "pool");
    assert_string_equal(drv_strtab_str(st.names, c->labels[0].value), "a");
    assert_int_equal(c->ntaints, 1);
    assert_string_equal(drv_strtab_str(st.names, c->taints[0].key), "gpu");
    assert_int_equal(c->taints[0].effect, DRV_EFFECT_NO_SCHEDULE);
    tu_check_state(&st, false);
    drv_strtab_free(api);
    drv_state_fini(&st);
}

/* Node n1 of 4 CPUs, usable, with labels (and taints) meta in the core's text format. */
static drv_node_desc node_n1(drv_state *st, const char *meta)
{
    return (drv_node_desc){.name = drv_strtab_intern(st->names, "n1"),
                           .allocatable = {4000, 0, 0},
                           .usable = true,
                           .set_meta = true,
                           .meta = drv_strtab_intern(st->names, meta)};
}

/* The same node again: no second node; its room and usability follow the record, its labels
 * are kept when the record gives none (set_meta false) and replaced when it does. */
static void test_apply_node_updates(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    drv_node_desc d = node_n1(&st, "l\tpool\ta\n");
    int32_t id = -1;
    assert_int_equal(drv_state_apply_node(&st, &d, &id, NULL), 0);
    int32_t cls = st.nodes[id].node_class;
    assert_int_not_equal(cls, 0);
    d = (drv_node_desc){.name = d.name, .allocatable = {6000, 0, 0}, .held = {500, 0, 0}};
    assert_int_equal(drv_state_apply_node(&st, &d, &id, NULL), 0);
    assert_int_equal(st.nnodes, 1);
    assert_int_equal(st.nodes[id].alloc.cpu, 5500);
    assert_false(st.nodes[id].schedulable);
    assert_int_equal(st.nodes[id].node_class, cls); /* (kept) */
    d.set_meta = true;                              /* (no labels now: meta 0) */
    assert_int_equal(drv_state_apply_node(&st, &d, &id, NULL), 0);
    assert_int_equal(st.nodes[id].node_class, 0);
    tu_check_state(&st, false);
    drv_state_fini(&st);
}

/* Labels with one key twice are refused, the rest of the record still applied; a record
 * with no name adds nothing. */
static void test_apply_node_refusals(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    drv_node_desc d = node_n1(&st, "l\tpool\ta\nl\tpool\tb\n");
    int32_t id = -1;
    assert_int_equal(drv_state_apply_node(&st, &d, &id, NULL), 0);
    assert_int_equal(st.nodes[id].node_class, 0);
    assert_int_equal(st.nodes[id].alloc.cpu, 4000);
    assert_true(st.nodes[id].schedulable);
    int32_t none = -1;
    d.name = 0;
    assert_int_equal(drv_state_apply_node(&st, &d, &none, NULL), DRV_EINVAL);
    assert_int_equal(none, -1);
    assert_int_equal(st.nnodes, 1);
    tu_check_state(&st, false);
    drv_state_fini(&st);
}

/* With topology levels (rack, then zone of rack): a node with both labels has no gap, one
 * without the rack label has, and relabelling it closes the gap. */
static void test_apply_node_topology_gap(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    const char *keys[] = {"rack", "zone"}, *why = "";
    assert_int_equal(drv_state_set_topology(&st, keys, 2, &why), 0);
    drv_node_desc d = node_n1(&st, "l\track\tr1\nl\tzone\tz1\n");
    int32_t id = -1;
    bool gap = true;
    assert_int_equal(drv_state_apply_node(&st, &d, &id, &gap), 0);
    assert_false(gap);
    int32_t id2 = -1;
    d.name = drv_strtab_intern(st.names, "n2");
    d.meta = drv_strtab_intern(st.names, "l\tzone\tz1\n");
    assert_int_equal(drv_state_apply_node(&st, &d, &id2, &gap), 0);
    assert_true(gap);
    d.meta = drv_strtab_intern(st.names, "l\track\tr2\nl\tzone\tz1\n");
    assert_int_equal(drv_state_apply_node(&st, &d, &id2, &gap), 0);
    assert_false(gap);
    assert_int_equal(st.nnodes, 2);
    tu_check_state(&st, false);
    drv_state_fini(&st);
}

/* The node meta text read back: labels and taints in order, a taint's empty value, a line of
 * another shape (or an unknown effect) skipped. */
static void test_node_meta_parse(void **unused)
{
    (void)unused;
    drv_strtab *names = drv_strtab_new();
    assert_non_null(names);
    drv_label *l = NULL;
    drv_taint *t = NULL;
    int32_t nl = 0, nt = 0;
    assert_int_equal(drv_node_meta_parse("l\tpool\tgpu\nt\tspot\t\tPreferNoSchedule\n"
                                         "x\ty\nt\ta\tb\tSometimes\nl\tgen\t4",
                                         names, &l, &nl, &t, &nt),
                     0);
    assert_int_equal(nl, 2);
    assert_string_equal(drv_strtab_str(names, l[0].key), "pool");
    assert_string_equal(drv_strtab_str(names, l[0].value), "gpu");
    assert_string_equal(drv_strtab_str(names, l[1].key), "gen");
    assert_string_equal(drv_strtab_str(names, l[1].value), "4");
    assert_int_equal(nt, 1);
    assert_string_equal(drv_strtab_str(names, t[0].key), "spot");
    assert_string_equal(drv_strtab_str(names, t[0].value), "");
    assert_int_equal(t[0].effect, DRV_EFFECT_PREFER_NO_SCHEDULE);
    drv_free(l);
    drv_free(t);
    assert_int_equal(drv_node_meta_parse(NULL, names, &l, &nl, &t, &nt), 0);
    assert_int_equal(nl + nt, 0);
    drv_strtab_free(names);
}

/* A pod placed, moved, placed where it is (nothing), unbound. */
static void test_place_pod(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 2, (drv_res){8000, 1LL << 36, 0}, NULL, NULL);
    int32_t job = tu_add_job(&st, "j", 0, 1, 1, 1, 1000);
    int32_t pod = st.jobs[job].pod_base;
    drv_state_place_pod(&st, pod, 0);
    assert_int_equal(st.pods[pod].node, 0);
    assert_int_equal(st.nodes[0].used.cpu, 1000);
    drv_state_place_pod(&st, pod, 1);
    assert_int_equal(st.pods[pod].node, 1);
    assert_int_equal(st.nodes[0].used.cpu, 0);
    assert_int_equal(st.nodes[1].used.cpu, 1000);
    drv_state_place_pod(&st, pod, 1);
    assert_int_equal(st.nodes[1].npods, 1);
    tu_check_state(&st, false);
    drv_state_place_pod(&st, pod, -1);
    assert_int_equal(st.pods[pod].node, -1);
    assert_int_equal(st.nodes[1].used.cpu, 0);
    tu_check_state(&st, false);
    drv_state_fini(&st);
}

/* A pod record: loads moved in order (one cell twice, one node not seen yet), a queue hold, the
 * slot's CPU limit and placement; then one that releases the hold and unbinds the pod, and one
 * about no slot, which places nothing. */
static void test_apply_pod(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 2, (drv_res){8000, 1LL << 36, 0}, NULL, NULL);
    int32_t job = tu_add_job(&st, "j", 0, 1, 1, 1, 1000);
    int32_t pod = st.jobs[job].pod_base, q = -1;
    drv_queue team = {.name = drv_strtab_intern(st.names, "team"), .weight = 1};
    assert_int_equal(drv_state_add_queue(&st, &team, &q), 0);
    drv_res held = {500, 0, 0}, unseen = {0, 0, 0}, alloc = {8000, 1LL << 36, 0};
    drv_pod_desc d = {
        .pod = pod,
        .place = true,
        .node = 1,
        .set_cpu_limit = true,
        .cpu_limit = 3000,
        .load = {{&held, {1000, 0, 0}, +1, 0, alloc, true},
                 {&held, {200, 0, 0}, -1, 0, alloc, true},
                 {&unseen, {700, 0, 0}, +1, -1, {0, 0, 0}, false}},
        .nloads = 3,
        .hold = {{q, {400, 0, 0}, +1}},
        .nholds = 1,
    };
    drv_state_apply_pod(&st, &d);
    assert_int_equal(held.cpu, 1300);
    assert_int_equal(st.nodes[0].alloc.cpu, 8000 - 1300);
    assert_true(st.nodes[0].schedulable);
    assert_int_equal(unseen.cpu, 700);
    assert_int_equal(st.nodes[1].alloc.cpu, 8000);
    assert_int_equal(st.queues[q].held.cpu, 400);
    assert_int_equal(st.pods[pod].node, 1);
    assert_int_equal(st.pods[pod].cpu_limit, 3000);
    assert_int_equal(st.nodes[1].cpu_limit, 3000);
    assert_int_equal(st.nodes[1].used.cpu, 1000);
    tu_check_state(&st, false);
    d = (drv_pod_desc){
        .pod = pod, .place = true, .node = -1, .hold = {{q, {400, 0, 0}, -1}}, .nholds = 1};
    drv_state_apply_pod(&st, &d);
    assert_int_equal(st.queues[q].held.cpu, 0);
    assert_int_equal(st.pods[pod].node, -1);
    assert_int_equal(st.nodes[1].cpu_limit, 0);
    d = (drv_pod_desc){.pod = -1, .place = true, .node = 0};
    drv_state_apply_pod(&st, &d);
    assert_int_equal(st.nodes[0].npods, 0);
    tu_check_state(&st, false);
    drv_state_fini(&st);
}

/* A job ended: every pod of it unbound, its phase done. */
static void test_end_job(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 2, (drv_res){8000, 1LL << 36, 0}, NULL, NULL);
    int32_t job = tu_add_job(&st, "j", 0, 2, 2, 2, 1000);
    drv_state_place_pod(&st, st.jobs[job].pod_base, 0);
    drv_state_place_pod(&st, st.jobs[job].pod_base + 1, 1);
    drv_state_end_job(&st, job);
    assert_int_equal(st.jobs[job].phase, DRV_JOB_DONE);
    for (int32_t k = 0; k < st.jobs[job].pod_count; k++)
        assert_int_equal(st.pods[st.jobs[job].pod_base + k].node, -1);
    assert_int_equal(st.nodes[0].npods + st.nodes[1].npods, 0);
    tu_check_state(&st, false);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_node_adds_whole),
        cmocka_unit_test(test_apply_node_updates),
        cmocka_unit_test(test_apply_node_refusals),
        cmocka_unit_test(test_apply_node_topology_gap),
        cmocka_unit_test(test_node_meta_parse),
        cmocka_unit_test(test_place_pod),
        cmocka_unit_test(test_apply_pod),
        cmocka_unit_test(test_end_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
