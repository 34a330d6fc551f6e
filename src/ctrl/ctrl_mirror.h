/*
 * ctrl_mirror.h - the API objects as the scheduler sees them: the drv_state a cycle decides on,
 * a record per job and per pod slot of what the API has (and what was asked of it), and the
 * tables from interned keys to the state's ids. The scheduler thread's alone, without a lock.
 *
 * Owns: everything below. Calls nothing of the controller but the names (to read what the
 * informers interned) and the counters. Every scheduler-thread unit is handed the mirror: the
 * TrainingJob and PodGroup units add jobs to it, the binder marks requests in its records, the
 * lifecycle and the cycle read and change its state.
 */
#ifndef DROVER_CTRL_MIRROR_H
#define DROVER_CTRL_MIRROR_H

#include "ctrl_config.h"
#include "ctrl_events.h"
#include "ctrl_metrics.h"
#include "ctrl_names.h"

#include "drover/state.h"

/* What the controller decided of a job, and last handed to the writer. */
typedef enum job_status { ST_NONE, ST_PENDING, ST_RUNNING, ST_SUCCEEDED, ST_FAILED } job_status;
extern const char *const ctrl_status_name[]; /* by job_status: "", "Pending", ... */

/* What a job of the state stands for. */
typedef enum job_kind { JOB_TRAININGJOB, JOB_PODGROUP, JOB_LONE_POD } job_kind;

/* A job of the state: what the API knows of its TrainingJob and what was written back. */
typedef struct job_record {
    int32_t key, ns, name; /* interned in names */
    int8_t kind;           /* job_kind: a PodGroup's or a lone pod's are not Drover's to create,
                              delete or restart (ctrl_podgroup.c) */
    int32_t *members;      /* JOB_PODGROUP, JOB_LONE_POD: each slot's pod, its interned name
                              (owned; NULL for a TrainingJob, whose pods Drover names) */
    /* ns and name as text, held here once (its paths, Events and pod names) */
    char ns_text[CTRL_NS_LEN], name_text[CTRL_NAME_LEN];
    char uid[64];
    int32_t uid_id;         /* uid interned in names: a pod is this TrainingJob's only when its
                               controller ownerReference names it (drv_kpod.owner) */
    char *tmpl[DRV_NROLES]; /* owned; see tj_record */
    double t_ready; /* when the event that made it placeable whole arrived (latency), or -1 */
    int8_t status;  /* job_status decided */
    int8_t written; /* job_status last handed to the writer: once Succeeded or Failed, never
                       again Pending or Running (ctrl_lifecycle_status refuses it) */
    char rv[24];    /* metadata.resourceVersion of its TrainingJob as last applied: the version
                       the status asked next is computed from (its write's precondition) */
    int32_t wrote_active[DRV_NROLES];
    /* the gang being bound, for its latency: requests out, pods, when decided, and the latest
     * send and answer so far (valid while lat_armed) */
    int32_t lat_out, lat_pods;
    bool lat_armed;
    double lat_t0, lat_decide, lat_sent, lat_server;
    bool why_written;    /* the waiting Event of the current wait was written */
    bool created;        /* its wanted pods were created (unbound) */
    bool gone;           /* the TrainingJob was deleted */
    bool was_whole;      /* this controller has seen its gang whole and running */
    bool node_name;      /* its templates named a spec.nodeName, ignored (tj_record) ... */
    bool node_name_told; /* ... and an Event said so */
    int32_t port;        /* spec.progress: where its chief serves progress (0: nowhere) */
    char path[128], step[96], loss[96];
    /* its lifecycle (ctrl_lifecycle.c) */
    bool allreduce;                     /* Master + Workers: the all-reduce environment */
    int8_t restart[DRV_NROLES];         /* enum drv_restart per role */
    drv_run_policy policy;              /* spec.runPolicy */
    drv_condition conds[DRV_NCONDS];    /* status.conditions (wall-clock transition times) */
    int8_t cond;                        /* DRV_COND_* True now, -1 none yet */
    int32_t cond_changes;               /* transitions so far ... */
    int32_t wrote_changes;              /* ... and as many when its status was last asked for */
    int32_t restarts;                   /* pods restarted under restartPolicy so far */
    double start_time, completion_time; /* wall clock, -1: not yet */
    int32_t spec_workers;               /* spec.replicaSpecs.Worker.replicas last seen */
    int32_t rendered[DRV_NROLES];       /* the counts its pods' peer environment names ... */
    int32_t env_gen;                    /* ... counted up each time they change */
    bool scaling;                       /* pods re-created for a new count are not all back */
    bool peers_pending;                 /* some pod was deleted to get new peers, and not every
                                           pod is back: a restart of a failed pod is not this */
    bool adopted;       /* placed by an earlier controller: no second Scheduled Event */
    bool suspended;     /* spec.runPolicy.suspend: out of the state until resumed */
    bool service_asked; /* its headless Service was handed to the writer */
    bool ttl_done;      /* its deletion after ttlSecondsAfterFinished was handed over */
    /* the checkpoint handshake (ctrl_checkpoint.c); wall seconds */
    double ckpt_asked;    /* when it was asked to checkpoint (whole seconds, as annotated), 0:
                             no handshake open */
    double ckpt_deadline; /* ... when its deletions go without the checkpoint */
    double ckpt_done;     /* its drover.dev/checkpoint-done annotation as last seen, <= 0: none */
} job_record;

/* Whether the API has a pod in a slot, as the mirror knows it. */
typedef enum pod_presence {
    POD_ABSENT,  /* no pod */
    POD_PRESENT, /* a pod, not being deleted */
    POD_DELETING /* a pod being deleted: its deletionTimestamp seen, or its deletion assumed */
} pod_presence;

/* A pod slot of the state: what the API has of its pod. */
typedef struct pod_record {
    int8_t presence;           /* pod_presence */
    int8_t phase;              /* enum drv_kpod_phase of the pod */
    int16_t exit_code;         /* its failed container's exit code, -1 (restartPolicy ExitCode) */
    int32_t restarts;          /* the kubelet's restarts in place (drv_kpod.restarts) */
    int32_t env_gen;           /* the job's env_gen its peer environment was rendered for */
    int32_t api_node;          /* the node the API has it on, -1 */
    int32_t api_name;          /* ... its interned name, 0 when unbound */
    uint8_t ip_family, ip[16]; /* status.podIP (0: none yet) */
    int32_t ghost;             /* being deleted where the state no longer has it: the interned
                                  node whose room it holds until gone (counted as foreign), 0 */
    drv_res ghost_req;
    int32_t ghost_queue;    /* ... and the state's queue whose use it holds meanwhile
                               (drv_state_hold_queue), -1 (none, or the state has no queue) */
    int32_t want;           /* create it bound to this node once the old pod is gone, -1 */
    int8_t inflight;        /* ctrl_request a binder thread is sending about it, REQ_NONE ... */
    int32_t inflight_node;  /* ... REQ_BIND, REQ_CREATE: the state node it places it on, -1 */
    bool ghost_placed;      /* its ghost holds the room of a placement still out, for a
                               deletion to follow (ctrl_binder.c: hold_placed_room) */
    bool delete_after;      /* ... and it is to be deleted once that is done */
    bool delete_assumed;    /* POD_DELETING was assumed for a deletion not yet answered */
    int64_t api_cpu_limit;  /* its pod's CPU limit as the API has it (drv_kpod.cpu_limit, 0:
                               none); what the state is restored to when a resize fails */
    int64_t want_cpu_limit; /* a CPU limit decided but not resized in place: given to its pod
                               when it is next created (ctrl_resize.c); 0: none */
    int8_t delete_tries;    /* deletions of its current pod that failed (sent again while below
                               MAX_DELETE_TRIES; its ghost holds the room meanwhile) */
    bool name_taken;        /* its creation met a pod of its name that the job does not control
                               (READ_FOREIGN; said once by an Event) until one succeeds */
} pod_record;

/* By interned key: a pod of ours that is no slot's (yet), and, as a job key, the first such
 * pod naming it. The pods parked under one job key are chained, so that a job's are adopted
 * without a look-up by name. */
typedef struct parked_pod {
    drv_kpod *pod; /* the pod as last seen (owned), NULL: none parked under this key */
    int32_t job;   /* ... its event's job_key, 0 */
    int32_t next;  /* ... the next pod parked under the same job key, 0 */
    int32_t first; /* as a job key: the first pod parked under it, 0 */
    bool warned;   /* ... it names a known job that does not control it: reported (stand_ins) */
} parked_pod;

/* A parked pod with a known job's labels that the job does not control, to be reported. */
typedef struct stand_in {
    int32_t key, job; /* the pod's interned key, the job's index */
} stand_in;

/* A drover pod bound to a node not seen yet. */
typedef struct orphan_pod {
    int32_t slot, node; /* pod slot, interned node name */
} orphan_pod;

typedef struct ctrl_mirror {
    drv_state st;
    job_record *jobs; /* per state job */
    int32_t cap_jobs;
    pod_record *pods; /* per pod slot */
    int32_t cap_pods;
    drv_res *allocatable; /* per state node: the API's allocatable */
    bool *usable;         /* per state node: ready and not cordoned (taints are the core's:
                             drv_state_set_node_meta) */
    int32_t *meta;        /* per state node: its labels and taints as given to the state,
                             interned in names (drv_knode.meta) */
    int32_t *node_key;    /* per state node: its name interned in names (drv_knode.name) */
    int32_t cap_nodes;
    /* by interned key (cap_by_key entries each) */
    int32_t *job_of, *node_of; /* state job id / node id, or -1 */
    int32_t *cons_of;          /* by interned constraint JSON: the state's constraint, or -1 */
    parked_pod *parked;        /* pods of ours that are no slot's: jobs not known yet, or not
                                  controlled by their job (counted as foreign load) */
    drv_res *foreign;          /* by node name: requests of pods Drover does not schedule
                                  (kept by name: a pod may be seen before its node) */
    int32_t cap_by_key;
    orphan_pod *orphans;
    int32_t norphans, cap_orphans;
    int32_t *adopt;      /* room for cap_orphans slots: the orphans a node takes when it is added
                            (drv_node_desc.bind) */
    stand_in *stand_ins; /* not reported yet (once per pod: parked_pod.warned); the loop reports
                            them as Warnings while leading (ctrl_mirror_take_stand_ins) */
    int32_t nstand_ins, cap_stand_ins;
    /* Nodes without a --topology level's label (ctrl_mirror_report_topology): */
    bool *topo_told;    /* per state node (grown with the nodes, cap_nodes): a
                           TopologyLabelMissing was queued */
    int32_t *topo_gaps; /* state nodes to report, not reported yet */
    int32_t ntopo_gaps, cap_topo_gaps;
    bool dirty;         /* changed since the last cycle */
    int32_t name_waits; /* pods with name_taken: a deletion of a pod not ours then asks for a
                           cycle (the name may be free); may count a job since gone */
    bool starts_blind;  /* the last cycle's drv_sched_starts_blind (ctrl_mirror_set_phase) */
    /* fixed at init */
    ctrl_names *names;
    ctrl_counters *counters;
    const ctrl_config *cfg;
} ctrl_mirror;

/* 0, or DRV_ENOMEM. fini frees every record. */
int ctrl_mirror_init(ctrl_mirror *m, ctrl_names *names, ctrl_counters *counters,
                     const ctrl_config *cfg);
void ctrl_mirror_fini(ctrl_mirror *m);

bool ctrl_pod_terminal(int phase); /* Succeeded or Failed */

/* The informers' objects and the collector's samples, applied. 0 or DRV_ENOMEM. A pod of
 * another operator's gang that is no job yet sets *gang: ctrl_podgroup_pod keeps it. */
int ctrl_mirror_apply_node(ctrl_mirror *m, const ctrl_event *e);
int ctrl_mirror_apply_pod(ctrl_mirror *m, const ctrl_event *e, bool *gang);
int ctrl_mirror_apply_progress(ctrl_mirror *m, const ctrl_event *e);

/* Makes the tables by interned key hold id (ctrl_apply_events: every id interned before a
 * batch, so that applying its events needs no growth; a unit that interns on the scheduler
 * thread grows them for its own ids); the job and pod records hold the state's. */
int ctrl_mirror_grow_by_key(ctrl_mirror *m, int32_t id);
int ctrl_mirror_grow_records(ctrl_mirror *m);

/* A job as the mirror adds it to the state (ctrl_mirror_job.c): the core's record of it (its
 * template, name and user as text, its new constraints), and for each role its constraint's
 * JSON (interned; 0: none), by which the state's constraint is known once added. Zeroed, then
 * filled by the unit that adds the job and by ctrl_mirror_constraint. */
typedef struct ctrl_job_add {
    drv_job_desc d;
    int32_t json[DRV_NROLES];
    drv_constraint k[DRV_NROLES]; /* role r's, decoded, when d.cons[r] points at it */
} ctrl_job_add;
/* Role r's node constraint into a, of interned constraint JSON json (drv_kpod.cons,
 * drv_ktrainingjob.cons; 0: none): the state's id when it holds that constraint already, else
 * decoded for ctrl_mirror_add_job to add from text: a pod template (JSON) whose spec has the
 * constraint's fields when tmpl, else json's own text. 0, DRV_EPARSE (d names who and path) or
 * DRV_ENOMEM (text NULL too). */
int ctrl_mirror_constraint(ctrl_mirror *m, ctrl_job_add *a, int r, int32_t json, const char *text,
                           bool tmpl, const char *who, const char *path, drv_diag *d);
/* Adds a's job to the state whole (drv_state_apply_job: a constraint the state refuses is
 * logged, its role left unconstrained) as the job of interned key: its record zeroed but for
 * key, its pod records empty, counted; a's decoded constraints freed. 0 or the state's error. */
int ctrl_mirror_add_job(ctrl_mirror *m, ctrl_job_add *a, int32_t key, int32_t *j);
/* Job j leaves the state: its pods unbound, its phase DONE; counted as done when finished
 * (a suspended job leaves it unfinished: resumed, it comes back as a new job). The one way a
 * unit ends a job of the state. */
void ctrl_mirror_end_job(ctrl_mirror *m, int32_t j, bool finished);
/* Job j's phase as a cycle's reconcile finds it (its pods placed, running, or no longer whole).
 * The cycle decided on the phase before, and the plugins' wake-up time was computed from it:
 * a change makes the mirror dirty, so that the next iteration runs the cycle that sees it.
 * Not when the job goes STARTING (its gang was placed by that cycle's decisions, which already
 * ask for the next cycle, or by bindings it saw), nor when it starts running (from STARTING or
 * RESTARTING) and the last cycle was blind to starts (m->starts_blind: docs/cycle.md, "Quiet
 * cycles"). Ending a job (DONE) is ctrl_mirror_end_job's, and its callers make it dirty. */
void ctrl_mirror_set_phase(ctrl_mirror *m, int32_t j, int phase);
/* The parked pod of interned key pod_key, if any, becomes slot's. */
int ctrl_mirror_adopt(ctrl_mirror *m, int32_t slot, int32_t pod_key, double now);
/* TrainingJob job j's pods seen before it (parked under its key), those it controls: adopted.
 * O(pods parked under its key). */
int ctrl_mirror_adopt_parked(ctrl_mirror *m, int32_t j, double now);
/* A gang's Kueue topology annotation (mode: enum drv_topo_mode, key: its level's label key,
 * interned; drv_kube_topology) onto tmpl's topo_mode and topo_level: the TrainingJob's and the
 * PodGroup's rule. False when the level is not one of --topology's: why says so, naming the
 * annotation. */
bool ctrl_mirror_topology(const ctrl_mirror *m, int8_t mode, int32_t key, drv_job *tmpl, char *why,
                          size_t n);

/* A pod of ours being deleted holds its node's room and its queue's use until it is gone: when
 * the state no longer has it there, as foreign load on node `name` (interned; 0: none) and as
 * use held by its job's queue meanwhile (a quota is never overrun in its grace period). */
void ctrl_mirror_set_ghost(ctrl_mirror *m, pod_record *p, int32_t name, drv_res req);
/* Slot s is on node in the state (moved from where it was), or on none when node is -1 (it
 * leaves its node, if it has one); nothing changes when it is there already. */
void ctrl_mirror_place(ctrl_mirror *m, int32_t s, int32_t node);
/* Slot s's CPU limit in the state is cpu_limit (millicores): a resize assumed, or undone. */
void ctrl_mirror_set_cpu_limit(ctrl_mirror *m, int32_t s, int64_t cpu_limit);
/* A binder read slot's pod after a conflict: it exists, bound to the node interned as
 * node_name (0: unbound); recorded as read. Returns the node the state should have it on to
 * follow the API (for ctrl_mirror_place), or -1 to leave the state as it is: the API has it on
 * no node the state knows, the state still wants it placed (p->want), it failed or its job is
 * done. */
int32_t ctrl_mirror_pod_read(ctrl_mirror *m, int32_t slot, int32_t node_name);

/* State node's name, copied into buf (n bytes) from the shared names (ctrl_name_str); _key: its
 * id there (the key its pods' events name it by). */
void ctrl_mirror_node_name(const ctrl_mirror *m, int32_t node, char *buf, size_t n);
int32_t ctrl_mirror_node_key(const ctrl_mirror *m, int32_t node);
/* Slot's pod name (its own for another operator's pod; job_name-role-index for ours: the _in
 * form names the job, the other takes its record's name_text). */
void ctrl_mirror_pod_name(ctrl_mirror *m, int32_t slot, char *buf, size_t n);
/* The stand-ins found since the last call (*n of them; borrowed until the next event), and
 * forgets them: pods with a job's labels that the job does not control, each once (issue 26). */
const stand_in *ctrl_mirror_take_stand_ins(ctrl_mirror *m, int32_t *n);
/* Writes a Warning Event TopologyLabelMissing on each node seen since the last call that lacks
 * the label of a --topology level (each node once), naming the keys: such a node is in no
 * domain of that level, so no pod of a gang bound to it lands there (Kueue's TAS leaves a node
 * without every level's label out altogether). The loop calls it while leading. */
struct ctrl_writer;
void ctrl_mirror_report_topology(ctrl_mirror *m, struct ctrl_writer *w);
/* Node id, just applied: queued for that Event when it lacks a level's label (gap, the core's
 * word: drv_state_apply_node) and was not told yet (ctrl_mirror_topo.c; ctrl_mirror_apply_node
 * calls it). 0 or DRV_ENOMEM. */
int ctrl_mirror_topology_gap(ctrl_mirror *m, int32_t id, bool gap);
void ctrl_mirror_pod_name_in(ctrl_mirror *m, int32_t slot, const char *job_name, char *buf,
                             size_t n);
/* The CPU limit the API holds for slot s, as the state counts it: its pod's, or (none) its
 * role's as the state first had it. */
int64_t ctrl_mirror_api_cpu_limit(const ctrl_mirror *m, int32_t s);
/* Every watch event of slot's pod kp carries its limit: the state takes it (with the rest of
 * the event: ctrl_mirror_apply_pod), unless a resize of it is out (the assumption stands until
 * its answer; ctrl_resize.c). */
void ctrl_mirror_cpu_limit_seen(ctrl_mirror *m, int32_t slot, const drv_kpod *kp);
/* The state's CPU limit of slot back to what the API holds (ctrl_mirror_api_cpu_limit): a
 * watch event's, or a resize refused (ctrl_resize.c); dirty when it changes. */
void ctrl_mirror_cpu_limit_back(ctrl_mirror *m, int32_t slot);

/* Whether job has every pod it wants bound in the state (drv_job_complete). */
bool ctrl_mirror_job_complete(const ctrl_mirror *m, int32_t job);
/* Active replicas per role (bound and running), and whether every wanted pod runs (or has
 * succeeded already). */
void ctrl_mirror_job_active(const ctrl_mirror *m, int32_t job, int32_t active[DRV_NROLES],
                            bool *all_running);
/* Attained service of running jobs over dt seconds (Tiresias-style plugins): GPU-seconds, or
 * CPU-seconds for jobs without GPUs, as the simulator counts it. */
void ctrl_mirror_attain(ctrl_mirror *m, double dt);
/* The job gauges: jobs pending and running now. */
ctrl_gauges ctrl_mirror_gauges(const ctrl_mirror *m);

#endif
