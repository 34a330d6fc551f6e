/*
 * sim_parallel - policy comparisons and multi-seed runs spread over every core
 * (drv_sim_batch_run), against the same runs one after another, in one process.
 *
 * The workload: every built-in policy on the Pollux research workload 1 (160 jobs, 16 nodes x 4
 * GPUs, Pollux mechanics) over --seeds seeds. Reported: the wall time of the runs one at a time
 * (each run timed alone: the baseline and the per-run times), of the same runs with one thread
 * per core, their ratio, whether every summary is identical, and the speed-up expected on 16
 * cores: the per-run times scheduled as the batch schedules them (each free thread takes the
 * next run in order) on 16 threads, and the bound no schedule can beat: the longest run (the
 * critical path) or the sum of the runs over 16, whichever is larger.
 *
 * usage: sim_parallel [--seeds N] [--trace FILE] [--threads N]   (run from the repository root)
 */
#include "drover/calib.h"
#include "drover/policy.h"
#include "drover/sim_batch.h"
#include "drover/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, const drv_diag *d)
{
    fprintf(stderr, "sim_parallel: %s: %s\n", what, d ? d->msg : "");
    exit(1);
}

/* The makespan of runs taken in order by the first free of k threads. */
static double schedule(const double *t, int n, int k)
{
    double *free_at = calloc((size_t)k, sizeof *free_at), end = 0;
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int j = 1; j < k; j++)
            if (free_at[j] < free_at[best])
                best = j;
        free_at[best] += t[i];
        if (free_at[best] > end)
            end = free_at[best];
    }
    free(free_at);
    return end;
}

int main(int argc, char **argv)
{
    int nseeds = 4, threads = 0;
    const char *trace = "data/pollux/workloads/workload-1.csv";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--seeds"))
            nseeds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--trace"))
            trace = argv[i + 1];
        else if (!strcmp(argv[i], "--threads"))
            threads = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: sim_parallel [--seeds N] [--trace FILE] [--threads N]\n");
            return 2;
        }
    }
    if (nseeds < 1 || nseeds > 64) {
        fprintf(stderr, "sim_parallel: --seeds: 1 to 64\n");
        return 2;
    }
    if (threads <= 0)
        threads = drv_sim_batch_threads();
    drv_diag d = {{0}};
    drv_catalogue cat = {0}; /* drv_catalogue_builtin frees what it held */
    drv_cluster_spec cl = {0};
    drv_calib calib = {0};
    if (drv_catalogue_builtin(&cat, &d) || drv_calib_load(&calib, "data/pollux/profiles", &d))
        die("inputs", &d);
    drv_cluster_pollux(&cl, DRV_POLLUX_NODES, DRV_POLLUX_GPUS);
    drv_workload *wl = calloc((size_t)nseeds, sizeof *wl);
    for (int s = 0; s < nseeds; s++) {
        drv_trace_opts to = {DRV_TRACE_AUTO, false, (uint64_t)s + 1, &calib, DRV_POLLUX_GPUS};
        int32_t skipped;
        if (drv_trace_load(&wl[s], trace, &cat, &to, &skipped, &d))
            die(trace, &d);
    }
    int np = drv_profile_builtin_count();
    drv_profile *prof = calloc((size_t)np, sizeof *prof);
    for (int p = 0; p < np; p++) {
        if (drv_profile_builtin(drv_profile_builtin_name(p), &prof[p], &d))
            die(drv_profile_builtin_name(p), &d);
        prof[p].period = DRV_POLLUX_ROUND;
    }
    int n = np * nseeds;
    drv_sim_task *one = calloc((size_t)n, sizeof *one), *all = calloc((size_t)n, sizeof *all);
    double *t = calloc((size_t)n, sizeof *t);
    for (int i = 0; i < n; i++)
        one[i] = (drv_sim_task){.cluster = &cl,
                                .workload = &wl[i / np],
                                .catalogue = &cat,
                                .profile = &prof[i % np],
                                .cfg = {.seed = (uint64_t)(i / np) + 1, .calib = &calib}};
    memcpy(all, one, (size_t)n * sizeof *one);
    double seq = 0;
    for (int i = 0; i < n; i++) { /* one at a time, each timed */
        double t0 = now();
        if (drv_sim_batch_run(&one[i], 1, 1))
            die(one[i].profile->name, &one[i].d);
        t[i] = now() - t0;
        seq += t[i];
    }
    double t0 = now();
    if (drv_sim_batch_run(all, n, threads))
        die("batch", NULL);
    double par = now() - t0;
    int same = 0;
    for (int i = 0; i < n; i++)
        same += memcmp(&one[i].summary, &all[i].summary, sizeof one[i].summary) == 0;
    double longest = 0;
    for (int i = 0; i < n; i++)
        longest = t[i] > longest ? t[i] : longest;
    printf("%d policies x %d seeds = %d runs of %s (Pollux mechanics)\n", np, nseeds, n, trace);
    printf("one at a time      %8.2f s   (longest run %.2f s)\n", seq, longest);
    printf("%2d threads         %8.2f s   speed-up %.2fx; summaries identical: %d of %d\n", threads,
           par, seq / par, same, n);
    printf("expected on 16 cores (per-run times, in-order scheduling): %.2f s, speed-up %.2fx\n",
           schedule(t, n, 16), seq / schedule(t, n, 16));
    /* No schedule beats the longest run (the critical path) nor the work spread evenly. */
    double bound = longest > seq / 16 ? longest : seq / 16;
    printf("bound on 16 cores: max(longest run %.2f s, sum/16 %.2f s) = %.2f s, speed-up at most "
           "%.2fx\n",
           longest, seq / 16, bound, seq / bound);
    return same == n ? 0 : 1;
}
