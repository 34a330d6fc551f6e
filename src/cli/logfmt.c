/*
 * logfmt.c - timestamped text or JSON log lines for `drover run` and `drover emulate`
 * (logfmt.h). The format is chosen once, at start-up, before any thread logs; the sink itself
 * is called under the core's log lock (base.c), so lines never interleave.
 */
#include "logfmt.h"

#include "drover/base.h"
#include "drover/clock.h"

#include <stdarg.h>
#include <string.h>

static bool json;             /* --log-format json */
static const char *component; /* "run", "emulate" */

/* msg as the body of a JSON string: quotes, backslashes and control characters escaped. */
static void json_text(FILE *f, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
}

void cli_log_write(FILE *f, const char *level, const char *msg)
{
    char ts[40];
    drv_time_rfc3339(ts, sizeof ts, drv_clock_wall(), true);
    if (json) {
        fprintf(f, "{\"ts\":\"%s\",\"level\":\"%s\",\"component\":\"%s\",\"msg\":\"", ts, level,
                component ? component : "drover");
        json_text(f, msg);
        fputs("\"}\n", f);
    } else {
        fprintf(f, "%s %s drover %s: %s\n", ts, level, component ? component : "", msg);
    }
    fflush(f);
}

static void sink(enum drv_log_level lvl, const char *msg, void *arg)
{
    static const char *const level[] = {"error", "warning", "info", "debug"};
    (void)arg;
    cli_log_write(stderr, level[lvl], msg);
}

void cli_log_setup(const char *format, bool verbose, const char *comp)
{
    json = format && strcmp(format, "json") == 0;
    component = comp;
    drv_log_set(sink, NULL, verbose ? DRV_LOG_INFO : DRV_LOG_WARN);
}

void cli_say(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cli_log_write(stderr, "info", msg);
}
