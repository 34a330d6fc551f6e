/*
 * catalogue.c - reads the model-family catalogue (CSV) and the copy compiled into the binary.
 * The reader checks the header by name, so columns are self-describing, and reports every bad
 * cell as file:line:column: field: what was expected.
 */
#include "drover/model.h"
#include "drover/file.h"
#include "drover/text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char drv_builtin_models_csv[]; /* generated from data/models.csv */

static const char *const columns[] = {"name",  "kind",  "compute_s",   "model_mb", "beta0",
                                      "beta1", "beta2", "target_loss", "noise"};
enum { NCOL = sizeof columns / sizeof columns[0] };
/* Families a catalogue may hold: far above any real one (7 built in), and low enough that the
 * scan for a duplicate name per row, and drv_catalogue_find per job, stay cheap. */
enum { MAX_FAMILIES = 1000 };
/* The largest catalogue file read: 1 MiB, ten times what 1,000 families of ~100 bytes take. */
#define MAX_CATALOGUE_BYTES (1ULL << 20)

void drv_catalogue_fini(drv_catalogue *cat)
{
    drv_free(cat->v);
    cat->v = NULL;
    cat->n = cat->cap = 0;
}

int32_t drv_catalogue_find(const drv_catalogue *cat, const char *name)
{
    for (int32_t i = 0; i < cat->n; i++)
        if (strcmp(cat->v[i].name, name) == 0)
            return i;
    return -1;
}

/* Splits line (modified in place) at commas into at most max fields; returns the count. */
static int split(char *line, char **f, int max, int *col)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        col[n] = (int)(p - line) + 1;
        f[n++] = p;
        char *c = strchr(p, ',');
        if (!c)
            break;
        *c = 0;
        p = c + 1;
    }
    return n;
}

static int parse_num(const char *file, int line, int col, const char *field, const char *s,
                     double lo, double *out, drv_diag *d)
{
    double v;
    if (drv_parse_decimal(s, &v) != 0 || v < lo)
        return drv_fail(d, DRV_EINVAL, "%s:%d:%d: %s: expected a number >= %g, found '%s'", file,
                        line, col, field, lo, s);
    *out = v;
    return 0;
}

int drv_catalogue_parse(drv_catalogue *cat, const char *name, const char *text, drv_diag *d)
{
    drv_catalogue out = {0};
    char *copy = drv_strdup(text);
    if (!copy)
        return drv_fail(d, DRV_ENOMEM, "%s: out of memory", name);
    int rc = 0, lineno = 0;
    bool header = false;
    char *next = copy;
    while (next && !rc) {
        char *line = next;
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = 0;
        next = nl ? nl + 1 : NULL;
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[--len] = 0;
        if (len == 0 || line[0] == '#')
            continue;
        char *f[NCOL + 1];
        int col[NCOL + 1];
        int nf = split(line, f, NCOL + 1, col);
        if (!header) {
            for (int i = 0; i < NCOL && !rc; i++)
                if (i >= nf || strcmp(f[i], columns[i]) != 0)
                    rc = drv_fail(d, DRV_EPARSE,
                                  "%s:%d:%d: header: expected column '%s', found '%s'", name,
                                  lineno, i < nf ? col[i] : 1, columns[i], i < nf ? f[i] : "");
            header = true;
            continue;
        }
        if (nf != NCOL) {
            rc = drv_fail(d, DRV_EPARSE, "%s:%d: expected %d comma-separated fields, found %d",
                          name, lineno, NCOL, nf);
            break;
        }
        drv_family fam;
        memset(&fam, 0, sizeof fam);
        if (!drv_name_ok(f[0], sizeof fam.name - 1)) { /* it is a cell of jobs-*.csv */
            char where[600];
            snprintf(where, sizeof where, "%s:%d:1: name", name, lineno);
            rc = drv_name_fail(d, where, f[0], sizeof fam.name - 1);
            break;
        }
        snprintf(fam.name, sizeof fam.name, "%s", f[0]);
        snprintf(fam.kind, sizeof fam.kind, "%s", f[1]);
        double *num[] = {&fam.compute_s, &fam.model_mb,    &fam.beta0, &fam.beta1,
                         &fam.beta2,     &fam.target_loss, &fam.noise};
        for (int i = 0; i < 7 && !rc; i++)
            rc = parse_num(name, lineno, col[i + 2], columns[i + 2], f[i + 2], 0, num[i], d);
        if (rc)
            break;
        if (fam.beta0 <= 0 || fam.beta1 <= 0) {
            rc = drv_fail(d, DRV_EINVAL, "%s:%d: beta0 and beta1 must be > 0", name, lineno);
            break;
        }
        if (fam.target_loss <= fam.beta2) {
            rc = drv_fail(
                d, DRV_EINVAL,
                "%s:%d:%d: target_loss: %g is never reached (the curve's floor beta2 is %g)", name,
                lineno, col[7], fam.target_loss, fam.beta2);
            break;
        }
        if (out.n == MAX_FAMILIES) {
            rc = drv_fail(d, DRV_ERANGE, "%s:%d: more than %d model families", name, lineno,
                          MAX_FAMILIES);
            break;
        }
        if (drv_catalogue_find(&out, fam.name) >= 0) {
            rc = drv_fail(d, DRV_EEXIST, "%s:%d:1: name: '%s' is listed twice", name, lineno,
                          fam.name);
            break;
        }
        if (drv_grow(&out.v, sizeof *out.v, &out.cap, out.n + 1) != 0) {
            rc = drv_fail(d, DRV_ENOMEM, "%s: out of memory", name);
            break;
        }
        out.v[out.n++] = fam;
    }
    drv_free(copy);
    if (!rc && !header)
        rc = drv_fail(d, DRV_EPARSE, "%s: no header line", name);
    if (!rc && out.n == 0)
        rc = drv_fail(d, DRV_EPARSE, "%s: no model families", name);
    if (rc) {
        drv_catalogue_fini(&out);
        return rc;
    }
    drv_catalogue_fini(cat);
    *cat = out;
    return 0;
}

int drv_catalogue_load(drv_catalogue *cat, const char *path, drv_diag *d)
{
    char *buf;
    size_t len;
    /* A model catalogue is a few KiB (1,000 families at most): a larger file is the wrong one. */
    int rc = drv_file_read_max(path, MAX_CATALOGUE_BYTES, "a model catalogue", &buf, &len, d);
    if (rc)
        return rc;
    rc = drv_catalogue_parse(cat, path, buf, d);
    drv_free(buf);
    return rc;
}

int drv_catalogue_builtin(drv_catalogue *cat, drv_diag *d)
{
    return drv_catalogue_parse(cat, "data/models.csv (built in)", drv_builtin_models_csv, d);
}
