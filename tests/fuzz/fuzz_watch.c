/* fuzz_watch.c - the watch stream decoder (src/kube/watch.c) fed in small chunks: the first
 * byte seeds the chunk sizes (1 to 16 bytes), so lines split anywhere, as on the network. */
#include "drover/kube_watch.h"
#include "json.h"
#include "fuzz.h"

static int on_event(const drv_watch_event *ev, void *arg)
{
    (void)arg;
    /* touch what the callback is given */
    return ev->rv && ev->object ? 0 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    unsigned seed = data[0];
    data++, size--;
    drv_watch_decoder w;
    drv_watch_decoder_init(&w, "pods");
    drv_diag d;
    int rc = 0;
    for (size_t at = 0; at < size && rc == 0;) {
        seed = seed * 1103515245u + 12345u;
        size_t k = 1 + (seed >> 16) % 16;
        if (k > size - at)
            k = size - at;
        rc = drv_watch_decoder_feed(&w, (const char *)data + at, k, on_event, NULL, &d);
        at += k;
    }
    if (rc == 0)
        drv_watch_decoder_finish(&w, &d);
    drv_watch_decoder_fini(&w);
    return 0;
}
