/*
 * base.h - error codes, allocation, logging, resources and random numbers: the vocabulary
 * every Drover module shares.
 *
 * Errors follow libuv: a function returns 0 or a negative DRV_E* code, and leaves its outputs
 * untouched on failure. Where a caller must show a person what was wrong (a bad file, a bad
 * field), the function also takes a drv_diag and writes one line of text into it, naming the
 * source: "cluster.yaml:12: nodes[3].cpu: expected a quantity such as 32 or 500m".
 * Scheduling outcomes (a pod does not fit) are results, never errors.
 */
#ifndef DROVER_BASE_H
#define DROVER_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    DRV_OK = 0,
    DRV_ENOMEM = -1,     /* an allocation failed */
    DRV_EINVAL = -2,     /* a bad argument or bad input */
    DRV_EIO = -3,        /* reading or writing a file failed */
    DRV_ENOENT = -4,     /* a named thing does not exist */
    DRV_EPARSE = -5,     /* input is not well formed */
    DRV_ERANGE = -6,     /* a value is out of its allowed range */
    DRV_EEXIST = -7,     /* a named thing exists already */
    DRV_EINVARIANT = -8, /* the cluster state broke an invariant */
    DRV_ENOTSUP = -9,    /* not supported */
};

/* Text for a DRV_E* code; never NULL. */
const char *drv_strerror(int code);

/* One line of human-readable context for an error. Filled by the function that failed. */
typedef struct drv_diag {
    char msg[512];
} drv_diag;

/* Formats into d (if d is non-NULL) and returns code, so callers can `return drv_fail(...)`. */
int drv_fail(drv_diag *d, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * Allocation. Everything goes through these so that tests can make the Nth allocation fail
 * (drv_alloc_fail_at). They return NULL on failure like malloc; drv_free accepts NULL.
 */
void *drv_malloc(size_t n);
void *drv_calloc(size_t count, size_t size);
void *drv_realloc(void *p, size_t n);
char *drv_strdup(const char *s);
void drv_free(void *p);
/* Grows *arr (of elements of size elem) so it holds at least need elements; *cap is updated. */
int drv_grow(void *arr, size_t elem, int32_t *cap, int32_t need);

/* Test hook: the nth allocation from now (1 = the next) fails; 0 turns failures off.
 * Thread-local, so tests running in parallel threads do not disturb each other. */
void drv_alloc_fail_at(long nth);
/* For allocators built on these (the cycle's arena): true when the allocation being made now
 * is the one drv_alloc_fail_at planned to fail (it counts as one allocation). */
bool drv_alloc_injected_failure(void);
/* Test hook: allocations still to come before the planned failure (0 once it has happened or
 * when none is planned). After a call, > 0 means the call made fewer than nth allocations. */
long drv_alloc_fail_pending(void);

/* Logging. Only src/cli decides where logs go; modules just log. */
enum drv_log_level { DRV_LOG_ERROR, DRV_LOG_WARN, DRV_LOG_INFO, DRV_LOG_DEBUG };
typedef void (*drv_log_fn)(enum drv_log_level lvl, const char *msg, void *arg);
void drv_log(enum drv_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Sets the sink and the most verbose level shown; the default writes warnings to stderr.
 * Thread-safe: drv_log may run on any thread; once this returns, the old sink is not called
 * again. The sink is called under a lock, one message at a time, and must not call drv_log. */
void drv_log_set(drv_log_fn fn, void *arg, enum drv_log_level max);

/* A vector of schedulable resources. CPU in millicores, memory in bytes, GPUs whole. */
typedef struct drv_res {
    int64_t cpu;
    int64_t mem;
    int64_t gpu;
} drv_res;

/* How many dimensions a has room in (0-3): least-allocated averages its shares over these. */
static inline int drv_res_dims(drv_res a)
{
    return (a.cpu > 0) + (a.mem > 0) + (a.gpu > 0);
}
/* Per dimension, the larger. */
static inline drv_res drv_res_max(drv_res a, drv_res b)
{
    return (drv_res){a.cpu > b.cpu ? a.cpu : b.cpu, a.mem > b.mem ? a.mem : b.mem,
                     a.gpu > b.gpu ? a.gpu : b.gpu};
}
/* Per dimension, the smaller. */
static inline drv_res drv_res_min(drv_res a, drv_res b)
{
    return (drv_res){a.cpu < b.cpu ? a.cpu : b.cpu, a.mem < b.mem ? a.mem : b.mem,
                     a.gpu < b.gpu ? a.gpu : b.gpu};
}
static inline drv_res drv_res_add(drv_res a, drv_res b)
{
    return (drv_res){a.cpu + b.cpu, a.mem + b.mem, a.gpu + b.gpu};
}
static inline drv_res drv_res_sub(drv_res a, drv_res b)
{
    return (drv_res){a.cpu - b.cpu, a.mem - b.mem, a.gpu - b.gpu};
}
static inline drv_res drv_res_scale(drv_res a, int64_t k)
{
    return (drv_res){a.cpu * k, a.mem * k, a.gpu * k};
}
/* True when a fits inside b in every dimension. */
static inline bool drv_res_fits(drv_res a, drv_res b)
{
    return a.cpu <= b.cpu && a.mem <= b.mem && a.gpu <= b.gpu;
}
static inline bool drv_res_nonneg(drv_res a)
{
    return a.cpu >= 0 && a.mem >= 0 && a.gpu >= 0;
}

/*
 * Deterministic random numbers (xoshiro256**, seeded through splitmix64). Every random choice
 * in Drover draws from an explicit drv_rng so that one seed gives one outcome.
 */
typedef struct drv_rng {
    uint64_t s[4];
} drv_rng;
void drv_rng_seed(drv_rng *r, uint64_t seed);
uint64_t drv_rng_next(drv_rng *r);
double drv_rng_uniform(drv_rng *r);                        /* [0, 1) */
double drv_rng_exp(drv_rng *r, double mean);               /* exponential with that mean */
int64_t drv_rng_range(drv_rng *r, int64_t lo, int64_t hi); /* uniform in [lo, hi] */
/* A stateless hash of (a, b) into [0, 1): for noise that must not depend on call order. */
double drv_hash01(uint64_t a, uint64_t b);

#endif
