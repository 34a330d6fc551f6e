/* Tests for src/core: interning, arena, state bookkeeping and its invariants, the progress ring,
 * released pages, node names, the random numbers. The cycle's mechanics: test_cycle.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drover/cycle.h"
#include "testutil.h"

#define GiB (1024LL * 1024 * 1024)

static void test_strtab(void **unused)
{
    (void)unused;
    drv_strtab *t = drv_strtab_new();
    assert_non_null(t);
    assert_int_equal(drv_strtab_find(t, ""), 0);
    char buf[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(buf, sizeof buf, "node-%d", i);
        assert_int_equal(drv_strtab_intern(t, buf), i + 1);
    }
    assert_int_equal(drv_strtab_intern(t, "node-500"), 501);
    assert_string_equal(drv_strtab_str(t, 42), "node-41");
    assert_int_equal(drv_strtab_find(t, "absent"), -1);
    drv_strtab_free(t);
}

static void test_strtab_alloc_failure(void **unused)
{
    (void)unused;
    /* Failing any one allocation must leave a usable table or a clean error, never a crash. */
    for (int nth = 1; nth < 12; nth++) {
        drv_alloc_fail_at(nth);
        drv_strtab *t = drv_strtab_new();
        if (t) {
            int32_t id = drv_strtab_intern(t, "x");
            assert_true(id == 1 || id == DRV_ENOMEM);
            drv_strtab_free(t);
        }
        drv_alloc_fail_at(0);
    }
}

/* Forgetting strings: the others are still found (deletion from linear probing moves entries
 * back into the hole), forgotten ones are not, and no id is handed out twice. */
static void test_strtab_forget(void **unused)
{
    (void)unused;
    drv_strtab *t = drv_strtab_new();
    assert_non_null(t);
    char buf[32];
    enum { N = 3000 };
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof buf, "job-%d", i);
        assert_int_equal(drv_strtab_intern(t, buf), i + 1);
    }
    for (int i = 0; i < N; i += 3) /* every third, then every seventh not yet gone */
        drv_strtab_forget(t, i + 1);
    for (int i = 0; i < N; i += 7)
        drv_strtab_forget(t, i + 1);
    drv_strtab_forget(t, 0); /* the empty string stays */
    assert_int_equal(drv_strtab_find(t, ""), 0);
    for (int i = 0; i < N; i++) {
        snprintf(buf, sizeof buf, "job-%d", i);
        bool gone = i % 3 == 0 || i % 7 == 0;
        assert_int_equal(drv_strtab_find(t, buf), gone ? -1 : i + 1);
        assert_string_equal(drv_strtab_str(t, i + 1), gone ? "" : buf);
    }
    int32_t again = drv_strtab_intern(t, "job-0"); /* forgotten: a new id */
    assert_int_equal(again, N + 1);
    assert_int_equal(drv_strtab_intern(t, "job-1"), 2);
    for (int i = N; i < 2 * N; i++) { /* the table grows past its old size: all still found */
        snprintf(buf, sizeof buf, "job-%d", i);
        assert_int_equal(drv_strtab_intern(t, buf), i + 2);
    }
    snprintf(buf, sizeof buf, "job-%d", N - 1);
    assert_int_equal(drv_strtab_find(t, buf), N);
    drv_strtab_free(t);
}

static void test_arena(void **unused)
{
    (void)unused;
    drv_arena a;
    drv_arena_init(&a, 1024);
    char *p = drv_arena_alloc(&a, 100);
    char *q = drv_arena_alloc(&a, 5000); /* larger than a block */
    assert_non_null(p);
    assert_non_null(q);
    assert_int_equal((uintptr_t)p % 16, 0);
    assert_int_equal(q[4999], 0);
    drv_arena_reset(&a);
    char *r = drv_arena_alloc(&a, 10);
    assert_non_null(r);
    drv_arena_fini(&a);
}

/* Every node of these tests' clusters (tu_make_state, zone "z", rack "r"): 8 CPUs / 32 GiB. */
static const drv_res NODE8 = {8000, 32 * GiB, 0};

/* The live and pending job sets follow phases, across words and summary words (jobs 0..9999). */
static void test_job_sets(void **unused)
{
    (void)unused;
    drv_state st;
    tu_make_state(&st, 1, NODE8, "z", "r");
    enum { N = 10000 };
    for (int i = 0; i < N; i++) {
        drv_job t;
        memset(&t, 0, sizeof t);
        t.phase = DRV_JOB_FUTURE;
        t.role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {1000, GiB, 0}, 1000};
        assert_int_equal(drv_state_add_job(&st, &t, NULL), 0);
    }
    /* live: 3, 64, 4095, 4096 and 9999; pending among them: 64 and 9999 */
    int32_t live[] = {3, 64, 4095, 4096, 9999};
    for (int i = 0; i < 5; i++)
        drv_state_set_phase(&st, live[i], DRV_JOB_RUNNING);
    drv_state_set_phase(&st, 64, DRV_JOB_PENDING);
    drv_state_set_phase(&st, 9999, DRV_JOB_PENDING);
    drv_state_set_phase(&st, 7, DRV_JOB_PENDING); /* and 7, then done */
    drv_state_set_phase(&st, 7, DRV_JOB_DONE);
    assert_int_equal(st.nlive, 5);
    assert_int_equal(st.npending, 2);
    int k = 0;
    DRV_FOR_LIVE(&st, j)
    {
        assert_true(k < 5);
        assert_int_equal(j, live[k++]);
    }
    assert_int_equal(k, 5);
    assert_int_equal(drv_state_next_pending(&st, 0), 64);
    assert_int_equal(drv_state_next_pending(&st, 65), 9999);
    assert_int_equal(drv_state_next_pending(&st, 10000), -1);
    drv_state_set_phase(&st, 9999, DRV_JOB_RUNNING);
    assert_int_equal(drv_state_next_pending(&st, 65), -1);
    assert_int_equal(st.npending, 1);
    /* starting: 4095 starting, 4096 restarting, until they run */
    assert_int_equal(drv_state_next_starting(&st, 0), -1);
    drv_state_set_phase(&st, 4095, DRV_JOB_STARTING);
    drv_state_set_phase(&st, 4096, DRV_JOB_RESTARTING);
    assert_int_equal(st.nstarting, 2);
    assert_int_equal(drv_state_next_starting(&st, 0), 4095);
    assert_int_equal(drv_state_next_starting(&st, 4096), 4096);
    drv_state_set_phase(&st, 4095, DRV_JOB_RUNNING);
    assert_int_equal(drv_state_next_starting(&st, 0), 4096);
    drv_state_set_phase(&st, 4096, DRV_JOB_DONE);
    assert_int_equal(drv_state_next_starting(&st, 0), -1);
    assert_int_equal(st.nstarting, 0);
    drv_state_fini(&st);
}

/* The queued set (pending and wanting pods) follows binds, unbinds, targets and phases; the
 * invariant check catches a set that disagrees with the jobs. */
static void test_queued_set(void **unused)
{
    (void)unused;
    drv_state st;
    drv_diag d;
    tu_make_state(&st, 2, NODE8, "z", "r");
    int32_t j = tu_add_job(&st, "a", 1, 1, 2, 3, 1000);
    int32_t k = tu_add_job(&st, "b", 1, 1, 1, 1, 1000);
    assert_int_equal(st.nqueued, 2);
    assert_true(drv_state_is_queued(&st, j));
    assert_false(drv_state_is_queued(&st, 2)); /* no such job */
    assert_false(drv_state_is_queued(&st, -1));
    drv_state_bind(&st, drv_job_pod(&st, j, DRV_ROLE_PS, 0), 0);
    drv_state_bind(&st, drv_job_pod(&st, j, DRV_ROLE_WORKER, 0), 0);
    assert_true(drv_state_is_queued(&st, j)); /* one worker still unbound */
    assert_true(st.queue_leaves == 0);        /* what a cycle's kept records rely on */
    drv_state_bind(&st, drv_job_pod(&st, j, DRV_ROLE_WORKER, 1), 1);
    assert_false(drv_state_is_queued(&st, j)); /* complete, though still pending */
    assert_true(st.queue_leaves == 1);
    assert_int_equal(st.npending, 2);
    assert_int_equal(st.nqueued, 1);
    assert_int_equal(drv_state_next_queued(&st, 0), k);
    drv_state_set_workers(&st, j, 3);
    assert_true(drv_state_is_queued(&st, j));
    drv_state_set_workers(&st, j, 2);
    assert_false(drv_state_is_queued(&st, j));
    assert_true(st.queue_leaves == 2); /* it came back and left again: counted again */
    drv_state_unbind(&st, drv_job_pod(&st, j, DRV_ROLE_WORKER, 1));
    assert_true(drv_state_is_queued(&st, j));
    drv_state_set_phase(&st, j, DRV_JOB_RUNNING); /* not pending: not queued */
    assert_false(drv_state_is_queued(&st, j));
    assert_true(st.queue_leaves == 3);
    drv_state_set_phase(&st, j, DRV_JOB_DONE); /* not queued before either: no leave */
    assert_true(st.queue_leaves == 3);
    assert_int_equal(st.nqueued, 1);
    assert_int_equal(drv_state_check(&st, false, &d), 0);
    st.queued.bits[0] ^= (uint64_t)1 << j; /* a set that disagrees with the job */
    assert_int_equal(drv_state_check(&st, false, &d), DRV_EINVARIANT);
    assert_non_null(strstr(d.msg, "queued or starting set"));
    assert_non_null(strstr(d.msg, "(phase done)")); /* what the sets should follow */
    st.queued.bits[0] ^= (uint64_t)1 << j;
    st.nqueued++; /* a count that does */
    assert_int_equal(drv_state_check(&st, false, &d), DRV_EINVARIANT);
    assert_non_null(strstr(d.msg, "job set counts"));
    drv_state_fini(&st);
}

static void test_bind_bookkeeping(void **unused)
{
    (void)unused;
    drv_state st;
    drv_diag d;
    tu_make_state(&st, 2, NODE8, "z", "r");
    int32_t j = tu_add_job(&st, "a", 1, 1, 2, 4, 2000);
    assert_int_equal(st.jobs[j].pod_count, 5); /* 1 ps + 4 worker slots */
    int32_t ps = drv_job_pod(&st, j, DRV_ROLE_PS, 0);
    int32_t w0 = drv_job_pod(&st, j, DRV_ROLE_WORKER, 0);
    assert_int_equal(drv_job_pod(&st, j, DRV_ROLE_WORKER, 4), -1);
    drv_state_bind(&st, ps, 0);
    assert_int_equal(st.nodes[0].used.cpu, 2000);
    /* Half-placed (PS only): fine without gang, a violation with gang. */
    assert_int_equal(drv_state_check(&st, false, &d), 0);
    assert_int_equal(drv_state_check(&st, true, &d), DRV_EINVARIANT);
    assert_non_null(strstr(d.msg, "half-placed"));
    drv_state_bind(&st, w0, 1);
    drv_state_bind(&st, w0 + 1, 1);
    assert_true(drv_job_complete(&st.jobs[j]));
    assert_int_equal(drv_state_check(&st, true, &d), 0);
    drv_state_set_cpu_limit(&st, w0, 5000);
    assert_int_equal(st.nodes[1].cpu_limit, 7000);
    drv_state_unbind(&st, w0);
    assert_int_equal(st.nodes[1].used.cpu, 2000);
    assert_int_equal(st.nodes[1].cpu_limit, 2000);
    assert_false(drv_job_complete(&st.jobs[j]));
    drv_state_fini(&st);
}

static void test_check_overcommit(void **unused)
{
    (void)unused;
    drv_state st;
    drv_diag d;
    tu_make_state(&st, 1, NODE8, "z", "r");
    int32_t j = tu_add_job(&st, "big", 0, 3, 3, 3, 3000);
    for (int i = 0; i < 3; i++)
        drv_state_bind(&st, drv_job_pod(&st, j, DRV_ROLE_WORKER, i), 0);
    assert_int_equal(drv_state_check(&st, true, &d), DRV_EINVARIANT);
    assert_non_null(strstr(d.msg, "over capacity"));
    drv_state_fini(&st);
}

static void test_check_worker_bounds(void **unused)
{
    (void)unused;
    drv_state st;
    drv_diag d;
    tu_make_state(&st, 1, NODE8, "z", "r");
    int32_t j = tu_add_job(&st, "e", 0, 2, 2, 3, 1000);
    drv_state_set_workers(&st, j, 4);
    assert_int_equal(drv_state_check(&st, false, &d), DRV_EINVARIANT);
    assert_non_null(strstr(d.msg, "outside"));
    drv_state_fini(&st);
}

static void test_progress_ring(void **unused)
{
    (void)unused;
    drv_job j;
    memset(&j, 0, sizeof j);
    for (int i = 0; i < DRV_HIST + 5; i++)
        assert_int_equal(drv_job_add_sample(&j, (drv_sample){i, i * 10.0, 1.0 / (i + 1)}), 0);
    assert_int_equal(j.nhist, DRV_HIST);
    assert_true(drv_job_sample(&j, 0)->t == DRV_HIST + 4);
    assert_true(drv_job_sample(&j, DRV_HIST - 1)->t == 5);
    drv_job_clear_hist(&j);
    assert_null(j.hist);
    assert_int_equal(j.nhist, 0);
    /* the ring is allocated at the first sample: a failing allocation is reported */
    drv_alloc_fail_at(1);
    assert_int_equal(drv_job_add_sample(&j, (drv_sample){1, 1, 1}), DRV_ENOMEM);
    drv_alloc_fail_at(0);
    assert_int_equal(j.nhist, 0);
}

/* A job's history lives while the job does: finishing it frees the ring, so a long trace's
 * finished jobs cost no history. */
static void test_done_job_frees_history(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    drv_job t;
    memset(&t, 0, sizeof t);
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {1000, 1, 0}, 1000};
    t.phase = DRV_JOB_PENDING;
    int32_t a, b;
    assert_int_equal(drv_state_add_job(&st, &t, &a), 0);
    assert_int_equal(drv_state_add_job(&st, &t, &b), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(drv_job_add_sample(&st.jobs[a], (drv_sample){i, i, 1}), 0);
        assert_int_equal(drv_job_add_sample(&st.jobs[b], (drv_sample){i, i, 1}), 0);
    }
    drv_state_set_phase(&st, a, DRV_JOB_DONE);
    assert_null(st.jobs[a].hist);
    assert_int_equal(st.jobs[a].nhist, 0);
    assert_int_equal(st.jobs[b].nhist, 3); /* the other job keeps its samples */
    assert_true(drv_job_sample(&st.jobs[b], 0)->t == 2);
    drv_state_fini(&st); /* frees b's ring: the ASan build's leak check fails otherwise */
}

/* A page goes back only when every entry overlapping it is released, including entries that
 * straddle two pages; nothing is returned twice. */
static void test_pages_return_only_free_pages(void **unused)
{
    (void)unused;
    drv_pages p;
    assert_int_equal(drv_pages_init(&p, 360, 100), 0);
    if (!p.page) {
        drv_pages_fini(&p);
        skip(); /* heap fallback: nothing is returned */
    }
    size_t per = p.page / 360; /* entries wholly in page 0, then one straddling pages 0 and 1 */
    unsigned char *b = p.base;
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(b[i * 360], 0); /* zeroed */
    b[0] = 5;
    drv_pages_release(&p, 0, per);
    drv_pages_flush(&p);
    assert_int_equal(p.returned, 0); /* entry `per` straddles into page 0 and is in use */
    assert_int_equal(b[0], 5);       /* still in memory: not returned */
    drv_pages_release(&p, per, 1);
    drv_pages_flush(&p);
    assert_int_equal(p.returned, 1);
    assert_int_equal(b[0], 0); /* returned, unguarded: a stale read sees zeros, never data */
    drv_pages_release(&p, per + 1, 100 - per - 1);
    drv_pages_flush(&p);
    assert_int_equal(p.returned, (100 * 360 + p.page - 1) / p.page);
    drv_pages_fini(&p);
}

/* In a guarded array (checked runs), reading a released entry whose page went back faults (in
 * a child process) instead of returning zeros or anything else. */
static void test_pages_stale_read_faults(void **unused)
{
    (void)unused;
    drv_pages p;
    assert_int_equal(drv_pages_init(&p, 64, 1000), 0);
    if (!p.page) {
        drv_pages_fini(&p);
        skip();
    }
    p.guard = true;
    int32_t *v = (int32_t *)p.base;
    v[0] = 7;
    drv_pages_release(&p, 0, p.page / 64);
    drv_pages_flush(&p);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* cmocka's handler would carry on with the tests */
        signal(SIGBUS, SIG_DFL);
        volatile int32_t x = v[0];
        _exit(x == 7 ? 1 : 2); /* reached only if the read did not fault */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_true(WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS);
    drv_pages_fini(&p);
}

/* A reserved state: ids exist as blank placeholders until filled, a finished job is released
 * only when done and unbound, exactly once, ids are never handed to another job, and the
 * invariant check and fini skip released jobs. */
static void test_reserve_fill_release(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    int32_t node;
    assert_int_equal(drv_state_add_node(&st, "n0", (drv_res){8000, 8 * GiB, 0}, NULL, NULL, &node),
                     0);
    assert_int_equal(drv_state_reserve(&st, 3, 6), 0);
    assert_int_equal(drv_state_reserve(&st, 3, 6), DRV_EINVAL); /* once */
    assert_int_equal(st.njobs, 3);
    assert_int_equal(st.jobs[2].phase, DRV_JOB_FUTURE);
    assert_int_equal(st.nlive, 0);
    drv_job t;
    memset(&t, 0, sizeof t);
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){2, 2, 2, {1000, 1, 0}, 1000};
    t.phase = DRV_JOB_PENDING;
    assert_int_equal(drv_state_add_job(&st, &t, NULL), DRV_ENOMEM); /* ids are all reserved */
    assert_int_equal(drv_state_fill_job(&st, 2, 4, &t), 0); /* out of order: ids are fixed */
    assert_int_equal(drv_state_fill_job(&st, 0, 0, &t), 0);
    assert_int_equal(drv_state_fill_job(&st, 0, 0, &t), DRV_EINVAL); /* not a placeholder */
    assert_int_equal(drv_state_fill_job(&st, 1, 5, &t), DRV_EINVAL); /* slots past the end */
    assert_int_equal(st.nlive, 2);
    assert_int_equal(st.pods[5].job, 2);
    drv_state_bind(&st, 0, node);
    drv_diag d = {{0}};
    assert_int_equal(drv_state_check(&st, false, &d), 0);
    assert_int_equal(drv_state_release_job(&st, 0), DRV_EINVAL); /* not done */
    drv_state_set_phase(&st, 0, DRV_JOB_DONE);
    assert_int_equal(drv_state_release_job(&st, 0), DRV_EINVAL); /* a pod still bound */
    drv_state_unbind(&st, 0);
    assert_int_equal(drv_job_add_sample(&st.jobs[2], (drv_sample){1, 1, 1}), 0);
    assert_int_equal(drv_state_release_job(&st, 0), 0);
    assert_true(drv_state_job_released(&st, 0));
    assert_false(drv_state_job_released(&st, 2));
    assert_int_equal(drv_state_release_job(&st, 0), DRV_EINVAL);     /* twice */
    assert_int_equal(drv_state_fill_job(&st, 0, 0, &t), DRV_EINVAL); /* never reused */
    assert_int_equal(st.nreleased, 1);
    assert_int_equal(drv_state_check(&st, true, &d), 0);
    assert_int_equal(drv_state_next_live(&st, 0), 2);
    drv_state_fini(&st); /* frees job 2's ring, skips job 0: ASan checks both */
}

/* Without drv_state_reserve (the Kubernetes controller's state) a released job's memory stays:
 * only the bookkeeping changes, and drv_state_add_job keeps working. */
static void test_release_without_reserve(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    drv_job t;
    memset(&t, 0, sizeof t);
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {1000, 1, 0}, 1000};
    t.phase = DRV_JOB_DONE;
    int32_t a, b;
    assert_int_equal(drv_state_add_job(&st, &t, &a), 0);
    assert_int_equal(drv_state_release_job(&st, a), 0);
    assert_int_equal(drv_state_add_job(&st, &t, &b), 0);
    assert_int_equal(b, a + 1); /* a new id, not the released one */
    assert_false(drv_state_job_released(&st, b));
    drv_diag d = {{0}};
    assert_int_equal(drv_state_check(&st, true, &d), 0);
    drv_state_fini(&st);
}

/* Node names stay unique however many nodes there are (the name table doubles past 32, 64,
 * 128... nodes), and a failed allocation while adding one leaves the state as it was. */
static void test_node_names(void **unused)
{
    (void)unused;
    drv_state st;
    assert_int_equal(drv_state_init(&st), 0);
    drv_res a = {1000, 1000, 0};
    char name[16];
    for (int32_t i = 0; i < 300; i++) {
        snprintf(name, sizeof name, "n%d", i);
        int32_t id = -1;
        assert_int_equal(drv_state_add_node(&st, name, a, NULL, NULL, &id), 0);
        assert_int_equal(id, i);
        snprintf(name, sizeof name, "n%d", i / 2); /* taken, from an earlier table size */
        assert_int_equal(drv_state_add_node(&st, name, a, NULL, NULL, NULL), DRV_EEXIST);
    }
    for (int nth = 1; nth < 8; nth++) {
        int32_t before = st.nnodes;
        snprintf(name, sizeof name, "m%d", nth);
        drv_alloc_fail_at(nth);
        int rc = drv_state_add_node(&st, name, a, NULL, NULL, NULL);
        drv_alloc_fail_at(0);
        assert_true(rc == 0 || rc == DRV_ENOMEM);
        assert_int_equal(st.nnodes, before + (rc == 0));
        assert_int_equal(drv_state_add_node(&st, name, a, NULL, NULL, NULL),
                         rc == 0 ? DRV_EEXIST : 0);
    }
    assert_int_equal(drv_state_add_node(&st, "n299", a, NULL, NULL, NULL), DRV_EEXIST);
    drv_state_fini(&st);
}

static void test_rng_determinism(void **unused)
{
    (void)unused;
    drv_rng a, b;
    drv_rng_seed(&a, 42);
    drv_rng_seed(&b, 42);
    double sum = 0;
    for (int i = 0; i < 1000; i++) {
        double u = drv_rng_uniform(&a);
        assert_true(u == drv_rng_uniform(&b));
        assert_true(u >= 0 && u < 1);
        sum += u;
    }
    assert_true(sum > 450 && sum < 550); /* mean of 1000 uniforms: 500 +- ~9 sd */
    drv_rng_seed(&b, 43);
    assert_true(drv_rng_next(&a) != drv_rng_next(&b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strtab),
        cmocka_unit_test(test_strtab_alloc_failure),
        cmocka_unit_test(test_strtab_forget),
        cmocka_unit_test(test_arena),
        cmocka_unit_test(test_job_sets),
        cmocka_unit_test(test_queued_set),
        cmocka_unit_test(test_bind_bookkeeping),
        cmocka_unit_test(test_check_overcommit),
        cmocka_unit_test(test_check_worker_bounds),
        cmocka_unit_test(test_progress_ring),
        cmocka_unit_test(test_done_job_frees_history),
        cmocka_unit_test(test_pages_return_only_free_pages),
        cmocka_unit_test(test_pages_stale_read_faults),
        cmocka_unit_test(test_reserve_fill_release),
        cmocka_unit_test(test_release_without_reserve),
        cmocka_unit_test(test_node_names),
        cmocka_unit_test(test_rng_determinism),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
