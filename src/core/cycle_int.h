/*
 * cycle_int.h - the scheduler's private state, shared by the files of the cycle (internal to
 * core): cycle.c (lifecycle, the cycle's phases), cycle_queue.c (collecting and ordering the
 * queue), cycle_decide.c (the decision list and the assumed overlay it keeps) and cycle_place.c
 * (filter, score, best node, gang placement).
 *
 * The cycle never changes the drv_state it is given. What its decisions would do is kept in an
 * "assumed" overlay (kube-scheduler calls this assume/reserve): per-node free resources kept
 * equal to the state's at the start of the cycle, and per-pod node / per-job worker overrides
 * kept in maps that hold only this cycle's entries (cycle_map), so starting a cycle costs
 * O(nodes changed since the last one), not O(pods) nor O(nodes) (with the node index; without
 * it, maxfree below is an O(nodes) pass).
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
    int32_t gpu_type; /* with GPU types: the type its job's GPU pods hold (cons_table), -1 for
                         none (its failure then held on every type), always -1 without types */
    int32_t topo;     /* its job's topology binding, mode * DRV_MAX_TOPO + level (0: none):
                         only gangs bound alike compare */
} gang_shape;

/* What every score plugin with score_by_summary reads of a node (drv_plugin.score_by_summary):
 * nodes of equal summaries score alike. Zeroed before it is filled, so memcmp compares it. */
typedef struct own_sum {
    drv_res free, alloc;
    int32_t zone, rack, node_class;
    int32_t nps;     /* PS pods on the node, of every job (assumed state) */
    int32_t cnt, ps; /* the job's pods on it, and its PS pods among them */
    int32_t schedulable;
} own_sum;

/* A kind of own nodes: those of one summary. */
typedef struct own_kind {
    own_sum sum;
    uint32_t hash;   /* of sum */
    int32_t members; /* own nodes of this kind now (0: a kind left empty) */
    int32_t rep;     /* with members: the index in own_list.node of the lowest node id */
} own_kind;

enum { OWN_KINDS = 256 }; /* kinds kept per job; more: the own nodes are all scored */

/* Per listed own node (own_list.node[i]): the job's pods on it, its PS pods among them, and
 * its kind (an index of own_list.kind; -1: none yet). */
typedef struct own_count {
    int32_t pods, ps, kind;
} own_count;

/* The distinct nodes, zones and racks of one job's placed pods, for indexed_best: kept from
 * one query to the next while the only change in between (drv_ctx_changes one higher) placed
 * the pod last asked about, so a gang's next pod adds at most one node instead of rereading
 * every pod of the job. The nodes are also sorted into kinds of equal summary, the kinds kept
 * the same way (the one change moves one node to another kind), so a query scores one node per
 * kind instead of every own node (a gang spread one pod per node over alike nodes makes many
 * of one kind). */
typedef struct own_list {
    uint32_t cycle;   /* the cycle's stamp when valid; 0: empty (stamps count from 1) */
    uint64_t changes; /* drv_ctx_changes it reflects */
    int32_t job, pod; /* the job, and the pod last asked about */
    bool pod_free;    /* that pod was not placed */
    int32_t *node;    /* the nodes, marked seen == seen_tag; room for every node */
    int32_t n, cap;
    uint32_t *seen; /* per node of the cluster: == seen_tag when in node[] */
    uint32_t seen_tag;
    int32_t cap_seen;
    /* With counted: per listed node, count[i]; per node of the cluster, its index in node[]
     * (valid when marked), at[node]. Both cap_count entries; counted is false while they
     * could not be allocated (the own nodes are then scored without counts). */
    own_count *count;
    int32_t *at;
    int32_t cap_count;
    bool counted;
    /* With counted and kinds_ok: the kinds of the listed nodes, and an open-addressing table
     * of them by hash (kind + 1, or 0). kinds_ok is false when there were more than OWN_KINDS
     * (the own nodes are then all scored). */
    own_kind kind[OWN_KINDS];
    int32_t nkinds;
    int16_t kslot[2 * OWN_KINDS];
    /* The kinds with members (a gang's binds leave kinds empty as they go), and each kind's
     * index in it; a query visits these only. */
    int16_t live[OWN_KINDS], live_at[OWN_KINDS];
    int32_t nlive;
    bool kinds_ok;
    int32_t zones[16], racks[16], nz, nr;
    bool all_z, all_r; /* more than 16 zones / racks */
} own_list;

static inline void cycle_own_init(own_list *o)
{
    *o = (own_list){0};
}

static inline void cycle_own_fini(own_list *o)
{
    drv_free(o->node);
    drv_free(o->seen);
    drv_free(o->count);
    drv_free(o->at);
    cycle_own_init(o);
}

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
    /* With n <= MAX_ORDER: the groups the union covers (those that may fit the request and
     * that the constraints admit), fit of them. Still all that may fit while grown holds. */
    int32_t cand[MAX_ORDER];
} union_memo;

enum { UNION_MEMO = 16 }; /* entries; a pod asks about a few families and labels */

/* A queued job as the cycle orders it: with a lone keyed queue_order plugin, by key, then
 * submit time, then id, read from here - no call and no read of the job per comparison. 32
 * bytes: the queue phase moves and scans these every cycle, what drv_ctx_queue_stuck and
 * drv_ctx_queued_cannot_fit read stays put in a qfit (a third of the bytes moved). */
typedef struct qent {
    double key, submit;
    int32_t job;
    int32_t fit; /* the job's entry in drv_sched.qfit, while the record exists */
    /* That entry's podmax.gpu and floor.gpu, capped at INT32_MAX: more than the free GPUs (the
     * capped value is at most the true one), the job cannot fit without a look at the entry -
     * on a GPU cluster, most of the queue most of the time. */
    int32_t gpu_podmax, gpu_floor;
} qent;

/* What a queued job's specification fixes for the queue's capacity tests. */
typedef struct qfit {
    drv_res least; /* per dimension, the least request of a pod of the job */
    /* The job's smallest gang, min(min, target) workers and every other role's target, with no
     * pod bound: what it needs in all (floor), and per dimension the largest request of its
     * pods (podmax). A larger gang of the job needs at least as much: when the floor exceeds
     * the free room of all nodes or podmax a node's, every gang of it fails the capacity
     * bounds (drv_ctx_queued_cannot_fit). */
    drv_res floor, podmax;
    bool has_pod; /* every gang of the job with at least min(min, target) workers has a pod */
} qfit;

/* A map from pod or job ids to values that holds only what this cycle set: open addressing
 * with linear probing, a slot in use when its stamp is the map's (so clearing it for the next
 * cycle is one increment), at most half full. Its memory follows the most entries one cycle
 * set (the pods and jobs its decisions touched), not every id a long trace ever had: per-id
 * arrays of them were ~95 bytes a job of a million-job trace. */
typedef struct cycle_slot {
    int32_t key, val;
    uint32_t stamp;
} cycle_slot;

typedef struct cycle_map {
    cycle_slot *slot;
    uint32_t cur;   /* this cycle's stamp; 0 is never current */
    int32_t n, cap; /* entries this cycle; slots, 0 or a power of two */
} cycle_map;

typedef struct plugin_inst {
    const drv_plugin *p;
    void *state;
} plugin_inst;

/* The profile's plugins: each distinct one once, with the state its init made, and per use
 * (point, slot) that state. Made by cycle_plugins_init, every state given back by
 * cycle_plugins_fini. */
typedef struct cycle_plugins {
    plugin_inst inst[DRV_NPOINTS * DRV_MAX_SLOT_PLUGINS]; /* distinct plugins */
    int32_t n;
    void *ustate[DRV_NPOINTS][DRV_MAX_SLOT_PLUGINS]; /* state of each use's plugin */
} cycle_plugins;

/* The assumed overlay (cycle_decide.c keeps it): the state as this cycle's decisions so far
 * would leave it. free, nrole and totfree follow the state between cycles (cycle_follow);
 * the maps and stamps hold this cycle's entries only. */
typedef struct cycle_assumed {
    drv_res *free; /* assumed free resources per node */
    int32_t cap_free;
    drv_res maxfree; /* per-dimension upper bound of free[] over schedulable nodes */
    drv_res totfree; /* sum of free[] over schedulable nodes */
    int32_t *nrole;  /* per node and role (node * DRV_NROLES + role): pods, assumed state */
    int32_t cap_nrole;
    cycle_map pod_node;    /* pod -> its node (-1: none) where this cycle moved it */
    cycle_map job_workers; /* job -> workers it wants, where this cycle scaled it */
    uint32_t *job_touch;   /* == stamp: some pod of the job changed node this cycle (pages of
                              jobs never touched are never written: allocated zeroed) */
    int32_t cap_touch;
    uint32_t touch_stamp; /* == stamp: some job_touch entry is this cycle's (else none is) */
    /* Queues: each queue's used resources as assumed by this cycle, copied from the state at
     * its start (O(queues)) and kept by set_pod_node as pods are bound, evicted and rolled
     * back; empty when the state has no queue. */
    drv_res *qused;
    int32_t cap_qused;
    bool rolling_back; /* give() during a rollback restores, it does not free capacity */
} cycle_assumed;

static inline void cycle_assumed_init(cycle_assumed *a)
{
    *a = (cycle_assumed){0};
}

static inline void cycle_assumed_fini(cycle_assumed *a)
{
    drv_free(a->free);
    drv_free(a->nrole);
    drv_free(a->pod_node.slot);
    drv_free(a->job_workers.slot);
    drv_free(a->job_touch);
    drv_free(a->qused);
    cycle_assumed_init(a);
}

/* What a node admitted when it was last read: its class and schedulable flag. A node that
 * changes either (labels, taints, a cordon lifted) may admit a gang that failed before, so
 * the failed-gang memo is cleared as when capacity grows. */
typedef struct node_admits {
    int32_t node_class;
    bool schedulable;
} node_admits;

/* Following the state between cycles (prepare, cycle.c): the overlay's free, nrole, admits
 * and totfree are read again only for the nodes that may differ from the state - those it
 * says changed since clock (DRV_FOR_NODES_CHANGED), and those the last cycle's standing
 * decisions changed in the overlay (odirty) - and the index is refreshed for the same nodes:
 * O(changed nodes) a cycle instead of O(nodes). */
typedef struct cycle_follow {
    const drv_state *st; /* the state the last prepare read; another one is read whole */
    uint64_t clock;      /* its node_clock then */
    int32_t nodes;       /* nodes the overlay held at the end of the last cycle */
    bool resync;         /* read every node at the next prepare (after a failure) */
    int32_t *odirty;     /* nodes named by the last cycle's decisions (repeats allowed) */
    int32_t nodirty, cap_odirty;
    int32_t *rnodes; /* nodes whose free room or PS count the last prepare found changed,
                        each once: what the index refreshes */
    int32_t nrnodes, cap_rnodes;
    uint32_t *rmark; /* per node: == rtag when read by this prepare (sync_node) */
    uint32_t rtag;
    int32_t cap_rmark;
    node_admits *admits; /* per node, what it admitted at the last cycle's start */
    int32_t cap_admits;
} cycle_follow;

static inline void cycle_follow_init(cycle_follow *f)
{
    *f = (cycle_follow){0};
}

static inline void cycle_follow_fini(cycle_follow *f)
{
    drv_free(f->odirty);
    drv_free(f->rnodes);
    drv_free(f->rmark);
    drv_free(f->admits);
    cycle_follow_init(f);
}

/* The best-node index (nodeindex.h) and how this profile may use it (drv_sched_new). */
typedef struct cycle_index {
    drv_nodeindex *ix;   /* when the profile allows it */
    bool use;            /* the profile allows it */
    bool bb;             /* branch and bound over score bounds, else best by key */
    bool mixed;          /* every score plugin bounds mixed sets (bound_mixed) */
    bool summary;        /* every score plugin scores by summary (score_by_summary) */
    int fam;             /* families to build: 1, or 3 for branch and bound */
    drv_node_key_fn key; /* the keyed score plugin's key, or NULL */
    bool exhaustive;     /* drv_sched_set_exhaustive: never use the index */
    bool ok;             /* this cycle's index was built */
    int32_t nodes;       /* nodes in the index (schedulable ones) */
    bool synced;         /* the index holds free[] and the PS counts of every node: ok held for
                            the whole last cycle, so every change to them updated it */
    uint64_t epoch;      /* the state's node_epoch when the index was last built or refreshed */
    union_memo umemo[UNION_MEMO]; /* search_family's unions, by family, label and constraint */
} cycle_index;

/* What the failed-gang memo knows of one job (cycle_memo.job): valid while epoch is the
 * memo's epoch + 1 (0: never marked). Its gang failed at `workers` workers: when
 * bounds_only, it failed the capacity bounds alone (drv_ctx_gang_room), which then holds for
 * every larger worker count too; else its placement failed at exactly that count. 8 bytes a
 * job (31 bits hold any worker count: a job's pods are slots in memory). */
typedef struct job_fail {
    uint32_t epoch;
    signed int workers : 31;
    unsigned int bounds_only : 1;
} job_fail;

/* The failed-gang memo (cycle_place.c): shapes of gangs that did not fit since capacity last
 * grew, and per job the last failure (job_fail). */
typedef struct cycle_memo {
    gang_shape failed[MAX_FAILED];
    int32_t nfailed;
    uint32_t epoch; /* bumps whenever the memo is cleared (cycle_memo_forget) */
    job_fail *job;  /* per job (allocated zeroed: pages of jobs never marked are never
                       written) */
    int32_t cap_job;
    bool room_marked;    /* some job is marked bounds_only this epoch */
    uint32_t room_stamp; /* the cycle's stamp when a job was so marked, and the length */
    int32_t room_dec;    /* of the decision list then (the largest): rolling back binds made
                          * before a mark gives back room the mark did not have */
} cycle_memo;

static inline void cycle_memo_init(cycle_memo *m)
{
    *m = (cycle_memo){0};
}

static inline void cycle_memo_fini(cycle_memo *m)
{
    drv_free(m->job);
    cycle_memo_init(m);
}

/* Over the queue's records (cycle_queue.c): per dimension the least of their qfit.least, how
 * many records hold it, and how many lack has_pod (what drv_ctx_queue_stuck asks). Valid when
 * ok: newcomers are folded in and dropped records taken out, records remade clear it, and the
 * next drv_ctx_queue_stuck computes it again - O(1) a record instead of a pass over the
 * entries each cycle. A least whose last record left stays as a bound (at 0): its "does not
 * fit" still holds, and only its "fits" needs the pass. */
typedef struct queue_summary {
    bool ok;
    drv_res least;
    int32_t at[3]; /* records at least's cpu, mem, gpu */
    int32_t nopod; /* records without has_pod */
} queue_summary;

/* The queue phase's state (cycle_queue.c), kept from one cycle to the next. */
typedef struct cycle_queue {
    qent *order; /* the last cycle's queue, in order: this cycle starts from it */
    int32_t norder, cap_order;
    /* The queue handed to the plugins, order[i].job for each record, kept from one cycle to
     * the next (valid when pend_ok) so that a queue whose records stand is not copied again. */
    int32_t *pend;
    int32_t cap_pend;
    bool pend_ok;
    qent *order2; /* where a sort puts the records; then the two swap */
    int32_t cap_order2;
    /* The queue sort's scratch (cycle_order_queue), nqueued + 1 entries each, kept from one
     * cycle to the next so that a long queue's are not allocated every cycle: the merge's
     * buffer, the records' sorted order, and the runs' starts (natural_sort_idx). */
    int32_t *sort_tmp, *sort_idx, *sort_run;
    int32_t cap_sort_tmp, cap_sort_idx, cap_sort_run;
    /* The records' qfit entries: an entry is taken when a record is made and given back (to
     * free_fit, a stack) when it is dropped, so at most as many are in use as records exist. */
    qfit *fit;
    int32_t nfit, cap_fit; /* entries handed out at most so far (in use or in free_fit) */
    int32_t *free_fit;
    int32_t nfree_fit, cap_free_fit;
    queue_summary sum;
    /* With a chain of keyed queue_order plugins only (more than one), each record's keys, a row
     * of nrow per qfit entry (fkey[fit * nrow + i]: the chain's i-th plugin's), which stays put
     * while the record lives as its entry does; rows_chain is that chain, rows whether the
     * last cycle ordered by the rows. */
    double *fkey;
    int32_t cap_fkey;
    int32_t nrow;
    int32_t rows_chain[DRV_MAX_SLOT_PLUGINS];
    bool rows;
    bool keyed;        /* order[].key holds the keys of a lone keyed queue plugin */
    int32_t keyed_use; /* when keyed: that plugin's index among the queue_order uses */
    /* This cycle's queue_order chain: indices of the uses not idle (drv_plugin.queue_idle). */
    int32_t chain[DRV_MAX_SLOT_PLUGINS];
    int32_t nchain;
    const drv_state *st; /* the state the records were collected from, and its */
    uint64_t leaves;     /* queue_leaves then: while both match, every record's job is still
                          * queued and collect keeps them without a look */
    uint64_t lists;      /* lists handed to queue_begin so far (drv_ctx_queue_kept) */
    int32_t kept;        /* of the last one, how many came first from the one before */
    uint64_t *inq;       /* a bit per job: set while the job has a record in order[0..norder) */
    int32_t cap_inq;     /* words */
    /* per chain position of a keyed queue_order plugin, per job: its key this cycle (pending
     * jobs only), asked once per job instead of once per comparison */
    double *key[DRV_MAX_SLOT_PLUGINS];
    int32_t cap_key[DRV_MAX_SLOT_PLUGINS];
} cycle_queue;

static inline void cycle_queue_init(cycle_queue *q)
{
    *q = (cycle_queue){0};
}

static inline void cycle_queue_fini(cycle_queue *q)
{
    drv_free(q->order);
    drv_free(q->pend);
    drv_free(q->order2);
    drv_free(q->sort_tmp);
    drv_free(q->sort_idx);
    drv_free(q->sort_run);
    drv_free(q->fit);
    drv_free(q->free_fit);
    drv_free(q->fkey);
    drv_free(q->inq);
    for (int i = 0; i < DRV_MAX_SLOT_PLUGINS; i++)
        drv_free(q->key[i]);
    cycle_queue_init(q);
}

/* Node constraints (constraint.c): when the state has any (on), fit[cons * ncls + class] is
 * the constraint score of class for constraint cons, or -1 when it does not fit; computed for
 * new constraints and classes at the start of a cycle (both are immutable). */
typedef struct cons_table {
    bool on;
    int32_t *fit;
    int32_t ncons, ncls; /* the table's dimensions */
    int32_t cap;
    /* GPU types (state.h, drv_state_set_gpu_type_label), when the nodes carry two or more
     * (ntypes >= 2; else 0 and nothing below is read): type t of class cl is type_of[cl]
     * (0..ntypes-1), named type_name[t] (interned; 0 for nodes without the label). Then the
     * table holds after its ncons rows one more per constraint k and type t, at row
     * ncons + k * ntypes + t: row k with every class of another type refused. A GPU pod of a
     * job that holds GPUs of type t reads that row, so one type per job costs a row look-up
     * and the node index, grouping classes by their columns, keeps types apart. */
    int32_t ntypes;
    int32_t *type_of, cap_type_of;
    int32_t *type_name, cap_type_name;
    int32_t key; /* the state's gpu_type_key the types were read with */
    /* While drv_ctx_place_gang tries a gang on one type: its job and that type (else -1). */
    int32_t pin_job, pin_type;
    /* The last job_gpu_type answer: job, for the cycle stamp and drv_ctx_changes it holds for. */
    int32_t memo_job, memo_type;
    uint64_t memo_stamp, memo_changes;
} cons_table;

static inline void cons_table_init(cons_table *c)
{
    *c = (cons_table){0};
    c->pin_job = c->memo_job = -1;
}

static inline void cons_table_fini(cons_table *c)
{
    drv_free(c->fit);
    drv_free(c->type_of);
    drv_free(c->type_name);
    cons_table_init(c);
}

/*
 * Topology domains (cycle_topo.c; state.h, "Topology-bound gangs"): per level, every node's
 * domain as a dense index, the nodes of each domain (in id order) and each domain's free room
 * in the assumed state. Built when the state's levels or nodes (node_epoch) change, O(levels ·
 * nodes · log nodes); the free room summed at the first look of a cycle, O(levels · nodes), then
 * kept by every bind and unbind, O(levels).
 */
typedef struct topo_table {
    int32_t nlev; /* levels read; 0: no topology (nothing below is read) */
    int32_t key[DRV_MAX_TOPO];
    uint64_t epoch; /* the state's node_epoch when built */
    int32_t nnodes; /* nodes then */
    bool built;     /* the arrays below hold the state's levels and nodes */
    int32_t *dom;   /* [level * nnodes + node]: its domain index, -1 without the label */
    int32_t ndom[DRV_MAX_TOPO], base[DRV_MAX_TOPO]; /* a level's domains, and its first index in
                                                      name, start and free */
    int32_t *name;                                  /* per domain: the label value (interned) */
    int32_t *start, *nodes;  /* per domain d: its nodes are nodes[start[d] .. start[d + 1]) */
    int field[DRV_MAX_TOPO]; /* DRV_IX_RACK or DRV_IX_ZONE when the level's domain of every node
                                is its rack or zone (the node index's families then find a
                                domain's nodes by a look-up), else -1 (its nodes are scanned) */
    drv_res *free;           /* per domain: free room of its schedulable nodes, assumed */
    uint32_t free_stamp;     /* the cycle's stamp while free holds; 0: not yet this cycle */
    int32_t cap_dom, cap_name, cap_start, cap_nodes;
    /* While drv_ctx_place_gang tries a gang in one domain: its job, the level and the domain
     * (pin_job -1 otherwise). */
    int32_t pin_job, pin_level, pin_dom;
    /* The last cycle_topo_domain answer for a job not pinned: job, stamp and drv_ctx_changes. */
    int32_t memo_job, memo_dom;
    uint64_t memo_stamp, memo_changes;
    struct topo_cand {
        drv_res free;
        int32_t dom;
    } * cand; /* scratch: the domains a gang may try, per level */
    int32_t cap_cand;
} topo_table;

static inline void topo_table_init(topo_table *t)
{
    *t = (topo_table){0};
    t->pin_job = t->memo_job = -1;
}

static inline void topo_table_fini(topo_table *t)
{
    drv_free(t->dom);
    drv_free(t->name);
    drv_free(t->start);
    drv_free(t->nodes);
    drv_free(t->free);
    drv_free(t->cand);
    topo_table_init(t);
}

/* The cycle's outcome so far and what the core is running, reset by each cycle: the first
 * error (drv_ctx_fail; a core helper that could not allocate; a failed allocation in the
 * arena) and the plugin that was running when it came (drv_sched_failed_in). */
typedef struct cycle_fault {
    int code;                  /* 0: none yet */
    const drv_plugin *plugin;  /* the plugin running when it came; NULL: the core's own work */
    int point;                 /* the point it ran at (enum drv_point); -1 with no plugin */
    const drv_plugin *running; /* the plugin the core is calling now (outermost), or NULL */
    int running_point;         /* its point, or -1 */
} cycle_fault;

static inline void cycle_fault_init(cycle_fault *f)
{
    *f = (cycle_fault){0, NULL, -1, NULL, -1};
}

/* The scheduler: a profile's plugins and what the cycle keeps between cycles, one part per
 * concern, each with its init and fini (drv_sched_new, drv_sched_free). */
struct drv_sched {
    const drv_profile *prof; /* borrowed (drv_sched_new) */
    cycle_plugins plug;
    drv_arena arena; /* the plugins' per-cycle scratch */
    uint32_t stamp;  /* cycle counter; overlay entries are valid when their stamp matches */
    cycle_assumed assumed;
    cycle_follow follow;
    cycle_index index;
    cycle_memo memo;
    own_list own;
    cycle_queue queue;
    cons_table cons;
    topo_table topo;
    cycle_fault fault;
    double wake; /* drv_sched_wake: computed at the end of each cycle */
    bool blind;  /* drv_sched_starts_blind: likewise */
};

struct drv_ctx {
    drv_sched *s;
    const drv_snapshot *snap;
    drv_decisions *out;
    int32_t base;     /* out->n when the cycle started: rollback never goes below it */
    uint64_t changes; /* drv_ctx_changes */
};

/* Notes the plugin the core calls now, at point pt (NULL, -1: none): an error that comes
 * before the call returns is the plugin's. */
static inline void cycle_running(drv_sched *s, const drv_plugin *p, int pt)
{
    s->fault.running = p;
    s->fault.running_point = pt;
}

/* Forgets every failed gang (capacity grew: any may fit now); O(1): marks of an older epoch
 * are stale. */
static inline void cycle_memo_forget(drv_sched *s)
{
    if (s->memo.nfailed || s->memo.room_marked) {
        s->memo.nfailed = 0;
        s->memo.room_marked = false;
        s->memo.epoch++;
    }
}

/* A pod's resource request (its job's role's). */
static inline drv_res cycle_pod_req(const drv_state *st, int32_t pod)
{
    const drv_pod *p = &st->pods[pod];
    return st->jobs[p->job].role[p->role].req;
}

/* What the gang of job at `workers` still misses in the assumed state, all roles' requests
 * together (quota.c; per role: cycle_role_missing, below). */
drv_res cycle_gang_need(const drv_ctx *c, int32_t job, int32_t workers);

/* Brings the constraint table up to the state's constraints and classes. 0 or DRV_ENOMEM. */
int cycle_cons_refresh(drv_sched *s, const drv_state *st);

/* The GPU type job's GPU pods are on in the assumed state (the type being tried while
 * drv_ctx_place_gang pins one), or -1 when none is placed (cycle_cons.c). */
int32_t cycle_job_gpu_type(const drv_ctx *c, int32_t job);

/* Brings the topology table up to the state's levels and nodes (cycle_topo.c). 0 or
 * DRV_ENOMEM. */
int cycle_topo_refresh(drv_sched *s, const drv_state *st);
/* The domain (topo_table index) job's new pods must go to at level *level, or -1 when they may
 * go anywhere: the pinned domain while drv_ctx_place_gang tries one; for a job with a required
 * level, the domain of its placed pods (-2 when they have none or span two, so that none fits).
 * O(1) when asked again with nothing changed, else O(the job's pods). */
int32_t cycle_topo_domain(const drv_ctx *c, int32_t job, int32_t *level);
/* The domain index of node at level lev (-1: none). */
static inline int32_t cycle_topo_node(const topo_table *t, int32_t lev, int32_t node)
{
    return node < t->nnodes ? t->dom[(size_t)lev * (size_t)t->nnodes + (size_t)node] : -1;
}
/* A bind (sign 1) or unbind (-1) of r on node: the domains' free room follows. O(levels). */
void cycle_topo_take(drv_sched *s, const drv_state *st, int32_t node, drv_res r, int sign);
/* Places the gang of job at `workers` honouring its topology (cycle_topo.c): with none, place
 * (as given). 1, 0 or a negative code; on failure everything since m is rolled back. */
typedef int (*cycle_place_fn)(drv_ctx *c, int32_t job, int32_t workers, drv_mark m);
int cycle_topo_place(drv_ctx *c, int32_t job, int32_t workers, drv_mark m, cycle_place_fn place);

/* The pod's row of the constraint table (per node class; with GPU types, its job's type's
 * row for a GPU pod of a job that holds GPUs), or NULL when there is none (cycle_cons.c). */
const int32_t *cycle_cons_row(const drv_ctx *c, int32_t pod);
/* The constraint score of node class cls for pod, or -1 when the class does not fit it
 * (cycle_cons.c). */
int32_t cycle_cons(const drv_ctx *c, int32_t pod, int32_t cls);

static inline uint32_t cycle_map_home(const cycle_map *m, int32_t key)
{
    return ((uint32_t)key * 2654435761u) & (uint32_t)(m->cap - 1);
}

/* The value this cycle set for key, or dflt. O(1) expected. */
static inline int32_t cycle_map_get(const cycle_map *m, int32_t key, int32_t dflt)
{
    if (m->n == 0)
        return dflt;
    for (uint32_t i = cycle_map_home(m, key); m->slot[i].stamp == m->cur;
         i = (i + 1) & (uint32_t)(m->cap - 1))
        if (m->slot[i].key == key)
            return m->slot[i].val;
    return dflt;
}

/* Empties the map for a new cycle: O(1) (O(slots) once every 2^32 cycles). */
static inline void cycle_map_clear(cycle_map *m)
{
    m->n = 0;
    if (++m->cur == 0) {
        for (int32_t i = 0; i < m->cap; i++)
            m->slot[i].stamp = 0;
        m->cur = 1;
    }
}

/* Room for `more` new keys this cycle (before a decision that may set them: setting then
 * cannot fail, and a rollback only sets keys already there). 0 or DRV_ENOMEM. */
int cycle_map_reserve(cycle_map *m, int32_t more);
/* Sets key's value; room was reserved, or the key is there already. */
void cycle_map_set(cycle_map *m, int32_t key, int32_t val);

/* drv_ctx_pod_node, inline for the files of the cycle (placement asks it per pod slot): a
 * pod of a job no decision touched this cycle is where the state has it. */
static inline int32_t cycle_pod_node(const drv_ctx *c, int32_t pod)
{
    const drv_sched *s = c->s;
    const drv_pod *p = &c->snap->st->pods[pod];
    if (s->assumed.job_touch[p->job] != s->stamp)
        return p->node;
    return cycle_map_get(&s->assumed.pod_node, pod, p->node);
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
    if (s->assumed.job_touch[job] == s->stamp) /* pods moved this cycle: count them */
        for (int32_t i = 0, pod; (pod = drv_job_pod(st, job, role, i)) >= 0; i++)
            have += (cycle_pod_node(c, pod) >= 0) - (st->pods[pod].node >= 0);
    return want > have ? want - have : 0;
}

#endif
