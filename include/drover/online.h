/*
 * online.h - a data-parallel job's throughput model learnt online from its own measurements,
 * as Pollux's agent learns it (Qiao et al., OSDI'21, section 3.2): no profile is read, only the
 * step times of the configurations the job has actually run. online.c holds the algorithm.
 *
 * Model (Pollux's): a step of local (per-replica) batch `atomic` with `accum` extra
 * accumulation passes on `replicas` GPUs over `nodes` nodes takes
 *   T = accum * T_grad + (T_grad^gamma + T_sync^gamma)^(1/gamma),
 *   T_grad = ac + bc * atomic,
 *   T_sync = 0 (one replica) | ar + br * (replicas - 2) (one node) | an + bn * (replicas - 2).
 * Until it has seen a kind of configuration, its terms are 0 (Pollux's fixed lower bounds):
 * the prior is a linear speed-up. Before its first multi-node measurement the inter-node terms
 * are at least `inter_prior` (Pollux: 1.1) times the intra-node ones: crossing nodes is taken
 * to cost more than staying on one, never to be free once a node's sync cost is known.
 * Where it has measured a shape (nodes, replicas), its prediction is the model's scaled by the
 * measured / modelled step time of its measurement there nearest in per-replica batch: the
 * model interpolates between measurements, and at one it has it says what was measured.
 *
 * Ownership: a drv_online_job is caller-owned (drv_online_job_init / _fini); it owns its
 * sample array. Not thread-safe; one per job.
 */
#ifndef DROVER_ONLINE_H
#define DROVER_ONLINE_H

#include "drover/base.h"
#include "drover/calib.h"

/* The fitted parameters (seconds; gamma in [1, 10]). */
typedef struct drv_online_params {
    double ac, bc, ar, br, an, bn, gamma;
} drv_online_params;

typedef struct drv_online_job {
    drv_calib_sample *obs; /* distinct configurations seen (nodes, replicas, atomic, accum), the
                              newest measurement of each; at most DRV_ONLINE_MAXOBS */
    int32_t nobs, cap;
    int32_t most;       /* most replicas it has run on (0: none yet) */
    uint32_t version;   /* +1 at every refit: a cache of its predictions is valid while equal */
    double inter_prior; /* before any multi-node measurement an >= inter_prior * ar and
                           bn >= inter_prior * br (0: no bound); DRV_ONLINE_INTER_PRIOR from
                           init, the caller may set it before the first observation */
    bool residual;      /* predictions at a shape it has measured (nodes, replicas) scaled to
                           the measurement there of the nearest per-replica batch (init: true) */
    drv_online_params p;
} drv_online_job;

enum { DRV_ONLINE_MAXOBS = 64 };
#define DRV_ONLINE_INTER_PRIOR 1.1 /* Pollux's (adaptdl goodput.py, fit_perf_params) */

void drv_online_job_init(drv_online_job *o);
void drv_online_job_fini(drv_online_job *o);
/* Records one measurement of the configuration the job runs now and refits when it is new or
 * its time changed. 0, DRV_EINVAL (no replicas, a non-positive time), or DRV_ENOMEM (then o is
 * unchanged). Beyond DRV_ONLINE_MAXOBS configurations the oldest is forgotten. */
int drv_online_observe(drv_online_job *o, const drv_calib_sample *s);
/* Predicted seconds per global step (with `residual`, the measured one at a measured
 * configuration); 0 when replicas < 1. O(measurements). */
double drv_online_step(const drv_online_job *o, int32_t nodes, int32_t replicas, double atomic,
                       int32_t accum);

/* Gradient statistics measured at the job's current batch in its current epoch: the gain of a
 * step at any batch B is estimated from them alone (Pollux's E(M) extrapolation). */
typedef struct drv_online_grad {
    double sqr, var, init_bsz;
} drv_online_grad;
double drv_online_gain(const drv_online_grad *g, double batch);

/* The trend of a job's gradient noise scale phi = var / sqr over its epochs, learnt from the
 * statistics it measured at each epoch it reached: the smoothed slope of log phi per epoch and
 * its speed in epochs per second. A batch (and the GPUs that go with it) chosen at a round is
 * kept until the next, and phi grows as training goes on, so the choice is made for the noise
 * anticipated `ahead` seconds on; Pollux's jobs re-choose at every epoch boundary instead. */
typedef struct drv_online_noise {
    int32_t epoch; /* epoch of the last observation (-1: none) */
    double lphi;   /* log phi then */
    double at;     /* the time then (seconds) */
    double slope;  /* d log phi / d epoch: the last change, halved into the previous (0: none) */
    double rate;   /* epochs per second between the last two observations */
} drv_online_noise;
void drv_online_noise_init(drv_online_noise *n);
/* Records g (measured in `epoch`, at time `now`) when the epoch is new, and returns the
 * variance anticipated `ahead` seconds on: g->var * exp(min(slope * rate * ahead, 1)) while
 * phi grows, g->var when it does not, when ahead <= 0 (then nothing is recorded) or before
 * two epochs were seen. An epoch below the last one starts the trend again. */
double drv_online_noise_ahead(drv_online_noise *n, const drv_online_grad *g, int32_t epoch,
                              double now, double ahead);

/* The batch of highest estimated goodput (gain / predicted step time) on `replicas` GPUs over
 * `nodes` nodes within [lo, hi], every replica at least app->min_local_bsz; 0 when none; its
 * goodput into *goodput. Tries at most DRV_ONLINE_CANDS batches. */
enum { DRV_ONLINE_CANDS = 48 };
double drv_online_best_batch(const drv_online_job *o, const drv_calib_app *app,
                             const drv_online_grad *g, int32_t nodes, int32_t replicas, double lo,
                             double hi, double *goodput);

#endif
