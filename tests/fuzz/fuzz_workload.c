/* fuzz_workload.c - workload files (drv_workload_load, docs/formats.md), with the built-in
 * model catalogue. */
#include "drover/sim.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static drv_catalogue cat;
    static bool ready;
    drv_diag d;
    if (!ready) {
        if (drv_catalogue_builtin(&cat, &d) != 0)
            return 0;
        ready = true;
    }
    const char *path = fuzz_file(data, size, ".yaml");
    if (!path)
        return 0;
    drv_workload w = {0};
    if (drv_workload_load(&w, path, &cat, 1, &d) == 0)
        drv_workload_fini(&w);
    return 0;
}
