/*
 * state.c - nodes, jobs and pods, and the only code that changes them. Every mutation updates
 * the derived totals (node used/npods/cpu_limit, job bound counts) in O(1), so drv_state_check
 * can verify them from scratch after each cycle.
 */
#include "drover/state.h"

#include "drover/hashmap.h"

#include <stdio.h>
#include <string.h>

static const char *const role_names[DRV_NROLES] = {"ps", "chief", "worker", "evaluator"};

const char *drv_role_name(int role)
{
    return (role >= 0 && role < DRV_NROLES) ? role_names[role] : "?";
}

int drv_role_parse(const char *s)
{
    for (int r = 0; r < DRV_NROLES; r++)
        if (strcmp(s, role_names[r]) == 0)
            return r;
    return -1;
}

const char *drv_job_phase_name(int phase)
{
    static const char *const names[] = {"future",  "pending",    "starting",
                                        "running", "restarting", "done"};
    return (phase >= 0 && phase <= DRV_JOB_DONE) ? names[phase] : "?";
}

int drv_state_init(drv_state *st)
{
    memset(st, 0, sizeof *st);
    st->node_head = st->node_tail = -1;
    st->usage_at = -1;
    st->names = drv_strtab_new();
    return st->names ? 0 : DRV_ENOMEM;
}

void drv_state_fini(drv_state *st)
{
    drv_strtab_free(st->names);
    for (int32_t i = 0; i < st->njobs; i++)
        if (!drv_state_job_released(st, i))
            drv_job_clear_hist(&st->jobs[i]);
    drv_free(st->nodes);
    drv_free(st->node_stamp);
    drv_free(st->node_prev);
    drv_free(st->node_next);
    drv_hashmap_free(st->node_by_name);
    drv_hashmap_free(st->class_index); /* (keys only: the classes own their arrays) */
    if (st->reserved) {
        drv_pages_fini(&st->job_pages);
        drv_pages_fini(&st->pod_pages);
    } else {
        drv_free(st->jobs);
        drv_free(st->pods);
    }
    drv_free(st->released.bits);
    drv_free(st->released.sum);
    drv_free(st->filled.bits);
    drv_free(st->filled.sum);
    drv_free(st->live.bits);
    drv_free(st->live.sum);
    drv_free(st->pending.bits);
    drv_free(st->pending.sum);
    drv_free(st->queued.bits);
    drv_free(st->queued.sum);
    drv_free(st->queued_bound.bits);
    drv_free(st->queued_bound.sum);
    drv_free(st->starting.bits);
    drv_free(st->starting.sum);
    for (int32_t i = 0; i < st->nclasses; i++)
        drv_nodeclass_fini(&st->classes[i]);
    drv_free(st->classes);
    for (int32_t i = 0; i < st->ncons; i++)
        drv_constraint_fini(&st->cons[i]);
    drv_free(st->cons);
    drv_free(st->queues);
    drv_free(st->user_usage);
    memset(st, 0, sizeof *st);
    st->node_head = st->node_tail = -1;
}

void drv_state_node_changed(drv_state *st, int32_t node, bool type_changed)
{
    st->node_stamp[node] = ++st->node_clock;
    st->node_epoch += type_changed;
    if (st->node_tail == node)
        return; /* the usual case for a gang's pods: its last bind touched this node too */
    int32_t p = st->node_prev[node], x = st->node_next[node];
    if (p >= 0)
        st->node_next[p] = x;
    else if (st->node_head == node)
        st->node_head = x;
    if (x >= 0)
        st->node_prev[x] = p;
    st->node_prev[node] = st->node_tail;
    st->node_next[node] = -1;
    if (st->node_tail >= 0)
        st->node_next[st->node_tail] = node;
    else
        st->node_head = node;
    st->node_tail = node;
}

int drv_state_add_node(drv_state *st, const char *name, drv_res alloc, const char *zone,
                       const char *rack, int32_t *id)
{
    int32_t nm = drv_strtab_intern(st->names, name);
    int32_t zn = drv_strtab_intern(st->names, zone ? zone : "");
    int32_t rk = drv_strtab_intern(st->names, rack ? rack : "");
    if (nm < 0 || zn < 0 || rk < 0)
        return DRV_ENOMEM;
    /* names found through a table: adding n nodes costs O(n), not a scan of every node each */
    if (!st->node_by_name && !(st->node_by_name = drv_hashmap_new(&drv_hashmap_ints)))
        return DRV_ENOMEM;
    if (drv_hashmap_has(st->node_by_name, DRV_HASHMAP_INT(nm)))
        return DRV_EEXIST;
    int32_t cap = st->cap_node_log, cap2 = cap, cap3 = cap;
    if (drv_grow(&st->nodes, sizeof *st->nodes, &st->cap_nodes, st->nnodes + 1) != 0 ||
        drv_grow(&st->node_stamp, sizeof *st->node_stamp, &cap, st->nnodes + 1) != 0 ||
        drv_grow(&st->node_prev, sizeof *st->node_prev, &cap2, st->nnodes + 1) != 0 ||
        drv_grow(&st->node_next, sizeof *st->node_next, &cap3, st->nnodes + 1) != 0)
        return DRV_ENOMEM; /* a partial growth only leaves room unused */
    st->cap_node_log = cap;
    if (drv_hashmap_put(st->node_by_name, DRV_HASHMAP_INT(nm), NULL) != 0)
        return DRV_ENOMEM;
    drv_node *n = &st->nodes[st->nnodes];
    memset(n, 0, sizeof *n);
    n->name = nm;
    n->zone = zn;
    n->rack = rk;
    n->schedulable = true;
    n->alloc = alloc;
    st->node_prev[st->nnodes] = st->node_next[st->nnodes] = -1; /* in no list yet */
    if (id)
        *id = st->nnodes;
    st->nnodes++;
    drv_state_node_changed(st, st->nnodes - 1, true);
    return 0;
}

static int32_t role_slots(const drv_rolespec *r)
{
    int32_t n = r->replicas;
    if (r->max > n)
        n = r->max;
    return n;
}

/* Room for jobs 0..n-1 in a job set; new words are empty. 0 or DRV_ENOMEM. */
static int jobset_reserve(drv_jobset *js, int32_t n)
{
    int32_t words = n / 64 + 1, old = js->cap_bits;
    if (drv_grow(&js->bits, sizeof *js->bits, &js->cap_bits, words) != 0)
        return DRV_ENOMEM;
    if (js->cap_bits > old)
        memset(js->bits + old, 0, (size_t)(js->cap_bits - old) * sizeof *js->bits);
    int32_t swords = js->cap_bits / 64 + 1, sold = js->cap_sum;
    if (drv_grow(&js->sum, sizeof *js->sum, &js->cap_sum, swords) != 0)
        return DRV_ENOMEM;
    if (js->cap_sum > sold)
        memset(js->sum + sold, 0, (size_t)(js->cap_sum - sold) * sizeof *js->sum);
    return 0;
}

/* Puts job in the set or takes it out; returns the change in members (-1, 0 or 1). */
static int jobset_put(drv_jobset *js, int32_t job, bool in)
{
    int32_t w = job / 64;
    uint64_t bit = (uint64_t)1 << (job % 64), wbit = (uint64_t)1 << (w % 64);
    bool was = (js->bits[w] & bit) != 0;
    if (was == in)
        return 0; /* most calls (requeue after every bind): the summary is right already */
    if (in)
        js->bits[w] |= bit;
    else
        js->bits[w] &= ~bit;
    if (js->bits[w])
        js->sum[w / 64] |= wbit;
    else
        js->sum[w / 64] &= ~wbit;
    return (int)in - (int)was;
}

void drv_state_set_node(drv_state *st, int32_t node, drv_res alloc, bool schedulable)
{
    drv_node *n = &st->nodes[node];
    if (memcmp(&n->alloc, &alloc, sizeof alloc) == 0 && n->schedulable == schedulable)
        return; /* a controller re-reading an unchanged Node: nothing for readers to redo */
    n->alloc = alloc;
    n->schedulable = schedulable;
    drv_state_node_changed(st, node, true);
}

static bool jobset_has(const drv_jobset *js, int32_t job);

/* Fills job jid from a template, with its pod slots from pod_base on, and enters its phase. */
static void init_job(drv_state *st, int32_t jid, int32_t pod_base, int32_t slots,
                     const drv_job *tmpl)
{
    drv_job *j = &st->jobs[jid];
    *j = *tmpl;
    st->has_job_min_runtime |= tmpl->min_runtime > 0;
    j->pod_base = pod_base;
    j->pod_count = slots;
    j->start = j->end = j->run_start = -1;
    j->nhist = j->hist_head = 0;
    j->hist = NULL;
    j->loss0 = 0;
    int32_t pod = pod_base;
    for (int r = 0; r < DRV_NROLES; r++) {
        j->target[r] = j->role[r].replicas;
        j->bound[r] = 0;
        for (int32_t i = 0; i < role_slots(&j->role[r]); i++) {
            drv_pod *p = &st->pods[pod++];
            p->job = jid;
            p->role = (int16_t)r;
            p->index = (int16_t)i;
            p->node = -1;
            p->cpu_limit = j->role[r].cpu_limit ? j->role[r].cpu_limit : j->role[r].req.cpu;
        }
    }
    j->phase = DRV_JOB_FUTURE;
    drv_state_set_phase(st, jid, tmpl->phase);
}

/* Whether each role's constraint id names a constraint of the state (0: none), and the job's
 * queue a queue of it (0: the default queue). */
static bool cons_valid(const drv_state *st, const drv_job *tmpl)
{
    if (tmpl->queue < 0 || (tmpl->queue > 0 && tmpl->queue >= st->nqueues))
        return false;
    for (int r = 0; r < DRV_NROLES; r++)
        if (tmpl->cons[r] < 0 || (tmpl->cons[r] > 0 && tmpl->cons[r] >= st->ncons))
            return false;
    if (tmpl->topo_mode < DRV_TOPO_NONE || tmpl->topo_mode > DRV_TOPO_PREFERRED)
        return false;
    return tmpl->topo_mode == DRV_TOPO_NONE ||
           (tmpl->topo_level >= 0 && tmpl->topo_level < st->ntopo);
}

static int32_t job_slots(const drv_job *tmpl)
{
    int32_t slots = 0;
    for (int r = 0; r < DRV_NROLES; r++)
        slots += role_slots(&tmpl->role[r]);
    return slots;
}

int drv_state_add_job(drv_state *st, const drv_job *tmpl, int32_t *id)
{
    int32_t slots = job_slots(tmpl);
    if (!cons_valid(st, tmpl))
        return DRV_EINVAL;
    if (st->reserved || drv_grow(&st->jobs, sizeof *st->jobs, &st->cap_jobs, st->njobs + 1) != 0 ||
        drv_grow(&st->pods, sizeof *st->pods, &st->cap_pods, st->npods + slots) != 0 ||
        jobset_reserve(&st->live, st->njobs + 1) != 0 ||
        jobset_reserve(&st->released, st->njobs + 1) != 0 ||
        jobset_reserve(&st->pending, st->njobs + 1) != 0 ||
        jobset_reserve(&st->queued, st->njobs + 1) != 0 ||
        jobset_reserve(&st->queued_bound, st->njobs + 1) != 0 ||
        jobset_reserve(&st->starting, st->njobs + 1) != 0)
        return DRV_ENOMEM;
    int32_t jid = st->njobs++;
    init_job(st, jid, st->npods, slots, tmpl);
    st->npods += slots;
    if (id)
        *id = jid;
    return 0;
}

int drv_state_fill_job(drv_state *st, int32_t id, int32_t pod_base, const drv_job *tmpl)
{
    int32_t slots = job_slots(tmpl);
    if (!st->reserved || id < 0 || id >= st->njobs || pod_base < 0 ||
        pod_base > st->npods - slots || jobset_has(&st->filled, id) || !cons_valid(st, tmpl))
        return DRV_EINVAL;
    /* the placeholder itself is not read: a read before the first write of its page would map
     * the zero page and fault a second time at the write (7,000 more faults on 100,000 jobs) */
    jobset_put(&st->filled, id, true);
    init_job(st, id, pod_base, slots, tmpl);
    return 0;
}

static bool jobset_has(const drv_jobset *js, int32_t job)
{
    return (js->bits[job / 64] >> (job % 64)) & 1;
}

static bool any_bound(const drv_job *j)
{
    return j->bound[0] + j->bound[1] + j->bound[2] + j->bound[3] > 0;
}

/* Puts the job in the queued sets or takes it out, after its phase, targets or pods changed. */
static void requeue(drv_state *st, int32_t job)
{
    const drv_job *j = &st->jobs[job];
    bool q = j->phase == DRV_JOB_PENDING && drv_job_needs_pods(j);
    int moved = jobset_put(&st->queued, job, q);
    st->nqueued += moved;
    st->queue_leaves += moved < 0;
    st->nqueued_bound += jobset_put(&st->queued_bound, job, q && any_bound(j));
}

void drv_state_set_phase(drv_state *st, int32_t job, int phase)
{
    st->jobs[job].phase = phase;
    if (phase == DRV_JOB_DONE)
        drv_job_clear_hist(&st->jobs[job]);
    int live = jobset_put(&st->live, job, phase != DRV_JOB_FUTURE && phase != DRV_JOB_DONE);
    st->nlive += live;
    st->npending += jobset_put(&st->pending, job, phase == DRV_JOB_PENDING);
    st->nstarting +=
        jobset_put(&st->starting, job, phase == DRV_JOB_STARTING || phase == DRV_JOB_RESTARTING);
    requeue(st, job);
}

int drv_state_reserve(drv_state *st, int32_t njobs, int32_t npods)
{
    if (st->njobs > 0 || st->reserved || njobs < 0 || npods < 0)
        return DRV_EINVAL;
    if (jobset_reserve(&st->live, njobs) != 0 || jobset_reserve(&st->released, njobs) != 0 ||
        jobset_reserve(&st->filled, njobs) != 0 || jobset_reserve(&st->pending, njobs) != 0 ||
        jobset_reserve(&st->queued, njobs) != 0 || jobset_reserve(&st->queued_bound, njobs) != 0 ||
        jobset_reserve(&st->starting, njobs) != 0)
        return DRV_ENOMEM;
    drv_pages jp, pp;
    if (drv_pages_init(&jp, sizeof *st->jobs, (size_t)njobs) != 0)
        return DRV_ENOMEM;
    if (drv_pages_init(&pp, sizeof *st->pods, (size_t)npods) != 0) {
        drv_pages_fini(&jp);
        return DRV_ENOMEM;
    }
    drv_free(st->jobs);
    drv_free(st->pods);
    st->job_pages = jp;
    st->pod_pages = pp;
    st->jobs = (drv_job *)jp.base;
    st->pods = (drv_pod *)pp.base;
    st->njobs = st->cap_jobs = njobs;
    st->npods = st->cap_pods = npods;
    st->reserved = true;
    return 0;
}

bool drv_state_job_filled(const drv_state *st, int32_t job)
{
    return job >= 0 && job < st->njobs && st->filled.bits && jobset_has(&st->filled, job);
}

bool drv_state_job_released(const drv_state *st, int32_t job)
{
    return job >= 0 && job < st->njobs && st->released.bits && jobset_has(&st->released, job);
}

int drv_state_release_job(drv_state *st, int32_t job)
{
    if (job < 0 || job >= st->njobs || drv_state_job_released(st, job))
        return DRV_EINVAL;
    drv_job *j = &st->jobs[job];
    if (j->phase != DRV_JOB_DONE || any_bound(j))
        return DRV_EINVAL;
    drv_job_clear_hist(j);
    st->nreleased += jobset_put(&st->released, job, true);
    if (st->reserved) {
        drv_pages_release(&st->pod_pages, (size_t)j->pod_base, (size_t)j->pod_count);
        drv_pages_release(&st->job_pages, (size_t)job, 1);
    }
    return 0;
}

int32_t drv_state_next_queued(const drv_state *st, int32_t from)
{
    return drv_jobset_next(&st->queued, st->njobs, from, NULL, 0);
}

int32_t drv_state_next_starting(const drv_state *st, int32_t from)
{
    return drv_jobset_next(&st->starting, st->njobs, from, NULL, 0);
}

bool drv_state_is_queued(const drv_state *st, int32_t job)
{
    return job >= 0 && job < st->njobs && jobset_has(&st->queued, job);
}

int32_t drv_state_next_live(const drv_state *st, int32_t from)
{
    return drv_jobset_next(&st->live, st->njobs, from, NULL, 0);
}

int32_t drv_state_next_pending(const drv_state *st, int32_t from)
{
    return drv_jobset_next(&st->pending, st->njobs, from, NULL, 0);
}

/* Adds r to the used resources of job j's queue, when the state has queues. */
static void queue_use(drv_state *st, const drv_job *j, drv_res r, int64_t sign)
{
    if (st->nqueues > 0) {
        drv_queue *q = &st->queues[j->queue];
        q->used = drv_res_add(q->used, drv_res_scale(r, sign));
    }
}

void drv_state_hold_queue(drv_state *st, int32_t q, drv_res r, int sign)
{
    drv_queue *dq = &st->queues[q];
    drv_res d = drv_res_scale(r, sign > 0 ? 1 : -1);
    dq->used = drv_res_add(dq->used, d);
    dq->held = drv_res_add(dq->held, d);
}

static bool queue_valid(const drv_queue *q)
{
    return q->weight > 0 && q->min_runtime >= 0 && q->quota.cpu >= 0 && q->quota.mem >= 0 &&
           q->quota.gpu >= 0 && q->borrow.cpu >= 0 && q->borrow.mem >= 0 && q->borrow.gpu >= 0;
}

int32_t drv_state_find_queue(const drv_state *st, int32_t name)
{
    for (int32_t i = 0; i < st->nqueues; i++)
        if (st->queues[i].name == name)
            return i;
    return -1;
}

int drv_state_add_queue(drv_state *st, const drv_queue *q, int32_t *id)
{
    if (!queue_valid(q)) /* also false for a NaN weight */
        return DRV_EINVAL;
    int32_t dflt = drv_strtab_intern(st->names, "default");
    if (dflt < 0)
        return DRV_ENOMEM;
    if (drv_state_find_queue(st, q->name) >= 0)
        return DRV_EEXIST;
    bool make_default = st->nqueues == 0 && q->name != dflt;
    if (drv_grow(&st->queues, sizeof *st->queues, &st->cap_queues,
                 st->nqueues + 1 + make_default) != 0)
        return DRV_ENOMEM;
    if (make_default) {
        /* jobs added before any queue are in queue 0 already: it starts with their use */
        drv_queue *d = &st->queues[st->nqueues++];
        *d = (drv_queue){.name = dflt,
                         .weight = 1,
                         .quota = {DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED},
                         .borrow = {0, 0, 0}};
        for (int32_t n = 0; n < st->nnodes; n++)
            d->used = drv_res_add(d->used, st->nodes[n].used);
    }
    drv_queue *nq = &st->queues[st->nqueues];
    *nq = *q;
    nq->used = nq->held = (drv_res){0, 0, 0};
    nq->usage = 0;
    if (st->nqueues == 0) /* "default" itself, first: it holds what is bound already */
        for (int32_t n = 0; n < st->nnodes; n++)
            nq->used = drv_res_add(nq->used, st->nodes[n].used);
    if (id)
        *id = st->nqueues;
    st->nqueues++;
    return 0;
}

int drv_state_set_queue(drv_state *st, int32_t id, const drv_queue *q)
{
    if (id < 0 || id >= st->nqueues || !queue_valid(q))
        return DRV_EINVAL;
    drv_queue *d = &st->queues[id];
    drv_res used = d->used, held = d->held;
    double usage = d->usage;
    int32_t name = d->name;
    *d = *q;
    d->name = name;
    d->used = used;
    d->held = held;
    d->usage = usage;
    return 0;
}

void drv_state_bind(drv_state *st, int32_t pod, int32_t node)
{
    drv_pod *p = &st->pods[pod];
    if (p->node >= 0)
        drv_state_unbind(st, pod);
    drv_job *j = &st->jobs[p->job];
    drv_node *n = &st->nodes[node];
    p->node = node;
    n->used = drv_res_add(n->used, j->role[p->role].req);
    n->cpu_limit += p->cpu_limit;
    n->npods++;
    n->nrole[p->role]++;
    j->bound[p->role]++;
    queue_use(st, j, j->role[p->role].req, 1);
    requeue(st, p->job);
    drv_state_node_changed(st, node, false);
}

void drv_state_unbind(drv_state *st, int32_t pod)
{
    drv_pod *p = &st->pods[pod];
    if (p->node < 0)
        return;
    drv_job *j = &st->jobs[p->job];
    drv_node *n = &st->nodes[p->node];
    n->used = drv_res_sub(n->used, j->role[p->role].req);
    n->cpu_limit -= p->cpu_limit;
    n->npods--;
    n->nrole[p->role]--;
    j->bound[p->role]--;
    queue_use(st, j, j->role[p->role].req, -1);
    drv_state_node_changed(st, p->node, false);
    p->node = -1;
    requeue(st, p->job);
}

void drv_state_set_cpu_limit(drv_state *st, int32_t pod, int64_t cpu_limit)
{
    drv_pod *p = &st->pods[pod];
    if (p->node >= 0 && cpu_limit != p->cpu_limit) {
        st->nodes[p->node].cpu_limit += cpu_limit - p->cpu_limit;
        drv_state_node_changed(st, p->node, false);
    }
    p->cpu_limit = cpu_limit;
}

void drv_state_set_workers(drv_state *st, int32_t job, int32_t n)
{
    st->jobs[job].target[DRV_ROLE_WORKER] = n;
    requeue(st, job);
}

int drv_job_add_sample(drv_job *j, drv_sample s)
{
    if (!j->hist) {
        j->hist = drv_malloc(DRV_HIST * sizeof *j->hist);
        if (!j->hist)
            return DRV_ENOMEM;
        j->nhist = j->hist_head = 0;
        j->loss0 = s.loss;
    }
    if (j->nhist < DRV_HIST) {
        j->hist[(j->hist_head + j->nhist) % DRV_HIST] = s;
        j->nhist++;
    } else {
        j->hist[j->hist_head] = s;
        j->hist_head = (j->hist_head + 1) % DRV_HIST;
    }
    return 0;
}

void drv_job_clear_hist(drv_job *j)
{
    drv_free(j->hist);
    j->hist = NULL;
    j->nhist = j->hist_head = 0;
}

const drv_sample *drv_job_sample(const drv_job *j, int i)
{
    return &j->hist[(j->hist_head + j->nhist - 1 - i) % DRV_HIST];
}

int32_t drv_job_pod(const drv_state *st, int32_t job, int role, int index)
{
    const drv_job *j = &st->jobs[job];
    int32_t base = j->pod_base;
    for (int r = 0; r < role; r++)
        base += role_slots(&j->role[r]);
    if (index < 0 || index >= role_slots(&j->role[role]))
        return -1;
    return base + index;
}

bool drv_job_complete(const drv_job *j)
{
    for (int r = 0; r < DRV_NROLES; r++)
        if (j->bound[r] != j->target[r])
            return false;
    return true;
}

bool drv_job_needs_pods(const drv_job *j)
{
    if (j->phase == DRV_JOB_FUTURE || j->phase == DRV_JOB_DONE)
        return false;
    for (int r = 0; r < DRV_NROLES; r++)
        if (j->bound[r] < j->target[r])
            return true;
    return false;
}

drv_res drv_job_demand(const drv_job *j)
{
    drv_res d = {0, 0, 0};
    for (int r = 0; r < DRV_NROLES; r++)
        d = drv_res_add(d, drv_res_scale(j->role[r].req, j->target[r]));
    return d;
}

int32_t drv_job_wanted(const drv_job *j)
{
    int32_t n = 0;
    for (int r = 0; r < DRV_NROLES; r++)
        n += j->target[r];
    return n;
}

/* ---- invariants -------------------------------------------------------------------------- */

/* Each queue's used resources against the sum over the bound pods of its jobs. */
static int check_queues(const drv_state *st, drv_diag *d)
{
    if (st->nqueues == 0)
        return 0;
    drv_res *qused = drv_calloc((size_t)st->nqueues, sizeof *qused);
    if (!qused)
        return drv_fail(d, DRV_ENOMEM, "invariant check: out of memory");
    for (int32_t j = 0; j < st->njobs; j++) {
        if (jobset_has(&st->released, j))
            continue;
        const drv_job *job = &st->jobs[j];
        for (int32_t k = 0; k < job->pod_count; k++) {
            const drv_pod *p = &st->pods[job->pod_base + k];
            if (p->node >= 0)
                qused[job->queue] = drv_res_add(qused[job->queue], job->role[p->role].req);
        }
    }
    int rc = 0;
    for (int32_t q = 0; q < st->nqueues; q++)
        qused[q] = drv_res_add(qused[q], st->queues[q].held);
    for (int32_t q = 0; q < st->nqueues && !rc; q++)
        if (memcmp(&qused[q], &st->queues[q].used, sizeof qused[q]) != 0)
            rc = drv_fail(d, DRV_EINVARIANT, "queue %s: used resources disagree with its pods",
                          drv_strtab_str(st->names, st->queues[q].name));
    drv_free(qused);
    return rc;
}

/* Each node's derived totals against the sums over its pods (used, lim, npods, nps), and its
 * capacity. */
static int check_node_totals(const drv_state *st, const drv_res *used, const int64_t *lim,
                             const int32_t *npods, const int32_t *nps, drv_diag *d)
{
    for (int32_t n = 0; n < st->nnodes; n++) {
        const drv_node *nd = &st->nodes[n];
        const char *nn = drv_strtab_str(st->names, nd->name);
        if (memcmp(&used[n], &nd->used, sizeof used[n]) != 0 || lim[n] != nd->cpu_limit ||
            npods[n] != nd->npods || nps[n] != nd->nrole[DRV_ROLE_PS])
            return drv_fail(d, DRV_EINVARIANT, "node %s: derived totals disagree with its pods",
                            nn);
        if (!drv_res_fits(nd->used, nd->alloc))
            return drv_fail(d, DRV_EINVARIANT,
                            "node %s over capacity: cpu %lldm/%lldm mem %lld/%lld gpu %lld/%lld",
                            nn, (long long)nd->used.cpu, (long long)nd->alloc.cpu,
                            (long long)nd->used.mem, (long long)nd->alloc.mem,
                            (long long)nd->used.gpu, (long long)nd->alloc.gpu);
    }
    return 0;
}

/* The change list holds every node once, linked both ways, stamps rising to node_clock. */
static int check_node_list(const drv_state *st, drv_diag *d)
{
    int32_t n = 0, prev = -1;
    uint64_t last = 0;
    for (int32_t x = st->node_head; x >= 0 && n <= st->nnodes; x = st->node_next[x], n++) {
        if (x >= st->nnodes || st->node_prev[x] != prev || st->node_stamp[x] <= last ||
            st->node_stamp[x] > st->node_clock)
            return drv_fail(d, DRV_EINVARIANT, "node change list broken at node id %d", x);
        last = st->node_stamp[x];
        prev = x;
    }
    if (n != st->nnodes || prev != st->node_tail)
        return drv_fail(d, DRV_EINVARIANT, "node change list: %d of %d nodes", n, st->nnodes);
    return 0;
}

int drv_state_check(const drv_state *st, bool gang, drv_diag *d)
{
    int rc = 0;
    drv_res *used = drv_calloc((size_t)st->nnodes + 1, sizeof *used);
    int64_t *lim = drv_calloc((size_t)st->nnodes + 1, sizeof *lim);
    int32_t *npods = drv_calloc((size_t)st->nnodes + 1, sizeof *npods);
    int32_t *nps = drv_calloc((size_t)st->nnodes + 1, sizeof *nps);
    if (!used || !lim || !npods || !nps) {
        rc = drv_fail(d, DRV_ENOMEM, "invariant check: out of memory");
        goto out;
    }
    for (int32_t j = 0; j < st->njobs && !rc; j++) {
        if (jobset_has(&st->released, j))
            continue;
        const drv_job *job = &st->jobs[j];
        const char *jn = drv_strtab_str(st->names, job->name);
        int32_t bound[DRV_NROLES] = {0};
        for (int32_t k = 0; k < job->pod_count; k++) {
            const drv_pod *p = &st->pods[job->pod_base + k];
            if (p->job != j) {
                rc = drv_fail(d, DRV_EINVARIANT, "pod %d is in job %s's range but says job %d",
                              job->pod_base + k, jn, p->job);
                break;
            }
            if (p->node < 0)
                continue;
            if (p->node >= st->nnodes) {
                rc = drv_fail(d, DRV_EINVARIANT, "job %s: %s-%d on node id %d of %d", jn,
                              drv_role_name(p->role), p->index, p->node, st->nnodes);
                break;
            }
            bound[p->role]++;
            used[p->node] = drv_res_add(used[p->node], job->role[p->role].req);
            lim[p->node] += p->cpu_limit;
            npods[p->node]++;
            nps[p->node] += p->role == DRV_ROLE_PS;
        }
        for (int r = 0; r < DRV_NROLES && !rc; r++) {
            const drv_rolespec *rs = &job->role[r];
            if (bound[r] != job->bound[r])
                rc = drv_fail(d, DRV_EINVARIANT, "job %s: %d %s pods bound but count says %d", jn,
                              bound[r], drv_role_name(r), job->bound[r]);
            else if (bound[r] > job->target[r])
                rc = drv_fail(d, DRV_EINVARIANT, "job %s: %d %s pods bound but only %d wanted", jn,
                              bound[r], drv_role_name(r), job->target[r]);
            else if (r == DRV_ROLE_WORKER && (job->target[r] < rs->min || job->target[r] > rs->max))
                rc = drv_fail(d, DRV_EINVARIANT, "job %s: %d workers wanted, outside [%d, %d]", jn,
                              job->target[r], rs->min, rs->max);
        }
        if (rc || !gang || job->phase == DRV_JOB_DONE)
            continue;
        int32_t any = 0;
        for (int r = 0; r < DRV_NROLES; r++)
            any += bound[r];
        if (!any)
            continue;
        for (int r = 0; r < DRV_NROLES && !rc; r++) {
            int32_t need = r == DRV_ROLE_WORKER ? job->role[r].min : job->target[r];
            if (bound[r] < need)
                rc = drv_fail(d, DRV_EINVARIANT,
                              "job %s is half-placed: %d of %d %s pods bound (gang requires all)",
                              jn, bound[r], need, drv_role_name(r));
        }
    }
    int32_t nlive = 0, npending = 0, nqueued = 0, nstarting = 0, nqbound = 0;
    for (int32_t j = 0; j < st->njobs && !rc; j++) {
        if (jobset_has(&st->released, j)) {
            if (jobset_has(&st->live, j) || jobset_has(&st->pending, j) ||
                jobset_has(&st->queued, j) || jobset_has(&st->starting, j))
                rc = drv_fail(d, DRV_EINVARIANT, "job %d: released but in a job set", j);
            continue;
        }
        const drv_job *job = &st->jobs[j];
        bool live = job->phase != DRV_JOB_FUTURE && job->phase != DRV_JOB_DONE;
        bool pending = job->phase == DRV_JOB_PENDING;
        bool queued = pending && drv_job_needs_pods(job);
        bool starting = job->phase == DRV_JOB_STARTING || job->phase == DRV_JOB_RESTARTING;
        nlive += live;
        npending += pending;
        nqueued += queued;
        nstarting += starting;
        bool qbound = queued && any_bound(job);
        nqbound += qbound;
        if (live != jobset_has(&st->live, j) || pending != jobset_has(&st->pending, j) ||
            queued != jobset_has(&st->queued, j) || starting != jobset_has(&st->starting, j) ||
            qbound != jobset_has(&st->queued_bound, j))
            rc = drv_fail(d, DRV_EINVARIANT,
                          "job %s (phase %s): in the wrong live, pending, queued or starting set",
                          drv_strtab_str(st->names, job->name), drv_job_phase_name(job->phase));
    }
    if (!rc && (nlive != st->nlive || npending != st->npending || nqueued != st->nqueued ||
                nstarting != st->nstarting || nqbound != st->nqueued_bound))
        rc = drv_fail(d, DRV_EINVARIANT,
                      "job set counts: live %d pending %d queued %d (%d with pods bound) starting "
                      "%d, but the jobs say %d %d %d (%d) %d",
                      st->nlive, st->npending, st->nqueued, st->nqueued_bound, st->nstarting, nlive,
                      npending, nqueued, nqbound, nstarting);
    if (!rc)
        rc = check_node_totals(st, used, lim, npods, nps, d);
    if (!rc)
        rc = check_node_list(st, d);
    if (!rc)
        rc = check_queues(st, d);
out:
    drv_free(used);
    drv_free(lim);
    drv_free(npods);
    drv_free(nps);
    return rc;
}
