/*
 * calibrate.c - the calibrated performance model: step times measured by the Pollux artifact
 * (OSDI'21, petuum/adaptdl `simulator/traces/`, copied to data/pollux/profiles/) and the
 * statistical efficiency of a batch size from the validation curves' gradient statistics.
 *
 * Why: the analytic model of model.h is illustrative; to compare with the Pollux simulator on
 * equal terms (docs/peer-fidelity.md) a job of one of its six models must run exactly as fast
 * as the measurements say, and finish when its progress reaches the end of its curve.
 *
 * Step time of a placement (GPUs per node, e.g. {4,2}):
 *   1. normalise to the lexicographically smallest rotation (24 -> 24, 42 -> 24, 313 -> 133);
 *   2. if placements.csv measured it (rows kept sorted by placement, found by binary search),
 *      interpolate linearly in the per-replica batch between
 *      measured sizes (clamped at the ends);
 *   3. else interpolate separably: in each measured node count (placement means grouped by
 *      (nodes, replicas, batch), plus scalability.csv), linearly in batch then in replicas;
 *      then linearly between the two node counts that bracket the query (clamped at 16).
 *      The Pollux simulator uses a Delaunay interpolator (scipy LinearNDInterpolator) here;
 *      ours agrees at measured points and differs a little between them.
 *   Gradient accumulation: local = ceil(B / replicas); accum = ceil(local / max_local) - 1
 *   (at least 1 for one replica above the initial batch); atomic = ceil(local / (accum + 1));
 *   a step takes step(atomic) + accum * (step(atomic) - sync(atomic)).
 *
 * Progress: epoch e spans progress [P(e), P(e+1)], P(e) = min over curves of the progress at
 * the end of epoch e-1. At total batch B a step gains
 *   gain(B, e) = (var + sqr) / (var / (B / B0) + sqr)
 * units of progress (B0 the smallest validated batch; sqr, var interpolated linearly in B
 * between the curves). A job needs  Σ_e (P(e+1) - P(e)) / gain(B, e)  steps over its epochs.
 * Example: cifar10 at B = 128 = B0 has gain 1, so it needs P(100) steps (its iteration count).
 *
 * Fit: least squares of the linear model in calib.h over placements.csv; rms and max relative
 * error are what `drover calibrate` prints.
 */
#include "drover/calib.h"
#include "calib_int.h"
#include "drover/file.h"
#include "drover/text.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The Pollux simulator's per-model settings (applications.py): epochs to completion and, for
 * yolov3, the largest per-replica batch. 0 means "from the data". */
static const struct {
    const char *name;
    int32_t max_epochs;
    double max_local_bsz;
} apps[] = {
    {"bert", 2, 0},      {"cifar10", 100, 0}, {"deepspeech2", 80, 0},
    {"imagenet", 90, 0}, {"ncf", 10, 0},      {"yolov3", 50, 8},
};
enum { NAPPS = sizeof apps / sizeof apps[0] };

/* ---- reading ------------------------------------------------------------------------------ */

/* The largest calibration CSV read: 16 MiB (the Pollux profiles' largest is ~200 KiB). */
#define MAX_CALIB_BYTES (16ULL << 20)

/*
 * Reads a numeric CSV whose header names the wanted columns (in any order, extra columns
 * ignored). Calls row(arg, vals) per data row. Errors name file:line:column and the field.
 */
static int read_csv(const char *path, const char *const *want, int nwant,
                    int (*row)(void *arg, const double *v), void *arg, drv_diag *d)
{
    char *text;
    int code = drv_file_read_max(path, MAX_CALIB_BYTES, "a calibration CSV", &text, NULL, d);
    if (code)
        return code;
    int idx[16], rc = 0, lineno = 0;
    bool header = false;
    for (int k = 0; k < nwant; k++)
        idx[k] = -1;
    for (char *line, *at = text; !rc && (line = drv_next_line(&at)) != NULL;) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[len - 1] = 0;
        if (!line[0])
            continue; /* a blank line (counted, so later messages name their line) */
        char *f[32];
        int col[32], nf = 0;
        for (char *p = line; nf < 32;) {
            col[nf] = (int)(p - line) + 1;
            f[nf++] = p;
            char *c = strchr(p, ',');
            if (!c)
                break;
            *c = 0;
            p = c + 1;
        }
        if (!header) {
            header = true;
            for (int k = 0; k < nwant; k++)
                for (int i = 0; i < nf; i++)
                    if (strcmp(f[i], want[k]) == 0)
                        idx[k] = i;
            for (int k = 0; k < nwant && !rc; k++)
                if (idx[k] < 0)
                    rc = drv_fail(d, DRV_EPARSE, "%s:%d: header: expected a column '%s'", path,
                                  lineno, want[k]);
            continue;
        }
        double v[16];
        for (int k = 0; k < nwant && !rc; k++) {
            if (idx[k] >= nf) {
                rc = drv_fail(d, DRV_EPARSE, "%s:%d: %s: missing field", path, lineno, want[k]);
                break;
            }
            const char *s = f[idx[k]];
            if (drv_parse_decimal(s, &v[k]) != 0)
                rc = drv_fail(d, DRV_EPARSE, "%s:%d:%d: %s: expected a number, found '%s'", path,
                              lineno, col[idx[k]], want[k], s);
        }
        if (!rc)
            rc = row(arg, v);
        if (rc && !d->msg[0])
            drv_fail(d, rc, "%s:%d: %s", path, lineno, drv_strerror(rc));
    }
    drv_free(text);
    return rc;
}

typedef struct pts {
    drv_calib_point **v;
    int32_t *n, cap;
    bool placement;
} pts;

static int32_t rotate_min(int32_t placement);

static int add_point(void *arg, const double *v)
{
    pts *p = arg;
    if (drv_grow(p->v, sizeof **p->v, &p->cap, *p->n + 1) != 0)
        return DRV_ENOMEM;
    drv_calib_point x = {0};
    if (p->placement) {
        if (v[0] < 1 || v[0] > 99999999 || v[1] <= 0 || v[2] <= 0)
            return DRV_ERANGE;
        int32_t pl = (int32_t)v[0];
        x.placement = rotate_min(pl);
        for (int32_t q = pl; q > 0; q /= 10) {
            x.nodes++;
            x.replicas += q % 10;
        }
        x.local_bsz = v[1];
        x.step = v[2];
        x.sync = v[3];
    } else {
        if (v[0] < 1 || v[1] < 1 || v[2] <= 0 || v[3] <= 0)
            return DRV_ERANGE;
        x.nodes = (int32_t)v[0];
        x.replicas = (int32_t)v[1];
        x.local_bsz = v[2];
        x.step = v[3];
        x.sync = v[4];
    }
    (*p->v)[(*p->n)++] = x;
    return 0;
}

typedef struct curve_acc {
    drv_calib_curve *c;
    int32_t cap;
} curve_acc;

static int add_epoch(void *arg, const double *v)
{
    curve_acc *a = arg;
    drv_calib_curve *c = a->c;
    if (c->n == a->cap) {
        int32_t nc = a->cap ? a->cap * 2 : 64;
        double *p = drv_realloc(c->progress, (size_t)nc * sizeof *p);
        if (p)
            c->progress = p;
        double *s = drv_realloc(c->grad_sqr, (size_t)nc * sizeof *s);
        if (s)
            c->grad_sqr = s;
        double *r = drv_realloc(c->grad_var, (size_t)nc * sizeof *r);
        if (r)
            c->grad_var = r;
        if (!p || !s || !r)
            return DRV_ENOMEM;
        a->cap = nc;
    }
    c->progress[c->n] = v[0];
    c->grad_sqr[c->n] = v[1];
    c->grad_var[c->n] = v[2];
    c->n++;
    return 0;
}

/* Placements sorted by (placement, local_bsz): a lookup binary-searches its rows. */
static int cmp_point(const void *a, const void *b)
{
    const drv_calib_point *x = a, *y = b;
    if (x->placement != y->placement)
        return x->placement < y->placement ? -1 : 1;
    return (x->local_bsz > y->local_bsz) - (x->local_bsz < y->local_bsz);
}

static int cmp_curve(const void *a, const void *b)
{
    double x = ((const drv_calib_curve *)a)->batch, y = ((const drv_calib_curve *)b)->batch;
    return (x > y) - (x < y);
}

/* Reads every dir/<app>/validation-<batch>.csv (the batch sizes are only in the names). */
static int load_curves(drv_calib_app *a, const char *dir, drv_diag *d)
{
    static const char *const cols[] = {"progress", "grad_sqr", "grad_var"};
    char path[1024];
    DIR *dh;
    int rc = calib_open_model(a, dir, path, sizeof path, &dh, d);
    if (rc)
        return rc;
    int32_t cap = 0;
    for (struct dirent *e = readdir(dh); e && !rc; e = readdir(dh)) {
        char *end;
        if (strncmp(e->d_name, "validation-", 11) != 0)
            continue;
        long b = strtol(e->d_name + 11, &end, 10);
        if (b <= 0 || strcmp(end, ".csv") != 0)
            continue;
        if (drv_grow(&a->cv, sizeof *a->cv, &cap, a->ncv + 1) != 0) {
            rc = drv_fail(d, DRV_ENOMEM, "out of memory");
            break;
        }
        curve_acc acc = {&a->cv[a->ncv], 0};
        memset(acc.c, 0, sizeof *acc.c);
        acc.c->batch = (double)b;
        a->ncv++;
        snprintf(path, sizeof path, "%s/%s/%s", dir, a->name, e->d_name);
        rc = read_csv(path, cols, 3, add_epoch, &acc, d);
        if (!rc && acc.c->n == 0)
            rc = drv_fail(d, DRV_EPARSE, "%s: no epochs", path);
    }
    closedir(dh);
    if (rc)
        return rc;
    if (a->ncv == 0)
        return drv_fail(d, DRV_ENOENT, "%s/%s: no validation-<batch>.csv", dir, a->name);
    qsort(a->cv, (size_t)a->ncv, sizeof *a->cv, cmp_curve);
    return 0;
}

void drv_calib_fini(drv_calib *c)
{
    for (int32_t i = 0; c->v && i < c->nall; i++) {
        drv_calib_app *a = &c->v[i];
        drv_free(a->pl);
        drv_free(a->sc);
        if (a->base != i)
            continue; /* a typed entry's curves are its base's */
        for (int32_t k = 0; k < a->ncv; k++) {
            drv_free(a->cv[k].progress);
            drv_free(a->cv[k].grad_sqr);
            drv_free(a->cv[k].grad_var);
        }
        drv_free(a->cv);
    }
    drv_free(c->v);
    c->v = NULL;
    c->n = c->nall = 0;
}

static bool file_exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static const char *const pcols[] = {"placement", "local_bsz", "step_time", "sync_time"};
static const char *const scols[] = {"num_nodes", "num_replicas", "local_bsz", "step_time",
                                    "sync_time"};

/* dir/<model>/placements<sfx>.csv and scalability<sfx>.csv (the latter optional when
 * `sc_optional`) into a; sorted, with the measured local batch range. */
static int load_points(drv_calib_app *a, const char *dir, const char *sfx, bool sc_optional,
                       drv_diag *d)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/placements%s.csv", dir, a->name, sfx);
    pts p = {&a->pl, &a->npl, 0, true};
    int rc = read_csv(path, pcols, 4, add_point, &p, d);
    if (!rc) {
        snprintf(path, sizeof path, "%s/%s/scalability%s.csv", dir, a->name, sfx);
        pts s = {&a->sc, &a->nsc, 0, false};
        if (!sc_optional || file_exists(path))
            rc = read_csv(path, scols, 5, add_point, &s, d);
    }
    if (rc)
        return rc;
    if (a->npl == 0)
        return drv_fail(d, DRV_EPARSE, "%s/%s/placements%s.csv: no rows", dir, a->name, sfx);
    qsort(a->pl, (size_t)a->npl, sizeof *a->pl, cmp_point);
    a->min_local_bsz = INFINITY;
    a->max_local_bsz = 0;
    for (int32_t k = 0; k < a->npl; k++) {
        a->min_local_bsz = fmin(a->min_local_bsz, a->pl[k].local_bsz);
        a->max_local_bsz = fmax(a->max_local_bsz, a->pl[k].local_bsz);
    }
    return 0;
}

enum { MAX_TYPES = 16 };

/* Model i of apps[] into t->v[i], its types appended after t->nall. */
static int load_model(drv_calib *t, int32_t *cap, int i, const char *dir, drv_diag *d)
{
    drv_calib_app *a = &t->v[i];
    snprintf(a->name, sizeof a->name, "%s", apps[i].name);
    a->base = i;
    a->slowdown = 1;
    char types[MAX_TYPES][32], path[1024];
    int32_t nt = 0;
    int rc = calib_list_types(a, dir, types, MAX_TYPES, &nt, d);
    snprintf(path, sizeof path, "%s/%s/placements.csv", dir, a->name);
    if (!rc && nt > 0 && !file_exists(path)) {
        a->no_base = true; /* Sia's layout: only per-type profiles */
        memcpy(a->type_first, types[0], sizeof a->type_first);
    }
    char sfx[40] = "";
    if (a->no_base) {
        sfx[0] = '-';
        memcpy(sfx + 1, a->type_first, sizeof a->type_first);
    }
    if (!rc)
        rc = load_points(a, dir, sfx, a->no_base, d);
    if (!rc)
        rc = load_curves(a, dir, d);
    if (rc)
        return rc;
    a->init_bsz = a->cv[0].batch;
    a->max_bsz = a->cv[a->ncv - 1].batch;
    if (apps[i].max_local_bsz > 0)
        a->max_local_bsz = apps[i].max_local_bsz;
    a->max_epochs = apps[i].max_epochs;
    for (int32_t k = 0; k < a->ncv; k++)
        if (a->cv[k].n < a->max_epochs)
            return drv_fail(d, DRV_EPARSE, "%s/%s: validation-%.0f.csv has %d epochs, need %d", dir,
                            a->name, a->cv[k].batch, a->cv[k].n, a->max_epochs);
    for (int32_t k = 0; k < nt; k++) {
        if (drv_grow(&t->v, sizeof *t->v, cap, t->nall + 1) != 0)
            return drv_fail(d, DRV_ENOMEM, "out of memory");
        drv_calib_app *b = &t->v[i], *x = &t->v[t->nall++];
        memset(x, 0, sizeof *x);
        memcpy(x->name, b->name, sizeof x->name);
        memcpy(x->type, types[k], sizeof x->type);
        x->base = i;
        x->slowdown = 1;
        sfx[0] = '-';
        memcpy(sfx + 1, types[k], sizeof types[k]);
        if ((rc = load_points(x, dir, sfx, true, d)) != 0)
            return rc;
        x->cv = b->cv;
        x->ncv = b->ncv;
        x->init_bsz = b->init_bsz;
        x->max_bsz = b->max_bsz;
        x->max_epochs = b->max_epochs;
        if (apps[i].max_local_bsz > 0)
            x->max_local_bsz = apps[i].max_local_bsz;
    }
    return 0;
}

int drv_calib_load(drv_calib *c, const char *dir, drv_diag *d)
{
    int32_t cap = NAPPS;
    drv_calib t = {drv_calloc(NAPPS, sizeof(drv_calib_app)), NAPPS, NAPPS};
    if (!t.v)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int i = 0; i < NAPPS; i++)
        t.v[i].base = i; /* so fini frees what a failed load read */
    int rc = 0;
    for (int i = 0; i < NAPPS && !rc; i++)
        rc = load_model(&t, &cap, i, dir, d);
    if (rc) {
        drv_calib_fini(&t);
        return rc;
    }
    drv_calib_fini(c);
    *c = t;
    return 0;
}

int32_t drv_calib_find(const drv_calib *c, const char *name)
{
    for (int32_t i = 0; i < c->n; i++)
        if (strcmp(c->v[i].name, name) == 0)
            return i;
    return -1;
}

static int32_t rotate_min(int32_t placement)
{
    char s[16], best[16];
    int n = snprintf(s, sizeof s, "%d", placement);
    memcpy(best, s, (size_t)n + 1);
    for (int r = 1; r < n; r++) {
        char t[16];
        memcpy(t, s + r, (size_t)(n - r));
        memcpy(t + n - r, s, (size_t)r);
        t[n] = 0;
        if (strcmp(t, best) < 0)
            memcpy(best, t, (size_t)n + 1);
    }
    return (int32_t)atol(best);
}

typedef struct st2 {
    double step, sync;
} st2;

static st2 lerp(st2 a, st2 b, double x0, double x1, double x)
{
    if (x1 == x0)
        return a;
    double w = (x - x0) / (x1 - x0);
    return (st2){a.step + w * (b.step - a.step), a.sync + w * (b.sync - a.sync)};
}

/* Linear in local_bsz over the points selected by match(), clamped. found=false if none. */
static st2 interp_bsz(const drv_calib_point *v, int32_t n, int32_t placement, int32_t nodes,
                      int32_t replicas, double bsz, bool *found)
{
    const drv_calib_point *lo = NULL, *hi = NULL;
    double sum_lo_step = 0, sum_lo_sync = 0, sum_hi_step = 0, sum_hi_sync = 0;
    int nlo = 0, nhi = 0;
    for (int32_t i = 0; i < n; i++) {
        const drv_calib_point *p = &v[i];
        if (placement ? p->placement != placement : (p->nodes != nodes || p->replicas != replicas))
            continue;
        if (p->local_bsz <= bsz && (!lo || p->local_bsz >= lo->local_bsz)) {
            if (!lo || p->local_bsz > lo->local_bsz)
                nlo = 0, sum_lo_step = sum_lo_sync = 0;
            lo = p;
            nlo++, sum_lo_step += p->step, sum_lo_sync += p->sync;
        }
        if (p->local_bsz >= bsz && (!hi || p->local_bsz <= hi->local_bsz)) {
            if (!hi || p->local_bsz < hi->local_bsz)
                nhi = 0, sum_hi_step = sum_hi_sync = 0;
            hi = p;
            nhi++, sum_hi_step += p->step, sum_hi_sync += p->sync;
        }
    }
    *found = lo || hi;
    if (!lo && !hi)
        return (st2){0, 0};
    /* Several rows at one size (other placements with the same counts): their mean. */
    st2 a = lo ? (st2){sum_lo_step / nlo, sum_lo_sync / nlo} : (st2){0, 0};
    st2 b = hi ? (st2){sum_hi_step / nhi, sum_hi_sync / nhi} : (st2){0, 0};
    if (!lo)
        return b;
    if (!hi)
        return a;
    return lerp(a, b, lo->local_bsz, hi->local_bsz, bsz);
}

/* In one node count: over the replica counts measured there, bracket `replicas`. */
static st2 interp_layer(const drv_calib_app *a, int32_t nodes, int32_t replicas, double bsz,
                        bool *found)
{
    int32_t rlo = -1, rhi = -1;
    for (int pass = 0; pass < 2; pass++) {
        const drv_calib_point *v = pass ? a->sc : a->pl;
        int32_t n = pass ? a->nsc : a->npl;
        for (int32_t i = 0; i < n; i++) {
            if (v[i].nodes != nodes)
                continue;
            int32_t r = v[i].replicas;
            if (r <= replicas && r > rlo)
                rlo = r;
            if (r >= replicas && (rhi < 0 || r < rhi))
                rhi = r;
        }
    }
    *found = rlo >= 0 || rhi >= 0;
    if (!*found)
        return (st2){0, 0};
    st2 x[2];
    int32_t rr[2] = {rlo >= 0 ? rlo : rhi, rhi >= 0 ? rhi : rlo};
    for (int k = 0; k < 2; k++) {
        bool f1 = false, f2 = false;
        st2 p = interp_bsz(a->pl, a->npl, 0, nodes, rr[k], bsz, &f1);
        st2 s = interp_bsz(a->sc, a->nsc, 0, nodes, rr[k], bsz, &f2);
        x[k] = f1 && f2 ? (st2){(p.step + s.step) / 2, (p.sync + s.sync) / 2} : f1 ? p : s;
    }
    return lerp(x[0], x[1], rr[0], rr[1], replicas);
}

static st2 measured(const drv_calib_app *a, int32_t placement, int32_t nodes, int32_t replicas,
                    double bsz)
{
    bool found = false;
    if (placement > 0) {
        /* its rows: pl is sorted by placement, so a binary search finds the first */
        int32_t lo = 0, hi = a->npl;
        while (lo < hi) {
            int32_t mid = lo + (hi - lo) / 2;
            if (a->pl[mid].placement < placement)
                lo = mid + 1;
            else
                hi = mid;
        }
        int32_t end = lo;
        while (end < a->npl && a->pl[end].placement == placement)
            end++;
        st2 r = interp_bsz(a->pl + lo, end - lo, placement, 0, 0, bsz, &found);
        if (found)
            return r;
    }
    int32_t n = nodes > 16 ? 16 : nodes, nlo = -1, nhi = -1;
    for (int pass = 0; pass < 2; pass++) {
        const drv_calib_point *v = pass ? a->sc : a->pl;
        int32_t m = pass ? a->nsc : a->npl;
        for (int32_t i = 0; i < m; i++) {
            if (v[i].nodes <= n && v[i].nodes > nlo)
                nlo = v[i].nodes;
            if (v[i].nodes >= n && (nhi < 0 || v[i].nodes < nhi))
                nhi = v[i].nodes;
        }
    }
    if (nlo < 0)
        nlo = nhi;
    if (nhi < 0)
        nhi = nlo;
    bool f1, f2;
    st2 x = interp_layer(a, nlo, replicas, bsz, &f1);
    st2 y = interp_layer(a, nhi, replicas, bsz, &f2);
    if (!f1)
        return y;
    if (!f2)
        return x;
    return lerp(x, y, nlo, nhi, n);
}

void drv_calib_split(const drv_calib_app *a, int32_t replicas, double batch, double *atomic,
                     int32_t *accum)
{
    double local = ceil(batch / replicas - 1e-8);
    double k = ceil(local / a->max_local_bsz - 1e-8) - 1;
    if (replicas == 1 && batch > a->init_bsz && k < 1)
        k = 1;
    if (k < 0)
        k = 0;
    double at = ceil(local / (k + 1) - 1e-8);
    double cap = floor(a->max_bsz / (replicas * (k + 1)));
    if (at > cap && cap >= 1)
        at = cap;
    *atomic = at;
    *accum = (int32_t)k;
}

int drv_calib_measure(const drv_calib *c, int32_t app, const int32_t *gpn, int32_t nn, double batch,
                      drv_calib_sample *out)
{
    const drv_calib_app *a = &c->v[app];
    int32_t nodes = 0, replicas = 0, placement = 0;
    bool digits = true;
    for (int32_t i = 0; i < nn; i++) {
        if (gpn[i] <= 0)
            continue;
        nodes++;
        replicas += gpn[i];
        if (gpn[i] > 9 || nodes > 8)
            digits = false;
        else
            placement = placement * 10 + gpn[i];
    }
    if (replicas == 0)
        return DRV_EINVAL;
    placement = digits ? rotate_min(placement) : 0;
    double atomic;
    int32_t accum;
    drv_calib_split(a, replicas, batch, &atomic, &accum);
    st2 m = measured(a, placement, nodes, replicas, atomic);
    *out = (drv_calib_sample){.nodes = nodes,
                              .replicas = replicas,
                              .atomic = atomic,
                              .accum = accum,
                              .compute = m.step - m.sync,
                              .sync = m.sync,
                              .step = m.step + accum * (m.step - m.sync)};
    return 0;
}

double drv_calib_step_time(const drv_calib *c, int32_t app, const int32_t *gpn, int32_t nn,
                           double batch)
{
    drv_calib_sample s;
    return drv_calib_measure(c, app, gpn, nn, batch, &s) == 0 ? s.step : 0;
}

/* ---- progress ----------------------------------------------------------------------------- */

/* Linear interpolation of a per-epoch quantity between the validated batches around b. */
static double curve_at(const drv_calib_app *a, double b, int32_t e, int which)
{
    int32_t lo = 0, hi = a->ncv - 1;
    for (int32_t k = 0; k < a->ncv; k++) {
        if (a->cv[k].batch <= b)
            lo = k;
        if (a->cv[k].batch >= b) {
            hi = k;
            break;
        }
    }
    if (b >= a->cv[a->ncv - 1].batch)
        lo = hi = a->ncv - 1;
    const double *x = which ? a->cv[lo].grad_var : a->cv[lo].grad_sqr;
    const double *y = which ? a->cv[hi].grad_var : a->cv[hi].grad_sqr;
    double bl = a->cv[lo].batch, bh = a->cv[hi].batch;
    if (lo == hi || bh == bl)
        return x[e];
    return ((b - bl) * y[e] + (bh - b) * x[e]) / (bh - bl);
}

static double progress_at(const drv_calib_app *a, int32_t epoch)
{
    if (epoch == 0)
        return 0;
    double p = INFINITY;
    for (int32_t k = 0; k < a->ncv; k++)
        p = fmin(p, a->cv[k].progress[epoch - 1]);
    return p;
}

double drv_calib_steps(const drv_calib *c, int32_t app, double batch)
{
    const drv_calib_app *a = &c->v[app];
    double scale = batch / a->init_bsz, steps = 0;
    for (int32_t e = 0; e < a->max_epochs; e++) {
        double sqr = curve_at(a, batch, e, 0), var = curve_at(a, batch, e, 1);
        double gain = (var + sqr) / (var / scale + sqr);
        steps += (progress_at(a, e + 1) - progress_at(a, e)) / gain;
    }
    return steps;
}

/* ---- batch size: progress, gain and goodput ------------------------------------------------ */

/* The gain of one step at total batch `batch` in epoch e (progress units per global step). */
double drv_calib_gain(const drv_calib *c, int32_t app, double batch, int32_t epoch)
{
    const drv_calib_app *a = &c->v[app];
    int32_t e = epoch < 0 ? 0 : epoch >= a->max_epochs ? a->max_epochs - 1 : epoch;
    double sqr = curve_at(a, batch, e, 0), var = curve_at(a, batch, e, 1);
    return (var + sqr) / (var / (batch / a->init_bsz) + sqr);
}

void drv_calib_grad(const drv_calib *c, int32_t app, double batch, int32_t epoch, double *sqr,
                    double *var)
{
    const drv_calib_app *a = &c->v[app];
    int32_t e = epoch < 0 ? 0 : epoch >= a->max_epochs ? a->max_epochs - 1 : epoch;
    *sqr = curve_at(a, batch, e, 0);
    *var = curve_at(a, batch, e, 1);
}

double drv_calib_progress(const drv_calib *c, int32_t app, double batch, double steps)
{
    const drv_calib_app *a = &c->v[app];
    for (int32_t e = 0; e < a->max_epochs; e++) {
        double g = drv_calib_gain(c, app, batch, e);
        double need = (progress_at(a, e + 1) - progress_at(a, e)) / g;
        if (steps <= need)
            return progress_at(a, e) + (steps > 0 ? steps : 0) * g;
        steps -= need;
    }
    return progress_at(a, a->max_epochs);
}

double drv_calib_steps_to(const drv_calib *c, int32_t app, double batch, double progress)
{
    const drv_calib_app *a = &c->v[app];
    double steps = 0;
    for (int32_t e = 0; e < a->max_epochs; e++) {
        double p0 = progress_at(a, e), p1 = progress_at(a, e + 1);
        double g = drv_calib_gain(c, app, batch, e);
        if (progress <= p1)
            return steps + (progress > p0 ? progress - p0 : 0) / g;
        steps += (p1 - p0) / g;
    }
    return steps;
}

int32_t drv_calib_epoch(const drv_calib *c, int32_t app, double progress)
{
    const drv_calib_app *a = &c->v[app];
    int32_t e = 0;
    while (e < a->max_epochs - 1 && progress >= progress_at(a, e + 1))
        e++;
    return e;
}

double drv_calib_goodput(const drv_calib *c, int32_t app, const int32_t *gpn, int32_t nn,
                         double batch, int32_t epoch)
{
    double t = drv_calib_step_time(c, app, gpn, nn, batch);
    return t > 0 ? drv_calib_gain(c, app, batch, epoch) / t : 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * Candidate batches: R (the replicas) times a whole local batch l in [max(lo / R, smallest
 * measured local batch), hi / R] (a batch between two multiples of R costs the step time of the
 * larger and gains less). Which l: 96 on a geometric grid over the range, its ends, every
 * measured local size inside it (where the step time bends), and every multiple of the largest
 * local batch (where gradient accumulation adds a pass); at most DRV_CALIB_MAXCAND in all.
 */
int32_t drv_calib_batches(const drv_calib *c, int32_t app, const int32_t *gpn, int32_t nn,
                          double lo, double hi, double *batch, double *step)
{
    const drv_calib_app *a = &c->v[app];
    int32_t r = 0;
    for (int32_t i = 0; i < nn; i++)
        r += gpn[i] > 0 ? gpn[i] : 0;
    if (r == 0)
        return 0;
    double llo = fmax(ceil(lo / r - 1e-9), ceil(a->min_local_bsz - 1e-9)),
           lhi = floor(hi / r + 1e-9);
    if (llo < 1)
        llo = 1;
    if (llo > lhi)
        return 0;
    enum { GRID = 96 };
    double l[DRV_CALIB_MAXCAND];
    int32_t n = 0;
    l[n++] = llo;
    l[n++] = lhi;
    for (int32_t k = 1; k < GRID; k++)
        l[n++] = floor(llo * pow(lhi / llo, (double)k / GRID) + 0.5);
    for (int32_t i = 0; i < a->npl && n < DRV_CALIB_MAXCAND; i++) {
        double v = a->pl[i].local_bsz;
        if (v >= llo && v <= lhi && (i == 0 || v != a->pl[i - 1].local_bsz))
            l[n++] = v;
    }
    for (double m = a->max_local_bsz; m <= lhi && n < DRV_CALIB_MAXCAND; m += a->max_local_bsz)
        if (m >= llo)
            l[n++] = m;
    qsort(l, (size_t)n, sizeof *l, cmp_dbl);
    int32_t out = 0;
    for (int32_t i = 0; i < n; i++) {
        if (out > 0 && l[i] == batch[out - 1] / r)
            continue;
        batch[out] = l[i] * r;
        step[out] = drv_calib_step_time(c, app, gpn, nn, batch[out]);
        out++;
    }
    return out;
}

double drv_calib_best_batch(const drv_calib *c, int32_t app, const int32_t *gpn, int32_t nn,
                            int32_t epoch, double lo, double hi, double *goodput)
{
    double b[DRV_CALIB_MAXCAND], t[DRV_CALIB_MAXCAND];
    int32_t n = drv_calib_batches(c, app, gpn, nn, lo, hi, b, t);
    double best = 0, bestg = 0;
    for (int32_t i = 0; i < n; i++) {
        double g = t[i] > 0 ? drv_calib_gain(c, app, b[i], epoch) / t[i] : 0;
        if (g > bestg) {
            bestg = g;
            best = b[i];
        }
    }
    if (goodput)
        *goodput = bestg;
    return best;
}

/* ---- fit ---------------------------------------------------------------------------------- */

double drv_calib_fit_step(const drv_calib_fit *f, int32_t nodes, int32_t replicas, double local_bsz)
{
    double net = nodes <= 1 ? f->ar + f->br * replicas : f->an + f->bn * replicas;
    return f->ac + f->bc * local_bsz + net;
}

/* Solves the 6x6 system m x = r by Gaussian elimination with partial pivoting. */
static int solve6(double m[6][6], double r[6], double x[6])
{
    for (int i = 0; i < 6; i++) {
        int p = i;
        for (int k = i + 1; k < 6; k++)
            if (fabs(m[k][i]) > fabs(m[p][i]))
                p = k;
        if (fabs(m[p][i]) < 1e-300)
            return DRV_EINVAL;
        for (int k = 0; k < 6; k++) {
            double t = m[i][k];
            m[i][k] = m[p][k];
            m[p][k] = t;
        }
        double t = r[i];
        r[i] = r[p];
        r[p] = t;
        for (int k = i + 1; k < 6; k++) {
            double f = m[k][i] / m[i][i];
            for (int j = i; j < 6; j++)
                m[k][j] -= f * m[i][j];
            r[k] -= f * r[i];
        }
    }
    for (int i = 5; i >= 0; i--) {
        double s = r[i];
        for (int j = i + 1; j < 6; j++)
            s -= m[i][j] * x[j];
        x[i] = s / m[i][i];
    }
    return 0;
}

/*
 * Weighted least squares (weights 1/step^2, so the error minimised is relative) of
 *   step = ac + bc*bsz + [one node] (ar + br*R) + [several] (an + bn*R)
 * over placements.csv. ac and ar are not separable on one node, so ar is pinned at 0 by a
 * small ridge term; the reported fit is what matters.
 */
int drv_calib_fit_app(const drv_calib *c, int32_t app, drv_calib_fit *out)
{
    const drv_calib_app *a = &c->v[app];
    double m[6][6] = {{0}}, r[6] = {0}, x[6] = {0};
    for (int32_t i = 0; i < a->npl; i++) {
        const drv_calib_point *p = &a->pl[i];
        bool one = p->nodes <= 1;
        double f[6] = {1,           p->local_bsz,         0, one ? p->replicas : 0,
                       one ? 0 : 1, one ? 0 : p->replicas};
        double w = 1.0 / (p->step * p->step);
        for (int j = 0; j < 6; j++) {
            for (int k = 0; k < 6; k++)
                m[j][k] += w * f[j] * f[k];
            r[j] += w * f[j] * p->step;
        }
    }
    for (int j = 0; j < 6; j++)
        m[j][j] += 1e-9 * (m[j][j] + 1);
    m[2][2] += 1.0;
    if (solve6(m, r, x) != 0)
        return DRV_EINVAL;
    drv_calib_fit f = {x[0], x[1], x[2], x[3], x[4], x[5], 0, 0, a->npl};
    double ss = 0;
    for (int32_t i = 0; i < a->npl; i++) {
        const drv_calib_point *p = &a->pl[i];
        double e =
            fabs(drv_calib_fit_step(&f, p->nodes, p->replicas, p->local_bsz) - p->step) / p->step;
        ss += e * e;
        f.max_rel = fmax(f.max_rel, e);
    }
    f.rms_rel = a->npl ? sqrt(ss / a->npl) : 0;
    *out = f;
    return 0;
}
