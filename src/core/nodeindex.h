/*
 * nodeindex.h - finds the best node for a pod without visiting every node (internal to core).
 *
 * Valid for profiles whose only score plugin is "keyed" (drv_plugin.node_key) and which have no
 * filter plugins: the score is then a non-decreasing function of one per-node key among nodes
 * of equal allocatable (a class). Each class keeps a segment tree over its nodes (in id order)
 * of the maximum free CPU, memory, GPU and key below each tree node. A query walks the tree
 * best-key-first, pruning subtrees that cannot fit the request or cannot beat the best found,
 * and returns per class the fitting node of highest key (lowest id among equal keys); the
 * caller compares the classes' candidates by their real scores.
 *
 * Cost: build O(nodes); update O(log n); query O(classes · log n) when the best fitting node is
 * near the top of the key order (the usual case), O(n) in the worst case.
 */
#ifndef DROVER_NODEINDEX_H
#define DROVER_NODEINDEX_H

#include "drover/state.h"

typedef double (*drv_node_key_fn)(const drv_node *n, drv_res free);

typedef struct drv_nodeindex drv_nodeindex;

drv_nodeindex *drv_nodeindex_new(void);
void drv_nodeindex_free(drv_nodeindex *ix);
/* (Re)builds for the state's nodes and the given free resources. Classes are recomputed only
 * when the nodes' allocatable or schedulable flags changed since the last build. */
int drv_nodeindex_build(drv_nodeindex *ix, const drv_state *st, const drv_res *free,
                        drv_node_key_fn key);
/* A node's free resources changed. */
void drv_nodeindex_update(drv_nodeindex *ix, int32_t node, drv_res free);
/* Number of classes, and the best fitting node of class c for req, or -1. */
int32_t drv_nodeindex_classes(const drv_nodeindex *ix);
int32_t drv_nodeindex_best(const drv_nodeindex *ix, int32_t c, drv_res req);

#endif
