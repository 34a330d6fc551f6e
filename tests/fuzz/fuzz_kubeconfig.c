/* fuzz_kubeconfig.c - kubeconfig files (drv_kubeconfig_load), current context and a named one.
 * File references in the input resolve against the fuzzer's temporary directory. */
#include "drover/kube.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".kubeconfig");
    if (!path)
        return 0;
    static const char *const contexts[] = {NULL, "dev"};
    for (int i = 0; i < 2; i++) {
        drv_kube_config c;
        drv_diag d;
        if (drv_kubeconfig_load(&c, path, contexts[i], &d) == 0)
            drv_kube_config_fini(&c);
    }
    return 0;
}
