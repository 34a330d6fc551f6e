/*
 * ctrl_events.c - the queue through which the controller's threads hand the scheduler thread
 * what happened (ctrl_events.h): informer changes, binder answers, progress samples, the
 * lease's word.
 *
 * One array under one lock; the scheduler thread swaps it with its own (empty) array rather
 * than copying, so a push waits at most for a swap. The condition variable runs on the
 * monotonic clock, as every wait of the loop does (ctrl_loop.c): a change of the wall clock
 * neither wakes the loop early nor makes it sleep long.
 *
 * Example: during the first list of 21,000 objects (batch_wakes on), the informers push 21,000
 * events and wake the scheduler thread about 80 times (every CTRL_EVENTS_BATCH pushes, and at
 * each list's end); once synced, every push wakes it.
 */
#include "ctrl_events.h"

#include "drover/base.h"
#include "drover/clock.h"

#include <math.h>
#include <time.h>

void ctrl_tj_record_free(tj_record *t)
{
    if (!t)
        return;
    for (int r = 0; r < DRV_NROLES; r++)
        drv_free(t->tmpl[r]);
    drv_free(t);
}

int ctrl_events_init(ctrl_events *q)
{
    pthread_condattr_t a;
    pthread_mutex_init(&q->mu, NULL);
    if (pthread_condattr_init(&a) != 0)
        return DRV_ENOMEM;
    int rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(&q->cv, &a);
    pthread_condattr_destroy(&a);
    return rc == 0 ? 0 : DRV_ENOMEM;
}

void ctrl_events_fini(ctrl_events *q)
{
    for (int32_t i = 0; i < q->n; i++)
        ctrl_tj_record_free(q->v[i].tj);
    drv_free(q->v);
    q->v = NULL;
    q->n = q->cap = 0;
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
}

/* Queues e and, with wake, wakes the scheduler thread; when out of memory, drops it, frees its
 * tj and logs `what`. */
static void push(ctrl_events *q, const ctrl_event *e, const char *what, bool wake)
{
    pthread_mutex_lock(&q->mu);
    if (drv_grow(&q->v, sizeof *q->v, &q->cap, q->n + 1) != 0) {
        pthread_mutex_unlock(&q->mu);
        ctrl_tj_record_free(e->tj);
        drv_log(DRV_LOG_ERROR, "out of memory: %s dropped", what);
        return;
    }
    q->v[q->n++] = *e;
    if (wake && (!q->batch_wakes || q->n % CTRL_EVENTS_BATCH == 0))
        pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

void ctrl_events_push(ctrl_events *q, const ctrl_event *e, const char *what)
{
    push(q, e, what, true);
}

void ctrl_events_push_quiet(ctrl_events *q, const ctrl_event *e, const char *what)
{
    push(q, e, what, false);
}

void ctrl_events_signal(ctrl_events *q)
{
    pthread_mutex_lock(&q->mu);
    if (q->n > 0)
        pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

struct timespec ctrl_mono_deadline(double until)
{
    double whole = floor(until);
    struct timespec ts = {(time_t)whole, (long)((until - whole) * 1e9)};
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int32_t ctrl_events_take(ctrl_events *q, ctrl_event **batch, int32_t *cap, double until)
{
    pthread_mutex_lock(&q->mu);
    if (q->n == 0 && !q->woken && until > drv_clock_mono()) {
        struct timespec ts = ctrl_mono_deadline(until);
        pthread_cond_timedwait(&q->cv, &q->mu, &ts);
    }
    ctrl_event *mine = *batch;
    int32_t mine_cap = *cap, n = q->n;
    *batch = q->v;
    *cap = q->cap;
    q->v = mine;
    q->cap = mine_cap;
    q->n = 0;
    q->woken = false;
    pthread_mutex_unlock(&q->mu);
    return n;
}

void ctrl_events_batch_wakes(ctrl_events *q, bool on)
{
    pthread_mutex_lock(&q->mu);
    q->batch_wakes = on;
    pthread_mutex_unlock(&q->mu);
}

void ctrl_events_wake(ctrl_events *q)
{
    pthread_mutex_lock(&q->mu);
    q->woken = true;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}
