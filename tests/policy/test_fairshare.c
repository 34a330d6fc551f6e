/*
 * test_fairshare.c - fair share among queues (the fairshare queue order, weighted DRF) and among
 * the users of a queue (the combined priority's share factor), through drv_sched_cycle on
 * hand-built states: equal weights converge to equal dominant shares and 2:1 weights to 2:1;
 * the least-served user of a queue goes first; progressive filling interleaves queues within a
 * cycle; with no queue, fairshare,priority decides exactly what priority alone does; over
 * time, decayed shares follow their half-life and turn the morning's order round, and a
 * half-life of 0 is "now only", not off.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "drover/policy.h"
#include "testutil.h"

#define GiB (1024LL * 1024 * 1024)
#define UNL DRV_UNLIMITED

/* ---- fixtures ---------------------------------------------------------------------------- */

/* A node of cpu millicores (and 64 GiB). */
static drv_res node(int64_t cpu)
{
    return (drv_res){cpu, 64 * GiB, 0};
}

static int32_t add_queue(drv_state *st, const char *name, double weight, drv_res quota)
{
    drv_queue q = {.name = drv_strtab_intern(st->names, name),
                   .weight = weight,
                   .quota = quota,
                   .borrow = {0, 0, 0}};
    int32_t id = -1;
    assert_int_equal(drv_state_add_queue(st, &q, &id), 0);
    return id;
}

/* A pending job of one worker of `cpu` millicores (and 1 GiB), in queue q, by user. */
static int32_t add_job(drv_state *st, int32_t q, const char *user, int64_t cpu, double submit)
{
    static int seq;
    char name[32];
    snprintf(name, sizeof name, "j%d", seq++);
    drv_job t;
    memset(&t, 0, sizeof t);
    t.name = drv_strtab_intern(st->names, name);
    t.user = drv_strtab_intern(st->names, user);
    t.queue = q;
    t.submit = submit;
    t.phase = DRV_JOB_PENDING;
    t.role[DRV_ROLE_WORKER] = (drv_rolespec){1, 1, 1, {cpu, GiB, 0}, cpu};
    int32_t id = -1;
    assert_int_equal(drv_state_add_job(st, &t, &id), 0);
    return id;
}

/* ---- weighted DRF among queues ----------------------------------------------------------- */

/*
 * Queues a and b (weights wa, wb, no quota) on 32 CPUs, each always with 20 jobs waiting: 1-CPU
 * jobs that run a random while (each running job ends with chance 1/10 a cycle). a's jobs all
 * count as submitted at 0, before any of b's, so submission order alone gives a everything.
 * Returns the mean CPU share of each over the second half of 400 cycles.
 */
static void run_shares(double wa, double wb, const char *order, double *sa, double *sb)
{
    drv_state st;
    tu_make_state(&st, 4, node(8000), "", "");
    int32_t qa = add_queue(&st, "a", wa, (drv_res){UNL, UNL, UNL});
    int32_t qb = add_queue(&st, "b", wb, (drv_res){UNL, UNL, UNL});
    char line[128];
    snprintf(line, sizeof line, "gang=true period=1 queue_order=%s admit=gang", order);
    drv_profile p;
    drv_sched *s = tu_sched(&p, line);
    drv_decisions ds;
    drv_decisions_init(&ds);
    uint64_t x = 2463534242ull;
    double suma = 0, sumb = 0;
    int n = 0;
    for (int t = 0; t < 400; t++) {
        int waiting[2] = {0, 0}; /* top each queue up: both always wait, a's jobs first */
        DRV_FOR_PENDING(&st, j)
        waiting[st.jobs[j].queue == qb]++;
        for (int q = 0; q < 2; q++)
            for (int k = waiting[q]; k < 20; k++)
                add_job(&st, q ? qb : qa, "u", 1000, q ? t + 1 : 0);
        tu_cycle(s, &st, &ds, t, true);
        if (t >= 200) {
            suma += (double)st.queues[qa].used.cpu / 32000;
            sumb += (double)st.queues[qb].used.cpu / 32000;
            n++;
        }
        DRV_FOR_LIVE(&st, j)
        if (st.jobs[j].phase == DRV_JOB_RUNNING && tu_rnd(&x) % 10 == 0)
            tu_finish(&st, j);
    }
    *sa = suma / n;
    *sb = sumb / n;
    drv_sched_free(s);
    drv_decisions_fini(&ds);
    drv_state_fini(&st);
}

static void test_drf_converges(void **unused)
{
    (void)unused;
    double a, b;
    run_shares(1, 1, "fairshare", &a, &b);
    assert_true(a + b > 0.95); /* the cluster stays full */
    assert_true(a > b - 0.05 && a < b + 0.05);
    /* each cycle's freed room goes to one queue, so the share a queue overshoots by weighs
     * less for the heavier queue: about 1.75-1.9 to 1 over seeds */
    run_shares(2, 1, "fairshare", &a, &b);
    assert_true(a / b > 1.65 && a / b < 2.35);
    run_shares(1, 2, "fairshare", &a, &b);
    assert_true(b / a > 1.65 && b / a < 2.35);
    /* the control: by submission alone a takes nearly all */
    /* progressive filling lands closer: a queue's overshoot past its share is one job, not a
     * cycle's freed room */
    run_shares(2, 1, "fairshare(progressive=1)", &a, &b);
    assert_true(a / b > 1.85 && a / b < 2.15);
    /* the control: by submission alone a takes nearly all */
    run_shares(1, 1, "fifo", &a, &b);
    assert_true(a > 5 * b);
}

/* Progressive filling: in one cycle on 8 CPUs, 8 jobs of a (first) and 8 of b at equal weight
 * share the room 4 and 4; without it a's all go first. */
static void test_progressive(void **unused)
{
    (void)unused;
    for (int prog = 0; prog < 2; prog++) {
        drv_state st;
        tu_make_state(&st, 1, node(8000), "", "");
        int32_t qa = add_queue(&st, "a", 1, (drv_res){UNL, UNL, UNL});
        int32_t qb = add_queue(&st, "b", 1, (drv_res){UNL, UNL, UNL});
        for (int k = 0; k < 16; k++)
            add_job(&st, k < 8 ? qa : qb, "u", 1000, k);
        drv_profile p;
        drv_sched *s = tu_sched(&p, prog ? "queue_order=fairshare(progressive=1) admit=gang"
                                         : "queue_order=fairshare admit=gang");
        drv_decisions ds;
        drv_decisions_init(&ds);
        tu_cycle(s, &st, &ds, 0, true);
        assert_int_equal(st.queues[qa].used.cpu, prog ? 4000 : 8000);
        assert_int_equal(st.queues[qb].used.cpu, prog ? 4000 : 0);
        drv_sched_free(s);
        drv_decisions_fini(&ds);
        drv_state_fini(&st);
    }
}

/* The chain fairshare,priority: the queue with the smaller share first, priority within it.
 * Queue a runs 4 of 5 CPUs; pending, room for one: a's job of class 100, b's of class 0 and
 * class 50. Priority alone takes a's; the chain b's class-50 job. */
static void test_chain(void **unused)
{
    (void)unused;
    for (int chain = 0; chain < 2; chain++) {
        drv_state st;
        tu_make_state(&st, 1, node(5000), "", "");
        int32_t qa = add_queue(&st, "a", 1, (drv_res){UNL, UNL, UNL});
        int32_t qb = add_queue(&st, "b", 1, (drv_res){UNL, UNL, UNL});
        int32_t run = add_job(&st, qa, "u", 4000, 0);
        drv_state_bind(&st, st.jobs[run].pod_base, 0);
        drv_state_set_phase(&st, run, DRV_JOB_RUNNING);
        int32_t ja = add_job(&st, qa, "u", 1000, 1), jb0 = add_job(&st, qb, "v", 1000, 2),
                jb5 = add_job(&st, qb, "v", 1000, 3);
        st.jobs[ja].priority = 100;
        st.jobs[jb5].priority = 50;
        (void)jb0;
        drv_profile p;
        drv_sched *s = tu_sched(&p, chain ? "queue_order=fairshare,priority admit=gang"
                                          : "queue_order=priority admit=gang");
        drv_decisions ds;
        drv_decisions_init(&ds);
        tu_cycle(s, &st, &ds, 5, true);
        assert_int_equal(ds.n, 1);
        assert_int_equal(ds.v[0].job, chain ? jb5 : ja);
        drv_sched_free(s);
        drv_decisions_fini(&ds);
        drv_state_fini(&st);
    }
}

/* ---- fair share among users: the priority's share factor ---------------------------------- */

/* Queue a (quota 8 CPUs) on one node of 8: u1 runs 4 CPUs; u1 and then u2 each ask 4 more, room
 * for one. The share factor (w_share 0.2) outweighs the waiting time (w_wait 0.1): u2, which
 * uses nothing, goes first though it came later; with w_share=0 the waiting time decides.
 * --explain's breakdown agrees. */
static void test_user_share(void **unused)
{
    (void)unused;
    for (int off = 0; off < 2; off++) {
        drv_state st;
        tu_make_state(&st, 1, node(8000), "", "");
        int32_t qa = add_queue(&st, "a", 1, (drv_res){8000, UNL, UNL});
        int32_t run = add_job(&st, qa, "u1", 4000, 0);
        drv_state_bind(&st, st.jobs[run].pod_base, 0);
        drv_state_set_phase(&st, run, DRV_JOB_RUNNING);
        int32_t p1 = add_job(&st, qa, "u1", 4000, 1);
        int32_t p2 = add_job(&st, qa, "u2", 4000, 2);
        drv_priority_breakdown b1, b2;
        drv_diag d;
        drv_knob k[2] = {{"w_wait", 0.1}, {"w_share", 0}};
        assert_int_equal(drv_priority_explain(&st, 3, p1, k, 1 + off, &b1, &d), 0);
        assert_int_equal(drv_priority_explain(&st, 3, p2, k, 1 + off, &b2, &d), 0);
        assert_float_equal(b1.raw[DRV_PRIO_SHARE], 0.5, 1e-12); /* 4 of the quota's 8 CPUs */
        assert_float_equal(b2.raw[DRV_PRIO_SHARE], 0, 1e-12);
        assert_float_equal(b1.norm[DRV_PRIO_SHARE], 0, 1e-12);
        assert_float_equal(b2.norm[DRV_PRIO_SHARE], 1, 1e-12);
        assert_true(off ? b1.total > b2.total : b2.total > b1.total);
        drv_profile p;
        drv_sched *s = tu_sched(&p, off ? "queue_order=priority(w_wait=0.1;w_share=0) admit=gang"
                                        : "queue_order=priority(w_wait=0.1) admit=gang");
        drv_decisions ds;
        drv_decisions_init(&ds);
        tu_cycle(s, &st, &ds, 3, true);
        assert_int_equal(st.jobs[off ? p1 : p2].bound[DRV_ROLE_WORKER], 1);
        assert_int_equal(st.jobs[off ? p2 : p1].bound[DRV_ROLE_WORKER], 0);
        drv_sched_free(s);
        drv_decisions_fini(&ds);
        drv_state_fini(&st);
    }
}

/* ---- fair share over time ---------------------------------------------------------------- */

/* A running job of `cpu` millicores in queue q by user, bound to node 0 now. */
static int32_t add_running(drv_state *st, int32_t q, const char *user, int64_t cpu)
{
    int32_t j = add_job(st, q, user, cpu, 0);
    drv_state_bind(st, st->jobs[j].pod_base, 0);
    drv_state_set_phase(st, j, DRV_JOB_RUNNING);
    return j;
}

/*
 * Decayed shares converge as the half-life says: queue a holds the whole cluster from 0, so its
 * usage is 1 - 2^(-t/H): 1/2 after H, 3/4 after 2H, 7/8 after 3H; once it holds nothing the
 * usage halves every H. Advancing in 100 small steps gives the same as in one (the decay is
 * exact, not a per-step approximation). The user within the queue follows the same curve.
 */
static void test_usage_half_life(void **unused)
{
    (void)unused;
    const double H = 600;
    drv_state st, fine;
    tu_make_state(&st, 1, node(8000), "", "");
    tu_make_state(&fine, 1, node(8000), "", "");
    drv_state *both[2] = {&st, &fine};
    int32_t job[2], qa = -1, qb = -1, ua = -1;
    for (int i = 0; i < 2; i++) {
        qa = add_queue(both[i], "a", 1, (drv_res){UNL, UNL, UNL});
        qb = add_queue(both[i], "b", 1, (drv_res){UNL, UNL, UNL});
        assert_int_equal(drv_state_set_half_life(both[i], H), 0);
        job[i] = add_running(both[i], qa, "u", 8000);
        ua = both[i]->jobs[job[i]].user;
        assert_int_equal(drv_state_usage_advance(both[i], 0), 0); /* sets the clock only */
    }
    drv_res cap = drv_cluster_capacity(&st);
    assert_float_equal(drv_queue_usage(&st, qa, cap), 0, 1e-15);
    for (int k = 1; k <= 3; k++) {
        assert_int_equal(drv_state_usage_advance(&st, k * H), 0);
        for (int m = 1; m <= 100; m++)
            assert_int_equal(drv_state_usage_advance(&fine, (k - 1) * H + m * H / 100), 0);
        double want = 1 - 1 / (double)(1 << k);
        assert_float_equal(drv_queue_usage(&st, qa, cap), want, 1e-12);
        assert_float_equal(drv_queue_usage(&fine, qa, cap), want, 1e-12);
        assert_float_equal(drv_user_fair_share(&st, qa, ua, (drv_res){0, 0, 0}, cap), want, 1e-12);
        assert_float_equal(drv_queue_usage(&st, qb, cap), 0, 1e-15);
    }
    tu_finish(&st, job[0]);
    assert_int_equal(drv_state_usage_advance(&st, 4 * H), 0);
    assert_float_equal(drv_queue_usage(&st, qa, cap), 0.875 / 2, 1e-12);
    assert_float_equal(drv_queue_fair_share(&st, qa, cap), 0.875 / 2, 1e-12);
    assert_float_equal(drv_user_fair_share(&st, qa, ua, (drv_res){0, 0, 0}, cap), 0.875 / 2, 1e-12);
    assert_int_equal(drv_state_set_half_life(&st, -1), DRV_EINVAL);
    assert_int_equal(drv_state_set_half_life(&st, DRV_MAX_HALF_LIFE * 2), DRV_EINVAL);
    drv_state_fini(&st);
    drv_state_fini(&fine);
}

/*
 * The morning effect: queue a held the whole cluster all night (8 h) and its jobs have just
 * ended; then a and b each submit a job that takes the whole cluster, a's first. Shares now
 * are both 0, so "now only" (half_life=0) gives the cluster to a's job by submission order;
 * with a half-life of 1 h a's night still counts (usage 1 - 2^-8) and b's job goes first.
 * Zero is "now only", not off: with a holding half the cluster now, b's later job goes first
 * at half_life=0 as well.
 */
static void test_morning(void **unused)
{
    (void)unused;
    const char *lines[] = {"half_life=0 queue_order=fairshare admit=gang",
                           "half_life=3600 queue_order=fairshare admit=gang",
                           "half_life=3600 queue_order=fairshare(progressive=1) admit=gang"};
    for (int i = 0; i < 3; i++) {
        drv_state st;
        tu_make_state(&st, 1, node(8000), "", "");
        int32_t qa = add_queue(&st, "a", 1, (drv_res){UNL, UNL, UNL});
        int32_t qb = add_queue(&st, "b", 1, (drv_res){UNL, UNL, UNL});
        drv_profile p;
        drv_sched *s = tu_sched(&p, lines[i]);
        assert_int_equal(drv_state_set_half_life(&st, p.half_life), 0);
        int32_t night = add_running(&st, qa, "u", 8000);
        assert_int_equal(drv_state_usage_advance(&st, 0), 0);
        assert_int_equal(drv_state_usage_advance(&st, 8 * 3600), 0);
        tu_finish(&st, night);
        int32_t ja = add_job(&st, qa, "u", 8000, 8 * 3600 + 1);
        int32_t jb = add_job(&st, qb, "v", 8000, 8 * 3600 + 2);
        drv_decisions ds;
        drv_decisions_init(&ds);
        assert_int_equal(drv_state_usage_advance(&st, 8 * 3600 + 3), 0);
        tu_cycle(s, &st, &ds, 8 * 3600 + 3, true);
        int32_t first = i == 0 ? ja : jb;
        assert_int_equal(st.jobs[first].bound[DRV_ROLE_WORKER], 1);
        assert_int_equal(st.jobs[first == ja ? jb : ja].bound[DRV_ROLE_WORKER], 0);
        drv_sched_free(s);
        drv_decisions_fini(&ds);
        drv_state_fini(&st);
    }
    /* zero is now only: a holds 4 of 8 CPUs now, so b's later job goes first */
    drv_state st;
    tu_make_state(&st, 1, node(8000), "", "");
    int32_t qa = add_queue(&st, "a", 1, (drv_res){UNL, UNL, UNL});
    int32_t qb = add_queue(&st, "b", 1, (drv_res){UNL, UNL, UNL});
    drv_profile p;
    drv_sched *s = tu_sched(&p, "half_life=0 queue_order=fairshare admit=gang");
    assert_int_equal(drv_state_set_half_life(&st, p.half_life), 0);
    add_running(&st, qa, "u", 4000);
    int32_t ja = add_job(&st, qa, "u", 4000, 1);
    int32_t jb = add_job(&st, qb, "v", 4000, 2);
    drv_decisions ds;
    drv_decisions_init(&ds);
    assert_int_equal(drv_state_usage_advance(&st, 3), 0);
    tu_cycle(s, &st, &ds, 3, true);
    assert_int_equal(st.jobs[jb].bound[DRV_ROLE_WORKER], 1);
    assert_int_equal(st.jobs[ja].bound[DRV_ROLE_WORKER], 0);
    drv_sched_free(s);
    drv_decisions_fini(&ds);
    drv_state_fini(&st);
}

/* The priority's share factor reads the users' decayed shares: user u1 of queue a ran the
 * whole quota for an hour and has ended; u1 and u2 then wait. Now only, the factor ties and
 * waiting time (u1 came first, weight 0.1) decides; with a half-life of 1 h, u1's decayed
 * share 1/2 puts u2 first (share weight 0.2). */
static void test_user_share_over_time(void **unused)
{
    (void)unused;
    for (int decay = 0; decay < 2; decay++) {
        drv_state st;
        tu_make_state(&st, 1, node(8000), "", "");
        int32_t qa = add_queue(&st, "a", 1, (drv_res){8000, UNL, UNL});
        drv_profile p;
        drv_sched *s =
            tu_sched(&p, decay ? "half_life=3600 queue_order=priority(w_wait=0.1) admit=gang"
                               : "queue_order=priority(w_wait=0.1) admit=gang");
        assert_int_equal(drv_state_set_half_life(&st, p.half_life), 0);
        int32_t old = add_running(&st, qa, "u1", 8000);
        assert_int_equal(drv_state_usage_advance(&st, 0), 0);
        assert_int_equal(drv_state_usage_advance(&st, 3600), 0);
        tu_finish(&st, old);
        int32_t p1 = add_job(&st, qa, "u1", 8000, 3601);
        int32_t p2 = add_job(&st, qa, "u2", 8000, 3602);
        drv_decisions ds;
        drv_decisions_init(&ds);
        assert_int_equal(drv_state_usage_advance(&st, 3603), 0);
        tu_cycle(s, &st, &ds, 3603, true);
        assert_int_equal(st.jobs[decay ? p2 : p1].bound[DRV_ROLE_WORKER], 1);
        assert_int_equal(st.jobs[decay ? p1 : p2].bound[DRV_ROLE_WORKER], 0);
        drv_sched_free(s);
        drv_decisions_fini(&ds);
        drv_state_fini(&st);
    }
}

/* half_life: a profile setting in [0, 30 days], written back only when set. */
static void test_half_life_setting(void **unused)
{
    (void)unused;
    drv_profile p;
    drv_diag d;
    char buf[512];
    assert_int_equal(drv_profile_parse("x", "half_life=1800 admit=gang", &p, &d), 0);
    assert_float_equal(p.half_life, 1800, 0);
    drv_profile_format(&p, buf, sizeof buf);
    assert_non_null(strstr(buf, " half_life=1800 "));
    assert_int_equal(drv_profile_parse("x", "admit=gang", &p, &d), 0);
    assert_float_equal(p.half_life, 0, 0);
    drv_profile_format(&p, buf, sizeof buf);
    assert_null(strstr(buf, "half_life"));
    const char *bad[] = {"half_life=-1 admit=gang", "half_life=1e9 admit=gang",
                         "half_life=1h admit=gang", "half_life= admit=gang"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(drv_profile_parse("x", bad[i], &p, &d), DRV_EINVAL);
        assert_non_null(strstr(d.msg, "half_life: expected seconds in [0, 2592000]"));
    }
}

/* ---- no queue: nothing changes ------------------------------------------------------------ */

/* With no queue, fairshare,priority and priority alone decide the same, decision for decision,
 * over cycles of random arrivals, users and completions; and the share factor is 0. */
static void test_no_queue_same(void **unused)
{
    (void)unused;
    drv_state st[2];
    drv_profile p[2];
    drv_sched *s[2];
    drv_decisions ds[2];
    s[0] = tu_sched(&p[0], "gang=true period=1 queue_order=fairshare,priority admit=gang "
                           "score=least-allocated");
    s[1] =
        tu_sched(&p[1], "gang=true period=1 queue_order=priority admit=gang score=least-allocated");
    uint64_t x[2] = {99, 99};
    for (int i = 0; i < 2; i++) {
        tu_make_state(&st[i], 3, node(8000), "", "");
        drv_decisions_init(&ds[i]);
    }
    for (int t = 0; t < 60; t++) {
        for (int i = 0; i < 2; i++) {
            for (int k = (int)(tu_rnd(&x[i]) % 3); k > 0; k--)
                add_job(&st[i], 0, tu_rnd(&x[i]) % 2 ? "u1" : "u2", 1000 * (1 + tu_rnd(&x[i]) % 4),
                        t);
            tu_cycle(s[i], &st[i], &ds[i], t, true);
            DRV_FOR_LIVE(&st[i], j)
            if (st[i].jobs[j].phase == DRV_JOB_RUNNING && tu_rnd(&x[i]) % 5 == 0)
                tu_finish(&st[i], j);
        }
        assert_int_equal(ds[0].n, ds[1].n);
        assert_memory_equal(ds[0].v, ds[1].v, (size_t)ds[0].n * sizeof *ds[0].v);
    }
    drv_priority_breakdown b;
    drv_diag d;
    int32_t last = st[0].njobs - 1;
    assert_int_equal(drv_priority_explain(&st[0], 60, last, NULL, 0, &b, &d), 0);
    assert_float_equal(b.raw[DRV_PRIO_SHARE], 0, 0);
    assert_float_equal(b.norm[DRV_PRIO_SHARE], 0, 0);
    for (int i = 0; i < 2; i++) {
        drv_sched_free(s[i]);
        drv_decisions_fini(&ds[i]);
        drv_state_fini(&st[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drf_converges),
        cmocka_unit_test(test_progressive),
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_user_share),
        cmocka_unit_test(test_no_queue_same),
        cmocka_unit_test(test_usage_half_life),
        cmocka_unit_test(test_morning),
        cmocka_unit_test(test_user_share_over_time),
        cmocka_unit_test(test_half_life_setting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
