/*
 * nodeindex.h - finds the best node for a pod without visiting every node (internal to core).
 *
 * Valid for profiles without filter plugins whose score plugins are one "keyed" plugin
 * (drv_plugin.node_key) plus any number of "topology bonus" plugins (drv_plugin.topology_bonus):
 * among nodes of equal allocatable (a class) the keyed score is non-decreasing in one per-node
 * key, and a topology bonus is the same for all nodes of a zone (or rack) that hold none of the
 * job's pods, never smaller in a rack than in its zone, nor on a node than in its rack.
 *
 * Nodes are grouped three ways — by allocatable alone (family GLOBAL), by allocatable and zone
 * (ZONE), by allocatable and rack (RACK) — and each group keeps a segment tree over its nodes
 * (in id order) of the maximum free CPU, memory, GPU and key below each tree node. A query walks
 * one group's tree best-key-first, pruning subtrees that cannot fit the request or beat the best
 * found, and returns the group's fitting node of highest key (lowest id among equal keys).
 *
 * Cost: build O(nodes) per family; update O(log n) per family; query O(log n) per group when
 * the best fitting node is near the top of the key order (the usual case), O(n) at worst.
 */
#ifndef DROVER_NODEINDEX_H
#define DROVER_NODEINDEX_H

#include "drover/state.h"

typedef double (*drv_node_key_fn)(const drv_node *n, drv_res free);

enum { DRV_IX_GLOBAL, DRV_IX_ZONE, DRV_IX_RACK, DRV_IX_FAMILIES };

typedef struct drv_nodeindex drv_nodeindex;

drv_nodeindex *drv_nodeindex_new(void);
void drv_nodeindex_free(drv_nodeindex *ix);
/* (Re)builds families [0, nfam) for the state's nodes and the given free resources. Groups are
 * recomputed only when the nodes' allocatable, topology or schedulable flags changed. */
int drv_nodeindex_build(drv_nodeindex *ix, const drv_state *st, const drv_res *free,
                        drv_node_key_fn key, int nfam);
/* A node's free resources changed. */
void drv_nodeindex_update(drv_nodeindex *ix, int32_t node, drv_res free);
/* Groups of a family. */
int32_t drv_nodeindex_groups(const drv_nodeindex *ix, int fam);
/* The groups of family fam whose topology label (interned zone or rack) is label: *out points
 * at their ids (valid until the next build); returns how many. O(log groups). */
int32_t drv_nodeindex_with_label(const drv_nodeindex *ix, int fam, int32_t label,
                                 const int32_t **out);
/* The best fitting node of group g of family fam for req, or -1. */
int32_t drv_nodeindex_best(const drv_nodeindex *ix, int fam, int32_t g, drv_res req);

#endif
