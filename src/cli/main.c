/*
 * main.c - the drover command: sub-commands, flags, and the only place that exits.
 *
 * Exit status: 0 success; 1 the run failed (an invariant broke, out of memory, cannot write);
 * 2 bad usage or bad input (nothing was run and nothing was written).
 */
#include "cli.h"

#include "drover/kube_emulate.h"
#include "drover/policy.h"
#include "drover/sim.h"
#include "drover/trace.h"
#include "drover/version.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const usage_main =
    "usage: drover <command> [options]\n"
    "\n"
    "Drover schedules and resizes distributed deep-learning training jobs. The same policies\n"
    "run in a trace-driven simulator and against a Kubernetes cluster.\n"
    "\n"
    "commands:\n"
    "  sim        simulate policies on a cluster and workload; print a comparison table\n"
    "  run        run in a Kubernetes cluster: TrainingJob controller, scheduler, binder\n"
    "  report     redraw the plots and index.html of a `sim --out` directory from its files\n"
    "  policies   list the built-in policies (profiles) and plugins\n"
    "  calibrate  fit the analytic step-time model to the measured profiles; print its error\n"
    "  emulate    play kubelet for a cluster file's nodes on a Kubernetes API server\n"
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
    "  --out DIR           also write into DIR (created if missing): summary.json, summary.csv,\n"
    "                      scenario.json, per-policy jobs-*.csv, timeline-*.csv and\n"
    "                      placements-*.csv, plots (SVG and PNG, drawn by gnuplot; skipped\n"
    "                      with a message when gnuplot is missing) and index.html\n"
    "  --models FILE       model-family catalogue (CSV) instead of the built-in one\n"
    "  --check             check invariants after every scheduling cycle (stops on a violation)\n"
    "  --profiles FILE     define more policies in YAML (docs/policies.md); --policy can name\n"
    "                      them, and `all` runs them after the built-in ones\n"
    "  --explain JOB       print JOB's combined priority, factor by factor (like Slurm's sprio),\n"
    "                      as the first cycle after its submission sees it under the first\n"
    "                      policy of --policy, with that policy's `priority` weights (the\n"
    "                      defaults when it has none); runs nothing else\n"
    "  --trace FILE        jobs from a published trace instead of --workload (docs/data.md)\n"
    "  --trace-format F    pollux, philly, tiresias or auto (default: auto, from the header)\n"
    "  --on-bad-row ACT    fail (default) or skip malformed trace rows (skips are counted)\n"
    "  --calib-dir DIR     measured step-time profiles for --trace (default: "
    "data/pollux/profiles)\n"
    "  --mechanics M       default, or pollux: 16 nodes x 4 GPUs, 60 s rounds, 30 s pause at\n"
    "                      every (re)start, as the Pollux simulator (replaces --cluster)\n"
    "  -h, --help          show this help\n"
    "\n"
    "Bad input is reported as file:line: field: what was expected, with exit status 2.\n"
    "When stderr is a terminal and the run takes more than a second, a progress line (jobs\n"
    "done, simulated time, ETA) is shown on stderr and cleared at the end.\n";

static const char *const usage_report =
    "usage: drover report DIR\n"
    "\n"
    "Redraws the plots (jct-cdf, utilisation, queue, gantt-<policy>; SVG and PNG) and\n"
    "index.html in DIR from the files `drover sim --out DIR` wrote there: summary.json,\n"
    "scenario.json, jobs-*.csv, timeline-*.csv and placements-*.csv. Nothing is simulated.\n"
    "\n"
    "Exit status: 0 done; 1 gnuplot is missing or failed (index.html is still written);\n"
    "2 a file is missing or malformed (reported as file:line: what was expected).\n";

/* ---- progress line -------------------------------------------------------------------------- */

/*
 * The progress line on stderr: only when stderr is a terminal, only once the run has taken
 * more than PROGRESS_AFTER seconds, at most every PROGRESS_EVERY seconds, cleared at the end.
 * The simulator calls progress_cb; this is the one place that reads a clock, so it cannot change
 * a run's results.
 */
#define PROGRESS_AFTER 1.0
#define PROGRESS_EVERY 0.25

typedef struct progress {
    bool tty;
    double t0, last;
    int run, runs; /* index of the policy being simulated, number of policies */
    const char *policy;
    bool shown;
} progress;

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void progress_cb(void *arg, const drv_progress *p)
{
    progress *g = arg;
    if (!g->tty)
        return;
    double now = mono_now(), elapsed = now - g->t0;
    if (elapsed < PROGRESS_AFTER || now - g->last < PROGRESS_EVERY)
        return;
    g->last = now;
    double frac = (g->run + (p->jobs > 0 ? (double)p->done / p->jobs : 0)) / g->runs;
    char eta[32] = "?";
    if (frac > 0.01)
        snprintf(eta, sizeof eta, "%.0f s", elapsed * (1 - frac) / frac);
    fprintf(stderr, "\r\033[K%s (%d/%d): %d/%d jobs done, simulated %.1f h, ETA %s", g->policy,
            g->run + 1, g->runs, p->done, p->jobs, p->now / 3600.0, eta);
    fflush(stderr);
    g->shown = true;
}

static void progress_clear(progress *g)
{
    if (g->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        g->shown = false;
    }
}

/* ---- plots ---------------------------------------------------------------------------------- */

/*
 * Reads dir back and draws the plots and index.html. Returns 0 (with *skipped set when gnuplot
 * is missing or failed: index.html is then written without plots), EXIT_USAGE when the files
 * are missing or bad, EXIT_RUN when reading ran out of memory or index.html cannot be written.
 */
static int render_dir(const char *dir, const char *who, bool *skipped)
{
    drv_diag d = {{0}};
    drv_report_data r;
    *skipped = false;
    int rc = drv_report_load(&r, dir, &d);
    if (rc) {
        fprintf(stderr, "%s: %s\n", who, d.msg);
        return rc == DRV_ENOMEM || rc == DRV_EIO ? EXIT_RUN : EXIT_USAGE;
    }
    int status = 0;
    rc = drv_plot_render(dir, &r, &d);
    if (rc == DRV_ENOENT) {
        fprintf(stderr,
                "%s: gnuplot not found on PATH; plots skipped (data and index.html written; "
                "install gnuplot and run `drover report %s`)\n",
                who, dir);
        *skipped = true;
    } else if (rc) {
        fprintf(stderr, "%s: plots skipped: %s\n", who, d.msg);
        *skipped = true;
    }
    if (drv_report_html(dir, &r, rc == 0, &d) != 0) {
        fprintf(stderr, "%s: %s\n", who, d.msg);
        status = EXIT_RUN;
    }
    drv_report_data_fini(&r);
    return status;
}

static int cmd_report(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        fputs(usage_report, stdout);
        return 0;
    }
    if (argc != 2 || argv[1][0] == '-') {
        fputs(usage_report, stderr);
        return EXIT_USAGE;
    }
    bool skipped;
    int status = render_dir(argv[1], "drover report", &skipped);
    if (status == 0 && !skipped)
        printf("wrote %s/index.html and its plots\n", argv[1]);
    return status ? status : skipped ? EXIT_RUN : 0;
}

/* ---- sim ------------------------------------------------------------------------------------ */

typedef struct sim_opts {
    const char *workload, *cluster, *policy, *format, *out, *models;
    const char *profiles, *explain;
    const char *trace, *trace_format, *on_bad_row, *calib_dir, *mechanics;
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
    o->calib_dir = "data/pollux/profiles";
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
        static const char *const names[] = {
            "--workload",     "--cluster",    "--policy",    "--format",   "--out",
            "--models",       "--seed",       "--profiles",  "--explain",  "--trace",
            "--trace-format", "--on-bad-row", "--calib-dir", "--mechanics"};
        const char **dst[] = {&o->workload,
                              &o->cluster,
                              &o->policy,
                              &o->format,
                              &o->out,
                              &o->models,
                              &v,
                              &o->profiles,
                              &o->explain,
                              &o->trace,
                              &o->trace_format,
                              &o->on_bad_row,
                              &o->calib_dir,
                              &o->mechanics};
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

/* Profiles from --profiles FILE, looked up before the built-in ones. */
static drv_profile *file_profiles;
static int nfile_profiles;

static int find_profile(const char *name, drv_profile *out, drv_diag *d)
{
    for (int i = 0; i < nfile_profiles; i++)
        if (strcmp(file_profiles[i].name, name) == 0) {
            *out = file_profiles[i];
            return 0;
        }
    return drv_profile_builtin(name, out, d);
}

/* Parses the --policy list into profiles; errors list the known names. */
static int resolve_policies(const char *list, drv_profile **out, int *n)
{
    int cap = drv_profile_builtin_count() + nfile_profiles + 16;
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
        for (int i = 0; i < nfile_profiles; i++)
            v[(*n)++] = file_profiles[i];
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
        if (find_profile(name, &v[*n], &d) != 0) {
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

/* --explain JOB: the priority breakdown as the first cycle after JOB's submission sees it. */
static int explain_job(const drv_cluster_spec *cl, const drv_workload *wl, const drv_catalogue *cat,
                       const drv_profile *prof, uint64_t seed, const char *name)
{
    int32_t job = -1;
    for (int32_t i = 0; i < wl->n && job < 0; i++)
        if (strcmp(wl->jobs[i].name, name) == 0)
            job = i;
    if (job < 0) {
        fprintf(stderr, "drover sim: --explain: no job named '%s' in the workload\n", name);
        return EXIT_USAGE;
    }
    const drv_knob *knobs = NULL;
    int nknobs = 0;
    const drv_plugin *prio = drv_plugin_find("priority");
    for (int i = 0; i < prof->nuse[DRV_PT_QUEUE_ORDER]; i++)
        if (prof->use[DRV_PT_QUEUE_ORDER][i].p == prio) {
            knobs = drv_profile_knobs(prof, &prof->use[DRV_PT_QUEUE_ORDER][i]);
            nknobs = prof->use[DRV_PT_QUEUE_ORDER][i].nknobs;
        }
    drv_diag d = {{0}};
    drv_sim_config cfg = {.seed = seed};
    drv_sim *s = NULL;
    drv_priority_breakdown b;
    double t = ceil(wl->jobs[job].submit / prof->period) * prof->period;
    int rc = drv_sim_new(cl, wl, cat, prof, &cfg, &s, &d);
    if (!rc)
        rc = drv_sim_run_until(s, t, &d);
    if (!rc) /* submitted at t itself: not in the state yet */
        rc = drv_sim_enter_job(s, job);
    if (!rc)
        rc = drv_priority_explain(drv_sim_state(s), t, job, knobs, nknobs, &b, &d);
    if (rc) {
        fprintf(stderr, "drover: %s\n", d.msg[0] ? d.msg : drv_strerror(rc));
        drv_sim_free(s);
        return rc == DRV_EINVAL ? EXIT_USAGE : EXIT_RUN;
    }
    printf("job %s at t=%.1f s (policy %s%s), normalised over %d queued jobs\n\n", name, t,
           prof->name, knobs ? "" : ", default priority weights", (int)b.queued);
    printf("%-12s %12s %10s %8s %12s\n", "factor", "value", "normalised", "weight", "contribution");
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++)
        printf("%-12s %12.1f %10.3f %8.3f %12.4f\n", drv_priority_factor_name(f), b.raw[f],
               b.norm[f], b.weight[f], b.weight[f] * b.norm[f]);
    printf("%-12s %12s %10s %8s %12.4f\n", "priority", "", "", "", b.total);
    drv_sim_free(s);
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
    int32_t rows_skipped = 0;
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
        if ((rc = drv_calib_load(&calib, o.calib_dir, &d)) != 0)
            goto fail;
        drv_trace_opts to = {drv_trace_format_parse(o.trace_format),
                             strcmp(o.on_bad_row, "skip") == 0, o.seed, &calib, DRV_POLLUX_GPUS};
        for (int32_t i = 0; i < cluster.n; i++)
            if (cluster.nodes[i].alloc.gpu > 0) {
                to.gpus_per_node = (int32_t)cluster.nodes[i].alloc.gpu;
                break;
            }
        rc = drv_trace_load(&wl, o.trace, &cat, &to, &rows_skipped, &d);
    } else if (o.workload) {
        rc = drv_workload_load(&wl, o.workload, &cat, o.seed, &d);
    } else {
        drv_genparams g;
        drv_genparams_default(&g, o.seed);
        rc = drv_workload_generate(&wl, &g, &cat, &d);
    }
    if (rc)
        goto fail;
    if (o.profiles &&
        (rc = drv_profile_file_load(o.profiles, &file_profiles, &nfile_profiles, &d)) != 0)
        goto fail;
    if (resolve_policies(o.policy, &profiles, &nprof) != 0) {
        status = EXIT_USAGE;
        goto out;
    }
    if (o.explain) {
        status = explain_job(&cluster, &wl, &cat, &profiles[0], o.seed, o.explain);
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
    progress prog = {.tty = isatty(STDERR_FILENO) == 1, .t0 = mono_now(), .runs = nprof};
    drv_sim_config cfg = {.seed = o.seed,
                          .check = o.check,
                          .placements = o.out != NULL,
                          .progress = progress_cb,
                          .progress_arg = &prog,
                          .calib = o.trace ? &calib : NULL};
    for (int i = 0; i < nprof; i++) {
        drv_sim *s = NULL;
        prog.run = i;
        prog.policy = profiles[i].name;
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
        if (rc) {
            progress_clear(&prog);
            goto fail;
        }
    }
    progress_clear(&prog);
    char desc[512];
    snprintf(desc, sizeof desc, "%d jobs on %d nodes (%s, %s)", wl.n, cluster.n,
             o.trace      ? o.trace
             : o.workload ? o.workload
                          : "built-in workload",
             pollux      ? "pollux mechanics"
             : o.cluster ? o.cluster
                         : "built-in cluster");
    bool skipped = false;
    if (o.out) {
        drv_scenario sc = {.jobs = wl.n, .nodes = cluster.n, .seed = o.seed};
        snprintf(sc.desc, sizeof sc.desc, "%s", desc);
        for (int32_t k = 0; k < cluster.n; k++) {
            sc.cpu_m += (double)cluster.nodes[k].alloc.cpu;
            sc.gpu += (double)cluster.nodes[k].alloc.gpu;
        }
        if ((rc = drv_report_summary_files(o.out, sums, nprof, &d)) != 0 ||
            (rc = drv_report_scenario_file(o.out, &sc, &d)) != 0)
            goto fail;
        /* Plots are drawn from the files just written, as `drover report` would; a missing
         * gnuplot only skips them (render_dir says so on stderr). */
        int st = render_dir(o.out, "drover", &skipped);
        if (st != 0) {
            status = EXIT_RUN;
            goto out;
        }
    }

    /* 3. Show the comparison. */
    if (strcmp(o.format, "json") == 0)
        drv_report_json(stdout, sums, nprof);
    else if (strcmp(o.format, "csv") == 0)
        drv_report_csv(stdout, sums, nprof);
    else {
        printf("%s\n", desc);
        if (o.trace)
            printf("trace rows skipped as malformed: %d\n", rows_skipped);
        printf("\n");
        drv_report_table(stdout, sums, nprof);
        if (o.out) {
            printf("\nwrote %s/summary.json, summary.csv, scenario.json, jobs-*.csv, "
                   "timeline-*.csv, placements-*.csv\n",
                   o.out);
            if (!skipped)
                printf("plots: %s/*.svg, *.png; report page: %s/index.html\n", o.out, o.out);
        }
    }
    status = 0;
    goto out;
fail:
    fprintf(stderr, "drover: %s\n", d.msg[0] ? d.msg : drv_strerror(rc));
out:
    free(sums);
    free(profiles);
    drv_free(file_profiles);
    file_profiles = NULL;
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
            puts("usage: drover calibrate [--calib-dir DIR]\n\nFits the analytic step-time "
                 "model (docs/data.md) to each model's measured\nplacements and prints its "
                 "parameters and relative error. Default DIR: data/pollux/profiles");
            return 0;
        }
        if (flag_value(argc, argv, &i, "--calib-dir", &dir) <= 0) {
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

/* ---- drover emulate ------------------------------------------------------------------------- */

static volatile sig_atomic_t emulate_signal;

static void on_emulate_signal(int sig)
{
    emulate_signal = sig;
}

/* A number in [lo, hi] from a flag's value; -1 with a message when it is not one. */
static int emulate_number(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi)) {
        fprintf(stderr, "drover emulate: %s: expected a number in [%g, %g], found '%s'\n", flag, lo,
                hi, v);
        return -1;
    }
    *out = x;
    return 0;
}

static int cmd_emulate(int argc, char **argv)
{
    static const char *const usage =
        "usage: drover emulate --cluster FILE [options]\n"
        "\n"
        "Plays kubelet for the nodes of a cluster file (the format of `drover sim --cluster`),\n"
        "in the spirit of KWOK: registers them on the API server, keeps them Ready, and moves\n"
        "the pods bound to them from Pending to Running (after the start delay) and to\n"
        "Succeeded (after the pod's drover.dev/duration-seconds annotation; without it the pod\n"
        "runs until deleted). Runs until SIGINT or SIGTERM. See docs/emulate.md.\n"
        "\n"
        "options:\n"
        "  --cluster FILE      the nodes to emulate (YAML; docs/formats.md). Required\n"
        "  --kubeconfig FILES  kubeconfig files, ':'-separated (default: $KUBECONFIG, or\n"
        "                      ~/.kube/config)\n"
        "  --context NAME      kubeconfig context (default: current-context)\n"
        "  --speed X           emulated seconds per real second (default: 1)\n"
        "  --start-delay S     emulated seconds from binding to Running (default: the cluster\n"
        "                      file's timing.podStartSeconds, which defaults to 5)\n"
        "  -h, --help          show this help\n"
        "\n"
        "Exit status: 0 stopped by a signal; 1 the API server refused or could not be reached;\n"
        "2 bad usage or bad input (reported as file:line: field: what was expected).\n";
    const char *cluster_file = NULL, *kubeconfig = NULL, *context = NULL;
    drv_emulator_opts o;
    drv_emulator_opts_default(&o);
    bool delay_given = false;
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage, stdout);
            return 0;
        } else if ((m = flag_value(argc, argv, &i, "--cluster", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            cluster_file = v;
        } else if ((m = flag_value(argc, argv, &i, "--kubeconfig", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            kubeconfig = v;
        } else if ((m = flag_value(argc, argv, &i, "--context", &v)) != 0) {
            if (m < 0)
                return EXIT_USAGE;
            context = v;
        } else if ((m = flag_value(argc, argv, &i, "--speed", &v)) != 0) {
            if (m < 0 || emulate_number("--speed", v, 1e-6, DRV_EMU_MAX_SPEED, &o.speed))
                return EXIT_USAGE;
        } else if ((m = flag_value(argc, argv, &i, "--start-delay", &v)) != 0) {
            if (m < 0 || emulate_number("--start-delay", v, 0, 86400, &o.start_delay_s))
                return EXIT_USAGE;
            delay_given = true;
        } else {
            fprintf(stderr, "drover emulate: unknown option '%s' (see drover emulate --help)\n",
                    argv[i]);
            return EXIT_USAGE;
        }
    }
    if (!cluster_file) {
        fprintf(stderr, "drover emulate: --cluster FILE is required (see drover emulate --help)\n");
        return EXIT_USAGE;
    }
    drv_diag d = {{0}};
    drv_cluster_spec cl = {0};
    if (drv_cluster_load(&cl, cluster_file, &d)) {
        fprintf(stderr, "drover emulate: %s\n", d.msg);
        return EXIT_USAGE;
    }
    if (!delay_given && cl.timing.pod_start >= 0)
        o.start_delay_s = cl.timing.pod_start;
    drv_emu_node *nodes = calloc((size_t)(cl.n > 0 ? cl.n : 1), sizeof *nodes);
    if (!nodes) {
        drv_cluster_fini(&cl);
        fprintf(stderr, "drover emulate: out of memory\n");
        return EXIT_RUN;
    }
    for (int32_t i = 0; i < cl.n; i++) {
        snprintf(nodes[i].name, sizeof nodes[i].name, "%s", cl.nodes[i].name);
        snprintf(nodes[i].zone, sizeof nodes[i].zone, "%s", cl.nodes[i].zone);
        snprintf(nodes[i].rack, sizeof nodes[i].rack, "%s", cl.nodes[i].rack);
        nodes[i].alloc = cl.nodes[i].alloc;
    }
    int32_t n = cl.n;
    drv_cluster_fini(&cl);
    drv_kube_config cfg = {0};
    if (drv_kubeconfig_load(&cfg, kubeconfig, context, &d)) {
        free(nodes);
        fprintf(stderr, "drover emulate: %s\n", d.msg);
        return EXIT_USAGE;
    }
    /* One status write per pod step and per node heartbeat: more than client-go's 5 QPS. */
    cfg.qps = 50;
    cfg.burst = 100;
    drv_emulator *e = NULL;
    int status = EXIT_USAGE;
    if (drv_emulator_new(&e, &cfg, nodes, n, &o, &d) == 0) {
        status = EXIT_RUN;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_emulate_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        if (drv_emulator_start(e, &d) == 0) {
            fprintf(stderr,
                    "drover emulate: %d nodes registered on %s (speed %g, start delay %g s); "
                    "SIGINT or SIGTERM stops\n",
                    n, cfg.server, o.speed, o.start_delay_s);
            while (!emulate_signal) {
                struct timespec ts = {0, 100000000L};
                nanosleep(&ts, NULL);
            }
            drv_emulator_stop(e);
            drv_emulator_stats s = drv_emulator_get_stats(e);
            fprintf(stderr,
                    "drover emulate: stopped (signal %d): %ld pods started, %ld succeeded, %ld "
                    "deletions confirmed, %ld failed writes\n",
                    (int)emulate_signal, s.started, s.succeeded, s.deleted, s.errors);
            status = 0;
        }
    }
    if (status) /* the library's messages mostly start with "emulate: " already */
        fprintf(stderr, "drover emulate: %s\n",
                strncmp(d.msg, "emulate: ", 9) == 0 ? d.msg + 9 : d.msg);
    drv_emulator_free(e);
    drv_kube_config_fini(&cfg);
    free(nodes);
    return status;
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
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0)
        return cmd_report(argc - 1, argv + 1);
    if (strcmp(cmd, "policies") == 0)
        return cmd_policies(argc - 1, argv + 1);
    if (strcmp(cmd, "calibrate") == 0)
        return cmd_calibrate(argc - 1, argv + 1);
    if (strcmp(cmd, "emulate") == 0)
        return cmd_emulate(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("drover %s\n", DROVER_VERSION);
        return 0;
    }
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        if (argc > 2 && strcmp(argv[2], "sim") == 0)
            fputs(usage_sim, stdout);
        else if (argc > 2 && strcmp(argv[2], "run") == 0)
            fputs(usage_run, stdout);
        else if (argc > 2 && strcmp(argv[2], "emulate") == 0)
            return cmd_emulate(2, (char *[]){"emulate", "--help", NULL});
        else if (argc > 2 && strcmp(argv[2], "report") == 0)
            fputs(usage_report, stdout);
        else
            fputs(usage_main, stdout);
        return 0;
    }
    fprintf(stderr, "drover: unknown command '%s'\n\n%s", cmd, usage_main);
    return EXIT_USAGE;
}
