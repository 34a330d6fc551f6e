/*
 * sim_speed - how fast the simulator replays a large synthetic workload.
 *
 * 10,000 generated PS jobs on 1,000 nodes of 32 CPUs, once per built-in policy. Prints wall
 * time, jobs/s, events/s and the mean queueing delay per policy.
 *
 * Load: --interarrival S sets the mean seconds between arrivals. The default scales the
 * built-in scenario's arrival rate per node (60 s for 8 nodes), which offers about 1.4 times
 * what the cluster can run: the queue then grows for the whole trace (a stress case). With
 * --interarrival 0.16 on 5,000 nodes the offered load is below capacity (a steady state).
 *
 * Baseline (same run): with --baseline, each policy also runs with the simulator ticking —
 * a cycle every period whether or not anything changed, as time-stepped simulators do — and
 * the row `<policy>/tick` shows it. Decisions and results are the same; only the cost differs.
 *
 * Options: --jobs N --nodes N --interarrival S --seed N --policy NAME[,NAME...] --baseline 1.
 */
#include "drover/policy.h"
#include "drover/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Is name one of the comma-separated names in list? */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len + (e != NULL);
    }
    return false;
}

int main(int argc, char **argv)
{
    int32_t jobs = 10000, nodes = 1000;
    uint64_t seed = 1;
    const char *only = NULL;
    double ia = -1;
    int baseline = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--policy") == 0)
            only = argv[i + 1];
        else if (strcmp(argv[i], "--jobs") == 0)
            jobs = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--nodes") == 0)
            nodes = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--baseline") == 0)
            baseline = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--interarrival") == 0)
            ia = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--seed") == 0)
            seed = strtoull(argv[i + 1], NULL, 10);
    }
    drv_diag d = {{0}};
    drv_catalogue cat = {0};
    drv_cluster_spec c;
    drv_workload w = {0};
    if (drv_catalogue_builtin(&cat, &d) ||
        drv_cluster_uniform(&c, nodes, (drv_res){32000, 128LL << 30, 0})) {
        fprintf(stderr, "sim_speed: setup failed: %s\n", d.msg);
        return 1;
    }
    drv_genparams g = {
        .jobs = jobs, .mean_interarrival = ia > 0 ? ia : 60.0 * 8 / nodes, .seed = seed};
    if (drv_workload_generate(&w, &g, &cat, &d)) {
        fprintf(stderr, "sim_speed: %s\n", d.msg);
        return 1;
    }
    printf("sim_speed: %d jobs, %d nodes, mean interarrival %.3f s\n", jobs, nodes,
           g.mean_interarrival);
    printf("%-17s %9s %12s %12s %10s %9s %10s\n", "policy", "wall_s", "jobs/s", "events/s",
           "cycles", "done", "avgwait_s");
    for (int i = 0; i < drv_profile_builtin_count(); i++) {
        if (only && !in_list(only, drv_profile_builtin_name(i)))
            continue;
        for (int tick = 0; tick <= (baseline ? 1 : 0); tick++) {
            drv_profile p;
            drv_sim *s;
            drv_sim_config cfg = {.seed = seed, .check = false, .tick = tick};
            if (drv_profile_builtin(drv_profile_builtin_name(i), &p, &d) ||
                drv_sim_new(&c, &w, &cat, &p, &cfg, &s, &d)) {
                fprintf(stderr, "sim_speed: %s\n", d.msg);
                return 1;
            }
            double t0 = now_s();
            int rc = drv_sim_run(s, &d);
            double dt = now_s() - t0;
            if (rc) {
                fprintf(stderr, "sim_speed: %s\n", d.msg);
                return 1;
            }
            drv_summary sum;
            drv_sim_summary(s, &sum);
            char name[80];
            snprintf(name, sizeof name, "%s%s", p.name, tick ? "/tick" : "");
            printf("%-17s %9.3f %12.0f %12.0f %10lld %9d %10.0f\n", name, dt, jobs / dt,
                   sum.events / dt, (long long)sum.cycles, sum.done, sum.avg_wait);
            fflush(stdout);
            drv_sim_free(s);
        }
    }
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
    drv_catalogue_fini(&cat);
    return 0;
}
