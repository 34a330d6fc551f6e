/* fuzz_report.c - the report reader (src/sim/report_read.c): the input is split at lines
 * "=====" into summary.json, scenario.json, jobs-p.csv, timeline-p.csv and placements-p.csv
 * of one directory, which drv_report_load then reads. */
#include "drover/sim.h"
#include "fuzz.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const files[] = {"summary.json", "scenario.json", "jobs-p.csv",
                                        "timeline-p.csv", "placements-p.csv"};
    const char *dir = fuzz_dir();
    if (!dir)
        return 0;
    const char *p = (const char *)data, *end = p + size;
    for (int i = 0; i < 5; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (p > end) { /* fewer parts than files: the rest are missing */
            unlink(path);
            continue;
        }
        const char *sep = NULL;
        for (const char *q = p; q + 6 <= end; q++)
            if (memcmp(q, "=====\n", 6) == 0) {
                sep = q;
                break;
            }
        const char *stop = sep ? sep : end;
        FILE *f = fopen(path, "wb");
        if (!f)
            return 0;
        fwrite(p, 1, (size_t)(stop - p), f);
        fclose(f);
        p = sep ? sep + 6 : end + 1;
    }
    drv_report_data r;
    memset(&r, 0, sizeof r);
    drv_diag d;
    if (drv_report_load(&r, dir, &d) == 0)
        drv_report_data_fini(&r);
    return 0;
}
