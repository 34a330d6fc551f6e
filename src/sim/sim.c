/*
 * sim.c - the discrete-event simulator: a virtual clock, a binary-heap event queue and the
 * model of what decisions do to jobs over time. docs/model.md describes the job model for
 * users, docs/cycle.md ("Quiet cycles") which cycles are skipped.
 *
 * Events: ARRIVAL (a job is submitted), CYCLE (the scheduler runs), STARTED (a complete gang's
 * containers are up, after the pod-start latency or a restart pause), COMPLETE (a job reaches
 * its target). Event order is (time, sequence number), so ties resolve in insertion order and
 * a run is deterministic.
 *
 * Progress is piecewise linear: a running job advances at `rate` worker-steps per second, given
 * by the performance model for its current placement. Whenever anything that can change a rate
 * happens (a cycle's decisions, a completion), running jobs are advanced to `now`, the change
 * is applied, rates are recomputed and completions rescheduled. A stale STARTED or COMPLETE
 * event is recognised by its generation number and ignored, so nothing is ever removed from
 * the heap. A job with measured profiles (drv_jobspec.calib_app, calib.h) takes its rate from
 * them instead of the analytic model, in global steps per second (docs/data.md).
 *
 * Cycles are event-driven: a cycle is requested when something changed (an arrival, a
 * completion, a container start) and runs at the next multiple of the profile's period. Only a
 * profile with time-driven points (scale, reallocate, migrate) also ticks every period while
 * jobs are live. Idle stretches of a trace therefore cost nothing. A tick is skipped when it is
 * quiet: nothing happened since the last cycle run, that cycle decided nothing, and the
 * scheduler said no plugin could decide differently before a later time (drv_sched_wake,
 * docs/cycle.md). Every tick, run or skipped, owes a progress sample of every running job; a
 * job's samples are drawn late - when a plugin reads them (drv_ctx_progress), before its rate
 * or phase changes, at the end of a run - at their own times (sync). Progress is computed from
 * an anchor moved only by events, never by sampling, so a run that skips quiet ticks and one
 * that runs every tick (drv_sim_config.tick) give every job the same numbers
 * (test_event_driven_equals_ticking in tests/sim/test_sim.c).
 *
 * On request (drv_sim_config.placements) every bind opens and every unbind closes an interval
 * in a placement log, which the per-node Gantt chart is drawn from; off, it costs one branch per
 * bind. A progress callback, if given, is called every DRV_PROGRESS_EVERY events; the simulator
 * itself never reads a clock, so progress reporting cannot change a run.
 */
#include "drover/sim.h"
#include "drover/calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EV_ARRIVAL, EV_CYCLE, EV_STARTED, EV_COMPLETE };

typedef struct event {
    double t;
    uint64_t seq;
    int32_t kind;
    int32_t job;
    uint32_t gen;
} event;

typedef struct jobsim {
    double rate;      /* worker-steps per second while RUNNING */
    double upd_t;     /* anchor: time of the last progress update that changed nothing ... */
    double a_steps;   /* ... and steps and attained service then: progress at t is computed */
    double a_att;     /* from the anchor, so skipping a sampling tick changes no later value */
    uint32_t gen;     /* bumps on every phase change: stale events are dropped */
    uint32_t touched; /* cycle stamp of the last decision touching this job */
    bool restart;     /* a decision this cycle requires a checkpoint-restart */
    int64_t nsamples;
    drv_res held;       /* resources of the job's bound pods */
    int32_t runpos;     /* index in drv_sim.runl while RUNNING, else -1 */
    uint64_t calib_sig; /* calibrated jobs: signature of the placement calib_t was computed for */
    double calib_t;     /* its step time (a lookup is costly; rates are recomputed often) */
    double owe_t;       /* while RUNNING under a periodic profile: the first periodic cycle whose
                           progress sample is not drawn yet (INFINITY: none); see sync() */
} jobsim;

struct drv_sim {
    const drv_cluster_spec *cluster;
    const drv_workload *wl;
    const drv_catalogue *cat;
    drv_sim_config cfg;
    drv_state st;
    drv_sched *sched;
    bool periodic; /* the profile has time-driven points */
    bool gang;
    double period;

    event *heap;
    int32_t nheap, cap_heap;
    uint64_t seq;
    int32_t *arrivals;    /* jobs in (submit, id) order */
    int32_t next_arrival; /* the first of them not in the heap yet */
    double now;
    bool cycle_pending;
    bool quiet;       /* nothing changed since the last cycle run, and it decided nothing */
    double wake;      /* the scheduler's drv_sched_wake after that cycle */
    bool blind;       /* and its drv_sched_starts_blind: a job starting is no change for it */
    double last_tick; /* time of the last periodic cycle, run or skipped */
    double next_tick; /* time of the cycle event pending (cycle_pending) */

    jobsim *js; /* per job, in js_pages: released with the job */
    drv_pages js_pages;
    drv_jobresult *res; /* per job, kept for the report: the compact O(trace) part */
    int32_t *pod_base;  /* per job: its first pod slot (slots are laid out in workload order) */
    int32_t *names;     /* per job: its interned name, user and queue (interned in workload order
                           at the start, so ids do not depend on the order of submissions) */
    drv_decisions dec;
    uint32_t cycle_no;
    int32_t *touched;
    int32_t ntouched, cap_touched;
    int32_t *runl; /* jobs in phase RUNNING, in no particular order */
    int32_t nrun;

    /* accounting */
    int32_t live;        /* submitted, not done */
    int32_t running;     /* STARTING, RUNNING or RESTARTING */
    drv_res held_useful; /* held by jobs whose gang is complete */
    drv_res held_wasted; /* held by PENDING jobs (incomplete gangs) */
    double last_t;
    double area_cpu_used, area_cpu_useful, area_gpu_used, area_gpu_useful;
    drv_res capacity;
    int64_t skipped; /* quiet cycles skipped */
    int64_t events, cycles, decisions, preemptions, migrations, restarts, scales, resizes;
    drv_tick *ticks;
    int32_t nticks, cap_ticks;
    /* placement log (cfg.placements only): intervals, and per pod the open interval or -1 */
    drv_placement *pl;
    int32_t npl, cap_pl;
    int32_t *pl_open;
    int32_t cap_open;
    bool sync_failed; /* a sample could not be drawn (out of memory) */
    bool pl_failed;   /* an allocation for the log failed; the run stops with DRV_ENOMEM */
    int32_t ndone;    /* jobs finished (for progress reports) */
};

/* ---- event heap --------------------------------------------------------------------------- */

static bool ev_before(const event *a, const event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static int push_seq(drv_sim *s, double t, uint64_t seq, int kind, int32_t job, uint32_t gen)
{
    if (drv_grow(&s->heap, sizeof *s->heap, &s->cap_heap, s->nheap + 1) != 0)
        return DRV_ENOMEM;
    event e = {t, seq, kind, job, gen};
    int32_t i = s->nheap++;
    while (i > 0) {
        int32_t p = (i - 1) / 2;
        if (!ev_before(&e, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
    return 0;
}

static int push_event(drv_sim *s, double t, int kind, int32_t job, uint32_t gen)
{
    return push_seq(s, t, s->seq++, kind, job, gen);
}

/* Arrivals enter the heap one at a time, in (submit, job) order: job i's with sequence number
 * i, what it had when every arrival was pushed at the start, so events pop in the same order
 * and the heap holds the jobs in flight, not the trace. */
static int push_next_arrival(drv_sim *s)
{
    if (s->next_arrival >= s->wl->n)
        return 0;
    int32_t i = s->arrivals[s->next_arrival++];
    return push_seq(s, s->wl->jobs[i].submit, (uint64_t)i, EV_ARRIVAL, i, 0);
}

typedef struct arrival {
    double t;
    int32_t job;
} arrival;

static int by_submit(const void *a, const void *b)
{
    const arrival *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->job > y->job) - (x->job < y->job);
}

static event pop_event(drv_sim *s)
{
    event top = s->heap[0];
    event last = s->heap[--s->nheap];
    int32_t i = 0, n = s->nheap;
    for (;;) {
        int32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ev_before(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!ev_before(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n > 0)
        s->heap[i] = last;
    return top;
}

/* ---- accounting --------------------------------------------------------------------------- */

static bool is_useful_phase(int phase)
{
    return phase == DRV_JOB_STARTING || phase == DRV_JOB_RUNNING || phase == DRV_JOB_RESTARTING;
}

static void integrate(drv_sim *s, double t)
{
    double dt = t - s->last_t;
    if (dt > 0) {
        drv_res used = drv_res_add(s->held_useful, s->held_wasted);
        s->area_cpu_used += (double)used.cpu * dt;
        s->area_cpu_useful += (double)s->held_useful.cpu * dt;
        s->area_gpu_used += (double)used.gpu * dt;
        s->area_gpu_useful += (double)s->held_useful.gpu * dt;
    }
    s->last_t = t;
}

/* Same values, whatever the time. */
static bool same_tick(const drv_tick *a, const drv_tick *b)
{
    return a->cpu_used == b->cpu_used && a->cpu_useful == b->cpu_useful &&
           a->gpu_used == b->gpu_used && a->gpu_useful == b->gpu_useful &&
           a->pending == b->pending && a->running == b->running;
}

/* Appends the cluster's state after an event to the time series - a step function, so an
 * event that changed none of its values (most: a skipped cycle, a stale completion) adds no
 * point, and a long trace's series follows its changes, not its events. */
static int record_tick(drv_sim *s)
{
    drv_res used = drv_res_add(s->held_useful, s->held_wasted);
    drv_tick tk = {s->now,           (double)used.cpu,           (double)s->held_useful.cpu,
                   (double)used.gpu, (double)s->held_useful.gpu, s->live - s->running,
                   s->running};
    if (s->nticks > 0 && same_tick(&s->ticks[s->nticks - 1], &tk))
        return 0;
    if (drv_grow(&s->ticks, sizeof *s->ticks, &s->cap_ticks, s->nticks + 1) != 0)
        return DRV_ENOMEM;
    if (s->nticks > 0 && s->ticks[s->nticks - 1].t == s->now)
        s->ticks[s->nticks - 1] = tk;
    else
        s->ticks[s->nticks++] = tk;
    return 0;
}

static drv_res *bucket(drv_sim *s, int32_t job)
{
    return is_useful_phase(s->st.jobs[job].phase) ? &s->held_useful : &s->held_wasted;
}

static int sync(drv_sim *s, int32_t job);

static void set_phase(drv_sim *s, int32_t job, int phase)
{
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    bool was_running = is_useful_phase(j->phase);
    *bucket(s, job) = drv_res_sub(*bucket(s, job), x->held);
    if (j->phase == DRV_JOB_RUNNING && phase != DRV_JOB_RUNNING) {
        /* The samples it owes, unless it is done (its ring is freed then). */
        if (phase != DRV_JOB_DONE && sync(s, job) != 0)
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
    drv_state_set_phase(&s->st, job, phase);
    *bucket(s, job) = drv_res_add(*bucket(s, job), x->held);
    s->running += (int)is_useful_phase(phase) - (int)was_running;
    x->gen++;
}

/* Opens a placement interval for pod on node (placement log only). */
static void log_bind(drv_sim *s, int32_t pod, int32_t node)
{
    int32_t old = s->cap_open;
    if (drv_grow(&s->pl, sizeof *s->pl, &s->cap_pl, s->npl + 1) != 0 ||
        drv_grow(&s->pl_open, sizeof *s->pl_open, &s->cap_open, pod + 1) != 0) {
        s->pl_failed = true;
        return;
    }
    for (int32_t i = old; i < s->cap_open; i++)
        s->pl_open[i] = -1;
    const drv_pod *p = &s->st.pods[pod];
    s->pl_open[pod] = s->npl;
    s->pl[s->npl++] = (drv_placement){p->job, pod, p->role, node, s->now, -1, p->index};
}

static void log_unbind(drv_sim *s, int32_t pod)
{
    if (pod < s->cap_open && s->pl_open[pod] >= 0) {
        s->pl[s->pl_open[pod]].end = s->now;
        s->pl_open[pod] = -1;
    }
}

static void sim_bind(drv_sim *s, int32_t pod, int32_t node)
{
    int32_t job = s->st.pods[pod].job;
    drv_res req = s->st.jobs[job].role[s->st.pods[pod].role].req;
    if (s->cfg.placements)
        log_bind(s, pod, node);
    drv_state_bind(&s->st, pod, node);
    s->js[job].held = drv_res_add(s->js[job].held, req);
    *bucket(s, job) = drv_res_add(*bucket(s, job), req);
}

static void sim_unbind(drv_sim *s, int32_t pod)
{
    if (s->st.pods[pod].node < 0)
        return;
    int32_t job = s->st.pods[pod].job;
    drv_res req = s->st.jobs[job].role[s->st.pods[pod].role].req;
    if (s->cfg.placements)
        log_unbind(s, pod);
    drv_state_unbind(&s->st, pod);
    s->js[job].held = drv_res_sub(s->js[job].held, req);
    *bucket(s, job) = drv_res_sub(*bucket(s, job), req);
}

/* ---- progress ----------------------------------------------------------------------------- */

static const drv_family *family(const drv_sim *s, int32_t job)
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

/* Sets a job's progress to its value at now, computed from its anchor (the anchor stays). */
static void progress_at(drv_sim *s, int32_t job)
{
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    double dt = s->now - x->upd_t;
    if (j->phase == DRV_JOB_RUNNING && dt > 0) {
        j->steps = steps_at(s, job, s->now);
        j->loss = drv_loss(family(s, job), j->steps);
        j->attained =
            x->a_att + dt * (double)(x->held.gpu > 0 ? x->held.gpu * 1000 : x->held.cpu) / 1000.0;
    }
}

/* Moves a job's anchor to now (its progress, when running, brought up to now at its rate). Done
 * before anything that may change its rate or held resources: the same events in every run
 * mode, so a run that skips quiet cycles computes the same numbers as one that does not. */
static void advance(drv_sim *s, int32_t job)
{
    if (sync(s, job) != 0) /* samples owed are drawn from the anchor they were owed under */
        s->sync_failed = true;
    progress_at(s, job);
    jobsim *x = &s->js[job];
    x->upd_t = s->now;
    x->a_steps = s->st.jobs[job].steps;
    x->a_att = s->st.jobs[job].attained;
}

/* Records a sample at now of a job that has done `steps`. */
static int sample_steps(drv_sim *s, int32_t job, double steps)
{
    jobsim *x = &s->js[job];
    double obs = drv_loss_observed(family(s, job), steps, s->cfg.seed, job, x->nsamples++);
    return drv_job_add_sample(&s->st.jobs[job], (drv_sample){s->now, steps, obs});
}

static int sample(drv_sim *s, int32_t job)
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
static int sync(drv_sim *s, int32_t job)
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
static void sync_hook(void *arg, int32_t job)
{
    drv_sim *s = arg;
    if (sync(s, job) != 0)
        s->sync_failed = true;
}

static bool calibrated(const drv_sim *s, int32_t job)
{
    return s->cfg.calib && s->wl->jobs[job].calib_app > 0;
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
    const drv_jobspec *js = &s->wl->jobs[job];
    uint64_t sig = 1469598103934665603ULL; /* FNV-1a over the GPUs per node, in node order */
    for (int32_t i = 0; i < nn; i++)
        sig = (sig ^ (uint64_t)gpn[i]) * 1099511628211ULL;
    jobsim *x = &s->js[job];
    if (x->calib_sig != sig || x->calib_t <= 0) {
        x->calib_sig = sig;
        x->calib_t = drv_calib_step_time(s->cfg.calib, js->calib_app - 1, gpn, nn, j->batch);
    }
    double t = x->calib_t;
    if (t > 0) {
        r.compute = r.total = t;
        r.rate = 1.0 / t;
    }
    return r;
}

/* Recomputes a running job's rate and (re)schedules its completion. */
static int reschedule(drv_sim *s, int32_t job)
{
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    drv_step st = calibrated(s, job)
                      ? calib_step(s, job)
                      : drv_model_step(family(s, job), &s->cluster->net, &s->st, job);
    if (st.rate == x->rate && x->rate > 0)
        return 0;
    advance(s, job); /* progress so far at the old rate */
    x->rate = st.rate;
    x->gen++;
    if (x->rate <= 0)
        return 0;
    double left = j->steps_total - j->steps;
    return push_event(s, s->now + (left > 0 ? left / x->rate : 0), EV_COMPLETE, job, x->gen);
}

/* ---- the cycle and its decisions ---------------------------------------------------------- */

static int push_tick(drv_sim *s, double t)
{
    s->cycle_pending = true;
    s->next_tick = t;
    return push_event(s, t, EV_CYCLE, -1, 0);
}

static int request_cycle(drv_sim *s)
{
    if (s->cycle_pending)
        return 0;
    double t = ceil(s->now / s->period) * s->period;
    if (t < s->now)
        t = s->now;
    return push_tick(s, t);
}

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
            set_phase(s, job, DRV_JOB_PENDING);
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
        set_phase(s, job, resumed ? DRV_JOB_RESTARTING : DRV_JOB_STARTING);
        x->rate = 0;
        double pause = resumed ? s->cluster->timing.restart : s->cluster->timing.pod_start;
        return push_event(s, s->now + pause, EV_STARTED, job, x->gen);
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
 * DRV_BATCH: a calibrated job trains at a new total batch from its restart on. Its progress
 * (calib.h) is kept: the steps done and the steps to finish are those of the new batch at the
 * same progress. A batch outside the job's range is an error (the policy broke the contract).
 */
static int set_batch(drv_sim *s, int32_t job, double batch)
{
    drv_job *j = &s->st.jobs[job];
    jobsim *x = &s->js[job];
    if (!calibrated(s, job) || !(batch >= j->batch_min && batch <= j->batch_max))
        return DRV_EINVAL;
    int32_t app = j->calib_app - 1;
    double p = drv_calib_progress(s->cfg.calib, app, j->batch, j->steps);
    j->batch = (int32_t)batch;
    j->steps_total = drv_calib_steps(s->cfg.calib, app, batch);
    j->steps = fmin(drv_calib_steps_to(s->cfg.calib, app, batch, p), j->steps_total);
    x->a_steps = j->steps; /* advanced to now before the decisions were applied */
    x->calib_t = 0;        /* the step time is the new batch's */
    x->restart = true;
    return 0;
}

static int apply(drv_sim *s)
{
    int rc = 0;
    s->ntouched = 0;
    /* Bring the jobs the decisions name up to now first: their pods and held resources change
     * below. Any other job whose rate changes is brought up to date by reschedule. */
    bool all = shares_change(s);
    for (int32_t i = 0; i < s->dec.n; i++)
        advance(s, s->dec.v[i].job);
    for (int32_t i = 0; i < s->dec.n && !rc; i++) {
        const drv_decision *x = &s->dec.v[i];
        rc = touch(s, x->job);
        if (rc)
            break;
        switch (x->kind) {
        case DRV_BIND:
            sim_bind(s, x->pod, x->node);
            break;
        case DRV_EVICT:
            sim_unbind(s, x->pod);
            s->js[x->job].restart = true;
            if (x->reason == DRV_REASON_PREEMPT) {
                s->st.jobs[x->job].preemptions++;
                s->preemptions++;
            }
            break;
        case DRV_SCALE:
            drv_state_set_workers(&s->st, x->job, (int32_t)x->value);
            s->js[x->job].restart = true;
            s->scales++;
            break;
        case DRV_RESIZE:
            drv_state_set_cpu_limit(&s->st, x->pod, x->value);
            s->resizes++;
            break;
        case DRV_BATCH:
            rc = set_batch(s, x->job, (double)x->value);
            break;
        case DRV_MIGRATE:
            sim_unbind(s, x->pod);
            sim_bind(s, x->pod, x->node);
            s->js[x->job].restart = true;
            s->st.jobs[x->job].migrations++;
            s->migrations++;
            break;
        default:
            break;
        }
    }
    for (int32_t i = 0; i < s->ntouched && !rc; i++)
        rc = settle(s, s->touched[i]);
    all = all || shares_change(s);
    if (all)
        for (int32_t k = 0; k < s->nrun && !rc; k++)
            rc = reschedule(s, s->runl[k]);
    else
        for (int32_t i = 0; i < s->ntouched && !rc; i++)
            if (s->st.jobs[s->touched[i]].phase == DRV_JOB_RUNNING)
                rc = reschedule(s, s->touched[i]);
    return rc;
}

/* Something changed (an arrival, a start, a completion): no skipping until a cycle has looked
 * at the change. */
static void disturb(drv_sim *s)
{
    s->quiet = false;
}

static int run_cycle(drv_sim *s, drv_diag *d)
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
            return push_tick(s, s->now + s->period);
        return 0;
    }
    s->cycles++;
    s->cycle_no++;
    /* Progress as of now for the plugins; samples are drawn when a plugin reads them
     * (drv_ctx_progress -> sync_hook). */
    for (int32_t k = 0; s->periodic && k < s->nrun; k++)
        progress_at(s, s->runl[k]);
    s->dec.n = 0;
    drv_snapshot snap = {&s->st, s->now, s->periodic ? sync_hook : NULL, s, s->cfg.calib};
    int rc = drv_sched_cycle(s->sched, &snap, &s->dec);
    if (rc)
        return drv_fail(d, rc, "scheduling cycle at t=%.3f: %s", s->now, drv_strerror(rc));
    s->decisions += s->dec.n;
    s->quiet = s->dec.n == 0;
    s->wake = drv_sched_wake(s->sched);
    s->blind = drv_sched_starts_blind(s->sched);
    if (s->dec.n > 0 && (rc = apply(s)) != 0)
        return drv_fail(d, rc, "applying decisions at t=%.3f: %s", s->now, drv_strerror(rc));
    if (s->cfg.check) {
        drv_diag cd;
        rc = drv_state_check(&s->st, s->gang, &cd);
        if (rc)
            return drv_fail(d, rc, "after the cycle at t=%.3f (policy %s): %s", s->now,
                            drv_sched_profile(s->sched)->name, cd.msg);
    }
    if ((s->periodic || s->cfg.tick) && s->live > 0)
        rc = push_tick(s, s->now + s->period);
    return rc;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

/* a + b, saturating at INT64_MAX: a cluster's capacity must not wrap to a negative sum (memory
 * 5e18 on two nodes did, and no job was ever admitted). Parsers bound each quantity too. */
static int64_t add_sat(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static drv_res res_add_sat(drv_res a, drv_res b)
{
    return (drv_res){add_sat(a.cpu, b.cpu), add_sat(a.mem, b.mem), add_sat(a.gpu, b.gpu)};
}

/* "cpu 4, memory 8Gi, gpu 0": CPU in cores (or m), memory in Gi or Mi as people write it. */
static const char *res_text(drv_res r, char *buf, size_t n)
{
    char cpu[32], mem[32];
    if (r.cpu % 1000 == 0)
        snprintf(cpu, sizeof cpu, "%lld", (long long)(r.cpu / 1000));
    else
        snprintf(cpu, sizeof cpu, "%lldm", (long long)r.cpu);
    if (r.mem >= (1LL << 30))
        snprintf(mem, sizeof mem, "%.4gGi", (double)r.mem / (1LL << 30));
    else if (r.mem >= (1LL << 20))
        snprintf(mem, sizeof mem, "%.4gMi", (double)r.mem / (1LL << 20));
    else
        snprintf(mem, sizeof mem, "%lld", (long long)r.mem);
    snprintf(buf, n, "cpu %s, memory %s, gpu %lld", cpu, mem, (long long)r.gpu);
    return buf;
}

/* Prefixes d's message with where job js came from: "w.yaml:12: job a: " (or "job a: " for a
 * generated job) and returns DRV_EINVAL. */
static int job_fail(const char *file, const drv_jobspec *js, drv_diag *d)
{
    char what[sizeof d->msg];
    snprintf(what, sizeof what, "%s", d->msg);
    if (file && js->line > 0)
        return drv_fail(d, DRV_EINVAL, "%s:%d: job %s: %s", file, js->line, js->name, what);
    return drv_fail(d, DRV_EINVAL, "job %s: %s", js->name, what);
}

/* Jobs that will never run are not errors of the input (a trace may run past a short horizon,
 * or hold a job bigger than the cluster under study), but a silent non-run reads as a
 * scheduling result: warn once per kind, with the count and the first such job. */
static void warn_never_run(const drv_cluster_spec *c, const drv_workload *w, drv_res capacity)
{
    int32_t late = 0, big = 0, first_late = -1, first_big = -1;
    for (int32_t i = 0; i < w->n; i++) {
        const drv_jobspec *js = &w->jobs[i];
        if (js->submit > c->timing.horizon && late++ == 0)
            first_late = i;
        drv_res need = {0, 0, 0};
        for (int r = 0; r < DRV_NROLES; r++) {
            int64_t k =
                js->role[r].min < js->role[r].replicas ? js->role[r].min : js->role[r].replicas;
            need = res_add_sat(need, drv_res_scale(js->role[r].req, k));
        }
        if (!drv_res_fits(need, capacity) && big++ == 0)
            first_big = i;
    }
    if (late)
        drv_log(DRV_LOG_WARN,
                "%d job(s) submitted after the horizon (%.0f s) will not run, the first %s at "
                "%.0f s",
                late, c->timing.horizon, w->jobs[first_late].name, w->jobs[first_late].submit);
    if (big)
        drv_log(DRV_LOG_WARN,
                "%d job(s) need more than the whole cluster at their smallest and will not run, "
                "the first %s",
                big, w->jobs[first_big].name);
}

int drv_sim_new(const drv_cluster_spec *c, const drv_workload *w, const drv_catalogue *cat,
                const drv_profile *prof, const drv_sim_config *cfg, drv_sim **out, drv_diag *d)
{
    drv_sim *s = drv_calloc(1, sizeof *s);
    if (!s)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    s->cluster = c;
    s->wl = w;
    s->cat = cat;
    s->cfg = *cfg;
    drv_decisions_init(&s->dec);
    int rc = drv_state_init(&s->st);
    if (rc) {
        drv_sim_free(s);
        return drv_fail(d, rc, "out of memory");
    }
    drv_res biggest = {0, 0, 0};
    for (int32_t i = 0; i < c->n && !rc; i++) {
        rc = drv_state_add_node(&s->st, c->nodes[i].name, c->nodes[i].alloc, c->nodes[i].zone,
                                c->nodes[i].rack, NULL);
        s->capacity = res_add_sat(s->capacity, c->nodes[i].alloc);
        if (c->nodes[i].alloc.cpu > biggest.cpu)
            biggest.cpu = c->nodes[i].alloc.cpu;
        if (c->nodes[i].alloc.mem > biggest.mem)
            biggest.mem = c->nodes[i].alloc.mem;
        if (c->nodes[i].alloc.gpu > biggest.gpu)
            biggest.gpu = c->nodes[i].alloc.gpu;
    }
    if (rc) {
        drv_sim_free(s);
        return drv_fail(d, rc, "cluster: %s", drv_strerror(rc));
    }
    /* Jobs, their pods and their simulator state live in released-as-they-finish arrays
     * (pages.h): memory follows the jobs not finished, plus one result row per job. */
    int64_t npods = 0;
    for (int32_t i = 0; i < w->n; i++)
        for (int r = 0; r < DRV_NROLES; r++)
            npods += w->jobs[i].role[r].max > w->jobs[i].role[r].replicas
                         ? w->jobs[i].role[r].max
                         : w->jobs[i].role[r].replicas;
    if (npods > INT32_MAX || drv_state_reserve(&s->st, w->n, (int32_t)npods) != 0 ||
        drv_pages_init(&s->js_pages, sizeof *s->js, (size_t)w->n) != 0) {
        drv_sim_free(s);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    s->js = (jobsim *)s->js_pages.base;
    /* checked runs (tests, --check): a read of a finished job faults */
    s->st.job_pages.guard = s->st.pod_pages.guard = s->js_pages.guard = cfg->check;
    s->res = drv_calloc((size_t)w->n + 1, sizeof *s->res);
    s->runl = drv_calloc((size_t)w->n + 1, sizeof *s->runl);
    s->pod_base = drv_calloc((size_t)w->n + 1, sizeof *s->pod_base);
    s->names = drv_calloc(3 * (size_t)w->n + 1, sizeof *s->names);
    int32_t pod = 0;
    if (!s->res || !s->runl || !s->pod_base || !s->names) {
        drv_sim_free(s);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    for (int32_t i = 0; i < w->n; i++) {
        const drv_jobspec *js = &w->jobs[i];
        for (int r = 0; r < DRV_NROLES; r++) {
            const drv_res *q = &js->role[r].req;
            if (js->role[r].max > 0 && !drv_res_fits(*q, biggest)) {
                char podres[96], big[96];
                drv_fail(d, DRV_EINVAL, "%s pod (%s) fits on no node of the cluster (largest: %s)",
                         drv_role_name(r), res_text(*q, podres, sizeof podres),
                         res_text(biggest, big, sizeof big));
                drv_sim_free(s);
                return job_fail(cfg->workload_file, js, d);
            }
        }
        /* Names are interned in workload order, as before jobs entered the state at their
         * submission, so that interned ids (and any order by them) do not depend on it. */
        int32_t *nm = &s->names[3 * (size_t)i];
        nm[0] = drv_strtab_intern(s->st.names, js->name);
        nm[1] = drv_strtab_intern(s->st.names, js->user);
        nm[2] = drv_strtab_intern(s->st.names, js->queue);
        if (nm[0] < 0 || nm[1] < 0 || nm[2] < 0) {
            drv_sim_free(s);
            return drv_fail(d, DRV_ENOMEM, "out of memory");
        }
        s->pod_base[i] = pod;
        for (int r = 0; r < DRV_NROLES; r++)
            pod += js->role[r].max > js->role[r].replicas ? js->role[r].max : js->role[r].replicas;
        s->res[i] = (drv_jobresult){js->submit, -1, -1, 0, 0, 0, 0};
    }
    warn_never_run(c, w, s->capacity); /* after the refusals: a refused run needs no warning */
    /* Job i's arrival has sequence number i; other events come after. Without a NaN
     * submission time (no order then) arrivals enter the heap one by one. */
    s->seq = (uint64_t)w->n;
    s->arrivals = drv_malloc(((size_t)w->n + 1) * sizeof *s->arrivals);
    arrival *order = drv_malloc(((size_t)w->n + 1) * sizeof *order);
    bool ordered = s->arrivals && order;
    for (int32_t i = 0; i < w->n && ordered; i++) {
        order[i] = (arrival){w->jobs[i].submit, i};
        ordered = !isnan(w->jobs[i].submit);
    }
    if (ordered) {
        qsort(order, (size_t)w->n, sizeof *order, by_submit);
        for (int32_t i = 0; i < w->n; i++)
            s->arrivals[i] = order[i].job;
        rc = push_next_arrival(s);
    } else {
        for (int32_t i = 0; i < w->n && !rc; i++)
            rc = push_seq(s, w->jobs[i].submit, (uint64_t)i, EV_ARRIVAL, i, 0);
        s->next_arrival = w->n;
    }
    drv_free(order);
    if (rc) {
        drv_sim_free(s);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    rc = drv_sched_new(prof, &s->sched, d);
    if (rc) {
        drv_sim_free(s);
        return rc;
    }
    s->gang = prof->gang;
    s->period = prof->period > 0 ? prof->period : 1.0;
    s->last_tick = -INFINITY;
    s->periodic =
        prof->nuse[DRV_PT_SCALE] + prof->nuse[DRV_PT_REALLOCATE] + prof->nuse[DRV_PT_MIGRATE] > 0;
    *out = s;
    return 0;
}

void drv_sim_free(drv_sim *s)
{
    if (!s)
        return;
    drv_sched_free(s->sched);
    drv_state_fini(&s->st);
    drv_decisions_fini(&s->dec);
    drv_free(s->heap);
    drv_free(s->arrivals);
    drv_pages_fini(&s->js_pages);
    drv_free(s->res);
    drv_free(s->pod_base);
    drv_free(s->names);
    drv_free(s->touched);
    drv_free(s->runl);
    drv_free(s->ticks);
    drv_free(s->pl);
    drv_free(s->pl_open);
    drv_free(s);
}

static int on_complete(drv_sim *s, int32_t job)
{
    drv_job *j = &s->st.jobs[job];
    advance(s, job);
    j->steps = j->steps_total;
    j->loss = drv_loss(family(s, job), j->steps);
    int rc = sample(s, job);
    if (rc)
        return rc;
    s->res[job].end = s->now;
    s->res[job].workers = j->bound[DRV_ROLE_WORKER];
    bool overcommitted = false;
    for (int32_t k = 0; k < j->pod_count; k++) {
        const drv_pod *p = &s->st.pods[j->pod_base + k];
        if (p->node >= 0 && s->st.nodes[p->node].cpu_limit > s->st.nodes[p->node].alloc.cpu)
            overcommitted = true;
        sim_unbind(s, j->pod_base + k);
    }
    set_phase(s, job, DRV_JOB_DONE);
    j->end = s->now;
    s->live--;
    s->ndone++;
    s->res[job].restarts = j->restarts;
    s->res[job].migrations = j->migrations;
    s->res[job].preemptions = j->preemptions;
    /* Nothing reads a finished job again: its result row is written, a STARTED or COMPLETE
     * event still in the heap is stale (checked below before the job is looked at), and
     * plugins key what they keep by job id and drop it when the job leaves the live set. */
    rc = drv_state_release_job(&s->st, job);
    if (rc)
        return rc;
    drv_pages_release(&s->js_pages, (size_t)job, 1);
    if (s->cfg.check) { /* checked runs (tests, --check): a stale read faults at once */
        drv_pages_flush(&s->st.job_pages);
        drv_pages_flush(&s->st.pod_pages);
        drv_pages_flush(&s->js_pages);
    }
    /* Freed capacity speeds up nobody by itself, but co-located jobs' CPU shares change when
     * limits were overcommitted on a node the job left: then recompute rates. */
    for (int32_t k = 0; overcommitted && k < s->nrun; k++)
        if ((rc = reschedule(s, s->runl[k])) != 0) /* advances the job if its rate changes */
            return rc;
    return request_cycle(s);
}

/* Enters job i into the state at its submission (drv_state_fill_job), from its workload entry:
 * until then it is a blank placeholder that costs no memory. */
static int fill_job(drv_sim *s, int32_t i)
{
    if (drv_state_job_filled(&s->st, i)) /* entered early: drv_sim_enter_job */
        return 0;
    const drv_jobspec *js = &s->wl->jobs[i];
    const drv_catalogue *cat = s->cat;
    const drv_sim_config *cfg = &s->cfg;
    drv_job t;
    memset(&t, 0, sizeof t);
    t.name = s->names[3 * (size_t)i];
    t.user = s->names[3 * (size_t)i + 1];
    t.queue = s->names[3 * (size_t)i + 2];
    t.priority = js->priority;
    t.user_priority = js->user_priority;
    t.model = js->model;
    t.calib_app = cfg->calib ? js->calib_app : 0;
    t.batch = (int32_t)lround(js->batch); /* whole in every trace */
    t.batch_min = js->batch_max > 0 ? (int32_t)lround(js->batch_min) : t.batch;
    t.batch_max = js->batch_max > 0 ? (int32_t)lround(js->batch_max) : t.batch;
    t.submit = js->submit;
    memcpy(t.role, js->role, sizeof t.role);
    t.phase = DRV_JOB_FUTURE;
    const drv_family *f = &cat->v[js->model];
    double k = drv_steps_to_loss(f, js->target_loss);
    if (js->max_steps > 0 && js->max_steps < k)
        k = js->max_steps;
    t.steps_total = isfinite(k) ? k : 1e12;
    t.loss = drv_loss(f, 0);
    int rc = drv_state_fill_job(&s->st, i, s->pod_base[i], &t);
    if (rc)
        return rc;
    s->js[i].runpos = -1;
    s->js[i].owe_t = INFINITY;
    return 0;
}

static void report_progress(const drv_sim *s)
{
    drv_progress p = {s->ndone, s->st.njobs, s->now, s->events};
    s->cfg.progress(s->cfg.progress_arg, &p);
}

/* Processes events with time < until (and <= the horizon), in order. */
static int run_events(drv_sim *s, double until, drv_diag *d)
{
    int rc = 0;
    double horizon = s->cluster->timing.horizon;
    s->quiet = false; /* the caller may have looked at or changed the state in between */
    while (s->nheap > 0 && !rc) {
        if (s->heap[0].t >= until)
            break;
        event e = pop_event(s);
        if (e.t > horizon)
            break;
        integrate(s, e.t);
        s->now = e.t;
        s->events++;
        switch (e.kind) {
        case EV_ARRIVAL: {
            rc = push_next_arrival(s);
            if (!rc)
                rc = fill_job(s, e.job);
            if (rc)
                break;
            disturb(s);
            set_phase(s, e.job, DRV_JOB_PENDING);
            advance(s, e.job);
            s->live++;
            rc = request_cycle(s);
            break;
        }
        case EV_CYCLE:
            rc = run_cycle(s, d);
            if (rc)
                return rc;
            break;
        case EV_STARTED: {
            if (drv_state_job_released(&s->st, e.job))
                break; /* stale: the job finished */
            drv_job *j = &s->st.jobs[e.job];
            if (e.gen != s->js[e.job].gen)
                break;
            if (!s->blind) /* else the last cycle, quiet, would stay so (docs/cycle.md) */
                disturb(s);
            advance(s, e.job); /* not running yet: anchors at now, no progress */
            set_phase(s, e.job, DRV_JOB_RUNNING);
            s->js[e.job].rate = 0;
            if (j->start < 0) {
                j->start = s->now;
                s->res[e.job].start = s->now;
            }
            rc = reschedule(s, e.job);
            if (!rc && s->periodic)
                rc = sample(s, e.job);
            break;
        }
        case EV_COMPLETE:
            if (drv_state_job_released(&s->st, e.job) || e.gen != s->js[e.job].gen ||
                s->st.jobs[e.job].phase != DRV_JOB_RUNNING)
                break;
            disturb(s);
            rc = on_complete(s, e.job);
            break;
        default:
            break;
        }
        if (!rc)
            rc = record_tick(s);
        if (!rc && (s->pl_failed || s->sync_failed))
            rc = DRV_ENOMEM;
        if (s->cfg.progress && s->events % DRV_PROGRESS_EVERY == 0)
            report_progress(s);
    }
    /* The state the caller sees is current: every running job's samples drawn, and its
     * progress as of the last periodic cycle when nothing moved it since. */
    for (int32_t k = 0; !rc && k < s->nrun; k++) {
        int32_t job = s->runl[k];
        rc = sync(s, job);
        if (s->periodic && s->last_tick > s->js[job].upd_t) {
            double now = s->now;
            s->now = s->last_tick;
            progress_at(s, job);
            s->now = now;
        }
    }
    if (s->cfg.progress)
        report_progress(s);
    if (rc && !d->msg[0])
        drv_fail(d, rc, "simulation: %s", drv_strerror(rc));
    return rc;
}

int drv_sim_run_until(drv_sim *s, double t, drv_diag *d)
{
    return run_events(s, t, d);
}

int drv_sim_run(drv_sim *s, drv_diag *d)
{
    int rc = run_events(s, INFINITY, d);
    for (int32_t i = 0; i < s->st.njobs; i++) {
        if (drv_state_job_released(&s->st, i))
            continue; /* its row was written when it finished */
        const drv_job *j = &s->st.jobs[i];
        s->res[i].restarts = j->restarts;
        s->res[i].migrations = j->migrations;
        s->res[i].preemptions = j->preemptions;
    }
    return rc;
}

/* ---- results ------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double pct(const double *v, int32_t n, double p)
{
    if (n == 0)
        return NAN;
    int32_t k = (int32_t)ceil(p / 100.0 * n) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

void drv_sim_summary(const drv_sim *s, drv_summary *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->policy, sizeof o->policy, "%s", drv_sched_profile(s->sched)->name);
    o->jobs = s->wl->n;
    double *jct = drv_calloc((size_t)s->wl->n + 1, sizeof *jct);
    double first = INFINITY, last = 0, wait = 0;
    int32_t started = 0;
    for (int32_t i = 0; i < s->wl->n; i++) {
        const drv_jobresult *r = &s->res[i];
        if (r->submit < first)
            first = r->submit;
        if (r->start >= 0) {
            wait += r->start - r->submit;
            started++;
        }
        if (r->end >= 0) {
            if (jct)
                jct[o->done] = r->end - r->submit;
            o->done++;
            if (r->end > last)
                last = r->end;
        }
    }
    if (jct && o->done > 0) {
        double sum = 0;
        for (int32_t i = 0; i < o->done; i++)
            sum += jct[i];
        qsort(jct, (size_t)o->done, sizeof *jct, cmp_double);
        o->avg_jct = sum / o->done;
        o->p50_jct = pct(jct, o->done, 50);
        o->p95_jct = pct(jct, o->done, 95);
        o->p99_jct = pct(jct, o->done, 99);
    } else {
        o->avg_jct = o->p50_jct = o->p95_jct = o->p99_jct = NAN;
    }
    drv_free(jct);
    o->makespan = o->done > 0 ? last - first : NAN;
    o->avg_wait = started ? wait / started : NAN;
    /* Utilisation over the makespan window; unfinished runs use the time the run stopped. */
    double span = (o->done == o->jobs ? last : s->last_t) - (isfinite(first) ? first : 0);
    if (span > 0 && s->capacity.cpu > 0) {
        o->cpu_util = s->area_cpu_used / (span * (double)s->capacity.cpu);
        o->cpu_useful = s->area_cpu_useful / (span * (double)s->capacity.cpu);
        o->cpu_wasted = o->cpu_util - o->cpu_useful;
    }
    if (span > 0 && s->capacity.gpu > 0) {
        o->gpu_util = s->area_gpu_used / (span * (double)s->capacity.gpu);
        o->gpu_useful = s->area_gpu_useful / (span * (double)s->capacity.gpu);
        o->gpu_wasted = o->gpu_util - o->gpu_useful;
    }
    o->stuck = o->jobs - o->done;
    o->stuck_cpu = s->capacity.cpu > 0 ? (double)s->held_wasted.cpu / (double)s->capacity.cpu : 0;
    o->end = s->last_t;
    o->preemptions = s->preemptions;
    o->migrations = s->migrations;
    o->restarts = s->restarts;
    o->scales = s->scales;
    o->resizes = s->resizes;
    o->cycles = s->cycles;
    o->skipped = s->skipped;
    o->events = s->events;
    o->decisions = s->decisions;
}

const drv_jobresult *drv_sim_jobs(const drv_sim *s, int32_t *n)
{
    *n = s->wl->n;
    return s->res;
}

const drv_tick *drv_sim_ticks(const drv_sim *s, int32_t *n)
{
    *n = s->nticks;
    return s->ticks;
}

const drv_placement *drv_sim_placements(const drv_sim *s, int32_t *n)
{
    static const drv_placement none[1];
    *n = s->npl;
    if (!s->cfg.placements)
        return NULL;
    return s->pl ? s->pl : none;
}

int drv_sim_enter_job(drv_sim *s, int32_t job)
{
    if (job < 0 || job >= s->wl->n)
        return DRV_EINVAL;
    return fill_job(s, job);
}

const drv_workload *drv_sim_workload(const drv_sim *s)
{
    return s->wl;
}

const drv_state *drv_sim_state(const drv_sim *s)
{
    return &s->st;
}

const char *drv_sim_policy(const drv_sim *s)
{
    return drv_sched_profile(s->sched)->name;
}
