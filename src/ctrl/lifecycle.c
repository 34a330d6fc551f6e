/*
 * lifecycle.c - a training job's state from its pods, under Kubeflow's runPolicy and
 * restartPolicy rules (lifecycle.h states them).
 *
 * Worked example: a TensorFlow job, chief + 2 workers, restartPolicy ExitCode, backoffLimit 1.
 * Worker 1 is evicted (exit code 137): it is restarted (restarts 1, state Restarting). It is
 * evicted again: 2 restarts exceed the limit of 1, so the job fails with BackoffLimitExceeded
 * and, with the default cleanPodPolicy Running, its running pods are deleted. Had worker 1
 * exited with code 1, the job would have failed at once with PermanentError.
 */
#include "lifecycle.h"
#include "peers.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const cond_names[DRV_NCONDS] = {"Created",    "Queued",  "Running",
                                                   "Restarting", "Scaling", "Suspended",
                                                   "Succeeded",  "Failed",  "CheckpointRequested"};

const char *drv_job_cond_name(int cond)
{
    return cond >= 0 && cond < DRV_NCONDS ? cond_names[cond] : "?";
}

drv_run_policy drv_run_policy_default(void)
{
    return (drv_run_policy){
        .backoff_limit = -1, .ttl_after_finished_s = -1, .clean = DRV_CLEAN_RUNNING};
}

void drv_condition_set(drv_condition conds[DRV_NCONDS], int type, bool status, const char *reason,
                       const char *message, double now)
{
    drv_condition *c = &conds[type];
    if (!c->set || c->status != status)
        c->last_transition = now;
    c->set = true;
    c->status = status;
    snprintf(c->reason, sizeof c->reason, "%s", reason);
    snprintf(c->message, sizeof c->message, "%s", message);
}

int8_t drv_condition_current(const drv_condition conds[DRV_NCONDS])
{
    int8_t best = -1;
    for (int k = 0; k < DRV_NCONDS; k++)
        if (conds[k].set && conds[k].status && k != DRV_COND_CREATED && k != DRV_COND_CHECKPOINT &&
            (best < 0 || conds[k].last_transition >= conds[best].last_transition))
            best = (int8_t)k;
    return best;
}

static void say(drv_lifecycle_out *out, int state, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void say(drv_lifecycle_out *out, int state, const char *reason, const char *fmt, ...)
{
    out->state = (int8_t)state;
    snprintf(out->reason, sizeof out->reason, "%s", reason);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
}

/* Has the job succeeded by its success rule? */
static bool succeeded(const drv_lifecycle_in *in)
{
    int32_t done_workers = 0;
    bool leader_done = false, worker0_done = false;
    for (int32_t i = 0; i < in->npods; i++) {
        const drv_pod_obs *p = &in->pods[i];
        if (p->phase != DRV_OBS_SUCCEEDED)
            continue;
        if (p->role == DRV_ROLE_CHIEF && p->rank == 0)
            leader_done = true;
        if (p->role == DRV_ROLE_WORKER) {
            done_workers++;
            worker0_done |= p->rank == 0;
        }
    }
    if (in->replicas[DRV_ROLE_CHIEF] > 0)
        return leader_done;
    if (in->allreduce || in->policy.all_workers)
        return in->replicas[DRV_ROLE_WORKER] > 0 && done_workers >= in->replicas[DRV_ROLE_WORKER];
    return worker0_done;
}

/* A failed pod's fate under its role's policy: 1 restart, 0 fail the job (reason set). */
static int failed_pod(const drv_lifecycle_in *in, const drv_pod_obs *p, drv_lifecycle_out *out)
{
    const char *role = drv_peers_role_name(p->role, in->allreduce);
    switch (in->restart[p->role]) {
    case DRV_RESTART_ON_FAILURE:
    case DRV_RESTART_ALWAYS:
        return 1;
    case DRV_RESTART_EXIT_CODE:
        if (p->exit_code >= 128)
            return 1;
        say(out, DRV_COND_FAILED, "PermanentError",
            "%s %d exited with code %d, which restartPolicy ExitCode treats as permanent "
            "(1-127; 128-255 are retried)",
            role, p->rank, p->exit_code);
        return 0;
    case DRV_RESTART_NEVER:
    default:
        say(out, DRV_COND_FAILED, "PodFailed",
            "%s %d failed (exit code %d) and its role's "
            "restartPolicy is Never",
            role, p->rank, p->exit_code);
        return 0;
    }
}

/* Finished jobs: only clean-up and TTL act. */
static void finished_step(const drv_lifecycle_in *in, int prev, drv_lifecycle_out *out)
{
    out->state = (int8_t)prev;
    out->delete_all = in->policy.clean == DRV_CLEAN_ALL;
    out->delete_running = in->policy.clean == DRV_CLEAN_RUNNING;
    if (in->completion_time < 0)
        out->finished = true;
    double done = in->completion_time < 0 ? in->now : in->completion_time;
    out->delete_job =
        in->policy.ttl_after_finished_s >= 0 && in->now - done >= in->policy.ttl_after_finished_s;
}

/* Container restarts the kubelet made in place, as Kubeflow counts them toward backoffLimit:
 * those of the pods there now (a pod deleted takes its count with it) of roles whose policy
 * is OnFailure or Always (an ExitCode role's pods are Never to the kubelet). */
static int32_t kubelet_restarts(const drv_lifecycle_in *in)
{
    int32_t n = 0;
    for (int32_t i = 0; i < in->npods; i++) {
        const drv_pod_obs *p = &in->pods[i];
        drv_restart r = in->restart[p->role];
        if (p->phase != DRV_OBS_ABSENT && p->restarts > 0 &&
            (r == DRV_RESTART_ON_FAILURE || r == DRV_RESTART_ALWAYS))
            n += p->restarts;
    }
    return n;
}

/* Failed pods: restart them within the backoff limit, or fail the job; so do the kubelet's
 * restarts in place past it, no pod having failed. Returns true when the job failed. */
static bool handle_failures(const drv_lifecycle_in *in, drv_lifecycle_out *out)
{
    int32_t in_place = kubelet_restarts(in);
    int32_t restarts = in->restarts + in_place;
    if (in->policy.backoff_limit >= 0 && restarts > in->policy.backoff_limit) {
        say(out, DRV_COND_FAILED, "BackoffLimitExceeded",
            "its containers were restarted %d time(s) in place and its pods %d time(s); "
            "backoffLimit is %d",
            in_place, in->restarts, in->policy.backoff_limit);
        return true;
    }
    for (int32_t i = 0; i < in->npods; i++) {
        const drv_pod_obs *p = &in->pods[i];
        if (p->phase != DRV_OBS_FAILED)
            continue;
        if (!failed_pod(in, p, out))
            return true;
        if (in->policy.backoff_limit >= 0 && restarts + 1 > in->policy.backoff_limit) {
            say(out, DRV_COND_FAILED, "BackoffLimitExceeded",
                "%s %d failed again after %d restarts; backoffLimit is %d",
                drv_peers_role_name(p->role, in->allreduce), p->rank, restarts,
                in->policy.backoff_limit);
            return true;
        }
        restarts++;
        if (out->nrestart < DRV_LIFECYCLE_MAX_RESTART)
            out->restart[out->nrestart++] = i;
    }
    if (out->nrestart > 0)
        say(out, DRV_COND_RESTARTING, "PodRestarting",
            "%d pod(s) failed and are restarted (%d "
            "restart(s) so far)",
            out->nrestart, restarts);
    return false;
}

void drv_lifecycle_step(const drv_lifecycle_in *in, int prev, drv_lifecycle_out *out)
{
    memset(out, 0, sizeof *out);
    if (prev == DRV_COND_SUCCEEDED || prev == DRV_COND_FAILED) {
        finished_step(in, prev, out);
        return;
    }
    if (in->policy.suspend) {
        say(out, DRV_COND_SUSPENDED, "JobSuspended", "the job is suspended; its pods are deleted");
        out->delete_running = true;
        return;
    }
    if (succeeded(in)) {
        say(out, DRV_COND_SUCCEEDED, "JobSucceeded", "%s succeeded",
            in->replicas[DRV_ROLE_CHIEF] > 0 ? drv_peers_role_name(DRV_ROLE_CHIEF, in->allreduce)
                                             : "the workers");
        finished_step(in, DRV_COND_SUCCEEDED, out);
        return;
    }
    if (in->start_time >= 0 && in->policy.active_deadline_s > 0 &&
        in->now - in->start_time >= in->policy.active_deadline_s) {
        say(out, DRV_COND_FAILED, "DeadlineExceeded",
            "the job ran for %.0f s; "
            "activeDeadlineSeconds is %.0f",
            in->now - in->start_time, in->policy.active_deadline_s);
        finished_step(in, DRV_COND_FAILED, out);
        return;
    }
    if (handle_failures(in, out)) {
        out->nrestart = 0;
        finished_step(in, DRV_COND_FAILED, out);
        return;
    }
    if (out->nrestart > 0)
        return;
    bool running = false;
    for (int32_t i = 0; i < in->npods; i++)
        running |= in->pods[i].phase == DRV_OBS_RUNNING;
    if (running && in->start_time < 0)
        out->started = true;
    if (in->scaling) /* (its pods are re-created with new peers: few or none run meanwhile) */
        say(out, DRV_COND_SCALING, "JobScaling", "the number of workers is being changed");
    else if (running)
        say(out, DRV_COND_RUNNING, "JobRunning", "the job's pods are running");
    else if (in->placed)
        say(out, DRV_COND_RUNNING, "JobPlaced", "the job's pods are bound and starting");
    else
        say(out, DRV_COND_QUEUED, "JobQueued", "the job waits for room for its whole gang");
}
