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
 * or phase changes, at the end of a run - at their own times (sync); likewise a running job's
 * steps and attained service are brought to now only where a plugin reads them
 * (drv_ctx_job_now). Progress is computed from
 * an anchor moved only by events, never by sampling, so a run that skips quiet ticks and one
 * that runs every tick (drv_sim_config.tick) give every job the same numbers
 * (test_event_driven_equals_ticking in tests/sim/test_sim.c).
 *
 * On request (drv_sim_config.placements) every bind opens and every unbind closes an interval
 * in a placement log, which the per-node Gantt chart is drawn from; off, it costs one branch per
 * bind. A progress callback, if given, is called every DRV_PROGRESS_EVERY events; the simulator
 * itself never reads a clock, so progress reporting cannot change a run.
 *
 * Jobs come from an in-memory workload (drv_sim_new: every existing path) or, streamed, from a
 * job source read as the clock reaches each submission (drv_sim_new_stream, jobsource.h). Both
 * enter job i with sequence number i when job i-1 is submitted, so they pop events in the same
 * order and give the same run. A streamed run keeps job specs in slots reused as jobs finish,
 * its other per-job arrays in released-as-they-finish memory (pages.h), and of a finished job
 * only 16 bytes of its summary (finrec). A page goes back when every job on it finished, so
 * that memory follows the jobs submitted within the longest job's lifetime, not the trace
 * (docs/performance.md, item 22, with what still grows with the trace: the cycle's per-id
 * arrays in src/core).
 *
 * This file holds the lifecycle, the arrivals and the event loop; sim_events.c the event heap
 * and its order (and a cycle requested), sim_progress.c what a job does over time, sim_apply.c
 * cycles and their decisions, sim_metrics.c what a run measures, sim_queues.c the cluster
 * file's queues (each job's queue, per-queue results, fairness).
 */
#include "sim_int.h"
#include "topology_read.h"

#include "drover/usage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arrivals ---------------------------------------------------------------------------- */

/* Arrivals enter the heap one at a time, in (submit, job) order: job i's with sequence number
 * i, what it had when every arrival was pushed at the start, so events pop in the same order
 * and the heap holds the jobs in flight, not the trace. */
static int pull_arrival(drv_sim *s, drv_diag *d);

static int push_next_arrival(drv_sim *s, drv_diag *d)
{
    if (s->stream.src)
        return pull_arrival(s, d);
    if (s->next_arrival >= s->wl->n)
        return 0;
    int32_t i = s->arrivals[s->next_arrival++];
    return sim_push_seq(s, s->wl->jobs[i].submit, (uint64_t)i, EV_ARRIVAL, i, 0);
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

/* The cluster's nodes into the state; *biggest receives the per-dimension largest node. */
static int add_nodes(drv_sim *s, const drv_cluster_spec *c, drv_res *biggest, drv_diag *d)
{
    int rc = 0;
    for (int32_t i = 0; i < c->n && !rc; i++) {
        rc = drv_state_add_node(&s->st, c->nodes[i].name, c->nodes[i].alloc, c->nodes[i].zone,
                                c->nodes[i].rack, NULL);
        s->capacity = res_add_sat(s->capacity, c->nodes[i].alloc);
        if (c->nodes[i].alloc.cpu > biggest->cpu)
            biggest->cpu = c->nodes[i].alloc.cpu;
        if (c->nodes[i].alloc.mem > biggest->mem)
            biggest->mem = c->nodes[i].alloc.mem;
        if (c->nodes[i].alloc.gpu > biggest->gpu)
            biggest->gpu = c->nodes[i].alloc.gpu;
    }
    return rc ? drv_fail(d, rc, "cluster: %s", drv_strerror(rc)) : 0;
}

/* A string of the cluster file's table interned in the state's, or -1. */
static int32_t reintern(drv_state *st, const drv_strtab *from, int32_t id)
{
    const char *str = drv_strtab_str(from, id);
    return str ? drv_strtab_intern(st->names, str) : -1;
}

/* Node labels, taints and unschedulable flags, and the workload's constraints (w, NULL in a
 * streamed run: its jobs have none), into the state (after the jobs' names: interned ids of
 * runs without constraints stay as they were). Warns
 * once about jobs that ask for nodes no node satisfies: they never run, like jobs bigger than
 * the cluster. */
static int add_constraints(drv_sim *s, const drv_cluster_spec *c, const drv_workload *w,
                           drv_diag *d)
{
    drv_state *st = &s->st;
    /* Only a cluster with GPU types interns the label's key: others keep their ids. */
    if (c->gpu_types && drv_state_set_gpu_type_label(st, DRV_GPU_TYPE_LABEL) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    int trc = drv_sim_topology(st, c, w, s->topo_map, d);
    if (trc)
        return trc;
    for (int32_t i = 0; i < c->n; i++) {
        const drv_nodespec *ns = &c->nodes[i];
        if (ns->unschedulable)
            drv_state_set_node(st, i, ns->alloc, false);
        if (ns->node_class <= 0)
            continue;
        const drv_nodeclass *k = &c->classes[ns->node_class];
        drv_label l[64];
        drv_taint t[32];
        if (k->nlabels > 64 || k->ntaints > 32)
            return drv_fail(d, DRV_EINVAL, "cluster: node %s: too many labels or taints", ns->name);
        int32_t ok = 0; /* negative when an intern ran out of memory */
        for (int32_t j = 0; j < k->nlabels; j++) {
            ok |= l[j].key = reintern(st, c->names, k->labels[j].key);
            ok |= l[j].value = reintern(st, c->names, k->labels[j].value);
        }
        for (int32_t j = 0; j < k->ntaints; j++) {
            ok |= t[j].key = reintern(st, c->names, k->taints[j].key);
            ok |= t[j].value = reintern(st, c->names, k->taints[j].value);
            t[j].effect = k->taints[j].effect;
        }
        if (ok < 0)
            return drv_fail(d, DRV_ENOMEM, "out of memory");
        int rc = drv_state_set_node_meta(st, i, l, k->nlabels, t, k->ntaints);
        if (rc)
            return drv_fail(d, rc, "cluster: node %s: %s", ns->name, drv_strerror(rc));
    }
    int32_t ncons = w ? w->ncons : 0;
    s->cons_map = drv_calloc((size_t)ncons + 1, sizeof *s->cons_map);
    if (!s->cons_map)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int32_t k = 1; k < ncons; k++) {
        int rc = drv_state_add_constraint(st, &w->cons[k], w->names, &s->cons_map[k]);
        if (rc)
            return drv_fail(d, rc, "workload: node constraints: %s", drv_strerror(rc));
    }
    /* Per class, the largest schedulable node in each dimension: a role is judged against
     * classes, O(roles · classes), not against every node. */
    int32_t ncls = st->nclasses > 0 ? st->nclasses : 1, never = 0, first = -1;
    drv_res *big = drv_calloc((size_t)ncls, sizeof *big);
    if (!big)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int32_t n = 0; n < st->nnodes; n++)
        if (st->nodes[n].schedulable)
            big[st->nodes[n].node_class] =
                drv_res_max(big[st->nodes[n].node_class], st->nodes[n].alloc);
    for (int32_t i = 0; ncons > 1 && i < w->n; i++) {
        bool ok = true;
        for (int r = 0; r < DRV_NROLES && ok; r++) {
            const drv_jobspec *js = &w->jobs[i];
            if (js->cons[r] == 0 || (js->role[r].replicas == 0 && js->role[r].min == 0))
                continue;
            ok = false;
            for (int32_t k = 0; k < ncls && !ok; k++)
                ok = drv_res_fits(js->role[r].req, big[k]) &&
                     drv_constraint_fits(st, s->cons_map[js->cons[r]], k, NULL);
        }
        if (!ok && never++ == 0)
            first = i;
    }
    drv_free(big);
    if (never) {
        /* A GPU type no node has, when that is what the first one asks for: named. */
        int32_t want = 0;
        for (int r = 0; r < DRV_NROLES && !want; r++)
            if ((want = drv_constraint_gpu_type(st, s->cons_map[w->jobs[first].cons[r]])) &&
                drv_state_has_gpu_type(st, want))
                want = 0;
        drv_log(DRV_LOG_WARN,
                "%d job(s) ask for nodes (nodeSelector, affinity, tolerations) that no node of the "
                "cluster satisfies and will not run, the first %s%s%s%s",
                never, w->jobs[first].name, want ? " (it requires GPU type " : "",
                want ? drv_strtab_str(st->names, want) : "", want ? ", which no node has)" : "");
    }
    return 0;
}

/* Pod slots of a job: per role, the larger of its replicas and its maximum. */
static int64_t job_slots(const drv_jobspec *js)
{
    int64_t n = 0;
    for (int r = 0; r < DRV_NROLES; r++)
        n += js->role[r].max > js->role[r].replicas ? js->role[r].max : js->role[r].replicas;
    return n;
}

/* A per-job array of n entries of elem bytes: on the heap, or in a streamed run in pages
 * released as the jobs finish (pages.h). */
static void *job_array(drv_sim *s, drv_pages *p, size_t elem, int32_t n)
{
    if (!s->stream.src)
        return drv_calloc((size_t)n + 1, elem);
    return drv_pages_init(p, elem, (size_t)n + 1) == 0 ? p->base : NULL;
}

/* Jobs, their pods and their simulator state live in released-as-they-finish arrays (pages.h):
 * memory follows the jobs not finished, plus one result row per job (and, in calibrated runs,
 * one record of its calibration, calib.h); a streamed run keeps the rows there too. */
static int reserve_jobs(drv_sim *s, int32_t n, int64_t npods, bool check, drv_diag *d)
{
    sim_stream *x = &s->stream;
    if (npods > INT32_MAX || drv_state_reserve(&s->st, n, (int32_t)npods) != 0 ||
        drv_pages_init(&s->js_pages, sizeof *s->js, (size_t)n) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    s->js = (jobsim *)s->js_pages.base;
    /* checked runs (tests, --check): a read of a finished job faults */
    s->st.job_pages.guard = s->st.pod_pages.guard = s->js_pages.guard = check;
    s->res = job_array(s, &x->res_pages, sizeof *s->res, n);
    s->runl = drv_calloc((size_t)n + 1, sizeof *s->runl);
    s->pod_base = job_array(s, &x->podb_pages, sizeof *s->pod_base, n);
    s->names = job_array(s, &x->names_pages, sizeof *s->names, n);
    if (x->src) {
        x->slot = job_array(s, &x->slot_pages, sizeof *x->slot, n);
        x->fin = drv_calloc((size_t)n + 1, sizeof *x->fin);
        x->own_name = drv_calloc((size_t)n / 64 + 1, sizeof *x->own_name);
        x->slot_pages.guard = x->res_pages.guard = x->podb_pages.guard = x->names_pages.guard =
            check;
    }
    if (!s->res || !s->runl || !s->pod_base || !s->names ||
        (x->src && (!x->slot || !x->fin || !x->own_name)) ||
        (s->cfg.calib &&
         drv_calib_jobs_init(&s->model, s->cfg.policy_calib ? s->cfg.policy_calib : s->cfg.calib,
                             n) != 0))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    return 0;
}

/* Job i, before it is submitted: that each of its pods fits some node, its interned names,
 * its first pod slot (slots are laid out in job order) and its result row. */
static int index_job(drv_sim *s, int32_t i, const drv_jobspec *js, int32_t *pod, drv_diag *d)
{
    for (int r = 0; r < DRV_NROLES; r++) {
        const drv_res *q = &js->role[r].req;
        if (js->role[r].max > 0 && !drv_res_fits(*q, s->biggest)) {
            char podres[96], big[96];
            drv_fail(d, DRV_EINVAL, "%s pod (%s) fits on no node of the cluster (largest: %s)",
                     drv_role_name(r), res_text(*q, podres, sizeof podres),
                     res_text(s->biggest, big, sizeof big));
            return job_fail(s->wl ? s->cfg.workload_file : s->stream.src->file, js, d);
        }
    }
    s->lost_modelled |= js->checkpoint_s > 0; /* (then the summary shows the work lost) */
    /* Names are interned in workload order, as before jobs entered the state at their
     * submission, so that interned ids (and any order by them) do not depend on it. */
    job_names *nm = &s->names[i];
    int32_t fresh = drv_strtab_count(s->st.names);
    nm->name = drv_strtab_intern(s->st.names, js->name);
    if (s->stream.src && nm->name == fresh) /* its own: forgotten when it finishes */
        s->stream.own_name[i / 64] |= (uint64_t)1 << (i % 64);
    nm->user = drv_strtab_intern(s->st.names, js->user);
    nm->queue = drv_strtab_intern(s->st.names, js->queue);
    if (nm->name < 0 || nm->user < 0 || nm->queue < 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    s->pod_base[i] = *pod;
    *pod += (int32_t)job_slots(js);
    s->res[i] = (drv_jobresult){js->submit, -1, -1, 0, 0, 0, 0, 0};
    return 0;
}

static int index_jobs(drv_sim *s, const drv_workload *w, drv_diag *d)
{
    int32_t pod = 0;
    for (int32_t i = 0; i < w->n; i++) {
        int rc = index_job(s, i, &w->jobs[i], &pod, d);
        if (rc)
            return rc;
    }
    return 0;
}

/* A streamed run's next job (jobsource.h): read into its slot, checked, indexed and queued
 * with sequence number i, as queue_arrivals would have. Called when the job before it is
 * submitted: one job of lookahead. */
static int pull_arrival(drv_sim *s, drv_diag *d)
{
    sim_stream *x = &s->stream;
    int32_t i = s->next_arrival;
    if (i >= s->njobs)
        return 0;
    if (x->nfree == 0) { /* a new slot, and room to give it back (retire_job) */
        if (drv_grow(&x->free_slot, sizeof *x->free_slot, &x->cap_free, x->nspec + 1) != 0 ||
            drv_grow(&x->spec, sizeof *x->spec, &x->cap_spec, x->nspec + 1) != 0)
            return drv_fail(d, DRV_ENOMEM, "out of memory");
        x->free_slot[x->nfree++] = x->nspec++;
    }
    x->slot[i] = x->free_slot[--x->nfree];
    drv_jobspec *js = &x->spec[x->slot[i]];
    int rc = x->src->ops->next(x->src, js, d);
    if (rc < 0)
        return rc;
    if (rc == 0)
        return drv_fail(d, DRV_EINVAL, "%s: %d jobs announced, %d read",
                        x->src->file ? x->src->file : "job source", s->njobs, i);
    if (!(js->submit >= x->last_submit)) {
        drv_fail(d, DRV_EINVAL,
                 "submitted at %.17g s, before the job read before it (%.17g s): jobs must be in "
                 "order of submission",
                 js->submit, x->last_submit);
        return job_fail(x->src->file, js, d);
    }
    for (int r = 0; r < DRV_NROLES; r++)
        if (js->cons[r] != 0) {
            drv_fail(d, DRV_EINVAL, "node constraints are not supported in a streamed run");
            return job_fail(x->src->file, js, d);
        }
    int32_t pod = (int32_t)x->next_pod;
    if (x->next_pod + job_slots(js) > s->st.npods)
        return drv_fail(d, DRV_EINVAL, "%s: more pods than announced (%lld)",
                        x->src->file ? x->src->file : "job source", (long long)s->st.npods);
    if ((rc = index_job(s, i, js, &pod, d)) != 0)
        return rc;
    x->next_pod = pod;
    if (i == 0)
        x->first_submit = js->submit;
    x->last_submit = js->submit;
    s->next_arrival++;
    return sim_push_seq(s, js->submit, (uint64_t)i, EV_ARRIVAL, i, 0)
               ? drv_fail(d, DRV_ENOMEM, "out of memory")
               : 0;
}

/* A streamed run forgets a finished job whose state is released: its row goes to the caller
 * (cfg.finished, already told), what the summary needs to fin, its spec's slot to the next job
 * read, its own name out of the string table, and its row, names and first pod slot back to the
 * system with their pages. */
static void retire_job(drv_sim *s, int32_t job)
{
    sim_stream *x = &s->stream;
    const drv_jobresult *r = &s->res[job];
    x->fin[job] = (finrec){r->end - r->submit, r->start >= 0 ? r->start - r->submit : NAN};
    if (r->end > x->last_end)
        x->last_end = r->end;
    x->free_slot[x->nfree++] = x->slot[job];
    if ((x->own_name[job / 64] >> (job % 64)) & 1) /* a name nothing will ask for again */
        drv_strtab_forget(s->st.names, s->names[job].name);
    drv_pages_release(&x->slot_pages, (size_t)job, 1);
    drv_pages_release(&x->res_pages, (size_t)job, 1);
    drv_pages_release(&x->names_pages, (size_t)job, 1);
    drv_pages_release(&x->podb_pages, (size_t)job, 1);
}

/* Job i's arrival has sequence number i; other events come after. Without a NaN submission
 * time (no order then) arrivals enter the heap one by one, in (submit, id) order. */
static int queue_arrivals(drv_sim *s, const drv_workload *w, drv_diag *d)
{
    int rc = 0;
    if (!w) { /* streamed: the first job is read now, each next one at its predecessor's turn */
        s->seq = (uint64_t)s->njobs;
        return push_next_arrival(s, d);
    }
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
        rc = push_next_arrival(s, d);
    } else {
        for (int32_t i = 0; i < w->n && !rc; i++)
            rc = sim_push_seq(s, w->jobs[i].submit, (uint64_t)i, EV_ARRIVAL, i, 0);
        s->next_arrival = w->n;
    }
    drv_free(order);
    return rc ? drv_fail(d, DRV_ENOMEM, "out of memory") : 0;
}

/* Pod slots of every job of a workload. */
static int64_t workload_pods(const drv_workload *w)
{
    int64_t npods = 0;
    for (int32_t i = 0; i < w->n; i++)
        npods += job_slots(&w->jobs[i]);
    return npods;
}

/* A run of the jobs of w, or (w NULL) of those src gives. */
static int sim_create(const drv_cluster_spec *c, const drv_workload *w, drv_jobsource *src,
                      const drv_catalogue *cat, const drv_profile *prof, const drv_sim_config *cfg,
                      drv_sim **out, drv_diag *d)
{
    drv_sim *s = drv_calloc(1, sizeof *s);
    if (!s)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    s->cluster = c;
    s->wl = w;
    s->stream.src = src;
    s->stream.last_submit = -INFINITY;
    s->njobs = w ? w->n : src->jobs;
    s->cat = cat;
    s->cfg = *cfg;
    drv_decisions_init(&s->dec);
    int rc = drv_state_init(&s->st);
    if (rc) {
        drv_sim_free(s);
        return drv_fail(d, rc, "out of memory");
    }
    if ((rc = add_nodes(s, c, &s->biggest, d)) != 0 ||
        (rc = reserve_jobs(s, s->njobs, w ? workload_pods(w) : src->pods, cfg->check, d)) != 0 ||
        (w && (rc = index_jobs(s, w, d)) != 0) || (rc = add_constraints(s, c, w, d)) != 0 ||
        (rc = sim_check_calib_types(s, w, d)) != 0 || (rc = sim_gpu_types_init(s, d)) != 0 ||
        (rc = sim_add_queues(s, d)) != 0 ||
        (rc = drv_state_set_half_life(&s->st, prof->half_life)) != 0) {
        drv_sim_free(s);
        return rc;
    }
    if (w) /* after the refusals: a refused run needs no warning */
        warn_never_run(c, w, s->capacity);
    if ((rc = queue_arrivals(s, w, d)) != 0 || (rc = drv_sched_new(prof, &s->sched, d)) != 0) {
        drv_sim_free(s);
        return rc;
    }
    snprintf(s->policy, sizeof s->policy, "%s", prof->name);
    s->gang = prof->gang;
    s->period = prof->period > 0 ? prof->period : 1.0;
    s->last_tick = -INFINITY;
    s->periodic =
        prof->nuse[DRV_PT_SCALE] + prof->nuse[DRV_PT_REALLOCATE] + prof->nuse[DRV_PT_MIGRATE] > 0;
    *out = s;
    return 0;
}

int drv_sim_new(const drv_cluster_spec *c, const drv_workload *w, const drv_catalogue *cat,
                const drv_profile *prof, const drv_sim_config *cfg, drv_sim **out, drv_diag *d)
{
    return sim_create(c, w, NULL, cat, prof, cfg, out, d);
}

int drv_sim_new_stream(const drv_cluster_spec *c, drv_jobsource *src, const drv_catalogue *cat,
                       const drv_profile *prof, const drv_sim_config *cfg, drv_sim **out,
                       drv_diag *d)
{
    if (c->nqueues > 0)
        return drv_fail(d, DRV_EINVAL,
                        "%s: queues are not supported in a streamed run yet (run it in memory)",
                        c->queue_file);
    if (cfg->placements)
        return drv_fail(d, DRV_EINVAL, "the placement log is not kept in a streamed run");
    return sim_create(c, NULL, src, cat, prof, cfg, out, d);
}

void drv_sim_free(drv_sim *s)
{
    if (!s)
        return;
    drv_sched_free(s->sched);
    drv_state_fini(&s->st);
    drv_decisions_fini(&s->dec);
    drv_calib_jobs_fini(&s->model);
    drv_free(s->heap);
    sim_ghost_free(s);
    drv_free(s->arrivals);
    drv_free(s->cons_map);
    drv_free(s->qidx);
    drv_pages_fini(&s->js_pages);
    if (s->stream.src) { /* the per-job arrays are pages (job_array) */
        drv_pages_fini(&s->stream.slot_pages);
        drv_free(s->stream.spec);
        drv_free(s->stream.free_slot);
        drv_pages_fini(&s->stream.res_pages);
        drv_pages_fini(&s->stream.names_pages);
        drv_pages_fini(&s->stream.podb_pages);
        drv_free(s->stream.fin);
        drv_free(s->stream.own_name);
    } else {
        drv_free(s->res);
        drv_free(s->pod_base);
        drv_free(s->names);
    }
    drv_free(s->touched);
    drv_free(s->runl);
    drv_free(s->ticks);
    drv_free(s->pl);
    drv_free(s->pl_open);
    drv_free(s->node_of_name);
    drv_free(s);
}

static int on_complete(drv_sim *s, int32_t job)
{
    drv_job *j = &s->st.jobs[job];
    sim_advance(s, job);
    j->steps = j->steps_total;
    j->loss = drv_loss(sim_family(s, job), j->steps);
    int rc = sim_sample(s, job);
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
    sim_set_phase(s, job, DRV_JOB_DONE);
    j->end = s->now;
    s->live--;
    s->ndone++;
    s->res[job].restarts = j->restarts;
    s->res[job].migrations = j->migrations;
    s->res[job].preemptions = j->preemptions;
    if (s->cfg.finished)
        s->cfg.finished(s->cfg.finished_arg, job, sim_spec(s, job), &s->res[job]);
    /* Nothing reads a finished job again: its result row is written, a STARTED or COMPLETE
     * event still in the heap is stale (checked below before the job is looked at), and
     * plugins key what they keep by job id and drop it when the job leaves the live set. */
    rc = drv_state_release_job(&s->st, job);
    if (rc)
        return rc;
    drv_pages_release(&s->js_pages, (size_t)job, 1);
    if (s->stream.src)
        retire_job(s, job);
    if (s->cfg.check) { /* checked runs (tests, --check): a stale read faults at once */
        drv_pages_flush(&s->st.job_pages);
        drv_pages_flush(&s->st.pod_pages);
        drv_pages_flush(&s->js_pages);
        if (s->stream.src) {
            drv_pages_flush(&s->stream.slot_pages);
            drv_pages_flush(&s->stream.res_pages);
            drv_pages_flush(&s->stream.names_pages);
            drv_pages_flush(&s->stream.podb_pages);
        }
    }
    /* Freed capacity speeds up nobody by itself, but co-located jobs' CPU shares change when
     * limits were overcommitted on a node the job left: then recompute rates. */
    for (int32_t k = 0; overcommitted && k < s->nrun; k++)
        if ((rc = sim_reschedule(s, s->runl[k])) != 0) /* advances the job if its rate changes */
            return rc;
    return sim_request_cycle(s);
}

/* Enters job i into the state at its submission (drv_state_fill_job), from its workload entry:
 * until then it is a blank placeholder that costs no memory. */
static int fill_job(drv_sim *s, int32_t i)
{
    if (drv_state_job_filled(&s->st, i)) /* entered early: drv_sim_enter_job */
        return 0;
    const drv_jobspec *js = sim_spec(s, i);
    const drv_catalogue *cat = s->cat;
    const drv_sim_config *cfg = &s->cfg;
    drv_job t;
    memset(&t, 0, sizeof t);
    t.name = s->names[i].name;
    t.user = s->names[i].user;
    t.queue = s->qidx ? s->qidx[i] : 0; /* the default queue when the cluster declares none */
    t.priority = js->priority;
    t.min_runtime = js->min_runtime;
    t.user_priority = js->user_priority;
    t.model = js->model;
    t.submit = js->submit;
    memcpy(t.role, js->role, sizeof t.role);
    for (int r = 0; r < DRV_NROLES; r++)
        t.cons[r] = s->cons_map[js->cons[r]];
    t.topo_mode = js->topo_mode;
    t.topo_level = js->topo_mode ? s->topo_map[js->topo_level] : 0;
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
    if (cfg->calib) { /* its calibration, kept beside the state (calib.h) */
        drv_calib_job *m = &s->model.v[i];
        m->app = js->calib_app;
        m->batch = (int32_t)lround(js->batch); /* whole in every trace */
        m->batch_min = js->batch_max > 0 ? (int32_t)lround(js->batch_min) : m->batch;
        m->batch_max = js->batch_max > 0 ? (int32_t)lround(js->batch_max) : m->batch;
    }
    s->js[i].runpos = -1;
    s->js[i].owe_t = INFINITY;
    return 0;
}

static void report_progress(const drv_sim *s)
{
    drv_progress p = {s->ndone, s->st.njobs, s->now, s->events, s->cluster->timing.horizon};
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
        if (s->cfg.stop && atomic_load_explicit(s->cfg.stop, memory_order_relaxed)) {
            s->interrupted = true; /* as at the horizon: what is unfinished stays so */
            break;
        }
        event e = sim_pop_event(s);
        if (e.t > horizon)
            break;
        sim_integrate(s, e.t);
        if ((rc = drv_state_usage_advance(&s->st, e.t)) != 0) /* before anything changes at t */
            break;
        s->now = e.t;
        s->events++;
        switch (e.kind) {
        case EV_ARRIVAL: {
            rc = push_next_arrival(s, d);
            if (!rc)
                rc = fill_job(s, e.job);
            if (rc)
                break;
            disturb(s);
            sim_set_phase(s, e.job, DRV_JOB_PENDING);
            sim_advance(s, e.job);
            s->live++;
            rc = sim_start_running(s, e.job, d);
            if (!rc)
                rc = sim_request_cycle(s);
            break;
        }
        case EV_CYCLE:
            rc = sim_run_cycle(s, d);
            if (rc) /* an invariant broken says what; a failed push of the next tick does not */
                return d->msg[0] ? rc : drv_fail(d, rc, "simulation: %s", drv_strerror(rc));
            break;
        case EV_STARTED: {
            if (drv_state_job_released(&s->st, e.job))
                break; /* stale: the job finished */
            drv_job *j = &s->st.jobs[e.job];
            if (e.gen != s->js[e.job].gen)
                break;
            if (!s->blind) /* else the last cycle, quiet, would stay so (docs/cycle.md) */
                disturb(s);
            sim_advance(s, e.job); /* not running yet: anchors at now, no progress */
            sim_set_phase(s, e.job, DRV_JOB_RUNNING);
            s->js[e.job].rate = 0;
            if (s->res[e.job].start < 0) { /* (a job running at t0 has a negative start) */
                j->start = s->now;
                s->res[e.job].start = s->now;
            }
            rc = sim_reschedule(s, e.job);
            if (!rc && s->periodic)
                rc = sim_sample(s, e.job);
            break;
        }
        case EV_RELEASE: /* the oldest terminating pod is gone (sim_grace.c) */
            rc = sim_ghost_release(s);
            break;
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
        if (!rc && !s->stream.src) /* a streamed run keeps no O(trace) time series */
            rc = sim_record_tick(s);
        if (!rc && (s->pl_failed || s->sync_failed || s->ghost_failed))
            rc = DRV_ENOMEM;
        if (s->cfg.progress && s->events % DRV_PROGRESS_EVERY == 0)
            report_progress(s);
    }
    /* The state the caller sees is current: every running job's samples drawn, and its
     * progress as of the last periodic cycle when nothing moved it since. */
    for (int32_t k = 0; !rc && k < s->nrun; k++) {
        int32_t job = s->runl[k];
        rc = sim_sync(s, job);
        if (s->periodic && s->last_tick > s->js[job].upd_t) {
            double now = s->now;
            s->now = s->last_tick;
            sim_progress_at(s, job);
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
        if (drv_state_job_released(&s->st, i) || !drv_state_job_filled(&s->st, i))
            continue; /* its row was written when it finished, or it was never submitted */
        const drv_job *j = &s->st.jobs[i];
        s->res[i].restarts = j->restarts;
        s->res[i].migrations = j->migrations;
        s->res[i].preemptions = j->preemptions;
        if (s->cfg.finished)
            s->cfg.finished(s->cfg.finished_arg, i, sim_spec(s, i), &s->res[i]);
    }
    return rc;
}

int drv_sim_enter_job(drv_sim *s, int32_t job)
{
    if (job < 0 || job >= (s->wl ? s->wl->n : s->next_arrival) ||
        drv_state_job_released(&s->st, job))
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

const drv_calib_jobs *drv_sim_model(const drv_sim *s)
{
    return sim_model(s);
}

const char *drv_sim_policy(const drv_sim *s)
{
    return s->policy;
}
