/*
 * running_read.c - the fields of a workload job that already runs at t0 (docs/formats.md,
 * "Running jobs"), as `drover snapshot` writes them:
 *
 *     startedAt: -5400                          # seconds before t0 it started (<= 0)
 *     runningOn: {ps: [node-0], worker: [node-0, node-1]}   # one node per running pod
 *     doneSteps: 12000                          # worker-steps done; absent: estimated
 *
 * A role's list has exactly as many nodes as the role's replicas (a gang runs whole); the
 * nodes are checked against the cluster when the run starts (sim_running.c), where the
 * cluster is known. startedAt and runningOn go together; such a job is submitted at 0.
 */
#include "running_read.h"

#include <stdio.h>
#include <string.h>

static int push_pod(drv_workload *w, int role, const char *node)
{
    if (drv_grow(&w->runpods, sizeof *w->runpods, &w->cap_runpods, w->nrunpods + 1) != 0)
        return DRV_ENOMEM;
    drv_runpod *p = &w->runpods[w->nrunpods++];
    p->role = role;
    snprintf(p->node, sizeof p->node, "%s", node);
    return 0;
}

/* runningOn's list for role r (node on), its length checked against the role's replicas. */
static int read_role_nodes(const drv_conf_doc *doc, drv_conf *on, int32_t i, int r,
                           const drv_jobspec *j, drv_workload *w, drv_diag *d)
{
    char p[128];
    snprintf(p, sizeof p, "jobs[%d].runningOn.%s", i, drv_role_name(r));
    int rc = drv_conf_expect(doc, on, DRV_CONF_SEQ, p, d);
    if (rc)
        return rc;
    if (on->nitems != j->role[r].replicas)
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: %s: expected one node per replica (%d), found %d nodes", doc->file,
                        on->line, p, j->role[r].replicas, on->nitems);
    for (int32_t k = 0; k < on->nitems; k++) {
        char node[DRV_NODE_NAME_MAX + 1], pk[160];
        snprintf(pk, sizeof pk, "%s[%d]", p, k);
        if ((rc = drv_conf_name(doc, on->items[k], pk, node, sizeof node, d)) != 0)
            return rc;
        if (push_pod(w, r, node) != 0)
            return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    return 0;
}

int drv_read_running(const drv_conf_doc *doc, drv_conf *jn, int32_t i, drv_jobspec *j,
                     drv_workload *w, drv_diag *d)
{
    drv_conf *since = drv_conf_get(jn, "startedAt");
    drv_conf *on = drv_conf_get(jn, "runningOn");
    drv_conf *steps = drv_conf_get(jn, "doneSteps");
    char p[128];
    int rc;
    if (!since && !on && !steps)
        return 0;
    if (!since || !on) {
        const char *missing = since ? "runningOn" : "startedAt";
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: jobs[%d].%s: missing (a running job has startedAt and runningOn)",
                        doc->file, jn->line, i, missing);
    }
    drv_runspec rs = {.done_steps = -1, .first = w->nrunpods, .line = on->line};
    snprintf(p, sizeof p, "jobs[%d].startedAt", i);
    if ((rc = drv_conf_double(doc, since, p, -1e10, 0, &rs.started_at, d)) != 0)
        return rc;
    if (steps) {
        snprintf(p, sizeof p, "jobs[%d].doneSteps", i);
        if ((rc = drv_conf_double(doc, steps, p, 0, 1e15, &rs.done_steps, d)) != 0)
            return rc;
    }
    if (j->submit != 0)
        return drv_fail(d, DRV_EINVAL, "%s:%d: jobs[%d].submit: a running job is submitted at 0",
                        doc->file, jn->line, i);
    snprintf(p, sizeof p, "jobs[%d].runningOn", i);
    if ((rc = drv_conf_expect(doc, on, DRV_CONF_MAP, p, d)) != 0)
        return rc;
    for (int r = 0; r < DRV_NROLES; r++) {
        drv_conf *rn = drv_conf_get(on, drv_role_name(r));
        if (!rn && j->role[r].replicas > 0)
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s.%s: missing (the role has %d replicas)",
                            doc->file, on->line, p, drv_role_name(r), j->role[r].replicas);
        if (rn && (rc = read_role_nodes(doc, rn, i, r, j, w, d)) != 0)
            return rc;
    }
    if ((rc = drv_conf_check_unused(doc, on, p, d)) != 0)
        return rc;
    rs.n = w->nrunpods - rs.first;
    if (drv_grow(&w->running, sizeof *w->running, &w->cap_running, w->nrunning + 1) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    w->running[w->nrunning++] = rs;
    j->running = w->nrunning;
    return 0;
}
