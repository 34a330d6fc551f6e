/* fuzz_jsonparse.c - drv_json_loadb (src/kube/jsonparse.c) against jansson's json_loadb on the
 * same bytes: both refuse, or both accept and give equal values; anything else aborts. */
#include "json.h"
#include "fuzz.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t je, ours;
    json_t *want = json_loadb((const char *)data, size, 0, &je);
    json_t *got = drv_json_loadb((const char *)data, size, &ours);
    if (!want != !got || (want && !json_equal(want, got)))
        abort();
    if (!got && (ours.position < 0 || (size_t)ours.position > size))
        abort();
    json_decref(want);
    json_decref(got);
    return 0;
}
