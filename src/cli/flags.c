/*
 * flags.c - the drover command's flag parser and help generator (flags.h), on getopt_long.
 *
 * The command's table becomes getopt_long's option array: a flag with a short name returns that
 * character, a long-only flag returns FLAG_VAL_BASE + its index, so the returned value leads
 * straight back to the table entry and its field. Values are converted and range-checked here,
 * once for every command, so every command words its usage errors the same way:
 *
 *     drover run: --kube-api-qps: expected a number from 1 to 1000000, found '0'
 *
 * A flag given twice is refused (`--seed 1 --seed 2` would otherwise keep the last silently,
 * and a script that sets a flag in two places would run with one of them unnoticed):
 *
 *     drover sim: --seed: given twice (give each flag once)
 *
 * getopt_long keeps its position in globals (optind...); cli_parse resets them on entry, so it
 * may be called several times in one process (the top level, then a sub-command).
 */
#include "flags.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bounds of a table: long-only flags are numbered from FLAG_VAL_BASE, above every char. */
enum { MAX_FLAGS = 64, FLAG_VAL_BASE = 256, VAL_VERSION = FLAG_VAL_BASE + MAX_FLAGS };

/* The column at which help text starts (the flag column is 2 + 18 + 2 wide). */
#define HELP_COLUMN 22

/* "drover sim" for a sub-command, "drover" for the top level. */
static void cmd_title(const cli_command *cmd, char *buf, size_t n)
{
    if (strcmp(cmd->name, "drover") == 0)
        snprintf(buf, n, "drover");
    else
        snprintf(buf, n, "drover %s", cmd->name);
}

/* "--name", or "-x" for a short-only flag. */
static void flag_title(const cli_flag *f, char *buf, size_t n)
{
    if (f->name)
        snprintf(buf, n, "--%s", f->name);
    else
        snprintf(buf, n, "-%c", f->short_name);
}

static const cli_flag *flag_of_val(const cli_command *cmd, int val)
{
    if (val >= FLAG_VAL_BASE && val < FLAG_VAL_BASE + cmd->nflags)
        return &cmd->flags[val - FLAG_VAL_BASE];
    for (int i = 0; i < cmd->nflags; i++)
        if (cmd->flags[i].short_name && cmd->flags[i].short_name == val)
            return &cmd->flags[i];
    return NULL;
}

/* True when v is one of the '|'-separated choices. */
static bool is_choice(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, v, n) == 0)
            return true;
        p = bar ? bar + 1 : NULL;
    }
    return false;
}

/* "a, b or c" from "a|b|c". */
static void choice_list(const char *choices, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    for (const char *p = choices; p && len < n;) {
        const char *bar = strchr(p, '|');
        size_t w = bar ? (size_t)(bar - p) : strlen(p);
        const char *sep = p == choices ? "" : strchr(p, '|') ? ", " : " or ";
        len += (size_t)snprintf(buf + len, n - len, "%s%.*s", sep, (int)w, p);
        p = bar ? bar + 1 : NULL;
    }
}

/* A range bound as a user writes it: 1000000 rather than 1e+06, 1e-06 when it must. */
static void bound_text(double x, char *buf, size_t n)
{
    if (x == floor(x) && fabs(x) < 1e15)
        snprintf(buf, n, "%.0f", x);
    else
        snprintf(buf, n, "%g", x);
}

/* Converts v for flag f into the field at f->at; 0, or -1 with a message on err. */
static int store(const char *title, const cli_flag *f, const char *v, char *opts, FILE *err)
{
    char name[64], want[160] = "", lo[32], hi[32];
    flag_title(f, name, sizeof name);
    char *end = NULL;
    errno = 0;
    bound_text(f->lo, lo, sizeof lo);
    bound_text(f->hi, hi, sizeof hi);
    switch (f->kind) {
    case FLAG_SWITCH: {
        bool on = true;
        memcpy(opts + f->at, &on, sizeof on);
        return 0;
    }
    case FLAG_TEXT:
        memcpy(opts + f->at, &v, sizeof v);
        return 0;
    case FLAG_CHOICE:
        if (is_choice(f->choices, v)) {
            memcpy(opts + f->at, &v, sizeof v);
            return 0;
        }
        snprintf(want, sizeof want, "expected ");
        choice_list(f->choices, want + 9, sizeof want - 9);
        break;
    case FLAG_UINT64: {
        unsigned long long x = strtoull(v, &end, 10);
        if (v[0] >= '0' && v[0] <= '9' && !*end && !errno) {
            uint64_t u = x;
            memcpy(opts + f->at, &u, sizeof u);
            return 0;
        }
        snprintf(want, sizeof want, "expected a non-negative whole number");
        break;
    }
    case FLAG_NUMBER: {
        double x = strtod(v, &end);
        if (end != v && !*end && x >= f->lo && x <= f->hi) {
            memcpy(opts + f->at, &x, sizeof x);
            return 0;
        }
        snprintf(want, sizeof want, "expected a number from %s to %s", lo, hi);
        break;
    }
    case FLAG_INT: {
        long x = strtol(v, &end, 10);
        if (end != v && !*end && !errno && x >= f->lo && x <= f->hi) {
            int i = (int)x;
            memcpy(opts + f->at, &i, sizeof i);
            return 0;
        }
        snprintf(want, sizeof want, "expected a whole number from %s to %s", lo, hi);
        break;
    }
    }
    fprintf(err, "%s: %s: %s, found '%s'\n", title, name, want, v);
    return -1;
}

/* The long names (flags, help, version) that start with the text of --text[=v]: how many, and
 * them listed into buf. */
static int prefix_matches(const cli_command *cmd, const char *arg, char *buf, size_t n)
{
    const char *text = arg + 2;
    size_t len = strcspn(text, "=");
    int count = 0;
    size_t used = 0;
    buf[0] = 0;
    for (int i = -2; i < cmd->nflags; i++) {
        const char *name = i == -2 ? "help" : i == -1 ? "version" : cmd->flags[i].name;
        if (name && strncmp(name, text, len) == 0) {
            if (used < n)
                used += (size_t)snprintf(buf + used, n - used, "%s--%s", count ? ", " : "", name);
            count++;
        }
    }
    return count;
}

/* The message for getopt_long's '?': an unknown or ambiguous option, or a value given to a
 * switch. */
static void bad_option(const cli_command *cmd, const char *title, const char *arg, FILE *err)
{
    const cli_flag *f = optopt ? flag_of_val(cmd, optopt) : NULL;
    char list[256];
    if (f) {
        char name[64];
        flag_title(f, name, sizeof name);
        fprintf(err, "%s: %s takes no value (see %s --help)\n", title, name, title);
    } else if (optopt == VAL_VERSION || optopt == 'h') {
        fprintf(err, "%s: --%s takes no value\n", title, optopt == 'h' ? "help" : "version");
    } else if (optopt) {
        fprintf(err, "%s: unknown option '-%c' (see %s --help)\n", title, optopt, title);
    } else if (strncmp(arg, "--", 2) == 0 && prefix_matches(cmd, arg, list, sizeof list) > 1) {
        fprintf(err, "%s: ambiguous option '%s' (could be %s)\n", title, arg, list);
    } else {
        fprintf(err, "%s: unknown option '%s' (see %s --help)\n", title, arg, title);
    }
}

/* Builds getopt_long's option array and optstring from the table. */
static void build_options(const cli_command *cmd, struct option *longs, char *shorts)
{
    int nl = 0;
    char *s = shorts;
    if (cmd->stop_at_arg)
        *s++ = '+'; /* stop at the sub-command's name */
    *s++ = ':';     /* report a missing value as ':', not '?' */
    *s++ = 'h';
    for (int i = 0; i < cmd->nflags; i++) {
        const cli_flag *f = &cmd->flags[i];
        int has = f->kind == FLAG_SWITCH ? no_argument : required_argument;
        int val = f->short_name ? f->short_name : FLAG_VAL_BASE + i;
        if (f->name)
            longs[nl++] = (struct option){f->name, has, NULL, val};
        if (f->short_name) {
            *s++ = f->short_name;
            if (has == required_argument)
                *s++ = ':';
        }
    }
    *s = 0;
    longs[nl++] = (struct option){"help", no_argument, NULL, 'h'};
    longs[nl++] = (struct option){"version", no_argument, NULL, VAL_VERSION};
    longs[nl] = (struct option){0};
}

/* Checks the number of arguments left after the flags. */
static enum cli_parse_result check_args(const cli_command *cmd, const char *title, int argc,
                                        char **argv, FILE *err)
{
    int nargs = argc - optind;
    if (nargs < cmd->min_args) {
        fprintf(err, "%s: expected %s (see %s --help)\n", title, cmd->args ? cmd->args : "more",
                title);
        return CLI_USAGE;
    }
    if (!cmd->stop_at_arg && nargs > cmd->max_args) {
        fprintf(err, "%s: unexpected argument '%s' (see %s --help)\n", title,
                argv[optind + cmd->max_args], title);
        return CLI_USAGE;
    }
    return CLI_OK;
}

enum cli_parse_result cli_parse(const cli_command *cmd, int argc, char **argv, void *opts,
                                int *first_arg, FILE *err)
{
    struct option longs[MAX_FLAGS + 3];
    char shorts[4 + 2 * MAX_FLAGS], title[64];
    cmd_title(cmd, title, sizeof title);
    if (cmd->nflags > MAX_FLAGS) {
        fprintf(err, "%s: more than %d flags in the table\n", title, MAX_FLAGS);
        return CLI_USAGE;
    }
    build_options(cmd, longs, shorts);
    bool seen[MAX_FLAGS] = {false};
    optind = 0; /* glibc: 0 starts a fresh scan, forgetting any previous one */
    opterr = 0; /* the messages are ours */
    int c;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        if (c == 'h')
            return CLI_HELP;
        if (c == VAL_VERSION)
            return CLI_VERSION;
        if (c == ':') {
            const cli_flag *f = flag_of_val(cmd, optopt);
            char name[64] = "";
            if (f)
                flag_title(f, name, sizeof name);
            fprintf(err, "%s: %s needs a value (see %s --help)\n", title,
                    f ? name : argv[optind - 1], title);
            return CLI_USAGE;
        }
        const cli_flag *f = c == '?' ? NULL : flag_of_val(cmd, c);
        if (!f) {
            bad_option(cmd, title, argv[optind - 1], err);
            return CLI_USAGE;
        }
        if (seen[f - cmd->flags]) {
            char name[64];
            flag_title(f, name, sizeof name);
            fprintf(err, "%s: %s: given twice (give each flag once)\n", title, name);
            return CLI_USAGE;
        }
        seen[f - cmd->flags] = true;
        if (cmd->track_given) {
            uint64_t given;
            memcpy(&given, (char *)opts + cmd->given_at, sizeof given);
            given |= (uint64_t)1 << (f - cmd->flags);
            memcpy((char *)opts + cmd->given_at, &given, sizeof given);
        }
        if (store(title, f, optarg, opts, err) != 0)
            return CLI_USAGE;
    }
    enum cli_parse_result r = check_args(cmd, title, argc, argv, err);
    *first_arg = optind;
    return r;
}

bool cli_given(const cli_command *cmd, const void *opts, const char *name)
{
    uint64_t given;
    if (!cmd->track_given)
        return false;
    memcpy(&given, (const char *)opts + cmd->given_at, sizeof given);
    for (int i = 0; i < cmd->nflags; i++)
        if (cmd->flags[i].name && strcmp(cmd->flags[i].name, name) == 0)
            return (given >> i) & 1;
    return false;
}

/* One row of the flag table: the flag column, then the help text, continued at HELP_COLUMN. */
static void help_row(FILE *out, char short_name, const char *name, const char *arg,
                     const char *help)
{
    char left[96];
    int n = snprintf(left, sizeof left, "%s%s%s%s%s%s%s", short_name ? "-" : "",
                     short_name ? (char[2]){short_name, 0} : "", short_name && name ? ", " : "",
                     name ? "--" : "", name ? name : "", arg ? " " : "", arg ? arg : "");
    fprintf(out, "  %s", left);
    if (n > HELP_COLUMN - 4)
        fprintf(out, "\n%*s", HELP_COLUMN, "");
    else
        fprintf(out, "%*s", HELP_COLUMN - 2 - n, "");
    for (const char *p = help; *p;) {
        size_t len = strcspn(p, "\n");
        fprintf(out, "%.*s\n", (int)len, p);
        p += len;
        if (*p == '\n' && *++p)
            fprintf(out, "%*s", HELP_COLUMN, "");
    }
}

void cli_help(const cli_command *cmd, FILE *out)
{
    bool top = strcmp(cmd->name, "drover") == 0;
    fprintf(out, "usage: drover%s%s%s%s%s\n", top ? "" : " ", top ? "" : cmd->name,
            cmd->nflags > 0 ? " [options]" : "", cmd->args ? " " : "", cmd->args ? cmd->args : "");
    if (cmd->about)
        fprintf(out, "\n%s", cmd->about);
    fputs("\noptions:\n", out);
    for (int i = 0; i < cmd->nflags; i++) {
        const cli_flag *f = &cmd->flags[i];
        help_row(out, f->short_name, f->name, f->kind == FLAG_SWITCH ? NULL : f->arg,
                 f->help ? f->help : "");
    }
    help_row(out, 'h', "help", NULL, "show this help");
    help_row(out, 0, "version", NULL, "print the version");
    if (cmd->footer)
        fprintf(out, "\n%s", cmd->footer);
}
