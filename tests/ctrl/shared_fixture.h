/*
 * shared_fixture.h - what the end-to-end tests of shared clusters (test_shared.c) and of the
 * checkpoint handshake (test_checkpoint.c, test_topology_run.c) share on top of ctrl_fixture.h:
 * TrainingJobs of n workers, their bound pods and annotations, a controller under a profile
 * line, kubelet's part, PriorityClasses.
 */
#ifndef DROVER_TEST_SHARED_FIXTURE_H
#define DROVER_TEST_SHARED_FIXTURE_H

#include "ctrl_fixture.h"
#include "drover/policy.h"

#define TJ_PATH "/apis/drover.dev/v1alpha1/namespaces/default/trainingjobs"

/* A TrainingJob of n workers of cpu each; spec: more spec fields ("" or "...,"); pod: more
 * pod spec fields ("" or "...,"). */
void add_tj(fixture *f, const char *name, int n, const char *cpu, const char *spec,
            const char *pod);
/* How many of job's pods are bound, and (nodes, when given) to which, comma-separated. */
int bound(fixture *f, const char *job, char *nodes, size_t n);
/* TrainingJob job's annotation key into buf (n bytes; "" when absent); whether it is there. */
bool annotation(fixture *f, const char *job, const char *key, char *buf, size_t n);
/* A controller thread's body: r's controller runs until r->stop (its result in r->rc). */
void *run_main(void *r);
/* A controller under the given profile text (parsed into *prof, which must outlive it). */
void start_text(fixture *f, runner *r, const char *text, drv_profile *prof);
/* Kubelet's part: the pods of job bound and not being deleted run. Returns how many are being
 * deleted with grace_s as their grace period. */
int kubelet(fixture *f, const char *job, long grace_s);
/* PriorityClasses high (1000) and low (0). */
void add_classes(fixture *f);

/* The preemption scene: one node of 8 CPUs, PriorityClasses high and low, a controller under
 * profile (parsed into *prof), TrainingJob low-a (class low, 2 workers of 4 CPUs, grace period
 * 30 s) bound and running as the controller sees it; then vip (class high, the same size),
 * which only a preemption places. */
void preemption_scene(fixture *f, runner *r, const char *profile, drv_profile *prof);

#endif
