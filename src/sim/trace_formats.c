/*
 * trace_formats.c - the trace formats added after trace.c's three: their names, how `auto`
 * recognises them, and the dispatch to each reader (trace_read.h). trace.c hands a text over
 * when trace_ext_format_of says it is one of these.
 *
 * Recognition (first line): '[' -> philly-log (JSON); seven tab-separated fields ending in three
 * numbers -> gavel; a comma-separated header holding every column of the helios, pai-task or
 * pai-job mapping, in that order -> that format. The PAI tables as published have no header
 * line: name them with --trace-format.
 */
#include "trace_read.h"

#include <ctype.h>
#include <string.h>

static const char *const ext_names[] = {"pai-job", "pai-task",   "helios",
                                        "gavel",   "philly-log", "columns"};
#define NEXT (DRV_TRACE_NFORMATS - DRV_TRACE_PAI_JOB)
_Static_assert(sizeof ext_names / sizeof ext_names[0] == NEXT, "one name per added format");

int trace_ext_format_parse(const char *name)
{
    for (int i = 0; i < NEXT; i++)
        if (strcmp(name, ext_names[i]) == 0)
            return DRV_TRACE_PAI_JOB + i;
    return -1;
}

const char *trace_ext_format_name(int fmt)
{
    return fmt >= DRV_TRACE_PAI_JOB && fmt < DRV_TRACE_NFORMATS ? ext_names[fmt - DRV_TRACE_PAI_JOB]
                                                                : NULL;
}

int trace_ext_format_of(const drv_trace_opts *o, const char *text)
{
    if (o->format >= DRV_TRACE_PAI_JOB && o->format < DRV_TRACE_NFORMATS)
        return o->format;
    if (o->format != DRV_TRACE_AUTO)
        return -1;
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '[')
        return DRV_TRACE_PHILLY_LOG;
    if (trace_gavel_detect(text))
        return DRV_TRACE_GAVEL;
    if (trace_csv_map_matches(&trace_map_helios, text))
        return DRV_TRACE_HELIOS;
    if (trace_csv_map_matches(&trace_map_pai_task, text))
        return DRV_TRACE_PAI_TASK;
    if (trace_csv_map_matches(&trace_map_pai_job, text))
        return DRV_TRACE_PAI_JOB;
    return -1;
}

static int read_csv_mapped(trace_sink *s, const char *file, char *text, const char *columns,
                           drv_diag *d)
{
    if (!columns)
        return drv_fail(d, DRV_EINVAL,
                        "%s: format columns: expected --trace-columns naming its columns", file);
    char *spec = drv_strdup(columns);
    if (!spec)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    trace_csv_map m;
    int rc = trace_csv_map_parse(&m, spec, d);
    if (!rc)
        rc = trace_read_csv(s, file, text, &m, d);
    drv_free(spec);
    return rc;
}

int trace_ext_parse(drv_workload *w, const char *file, char *text, const drv_catalogue *cat,
                    const drv_trace_opts *o, int fmt, const char *columns, int32_t *skipped,
                    drv_diag *d)
{
    if (!o->calib || o->calib->n == 0)
        return drv_fail(d, DRV_EINVAL, "%s: traces need the calibrated profiles (--calib-dir)",
                        file);
    trace_sink s;
    trace_sink_init(&s, o, cat, trace_ext_format_name(fmt));
    int rc;
    switch (fmt) {
    case DRV_TRACE_PAI_JOB:
        rc = trace_read_csv(&s, file, text, &trace_map_pai_job, d);
        break;
    case DRV_TRACE_PAI_TASK:
        rc = trace_read_csv(&s, file, text, &trace_map_pai_task, d);
        break;
    case DRV_TRACE_HELIOS:
        rc = trace_read_csv(&s, file, text, &trace_map_helios, d);
        break;
    case DRV_TRACE_GAVEL:
        rc = trace_read_gavel(&s, file, text, d);
        break;
    case DRV_TRACE_PHILLY_LOG:
        rc = trace_read_philly_log(&s, file, text, d);
        break;
    default:
        rc = read_csv_mapped(&s, file, text, columns, d);
        break;
    }
    if (rc) {
        trace_sink_fini(&s);
        return rc;
    }
    trace_sink_finish(&s, w, skipped, file);
    return 0;
}

int drv_trace_parse_columns(drv_workload *w, const char *file, char *text, const char *columns,
                            const drv_catalogue *cat, const drv_trace_opts *o, int32_t *skipped,
                            drv_diag *d)
{
    return trace_ext_parse(w, file, text, cat, o, DRV_TRACE_CSV, columns, skipped, d);
}

int drv_trace_load_columns(drv_workload *w, const char *path, const char *columns,
                           const drv_catalogue *cat, const drv_trace_opts *o, int32_t *skipped,
                           drv_diag *d)
{
    char *text = NULL;
    int rc = trace_read_file(path, &text, d);
    if (!rc)
        rc = drv_trace_parse_columns(w, path, text, columns, cat, o, skipped, d);
    drv_free(text);
    return rc;
}
