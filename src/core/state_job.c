/*
 * state_job.c - a job added whole (drv_state_apply_job) and a job's transitions pushed into the
 * state in one step each, beside state_apply.c's records: a driver that follows an API (drover
 * run's mirror and lifecycle) asks for the whole change, so that the state's part of it is one
 * call rather than interning, constraints and a mutation per pod spread over the driver's units.
 *
 * Example: TrainingJob "ns/mnist" arrives: drv_state_apply_job interns "ns/mnist" and its user
 * "ns", adds the nodeSelector its workers' template asks (the first job to ask it: later ones
 * name the constraint's id), and adds the job, in one call. Later, its 3 workers all bound,
 * spec.replicaSpecs.Worker.replicas is edited to 1: drv_state_resize_workers(st, mnist, 1) sets
 * its worker target to 1 and takes workers 1 and 2 off their nodes; the driver then deletes
 * their pods (after the job's checkpoint), holding their room until they are gone.
 *
 * Each function is a sequence of the state's own mutations (state.c), so the derived totals
 * stay right and drv_state_check holds after each call. Costs: O(the job's pods).
 */
#include "drover/state.h"

void drv_state_resize_workers(drv_state *st, int32_t job, int32_t n)
{
    drv_state_set_workers(st, job, n);
    const drv_job *j = &st->jobs[job];
    for (int32_t k = 0; k < j->pod_count; k++) {
        const drv_pod *p = &st->pods[j->pod_base + k];
        if (p->role == DRV_ROLE_WORKER && p->index >= n)
            drv_state_unbind(st, j->pod_base + k);
    }
}

int drv_state_apply_job(drv_state *st, const drv_job_desc *d, int32_t *id, drv_diag *diag)
{
    drv_job tmpl = d->tmpl;
    if ((tmpl.name = drv_strtab_intern(st->names, d->name)) < 0 ||
        (d->user && (tmpl.user = drv_strtab_intern(st->names, d->user)) < 0))
        return DRV_ENOMEM;
    for (int r = 0; r < DRV_NROLES; r++) {
        if (!d->cons[r])
            continue;
        int rc = drv_state_add_constraint(st, d->cons[r], NULL, &tmpl.cons[r]);
        if (rc == DRV_ENOMEM)
            return rc;
        if (rc != 0) {
            tmpl.cons[r] = 0;
            drv_fail(diag, rc, "%s: %s: node constraints refused by the state", d->name,
                     drv_role_name(r));
        }
    }
    return drv_state_add_job(st, &tmpl, id);
}
