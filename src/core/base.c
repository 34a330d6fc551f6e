/*
 * base.c - error text, the allocation wrapper with its failure-injection hook, the log sink and
 * the random number generator.
 */
#include "drover/base.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *drv_strerror(int code)
{
    switch (code) {
    case DRV_OK:
        return "success";
    case DRV_ENOMEM:
        return "out of memory";
    case DRV_EINVAL:
        return "invalid input";
    case DRV_EIO:
        return "input/output error";
    case DRV_ENOENT:
        return "not found";
    case DRV_EPARSE:
        return "parse error";
    case DRV_ERANGE:
        return "value out of range";
    case DRV_EEXIST:
        return "already exists";
    case DRV_EINVARIANT:
        return "invariant violated";
    case DRV_ENOTSUP:
        return "not supported";
    default:
        return "unknown error";
    }
}

int drv_fail(drv_diag *d, int code, const char *fmt, ...)
{
    if (d) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(d->msg, sizeof d->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* ---- allocation -------------------------------------------------------------------------- */

static _Thread_local long fail_countdown; /* 0: off; n: the nth allocation from now fails */

void drv_alloc_fail_at(long nth)
{
    fail_countdown = nth;
}

long drv_alloc_fail_pending(void)
{
    return fail_countdown;
}

static bool should_fail(void)
{
    if (fail_countdown <= 0)
        return false;
    return --fail_countdown == 0;
}

bool drv_alloc_injected_failure(void)
{
    return should_fail();
}

void *drv_malloc(size_t n)
{
    return should_fail() ? NULL : malloc(n ? n : 1);
}

void *drv_calloc(size_t count, size_t size)
{
    return should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *drv_realloc(void *p, size_t n)
{
    return should_fail() ? NULL : realloc(p, n ? n : 1);
}

char *drv_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *r = drv_malloc(n);
    if (r)
        memcpy(r, s, n);
    return r;
}

void drv_free(void *p)
{
    free(p);
}

int drv_grow(void *arr, size_t elem, int32_t *cap, int32_t need)
{
    if (need <= *cap)
        return 0;
    int64_t ncap = *cap ? *cap : 8;
    while (ncap < need)
        ncap *= 2;
    if (ncap > INT32_MAX)
        return DRV_ENOMEM;
    void **p = arr;
    void *q = drv_realloc(*p, (size_t)ncap * elem);
    if (!q)
        return DRV_ENOMEM;
    *p = q;
    *cap = (int32_t)ncap;
    return 0;
}

/* ---- logging ----------------------------------------------------------------------------- */

static void log_stderr(enum drv_log_level lvl, const char *msg, void *arg)
{
    static const char *const tag[] = {"error", "warning", "info", "debug"};
    (void)arg;
    fprintf(stderr, "drover: %s: %s\n", tag[lvl], msg);
}

/*
 * The sink. Where logs go is one decision for the whole process (like syslog's openlog): an
 * explicit logger object would be threaded through every module and every plugin call for a
 * choice only src/cli makes, once, at start-up. What must not be is a data race: `drover run`
 * logs from its informer, binder and scheduler threads while a test may swap the sink. So the
 * three settings are one record guarded by a mutex, and the sink is called with it held: once
 * drv_log_set returns, the old sink is never called again (its argument may be freed), and
 * lines from different threads never interleave. The level is also kept in an atomic so a
 * message that is not shown costs no lock. Bound: a sink must not call drv_log (it would wait
 * for itself).
 */
typedef struct log_sink {
    drv_log_fn fn;
    void *arg;
} log_sink;

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static log_sink log_to = {log_stderr, NULL}; /* guarded by log_mu */
static _Atomic int log_max = DRV_LOG_WARN;

void drv_log_set(drv_log_fn fn, void *arg, enum drv_log_level max)
{
    pthread_mutex_lock(&log_mu);
    log_to = (log_sink){fn ? fn : log_stderr, arg};
    atomic_store(&log_max, (int)max);
    pthread_mutex_unlock(&log_mu);
}

void drv_log(enum drv_log_level lvl, const char *fmt, ...)
{
    if ((int)lvl > atomic_load(&log_max))
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_mu);
    if ((int)lvl <= atomic_load(&log_max)) /* the level may have changed meanwhile */
        log_to.fn(lvl, buf, log_to.arg);
    pthread_mutex_unlock(&log_mu);
}

/* ---- random numbers ---------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void drv_rng_seed(drv_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t drv_rng_next(drv_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double drv_rng_uniform(drv_rng *r)
{
    return (double)(drv_rng_next(r) >> 11) * 0x1.0p-53;
}

double drv_rng_exp(drv_rng *r, double mean)
{
    return -mean * log(1.0 - drv_rng_uniform(r));
}

int64_t drv_rng_range(drv_rng *r, int64_t lo, int64_t hi)
{
    if (hi <= lo)
        return lo;
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(drv_rng_next(r) % span);
}

double drv_hash01(uint64_t a, uint64_t b)
{
    uint64_t x = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL);
    return (double)(splitmix64(&x) >> 11) * 0x1.0p-53;
}
