/*
 * The name rule, the decimal number parser and the line splitter every input reader shares
 * (text.h): what each accepts and refuses, written out by hand from docs/formats.md ("Names",
 * "Numbers"), and the message a refused name gets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <string.h>
#include <cmocka.h>

#include "drover/text.h"

static void test_names(void **unused)
{
    (void)unused;
    static const char *const good[] = {"a",  "job-1", "resnet50_v2.b", "APPLICATION_1_0001", "0",
                                       "-x", ".",     "a.b.c"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_true(drv_name_ok(good[i], 63));
    /* a comma, quote, newline or space breaks a CSV cell; '/' and '\\' a file name */
    static const char *const bad[] = {"",     "a,b",  "a\"b", "a'b",         "a\nb", "a b", "../x",
                                      "a\\b", "a\tb", "a<b",  "caf\xc3\xa9", "a\rb", "x;y"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (drv_name_ok(bad[i], 63))
            fail_msg("'%s' passed", bad[i]);
    /* the length: max bytes and not one more */
    char s[80];
    memset(s, 'n', sizeof s);
    s[63] = 0;
    assert_true(drv_name_ok(s, 63));
    s[63] = 'n';
    s[64] = 0;
    assert_false(drv_name_ok(s, 63));
    assert_false(drv_name_ok(NULL, 63));
}

static void test_name_message(void **unused)
{
    (void)unused;
    drv_diag d = {{0}};
    assert_int_equal(drv_name_check(&d, "w.yaml:3: jobs[0].name", "ok", 63), 0);
    assert_int_equal(drv_name_check(&d, "w.yaml:3: jobs[0].name", "a\nb", 63), DRV_EINVAL);
    assert_string_equal(d.msg, "w.yaml:3: jobs[0].name: expected a name of 1 to 63 letters, "
                               "digits, '-', '_' or '.', found 'a\\x0ab'");
    /* a long value is cut in the message, and said to be */
    char s[200];
    memset(s, 'x', sizeof s);
    s[199] = 0;
    drv_name_fail(&d, "f", s, 63);
    assert_non_null(strstr(d.msg, "xxx...'"));
    assert_true(strlen(d.msg) < 200);
}

static void test_decimal(void **unused)
{
    (void)unused;
    static const struct {
        const char *s;
        double v;
    } good[] = {{"0", 0},       {"2", 2},      {"-5", -5},    {"+7", 7},
                {"2.5", 2.5},   {"1.", 1},     {".5", 0.5},   {"2.5e3", 2500},
                {"1E-2", 0.01}, {"1e+2", 100}, {"0e-400", 0}, {"1e300", 1e300}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        double v = -1;
        if (drv_parse_decimal(good[i].s, &v) != 0 || v != good[i].v)
            fail_msg("'%s' gave %g", good[i].s, v);
    }
    static const char *const bad[] = {"",    " 2",  "2 ",   "0x10", "inf", "nan", "1e",    "e5",
                                      "--1", "+-1", "1..2", ".",    "-",   "1,5", "1e5.5", "１"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double v = 42;
        if (drv_parse_decimal(bad[i], &v) != DRV_EPARSE || v != 42)
            fail_msg("'%s' was not refused as malformed", bad[i]);
    }
    /* well formed but no finite double, or a subnormal that lost its precision */
    static const char *const range[] = {"1e400", "-1e400", "1e-320"};
    for (size_t i = 0; i < sizeof range / sizeof range[0]; i++) {
        double v = 42;
        if (drv_parse_decimal(range[i], &v) != DRV_ERANGE || v != 42)
            fail_msg("'%s' was not refused as out of range", range[i]);
    }
}

static void test_next_line(void **unused)
{
    (void)unused;
    char text[] = "a\n\nb,c\r\n\nlast";
    const char *want[] = {"a", "", "b,c\r", "", "last"};
    char *at = text, *line;
    size_t n = 0;
    while ((line = drv_next_line(&at)) != NULL) {
        assert_true(n < 5);
        assert_string_equal(line, want[n++]);
    }
    assert_int_equal(n, 5); /* blank lines are lines: numbers stay an editor's */
    char empty[] = "";
    at = empty;
    assert_null(drv_next_line(&at));
    char one[] = "x\n";
    at = one;
    assert_string_equal(drv_next_line(&at), "x");
    assert_null(drv_next_line(&at));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_name_message),
        cmocka_unit_test(test_decimal),
        cmocka_unit_test(test_next_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
