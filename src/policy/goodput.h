/*
 * goodput.h - what the files of the goodput plugin share: its state, what a round knows of a
 * job, and the steps each file implements. goodput.c is the plugin (its knobs, rounds, order,
 * placement and batches, and the design note), goodput_model.c a job's goodput on n GPUs (from
 * its online model, or the measured profiles for the oracle), goodput_alloc.c who gets how
 * many GPUs. Internal to src/policy.
 */
#ifndef DROVER_POLICY_GOODPUT_H
#define DROVER_POLICY_GOODPUT_H

#include "drover/calib.h"
#include "drover/online.h"
#include "drover/policy.h"

/* Most workers a job may get; most nodes a placement is read over; most GPU types a job keeps
 * a throughput fit of (further types share the last: goodput_types.c). */
enum { GOODPUT_MAXW = 64, GOODPUT_MAXNODES = 256, GOODPUT_FITS = 4 };

/* Best batch and goodput of (model, n GPUs packed, epoch); batch 0 until computed. */
typedef struct cell {
    double batch, goodput;
} cell;

/* Candidate batches on n GPUs and their step times (the expensive part, epoch-free). */
typedef struct cands {
    double *batch, *step;
    int32_t n; /* how many; computed when batch is allocated */
} cands;

typedef struct table {
    cell *v;                      /* [(GOODPUT_MAXW + 1) * max_epochs] */
    cands cand[GOODPUT_MAXW + 1]; /* per n */
    double lo, hi;
} table;

typedef struct goodput {
    double p, penalty, rebatch, threshold, factor;
    int32_t queues;
    double explore, interval;
    bool oracle, batch_restart;
    double inter_prior, delay;
    bool fair_base;
    int32_t first;
    bool compact, residual;
    double ahead;
    bool types;       /* knob `types`: type and count per job on a typed cluster */
    bool fits;        /* knob `fits`: one online fit per GPU type a job ran on */
    int32_t move;     /* knob `move`: 1 a job's type re-chosen on what the greedy left, 2 also a
                         job holding GPUs (a restart), 0 neither */
    double bootstrap; /* knob `bootstrap`: seconds of a one-GPU profile per type */
    int32_t solver;   /* knob `solver`: with types, 0 greedy and moves, 1 Sia's integer program
                         (goodput_ilp.c), 2 the program then the greedy on the GPUs it left */
    double ilp_p;     /* knob `ilp_p`: the program's fairness exponent (< 0: cost value^p) */
    double lambda_n;  /* knob `lambda_n`: the program's cost of a job left without GPUs */
    double lambda_a;  /* knob `lambda_a`: the program's added cost of a change of allocation */
    const drv_calib *calib; /* the one the tables were built from */
    int32_t gpn;            /* GPUs per node the packed shapes assume */
    table *tab;             /* per model */
    int32_t ntab;
    uint32_t ran; /* cycle the pass last ran in, +1 (0: never) */
    /* per job id: what its last re-batch check saw (the same again gives the same answer), and
     * the most workers it has run with */
    struct seen {
        int32_t epoch, restarts, have;
        double batch;
        int32_t most;
        uint32_t ver;           /* the model version that check saw */
        drv_online_noise noise; /* its gradient noise's trend over epochs (`ahead`) */
        /* its throughput as learnt from its own measurements (oracle=0): ol[k] from what it ran
         * on GPU type ol_type[k] (interned; 0 untyped, -1 unused slot); slot 0 alone when
         * type-blind (`fits=0`) or on a cluster of one type */
        drv_online_job ol[GOODPUT_FITS];
        int32_t ol_type[GOODPUT_FITS];
    } * seen;
    int32_t cap_seen;
} goodput;

/* What the pass knows of one of our jobs. */
typedef struct gjob {
    int32_t id, epoch;
    const drv_calib_job *cj; /* its calibration: model, batch and range (calib.h) */
    int32_t level;           /* LAS queue */
    int32_t have;            /* workers bound now */
    int32_t minw;            /* fewest workers it runs with (its minimum, at least 1) */
    int32_t nmax;            /* most workers it may get */
    int32_t want;            /* workers allocated */
    int32_t had;             /* workers bound when the round began */
    bool placed;             /* released and placed again this round */
    int32_t cap;             /* most workers its batch range and spec allow (explore aside) */
    bool running;            /* holds its GPUs (starting, running or restarting) */
    double base;             /* G at the speed-up's reference (its minimum or fair share) */
    double price;            /* what its speed-up is multiplied by at a changed allocation */
    drv_online_grad grad;    /* gradient statistics at its current batch (oracle=0) */
    int32_t top;             /* most workers the allocation may give it (<= nmax) */
    double *u;               /* u[n]: its utility at n workers, minw <= n <= top */
    double submit;
    int32_t type;              /* with GPU types (goodput_types.c): the type (interned) its GPUs
                                  are or will be on; -1: none yet, or the cluster has one type */
    int32_t now_type;          /* the type its bound GPUs are on (-1: none bound, or untyped) */
    bool moved;                /* it holds GPUs of one type and was given another this round */
    const drv_online_job *fit; /* the fit its goodput is read from (no samples: the prior) */
    double fscale; /* its goodput there times this: the bootstrap ratio of one-GPU speeds when
                      the fit is another type's (1 on its own) */
    int32_t gpn;   /* GPUs per node of its type (g->gpn untyped): how n GPUs pack */
} gjob;

/* goodput_model.c */
/* n GPUs packed on the fewest nodes of per GPUs each, into gpn; returns the node count. */
int32_t goodput_packed(int32_t n, int32_t per, int32_t *gpn);
/* The oracle's tables: per model of this calibration, for this cluster's GPUs per node (rebuilt
 * when either changes). False when there are none to plan with. */
bool goodput_ready_tables(const drv_ctx *c, goodput *g, const drv_calib *calib);
void goodput_drop_tables(goodput *g);
/* Job x's goodput on n GPUs packed on the fewest nodes (its best batch's). */
double goodput_of(goodput *g, const gjob *x, int32_t n);
/* The best batch for job x on the placement gpn[0..nn) (0: none, or online before its first
 * measurement, which keeps its batch); its goodput into *gp. */
double goodput_best_batch(goodput *g, const gjob *x, const int32_t *gpn, int32_t nn, double *gp);
/* Online: job x's predicted goodput at its current batch on `replicas` GPUs over `nodes`. */
double goodput_now(const goodput *g, const gjob *x, int32_t nodes, int32_t replicas);
/* What job j's speed-up is multiplied by at an allocation other than its current one. */
double goodput_change_price(const goodput *g, const drv_job *j, double now);

/* goodput_alloc.c */
/* The speed-up's reference of each job (x->base): its fair share, or its minimum. */
void goodput_fair_bases(goodput *g, gjob *v, int32_t n, int64_t gpus);
/* Sets v[i].want for v in LAS order, with `gpus` GPUs: 0 or DRV_ENOMEM. */
int goodput_allocate(goodput *g, drv_ctx *c, gjob *v, int32_t n, int64_t gpus);
/* 3b over pools: jobs with want > 0 grow greedily, job i's GPUs from left[pool[i]] (pool NULL:
 * one pool, left[0]). 0 or DRV_ENOMEM. */
int goodput_grow_pooled(goodput *g, drv_ctx *c, gjob *v, int32_t n, const int32_t *pool,
                        int64_t *left);

/* goodput_types.c */
/* Job x's fit slot for GPU type `type` (interned, 0 untyped) in g->seen[x->id], created when
 * missing (with `fits=0`, or beyond GOODPUT_FITS types: slot 0). */
drv_online_job *goodput_fit_slot(goodput *g, int32_t job, int32_t type);
/* The fit job's goodput is read from off a typed allocation: its current type's (now_type, -1
 * none bound), or holding none the one of most samples; slot 0 when type-blind. */
drv_online_job *goodput_home_fit(goodput *g, int32_t job, int32_t now_type);
/* The GPU type (interned) job's bound workers are on, -1 when none is bound. */
int32_t goodput_job_type(const drv_ctx *c, int32_t job);
/* As goodput_allocate, on a cluster of two or more GPU types: each job a type (v[i].type) and
 * a count of that type's GPUs; goodput_allocate itself on one type. 0 or DRV_ENOMEM. */
int goodput_types_allocate(goodput *g, drv_ctx *c, gjob *v, int32_t n, int64_t gpus);
/* goodput_ilp.c */
/* One candidate configuration of a job for the integer program. */
typedef struct goodput_cand {
    int32_t job;  /* the job's index among the program's (0 .. njobs) */
    int32_t pool; /* the GPU type (pool index, 0 .. npools) its GPUs are drawn from */
    int32_t k;    /* GPUs */
    double cost;  /* its term of the objective (minimised) when chosen */
} goodput_cand;
/* Sia's integer program: at most one candidate per job, each pool's GPUs within cap[], the sum
 * of the chosen costs plus `none` per job without one minimal; pick[j] = index into cand of
 * job j's, -1 none. 0, DRV_ENOMEM, or DRV_EINVAL when GLPK finds no optimum. */
int goodput_ilp_solve(const goodput_cand *cand, int32_t ncand, int32_t njobs, const int64_t *cap,
                      int32_t npools, double none, int32_t *pick);

/* Whether job x's workers may go to node (its chosen type's, or any without types). */
int32_t goodput_types_node_ok(const drv_ctx *c, const gjob *x, int32_t node);

#endif
