/*
 * text.h - what every reader of a text input shares: the one rule for names and the one parser
 * for decimal numbers (docs/formats.md, "Names" and "Numbers"). Dates are in clock.h
 * (drv_time_parse_utc), bounded reads in file.h.
 *
 * Why one of each: a name is written back unquoted into CSV files, gnuplot scripts and file
 * names (jobs-<policy>.csv), so a comma, a quote, a newline or a '/' in one breaks an output or
 * reaches another file; and readers that each called strtod differently accepted "0x10", " 2"
 * or "inf" in one format and refused them in the next.
 */
#ifndef DROVER_TEXT_H
#define DROVER_TEXT_H

#include "drover/base.h"

/*
 * The name rule: 1 to max bytes, each an ASCII letter, digit, '-', '_' or '.'. Names of jobs,
 * users, queues, cohorts, nodes, zones, racks, model families and policy profiles follow it
 * wherever they are read; a name that breaks it is refused (never cut or changed), so two names
 * never become one. Kubernetes object names (DNS-1123) are a subset of it.
 */
bool drv_name_ok(const char *s, size_t max);
/* "WHERE: expected a name of 1 to MAX letters, digits, '-', '_' or '.', found 'S'" into d,
 * with S shown escaped (a control byte as \xNN) and cut at 64 bytes; returns DRV_EINVAL. */
int drv_name_fail(drv_diag *d, const char *where, const char *s, size_t max);
/* Both: 0 when s is a name of at most max bytes, else drv_name_fail. */
int drv_name_check(drv_diag *d, const char *where, const char *s, size_t max);

/* Writes s into buf (n bytes) for a message: printable ASCII as is, anything else as \xNN, at
 * most about 64 bytes of s (then "..."). Returns buf. */
const char *drv_text_shown(char *buf, size_t n, const char *s);

/* The next line of text at *cursor (NUL-terminated in place, without its '\n'; a final '\r'
 * is left to the caller), advancing *cursor past it; NULL at the end. Blank lines are returned
 * too (strtok would skip them), so a reader that counts the lines it is handed names each line
 * as an editor numbers it. */
char *drv_next_line(char **cursor);

/*
 * A decimal number, the whole of s: an optional sign, digits with an optional fraction (at
 * least one digit in all), an optional exponent (e or E, an optional sign, digits). No space,
 * no hexadecimal ("0x10"), no "inf" or "nan". 0 with *out set; DRV_EPARSE when s is not of
 * that form; DRV_ERANGE when it is but its value is not a finite double, or so small it loses
 * precision (a subnormal such as 1e-320; 0 itself is fine). *out is untouched on failure.
 */
int drv_parse_decimal(const char *s, double *out);

#endif
