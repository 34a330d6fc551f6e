/*
 * kube_types.h - the Kubernetes objects Drover reads and writes, decoded into compact records
 * that keep only what scheduling needs (names interned), and the bodies it sends.
 *
 * Labels Drover reads (docs/kubernetes-client.md, "Typed objects"):
 *   pods:  drover.dev/job (the training job), drover.dev/role (ps, chief, worker, evaluator),
 *          drover.dev/rank (replica index);
 *   nodes: topology.kubernetes.io/zone, drover.dev/rack.
 * A pod's request is what kube-scheduler counts: the sum over containers, or the largest init
 * container's when that is larger, per resource; CPU in millicores, memory in bytes, GPUs
 * (nvidia.com/gpu) whole.
 */
#ifndef DROVER_KUBE_TYPES_H
#define DROVER_KUBE_TYPES_H

#include "drover/state.h"

#include <jansson.h>

enum drv_kpod_phase {
    DRV_KPOD_PENDING,
    DRV_KPOD_RUNNING,
    DRV_KPOD_SUCCEEDED,
    DRV_KPOD_FAILED,
    DRV_KPOD_UNKNOWN
};

typedef struct drv_kpod {
    char rv[24];       /* metadata.resourceVersion */
    int32_t ns, name;  /* interned */
    int32_t node;      /* interned spec.nodeName, 0 when unbound */
    int32_t job;       /* interned drover.dev/job label, 0 when absent */
    int32_t scheduler; /* interned spec.schedulerName, 0 when absent */
    int32_t replica;   /* drover.dev/rank, -1 when absent */
    int8_t role;       /* enum drv_role, -1 when absent */
    int8_t phase;      /* enum drv_kpod_phase */
    bool deleting;     /* metadata.deletionTimestamp is set */
    drv_res req;       /* effective request */
} drv_kpod;

typedef struct drv_knode {
    char rv[24];
    int32_t name, zone, rack; /* interned; 0 when unlabelled */
    drv_res alloc;            /* status.allocatable */
    bool unschedulable;       /* spec.unschedulable */
    bool ready;               /* condition Ready is True */
    bool noschedule;          /* a NoSchedule or NoExecute taint */
} drv_knode;

/* Decodes a Pod (a Node). Errors name the kind, the object and the field path with the bad
 * text: "pod default/x: spec.containers[1].resources.requests.cpu: expected a CPU quantity
 * such as 500m or 2, found '2x'". Strings are interned in names. */
int drv_kube_decode_pod(json_t *obj, drv_strtab *names, drv_kpod *out, drv_diag *d);
int drv_kube_decode_node(json_t *obj, drv_strtab *names, drv_knode *out, drv_diag *d);

/* A Status object's code and reason (reason may be NULL). A success Status may have no code:
 * *code is then 0 (the HTTP status stands). DRV_EPARSE when obj is no Status. */
int drv_kube_decode_status(json_t *obj, long *code, const char **reason, drv_diag *d);

/* Kubernetes quantities. CPU into millicores ("2", "500m", "1.5", "1e3"); memory and counts
 * into units ("128Gi", "500M", "1e3", "2"). Strict: no sign, no spaces, known suffixes only. */
int drv_kube_quantity_milli(const char *s, int64_t *out);
int drv_kube_quantity(const char *s, int64_t *out);

/* The body of a pods/binding request (POST .../pods/NAME/binding), with drv_malloc. */
char *drv_kube_binding_json(const char *ns, const char *pod, const char *node);

#endif
