/*
 * knobs.c - reading plugin knobs against their declared defaults and ranges, and parsing
 * profile lines (format in policy.h).
 */
#include "drover/policy.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
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

/* ---- profile lines ------------------------------------------------------------------------
 *
 * One pass over the text with a cursor (no copy of the line, no tokeniser): a setting is
 * key=value up to white space; a point's value is a list of uses, name[*weight][(k=v;...)],
 * split at commas outside parentheses. Each knob's value becomes a number here, once, into the
 * profile's knob pool; which knobs a plugin has, and their ranges, its init checks when a
 * scheduler is created (drv_knobs_read). The YAML loader (profile_file.c) sets gang and
 * period from typed fields and hands each point's value to drv_profile_set_point.
 * Example: "score=locality*3,least-allocated(x=1)" gives two score uses, weights 3 and 1,
 * the second with one knob {x, 1.0} in the pool. */

typedef struct span {
    const char *s;
    int n;
} span;

static span span_trim(const char *s, const char *e)
{
    while (s < e && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    return (span){s, (int)(e - s)};
}

static bool span_is(span a, const char *lit)
{
    return (size_t)a.n == strlen(lit) && memcmp(a.s, lit, (size_t)a.n) == 0;
}

static int point_by_name(span s)
{
    for (int pt = 0; pt < DRV_NPOINTS; pt++)
        if (span_is(s, drv_point_name(pt)))
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

/* The plugin named s that implements pt, or an error listing those that do. */
static int find_plugin(const drv_profile *p, int pt, span s, const drv_plugin **out, drv_diag *d)
{
    char name[64];
    snprintf(name, sizeof name, "%.*s", s.n, s.s);
    const drv_plugin *pl = drv_plugin_find(name);
    if (pl && implements(pl, pt) && (size_t)s.n < sizeof name) {
        *out = pl;
        return 0;
    }
    char known[512];
    list_plugins_for(pt, known, sizeof known);
    const char *ptn = drv_point_name(pt);
    if (pl)
        return drv_fail(d, DRV_ENOENT,
                        "profile %s: %s: plugin '%.*s' does not implement %s (%s plugins: %s)",
                        p->name, ptn, s.n, s.s, ptn, ptn, known);
    return drv_fail(d, DRV_ENOENT, "profile %s: %s: unknown plugin '%.*s' (%s plugins: %s)",
                    p->name, ptn, s.n, s.s, ptn, known);
}

/* Parses "k=v;k=v" (the text inside a use's parentheses) into the profile's knob pool, for
 * use u. Bounds: DRV_MAX_KNOBS per use, DRV_MAX_PROFILE_KNOBS per profile. */
static int parse_knobs(drv_profile *p, drv_plugin_use *u, span in, drv_diag *d)
{
    const char *s = in.s, *end = in.s + in.n;
    u->knob0 = (int16_t)p->nknobs;
    while (s < end) {
        const char *e = memchr(s, ';', (size_t)(end - s));
        e = e ? e : end;
        span kv = span_trim(s, e);
        s = e < end ? e + 1 : e;
        if (kv.n == 0)
            continue; /* "(a=1;)" or "()" */
        const char *eq = memchr(kv.s, '=', (size_t)kv.n);
        if (!eq)
            return drv_fail(d, DRV_EINVAL, "profile %s: %s(%.*s): expected knob=value", p->name,
                            u->p->name, kv.n, kv.s);
        span name = span_trim(kv.s, eq), val = span_trim(eq + 1, kv.s + kv.n);
        char num[64], *numend;
        snprintf(num, sizeof num, "%.*s", val.n, val.s);
        errno = 0;
        double v = strtod(num, &numend);
        if (errno || val.n == 0 || (size_t)val.n >= sizeof num || *numend || !isfinite(v))
            return drv_fail(d, DRV_EINVAL, "profile %s: %s(%.*s): '%.*s' is not a number", p->name,
                            u->p->name, name.n, name.s, val.n, val.s);
        if (u->nknobs == DRV_MAX_KNOBS)
            return drv_fail(d, DRV_ERANGE, "profile %s: %s: more than %d knobs", p->name,
                            u->p->name, DRV_MAX_KNOBS);
        if (p->nknobs == DRV_MAX_PROFILE_KNOBS)
            return drv_fail(d, DRV_ERANGE, "profile %s: more than %d knobs in all", p->name,
                            DRV_MAX_PROFILE_KNOBS);
        if ((size_t)name.n >= sizeof p->knobs[0].name)
            return drv_fail(d, DRV_EINVAL, "profile %s: %s: knob name '%.*s' is too long", p->name,
                            u->p->name, name.n, name.s);
        drv_knob *k = &p->knobs[p->nknobs++];
        snprintf(k->name, sizeof k->name, "%.*s", name.n, name.s);
        k->value = v;
        u->nknobs++;
    }
    return 0;
}

/* Parses one use, "name[*w][(k=v;k=v)]", at point pt into u. */
static int parse_use(drv_profile *p, int pt, span tok, drv_plugin_use *u, drv_diag *d)
{
    memset(u, 0, sizeof *u);
    u->weight = 1;
    const char *end = tok.s + tok.n;
    const char *open = memchr(tok.s, '(', (size_t)tok.n);
    if (open && end[-1] != ')')
        return drv_fail(d, DRV_EINVAL, "profile %s: %s: '%.*s': expected ')' at the end", p->name,
                        drv_point_name(pt), tok.n, tok.s);
    const char *head_end = open ? open : end;
    const char *star = memchr(tok.s, '*', (size_t)(head_end - tok.s));
    if (star) {
        span w = span_trim(star + 1, head_end);
        char buf[32], *wend;
        snprintf(buf, sizeof buf, "%.*s", w.n, w.s);
        long v = strtol(buf, &wend, 10);
        if (w.n == 0 || (size_t)w.n >= sizeof buf || *wend || v < 1 || v > 1000)
            return drv_fail(d, DRV_EINVAL, "profile %s: %s: weight '%.*s' must be 1..1000", p->name,
                            drv_point_name(pt), w.n, w.s);
        u->weight = (int32_t)v;
    }
    int rc = find_plugin(p, pt, span_trim(tok.s, star ? star : head_end), &u->p, d);
    if (rc)
        return rc;
    if (star && pt != DRV_PT_SCORE)
        return drv_fail(d, DRV_EINVAL, "profile %s: %s: only score plugins take a weight", p->name,
                        drv_point_name(pt));
    return open ? parse_knobs(p, u, (span){open + 1, (int)(end - 1 - (open + 1))}, d) : 0;
}

int drv_profile_set_point(drv_profile *p, int pt, const char *text, size_t len, drv_diag *d)
{
    if (pt < 0 || pt >= DRV_NPOINTS)
        return drv_fail(d, DRV_EINVAL, "profile %s: no extension point %d", p->name, pt);
    span all = span_trim(text, text + len);
    const char *s = all.s, *end = all.s + all.n;
    while (s < end) { /* an empty list adds nothing; a trailing comma ends it */
        const char *e = s;
        int depth = 0;
        while (e < end && (depth || *e != ',')) {
            depth += *e == '(' ? 1 : *e == ')' ? -1 : 0;
            e++;
        }
        span tok = span_trim(s, e);
        if (p->nuse[pt] == DRV_MAX_SLOT_PLUGINS)
            return drv_fail(d, DRV_ERANGE, "profile %s: %s: more than %d plugins", p->name,
                            drv_point_name(pt), DRV_MAX_SLOT_PLUGINS);
        if (tok.n == 0)
            return drv_fail(d, DRV_EINVAL, "profile %s: %s: empty plugin name", p->name,
                            drv_point_name(pt));
        int rc = parse_use(p, pt, tok, &p->use[pt][p->nuse[pt]++], d);
        if (rc)
            return rc;
        s = e < end ? e + 1 : e;
    }
    return 0;
}

void drv_profile_init(drv_profile *p, const char *name)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->gang = true;
    p->period = 1.0;
}

int drv_profile_check(const drv_profile *p, drv_diag *d)
{
    if (p->nuse[DRV_PT_ADMIT] == 0)
        return drv_fail(d, DRV_EINVAL, "profile %s: no admit plugin (add admit=gang, for example)",
                        p->name);
    return 0;
}

/* A profile setting of seconds in [0, max] (what 0 means: zero) into *out. */
static int parse_seconds(drv_profile *p, span key, span val, double max, const char *zero,
                         double *out, drv_diag *d)
{
    char buf[64], *end;
    snprintf(buf, sizeof buf, "%.*s", val.n, val.s);
    double v = strtod(buf, &end);
    if (val.n == 0 || (size_t)val.n >= sizeof buf || *end || !(v >= 0 && v <= max))
        return drv_fail(d, DRV_EINVAL,
                        "profile %s: %.*s: expected seconds in [0, %.0f] (0: %s), found '%.*s'",
                        p->name, key.n, key.s, max, zero, val.n, val.s);
    *out = v;
    return 0;
}

/* One setting of a profile line, key=value. */
static int parse_setting(drv_profile *p, span key, span val, drv_diag *d)
{
    if (span_is(key, "gang")) {
        if (!span_is(val, "true") && !span_is(val, "false"))
            return drv_fail(d, DRV_EINVAL, "profile %s: gang: expected true or false, found '%.*s'",
                            p->name, val.n, val.s);
        p->gang = span_is(val, "true");
        return 0;
    }
    if (span_is(key, "period")) {
        char buf[64], *end;
        snprintf(buf, sizeof buf, "%.*s", val.n, val.s);
        double v = strtod(buf, &end);
        if (val.n == 0 || (size_t)val.n >= sizeof buf || *end || !(v >= 0.01 && v <= 3600))
            return drv_fail(d, DRV_EINVAL,
                            "profile %s: period: expected seconds in [0.01, 3600], found '%.*s'",
                            p->name, val.n, val.s);
        p->period = v;
        return 0;
    }
    if (span_is(key, "half_life"))
        return parse_seconds(p, key, val, DRV_MAX_HALF_LIFE, "shares of now only", &p->half_life,
                             d);
    if (span_is(key, "checkpoint_timeout"))
        return parse_seconds(p, key, val, DRV_MAX_CHECKPOINT_TIMEOUT, "no checkpoint handshake",
                             &p->checkpoint_timeout, d);
    int pt = point_by_name(key);
    if (pt < 0) {
        char known[256] = "gang, period, half_life, checkpoint_timeout";
        for (int i = 0; i < DRV_NPOINTS; i++) {
            strncat(known, ", ", sizeof known - strlen(known) - 1);
            strncat(known, drv_point_name(i), sizeof known - strlen(known) - 1);
        }
        return drv_fail(d, DRV_EINVAL, "profile %s: unknown key '%.*s' (known: %s)", p->name, key.n,
                        key.s, known);
    }
    return drv_profile_set_point(p, pt, val.s, (size_t)val.n, d);
}

int drv_profile_parse(const char *name, const char *line, drv_profile *out, drv_diag *d)
{
    drv_profile p;
    drv_profile_init(&p, name);
    const char *s = line;
    int rc = 0;
    while (!rc) {
        while (*s && isspace((unsigned char)*s))
            s++;
        if (!*s)
            break;
        const char *e = s;
        while (*e && !isspace((unsigned char)*e))
            e++;
        const char *eq = memchr(s, '=', (size_t)(e - s));
        if (!eq)
            rc = drv_fail(d, DRV_EINVAL, "profile %s: '%.*s': expected key=value", name,
                          (int)(e - s), s);
        else
            rc = parse_setting(&p, (span){s, (int)(eq - s)}, (span){eq + 1, (int)(e - eq - 1)}, d);
        s = e;
    }
    if (!rc)
        rc = drv_profile_check(&p, d);
    if (!rc)
        *out = p;
    return rc;
}
