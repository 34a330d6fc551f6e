/*
 * The drover command's flag parser (src/cli/flags.c): both GNU spellings of a value, every value
 * kind and its range, one-line usage errors that name the flag, -h/--help/--version from every
 * table, argument counts, and help generated from the table it parses with.
 */
#include "flags.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

typedef struct opts {
    const char *file, *format;
    bool check, verbose;
    uint64_t seed, given;
    double speed;
    int burst;
} opts;

#define AT(field) .at = offsetof(opts, field)
static const cli_flag flags[] = {
    {.name = "file", .kind = FLAG_TEXT, AT(file), .arg = "FILE", .help = "a file"},
    {.name = "format",
     .kind = FLAG_CHOICE,
     AT(format),
     .arg = "FMT",
     .choices = "table|json|csv",
     .help = "table, json or csv"},
    {.name = "check", .kind = FLAG_SWITCH, AT(check), .help = "check\nsecond line"},
    {.name = "verbose", .short_name = 'v', .kind = FLAG_SWITCH, AT(verbose), .help = "say more"},
    {.name = "seed", .kind = FLAG_UINT64, AT(seed), .arg = "N", .help = "seed"},
    {.name = "speed",
     .kind = FLAG_NUMBER,
     AT(speed),
     .arg = "X",
     .lo = 0.5,
     .hi = 1e6,
     .help = "speed"},
    {.name = "burst",
     .short_name = 'b',
     .kind = FLAG_INT,
     AT(burst),
     .arg = "B",
     .lo = 1,
     .hi = 1000,
     .help = "burst"},
    {.name = "a-flag-with-a-long-name",
     .kind = FLAG_TEXT,
     AT(file),
     .arg = "VALUE",
     .help = "its help starts on the next line"},
};
#undef AT

static const cli_command cmd = {
    .name = "test",
    .args = "DIR",
    .max_args = 1,
    .about = "About the test command.\n",
    .footer = "The footer.\n",
    .flags = flags,
    .nflags = (int)(sizeof flags / sizeof flags[0]),
};

/* The parse of a NULL-terminated argument list; messages into err (a buffer). */
typedef struct run {
    enum cli_parse_result r;
    opts o;
    int first, argc;
    char *argv[16];
    char err[1024];
} run;

static void parse(run *x, ...)
{
    memset(x, 0, sizeof *x);
    x->o.seed = 7;
    x->argv[x->argc++] = "test";
    va_list ap;
    va_start(ap, x);
    for (char *a; (a = va_arg(ap, char *)) != NULL;)
        x->argv[x->argc++] = a;
    va_end(ap);
    FILE *err = fmemopen(x->err, sizeof x->err - 1, "w");
    assert_non_null(err);
    x->r = cli_parse(&cmd, x->argc, x->argv, &x->o, &x->first, err);
    fclose(err);
}

/* Exactly one line on err, and it contains want. */
static void assert_one_line(const run *x, const char *want)
{
    assert_non_null(strstr(x->err, want));
    const char *nl = strchr(x->err, '\n');
    assert_non_null(nl);
    assert_int_equal(nl[1], 0);
}

static void test_both_spellings(void **unused)
{
    (void)unused;
    run x;
    parse(&x, "--file", "a.yaml", "--format=json", "--seed=12", "--speed", "2.5", "-b", "9", NULL);
    assert_int_equal(x.r, CLI_OK);
    assert_string_equal(x.o.file, "a.yaml");
    assert_string_equal(x.o.format, "json");
    assert_int_equal(x.o.seed, 12);
    assert_true(x.o.speed == 2.5);
    assert_int_equal(x.o.burst, 9);
    assert_false(x.o.check);
    assert_string_equal(x.err, "");
    /* A unique prefix is the flag (GNU); -vb5 is -v and -b 5. */
    parse(&x, "--che", "-vb5", NULL);
    assert_int_equal(x.r, CLI_OK);
    assert_true(x.o.check && x.o.verbose);
    assert_int_equal(x.o.burst, 5);
    /* Fields of flags not given keep the caller's defaults. */
    assert_int_equal(x.o.seed, 7);
    /* The largest seed fits. */
    parse(&x, "--seed", "18446744073709551615", NULL);
    assert_int_equal(x.r, CLI_OK);
    assert_true(x.o.seed == UINT64_MAX);
}

static void test_arguments(void **unused)
{
    (void)unused;
    run x;
    /* Arguments may come before flags (GNU permutes them); `--` ends the flags. */
    parse(&x, "out", "--check", NULL);
    assert_int_equal(x.r, CLI_OK);
    assert_true(x.o.check);
    assert_string_equal(x.argv[x.first], "out");
    assert_int_equal(x.argc - x.first, 1);
    parse(&x, "--", "--check", NULL);
    assert_int_equal(x.r, CLI_OK);
    assert_false(x.o.check);
    assert_string_equal(x.argv[x.first], "--check");
    parse(&x, "one", "two", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    assert_one_line(&x, "drover test: unexpected argument 'two'");
}

static void test_usage_errors_name_the_flag(void **unused)
{
    (void)unused;
    run x;
    parse(&x, "--nope", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    assert_one_line(&x, "drover test: unknown option '--nope'");
    parse(&x, "-q", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    assert_one_line(&x, "unknown option '-q'");
    parse(&x, "--seed", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    assert_one_line(&x, "--seed needs a value");
    parse(&x, "-b", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    assert_one_line(&x, "--burst needs a value");
    parse(&x, "--check=yes", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    assert_one_line(&x, "--check takes no value");
    parse(&x, "--f", "x", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    assert_one_line(&x, "ambiguous option '--f' (could be --file, --format)");
}

/* A flag given twice is refused, whatever its spelling (long, short, prefix, =VALUE); two
 * different flags that fill one field are not the same flag. */
static void test_flag_twice_is_refused(void **unused)
{
    (void)unused;
    run x;
    parse(&x, "--seed", "1", "--seed=2", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    assert_one_line(&x, "drover test: --seed: given twice (give each flag once)");
    parse(&x, "-v", "--verb", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    assert_one_line(&x, "--verbose: given twice");
    parse(&x, "-b", "3", "-b4", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    assert_one_line(&x, "--burst: given twice");
    parse(&x, "--check", "--check", NULL);
    assert_int_equal(x.r, CLI_USAGE);
    parse(&x, "--file", "a", "--a-flag-with-a-long-name", "b", NULL);
    assert_int_equal(x.r, CLI_OK);
    assert_string_equal(x.o.file, "b");
}

/* A command that tracks its flags says which were given: a value equal to the default given on
 * the command line is given, a default is not. */
static void test_given(void **unused)
{
    (void)unused;
    cli_command tracked = cmd;
    tracked.track_given = true;
    tracked.given_at = offsetof(opts, given);
    char *argv[] = {"test", "--seed", "7", "-v", NULL};
    opts o = {.seed = 7};
    int first;
    assert_int_equal(cli_parse(&tracked, 4, argv, &o, &first, stderr), CLI_OK);
    assert_true(cli_given(&tracked, &o, "seed"));
    assert_true(cli_given(&tracked, &o, "verbose"));
    assert_false(cli_given(&tracked, &o, "check"));
    assert_false(cli_given(&tracked, &o, "nope"));
    assert_false(cli_given(&cmd, &o, "seed")); /* a command that does not track: never */
}

static void test_values_are_checked(void **unused)
{
    (void)unused;
    static const struct {
        const char *flag, *value, *want;
    } bad[] = {
        {"--format", "xml", "--format: expected table, json or csv, found 'xml'"},
        {"--format", "", "expected table, json or csv, found ''"},
        {"--seed", "-4", "--seed: expected a non-negative whole number, found '-4'"},
        {"--seed", "3x", "found '3x'"},
        {"--seed", " 3", "found ' 3'"},
        {"--seed", "18446744073709551616", "non-negative whole number"},
        {"--speed", "0.25", "--speed: expected a number from 0.5 to 1000000, found '0.25'"},
        {"--speed", "nan", "expected a number from 0.5"},
        {"--speed", "", "expected a number from 0.5"},
        {"--burst", "1.5", "--burst: expected a whole number from 1 to 1000, found '1.5'"},
        {"--burst", "1001", "expected a whole number from 1 to 1000"},
        {"--burst", "0", "expected a whole number from 1 to 1000"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run x;
        parse(&x, bad[i].flag, bad[i].value, NULL);
        assert_int_equal(x.r, CLI_USAGE);
        assert_one_line(&x, bad[i].want);
    }
    /* The ends of a range are in it. */
    run x;
    parse(&x, "--speed", "0.5", "--burst", "1000", NULL);
    assert_int_equal(x.r, CLI_OK);
    assert_true(x.o.speed == 0.5);
    assert_int_equal(x.o.burst, 1000);
}

static void test_help_and_version(void **unused)
{
    (void)unused;
    run x;
    parse(&x, "--seed", "3", "-h", NULL);
    assert_int_equal(x.r, CLI_HELP);
    parse(&x, "--help", NULL);
    assert_int_equal(x.r, CLI_HELP);
    parse(&x, "--he", NULL);
    assert_int_equal(x.r, CLI_HELP);
    parse(&x, "--version", NULL);
    assert_int_equal(x.r, CLI_VERSION);
    assert_string_equal(x.err, "");
    /* The parser prints no help: the command decides what to do with CLI_HELP. */
    parse(&x, "--help", NULL);
    assert_string_equal(x.err, "");
}

/* The top level stops at the sub-command; the sub-command's flags are left alone. */
static void test_stop_at_argument(void **unused)
{
    (void)unused;
    static const cli_command top = {.name = "drover", .min_args = 1, .stop_at_arg = true};
    char *argv[] = {"drover", "sim", "--seed", "3", NULL};
    int first = -1;
    assert_int_equal(cli_parse(&top, 4, argv, NULL, &first, stderr), CLI_OK);
    assert_int_equal(first, 1);
    assert_string_equal(argv[2], "--seed");
    /* A second parse in the same process starts afresh. */
    run x;
    parse(&x, "--seed", "4", NULL);
    assert_int_equal(x.r, CLI_OK);
    assert_int_equal(x.o.seed, 4);
    char *none[] = {"drover", NULL};
    FILE *err = tmpfile();
    assert_non_null(err);
    assert_int_equal(cli_parse(&top, 1, none, NULL, &first, err), CLI_USAGE);
    fclose(err);
}

static void test_help_is_the_table(void **unused)
{
    (void)unused;
    char buf[8192] = "";
    FILE *out = fmemopen(buf, sizeof buf - 1, "w");
    assert_non_null(out);
    cli_help(&cmd, out);
    fclose(out);
    assert_non_null(strstr(buf, "usage: drover test [options] DIR\n\nAbout the test command.\n"));
    assert_non_null(strstr(buf, "\nThe footer.\n"));
    /* Every flag of the table, with its value's name, help at column 22. */
    assert_non_null(strstr(buf, "\n  --file FILE         a file\n"));
    assert_non_null(strstr(buf, "\n  -v, --verbose       say more\n"));
    assert_non_null(strstr(buf, "\n  -b, --burst B       burst\n"));
    assert_non_null(
        strstr(buf, "\n  --check             check\n                      second line\n"));
    assert_non_null(
        strstr(buf, "\n  --a-flag-with-a-long-name VALUE\n                      its help"));
    assert_non_null(strstr(buf, "\n  -h, --help          show this help\n"));
    assert_non_null(strstr(buf, "\n  --version           print the version\n"));
    for (int i = 0; i < cmd.nflags; i++) {
        char want[80];
        snprintf(want, sizeof want, "--%s", flags[i].name);
        assert_non_null(strstr(buf, want));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_spellings),
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_usage_errors_name_the_flag),
        cmocka_unit_test(test_values_are_checked),
        cmocka_unit_test(test_flag_twice_is_refused),
        cmocka_unit_test(test_given),
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_stop_at_argument),
        cmocka_unit_test(test_help_is_the_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
