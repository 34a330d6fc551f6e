/*
 * defrag.c - moving small jobs out of the way of a topology-bound gang (issue 29, part 1): a
 * gang required in one domain of a level (a rack) that waits only because the level is
 * fragmented - no rack's free room holds it, though one rack's free room plus what a few
 * unconstrained jobs hold there would - migrates those jobs out of that rack (MIGRATE: a
 * checkpoint-restart elsewhere, SpeCon's mechanism) and binds the gang there in the same
 * cycle, when what the moved jobs lose is less than what the gang gains. A migrate-point
 * plugin, off by default: no built-in profile has it (examples/defrag-profiles.yaml's
 * drover-defrag is drover with it).
 *
 * The waiting gang G: a pending job with a required level (drv_job.topo_mode), wanted pods
 * unbound after admission, submitted at least `wait` seconds ago, whose missing pods
 * (drv_ctx_gang_need at its wanted worker count) no domain of its level holds as is (a gang
 * that fits one is admission's). Gangs are tried longest waiting first; the first one placed
 * ends the cycle's work (one gang per cycle).
 *
 * A mover M: a running job bound to no level (required and preferred jobs chose their domain),
 * with pods in the domain, settled (victims.h: none of it changed this cycle, past its minimum
 * run time), each of whose pods in the domain has room on some node outside it now (the
 * profile's filters, then its best score, ties to the lower id). Its pods elsewhere stay.
 *
 * Price [R: our rule; SpeCon prices a migration by its fixed cost, Drover by the lost work the
 * simulator charges]: lost(M) = (seconds since M's last checkpoint + `restart`) x what M holds
 * (GPUs; CPU cores when G asks no GPU): a migration restarts the whole job from its checkpoint.
 * The core knows no checkpoint times: with `checkpoint` = C > 0 every job is taken to checkpoint
 * every C seconds from its last start, so it has lost (now - run_start) mod C (the simulator's
 * model, sim_apply.c, when the jobs' checkpointSeconds is C); with C = 0, now - run_start (the
 * bound).
 * Gain [R]: G's remaining wait x what G asks. Its remaining wait is the time until the first
 * domain of its level would hold G by its jobs finishing at their recent rate (progress.h; a job
 * without a rate yet never finishes in this estimate; jobs queued ahead of G are ignored); when
 * no domain ever would, the time G has waited so far (a wait with no end in sight is priced at
 * what it has cost, not at infinity).
 * Choice: per domain, movers by lost work (least first, then id) are moved out until G's gang
 * is placed there (drv_ctx_place_gang: the core's best fit, which is that domain, the only one
 * with room) or `max_movers` have moved; the domain whose set loses least wins, and is kept only
 * when its loss < the gain. Everything else is rolled back: no move without G bound.
 *
 * Worked example (tests/policy/test_defrag.c): racks a (n0, n1) and b (n2, n3) of 8 GPUs a node;
 * unconstrained jobs of 4 GPUs hold 4 on each node (a: x0 on n0 since t=0, x1 on n1 since 300;
 * b: x2, x3 since 0 and 400); G asks 2 x 8 GPUs in one rack: 8 free in each rack, none holds 16.
 * At t=1000 with checkpoint=600, restart=30, x1 lost (700 mod 600) = 100 s, x0 400 s, x2 400 s,
 * x3 0 s. Rack a: x1 first (130 x 4 = 520 GPU-s): it can only go to rack b, where n2 and n3
 * have 4 free each: x1 to n2; G is tried: a's free is 12, not 16; then x0 (430 x 4) to n3; G
 * is bound on n0, n1: loss 2240. Rack b: x3 (30 x 4 = 120) to n0, x2 (430 x 4) to n1: 1840.
 * Rack b wins; with no rate known, the gain is G's wait 1000 x 16 GPUs = 16000 > 1840: x3 and x2
 * move to rack a and G binds in rack b. Had G waited 100 s, the gain 1600 < 1840: nothing moves.
 *
 * Cost: O(1) when no required gang waits past `wait`; else per such gang O(domains · live pods)
 * for the gain, and per domain O(live pods) to find movers, each move O(nodes) filters and
 * scores, a gang placement per move; a gang that cannot be helped is tried again next cycle.
 *
 * Quiet cycles: prices change with time, so while a gang waits past `wait` every cycle counts;
 * before, the plugin wakes when the first such gang comes of age.
 */
#include "drover/policy.h"
#include "progress.h"
#include "victims.h"

#include <math.h>
#include <stdlib.h>

static const drv_knob_spec df_knobs[] = {
    {"wait", 300, 0, 604800, "seconds a required gang waits before jobs are moved for it"},
    {"checkpoint", 0, 0, 604800,
     "seconds between the movers' checkpoints (0: unknown, they lose all since their start)"},
    {"restart", 30, 0, 86400, "seconds a moved job loses to its restart"},
    {"max_movers", 8, 1, 64, "jobs moved for one gang at most"},
};
enum { NDF = sizeof df_knobs / sizeof df_knobs[0] };

typedef struct df_state {
    double wait;        /* seconds since submission before a gang is helped */
    double checkpoint;  /* the movers' checkpoint interval, seconds; 0: unknown */
    double restart;     /* seconds a move costs its job beyond lost work */
    int32_t max_movers; /* jobs moved per gang at most */
} df_state;

/* A job that may move out of the domain, with what moving it costs. */
typedef struct mover {
    double lost; /* resource-seconds it loses (lost(M) above) */
    int32_t job;
} mover;

/* What one try on one domain did. */
typedef struct attempt {
    double lost;   /* sum of the movers' losses */
    int32_t moved; /* movers moved */
    bool placed;   /* G bound inside the domain */
} attempt;

static int df_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[NDF];
    int rc = drv_knobs_read(df_knobs, NDF, knobs, nknobs, v, d);
    if (rc)
        return rc;
    df_state *s = drv_calloc(1, sizeof *s);
    if (!s)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    *s = (df_state){.wait = v[0], .checkpoint = v[1], .restart = v[2], .max_movers = (int32_t)v[3]};
    *state = s;
    return 0;
}

static void df_fini(void *state)
{
    drv_free(state);
}

/* The resource a gang's wait and a mover's loss are counted in: GPUs when the gang asks any,
 * else CPU cores. */
static double amount(drv_res r, bool gpu)
{
    return gpu ? (double)r.gpu : (double)r.cpu / 1000.0;
}

/* A pending gang required in one domain of a level, none of its pods placed; what it misses
 * in *need. */
static bool waiting_gang(const drv_ctx *c, int32_t job, drv_res *need)
{
    const drv_job *j = &drv_ctx_state(c)->jobs[job];
    if (j->phase != DRV_JOB_PENDING || j->topo_mode != DRV_TOPO_REQUIRED ||
        drv_ctx_topo_domains(c, j->topo_level) == 0)
        return false;
    for (int32_t k = 0; k < j->pod_count; k++)
        if (drv_ctx_pod_node(c, j->pod_base + k) >= 0)
            return false; /* a part placed binds it to that domain: not a fresh choice */
    *need = drv_ctx_gang_need(c, job, drv_ctx_workers(c, job));
    return need->cpu > 0 || need->mem > 0 || need->gpu > 0;
}

/* Whether some domain of lev holds need as is. O(nodes). */
static bool some_domain_holds(const drv_ctx *c, int32_t lev, drv_res need)
{
    for (int32_t d = 0; d < drv_ctx_topo_domains(c, lev); d++)
        if (drv_res_fits(need, drv_ctx_topo_free(c, lev, d)))
            return true;
    return false;
}

/* What a job being moved loses, per the price above. */
static double lost_work(const drv_ctx *c, const df_state *s, int32_t job, bool gpu)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_job *j = &st->jobs[job];
    double since = j->run_start >= 0 ? drv_ctx_now(c) - j->run_start : 0;
    if (s->checkpoint > 0)
        since = fmod(since, s->checkpoint);
    drv_res held = {0, 0, 0};
    for (int32_t k = 0; k < j->pod_count; k++)
        if (drv_ctx_pod_node(c, j->pod_base + k) >= 0)
            held = drv_res_add(held, j->role[st->pods[j->pod_base + k].role].req);
    return (since + s->restart) * amount(held, gpu);
}

typedef struct ending {
    double at;    /* seconds from now until the job ends, at its recent rate */
    drv_res held; /* what it holds in the domain */
} ending;

static int cmp_ending(const void *a, const void *b)
{
    const ending *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

/* Seconds until domain dom of lev would hold need by its jobs ending (INFINITY: never, as far
 * as the rates tell). ends: room for the live jobs. O(live pods + live log live). */
static double domain_opens(drv_ctx *c, int32_t lev, int32_t dom, drv_res need, ending *ends)
{
    const drv_state *st = drv_ctx_state(c);
    drv_res room = drv_ctx_topo_free(c, lev, dom);
    int32_t n = 0;
    DRV_FOR_LIVE(st, j)
    {
        drv_res h = drv_ctx_topo_held(c, j, lev, dom);
        if (h.cpu > 0 || h.mem > 0 || h.gpu > 0)
            ends[n++] = (ending){drv_job_remaining(drv_ctx_progress(c, j)), h};
    }
    qsort(ends, (size_t)n, sizeof *ends, cmp_ending);
    for (int32_t i = 0; i < n && isfinite(ends[i].at); i++) {
        room = drv_res_add(room, ends[i].held);
        if (drv_res_fits(need, room))
            return ends[i].at;
    }
    return INFINITY;
}

/* What G gains by starting now: its remaining wait (estimated as above) x what it asks. */
static double gain_of(drv_ctx *c, int32_t job, drv_res need, ending *ends)
{
    const drv_job *j = &drv_ctx_state(c)->jobs[job];
    double wait = INFINITY;
    for (int32_t d = 0; d < drv_ctx_topo_domains(c, j->topo_level); d++)
        wait = fmin(wait, domain_opens(c, j->topo_level, d, need, ends));
    if (!isfinite(wait))
        wait = drv_ctx_now(c) - j->submit;
    return wait * amount(need, need.gpu > 0);
}

static int cmp_mover(const void *a, const void *b)
{
    const mover *x = a, *y = b;
    if (x->lost != y->lost)
        return x->lost < y->lost ? -1 : 1;
    return (x->job > y->job) - (x->job < y->job);
}

/* The jobs that may move out of domain dom of lev, least lost work first; their count. */
static int32_t find_movers(drv_ctx *c, const df_state *s, int32_t lev, int32_t dom, bool gpu,
                           mover *out)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t n = 0;
    DRV_FOR_LIVE(st, j)
    {
        const drv_job *jb = &st->jobs[j];
        if (jb->phase != DRV_JOB_RUNNING || jb->topo_mode != DRV_TOPO_NONE)
            continue;
        drv_res h = drv_ctx_topo_held(c, j, lev, dom);
        if ((h.cpu > 0 || h.mem > 0 || h.gpu > 0) && drv_victim_settled(c, j))
            out[n++] = (mover){lost_work(c, s, j, gpu), j};
    }
    qsort(out, (size_t)n, sizeof *out, cmp_mover);
    return n;
}

/* The best node outside domain dom of lev for pod, or -1. O(nodes). */
static int32_t best_outside(const drv_ctx *c, int32_t pod, int32_t lev, int32_t dom)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t best = -1;
    int64_t best_score = 0;
    for (int32_t n = 0; n < st->nnodes; n++) {
        if (drv_ctx_topo_node_domain(c, lev, n) == dom || drv_ctx_filter(c, pod, n) != DRV_FIT)
            continue;
        int64_t sc = drv_ctx_score(c, pod, n);
        if (best < 0 || sc > best_score) {
            best = n;
            best_score = sc;
        }
    }
    return best;
}

/* Moves job's pods in domain dom of lev out of it: 1 moved, 0 some pod has no room elsewhere
 * (nothing moved), or an error. */
static int move_out(drv_ctx *c, int32_t job, int32_t lev, int32_t dom)
{
    const drv_job *j = &drv_ctx_state(c)->jobs[job];
    drv_mark m = drv_ctx_mark(c);
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t pod = j->pod_base + k, at = drv_ctx_pod_node(c, pod);
        if (at < 0 || drv_ctx_topo_node_domain(c, lev, at) != dom)
            continue;
        int32_t to = best_outside(c, pod, lev, dom);
        if (to < 0) {
            drv_ctx_rollback(c, m);
            return 0;
        }
        int rc = drv_ctx_migrate(c, pod, to);
        if (rc)
            return rc;
    }
    return 1;
}

/* Moves movers out of dom, least lost work first, until G is placed there or max_movers have
 * moved; leaves the decisions in place (the caller rolls back). An error, or 0 with *a said. */
static int try_domain(drv_ctx *c, const df_state *s, int32_t job, int32_t dom, bool gpu, mover *mv,
                      attempt *a)
{
    const drv_job *j = &drv_ctx_state(c)->jobs[job];
    int32_t lev = j->topo_level, n = find_movers(c, s, lev, dom, gpu, mv);
    *a = (attempt){0};
    for (int32_t i = 0; i < n && a->moved < s->max_movers && !a->placed; i++) {
        int rc = move_out(c, mv[i].job, lev, dom);
        if (rc < 0)
            return rc;
        if (rc == 0)
            continue;
        a->moved++;
        a->lost += mv[i].lost;
        if (!drv_res_fits(drv_ctx_gang_need(c, job, drv_ctx_workers(c, job)),
                          drv_ctx_topo_free(c, lev, dom)))
            continue; /* not enough room in sum yet: no placement can succeed */
        rc = drv_ctx_place_gang(c, job, drv_ctx_workers(c, job));
        if (rc < 0)
            return rc;
        a->placed = rc == 1;
    }
    return 0;
}

/* Helps G when a domain can be cleared for less than it gains: 1 when G was placed (its moves
 * and binds kept), 0 when not (nothing changed), or an error. */
static int help_gang(drv_ctx *c, const df_state *s, int32_t job, drv_res need, void *scratch)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t lev = st->jobs[job].topo_level, best = -1;
    bool gpu = need.gpu > 0;
    double best_lost = INFINITY;
    mover *mv = scratch;
    drv_mark m = drv_ctx_mark(c);
    for (int32_t d = 0; d < drv_ctx_topo_domains(c, lev); d++) {
        attempt a;
        int rc = try_domain(c, s, job, d, gpu, mv, &a);
        drv_ctx_rollback(c, m);
        if (rc)
            return rc;
        if (a.placed && a.lost < best_lost) {
            best_lost = a.lost;
            best = d;
        }
    }
    if (best < 0 || best_lost >= gain_of(c, job, need, scratch))
        return 0;
    attempt a;
    int rc = try_domain(c, s, job, best, gpu, mv, &a);
    if (rc == 0 && !a.placed) /* (cannot happen: the same moves on the same state) */
        drv_ctx_rollback(c, m);
    return rc ? rc : a.placed;
}

/* A gang to help: longest waiting first. */
typedef struct gang {
    double submit;
    int32_t job;
} gang;

static int cmp_gang(const void *a, const void *b)
{
    const gang *x = a, *y = b;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return (x->job > y->job) - (x->job < y->job);
}

/* Every cycle while a required gang waits past `wait` (prices move with time); else when the
 * first pending one comes of age; never without one. O(live jobs). */
static double df_wake(const drv_ctx *c, void *state)
{
    const df_state *s = state;
    const drv_state *st = drv_ctx_state(c);
    double at = INFINITY;
    if (st->ntopo == 0)
        return at;
    DRV_FOR_LIVE(st, j)
    {
        const drv_job *jb = &st->jobs[j];
        if (jb->phase == DRV_JOB_PENDING && jb->topo_mode == DRV_TOPO_REQUIRED)
            at = fmin(at, jb->submit + s->wait);
    }
    return at <= drv_ctx_now(c) ? -INFINITY : at;
}

static void df_migrate(drv_ctx *c, void *state)
{
    const df_state *s = state;
    const drv_state *st = drv_ctx_state(c);
    if (st->ntopo == 0 || df_wake(c, state) > drv_ctx_now(c))
        return; /* no required gang waits past `wait`: nothing to read or allocate */
    size_t room = (size_t)st->nlive + 1;
    gang *gangs = drv_arena_alloc(drv_ctx_arena(c), sizeof *gangs * room);
    void *scratch = drv_arena_alloc(
        drv_ctx_arena(c), room * (sizeof(ending) > sizeof(mover) ? sizeof(ending) : sizeof(mover)));
    if (!gangs || !scratch) {
        drv_ctx_fail(c, DRV_ENOMEM);
        return;
    }
    int32_t n = 0;
    drv_res need;
    DRV_FOR_LIVE(st, j)
    if (drv_ctx_now(c) - st->jobs[j].submit >= s->wait && waiting_gang(c, j, &need))
        gangs[n++] = (gang){st->jobs[j].submit, j};
    qsort(gangs, (size_t)n, sizeof *gangs, cmp_gang);
    for (int32_t i = 0; i < n; i++) {
        int32_t g = gangs[i].job;
        waiting_gang(c, g, &need);
        if (some_domain_holds(c, st->jobs[g].topo_level, need))
            continue;
        int rc = help_gang(c, s, g, need, scratch);
        if (rc < 0) {
            drv_ctx_fail(c, rc);
            return;
        }
        if (rc == 1)
            return;
    }
}

const drv_plugin drv_plugin_defrag = {
    .name = "defrag",
    .doc = "migrate: move small jobs out of a fragmented rack for a gang required in one rack "
           "when they lose less than it gains",
    .init = df_init,
    .fini = df_fini,
    .migrate = df_migrate,
    .wake = df_wake,
};
