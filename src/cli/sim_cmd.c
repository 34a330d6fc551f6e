/*
 * sim_cmd.c - `drover sim`: simulate each policy on the same cluster and workload, print one row
 * per policy, and with --out write the data, plots and report page.
 *
 * The command reads as its steps: parse and check the flags; read and check every input
 * (catalogue, cluster, workload or trace, profiles) before running or writing anything, so bad
 * input exits 2 with nothing written; run each policy; write --out; print the comparison. The
 * output on stdout depends only on the inputs and the seed (docs/results.md is generated from
 * it); the progress line on stderr is the one place that reads a clock.
 */
#include "sim_cmd.h"
#include "progress.h"

#include "drover/file.h"
#include "drover/sim_batch.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/stat.h>

#define AT(field) .at = offsetof(sim_opts, field)
static const cli_flag sim_flags[] = {
    {.name = "workload",
     .kind = FLAG_TEXT,
     AT(workload),
     .arg = "FILE",
     .help = "jobs to run (YAML; docs/formats.md). Default: built-in scenario"},
    {.name = "cluster",
     .kind = FLAG_TEXT,
     AT(cluster),
     .arg = "FILE",
     .help = "nodes, queues, network, timing (YAML; docs/formats.md). Default: built-in"},
    {.name = "policy",
     .kind = FLAG_TEXT,
     AT(policy),
     .arg = "LIST",
     .help = "comma-separated policies, or `all` (default: all). See `drover policies`"},
    {.name = "seed",
     .kind = FLAG_UINT64,
     AT(seed),
     .arg = "N",
     .help = "seed for the generated workload and loss noise (default: 1)"},
    {.name = "seeds",
     .kind = FLAG_TEXT,
     AT(seeds),
     .arg = "LIST",
     .help = "run every policy once per seed (\"1-10\", \"1,4,9\"; at most 1000) and\n"
             "print each metric's mean with its 95 % confidence interval, and\n"
             "each policy's paired difference against k8s-default (or the first\n"
             "policy); --out then holds the first seed's runs, seeds.csv (every\n"
             "seed's summary rows) and summary-seeds.json (with provenance)"},
    {.name = "threads",
     .kind = FLAG_INT,
     AT(threads),
     .arg = "N",
     .lo = 0,
     .hi = 256,
     .help = "runs at once (default 0: one per core); results do not depend on it"},
    {.name = "format",
     .kind = FLAG_CHOICE,
     AT(format),
     .arg = "FMT",
     .choices = "table|json|csv",
     .help = "table (default), json or csv"},
    {.name = "out",
     .kind = FLAG_TEXT,
     AT(out),
     .arg = "DIR",
     .help = "also write into DIR (created if missing): summary.json, summary.csv,\n"
             "scenario.json, per-policy jobs-*.csv, timeline-*.csv and\n"
             "placements-*.csv, plots (SVG and PNG, drawn by gnuplot; skipped\n"
             "with a message when gnuplot is missing) and index.html"},
    {.name = "models",
     .kind = FLAG_TEXT,
     AT(models),
     .arg = "FILE",
     .help = "model-family catalogue (CSV) instead of the built-in one"},
    {.name = "check",
     .kind = FLAG_SWITCH,
     AT(check),
     .help = "check invariants after every scheduling cycle (stops on a violation)"},
    {.name = "quiet", .kind = FLAG_SWITCH, AT(quiet), .help = "no progress report on stderr"},
    {.name = "stream",
     .kind = FLAG_SWITCH,
     AT(stream),
     .help = "read the jobs as the clock reaches them instead of whole: a CSV trace\n"
             "(--trace FILE --trace-columns MAP, rows in order of submission) or\n"
             "the built-in scenario; memory follows the jobs in flight, not the\n"
             "trace. The same results; with --out, jobs-*.csv gets each job's row\n"
             "as it finishes (in order of finishing), and summary.*, scenario.json\n"
             "are written (no timeline, placements, plots or page). Not with\n"
             "--workload, --seeds, --explain, --on-bad-row skip, cluster queues.\n"
             "Runs one policy at a time (docs/data.md)"},
    {.name = "profiles",
     .kind = FLAG_TEXT,
     AT(profiles),
     .arg = "FILE",
     .help = "define more policies in YAML (docs/policies.md); --policy can name\n"
             "them, and `all` runs them after the built-in ones. A profile named\n"
             "like a built-in one replaces it"},
    {.name = "explain",
     .kind = FLAG_TEXT,
     AT(explain),
     .arg = "JOB",
     .help = "print JOB's combined priority, factor by factor (like Slurm's sprio),\n"
             "as the first cycle after its submission sees it under the first\n"
             "policy of --policy, with that policy's `priority` weights (the\n"
             "defaults when it has none); for a policy that does not order its\n"
             "queue by priority, says what it orders by. With queues in the cluster\n"
             "or a fairshare order, also the job's queue share and its user's share\n"
             "within it. On a cluster with GPU types, first the type JOB ran on,\n"
             "its one-GPU speed on each type and the free GPUs per type when it\n"
             "was placed (from a whole run). Runs nothing else"},
    {.name = "from-snapshot",
     .kind = FLAG_TEXT,
     AT(from_snapshot),
     .arg = "DIR",
     .help = "what if: replay a live cluster from the moment `drover snapshot`\n"
             "took DIR, under each --policy, and print when each pending job\n"
             "would start and finish under each (docs/what-if.md); not with\n"
             "--workload, --cluster, --trace, --stream, --seeds, --mechanics"},
    {.name = "trace",
     .kind = FLAG_TEXT,
     AT(trace),
     .arg = "FILE",
     .help = "jobs from a published trace instead of --workload (docs/data.md)"},
    {.name = "trace-format",
     .kind = FLAG_TEXT,
     AT(trace_format),
     .arg = "F",
     .help = "pollux, philly, tiresias, helios, pai-job, pai-task, gavel,\n"
             "philly-log, columns or auto (default: auto, from the first line)"},
    {.name = "trace-columns",
     .kind = FLAG_TEXT,
     AT(trace_columns),
     .arg = "MAP",
     .help = "a CSV trace's columns: name=COL,submit=COL,gpus=COL,duration=COL\n"
             "(also user, queue, start, end, model, batch, steps; docs/data.md)"},
    {.name = "on-bad-row",
     .kind = FLAG_CHOICE,
     AT(on_bad_row),
     .arg = "ACT",
     .choices = "fail|skip",
     .help = "fail (default) or skip malformed trace rows (skips are counted)"},
    {.name = "calib-dir",
     .kind = FLAG_TEXT,
     AT(calib_dir),
     .arg = "DIR",
     .help = "measured step-time profiles for --trace (default:\n"
             "DATA/pollux/profiles); MODEL/placements-TYPE.csv beside\n"
             "placements.csv times a job on GPU type TYPE (docs/data.md)"},
    {.name = "calib-slowdown",
     .kind = FLAG_TEXT,
     AT(calib_slowdown),
     .arg = "LIST",
     .help = "MODEL=FACTOR,...: every measured step time of MODEL multiplied\n"
             "by FACTOR (Sia's SLOWDOWNS; default: none)"},
    {.name = "calib-type-fallback",
     .kind = FLAG_SWITCH,
     AT(calib_type_fallback),
     .help = "a GPU type a model has no placements-TYPE.csv for is timed by\n"
             "its placements.csv (default: the run is refused, naming both)"},
    {.name = "data-dir",
     .kind = FLAG_TEXT,
     AT(data_dir),
     .arg = "DIR",
     .help = "DATA, drover's data directory (default: $DROVER_DATA_DIR, else\n"
             "found next to the binary, else the installed one); a relative\n"
             "--trace that does not exist is also looked up in it"},
    {.name = "mechanics",
     .kind = FLAG_CHOICE,
     AT(mechanics),
     .arg = "M",
     .choices = "default|pollux",
     .help = "default, or pollux: 16 nodes x 4 GPUs, 60 s rounds, 30 s pause at\n"
             "every (re)start, as the Pollux simulator (not with --cluster)"},
};
#undef AT

const cli_command sim_command = {
    .name = "sim",
    .about = "Simulates each policy on the same cluster and workload and prints one row per "
             "policy.\n"
             "Without --workload and --cluster it runs the built-in scenario: 8 nodes of 32 CPUs "
             "and\n"
             "128 GiB, and 60 parameter-server jobs arriving about once a minute.\n",
    .footer = "Bad input is reported as file:line: field: what was expected, with exit status 2.\n"
              "When stderr is a terminal and the run takes more than a second, a progress line "
              "(jobs\n"
              "done, simulated time, ETA) is shown on stderr and cleared at the end; otherwise a "
              "plain\n"
              "line (jobs done, simulated time, jobs per second, ETA) is written to stderr every "
              "5 s\n"
              "(every $DROVER_PROGRESS_SECONDS seconds when set). --quiet shows neither.\n"
              "Ctrl-C (or SIGTERM) stops the runs: what they finished is shown and written to "
              "--out,\n"
              "each interrupted run marked, and the exit status is 130 (143 for SIGTERM).\n",
    .flags = sim_flags,
    .nflags = (int)(sizeof sim_flags / sizeof sim_flags[0]),
    .track_given = true,
    .given_at = offsetof(sim_opts, given),
};

/* ---- running and writing -------------------------------------------------------------------- */

/*
 * Ctrl-C (SIGINT) or SIGTERM while the runs go on: the handler notes the signal, every run stops
 * before its next event (drv_sim_config.stop, as at its horizon), and what they finished is
 * written to --out and printed, each interrupted run said to be so; the exit status is then
 * 128 + the signal (130 for Ctrl-C). The handler is reset by the first signal (SA_RESETHAND):
 * a second Ctrl-C ends drover at once. The only global state of the command.
 */
static atomic_int stop_signal;

static void on_stop(int sig)
{
    atomic_store(&stop_signal, sig);
}

/* Catches SIGINT and SIGTERM for the runs, saving their handling in old[2]; a signal ignored
 * on entry (a background job of a script) stays ignored, as the shell meant. */
static void catch_stop(struct sigaction old[2])
{
    static const int sigs[2] = {SIGINT, SIGTERM};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 2; i++)
        if (sigaction(sigs[i], NULL, &old[i]) == 0 && old[i].sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
}

/* The handling catch_stop found, back in place. */
static void release_stop(const struct sigaction old[2])
{
    sigaction(SIGINT, &old[0], NULL);
    sigaction(SIGTERM, &old[1], NULL);
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

/* One run's progress, forwarded to the shared report with the fraction of all runs done (runs
 * go on side by side, so the run being reported is not the only one under way). The batch
 * serialises the calls. */
typedef struct run_progress {
    progress *report;
    double *frac; /* [nruns]: how far each run has got */
    int run, nruns;
    const char *policy;
} run_progress;

static void run_progress_cb(void *arg, const drv_progress *p)
{
    run_progress *r = arg;
    r->frac[r->run] = progress_fraction(p);
    double sum = 0;
    for (int i = 0; i < r->nruns; i++)
        sum += r->frac[i];
    r->report->run = r->run;
    r->report->policy = r->policy;
    r->report->frac = sum / r->nruns;
    progress_cb(r->report, p);
}

/* After a bad-input exit: a trace on the built-in cluster (no GPUs) needs GPU nodes. */
static void hint_gpus(const sim_opts *o, const sim_inputs *in, int status)
{
    if (status == EXIT_USAGE && o->trace && !o->cluster && !in->pollux && in->cluster.n > 0 &&
        in->cluster.nodes[0].alloc.gpu == 0)
        fprintf(stderr, "drover sim: a trace's jobs need GPUs and the built-in cluster has "
                        "none: add --mechanics pollux (16 nodes x 4 GPUs, as the Pollux "
                        "simulator) or --cluster FILE with GPU nodes\n");
}

/* Runs each policy once per seed on the same inputs, side by side on --threads threads, into
 * sums[seed * nprof + policy]; with --out writes the first seed's run files. Returns 0 or the
 * exit status, with the message printed: a profile the simulator refuses (a bad knob) is bad
 * input, anything failing during a run is a failed run. */
static int run_policies(const sim_opts *o, const sim_inputs *in, drv_summary *sums)
{
    int n = in->nprof * in->nseeds, status = 0;
    drv_sim_task *tasks = drv_calloc((size_t)n, sizeof *tasks);
    run_progress *rp = drv_calloc((size_t)n, sizeof *rp);
    double *frac = drv_calloc((size_t)n, sizeof *frac);
    if (!tasks || !rp || !frac) {
        fprintf(stderr, "drover: out of memory\n");
        status = EXIT_RUN;
        goto out;
    }
    progress prog;
    progress_init(&prog, o->quiet, n);
    drv_report_meta meta = sim_report_meta(o, in);
    for (int i = 0; i < n; i++) {
        int seed = i / in->nprof, p = i % in->nprof;
        rp[i] = (run_progress){&prog, frac, i, n, in->prof[p].name};
        tasks[i] = (drv_sim_task){.cluster = &in->cluster,
                                  .workload = &in->wl[seed],
                                  .catalogue = &in->cat,
                                  .profile = &in->prof[p],
                                  .cfg = {.seed = in->seeds[seed],
                                          .check = o->check,
                                          .placements = o->out != NULL && seed == 0,
                                          .progress = run_progress_cb,
                                          .progress_arg = &rp[i],
                                          .calib = o->trace ? &in->calib : NULL,
                                          .calib_type_fallback = o->calib_type_fallback,
                                          .workload_file = o->trace ? in->trace_path : o->workload,
                                          .stop = &stop_signal},
                                  .out_dir = seed == 0 ? o->out : NULL,
                                  .meta = &meta};
    }
    int rc = drv_sim_batch_run(tasks, n, o->threads);
    progress_clear(&prog);
    for (int i = 0; i < n; i++)
        sums[i] = tasks[i].summary;
    for (int i = 0; rc && i < n; i++)
        if (tasks[i].rc) { /* the first failed run in order, as a sequential run would say */
            fprintf(stderr, "drover: %s\n",
                    tasks[i].d.msg[0] ? tasks[i].d.msg : drv_strerror(tasks[i].rc));
            status =
                tasks[i].rc == DRV_EINVAL && !tasks[i].summary.policy[0] ? EXIT_USAGE : EXIT_RUN;
            hint_gpus(o, in, status);
            break;
        }
out:
    drv_free(tasks);
    drv_free(rp);
    drv_free(frac);
    return status;
}

/* --stream --out: a streamed run's finished rows go straight to its jobs-<policy>.csv. */
typedef struct stream_rows {
    FILE *f; /* NULL: no --out */
    const drv_report_meta *meta;
    const drv_sim *sim; /* the run, for its GPU types' names (set once created) */
} stream_rows;

static void stream_row(void *arg, int32_t job, const drv_jobspec *spec, const drv_jobresult *r)
{
    (void)job;
    const stream_rows *w = arg;
    if (w->f) /* a streamed run has no queues (load_inputs refuses them): no queue column */
        drv_report_job_row(w->f, spec, r, w->meta, false, drv_report_job_gpu_type(w->sim, r));
}

/* One policy's streamed run into *sum, with --out its rows into jobs-<policy>.csv (written under
 * a temporary name and renamed, as drv_report_run_files does). 0 or an error code, d says
 * what. */
static int run_stream_one(const sim_opts *o, const sim_inputs *in, const drv_profile *prof,
                          run_progress *rp, drv_summary *sum, drv_diag *d)
{
    drv_report_meta meta = sim_report_meta(o, in);
    drv_file_out fo = {0};
    stream_rows rows = {NULL, &meta, NULL};
    drv_jobsource src = {0};
    drv_sim *s = NULL;
    /* check_source's pass warned of the rows a trace leaves out; each run's pass would say it
     * again. `drover sim` logs to the default sink (stderr, warnings), restored after. */
    drv_log_set(NULL, NULL, DRV_LOG_ERROR);
    int rc = sim_open_source(o, in, &src, d);
    drv_log_set(NULL, NULL, DRV_LOG_WARN);
    if (!rc && o->out) {
        char path[4200];
        snprintf(path, sizeof path, "%s/jobs-%s.csv", o->out, prof->name);
        rc = drv_file_out_open(&fo, path, d);
        rows.f = rc ? NULL : fo.f;
    }
    drv_sim_config cfg = {.seed = in->seeds[0],
                          .check = o->check,
                          .progress = run_progress_cb,
                          .progress_arg = rp,
                          .calib = o->trace ? &in->calib : NULL,
                          .calib_type_fallback = o->calib_type_fallback,
                          .workload_file = o->trace ? in->trace_path : NULL,
                          .finished = stream_row,
                          .finished_arg = &rows,
                          .stop = &stop_signal};
    if (!rc)
        rc = drv_sim_new_stream(&in->cluster, &src, &in->cat, prof, &cfg, &s, d);
    if (!rc && rows.f) { /* the header names the run's GPU type column, if it has one */
        rows.sim = s;
        drv_report_jobs_header(rows.f, false, drv_sim_gpu_type_name(s, 1) != NULL);
    }
    if (!rc)
        rc = drv_sim_run(s, d);
    if (!rc)
        drv_sim_summary(s, sum);
    drv_sim_free(s); /* after the run: its last rows (jobs not finished) went out in drv_sim_run */
    drv_jobsource_fini(&src);
    if (rows.f)
        rc = rc ? (drv_file_out_abort(&fo), rc) : drv_file_out_commit(&fo, d);
    return rc;
}

/* --stream: each policy in turn (a run reads its own pass over the source), into sums[policy].
 * Returns 0 or the exit status, with the message printed, as run_policies. A streamed run
 * meets some bad input only as it reads the job (a job that fits no node): DRV_EINVAL from the
 * run is bad input too (exit 2), though files of the policies before may have been written. */
static int run_stream(const sim_opts *o, const sim_inputs *in, drv_summary *sums)
{
    double *frac = drv_calloc((size_t)in->nprof, sizeof *frac);
    if (!frac) {
        fprintf(stderr, "drover: out of memory\n");
        return EXIT_RUN;
    }
    progress prog;
    progress_init(&prog, o->quiet, in->nprof);
    int status = 0;
    for (int p = 0; p < in->nprof && !status; p++) {
        /* after a stop, the policies not started yet run no event: their rows say so */
        run_progress rp = {&prog, frac, p, in->nprof, in->prof[p].name};
        drv_diag d = {{0}};
        int rc = run_stream_one(o, in, &in->prof[p], &rp, &sums[p], &d);
        if (rc) {
            progress_clear(&prog);
            fprintf(stderr, "drover: %s\n", d.msg[0] ? d.msg : drv_strerror(rc));
            status = rc == DRV_EINVAL || rc == DRV_EPARSE ? EXIT_USAGE : EXIT_RUN;
            hint_gpus(o, in, status);
        }
    }
    progress_clear(&prog);
    drv_free(frac);
    return status;
}

/* --out: the summary and scenario files, then plots and page drawn from the files just written,
 * as `drover report` would (a missing gnuplot only skips the plots: *skipped). Returns 0 or the
 * exit status, with the message printed. */
static int write_out_dir(const sim_opts *o, const sim_inputs *in, const drv_summary *sums,
                         const char *desc, bool *skipped)
{
    drv_diag d = {{0}};
    drv_scenario sc = {.jobs = in->njobs, .nodes = in->cluster.n, .seed = in->seeds[0]};
    snprintf(sc.desc, sizeof sc.desc, "%s", desc);
    for (int32_t k = 0; k < in->cluster.n; k++) {
        sc.cpu_m += (double)in->cluster.nodes[k].alloc.cpu;
        sc.gpu += (double)in->cluster.nodes[k].alloc.gpu;
    }
    drv_report_meta meta = sim_report_meta(o, in);
    int rc = drv_report_summary_files(o->out, sums, in->nprof, &meta, &d);
    if (!rc)
        rc = drv_report_scenario_file(o->out, &sc, &d);
    if (rc) {
        fprintf(stderr, "drover: %s\n", d.msg[0] ? d.msg : drv_strerror(rc));
        return EXIT_RUN;
    }
    if (o->stream) { /* no time series to draw nor page to read it: the data files alone */
        *skipped = true;
        return 0;
    }
    return cli_render_dir(o->out, "drover", skipped) ? EXIT_RUN : 0;
}

/* --out's multi-seed files, before the page that shows them: written with --seeds, else removed
 * (a page drawn from this run must not show an earlier run's seeds). 0 or the exit status. */
static int out_seeds(const sim_opts *o, const sim_inputs *in, const drv_summary *sums)
{
    if (in->nseeds > 1)
        return sim_seeds_files(o, in, sums);
    for (int k = 0; k < 2; k++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", o->out, k ? "seeds.csv" : "summary-seeds.json");
        if (unlink(path) != 0 && errno != ENOENT) {
            fprintf(stderr, "drover: %s: cannot remove: %s\n", path, strerror(errno));
            return EXIT_RUN;
        }
    }
    return 0;
}

/* The comparison on stdout, in --format. */
static void print_comparison(const sim_opts *o, const sim_inputs *in, const drv_summary *sums,
                             const char *desc, bool skipped)
{
    if (strcmp(o->format, "json") == 0) {
        drv_report_json(stdout, sums, in->nprof);
        return;
    }
    if (strcmp(o->format, "csv") == 0) {
        drv_report_csv(stdout, sums, in->nprof);
        return;
    }
    printf("%s\n", desc);
    if (o->trace)
        printf("trace rows skipped as malformed: %d\n", in->rows_skipped);
    printf("\n");
    drv_report_table(stdout, sums, in->nprof);
    if (o->out && o->stream) {
        printf("\nwrote %s/summary.json, summary.csv, scenario.json, jobs-*.csv (a streamed run "
               "keeps no timeline or placements: no plots or page)\n",
               o->out);
    } else if (o->out) {
        printf("\nwrote %s/summary.json, summary.csv, scenario.json, jobs-*.csv, "
               "timeline-*.csv, placements-*.csv\n",
               o->out);
        if (!skipped)
            printf("plots: %s/*.svg, *.png; report page: %s/index.html\n", o->out, o->out);
    }
}

/* Runs the policies, writes --out and prints; the inputs are loaded. Returns the exit status. */
static int simulate(const sim_opts *o, const sim_inputs *in)
{
    drv_summary *sums = drv_calloc((size_t)in->nprof * (size_t)in->nseeds, sizeof *sums);
    if (!sums) {
        fprintf(stderr, "drover: out of memory\n");
        return EXIT_RUN;
    }
    const char *inputs[] = {o->workload, o->cluster,  in->trace_path[0] ? in->trace_path : NULL,
                            o->models,   o->profiles, o->calib_dir};
    drv_diag d = {{0}};
    if (drv_sim_check_out(o->out, inputs, 6, &d) != 0) {
        fprintf(stderr, "drover: %s\n", d.msg);
        drv_free(sums);
        return EXIT_USAGE;
    }
    if (o->out && make_dirs(o->out) != 0) {
        fprintf(stderr, "drover: --out %s: cannot create directory: %s\n", o->out, strerror(errno));
        drv_free(sums);
        return EXIT_USAGE;
    }
    struct sigaction old[2];
    catch_stop(old);
    int status = o->stream ? run_stream(o, in, sums) : run_policies(o, in, sums);
    release_stop(old);
    int sig = atomic_load(&stop_signal);
    if (status) {
        drv_free(sums);
        return status;
    }
    if (sig)
        fprintf(stderr,
                "drover sim: interrupted (%s): the runs stopped early; what they finished is %s "
                "(the table says where each stopped)\n",
                sig == SIGINT ? "SIGINT" : "SIGTERM", o->out ? "written and shown" : "shown");
    char desc[512];
    snprintf(desc, sizeof desc, "%d jobs on %d nodes (%s, %s)", in->njobs, in->cluster.n,
             o->trace      ? o->trace
             : o->workload ? o->workload
                           : "built-in workload",
             in->pollux   ? "pollux mechanics"
             : o->cluster ? o->cluster
                          : "built-in cluster");
    bool skipped = false;
    status = o->out ? out_seeds(o, in, sums) : 0;
    if (status == 0 && o->out)
        status = write_out_dir(o, in, sums, desc, &skipped);
    if (status == 0 && in->nseeds > 1)
        status = sim_report_seeds(o, in, sums, desc);
    else if (status == 0)
        print_comparison(o, in, sums, desc, skipped);
    drv_free(sums);
    return status == 0 && sig ? 128 + sig : status;
}

int cmd_sim(int argc, char **argv)
{
    sim_opts o = {.policy = "all",
                  .format = "table",
                  .seed = 1,
                  .trace_format = "auto",
                  .on_bad_row = "fail",
                  .mechanics = "default"};
    int first, status = cli_begin(&sim_command, argc, argv, &o, &first);
    if (status >= 0)
        return status;
    if (sim_check_opts(&o) != 0 || (o.from_snapshot && whatif_resolve(&o) != 0))
        return EXIT_USAGE;
    o.argc = argc;
    o.argv = argv;
    sim_inputs in = {.pollux = strcmp(o.mechanics, "pollux") == 0};
    status = sim_parse_seeds(&o, &in) ? EXIT_USAGE : sim_load_inputs(&o, &in);
    cli_explain_calib ec = {o.trace ? &in.calib : NULL, o.calib_type_fallback};
    if (status == 0 && o.explain)
        status =
            cli_explain_job(&in.cluster, &in.wl[0], &in.cat, &in.prof[0], &ec, o.seed, o.explain);
    else if (status == 0 && o.from_snapshot)
        status = whatif_run(&o, &in);
    else if (status == 0)
        status = simulate(&o, &in);
    sim_inputs_fini(&in);
    return status;
}
