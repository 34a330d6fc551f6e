/*
 * cycle_decide.c - the decision list of a cycle and the assumed overlay it keeps current
 * (cycle_int.h): every drv_ctx_bind, evict, scale, resize, migrate or set_batch appends one
 * decision and updates the per-node free resources, per-pod nodes and per-job worker counts the
 * rest of the cycle sees; drv_ctx_rollback undoes decisions newest first, restoring the overlay
 * exactly (capacity given back by a rollback does not clear the failed-gang memo).
 */
#include "cycle_int.h"

static void ix_update(drv_sched *s, int32_t node)
{
    drv_nodeindex_update(s->index.ix, node, s->assumed.free[node],
                         s->assumed.nrole[node * DRV_NROLES + DRV_ROLE_PS]);
}

static void set_pod_node(drv_ctx *c, int32_t pod, int32_t node)
{
    const drv_state *st = c->snap->st;
    int role = st->pods[pod].role;
    int32_t from = cycle_pod_node(c, pod);
    if (st->nqueues > 0 && (from < 0) != (node < 0)) { /* bound or unbound: its queue's use */
        int32_t q = st->jobs[st->pods[pod].job].queue;
        drv_res r = cycle_pod_req(st, pod);
        c->s->assumed.qused[q] = node >= 0 ? drv_res_add(c->s->assumed.qused[q], r)
                                           : drv_res_sub(c->s->assumed.qused[q], r);
    }
    if (from >= 0)
        c->s->assumed.nrole[from * DRV_NROLES + role]--;
    if (node >= 0)
        c->s->assumed.nrole[node * DRV_NROLES + role]++;
    if (role == DRV_ROLE_PS && c->s->index.ok) { /* the index keeps PS counts for bounds */
        if (from >= 0)
            ix_update(c->s, from);
        if (node >= 0)
            ix_update(c->s, node);
    }
    cycle_map_set(&c->s->assumed.pod_node, pod, node);
    c->s->assumed.job_touch[c->snap->st->pods[pod].job] = c->s->stamp;
    c->s->assumed.touch_stamp = c->s->stamp;
}

static void set_workers(drv_ctx *c, int32_t job, int32_t n)
{
    cycle_map_set(&c->s->assumed.job_workers, job, n);
}

int cycle_map_reserve(cycle_map *m, int32_t more)
{
    if (2 * ((int64_t)m->n + more) <= m->cap)
        return 0;
    int64_t cap = m->cap ? m->cap : 64;
    while (cap < 2 * ((int64_t)m->n + more))
        cap *= 2;
    if (cap > INT32_MAX)
        return DRV_ENOMEM;
    cycle_slot *t = drv_calloc((size_t)cap, sizeof *t); /* stamps 0: every slot empty */
    if (!t)
        return DRV_ENOMEM;
    cycle_map old = *m;
    m->slot = t;
    m->cap = (int32_t)cap;
    m->n = 0;
    uint32_t cur = m->cur;
    m->cur = 1;
    for (int32_t i = 0; i < old.cap; i++)
        if (old.slot[i].stamp == cur)
            cycle_map_set(m, old.slot[i].key, old.slot[i].val);
    drv_free(old.slot);
    return 0;
}

void cycle_map_set(cycle_map *m, int32_t key, int32_t val)
{
    uint32_t i = cycle_map_home(m, key);
    while (m->slot[i].stamp == m->cur && m->slot[i].key != key)
        i = (i + 1) & (uint32_t)(m->cap - 1);
    if (m->slot[i].stamp != m->cur) {
        m->slot[i] = (cycle_slot){key, val, m->cur};
        m->n++;
    } else {
        m->slot[i].val = val;
    }
}

/* Room in the overlay's maps before a decision that sets a pod's node or a job's workers. */
static int reserve(drv_ctx *c, cycle_map *m)
{
    int rc = cycle_map_reserve(m, 1);
    return rc ? drv_ctx_fail(c, rc) : 0;
}

static void take(drv_ctx *c, int32_t node, drv_res r)
{
    drv_sched *s = c->s;
    s->assumed.free[node] = drv_res_sub(s->assumed.free[node], r);
    if (c->snap->st->nodes[node].schedulable)
        s->assumed.totfree = drv_res_sub(s->assumed.totfree, r);
    if (s->index.ok)
        ix_update(s, node);
    if (s->topo.free_stamp == s->stamp)
        cycle_topo_take(s, c->snap->st, node, r, 1);
}

static void give(drv_ctx *c, int32_t node, drv_res r)
{
    drv_sched *s = c->s;
    s->assumed.free[node] = drv_res_add(s->assumed.free[node], r);
    if (s->index.ok)
        ix_update(s, node);
    if (s->topo.free_stamp == s->stamp)
        cycle_topo_take(s, c->snap->st, node, r, -1);
    if (c->snap->st->nodes[node].schedulable) {
        s->assumed.totfree = drv_res_add(s->assumed.totfree, r);
        s->assumed.maxfree = drv_res_max(s->assumed.maxfree, s->assumed.free[node]);
    }
    if (!s->assumed.rolling_back)
        cycle_memo_forget(s); /* capacity grew: a gang that failed may fit now */
}

static int push(drv_ctx *c, drv_decision x)
{
    int rc = drv_decisions_push(c->out, x);
    c->changes += rc == 0;
    return rc ? drv_ctx_fail(c, rc) : 0;
}

/* ---- decisions --------------------------------------------------------------------------- */

int drv_ctx_bind(drv_ctx *c, int32_t pod, int32_t node)
{
    const drv_state *st = c->snap->st;
    drv_decision x = {
        .kind = DRV_BIND, .job = st->pods[pod].job, .pod = pod, .node = node, .from = -1};
    int rc = reserve(c, &c->s->assumed.pod_node) ? DRV_ENOMEM : push(c, x);
    if (rc)
        return rc;
    take(c, node, cycle_pod_req(st, pod));
    set_pod_node(c, pod, node);
    return 0;
}

static int evict(drv_ctx *c, int32_t pod, int reason, int32_t by)
{
    const drv_state *st = c->snap->st;
    int32_t from = cycle_pod_node(c, pod);
    if (from < 0)
        return 0;
    drv_decision x = {.kind = DRV_EVICT,
                      .job = st->pods[pod].job,
                      .pod = pod,
                      .node = -1,
                      .value = by,
                      .reason = reason,
                      .from = from};
    int rc = reserve(c, &c->s->assumed.pod_node) ? DRV_ENOMEM : push(c, x);
    if (rc)
        return rc;
    give(c, from, cycle_pod_req(st, pod));
    set_pod_node(c, pod, -1);
    return 0;
}

int drv_ctx_evict(drv_ctx *c, int32_t pod, int reason)
{
    return evict(c, pod, reason, -1);
}

int drv_ctx_preempt(drv_ctx *c, int32_t pod, int32_t by)
{
    return evict(c, pod, DRV_REASON_PREEMPT, by);
}

int drv_ctx_scale(drv_ctx *c, int32_t job, int32_t workers)
{
    int32_t prev = drv_ctx_workers(c, job);
    if (prev == workers)
        return 0;
    /* A shrink below the workers bound takes the surplus off first, highest slots first (a
     * role never has more pods bound than its target, docs/cycle.md): a plugin that only
     * means "this job now wants n" (tiresias resetting a job grown by dragon) cannot leave
     * workers running that nobody wants. A shrink that evicted its victims itself finds none
     * left to take. */
    const drv_state *st = c->snap->st;
    int32_t nbound = 0, slots = 0;
    for (int32_t pod; (pod = drv_job_pod(st, job, DRV_ROLE_WORKER, slots)) >= 0; slots++)
        nbound += cycle_pod_node(c, pod) >= 0;
    for (int32_t i = slots - 1; i >= 0 && nbound > workers; i--) {
        int32_t pod = drv_job_pod(st, job, DRV_ROLE_WORKER, i);
        if (cycle_pod_node(c, pod) < 0)
            continue;
        int rc = drv_ctx_evict(c, pod, DRV_REASON_SHRINK);
        if (rc)
            return rc;
        nbound--;
    }
    drv_decision x = {.kind = DRV_SCALE,
                      .job = job,
                      .pod = -1,
                      .node = -1,
                      .value = workers,
                      .from = -1,
                      .prev = prev};
    int rc = reserve(c, &c->s->assumed.job_workers) ? DRV_ENOMEM : push(c, x);
    if (rc)
        return rc;
    set_workers(c, job, workers);
    return 0;
}

int drv_ctx_resize(drv_ctx *c, int32_t pod, int64_t cpu_limit)
{
    const drv_state *st = c->snap->st;
    const drv_pod *p = &st->pods[pod];
    if (p->cpu_limit == cpu_limit)
        return 0;
    drv_decision x = {.kind = DRV_RESIZE,
                      .job = p->job,
                      .pod = pod,
                      .node = -1,
                      .value = cpu_limit,
                      .from = -1,
                      .prev = p->cpu_limit};
    return push(c, x);
}

int drv_ctx_migrate(drv_ctx *c, int32_t pod, int32_t node)
{
    const drv_state *st = c->snap->st;
    int32_t from = cycle_pod_node(c, pod);
    drv_decision x = {
        .kind = DRV_MIGRATE, .job = st->pods[pod].job, .pod = pod, .node = node, .from = from};
    int rc = reserve(c, &c->s->assumed.pod_node) ? DRV_ENOMEM : push(c, x);
    if (rc)
        return rc;
    if (from >= 0)
        give(c, from, cycle_pod_req(st, pod));
    take(c, node, cycle_pod_req(st, pod));
    set_pod_node(c, pod, node);
    return 0;
}

static int set_batch(drv_ctx *c, int32_t job, int64_t batch, int64_t now, int32_t reason)
{
    int64_t prev = drv_ctx_batch(c, job, now);
    if (prev == batch)
        return 0;
    drv_decision x = {.kind = DRV_BATCH,
                      .job = job,
                      .pod = -1,
                      .node = -1,
                      .value = batch,
                      .reason = reason,
                      .from = -1,
                      .prev = prev};
    return push(c, x);
}

int drv_ctx_set_batch(drv_ctx *c, int32_t job, int64_t batch, int64_t now)
{
    return set_batch(c, job, batch, now, DRV_REASON_NONE);
}

int drv_ctx_set_batch_inplace(drv_ctx *c, int32_t job, int64_t batch, int64_t now)
{
    return set_batch(c, job, batch, now, DRV_REASON_INPLACE);
}

/* The newest BATCH of this cycle for the job (a rollback pops it), else the caller's: batch
 * decisions are few, so no per-job array is kept for them. */
int64_t drv_ctx_batch(const drv_ctx *c, int32_t job, int64_t now)
{
    for (int32_t i = c->out->n - 1; i >= c->base; i--)
        if (c->out->v[i].kind == DRV_BATCH && c->out->v[i].job == job)
            return c->out->v[i].value;
    return now;
}

drv_mark drv_ctx_mark(const drv_ctx *c)
{
    return (drv_mark){c->out->n};
}

void drv_ctx_rollback(drv_ctx *c, drv_mark m)
{
    const drv_state *st = c->snap->st;
    if (m.ndec < c->base)
        m.ndec = c->base;
    c->changes += 2;
    drv_sched *s = c->s;
    /* Undoing a bind made before a job was marked as failing the capacity bounds gives back
     * room it did not see: the marks must go (a rollback otherwise restores older room). */
    int32_t room_dec = s->memo.room_stamp == s->stamp ? s->memo.room_dec : 0;
    bool regrew = false;
    s->assumed.rolling_back = true;
    while (c->out->n > m.ndec) {
        const drv_decision *x = &c->out->v[--c->out->n];
        switch (x->kind) {
        case DRV_BIND:
            give(c, x->node, cycle_pod_req(st, x->pod));
            set_pod_node(c, x->pod, -1);
            regrew |= c->out->n < room_dec;
            break;
        case DRV_EVICT:
            take(c, x->from, cycle_pod_req(st, x->pod));
            set_pod_node(c, x->pod, x->from);
            break;
        case DRV_SCALE:
            set_workers(c, x->job, (int32_t)x->prev);
            break;
        case DRV_MIGRATE:
            give(c, x->node, cycle_pod_req(st, x->pod));
            regrew |= c->out->n < room_dec;
            if (x->from >= 0)
                take(c, x->from, cycle_pod_req(st, x->pod));
            set_pod_node(c, x->pod, x->from);
            break;
        default:
            break;
        }
    }
    s->assumed.rolling_back = false;
    if (regrew)
        cycle_memo_forget(s);
}
