/*
 * locality.c - topology-aware placement scores: keep a job's pods together, and keep the
 * parameter servers of different jobs apart (seeds 000, 001 and 004).
 *
 *  locality          score  For a job's first pod (its PS, as the core places PS first), the
 *                           share of the job's still-unplaced pods this node could hold: the
 *                           node that can take the whole job wins, else the one that fits the
 *                           most (DRAGON's "one node if possible, else the node that fits the
 *                           most pods"; Jeong & Yu's "PS on the node with most workers").
 *                           For later pods, a weighted mix of the share of the job's placed
 *                           pods on this node, in its rack and in its zone, plus the room
 *                           term above, so a job spans as few nodes (then racks) as possible:
 *                             score = 100·(w_node·same_node + w_rack·same_rack
 *                                          + w_zone·same_zone + w_room·room) / Σw
 *                           Example: a job with PS on n0 (rack r0); a worker scores 100·4/8 on
 *                           n0 plus its room term, 100·2/8 on n1 in r0, 100·1/8 in zone only.
 *  ps-anti-affinity  score  Volcano/Kubernetes preferred anti-affinity between PS pods of
 *                           different jobs (seed 004): 100 on a node with no other job's PS,
 *                           100/(1+k) with k of them. Preferred, not required: a hard rule
 *                           would cap a 4-node cluster at 4 running PS jobs.
 *
 * Cost: locality derives, once per pod and assumed state (cached under drv_ctx_cycle and
 * drv_ctx_changes), where the job's placed pods are (O(the job's pods), nodes found by hash;
 * O(1) when the one change since was the bind of the gang's previous pod) and how many it
 * still misses per role; each call is then O(distinct (rack, zone) pairs the job uses + role
 * mixes), and a bound's rack and zone terms are kept for the next set of the same labels.
 * ps-anti-affinity reads the core's count of PS pods on the node and subtracts the job's
 * own: O(the job's PS pods).
 */
#include "drover/policy.h"

#include <math.h>
#include <string.h>

static const drv_knob_spec loc_knobs[] = {
    {"w_node", 4, 0, 100, "weight of the share of the job's placed pods on this node"},
    {"w_rack", 2, 0, 100, "weight of the share in this node's rack (other nodes)"},
    {"w_zone", 1, 0, 100, "weight of the share in this node's zone (other racks)"},
    {"w_room", 1, 0, 100, "weight of how many of the job's unplaced pods the node could hold"},
};
enum { NLOC = sizeof loc_knobs / sizeof loc_knobs[0] };

enum { LOC_MAX = 64 };   /* distinct nodes / (rack, zone) pairs cached; more: computed directly */
enum { LOC_HASH = 128 }; /* open-addressing slots finding a node among them (> LOC_MAX) */
enum { ROOM_ENUM_MAX = 64 }; /* mixes of non-worker counts tried before falling back */

/* What the score needs about a pod's job, valid for one pod in one assumed state. */
typedef struct loc_view {
    uint32_t cycle;                           /* drv_ctx_cycle */
    uint64_t changes;                         /* drv_ctx_changes in that cycle */
    int32_t pod;                              /* -1: nothing cached */
    const drv_state *st;                      /* the cycle's state, */
    const drv_job *j;                         /* pod's job in it, */
    drv_res req;                              /* and pod's request */
    bool pod_free;                            /* pod is not placed */
    bool ok;                                  /* fits in the arrays below */
    int32_t placed;                           /* the job's pods placed, other than pod */
    int32_t nn, node[LOC_MAX], ncnt[LOC_MAX]; /* placed pods per node */
    uint8_t slot[LOC_HASH];                   /* node's hash -> its index in node + 1, or 0 */
    int32_t nrz, rack[LOC_MAX], zone[LOC_MAX], rzcnt[LOC_MAX]; /* per (rack, zone) */
    int32_t have[DRV_NROLES]; /* pods of each role placed, or pod itself */
    int32_t miss[DRV_NROLES]; /* pods of each role still to place, besides pod */
    int32_t want;             /* their sum */
    int64_t mixes;            /* mixes of PS, chief and evaluator counts among them (room_best) */
    double inv_want;          /* 1 / want (0 when want is 0) */
    drv_res need;             /* their requests together */
    /* loc_bound's rack and zone terms for the last (zone, rack) it was asked about: a search
     * asks about one pair many times in a row. tz == INT32_MIN: none yet. */
    int32_t tz, tr;
    double topo;
    /* loc_bound's room term for the last free room it was asked about (rfree), valid while
     * rok: a search bounds many sets of alike nodes, whose maxima are the same. */
    bool rok;
    drv_res rfree;
    double room;
} loc_view;

typedef struct loc_state {
    double w_node, w_rack, w_zone, w_room;
    double k100; /* 100 / (the weights' sum), for the bound: see loc_bound */
    loc_view v;
} loc_state;

static int loc_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[NLOC];
    int rc = drv_knobs_read(loc_knobs, NLOC, knobs, nknobs, v, d);
    if (rc)
        return rc;
    if (v[0] + v[1] + v[2] + v[3] <= 0)
        return drv_fail(d, DRV_ERANGE, "knobs w_node, w_rack, w_zone, w_room are all 0");
    loc_state *p = drv_calloc(1, sizeof *p);
    if (!p)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    *p = (loc_state){v[0], v[1], v[2], v[3], 100.0 / (v[0] + v[1] + v[2] + v[3]), {.pod = -1}};
    *state = p;
    return 0;
}

static void loc_fini(void *state)
{
    drv_free(state);
}

/* The slot of node in the view's hash: the one holding it, or the empty one it would take.
 * A job's nodes are often many (a gang of 64 pods may use dozens): a list search per pod made
 * the view quadratic in the job's size. */
static uint32_t slot_of(const loc_view *v, int32_t node)
{
    uint32_t h = ((uint32_t)node * 2654435761u) >> 25; /* 7 bits: LOC_HASH slots */
    while (v->slot[h] && v->node[v->slot[h] - 1] != node)
        h = (h + 1) % LOC_HASH;
    return h;
}

/* The node's index in the view's list, or -1. */
static int32_t find_node(const loc_view *v, int32_t node)
{
    return (int32_t)v->slot[slot_of(v, node)] - 1;
}

/* Counts a placed pod on node. */
static void count_node(loc_view *v, int32_t node)
{
    uint32_t h = slot_of(v, node);
    if (v->slot[h]) {
        v->ncnt[v->slot[h] - 1]++;
        return;
    }
    if (v->nn == LOC_MAX) {
        v->ok = false;
        return;
    }
    v->node[v->nn] = node;
    v->ncnt[v->nn++] = 1;
    v->slot[h] = (uint8_t)v->nn;
}

/* Counts a placed pod of the job on node at in the view. */
static void count_placed(loc_view *v, const drv_state *st, int32_t at)
{
    v->placed++;
    count_node(v, at);
    int32_t i = 0;
    while (i < v->nrz && !(v->rack[i] == st->nodes[at].rack && v->zone[i] == st->nodes[at].zone))
        i++;
    if (i < v->nrz) {
        v->rzcnt[i]++;
    } else if (v->nrz < LOC_MAX) {
        v->rack[i] = st->nodes[at].rack;
        v->zone[i] = st->nodes[at].zone;
        v->rzcnt[i] = 1;
        v->nrz++;
    } else {
        v->ok = false;
    }
}

/* The mixes of PS, chief and evaluator counts room_best tries, from miss. */
static void set_mixes(loc_view *v)
{
    v->mixes = 1; /* capped past ROOM_ENUM_MAX: room_best only compares it with that */
    for (int r = 0; r < DRV_NROLES; r++)
        if (r != DRV_ROLE_WORKER && (v->mixes *= v->miss[r] + 1) > ROOM_ENUM_MAX)
            v->mixes = ROOM_ENUM_MAX + 1;
}

/*
 * Brings the cached view of pod's job up to the current assumed state. A gang places its pods
 * one after the other, each asking for the view of the next: when the only change since the
 * cached view (drv_ctx_changes one higher) placed the cached pod, and pod is another unplaced
 * pod of the same job, the view is updated for that one bind — the cached pod becomes a placed
 * one, pod becomes the one to place — instead of rebuilt from every pod of the job.
 */
static const loc_view *view_rebuild(const drv_ctx *c, loc_state *w, int32_t pod, uint64_t chg)
{
    loc_view *v = &w->v;
    uint32_t cyc = drv_ctx_cycle(c);
    const drv_state *st = drv_ctx_state(c);
    int32_t job = st->pods[pod].job;
    const drv_job *j = &st->jobs[job];
    int32_t was = v->pod, at;
    if (was >= 0 && was != pod && v->cycle == cyc && v->changes + 1 == chg && v->ok &&
        v->pod_free && st->pods[was].job == job && drv_ctx_pod_node(c, pod) < 0 &&
        (at = drv_ctx_pod_node(c, was)) >= 0) {
        count_placed(v, st, at); /* was: counted in have already, as the pod to place */
        /* pod now counts as had: one fewer of its role is missing besides it (the targets
         * did not change: the one change was the bind). The same numbers the loops below
         * give, without them. */
        int r = st->pods[pod].role;
        v->have[r]++;
        if (v->miss[r] > 0) {
            v->miss[r]--;
            v->want--;
            v->need = drv_res_sub(v->need, j->role[r].req);
            v->inv_want = v->want ? 1.0 / v->want : 0;
            if (r != DRV_ROLE_WORKER)
                set_mixes(v);
        }
        v->pod = pod;
        v->req = j->role[r].req;
        v->pod_free = true;
        v->changes = chg;
        v->tz = INT32_MIN;
        v->rok = false;
        return v;
    } else {
        v->ok = true;
        v->placed = v->nn = v->nrz = 0;
        memset(v->slot, 0, sizeof v->slot);
        memset(v->have, 0, sizeof v->have);
        for (int32_t k = 0; k < j->pod_count; k++) {
            int32_t p = j->pod_base + k;
            int32_t on = drv_ctx_pod_node(c, p);
            if (on >= 0 || p == pod)
                v->have[st->pods[p].role]++;
            if (on >= 0 && p != pod)
                count_placed(v, st, on);
        }
    }
    v->pod = pod;
    v->st = st;
    v->j = j;
    v->req = j->role[st->pods[pod].role].req;
    v->pod_free = drv_ctx_pod_node(c, pod) < 0;
    v->cycle = cyc;
    v->changes = chg;
    v->want = 0;
    v->need = (drv_res){0, 0, 0};
    v->tz = INT32_MIN;
    v->rok = false;
    for (int r = 0; r < DRV_NROLES; r++) {
        int32_t target = r == DRV_ROLE_WORKER ? drv_ctx_workers(c, job) : j->target[r];
        v->miss[r] = target > v->have[r] ? target - v->have[r] : 0;
        v->want += v->miss[r];
        v->need = drv_res_add(v->need, drv_res_scale(j->role[r].req, v->miss[r]));
    }
    v->inv_want = v->want ? 1.0 / v->want : 0;
    set_mixes(v);
    return v;
}

/* The view of pod's job (view_rebuild), asked for every node and set of one query: the check
 * that it is current is all most calls do, inline, apart from the rebuild. */
static inline const loc_view *view(const drv_ctx *c, loc_state *w, int32_t pod)
{
    const loc_view *v = &w->v;
    uint64_t chg = drv_ctx_changes(c);
    if (v->pod == pod && v->changes == chg && v->cycle == drv_ctx_cycle(c))
        return v;
    return view_rebuild(c, w, pod, chg);
}

/* min(k, f / q) for a request q > 0 of one dimension, f / q as C divides. The 64-bit division
 * was most of room_best's time (perf: the instructions after each idiv), and a dimension that
 * holds all k pods (q·k <= f, the product not overflowing) needs none: then f / q >= k,
 * truncated or not, so the answer is k exactly as the division would give it. */
static inline int64_t fit_dim(int64_t q, int64_t k, int64_t f)
{
    int64_t all;
    if (q <= 0 || (!__builtin_mul_overflow(q, k, &all) && all <= f))
        return k;
    return f / q < k ? f / q : k;
}

/* How many of pods of one role fit in free, at most want. */
static int64_t fit_count(drv_res q, int64_t want, drv_res free)
{
    int64_t k = fit_dim(q.cpu, want, free.cpu);
    k = fit_dim(q.mem, k, free.mem);
    k = fit_dim(q.gpu, k, free.gpu);
    return k > 0 ? k : 0;
}

/* The most of the job's unplaced pods that fit in free together: every mix of PS, chief and
 * evaluator counts, workers filling what is left. -1 when there are too many mixes to try.
 * mixes: the number of those mixes, the product of (missing + 1) over the three roles. */
static int64_t room_best(const drv_job *j, const int32_t *miss, int64_t mixes, drv_res free)
{
    static const int others[] = {DRV_ROLE_PS, DRV_ROLE_CHIEF, DRV_ROLE_EVALUATOR};
    if (mixes > ROOM_ENUM_MAX)
        return -1;
    if (mixes == 1) /* workers only (their PS placed first): the one mix below, directly */
        return free.cpu < 0 || free.mem < 0 || free.gpu < 0
                   ? 0
                   : fit_count(j->role[DRV_ROLE_WORKER].req, miss[DRV_ROLE_WORKER], free);
    int64_t best = 0;
    for (int64_t m = 0; m < mixes; m++) {
        drv_res left = free;
        int64_t got = 0, code = m;
        bool ok = true;
        for (int i = 0; i < 3 && ok; i++) {
            int r = others[i];
            int64_t k = code % (miss[r] + 1);
            code /= miss[r] + 1;
            left = drv_res_sub(left, drv_res_scale(j->role[r].req, k));
            ok = left.cpu >= 0 && left.mem >= 0 && left.gpu >= 0;
            got += k;
        }
        if (!ok)
            continue;
        got += fit_count(j->role[DRV_ROLE_WORKER].req, miss[DRV_ROLE_WORKER], left);
        if (got > best)
            best = got;
    }
    return best;
}

/* The room term: the share of the job's unplaced wanted pods (other than pod) that fit in free
 * together — the best mix of roles, so it never decreases when free grows (which lets the index
 * bound it). Jobs with very many non-worker pods missing fall back to a greedy fill, role by
 * role in slot order. When all of them fit at once, both the best mix and the greedy fill hold
 * every one: the share is 1 without trying mixes (the usual case once a gang is mostly placed).
 */
/* How many of those pods fit in free together as the best mix gives it: all of them (v->want)
 * when they fit at once, or none is missing; -1 when there are too many mixes to try. What
 * room_share and room_bound have in common; a count, so that they branch on it before their
 * division is done. */
static int64_t room_fit(const drv_job *j, const loc_view *v, drv_res free)
{
    if (!v->want || drv_res_fits(v->need, free))
        return v->want;
    return room_best(j, v->miss, v->mixes, free);
}

static double room_share(const drv_job *j, const loc_view *v, drv_res free)
{
    int64_t fit = room_fit(j, v, free);
    if (fit >= 0)
        return v->want ? (double)fit / v->want : 1.0;
    fit = 0;
    for (int r = 0; r < DRV_NROLES; r++) {
        int64_t k = fit_count(j->role[r].req, v->miss[r], free);
        fit += k;
        free = drv_res_sub(free, drv_res_scale(j->role[r].req, k));
    }
    return (double)fit / v->want;
}

static int loc_score(const drv_ctx *c, void *state, int32_t pod, int32_t node)
{
    loc_state *w = state;
    const loc_view *v = view(c, w, pod);
    const drv_state *st = v->st;
    const drv_job *j = v->j;
    const drv_node *n = &st->nodes[node];
    drv_res after = drv_res_sub(drv_ctx_free(c, node), v->req);
    double room = room_share(j, v, after);
    if (v->placed == 0)
        return (int)(100.0 * room);
    int32_t same_node = 0, same_rack = 0, same_zone = 0;
    if (v->ok) {
        int32_t at = find_node(v, node);
        same_node = at >= 0 ? v->ncnt[at] : 0;
        /* A pod elsewhere counts for the rack when the node has a rack label and it matches,
         * else for the zone when the node has a zone label and it matches. */
        for (int32_t i = 0; i < v->nrz; i++) {
            if (n->rack && v->rack[i] == n->rack)
                same_rack += v->rzcnt[i];
            else if (n->zone && v->zone[i] == n->zone)
                same_zone += v->rzcnt[i];
        }
        /* The node's own pods share its rack (and zone): they were counted above. */
        if (n->rack)
            same_rack -= same_node;
        else if (n->zone)
            same_zone -= same_node;
    } else {
        for (int32_t k = 0; k < j->pod_count; k++) {
            int32_t at = drv_ctx_pod_node(c, j->pod_base + k);
            if (at < 0 || j->pod_base + k == pod)
                continue;
            const drv_node *m = &st->nodes[at];
            if (at == node)
                same_node++;
            else if (n->rack && m->rack == n->rack)
                same_rack++;
            else if (n->zone && m->zone == n->zone)
                same_zone++;
        }
    }
    int32_t placed = v->placed;
    double sum = w->w_node + w->w_rack + w->w_zone + w->w_room;
    double s = w->w_node * same_node / placed + w->w_rack * same_rack / placed +
               w->w_zone * same_zone / placed + w->w_room * room;
    return (int)(100.0 * s / sum);
}

/* An upper bound of room_share over every free' <= free (per dimension), to within a few units
 * in the last place, which loc_bound's slack absorbs. The best mix is
 * monotone in free, so it bounds itself. The greedy fallback is not (fitting more of an earlier
 * role can leave less for later ones): bound the count it fits instead — any feasible count
 * fits each dimension on its own, and in one dimension at most what a fractional knapsack
 * takes, cheapest role first; the smallest over the dimensions is monotone in free. 1, the
 * largest share there is, when all the missing pods fit at once. */
static double room_bound(const drv_job *j, const loc_view *v, drv_res free)
{
    int64_t exact = room_fit(j, v, free);
    if (exact >= 0) /* times 1/want: within a few units in the last place (see loc_bound) */
        return v->want ? (double)exact * v->inv_want : 1.0;
    const int32_t *miss = v->miss;
    int32_t want = v->want;
    double most = want;
    for (int d = 0; d < 3; d++) {
        double rem = (double)(d == 0 ? free.cpu : d == 1 ? free.mem : free.gpu);
        if (rem < 0)
            return 0;
        int order[DRV_NROLES], n = 0;
        double q[DRV_NROLES];
        for (int r = 0; r < DRV_NROLES; r++) {
            drv_res x = j->role[r].req;
            q[r] = (double)(d == 0 ? x.cpu : d == 1 ? x.mem : x.gpu);
            if (miss[r] <= 0)
                continue;
            int i = n++;
            while (i > 0 && q[order[i - 1]] > q[r]) { /* insertion sort: 4 roles at most */
                order[i] = order[i - 1];
                i--;
            }
            order[i] = r;
        }
        double cnt = 0;
        for (int i = 0; i < n; i++) {
            int r = order[i];
            double take = q[r] <= 0 ? miss[r] : rem / q[r];
            if (take > miss[r])
                take = miss[r];
            cnt += take;
            rem -= take * q[r];
        }
        if (cnt < most)
            most = cnt;
    }
    return floor(most + 1e-9) / want;
}

/*
 * Bound over a set of nodes holding none of the job's pods (drv_node_set): the room term at the
 * set's maximum free, plus the most rack and zone sharing a node of the set can have — none in
 * a set outside the job's zones and racks; the job's pods in zone z for zone z's set; for rack
 * r's set, its pods in r plus the most of the others in any one zone (a rack's nodes may lie in
 * several zones). The score divides by the weights' sum, the bound multiplies by its inverse
 * (no division on the search's path): the two differ by a few units in the last place, far
 * below the 1e-9 added before rounding down, so the bound never falls below the score.
 */
static int loc_bound(const drv_ctx *c, void *state, int32_t pod, const drv_node_set *set)
{
    loc_state *w = state;
    const loc_view *v = view(c, w, pod);
    const drv_job *j = v->j;
    drv_res after = drv_res_sub(set->maxfree, v->req);
    loc_view *cv = &w->v; /* the view returned above: its caches are kept for the next call */
    double room;
    if (v->rok && memcmp(&v->rfree, &after, sizeof after) == 0) {
        room = v->room;
    } else {
        room = room_bound(j, v, after);
        cv->rok = true;
        cv->rfree = after;
        cv->room = room;
    }
    if (v->placed == 0)
        return (int)(100.0 * room + 1e-9);
    if (v->tz == set->zone && v->tr == set->rack)
        return (int)((v->topo + w->w_room * room) * w->k100 + 1e-9);
    double rack = 0, zone = 0;
    if (!v->ok) { /* too spread to have counted: up to every placed pod, at the larger weight */
        if ((set->zone >= 0 || set->rack >= 0) && w->w_rack >= w->w_zone)
            rack = v->placed;
        else if (set->zone >= 0 || set->rack >= 0)
            zone = v->placed;
    } else if (set->rack >= 0) {
        int32_t in_rack = 0, most = 0;
        for (int32_t i = 0; i < v->nrz; i++)
            if (set->rack && v->rack[i] == set->rack)
                in_rack += v->rzcnt[i];
        for (int32_t i = 0; i < v->nrz; i++) { /* per zone, pods outside the rack */
            if (!v->zone[i] || (set->rack && v->rack[i] == set->rack))
                continue;
            int32_t z = 0;
            for (int32_t k = 0; k < v->nrz; k++)
                if (v->zone[k] == v->zone[i] && !(set->rack && v->rack[k] == set->rack))
                    z += v->rzcnt[k];
            most = z > most ? z : most;
        }
        rack = in_rack;
        zone = most;
    } else if (set->zone > 0) {
        for (int32_t i = 0; i < v->nrz; i++)
            if (v->zone[i] == set->zone)
                zone += v->rzcnt[i];
    }
    cv->tz = set->zone;
    cv->tr = set->rack;
    cv->topo = w->w_rack * rack / v->placed + w->w_zone * zone / v->placed;
    return (int)((v->topo + w->w_room * room) * w->k100 + 1e-9);
}

const drv_plugin drv_plugin_locality = {
    .name = "locality",
    .timeless = true,
    .doc = "score: a job on as few nodes/racks as possible, PS where most workers fit",
    .init = loc_init,
    .fini = loc_fini,
    .score = loc_score,
    .score_bound = loc_bound,
    .bound_mixed = true,      /* neither bound reads alloc */
    .score_by_summary = true, /* the job's pods on the node, its rack and zone, its free */
    .starts_blind = drv_starts_blind,
};

/* ---- ps-anti-affinity ------------------------------------------------------------------ */

static int anti_score(const drv_ctx *c, void *state, int32_t pod, int32_t node)
{
    (void)state;
    const drv_state *st = drv_ctx_state(c);
    if (st->pods[pod].role != DRV_ROLE_PS)
        return 100;
    /* PS pods on the node, less the job's own: O(the job's PS pods). */
    int32_t own = st->pods[pod].job;
    int32_t k = drv_ctx_node_role_pods(c, node, DRV_ROLE_PS);
    for (int32_t i = 0, p; (p = drv_job_pod(st, own, DRV_ROLE_PS, i)) >= 0; i++)
        k -= drv_ctx_pod_node(c, p) == node;
    return 100 / (1 + k);
}

/* Bound: a node of the set holds at least min_ps PS pods, at most all of the job's own. */
static int anti_bound(const drv_ctx *c, void *state, int32_t pod, const drv_node_set *set)
{
    (void)state;
    const drv_state *st = drv_ctx_state(c);
    if (st->pods[pod].role != DRV_ROLE_PS)
        return 100;
    int32_t own = 0;
    for (int32_t i = 0, p; (p = drv_job_pod(st, st->pods[pod].job, DRV_ROLE_PS, i)) >= 0; i++)
        own += drv_ctx_pod_node(c, p) >= 0;
    int32_t k = set->min_ps - own;
    return 100 / (1 + (k > 0 ? k : 0));
}

/* Only PS pods care: every other pod scores 100 everywhere. */
static bool anti_flat(const drv_ctx *c, void *state, int32_t pod, int *value)
{
    (void)state;
    *value = 100;
    return drv_ctx_state(c)->pods[pod].role != DRV_ROLE_PS;
}

const drv_plugin drv_plugin_ps_anti_affinity = {
    .name = "ps-anti-affinity",
    .timeless = true,
    .doc = "score: prefer nodes without another job's PS (preferred anti-affinity, Volcano-style)",
    .score = anti_score,
    .score_bound = anti_bound,
    .score_flat = anti_flat,
    .bound_mixed = true,
    .score_by_summary = true,
    .starts_blind = drv_starts_blind,
};
