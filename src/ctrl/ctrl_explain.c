/*
 * ctrl_explain.c - why a job of `drover run` waits (ctrl_explain.h): the checks the core makes,
 * made again in words, on the state as the last cycle left it. Reads only; O(nodes x roles) a
 * job, run for a waiting job once per wait (its Event) and for its conditions.
 *
 * Example: a job of 4 workers of 2 CPUs on two 4-CPU nodes with 3 CPUs taken: "waiting for
 * room: its gang of 4 pods needs cpu 8.0, ... 2 schedulable nodes its constraints allow have
 * cpu 5.0 ... free in all (queue position 1 of 1, profile gang-fifo)".
 */
#include "ctrl_explain.h"

#include "drover/clock.h"

#include <stdio.h>
#include <string.h>

bool ctrl_explain_never_fits(const ctrl_mirror *m, int32_t j, char *buf, size_t n)
{
    const drv_state *st = &m->st;
    const drv_job *jb = &st->jobs[j];
    if (st->nnodes == 0)
        return false; /* no node seen yet: nothing to compare with */
    drv_res all = {0, 0, 0}, need = drv_job_demand(jb);
    for (int32_t i = 0; i < st->nnodes; i++)
        all = drv_res_add(all, m->allocatable[i]);
    for (int r = 0; r < DRV_NROLES; r++) {
        if (jb->target[r] == 0)
            continue;
        int32_t type = drv_constraint_gpu_type(st, jb->cons[r]);
        if (type && !drv_state_has_gpu_type(st, type)) {
            snprintf(buf, n,
                     "it can never run: its %s pods require GPU type %s (node label %s) and no "
                     "node has it",
                     drv_role_name(r), drv_strtab_str(st->names, type),
                     drv_strtab_str(st->names, st->gpu_type_key));
            return true;
        }
        drv_res q = jb->role[r].req;
        bool one = false;
        for (int32_t i = 0; i < st->nnodes && !one; i++)
            one = drv_res_nonneg(drv_res_sub(m->allocatable[i], q));
        if (!one) {
            snprintf(buf, n,
                     "it can never run: one %s pod asks for cpu %.1f, memory %.1f GiB, gpu %lld "
                     "and no node allocates that much",
                     drv_role_name(r), (double)q.cpu / 1000, (double)q.mem / (1 << 30),
                     (long long)q.gpu);
            return true;
        }
    }
    if (drv_res_nonneg(drv_res_sub(all, need)))
        return false;
    snprintf(buf, n,
             "it can never run: its gang of %d pods needs cpu %.1f, memory %.1f GiB, gpu %lld "
             "together; the whole cluster (%d nodes) allocates cpu %.1f, memory %.1f GiB, gpu "
             "%lld",
             drv_job_wanted(jb), (double)need.cpu / 1000, (double)need.mem / (1 << 30),
             (long long)need.gpu, st->nnodes, (double)all.cpu / 1000, (double)all.mem / (1 << 30),
             (long long)all.gpu);
    return true;
}

/* What queue q may borrow in dimension k: what the other queues of its cohort leave unused of
 * their nominal quota, within its borrowing limit (state.h's model; the core decides, this
 * only explains). */
static int64_t may_borrow(const drv_state *st, int32_t q, int k)
{
    const drv_queue *me = &st->queues[q];
    const int64_t lim = k == 0 ? me->borrow.cpu : k == 1 ? me->borrow.mem : me->borrow.gpu;
    if (!me->cohort || lim == 0)
        return 0;
    int64_t free = 0;
    for (int32_t o = 0; o < st->nqueues; o++) {
        const drv_queue *x = &st->queues[o];
        if (o == q || x->cohort != me->cohort)
            continue;
        int64_t quota = k == 0 ? x->quota.cpu : k == 1 ? x->quota.mem : x->quota.gpu;
        int64_t used = k == 0 ? x->used.cpu : k == 1 ? x->used.mem : x->used.gpu;
        if (quota == DRV_UNLIMITED)
            return lim; /* (a lender without bound: the limit is all that holds) */
        free += quota > used ? quota - used : 0;
    }
    return lim < free ? lim : free;
}

/* "cpu 6.0 used + 4.0 wanted > nominal quota 8.0" for the first dimension where the job's
 * unbound wanted pods do not fit its queue's quota and what it may borrow, or false. */
bool ctrl_explain_quota(const drv_state *st, int32_t j, char *buf, size_t n)
{
    const drv_job *jb = &st->jobs[j];
    if (st->nqueues == 0)
        return false;
    const drv_queue *q = &st->queues[jb->queue];
    drv_res need = {0, 0, 0};
    for (int32_t k = 0; k < jb->pod_count; k++) {
        const drv_pod *p = &st->pods[jb->pod_base + k];
        if (p->node < 0 && p->index < jb->target[p->role])
            need = drv_res_add(need, jb->role[p->role].req);
    }
    static const char *const dim[] = {"cpu", "memory (GiB)", "gpu"};
    const int64_t used[] = {q->used.cpu, q->used.mem, q->used.gpu};
    const int64_t want[] = {need.cpu, need.mem, need.gpu};
    const int64_t quota[] = {q->quota.cpu, q->quota.mem, q->quota.gpu};
    const int64_t borrow[] = {q->borrow.cpu, q->borrow.mem, q->borrow.gpu};
    const double unit[] = {1000.0, 1073741824.0, 1.0};
    for (int k = 0; k < 3; k++) {
        if (quota[k] == DRV_UNLIMITED || want[k] == 0 || used[k] + want[k] <= quota[k])
            continue;
        int64_t lend_now = may_borrow(st, jb->queue, k);
        if (lend_now == DRV_UNLIMITED || used[k] + want[k] - quota[k] <= lend_now)
            continue; /* (borrowing covers it) */
        char lend[160] = "";
        if (q->cohort && borrow[k] != 0)
            snprintf(lend, sizeof lend, "; cohort %s lends %.1f now",
                     drv_strtab_str(st->names, q->cohort), (double)lend_now / unit[k]);
        snprintf(buf, n, "queue %s: %s %.1f used + %.1f wanted > nominal quota %.1f%s",
                 drv_strtab_str(st->names, q->name), dim[k], (double)used[k] / unit[k],
                 (double)want[k] / unit[k], (double)quota[k] / unit[k], lend);
        return true;
    }
    return false;
}

/* Whether toleration list c tolerates taint t (state.h's rule: effect empty or equal, key equal
 * or empty with Exists, Exists or value equal). */
static bool tolerates(const drv_constraint *c, const drv_taint *t)
{
    for (int32_t i = 0; i < c->ntol; i++) {
        const drv_toleration *o = &c->tol[i];
        if ((o->effect == DRV_EFFECT_ANY || o->effect == t->effect) &&
            (o->key == t->key || (!o->key && o->exists)) && (o->exists || o->value == t->value))
            return true;
    }
    return false;
}

static int32_t class_label(const drv_nodeclass *k, int32_t key)
{
    for (int32_t i = 0; i < k->nlabels; i++)
        if (k->labels[i].key == key)
            return k->labels[i].value;
    return -1;
}

/* What keeps role r's constraint off every schedulable node, in words: a selector label no node
 * has, a taint not tolerated on the nodes left, or the required affinity. */
static void describe(const drv_state *st, int r, const drv_constraint *k, char *buf, size_t n)
{
    static const drv_nodeclass none = {0};
    for (int32_t i = 0; i < k->nselector; i++) {
        int32_t have = 0;
        for (int32_t x = 0; x < st->nnodes; x++) {
            const drv_node *nd = &st->nodes[x];
            const drv_nodeclass *cl = nd->node_class > 0 ? &st->classes[nd->node_class] : &none;
            have += nd->schedulable && class_label(cl, k->selector[i].key) == k->selector[i].value;
        }
        if (have == 0) {
            snprintf(buf, n, "no schedulable node has its %s pods' nodeSelector label %s=%s",
                     drv_role_name(r), drv_strtab_str(st->names, k->selector[i].key),
                     drv_strtab_str(st->names, k->selector[i].value));
            return;
        }
    }
    for (int32_t x = 0; x < st->nnodes; x++) {
        const drv_node *nd = &st->nodes[x];
        const drv_nodeclass *cl = nd->node_class > 0 ? &st->classes[nd->node_class] : &none;
        for (int32_t i = 0; nd->schedulable && i < cl->ntaints; i++) {
            const drv_taint *t = &cl->taints[i];
            if (t->effect != DRV_EFFECT_PREFER_NO_SCHEDULE && !tolerates(k, t)) {
                snprintf(buf, n,
                         "no schedulable node will take its %s pods: node %s and others have "
                         "taint %s=%s:%s, which they do not tolerate, or do not match their "
                         "nodeSelector or required node affinity",
                         drv_role_name(r), drv_strtab_str(st->names, nd->name),
                         drv_strtab_str(st->names, t->key), drv_strtab_str(st->names, t->value),
                         drv_effect_name(t->effect));
                return;
            }
        }
    }
    snprintf(buf, n, "no schedulable node matches its %s pods' required node affinity",
             drv_role_name(r));
}

bool ctrl_explain_nodes(const drv_state *st, int32_t j, char *buf, size_t n)
{
    const drv_job *jb = &st->jobs[j];
    bool some = false; /* (no node at all, or none schedulable: not the constraints' doing) */
    for (int32_t x = 0; x < st->nnodes && !some; x++)
        some = st->nodes[x].schedulable;
    for (int r = 0; r < DRV_NROLES && some; r++) {
        if (jb->target[r] == 0)
            continue; /* (a role that asks nothing is still kept off tainted nodes) */
        bool any = false;
        for (int32_t x = 0; x < st->nnodes && !any; x++)
            any = st->nodes[x].schedulable &&
                  drv_constraint_fits(st, jb->cons[r], st->nodes[x].node_class, NULL);
        if (!any) {
            static const drv_constraint nothing = {0};
            describe(st, r, jb->cons[r] > 0 ? &st->cons[jb->cons[r]] : &nothing, buf, n);
            return true;
        }
    }
    return false;
}

bool ctrl_explain_node_fits(const drv_state *st, int32_t j, int32_t node)
{
    const drv_job *jb = &st->jobs[j];
    for (int r = 0; r < DRV_NROLES; r++)
        if (jb->target[r] > 0 &&
            !drv_constraint_fits(st, jb->cons[r], st->nodes[node].node_class, NULL))
            return false;
    return true;
}

/* With GPU types (state.h), the type a waiting GPU job is held to and its GPUs free on the
 * nodes its constraints allow: "4 x A100-SXM4-40GB; 2 free" (its required type, else the type
 * with most free, "the most free of any type"), or false when the nodes have fewer than two
 * types and it requires none. O(nodes x roles). */
static bool gpu_type_wait(const drv_state *st, int32_t j, int64_t gpus, char *buf, size_t n)
{
    enum { MAXT = 16 };
    if (!st->gpu_type_key || gpus <= 0)
        return false;
    const drv_job *jb = &st->jobs[j];
    int32_t want = 0, type[MAXT], nt = 0;
    int64_t free[MAXT];
    for (int r = 0; r < DRV_NROLES && !want; r++)
        if (jb->target[r] > 0 && jb->role[r].req.gpu > 0)
            want = drv_constraint_gpu_type(st, jb->cons[r]);
    for (int32_t i = 0; i < st->nnodes; i++) {
        if (!st->nodes[i].schedulable || !ctrl_explain_node_fits(st, j, i) ||
            st->nodes[i].alloc.gpu <= 0)
            continue;
        int32_t ty = drv_node_gpu_type(st, i), k = 0;
        while (k < nt && type[k] != ty)
            k++;
        if (k == nt) {
            if (nt == MAXT)
                return false;
            type[nt] = ty;
            free[nt++] = 0;
        }
        drv_res f = drv_node_free(&st->nodes[i]);
        free[k] += f.gpu > 0 ? f.gpu : 0;
    }
    int32_t best = -1;
    for (int32_t k = 0; k < nt; k++)
        if ((want ? type[k] == want : true) && (best < 0 || free[k] > free[best]))
            best = k;
    if (best < 0 || (!want && nt < 2) || type[best] == 0)
        return false;
    snprintf(buf, n, "%lld x %s; %lld free (%s; one GPU type per job)", (long long)gpus,
             drv_strtab_str(st->names, type[best]), (long long)free[best],
             want ? "the type it requires" : "the type with most free of the types it may use");
    return true;
}

void ctrl_explain_waiting(const ctrl_mirror *m, int32_t j, int32_t pos, int32_t npend, char *buf,
                          size_t n)
{
    const drv_state *st = &m->st;
    const ctrl_config *cfg = m->cfg;
    const drv_job *jb = &st->jobs[j];
    char why[400], rank[300] = "";
    if (cfg->o.explain) /* the caller's account of its place in the queue: "; priority ..." */
        cfg->o.explain(cfg->o.explain_arg, &cfg->prof, st, drv_clock_mono() - cfg->t0, j, rank,
                       sizeof rank);
    if (ctrl_explain_nodes(st, j, why, sizeof why) || ctrl_explain_quota(st, j, why, sizeof why)) {
        snprintf(buf, n, "waiting: %s (profile %s)%s", why, cfg->prof.name, rank);
        return;
    }
    if (drv_topo_explain(st, j, why, sizeof why)) { /* bound to a topology level */
        snprintf(buf, n,
                 "waiting for room: its gang of %d pods %s (queue position %d of %d, "
                 "profile %s)%s",
                 drv_job_wanted(jb), why, pos, npend, cfg->prof.name, rank);
        return;
    }
    drv_res need = drv_job_demand(jb), free = {0, 0, 0};
    if (gpu_type_wait(st, j, need.gpu, why, sizeof why)) { /* "waiting for 4 x A100; 2 free" */
        snprintf(buf, n, "waiting for %s (queue position %d of %d, profile %s)%s", why, pos, npend,
                 cfg->prof.name, rank);
        return;
    }
    int32_t ok = 0;
    for (int32_t i = 0; i < st->nnodes; i++)
        if (st->nodes[i].schedulable && ctrl_explain_node_fits(st, j, i)) {
            ok++;
            drv_res f = drv_node_free(&st->nodes[i]);
            if (drv_res_nonneg(f))
                free = drv_res_add(free, f);
        }
    snprintf(buf, n,
             "waiting for room: its gang of %d pods needs cpu %.1f, memory %.1f GiB, gpu %lld "
             "together; %d schedulable nodes its constraints allow have cpu %.1f, memory %.1f "
             "GiB, gpu %lld free in all (queue position %d of %d, profile %s)%s",
             drv_job_wanted(jb), (double)need.cpu / 1000, (double)need.mem / (1 << 30),
             (long long)need.gpu, ok, (double)free.cpu / 1000, (double)free.mem / (1 << 30),
             (long long)free.gpu, pos, npend, cfg->prof.name, rank);
}
