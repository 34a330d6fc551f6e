/*
 * flags.h - the one flag parser of the drover command: a table per sub-command, read by
 * getopt_long, from which `--help` is also generated (so the help cannot name a flag the parser
 * does not take, or miss one it does).
 *
 * GNU conventions: `--name VALUE` and `--name=VALUE`, unique prefixes of long names, `-x` short
 * names, `--` ends the flags. Every command also takes -h/--help and --version. Each flag may
 * be given once: a second `--seed` is a usage error, not a silent override. The parser never
 * prints help and never exits: it returns what it found, and the command decides.
 *
 * Adding a flag is one table entry plus the field it fills, e.g. for a command whose options
 * struct is sim_opts:
 *
 *     {.name = "quiet", .kind = FLAG_SWITCH, .at = offsetof(sim_opts, quiet),
 *      .help = "print only the table"},
 */
#ifndef DROVER_CLI_FLAGS_H
#define DROVER_CLI_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* What a flag's value is and the type of the field (at .at in the options struct) it fills. */
enum flag_kind {
    FLAG_SWITCH, /* bool: set to true; takes no value */
    FLAG_TEXT,   /* const char *: the value as given (points into argv) */
    FLAG_CHOICE, /* const char *: one of .choices, a '|'-separated list such as "json|csv" */
    FLAG_UINT64, /* uint64_t: a non-negative whole number, any size that fits */
    FLAG_NUMBER, /* double: a number in [.lo, .hi] */
    FLAG_INT,    /* int: a whole number in [.lo, .hi] (bounds within int) */
};

/* One flag of a command. Unset members are zero; .name or .short_name is required. */
typedef struct cli_flag {
    const char *name;    /* long name without the dashes, or NULL for a short-only flag */
    char short_name;     /* e.g. 'v' for -v; 0 when none */
    enum flag_kind kind; /* see above */
    size_t at;           /* offsetof the field in the command's options struct */
    const char *arg;     /* what the value is called in --help ("FILE"); NULL for switches */
    const char *help;    /* one line per '\n', shown after the flag in --help */
    const char *choices; /* FLAG_CHOICE: "a|b|c" */
    double lo, hi;       /* FLAG_NUMBER, FLAG_INT: the accepted range, both ends included */
} cli_flag;

/* One sub-command: its name, its help text around the generated flag list, and its flags. */
typedef struct cli_command {
    const char *name;      /* "sim"; "drover" for the command line before the sub-command */
    const char *args;      /* the arguments in the usage line ("DIR"), or NULL for none */
    const char *about;     /* paragraph(s) between the usage line and the flags; may be NULL */
    const char *footer;    /* paragraph(s) after the flags (exit status...); may be NULL */
    const cli_flag *flags; /* the table (at most 64 flags); may be NULL when nflags is 0 */
    int nflags;
    int min_args, max_args; /* how many arguments (not flags) the command takes */
    /* Stop at the first argument that is not a flag (the top level, before a sub-command). */
    bool stop_at_arg;
    /* When true, given_at is the offsetof a uint64_t in the options struct in which bit i is set
     * when flags[i] was given (cli_given reads it): for a command whose defaults are values a
     * user may also give. */
    bool track_given;
    size_t given_at;
} cli_command;

/* Outcome of cli_parse. */
enum cli_parse_result {
    CLI_OK,      /* flags stored; arguments are argv[*first_arg .. argc-1] */
    CLI_HELP,    /* -h or --help was given: print cli_help to stdout, exit 0 */
    CLI_VERSION, /* --version was given: print the version, exit 0 */
    CLI_USAGE,   /* a one-line message naming the flag is on stderr: exit 2 */
};

/*
 * Parses argv[1..argc-1] (argv[0] is the command's name) into opts, whose fields the table
 * names; fields of flags not given are left as the caller initialised them. May permute argv
 * (GNU getopt puts arguments after the flags). On CLI_OK *first_arg is the index of the first
 * argument that is not a flag. Messages go to err, prefixed "drover <name>: ". Help and version
 * take precedence over errors that come after them on the command line, not before.
 */
enum cli_parse_result cli_parse(const cli_command *cmd, int argc, char **argv, void *opts,
                                int *first_arg, FILE *err);

/* Whether the flag named name (its long name) was given, for a command with track_given. */
bool cli_given(const cli_command *cmd, const void *opts, const char *name);

/*
 * Writes the command's full help: the usage line ("usage: drover NAME [options] ARGS"; without
 * "[options]" when the table is empty), about, the flag table, footer.
 */
void cli_help(const cli_command *cmd, FILE *out);

#endif
