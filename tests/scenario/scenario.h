/*
 * scenario.h - helpers for the policy scenario tests: build a small cluster and workload in
 * code, run a profile line in the simulator (invariants checked after every cycle), and look
 * at the state mid-run. Header-only so each test stays one file; the catalogue its jobs name
 * models from is testutil.h's tu_cat (group fixtures tu_catalogue_setup / _teardown).
 */
#ifndef DROVER_TEST_SCENARIO_H
#define DROVER_TEST_SCENARIO_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drover/policy.h"
#include "drover/sim.h"
#include "testutil.h"

#define GiB (1024LL * 1024 * 1024)

/* A single-pod-role job spec: ps PS pods of 2 CPUs, workers of wcpu CPUs in [min, max]. */
static inline drv_jobspec job(const char *name, const char *model, double submit, int ps,
                              int workers, int min, int max, int64_t wcpu, int64_t wlimit,
                              double max_steps)
{
    drv_jobspec j;
    memset(&j, 0, sizeof j);
    snprintf(j.name, sizeof j.name, "%s", name);
    snprintf(j.user, sizeof j.user, "u");
    snprintf(j.queue, sizeof j.queue, "q");
    j.user_priority = 1;
    j.submit = submit;
    j.model = drv_catalogue_find(&tu_cat, model);
    assert_true(j.model >= 0);
    j.role[DRV_ROLE_PS] = (drv_rolespec){ps, ps, ps, {2000, 2 * GiB, 0}, 2000};
    j.role[DRV_ROLE_WORKER] = (drv_rolespec){workers, min, max, {wcpu, 2 * GiB, 0}, wlimit};
    j.target_loss = 0;
    j.max_steps = max_steps;
    return j;
}

/* A new run of the profile line on n uniform nodes of cpus CPUs (zone a, rack per node/2). */
static inline drv_sim *start(drv_cluster_spec *c, drv_workload *w, int n, int64_t cpus,
                             const char *line)
{
    drv_diag d = {{0}};
    assert_int_equal(drv_cluster_uniform(c, n, (drv_res){cpus, 64 * GiB, 0}), 0);
    for (int i = 0; i < n; i++) {
        snprintf(c->nodes[i].zone, sizeof c->nodes[i].zone, "a");
        snprintf(c->nodes[i].rack, sizeof c->nodes[i].rack, "r%d", i / 2);
    }
    /* A run borrows its profile while it runs (drv_sim_new): the profiles live here, a ring
     * of 8 (no test has more runs alive at once). */
    static drv_profile ring[8];
    static int next;
    drv_profile *p = &ring[next++ % 8];
    int rc = drv_profile_parse("test", line, p, &d);
    if (rc)
        fail_msg("%s", d.msg);
    drv_sim_config cfg = {.seed = 1, .check = true};
    drv_sim *s = NULL;
    rc = drv_sim_new(c, w, &tu_cat, p, &cfg, &s, &d);
    if (rc)
        fail_msg("%s", d.msg);
    return s;
}

static inline void until(drv_sim *s, double t)
{
    drv_diag d = {{0}};
    int rc = drv_sim_run_until(s, t, &d);
    if (rc)
        fail_msg("%s", d.msg);
}

static inline void finish(drv_sim *s)
{
    drv_diag d = {{0}};
    int rc = drv_sim_run(s, &d);
    if (rc)
        fail_msg("%s", d.msg);
}

/* Distinct nodes a job's bound pods are on. */
static inline int nodes_of(const drv_state *st, int32_t job)
{
    const drv_job *j = &st->jobs[job];
    int seen[64] = {0}, n = 0;
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t at = st->pods[j->pod_base + k].node;
        if (at >= 0 && at < 64 && !seen[at]++)
            n++;
    }
    return n;
}

#endif
