/*
 * sim_cmd.h - what the files of `drover sim` share: its options (sim_cmd.c parses them), the
 * inputs every run reads (sim_inputs.c loads and checks them before anything runs) and the
 * multi-seed report (sim_seeds.c). Internal to src/cli.
 */
#ifndef DROVER_CLI_SIM_CMD_H
#define DROVER_CLI_SIM_CMD_H

#include "cli.h"

#include "drover/calib.h"
#include "drover/jobsource.h"
#include "drover/trace.h"

#include <stdint.h>

/* The flags of `drover sim` (sim_cmd.c's table fills them). */
typedef struct sim_opts {
    const char *workload, *cluster, *policy, *format, *out, *models;
    const char *profiles, *explain;
    const char *trace, *trace_format, *on_bad_row, *calib_dir, *mechanics, *data_dir;
    const char *trace_columns, *seeds, *calib_slowdown;
    const char *from_snapshot; /* --from-snapshot DIR (whatif.c) */
    uint64_t seed;
    int threads;
    bool check, quiet, stream, calib_type_fallback;
    uint64_t given; /* bit i: sim_flags[i] was given (cli_given) */
    int argc;       /* the command as given (argv[0] "sim"), for summary-seeds.json */
    char **argv;
    /* --from-snapshot: its files (cluster and workload then point here) and what
       snapshot.yaml says of it */
    char snap_cluster[4200], snap_workload[4200], snap_taken[64], snap_server[512];
} sim_opts;

/* Everything a run reads, checked before anything runs. */
typedef struct sim_inputs {
    drv_catalogue cat;
    drv_cluster_spec cluster;
    drv_workload *wl; /* [nseeds]: the jobs for each seed */
    uint64_t *seeds;  /* [nseeds]: --seeds, or --seed alone */
    int nseeds;
    drv_calib calib;       /* loaded only with --trace */
    int32_t rows_skipped;  /* malformed trace rows skipped (--on-bad-row skip) */
    cli_profiles profiles; /* --profiles FILE */
    drv_profile *prof;     /* the --policy list, resolved (drv_malloc'ed) */
    int nprof;
    bool pollux;           /* --mechanics pollux */
    char trace_path[4200]; /* --trace as found (maybe in the data directory), for summary.json */
    int32_t njobs;         /* jobs of a run (of the first seed's) */
    /* --stream: what a job source borrows, kept here so that it outlives every run */
    drv_trace_opts topts; /* --trace */
    drv_genparams gen;    /* the built-in scenario */
} sim_inputs;

/* Checks what the flag table cannot: values read by other modules, flags that exclude others.
 * 0, or -1 with a one-line message printed. */
int sim_check_opts(const sim_opts *o);
/* --seeds LIST ("1-10", "1,4,9", "3") into in->seeds; --seed alone when LIST is NULL. 0, or -1
 * with a one-line message printed. */
int sim_parse_seeds(const sim_opts *o, sim_inputs *in);
/* Reads and checks every input. Returns 0 or the exit status, with the message printed. */
int sim_load_inputs(const sim_opts *o, sim_inputs *in);
void sim_inputs_fini(sim_inputs *in);
/* --stream: a source of the jobs (from the start), reading what in holds (in->topts, in->gen
 * must not move while it is in use). 0 or an error code, d says what. */
int sim_open_source(const sim_opts *o, const sim_inputs *in, drv_jobsource *src, drv_diag *d);
/* What the --out files record beyond the results: model names, seed, profiles, input files. */
drv_report_meta sim_report_meta(const sim_opts *o, const sim_inputs *in);

/* --seeds with --out: summary-seeds.json and seeds.csv, written before the page that shows them.
 * sums is [seed * nprof + policy]. Returns 0 or the exit status (the message printed). */
int sim_seeds_files(const sim_opts *o, const sim_inputs *in, const drv_summary *sums);
/* --seeds: each policy's mean and interval over the seeds and the paired differences, on stdout
 * in --format. Returns 0 or the exit status. */
int sim_report_seeds(const sim_opts *o, const sim_inputs *in, const drv_summary *sums,
                     const char *desc);

/* --from-snapshot DIR (whatif.c): checks DIR's files and its version and points o->cluster and
 * o->workload at its files. 0, or -1 with a one-line message printed. */
int whatif_resolve(sim_opts *o);
/* Replays the snapshot under each policy and prints when each job starts and finishes. The
 * inputs are loaded. Returns the exit status. */
int whatif_run(const sim_opts *o, const sim_inputs *in);

#endif
