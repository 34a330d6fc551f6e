/*
 * ctrl_fixture.h - what the end-to-end tests of `drover run` share: a test API server and a
 * client on it (the fixture), the controller on its own thread under the gang-fifo profile
 * (runner), requests, and WAIT_FOR, which polls a condition for up to 10 s.
 */
#ifndef DROVER_TEST_CTRL_FIXTURE_H
#define DROVER_TEST_CTRL_FIXTURE_H

#include "apiserver.h"
#include "drover/kube_controller.h"
#include "json.h"

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
    volatile int stop;
    int rc;
    drv_diag d;
} runner;

/* Starts a controller (profile gang-fifo) on f's server in a thread of its own. */
void start(fixture *f, runner *r);
/* ... under another built-in profile. */
void start_profile(fixture *f, runner *r, const char *profile);
/* Stops it; its run must have returned 0. */
void stop(runner *r);
/* method path with body fmt... (none when it formats to ""); a failure fails the test. */
void req(fixture *f, const char *method, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The object at the formatted path, or NULL (the caller json_decref's it). */
json_t *get(fixture *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A Ready node with cpu CPUs and 64Gi, without the not-ready taint. */
void add_node(fixture *f, const char *name, const char *cpu);

#define WAIT_FOR(cond)                                                                             \
    do {                                                                                           \
        int waited_ = 0;                                                                           \
        while (!(cond) && waited_ < 1000) {                                                        \
            usleep(10000);                                                                         \
            waited_++;                                                                             \
        }                                                                                          \
        if (!(cond))                                                                               \
            fail_msg("timed out waiting for %s", #cond);                                           \
    } while (0)

#endif
