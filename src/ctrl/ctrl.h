/*
 * ctrl.h - what the units of `drover run`'s controller share (src/ctrl/ctrl_*.c only; the
 * public API is include/drover/controller.h, the user's guide docs/running.md).
 *
 * One unit per concern, each owning its part of struct drv_ctrl and, when other threads touch
 * it, the lock that guards it:
 *
 *   ctrl_intake.c    informer threads -> the event queue (names, events: own locks)
 *   ctrl_mirror.c    events about API objects -> the drv_state (scheduler thread only)
 *   ctrl_binder.c    bindings, pod creations and deletions, sent by binder threads; their
 *                    answers come back as events (binder: own lock)
 *   ctrl_writer.c    TrainingJob status and Events, sent by the writer thread (writer: own lock)
 *   ctrl_lease.c     leader election on the lease thread; changes come back as events
 *   ctrl_progress.c  the progress collector's thread (progress: own lock)
 *   ctrl_cycle.c     one scheduling cycle and the reconciling after it (scheduler thread)
 *   ctrl_lifecycle.c a job's conditions, restarts, suspend, edits; its pods' peers (scheduler
 *                    thread; reading a status back on informer threads)
 *   ctrl_podgroup.c  other operators' gangs: PodGroups and their pods, lone pods (scheduler
 *                    thread)
 *   ctrl_shared.c    PriorityClasses and Queues, jobs held until what they name exists, Queue
 *                    status, why a node constraint or quota holds a job (scheduler thread)
 *   ctrl_resize.c    CPU limits resized in place (pods/resize, sent by the binder threads) or
 *                    at a pod's next creation (scheduler thread)
 *   ctrl_metrics.c   counters, latencies and their metrics (counters: own lock)
 *   ctrl_loop.c      create/free, and the loop: start, one iteration, stop
 *
 * Following a TrainingJob: an informer decodes it (intake), the scheduler thread applies it to
 * the state (mirror), a cycle decides and assumes its placement (cycle), the binder sends the
 * binding and its answer comes back as an event (binder), the writer writes its status.
 *
 * Only the scheduler thread touches struct ctrl_mirror, the job and pod records and the loop's
 * state; no lock is held while it reads the state or runs a cycle. No unit holds two locks at
 * once, except that pushing an event (events.mu) happens under binder.mu (dropping the queue).
 */
#ifndef DROVER_KUBE_CTRL_H
#define DROVER_KUBE_CTRL_H

#include "drover/controller.h"

#include "drover/kube_informer.h"
#include "drover/kube_types.h"
#include "drover/cycle.h"
#include "drover/kube_workqueue.h"

#include "kube/json.h"
#include "kube/kthread.h"
#include "kube/lifecycle.h"
#include "peers.h"

#include "drover/clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

/* ---- events: what the other threads hand the scheduler thread ------------------------------- */

/* A TrainingJob as an informer caches it: the compact record, plus what creating its pods
 * needs. */
typedef struct tj_record {
    drv_ktrainingjob tj;
    char uid[64];
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
void ctrl_tj_record_free(tj_record *t);

/* The informers are indexed by the kind they watch (EV_NODE .. EV_QUEUE). */
enum {
    EV_NODE,
    EV_POD,
    EV_TRAININGJOB,
    EV_PODGROUP,
    EV_PRIORITYCLASS,
    EV_QUEUE,
    EV_PROGRESS,
    EV_ANSWER,
    EV_LEASE
};
enum { NINFORMERS = 6 };

/* What a binder thread sends. */
enum { REQ_NONE, REQ_CREATE, REQ_BIND, REQ_DELETE, REQ_RESIZE };
/* What a binder thread read back after a conflict. */
enum { READ_NONE, READ_FOUND, READ_GONE };
/* A pod's deletion that fails is sent again up to this many times in all (then its room stays
 * held until the pod goes: the watch says when). */
enum { MAX_DELETE_TRIES = 6 };

typedef struct ctrl_event {
    int8_t kind, type; /* EV_*; informers: DRV_WATCH_ADDED / _MODIFIED / _DELETED */
    bool has_old;
    int32_t key;     /* interned informer key ("ns/name", or "name" for nodes); EV_PROGRESS: the
                        job's key */
    int32_t job_key; /* pods: interned "ns/<drover.dev/job>"; another operator's pod of ours:
                        "pg:ns/<pod-group>", or "pod:ns/<name>" alone; else 0 */
    double t;        /* when it happened (mono) */
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
            int8_t request;     /* REQ_* */
            bool ok;            /* done (a deletion answered 404 counts as done) */
            long status;        /* HTTP status, 0 when none came */
            int8_t read;        /* after a 409: READ_* what a GET of the pod found */
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

/* ---- the scheduler thread's records ---------------------------------------------------------- */

enum { ST_NONE, ST_PENDING, ST_RUNNING, ST_SUCCEEDED, ST_FAILED };
extern const char *const ctrl_phase_name[]; /* by ST_* */

/* What a job of the state stands for. */
enum { JOB_TRAININGJOB, JOB_PODGROUP, JOB_LONE_POD };

/* A job of the state: what the API knows of its TrainingJob and what was written back. */
typedef struct job_record {
    int32_t key, ns, name; /* interned in names */
    int8_t kind;           /* JOB_*: a PodGroup's or a lone pod's are not Drover's to create,
                              delete or restart (ctrl_podgroup.c) */
    int32_t *members;      /* JOB_PODGROUP, JOB_LONE_POD: each slot's pod, its interned name
                              (owned; NULL for a TrainingJob, whose pods Drover names) */
    char uid[64];
    char *tmpl[DRV_NROLES]; /* owned; see tj_record */
    double t_ready; /* when the event that made it placeable whole arrived (latency), or -1 */
    int8_t status;  /* ST_* decided */
    int8_t written; /* ST_* last handed to the writer: once Succeeded or Failed, never again
                       Pending or Running (ctrl_writer_status refuses it) */
    char rv[24];    /* metadata.resourceVersion of its TrainingJob as last applied: the version
                       the status asked next is computed from (its write's precondition) */
    int32_t wrote_active[DRV_NROLES];
    /* the gang being bound, for its latency: requests out, pods, when decided, and the latest
     * send and answer so far (valid while lat_armed) */
    int32_t lat_out, lat_pods;
    bool lat_armed;
    double lat_t0, lat_decide, lat_sent, lat_server;
    bool why_written;    /* the waiting Event of the current wait was written */
    bool created;        /* its wanted pods were created (unbound) */
    bool gone;           /* the TrainingJob was deleted */
    bool was_whole;      /* this controller has seen its gang whole and running */
    bool node_name;      /* its templates named a spec.nodeName, ignored (tj_record) ... */
    bool node_name_told; /* ... and an Event said so */
    int32_t port;        /* spec.progress: where its chief serves progress (0: nowhere) */
    char path[128], step[96], loss[96];
    /* its lifecycle (ctrl_lifecycle.c) */
    bool allreduce;                     /* Master + Workers: the all-reduce environment */
    int8_t restart[DRV_NROLES];         /* enum drv_restart per role */
    drv_run_policy policy;              /* spec.runPolicy */
    drv_condition conds[DRV_NCONDS];    /* status.conditions (wall-clock transition times) */
    int8_t cond;                        /* DRV_COND_* True now, -1 none yet */
    int32_t cond_changes;               /* transitions so far ... */
    int32_t wrote_changes;              /* ... and as many when its status was last asked for */
    int32_t restarts;                   /* pods restarted under restartPolicy so far */
    double start_time, completion_time; /* wall clock, -1: not yet */
    int32_t spec_workers;               /* spec.replicaSpecs.Worker.replicas last seen */
    int32_t rendered[DRV_NROLES];       /* the counts its pods' peer environment names ... */
    int32_t env_gen;                    /* ... counted up each time they change */
    bool scaling;                       /* pods re-created for a new count are not all back */
    bool peers_pending;                 /* some pod was deleted to get new peers, and not every
                                           pod is back: a restart of a failed pod is not this */
    bool adopted;       /* placed by an earlier controller: no second Scheduled Event */
    bool suspended;     /* spec.runPolicy.suspend: out of the state until resumed */
    bool service_asked; /* its headless Service was handed to the writer */
    bool ttl_done;      /* its deletion after ttlSecondsAfterFinished was handed over */
} job_record;

/* A pod slot of the state: what the API has of its pod. */
typedef struct pod_record {
    int8_t exists;             /* 0: no pod; 1: a pod; 2: a pod being deleted */
    int8_t phase;              /* enum drv_kpod_phase of the pod */
    int16_t exit_code;         /* its failed container's exit code, -1 (restartPolicy ExitCode) */
    int32_t restarts;          /* the kubelet's restarts in place (drv_kpod.restarts) */
    int32_t env_gen;           /* the job's env_gen its peer environment was rendered for */
    int32_t api_node;          /* the node the API has it on, -1 */
    int32_t api_name;          /* ... its interned name, 0 when unbound */
    uint8_t ip_family, ip[16]; /* status.podIP (0: none yet) */
    int32_t ghost;             /* being deleted where the state no longer has it: the interned
                                  node whose room it holds until gone (counted as foreign), 0 */
    drv_res ghost_req;
    int32_t want;           /* create it bound to this node once the old pod is gone, -1 */
    int8_t inflight;        /* REQ_* a binder thread is sending about it, REQ_NONE ... */
    int32_t inflight_node;  /* ... REQ_BIND, REQ_CREATE: the state node it places it on, -1 */
    bool ghost_placed;      /* its ghost holds the room of a placement still out, for a
                               deletion to follow (ctrl_binder.c: hold_placed_room) */
    bool delete_after;      /* ... and it is to be deleted once that is done */
    bool delete_assumed;    /* exists = 2 was assumed for a deletion not yet answered */
    int64_t api_cpu_limit;  /* its pod's CPU limit as the API has it (drv_kpod.cpu_limit, 0:
                               none); what the state is restored to when a resize fails */
    int64_t want_cpu_limit; /* a CPU limit decided but not resized in place: given to its pod
                               when it is next created (ctrl_resize.c); 0: none */
    int8_t delete_tries;    /* deletions of its current pod that failed (sent again while below
                               MAX_DELETE_TRIES; its ghost holds the room meanwhile) */
} pod_record;

/* ---- the units' parts of the controller ------------------------------------------------------ */

/* Names decoded on any thread, interned in one table (intake). */
typedef struct ctrl_names {
    pthread_mutex_t mu; /* guards tab */
    drv_strtab *tab;
    int32_t scheduler; /* the schedulerName served, interned */
} ctrl_names;

/* The event queue (intake): any thread pushes, the scheduler thread takes the whole batch. */
typedef struct ctrl_events {
    pthread_mutex_t mu; /* guards v, n, cap, woken */
    pthread_cond_t cv;  /* signalled on push and on ctrl_events_wake */
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

/* What an informer's callbacks get: the controller, and which kind they decode. */
typedef struct informer_arg {
    drv_ctrl *c;
    int kind;
    /* (the informer's thread alone: drv_informer_ops.hold) inside a run of watch events: its
     * changes are queued without waking the scheduler thread; held: some were, it is woken at
     * the run's end */
    bool holding, held;
} informer_arg;

/* The informers (intake): one thread and one client each, by EV_NODE .. EV_TRAININGJOB. */
typedef struct ctrl_intake {
    drv_kube *client[NINFORMERS];
    drv_informer *informer[NINFORMERS];
    informer_arg arg[NINFORMERS];
    pthread_t thread[NINFORMERS];
    bool started[NINFORMERS];
    bool queue_late; /* Queues were not served at start: their thread re-checks discovery and
                        owns informer[EV_QUEUE] (ctrl_intake_synced does not read it) */
    atomic_int stop; /* set by the loop's stop: the informers return */
} ctrl_intake;

/* What a binder thread renders a pod creation's body from: copied from the mirror by the
 * scheduler thread when it queues the creation, so that the binder reads nothing the scheduler
 * thread may change meanwhile (the mirror's records and string table grow and are freed under
 * it). One allocation (pod_render_new): the strings follow the struct, a few hundred bytes in
 * all (fixed arrays made it 1.8 kB, a page fault every other pod in a burst of creations). */
typedef struct pod_render {
    const char *tmpl;   /* the role's pod template (JSON text); NULL: {} */
    const char *sched;  /* spec.schedulerName: c->scheduler, fixed before the threads start */
    const char *ns;     /* the job's namespace */
    const char *job;    /* the TrainingJob's name */
    const char *pod;    /* the pod's name (ctrl_pod_name) */
    const char *node;   /* spec.nodeName; "": unbound */
    const char *uid;    /* the TrainingJob's uid (its pods' owner reference) */
    int role, rank;     /* the pod's role and index in it */
    drv_peer_job peers; /* the peer environment's inputs; .ns, .name are ns, job above */
    int64_t cpu_limit;  /* a wanted CPU limit (ctrl_resize.c, millicores); <= 0: none */
    char *path;         /* the namespace's pods, where the creation is POSTed; NULL in a render
                           filled by hand (tests) */
    char *pod_path;     /* path + "/" + pod (the same) */
} pod_render;

/* podbody.c: a pod creation's body from r (drv_malloc'd), or NULL when out of memory.
 * podbody_dump parses, edits and dumps r's template; podbody_render gives the same bytes from a
 * shape cached in pc (rendered once per template, role, bound and limited; thread-safe) and a
 * TensorFlow job's TF_CONFIG cluster part cached there too (written once per job), and falls
 * back to podbody_dump for what a shape cannot render. */
typedef struct podbody_cache podbody_cache;
char *podbody_dump(const pod_render *r);
char *podbody_render(podbody_cache *pc, const pod_render *r);
podbody_cache *podbody_cache_new(void); /* NULL: out of memory */
void podbody_cache_free(podbody_cache *pc);
int64_t podbody_spliced(podbody_cache *pc); /* bodies podbody_render spliced (not fallen back) */

/* A request queued for the binder threads (owned strings, but path and pod_path of a creation:
 * they are render's; a deletion's path is its pod_path, one string). */
typedef struct bind_request {
    int32_t slot, node; /* node -1: unbound creation, or a deletion */
    int8_t request;     /* REQ_CREATE, REQ_BIND, REQ_DELETE, REQ_RESIZE */
    char *path, *body;  /* body NULL for a deletion; REQ_RESIZE: a strategic merge patch;
                           REQ_CREATE: NULL until the binder thread renders it from render */
    char *pod_path;     /* the pod's own path (read after a 409) */
    pod_render *render; /* REQ_CREATE only (owned; drv_free); NULL otherwise */
} bind_request;

typedef struct binder_thread {
    drv_ctrl *c;
    drv_kube *client;
    pthread_t thread;
    bool started;
} binder_thread;

/* A FIFO of requests: [head, n) waiting. */
typedef struct bind_queue {
    bind_request *v;
    int32_t head, n, cap;
} bind_queue;

/* The queues' classes: what places or removes pods goes before the creation of unbound pods
 * for waiting jobs (which only shows them Pending), lest a restarted controller's hundreds of
 * those hold its bindings back while half-bound gangs run. */
enum { QUEUE_URGENT, QUEUE_BACKGROUND, NQUEUES };

/* The binders: the scheduler thread queues, the binder threads send. */
typedef struct ctrl_binder {
    pthread_mutex_t mu; /* guards queue, stop */
    pthread_cond_t cv;
    bind_queue queue[NQUEUES]; /* taken urgent first */
    bool stop;
    binder_thread *threads;
    int nthreads;
    podbody_cache *bodies; /* the creations' pod shapes (its own lock) */
    /* Between ctrl_binder_hold and ctrl_binder_flush (a cycle's requests), requests gather here
     * (the scheduler thread's alone: no lock) and reach the queues in batches of at most
     * HELD_MAX under one lock: one lock and one wake-up per batch rather than per pod. */
    bool held;
    bind_request *staged;
    int32_t nstaged, cap_staged;
} ctrl_binder;

/* A TrainingJob status the writer is to write. */
typedef struct status_request {
    char path[800];
    char rv[24];   /* the object's metadata.resourceVersion it was computed from: its write's
                      precondition (through the writer's own writes since: status_slot); "": none
                      (PodGroups, Queues: last write wins) */
    bool podgroup; /* a PodGroup's: phase, and its running, succeeded, failed pods in active[0],
                      succeeded[0], failed[0], the scheduled ones in restarts */
    bool queue;    /* a Queue's: its pending and admitted jobs in active[0], active[1], and
                      used */
    drv_res used;
    char phase[16], message[64];
    int32_t active[DRV_NROLES], succeeded[DRV_NROLES], failed[DRV_NROLES];
    uint8_t roles; /* a TrainingJob's: bit r set for each role it has (its replicaStatuses) ... */
    bool master;   /* ... the chief's key "Master" (all-reduce), not "Chief" */
    drv_condition conds[DRV_NCONDS];
    double start_time, completion_time; /* wall, -1: none */
    int32_t restarts;
} status_request;

/* An object to create: an Event, or (conflict_ok) one that may exist already; or (body NULL)
 * an object to delete. */
typedef struct event_request {
    char *path, *body;
    bool conflict_ok; /* not an Event: a 409 means it exists, which is what was wanted */
} event_request;

/* Versions of an object the writer's own status writes went through (ctrl_writer.c): v[0] is
 * a version a write was computed from, each next one what a write of ours made of the one
 * before, v[n-1] the newest. A status computed from any of them is sent with v[n-1] as its
 * precondition: only our own writes came since. At most STATUS_CHAIN (older ones dropped: a
 * status computed from one of those meets a 409 and waits for the next version). */
enum { STATUS_CHAIN = 8 };
typedef struct status_chain {
    char v[STATUS_CHAIN][24];
    int32_t n;
} status_chain;

/* One object's status write (writer.mu). */
typedef struct status_slot {
    status_request r; /* the latest status asked */
    uint32_t gen;     /* counts the requests asked: one answered is done only if none came since */
    bool pending;     /* r is not written yet (queued, being sent, or refused) */
    bool refused;     /* ... its precondition met a 409: the object changed under it */
    status_chain chain;
} status_slot;

/* The writer: the scheduler thread says what to write, the writer thread writes it. */
typedef struct ctrl_writer {
    drv_kube *client;
    drv_workqueue *queue; /* keys "s/<job key>" (a status) and "e" (the Events queued) */
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;   /* guards status, cap_status, events, nevents, cap_events */
    status_slot **status; /* by interned job key: the latest status to write */
    int32_t cap_status;
    event_request *events;
    int32_t nevents, cap_events;
} ctrl_writer;

/* Where a running job's chief serves progress. */
typedef struct scrape_target {
    int32_t key; /* the job's interned key */
    char url[400], step[96], loss[96];
} scrape_target;

/* The progress collector: the scheduler thread publishes targets, its thread scrapes them. */
typedef struct ctrl_progress {
    pthread_mutex_t mu; /* guards targets, n, cap */
    scrape_target *targets;
    int32_t n, cap;
    scrape_target *next; /* the next list, built by the scheduler thread (its own) */
    int32_t cap_next;
    double period_s; /* seconds between scrapes: the profile's period, within [1, 60] */
    atomic_int stop; /* set by the loop's stop: the collector returns */
    pthread_t thread;
    bool started;
} ctrl_progress;

/* Leader election: the lease thread owns everything here but stop, mu and cv. */
typedef struct ctrl_lease {
    drv_kube *client;                              /* NULL without election */
    char ns[254], name[254], identity[256];        /* fixed at creation */
    double lease_s, renew_s, retry_s;              /* the options, defaults applied */
    bool holding;                                  /* the thread's view, as last reported */
    double renewed;                                /* last successful renewal (mono) */
    char observed_holder[128], observed_renew[40]; /* the lease record last observed... */
    double observed_t;                             /* ... and when (mono) */
    pthread_mutex_t mu;                            /* guards stop (cv: woken on stop) */
    pthread_cond_t cv;
    bool stop;
    pthread_t thread;
    bool started;
} ctrl_lease;

/* Counters, latencies and their metrics. */
typedef struct ctrl_counters {
    pthread_mutex_t mu; /* guards stats, lat, nlat, cap_lat */
    drv_ctrl_stats stats;
    drv_ctrl_latency *lat;
    int32_t nlat, cap_lat;
    /* drv_ctrl_opts.metrics (scheduler thread): the metrics, and what was last exported */
    drv_metric *cycles, *binds, *creates, *deletes, *resizes, *status, *events, *samples;
    drv_metric *pending, *running, *leader, *cycle_s, *latency_s;
    drv_ctrl_stats exported;
    /* drover_api_errors_total{code,verb,resource}: one counter per row of the budget's
     * (drv_kube_budget_errors, rows in order of first occurrence), registered as rows appear;
     * and the count of each row last exported */
    drv_metric **api_errors;
    long *api_exported;
    int32_t napi, cap_api;
} ctrl_counters;

/* A drover pod bound to a node not seen yet. */
typedef struct orphan_pod {
    int32_t slot, node; /* pod slot, interned node name */
} orphan_pod;

/* The API objects as the scheduler sees them (scheduler thread only). */
typedef struct ctrl_mirror {
    drv_state st;
    job_record *jobs; /* per state job */
    int32_t cap_jobs;
    pod_record *pods; /* per pod slot */
    int32_t cap_pods;
    drv_res *allocatable; /* per state node: the API's allocatable */
    bool *usable;         /* per state node: ready and not cordoned (taints are the core's:
                             drv_state_set_node_meta) */
    int32_t *meta;        /* per state node: its labels and taints as given to the state,
                             interned in names (drv_knode.meta) */
    int32_t cap_nodes;
    /* by interned key (cap_by_key entries each) */
    int32_t *job_of, *node_of; /* state job id / node id, or -1 */
    int32_t *cons_of;          /* by interned constraint JSON: the state's constraint, or -1 */
    drv_kpod **parked;         /* drover pods of jobs not known yet */
    struct pg_table *groups;   /* other operators' gangs (ctrl_podgroup.c) */
    drv_res *foreign;          /* by node name: requests of pods Drover does not schedule
                                  (kept by name: a pod may be seen before its node) */
    int32_t cap_by_key;
    orphan_pod *orphans;
    int32_t norphans, cap_orphans;
    bool dirty; /* changed since the last cycle */
} ctrl_mirror;

/* A TrainingJob held out of the state: its queue or priority class is missing. */
typedef struct held_job {
    ctrl_event e;  /* its latest event (e.tj owned) */
    char why[400]; /* what holds it, for its condition and Event */
    char reason[48];
    bool told; /* its status and Event were written */
} held_job;

/* A PriorityClass as last seen. */
typedef struct prio_class {
    int32_t name; /* interned in names */
    int32_t value;
    bool global_default;
} prio_class;

/* What a Queue's status last said (to write it only when it changes). */
typedef struct queue_seen {
    int32_t key;  /* interned "queue:<name>" in names: the writer's status key */
    bool gone;    /* its Queue object was deleted: new jobs naming it are held */
    bool written; /* a status was written */
    int32_t pending, admitted;
    drv_res used;
} queue_seen;

/* Queues, priority classes and held jobs (ctrl_shared.c; scheduler thread only). */
typedef struct ctrl_shared {
    prio_class *pc;
    int32_t npc, cap_pc;
    held_job *held;
    int32_t nheld, cap_held;
    queue_seen *queues; /* per state queue */
    int32_t cap_queues;
    bool queues_served; /* queues.drover.dev is served: at start, or a Queue event came */
    bool changed;       /* classes, queues or held jobs changed since ctrl_shared_admit */
} ctrl_shared;

/* The loop's own state (scheduler thread). */
typedef struct ctrl_loop {
    ctrl_event *batch; /* the events being applied (swapped with the queue's) */
    int32_t cap_batch;
    bool synced;       /* every informer has listed once */
    bool leader;       /* it schedules (the lease thread said so, or no election) */
    bool warned_batch; /* the warning that batch sizes are not sent was logged */
    double last;       /* when the last cycle ran (since t0) */
    double deadline;   /* the lifecycle's next deadline (since t0; INFINITY: none) */
    double t0;         /* drv_clock_mono() when started: the snapshot's zero */
} ctrl_loop;

struct drv_ctrl {
    drv_ctrl_opts o;         /* copied; o.profile points at prof */
    drv_kube_budget *budget; /* every client's: one token bucket, every non-2xx answer counted
                                (the caller's when its config has one, else owned_budget) */
    drv_kube_budget *owned_budget;
    bool resize_served; /* the API lists pods/resize (Kubernetes >= 1.33): asked once at start */
    bool resize_told;   /* the log said how resizes are applied (once) */
    drv_profile prof;
    char scheduler[64], ns[254];
    drv_sched *sched;
    ctrl_names names;
    ctrl_events events;
    ctrl_intake intake;
    ctrl_binder binder;
    ctrl_writer writer;
    ctrl_progress progress;
    ctrl_lease lease;
    ctrl_counters counters;
    ctrl_mirror mirror;
    ctrl_shared shared;
    ctrl_loop loop;
};

/* ---- intake (ctrl_intake.c) ----------------------------------------------------------------- */
int32_t ctrl_name_intern(drv_ctrl *c, const char *s);                    /* < 0: out of memory */
int32_t ctrl_name_find(drv_ctrl *c, const char *s);                      /* 0: not interned */
const char *ctrl_name_str(drv_ctrl *c, int32_t id, char *buf, size_t n); /* copies into buf */
char *ctrl_name_dup(drv_ctrl *c, int32_t id); /* drv_malloc'd copy; NULL: out of memory */
void ctrl_events_push(drv_ctrl *c, const ctrl_event *e, const char *what); /* logs when dropped */
/* ctrl_events_push without waking the scheduler thread (a run of an informer's watch events,
 * whose end wakes it: ctrl_events_signal). */
void ctrl_events_push_quiet(drv_ctrl *c, const ctrl_event *e, const char *what);
/* Wakes the scheduler thread if events are queued. */
void ctrl_events_signal(drv_ctrl *c);
/* Waits until an event is queued or until `until` (mono), then swaps the queue with *batch. */
int32_t ctrl_events_take(drv_ctrl *c, ctrl_event **batch, int32_t *cap, double until);
/* Wakes the scheduler thread with no event: an informer has listed (the loop's step 3). A wake
 * that comes before the thread waits is kept: its next take returns at once. */
void ctrl_events_wake(drv_ctrl *c);
/* batch_wakes on (at start) or off (once synced: every push wakes the scheduler thread). */
void ctrl_events_batch_wakes(drv_ctrl *c, bool on);
int ctrl_intake_start(drv_ctrl *c, drv_diag *d);
bool ctrl_intake_synced(drv_ctrl *c);
void ctrl_intake_stop(drv_ctrl *c);

/* ---- mirror (ctrl_mirror.c) ----------------------------------------------------------------- */
bool ctrl_pod_terminal(int phase);
int ctrl_mirror_apply_node(drv_ctrl *c, const ctrl_event *e);
int ctrl_mirror_apply_pod(drv_ctrl *c, const ctrl_event *e);
int ctrl_mirror_apply_trainingjob(drv_ctrl *c, ctrl_event *e);
int ctrl_mirror_apply_progress(drv_ctrl *c, const ctrl_event *e);
void ctrl_mirror_set_ghost(drv_ctrl *c, pod_record *p, int32_t name, drv_res req);
bool ctrl_mirror_pod_read(drv_ctrl *c, int32_t slot, int32_t node_name);
int ctrl_mirror_grow_by_key(drv_ctrl *c, int32_t id);
/* The parked pod of interned key pod_key, if any, becomes slot's (state job j's). */
int ctrl_mirror_adopt(drv_ctrl *c, int32_t slot, int32_t pod_key, double now);
/* Makes the job and pod records hold the state's jobs and slots. */
int ctrl_mirror_grow_records(drv_ctrl *c);
void ctrl_mirror_fini(drv_ctrl *c);

/* The state's constraint for interned constraint JSON json (drv_kpod.cons; 0: none), added
 * once per distinct text. 0, DRV_EPARSE (d names who and path) or DRV_ENOMEM. */
int ctrl_mirror_constraint(drv_ctrl *c, int32_t json, const char *who, const char *path,
                           int32_t *id, drv_diag *d);
/* Adds a TrainingJob that was held (ctrl_shared.c) as its event would have: e->tj is taken. */
int ctrl_mirror_add_held(drv_ctrl *c, ctrl_event *e);

/* ---- queues, priority classes, held jobs (ctrl_shared.c) ------------------------------------ */
int ctrl_shared_apply_priorityclass(drv_ctrl *c, const ctrl_event *e);
int ctrl_shared_apply_queue(drv_ctrl *c, const ctrl_event *e);
/* Fills a new job's priority, queue and user from its TrainingJob; false (why and reason set)
 * when its queue or priority class is missing. */
bool ctrl_shared_resolve(drv_ctrl *c, const tj_record *t, drv_job *tmpl, char *why, size_t n,
                         char *reason, size_t nr);
/* The same for a queue and a priority class named by interned names (0: none): another
 * operator's PodGroup's (Volcano's spec.queue, spec.priorityClassName). */
bool ctrl_shared_resolve_names(drv_ctrl *c, int32_t queue, int32_t pclass, drv_job *tmpl, char *why,
                               size_t n, char *reason, size_t nr);
/* Holds e's TrainingJob (e->tj taken) until what it names appears. 0 or DRV_ENOMEM. */
int ctrl_shared_hold(drv_ctrl *c, ctrl_event *e, const char *why, const char *reason);
/* Forgets the held TrainingJob of interned key, if any (edited, deleted). */
void ctrl_shared_unhold(drv_ctrl *c, int32_t key);
/* After sync, before a cycle: held jobs whose queue and class now exist are added; the others
 * are told why once (status and Event). */
int ctrl_shared_admit(drv_ctrl *c);
/* After a cycle: each Queue's status (pending, admitted, used) when it changed. */
void ctrl_shared_queue_status(drv_ctrl *c);
/* Why the quota of job j's queue holds it back, or false (buf unchanged). */
bool ctrl_shared_quota_why(const drv_ctrl *c, int32_t j, char *buf, size_t n);
/* Why no schedulable node satisfies some role's node constraints of job j, or false. */
bool ctrl_shared_nodes_why(const drv_ctrl *c, int32_t j, char *buf, size_t n);
/* Whether node takes every wanted role of job j (nodeSelector, affinity, taints). */
bool ctrl_shared_node_fits(const drv_ctrl *c, int32_t j, int32_t node);
void ctrl_shared_fini(drv_ctrl *c);

/* ---- binder (ctrl_binder.c) ----------------------------------------------------------------- */
void ctrl_pod_name(drv_ctrl *c, int32_t slot, char *buf, size_t n);
int ctrl_binder_create(drv_ctrl *c, int32_t slot, int32_t node); /* node -1: unbound */
int ctrl_binder_place(drv_ctrl *c, int32_t slot, int32_t node);
/* From hold to flush, requests are handed to the binder threads in batches (ctrl_binder.c);
 * flush hands over the rest. (One the queues have no room for is answered as failed, its
 * assumption undone as for any failure.) Scheduler thread. */
void ctrl_binder_hold(drv_ctrl *c);
void ctrl_binder_flush(drv_ctrl *c);
int ctrl_binder_delete(drv_ctrl *c, int32_t slot);
/* PATCHes slot's pods/resize with body (owned from now) through the binder threads. */
int ctrl_binder_resize(drv_ctrl *c, int32_t slot, char *body);
int ctrl_binder_apply_answer(drv_ctrl *c, const ctrl_event *e);
void ctrl_binder_drop_queued(drv_ctrl *c); /* each as a failed answer */
int ctrl_binder_start(drv_ctrl *c, drv_diag *d);
void ctrl_binder_stop(drv_ctrl *c);
void ctrl_binder_fini(drv_ctrl *c);

/* ---- writer (ctrl_writer.c) ----------------------------------------------------------------- */
void ctrl_writer_status(drv_ctrl *c, int32_t job, const char *message);
void ctrl_writer_event(drv_ctrl *c, int32_t job, const char *type, const char *reason,
                       const char *message);
void ctrl_job_active(const drv_ctrl *c, int32_t job, int32_t active[DRV_NROLES], bool *all_running);
/* A status for the job of interned key (one that may have no job record: an invalid one). */
void ctrl_writer_status_request(drv_ctrl *c, int32_t key, const status_request *r);
/* The scheduler thread applied version rv of the TrainingJob of interned key (finished: its
 * status.phase is Succeeded or Failed). A status not yet written that was computed from an
 * older version is re-based on rv (what the controller computes never depends on status fields
 * but a finished phase), unless rv is someone else's finished one: then it is dropped, as a
 * finished status is never written over (the scheduler thread takes the job's end from it). */
void ctrl_writer_seen(drv_ctrl *c, int32_t key, const char *rv, bool finished);
void ctrl_writer_event_about(drv_ctrl *c, const char *ns, const char *name, const char *uid,
                             const char *type, const char *reason, const char *message);
/* An Event about an object of another kind ("PodGroup", "scheduling.x-k8s.io/v1alpha1"). */
void ctrl_writer_event_kind(drv_ctrl *c, const char *kind, const char *api_version, const char *ns,
                            const char *name, const char *uid, const char *type, const char *reason,
                            const char *message);
/* Creates an object (path and body copied), in order with the Events. 0 or DRV_ENOMEM. */
int ctrl_writer_post(drv_ctrl *c, const char *path, const char *body, bool conflict_ok);
/* Deletes the object at path (Background propagation; a 404 is done). 0 or DRV_ENOMEM. */
int ctrl_writer_delete(drv_ctrl *c, const char *path);
int ctrl_writer_start(drv_ctrl *c, drv_diag *d);
void ctrl_writer_stop(drv_ctrl *c);
void ctrl_writer_fini(drv_ctrl *c);

/* ---- lease (ctrl_lease.c) ------------------------------------------------------------------- */
int ctrl_lease_init(drv_ctrl *c, const drv_kube_config *cfg, drv_diag *d);
int ctrl_lease_start(drv_ctrl *c, drv_diag *d); /* nothing without election */
void ctrl_lease_apply(drv_ctrl *c, const ctrl_event *e);
void ctrl_lease_stop(drv_ctrl *c);
void ctrl_lease_fini(drv_ctrl *c);

/* ---- progress (ctrl_progress.c) ------------------------------------------------------------- */
void ctrl_progress_publish(drv_ctrl *c);
int ctrl_progress_start(drv_ctrl *c, drv_diag *d);
void ctrl_progress_stop(drv_ctrl *c);
void ctrl_progress_fini(drv_ctrl *c);

/* ---- loop (ctrl_loop.c) --------------------------------------------------------------------- */
int ctrl_apply_events(drv_ctrl *c, ctrl_event *ev, int32_t n); /* frees their tj records */

/* ---- lifecycle (ctrl_lifecycle.c) ----------------------------------------------------------- */
void ctrl_lifecycle_read_status(json_t *status, tj_record *t); /* informer threads */
void ctrl_lifecycle_init(drv_ctrl *c, int32_t j, const tj_record *t);
/* Job j's status was written finished by someone else: its phase, conditions and times are
 * taken as written (the job ends at the next cycle, its status written back the same). */
void ctrl_lifecycle_finished_by_status(drv_ctrl *c, int32_t j, const tj_record *t);
/* After a cycle: true when job j ended (Succeeded or Failed) by this call. */
bool ctrl_lifecycle_reconcile(drv_ctrl *c, int32_t j);
/* Before a cycle: ends job j (true) when its pods say it is over, and does nothing else, so
 * that a restarted controller never places the pods of a job whose chief has succeeded. */
bool ctrl_lifecycle_end_finished(drv_ctrl *c, int32_t j);
bool ctrl_lifecycle_never_fits(const drv_ctrl *c, int32_t j, char *buf, size_t n);
void ctrl_lifecycle_suspend(drv_ctrl *c, int32_t j);
void ctrl_lifecycle_resumed(drv_ctrl *c, int32_t j, const job_record *old);
int ctrl_lifecycle_edit(drv_ctrl *c, int32_t j, const tj_record *t);
void ctrl_lifecycle_invalid(drv_ctrl *c, const ctrl_event *e);
/* The peer environment's inputs of slot's pod into *pj (pj->ns, pj->name point at ns, name, n
 * bytes each); the pod is marked as having the job's environment of now (env_gen). */
void ctrl_lifecycle_pod_peers(drv_ctrl *c, int32_t slot, drv_peer_job *pj, char *ns, char *name,
                              size_t n);
void ctrl_lifecycle_service(drv_ctrl *c, int32_t j);
/* Finished jobs past their TTL are deleted; the next deadline (wall), INFINITY: none. */
double ctrl_lifecycle_expire(drv_ctrl *c);
int ctrl_lifecycle_write_status(json_t *obj, const status_request *r); /* writer thread */

/* ---- other operators' gangs (ctrl_podgroup.c) ----------------------------------------------- */
int ctrl_podgroup_apply(drv_ctrl *c, const ctrl_event *e); /* an EV_PODGROUP */
/* A pod of ours with a pod-group label (or alone) whose gang is not a job yet: remembered. */
int ctrl_podgroup_pod(drv_ctrl *c, const ctrl_event *e);
/* The slot of such a pod in its gang's job, or -1. */
int32_t ctrl_podgroup_slot(drv_ctrl *c, const ctrl_event *e);
/* Gangs complete enough (and whose minResources are free) become jobs of the state; those
 * that wait say why once. */
int ctrl_podgroup_admit(drv_ctrl *c);
/* Gangs past their scheduleTimeoutSeconds unplaced say so; the next timeout (wall), INFINITY:
 * none. */
double ctrl_podgroup_timeouts(drv_ctrl *c);
/* After a cycle, instead of the TrainingJob lifecycle: phase, PodGroup status, Events. */
void ctrl_podgroup_reconcile(drv_ctrl *c, int32_t j, bool placed, const char *why);
/* Makes the next ctrl_podgroup_admit look at every waiting gang (a Queue or class came). */
void ctrl_podgroup_touch(drv_ctrl *c);
void ctrl_podgroup_fini(drv_ctrl *c);

/* ---- CPU limits (ctrl_resize.c) ------------------------------------------------------------ */
void ctrl_resize_discover(drv_ctrl *c); /* blocking: at start, before the binder threads */
/* A RESIZE decision: sent (and assumed) when the API serves pods/resize and the pod can take
 * it now; else kept for the pod's next creation, the state keeping the API's limit. */
int ctrl_resize_decided(drv_ctrl *c, const drv_decision *x);
void ctrl_resize_answered(drv_ctrl *c, const ctrl_event *e);          /* a REQ_RESIZE's answer */
void ctrl_resize_seen(drv_ctrl *c, int32_t slot, const drv_kpod *kp); /* the pod's limit */
/* The wanted limit (millicores; <= 0: none), into a pod about to be created (its first
 * container's). Reads nothing but its arguments: called on a binder thread. */
int ctrl_resize_render(int64_t cpu_limit, json_t *pod);

/* ---- cycle (ctrl_cycle.c) ------------------------------------------------------------------- */
int ctrl_cycle_run(drv_ctrl *c);

/* ---- counters and metrics (ctrl_metrics.c) -------------------------------------------------- */
void ctrl_count(drv_ctrl *c, long *field, long by); /* field: in c->counters.stats */
void ctrl_counters_latency(drv_ctrl *c, const drv_ctrl_latency *l);
int ctrl_metrics_register(drv_ctrl *c, drv_diag *d);
void ctrl_metrics_export(drv_ctrl *c, bool gauges);
void ctrl_counters_fini(drv_ctrl *c);

#endif
