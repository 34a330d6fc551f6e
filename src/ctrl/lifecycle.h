/*
 * lifecycle.h - what a training job's pods mean for the job, in Kubeflow's vocabulary: its
 * runPolicy (backoffLimit, activeDeadlineSeconds, ttlSecondsAfterFinished, cleanPodPolicy,
 * suspend), each role's restartPolicy, and the metav1.Conditions that say where it stands.
 *
 * One call, drv_lifecycle_step, looks at a job's pods as last seen and returns its state and
 * what to do: restart a failed pod, clean pods up, delete the finished job. It does no I/O and
 * reads no clock (now comes in), so a unit test can drive it alone. It is the controller's
 * (Kubeflow's operator semantics, not the client library's): ctrl_lifecycle.c feeds it and acts
 * on its answer; the client library decodes only the words of the spec (drv_restart_parse,
 * drv_clean_pods_parse in src/kube/objects_sched.c).
 *
 * The rules (Kubeflow's training operators, except where marked):
 *   success   a job with a chief (a master, for all-reduce jobs) succeeds when chief 0 has
 *             succeeded; a TensorFlow job without one (Worker-only, or PS and Workers) when
 *             worker 0 has, or, under TFJob's successPolicy AllWorkers, when every worker
 *             has; an all-reduce job without a master when every worker has. (A PyTorch job
 *             written with Worker replicas only is TensorFlow-shaped: without AllWorkers its
 *             other ranks are deleted when rank 0 ends.)
 *   failure   a failed pod of a role whose restartPolicy is
 *               Never      fails the job (reason PodFailed);
 *               OnFailure  is restarted; so is one under Always;
 *               ExitCode   is restarted when its exit code is retryable (128-255: killed by a
 *                          signal, e.g. 137 after an eviction or OOM kill), and fails the job
 *                          otherwise (1-127: the program's own error; reason PermanentError).
 *             Each restart counts against backoffLimit, with the pods' own container restarts
 *             (the kubelet's in place, in pods of OnFailure and Always roles that are there
 *             now); past it the job fails (BackoffLimitExceeded), a pod failed or not.
 *   deadline  activeDeadlineSeconds after its start the job fails (DeadlineExceeded).
 *   suspend   a suspended job's pods are deleted; it is Suspended until resumed, then Queued.
 *   finish    on Succeeded or Failed, cleanPodPolicy says which pods to delete (Running: the
 *             ones still running — the default; All; None), and ttlSecondsAfterFinished after
 *             its completion the job itself is deleted.
 */
#ifndef DROVER_CTRL_LIFECYCLE_RULES_H
#define DROVER_CTRL_LIFECYCLE_RULES_H

#include "drover/kube_types.h" /* (the spec words it acts on: enum drv_restart, drv_clean_pods) */

/* Kubeflow's runPolicy. */
typedef struct drv_run_policy {
    int32_t backoff_limit;       /* restarts allowed in all; -1: no limit */
    double active_deadline_s;    /* seconds a started job may run; 0: no deadline */
    double ttl_after_finished_s; /* seconds a finished job is kept; < 0: kept */
    drv_clean_pods clean;        /* pods deleted when the job finishes */
    bool suspend;
    bool all_workers; /* spec.successPolicy AllWorkers: without a chief, every worker must
                         succeed (else worker 0's success is the job's) */
} drv_run_policy;

/* A run policy with Kubeflow's defaults: no backoff limit, no deadline, kept, Running. */
drv_run_policy drv_run_policy_default(void);

/* Conditions, in the order Kubeflow lists them. */
typedef enum drv_job_cond {
    DRV_COND_CREATED,
    DRV_COND_QUEUED,
    DRV_COND_RUNNING,
    DRV_COND_RESTARTING,
    DRV_COND_SCALING,
    DRV_COND_SUSPENDED,
    DRV_COND_SUCCEEDED,
    DRV_COND_FAILED,
    /* Drover asked the job for a checkpoint before deleting pods (docs/running.md, "Checkpoint
     * handshake"): beside the others, never the current one (drv_condition_current) */
    DRV_COND_CHECKPOINT,
    DRV_NCONDS
} drv_job_cond;
const char *drv_job_cond_name(int cond);

/* One metav1.Condition. */
typedef struct drv_condition {
    bool set;               /* the condition has been written at least once */
    bool status;            /* "True" / "False" */
    char reason[48];        /* CamelCase, e.g. BackoffLimitExceeded */
    char message[208];      /* for a person */
    double last_transition; /* seconds (the caller's clock) when status last changed */
} drv_condition;

/* Sets conds[type]; last_transition moves only when the status changes (metav1 semantics). */
void drv_condition_set(drv_condition conds[DRV_NCONDS], int type, bool status, const char *reason,
                       const char *message, double now);
/* The condition that is True (of several, the latest to become so; Created and
 * CheckpointRequested never count), or
 * -1 when none is: where the job stands, as Kubeflow's printer column reads the last one. */
int8_t drv_condition_current(const drv_condition conds[DRV_NCONDS]);

enum drv_pod_obs_phase {
    DRV_OBS_ABSENT,
    DRV_OBS_PENDING,
    DRV_OBS_RUNNING,
    DRV_OBS_SUCCEEDED,
    DRV_OBS_FAILED
};

/* A pod of the job as last seen. */
typedef struct drv_pod_obs {
    int8_t role;       /* DRV_ROLE_* */
    int8_t phase;      /* DRV_OBS_* */
    int32_t rank;      /* its index within the role */
    int32_t exit_code; /* of its failed main container; -1: unknown */
    int32_t restarts;  /* container restarts the kubelet made in place (the pod's own
                          restartPolicy OnFailure or Always): the sum of its containers'
                          status.containerStatuses[].restartCount */
} drv_pod_obs;

typedef struct drv_lifecycle_in {
    drv_run_policy policy;
    drv_restart restart[DRV_NROLES];
    bool allreduce;               /* Master/Worker roles (PyTorchJob's shape) */
    int32_t replicas[DRV_NROLES]; /* pods wanted per role */
    const drv_pod_obs *pods;
    int32_t npods;
    int32_t restarts;       /* pods this controller has restarted so far (the job's count) */
    bool placed;            /* the scheduler has bound the job's gang */
    bool scaling;           /* its worker count is being changed (its pods re-created) */
    double now;             /* seconds, on the caller's clock */
    double start_time;      /* when it first ran (a pod Running); < 0: not yet */
    double completion_time; /* when it finished; < 0: not yet */
} drv_lifecycle_in;

enum { DRV_LIFECYCLE_MAX_RESTART = 64 };

typedef struct drv_lifecycle_out {
    int8_t state; /* DRV_COND_*: the condition that is True now */
    char reason[48], message[208];
    int32_t restart[DRV_LIFECYCLE_MAX_RESTART]; /* indices into pods to delete and create again */
    int32_t nrestart;
    bool delete_running; /* delete the pods still running or pending (finish, suspend) */
    bool delete_all;     /* delete every pod (cleanPodPolicy All) */
    bool delete_job;     /* its TTL after finishing has passed */
    bool started;        /* start_time should be set to now */
    bool finished;       /* completion_time should be set to now */
} drv_lifecycle_out;

/* Decides the job's state and actions from what was seen (rules above). A job already
 * Succeeded or Failed stays so (only its TTL and clean-up act). */
void drv_lifecycle_step(const drv_lifecycle_in *in, int prev_state, drv_lifecycle_out *out);

#endif
