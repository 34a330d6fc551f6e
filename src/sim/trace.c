/*
 * trace.c - readers for job traces published with other schedulers, turning each GPU job into
 * a Drover job (docs/data.md has the full mapping and the formats).
 *
 *   pollux    name,time,application,num_replicas,batch_size          (Pollux workloads 1-8)
 *   philly    timestamp,duration,num_gpus,gpu_time,cluster           (Pollux's Philly trace)
 *   tiresias  job_id,num_gpu,submit_time,iterations,model_name,duration,interval (Tiresias)
 *
 * The format is named (--trace-format) or recognised from the header line. Every job becomes a
 * data-parallel job of `worker` pods with one GPU each (no parameter server: these traces are
 * all-reduce jobs) whose speed comes from the calibrated model (calib.h):
 *  - pollux: model = application, batch = batch_size, workers requested = num_replicas,
 *    elastic between 1 and min(64, batch / smallest measured local batch) (ncf: 1, it does not
 *    scale); it completes at the end of its validation curve (drv_calib_steps).
 *  - philly, tiresias: the trace gives no model and no batch: the model is a seeded choice
 *    among the calibrated ones (hash of seed and row), the batch the model's initial batch
 *    times the GPUs (capped at its largest validated batch); rigid at num_gpus workers; the job
 *    runs for the trace's duration when packed on the fewest nodes (its step budget is
 *    duration / step time of that placement). Philly timestamps become seconds after the
 *    earliest one.
 * A malformed row (wrong field count, a non-number, a value out of range, an unknown model, a
 * name that breaks the name rule or is there twice) is reported as
 * file:line:column: field: expected ...; numbers, dates and names are read as every trace
 * reader reads them (trace_rows.c); with skip_bad it is logged, counted and
 * skipped, otherwise the load fails and the workload is untouched.
 */
#include "drover/clock.h"
#include "drover/strtab.h"
#include "drover/trace.h"
#include "trace_read.h"
#include "drover/text.h" /* the formats added later (trace_formats.c) */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GiB (1024LL * 1024 * 1024)

/* Per-pod request of a trace job: one GPU, and CPU/memory that fit any GPU node we model. */
#define TRACE_POD_CPU 1000
#define TRACE_POD_MEM (4 * GiB)
/* Largest worker count a trace job may use (the Pollux simulator's limit). */
#define TRACE_MAX_REPLICAS 64

static const char *const fmt_names[] = {"pollux", "philly", "tiresias"};
static const char *const fmt_headers[] = {
    "name,time,application,num_replicas,batch_size",
    "timestamp,duration,num_gpus,gpu_time,cluster",
    "job_id,num_gpu,submit_time,iterations,model_name,duration,interval",
};
static const int fmt_fields[] = {5, 5, 7};
enum { FMT_POLLUX, FMT_PHILLY, FMT_TIRESIAS, NFMT };

int drv_trace_format_parse(const char *name)
{
    for (int i = 0; i < NFMT; i++)
        if (strcmp(name, fmt_names[i]) == 0)
            return i;
    int ext = trace_ext_format_parse(name);
    if (ext >= 0)
        return ext;
    return strcmp(name, "auto") == 0 ? DRV_TRACE_AUTO : -1;
}

const char *drv_trace_format_name(int fmt)
{
    if (trace_ext_format_name(fmt))
        return trace_ext_format_name(fmt);
    return fmt >= 0 && fmt < NFMT ? fmt_names[fmt] : "auto";
}

/* ---- one row (trace_row, trace_num and trace_time_str are every reader's: trace_rows.c) ---- */

/* "YYYY-MM-DD HH:MM:SS" to seconds since the epoch (drv_time_parse_utc). */
static int timestamp(const trace_row *r, int k, double *out)
{
    if (drv_time_parse_utc(r->f[k], out) != 0)
        return trace_bad(r, k, "timestamp", "a time as YYYY-MM-DD HH:MM:SS");
    return 0;
}

/* Packs w GPUs onto nodes of g GPUs: {g, g, ..., rest}. Returns the node count. */
static int32_t packed(int32_t w, int32_t g, int32_t *gpn, int32_t cap)
{
    int32_t n = 0;
    while (w > 0 && n < cap) {
        gpn[n] = w < g ? w : g;
        w -= gpn[n++];
    }
    return n;
}

static void job_init(drv_jobspec *j, const char *name, double submit, int32_t model,
                     int32_t workers, int32_t min, int32_t max)
{
    memset(j, 0, sizeof *j);
    snprintf(j->name, sizeof j->name, "%s", name);
    snprintf(j->user, sizeof j->user, "trace");
    snprintf(j->queue, sizeof j->queue, "default");
    j->submit = submit;
    j->model = model;
    j->role[DRV_ROLE_WORKER] =
        (drv_rolespec){workers, min, max, {TRACE_POD_CPU, TRACE_POD_MEM, 1}, TRACE_POD_CPU};
    j->target_loss = -INFINITY;
}

typedef struct loader {
    const drv_trace_opts *o;
    const drv_catalogue *cat;
    drv_workload *w;
    int fmt;
    int64_t row; /* data rows seen: the seed for the row's choices */
} loader;

static int32_t family_for(const loader *L, const char *app)
{
    int32_t m = drv_catalogue_find(L->cat, app);
    return m >= 0 ? m : 0;
}

/* A job of a trace that names no model: seeded model, initial batch x GPUs, duration-long. */
static int duration_job(loader *L, const trace_row *r, drv_jobspec *j, const char *name,
                        double submit, double gpus, double duration)
{
    const drv_calib *c = L->o->calib;
    int32_t app = (int32_t)(drv_hash01(L->o->seed, (uint64_t)L->row) * c->n);
    if (app >= c->n)
        app = c->n - 1;
    const drv_calib_app *a = &c->v[app];
    double batch = fmin(a->init_bsz * gpus, a->max_bsz);
    if (batch < a->min_local_bsz * gpus)
        batch = a->min_local_bsz * gpus;
    int32_t gpn[TRACE_MAX_REPLICAS * 2];
    int32_t nn = packed((int32_t)gpus, L->o->gpus_per_node, gpn, TRACE_MAX_REPLICAS * 2);
    double step = drv_calib_step_time(c, app, gpn, nn, batch);
    if (!(step > 0))
        return trace_bad(r, 0, "row", "a job the calibrated model can time");
    job_init(j, name, submit, family_for(L, a->name), (int32_t)gpus, (int32_t)gpus, (int32_t)gpus);
    j->calib_app = app + 1;
    j->batch = batch;
    j->max_steps = fmax(duration / step, 1.0);
    return 0;
}

static int parse_row(loader *L, const trace_row *r, drv_jobspec *j)
{
    const drv_calib *c = L->o->calib;
    double v[4];
    int rc;
    if (r->nf != fmt_fields[L->fmt]) {
        char what[64];
        snprintf(what, sizeof what, "%d comma-separated fields", fmt_fields[L->fmt]);
        return drv_fail(r->d, DRV_EPARSE, "%s:%d:1: row: expected %s, found %d", r->file, r->line,
                        what, r->nf);
    }
    switch (L->fmt) {
    case FMT_POLLUX: {
        if ((rc = trace_name(r, 0, "name", r->f[0])) != 0)
            return rc;
        if ((rc = trace_num(r, 1, "time", 0, 1e10, false, &v[0])) != 0)
            return rc;
        int32_t app = drv_calib_find(c, r->f[2]);
        if (app < 0)
            return trace_bad(r, 2, "application",
                             "one of bert, cifar10, deepspeech2, imagenet, ncf, yolov3");
        if ((rc = trace_num(r, 3, "num_replicas", 1, TRACE_MAX_REPLICAS, true, &v[1])) != 0 ||
            (rc = trace_num(r, 4, "batch_size", 1, 1e7, true, &v[2])) != 0)
            return rc;
        const drv_calib_app *a = &c->v[app];
        if (v[2] < a->init_bsz || v[2] > a->max_bsz) {
            char what[96];
            snprintf(what, sizeof what, "a batch in [%g, %g] for %s", a->init_bsz, a->max_bsz,
                     a->name);
            return trace_bad(r, 4, "batch_size", what);
        }
        int32_t mx = (int32_t)fmin(TRACE_MAX_REPLICAS, floor(v[2] / a->min_local_bsz));
        if (strcmp(a->name, "ncf") == 0)
            mx = 1;
        if (mx < (int32_t)v[1])
            mx = (int32_t)v[1];
        job_init(j, r->f[0], v[0], family_for(L, a->name), (int32_t)v[1], 1, mx);
        j->calib_app = app + 1;
        j->batch = v[2];
        j->max_steps = drv_calib_steps(c, app, v[2]);
        j->batch_min = a->init_bsz; /* a policy may adapt it (DRV_BATCH) within the validated */
        j->batch_max = a->max_bsz;  /* batches; the trace's batch is where the job starts */
        return 0;
    }
    case FMT_PHILLY: {
        double t = 0;
        if ((rc = timestamp(r, 0, &t)) != 0 ||
            (rc = trace_num(r, 1, "duration", 1, 1e9, false, &v[0])) != 0 ||
            (rc = trace_num(r, 2, "num_gpus", 1, TRACE_MAX_REPLICAS * 2, true, &v[1])) != 0 ||
            (rc = trace_num(r, 3, "gpu_time", 0, 1e12, false, &v[2])) != 0)
            return rc;
        char name[64];
        snprintf(name, sizeof name, "philly-%lld", (long long)L->row);
        return duration_job(L, r, j, name, t, v[1], v[0]);
    }
    default: {
        if ((rc = trace_num(r, 0, "job_id", 0, 1e12, true, &v[3])) != 0 ||
            (rc = trace_num(r, 1, "num_gpu", 1, TRACE_MAX_REPLICAS * 2, true, &v[1])) != 0 ||
            (rc = trace_num(r, 2, "submit_time", 0, 1e10, false, &v[0])) != 0 ||
            (rc = trace_num(r, 3, "iterations", 0, 1e12, false, &v[2])) != 0 ||
            (rc = trace_num(r, 5, "duration", 1, 1e9, false, &v[2])) != 0)
            return rc;
        char name[TRACE_NAME_CAP];
        snprintf(name, sizeof name, "%s-%lld", r->f[4], (long long)v[3]);
        if ((rc = trace_name(r, 4, "model_name", name)) != 0)
            return rc;
        return duration_job(L, r, j, name, v[0], v[1], v[2]);
    }
    }
}

/* ---- the file ----------------------------------------------------------------------------- */

int drv_trace_parse(drv_workload *w, const char *file, char *text, const drv_catalogue *cat,
                    const drv_trace_opts *o, int32_t *skipped, drv_diag *d)
{
    if (!o->calib || o->calib->n == 0)
        return drv_fail(d, DRV_EINVAL, "%s: traces need the calibrated profiles (--calib-dir)",
                        file);
    int ext = trace_ext_format_of(o, text);
    if (ext >= 0)
        return trace_ext_parse(w, file, text, cat, o, ext, NULL, skipped, d);
    drv_workload t = {0};
    loader L = {o, cat, &t, o->format, 0};
    int rc = 0, line = 0;
    int32_t nskip = 0;
    double t0 = INFINITY;
    /* Job names must be unique (results are keyed by them): a hash, not a scan per row. */
    drv_strtab *names = drv_strtab_new();
    if (!names)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    /* Lines are split by hand, not with strtok: strtok skips empty lines, and every row after
     * a blank line was reported one line early. */
    for (char *s, *at = text; !rc && (s = drv_next_line(&at)) != NULL;) {
        line++;
        size_t len = strlen(s);
        if (len && s[len - 1] == '\r')
            s[--len] = 0;
        if (line == 1) {
            int found = -1;
            for (int k = 0; k < NFMT; k++)
                if (strcmp(s, fmt_headers[k]) == 0)
                    found = k;
            if (L.fmt == DRV_TRACE_AUTO && found < 0)
                rc = drv_fail(d, DRV_EPARSE,
                              "%s:1:1: header: expected the header of a pollux, philly, "
                              "tiresias, helios, pai-task or pai-job trace, a gavel or "
                              "philly-log file, or --trace-columns (docs/data.md), found "
                              "'%.60s'",
                              file, s);
            else if (L.fmt != DRV_TRACE_AUTO && found != L.fmt)
                rc = drv_fail(d, DRV_EPARSE, "%s:1:1: header: expected '%s' (format %s)", file,
                              fmt_headers[L.fmt], fmt_names[L.fmt]);
            L.fmt = found;
            continue;
        }
        if (len == 0 || s[0] == '#')
            continue;
        trace_row r = {.file = file, .line = line, .d = d};
        trace_split(&r, s, ',');
        if (drv_grow(&t.jobs, sizeof *t.jobs, &t.cap, t.n + 1) != 0) {
            rc = drv_fail(d, DRV_ENOMEM, "out of memory");
            break;
        }
        rc = parse_row(&L, &r, &t.jobs[t.n]);
        L.row++;
        if (!rc) { /* a name twice is a bad row too (skipped with --on-bad-row skip) */
            char where[600];
            snprintf(where, sizeof where, "%s:%d:1: row", file, line);
            rc = trace_name_once(names, t.jobs[t.n].name, where, d);
        }
        if (rc == DRV_EPARSE && o->skip_bad) {
            drv_log(DRV_LOG_WARN, "skipped: %s", d->msg);
            nskip++;
            rc = 0;
            d->msg[0] = 0;
            continue;
        }
        if (!rc) {
            t.jobs[t.n].line = line;
            t0 = fmin(t0, t.jobs[t.n].submit);
            t.n++;
        }
    }
    drv_strtab_free(names);
    if (!rc && line == 0)
        rc = drv_fail(d, DRV_EPARSE, "%s:1:1: header: expected a header line, found nothing", file);
    if (rc) {
        drv_workload_fini(&t);
        return rc;
    }
    /* Philly times are absolute: start the run at the first submission. */
    if (L.fmt == FMT_PHILLY)
        for (int32_t i = 0; i < t.n; i++)
            t.jobs[i].submit -= t0;
    drv_workload_fini(w);
    *w = t;
    if (skipped)
        *skipped = nskip;
    return 0;
}

int drv_trace_load(drv_workload *w, const char *path, const drv_catalogue *cat,
                   const drv_trace_opts *o, int32_t *skipped, drv_diag *d)
{
    char *buf;
    int rc = trace_read_file(path, &buf, d);
    if (rc)
        return rc;
    rc = drv_trace_parse(w, path, buf, cat, o, skipped, d);
    drv_free(buf);
    return rc;
}

void drv_cluster_pollux(drv_cluster_spec *c, int32_t nodes, int32_t gpus)
{
    drv_cluster_fini(c);
    drv_cluster_uniform(c, nodes,
                        (drv_res){TRACE_POD_CPU * gpus * 2, TRACE_POD_MEM * gpus * 2, gpus});
    c->timing.pod_start = DRV_POLLUX_RESTART;
    c->timing.restart = DRV_POLLUX_RESTART;
}
