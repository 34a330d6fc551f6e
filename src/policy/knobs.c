/*
 * knobs.c - reading plugin knobs against their declared defaults and ranges, and parsing
 * profile lines (format in policy.h).
 */
#include "drover/policy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int drv_knobs_read(const drv_knob_spec *spec, int nspec, const drv_knob *knobs, int nknobs,
                   double *vals, drv_diag *d)
{
    for (int i = 0; i < nspec; i++)
        vals[i] = spec[i].def;
    for (int k = 0; k < nknobs; k++) {
        int i = 0;
        while (i < nspec && strcmp(spec[i].name, knobs[k].name) != 0)
            i++;
        if (i == nspec) {
            char known[256] = "";
            for (int j = 0; j < nspec; j++) {
                strncat(known, j ? ", " : "", sizeof known - strlen(known) - 1);
                strncat(known, spec[j].name, sizeof known - strlen(known) - 1);
            }
            return drv_fail(d, DRV_EINVAL, "unknown knob '%s' (known: %s)", knobs[k].name,
                            nspec ? known : "none");
        }
        if (!(knobs[k].value >= spec[i].lo && knobs[k].value <= spec[i].hi))
            return drv_fail(d, DRV_ERANGE, "knob %s=%g is out of range [%g, %g]", spec[i].name,
                            knobs[k].value, spec[i].lo, spec[i].hi);
        vals[i] = knobs[k].value;
    }
    return 0;
}

/* ---- profile lines ------------------------------------------------------------------------ */

static int point_by_name(const char *s)
{
    for (int pt = 0; pt < DRV_NPOINTS; pt++)
        if (strcmp(drv_point_name(pt), s) == 0)
            return pt;
    return -1;
}

/* Does plugin p implement point pt? */
static bool implements(const drv_plugin *p, int pt)
{
    switch (pt) {
    case DRV_PT_QUEUE_ORDER:
        return p->queue_cmp != NULL || p->queue_key != NULL;
    case DRV_PT_ADMIT:
        return p->admit != NULL;
    case DRV_PT_FILTER:
        return p->filter != NULL;
    case DRV_PT_SCORE:
        return p->score != NULL;
    case DRV_PT_SCALE:
        return p->scale != NULL;
    case DRV_PT_REALLOCATE:
        return p->reallocate != NULL;
    case DRV_PT_MIGRATE:
        return p->migrate != NULL;
    default:
        return false;
    }
}

static void list_plugins_for(int pt, char *buf, size_t n)
{
    int np;
    const drv_plugin *const *ps = drv_plugins(&np);
    buf[0] = 0;
    for (int i = 0; i < np; i++)
        if (implements(ps[i], pt)) {
            strncat(buf, buf[0] ? ", " : "", n - strlen(buf) - 1);
            strncat(buf, ps[i]->name, n - strlen(buf) - 1);
        }
}

/* Parses "name[*w][(k=v;k=v)]" into u. */
static int parse_use(const char *prof, int pt, char *tok, drv_plugin_use *u, drv_diag *d)
{
    memset(u, 0, sizeof *u);
    u->weight = 1;
    char *knobs = strchr(tok, '(');
    if (knobs) {
        char *close = strrchr(knobs, ')');
        if (!close || close[1])
            return drv_fail(d, DRV_EINVAL, "profile %s: %s: '%s': expected ')' at the end", prof,
                            drv_point_name(pt), tok);
        *knobs++ = 0;
        *close = 0;
    }
    char *star = strchr(tok, '*');
    if (star) {
        *star++ = 0;
        char *end;
        long w = strtol(star, &end, 10);
        if (*end || w < 1 || w > 1000)
            return drv_fail(d, DRV_EINVAL, "profile %s: %s: weight '%s' must be 1..1000", prof,
                            drv_point_name(pt), star);
        u->weight = (int32_t)w;
    }
    u->p = drv_plugin_find(tok);
    if (!u->p || !implements(u->p, pt)) {
        char known[512];
        list_plugins_for(pt, known, sizeof known);
        if (u->p)
            return drv_fail(
                d, DRV_ENOENT, "profile %s: %s: plugin '%s' does not implement %s (%s plugins: %s)",
                prof, drv_point_name(pt), tok, drv_point_name(pt), drv_point_name(pt), known);
        return drv_fail(d, DRV_ENOENT, "profile %s: %s: unknown plugin '%s' (%s plugins: %s)", prof,
                        drv_point_name(pt), tok, drv_point_name(pt), known);
    }
    if (star && pt != DRV_PT_SCORE)
        return drv_fail(d, DRV_EINVAL, "profile %s: %s: only score plugins take a weight", prof,
                        drv_point_name(pt));
    if (knobs && *knobs) {
        char *save = NULL;
        for (char *kv = strtok_r(knobs, ";", &save); kv; kv = strtok_r(NULL, ";", &save)) {
            char *eq = strchr(kv, '=');
            if (!eq)
                return drv_fail(d, DRV_EINVAL, "profile %s: %s(%s): expected knob=value", prof,
                                u->p->name, kv);
            *eq = 0;
            char *end;
            errno = 0;
            double v = strtod(eq + 1, &end);
            if (errno || end == eq + 1 || *end || !isfinite(v))
                return drv_fail(d, DRV_EINVAL, "profile %s: %s(%s): '%s' is not a number", prof,
                                u->p->name, kv, eq + 1);
            if (u->nknobs == DRV_MAX_KNOBS)
                return drv_fail(d, DRV_ERANGE, "profile %s: %s: more than %d knobs", prof,
                                u->p->name, DRV_MAX_KNOBS);
            if (strlen(kv) >= sizeof u->knobs[0].name)
                return drv_fail(d, DRV_EINVAL, "profile %s: %s: knob name '%s' is too long", prof,
                                u->p->name, kv);
            snprintf(u->knobs[u->nknobs].name, sizeof u->knobs[0].name, "%s", kv);
            u->knobs[u->nknobs].value = v;
            u->nknobs++;
        }
    }
    return 0;
}

int drv_profile_parse(const char *name, const char *line, drv_profile *out, drv_diag *d)
{
    drv_profile p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "%s", name);
    p.gang = true;
    p.period = 1.0;
    size_t len = strlen(line);
    char *buf = drv_malloc(len + 1);
    if (!buf)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    memcpy(buf, line, len + 1);
    int rc = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, " \t\n", &save); tok && !rc;
         tok = strtok_r(NULL, " \t\n", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            rc = drv_fail(d, DRV_EINVAL, "profile %s: '%s': expected key=value", name, tok);
            break;
        }
        *eq = 0;
        char *val = eq + 1;
        if (strcmp(tok, "gang") == 0) {
            if (strcmp(val, "true") && strcmp(val, "false"))
                rc = drv_fail(d, DRV_EINVAL, "profile %s: gang: expected true or false, found '%s'",
                              name, val);
            p.gang = strcmp(val, "true") == 0;
            continue;
        }
        if (strcmp(tok, "period") == 0) {
            char *end;
            double v = strtod(val, &end);
            if (*end || !(v >= 0.01 && v <= 3600))
                rc = drv_fail(d, DRV_EINVAL,
                              "profile %s: period: expected seconds in [0.01, 3600], found '%s'",
                              name, val);
            p.period = v;
            continue;
        }
        int pt = point_by_name(tok);
        if (pt < 0) {
            char known[256] = "gang, period";
            for (int i = 0; i < DRV_NPOINTS; i++) {
                strncat(known, ", ", sizeof known - strlen(known) - 1);
                strncat(known, drv_point_name(i), sizeof known - strlen(known) - 1);
            }
            rc = drv_fail(d, DRV_EINVAL, "profile %s: unknown key '%s' (known: %s)", name, tok,
                          known);
            break;
        }
        /* Split the list at commas outside parentheses. */
        char *s = val;
        while (*s && !rc) {
            char *e = s;
            int depth = 0;
            while (*e && (depth || *e != ',')) {
                depth += *e == '(' ? 1 : *e == ')' ? -1 : 0;
                e++;
            }
            char saved = *e;
            *e = 0;
            if (p.nuse[pt] == DRV_MAX_SLOT_PLUGINS)
                rc = drv_fail(d, DRV_ERANGE, "profile %s: %s: more than %d plugins", name, tok,
                              DRV_MAX_SLOT_PLUGINS);
            else if (!*s)
                rc = drv_fail(d, DRV_EINVAL, "profile %s: %s: empty plugin name", name, tok);
            else
                rc = parse_use(name, pt, s, &p.use[pt][p.nuse[pt]++], d);
            s = saved ? e + 1 : e;
        }
    }
    drv_free(buf);
    if (!rc && p.nuse[DRV_PT_ADMIT] == 0)
        rc = drv_fail(d, DRV_EINVAL, "profile %s: no admit plugin (add admit=gang, for example)",
                      name);
    if (!rc)
        *out = p;
    return rc;
}
