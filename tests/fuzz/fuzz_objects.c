/* fuzz_objects.c - the Kubernetes object decoders (src/kube/objects.c) on any JSON, and the
 * quantity parsers on the raw input. The pod and node decoders from a document (objects_doc.c)
 * against objects.c's on the same text: the same result, record, message and interned strings,
 * or abort. */
#include "drover/kube_types.h"
#include "drover/strtab.h"
#include "json.h"
#include "fuzz.h"

#include <string.h>

/* Both pod (or node) decoders on text, each with a table of its own: abort unless they agree. */
static void same_decoding(const uint8_t *data, size_t size, json_t *obj, bool pod)
{
    drv_jdoc doc;
    drv_jdoc_init(&doc);
    drv_strtab *a = drv_strtab_new(), *b = drv_strtab_new();
    const char *const *skip = pod ? drv_kube_unread_pod : drv_kube_unread_node;
    if (a && b && drv_jdoc_parse(&doc, (const char *)data, size, skip, NULL, NULL) == 0) {
        union {
            drv_kpod p;
            drv_knode n;
        } x, y;
        drv_diag d1 = {{0}}, d2 = {{0}};
        memset(&x, 0, sizeof x);
        memset(&y, 0, sizeof y);
        int r1 =
            pod ? drv_kube_decode_pod(obj, a, &x.p, &d1) : drv_kube_decode_node(obj, a, &x.n, &d1);
        int r2 = pod ? drv_kube_decode_pod_doc(&doc, 0, b, &y.p, &d2)
                     : drv_kube_decode_node_doc(&doc, 0, b, &y.n, &d2);
        if (r1 != r2 || memcmp(&x, &y, sizeof x) != 0 || strcmp(d1.msg, d2.msg) != 0 ||
            drv_strtab_count(a) != drv_strtab_count(b))
            abort();
        for (int32_t id = 1; id < drv_strtab_count(a); id++)
            if (strcmp(drv_strtab_str(a, id), drv_strtab_str(b, id)) != 0)
                abort();
    }
    drv_strtab_free(a);
    drv_strtab_free(b);
    drv_jdoc_fini(&doc);
}

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
    if (json_is_object(obj)) {
        same_decoding(data, size, obj, true);
        same_decoding(data, size, obj, false);
    }
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
            drv_node_meta_parse(drv_strtab_str(names, meta), names, &l, &nl, &t, &nt);
            drv_free(l);
            drv_free(t);
        }
        drv_strtab_free(names);
    }
    json_decref(obj);
    return 0;
}
