/*
 * trace_rows.c - the row helpers and the job collector of the trace readers added after the
 * first three (trace_read.h says what each does).
 *
 * A trace job becomes a rigid data-parallel job of `gpus` one-GPU worker pods, the same way
 * trace.c turns a philly or tiresias row into one (docs/data.md): a calibrated model (the
 * reader's, or a seeded choice among the calibrated ones: hash of seed and row), a batch (the
 * reader's clamped to the model's validated batches, or its initial batch x GPUs), and a step
 * budget: the reader's steps, or duration / step time when packed on the fewest nodes.
 * Example: a Helios row of 8 GPUs that ran 3600 s, on 4-GPU nodes, picks (say) cifar10 at
 * batch min(128 x 8, 4096); if a step on "44" takes 0.25 s, it gets 14400 steps.
 */
#include "trace_read.h"

#include "drover/clock.h"
#include "drover/file.h"
#include "drover/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GiB (1024LL * 1024 * 1024)
/* Per-pod request of a trace job: as trace.c (one GPU, CPU and memory any GPU node has). */
#define TRACE_POD_CPU 1000
#define TRACE_POD_MEM (4 * GiB)

/* ---- rows --------------------------------------------------------------------------------- */

void trace_split(trace_row *r, char *s, char sep)
{
    size_t len = strlen(s);
    if (len && s[len - 1] == '\r')
        s[len - 1] = 0;
    r->nf = 0;
    for (char *p = s; r->nf < TRACE_MAX_FIELDS;) {
        r->col[r->nf] = (int)(p - s) + 1;
        r->f[r->nf++] = p;
        char *c = strchr(p, sep);
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
}

int trace_bad(const trace_row *r, int k, const char *field, const char *expected)
{
    char shown[300];
    return drv_fail(r->d, DRV_EPARSE, "%s:%d:%d: %s: expected %s, found '%s'", r->file, r->line,
                    r->col[k], field, expected, drv_text_shown(shown, sizeof shown, r->f[k]));
}

int trace_name(const trace_row *r, int k, const char *field, const char *name)
{
    if (drv_name_ok(name, DRV_JOB_NAME_MAX))
        return 0;
    char where[600];
    snprintf(where, sizeof where, "%s:%d:%d: %s", r->file, r->line, r->col[k], field);
    drv_name_fail(r->d, where, name, DRV_JOB_NAME_MAX);
    return DRV_EPARSE;
}

int trace_num(const trace_row *r, int k, const char *field, double lo, double hi, bool whole,
              double *out)
{
    double v;
    if (drv_parse_decimal(r->f[k], &v) != 0 || v < lo || v > hi || (whole && v != floor(v))) {
        char what[96];
        snprintf(what, sizeof what, "%s in [%g, %g]", whole ? "a whole number" : "a number", lo,
                 hi);
        return trace_bad(r, k, field, what);
    }
    *out = v;
    return 0;
}

int trace_time_str(const char *s, double *out)
{
    double v;
    if (drv_time_parse_utc(s, out) == 0)
        return 0;
    if (drv_parse_decimal(s, &v) != 0 || v < 0 || v > 1e11)
        return -1;
    *out = v;
    return 0;
}

int trace_time(const trace_row *r, int k, const char *field, double *out)
{
    if (trace_time_str(r->f[k], out) != 0)
        return trace_bad(r, k, field, "a time: seconds in [0, 1e11] or YYYY-MM-DD HH:MM:SS");
    return 0;
}

int trace_read_file(const char *path, char **text, drv_diag *d)
{
    return drv_file_read_max(path, TRACE_MAX_BYTES, "a trace read whole (larger ones: --stream)",
                             text, NULL, d);
}

int trace_name_once(drv_strtab *names, const char *name, const char *where, drv_diag *d)
{
    int32_t before = drv_strtab_count(names);
    int32_t id = drv_strtab_intern(names, name);
    if (id < 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    if (id < before)
        return drv_fail(d, DRV_EPARSE, "%s: job '%s' is in the trace twice", where, name);
    return 0;
}

/* ---- jobs --------------------------------------------------------------------------------- */

void trace_job_init(trace_job *j)
{
    memset(j, 0, sizeof *j);
    j->app = -1;
}

void trace_sink_init(trace_sink *s, const drv_trace_opts *o, const drv_catalogue *cat,
                     const char *format)
{
    memset(s, 0, sizeof *s);
    s->o = o;
    s->cat = cat;
    s->format = format;
    s->t0 = INFINITY;
}

void trace_sink_fini(trace_sink *s)
{
    drv_workload_fini(&s->w);
    drv_strtab_free(s->names);
    s->names = NULL;
}

/* Packs g GPUs onto nodes of per GPUs: {per, per, ..., rest}. Returns the node count. */
static int32_t packed(int32_t g, int32_t per, int32_t *gpn, int32_t cap)
{
    int32_t n = 0;
    if (per < 1)
        per = 1;
    while (g > 0 && n < cap) {
        gpn[n] = g < per ? g : per;
        g -= gpn[n++];
    }
    return n;
}

/* A name checked to fit (names_ok) into dst. */
static void copy_name(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    n = n < cap ? n : cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* Fills j from tj (checked by the caller); 0, or DRV_EPARSE when the model cannot time it. */
static int build(trace_sink *s, int64_t row, const trace_job *tj, drv_jobspec *j, const char *where,
                 drv_diag *d)
{
    const drv_calib *c = s->o->calib;
    int32_t app = tj->app;
    if (app < 0 || app >= c->n) {
        app = (int32_t)(drv_hash01(s->o->seed, (uint64_t)row) * c->n);
        if (app >= c->n)
            app = c->n - 1;
    }
    const drv_calib_app *a = &c->v[app];
    double g = tj->gpus;
    double batch = tj->batch > 0 ? tj->batch : a->init_bsz * g;
    batch = fmin(fmax(batch, a->init_bsz), a->max_bsz);
    if (batch < a->min_local_bsz * g)
        batch = a->min_local_bsz * g;
    int32_t gpn[TRACE_MAX_GPUS];
    int32_t nn = packed(tj->gpus, s->o->gpus_per_node, gpn, TRACE_MAX_GPUS);
    double step = drv_calib_step_time(c, app, gpn, nn, batch);
    if (!(step > 0))
        return drv_fail(d, DRV_EPARSE, "%s: job: expected a job the calibrated model can time",
                        where);
    memset(j, 0, sizeof *j);
    if (tj->name[0])
        copy_name(j->name, sizeof j->name, tj->name);
    else
        snprintf(j->name, sizeof j->name, "%s-%lld", s->format, (long long)row);
    copy_name(j->user, sizeof j->user, tj->user[0] ? tj->user : "trace");
    copy_name(j->queue, sizeof j->queue, tj->queue[0] ? tj->queue : "default");
    j->submit = tj->submit;
    int32_t fam = drv_catalogue_find(s->cat, a->name);
    j->model = fam >= 0 ? fam : 0;
    j->role[DRV_ROLE_WORKER] = (drv_rolespec){
        tj->gpus, tj->gpus, tj->gpus, {TRACE_POD_CPU, TRACE_POD_MEM, 1}, TRACE_POD_CPU};
    j->target_loss = -INFINITY;
    j->calib_app = app + 1;
    j->batch = batch;
    j->max_steps = tj->steps > 0 ? tj->steps : fmax(tj->duration / step, 1.0);
    return 0;
}

int trace_sink_bad(trace_sink *s, int rc, drv_diag *d)
{
    if (rc != DRV_EPARSE || !s->o->skip_bad)
        return rc;
    drv_log(DRV_LOG_WARN, "skipped: %s", d->msg);
    d->msg[0] = 0;
    s->skipped++;
    return 0;
}

/* The names a reader found (those left empty take defaults) follow the name rule (text.h) and
 * fit a job's fields; 0 or DRV_EPARSE (a malformed row) naming the field. */
static int names_ok(const trace_job *tj, const char *where, drv_diag *d)
{
    const struct {
        const char *field, *value;
        size_t max;
    } v[] = {{"name", tj->name, DRV_JOB_NAME_MAX},
             {"user", tj->user, DRV_USER_NAME_MAX},
             {"queue", tj->queue, DRV_QUEUE_NAME_MAX}};
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
        if (v[k].value[0] && !drv_name_ok(v[k].value, v[k].max)) {
            char at[700];
            snprintf(at, sizeof at, "%s: %s", where, v[k].field);
            drv_name_fail(d, at, v[k].value, v[k].max);
            return DRV_EPARSE;
        }
    return 0;
}

/* What a row must say of its job beyond its fields' syntax; 0 or DRV_EPARSE. */
static int job_ok(const trace_job *tj, const char *where, drv_diag *d)
{
    if (tj->gpus > TRACE_MAX_GPUS)
        return drv_fail(d, DRV_EPARSE, "%s: gpus: expected at most %d GPUs, found %d", where,
                        TRACE_MAX_GPUS, tj->gpus);
    if (!(tj->submit >= 0 && tj->submit < 1e11))
        return drv_fail(d, DRV_EPARSE, "%s: submit: expected a time in [0, 1e11] s, found %g",
                        where, tj->submit);
    /* A run time is whole seconds in every published trace: a fraction of one (1e-300) is no
     * run time, and a step budget of one step would hide it. */
    if (tj->steps <= 0 && !(tj->duration >= 1 && tj->duration <= TRACE_MAX_DURATION))
        return drv_fail(d, DRV_EPARSE,
                        "%s: duration: expected a run time of 0 s (the row is left out) or in "
                        "[1, %g] s, found %g",
                        where, TRACE_MAX_DURATION, tj->duration);
    return names_ok(tj, where, d);
}

int trace_sink_add(trace_sink *s, const trace_job *tj, const char *where, drv_diag *d)
{
    int64_t row = s->row++; /* counts dropped and skipped rows too: choices stay put */
    if (tj->dropped || tj->gpus <= 0 || (tj->steps <= 0 && !(tj->duration > 0))) {
        s->dropped++;
        return 0;
    }
    if (!s->names_known && !s->names && !(s->names = drv_strtab_new()))
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    int rc = job_ok(tj, where, d);
    if (!rc && drv_grow(&s->w.jobs, sizeof *s->w.jobs, &s->w.cap, s->w.n + 1) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    if (!rc)
        rc = build(s, row, tj, &s->w.jobs[s->w.n], where, d);
    if (!rc && s->names) {
        char at[700];
        snprintf(at, sizeof at, "%s: name", where);
        rc = trace_name_once(s->names, s->w.jobs[s->w.n].name, at, d);
    }
    if (rc)
        return trace_sink_bad(s, rc, d);
    s->t0 = fmin(s->t0, tj->submit);
    s->w.n++;
    return 0;
}

void trace_sink_finish(trace_sink *s, drv_workload *w, int32_t *skipped, const char *file)
{
    for (int32_t i = 0; i < s->w.n; i++)
        s->w.jobs[i].submit -= s->t0;
    if (s->dropped)
        drv_log(DRV_LOG_WARN,
                "%s: rows left out as not finished GPU jobs (no GPU, not started or not "
                "ended, or no run time): %d",
                file, s->dropped);
    drv_workload_fini(w);
    *w = s->w;
    memset(&s->w, 0, sizeof s->w);
    drv_strtab_free(s->names); /* (the fuzzer found it left behind) */
    s->names = NULL;
    if (skipped)
        *skipped = s->skipped;
}
