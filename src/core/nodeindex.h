/*
 * nodeindex.h - finds the best node for a pod without visiting every node (internal to core).
 *
 * Valid for profiles without filter plugins whose score plugins all bound their score over a
 * set of nodes (drv_plugin.score_bound), at most one of them "keyed" (drv_plugin.node_key: among
 * nodes of equal allocatable its score is non-decreasing in a per-node key).
 *
 * Nodes are grouped three ways — by allocatable alone (family GLOBAL), by allocatable and zone
 * (ZONE), by allocatable and rack (RACK), each also by node class (labels and taints, so that a
 * pod's node constraints admit or refuse a whole group at once) — and each group keeps a segment
 * tree over its nodes (in id order) of the maximum free CPU, memory, GPU and key and the minimum PS
 * pod count below each tree node. Two queries:
 *  - drv_nodeindex_best walks one group's tree best-key-first, pruning subtrees that cannot fit
 *    the request or beat the best found, and returns the group's fitting node of highest key
 *    (lowest id among equal keys): the whole answer when the keyed plugin is the only score;
 *  - drv_nodeindex_search is branch and bound: a subtree's summary (a drv_node_set) is bounded
 *    by the caller's bound function when the walk reaches it with some node found already and
 *    some node of the group scored (until then it dives, larger key first; its parent's bound,
 *    which holds for it too, may prune it first), subtrees whose bound is below the best score
 *    found (or equal, with only higher ids) are pruned, the child with the larger key is
 *    visited first, and the nodes under a parent of leaves are scored exactly without bounds of
 *    their own (the second of a pair only while their parent's bound could beat the best).
 *
 * Cost: build O(nodes) per family; refresh and update O(log n) per family and node changed (an
 * update that lowers a node is kept until a tree is read, once per node however often); a query
 * O(log n) per group when the best fitting node is near the top of the order and the bounds are
 * tight (the usual case), O(n) at worst.
 */
#ifndef DROVER_NODEINDEX_H
#define DROVER_NODEINDEX_H

#include "drover/cycle.h"

enum { DRV_IX_GLOBAL, DRV_IX_ZONE, DRV_IX_RACK, DRV_IX_FAMILIES };

typedef struct drv_nodeindex drv_nodeindex;

drv_nodeindex *drv_nodeindex_new(void);
void drv_nodeindex_free(drv_nodeindex *ix);
/* (Re)builds families [0, nfam) for the state's nodes, the given free resources and PS pod
 * counts (nps[node * stride]). Groups are recomputed only when the nodes' allocatable, topology
 * or schedulable flags changed. key may be NULL (every key 0). */
int drv_nodeindex_build(drv_nodeindex *ix, const drv_state *st, const drv_res *free,
                        const int32_t *nps, int stride, drv_node_key_fn key, int nfam);
/* drv_nodeindex_build when the caller knows that, since this index was last built or
 * refreshed for st with this key and nfam, no node was added and none changed its allocatable,
 * zone, rack, schedulable flag or class, and only nodes[0..n) (repeats allowed) may have
 * changed their free room or PS pod count: O(n · log nodes) instead of O(nodes). Falls back
 * to the whole build when the index was not built like that. 0 or DRV_ENOMEM. */
int drv_nodeindex_refresh(drv_nodeindex *ix, const drv_state *st, const drv_res *free,
                          const int32_t *nps, int stride, drv_node_key_fn key, int nfam,
                          const int32_t *nodes, int32_t n);
/* Groups nodes by what the constraint table fit (ncons rows of ncls entries, row k entry cl:
 * how constraint k treats node class cl) says of their class, not by the class itself: classes
 * with the same column share groups, each standing for the lowest of them. Labels that no
 * constraint tells apart (a zone and rack label on every node make a class of each pair) then
 * cost no groups. fit NULL: by class. The table is read now, not kept; when the map changes,
 * the next build or refresh regroups. O(ncls · ncons). 0 or DRV_ENOMEM (the map unchanged). */
int drv_nodeindex_set_classes(drv_nodeindex *ix, const int32_t *fit, int32_t ncons, int32_t ncls);
/* Per dimension, the most free room of any indexed (schedulable) node, and not below 0: the
 * maximum of the global groups' summaries, O(groups). */
drv_res drv_nodeindex_maxfree(const drv_nodeindex *ix);
/* A node's free resources or PS pod count changed. Applied at once when it raises the node
 * (more room, a higher key or fewer PS pods); otherwise kept, and applied with the others kept
 * when any function below next reads a tree (a node's leaves are then written once however
 * many times it was lowered): meanwhile the trees hold values at least as high, which bound it
 * as well. O(1) kept, O(families · log n) applied. */
void drv_nodeindex_update(drv_nodeindex *ix, int32_t node, drv_res free, int32_t nps);
/* A count that changes whenever some summary of the index may have risen: at every build, and
 * at every update that gives a node more free room, a higher key or fewer PS pods. While it
 * stays the same, every summary read earlier (drv_nodeindex_union, drv_nodeindex_root) is
 * still an upper bound — free room only shrank — so a caller may keep it. */
uint64_t drv_nodeindex_grown(const drv_nodeindex *ix);
/* Groups of a family. */
int32_t drv_nodeindex_groups(const drv_nodeindex *ix, int fam);
/* The groups of family fam whose topology label (interned zone or rack) is label: *out points
 * at their ids (valid until the next build); returns how many. O(log groups). */
int32_t drv_nodeindex_with_label(const drv_nodeindex *ix, int fam, int32_t label,
                                 const int32_t **out);
/* Nodes in group g of family fam. */
int32_t drv_nodeindex_group_nodes(const drv_nodeindex *ix, int fam, int32_t g);
/* The topology label of group g of family fam (0 for GLOBAL). */
int32_t drv_nodeindex_label(const drv_nodeindex *ix, int fam, int32_t g);
/* The node class (drv_node.node_class) of every node of group g of family fam, or with a
 * class map (drv_nodeindex_set_classes) the lowest class of theirs the table treats alike:
 * in every row of the table, its entry is theirs. */
int32_t drv_nodeindex_class(const drv_nodeindex *ix, int fam, int32_t g);
/* The best fitting node of group g of family fam for req, or -1. */
int32_t drv_nodeindex_best(const drv_nodeindex *ix, int fam, int32_t g, drv_res req);

/* The summary of the groups g[0..n) of family fam (groups 0..n-1 when g is NULL) that may hold
 * a node fitting req, as one mixed set (drv_node_set.mixed, node_class -1) with the given zone
 * and rack: it stands for every node of those groups. row, when not NULL, is per node class a
 * score >= 0, or -1 for classes the pod may not use (their groups are left out); *row_max
 * receives the largest score of the groups covered (0 without row). Returns how many groups it
 * covers, 0 when none may fit (*out is then unset); *nodes is set to the number of nodes in
 * all n groups. cand, when not NULL (room for n), receives the ids of the groups covered.
 * O(n). */
int32_t drv_nodeindex_union(const drv_nodeindex *ix, int fam, const int32_t *g, int32_t n,
                            drv_res req, int32_t zone, int32_t rack, const int32_t *row,
                            drv_node_set *out, int32_t *nodes, int32_t *row_max, int32_t *cand);

/* An upper bound of the score over a set of nodes; the exact score of one node. */
typedef int64_t (*drv_ix_bound_fn)(void *arg, const drv_node_set *set);
typedef int64_t (*drv_ix_score_fn)(void *arg, int32_t node);
/*
 * Branch and bound over group g of family fam: every fitting node of the group whose score can
 * beat (*best, *best_sc) — higher score, or equal score and lower id — is found, and the pair is
 * updated to it. zone and rack are copied into each drv_node_set passed to bound. Returns the
 * number of leaves scored (for statistics).
 */
int32_t drv_nodeindex_search(const drv_nodeindex *ix, int fam, int32_t g, drv_res req, int32_t zone,
                             int32_t rack, drv_ix_bound_fn bound, drv_ix_score_fn score, void *arg,
                             int32_t *best, int64_t *best_sc);
/* The summary of group g of family fam as a drv_node_set with the given zone and rack; false
 * when no node of the group may fit req (the group then needs no search). */
bool drv_nodeindex_root(const drv_nodeindex *ix, int fam, int32_t g, drv_res req, int32_t zone,
                        int32_t rack, drv_node_set *out);
/* drv_nodeindex_search, given root_ub = bound(arg, root) for the root drv_nodeindex_root gave
 * (lets a caller bound every group first and search the most promising first). */
int32_t drv_nodeindex_search_ub(const drv_nodeindex *ix, int fam, int32_t g, drv_res req,
                                int32_t zone, int32_t rack, int64_t root_ub, drv_ix_bound_fn bound,
                                drv_ix_score_fn score, void *arg, int32_t *best, int64_t *best_sc);

#endif
