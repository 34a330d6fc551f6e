/*
 * trace_replay - replays the Philly-derived trace (data/pollux/philly.csv, 82,247 jobs) with
 * gang-fifo, and with `drover` when that profile exists; prints per policy the wall time of the
 * run, jobs/s, events, and the process's peak RSS.
 *
 * It runs what `drover sim` runs on the same inputs, and prints that command first: the cluster
 * comes from a cluster file read by the same reader (drv_cluster_load), by default
 * examples/cluster-philly.yaml (150 nodes of 8 CPUs, 32 GiB and 4 GPUs = 600 GPUs, 30 s pod
 * start and restart, a 400-day horizon: the trace's 978,000 GPU-hours over its ~110 days keep
 * about 370 GPUs busy on average), or with --mechanics pollux the Pollux simulator's (16 nodes x
 * 4 GPUs, every profile's period 60 s), as `drover sim --mechanics pollux` does. The average
 * JCT it prints is the table's. (Until issue 24 it built its own 150-node cluster, whose nodes
 * had rack labels, 16 to a rack, that the cluster file has not: the profile's locality
 * score then placed gangs differently, and drover's average JCT on Philly was 7.92 h here
 * against 11.58 h from the CLI.)
 *
 * With --baseline 1, each policy also runs with a cycle every period (drv_sim_config.tick: the
 * time-stepped way, no quiet cycle skipped) - the row `<policy>/tick` - and the run checks that
 * every job's start, end, restarts and workers are the same both ways.
 *
 * Options: --trace FILE (default data/pollux/philly.csv) --cluster FILE (default
 * examples/cluster-philly.yaml) --mechanics pollux --calib-dir DIR (default
 * data/pollux/profiles) --policy LIST --seed N --baseline 0|1.
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

/* GPUs per node of the first node with any, as drover sim sizes a trace job's budget. */
static int32_t gpus_per_node(const drv_cluster_spec *c)
{
    for (int32_t i = 0; i < c->n; i++)
        if (c->nodes[i].alloc.gpu > 0)
            return (int32_t)c->nodes[i].alloc.gpu;
    return DRV_POLLUX_GPUS;
}

int main(int argc, char **argv)
{
    const char *trace = "data/pollux/philly.csv", *profiles = "data/pollux/profiles";
    const char *cluster = "examples/cluster-philly.yaml", *policies = "gang-fifo,drover";
    uint64_t seed = 1;
    bool baseline = false, pollux = false;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--trace") == 0)
            trace = argv[i + 1];
        else if (strcmp(argv[i], "--calib-dir") == 0)
            profiles = argv[i + 1];
        else if (strcmp(argv[i], "--cluster") == 0)
            cluster = argv[i + 1];
        else if (strcmp(argv[i], "--mechanics") == 0)
            pollux = strcmp(argv[i + 1], "pollux") == 0;
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
    if (pollux)
        drv_cluster_pollux(&c, DRV_POLLUX_NODES, DRV_POLLUX_GPUS);
    if ((!pollux && drv_cluster_load(&c, cluster, &d)) || drv_catalogue_builtin(&cat, &d) ||
        drv_calib_load(&calib, profiles, &d)) {
        fprintf(stderr, "trace_replay: %s\n", d.msg);
        return 1;
    }
    drv_trace_opts o = {DRV_TRACE_AUTO, false, seed, &calib, gpus_per_node(&c)};
    if (drv_trace_load(&w, trace, &cat, &o, &skipped, &d)) {
        fprintf(stderr, "trace_replay: %s\n", d.msg);
        return 1;
    }
    printf("trace_replay: %s, %d jobs, %d nodes, read in %.2f s; the same runs as\n"
           "  drover sim --trace %s %s%s --policy %s --seed %llu\n",
           trace, w.n, c.n, now_s() - t0, trace, pollux ? "--mechanics pollux" : "--cluster ",
           pollux ? "" : cluster, policies, (unsigned long long)seed);
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
        if (pollux) /* as drover sim --mechanics pollux: the Pollux simulator's 60 s round */
            p.period = DRV_POLLUX_ROUND;
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
            printf("%-15s %9.3f %10.0f %11lld %10lld %10lld %10d %12.3f %12.1f\n", label, wall,
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
