/*
 * sim_apply.c - a cycle in the simulator: when one runs (at the next multiple of the period
 * after a change, as sim_request_cycle in sim_events.c asks; every period for profiles with
 * time-driven points, unless quiet), the snapshot it is given, and what its decisions do -
 * binds, evictions, scales, resizes, batch changes, migrations - after which each touched job
 * settles into the phase its pods allow and rates are recomputed where CPU shares or
 * placements changed.
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int touch(drv_sim *s, int32_t job)
{
    if (s->js[job].touched == s->cycle_no)
        return 0;
    s->js[job].touched = s->cycle_no;
    s->js[job].restart = false;
    if (drv_grow(&s->touched, sizeof *s->touched, &s->cap_touched, s->ntouched + 1) != 0)
        return DRV_ENOMEM;
    s->touched[s->ntouched++] = job;
    return 0;
}

/* After a cycle's decisions: move each touched job to the phase its pods now allow. */
static int settle(drv_sim *s, int32_t job)
{
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    if (j->phase == DRV_JOB_DONE || j->phase == DRV_JOB_FUTURE)
        return 0;
    if (!drv_job_complete(j) || drv_job_wanted(j) == 0) {
        if (j->phase != DRV_JOB_PENDING) {
            sim_set_phase(s, job, DRV_JOB_PENDING);
            x->rate = 0;
        }
        return 0;
    }
    if (j->phase == DRV_JOB_PENDING || x->restart) {
        bool resumed = j->start >= 0 || j->steps > 0;
        if (resumed) {
            j->restarts++;
            s->restarts++;
        }
        sim_set_phase(s, job, resumed ? DRV_JOB_RESTARTING : DRV_JOB_STARTING);
        x->rate = 0;
        double pause = resumed ? s->cluster->timing.restart : s->cluster->timing.pod_start;
        return sim_push_event(s, s->now + pause, EV_STARTED, job, x->gen);
    }
    return 0;
}

static bool overcommitted(const drv_sim *s, int32_t node)
{
    return node >= 0 && s->st.nodes[node].cpu_limit > s->st.nodes[node].alloc.cpu;
}

/* Does the cycle's decision list change the CPU share of pods it does not name? Only when a
 * node it touches has (or had) more CPU limits than CPU, or limits are resized. */
static bool shares_change(const drv_sim *s)
{
    for (int32_t i = 0; i < s->dec.n; i++) {
        const drv_decision *x = &s->dec.v[i];
        if (x->kind == DRV_RESIZE || overcommitted(s, x->node) || overcommitted(s, x->from) ||
            (x->pod >= 0 && overcommitted(s, s->st.pods[x->pod].node)))
            return true;
    }
    return false;
}

/*
 * DRV_BATCH: a calibrated job trains at a new total batch from its restart on, or at once
 * when the decision says DRV_REASON_INPLACE (a framework that adapts its batch while it runs,
 * as AdaptDL does for Pollux). Its progress (calib.h) is kept: the steps done and the steps to
 * finish are those of the new batch at the same progress. A batch outside the job's range is
 * an error (the policy broke the contract).
 */
static int set_batch(drv_sim *s, int32_t job, double batch, bool restart)
{
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    drv_calib_job *m = &s->model.v[job];
    if (!sim_calibrated(s, job) || !(batch >= m->batch_min && batch <= m->batch_max))
        return DRV_EINVAL;
    int32_t app = m->app - 1;
    double p = drv_calib_progress(s->cfg.calib, app, m->batch, j->steps);
    m->batch = (int32_t)batch;
    j->steps_total = drv_calib_steps(s->cfg.calib, app, batch);
    j->steps = fmin(drv_calib_steps_to(s->cfg.calib, app, batch, p), j->steps_total);
    x->a_steps = j->steps; /* advanced to now before the decisions were applied */
    x->calib_t = 0;        /* the step time is the new batch's */
    x->restart = x->restart || restart;
    return 0;
}

/* A decision the simulator refuses stops the run, named: BATCH for a job without a calibrated
 * model or outside its batch range (the policy broke the contract, docs/cycle.md). */
static int refused(const drv_sim *s, const drv_decision *x, drv_diag *d)
{
    char what[256];
    drv_decision_format(&s->st, x, what, sizeof what);
    if (!sim_calibrated(s, x->job))
        return drv_fail(d, DRV_EINVAL,
                        "applying %s at t=%.3f (policy %s): the job has no "
                        "calibrated model",
                        what, s->now, s->policy);
    const drv_calib_job *m = &s->model.v[x->job];
    return drv_fail(d, DRV_EINVAL,
                    "applying %s at t=%.3f (policy %s): outside the job's batch range [%d, %d]",
                    what, s->now, s->policy, m->batch_min, m->batch_max);
}

/*
 * A running job preempted, scaled or migrated restarts from its last checkpoint: with a
 * checkpoint interval C (drv_jobspec.checkpoint_s; it also checkpoints when it starts), it
 * loses the (now - run_start) mod C seconds since, at the rate it ran: its steps go back by
 * rate * lost, and the lost seconds times what it held are charged (GPU-s, CPU core-s). Once
 * per job and cycle, before its pods leave (its held resources are still its own); a job not
 * running (starting, restarting) has nothing since its last checkpoint. Its anchor is at now
 * (apply advanced it). Example: C = 600, running since t=1000, preempted at t=2500: 300 s are
 * lost, 4 GPUs held: 1200 GPU-s.
 */
static void lose_work(drv_sim *s, int32_t job)
{
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    double c = sim_spec(s, job)->checkpoint_s;
    if (c <= 0 || x->lost == s->cycle_no || j->phase != DRV_JOB_RUNNING || j->run_start < 0)
        return;
    x->lost = s->cycle_no;
    double lost = fmod(s->now - j->run_start, c);
    j->steps = fmax(j->steps - x->rate * lost, 0);
    j->loss = drv_loss(sim_family(s, job), j->steps);
    x->a_steps = j->steps;
    s->lost_gpu_s += lost * (double)x->held.gpu;
    s->lost_cpu_s += lost * (double)x->held.cpu / 1000;
}

/* Applies the cycle's decisions in order; d says what a refused one was. */
static int apply(drv_sim *s, drv_diag *d)
{
    int rc = 0;
    s->ntouched = 0;
    /* Bring the jobs the decisions name up to now first: their pods and held resources change
     * below. Any other job whose rate changes is brought up to date by reschedule. */
    bool all = shares_change(s);
    for (int32_t i = 0; i < s->dec.n; i++)
        sim_advance(s, s->dec.v[i].job);
    for (int32_t i = 0; i < s->dec.n && !rc; i++) {
        const drv_decision *x = &s->dec.v[i];
        rc = touch(s, x->job);
        if (rc)
            break;
        switch (x->kind) {
        case DRV_BIND: /* into room still held by terminating pods, it waits (sim_grace.c) */
            rc = sim_ghost_bind(s, x->pod, x->node);
            break;
        case DRV_EVICT:
            lose_work(s, x->job);
            sim_unbind(s, x->pod);
            s->js[x->job].restart = true;
            /* one preemption per job and cycle, however many of its pods it evicts */
            if (x->reason == DRV_REASON_PREEMPT && s->js[x->job].preempt != s->cycle_no) {
                s->js[x->job].preempt = s->cycle_no;
                s->st.jobs[x->job].preemptions++;
                s->preemptions++;
            }
            break;
        case DRV_SCALE:
            lose_work(s, x->job);
            drv_state_set_workers(&s->st, x->job, (int32_t)x->value);
            s->js[x->job].restart = true;
            s->scales++;
            break;
        case DRV_RESIZE:
            drv_state_set_cpu_limit(&s->st, x->pod, x->value);
            s->resizes++;
            break;
        case DRV_BATCH:
            rc = set_batch(s, x->job, (double)x->value, x->reason != DRV_REASON_INPLACE);
            if (rc)
                return refused(s, x, d);
            break;
        case DRV_MIGRATE:
            lose_work(s, x->job);
            sim_unbind(s, x->pod);
            rc = sim_ghost_bind(s, x->pod, x->node);
            s->js[x->job].restart = true;
            s->st.jobs[x->job].migrations++;
            s->migrations++;
            break;
        default:
            break;
        }
    }
    if (!rc && s->cluster->timing.grace > 0)
        sim_ghost_settle(s, s->touched, s->ntouched);
    for (int32_t i = 0; i < s->ntouched && !rc; i++)
        rc = settle(s, s->touched[i]);
    all = all || shares_change(s);
    if (all)
        for (int32_t k = 0; k < s->nrun && !rc; k++)
            rc = sim_reschedule(s, s->runl[k]);
    else
        for (int32_t i = 0; i < s->ntouched && !rc; i++)
            if (s->st.jobs[s->touched[i]].phase == DRV_JOB_RUNNING)
                rc = sim_reschedule(s, s->touched[i]);
    return rc;
}

/* A cycle that failed stops the run, its decisions not applied: when, under which policy,
 * in which plugin (drv_sched_failed_in), and why. */
static int cycle_failed(const drv_sim *s, int rc, drv_diag *d)
{
    int pt;
    const drv_plugin *p = drv_sched_failed_in(s->sched, &pt);
    if (!p)
        return drv_fail(d, rc, "scheduling cycle at t=%.3f (policy %s): %s", s->now, s->policy,
                        drv_strerror(rc));
    return drv_fail(d, rc, "scheduling cycle at t=%.3f (policy %s): plugin %s (%s): %s", s->now,
                    s->policy, p->name, pt >= 0 ? drv_point_name(pt) : "wake", drv_strerror(rc));
}

int sim_run_cycle(drv_sim *s, drv_diag *d)
{
    s->cycle_pending = false;
    /* A quiet cycle - nothing changed since the last one, which decided nothing, and no plugin
     * can decide differently before s->wake - would decide nothing: skip it, owing its
     * samples. `tick` runs every one (the reference tests compare with). */
    if (s->periodic)
        s->last_tick = s->now; /* every running job owes a sample at it (sync) */
    if (s->periodic && !s->cfg.tick && s->quiet && s->now < s->wake) {
        s->skipped++;
        if (s->live > 0)
            return sim_push_tick(s, s->now + s->period);
        return 0;
    }
    s->cycles++;
    s->cycle_no++;
    /* Progress as of now for the plugins, brought to now where a plugin reads it
     * (drv_ctx_job_now -> steps_hook); samples are drawn when a plugin reads them
     * (drv_ctx_progress -> sync_hook). */
    s->dec.n = 0;
    drv_snapshot snap = {&s->st,
                         s->now,
                         s->periodic ? sim_sync_hook : NULL,
                         s,
                         s->cfg.calib ? &s->model : NULL,
                         s->periodic ? sim_steps_hook : NULL};
    int rc = drv_sched_cycle(s->sched, &snap, &s->dec);
    if (rc)
        return cycle_failed(s, rc, d);
    s->decisions += s->dec.n;
    s->quiet = s->dec.n == 0;
    s->wake = drv_sched_wake(s->sched);
    s->blind = drv_sched_starts_blind(s->sched);
    if (s->dec.n > 0 && (rc = apply(s, d)) != 0)
        return d->msg[0]
                   ? rc
                   : drv_fail(d, rc, "applying decisions at t=%.3f: %s", s->now, drv_strerror(rc));
    if (s->cfg.check) {
        drv_diag cd;
        rc = drv_state_check(&s->st, s->gang, &cd);
        if (rc)
            return drv_fail(d, rc, "after the cycle at t=%.3f (policy %s): %s", s->now, s->policy,
                            cd.msg);
    }
    if ((s->periodic || s->cfg.tick) && s->live > 0)
        rc = sim_push_tick(s, s->now + s->period);
    return rc;
}
