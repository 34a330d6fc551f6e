/*
 * Tests of the preempt plugin (src/policy/preempt.c) on hand-built states, through
 * drv_sched_cycle: whole lower gangs only, the fewest victims, elastic shrinks before any gang,
 * reclaim of borrowed quota, no preemption cycle over many cycles, and a queue's minimum run
 * time. A small driver below
 * applies each cycle's decisions to the state as the simulator would, and the state's
 * invariants (gang: no half-bound job) are checked after every cycle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "drover/policy.h"

#define GiB (1024LL * 1024 * 1024)
#define CPU(n) ((drv_res){(n)*1000LL, GiB, 0})

static const char *const line = "gang=true period=1 queue_order=fifo admit=gang migrate=preempt";

typedef struct fixture {
    drv_state st;
    drv_profile prof;
    drv_sched *s;
    drv_decisions ds;
    double now;
} fixture;

static void fx_init(fixture *f, int nodes, int64_t cpus)
{
    memset(f, 0, sizeof *f);
    assert_int_equal(drv_state_init(&f->st), 0);
    for (int i = 0; i < nodes; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        assert_int_equal(
            drv_state_add_node(&f->st, name, (drv_res){cpus * 1000, 64 * GiB, 0}, "", "", NULL), 0);
    }
    drv_diag d;
    assert_int_equal(drv_profile_parse("t", line, &f->prof, &d), 0);
    assert_int_equal(drv_sched_new(&f->prof, &f->s, &d), 0);
    drv_decisions_init(&f->ds);
}

static void fx_fini(fixture *f)
{
    drv_decisions_fini(&f->ds);
    drv_sched_free(f->s);
    drv_state_fini(&f->st);
}

/*
 * A job of priority prio in queue q: `ps` PS pods of 2 CPUs and `w` workers of wcpu CPUs in
 * [wmin, w]. Running (its pods bound to `node`, the PS first) when node >= 0, else pending.
 */
static int32_t add_job(fixture *f, int32_t prio, int32_t q, int ps, int w, int wmin, int64_t wcpu,
                       int node, double attained)
{
    drv_job t;
    memset(&t, 0, sizeof t);
    t.priority = prio;
    t.queue = q;
    t.submit = f->now;
    t.attained = attained;
    t.phase = node >= 0 ? DRV_JOB_RUNNING : DRV_JOB_PENDING;
    t.role[DRV_ROLE_PS] = (drv_rolespec){ps, ps, ps, CPU(2), 2000};
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){w, wmin, w, CPU(wcpu), wcpu * 1000};
    int32_t id;
    assert_int_equal(drv_state_add_job(&f->st, &t, &id), 0);
    for (int32_t k = 0; node >= 0 && k < f->st.jobs[id].pod_count; k++)
        drv_state_bind(&f->st, f->st.jobs[id].pod_base + k, node);
    return id;
}

/* Applies the last cycle's decisions (the driver's part) and checks the invariants. */
static void apply(fixture *f)
{
    for (int32_t i = 0; i < f->ds.n; i++) {
        const drv_decision *x = &f->ds.v[i];
        if (x->kind == DRV_BIND)
            drv_state_bind(&f->st, x->pod, x->node);
        else if (x->kind == DRV_EVICT)
            drv_state_unbind(&f->st, x->pod);
        else if (x->kind == DRV_SCALE)
            drv_state_set_workers(&f->st, x->job, (int32_t)x->value);
    }
    for (int32_t i = 0; i < f->ds.n; i++) {
        int32_t j = f->ds.v[i].job;
        bool whole = drv_job_complete(&f->st.jobs[j]);
        drv_state_set_phase(&f->st, j, whole ? DRV_JOB_RUNNING : DRV_JOB_PENDING);
    }
    drv_diag d;
    int rc = drv_state_check(&f->st, true, &d);
    if (rc)
        fail_msg("%s", d.msg);
}

/* One cycle at f->now, its decisions applied; the clock then moves on by a second. */
static void cycle(fixture *f)
{
    f->ds.n = 0;
    drv_snapshot snap = {.st = &f->st, .now = f->now};
    assert_int_equal(drv_sched_cycle(f->s, &snap, &f->ds), 0);
    apply(f);
    f->now += 1;
}

/* Evictions of job's pods with the given reason in the last cycle. */
static int evictions(const fixture *f, int32_t job, int reason)
{
    int n = 0;
    for (int32_t i = 0; i < f->ds.n; i++)
        n += f->ds.v[i].kind == DRV_EVICT && f->ds.v[i].job == job && f->ds.v[i].reason == reason;
    return n;
}

static int bound(const fixture *f, int32_t job)
{
    const drv_job *j = &f->st.jobs[job];
    int n = 0;
    for (int r = 0; r < DRV_NROLES; r++)
        n += j->bound[r];
    return n;
}

/*
 * Two nodes of 8 CPUs. Node 0: L (priority 0, PS + 3 workers, 8 CPUs, attained 50). Node 1: E
 * (priority 10, equal to P's, 3 workers, 6 CPUs) and H (priority 20, 2 CPUs), both attained 1.
 * P (priority 10) needs 3 workers of 2 CPUs: E alone would do and lost less work, but only L
 * may be taken, whole (all 4 pods), and P goes on node 0. Every eviction comes
 * before P's binds, and the first job bound after them is P (who preempted them).
 */
static void test_whole_lower_gangs_only(void **unused)
{
    (void)unused;
    fixture f;
    fx_init(&f, 2, 8);
    int32_t l = add_job(&f, 0, 0, 1, 3, 3, 2, 0, 50);
    int32_t e = add_job(&f, 10, 0, 0, 3, 3, 2, 1, 1);
    int32_t h = add_job(&f, 20, 0, 0, 1, 1, 2, 1, 1);
    int32_t p = add_job(&f, 10, 0, 0, 3, 3, 2, -1, 0);
    cycle(&f);
    assert_int_equal(evictions(&f, l, DRV_REASON_PREEMPT), 4);
    int32_t last_evict = -1, first_bind = -1, nevict = 0;
    for (int32_t i = 0; i < f.ds.n; i++) {
        const drv_decision *x = &f.ds.v[i];
        if (x->kind == DRV_EVICT) {
            assert_int_equal(x->job, l);
            assert_int_equal(x->value, p); /* the decision names its preemptor */
            last_evict = i;
            nevict++;
        } else if (x->kind == DRV_BIND && first_bind < 0) {
            first_bind = i;
        }
    }
    assert_int_equal(nevict, 4);
    assert_true(last_evict < first_bind);
    assert_int_equal(f.ds.v[first_bind].job, p);
    assert_int_equal(bound(&f, l), 0);
    assert_int_equal(bound(&f, e), 3);
    assert_int_equal(bound(&f, h), 1);
    assert_int_equal(bound(&f, p), 3);
    assert_int_equal(f.st.jobs[p].phase, DRV_JOB_RUNNING);
    /* L waits now and, lower than every job running, takes nothing back. */
    for (int k = 0; k < 5; k++) {
        cycle(&f);
        assert_int_equal(f.ds.n, 0);
    }
    fx_fini(&f);

    /* Metamorphic: the same with P at priority 0 (equal to L's) preempts nothing. */
    fx_init(&f, 2, 8);
    l = add_job(&f, 0, 0, 1, 3, 3, 2, 0, 50);
    add_job(&f, 10, 0, 0, 3, 3, 2, 1, 1);
    add_job(&f, 20, 0, 0, 1, 1, 2, 1, 1);
    p = add_job(&f, 0, 0, 0, 3, 3, 2, -1, 0);
    cycle(&f);
    assert_int_equal(f.ds.n, 0);
    assert_int_equal(bound(&f, l), 4);
    fx_fini(&f);
}

/*
 * One node of 8 CPUs: A (2 CPUs, attained 10), B (2, 20) and C (4, 100), all priority 0. P
 * (priority 10) needing 4 CPUs takes C alone, though A and B lost less work together (the
 * opening comment's example). P needing 6: no single gang frees enough; the greedy step takes
 * A, B and C, and the reprieve gives back B (A and C are enough): two victims.
 */
static void test_fewest_victims(void **unused)
{
    (void)unused;
    for (int need = 4; need <= 6; need += 2) {
        fixture f;
        fx_init(&f, 1, 8);
        int32_t a = add_job(&f, 0, 0, 0, 1, 1, 2, 0, 10);
        int32_t b = add_job(&f, 0, 0, 0, 1, 1, 2, 0, 20);
        int32_t c = add_job(&f, 0, 0, 0, 1, 1, 4, 0, 100);
        int32_t p = add_job(&f, 10, 0, 0, 1, 1, need, -1, 0);
        cycle(&f);
        assert_int_equal(bound(&f, p), 1);
        assert_int_equal(bound(&f, c), 0);
        assert_int_equal(bound(&f, b), 1);
        assert_int_equal(bound(&f, a), need == 4 ? 1 : 0);
        fx_fini(&f);
    }
}

/*
 * One node of 8 CPUs: elastic E (priority 0, 3 workers of 2 CPUs, minimum 1, attained 100) and
 * rigid R (priority 0, 2 CPUs, attained 10). P (priority 10) needing 2 CPUs: E gives up one
 * worker (shrink), nothing is preempted. P needing 6: E shrinks to its minimum first (4 CPUs
 * free), then R, the single gang with the least lost work, is preempted; E keeps running.
 */
static void test_shrink_before_preempt(void **unused)
{
    (void)unused;
    fixture f;
    fx_init(&f, 1, 8);
    int32_t e = add_job(&f, 0, 0, 0, 3, 1, 2, 0, 100);
    int32_t r = add_job(&f, 0, 0, 0, 1, 1, 2, 0, 10);
    int32_t p = add_job(&f, 10, 0, 0, 1, 1, 2, -1, 0);
    cycle(&f);
    assert_int_equal(evictions(&f, e, DRV_REASON_SHRINK), 1);
    assert_int_equal(evictions(&f, e, DRV_REASON_PREEMPT), 0);
    assert_int_equal(evictions(&f, r, DRV_REASON_PREEMPT), 0);
    assert_int_equal(f.st.jobs[e].target[DRV_ROLE_WORKER], 2);
    assert_int_equal(bound(&f, p), 1);
    fx_fini(&f);

    fx_init(&f, 1, 8);
    e = add_job(&f, 0, 0, 0, 3, 1, 2, 0, 100);
    r = add_job(&f, 0, 0, 0, 1, 1, 2, 0, 10);
    p = add_job(&f, 10, 0, 0, 1, 1, 6, -1, 0);
    cycle(&f);
    assert_int_equal(evictions(&f, e, DRV_REASON_SHRINK), 2);
    assert_int_equal(evictions(&f, e, DRV_REASON_PREEMPT), 0);
    assert_int_equal(evictions(&f, r, DRV_REASON_PREEMPT), 1);
    int32_t last_shrink = -1, first_preempt = -1;
    for (int32_t i = 0; i < f.ds.n; i++) {
        const drv_decision *x = &f.ds.v[i];
        if (x->kind == DRV_EVICT && x->reason == DRV_REASON_SHRINK)
            last_shrink = i;
        if (x->kind == DRV_EVICT && x->reason == DRV_REASON_PREEMPT && first_preempt < 0)
            first_preempt = i;
    }
    assert_true(last_shrink < first_preempt);
    assert_int_equal(bound(&f, e), 1);
    assert_int_equal(f.st.jobs[e].phase, DRV_JOB_RUNNING);
    assert_int_equal(bound(&f, p), 1);
    fx_fini(&f);
}

/* Adds queue `name` of cohort "c" with a nominal quota of cpus CPUs, unlimited borrowing. */
static int32_t add_queue(fixture *f, const char *name, int64_t cpus)
{
    drv_queue q = {.name = drv_strtab_intern(f->st.names, name),
                   .cohort = drv_strtab_intern(f->st.names, "c"),
                   .weight = 1,
                   .quota = {cpus * 1000, DRV_UNLIMITED, DRV_UNLIMITED},
                   .borrow = {DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED}};
    int32_t id;
    assert_int_equal(drv_state_add_queue(&f->st, &q, &id), 0);
    return id;
}

/*
 * Reclaim, then no cycle (the opening comment's example). One node of 8 CPUs; queues a and b of
 * one cohort with 4 CPUs of quota each. b runs V (4 CPUs, attained 1) and W (4, attained 50):
 * b borrows 4. P of queue a (4 CPUs, the same priority 0) reclaims: V goes, whole. Then W ends
 * and X of queue a (4, attained 100) is running: a borrows, b is at 0 while V waits in it. V
 * may reclaim, but never from P, its preemptor, though P lost less work than X: X goes.
 * A scheduler that did not see the first preemption takes P - what the memory prevents.
 */
static void test_reclaim_without_cycle(void **unused)
{
    (void)unused;
    for (int fresh = 0; fresh <= 1; fresh++) {
        fixture f;
        fx_init(&f, 1, 8);
        int32_t qa = add_queue(&f, "a", 4), qb = add_queue(&f, "b", 4);
        int32_t v = add_job(&f, 0, qb, 0, 1, 1, 4, 0, 1);
        int32_t w = add_job(&f, 0, qb, 0, 1, 1, 4, 0, 50);
        int32_t p = add_job(&f, 0, qa, 0, 1, 1, 4, -1, 0);
        cycle(&f);
        assert_int_equal(evictions(&f, v, DRV_REASON_PREEMPT), 1);
        assert_int_equal(bound(&f, w), 1);
        assert_int_equal(bound(&f, p), 1);
        cycle(&f); /* a is within its quota now: V takes nothing back */
        assert_int_equal(f.ds.n, 0);

        drv_state_unbind(&f.st, f.st.jobs[w].pod_base);
        drv_state_set_phase(&f.st, w, DRV_JOB_DONE);
        f.st.jobs[p].attained = 10;
        int32_t x = add_job(&f, 0, qa, 0, 1, 1, 4, 0, 100);
        if (fresh) { /* a scheduler that never saw P preempt V */
            drv_diag d;
            drv_sched_free(f.s);
            assert_int_equal(drv_sched_new(&f.prof, &f.s, &d), 0);
        }
        cycle(&f);
        assert_int_equal(bound(&f, v), 1);
        assert_int_equal(evictions(&f, fresh ? p : x, DRV_REASON_PREEMPT), 1);
        assert_int_equal(evictions(&f, fresh ? x : p, DRV_REASON_PREEMPT), 0);
        fx_fini(&f);
    }
}

/* Without borrowing there is nothing to reclaim, nor to take at a higher priority from another
 * queue: the same start with b's quota 8 changes nothing, even for P at priority 5. */
static void test_no_reclaim_within_quota(void **unused)
{
    (void)unused;
    fixture f;
    fx_init(&f, 1, 8);
    int32_t qa = add_queue(&f, "a", 4), qb = add_queue(&f, "b", 8);
    add_job(&f, 0, qb, 0, 1, 1, 4, 0, 1);
    add_job(&f, 0, qb, 0, 1, 1, 4, 0, 50);
    int32_t p = add_job(&f, 5, qa, 0, 1, 1, 4, -1, 0);
    cycle(&f);
    assert_int_equal(f.ds.n, 0);
    assert_int_equal(bound(&f, p), 0);
    fx_fini(&f);
}

/*
 * Many cycles, two priorities: H (10) and L (0) each want the whole node of 8 CPUs and come
 * back every time they end. H preempts L; L never evicts H, over 200 cycles.
 */
static void test_no_cycle_over_many_cycles(void **unused)
{
    (void)unused;
    fixture f;
    fx_init(&f, 1, 8);
    int32_t l = add_job(&f, 0, 0, 0, 2, 2, 4, 0, 0);
    int32_t h = add_job(&f, 10, 0, 0, 2, 2, 4, -1, 0);
    int preempted = 0;
    for (int k = 0; k < 200; k++) {
        cycle(&f);
        preempted += evictions(&f, l, DRV_REASON_PREEMPT) > 0;
        assert_int_equal(evictions(&f, h, DRV_REASON_PREEMPT), 0);
        if (k % 7 == 6 && bound(&f, h) > 0) { /* H ends; a new H arrives */
            const drv_job *j = &f.st.jobs[h];
            for (int32_t i = 0; i < j->pod_count; i++)
                drv_state_unbind(&f.st, j->pod_base + i);
            drv_state_set_phase(&f.st, h, DRV_JOB_DONE);
            h = add_job(&f, 10, 0, 0, 2, 2, 4, -1, 0);
        }
    }
    assert_true(preempted >= 20);
    fx_fini(&f);
}

/*
 * Every allocation of a cycle that preempts may fail (the reclaim start above): the cycle
 * returns 0 or DRV_ENOMEM and, when it returns 0, its decisions hold together - the victim is
 * evicted only with the preemptor placed - and nothing leaks (the ASan build checks).
 */
static void test_failing_allocation(void **unused)
{
    (void)unused;
    int failed = 0;
    for (long nth = 1; nth < 1000; nth++) {
        fixture f;
        fx_init(&f, 1, 8);
        int32_t qa = add_queue(&f, "a", 4), qb = add_queue(&f, "b", 4);
        int32_t v = add_job(&f, 0, qb, 0, 1, 1, 4, 0, 1);
        add_job(&f, 0, qb, 0, 1, 1, 4, 0, 50);
        int32_t p = add_job(&f, 0, qa, 0, 1, 1, 4, -1, 0);
        drv_snapshot snap = {.st = &f.st, .now = 0};
        drv_alloc_fail_at(nth);
        int rc = drv_sched_cycle(f.s, &snap, &f.ds);
        long pending = drv_alloc_fail_pending();
        drv_alloc_fail_at(0);
        if (rc == 0) {
            apply(&f);
            assert_int_equal(bound(&f, v) == 0, bound(&f, p) == 1);
        } else {
            assert_int_equal(rc, DRV_ENOMEM);
            failed++;
        }
        fx_fini(&f);
        if (pending > 0)
            break; /* the cycle made fewer than nth allocations: each has failed once */
    }
    assert_true(failed > 0);
}

/* Knobs out of range or unknown are refused, naming them. */
static void test_knobs(void **unused)
{
    (void)unused;
    static const char *const bad[][2] = {
        {"admit=gang migrate=preempt(max_preemptors=-1)", "max_preemptors=-1"},
        {"admit=gang migrate=preempt(candidates=0)", "candidates=0"},
        {"admit=gang migrate=preempt(reclaim=2)", "reclaim=2"},
        {"admit=gang migrate=preempt(victims=3)", "unknown knob 'victims'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        drv_profile p;
        drv_diag d;
        assert_int_equal(drv_profile_parse("t", bad[i][0], &p, &d), 0);
        drv_sched *s = NULL;
        assert_int_not_equal(drv_sched_new(&p, &s, &d), 0);
        assert_non_null(strstr(d.msg, bad[i][1]));
    }
}

/*
 * Minimum run time (a queue's minRuntimeSeconds, Kueue#477): one node of 8 CPUs held by V
 * (priority 0, started at 0) of a queue with min_runtime 600 s; P (priority 10) needs the whole
 * node. V is no victim at 599 s of run time and is preempted at 600; in a queue without a
 * minimum it is preempted at once; and the time counts from V's last start (run_start), not its
 * first.
 */
static void test_min_runtime(void **unused)
{
    (void)unused;
    for (int variant = 0; variant < 3; variant++) {
        fixture f;
        fx_init(&f, 1, 8);
        drv_queue q = {.name = drv_strtab_intern(f.st.names, "q"),
                       .weight = 1,
                       .quota = {DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED},
                       .min_runtime = variant == 1 ? 0 : 600};
        int32_t qid = -1;
        assert_int_equal(drv_state_add_queue(&f.st, &q, &qid), 0);
        int32_t v = add_job(&f, 0, qid, 0, 1, 1, 8, 0, 10);
        f.st.jobs[v].start = 0;
        f.st.jobs[v].run_start = variant == 2 ? 500 : 0; /* variant 2: restarted at 500 */
        int32_t p = add_job(&f, 10, qid, 0, 1, 1, 8, -1, 0);
        double first_ok = variant == 0 ? 600 : variant == 1 ? 0 : 1100;
        f.now = first_ok - 1;
        if (first_ok > 0) {
            cycle(&f);
            assert_int_equal(bound(&f, v), 1); /* younger than its queue's minimum */
            assert_int_equal(bound(&f, p), 0);
        }
        f.now = first_ok;
        cycle(&f);
        assert_int_equal(bound(&f, v), 0);
        assert_int_equal(bound(&f, p), 1);
        fx_fini(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_lower_gangs_only),
        cmocka_unit_test(test_fewest_victims),
        cmocka_unit_test(test_shrink_before_preempt),
        cmocka_unit_test(test_reclaim_without_cycle),
        cmocka_unit_test(test_no_reclaim_within_quota),
        cmocka_unit_test(test_no_cycle_over_many_cycles),
        cmocka_unit_test(test_failing_allocation),
        cmocka_unit_test(test_knobs),
        cmocka_unit_test(test_min_runtime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
