/*
 * trace_replay - replays the Philly-derived trace (data/pollux/philly.csv, 82,247 jobs) with
 * gang-fifo, and with `drover` when that profile exists, on GPU nodes of 4 GPUs; prints per
 * policy the wall time of the run, jobs/s, events, and the process's peak RSS.
 *
 * With --baseline 1, each policy also runs with a cycle every period (drv_sim_config.tick: the
 * time-stepped way, no quiet cycle skipped) - the row `<policy>/tick` - and the run checks that
 * every job's start, end, restarts and workers are the same both ways.
 *
 * Options: --trace FILE (default data/pollux/philly.csv) --calib-dir DIR (default
 * data/pollux/profiles) --nodes N (default 150 = 600 GPUs; the trace's 978,000 GPU-hours
 * over its ~110 days keep about 370 GPUs busy on average) --policy LIST --seed N.
 * Run from the repository root (bench/run.sh does).
 */
#include "drover/policy.h"
#include "drover/trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long peak_rss_kb(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

int main(int argc, char **argv)
{
    const char *trace = "data/pollux/philly.csv", *profiles = "data/pollux/profiles";
    const char *policies = "gang-fifo,drover";
    int32_t nodes = 150;
    uint64_t seed = 1;
    bool baseline = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--trace") == 0)
            trace = argv[i + 1];
        else if (strcmp(argv[i], "--calib-dir") == 0)
            profiles = argv[i + 1];
        else if (strcmp(argv[i], "--nodes") == 0)
            nodes = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--policy") == 0)
            policies = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0)
            seed = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--baseline") == 0)
            baseline = atoi(argv[i + 1]) != 0;
    }
    drv_diag d = {{0}};
    drv_catalogue cat = {0};
    drv_calib calib = {0};
    drv_cluster_spec c = {0};
    drv_workload w = {0};
    int32_t skipped = 0;
    double t0 = now_s();
    drv_cluster_pollux(&c, nodes, DRV_POLLUX_GPUS);
    c.timing.horizon = 400 * 86400.0; /* the trace spans ~110 days plus its backlog */
    drv_trace_opts o = {DRV_TRACE_AUTO, true, seed, &calib, DRV_POLLUX_GPUS};
    if (drv_catalogue_builtin(&cat, &d) || drv_calib_load(&calib, profiles, &d) ||
        drv_trace_load(&w, trace, &cat, &o, &skipped, &d)) {
        fprintf(stderr, "trace_replay: %s\n", d.msg);
        return 1;
    }
    printf("trace_replay: %s, %d jobs (%d rows skipped), %d nodes x %d GPUs, read in %.2f s\n",
           trace, w.n, skipped, nodes, DRV_POLLUX_GPUS, now_s() - t0);
    printf("%-15s %9s %10s %11s %10s %10s %10s %12s %12s\n", "policy", "wall_s", "jobs/s", "events",
           "cycles", "skipped", "done", "avgJCT_h", "peakRSS_MB");
    char *list = strdup(policies);
    int status = 0;
    for (char *save = NULL, *name = strtok_r(list, ",", &save); name;
         name = strtok_r(NULL, ",", &save)) {
        drv_profile p;
        if (drv_profile_builtin(name, &p, &d) != 0) {
            printf("%-12s (no such profile here)\n", name);
            continue;
        }
        drv_jobresult *first = NULL;
        for (int tick = 0; tick <= (baseline ? 1 : 0); tick++) {
            drv_sim_config cfg = {.seed = seed, .tick = tick, .calib = &calib};
            drv_sim *s = NULL;
            double t = now_s();
            if (drv_sim_new(&c, &w, &cat, &p, &cfg, &s, &d) || drv_sim_run(s, &d)) {
                fprintf(stderr, "trace_replay: %s: %s\n", name, d.msg);
                drv_sim_free(s);
                status = 1;
                break;
            }
            double wall = now_s() - t;
            drv_summary sum;
            drv_sim_summary(s, &sum);
            char label[64];
            snprintf(label, sizeof label, "%s%s", name, tick ? "/tick" : "");
            printf("%-15s %9.3f %10.0f %11lld %10lld %10lld %10d %12.2f %12.1f\n", label, wall,
                   wall > 0 ? w.n / wall : 0, (long long)sum.events, (long long)sum.cycles,
                   (long long)sum.skipped, sum.done, sum.avg_jct / 3600,
                   (double)peak_rss_kb() / 1024);
            int32_t n = 0;
            const drv_jobresult *r = drv_sim_jobs(s, &n);
            if (!tick && baseline) {
                first = malloc(sizeof *first * (size_t)(n + 1));
                if (first)
                    memcpy(first, r, sizeof *first * (size_t)n);
            } else if (tick && first) {
                /* The baseline runs every cycle; skipping quiet ones may change no outcome. */
                int32_t differ = 0;
                for (int32_t i = 0; i < n; i++)
                    differ += r[i].start != first[i].start || r[i].end != first[i].end ||
                              r[i].restarts != first[i].restarts ||
                              r[i].workers != first[i].workers;
                printf("%-15s jobs whose start, end, restarts or workers differ: %d of %d\n", label,
                       differ, n);
                status |= differ != 0;
            }
            drv_sim_free(s);
        }
        free(first);
    }
    free(list);
    drv_workload_fini(&w);
    drv_calib_fini(&calib);
    drv_cluster_fini(&c);
    drv_catalogue_fini(&cat);
    return status;
}
