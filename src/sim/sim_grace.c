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
    drv_free(s->ghosts);
    drv_free(s->ghost_room);
}
