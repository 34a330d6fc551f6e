/*
 * ctrl_events.h - what the controller's other threads hand the scheduler thread, and the queue
 * they hand it through: the informers' changes (ctrl_intake.c), the binder threads' answers
 * (ctrl_send.c), progress samples (ctrl_progress.c) and the lease's word (ctrl_lease.c). Any
 * thread pushes; the scheduler thread takes the whole batch at once (ctrl_loop.c).
 *
 * Owns: the queue and its lock. Calls nothing of the controller.
 */
#ifndef DROVER_CTRL_EVENTS_H
#define DROVER_CTRL_EVENTS_H

#include "drover/kube_types.h"
#include "drover/kube_watch.h"
#include "lifecycle.h"

#include <pthread.h>
#include <time.h>

/* A TrainingJob as an informer caches it: the compact record, plus what creating its pods
 * needs. */
/* A namespace's and an object's name as text, at Kubernetes' bounds (a DNS-1123 label, at most
 * 63 bytes; a name, at most 253): a job's own records hold them, so that the scheduler thread
 * builds paths and Events without a look-up in the shared name table (ctrl_names.h). */
enum { CTRL_NS_LEN = 64, CTRL_NAME_LEN = 254 };

typedef struct tj_record {
    drv_ktrainingjob tj;
    char ns[CTRL_NS_LEN], name[CTRL_NAME_LEN]; /* tj.ns and tj.name as text */
    char uid[64];
    int32_t uid_id;         /* uid interned: the controller its pods name (drv_kpod.owner) */
    char *tmpl[DRV_NROLES]; /* each role's pod template, as compact JSON (NULL when absent) */
    bool finished;          /* status.phase is Succeeded or Failed ... */
    bool succeeded;         /* ... Succeeded (a predecessor's word on how it ended) */
    char invalid[512];      /* why its spec is invalid (names the field), "" when valid */
    /* what its status says already (a restarted controller carries it on): */
    drv_condition conds[DRV_NCONDS];
    double start_time, completion_time; /* status.startTime, completionTime (wall), -1 */
    int32_t restarts;                   /* status.restarts: pods restarted so far */
    bool node_name; /* a template named a spec.nodeName (taken out of tmpl: Drover
                       decides the node, within gang and capacity checks) */
} tj_record;
void ctrl_tj_record_free(tj_record *t); /* accepts NULL */

/* What an event is about. The informers' kinds come first: EV_NODE .. EV_QUEUE index them. */
typedef enum ctrl_event_kind {
    EV_NODE,
    EV_POD,
    EV_TRAININGJOB,
    EV_PODGROUP,
    EV_PRIORITYCLASS,
    EV_QUEUE,
    EV_PROGRESS, /* a progress sample (ctrl_progress.c) */
    EV_ANSWER,   /* a binder thread's answer (ctrl_send.c) */
    EV_LEASE     /* the lease thread's view changed (ctrl_lease.c) */
} ctrl_event_kind;
enum { NINFORMERS = EV_QUEUE + 1 };

/* What a binder thread sends. */
typedef enum ctrl_request { REQ_NONE, REQ_CREATE, REQ_BIND, REQ_DELETE, REQ_RESIZE } ctrl_request;
/* What a binder thread read back after a conflict. READ_FOREIGN: a creation's name is held by
 * a pod the job does not control (no controller ownerReference with its uid): never adopted. */
typedef enum ctrl_read { READ_NONE, READ_FOUND, READ_GONE, READ_FOREIGN } ctrl_read;

typedef struct ctrl_event {
    int8_t kind, type; /* ctrl_event_kind; informers: DRV_WATCH_ADDED / _MODIFIED / _DELETED */
    bool has_old;
    int32_t key;      /* interned informer key ("ns/name", or "name" for nodes); EV_PROGRESS: the
                         job's key */
    int32_t job_key;  /* pods: interned "ns/<drover.dev/job>"; another operator's pod of ours:
                         "pg:ns/<pod-group>", or "pod:ns/<name>" alone; else 0 */
    int32_t lone_key; /* another operator's pod of ours in a pod-group: "pod:ns/<name>", its
                         own gang of one when it came after its gang was admitted; else 0 */
    double t;         /* when it happened (mono) */
    union {
        drv_kpod pod;
        drv_knode node;
        drv_kpodgroup group;
        drv_kpriorityclass pclass;
        drv_kqueue queue;
    } old, cur; /* EV_NODE, EV_POD, EV_PODGROUP, EV_PRIORITYCLASS, EV_QUEUE */
    union {
        struct {
            double step, loss; /* loss NAN when the job does not serve it */
        } progress;            /* EV_PROGRESS */
        struct {
            int32_t slot, node; /* node -1: created unbound (or a deletion) */
            int8_t request;     /* ctrl_request */
            bool ok;            /* done (a deletion answered 404 counts as done) */
            long status;        /* HTTP status, 0 when none came */
            int8_t read;        /* after a 409: ctrl_read, what a GET of the pod found */
            int32_t read_node;  /* READ_FOUND: the node it is bound to, interned (0: none) */
            bool read_deleting; /* READ_FOUND: its deletion has begun */
            double sent, done;  /* mono */
        } answer;               /* EV_ANSWER: a binder thread's */
        struct {
            bool leader;
        } lease; /* EV_LEASE: the lease thread's view changed */
    } u;
    tj_record *tj; /* EV_TRAININGJOB, not DELETED: an owned copy */
} ctrl_event;

/* The queue: any thread pushes, the scheduler thread takes the whole batch. */
typedef struct ctrl_events {
    pthread_mutex_t mu; /* guards v, n, cap, woken, batch_wakes */
    pthread_cond_t cv;  /* on the monotonic clock; signalled on push and on ctrl_events_wake */
    ctrl_event *v;
    int32_t n, cap;
    bool woken; /* ctrl_events_wake was called since the last take: the next take waits not */
    /* Until the caches are synced a push wakes the scheduler thread only once every
     * CTRL_EVENTS_BATCH events: it cannot act on them before, and woken for each it took
     * them one by one, a context switch on both threads per object listed (~20,000 of them
     * in e2e_bind's 21,000-object sync). An informer's end of list wakes it still. */
    bool batch_wakes;
} ctrl_events;
enum { CTRL_EVENTS_BATCH = 256 };

/* 0, or DRV_ENOMEM. fini frees what is still queued; it accepts a zeroed queue. */
int ctrl_events_init(ctrl_events *q);
void ctrl_events_fini(ctrl_events *q);

/* Queues e (its tj, if any, is then the queue's) and wakes the scheduler thread; when out of
 * memory, drops it, frees its tj and logs `what`. */
void ctrl_events_push(ctrl_events *q, const ctrl_event *e, const char *what);
/* ctrl_events_push without waking the scheduler thread (a run of an informer's watch events,
 * whose end wakes it: ctrl_events_signal). */
void ctrl_events_push_quiet(ctrl_events *q, const ctrl_event *e, const char *what);
/* Wakes the scheduler thread if events are queued. */
void ctrl_events_signal(ctrl_events *q);
/* Waits until an event is queued, a wake came, or the monotonic clock reaches `until`
 * (drv_clock_mono's seconds), then swaps the queue's array with *batch (no copy: the pushers
 * wait on the lock for a swap only). Returns how many events *batch holds. */
int32_t ctrl_events_take(ctrl_events *q, ctrl_event **batch, int32_t *cap, double until);
/* `until` (drv_clock_mono's seconds) as the absolute time of a wait on a CLOCK_MONOTONIC
 * condition variable (this queue's, the lease thread's). */
struct timespec ctrl_mono_deadline(double until);
/* Wakes the scheduler thread with no event (an informer has listed; the binder threads have
 * room again). A wake that comes before it waits is kept: its next take returns at once. */
void ctrl_events_wake(ctrl_events *q);
/* batch_wakes on (at start) or off (once synced: every push wakes the scheduler thread). */
void ctrl_events_batch_wakes(ctrl_events *q, bool on);

#endif
