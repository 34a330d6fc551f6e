/*
 * state.h - the cluster as the scheduler sees it: nodes, training jobs and their pods.
 *
 * One drv_state is owned by a driver (the simulator, or the Kubernetes controller's cache) and
 * changed only through the functions here, which keep the derived totals (a node's used
 * resources, a job's bound pod counts) consistent. Policies see it read-only through a snapshot.
 *
 * Objects are identified by small integer ids: a node id indexes state->nodes, a job id
 * state->jobs, a pod id state->pods. A job owns a contiguous range of pod slots, one per replica
 * it could ever have (workers up to max), laid out role by role:
 *
 *     job 7: ps=1, chief=0, worker min 2 / requested 3 / max 4
 *     pods [pod_base .. pod_base+5):  ps0  worker0 worker1 worker2 worker3
 *
 * A role's target says how many of its slots the job wants bound; which slots are bound does not
 * matter (a checkpoint-restart renumbers replicas), except that worker slot 0 plays chief when a
 * job has no chief role, and with the PS pods is a critical pod an elastic shrink never removes.
 */
#ifndef DROVER_STATE_H
#define DROVER_STATE_H

#include "drover/base.h"
#include "drover/pages.h"
#include "drover/strtab.h"

enum drv_role { DRV_ROLE_PS, DRV_ROLE_CHIEF, DRV_ROLE_WORKER, DRV_ROLE_EVALUATOR, DRV_NROLES };
const char *drv_role_name(int role);
/* Returns the role for a name ("ps", "chief", "worker", "evaluator") or -1. */
int drv_role_parse(const char *s);

/*
 * Node constraints (Kubernetes' nodeSelector, node affinity, taints and tolerations; design in
 * src/core/constraint.c). Every string is interned in drv_state.names (0 is the empty string).
 * Nodes with the same labels and taints share a node class (drv_node.node_class, 0: none at
 * all); a pod template's constraints are a drv_constraint (drv_job.cons, 0: none). Both
 * are immutable once added, so whether a class satisfies a constraint is computed once.
 */
enum drv_taint_effect {
    DRV_EFFECT_NO_SCHEDULE,
    DRV_EFFECT_PREFER_NO_SCHEDULE,
    DRV_EFFECT_NO_EXECUTE,
    DRV_EFFECT_ANY, /* tolerations only: an empty effect tolerates every effect */
};
/* Returns the effect for its Kubernetes spelling ("NoSchedule", ...) or -1. */
int drv_effect_parse(const char *s);
const char *drv_effect_name(int effect);

typedef struct drv_label {
    int32_t key, value; /* interned */
} drv_label;

typedef struct drv_taint {
    int32_t key, value; /* interned */
    int32_t effect;     /* enum drv_taint_effect, never DRV_EFFECT_ANY */
} drv_taint;

/* Labels (sorted by key, keys distinct) and taints (sorted) shared by nodes. */
typedef struct drv_nodeclass {
    drv_label *labels;
    int32_t nlabels;
    drv_taint *taints;
    int32_t ntaints;
} drv_nodeclass;

enum drv_sel_op {
    DRV_SEL_IN,
    DRV_SEL_NOT_IN,
    DRV_SEL_EXISTS,
    DRV_SEL_DOES_NOT_EXIST,
    DRV_SEL_GT,
    DRV_SEL_LT
};
/* Returns the operator for its Kubernetes spelling ("In", "NotIn", ...) or -1. */
int drv_sel_op_parse(const char *s);

enum { DRV_MAX_SEL_VALUES = 16 }; /* values of one matchExpression */

/* One matchExpression of a node selector term. */
typedef struct drv_selexpr {
    int32_t term;    /* its term: required terms 0..nrequired-1, then the preferred ones */
    int32_t key;     /* interned */
    int32_t op;      /* enum drv_sel_op */
    int32_t nvalues; /* In, NotIn: 1..DRV_MAX_SEL_VALUES; others 0 */
    int32_t values[DRV_MAX_SEL_VALUES]; /* interned */
    int64_t num;                        /* Gt, Lt: the integer compared with */
} drv_selexpr;

typedef struct drv_toleration {
    int32_t key;    /* interned; 0 (empty) with exists: every key */
    int32_t value;  /* interned; read when !exists (operator Equal) */
    bool exists;    /* operator Exists */
    int32_t effect; /* enum drv_taint_effect; DRV_EFFECT_ANY when empty */
} drv_toleration;

/* What a pod template asks of its node. A node fits when it has every selector label, matches
 * one required term (when there are any) and tolerates each NoSchedule and NoExecute taint. */
typedef struct drv_constraint {
    drv_label *selector; /* nodeSelector: every label required */
    int32_t nselector;
    drv_selexpr *expr; /* the expressions of all terms, each naming its term */
    int32_t nexpr;
    int32_t nrequired;  /* required terms, ORed (expressions within one ANDed); 0: none */
    int32_t npreferred; /* preferred terms */
    int32_t *weight;    /* per preferred term, 1..100 */
    drv_toleration *tol;
    int32_t ntol;
} drv_constraint;

/*
 * Queues (Kueue's ClusterQueue with its cohort, Volcano's Queue): the jobs naming a queue share
 * its nominal quota, may borrow beyond it up to a limit from what the other queues of its cohort
 * leave unused, and share the cluster with the other queues by weight (fair share). Queue 0 is
 * the default queue ("default": no quota, weight 1, no cohort); a job's drv_job.queue names
 * its queue by index. A state holds no queue (nqueues 0) until one is added; then queue 0 is
 * made too. Admission within quota is the cycle's (cycle.h, drv_ctx_queue_room).
 */
#define DRV_UNLIMITED INT64_MAX /* a quota or borrowing limit with no bound */

/* The largest minRuntimeSeconds a queue may have (the cluster file's and the Queue object's):
 * 30 days. */
#define DRV_MAX_MIN_RUNTIME 2592000.0

typedef struct drv_queue {
    int32_t name;   /* interned */
    int32_t cohort; /* interned cohort name; 0 (empty): in no cohort, lends and borrows nothing */
    double weight;  /* fair-share weight, > 0 */
    drv_res quota;  /* nominal quota per dimension; DRV_UNLIMITED: no bound */
    drv_res borrow; /* borrowing limit: how far beyond its quota it may go, per dimension, using
                       its cohort's unused quota; 0: none, DRV_UNLIMITED: no limit */
    drv_res used;   /* requests of the bound pods of its jobs, and what it holds (derived) */
    drv_res held;   /* of which held for pods the state no longer has bound but that still
                       run, being deleted (drv_state_hold_queue) */
    double usage;   /* its dominant share decayed over time (usage.c); with half-life 0, unused */
    double min_runtime; /* seconds a job of it runs, since it last started, before it may be a
                           preemption victim (Kueue#477's minimum run time); 0: none */
} drv_queue;

/* A user's decayed share within a queue (usage.c); tables are sorted by queue, then user. */
typedef struct drv_user_usage {
    int32_t queue, user;
    double share;
} drv_user_usage;

typedef struct drv_node {
    int32_t name;              /* interned */
    int32_t zone;              /* interned topology.kubernetes.io/zone, 0 when unset */
    int32_t rack;              /* interned rack label, 0 when unset */
    bool schedulable;          /* false for cordoned nodes */
    drv_res alloc;             /* allocatable */
    drv_res used;              /* sum of requests of pods bound here (derived) */
    int64_t cpu_limit;         /* sum of CPU limits of pods bound here (derived) */
    int32_t npods;             /* pods bound here (derived) */
    int32_t nrole[DRV_NROLES]; /* of which per role (derived) */
    int32_t node_class;        /* its labels and taints: drv_state.classes, 0 for none */
} drv_node;

typedef struct drv_rolespec {
    int32_t replicas;  /* requested count */
    int32_t min, max;  /* elastic bounds; min = max = replicas for fixed roles */
    drv_res req;       /* per-pod resource request */
    int64_t cpu_limit; /* per-pod CPU limit in millicores (>= req.cpu) */
} drv_rolespec;

/*
 * Topology-bound gangs (issue 29; Kueue's topology-aware scheduling). A state's topology is an
 * ordered list of node label keys, widest first (zone > block > rack > hostname); a node's
 * domain at a level is the value of that label on it. A job's gang may be bound to a level:
 *  - required: all its pods in one domain of the level, or it waits;
 *  - preferred: in one domain of the level if one holds it, else of the next wider level, and
 *    so on up; when even the widest holds none, anywhere (as unconstrained);
 *  - none (unconstrained): anywhere, as without topology.
 * The cycle chooses the domain (cycle_place.c): best fit, the one with the least free room
 * that holds the whole gang. The level kubernetes.io/hostname is the node itself: each node is
 * a domain of its own whether or not it carries the label (as Kueue's TAS: the label, else the
 * node's name; both name one node).
 */
enum drv_topo_mode { DRV_TOPO_NONE, DRV_TOPO_REQUIRED, DRV_TOPO_PREFERRED };
enum { DRV_MAX_TOPO = 8 };                         /* topology levels at most */
#define DRV_TOPO_HOSTNAME "kubernetes.io/hostname" /* the level that is each node alone */

enum drv_job_phase {
    DRV_JOB_FUTURE,     /* not submitted yet (simulator only) */
    DRV_JOB_PENDING,    /* submitted; its wanted pods are not all bound */
    DRV_JOB_STARTING,   /* all wanted pods bound; containers starting */
    DRV_JOB_RUNNING,    /* making progress */
    DRV_JOB_RESTARTING, /* checkpoint-restart after a scale or migration */
    DRV_JOB_DONE,
};
const char *drv_job_phase_name(int phase);

/* One observation of a job's training progress. */
typedef struct drv_sample {
    double t;     /* seconds */
    double steps; /* worker-steps done */
    double loss;  /* observed loss, with noise */
} drv_sample;

enum { DRV_HIST = 32 }; /* progress samples kept per live job (a ring) */

typedef struct drv_job {
    int32_t name, user;    /* interned */
    int32_t queue;         /* its queue: an index of drv_state.queues, 0 the default queue */
    int32_t priority;      /* priority class value: larger is more important */
    int32_t user_priority; /* the submitting user's priority */
    int32_t model;         /* model family index in the driver's catalogue, -1 unknown */
    double submit;         /* submission time, seconds */
    drv_rolespec role[DRV_NROLES];
    int32_t cons[DRV_NROLES];   /* per role, its node constraints: drv_state.cons, 0 for none */
    int32_t target[DRV_NROLES]; /* replicas currently wanted per role */
    int32_t bound[DRV_NROLES];  /* pods bound per role (derived) */
    int32_t pod_base;           /* first pod slot */
    int32_t pod_count;          /* number of pod slots */
    int32_t phase;              /* enum drv_job_phase */
    double start;               /* first time the job ran, or -1 */
    double run_start;           /* the time it last started running (a restart too), or -1:
                                   set by the driver, read for a queue's min_runtime */
    double end;                 /* completion time, or -1 */
    double steps;               /* worker-steps done at the last progress update */
    double steps_total;         /* worker-steps at which the job completes */
    double loss;                /* loss at the last progress update */
    double attained;            /* resource-seconds of service received (GPU or CPU-seconds);
                                   like steps, current in a cycle once read through
                                   drv_ctx_job_now or drv_ctx_progress */
    double min_runtime;         /* seconds it runs, since run_start, before it may be a
                                   preemption victim: its priority class's (`drover run`'s
                                   drover.dev/min-runtime-seconds), its queue's when longer
                                   (victims.c); 0: none */
    int8_t topo_mode;           /* enum drv_topo_mode: how its gang binds to a topology level */
    int8_t topo_level;          /* with a mode: the level (drv_state.topo_key index) */
    int32_t restarts;           /* checkpoint-restarts so far (scale, migration) */
    int32_t migrations;         /* pods migrated */
    int32_t preemptions;        /* times evicted by preemption */
    double loss0;               /* observed loss of the job's first progress sample (what
                                   growth is normalised by), 0 before it */
    int32_t nhist;              /* samples in hist (<= DRV_HIST) */
    int32_t hist_head;          /* index of the oldest sample */
    drv_sample *hist;           /* ring of DRV_HIST recent samples, allocated at the first
                                   sample and freed when the job is done: a finished job of a
                                   long trace costs no history */
} drv_job;

typedef struct drv_pod {
    int32_t job;
    int16_t role;      /* enum drv_role */
    int16_t index;     /* replica index within its role */
    int32_t node;      /* bound node, or -1 */
    int64_t cpu_limit; /* current CPU limit in millicores (can be resized) */
} drv_pod;

/* A set of job ids: a bitmap, and a summary with a bit per non-empty word of it, so iterating
 * costs O(members + jobs/4096) however many jobs a trace has had. */
typedef struct drv_jobset {
    uint64_t *bits, *sum;
    int32_t cap_bits, cap_sum; /* words allocated */
} drv_jobset;

/*
 * The first member of js with id >= from among jobs 0..njobs-1 that is not in `except` (a
 * bitmap of nexcept words, nothing excepted past them; NULL and 0 for none), or -1: the word of
 * `from`, then the next non-empty words found through the summary, each less `except` at once.
 * The one walk over a job set (the state's next-member look-ups; a plugin's walk that passes
 * jobs it knows to skip without reading them). O(words visited + summary words skipped).
 */
static inline int32_t drv_jobset_next(const drv_jobset *js, int32_t njobs, int32_t from,
                                      const uint64_t *except, int32_t nexcept)
{
    if (from < 0)
        from = 0;
    int32_t nw = (njobs + 63) / 64, w = from / 64;
    if (w >= nw)
        return -1;
    uint64_t b = js->bits[w] & (~(uint64_t)0 << (from % 64));
    for (;;) {
        if (w < nexcept)
            b &= ~except[w];
        if (b)
            return w * 64 + __builtin_ctzll(b);
        if (++w >= nw)
            return -1;
        int32_t sw = w / 64;
        uint64_t sb = js->sum[sw] & (~(uint64_t)0 << (w % 64));
        while (!sb) {
            if (++sw >= (nw + 63) / 64)
                return -1;
            sb = js->sum[sw];
        }
        w = sw * 64 + __builtin_ctzll(sb);
        if (w >= nw)
            return -1;
        b = js->bits[w];
    }
}

typedef struct drv_state {
    drv_strtab *names;
    drv_node *nodes;
    int32_t nnodes, cap_nodes;
    drv_job *jobs;
    int32_t njobs, cap_jobs;
    drv_pod *pods;
    int32_t npods, cap_pods;
    drv_jobset live;         /* jobs submitted and not done (derived) */
    int32_t nlive;           /* their number */
    drv_jobset pending;      /* jobs in phase DRV_JOB_PENDING (derived) */
    int32_t npending;        /* their number */
    drv_jobset queued;       /* of those, the ones that still want pods: drv_job_needs_pods, what a
                                cycle queues (derived) */
    int32_t nqueued;         /* their number */
    drv_jobset queued_bound; /* of those, the ones with some pod bound (derived) */
    int32_t nqueued_bound;   /* their number */
    /* Jobs taken out of the queued set so far (a job that leaves and comes back counts): a
     * reader that saw the same value knows every job it saw queued still is, without a look at
     * any of them. The cycle's queue keeps its last records this way (docs/cycle.md, Cost). */
    uint64_t queue_leaves;
    drv_jobset starting;    /* jobs in phase DRV_JOB_STARTING or DRV_JOB_RESTARTING (derived) */
    int32_t nstarting;      /* their number */
    drv_jobset released;    /* jobs given up with drv_state_release_job: ids never reused */
    int32_t nreleased;      /* their number */
    bool reserved;          /* jobs and pods live in job_pages and pod_pages (drv_state_reserve) */
    drv_jobset filled;      /* when reserved: the placeholders filled in (drv_state_fill_job) */
    drv_pages job_pages;    /* when reserved: the memory of jobs, returned as they are released */
    drv_pages pod_pages;    /* when reserved: the memory of pods, likewise */
    drv_nodeclass *classes; /* node classes; [0] has no label and no taint */
    int32_t nclasses, cap_classes; /* nclasses 0 until a node gets labels or taints */
    drv_constraint *cons;          /* pod constraints; [0] is empty */
    int32_t ncons, cap_cons;       /* ncons 0 until one is added */
    bool has_prefer_taint;         /* some class has a PreferNoSchedule taint */
    bool has_job_min_runtime;      /* some job was added with its own min_runtime > 0 */
    drv_queue *queues;             /* queues; [0] is the default queue */
    int32_t nqueues, cap_queues;   /* nqueues 0 until one is added */
    /* Fair share over time (usage.h): the half-life of the decayed usage (seconds; 0: "now
     * only", the fields below unused), the time it was last brought to (< 0: never), and the
     * users' decayed shares within their queues. */
    double half_life;
    double usage_at;
    drv_user_usage *user_usage;
    int32_t nuser_usage, cap_user_usage;
    /* What changed on the nodes, for readers that keep per-node copies between looks (the
     * cycle's free room, role counts and node index): every change to a node (a pod bound or
     * unbound, its CPU limits, allocatable, schedulable flag, labels or taints; its addition)
     * stamps it with ++node_clock and moves it to the tail of a list kept in stamp order. A
     * reader that saw node_clock == c finds every node changed since at the tail of the list
     * (DRV_FOR_NODES_CHANGED): O(changed nodes), for any number of readers, with no
     * registration and O(nodes) memory. */
    uint64_t node_clock;            /* stamps handed out so far */
    uint64_t *node_stamp;           /* per node: node_clock at its last change */
    int32_t *node_prev, *node_next; /* the list, oldest change first; -1 ends it */
    int32_t node_head, node_tail;   /* its ends, -1 while there is no node */
    int32_t cap_node_log;           /* entries allocated in the three arrays above */
    uint64_t node_epoch; /* bumps when a node is added or its allocatable, schedulable flag or
                            class changes: what grouping nodes by type reads */
    struct drv_hashmap *node_by_name; /* the interned names of the nodes (drv_hashmap_ints
                                         keys), so a duplicate is found without a scan */
    struct drv_hashmap *class_index;  /* classes >= 1 by their labels and taints (constraint.c;
                                         NULL until the first), found without a scan */
    int32_t gpu_type_key;             /* interned node label key whose value is a node's GPU type
                                         (drv_state_set_gpu_type_label); 0: GPU types are not read */
    int32_t topo_key[DRV_MAX_TOPO];   /* topology levels, widest first: interned node label
                                         keys (drv_state_set_topology) */
    int32_t ntopo;                    /* levels; 0: no topology */
    int32_t topo_host; /* 1 + the level whose key is kubernetes.io/hostname, 0: none. At that
                          level each node is its own domain, named by the node (Kueue's TAS);
                          its label is not read: Kubernetes' node classes leave it out */
} drv_state;

int drv_state_init(drv_state *st);
void drv_state_fini(drv_state *st);

/* Adds a node; *id receives its id. Fails with DRV_EEXIST if the name is taken. */
int drv_state_add_node(drv_state *st, const char *name, drv_res alloc, const char *zone,
                       const char *rack, int32_t *id);
/*
 * Adds a job from a filled-in template (name, roles, submit, ...; derived fields are ignored;
 * DRV_EINVAL when a role names a constraint the state does not have, or the job a queue: queue
 * 0 is always valid)
 * and creates its pod slots. Targets start at the requested replicas. *id receives its id.
 */
int drv_state_add_job(drv_state *st, const drv_job *tmpl, int32_t *id);

/*
 * For a driver that knows its whole workload (the simulator): makes job ids 0..njobs-1 and pod
 * slots 0..npods-1 exist at once as blank placeholders (phase DRV_JOB_FUTURE, no pod slots, in
 * no job set), in memory that is touched only when a job is filled in (drv_state_fill_job, at
 * its submission) and returned when it is released (drv_state_release_job; pages.h): memory
 * follows the jobs submitted and not finished, while ids stay those of the workload.
 * drv_state_add_job then fails. On a state with no jobs yet; 0, DRV_EINVAL or DRV_ENOMEM.
 */
int drv_state_reserve(drv_state *st, int32_t njobs, int32_t npods);
/* Fills reserved job id from a template as drv_state_add_job does, its pod slots starting at
 * pod_base (the caller lays the slots out; they must be unused). 0, or DRV_EINVAL when the
 * state is not reserved, the id is not a blank placeholder or the slots do not fit. */
int drv_state_fill_job(drv_state *st, int32_t id, int32_t pod_base, const drv_job *tmpl);
/*
 * Gives up a finished job (phase DRV_JOB_DONE, no pod bound) for good: after this neither the
 * job nor its pod slots may be read or written (in a reserved state their memory is returned:
 * a stale read gives zeros, or faults when the pages are guarded, pages.h); drv_state_check and
 * drv_state_fini skip it. Job and pod ids are never reused, so an id held across time names one job
 * or none. Drivers that look at finished jobs later (the Kubernetes controller) simply never call
 * it. Returns 0, or DRV_EINVAL when the job is not done, has a pod bound or is released already.
 */
int drv_state_release_job(drv_state *st, int32_t job);
/* Whether a reserved job id was filled in (drv_state_fill_job). */
bool drv_state_job_filled(const drv_state *st, int32_t job);
/* Whether a job was released (drv_state_release_job). */
bool drv_state_job_released(const drv_state *st, int32_t job);

/* Changes what a node offers: its allocatable and whether pods may go there (a controller
 * following the API's nodes). Pods bound there stay. */
void drv_state_set_node(drv_state *st, int32_t node, drv_res alloc, bool schedulable);

/*
 * Records that a node changed (the functions here call it; code of the core that writes a
 * drv_node field itself must too): stamps it with ++node_clock, moves it to the tail of the
 * change list, and with type_changed (its allocatable, schedulable flag or class) bumps
 * node_epoch. O(1).
 */
void drv_state_node_changed(drv_state *st, int32_t node, bool type_changed);
/* for each node n changed after the reader saw node_clock == since, newest change first. */
#define DRV_FOR_NODES_CHANGED(st, since, n)                                                        \
    for (int32_t n = (st)->node_tail; n >= 0 && (st)->node_stamp[n] > (since);                     \
         n = (st)->node_prev[n])

/*
 * Gives a node its labels and taints (the Kubernetes controller's mirror calls this for each
 * Node it sees; the simulator for its cluster file's nodes). Strings interned in st->names;
 * labels need distinct keys. The arrays are copied (borrowed for the call). Nodes with equal
 * sets share a class, found by a hash of the sets: O(labels + taints). 0, DRV_EINVAL or
 * DRV_ENOMEM.
 */
/*
 * GPU types (issue 27). A node's GPU type is the value of one of its labels (Kubernetes:
 * `nvidia.com/gpu.product`, DRV_GPU_TYPE_LABEL, as GPU Feature Discovery sets it; the
 * simulator's cluster files set it with `gpuType:`). Once a state names that label key, the
 * cycle keeps every GPU pod of a job on nodes of one type at a time (cycle_place.c); nodes
 * without the label form a type of their own. A state whose nodes carry at most one type
 * decides exactly as without types. 0 or DRV_ENOMEM.
 */
#define DRV_GPU_TYPE_LABEL "nvidia.com/gpu.product"
int drv_state_set_gpu_type_label(drv_state *st, const char *key);
/* The GPU type of a node: the interned value of its type label, 0 when it has none or the
 * state reads no types. O(labels of its class). */
int32_t drv_node_gpu_type(const drv_state *st, int32_t node);
/* The GPU type constraint k (drv_state.cons) requires through its nodeSelector or a required
 * `In` of one value on the type label (interned), or 0 when it requires none. O(expressions). */
int32_t drv_constraint_gpu_type(const drv_state *st, int32_t k);
/* Whether some node carries GPU type `type` (interned). O(nodes). */
bool drv_state_has_gpu_type(const drv_state *st, int32_t type);

/* Sets the topology levels: n label keys, widest first. DRV_EINVAL (and *why says which
 * rule) for more than DRV_MAX_TOPO, an empty key or a key given twice; DRV_ENOMEM. The state is
 * untouched on failure. Set before jobs name levels (a job's level is an index). */
int drv_state_set_topology(drv_state *st, const char *const *keys, int32_t n, const char **why);
/* Splits a comma-separated list of level keys (drover run --topology) into keys (at most
 * DRV_MAX_TOPO, pointing into buf, a copy of s), checked as drv_state_set_topology checks
 * them. Returns how many, or -1 with *why set. */
int32_t drv_topology_split(const char *s, char *buf, size_t cap, const char **keys,
                           const char **why);
/* The level whose key is key, or -1. O(levels). */
int32_t drv_state_topo_level(const drv_state *st, const char *key);
/* The domain of node at level: the interned value of the level's label on it, 0 when it has
 * none. O(labels of its class). */
int32_t drv_node_domain(const drv_state *st, int32_t node, int32_t level);
/* Why a job bound to a level may wait, in words, into buf: "needs 16 GPUs in one rack
 * (cloud.provider.com/topology-rack); the largest free rack has 12" (GPUs when it asks for
 * any, else CPUs; the level named by its key's last word; free: of the schedulable nodes in the
 * state). False (buf empty) for a job bound to no level. O(nodes · log nodes). */
bool drv_topo_explain(const drv_state *st, int32_t job, char *buf, size_t n);
int drv_state_set_node_meta(drv_state *st, int32_t node, const drv_label *labels, int32_t nlabels,
                            const drv_taint *taints, int32_t ntaints);
/*
 * A node's labels and taints as one text (the "node meta text"; a driver's decoder writes it,
 * drover run's: drv_kube_node_meta): one line each, fields split by tabs, "l\tkey\tvalue\n"
 * for a label and "t\tkey\tvalue\teffect\n" for a taint (effect as drv_effect_parse reads
 * it; value may be empty). Read back here as labels and taints interned in names (arrays
 * drv_malloc'd, the caller frees them, also on failure); a line of another shape is skipped.
 * 0 or DRV_ENOMEM. O(text).
 */
int drv_node_meta_parse(const char *text, drv_strtab *names, drv_label **labels, int32_t *nlabels,
                        drv_taint **taints, int32_t *ntaints);
/* ---- records applied whole (state_apply.c) ------------------------------------------------- */

/*
 * What an API says of one node, for drv_state_apply_node: a driver's record of a Node (the
 * Kubernetes controller's mirror fills one from each Node event).
 */
typedef struct drv_node_desc {
    const drv_strtab *names; /* table of name, zone and rack (borrowed for the call; the caller
                                keeps it from changing); NULL: st->names */
    int32_t name;            /* the node's name in names (> 0); read when it is added */
    int32_t zone, rack;      /* its zone and rack in names, 0: none; read when it is added only
                                (they do not move once seen) */
    drv_res allocatable;     /* what the node allocates */
    drv_res held;            /* what pods the state does not schedule hold there (other
                                schedulers', DaemonSets', pods being deleted): the state's node
                                offers allocatable minus held */
    bool usable;             /* whether pods may go there (ready, not cordoned) */
    bool set_meta;           /* its labels and taints are replaced by meta's; false: kept */
    int32_t meta;            /* its labels and taints as the node meta text (above) in names,
                                0: none; read when set_meta */
    const int32_t *bind;     /* pod slots the API has bound to this node: placed there (pods
                                seen before their node); nbind of them (borrowed) */
    int32_t nbind;           /* pods in bind */
} drv_node_desc;

/*
 * Applies node record d in one step: when *id < 0 the node is added (its names interned into
 * st->names; *id receives its id), the pods of d->bind placed there, its labels and taints read
 * from d->meta and set (d->set_meta), and its room set to allocatable minus held, usable or
 * not. Labels or taints refused (a key given twice) are logged as a warning and kept as they
 * were, the rest applied. *topo_gap (unless NULL) tells whether the node, as applied, lacks
 * the label of one of the state's topology levels (drv_state_set_topology; false without
 * levels). 0; DRV_EEXIST, DRV_EINVAL (no name) or DRV_ENOMEM when adding failed (nothing
 * changed), or DRV_ENOMEM reading or setting the labels. O(bind + meta + levels · labels).
 */
int drv_state_apply_node(drv_state *st, const drv_node_desc *d, int32_t *id, bool *topo_gap);
/* Places pod slot pod on node (-1: unbinds it); nothing when it is there already. O(1). */
void drv_state_place_pod(drv_state *st, int32_t pod, int32_t node);

/* A request that a pod the state does not schedule (another scheduler's, a DaemonSet's, one
 * being deleted: its "ghost") puts on, or takes off, the load held at one node (drv_pod_desc). */
typedef struct drv_pod_load {
    drv_res *held;       /* the driver's account of the load held at that node's name (changed
                            here: plus or minus req), kept for nodes not seen yet too */
    drv_res req;         /* the pod's request */
    int8_t sign;         /* +1: added, -1: taken off */
    int32_t node;        /* the state's node of that name, -1: not seen yet (only *held) */
    drv_res allocatable; /* that node's allocatable: its room is set to this minus *held */
    bool usable;         /* ... and whether pods may go there */
} drv_pod_load;

/* A request held (+1) or released (-1) in a queue's use meanwhile: a ghost's (drv_pod_desc). */
typedef struct drv_queue_hold {
    int32_t queue; /* the state's queue */
    drv_res req;   /* the request */
    int8_t sign;   /* +1 held, -1 released */
} drv_queue_hold;

/* Loads and holds one pod record may change at once: another scheduler's pod moved (its old
 * and new node), or a pod of a slot taken from the parked ones (1) whose ghost moves (2). */
enum { DRV_POD_LOADS = 4, DRV_POD_HOLDS = 2 };

/*
 * What one pod, as the API has it, changes in the state, for drv_state_apply_pod: a driver's
 * record, filled while it decides what the pod is (the Kubernetes controller's mirror fills one
 * from each pod event). Example: another scheduler's pod asking 1 CPU moves from n1 to n2: two
 * loads, -1 CPU at n1 and +1 at n2, and no slot.
 */
typedef struct drv_pod_desc {
    int32_t pod;                        /* the slot it is about, -1: none (a pod the state
                                           does not schedule) */
    bool place;                         /* place pod at node (drv_state_place_pod) */
    int32_t node;                       /* ... where the API has it, -1: unbound */
    bool set_cpu_limit;                 /* give pod the CPU limit below */
    int64_t cpu_limit;                  /* millicores (drv_state_set_cpu_limit) */
    drv_pod_load load[DRV_POD_LOADS];   /* loads moved, in order; nloads of them */
    int32_t nloads;                     /* loads given */
    drv_queue_hold hold[DRV_POD_HOLDS]; /* queue holds, in order; nholds of them */
    int32_t nholds;                     /* holds given */
} drv_pod_desc;

/*
 * Applies pod record d in one step: each load moved (its *held changed, the node's room set to
 * allocatable minus *held), each queue hold, then the pod's CPU limit and its placement. The
 * order of the loads is kept, so one cell changed twice ends right. O(loads + holds).
 */
void drv_state_apply_pod(drv_state *st, const drv_pod_desc *d);
/* Ends job: each of its pods unbound, its phase DRV_JOB_DONE. O(its pod slots). */
void drv_state_end_job(drv_state *st, int32_t job);

/*
 * Adds a pod template's constraints, deep-copied; *id receives the id to put in
 * drv_job.cons (0 when c asks nothing). Strings are ids of `from` (re-interned into
 * st->names), or of st->names when from is NULL. 0, DRV_EINVAL (a bad operator, value count,
 * weight or effect) or DRV_ENOMEM.
 */
int drv_state_add_constraint(drv_state *st, const drv_constraint *c, const drv_strtab *from,
                             int32_t *id);
/*
 * Whether nodes of class cls satisfy constraint cons (nodeSelector, required affinity, taints);
 * when they do, *score (may be NULL) receives the constraint score, 0..300: twice the sum of
 * matching preferred terms' weights (capped at 100, kube-scheduler's NodeAffinity weight 2),
 * plus 100 when no untolerated PreferNoSchedule taint is on the class and some class of the
 * state has one (its penalty: a small one, a third of the affinity's). O(expressions · labels).
 */
bool drv_constraint_fits(const drv_state *st, int32_t cons, int32_t cls, int32_t *score);
/* Frees what a caller-built drv_constraint or drv_nodeclass holds (drv_state_add_constraint
 * copies, so parsers free theirs with these). */
void drv_constraint_fini(drv_constraint *c);
void drv_nodeclass_fini(drv_nodeclass *c);

/*
 * Adds a queue (name, cohort, weight, quota, borrow of q; used is ignored); *id receives its id.
 * Strings are ids of st->names. The first call also makes queue 0, the default queue, unless q
 * is named "default" (then it is queue 0). DRV_EEXIST when the name is taken, DRV_EINVAL for a
 * weight <= 0 (or NaN) or a negative quota or borrowing limit, DRV_ENOMEM.
 */
int drv_state_add_queue(drv_state *st, const drv_queue *q, int32_t *id);
/* Changes a queue's cohort, weight, quota and borrowing limit (a controller following Queue
 * objects); its used resources stay. 0 or DRV_EINVAL as drv_state_add_queue. */
int drv_state_set_queue(drv_state *st, int32_t id, const drv_queue *q);
/* Queue q holds r more (sign > 0) or less (sign < 0) than its bound pods: a controller's pod
 * of a job of q being deleted, which the state no longer has bound, runs until the API shows
 * it gone (its grace period), and its request still counts against q's quota meanwhile. Both
 * used and held change. O(1). */
void drv_state_hold_queue(drv_state *st, int32_t q, drv_res r, int sign);
/* The id of the queue with interned name `name`, or -1. O(queues). */
int32_t drv_state_find_queue(const drv_state *st, int32_t name);

/* Sets a job's phase (enum drv_job_phase), keeping the set of live jobs current. Drivers
 * change phases only through this. Entering DRV_JOB_DONE frees the job's progress history. */
void drv_state_set_phase(drv_state *st, int32_t job, int phase);
/* The first live job with id >= from, or -1: iterates live jobs in id order, O(jobs/64). */
int32_t drv_state_next_live(const drv_state *st, int32_t from);
/* for each live job id j (submitted, not done), in id order — cost grows with the live jobs,
 * not with every job a trace ever submitted. */
#define DRV_FOR_LIVE(st, j)                                                                        \
    for (int32_t j = drv_state_next_live((st), 0); j >= 0; j = drv_state_next_live((st), j + 1))
/* The first job in phase DRV_JOB_PENDING with id >= from, or -1; and a loop over them. */
int32_t drv_state_next_pending(const drv_state *st, int32_t from);
#define DRV_FOR_PENDING(st, j)                                                                     \
    for (int32_t j = drv_state_next_pending((st), 0); j >= 0;                                      \
         j = drv_state_next_pending((st), j + 1))

/* The first queued job (phase DRV_JOB_PENDING and drv_job_needs_pods) with id >= from, or -1;
 * whether one job is queued, O(1) - no read of the job itself. */
int32_t drv_state_next_queued(const drv_state *st, int32_t from);
/* The first job starting or restarting (containers coming up) with id >= from, or -1. */
int32_t drv_state_next_starting(const drv_state *st, int32_t from);
bool drv_state_is_queued(const drv_state *st, int32_t job);

/* Binds an unbound pod to a node (no capacity check: callers decide; invariants catch it). */
void drv_state_bind(drv_state *st, int32_t pod, int32_t node);
/* Unbinds a pod (no-op if unbound). */
void drv_state_unbind(drv_state *st, int32_t pod);
/* Changes a pod's CPU limit, keeping the node's limit sum right. */
void drv_state_set_cpu_limit(drv_state *st, int32_t pod, int64_t cpu_limit);
/* Sets how many workers a job wants; clamps nothing (the invariants check the bounds). */
void drv_state_set_workers(drv_state *st, int32_t job, int32_t n);
/* A job's worker count changed whole (state_job.c): how many workers it wants (as
 * drv_state_set_workers), and every worker of index n or above taken off its node (it is no
 * longer wanted; a driver deletes its pod). O(the job's pods). */
void drv_state_resize_workers(drv_state *st, int32_t job, int32_t n);
/*
 * A job as a driver that follows an API describes it (drover run: a TrainingJob, or a gang of
 * another operator's pods): its template, its name and its user as text, and each role's node
 * constraint the state does not hold yet, decoded by the driver (ids of st->names).
 * drv_state_apply_job adds it whole (state_job.c): the two names interned into st->names, each
 * new constraint added (its id into the job's cons[r]; one the state refuses leaves its role
 * unconstrained and is said in diag, which may be NULL), then the job. 0, or DRV_ENOMEM or
 * drv_state_add_job's error (the job not added). O(the job's pods and constraints).
 */
typedef struct drv_job_desc {
    drv_job tmpl;     /* name and user are set from the texts below; cons[r] is an id the state
                         holds (0: none) unless cons[r] below is given */
    const char *name; /* the job's name */
    const char *user; /* its user of fair share; NULL: tmpl.user as it is */
    const drv_constraint *cons[DRV_NROLES]; /* role r's new constraint, or NULL */
} drv_job_desc;
int drv_state_apply_job(drv_state *st, const drv_job_desc *d, int32_t *id, drv_diag *diag);
/* Records a progress sample in the job's ring (allocated at the first sample). 0 or
 * DRV_ENOMEM. */
int drv_job_add_sample(drv_job *j, drv_sample s);
/* Forgets a job's samples and frees its ring (done by drv_state_set_phase at DRV_JOB_DONE and
 * by drv_state_fini; a caller owning a drv_job outside a state calls it itself). */
void drv_job_clear_hist(drv_job *j);
/* The i-th newest sample (0 = newest); i must be < j->nhist. */
const drv_sample *drv_job_sample(const drv_job *j, int i);

/* Pod slot of a job's role replica, or -1 when the job has no such slot. */
int32_t drv_job_pod(const drv_state *st, int32_t job, int role, int index);
/* True when every wanted pod of the job is bound and none unwanted is. */
bool drv_job_complete(const drv_job *j);
/* True when the job still wants placement: submitted, not done, some wanted pod unbound. */
bool drv_job_needs_pods(const drv_job *j);
/* Total request of the wanted pods of a job. */
drv_res drv_job_demand(const drv_job *j);
/* Pods the job wants in total. */
int32_t drv_job_wanted(const drv_job *j);
/* Free resources on a node. */
static inline drv_res drv_node_free(const drv_node *n)
{
    return drv_res_sub(n->alloc, n->used);
}

/*
 * Invariants, checked after every cycle in tests and with `drover sim --check`:
 *  - no node's used resources exceed its allocatable, and used/npods/cpu_limit equal the sums
 *    over the pods bound there;
 *  - every pod is on at most one node, and no role has more pods bound than its target;
 *  - each job's targets are within [min, max] and bound counts equal the pods bound;
 *  - when gang is true: a job with any pod bound has all its wanted PS/chief pods and at least
 *    min workers bound (admitted whole or not at all);
 *  - the live, pending, queued and starting job sets and their counts follow the jobs' phases
 *    and pods;
 *  - each queue's used resources equal the sum over the pods bound of its jobs and its held;
 *  - the node change list holds every node once, in order of its stamps.
 * Returns 0 or DRV_EINVARIANT with the first violation described in d.
 */
int drv_state_check(const drv_state *st, bool gang, drv_diag *d);

#endif
