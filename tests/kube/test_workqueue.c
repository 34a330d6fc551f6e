/*
 * The work queue's promises, on a fake clock: de-duplication of waiting keys; a key added while
 * processed comes back once, after done; retries wait a doubling, capped back-off and forget
 * resets it; FIFO order; shutdown wakes a blocked worker; and, with real threads, no key is
 * ever handed to two workers at once.
 */
#include "drover/kube_workqueue.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

static double fake_now;
static double fake(void *arg)
{
    (void)arg;
    return fake_now;
}

static void test_dedup_and_dirty(void **unused)
{
    (void)unused;
    fake_now = 0;
    drv_workqueue *q = drv_workqueue_new(0.01, 1, fake, NULL);
    assert_non_null(q);
    drv_workqueue_add(q, "a");
    drv_workqueue_add(q, "b");
    drv_workqueue_add(q, "a"); /* waiting already: not twice */
    assert_int_equal(drv_workqueue_len(q), 2);
    char k[32];
    assert_true(drv_workqueue_get(q, k, sizeof k, false));
    assert_string_equal(k, "a"); /* FIFO */
    drv_workqueue_add(q, "a");   /* while processing: held back */
    drv_workqueue_add(q, "a");
    assert_int_equal(drv_workqueue_len(q), 1); /* only b is ready */
    assert_true(drv_workqueue_get(q, k, sizeof k, false));
    assert_string_equal(k, "b");
    assert_false(drv_workqueue_get(q, k, sizeof k, false)); /* a is still being processed */
    drv_workqueue_done(q, "a");                             /* ...and comes back once */
    drv_workqueue_done(q, "b");
    assert_int_equal(drv_workqueue_len(q), 1);
    assert_true(drv_workqueue_get(q, k, sizeof k, false));
    assert_string_equal(k, "a");
    drv_workqueue_done(q, "a");
    assert_false(drv_workqueue_get(q, k, sizeof k, false));
    drv_workqueue_free(q);
}

static void test_retry_backoff(void **unused)
{
    (void)unused;
    fake_now = 100;
    drv_workqueue *q = drv_workqueue_new(0.5, 3, fake, NULL);
    char k[32];
    double want[] = {0.5, 1, 2, 3, 3};
    for (int i = 0; i < 5; i++) {
        assert_true(drv_workqueue_retry(q, "x") == want[i]);
        assert_int_equal(drv_workqueue_retries(q, "x"), i + 1);
        assert_false(drv_workqueue_get(q, k, sizeof k, false)); /* not yet */
        fake_now += want[i] - 0.001;
        assert_false(drv_workqueue_get(q, k, sizeof k, false));
        fake_now += 0.002;
        assert_true(drv_workqueue_get(q, k, sizeof k, false));
        assert_string_equal(k, "x");
        drv_workqueue_done(q, "x");
    }
    drv_workqueue_forget(q, "x");
    assert_int_equal(drv_workqueue_retries(q, "x"), 0);
    assert_true(drv_workqueue_retry(q, "x") == 0.5);
    drv_workqueue_free(q);
}

static void *waiter(void *arg)
{
    char k[8];
    return drv_workqueue_get(arg, k, sizeof k, true) ? (void *)1 : NULL;
}

static void test_shutdown_wakes(void **unused)
{
    (void)unused;
    drv_workqueue *q = drv_workqueue_new(0, 0, NULL, NULL);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, waiter, q), 0);
    struct timespec ts = {0, 50000000};
    nanosleep(&ts, NULL);
    drv_workqueue_shutdown(q);
    void *got;
    pthread_join(t, &got);
    assert_null(got);
    assert_int_equal(drv_workqueue_add(q, "late"), 0); /* ignored */
    assert_int_equal(drv_workqueue_len(q), 0);
    drv_workqueue_free(q);
}

/* Workers on real threads: a key is never processed by two at once. */
typedef struct pool {
    drv_workqueue *q;
    pthread_mutex_t mu;
    int busy[16];
    int overlap, processed;
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    char k[8];
    while (drv_workqueue_get(p->q, k, sizeof k, true)) {
        int i = k[1] - 'a';
        pthread_mutex_lock(&p->mu);
        if (p->busy[i]++)
            p->overlap++;
        p->processed++;
        pthread_mutex_unlock(&p->mu);
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&p->mu);
        p->busy[i]--;
        pthread_mutex_unlock(&p->mu);
        drv_workqueue_done(p->q, k);
    }
    return NULL;
}

static void test_no_concurrent_key(void **unused)
{
    (void)unused;
    pool p = {.q = drv_workqueue_new(0, 0, NULL, NULL)};
    pthread_mutex_init(&p.mu, NULL);
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, &p);
    for (int r = 0; r < 2000; r++) {
        char k[3] = {'k', (char)('a' + r % 16), 0};
        drv_workqueue_add(p.q, k);
    }
    while (drv_workqueue_len(p.q) > 0) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    drv_workqueue_shutdown(p.q);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(p.overlap, 0);
    assert_true(p.processed >= 16);   /* every key at least once */
    assert_true(p.processed <= 2000); /* and de-duplicated */
    drv_workqueue_free(p.q);
    pthread_mutex_destroy(&p.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dedup_and_dirty),
        cmocka_unit_test(test_retry_backoff),
        cmocka_unit_test(test_shutdown_wakes),
        cmocka_unit_test(test_no_concurrent_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
