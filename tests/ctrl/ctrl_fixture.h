/*
 * ctrl_fixture.h - what the end-to-end tests of `drover run` share: a test API server and a
 * client on it (the fixture), the controller on its own thread under the gang-fifo profile
 * (runner), requests; and WAIT_FOR (tests/wait.h).
 */
#ifndef DROVER_TEST_CTRL_FIXTURE_H
#define DROVER_TEST_CTRL_FIXTURE_H

#include "apiserver.h"
#include "wait.h"
#include "drover/controller.h"
#include "json.h"

#include <stdatomic.h>
#include <pthread.h>
#include <unistd.h>

typedef struct fixture {
    drv_apiserver *srv;
    drv_kube *k;
    drv_kube_config cfg;
    char url[64];
} fixture;

typedef struct runner {
    drv_kube_config cfg; /* the fixture's, as component "run": User-Agent drover-run/... */
    drv_ctrl *c;
    pthread_t t;
    atomic_int stop;
    int rc;
    drv_diag d;
} runner;

/* cmocka setup: a test API server with options o (its request log always on) and a client on
 * it, into *state (DROVER_TEST_DEBUG=1 in the environment: debug logs). */
int fixture_open(void **state, drv_apiserver_opts o);
/* cmocka teardown: -1 when a request the controller made is not granted by deploy/rbac.yaml
 * (rbac_check.h: the refusals are printed), so the test fails; frees the fixture. */
int fixture_close(void **state);

/* Starts a controller (profile gang-fifo) on f's server in a thread of its own. */
void start(fixture *f, runner *r);
/* ... under another built-in profile. */
void start_profile(fixture *f, runner *r, const char *profile);
/* ... under policy (a built-in profile's name, or a profile written as drv_profile_parse reads
 * it: "admit=gang ..."), with the options extra (NULL: none; its profile is ignored). */
void start_with(fixture *f, runner *r, const char *policy, const drv_ctrl_opts *extra);
/* start, then wait until its caches are synced (what the cluster held before it is in them). */
void start_synced(fixture *f, runner *r);
/* Stops it; its run must have returned 0. */
void stop(runner *r);
/* method path with body fmt... (none when it formats to ""); a failure fails the test. */
void req(fixture *f, const char *method, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The object at the formatted path, or NULL (the caller json_decref's it). */
json_t *get(fixture *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A Ready node with cpu CPUs and 64Gi, without the not-ready taint; _in: labelled with zone
 * (topology.kubernetes.io/zone). */
void add_node(fixture *f, const char *name, const char *cpu);
void add_node_in(fixture *f, const char *name, const char *cpu, const char *zone);

/* Pod name of namespace default (NULL when absent; the caller json_decref's it); whether it
 * exists; whether it is bound and not being deleted; its status.phase set, as a kubelet would. */
json_t *pod(fixture *f, const char *name);
bool pod_exists(fixture *f, const char *name);
bool pod_bound(fixture *f, const char *name);
void set_phase(fixture *f, const char *pod_name, const char *phase);
/* The uid of TrainingJob name of namespace default into buf (n bytes), "" when none: what a pod
 * it controls names in its ownerReference. */
const char *tj_uid(fixture *f, const char *name, char *buf, size_t n);
/* Kubelet's part of graceful deletions: pods of namespace default being deleted are removed.
 * Returns how many. */
int kubelet_finish_deletes(fixture *f);
/* Events of namespace default about obj with reason: how many; the last one's message into
 * message (n bytes) when message is not NULL. */
int events(fixture *f, const char *obj, const char *reason, char *message, size_t n);

/* TrainingJobs of namespace default. role: a replicaSpecs entry "<Key>":{...} of replicas pods
 * asking cpu each (extra: more fields first, ""); add_job: a TrainingJob of those specs
 * (run_policy: more spec fields first, ""); cond_of: the job's condition of type (status,
 * reason, message copied, "" when absent; message may be NULL), true when it is the current
 * (last) one; now_in: whether the current condition is type, True, with reason (any: NULL). */
void role(char *buf, size_t n, const char *key, int replicas, const char *cpu, const char *extra);
void add_job(fixture *f, const char *name, const char *specs, const char *run_policy);
bool cond_of(fixture *f, const char *job, const char *type, char *status, char *reason,
             char *message);
bool now_in(fixture *f, const char *job, const char *type, const char *reason);

#endif
