/*
 * cycle.h - the scheduling cycle: one pure function from a snapshot of the cluster to a list of
 * decisions, assembled from plugins at fixed extension points. docs/cycle.md specifies the order
 * of the points, what each may do and what a decision means; this header is its API.
 *
 *   snapshot ──► queue_order ──► admit (uses filter + score to place pods) ──► scale
 *            ──► reallocate ──► migrate/preempt ──► decisions
 *
 * A plugin is a static table of function pointers (drv_plugin); it fills any subset of the
 * points. A profile names which plugins run at each point and, for scores, their weights.
 * Plugins never do I/O, never read a clock (time is snap->now) and keep no global state: any
 * state they carry from cycle to cycle lives in their per-scheduler state object, created by
 * init and passed back on every call, so a decision is reproducible from (snapshot, state).
 */
#ifndef DROVER_CYCLE_H
#define DROVER_CYCLE_H

#include "drover/arena.h"
#include "drover/state.h"

/* ---- decisions ---------------------------------------------------------------------------- */

enum drv_decision_kind {
    DRV_BIND,    /* bind pod to node */
    DRV_EVICT,   /* remove pod from its node (reason says why) */
    DRV_SCALE,   /* set the job's wanted worker count to value (checkpoint-restart if running) */
    DRV_RESIZE,  /* set pod's CPU limit to value millicores, in place */
    DRV_MIGRATE, /* move pod to node (checkpoint, delete, recreate there, restore) */
    DRV_BATCH,   /* set a calibrated job's total batch size to value (checkpoint-restart;
                    in place with reason DRV_REASON_INPLACE) */
};
enum drv_reason {
    DRV_REASON_NONE,
    DRV_REASON_PREEMPT,  /* evicted for a more important job */
    DRV_REASON_SHRINK,   /* removed by an elastic scale-down */
    DRV_REASON_STARVE,   /* removed to make room for a starving job */
    DRV_REASON_COMPLETE, /* job finished */
    DRV_REASON_INPLACE,  /* BATCH: the framework changes it while the job runs (AdaptDL) */
};
typedef struct drv_decision {
    int32_t kind; /* enum drv_decision_kind */
    int32_t job;
    int32_t pod;    /* -1 for SCALE */
    int32_t node;   /* BIND, MIGRATE target; -1 otherwise */
    int64_t value;  /* SCALE: workers; RESIZE: millicores; BATCH: total batch size; EVICT: the
                       preemptor's job id (drv_ctx_preempt), -1 when none */
    int32_t reason; /* enum drv_reason, for EVICT; BATCH: INPLACE or NONE (restart) */
    int32_t from;   /* EVICT, MIGRATE: the node the pod was on; -1 otherwise */
    int64_t prev;   /* SCALE: workers before; RESIZE: limit before; BATCH: batch before (lets a
                       cycle roll back) */
} drv_decision;

typedef struct drv_decisions {
    drv_decision *v;
    int32_t n, cap;
} drv_decisions;

void drv_decisions_init(drv_decisions *d);
void drv_decisions_fini(drv_decisions *d);
int drv_decisions_push(drv_decisions *d, drv_decision x);
/* "BIND job-3/worker-1 node-7", etc., into buf; returns buf. */
const char *drv_decision_format(const drv_state *st, const drv_decision *x, char *buf, size_t n);

/* ---- snapshot and context ----------------------------------------------------------------- */

typedef struct drv_snapshot {
    const drv_state *st; /* read-only cluster state */
    double now;          /* seconds since the start of the run */
    /* Optional: a driver that draws progress samples lazily brings a job's samples current
     * when a plugin is about to read them (drv_ctx_progress). NULL: always current. */
    void (*sync)(void *arg, int32_t job);
    void *sync_arg;
    /* Optional: what src/model knows of the jobs - their calibrated model and batch
     * (drv_calib_jobs, calib.h) - for plugins that plan with it (goodput) or leave such jobs to
     * others (dragon's adaptive=0). An opaque handle to the core, which never reads it: the
     * core's structs hold no model. NULL: none. */
    const struct drv_calib_jobs *model;
    /* Optional: a driver that keeps a running job's steps and attained service as of the last
     * change of its rate (the simulator) brings one job's to now, with sync_arg, when a plugin is
     * about to read them (drv_ctx_job_now, drv_ctx_progress): O(jobs read) a cycle rather than
     * O(running jobs). Idempotent within a cycle. NULL: always current. */
    void (*steps_now)(void *arg, int32_t job);
} drv_snapshot;

/* Outcome of a filter or a placement: results, not errors (cf. kube-scheduler's Status). */
enum drv_status {
    DRV_FIT = 0,       /* the pod may go there */
    DRV_UNSCHEDULABLE, /* not now (not enough room); may fit later */
    DRV_UNRESOLVABLE,  /* never (node too small, cordoned, wrong topology) */
};

typedef struct drv_ctx drv_ctx;
typedef struct drv_plugin drv_plugin;
typedef struct drv_profile drv_profile;

/* ---- plugins ------------------------------------------------------------------------------ */

/* One knob of a plugin use: its name and its value, parsed from text once, when the profile
 * is (policy.h); the plugin's init checks the name and range against its knob specs. */
typedef struct drv_knob {
    char name[32];
    double value;
} drv_knob;

/*
 * A set of nodes the best-node index asks score plugins to bound (drv_plugin.score_bound). All
 * its nodes share one allocatable; the other fields summarise them in the assumed state. Which
 * nodes a set stands for depends on its topology fields, relative to the zones and racks where
 * the pod's job already has pods (its "job zones" and "job racks"):
 *   zone = -1, rack = -1   nodes in no job zone and no job rack;
 *   zone = z,  rack = -1   nodes of zone z in no job rack;
 *   rack = r   (zone -1)   nodes of rack r, whatever their zone.
 * The core scores the job's own nodes exactly, so a bound never needs to cover them.
 */
/* A per-node key a score is monotone in (drv_plugin.node_key). */
typedef double (*drv_node_key_fn)(const drv_node *n, drv_res free);

typedef struct drv_node_set {
    drv_res alloc;       /* allocatable of every node of the set (mixed: see below) */
    drv_res maxfree;     /* per-dimension maximum of their free resources */
    double maxkey;       /* maximum of key(node, free) over them, when key is not NULL */
    drv_node_key_fn key; /* the profile's keyed score plugin's node_key, or NULL */
    int32_t min_ps;      /* minimum of their PS pod counts */
    int32_t zone, rack;  /* interned labels as above, or -1 */
    /* The nodes differ in allocatable; alloc is the per-dimension minimum of theirs. Only
     * passed to plugins with drv_plugin.bound_mixed. */
    bool mixed;
    /* The node class (drv_node.node_class) of every node of the set, or -1 when they differ
     * (mixed sets). Read by the core only. */
    int32_t node_class;
    /* Mixed sets, when key is not NULL: per count d of resources a node's allocatable has
     * (1..3; [0] unused), the maximum key over the set's nodes with d of them, or -1e300 when
     * none has d. So a bound may weigh each node's key by its own resource count rather than
     * by alloc's (the minimum's, the fewest). Unset in sets of one allocatable. */
    double maxkey_dims[4];
} drv_node_set;

struct drv_plugin {
    const char *name; /* as written in profiles */
    const char *doc;  /* one line for `drover policies` */

    /* Optional. Creates the plugin's per-scheduler state from its knobs. An unknown knob or a
     * value out of range is an error naming the knob (diag). */
    int (*init)(void **state, const drv_knob *knobs, int nknobs, drv_diag *d);
    void (*fini)(void *state);

    /* queue_order: < 0 when job a goes before job b. Ties fall back to submit time, then id. */
    int (*queue_cmp)(const drv_ctx *c, void *state, int32_t a, int32_t b);
    /* queue_order, optional instead of queue_cmp: a number per pending job, smaller first. The
     * core asks for it once per pending job per cycle (a comparator may be asked O(n log n)
     * times), so a key is the cheaper form for orders that change with time. */
    double (*queue_key)(const drv_ctx *c, void *state, int32_t job);
    /* queue_order, optional: called once per cycle, before any queue_key or queue_cmp, with
     * the pending jobs (in no particular order) - for an order normalised over the queue. */
    void (*queue_begin)(const drv_ctx *c, void *state, const int32_t *jobs, int32_t n);
    /* queue_order, optional with queue_key, asked after queue_begin when the plugin orders the
     * queue alone or in a chain of keyed plugins only: true when every job it was handed at its
     * previous queue_begin has the same key now as then (to the bit), so the core keeps those keys
     * and asks only for newcomers. */
    bool (*queue_kept)(const drv_ctx *c, void *state);
    /* queue_order, optional: asked after queue_begin; true when every key or comparison of this
     * cycle would tie (the plugin orders nothing now: fairshare without queues), so the core
     * leaves it out of the chain this cycle - a chain such as fairshare,priority then costs what
     * priority alone does. */
    bool (*queue_idle)(const drv_ctx *c, void *state);
    /* admit: given pending jobs in queue order, decide which to start and place their pods with
     * drv_ctx_place_pod / drv_ctx_place_gang. */
    void (*admit)(drv_ctx *c, void *state, const int32_t *jobs, int32_t njobs);
    /* filter: may this pod go on this node? Must not look at other nodes. */
    int (*filter)(const drv_ctx *c, void *state, int32_t pod, int32_t node);
    /* score: how good is this node for this pod, 0..100 (higher is better). */
    int (*score)(const drv_ctx *c, void *state, int32_t pod, int32_t node);
    /* Optional, for score plugins: a per-node key such that, among nodes of equal allocatable,
     * score(pod, node) is non-decreasing in node_key(node, free) for every pod. When a
     * profile's only score plugin has it (and there are no filter plugins), the core finds the
     * best node through an index instead of scoring every node (docs/cycle.md, "Cost"). */
    drv_node_key_fn node_key;
    /* Optional, for score plugins: an upper bound of score(pod, n) over the nodes n of a set
     * (drv_node_set) that hold none of the pod's job's pods. When every score plugin of a
     * profile has it (and there are no filter plugins), the core finds the exact best node by
     * branch and bound over an index instead of scoring every node (docs/cycle.md, "Cost").
     * A loose bound costs time, never quality; a bound below a real score costs quality. */
    int (*score_bound)(const drv_ctx *c, void *state, int32_t pod, const drv_node_set *set);
    /* With score_bound: it also bounds mixed sets (drv_node_set.mixed). When every score plugin
     * of a profile does, the core bounds each rack or zone whole before searching it class by
     * class, and skips it when that bound cannot beat the best node found so far. */
    bool bound_mixed;
    /* With score_bound: its score of (pod, node) depends on the node only through the node's
     * allocatable, free resources, zone, rack, node class and count of PS pods, and how many
     * of the pod's job's pods (and of its PS pods) are on it — never its id or name. Nodes
     * alike in all of these then score alike: when every score plugin of a profile says so,
     * the core scores one node of each such kind among the job's own nodes (the lowest id,
     * which wins the tie) instead of each of them. */
    bool score_by_summary;
    /* Optional, with score_bound: true when this plugin scores every node alike for pod —
     * score(pod, n) and score_bound(pod, set) are *value for every node and set — so that a
     * query through the index adds it once instead of asking it per node and per set. */
    bool (*score_flat)(const drv_ctx *c, void *state, int32_t pod, int *value);
    /* scale: grow or shrink running elastic jobs (SCALE, EVICT, BIND decisions). */
    void (*scale)(drv_ctx *c, void *state);
    /* reallocate: change CPU limits of running pods (RESIZE decisions). */
    void (*reallocate)(drv_ctx *c, void *state);
    /* migrate: move or evict running pods (MIGRATE, EVICT decisions). */
    void (*migrate)(drv_ctx *c, void *state);

    /* What lets a driver skip quiet cycles (docs/cycle.md, "Quiet cycles"). A plugin is
     * timeless when, on the same cluster state, it decides the same at any time: it reads
     * neither the clock (beyond submit-relative orders that do not change with it) nor
     * progress samples, and the state it keeps between cycles does not change its later
     * decisions when a cycle decides nothing. */
    bool timeless;
    /* Optional, for plugins that are not timeless: called once after each cycle that decided
     * nothing. The earliest time at which, if the cluster state stayed as it is (no arrival,
     * start, completion or decision), this plugin could decide something; INFINITY for never, a
     * time <= now for "at the next cycle". Early is always safe (a cycle is run that decides
     * nothing); late loses decisions. A plugin with neither is asked to run every cycle. */
    double (*wake)(const drv_ctx *c, void *state);
    /* Optional, asked with wake: true when jobs that start running (STARTING or RESTARTING to
     * RUNNING - nothing else changing) would change none of this plugin's decisions before its
     * wake, and it would still say so after they did. drv_starts_blind is the answer "always"
     * for plugins that never look at running jobs. A plugin without it is not blind. */
    bool (*starts_blind)(const drv_ctx *c, void *state);
};

/* A starts_blind that always says yes. */
bool drv_starts_blind(const drv_ctx *c, void *state);

/* ---- profiles ----------------------------------------------------------------------------- */

/* Bounds: plugins per extension point, knobs per plugin use, knobs per profile in all. */
enum { DRV_MAX_SLOT_PLUGINS = 8, DRV_MAX_KNOBS = 16, DRV_MAX_PROFILE_KNOBS = 64 };

/* One plugin enabled in a profile, with its score weight and knobs: its knobs are
 * knobs[knob0 .. knob0 + nknobs) of the profile's pool (drv_profile.knobs). */
typedef struct drv_plugin_use {
    const drv_plugin *p;
    int32_t weight; /* for score plugins; >= 1 */
    int16_t knob0;  /* first of its knobs in the profile's pool */
    int16_t nknobs; /* how many (<= DRV_MAX_KNOBS) */
} drv_plugin_use;

/* Extension points, in the order a cycle runs them. */
enum drv_point {
    DRV_PT_QUEUE_ORDER,
    DRV_PT_ADMIT,
    DRV_PT_FILTER,
    DRV_PT_SCORE,
    DRV_PT_SCALE,
    DRV_PT_REALLOCATE,
    DRV_PT_MIGRATE,
    DRV_NPOINTS
};
const char *drv_point_name(int pt);

#define DRV_MAX_CHECKPOINT_TIMEOUT 3600.0

/* A profile: a few kilobytes, built once (policy.h) and then handed around by pointer. */
struct drv_profile {
    char name[64];
    char doc[160];
    bool gang;     /* jobs are admitted whole (checked as an invariant) */
    double period; /* seconds between cycles */
    /* Half-life of the decayed usage fair share reads (usage.h), seconds; 0 (the default):
     * "now only", shares of what is bound now. The driver hands it to its state. */
    double half_life;
    /* `drover run`'s checkpoint handshake (docs/running.md): before deleting a job's pods for a
     * preemption, scaling or migration, how long to wait for the job to say its checkpoint is
     * written, seconds (0..DRV_MAX_CHECKPOINT_TIMEOUT); 0 (the default): no handshake, the
     * pods' terminationGracePeriodSeconds is the only grace. The simulator does not read it. */
    double checkpoint_timeout;
    drv_plugin_use use[DRV_NPOINTS][DRV_MAX_SLOT_PLUGINS];
    int32_t nuse[DRV_NPOINTS];
    drv_knob knobs[DRV_MAX_PROFILE_KNOBS]; /* every use's knobs, values parsed once */
    int32_t nknobs;
};
/* The knobs of use u of profile p: its slice of the profile's pool. */
static inline const drv_knob *drv_profile_knobs(const drv_profile *p, const drv_plugin_use *u)
{
    return p->knobs + u->knob0;
}
/* The profile as one profile line (format in policy.h) that drv_profile_parse reads back to
 * the same profile ("gang=true period=1 queue_order=fifo admit=gang ..."; knob values in the
 * shortest form that reads back as the same double), cut to fit n bytes; always terminated.
 * In the core (profile.c): it needs only these types, and the simulator records it. */
void drv_profile_format(const drv_profile *p, char *buf, size_t n);

/* ---- a scheduler: a profile with its plugins' state ---------------------------------------- */

typedef struct drv_sched drv_sched;

/* Creates a scheduler for a profile. The profile is borrowed, not copied: the caller keeps it
 * alive and unchanged while the scheduler is used (drv_sched_cycle, drv_sched_profile);
 * drv_sched_free does not read it. Runs every plugin's init; errors name the plugin and
 * knob. */
int drv_sched_new(const drv_profile *prof, drv_sched **out, drv_diag *d);
void drv_sched_free(drv_sched *s);
/* Scan every node for every pod even when the profile allows the best-node index: the
 * reference the index must agree with, decision for decision (tests and benchmarks). */
void drv_sched_set_exhaustive(drv_sched *s, bool on);
/* True when the profile lets placement use the best-node index (docs/cycle.md, "Cost"). */
bool drv_sched_indexed(const drv_sched *s);
const drv_profile *drv_sched_profile(const drv_sched *s);
/* After a cycle that decided nothing: the earliest time a cycle could decide anything on that
 * state, if it does not change (the minimum of the plugins' wake, docs/cycle.md). A driver may
 * skip a cycle before it when nothing has happened since; -INFINITY when some plugin must run
 * every cycle, or when the last cycle decided something. */
double drv_sched_wake(const drv_sched *s);
/* After a cycle that decided nothing: true when every plugin of the profile is blind to jobs
 * starting (drv_plugin.starts_blind), so a driver may let a job start without running the next
 * cycle for it; false after a cycle that decided something. */
bool drv_sched_starts_blind(const drv_sched *s);

/*
 * Runs one cycle on the snapshot and appends its decisions to out, in the order they must be
 * applied. Decisions are consistent with each other: applying them in order never overcommits a
 * node. Returns 0, or the cycle's error (docs/cycle.md, "Errors"): DRV_ENOMEM when the core or
 * a plugin could not allocate, or the code a plugin failed the cycle with (drv_ctx_fail). After
 * an error, out holds decisions that must not be applied (the cycle did not finish: some
 * plugins did not run, or ran only in part), and drv_sched_failed_in says where it came from.
 */
int drv_sched_cycle(drv_sched *s, const drv_snapshot *snap, drv_decisions *out);
/* After a cycle that returned an error: the plugin that was running when it came (the one
 * that called drv_ctx_fail, or whose arena allocation, or whose call of a core helper, could
 * not allocate), with its extension point in *point (may be NULL; -1 when it was asked for
 * its wake); NULL, and -1, when the core failed in its own work (preparing the overlay,
 * collecting the queue). NULL after a cycle that succeeded. */
const drv_plugin *drv_sched_failed_in(const drv_sched *s, int *point);

/* ---- what plugins may call during a cycle -------------------------------------------------- */

/*
 * Fails the cycle: a plugin that cannot finish its part - an allocation of its own failed, a
 * helper returned an error - says so, and drv_sched_cycle returns `code` (the cycle's first
 * error) with no decision to apply, never a partial decision list as success. Callable from
 * every callback, the const ones too (queue_begin, queue_key, score...): failing changes no
 * decision and no assumed state, only the cycle's outcome. The core's decision and placement
 * helpers fail the cycle themselves when they cannot allocate (their error returns tell the
 * plugin to stop), and so does a NULL from the cycle's arena (drv_ctx_arena). code must be a
 * DRV_E* code (< 0; anything else is ignored); returns it, so a helper may end with
 * `return drv_ctx_fail(c, rc);`. Once failed, the cycle calls no further plugin. O(1).
 */
int drv_ctx_fail(const drv_ctx *c, int code) __attribute__((cold));
/* The cycle's error so far (drv_ctx_fail, or a helper that could not allocate), 0 while
 * none: a plugin's long loop may stop at once. O(1). */
int drv_ctx_error(const drv_ctx *c);

/* The snapshot, the time, and the cycle's scratch arena. */
const drv_snapshot *drv_ctx_snap(const drv_ctx *c);
const drv_state *drv_ctx_state(const drv_ctx *c);
double drv_ctx_now(const drv_ctx *c);
/* The profile's period: seconds between cycles. */
double drv_ctx_period(const drv_ctx *c);
/* A job, with its progress samples (nhist, drv_job_sample) current: read samples only through
 * this (a driver may draw them lazily, drv_snapshot.sync). */
const drv_job *drv_ctx_progress(const drv_ctx *c, int32_t job);
/* A job with its steps and attained service current (drv_snapshot.steps_now): read those two
 * fields only through this or drv_ctx_progress. O(1). */
const drv_job *drv_ctx_job_now(const drv_ctx *c, int32_t job);
/* The cycle's scratch arena (arena.h), reset before each cycle. An allocation from it that
 * returns NULL fails the cycle (DRV_ENOMEM) when the plugin's call returns, whether or not the
 * plugin calls drv_ctx_fail; the plugin should stop at once all the same. */
drv_arena *drv_ctx_arena(drv_ctx *c);

/* Free resources of a node as assumed by this cycle (after the decisions made so far). */
drv_res drv_ctx_free(const drv_ctx *c, int32_t node);
/* The node a pod is on as assumed by this cycle, or -1. */
int32_t drv_ctx_pod_node(const drv_ctx *c, int32_t pod);
/* The job's wanted worker count as assumed by this cycle. */
int32_t drv_ctx_workers(const drv_ctx *c, int32_t job);
/* A queue's used resources (drv_queue.used, state.h) as assumed by this cycle: after the binds
 * and evictions made so far. Zero when the state has no queue. O(1). */
drv_res drv_ctx_queue_used(const drv_ctx *c, int32_t queue);
/*
 * Queue quotas (src/core/quota.c, docs/cycle.md "Admission within quota"): whether queue may
 * take `add` more resources, Kueue's rule - per dimension add touches, its use after is within
 * its quota, or within quota + borrowing limit while its cohort's total use stays within the
 * cohort's total quota. DRV_UNLIMITED never binds; sums saturate. `used` is every queue's use
 * (drv_state.queues[].used, or a caller's what-if copy). True when the state has no queue.
 * O(1), O(queues) when the queue borrows.
 */
bool drv_queue_admits(const drv_state *st, const drv_res *used, int32_t queue, drv_res add);
/* drv_queue_admits on this cycle's assumed use (drv_ctx_queue_used). */
bool drv_ctx_queue_fits(const drv_ctx *c, int32_t queue, drv_res add);
/* Whether job's queue admits what its gang at `workers` still misses in the assumed state (its
 * unbound wanted PS, chief, evaluator pods and workers up to `workers`): what
 * drv_ctx_place_gang checks before placing. True when the state has no queue. O(roles) + the
 * above. */
bool drv_ctx_queue_room(const drv_ctx *c, int32_t job, int32_t workers);
/* Pods of a role on a node as assumed by this cycle. O(1). */
int32_t drv_ctx_node_role_pods(const drv_ctx *c, int32_t node, int role);
/* Identifies this cycle among the scheduler's cycles, and with drv_ctx_mark(c).ndec the exact
 * assumed state: a plugin may cache what it derived from the assumed state under this key. */
uint32_t drv_ctx_cycle(const drv_ctx *c);
/* Counts the changes to the assumed state in this cycle: each decision recorded adds 1, each
 * rollback 2. So two calls that get the same count see the same state, and a count one higher
 * means exactly one decision was recorded in between (what lets a cache be updated for it
 * instead of rebuilt). */
uint64_t drv_ctx_changes(const drv_ctx *c);

/*
 * For queue_begin: the jobs it is handed are a list, numbered per scheduler from 1 (*list);
 * the first `kept` of them (the value returned) were all in the list before (number *list - 1)
 * and the rest were not. A plugin that remembers what it did with the list it was handed
 * before - the number one less - need look only at jobs[kept..n) to know what came; the jobs
 * that left are those of the old list not queued now. O(1).
 */
int32_t drv_ctx_queue_kept(const drv_ctx *c, uint64_t *list);

/* Whether pod's node constraints (nodeSelector, required affinity, taints; state.h) admit
 * node, whatever its room: for plugins that choose nodes themselves. O(1). */
bool drv_ctx_allowed(const drv_ctx *c, int32_t pod, int32_t node);
/* Runs the profile's filters for pod on node: DRV_FIT or why not. The core checks first that
 * the node is schedulable, admitted by drv_ctx_allowed and has the room. */
int drv_ctx_filter(const drv_ctx *c, int32_t pod, int32_t node);
/* Weighted, normalised score of pod on node (sum over score plugins of weight * 0..100). */
int64_t drv_ctx_score(const drv_ctx *c, int32_t pod, int32_t node);
/* The best node for pod (filters then scores; ties go to the lower node id), or -1. */
int32_t drv_ctx_best_node(const drv_ctx *c, int32_t pod);

/* Records a decision and updates the assumed state. Return 0 or DRV_ENOMEM. */
int drv_ctx_bind(drv_ctx *c, int32_t pod, int32_t node);
int drv_ctx_evict(drv_ctx *c, int32_t pod, int reason);
/* EVICT with reason DRV_REASON_PREEMPT on behalf of job `by` (the preemptor, named in the
 * decision's value so a driver can say who preempted whom). */
int drv_ctx_preempt(drv_ctx *c, int32_t pod, int32_t by);
/* SCALE: a shrink below the workers bound first evicts the surplus (reason shrink), highest
 * worker slots first, so the list never leaves more workers bound than wanted. */
int drv_ctx_scale(drv_ctx *c, int32_t job, int32_t workers);
int drv_ctx_resize(drv_ctx *c, int32_t pod, int64_t cpu_limit);
int drv_ctx_migrate(drv_ctx *c, int32_t pod, int32_t node);
/* BATCH: a batch-adaptive job (drv_calib_job_adaptive, calib.h) now trains at total batch
 * `batch`, which must lie in its range; a running job checkpoints and restarts. `now` is its
 * batch before this cycle, which the plugin reads from the model (the core holds none); no
 * decision when the assumed batch (drv_ctx_batch) is `batch` already. */
int drv_ctx_set_batch(drv_ctx *c, int32_t job, int64_t batch, int64_t now);
/* The same, changed while the job runs, without a restart (a framework such as AdaptDL). */
int drv_ctx_set_batch_inplace(drv_ctx *c, int32_t job, int64_t batch, int64_t now);
/* The job's total batch as assumed by this cycle: the newest BATCH of this cycle for it, else
 * `now`, its batch before the cycle. */
int64_t drv_ctx_batch(const drv_ctx *c, int32_t job, int64_t now);

/* Places one pod on its best node and binds it. Returns the node, or -1 when none fits or its
 * job's queue does not admit it (drv_ctx_queue_fits). */
int32_t drv_ctx_place_pod(drv_ctx *c, int32_t pod);
/*
 * Places a whole gang: all PS/chief/evaluator pods of the job and `workers` workers, or nothing.
 * Pods are placed PS first, then chief, workers, evaluators (Volcano's task-order). When they do
 * not all fit, every tentative bind is rolled back and the decision list is as before.
 * A gang its queue does not admit (drv_ctx_queue_room) is not tried: 0, nothing changed.
 * On success, emits SCALE first if workers differs from the job's current target.
 * Returns 1 when placed, 0 when it does not fit, DRV_ENOMEM on failure.
 */
int drv_ctx_place_gang(drv_ctx *c, int32_t job, int32_t workers);

/*
 * False when the gang of job at `workers` cannot fit for capacity or quota alone: some pod it
 * misses is larger than any node's free room, together they exceed the free room of all nodes,
 * or its queue does not admit them (drv_ctx_queue_room). Then drv_ctx_place_gang returns 0 for
 * it, and for the job at any larger worker count, without changing anything (a larger gang
 * misses at least the same pods, and quota admits less the more is asked) - so a plugin trying
 * sizes from large to small may test its smallest first and skip them all. Changes no decision;
 * a capacity failure is remembered, so that asking again before room is given back, at that
 * size or a larger one, is O(1) without reading the job. O(roles), O(queues) when the queue
 * borrows.
 */
bool drv_ctx_gang_room(const drv_ctx *c, int32_t job, int32_t workers);
/*
 * True when, before any decision of the cycle, nothing of the queue can be placed: no queued
 * job has a pod bound, every gang of one with at least min(worker minimum, target) workers has
 * a pod, and no pod of a queued job fits any node's free room. Then drv_ctx_place_gang fails,
 * changing nothing, for every queued job at every such size: an admit plugin that asks for no
 * less may return at once. Capacity alone: quotas only refuse more, so they never make it
 * wrong (nor does it say true for a queue that quota alone blocks). O(1); false once a
 * decision was made.
 */
bool drv_ctx_queue_stuck(const drv_ctx *c);
/*
 * True when the gang of job, the i-th of the queue handed to admit (jobs[i]), fails the
 * capacity bounds of drv_ctx_gang_room (false) at every size of at least min(worker minimum,
 * target) workers, right now: its smallest such gang misses a pod larger than any node's free
 * room, or more than the free room of all nodes. Reads a record the cycle keeps for each
 * queued job, not the job: an admit plugin walking a long queue that mostly cannot start asks
 * this first. False when in doubt (i and job do not match the queue, the job has pods bound or
 * moved this cycle). O(1).
 */
bool drv_ctx_queued_cannot_fit(const drv_ctx *c, int32_t i, int32_t job);
/*
 * The least k >= i >= 0 (k < n) for which drv_ctx_queued_cannot_fit(c, k, jobs[k]) is false, or n:
 * the same answers, with no call per job skipped. jobs and n are the queue handed to admit.
 * O(jobs skipped).
 */
int32_t drv_ctx_queued_skip(const drv_ctx *c, int32_t i, const int32_t *jobs, int32_t n);

/*
 * Topology domains, read-only (cycle_topo.c; state.h "Topology-bound gangs"), for plugins that
 * reason about where a bound gang could go (defrag.c). Levels are the state's (drv_state.topo_key
 * indices); a level's domains are numbered 0..drv_ctx_topo_domains - 1 in the order of their
 * label values. All in the assumed state (after the cycle's decisions so far).
 */
/* Domains of level lev; 0 without topology or for a level out of range. O(1). */
int32_t drv_ctx_topo_domains(const drv_ctx *c, int32_t lev);
/* The domain of node at level lev, or -1 (no label of that level, no such level). O(1). */
int32_t drv_ctx_topo_node_domain(const drv_ctx *c, int32_t lev, int32_t node);
/* The free room of domain dom of lev: drv_ctx_free summed over its schedulable nodes (what a
 * gang bound to it may use); zero for a domain out of range. O(its nodes). */
drv_res drv_ctx_topo_free(const drv_ctx *c, int32_t lev, int32_t dom);
/* What job's pods hold in domain dom of lev: the requests of its pods on the domain's nodes.
 * O(the job's pods). */
drv_res drv_ctx_topo_held(const drv_ctx *c, int32_t job, int32_t lev, int32_t dom);
/* What the gang of job at `workers` still misses, in resources: its wanted PS, chief and
 * evaluator pods and workers up to `workers` not placed yet (what drv_ctx_place_gang places, and
 * what a domain's free room must hold for a gang bound to it). O(its pods). */
drv_res drv_ctx_gang_need(const drv_ctx *c, int32_t job, int32_t workers);

/* Marks a point in the decision list / rolls back to it (undoes assumed state too). */
typedef struct drv_mark {
    int32_t ndec;
} drv_mark;
drv_mark drv_ctx_mark(const drv_ctx *c);
void drv_ctx_rollback(drv_ctx *c, drv_mark m);

#endif
