/*
 * ctrl_lifecycle.c - a TrainingJob's life in `drover run` as Kubeflow's operators lead it
 * (ctrl_lifecycle.h): its conditions, its failed pods restarted under restartPolicy and
 * backoffLimit, activeDeadlineSeconds, cleanPodPolicy, suspend and resume, replicas edited,
 * invalid specs failed with the field named; its status and Events.
 *
 * The rules are lifecycle.c's (pure); this unit feeds it each job's pods as the mirror has them
 * after a cycle, and acts on its answer: deletes the pods to restart (the next cycle places
 * them again, created bound), ends a finished job, and hands conditions and an Event per
 * transition to the writer. Owns: the lifecycle fields of the job records (scheduler thread),
 * and nothing else.
 *
 * Example: worker 1 of "mnist" (restartPolicy OnFailure, backoffLimit 1) fails: it is deleted
 * and created again (conditions: Restarting True, Running False; Event Restarting). It fails
 * again: the job fails with BackoffLimitExceeded, its running pods are deleted (cleanPodPolicy
 * Running), and status.completionTime is set.
 *
 * A restarted controller carries on what the status says (conditions and their transition
 * times, startTime, restarts): a job it adopts gets no second Created, Scheduled or Running.
 */
#include "ctrl_lifecycle.h"

#include "ctrl_explain.h"

#include "drover/clock.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- what is written about a job ------------------------------------------------------------ */

void ctrl_lifecycle_event(ctrl_lifecycle *lc, int32_t j, const char *type, const char *reason,
                          const char *message)
{
    const job_record *jr = &lc->mirror->jobs[j];
    ctrl_ref about = ctrl_ref_trainingjob(jr->ns_text, jr->name_text, jr->uid);
    ctrl_writer_event(lc->writer, &about, type, reason, message);
}

/* The roles the job has, and its pods per role that have succeeded and failed. */
static void job_done_pods(const ctrl_mirror *m, int32_t job, status_request *r)
{
    const drv_job *jb = &m->st.jobs[job];
    for (int32_t k = 0; k < jb->pod_count; k++) {
        const pod_record *pr = &m->pods[jb->pod_base + k];
        int role = m->st.pods[jb->pod_base + k].role;
        r->roles |= (uint8_t)(1u << role);
        if (pr->presence == POD_PRESENT && pr->phase == DRV_KPOD_SUCCEEDED)
            r->succeeded[role]++;
        else if (pr->presence == POD_PRESENT && pr->phase == DRV_KPOD_FAILED)
            r->failed[role]++;
    }
}

void ctrl_lifecycle_status(ctrl_lifecycle *lc, int32_t j, const char *message)
{
    job_record *jr = &lc->mirror->jobs[j];
    int32_t active[DRV_NROLES];
    bool running;
    ctrl_mirror_job_active(lc->mirror, j, active, &running);
    if (jr->written == jr->status && !memcmp(active, jr->wrote_active, sizeof active) &&
        jr->wrote_changes == jr->cond_changes)
        return;
    if (jr->written >= ST_SUCCEEDED && jr->status < ST_SUCCEEDED) {
        /* (a finished job's record never goes back: a TrainingJob created again under its name
         * gets a record of its own) */
        drv_log(DRV_LOG_ERROR, "a finished job's status asked %s: not written",
                ctrl_status_name[jr->status]);
        return;
    }
    status_request r;
    ctrl_status_trainingjob(&r, jr->ns_text, jr->name_text, jr->rv, ctrl_status_name[jr->status],
                            message);
    memcpy(r.active, active, sizeof active);
    job_done_pods(lc->mirror, j, &r);
    r.master = jr->allreduce;
    memcpy(r.conds, jr->conds, sizeof r.conds);
    r.start_time = jr->start_time;
    r.completion_time = jr->completion_time;
    r.restarts = jr->restarts;
    if (!ctrl_writer_status(lc->writer, jr->key, &r))
        return;
    jr->written = jr->status;
    jr->wrote_changes = jr->cond_changes;
    memcpy(jr->wrote_active, active, sizeof active);
}

/* ---- a new job ------------------------------------------------------------------------------ */

void ctrl_lifecycle_init(ctrl_lifecycle *lc, int32_t j, const tj_record *t)
{
    job_record *jr = &lc->mirror->jobs[j];
    const drv_ktrainingjob *k = &t->tj;
    jr->allreduce = k->allreduce;
    for (int r = 0; r < DRV_NROLES; r++)
        jr->restart[r] = k->restart[r];
    jr->policy = (drv_run_policy){.backoff_limit = k->backoff_limit,
                                  .active_deadline_s = (double)k->active_deadline_s,
                                  .ttl_after_finished_s = (double)k->ttl_s,
                                  .clean = (drv_clean_pods)k->clean_pods,
                                  .suspend = k->suspend,
                                  .all_workers = k->all_workers};
    memcpy(jr->conds, t->conds, sizeof jr->conds);
    jr->cond = drv_condition_current(jr->conds);
    jr->start_time = t->start_time;
    jr->completion_time = t->completion_time;
    jr->restarts = t->restarts;
    snprintf(jr->rv, sizeof jr->rv, "%s", t->tj.rv);
    jr->rendered[0] = -1; /* set by the first reconcile: its pods are created (or were) as
                             the first cycle's targets say */
    /* Adopted placed or running: the Scheduled Event was written by whoever placed it. */
    jr->adopted = jr->cond == DRV_COND_RUNNING || jr->cond == DRV_COND_RESTARTING ||
                  jr->cond == DRV_COND_SCALING;
    if (!jr->conds[DRV_COND_CREATED].set) {
        const char *msg = "the TrainingJob was accepted by drover";
        drv_condition_set(jr->conds, DRV_COND_CREATED, true, "JobCreated", msg, drv_clock_wall());
        jr->cond_changes++;
        ctrl_lifecycle_event(lc, j, "Normal", "JobCreated", msg);
    }
}

/* Job j's TrainingJob status was written finished by someone else (a predecessor killed after
 * writing it, before this controller saw its pods say so): its word is taken as it is, phase,
 * conditions and completion time, so that finish() writes the same status back rather than a
 * Failed of its own (a job that succeeded was once written Failed this way: test_chaos). */
void ctrl_lifecycle_finished_by_status(ctrl_lifecycle *lc, int32_t j, const tj_record *t)
{
    job_record *jr = &lc->mirror->jobs[j];
    jr->status = t->succeeded ? ST_SUCCEEDED : ST_FAILED;
    memcpy(jr->conds, t->conds, sizeof jr->conds);
    jr->cond = drv_condition_current(jr->conds);
    if (t->start_time >= 0)
        jr->start_time = t->start_time;
    if (t->completion_time >= 0)
        jr->completion_time = t->completion_time;
}

/* ---- conditions and Events ------------------------------------------------------------------ */

/* Makes cond True (the one True before False) and says so in an Event, when it changed. */
static void transition(ctrl_lifecycle *lc, int32_t j, int cond, const char *reason,
                       const char *message)
{
    job_record *jr = &lc->mirror->jobs[j];
    double now = drv_clock_wall();
    bool same = jr->cond == cond && !strcmp(jr->conds[cond].reason, reason);
    if (jr->cond >= 0 && jr->cond != cond) {
        drv_condition was = jr->conds[jr->cond]; /* (set copies from it) */
        drv_condition_set(jr->conds, jr->cond, false, was.reason, was.message, now);
    }
    drv_condition_set(jr->conds, cond, true, reason, message, now);
    if (same)
        return;
    jr->cond = (int8_t)cond;
    jr->cond_changes++;
    bool bad = cond == DRV_COND_FAILED || cond == DRV_COND_RESTARTING;
    ctrl_lifecycle_event(lc, j, bad ? "Warning" : "Normal", reason, message);
}

/* ---- after a cycle -------------------------------------------------------------------------- */

static int8_t obs_phase(const pod_record *p)
{
    if (p->presence != POD_PRESENT)
        return DRV_OBS_ABSENT;
    switch (p->phase) {
    case DRV_KPOD_RUNNING:
        return DRV_OBS_RUNNING;
    case DRV_KPOD_SUCCEEDED:
        return DRV_OBS_SUCCEEDED;
    case DRV_KPOD_FAILED:
        return DRV_OBS_FAILED;
    default:
        return DRV_OBS_PENDING;
    }
}

/* Slot s leaves the state and wants no node; its pod is deleted when del (the room stays held
 * until it is gone: ctrl_binder_delete). */
static void take_off(ctrl_lifecycle *lc, int32_t s, bool del)
{
    lc->mirror->pods[s].want = -1;
    ctrl_mirror_place(lc->mirror, s, -1);
    if (del)
        ctrl_binder_delete(lc->binder, s);
}

/* Whether slot s's pod exists, or is being sent: what suspending or shrinking deletes. */
static bool present_or_sent(const pod_record *p)
{
    return p->presence == POD_PRESENT || p->inflight;
}

/* Ends job j (Succeeded or Failed): its pods leave the state, cleanPodPolicy says which are
 * deleted, and its final status is asked for. */
static void finish(ctrl_lifecycle *lc, int32_t j, const drv_lifecycle_out *out)
{
    ctrl_mirror *m = lc->mirror;
    job_record *jr = &m->jobs[j];
    const drv_job *jb = &m->st.jobs[j];
    jr->status = out->state == DRV_COND_SUCCEEDED ? ST_SUCCEEDED : ST_FAILED;
    for (int32_t k = 0; k < jb->pod_count; k++) {
        int32_t s = jb->pod_base + k;
        const pod_record *p = &m->pods[s];
        /* (A deleted TrainingJob's pods also go through the garbage collector, as their owner
         * is gone: deleting them here too only makes it sooner.) */
        bool live = p->presence == POD_PRESENT && !ctrl_pod_terminal(p->phase);
        take_off(lc, s,
                 (out->delete_all && p->presence == POD_PRESENT) || (out->delete_running && live) ||
                     (jr->gone && live) || p->inflight);
    }
    if (jr->completion_time < 0)
        jr->completion_time = drv_clock_wall();
    if (!jr->gone) {
        /* (a status finished by someone else says so already: ctrl_lifecycle_finished_by_status
         * took its conditions, which are written back as they are) */
        if (jr->cond != out->state)
            transition(lc, j, out->state, out->reason, out->message);
        ctrl_lifecycle_status(lc, j, out->state == DRV_COND_SUCCEEDED ? "finished" : "failed");
    }
    ctrl_mirror_end_job(m, j, true); /* (its pods are unbound already) */
}

/*
 * The peers' environment names every pod of the job, so when its counts change (an edit, or a
 * policy's scaling) the pods it has are re-created with the new one: each is deleted and
 * created again on the same node (its room is held meanwhile: the state keeps it bound and
 * the pod record wants that node), as a migration to where it is. A training script sees its
 * process stopped and started again with new peers (docs/running.md: checkpoint and resume).
 */
static void rerender(ctrl_lifecycle *lc, int32_t j)
{
    ctrl_mirror *m = lc->mirror;
    job_record *jr = &m->jobs[j];
    const drv_job *jb = &m->st.jobs[j];
    if (jr->rendered[0] < 0)
        memcpy(jr->rendered, jb->target, sizeof jr->rendered);
    if (memcmp(jr->rendered, jb->target, sizeof jr->rendered) != 0) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "its pods are re-created: their peers changed (workers %d -> %d); scripts "
                 "resume from their checkpoint",
                 jr->rendered[DRV_ROLE_WORKER], jb->target[DRV_ROLE_WORKER]);
        ctrl_lifecycle_event(lc, j, "Normal", "PeersChanged", msg);
        memcpy(jr->rendered, jb->target, sizeof jr->rendered);
        jr->env_gen++; /* (pods created from now on get the new environment) */
    }
    /* A pod rendered for older counts is re-created once no request about it is out. One
     * being created or bound now is seen to on the cycle its answer asks for: the job stays
     * peers_pending for it (ctrl_binder.c), which nothing else would wake when its answer is
     * the last thing to come (its watch echo asks for no cycle). */
    bool busy = false;
    for (int32_t k = 0; k < jb->pod_count; k++) {
        int32_t s = jb->pod_base + k;
        const drv_pod *sp = &m->st.pods[s];
        pod_record *p = &m->pods[s];
        if (sp->index >= jb->target[sp->role])
            continue;
        bool stale = p->env_gen != jr->env_gen;
        if (p->presence == POD_PRESENT && !ctrl_pod_terminal(p->phase) && !p->inflight &&
            p->want < 0 && stale) {
            p->want = sp->node; /* bound: again where it is; unbound: placed by a cycle */
            ctrl_checkpoint_delete(lc->checkpoint, s, CKPT_SCALING);
            jr->peers_pending = true;
        }
        if (stale && p->inflight)
            jr->peers_pending = true;
        busy |= p->want >= 0 || (stale && (p->presence != POD_ABSENT || p->inflight));
    }
    /* Scaling while pods re-created for new peers are not all back; a failed pod re-created
     * alone (restartPolicy) is a restart, which the lifecycle reports as such. */
    if (!busy)
        jr->peers_pending = false;
    jr->scaling = jr->peers_pending && busy;
}

/* The job's state by lifecycle.c's rules from its pods as last seen, into *out. True when it
 * is over already (deleted, or its status finished by someone else): out says so. With
 * rerender, pods whose peer environment is stale are re-rendered first (after a cycle only). */
static bool decide(ctrl_lifecycle *lc, int32_t j, bool rerender_env, drv_lifecycle_out *out)
{
    ctrl_mirror *m = lc->mirror;
    job_record *jr = &m->jobs[j];
    const drv_job *jb = &m->st.jobs[j];
    if (jr->gone || jr->status >= ST_SUCCEEDED) {
        /* Deleted, or its status finished by someone else: over, whatever its pods say. */
        memset(out, 0, sizeof *out);
        out->state = jr->status == ST_SUCCEEDED ? DRV_COND_SUCCEEDED : DRV_COND_FAILED;
        out->delete_running = true;
        snprintf(out->reason, sizeof out->reason, "%s", jr->gone ? "JobDeleted" : "StatusFinished");
        snprintf(out->message, sizeof out->message, "%s",
                 jr->gone ? "the TrainingJob was deleted" : "its status was set finished");
        return true;
    }
    /* (its pods as lifecycle.c reads them: on the stack for up to 256, the usual case) */
    drv_pod_obs stack[256], *obs = stack;
    int32_t cap = 256, nobs = 0;
    if (jb->pod_count > cap && (obs = drv_malloc(sizeof *obs * (size_t)jb->pod_count)) != NULL)
        cap = jb->pod_count;
    else if (!obs)
        obs = stack; /* out of memory: the first 256 pods only, this cycle */
    for (int32_t k = 0; k < jb->pod_count && nobs < cap; k++) {
        const drv_pod *sp = &m->st.pods[jb->pod_base + k];
        obs[nobs++] = (drv_pod_obs){.role = sp->role,
                                    .phase = obs_phase(&m->pods[jb->pod_base + k]),
                                    .rank = sp->index,
                                    .exit_code = m->pods[jb->pod_base + k].exit_code,
                                    .restarts = m->pods[jb->pod_base + k].restarts};
    }
    drv_lifecycle_in in = {.policy = jr->policy,
                           .allreduce = jr->allreduce,
                           .pods = obs,
                           .npods = nobs,
                           .restarts = jr->restarts,
                           .placed = drv_job_complete(jb) && drv_job_wanted(jb) > 0,
                           .now = drv_clock_wall(),
                           .start_time = jr->start_time,
                           .completion_time = -1};
    in.policy.suspend = false; /* (a suspended job leaves the state: ctrl_lifecycle_suspend) */
    for (int r = 0; r < DRV_NROLES; r++) {
        in.restart[r] = (drv_restart)jr->restart[r];
        in.replicas[r] = jb->target[r];
    }
    if (rerender_env)
        rerender(lc, j);
    in.scaling = jr->scaling;
    drv_lifecycle_step(&in, jr->cond < 0 ? DRV_COND_CREATED : jr->cond, out);
    if (obs != stack)
        drv_free(obs);
    if (out->started && rerender_env)
        jr->start_time = in.now;
    return false;
}

bool ctrl_lifecycle_end_finished(ctrl_lifecycle *lc, int32_t j)
{
    if (lc->mirror->jobs[j].members)
        return false; /* a pod group's end is its pods' (ctrl_podgroup.c) */
    drv_lifecycle_out out;
    decide(lc, j, false, &out);
    if (out.state != DRV_COND_SUCCEEDED && out.state != DRV_COND_FAILED)
        return false;
    finish(lc, j, &out);
    return true;
}

bool ctrl_lifecycle_reconcile(ctrl_lifecycle *lc, int32_t j)
{
    ctrl_mirror *m = lc->mirror;
    job_record *jr = &m->jobs[j];
    const drv_job *jb = &m->st.jobs[j];
    drv_lifecycle_out out;
    if (decide(lc, j, true, &out) || out.state == DRV_COND_SUCCEEDED ||
        out.state == DRV_COND_FAILED) {
        finish(lc, j, &out);
        return true;
    }
    for (int32_t i = 0; i < out.nrestart; i++) {
        take_off(lc, jb->pod_base + out.restart[i], true);
        jr->restarts++;
        jr->cond_changes++; /* (status.restarts is to be written) */
        m->dirty = true;
    }
    char why[300];
    if (out.state == DRV_COND_QUEUED && ctrl_explain_never_fits(m, j, why, sizeof why))
        transition(lc, j, DRV_COND_QUEUED, "NeverFits", why);
    else if (out.state == DRV_COND_QUEUED && ctrl_explain_nodes(&m->st, j, why, sizeof why))
        transition(lc, j, DRV_COND_QUEUED, "NoNodeMatches", why); /* (and its Event) */
    else
        transition(lc, j, out.state, out.reason, out.message);
    return false;
}

/* ---- suspend, edits, invalid jobs (scheduler thread, from the mirror) ----------------------- */

void ctrl_lifecycle_suspend(ctrl_lifecycle *lc, int32_t j)
{
    ctrl_mirror *m = lc->mirror;
    job_record *jr = &m->jobs[j];
    const drv_job *jb = &m->st.jobs[j];
    if (jr->suspended || jr->status >= ST_SUCCEEDED)
        return; /* (a finished job stays finished, as Kubeflow's operators leave it) */
    jr->suspended = true;
    /* The whole transition in the state at once: every pod leaves it and the job is done there
     * (resumed, it comes back as a new job: ctrl_trainingjob.c). Then the pods that exist or are
     * being sent are deleted, their room held until they are gone (ctrl_binder_delete). */
    for (int32_t k = 0; k < jb->pod_count; k++)
        m->pods[jb->pod_base + k].want = -1;
    ctrl_mirror_end_job(m, j, false);
    for (int32_t k = 0; k < jb->pod_count; k++)
        if (present_or_sent(&m->pods[jb->pod_base + k]))
            ctrl_binder_delete(lc->binder, jb->pod_base + k);
    jr->status = ST_PENDING;
    transition(lc, j, DRV_COND_SUSPENDED, "JobSuspended",
               "spec.runPolicy.suspend is true: the job's pods are deleted until it is resumed");
    ctrl_lifecycle_status(lc, j, "suspended");
    m->dirty = true;
}

void ctrl_lifecycle_resumed(ctrl_lifecycle *lc, int32_t j, const job_record *old)
{
    job_record *jr = &lc->mirror->jobs[j];
    memcpy(jr->conds, old->conds, sizeof jr->conds);
    jr->cond = old->cond;
    jr->restarts = old->restarts;
    jr->start_time = old->start_time;
    jr->service_asked = old->service_asked; /* the Service outlives a suspension */
    transition(lc, j, DRV_COND_QUEUED, "JobResumed",
               "spec.runPolicy.suspend is false: the job is queued again");
}

/* Whether sp is a worker that a count of want workers leaves out. */
static bool above(const drv_pod *sp, int32_t want)
{
    return sp->role == DRV_ROLE_WORKER && sp->index >= want;
}

int ctrl_lifecycle_edit(ctrl_lifecycle *lc, int32_t j, const tj_record *t)
{
    ctrl_mirror *m = lc->mirror;
    job_record *jr = &m->jobs[j];
    const drv_job *jb = &m->st.jobs[j];
    jr->policy.backoff_limit = t->tj.backoff_limit;
    jr->policy.active_deadline_s = (double)t->tj.active_deadline_s;
    jr->policy.ttl_after_finished_s = (double)t->tj.ttl_s;
    jr->policy.clean = (drv_clean_pods)t->tj.clean_pods;
    for (int r = 0; r < DRV_NROLES; r++)
        jr->restart[r] = t->tj.restart[r];
    if (jb->phase == DRV_JOB_DONE)
        return 0;
    int32_t want = t->tj.role[DRV_ROLE_WORKER].replicas;
    const drv_rolespec *w = &jb->role[DRV_ROLE_WORKER];
    if (want == jr->spec_workers)
        return 0; /* (a status write or another field: not a replicas edit) */
    jr->spec_workers = want;
    char msg[200];
    if (want < w->min || want > w->max) {
        snprintf(msg, sizeof msg,
                 "spec.replicaSpecs.Worker.replicas %d is outside the bounds the job was "
                 "created with [%d, %d]: not followed (delete and create the job to change them)",
                 want, w->min, w->max);
        ctrl_lifecycle_event(lc, j, "Warning", "ReplicasNotFollowed", msg);
        return 0;
    }
    if (want == jb->target[DRV_ROLE_WORKER])
        return 0;
    snprintf(msg, sizeof msg, "workers %d -> %d (spec.replicaSpecs.Worker.replicas edited)",
             jb->target[DRV_ROLE_WORKER], want);
    /* The state's part in one call: the count, and the workers above it off their nodes. Fewer:
     * their pods go (their room is held until they are gone), after the job's checkpoint as a
     * policy's scaling (ctrl_checkpoint.c); more: the next cycles place the new ones. */
    for (int32_t k = 0; k < jb->pod_count; k++)
        if (above(&m->st.pods[jb->pod_base + k], want))
            m->pods[jb->pod_base + k].want = -1;
    drv_state_resize_workers(&m->st, j, want);
    for (int32_t k = 0; k < jb->pod_count; k++) {
        int32_t s = jb->pod_base + k;
        if (above(&m->st.pods[s], want) && present_or_sent(&m->pods[s]) &&
            ctrl_checkpoint_delete(lc->checkpoint, s, CKPT_SCALING) == DRV_ENOMEM)
            return DRV_ENOMEM;
    }
    ctrl_lifecycle_event(lc, j, "Normal", "ReplicasEdited", msg);
    m->dirty = true;
    return 0;
}

void ctrl_lifecycle_invalid(ctrl_lifecycle *lc, const ctrl_event *e)
{
    const tj_record *t = e->tj;
    if (t->conds[DRV_COND_FAILED].set && t->conds[DRV_COND_FAILED].status &&
        !strcmp(t->conds[DRV_COND_FAILED].reason, "Invalid"))
        return; /* said already */
    status_request r;
    ctrl_status_trainingjob(&r, t->ns, t->name, t->tj.rv, "Failed", "invalid spec");
    memcpy(r.conds, t->conds, sizeof r.conds);
    double now = drv_clock_wall();
    drv_condition_set(r.conds, DRV_COND_CREATED, true, "JobCreated",
                      "the TrainingJob was accepted by drover", now);
    drv_condition_set(r.conds, DRV_COND_FAILED, true, "Invalid", t->invalid, now);
    r.start_time = -1;
    r.completion_time = now;
    drv_log(DRV_LOG_WARN, "%s", t->invalid);
    ctrl_writer_status(lc->writer, e->key, &r);
    ctrl_ref about = ctrl_ref_trainingjob(t->ns, t->name, t->uid);
    ctrl_writer_event(lc->writer, &about, "Warning", "Invalid", t->invalid);
}

/* Finished jobs past ttlSecondsAfterFinished are deleted; a job past its activeDeadlineSeconds
 * makes the mirror dirty (the cycle's reconcile fails it: decide()). Returns the seconds until
 * the earliest deadline still to come, INFINITY when none: the loop sleeps until then rather
 * than cycling to look (ctrl_loop.c). The deadlines are the API's times (startTime,
 * completionTime: wall clock), so they are compared with the wall clock here, and only their
 * distance leaves, for the loop's monotonic clock. A deadline already passed is never returned
 * (the loop would wake at once, over and over): the cycle it asks for ends its job, and the
 * next call after that cycle finds the next one. O(jobs of the state) per call: finished jobs stay
 * in the state's arrays (a few hundred bytes each), so this visits every job the controller has
 * seen since it started; it runs after each cycle and when a deadline comes. */
double ctrl_lifecycle_expire(ctrl_lifecycle *lc)
{
    ctrl_mirror *m = lc->mirror;
    double now = drv_clock_wall(), next = INFINITY;
    for (int32_t j = 0; j < m->st.njobs; j++) {
        job_record *jr = &m->jobs[j];
        if (jr->status < ST_SUCCEEDED && jr->policy.active_deadline_s > 0 && !jr->gone &&
            !jr->suspended && jr->start_time >= 0 && m->st.jobs[j].phase != DRV_JOB_DONE) {
            double at = jr->start_time + jr->policy.active_deadline_s;
            if (at > now && at < next)
                next = at;
            else if (at <= now)
                m->dirty = true;
        }
        if (jr->status < ST_SUCCEEDED || jr->gone || jr->ttl_done ||
            jr->policy.ttl_after_finished_s < 0 || jr->completion_time < 0)
            continue;
        double at = jr->completion_time + jr->policy.ttl_after_finished_s;
        if (now < at) {
            next = at < next ? at : next;
            continue;
        }
        char path[400];
        snprintf(path, sizeof path, "/apis/drover.dev/v1alpha1/namespaces/%s/trainingjobs/%s",
                 jr->ns_text, jr->name_text);
        if (ctrl_writer_delete(lc->writer, path) == 0)
            jr->ttl_done = true;
        ctrl_lifecycle_event(lc, j, "Normal", "JobExpired",
                             "ttlSecondsAfterFinished has passed since it finished: deleted");
    }
    return next - now;
}
