/*
 * ctrl_mirror_topo.c - the mirror's part of topology-bound gangs (issue 29; docs/running.md,
 * "Topology"): a gang's Kueue annotation read onto its job template against `drover run
 * --topology`'s levels, and the nodes that lack a level's label, each told once by a Warning
 * Event on the Node (TopologyLabelMissing). Split from ctrl_mirror.c, which calls
 * ctrl_mirror_topology_gap for each node it applies, with the core's word on whether the node
 * lacks a level's label (drv_state_apply_node); the loop has the Events written.
 */
#include "ctrl_mirror.h"
#include "ctrl_writer.h"

#include <stdio.h>
#include <string.h>

bool ctrl_mirror_topology(const ctrl_mirror *m, int8_t mode, int32_t key, drv_job *tmpl, char *why,
                          size_t n)
{
    if (mode == DRV_TOPO_NONE)
        return true;
    char lk[256];
    ctrl_name_str(m->names, key, lk, sizeof lk);
    int32_t lev = drv_state_topo_level(&m->st, lk);
    if (lev < 0) {
        snprintf(why, n,
                 "metadata.annotations: kueue.x-k8s.io/podset-%s-topology: level %s is not one of "
                 "drover run's --topology levels (%d given)",
                 mode == DRV_TOPO_REQUIRED ? "required" : "preferred", lk, m->st.ntopo);
        return false;
    }
    tmpl->topo_mode = mode;
    tmpl->topo_level = (int8_t)lev;
    return true;
}

int ctrl_mirror_topology_gap(ctrl_mirror *m, int32_t id, bool gap)
{
    if (!gap || m->topo_told[id]) /* (topo_told holds every node: grown with them) */
        return 0;
    if (drv_grow(&m->topo_gaps, sizeof *m->topo_gaps, &m->cap_topo_gaps, m->ntopo_gaps + 1) != 0)
        return DRV_ENOMEM;
    m->topo_gaps[m->ntopo_gaps++] = id;
    m->topo_told[id] = true;
    return 0;
}

void ctrl_mirror_report_topology(ctrl_mirror *m, struct ctrl_writer *w)
{
    for (int32_t i = 0; i < m->ntopo_gaps; i++) {
        int32_t id = m->topo_gaps[i];
        char keys[DRV_MAX_TOPO * 260] = "", msg[sizeof keys + 400];
        size_t k = 0;
        for (int32_t l = 0; l < m->st.ntopo && k < sizeof keys; l++)
            if (drv_node_domain(&m->st, id, l) == 0)
                k += (size_t)snprintf(keys + k, sizeof keys - k, "%s%s", k ? ", " : "",
                                      drv_strtab_str(m->st.names, m->st.topo_key[l]));
        if (!k) /* (labelled since) */
            continue;
        const char *node = drv_strtab_str(m->st.names, m->st.nodes[id].name);
        snprintf(msg, sizeof msg,
                 "node %s has no label %s (a drover run --topology level): it is in no domain "
                 "of that level, and no pod of a gang bound to the level is placed on it",
                 node, keys);
        ctrl_ref about = {
            .kind = "Node", .api_version = "v1", .ns = "default", .name = node, .uid = ""};
        ctrl_writer_event(w, &about, "Warning", "TopologyLabelMissing", msg);
    }
    m->ntopo_gaps = 0;
}
