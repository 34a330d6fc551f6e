/*
 * kube_workqueue.h - a queue of keys to reconcile, like client-go's rate-limited work queue.
 *
 *  - A key added while it waits is not added twice (de-duplication).
 *  - A key added while a worker processes it is queued again once the worker calls done, so
 *    no change is lost and no key is processed by two workers at once.
 *  - retry re-adds a key after a per-key back-off that doubles with each consecutive retry
 *    (base, capped); forget resets the key's count (call it after a success).
 *  - shutdown wakes every waiting get, which then returns false.
 * Thread-safe (a mutex and a condition variable). Times come from an injectable clock in
 * seconds, so tests need not sleep; get waits for delayed keys on the real clock only when
 * the clock is the default one.
 */
#ifndef DROVER_KUBE_WORKQUEUE_H
#define DROVER_KUBE_WORKQUEUE_H

#include "drover/base.h"

typedef struct drv_workqueue drv_workqueue;
typedef double (*drv_clock_fn)(void *arg);

/* base_s, max_s: retry back-off (0: 0.005 s and 1000 s, client-go's defaults). clock: NULL for
 * the monotonic clock. */
drv_workqueue *drv_workqueue_new(double base_s, double max_s, drv_clock_fn clock, void *clock_arg);
void drv_workqueue_free(drv_workqueue *q);

/* 0, or DRV_ENOMEM. Ignored after shutdown. */
int drv_workqueue_add(drv_workqueue *q, const char *key);
/* Adds key after its back-off; returns the delay chosen (seconds), or < 0 on error. */
double drv_workqueue_retry(drv_workqueue *q, const char *key);
/* Consecutive retries of key so far. */
int drv_workqueue_retries(drv_workqueue *q, const char *key);
void drv_workqueue_forget(drv_workqueue *q, const char *key);
/*
 * Takes the next ready key into buf (n bytes), marking it processing. wait: block until a key
 * is ready or shutdown; otherwise return false at once when none is ready. Returns false when
 * nothing was taken.
 */
bool drv_workqueue_get(drv_workqueue *q, char *buf, size_t n, bool wait);
/* The worker finished key: if it was added meanwhile it becomes ready again. */
void drv_workqueue_done(drv_workqueue *q, const char *key);
/* Ready keys (not counting delayed or processing ones). */
size_t drv_workqueue_len(drv_workqueue *q);
void drv_workqueue_shutdown(drv_workqueue *q);

#endif
