/*
 * queues_read.h - the `queues:` list of a cluster file (docs/formats.md, "Queues"), read with
 * Kueue's field names (internal to src/sim).
 */
#ifndef DROVER_QUEUES_READ_H
#define DROVER_QUEUES_READ_H

#include "drover/conf.h"
#include "drover/sim.h"

/* The document's top-level `queues:` (absent: none, c untouched) into c->queues, c->nqueues
 * and c->queue_file. 0, DRV_EINVAL, DRV_EEXIST, DRV_ERANGE or DRV_ENOMEM, with file:line and
 * the field in d; on failure c is untouched. */
int drv_read_queues(const drv_conf_doc *doc, drv_cluster_spec *c, drv_diag *d);

#endif
