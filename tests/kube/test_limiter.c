/*
 * The concurrency limiter's rule (src/kube/limiter.c), on latencies given by the test (no
 * clock): with the latency flat and the limit used, it grows to its maximum and no further;
 * with the latency rising well above the unloaded one (a server queueing), it shrinks; a 429
 * halves it, once per burst; a client using less than half of it does not grow it; acquire
 * holds the requests in flight to the limit; stop releases a waiter.
 */
#include "limiter.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>

/* Keeps the limit in use (as many in flight as it allows), then answers one of them after
 * latency s; n times. */
static void answer_busy(drv_limiter *l, int n, double s, double *t)
{
    for (int i = 0; i < n; i++) {
        while (drv_limiter_try_acquire(l))
            drv_limiter_begin(l);
        *t += s;
        drv_limiter_release(l, s, false, *t);
    }
}

/* A limiter of at most max, grown there by flat 15 ms answers (test_grows_to_max_while_flat). */
static void at_max(drv_limiter *l, int max, double *t)
{
    drv_limiter_init(l, 0, max);
    answer_busy(l, 200, 0.015, t);
    assert_int_equal(drv_limiter_limit(l), max);
}

static void release_all(drv_limiter *l, double *t)
{
    while (l->inflight > 0)
        drv_limiter_release(l, -1, false, *t); /* (no latency: no sample) */
}

static void test_grows_to_max_while_flat(void **unused)
{
    (void)unused;
    drv_limiter l;
    drv_limiter_init(&l, 0, 32);
    assert_int_equal(drv_limiter_limit(&l), DRV_LIMITER_DEF_INITIAL);
    double t = 0;
    answer_busy(&l, 200, 0.015, &t);
    assert_int_equal(drv_limiter_limit(&l), 32);
    assert_int_equal(l.peak, 32); /* and never more in flight than the limit */
    release_all(&l, &t);
    drv_limiter_fini(&l);
}

static void test_shrinks_when_the_server_queues(void **unused)
{
    (void)unused;
    drv_limiter l;
    double t = 0;
    at_max(&l, 64, &t);
    /* 4 seats: each request waits for those ahead of it: latency ~ in flight x 15 ms / 4 */
    for (int i = 0; i < 300; i++) {
        while (drv_limiter_try_acquire(&l))
            drv_limiter_begin(&l);
        double s = 0.015 * l.inflight / 4;
        t += s;
        drv_limiter_release(&l, s, false, t);
    }
    int lim = drv_limiter_limit(&l);
    assert_true(lim < 24); /* from 64: where ~2 x the seats' latency is */
    assert_true(lim >= 4); /* the seats stay busy */
    release_all(&l, &t);
    drv_limiter_fini(&l);
}

static void test_429_halves_once_per_burst(void **unused)
{
    (void)unused;
    drv_limiter l;
    double t = 0;
    at_max(&l, 64, &t);
    for (int i = 0; i < 8; i++) /* a burst: 8 answers within 15 ms */
        drv_limiter_release(&l, 1.0, true, t + 0.001 * i);
    assert_int_equal(drv_limiter_limit(&l), 32);
    drv_limiter_release(&l, 1.0, true, t + 1.0); /* a later one: halved again */
    assert_int_equal(drv_limiter_limit(&l), 16);
    assert_int_equal(l.throttled, 9);
    release_all(&l, &t);
    drv_limiter_fini(&l);
}

static void test_not_grown_when_unused(void **unused)
{
    (void)unused;
    drv_limiter l;
    drv_limiter_init(&l, 0, 64);
    double t = 0;
    for (int i = 0; i < 200; i++) { /* one request at a time: the client bounds it */
        assert_true(drv_limiter_try_acquire(&l));
        drv_limiter_begin(&l);
        t += 0.015;
        drv_limiter_release(&l, 0.015, false, t);
    }
    assert_int_equal(drv_limiter_limit(&l), DRV_LIMITER_DEF_INITIAL);
    drv_limiter_fini(&l);
}

static void *waiter(void *arg)
{
    return (void *)(size_t)drv_limiter_acquire(arg);
}

static void test_acquire_holds_to_the_limit_and_stop_releases(void **unused)
{
    (void)unused;
    drv_limiter l;
    drv_limiter_init(&l, 2, 2);
    assert_true(drv_limiter_acquire(&l));
    assert_true(drv_limiter_acquire(&l));
    assert_false(drv_limiter_try_acquire(&l));
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waiter, &l), 0);
    drv_limiter_stop(&l);
    void *got;
    pthread_join(th, &got);
    assert_false((bool)(size_t)got);
    assert_int_equal(l.inflight, 2);
    drv_limiter_fini(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grows_to_max_while_flat),
        cmocka_unit_test(test_shrinks_when_the_server_queues),
        cmocka_unit_test(test_429_halves_once_per_burst),
        cmocka_unit_test(test_not_grown_when_unused),
        cmocka_unit_test(test_acquire_holds_to_the_limit_and_stop_releases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
