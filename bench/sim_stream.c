/*
 * sim_stream - a million generated jobs on 50,000 nodes, streamed (drv_sim_new_stream): wall
 * time and peak memory, beside the in-memory path (drv_sim_new on the whole workload) on the
 * smaller size as the baseline, and streamed runs on that size and a middle one (--mid): with
 * the same arrival rate on the same nodes the jobs in flight are the same. A streamed run's
 * memory goes back an 8 KiB page (~22 jobs) at a time once all its jobs finished, so it grows
 * until the trace is longer than the longest jobs' lifetime (the 100,000-job trace is not:
 * 1,600 s against a tail of ~4,500 s), then what still grows is what is kept per job of the
 * trace (docs/performance.md, items 24 and 25): compare the middle and the large row.
 *
 * Each row runs in a child process of its own, so that its peak resident set (ru_maxrss of
 * that child, from wait4) is its own. Wall time covers everything the row does: generating
 * (or, streamed, counting) the jobs, creating the run and running it. The two runs of the
 * smaller size must have bit-identical summaries (printed; the exit status says so too).
 *
 * usage: sim_stream [--jobs N] [--small N] [--mid N] [--nodes N] [--interarrival S] [--policy NAME]
 *                   [--seed N] [--memory-big 1] [--one 1]
 * --memory-big 1: the in-memory run at --jobs too; --one 1: only the streamed run of --jobs,
 * in this process (for a profiler).
 */
#include "drover/jobsource.h"
#include "drover/policy.h"
#include "drover/sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct opts {
    int32_t jobs, small, mid, nodes; /* mid 0: no middle row */
    double ia;
    uint64_t seed;
    const char *policy;
    int memory_big, one;
} opts;

/* What a child reports back through its pipe. */
typedef struct outcome {
    int rc;
    double wall;
    drv_summary sum;
    char msg[600];
} outcome;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One run of n jobs, streamed or not, in this process. */
static outcome run(const opts *o, int32_t n, bool stream)
{
    outcome r = {0};
    drv_diag d = {{0}};
    drv_catalogue cat = {0};
    drv_cluster_spec c;
    drv_workload w = {0};
    drv_jobsource src = {0};
    drv_profile p;
    drv_sim *s = NULL;
    drv_genparams g = {.jobs = n, .mean_interarrival = o->ia, .seed = o->seed};
    drv_sim_config cfg = {.seed = o->seed};
    if (drv_catalogue_builtin(&cat, &d) ||
        drv_cluster_uniform(&c, o->nodes, (drv_res){32000, 128LL << 30, 0}) ||
        drv_profile_builtin(o->policy, &p, &d)) {
        r.rc = 1;
        snprintf(r.msg, sizeof r.msg, "setup: %.500s", d.msg);
        return r;
    }
    double t0 = now_s();
    r.rc = stream ? drv_jobsource_generate(&src, &g, &cat, &d)
                  : drv_workload_generate(&w, &g, &cat, &d);
    if (!r.rc)
        r.rc = stream ? drv_sim_new_stream(&c, &src, &cat, &p, &cfg, &s, &d)
                      : drv_sim_new(&c, &w, &cat, &p, &cfg, &s, &d);
    if (!r.rc)
        r.rc = drv_sim_run(s, &d);
    r.wall = now_s() - t0;
    if (!r.rc)
        drv_sim_summary(s, &r.sum);
    snprintf(r.msg, sizeof r.msg, "%.500s", d.msg);
    drv_sim_free(s);
    drv_jobsource_fini(&src);
    drv_workload_fini(&w);
    drv_cluster_fini(&c);
    drv_catalogue_fini(&cat);
    return r;
}

/* Runs one row in a child; *rss_mb receives the child's peak resident set. */
static int row(const opts *o, int32_t n, bool stream, outcome *r, double *rss_mb)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(fd[0]);
        outcome x = run(o, n, stream);
        ssize_t put = write(fd[1], &x, sizeof x);
        _exit(put == (ssize_t)sizeof x ? 0 : 1);
    }
    close(fd[1]);
    memset(r, 0, sizeof *r);
    size_t got = 0;
    while (got < sizeof *r) {
        ssize_t k = read(fd[0], (char *)r + got, sizeof *r - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd[0]);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || got != sizeof *r || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return -1;
    *rss_mb = (double)ru.ru_maxrss / 1024.0; /* kilobytes on Linux */
    return r->rc;
}

static int print_row(const opts *o, int32_t n, bool stream, outcome *r)
{
    double rss = 0;
    if (row(o, n, stream, r, &rss) != 0) {
        fprintf(stderr, "sim_stream: %d jobs %s: %s\n", n, stream ? "streamed" : "in memory",
                r->msg);
        return -1;
    }
    printf("%-10s %9d %9.2f %12.0f %12.0f %10.1f %9d %10.0f\n", stream ? "streamed" : "in-memory",
           n, r->wall, n / r->wall, (double)r->sum.events / r->wall, rss, r->sum.done,
           r->sum.avg_jct);
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {1000000, 100000, 300000, 50000, 0.016, 1, "gang-fifo", 0, 0};
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--jobs"))
            o.jobs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--small"))
            o.small = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mid"))
            o.mid = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--nodes"))
            o.nodes = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--interarrival"))
            o.ia = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            o.seed = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--policy"))
            o.policy = argv[i + 1];
        else if (!strcmp(argv[i], "--memory-big"))
            o.memory_big = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--one"))
            o.one = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: sim_stream [--jobs N] [--small N] [--mid N] [--nodes N] "
                            "[--interarrival S] [--policy NAME] [--seed N] [--memory-big 1] "
                            "[--one 1]\n");
            return 2;
        }
    }
    if (o.jobs < 1 || o.small < 1 || o.mid < 0 || o.nodes < 1 || !(o.ia > 0)) {
        fprintf(stderr, "sim_stream: --jobs, --small, --nodes and --interarrival must be > 0\n");
        return 2;
    }
    printf("sim_stream: policy %s, %d nodes x 32 CPUs, mean interarrival %.3f s\n", o.policy,
           o.nodes, o.ia);
    printf("%-10s %9s %9s %12s %12s %10s %9s %10s\n", "run", "jobs", "wall_s", "jobs/s", "events/s",
           "peakRSS_MB", "done", "avgJCT_s");
    outcome mem, str, mid, big;
    if (o.one) {
        big = run(&o, o.jobs, true);
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("streamed %d jobs: %.2f s, peak RSS %.1f MB, %d done%s%s\n", o.jobs, big.wall,
               (double)ru.ru_maxrss / 1024.0, big.sum.done, big.rc ? ": " : "", big.msg);
        return big.rc ? 1 : 0;
    }
    if (print_row(&o, o.small, false, &mem) || print_row(&o, o.small, true, &str) ||
        (o.mid > 0 && print_row(&o, o.mid, true, &mid)) || print_row(&o, o.jobs, true, &big) ||
        (o.memory_big && print_row(&o, o.jobs, false, &big)))
        return 1;
    bool same = memcmp(&mem.sum, &str.sum, sizeof mem.sum) == 0;
    printf("summaries of the %d-job runs, in memory and streamed, identical: %s\n", o.small,
           same ? "yes" : "NO");
    return same ? 0 : 1;
}
