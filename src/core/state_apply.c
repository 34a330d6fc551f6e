/*
 * state_apply.c - a controller's records pushed into the state in one step each (state.h,
 * "records applied whole"). A driver that follows an API (drover run's mirror) describes what
 * the API said of one object as a plain record, and one call here makes every change of the
 * state that the record implies, in the order the state's invariants need: a node added or
 * updated with its names, labels and taints (read from their text), room and the pods already
 * bound to it, and whether it lacks a topology level's label; a pod as the API has it: the
 * load it holds on nodes when the state does not schedule it, its queue's hold while it is a
 * ghost, its slot's CPU limit and placement; a job ended with its pods taken off.
 *
 * Example: the informer lists pod p1 bound to node n1 before it lists n1; the mirror keeps p1
 * as an orphan, and when n1 comes, one drv_state_apply_node adds n1, binds p1 there and gives
 * n1 its labels and its room (allocatable minus the pods Drover does not schedule).
 *
 * Each function is a sequence of the state's own mutations (state.c, constraint.c), so the
 * derived totals stay right and drv_state_check holds after each call. Costs: those of the
 * mutations (O(1) each, labels O(labels + taints)), plus O(pods) for the pods listed.
 */
#include "drover/state.h"

#include <string.h>

/* The text of id in table t, or "" for id 0. */
static const char *text_of(const drv_strtab *t, int32_t id)
{
    return id > 0 ? drv_strtab_str(t, id) : "";
}

/* Adds the node d describes; names looked up in d->names (st->names when NULL). */
static int add_node(drv_state *st, const drv_node_desc *d, int32_t *id)
{
    const drv_strtab *from = d->names ? d->names : st->names;
    if (d->name <= 0)
        return DRV_EINVAL;
    return drv_state_add_node(st, text_of(from, d->name), d->allocatable,
                              d->zone > 0 ? text_of(from, d->zone) : NULL,
                              d->rack > 0 ? text_of(from, d->rack) : NULL, id);
}

/* Node id's labels and taints from meta text id `meta` of table from (0: none). */
static int set_meta(drv_state *st, int32_t id, const drv_strtab *from, int32_t meta)
{
    drv_label *l = NULL;
    drv_taint *t = NULL;
    int32_t nl = 0, nt = 0;
    int rc =
        drv_node_meta_parse(meta > 0 ? text_of(from, meta) : NULL, st->names, &l, &nl, &t, &nt);
    if (rc == 0)
        rc = drv_state_set_node_meta(st, id, l, nl, t, nt);
    drv_free(l);
    drv_free(t);
    if (rc == DRV_EINVAL) { /* (one key twice: no real API server sends it) */
        drv_log(DRV_LOG_WARN, "node %s: labels or taints not followed (a key given twice)",
                drv_strtab_str(st->names, st->nodes[id].name));
        rc = 0;
    }
    return rc;
}

/* Whether node id lacks the label of one of the state's topology levels. */
static bool topo_gap_of(const drv_state *st, int32_t id)
{
    for (int32_t l = 0; l < st->ntopo; l++)
        if (drv_node_domain(st, id, l) == 0)
            return true;
    return false;
}

int drv_state_apply_node(drv_state *st, const drv_node_desc *d, int32_t *id, bool *topo_gap)
{
    const drv_strtab *from = d->names ? d->names : st->names;
    if (topo_gap)
        *topo_gap = false;
    if (*id < 0) {
        int rc = add_node(st, d, id);
        if (rc != 0)
            return rc;
    }
    for (int32_t i = 0; i < d->nbind; i++)
        drv_state_place_pod(st, d->bind[i], *id);
    if (d->set_meta) {
        int rc = set_meta(st, *id, from, d->meta);
        if (rc != 0)
            return rc;
    }
    drv_state_set_node(st, *id, drv_res_sub(d->allocatable, d->held), d->usable);
    if (topo_gap)
        *topo_gap = topo_gap_of(st, *id);
    return 0;
}

void drv_state_place_pod(drv_state *st, int32_t pod, int32_t node)
{
    if (st->pods[pod].node == node)
        return;
    if (node < 0)
        drv_state_unbind(st, pod);
    else
        drv_state_bind(st, pod, node);
}

void drv_state_apply_pod(drv_state *st, const drv_pod_desc *d)
{
    for (int32_t i = 0; i < d->nloads; i++) {
        const drv_pod_load *l = &d->load[i];
        *l->held = l->sign > 0 ? drv_res_add(*l->held, l->req) : drv_res_sub(*l->held, l->req);
        if (l->node >= 0)
            drv_state_set_node(st, l->node, drv_res_sub(l->allocatable, *l->held), l->usable);
    }
    for (int32_t i = 0; i < d->nholds; i++)
        drv_state_hold_queue(st, d->hold[i].queue, d->hold[i].req, d->hold[i].sign);
    if (d->pod < 0)
        return;
    if (d->set_cpu_limit)
        drv_state_set_cpu_limit(st, d->pod, d->cpu_limit);
    if (d->place)
        drv_state_place_pod(st, d->pod, d->node);
}

void drv_state_end_job(drv_state *st, int32_t job)
{
    const drv_job *j = &st->jobs[job];
    for (int32_t k = 0; k < j->pod_count; k++)
        drv_state_unbind(st, j->pod_base + k);
    drv_state_set_phase(st, job, DRV_JOB_DONE);
}
