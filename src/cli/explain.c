/*
 * explain.c - `drover sim --explain JOB`: why a job waits, as far as the queue order goes.
 *
 * Under a policy whose queue order uses the `priority` plugin, prints JOB's combined priority
 * factor by factor (value, normalised, weight, contribution; like Slurm's sprio) as the first
 * cycle after its submission sees it: the simulation runs up to that moment only. Under any
 * other policy there are no priority factors: it says what the queue is ordered by instead (for
 * k8s-default: FIFO, by submission time) and prints no factor table. When the cluster has
 * queues, or the policy orders by `fairshare`, it first prints the job's queue and its weighted
 * dominant share (what `fairshare` orders by) and the user's share within it (the `share`
 * factor).
 *
 * On a cluster with GPU types (issue 27) it first says why the job's type was chosen: the whole
 * run is simulated (with the calibration `drover sim` uses) and, from its placement log, the
 * type the job's GPU pods were first bound to and when; per type the job's speed on one GPU
 * (the calibrated step time of placement "1" at its batch, the profile of that type) and the
 * GPUs free at that moment (each type's GPUs less those pods bound before it still held).
 */
#include "cli.h"

#include "drover/calib.h"
#include "drover/policy.h"
#include "drover/usage.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The `priority` plugin's use in prof's queue order, or NULL when the order does not use it. */
static const drv_plugin_use *priority_use(const drv_profile *prof)
{
    const drv_plugin *prio = drv_plugin_find("priority");
    const drv_plugin_use *found = NULL;
    for (int i = 0; i < prof->nuse[DRV_PT_QUEUE_ORDER]; i++)
        if (prof->use[DRV_PT_QUEUE_ORDER][i].p == prio)
            found = &prof->use[DRV_PT_QUEUE_ORDER][i];
    return found;
}

/* Whether prof's queue order uses the plugin named name. */
static bool orders_by(const drv_profile *prof, const char *name)
{
    for (int i = 0; i < prof->nuse[DRV_PT_QUEUE_ORDER]; i++)
        if (strcmp(prof->use[DRV_PT_QUEUE_ORDER][i].p->name, name) == 0)
            return true;
    return false;
}

/* The job's queue, its use and weighted dominant share, and the user's share within it. */
static int print_shares(const drv_state *st, int32_t job)
{
    const drv_job *j = &st->jobs[job];
    if (st->nqueues == 0) {
        printf("the cluster defines no queue: every job is in the default queue, with no share "
               "to order by\n\n");
        return 0;
    }
    drv_res cap = drv_cluster_capacity(st);
    const drv_queue *q = &st->queues[j->queue];
    drv_user_use *use = NULL;
    int32_t nuse = 0, cap_use = 0;
    if (drv_user_use_build(st, &use, &nuse, &cap_use) != 0)
        return DRV_ENOMEM;
    drv_res mine = drv_user_use_find(use, nuse, j->queue, j->user);
    drv_free(use);
    /* the share of what is bound now; with a half-life, also the decayed one the order reads */
    printf("queue %s (weight %g): uses %lld m CPU, %lld MiB, %lld GPUs of %lld m, %lld MiB, %lld; "
           "weighted dominant share %.4f\n",
           drv_strtab_str(st->names, q->name), q->weight, (long long)q->used.cpu,
           (long long)(q->used.mem >> 20), (long long)q->used.gpu, (long long)cap.cpu,
           (long long)(cap.mem >> 20), (long long)cap.gpu,
           drv_queue_share(st, j->queue, q->used, cap));
    printf("user %s in queue %s: share %.4f (of the queue's quota where bounded, else of the "
           "cluster)\n\n",
           drv_strtab_str(st->names, j->user), drv_strtab_str(st->names, q->name),
           drv_user_share(st, j->queue, mine, cap));
    if (st->half_life > 0) /* what the fairshare order and the share factor read (usage.h) */
        printf("decayed over time (half-life %g s), what the order reads: queue %s usage %.4f, "
               "weighted %.4f; user %s %.4f\n\n",
               st->half_life, drv_strtab_str(st->names, q->name),
               drv_queue_usage(st, j->queue, cap), drv_queue_fair_share(st, j->queue, cap),
               drv_strtab_str(st->names, j->user),
               drv_user_fair_share(st, j->queue, j->user, mine, cap));
    return 0;
}

/* What prof orders its queue by, for a profile without the `priority` plugin. */
static void print_order(const drv_profile *prof, const char *job)
{
    int n = prof->nuse[DRV_PT_QUEUE_ORDER];
    const drv_plugin_use *q = prof->use[DRV_PT_QUEUE_ORDER];
    if (n == 0) {
        printf("policy %s has no queue_order plugin: its queue stays in submission order (FIFO) "
               "and its admit plugin, %s, decides whom to start.\n",
               prof->name, prof->nuse[DRV_PT_ADMIT] ? prof->use[DRV_PT_ADMIT][0].p->name : "none");
    } else if (n == 1 && strcmp(q[0].p->name, "fifo") == 0) {
        printf("policy %s orders its queue FIFO (queue_order=fifo): by submission time, first "
               "come first served.\n",
               prof->name);
    } else {
        printf("policy %s orders its queue by queue_order=", prof->name);
        for (int i = 0; i < n; i++)
            printf("%s%s", i ? "," : "", q[i].p->name);
        printf(": %s.\n", q[0].p->doc);
    }
    printf("It does not use the combined priority, so job %s has no priority factors to show.\n",
           job);
}

/* A job bound to a topology level: what it needs in one domain and the largest free domain
 * at its submission (state.h, drv_topo_explain). */
static int print_topology(const drv_cluster_spec *cl, const drv_workload *wl,
                          const drv_catalogue *cat, const drv_profile *prof, uint64_t seed,
                          int32_t job)
{
    drv_diag d = {{0}};
    drv_sim_config cfg = {.seed = seed};
    drv_sim *s = NULL;
    double t = ceil(wl->jobs[job].submit / prof->period) * prof->period;
    char why[400];
    int rc = drv_sim_new(cl, wl, cat, prof, &cfg, &s, &d);
    if (!rc)
        rc = drv_sim_run_until(s, t, &d);
    if (!rc)
        rc = drv_sim_enter_job(s, job);
    if (rc) {
        fprintf(stderr, "drover: %s\n", d.msg[0] ? d.msg : drv_strerror(rc));
        drv_sim_free(s);
        return rc == DRV_EINVAL ? EXIT_USAGE : EXIT_RUN;
    }
    drv_topo_explain(drv_sim_state(s), job, why, sizeof why);
    printf("job %s at t=%.1f s: its gang of %d pods %s\n\n", wl->jobs[job].name, t,
           drv_job_wanted(&drv_sim_state(s)->jobs[job]), why);
    drv_sim_free(s);
    return 0;
}

/* Steps per second of calibrated model app on one GPU of `type` ("-": untyped) at batch, or
 * NaN when the calibration has no profile for it. */
static double one_gpu_speed(const drv_calib *cal, bool fallback, int32_t app, const char *type,
                            double batch)
{
    int32_t e = drv_calib_for_type(cal, app, strcmp(type, "-") ? type : NULL, fallback);
    int32_t one = 1;
    drv_calib_sample m;
    if (e < 0 || drv_calib_measure(cal, e, &one, 1, batch, &m) != 0 || !(m.step > 0))
        return NAN;
    return 1.0 / m.step;
}

/* Per type k (1-based, drv_sim_gpu_type_name) its GPUs and those free just before time t:
 * less the GPUs of pods bound before t and not removed by t (the placement log). One pass over
 * the nodes, one over the log: O(nodes x types + placements). 0 or DRV_ENOMEM. */
static int free_gpus_at(const drv_sim *s, const drv_workload *wl, double t, int64_t *cap,
                        int64_t *fre)
{
    const drv_state *st = drv_sim_state(s);
    int32_t np, *kind = drv_calloc((size_t)st->nnodes + 1, sizeof *kind);
    if (!kind)
        return DRV_ENOMEM;
    for (int32_t n = 0; n < st->nnodes; n++) {
        int32_t ty = drv_node_gpu_type(st, n);
        const char *name = ty > 0 ? drv_strtab_str(st->names, ty) : "-";
        for (int32_t k = 1; drv_sim_gpu_type_name(s, k) && !kind[n]; k++)
            if (strcmp(drv_sim_gpu_type_name(s, k), name) == 0)
                kind[n] = k;
        cap[kind[n]] += st->nodes[n].alloc.gpu; /* [0]: nodes of no type (no GPUs) */
    }
    for (int32_t k = 0; k <= DRV_MAX_GPU_TYPES; k++)
        fre[k] = cap[k];
    const drv_placement *pl = drv_sim_placements(s, &np);
    for (int32_t i = 0; i < np; i++)
        if (pl[i].start < t && (pl[i].end < 0 || pl[i].end > t))
            fre[kind[pl[i].node]] -= wl->jobs[pl[i].job].role[pl[i].role].req.gpu;
    drv_free(kind);
    return 0;
}

/* The first bind of job's GPU pods in the placement log: its time and node, or -1. */
static int32_t first_gpu_bind(const drv_sim *s, const drv_workload *wl, int32_t job, double *t)
{
    int32_t np, node = -1;
    const drv_placement *pl = drv_sim_placements(s, &np);
    for (int32_t i = 0; i < np; i++)
        if (pl[i].job == job && wl->jobs[job].role[pl[i].role].req.gpu > 0 &&
            (node < 0 || pl[i].start < *t)) {
            node = pl[i].node;
            *t = pl[i].start;
        }
    return node;
}

/* The type line of a run s that ended: where job's GPU pods went first, its one-GPU speed per
 * type and the free GPUs per type then. */
static int print_type_line(const drv_sim *s, const drv_workload *wl, const cli_explain_calib *c,
                           int32_t job)
{
    const drv_state *st = drv_sim_state(s);
    const drv_jobspec *js = &wl->jobs[job];
    double t = 0;
    int32_t node = first_gpu_bind(s, wl, job, &t);
    if (node < 0) {
        printf("job %s held no GPU in the run (policy %s): no GPU type was chosen for it\n\n",
               js->name, drv_sim_policy(s));
        return 0;
    }
    int32_t ty = drv_node_gpu_type(st, node), n;
    const char *type = ty > 0 ? drv_strtab_str(st->names, ty) : "-";
    printf("job %s ran on GPU type %s (placed there at t=%.1f s by policy %s)", js->name, type, t,
           drv_sim_policy(s));
    bool cal = c && c->calib && js->calib_app > 0;
    if (cal) {
        printf(": %.3g steps/s on one GPU there (",
               one_gpu_speed(c->calib, c->fallback, js->calib_app - 1, type, js->batch));
        for (int32_t k = 1, i = 0; drv_sim_gpu_type_name(s, k); k++)
            if (strcmp(drv_sim_gpu_type_name(s, k), type) != 0)
                printf("%s%s %.3g", i++ ? ", " : "", drv_sim_gpu_type_name(s, k),
                       one_gpu_speed(c->calib, c->fallback, js->calib_app - 1,
                                     drv_sim_gpu_type_name(s, k), js->batch));
        printf(") at its batch %g", js->batch);
    } else {
        printf(": its model is not calibrated, so it runs at the same speed on every type");
    }
    int64_t cap[DRV_MAX_GPU_TYPES + 1] = {0}, fre[DRV_MAX_GPU_TYPES + 1] = {0};
    if (free_gpus_at(s, wl, t, cap, fre) != 0) {
        printf("\n");
        return DRV_ENOMEM;
    }
    printf(";\nGPUs free then, before its own:");
    for (int32_t k = 1; drv_sim_gpu_type_name(s, k); k++)
        printf("%s %lld of %lld %s", k > 1 ? "," : "", (long long)fre[k], (long long)cap[k],
               drv_sim_gpu_type_name(s, k));
    const drv_jobresult *r = drv_sim_jobs(s, &n);
    const char *last = r && job < n ? drv_sim_gpu_type_name(s, r[job].gpu_type) : NULL;
    if (last && strcmp(last, type) != 0)
        printf("; it later moved to %s, the type it last ran on", last);
    printf("\n\n");
    return 0;
}

/* On a cluster with GPU types, the type line of job (print_type_line) from a whole run under
 * prof. 0 or the exit status, the error printed. */
static int print_gpu_type(const drv_cluster_spec *cl, const drv_workload *wl,
                          const drv_catalogue *cat, const drv_profile *prof,
                          const cli_explain_calib *c, uint64_t seed, int32_t job)
{
    drv_diag d = {{0}};
    drv_sim_config cfg = {.seed = seed,
                          .placements = true,
                          .calib = c ? c->calib : NULL,
                          .calib_type_fallback = c && c->fallback};
    drv_sim *s = NULL;
    int rc = drv_sim_new(cl, wl, cat, prof, &cfg, &s, &d);
    if (!rc)
        rc = drv_sim_run(s, &d);
    if (!rc)
        rc = print_type_line(s, wl, c, job);
    drv_sim_free(s);
    if (rc) {
        fprintf(stderr, "drover: %s\n", d.msg[0] ? d.msg : drv_strerror(rc));
        return rc == DRV_EINVAL ? EXIT_USAGE : EXIT_RUN;
    }
    return 0;
}

int cli_explain_job(const drv_cluster_spec *cl, const drv_workload *wl, const drv_catalogue *cat,
                    const drv_profile *prof, const cli_explain_calib *calib, uint64_t seed,
                    const char *name)
{
    int32_t job = -1;
    int rc;
    for (int32_t i = 0; i < wl->n && job < 0; i++)
        if (strcmp(wl->jobs[i].name, name) == 0)
            job = i;
    if (job < 0) {
        fprintf(stderr, "drover sim: --explain: no job named '%s' in the workload\n", name);
        return EXIT_USAGE;
    }
    if (wl->jobs[job].topo_mode != DRV_TOPO_NONE &&
        (rc = print_topology(cl, wl, cat, prof, seed, job)) != 0)
        return rc;
    if (cl->gpu_types && (rc = print_gpu_type(cl, wl, cat, prof, calib, seed, job)) != 0)
        return rc;
    const drv_plugin_use *use = priority_use(prof);
    bool fair = orders_by(prof, "fairshare");
    if (!use && !fair) {
        print_order(prof, name);
        return 0;
    }
    drv_diag d = {{0}};
    drv_sim_config cfg = {.seed = seed};
    drv_sim *s = NULL;
    drv_priority_breakdown b;
    double t = ceil(wl->jobs[job].submit / prof->period) * prof->period;
    rc = drv_sim_new(cl, wl, cat, prof, &cfg, &s, &d);
    if (!rc)
        rc = drv_sim_run_until(s, t, &d);
    if (!rc) /* submitted at t itself: not in the state yet */
        rc = drv_sim_enter_job(s, job);
    if (!rc && use)
        rc = drv_priority_explain(drv_sim_state(s), t, job, drv_profile_knobs(prof, use),
                                  use->nknobs, &b, &d);
    if (!rc) {
        printf("job %s at t=%.1f s (policy %s)", name, t, prof->name);
        if (use)
            printf(", normalised over %d queued jobs", (int)b.queued);
        printf("\n\n");
    }
    if (!rc && (fair || drv_sim_state(s)->nqueues > 0))
        rc = print_shares(drv_sim_state(s), job);
    if (rc) {
        fprintf(stderr, "drover: %s\n", d.msg[0] ? d.msg : drv_strerror(rc));
        drv_sim_free(s);
        return rc == DRV_EINVAL ? EXIT_USAGE : EXIT_RUN;
    }
    if (!use) {
        print_order(prof, name);
        drv_sim_free(s);
        return 0;
    }
    printf("%-12s %12s %10s %8s %12s\n", "factor", "value", "normalised", "weight", "contribution");
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++) /* a share is a fraction: more digits */
        printf(f == DRV_PRIO_SHARE ? "%-12s %12.4f %10.3f %8.3f %12.4f\n"
                                   : "%-12s %12.1f %10.3f %8.3f %12.4f\n",
               drv_priority_factor_name(f), b.raw[f], b.norm[f], b.weight[f],
               b.weight[f] * b.norm[f]);
    printf("%-12s %12s %10s %8s %12.4f\n", "priority", "", "", "", b.total);
    drv_sim_free(s);
    return 0;
}

/* `drover run`'s account of a waiting job in its Event (drv_ctrl_opts.explain): the combined
 * priority factor by factor, weight x normalised value, when the profile orders by it. */
void cli_explain_event(void *arg, const drv_profile *prof, const drv_state *st, double now,
                       int32_t job, char *buf, size_t n)
{
    (void)arg;
    buf[0] = 0;
    const drv_plugin_use *use = priority_use(prof);
    drv_priority_breakdown b;
    drv_diag d = {{0}};
    if (!use ||
        drv_priority_explain(st, now, job, drv_profile_knobs(prof, use), use->nknobs, &b, &d) != 0)
        return;
    size_t at = (size_t)snprintf(buf, n, "; priority %.3f =", b.total);
    for (int f = 0; f < DRV_PRIO_NFACTORS && at < n; f++)
        at += (size_t)snprintf(buf + at, n - at, "%s %s %.2f x %.3f", f ? " +" : "",
                               drv_priority_factor_name(f), b.weight[f], b.norm[f]);
    if (at < n)
        snprintf(buf + at, n - at, " over %d queued jobs", (int)b.queued);
}
