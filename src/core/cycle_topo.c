/*
 * cycle_topo.c - topology-bound gangs (issue 29; Kueue's topology-aware scheduling, Volcano's
 * HyperNodes): a gang bound to a level is placed whole inside one domain of it (state.h,
 * "Topology-bound gangs").
 *
 * A level's binding is a constraint on the gang as a whole, not on each pod, so it is met by
 * choosing the domain first, then placing the gang inside it as ever (the profile's scores, the
 * node index, GPU types): while a domain is tried it is pinned (topo_table.pin_*), and the
 * filter and the best-node search see only its nodes (cycle_place.c). The domains are tried
 * best fit first: those whose free room holds the whole gang, the least room first (GPUs, then
 * CPU, then memory, then the lower index), so a small gang leaves the large free domains to
 * the large gangs. Free room in sum is necessary, not enough (a rack of 4 nodes with 2 free
 * GPUs each holds no pod of 4 GPUs): the next domain is tried when one fails, so a gang that
 * fits in some domain is found. A required level tries its domains and no other; a preferred
 * level its own, then each wider level's, then anywhere.
 *
 * Worked example: racks r0 (12 free GPUs), r1 (16), r2 (32); a gang of 2 workers of 8 GPUs
 * required in one rack: r0 cannot hold 16, r1 can and has the least room of r1 and r2: the gang
 * goes to r1 (if r1's nodes cannot take two pods of 8, to r2). A gang of 4 x 8 GPUs waits: no
 * rack has 32 - but r2 does; then one whose 32 free GPUs lie 4 per node (no pod of 8 fits)
 * fails there and waits.
 *
 * Plugins read the table through a read-only query (cycle.h, "Topology domains"; the end of this
 * file): a level's domains, a node's, a domain's free room and what a job holds there, in the
 * assumed state - what defrag.c weighs before moving jobs out of a fragmented domain.
 *
 * Cost: a gang tries at most the level's domains (all of them only when it fits none: the
 * failed-gang memo then remembers it); choosing the next costs O(domains).
 */
#include "cycle_int.h"

#include <stdlib.h>
#include <string.h>

/* Per node and level, the value of the level's label (interned; 0: none): a class's labels. */
static int32_t node_value(const drv_state *st, int32_t n, int32_t lev)
{
    return drv_node_domain(st, n, lev);
}

typedef struct vn {
    int32_t value, node;
} vn;

static int cmp_vn(const void *a, const void *b)
{
    const vn *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return (x->node > y->node) - (x->node < y->node);
}

/* Reads one level: every node's domain, the domains' names and nodes (by value, each in id
 * order), and whether the level is the nodes' racks or zones. scratch: nnodes entries. */
static void read_level(topo_table *t, const drv_state *st, int32_t lev, vn *scratch,
                       int32_t *ndom_all)
{
    int32_t nn = st->nnodes, m = 0;
    bool rack = true, zone = true;
    for (int32_t n = 0; n < nn; n++) {
        int32_t v = node_value(st, n, lev);
        t->dom[(size_t)lev * (size_t)nn + (size_t)n] = -1;
        if (v > 0)
            scratch[m++] = (vn){v, n};
        rack = rack && st->nodes[n].rack == v;
        zone = zone && st->nodes[n].zone == v;
    }
    qsort(scratch, (size_t)m, sizeof *scratch, cmp_vn);
    t->base[lev] = *ndom_all;
    int32_t d = *ndom_all - 1, at = t->start[*ndom_all];
    for (int32_t i = 0; i < m; i++) {
        if (i == 0 || scratch[i].value != scratch[i - 1].value) {
            d++;
            t->name[d] = scratch[i].value;
            t->start[d] = at;
        }
        t->dom[(size_t)lev * (size_t)nn + (size_t)scratch[i].node] = d - t->base[lev];
        t->nodes[at++] = scratch[i].node;
    }
    t->ndom[lev] = d + 1 - t->base[lev];
    *ndom_all = d + 1;
    t->start[*ndom_all] = at;
    t->field[lev] = nn > 0 && rack ? DRV_IX_RACK : nn > 0 && zone ? DRV_IX_ZONE : -1;
}

int cycle_topo_refresh(drv_sched *s, const drv_state *st)
{
    topo_table *t = &s->topo;
    if (st->ntopo == 0) {
        t->nlev = 0;
        t->built = false;
        return 0;
    }
    if (t->built && t->nlev == st->ntopo && t->epoch == st->node_epoch && t->nnodes == st->nnodes &&
        memcmp(t->key, st->topo_key, sizeof *t->key * (size_t)st->ntopo) == 0)
        return 0;
    t->built = false;
    t->free_stamp = 0;
    t->memo_job = -1;
    int32_t nn = st->nnodes, nl = st->ntopo;
    size_t most = (size_t)nl * (size_t)nn; /* domains at most, and node entries */
    vn *scratch = drv_malloc(sizeof *scratch * (size_t)(nn > 0 ? nn : 1));
    if (!scratch || drv_grow(&t->dom, sizeof *t->dom, &t->cap_dom, (int32_t)most + 1) != 0 ||
        drv_grow(&t->name, sizeof *t->name, &t->cap_name, (int32_t)most + 1) != 0 ||
        drv_grow(&t->start, sizeof *t->start, &t->cap_start, (int32_t)most + 2) != 0 ||
        drv_grow(&t->nodes, sizeof *t->nodes, &t->cap_nodes, (int32_t)most + 1) != 0) {
        drv_free(scratch);
        t->nlev = 0;
        return DRV_ENOMEM;
    }
    int32_t all = 0;
    t->start[0] = 0;
    for (int32_t lev = 0; lev < nl; lev++)
        read_level(t, st, lev, scratch, &all);
    drv_free(scratch);
    drv_free(t->free);
    t->free = drv_malloc(sizeof *t->free * (size_t)(all > 0 ? all : 1));
    drv_free(t->cand);
    t->cand = drv_malloc(sizeof *t->cand * (size_t)(all > 0 ? all : 1));
    if (!t->free || !t->cand) {
        t->nlev = 0;
        return DRV_ENOMEM;
    }
    memcpy(t->key, st->topo_key, sizeof *t->key * (size_t)nl);
    t->nlev = nl;
    t->epoch = st->node_epoch;
    t->nnodes = nn;
    t->built = true;
    return 0;
}

/* Sums the domains' free room in the assumed state, once a cycle. O(levels · nodes). */
static void free_fill(drv_sched *s, const drv_state *st)
{
    topo_table *t = &s->topo;
    if (t->free_stamp == s->stamp)
        return;
    int32_t all = t->base[t->nlev - 1] + t->ndom[t->nlev - 1];
    memset(t->free, 0, sizeof *t->free * (size_t)all);
    for (int32_t lev = 0; lev < t->nlev; lev++)
        for (int32_t n = 0; n < t->nnodes; n++) {
            int32_t d = t->dom[(size_t)lev * (size_t)t->nnodes + (size_t)n];
            if (d >= 0 && st->nodes[n].schedulable)
                t->free[t->base[lev] + d] =
                    drv_res_add(t->free[t->base[lev] + d], s->assumed.free[n]);
        }
    t->free_stamp = s->stamp;
}

void cycle_topo_take(drv_sched *s, const drv_state *st, int32_t node, drv_res r, int sign)
{
    topo_table *t = &s->topo;
    if (!st->nodes[node].schedulable || node >= t->nnodes)
        return;
    for (int32_t lev = 0; lev < t->nlev; lev++) {
        int32_t d = t->dom[(size_t)lev * (size_t)t->nnodes + (size_t)node];
        if (d < 0)
            continue;
        drv_res *f = &t->free[t->base[lev] + d];
        *f = sign > 0 ? drv_res_sub(*f, r) : drv_res_add(*f, r);
    }
}

/* The one domain at lev of every placed pod of job in the assumed state: -1 when none is
 * placed, -2 when one has no domain there or two differ. O(the job's pods). */
static int32_t placed_domain(const drv_ctx *c, int32_t job, int32_t lev)
{
    const drv_state *st = c->snap->st;
    const topo_table *t = &c->s->topo;
    const drv_job *j = &st->jobs[job];
    int32_t d = -1;
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t at = cycle_pod_node(c, j->pod_base + k);
        if (at < 0)
            continue;
        int32_t e = at < t->nnodes ? t->dom[(size_t)lev * (size_t)t->nnodes + (size_t)at] : -1;
        if (e < 0 || (d >= 0 && e != d))
            return -2;
        d = e;
    }
    return d;
}

int32_t cycle_topo_domain(const drv_ctx *c, int32_t job, int32_t *level)
{
    drv_sched *s = c->s;
    topo_table *t = &s->topo;
    const drv_job *j = &c->snap->st->jobs[job];
    if (t->nlev == 0 || j->topo_mode == DRV_TOPO_NONE)
        return -1;
    if (t->pin_job == job) {
        *level = t->pin_level;
        return t->pin_dom;
    }
    if (j->topo_mode != DRV_TOPO_REQUIRED || j->topo_level >= t->nlev)
        return -1;
    *level = j->topo_level;
    if (t->memo_job == job && t->memo_stamp == s->stamp && t->memo_changes == c->changes)
        return t->memo_dom;
    t->memo_job = job;
    t->memo_dom = placed_domain(c, job, j->topo_level);
    t->memo_stamp = s->stamp;
    t->memo_changes = c->changes;
    return t->memo_dom;
}

/* Orders domains by the free room that matters to need (GPUs first when it asks for them),
 * least first; the lower index among equals. */
static int cmp_cand(const void *a, const void *b)
{
    const struct topo_cand *x = a, *y = b;
    if (x->free.gpu != y->free.gpu)
        return x->free.gpu < y->free.gpu ? -1 : 1;
    if (x->free.cpu != y->free.cpu)
        return x->free.cpu < y->free.cpu ? -1 : 1;
    if (x->free.mem != y->free.mem)
        return x->free.mem < y->free.mem ? -1 : 1;
    return (x->dom > y->dom) - (x->dom < y->dom);
}

/* Tries the gang in each domain of lev that may hold it, best fit first. 1 placed, 0 none
 * held it, or a negative code. */
static int place_level(drv_ctx *c, int32_t job, int32_t workers, drv_mark m, int32_t lev,
                       cycle_place_fn place)
{
    drv_sched *s = c->s;
    topo_table *t = &s->topo;
    const drv_state *st = c->snap->st;
    int32_t at = placed_domain(c, job, lev), n = 0;
    if (at == -2)
        return 0; /* its pods already span two domains (or lie outside any): none holds it */
    drv_res need = cycle_gang_need(c, job, workers);
    free_fill(s, st);
    for (int32_t d = at >= 0 ? at : 0; d < (at >= 0 ? at + 1 : t->ndom[lev]); d++) {
        drv_res f = t->free[t->base[lev] + d];
        if (drv_res_fits(need, f))
            t->cand[n++] = (struct topo_cand){f, d};
    }
    int rc = 0;
    for (int32_t i = 0; i < n && rc == 0; i++) {
        /* The best fit of those left, chosen as it is needed (the first holds the gang, mostly:
         * O(domains) then, not a sort of them). */
        int32_t b = i;
        for (int32_t k = i + 1; k < n; k++)
            if (cmp_cand(&t->cand[k], &t->cand[b]) < 0)
                b = k;
        struct topo_cand x = t->cand[i];
        t->cand[i] = t->cand[b];
        t->cand[b] = x;
        t->pin_job = job;
        t->pin_level = lev;
        t->pin_dom = t->cand[i].dom;
        rc = place(c, job, workers, m);
        t->pin_job = -1;
    }
    return rc;
}

int cycle_topo_place(drv_ctx *c, int32_t job, int32_t workers, drv_mark m, cycle_place_fn place)
{
    const drv_job *j = &c->snap->st->jobs[job];
    topo_table *t = &c->s->topo;
    if (t->nlev == 0 || j->topo_mode == DRV_TOPO_NONE || j->topo_level >= t->nlev)
        return place(c, job, workers, m);
    if (j->topo_mode == DRV_TOPO_REQUIRED)
        return place_level(c, job, workers, m, j->topo_level, place);
    int rc = 0;
    for (int32_t lev = j->topo_level; lev >= 0 && rc == 0; lev--)
        rc = place_level(c, job, workers, m, lev, place);
    return rc == 0 ? place(c, job, workers, m) : rc;
}

/* ---- the read-only query (cycle.h, "Topology domains"): what defrag.c reads ---------------- */

int32_t drv_ctx_topo_domains(const drv_ctx *c, int32_t lev)
{
    const topo_table *t = &c->s->topo;
    return lev >= 0 && lev < t->nlev ? t->ndom[lev] : 0;
}

int32_t drv_ctx_topo_node_domain(const drv_ctx *c, int32_t lev, int32_t node)
{
    const topo_table *t = &c->s->topo;
    if (lev < 0 || lev >= t->nlev || node < 0)
        return -1;
    return cycle_topo_node(t, lev, node);
}

drv_res drv_ctx_topo_free(const drv_ctx *c, int32_t lev, int32_t dom)
{
    const topo_table *t = &c->s->topo;
    const drv_state *st = c->snap->st;
    drv_res f = {0, 0, 0};
    if (dom < 0 || dom >= drv_ctx_topo_domains(c, lev))
        return f;
    int32_t d = t->base[lev] + dom;
    for (int32_t i = t->start[d]; i < t->start[d + 1]; i++) {
        int32_t n = t->nodes[i];
        if (st->nodes[n].schedulable)
            f = drv_res_add(f, c->s->assumed.free[n]);
    }
    return f;
}

drv_res drv_ctx_topo_held(const drv_ctx *c, int32_t job, int32_t lev, int32_t dom)
{
    const drv_state *st = c->snap->st;
    const drv_job *j = &st->jobs[job];
    drv_res h = {0, 0, 0};
    if (dom < 0 || dom >= drv_ctx_topo_domains(c, lev))
        return h;
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t at = cycle_pod_node(c, j->pod_base + k);
        if (at >= 0 && cycle_topo_node(&c->s->topo, lev, at) == dom)
            h = drv_res_add(h, cycle_pod_req(st, j->pod_base + k));
    }
    return h;
}

drv_res drv_ctx_gang_need(const drv_ctx *c, int32_t job, int32_t workers)
{
    return cycle_gang_need(c, job, workers);
}
