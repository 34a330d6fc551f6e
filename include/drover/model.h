/*
 * model.h - how fast a training job runs where it is placed, and how its loss falls.
 *
 * Performance. A synchronous data-parallel step of a job with W workers (the chief counts as a
 * worker) takes  step = compute + exchange,  where
 *   compute  = max over workers of  c · req_cpu / cpu_i   (CPU jobs; c on GPU jobs), with cpu_i
 *              the CPU the worker actually gets: its limit, scaled down when the limits on its
 *              node add up to more than the node has;
 *   exchange = with parameter servers: max over PS p of  Σ_w (2·S/P) / bw(w, p)  — every worker
 *              pushes gradients and pulls parameters of size S, sharded over P servers, through
 *              the server's link; bw is intra-node bandwidth when w and p share a node, else
 *              inter-node;
 *              without PS (all-reduce): 2·(W−1)/W · S / bw + 2·(N−1)·hop, with N the nodes
 *              spanned, bw intra-node when N = 1 else inter-node, hop a per-node latency.
 * Progress is counted in worker-steps (one worker's mini-batch), so a job's rate is W / step.
 *
 * Convergence. Loss after k worker-steps follows  l(k) = 1/(β0·k + β1) + β2  (Optimus' fit);
 * observed samples carry a small seeded multiplicative noise. A job ends when l(k) reaches its
 * target loss or k its step budget, whichever comes first.
 *
 * The catalogue of model families (data/models.csv, compiled in) holds c, S and β per family;
 * its values are illustrative until calibrated (docs/model.md).
 */
#ifndef DROVER_MODEL_H
#define DROVER_MODEL_H

#include "drover/state.h"

typedef struct drv_family {
    char name[32];
    char kind[16];    /* cnn, rnn, ... (documentation only) */
    double compute_s; /* seconds per worker-step at the worker's CPU request (or per GPU) */
    double model_mb;  /* parameter / gradient size exchanged per step, MB */
    double beta0, beta1, beta2; /* loss curve l(k) = 1/(beta0*k + beta1) + beta2 */
    double target_loss;         /* default convergence target */
    double noise;               /* relative standard deviation of observed loss */
} drv_family;

typedef struct drv_catalogue {
    drv_family *v;
    int32_t n, cap;
} drv_catalogue;

/* Network and contention parameters of a cluster. */
typedef struct drv_netparams {
    double intra_MBps; /* worker<->PS or ring bandwidth inside a node, MB/s */
    double inter_MBps; /* across nodes, MB/s */
    double hop_s;      /* all-reduce latency per node spanned, seconds */
} drv_netparams;

/* Defaults, documented in docs/model.md. */
#define DRV_DEF_INTRA_MBPS 10000.0 /* shared memory / loopback */
#define DRV_DEF_INTER_MBPS 1250.0  /* 10 Gbit/s Ethernet */
#define DRV_DEF_HOP_S 0.005

/* Parses a catalogue in CSV (header line, '#' comments); errors name file:line:column. */
int drv_catalogue_parse(drv_catalogue *cat, const char *name, const char *text, drv_diag *d);
int drv_catalogue_load(drv_catalogue *cat, const char *path, drv_diag *d);
/* The catalogue compiled into the binary (data/models.csv at build time). */
int drv_catalogue_builtin(drv_catalogue *cat, drv_diag *d);
void drv_catalogue_fini(drv_catalogue *cat);
/* Index of a family by name, or -1. */
int32_t drv_catalogue_find(const drv_catalogue *cat, const char *name);

/* Loss after k worker-steps (noise-free). */
double drv_loss(const drv_family *f, double k);
/* Worker-steps needed to reach loss target; INFINITY when the curve never gets there. */
double drv_steps_to_loss(const drv_family *f, double target);
/* Observed loss at k for sample number i of job `job`: deterministic noise from (seed, job, i). */
double drv_loss_observed(const drv_family *f, double k, uint64_t seed, int32_t job, int64_t i);

/* Breakdown of one step of a job as placed in st. */
typedef struct drv_step {
    double compute;  /* seconds */
    double exchange; /* seconds */
    double total;    /* compute + exchange */
    int32_t workers; /* workers computing (bound worker + chief pods) */
    double rate;     /* worker-steps per second; 0 when the job cannot run */
} drv_step;

/*
 * Step time of job as currently placed in st (only bound pods count). A job with no bound
 * worker or chief, or whose PS are not all bound, has rate 0.
 */
drv_step drv_model_step(const drv_family *f, const drv_netparams *net, const drv_state *st,
                        int32_t job);
/* CPU a pod actually gets on its node (millicores), given every limit there. */
double drv_model_pod_cpu(const drv_state *st, int32_t pod);

#endif
