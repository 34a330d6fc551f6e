/*
 * calib.h - the calibrated performance model: measured step times of data-parallel GPU jobs
 * (the Pollux artifact's profiles, data/pollux/profiles/<model>/) and the statistical
 * efficiency of their batch sizes, used instead of the analytic model for jobs of those
 * models. docs/data.md describes the files and the mechanics; calibrate.c the algorithm.
 *
 * Units. A calibrated job counts progress in global steps (one optimiser step of its whole
 * batch, accumulation included), not worker-steps: it needs drv_calib_steps() of them and does
 * 1 / drv_calib_step_time() per second where it is placed.
 */
#ifndef DROVER_CALIB_H
#define DROVER_CALIB_H

#include "drover/base.h"

/* One measured point: a placement (or node/replica counts) at a per-replica batch size. */
typedef struct drv_calib_point {
    int32_t placement; /* GPUs per node as digits, rotation-normalised (44 = 2 nodes x 4); 0 for
                          scalability rows */
    int32_t nodes, replicas;
    double local_bsz;
    double step, sync; /* seconds per step; the part spent synchronising */
} drv_calib_point;

/* One validation curve: per epoch at one total batch size. */
typedef struct drv_calib_curve {
    double batch;
    int32_t n;
    double *progress, *grad_sqr, *grad_var;
} drv_calib_curve;

typedef struct drv_calib_app {
    char name[32];
    char type[32]; /* GPU type of placements-TYPE.csv; "" for the model's placements.csv */
    int32_t base;  /* index of the model's untyped entry (itself for it); a typed entry shares
                      its validation curves (owned by the base) */
    bool no_base;  /* base entry only: the model has no placements.csv, its points are those of
                      its first type (by name), type_first; a node without a type may use them
                      only when the run allows fallback (drv_calib_for_type) */
    char type_first[32];
    double slowdown;     /* every step and sync time multiplied by this (1: as measured) */
    drv_calib_point *pl; /* placements.csv rows, in file order */
    int32_t npl;
    drv_calib_point *sc; /* scalability.csv rows */
    int32_t nsc;
    drv_calib_curve *cv; /* validation curves, ascending batch */
    int32_t ncv;
    double init_bsz, max_bsz;            /* smallest and largest validated batch */
    double min_local_bsz, max_local_bsz; /* range measured (or the simulator's setting) */
    int32_t max_epochs;                  /* the job is complete after this many epochs */
} drv_calib_app;

typedef struct drv_calib {
    drv_calib_app *v; /* [0, n): one untyped entry per model; [n, nall): per-type entries */
    int32_t n, nall;
} drv_calib;

/* Loads every model of the Pollux simulator from dir (dir/<model>/...); errors name
 * file:line:column and field. Per GPU type (Sia's layout, issue 27): dir/<model>/
 * placements-TYPE.csv (and scalability-TYPE.csv when present) beside placements.csv, each an
 * entry of its own (index >= n) sharing the model's validation curves; placements.csv may then
 * be missing (no_base). */
int drv_calib_load(drv_calib *c, const char *dir, drv_diag *d);
/* The entry whose step times a job of model `app` (< n) has on GPU type `type` (NULL or "":
 * untyped): its per-type entry; else, with `fallback`, the model's placements.csv (its base,
 * when it has one); else -1 (the caller names model and type). */
int32_t drv_calib_for_type(const drv_calib *c, int32_t app, const char *type, bool fallback);
/* Multiplies every step and sync time of model `name` (every type) by factor (> 0): Sia's
 * SLOWDOWNS, fitted to its testbed. 0, DRV_ENOENT (no such model) or DRV_EINVAL. */
int drv_calib_set_slowdown(drv_calib *c, const char *name, double factor);
/* Parses "model=factor,..." into c (drv_calib_set_slowdown each): 0 or an error naming the
 * item. */
int drv_calib_parse_slowdowns(drv_calib *c, const char *spec, drv_diag *d);
void drv_calib_fini(drv_calib *c);
/* Index of a model by name, or -1. */
int32_t drv_calib_find(const drv_calib *c, const char *name);

/*
 * Seconds per global step of app at total batch `batch` on a placement given as GPUs per node
 * (gpn[0..nn), zeros ignored): measured time when the placement was profiled (linear in the
 * per-replica batch between measured sizes), else interpolated over nodes, replicas and batch.
 * Gradient accumulation as the Pollux simulator does it when batch / replicas exceeds the
 * largest measured local batch. Returns a positive time, or 0 when nn or replicas is 0.
 */
double drv_calib_step_time(const drv_calib *c, int32_t app, const int32_t *gpn, int32_t nn,
                           double batch);
/* Global steps a job of app at total batch `batch` needs to reach the end of its validation
 * curve (each epoch's progress divided by the batch's statistical gain in that epoch). */
double drv_calib_steps(const drv_calib *c, int32_t app, double batch);

/*
 * Batch size (docs/data.md). Progress is counted in units of the smallest validated batch's
 * steps: a global step at total batch B in epoch e gains drv_calib_gain(B, e) of them, and
 * epoch e ends at a fixed progress. So a job's progress does not depend on the batches it was
 * trained at, and its steps left at a new batch follow from it.
 */
/* Progress per global step at total batch `batch` in epoch `epoch`:
 * (var + sqr) / (var / (batch / B0) + sqr) from that epoch's gradient statistics. */
double drv_calib_gain(const drv_calib *c, int32_t app, double batch, int32_t epoch);
/* Progress after `steps` global steps at `batch` from the start, and its inverse. */
double drv_calib_progress(const drv_calib *c, int32_t app, double batch, double steps);
double drv_calib_steps_to(const drv_calib *c, int32_t app, double batch, double progress);
/* The epoch (0 .. max_epochs - 1) a progress falls in. */
int32_t drv_calib_epoch(const drv_calib *c, int32_t app, double progress);
/* Goodput (Pollux): progress per second = gain(batch, epoch) / step time of the placement. */
double drv_calib_goodput(const drv_calib *c, int32_t app, const int32_t *gpn, int32_t nn,
                         double batch, int32_t epoch);
/* One measurement a running job makes of its own configuration (what Pollux's agent reports):
 * valid when replicas > 0. */
typedef struct drv_calib_sample {
    int32_t nodes, replicas;
    double atomic;  /* per-replica batch of one pass */
    int32_t accum;  /* extra gradient-accumulation passes per step */
    double compute; /* seconds of one pass without synchronising (T_grad) */
    double sync;    /* seconds spent synchronising at the step's last pass */
    double step;    /* seconds per global step: accum * compute + the synchronised pass */
} drv_calib_sample;
/* The framework's split of a total batch on `replicas` GPUs (AdaptDL's, as the Pollux simulator
 * does it): extra accumulation passes when the per-replica batch exceeds the largest local
 * batch (at least one for one replica above the initial batch), and the batch of one pass. */
void drv_calib_split(const drv_calib_app *a, int32_t replicas, double batch, double *atomic,
                     int32_t *accum);
/* The measurement a job of app running at total batch `batch` on placement gpn[0..nn) would
 * make (the same lookup as drv_calib_step_time, which equals out->step). 0, or DRV_EINVAL when
 * no replica is placed. */
int drv_calib_measure(const drv_calib *c, int32_t app, const int32_t *gpn, int32_t nn, double batch,
                      drv_calib_sample *out);
/* Gradient statistics of app at total batch `batch` in epoch `epoch` (what a job training at
 * that batch measures): squared norm and variance, per the validation curves. */
void drv_calib_grad(const drv_calib *c, int32_t app, double batch, int32_t epoch, double *sqr,
                    double *var);
enum { DRV_CALIB_MAXCAND = 384 };
/* The batches worth trying on a placement within [lo, hi] (see calibrate.c), ascending, with
 * their step times: into batch[] and step[] (DRV_CALIB_MAXCAND each); returns how many (0 when
 * no batch in range gives each replica at least the smallest measured local batch). */
int32_t drv_calib_batches(const drv_calib *c, int32_t app, const int32_t *gpn, int32_t nn,
                          double lo, double hi, double *batch, double *step);
/* The candidate batch of highest goodput on the placement in that epoch (0 when none), its
 * goodput into *goodput (may be NULL). */
double drv_calib_best_batch(const drv_calib *c, int32_t app, const int32_t *gpn, int32_t nn,
                            int32_t epoch, double lo, double hi, double *goodput);

/* ---- what the calibrated model knows of a run's jobs ---------------------------------------
 *
 * The core's job records hold no model (docs/cycle.md): a driver that runs calibrated jobs keeps
 * their calibration here - which measured model each follows, its total batch now and the
 * range a policy may set it in - and hands it to plugins through the snapshot's model handle
 * (drv_snapshot.model). Plugins read it through the functions below; only the driver writes
 * it (a job's record when the job is submitted, its batch when a BATCH decision is applied,
 * its measurement `seen` when it runs a configuration, nlive_adaptive when a job enters or
 * leaves the live set).
 */
typedef struct drv_calib_job {
    int32_t app;                  /* 1 + index of its model in calib, 0: not calibrated */
    int32_t batch;                /* its total batch size now */
    int32_t batch_min, batch_max; /* the range a policy may set it in (DRV_BATCH); equal when
                                     the batch is fixed */
    drv_calib_sample seen;        /* the job's own measurement of the configuration it runs
                                     (or last ran); replicas 0 until it has run. The only step
                                     time an online policy may read (online.h) */
} drv_calib_job;

typedef struct drv_calib_jobs {
    const drv_calib *calib; /* the measured models (borrowed) */
    drv_calib_job *v;       /* per job id, [0, n) */
    int32_t n;
    int32_t nlive_adaptive; /* live jobs that are batch-adaptive: lets a plugin for them cost
                               nothing where there are none */
} drv_calib_jobs;

/* Records for njobs jobs, none calibrated yet. 0 or DRV_ENOMEM. */
int drv_calib_jobs_init(drv_calib_jobs *m, const drv_calib *calib, int32_t njobs);
void drv_calib_jobs_fini(drv_calib_jobs *m);

/* The job's record when it is calibrated, else NULL (also when m is NULL). */
static inline const drv_calib_job *drv_calib_job_of(const drv_calib_jobs *m, int32_t job)
{
    return m && job >= 0 && job < m->n && m->v[job].app > 0 ? &m->v[job] : NULL;
}

/* A calibrated job whose batch a policy may choose (DRV_BATCH), within [batch_min, batch_max]. */
static inline bool drv_calib_job_adaptive(const drv_calib_jobs *m, int32_t job)
{
    const drv_calib_job *j = drv_calib_job_of(m, job);
    return j && j->batch_max > j->batch_min;
}

/* The analytic throughput model fitted to an app's placements (least squares, see
 * calibrate.c): step = ac + bc*local_bsz + (one node ? ar + br*replicas : an + bn*replicas). */
typedef struct drv_calib_fit {
    double ac, bc, ar, br, an, bn;
    double rms_rel; /* root-mean-square relative error over the measured points */
    double max_rel; /* largest relative error */
    int32_t points;
} drv_calib_fit;
int drv_calib_fit_app(const drv_calib *c, int32_t app, drv_calib_fit *out);
/* The fitted model's step time for (nodes, replicas, local batch). */
double drv_calib_fit_step(const drv_calib_fit *f, int32_t nodes, int32_t replicas,
                          double local_bsz);

#endif
