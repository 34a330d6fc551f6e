/*
 * ctrl_loop.c - `drover run`'s controller: creation, and the scheduler thread's loop, cut into
 * start, one iteration and stop (controller.h; the units: ctrl.h; the user's guide:
 * docs/running.md).
 *
 *   drv_ctrl_run = loop_start; while (loop_iterate) ; loop_stop
 *
 * One iteration, in this order:
 *   1. wait: for events, or until the time the plugins asked to be woken (drv_sched_wake), or
 *      the profile's period when a plugin wants every cycle, or the lifecycle's next deadline
 *      (activeDeadlineSeconds, ttlSecondsAfterFinished: ctrl_lifecycle_expire; a PodGroup's
 *      scheduleTimeoutSeconds: ctrl_podgroup_timeouts); at most 50 ms
 *      (to notice stop: an idle iteration runs no cycle). Before the caches are synced it
 *      is woken once every CTRL_EVENTS_BATCH events (not for each), and when an informer
 *      ends a list (ctrl_events_wake); once all have listed it does not wait: the first
 *      cycle starts as soon as the last list is applied. After, every event wakes it, but
 *      for a run of watch events read at once, which wakes it once after its last
 *      (ctrl_intake.c: the delay is the decoding of the rest of one read, a few events);
 *   2. apply the batch: informers' objects (mirror; PodGroups: podgroup; PriorityClasses and
 *      Queues: shared), binders' answers (binder), progress samples (mirror), leadership
 *      changes (lease);
 *   3. until every informer has listed once and all it listed is applied, nothing more; when
 *      so, start the lease (no decision is made on a partly listed cluster);
 *   4. when this controller leads: TrainingJobs held for a missing Queue or PriorityClass
 *      that now exists become jobs, the others are told why once (ctrl_shared.c); other
 *      operators' gangs complete enough become jobs (ctrl_podgroup.c); when something changed or a
 * deadline came, the lifecycle's timers (expired jobs deleted, the next deadline); and when
 * something changed (or a plugin's time came, or a job's activeDeadlineSeconds): one cycle
 * (ctrl_cycle.c), which sends its decisions through the binder and writer, and the timers again
 * after it. (Starting asks the API once, blocking, whether it serves PodGroups and Queues,
 * ctrl_intake.c, and pods/resize, ctrl_resize.c.)
 * No iteration makes a blocking API request: every request goes through a thread of its own.
 *
 * Owns: c->loop (scheduler thread), and the creation and freeing of every unit.
 */
#include "ctrl.h"

#include <math.h>
#include <string.h>

/* ---- creation ------------------------------------------------------------------------------- */

static void init_locks(drv_ctrl *c)
{
    pthread_mutex_init(&c->names.mu, NULL);
    pthread_mutex_init(&c->events.mu, NULL);
    pthread_cond_init(&c->events.cv, NULL);
    pthread_mutex_init(&c->binder.mu, NULL);
    pthread_cond_init(&c->binder.cv, NULL);
    pthread_mutex_init(&c->writer.mu, NULL);
    pthread_mutex_init(&c->progress.mu, NULL);
    pthread_mutex_init(&c->counters.mu, NULL);
}

/* The API clients: one per informer, binder thread, the writer (the lease's: ctrl_lease_init). */
static int new_clients(drv_ctrl *c, const drv_kube_config *cfg, int binders, drv_diag *d)
{
    int rc;
    if ((rc = drv_kube_new(&c->writer.client, cfg, d)) != 0)
        return rc;
    for (int i = 0; i < NINFORMERS; i++)
        if ((rc = drv_kube_new(&c->intake.client[i], cfg, d)) != 0)
            return rc;
    c->binder.nthreads = binders > 0 ? binders : 8;
    c->binder.threads = drv_calloc((size_t)c->binder.nthreads, sizeof *c->binder.threads);
    c->binder.bodies = podbody_cache_new();
    if (!c->binder.threads || !c->binder.bodies)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int i = 0; i < c->binder.nthreads; i++) {
        c->binder.threads[i].c = c;
        if ((rc = drv_kube_new(&c->binder.threads[i].client, cfg, d)) != 0)
            return rc;
    }
    return 0;
}

/* One API budget for every client (kube.h): the controller's requests together stay within
 * cfg's qps and burst (as client-go's clients of one process share a rate limiter), and every
 * non-2xx answer, retried ones included, is counted in one place. */
static int ctrl_init(drv_ctrl *c, const drv_kube_config *given, const drv_ctrl_opts *o, drv_diag *d)
{
    int rc;
    drv_kube_config cfg_ = *given, *cfg = &cfg_;
    if (!cfg->budget) {
        rc = drv_kube_budget_new(&c->owned_budget, cfg->qps > 0 ? cfg->qps : 5,
                                 cfg->burst > 0 ? cfg->burst : 10, d);
        if (rc != 0)
            return rc;
        cfg->budget = c->owned_budget;
    }
    c->budget = cfg->budget;
    if (!(c->names.tab = drv_strtab_new()) || drv_state_init(&c->mirror.st) != 0 ||
        (c->names.scheduler = drv_strtab_intern(c->names.tab, c->scheduler)) < 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    if ((rc = new_clients(c, cfg, o->binders, d)) != 0)
        return rc;
    if (!(c->writer.queue = drv_workqueue_new(0.05, 30, NULL, NULL)))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    if ((rc = drv_sched_new(&c->prof, &c->sched, d)) != 0)
        return rc;
    drv_sched_set_exhaustive(c->sched, o->exhaustive);
    if (o->metrics && (rc = ctrl_metrics_register(c, d)) != 0)
        return rc;
    return ctrl_lease_init(c, cfg, d);
}

int drv_ctrl_new(drv_ctrl **out, const drv_kube_config *cfg, const drv_ctrl_opts *o, drv_diag *d)
{
    *out = NULL;
    if (!o || !o->profile)
        return drv_fail(d, DRV_EINVAL, "drover run: no scheduling profile given");
    drv_ctrl *c = drv_calloc(1, sizeof *c);
    if (!c)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    c->o = *o;
    c->prof = *o->profile;
    c->o.profile = &c->prof;
    snprintf(c->scheduler, sizeof c->scheduler, "%s", o->scheduler ? o->scheduler : "drover");
    snprintf(c->ns, sizeof c->ns, "%s", o->namespace_ ? o->namespace_ : "");
    c->o.scheduler = c->scheduler;
    c->o.namespace_ = c->ns[0] ? c->ns : NULL;
    init_locks(c);
    int rc = ctrl_init(c, cfg, o, d);
    /* (the lease's strings are copied by ctrl_lease_init: the caller's need not outlive us) */
    c->o.lease_namespace = c->o.lease_name = c->o.identity = NULL;
    if (rc != 0) {
        drv_ctrl_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void drv_ctrl_free(drv_ctrl *c)
{
    if (!c)
        return;
    for (int i = 0; i < NINFORMERS; i++) {
        drv_informer_free(c->intake.informer[i]);
        drv_kube_free(c->intake.client[i]);
    }
    ctrl_binder_fini(c);
    ctrl_writer_fini(c);
    ctrl_lease_fini(c);
    ctrl_progress_fini(c);
    drv_sched_free(c->sched);
    for (int32_t i = 0; i < c->events.n; i++)
        ctrl_tj_record_free(c->events.v[i].tj);
    drv_free(c->events.v);
    drv_free(c->loop.batch);
    ctrl_counters_fini(c);
    ctrl_shared_fini(c);
    ctrl_mirror_fini(c);
    drv_strtab_free(c->names.tab);
    drv_kube_budget_free(c->owned_budget);
    pthread_cond_destroy(&c->events.cv);
    pthread_mutex_destroy(&c->events.mu);
    pthread_mutex_destroy(&c->names.mu);
    pthread_mutex_destroy(&c->writer.mu);
    pthread_mutex_destroy(&c->binder.mu);
    pthread_cond_destroy(&c->binder.cv);
    pthread_mutex_destroy(&c->progress.mu);
    pthread_mutex_destroy(&c->counters.mu);
    drv_free(c);
}

/* ---- the loop ------------------------------------------------------------------------------- */

static int loop_start(drv_ctrl *c, drv_diag *d)
{
    c->loop.t0 = drv_clock_mono();
    c->loop.synced = false;
    c->loop.last = 0;
    c->loop.deadline = INFINITY;
    int rc = ctrl_intake_start(c, d);
    if (rc == 0)
        ctrl_resize_discover(c); /* (before the binders: they read what it found) */
    if (rc == 0)
        rc = ctrl_binder_start(c, d);
    if (rc == 0)
        rc = ctrl_writer_start(c, d);
    if (rc == 0)
        rc = ctrl_progress_start(c, d);
    return rc;
}

int ctrl_apply_events(drv_ctrl *c, ctrl_event *ev, int32_t n)
{
    int rc = 0;
    for (int32_t i = 0; i < n && rc == 0; i++) {
        ctrl_event *e = &ev[i];
        switch (e->kind) {
        case EV_NODE:
            rc = ctrl_mirror_apply_node(c, e);
            break;
        case EV_POD:
            rc = ctrl_mirror_apply_pod(c, e);
            break;
        case EV_TRAININGJOB:
            rc = ctrl_mirror_apply_trainingjob(c, e);
            break;
        case EV_PODGROUP:
            rc = ctrl_podgroup_apply(c, e);
            break;
        case EV_PRIORITYCLASS:
            rc = ctrl_shared_apply_priorityclass(c, e);
            break;
        case EV_QUEUE:
            rc = ctrl_shared_apply_queue(c, e);
            break;
        case EV_PROGRESS:
            rc = ctrl_mirror_apply_progress(c, e);
            break;
        case EV_ANSWER:
            rc = ctrl_binder_apply_answer(c, e);
            break;
        case EV_LEASE:
            ctrl_lease_apply(c, e);
            break;
        }
    }
    for (int32_t i = 0; i < n; i++)
        ctrl_tj_record_free(ev[i].tj);
    return rc;
}

/* Once every informer has listed: ready, and (with election) the lease is tried. */
static int on_synced(drv_ctrl *c)
{
    ctrl_events_batch_wakes(c, false); /* (from now on every event may call for a cycle) */
    pthread_mutex_lock(&c->counters.mu);
    c->counters.stats.synced = true;
    pthread_mutex_unlock(&c->counters.mu);
    if (c->o.metrics)
        drv_metrics_set_ready(c->o.metrics, true, NULL);
    drv_log(DRV_LOG_INFO, "drover run: caches synced (%d nodes, %d jobs); profile %s",
            c->mirror.st.nnodes, c->mirror.st.njobs, c->prof.name);
    c->mirror.dirty = true;
    drv_diag d = {{0}};
    if (ctrl_lease_start(c, &d) != 0) {
        drv_log(DRV_LOG_ERROR, "drover run: %s", d.msg);
        return DRV_ENOMEM;
    }
    return 0;
}

/* Attained service of running jobs (Tiresias-style plugins): GPU-seconds, or CPU-seconds for
 * jobs without GPUs, as the simulator counts it. */
static void attain(drv_ctrl *c, double dt)
{
    drv_state *st = &c->mirror.st;
    if (dt <= 0)
        return;
    DRV_FOR_LIVE(st, j)
    {
        drv_job *jb = &st->jobs[j];
        if (jb->phase != DRV_JOB_RUNNING)
            continue;
        drv_res held = {0, 0, 0};
        for (int r = 0; r < DRV_NROLES; r++)
            held = drv_res_add(held, drv_res_scale(jb->role[r].req, jb->bound[r]));
        jb->attained += dt * (double)(held.gpu > 0 ? held.gpu * 1000 : held.cpu) / 1000.0;
    }
}

/* The lifecycle's timers (and pod groups' scheduleTimeoutSeconds): TTLs past are acted on,
 * and the loop is to wake at the next deadline, kept on the loop's clock (mono since t0). */
static void lifecycle_timers(drv_ctrl *c)
{
    double at = ctrl_lifecycle_expire(c), pg = ctrl_podgroup_timeouts(c);
    if (pg < at)
        at = pg;
    c->loop.deadline =
        isinf(at) ? INFINITY : at - drv_clock_wall() + (drv_clock_mono() - c->loop.t0);
}

/* One iteration (the phases above). Returns 0 to go on, or an error that ends the loop. */
static int loop_iterate(drv_ctrl *c)
{
    ctrl_loop *l = &c->loop;
    /* 1. wait. Whether every informer has listed is read before the batch is taken: an
     * informer queues what it listed before it says so, so all of it is in this batch (read
     * after, an item queued meanwhile would be missing from the first cycle's state). */
    bool listed = l->synced || ctrl_intake_synced(c);
    double now = drv_clock_mono() - l->t0;
    double wake = drv_sched_wake(c->sched);
    double until = l->synced ? (wake == -INFINITY ? l->last + c->prof.period : wake)
                   : listed  ? now /* (all listed: apply the rest and start, no wait) */
                             : now + 0.05;
    if (l->leader && until > l->deadline)
        until = l->deadline;
    if (until > now + 0.05)
        until = now + 0.05;
    int32_t n = ctrl_events_take(c, &l->batch, &l->cap_batch, l->t0 + until);
    /* 2. apply */
    int rc = ctrl_apply_events(c, l->batch, n);
    if (rc != 0)
        return rc;
    if (n > 0 && l->synced)
        ctrl_metrics_export(c, false); /* binders' answers arrive between cycles */
    /* 3. synced? */
    if (!l->synced) {
        if (!(l->synced = listed))
            return 0;
        if ((rc = on_synced(c)) != 0)
            return rc;
    }
    /* 4. cycle when something changed, or a plugin asked for the time, and we lead; held
     * TrainingJobs (ctrl_shared.c) and other operators' gangs complete enough
     * (ctrl_podgroup.c) become jobs first */
    now = drv_clock_mono() - l->t0;
    if (!l->leader)
        return 0;
    if ((rc = ctrl_shared_admit(c)) != 0 || (rc = ctrl_podgroup_admit(c)) != 0)
        return rc;
    if (c->mirror.dirty || now >= l->deadline)
        lifecycle_timers(c); /* (a deadline passed makes the mirror dirty) */
    bool due =
        c->mirror.dirty || (wake == -INFINITY ? now >= l->last + c->prof.period : now >= wake);
    if (!due)
        return 0;
    if (c->mirror.st.nlive == 0) {
        c->mirror.dirty = false; /* nothing to schedule: a new job makes it dirty again */
        return 0;
    }
    attain(c, now - l->last);
    l->last = now;
    c->mirror.dirty = false;
    if ((rc = ctrl_cycle_run(c)) == 0)
        lifecycle_timers(c); /* (a job started or finished: its deadline moved) */
    return rc;
}

/* Stops every thread (the informers and collector told first, so that they wind down while
 * the others are joined); what is still queued for the binders is dropped. */
static int loop_stop(drv_ctrl *c, int rc, drv_diag *d)
{
    c->intake.stop = 1;
    c->progress.stop = 1;
    ctrl_lease_stop(c);
    ctrl_binder_stop(c);
    ctrl_writer_stop(c);
    ctrl_progress_stop(c);
    ctrl_intake_stop(c);
    if (c->o.metrics) {
        drv_metrics_set_ready(c->o.metrics, false, "stopped");
        if (rc != 0)
            drv_metrics_set_healthy(c->o.metrics, false, "the controller failed");
    }
    if (rc == DRV_ENOMEM)
        return drv_fail(d, rc, "drover run: out of memory");
    return rc;
}

int drv_ctrl_run(drv_ctrl *c, atomic_int *stop, drv_diag *d)
{
    int rc = loop_start(c, d);
    while (rc == 0 && !atomic_load(stop))
        rc = loop_iterate(c);
    return loop_stop(c, rc, d);
}
