/* fuzz_trace.c - every trace reader (src/sim/trace.c: pollux, philly, tiresias, and the
 * header detection). The first byte picks the format and whether bad rows are skipped; the
 * calibrated profiles come from the repository's data/pollux/profiles. */
#include "drover/trace.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_SOURCE_DIR
#define FUZZ_SOURCE_DIR "."
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static drv_catalogue cat;
    static drv_calib calib;
    static int ready;
    drv_diag d;
    if (!ready) {
        ready = -1;
        if (drv_catalogue_builtin(&cat, &d) != 0 ||
            drv_calib_load(&calib, FUZZ_SOURCE_DIR "/data/pollux/profiles", &d) != 0)
            abort(); /* the fuzzer would test nothing: say so at once */
        ready = 1;
    }
    if (size == 0)
        return 0;
    static const char *const fmts[] = {"auto", "pollux", "philly", "tiresias"};
    drv_trace_opts o = {drv_trace_format_parse(fmts[data[0] & 3]), (data[0] & 4) != 0, data[0],
                        &calib, 1 + (data[0] >> 5)};
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    drv_workload w = {0};
    int32_t skipped;
    if (drv_trace_parse(&w, "fuzz.csv", text, &cat, &o, &skipped, &d) == 0)
        drv_workload_fini(&w);
    free(text);
    return 0;
}
