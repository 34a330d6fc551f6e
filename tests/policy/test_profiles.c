/* Tests for src/policy: profile lines, knob checking and the baseline plugins' choices. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drover/policy.h"

#define GiB (1024LL * 1024 * 1024)

static void test_builtins_parse(void **unused)
{
    (void)unused;
    drv_diag d;
    for (int i = 0; i < drv_profile_builtin_count(); i++) {
        drv_profile p;
        assert_int_equal(drv_profile_builtin(drv_profile_builtin_name(i), &p, &d), 0);
        drv_sched *s;
        assert_int_equal(drv_sched_new(&p, &s, &d), 0);
        drv_sched_free(s);
    }
    drv_profile p;
    assert_int_equal(drv_profile_builtin("nope", &p, &d), DRV_ENOENT);
    assert_non_null(strstr(d.msg, "k8s-default"));
    assert_non_null(strstr(d.msg, "gang-fifo"));
}

/* Two profiles say the same: points, plugins, weights, knobs (names and values), settings. */
static void assert_same_profile(const drv_profile *a, const drv_profile *b)
{
    assert_int_equal(a->gang, b->gang);
    assert_true(a->period == b->period);
    for (int pt = 0; pt < DRV_NPOINTS; pt++) {
        assert_int_equal(a->nuse[pt], b->nuse[pt]);
        for (int i = 0; i < a->nuse[pt]; i++) {
            const drv_plugin_use *u = &a->use[pt][i], *v = &b->use[pt][i];
            assert_ptr_equal(u->p, v->p);
            assert_int_equal(u->weight, v->weight);
            assert_int_equal(u->nknobs, v->nknobs);
            for (int k = 0; k < u->nknobs; k++) {
                assert_string_equal(drv_profile_knobs(a, u)[k].name,
                                    drv_profile_knobs(b, v)[k].name);
                assert_true(drv_profile_knobs(a, u)[k].value == drv_profile_knobs(b, v)[k].value);
            }
        }
    }
}

/* A profile built from parts, the YAML loader's way (typed settings, each point's text with
 * spaces as a person writes it), equals the one parsed from the line: one parser, two ways in
 * (a metamorphic check). Knob values are numbers from the start. */
static void test_profile_parts_equal_line(void **unused)
{
    (void)unused;
    drv_diag d = {{0}};
    drv_profile line, parts;
    assert_int_equal(
        drv_profile_parse("x",
                          "gang=false period=5 queue_order=priority(w_par=0;w_wait=2.5) "
                          "admit=dragon(starve_wait=30) scale=dragon "
                          "score=locality*3,least-allocated",
                          &line, &d),
        0);
    drv_profile_init(&parts, "x");
    parts.gang = false;
    parts.period = 5;
    static const struct {
        int pt;
        const char *text;
    } in[] = {{DRV_PT_QUEUE_ORDER, " priority( w_par = 0 ; w_wait=2.5 ) "},
              {DRV_PT_ADMIT, "dragon(starve_wait=30)"},
              {DRV_PT_SCALE, "dragon"},
              {DRV_PT_SCORE, "locality * 3, least-allocated,"}};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        if (drv_profile_set_point(&parts, in[i].pt, in[i].text, strlen(in[i].text), &d) != 0)
            fail_msg("%s: %s", in[i].text, d.msg);
    assert_int_equal(drv_profile_check(&parts, &d), 0);
    assert_same_profile(&line, &parts);
    const drv_plugin_use *q = &line.use[DRV_PT_QUEUE_ORDER][0];
    assert_int_equal(q->nknobs, 2);
    assert_true(drv_profile_knobs(&line, q)[1].value == 2.5);
    /* The same errors either way, and a profile's knobs are bounded in all. */
    assert_int_equal(drv_profile_set_point(&parts, DRV_PT_SCORE, "locality*0", 10, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "weight '0' must be 1..1000"));
    assert_int_equal(drv_profile_set_point(&parts, DRV_PT_ADMIT, "gang(strict)", 12, &d),
                     DRV_EINVAL);
    assert_non_null(strstr(d.msg, "expected knob=value"));
    assert_int_equal(drv_profile_set_point(&parts, DRV_PT_ADMIT, "gang(strict=x)", 14, &d),
                     DRV_EINVAL);
    assert_non_null(strstr(d.msg, "'x' is not a number"));
    assert_int_equal(drv_profile_set_point(&parts, DRV_PT_ADMIT, "gang(strict=1", 13, &d),
                     DRV_EINVAL);
    assert_non_null(strstr(d.msg, "expected ')' at the end"));
    char full[512] = "locality("; /* DRV_MAX_KNOBS knobs: names are checked by the plugin */
    for (int k = 0; k < DRV_MAX_KNOBS; k++)
        snprintf(full + strlen(full), sizeof full - strlen(full), "k%d=1%s", k,
                 k + 1 < DRV_MAX_KNOBS ? ";" : ")");
    drv_profile many;
    drv_profile_init(&many, "many");
    int rc = 0, uses = 0;
    for (; uses <= DRV_MAX_PROFILE_KNOBS / DRV_MAX_KNOBS && !rc; uses++)
        rc = drv_profile_set_point(&many, DRV_PT_SCORE, full, strlen(full), &d);
    assert_int_equal(rc, DRV_ERANGE);
    assert_int_equal(uses, DRV_MAX_PROFILE_KNOBS / DRV_MAX_KNOBS + 1);
    assert_int_equal(many.nknobs, DRV_MAX_PROFILE_KNOBS);
    assert_non_null(strstr(d.msg, "knobs in all"));
}

static void test_profile_line_errors(void **unused)
{
    (void)unused;
    drv_profile p;
    drv_diag d;
    assert_int_equal(drv_profile_parse("x", "admit=gang score=least-allocated*3", &p, &d), 0);
    assert_int_equal(p.use[DRV_PT_SCORE][0].weight, 3);
    assert_int_equal(drv_profile_parse("x", "admit=gangg", &p, &d), DRV_ENOENT);
    assert_non_null(
        strstr(d.msg, "admit: unknown plugin 'gangg' (admit plugins: pod-by-pod, gang"));
    assert_int_equal(drv_profile_parse("x", "admit=least-allocated", &p, &d), DRV_ENOENT);
    assert_non_null(strstr(d.msg, "'least-allocated' does not implement admit"));
    assert_int_equal(drv_profile_parse("x", "admit=gang*2", &p, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "only score plugins take a weight"));
    assert_int_equal(drv_profile_parse("x", "score=least-allocated", &p, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "no admit plugin"));
    assert_int_equal(drv_profile_parse("x", "admit=gang colour=blue", &p, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "unknown key 'colour'"));
    assert_int_equal(drv_profile_parse("x", "admit=gang period=0", &p, &d), DRV_EINVAL);
    /* Knobs are checked by the plugin when the scheduler is created. */
    assert_int_equal(drv_profile_parse("x", "admit=gang(strictt=1)", &p, &d), 0);
    drv_sched *s = NULL;
    assert_int_equal(drv_sched_new(&p, &s, &d), DRV_EINVAL);
    assert_non_null(strstr(d.msg, "unknown knob 'strictt' (known: strict)"));
    assert_int_equal(drv_profile_parse("x", "admit=gang(strict=2)", &p, &d), 0);
    assert_int_equal(drv_sched_new(&p, &s, &d), DRV_ERANGE);
    assert_non_null(strstr(d.msg, "out of range"));
}

/* Two nodes, n0 half full; one single-pod job: least-allocated must pick n1, most- n0. */
static void test_spread_versus_pack(void **unused)
{
    (void)unused;
    drv_diag d;
    const char *lines[] = {"admit=gang score=least-allocated", "admit=gang score=most-allocated"};
    for (int k = 0; k < 2; k++) {
        drv_state st;
        assert_int_equal(drv_state_init(&st), 0);
        assert_int_equal(drv_state_add_node(&st, "n0", (drv_res){8000, 8 * GiB, 0}, "", "", NULL),
                         0);
        assert_int_equal(drv_state_add_node(&st, "n1", (drv_res){8000, 8 * GiB, 0}, "", "", NULL),
                         0);
        drv_job t;
        memset(&t, 0, sizeof t);
        t.phase = DRV_JOB_RUNNING;
        t.role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {4000, GiB, 0}, 4000};
        int32_t a, b;
        assert_int_equal(drv_state_add_job(&st, &t, &a), 0);
        drv_state_bind(&st, drv_job_pod(&st, a, DRV_ROLE_WORKER, 0), 0);
        t.phase = DRV_JOB_PENDING;
        t.submit = 1;
        assert_int_equal(drv_state_add_job(&st, &t, &b), 0);
        drv_profile p;
        assert_int_equal(drv_profile_parse("t", lines[k], &p, &d), 0);
        drv_sched *s;
        assert_int_equal(drv_sched_new(&p, &s, &d), 0);
        drv_decisions ds;
        drv_decisions_init(&ds);
        drv_snapshot snap = {.st = &st, .now = 0};
        assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
        assert_int_equal(ds.n, 1);
        assert_int_equal(ds.v[0].node, k == 0 ? 1 : 0);
        drv_decisions_fini(&ds);
        drv_sched_free(s);
        drv_state_fini(&st);
    }
}

/* Two jobs submitted together, each wanting 3 of 4 slots: pod-by-pod interleaves their pods
 * (each gets 2: a deadlock); gang places the first whole and none of the second. */
static void test_interleaving_versus_gang(void **unused)
{
    (void)unused;
    drv_diag d;
    const char *lines[] = {"gang=false admit=pod-by-pod score=least-allocated",
                           "admit=gang score=least-allocated"};
    for (int k = 0; k < 2; k++) {
        drv_state st;
        assert_int_equal(drv_state_init(&st), 0);
        assert_int_equal(drv_state_add_node(&st, "n0", (drv_res){8000, 8 * GiB, 0}, "", "", NULL),
                         0);
        assert_int_equal(drv_state_add_node(&st, "n1", (drv_res){8000, 8 * GiB, 0}, "", "", NULL),
                         0);
        drv_job t;
        memset(&t, 0, sizeof t);
        t.phase = DRV_JOB_PENDING;
        t.role[DRV_ROLE_WORKER] = (drv_rolespec){3, 3, 3, {4000, GiB, 0}, 4000};
        int32_t a, b;
        assert_int_equal(drv_state_add_job(&st, &t, &a), 0);
        assert_int_equal(drv_state_add_job(&st, &t, &b), 0);
        drv_profile p;
        assert_int_equal(drv_profile_parse("t", lines[k], &p, &d), 0);
        drv_sched *s;
        assert_int_equal(drv_sched_new(&p, &s, &d), 0);
        drv_decisions ds;
        drv_decisions_init(&ds);
        drv_snapshot snap = {.st = &st, .now = 0};
        assert_int_equal(drv_sched_cycle(s, &snap, &ds), 0);
        int per_job[2] = {0, 0};
        for (int32_t i = 0; i < ds.n; i++)
            if (ds.v[i].kind == DRV_BIND)
                per_job[ds.v[i].job]++;
        if (k == 0) {
            assert_int_equal(per_job[0], 2);
            assert_int_equal(per_job[1], 2);
        } else {
            assert_int_equal(per_job[0], 3);
            assert_int_equal(per_job[1], 0);
        }
        drv_decisions_fini(&ds);
        drv_sched_free(s);
        drv_state_fini(&st);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtins_parse),           cmocka_unit_test(test_profile_line_errors),
        cmocka_unit_test(test_profile_parts_equal_line), cmocka_unit_test(test_spread_versus_pack),
        cmocka_unit_test(test_interleaving_versus_gang),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
