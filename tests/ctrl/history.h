/*
 * history.h - the test API server's audit log (drv_apiserver_audit) replayed event by event,
 * and the checks that must hold at every moment of a run of `drover run` (test_chaos,
 * test_e2e20):
 *
 *   over-commit   at no moment do the pods bound to a node and not finished request more CPU
 *                 or memory than the node's allocatable;
 *   double bind   at no moment are two unfinished bound pods the same slot of a gang, and no
 *                 slot succeeds twice;
 *   half gang     no pod of a gang ends (Succeeded or Failed) before a pod of each of its slots
 *                 has been bound (the gang's size is declared with hist_gang).
 *
 * A pod's gang and slot: a TrainingJob's pod (labels drover.dev/job, role, rank) is slot
 * role/rank of gang "namespace/job"; another operator's pod naming a PodGroup
 * (scheduling.x-k8s.io/pod-group) is slot "its name" of gang "namespace/group"; any other pod is
 * a gang of one. Nodes are told apart by name. A violation is counted and printed to stderr;
 * a node's first over-commit also names its live pods, each with the resourceVersion that showed
 * it bound and whether it was being deleted.
 *
 * Test code: allocation failure aborts the test (exit 1).
 */
#ifndef DROVER_TEST_HISTORY_H
#define DROVER_TEST_HISTORY_H

#include <stdbool.h>

typedef struct hist hist;

typedef struct hist_counts {
    long events;       /* audit lines replayed */
    long overcommits;  /* events after which some node was over-committed */
    long double_binds; /* events after which some slot had two live bound pods */
    long twice_done;   /* slots that succeeded twice */
    long half_gangs;   /* gangs that had a pod end before every slot was bound */
} hist_counts;

hist *hist_new(void);
void hist_free(hist *h); /* accepts NULL */
/* Declares gang "namespace/name" to have `slots` slots (undeclared gangs are not checked for
 * half binding). */
void hist_gang(hist *h, const char *gang, int slots);
/* Replays the audit log (one {"type":..,"object":..} JSON line an event). */
void hist_replay(hist *h, const char *audit);
hist_counts hist_result(const hist *h);
/* The gangs in the order their first pod was bound: writes up to max names (each "namespace/
 * name") into names[i] (borrowed, valid until hist_free); returns how many gangs were bound. */
int hist_bind_order(const hist *h, const char **names, int max);
/* How many pods of gang ever were bound (restarted pods count again), or 0. */
int hist_binds(const hist *h, const char *gang);

#endif
