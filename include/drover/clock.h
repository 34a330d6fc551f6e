/*
 * clock.h - the two clocks Drover reads and RFC 3339 time stamps, in one place.
 *
 * Times are seconds in a double: the monotonic clock for intervals and deadlines (never jumps,
 * its zero is arbitrary), the wall clock (seconds since 1970-01-01 UTC) for what is written to
 * the Kubernetes API. A double holds today's wall time to about 0.24 us, enough for the
 * microsecond stamps of metav1.MicroTime.
 *
 * Policies never read these: they read the snapshot's time (determinism: docs/cycle.md). The
 * controller, the emulator, the work queue and the command line do.
 */
#ifndef DROVER_CLOCK_H
#define DROVER_CLOCK_H

#include <stdbool.h>
#include <stddef.h>

/* Seconds on CLOCK_MONOTONIC. */
double drv_clock_mono(void);
/* Seconds since the Unix epoch on CLOCK_REALTIME. */
double drv_clock_wall(void);

/* Bytes "2006-01-02T15:04:05.000000Z" needs, with its NUL. */
#define DRV_RFC3339_LEN 28

/*
 * Writes wall_seconds as RFC 3339 UTC ending in 'Z' into buf (n bytes, truncated to fit):
 * whole seconds ("2024-03-01T12:00:05Z", metav1.Time, rounded down) or, with micro,
 * microseconds ("2024-03-01T12:00:05.250000Z", metav1.MicroTime, rounded to nearest).
 */
void drv_time_rfc3339(char *buf, size_t n, double wall_seconds, bool micro);
/*
 * Parses an RFC 3339 time ("YYYY-MM-DDTHH:MM:SS", optional fraction, then 'Z' or +HH:MM or
 * -HH:MM; 't'/'z' accepted too) into seconds since the epoch. 0, or DRV_EPARSE (NULL, a field
 * out of range, trailing text) with *out untouched.
 */
int drv_time_parse_rfc3339(const char *s, double *out);
/*
 * Parses "YYYY-MM-DD HH:MM:SS" (UTC, the form of the published job traces: exactly these 19
 * characters, no fraction, no zone) into seconds since the epoch. A date that is not in the
 * calendar (2017-02-31, 2019-02-29), an hour above 23, a sign or a space inside are DRV_EPARSE,
 * *out untouched. The one date parser of every trace reader (docs/data.md).
 */
int drv_time_parse_utc(const char *s, double *out);

#endif
