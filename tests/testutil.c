/*
 * testutil.c - the helpers of testutil.h. Test code: state lives in globals (the catalogue a
 * group fixture loads; the ring of paths), which src/ never has.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "testutil.h"

drv_catalogue tu_cat;
drv_calib tu_calib;

const char *tu_path(const char *fmt, ...)
{
    static char buf[8][4096];
    static int k;
    const char *src = getenv("DROVER_SOURCE_DIR");
    k = (k + 1) % 8;
    int n = snprintf(buf[k], sizeof buf[k], "%s/", src ? src : ".");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf[k] + n, sizeof buf[k] - (size_t)n, fmt, ap);
    va_end(ap);
    return buf[k];
}

int tu_catalogue_setup(void **unused)
{
    (void)unused;
    drv_diag d;
    return drv_catalogue_builtin(&tu_cat, &d) ? -1 : 0;
}

int tu_catalogue_teardown(void **unused)
{
    (void)unused;
    drv_catalogue_fini(&tu_cat);
    return 0;
}

int tu_calib_setup(void **unused)
{
    (void)unused;
    drv_diag d;
    return drv_calib_load(&tu_calib, tu_path("data/pollux/profiles"), &d) ? -1 : 0;
}

int tu_calib_teardown(void **unused)
{
    (void)unused;
    drv_calib_fini(&tu_calib);
    return 0;
}

int tu_models_setup(void **unused)
{
    return tu_catalogue_setup(unused) ? -1 : tu_calib_setup(unused);
}

int tu_models_teardown(void **unused)
{
    tu_catalogue_teardown(unused);
    return tu_calib_teardown(unused);
}

uint64_t tu_rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

void tu_make_state(drv_state *st, int n, drv_res alloc, const char *zone, const char *rack)
{
    assert_int_equal(drv_state_init(st), 0);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(drv_state_add_node(st, name, alloc, zone, rack, NULL), 0);
    }
}

int32_t tu_add_job(drv_state *st, const char *name, int ps, int wmin, int w, int wmax, int64_t cpu)
{
    drv_job t;
    memset(&t, 0, sizeof t);
    t.name = drv_strtab_intern(st->names, name);
    t.phase = DRV_JOB_PENDING;
    t.role[DRV_ROLE_PS] = (drv_rolespec){ps, ps, ps, {cpu, 1LL << 30, 0}, cpu};
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){w, wmin, wmax, {cpu, 1LL << 30, 0}, cpu};
    int32_t id;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    return id;
}

drv_sched *tu_sched(drv_profile *p, const char *line)
{
    drv_diag d;
    assert_int_equal(drv_profile_parse("t", line, p, &d), 0);
    drv_sched *s;
    assert_int_equal(drv_sched_new(p, &s, &d), 0);
    return s;
}

void tu_apply(drv_state *st, const drv_decisions *ds)
{
    for (int32_t i = 0; i < ds->n; i++) {
        const drv_decision *x = &ds->v[i];
        if (x->kind == DRV_BIND) {
            drv_state_bind(st, x->pod, x->node);
        } else if (x->kind == DRV_EVICT) {
            drv_state_unbind(st, x->pod);
        } else if (x->kind == DRV_MIGRATE) {
            drv_state_unbind(st, x->pod);
            drv_state_bind(st, x->pod, x->node);
        } else if (x->kind == DRV_SCALE) {
            drv_state_set_workers(st, x->job, (int32_t)x->value);
        }
    }
}

void tu_check_state(const drv_state *st, bool gang)
{
    drv_diag d = {{0}};
    if (drv_state_check(st, gang, &d) != 0)
        fail_msg("state invariants: %s", d.msg);
}

void tu_settle(drv_state *st, bool gang)
{
    DRV_FOR_PENDING(st, j)
    if (drv_job_complete(&st->jobs[j]))
        drv_state_set_phase(st, j, DRV_JOB_RUNNING);
    tu_check_state(st, gang);
}

void tu_cycle(drv_sched *s, drv_state *st, drv_decisions *ds, double now, bool gang)
{
    drv_snapshot snap = {.st = st, .now = now};
    ds->n = 0;
    assert_int_equal(drv_sched_cycle(s, &snap, ds), 0);
    tu_apply(st, ds);
    tu_settle(st, gang);
}

void tu_finish(drv_state *st, int32_t job)
{
    const drv_job *j = &st->jobs[job];
    for (int32_t k = 0; k < j->pod_count; k++)
        drv_state_unbind(st, j->pod_base + k);
    drv_state_set_phase(st, job, DRV_JOB_DONE);
}
