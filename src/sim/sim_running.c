/*
 * sim_running.c - jobs that already run when the run starts: a snapshot of a live cluster
 * (`drover snapshot`, docs/what-if.md) replayed from its moment, t0 = 0.
 *
 * At its arrival (at 0) such a job's pods are bound to the nodes its runningOn names, with no
 * pod-start pause (its containers are up), and it is RUNNING since its startedAt (< 0): its
 * minRuntimeSeconds age (drv_job.start, which victims.c reads) and its attained service (held
 * resources times the time run, what LAS reads) count that time. Its result row says it was
 * submitted and started at 0 (t0): a result's times are never negative (-1 is "never").
 *
 * Its remaining work: worker-steps done = doneSteps when the snapshot read the job's progress;
 * else an estimate, stated as such wherever it is shown: the rate its current placement gives
 * (the performance model) times the time it has run, at most ESTIMATE_CAP of its total (a job
 * still running has work left). A job preempted later restarts like any other (settle in
 * sim_apply.c counts the restart, since it has started).
 */
#include "sim_int.h"

#include <stdio.h>
#include <string.h>

/* An estimated job has done at most this fraction of its steps: it was still running. */
#define ESTIMATE_CAP 0.9

/* node_of_name, built at the first running job: the state's node names are all interned. */
static int node_index(drv_sim *s)
{
    if (s->node_of_name)
        return 0;
    int32_t n = drv_strtab_count(s->st.names);
    s->node_of_name = drv_malloc((size_t)(n > 0 ? n : 1) * sizeof *s->node_of_name);
    if (!s->node_of_name)
        return DRV_ENOMEM;
    s->nnode_of_name = n;
    for (int32_t i = 0; i < n; i++)
        s->node_of_name[i] = -1;
    for (int32_t k = 0; k < s->st.nnodes; k++)
        if (s->st.nodes[k].name >= 0 && s->st.nodes[k].name < n)
            s->node_of_name[s->st.nodes[k].name] = k;
    return 0;
}

/* The node named, or -1. */
static int32_t find_node(const drv_sim *s, const char *name)
{
    int32_t id = drv_strtab_find(s->st.names, name);
    return id > 0 && id < s->nnode_of_name ? s->node_of_name[id] : -1;
}

/* An unbound pod slot of job's role r, or -1. */
static int32_t free_slot(const drv_sim *s, int32_t job, int r)
{
    const drv_job *j = &s->st.jobs[job];
    for (int32_t k = 0; k < j->pod_count; k++) {
        const drv_pod *p = &s->st.pods[j->pod_base + k];
        if (p->role == r && p->node < 0)
            return j->pod_base + k;
    }
    return -1;
}

static int bind_pods(drv_sim *s, int32_t job, const drv_runspec *rs, drv_diag *d)
{
    const drv_jobspec *js = sim_spec(s, job);
    const char *file = s->cfg.workload_file ? s->cfg.workload_file : "workload";
    for (int32_t k = 0; k < rs->n; k++) {
        const drv_runpod *rp = &s->wl->runpods[rs->first + k];
        int32_t node = find_node(s, rp->node);
        if (node < 0)
            return drv_fail(d, DRV_EINVAL,
                            "%s:%d: job %s: runningOn.%s: node '%s' is not in the cluster", file,
                            rs->line, js->name, drv_role_name(rp->role), rp->node);
        int32_t pod = free_slot(s, job, rp->role);
        if (pod < 0) /* cannot happen: the reader matched the list to the replicas */
            return drv_fail(d, DRV_EINVAL, "%s:%d: job %s: runningOn.%s: more nodes than pods",
                            file, rs->line, js->name, drv_role_name(rp->role));
        sim_bind(s, pod, node);
    }
    return 0;
}

int sim_start_running(drv_sim *s, int32_t job, drv_diag *d)
{
    const drv_jobspec *js = sim_spec(s, job);
    if (!s->wl || js->running <= 0)
        return 0;
    const drv_runspec *rs = &s->wl->running[js->running - 1];
    int rc = node_index(s);
    if (rc)
        return drv_fail(d, rc, "out of memory");
    if ((rc = bind_pods(s, job, rs, d)) != 0)
        return rc;
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    sim_set_phase(s, job, DRV_JOB_RUNNING);
    double ran = s->now - rs->started_at;
    /* Its age since startedAt, as a victim's (victims.c reads run_start, else start): start
     * holds the negative time; run_start is -1 until it runs again after a preemption. The
     * results count from t0 (submitted and started at 0: a wait of 0), where -1 means "never"
     * for every reader of a result row. */
    j->start = rs->started_at;
    j->run_start = -1;
    s->res[job].start = s->now;
    j->attained = ran * (double)(x->held.gpu > 0 ? x->held.gpu * 1000 : x->held.cpu) / 1000.0;
    if (rs->done_steps >= 0)
        j->steps = rs->done_steps < j->steps_total ? rs->done_steps : j->steps_total;
    x->a_steps = j->steps;
    x->a_att = j->attained;
    x->upd_t = s->now;
    x->rate = 0;
    if ((rc = sim_reschedule(s, job)) != 0 || rs->done_steps >= 0 || x->rate <= 0)
        return rc;
    /* Unknown progress: the estimate, and the completion rescheduled from it. */
    double est = x->rate * ran;
    j->steps = est < ESTIMATE_CAP * j->steps_total ? est : ESTIMATE_CAP * j->steps_total;
    j->loss = drv_loss(sim_family(s, job), j->steps);
    x->a_steps = j->steps;
    x->gen++; /* the completion sim_reschedule pushed is stale */
    double left = j->steps_total - j->steps;
    return sim_push_event(s, s->now + left / x->rate, EV_COMPLETE, job, x->gen);
}
