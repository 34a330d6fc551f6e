/* fuzz_profile.c - policy profile files (drv_profile_file_load, docs/policies.md). */
#include "drover/base.h"
#include "drover/policy.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".yaml");
    if (!path)
        return 0;
    drv_profile *p = NULL;
    int n = 0;
    drv_diag d;
    if (drv_profile_file_load(path, &p, &n, &d) == 0)
        drv_free(p);
    return 0;
}
