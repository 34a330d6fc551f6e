/*
 * ctrl_lease.h - `drover run`'s leader election through a coordination.k8s.io Lease, on its
 * own thread with its own API client, so that no lease request blocks the scheduler thread (the
 * rules are client-go's, drv_ctrl_opts says which).
 *
 * Owns: its struct and thread. Touches: the event queue (its view, as EV_LEASE events), the
 * counters (its failed requests; leadership).
 */
#ifndef DROVER_CTRL_LEASE_H
#define DROVER_CTRL_LEASE_H

#include "ctrl_events.h"
#include "ctrl_metrics.h"

/* The lease thread owns everything here but stop, mu and cv. */
typedef struct ctrl_lease {
    drv_kube *client;                              /* NULL without election */
    char ns[254], name[254], identity[256];        /* fixed at creation */
    double lease_s, renew_s, retry_s;              /* the options, defaults applied */
    bool holding;                                  /* the thread's view, as last reported */
    double renewed;                                /* last successful renewal (mono) */
    char observed_holder[128], observed_renew[40]; /* the lease record last observed... */
    double observed_t;                             /* ... and when (mono) */
    pthread_mutex_t mu;                            /* guards stop (cv: woken on stop) */
    pthread_cond_t cv;                             /* on the monotonic clock */
    bool stop;
    pthread_t thread;
    bool started;
    ctrl_events *events;     /* fixed at init */
    ctrl_counters *counters; /* ... */
} ctrl_lease;

/* Without o->lease_name there is no election (ctrl_lease_elects false) and no client. */
int ctrl_lease_init(ctrl_lease *l, const drv_ctrl_opts *o, const drv_kube_config *cfg,
                    ctrl_events *events, ctrl_counters *counters, drv_diag *d);
bool ctrl_lease_elects(const ctrl_lease *l);
int ctrl_lease_start(ctrl_lease *l, drv_diag *d); /* nothing without election */
/* An EV_LEASE: true when it changes *leader (this controller leads, or no longer does). */
bool ctrl_lease_apply(ctrl_lease *l, const ctrl_event *e, bool *leader);
void ctrl_lease_stop(ctrl_lease *l);
void ctrl_lease_fini(ctrl_lease *l);

#endif
