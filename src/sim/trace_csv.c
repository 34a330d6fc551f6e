/*
 * trace_csv.c - a CSV trace whose columns are found by name: the engine behind the helios,
 * pai-job and pai-task formats (fixed mappings in trace_helios.c and trace_pai.c) and the csv
 * format, mapped on the command line:
 *
 *   drover sim --trace jobs.csv --trace-columns name=id,submit=queued_at,gpus=n_gpu,duration=secs
 *
 * Keys: name, user, queue, submit, start, end, duration, gpus, model, batch, steps. Required:
 * gpus; submit or start; duration, or start and end, or steps. Times are seconds or
 * "YYYY-MM-DD HH:MM:SS"; the first submission becomes time 0. Fields are split at every comma
 * (no quoting, as in every published trace we read); names follow the name rule (text.h). A row
 * whose gpus, start or end is empty, whose GPUs are 0 or whose run time is 0 is not a finished GPU
 * job and is left out (counted); a model that is not a calibrated one is replaced by a seeded
 * choice (trace_rows.c).
 */
#include "trace_read.h"
#include "drover/text.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum {
    K_NAME,
    K_USER,
    K_QUEUE,
    K_SUBMIT,
    K_START,
    K_END,
    K_DURATION,
    K_GPUS,
    K_MODEL,
    K_BATCH,
    K_STEPS,
    K_GPUS_TIMES, /* internal keys from here: not settable with --trace-columns */
    K_STATE,
    K_NAME2,
    NKEYS
};
#define NPUBLIC K_GPUS_TIMES
static const char *const key_names[NKEYS] = {"name",  "user",       "queue", "submit", "start",
                                             "end",   "duration",   "gpus",  "model",  "batch",
                                             "steps", "gpus_times", "state", "name2"};

static void map_columns(const trace_csv_map *m, const char *c[NKEYS])
{
    const char *v[NKEYS] = {m->name,  m->user,       m->queue, m->submit, m->start,
                            m->end,   m->duration,   m->gpus,  m->model,  m->batch,
                            m->steps, m->gpus_times, m->state, m->name2};
    memcpy(c, v, sizeof v);
}

static void set_column(trace_csv_map *m, int k, const char *col)
{
    const char **dst[NPUBLIC] = {&m->name,     &m->user, &m->queue, &m->submit, &m->start, &m->end,
                                 &m->duration, &m->gpus, &m->model, &m->batch,  &m->steps};
    *dst[k] = col;
}

/* The column public key k is mapped to, or NULL. */
static const char *column_of(const trace_csv_map *m, int k)
{
    const char *c[NKEYS];
    map_columns(m, c);
    return c[k];
}

int trace_csv_map_parse(trace_csv_map *m, char *spec, drv_diag *d)
{
    memset(m, 0, sizeof *m);
    m->format = "columns";
    char *save = NULL;
    for (char *kv = strtok_r(spec, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        int k = -1;
        if (eq) {
            *eq = 0;
            for (int i = 0; i < NPUBLIC; i++)
                if (strcmp(kv, key_names[i]) == 0)
                    k = i;
        }
        if (k >= 0 && eq[1] && column_of(m, k))
            return drv_fail(d, DRV_EINVAL, "--trace-columns: key '%s' given twice", kv);
        if (k < 0 || !eq[1])
            return drv_fail(d, DRV_EINVAL,
                            "--trace-columns: expected KEY=COLUMN with KEY one of name, user, "
                            "queue, submit, start, end, duration, gpus, model, batch, steps; "
                            "found '%s'",
                            kv);
        set_column(m, k, eq + 1);
    }
    const char *missing = !m->gpus                  ? "gpus=COLUMN"
                          : !m->submit && !m->start ? "submit=COLUMN (or start)"
                          : !m->duration && !m->steps && !(m->start && m->end)
                              ? "duration=COLUMN (or start and end, or steps)"
                              : NULL;
    if (missing)
        return drv_fail(d, DRV_EINVAL, "--trace-columns: expected %s", missing);
    return 0;
}

/* Index of column name in the header fields, or -1. */
static int find_column(const trace_row *h, const char *name)
{
    for (int i = 0; i < h->nf; i++)
        if (strcmp(h->f[i], name) == 0)
            return i;
    return -1;
}

bool trace_csv_map_matches(const trace_csv_map *m, const char *header)
{
    char buf[2048];
    size_t n = strcspn(header, "\n"); /* header is the whole text: its first line only */
    if (n >= sizeof buf)
        return false;
    memcpy(buf, header, n);
    buf[n] = 0;
    trace_row h = {0};
    trace_split(&h, buf, ',');
    const char *c[NKEYS];
    map_columns(m, c);
    int found = 0;
    for (int k = 0; k < NKEYS; k++) {
        if (c[k] && find_column(&h, c[k]) < 0)
            return false;
        found += c[k] != NULL;
    }
    return found > 0;
}

static void copy_field(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s);
}

/* The trace_job of one row; idx[k] is key k's field or -1. */
static int parse_row(const trace_csv_map *m, const int idx[NKEYS], const drv_calib *calib,
                     trace_row *r, trace_job *j)
{
    trace_job_init(j);
    const char *f[NKEYS];
    for (int k = 0; k < NKEYS; k++)
        f[k] = idx[k] >= 0 ? r->f[idx[k]] : NULL;
    if (f[K_STATE] && m->drop_states)
        for (const char *const *s = m->drop_states; *s; s++)
            if (strcmp(f[K_STATE], *s) == 0)
                j->dropped = true;
    if ((f[K_GPUS] && !*f[K_GPUS]) || (f[K_START] && !*f[K_START]) || (f[K_END] && !*f[K_END]) ||
        (f[K_DURATION] && !*f[K_DURATION]))
        j->dropped = true;
    if (j->dropped)
        return 0;
    if (f[K_NAME] && f[K_NAME2]) /* too long: cut at TRACE_NAME_CAP, then refused */
        snprintf(j->name, sizeof j->name, "%s.%s", f[K_NAME], f[K_NAME2]);
    else if (f[K_NAME])
        copy_field(j->name, sizeof j->name, f[K_NAME]);
    if (f[K_USER])
        copy_field(j->user, sizeof j->user, f[K_USER]);
    if (f[K_QUEUE])
        copy_field(j->queue, sizeof j->queue, f[K_QUEUE]);
    int rc;
    double v, start = 0, end = 0;
    if (f[K_GPUS]) {
        /* whole GPUs, but for a column counting shares of one (PAI's plan_gpu in percent) */
        if ((rc = trace_num(r, idx[K_GPUS], m->gpus, 0, 1e7, !(m->gpu_unit > 0), &v)) != 0)
            return rc;
        if (f[K_GPUS_TIMES]) {
            double times;
            if ((rc = trace_num(r, idx[K_GPUS_TIMES], m->gpus_times, 0, 1e6, true, &times)) != 0)
                return rc;
            v *= times;
        }
        v /= m->gpu_unit > 0 ? m->gpu_unit : 1;
        j->gpus = v > 0 ? (int32_t)fmin(ceil(v - 1e-9), TRACE_MAX_GPUS + 1) : 0;
    } else {
        j->gpus = m->gpus_fixed;
    }
    if (f[K_START] && (rc = trace_time(r, idx[K_START], m->start, &start)) != 0)
        return rc;
    if (f[K_END] && (rc = trace_time(r, idx[K_END], m->end, &end)) != 0)
        return rc;
    j->submit = start;
    if (f[K_SUBMIT] && (rc = trace_time(r, idx[K_SUBMIT], m->submit, &j->submit)) != 0)
        return rc;
    if (f[K_DURATION]) {
        if ((rc = trace_num(r, idx[K_DURATION], m->duration, 0, TRACE_MAX_DURATION, false,
                            &j->duration)) != 0)
            return rc;
    } else if (f[K_START] && f[K_END]) {
        if (end < start)
            return trace_bad(r, idx[K_END], m->end, "a time not before start");
        j->duration = end - start;
    }
    if (f[K_STEPS] && (rc = trace_num(r, idx[K_STEPS], m->steps, 1, 1e12, false, &j->steps)) != 0)
        return rc;
    if (f[K_BATCH] && *f[K_BATCH] &&
        (rc = trace_num(r, idx[K_BATCH], m->batch, 1, 1e7, false, &j->batch)) != 0)
        return rc;
    if (f[K_MODEL])
        j->app = drv_calib_find(calib, f[K_MODEL]); /* -1: not ours, a seeded choice */
    return 0;
}

/* Finds each mapped column in the header h; fails naming the first one missing. */
static int header_columns(const trace_csv_map *m, const trace_row *h, const char *header,
                          int idx[NKEYS], int *need, drv_diag *d)
{
    const char *c[NKEYS];
    map_columns(m, c);
    *need = 0;
    for (int k = 0; k < NKEYS; k++) {
        idx[k] = c[k] ? find_column(h, c[k]) : -1;
        if (c[k] && idx[k] < 0)
            return drv_fail(d, DRV_EPARSE,
                            "%s:1:1: header: expected a column '%s' (%s of format %s), found "
                            "'%.200s'",
                            h->file, c[k], key_names[k], m->format, header);
        if (idx[k] + 1 > *need)
            *need = idx[k] + 1;
    }
    return 0;
}

_Static_assert(NKEYS == TRACE_CSV_NKEYS, "trace_csv_reader.idx holds one column per key");

void trace_csv_reader_init(trace_csv_reader *r, const trace_csv_map *m, const char *file)
{
    memset(r, 0, sizeof *r);
    r->m = m;
    r->file = file;
    r->h.file = file;
    r->h.line = 1;
}

int trace_csv_line(trace_sink *s, trace_csv_reader *rd, int line, char *s_, drv_diag *d)
{
    const trace_csv_map *m = rd->m;
    const char *file = rd->file;
    size_t len = strlen(s_);
    if (len && s_[len - 1] == '\r')
        s_[--len] = 0;
    if (!rd->have_header) {
        rd->have_header = true;
        rd->h.d = d;
        bool data = m->header && strcmp(s_, m->header) != 0;
        if (!data && len >= sizeof rd->header)
            return drv_fail(d, DRV_EPARSE, "%s:1:1: header: expected at most %zu bytes, found %zu",
                            file, sizeof rd->header - 1, len);
        snprintf(rd->header, sizeof rd->header, "%s", data ? m->header : s_);
        trace_split(&rd->h, rd->header, ',');
        char shown[2048];
        snprintf(shown, sizeof shown, "%s", data ? m->header : s_);
        int rc = header_columns(m, &rd->h, shown, rd->idx, &rd->need, d);
        if (rc || !data)
            return rc;
    }
    if (len == 0 || s_[0] == '#')
        return 0;
    trace_row r = {.file = file, .line = line, .d = d};
    trace_split(&r, s_, ',');
    char where[600];
    snprintf(where, sizeof where, "%s:%d", file, line);
    if (r.nf < rd->need) {
        int rc = drv_fail(d, DRV_EPARSE,
                          "%s:1: row: expected at least %d comma-separated fields, found %d", where,
                          rd->need, r.nf);
        return trace_sink_bad(s, rc, d);
    }
    trace_job j;
    int rc = parse_row(m, rd->idx, s->o->calib, &r, &j);
    return rc ? trace_sink_bad(s, rc, d) : trace_sink_add(s, &j, where, d);
}

int trace_read_csv(trace_sink *s, const char *file, char *text, const trace_csv_map *m, drv_diag *d)
{
    trace_csv_reader rd;
    trace_csv_reader_init(&rd, m, file);
    int line = 0, rc = 0;
    for (char *s_, *at = text; !rc && (s_ = drv_next_line(&at)) != NULL;)
        rc = trace_csv_line(s, &rd, ++line, s_, d);
    if (!rc && !rd.have_header)
        rc = drv_fail(d, DRV_EPARSE, "%s:1:1: header: expected a header line, found nothing", file);
    return rc;
}
