/*
 * cycle_queue.c - phase 1 of the cycle (docs/cycle.md): collects the queued jobs and orders
 * them (queue_order plugins), and answers the plugins' questions about that queue
 * (drv_ctx_queue_stuck, drv_ctx_queued_cannot_fit).
 *
 * The records of last cycle's queue are kept (s->queue.order) and collected again in that order, so
 * a queue whose order did not change costs one pass; with a lone keyed queue_order plugin the
 * jobs are ordered by (key, submit time, id) read from the records, with a chain of keyed ones
 * by their rows of keys (cycle_queue.fkey), with no call per comparison; a comparator's order
 * sorts the records' indices. A record is made once while its job waits. What a record is and
 * what it keeps is in cycle_int.h (qent, qfit).
 */
#include "cycle_queue.h"

#include <string.h>

/* What the job's specification fixes for the capacity tests: roles other than workers keep
 * their replicas as targets, and a worker target is never below the minimum (drv_state_check),
 * so min(min, target) workers is the minimum - the record of a job stands while it waits,
 * whatever targets the plugins set (and its specification never changes). */
static qfit fit_of(const drv_job *j)
{
    qfit e = {
        {INT64_MAX, INT64_MAX, INT64_MAX}, {0, 0, 0}, {0, 0, 0}, j->role[DRV_ROLE_WORKER].min >= 1};
    for (int r = 0; r < DRV_NROLES; r++) {
        const drv_rolespec *rs = &j->role[r];
        if (r != DRV_ROLE_WORKER && rs->replicas > 0)
            e.has_pod = true;
        if (rs->replicas > 0 || rs->max > 0)
            e.least = drv_res_min(e.least, rs->req);
        int32_t pods = j->target[r];
        if (r == DRV_ROLE_WORKER && rs->min < pods)
            pods = rs->min;
        if (pods > 0) {
            e.floor = drv_res_add(e.floor, drv_res_scale(rs->req, pods));
            e.podmax = drv_res_max(e.podmax, rs->req);
        }
    }
    return e;
}

/* A record's GPU bounds from its entry, capped (qent). */
static void set_gpu(qent *r, const qfit *e)
{
    r->gpu_podmax = e->podmax.gpu < INT32_MAX ? (int32_t)e->podmax.gpu : INT32_MAX;
    r->gpu_floor = e->floor.gpu < INT32_MAX ? (int32_t)e->floor.gpu : INT32_MAX;
}

/* A record for job: its order (key 0 until asked), and in a qfit entry taken for it what
 * drv_ctx_queue_stuck needs (fit_of). Needs a free entry (qfit_room). */
static qent make_qent(drv_sched *s, const drv_state *st, int32_t job)
{
    cycle_queue *q = &s->queue;
    const drv_job *j = &st->jobs[job];
    int32_t t = q->nfree_fit > 0 ? q->free_fit[--q->nfree_fit] : q->nfit++;
    q->fit[t] = fit_of(j);
    qent r = {.key = 0, .submit = j->submit, .job = job, .fit = t};
    set_gpu(&r, &q->fit[t]);
    return r;
}

/* Room for n records' entries in all: every entry handed out is in use by a record or free. 0
 * or DRV_ENOMEM. */
static int qfit_room(drv_sched *s, int32_t n)
{
    cycle_queue *q = &s->queue;
    if (n < q->nfit)
        n = q->nfit;
    if (drv_grow(&q->fit, sizeof *q->fit, &q->cap_fit, n) != 0 ||
        drv_grow(&q->free_fit, sizeof *q->free_fit, &q->cap_free_fit, n) != 0)
        return DRV_ENOMEM;
    return 0;
}

static int queue_cmp(const drv_ctx *c, int32_t a, int32_t b)
{
    cycle_queue *q = &c->s->queue;
    const drv_profile *pr = c->s->prof;
    for (int i = 0; i < q->nchain; i++) { /* the chain, idle plugins left out */
        const drv_plugin *p = pr->use[DRV_PT_QUEUE_ORDER][q->chain[i]].p;
        int r;
        if (p->queue_key) { /* keys were asked once this cycle (sort_by_plugins) */
            double ka = q->key[i][a], kb = q->key[i][b];
            r = ka < kb ? -1 : ka > kb ? 1 : 0;
        } else {
            cycle_running(c->s, p, DRV_PT_QUEUE_ORDER);
            r = p->queue_cmp(c, c->s->plug.ustate[DRV_PT_QUEUE_ORDER][q->chain[i]], a, b);
        }
        if (r)
            return r;
    }
    const drv_job *ja = &c->snap->st->jobs[a], *jb = &c->snap->st->jobs[b];
    if (ja->submit != jb->submit)
        return ja->submit < jb->submit ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* Stable merge sort with a context (qsort_r is not standard C) of v, indices of records, by
 * queue_cmp on their jobs. */
static void merge_sort(const drv_ctx *c, const qent *rec, int32_t *v, int32_t *tmp, int32_t n)
{
    if (n < 2)
        return;
    int32_t h = n / 2;
    merge_sort(c, rec, v, tmp, h);
    merge_sort(c, rec, v + h, tmp, n - h);
    if (queue_cmp(c, rec[v[h - 1]].job, rec[v[h]].job) <= 0)
        return; /* already in order: queues usually are, so a sort is often O(n) */
    int32_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = queue_cmp(c, rec[v[j]].job, rec[v[i]].job) < 0 ? v[j++] : v[i++];
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

/* queue_cmp on records: with nrow 0 by qent_cmp (a lone keyed plugin), else by the records' rows
 * of keys (a chain of keyed plugins, cycle_queue.fkey) in chain order, then submit time, then
 * id - what queue_cmp answers, from the records alone. */
static inline int rec_cmp(const cycle_queue *q, int32_t nrow, const qent *a, const qent *b)
{
    if (nrow == 0)
        return qent_cmp(a, b);
    const double *ka = &q->fkey[(size_t)a->fit * (size_t)nrow];
    const double *kb = &q->fkey[(size_t)b->fit * (size_t)nrow];
    for (int32_t i = 0; i < nrow; i++) {
        if (ka[i] < kb[i])
            return -1;
        if (ka[i] > kb[i])
            return 1;
    }
    if (a->submit != b->submit)
        return a->submit < b->submit ? -1 : 1;
    return a->job < b->job ? -1 : a->job > b->job;
}

/*
 * Sorts v[0..n), indices of the records q->order, by rec_cmp: one pass finds the ascending runs
 * (v[0..from) is known to be one), then neighbouring runs are merged pairwise until one is
 * left. O(n) for a queue in order, O(n log r) for r runs: a few newcomers placed, or a few keys
 * that moved after the bounds changed, cost a few runs, not a sort of the whole queue. The
 * order is total (ties go by submit time, then id): any sort gives the same. tmp needs n, run
 * n + 1 entries.
 */
static void natural_sort_idx(const cycle_queue *q, int32_t nrow, int32_t *v, int32_t *tmp,
                             int32_t *run, int32_t n, int32_t from)
{
    const qent *rec = q->order;
    int32_t nr = 0;
    run[nr++] = 0;
    for (int32_t i = from > 1 ? from : 1; i < n; i++)
        if (rec_cmp(q, nrow, &rec[v[i - 1]], &rec[v[i]]) > 0)
            run[nr++] = i;
    run[nr] = n;
    int32_t *a = v, *b = tmp;
    while (nr > 1) {
        int32_t k = 0;
        for (int32_t r = 0; r < nr; r += 2) {
            int32_t lo = run[r], mid = run[r + 1], hi = r + 2 <= nr ? run[r + 2] : mid;
            int32_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                b[o++] = rec_cmp(q, nrow, &rec[a[j]], &rec[a[i]]) < 0 ? a[j++] : a[i++];
            while (i < mid)
                b[o++] = a[i++];
            while (j < hi)
                b[o++] = a[j++];
            run[k++] = lo;
        }
        run[k] = n;
        nr = k;
        int32_t *t = a;
        a = b;
        b = t;
    }
    if (a != v)
        memcpy(v, a, (size_t)n * sizeof *v);
}

/* Whether q->order[0..n) is in order, checked from record `from` on; *at receives where the
 * first descent is (n when none). */
static bool in_order(const cycle_queue *q, int32_t nrow, int32_t n, int32_t from, int32_t *at)
{
    int32_t i = from > 1 ? from : 1;
    while (i < n && rec_cmp(q, nrow, &q->order[i - 1], &q->order[i]) <= 0)
        i++;
    *at = i;
    return i >= n;
}

/* Folds a record's entry into the summary over the records (drv_sched.qsum_least), counting
 * the records at each least. */
static void qsum_add(drv_sched *s, const qfit *f)
{
    cycle_queue *q = &s->queue;
    const int64_t v[3] = {f->least.cpu, f->least.mem, f->least.gpu};
    int64_t *l[3] = {&q->sum.least.cpu, &q->sum.least.mem, &q->sum.least.gpu};
    for (int d = 0; d < 3; d++) {
        if (v[d] < *l[d]) {
            *l[d] = v[d];
            q->sum.at[d] = 1;
        } else if (v[d] == *l[d]) {
            q->sum.at[d]++;
        }
    }
    q->sum.nopod += !f->has_pod;
}

/* A record's entry taken out of the summary: a least no record holds any more stays, as a bound
 * (its count 0). */
static void qsum_drop(drv_sched *s, const qfit *f)
{
    cycle_queue *q = &s->queue;
    const int64_t v[3] = {f->least.cpu, f->least.mem, f->least.gpu};
    const int64_t l[3] = {q->sum.least.cpu, q->sum.least.mem, q->sum.least.gpu};
    for (int d = 0; d < 3; d++)
        if (v[d] == l[d])
            q->sum.at[d]--;
    q->sum.nopod -= !f->has_pod;
}

/* The summary computed again over every record: O(records). */
static void qsum_build(drv_sched *s)
{
    cycle_queue *q = &s->queue;
    q->sum.least = (drv_res){INT64_MAX, INT64_MAX, INT64_MAX};
    q->sum.at[0] = q->sum.at[1] = q->sum.at[2] = q->sum.nopod = 0;
    for (int32_t i = 0; i < q->norder; i++)
        qsum_add(s, &q->fit[q->order[i].fit]);
    q->sum.ok = true;
}

bool drv_ctx_queue_stuck(const drv_ctx *c)
{
    drv_sched *s = c->s;
    cycle_queue *q = &s->queue;
    if (c->out->n != c->base || q->norder == 0 || c->snap->st->nqueued_bound != 0)
        return false;
    if (!q->sum.ok)
        qsum_build(s);
    /* A least that no record holds any more (its count 0) is below the true one: when it does
     * not fit, the true one does not either; when it fits, only the true one can tell. */
    bool fits = drv_res_fits(q->sum.least, s->assumed.maxfree);
    if (fits && (q->sum.at[0] == 0 || q->sum.at[1] == 0 || q->sum.at[2] == 0)) {
        qsum_build(s);
        fits = drv_res_fits(q->sum.least, s->assumed.maxfree);
    }
    if (fits)
        return false; /* in each dimension some pod fits: no pod is shown not to fit */
    return q->sum.nopod == 0;
}

/* Queue record r against job: -1 when it is not the cycle's record of it or pods of it were
 * bound or moved (its gang is less than the record says), 1 when it cannot fit (maxfree,
 * totfree), 0 when it may. touched, bound: whether any job was touched this cycle, any queued
 * job has pods bound (the caller reads them once for many records). */
static inline int record_fit(const drv_sched *s, const drv_state *st, const qent *r, int32_t job,
                             bool touched, bool bound)
{
    if (r->job != job || (touched && s->assumed.job_touch[job] == s->stamp) ||
        (bound && (st->queued_bound.bits[job / 64] >> (job % 64)) & 1))
        return -1;
    if (r->gpu_podmax > s->assumed.maxfree.gpu || r->gpu_floor > s->assumed.totfree.gpu)
        return 1; /* the GPUs alone: no read of the entry */
    const qfit *e = &s->queue.fit[r->fit];
    return !drv_res_fits(e->podmax, s->assumed.maxfree) ||
           !drv_res_fits(e->floor, s->assumed.totfree);
}

bool drv_ctx_queued_cannot_fit(const drv_ctx *c, int32_t i, int32_t job)
{
    const drv_sched *s = c->s;
    const cycle_queue *q = &s->queue;
    const drv_state *st = c->snap->st;
    if (i < 0 || i >= q->norder)
        return false;
    return record_fit(s, st, &q->order[i], job, s->assumed.touch_stamp == s->stamp,
                      st->nqueued_bound > 0) == 1;
}

int32_t drv_ctx_queued_skip(const drv_ctx *c, int32_t i, const int32_t *jobs, int32_t n)
{
    const drv_sched *s = c->s;
    const cycle_queue *q = &s->queue;
    const drv_state *st = c->snap->st;
    /* drv_ctx_queued_cannot_fit for each k in turn, its loop-invariant tests read once: nothing
     * it reads changes between two of them. */
    bool touched = s->assumed.touch_stamp == s->stamp, bound = st->nqueued_bound > 0;
    int32_t end = n < q->norder ? n : q->norder, k = i < 0 ? 0 : i;
    for (; k < end; k++)
        if (record_fit(s, st, &q->order[k], jobs[k], touched, bound) != 1)
            return k;
    return k < n ? k : n;
}

int32_t drv_ctx_queue_kept(const drv_ctx *c, uint64_t *list)
{
    cycle_queue *q = &c->s->queue;
    *list = q->lists;
    return q->kept;
}

/* Marks job as having a record (in) or not in s->queue.inq. */
static inline void inq_put(drv_sched *s, int32_t job, bool in)
{
    cycle_queue *q = &s->queue;
    uint64_t bit = (uint64_t)1 << (job % 64);
    if (in)
        q->inq[job / 64] |= bit;
    else
        q->inq[job / 64] &= ~bit;
}

/* A record dropped: its job has none, its qfit entry is free. */
static void drop_record(drv_sched *s, const drv_state *st, const qent *e)
{
    cycle_queue *q = &s->queue;
    if (e->job < st->njobs)
        inq_put(s, e->job, false);
    q->free_fit[q->nfree_fit++] = e->fit;
    if (q->sum.ok)
        qsum_drop(s, &q->fit[e->fit]);
}

/* Every record's job is still queued: no job left the queue of the state they were collected
 * from since. */
static bool records_stand(const drv_sched *s, const drv_state *st)
{
    const cycle_queue *q = &s->queue;
    return q->st == st && q->leaves == st->queue_leaves && q->norder <= st->nqueued;
}

/* Last cycle's records less the jobs that left the queue, in their order: O(1) when no job
 * left the queue since they were collected (most cycles: nothing was admitted); else a pass
 * that stops once it has dropped as many records as jobs left the queue since (each record
 * dropped is of a job that left at least once), the rest moved as one block - the jobs
 * admitted are mostly at the queue's head (on the Philly replay the last record dropped was
 * the 9th of ~370 on average). pend, when not NULL, lists the records' jobs: it is kept so. */
static int32_t keep_records(drv_sched *s, const drv_state *st, int32_t *pend)
{
    cycle_queue *q = &s->queue;
    if (records_stand(s, st))
        return q->norder;
    int32_t nq = st->nqueued;
    qent *rec = q->order;
    int32_t npend = 0, i = 0;
    /* At most this many records to drop: the state's leaves since, when it is the same state.
     * The pass goes on while the records after it could not all be queued (a cheap check
     * that the count is the state's). */
    uint64_t left =
        q->st == st && st->queue_leaves >= q->leaves ? st->queue_leaves - q->leaves : UINT64_MAX;
    const uint64_t *qbits = st->queued.bits; /* drv_state_is_queued, inline */
    for (; i < q->norder && npend < nq && (left > 0 || npend + (q->norder - i) > nq); i++)
        if (rec[i].job < st->njobs && (qbits[rec[i].job / 64] >> (rec[i].job % 64)) & 1) {
            if (npend != i) {
                rec[npend] = rec[i];
                if (pend)
                    pend[npend] = pend[i];
            }
            npend++;
        } else {
            drop_record(s, st, &rec[i]); /* left the queue */
            left -= left > 0;
        }
    if (left == 0 && i < q->norder && npend < nq) { /* all that left dropped: the rest stand */
        if (npend != i) {
            memmove(&rec[npend], &rec[i], (size_t)(q->norder - i) * sizeof *rec);
            if (pend)
                memmove(&pend[npend], &pend[i], (size_t)(q->norder - i) * sizeof *pend);
        }
        npend += q->norder - i;
        i = q->norder;
    }
    for (; i < q->norder; i++) /* all queued jobs found: the rest left */
        drop_record(s, st, &rec[i]);
    return npend;
}

/* Collects the queued jobs into s->queue.order: last cycle's records of jobs still queued, in their
 * order (keep_records), then newcomers in id order. The queue order is a total order (ties go
 * by submit time, then id), so the sorted result does not depend on the order jobs are
 * collected in. The queued set says which are still queued without reading the jobs; records
 * stay in place. The newcomers are the queued set less the jobs with a record (s->queue.inq), a
 * word at a time over the set's non-empty words (drv_jobset_next, s->queue.inq excepted): O(records
 * + queued / 64 + jobs / 4096), the first term only when some job left the queue. Returns how many
 * came from last cycle's queue. Needs s->queue.inq to cover every job. pend, when not NULL, lists
 * the records' jobs and is kept so. */
static int32_t collect(drv_sched *s, const drv_state *st, int32_t *pend)
{
    cycle_queue *q = &s->queue;
    int32_t nq = st->nqueued;
    qent *rec = q->order;
    int32_t npend = keep_records(s, st, pend);
    q->norder = npend;
    q->st = st;
    q->leaves = st->queue_leaves;
    int32_t nold = npend;
    int32_t nw = (st->njobs + 63) / 64;
    for (int32_t j = drv_jobset_next(&st->queued, st->njobs, 0, q->inq, nw); j >= 0 && npend < nq;
         j = drv_jobset_next(&st->queued, st->njobs, j + 1, q->inq, nw)) {
        rec[npend] = make_qent(s, st, j);
        if (q->sum.ok)
            qsum_add(s, &q->fit[rec[npend].fit]);
        npend++;
        inq_put(s, j, true);
    }
    q->norder = npend;
    return nold;
}

/* A lone keyed plugin: orders the records by (key, submit, id). Keys of jobs queued last cycle
 * (the first nold) are kept when the plugin says they did not change: then only newcomers are
 * asked. Returns true when the records are in order already, else fills idx with the sorted
 * order of record indices. */
static bool sort_keyed(drv_ctx *c, const drv_plugin *q0, void *q0s, int32_t nold, bool was_keyed,
                       int32_t *idx, int32_t *tmp, int32_t *run)
{
    cycle_queue *q = &c->s->queue;
    qent *rec = q->order;
    int32_t npend = q->norder;
    cycle_running(c->s, q0, DRV_PT_QUEUE_ORDER);
    bool kept = was_keyed && q0->queue_kept && q0->queue_kept(c, q0s);
    for (int32_t i = kept ? nold : 0; i < npend; i++)
        rec[i].key = q0->queue_key(c, q0s, rec[i].job);
    cycle_running(c->s, NULL, -1);
    /* Most cycles collect the queue already in order: the merge sort would then only compare
     * each boundary and merge nothing - the same as this one pass. With the keys kept, the
     * first nold records are last cycle's sorted queue less the jobs that left, still in
     * order (a subsequence of a sorted list is sorted): only the newcomers are checked. */
    int32_t at;
    bool sorted = in_order(q, 0, npend, kept ? nold : 1, &at);
    if (!sorted) {
        for (int32_t k = 0; k < npend; k++)
            idx[k] = k;
        natural_sort_idx(q, 0, idx, tmp, run, npend, at); /* in order before the descent */
    }
    return sorted;
}

/* Every plugin of this cycle's chain orders by key alone (no queue_cmp). */
static bool chain_keyed(const drv_sched *s)
{
    const cycle_queue *q = &s->queue;
    for (int i = 0; i < q->nchain; i++)
        if (!s->prof->use[DRV_PT_QUEUE_ORDER][q->chain[i]].p->queue_key)
            return false;
    return true;
}

/*
 * A chain of keyed plugins: as sort_keyed, with a row of keys per record (cycle_queue.fkey).
 * A plugin's keys of the first nold records are kept when the last cycle ordered by rows of the
 * same chain and the plugin says its keys did not change (queue_kept); the others are asked,
 * plugin by plugin as sort_by_plugins asks them. Returns 1 when the records are in order
 * already, 0 when idx holds the sorted order of record indices, or DRV_ENOMEM.
 */
static int sort_rows(drv_ctx *c, int32_t nold, bool was_rows, int32_t *idx, int32_t *tmp,
                     int32_t *run)
{
    drv_sched *s = c->s;
    cycle_queue *q = &s->queue;
    qent *rec = q->order;
    int32_t npend = q->norder, nrow = q->nchain;
    bool same = was_rows && q->nrow == nrow &&
                memcmp(q->rows_chain, q->chain, (size_t)nrow * sizeof *q->chain) == 0;
    if (q->nfit > INT32_MAX / nrow ||
        drv_grow(&q->fkey, sizeof *q->fkey, &q->cap_fkey, q->nfit * nrow) != 0)
        return DRV_ENOMEM;
    bool all_kept = same;
    for (int32_t i = 0; i < nrow; i++) {
        const drv_plugin *p = s->prof->use[DRV_PT_QUEUE_ORDER][q->chain[i]].p;
        void *ps = s->plug.ustate[DRV_PT_QUEUE_ORDER][q->chain[i]];
        cycle_running(s, p, DRV_PT_QUEUE_ORDER);
        bool kept = same && p->queue_kept && p->queue_kept(c, ps);
        all_kept &= kept;
        for (int32_t k = kept ? nold : 0; k < npend; k++)
            q->fkey[(size_t)rec[k].fit * (size_t)nrow + (size_t)i] =
                p->queue_key(c, ps, rec[k].job);
    }
    cycle_running(s, NULL, -1);
    q->nrow = nrow;
    memcpy(q->rows_chain, q->chain, (size_t)nrow * sizeof *q->chain);
    q->rows = true;
    int32_t at;
    if (in_order(q, nrow, npend, all_kept ? nold : 1, &at))
        return 1;
    for (int32_t k = 0; k < npend; k++)
        idx[k] = k;
    natural_sort_idx(q, nrow, idx, tmp, run, npend, at);
    return 0;
}

/* Any other queue_order: sorts the records with the plugins' comparison on their jobs (each
 * keyed plugin's keys asked once per job, in the order queue_begin was handed the jobs) into
 * idx, the sorted order of record indices. 0 or DRV_ENOMEM. */
static int sort_by_plugins(drv_ctx *c, const int32_t *pend, int32_t *idx, int32_t *tmp)
{
    drv_sched *s = c->s;
    cycle_queue *q = &s->queue;
    const drv_state *st = c->snap->st;
    int32_t npend = q->norder;
    for (int i = 0; i < q->nchain; i++) {
        const drv_plugin *p = s->prof->use[DRV_PT_QUEUE_ORDER][q->chain[i]].p;
        void *ps = s->plug.ustate[DRV_PT_QUEUE_ORDER][q->chain[i]];
        if (!p->queue_key)
            continue;
        if (drv_grow(&q->key[i], sizeof *q->key[i], &q->cap_key[i], st->njobs) != 0)
            return DRV_ENOMEM;
        cycle_running(s, p, DRV_PT_QUEUE_ORDER);
        for (int32_t k = 0; k < npend; k++)
            q->key[i][pend[k]] = p->queue_key(c, ps, pend[k]);
        cycle_running(s, NULL, -1);
    }
    for (int32_t k = 0; k < npend; k++)
        idx[k] = k;
    merge_sort(c, q->order, idx, tmp, npend);
    cycle_running(s, NULL, -1);
    return 0;
}

/* Puts the records in the sorted order idx: the other buffer takes them and becomes s->queue.order;
 * pend follows. 0 or DRV_ENOMEM. */
static int adopt_order(drv_sched *s, const int32_t *idx, int32_t *pend)
{
    cycle_queue *q = &s->queue;
    int32_t npend = q->norder;
    if (drv_grow(&q->order2, sizeof *q->order2, &q->cap_order2, npend) != 0)
        return DRV_ENOMEM;
    for (int32_t i = 0; i < npend; i++) {
        q->order2[i] = q->order[idx[i]];
        pend[i] = q->order2[i].job;
    }
    qent *t = q->order;
    int32_t tc = q->cap_order;
    q->order = q->order2;
    q->cap_order = q->cap_order2;
    q->order2 = t;
    q->cap_order2 = tc;
    return 0;
}

/* Hands the list to every queue_begin, then makes this cycle's chain of the plugins that
 * order something (queue_idle). 0, or the error of a plugin that failed the cycle (the
 * plugins after it are not called). */
static int begin_chain(drv_ctx *c, const int32_t *pend, int32_t npend)
{
    drv_sched *s = c->s;
    const drv_profile *pr = s->prof;
    for (int i = 0; i < pr->nuse[DRV_PT_QUEUE_ORDER] && !drv_ctx_error(c); i++) {
        const drv_plugin *p = pr->use[DRV_PT_QUEUE_ORDER][i].p;
        cycle_running(s, p, DRV_PT_QUEUE_ORDER);
        if (p->queue_begin)
            p->queue_begin(c, s->plug.ustate[DRV_PT_QUEUE_ORDER][i], pend, npend);
    }
    s->queue.nchain = 0; /* the chain this cycle: plugins that order something */
    for (int i = 0; i < pr->nuse[DRV_PT_QUEUE_ORDER] && !drv_ctx_error(c); i++) {
        const drv_plugin *p = pr->use[DRV_PT_QUEUE_ORDER][i].p;
        cycle_running(s, p, DRV_PT_QUEUE_ORDER);
        if (!p->queue_idle || !p->queue_idle(c, s->plug.ustate[DRV_PT_QUEUE_ORDER][i]))
            s->queue.chain[s->queue.nchain++] = i;
    }
    cycle_running(s, NULL, -1);
    return drv_ctx_error(c);
}

int cycle_order_queue(drv_ctx *c, int32_t **jobs, int32_t *n)
{
    drv_sched *s = c->s;
    cycle_queue *q = &s->queue;
    const drv_state *st = c->snap->st;
    const drv_profile *pr = s->prof;
    int32_t nq = st->nqueued;
    /* pend[0..norder) lists the records' jobs as the last cycle left them, and collect keeps
     * it so as it drops records: then only newcomers are written (unless the order moved). */
    bool pend_kept = q->pend_ok;
    q->pend_ok = false; /* until this cycle's order is in it */
    if (nq >= INT32_MAX - 1 ||
        drv_grow(&q->sort_tmp, sizeof *q->sort_tmp, &q->cap_sort_tmp, nq + 1) != 0 ||
        drv_grow(&q->sort_idx, sizeof *q->sort_idx, &q->cap_sort_idx, nq + 1) != 0 ||
        drv_grow(&q->sort_run, sizeof *q->sort_run, &q->cap_sort_run, nq + 1) != 0 ||
        drv_grow(&q->pend, sizeof *q->pend, &q->cap_pend, nq + 1) != 0 ||
        drv_grow(&q->order, sizeof *q->order, &q->cap_order, nq) != 0 || qfit_room(s, nq) != 0)
        return DRV_ENOMEM;
    int32_t *tmp = q->sort_tmp, *idx = q->sort_idx, *run = q->sort_run;
    int32_t *pend = q->pend;
    int32_t inq_old = q->cap_inq;
    if (drv_grow(&q->inq, sizeof *q->inq, &q->cap_inq, st->njobs / 64 + 1) != 0)
        return DRV_ENOMEM;
    if (q->cap_inq > inq_old) /* new jobs have no record */
        memset(q->inq + inq_old, 0, (size_t)(q->cap_inq - inq_old) * sizeof *q->inq);
    bool was_keyed = q->keyed, was_rows = q->rows;
    q->rows = false; /* until this cycle's keys are in the rows (sort_rows) */
    int32_t was_use = q->keyed_use;
    q->keyed = false; /* until this cycle's keys are in the records */
    int32_t nold = collect(s, st, pend_kept ? pend : NULL);
    int32_t npend = q->norder;
    for (int32_t i = pend_kept ? nold : 0; i < npend; i++)
        pend[i] = q->order[i].job;
    q->lists++; /* the list queue_begin is handed: last cycle's records kept, then newcomers */
    q->kept = nold;
    int rc = begin_chain(c, pend, npend);
    if (rc)
        return rc;
    const drv_plugin *q0 = q->nchain > 0 ? pr->use[DRV_PT_QUEUE_ORDER][q->chain[0]].p : NULL;
    void *q0s = q->nchain > 0 ? s->plug.ustate[DRV_PT_QUEUE_ORDER][q->chain[0]] : NULL;
    bool lone_key = q->nchain == 1 && q0->queue_key;
    bool sorted = true;
    if (lone_key) { /* keys kept only from the same plugin's */
        sorted = sort_keyed(c, q0, q0s, nold, was_keyed && was_use == q->chain[0], idx, tmp, run);
    } else if (q->nchain > 1 && chain_keyed(s)) {
        if ((rc = sort_rows(c, nold, was_rows, idx, tmp, run)) < 0)
            return rc;
        sorted = rc == 1;
    } else {
        if ((rc = sort_by_plugins(c, pend, idx, tmp)) != 0)
            return rc;
        sorted = false;
    }
    if (drv_ctx_error(c)) /* a plugin failed while it was asked for keys or comparisons */
        return drv_ctx_error(c);
    if (!sorted && adopt_order(s, idx, pend) != 0)
        return DRV_ENOMEM;
    q->keyed = lone_key;
    q->keyed_use = lone_key ? q->chain[0] : -1;
    q->pend_ok = true;
    *jobs = pend;
    *n = npend;
    return 0;
}
