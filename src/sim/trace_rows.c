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

#include <errno.h>
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
    return drv_fail(r->d, DRV_EPARSE, "%s:%d:%d: %s: expected %s, found '%.60s'", r->file, r->line,
                    r->col[k], field, expected, r->f[k]);
}

int trace_num(const trace_row *r, int k, const char *field, double lo, double hi, bool whole,
              double *out)
{
    char *end;
    errno = 0;
    double v = strtod(r->f[k], &end);
    if (errno || end == r->f[k] || *end || !isfinite(v) || v < lo || v > hi ||
        (whole && v != floor(v))) {
        char what[96];
        snprintf(what, sizeof what, "%s in [%g, %g]", whole ? "a whole number" : "a number", lo,
                 hi);
        return trace_bad(r, k, field, what);
    }
    *out = v;
    return 0;
}

int64_t trace_days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400; /* H. Hinnant's algorithm */
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int trace_time_str(const char *s, double *out)
{
    int y, mo, dd, h, mi, sec, n = 0;
    if (sscanf(s, "%4d-%2d-%2d %2d:%2d:%2d%n", &y, &mo, &dd, &h, &mi, &sec, &n) == 6 && !s[n] &&
        mo >= 1 && mo <= 12 && dd >= 1 && dd <= 31 && h <= 23 && mi <= 59 && sec <= 60 && h >= 0 &&
        mi >= 0 && sec >= 0) {
        *out = (double)trace_days_from_civil(y, mo, dd) * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 1e11)
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
    FILE *f = fopen(path, "rb");
    if (!f)
        return drv_fail(d, DRV_EIO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = drv_malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *nb = drv_realloc(buf, cap * 2);
        if (!nb) {
            drv_free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    bool err = ferror(f) != 0;
    fclose(f);
    if (!buf)
        return drv_fail(d, DRV_ENOMEM, "%s: out of memory", path);
    if (err) {
        drv_free(buf);
        return drv_fail(d, DRV_EIO, "%s: read error", path);
    }
    buf[n] = 0;
    *text = buf;
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
        snprintf(j->name, sizeof j->name, "%s", tj->name);
    else
        snprintf(j->name, sizeof j->name, "%s-%lld", s->format, (long long)row);
    snprintf(j->user, sizeof j->user, "%s", tj->user[0] ? tj->user : "trace");
    snprintf(j->queue, sizeof j->queue, "%s", tj->queue[0] ? tj->queue : "default");
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

int trace_sink_add(trace_sink *s, const trace_job *tj, const char *where, drv_diag *d)
{
    int64_t row = s->row++; /* counts dropped and skipped rows too: choices stay put */
    if (tj->dropped || tj->gpus <= 0 || (tj->steps <= 0 && !(tj->duration > 0))) {
        s->dropped++;
        return 0;
    }
    int rc = 0;
    if (tj->gpus > TRACE_MAX_GPUS)
        rc = drv_fail(d, DRV_EPARSE, "%s: gpus: expected at most %d GPUs, found %d", where,
                      TRACE_MAX_GPUS, tj->gpus);
    else if (!(tj->submit >= 0 && tj->submit < 1e11))
        rc = drv_fail(d, DRV_EPARSE, "%s: submit: expected a time in [0, 1e11] s, found %g", where,
                      tj->submit);
    else if (drv_grow(&s->w.jobs, sizeof *s->w.jobs, &s->w.cap, s->w.n + 1) != 0)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    if (!rc)
        rc = build(s, row, tj, &s->w.jobs[s->w.n], where, d);
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
    if (skipped)
        *skipped = s->skipped;
}
