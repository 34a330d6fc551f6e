/*
 * limiter.h - a concurrency limit sized from observed latency (limiter.c): how many requests of
 * one kind a client keeps in flight, between 1 and a maximum, grown while the latency stays flat
 * and shrunk when it rises (the server queues them) or the server answers 429.
 *
 * Owns: its counters, under its own lock. Threads call drv_limiter_acquire before a request and
 * drv_limiter_release with the request's latency after it; a thread waits in acquire while the
 * requests in flight are at the limit. Knows nothing of HTTP: the caller says what a request
 * took and whether the server throttled it.
 */
#ifndef DROVER_KUBE_LIMITER_H
#define DROVER_KUBE_LIMITER_H

#include <pthread.h>
#include <stdbool.h>

/* The rule's knobs (limiter.c says why each is what it is). */
#define DRV_LIMITER_DEF_INITIAL 8 /* the limit before the first answer */
#define DRV_LIMITER_TOLERANCE 2.0 /* a recent latency up to 2x the unloaded one is no queue */
#define DRV_LIMITER_SMOOTHING 0.2 /* weight of a new limit against the last */
#define DRV_LIMITER_SHORT_N 10    /* answers in the recent latency's moving mean */
#define DRV_LIMITER_DRIFT 1e-4    /* the unloaded latency's pull towards the recent, per answer */
#define DRV_LIMITER_BACKOFF 0.5   /* the limit's factor after a 429 */

typedef struct drv_limiter {
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t cv;  /* acquirers wait here while inflight >= floor(limit) */
    double limit;       /* requests allowed in flight, in [1, max] */
    int max;            /* the largest limit (the threads that send: --binders) */
    int inflight;       /* acquired, not yet released (a place in the limit) */
    int busy;           /* ... of them, begun: a request is out (drv_limiter_begin) */
    int peak;           /* the largest busy seen (metrics, tests) */
    double recent;      /* moving mean latency of the last ~SHORT_N answers, s (0: none yet) */
    double unloaded;    /* the least `recent` seen, drifting up slowly, s (0: none yet) */
    double backed_off;  /* the time of the last back-off after a 429 (s, caller's clock) */
    long throttled;     /* 429s seen */
    bool stop;          /* acquire returns at once (shutting down) */
} drv_limiter;

/* A limit of `initial` (<= 0: DRV_LIMITER_DEF_INITIAL; capped at max) that may grow to max
 * (>= 1). */
void drv_limiter_init(drv_limiter *l, int initial, int max);
void drv_limiter_fini(drv_limiter *l);
/* Waits until a request may go (in flight below the limit), then counts it in flight. false:
 * stopped (nothing counted). */
bool drv_limiter_acquire(drv_limiter *l);
/* The same without waiting: false when the limit is reached or stopped (tests, pollers). */
bool drv_limiter_try_acquire(drv_limiter *l);
/* The place acquired is used: a request goes out now (a thread may take a place before it has
 * a request, and wait for one holding it: only begun ones say whether the limit is used). */
void drv_limiter_begin(drv_limiter *l);
/* A place acquired and not begun is given back (no request came: stopping). */
void drv_limiter_cancel(drv_limiter *l);
/* A request begun is answered: it took latency_s, from before it waited for the
 * client's rate limiter to its answer (so a client held by its own budget sees the wait as
 * latency and holds fewer in flight); throttled: the server answered 429 (retried or not). now:
 * the caller's clock (s): back-offs are at least one recent latency apart. O(1). */
void drv_limiter_release(drv_limiter *l, double latency_s, bool throttled, double now);
/* Wakes every waiter; acquire returns false from now on. */
void drv_limiter_stop(drv_limiter *l);
/* The current limit, floored (>= 1). */
int drv_limiter_limit(drv_limiter *l);

#endif
