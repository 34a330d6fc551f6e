/*
 * sim_grace.c - terminating pods in the simulator (the cluster's timing.terminationGraceSeconds,
 * drv_timing.grace). A pod the simulator removes - a finished job's, an eviction's (preemption,
 * scale-down), a migration's source - runs on for the grace before it is gone, as a real
 * kubelet's pod does for its terminationGracePeriodSeconds: until then its request still takes
 * its node's room and counts as its queue's use, so no claimant is bound into room still held
 * and no queue's quota is overrun meanwhile (the controller's "ghost", src/ctrl/ctrl_mirror.c,
 * does the same from the API). The state no longer has the pod bound; the room is taken off the
 * node's allocatable and the use added to the queue's held (drv_state_hold_queue).
 *
 * Every ghost is released exactly `grace` seconds after it was made and time only goes forward,
 * so ghosts leave in the order they came: a FIFO, whose head an EV_RELEASE event releases.
 * Grace 0 makes no ghost: the pod's room and use go at once, as before the knob existed.
 *
 * A policy decides a cycle as if its evictions freed their room at once (a victim and its
 * claimant in one decision list). A bind into room a ghost still holds is therefore not made
 * (sim_ghost_bind), and a gang that this leaves incomplete gives back what it bound this cycle
 * (sim_ghost_settle), so no gang is half placed; the cycle after the release binds it whole.
 */
#include "sim_int.h"

#include <string.h>

/* Node n's allocatable as the cluster file gives it, less what its ghosts hold. */
static void set_room(drv_sim *s, int32_t n)
{
    drv_res a = drv_res_sub(s->cluster->nodes[n].alloc, s->ghost_room[n]);
    drv_state_set_node(&s->st, n, a, s->st.nodes[n].schedulable);
}

void sim_ghost_add(drv_sim *s, int32_t node, int32_t queue, drv_res req)
{
    if (!s->ghost_room) {
        s->ghost_room = drv_calloc((size_t)s->st.nnodes, sizeof *s->ghost_room);
        if (!s->ghost_room) {
            s->ghost_failed = true;
            return;
        }
    }
    if (s->ghost_head > 0 && s->ghost_head * 2 >= s->nghosts) { /* drop the released half */
        s->nghosts -= s->ghost_head;
        memmove(s->ghosts, s->ghosts + s->ghost_head, (size_t)s->nghosts * sizeof *s->ghosts);
        s->ghost_head = 0;
    }
    if (drv_grow(&s->ghosts, sizeof *s->ghosts, &s->cap_ghosts, s->nghosts + 1) != 0 ||
        sim_push_event(s, s->now + s->cluster->timing.grace, EV_RELEASE, -1, 0) != 0) {
        s->ghost_failed = true;
        return;
    }
    s->ghosts[s->nghosts++] = (sim_ghost){node, queue, req};
    s->ghost_room[node] = drv_res_add(s->ghost_room[node], req);
    set_room(s, node);
    if (queue >= 0)
        drv_state_hold_queue(&s->st, queue, req, +1);
}

int sim_ghost_release(drv_sim *s)
{
    if (s->ghost_head >= s->nghosts)
        return 0; /* (cannot happen: one event per ghost) */
    sim_ghost g = s->ghosts[s->ghost_head++];
    s->ghost_room[g.node] = drv_res_sub(s->ghost_room[g.node], g.req);
    set_room(s, g.node);
    if (g.queue >= 0)
        drv_state_hold_queue(&s->st, g.queue, g.req, -1);
    disturb(s);
    return s->live > 0 ? sim_request_cycle(s) : 0;
}

void sim_ghost_free(drv_sim *s)
{
    drv_free(s->bound_now);
    drv_free(s->ghosts);
    drv_free(s->ghost_room);
}

/* a + b, DRV_UNLIMITED when either is (a quota plus its borrowing limit). */
static int64_t add_limit(int64_t a, int64_t b)
{
    return a == DRV_UNLIMITED || b == DRV_UNLIMITED ? DRV_UNLIMITED : a + b;
}

/* Whether queue q's use plus r is beyond its quota and borrowing limit in a dimension where its
 * terminating pods hold something: that is, where room the policy counted free is still held. */
static bool queue_blocked(const drv_queue *q, drv_res r)
{
    const int64_t use[3] = {q->used.cpu + r.cpu, q->used.mem + r.mem, q->used.gpu + r.gpu};
    const int64_t held[3] = {q->held.cpu, q->held.mem, q->held.gpu};
    const int64_t lim[3] = {add_limit(q->quota.cpu, q->borrow.cpu),
                            add_limit(q->quota.mem, q->borrow.mem),
                            add_limit(q->quota.gpu, q->borrow.gpu)};
    for (int k = 0; k < 3; k++)
        if (held[k] > 0 && use[k] > lim[k])
            return true;
    return false;
}

bool sim_ghost_blocks(const drv_sim *s, int32_t pod, int32_t node)
{
    if (s->nghosts == s->ghost_head) /* no pod is terminating (always so with grace 0) */
        return false;
    const drv_pod *p = &s->st.pods[pod];
    const drv_job *j = &s->st.jobs[p->job];
    drv_res req = j->role[p->role].req;
    const drv_node *n = &s->st.nodes[node];
    if (!drv_res_fits(drv_res_add(n->used, req), n->alloc))
        return true;
    return s->st.nqueues > 0 && queue_blocked(&s->st.queues[j->queue], req);
}

int sim_ghost_bind(drv_sim *s, int32_t pod, int32_t node)
{
    if (sim_ghost_blocks(s, pod, node)) {
        s->js[s->st.pods[pod].job].blocked = s->cycle_no;
        return 0;
    }
    if (s->cluster->timing.grace > 0) {
        if (drv_grow(&s->bound_now, sizeof *s->bound_now, &s->cap_bound_now, s->nbound_now + 1))
            return DRV_ENOMEM;
        s->bound_now[s->nbound_now++] = pod;
    }
    sim_bind(s, pod, node);
    return 0;
}

/* Whether pod was bound by this cycle's decisions. */
static bool bound_now(const drv_sim *s, int32_t pod)
{
    for (int32_t i = 0; i < s->nbound_now; i++)
        if (s->bound_now[i] == pod)
            return true;
    return false;
}

void sim_ghost_settle(drv_sim *s, const int32_t *touched, int32_t ntouched)
{
    for (int32_t i = 0; i < ntouched; i++) {
        int32_t job = touched[i];
        const drv_job *j = &s->st.jobs[job];
        if (s->js[job].blocked != s->cycle_no || drv_job_complete(j))
            continue;
        for (int32_t k = 0; k < j->pod_count; k++)
            sim_unbind_as(s, j->pod_base + k, !bound_now(s, j->pod_base + k));
    }
    s->nbound_now = 0;
}
