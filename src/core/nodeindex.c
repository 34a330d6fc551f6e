/*
 * nodeindex.c - per-class segment trees for exact best-node search (design in nodeindex.h).
 *
 * Worked example: one class of 4 nodes with free CPU 2, 8, 4, 8 (memory plenty) and key = free
 * share. A 6-CPU pod: the root says max CPU 8 >= 6, max key is node 1's; descend towards it
 * (left child first on equal keys), find node 1; the right child also has max key equal but
 * starts at a higher id, so it is pruned. Answer: node 1, three tree nodes visited.
 */
#include "nodeindex.h"

#include <string.h>

typedef struct cls {
    drv_res alloc;
    int32_t n;     /* nodes in the class */
    int32_t size;  /* leaves: power of two >= n */
    int32_t *node; /* leaf position -> node id (ascending) */
    drv_res *mx;   /* tree of per-dimension max free, 2*size entries, 1-based heap layout */
    double *key;   /* tree of max key */
} cls;

struct drv_nodeindex {
    cls *c;
    int32_t nc, capc;
    int32_t *node_cls; /* node -> class, -1 if not indexed (cordoned) */
    int32_t *node_pos; /* node -> leaf position */
    int32_t nnodes, capn;
    drv_res *sig_alloc; /* allocatable at the last class computation */
    uint8_t *sig_sched;
    drv_node_key_fn key;
    const drv_state *st;
};

static const drv_res NONE = {-1, -1, -1};

drv_nodeindex *drv_nodeindex_new(void)
{
    return drv_calloc(1, sizeof(drv_nodeindex));
}

static void free_classes(drv_nodeindex *ix)
{
    for (int32_t i = 0; i < ix->nc; i++) {
        drv_free(ix->c[i].node);
        drv_free(ix->c[i].mx);
        drv_free(ix->c[i].key);
    }
    ix->nc = 0;
}

void drv_nodeindex_free(drv_nodeindex *ix)
{
    if (!ix)
        return;
    free_classes(ix);
    drv_free(ix->c);
    drv_free(ix->node_cls);
    drv_free(ix->node_pos);
    drv_free(ix->sig_alloc);
    drv_free(ix->sig_sched);
    drv_free(ix);
}

static bool same_nodes(const drv_nodeindex *ix, const drv_state *st)
{
    if (ix->nnodes != st->nnodes || !ix->sig_alloc)
        return false;
    for (int32_t i = 0; i < st->nnodes; i++)
        if (memcmp(&ix->sig_alloc[i], &st->nodes[i].alloc, sizeof(drv_res)) != 0 ||
            ix->sig_sched[i] != (uint8_t)st->nodes[i].schedulable)
            return false;
    return true;
}

/* Groups schedulable nodes by allocatable; classes in order of first appearance. */
static int make_classes(drv_nodeindex *ix, const drv_state *st)
{
    free_classes(ix);
    int32_t n = st->nnodes;
    if (drv_grow(&ix->node_cls, sizeof *ix->node_cls, &ix->capn, n) != 0)
        return DRV_ENOMEM;
    int32_t capn = ix->capn;
    drv_free(ix->node_pos);
    drv_free(ix->sig_alloc);
    drv_free(ix->sig_sched);
    ix->node_pos = drv_calloc((size_t)capn, sizeof *ix->node_pos);
    ix->sig_alloc = drv_calloc((size_t)capn, sizeof *ix->sig_alloc);
    ix->sig_sched = drv_calloc((size_t)capn, sizeof *ix->sig_sched);
    if (!ix->node_pos || !ix->sig_alloc || !ix->sig_sched)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < n; i++) {
        const drv_node *nd = &st->nodes[i];
        ix->sig_alloc[i] = nd->alloc;
        ix->sig_sched[i] = (uint8_t)nd->schedulable;
        ix->node_cls[i] = -1;
        if (!nd->schedulable)
            continue;
        int32_t c = 0;
        /* Few classes in practice (node types); a linear search is fine. */
        while (c < ix->nc && memcmp(&ix->c[c].alloc, &nd->alloc, sizeof(drv_res)) != 0)
            c++;
        if (c == ix->nc) {
            if (drv_grow(&ix->c, sizeof *ix->c, &ix->capc, ix->nc + 1) != 0)
                return DRV_ENOMEM;
            memset(&ix->c[c], 0, sizeof ix->c[c]);
            ix->c[c].alloc = nd->alloc;
            ix->nc++;
        }
        ix->node_cls[i] = c;
        ix->node_pos[i] = ix->c[c].n++;
    }
    for (int32_t c = 0; c < ix->nc; c++) {
        cls *k = &ix->c[c];
        k->size = 1;
        while (k->size < k->n)
            k->size *= 2;
        k->node = drv_malloc(sizeof *k->node * (size_t)k->size);
        k->mx = drv_malloc(sizeof *k->mx * 2 * (size_t)k->size);
        k->key = drv_malloc(sizeof *k->key * 2 * (size_t)k->size);
        if (!k->node || !k->mx || !k->key)
            return DRV_ENOMEM;
        for (int32_t p = 0; p < k->size; p++)
            k->node[p] = -1;
    }
    for (int32_t i = 0; i < n; i++)
        if (ix->node_cls[i] >= 0)
            ix->c[ix->node_cls[i]].node[ix->node_pos[i]] = i;
    ix->nnodes = n;
    return 0;
}

static drv_res rmax(drv_res a, drv_res b)
{
    return (drv_res){a.cpu > b.cpu ? a.cpu : b.cpu, a.mem > b.mem ? a.mem : b.mem,
                     a.gpu > b.gpu ? a.gpu : b.gpu};
}

static void pull(cls *k, int32_t t)
{
    k->mx[t] = rmax(k->mx[2 * t], k->mx[2 * t + 1]);
    double a = k->key[2 * t], b = k->key[2 * t + 1];
    k->key[t] = a > b ? a : b;
}

int drv_nodeindex_build(drv_nodeindex *ix, const drv_state *st, const drv_res *free,
                        drv_node_key_fn key)
{
    ix->key = key;
    ix->st = st;
    if (!same_nodes(ix, st) && make_classes(ix, st) != 0) {
        ix->nnodes = -1; /* force a rebuild next time */
        return DRV_ENOMEM;
    }
    for (int32_t c = 0; c < ix->nc; c++) {
        cls *k = &ix->c[c];
        for (int32_t p = 0; p < k->size; p++) {
            int32_t nd = k->node[p];
            k->mx[k->size + p] = nd >= 0 ? free[nd] : NONE;
            k->key[k->size + p] = nd >= 0 ? key(&st->nodes[nd], free[nd]) : -1e300;
        }
        for (int32_t t = k->size - 1; t >= 1; t--)
            pull(k, t);
    }
    return 0;
}

void drv_nodeindex_update(drv_nodeindex *ix, int32_t node, drv_res free)
{
    int32_t c = ix->node_cls[node];
    if (c < 0)
        return;
    cls *k = &ix->c[c];
    int32_t t = k->size + ix->node_pos[node];
    k->mx[t] = free;
    k->key[t] = ix->key(&ix->st->nodes[node], free);
    for (t /= 2; t >= 1; t /= 2)
        pull(k, t);
}

int32_t drv_nodeindex_classes(const drv_nodeindex *ix)
{
    return ix->nc;
}

int32_t drv_nodeindex_best(const drv_nodeindex *ix, int32_t c, drv_res req)
{
    const cls *k = &ix->c[c];
    if (!drv_res_fits(req, k->alloc) || !drv_res_fits(req, k->mx[1]))
        return -1;
    /* Depth-first, larger key first (left first on ties); a subtree is pruned when it cannot
     * fit req, or its best key is below the best found, or equal to it but starting at a
     * higher position (only a lower id could win a tie). Depth <= log2(size) + 1, so the
     * explicit stack needs at most 2 entries per level. */
    int32_t stack[128];
    int sp = 0;
    int32_t best_pos = -1;
    double best_key = -1e300;
    stack[sp++] = 1;
    while (sp > 0) {
        int32_t t = stack[--sp];
        if (!drv_res_fits(req, k->mx[t]))
            continue;
        /* First leaf position under t. */
        int32_t first = t;
        while (first < k->size)
            first *= 2;
        first -= k->size;
        if (best_pos >= 0 && (k->key[t] < best_key || (k->key[t] == best_key && first > best_pos)))
            continue;
        if (t >= k->size) {
            best_pos = t - k->size;
            best_key = k->key[t];
            continue;
        }
        int32_t l = 2 * t, r = 2 * t + 1;
        /* Push the less promising child first so the more promising one is popped next. */
        if (k->key[r] > k->key[l]) {
            stack[sp++] = l;
            stack[sp++] = r;
        } else {
            stack[sp++] = r;
            stack[sp++] = l;
        }
    }
    return best_pos >= 0 ? k->node[best_pos] : -1;
}
