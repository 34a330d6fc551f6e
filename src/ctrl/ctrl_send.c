/*
 * ctrl_send.c - `drover run`'s binder threads and the bounded rings that feed them
 * (ctrl_send.h).
 *
 * The scheduler thread submits; while a cycle holds (ctrl_send_hold .. ctrl_send_flush) the
 * requests gather in the staged list and reach the rings every HELD_MAX under one lock with one
 * wake-up. In e2e_bind, 2,000 creations in one cycle took a lock and woke a binder thread each;
 * the binders still start after the first 64. A binder thread takes the oldest request (urgent
 * ring first), renders a creation's body (podbody.c: here rather than on the scheduler thread,
 * where it was a quarter of its CPU), sends it, and pushes the answer. After a 409 it reads the
 * pod, so that a conflict is resolved by what the API has, never guessed.
 *
 * The rings are bounded (ctrl_send.h says by what, and what happens at the bound): a hand-over
 * moves each staged request whose ring has room, in order, and keeps the others staged;
 * nothing is answered failed for want of room. O(staged) a hand-over, under one lock.
 *
 * Example (ring_cap 4, binder threads stopped): six deletions submitted outside a cycle go, the
 * first four into the urgent ring, the last two stay staged; once a thread runs, each request
 * it takes frees a place and its answer wakes the loop, whose next flush hands the two over.
 * Six answers come back, in order (one thread).
 */
#include "ctrl_send.h"

#include "drover/controller.h"

#include "drover/clock.h"
#include "kube/json.h"
#include "kube/kthread.h"
#include "kube/limiter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { HELD_MAX = 64 }; /* requests gathered before a batch goes (ctrl_send.held) */

/* The class a request waits in. */
static int class_of(const bind_request *r)
{
    return r->request == REQ_CREATE && r->node < 0 ? SEND_BACKGROUND : SEND_URGENT;
}

/* Frees what a request owns (a creation's paths are its render's), and counts an urgent one
 * done with (answered, dropped, or refused at submission). */
static void request_free(ctrl_send *s, bind_request *r)
{
    if (class_of(r) == SEND_URGENT)
        atomic_fetch_sub(&s->urgent, 1);
    if (!r->render) {
        drv_free(r->path);
        if (r->pod_path != r->path) /* (a deletion's path is its pod's: one string) */
            drv_free(r->pod_path);
    }
    drv_free(r->body);
    drv_free(r->render);
    drv_free(r->binding);
}

/* ---- the rings (under s->mu) ---------------------------------------------------------------- */

static bool ring_full(const bind_ring *q)
{
    return q->n == q->cap;
}

static void ring_push(bind_ring *q, const bind_request *r)
{
    q->v[(q->head + q->n) % q->cap] = *r;
    q->n++;
}

static bind_request ring_pop(bind_ring *q)
{
    bind_request r = q->v[q->head];
    q->head = (q->head + 1) % q->cap;
    q->n--;
    return r;
}

/* ---- the scheduler thread's side ------------------------------------------------------------ */

/* A request that was never sent, answered as failed: its assumption is undone. */
static void answer_unsent(ctrl_send *s, const bind_request *r, const char *what)
{
    ctrl_event e = {.kind = EV_ANSWER, .t = drv_clock_mono()};
    e.u.answer.slot = r->slot;
    e.u.answer.node = r->node;
    e.u.answer.request = r->request;
    e.u.answer.sent = e.u.answer.done = e.t;
    ctrl_events_push(s->events, &e, what);
}

/* Hands each staged request whose ring has room to the binder threads, in order, under one
 * lock with one wake-up; the others stay staged, in order. */
static void hand_over(ctrl_send *s)
{
    int32_t n = s->nstaged, kept = 0, moved = 0;
    if (n == 0)
        return;
    pthread_mutex_lock(&s->mu);
    for (int32_t i = 0; i < n; i++) {
        int k = class_of(&s->staged[i]);
        if (ring_full(&s->ring[k])) {
            s->staged[kept++] = s->staged[i];
            continue;
        }
        ring_push(&s->ring[k], &s->staged[i]);
        moved++;
    }
    if (moved > 1)
        pthread_cond_broadcast(&s->cv);
    else if (moved == 1)
        pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    s->nstaged = kept;
}

int ctrl_send_submit(ctrl_send *s, const bind_request *r)
{
    bool ok = (r->request == REQ_CREATE ? r->render != NULL
               : r->request == REQ_BIND ? r->binding != NULL
                                        : r->body || r->request == REQ_DELETE) &&
              r->path && r->pod_path &&
              drv_grow(&s->staged, sizeof *s->staged, &s->cap_staged, s->nstaged + 1) == 0;
    if (class_of(r) == SEND_URGENT)
        atomic_fetch_add(&s->urgent, 1);
    if (!ok) {
        bind_request x = *r;
        request_free(s, &x);
        return DRV_ENOMEM;
    }
    s->staged[s->nstaged++] = *r;
    if (!s->held || s->nstaged >= HELD_MAX)
        hand_over(s);
    return 0;
}

void ctrl_send_hold(ctrl_send *s)
{
    s->held = true;
}

void ctrl_send_flush(ctrl_send *s)
{
    s->held = false;
    hand_over(s);
}

int32_t ctrl_send_staged(const ctrl_send *s)
{
    return s->nstaged;
}

void ctrl_send_drop(ctrl_send *s)
{
    for (int32_t i = 0; i < s->nstaged; i++) { /* (not queued yet: the same) */
        answer_unsent(s, &s->staged[i], "a dropped request's answer");
        request_free(s, &s->staged[i]);
    }
    s->nstaged = 0;
    pthread_mutex_lock(&s->mu);
    for (int k = 0; k < NSEND_CLASSES; k++) {
        bind_ring *q = &s->ring[k];
        while (q->n > 0) {
            bind_request r = ring_pop(q);
            answer_unsent(s, &r, "a dropped request's answer");
            request_free(s, &r);
        }
        q->head = 0;
    }
    pthread_mutex_unlock(&s->mu);
}

/* ---- the binder threads --------------------------------------------------------------------- */

/* Whether pod o's controller ownerReference names uid (client-go's GetControllerOf). */
static bool controlled_by(json_t *o, const char *uid)
{
    json_t *refs = json_object_get(json_object_get(o, "metadata"), "ownerReferences");
    for (size_t i = 0; i < json_array_size(refs); i++) {
        json_t *ref = json_array_get(refs, i);
        if (json_is_true(json_object_get(ref, "controller"))) {
            const char *u = json_string_value(json_object_get(ref, "uid"));
            return uid && u && !strcmp(u, uid);
        }
    }
    return false;
}

/* After a 409: what the pod is, read rather than guessed (a conflict is never retried blindly
 * nor forgotten). Read as a list of the namespace's pods filtered by name, so that a pod that
 * does not exist is an answer (no items) rather than a 404 counted as a failed request. */
static void read_pod(binder_thread *t, const bind_request *r, ctrl_event *e)
{
    drv_diag d = {{0}};
    long status = 0;
    json_t *list = NULL, *o = NULL;
    char path[1400];
    const char *slash = strrchr(r->pod_path, '/');
    snprintf(path, sizeof path, "%.*s?fieldSelector=metadata.name%%3D%s",
             (int)(slash - r->pod_path), r->pod_path, slash + 1);
    int rc = drv_kube_request(t->client, "GET", path, NULL, NULL, &status, &list, &d);
    if (rc == 0)
        o = json_array_get(json_object_get(list, "items"), 0);
    if (rc == 0 && o && r->render && !controlled_by(o, r->render->uid)) {
        /* A creation's 409 from a pod of that name the job does not control (created by someone
         * else before it, issue 26): not the job's pod, whatever its labels say (claim in
         * ctrl_mirror.c decides the same for the watch's pods). */
        e->u.answer.read = READ_FOREIGN;
    } else if (rc == 0 && o) {
        const char *node =
            json_string_value(json_object_get(json_object_get(o, "spec"), "nodeName"));
        e->u.answer.read = READ_FOUND;
        e->u.answer.read_deleting =
            json_object_get(json_object_get(o, "metadata"), "deletionTimestamp") != NULL;
        e->u.answer.read_node = node ? ctrl_name_intern(t->s->names, node) : 0;
        if (e->u.answer.read_node < 0) /* (out of memory: as if not read) */
            e->u.answer.read = READ_NONE;
    } else if (rc == 0) {
        e->u.answer.read = READ_GONE;
    } else {
        drv_log(DRV_LOG_WARN, "%s", d.msg);
    }
    json_decref(list);
}

/* Sends one request; fills the answer's fields. (Every answer but a success is counted by the
 * budget.) A 409 and a deletion's 404 can be a race with the informers (logged at info level);
 * after a 409 the pod is read: a conflict is resolved by what the API has, never guessed. */
static void send_request(binder_thread *t, const bind_request *r, ctrl_event *e)
{
    drv_diag d = {{0}};
    long status = 0;
    e->u.answer.sent = drv_clock_mono();
    int rc;
    /* (a creation or binding whose body could not be rendered, out of memory: not sent) */
    if ((r->request == REQ_CREATE || r->request == REQ_BIND) && !r->body)
        rc = drv_fail(&d, DRV_ENOMEM, "out of memory: the body of %s not rendered", r->pod_path);
    else if (r->request == REQ_DELETE)
        rc = drv_kube_delete(t->client, r->path, -1, "Background", &status, &d);
    else if (r->request == REQ_RESIZE) /* (kubectl patch --subresource resize's patch type) */
        rc = drv_kube_request(t->client, "PATCH", r->path, "application/strategic-merge-patch+json",
                              r->body, &status, NULL, &d);
    else
        rc = drv_kube_request(t->client, "POST", r->path, NULL, r->body, &status, NULL, &d);
    e->u.answer.done = e->t = drv_clock_mono();
    e->u.answer.slot = r->slot;
    e->u.answer.node = r->node;
    e->u.answer.request = r->request;
    e->u.answer.status = status;
    e->u.answer.ok = rc == 0 || (r->request == REQ_DELETE && status == 404);
    bool expected = r->request == REQ_DELETE ? status == 404 : status == 409;
    if (rc != 0)
        drv_log(expected ? DRV_LOG_INFO : DRV_LOG_WARN, "%s", d.msg);
    if (rc != 0 && status == 409 && r->request != REQ_RESIZE)
        read_pod(t, r, e);
}

/* The ring to take from (urgent first), or NULL when both are empty; under s->mu. */
static bind_ring *next_ring(ctrl_send *s)
{
    for (int k = 0; k < NSEND_CLASSES; k++)
        if (s->ring[k].n > 0)
            return &s->ring[k];
    return NULL;
}

/* Waits for a request and takes it (false: stopping: what is still queued is dropped, as the
 * next leader redoes it). */
static bool take(ctrl_send *s, bind_request *r)
{
    bind_ring *q = NULL;
    pthread_mutex_lock(&s->mu);
    while (!s->stop && !(q = next_ring(s)))
        pthread_cond_wait(&s->cv, &s->mu);
    if (!s->stop)
        *r = ring_pop(q);
    bool stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return !stop;
}

static void *binder_main(void *arg)
{
    binder_thread *t = arg;
    ctrl_send *s = t->s;
    char name[16];
    snprintf(name, sizeof name, "drv-bind-%d", (int)(t - s->threads));
    drv_kthread_name(name);
    bind_request r;
    /* A place in the limit first, then a request: only the threads the limit lets send wait
     * for requests (a hand-over wakes those, not every thread). */
    while (drv_limiter_acquire(&s->limit)) {
        if (!take(s, &r)) {
            drv_limiter_cancel(&s->limit);
            break;
        }
        drv_limiter_begin(&s->limit);
        if (r.render) /* (here rather than on the scheduler thread; podbody.c) */
            r.body = podbody_render(s->bodies, r.render);
        else if (r.binding)
            r.body = drv_kube_binding_json(r.binding->ns, r.binding->pod, r.binding->node);
        ctrl_event e = {.kind = EV_ANSWER};
        long throttled = drv_kube_throttled(t->client);
        double t0 = drv_clock_mono();
        send_request(t, &r, &e);
        /* (a 409's read of the pod is in the latency too: it is the same server's time) */
        drv_limiter_release(&s->limit, e.u.answer.done - t0,
                            drv_kube_throttled(t->client) > throttled, e.u.answer.done);
        /* (what names it only when it cannot be pushed: no text formatted per request) */
        ctrl_events_push(s->events, &e,
                         r.request == REQ_DELETE   ? "the answer to a pod's DELETE"
                         : r.request == REQ_RESIZE ? "the answer to a pod's resize PATCH"
                         : r.request == REQ_BIND   ? "the answer to a pod's binding POST"
                                                   : "the answer to a pod's creation POST");
        request_free(s, &r);
    }
    return NULL;
}

/* ---- start and stop ------------------------------------------------------------------------- */

int ctrl_send_init(ctrl_send *s, const drv_kube_config *cfg, int nthreads, int32_t ring_cap,
                   ctrl_events *events, ctrl_names *names, drv_diag *d)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    atomic_init(&s->urgent, 0);
    /* (first: fini finalises it whatever failed below) */
    drv_limiter_init(&s->limit, DRV_LIMITER_DEF_INITIAL,
                     nthreads > 0 && nthreads <= DRV_CTRL_MAX_BINDERS ? nthreads
                                                                      : DRV_CTRL_DEF_BINDERS);
    s->events = events;
    s->names = names;
    if (nthreads > DRV_CTRL_MAX_BINDERS)
        return drv_fail(d, DRV_EINVAL, "drover run: binders: expected at most %d, found %d",
                        DRV_CTRL_MAX_BINDERS, nthreads);
    s->nthreads = nthreads > 0 ? nthreads : DRV_CTRL_DEF_BINDERS;
    if (ring_cap <= 0)
        ring_cap = CTRL_SEND_RING;
    s->threads = drv_calloc((size_t)s->nthreads, sizeof *s->threads);
    s->bodies = podbody_cache_new();
    for (int k = 0; k < NSEND_CLASSES; k++) {
        s->ring[k].v = drv_calloc((size_t)ring_cap, sizeof *s->ring[k].v);
        s->ring[k].cap = s->ring[k].v ? ring_cap : 0;
    }
    if (!s->threads || !s->bodies || !s->ring[SEND_URGENT].v || !s->ring[SEND_BACKGROUND].v)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int i = 0; i < s->nthreads; i++) {
        s->threads[i].s = s;
        int rc = drv_kube_new(&s->threads[i].client, cfg, d);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int ctrl_send_start(ctrl_send *s, drv_diag *d)
{
    for (int i = 0; i < s->nthreads; i++) {
        int err = pthread_create(&s->threads[i].thread, NULL, binder_main, &s->threads[i]);
        if (err != 0)
            return drv_fail(d, DRV_EIO, "cannot start a binder thread: %s", strerror(err));
        s->threads[i].started = true;
    }
    return 0;
}

void ctrl_send_stop(ctrl_send *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    drv_limiter_stop(&s->limit);
    for (int i = 0; i < s->nthreads; i++)
        if (s->threads[i].started) {
            pthread_join(s->threads[i].thread, NULL);
            s->threads[i].started = false;
        }
}

void ctrl_send_fini(ctrl_send *s)
{
    for (int i = 0; s->threads && i < s->nthreads; i++)
        drv_kube_free(s->threads[i].client);
    drv_free(s->threads);
    s->threads = NULL;
    podbody_cache_free(s->bodies);
    s->bodies = NULL;
    for (int32_t i = 0; i < s->nstaged; i++)
        request_free(s, &s->staged[i]);
    drv_free(s->staged);
    s->staged = NULL;
    s->nstaged = s->cap_staged = 0;
    for (int k = 0; k < NSEND_CLASSES; k++) {
        bind_ring *q = &s->ring[k];
        while (q->n > 0) {
            bind_request r = ring_pop(q);
            request_free(s, &r);
        }
        drv_free(q->v);
        q->v = NULL;
    }
    drv_limiter_fini(&s->limit);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
}

int ctrl_send_limit(ctrl_send *s, int *peak)
{
    pthread_mutex_lock(&s->limit.mu);
    int n = (int)s->limit.limit;
    if (peak)
        *peak = s->limit.peak;
    pthread_mutex_unlock(&s->limit.mu);
    return n;
}
