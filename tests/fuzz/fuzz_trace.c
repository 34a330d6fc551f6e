/* fuzz_trace.c - the trace readers. Built as several targets (tests/fuzz/CMakeLists.txt):
 *  - trace: src/sim/trace.c's pollux, philly and tiresias and the header detection; byte 0
 *    picks auto/pollux/philly/tiresias;
 *  - trace_helios, trace_pai_job, trace_pai_task, trace_gavel, trace_philly_log: that format
 *    named (FUZZ_FORMAT), the reader forced whatever the text looks like;
 *  - trace_columns: a CSV mapped by --trace-columns; the first line of the input (after byte 0)
 *    is the mapping ("name=id,submit=t,gpus=g,duration=d"), the rest the file.
 * In every target byte 0 also says whether bad rows are skipped (bit 2), the seed (all of it)
 * and GPUs per node (bits 5-7). An accepted trace is checked: every job has a name under the
 * name rule, used once, and a submission time from 0. The calibrated profiles come from the
 * repository's data/pollux/profiles. */
#include "drover/strtab.h"
#include "drover/text.h"
#include "drover/trace.h"
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_SOURCE_DIR
#define FUZZ_SOURCE_DIR "."
#endif

/* What every accepted trace promises (docs/data.md); abort() makes the fuzzer keep the input. */
static void check(const drv_workload *w)
{
    drv_strtab *names = drv_strtab_new();
    if (!names)
        return;
    for (int32_t i = 0; i < w->n; i++) {
        const drv_jobspec *j = &w->jobs[i];
        int32_t before = drv_strtab_count(names);
        if (!drv_name_ok(j->name, DRV_JOB_NAME_MAX) || !drv_name_ok(j->user, DRV_USER_NAME_MAX) ||
            !drv_name_ok(j->queue, DRV_QUEUE_NAME_MAX) || !(j->submit >= 0) ||
            drv_strtab_intern(names, j->name) < before)
            abort();
    }
    drv_strtab_free(names);
}

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
#ifdef FUZZ_FORMAT
    int fmt = drv_trace_format_parse(FUZZ_FORMAT);
#else
    static const char *const fmts[] = {"auto", "pollux", "philly", "tiresias"};
    int fmt = drv_trace_format_parse(fmts[data[0] & 3]);
#endif
    drv_trace_opts o = {fmt, (data[0] & 4) != 0, data[0], &calib, 1 + (data[0] >> 5)};
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    drv_workload w = {0};
    int32_t skipped;
    int rc;
    if (fmt == DRV_TRACE_CSV) {
        char *nl = strchr(text, '\n'), *rest = nl ? nl + 1 : text + strlen(text);
        if (nl)
            *nl = 0;
        rc = drv_trace_parse_columns(&w, "fuzz.csv", rest, text, &cat, &o, &skipped, &d);
    } else {
        rc = drv_trace_parse(&w, "fuzz.csv", text, &cat, &o, &skipped, &d);
    }
    if (rc == 0) {
        check(&w);
        drv_workload_fini(&w);
    }
    free(text);
    return 0;
}
