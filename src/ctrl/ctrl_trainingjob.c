/*
 * ctrl_trainingjob.c - TrainingJobs applied to the mirror (ctrl_trainingjob.h): a new one of
 * our schedulerName (and namespace) becomes one job of the state, its pods the job's slots,
 * those seen before it adopted; its queue and priority class resolved (or it is held until they
 * exist: ctrl_shared.c); an invalid spec fails it with the field named; an edit suspends,
 * resumes or resizes it (ctrl_lifecycle.c); a deletion ends it.
 *
 * Owns nothing; on the scheduler thread. Example: TrainingJob ns/tj1 of 2 workers arrives:
 * state job "ns/tj1" with 2 slots, its record (uid, templates, progress endpoint), Created;
 * deleted and created again under the same name (a new uid), the old job ends and a new one is
 * added, without touching pods, which may be the new one's.
 */
#include "ctrl_trainingjob.h"

#include <stdio.h>
#include <string.h>

/* The constraints of tj's role templates into a (validated by the decoder already). */
static int job_constraints(ctrl_trainingjobs *t, const tj_record *tj, const char *key,
                           ctrl_job_add *a)
{
    for (int r = 0; r < DRV_NROLES; r++) {
        drv_diag d = {{0}};
        int rc = ctrl_mirror_constraint(t->mirror, a, r, tj->tj.cons[r], tj->tmpl[r], true, key,
                                        drv_role_name(r), &d);
        if (rc == DRV_ENOMEM)
            return rc;
        if (rc)
            drv_log(DRV_LOG_ERROR, "trainingjob %s: constraints ignored: %s", key, d.msg);
    }
    return 0;
}

/* The job record of the state's new job j (zeroed, its key set: ctrl_mirror_add_job), taking
 * over t's templates. */
static void job_record_init(job_record *jr, const ctrl_event *e, tj_record *t)
{
    jr->ns = t->tj.ns;
    jr->name = t->tj.name;
    memcpy(jr->ns_text, t->ns, sizeof jr->ns_text);
    memcpy(jr->name_text, t->name, sizeof jr->name_text);
    snprintf(jr->uid, sizeof jr->uid, "%s", t->uid);
    jr->uid_id = t->uid_id;
    for (int r = 0; r < DRV_NROLES; r++) {
        jr->tmpl[r] = t->tmpl[r];
        t->tmpl[r] = NULL; /* taken over */
    }
    jr->t_ready = e->t;
    jr->node_name = t->node_name;
    jr->status = ST_PENDING;
    jr->port = t->tj.progress_port;
    jr->ckpt_done = t->tj.checkpoint_done;
    snprintf(jr->path, sizeof jr->path, "%s", t->tj.progress_path);
    snprintf(jr->step, sizeof jr->step, "%s", t->tj.step_metric);
    snprintf(jr->loss, sizeof jr->loss, "%s", t->tj.loss_metric);
}

/* Whether TrainingJob tj is ours: it names our schedulerName (or none), and is of our namespace
 * when one is served. */
static bool ours(const ctrl_trainingjobs *t, const tj_record *tj)
{
    return (!tj->tj.scheduler || tj->tj.scheduler == t->names->scheduler) &&
           (!t->cfg->ns[0] || !strcmp(tj->ns, t->cfg->ns));
}

static int invalid_job(ctrl_trainingjobs *t, const ctrl_event *e);

/* The state's job template of TrainingJob tj: its roles and steps, submitted now; false when
 * it wants no pod. */
static bool job_template(ctrl_trainingjobs *t, const ctrl_event *e, const tj_record *tj,
                         drv_job *tmpl)
{
    tmpl->model = -1;
    tmpl->submit = e->t - t->cfg->t0;
    tmpl->phase = DRV_JOB_PENDING;
    tmpl->steps_total = tj->tj.total_steps;
    int32_t wanted = 0;
    for (int r = 0; r < DRV_NROLES; r++) {
        tmpl->role[r] = tj->tj.role[r];
        wanted += tj->tj.role[r].replicas;
    }
    return wanted > 0;
}

/* A TrainingJob of ours becomes a job of the state, described whole and added in one call
 * (ctrl_mirror_add_job), or is held: its queue or priority class is missing. */
int ctrl_trainingjob_add(ctrl_trainingjobs *t, ctrl_event *e)
{
    ctrl_mirror *m = t->mirror;
    tj_record *tj = e->tj;
    char key[CTRL_NS_LEN + CTRL_NAME_LEN], user[256];
    if (tj->finished || !ours(t, tj))
        return 0;
    snprintf(key, sizeof key, "%s/%s", tj->ns, tj->name);
    ctrl_job_add a = {.d.name = key};
    if (!job_template(t, e, tj, &a.d.tmpl))
        return 0;
    if (!ctrl_mirror_topology(m, tj->tj.topo_mode, tj->tj.topo_key, &a.d.tmpl, tj->invalid,
                              sizeof tj->invalid))
        return invalid_job(t, e); /* (its level: not one of --topology's) */
    char why[400], reason[48];
    if (!ctrl_shared_resolve(t->shared, tj, &a.d.tmpl, why, sizeof why, reason, sizeof reason))
        return ctrl_shared_hold(t->shared, e, why, reason); /* (its queue or class missing) */
    a.d.user = ctrl_shared_user(t->shared, tj, a.d.tmpl.queue, user, sizeof user);
    int rc = job_constraints(t, tj, key, &a);
    int32_t j;
    if (rc == 0)
        rc = ctrl_mirror_add_job(m, &a, e->key, &j);
    if (rc != 0)
        return rc;
    ctrl_shared_unhold(t->shared, e->key);
    job_record_init(&m->jobs[j], e, tj);
    ctrl_lifecycle_init(t->lifecycle, j, tj);
    m->jobs[j].spec_workers = tj->tj.role[DRV_ROLE_WORKER].replicas;
    if ((rc = ctrl_mirror_adopt_parked(m, j, e->t)) != 0)
        return rc;
    if (tj->tj.suspend)
        ctrl_lifecycle_suspend(t->lifecycle, j);
    m->dirty = true;
    return 0;
}

/* Known job j's spec was edited: suspended, resumed, or its replicas or run policy changed. */
static int edit_job(ctrl_trainingjobs *t, int32_t j, ctrl_event *e)
{
    ctrl_mirror *m = t->mirror;
    if (e->tj->invalid[0]) {
        drv_log(DRV_LOG_WARN, "edit not followed: %s", e->tj->invalid);
        return 0;
    }
    if (e->tj->tj.suspend && !m->jobs[j].suspended) {
        m->jobs[j].policy.suspend = true;
        ctrl_lifecycle_suspend(t->lifecycle, j);
        return 0;
    }
    if (!e->tj->tj.suspend && m->jobs[j].suspended) {
        /* Resumed: queued again as a new job of the state, its conditions carried on. */
        job_record old = m->jobs[j];
        m->jobs[j].gone = true;
        m->job_of[e->key] = -1;
        int rc = ctrl_trainingjob_add(t, e);
        int32_t j2 = m->job_of[e->key];
        if (rc == 0 && j2 >= 0)
            ctrl_lifecycle_resumed(t->lifecycle, j2, &old);
        return rc;
    }
    return ctrl_lifecycle_edit(t->lifecycle, j, e->tj);
}

/* A TrainingJob whose spec is invalid: failed with the reason, when it is ours. */
static int invalid_job(ctrl_trainingjobs *t, const ctrl_event *e)
{
    if (!e->tj->finished && ours(t, e->tj))
        ctrl_lifecycle_invalid(t->lifecycle, e);
    return 0;
}

/* Deleted and created again under the same name (its deletion not seen, or seen and done):
 * the old job j is over, without touching pods, which may be the new one's. */
static int recreated(ctrl_trainingjobs *t, int32_t j, ctrl_event *e)
{
    ctrl_mirror *m = t->mirror;
    if (m->st.jobs[j].phase != DRV_JOB_DONE)
        ctrl_mirror_end_job(m, j, true);
    m->jobs[j].gone = true;
    m->job_of[e->key] = -1;
    return e->tj->invalid[0] ? invalid_job(t, e) : ctrl_trainingjob_add(t, e);
}

int ctrl_trainingjob_apply(ctrl_trainingjobs *t, ctrl_event *e)
{
    ctrl_mirror *m = t->mirror; /* (e->key held by its tables: ctrl_apply_events) */
    bool deleted = e->type == DRV_WATCH_DELETED;
    if (deleted || e->tj->invalid[0])
        ctrl_shared_unhold(t->shared, e->key); /* (a held one: gone, or failed below) */
    if (!deleted) /* (its status writes computed before: ctrl_writer.c) */
        ctrl_writer_seen(t->writer, e->key, e->tj->tj.rv, e->tj->finished);
    int32_t j = m->job_of[e->key];
    if (j >= 0 && !deleted && strcmp(m->jobs[j].uid, e->tj->uid) != 0)
        return recreated(t, j, e);
    if (deleted) {
        if (j >= 0) {
            m->jobs[j].gone = true;
            if (m->jobs[j].status < ST_SUCCEEDED)
                m->jobs[j].status = ST_FAILED;
            m->dirty = true;
        }
        return 0;
    }
    if (j < 0)
        return e->tj->invalid[0] ? invalid_job(t, e) : ctrl_trainingjob_add(t, e);
    snprintf(m->jobs[j].rv, sizeof m->jobs[j].rv, "%s", e->tj->tj.rv); /* (its next status's) */
    if (!e->tj->invalid[0]) /* (the job's word that it checkpointed: a handshake may wait) */
        ctrl_checkpoint_done(t->checkpoint, j, e->tj->tj.checkpoint_done);
    /* A status written by someone else as finished ends it, as that status says. */
    if (e->tj->finished && m->jobs[j].status < ST_SUCCEEDED) {
        ctrl_lifecycle_finished_by_status(t->lifecycle, j, e->tj);
        m->dirty = true;
        return 0;
    }
    return edit_job(t, j, e);
}
