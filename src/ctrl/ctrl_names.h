/*
 * ctrl_names.h - the names `drover run` reads from the API (namespaces, objects, nodes, label
 * and constraint texts), interned once in one table that every thread shares: the informers
 * intern while they decode, the scheduler thread and the binder threads look names up.
 *
 * Owns: the table and its lock. Calls nothing of the controller. Each call takes the lock once;
 * a string is copied out (ctrl_name_str, ctrl_name_dup), never borrowed past the lock, as the
 * table may grow under another thread meanwhile.
 */
#ifndef DROVER_CTRL_NAMES_H
#define DROVER_CTRL_NAMES_H

#include "drover/strtab.h"

#include <pthread.h>
#include <stddef.h>

typedef struct ctrl_names {
    pthread_mutex_t mu; /* guards tab */
    drv_strtab *tab;
    int32_t scheduler; /* the schedulerName served, interned (fixed at init) */
} ctrl_names;

/* 0, or DRV_ENOMEM. fini accepts a names never initialised (zeroed). */
int ctrl_names_init(ctrl_names *n, const char *scheduler);
void ctrl_names_fini(ctrl_names *n);

int32_t ctrl_name_intern(ctrl_names *n, const char *s); /* < 0: out of memory */
int32_t ctrl_name_find(ctrl_names *n, const char *s);   /* 0: not interned */
const char *ctrl_name_str(ctrl_names *n, int32_t id, char *buf, size_t len); /* copies into buf */
char *ctrl_name_dup(ctrl_names *n, int32_t id); /* drv_malloc'd copy; NULL: out of memory */
int32_t ctrl_names_count(ctrl_names *n);        /* ids interned so far are below this */

/* Holds the lock around a call that reads or interns into n->tab itself: a decoder
 * (ctrl_intake.c), the core adding a node named in it (ctrl_mirror.c). */
void ctrl_names_lock(ctrl_names *n);
void ctrl_names_unlock(ctrl_names *n);

#endif
