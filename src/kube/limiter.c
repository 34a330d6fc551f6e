/*
 * limiter.c - a concurrency limit sized from observed latency (limiter.h), the gradient rule of
 * Netflix's concurrency-limits (GradientLimit) with TCP's multiplicative decrease on a 429.
 *
 * Why: a client's throughput against a server is, by Little's law, the requests it keeps in
 * flight over the server's time per request. A real kube-apiserver takes 15-30 ms a pod write
 * (issue 28's audit), so 8 in flight is ~260-510 writes/s however fast the client is; a slower
 * server (50 ms) needs more in flight for the same rate. But more in flight than the server's
 * seats (API Priority and Fairness) only queues them there, and a full queue answers 429. So the
 * limit grows while the answers come as fast as when unloaded, and shrinks when they slow down
 * (the server queues) or are throttled.
 *
 * The rule, per answer (O(1), under the lock):
 *   recent   = moving mean of the latency (weight 2 / (SHORT_N + 1): ~10 answers), which smooths
 *              a service time's own spread (a log-normal of p90 2x p50 varies ~+-20% over 10);
 *   unloaded = min(unloaded, recent), pulled DRIFT of the way towards recent each answer (a
 *              server that got slower for good is learnt again over ~10,000 answers, while
 *              a queue at the server lasting a few hundred answers moves it a few per cent);
 *   gradient = clamp(TOLERANCE * unloaded / recent, 0.5, 1): 1 while recent < 2 x unloaded;
 *   limit    = (1 - SMOOTHING) * limit + SMOOTHING * (limit * gradient + sqrt(limit)),
 *              clamped to [1, max]: +0.2 sqrt(limit) an answer at gradient 1 (8 -> 64 in ~50
 *              answers), and at a server queueing requests it settles where
 *              limit * (1 - gradient) = sqrt(limit): a few requests queued, the seats busy;
 *   an answer sent while fewer than half the limit were in flight changes the latencies but not
 *   the limit (the client, not the server, bounded it then: the limit is not grown on no
 *   evidence);
 *   a 429 (the client retried it after Retry-After) halves the limit, at most once per recent
 *   latency (a burst of 429s answers one overload: one halving).
 * The client's shared rate limiter (--kube-api-qps) is inside the measured latency: a request
 * waiting for a token looks like a slow answer, so a client held by its own budget does not grow
 * its in-flight count past what the budget lets through.
 *
 * Example: 15 ms answers, unloaded 10 ms (the least 10-answer mean), 244 seats, max 64: the
 * gradient is 1 (15 < 20), the limit climbs from 8 to 64 in ~50 answers and stays. With 4 seats,
 * 16 in flight wait ~60 ms: the gradient is 0.33 -> 0.5, the limit falls towards ~6, where the
 * wait (~22 ms) is near the tolerance.
 */
#include "limiter.h"

#include <math.h>

void drv_limiter_init(drv_limiter *l, int initial, int max)
{
    if (max < 1)
        max = 1;
    if (initial <= 0)
        initial = DRV_LIMITER_DEF_INITIAL;
    *l = (drv_limiter){.limit = initial < max ? initial : max, .max = max};
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
}

void drv_limiter_fini(drv_limiter *l)
{
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
}

/* Under l->mu. */
static bool room(const drv_limiter *l)
{
    return l->inflight < (int)l->limit;
}

static void count_in(drv_limiter *l)
{
    l->inflight++;
}

bool drv_limiter_acquire(drv_limiter *l)
{
    pthread_mutex_lock(&l->mu);
    while (!l->stop && !room(l))
        pthread_cond_wait(&l->cv, &l->mu);
    bool ok = !l->stop;
    if (ok)
        count_in(l);
    pthread_mutex_unlock(&l->mu);
    return ok;
}

bool drv_limiter_try_acquire(drv_limiter *l)
{
    pthread_mutex_lock(&l->mu);
    bool ok = !l->stop && room(l);
    if (ok)
        count_in(l);
    pthread_mutex_unlock(&l->mu);
    return ok;
}

/* The limit after an answer of latency s that was not throttled; under l->mu. */
static void adapt(drv_limiter *l, double s, bool limited_by_client)
{
    const double w = 2.0 / (DRV_LIMITER_SHORT_N + 1);
    l->recent = l->recent > 0 ? l->recent + w * (s - l->recent) : s;
    if (l->unloaded <= 0 || l->recent < l->unloaded)
        l->unloaded = l->recent;
    else
        l->unloaded += DRV_LIMITER_DRIFT * (l->recent - l->unloaded);
    if (limited_by_client || !(l->recent > 0))
        return;
    double g = DRV_LIMITER_TOLERANCE * l->unloaded / l->recent;
    g = g < 0.5 ? 0.5 : g > 1 ? 1 : g;
    double next = l->limit * g + sqrt(l->limit);
    l->limit = (1 - DRV_LIMITER_SMOOTHING) * l->limit + DRV_LIMITER_SMOOTHING * next;
}

void drv_limiter_begin(drv_limiter *l)
{
    pthread_mutex_lock(&l->mu);
    l->busy++;
    if (l->busy > l->peak)
        l->peak = l->busy;
    pthread_mutex_unlock(&l->mu);
}

void drv_limiter_cancel(drv_limiter *l)
{
    pthread_mutex_lock(&l->mu);
    if (l->inflight > 0)
        l->inflight--;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

void drv_limiter_release(drv_limiter *l, double latency_s, bool throttled, double now)
{
    pthread_mutex_lock(&l->mu);
    bool limited_by_client = 2 * l->busy < (int)l->limit; /* (this request counted) */
    if (l->inflight > 0)
        l->inflight--;
    if (l->busy > 0)
        l->busy--;
    double before = l->limit;
    if (throttled) {
        l->throttled++;
        if (now - l->backed_off >= l->recent) {
            l->limit *= DRV_LIMITER_BACKOFF;
            l->backed_off = now;
        }
    } else if (latency_s >= 0) {
        adapt(l, latency_s, limited_by_client);
    }
    if (l->limit < 1)
        l->limit = 1;
    if (l->limit > l->max)
        l->limit = l->max;
    if ((int)l->limit > (int)before)
        pthread_cond_broadcast(&l->cv);
    else if (room(l))
        pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

void drv_limiter_stop(drv_limiter *l)
{
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

int drv_limiter_limit(drv_limiter *l)
{
    pthread_mutex_lock(&l->mu);
    int n = (int)l->limit;
    pthread_mutex_unlock(&l->mu);
    return n;
}
