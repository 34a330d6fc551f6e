/*
 * clock.c - monotonic and wall clocks, RFC 3339 formatting and parsing (clock.h).
 *
 * Calendar arithmetic is done here rather than with timegm (a GNU/BSD extension): days since
 * the epoch from a proleptic Gregorian date, counting 400-year eras of 146097 days, then
 * 100- and 4-year cycles inside the era. Example: 2000-03-01 is day 11017.
 */
#include "drover/clock.h"
#include "drover/base.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double drv_clock_mono(void)
{
    return read_clock(CLOCK_MONOTONIC);
}

double drv_clock_wall(void)
{
    return read_clock(CLOCK_REALTIME);
}

void drv_time_rfc3339(char *buf, size_t n, double wall_seconds, bool micro)
{
    if (!buf || n == 0)
        return;
    /* Microseconds first, so that rounding x.9999996 carries into the seconds. */
    int64_t secs, us = 0;
    if (micro) {
        int64_t total = (int64_t)llround(wall_seconds * 1e6);
        secs = total / 1000000;
        us = total % 1000000;
        if (us < 0) {
            us += 1000000;
            secs--;
        }
    } else {
        secs = (int64_t)floor(wall_seconds);
    }
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        buf[0] = 0;
        return;
    }
    size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
    if (k == 0) { /* did not fit */
        buf[0] = 0;
        return;
    }
    if (micro)
        snprintf(buf + k, n - k, ".%06dZ", (int)us);
    else
        snprintf(buf + k, n - k, "Z");
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (any y in int range). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                   /* [0, 399] */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] from March */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

static bool leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Reads exactly w decimal digits at *s into *v; advances *s. */
static bool digits(const char **s, int w, int *v)
{
    int x = 0;
    for (int i = 0; i < w; i++) {
        char c = (*s)[i];
        if (c < '0' || c > '9')
            return false;
        x = x * 10 + (c - '0');
    }
    *s += w;
    *v = x;
    return true;
}

static bool expect(const char **s, char c1, char c2)
{
    if (**s != c1 && **s != c2)
        return false;
    (*s)++;
    return true;
}

/* "YYYY-MM-DD" t "HH:MM:SS" at *s (t one of sep1, sep2), checked as a calendar date (2017-02-31
 * and hour 24 are refused; second 60 is a leap second, counted as the next second's start):
 * seconds since the epoch in *t; *s advanced past it. */
static bool civil(const char **s, char sep1, char sep2, int64_t *t)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, sec;
    if (!digits(s, 4, &y) || !expect(s, '-', '-') || !digits(s, 2, &mo) || !expect(s, '-', '-') ||
        !digits(s, 2, &d) || !expect(s, sep1, sep2) || !digits(s, 2, &h) || !expect(s, ':', ':') ||
        !digits(s, 2, &mi) || !expect(s, ':', ':') || !digits(s, 2, &sec))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(y)) || h > 23 ||
        mi > 59 || sec > 60)
        return false;
    *t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
    return true;
}

int drv_time_parse_utc(const char *s, double *out)
{
    int64_t t;
    if (!s || !civil(&s, ' ', ' ', &t) || *s)
        return DRV_EPARSE;
    *out = (double)t;
    return 0;
}

int drv_time_parse_rfc3339(const char *s, double *out)
{
    int64_t t;
    if (!s || !civil(&s, 'T', 't', &t))
        return DRV_EPARSE;
    double frac = 0;
    if (*s == '.') {
        s++;
        double scale = 0.1;
        int nd = 0;
        for (; *s >= '0' && *s <= '9'; s++, nd++, scale /= 10)
            frac += (*s - '0') * scale;
        if (nd == 0)
            return DRV_EPARSE;
    }
    int off = 0; /* seconds east of UTC */
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int sign = *s++ == '-' ? -1 : 1, oh, om;
        if (!digits(&s, 2, &oh) || !expect(&s, ':', ':') || !digits(&s, 2, &om) || oh > 23 ||
            om > 59)
            return DRV_EPARSE;
        off = sign * (oh * 3600 + om * 60);
    } else {
        return DRV_EPARSE;
    }
    if (*s)
        return DRV_EPARSE;
    *out = (double)(t - off) + frac;
    return 0;
}
