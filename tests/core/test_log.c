/*
 * test_log.c - the log sink (base.c): levels filter, a replaced sink is never called again, and
 * messages logged from several threads at once all reach the sink one at a time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "drover/base.h"

typedef struct seen {
    int n;      /* messages received (incremented without atomics: the sink's lock guards it) */
    int inside; /* sinks running now: never above 1 */
    int max_inside;
    char last[64];
} seen;

static void sink(enum drv_log_level lvl, const char *msg, void *arg)
{
    seen *s = arg;
    (void)lvl;
    s->inside++;
    if (s->inside > s->max_inside)
        s->max_inside = s->inside;
    s->n++;
    strncpy(s->last, msg, sizeof s->last - 1);
    s->inside--;
}

static void test_levels_and_replace(void **unused)
{
    (void)unused;
    seen a = {0}, b = {0};
    drv_log_set(sink, &a, DRV_LOG_WARN);
    drv_log(DRV_LOG_INFO, "hidden %d", 1);
    drv_log(DRV_LOG_WARN, "shown %d", 2);
    drv_log(DRV_LOG_ERROR, "shown %d", 3);
    assert_int_equal(a.n, 2);
    assert_string_equal(a.last, "shown 3");
    drv_log_set(sink, &b, DRV_LOG_DEBUG);
    drv_log(DRV_LOG_DEBUG, "to b");
    assert_int_equal(a.n, 2); /* the old sink is not called again */
    assert_int_equal(b.n, 1);
    assert_string_equal(b.last, "to b");
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
}

enum { THREADS = 4, EACH = 2000 };

static void *logger(void *arg)
{
    (void)arg;
    for (int i = 0; i < EACH; i++)
        drv_log(DRV_LOG_WARN, "thread message %d", i);
    return NULL;
}

static void test_threads(void **unused)
{
    (void)unused;
    seen s = {0};
    drv_log_set(sink, &s, DRV_LOG_WARN);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, logger, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
    assert_int_equal(s.n, THREADS * EACH);
    assert_int_equal(s.max_inside, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels_and_replace),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
