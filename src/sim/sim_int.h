/*
 * sim_int.h - the simulator's private state, shared by its files (internal to src/sim): sim.c
 * (lifecycle, arrivals and event handling), sim_events.c (the event heap and its order, and a
 * cycle requested: a leaf the others push to), sim_progress.c (what a job does over time:
 * phases, binds, progress, samples, rates), sim_apply.c (running a cycle and applying its
 * decisions), sim_metrics.c (utilisation, the time series, the placement log, the summary) and
 * sim_queues.c (the cluster file's queues: each job's, their shares, fairness).
 * sim.c's opening comment describes the simulator as a whole.
 */
#ifndef DROVER_SIM_INT_H
#define DROVER_SIM_INT_H

#include "drover/calib.h"
#include "drover/jobsource.h"
#include "drover/sim.h"

#include <math.h>

enum { EV_ARRIVAL, EV_CYCLE, EV_STARTED, EV_COMPLETE, EV_RELEASE };

typedef struct event {
    double t;
    uint64_t seq;
    int32_t kind;
    int32_t job;
    uint32_t gen;
} event;

/* A job's interned names (ids of drv_state.names): interned in workload order at the start,
 * so ids do not depend on the order of submissions. */
typedef struct job_names {
    int32_t name, user, queue;
} job_names;

typedef struct jobsim {
    double rate;      /* worker-steps per second while RUNNING */
    double upd_t;     /* anchor: time of the last progress update that changed nothing ... */
    double a_steps;   /* ... and steps and attained service then: progress at t is computed */
    double a_att;     /* from the anchor, so skipping a sampling tick changes no later value */
    uint32_t gen;     /* bumps on every phase change: stale events are dropped */
    uint32_t touched; /* cycle stamp of the last decision touching this job */
    uint32_t preempt; /* cycle stamp of its last preemption (counted once per cycle) */
    uint32_t lost;    /* cycle stamp of its last loss of work (charged once per cycle) */
    uint32_t blocked; /* cycle stamp of its last bind that waited for held room (sim_grace.c) */
    bool restart;     /* a decision this cycle requires a checkpoint-restart */
    int64_t nsamples;
    drv_res held;       /* resources of the job's bound pods */
    int32_t runpos;     /* index in drv_sim.runl while RUNNING, else -1 */
    uint64_t calib_sig; /* calibrated jobs: signature of the placement calib_t was computed for */
    double calib_t;     /* its step time (a lookup is costly; rates are recomputed often) */
    double owe_t;       /* while RUNNING under a periodic profile: the first periodic cycle whose
                           progress sample is not drawn yet (INFINITY: none); see sync() */
} jobsim;

/* A terminating pod (sim_grace.c): the room it holds on its node and its queue (-1: none). */
typedef struct sim_ghost {
    int32_t node, queue;
    drv_res req;
} sim_ghost;

/* What a streamed run keeps of a finished job for its summary: 16 bytes instead of its spec
 * and result row (released as it finishes). */
typedef struct finrec {
    double jct;  /* end - submit */
    double wait; /* start - submit; NaN when it never started (cannot happen once finished) */
} finrec;

/* A streamed run's per-job memory (drv_sim_new_stream): every per-job array lives in a
 * released-as-they-finish array (pages.h), so memory follows the jobs in flight. */
typedef struct sim_stream {
    drv_jobsource *src;      /* borrowed: jobs in order of submission */
    drv_jobspec *spec;       /* specs of the jobs read and not finished, in slots reused as jobs
                                finish: a page of ids stays pinned while one of its jobs runs
                                (pages.h), and a spec is the largest per-job entry (~400 bytes) */
    int32_t *slot;           /* per job id, in slot_pages: its spec's slot while it is live */
    int32_t nspec, cap_spec; /* slots in use or free, allocated */
    int32_t *free_slot;      /* slots of finished jobs, to reuse; grown with spec, so a finished
                                job's slot always has room (retire_job allocates nothing) */
    int32_t nfree, cap_free;
    drv_pages slot_pages, res_pages, names_pages, podb_pages; /* back slot, res, names, pod_base */
    finrec *fin;         /* per job, valid once it finished (its state released) */
    uint64_t *own_name;  /* per job a bit: its name was new when it was read, so it is the
                            job's alone and forgotten when it finishes (drv_strtab_forget) */
    int64_t next_pod;    /* the next job's first pod slot */
    double last_submit;  /* the submission of the last job read (order check) */
    double first_submit; /* of the first job read: where the summary's makespan starts */
    double last_end;     /* the latest completion so far */
} sim_stream;

struct drv_sim {
    const drv_cluster_spec *cluster;
    const drv_workload *wl; /* the in-memory workload, or NULL in a streamed run (stream.src) */
    sim_stream stream;      /* a streamed run's sources and memory (all zero otherwise) */
    int32_t njobs;          /* jobs of the run: wl->n, or stream.src->jobs */
    drv_res biggest;        /* per dimension the largest node: a pod that does not fit is refused */
    const drv_catalogue *cat;
    drv_sim_config cfg;
    drv_state st;
    drv_sched *sched;
    char policy[64]; /* the profile's name: the profile itself is read only while running */
    bool periodic;   /* the profile has time-driven points */
    bool gang;
    double period;

    event *heap;
    int32_t nheap, cap_heap;
    uint64_t seq;
    int32_t *cons_map;             /* workload constraint id -> the state's (drv_workload.cons) */
    int8_t topo_map[DRV_MAX_TOPO]; /* workload topology level -> the state's (drv_workload.topo) */
    int32_t *arrivals;             /* jobs in (submit, id) order */
    int32_t next_arrival;          /* the first of them not in the heap yet */
    double now;
    bool cycle_pending;
    bool quiet;       /* nothing changed since the last cycle run, and it decided nothing */
    bool interrupted; /* cfg.stop was seen set: the run ended before its last event */
    double wake;      /* the scheduler's drv_sched_wake after that cycle */
    bool blind;       /* and its drv_sched_starts_blind: a job starting is no change for it */
    double last_tick; /* time of the last periodic cycle, run or skipped */
    double next_tick; /* time of the cycle event pending (cycle_pending) */

    jobsim *js; /* per job, in js_pages: released with the job */
    drv_pages js_pages;
    drv_jobresult *res;   /* per job, kept for the report: the compact O(trace) part */
    int32_t *pod_base;    /* per job: its first pod slot (slots are laid out in workload order) */
    job_names *names;     /* per job */
    drv_calib_jobs model; /* calibrated runs (cfg.calib): each job's model and batch; the
                             snapshot's model handle */
    drv_decisions dec;
    uint32_t cycle_no;
    int32_t *touched;
    int32_t ntouched, cap_touched;
    int32_t *runl; /* jobs in phase RUNNING, in no particular order */
    int32_t nrun;

    /* accounting */
    int32_t live;        /* submitted, not done */
    int32_t running;     /* STARTING, RUNNING or RESTARTING */
    drv_res held_useful; /* held by jobs whose gang is complete */
    drv_res held_wasted; /* held by PENDING jobs (incomplete gangs) */
    double last_t;
    double area_cpu_used, area_cpu_useful, area_gpu_used, area_gpu_useful;
    drv_res capacity;
    int64_t skipped; /* quiet cycles skipped */
    int64_t events, cycles, decisions, preemptions, migrations, restarts, scales, resizes;
    bool lost_modelled; /* some job has a checkpoint interval (drv_jobspec.checkpoint_s) */
    double lost_gpu_s, lost_cpu_s; /* work lost since last checkpoints: GPU-s, CPU core-s */
    drv_tick *ticks;
    int32_t nticks, cap_ticks;
    /* placement log (cfg.placements only): intervals, and per pod the open interval or -1 */
    drv_placement *pl;
    int32_t npl, cap_pl;
    int32_t *pl_open;
    int32_t cap_open;
    /* queues (sim_queues.c), only when the cluster file declares some: else qidx is NULL,
     * the state has no queue and nothing below is touched */
    int32_t *qidx;                       /* per job: its queue, an id of st.queues */
    int32_t qshow[DRV_MAX_QUEUES];       /* the queues reported, as ids of st.queues: the file's
                                            order, then the default queue when jobs are in it */
    int32_t nqshow;                      /* their number */
    double q_share_area[DRV_MAX_QUEUES]; /* per id of st.queues: the integral over time of its
                                            dominant share of the cluster */
    double q_quota_area[DRV_MAX_QUEUES]; /* ... and of its use of its nominal quota */
    bool sync_failed;                    /* a sample could not be drawn (out of memory) */
    bool pl_failed; /* an allocation for the log failed; the run stops with DRV_ENOMEM */
    int32_t ndone;  /* jobs finished (for progress reports) */
    /* jobs running at t0 (sim_running.c): per interned name (st.names) the node of that name,
     * -1 for other names; built at the first such job, NULL otherwise */
    int32_t *node_of_name;
    int32_t nnode_of_name;
    /* terminating pods (sim_grace.c), only with cluster->timing.grace > 0: a FIFO of ghosts,
     * the released ones before ghost_head, and per node what its ghosts hold (NULL until the
     * first ghost) */
    sim_ghost *ghosts;
    int32_t nghosts, cap_ghosts, ghost_head;
    drv_res *ghost_room;
    bool ghost_failed;  /* a ghost could not be recorded (out of memory) */
    int32_t *bound_now; /* pods bound by this cycle's decisions (only with a grace) */
    int32_t nbound_now, cap_bound_now;
    /* GPU types (sim_metrics.c; cluster->gpu_types only, ngtypes 0 otherwise): the types of the
     * GPU nodes in order of first appearance, and per type its GPUs, the GPUs bound pods hold on
     * it now and their integral over time (what drv_summary.gpu_type reports) */
    int32_t ngtypes;
    int32_t gtype_id[DRV_MAX_GPU_TYPES]; /* the type's interned name (st.names); 0: no type */
    int64_t gtype_cap[DRV_MAX_GPU_TYPES], gtype_held[DRV_MAX_GPU_TYPES];
    double gtype_area[DRV_MAX_GPU_TYPES];
};

/* ---- shared helpers ----------------------------------------------------------------------- */

static inline bool is_useful_phase(int phase)
{
    return phase == DRV_JOB_STARTING || phase == DRV_JOB_RUNNING || phase == DRV_JOB_RESTARTING;
}

static inline drv_res *bucket(drv_sim *s, int32_t job)
{
    return is_useful_phase(s->st.jobs[job].phase) ? &s->held_useful : &s->held_wasted;
}

/* Job i's spec: the workload's entry, or a streamed run's copy (valid while it is live). */
static inline const drv_jobspec *sim_spec(const drv_sim *s, int32_t i)
{
    return s->wl ? &s->wl->jobs[i] : &s->stream.spec[s->stream.slot[i]];
}

/* Something changed (an arrival, a start, a completion): no skipping until a cycle has looked
 * at the change. */
static inline void disturb(drv_sim *s)
{
    s->quiet = false;
}

/* The jobs' calibrations (calib.h) in a calibrated run (cfg.calib), else NULL: what
 * drv_sim_model gives, read here by the simulator's own files. */
static inline const drv_calib_jobs *sim_model(const drv_sim *s)
{
    return s->cfg.calib ? &s->model : NULL;
}

/* sim_events.c: the event heap, popped in (t, seq) order. sim_push_seq pushes with a sequence
 * number of the caller's (job i's arrival has i), sim_push_event with the next one; both 0 or
 * DRV_ENOMEM. sim_pop_event takes the first event (the heap is not empty). sim_push_tick pushes
 * the cycle event at t (cycle_pending, next_tick); sim_request_cycle asks for one at the next
 * multiple of the period unless one is pending. */
int sim_push_seq(drv_sim *s, double t, uint64_t seq, int kind, int32_t job, uint32_t gen);
int sim_push_event(drv_sim *s, double t, int kind, int32_t job, uint32_t gen);
event sim_pop_event(drv_sim *s);
int sim_push_tick(drv_sim *s, double t);
int sim_request_cycle(drv_sim *s);

/* sim_metrics.c: utilisation areas up to t; the time series after an event; the placement
 * log's intervals (cfg.placements only). */
void sim_integrate(drv_sim *s, double t);
int sim_record_tick(drv_sim *s);
void sim_log_bind(drv_sim *s, int32_t pod, int32_t node);
void sim_log_unbind(drv_sim *s, int32_t pod);
/* The GPU types of the state's nodes (after their labels are set): ngtypes and the capacities;
 * nothing without cluster->gpu_types. 0, or DRV_EINVAL (d says) beyond DRV_MAX_GPU_TYPES. */
int sim_gpu_types_init(drv_sim *s, drv_diag *d);
/* A pod of job holding gpu GPUs bound to node (sign 1) or unbound (-1): its type's GPUs held,
 * and on a bind the job's result row's type. O(types); nothing without types or GPUs. */
void sim_gpu_types_hold(drv_sim *s, int32_t job, int32_t node, int64_t gpu, int sign);

/* sim_queues.c: the cluster file's queues into the state and each job's queue (errors for a
 * queue not declared or a gang above its queue's ceiling), their shares integrated over dt
 * (before time moves on, as sim_integrate), and their part of the summary over span seconds. */
int sim_add_queues(drv_sim *s, drv_diag *d);
void sim_queues_integrate(drv_sim *s, double dt);
void sim_queues_summary(const drv_sim *s, drv_summary *o, double span);

/* sim_progress.c */
void sim_set_phase(drv_sim *s, int32_t job, int phase);
void sim_bind(drv_sim *s, int32_t pod, int32_t node);
/* sim_unbind: the pod is removed, and terminates for the grace (timing.grace) when there is
 * one; sim_unbind_as(.., false): gone at once (a bind undone in the cycle that made it). */
void sim_unbind(drv_sim *s, int32_t pod);
void sim_unbind_as(drv_sim *s, int32_t pod, bool terminates);
const drv_family *sim_family(const drv_sim *s, int32_t job);
void sim_progress_at(drv_sim *s, int32_t job);
void sim_steps_hook(void *arg, int32_t job);
void sim_advance(drv_sim *s, int32_t job);
int sim_sample(drv_sim *s, int32_t job);
int sim_sync(drv_sim *s, int32_t job);
void sim_sync_hook(void *arg, int32_t job);
bool sim_calibrated(const drv_sim *s, int32_t job);
/* Refuses a calibrated run whose jobs' models have no profile for a node's GPU type (without
 * cfg.calib_type_fallback), naming model, type and node. 0 or DRV_ENOENT / DRV_ENOMEM. */
int sim_check_calib_types(const drv_sim *s, const drv_workload *w, drv_diag *d);
int sim_reschedule(drv_sim *s, int32_t job);
/* At its arrival (t0), a job of the workload that already runs (drv_jobspec.running): its pods
 * bound to the nodes named, RUNNING since its startedAt, its progress done or estimated
 * (sim_running.c). Nothing for other jobs. 0, DRV_EINVAL (a node the cluster does not have, d
 * naming the file and line) or DRV_ENOMEM. */
int sim_start_running(drv_sim *s, int32_t job, drv_diag *d);

/* sim_grace.c: a removed pod's room on node and use of queue (-1: none) held for the grace
 * (drv_timing.grace), released by the EV_RELEASE event it pushes (the oldest ghost first); the
 * release asks for a cycle while jobs are live (0 or DRV_ENOMEM). Out of memory while adding
 * sets ghost_failed: the run stops with DRV_ENOMEM after the event. */
void sim_ghost_add(drv_sim *s, int32_t node, int32_t queue, drv_res req);
int sim_ghost_release(drv_sim *s);
void sim_ghost_free(drv_sim *s);
/* Whether binding pod to node now would put it into room terminating pods still hold: the
 * node's, or its queue's quota (and borrowing limit) in a dimension where the queue holds some.
 * A policy decided as if that room were free (a victim and its claimant in one cycle): the bind
 * waits, the pod stays pending, and a cycle after the release binds it. False without ghosts. */
bool sim_ghost_blocks(const drv_sim *s, int32_t pod, int32_t node);
/* Binds pod to node unless sim_ghost_blocks: then stamps its job blocked (js.blocked) and binds
 * nothing. With a grace, a bind made is listed in bound_now. 0 or DRV_ENOMEM. */
int sim_ghost_bind(drv_sim *s, int32_t pod, int32_t node);
/* After a cycle's decisions: a job with a bind that waited and whose gang is now incomplete
 * gives back all it holds - the pods bound this cycle at once, its others terminating - so no
 * gang is left half placed; it waits, pending, for a later cycle. 0 (nothing to fail). */
void sim_ghost_settle(drv_sim *s, const int32_t *touched, int32_t ntouched);

/* sim_apply.c */
int sim_run_cycle(drv_sim *s, drv_diag *d);

#endif
