/* fuzz_constraints.c - node labels and taints (drv_read_node_meta) and a pod template's node
 * constraints (drv_read_role_constraint: nodeSelector, nodeAffinity, tolerations), the readers
 * of src/sim/constraints_read.c. The input is one YAML map read both as a node entry of a
 * cluster file and as a role of a workload file (their fields do not overlap). */
#include "constraints_read.h"
#include "drover/conf.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    drv_conf_doc doc = {0};
    drv_diag d;
    if (drv_conf_load_string(&doc, "fuzz.yaml", (const char *)data, size, &d) != 0)
        return 0;
    if (doc.root && doc.root->kind == DRV_CONF_MAP) {
        drv_cluster_spec c;
        memset(&c, 0, sizeof c);
        int32_t cls = -1;
        bool unsched = false;
        drv_read_node_meta(&doc, doc.root, "nodes[0]", &c, &cls, &unsched, &d);
        drv_cluster_fini(&c);
        drv_workload w = {0};
        int32_t cons = -1;
        drv_read_role_constraint(&doc, doc.root, "jobs[0].roles.worker", &w, &cons, &d);
        drv_workload_fini(&w);
    }
    drv_conf_doc_fini(&doc);
    return 0;
}
