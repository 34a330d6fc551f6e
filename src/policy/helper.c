/*
 * helper.c - placement code that more than one policy plugin uses (helper.h), kept in one
 * place as kube-scheduler keeps its shared plugin code in framework/plugins/helper.
 *
 * drv_place_packed packs a job the way the Pollux simulator places Tiresias and Optimus jobs:
 * each unbound pod goes to the node already being filled while it fits, otherwise to the
 * schedulable node its node constraints admit with the most free GPUs (free CPU for pods
 * without GPUs), ties to the lower node id. Example: nodes with 8, 6 and 8 free GPUs and a job
 * of three 4-GPU workers: two go to node 0 (8 free, lowest id), the third to node 2 (8 free,
 * more than node 1's 6). All or nothing: when one pod does not fit, every bind of this call is
 * rolled back. A job whose queue's quota does not admit its gang (drv_ctx_queue_room) is not
 * tried, as in drv_ctx_place_gang.
 * Cost: O(pods x nodes) free-resource reads.
 */
#include "helper.h"

int drv_place_packed(drv_ctx *c, int32_t job)
{
    const drv_state *st = drv_ctx_state(c);
    const drv_job *j = &st->jobs[job];
    if (!drv_ctx_queue_room(c, job, drv_ctx_workers(c, job)))
        return 0; /* its queue's quota refuses the gang, as drv_ctx_place_gang would */
    drv_mark m = drv_ctx_mark(c);
    int32_t cur = -1;
    for (int role = 0; role < DRV_NROLES; role++) {
        int32_t want = role == DRV_ROLE_WORKER ? drv_ctx_workers(c, job) : j->target[role];
        drv_res req = j->role[role].req;
        bool gpu = req.gpu > 0;
        for (int32_t idx = 0; idx < j->role[role].max && want > 0; idx++) {
            int32_t pod = drv_job_pod(st, job, role, idx);
            if (pod < 0)
                break;
            if (drv_ctx_pod_node(c, pod) >= 0) {
                want--;
                continue;
            }
            /* fill the chosen node before moving on (Pollux takes min(free, left) there) */
            int32_t best =
                cur >= 0 && drv_res_fits(req, drv_ctx_free(c, cur)) && drv_ctx_allowed(c, pod, cur)
                    ? cur
                    : -1;
            int64_t bestv = best >= 0 ? INT64_MAX : -1;
            for (int32_t n = 0; bestv != INT64_MAX && n < st->nnodes; n++) {
                if (!st->nodes[n].schedulable || !drv_ctx_allowed(c, pod, n))
                    continue;
                drv_res f = drv_ctx_free(c, n);
                if (!drv_res_fits(req, f))
                    continue;
                int64_t v = gpu ? f.gpu : f.cpu;
                if (v > bestv) {
                    bestv = v;
                    best = n;
                }
            }
            if (best < 0) {
                drv_ctx_rollback(c, m);
                return 0;
            }
            cur = best;
            int rc = drv_ctx_bind(c, pod, best);
            if (rc)
                return rc;
            want--;
        }
        if (want > 0) {
            drv_ctx_rollback(c, m);
            return 0;
        }
    }
    return 1;
}
