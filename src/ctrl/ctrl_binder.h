/*
 * ctrl_binder.h - `drover run`'s binder, the scheduler thread's side: a decision becomes a
 * request about a pod (a binding, a creation bound or not, a deletion, a CPU resize), assumed
 * in the mirror from the moment it is queued, and its answer is applied when it comes back (a
 * failure undoes the assumption: kube-scheduler's assume and ForgetPod). The sending is the
 * binder threads' (ctrl_send.h).
 *
 * Owns: its send side (threads, queues), and whether this controller may send (leads). Touches:
 * the mirror's pod and job records and state (its assumptions), names, the writer (a job's
 * headless Service, created with its first pods), counters.
 *
 * At most one request per pod is out at a time: a pod to be deleted while its creation is out
 * is deleted once that is answered (delete_after), and a pod is not created or bound while its
 * deletion is out (it waits in pod_record.want), so two binder threads never race on one name.
 */
#ifndef DROVER_CTRL_BINDER_H
#define DROVER_CTRL_BINDER_H

#include "ctrl_mirror.h"
#include "ctrl_send.h"
#include "ctrl_writer.h"

/* A pod's deletion that fails is sent again up to this many times in all (then its room stays
 * held until the pod goes: the watch says when). */
enum { MAX_DELETE_TRIES = 6 };

typedef struct ctrl_binder {
    ctrl_send send; /* the binder threads and their queues */
    bool leader;    /* this controller sends: a follower's requests are dropped as failed */
    /* fixed at init */
    ctrl_mirror *mirror;
    ctrl_names *names;
    ctrl_writer *writer;
    ctrl_counters *counters;
    const ctrl_config *cfg;
} ctrl_binder;

/* Its send side: drv_ctrl_opts.binders threads, each with a client of kcfg; answers into events. */
int ctrl_binder_init(ctrl_binder *b, const drv_kube_config *kcfg, ctrl_mirror *mirror,
                     ctrl_names *names, ctrl_writer *writer, ctrl_counters *counters,
                     ctrl_events *events, const ctrl_config *cfg, drv_diag *d);
int ctrl_binder_start(ctrl_binder *b, drv_diag *d);
void ctrl_binder_stop(ctrl_binder *b);
void ctrl_binder_fini(ctrl_binder *b);

/* Creates slot's pod, bound to node (-1: unbound). 0 or DRV_ENOMEM (nothing out). */
int ctrl_binder_create(ctrl_binder *b, int32_t slot, int32_t node);
/* Places slot on node in the API: a binding when its pod exists, a bound creation when not;
 * later when the old pod is being deleted, when a request about it is still out, or when the
 * node's room is still held by pods being deleted (or others' pods): the room stays reserved in
 * the state meanwhile (pod_record.want). */
int ctrl_binder_place(ctrl_binder *b, int32_t slot, int32_t node);
/* Deletes slot's pod: assumed being deleted from now until the answer says otherwise; its room
 * stays held meanwhile. A request still out about it is answered first (delete_after). */
int ctrl_binder_delete(ctrl_binder *b, int32_t slot);
/* PATCHes slot's pods/resize with body (owned from now). */
int ctrl_binder_resize(ctrl_binder *b, int32_t slot, char *body);
/* A binder thread's answer (EV_ANSWER): the pod exists (and where), or the assumption is undone;
 * a deletion that waited for it is sent; a gang whose last answer this is has its latency. A
 * REQ_RESIZE's limit is ctrl_resize_answered's, applied before this. 0 or DRV_ENOMEM. */
int ctrl_binder_apply_answer(ctrl_binder *b, const ctrl_event *e);
/* A cycle's requests go out in batches between hold and flush. */
void ctrl_binder_hold(ctrl_binder *b);
void ctrl_binder_flush(ctrl_binder *b);
/* This controller leads (sends), or no longer does: what is still queued is dropped, each as a
 * failed answer, so that its assumption is undone. */
void ctrl_binder_lead(ctrl_binder *b, bool on);
/* The binders' limit of requests in flight now; *peak (unless NULL) the most at once. Any
 * thread. */
int ctrl_binder_limit(ctrl_binder *b, int *peak);

#endif
