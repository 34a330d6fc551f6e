/*
 * ctrl_checkpoint.c - the checkpoint handshake before a pod is deleted (ctrl_checkpoint.h).
 *
 * A preempted, migrated or scaled training job loses what it computed since its last
 * checkpoint (kueue#477, KAI#1832). SIGTERM and terminationGracePeriodSeconds give a script a
 * chance, but the script cannot tell when to save before its pods are already going, nor can
 * Drover tell whether it did. The handshake makes both explicit and bounded:
 *
 *   1. a deletion is handed here (ctrl_checkpoint_delete): the pod is taken as being deleted
 *      from now (POD_DELETING, its room held as a ghost where the state no longer has it), but
 *      no request is sent; its job, the first time, is annotated
 *      drover.dev/checkpoint-requested: <now, RFC 3339> and given condition CheckpointRequested
 *      True, with an Event;
 *   2. the job's script sees the annotation (downward API or a watch), writes its checkpoint and
 *      sets drover.dev/checkpoint-done: <a time at or after the request> on its TrainingJob;
 *   3. before each cycle (ctrl_checkpoint_release), a deletion whose job has said so, or whose
 *      profile's checkpoint_timeout has passed, is sent: the pod then gets its grace period as
 *      before; the condition goes False (CheckpointWritten or CheckpointTimeout).
 *
 * Example: checkpoint_timeout=30; vip preempts low at 10:00:00: low is annotated requested
 * 10:00:00, vip's placement waits (the room is held); low's script writes done 10:00:12; the
 * next cycle deletes low's pods, and vip is bound once they are gone. Without the annotation
 * they are deleted at 10:00:30.
 *
 * Costs: a deletion handed here is O(1); release and next are O(deletions waiting), which are
 * the pods of the few victims of recent cycles.
 */
#include "ctrl_checkpoint.h"

#include "drover/clock.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const why_reason[] = {"Preemption", "Migration", "Scaling"};
static const char *const why_words[] = {"preemption", "migration", "scaling"};

void ctrl_checkpoint_fini(ctrl_checkpoint *ck)
{
    drv_free(ck->waits);
    ck->waits = NULL;
    ck->nwaits = ck->cap_waits = 0;
}

/* An Event about job j's TrainingJob. */
static void job_event(ctrl_checkpoint *ck, int32_t j, const char *type, const char *reason,
                      const char *message)
{
    const job_record *jr = &ck->mirror->jobs[j];
    ctrl_ref about = ctrl_ref_trainingjob(jr->ns_text, jr->name_text, jr->uid);
    ctrl_writer_event(ck->writer, &about, type, reason, message);
}

/* Job j is asked to checkpoint: its annotation, its condition (written with its next status:
 * cond_changes), an Event. */
static int ask(ctrl_checkpoint *ck, int32_t j, ckpt_why why)
{
    job_record *jr = &ck->mirror->jobs[j];
    double now = floor(drv_clock_wall()); /* (the annotation has whole seconds) */
    jr->ckpt_asked = now;
    jr->ckpt_deadline = now + ck->cfg->prof.checkpoint_timeout;
    char ts[40], path[600], body[160], msg[208];
    drv_time_rfc3339(ts, sizeof ts, now, false);
    snprintf(path, sizeof path, "/apis/drover.dev/v1alpha1/namespaces/%s/trainingjobs/%s",
             jr->ns_text, jr->name_text);
    snprintf(body, sizeof body, "{\"metadata\":{\"annotations\":{\"%s\":\"%s\"}}}",
             DRV_ANN_CHECKPOINT_REQUESTED, ts);
    snprintf(msg, sizeof msg,
             "pods to be deleted (%s): set annotation %s to a time >= %s once checkpointed; "
             "deleted then, or after %.0f s",
             why_words[why], DRV_ANN_CHECKPOINT_DONE, ts, ck->cfg->prof.checkpoint_timeout);
    drv_condition_set(jr->conds, DRV_COND_CHECKPOINT, true, why_reason[why], msg, now);
    jr->cond_changes++;
    job_event(ck, j, "Normal", "CheckpointRequested", msg);
    return ctrl_writer_patch(ck->writer, path, body);
}

int ctrl_checkpoint_delete(ctrl_checkpoint *ck, int32_t slot, ckpt_why why)
{
    ctrl_mirror *m = ck->mirror;
    pod_record *p = &m->pods[slot];
    const drv_pod *sp = &m->st.pods[slot];
    job_record *jr = &m->jobs[sp->job];
    if (ck->cfg->prof.checkpoint_timeout <= 0 || jr->members || jr->gone ||
        p->presence != POD_PRESENT || p->inflight || !p->api_name || ctrl_pod_terminal(p->phase))
        return ctrl_binder_delete(ck->binder, slot);
    if (drv_grow(&ck->waits, sizeof *ck->waits, &ck->cap_waits, ck->nwaits + 1) != 0)
        return DRV_ENOMEM;
    /* Being deleted from now: its room held where the state no longer has it (as
     * ctrl_binder_delete holds it), never placed again from its watch events meanwhile
     * (ctrl_mirror.c), and a placement of it elsewhere waits for it to be gone. */
    if (sp->node != p->api_node)
        ctrl_mirror_set_ghost(m, p, p->api_name, m->st.jobs[sp->job].role[sp->role].req);
    p->presence = POD_DELETING;
    p->delete_assumed = true;
    ck->waits[ck->nwaits++] = (ckpt_wait){.slot = slot, .job = sp->job};
    return jr->ckpt_asked > 0 ? 0 : ask(ck, sp->job, why);
}

/* Whether job j's handshake is over: it said it checkpointed since it was asked, or its time
 * is up (*timed_out), or it is gone. */
static bool handshake_over(const job_record *jr, double now, bool *timed_out)
{
    *timed_out = false;
    if (jr->gone || (jr->ckpt_done > 0 && jr->ckpt_done >= jr->ckpt_asked))
        return true;
    *timed_out = now >= jr->ckpt_deadline;
    return *timed_out;
}

/* Job j's handshake is over, none of its deletions waiting: its condition goes False. */
static void close_handshake(ctrl_checkpoint *ck, int32_t j, bool timed_out, double now)
{
    job_record *jr = &ck->mirror->jobs[j];
    char msg[208];
    if (timed_out)
        snprintf(msg, sizeof msg,
                 "no %s annotation within %.0f s of the request: its pods were deleted without "
                 "a checkpoint",
                 DRV_ANN_CHECKPOINT_DONE, ck->cfg->prof.checkpoint_timeout);
    else
        snprintf(msg, sizeof msg, "the job checkpointed after %.0f s: its pods were deleted",
                 jr->ckpt_done - jr->ckpt_asked);
    const char *reason = timed_out ? "CheckpointTimeout" : "CheckpointWritten";
    drv_condition_set(jr->conds, DRV_COND_CHECKPOINT, false, reason, msg, now);
    jr->cond_changes++;
    jr->ckpt_asked = 0;
    if (!jr->gone)
        job_event(ck, j, timed_out ? "Warning" : "Normal", reason, msg);
}

int ctrl_checkpoint_release(ctrl_checkpoint *ck)
{
    ctrl_mirror *m = ck->mirror;
    double now = drv_clock_wall();
    int32_t kept = 0; /* (the waits kept move to the front, in order; those done, behind) */
    for (int32_t i = 0; i < ck->nwaits; i++) {
        ckpt_wait w = ck->waits[i];
        bool timed_out, keep = false;
        if (m->pods[w.slot].presence == POD_ABSENT) /* (gone meanwhile: nothing to delete) */
            keep = false;
        else if (!handshake_over(&m->jobs[w.job], now, &timed_out))
            keep = true;
        else if (ctrl_binder_delete(ck->binder, w.slot) == DRV_ENOMEM)
            keep = true; /* (tried again before the next cycle) */
        else
            m->dirty = true;
        if (keep) {
            ck->waits[i] = ck->waits[kept];
            ck->waits[kept++] = w;
        }
    }
    int32_t was = ck->nwaits;
    ck->nwaits = kept;
    /* Each job asked whose deletions no longer wait: its handshake is closed. O(jobs asked ×
     * deletions waiting), both few. */
    for (int32_t i = kept; i < was; i++) {
        int32_t j = ck->waits[i].job;
        bool open = m->jobs[j].ckpt_asked > 0, timed_out;
        for (int32_t k = 0; k < kept && open; k++)
            open = ck->waits[k].job != j;
        if (open) {
            handshake_over(&m->jobs[j], now, &timed_out);
            close_handshake(ck, j, timed_out, now);
        }
    }
    return 0;
}

double ctrl_checkpoint_next(ctrl_checkpoint *ck)
{
    double now = drv_clock_wall(), next = INFINITY;
    for (int32_t i = 0; i < ck->nwaits; i++) {
        double in = ck->mirror->jobs[ck->waits[i].job].ckpt_deadline - now;
        next = in < next ? in : next;
    }
    if (next <= 0)
        ck->mirror->dirty = true;
    return next;
}

void ctrl_checkpoint_done(ctrl_checkpoint *ck, int32_t j, double done)
{
    job_record *jr = &ck->mirror->jobs[j];
    jr->ckpt_done = done;
    if (jr->ckpt_asked > 0 && done >= jr->ckpt_asked)
        ck->mirror->dirty = true;
}
