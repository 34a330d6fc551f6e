/*
 * perf.c - step time of a job from its placement, and its loss curve (formulas in model.h).
 *
 * Cost: O(pods of the job) for the compute part; the PS exchange visits each (worker, PS) pair
 * once, O(W·P), which is small (P is 1-4 in practice). No allocation.
 */
#include "drover/model.h"

#include <math.h>

double drv_loss(const drv_family *f, double k)
{
    return 1.0 / (f->beta0 * (k > 0 ? k : 0) + f->beta1) + f->beta2;
}

double drv_steps_to_loss(const drv_family *f, double target)
{
    if (target <= f->beta2)
        return INFINITY;
    double k = (1.0 / (target - f->beta2) - f->beta1) / f->beta0;
    return k > 0 ? k : 0;
}

double drv_loss_observed(const drv_family *f, double k, uint64_t seed, int32_t job, int64_t i)
{
    /* Sum of two uniforms: a cheap, bounded, bell-shaped noise with unit variance. */
    double u1 = drv_hash01(seed ^ (uint64_t)job * 0x100000001b3ULL, (uint64_t)i * 2);
    double u2 = drv_hash01(seed ^ (uint64_t)job * 0x100000001b3ULL, (uint64_t)i * 2 + 1);
    double z = (u1 + u2 - 1.0) * 2.449489742783178; /* sqrt(6) */
    return drv_loss(f, k) * (1.0 + f->noise * z);
}

double drv_model_pod_cpu(const drv_state *st, int32_t pod)
{
    const drv_pod *p = &st->pods[pod];
    if (p->node < 0)
        return 0;
    const drv_node *n = &st->nodes[p->node];
    double lim = (double)p->cpu_limit;
    if (n->cpu_limit > n->alloc.cpu && n->cpu_limit > 0)
        lim *= (double)n->alloc.cpu / (double)n->cpu_limit;
    return lim;
}

drv_step drv_model_step(const drv_family *f, const drv_netparams *net, const drv_state *st,
                        int32_t job)
{
    const drv_job *j = &st->jobs[job];
    drv_step s = {0, 0, 0, 0, 0};
    int32_t nps = j->bound[DRV_ROLE_PS];
    if (nps < j->target[DRV_ROLE_PS])
        return s;
    /* Workers (and the chief): compute time of the slowest, and the nodes they span. */
    int32_t wnodes[64];
    int32_t nwnodes = 0;
    bool spans_many = false;
    for (int32_t k = 0; k < j->pod_count; k++) {
        int32_t pid = j->pod_base + k;
        const drv_pod *p = &st->pods[pid];
        if (p->node < 0 || (p->role != DRV_ROLE_WORKER && p->role != DRV_ROLE_CHIEF))
            continue;
        s.workers++;
        const drv_rolespec *rs = &j->role[p->role];
        double t = f->compute_s;
        if (rs->req.gpu == 0 && rs->req.cpu > 0) {
            double cpu = drv_model_pod_cpu(st, pid);
            t = cpu > 0 ? f->compute_s * (double)rs->req.cpu / cpu : INFINITY;
        }
        if (t > s.compute)
            s.compute = t;
        bool seen = false;
        for (int32_t i = 0; i < nwnodes; i++)
            seen |= wnodes[i] == p->node;
        if (!seen) {
            if (nwnodes < 64)
                wnodes[nwnodes++] = p->node;
            else
                spans_many = true;
        }
    }
    if (s.workers == 0 || !isfinite(s.compute))
        return s;
    double S = f->model_mb;
    if (nps > 0) {
        /* Each PS serves a 1/P shard to every worker through its own link. */
        for (int32_t k = 0; k < j->pod_count; k++) {
            const drv_pod *ps = &st->pods[j->pod_base + k];
            if (ps->role != DRV_ROLE_PS || ps->node < 0)
                continue;
            double load = 0;
            for (int32_t m = 0; m < j->pod_count; m++) {
                const drv_pod *w = &st->pods[j->pod_base + m];
                if (w->node < 0 || (w->role != DRV_ROLE_WORKER && w->role != DRV_ROLE_CHIEF))
                    continue;
                double bw = w->node == ps->node ? net->intra_MBps : net->inter_MBps;
                load += 2.0 * S / nps / bw;
            }
            if (load > s.exchange)
                s.exchange = load;
        }
    } else if (s.workers > 1) {
        int32_t nn = spans_many ? 65 : nwnodes;
        double bw = nn == 1 ? net->intra_MBps : net->inter_MBps;
        s.exchange = 2.0 * (s.workers - 1) / s.workers * S / bw + 2.0 * (nn - 1) * net->hop_s;
    }
    s.total = s.compute + s.exchange;
    s.rate = s.total > 0 ? s.workers / s.total : 0;
    return s;
}
