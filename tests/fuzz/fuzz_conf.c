/* fuzz_conf.c - the YAML tree builder (src/conf) and its typed readers on every scalar. */
#include "drover/conf.h"
#include "fuzz.h"

static void walk(const drv_conf_doc *doc, drv_conf *c, int depth)
{
    drv_diag d;
    if (c->kind == DRV_CONF_SCALAR) {
        int64_t i;
        double x;
        bool b;
        drv_conf_cpu(doc, c, "f", &i, &d);
        drv_conf_mem(doc, c, "f", &i, &d);
        drv_conf_int(doc, c, "f", INT64_MIN, INT64_MAX, &i, &d);
        drv_conf_double(doc, c, "f", -1e300, 1e300, &x, &d);
        drv_conf_bool(doc, c, "f", &b, &d);
        return;
    }
    for (int32_t k = 0; k < c->nitems && depth < 100; k++)
        walk(doc, c->items[k], depth + 1);
    if (c->kind == DRV_CONF_MAP && c->nitems > 0)
        drv_conf_get(c, c->items[0]->key);
    drv_conf_check_unused(doc, c, "m", &d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    drv_conf_doc doc = {0};
    drv_diag d;
    if (drv_conf_load_string(&doc, "fuzz.yaml", (const char *)data, size, &d) == 0) {
        walk(&doc, doc.root, 0);
        drv_conf_doc_fini(&doc);
    }
    return 0;
}
