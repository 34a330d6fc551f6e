/*
 * profile.c - a profile as one profile line (the format of policy.h), for whoever holds a
 * profile: the simulator's reports record the profile each run used, the CLI shows those a
 * file defines. It needs only the core's types (a profile names its plugins by their tables),
 * so the simulator reaches it without the policy module. Parsing a line is the policy
 * module's (knobs.c), which knows the plugins by name.
 *
 * Example: gang-fifo formats as
 *     gang=true period=1 queue_order=fifo admit=gang score=least-allocated
 * and a knob value in the shortest form that reads back as the same double (0.1, not
 * 0.10000000000000001).
 */
#include "drover/cycle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Appends to buf at *len, never past n (the text is cut at the end of buf). */
static void put(char *buf, size_t n, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t n, size_t *len, const char *fmt, ...)
{
    if (*len >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *len, n - *len, fmt, ap);
    va_end(ap);
    *len = w < 0 ? n : *len + (size_t)w;
}

/* The shortest %g form that reads back as the same double. */
static void put_number(char *buf, size_t n, size_t *len, double x)
{
    char s[40];
    snprintf(s, sizeof s, "%.15g", x);
    if (strtod(s, NULL) != x)
        snprintf(s, sizeof s, "%.17g", x);
    put(buf, n, len, "%s", s);
}

void drv_profile_format(const drv_profile *p, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
    put(buf, n, &len, "gang=%s period=", p->gang ? "true" : "false");
    put_number(buf, n, &len, p->period);
    if (p->half_life > 0) { /* written only when set: lines of older profiles stay as they were */
        put(buf, n, &len, " half_life=");
        put_number(buf, n, &len, p->half_life);
    }
    if (p->checkpoint_timeout > 0) {
        put(buf, n, &len, " checkpoint_timeout=");
        put_number(buf, n, &len, p->checkpoint_timeout);
    }
    for (int pt = 0; pt < DRV_NPOINTS; pt++) {
        for (int i = 0; i < p->nuse[pt]; i++) {
            const drv_plugin_use *u = &p->use[pt][i];
            if (i == 0)
                put(buf, n, &len, " %s=", drv_point_name(pt));
            put(buf, n, &len, "%s%s", i ? "," : "", u->p ? u->p->name : "?");
            if (pt == DRV_PT_SCORE && u->weight != 1)
                put(buf, n, &len, "*%d", (int)u->weight);
            for (int k = 0; k < u->nknobs; k++) {
                put(buf, n, &len, "%s%s=", k ? ";" : "(", drv_profile_knobs(p, u)[k].name);
                put_number(buf, n, &len, drv_profile_knobs(p, u)[k].value);
            }
            if (u->nknobs)
                put(buf, n, &len, ")");
        }
    }
}
