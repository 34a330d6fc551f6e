/*
 * priority.c - combined multi-factor priority for the queue order (seed 004: combined
 * priority scheduling on Volcano; the weighted sum follows Slurm's multifactor plugin).
 *
 * A pending job's priority is
 *     w_user·Û + w_class·T̂ + w_wait·Ŵ + w_par·N̂ + w_share·Ŝ
 * where Û is the submitting user's priority, T̂ the job's priority class, Ŵ the time it has
 * waited, N̂ its parallelism (requested workers) and Ŝ the user's fair share within the job's
 * queue, inverted (the user's dominant share of the queue's quota, usage.c, decayed over time
 * with the profile's half_life: the less the
 * user's bound pods in that queue take, the higher), each min-max normalised to [0, 1] over the
 * jobs queued right now (a factor equal for all of them contributes 0 to everybody). The user
 * factor is thus the user's priority and its fair share. Higher goes first; a tie falls back to
 * submission order (the core's rule). Ŝ exists only once the state has queues (issue 14): with
 * none it is 0 for everybody and costs nothing.
 *
 * Worked example (defaults 0.4/0.3/0.2/0.1): two queued jobs, A (user prio 1, class 100,
 * waited 60 s, 8 workers) and B (user prio 3, class 0, waited 0 s, 2 workers):
 * A = 0.4·0 + 0.3·1 + 0.2·1 + 0.1·1 = 0.6, B = 0.4·1 = 0.4, so A goes first.
 *
 * Intra-job order (PS, then chief, then workers) and gang admission are the core's
 * drv_ctx_place_gang; PS↔worker affinity and PS anti-affinity are locality.c.
 *
 * Cost: a job's factors are read from it once while it waits (a pool by job id). The
 * normalisation bounds come from two heaps per factor (least and greatest on top) that take
 * each newcomer in and drop a job that left when it reaches the top: O(pending) id lookups to
 * find the newcomers, O(log pending) per job that came or went; when the jobs are those of the
 * last cycle - in the same order, or all of them in the last list (drv_ctx_queue_kept) and as
 * many - nothing at all. A key is then O(factors that vary). When
 * the bounds are those of the last cycle, every key is too (queue_kept), and the core asks keys of
 * newcomers only. With queues and w_share > 0, the users' use is summed once per cycle
 * (O(live log live)), the bounds are taken over every job (a share moves without its job), and
 * keys are never kept.
 */
#include "drover/policy.h"

#include <math.h>
#include <string.h>

static const drv_knob_spec prio_knobs[] = {
    {"w_user", 0.4, 0, 1, "weight of the user's priority"},
    {"w_class", 0.3, 0, 1, "weight of the job's priority class"},
    {"w_wait", 0.2, 0, 1, "weight of the time waited"},
    {"w_par", 0.1, 0, 1, "weight of the parallelism (requested workers)"},
    {"w_share", 0.2, 0, 1,
     "weight of the user's fair share within the job's queue (less used, higher; with queues)"},
};
enum { NKNOBS = sizeof prio_knobs / sizeof prio_knobs[0] };

/* A binary heap of (key, job), the least key on top. */
typedef struct bheap {
    double *key;
    int32_t *job;
    int32_t n, cap;
} bheap;

typedef struct prio_state {
    double w[DRV_PRIO_NFACTORS];
    double lo[DRV_PRIO_NFACTORS], hi[DRV_PRIO_NFACTORS]; /* bounds over this cycle's queue */
    bool kept; /* the bounds are those of the previous cycle, to the bit: so is every key */
    /* The factors that vary over this cycle's queue (lo < hi), in factor order, with their
     * bound and range: combine's terms that are not 0 (active). */
    int nact;
    int act[DRV_PRIO_NFACTORS];
    double act_lo[DRV_PRIO_NFACTORS], act_range[DRV_PRIO_NFACTORS];
    /* The factors of the jobs handed to recent queue_begins, in a pool: a job's factors never
     * change (its specification fixes them; job ids are never reused), so a job is read once
     * while it waits, however the core reorders the queue. slot[job] is the job's entry when
     * pool_job[slot[job]] == job (anything else in slot is stale: no entry). */
    int32_t *slot; /* per job id, up to cap_slot */
    int32_t cap_slot;
    int32_t *pool_job;                   /* per entry: its job */
    double (*pool_f)[DRV_PRIO_NFACTORS]; /* per entry: key_factors, the share as of seen */
    uint32_t *pool_seen;                 /* per entry: the last list (epoch) with the job */
    int32_t npool, cap_pool;
    uint32_t epoch; /* lists handed to queue_begin so far, the same list again not counted */
    bool pooled;    /* this cycle's jobs all have entries (else keys read the jobs) */
    int32_t *last;  /* the jobs handed to the last queue_begin, in that order */
    int32_t nlast, cap_last;
    bool last_ok; /* last holds them (no allocation failed) */
    /* The state of the last queue_begin and the core's number of the list it was handed: the
     * core's count of jobs kept from its last list (drv_ctx_queue_kept) speaks of `last` when
     * the list is the next one of the same state. */
    const drv_state *last_st; /* NULL when the last jobs were not all the queued ones */
    uint64_t last_list;
    /* Per factor, the queued jobs' values in two heaps, the least on top: [f][0] the value
     * (lo), [f][1] minus it (hi). Lazy: a job that left stays until it comes to the top and is
     * seen not to be queued. Valid (heaps_ok) while every queued job has an entry in each. */
    bheap heap[DRV_PRIO_NFACTORS][2];
    bool heaps_ok;
    /* The share factor, this cycle: on when the state has queues and w_share > 0. */
    bool share_on;
    drv_res capacity;  /* the cluster's, at queue_begin */
    drv_user_use *use; /* per (queue, user), the use of their bound pods (fairshare.c) */
    int32_t nuse, cap_use;
} prio_state;

const char *drv_priority_factor_name(int f)
{
    static const char *const names[] = {"user", "class", "wait", "parallelism", "share"};
    return f >= 0 && f < DRV_PRIO_NFACTORS ? names[f] : "?";
}

static void raw_factors(const drv_job *j, double now, double *v)
{
    v[DRV_PRIO_USER] = j->user_priority;
    v[DRV_PRIO_CLASS] = j->priority;
    v[DRV_PRIO_WAIT] = now > j->submit ? now - j->submit : 0;
    v[DRV_PRIO_PARALLEL] = j->role[DRV_ROLE_WORKER].replicas;
    v[DRV_PRIO_SHARE] = 0; /* not of the job alone: share_factor */
}

/* The share factor's value for the key: minus the user's share within the job's queue, so
 * the least served user normalises to 1. 0 when off. */
static double share_factor(const prio_state *p, const drv_state *st, const drv_job *j)
{
    if (!p->share_on)
        return 0;
    drv_res u = drv_user_use_find(p->use, p->nuse, j->queue, j->user);
    return -drv_user_fair_share(st, j->queue, j->user, u, p->capacity); /* decayed: usage.c */
}

/* Turns the share factor on for this cycle when it applies (the state has queues, and it
 * weighs something or is to be shown all the same): sums the users' use. 0 or DRV_ENOMEM
 * (then the factor is off: the order would be wrong, so the caller fails). */
static int share_begin(prio_state *p, const drv_state *st, bool show)
{
    p->share_on = (show || p->w[DRV_PRIO_SHARE] > 0) && st->nqueues > 0;
    if (!p->share_on)
        return 0;
    p->capacity = drv_cluster_capacity(st);
    if (drv_user_use_build(st, &p->use, &p->nuse, &p->cap_use) != 0) {
        p->share_on = false;
        return DRV_ENOMEM;
    }
    return 0;
}

/* The factors as normalised: the time waited as minus the submission time. Min-max
 * normalisation does not see the shift by now, so the order does not change while time passes
 * and nothing else does (the plugin is timeless, docs/cycle.md), to the last bit. */
static void key_factors(const drv_job *j, double *v)
{
    raw_factors(j, 0, v);
    v[DRV_PRIO_WAIT] = -j->submit;
}

static bool queued(const drv_job *j)
{
    return j->phase == DRV_JOB_PENDING && drv_job_needs_pods(j);
}

static void bounds_empty(double *lo, double *hi)
{
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++) {
        lo[f] = INFINITY;
        hi[f] = -INFINITY;
    }
}

/* Widens the bounds to take in a job's factors v (key_factors). */
static void bounds_add(double *lo, double *hi, const double *v)
{
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++) {
        lo[f] = v[f] < lo[f] ? v[f] : lo[f];
        hi[f] = v[f] > hi[f] ? v[f] : hi[f];
    }
}

static double combine(const double *w, const double *lo, const double *hi, const double *v,
                      double *norm)
{
    double total = 0;
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++) {
        double x = hi[f] > lo[f] ? (v[f] - lo[f]) / (hi[f] - lo[f]) : 0;
        if (norm)
            norm[f] = x;
        total += w[f] * x;
    }
    return total;
}

/* Notes the factors that vary, for keyed_total. */
static void note_active(prio_state *p)
{
    p->nact = 0;
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++)
        if (p->hi[f] > p->lo[f]) {
            p->act[p->nact] = f;
            p->act_lo[p->nact] = p->lo[f];
            p->act_range[p->nact++] = p->hi[f] - p->lo[f];
        }
}

/* combine(p->w, p->lo, p->hi, v, NULL), to the bit: the same operations on the factors that
 * vary, in the same order; the others add w * 0 = +0, which changes no sum but -0, and a sum
 * that starts at +0 never is -0 (no term is: v - lo is +0 when v == lo). */
static double keyed_total(const prio_state *p, const double *v)
{
    double total = 0;
    for (int k = 0; k < p->nact; k++) {
        int f = p->act[k];
        total += p->w[f] * ((v[f] - p->act_lo[k]) / p->act_range[k]);
    }
    return total;
}

static int prio_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[NKNOBS];
    int rc = drv_knobs_read(prio_knobs, NKNOBS, knobs, nknobs, v, d);
    if (rc)
        return rc;
    prio_state *p = drv_calloc(1, sizeof *p);
    if (!p)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++)
        p->w[f] = v[f];
    *state = p;
    return 0;
}

static void prio_fini(void *state)
{
    prio_state *p = state;
    drv_free(p->slot);
    drv_free(p->pool_job);
    drv_free(p->pool_f);
    drv_free(p->pool_seen);
    drv_free(p->last);
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++)
        for (int k = 0; k < 2; k++) {
            drv_free(p->heap[f][k].key);
            drv_free(p->heap[f][k].job);
        }
    drv_free(p->use);
    drv_free(p);
}

/* The job's pool entry, or -1. */
static int32_t entry_of(const prio_state *p, int32_t job)
{
    if (job >= p->cap_slot)
        return -1;
    int32_t t = p->slot[job];
    return t >= 0 && t < p->npool && p->pool_job[t] == job ? t : -1;
}

/* Room for n more entries and a slot for every job of st. Keeps only the entries of the jobs
 * handed to the last queue_begin when the others outnumber them (amortised O(1) per entry: a
 * pool holds at most about twice the queue). 0 or DRV_ENOMEM. */
static int pool_reserve(prio_state *p, const drv_state *st, int32_t n)
{
    if (p->npool > 2 * n + 64 && p->last_ok) {
        for (int32_t i = 0; i < p->nlast; i++) { /* mark them (the epoch is not yet the new) */
            int32_t t = entry_of(p, p->last[i]);
            if (t >= 0)
                p->pool_seen[t] = p->epoch;
        }
        int32_t k = 0;
        for (int32_t t = 0; t < p->npool; t++)
            if (p->pool_seen[t] == p->epoch) {
                p->pool_job[k] = p->pool_job[t];
                memcpy(p->pool_f[k], p->pool_f[t], sizeof p->pool_f[k]);
                p->pool_seen[k] = p->pool_seen[t];
                p->slot[p->pool_job[k]] = k;
                k++;
            }
        p->npool = k;
    }
    int32_t old = p->cap_slot;
    if (drv_grow(&p->slot, sizeof *p->slot, &p->cap_slot, st->njobs) != 0)
        return DRV_ENOMEM;
    for (int32_t i = old; i < p->cap_slot; i++)
        p->slot[i] = -1;
    int32_t need = p->npool + n, c1 = p->cap_pool, c2 = p->cap_pool, c3 = p->cap_pool;
    if (drv_grow(&p->pool_job, sizeof *p->pool_job, &c1, need) != 0 ||
        drv_grow(&p->pool_f, sizeof *p->pool_f, &c2, need) != 0 ||
        drv_grow(&p->pool_seen, sizeof *p->pool_seen, &c3, need) != 0)
        return DRV_ENOMEM;
    p->cap_pool = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    return 0;
}

/* The factors of a job of this cycle's list, from its entry (made on first sight), marked as
 * in the list; v when the pool has no room. */
static double *factors_of(prio_state *p, const drv_state *st, int32_t job, double *v)
{
    int32_t t = p->pooled ? entry_of(p, job) : -1;
    if (t >= 0) {
        p->pool_seen[t] = p->epoch;
        return p->pool_f[t];
    }
    double *f = v;
    if (p->pooled) { /* read once while the job waits */
        t = p->npool++;
        p->pool_job[t] = job;
        p->pool_seen[t] = p->epoch;
        p->slot[job] = t;
        f = p->pool_f[t];
    }
    key_factors(&st->jobs[job], f);
    f[DRV_PRIO_SHARE] = 0;
    return f;
}

/* ---- the bounds, kept in heaps ------------------------------------------------------------ */

static void heap_down(bheap *h, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, m = i;
        if (l < h->n && h->key[l] < h->key[m])
            m = l;
        if (l + 1 < h->n && h->key[l + 1] < h->key[m])
            m = l + 1;
        if (m == i)
            return;
        double k = h->key[i];
        int32_t j = h->job[i];
        h->key[i] = h->key[m];
        h->job[i] = h->job[m];
        h->key[m] = k;
        h->job[m] = j;
        i = m;
    }
}

/* Room for n entries. 0 or DRV_ENOMEM (cap then still what both arrays hold). */
static int heap_room(bheap *h, int32_t n)
{
    int32_t c1 = h->cap, c2 = h->cap;
    int rc = drv_grow(&h->key, sizeof *h->key, &c1, n);
    if (!rc)
        rc = drv_grow(&h->job, sizeof *h->job, &c2, n);
    h->cap = c1 < c2 ? c1 : c2;
    return rc ? DRV_ENOMEM : 0;
}

static int heap_push(bheap *h, double key, int32_t job)
{
    if (heap_room(h, h->n + 1) != 0)
        return DRV_ENOMEM;
    int32_t i = h->n++;
    while (i > 0 && key < h->key[(i - 1) / 2]) {
        h->key[i] = h->key[(i - 1) / 2];
        h->job[i] = h->job[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->key[i] = key;
    h->job[i] = job;
    return 0;
}

/* The least key of a job still queued (popping those that left), or INFINITY. */
static double heap_least(bheap *h, const drv_state *st)
{
    while (h->n > 0 && !drv_state_is_queued(st, h->job[0])) {
        h->n--;
        h->key[0] = h->key[h->n];
        h->job[0] = h->job[h->n];
        heap_down(h, 0);
    }
    return h->n > 0 ? h->key[0] : INFINITY;
}

/* The heaps made again from the jobs (their entries made). 0 or DRV_ENOMEM (heaps_ok false). */
static int heaps_build(prio_state *p, const drv_state *st, const int32_t *jobs, int32_t n)
{
    p->heaps_ok = false;
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++)
        for (int k = 0; k < 2; k++) {
            if (heap_room(&p->heap[f][k], n) != 0)
                return DRV_ENOMEM;
            p->heap[f][k].n = n;
        }
    for (int32_t i = 0; i < n; i++) {
        double v[DRV_PRIO_NFACTORS], *fv = factors_of(p, st, jobs[i], v);
        for (int f = 0; f < DRV_PRIO_NFACTORS; f++) {
            p->heap[f][0].key[i] = fv[f];
            p->heap[f][1].key[i] = -fv[f];
            p->heap[f][0].job[i] = p->heap[f][1].job[i] = jobs[i];
        }
    }
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++)
        for (int k = 0; k < 2; k++)
            for (int32_t i = n / 2 - 1; i >= 0; i--)
                heap_down(&p->heap[f][k], i);
    p->heaps_ok = true;
    return 0;
}

/*
 * The bounds over this cycle's jobs from the heaps, without shares. The core hands exactly the
 * state's queued jobs (drv_plugin.queue_begin): the first `kept` were in the last list, so in
 * the heaps, and the rest were not (drv_ctx_queue_kept; kept 0 when the last list was not the
 * core's last). Of the rest, a job whose entry is marked with the last list's epoch is in the
 * heaps too; the others are new and go in (a job taken for new, the marks being older than
 * the list, is only there twice). A heap's top that is no longer queued is dropped until one
 * is: the bounds are those over the queued jobs, to the bit. O(n - kept) id lookups, O(log n)
 * per newcomer and per job that left; the heaps are made again when stale entries outnumber the
 * queue. False when the heaps cannot serve (then every job is read).
 */
static bool bounds_heaps(prio_state *p, const drv_state *st, const int32_t *jobs, int32_t n,
                         int32_t kept, double *lo, double *hi)
{
    if (!p->heaps_ok || n != st->nqueued)
        return false;
    uint32_t prev = p->epoch - 1; /* the last list's (queue_begin counted this one) */
    for (int32_t i = kept; i < n; i++) {
        int32_t t = entry_of(p, jobs[i]);
        if (t >= 0 && p->pool_seen[t] == prev) { /* in the last list: in the heaps */
            p->pool_seen[t] = p->epoch;
            continue;
        }
        double v[DRV_PRIO_NFACTORS], *fv = factors_of(p, st, jobs[i], v);
        for (int f = 0; f < DRV_PRIO_NFACTORS; f++)
            if (heap_push(&p->heap[f][0], fv[f], jobs[i]) != 0 ||
                heap_push(&p->heap[f][1], -fv[f], jobs[i]) != 0)
                return p->heaps_ok = false;
    }
    int32_t most = 0; /* entries in the largest heap: stale ones pile up where none is popped */
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++)
        for (int k = 0; k < 2; k++)
            most = p->heap[f][k].n > most ? p->heap[f][k].n : most;
    if (most > 2 * n + 64 && heaps_build(p, st, jobs, n) != 0)
        return false;
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++) {
        lo[f] = heap_least(&p->heap[f][0], st);
        hi[f] = -heap_least(&p->heap[f][1], st);
    }
    return true;
}

/* The normalisation bounds over the cycle's pending jobs - what queued() selects, given by the
 * core: no pass over every live job. */
static void prio_begin(const drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    prio_state *p = state;
    const drv_state *st = drv_ctx_state(c);
    double lo[DRV_PRIO_NFACTORS], hi[DRV_PRIO_NFACTORS];
    bool shared = p->share_on; /* last cycle's */
    if (share_begin(p, st, false) != 0) {
        p->share_on = shared; /* as the last cycle left it: this one does not count */
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    bool fresh = p->share_on || shared || !p->last_ok || !p->pooled;
    uint64_t list;
    int32_t kept = drv_ctx_queue_kept(c, &list); /* jobs[0..kept) were in the core's last list */
    if (list != p->last_list + 1 || p->last_st != st || kept > n)
        kept = 0; /* that list was not the one handed here last */
    p->last_list = list;
    /* The very jobs of the last cycle (a third of the cycles of the Philly replay, in the same
     * order): the same factors without shares, so the same bounds and keys. As many as last
     * time and all of them in the last list (kept == n, O(1): the core counts them; an empty
     * list too), they are the same ones, in whatever order; else the lists are compared. */
    if (!fresh && n == p->nlast &&
        (kept == n || memcmp(jobs, p->last, (size_t)n * sizeof *jobs) == 0)) {
        p->kept = true; /* the same list: its marks stand */
        return;
    }
    p->pooled = pool_reserve(p, st, n) == 0;
    p->epoch++; /* a new list: factors_of marks its jobs' entries */
    if (fresh || !p->pooled || !bounds_heaps(p, st, jobs, n, kept, lo, hi)) {
        bounds_empty(lo, hi);
        for (int32_t i = 0; i < n; i++) {
            double v[DRV_PRIO_NFACTORS], *f = factors_of(p, st, jobs[i], v);
            f[DRV_PRIO_SHARE] = share_factor(p, st, &st->jobs[jobs[i]]); /* moves (0: off) */
            bounds_add(lo, hi, f);
        }
        /* The heaps serve the next cycles, without shares (a share moves without its job). */
        p->heaps_ok = false;
        if (!p->share_on && p->pooled)
            heaps_build(p, st, jobs, n);
    }
    p->last_ok = drv_grow(&p->last, sizeof *p->last, &p->cap_last, n) == 0;
    p->last_st = n == st->nqueued ? st : NULL;
    if (p->last_ok) {
        if (n > 0)
            memcpy(p->last, jobs, (size_t)n * sizeof *jobs);
        p->nlast = n;
    }
    /* A job's factors never change but for its share, so without shares its key changes only
     * with the bounds. */
    p->kept =
        !p->share_on && memcmp(lo, p->lo, sizeof lo) == 0 && memcmp(hi, p->hi, sizeof hi) == 0;
    memcpy(p->lo, lo, sizeof lo);
    memcpy(p->hi, hi, sizeof hi);
    note_active(p);
}

static bool prio_kept(const drv_ctx *c, void *state)
{
    (void)c;
    return ((const prio_state *)state)->kept;
}

/* Smaller first: the combined priority, negated (higher priority first), normalised by the
 * bounds prio_begin took this cycle (the core calls it before any key). */
static double prio_key(const drv_ctx *c, void *state, int32_t job)
{
    prio_state *p = state;
    /* An entry's factors are the job's; with shares, only once handed this cycle. */
    int32_t t = p->pooled ? entry_of(p, job) : -1;
    if (t >= 0 && (!p->share_on || p->pool_seen[t] == p->epoch))
        return -keyed_total(p, p->pool_f[t]);
    double v[DRV_PRIO_NFACTORS];
    const drv_state *st = drv_ctx_state(c);
    key_factors(&st->jobs[job], v);
    v[DRV_PRIO_SHARE] = share_factor(p, st, &st->jobs[job]);
    return -combine(p->w, p->lo, p->hi, v, NULL);
}

int drv_priority_explain(const drv_state *st, double now, int32_t job, const drv_knob *knobs,
                         int nknobs, drv_priority_breakdown *out, drv_diag *d)
{
    double w[NKNOBS];
    int rc = drv_knobs_read(prio_knobs, NKNOBS, knobs, knobs ? nknobs : 0, w, d);
    if (rc)
        return rc;
    if (job < 0 || job >= st->njobs)
        return drv_fail(d, DRV_ENOENT, "no job with id %d", (int)job);
    drv_priority_breakdown b = {0};
    prio_state p = {.w = {0}}; /* the share factor's table, as a cycle would build it */
    memcpy(p.w, w, sizeof p.w);
    if (share_begin(&p, st, true) != 0) /* shown even at weight 0 */
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    double lo[DRV_PRIO_NFACTORS], hi[DRV_PRIO_NFACTORS];
    /* Over the queued jobs and the one explained, which need not be live yet (`drover sim
     * --explain` enters it into the state at its first cycle, still DRV_JOB_FUTURE): without
     * its own factors in the bounds its normalised values fell outside [0, 1]. */
    double v[DRV_PRIO_NFACTORS];
    key_factors(&st->jobs[job], v);
    v[DRV_PRIO_SHARE] = share_factor(&p, st, &st->jobs[job]);
    bounds_empty(lo, hi);
    bounds_add(lo, hi, v);
    b.queued = 1;
    DRV_FOR_LIVE(st, i)
    if (i != job && queued(&st->jobs[i])) {
        double u[DRV_PRIO_NFACTORS];
        key_factors(&st->jobs[i], u);
        u[DRV_PRIO_SHARE] = share_factor(&p, st, &st->jobs[i]);
        bounds_add(lo, hi, u);
        b.queued++;
    }
    raw_factors(&st->jobs[job], now, b.raw);
    for (int f = 0; f < DRV_PRIO_NFACTORS; f++)
        b.weight[f] = w[f];
    b.raw[DRV_PRIO_SHARE] = v[DRV_PRIO_SHARE] != 0 ? -v[DRV_PRIO_SHARE] : 0; /* the share */
    b.total = combine(w, lo, hi, v, b.norm);
    drv_free(p.use);
    *out = b;
    return 0;
}

/* Timeless but for decayed shares (the profile's half_life > 0), which move as time passes
 * without a change of the cluster: then a quiet cycle may order differently at the next
 * period. */
static double prio_wake(const drv_ctx *c, void *state)
{
    const prio_state *p = state;
    return p->w[DRV_PRIO_SHARE] > 0 && drv_ctx_state(c)->nqueues > 0 &&
                   drv_ctx_state(c)->half_life > 0
               ? -INFINITY
               : INFINITY;
}

const drv_plugin drv_plugin_priority = {
    .name = "priority",
    .timeless = true,
    .doc = "queue order: weighted user priority, class, waiting time, parallelism (Volcano-style)",
    .init = prio_init,
    .fini = prio_fini,
    .queue_begin = prio_begin,
    .queue_key = prio_key,
    .queue_kept = prio_kept,
    .wake = prio_wake,
    .starts_blind = drv_starts_blind,
};
