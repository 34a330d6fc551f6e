/*
 * registry.c - every plugin, and the built-in profiles as profile lines (format in policy.h).
 * Adding a policy: write src/policy/<name>.c with its drv_plugin table, list it in `plugins`
 * below, and give it a profile line in `profiles`.
 */
#include "drover/policy.h"

#include <stdio.h>
#include <string.h>

extern const drv_plugin drv_plugin_fifo, drv_plugin_pod_by_pod, drv_plugin_gang,
    drv_plugin_least_allocated, drv_plugin_most_allocated, drv_plugin_priority, drv_plugin_locality,
    drv_plugin_ps_anti_affinity, drv_plugin_dragon, drv_plugin_autoscale, drv_plugin_flowcon,
    drv_plugin_specon, drv_plugin_tiresias, drv_plugin_optimus, drv_plugin_goodput,
    drv_plugin_preempt, drv_plugin_fairshare, drv_plugin_las, drv_plugin_defrag;

static const drv_plugin *const plugins[] = {
    &drv_plugin_fifo,           &drv_plugin_pod_by_pod,
    &drv_plugin_gang,           &drv_plugin_least_allocated,
    &drv_plugin_most_allocated, &drv_plugin_priority,
    &drv_plugin_locality,       &drv_plugin_ps_anti_affinity,
    &drv_plugin_dragon,         &drv_plugin_autoscale,
    &drv_plugin_flowcon,        &drv_plugin_specon,
    &drv_plugin_tiresias,       &drv_plugin_optimus,
    &drv_plugin_goodput,        &drv_plugin_preempt,
    &drv_plugin_fairshare,      &drv_plugin_las,
    &drv_plugin_defrag,
};

const drv_plugin *const *drv_plugins(int *n)
{
    *n = (int)(sizeof plugins / sizeof plugins[0]);
    return plugins;
}

const drv_plugin *drv_plugin_find(const char *name)
{
    int n;
    const drv_plugin *const *ps = drv_plugins(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(ps[i]->name, name) == 0)
            return ps[i];
    return NULL;
}

static const struct {
    const char *name, *doc, *line;
} profiles[] = {
    {"k8s-default", "default kube-scheduler: pods one at a time, spread, no gang",
     "gang=false period=1 queue_order=fifo admit=pod-by-pod score=least-allocated"},
    {"gang-fifo", "whole-job admission in FIFO order, no elasticity (Volcano gang + FIFO)",
     "gang=true period=1 queue_order=fifo admit=gang score=least-allocated"},
    {"volcano-priority", "combined priority, gang, PS-worker affinity, PS anti-affinity (Volcano)",
     "gang=true period=1 queue_order=priority admit=gang "
     "score=locality*2,ps-anti-affinity,least-allocated"},
    {"dragon", "gang at min..requested, starvation relief, idle scale-up, locality (DRAGON)",
     "gang=true period=15 queue_order=fifo admit=dragon scale=dragon "
     "score=locality*3,most-allocated"},
    {"autoscale-operator",
     "affinity-first placement, symmetric release/grow (Jeong & Yu's autoscaling operator)",
     "gang=true period=15 queue_order=fifo admit=autoscale scale=autoscale "
     "score=locality*5,least-allocated"},
    {"flowcon", "CPU limits from growth efficiency, FlowCon 2.0 placement (FlowCon)",
     "gang=false period=10 queue_order=fifo admit=pod-by-pod score=flowcon*2,least-allocated "
     "reallocate=flowcon"},
    {"specon", "migrate converging jobs off contended nodes when gain > cost (SpeCon)",
     "gang=false period=1 queue_order=fifo admit=pod-by-pod score=least-allocated "
     "migrate=specon(unit=60)"},
    {"tiresias", "Tiresias: 2D least-attained service, discretised queues, preemptive",
     "gang=true period=60 queue_order=tiresias admit=tiresias migrate=tiresias"},
    {"optimus", "Optimus: workers by marginal gain in remaining time, re-sized every period",
     "gang=true period=60 admit=optimus scale=optimus"},
    {"drover",
     "goodput (GPUs + batch) for calibrated jobs; least attained service with preemption for rigid "
     "ones; else priority + elastic gang (DRAGON, growth only) + locality + SpeCon",
     "gang=true period=5 queue_order=fairshare,las,priority "
     "admit=goodput,dragon(grow_min_left=900;starve_wait=86400;quiet=120;start_wait=300;"
     "adaptive=0) "
     "scale=goodput,dragon "
     "score=locality*4,ps-anti-affinity,least-allocated migrate=las,specon"},
};

int drv_profile_builtin_count(void)
{
    return (int)(sizeof profiles / sizeof profiles[0]);
}

const char *drv_profile_builtin_name(int i)
{
    return profiles[i].name;
}

const char *drv_profile_builtin_line(int i)
{
    return profiles[i].line;
}

const char *drv_profile_builtin_doc(int i)
{
    return profiles[i].doc;
}

int drv_profile_builtin(const char *name, drv_profile *out, drv_diag *d)
{
    for (int i = 0; i < drv_profile_builtin_count(); i++)
        if (strcmp(profiles[i].name, name) == 0) {
            int rc = drv_profile_parse(name, profiles[i].line, out, d);
            if (!rc)
                snprintf(out->doc, sizeof out->doc, "%s", profiles[i].doc);
            return rc;
        }
    char known[512] = "";
    for (int i = 0; i < drv_profile_builtin_count(); i++) {
        strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
        strncat(known, profiles[i].name, sizeof known - strlen(known) - 1);
    }
    return drv_fail(d, DRV_ENOENT, "unknown policy '%s' (known: %s)", name, known);
}
