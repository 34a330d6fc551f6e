/*
 * calib_types.c - the calibrated model per GPU type (issue 27; calib.h): which profile entry
 * times a job on a type (placements-TYPE.csv, Sia's layout, read by calibrate.c), the directory
 * listing that finds the types, and Sia's per-model slowdown factors (SLOWDOWNS, fitted to its
 * testbed) applied to every measured time of a model.
 */
#include "calib_int.h"

#include "drover/text.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int calib_open_model(const drv_calib_app *a, const char *dir, char *path, size_t n, DIR **dh,
                     drv_diag *d)
{
    snprintf(path, n, "%s/%s", dir, a->name);
    *dh = opendir(path);
    if (!*dh)
        return drv_fail(d, DRV_EIO, "%s: cannot open directory: %s", path, strerror(errno));
    return 0;
}

/* The GPU types of model a: the TYPE of every dir/<model>/placements-TYPE.csv (a name: text.h's
 * rule, else an error), sorted, into types[0..*n) (at most max). */
int calib_list_types(const drv_calib_app *a, const char *dir, char (*types)[32], int32_t max,
                     int32_t *n, drv_diag *d)
{
    char path[1024];
    DIR *dh;
    int rc = calib_open_model(a, dir, path, sizeof path, &dh, d);
    if (rc)
        return rc;
    *n = 0;
    for (struct dirent *e = readdir(dh); e && !rc; e = readdir(dh)) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "placements-", 11) != 0 || len < 16 ||
            strcmp(e->d_name + len - 4, ".csv") != 0)
            continue;
        size_t tl = len - 15;
        if (tl >= 32 || *n == max) {
            rc = drv_fail(d, DRV_ERANGE, "%s/%s: a GPU type of at most 31 bytes, at most %d types",
                          path, e->d_name, (int)max);
            break;
        }
        memcpy(types[*n], e->d_name + 11, tl);
        types[*n][tl] = 0;
        if (!drv_name_ok(types[*n], 31))
            rc = drv_fail(d, DRV_EPARSE, "%s/%s: GPU type: expected a name, found '%s'", path,
                          e->d_name, types[*n]);
        (*n)++;
    }
    closedir(dh);
    for (int32_t i = 1; i < *n; i++) /* name order: the entries do not follow readdir's */
        for (int32_t j = i; j > 0 && strcmp(types[j - 1], types[j]) > 0; j--) {
            char t[32];
            memcpy(t, types[j], 32);
            memcpy(types[j], types[j - 1], 32);
            memcpy(types[j - 1], t, 32);
        }
    return rc;
}

int32_t drv_calib_for_type(const drv_calib *c, int32_t app, const char *type, bool fallback)
{
    if (app < 0 || app >= c->n)
        return -1;
    if (type && type[0]) {
        for (int32_t i = c->n; i < c->nall; i++)
            if (c->v[i].base == app && strcmp(c->v[i].type, type) == 0)
                return i;
    } else if (!c->v[app].no_base) {
        return app; /* untyped: placements.csv */
    }
    return fallback ? app : -1;
}

int drv_calib_set_slowdown(drv_calib *c, const char *name, double factor)
{
    if (!(factor > 0) || !isfinite(factor))
        return DRV_EINVAL;
    int32_t app = drv_calib_find(c, name);
    if (app < 0)
        return DRV_ENOENT;
    for (int32_t i = 0; i < c->nall; i++) {
        drv_calib_app *a = &c->v[i];
        if (a->base != app)
            continue;
        double f = factor / a->slowdown; /* a second setting replaces the first */
        for (int32_t k = 0; k < a->npl; k++) {
            a->pl[k].step *= f;
            a->pl[k].sync *= f;
        }
        for (int32_t k = 0; k < a->nsc; k++) {
            a->sc[k].step *= f;
            a->sc[k].sync *= f;
        }
        a->slowdown = factor;
    }
    return 0;
}

int drv_calib_parse_slowdowns(drv_calib *c, const char *spec, drv_diag *d)
{
    char buf[1024];
    if (strlen(spec) >= sizeof buf)
        return drv_fail(d, DRV_ERANGE, "slowdowns: at most %zu bytes", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *it = strtok_r(buf, ",", &save); it; it = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(it, '=');
        double f;
        if (!eq || eq == it || drv_parse_decimal(eq + 1, &f) != 0)
            return drv_fail(d, DRV_EPARSE, "slowdowns: '%s': expected MODEL=FACTOR", it);
        *eq = 0;
        int rc = drv_calib_set_slowdown(c, it, f);
        if (rc == DRV_ENOENT)
            return drv_fail(d, rc, "slowdowns: '%s': no such model in the profiles", it);
        if (rc)
            return drv_fail(d, rc, "slowdowns: %s: expected a factor above 0, found '%s'", it,
                            eq + 1);
    }
    return 0;
}
