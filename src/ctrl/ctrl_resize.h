/*
 * ctrl_resize.h - CPU limits that a profile resizes (FlowCon's RESIZE decisions) on a real
 * cluster: in place through the pod's `resize` subresource where the API serves it (Kubernetes
 * >= 1.33), otherwise at the pod's next creation. The state never holds a limit the API does
 * not (docs/running.md, "CPU limits").
 *
 * Owns: whether pods/resize is served, and whether that was logged; the pod records'
 * want_cpu_limit. Touches: the mirror (the state's pod limits), the binder (the PATCH),
 * counters.
 */
#ifndef DROVER_CTRL_RESIZE_H
#define DROVER_CTRL_RESIZE_H

#include "ctrl_binder.h"

typedef struct ctrl_resize {
    bool served; /* the API lists pods/resize (Kubernetes >= 1.33): asked once at start */
    bool told;   /* the log said how resizes are applied (once) */
    /* fixed at init */
    ctrl_mirror *mirror;
    ctrl_binder *binder;
    ctrl_counters *counters;
    const ctrl_config *cfg;
} ctrl_resize;

/* Blocking: asks client at start, before the binder threads, whether pods/resize is served. */
void ctrl_resize_discover(ctrl_resize *rz, drv_kube *client);
/* A RESIZE decision: sent (and assumed) when the API serves pods/resize and the pod can take
 * it now; else kept for the pod's next creation, the state keeping the API's limit. */
int ctrl_resize_decided(ctrl_resize *rz, const drv_decision *x);
/* A REQ_RESIZE's answer (before ctrl_binder_apply_answer): refused, the state is restored. */
void ctrl_resize_answered(ctrl_resize *rz, const ctrl_event *e);

#endif
