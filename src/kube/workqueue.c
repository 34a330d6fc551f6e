/*
 * workqueue.c - de-duplicating, rate-limited queue of keys (kube_workqueue.h).
 *
 * Each key known to the queue has one item (a hash table, drover/hashmap.h, maps keys to items):
 * its flags (queued, processing, dirty = added again while processing), its consecutive retry
 * count, and, when delayed, the time it becomes ready. Ready items form a FIFO; delayed ones a list
 * scanned when a key is asked for (the number of keys in back-off is small next to the number of
 * objects). Idle items with no retries are freed, so the queue's memory follows the keys in flight.
 */
#include "drover/kube_workqueue.h"
#include "drover/clock.h"
#include "drover/hashmap.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct item {
    char *key; /* owned; the table borrows it as its key */
    bool queued, processing, dirty, delayed;
    int retries;
    double ready_at;
} item;

struct drv_workqueue {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double base, max;
    drv_clock_fn clock;
    void *clock_arg;
    bool down;
    drv_hashmap *items; /* key -> item */
    item **fifo;        /* ring of ready items */
    size_t head, len, cap;
    item **late; /* delayed items */
    size_t nlate, caplate;
};

static double mono(void *arg)
{
    (void)arg;
    return drv_clock_mono();
}

drv_workqueue *drv_workqueue_new(double base_s, double max_s, drv_clock_fn clock, void *clock_arg)
{
    drv_workqueue *q = drv_calloc(1, sizeof *q);
    if (!q || !(q->items = drv_hashmap_new(&drv_hashmap_borrowed_strings))) {
        drv_free(q);
        return NULL;
    }
    q->base = base_s > 0 ? base_s : 0.005;
    q->max = max_s > 0 ? max_s : 1000;
    q->clock = clock ? clock : mono;
    q->clock_arg = clock_arg;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    return q;
}

void drv_workqueue_free(drv_workqueue *q)
{
    if (!q)
        return;
    drv_hashmap_iter hi;
    drv_hashmap_iter_init(&hi, q->items);
    for (void *v; drv_hashmap_next(&hi, NULL, &v);) {
        drv_free(((item *)v)->key);
        drv_free(v);
    }
    drv_hashmap_free(q->items);
    drv_free(q->fifo);
    drv_free(q->late);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    drv_free(q);
}

static item *find(drv_workqueue *q, const char *key)
{
    return drv_hashmap_get(q->items, key);
}

static item *get_item(drv_workqueue *q, const char *key)
{
    item *it = find(q, key);
    if (it)
        return it;
    it = drv_calloc(1, sizeof *it);
    if (!it || !(it->key = drv_strdup(key)) || drv_hashmap_put(q->items, it->key, it) != 0) {
        if (it)
            drv_free(it->key);
        drv_free(it);
        return NULL;
    }
    return it;
}

/* Frees an item that is not queued, processing, delayed, and has no retries. */
static void maybe_drop(drv_workqueue *q, item *it)
{
    if (it->queued || it->processing || it->delayed || it->dirty || it->retries)
        return;
    drv_hashmap_remove(q->items, it->key);
    drv_free(it->key);
    drv_free(it);
}

static int push_ready(drv_workqueue *q, item *it)
{
    if (q->len == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        item **f = drv_malloc(cap * sizeof *f);
        if (!f)
            return DRV_ENOMEM;
        for (size_t i = 0; i < q->len; i++)
            f[i] = q->fifo[(q->head + i) % q->cap];
        drv_free(q->fifo);
        q->fifo = f;
        q->cap = cap;
        q->head = 0;
    }
    q->fifo[(q->head + q->len) % q->cap] = it;
    q->len++;
    it->queued = true;
    pthread_cond_signal(&q->cv);
    return 0;
}

/* The add rule, lock held. */
static int add_item(drv_workqueue *q, item *it)
{
    if (it->processing) {
        it->dirty = true;
        return 0;
    }
    if (it->queued)
        return 0;
    return push_ready(q, it);
}

int drv_workqueue_add(drv_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    int rc = 0;
    if (!q->down) {
        item *it = get_item(q, key);
        rc = it ? add_item(q, it) : DRV_ENOMEM;
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

double drv_workqueue_retry(drv_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    double delay = -1;
    item *it = q->down ? NULL : get_item(q, key);
    if (it) {
        delay = q->base * pow(2, it->retries);
        if (delay > q->max)
            delay = q->max;
        it->retries++;
        if (!it->delayed) {
            if (q->nlate == q->caplate) {
                size_t cap = q->caplate ? q->caplate * 2 : 16;
                item **l = drv_realloc(q->late, cap * sizeof *l);
                if (!l) {
                    pthread_mutex_unlock(&q->mu);
                    return -1;
                }
                q->late = l;
                q->caplate = cap;
            }
            q->late[q->nlate++] = it;
            it->delayed = true;
            it->ready_at = q->clock(q->clock_arg) + delay;
        } else if (q->clock(q->clock_arg) + delay < it->ready_at) {
            it->ready_at = q->clock(q->clock_arg) + delay;
        }
        pthread_cond_broadcast(&q->cv); /* a waiting get may need to wake earlier */
    }
    pthread_mutex_unlock(&q->mu);
    return delay;
}

int drv_workqueue_retries(drv_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    item *it = find(q, key);
    int r = it ? it->retries : 0;
    pthread_mutex_unlock(&q->mu);
    return r;
}

void drv_workqueue_forget(drv_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    item *it = find(q, key);
    if (it) {
        it->retries = 0;
        maybe_drop(q, it);
    }
    pthread_mutex_unlock(&q->mu);
}

/* Moves delayed items that are due to the ready queue; returns the earliest pending time. */
static double promote(drv_workqueue *q)
{
    double now = q->clock(q->clock_arg), next = INFINITY;
    for (size_t i = 0; i < q->nlate;) {
        item *it = q->late[i];
        if (it->ready_at <= now) {
            q->late[i] = q->late[--q->nlate];
            it->delayed = false;
            add_item(q, it);
        } else {
            if (it->ready_at < next)
                next = it->ready_at;
            i++;
        }
    }
    return next;
}

bool drv_workqueue_get(drv_workqueue *q, char *buf, size_t n, bool wait)
{
    pthread_mutex_lock(&q->mu);
    for (;;) {
        double next = promote(q);
        if (q->len > 0 || q->down || !wait)
            break;
        if (isfinite(next) && q->clock == mono) {
            double at = next - drv_clock_mono();
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 + (at > 0 ? at : 0);
            ts.tv_sec = (time_t)t;
            ts.tv_nsec = (long)((t - floor(t)) * 1e9);
            pthread_cond_timedwait(&q->cv, &q->mu, &ts);
        } else {
            pthread_cond_wait(&q->cv, &q->mu);
        }
    }
    bool got = false;
    if (q->len > 0 && !q->down) {
        item *it = q->fifo[q->head];
        q->head = (q->head + 1) % q->cap;
        q->len--;
        it->queued = false;
        it->processing = true;
        snprintf(buf, n, "%s", it->key);
        got = true;
    }
    pthread_mutex_unlock(&q->mu);
    return got;
}

void drv_workqueue_done(drv_workqueue *q, const char *key)
{
    pthread_mutex_lock(&q->mu);
    item *it = find(q, key);
    if (it) {
        it->processing = false;
        if (it->dirty && !q->down) {
            it->dirty = false;
            push_ready(q, it);
        } else {
            it->dirty = false;
            maybe_drop(q, it);
        }
    }
    pthread_mutex_unlock(&q->mu);
}

size_t drv_workqueue_len(drv_workqueue *q)
{
    pthread_mutex_lock(&q->mu);
    promote(q);
    size_t n = q->len;
    pthread_mutex_unlock(&q->mu);
    return n;
}

void drv_workqueue_shutdown(drv_workqueue *q)
{
    pthread_mutex_lock(&q->mu);
    q->down = true;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}
