/*
 * ctrl_progress.h - `drover run`'s progress collector: its thread scrapes the Prometheus text
 * each running job's chief serves (spec.progress) every period and hands the step and loss to
 * the scheduler thread as EV_PROGRESS events.
 *
 * Owns: its targets, its thread. Touches: the event queue; reads the mirror (scheduler thread)
 * when it publishes the targets.
 */
#ifndef DROVER_CTRL_PROGRESS_H
#define DROVER_CTRL_PROGRESS_H

#include "ctrl_mirror.h"
#include "kube/kbuf.h"

#include <curl/curl.h>

#include <stdatomic.h>

/* Where a running job's chief serves progress. */
typedef struct scrape_target {
    int32_t key; /* the job's interned key */
    char url[400], step[96], loss[96];
} scrape_target;

typedef struct ctrl_progress {
    pthread_mutex_t mu; /* guards targets, n, cap */
    scrape_target *targets;
    int32_t n, cap;
    scrape_target *next; /* the next list, built by the scheduler thread (its own) */
    int32_t cap_next;
    double period_s; /* seconds between scrapes: the profile's period, within [1, 60] */
    atomic_int stop; /* set by the scheduler thread (ctrl_progress_stop): the thread returns */
    pthread_t thread;
    bool started;
    ctrl_events *events; /* where samples go (fixed at init) */
} ctrl_progress;

void ctrl_progress_init(ctrl_progress *pg, double period, ctrl_events *events);
/* Which running jobs of m to scrape, and where: their chief's address (scheduler thread, after
 * each cycle). Built aside, then swapped in: the collector waits on the lock for a swap only. */
void ctrl_progress_publish(ctrl_progress *pg, const ctrl_mirror *m);
int ctrl_progress_start(ctrl_progress *pg, drv_diag *d);
/* Tells the thread to return (it does within a scrape); stop tells and joins it. */
void ctrl_progress_tell_stop(ctrl_progress *pg);
void ctrl_progress_stop(ctrl_progress *pg);
void ctrl_progress_fini(ctrl_progress *pg);

/* One scrape of t, as the thread does it: GETs t->url with h (reset first; 2 s timeout) into b
 * and reads the first sample of the step and the loss metric (labels allowed; loss NAN when
 * absent). NULL when a step was read, else why not: libcurl's error, "not 200 OK" or "no step
 * metric" (step NAN then). */
const char *ctrl_progress_fetch(CURL *h, drv_kbuf *b, const scrape_target *t, double *step,
                                double *loss);

#endif
