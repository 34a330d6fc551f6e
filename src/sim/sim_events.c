/*
 * sim_events.c - the simulator's event heap: every event of a run (an arrival, a cycle, a
 * container start, a completion, a terminating pod's release) is pushed here and popped by the
 * event loop (sim.c) in order, and requesting a cycle is pushing a tick event (EV_CYCLE) at the
 * next multiple of the period.
 *
 * The order rule: events pop by (time, sequence number), earliest first, and a tie in time goes
 * to the smaller sequence number. Job i's arrival has sequence number i (pushed with
 * sim_push_seq); every other event takes the next one (sim_push_event), so ties resolve in
 * insertion order and a run is deterministic. Example: with 3 jobs, job 2 submitted at 10 s and
 * a completion pushed for 10 s (sequence 3 or later): the arrival pops first, whichever was
 * pushed first.
 *
 * It owns the heap (drv_sim.heap, nheap, cap_heap, seq) and the pending cycle (cycle_pending,
 * next_tick), and calls nothing else of the simulator.
 */
#include "sim_int.h"

/* A 4-ary heap: half the levels of a binary one, and the four children of a node are adjacent
 * (two cache lines), so a pop from the ~100,000 events of a large run misses the cache about
 * half as often. Events are totally ordered by (t, seq): the arity changes no pop order. */
enum { HEAP_ARITY = 4 };

static bool ev_before(const event *a, const event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

int sim_push_seq(drv_sim *s, double t, uint64_t seq, int kind, int32_t job, uint32_t gen)
{
    if (drv_grow(&s->heap, sizeof *s->heap, &s->cap_heap, s->nheap + 1) != 0)
        return DRV_ENOMEM;
    event e = {t, seq, kind, job, gen};
    int32_t i = s->nheap++;
    while (i > 0) {
        int32_t p = (i - 1) / HEAP_ARITY;
        if (!ev_before(&e, &s->heap[p]))
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
    return 0;
}

int sim_push_event(drv_sim *s, double t, int kind, int32_t job, uint32_t gen)
{
    return sim_push_seq(s, t, s->seq++, kind, job, gen);
}

event sim_pop_event(drv_sim *s)
{
    event top = s->heap[0];
    event last = s->heap[--s->nheap];
    int32_t i = 0, n = s->nheap;
    for (;;) {
        int32_t first = HEAP_ARITY * i + 1, c = first;
        if (c >= n)
            break;
        for (int32_t k = first + 1; k < first + HEAP_ARITY && k < n; k++)
            if (ev_before(&s->heap[k], &s->heap[c]))
                c = k;
        if (!ev_before(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n > 0)
        s->heap[i] = last;
    return top;
}

int sim_push_tick(drv_sim *s, double t)
{
    s->cycle_pending = true;
    s->next_tick = t;
    return sim_push_event(s, t, EV_CYCLE, -1, 0);
}

int sim_request_cycle(drv_sim *s)
{
    if (s->cycle_pending)
        return 0;
    double t = ceil(s->now / s->period) * s->period;
    if (t < s->now)
        t = s->now;
    return sim_push_tick(s, t);
}
