/*
 * ctrl_cycle.c - one scheduling cycle of `drover run` and what follows it, on the scheduler
 * thread (ctrl_cycle.h; the cycle's own order of operations: docs/cycle.md).
 *
 *   1. drv_sched_cycle decides on a snapshot of the mirror's state;
 *   2. every decision is applied to the state as assumed (a binding holds its node's room from
 *      now), and sent through the binder: deletions and CPU resizes first (ctrl_resize.c),
 *      then bindings gang by gang;
 *   3. reconcile: each job's lifecycle steps (ctrl_lifecycle.c: failed pods restarted,
 *      finished jobs ended, conditions), pods above a job's targets go, the
 *      wanted pods of a waiting job are created unbound once, and status and Events are handed
 *      to the writer. A job's phase changed here (Running, or waiting again) is one the cycle
 *      and its plugins' wake-up time did not see: it asks for the next cycle
 *      (ctrl_mirror_set_phase), unless only a start the profile is blind to.
 * The requests are then handed over and the progress targets published by the loop's send
 * phase (ctrl_loop.c). Owns the scheduler; works on the mirror (scheduler thread only) and
 * hands requests to the binder and, through the lifecycle, the writer.
 */
#include "ctrl_cycle.h"

#include "ctrl_explain.h"

#include "drover/clock.h"
#include "drover/usage.h"

#include <stdio.h>
#include <string.h>

int ctrl_cycle_init(ctrl_cycle *cy, const ctrl_config *cfg, drv_diag *d)
{
    int rc = drv_sched_new(&cfg->prof, &cy->sched, d);
    if (rc == 0)
        drv_sched_set_exhaustive(cy->sched, cfg->o.exhaustive);
    return rc;
}

void ctrl_cycle_fini(ctrl_cycle *cy)
{
    drv_sched_free(cy->sched);
    cy->sched = NULL;
}

/* An eviction or migration: the pod is deleted and holds its node's room until it is gone (its
 * ghost, from now rather than from its deletion's watch event); a migrated one is then created
 * on the new node (at once when there was none). */
static int send_removal(ctrl_cycle *cy, const drv_decision *x)
{
    ctrl_mirror *m = cy->mirror;
    pod_record *p = &m->pods[x->pod];
    const drv_pod *sp = &m->st.pods[x->pod];
    if (m->jobs[sp->job].members) {
        /* Another operator's pod is never deleted by Drover: it stays where the API has it. */
        ctrl_mirror_place(m, x->pod, p->api_node); /* (-1: unbound there) */
        return 0;
    }
    p->want = -1;
    /* (which holds its room meanwhile; after the job's checkpoint, with a handshake) */
    int rc = ctrl_checkpoint_delete(cy->checkpoint, x->pod,
                                    x->kind == DRV_MIGRATE ? CKPT_MIGRATION : CKPT_PREEMPTION);
    if (rc == DRV_ENOMEM)
        return rc;
    if (x->kind == DRV_MIGRATE && p->presence != POD_ABSENT)
        p->want = x->node;
    else if (x->kind == DRV_MIGRATE)
        return ctrl_binder_place(cy->binder, x->pod, x->node);
    return 0;
}

/* Each job preempted this cycle (an EVICT with DRV_REASON_PREEMPT) is told by an Event who
 * takes its place: the preemptor the decision names (drv_ctx_preempt), else (a plugin that
 * evicts without naming one, as Tiresias) the most important job the cycle binds. Its pods'
 * deletions, sent by send_removal, keep their terminationGracePeriodSeconds: a training job
 * checkpoints on SIGTERM (and, with a checkpoint handshake, before: ctrl_checkpoint.c).
 * O(decisions) per victim; victims are few. */
static void tell_preempted(ctrl_cycle *cy, const drv_decisions *dv)
{
    drv_state *st = &cy->mirror->st;
    int32_t bound = -1;
    for (int32_t i = 0; i < dv->n; i++)
        if (dv->v[i].kind == DRV_BIND &&
            (bound < 0 || st->jobs[dv->v[i].job].priority > st->jobs[bound].priority))
            bound = dv->v[i].job;
    for (int32_t i = 0; i < dv->n; i++) {
        const drv_decision *x = &dv->v[i];
        if (x->kind != DRV_EVICT || x->reason != DRV_REASON_PREEMPT ||
            cy->mirror->jobs[x->job].members)
            continue;
        int32_t by = x->value >= 0 && x->value < st->njobs ? (int32_t)x->value : bound;
        const char *how = cy->cfg->prof.checkpoint_timeout > 0
                              ? "are deleted once it has checkpointed (or its checkpoint_timeout "
                                "has passed), with their grace period,"
                              : "are deleted with their grace period";
        bool told = false; /* (one Event per victim: its first eviction of the cycle) */
        for (int32_t k = 0; k < i && !told; k++)
            told = dv->v[k].kind == DRV_EVICT && dv->v[k].reason == DRV_REASON_PREEMPT &&
                   dv->v[k].job == x->job;
        if (told)
            continue;
        st->jobs[x->job].preemptions++;
        char msg[512];
        if (by >= 0)
            snprintf(msg, sizeof msg,
                     "preempted by %s (priority %d; this job's %d) under profile %s: its pods "
                     "%s and it waits to be placed again",
                     drv_strtab_str(st->names, st->jobs[by].name), st->jobs[by].priority,
                     st->jobs[x->job].priority, cy->cfg->prof.name, how);
        else
            snprintf(msg, sizeof msg,
                     "preempted under profile %s to make room for jobs it ranks first: its pods "
                     "%s and it waits to be placed again",
                     cy->cfg->prof.name, how);
        ctrl_lifecycle_event(cy->lifecycle, x->job, "Warning", "Preempted", msg);
    }
}

/* A gang's latency is measured from the event that made it placeable to its last request, when
 * all its requests went out this cycle; one none of whose requests went out is not measured. */
static void gang_close(job_record *jr)
{
    if (jr->lat_armed && jr->lat_out == 0)
        jr->lat_armed = false;
}

static void gang_open(job_record *jr, double t_decide)
{
    jr->lat_armed = jr->t_ready >= 0;
    jr->lat_t0 = jr->t_ready;
    jr->lat_decide = t_decide;
    jr->lat_out = jr->lat_pods = 0;
    jr->lat_sent = jr->lat_server = 0;
    jr->t_ready = -1;
}

/* Sends the cycle's decisions: deletions, then bindings (and bound creations) gang by gang,
 * through the binder threads. The state already holds every decision as assumed; failures
 * undo theirs when their answers come (ctrl_binder_apply_answer). */
static int send_decisions(ctrl_cycle *cy, const drv_decisions *dv, double t_decide)
{
    ctrl_mirror *m = cy->mirror;
    int rc = 0;
    /* Deletions first: the room they free is not free until their pods are gone, and the
     * bindings below wait for it (ctrl_binder_place). */
    for (int32_t i = 0; i < dv->n && rc == 0; i++) {
        const drv_decision *x = &dv->v[i];
        if (x->kind == DRV_EVICT || x->kind == DRV_MIGRATE) {
            rc = send_removal(cy, x);
        } else if (x->kind == DRV_RESIZE) {
            rc = ctrl_resize_decided(cy->resize, x); /* (assumed there, only when sent) */
        } else if (x->kind == DRV_BATCH && !cy->warned_batch) {
            /* (BATCH comes only for jobs with a calibrated model, which the cluster's jobs have
             * not: the goodput plugin leaves them alone.) */
            cy->warned_batch = true;
            drv_log(DRV_LOG_WARN,
                    "profile %s changes batch sizes; drover run does not send these "
                    "(docs/running.md)",
                    cy->cfg->prof.name);
        }
    }
    if (rc == 0)
        tell_preempted(cy, dv);
    int32_t last = -1;
    for (int32_t i = 0; i < dv->n && rc == 0; i++) {
        const drv_decision *x = &dv->v[i];
        if (x->kind != DRV_BIND)
            continue;
        if (x->job != last) {
            if (last >= 0)
                gang_close(&m->jobs[last]);
            last = x->job;
            gang_open(&m->jobs[x->job], t_decide);
        }
        rc = ctrl_binder_place(cy->binder, x->pod, x->node);
    }
    if (last >= 0)
        gang_close(&m->jobs[last]);
    return rc;
}

/* Applies a decision to the state as the cycle assumed it. (A RESIZE is assumed only when it
 * is sent: ctrl_resize_decided.) */
static void assume(ctrl_mirror *m, const drv_decision *x)
{
    switch (x->kind) {
    case DRV_BIND:
    case DRV_MIGRATE:
        ctrl_mirror_place(m, x->pod, x->node);
        break;
    case DRV_EVICT:
        ctrl_mirror_place(m, x->pod, -1);
        break;
    case DRV_SCALE:
        drv_state_set_workers(&m->st, x->job, (int32_t)x->value);
        break;
    }
}

/* Pods above the targets go; a placement that waited for a pod to go is sent. */
static int reconcile_pods(ctrl_cycle *cy, int32_t j)
{
    ctrl_mirror *m = cy->mirror;
    const drv_job *jb = &m->st.jobs[j];
    for (int32_t k = 0; k < jb->pod_count; k++) {
        int32_t s = jb->pod_base + k;
        const drv_pod *sp = &m->st.pods[s];
        pod_record *p = &m->pods[s];
        bool wanted = sp->index < jb->target[sp->role];
        if (!wanted && p->presence == POD_PRESENT && sp->node < 0 &&
            ctrl_checkpoint_delete(cy->checkpoint, s, CKPT_SCALING) == DRV_ENOMEM)
            return DRV_ENOMEM;
        if (p->presence != POD_DELETING && !p->inflight && p->want >= 0) {
            int32_t n = p->want;
            p->want = -1;
            if (sp->node == n) {
                int rc = ctrl_binder_place(cy->binder, s, n);
                if (rc)
                    return rc;
            }
        }
    }
    return 0;
}

/* Under gang admission, a job left partly bound (a controller killed between its gang's
 * requests, or one of them failed) that this cycle did not complete is rolled back: its bound
 * pods are deleted (their room held until they are gone) and it waits whole. Left alone, they
 * would run, and finish, without their peers. Not while a request about one of its pods is out
 * or waits, nor for a job this controller saw whole (an elastic job growing keeps its pods), nor
 * for a pod group's pods, which belong to their operator. */
static int rollback_partial(ctrl_cycle *cy, int32_t j)
{
    ctrl_mirror *m = cy->mirror;
    const drv_job *jb = &m->st.jobs[j];
    if (!cy->cfg->prof.gang || m->jobs[j].was_whole || m->jobs[j].members)
        return 0; /* (another operator's pods are never deleted by Drover) */
    for (int32_t k = 0; k < jb->pod_count; k++) {
        const pod_record *p = &m->pods[jb->pod_base + k];
        if (p->inflight || p->want >= 0)
            return 0;
    }
    for (int32_t k = 0; k < jb->pod_count; k++) {
        int32_t s = jb->pod_base + k;
        const pod_record *p = &m->pods[s];
        /* (bound in the state or in the API: a pod the API has bound where the state does not
         * have it runs all the same; left out, it ran to its end without its peers while the
         * others were rolled back around it, twice: test_chaos under 12 kills) */
        bool bound = m->st.pods[s].node >= 0 || p->api_name != 0;
        if (!bound || p->presence != POD_PRESENT || ctrl_pod_terminal(p->phase))
            continue;
        ctrl_mirror_place(m, s, -1);
        if (ctrl_binder_delete(cy->binder, s) == DRV_ENOMEM)
            return DRV_ENOMEM;
        m->dirty = true;
    }
    return 0;
}

/* A job that waits: its wanted pods are created unbound (once), and an Event says why. */
static int reconcile_waiting(ctrl_cycle *cy, int32_t j, const int32_t *queue_pos, int32_t npend)
{
    ctrl_mirror *m = cy->mirror;
    job_record *jr = &m->jobs[j];
    const drv_job *jb = &m->st.jobs[j];
    if (jb->phase != DRV_JOB_PENDING)
        ctrl_mirror_set_phase(m, j, DRV_JOB_PENDING);
    m->st.jobs[j].run_start = -1; /* (not running: its next start counts afresh) */
    if (rollback_partial(cy, j) == DRV_ENOMEM)
        return DRV_ENOMEM;
    jr->t_ready = -1; /* a later placement is measured from what frees room, not this */
    if (!jr->created) {
        for (int32_t k = 0; k < jb->pod_count; k++) {
            int32_t s = jb->pod_base + k;
            const drv_pod *sp = &m->st.pods[s];
            const pod_record *p = &m->pods[s];
            if (sp->index < jb->target[sp->role] && p->presence == POD_ABSENT && sp->node < 0 &&
                p->want < 0 && !p->inflight && ctrl_binder_create(cy->binder, s, -1) == DRV_ENOMEM)
                return DRV_ENOMEM;
        }
        jr->created = true;
    }
    if (!jr->why_written) {
        char msg[1024];
        if (ctrl_explain_never_fits(m, j, msg, sizeof msg)) {
            ctrl_lifecycle_event(cy->lifecycle, j, "Warning", "NeverFits", msg);
        } else if (ctrl_explain_nodes(&m->st, j, msg, sizeof msg)) {
            /* (said by the NoNodeMatches condition's Event: ctrl_lifecycle.c) */
        } else {
            ctrl_explain_waiting(m, j, queue_pos ? queue_pos[j] : 0, npend, msg, sizeof msg);
            ctrl_lifecycle_event(cy->lifecycle, j, "Normal", "Waiting", msg);
        }
        jr->why_written = true;
    }
    jr->status = ST_PENDING;
    return 0;
}

/* A job whose gang is placed whole: Starting until every pod runs, then Running. */
static void reconcile_placed(ctrl_cycle *cy, int32_t j)
{
    ctrl_mirror *m = cy->mirror;
    job_record *jr = &m->jobs[j];
    const drv_job *jb = &m->st.jobs[j];
    if (jr->why_written || (jr->written == ST_NONE && !jr->adopted)) {
        char msg[256];
        snprintf(msg, sizeof msg, "%d pods bound by profile %s", drv_job_wanted(jb),
                 cy->cfg->prof.name);
        ctrl_lifecycle_event(cy->lifecycle, j, "Normal", "Scheduled", msg);
    }
    jr->why_written = false;
    int32_t active[DRV_NROLES];
    bool running;
    ctrl_mirror_job_active(m, j, active, &running);
    /* whole in the API, not only as assumed: a binding of the gang may still fail */
    jr->was_whole |= running;
    if (jb->phase == DRV_JOB_PENDING)
        ctrl_mirror_set_phase(m, j, running ? DRV_JOB_RUNNING : DRV_JOB_STARTING);
    else if (jb->phase == DRV_JOB_STARTING && running)
        ctrl_mirror_set_phase(m, j, DRV_JOB_RUNNING);
    double now = drv_clock_mono() - cy->cfg->t0;
    if (running && m->st.jobs[j].start < 0)
        m->st.jobs[j].start = now;
    /* (a queue's minRuntimeSeconds counts from its latest start: a preempted job placed again
     * is young again) */
    if (running && m->st.jobs[j].run_start < 0)
        m->st.jobs[j].run_start = now;
    jr->status = running ? ST_RUNNING : ST_PENDING;
}

/* A job whose templates named a node is told once, by an Event, that Drover chose instead. */
static void tell_node_name(ctrl_cycle *cy, int32_t j)
{
    job_record *jr = &cy->mirror->jobs[j];
    if (!jr->node_name || jr->node_name_told)
        return;
    ctrl_lifecycle_event(cy->lifecycle, j, "Warning", "NodeNameIgnored",
                         "spec.nodeName in a pod template is ignored: Drover chooses each pod's "
                         "node, so that the gang is placed whole and no node is over-committed");
    jr->node_name_told = true;
}

/* Another operator's gang after a cycle: its pods as the targets say, its PodGroup's phase,
 * status and Events (ctrl_podgroup.c). */
static int reconcile_gang(ctrl_cycle *cy, int32_t j, const int32_t *queue_pos, int32_t npend)
{
    ctrl_mirror *m = cy->mirror;
    const drv_job *jb = &m->st.jobs[j];
    int rc = reconcile_pods(cy, j);
    if (rc)
        return rc;
    bool placed = drv_job_complete(jb) && drv_job_wanted(jb) > 0;
    char why[1024] = "";
    if (!placed && !m->jobs[j].why_written)
        ctrl_explain_waiting(m, j, queue_pos ? queue_pos[j] : 0, npend, why, sizeof why);
    ctrl_podgroup_reconcile(cy->podgroup, j, placed, why);
    return 0;
}

/* A TrainingJob after a cycle: its lifecycle (ended: nothing more), its pods, waiting or
 * placed, and its status. */
static int reconcile_job(ctrl_cycle *cy, int32_t j, const int32_t *queue_pos, int32_t npend)
{
    ctrl_mirror *m = cy->mirror;
    const drv_job *jb = &m->st.jobs[j];
    if (ctrl_lifecycle_reconcile(cy->lifecycle, j))
        return 0;
    int rc = reconcile_pods(cy, j);
    if (rc)
        return rc;
    if (!drv_job_complete(jb) || drv_job_wanted(jb) == 0) {
        if ((rc = reconcile_waiting(cy, j, queue_pos, npend)) != 0)
            return rc;
    } else {
        reconcile_placed(cy, j);
    }
    job_record *jr = &m->jobs[j];
    tell_node_name(cy, j);
    const char *msg = jr->status == ST_RUNNING ? "all pods running" : "waiting for pods";
    char with[64];
    if (jr->node_name) {
        snprintf(with, sizeof with, "%s; spec.nodeName ignored", msg);
        msg = with;
    }
    ctrl_lifecycle_status(cy->lifecycle, j, msg);
    return 0;
}

/* Queue positions for the Events of waiting jobs: the order the cycle used is the order of the
 * pending set after it (approximately: by submit time). NULL when none wait (or no memory). */
static int32_t *queue_positions(const drv_state *st)
{
    int32_t *pos = NULL;
    if (st->npending > 0 && (pos = drv_calloc((size_t)st->njobs, sizeof *pos))) {
        int32_t k = 0;
        DRV_FOR_PENDING(st, j)
        pos[j] = ++k;
    }
    return pos;
}

/* After a cycle: phases, pods to create or delete, status, Events. */
static int reconcile(ctrl_cycle *cy)
{
    ctrl_mirror *m = cy->mirror;
    int32_t npend = m->st.npending;
    int32_t *pos = queue_positions(&m->st);
    int rc = 0;
    DRV_FOR_LIVE(&m->st, j)
    {
        rc = m->jobs[j].members ? reconcile_gang(cy, j, pos, npend)
                                : reconcile_job(cy, j, pos, npend);
        if (rc)
            break;
    }
    drv_free(pos);
    return rc;
}

/* Fair share over time (usage.h): what was bound since the last call counts. */
static int advance_usage(ctrl_cycle *cy, double now)
{
    drv_state *st = &cy->mirror->st;
    int rc = st->half_life == cy->cfg->prof.half_life
                 ? 0
                 : drv_state_set_half_life(st, cy->cfg->prof.half_life);
    return rc ? rc : drv_state_usage_advance(st, now);
}

bool ctrl_cycle_idle(ctrl_cycle *cy)
{
    return cy->cfg->prof.half_life > 0 && cy->mirror->st.nqueues > 0 &&
           advance_usage(cy, drv_clock_mono() - cy->cfg->t0) == 0;
}

int ctrl_cycle_run(ctrl_cycle *cy)
{
    drv_state *st = &cy->mirror->st;
    double t_start = drv_clock_mono();
    drv_log(DRV_LOG_DEBUG, "cycle: %d nodes, %d live jobs, %d pending", st->nnodes, st->nlive,
            st->npending);
    /* Jobs found finished end before anything is decided: a restarted controller that sees a
     * job's chief succeeded (its status not written yet) must not place its other pods again. */
    DRV_FOR_LIVE(st, j)
    ctrl_lifecycle_end_finished(cy->lifecycle, j);
    /* Deletions that waited for a checkpoint and may go now are sent: their room is free once
     * they are gone, as any pod's in its grace period. */
    if (ctrl_checkpoint_release(cy->checkpoint) == DRV_ENOMEM)
        return DRV_ENOMEM;
    drv_snapshot snap = {.st = st, .now = drv_clock_mono() - cy->cfg->t0};
    drv_decisions dv;
    drv_decisions_init(&dv);
    int rc = advance_usage(cy, snap.now);
    if (!rc)
        rc = drv_sched_cycle(cy->sched, &snap, &dv);
    double t_decide = drv_clock_mono();
    /* (the phases reconcile changes below make the mirror dirty but for starts this is blind
     * to: ctrl_mirror_set_phase) */
    cy->mirror->starts_blind = drv_sched_starts_blind(cy->sched);
    ctrl_counters_cycle(cy->counters, t_decide - t_start);
    ctrl_binder_hold(cy->binder); /* (the cycle's requests go in batches: one lock, one wake-up
                                     each, until the loop's send phase flushes them) */
    if (rc == 0) {
        for (int32_t i = 0; i < dv.n; i++)
            assume(cy->mirror, &dv.v[i]);
        rc = send_decisions(cy, &dv, t_decide);
    }
    if (rc == 0)
        rc = reconcile(cy);
    drv_decisions_fini(&dv);
    return rc;
}
