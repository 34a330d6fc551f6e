/*
 * cycle_place.c - where a pod goes: the profile's filters and weighted scores, the best node by
 * a full scan or through the best-node index (exact either way, docs/cycle.md "Cost"), and gang
 * placement with its O(1) rejections (maxfree, totfree, the failed-gang memo), its queue's
 * quota (quota.c) and rollback.
 */
#include "cycle_int.h"

#include <string.h>

/* Notes that the memo now says something of the room the cycle has with decisions [0, ndec)
 * made: rolling back below that gives back room it did not see (drv_ctx_rollback). */
static void memo_seen_at(drv_sched *s, int32_t ndec)
{
    if (s->memo.room_stamp != s->stamp || s->memo.room_dec < ndec)
        s->memo.room_dec = ndec;
    s->memo.room_stamp = s->stamp;
}

/* Remembers that job's gang at `workers` does not fit in the current memo epoch: its
 * placement failed (bounds_only false), or the capacity bounds alone say so (true). */
static void mark_failed(drv_sched *s, int32_t job, int32_t workers, bool bounds_only)
{
    s->memo.job[job] = (job_fail){s->memo.epoch + 1, workers, bounds_only};
}

/* The memo's word on job, when it is of this epoch and no pod of the job moved this cycle
 * (else NULL). */
static const job_fail *failed_now(const drv_sched *s, int32_t job)
{
    const job_fail *f = &s->memo.job[job];
    return f->epoch == s->memo.epoch + 1 && s->assumed.job_touch[job] != s->stamp ? f : NULL;
}

/* Does gang a need at least what gang b needs, in every role, on the same nodes? */
static bool dominates(const gang_shape *a, const gang_shape *b)
{
    if (b->gpu_type >= 0 && a->gpu_type != b->gpu_type)
        return false; /* b failed on one GPU type: a may go to another */
    if (a->topo != b->topo || b->topo < 0)
        return false; /* bound otherwise (or b's pods held it in one domain): other nodes */
    for (int r = 0; r < DRV_NROLES; r++) {
        if (a->missing[r] < b->missing[r])
            return false;
        if (b->missing[r] > 0 && a->cons[r] != b->cons[r])
            return false; /* other constraints, other nodes: b's failure says nothing of a */
        if (b->missing[r] > 0 && !drv_res_fits(b->req[r], a->req[r]))
            return false;
    }
    return true;
}

bool drv_ctx_allowed(const drv_ctx *c, int32_t pod, int32_t node)
{
    return cycle_cons(c, pod, c->snap->st->nodes[node].node_class) >= 0;
}

int drv_ctx_filter(const drv_ctx *c, int32_t pod, int32_t node)
{
    const drv_state *st = c->snap->st;
    const drv_node *n = &st->nodes[node];
    drv_res req = cycle_pod_req(st, pod);
    if (!n->schedulable || !drv_res_fits(req, n->alloc) || cycle_cons(c, pod, n->node_class) < 0)
        return DRV_UNRESOLVABLE;
    int32_t lev, dom;
    if (c->s->topo.nlev > 0 && (dom = cycle_topo_domain(c, st->pods[pod].job, &lev)) != -1 &&
        cycle_topo_node(&c->s->topo, lev, node) != dom)
        return DRV_UNRESOLVABLE; /* outside the domain its gang is bound to (cycle_topo.c) */
    if (!drv_res_fits(req, c->s->assumed.free[node]))
        return DRV_UNSCHEDULABLE;
    const drv_profile *pr = c->s->prof;
    for (int i = 0; i < pr->nuse[DRV_PT_FILTER]; i++) {
        int r =
            pr->use[DRV_PT_FILTER][i].p->filter(c, c->s->plug.ustate[DRV_PT_FILTER][i], pod, node);
        if (r != DRV_FIT)
            return r;
    }
    return DRV_FIT;
}

/* drv_ctx_score given the pod's row of the constraint table (cons_row), read once per query. */
static int64_t score_row(const drv_ctx *c, int32_t pod, int32_t node, const int32_t *row)
{
    const drv_sched *s = c->s;
    const drv_profile *pr = s->prof;
    int64_t sum = 0;
    for (int i = 0; i < pr->nuse[DRV_PT_SCORE]; i++) {
        const drv_plugin_use *u = &pr->use[DRV_PT_SCORE][i];
        int v = u->p->score(c, s->plug.ustate[DRV_PT_SCORE][i], pod, node);
        v = v < 0 ? 0 : v > 100 ? 100 : v;
        sum += (int64_t)u->weight * v;
    }
    if (row) { /* preferred affinity, PreferNoSchedule: only where the pod fits */
        int32_t k = row[c->snap->st->nodes[node].node_class];
        sum += k > 0 ? k : 0;
    }
    return sum;
}

int64_t drv_ctx_score(const drv_ctx *c, int32_t pod, int32_t node)
{
    return score_row(c, pod, node, cycle_cons_row(c, pod));
}

/* Keeps the better of (n, its real score) and the best so far; ties go to the lower id. row:
 * the pod's cons_row. */
static void consider(const drv_ctx *c, int32_t pod, const int32_t *row, int32_t n, int32_t *best,
                     int64_t *best_sc)
{
    if (n < 0)
        return;
    int64_t sc = score_row(c, pod, n, row);
    if (sc > *best_sc || (sc == *best_sc && n < *best)) {
        *best = n;
        *best_sc = sc;
    }
}

/* One query through the index: the pod, its constraint row, and the score plugins to ask per
 * node and per set — those that score every node alike for this pod (score_flat) are added
 * once, into flat, instead. The sums are the same integers drv_ctx_score adds. */
typedef struct bb_arg {
    const drv_ctx *c;
    int32_t pod;
    const int32_t *row; /* cons_row of pod, or NULL */
    int32_t mixed_max;  /* with row: the largest constraint score of the mixed set bounded */
    int64_t flat;       /* the flat plugins' weighted scores */
    int n;              /* plugins asked: */
    const drv_plugin *p[DRV_MAX_SLOT_PLUGINS];
    void *state[DRV_MAX_SLOT_PLUGINS];
    int32_t w[DRV_MAX_SLOT_PLUGINS];
} bb_arg;

static void bb_init(bb_arg *a, const drv_ctx *c, int32_t pod, const int32_t *row)
{
    const drv_sched *s = c->s;
    const drv_profile *pr = s->prof;
    a->c = c;
    a->pod = pod;
    a->row = row;
    a->mixed_max = 0;
    a->flat = 0;
    a->n = 0;
    for (int i = 0; i < pr->nuse[DRV_PT_SCORE]; i++) {
        const drv_plugin_use *u = &pr->use[DRV_PT_SCORE][i];
        void *st = s->plug.ustate[DRV_PT_SCORE][i];
        int v;
        if (u->p->score_flat && u->p->score_flat(c, st, pod, &v)) {
            a->flat += (int64_t)u->weight * (v < 0 ? 0 : v > 100 ? 100 : v);
            continue;
        }
        a->p[a->n] = u->p;
        a->state[a->n] = st;
        a->w[a->n++] = u->weight;
    }
}

/* Branch and bound callbacks: the weighted sum of the score plugins' bounds; the real score. */
static int64_t bb_bound(void *arg, const drv_node_set *set)
{
    const bb_arg *a = arg;
    int64_t sum = a->flat;
    for (int i = 0; i < a->n; i++) {
        int v = a->p[i]->score_bound(a->c, a->state[i], a->pod, set);
        v = v < 0 ? 0 : v > 100 ? 100 : v;
        sum += (int64_t)a->w[i] * v;
    }
    if (a->row) /* the constraint score: exact for one class, the largest for a mixed set */
        sum += set->node_class >= 0 ? a->row[set->node_class] : a->mixed_max;
    return sum;
}

static int64_t bb_score(void *arg, int32_t node)
{
    const bb_arg *a = arg;
    int64_t sum = a->flat;
    for (int i = 0; i < a->n; i++) {
        int v = a->p[i]->score(a->c, a->state[i], a->pod, node);
        v = v < 0 ? 0 : v > 100 ? 100 : v;
        sum += (int64_t)a->w[i] * v;
    }
    if (a->row) { /* as score_row */
        int32_t k = a->row[a->c->snap->st->nodes[node].node_class];
        sum += k > 0 ? k : 0;
    }
    return sum;
}

/* consider, scoring through the query's plugins (bb_score). */
static void consider_bb(const bb_arg *a, int32_t n, int32_t *best, int64_t *best_sc)
{
    int64_t sc = bb_score((void *)a, n);
    if (sc > *best_sc || (sc == *best_sc && n < *best)) {
        *best = n;
        *best_sc = sc;
    }
}

/* The groups of family fam labelled label (every group for -1) and their union for req and
 * the pod's row (drv_nodeindex_union), from the memo when nothing grew since it was made. */
static const union_memo *family_union(drv_sched *s, const bb_arg *a, drv_res req, int fam,
                                      int32_t label)
{
    const drv_nodeindex *ix = s->index.ix;
    uint64_t grown = drv_nodeindex_grown(ix);
    uint32_t h = ((uint32_t)label * 2654435761u) ^ (uint32_t)fam ^
                 (uint32_t)(((uintptr_t)a->row >> 2) * 40503u);
    union_memo *m = &s->index.umemo[(h >> 7) % UNION_MEMO];
    if (m->grown == grown && m->fam == fam && m->label == label && m->row == a->row &&
        memcmp(&m->req, &req, sizeof req) == 0)
        return m;
    m->grown = grown;
    m->fam = fam;
    m->label = label;
    m->row = a->row;
    m->req = req;
    m->g = NULL;
    m->n = label >= 0 ? drv_nodeindex_with_label(ix, fam, label, &m->g)
                      : drv_nodeindex_groups(ix, fam);
    m->fit = drv_nodeindex_union(ix, fam, m->g, m->n, req, fam == DRV_IX_ZONE ? label : -1,
                                 fam == DRV_IX_RACK ? label : -1, a->row, &m->u, &m->nodes,
                                 &m->row_max, m->n <= MAX_ORDER ? m->cand : NULL);
    return m;
}

/* Searches every group of family fam, or those labelled label (>= 0). Returns the number of
 * nodes in the groups. */
static int32_t search_family(const drv_ctx *c, bb_arg *a, drv_res req, int fam, int32_t label,
                             int32_t *best, int64_t *best_sc)
{
    const drv_nodeindex *ix = c->s->index.ix;
    const union_memo *um = family_union(c->s, a, req, fam, label);
    const int32_t *g = um->g;
    int32_t n = um->n, nodes = um->nodes, fit = um->fit;
    drv_node_set u = um->u;
    a->mixed_max = um->row_max;
    if (fit == 0)
        return nodes; /* no node here fits */
    /* One bound for all the classes at once (a mixed set of the same zone and rack labels, so
     * the plugins' bounds hold for each of its nodes): when it is below the best score found,
     * no node here can beat it, nor tie it (a tie would need an equal score). Most placements
     * land on the job's own nodes and skip their racks and zones this way. With label -1 the
     * groups' labels differ: no one set stands for them (but for the global family's). */
    if (fit > 1 && *best >= 0 && c->s->index.mixed && (label >= 0 || fam == DRV_IX_GLOBAL) &&
        bb_bound(a, &u) < *best_sc)
        return nodes;
    if (n > MAX_ORDER) { /* too many to order: in group order */
        for (int32_t i = 0; i < n; i++) {
            int32_t grp = g ? g[i] : i;
            int32_t lab = drv_nodeindex_label(ix, fam, grp);
            if (!a->row || a->row[drv_nodeindex_class(ix, fam, grp)] >= 0)
                drv_nodeindex_search(ix, fam, grp, req, fam == DRV_IX_ZONE ? lab : -1,
                                     fam == DRV_IX_RACK ? lab : -1, bb_bound, bb_score, a, best,
                                     best_sc);
        }
        return nodes;
    }
    /* Bound every group the union covers first (the memo lists them: the others cannot fit
     * or the constraints refuse them), then search the most promising first: the best node
     * found there lets the others be pruned at their root (any order finds the same node). */
    struct {
        int32_t grp;
        int64_t ub;
    } o[MAX_ORDER];
    int32_t m = 0;
    for (int32_t i = 0; i < fit; i++) {
        int32_t grp = um->cand[i];
        int32_t lab = label >= 0 ? label : drv_nodeindex_label(ix, fam, grp);
        int32_t zone = fam == DRV_IX_ZONE ? lab : -1, rack = fam == DRV_IX_RACK ? lab : -1;
        if (!drv_nodeindex_root(ix, fam, grp, req, zone, rack, &u))
            continue;
        int64_t ub = bb_bound(a, &u);
        if (*best >= 0 && ub < *best_sc)
            continue; /* below the best already, which only rises: its search would stop here */
        int32_t at = m++;
        for (; at > 0 && o[at - 1].ub < ub; at--) /* by bound, descending; stable */
            o[at] = o[at - 1];
        o[at].grp = grp;
        o[at].ub = ub;
    }
    for (int32_t i = 0; i < m; i++) {
        if (*best >= 0 && o[i].ub < *best_sc)
            break; /* and so are the rest, bounded no higher: none can beat or tie the best */
        int32_t lab = label >= 0 ? label : drv_nodeindex_label(ix, fam, o[i].grp);
        drv_nodeindex_search_ub(ix, fam, o[i].grp, req, fam == DRV_IX_ZONE ? lab : -1,
                                fam == DRV_IX_RACK ? lab : -1, o[i].ub, bb_bound, bb_score, a, best,
                                best_sc);
    }
    return nodes;
}

/* Room for n entries in the own list's counts (count and at), the old ones dropped: they are
 * filled anew. 0, or DRV_ENOMEM with neither (cap_count 0). */
static int own_counts_room(own_list *o, int32_t n)
{
    drv_free(o->count);
    drv_free(o->at);
    o->count = drv_malloc(sizeof *o->count * (size_t)n);
    o->at = o->count ? drv_malloc(sizeof *o->at * (size_t)n) : NULL;
    if (!o->at) {
        drv_free(o->count);
        o->count = NULL;
        o->cap_count = 0;
        return DRV_ENOMEM;
    }
    o->cap_count = n;
    return 0;
}

/* Lists node n in o unless it is listed already, and counts a pod of the job of role role on
 * it. Returns n's index in o->node. */
static int32_t own_add(const drv_state *st, own_list *o, int32_t n, int role)
{
    if (o->seen[n] == o->seen_tag) {
        if (!o->counted)
            return -1;
        int32_t i = o->at[n];
        o->count[i].pods++;
        o->count[i].ps += role == DRV_ROLE_PS;
        return i;
    }
    o->seen[n] = o->seen_tag;
    if (o->counted) {
        o->at[n] = o->n;
        o->count[o->n] = (own_count){1, role == DRV_ROLE_PS, -1}; /* no kind yet */
    }
    o->node[o->n++] = n;
    int32_t z = st->nodes[n].zone, r = st->nodes[n].rack, i;
    for (i = 0; i < o->nz && o->zones[i] != z; i++)
        ;
    if (i == o->nz && !(o->all_z = o->all_z || o->nz == 16))
        o->zones[o->nz++] = z;
    for (i = 0; i < o->nr && o->racks[i] != r; i++)
        ;
    if (i == o->nr && !(o->all_r = o->all_r || o->nr == 16))
        o->racks[o->nr++] = r;
    return o->n - 1;
}

/* The summary of own node i, and its hash. */
static uint32_t own_summary(const drv_sched *s, const drv_state *st, const own_list *o, int32_t i,
                            own_sum *out)
{
    int32_t n = o->node[i];
    const drv_node *nd = &st->nodes[n];
    memset(out, 0, sizeof *out);
    out->free = s->assumed.free[n];
    out->alloc = nd->alloc;
    out->zone = nd->zone;
    out->rack = nd->rack;
    out->node_class = nd->node_class;
    out->nps = s->assumed.nrole[n * DRV_NROLES + DRV_ROLE_PS];
    out->cnt = o->count[i].pods;
    out->ps = o->count[i].ps;
    out->schedulable = nd->schedulable;
    uint64_t h = (uint64_t)out->free.cpu * 0x9E3779B97F4A7C15u;
    h ^= (uint64_t)out->free.mem + (h << 6) + (h >> 2);
    h ^= (uint64_t)out->free.gpu * 31u + (uint64_t)out->alloc.cpu + ((uint64_t)out->alloc.mem << 7);
    h ^= ((uint64_t)(uint32_t)out->cnt << 32) ^ (uint64_t)(uint32_t)out->rack * 0x85EBCA6Bu ^
         (uint64_t)(uint32_t)out->zone * 0xC2B2AE35u ^ (uint64_t)(uint32_t)out->node_class << 20 ^
         (uint64_t)(uint32_t)out->ps << 48 ^ (uint64_t)(uint32_t)out->nps << 40;
    h *= 0xFF51AFD7ED558CCDu;
    return (uint32_t)(h >> 32);
}

/* Puts own node i in the kind of its summary (made when new). False when there are too many
 * kinds. */
static bool own_kind_join(const drv_sched *s, const drv_state *st, own_list *o, int32_t i)
{
    own_sum sum;
    uint32_t h = own_summary(s, st, o, i, &sum), at = h & (2 * OWN_KINDS - 1);
    while (o->kslot[at] && (o->kind[o->kslot[at] - 1].hash != h ||
                            memcmp(&o->kind[o->kslot[at] - 1].sum, &sum, sizeof sum) != 0))
        at = (at + 1) & (2 * OWN_KINDS - 1);
    int32_t k = o->kslot[at] - 1;
    if (k < 0) {
        if (o->nkinds == OWN_KINDS)
            return false;
        k = o->nkinds++;
        o->kslot[at] = (int16_t)(k + 1);
        o->kind[k] = (own_kind){sum, h, 0, -1};
    }
    own_kind *kd = &o->kind[k];
    if (kd->members == 0) {
        o->live_at[k] = (int16_t)o->nlive;
        o->live[o->nlive++] = (int16_t)k;
    }
    if (kd->members++ == 0 || o->node[i] < o->node[kd->rep])
        kd->rep = i;
    o->count[i].kind = k;
    return true;
}

/* Takes own node i out of its kind; the kind's lowest id is looked for again when it was i. */
static void own_kind_leave(own_list *o, int32_t i)
{
    int32_t k = o->count[i].kind;
    if (k < 0)
        return;
    o->count[i].kind = -1;
    own_kind *kd = &o->kind[k];
    if (--kd->members == 0) { /* out of the live list: the last one takes its place */
        int32_t last = o->live[--o->nlive];
        o->live[o->live_at[k]] = (int16_t)last;
        o->live_at[last] = o->live_at[k];
        return;
    }
    if (kd->rep != i)
        return;
    kd->rep = -1;
    for (int32_t e = 0; e < o->n; e++) /* O(own nodes): only when the kind's first one moved */
        if (o->count[e].kind == k && (kd->rep < 0 || o->node[e] < o->node[kd->rep]))
            kd->rep = e;
}

/* Own nodes are sorted into kinds only when there are more than this many: fewer are scored
 * one by one (own_best), at most OWN_KINDS_FROM scores, which spares a gang on a node or two
 * re-sorting a node at every bind. Until then kinds_ok is false and nkinds 0 (below OWN_KINDS,
 * which is what an overflow leaves). */
enum { OWN_KINDS_FROM = 3 };

/* Sorts every own node into kinds anew, when there are enough of them. */
static void own_kinds_build(const drv_sched *s, const drv_state *st, own_list *o)
{
    o->nkinds = o->nlive = 0;
    if (o->n <= OWN_KINDS_FROM) {
        o->kinds_ok = false; /* not yet */
        return;
    }
    memset(o->kslot, 0, sizeof o->kslot);
    o->kinds_ok = o->counted;
    for (int32_t i = 0; i < o->n && o->kinds_ok; i++)
        o->kinds_ok = own_kind_join(s, st, o, i);
}

/* The nodes, zones and racks of the placed pods of pod's job, in the assumed state, how many
 * of the job's pods each holds, and their kinds. */
static const own_list *own_nodes(const drv_ctx *c, int32_t pod)
{
    const drv_state *st = c->snap->st;
    drv_sched *s = c->s;
    own_list *o = &s->own;
    int32_t job = st->pods[pod].job, at;
    bool same = o->cycle == s->stamp && o->job == job;
    if (same && o->changes + 1 == c->changes && o->pod_free &&
        (at = cycle_pod_node(c, o->pod)) >= 0) {
        /* The one change since: o->pod placed on at, whose summary alone changed. */
        int32_t i = own_add(st, o, at, st->pods[o->pod].role);
        if (o->kinds_ok) {
            own_kind_leave(o, i);
            o->kinds_ok = own_kind_join(s, st, o, i);
        } else if (o->counted && o->nkinds < OWN_KINDS) { /* not sorted yet (not overflowed) */
            own_kinds_build(s, st, o);
        }
    } else if (!same || o->changes != c->changes) {
        if (++o->seen_tag == 0) { /* a new tag marks no node */
            memset(o->seen, 0, (size_t)o->cap_seen * sizeof *o->seen);
            o->seen_tag = 1;
        }
        /* The counts need room for every node; the list has it (cycle.c). On failure, the own
         * nodes are scored without counts, each of them. */
        if (o->cap_count < st->nnodes)
            own_counts_room(o, st->nnodes + 1);
        o->counted = o->count != NULL;
        o->n = o->nz = o->nr = 0;
        o->all_z = o->all_r = false;
        const drv_job *j = &st->jobs[job];
        for (int32_t k = 0; k < j->pod_count; k++)
            if ((at = cycle_pod_node(c, j->pod_base + k)) >= 0)
                own_add(st, o, at, st->pods[j->pod_base + k].role);
        own_kinds_build(s, st, o);
    }
    o->cycle = s->stamp;
    o->changes = c->changes;
    o->job = job;
    o->pod = pod;
    o->pod_free = cycle_pod_node(c, pod) < 0;
    return o;
}

/* The job's own nodes that may take the pod, scored exactly into (best, best_sc). With every
 * score plugin scoring by summary (score_by_summary) and the pod not placed itself (so the
 * job's pods counted on a node are the ones its scores see), one node of each kind is scored,
 * the lowest id, which wins the kind's tie: O(kinds). Otherwise every own node: O(own nodes).
 * drv_ctx_filter inline: the index serves only profiles without filter plugins. */
static void own_best(const bb_arg *a, drv_res req, const own_list *o, int32_t *best,
                     int64_t *best_sc)
{
    const drv_ctx *c = a->c;
    const int32_t *row = a->row;
    if (c->s->index.summary && o->kinds_ok && o->pod_free) {
        for (int32_t l = 0; l < o->nlive; l++) {
            const own_kind *kd = &o->kind[o->live[l]];
            if (kd->sum.schedulable && drv_res_fits(req, kd->sum.alloc) &&
                drv_res_fits(req, kd->sum.free) && (!row || row[kd->sum.node_class] >= 0))
                consider_bb(a, o->node[kd->rep], best, best_sc);
        }
        return;
    }
    const drv_state *st = c->snap->st;
    for (int32_t i = 0; i < o->n; i++) {
        int32_t n = o->node[i];
        const drv_node *nd = &st->nodes[n];
        if (nd->schedulable && drv_res_fits(req, nd->alloc) &&
            drv_res_fits(req, c->s->assumed.free[n]) && (!row || row[nd->node_class] >= 0))
            consider_bb(a, n, best, best_sc);
    }
}

/*
 * Best node through the index, exact (docs/cycle.md, "Cost"). With one keyed score alone: each
 * allocatable class's best fitting node by key. Otherwise branch and bound, covering every node
 * with a search whose bounds hold for it (drv_node_set): the job's own nodes are scored exactly;
 * nodes of the job's racks are searched rack by rack; other nodes of the job's zones zone by
 * zone; all others class by class. Leaves are scored for real, so every candidate is exact.
 */
static int32_t indexed_best(const drv_ctx *c, int32_t pod, drv_res req)
{
    int32_t best = -1;
    int64_t best_sc = -1;
    const int32_t *row = cycle_cons_row(c, pod);
    if (!c->s->index.bb) {
        /* A group's nodes share a class, so its constraint score: its best by key is its
         * best by score. */
        const drv_nodeindex *ix = c->s->index.ix;
        int32_t ng = drv_nodeindex_groups(ix, DRV_IX_GLOBAL);
        for (int32_t g = 0; g < ng; g++)
            if (!row || row[drv_nodeindex_class(ix, DRV_IX_GLOBAL, g)] >= 0)
                consider(c, pod, row, drv_nodeindex_best(ix, DRV_IX_GLOBAL, g, req), &best,
                         &best_sc);
        return best;
    }
    bb_arg a;
    bb_init(&a, c, pod, row);
    const own_list *o = own_nodes(c, pod);
    own_best(&a, req, o, &best, &best_sc); /* each node once, however many pods */
    const int32_t *zones = o->zones, *racks = o->racks;
    int32_t nz = o->nz, nr = o->nr;
    bool all_z = o->all_z, all_r = o->all_r;
    if (all_r) { /* spread over too many racks to list: every rack group covers its nodes */
        search_family(c, &a, req, DRV_IX_RACK, -1, &best, &best_sc);
        return best;
    }
    int32_t in_racks = 0;
    for (int32_t i = 0; i < nr; i++)
        in_racks += search_family(c, &a, req, DRV_IX_RACK, racks[i], &best, &best_sc);
    /* Each indexed node is in one rack group: when the job's racks hold all of them (a job
     * across every rack of a small cluster), no node is left for the zones. */
    if (in_racks >= c->s->index.nodes)
        return best;
    if (all_z) { /* every zone group: together they cover every node outside the racks */
        search_family(c, &a, req, DRV_IX_ZONE, -1, &best, &best_sc);
        return best;
    }
    int32_t covered = 0;
    for (int32_t i = 0; i < nz; i++)
        covered += search_family(c, &a, req, DRV_IX_ZONE, zones[i], &best, &best_sc);
    /* The job's zones hold every indexed node (one-zone clusters): no node is left for the
     * global groups. */
    if (covered < c->s->index.nodes)
        search_family(c, &a, req, DRV_IX_GLOBAL, -1, &best, &best_sc);
    return best;
}

/*
 * Best node of domain dom of level lev (cycle_topo.c) for a pod whose gang is bound to it,
 * exact: a level on the nodes' racks (or zones, without branch and bound) is a look-up of the
 * domain's groups in the index's rack (zone) family, searched as indexed_best searches them,
 * the job's own nodes in the domain scored first; any other level's domain is scanned, its
 * nodes filtered and scored one by one (O(nodes of the domain)).
 */
static int32_t domain_best(const drv_ctx *c, int32_t pod, drv_res req, int32_t lev, int32_t dom)
{
    const topo_table *t = &c->s->topo;
    const drv_nodeindex *ix = c->s->index.ix;
    int32_t best = -1, d = t->base[lev] + dom;
    int64_t best_sc = -1;
    if (dom < 0)
        return -1; /* its pods lie in no one domain: none fits */
    int fam = t->field[lev];
    if (fam == DRV_IX_RACK || (fam == DRV_IX_ZONE && !c->s->index.bb)) {
        const int32_t *row = cycle_cons_row(c, pod);
        if (!c->s->index.bb) { /* as indexed_best: each group's best by key */
            const int32_t *g;
            int32_t n = drv_nodeindex_with_label(ix, fam, t->name[d], &g);
            for (int32_t i = 0; i < n; i++)
                if (!row || row[drv_nodeindex_class(ix, fam, g[i])] >= 0)
                    consider(c, pod, row, drv_nodeindex_best(ix, fam, g[i], req), &best, &best_sc);
            return best;
        }
        bb_arg a;
        bb_init(&a, c, pod, row);
        const own_list *o = own_nodes(c, pod);
        const drv_state *st = c->snap->st;
        for (int32_t i = 0; i < o->n; i++) { /* the own nodes first, as indexed_best */
            int32_t n = o->node[i];
            const drv_node *nd = &st->nodes[n];
            if (cycle_topo_node(t, lev, n) == dom && nd->schedulable &&
                drv_res_fits(req, nd->alloc) && drv_res_fits(req, c->s->assumed.free[n]) &&
                (!row || row[nd->node_class] >= 0))
                consider_bb(&a, n, &best, &best_sc);
        }
        search_family(c, &a, req, fam, t->name[d], &best, &best_sc);
        return best;
    }
    for (int32_t k = t->start[d]; k < t->start[d + 1]; k++) {
        int32_t n = t->nodes[k]; /* in id order: the first of equal scores is the lowest id */
        if (drv_ctx_filter(c, pod, n) != DRV_FIT)
            continue;
        int64_t sc = drv_ctx_score(c, pod, n);
        if (sc > best_sc) {
            best = n;
            best_sc = sc;
        }
    }
    return best;
}

int32_t drv_ctx_best_node(const drv_ctx *c, int32_t pod)
{
    const drv_state *st = c->snap->st;
    drv_sched *s = c->s;
    drv_res req = cycle_pod_req(st, pod);
    if (!drv_res_fits(req, s->assumed.maxfree))
        return -1; /* larger than any node's free room: no need to look */
    int32_t lev, dom;
    if (s->index.ok && s->topo.nlev > 0 &&
        (dom = cycle_topo_domain(c, st->pods[pod].job, &lev)) != -1)
        return domain_best(c, pod, req, lev, dom);
    if (s->index.ok)
        return indexed_best(c, pod, req);
    int32_t best = -1;
    int64_t best_score = -1;
    drv_res exact = {0, 0, 0};
    for (int32_t n = 0; n < st->nnodes; n++) {
        if (st->nodes[n].schedulable)
            exact = drv_res_max(exact, s->assumed.free[n]);
        if (drv_ctx_filter(c, pod, n) != DRV_FIT)
            continue;
        int64_t sc = drv_ctx_score(c, pod, n);
        if (sc > best_score) {
            best = n;
            best_score = sc;
        }
    }
    s->assumed.maxfree = exact; /* the scan saw every node: the bound is exact again */
    return best;
}

/* Places one pod, its quota already admitted (a gang's is checked whole). */
static int32_t place_one(drv_ctx *c, int32_t pod)
{
    int32_t n = drv_ctx_best_node(c, pod);
    if (n >= 0 && drv_ctx_bind(c, pod, n) != 0)
        return -1;
    return n;
}

int32_t drv_ctx_place_pod(drv_ctx *c, int32_t pod)
{
    const drv_state *st = c->snap->st;
    if (st->nqueues > 0 &&
        !drv_ctx_queue_fits(c, st->jobs[st->pods[pod].job].queue, cycle_pod_req(st, pod)))
        return -1;
    return place_one(c, pod);
}

/* Intra-job placement order: PS first, then chief, workers, evaluators (Volcano task-order). */
static const int role_order[DRV_NROLES] = {DRV_ROLE_PS, DRV_ROLE_CHIEF, DRV_ROLE_WORKER,
                                           DRV_ROLE_EVALUATOR};

/* What the gang of job at `workers` still needs (its shape), and whether that passes the
 * capacity bounds: every missing pod within maxfree, all of them within totfree. Changes
 * nothing. */
static bool gang_room(const drv_ctx *c, int32_t job, int32_t workers, gang_shape *shape)
{
    const drv_state *st = c->snap->st;
    const drv_job *j = &st->jobs[job];
    const drv_sched *s = c->s;
    drv_res need = {0, 0, 0};
    shape->gpu_type = s->cons.ntypes > 0 ? cycle_job_gpu_type(c, job) : -1;
    /* Bound to a level: compares only with gangs bound alike, and not at all when some of its
     * pods are placed (its failure then held in their domain alone). */
    shape->topo = 0;
    if (s->topo.nlev > 0 && j->topo_mode != DRV_TOPO_NONE) {
        bool some = s->assumed.job_touch[job] == s->stamp;
        for (int r = 0; r < DRV_NROLES; r++)
            some = some || j->bound[r] > 0;
        shape->topo = some ? -1 : j->topo_mode * DRV_MAX_TOPO + j->topo_level;
    }
    for (int r = 0; r < DRV_NROLES; r++) {
        shape->missing[r] = cycle_role_missing(c, job, r, workers);
        shape->req[r] = j->role[r].req;
        shape->cons[r] = j->cons[r];
        if (shape->missing[r] == 0)
            continue;
        if (!drv_res_fits(j->role[r].req, s->assumed.maxfree))
            return false;
        need = drv_res_add(need, drv_res_scale(j->role[r].req, shape->missing[r]));
    }
    return drv_res_fits(need, s->assumed.totfree);
}

/* Whether the job's queue admits what the gang of this shape misses (true with no queue). */
static bool shape_quota(const drv_ctx *c, int32_t job, const gang_shape *shape)
{
    const drv_state *st = c->snap->st;
    if (st->nqueues == 0)
        return true;
    drv_res need = {0, 0, 0};
    for (int r = 0; r < DRV_NROLES; r++)
        need = drv_res_add(need, drv_res_scale(shape->req[r], shape->missing[r]));
    return drv_ctx_queue_fits(c, st->jobs[job].queue, need);
}

/* Did the gang of job at `workers` or fewer fail the capacity bounds since capacity last grew,
 * with none of its pods moved this cycle? Then it fails them again: capacity only shrank, and
 * more workers only need more. O(1), reading no job. */
static bool room_failed(const drv_sched *s, int32_t job, int32_t workers)
{
    const job_fail *f = failed_now(s, job);
    return f && f->bounds_only && f->workers <= workers;
}

/* An admit plugin asks this of every queued job every cycle: a job that failed the bounds is
 * remembered (room_failed), so a long queue that cannot start costs O(1) per job until
 * capacity is given back, not a read of each job's roles. Quota failures are not remembered
 * (drv_ctx_place_gang says why). */
bool drv_ctx_gang_room(const drv_ctx *c, int32_t job, int32_t workers)
{
    drv_sched *s = c->s;
    if (room_failed(s, job, workers))
        return false;
    gang_shape shape;
    if (!gang_room(c, job, workers, &shape)) {
        mark_failed(s, job, workers, true);
        s->memo.room_marked = true;
        memo_seen_at(s, c->out->n);
        return false;
    }
    return shape_quota(c, job, &shape);
}

/* Scales job to `workers` and places every pod its roles miss, PS first (role_order). 1 when
 * all are placed, 0 when one does not fit, a negative code on error; either way the caller
 * rolls back what it must. */
static int place_roles(drv_ctx *c, int32_t job, int32_t workers)
{
    const drv_state *st = c->snap->st;
    const drv_job *j = &st->jobs[job];
    if (drv_ctx_scale(c, job, workers) != 0)
        return DRV_ENOMEM;
    for (int k = 0; k < DRV_NROLES; k++) {
        int r = role_order[k];
        int32_t want = r == DRV_ROLE_WORKER ? workers : j->target[r];
        int32_t have = 0;
        int32_t first = drv_job_pod(st, job, r, 0);
        int32_t nslots = 0;
        while (first >= 0 && drv_job_pod(st, job, r, nslots) >= 0)
            nslots++;
        for (int32_t i = 0; i < nslots; i++)
            if (cycle_pod_node(c, first + i) >= 0)
                have++;
        for (int32_t i = 0; i < nslots && have < want; i++) {
            int32_t pod = first + i;
            if (cycle_pod_node(c, pod) >= 0)
                continue;
            if (place_one(c, pod) < 0) {
                int err = drv_ctx_error(c);
                return err ? err : 0;
            }
            have++;
        }
    }
    return 1;
}

/* Does some role of job that asks for GPUs miss pods at `workers`? */
static bool gang_wants_gpus(const drv_ctx *c, int32_t job, int32_t workers)
{
    const drv_job *j = &c->snap->st->jobs[job];
    for (int r = 0; r < DRV_NROLES; r++)
        if (j->role[r].req.gpu > 0 && cycle_role_missing(c, job, r, workers) > 0)
            return true;
    return false;
}

/*
 * place_roles on one GPU type (state.h, "GPU types"): a job whose GPU pods hold a type stays
 * on it (cycle_cons_row); one that holds none is placed as the scores choose (its first GPU
 * pod's node sets the type the rest follow) and, when that fails, on each other type in turn,
 * pinned, so a gang that fits on some type is found: at most ntypes tries. Without types, one
 * place_roles. On failure everything since m is rolled back. 1, 0 or a negative code.
 */
static int place_typed(drv_ctx *c, int32_t job, int32_t workers, drv_mark m)
{
    cons_table *t = &c->s->cons;
    int rc = place_roles(c, job, workers);
    if (rc == 1)
        return 1;
    int32_t tried = rc == 0 && t->ntypes > 0 ? cycle_job_gpu_type(c, job) : -1;
    drv_ctx_rollback(c, m);
    if (rc < 0 || t->ntypes == 0 || cycle_job_gpu_type(c, job) >= 0 ||
        !gang_wants_gpus(c, job, workers))
        return rc;
    for (int32_t ty = 0; ty < t->ntypes && rc == 0; ty++) {
        if (ty == tried)
            continue;
        t->pin_job = job;
        t->pin_type = ty;
        rc = place_roles(c, job, workers);
        t->pin_job = -1;
        if (rc != 1)
            drv_ctx_rollback(c, m);
    }
    return rc;
}

int drv_ctx_place_gang(drv_ctx *c, int32_t job, int32_t workers)
{
    drv_sched *s = c->s;
    /* The same gang already failed, or failed the capacity bounds at this size or fewer
     * (drv_ctx_gang_room's mark), and no capacity was given back since: O(1). */
    const job_fail *f = failed_now(s, job);
    if (f && (f->bounds_only ? f->workers <= workers : f->workers == workers))
        return 0;
    /* Necessary conditions first: every unplaced pod within maxfree, all within totfree, and
     * not at least as large as a gang that already failed. */
    gang_shape shape;
    if (!gang_room(c, job, workers, &shape))
        return 0;
    for (int32_t k = 0; k < s->memo.nfailed; k++)
        if (dominates(&shape, &s->memo.failed[k])) {
            mark_failed(s, job, workers, false);
            memo_seen_at(s, c->out->n);
            return 0;
        }
    /* Quota last, and remembered nowhere: the memos speak of capacity, which another job's
     * gang of this shape in another queue may well find, and a queue's room grows without any
     * capacity given back (its quota raised, a borrower's use falling in its cohort). */
    if (!shape_quota(c, job, &shape))
        return 0;
    drv_mark m = drv_ctx_mark(c);
    int rc = cycle_topo_place(c, job, workers, m, place_typed);
    if (rc != 0)
        return rc < 0 ? rc : 1;
    int err = drv_ctx_error(c);
    if (!err && s->memo.nfailed < MAX_FAILED)
        s->memo.failed[s->memo.nfailed++] = shape;
    if (!err) {
        mark_failed(s, job, workers, false);
        memo_seen_at(s, c->out->n);
    }
    return err;
}
