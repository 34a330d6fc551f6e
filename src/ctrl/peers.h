/*
 * peers.h - how the pods of one training job find each other: stable names, the environment
 * their framework reads, and the headless Service that makes the names resolve.
 *
 * Names follow Kubeflow's operators, so a script written for a TFJob or a PyTorchJob runs
 * unchanged:
 *   pod       <job>-<role>-<rank>           role: ps, chief, worker, evaluator; master for an
 *                                           all-reduce (PyTorch-shaped) job's chief
 *   address   <job>-<role>-<rank>.<job>.<namespace>.svc:<port>
 *             (the pod's hostname and subdomain, resolved by the job's headless Service <job>)
 *
 * TensorFlow jobs (any of PS, Chief, Worker, Evaluator) get TF_CONFIG (keys sorted):
 *   {"cluster":{"chief":[...],"ps":[...],"worker":[...]},"environment":"cloud",
 *    "task":{"index":1,"type":"worker"}}
 * The evaluator is not part of the training cluster (as in TensorFlow's and Kubeflow's
 * convention); it only sees its own task.
 *
 * All-reduce jobs (a Master and Workers, PyTorchJob's shape) get MASTER_ADDR, MASTER_PORT,
 * WORLD_SIZE (master + workers) and RANK (master 0, worker i is i + 1), and PYTHONUNBUFFERED=1.
 *
 * The environment names every peer, so it depends on the replica counts: when a job is scaled,
 * its pods' environment must be rendered again and the pods restarted (docs/running.md says what
 * a training script must do to survive that).
 */
#ifndef DROVER_CTRL_PEERS_H
#define DROVER_CTRL_PEERS_H

#include "drover/state.h"

#include <jansson.h>

typedef enum drv_framework {
    DRV_FRAMEWORK_TENSORFLOW, /* TF_CONFIG */
    DRV_FRAMEWORK_ALLREDUCE,  /* MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK */
} drv_framework;

enum { DRV_PEERS_TF_PORT = 2222, DRV_PEERS_MASTER_PORT = 23456 };

typedef struct drv_peer_job {
    const char *ns, *name;        /* the job's namespace and name */
    drv_framework framework;      /* which environment its pods get */
    int32_t replicas[DRV_NROLES]; /* pods per role now (DRV_ROLE_CHIEF: the master) */
    int port;                     /* 0: DRV_PEERS_TF_PORT or DRV_PEERS_MASTER_PORT */
} drv_peer_job;

/* Kubeflow's name of a replica type in pod names (<job>-<role>-<rank>) and TF_CONFIG: the
 * lower-case "ps", "chief", "worker", "evaluator", and "master" for the chief of an all-reduce
 * (PyTorch-shaped) job; "?" for a role out of range. The controller's own (the pod names are
 * Kubeflow's convention, not the core's): every unit that names a pod or a role in one asks it. */
const char *drv_peers_role_name(int role, bool allreduce);

/* drv_peers_role_name for j's framework. */
const char *drv_peers_role(const drv_peer_job *j, int role);

/* Writes "<job>-<role>-<rank>" to buf; returns DRV_ERANGE when it does not fit or is longer
 * than a DNS label (63), which a hostname must be. */
int drv_peers_pod_name(const drv_peer_job *j, int role, int rank, char *buf, size_t n);

/*
 * Gives the pod (a Pod object: {"metadata":...,"spec":...}) of role/rank its hostname and
 * subdomain and sets the peer variables in the env of every container (replacing variables of
 * the same name the template set). Returns 0, DRV_EINVAL (diag names the field) for a pod
 * without spec.containers, or DRV_ENOMEM.
 */
int drv_peers_apply(const drv_peer_job *j, int role, int rank, json_t *pod, drv_diag *d);

/* The peer variables of role/rank as parallel arrays (the names static), in the order
 * drv_peers_apply sets them; returns how many (at most 5) or a negative code. TensorFlow: one,
 * TF_CONFIG, whose value is *tf_config (drv_malloc'd: the caller frees it; it may exceed 512
 * bytes), values[0] left empty; otherwise *tf_config is NULL. */
int drv_peers_variables(const drv_peer_job *j, int role, int rank, const char *names[5],
                        char values[5][512], char **tf_config);

/* The job's headless Service (clusterIP None, publishNotReadyAddresses, selecting the job's
 * pods by drover.dev/job), owned by the TrainingJob of that uid, as compact JSON text
 * (drv_malloc'd; the caller frees it). Written as text (once per job, on the scheduler thread:
 * a tree built and dumped was most of its cost of queueing a job's creations). NULL when out of
 * memory or when a name is not UTF-8. */
char *drv_peers_service_json(const drv_peer_job *j, const char *uid);

/* TF_CONFIG of role/rank as compact JSON (drv_malloc'd; the caller frees it), or NULL when out
 * of memory. */
char *drv_peers_tf_config(const drv_peer_job *j, int role, int rank);

/* TF_CONFIG in two parts, so that what all of a job's pods share is written once per job
 * (podbody.c caches it): for every role but the evaluator, TF_CONFIG is the cluster part
 * ({"cluster":{...}: drv_malloc'd, the caller frees it; NULL as drv_peers_tf_config) followed
 * by the task part (,"environment":"cloud","task":{...}}, written to buf). */
enum { DRV_PEERS_TASK_MAX = 96 };
char *drv_peers_tf_cluster(const drv_peer_job *j);
void drv_peers_tf_task(const drv_peer_job *j, int role, int rank, char buf[DRV_PEERS_TASK_MAX]);
/* TF_CONFIG of role/rank from its cluster part (len bytes at cluster; borrowed) and the task
 * part: drv_malloc'd (the caller frees it), or NULL when cluster is NULL or memory runs out. */
char *drv_peers_tf_join(const drv_peer_job *j, int role, int rank, const char *cluster, size_t len);
/* drv_peers_variables' TensorFlow variables, TF_CONFIG's value tf_config (moved to *out):
 * 1, or DRV_ENOMEM when tf_config is NULL. */
int drv_peers_tf_variables(char *tf_config, const char *names[5], char values[5][512], char **out);

#endif
