/*
 * constraints_read.h - node labels, taints and pod templates' node constraints in cluster and
 * workload files (docs/formats.md), read with Kubernetes' spelling (internal to src/sim).
 */
#ifndef DROVER_CONSTRAINTS_READ_H
#define DROVER_CONSTRAINTS_READ_H

#include "drover/conf.h"
#include "drover/sim.h"

/* Bounds on one node entry and one role: far above real clusters, small enough that a file
 * cannot make judging a class cost much (O(expressions · labels) per class and constraint). */
#define MAX_LABELS 64
#define MAX_TAINTS 32
#define MAX_TERMS 16
#define MAX_TERM_EXPRS 16
#define MAX_TOLERATIONS 32

/* A node entry n's labels (map), taints (list) and unschedulable into c->classes (a new class
 * for the entry when it has labels or taints, *node_class set to it, else 0) and
 * *unschedulable. path names the entry ("nodes[3]"). 0, DRV_EINVAL or DRV_ENOMEM. */
int drv_read_node_meta(const drv_conf_doc *doc, drv_conf *n, const char *path, drv_cluster_spec *c,
                       int32_t *node_class, bool *unschedulable, drv_diag *d);

/* A role map's nodeSelector, affinity (nodeAffinity only) and tolerations into w->cons (*cons
 * set to it, or 0 when the role has none). 0, DRV_EINVAL or DRV_ENOMEM. */
int drv_read_role_constraint(const drv_conf_doc *doc, drv_conf *role, const char *path,
                             drv_workload *w, int32_t *cons, drv_diag *d);

#endif
