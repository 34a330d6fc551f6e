/*
 * report_read.c - reads a --out directory back (summary.json, scenario.json, jobs-*.csv,
 * timeline-*.csv, placements-*.csv) so `drover report DIR` can redraw the plots and the page
 * from the files alone, without running anything again.
 *
 * The CSV files are ours (report.c writes them): comma-separated, never quoted, one header
 * line. The reader therefore stays small: it splits a line on commas, maps the columns the
 * caller wants to their position in the header (so added columns never break an old reader),
 * and checks every row has as many fields as the header. Every error names path:line and what
 * was expected, e.g.
 *
 *     out/demo/jobs-gang-fifo.csv:7: jct_s: expected a number, found 'x12'
 *
 * Memory: one line buffer per open file, grown by doubling; results in drv_report_data are
 * freed by drv_report_data_fini.
 */
#include "drover/sim.h"

#include "drover/text.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- CSV ---------------------------------------------------------------------------------- */

/* Splits line on commas into c->field; DRV_EPARSE past DRV_CSV_MAXCOLS fields. */
static int split(drv_csv *c, char *line, drv_diag *d)
{
    c->nfield = 0;
    char *p = line;
    for (;;) {
        if (c->nfield == DRV_CSV_MAXCOLS)
            return drv_fail(d, DRV_EPARSE, "%s:%d: expected at most %d fields", c->in.path,
                            c->in.line, DRV_CSV_MAXCOLS);
        c->field[c->nfield++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            return 0;
        *comma = 0;
        p = comma + 1;
    }
}

int drv_csv_open(drv_csv *c, const char *path, const char *const *want, int32_t nwant, drv_diag *d)
{
    memset(c, 0, sizeof *c);
    if (nwant > DRV_CSV_MAXCOLS)
        return drv_fail(d, DRV_EINVAL, "%s: too many columns asked for", path);
    c->want = want;
    c->nwant = nwant;
    int rc = drv_lines_open(&c->in, path, DRV_MAX_REPORT_BYTES, "a file of a report", d);
    if (rc)
        return rc;
    char *line;
    rc = drv_lines_next(&c->in, &line, NULL, d);
    if (rc == 0)
        rc = drv_fail(d, DRV_EPARSE, "%s:1: expected a header line, found an empty file", path);
    else if (rc > 0)
        rc = split(c, line, d);
    if (rc < 0) {
        drv_csv_close(c);
        return rc;
    }
    c->ncols = c->nfield;
    for (int32_t k = 0; k < nwant; k++) {
        c->col[k] = -1;
        for (int32_t i = 0; i < c->ncols; i++)
            if (strcmp(c->field[i], want[k]) == 0)
                c->col[k] = i;
        if (c->col[k] < 0) {
            drv_fail(d, DRV_EPARSE, "%s:1: expected a column '%s' in the header", path, want[k]);
            drv_csv_close(c);
            return DRV_EPARSE;
        }
    }
    return 0;
}

int drv_csv_next(drv_csv *c, drv_diag *d)
{
    char *line;
    int rc = drv_lines_next(&c->in, &line, NULL, d);
    if (rc <= 0)
        return rc;
    if ((rc = split(c, line, d)) != 0)
        return rc;
    if (c->nfield != c->ncols)
        return drv_fail(d, DRV_EPARSE, "%s:%d: expected %d fields like the header, found %d",
                        c->in.path, c->in.line, c->ncols, c->nfield);
    return 1;
}

const char *drv_csv_get(const drv_csv *c, int32_t k)
{
    return c->field[c->col[k]];
}

int drv_csv_num(const drv_csv *c, int32_t k, bool empty_ok, double *out, drv_diag *d)
{
    const char *s = drv_csv_get(c, k);
    if (!*s) {
        if (empty_ok) {
            *out = -1;
            return 0;
        }
        return drv_fail(d, DRV_EPARSE, "%s:%d: %s: expected a number, found an empty cell",
                        c->in.path, c->in.line, c->want[k]);
    }
    double x;
    if (drv_parse_decimal(s, &x) != 0)
        return drv_fail(d, DRV_EPARSE, "%s:%d: %s: expected a number, found '%s'", c->in.path,
                        c->in.line, c->want[k], s);
    *out = x;
    return 0;
}

void drv_csv_close(drv_csv *c)
{
    drv_lines_close(&c->in);
}

/* ---- summary.json and scenario.json ------------------------------------------------------- */

/* The line of the n-th (0-based) '{' at depth 1 in the text of a JSON array, for messages. */
static int object_line(const char *text, int n)
{
    int line = 1, depth = 0, seen = -1;
    bool str = false, esc = false;
    for (const char *p = text; *p; p++) {
        char ch = *p;
        if (ch == '\n')
            line++;
        if (str) {
            if (esc)
                esc = false;
            else if (ch == '\\')
                esc = true;
            else if (ch == '"')
                str = false;
            continue;
        }
        if (ch == '"')
            str = true;
        else if (ch == '{' || ch == '[') {
            if (ch == '{' && depth == 1 && ++seen == n)
                break;
            depth++;
        } else if (ch == '}' || ch == ']')
            depth--;
    }
    return line;
}

/* The JSON file at path, read whole (at most DRV_MAX_REPORT_JSON bytes; a key twice in an
 * object refused): its value in *out and its text in *text (the caller frees both). */
static int load_json(const char *path, char **text, json_t **out, drv_diag *d)
{
    size_t len;
    int rc = drv_file_read_max(path, DRV_MAX_REPORT_JSON, "a JSON file of a report", text, &len, d);
    if (rc)
        return rc;
    json_error_t je;
    *out = json_loadb(*text, len, JSON_REJECT_DUPLICATES, &je);
    if (*out)
        return 0;
    drv_free(*text);
    *text = NULL;
    if (je.line < 0)
        return drv_fail(d, DRV_ENOMEM, "%s: %s", path, je.text);
    return drv_fail(d, DRV_EPARSE, "%s:%d: expected JSON: %s", path, je.line, je.text);
}

/* A number field: a JSON number, or null (written for "not defined", read back as NAN). */
static int get_num(json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (json_is_null(v)) {
        *out = NAN;
        return 0;
    }
    if (!json_is_number(v))
        return -1;
    *out = json_number_value(v);
    return 0;
}

/*
 * The optional "queues" array and fairness figures of a summary record (runs of a cluster with
 * queues) into s; absent, s has no queue. NULL, or the field found wrong, with *what expected.
 */
static const char *load_queues(json_t *o, drv_summary *s, const char **what)
{
    json_t *qs = json_object_get(o, "queues");
    if (!qs)
        return NULL;
    *what = "a list of at most 32 queue objects";
    if (!json_is_array(qs) || json_array_size(qs) > DRV_MAX_QUEUES)
        return "queues";
    static const char *const nums[] = {"weight", "avg_jct_s", "avg_wait_s", "share", "quota_use"};
    for (size_t k = 0; k < json_array_size(qs); k++) {
        json_t *e = json_array_get(qs, k);
        drv_queue_summary *q = &s->queue[k];
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *jobs = json_object_get(e, "jobs"), *done = json_object_get(e, "done");
        *what = "a queue object with a name of 1 to 31 characters and whole numbers jobs, done";
        if (!json_is_object(e) || !name || !*name || strlen(name) >= sizeof q->name ||
            !json_is_integer(jobs) || !json_is_integer(done) || json_integer_value(jobs) < 0 ||
            json_integer_value(done) < 0 || json_integer_value(jobs) > INT32_MAX ||
            json_integer_value(done) > INT32_MAX)
            return "queues";
        double x[sizeof nums / sizeof nums[0]];
        *what = "a number or null";
        for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
            if (get_num(e, nums[i], &x[i]) != 0)
                return nums[i];
        snprintf(q->name, sizeof q->name, "%s", name);
        q->jobs = (int32_t)json_integer_value(jobs), q->done = (int32_t)json_integer_value(done);
        q->weight = x[0], q->avg_jct = x[1], q->avg_wait = x[2], q->share = x[3];
        q->quota_use = x[4];
        q->usage = 0; /* "usage" is written only with fair share over time */
        if (json_object_get(e, "usage") && get_num(e, "usage", &q->usage) != 0)
            return "usage";
    }
    s->half_life = 0; /* likewise */
    if (json_object_get(o, "half_life_s") && get_num(o, "half_life_s", &s->half_life) != 0)
        return "half_life_s";
    if (get_num(o, "jain_share", &s->jain_share) != 0)
        return "jain_share";
    if (get_num(o, "ftf_max", &s->ftf_max) != 0)
        return "ftf_max";
    if (get_num(o, "ftf_jain", &s->ftf_jain) != 0)
        return "ftf_jain";
    s->nqueues = (int32_t)json_array_size(qs);
    return NULL;
}

/*
 * The optional "gpu_types" array of a summary record (a cluster with GPU types) into s;
 * absent, s has none. NULL, or the field found wrong, with *what expected.
 */
static const char *load_gpu_types(json_t *o, drv_summary *s, const char **what)
{
    json_t *ts = json_object_get(o, "gpu_types");
    if (!ts)
        return NULL;
    *what = "a list of at most 16 GPU type objects";
    if (!json_is_array(ts) || json_array_size(ts) > DRV_MAX_GPU_TYPES)
        return "gpu_types";
    for (size_t k = 0; k < json_array_size(ts); k++) {
        json_t *e = json_array_get(ts, k);
        drv_gpu_type_summary *t = &s->gpu_type[k];
        const char *name = json_string_value(json_object_get(e, "type"));
        json_t *gpus = json_object_get(e, "gpus");
        *what = "a GPU type object with a type of 1 to 31 characters and a whole number gpus";
        if (!json_is_object(e) || !name || !*name || strlen(name) >= sizeof t->name ||
            !json_is_integer(gpus) || json_integer_value(gpus) < 0)
            return "gpu_types";
        *what = "a number or null";
        if (get_num(e, "util", &t->util) != 0)
            return "util";
        snprintf(t->name, sizeof t->name, "%s", name);
        t->gpus = json_integer_value(gpus);
    }
    s->ngpu_types = (int32_t)json_array_size(ts);
    return NULL;
}

static int summary_records(drv_report_data *r, json_t *root, const char *path, const char *text,
                           drv_diag *d);

static int load_summary(drv_report_data *r, const char *dir, drv_diag *d)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    if (access(path, F_OK) != 0) /* not there: not a report directory (exit 2, not 1) */
        return drv_fail(d, DRV_ENOENT, "%s: cannot read: %s", path, strerror(errno));
    char *text;
    json_t *root;
    int rc = load_json(path, &text, &root, d);
    if (rc)
        return rc;
    rc = summary_records(r, root, path, text, d);
    json_decref(root);
    drv_free(text);
    return rc;
}

/* The records of summary.json (root, read from text) into r. */
static int summary_records(drv_report_data *r, json_t *root, const char *path, const char *text,
                           drv_diag *d)
{
    if (!json_is_array(root) || json_array_size(root) == 0)
        return drv_fail(d, DRV_EPARSE, "%s:1: expected an array with one object per policy", path);
    int32_t n = (int32_t)json_array_size(root);
    r->sum = drv_calloc((size_t)n, sizeof *r->sum);
    r->runs = drv_calloc((size_t)n, sizeof *r->runs);
    if (!r->sum || !r->runs)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    r->n = n;
    static const char *const nums[] = {"avg_jct_s",  "p50_jct_s",  "p95_jct_s",  "p99_jct_s",
                                       "makespan_s", "avg_wait_s", "cpu_util",   "cpu_useful",
                                       "cpu_wasted", "gpu_util",   "gpu_useful", "gpu_wasted",
                                       "stuck_cpu",  "end_s"};
    static const char *const ints[] = {"jobs",     "done",   "preemptions", "migrations",
                                       "restarts", "scales", "resizes",     "stuck"};
    for (int32_t i = 0; i < n; i++) {
        json_t *o = json_array_get(root, (size_t)i);
        drv_summary *s = &r->sum[i];
        const char *bad = NULL, *what = "";
        const char *pol = json_string_value(json_object_get(o, "policy"));
        if (!json_is_object(o))
            bad = "an object";
        else if (!drv_name_ok(pol, sizeof s->policy - 1))
            bad = "policy", what = "a name of 1 to 63 letters, digits, '-', '_' or '.'";
        double x[sizeof nums / sizeof nums[0]];
        for (size_t k = 0; !bad && k < sizeof nums / sizeof nums[0]; k++)
            if (get_num(o, nums[k], &x[k]) != 0)
                bad = nums[k], what = "a number or null";
        json_int_t v[sizeof ints / sizeof ints[0]];
        for (size_t k = 0; !bad && k < sizeof ints / sizeof ints[0]; k++) {
            json_t *e = json_object_get(o, ints[k]);
            if (!json_is_integer(e) || json_integer_value(e) < 0)
                bad = ints[k], what = "a whole number";
            else
                v[k] = json_integer_value(e);
        }
        if (!bad)
            bad = load_queues(o, s, &what);
        if (!bad)
            bad = load_gpu_types(o, s, &what);
        if (bad) {
            int line = object_line(text, i);
            return drv_fail(d, DRV_EPARSE, "%s:%d: policy #%d: %s%s%s%s", path, line, i + 1,
                            *what ? "\"" : "expected ", bad, *what ? "\": expected " : "", what);
        }
        snprintf(s->policy, sizeof s->policy, "%s", pol);
        s->avg_jct = x[0], s->p50_jct = x[1], s->p95_jct = x[2], s->p99_jct = x[3];
        s->makespan = x[4], s->avg_wait = x[5];
        s->cpu_util = x[6], s->cpu_useful = x[7], s->cpu_wasted = x[8];
        s->gpu_util = x[9], s->gpu_useful = x[10], s->gpu_wasted = x[11];
        s->stuck_cpu = x[12], s->end = x[13];
        s->jobs = (int32_t)v[0], s->done = (int32_t)v[1];
        s->preemptions = v[2], s->migrations = v[3], s->restarts = v[4], s->scales = v[5];
        s->resizes = v[6], s->stuck = (int32_t)v[7];
        s->interrupted = json_is_true(json_object_get(o, "interrupted"));
    }
    return 0;
}

/* scenario.json is optional (older directories lack it); a malformed one is an error. */
static int load_scenario(drv_report_data *r, const char *dir, drv_diag *d)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/scenario.json", dir);
    if (access(path, F_OK) != 0)
        return 0;
    char *text;
    json_t *o;
    int rc = load_json(path, &text, &o, d);
    if (rc)
        return rc;
    drv_free(text);
    drv_scenario *sc = &r->scen;
    const char *desc = json_string_value(json_object_get(o, "scenario"));
    json_t *jobs = json_object_get(o, "jobs"), *nodes = json_object_get(o, "nodes");
    json_t *seed = json_object_get(o, "seed");
    const char *bad = !desc                                  ? "\"scenario\": a string"
                      : !json_is_integer(jobs)               ? "\"jobs\": a whole number"
                      : !json_is_integer(nodes)              ? "\"nodes\": a whole number"
                      : !json_is_integer(seed)               ? "\"seed\": a whole number"
                      : get_num(o, "cpu_m", &sc->cpu_m) != 0 ? "\"cpu_m\": a number"
                      : get_num(o, "gpu", &sc->gpu) != 0     ? "\"gpu\": a number"
                                                             : NULL;
    if (bad) {
        json_decref(o);
        return drv_fail(d, DRV_EPARSE, "%s:1: expected %s", path, bad);
    }
    snprintf(sc->desc, sizeof sc->desc, "%s", desc);
    sc->jobs = (int32_t)json_integer_value(jobs);
    sc->nodes = (int32_t)json_integer_value(nodes);
    sc->seed = (uint64_t)json_integer_value(seed);
    r->has_scen = true;
    json_decref(o);
    return 0;
}

/* ---- per-policy CSVs ---------------------------------------------------------------------- */

/* A name and its row (a job's in the jobs file, a node's in run->nodes), for sorting. */
typedef struct named {
    const char *name;
    int32_t idx;
} named;

static int cmp_named(const void *a, const void *b)
{
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Orders named entries so that a numeric suffix compares as a number: node-2 < node-10. */
static int cmp_natural(const void *a, const void *b)
{
    const char *x = ((const named *)a)->name, *y = ((const named *)b)->name;
    while (*x && *y) {
        if (*x >= '0' && *x <= '9' && *y >= '0' && *y <= '9') {
            char *ex, *ey;
            unsigned long long nx = strtoull(x, &ex, 10), ny = strtoull(y, &ey, 10);
            if (nx != ny)
                return nx < ny ? -1 : 1;
            x = ex;
            y = ey;
            continue;
        }
        if (*x != *y)
            return (unsigned char)*x - (unsigned char)*y;
        x++;
        y++;
    }
    return (unsigned char)*x - (unsigned char)*y;
}

static int load_timeline(drv_report_run *run, const char *path, drv_diag *d)
{
    static const char *const want[] = {"t_s",        "cpu_used_m",   "cpu_useful_m", "gpu_used",
                                       "gpu_useful", "pending_jobs", "running_jobs"};
    drv_csv c;
    int rc = drv_csv_open(&c, path, want, 7, d);
    if (rc)
        return rc;
    int32_t cap = 0;
    while ((rc = drv_csv_next(&c, d)) == 1) {
        double x[7];
        for (int k = 0; k < 7 && rc >= 0; k++)
            rc = drv_csv_num(&c, k, false, &x[k], d);
        /* Job counts become int32_t: a value out of range (1e300) would be undefined. */
        for (int k = 5; k < 7 && rc >= 0; k++)
            if (!(x[k] >= 0 && x[k] <= INT32_MAX && x[k] == floor(x[k])))
                rc = drv_fail(d, DRV_EPARSE,
                              "%s:%d: %s: expected a whole number from 0 to %d, found '%s'",
                              c.in.path, c.in.line, want[k], INT32_MAX, drv_csv_get(&c, k));
        /* A step function in time: a row earlier than the one above is no timeline (and
         * gnuplot's plot of it failed after the page was written). */
        if (rc >= 0 && run->nticks > 0 && x[0] < run->ticks[run->nticks - 1].t)
            rc = drv_fail(d, DRV_EPARSE,
                          "%s:%d: t_s: expected a time not before the row above (%g), found '%s'",
                          c.in.path, c.in.line, run->ticks[run->nticks - 1].t, drv_csv_get(&c, 0));
        if (rc < 0)
            break;
        if (drv_grow(&run->ticks, sizeof *run->ticks, &cap, run->nticks + 1) != 0) {
            rc = drv_fail(d, DRV_ENOMEM, "out of memory");
            break;
        }
        run->ticks[run->nticks++] =
            (drv_tick){x[0], x[1], x[2], x[3], x[4], (int32_t)x[5], (int32_t)x[6]};
    }
    drv_csv_close(&c);
    return rc < 0 ? rc : 0;
}

/*
 * Node names seen in a placements file, for finding a row's node in O(1): open addressing with
 * linear probing over indices into run->nodes, kept at most half full (so a probe sequence is
 * short), doubled when it would be fuller. A scan per row made 60,000 nodes take 11.6 s.
 */
typedef struct node_index {
    int32_t *slot; /* -1 empty, else an index into the names */
    uint32_t mask; /* slots - 1; slots is a power of two */
} node_index;

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a: a table hash, not a checksum */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Position of s in the table: its slot, or the empty slot where it belongs. */
static uint32_t node_slot(const node_index *ix, char **names, const char *s)
{
    uint32_t k = name_hash(s) & ix->mask;
    while (ix->slot[k] >= 0 && strcmp(names[ix->slot[k]], s) != 0)
        k = (k + 1) & ix->mask;
    return k;
}

/* Makes room for n + 1 names (rehashing names[0..n)); 0 or DRV_ENOMEM. */
static int node_index_reserve(node_index *ix, char **names, int32_t n)
{
    if (ix->slot && (uint32_t)(n + 1) * 2 <= ix->mask + 1)
        return 0;
    uint32_t slots = ix->slot ? 2 * (ix->mask + 1) : 64;
    int32_t *v = drv_malloc(sizeof *v * slots);
    if (!v)
        return DRV_ENOMEM;
    drv_free(ix->slot);
    ix->slot = v;
    ix->mask = slots - 1;
    for (uint32_t k = 0; k < slots; k++)
        v[k] = -1;
    for (int32_t i = 0; i < n; i++)
        v[node_slot(ix, names, names[i])] = i;
    return 0;
}

/* Index of s in names[0..*n), adding a copy when new: 0 or DRV_ENOMEM. */
static int intern(node_index *ix, char ***names, int32_t *n, int32_t *cap, const char *s,
                  int32_t *out)
{
    if (node_index_reserve(ix, *names, *n) != 0)
        return DRV_ENOMEM;
    uint32_t k = node_slot(ix, *names, s);
    if (ix->slot[k] < 0) {
        if (drv_grow(names, sizeof **names, cap, *n + 1) != 0 || !((*names)[*n] = drv_strdup(s)))
            return DRV_ENOMEM;
        ix->slot[k] = (*n)++;
    }
    *out = ix->slot[k];
    return 0;
}

/* Wanted column k of the current row is a name (the name rule: text.h) of at most max bytes:
 * names are written into plots and the page, so a hand-edited file gets no further; 0 or
 * DRV_EPARSE "path:line: column: expected a name of ..., found '...'". */
static int csv_name(const drv_csv *c, int32_t k, size_t max, drv_diag *d)
{
    const char *s = drv_csv_get(c, k);
    if (drv_name_ok(s, max))
        return 0;
    char where[4200];
    snprintf(where, sizeof where, "%s:%d: %s", c->in.path, c->in.line, c->want[k]);
    drv_name_fail(d, where, s, max);
    return DRV_EPARSE;
}

/* Reads job names, users (interned: run->users) and JCTs from jobs-<policy>.csv. */
static int load_jobs(drv_report_run *run, const char *path, drv_diag *d)
{
    static const char *const want[] = {"job", "jct_s", "user"};
    drv_csv c;
    int rc = drv_csv_open(&c, path, want, 3, d);
    if (rc)
        return rc;
    int32_t cap = 0, capn = 0, capu = 0, capw = 0;
    node_index ix = {NULL, 0};
    while ((rc = drv_csv_next(&c, d)) == 1) {
        double jct = 0; /* (set by drv_csv_num; initialised for -O3's flow analysis) */
        int32_t user = 0;
        if ((rc = drv_csv_num(&c, 1, true, &jct, d)) != 0 ||
            (rc = csv_name(&c, 0, DRV_JOB_NAME_MAX, d)) != 0 ||
            (rc = csv_name(&c, 2, DRV_USER_NAME_MAX, d)) != 0)
            break;
        char *name = drv_strdup(drv_csv_get(&c, 0));
        if (!name || drv_grow(&run->job_names, sizeof *run->job_names, &capn, run->jobs + 1) != 0 ||
            drv_grow(&run->job_user, sizeof *run->job_user, &capw, run->jobs + 1) != 0 ||
            intern(&ix, &run->users, &run->nusers, &capu, drv_csv_get(&c, 2), &user) != 0) {
            drv_free(name);
            rc = drv_fail(d, DRV_ENOMEM, "out of memory");
            break;
        }
        run->job_names[run->jobs] = name;
        run->job_user[run->jobs++] = user;
        if (jct < 0)
            continue;
        if (drv_grow(&run->jct, sizeof *run->jct, &cap, run->njct + 1) != 0) {
            rc = drv_fail(d, DRV_ENOMEM, "out of memory");
            break;
        }
        run->jct[run->njct++] = jct;
    }
    drv_csv_close(&c);
    drv_free(ix.slot);
    if (rc < 0)
        return rc;
    if (run->njct > 0)
        qsort(run->jct, (size_t)run->njct, sizeof *run->jct, cmp_double);
    return 0;
}

/* Sorts the node names naturally and renumbers the placements to match: O(n log n). */
static int sort_nodes(drv_report_run *run, drv_diag *d)
{
    named *sorted = drv_malloc(sizeof *sorted * (size_t)(run->nnodes + 1));
    int32_t *map = drv_malloc(sizeof *map * (size_t)(run->nnodes + 1));
    if (!sorted || !map) {
        drv_free(sorted);
        drv_free(map);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    for (int32_t i = 0; i < run->nnodes; i++)
        sorted[i] = (named){run->nodes[i], i};
    qsort(sorted, (size_t)run->nnodes, sizeof *sorted, cmp_natural);
    for (int32_t i = 0; i < run->nnodes; i++) {
        map[sorted[i].idx] = i;
        run->nodes[i] = (char *)sorted[i].name;
    }
    for (int32_t i = 0; i < run->npl; i++)
        run->pl[i].node = map[run->pl[i].node];
    drv_free(sorted);
    drv_free(map);
    return 0;
}

/*
 * Placement rows name jobs of the jobs file (found by binary search in a sorted copy) and nodes
 * (found in a hash table, node_index); the nodes are collected, then sorted: O(rows + nodes log
 * nodes) in all.
 */
static int load_placements(drv_report_run *run, const char *path, drv_diag *d)
{
    static const char *const want[] = {"job", "node", "start_s", "end_s"};
    drv_csv c;
    named *byname = drv_malloc(sizeof *byname * (size_t)(run->jobs + 1));
    if (!byname)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int32_t i = 0; i < run->jobs; i++)
        byname[i] = (named){run->job_names[i], i};
    qsort(byname, (size_t)run->jobs, sizeof *byname, cmp_named);
    int rc = drv_csv_open(&c, path, want, 4, d);
    if (rc) {
        drv_free(byname);
        if (rc != DRV_ENOENT)
            return rc;
        d->msg[0] = 0;
        return 0;
    }
    run->has_pl = true;
    int32_t cap = 0, capn = 0;
    node_index ix = {NULL, 0};
    while ((rc = drv_csv_next(&c, d)) == 1) {
        double start = 0, end = 0; /* (set by drv_csv_num; initialised for -O3's analysis) */
        if ((rc = drv_csv_num(&c, 2, false, &start, d)) != 0 ||
            (rc = drv_csv_num(&c, 3, true, &end, d)) != 0)
            break;
        if (end >= 0 && end < start) { /* empty (-1): still bound at the end */
            rc = drv_fail(d, DRV_EPARSE,
                          "%s:%d: end_s: expected a time not before start_s (%g), "
                          "found '%s'",
                          c.in.path, c.in.line, start, drv_csv_get(&c, 3));
            break;
        }
        named key = {drv_csv_get(&c, 0), -1};
        const named *hit = bsearch(&key, byname, (size_t)run->jobs, sizeof *byname, cmp_named);
        int32_t job = hit ? hit->idx : -1;
        if (job < 0) {
            rc = drv_fail(d, DRV_EPARSE, "%s:%d: job: expected a job of the jobs file, found '%s'",
                          c.in.path, c.in.line, drv_csv_get(&c, 0));
            break;
        }
        const char *node = drv_csv_get(&c, 1);
        int32_t k;
        if ((rc = csv_name(&c, 1, DRV_NODE_NAME_MAX, d)) != 0)
            break;
        if (intern(&ix, &run->nodes, &run->nnodes, &capn, node, &k) != 0) {
            rc = drv_fail(d, DRV_ENOMEM, "out of memory");
            break;
        }
        if (drv_grow(&run->pl, sizeof *run->pl, &cap, run->npl + 1) != 0) {
            rc = drv_fail(d, DRV_ENOMEM, "out of memory");
            break;
        }
        run->pl[run->npl++] = (drv_placement){job, -1, -1, k, start, end, -1};
    }
    drv_csv_close(&c);
    drv_free(byname);
    drv_free(ix.slot);
    if (rc < 0)
        return rc;
    return sort_nodes(run, d);
}

int drv_report_load(drv_report_data *r, const char *dir, drv_diag *d)
{
    memset(r, 0, sizeof *r);
    int rc = load_summary(r, dir, d);
    if (!rc)
        rc = load_scenario(r, dir, d);
    for (int32_t i = 0; i < r->n && !rc; i++) {
        char path[4096];
        drv_report_run *run = &r->runs[i];
        snprintf(path, sizeof path, "%s/jobs-%s.csv", dir, r->sum[i].policy);
        rc = load_jobs(run, path, d);
        if (!rc) {
            snprintf(path, sizeof path, "%s/timeline-%s.csv", dir, r->sum[i].policy);
            rc = load_timeline(run, path, d);
        }
        if (!rc) {
            snprintf(path, sizeof path, "%s/placements-%s.csv", dir, r->sum[i].policy);
            rc = load_placements(run, path, d);
        }
    }
    if (rc)
        drv_report_data_fini(r);
    else
        drv_report_seeds_load(&r->seeds, dir);
    return rc;
}

void drv_report_data_fini(drv_report_data *r)
{
    for (int32_t i = 0; r->runs && i < r->n; i++) {
        drv_report_run *run = &r->runs[i];
        drv_free(run->jct);
        drv_free(run->ticks);
        drv_free(run->pl);
        for (int32_t k = 0; k < run->nnodes; k++)
            drv_free(run->nodes[k]);
        drv_free(run->nodes);
        for (int32_t k = 0; run->job_names && k < run->jobs; k++)
            drv_free(run->job_names[k]);
        drv_free(run->job_names);
        drv_free(run->job_user);
        for (int32_t k = 0; k < run->nusers; k++)
            drv_free(run->users[k]);
        drv_free(run->users);
    }
    drv_free(r->runs);
    drv_free(r->sum);
    drv_free(r->seeds.rows);
    memset(r, 0, sizeof *r);
}
