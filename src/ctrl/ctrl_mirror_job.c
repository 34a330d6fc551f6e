/*
 * ctrl_mirror_job.c - a job added to the state whole (ctrl_mirror.h): a TrainingJob's
 * (ctrl_trainingjob.c) or a gang's (ctrl_podgroup.c) template, name, user and node constraints
 * pushed into the core by one drv_state_apply_job, then its records in the mirror.
 *
 * Constraints are known by their JSON text (interned by the decoders: drv_kube_constraint_json),
 * so that the thousand jobs of one template share one constraint of the state: a role whose
 * JSON the state holds names its id; the first job that asks it has it decoded here (from its
 * pod template, or from the JSON's own text, which the caller copies out of the name table)
 * and added with the job.
 *
 * Owns: the mirror's cons_of. On the scheduler thread. Example: TrainingJob ns/a's workers ask
 * nodeSelector pool=gpu: decoded, added with the job as constraint 1; ns/b of the same
 * template then names constraint 1, decoding nothing.
 */
#include "ctrl_mirror.h"

#include "kube/json.h"

#include <string.h>

int ctrl_mirror_constraint(ctrl_mirror *m, ctrl_job_add *a, int r, int32_t json, const char *text,
                           bool tmpl, const char *who, const char *path, drv_diag *d)
{
    a->d.tmpl.cons[r] = 0;
    if (json <= 0 || json >= m->cap_by_key) /* (held when its event came: ctrl_apply_events) */
        return 0;
    if (m->cons_of[json] >= 0) {
        a->d.tmpl.cons[r] = m->cons_of[json];
        return 0;
    }
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    json_t *spec = tmpl ? json_object_get(o, "spec") : o;
    if (!spec) {
        json_decref(o);
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    }
    int rc = drv_kube_decode_constraint(spec, m->st.names, who, path, &a->k[r], d);
    json_decref(o);
    if (rc)
        return rc;
    a->d.cons[r] = &a->k[r];
    a->json[r] = json;
    return 0;
}

/* Frees a's decoded constraints. */
static void job_add_fini(ctrl_job_add *a)
{
    for (int r = 0; r < DRV_NROLES; r++)
        if (a->d.cons[r])
            drv_constraint_fini(&a->k[r]);
}

int ctrl_mirror_add_job(ctrl_mirror *m, ctrl_job_add *a, int32_t key, int32_t *j)
{
    /* (key held by the tables by key: a TrainingJob's by ctrl_apply_events, a gang's by
     * ctrl_podgroup_admit) */
    drv_diag d = {{0}};
    int rc = drv_state_apply_job(&m->st, &a->d, j, &d);
    if (d.msg[0]) /* (decoded and validated before: only a test server lets this through) */
        drv_log(DRV_LOG_ERROR, "%s: ignored", d.msg);
    for (int r = 0; r < DRV_NROLES && rc == 0 && !d.msg[0]; r++)
        if (a->d.cons[r])
            m->cons_of[a->json[r]] = m->st.jobs[*j].cons[r];
    job_add_fini(a);
    if (rc == 0)
        rc = ctrl_mirror_grow_records(m);
    if (rc != 0)
        return rc;
    memset(&m->jobs[*j], 0, sizeof m->jobs[*j]);
    m->jobs[*j].key = key;
    const drv_job *jb = &m->st.jobs[*j];
    for (int32_t k = 0; k < jb->pod_count; k++)
        m->pods[jb->pod_base + k] = (pod_record){.presence = POD_ABSENT,
                                                 .phase = DRV_KPOD_PENDING,
                                                 .api_node = -1,
                                                 .ghost_queue = -1,
                                                 .want = -1};
    m->job_of[key] = *j;
    ctrl_count(m->counters, &m->counters->stats.jobs, 1);
    return 0;
}
