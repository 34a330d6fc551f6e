/*
 * elastic.c - the three-phase elastic loop of DRAGON (seed 001), also run, with symmetric
 * release and growth, by the autoscaling operator (seed 000). Source: DRAGON's released
 * controller (Lin et al., "DRAGON: a dynamic scheduling and scaling controller for managing
 * distributed deep learning jobs in Kubernetes cluster"); docs/sources.md and docs/policies.md for
 * the details.
 *
 * Each cycle (the profile's period, 15 s for DRAGON):
 *  1. Gang admission (admit point): walk the queue in order; start a job if all its PS pods
 *     and at least minReplicas workers fit — at the requested size when it fits, else at the
 *     largest size in [min, requested) that does — otherwise skip it (no partial placement).
 *     Where pods go is the profile's score plugins (locality: one node if possible).
 *  2. Starvation relief (scale point): when the first job still waiting has waited at least
 *     starve_wait, take workers above their minimum from running jobs — jobs in queue order
 *     (symmetric: always the job with the most workers above its minimum), each job's workers
 *     not on its PS node first, never a PS pod nor worker 0 — and before each removal try to
 *     place the waiting job at its minimum. Once it fits, emit the removals (EVICT … SCALE per
 *     victim) and its placement; if it never fits, nothing happens.
 *  3. Growth (scale point): when quiet seconds have passed since the last admission or scale
 *     and nobody waits, give running jobs more workers up to maxReplicas: DRAGON fills jobs in
 *     queue order, each as far as it fits; symmetric mode adds one worker at a time to the job
 *     with the fewest workers relative to its maximum, round robin.
 * A scale of a running job is a checkpoint-restart (the driver pauses it).
 *
 * Worked example: 1 node of 16 CPUs, job A running with 1 PS (2 CPUs) + 3 workers (4 CPUs, min
 * 1); job B (1 PS + 1 worker, min 1) arrives: no room (2 CPUs free). After 30 s, relief evicts
 * A's workers 2 and 1 (not worker 0), trying B after each: after the first, 6 CPUs free fit B.
 * Decisions: EVICT A/worker-2, SCALE A 2, SCALE B 1, BIND B/ps-0, BIND B/worker-0.
 *
 * Cost: relief is O(running jobs × their workers × a gang placement) in the worst case, once per
 * cycle, for the queue head only.
 */
#include "elastic.h"
#include "drover/calib.h"

#include "progress.h"

#include <math.h>
#include <string.h>

int drv_elastic_new(void **state, const drv_elastic_cfg *cfg, drv_diag *d)
{
    drv_elastic *e = drv_calloc(1, sizeof *e);
    if (!e)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    e->cfg = *cfg;
    e->last_action = -INFINITY;
    *state = e;
    return 0;
}

void drv_elastic_free(void *state)
{
    drv_elastic *e = state;
    if (!e)
        return;
    drv_free(e->queue);
    drv_free(e->known);
    drv_free(e->fixed);
    drv_free(e);
}

/* Number of the job's pods bound in the cycle's assumed state. */
static int32_t bound_pods(const drv_ctx *c, int32_t job)
{
    const drv_job *j = &drv_ctx_state(c)->jobs[job];
    int32_t n = 0;
    for (int32_t k = 0; k < j->pod_count; k++)
        n += drv_ctx_pod_node(c, j->pod_base + k) >= 0;
    return n;
}

/* A batch-adaptive job (calib.h) that this plugin leaves to another (knob adaptive=0). */
static bool left_alone(const drv_ctx *c, const drv_elastic *e, int32_t job)
{
    const drv_calib_jobs *m = drv_ctx_snap(c)->model;
    return e->cfg.skip_adaptive && m && m->nlive_adaptive > 0 && drv_calib_job_adaptive(m, job);
}

/* Is the job's worker count fixed (max <= min)? Read once per job (drv_elastic.fixed). */
static bool fixed_size(const drv_elastic *e, const drv_state *st, int32_t job)
{
    int32_t w = job / 64;
    uint64_t bit = (uint64_t)1 << (job % 64);
    if (w < e->cap_known && (e->known[w] & bit))
        return (e->fixed[w] & bit) != 0;
    const drv_rolespec *r = &st->jobs[job].role[DRV_ROLE_WORKER];
    bool f = r->max <= r->min;
    if (w < e->cap_known) {
        e->known[w] |= bit;
        e->fixed[w] |= f ? bit : 0;
    }
    return f;
}

/* The first live job with id >= from not known to have a fixed size, or -1: the fixed ones
 * masked out a word at a time without a read - O(live / 64) for a cluster of fixed-size jobs,
 * rather than a call per live job. */
static int32_t next_sizable(const drv_elastic *e, const drv_state *st, int32_t from)
{
    return drv_jobset_next(&st->live, st->njobs, from, e->fixed, e->cap_known); /* fixed: known */
}

/* Room in the known and fixed bitmaps for every job of st; on failure, as they were. */
static void fixed_room(drv_elastic *e, const drv_state *st)
{
    int32_t need = st->njobs / 64 + 1, c1 = e->cap_known, c2 = e->cap_known;
    if (need <= e->cap_known || drv_grow(&e->known, sizeof *e->known, &c1, need) != 0 ||
        drv_grow(&e->fixed, sizeof *e->fixed, &c2, need) != 0)
        return;
    int32_t cap = c1 < c2 ? c1 : c2;
    memset(e->known + e->cap_known, 0, (size_t)(cap - e->cap_known) * sizeof *e->known);
    memset(e->fixed + e->cap_known, 0, (size_t)(cap - e->cap_known) * sizeof *e->fixed);
    e->cap_known = cap;
}

/* Places the job's gang at the largest worker count in (above, top] that fits, trying from top
 * down: 1 when placed, 0 when none fits (or top <= above), DRV_ENOMEM. At most top - above gang
 * placements. */
static int place_largest(drv_ctx *c, int32_t job, int32_t top, int32_t above)
{
    for (int32_t k = top; k > above; k--) {
        int rc = drv_ctx_place_gang(c, job, k);
        if (rc != 0)
            return rc;
    }
    return 0;
}

void drv_elastic_admit(drv_ctx *c, void *state, const int32_t *jobs, int32_t n)
{
    drv_elastic *e = state;
    const drv_state *st = drv_ctx_state(c);
    fixed_room(e, st);
    if (drv_grow(&e->queue, sizeof *e->queue, &e->cap_queue, n) == 0) {
        for (int32_t i = 0; i < n; i++)
            e->queue[i] = jobs[i];
        e->nqueue = n;
    } else {
        e->nqueue = 0;
        drv_ctx_fail(c, DRV_ENOMEM); /* relief would not see the queue's head */
        return;
    }
    if (drv_ctx_queue_stuck(c))
        return; /* every size from lo up fails, changing nothing (lo >= min(min, want)) */
    /* Most of a long queue cannot start at any size from lo up (lo >= min(min, want)): told
     * by the cycle's record of the job, without reading it, and passed over. */
    for (int32_t i = drv_ctx_queued_skip(c, 0, jobs, n); i < n;
         i = drv_ctx_queued_skip(c, i + 1, jobs, n)) {
        const drv_job *j = &st->jobs[jobs[i]];
        const drv_rolespec *w = &j->role[DRV_ROLE_WORKER];
        if (left_alone(c, e, jobs[i]))
            continue;
        int32_t want = j->target[DRV_ROLE_WORKER];
        int32_t lo = w->min < want ? w->min : want;
        /* (0 without the multiplication and ceil when there is no share: DRAGON's default) */
        int32_t share = e->cfg.start_share > 0 ? (int32_t)ceil(e->cfg.start_share * want) : 0;
        if (share > lo)
            lo = share; /* a job started far below its size runs slowly for its whole life */
        if (e->cfg.start_wait > 0 && drv_ctx_now(c) - j->submit < e->cfg.start_wait)
            lo = want; /* not yet: room at its size may come soon */
        if (!drv_ctx_gang_room(c, jobs[i], lo))
            continue; /* no size from want down to lo fits, and trying changes nothing */
        int rc = place_largest(c, jobs[i], want, lo - 1);
        if (rc < 0)
            return;
        if (rc == 1)
            e->last_action = drv_ctx_now(c);
    }
}

/* The first queued job that this cycle has not placed, or -1. */
static int32_t waiting_head(const drv_ctx *c, const drv_elastic *e)
{
    for (int32_t i = 0; i < e->nqueue; i++)
        if (bound_pods(c, e->queue[i]) == 0 && !left_alone(c, e, e->queue[i]))
            return e->queue[i];
    return -1;
}

/* The job's own fields first: left_alone reads the model's record of the job; a job whose size
 * is fixed is not read at all. */
static bool can_change(const drv_ctx *c, const drv_elastic *e, int32_t job)
{
    const drv_state *st = drv_ctx_state(c);
    return !fixed_size(e, st, job) && st->jobs[job].phase == DRV_JOB_RUNNING &&
           !left_alone(c, e, job);
}

/* A removable bound worker of job: not worker 0; preferably off the PS node. -1 if none. */
static int32_t victim_pod(const drv_ctx *c, int32_t job)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t ps = drv_job_pod(st, job, DRV_ROLE_PS, 0);
    int32_t ps_node = ps >= 0 ? drv_ctx_pod_node(c, ps) : -1;
    int32_t on_ps = -1;
    /* Highest slot first, so the lowest-numbered workers (worker 0 above all) stay. */
    int32_t nslots = 0;
    while (drv_job_pod(st, job, DRV_ROLE_WORKER, nslots) >= 0)
        nslots++;
    for (int32_t i = nslots - 1; i >= 1; i--) {
        int32_t p = drv_job_pod(st, job, DRV_ROLE_WORKER, i);
        int32_t at = drv_ctx_pod_node(c, p);
        if (at < 0)
            continue;
        if (at != ps_node)
            return p;
        if (on_ps < 0)
            on_ps = p;
    }
    return on_ps;
}

/* Running elastic jobs in the order relief visits them (submission order = DRAGON's queue). */
static int32_t running_jobs(drv_ctx *c, const drv_elastic *e, int32_t **out)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t *v = drv_arena_alloc(drv_ctx_arena(c), sizeof *v * ((size_t)st->nlive + 1));
    int32_t n = 0;
    if (!v) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return 0;
    }
    for (int32_t j = next_sizable(e, st, 0); j >= 0; j = next_sizable(e, st, j + 1))
        if (can_change(c, e, j))
            v[n++] = j; /* ids follow submission order in both drivers */
    *out = v;
    return n;
}

static bool relieve(drv_ctx *c, drv_elastic *e, int32_t head)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_job *h = &st->jobs[head];
    int32_t hmin = h->role[DRV_ROLE_WORKER].min;
    int32_t *run = NULL;
    int32_t nrun = running_jobs(c, e, &run);
    if (nrun == 0)
        return false;
    int32_t *count = drv_arena_alloc(drv_ctx_arena(c), sizeof *count * (size_t)nrun);
    if (!count) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return false;
    }
    for (int32_t i = 0; i < nrun; i++)
        count[i] = drv_ctx_workers(c, run[i]);
    drv_mark m = drv_ctx_mark(c);
    bool fits = false;
    int32_t cur = 0;
    for (;;) {
        /* Pick the next victim job. */
        int32_t pick = -1;
        if (e->cfg.symmetric) {
            int32_t best = 0;
            for (int32_t i = 0; i < nrun; i++) {
                int32_t spare = count[i] - st->jobs[run[i]].role[DRV_ROLE_WORKER].min;
                if (spare > best) {
                    best = spare;
                    pick = i;
                }
            }
        } else {
            while (cur < nrun && count[cur] <= st->jobs[run[cur]].role[DRV_ROLE_WORKER].min)
                cur++;
            pick = cur < nrun ? cur : -1;
        }
        if (pick < 0)
            break;
        int32_t pod = victim_pod(c, run[pick]);
        if (pod < 0) {
            count[pick] = st->jobs[run[pick]].role[DRV_ROLE_WORKER].min; /* nothing to take */
            continue;
        }
        if (drv_ctx_evict(c, pod, DRV_REASON_STARVE) != 0)
            break;
        count[pick]--;
        drv_mark t = drv_ctx_mark(c);
        int rc = drv_ctx_place_gang(c, head, hmin);
        if (rc < 0)
            break;
        drv_ctx_rollback(c, t);
        if (rc == 1) {
            fits = true;
            break;
        }
    }
    if (!fits) {
        drv_ctx_rollback(c, m);
        return false;
    }
    for (int32_t i = 0; i < nrun; i++)
        if (count[i] != drv_ctx_workers(c, run[i]) && drv_ctx_scale(c, run[i], count[i]) != 0)
            return false;
    if (drv_ctx_place_gang(c, head, hmin) != 1) {
        drv_ctx_rollback(c, m); /* cannot happen: the same placement fitted a moment ago */
        return false;
    }
    return true;
}

static bool grow_ok(const drv_ctx *c, const drv_elastic *e, int32_t job)
{
    return e->cfg.grow_min_left <= 0 ||
           drv_job_remaining(drv_ctx_progress(c, job)) >= e->cfg.grow_min_left;
}

/* DRAGON: each job in order, as many extra workers as fit. */
static bool grow_in_order(drv_ctx *c, const drv_elastic *e)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t *run = NULL;
    int32_t nrun = running_jobs(c, e, &run);
    bool any = false;
    for (int32_t i = 0; i < nrun; i++) {
        const drv_job *j = &st->jobs[run[i]];
        int32_t cur = drv_ctx_workers(c, run[i]);
        if (!grow_ok(c, e, run[i]))
            continue;
        int rc = place_largest(c, run[i], j->role[DRV_ROLE_WORKER].max, cur);
        if (rc < 0)
            return any;
        any |= rc == 1;
    }
    return any;
}

/* Symmetric: one worker at a time to the job with the lowest workers/max, then commit. */
static bool grow_round_robin(drv_ctx *c, const drv_elastic *e)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t *run = NULL;
    int32_t nrun = running_jobs(c, e, &run);
    if (nrun == 0)
        return false;
    int32_t *want = drv_arena_alloc(drv_ctx_arena(c), sizeof *want * (size_t)nrun);
    bool *full = drv_arena_alloc(drv_ctx_arena(c), sizeof *full * (size_t)nrun);
    if (!want || !full) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return false;
    }
    for (int32_t i = 0; i < nrun; i++) {
        want[i] = drv_ctx_workers(c, run[i]);
        full[i] = !grow_ok(c, e, run[i]);
    }
    drv_mark m = drv_ctx_mark(c);
    for (;;) {
        int32_t pick = -1;
        double best = 2;
        for (int32_t i = 0; i < nrun; i++) {
            int32_t max = st->jobs[run[i]].role[DRV_ROLE_WORKER].max;
            double frac = (double)want[i] / max;
            if (!full[i] && want[i] < max && frac < best) {
                best = frac;
                pick = i;
            }
        }
        if (pick < 0)
            break;
        int rc = drv_ctx_place_gang(c, run[pick], want[pick] + 1);
        if (rc < 0)
            break;
        if (rc == 1)
            want[pick]++;
        else
            full[pick] = true;
    }
    /* One SCALE per job: undo the tentative steps and place each job at its final size. */
    drv_ctx_rollback(c, m);
    bool any = false;
    for (int32_t i = 0; i < nrun; i++) {
        int rc = place_largest(c, run[i], want[i], drv_ctx_workers(c, run[i]));
        if (rc < 0)
            return any;
        any |= rc == 1;
    }
    return any;
}

void drv_elastic_scale(drv_ctx *c, void *state)
{
    drv_elastic *e = state;
    double now = drv_ctx_now(c);
    const drv_state *st = drv_ctx_state(c);
    int32_t head = waiting_head(c, e);
    if (head >= 0 && now - st->jobs[head].submit >= e->cfg.starve_wait) {
        if (relieve(c, e, head))
            e->last_action = now;
        return;
    }
    if ((head >= 0 && !e->cfg.grow_queued) || now - e->last_action < e->cfg.quiet)
        return;
    bool grew = e->cfg.symmetric ? grow_round_robin(c, e) : grow_in_order(c, e);
    if (grew)
        e->last_action = now;
}

/*
 * Admission looks at the queue and free room only; relief and growth look at running jobs that
 * can change size (can_change). So jobs starting change nothing when relief and growth do not
 * run before the wake: a job waits whose relief is not due (the wake is then its starve_wait)
 * and growth waits for the queue (not grow_queued) - a start changes neither the queue nor its
 * head. Nor when none of the jobs that could start (starting or restarting now: a job gets
 * there only through a cycle's decisions) can change size: running, they are no victim and
 * no candidate for growth either.
 */
bool drv_elastic_starts_blind(const drv_ctx *c, void *state)
{
    const drv_elastic *e = state;
    const drv_state *st = drv_ctx_state(c);
    int32_t head = waiting_head(c, e);
    if (head >= 0 && !e->cfg.grow_queued &&
        drv_ctx_now(c) - st->jobs[head].submit < e->cfg.starve_wait)
        return true;
    for (int32_t j = drv_state_next_starting(st, 0); j >= 0; j = drv_state_next_starting(st, j + 1))
        if (st->jobs[j].role[DRV_ROLE_WORKER].max > st->jobs[j].role[DRV_ROLE_WORKER].min)
            return false;
    return true;
}

/* Before t, minus a margin that covers the rounding of `now - since >= wait` against
 * `now >= since + wait`: early is safe, late is not. */
static double just_before(double t)
{
    return t - 1e-6 * (1.0 + fabs(t));
}

/* The earliest time a waiting job that may start below its size (not fixed) will have waited
 * start_wait, after now; INFINITY when none. O(the queue last given to admit). */
static double start_wake(const drv_ctx *c, const drv_elastic *e)
{
    const drv_state *st = drv_ctx_state(c);
    double now = drv_ctx_now(c), w = INFINITY;
    for (int32_t i = 0; i < e->nqueue; i++) {
        int32_t job = e->queue[i];
        double at = st->jobs[job].submit + e->cfg.start_wait;
        if (at > now && at < w && !fixed_size(e, st, job) && bound_pods(c, job) == 0 &&
            !left_alone(c, e, job))
            w = at;
    }
    return isfinite(w) ? just_before(w) : w;
}

/*
 * What could change with time alone: a waiting job may start below its size (start_wait);
 * relief, once the head has waited starve_wait (relief that
 * was due and failed fails again on the same state: it reads nothing else); growth, once quiet
 * seconds have passed since the last action; and, for growth with grow_min_left, which jobs are
 * worth growing - a job's remaining time comes from its recent rate, which can rise or fall while
 * the samples of an earlier placement leave its window, so a job refused for it keeps every
 * cycle running. Growth that was tried and failed for want of room fails again.
 */
double drv_elastic_wake(const drv_ctx *c, void *state)
{
    const drv_elastic *e = state;
    const drv_state *st = drv_ctx_state(c);
    double now = drv_ctx_now(c);
    int32_t head = waiting_head(c, e);
    double w = INFINITY;
    if (e->cfg.start_wait > 0)
        w = start_wake(c, e);
    if (head >= 0) {
        double submit = st->jobs[head].submit;
        if (now - submit < e->cfg.starve_wait)
            w = fmin(w, just_before(submit + e->cfg.starve_wait));
        else
            return w; /* relief ran (growth does not run when it does) */
        if (!e->cfg.grow_queued)
            return w;
    }
    if (now - e->last_action < e->cfg.quiet) {
        double q = just_before(e->last_action + e->cfg.quiet);
        return q < w ? q : w;
    }
    if (e->cfg.grow_min_left <= 0)
        return w;
    for (int32_t j = next_sizable(e, st, 0); j >= 0; j = next_sizable(e, st, j + 1)) {
        const drv_job *jb = &st->jobs[j];
        if (jb->phase == DRV_JOB_RUNNING && drv_ctx_workers(c, j) < jb->role[DRV_ROLE_WORKER].max &&
            can_change(c, e, j) && !grow_ok(c, e, j))
            return -INFINITY;
    }
    return w;
}
