/*
 * ctrl_shared.h - `drover run` on a shared cluster (issue 14, docs/running.md "Shared
 * clusters"): PriorityClasses and Drover's Queues followed from the API, a new job's priority,
 * queue and user resolved from them, and the TrainingJobs that name a queue or priority class
 * that does not exist held out of the state until it does.
 *
 * Owns: what is below (scheduler thread only). Touches: the mirror's state (its queues), the
 * writer (held jobs' status and Events, Queue status), names.
 */
#ifndef DROVER_CTRL_SHARED_H
#define DROVER_CTRL_SHARED_H

#include "ctrl_mirror.h"
#include "ctrl_writer.h"

/* A TrainingJob held out of the state: its queue or priority class is missing, or its Queue
 * does not admit its namespace. */
typedef struct held_job {
    ctrl_event e;  /* its latest event (e.tj owned) */
    char why[400]; /* what holds it, for its condition and Event */
    char reason[48];
    bool told; /* its status and Event were written */
} held_job;

/* A PriorityClass as last seen. */
typedef struct prio_class {
    int32_t name; /* interned in names */
    int32_t value;
    bool global_default;
    double min_runtime; /* drover.dev/min-runtime-seconds, 0: none */
} prio_class;

/* What a Queue's status last said (to write it only when it changes). */
typedef struct queue_seen {
    int32_t key;  /* interned "queue:<name>" in names: the writer's status key */
    bool gone;    /* its Queue object was deleted: new jobs naming it are held */
    bool written; /* a status was written */
    int32_t pending, admitted;
    drv_res used;
    int32_t nns; /* its spec.namespaces (drv_kqueue's nns, ns): -1, every namespace */
    int32_t ns[DRV_QUEUE_MAX_NAMESPACES];
    bool user_label; /* spec.userFromLabel */
    int32_t usage;   /* its decayed usage (usage.h) written, in thousandths; -1: none */
} queue_seen;

typedef struct ctrl_shared {
    prio_class *pc;
    int32_t npc, cap_pc;
    held_job *held;
    int32_t nheld, cap_held;
    queue_seen *queues; /* per state queue */
    int32_t cap_queues;
    bool queues_served; /* queues.drover.dev is served: at start, or a Queue event came */
    bool changed;       /* classes, queues or held jobs changed since ctrl_shared_admit */
    /* fixed at init */
    ctrl_mirror *mirror;
    ctrl_names *names;
    ctrl_writer *writer;
    const ctrl_config *cfg;
} ctrl_shared;

void ctrl_shared_init(ctrl_shared *s, ctrl_mirror *mirror, ctrl_names *names, ctrl_writer *writer,
                      const ctrl_config *cfg);
void ctrl_shared_fini(ctrl_shared *s);

/* An EV_PRIORITYCLASS, an EV_QUEUE. *changed: a class or queue a waiting gang may name came
 * or changed (ctrl_podgroup_touch). 0 or DRV_ENOMEM. */
int ctrl_shared_apply_priorityclass(ctrl_shared *s, const ctrl_event *e, bool *changed);
int ctrl_shared_apply_queue(ctrl_shared *s, const ctrl_event *e, bool *changed);

/* Fills a new job's priority and queue from its TrainingJob; false (why and reason set) when
 * its queue or priority class is missing, or its Queue does not admit its namespace. */
bool ctrl_shared_resolve(ctrl_shared *s, const tj_record *t, drv_job *tmpl, char *why, size_t n,
                         char *reason, size_t nr);
/* The user of fair share of TrainingJob t, admitted to state queue q: its namespace unless its
 * Queue honours the drover.dev/user label (spec.userFromLabel), then the label's value (into
 * buf, n bytes); a label not honoured is ignored, with a Warning Event (UserLabelIgnored).
 * Returns t->ns or buf. */
const char *ctrl_shared_user(ctrl_shared *s, const tj_record *t, int32_t q, char *buf, size_t n);
/* The same for a queue and a priority class named by interned names (0: none) from namespace
 * ns (interned): another operator's PodGroup's (Volcano's spec.queue, spec.priorityClassName). */
bool ctrl_shared_resolve_names(ctrl_shared *s, int32_t ns, int32_t queue, int32_t pclass,
                               drv_job *tmpl, char *why, size_t n, char *reason, size_t nr);

/* Holds e's TrainingJob (e->tj taken) until what it names appears. 0 or DRV_ENOMEM. */
int ctrl_shared_hold(ctrl_shared *s, ctrl_event *e, const char *why, const char *reason);
/* Forgets the held TrainingJob of interned key, if any (edited, deleted). */
void ctrl_shared_unhold(ctrl_shared *s, int32_t key);
/* After sync, before a cycle: held jobs whose queue and class now exist are handed to add, one
 * at a time, as their events would have been (add takes e->tj; it may hold the job again); the
 * others are told why once (status and Event). add's first error is returned. */
int ctrl_shared_admit(ctrl_shared *s, int (*add)(void *arg, ctrl_event *e), void *arg);
/* After a cycle: each Queue's status (pending, admitted, used) when it changed. */
void ctrl_shared_queue_status(ctrl_shared *s);

#endif
