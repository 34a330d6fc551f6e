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
    int32_t label; /* zone or rack (interned), 0 for the global family */
    /* The node class (labels and taints) of every node of the group, or with a class map
     * (drv_nodeindex_set_classes) the lowest class that the constraint table treats as theirs:
     * its row entries are theirs. */
    int32_t ncls;
    int32_t n;     /* nodes in the class */
    int32_t size;  /* leaves: power of two >= n */
    int32_t *node; /* leaf position -> node id (ascending) */
    drv_res *mx;   /* tree of per-dimension max free, 2*size entries, 1-based heap layout */
    double *key;   /* tree of max key */
    int32_t *mps;  /* tree of min PS pod count */
    int32_t gc;    /* zone and rack families: the global group holding the same allocatable */
    /* Holds the same nodes as global group gc (a zone or rack with every node of its type, as
     * in one-zone clusters): node and the trees are gc's, which the global family owns and
     * keeps up to date. */
    bool alias;
} cls;

/* What grouping reads of a node: a regrouping is needed when it changes. */
typedef struct node_sig {
    drv_res alloc;
    int32_t zone, rack;
    bool schedulable;
    int32_t node_class;
} node_sig;

typedef struct family {
    cls *c;
    int32_t nc, capc;
    int32_t *node_cls; /* node -> group, -1 if not indexed (cordoned) */
    int32_t *node_pos; /* node -> leaf position */
    int32_t *by_label; /* group ids sorted by label (then id) */
} family;

struct drv_nodeindex {
    family f[DRV_IX_FAMILIES];
    int nfam;       /* families built */
    int32_t nnodes; /* nodes at the last grouping; -1 forces a regrouping */
    node_sig *sig;  /* nodes at the last grouping */
    drv_node_key_fn key;
    const drv_state *st;
    bool filled;                /* the trees hold values for the current grouping and... */
    drv_node_key_fn filled_key; /* ...this key */
    uint64_t grown; /* drv_nodeindex_grown: bumped by every build and every update that may
                       raise a summary */
    /* drv_nodeindex_set_classes: node class -> the lowest class the constraint table treats
     * alike (what groups are made of); classes >= ncmap (or all, when ncmap is 0) stand for
     * themselves. */
    int32_t *cmap;
    int32_t ncmap;
    /* Updates that only lowered a node (less free room, no higher key, no fewer PS pods), kept
     * until a tree is next read (pending()): a gang's pods bound one after another to one node
     * rewrite its leaves once, not once a pod — most pods read no tree, their families' unions
     * come from the caller's memo. Exact meanwhile: a tree that still holds a node's older,
     * higher values bounds it all the same, and no summary rose, so grown stays. An update that
     * raises a node is applied at once. pend_at[node]: its entry in pend + 1, or 0; room for
     * nnodes + 1 entries: a raise leaves its node's entry behind (superseded), so a node lowered
     * and raised again and again would take more - the kept ones are applied when it is full. */
    int32_t *pend_at;
    struct pend {
        int32_t node; /* -1: superseded by an update applied at once */
        int32_t nps;
        drv_res free;
        double key;
    } * pend;
    int32_t npend;
};

static const drv_res NONE = {-1, -1, -1};

drv_nodeindex *drv_nodeindex_new(void)
{
    return drv_calloc(1, sizeof(drv_nodeindex));
}

static void free_family(family *f)
{
    for (int32_t i = 0; i < f->nc; i++) {
        if (f->c[i].alias)
            continue;
        drv_free(f->c[i].node);
        drv_free(f->c[i].mx);
        drv_free(f->c[i].key);
        drv_free(f->c[i].mps);
    }
    drv_free(f->c);
    drv_free(f->node_cls);
    drv_free(f->node_pos);
    drv_free(f->by_label);
    memset(f, 0, sizeof *f);
}

void drv_nodeindex_free(drv_nodeindex *ix)
{
    if (!ix)
        return;
    for (int k = 0; k < DRV_IX_FAMILIES; k++)
        free_family(&ix->f[k]);
    drv_free(ix->sig);
    drv_free(ix->cmap);
    drv_free(ix->pend_at);
    drv_free(ix->pend);
    drv_free(ix);
}

/* The class node n is grouped by (drv_nodeindex_set_classes). */
static int32_t group_class(const drv_nodeindex *ix, const drv_node *n)
{
    return n->node_class < ix->ncmap ? ix->cmap[n->node_class] : n->node_class;
}

/* Whether classes a and b have the same column of the table fit (ncons rows of ncls). */
static bool same_column(const int32_t *fit, int32_t ncons, int32_t ncls, int32_t a, int32_t b)
{
    for (int32_t k = 0; k < ncons; k++)
        if (fit[(size_t)k * (size_t)ncls + (size_t)a] != fit[(size_t)k * (size_t)ncls + (size_t)b])
            return false;
    return true;
}

int drv_nodeindex_set_classes(drv_nodeindex *ix, const int32_t *fit, int32_t ncons, int32_t ncls)
{
    if (!fit || ncls < 1 || ncons < 1)
        ncls = 0;
    int32_t slots = 2;
    while (slots < 2 * ncls)
        slots *= 2;
    int32_t *map = drv_malloc(sizeof *map * ((size_t)ncls + 1));
    int32_t *slot = drv_malloc(sizeof *slot * (size_t)slots);
    if (!map || !slot) {
        drv_free(map);
        drv_free(slot);
        return DRV_ENOMEM;
    }
    for (int32_t i = 0; i < slots; i++)
        slot[i] = -1;
    /* Columns by hash, open addressing: each class finds the first (lowest) class of its
     * column or becomes it. O(classes · constraints). */
    for (int32_t cl = 0; cl < ncls; cl++) {
        uint64_t h = 0x9E3779B97F4A7C15u;
        for (int32_t k = 0; k < ncons; k++)
            h = (h ^ (uint32_t)fit[(size_t)k * (size_t)ncls + (size_t)cl]) * 0xFF51AFD7ED558CCDu;
        uint32_t at = (uint32_t)(h >> 32) & (uint32_t)(slots - 1);
        while (slot[at] >= 0 && !same_column(fit, ncons, ncls, slot[at], cl))
            at = (at + 1) & (uint32_t)(slots - 1);
        if (slot[at] < 0)
            slot[at] = cl;
        map[cl] = slot[at];
    }
    drv_free(slot);
    if (ncls == ix->ncmap &&
        (ncls == 0 || memcmp(map, ix->cmap, sizeof *map * (size_t)ncls) == 0)) {
        drv_free(map);
        return 0;
    }
    drv_free(ix->cmap);
    ix->cmap = map;
    ix->ncmap = ncls;
    ix->nnodes = -1; /* the groups change: the next build regroups, a refresh builds */
    ix->filled = false;
    return 0;
}

static bool same_topology(const drv_nodeindex *ix, const node_sig *a, const drv_node *b)
{
    return memcmp(&a->alloc, &b->alloc, sizeof(drv_res)) == 0 && a->zone == b->zone &&
           a->rack == b->rack && a->schedulable == b->schedulable &&
           a->node_class == group_class(ix, b);
}

static bool same_nodes(const drv_nodeindex *ix, const drv_state *st, int nfam)
{
    if (ix->nnodes != st->nnodes || !ix->sig || ix->nfam != nfam)
        return false;
    for (int32_t i = 0; i < st->nnodes; i++)
        if (!same_topology(ix, &ix->sig[i], &st->nodes[i]))
            return false;
    return true;
}

static int32_t label_of(const drv_node *n, int fam)
{
    return fam == DRV_IX_ZONE ? n->zone : fam == DRV_IX_RACK ? n->rack : 0;
}

static bool same_res(drv_res a, drv_res b)
{
    return a.cpu == b.cpu && a.mem == b.mem && a.gpu == b.gpu;
}

/* Groups schedulable nodes by allocatable and node class (and label); groups in order of first
 * appearance. glob, the global family already grouped (NULL when building it), gives each node's
 * class of allocatable: the group that class's previous node went to is tried first, and matches
 * whenever labels come in runs (racks of consecutive nodes), so grouping is about O(nodes). */
static int make_family(const drv_nodeindex *ix, family *f, const family *glob, const drv_state *st,
                       int fam)
{
    free_family(f);
    int32_t n = st->nnodes;
    f->node_cls = drv_malloc(sizeof *f->node_cls * ((size_t)n + 1));
    f->node_pos = drv_malloc(sizeof *f->node_pos * ((size_t)n + 1));
    int32_t *last = glob ? drv_malloc(sizeof *last * ((size_t)glob->nc + 1)) : NULL;
    if (!f->node_cls || !f->node_pos || (glob && !last)) {
        drv_free(last);
        return DRV_ENOMEM;
    }
    for (int32_t i = 0; glob && i < glob->nc; i++)
        last[i] = -1;
    for (int32_t i = 0; i < n; i++) {
        const drv_node *nd = &st->nodes[i];
        f->node_cls[i] = -1;
        if (!nd->schedulable)
            continue;
        int32_t label = label_of(nd, fam), ncls = group_class(ix, nd), c = 0;
        int32_t *hint = glob ? &last[glob->node_cls[i]] : NULL;
        if (hint && *hint >= 0 && f->c[*hint].label == label)
            c = *hint;
        else /* groups are node types x racks: a linear search over them is fine here */
            while (c < f->nc && (f->c[c].label != label || f->c[c].ncls != ncls ||
                                 !same_res(f->c[c].alloc, nd->alloc)))
                c++;
        if (hint)
            *hint = c;
        if (c == f->nc) {
            if (drv_grow(&f->c, sizeof *f->c, &f->capc, f->nc + 1) != 0) {
                drv_free(last);
                return DRV_ENOMEM;
            }
            memset(&f->c[c], 0, sizeof f->c[c]);
            f->c[c].alloc = nd->alloc;
            f->c[c].label = label;
            f->c[c].ncls = ncls;
            f->c[c].gc = glob ? glob->node_cls[i] : c;
            f->nc++;
        }
        f->node_cls[i] = c;
        f->node_pos[i] = f->c[c].n++;
    }
    drv_free(last);
    for (int32_t c = 0; c < f->nc; c++) {
        cls *k = &f->c[c];
        const cls *gk = glob ? &glob->c[k->gc] : NULL;
        if (gk && gk->n == k->n) { /* a subset of gk as large as gk: the same nodes */
            k->size = gk->size;
            k->node = gk->node;
            k->mx = gk->mx;
            k->key = gk->key;
            k->mps = gk->mps;
            k->alias = true;
            continue;
        }
        k->size = 1;
        while (k->size < k->n)
            k->size *= 2;
        k->node = drv_malloc(sizeof *k->node * (size_t)k->size);
        k->mx = drv_malloc(sizeof *k->mx * 2 * (size_t)k->size);
        k->key = drv_malloc(sizeof *k->key * 2 * (size_t)k->size);
        k->mps = drv_malloc(sizeof *k->mps * 2 * (size_t)k->size);
        if (!k->node || !k->mx || !k->key || !k->mps)
            return DRV_ENOMEM;
        for (int32_t p = 0; p < k->size; p++)
            k->node[p] = -1;
    }
    for (int32_t i = 0; i < n; i++)
        if (f->node_cls[i] >= 0 && !f->c[f->node_cls[i]].alias)
            f->c[f->node_cls[i]].node[f->node_pos[i]] = i;
    /* Groups sorted by label (insertion sort: this runs only when the nodes change). */
    f->by_label = drv_malloc(sizeof *f->by_label * ((size_t)f->nc + 1));
    if (!f->by_label)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < f->nc; i++) {
        int32_t j = i;
        while (j > 0 && f->c[f->by_label[j - 1]].label > f->c[i].label) {
            f->by_label[j] = f->by_label[j - 1];
            j--;
        }
        f->by_label[j] = i;
    }
    return 0;
}

/* Tree node t from its children. */
static void pull(cls *k, int32_t t)
{
    k->mx[t] = drv_res_max(k->mx[2 * t], k->mx[2 * t + 1]);
    double a = k->key[2 * t], b = k->key[2 * t + 1];
    k->key[t] = a > b ? a : b;
    int32_t x = k->mps[2 * t], y = k->mps[2 * t + 1];
    k->mps[t] = x < y ? x : y;
}

/* pull on a tree node that holds a value already; false when that value did not change. */
static bool repull(cls *k, int32_t t)
{
    drv_res m = k->mx[t];
    double key = k->key[t];
    int32_t ps = k->mps[t];
    pull(k, t);
    return memcmp(&m, &k->mx[t], sizeof m) != 0 || key != k->key[t] || ps != k->mps[t];
}

static double key_of(const drv_nodeindex *ix, int32_t node, drv_res free)
{
    return ix->key ? ix->key(&ix->st->nodes[node], free) : 0;
}

/* Writes a node's free room, key and PS count into its leaves in every family, and their
 * ancestors up to the first that does not change; grown moves when a summary may rise. */
static void apply(drv_nodeindex *ix, int32_t node, drv_res free, double key, int32_t nps)
{
    for (int fam = 0; fam < ix->nfam; fam++) {
        family *f = &ix->f[fam];
        int32_t c = f->node_cls[node];
        if (c < 0 || f->c[c].alias)
            continue;
        cls *k = &f->c[c];
        int32_t t = k->size + f->node_pos[node];
        if (fam == DRV_IX_GLOBAL && !drv_res_fits(free, k->mx[t]))
            ix->grown++; /* more room somewhere: a summary may rise */
        else if (fam == DRV_IX_GLOBAL && (key > k->key[t] || nps < k->mps[t]))
            ix->grown++;
        k->mx[t] = free;
        k->key[t] = key;
        k->mps[t] = nps;
        /* A tree node that did not change leaves its ancestors as they are: a bind usually
         * lowers a node that is not its subtree's maximum, so few levels are rewritten. */
        for (t /= 2; t >= 1 && repull(k, t); t /= 2)
            ;
    }
}

/* Applies the kept updates (drv_nodeindex.pend). O(kept · families · log n). */
static void flush(drv_nodeindex *ix)
{
    for (int32_t i = 0; i < ix->npend; i++) {
        const struct pend *e = &ix->pend[i];
        if (e->node < 0)
            continue;
        ix->pend_at[e->node] = 0;
        apply(ix, e->node, e->free, e->key, e->nps);
    }
    ix->npend = 0;
}

/* Called first by every function that reads a tree. The index is logically const there: the
 * kept updates only bring the trees to what they stand for (ix is always heap memory). */
static inline void pending(const drv_nodeindex *ix)
{
    if (ix->npend > 0)
        flush((drv_nodeindex *)ix);
}

/* Rewrites node i's leaves when its free room or PS count differs from what they hold. */
static void refresh_node(drv_nodeindex *ix, int32_t i, const drv_res *free, const int32_t *nps,
                         int stride)
{
    const family *g = &ix->f[DRV_IX_GLOBAL];
    int32_t c = g->node_cls[i];
    if (c < 0)
        return;
    const cls *k = &g->c[c];
    int32_t t = k->size + g->node_pos[i];
    int32_t ps = nps[(size_t)i * (size_t)stride];
    if (memcmp(&k->mx[t], &free[i], sizeof free[i]) != 0 || k->mps[t] != ps)
        drv_nodeindex_update(ix, i, free[i], ps);
}

int drv_nodeindex_build(drv_nodeindex *ix, const drv_state *st, const drv_res *free,
                        const int32_t *nps, int stride, drv_node_key_fn key, int nfam)
{
    pending(ix); /* onto the trees they were kept for, before these are compared or remade */
    ix->grown++; /* anything may have changed */
    ix->key = key;
    ix->st = st;
    if (!same_nodes(ix, st, nfam)) {
        ix->nnodes = -1; /* until grouping succeeds */
        for (int k = 0; k < nfam; k++)
            if (make_family(ix, &ix->f[k], k == DRV_IX_GLOBAL ? NULL : &ix->f[DRV_IX_GLOBAL], st,
                            k) != 0)
                return DRV_ENOMEM;
        drv_free(ix->sig);
        drv_free(ix->pend_at);
        drv_free(ix->pend);
        ix->sig = drv_malloc(sizeof *ix->sig * ((size_t)st->nnodes + 1));
        ix->pend_at = drv_calloc((size_t)st->nnodes + 1, sizeof *ix->pend_at);
        ix->pend = drv_malloc(sizeof *ix->pend * ((size_t)st->nnodes + 1));
        if (!ix->sig || !ix->pend_at || !ix->pend) {
            drv_free(ix->pend_at); /* updates are then applied at once (pend_at NULL) */
            drv_free(ix->pend);
            ix->pend_at = NULL;
            ix->pend = NULL;
            return DRV_ENOMEM;
        }
        for (int32_t i = 0; i < st->nnodes; i++) {
            const drv_node *nd = &st->nodes[i];
            ix->sig[i] =
                (node_sig){nd->alloc, nd->zone, nd->rack, nd->schedulable, group_class(ix, nd)};
        }
        ix->nnodes = st->nnodes;
        ix->nfam = nfam;
        ix->filled = false;
    }
    if (ix->filled && ix->filled_key == key && nfam > 0) {
        /* Same nodes, same key: rewrite only the nodes whose free room or PS count changed
         * since the trees were last written: O(nodes + changed · log n). */
        for (int32_t i = 0; i < st->nnodes; i++)
            refresh_node(ix, i, free, nps, stride);
        return 0;
    }
    const family *g = &ix->f[DRV_IX_GLOBAL]; /* filled first: the others copy its keys */
    for (int fam = 0; fam < nfam; fam++) {
        family *f = &ix->f[fam];
        for (int32_t c = 0; c < f->nc; c++) {
            cls *k = &f->c[c];
            if (k->alias)
                continue;
            for (int32_t p = 0; p < k->size; p++) {
                int32_t nd = k->node[p];
                const cls *gk = nd >= 0 && fam != DRV_IX_GLOBAL ? &g->c[g->node_cls[nd]] : NULL;
                k->mx[k->size + p] = nd >= 0 ? free[nd] : NONE;
                k->key[k->size + p] = gk        ? gk->key[gk->size + g->node_pos[nd]]
                                      : nd >= 0 ? key_of(ix, nd, free[nd])
                                                : -1e300;
                k->mps[k->size + p] = nd >= 0 ? nps[(size_t)nd * (size_t)stride] : INT32_MAX;
            }
            for (int32_t t = k->size - 1; t >= 1; t--)
                pull(k, t);
        }
    }
    ix->filled = true;
    ix->filled_key = key;
    return 0;
}

int drv_nodeindex_refresh(drv_nodeindex *ix, const drv_state *st, const drv_res *free,
                          const int32_t *nps, int stride, drv_node_key_fn key, int nfam,
                          const int32_t *nodes, int32_t n)
{
    if (!ix->filled || ix->filled_key != key || ix->nfam != nfam || ix->st != st ||
        ix->nnodes != st->nnodes || nfam < 1)
        return drv_nodeindex_build(ix, st, free, nps, stride, key, nfam);
    pending(ix); /* the leaves are compared below */
    ix->grown++; /* as a build: the caller's summaries are read afresh */
    for (int32_t i = 0; i < n; i++)
        refresh_node(ix, nodes[i], free, nps, stride);
    return 0;
}

drv_res drv_nodeindex_maxfree(const drv_nodeindex *ix)
{
    pending(ix);
    drv_res m = {0, 0, 0};
    const family *g = &ix->f[DRV_IX_GLOBAL];
    for (int32_t c = 0; ix->nfam > 0 && c < g->nc; c++)
        m = drv_res_max(m, g->c[c].mx[1]); /* padding leaves hold -1: below the 0 started from */
    return m;
}

void drv_nodeindex_update(drv_nodeindex *ix, int32_t node, drv_res free, int32_t nps)
{
    double key = key_of(ix, node, free);
    const family *g = &ix->f[DRV_IX_GLOBAL];
    int32_t c = ix->nfam > 0 ? g->node_cls[node] : -1;
    if (c < 0)
        return; /* not indexed (cordoned): in no family */
    const cls *k = &g->c[c];
    int32_t t = k->size + g->node_pos[node];
    int32_t at = ix->pend_at ? ix->pend_at[node] - 1 : -1;
    if (ix->pend_at && drv_res_fits(free, k->mx[t]) && key <= k->key[t] && nps >= k->mps[t]) {
        if (at < 0) { /* lowers or keeps it: kept for the next read */
            if (ix->npend > ix->nnodes)
                flush(ix); /* full of entries superseded by raises: those kept are applied */
            at = ix->npend++;
            ix->pend_at[node] = at + 1;
        }
        ix->pend[at] = (struct pend){node, nps, free, key};
        return;
    }
    if (at >= 0) { /* rises: applied now, which supersedes the kept value */
        ix->pend[at].node = -1;
        ix->pend_at[node] = 0;
    }
    apply(ix, node, free, key, nps);
}

uint64_t drv_nodeindex_grown(const drv_nodeindex *ix)
{
    return ix->grown;
}

int32_t drv_nodeindex_groups(const drv_nodeindex *ix, int fam)
{
    return fam < ix->nfam ? ix->f[fam].nc : 0;
}

int32_t drv_nodeindex_group_nodes(const drv_nodeindex *ix, int fam, int32_t g)
{
    return ix->f[fam].c[g].n;
}

int32_t drv_nodeindex_label(const drv_nodeindex *ix, int fam, int32_t g)
{
    return ix->f[fam].c[g].label;
}

int32_t drv_nodeindex_class(const drv_nodeindex *ix, int fam, int32_t g)
{
    return ix->f[fam].c[g].ncls;
}

int32_t drv_nodeindex_with_label(const drv_nodeindex *ix, int fam, int32_t label,
                                 const int32_t **out)
{
    const family *f = &ix->f[fam];
    int32_t lo = 0, hi = f->nc;
    while (lo < hi) { /* first group with label >= wanted */
        int32_t mid = (lo + hi) / 2;
        if (f->c[f->by_label[mid]].label < label)
            lo = mid + 1;
        else
            hi = mid;
    }
    int32_t end = lo;
    while (end < f->nc && f->c[f->by_label[end]].label == label)
        end++;
    *out = f->by_label ? f->by_label + lo : NULL;
    return end - lo;
}

int32_t drv_nodeindex_best(const drv_nodeindex *ix, int fam, int32_t g, drv_res req)
{
    pending(ix);
    const cls *k = &ix->f[fam].c[g];
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

/* The set a group's tree node t stands for. */
static drv_node_set set_at(const drv_nodeindex *ix, const cls *k, int32_t t, int32_t zone,
                           int32_t rack)
{
    return (drv_node_set){k->alloc, k->mx[t], k->key[t], ix->key, k->mps[t],
                          zone,     rack,     false,     k->ncls, {0, 0, 0, 0}};
}

int32_t drv_nodeindex_union(const drv_nodeindex *ix, int fam, const int32_t *g, int32_t n,
                            drv_res req, int32_t zone, int32_t rack, const int32_t *row,
                            drv_node_set *out, int32_t *nodes, int32_t *row_max, int32_t *cand)
{
    pending(ix);
    int32_t used = 0;
    *nodes = 0;
    *row_max = 0;
    double mkd[4] = {-1e300, -1e300, -1e300, -1e300}; /* maxkey_dims: read only with a key */
    for (int32_t i = 0; i < n; i++) {
        const cls *k = &ix->f[fam].c[g ? g[i] : i];
        *nodes += k->n;
        if (!drv_res_fits(req, k->alloc) || !drv_res_fits(req, k->mx[1]) ||
            (row && row[k->ncls] < 0))
            continue; /* no node of the group fits: nothing there to stand for */
        if (row && row[k->ncls] > *row_max)
            *row_max = row[k->ncls];
        if (cand)
            cand[used] = g ? g[i] : i;
        if (ix->key) {
            int dims = drv_res_dims(k->alloc);
            mkd[dims] = k->key[1] > mkd[dims] ? k->key[1] : mkd[dims];
        }
        if (used++ == 0) {
            *out = set_at(ix, k, 1, zone, rack);
            out->mixed = true;
            out->node_class = -1;
            continue;
        }
        out->alloc = drv_res_min(out->alloc, k->alloc);
        out->maxfree = drv_res_max(out->maxfree, k->mx[1]);
        out->maxkey = k->key[1] > out->maxkey ? k->key[1] : out->maxkey;
        out->min_ps = k->mps[1] < out->min_ps ? k->mps[1] : out->min_ps;
    }
    if (used > 0 && ix->key)
        memcpy(out->maxkey_dims, mkd, sizeof mkd);
    return used;
}

/* The lowest position of a leaf under tree node t. */
static int32_t first_leaf(const cls *k, int32_t t)
{
    if (t >= k->size)
        return t - k->size;
    /* t's leftmost leaf is t shifted down by the levels between t and the leaves: the
     * difference of their highest set bits (size is a power of two). */
    int shift = __builtin_clz((unsigned)t) - __builtin_clz((unsigned)k->size);
    return (int32_t)((uint32_t)t << shift) - k->size;
}

bool drv_nodeindex_root(const drv_nodeindex *ix, int fam, int32_t g, drv_res req, int32_t zone,
                        int32_t rack, drv_node_set *out)
{
    pending(ix);
    const cls *k = &ix->f[fam].c[g];
    if (!drv_res_fits(req, k->alloc) || !drv_res_fits(req, k->mx[1]))
        return false;
    *out = set_at(ix, k, 1, zone, rack);
    return true;
}

int32_t drv_nodeindex_search(const drv_nodeindex *ix, int fam, int32_t g, drv_res req, int32_t zone,
                             int32_t rack, drv_ix_bound_fn bound, drv_ix_score_fn score, void *arg,
                             int32_t *best, int64_t *best_sc)
{
    drv_node_set set;
    if (!drv_nodeindex_root(ix, fam, g, req, zone, rack, &set))
        return 0;
    return drv_nodeindex_search_ub(ix, fam, g, req, zone, rack, bound(arg, &set), bound, score, arg,
                                   best, best_sc);
}

int32_t drv_nodeindex_search_ub(const drv_nodeindex *ix, int fam, int32_t g, drv_res req,
                                int32_t zone, int32_t rack, int64_t root_ub, drv_ix_bound_fn bound,
                                drv_ix_score_fn score, void *arg, int32_t *best, int64_t *best_sc)
{
    pending(ix);
    const cls *k = &ix->f[fam].c[g];
    drv_node_set set = set_at(ix, k, 1, zone, rack);
    /* Depth-first. A subtree is pushed with its parent's bound (which holds for it too) and
     * bounded itself only when popped and not pruned by that: a subtree the best found by then
     * already beats costs no bound. Children are visited larger key first (left first on equal
     * keys), a guess at the better one that costs nothing. At most 2 entries per level are
     * pending (one re-pushed with its own bound), so 128 entries are plenty. */
    struct {
        int32_t t;
        int64_t ub;
        bool own; /* ub is the subtree's own bound, not its parent's */
    } stack[128];
    int sp = 0, leaves = 0;
    stack[sp].t = 1;
    stack[sp].own = true;
    stack[sp++].ub = root_ub;
    while (sp > 0) {
        int32_t t = stack[--sp].t;
        int64_t ub = stack[sp].ub;
        bool own = stack[sp].own;
        /* Prune: nothing below can beat the best, or only tie it with a higher id (positions
         * ascend with node ids within a group). */
        if (*best >= 0 && (ub < *best_sc || (ub == *best_sc && k->node[first_leaf(k, t)] > *best)))
            continue;
        /* Bound it now and look again; not while nothing is found yet, when no bound could
         * prune it (its children then inherit the bound they would have had), nor before this
         * search has scored a node: it dives to the most promising leaves first, as bounds on
         * the way down rarely prune when the group's nodes are alike (the root's bound held),
         * and the node found there prunes the siblings left on the way, most of them by the
         * bound they inherited (equal nodes score equal, and ties go to the lower id). */
        if (!own && 2 * t < k->size && *best >= 0 && leaves > 0) {
            set = set_at(ix, k, t, zone, rack);
            stack[sp].t = t;
            stack[sp].own = true;
            stack[sp++].ub = bound(arg, &set);
            continue;
        }
        int32_t ch[2] = {2 * t, 2 * t + 1};
        if (t >= k->size || ch[0] >= k->size) {
            /* A leaf, or a parent of leaves: a node's bound costs about what its score does
             * and would rarely prune it, so its fitting nodes are scored without one — the
             * larger key first, and the other only while ub, which holds for both, could still
             * beat the best (equal nodes score equal: the second of a pair rarely can). */
            int first = t < k->size && k->key[ch[1]] > k->key[ch[0]];
            for (int i = 0; i < (t >= k->size ? 1 : 2); i++) {
                int32_t leaf = t >= k->size ? t : ch[i ^ first];
                int32_t n = k->node[leaf - k->size];
                if (n < 0 || !drv_res_fits(req, k->mx[leaf]))
                    continue;
                if (*best >= 0 && (ub < *best_sc || (ub == *best_sc && n > *best)))
                    continue;
                int64_t sc = score(arg, n);
                leaves++;
                if (sc > *best_sc || (sc == *best_sc && (*best < 0 || n < *best))) {
                    *best = n;
                    *best_sc = sc;
                }
            }
            continue;
        }
        /* Push the less promising child first so the more promising one is popped next. */
        int lo = k->key[ch[1]] > k->key[ch[0]] ? 0 : 1;
        for (int i = 0; i < 2; i++) {
            int c = i == 0 ? lo : 1 - lo;
            if (drv_res_fits(req, k->mx[ch[c]])) {
                stack[sp].t = ch[c];
                stack[sp].own = false;
                stack[sp++].ub = ub;
            }
        }
    }
    return leaves;
}
