/*
 * text.c - the name rule and the decimal number parser every input reader uses (text.h).
 *
 * Numbers: the syntax is checked by hand first, then strtod converts. strtod alone takes a
 * leading space, "0x10", "inf", "nan" and "1e-320" (a subnormal, with ERANGE); the check takes
 * exactly  [+-] (D+ [. D*] | . D+) [(e|E) [+-] D+]. Example: "2.5e3" -> 2500; "1." -> 1;
 * " 2", "0x10", "1e", "e5", "--1" are refused.
 */
#include "drover/text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
}

bool drv_name_ok(const char *s, size_t max)
{
    if (!s || !*s)
        return false;
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= max || !name_char(s[n]))
            return false;
    return true;
}

const char *drv_text_shown(char *buf, size_t n, const char *s)
{
    size_t k = 0, i = 0;
    if (n == 0)
        return buf;
    for (; s && s[i] && i < 64 && k + 5 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f)
            buf[k++] = (char)c;
        else
            k += (size_t)snprintf(buf + k, n - k, "\\x%02x", c);
    }
    if (s && s[i] && k + 4 < n) {
        memcpy(buf + k, "...", 3);
        k += 3;
    }
    buf[k] = 0;
    return buf;
}

int drv_name_fail(drv_diag *d, const char *where, const char *s, size_t max)
{
    char shown[300];
    return drv_fail(d, DRV_EINVAL,
                    "%s: expected a name of 1 to %zu letters, digits, '-', '_' or '.', found '%s'",
                    where, max, drv_text_shown(shown, sizeof shown, s));
}

int drv_name_check(drv_diag *d, const char *where, const char *s, size_t max)
{
    return drv_name_ok(s, max) ? 0 : drv_name_fail(d, where, s, max);
}

char *drv_next_line(char **cursor)
{
    char *s = *cursor;
    if (!s || !*s)
        return NULL;
    char *nl = strchr(s, '\n');
    if (nl)
        *nl = 0;
    *cursor = nl ? nl + 1 : NULL;
    return s;
}

/* Skips digits at *p; how many. */
static size_t skip_digits(const char **p)
{
    size_t n = 0;
    while (**p >= '0' && **p <= '9')
        (*p)++, n++;
    return n;
}

int drv_parse_decimal(const char *s, double *out)
{
    const char *p = s;
    if (!p)
        return DRV_EPARSE;
    if (*p == '+' || *p == '-')
        p++;
    size_t digits = skip_digits(&p);
    if (*p == '.') {
        p++;
        digits += skip_digits(&p);
    }
    if (!digits)
        return DRV_EPARSE;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!skip_digits(&p))
            return DRV_EPARSE;
    }
    if (*p)
        return DRV_EPARSE;
    errno = 0;
    double v = strtod(s, NULL);
    if (errno == ERANGE || !isfinite(v))
        return DRV_ERANGE;
    *out = v;
    return 0;
}
