/*
 * kube_types.h - the Kubernetes objects Drover reads and writes, decoded into compact records
 * that keep only what scheduling needs (names interned), and the bodies it sends.
 *
 * Labels Drover reads (docs/kubernetes-client.md, "Typed objects"):
 *   pods:  drover.dev/job (the training job), drover.dev/role (ps, chief, worker, evaluator),
 *          drover.dev/rank (replica index), scheduling.x-k8s.io/pod-group (another operator's
 *          gang: its PodGroup's name);
 *   nodes: topology.kubernetes.io/zone, drover.dev/rack, and every label but
 *          kubernetes.io/hostname for node constraints;
 *   TrainingJobs: drover.dev/user (the job's user; its namespace when absent).
 * A pod's request is what kube-scheduler counts: the sum over containers, or the largest init
 * container's when that is larger, per resource; CPU in millicores, memory in bytes, GPUs
 * (nvidia.com/gpu) whole.
 *
 * The decoders (API object -> record) and the in-place write-back of status fields work on
 * jansson objects and are declared in src/kube/json.h; this header needs no jansson.
 */
#ifndef DROVER_KUBE_TYPES_H
#define DROVER_KUBE_TYPES_H

#include "drover/state.h"

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
    int32_t group;     /* interned scheduling.x-k8s.io/pod-group label (its PodGroup), 0 */
    int32_t scheduler; /* interned spec.schedulerName, 0 when absent */
    int32_t owner;     /* interned uid of its controller: the first metadata.ownerReferences[]
                          with controller true (client-go's GetControllerOf), 0 when none */
    int32_t replica;   /* drover.dev/rank, -1 when absent */
    int32_t cons;      /* interned compact JSON of spec.nodeSelector, affinity.nodeAffinity and
                          tolerations (drv_kube_constraint_json), 0 when it has none, and for
                          pods with a drover.dev/job label or no schedulerName but
                          default-scheduler (not needed: it saves a text per DaemonSet pod) */
    int32_t priority;  /* spec.priority (the API server resolves priorityClassName into it) */
    int8_t role;       /* enum drv_role, -1 when absent */
    int8_t phase;      /* enum drv_kpod_phase */
    bool deleting;     /* metadata.deletionTimestamp is set */
    int16_t exit_code; /* a terminated container's status.containerStatuses[].state.terminated
                          .exitCode (the first non-zero one), -1 when none */
    int32_t restarts;  /* the kubelet's restarts in place: the sum of status.containerStatuses[]
                          and initContainerStatuses[] .restartCount */
    uint8_t ip_family; /* status.podIP: 0 when unset, 4 or 6 */
    uint8_t ip[16];    /* ... its address, network order (4 bytes for IPv4) */
    drv_res req;       /* effective request */
    int64_t cpu_limit; /* the sum of its containers' resources.limits.cpu in millicores; 0 when
                          a container has none (or an unreadable one): no limit */
    int8_t topo_mode;  /* another operator's pod (cons' rule): Kueue's podset-*-topology
                          annotation, enum drv_topo_mode (NONE when absent), DRV_KPOD_TOPO_BAD
                          when it is not one (topo_key: the interned message saying why) */
    int32_t topo_key;  /* interned: the level's node label key, 0 with none */
} drv_kpod;

enum { DRV_KPOD_TOPO_BAD = -1 };

typedef struct drv_knode {
    char rv[24];
    int32_t name, zone, rack; /* interned; 0 when unlabelled */
    drv_res alloc;            /* status.allocatable */
    bool unschedulable;       /* spec.unschedulable */
    bool ready;               /* condition Ready is True */
    bool noschedule;          /* a NoSchedule or NoExecute taint */
    bool not_ready;           /* ... the node lifecycle's: node.kubernetes.io/not-ready or
                                 unreachable (the node is not used, as when not Ready) */
    int32_t meta;             /* interned canonical text of its labels and taints
                                 (drv_kube_node_meta), 0 when it has none */
} drv_knode;

/* A role's replicaSpecs.<role>.restartPolicy (Kubeflow's words; what each means for the job:
 * src/ctrl/lifecycle.h). */
typedef enum drv_restart {
    DRV_RESTART_NEVER,
    DRV_RESTART_ON_FAILURE,
    DRV_RESTART_EXIT_CODE,
    DRV_RESTART_ALWAYS,
} drv_restart;

/* spec.runPolicy.cleanPodPolicy: which pods a finished job deletes. */
typedef enum drv_clean_pods { DRV_CLEAN_RUNNING, DRV_CLEAN_ALL, DRV_CLEAN_NONE } drv_clean_pods;

/* "Never", "OnFailure", "ExitCode", "Always" / "Running", "All", "None" (exact case). 0 or
 * DRV_EINVAL. */
int drv_restart_parse(const char *s, drv_restart *out);
int drv_clean_pods_parse(const char *s, drv_clean_pods *out);

/* A TrainingJob (drover.dev/v1alpha1): per role (replicaSpecs PS, Chief, Master, Worker,
 * Evaluator; a Master is kept as DRV_ROLE_CHIEF with allreduce set) the replica bounds and the
 * per-pod request of its template (requests, or limits where a request is absent, as the API
 * server defaults a pod), each role's restartPolicy and Kubeflow's spec.runPolicy. */
typedef struct drv_ktrainingjob {
    char rv[24];
    int32_t ns, name, scheduler; /* interned; scheduler from any template, 0 when absent */
    int64_t generation;
    drv_rolespec role[DRV_NROLES]; /* replicas 0 for absent roles */
    int32_t phase;                 /* interned status.phase, 0 when absent */
    /* spec.progress: where the job's chief serves its training progress as Prometheus text
     * (docs/running.md). port 0: not given. */
    int32_t progress_port;
    char progress_path[128];    /* default "/metrics" */
    char step_metric[96];       /* default "drover_train_step" */
    char loss_metric[96];       /* default "drover_train_loss" */
    double total_steps;         /* spec.progress.totalSteps: the step it ends at, 0 unknown */
    bool allreduce;             /* a Master role: PyTorchJob's shape (MASTER_ADDR, RANK...) */
    bool all_workers;           /* spec.successPolicy AllWorkers (TFJob's; default "": worker 0
                                   decides a job without a chief) */
    int8_t restart[DRV_NROLES]; /* replicaSpecs.<role>.restartPolicy: 0 Never, 1 OnFailure,
                                   2 ExitCode, 3 Always (enum drv_restart); default Never */
    /* spec.runPolicy (src/ctrl/lifecycle.h states the rules) */
    int32_t backoff_limit;     /* backoffLimit; -1 when absent (no limit) */
    int64_t active_deadline_s; /* activeDeadlineSeconds; 0 when absent */
    int64_t ttl_s;             /* ttlSecondsAfterFinished; -1 when absent (kept) */
    int8_t clean_pods;         /* cleanPodPolicy: 0 Running (default), 1 All, 2 None */
    bool suspend;              /* suspend */
    /* shared clusters (docs/running.md, "Shared clusters"); interned, 0 when absent */
    int32_t queue;            /* spec.queue: a Queue's name (Volcano's spelling) */
    int32_t priority_class;   /* spec.priorityClassName */
    int32_t user;             /* metadata.labels drover.dev/user (written by the job's author:
                                 honoured only where its Queue says spec.userFromLabel) */
    int32_t cons[DRV_NROLES]; /* per role, its template's constraint fields as compact JSON
                                 (drv_kube_constraint_json), validated */
    /* metadata.annotations drover.dev/checkpoint-done: when the job says its checkpoint was
     * last written (wall seconds, RFC 3339 in the annotation; the checkpoint handshake,
     * docs/running.md); -1 when absent */
    double checkpoint_done;
    /* Kueue's pod-template annotations kueue.x-k8s.io/podset-{required,preferred,
     * unconstrained}-topology on any role's template (state.h, "Topology-bound gangs"): the
     * gang's mode (enum drv_topo_mode) and level's label key (interned; 0 with none). */
    int8_t topo_mode;
    int32_t topo_key;
} drv_ktrainingjob;

/* The checkpoint handshake's annotations on a TrainingJob: Drover writes the first before it
 * deletes the job's pods (preemption, scaling, migration); the job writes the second. */
#define DRV_ANN_CHECKPOINT_REQUESTED "drover.dev/checkpoint-requested"
#define DRV_ANN_CHECKPOINT_DONE "drover.dev/checkpoint-done"

/* A PodGroup (scheduling.x-k8s.io/v1alpha1, the coscheduling plugin's gang). */
typedef struct drv_kpodgroup {
    char rv[24];
    int32_t ns, name;
    int32_t min_member;
    drv_res min_resources;
    int32_t timeout_s; /* spec.scheduleTimeoutSeconds, 0 when absent */
    int32_t phase;     /* interned status.phase */
    int32_t running, succeeded, failed, scheduled;
    int32_t queue, priority_class; /* Volcano's spec.queue, spec.priorityClassName; 0 absent */
} drv_kpodgroup;

/* A PriorityClass (scheduling.k8s.io/v1, cluster-scoped). */
typedef struct drv_kpriorityclass {
    char rv[24];
    int32_t name;        /* interned */
    int32_t value;       /* value: larger is more important */
    bool global_default; /* globalDefault: the class of jobs that name none */
    double min_runtime;  /* annotation drover.dev/min-runtime-seconds: a job of the class is no
                            preemption victim before it has run this long (its Queue's
                            minRuntimeSeconds when that is longer); 0: none */
} drv_kpriorityclass;

#define DRV_ANN_MIN_RUNTIME "drover.dev/min-runtime-seconds"

/* The most namespaces a Queue's spec.namespaces may list (more is refused, not cut). */
#define DRV_QUEUE_MAX_NAMESPACES 32

/* A Queue (drover.dev/v1alpha1, cluster-scoped; state.h's drv_queue): a dimension of
 * spec.nominalQuota or spec.borrowingLimit that is absent has no bound (DRV_UNLIMITED). */
typedef struct drv_kqueue {
    char rv[24];
    int32_t name, cohort; /* interned; cohort 0 when absent */
    double weight;        /* spec.weight, default 1 */
    drv_res quota, borrow;
    int32_t nns; /* spec.namespaces' length: the namespaces whose jobs may name it; -1 when
                    absent (every namespace may), 0 for [] (none may) */
    int32_t ns[DRV_QUEUE_MAX_NAMESPACES]; /* interned, the first nns valid */
    bool user_label;    /* spec.userFromLabel: its jobs' drover.dev/user label is honoured */
    double min_runtime; /* spec.minRuntimeSeconds: a job of it is no preemption victim before
                           it has run this long since it last started; 0: none */
} drv_kqueue;

/* A Lease (coordination.k8s.io/v1): leader election. Times are RFC 3339 text as sent. */
typedef struct drv_klease {
    char rv[24];
    char holder[128];
    char renew[40], acquire[40];
    int32_t duration_s, transitions;
} drv_klease;

/* Kubernetes quantities. CPU into millicores ("2", "500m", "1.5", "1e3"); memory and counts
 * into units ("128Gi", "500M", "1e3", "2"). Strict: no sign, no spaces, known suffixes only. */
int drv_kube_quantity_milli(const char *s, int64_t *out);
int drv_kube_quantity(const char *s, int64_t *out);

/* An Event: what it is about and what it says (strings truncated to the fields' sizes). */
typedef struct drv_kevent {
    char kind[64], name[254], reason[128], type[16], message[512];
    int32_t count;
} drv_kevent;

/* New objects (with drv_malloc): a PodGroup for a gang; an Event about an object (type
 * "Normal" or "Warning", now as RFC 3339 seconds). */
char *drv_kube_podgroup_json(const char *ns, const char *name, int32_t min_member,
                             drv_res min_resources, int32_t timeout_s);
char *drv_kube_event_json(const char *ns, const char *kind, const char *api_version,
                          const char *name, const char *uid, const char *type, const char *reason,
                          const char *message, const char *now, const char *component);

/* The body of a pods/binding request (POST .../pods/NAME/binding), with drv_malloc. */
char *drv_kube_binding_json(const char *ns, const char *pod, const char *node);

#endif
