/*
 * main.c - the drover command: finds the sub-command and runs it; `drover help`, `version`,
 * `policies` and `calibrate`. The only place that exits (by returning from main).
 *
 * Every sub-command parses its flags with cli_parse (flags.c) from its own table, and its help
 * is generated from that table, so `drover help sim` and `drover sim --help` print the same.
 *
 * Exit status: 0 success; 1 the run failed (an invariant broke, out of memory, cannot write);
 * 2 bad usage or bad input (nothing was run and nothing was written).
 */
#include "cli.h"
#include "datadir.h"

#include "drover/calib.h"
#include "drover/policy.h"
#include "drover/version.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

int cli_version(void)
{
    /* the commit too, so a result can be traced to the code that made it (summary.json says
     * the same) */
    printf("drover %s (commit %s%s)\n", DROVER_VERSION, drv_build_commit,
           drv_build_dirty ? ", with uncommitted changes" : "");
    return 0;
}

int cli_begin(const cli_command *cmd, int argc, char **argv, void *opts, int *first_arg)
{
    switch (cli_parse(cmd, argc, argv, opts, first_arg, stderr)) {
    case CLI_HELP:
        cli_help(cmd, stdout);
        return 0;
    case CLI_VERSION:
        return cli_version();
    case CLI_USAGE:
        return EXIT_USAGE;
    case CLI_OK:
        break;
    }
    return -1;
}

/* ---- policies ------------------------------------------------------------------------------- */

typedef struct policies_opts {
    const char *profiles;
} policies_opts;

static const cli_flag policies_flags[] = {
    {.name = "profiles",
     .kind = FLAG_TEXT,
     .at = offsetof(policies_opts, profiles),
     .arg = "FILE",
     .help = "also list the policies of a YAML file (docs/policies.md); a profile\n"
             "named like a built-in one replaces it wherever --profiles is given"},
};

static const cli_command policies_command = {
    .name = "policies",
    .about = "Lists the built-in policies with their profile lines, and every plugin.\n",
    .flags = policies_flags,
    .nflags = (int)(sizeof policies_flags / sizeof policies_flags[0]),
};

/* One policy: name and doc, then its profile line under the doc. */
static void print_policy(const char *name, const char *doc, const char *line, const char *note)
{
    if (doc[0] || note[0])
        printf("  %-20s %s%s\n", name, doc, note);
    else
        printf("  %s\n", name);
    printf("  %-20s %s\n", "", line);
}

static int cmd_policies(int argc, char **argv)
{
    policies_opts o = {0};
    int first, status = cli_begin(&policies_command, argc, argv, &o, &first);
    if (status >= 0)
        return status;
    drv_diag d = {{0}};
    cli_profiles ps;
    if (cli_profiles_load(&ps, o.profiles, &d) != 0) {
        fprintf(stderr, "drover policies: --profiles: %s\n", d.msg);
        return EXIT_USAGE;
    }
    puts("policies (profile lines; docs/policies.md):");
    for (int i = 0; i < drv_profile_builtin_count(); i++) {
        const char *name = drv_profile_builtin_name(i);
        print_policy(name, drv_profile_builtin_doc(i), drv_profile_builtin_line(i),
                     cli_profile_overridden(&ps, name) ? " [replaced by --profiles]" : "");
    }
    if (ps.nfile > 0)
        printf("\npolicies from %s:\n", ps.path);
    for (int i = 0; i < ps.nfile; i++) {
        char line[2048];
        drv_profile_format(&ps.file[i], line, sizeof line);
        print_policy(ps.file[i].name, ps.file[i].doc, line, "");
    }
    puts("\nplugins:");
    int n;
    const drv_plugin *const *plugins = drv_plugins(&n);
    for (int i = 0; i < n; i++) {
        printf("  %-20s %s\n", plugins[i]->name, plugins[i]->doc);
    }
    cli_profiles_fini(&ps);
    return 0;
}

/* ---- calibrate ------------------------------------------------------------------------------ */

typedef struct calibrate_opts {
    const char *dir, *data_dir;
} calibrate_opts;

static const cli_flag calibrate_flags[] = {
    {.name = "calib-dir",
     .kind = FLAG_TEXT,
     .at = offsetof(calibrate_opts, dir),
     .arg = "DIR",
     .help = "the measured profiles (default: DATA/pollux/profiles)"},
    {.name = "data-dir",
     .kind = FLAG_TEXT,
     .at = offsetof(calibrate_opts, data_dir),
     .arg = "DATA",
     .help = "drover's data directory, found as for drover sim --data-dir"},
};

static const cli_command calibrate_command = {
    .name = "calibrate",
    .about = "Fits the analytic step-time model (docs/data.md) to each model's measured\n"
             "placements and prints its parameters and relative error.\n",
    .flags = calibrate_flags,
    .nflags = (int)(sizeof calibrate_flags / sizeof calibrate_flags[0]),
};

static int cmd_calibrate(int argc, char **argv)
{
    calibrate_opts o = {0};
    int first, status = cli_begin(&calibrate_command, argc, argv, &o, &first);
    if (status >= 0)
        return status;
    char data[4096], calib_buf[4200];
    if (!o.dir || o.data_dir) { /* a --data-dir given is checked even when --calib-dir wins */
        char why[4200];
        if (data_dir_find(o.data_dir, data, sizeof data, why, sizeof why) != 0) {
            fprintf(stderr, "drover calibrate: %s\n", why);
            return EXIT_USAGE;
        }
    }
    if (!o.dir) {
        snprintf(calib_buf, sizeof calib_buf, "%s/pollux/profiles", data);
        o.dir = calib_buf;
    }
    drv_calib c = {0};
    drv_diag d = {{0}};
    if (drv_calib_load(&c, o.dir, &d) != 0) {
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

/* ---- version, help and the command table ---------------------------------------------------- */

static const cli_command version_command = {
    .name = "version",
    .about = "Prints the version.\n",
};

static int cmd_version(int argc, char **argv)
{
    int first, status = cli_begin(&version_command, argc, argv, NULL, &first);
    return status >= 0 ? status : cli_version();
}

static int cmd_help(int argc, char **argv);

static const cli_command help_command = {
    .name = "help",
    .args = "[COMMAND]",
    .max_args = 1,
    .about = "Shows the list of commands, or the help of COMMAND (the same as\n"
             "`drover COMMAND --help`).\n",
};

/* The sub-commands, in the order the help lists them. */
static const struct {
    const char *name, *summary;
    const cli_command *spec;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"sim", "simulate policies on a cluster and workload; print a comparison table", &sim_command,
     cmd_sim},
    {"run", "run in a Kubernetes cluster: TrainingJob controller, scheduler, binder", &run_command,
     cmd_run},
    {"snapshot", "write a live cluster as files `drover sim --from-snapshot` replays (what if)",
     &snapshot_command, cmd_snapshot},
    {"report", "redraw the plots and index.html of a `sim --out` directory from its files",
     &report_command, cmd_report},
    {"policies", "list the built-in policies (profiles) and plugins", &policies_command,
     cmd_policies},
    {"calibrate", "fit the analytic step-time model to the measured profiles; print its error",
     &calibrate_command, cmd_calibrate},
    {"emulate", "play kubelet for a cluster file's nodes on a Kubernetes API server",
     &emulate_command, cmd_emulate},
    {"playground", "try the Kubernetes side without a cluster: API server, nodes, controller",
     &playground_command, cmd_playground},
    {"version", "print the version", &version_command, cmd_version},
    {"help", "show this help, or `drover help <command>`", &help_command, cmd_help},
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

/* The command line before the sub-command: only -h/--help and --version. */
static const cli_command top_command = {
    .name = "drover",
    .args = "<command> [options]",
    .min_args = 1,
    .stop_at_arg = true,
    .about = "Drover schedules and resizes distributed deep-learning training jobs. The same "
             "policies\n"
             "run in a trace-driven simulator and against a Kubernetes cluster.\n",
};

static int find_command(const char *name)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return i;
    return -1;
}

static void main_help(FILE *out)
{
    cli_help(&top_command, out);
    fputs("\ncommands:\n", out);
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
}

static int cmd_help(int argc, char **argv)
{
    int first, status = cli_begin(&help_command, argc, argv, NULL, &first);
    if (status >= 0)
        return status;
    if (first >= argc) {
        main_help(stdout);
        return 0;
    }
    int k = find_command(argv[first]);
    if (k < 0) {
        fprintf(stderr, "drover help: unknown command '%s' (commands:", argv[first]);
        for (int i = 0; i < NCOMMANDS; i++)
            fprintf(stderr, "%s %s", i ? "," : "", commands[i].name);
        fputs(")\n", stderr);
        return EXIT_USAGE;
    }
    cli_help(commands[k].spec, stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        main_help(stderr);
        return EXIT_USAGE;
    }
    int first;
    switch (cli_parse(&top_command, argc, argv, NULL, &first, stderr)) {
    case CLI_HELP:
        main_help(stdout);
        return 0;
    case CLI_VERSION:
        return cli_version();
    case CLI_USAGE:
        return EXIT_USAGE;
    case CLI_OK:
        break;
    }
    int k = find_command(argv[first]);
    if (k < 0) {
        fprintf(stderr, "drover: unknown command '%s' (see drover --help)\n", argv[first]);
        return EXIT_USAGE;
    }
    return commands[k].run(argc - first, argv + first);
}
