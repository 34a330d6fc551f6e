/*
 * decision.c - the decision list, its text form, and applying a decision to a drv_state.
 * Both drivers use drv_state_apply for the bookkeeping part of a decision; what a decision
 * costs in time (restart pauses, API calls) is the driver's business.
 */
#include "drover/cycle.h"

#include <stdio.h>

void drv_decisions_init(drv_decisions *d)
{
    d->v = NULL;
    d->n = d->cap = 0;
}

void drv_decisions_fini(drv_decisions *d)
{
    drv_free(d->v);
    drv_decisions_init(d);
}

int drv_decisions_push(drv_decisions *d, drv_decision x)
{
    if (drv_grow(&d->v, sizeof *d->v, &d->cap, d->n + 1) != 0)
        return DRV_ENOMEM;
    d->v[d->n++] = x;
    return 0;
}

static const char *reason_name(int r)
{
    static const char *const names[] = {"", "preempt", "shrink", "starve", "complete", "inplace"};
    return (r >= 0 && r <= DRV_REASON_INPLACE) ? names[r] : "?";
}

const char *drv_decision_format(const drv_state *st, const drv_decision *x, char *buf, size_t n)
{
    const char *job = drv_strtab_str(st->names, st->jobs[x->job].name);
    const char *node = x->node >= 0 ? drv_strtab_str(st->names, st->nodes[x->node].name) : "";
    const drv_pod *p = x->pod >= 0 ? &st->pods[x->pod] : NULL;
    const char *role = p ? drv_role_name(p->role) : "";
    int idx = p ? p->index : 0;
    switch (x->kind) {
    case DRV_BIND:
        snprintf(buf, n, "BIND %s/%s-%d %s", job, role, idx, node);
        break;
    case DRV_EVICT:
        if (x->reason == DRV_REASON_PREEMPT && x->value >= 0 && x->value < st->njobs)
            snprintf(buf, n, "EVICT %s/%s-%d %s by %s", job, role, idx, reason_name(x->reason),
                     drv_strtab_str(st->names, st->jobs[x->value].name));
        else
            snprintf(buf, n, "EVICT %s/%s-%d %s", job, role, idx, reason_name(x->reason));
        break;
    case DRV_SCALE:
        snprintf(buf, n, "SCALE %s %lld", job, (long long)x->value);
        break;
    case DRV_RESIZE:
        snprintf(buf, n, "RESIZE %s/%s-%d %lldm", job, role, idx, (long long)x->value);
        break;
    case DRV_MIGRATE:
        snprintf(buf, n, "MIGRATE %s/%s-%d %s", job, role, idx, node);
        break;
    case DRV_BATCH:
        snprintf(buf, n, "BATCH %s %lld%s", job, (long long)x->value,
                 x->reason == DRV_REASON_INPLACE ? " inplace" : "");
        break;
    default:
        snprintf(buf, n, "? kind %d", x->kind);
        break;
    }
    return buf;
}
