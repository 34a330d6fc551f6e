/*
 * queues_read.c - the `queues:` list of a cluster file (docs/formats.md, "Queues"): tenants'
 * queues with Kueue's ClusterQueue fields (nominalQuota, borrowingLimit, cohort) and Volcano's
 * fair-share weight, checked as Kueue's webhook checks them. Every bad value is an error naming
 * file:line and the field; a job naming a queue the file does not declare, or a gang no queue
 * ceiling can hold, is judged later against the workload (sim_queues.c).
 *
 * Example:
 *     queues:
 *       - name: research
 *         weight: 2
 *         cohort: lab
 *         nominalQuota: {cpu: 64, memory: 256Gi, gpu: 8}
 *         borrowingLimit: {gpu: 4}
 *
 * Defaults: weight 1; an absent nominalQuota, or a resource it leaves out, has no bound; inside
 * a cohort an absent borrowingLimit (or a resource it leaves out) has no bound either - Kueue's
 * default, the queue may use all its cohort leaves unused - and outside one borrowingLimit is
 * refused (there is nothing to borrow from: Kueue refuses it too). Cohorts are flat: a cohort
 * is a name its queues share, never itself in a cohort, so no cycle can be written.
 */
#include "queues_read.h"

#include <stdio.h>
#include <string.h>

/* Bounds: far above real clusters' tenants, small enough for the summary's fixed table and for
 * the O(queues) name lookups; quotas as large as a cluster can be (conf.h). */
#define MAX_WEIGHT 1e6
#define MAX_QUOTA_GPU 1000000

/* A quota-shaped map {cpu, memory, gpu} into *out; a resource left out is DRV_UNLIMITED. */
static int read_limits(const drv_conf_doc *doc, drv_conf *m, const char *path, drv_res *out,
                       drv_diag *d)
{
    char p[160];
    drv_conf *f;
    int rc = drv_conf_expect(doc, m, DRV_CONF_MAP, path, d);
    *out = (drv_res){DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED};
    if (rc)
        return rc;
    snprintf(p, sizeof p, "%s.cpu", path);
    if ((f = drv_conf_get(m, "cpu")) && (rc = drv_conf_cpu(doc, f, p, &out->cpu, d)) != 0)
        return rc;
    snprintf(p, sizeof p, "%s.memory", path);
    if ((f = drv_conf_get(m, "memory")) && (rc = drv_conf_mem(doc, f, p, &out->mem, d)) != 0)
        return rc;
    snprintf(p, sizeof p, "%s.gpu", path);
    if ((f = drv_conf_get(m, "gpu")) &&
        (rc = drv_conf_int(doc, f, p, 0, MAX_QUOTA_GPU, &out->gpu, d)) != 0)
        return rc;
    return drv_conf_check_unused(doc, m, path, d);
}

/* Queue entry i (map m) into q; earlier entries q[-i..-1] are checked for its name. */
static int read_queue(const drv_conf_doc *doc, drv_conf *m, int32_t i, const drv_queuespec *prev,
                      drv_queuespec *q, drv_diag *d)
{
    char p[96];
    drv_conf *f;
    int rc;
    snprintf(p, sizeof p, "queues[%d]", i);
    if ((rc = drv_conf_expect(doc, m, DRV_CONF_MAP, p, d)) != 0)
        return rc;
    memset(q, 0, sizeof *q);
    q->line = m->line;
    q->weight = 1;
    q->quota = (drv_res){DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED};
    snprintf(p, sizeof p, "queues[%d].name", i);
    if (!(f = drv_conf_get(m, "name")))
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: missing", doc->file, m->line, p);
    if ((rc = drv_conf_name(doc, f, p, q->name, sizeof q->name, d)) != 0)
        return rc;
    for (int32_t k = 0; k < i; k++)
        if (strcmp(prev[k].name, q->name) == 0)
            return drv_fail(d, DRV_EEXIST, "%s:%d: %s: queue '%s' defined twice (first at line %d)",
                            doc->file, f->line, p, q->name, prev[k].line);
    snprintf(p, sizeof p, "queues[%d].weight", i);
    if ((f = drv_conf_get(m, "weight"))) {
        if ((rc = drv_conf_double(doc, f, p, -MAX_WEIGHT, MAX_WEIGHT, &q->weight, d)) != 0)
            return rc;
        if (q->weight <= 0)
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s: expected a weight > 0, found %g", doc->file,
                            f->line, p, q->weight);
    }
    snprintf(p, sizeof p, "queues[%d].minRuntimeSeconds", i);
    if ((f = drv_conf_get(m, "minRuntimeSeconds")) &&
        (rc = drv_conf_double(doc, f, p, 0, DRV_MAX_MIN_RUNTIME, &q->min_runtime, d)) != 0)
        return rc;
    snprintf(p, sizeof p, "queues[%d].cohort", i);
    if ((f = drv_conf_get(m, "cohort")) &&
        (rc = drv_conf_name(doc, f, p, q->cohort, sizeof q->cohort, d)) != 0)
        return rc;
    snprintf(p, sizeof p, "queues[%d].nominalQuota", i);
    if ((f = drv_conf_get(m, "nominalQuota")) && (rc = read_limits(doc, f, p, &q->quota, d)) != 0)
        return rc;
    q->borrow =
        q->cohort[0] ? (drv_res){DRV_UNLIMITED, DRV_UNLIMITED, DRV_UNLIMITED} : (drv_res){0, 0, 0};
    snprintf(p, sizeof p, "queues[%d].borrowingLimit", i);
    if ((f = drv_conf_get(m, "borrowingLimit"))) {
        if (!q->cohort[0])
            return drv_fail(d, DRV_EINVAL,
                            "%s:%d: %s: a queue in no cohort has nothing to borrow from (give it "
                            "a cohort, or leave borrowingLimit out)",
                            doc->file, f->line, p);
        if ((rc = read_limits(doc, f, p, &q->borrow, d)) != 0)
            return rc;
    }
    snprintf(p, sizeof p, "queues[%d]", i);
    return drv_conf_check_unused(doc, m, p, d);
}

int drv_read_queues(const drv_conf_doc *doc, drv_cluster_spec *c, drv_diag *d)
{
    drv_conf *qs = drv_conf_get(doc->root, "queues");
    if (!qs)
        return 0;
    int rc = drv_conf_expect(doc, qs, DRV_CONF_SEQ, "queues", d);
    if (rc)
        return rc;
    /* the default queue is always there: it takes the last of DRV_MAX_QUEUES slots */
    if (qs->nitems > DRV_MAX_QUEUES - 1)
        return drv_fail(d, DRV_ERANGE, "%s:%d: queues: at most %d queues", doc->file, qs->line,
                        DRV_MAX_QUEUES - 1);
    if (qs->nitems == 0)
        return drv_fail(d, DRV_EINVAL, "%s:%d: queues: the list is empty (leave it out for none)",
                        doc->file, qs->line);
    drv_queuespec *v = drv_calloc((size_t)qs->nitems, sizeof *v);
    if (!v)
        return drv_fail(d, DRV_ENOMEM, "out of memory");
    for (int32_t i = 0; i < qs->nitems && !rc; i++)
        rc = read_queue(doc, qs->items[i], i, v, &v[i], d);
    if (rc) {
        drv_free(v);
        return rc;
    }
    drv_free(c->queues);
    c->queues = v;
    c->nqueues = qs->nitems;
    snprintf(c->queue_file, sizeof c->queue_file, "%s", doc->file);
    return 0;
}
