/* fuzz_objects.c - the Kubernetes object decoders (src/kube/objects.c) on any JSON, and the
 * quantity parsers on the raw input. */
#include "drover/kube_types.h"
#include "drover/strtab.h"
#include "json.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char q[64];
    size_t n = size < sizeof q - 1 ? size : sizeof q - 1;
    memcpy(q, data, n);
    q[n] = 0;
    int64_t v;
    drv_kube_quantity(q, &v);
    drv_kube_quantity_milli(q, &v);

    json_error_t err;
    json_t *obj = json_loadb((const char *)data, size, JSON_DECODE_ANY, &err);
    if (!obj)
        return 0;
    drv_strtab *names = drv_strtab_new();
    if (names) {
        drv_diag d;
        drv_kpod pod;
        drv_knode node;
        drv_ktrainingjob tj;
        drv_kpodgroup pg;
        drv_klease lease;
        drv_kevent ev;
        long code;
        const char *reason;
        drv_kube_decode_pod(obj, names, &pod, &d);
        drv_kube_decode_node(obj, names, &node, &d);
        drv_kube_decode_trainingjob(obj, names, &tj, &d);
        drv_kube_decode_podgroup(obj, names, &pg, &d);
        drv_kube_decode_lease(obj, &lease, &d);
        drv_kube_decode_event(obj, &ev, &d);
        drv_kube_decode_status(obj, &code, &reason, &d);
        drv_kpriorityclass pc;
        drv_kqueue queue;
        drv_constraint c;
        int32_t meta;
        drv_kube_decode_priorityclass(obj, names, &pc, &d);
        drv_kube_decode_queue(obj, names, &queue, &d);
        if (drv_kube_decode_constraint(obj, names, "fuzz", "spec", &c, &d) == 0)
            drv_constraint_fini(&c);
        if (drv_kube_node_meta(obj, names, "fuzz", &meta, &d) == 0 && meta > 0) {
            drv_label *l;
            drv_taint *t;
            int32_t nl, nt;
            drv_kube_node_meta_parse(drv_strtab_str(names, meta), names, &l, &nl, &t, &nt);
            drv_free(l);
            drv_free(t);
        }
        drv_strtab_free(names);
    }
    json_decref(obj);
    return 0;
}
