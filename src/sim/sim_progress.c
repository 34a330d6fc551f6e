/*
 * sim_progress.c - what a job does over time in the simulator: its phase (and the running list
 * and held-resource buckets that follow it), its pods' binds, its progress computed from an
 * anchor moved only by events, the progress samples it owes (drawn late, at their own times),
 * and its rate from the performance model or, for calibrated jobs, the measured profiles.
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sim_set_phase(drv_sim *s, int32_t job, int phase)
{
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    bool was_running = is_useful_phase(j->phase);
    *bucket(s, job) = drv_res_sub(*bucket(s, job), x->held);
    if (phase == DRV_JOB_RUNNING && j->phase != DRV_JOB_RUNNING)
        j->run_start = s->now; /* (a queue's minRuntimeSeconds counts from here) */
    else if (phase != DRV_JOB_RUNNING)
        j->run_start = -1;
    if (j->phase == DRV_JOB_RUNNING && phase != DRV_JOB_RUNNING) {
        /* The samples it owes, unless it is done (its ring is freed then). */
        if (phase != DRV_JOB_DONE && sim_sync(s, job) != 0)
            s->sync_failed = true;
        x->owe_t = INFINITY;
        int32_t last = s->runl[--s->nrun];
        s->runl[x->runpos] = last;
        s->js[last].runpos = x->runpos;
        x->runpos = -1;
    } else if (j->phase != DRV_JOB_RUNNING && phase == DRV_JOB_RUNNING) {
        /* From the next periodic cycle on (always pending while a job is live). */
        x->owe_t = s->periodic && s->cycle_pending ? s->next_tick : INFINITY;
        x->runpos = s->nrun;
        s->runl[s->nrun++] = job;
    }
    /* the model's count of live batch-adaptive jobs follows the live set (calib.h) */
    bool was_live = j->phase != DRV_JOB_FUTURE && j->phase != DRV_JOB_DONE;
    bool is_live = phase != DRV_JOB_FUTURE && phase != DRV_JOB_DONE;
    if (was_live != is_live && drv_calib_job_adaptive(sim_model(s), job))
        s->model.nlive_adaptive += is_live ? 1 : -1;
    drv_state_set_phase(&s->st, job, phase);
    *bucket(s, job) = drv_res_add(*bucket(s, job), x->held);
    s->running += (int)is_useful_phase(phase) - (int)was_running;
    x->gen++;
}

void sim_bind(drv_sim *s, int32_t pod, int32_t node)
{
    int32_t job = s->st.pods[pod].job;
    drv_res req = s->st.jobs[job].role[s->st.pods[pod].role].req;
    if (s->cfg.placements)
        sim_log_bind(s, pod, node);
    drv_state_bind(&s->st, pod, node);
    sim_gpu_types_hold(s, job, node, req.gpu, 1);
    s->js[job].held = drv_res_add(s->js[job].held, req);
    *bucket(s, job) = drv_res_add(*bucket(s, job), req);
}

void sim_unbind_as(drv_sim *s, int32_t pod, bool terminates)
{
    if (s->st.pods[pod].node < 0)
        return;
    int32_t job = s->st.pods[pod].job;
    drv_res req = s->st.jobs[job].role[s->st.pods[pod].role].req;
    if (s->cfg.placements)
        sim_log_unbind(s, pod);
    int32_t node = s->st.pods[pod].node;
    drv_state_unbind(&s->st, pod);
    sim_gpu_types_hold(s, job, node, req.gpu, -1);
    if (terminates) /* its room and use stay while it terminates (sim_grace.c) */
        sim_ghost_add(s, node, s->st.nqueues > 0 ? s->st.jobs[job].queue : -1, req);
    s->js[job].held = drv_res_sub(s->js[job].held, req);
    *bucket(s, job) = drv_res_sub(*bucket(s, job), req);
}

void sim_unbind(drv_sim *s, int32_t pod)
{
    sim_unbind_as(s, pod, s->cluster->timing.grace > 0);
}

const drv_family *sim_family(const drv_sim *s, int32_t job)
{
    return &s->cat->v[s->st.jobs[job].model];
}

/* A running job's steps at time t >= its anchor, from the anchor. */
static double steps_at(const drv_sim *s, int32_t job, double t)
{
    const jobsim *x = &s->js[job];
    double steps = t > x->upd_t ? x->a_steps + x->rate * (t - x->upd_t) : x->a_steps;
    return steps < s->st.jobs[job].steps_total ? steps : s->st.jobs[job].steps_total;
}

/* sim_progress_at but the loss: steps and service at now. */
static bool progress_steps(drv_sim *s, int32_t job)
{
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    double dt = s->now - x->upd_t;
    if (j->phase != DRV_JOB_RUNNING || dt <= 0)
        return false;
    j->steps = steps_at(s, job, s->now);
    j->attained =
        x->a_att + dt * (double)(x->held.gpu > 0 ? x->held.gpu * 1000 : x->held.cpu) / 1000.0;
    return true;
}

/* Sets a job's progress to its value at now, computed from its anchor (the anchor stays). */
void sim_progress_at(drv_sim *s, int32_t job)
{
    drv_job *j = &s->st.jobs[job];
    if (progress_steps(s, job))
        j->loss = drv_loss(sim_family(s, job), j->steps);
}

/* The progress a cycle's plugins read (drv_snapshot.steps_now): a running job's steps and
 * service brought to now when a plugin reads them (drv_ctx_job_now, drv_ctx_progress), not
 * every running job's each cycle (8 % of the Philly replay with drover, whose plugins read
 * none); its loss, which no plugin reads from the job (a plugin reads losses from samples),
 * only when a plugin asks for the job's progress (sim_sync_hook), and at the end of a run (the
 * last periodic cycle's, sim_progress_at). Computed from the job's anchor, so the same numbers
 * wherever and however often they are read. */
void sim_steps_hook(void *arg, int32_t job)
{
    progress_steps(arg, job);
}

/* Moves a job's anchor to now (its progress, when running, brought up to now at its rate). Done
 * before anything that may change its rate or held resources: the same events in every run
 * mode, so a run that skips quiet cycles computes the same numbers as one that does not. */
void sim_advance(drv_sim *s, int32_t job)
{
    if (sim_sync(s, job) != 0) /* samples owed are drawn from the anchor they were owed under */
        s->sync_failed = true;
    sim_progress_at(s, job);
    jobsim *x = &s->js[job];
    x->upd_t = s->now;
    x->a_steps = s->st.jobs[job].steps;
    x->a_att = s->st.jobs[job].attained;
}

/* Records a sample at now of a job that has done `steps`. */
static int sample_steps(drv_sim *s, int32_t job, double steps)
{
    jobsim *x = &s->js[job];
    double obs = drv_loss_observed(sim_family(s, job), steps, s->cfg.seed, job, x->nsamples++);
    return drv_job_add_sample(&s->st.jobs[job], (drv_sample){s->now, steps, obs});
}

int sim_sample(drv_sim *s, int32_t job)
{
    return sample_steps(s, job, s->st.jobs[job].steps);
}

/*
 * Draws the progress samples a running job owes: one at every periodic cycle since owe_t, run
 * or skipped, up to the last one (only the newest DRV_HIST, the ring's size, are drawn; the
 * others still count, for the noise sequence). Samples are drawn late - when a plugin reads
 * them, or before the job's rate or phase changes - but at their own times and from the
 * anchor the job had then, so the ring holds what a sample at every cycle would have put
 * there. While a job runs, live > 0 and cycles follow each other every period, so their times
 * are owe_t, owe_t + period, ... computed by the same additions that scheduled them.
 */
int sim_sync(drv_sim *s, int32_t job)
{
    jobsim *x = &s->js[job];
    const drv_job *j = &s->st.jobs[job];
    if (!(x->owe_t <= s->last_tick) || j->phase != DRV_JOB_RUNNING)
        return 0;
    int64_t n = 0;
    double t = x->owe_t;
    /* Whole seconds: every sum is exact, so owe_t + k * period is the k-th addition - no loop
     * over the days a job may have run unread. */
    bool exact = s->period == floor(s->period) && t == floor(t) && s->last_tick < 0x1p52;
    if (exact) {
        n = (int64_t)floor((s->last_tick - t) / s->period) + 1;
        t += (double)n * s->period;
    } else {
        for (; t <= s->last_tick; t += s->period)
            n++;
    }
    int64_t drop = n > DRV_HIST ? n - DRV_HIST : 0;
    x->nsamples += drop;
    double now = s->now;
    int rc = 0;
    s->now = x->owe_t;
    if (exact)
        s->now += (double)drop * s->period;
    else
        for (int64_t i = 0; i < drop; i++)
            s->now += s->period;
    /* From the anchor, not j->steps: a cycle may have brought the job past these times. */
    for (int64_t i = drop; i < n && !rc; i++, s->now += s->period)
        rc = sample_steps(s, job, steps_at(s, job, s->now));
    s->now = now;
    x->owe_t = t;
    return rc;
}

/* The snapshot's hook (drv_ctx_progress): a plugin is about to read the job's samples. */
void sim_sync_hook(void *arg, int32_t job)
{
    drv_sim *s = arg;
    if (sim_sync(s, job) != 0)
        s->sync_failed = true;
    drv_job *j = &s->st.jobs[job];
    if (j->phase == DRV_JOB_RUNNING) /* steps brought to now first (drv_ctx_progress) */
        j->loss = drv_loss(sim_family(s, job), j->steps);
}

bool sim_calibrated(const drv_sim *s, int32_t job)
{
    return s->cfg.calib && sim_spec(s, job)->calib_app > 0;
}

/* A calibrated run on typed nodes: every model the jobs use (all of them in a streamed run) has
 * a profile for every node's GPU type (calib.h, drv_calib_for_type), else the run is refused
 * naming model and type, unless cfg.calib_type_fallback. O(nodes x models). */
int sim_check_calib_types(const drv_sim *s, const drv_workload *w, drv_diag *d)
{
    const drv_calib *cal = s->cfg.calib;
    if (!cal)
        return 0;
    bool *used = drv_calloc((size_t)cal->n + 1, sizeof *used);
    if (!used)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int32_t i = 0; i < (w ? w->n : 0); i++)
        if (w->jobs[i].calib_app > 0 && w->jobs[i].calib_app <= cal->n)
            used[w->jobs[i].calib_app - 1] = true;
    int rc = 0;
    for (int32_t n = 0; n < s->st.nnodes && !rc; n++) {
        int32_t ty = drv_node_gpu_type(&s->st, n);
        const char *type = ty > 0 ? drv_strtab_str(s->st.names, ty) : "";
        if (n > 0 && ty == drv_node_gpu_type(&s->st, n - 1))
            continue;
        for (int32_t a = 0; a < cal->n && !rc; a++)
            if ((!w || used[a]) && drv_calib_for_type(cal, a, type, s->cfg.calib_type_fallback) < 0)
                rc = type[0] ? drv_fail(d, DRV_ENOENT,
                                        "calibration: model %s has no profile for GPU type %s "
                                        "(placements-%s.csv; node %s has it): add it, or "
                                        "--calib-type-fallback to time it by placements%s%s.csv",
                                        cal->v[a].name, type, type, s->cluster->nodes[n].name,
                                        cal->v[a].no_base ? "-" : "", cal->v[a].type_first)
                             : drv_fail(d, DRV_ENOENT,
                                        "calibration: model %s has only per-type profiles "
                                        "(placements-TYPE.csv) and node %s has no GPU type: "
                                        "give it a gpuType, or --calib-type-fallback to time "
                                        "it by placements-%s.csv",
                                        cal->v[a].name, s->cluster->nodes[n].name,
                                        cal->v[a].type_first);
    }
    drv_free(used);
    return rc;
}

/*
 * A calibrated job (calib.h) runs at one global step per measured step time of its placement
 * (GPUs per node, in node order) and batch; its progress counts global steps.
 */
static drv_step calib_step(drv_sim *s, int32_t job)
{
    const drv_job *j = &s->st.jobs[job];
    drv_step r = {0};
    enum { MAXN = 256 };
    int32_t node[MAXN], gpn[MAXN], nn = 0;
    for (int32_t k = 0; k < j->pod_count; k++) {
        const drv_pod *p = &s->st.pods[j->pod_base + k];
        if (p->node < 0 || (p->role != DRV_ROLE_WORKER && p->role != DRV_ROLE_CHIEF))
            continue;
        r.workers++;
        int32_t i = 0;
        while (i < nn && node[i] != p->node)
            i++;
        if (i == nn && nn < MAXN) {
            node[nn] = p->node;
            gpn[nn++] = 0;
        }
        if (i < nn)
            gpn[i]++;
    }
    /* node order, so a placement reads the same whichever pod was bound first */
    for (int32_t a = 1; a < nn; a++)
        for (int32_t b = a; b > 0 && node[b - 1] > node[b]; b--) {
            int32_t t = node[b];
            node[b] = node[b - 1];
            node[b - 1] = t;
            t = gpn[b];
            gpn[b] = gpn[b - 1];
            gpn[b - 1] = t;
        }
    const drv_jobspec *js = sim_spec(s, job);
    /* its GPU type (one per job: the core keeps a job's GPU pods on one) */
    int32_t type = nn > 0 ? drv_node_gpu_type(&s->st, node[0]) : 0;
    uint64_t sig = 1469598103934665603ULL; /* FNV-1a over the type and GPUs per node */
    sig = (sig ^ (uint64_t)(uint32_t)type) * 1099511628211ULL;
    for (int32_t i = 0; i < nn; i++)
        sig = (sig ^ (uint64_t)gpn[i]) * 1099511628211ULL;
    jobsim *x = &s->js[job];
    if (x->calib_sig != sig || x->calib_t <= 0) {
        drv_calib_sample m;
        x->calib_sig = sig;
        x->calib_t = 0;
        /* the profile of its type (drv_sim_new checked each type has one, or fallback) */
        int32_t app = drv_calib_for_type(s->cfg.calib, js->calib_app - 1,
                                         type > 0 ? drv_strtab_str(s->st.names, type) : NULL,
                                         s->cfg.calib_type_fallback);
        if (app >= 0 &&
            drv_calib_measure(s->cfg.calib, app, gpn, nn, s->model.v[job].batch, &m) == 0) {
            x->calib_t = m.step;
            s->model.v[job].seen = m; /* what the job itself measures: all a policy may learn */
        }
    }
    double t = x->calib_t;
    if (t > 0) {
        r.compute = r.total = t;
        r.rate = 1.0 / t;
    }
    return r;
}

/* Recomputes a running job's rate and (re)schedules its completion. */
int sim_reschedule(drv_sim *s, int32_t job)
{
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    drv_step st = sim_calibrated(s, job)
                      ? calib_step(s, job)
                      : drv_model_step(sim_family(s, job), &s->cluster->net, &s->st, job);
    if (st.rate == x->rate && x->rate > 0)
        return 0;
    sim_advance(s, job); /* progress so far at the old rate */
    x->rate = st.rate;
    x->gen++;
    if (x->rate <= 0)
        return 0;
    double left = j->steps_total - j->steps;
    return sim_push_event(s, s->now + (left > 0 ? left / x->rate : 0), EV_COMPLETE, job, x->gen);
}
