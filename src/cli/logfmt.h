/*
 * logfmt.h - how the long-running commands (`drover run`, `drover emulate`) write their log:
 * every line with an RFC 3339 timestamp, as text or as one JSON object a line
 * (--log-format text|json), so a cluster's log collector can parse it.
 *
 *   text  2026-11-24T05:44:01.123456Z warning drover run: POST ...: 409 Conflict ...
 *   json  {"ts":"2026-11-24T05:44:01.123456Z","level":"warning","component":"run",
 *          "msg":"POST ...: 409 Conflict ..."}
 */
#ifndef DROVER_CLI_LOGFMT_H
#define DROVER_CLI_LOGFMT_H

#include <stdbool.h>
#include <stdio.h>

#define CLI_LOG_FORMATS "text|json"

/* Sends drv_log's messages (warnings, and information too when verbose) to stderr in format
 * ("text" or "json"), tagged with component ("run", "emulate"; a literal). */
void cli_log_setup(const char *format, bool verbose, const char *component);

/* A line the command always shows (start-up, the stop summary), in the same format, at level
 * "info" whatever the verbosity. */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes one line for level and msg to f in the set-up format (exposed for tests). */
void cli_log_write(FILE *f, const char *level, const char *msg);

#endif
