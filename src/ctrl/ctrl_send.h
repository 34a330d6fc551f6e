/*
 * ctrl_send.h - the binder threads of `drover run`: they send pod creations, bindings,
 * deletions and CPU resizes (several at once, each with its own API client, as kube-scheduler
 * binds asynchronously), so that no request blocks the scheduler thread, and push each answer
 * as an EV_ANSWER event.
 *
 * Owns: the two request rings (urgent, background) and the threads, under its lock; the
 * staged list (the scheduler thread's alone); the pod body cache. Calls nothing of the
 * controller but the event queue and the names (the node a pod read after a conflict is on):
 * a request comes in whole (ctrl_binder.c fills it).
 *
 * Bound: each ring holds at most ring_cap requests (CTRL_SEND_RING by default). A request that
 * finds its ring full is not lost and not refused: it stays staged, in order, and is handed
 * over by a later flush (back-pressure). The loop's send phase flushes after every batch of
 * events it applies, and a binder thread that takes a request from a ring pushes its answer
 * soon after, which wakes the loop: room in a ring is used within an iteration. Staged and
 * queued requests together number at most one per pod slot of the state: a pod has at most one
 * request out at a time (ctrl_binder.c), from its staging to its answer.
 */
#ifndef DROVER_CTRL_SEND_H
#define DROVER_CTRL_SEND_H

#include "ctrl_events.h"
#include "ctrl_names.h"
#include "podbody.h"

#include "drover/kube.h"
#include "kube/limiter.h"

#include <stdatomic.h>

/* What a binder thread renders a binding's body from (the Binding object: its pod, the node),
 * as text copied by the scheduler thread: one allocation, the strings after the struct. */
typedef struct binding_render {
    const char *ns;   /* the pod's namespace */
    const char *pod;  /* the pod's name */
    const char *node; /* the node it is bound to */
} binding_render;

/* A request for the binder threads (owned strings, but path and pod_path of a creation: they
 * are render's; a deletion's path is its pod_path, one string). A creation's and a binding's
 * body is rendered by the binder thread that sends it, from what the scheduler thread copied. */
typedef struct bind_request {
    int32_t slot, node;      /* node -1: unbound creation, or a deletion */
    int8_t request;          /* REQ_CREATE, REQ_BIND, REQ_DELETE, REQ_RESIZE */
    char *path, *body;       /* body NULL for a deletion; REQ_RESIZE: a strategic merge
                                patch; REQ_CREATE, REQ_BIND: NULL until the binder thread
                                renders it from render, binding */
    char *pod_path;          /* the pod's own path (read after a 409) */
    pod_render *render;      /* REQ_CREATE only (owned; drv_free); NULL otherwise */
    binding_render *binding; /* REQ_BIND only (owned; drv_free); NULL otherwise */
} bind_request;

/* The requests' classes: what places or removes pods goes before the creation of unbound pods
 * for waiting jobs (which only shows them Pending), lest a restarted controller's hundreds of
 * those hold its bindings back while half-bound gangs run. */
enum { SEND_URGENT, SEND_BACKGROUND, NSEND_CLASSES };

/* Requests a ring holds: more than a cycle of e2e_bind's burst (2,000 creations) sends, so the
 * bound holds a runaway back, not a restart. 48 bytes a request: 384 kB for both rings, paged in
 * only as far as used. */
enum { CTRL_SEND_RING = 4096 };

/* A bounded FIFO: v[(head + i) % cap] for i < n. */
typedef struct bind_ring {
    bind_request *v;
    int32_t head, n, cap;
} bind_ring;

typedef struct ctrl_send ctrl_send;

typedef struct binder_thread {
    ctrl_send *s;
    drv_kube *client;
    pthread_t thread;
    bool started;
} binder_thread;

struct ctrl_send {
    pthread_mutex_t mu;            /* guards ring, stop */
    pthread_cond_t cv;             /* the binder threads wait on it for requests */
    bind_ring ring[NSEND_CLASSES]; /* taken urgent first */
    bool stop;
    binder_thread *threads;
    int nthreads;          /* the most requests in flight (--binders) */
    drv_limiter limit;     /* how many of them may be in flight now (limiter.c's rule) */
    podbody_cache *bodies; /* the creations' pod shapes (its own lock) */
    /* Between ctrl_send_hold and ctrl_send_flush (a cycle's requests), requests gather here
     * and reach the rings in batches of at most HELD_MAX under one lock: one lock and one
     * wake-up per batch rather than per pod. Those the rings had no room for wait here too.
     * The scheduler thread's alone: no lock. */
    bool held;
    bind_request *staged;
    int32_t nstaged, cap_staged;
    /* Urgent requests (placements, bound creations, bindings, deletions) submitted and not yet
     * answered: a burst is on while it is above 0 (the writer holds status writes and Events
     * back meanwhile: ctrl_writer_follow). Any thread reads it. */
    atomic_int urgent;
    ctrl_events *events; /* where answers go (fixed at init) */
    ctrl_names *names;   /* ... with the node a conflict's read found, interned */
};

/* nthreads binder threads (<= 0: DRV_CTRL_DEF_BINDERS), at most limit.limit of them sending at
 * once (from 8, sized from the answers' latency: limiter.c), each with a client of cfg; rings of
 * ring_cap requests
 * (<= 0: CTRL_SEND_RING). 0, DRV_ENOMEM, or a client's error (d says). */
int ctrl_send_init(ctrl_send *s, const drv_kube_config *cfg, int nthreads, int32_t ring_cap,
                   ctrl_events *events, ctrl_names *names, drv_diag *d);
int ctrl_send_start(ctrl_send *s, drv_diag *d);
/* Stops and joins the threads; what is still queued stays (dropped by fini, or ctrl_send_drop). */
void ctrl_send_stop(ctrl_send *s);
void ctrl_send_fini(ctrl_send *s);

/* Takes r (its strings then the queue's): staged, and handed over at once unless held (then
 * every HELD_MAX). DRV_ENOMEM when it could not be staged (r's strings freed: nothing is out);
 * once staged, any failure is its answer's. */
int ctrl_send_submit(ctrl_send *s, const bind_request *r);
/* From hold to flush, requests are handed over in batches; flush hands over what the rings
 * have room for (the rest waits staged for the next flush). Scheduler thread. */
void ctrl_send_hold(ctrl_send *s);
void ctrl_send_flush(ctrl_send *s);
/* Requests waiting staged (none once the rings took them all). */
int32_t ctrl_send_staged(const ctrl_send *s);
/* A follower sends nothing: every request staged or queued is answered as failed (its answer
 * undoes its assumption). One a binder thread has taken already is sent. */
void ctrl_send_drop(ctrl_send *s);
/* The binders' current limit of requests in flight; *peak (unless NULL): the most there were. */
int ctrl_send_limit(ctrl_send *s, int *peak);

#endif
