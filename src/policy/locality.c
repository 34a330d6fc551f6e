/*
 * locality.c - topology-aware placement scores: keep a job's pods together, and keep the
 * parameter servers of different jobs apart (seeds 000, 001 and 004).
 *
 *  locality          score  For a job's first pod (its PS, as the core places PS first), the
 *                           share of the job's still-unplaced pods this node could hold: the
 *                           node that can take the whole job wins, else the one that fits the
 *                           most (DRAGON's "one node if possible, else the node that fits the
 *                           most pods"; Jeong & Yu's "PS on the node with most workers").
 *                           For later pods, a weighted mix of the share of the job's placed
 *                           pods on this node, in its rack and in its zone, plus the room
 *                           term above, so a job spans as few nodes (then racks) as possible:
 *                             score = 100·(w_node·same_node + w_rack·same_rack
 *                                          + w_zone·same_zone + w_room·room) / Σw
 *                           Example: a job with PS on n0 (rack r0); a worker scores 100·4/8 on
 *                           n0 plus its room term, 100·2/8 on n1 in r0, 100·1/8 in zone only.
 *  ps-anti-affinity  score  Volcano/Kubernetes preferred anti-affinity between PS pods of
 *                           different jobs (seed 004): 100 on a node with no other job's PS,
 *                           100/(1+k) with k of them. Preferred, not required: a hard rule
 *                           would cap a 4-node cluster at 4 running PS jobs.
 *
 * Cost: locality looks at the job's own pods (O(pods of the job)) and, for the room term, at
 * its pod requests; ps-anti-affinity scans the PS slots of every job (O(jobs)) per call.
 */
#include "drover/policy.h"

static const drv_knob_spec loc_knobs[] = {
    {"w_node", 4, 0, 100, "weight of the share of the job's placed pods on this node"},
    {"w_rack", 2, 0, 100, "weight of the share in this node's rack (other nodes)"},
    {"w_zone", 1, 0, 100, "weight of the share in this node's zone (other racks)"},
    {"w_room", 1, 0, 100, "weight of how many of the job's unplaced pods the node could hold"},
};
enum { NLOC = sizeof loc_knobs / sizeof loc_knobs[0] };

typedef struct loc_state {
    double w_node, w_rack, w_zone, w_room;
} loc_state;

static int loc_init(void **state, const drv_knob *knobs, int nknobs, drv_diag *d)
{
    double v[NLOC];
    int rc = drv_knobs_read(loc_knobs, NLOC, knobs, nknobs, v, d);
    if (rc)
        return rc;
    if (v[0] + v[1] + v[2] + v[3] <= 0)
        return drv_fail(d, DRV_ERANGE, "knobs w_node, w_rack, w_zone, w_room are all 0");
    loc_state *p = drv_calloc(1, sizeof *p);
    if (!p)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    *p = (loc_state){v[0], v[1], v[2], v[3]};
    *state = p;
    return 0;
}

static void loc_fini(void *state)
{
    drv_free(state);
}

/* How many of the job's unplaced wanted pods (other than pod) fit in free, greedily. */
static double room_share(const drv_ctx *c, const drv_job *j, int32_t job, int32_t pod, drv_res free)
{
    const drv_state *st = drv_ctx_state(c);
    int32_t want = 0, fit = 0;
    for (int r = 0; r < DRV_NROLES; r++) {
        int32_t target = r == DRV_ROLE_WORKER ? drv_ctx_workers(c, job) : j->target[r];
        int32_t placed = 0;
        for (int32_t i = 0, p; (p = drv_job_pod(st, job, r, i)) >= 0; i++)
            placed += drv_ctx_pod_node(c, p) >= 0 || p == pod;
        int32_t miss = target > placed ? target - placed : 0;
        want += miss;
        for (int32_t k = 0; k < miss && drv_res_fits(j->role[r].req, free); k++) {
            free = drv_res_sub(free, j->role[r].req);
            fit++;
        }
    }
    return want ? (double)fit / want : 1.0;
}

static int loc_score(const drv_ctx *c, void *state, int32_t pod, int32_t node)
{
    const loc_state *w = state;
    const drv_state *st = drv_ctx_state(c);
    int32_t job = st->pods[pod].job;
    const drv_job *j = &st->jobs[job];
    const drv_node *n = &st->nodes[node];
    drv_res after = drv_res_sub(drv_ctx_free(c, node), j->role[st->pods[pod].role].req);
    double room = room_share(c, j, job, pod, after);
    int32_t placed = 0, same_node = 0, same_rack = 0, same_zone = 0;
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t at = drv_ctx_pod_node(c, j->pod_base + k);
        if (at < 0 || j->pod_base + k == pod)
            continue;
        placed++;
        const drv_node *m = &st->nodes[at];
        if (at == node)
            same_node++;
        else if (n->rack && m->rack == n->rack)
            same_rack++;
        else if (n->zone && m->zone == n->zone)
            same_zone++;
    }
    if (placed == 0)
        return (int)(100.0 * room);
    double sum = w->w_node + w->w_rack + w->w_zone + w->w_room;
    double s = w->w_node * same_node / placed + w->w_rack * same_rack / placed +
               w->w_zone * same_zone / placed + w->w_room * room;
    return (int)(100.0 * s / sum);
}

const drv_plugin drv_plugin_locality = {
    .name = "locality",
    .doc = "score: a job on as few nodes/racks as possible, PS where most workers fit",
    .init = loc_init,
    .fini = loc_fini,
    .score = loc_score,
};

/* ---- ps-anti-affinity ------------------------------------------------------------------ */

static int anti_score(const drv_ctx *c, void *state, int32_t pod, int32_t node)
{
    (void)state;
    const drv_state *st = drv_ctx_state(c);
    if (st->pods[pod].role != DRV_ROLE_PS)
        return 100;
    int32_t own = st->pods[pod].job, k = 0;
    DRV_FOR_LIVE(st, job)
    {
        if (job == own || st->jobs[job].phase == DRV_JOB_DONE)
            continue;
        for (int32_t i = 0, p; (p = drv_job_pod(st, job, DRV_ROLE_PS, i)) >= 0; i++)
            k += drv_ctx_pod_node(c, p) == node;
    }
    return 100 / (1 + k);
}

const drv_plugin drv_plugin_ps_anti_affinity = {
    .name = "ps-anti-affinity",
    .doc = "score: prefer nodes without another job's PS (preferred anti-affinity, seed 004)",
    .score = anti_score,
};
