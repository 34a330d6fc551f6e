/*
 * emulate.h - what the emulator's units share (src/emulate/emulate*.c only; the public API is
 * include/drover/emulator.h, the user's guide docs/emulate.md):
 *
 *   emulate.c       the pods: the informer's table and the worker thread that moves them on
 *   emulate_node.c  the nodes: registration and heartbeats (the worker thread calls them)
 */
#ifndef DROVER_EMULATE_INTERNAL_H
#define DROVER_EMULATE_INTERNAL_H

#include "drover/clock.h"
#include "drover/hashmap.h"
#include "drover/emulator.h"
#include "drover/kube_informer.h"
#include "drover/strtab.h"

#include <pthread.h>
#include <stdatomic.h>

struct drv_emulator {
    drv_kube_config cfg; /* owned copy */
    drv_emu_node *nodes;
    int32_t n;
    drv_emulator_opts o;
    drv_rng rng;            /* back-off jitter (under mu) */
    char registered_at[32]; /* lastTransitionTime of the Ready condition */
    drv_strtab *names;      /* node names first; then the informer's (its thread only) */
    bool *is_node;          /* by interned id, up to nnames */
    int32_t nnames;
    drv_kube *reader, *writer;
    drv_informer *inf;
    pthread_t tinf, twork;
    bool started;
    atomic_int stop;    /* set by drv_emulator_stop (any thread): the threads return */
    pthread_mutex_t mu; /* the table, the stats, the condition */
    pthread_cond_t cv;
    drv_hashmap *pods; /* key -> tpod: the pods being emulated */
    drv_hashmap *ends; /* key -> emu_ends: how often pods of that name were failed */
    double next_heartbeat;
    drv_emulator_stats st;
};

/* Registers the node (or takes over one of that name), Ready and untainted. */
int emu_register_node(drv_emulator *e, const drv_emu_node *nd, drv_diag *d);
/* One heartbeat: the node's status, merge-patched with client k. */
int emu_patch_node_status(drv_emulator *e, drv_kube *k, const drv_emu_node *nd, drv_diag *d);

#endif
