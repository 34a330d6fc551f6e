/*
 * Tests of the defrag plugin (src/policy/defrag.c) and the core's read-only topology query it
 * reads (drv_ctx_topo_*, src/core/cycle_topo.c), on hand-built states through drv_sched_cycle:
 * the query's domains, free and held room in the assumed state; the plugin moving the cheapest
 * jobs out of a fragmented rack, the gang then bound inside one rack; nothing moved when the
 * loss exceeds the gain or before `wait`; no built-in profile has it; its knobs' bounds.
 *
 * The cluster of defrag.c's worked example: racks a (n0, n1) and b (n2, n3) of 8 GPUs a node,
 * zone > rack levels; unconstrained running jobs of one 4-GPU worker on each node - x0 (n0,
 * since t=0), x1 (n1, since 300), x2 (n2, since 0), x3 (n3, since 400) - and G, 2 x 8 GPUs
 * required in one rack, pending. Expected moves follow from those numbers, not from the code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drover/policy.h"

#define GiB (1024LL * 1024 * 1024)
#define ZONE "topology.kubernetes.io/zone"
#define RACK "cloud.provider.com/topology-rack"

static const char *const racks[] = {"a", "a", "b", "b"};

typedef struct fixture {
    drv_state st;
    int32_t x[4]; /* x0..x3, the 4-GPU jobs on n0..n3 */
    int32_t g;    /* the gang required in one rack */
    drv_profile prof;
    drv_sched *s;
    drv_decisions ds;
} fixture;

static int32_t add_job(drv_state *st, const char *name, int w, int64_t gpu, int mode, double submit)
{
    drv_job t;
    memset(&t, 0, sizeof t);
    t.name = drv_strtab_intern(st->names, name);
    t.submit = submit;
    t.phase = DRV_JOB_PENDING;
    t.start = t.run_start = t.end = -1;
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){w, w, w, {1000, GiB, gpu}, 1000};
    t.topo_mode = (int8_t)mode;
    t.topo_level = 1; /* the rack */
    int32_t id;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    return id;
}

/* The cluster above; G submitted at g_submit. */
static void fx_state(fixture *f, double g_submit)
{
    memset(f, 0, sizeof *f);
    drv_state *st = &f->st;
    assert_int_equal(drv_state_init(st), 0);
    const char *keys[] = {ZONE, RACK};
    const char *why = NULL;
    assert_int_equal(drv_state_set_topology(st, keys, 2, &why), 0);
    const double since[] = {0, 300, 0, 400};
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(
            drv_state_add_node(st, name, (drv_res){32000, 128 * GiB, 8}, "z", racks[i], NULL), 0);
        drv_label l[2] = {
            {drv_strtab_intern(st->names, ZONE), drv_strtab_intern(st->names, "z")},
            {drv_strtab_intern(st->names, RACK), drv_strtab_intern(st->names, racks[i])}};
        assert_int_equal(drv_state_set_node_meta(st, i, l, 2, NULL, 0), 0);
    }
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        f->x[i] = add_job(st, name, 1, 4, DRV_TOPO_NONE, since[i]);
        drv_state_bind(st, st->jobs[f->x[i]].pod_base, i);
        drv_state_set_phase(st, f->x[i], DRV_JOB_RUNNING);
        st->jobs[f->x[i]].start = st->jobs[f->x[i]].run_start = since[i];
    }
    f->g = add_job(st, "g", 2, 8, DRV_TOPO_REQUIRED, g_submit);
    drv_decisions_init(&f->ds);
}

static void fx_sched(fixture *f, const char *line)
{
    drv_diag d;
    if (drv_profile_parse("t", line, &f->prof, &d) != 0 || drv_sched_new(&f->prof, &f->s, &d) != 0)
        fail_msg("%s", d.msg);
}

static void fx_fini(fixture *f)
{
    drv_decisions_fini(&f->ds);
    drv_sched_free(f->s);
    drv_state_fini(&f->st);
}

/* One cycle at now; its decisions applied as a driver would (MIGRATE moves, BIND binds). */
static void cycle(fixture *f, double now)
{
    f->ds.n = 0;
    drv_snapshot snap = {.st = &f->st, .now = now};
    assert_int_equal(drv_sched_cycle(f->s, &snap, &f->ds), 0);
    for (int32_t i = 0; i < f->ds.n; i++) {
        const drv_decision *x = &f->ds.v[i];
        if (x->kind == DRV_BIND || x->kind == DRV_MIGRATE) {
            if (x->kind == DRV_MIGRATE)
                drv_state_unbind(&f->st, x->pod);
            drv_state_bind(&f->st, x->pod, x->node);
        }
    }
    drv_diag d;
    if (drv_state_check(&f->st, true, &d) != 0)
        fail_msg("%s", d.msg);
}

static int count(const fixture *f, int kind)
{
    int n = 0;
    for (int32_t i = 0; i < f->ds.n; i++)
        n += f->ds.v[i].kind == kind;
    return n;
}

static int32_t node_of(const fixture *f, int32_t job, int k)
{
    return f->st.pods[f->st.jobs[job].pod_base + k].node;
}

/* ---- the core's query, read by a probe plugin at the migrate point ---------------------- */

static struct {
    int32_t ndom, ndom_bad, node_dom[4];
    drv_res free[2], held_x0[2], need;
} seen;
static int32_t probe_x0, probe_g;

static void probe_migrate(drv_ctx *c, void *state)
{
    (void)state;
    seen.ndom = drv_ctx_topo_domains(c, 1);
    seen.ndom_bad = drv_ctx_topo_domains(c, 5);
    for (int32_t n = 0; n < 4; n++)
        seen.node_dom[n] = drv_ctx_topo_node_domain(c, 1, n);
    for (int32_t d = 0; d < 2; d++) {
        seen.free[d] = drv_ctx_topo_free(c, 1, d);
        seen.held_x0[d] = drv_ctx_topo_held(c, probe_x0, 1, d);
    }
    seen.need = drv_ctx_gang_need(c, probe_g, 2);
}
static const drv_plugin probe = {.name = "probe", .migrate = probe_migrate};

/* Racks a (domain 0) and b (1); a small job y of 2 GPUs is admitted this cycle before the
 * probe runs, onto n0 (least-allocated, ties to the lower id): the query sees rack a's free
 * room as 8 - 2 = 6, rack b's as 8; x0 holds 4 GPUs in a, none in b; G misses 16 GPUs. */
static void test_query(void **unused)
{
    (void)unused;
    fixture f;
    fx_state(&f, 0);
    int32_t y = add_job(&f.st, "y", 1, 2, DRV_TOPO_NONE, 0);
    f.st.jobs[f.g].submit = 1; /* y first in FIFO; G does not fit anyway */
    drv_diag d;
    assert_int_equal(drv_profile_parse("t",
                                       "gang=true period=1 queue_order=fifo admit=gang "
                                       "score=least-allocated",
                                       &f.prof, &d),
                     0);
    f.prof.use[DRV_PT_MIGRATE][f.prof.nuse[DRV_PT_MIGRATE]++] = (drv_plugin_use){.p = &probe};
    assert_int_equal(drv_sched_new(&f.prof, &f.s, &d), 0);
    probe_x0 = f.x[0];
    probe_g = f.g;
    memset(&seen, 0, sizeof seen);
    cycle(&f, 10);
    assert_int_equal(node_of(&f, y, 0), 0);
    assert_int_equal(seen.ndom, 2);
    assert_int_equal(seen.ndom_bad, 0);
    assert_int_equal(seen.node_dom[0], 0);
    assert_int_equal(seen.node_dom[1], 0);
    assert_int_equal(seen.node_dom[2], 1);
    assert_int_equal(seen.node_dom[3], 1);
    assert_int_equal(seen.free[0].gpu, 6);
    assert_int_equal(seen.free[1].gpu, 8);
    assert_int_equal(seen.held_x0[0].gpu, 4);
    assert_int_equal(seen.held_x0[1].gpu, 0);
    assert_int_equal(seen.need.gpu, 16);
    fx_fini(&f);
}

/* ---- the plugin ------------------------------------------------------------------------- */

#define DEFRAG_LINE(knobs)                                                                         \
    "gang=true period=1 queue_order=fifo admit=gang score=least-allocated migrate=defrag(" knobs ")"

/* At t=1000: clearing rack a loses (100 + 30) x 4 + (400 + 30) x 4 = 2240 GPU-s (x1, x0),
 * rack b (0 + 30) x 4 + (400 + 30) x 4 = 1840 (x3, x2): x3 and x2 move to rack a, x3 first
 * (the least lost work) to n0, x2 to n1, and G binds on n2 and n3 in the same cycle. Its gain:
 * no rate is known, so its wait so far, 1000 s x 16 GPUs. */
static void test_moves_cheapest(void **unused)
{
    (void)unused;
    fixture f;
    fx_state(&f, 0);
    fx_sched(&f, DEFRAG_LINE("checkpoint=600;restart=30;wait=0"));
    cycle(&f, 1000);
    assert_int_equal(count(&f, DRV_MIGRATE), 2);
    assert_int_equal(f.ds.v[0].kind, DRV_MIGRATE);
    assert_int_equal(f.ds.v[0].job, f.x[3]);
    assert_int_equal(f.ds.v[0].node, 0);
    assert_int_equal(f.ds.v[1].job, f.x[2]);
    assert_int_equal(f.ds.v[1].node, 1);
    assert_int_equal(count(&f, DRV_BIND), 2);
    assert_int_equal(node_of(&f, f.g, 0) / 2, 1); /* both in rack b */
    assert_int_equal(node_of(&f, f.g, 1) / 2, 1);
    assert_int_not_equal(node_of(&f, f.g, 0), node_of(&f, f.g, 1));
    assert_int_equal(node_of(&f, f.x[0], 0), 0); /* rack a's jobs stay */
    assert_int_equal(node_of(&f, f.x[1], 0), 1);
    fx_fini(&f);
}

/* G submitted at 900: at t=1000 it gains 100 s x 16 GPUs = 1600 < the cheapest clearing's
 * 1840: nothing moves, G waits. Submitted at 880 (gain 1920 > 1840), rack b is cleared. */
static void test_loss_exceeds_gain(void **unused)
{
    (void)unused;
    fixture f;
    fx_state(&f, 900);
    fx_sched(&f, DEFRAG_LINE("checkpoint=600;restart=30;wait=0"));
    cycle(&f, 1000);
    assert_int_equal(f.ds.n, 0);
    assert_int_equal(node_of(&f, f.g, 0), -1);
    fx_fini(&f);
    fx_state(&f, 880);
    fx_sched(&f, DEFRAG_LINE("checkpoint=600;restart=30;wait=0"));
    cycle(&f, 1000);
    assert_int_equal(count(&f, DRV_MIGRATE), 2);
    assert_int_equal(node_of(&f, f.g, 0) / 2, 1);
    fx_fini(&f);
}

/* Before it has waited `wait` seconds, G is not helped; after, it is. */
static void test_wait(void **unused)
{
    (void)unused;
    fixture f;
    fx_state(&f, 0);
    fx_sched(&f, DEFRAG_LINE("checkpoint=600;wait=1200"));
    cycle(&f, 1000);
    assert_int_equal(f.ds.n, 0);
    cycle(&f, 1200);
    assert_int_equal(count(&f, DRV_MIGRATE), 2);
    fx_fini(&f);
}

/* Off by default: no built-in profile names defrag, and drover's, on this state, moves nothing
 * for G however long it waited. */
static void test_off_by_default(void **unused)
{
    (void)unused;
    for (int i = 0; i < drv_profile_builtin_count(); i++)
        assert_null(strstr(drv_profile_builtin_line(i), "defrag"));
    fixture f;
    fx_state(&f, 0);
    drv_diag d;
    assert_int_equal(drv_profile_builtin("drover", &f.prof, &d), 0);
    assert_int_equal(drv_sched_new(&f.prof, &f.s, &d), 0);
    cycle(&f, 100000);
    assert_int_equal(count(&f, DRV_MIGRATE), 0);
    assert_int_equal(node_of(&f, f.g, 0), -1);
    fx_fini(&f);
}

/* Knobs out of range, or unknown, are errors naming the knob. */
static void test_bad_knobs(void **unused)
{
    (void)unused;
    static const char *const bad[] = {"wait=-1",      "checkpoint=1e9", "restart=-5",
                                      "max_movers=0", "max_movers=65",  "spread=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[256];
        snprintf(line, sizeof line, DEFRAG_LINE("%s"), bad[i]);
        drv_profile p;
        drv_sched *s = NULL;
        drv_diag d = {0};
        int rc = drv_profile_parse("t", line, &p, &d);
        if (rc == 0)
            rc = drv_sched_new(&p, &s, &d);
        assert_true(rc == DRV_ERANGE || rc == DRV_EINVAL);
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(bad[i], "="), bad[i]);
        if (!strstr(d.msg, name))
            fail_msg("%s: %s", bad[i], d.msg);
        drv_sched_free(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query),
        cmocka_unit_test(test_moves_cheapest),
        cmocka_unit_test(test_loss_exceeds_gain),
        cmocka_unit_test(test_wait),
        cmocka_unit_test(test_off_by_default),
        cmocka_unit_test(test_bad_knobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
