/* fuzz_cluster.c - cluster files (drv_cluster_load, docs/formats.md). */
#include "drover/sim.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".yaml");
    if (!path)
        return 0;
    drv_cluster_spec c = {0};
    drv_diag d;
    if (drv_cluster_load(&c, path, &d) == 0)
        drv_cluster_fini(&c);
    return 0;
}
