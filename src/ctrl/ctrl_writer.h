/*
 * ctrl_writer.h - `drover run`'s writer: status subresources (TrainingJobs, PodGroups, Queues)
 * and Events, and the objects a job needs beside its pods, written by one thread with its own
 * API client and work queue, so that no write to the API delays a scheduling decision.
 *
 * Owns: its queue, its thread and client, under its lock. Calls nothing of the controller but
 * the counters: what to write comes in whole (a status_request, an Event's text), so the writer
 * never reads the scheduler thread's records.
 */
#ifndef DROVER_CTRL_WRITER_H
#define DROVER_CTRL_WRITER_H

#include "ctrl_metrics.h"

#include "drover/kube_workqueue.h"
#include "lifecycle.h"

#include <stdatomic.h>

/* A status the writer is to write (a TrainingJob's, or a PodGroup's, or a Queue's). */
typedef struct status_request {
    char path[800];
    char rv[24];   /* the object's metadata.resourceVersion it was computed from: its write's
                      precondition (through the writer's own writes since: status_slot); "": none
                      (PodGroups, Queues: last write wins) */
    bool podgroup; /* a PodGroup's: phase, and its running, succeeded, failed pods in active[0],
                      succeeded[0], failed[0], the scheduled ones in restarts */
    bool queue;    /* a Queue's: its pending and admitted jobs in active[0], active[1], and
                      used, and usage (drv_kube_queue_set_status: -1 none, -2 removed) */
    drv_res used;
    double usage;
    char phase[16], message[64];
    int32_t active[DRV_NROLES], succeeded[DRV_NROLES], failed[DRV_NROLES];
    uint8_t roles; /* a TrainingJob's: bit r set for each role it has (its replicaStatuses) ... */
    bool master;   /* ... the chief's key "Master" (all-reduce), not "Chief" */
    drv_condition conds[DRV_NCONDS];
    double start_time, completion_time; /* wall, -1: none */
    int32_t restarts;
} status_request;

/* r zeroed, then the status of TrainingJob ns/name computed from version rv, its phase and
 * message (what a job's status, an invalid one's and a held one's start from). */
void ctrl_status_trainingjob(status_request *r, const char *ns, const char *name, const char *rv,
                             const char *phase, const char *message);

/* What an Event is about. */
typedef struct ctrl_ref {
    const char *kind, *api_version; /* "TrainingJob", "drover.dev/v1alpha1" */
    const char *ns, *name, *uid;    /* uid "": none */
} ctrl_ref;

/* A TrainingJob of namespace ns, name and uid. */
static inline ctrl_ref ctrl_ref_trainingjob(const char *ns, const char *name, const char *uid)
{
    return (ctrl_ref){.kind = "TrainingJob",
                      .api_version = "drover.dev/v1alpha1",
                      .ns = ns,
                      .name = name,
                      .uid = uid};
}

/* An Event as it was asked, kept as plain text until the writer thread sends it: its JSON is
 * rendered then (write_events), so that the scheduler thread only copies a few strings. The
 * sizes hold what Kubernetes allows (a namespace 63 characters, a name 253); the message is
 * copied whole, in the same allocation. */
typedef struct event_note {
    char kind[32], api_version[48];     /* of the object it is about */
    char ns[64], name[254], uid[64];    /* ... its namespace, name, uid ("": none) */
    char type[16], reason[64], now[40]; /* Normal or Warning; CamelCase; when (RFC 3339) */
    char message[];                     /* for a person, whole (one allocation with the rest) */
} event_note;

/* An object to create: an Event (note, rendered when sent), or (conflict_ok) one that may
 * exist already; or (body and note NULL) an object to delete. */
typedef struct event_request {
    char *path, *body;
    event_note *note; /* an Event's text: path and body are rendered from it when it is sent */
    bool conflict_ok; /* not an Event: a 409 means it exists, which is what was wanted */
    bool patch;       /* body is a merge PATCH of the object at path (an annotation) */
} event_request;

/* Versions of an object the writer's own status writes went through: v[0] is a version a
 * write was computed from, each next one what a write of ours made of the one before, v[n-1]
 * the newest. A status computed from any of them is sent with v[n-1] as its precondition: only
 * our own writes came since. At most STATUS_CHAIN (older ones dropped: a status computed from
 * one of those meets a 409 and waits for the next version). */
enum { STATUS_CHAIN = 8 };
typedef struct status_chain {
    char v[STATUS_CHAIN][24];
    int32_t n;
} status_chain;

/* One object's status write (under the writer's lock). */
typedef struct status_slot {
    status_request r; /* the latest status asked */
    uint32_t gen;     /* counts the requests asked: one answered is done only if none came since */
    bool pending;     /* r is not written yet (queued, being sent, or refused) */
    bool refused;     /* ... its precondition met a 409: the object changed under it */
    status_chain chain;
} status_slot;

/* Events an object may have of one reason at once, and the seconds one more is allowed after
 * (client-go's EventSourceObjectSpamFilter: a burst of 25, then one every 5 minutes; here per
 * object and reason, so that one reason's storm does not hide another's first Event). */
enum { EVENT_BURST = 25, EVENT_REFILL_S = 300, EVENT_BUCKETS = 1024 };

/* A token bucket of Events (objects and reasons hashed into EVENT_BUCKETS: two that share one
 * share its budget, which errs towards fewer Events, never more). */
typedef struct event_bucket {
    double t;      /* when tokens was last brought up to date (mono); 0: never used */
    double tokens; /* Events it may still write now */
} event_bucket;

typedef struct ctrl_writer {
    drv_kube *client;
    drv_workqueue *queue; /* keys "s/<key>" (a status) and "e" (the Events queued) */
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;   /* guards status, cap_status, events, nevents, cap_events */
    status_slot **status; /* by interned object key: the latest status to write */
    int32_t cap_status;
    event_request *events;
    int32_t nevents, cap_events;
    /* fixed at init */
    ctrl_counters *counters; /* what was written, what failed */
    /* Pod requests not yet answered (ctrl_send.urgent; NULL: none followed): while above 0 the
     * writer holds its writes back, up to CTRL_WRITER_HOLD_S (ctrl_writer_follow). Set before
     * start. */
    const atomic_int *burst;
    atomic_bool stopping; /* ctrl_writer_stop: a hold ends at once */
    bool no_events;       /* write no Events (drv_ctrl_opts.no_events) */
    bool following;       /* a follower of a leader election (the scheduler thread's, set by
                             the loop): its Events are dropped, as the leader writes them */
    event_bucket spam[EVENT_BUCKETS]; /* the scheduler thread's: Events allowed per object
                                         and reason (a TrainingJob edited 1,000 times a second
                                         wrote 536 ReplicasEdited Events: issue 26) */
    const char *source;               /* the Events' reporting component: the schedulerName */
} ctrl_writer;

/* The longest the writer holds its writes back behind a burst of pod requests (s). */
#define CTRL_WRITER_HOLD_S 1.0

/* Its client (from cfg) and queue. 0, DRV_ENOMEM or the client's error (d says). */
int ctrl_writer_init(ctrl_writer *w, const drv_kube_config *cfg, ctrl_counters *counters,
                     bool no_events, const char *source, drv_diag *d);
int ctrl_writer_start(ctrl_writer *w, drv_diag *d);
void ctrl_writer_stop(ctrl_writer *w);
void ctrl_writer_fini(ctrl_writer *w);

/* A gang's pods go before its status and Events: while *burst (the binders' pod requests not
 * yet answered) is above 0, the writer holds what it has to write, up to CTRL_WRITER_HOLD_S,
 * then writes everything queued by then (a flush: one PATCH per object, the latest status
 * asked, as statuses asked meanwhile replace each other), and holds again. Before start. */
void ctrl_writer_follow(ctrl_writer *w, const atomic_int *burst);
/* Asks for r to be written as the status of the object of interned key (the latest asked
 * wins). False when out of memory (logged). */
bool ctrl_writer_status(ctrl_writer *w, int32_t key, const status_request *r);
/* The scheduler thread applied version rv of the TrainingJob of interned key (finished: its
 * status.phase is Succeeded or Failed). A status not yet written that was computed from an
 * older version is re-based on rv (what the controller computes never depends on status fields
 * but a finished phase), unless rv is someone else's finished one: then it is dropped, as a
 * finished status is never written over (the scheduler thread takes the job's end from it). */
void ctrl_writer_seen(ctrl_writer *w, int32_t key, const char *rv, bool finished);
/* Queues an Event about `about` (none with no_events, nor while following, nor past its
 * object's and reason's budget: EVENT_BURST, then one per EVENT_REFILL_S). */
void ctrl_writer_event(ctrl_writer *w, const ctrl_ref *about, const char *type, const char *reason,
                       const char *message);
/* Creates an object (path and body copied), in order with the Events. 0 or DRV_ENOMEM. */
int ctrl_writer_post(ctrl_writer *w, const char *path, const char *body, bool conflict_ok);
/* Merge-PATCHes the object at path with body (both copied; a TrainingJob's annotations), in
 * order with the Events. 0 or DRV_ENOMEM. */
int ctrl_writer_patch(ctrl_writer *w, const char *path, const char *body);
/* Deletes the object at path (Background propagation; a 404 is done). 0 or DRV_ENOMEM. */
int ctrl_writer_delete(ctrl_writer *w, const char *path);

#endif
