/*
 * emulator.h - plays kubelet for fake nodes (in the spirit of KWOK), so that a scheduler
 * and controller can be run end to end against a real API server without hardware.
 *
 * The emulator registers its nodes (labels for zone, rack and hostname, drover.dev/emulated,
 * capacity = allocatable, a Ready condition) and keeps them Ready with a heartbeat. It watches
 * every pod; a pod bound to one of its nodes (spec.nodeName) and still Pending becomes Running
 * start_delay_s (emulated) later, then Succeeded after its run duration: the annotation
 * drover.dev/duration-seconds, in emulated seconds; a pod without it runs until deleted (and one
 * annotated drover.dev/exit-code fails then instead, so that restarts can be exercised). Time
 * runs `speed` emulated seconds per real second. A pod being deleted (deletionTimestamp) on one
 * of its nodes is deleted with grace 0, as a kubelet confirms a graceful deletion once its
 * containers stopped; a pod deleted is forgotten. Details and limits: docs/emulate.md.
 *
 * Threads: drv_emulator_start registers the nodes on the caller's thread (so that an
 * unreachable server or a refused node is an error there), then starts two threads: an
 * informer on /api/v1/pods and a worker that writes pod status, deletions and heartbeats. Each
 * has its own API client made from the configuration. drv_emulator_stop joins them.
 */
#ifndef DROVER_EMULATOR_H
#define DROVER_EMULATOR_H

#include "drover/kube.h"

/* The annotation that says how long an emulated pod runs, in emulated seconds ("90", "2.5"). */
#define DRV_EMU_DURATION_ANNOTATION "drover.dev/duration-seconds"
/* A pod that ends with this exit code ("137", "1") instead of 0: Failed, its container
 * terminated with that code (reason Error), when its duration has passed. */
#define DRV_EMU_EXIT_CODE_ANNOTATION "drover.dev/exit-code"
/* ... only the first N times a pod of that namespace/name ends ("1": a restarted pod then
 * succeeds); without it, every time. A pod whose spec.restartPolicy is OnFailure does not end
 * Failed: its container restarts in place (restartCount + 1, still Running; docs/emulate.md). */
#define DRV_EMU_FAIL_TIMES_ANNOTATION "drover.dev/fail-times"
/* The label every emulated node carries ("true"). */
#define DRV_EMU_NODE_LABEL "drover.dev/emulated"

/* One node to emulate. zone and rack may be empty (no label). */
typedef struct drv_emu_node {
    char name[64];
    char zone[32];
    char rack[32];
    drv_res alloc; /* capacity and allocatable: CPU millicores, memory bytes, whole GPUs */
    /* more labels and its taints, as kubectl label / taint write them, comma-separated
     * ("pool=gpu,gpu-generation=4"; "gpu=true:NoSchedule,spot:PreferNoSchedule"); "" none */
    char labels[1024];
    char taints[512];
    bool unschedulable; /* spec.unschedulable: cordoned */
} drv_emu_node;

typedef struct drv_emulator_opts {
    double speed;         /* emulated seconds per real second (> 0; default 1, max 1e6) */
    double start_delay_s; /* emulated seconds from binding to Running (>= 0; default 1) */
    double heartbeat_s;   /* real seconds between node heartbeats (> 0; default 10) */
    int watch_timeout_s;  /* server-side timeout of each pod watch (0: the informer's 300) */
    /* emulated seconds a pod without the duration annotation runs before it succeeds (what
     * `drover playground` gives a job written for a real cluster); <= 0: it runs until deleted */
    double default_duration_s;
} drv_emulator_opts;

#define DRV_EMU_DEF_SPEED 1.0
#define DRV_EMU_MAX_SPEED 1e6
#define DRV_EMU_DEF_START_DELAY 1.0
#define DRV_EMU_DEF_HEARTBEAT 10.0

/* Fills the defaults. */
void drv_emulator_opts_default(drv_emulator_opts *o);

typedef struct drv_emulator drv_emulator;

/* Counts so far (any thread). */
typedef struct drv_emulator_stats {
    long nodes_registered; /* nodes created or updated at start */
    long heartbeats;       /* node status writes after the first */
    long started;          /* pods set Running */
    long succeeded;        /* pods set Succeeded */
    long failed;           /* pods set Failed (drover.dev/exit-code) */
    long deleted;          /* terminating pods deleted with grace 0 */
    long forgotten;        /* pods dropped from tracking (deleted, finished elsewhere, replaced) */
    long errors;           /* writes that failed (logged; retried while the pod is tracked) */
    long tracked;          /* pods tracked now */
} drv_emulator_stats;

/* Copies cfg and the n nodes (names unique, n >= 1). Options out of range are DRV_EINVAL
 * with the option named; o NULL is the defaults. Nothing is sent before start. */
int drv_emulator_new(drv_emulator **out, const drv_kube_config *cfg, const drv_emu_node *nodes,
                     int32_t n, const drv_emulator_opts *o, drv_diag *d);
/* Registers every node (POST; when it exists, its labels and status are updated), then starts
 * the threads. DRV_EIO with the server's answer when a node cannot be registered. Start once;
 * after a failed start, only free. */
int drv_emulator_start(drv_emulator *e, drv_diag *d);
/* Stops the threads (ends the open watch) and waits for them. Nodes stay registered. Safe to
 * call when not started, and twice. */
void drv_emulator_stop(drv_emulator *e);
/* Stops if needed and frees. Accepts NULL. */
void drv_emulator_free(drv_emulator *e);
drv_emulator_stats drv_emulator_get_stats(drv_emulator *e);

#endif
