/* fuzz_queues.c - the `queues:` list of a cluster file (src/sim/queues_read.c), on its own: the
 * input is a YAML document whose top-level `queues:` is read. An accepted list is checked:
 * names under the name rule and unique, weights > 0, no negative quota, a borrowing limit only
 * in a cohort (docs/formats.md, "Queues"). */
#include "drover/conf.h"
#include "drover/text.h"
#include "fuzz.h"
#include "queues_read.h"

#include <stdlib.h>
#include <string.h>

static bool nonneg(drv_res r)
{
    return r.cpu >= 0 && r.mem >= 0 && r.gpu >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    drv_conf_doc doc = {0};
    drv_diag d;
    if (drv_conf_load_string(&doc, "fuzz.yaml", (const char *)data, size, &d) != 0)
        return 0;
    drv_cluster_spec c;
    memset(&c, 0, sizeof c);
    if (drv_read_queues(&doc, &c, &d) == 0) {
        for (int32_t i = 0; i < c.nqueues; i++) {
            const drv_queuespec *q = &c.queues[i];
            if (!drv_name_ok(q->name, sizeof q->name - 1) || !(q->weight > 0) ||
                !nonneg(q->quota) || !nonneg(q->borrow) ||
                (!q->cohort[0] && (q->borrow.cpu || q->borrow.mem || q->borrow.gpu)))
                abort();
            for (int32_t k = 0; k < i; k++)
                if (strcmp(c.queues[k].name, q->name) == 0)
                    abort();
        }
        drv_cluster_fini(&c);
    }
    drv_conf_doc_fini(&doc);
    return 0;
}
