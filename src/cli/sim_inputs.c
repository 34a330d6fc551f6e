/*
 * sim_inputs.c - what `drover sim` reads, read and checked before anything runs: the flags
 * against each other, the seeds, the catalogue, the cluster, every seed's jobs (a workload, a
 * trace or the built-in scenario), the profiles. Bad input exits 2 with nothing written.
 */
#include "sim_cmd.h"
#include "datadir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void sim_inputs_fini(sim_inputs *in)
{
    drv_free(in->prof);
    cli_profiles_fini(&in->profiles);
    for (int i = 0; in->wl && i < in->nseeds; i++)
        drv_workload_fini(&in->wl[i]);
    drv_free(in->wl);
    drv_free(in->seeds);
    drv_cluster_fini(&in->cluster);
    drv_catalogue_fini(&in->cat);
    drv_calib_fini(&in->calib);
}

/* --stream: what the streamed source reads (a CSV trace with named columns, or the generator)
 * and what a streamed run keeps (no placement log, one seed at a time); a cluster with queues
 * is refused once it is read (load_inputs). */
static int check_stream_opts(const sim_opts *o)
{
    const char *bad = o->workload  ? "--workload: a YAML workload is read whole"
                      : o->seeds   ? "--seeds: a streamed run is one seed (--seed)"
                      : o->explain ? "--explain: it looks at a job of a workload held whole"
                      : strcmp(o->on_bad_row, "skip") == 0
                          ? "--on-bad-row skip: a streamed run stops at a bad row"
                      : o->trace && !o->trace_columns
                          ? "--trace needs --trace-columns MAP: the streamed reader reads CSV "
                            "with named columns (docs/data.md); other formats are read whole"
                      : o->trace && strcmp(o->trace_format, "auto") != 0 &&
                              strcmp(o->trace_format, "columns") != 0
                          ? "--trace-format: the streamed reader reads only `columns` "
                            "(CSV with --trace-columns MAP)"
                          : NULL;
    if (bad)
        fprintf(stderr, "drover sim: --stream and %s; drop --stream\n", bad);
    return bad ? -1 : 0;
}

int sim_check_opts(const sim_opts *o)
{
    if (drv_trace_format_parse(o->trace_format) == -1) {
        fprintf(stderr,
                "drover sim: --trace-format: expected pollux, philly, tiresias, helios, pai-job, "
                "pai-task, gavel, philly-log, columns or auto, found '%s'\n",
                o->trace_format);
        return -1;
    }
    if (o->trace_columns && !o->trace) {
        fprintf(stderr, "drover sim: --trace-columns: expected --trace FILE too\n");
        return -1;
    }
    if (o->trace && o->workload) {
        fprintf(stderr, "drover sim: --trace and --workload: give one of them\n");
        return -1;
    }
    if (o->seeds && o->explain) {
        fprintf(stderr, "drover sim: --seeds and --explain: --explain looks at one run (--seed)\n");
        return -1;
    }
    if (o->seeds && cli_given(&sim_command, o, "seed")) {
        fprintf(stderr, "drover sim: --seed and --seeds: give one of them\n");
        return -1;
    }
    /* The Pollux mechanics are its simulator's cluster as much as its timing: a cluster file
     * beside them was dropped without a word. */
    if (o->cluster && strcmp(o->mechanics, "pollux") == 0) {
        fprintf(stderr, "drover sim: --mechanics pollux and --cluster: the Pollux mechanics bring "
                        "their own cluster (16 nodes x 4 GPUs); give one of them\n");
        return -1;
    }
    /* A --data-dir that is not a directory is wrong even where this run would not read it. */
    char data[4096], why[4200];
    if (o->data_dir && data_dir_find(o->data_dir, data, sizeof data, why, sizeof why) != 0) {
        fprintf(stderr, "drover sim: %s\n", why);
        return -1;
    }
    return o->stream ? check_stream_opts(o) : 0;
}

enum { MAX_SEEDS = 1000 };

int sim_parse_seeds(const sim_opts *o, sim_inputs *in)
{
    in->seeds = drv_calloc(MAX_SEEDS, sizeof *in->seeds);
    if (!in->seeds) {
        fprintf(stderr, "drover: out of memory\n");
        return -1;
    }
    if (!o->seeds) {
        in->seeds[in->nseeds++] = o->seed;
        return 0;
    }
    for (const char *p = o->seeds; *p;) {
        char *end;
        if (*p < '0' || *p > '9')
            goto bad;
        unsigned long long a = strtoull(p, &end, 10), b = a;
        if (*end == '-') {
            if (end[1] < '0' || end[1] > '9')
                goto bad;
            b = strtoull(end + 1, &end, 10);
        }
        if (b < a || (*end && *end != ','))
            goto bad;
        for (unsigned long long v = a; v <= b; v++) {
            if (in->nseeds == MAX_SEEDS) {
                fprintf(stderr, "drover sim: --seeds: more than %d seeds\n", MAX_SEEDS);
                return -1;
            }
            in->seeds[in->nseeds++] = v;
        }
        p = *end ? end + 1 : end;
    }
    /* The same seed twice is the same run twice: its interval would shrink with no new
     * information. O(n^2) over at most MAX_SEEDS seeds. */
    for (int i = 0; i < in->nseeds; i++)
        for (int k = 0; k < i; k++)
            if (in->seeds[k] == in->seeds[i]) {
                fprintf(stderr,
                        "drover sim: --seeds: seed %llu is given twice (each seed once: a repeated "
                        "seed repeats a run and narrows the interval for nothing)\n",
                        (unsigned long long)in->seeds[i]);
                return -1;
            }
    if (in->nseeds > 0)
        return 0;
bad:
    fprintf(stderr,
            "drover sim: --seeds: expected seeds and ranges separated by commas (\"1-10\", "
            "\"1,4,9\"), found '%s'\n",
            o->seeds);
    return -1;
}

/* --trace: where the trace and the measured profiles are (the data directory gives the default
 * profiles and a home for relative traces; it is needed only when --calib-dir is not given, or
 * --data-dir is and is wrong), and the profiles, loaded once for every seed. */
static int load_trace_inputs(const sim_opts *o, sim_inputs *in, drv_diag *d)
{
    char data[4096], calib_buf[4200], trace_buf[4200];
    const char *calib_dir = o->calib_dir, *trace = o->trace;
    if (data_dir_find(o->data_dir, data, sizeof data, d->msg, sizeof d->msg) == 0) {
        if (!calib_dir) {
            snprintf(calib_buf, sizeof calib_buf, "%s/pollux/profiles", data);
            calib_dir = calib_buf;
        }
        trace = data_path(trace, data, trace_buf, sizeof trace_buf);
    } else if (!calib_dir || o->data_dir) {
        return DRV_EINVAL;
    }
    d->msg[0] = 0;
    snprintf(in->trace_path, sizeof in->trace_path, "%s", trace);
    int rc = drv_calib_load(&in->calib, calib_dir, d);
    if (!rc && o->calib_slowdown)
        rc = drv_calib_parse_slowdowns(&in->calib, o->calib_slowdown, d);
    return rc;
}

/* The jobs of one seed: from --trace, --workload, or generated. */
/* How a trace is read for one seed: its format, bad rows, and the GPUs of the first GPU node. */
static drv_trace_opts trace_opts(const sim_opts *o, sim_inputs *in, uint64_t seed)
{
    drv_trace_opts to = {drv_trace_format_parse(o->trace_format),
                         strcmp(o->on_bad_row, "skip") == 0, seed, &in->calib, DRV_POLLUX_GPUS};
    for (int32_t i = 0; i < in->cluster.n; i++)
        if (in->cluster.nodes[i].alloc.gpu > 0) {
            to.gpus_per_node = (int32_t)in->cluster.nodes[i].alloc.gpu;
            break;
        }
    return to;
}

static int load_jobs(const sim_opts *o, sim_inputs *in, uint64_t seed, drv_workload *wl,
                     drv_diag *d)
{
    if (o->trace) {
        drv_trace_opts to = trace_opts(o, in, seed);
        return o->trace_columns
                   ? drv_trace_load_columns(wl, in->trace_path, o->trace_columns, &in->cat, &to,
                                            &in->rows_skipped, d)
                   : drv_trace_load(wl, in->trace_path, &in->cat, &to, &in->rows_skipped, d);
    }
    if (o->workload)
        return drv_workload_load(wl, o->workload, &in->cat, seed, d);
    drv_genparams g;
    drv_genparams_default(&g, seed);
    return drv_workload_generate(wl, &g, &in->cat, d);
}

int sim_open_source(const sim_opts *o, const sim_inputs *in, drv_jobsource *src, drv_diag *d)
{
    if (o->trace)
        return drv_jobsource_csv(src, in->trace_path, o->trace_columns, &in->cat, &in->topts, d);
    return drv_jobsource_generate(src, &in->gen, &in->cat, d);
}

/* --stream: the source's options, and one pass over it so that bad or unsorted rows are
 * reported (file:line) before anything runs; keeps only the number of jobs. */
static int check_source(const sim_opts *o, sim_inputs *in, drv_diag *d)
{
    int rc = o->trace ? load_trace_inputs(o, in, d) : 0;
    if (rc)
        return rc;
    in->topts = trace_opts(o, in, in->seeds[0]);
    drv_genparams_default(&in->gen, in->seeds[0]);
    drv_jobsource src = {0};
    rc = sim_open_source(o, in, &src, d);
    in->njobs = rc ? 0 : src.jobs;
    drv_jobsource_fini(&src);
    return rc;
}

/* Every seed's jobs. */
static int load_all_jobs(const sim_opts *o, sim_inputs *in, drv_diag *d)
{
    if (o->stream)
        return check_source(o, in, d);
    int rc = o->trace ? load_trace_inputs(o, in, d) : 0;
    in->wl = rc ? NULL : drv_calloc((size_t)in->nseeds, sizeof *in->wl);
    if (!rc && !in->wl)
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int i = 0; !rc && i < in->nseeds; i++)
        rc = load_jobs(o, in, in->seeds[i], &in->wl[i], d);
    in->njobs = rc ? 0 : in->wl[0].n;
    return rc;
}

/* Whether path is named as a trace is (CSV, TSV, a Gavel .trace): given to --workload, such a
 * file fails as YAML with a message about YAML, so the failure also points to --trace. */
static bool named_like_trace(const char *path)
{
    static const char *const ext[] = {".csv", ".tsv", ".trace"};
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t k = strlen(ext[i]);
        if (n > k && strcasecmp(path + n - k, ext[i]) == 0)
            return true;
    }
    return false;
}

int sim_load_inputs(const sim_opts *o, sim_inputs *in)
{
    drv_diag d = {{0}};
    int rc = o->models ? drv_catalogue_load(&in->cat, o->models, &d)
                       : drv_catalogue_builtin(&in->cat, &d);
    if (!rc) {
        if (in->pollux)
            drv_cluster_pollux(&in->cluster, DRV_POLLUX_NODES, DRV_POLLUX_GPUS);
        else if (o->cluster)
            rc = drv_cluster_load(&in->cluster, o->cluster, &d);
        else
            drv_cluster_default(&in->cluster);
    }
    if (!rc && o->stream && in->cluster.nqueues > 0) {
        fprintf(stderr,
                "drover sim: --stream: %s declares queues, which a streamed run does not "
                "support yet; drop --stream\n",
                o->cluster);
        return EXIT_USAGE;
    }
    if (!rc)
        rc = load_all_jobs(o, in, &d);
    if (rc && rc != DRV_ENOMEM && o->workload && named_like_trace(o->workload)) {
        fprintf(stderr,
                "drover: %s (--workload reads a YAML workload, docs/formats.md; for a trace use "
                "--trace %s, docs/data.md)\n",
                d.msg[0] ? d.msg : drv_strerror(rc), o->workload);
        return EXIT_USAGE;
    }
    if (!rc)
        rc = cli_profiles_load(&in->profiles, o->profiles, &d);
    if (rc) {
        fprintf(stderr, "drover: %s\n", d.msg[0] ? d.msg : drv_strerror(rc));
        return rc == DRV_ENOMEM ? EXIT_RUN : EXIT_USAGE;
    }
    if ((rc = cli_profiles_resolve(&in->profiles, o->policy, &in->prof, &in->nprof, &d)) != 0) {
        fprintf(stderr, "drover sim: --policy: %s\n", d.msg);
        return rc == DRV_ENOMEM ? EXIT_RUN : EXIT_USAGE;
    }
    /* The Pollux simulator decides once per 60 s round. */
    for (int i = 0; in->pollux && i < in->nprof; i++)
        in->prof[i].period = DRV_POLLUX_ROUND;
    return 0;
}

drv_report_meta sim_report_meta(const sim_opts *o, const sim_inputs *in)
{
    return (drv_report_meta){.cat = &in->cat,
                             .calib = o->trace ? &in->calib : NULL,
                             .seed = in->seeds[0],
                             .profiles = in->prof,
                             .inputs = {{"trace", o->trace ? in->trace_path : NULL},
                                        {"workload", o->workload},
                                        {"cluster", o->cluster},
                                        {"models", o->models},
                                        {"profiles", o->profiles}},
                             .ninputs = 5};
}
