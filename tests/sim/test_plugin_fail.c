/*
 * Every error reaches the cycle's caller (docs/cycle.md, "Errors"), plugin by plugin: for each
 * plugin of the registry, a simulation in which it works is run once to count the allocations
 * each of its calls makes (its own, its arena's, the core helpers' it calls), then again with
 * one of them failed: the m-th allocation of a call that allocates, for a few such calls and
 * every m. The plugin's table is wrapped (a copy whose callbacks count and then call the real
 * ones), so the failure lands inside the plugin's call and nowhere else.
 *
 * A run with a failed allocation must either stop with DRV_ENOMEM and a message that says so,
 * or - where the plugin has a slower way to the same answer (a cache it could not grow) - end
 * exactly as the run without failures, job for job. A run that ends any other way took a cycle
 * that lost decisions for a whole one. Each plugin that allocates must also show the failure
 * reaching the caller at least once, named in the simulator's message.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drover/policy.h"
#include "drover/trace.h"
#include "testutil.h"

/* Where a plugin works: a profile that uses it, built in or from a file, on a cluster file and
 * a workload, or (cluster NULL) on the Pollux cluster with the first rows of a Pollux trace.
 * absorbs: the plugin has caches it can do without (the same answer, more slowly), so a failed
 * allocation may leave the run as it was; every other plugin must stop it, every time. */
typedef struct scenario {
    const char *plugin;
    bool absorbs;
    const char *profile;
    const char *profiles_file; /* NULL: a built-in profile */
    const char *cluster;
    const char *workload;
} scenario;

#define TWO_NODES "tests/fixtures/sim/two-nodes.yaml", "tests/fixtures/sim/two-jobs.yaml"
#define MIX "examples/cluster-hetero-8node.yaml", "examples/mix-8node-60job.yaml"
#define GPU "examples/cluster-gpu.yaml", "examples/dragon-gpu.yaml"
#define FLOWCON "examples/cluster-4node.yaml", "examples/flowcon-4node-20job.yaml"
#define SPECON "examples/cluster-4node.yaml", "examples/specon-4node-7job.yaml"
#define TENANTS "examples/cluster-tenants.yaml", "examples/tenants-workload.yaml"
#define POLLUX NULL, "data/pollux/workloads/workload-1.csv"

static const scenario scenarios[] = {
    {"fifo", false, "gang-fifo", NULL, TWO_NODES},
    {"pod-by-pod", false, "k8s-default", NULL, FLOWCON},
    {"gang", false, "gang-fifo", NULL, MIX},
    {"least-allocated", false, "gang-fifo", NULL, MIX},
    {"most-allocated", false, "dragon", NULL, GPU},
    {"priority", true, "drover", NULL, TENANTS}, /* its factor pool, bound heaps, last list */
    {"locality", false, "volcano-priority", NULL, MIX},
    {"ps-anti-affinity", false, "volcano-priority", NULL, MIX},
    {"dragon", true, "dragon", NULL, GPU},                /* which jobs have a fixed size */
    {"autoscale", true, "autoscale-operator", NULL, MIX}, /* the same (elastic.c) */
    {"flowcon", false, "flowcon", NULL, FLOWCON},
    {"specon", false, "specon", NULL, SPECON},
    {"tiresias", false, "tiresias", NULL, POLLUX},
    {"optimus", false, "optimus", NULL, POLLUX},
    {"goodput", true, "drover", NULL, POLLUX}, /* its goodput tables */
    {"preempt", false, "gang-preempt", "examples/preempt-profiles.yaml",
     "examples/cluster-4node.yaml", "examples/preempt-4node.yaml"},
    {"fairshare", false, "drover", NULL, TENANTS},
    /* rigid jobs of the Philly trace contend on the Pollux cluster: levels, claimants, victims;
     * absorbs: its level cache (room) can be done without */
    {"las", true, "drover", NULL, NULL, "data/pollux/philly.csv"},
    /* rack-bound gangs wait behind small jobs on every rack: movers, prices, rollbacks */
    {"defrag", false, "drover-defrag", "examples/defrag-profiles.yaml",
     "examples/cluster-topology.yaml", "examples/topology-frag-workload.yaml"},
};

enum {
    TRACE_ROWS = 10, /* of the Pollux trace: enough to contend for its 16 GPUs */
    CALLS = 3,       /* calls that allocate, failed in: the first, a middle one, the last */
    FAILS = 8,       /* allocations failed per call: the first FAILS, then a few spread */
};

/* ---- the wrapped plugin ------------------------------------------------------------------- */

static const long COUNTING = LONG_MAX / 2; /* a countdown that never ends: counts allocations */

static const drv_plugin *real; /* the plugin under test */
static drv_plugin proxy;       /* its table, every callback wrapped */
static int depth;              /* nested calls of it (only the outermost counts) */
static long ncall;             /* its outermost calls so far in this run */
static long plan_call = -1;    /* in this call ... */
static long plan_nth;          /* ... fail this allocation */
static bool fired;             /* the planned failure happened in the planned call */

/* The counting run: the calls that allocated, and how many allocations each made. */
typedef struct alloc_call {
    long call, allocs;
} alloc_call;
static alloc_call *seen;
static long nseen, cap_seen;

static void enter(void)
{
    if (depth++ > 0)
        return;
    drv_alloc_fail_at(ncall == plan_call ? plan_nth : COUNTING);
    ncall++;
}

static void leave(void)
{
    if (--depth > 0)
        return;
    long pending = drv_alloc_fail_pending(), k = ncall - 1;
    drv_alloc_fail_at(0);
    if (k == plan_call) {
        fired = pending == 0;
    } else if (plan_call < 0 && COUNTING - pending > 0) {
        if (nseen == cap_seen) {
            cap_seen = cap_seen ? 2 * cap_seen : 256;
            seen = realloc(seen, (size_t)cap_seen * sizeof *seen);
            assert_non_null(seen);
        }
        seen[nseen++] = (alloc_call){k, COUNTING - pending};
    }
}

/* A wrapper of callback f (returning R, or void) around the real plugin's: the outermost
 * call is counted, and in the planned one the planned allocation fails. */
#define WRAPPER(R, f, params, args)                                                                \
    static R w_##f params                                                                          \
    {                                                                                              \
        enter();                                                                                   \
        R r = real->f args;                                                                        \
        leave();                                                                                   \
        return r;                                                                                  \
    }
#define WRAPPER_VOID(f, params, args)                                                              \
    static void w_##f params                                                                       \
    {                                                                                              \
        enter();                                                                                   \
        real->f args;                                                                              \
        leave();                                                                                   \
    }
/* (clang-format would read the parameter lists as products) */
/* clang-format off */
WRAPPER(bool, starts_blind, (const drv_ctx *c, void *s), (c, s))
WRAPPER(double, wake, (const drv_ctx *c, void *s), (c, s))
WRAPPER(int, queue_cmp, (const drv_ctx *c, void *s, int32_t a, int32_t b), (c, s, a, b))
WRAPPER(double, queue_key, (const drv_ctx *c, void *s, int32_t job), (c, s, job))
WRAPPER_VOID(queue_begin, (const drv_ctx *c, void *s, const int32_t *jobs, int32_t n),
             (c, s, jobs, n))
WRAPPER(bool, queue_kept, (const drv_ctx *c, void *s), (c, s))
WRAPPER(bool, queue_idle, (const drv_ctx *c, void *s), (c, s))
WRAPPER_VOID(admit, (drv_ctx *c, void *s, const int32_t *jobs, int32_t n), (c, s, jobs, n))
WRAPPER(int, filter, (const drv_ctx *c, void *s, int32_t pod, int32_t node), (c, s, pod, node))
WRAPPER(int, score, (const drv_ctx *c, void *s, int32_t pod, int32_t node), (c, s, pod, node))
WRAPPER(int, score_bound, (const drv_ctx *c, void *s, int32_t pod, const drv_node_set *set),
        (c, s, pod, set))
WRAPPER(bool, score_flat, (const drv_ctx *c, void *s, int32_t pod, int *value), (c, s, pod, value))
WRAPPER_VOID(scale, (drv_ctx *c, void *s), (c, s))
WRAPPER_VOID(reallocate, (drv_ctx *c, void *s), (c, s))
WRAPPER_VOID(migrate, (drv_ctx *c, void *s), (c, s))
/* clang-format on */
#undef WRAPPER
#undef WRAPPER_VOID

/* The proxy for p: its table (knob reading, keys and flags as they are), each callback it has
 * wrapped; the ones it has not stay NULL, as the core asks whether they exist. */
static void wrap(const drv_plugin *p)
{
    real = p;
    proxy = *p;
#define WRAP(f)                                                                                    \
    if (p->f)                                                                                      \
    proxy.f = w_##f
    WRAP(starts_blind);
    WRAP(wake);
    WRAP(queue_cmp);
    WRAP(queue_key);
    WRAP(queue_begin);
    WRAP(queue_kept);
    WRAP(queue_idle);
    WRAP(admit);
    WRAP(filter);
    WRAP(score);
    WRAP(score_bound);
    WRAP(score_flat);
    WRAP(scale);
    WRAP(reallocate);
    WRAP(migrate);
#undef WRAP
}

/* ---- a run -------------------------------------------------------------------------------- */

typedef struct outcome {
    int rc;
    drv_diag d;
    drv_summary sum;
    drv_jobresult *rows; /* malloc'd, nrows */
    int32_t nrows;
} outcome;

/* The inputs of a scenario, loaded once per plugin. */
typedef struct inputs {
    drv_cluster_spec cluster;
    drv_workload wl;
    drv_profile prof; /* with the plugin under test replaced by the proxy */
    bool calibrated;
} inputs;

static void load_inputs(const scenario *sc, inputs *in)
{
    drv_diag d = {{0}};
    memset(in, 0, sizeof *in);
    int rc;
    if (sc->cluster) {
        rc = drv_cluster_load(&in->cluster, tu_path("%s", sc->cluster), &d);
        if (!rc)
            rc = drv_workload_load(&in->wl, tu_path("%s", sc->workload), &tu_cat, 1, &d);
    } else { /* the trace's first rows, on the Pollux cluster (4 nodes) */
        drv_cluster_pollux(&in->cluster, 4, DRV_POLLUX_GPUS);
        FILE *f = fopen(tu_path("%s", sc->workload), "r");
        assert_non_null(f);
        char text[8192];
        size_t len = 0;
        for (int line = 0; line <= TRACE_ROWS && fgets(text + len, (int)(sizeof text - len), f);
             line++)
            len += strlen(text + len);
        fclose(f);
        drv_trace_opts o = {DRV_TRACE_AUTO, false, 1, &tu_calib, DRV_POLLUX_GPUS};
        rc = drv_trace_parse(&in->wl, sc->workload, text, &tu_cat, &o, NULL, &d);
        in->calibrated = true;
    }
    if (!rc && sc->profiles_file) {
        drv_profile *ps = NULL;
        int n = 0;
        rc = drv_profile_file_load(tu_path("%s", sc->profiles_file), &ps, &n, &d);
        int i = 0;
        while (!rc && i < n && strcmp(ps[i].name, sc->profile) != 0)
            i++;
        if (!rc && i == n)
            fail_msg("%s: no profile %s", sc->profiles_file, sc->profile);
        if (!rc)
            in->prof = ps[i];
        drv_free(ps);
    } else if (!rc) {
        rc = drv_profile_builtin(sc->profile, &in->prof, &d);
    }
    if (rc)
        fail_msg("%s: %s", sc->plugin, d.msg);
    int uses = 0;
    for (int pt = 0; pt < DRV_NPOINTS; pt++)
        for (int i = 0; i < in->prof.nuse[pt]; i++)
            if (strcmp(in->prof.use[pt][i].p->name, sc->plugin) == 0) {
                wrap(in->prof.use[pt][i].p);
                in->prof.use[pt][i].p = &proxy;
                uses++;
            }
    if (!uses)
        fail_msg("profile %s does not use plugin %s", sc->profile, sc->plugin);
}

static void free_inputs(inputs *in)
{
    drv_workload_fini(&in->wl);
    drv_cluster_fini(&in->cluster);
}

/* One run to the end, invariants checked after every cycle; with plan_call >= 0 its planned
 * allocation fails. */
static void run(const inputs *in, outcome *o)
{
    memset(o, 0, sizeof *o);
    depth = 0;
    ncall = 0;
    fired = false;
    drv_sim *s = NULL;
    drv_sim_config cfg = {.seed = 1, .check = true, .calib = in->calibrated ? &tu_calib : NULL};
    o->rc = drv_sim_new(&in->cluster, &in->wl, &tu_cat, &in->prof, &cfg, &s, &o->d);
    if (!o->rc)
        o->rc = drv_sim_run(s, &o->d);
    if (!o->rc) {
        drv_sim_summary(s, &o->sum);
        const drv_jobresult *r = drv_sim_jobs(s, &o->nrows);
        o->rows = malloc((size_t)o->nrows * sizeof *r + 1);
        assert_non_null(o->rows);
        memcpy(o->rows, r, (size_t)o->nrows * sizeof *r);
    }
    drv_sim_free(s);
    drv_alloc_fail_at(0);
}

/* Whether two finished runs ended alike: every job's row, and the totals, to the bit. */
static bool same_end(const outcome *a, const outcome *b)
{
    const drv_summary *x = &a->sum, *y = &b->sum;
    return a->nrows == b->nrows &&
           memcmp(a->rows, b->rows, (size_t)a->nrows * sizeof *a->rows) == 0 &&
           x->done == y->done && x->decisions == y->decisions && x->cycles == y->cycles &&
           x->preemptions == y->preemptions && x->migrations == y->migrations &&
           x->scales == y->scales && x->resizes == y->resizes &&
           memcmp(&x->avg_jct, &y->avg_jct, sizeof x->avg_jct) == 0 &&
           memcmp(&x->makespan, &y->makespan, sizeof x->makespan) == 0 &&
           memcmp(&x->cpu_util, &y->cpu_util, sizeof x->cpu_util) == 0 &&
           memcmp(&x->gpu_util, &y->gpu_util, sizeof x->gpu_util) == 0;
}

/* The allocations of call seen[i] to fail: the first FAILS, then every step-th, then the last. */
static long next_nth(long nth, long allocs)
{
    long step = allocs / FAILS > 1 ? allocs / FAILS : 1;
    if (nth < FAILS || nth == allocs)
        return nth + 1;
    return nth + step < allocs ? nth + step : allocs;
}

/* The plugin of sc, failed in: returns how many runs stopped with the error; *silent counts
 * those that ended as if whole but otherwise (each printed). */
static int fail_in_plugin(const scenario *sc, int *silent)
{
    inputs in;
    load_inputs(sc, &in);
    outcome ref;
    nseen = 0;
    plan_call = -1;
    run(&in, &ref);
    if (ref.rc)
        fail_msg("%s: the run without failures failed: %s", sc->plugin, ref.d.msg);
    long pick[CALLS] = {0, nseen / 2, nseen - 1};
    int stopped = 0, absorbed = 0, named = 0;
    for (int k = 0; k < CALLS && nseen > 0; k++) {
        if (k > 0 && pick[k] == pick[k - 1])
            continue;
        alloc_call at = seen[pick[k]];
        for (long nth = 1; nth <= at.allocs; nth = next_nth(nth, at.allocs)) {
            outcome o;
            plan_call = at.call;
            plan_nth = nth;
            run(&in, &o);
            if (!fired)
                fail_msg("%s: call %ld made fewer than %ld allocations this time", sc->plugin,
                         at.call, nth);
            if (o.rc == 0 && (!sc->absorbs || !same_end(&o, &ref))) {
                print_error("%s: allocation %ld of its call %ld failed, and the run ended as if "
                            "nothing had (%s the run without failures)\n",
                            sc->plugin, nth, at.call, same_end(&o, &ref) ? "as" : "unlike");
                ++*silent;
            } else if (o.rc == 0) {
                absorbed++;
            } else {
                if (o.rc != DRV_ENOMEM || !strstr(o.d.msg, "out of memory"))
                    fail_msg("%s: allocation %ld of its call %ld: got %d '%s', want DRV_ENOMEM",
                             sc->plugin, nth, at.call, o.rc, o.d.msg);
                char who[80];
                snprintf(who, sizeof who, "plugin %s (", sc->plugin);
                named += strstr(o.d.msg, who) != NULL;
                stopped++;
            }
            free(o.rows);
        }
    }
    print_message("%-17s %6ld calls allocated; failed in: %d stopped the run (%d named it), %d "
                  "absorbed\n",
                  sc->plugin, nseen, stopped, named, absorbed);
    if (nseen > 0 && named == 0) {
        print_error("%s: allocates in its calls, but no failure was reported as its\n", sc->plugin);
        ++*silent;
    }
    plan_call = -1;
    free(ref.rows);
    free_inputs(&in);
    return stopped;
}

static void test_every_plugin(void **unused)
{
    (void)unused;
    int n;
    const drv_plugin *const *ps = drv_plugins(&n);
    int allocating = 0, silent = 0;
    for (int i = 0; i < n; i++) {
        const scenario *sc = NULL;
        for (size_t k = 0; k < sizeof scenarios / sizeof scenarios[0]; k++)
            if (strcmp(scenarios[k].plugin, ps[i]->name) == 0)
                sc = &scenarios[k];
        if (!sc)
            fail_msg("plugin %s has no scenario here: add one where it works", ps[i]->name);
        allocating += fail_in_plugin(sc, &silent) > 0;
    }
    assert_int_equal(silent, 0);
    /* Those that allocate in their calls: every plugin with scratch or state to grow, and the
     * admitting ones through the core's decision list (fifo and the scores allocate nothing). */
    assert_true(allocating >= 11);
    free(seen);
}

/* A scale plugin that breaks the BATCH contract once: the first batch-adaptive job it sees is
 * set one above its range. */
static int32_t bad_job = -1;
static int64_t bad_value;

static void bad_batch_scale(drv_ctx *c, void *state)
{
    (void)state;
    const drv_state *st = drv_ctx_state(c);
    const drv_calib_jobs *m = drv_ctx_snap(c)->model;
    DRV_FOR_LIVE(st, j)
    if (bad_job < 0 && drv_calib_job_adaptive(m, j)) {
        const drv_calib_job *cj = drv_calib_job_of(m, j);
        bad_job = j;
        bad_value = cj->batch_max + 1;
        drv_ctx_set_batch(c, j, bad_value, cj->batch);
    }
}

static const drv_plugin bad_batch = {.name = "bad-batch", .scale = bad_batch_scale};

/* The simulator refuses the decision and says which: the decision as text, when, which policy,
 * and the range it broke; no result. */
static void test_refused_decision_named(void **unused)
{
    (void)unused;
    inputs in;
    const scenario sc = {"gang", false, "gang-fifo", NULL, POLLUX};
    load_inputs(&sc, &in);
    in.prof.use[DRV_PT_ADMIT][0].p = drv_plugin_find("gang"); /* unwrapped */
    in.prof.use[DRV_PT_SCALE][0] = (drv_plugin_use){&bad_batch, 1, 0, 0};
    in.prof.nuse[DRV_PT_SCALE] = 1;
    outcome o;
    plan_call = -1;
    run(&in, &o);
    assert_int_equal(o.rc, DRV_EINVAL);
    assert_true(bad_job >= 0);
    char want[160];
    snprintf(want, sizeof want, "applying BATCH %s %lld at t=", in.wl.jobs[bad_job].name,
             (long long)bad_value);
    if (!strstr(o.d.msg, want) || !strstr(o.d.msg, "(policy gang-fifo)") ||
        !strstr(o.d.msg, "outside the job's batch range"))
        fail_msg("got '%s', want it to name '%s...', the policy and the range", o.d.msg, want);
    free_inputs(&in);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_plugin),
        cmocka_unit_test(test_refused_decision_named),
    };
    return cmocka_run_group_tests(tests, tu_models_setup, tu_models_teardown);
}
