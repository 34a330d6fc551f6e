/* Tests for src/core/state_job.c: a job added whole (drv_state_apply_job) and its transitions
 * pushed into the state in one step (drv_state_resize_workers). Each test checks every part of the
 * step's work, so that a step skipping one part fails, and the state's invariants after. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "drover/state.h"
#include "testutil.h"

/* A job of 1 PS and 3 of up to 4 workers, all bound, shrunk to 1 worker: its target is 1,
 * workers 1 and 2 are off their nodes, worker 0 and the PS stay where they were. Grown back
 * to 3: the target follows, and no pod moves. */
static void test_resize_workers(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 2, (drv_res){8000, 1LL << 36, 0}, NULL, NULL);
    int32_t job = tu_add_job(&st, "j", 1, 1, 3, 4, 1000);
    const drv_job *jb = &st.jobs[job];
    int32_t bound = 0;
    for (int32_t k = 0; k < jb->pod_count; k++) {
        const drv_pod *p = &st.pods[jb->pod_base + k];
        if (p->role == DRV_ROLE_WORKER && p->index >= jb->target[DRV_ROLE_WORKER])
            continue;
        drv_state_place_pod(&st, jb->pod_base + k, k % 2);
        bound++;
    }
    assert_int_equal(bound, 4);
    drv_state_resize_workers(&st, job, 1);
    assert_int_equal(jb->target[DRV_ROLE_WORKER], 1);
    int32_t left = 0;
    for (int32_t k = 0; k < jb->pod_count; k++) {
        const drv_pod *p = &st.pods[jb->pod_base + k];
        bool kept = p->role != DRV_ROLE_WORKER || p->index < 1;
        assert_int_equal(p->node >= 0, kept && (p->role != DRV_ROLE_WORKER || p->index < 3));
        left += p->node >= 0;
    }
    assert_int_equal(left, 2); /* the PS and worker 0 */
    assert_int_equal(st.nodes[0].npods + st.nodes[1].npods, 2);
    tu_check_state(&st, false);
    drv_state_resize_workers(&st, job, 3);
    assert_int_equal(jb->target[DRV_ROLE_WORKER], 3);
    assert_int_equal(st.nodes[0].npods + st.nodes[1].npods, 2);
    tu_check_state(&st, false);
    drv_state_fini(&st);
}

/* A job described whole: its name and user interned from their text, its workers' new
 * nodeSelector added (the job names its id), its PS's constraint one the state holds already.
 * A second job naming that id adds nothing. A constraint the state refuses (a weight out of
 * 1..100) leaves its role unconstrained, said in diag, and the job is still added. */
static void test_apply_job(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 2, (drv_res){8000, 1LL << 36, 0}, NULL, NULL);
    drv_label sel = {drv_strtab_intern(st.names, "pool"), drv_strtab_intern(st.names, "gpu")};
    drv_constraint k = {.selector = &sel, .nselector = 1};
    int32_t held;
    assert_int_equal(drv_state_add_constraint(&st, &k, NULL, &held), 0);
    int32_t ncons = st.ncons;
    drv_job_desc d = {.name = "ns/a", .user = "team-a"};
    d.tmpl.model = -1;
    d.tmpl.role[DRV_ROLE_PS] =
        (drv_rolespec){.replicas = 1, .min = 1, .max = 1, .req = {1000, 1LL << 30, 0}};
    d.tmpl.role[DRV_ROLE_WORKER] =
        (drv_rolespec){.replicas = 2, .min = 2, .max = 2, .req = {1000, 1LL << 30, 0}};
    d.tmpl.cons[DRV_ROLE_PS] = held;
    d.cons[DRV_ROLE_WORKER] = &k;
    drv_diag diag = {{0}};
    int32_t a, b;
    assert_int_equal(drv_state_apply_job(&st, &d, &a, &diag), 0);
    assert_string_equal(diag.msg, "");
    assert_string_equal(drv_strtab_str(st.names, st.jobs[a].name), "ns/a");
    assert_string_equal(drv_strtab_str(st.names, st.jobs[a].user), "team-a");
    assert_int_equal(st.jobs[a].cons[DRV_ROLE_PS], held);
    assert_int_equal(st.ncons, ncons + 1);
    int32_t added = st.jobs[a].cons[DRV_ROLE_WORKER];
    assert_int_equal(added, ncons);
    assert_int_equal(st.cons[added].nselector, 1);
    assert_int_equal(st.cons[added].selector[0].key, sel.key);
    d.name = "ns/b";
    d.cons[DRV_ROLE_WORKER] = NULL;
    d.tmpl.cons[DRV_ROLE_WORKER] = added;
    assert_int_equal(drv_state_apply_job(&st, &d, &b, &diag), 0);
    assert_int_equal(st.ncons, ncons + 1);
    assert_int_equal(st.jobs[b].cons[DRV_ROLE_WORKER], added);
    assert_int_equal(st.jobs[b].user, st.jobs[a].user);
    int32_t weight = 101;
    drv_selexpr ex = {.key = sel.key, .op = DRV_SEL_EXISTS, .term = 0};
    drv_constraint bad = {.expr = &ex, .nexpr = 1, .npreferred = 1, .weight = &weight};
    d.name = "ns/c";
    d.user = NULL;
    d.tmpl.user = st.jobs[a].user;
    d.cons[DRV_ROLE_WORKER] = &bad;
    int32_t c;
    assert_int_equal(drv_state_apply_job(&st, &d, &c, &diag), 0);
    assert_non_null(strstr(diag.msg, "ns/c: worker: node constraints refused"));
    assert_int_equal(st.jobs[c].cons[DRV_ROLE_WORKER], 0);
    assert_int_equal(st.jobs[c].user, st.jobs[a].user);
    assert_int_equal(st.ncons, ncons + 1);
    tu_check_state(&st, false);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_apply_job),
        cmocka_unit_test(test_resize_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
