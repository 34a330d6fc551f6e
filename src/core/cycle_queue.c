/*
 * cycle_queue.c - phase 1 of a cycle (docs/cycle.md): the queued jobs, most urgent first. The
 * records of last cycle's queue are kept (s->order) and collected again in that order, so a
 * queue whose order did not change costs one pass; with a lone keyed queue_order plugin the
 * jobs are ordered by (key, submit time, id) read from the records, with no call per
 * comparison. Also drv_ctx_queue_stuck, which reads the same records.
 */
#include "cycle_int.h"

#include <string.h>

/* A record for job: its order (key 0 until asked) and what drv_ctx_queue_stuck needs, which a
 * job's specification fixes (roles other than workers keep their replicas as targets). */
static qent make_qent(const drv_state *st, int32_t job)
{
    const drv_job *j = &st->jobs[job];
    qent e = {
        0, j->submit, job, j->role[DRV_ROLE_WORKER].min >= 1, {INT64_MAX, INT64_MAX, INT64_MAX}};
    for (int r = 0; r < DRV_NROLES; r++) {
        const drv_rolespec *rs = &j->role[r];
        if (r != DRV_ROLE_WORKER && rs->replicas > 0)
            e.has_pod = true;
        if (rs->replicas > 0 || rs->max > 0) {
            e.least.cpu = rs->req.cpu < e.least.cpu ? rs->req.cpu : e.least.cpu;
            e.least.mem = rs->req.mem < e.least.mem ? rs->req.mem : e.least.mem;
            e.least.gpu = rs->req.gpu < e.least.gpu ? rs->req.gpu : e.least.gpu;
        }
    }
    return e;
}

static int queue_cmp(const drv_ctx *c, int32_t a, int32_t b)
{
    const drv_profile *pr = c->s->prof;
    for (int i = 0; i < pr->nuse[DRV_PT_QUEUE_ORDER]; i++) {
        const drv_plugin *p = pr->use[DRV_PT_QUEUE_ORDER][i].p;
        void *ps = c->s->ustate[DRV_PT_QUEUE_ORDER][i];
        int r;
        if (p->queue_key) {
            /* The first plugin's keys were computed once for this cycle. */
            double ka = i == 0 ? c->s->qkey[a] : p->queue_key(c, ps, a);
            double kb = i == 0 ? c->s->qkey[b] : p->queue_key(c, ps, b);
            r = ka < kb ? -1 : ka > kb ? 1 : 0;
        } else {
            r = p->queue_cmp(c, ps, a, b);
        }
        if (r)
            return r;
    }
    const drv_job *ja = &c->snap->st->jobs[a], *jb = &c->snap->st->jobs[b];
    if (ja->submit != jb->submit)
        return ja->submit < jb->submit ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Stable merge sort with a context (qsort_r is not standard C). */
static void merge_sort(const drv_ctx *c, int32_t *v, int32_t *tmp, int32_t n)
{
    if (n < 2)
        return;
    int32_t h = n / 2;
    merge_sort(c, v, tmp, h);
    merge_sort(c, v + h, tmp, n - h);
    if (queue_cmp(c, v[h - 1], v[h]) <= 0)
        return; /* already in order: queues usually are, so a sort is often O(n) */
    int32_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = queue_cmp(c, v[j], v[i]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

/* queue_cmp for a lone keyed plugin, on records. */
static int qent_cmp(const qent *a, const qent *b)
{
    if (a->key < b->key)
        return -1;
    if (a->key > b->key)
        return 1;
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    return a->job < b->job ? -1 : a->job > b->job;
}

/* merge_sort's algorithm on indices of records, so ties and all resolve alike; what moves is
 * an index, not a record. */
static void merge_sort_idx(const qent *rec, int32_t *v, int32_t *tmp, int32_t n)
{
    if (n < 2)
        return;
    int32_t h = n / 2;
    merge_sort_idx(rec, v, tmp, h);
    merge_sort_idx(rec, v + h, tmp, n - h);
    if (qent_cmp(&rec[v[h - 1]], &rec[v[h]]) <= 0)
        return;
    int32_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = qent_cmp(&rec[v[j]], &rec[v[i]]) < 0 ? v[j++] : v[i++];
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

/* Is every record's least request above `free` in dimension d (0 cpu, 1 mem, 2 gpu)? Stops at
 * the first that is not: when something fits, that is usually the queue's first job. */
static bool all_above(const qent *rec, int32_t n, int d, int64_t free)
{
    for (int32_t i = 0; i < n; i++) {
        const drv_res *q = &rec[i].least;
        if ((d == 0 ? q->cpu : d == 1 ? q->mem : q->gpu) <= free)
            return false;
    }
    return true;
}

bool drv_ctx_queue_stuck(const drv_ctx *c)
{
    const drv_sched *s = c->s;
    if (c->out->n != c->base || s->norder == 0 || c->snap->st->nqueued_bound != 0)
        return false;
    const drv_res *m = &s->maxfree;
    if (!all_above(s->order, s->norder, 2, m->gpu) && !all_above(s->order, s->norder, 0, m->cpu) &&
        !all_above(s->order, s->norder, 1, m->mem))
        return false; /* in each dimension some pod fits: no pod is shown not to fit */
    for (int32_t i = 0; i < s->norder; i++)
        if (!s->order[i].has_pod)
            return false;
    return true;
}

/* Collects the queued jobs into s->order: last cycle's records of jobs still queued, in their
 * order, then newcomers in id order. The queue order is a total order (ties go by submit time,
 * then id), so the sorted result does not depend on the order jobs are collected in. The
 * queued set says which are still queued without reading the jobs; records stay in place.
 * Returns how many came from last cycle's queue. Needs s->seen to cover every job. */
static int32_t collect(drv_sched *s, const drv_state *st)
{
    int32_t nq = st->nqueued;
    qent *rec = s->order;
    int32_t npend = 0;
    const uint64_t *qbits = st->queued.bits; /* drv_state_is_queued, inline */
    for (int32_t i = 0; i < s->norder && npend < nq; i++)
        if (rec[i].job < st->njobs && (qbits[rec[i].job / 64] >> (rec[i].job % 64)) & 1) {
            if (npend != i)
                rec[npend] = rec[i];
            npend++;
        }
    s->norder = npend;
    int32_t nold = npend;
    if (nold < nq) { /* newcomers: the queued jobs not seen above */
        for (int32_t i = 0; i < nold; i++)
            s->seen[rec[i].job] = s->stamp;
        for (int32_t j = drv_state_next_queued(st, 0); j >= 0 && npend < nq;
             j = drv_state_next_queued(st, j + 1))
            if (s->seen[j] != s->stamp)
                rec[npend++] = make_qent(st, j);
        s->norder = npend;
    }
    return nold;
}

/* A lone keyed plugin: orders the records by (key, submit, id). Keys of jobs queued last cycle
 * (the first nold) are kept when the plugin says they did not change: then only newcomers are
 * asked. Returns true when the records are in order already, else fills idx with the sorted
 * order of record indices. */
static bool sort_keyed(drv_ctx *c, const drv_plugin *q0, void *q0s, int32_t nold, bool was_keyed,
                       int32_t *idx, int32_t *tmp)
{
    qent *rec = c->s->order;
    int32_t npend = c->s->norder;
    bool kept = was_keyed && q0->queue_kept && q0->queue_kept(c, q0s);
    for (int32_t i = kept ? nold : 0; i < npend; i++)
        rec[i].key = q0->queue_key(c, q0s, rec[i].job);
    /* Most cycles collect the queue already in order: the merge sort would then only compare
     * each boundary and merge nothing - the same as this one pass. */
    bool sorted = true;
    for (int32_t i = 1; i < npend && sorted; i++)
        sorted = qent_cmp(&rec[i - 1], &rec[i]) <= 0;
    if (!sorted) {
        for (int32_t i = 0; i < npend; i++)
            idx[i] = i;
        merge_sort_idx(rec, idx, tmp, npend);
    }
    return sorted;
}

/* Any other queue_order: sorts the job ids with the plugins' comparison (the first plugin's
 * keys asked once per job), then rebuilds the records in that order. 0 or DRV_ENOMEM. */
static int sort_by_plugins(drv_ctx *c, const drv_plugin *q0, void *q0s, int32_t *pend, int32_t *tmp)
{
    drv_sched *s = c->s;
    const drv_state *st = c->snap->st;
    int32_t npend = s->norder;
    if (q0 && q0->queue_key) {
        if (drv_grow(&s->qkey, sizeof *s->qkey, &s->cap_qkey, st->njobs) != 0)
            return DRV_ENOMEM;
        for (int32_t i = 0; i < npend; i++)
            s->qkey[pend[i]] = q0->queue_key(c, q0s, pend[i]);
    }
    merge_sort(c, pend, tmp, npend);
    for (int32_t i = 0; i < npend; i++)
        s->order[i] = make_qent(st, pend[i]);
    return 0;
}

/* Puts the records in the sorted order idx: the other buffer takes them and becomes s->order;
 * pend follows. 0 or DRV_ENOMEM. */
static int adopt_order(drv_sched *s, const int32_t *idx, int32_t *pend)
{
    int32_t npend = s->norder;
    if (drv_grow(&s->order2, sizeof *s->order2, &s->cap_order2, npend) != 0)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < npend; i++) {
        s->order2[i] = s->order[idx[i]];
        pend[i] = s->order2[i].job;
    }
    qent *t = s->order;
    int32_t tc = s->cap_order;
    s->order = s->order2;
    s->cap_order = s->cap_order2;
    s->order2 = t;
    s->cap_order2 = tc;
    return 0;
}

int cycle_order_queue(drv_ctx *c, int32_t **jobs, int32_t *n)
{
    drv_sched *s = c->s;
    const drv_state *st = c->snap->st;
    const drv_profile *pr = s->prof;
    int32_t nq = st->nqueued;
    int32_t *pend = drv_arena_alloc(&s->arena, sizeof(int32_t) * ((size_t)nq + 1));
    int32_t *tmp = drv_arena_alloc(&s->arena, sizeof(int32_t) * ((size_t)nq + 1));
    int32_t *idx = drv_arena_alloc(&s->arena, sizeof(int32_t) * ((size_t)nq + 1));
    if (!pend || !tmp || !idx || drv_grow(&s->order, sizeof *s->order, &s->cap_order, nq) != 0)
        return DRV_ENOMEM;
    int32_t seen_old = s->cap_seen;
    if (drv_grow(&s->seen, sizeof *s->seen, &s->cap_seen, st->njobs) != 0)
        return DRV_ENOMEM;
    if (s->cap_seen > seen_old)
        memset(s->seen + seen_old, 0, (size_t)(s->cap_seen - seen_old) * sizeof *s->seen);
    bool was_keyed = s->order_keyed;
    s->order_keyed = false; /* until this cycle's keys are in the records */
    int32_t nold = collect(s, st);
    int32_t npend = s->norder;
    for (int32_t i = 0; i < npend; i++)
        pend[i] = s->order[i].job;
    for (int i = 0; i < pr->nuse[DRV_PT_QUEUE_ORDER]; i++)
        if (pr->use[DRV_PT_QUEUE_ORDER][i].p->queue_begin)
            pr->use[DRV_PT_QUEUE_ORDER][i].p->queue_begin(c, s->ustate[DRV_PT_QUEUE_ORDER][i], pend,
                                                          npend);
    const drv_plugin *q0 =
        pr->nuse[DRV_PT_QUEUE_ORDER] > 0 ? pr->use[DRV_PT_QUEUE_ORDER][0].p : NULL;
    void *q0s = s->ustate[DRV_PT_QUEUE_ORDER][0];
    bool lone_key = pr->nuse[DRV_PT_QUEUE_ORDER] == 1 && q0->queue_key;
    bool sorted = true;
    if (lone_key)
        sorted = sort_keyed(c, q0, q0s, nold, was_keyed, idx, tmp);
    else if (sort_by_plugins(c, q0, q0s, pend, tmp) != 0)
        return DRV_ENOMEM;
    if (!sorted && adopt_order(s, idx, pend) != 0)
        return DRV_ENOMEM;
    s->order_keyed = lone_key;
    *jobs = pend;
    *n = npend;
    return 0;
}
