/*
 * sim.h - the trace-driven discrete-event simulator: its inputs (cluster, workload), its run,
 * and its results. File formats are specified in docs/formats.md.
 *
 * Determinism: a run is a pure function of (cluster, workload, profile, catalogue, seed);
 * the same inputs give byte-identical results.
 */
#ifndef DROVER_SIM_H
#define DROVER_SIM_H

#include "drover/cycle.h"
#include "drover/file.h"
#include "drover/model.h"

#include <stdatomic.h>

/* ---- inputs ------------------------------------------------------------------------------- */

/* The longest node name (a cluster file's entry name of at most 39 bytes, with "-<k>" of its
 * count: at most 46 in practice). */
#define DRV_NODE_NAME_MAX 63

typedef struct drv_nodespec {
    char name[DRV_NODE_NAME_MAX + 1];
    char zone[32];
    char rack[32];
    drv_res alloc;
    int32_t node_class; /* its labels and taints: drv_cluster_spec.classes, 0 for none */
    bool unschedulable; /* spec.unschedulable: no pod is placed there */
} drv_nodespec;

typedef struct drv_timing {
    double pod_start; /* seconds from a complete gang to running */
    double restart;   /* checkpoint-restart pause after a scale or migration, seconds */
    double horizon;   /* simulated seconds after which the run stops */
    double grace;     /* seconds a removed pod keeps its node room and its queue's use while it
                         terminates (timing.terminationGraceSeconds; 0: released at once) */
} drv_timing;

#define DRV_DEF_POD_START 5.0
#define DRV_DEF_RESTART 30.0
#define DRV_DEF_HORIZON (90.0 * 86400.0)

/*
 * A queue of the cluster file (`queues:`, docs/formats.md "Queues"): Kueue's ClusterQueue in
 * Kueue's spelling (nominalQuota, borrowingLimit, cohort) with Volcano's weight. Cohorts are
 * flat (a name shared by queues; no cohort of cohorts, so no cycle can arise).
 */
#define DRV_MAX_QUEUES 32 /* queues of a run, the default queue included (drv_summary.queue) */

typedef struct drv_queuespec {
    char name[32];
    char cohort[32]; /* "" when in no cohort */
    double weight;   /* fair-share weight, > 0 */
    drv_res quota;   /* nominalQuota; DRV_UNLIMITED where not given */
    drv_res borrow;  /* borrowingLimit; DRV_UNLIMITED where not given in a cohort, 0 outside one */
    double min_runtime; /* minRuntimeSeconds: no preemption victim younger; 0: none */
    int32_t line;       /* its line in the cluster file, for messages */
} drv_queuespec;

#define DRV_TOPO_KEY_MAX 127 /* the longest topology level (a label key) in a file */

typedef struct drv_cluster_spec {
    drv_nodespec *nodes;
    int32_t n, cap;
    drv_netparams net;
    drv_timing timing;
    drv_strtab *names;      /* the strings of classes, or NULL when there are none */
    drv_nodeclass *classes; /* labels and taints of nodes; [0] is empty (unused) */
    int32_t nclasses, cap_classes;
    drv_queuespec *queues; /* the file's queues (nqueues 0: none declared, every job's queue
                              name then means the default queue) */
    int32_t nqueues;
    char queue_file[256]; /* the cluster file's path when it declares queues, for messages */
    bool gpu_types;       /* some node group has a gpuType (its label DRV_GPU_TYPE_LABEL) */
    /* `topology:` (state.h, "Topology-bound gangs"): node label keys, widest first. */
    char topo[DRV_MAX_TOPO][DRV_TOPO_KEY_MAX + 1];
    int32_t ntopo;
} drv_cluster_spec;

/* The longest name of a job, a user, a queue, in bytes (the name rule of text.h: a longer one
 * is refused where it is read, never cut). */
#define DRV_JOB_NAME_MAX 63
#define DRV_USER_NAME_MAX 31
#define DRV_QUEUE_NAME_MAX 31

typedef struct drv_jobspec {
    char name[DRV_JOB_NAME_MAX + 1];
    char user[DRV_USER_NAME_MAX + 1];
    char queue[DRV_QUEUE_NAME_MAX + 1];
    int32_t priority;      /* priority class value */
    double min_runtime;    /* minRuntimeSeconds: its priority class's minimum run time (on
                              Kubernetes drover.dev/min-runtime-seconds): no preemption victim
                              before it has run that long since it last started; 0: none */
    int32_t user_priority; /* the user's priority */
    double submit;         /* seconds */
    int32_t model;         /* index into the catalogue */
    drv_rolespec role[DRV_NROLES];
    int32_t cons[DRV_NROLES]; /* per role, its node constraints: drv_workload.cons, 0: none */
    double target_loss;       /* the job ends when its loss reaches this */
    double max_steps;         /* ... or when it has done this many worker-steps */
    int32_t calib_app; /* 1 + index of its model in the calibrated profiles (drv_sim_config.calib);
                          0: the analytic model. Calibrated jobs count global steps (calib.h) */
    double batch;      /* total batch size of a calibrated job */
    double batch_min, batch_max; /* the range a policy may choose its batch in (DRV_BATCH);
                                    0, 0: the batch is fixed */
    double checkpoint_s; /* checkpointSeconds: it checkpoints every this many seconds of running
                            (and when it starts): preempted, scaled or migrated, it loses what it
                            did since its last checkpoint; 0 (the default): nothing is lost */
    int32_t line;        /* its line in the file it was read from, for messages; 0: generated */
    int8_t topo_mode;    /* `topology:` (enum drv_topo_mode), DRV_TOPO_NONE when not given */
    int8_t topo_level;   /* with a mode: its level, an index of drv_workload.topo */
    int32_t running;     /* 1 + its index in drv_workload.running when it already runs at t0 (a
                            snapshot of a live cluster, docs/what-if.md); 0: it is submitted */
} drv_jobspec;

/*
 * A job already running when the run starts (`drover snapshot` writes them; the workload
 * fields startedAt, runningOn and doneSteps, docs/formats.md "Running jobs"): the simulator
 * binds its pods to the nodes named at t0, without the pod-start pause, and counts the time
 * it has run (its minRuntimeSeconds age, its start in the results).
 */
typedef struct drv_runspec {
    double started_at; /* seconds, <= 0: when it started, before t0 */
    double done_steps; /* worker-steps done by t0; < 0 unknown: estimated (sim_running.c) */
    int32_t first, n;  /* its pods' nodes: drv_workload.runpods[first, first + n) */
    int32_t line;      /* the line of its runningOn, for messages */
} drv_runspec;

typedef struct drv_runpod {
    int32_t role; /* enum drv_role */
    char node[DRV_NODE_NAME_MAX + 1];
} drv_runpod;

typedef struct drv_workload {
    drv_jobspec *jobs;
    int32_t n, cap;
    drv_strtab *names;    /* the strings of cons, or NULL when there are none */
    drv_constraint *cons; /* roles' node constraints; [0] is empty (unused) */
    int32_t ncons, cap_cons;
    char topo[DRV_MAX_TOPO][DRV_TOPO_KEY_MAX + 1]; /* the topology levels jobs name */
    int32_t ntopo;
    char file[256];       /* the file the jobs were read from, for messages ("" when generated) */
    drv_runspec *running; /* jobs running at t0 (drv_jobspec.running), NULL when none */
    int32_t nrunning, cap_running;
    drv_runpod *runpods; /* their pods' roles and nodes */
    int32_t nrunpods, cap_runpods;
} drv_workload;

/* At most this many families may have a step cap in one generator (`generate.maxSteps`). */
enum { DRV_GEN_MAX_CAPS = 16 };

/* Parameters of the synthetic workload generator (the default scenario, `generate:`). */
typedef struct drv_genparams {
    int32_t jobs;             /* how many */
    double mean_interarrival; /* seconds between Poisson arrivals */
    uint64_t seed;
    /* Per model family, the worker-steps at which its jobs end if their loss target is not
     * reached first (a listed job's maxSteps): family index into the catalogue, steps. None in
     * the default scenario. */
    struct {
        int32_t family;
        double steps;
    } caps[DRV_GEN_MAX_CAPS];
    int32_t ncaps;
} drv_genparams;

void drv_cluster_default(drv_cluster_spec *c); /* 8 nodes x 32 CPU x 128 GiB, 2 racks */
int drv_cluster_load(drv_cluster_spec *c, const char *path, drv_diag *d);
/* A homogeneous cluster of n nodes (for tests and benchmarks). */
int drv_cluster_uniform(drv_cluster_spec *c, int32_t n, drv_res alloc);
void drv_cluster_fini(drv_cluster_spec *c);

/* The built-in scenario's jobs: 60 PS jobs, Poisson arrivals every 60 s on average. */
void drv_genparams_default(drv_genparams *g, uint64_t seed);
int drv_workload_generate(drv_workload *w, const drv_genparams *g, const drv_catalogue *cat,
                          drv_diag *d);
int drv_workload_load(drv_workload *w, const char *path, const drv_catalogue *cat, uint64_t seed,
                      drv_diag *d);
/* DRV_EINVAL, naming it, when one of the n input files (NULL entries skipped) lies directly in
 * the output directory out under a name a run writes there (outdir.c lists them), so the run
 * would overwrite its own input. 0 when out is NULL or does not exist yet. */
int drv_sim_check_out(const char *out, const char *const *inputs, int n, drv_diag *d);
void drv_workload_fini(drv_workload *w);

/* ---- a run -------------------------------------------------------------------------------- */

/* How far a run has got; passed to drv_sim_config.progress. */
typedef struct drv_progress {
    int32_t done, jobs; /* jobs finished, jobs in the workload */
    double now;         /* simulated seconds */
    int64_t events;     /* events processed so far */
    double horizon;     /* the run ends here at the latest (the cluster's timing.horizon), even
                           with jobs unfinished: how far it is, is the larger of done / jobs
                           and now / horizon */
} drv_progress;

/* Called from inside drv_sim_run; must not touch the simulation. */
typedef void (*drv_progress_fn)(void *arg, const drv_progress *p);

#define DRV_PROGRESS_EVERY 1024 /* events between two progress calls */

struct drv_jobresult;
/* Called with a job's result row when it finishes, and at the end of drv_sim_run for each job
 * submitted but not finished; spec and r are borrowed for the call. A streamed run keeps no
 * row (drv_sim_jobs is empty): this is where its per-job results go. */
typedef void (*drv_finished_fn)(void *arg, int32_t job, const struct drv_jobspec *spec,
                                const struct drv_jobresult *r);

typedef struct drv_sim_config {
    uint64_t seed;   /* loss-sample noise */
    bool check;      /* run the invariant checker after every cycle; a violation stops the run */
    bool tick;       /* run a cycle every period while jobs are live, even when nothing changed
                        and no plugin could decide differently (how time-stepped simulators
                        work; a benchmark baseline, and the reference a run that skips quiet
                        cycles must match job for job) */
    bool placements; /* record the placement log (drv_sim_placements); off costs nothing */
    drv_progress_fn progress; /* NULL, or called every DRV_PROGRESS_EVERY events and at the end;
                                 the simulator reads no clock, the callback may */
    void *progress_arg;
    const struct drv_calib *calib; /* measured profiles for jobs with calib_app (may be NULL) */
    const struct drv_calib *policy_calib; /* the profiles plugins are handed (drv_snapshot.model;
                                             NULL: calib). A test hands a poisoned copy to show
                                             what a policy reads; the run uses calib */
    bool calib_type_fallback;  /* a GPU type a model has no placements-TYPE.csv for runs at its
                                  placements.csv; false: drv_sim_new refuses the run, naming
                                  model and type (calib.h, drv_calib_for_type) */
    const char *workload_file; /* the file the jobs were read from, named with their line in
                                  messages about a job (borrowed; NULL: none) */
    drv_finished_fn finished;  /* NULL, or told each job's result row (see above) */
    void *finished_arg;
    /* NULL, or a flag another thread or a signal handler may set (to non-zero) to end the run
     * early: it stops before its next event, as at the horizon, and drv_summary.interrupted
     * says so. The only way a run's results can depend on anything but its inputs. */
    const atomic_int *stop;
} drv_sim_config;

/* One interval during which a pod was bound to a node (the placement log). */
typedef struct drv_placement {
    int32_t job, pod, role, node; /* job and pod ids, enum drv_role, node id (drv_sim_state) */
    double start, end;            /* seconds; end is -1 while still bound when the run ended */
    int32_t index;                /* replica index within its role (the pod's drv_pod.index) */
} drv_placement;

/* What happened to one job. Times in seconds; -1 when it never started / never finished. */
typedef struct drv_jobresult {
    double submit, start, end;
    int32_t restarts, migrations, preemptions;
    int32_t workers;  /* workers when it last ran */
    int32_t gpu_type; /* on a cluster with GPU types: 1 + the index (drv_sim_gpu_type_name) of
                         the type its GPU pods were last bound to (a job that moved types: the
                         last); 0 when it never held a GPU or the cluster has no types */
} drv_jobresult;

/*
 * GPU types (issue 27): a cluster's GPU nodes grouped by their gpuType, in order of first
 * appearance in the cluster file; GPU nodes without one (on a cluster where others have one)
 * form the type "-". Only a cluster with types has them (drv_summary.ngpu_types 0 otherwise,
 * and every output is as without them).
 */
#define DRV_MAX_GPU_TYPES 16

typedef struct drv_gpu_type_summary {
    char name[32]; /* the type's name, "-" for GPU nodes without one */
    int64_t gpus;  /* GPUs of its nodes */
    double util;   /* GPU-seconds held by pods on its nodes / (gpus x the window gpu_util is
                      averaged over); the types' utils weighted by gpus sum to gpu_util */
} drv_gpu_type_summary;

/*
 * One queue's results (sim_queues.c). Shares are time averages over the window utilisation is
 * averaged over (first submission to last completion, or to the end of an unfinished run).
 */
typedef struct drv_queue_summary {
    char name[32];
    double weight;
    int32_t jobs, done;
    double avg_jct;   /* over its finished jobs, seconds; NaN when none finished */
    double avg_wait;  /* queueing delay, submission to first run, over its started jobs; NaN */
    double share;     /* time-average dominant share of the cluster its bound pods held (DRF:
                         the largest of cpu, memory and gpu as a fraction of the cluster's) */
    double quota_use; /* time-average of its use of its nominal quota (the largest used/quota
                         over the dimensions with a finite quota > 0); NaN when it has none */
    double usage;     /* its decayed dominant share at the end of the run (fair share over time,
                         usage.h: what the fairshare order read last); valid when the summary's
                         half_life is > 0 */
} drv_queue_summary;

typedef struct drv_summary {
    char policy[64];
    int32_t jobs, done;
    double avg_jct, p50_jct, p95_jct, p99_jct; /* over finished jobs */
    double makespan;                           /* first submission to last completion */
    double avg_wait;                           /* submission to first run, over jobs that started */
    double cpu_util, cpu_useful, cpu_wasted;   /* fractions of CPU capacity over the makespan */
    double gpu_util, gpu_useful, gpu_wasted;   /* same for GPUs (0 when there are none) */
    int64_t preemptions, migrations, restarts, scales, resizes;
    /* Work lost to preemptions, scalings and migrations (the time since each job's last
     * checkpoint, times what it held): GPU-hours and CPU core-hours. Valid when lost_modelled
     * (some job has a checkpointSeconds); else nothing is shown of it. */
    bool lost_modelled;
    double lost_gpu_h, lost_cpu_h;
    int64_t cycles, events, decisions;
    int64_t skipped;  /* quiet cycles skipped (they would have decided nothing) */
    int32_t stuck;    /* jobs that never finished */
    double stuck_cpu; /* fraction of CPU capacity they held when the run ended */
    double end;       /* simulated time of the last event, seconds */
    bool interrupted; /* the run was stopped (drv_sim_config.stop) before its end: jobs not
                         finished by `end` count as unfinished */
    /* Queues and fairness: only when the cluster file declares queues (nqueues 0 otherwise,
     * and every output is as without them). */
    int32_t nqueues;  /* the declared queues, then the default queue when jobs are in it */
    double half_life; /* the profile's half-life of decayed usage, seconds; 0: "now only", and
                         no queue's usage is shown */
    drv_queue_summary queue[DRV_MAX_QUEUES];
    double jain_share;  /* Jain's index over the weighted shares (share / weight) of the queues
                           with jobs; 1: shares exactly in proportion to weights */
    double ftf_max;     /* finish-time fairness (Themis, Gavel): the largest rho over finished
                           jobs, rho = JCT / T_isolated (drv_ftf_rho); > 1: worse than alone on
                           its tenant's slice of the cluster */
    double ftf_jain;    /* Jain's index over the finished jobs' rho */
    int32_t ngpu_types; /* GPU types of the cluster (0: it has none) */
    drv_gpu_type_summary gpu_type[DRV_MAX_GPU_TYPES]; /* their utilisation, in type order */
} drv_summary;

/*
 * Jain's fairness index of x[0..n): (sum x)^2 / (n * sum x^2), from 1/n (one gets all) to 1
 * (all equal). NaN when n is 0; 1 when every x is 0 (all equal).
 */
double drv_jain_index(const double *x, int32_t n);
/*
 * Finish-time fairness of one finished job (Themis, NSDI'20; Gavel, OSDI'20): rho =
 * T_shared / T_isolated, where T_shared is its JCT and T_isolated estimates its JCT alone on
 * 1/ntenants of the cluster: its run time as simulated (first start to end), stretched by
 * ntenants * dshare when its dominant share dshare of the cluster (at its requested size) is
 * more than that slice holds (linear speed-up assumed): T_isolated = run * max(1, ntenants *
 * dshare). NaN when run <= 0.
 */
double drv_ftf_rho(double jct, double run, double dshare, int32_t ntenants);

/* A point of the cluster's time series (recorded when a run is asked to). */
typedef struct drv_tick {
    double t;
    double cpu_used, cpu_useful; /* millicores */
    double gpu_used, gpu_useful;
    int32_t pending, running;
} drv_tick;

typedef struct drv_sim drv_sim;

/* Creates a run; the cluster, workload and catalogue are borrowed and must outlive it; the
 * profile is borrowed by its scheduler (drv_sched_new) and must stay alive while the run does
 * (drv_sim_run, drv_sim_run_until); results and drv_sim_free do not read it. */
int drv_sim_new(const drv_cluster_spec *c, const drv_workload *w, const drv_catalogue *cat,
                const drv_profile *prof, const drv_sim_config *cfg, drv_sim **out, drv_diag *d);
/*
 * The same with jobs read from src as the clock reaches them (jobsource.h; src borrowed, read
 * by drv_sim_run, must outlive the run): no workload, no result rows, specs only of the jobs
 * in flight. Other per-job memory goes back as jobs finish, an 8 KiB page at a time once every
 * job on it finished (pages.h): it follows the jobs submitted within the longest job's
 * lifetime rather than the trace.
 * Each finished job's row goes to cfg->finished and is forgotten; the summary keeps 16 bytes
 * per finished job, so that it is the one of the in-memory run of the same jobs, bit for bit.
 * It keeps no time series (drv_sim_ticks is empty: it grows with the trace, ~150 bytes per
 * job). Not supported yet (DRV_EINVAL): a cluster declaring queues, jobs with node constraints
 * (an error when such a job is read), drv_sim_workload (NULL), the placement log, and reports
 * (drv_report_run_files). A job out of order, one that fits no node or a bad row of the
 * source stops drv_sim_run with the error, naming file:line.
 */
struct drv_jobsource;
int drv_sim_new_stream(const drv_cluster_spec *c, struct drv_jobsource *src,
                       const drv_catalogue *cat, const drv_profile *prof, const drv_sim_config *cfg,
                       drv_sim **out, drv_diag *d);
void drv_sim_free(drv_sim *s);
/* Runs to the end. Returns 0, DRV_EINVARIANT (check on; d says what broke) or DRV_ENOMEM. */
int drv_sim_run(drv_sim *s, drv_diag *d);
/*
 * Processes the events before time t (a cycle due exactly at t has not run yet), so a caller
 * can look at drv_sim_state mid-run; drv_sim_run continues from there. Same return codes.
 */
int drv_sim_run_until(drv_sim *s, double t, drv_diag *d);
/* Results, valid after drv_sim_run. drv_sim_jobs: one row per job of the workload; NULL and
 * *n 0 in a streamed run (its rows went to drv_sim_config.finished). */
void drv_sim_summary(const drv_sim *s, drv_summary *out);
const drv_jobresult *drv_sim_jobs(const drv_sim *s, int32_t *n);
const drv_tick *drv_sim_ticks(const drv_sim *s, int32_t *n);
/* The placement log in order of binding; NULL unless drv_sim_config.placements was set. */
const drv_placement *drv_sim_placements(const drv_sim *s, int32_t *n);
/* The cluster state. A finished job is released (drv_state_release_job) once its result row
 * is written: read finished jobs through drv_sim_jobs and drv_sim_workload, not here. */
const drv_state *drv_sim_state(const drv_sim *s);
/* Enters a job not submitted yet into drv_sim_state as it will be until its submission (phase
 * DRV_JOB_FUTURE), so that it can be looked at before (`drover sim --explain` at its
 * submission time); a job enters the state only at its submission otherwise. Changes no
 * result. 0, DRV_EINVAL (no such job) or DRV_ENOMEM. */
int drv_sim_enter_job(drv_sim *s, int32_t job);
/* The workload the simulator was created with: job i of drv_sim_jobs is its jobs[i]; NULL in
 * a streamed run. */
const drv_workload *drv_sim_workload(const drv_sim *s);
/* Name of the profile the run uses. */
const char *drv_sim_policy(const drv_sim *s);
/* The name of GPU type k (1-based, as drv_jobresult.gpu_type; "-" for GPU nodes without a type),
 * or NULL when the run has no such type. */
const char *drv_sim_gpu_type_name(const drv_sim *s, int32_t k);
/* What the calibrated model knows of the run's jobs (their model, batch and batch range;
 * calib.h), or NULL when the run has no calibration (drv_sim_config.calib). */
const struct drv_calib_jobs *drv_sim_model(const drv_sim *s);

/* ---- reports (report.c) ------------------------------------------------------------------- */

#include <stdio.h>

/*
 * Whether runs are reported GPU-first: some run held GPUs (gpu_util > 0). The table, the page
 * and the utilisation plot then show GPU utilisation, CPU beside it.
 */
bool drv_report_gpu_first(const drv_summary *v, int n);
/* The first run before run i whose every figure of the table equals run i's, or -1: the table
 * and the page say so under the table ("Equal rows" in docs/policies.md). */
int32_t drv_report_same_as(const drv_summary *v, int n, int32_t i);
/* The comparison table a person reads: one row per run, durations in minutes, utilisation of
 * GPUs then CPU on a GPU cluster (CPU only otherwise), and under it notes and a legend. */
void drv_report_table(FILE *f, const drv_summary *v, int n);
/* The same as JSON (seconds, fractions) and CSV (one header line). Deterministic output. */
int drv_report_json(FILE *f, const drv_summary *v, int n);
void drv_report_csv(FILE *f, const drv_summary *v, int n);

#define DRV_REPORT_MAX_INPUTS 8

/*
 * What a run's files say beyond the simulator's results (all borrowed, every field may be
 * NULL/0): model names for jobs-<policy>.csv, and for summary.json the provenance of the runs —
 * the seed, each run's full profile line and the input files with their SHA-256.
 */
typedef struct drv_report_meta {
    const drv_catalogue *cat;      /* names of jobs' models (NULL: the model index is written) */
    const struct drv_calib *calib; /* names of calibrated models (drv_jobspec.calib_app) */
    uint64_t seed;
    const drv_profile *profiles; /* profiles[i] is the profile of summary i (NULL: not written) */
    struct {
        const char *role; /* "trace", "workload", "cluster", "models", "profiles", ... */
        const char *path; /* NULL: not given (built in) */
    } inputs[DRV_REPORT_MAX_INPUTS];
    int ninputs;
} drv_report_meta;

/*
 * Writes a run's per-job CSV (jobs-<policy>.csv) and time series (timeline-<policy>.csv) into
 * dir. Each file is written under a temporary name and renamed, so a failed run leaves no
 * half-written file. meta may be NULL (model indices instead of names).
 */
int drv_report_run_files(const char *dir, const drv_sim *s, const drv_report_meta *meta,
                         drv_diag *d);
/*
 * The rows of jobs-<policy>.csv one at a time, for a caller that writes them as jobs finish
 * (`drover sim --stream`, a streamed run's drv_sim_config.finished): the header line, then one
 * job's line from its spec and result row. queues adds a column (the job's queue), as
 * drv_report_run_files does when the cluster declares queues; gpu_types the last (gpu_type, the
 * GPU type it last ran on), when the cluster has GPU types. The row's gpu_type is the name
 * drv_report_job_gpu_type gives, NULL when the cluster has no types. meta may be NULL.
 */
void drv_report_jobs_header(FILE *f, bool queues, bool gpu_types);
void drv_report_job_row(FILE *f, const drv_jobspec *j, const drv_jobresult *r,
                        const drv_report_meta *meta, bool queues, const char *gpu_type);
/* The gpu_type cell of job row r of run s: its type's name, "" when it held no GPU, NULL when
 * the cluster has no GPU types (no column). */
const char *drv_report_job_gpu_type(const drv_sim *s, const drv_jobresult *r);
/*
 * Writes summary.json and summary.csv into dir, the same way. With meta, every summary.json
 * record also holds drover_version, seed, profile (its full line) and inputs (role, path,
 * sha256); an input that cannot be read is an error naming it.
 */
int drv_report_summary_files(const char *dir, const drv_summary *v, int n,
                             const drv_report_meta *meta, drv_diag *d);
/* SHA-256 of a file's bytes as 64 lowercase hex digits in out[65]; DRV_ENOENT/DRV_EIO. */
int drv_report_sha256_file(const char *path, char out[65], drv_diag *d);

/* What was simulated, for the report page and the utilisation plot (scenario.json). */
typedef struct drv_scenario {
    char desc[512]; /* one line a person reads, e.g. "60 jobs on 8 nodes (built-in ...)" */
    int32_t jobs, nodes;
    double cpu_m, gpu; /* cluster capacity: millicores, GPUs */
    uint64_t seed;
} drv_scenario;

int drv_report_scenario_file(const char *dir, const drv_scenario *sc, drv_diag *d);

/* ---- reading a report directory back (report_read.c) --------------------------------------- */

/*
 * A minimal CSV reader for the files above: comma-separated, no quoting, a header line naming
 * the columns. The caller names the columns it wants; the header may hold more, in any order.
 * Errors name path:line and what was expected.
 */
#define DRV_CSV_MAXCOLS 64

typedef struct drv_csv {
    drv_lines in;                 /* the file (in.path, and in.line: the row last read, 1 =
                                     header), bounded by DRV_MAX_REPORT_BYTES; its line buffer
                                     is split in place */
    char *field[DRV_CSV_MAXCOLS]; /* fields of the current row */
    int32_t nfield, ncols;        /* fields in this row, columns in the header */
    int32_t col[DRV_CSV_MAXCOLS]; /* header index of each wanted column */
    const char *const *want;
    int32_t nwant;
} drv_csv;

/* The largest file of an --out directory `drover report` reads: 4 GiB (a placement log of a
 * 100,000-job trace is about 500 MB). */
#define DRV_MAX_REPORT_BYTES (4ULL << 30)
/* ... and the largest JSON file of one (summary.json, scenario.json): 16 MiB. */
#define DRV_MAX_REPORT_JSON (16ULL << 20)

/* Opens path and checks its header has every wanted column. DRV_ENOENT if it does not exist. */
int drv_csv_open(drv_csv *c, const char *path, const char *const *want, int32_t nwant, drv_diag *d);
/* Reads the next row: 1, 0 at the end, or DRV_EPARSE/DRV_EIO/DRV_ENOMEM. */
int drv_csv_next(drv_csv *c, drv_diag *d);
/* The current row's value of wanted column k (borrowed until the next call). */
const char *drv_csv_get(const drv_csv *c, int32_t k);
/* Parses wanted column k as a number; an empty cell gives -1 when empty_ok, else an error. */
int drv_csv_num(const drv_csv *c, int32_t k, bool empty_ok, double *out, drv_diag *d);
void drv_csv_close(drv_csv *c);

/* One policy's run as read back from jobs-, timeline- and placements-<policy>.csv. */
typedef struct drv_report_run {
    int32_t jobs;      /* rows in jobs-<policy>.csv */
    char **job_names;  /* [jobs]: each row's job name */
    int32_t *job_user; /* [jobs]: each row's user, an index into users */
    char **users;      /* distinct users in order of first appearance */
    int32_t nusers;
    double *jct; /* JCTs of finished jobs, seconds, ascending */
    int32_t njct;
    drv_tick *ticks; /* the time series */
    int32_t nticks;
    drv_placement *pl; /* job = row in jobs csv, node = index into nodes; pod/role unused */
    int32_t npl;
    bool has_pl;  /* placements-<policy>.csv exists */
    char **nodes; /* node names, in natural order (node-2 before node-10) */
    int32_t nnodes;
} drv_report_run;

/* summary-seeds.json (`drover sim --seeds A-B --out DIR`), read back for the page's "Over
 * seeds" table. Metrics, in order: avg_jct_s, p95_jct_s, makespan_s, done. */
enum { DRV_SEEDS_NMETRICS = 4 };
typedef struct drv_seeds_row {
    char policy[64];
    double mean[DRV_SEEDS_NMETRICS], ci95[DRV_SEEDS_NMETRICS]; /* over the seeds */
    bool has_diff;                                             /* false for the baseline */
    double diff, diff_ci95; /* paired difference of avg_jct_s against the baseline, seconds */
    int32_t lower;          /* seeds on which avg_jct_s was below the baseline's */
} drv_seeds_row;
typedef struct drv_report_seeds {
    bool has;       /* the file was there and well formed */
    char msg[512];  /* why it was not used, when it was there but malformed ("" otherwise) */
    char seeds[96]; /* "1-10" or "1, 4, 9" */
    int32_t nseeds;
    char commit[48], baseline[64];
    bool dirty;
    char command[1024]; /* the words joined by spaces */
    drv_seeds_row *rows;
    int32_t n;
} drv_report_seeds;

typedef struct drv_report_data {
    drv_report_seeds seeds; /* summary-seeds.json, when present */
    drv_summary *sum;       /* summary.json, one per policy, in its order */
    drv_report_run *runs;
    int32_t n;
    drv_scenario scen;
    bool has_scen; /* scenario.json was there */
} drv_report_data;

/* Reads dir's files. Errors name the file, the line and what was expected. */
int drv_report_load(drv_report_data *r, const char *dir, drv_diag *d);
void drv_report_data_fini(drv_report_data *r);
/* Reads dir/summary-seeds.json into *s when it is there. Never fails the report: a malformed
 * file leaves s->has false and s->msg naming the file and the field. */
void drv_report_seeds_load(drv_report_seeds *s, const char *dir);

/* ---- plots and the report page (plot.c) ---------------------------------------------------- */

#define DRV_GANTT_MAX_JOBS 200            /* a run with more jobs gets no Gantt chart ... */
#define DRV_GANTT_MAX_NODES 200           /* ... nor one on more nodes (rows would be unreadable) */
#define DRV_REPORT_BASELINE "k8s-default" /* the baseline, when it is among the policies */

/*
 * Renders the plots (SVG and PNG) into dir with gnuplot. Returns DRV_ENOENT when gnuplot is not
 * on PATH (nothing written), DRV_EIO when it failed; each plot appears complete or not at all.
 */
int drv_plot_render(const char *dir, const drv_report_data *r, drv_diag *d);
/* Whether a run can have a Gantt chart: it has a placement log, at most DRV_GANTT_MAX_JOBS jobs
 * and DRV_GANTT_MAX_NODES nodes. */
bool drv_plot_has_gantt(const drv_report_run *run);
/*
 * The runs a report shows in detail (Gantt charts, the page's open sections): the baseline is
 * DRV_REPORT_BASELINE when present, else the first policy; the best is, among the others, the
 * one that finished most jobs, then had the lowest mean JCT (the first on a tie). With one
 * policy both are 0.
 */
void drv_report_pick(const drv_report_data *r, int32_t *best, int32_t *baseline);
/* Whether run i gets a Gantt chart: it is the best or the baseline, and drv_plot_has_gantt. */
bool drv_plot_gantt_shown(const drv_report_data *r, int32_t i);
/* Writes dir/index.html: scenario, summary table and (when plots is true) the plots. */
int drv_report_html(const char *dir, const drv_report_data *r, bool plots, drv_diag *d);

#endif
