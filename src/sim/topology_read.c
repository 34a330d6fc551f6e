/*
 * topology_read.c - topology levels in cluster and workload files (docs/formats.md,
 * "Topology"): a cluster's `topology:` list of node label keys, widest first, which every node
 * must carry (but kubernetes.io/hostname, each node alone); a job's `topology:` map in Kueue's
 * words (required / preferred / unconstrained, each naming a level by its label key); and, when a
 * run starts, the levels into the state and each job's level into the state's index of it.
 *
 * Example (cluster, then a job):
 *     topology: [topology.kubernetes.io/zone, cloud.provider.com/topology-rack]
 *     nodes: [{name: a, count: 4, cpu: 32, memory: 128Gi, gpu: 8,
 *              labels: {topology.kubernetes.io/zone: z1, cloud.provider.com/topology-rack: r1}}]
 *     jobs: [{name: j, ..., topology: {required: cloud.provider.com/topology-rack}}]
 */
#include "topology_read.h"

#include <stdio.h>
#include <string.h>

/* A label key of the list at path into dst: a string, not empty, at most DRV_TOPO_KEY_MAX. */
static int read_key(const drv_conf_doc *doc, const drv_conf *f, const char *path, char *dst,
                    drv_diag *d)
{
    const char *s;
    int rc = drv_conf_str(doc, f, path, &s, d);
    if (rc)
        return rc;
    if (!*s)
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: %s: an empty label key (a level is a node label key)", doc->file,
                        f->line, path);
    if (strlen(s) > DRV_TOPO_KEY_MAX)
        return drv_fail(d, DRV_EINVAL, "%s:%d: %s: longer than %d bytes", doc->file, f->line, path,
                        DRV_TOPO_KEY_MAX);
    snprintf(dst, DRV_TOPO_KEY_MAX + 1, "%s", s);
    return 0;
}

int drv_read_topology(const drv_conf_doc *doc, drv_conf *root, drv_cluster_spec *c, drv_diag *d)
{
    drv_conf *t = drv_conf_get(root, "topology");
    if (!t)
        return 0;
    int rc = drv_conf_expect(doc, t, DRV_CONF_SEQ, "topology", d);
    if (rc)
        return rc;
    if (t->nitems == 0 || t->nitems > DRV_MAX_TOPO)
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: topology: expected 1 to %d node label keys, widest level first, "
                        "found %d",
                        doc->file, t->line, DRV_MAX_TOPO, t->nitems);
    for (int32_t i = 0; i < t->nitems; i++) {
        char p[32];
        snprintf(p, sizeof p, "topology[%d]", i);
        if ((rc = read_key(doc, t->items[i], p, c->topo[i], d)) != 0)
            return rc;
        for (int32_t k = 0; k < i; k++)
            if (strcmp(c->topo[k], c->topo[i]) == 0)
                return drv_fail(d, DRV_EINVAL, "%s:%d: %s: '%s' is topology[%d] already", doc->file,
                                t->items[i]->line, p, c->topo[i], k);
    }
    c->ntopo = t->nitems;
    return 0;
}

int drv_check_node_topology(const drv_conf_doc *doc, const drv_conf *n, const char *path,
                            const drv_cluster_spec *c, int32_t node_class, drv_diag *d)
{
    for (int32_t i = 0; i < c->ntopo; i++) {
        bool has = strcmp(c->topo[i], DRV_TOPO_HOSTNAME) == 0; /* (each node alone: state.h) */
        if (node_class > 0 && c->names) {
            const drv_nodeclass *k = &c->classes[node_class];
            for (int32_t l = 0; l < k->nlabels && !has; l++)
                has = strcmp(drv_strtab_str(c->names, k->labels[l].key), c->topo[i]) == 0;
        }
        if (!has)
            return drv_fail(d, DRV_EINVAL,
                            "%s:%d: %s.labels: no label %s, topology level %d; every node needs a "
                            "label for each topology level",
                            doc->file, n->line, path, c->topo[i], i);
    }
    return 0;
}

int drv_read_job_topology(const drv_conf_doc *doc, drv_conf *jn, const char *path, drv_workload *w,
                          drv_jobspec *j, drv_diag *d)
{
    drv_conf *t = drv_conf_get(jn, "topology");
    if (!t)
        return 0;
    char p[160];
    snprintf(p, sizeof p, "%s.topology", path);
    int rc = drv_conf_expect(doc, t, DRV_CONF_MAP, p, d);
    if (rc)
        return rc;
    static const char *const modes[] = {"unconstrained", "required", "preferred"};
    drv_conf *f = NULL;
    int mode = -1;
    for (int m = 0; m < 3; m++) {
        drv_conf *g = drv_conf_get(t, modes[m]);
        if (g && f)
            return drv_fail(d, DRV_EINVAL,
                            "%s:%d: %s: give one of required, preferred, "
                            "unconstrained, not two",
                            doc->file, t->line, p);
        if (g) {
            f = g;
            mode = m;
        }
    }
    if ((rc = drv_conf_check_unused(doc, t, p, d)) != 0)
        return rc;
    if (!f)
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: %s: expected one of required, preferred (a level's "
                        "label key) or unconstrained: true",
                        doc->file, t->line, p);
    snprintf(p, sizeof p, "%s.topology.%s", path, modes[mode]);
    if (mode == DRV_TOPO_NONE) {
        bool on;
        if ((rc = drv_conf_bool(doc, f, p, &on, d)) != 0)
            return rc;
        if (!on)
            return drv_fail(d, DRV_EINVAL,
                            "%s:%d: %s: only true is meaningful (leave "
                            "`topology:` out otherwise)",
                            doc->file, f->line, p);
        return 0;
    }
    char key[DRV_TOPO_KEY_MAX + 1];
    if ((rc = read_key(doc, f, p, key, d)) != 0)
        return rc;
    int32_t lev = 0;
    while (lev < w->ntopo && strcmp(w->topo[lev], key) != 0)
        lev++;
    if (lev == w->ntopo) {
        if (w->ntopo == DRV_MAX_TOPO)
            return drv_fail(d, DRV_EINVAL, "%s:%d: %s: jobs name more than %d levels", doc->file,
                            f->line, p, DRV_MAX_TOPO);
        snprintf(w->topo[w->ntopo++], DRV_TOPO_KEY_MAX + 1, "%s", key);
    }
    j->topo_mode = (int8_t)mode;
    j->topo_level = (int8_t)lev;
    return 0;
}

int drv_sim_topology(drv_state *st, const drv_cluster_spec *c, const drv_workload *w, int8_t *map,
                     drv_diag *d)
{
    const char *keys[DRV_MAX_TOPO], *why = "";
    for (int32_t i = 0; i < c->ntopo; i++)
        keys[i] = c->topo[i];
    int rc = drv_state_set_topology(st, keys, c->ntopo, &why);
    if (rc)
        return drv_fail(d, rc, "cluster: topology: %s", rc == DRV_ENOMEM ? "out of memory" : why);
    for (int32_t i = 0; w && i < w->ntopo; i++) {
        map[i] = (int8_t)drv_state_topo_level(st, w->topo[i]);
        if (map[i] >= 0)
            continue;
        int32_t first = 0; /* the first job naming it, for its line */
        while (first < w->n - 1 &&
               !(w->jobs[first].topo_mode != DRV_TOPO_NONE && w->jobs[first].topo_level == i))
            first++;
        return drv_fail(d, DRV_EINVAL,
                        "%s:%d: jobs[%d].topology: level '%s' is not one of the cluster's "
                        "topology levels (%d given)",
                        w->file[0] ? w->file : "workload", w->jobs[first].line, first, w->topo[i],
                        c->ntopo);
    }
    return 0;
}
