/*
 * quantity.c - Kubernetes resource quantities ("1500m", "2Gi", "1e3"), as the API server
 * writes them, into integers (kube_types.h): a validated decimal number times its suffix's
 * multiplier, rounded up as Kubernetes rounds (fractional millicores up). Shared by every
 * decoder of requests, allocatable and quotas (objects.c, objects_doc.c, objects_sched.c).
 *
 * Example: "1500m" is 1500 millicores (1 as a whole quantity, rounded up to 2); "2Gi" is
 * 2147483648; "1e3" is 1000; "1.5.0" and "12x" are DRV_EINVAL.
 */
#include "drover/kube_types.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Splits s into a validated decimal number and a suffix multiplier. */
static int quantity(const char *s, double *value)
{
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {{"", 1},
                 {"m", 1e-3},
                 {"k", 1e3},
                 {"M", 1e6},
                 {"G", 1e9},
                 {"T", 1e12},
                 {"P", 1e15},
                 {"E", 1e18},
                 {"Ki", 1024.0},
                 {"Mi", 1048576.0},
                 {"Gi", 1073741824.0},
                 {"Ti", 1099511627776.0},
                 {"Pi", 1125899906842624.0},
                 {"Ei", 1152921504606846976.0}};
    const char *p = s;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, digits++;
    }
    if (!digits)
        return DRV_EINVAL;
    if ((*p == 'e' || *p == 'E') && p[1] != 0 && p[1] != 'i') { /* exponent, not "Ei" */
        const char *q = p + 1;
        if (*q == '+' || *q == '-')
            q++;
        if (*q < '0' || *q > '9')
            return DRV_EINVAL;
        while (*q >= '0' && *q <= '9')
            q++;
        p = q;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(p, units[i].suffix)) {
            char num[64];
            if ((size_t)(p - s) >= sizeof num)
                return DRV_EINVAL;
            memcpy(num, s, (size_t)(p - s));
            num[p - s] = 0;
            *value = strtod(num, NULL) * units[i].mult;
            return isfinite(*value) && *value < 9.0e18 ? 0 : DRV_ERANGE;
        }
    return DRV_EINVAL;
}

int drv_kube_quantity_milli(const char *s, int64_t *out)
{
    double v;
    int rc = quantity(s, &v);
    if (rc || v * 1000.0 >= 9.0e18)
        return rc ? rc : DRV_ERANGE;
    *out = (int64_t)ceil(v * 1000.0 - 1e-9); /* Kubernetes rounds fractional millis up */
    return 0;
}

int drv_kube_quantity(const char *s, int64_t *out)
{
    double v;
    int rc = quantity(s, &v);
    if (rc)
        return rc;
    *out = (int64_t)ceil(v - 1e-9);
    return 0;
}
