/*
 * topology_read.h - topology levels in cluster and workload files (topology_read.c; internal to
 * src/sim).
 */
#ifndef DROVER_TOPOLOGY_READ_H
#define DROVER_TOPOLOGY_READ_H

#include "drover/conf.h"
#include "drover/sim.h"

/* The cluster file's `topology:` list (if any) into c->topo. 0 or DRV_EINVAL (not a list, empty,
 * more than DRV_MAX_TOPO, an empty or repeated key), naming file:line. */
int drv_read_topology(const drv_conf_doc *doc, drv_conf *root, drv_cluster_spec *c, drv_diag *d);
/* Checks that node entry n (at path, of class node_class) has a label for every level. */
int drv_check_node_topology(const drv_conf_doc *doc, const drv_conf *n, const char *path,
                            const drv_cluster_spec *c, int32_t node_class, drv_diag *d);
/* A job entry's `topology:` map into j (its level added to w->topo when new). */
int drv_read_job_topology(const drv_conf_doc *doc, drv_conf *jn, const char *path, drv_workload *w,
                          drv_jobspec *j, drv_diag *d);
/* The cluster's levels into st, and map[i] the state's level of the workload's level i (w may
 * be NULL). A level no cluster level names is DRV_EINVAL, naming the first job's line. */
int drv_sim_topology(drv_state *st, const drv_cluster_spec *c, const drv_workload *w, int8_t *map,
                     drv_diag *d);

#endif
