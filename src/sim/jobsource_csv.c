/*
 * jobsource_csv.c - a CSV trace as a job source (jobsource.h): rows read from the file as the
 * simulator asks for jobs, so a run holds the line being read and the jobs in flight, never
 * the trace. The rows are those of `--trace-columns` (trace_csv.c), turned into jobs by the
 * same sink as the in-memory reader (trace_rows.c), so both readers give the same jobs.
 *
 * Two passes over the file. The first checks every row and counts the jobs and their pod
 * slots (the simulator reserves ids for them), notes the first submission (time 0, as the
 * in-memory reader makes it) and refuses a row submitted before the one above it: a streamed
 * run needs the rows in order of submission, and an unsorted trace is an error naming the row
 * (file:line) that says how to sort it, rather than a sort that would need the whole trace in
 * memory. A malformed row is an error naming file:line:column, or with skip_bad is logged once
 * here. The second pass, as the run goes, hands each row's job over with its line; a row the
 * first pass skipped is skipped silently. Cost: the file is parsed twice (Philly's 82,247
 * rows: ~0.1 s each pass). The first pass also refuses a job name twice, holding the names
 * read so far (freed before the run); reads are bounded (64 GiB, 1 MiB a line: file.h), so
 * an endless file is an error, not a run that never starts.
 */
#include "drover/jobsource.h"
#include "drover/trace.h"
#include "trace_read.h"

#include "drover/file.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct csv_source {
    char *spec;          /* the columns text, split in place: m's strings point into it */
    trace_csv_map m;     /* which column gives what */
    trace_csv_reader rd; /* the header's columns */
    trace_sink sink;     /* turns a row into a job; its workload holds one job at a time */
    drv_trace_opts o;    /* the caller's options, skip_bad off in the second pass ... */
    bool skip_bad;       /* ... and the caller's choice here */
    drv_lines in;        /* the file, a line at a time (bounded: file.h) */
    double t0;           /* the first job's submission: time 0 of the run */
    char path[4096];
} csv_source;

/* Reads lines until one gives a job (1, the job in *out), the end (0) or an error. quiet: a
 * row the sink refuses is one the first pass skipped (and logged). */
static int next_row(csv_source *cs, drv_jobspec *out, bool quiet, drv_diag *d)
{
    for (;;) {
        char *text;
        int rc = drv_lines_next(&cs->in, &text, NULL, d);
        if (rc <= 0)
            return rc;
        rc = trace_csv_line(&cs->sink, &cs->rd, cs->in.line, text, d);
        if (rc == DRV_EPARSE && quiet && cs->skip_bad) {
            d->msg[0] = 0;
            continue;
        }
        if (rc)
            return rc;
        if (cs->sink.w.n > 0) {
            *out = cs->sink.w.jobs[0];
            out->line = cs->in.line;
            cs->sink.w.n = 0;
            return 1;
        }
    }
}

/* Back to the top of the file, for a pass with options o. */
static int rewind_source(csv_source *cs, const drv_catalogue *cat, drv_diag *d)
{
    trace_sink_fini(&cs->sink);
    trace_sink_init(&cs->sink, &cs->o, cat, "columns");
    cs->sink.names_known = true; /* the first pass refused a name twice */
    trace_csv_reader_init(&cs->rd, &cs->m, cs->path);
    return drv_lines_rewind(&cs->in, d);
}

static int64_t slots(const drv_jobspec *js)
{
    int64_t n = 0;
    for (int r = 0; r < DRV_NROLES; r++)
        n += js->role[r].max > js->role[r].replicas ? js->role[r].max : js->role[r].replicas;
    return n;
}

/* The first pass: every row checked, jobs and pods counted, the order of submission checked. */
static int check_rows(drv_jobsource *src, csv_source *cs, drv_diag *d)
{
    drv_jobspec j;
    double last = -INFINITY;
    int rc;
    while ((rc = next_row(cs, &j, false, d)) == 1) {
        if (j.submit < last)
            return drv_fail(d, DRV_EINVAL,
                            "%s:%d: submit: expected rows in order of submission for a streamed "
                            "run, found %.17g s after %.17g s on the row above; sort the rows by "
                            "the submit column first (keeping the header line)",
                            cs->path, cs->in.line, j.submit, last);
        if (src->jobs == 0)
            cs->t0 = j.submit;
        last = j.submit;
        if (src->jobs == INT32_MAX)
            return drv_fail(d, DRV_EINVAL, "%s:%d: more than %d jobs", cs->path, cs->in.line,
                            INT32_MAX);
        src->jobs++;
        src->pods += slots(&j);
    }
    if (rc)
        return rc;
    if (!cs->rd.have_header)
        return drv_fail(d, DRV_EPARSE, "%s:1:1: header: expected a header line, found nothing",
                        cs->path);
    if (cs->sink.dropped)
        drv_log(DRV_LOG_WARN,
                "%s: rows left out as not finished GPU jobs (no GPU, not started or not "
                "ended, or no run time): %d",
                cs->path, cs->sink.dropped);
    return 0;
}

static int csv_next(drv_jobsource *src, drv_jobspec *out, drv_diag *d)
{
    csv_source *cs = src->ctx;
    int rc = next_row(cs, out, true, d);
    if (rc == 1)
        out->submit -= cs->t0;
    return rc;
}

static void csv_fini(drv_jobsource *src)
{
    csv_source *cs = src->ctx;
    if (!cs)
        return;
    drv_lines_close(&cs->in);
    trace_sink_fini(&cs->sink);
    drv_free(cs->spec);
    drv_free(cs);
}

static const drv_jobsource_ops csv_ops = {.next = csv_next, .fini = csv_fini};

int drv_jobsource_csv(drv_jobsource *src, const char *path, const char *columns,
                      const drv_catalogue *cat, const drv_trace_opts *o, drv_diag *d)
{
    memset(src, 0, sizeof *src);
    if (!o->calib || o->calib->n == 0)
        return drv_fail(d, DRV_EINVAL, "%s: traces need the calibrated profiles (--calib-dir)",
                        path);
    csv_source *cs = drv_calloc(1, sizeof *cs);
    if (!cs)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    *src = (drv_jobsource){.ops = &csv_ops, .file = cs->path, .ctx = cs};
    snprintf(cs->path, sizeof cs->path, "%s", path);
    cs->o = *o;
    cs->skip_bad = o->skip_bad;
    trace_sink_init(&cs->sink, &cs->o, cat, "columns");
    int rc = 0;
    if (!(cs->spec = drv_strdup(columns)))
        rc = drv_fail(d, DRV_ENOMEM, "out of memory");
    if (!rc)
        rc = trace_csv_map_parse(&cs->m, cs->spec, d);
    if (!rc)
        rc = drv_lines_open(&cs->in, path, TRACE_MAX_STREAM_BYTES, "a streamed trace", d);
    if (!rc) {
        trace_csv_reader_init(&cs->rd, &cs->m, cs->path);
        rc = check_rows(src, cs, d);
    }
    cs->o.skip_bad = false; /* the second pass skips the first one's skipped rows quietly */
    if (!rc)
        rc = rewind_source(cs, cat, d);
    if (rc) {
        drv_jobsource_fini(src);
        return rc;
    }
    return 0;
}
