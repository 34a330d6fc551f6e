/*
 * cli.h - what the drover command's source files share: exit statuses, the sub-commands (each
 * a function and the flag table its help is generated from), and the one profile lookup.
 *
 * Files: main.c (dispatch, help, version, policies, calibrate), flags.c (the parser),
 * profiles.c (policies by name), sim_cmd.c, explain.c, report_cmd.c, run_cmd.c, emulate_cmd.c,
 * playground_cmd.c.
 * Only this directory exits; each cmd_* returns the exit status and main returns it.
 */
#ifndef DROVER_CLI_H
#define DROVER_CLI_H

#include "flags.h"

#include "drover/cycle.h"
#include "drover/sim.h"

/* Exit status: 0 success; 1 the run failed; 2 bad usage or bad input (nothing was run). */
enum { EXIT_RUN = 1, EXIT_USAGE = 2 };

/*
 * Sub-commands: each takes its own argv (argv[0] is the sub-command's name) and returns the exit
 * status. Each *_command describes its flags, for its parser and for `drover help NAME`.
 */
extern const cli_command sim_command, report_command, run_command, emulate_command,
    playground_command, snapshot_command;
int cmd_sim(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_emulate(int argc, char **argv);
int cmd_playground(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);

/*
 * The nodes of a cluster file (NULL: the built-in cluster, drv_cluster_default) as the
 * emulator's list (*nodes drv_calloc'ed, *n of them; emulate_cmd.c), and the file's pod start
 * delay into *pod_start (negative when it gives none). who names the command in messages
 * ("emulate"). Returns 0 or the exit status, the message printed.
 */
struct drv_emu_node;
int cli_emulated_nodes(const char *file, const char *who, struct drv_emu_node **nodes, int32_t *n,
                       double *pod_start);

/* The connection flags of the commands that talk to a cluster (`drover run`, `drover snapshot`):
 * --kubeconfig, --context and --in-cluster into fields kc, ctx and inc of options struct T,
 * with one help text. */
#define CLI_KUBE_FLAGS(T, kc, ctx, inc)                                                            \
    {.name = "kubeconfig",                                                                         \
     .kind = FLAG_TEXT,                                                                            \
     .at = offsetof(T, kc),                                                                        \
     .arg = "FILES",                                                                               \
     .help = "kubeconfig files, ':'-separated (default: $KUBECONFIG, else\n~/.kube/config)"},      \
        {.name = "context",                                                                        \
         .kind = FLAG_TEXT,                                                                        \
         .at = offsetof(T, ctx),                                                                   \
         .arg = "NAME",                                                                            \
         .help = "kubeconfig context (default: its current-context)"},                             \
    {                                                                                              \
        .name = "in-cluster", .kind = FLAG_SWITCH, .at = offsetof(T, inc),                         \
        .help = "use the pod's service account instead of a kubeconfig"                            \
    }

/* Prints "drover VERSION" (every command's --version). Returns 0. */
int cli_version(void);

/*
 * The start of every command (main.c): parses argv with cmd's table into opts (cli_parse).
 * Returns -1 when the command goes on (its arguments start at argv[*first_arg]), else the exit
 * status to return at once: 0 after printing the help or the version, EXIT_USAGE after a
 * usage error (its message printed).
 */
int cli_begin(const cli_command *cmd, int argc, char **argv, void *opts, int *first_arg);

/*
 * Reads a `drover sim --out` directory back and draws its plots and index.html (report_cmd.c).
 * who prefixes messages. Returns 0 (with *skipped set when gnuplot is missing or failed: the
 * page is then written without plots), EXIT_USAGE when the files are missing or bad, EXIT_RUN
 * when reading ran out of memory or index.html cannot be written.
 */
int cli_render_dir(const char *dir, const char *who, bool *skipped);

/* What --explain times calibrated jobs by (the calibration `drover sim` runs with). */
typedef struct cli_explain_calib {
    const struct drv_calib *calib; /* the trace's calibration (NULL: analytic jobs) */
    bool fallback;                 /* --calib-type-fallback */
} cli_explain_calib;
/*
 * --explain JOB of `drover sim` (explain.c): on a cluster with GPU types, the type JOB ran on
 * and why (its one-GPU speed per type, by calib, and the free GPUs per type when it was
 * placed); then JOB's combined priority factor by factor, as the first cycle after its
 * submission sees it under prof, or, when prof does not order its queue by the `priority`
 * plugin, what it orders by instead. Returns the exit status.
 */
int cli_explain_job(const drv_cluster_spec *cl, const drv_workload *wl, const drv_catalogue *cat,
                    const drv_profile *prof, const cli_explain_calib *calib, uint64_t seed,
                    const char *name);
/* drv_ctrl_opts.explain for `drover run` (explain.c): the combined priority of a waiting job,
 * factor by factor, appended to its Waiting Event ("; priority 0.600 = user 0.40 x 0.000 +
 * ..."), when the profile's queue order uses `priority`; nothing otherwise. */
void cli_explain_event(void *arg, const drv_profile *prof, const drv_state *st, double now,
                       int32_t job, char *buf, size_t n);

/* ---- policies by name (profiles.c) -------------------------------------------------------- */

/*
 * The policies a command can name: the built-in profiles and those of a --profiles file. A
 * file's profile overrides a built-in one of the same name, for every command.
 */
typedef struct cli_profiles {
    const char *path;  /* the file (borrowed), or NULL when none was given */
    drv_profile *file; /* its profiles (owned; drv_malloc'ed), in file order */
    int nfile;
} cli_profiles;

/* Loads path's profiles (none when path is NULL). Errors name file:line; *ps is then empty. */
int cli_profiles_load(cli_profiles *ps, const char *path, drv_diag *d);
void cli_profiles_fini(cli_profiles *ps);
/* The profile named name: the file's if it has one, else the built-in. DRV_ENOENT names the
 * known policies. */
int cli_profile_find(const cli_profiles *ps, const char *name, drv_profile *out, drv_diag *d);
/* --policy name with --profiles file (NULL: none) for command who ("run"): the two steps above,
 * each failure's message printed ("drover run: --policy: ..."). 0 or -1. */
int cli_policy_named(const char *who, const char *profiles, const char *name, drv_profile *out);
/* True when the file overrides the built-in profile name. */
bool cli_profile_overridden(const cli_profiles *ps, const char *name);
/*
 * A --policy value: comma-separated names, or `all` (the built-ins in table order with file
 * overrides in place, then the file's other profiles). *out (drv_malloc'ed, the caller
 * drv_frees it) receives *n >= 1 profiles; on error they are untouched.
 */
int cli_profiles_resolve(const cli_profiles *ps, const char *list, drv_profile **out, int *n,
                         drv_diag *d);

#endif
