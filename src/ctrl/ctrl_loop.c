/*
 * ctrl_loop.c - `drover run`'s controller: creation, and the scheduler thread's loop, a list of
 * named phases (ctrl.h; the public API: controller.h; the user's guide: docs/running.md).
 *
 *   drv_ctrl_run = loop_start; while (loop_iterate) ; loop_stop
 *   loop_iterate = wait_for_work; ctrl_apply_events; reconcile; run_cycle; send_requests
 *
 *   wait_for_work      for events, or until the time the plugins asked to be woken
 *                      (drv_sched_wake), or the profile's period when a plugin wants every
 *                      cycle, or the lifecycle's next deadline (activeDeadlineSeconds,
 *                      ttlSecondsAfterFinished; a PodGroup's scheduleTimeoutSeconds); at most
 *                      CTRL_IDLE_MAX_S (to notice stop: an idle iteration runs no cycle).
 *                      Before the caches are synced it is woken once every CTRL_EVENTS_BATCH
 *                      events (not for each), and when an informer ends a list; once all have
 *                      listed it does not wait: the first cycle starts as soon as the last list
 *                      is applied. After, every event wakes it, but for a run of watch events
 *                      read at once, which wakes it once after its last (ctrl_intake.c);
 *   ctrl_apply_events  informers' objects (nodes, pods: the mirror; TrainingJobs:
 *                      ctrl_trainingjob.c; PodGroups and their pods: ctrl_podgroup.c;
 *                      PriorityClasses and Queues: ctrl_shared.c), binders' answers (the binder;
 *                      a resize's: ctrl_resize.c first), progress samples (the mirror),
 *                      leadership changes (the lease, then the binder);
 *   reconcile          until every informer has listed once and all it listed is applied,
 *                      nothing more; when so, the lease is started (no decision is made on a
 *                      partly listed cluster). When this controller leads: TrainingJobs held for
 *                      a missing Queue or PriorityClass that now exists become jobs, the others
 *                      are told why once; other operators' gangs complete enough become jobs;
 *                      when something changed or a deadline came, the lifecycle's timers
 *                      (expired jobs deleted, the next deadline);
 *   run_cycle          when something changed (or a plugin's time came, or a deadline): one
 *                      cycle (ctrl_cycle.c), and the timers again after it;
 *   send_requests      the binders' requests are handed over (the cycle's, and any that waited
 *                      for room); after a cycle the progress targets and the Queues' status,
 *                      and the metrics.
 *
 * Clocks: every wait and timeout of the loop is on its own clock, monotonic seconds since
 * ctrl_config.t0 (the snapshot's time too); the wall clock is read only for what is written to
 * the API (conditions, startTime, Events), and deadlines that come from it arrive here as
 * distances. Starting asks the API once, blocking, whether it serves PodGroups and Queues
 * (ctrl_intake.c) and pods/resize (ctrl_resize.c); after that no iteration makes a blocking API
 * request: every request goes through a thread of its own.
 *
 * Owns: the loop's state, and the creation and freeing of every unit.
 */
#include "ctrl.h"

#include "drover/clock.h"

#include <stdio.h>
#include <math.h>
#include <string.h>

/* ---- creation ------------------------------------------------------------------------------- */

/* The caller's options and profile, copied into the configuration every unit reads. */
static void configure(drv_ctrl *c, const drv_ctrl_opts *o)
{
    ctrl_config *cfg = &c->cfg;
    cfg->o = *o;
    cfg->prof = *o->profile;
    cfg->o.profile = &cfg->prof;
    snprintf(cfg->scheduler, sizeof cfg->scheduler, "%s", o->scheduler ? o->scheduler : "drover");
    snprintf(cfg->ns, sizeof cfg->ns, "%s", o->namespace_ ? o->namespace_ : "");
    snprintf(cfg->gpu_type_label, sizeof cfg->gpu_type_label, "%s",
             o->gpu_type_label ? o->gpu_type_label : DRV_GPU_TYPE_LABEL);
    cfg->o.gpu_type_label = cfg->gpu_type_label;
    snprintf(cfg->topology, sizeof cfg->topology, "%s", o->topology ? o->topology : "");
    cfg->o.topology = cfg->topology;
    cfg->o.scheduler = cfg->scheduler;
    cfg->o.namespace_ = cfg->ns[0] ? cfg->ns : NULL;
    cfg->o.queue_recheck_s = ctrl_intake_recheck_s(o->queue_recheck_s);
}

/* The units that only hold what they were handed. */
static void wire(drv_ctrl *c)
{
    const ctrl_config *cfg = &c->cfg;
    c->checkpoint = (ctrl_checkpoint){
        .mirror = &c->mirror, .binder = &c->binder, .writer = &c->writer, .cfg = cfg};
    c->lifecycle = (ctrl_lifecycle){.mirror = &c->mirror,
                                    .binder = &c->binder,
                                    .checkpoint = &c->checkpoint,
                                    .writer = &c->writer};
    ctrl_shared_init(&c->shared, &c->mirror, &c->names, &c->writer, cfg);
    ctrl_podgroup_init(&c->podgroup, &c->mirror, &c->names, &c->shared, &c->writer, cfg);
    c->trainingjobs = (ctrl_trainingjobs){.mirror = &c->mirror,
                                          .names = &c->names,
                                          .shared = &c->shared,
                                          .lifecycle = &c->lifecycle,
                                          .checkpoint = &c->checkpoint,
                                          .writer = &c->writer,
                                          .cfg = cfg};
    c->resize = (ctrl_resize){
        .mirror = &c->mirror, .binder = &c->binder, .counters = &c->counters, .cfg = cfg};
    c->cycle = (ctrl_cycle){.mirror = &c->mirror,
                            .binder = &c->binder,
                            .checkpoint = &c->checkpoint,
                            .lifecycle = &c->lifecycle,
                            .podgroup = &c->podgroup,
                            .resize = &c->resize,
                            .counters = &c->counters,
                            .cfg = cfg};
    ctrl_progress_init(&c->progress, cfg->prof.period, &c->events);
}

/* One API budget for every client (kube.h): the controller's requests together stay within
 * cfg's qps and burst (as client-go's clients of one process share a rate limiter), and every
 * non-2xx answer, retried ones included, is counted in one place. Then every unit, each with
 * its clients (one per thread). */
static int ctrl_init(drv_ctrl *c, const drv_kube_config *given, drv_diag *d)
{
    drv_kube_config kcfg = *given;
    const ctrl_config *cfg = &c->cfg;
    int rc = 0;
    if (!kcfg.budget) {
        rc = drv_kube_budget_new(&c->owned_budget, kcfg.qps > 0 ? kcfg.qps : 5,
                                 kcfg.burst > 0 ? kcfg.burst : 10, d);
        if (rc != 0)
            return rc;
        kcfg.budget = c->owned_budget;
    }
    c->budget = kcfg.budget;
    wire(c);
    if (ctrl_events_init(&c->events) != 0 || ctrl_names_init(&c->names, cfg->scheduler) != 0 ||
        ctrl_mirror_init(&c->mirror, &c->names, &c->counters, cfg) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    if ((rc = ctrl_counters_init(&c->counters, cfg->o.metrics, c->budget, cfg->prof.name, d)) ||
        (rc = ctrl_writer_init(&c->writer, &kcfg, &c->counters, cfg->o.no_events, cfg->scheduler,
                               d)) ||
        (rc = ctrl_intake_init(&c->intake, &kcfg, &c->names, &c->events, cfg, d)) ||
        (rc = ctrl_binder_init(&c->binder, &kcfg, &c->mirror, &c->names, &c->writer, &c->counters,
                               &c->events, cfg, d)) ||
        (rc = ctrl_cycle_init(&c->cycle, cfg, d)) ||
        (rc = ctrl_lease_init(&c->lease, &cfg->o, &kcfg, &c->events, &c->counters, d)))
        return rc;
    if (!ctrl_lease_elects(&c->lease)) /* (no election: this one leads from the start) */
        c->loop.leader = c->binder.leader = c->counters.stats.leader = true;
    c->writer.following = !c->loop.leader;
    return 0;
}

int drv_ctrl_new(drv_ctrl **out, const drv_kube_config *cfg, const drv_ctrl_opts *o, drv_diag *d)
{
    *out = NULL;
    if (!o || !o->profile)
        return drv_fail(d, DRV_EINVAL, "drover run: no scheduling profile given");
    drv_ctrl *c = drv_calloc(1, sizeof *c);
    if (!c)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    configure(c, o);
    int rc = ctrl_init(c, cfg, d);
    /* (the lease's strings are copied by ctrl_lease_init: the caller's need not outlive us) */
    c->cfg.o.lease_namespace = c->cfg.o.lease_name = c->cfg.o.identity = NULL;
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
    ctrl_intake_fini(&c->intake);
    ctrl_binder_fini(&c->binder);
    ctrl_writer_fini(&c->writer);
    ctrl_lease_fini(&c->lease);
    ctrl_progress_fini(&c->progress);
    ctrl_cycle_fini(&c->cycle);
    ctrl_checkpoint_fini(&c->checkpoint);
    ctrl_events_fini(&c->events);
    drv_free(c->loop.batch);
    ctrl_counters_fini(&c->counters);
    ctrl_shared_fini(&c->shared);
    ctrl_podgroup_fini(&c->podgroup);
    ctrl_mirror_fini(&c->mirror);
    ctrl_names_fini(&c->names);
    drv_kube_budget_free(c->owned_budget);
    drv_free(c);
}

drv_ctrl_stats drv_ctrl_get_stats(drv_ctrl *c)
{
    drv_ctrl_stats s = ctrl_counters_stats(&c->counters);
    s.bind_limit = ctrl_binder_limit(&c->binder, &s.bind_peak);
    return s;
}

size_t drv_ctrl_latencies(drv_ctrl *c, drv_ctrl_latency *out, size_t n)
{
    return ctrl_counters_latencies(&c->counters, out, n);
}

/* ---- the loop's clock and its decisions ----------------------------------------------------- */

static double loop_now(const drv_ctrl *c)
{
    return drv_clock_mono() - c->cfg.t0;
}

/* Before the caches are synced: in CTRL_IDLE_MAX_S, or at once once every informer has listed
 * (apply the rest and start); after: when a plugin asked to be woken, or a period after the last
 * cycle when a plugin wants every cycle (plugin_wake -INFINITY); no later than the lifecycle's
 * next deadline when leading, nor than CTRL_IDLE_MAX_S from now. */
double ctrl_loop_next_wake(const ctrl_loop *l, double now, double plugin_wake, double period,
                           bool listed)
{
    double until;
    if (!l->synced)
        until = listed ? now : now + CTRL_IDLE_MAX_S;
    else if (plugin_wake == -INFINITY)
        until = l->last + period;
    else
        until = plugin_wake;
    if (l->leader && until > l->deadline)
        until = l->deadline;
    if (until > now + CTRL_IDLE_MAX_S)
        until = now + CTRL_IDLE_MAX_S;
    return until;
}

bool ctrl_loop_cycle_due(const ctrl_loop *l, bool dirty, double now, double plugin_wake,
                         double period)
{
    if (dirty)
        return true;
    return plugin_wake == -INFINITY ? now >= l->last + period : now >= plugin_wake;
}

/* The lifecycle's timers (and pod groups' scheduleTimeoutSeconds, checkpoint handshakes'
 * timeouts): TTLs past are acted on, and the loop is to wake at the next deadline, which they
 * give as a distance from now. */
static void lifecycle_timers(drv_ctrl *c)
{
    double in = ctrl_lifecycle_expire(&c->lifecycle), pg = ctrl_podgroup_timeouts(&c->podgroup);
    double ck = ctrl_checkpoint_next(&c->checkpoint);
    in = pg < in ? pg : in;
    c->loop.deadline = loop_now(c) + (ck < in ? ck : in);
}

/* ---- the phases ----------------------------------------------------------------------------- */

static int loop_start(drv_ctrl *c, drv_diag *d)
{
    c->cfg.t0 = drv_clock_mono(); /* (before any thread of the controller reads it) */
    c->loop.synced = false;
    c->loop.last = 0;
    c->loop.deadline = INFINITY;
    int rc = ctrl_intake_start(&c->intake, d);
    if (rc == 0) {
        c->shared.queues_served = c->intake.queues_served;
        ctrl_resize_discover(&c->resize, c->writer.client); /* (before the binders: they read
                                                              what it found) */
        rc = ctrl_binder_start(&c->binder, d);
    }
    if (rc == 0)
        rc = ctrl_writer_start(&c->writer, d);
    if (rc == 0)
        rc = ctrl_progress_start(&c->progress, d);
    return rc;
}

/* Waits for work (the top of this file) and takes the batch. *listed: every informer has
 * listed, read before the batch is taken: an informer queues what it listed before it says so,
 * so all of it is in this batch (read after, an item queued meanwhile would be missing from
 * the first cycle's state). */
static int32_t wait_for_work(drv_ctrl *c, bool *listed)
{
    ctrl_loop *l = &c->loop;
    *listed = l->synced || ctrl_intake_synced(&c->intake);
    double until = ctrl_loop_next_wake(l, loop_now(c), drv_sched_wake(c->cycle.sched),
                                       c->cfg.prof.period, *listed);
    return ctrl_events_take(&c->events, &l->batch, &l->cap_batch, c->cfg.t0 + until);
}

/* One event, by the unit it concerns. */
static int apply_event(drv_ctrl *c, ctrl_event *e)
{
    bool gang = false, changed = false;
    int rc = 0;
    switch ((ctrl_event_kind)e->kind) {
    case EV_NODE:
        return ctrl_mirror_apply_node(&c->mirror, e);
    case EV_POD:
        rc = ctrl_mirror_apply_pod(&c->mirror, e, &gang);
        return rc == 0 && gang ? ctrl_podgroup_pod(&c->podgroup, e) : rc;
    case EV_TRAININGJOB:
        return ctrl_trainingjob_apply(&c->trainingjobs, e);
    case EV_PODGROUP:
        return ctrl_podgroup_apply(&c->podgroup, e);
    case EV_PRIORITYCLASS:
        rc = ctrl_shared_apply_priorityclass(&c->shared, e, &changed);
        break;
    case EV_QUEUE:
        rc = ctrl_shared_apply_queue(&c->shared, e, &changed);
        break;
    case EV_PROGRESS:
        return ctrl_mirror_apply_progress(&c->mirror, e);
    case EV_ANSWER:
        if (e->u.answer.request == REQ_RESIZE)
            ctrl_resize_answered(&c->resize, e);
        return ctrl_binder_apply_answer(&c->binder, e);
    case EV_LEASE:
        if (ctrl_lease_apply(&c->lease, e, &c->loop.leader)) {
            c->mirror.dirty = true;
            ctrl_binder_lead(&c->binder, c->loop.leader);
            c->writer.following = !c->loop.leader; /* (a follower writes no Event: issue 26) */
        }
        return 0;
    }
    if (changed) /* (a gang waiting for the class or queue is looked at again) */
        ctrl_podgroup_touch(&c->podgroup);
    return rc;
}

int ctrl_apply_events(drv_ctrl *c, ctrl_event *ev, int32_t n)
{
    /* (every name an event of the batch carries was interned before it was queued: the
     * mirror's and the gangs' tables by key are made to hold them once, not at each event) */
    int32_t last = ctrl_names_count(&c->names) - 1;
    int rc = ctrl_mirror_grow_by_key(&c->mirror, last);
    if (rc == 0)
        rc = ctrl_podgroup_grow_by_key(&c->podgroup, last);
    for (int32_t i = 0; i < n && rc == 0; i++)
        rc = apply_event(c, &ev[i]);
    for (int32_t i = 0; i < n; i++)
        ctrl_tj_record_free(ev[i].tj);
    return rc;
}

/* Once every informer has listed: ready, and (with election) the lease is tried. */
static int on_synced(drv_ctrl *c, drv_diag *d)
{
    ctrl_events_batch_wakes(&c->events, false); /* (from now on every event may call for a cycle) */
    ctrl_counters_synced(&c->counters);
    drv_log(DRV_LOG_INFO, "drover run: caches synced (%d nodes, %d jobs); profile %s",
            c->mirror.st.nnodes, c->mirror.st.njobs, c->cfg.prof.name);
    c->mirror.dirty = true;
    return ctrl_lease_start(&c->lease, d);
}

static int add_held(void *arg, ctrl_event *e)
{
    return ctrl_trainingjob_add(arg, e);
}

/* Brings what a cycle will see in line with the API (the top of this file). *ready: this
 * controller is synced and leads: a cycle may run. */
/* A Warning on each job that a pod with its labels stands in for without being its (the pod
 * is ignored: claim in ctrl_mirror.c), once per pod (issue 26). */
static void report_stand_ins(drv_ctrl *c)
{
    int32_t n;
    const stand_in *v = ctrl_mirror_take_stand_ins(&c->mirror, &n);
    for (int32_t i = 0; i < n; i++) {
        char pod[600], msg[900];
        ctrl_name_str(&c->names, v[i].key, pod, sizeof pod);
        snprintf(msg, sizeof msg,
                 "pod %s has this job's labels but its controller ownerReference does not name "
                 "this TrainingJob's uid: it is ignored (another workload's load on its node)",
                 pod);
        ctrl_lifecycle_event(&c->lifecycle, v[i].job, "Warning", "PodNotControlled", msg);
    }
}

static int reconcile(drv_ctrl *c, bool listed, bool *ready, drv_diag *d)
{
    ctrl_loop *l = &c->loop;
    *ready = false;
    if (!l->synced) {
        if (!(l->synced = listed))
            return 0;
        int rc = on_synced(c, d);
        if (rc != 0)
            return rc;
    }
    if (!l->leader)
        return 0;
    report_stand_ins(c);
    ctrl_mirror_report_topology(&c->mirror, &c->writer);
    int rc = ctrl_shared_admit(&c->shared, add_held, &c->trainingjobs);
    if (rc == 0)
        rc = ctrl_podgroup_admit(&c->podgroup);
    if (rc != 0)
        return rc;
    if (c->mirror.dirty || loop_now(c) >= l->deadline)
        lifecycle_timers(c); /* (a deadline passed makes the mirror dirty) */
    *ready = true;
    return 0;
}

/* One cycle when it is due and there is a job to schedule (*ran), and the timers after it. */
static int run_cycle(drv_ctrl *c, bool *ran)
{
    ctrl_loop *l = &c->loop;
    double now = loop_now(c);
    *ran = false;
    if (!ctrl_loop_cycle_due(l, c->mirror.dirty, now, drv_sched_wake(c->cycle.sched),
                             c->cfg.prof.period))
        return 0;
    if (c->mirror.st.nlive == 0) {
        c->mirror.dirty = false;        /* nothing to schedule: a new job makes it dirty again */
        if (ctrl_cycle_idle(&c->cycle)) /* (decayed usage decays on an idle cluster too) */
            ctrl_shared_queue_status(&c->shared);
        return 0;
    }
    ctrl_mirror_attain(&c->mirror, now - l->last);
    l->last = now;
    c->mirror.dirty = false;
    *ran = true;
    int rc = ctrl_cycle_run(&c->cycle);
    if (rc == 0)
        lifecycle_timers(c); /* (a job started or finished: its deadline moved) */
    return rc;
}

/* Hands what the iteration decided to the other threads (the top of this file): n events were
 * applied, a cycle ran (cycled) and ended with rc. */
static void send_requests(drv_ctrl *c, int32_t n, bool cycled, int rc)
{
    ctrl_binder_flush(&c->binder);
    if (cycled && rc == 0) {
        ctrl_progress_publish(&c->progress, &c->mirror);
        ctrl_shared_queue_status(&c->shared);
    }
    if (cycled) {
        ctrl_gauges g = ctrl_mirror_gauges(&c->mirror);
        ctrl_metrics_export(&c->counters, &g);
    } else if (n > 0 && c->loop.synced) {
        ctrl_metrics_export(&c->counters, NULL); /* (binders' answers arrive between cycles) */
    }
}

/* One iteration. 0 to go on, or an error that ends the loop (d says what, when it can). */
static int loop_iterate(drv_ctrl *c, drv_diag *d)
{
    bool listed, ready = false, cycled = false;
    int32_t n = wait_for_work(c, &listed);
    int rc = ctrl_apply_events(c, c->loop.batch, n);
    if (rc == 0)
        rc = reconcile(c, listed, &ready, d);
    if (rc == 0 && ready)
        rc = run_cycle(c, &cycled);
    if (rc == 0 || cycled)
        send_requests(c, n, cycled, rc);
    return rc;
}

/* Stops every thread (the informers and collector told first, so that they wind down while
 * the others are joined); what is still queued for the binders is dropped. An error rc is
 * reported as what it is: why's message (the failing unit's), or its code's. */
static int loop_stop(drv_ctrl *c, int rc, const drv_diag *why, drv_diag *d)
{
    ctrl_intake_tell_stop(&c->intake);
    ctrl_progress_tell_stop(&c->progress);
    ctrl_lease_stop(&c->lease);
    ctrl_binder_stop(&c->binder);
    ctrl_writer_stop(&c->writer);
    ctrl_progress_stop(&c->progress);
    ctrl_intake_stop(&c->intake);
    if (c->cfg.o.metrics) {
        drv_metrics_set_ready(c->cfg.o.metrics, false, "stopped");
        if (rc != 0)
            drv_metrics_set_healthy(c->cfg.o.metrics, false, "the controller failed");
    }
    if (rc != 0 && why->msg[0])
        return drv_fail(d, rc, "drover run: %s", why->msg);
    if (rc != 0)
        return drv_fail(d, rc, "drover run: %s", drv_strerror(rc));
    return 0;
}

int drv_ctrl_run(drv_ctrl *c, atomic_int *stop, drv_diag *d)
{
    drv_diag why = {{0}};
    int rc = loop_start(c, &why);
    while (rc == 0 && !atomic_load(stop))
        rc = loop_iterate(c, &why);
    return loop_stop(c, rc, &why, d);
}
