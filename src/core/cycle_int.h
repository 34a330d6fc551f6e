/*
 * cycle_int.h - the scheduler's private state, shared by the files of the cycle (internal to
 * core): cycle.c (lifecycle, the cycle's phases, collecting and ordering the queue),
 * cycle_decide.c (the decision list and the assumed overlay it keeps) and
 * cycle_place.c (filter, score, best node, gang placement).
 *
 * The cycle never changes the drv_state it is given. What its decisions would do is kept in an
 * "assumed" overlay (kube-scheduler calls this assume/reserve): per-node free resources copied
 * at the start of the cycle, and per-pod node / per-job worker overrides that are valid only
 * when their stamp equals the cycle's stamp, so starting a cycle costs O(nodes), not O(pods).
 * Every decision updates the overlay, and rolling back to a mark undoes decisions newest first.
 *
 * Two summaries make hopeless placements cheap: `maxfree`, an upper bound on each dimension
 * of any node's free resources (exact at the start of a cycle and after every full scan; taking
 * resources leaves it a valid bound, giving them back raises it), and `totfree`, the exact sum.
 * A pod larger than maxfree, or a gang larger than totfree, is rejected in O(1) instead of
 * scanning every node — in a saturated cluster with a long queue that is most attempts.
 * Third, the shapes of gangs that failed this cycle (pods missing per role and their requests)
 * are remembered until capacity is given back: a gang that needs at least as many pods, each at
 * least as large, in every role, fails the same way and is not tried; so is a job whose gang
 * failed the two summaries above at fewer workers (drv_ctx_gang_room). A gang its queue's quota
 * refuses (quota.c) is never remembered: quota is per queue, and it frees up without capacity
 * being given back.
 *
 * Worked example (gang, 2 nodes with 4 free CPUs each, a job of 1 PS + 2 workers of 3 CPUs):
 * PS -> node0 (free 1,4), worker -> node1 (free 1,1), next worker fits nowhere -> roll back both
 * binds; the decision list and the overlay are exactly as before the attempt.
 */
#ifndef DROVER_CYCLE_INT_H
#define DROVER_CYCLE_INT_H

#include "drover/cycle.h"
#include "nodeindex.h"

enum { MAX_FAILED = 32, MAX_ORDER = 64 /* groups of a family ordered by bound (search_family) */ };

/* What a gang still needs: pods missing per role, and each role's per-pod request. */
typedef struct gang_shape {
    int32_t missing[DRV_NROLES];
    drv_res req[DRV_NROLES];
    int32_t cons[DRV_NROLES]; /* each role's node constraints: only equal ones compare */
} gang_shape;

/* The distinct nodes, zones and racks of one job's placed pods, for indexed_best: kept from
 * one query to the next while the only change in between (drv_ctx_changes one higher) placed
 * the pod last asked about, so a gang's next pod adds at most one node instead of rereading
 * every pod of the job. */
typedef struct own_list {
    uint32_t cycle;   /* the cycle's stamp when valid; 0: empty (stamps count from 1) */
    uint64_t changes; /* drv_ctx_changes it reflects */
    int32_t job, pod; /* the job, and the pod last asked about */
    bool pod_free;    /* that pod was not placed */
    int32_t *node;    /* the nodes, marked node_seen == seen_tag; room for every node */
    int32_t n, cap;
    int32_t zones[16], racks[16], nz, nr;
    bool all_z, all_r; /* more than 16 zones / racks */
} own_list;

/* One family's groups of a label, and the summary drv_nodeindex_union gave for them, kept for
 * the next pods of the same request and constraints (search_family): the next pod of a gang
 * asks for the same racks and zones. Valid while drv_nodeindex_grown is unchanged: binds only
 * lower the groups' summaries, so the kept one still bounds them. */
typedef struct union_memo {
    uint64_t grown;     /* drv_nodeindex_grown when made; 0: empty (a build makes it >= 1) */
    int fam;            /* the family */
    int32_t label;      /* the label asked (-1: every group) */
    drv_res req;        /* the request */
    const int32_t *row; /* the pod's constraint row (cons_row), or NULL */
    const int32_t *g;   /* the groups (drv_nodeindex_with_label; NULL: 0..n-1) */
    int32_t n;          /* their number */
    int32_t fit;        /* what drv_nodeindex_union returned... */
    int32_t nodes;      /* ...and its *nodes, *row_max and *out */
    int32_t row_max;
    drv_node_set u;
} union_memo;

enum { UNION_MEMO = 16 }; /* entries; a pod asks about a few families and labels */

/* A queued job as the cycle orders it: with a lone keyed queue_order plugin, by key, then
 * submit time, then id, read from here - no call and no read of the job per comparison. */
typedef struct qent {
    double key, submit;
    int32_t job;
    bool has_pod;  /* every gang of the job with at least min(min, target) workers has a pod */
    drv_res least; /* per dimension, the least request of a pod of the job */
    /* The job's smallest gang, min(min, target) workers and every other role's target, with no
     * pod bound: what it needs in all (floor), and per dimension the largest request of its
     * pods (podmax). A larger gang of the job needs at least as much: when the floor exceeds
     * the free room of all nodes or podmax a node's, every gang of it fails the capacity
     * bounds (drv_ctx_queued_cannot_fit). */
    drv_res floor, podmax;
} qent;

typedef struct plugin_inst {
    const drv_plugin *p;
    void *state;
} plugin_inst;

struct drv_sched {
    const drv_profile *prof;                              /* borrowed (drv_sched_new) */
    plugin_inst inst[DRV_NPOINTS * DRV_MAX_SLOT_PLUGINS]; /* distinct plugins */
    int32_t ninst;
    void *ustate[DRV_NPOINTS][DRV_MAX_SLOT_PLUGINS]; /* state of each use's plugin */
    drv_arena arena;
    uint32_t stamp; /* cycle counter; overlay entries are valid when their stamp matches */
    drv_res *free;  /* assumed free resources per node */
    int32_t cap_free;
    int32_t cap_free_used;         /* nodes in free[] at the end of the last cycle */
    drv_res maxfree;               /* per-dimension upper bound of free[] over schedulable nodes */
    drv_res totfree;               /* sum of free[] over schedulable nodes */
    drv_nodeindex *ix;             /* best-node index, when the profile allows it (nodeindex.h) */
    bool use_ix;                   /* the profile allows it */
    bool ix_bb;                    /* branch and bound over score bounds, else best by key */
    bool ix_mixed;                 /* every score plugin bounds mixed sets (bound_mixed) */
    int ix_fam;                    /* families to build: 1, or 3 for branch and bound */
    drv_node_key_fn ix_key;        /* the keyed score plugin's key, or NULL */
    bool ix_ok;                    /* this cycle's index was built */
    bool exhaustive;               /* drv_sched_set_exhaustive: never use the index */
    int32_t ix_nodes;              /* nodes in the index (schedulable ones) */
    gang_shape failed[MAX_FAILED]; /* gangs that did not fit since capacity last grew */
    int32_t nfailed;
    bool rolling_back; /* give() during a rollback restores, it does not free capacity */
    int32_t *pod_node;
    uint32_t *pod_stamp;
    int32_t cap_pods;
    int32_t *job_workers;
    uint32_t *job_stamp;
    int32_t cap_jobs;
    uint32_t *job_touch; /* == stamp: some pod of the job changed node this cycle */
    int32_t cap_touch;
    uint32_t memo_epoch;       /* bumps whenever the failed-shape memo is cleared */
    uint32_t *job_fail_epoch;  /* memo_epoch + 1 when the job's gang last failed (0: never) */
    int32_t *job_fail_workers; /* at that many workers; -1 - workers when it failed the
                                * capacity bounds alone (gang_room), which then holds for
                                * every larger worker count too */
    bool room_marked;          /* some job is marked for the capacity bounds this epoch */
    uint32_t room_stamp;       /* the cycle's stamp when a job was so marked, and the length */
    int32_t room_dec;          /* of the decision list then (the largest): rolling back binds
                                * made before a mark gives back room the mark did not have */
    int32_t cap_fail;
    int32_t *nrole; /* per node and role (node * DRV_NROLES + role): pods, assumed state */
    int32_t cap_nrole;
    uint32_t *node_seen; /* per node: == seen_tag when in own.node */
    uint32_t seen_tag;
    int32_t cap_node_seen;
    own_list own;
    union_memo umemo[UNION_MEMO]; /* search_family's unions, by family, label and constraint */
    qent *order;                  /* the last cycle's queue, in order: this cycle starts from it */
    int32_t norder, cap_order;
    qent *order2; /* where a sort puts the records; then the two swap */
    int32_t cap_order2;
    bool order_keyed;  /* order[].key holds the keys of a lone keyed queue plugin */
    int32_t order_use; /* when order_keyed: that plugin's index among the queue_order uses */
    /* This cycle's queue_order chain: indices of the uses not idle (drv_plugin.queue_idle). */
    int32_t qo[DRV_MAX_SLOT_PLUGINS];
    int32_t nqo;
    uint64_t *inq;   /* a bit per job: set while the job has a record in order[0..norder) */
    int32_t cap_inq; /* words */
    double wake;     /* drv_sched_wake: computed at the end of each cycle */
    bool blind;      /* drv_sched_starts_blind: likewise */
    /* per chain position (qo) of a keyed queue_order plugin, per job: its key this cycle
     * (pending jobs only), asked once per job instead of once per comparison */
    double *qkey[DRV_MAX_SLOT_PLUGINS];
    int32_t cap_qkey[DRV_MAX_SLOT_PLUGINS];
    /* Node constraints (constraint.c): when the state has any (cons_on), cfit[cons * cfit_cls +
     * class] is the constraint score of class for constraint cons, or -1 when it does not fit;
     * computed for new constraints and classes at the start of a cycle (both are immutable). */
    bool cons_on;
    int32_t *cfit;
    int32_t cfit_cons, cfit_cls; /* the table's dimensions */
    int32_t cap_cfit;
    /* Queues: each queue's used resources as assumed by this cycle, copied from the state at
     * its start (O(queues)) and kept by set_pod_node as pods are bound, evicted and rolled
     * back; empty when the state has no queue. */
    drv_res *qused;
    int32_t cap_qused;
    /* Per node, what it admitted at the last cycle's start: its class times 2, plus 1 when
     * schedulable. A node that changes (labels, taints, a cordon lifted) may admit a gang that
     * failed before, so the failed-gang memo is cleared as when capacity grows. */
    int32_t *node_admits;
    int32_t cap_node_admits;
};

struct drv_ctx {
    drv_sched *s;
    const drv_snapshot *snap;
    drv_decisions *out;
    int32_t base;     /* out->n when the cycle started: rollback never goes below it */
    int err;          /* first allocation failure, reported by drv_sched_cycle */
    uint64_t changes; /* drv_ctx_changes */
};

/* Forgets every failed gang (capacity grew: any may fit now); O(1): marks of an older epoch
 * are stale. */
static inline void cycle_memo_forget(drv_sched *s)
{
    if (s->nfailed || s->room_marked) {
        s->nfailed = 0;
        s->room_marked = false;
        s->memo_epoch++;
    }
}

/* A pod's resource request (its job's role's). */
static inline drv_res cycle_pod_req(const drv_state *st, int32_t pod)
{
    const drv_pod *p = &st->pods[pod];
    return st->jobs[p->job].role[p->role].req;
}

/* Per-dimension maximum. */
static inline drv_res cycle_res_max(drv_res a, drv_res b)
{
    return (drv_res){a.cpu > b.cpu ? a.cpu : b.cpu, a.mem > b.mem ? a.mem : b.mem,
                     a.gpu > b.gpu ? a.gpu : b.gpu};
}

/* What the gang of job at `workers` still misses in the assumed state, all roles' requests
 * together (quota.c; per role: cycle_role_missing, below). */
drv_res cycle_gang_need(const drv_ctx *c, int32_t job, int32_t workers);

/* Brings the constraint table up to the state's constraints and classes. 0 or DRV_ENOMEM. */
int cycle_cons_refresh(drv_sched *s, const drv_state *st);

/* The constraint score of node class cls for pod, or -1 when the class does not fit it. */
static inline int32_t cycle_cons(const drv_ctx *c, int32_t pod, int32_t cls)
{
    const drv_sched *s = c->s;
    if (!s->cons_on)
        return 0;
    const drv_pod *p = &c->snap->st->pods[pod];
    int32_t k = c->snap->st->jobs[p->job].cons[p->role];
    return s->cfit[(size_t)k * (size_t)s->cfit_cls + (size_t)cls];
}

/* drv_ctx_pod_node, inline for the files of the cycle (placement asks it per pod slot). */
static inline int32_t cycle_pod_node(const drv_ctx *c, int32_t pod)
{
    const drv_sched *s = c->s;
    return s->pod_stamp[pod] == s->stamp ? s->pod_node[pod] : c->snap->st->pods[pod].node;
}

/* Pods of a role the gang of job at `workers` still misses in the assumed state. O(1), O(pods
 * of the job) when some pod of it moved this cycle. Inline: gang_room asks it per role. */
static inline int32_t cycle_role_missing(const drv_ctx *c, int32_t job, int role, int32_t workers)
{
    const drv_state *st = c->snap->st;
    const drv_job *j = &st->jobs[job];
    const drv_sched *s = c->s;
    int32_t want = role == DRV_ROLE_WORKER ? workers : j->target[role];
    int32_t have = j->bound[role];
    if (s->job_touch[job] == s->stamp) /* pods moved this cycle: count them */
        for (int32_t i = 0, pod; (pod = drv_job_pod(st, job, role, i)) >= 0; i++)
            have += (cycle_pod_node(c, pod) >= 0) - (st->pods[pod].node >= 0);
    return want > have ? want - have : 0;
}

#endif
