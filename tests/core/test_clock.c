/*
 * RFC 3339 formatting and parsing: known instants written by hand, round trips (format then
 * parse gives the same time, to the microsecond), offsets, and input that must be refused.
 * No assertion reads the clocks' values except for their order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <cmocka.h>

#include "drover/base.h"
#include "drover/clock.h"

static void test_format_known_instants(void **unused)
{
    (void)unused;
    char buf[DRV_RFC3339_LEN];
    drv_time_rfc3339(buf, sizeof buf, 0, false);
    assert_string_equal(buf, "1970-01-01T00:00:00Z");
    drv_time_rfc3339(buf, sizeof buf, 951782400.75, false); /* 2000-02-29, a leap day */
    assert_string_equal(buf, "2000-02-29T00:00:00Z");
    drv_time_rfc3339(buf, sizeof buf, 1709294405.25, true);
    assert_string_equal(buf, "2024-03-01T12:00:05.250000Z");
    drv_time_rfc3339(buf, sizeof buf, 1709294405.9999997, true); /* rounds into the next second */
    assert_string_equal(buf, "2024-03-01T12:00:06.000000Z");
    drv_time_rfc3339(buf, sizeof buf, 1709294405.000250, true);
    assert_string_equal(buf, "2024-03-01T12:00:05.000250Z");
    drv_time_rfc3339(buf, sizeof buf, -1.5, false); /* before the epoch: rounded down */
    assert_string_equal(buf, "1969-12-31T23:59:58Z");
    char small[8];
    drv_time_rfc3339(small, sizeof small, 0, false); /* does not fit: empty, not cut */
    assert_string_equal(small, "");
}

static void test_parse_known_instants(void **unused)
{
    (void)unused;
    double t = -1;
    assert_int_equal(drv_time_parse_rfc3339("1970-01-01T00:00:00Z", &t), 0);
    assert_true(t == 0);
    assert_int_equal(drv_time_parse_rfc3339("2000-03-01T00:00:00Z", &t), 0);
    assert_true(t == 11017.0 * 86400);
    assert_int_equal(drv_time_parse_rfc3339("2024-03-01T12:00:05.25Z", &t), 0);
    assert_true(t == 1709294405.25);
    assert_int_equal(drv_time_parse_rfc3339("2024-03-01t14:30:05+02:30", &t), 0);
    assert_true(t == 1709294405);
    assert_int_equal(drv_time_parse_rfc3339("2024-03-01T11:00:05-01:00", &t), 0);
    assert_true(t == 1709294405);
    assert_int_equal(drv_time_parse_rfc3339("1969-12-31T23:59:59z", &t), 0);
    assert_true(t == -1);
}

static void test_parse_refuses(void **unused)
{
    (void)unused;
    static const char *bad[] = {
        "",
        "2024-03-01",
        "2024-03-01T12:00:05",      /* no zone */
        "2024-03-01 12:00:05Z",     /* a space for the T */
        "2024-13-01T12:00:05Z",     /* month 13 */
        "2023-02-29T12:00:05Z",     /* not a leap year */
        "2024-03-01T24:00:00Z",     /* hour 24 */
        "2024-03-01T12:60:00Z",     /* minute 60 */
        "2024-03-01T12:00:05.Z",    /* a dot without digits */
        "2024-03-01T12:00:05Zjunk", /* trailing text */
        "2024-03-01T12:00:05+0200", /* offset without a colon */
        "24-03-01T12:00:05Z",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        double t = 123;
        assert_int_equal(drv_time_parse_rfc3339(bad[i], &t), DRV_EPARSE);
        assert_true(t == 123); /* untouched */
    }
    double t = 123;
    assert_int_equal(drv_time_parse_rfc3339(NULL, &t), DRV_EPARSE);
    assert_int_equal(drv_time_parse_rfc3339("2024-02-29T23:59:60Z", &t), 0); /* leap second */
}

/* The traces' "YYYY-MM-DD HH:MM:SS" (UTC): the same calendar as RFC 3339, so the same instant;
 * dates not in the calendar, a sign, a space or a missing digit are refused (sscanf took
 * 2017-02-31 and an hour of -1). */
static void test_parse_utc(void **unused)
{
    (void)unused;
    double t = -1, r = -2;
    assert_int_equal(drv_time_parse_utc("2024-03-01 12:00:05", &t), 0);
    assert_int_equal(drv_time_parse_rfc3339("2024-03-01T12:00:05Z", &r), 0);
    assert_true(t == r && t == 1709294405);
    assert_int_equal(drv_time_parse_utc("2020-02-29 00:00:00", &t), 0); /* a leap day */
    assert_true(t == 18321.0 * 86400);
    static const char *bad[] = {"2017-02-31 00:00:00", /* no 31st in February */
                                "2019-02-29 00:00:00", /* not a leap year */
                                "2017-04-31 10:00:00",
                                "2017-13-01 00:00:00",
                                "2017-00-10 00:00:00",
                                "2017-01-00 00:00:00",
                                "2017-01-01 -1:00:00", /* a negative hour */
                                "2017-01-01 24:00:00",
                                "2017-01-01 23:60:00",
                                "2017-01-01 1:00:00",
                                "2017-1-01 01:00:00",
                                " 2017-01-01 01:00:00",
                                "2017-01-01 01:00:00 ",
                                "2017-01-01T01:00:00",
                                "2017-01-01 01:00:00Z",
                                "+017-01-01 01:00:00",
                                "2017-01-01",
                                ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        t = 123;
        if (drv_time_parse_utc(bad[i], &t) != DRV_EPARSE || t != 123)
            fail_msg("'%s' was not refused", bad[i]);
    }
    assert_int_equal(drv_time_parse_utc(NULL, &t), DRV_EPARSE);
}

/* Format then parse, over two centuries of pseudo-random instants with fractions. */
static void test_round_trip(void **unused)
{
    (void)unused;
    drv_rng r;
    drv_rng_seed(&r, 7);
    char buf[DRV_RFC3339_LEN];
    for (int i = 0; i < 20000; i++) {
        double whole = (double)drv_rng_range(&r, -2208988800LL, 4102444800LL); /* 1900..2100 */
        double us = (double)drv_rng_range(&r, 0, 999999);
        double t = whole + us / 1e6, back = 0;
        drv_time_rfc3339(buf, sizeof buf, t, true);
        assert_int_equal(drv_time_parse_rfc3339(buf, &back), 0);
        assert_true(fabs(back - t) < 1e-6);
        drv_time_rfc3339(buf, sizeof buf, t, false);
        assert_int_equal(drv_time_parse_rfc3339(buf, &back), 0);
        assert_true(back == whole);
    }
}

static void test_clocks_move_forward(void **unused)
{
    (void)unused;
    double a = drv_clock_mono(), b = drv_clock_mono();
    assert_true(b >= a);
    assert_true(drv_clock_wall() > 1.5e9); /* after 2017: the wall clock is the epoch's */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_format_known_instants),
                                       cmocka_unit_test(test_parse_known_instants),
                                       cmocka_unit_test(test_parse_refuses),
                                       cmocka_unit_test(test_parse_utc),
                                       cmocka_unit_test(test_round_trip),
                                       cmocka_unit_test(test_clocks_move_forward)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
