/*
 * main.c - the drover command: sub-commands, flags, and the only place that exits.
 *
 * Exit status: 0 success; 1 the run failed (an invariant broke, out of memory, cannot write);
 * 2 bad usage or bad input (nothing was run and nothing was written).
 */
#include "drover/policy.h"
#include "drover/sim.h"
#include "drover/trace.h"
#include "drover/version.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { EXIT_RUN = 1, EXIT_USAGE = 2 };

static const char *const usage_main =
    "usage: drover <command> [options]\n"
    "\n"
    "Drover schedules and resizes distributed deep-learning training jobs. The same policies\n"
    "run in a trace-driven simulator and (soon) against a Kubernetes cluster.\n"
    "\n"
    "commands:\n"
    "  sim        simulate policies on a cluster and workload; print a comparison table\n"
    "  policies   list the built-in policies (profiles) and plugins\n"
    "  calibrate  fit the analytic step-time model to the measured profiles; print its error\n"
    "  version    print the version\n"
    "  help       show this help, or `drover help <command>`\n";

static const char *const usage_sim =
    "usage: drover sim [options]\n"
    "\n"
    "Simulates each policy on the same cluster and workload and prints one row per policy.\n"
    "Without --workload and --cluster it runs the built-in scenario: 8 nodes of 32 CPUs and\n"
    "128 GiB, and 60 parameter-server jobs arriving about once a minute.\n"
    "\n"
    "options:\n"
    "  --workload FILE     jobs to run (YAML; docs/formats.md). Default: built-in scenario\n"
    "  --cluster FILE      nodes, network and timing (YAML; docs/formats.md). Default: built-in\n"
    "  --policy LIST       comma-separated policies, or `all` (default: all). See `drover "
    "policies`\n"
    "  --seed N            seed for the generated workload and loss noise (default: 1)\n"
    "  --format FMT        table (default), json or csv\n"
    "  --out DIR           also write summary.json, summary.csv and per-policy jobs-*.csv and\n"
    "                      timeline-*.csv into DIR (created if missing)\n"
    "  --models FILE       model-family catalogue (CSV) instead of the built-in one\n"
    "  --check             check invariants after every scheduling cycle (stops on a violation)\n"
    "  --trace FILE        jobs from a published trace instead of --workload (docs/data.md)\n"
    "  --trace-format F    pollux, philly, tiresias or auto (default: auto, from the header)\n"
    "  --on-bad-row ACT    fail (default) or skip malformed trace rows (skips are counted)\n"
    "  --profiles DIR      measured step-time profiles (default: data/pollux/profiles)\n"
    "  --mechanics M       default, or pollux: 16 nodes x 4 GPUs, 60 s rounds, 30 s pause at\n"
    "                      every (re)start, as the Pollux simulator (replaces --cluster)\n"
    "  -h, --help          show this help\n"
    "\n"
    "Bad input is reported as file:line: field: what was expected, with exit status 2.\n";

/* ---- sim ------------------------------------------------------------------------------------ */

typedef struct sim_opts {
    const char *workload, *cluster, *policy, *format, *out, *models;
    const char *trace, *trace_format, *on_bad_row, *profiles, *mechanics;
    uint64_t seed;
    bool check;
} sim_opts;

/* Matches --name VALUE or --name=VALUE; advances *i past a separate value. */
static int flag_value(int argc, char **argv, int *i, const char *name, const char **out)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *out = a + n + 1;
        return 1;
    }
    if (a[n] != 0)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "drover: %s needs a value (see drover %s --help)\n", name, argv[0]);
        return -1;
    }
    *out = argv[++*i];
    return 1;
}

static int parse_sim(int argc, char **argv, sim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->policy = "all";
    o->format = "table";
    o->seed = 1;
    o->trace_format = "auto";
    o->on_bad_row = "fail";
    o->profiles = "data/pollux/profiles";
    o->mechanics = "default";
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage_sim, stdout);
            exit(0);
        }
        if (strcmp(argv[i], "--check") == 0) {
            o->check = true;
            continue;
        }
        static const char *const names[] = {"--workload",   "--cluster",  "--policy",
                                            "--format",     "--out",      "--models",
                                            "--seed",       "--trace",    "--trace-format",
                                            "--on-bad-row", "--profiles", "--mechanics"};
        const char **dst[] = {&o->workload,     &o->cluster,    &o->policy,   &o->format,
                              &o->out,          &o->models,     &v,           &o->trace,
                              &o->trace_format, &o->on_bad_row, &o->profiles, &o->mechanics};
        bool matched = false;
        for (size_t k = 0; k < sizeof names / sizeof names[0] && !matched; k++) {
            m = flag_value(argc, argv, &i, names[k], dst[k]);
            if (m < 0)
                return -1;
            matched = m > 0;
        }
        if (!matched) {
            fprintf(stderr, "drover sim: unknown option '%s' (see drover sim --help)\n", argv[i]);
            return -1;
        }
        if (v) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-') {
                fprintf(stderr,
                        "drover sim: --seed: expected a non-negative whole number, found '%s'\n",
                        v);
                return -1;
            }
            o->seed = s;
        }
    }
    if (strcmp(o->format, "table") && strcmp(o->format, "json") && strcmp(o->format, "csv")) {
        fprintf(stderr, "drover sim: --format: expected table, json or csv, found '%s'\n",
                o->format);
        return -1;
    }
    if (drv_trace_format_parse(o->trace_format) == -1) {
        fprintf(stderr,
                "drover sim: --trace-format: expected pollux, philly, tiresias or auto, found "
                "'%s'\n",
                o->trace_format);
        return -1;
    }
    if (strcmp(o->on_bad_row, "skip") && strcmp(o->on_bad_row, "fail")) {
        fprintf(stderr, "drover sim: --on-bad-row: expected skip or fail, found '%s'\n",
                o->on_bad_row);
        return -1;
    }
    if (strcmp(o->mechanics, "default") && strcmp(o->mechanics, "pollux")) {
        fprintf(stderr, "drover sim: --mechanics: expected default or pollux, found '%s'\n",
                o->mechanics);
        return -1;
    }
    if (o->trace && o->workload) {
        fprintf(stderr, "drover sim: --trace and --workload: give one of them\n");
        return -1;
    }
    return 0;
}

/* Creates dir and its parents (like mkdir -p). */
static int make_dirs(const char *dir)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    struct stat sb;
    return stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
}

/* Parses the --policy list into profiles; errors list the known names. */
static int resolve_policies(const char *list, drv_profile **out, int *n)
{
    int cap = drv_profile_builtin_count() + 16;
    drv_profile *v = calloc((size_t)cap, sizeof *v);
    if (!v)
        return DRV_ENOMEM;
    *n = 0;
    if (strcmp(list, "all") == 0) {
        for (int i = 0; i < drv_profile_builtin_count(); i++) {
            drv_diag d;
            if (drv_profile_builtin(drv_profile_builtin_name(i), &v[(*n)++], &d) != 0) {
                fprintf(stderr, "drover: built-in policy: %s\n", d.msg);
                free(v);
                return DRV_EINVAL;
            }
        }
        *out = v;
        return 0;
    }
    char *copy = strdup(list), *save = NULL;
    if (!copy) {
        free(v);
        return DRV_ENOMEM;
    }
    for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        drv_diag d;
        if (*n == cap) {
            fprintf(stderr, "drover sim: --policy: more than %d policies\n", cap);
            free(copy);
            free(v);
            return DRV_EINVAL;
        }
        if (drv_profile_builtin(name, &v[*n], &d) != 0) {
            fprintf(stderr, "drover sim: --policy: %s\n", d.msg);
            free(copy);
            free(v);
            return DRV_EINVAL;
        }
        (*n)++;
    }
    free(copy);
    if (*n == 0) {
        fprintf(stderr, "drover sim: --policy: no policy named\n");
        free(v);
        return DRV_EINVAL;
    }
    *out = v;
    return 0;
}

static int cmd_sim(int argc, char **argv)
{
    sim_opts o;
    if (parse_sim(argc, argv, &o) != 0)
        return EXIT_USAGE;
    drv_diag d = {{0}};
    drv_catalogue cat = {0};
    drv_cluster_spec cluster = {0};
    drv_workload wl = {0};
    drv_profile *profiles = NULL;
    drv_summary *sums = NULL;
    drv_calib calib = {0};
    int32_t skipped = 0;
    bool pollux = strcmp(o.mechanics, "pollux") == 0;
    int nprof = 0, status = EXIT_USAGE;

    /* 1. Read and check every input before running or writing anything. */
    int rc = o.models ? drv_catalogue_load(&cat, o.models, &d) : drv_catalogue_builtin(&cat, &d);
    if (rc)
        goto fail;
    if (pollux)
        drv_cluster_pollux(&cluster, DRV_POLLUX_NODES, DRV_POLLUX_GPUS);
    else if (o.cluster)
        rc = drv_cluster_load(&cluster, o.cluster, &d);
    else
        drv_cluster_default(&cluster);
    if (rc)
        goto fail;
    if (o.trace) {
        if ((rc = drv_calib_load(&calib, o.profiles, &d)) != 0)
            goto fail;
        drv_trace_opts to = {drv_trace_format_parse(o.trace_format),
                             strcmp(o.on_bad_row, "skip") == 0, o.seed, &calib, DRV_POLLUX_GPUS};
        for (int32_t i = 0; i < cluster.n; i++)
            if (cluster.nodes[i].alloc.gpu > 0) {
                to.gpus_per_node = (int32_t)cluster.nodes[i].alloc.gpu;
                break;
            }
        rc = drv_trace_load(&wl, o.trace, &cat, &to, &skipped, &d);
    } else if (o.workload) {
        rc = drv_workload_load(&wl, o.workload, &cat, o.seed, &d);
    } else {
        drv_genparams g;
        drv_genparams_default(&g, o.seed);
        rc = drv_workload_generate(&wl, &g, &cat, &d);
    }
    if (rc)
        goto fail;
    if (resolve_policies(o.policy, &profiles, &nprof) != 0) {
        status = EXIT_USAGE;
        goto out;
    }
    sums = calloc((size_t)nprof, sizeof *sums);
    if (!sums) {
        rc = drv_fail(&d, DRV_ENOMEM, "out of memory");
        goto fail;
    }
    if (o.out && make_dirs(o.out) != 0) {
        rc = drv_fail(&d, DRV_EIO, "--out %s: cannot create directory: %s", o.out, strerror(errno));
        goto fail;
    }

    /* The Pollux simulator decides once per 60 s round. */
    for (int i = 0; pollux && i < nprof; i++)
        profiles[i].period = DRV_POLLUX_ROUND;

    /* 2. Run each policy on the same inputs. */
    status = EXIT_RUN;
    drv_sim_config cfg = {.seed = o.seed, .check = o.check, .calib = o.trace ? &calib : NULL};
    for (int i = 0; i < nprof; i++) {
        drv_sim *s = NULL;
        rc = drv_sim_new(&cluster, &wl, &cat, &profiles[i], &cfg, &s, &d);
        if (rc) {
            status = rc == DRV_EINVAL ? EXIT_USAGE : EXIT_RUN;
            goto fail;
        }
        rc = drv_sim_run(s, &d);
        if (!rc) {
            drv_sim_summary(s, &sums[i]);
            if (o.out)
                rc = drv_report_run_files(o.out, s, &d);
        }
        drv_sim_free(s);
        if (rc)
            goto fail;
    }
    if (o.out && (rc = drv_report_summary_files(o.out, sums, nprof, &d)) != 0)
        goto fail;

    /* 3. Show the comparison. */
    if (strcmp(o.format, "json") == 0)
        drv_report_json(stdout, sums, nprof);
    else if (strcmp(o.format, "csv") == 0)
        drv_report_csv(stdout, sums, nprof);
    else {
        printf("%d jobs on %d nodes (%s, %s)\n", wl.n, cluster.n,
               o.trace      ? o.trace
               : o.workload ? o.workload
                            : "built-in workload",
               pollux      ? "pollux mechanics"
               : o.cluster ? o.cluster
                           : "built-in cluster");
        if (o.trace)
            printf("trace rows skipped as malformed: %d\n", skipped);
        printf("\n");
        drv_report_table(stdout, sums, nprof);
        if (o.out)
            printf("\nwrote %s/summary.json, summary.csv, jobs-*.csv, timeline-*.csv\n", o.out);
    }
    status = 0;
    goto out;
fail:
    fprintf(stderr, "drover: %s\n", d.msg[0] ? d.msg : drv_strerror(rc));
out:
    free(sums);
    free(profiles);
    drv_workload_fini(&wl);
    drv_cluster_fini(&cluster);
    drv_catalogue_fini(&cat);
    drv_calib_fini(&calib);
    return status;
}

/* ---- calibrate ------------------------------------------------------------------------------ */

static int cmd_calibrate(int argc, char **argv)
{
    const char *dir = "data/pollux/profiles";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            puts("usage: drover calibrate [--profiles DIR]\n\nFits the analytic step-time "
                 "model (docs/data.md) to each model's measured\nplacements and prints its "
                 "parameters and relative error. Default DIR: data/pollux/profiles");
            return 0;
        }
        if (flag_value(argc, argv, &i, "--profiles", &dir) <= 0) {
            fprintf(stderr, "drover calibrate: unknown option '%s'\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    drv_calib c = {0};
    drv_diag d = {{0}};
    if (drv_calib_load(&c, dir, &d) != 0) {
        fprintf(stderr, "drover: %s\n", d.msg);
        return EXIT_USAGE;
    }
    printf("%-12s %6s %9s %9s %9s %9s %9s %9s %8s %8s\n", "model", "points", "ac", "bc", "ar", "br",
           "an", "bn", "rms_err", "max_err");
    for (int32_t i = 0; i < c.n; i++) {
        drv_calib_fit f;
        if (drv_calib_fit_app(&c, i, &f) != 0) {
            printf("%-12s fit failed (singular)\n", c.v[i].name);
            continue;
        }
        printf("%-12s %6d %9.4f %9.6f %9.4f %9.5f %9.4f %9.5f %7.1f%% %7.1f%%\n", c.v[i].name,
               f.points, f.ac, f.bc, f.ar, f.br, f.an, f.bn, 100 * f.rms_rel, 100 * f.max_rel);
    }
    drv_calib_fini(&c);
    return 0;
}

/* ---- policies ------------------------------------------------------------------------------- */

static int cmd_policies(int argc, char **argv)
{
    (void)argv;
    if (argc > 1) {
        puts("usage: drover policies\n\nLists the built-in policies with their profile lines, "
             "and every plugin.");
        return strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ? 0 : EXIT_USAGE;
    }
    puts("policies (profile lines; docs/policies.md):");
    for (int i = 0; i < drv_profile_builtin_count(); i++)
        printf("  %-20s %s\n  %-20s %s\n", drv_profile_builtin_name(i), drv_profile_builtin_doc(i),
               "", drv_profile_builtin_line(i));
    puts("\nplugins:");
    int n;
    const drv_plugin *const *ps = drv_plugins(&n);
    for (int i = 0; i < n; i++)
        printf("  %-20s %s\n", ps[i]->name, ps[i]->doc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_main, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "sim") == 0)
        return cmd_sim(argc - 1, argv + 1);
    if (strcmp(cmd, "policies") == 0)
        return cmd_policies(argc - 1, argv + 1);
    if (strcmp(cmd, "calibrate") == 0)
        return cmd_calibrate(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("drover %s\n", DROVER_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        if (argc > 2 && strcmp(argv[2], "sim") == 0)
            fputs(usage_sim, stdout);
        else
            fputs(usage_main, stdout);
        return 0;
    }
    fprintf(stderr, "drover: unknown command '%s'\n\n%s", cmd, usage_main);
    return EXIT_USAGE;
}
