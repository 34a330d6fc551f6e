/*
 * sim_metrics.c - what a run measures: resource-seconds held by complete gangs (useful) and by
 * incomplete ones (wasted), integrated between events; the cluster's time series as a step
 * function; the placement log behind the Gantt chart; and the summary (JCT percentiles,
 * makespan, utilisation; per queue and fairness from sim_queues.c) drv_sim_summary reports.
 * On a cluster with GPU types it also integrates the GPUs held per type (issue 27): a type's
 * utilisation is its GPU-seconds held over its GPUs x the window, so the types' utilisations
 * weighted by their GPUs sum to the cluster's.
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sim_integrate(drv_sim *s, double t)
{
    double dt = t - s->last_t;
    if (dt > 0) {
        drv_res used = drv_res_add(s->held_useful, s->held_wasted);
        s->area_cpu_used += (double)used.cpu * dt;
        s->area_cpu_useful += (double)s->held_useful.cpu * dt;
        s->area_gpu_used += (double)used.gpu * dt;
        s->area_gpu_useful += (double)s->held_useful.gpu * dt;
        for (int32_t k = 0; k < s->ngtypes; k++)
            s->gtype_area[k] += (double)s->gtype_held[k] * dt;
        if (s->qidx)
            sim_queues_integrate(s, dt);
    }
    s->last_t = t;
}

int sim_gpu_types_init(drv_sim *s, drv_diag *d)
{
    if (!s->cluster->gpu_types)
        return 0;
    for (int32_t n = 0; n < s->st.nnodes; n++) {
        int64_t gpus = s->cluster->nodes[n].alloc.gpu;
        int32_t ty = drv_node_gpu_type(&s->st, n), k = 0;
        if (gpus <= 0)
            continue;
        while (k < s->ngtypes && s->gtype_id[k] != ty)
            k++;
        if (k == DRV_MAX_GPU_TYPES)
            return drv_fail(d, DRV_EINVAL, "cluster: node %s: more than %d GPU types",
                            s->cluster->nodes[n].name, DRV_MAX_GPU_TYPES);
        if (k == s->ngtypes)
            s->gtype_id[s->ngtypes++] = ty;
        s->gtype_cap[k] += gpus;
    }
    return 0;
}

/* The index of node's GPU type, or -1 (a node without GPUs). O(types). */
static int32_t node_gtype(const drv_sim *s, int32_t node)
{
    int32_t ty = drv_node_gpu_type(&s->st, node);
    for (int32_t k = 0; k < s->ngtypes; k++)
        if (s->gtype_id[k] == ty)
            return k;
    return -1;
}

void sim_gpu_types_hold(drv_sim *s, int32_t job, int32_t node, int64_t gpu, int sign)
{
    if (s->ngtypes == 0 || gpu <= 0)
        return;
    int32_t k = node_gtype(s, node);
    if (k < 0)
        return;
    s->gtype_held[k] += sign * gpu;
    if (sign > 0)
        s->res[job].gpu_type = k + 1;
}

const char *drv_sim_gpu_type_name(const drv_sim *s, int32_t k)
{
    if (k < 1 || k > s->ngtypes)
        return NULL;
    return s->gtype_id[k - 1] > 0 ? drv_strtab_str(s->st.names, s->gtype_id[k - 1]) : "-";
}

/* The per-type block of the summary over span seconds (types only). */
static void gpu_types_summary(const drv_sim *s, drv_summary *o, double span)
{
    o->ngpu_types = s->ngtypes;
    for (int32_t k = 0; k < s->ngtypes; k++) {
        drv_gpu_type_summary *t = &o->gpu_type[k];
        snprintf(t->name, sizeof t->name, "%s", drv_sim_gpu_type_name(s, k + 1));
        t->gpus = s->gtype_cap[k];
        t->util = span > 0 ? s->gtype_area[k] / (span * (double)t->gpus) : 0;
    }
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
int sim_record_tick(drv_sim *s)
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

/* Opens a placement interval for pod on node (placement log only). */
void sim_log_bind(drv_sim *s, int32_t pod, int32_t node)
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

void sim_log_unbind(drv_sim *s, int32_t pod)
{
    if (pod < s->cap_open && s->pl_open[pod] >= 0) {
        s->pl[s->pl_open[pod]].end = s->now;
        s->pl_open[pod] = -1;
    }
}

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

/* Job i's queueing delay and JCT (NaN: never started, not finished), and whether it was
 * submitted at all (a streamed run does not read jobs past its horizon). A streamed run keeps
 * only these two numbers of a finished job (finrec); each is the same subtraction either way. */
static bool job_outcome(const drv_sim *s, int32_t i, double *wait, double *jct)
{
    if (s->stream.src && drv_state_job_released(&s->st, i)) {
        *wait = s->stream.fin[i].wait;
        *jct = s->stream.fin[i].jct;
        return true;
    }
    if (s->stream.src && i >= s->next_arrival)
        return false;
    const drv_jobresult *r = &s->res[i];
    *wait = r->start >= 0 ? r->start - r->submit : NAN;
    *jct = r->end >= 0 ? r->end - r->submit : NAN;
    return true;
}

void drv_sim_summary(const drv_sim *s, drv_summary *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->policy, sizeof o->policy, "%s", s->policy);
    o->jobs = s->njobs;
    double *jct = drv_calloc((size_t)s->njobs + 1, sizeof *jct);
    double first = INFINITY, last = 0, wait = 0;
    int32_t started = 0;
    for (int32_t i = 0; !s->stream.src && i < s->njobs; i++) {
        if (s->res[i].submit < first)
            first = s->res[i].submit;
        if (s->res[i].end > last)
            last = s->res[i].end;
    }
    if (s->stream.src) { /* jobs are read in order of submission */
        first = s->next_arrival > 0 ? s->stream.first_submit : INFINITY;
        last = s->stream.last_end;
    }
    for (int32_t i = 0; i < s->njobs; i++) {
        double w, c;
        if (!job_outcome(s, i, &w, &c))
            continue;
        if (!isnan(w)) {
            wait += w;
            started++;
        }
        if (!isnan(c)) {
            if (jct)
                jct[o->done] = c;
            o->done++;
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
    sim_queues_summary(s, o, span);
    gpu_types_summary(s, o, span);
    o->stuck = o->jobs - o->done;
    o->stuck_cpu = s->capacity.cpu > 0 ? (double)s->held_wasted.cpu / (double)s->capacity.cpu : 0;
    o->end = s->last_t;
    o->interrupted = s->interrupted;
    o->preemptions = s->preemptions;
    o->lost_modelled = s->lost_modelled;
    o->lost_gpu_h = s->lost_gpu_s / 3600;
    o->lost_cpu_h = s->lost_cpu_s / 3600;
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
    *n = s->stream.src ? 0 : s->njobs;
    return s->stream.src ? NULL : s->res;
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
