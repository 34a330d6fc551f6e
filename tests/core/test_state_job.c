/* Tests for src/core/state_job.c: a job's transitions pushed into the state in one step
 * (drv_state_resize_workers). Each test checks every part of the step's work, so that a step
 * skipping one part fails, and the state's invariants after. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "drover/state.h"
#include "testutil.h"

static void check_state(const drv_state *st)
{
    drv_diag d = {{0}};
    assert_int_equal(drv_state_check(st, false, &d), 0);
}

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
    check_state(&st);
    drv_state_resize_workers(&st, job, 3);
    assert_int_equal(jb->target[DRV_ROLE_WORKER], 3);
    assert_int_equal(st.nodes[0].npods + st.nodes[1].npods, 2);
    check_state(&st);
    drv_state_fini(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resize_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
