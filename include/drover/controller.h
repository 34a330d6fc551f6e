/*
 * controller.h - `drover run`: the TrainingJob controller, scheduler and binder that puts
 * the scheduling core (cycle.h) to work against a Kubernetes API server.
 *
 * docs/running.md is the user's guide and says what happens to a TrainingJob; in short:
 *
 *   informers (threads)           scheduler thread (owns a drv_state)
 *   nodes, pods, trainingjobs ──► events ──► apply to state ──► drv_sched_cycle ──► decisions
 *                                                                  │
 *         BIND     POST pods/NAME/binding, or create the pod with spec.nodeName when it does
 *                  not exist yet (a job's pods are created eagerly only once it has waited a
 *                  cycle: a job that fits at once costs one request per pod)
 *         EVICT    DELETE the pod (the job's pod is created again while the job still wants it)
 *         SCALE    the job's worker target: workers above it are deleted, below it created
 *         MIGRATE  DELETE the pod, then create it bound to the new node once it is gone
 *         RESIZE   PATCH pods/NAME/resize where the API serves it (Kubernetes >= 1.33), else
 *                  the new limit at the pod's next creation (docs/running.md, "CPU limits")
 *
 * Status (phase, message, active replicas per role) is written to each TrainingJob's status
 * subresource when it changes, and an Event explains every job that has to wait. Nodes'
 * allocatable minus the requests of pods Drover does not schedule (other schedulers' pods,
 * DaemonSets) is what the core sees as their capacity.
 *
 * With leader election (drv_ctrl_opts.lease_name), only the Lease's holder runs cycles.
 *
 * Progress: a TrainingJob with spec.progress names the port (and path, metric names) where its
 * chief serves Prometheus text; every profile period (within 1..60 s) a collector thread
 * scrapes the chief of each running job and the step and loss become the job's progress
 * samples, as the simulator's are (plugins read them through drv_ctx_progress).
 *
 * Time: snapshot time is seconds since the controller started (monotonic clock); a job's
 * submit time is when the controller first saw it.
 */
#ifndef DROVER_CONTROLLER_H
#define DROVER_CONTROLLER_H

#include "drover/cycle.h"
#include "drover/kube.h"
#include "drover/kube_metrics.h"

#include <stdatomic.h>

/*
 * `drover run`'s default API budget, all of its clients together (--kube-api-qps,
 * --kube-api-burst; the reasons: docs/running.md). A start on 5,000 nodes with 16,000 pods and
 * 2,000 new pods in gangs sends ~2,050 requests (the informers' paged lists, then one creation
 * per pod): all fit in the burst, so the limiter does not hold Drover below the API server's
 * own pace, and 5,000/s after it is above what an API server answers for pod writes (its
 * priority and fairness, 429 with Retry-After, bound Drover then, not this bucket).
 */
#define DRV_CTRL_DEF_QPS 5000
#define DRV_CTRL_DEF_BURST 5000

/*
 * Binder threads (drv_ctrl_opts.binders, --binders): the most requests about pods in flight at
 * once; how many are, from 8 up to that, is sized from the answers' latency (src/kube/limiter.c:
 * grown while answers come as fast as unloaded, shrunk when they slow down, halved on a 429).
 * By Little's law the binding rate is the requests in flight over the server's time per write:
 * 8 at a real server's 15-30 ms a creation (issue 28's audit) is ~260-510 pods/s, 32 is ~4 times
 * that, and at 50 ms a write 32 still give ~640/s. 32 is far below a priority level's seats (244
 * for workload-low) and the default budget (5000/s allows ~90 in flight at 18 ms).
 */
#define DRV_CTRL_DEF_BINDERS 32
#define DRV_CTRL_MAX_BINDERS 256

typedef struct drv_ctrl_opts {
    const drv_profile *profile; /* the scheduling profile: borrowed, outlives the controller */
    const char *scheduler;      /* schedulerName served; NULL: "drover" */
    const char *namespace_;     /* TrainingJobs of this namespace only; NULL: every namespace */
    const char *gpu_type_label; /* the node label naming a node's GPU type (state.h "GPU
                                   types"); NULL: DRV_GPU_TYPE_LABEL, "": types not read */
    const char *topology;       /* topology levels, node label keys widest first, comma-separated
                                   (state.h "Topology-bound gangs"; checked by the caller:
                                   drv_topology_split); NULL or "": none */
    int watch_timeout_s;        /* server-side timeout of each watch; 0: 300 */
    bool exhaustive;            /* score every node (the index's reference; benchmarks) */
    bool no_events;             /* write no Events (benchmarks) */
    int binders; /* threads sending bindings, pod creations, deletions; 0: DRV_CTRL_DEF_BINDERS */
    /* --bind-mode=binding: a placed pod not yet created is created unbound, then bound through
     * pods/binding once its creation is answered (two requests, for clusters whose admission
     * refuses spec.nodeName at creation); false: created with spec.nodeName, one request */
    bool bind_with_binding;
    /* Leader election through a coordination.k8s.io Lease (client-go's rules): only the
     * holder schedules; the others keep their caches warm and take over when the holder has
     * not renewed for lease_s, as measured on their own clock from when they saw its last
     * renewal. NULL lease_name: no election (run exactly one controller). */
    const char *lease_namespace; /* NULL: "drover-system" */
    const char *lease_name;
    const char *identity; /* NULL: "<hostname>_<pid>" */
    int lease_s;          /* 0: 15 (leaseDurationSeconds) */
    int renew_s;          /* 0: 10: a leader that could not renew for this long stops */
    double retry_s;       /* 0: 2: how often the lease is tried or renewed */
    /* When the API did not serve queues.drover.dev at start, how often discovery is asked
     * again (each wait jittered by up to 10%), so a Queue CRD applied later is followed
     * without a restart. <= 0: 30 (tests give less). */
    double queue_recheck_s;
    /* Optional: a registry the controller registers its metrics in (drover_*: docs/running.md)
     * and whose readiness it sets once its caches are synced; the caller serves it. */
    drv_metrics *metrics;
    /* Optional: what a waiting job's Event adds after why it waits - the caller's account of
     * the job's place in the queue (`drover run` gives the combined priority factor by factor,
     * as `drover sim --explain` prints it). Called on the scheduler thread with the state as
     * the last cycle saw it; writes at most n bytes of text into buf (empty: nothing). */
    void (*explain)(void *arg, const drv_profile *prof, const drv_state *st, double now,
                    int32_t job, char *buf, size_t n);
    void *explain_arg;
} drv_ctrl_opts;

typedef struct drv_ctrl drv_ctrl;

/* Connects nothing yet: checks the options and creates the API clients (one per thread). */
int drv_ctrl_new(drv_ctrl **out, const drv_kube_config *cfg, const drv_ctrl_opts *o, drv_diag *d);
void drv_ctrl_free(drv_ctrl *c);

/*
 * Runs until *stop becomes non-zero (set from any thread, or from a signal handler: a lock-free
 * atomic_int), looking at least every 50 ms: starts the informers, waits until each has listed
 * once, then schedules. Returns 0 when stopped, or a negative code for an error it cannot
 * recover from, d saying what (out of memory; a thread that cannot start; a profile whose
 * plugins fail). API errors are logged and retried, never fatal.
 */
int drv_ctrl_run(drv_ctrl *c, atomic_int *stop, drv_diag *d);

typedef struct drv_ctrl_stats {
    long cycles;                 /* scheduling cycles run */
    long binds;                  /* pods/binding requests that succeeded */
    long creates;                /* pods created (bound or not) */
    long created_bound;          /* ... of which created bound (spec.nodeName: no binding) */
    long deletes;                /* pods deleted */
    long resizes;                /* pods/resize requests that succeeded (CPU limits changed in
                                    place; docs/running.md) */
    long api_errors;             /* answers other than 2xx to any of its clients, retried ones
                                    included (the API budget's count, drv_kube_budget) */
    long status_writes;          /* TrainingJob status updates */
    long events;                 /* Events written */
    long jobs;                   /* TrainingJobs known, and other operators' gangs admitted */
    long jobs_done;              /* ... finished (Succeeded or Failed) */
    long leaderships;            /* times this controller became the leader */
    long samples;                /* progress samples collected */
    double last_step, last_loss; /* ... the latest one's values */
    bool synced;                 /* every informer has listed once and scheduling has begun */
    bool leader;                 /* it holds the lease (always true without leader election) */
    int bind_limit;              /* the binders' limit of requests in flight now (limiter.c) */
    int bind_peak;               /* ... the most they had in flight at once */
} drv_ctrl_stats;
drv_ctrl_stats drv_ctrl_get_stats(drv_ctrl *c);

/*
 * Latency of each gang placed whole in one cycle, measured from the watch event that completed
 * it (a TrainingJob's ADDED event, or the first DELETED event of one of its own pods it waited
 * for since its last cycle) to its last binding request. Seconds:
 *   decide  event -> the cycle's decisions are made (queueing and the cycle itself);
 *   sent    event -> a binder thread sends the gang's last binding (or bound creation) request
 *           (the binders send in parallel, so this includes the server's time only where a
 *           gang has more requests than there are binders);
 *   done    event -> the last answer is received;
 *   server  the sum of the times the gang's requests waited for their answers.
 */
typedef struct drv_ctrl_latency {
    double decide, sent, done, server;
    int32_t pods;
} drv_ctrl_latency;
/* Copies up to n of the recorded latencies (oldest first) into out; returns how many exist. */
size_t drv_ctrl_latencies(drv_ctrl *c, drv_ctrl_latency *out, size_t n);

#endif
